//! The machine a run was made on, for the report's first lines: figures mean little without it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub memory_gib: f64,
    pub kernel: String,
    pub rustc: String,
    pub commit: String,
    pub date: String,
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or("").trim().to_string()
}

fn run(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program).args(args).output().ok().map(|o| first_line(&String::from_utf8_lossy(&o.stdout))).unwrap_or_default()
}

pub fn describe() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kb: f64 = meminfo.lines().find(|l| l.starts_with("MemTotal")).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    Machine {
        cpu,
        cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        memory_gib: mem_kb / 1024.0 / 1024.0,
        kernel: run("uname", &["-sr"]),
        rustc: run("rustc", &["--version"]),
        commit: run("git", &["rev-parse", "--short", "HEAD"]),
        date: run("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
    }
}
