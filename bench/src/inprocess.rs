//! The benchmarks `earshot bench` runs in one process (segmenter throughput, transport encoding),
//! run here through the CLI so that the report holds their figures too.

use std::process::Command;

use crate::stack::Paths;

pub fn run(paths: &Paths, what: &str, args: &[&str]) -> Result<serde_json::Value, String> {
    let json = paths.logs.join(format!("{what}.json"));
    eprintln!("bench: {what} (earshot bench {what})");
    let status = Command::new(&paths.earshot)
        .args(["bench", what])
        .args(args)
        .arg("--json")
        .arg(&json)
        .status()
        .map_err(|e| format!("cannot run earshot bench {what}: {e}"))?;
    if !status.success() {
        return Err(format!("earshot bench {what} failed ({status})"));
    }
    let text = std::fs::read_to_string(&json).map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}
