//! The `owner` suite: what a caller's own limits cost at first audio. Each conversation of a caller with a
//! token takes one of its places (`--max-conversations-per-owner`), the first block of its character budget
//! (`--max-chars-per-owner-hour`), its input characters (`--max-input-chars-per-owner-hour`) and a request of
//! its minute (`--max-requests-per-owner-minute`) before anything upstream is called, and its sentences pass through the
//! budget's relay. Three gateways in token mode with the synthetic voice (its first audio a fixed 20 ms, so the
//! differences are the gateway's): the checks off, the checks kept in the process (`earshot serve`), and the
//! checks kept in the DynamoDB interrupt table as on Lambda (moto's server: a local round trip, where
//! DynamoDB's own is some milliseconds). The client's time to first audio is measured, cells in a shuffled
//! order each round.

use std::path::Path;

use earshot_client::{speak, CallOptions};
use serde::{Deserialize, Serialize};

use crate::stack::{self, Paths};
use crate::trial;
use crate::Rng;

/// The token key of the suite's gateways.
const KEYS: &str = "k1=earshot-bench-owner-key-0123456789abcdef";
const TEXT: &str = "Sure. Your order shipped this morning.";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub cell: String,
    /// The client's time to first audio, per conversation.
    pub client_ttfa_ms: Vec<f64>,
}

pub async fn run(paths: &Paths, trials: usize, moto_server: &Path) -> Result<Vec<Row>, String> {
    let (_moto, moto_url) = crate::interrupt::moto_with_table(paths, moto_server).await?;
    let common = ["--backends", "synthetic", "--synthetic-latency-ms", "20", "--auth", "token", "--token-keys", KEYS];
    let args = |more: &[&str]| common.iter().chain(more).map(|s| s.to_string()).collect::<Vec<String>>();
    let off = stack::gateway(
        paths,
        "gateway-owner-off",
        &args(&[
            "--max-conversations-per-owner",
            "0",
            "--max-chars-per-owner-hour",
            "0",
            "--max-input-chars-per-owner-hour",
            "0",
            "--max-requests-per-owner-minute",
            "0",
        ]),
        &[],
    )
    .await?;
    let local = stack::gateway(paths, "gateway-owner-local", &args(&[]), &[]).await?;
    let shared =
        stack::gateway(paths, "gateway-owner-shared", &args(&["--interrupt-table", "interrupts", "--interrupt-endpoint", &moto_url]), &stack::aws_env())
            .await?;
    let token = std::process::Command::new(&paths.earshot)
        .args(["token", "--keys", KEYS, "--sub", "bench-caller", "--conversation", "bench:*", "--ttl", "3000"])
        .output()
        .map_err(|e| format!("earshot token: {e}"))?;
    if !token.status.success() {
        return Err(format!("earshot token failed: {}", String::from_utf8_lossy(&token.stderr)));
    }
    let options = CallOptions { bearer: Some(String::from_utf8_lossy(&token.stdout).trim().to_string()), ..Default::default() };
    let cells =
        [("no owner checks", off.url.as_str()), ("owner checks in the process", local.url.as_str()), ("owner checks in DynamoDB (moto)", shared.url.as_str())];
    let mut rows: Vec<Row> = cells.iter().map(|(cell, _)| Row { cell: cell.to_string(), client_ttfa_ms: Vec::new() }).collect();
    let mut body = trial::body(None, Some(TEXT), "incremental", None);
    // One round unmeasured: each gateway's first conversation opens its connections.
    for (round, order) in Rng(0x0_11E4).balanced_orders(cells.len(), trials + 1).into_iter().enumerate() {
        for i in order {
            body.conversation_id = Some(format!("bench:{round}-{i}"));
            let received = speak(cells[i].1, &body, &options).await.map_err(|e| format!("{}: {e}", cells[i].0))?;
            if let Some(error) = &received.error {
                return Err(format!("{}: {}: {}", cells[i].0, error.code, error.message));
            }
            if round > 0 {
                rows[i].client_ttfa_ms.extend(received.marks.first_audio_decoded_ms);
            }
        }
    }
    Ok(rows)
}
