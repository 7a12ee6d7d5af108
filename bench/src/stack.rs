//! Starting what a suite measures: the Kokoro container's server (onnx engine, CPU), `earshot serve`
//! with a given configuration, the AWS stand-ins. Every process is a [`Service`], stopped when the
//! suite drops it.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use crate::services::{free_port, Service};

/// Where the binaries and the container's code are.
#[derive(Debug, Clone)]
pub struct Paths {
    pub earshot: PathBuf,
    pub standins: PathBuf,
    pub kokoro_dir: PathBuf,
    pub logs: PathBuf,
    /// The plain container (no extra environment), kept for the whole run when suites may share it
    /// (`--quick`: its figures mean nothing, and each start costs seconds of loading the model; eight
    /// suites ask for it). `None`: each suite starts its own, as measurements need (a container another
    /// suite warmed is not the one measured). Containers with settings of their own are never shared, so
    /// that no model stays loaded beyond the suite that uses it (a quick run takes two lanes of suites at
    /// once: the shared container beside each lane's own, two at most for the piece plan's).
    pub shared_kokoro: Option<SharedKokoro>,
    /// Whether suites warm the model and their paths up before they measure (the model's first inferences
    /// are slower than the rest). Not in `--quick`: its figures mean nothing, and each warm-up is a whole
    /// answer spoken for nothing.
    pub warm_up: bool,
}

/// The plain container a quick run's suites share, started by the first that asks.
pub type SharedKokoro = Arc<tokio::sync::OnceCell<Arc<Running>>>;

pub struct Running {
    pub service: Service,
    pub url: String,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running").field("url", &self.url).finish_non_exhaustive()
    }
}

/// A Kokoro container for one suite: its own, or one shared with the run's other suites (quick runs).
pub type Kokoro = Arc<Running>;

/// The Kokoro container's server from its venv, ready to synthesize.
pub async fn kokoro(paths: &Paths) -> Result<Kokoro, String> {
    kokoro_with(paths, &[]).await
}

/// The Kokoro container's server with extra environment variables (`KOKORO_MAX_SESSIONS`, …), a new one;
/// with none, the run's shared one where suites share it.
pub async fn kokoro_with(paths: &Paths, env: &[(&str, String)]) -> Result<Kokoro, String> {
    match &paths.shared_kokoro {
        Some(shared) if env.is_empty() => shared.get_or_try_init(|| async { Ok(Arc::new(start_kokoro(paths, env).await?)) }).await.cloned(),
        _ => Ok(Arc::new(start_kokoro(paths, env).await?)),
    }
}

async fn start_kokoro(paths: &Paths, env: &[(&str, String)]) -> Result<Running, String> {
    let python = paths.kokoro_dir.join(".venv/bin/python");
    if !python.exists() {
        return Err(format!("{} is missing: run `make -C infra/kokoro venv` (make bench does)", python.display()));
    }
    let port = free_port();
    let mut command = Command::new(python);
    command
        .args(["-m", "kokoro_server"])
        .current_dir(&paths.kokoro_dir)
        .env("KOKORO_ENGINE", "onnx")
        .env("KOKORO_PORT", port.to_string())
        .env("KOKORO_LOG_LEVEL", "warning");
    for (k, v) in env {
        command.env(k, v);
    }
    // Each container its own log: a quick run has two lanes' containers running at once.
    static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut service = Service::spawn(&if n == 0 { "kokoro".to_string() } else { format!("kokoro-{}", n + 1) }, command, &paths.logs)?;
    let url = format!("http://127.0.0.1:{port}");
    let took = service.wait_ready(&format!("{url}/ping"), Duration::from_secs(300), Duration::from_millis(20)).await?;
    eprintln!("bench: the Kokoro container is ready ({:.1} s; log {})", took.as_secs_f64(), service.log.display());
    Ok(Running { service, url })
}

/// `earshot serve` with `args` on a free port (no demo page).
pub async fn gateway(paths: &Paths, name: &str, args: &[String], env: &[(&str, String)]) -> Result<Running, String> {
    let port = free_port();
    let mut command = Command::new(&paths.earshot);
    command.arg("serve").args(["--port", &port.to_string(), "--web-dir", ""]).args(args).env("EARSHOT_LOG", "warn");
    // The suites measure the model: no sentence is played from the cache unless the suite is about it.
    if !args.iter().any(|a| a == "--cache") {
        command.args(["--cache", "off"]);
    }
    // Every simulated caller connects from 127.0.0.1: the load suites hold hundreds of connections at once.
    command.args(["--max-connections-per-address", "0"]);
    for (k, v) in env {
        command.env(k, v);
    }
    let mut service = Service::spawn(name, command, &paths.logs)?;
    let url = format!("http://127.0.0.1:{port}");
    service.wait_ready(&format!("{url}/healthz"), Duration::from_secs(120), Duration::from_millis(20)).await?;
    Ok(Running { service, url })
}

/// The AWS stand-ins, voiced by the Kokoro container at `kokoro_url`; returns the service, its
/// endpoint and the certificate to trust.
pub async fn standins(paths: &Paths, kokoro_url: &str) -> Result<(Running, PathBuf), String> {
    let port = free_port();
    let pem = paths.logs.join("standins.pem");
    let _ = std::fs::remove_file(&pem);
    let mut command = Command::new(&paths.standins);
    command.args(["--port", &port.to_string(), "--kokoro-url", kokoro_url, "--cert-out"]).arg(&pem);
    let service = Service::spawn("standins", command, &paths.logs)?;
    // The stand-ins write their certificate once they listen (TLS only: no plain health check).
    for _ in 0..100 {
        if pem.metadata().is_ok_and(|m| m.len() > 0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if !pem.exists() {
        return Err(format!("the stand-ins wrote no certificate; see {}", service.log.display()));
    }
    Ok((Running { service, url: format!("https://127.0.0.1:{port}") }, pem))
}

/// The environment the AWS SDKs need to talk to the stand-ins.
pub fn aws_env() -> Vec<(&'static str, String)> {
    vec![("AWS_ACCESS_KEY_ID", "AKIDBENCH".into()), ("AWS_SECRET_ACCESS_KEY", "bench".into()), ("AWS_REGION", "us-east-1".into())]
}

/// Waits until the container has no request running (after a client went away, its work is being
/// cancelled), so that the next trial starts on an idle container.
pub async fn kokoro_idle(kokoro_url: &str) -> Result<(), String> {
    let client = reqwest::Client::new();
    for _ in 0..600 {
        let stats: serde_json::Value =
            client.get(format!("{kokoro_url}/stats")).send().await.map_err(|e| e.to_string())?.json().await.map_err(|e| e.to_string())?;
        if stats["active_requests"].as_u64() == Some(0) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err("the Kokoro container stayed busy for a minute".into())
}
