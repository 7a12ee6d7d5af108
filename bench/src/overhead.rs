//! Orchestration overhead on each path to the model: the container's WebSocket, the SageMaker
//! bidirectional stream and Polly's bidirectional stream, the last two with the real AWS SDK clients
//! against the local stand-ins (voiced by the same container). Overhead is time to first audio minus
//! the moment the first sentence could be released and the backend's own first-audio latency, from
//! each conversation's timeline.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::stack::{self, Paths};
use crate::trial::{self, Measured};
use crate::Rng;

/// Two short sentences, given as text: the overhead does not depend on the agent.
pub const TEXT: &str = "Sure. Your order shipped this morning.";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trial {
    pub path: String,
    pub round: usize,
    #[serde(flatten)]
    pub measured: Measured,
}

pub async fn run(paths: &Paths, trials: usize) -> Result<Vec<Trial>, String> {
    let kokoro = stack::kokoro(paths).await?;
    let (standins, pem) = stack::standins(paths, &kokoro.url).await?;
    let direct = stack::gateway(paths, "gateway-direct", &["--kokoro-url".into(), kokoro.url.clone()], &[]).await?;
    let aws_args: Vec<String> =
        ["--backends", "kokoro,polly", "--sagemaker-endpoint", "earshot-kokoro", "--kokoro-voice", "jf_alpha", "--aws-endpoint", &standins.url]
            .iter()
            .map(|s| s.to_string())
            .chain(["--aws-trust-pem".to_string(), pem.display().to_string()])
            .collect();
    let aws = stack::gateway(paths, "gateway-aws", &aws_args, &stack::aws_env()).await?;
    let cells: [(&str, &str, Option<&str>); 3] = [
        ("kokoro-websocket", direct.url.as_str(), None),
        ("sagemaker-standin", aws.url.as_str(), Some("kokoro")),
        ("polly-standin", aws.url.as_str(), Some("polly")),
    ];
    if paths.warm_up {
        eprintln!("bench: overhead: warming up each path");
        for (_, url, backend) in cells {
            trial::run(url, &trial::body(None, Some(TEXT), "incremental", backend), false).await?;
        }
    }
    let mut out = Vec::new();
    let started = Instant::now();
    for (round, order) in Rng(0x0E7E_4EAD).balanced_orders(cells.len(), trials).into_iter().enumerate() {
        for (path, url, backend) in order.into_iter().map(|i| cells[i]) {
            stack::kokoro_idle(&kokoro.url).await?;
            let measured = trial::run(url, &trial::body(None, Some(TEXT), "incremental", backend), false).await.map_err(|e| format!("{path}: {e}"))?;
            out.push(Trial { path: path.into(), round, measured });
        }
    }
    eprintln!("bench: overhead: {} conversations in {:.0} s", out.len(), started.elapsed().as_secs_f64());
    Ok(out)
}
