//! Overload: more conversations at once than the Kokoro container admits. A voice product should
//! answer "busy" fast rather than speak late; this suite shows what each configuration does with
//! the same burst of N conversations started together on the real model:
//!
//! - `uncapped`: the container admits everyone (what earshot did before admission): every user waits;
//! - `capped, no other arm`: the container admits `cap`, the rest get `503 backend_busy` at once;
//! - `capped, spill to synthetic`: the rest start at once on the other arm (`overflow`). The other arm
//!   is the synthetic voice here, standing in for Polly, so the spilled figures show earshot's side.
//!
//! Reported per configuration: time to first audio of the admitted, the share that spilled or was
//! refused, and how long a refusal took to arrive.

use std::time::{Duration, Instant};

use earshot_client::{speak, CallOptions, ClientError};
use serde::{Deserialize, Serialize};

use crate::stack::{self, Paths};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    /// `admitted`, `spilled` or `refused`.
    pub kind: String,
    /// Client time to first audio (admitted and spilled), or to the refusal.
    pub client_ms: f64,
    pub backend: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Config {
    pub name: String,
    pub cap: Option<usize>,
    pub conversations: usize,
    pub outcomes: Vec<Outcome>,
    pub errors: Vec<String>,
}

pub struct Settings {
    pub conversations: usize,
    pub cap: usize,
    pub rounds: usize,
}

pub async fn run(paths: &Paths, settings: &Settings) -> Result<Vec<Config>, String> {
    let mut configs = Vec::new();
    let cases: [(&str, Option<usize>, &[&str]); 3] = [
        ("uncapped", None, &["--backends", "kokoro"]),
        ("capped, no other arm", Some(settings.cap), &["--backends", "kokoro"]),
        ("capped, spill to synthetic", Some(settings.cap), &["--backends", "kokoro,synthetic", "--failover"]),
    ];
    for (name, cap, args) in cases {
        let sessions = cap.unwrap_or(10_000).to_string();
        let kokoro = stack::kokoro_with(paths, &[("KOKORO_MAX_SESSIONS", sessions)]).await?;
        let mut args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        args.extend(["--kokoro-url".to_string(), kokoro.url.clone()]);
        let gateway = stack::gateway(paths, &format!("gateway-overload-{}", configs.len()), &args, &[]).await?;
        let mut config = Config { name: name.into(), cap, conversations: settings.conversations, outcomes: Vec::new(), errors: Vec::new() };
        for _ in 0..settings.rounds {
            stack::kokoro_idle(&kokoro.url).await?;
            let mut tasks = Vec::new();
            for _ in 0..settings.conversations {
                let url = gateway.url.clone();
                tasks.push(tokio::spawn(async move { one(&url).await }));
            }
            for task in tasks {
                match task.await.map_err(|e| e.to_string()).and_then(|r| r) {
                    Ok(outcome) => config.outcomes.push(outcome),
                    Err(e) => config.errors.push(e),
                }
            }
        }
        let count = |kind: &str| config.outcomes.iter().filter(|o| o.kind == kind).count();
        eprintln!(
            "bench: overload: {name}: {} admitted, {} spilled, {} refused, {} failed",
            count("admitted"),
            count("spilled"),
            count("refused"),
            config.errors.len()
        );
        configs.push(config);
    }
    Ok(configs)
}

/// One conversation of the burst: the `brief` answer, held to its end.
async fn one(url: &str) -> Result<Outcome, String> {
    let sent = Instant::now();
    let body = crate::trial::body(Some("brief"), None, "incremental", None);
    let options = CallOptions { timeout: Duration::from_secs(600), ..Default::default() };
    match speak(url, &body, &options).await {
        Ok(r) => {
            if let Some(e) = &r.error {
                return Err(format!("{}: {}", e.code, e.message));
            }
            let backend = r.header("x-earshot-backend").map(str::to_string);
            let kind = if r.header("x-earshot-backend-reason") == Some("overflow") { "spilled" } else { "admitted" };
            let client_ms = r.marks.first_audio_decoded_ms.ok_or("no audio")?;
            Ok(Outcome { kind: kind.into(), client_ms, backend })
        }
        Err(ClientError::Refused { status: 503, code, .. }) if code == "backend_busy" => {
            Ok(Outcome { kind: "refused".into(), client_ms: sent.elapsed().as_secs_f64() * 1000.0, backend: None })
        }
        Err(e) => Err(e.to_string()),
    }
}
