//! Cold start and size: how long a fresh `earshot serve` takes from process start to its first
//! byte served, how its first conversation compares with its second, and how big the Lambda
//! bootstrap is (as built and stripped).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::services::{free_port, Service};
use crate::stack::Paths;
use crate::trial;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trial {
    /// Process start to the first byte of `GET /healthz`.
    pub first_byte_ms: f64,
    /// Client time to first audio of the process's first conversation and of its second (the
    /// synthetic voice with no latency, so the figures are earshot's own).
    pub first_conversation_ttfa_ms: f64,
    pub second_conversation_ttfa_ms: f64,
    pub rss_kb_after_start: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    pub trials: Vec<Trial>,
    pub bootstrap_path: Option<String>,
    pub bootstrap_bytes: Option<u64>,
    pub bootstrap_stripped_bytes: Option<u64>,
    pub bootstrap_target: String,
}

pub async fn run(paths: &Paths, trials: usize, bootstrap: Option<&Path>) -> Result<Results, String> {
    let mut out = Vec::new();
    for _ in 0..trials {
        let port = free_port();
        let mut command = Command::new(&paths.earshot);
        command
            .args(["serve", "--port", &port.to_string(), "--web-dir", "", "--backends", "synthetic", "--synthetic-latency-ms", "0"])
            .env("EARSHOT_LOG", "warn");
        let mut service = Service::spawn("coldstart", command, &paths.logs)?;
        let url = format!("http://127.0.0.1:{port}");
        // Asked every 2 ms, so the figure is at most 2 ms late.
        let first_byte_ms = service.wait_ready(&format!("{url}/healthz"), Duration::from_secs(30), Duration::from_millis(2)).await?.as_secs_f64() * 1000.0;
        let rss_kb_after_start = service.rss_kb().unwrap_or(0);
        let body = trial::body(None, Some("Hello there."), "incremental", None);
        let first = trial::run(&url, &body, false).await?;
        let second = trial::run(&url, &body, false).await?;
        out.push(Trial {
            first_byte_ms,
            first_conversation_ttfa_ms: first.client_ttfa_ms.unwrap_or(f64::NAN),
            second_conversation_ttfa_ms: second.client_ttfa_ms.unwrap_or(f64::NAN),
            rss_kb_after_start,
        });
    }
    let bootstrap_bytes = bootstrap.and_then(|p| p.metadata().ok()).map(|m| m.len());
    let bootstrap_stripped_bytes = bootstrap.filter(|_| bootstrap_bytes.is_some()).and_then(|p| {
        let stripped = paths.logs.join("bootstrap.stripped");
        let ok = Command::new("strip").arg("-o").arg(&stripped).arg(p).status().is_ok_and(|s| s.success());
        ok.then(|| stripped.metadata().ok().map(|m| m.len())).flatten()
    });
    Ok(Results {
        trials: out,
        bootstrap_path: bootstrap.map(|p| p.display().to_string()),
        bootstrap_bytes,
        bootstrap_stripped_bytes,
        bootstrap_target: format!("{}-linux (this machine; the deployed function is arm64)", std::env::consts::ARCH),
    })
}
