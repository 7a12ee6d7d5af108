//! Polly's session designs side by side, in one run: the backend of this build (one stream per
//! sentence, complete at its `StreamClosedEvent`, a spare stream opened ahead) and, when
//! `--earshot-baseline` names an earlier build, that build's backend (one stream per conversation,
//! a sentence taken as complete after 300 ms without audio). Both speak through the Polly stand-in
//! (the real SDK, HTTP/2, event streams; Kokoro's voice), the cells shuffled per round.
//!
//! Each conversation is text of four sentences, so the agent does not shape the figures: time to
//! first audio, orchestration overhead, the gaps between sentences at real-time playback, the time to
//! `done`, and the characters Polly billed.

use std::path::Path;
use std::time::Duration;

use earshot_client::{speak, CallOptions};
use earshot_core::protocol::Delivery;
use serde::{Deserialize, Serialize};

use crate::stack::{self, Paths};
use crate::trial::{self, Measured};
use crate::Rng;

pub const TEXT: &str = "Sure. Your order shipped this morning. It should arrive on Friday, before noon. Is there anything else I can help you with?";

/// The design of this build, and of the baseline.
pub const CURRENT: &str = "stream per sentence";
pub const BASELINE: &str = "shared stream, 300 ms quiet";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trial {
    pub design: String,
    pub round: usize,
    pub billed_characters: Option<u64>,
    pub server_done_ms: Option<f64>,
    #[serde(flatten)]
    pub measured: Measured,
}

pub async fn run(paths: &Paths, trials: usize, baseline: Option<&Path>) -> Result<Vec<Trial>, String> {
    let kokoro = stack::kokoro(paths).await?;
    let (standins, pem) = stack::standins(paths, &kokoro.url).await?;
    let args: Vec<String> =
        ["--backends", "polly", "--aws-endpoint", &standins.url, "--aws-trust-pem"].iter().map(|s| s.to_string()).chain([pem.display().to_string()]).collect();
    let current = stack::gateway(paths, "gateway-polly", &args, &stack::aws_env()).await?;
    let before = match baseline {
        Some(binary) => {
            Some(stack::gateway(&Paths { earshot: binary.to_path_buf(), ..paths.clone() }, "gateway-polly-baseline", &args, &stack::aws_env()).await?)
        }
        None => None,
    };
    let mut cells = vec![(CURRENT, current.url.clone())];
    if let Some(b) = &before {
        cells.push((BASELINE, b.url.clone()));
    }
    if paths.warm_up {
        eprintln!("bench: polly: warming up ({} designs)", cells.len());
        for (_, url) in &cells {
            one(url).await?;
        }
    }
    let mut out = Vec::new();
    for (round, order) in Rng(0x9011_7B0D).balanced_orders(cells.len(), trials).into_iter().enumerate() {
        for (design, url) in order.into_iter().map(|i| cells[i].clone()) {
            stack::kokoro_idle(&kokoro.url).await?;
            let (measured, billed, done) = one(&url).await.map_err(|e| format!("{design}: {e}"))?;
            out.push(Trial { design: design.into(), round, billed_characters: billed, server_done_ms: done, measured });
        }
    }
    Ok(out)
}

async fn one(url: &str) -> Result<(Measured, Option<u64>, Option<f64>), String> {
    let options = CallOptions { delivery: Delivery::Sse, timeout: Duration::from_secs(300), stop_after_audio_chunks: None, ..Default::default() };
    let received = speak(url, &trial::body(None, Some(TEXT), "incremental", None), &options).await.map_err(|e| e.to_string())?;
    if let Some(error) = &received.error {
        return Err(format!("the conversation failed: {}: {}", error.code, error.message));
    }
    let timeline = received.timeline.as_ref().ok_or("the stream ended without `done`")?;
    Ok((trial::measure(&received), timeline.billed_characters, timeline.done_ms))
}
