//! What a listener hears after the first word: the container's piece plan, paced (the default) against
//! fixed (the earlier plan), on the local Kokoro with the real model, on an idle machine, with one
//! CPU-bound process running beside it (as on a laptop with a browser and an editor open) and with
//! four (a machine busier than it has cores, where the fixed plan stops mid-sentence). Each answer
//! shape at 30 tokens/s, incremental release; the client plays each chunk as it arrives, so a chunk
//! that comes after the audio before it has played out is a silence it hears: a *stall* when it falls
//! inside a sentence, a gap when it falls before one.
//!
//! Both plans run in the same rounds, in an order shuffled from a fixed seed, each from its own
//! container and gateway, so that drift touches both alike.

use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::services::Service;
use crate::stack::{self, Paths};
use crate::trial::{self, Measured};
use crate::Rng;

pub const TOKENS_PER_SECOND: f64 = 30.0;
pub const PLANS: [&str; 2] = ["fixed", "paced"];
/// Each load: its name and how many CPU-bound processes run beside the stack.
pub const LOADS: [(&str, usize); 3] = [("idle", 0), ("one CPU-bound process", 1), ("four CPU-bound processes", 4)];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trial {
    pub load: String,
    pub shape: String,
    pub plan: String,
    pub round: usize,
    pub measured: Measured,
}

/// `n` processes that each keep a core busy until dropped.
fn cpu_hogs(paths: &Paths, n: usize) -> Result<Vec<Service>, String> {
    (0..n)
        .map(|i| {
            let mut command = Command::new("sh");
            command.args(["-c", "while :; do :; done"]);
            Service::spawn(&format!("cpu-hog-{i}"), command, &paths.logs)
        })
        .collect()
}

/// Runs every load (the first two only when `quick`).
pub async fn run(paths: &Paths, trials: usize, shapes: &[String], quick: bool) -> Result<Vec<Trial>, String> {
    // Both plans' containers load their models at once: nothing is measured yet.
    let [first_env, second_env] = PLANS.map(|plan| [("KOKORO_PIECE_PLAN", plan.to_string())]);
    let (first, second) = tokio::try_join!(stack::kokoro_with(paths, &first_env), stack::kokoro_with(paths, &second_env))?;
    let containers = [first, second];
    let mut gateways = Vec::new();
    for (plan, kokoro) in PLANS.into_iter().zip(&containers) {
        let args: Vec<String> =
            ["--kokoro-url", kokoro.url.as_str(), "--tokens-per-second", &TOKENS_PER_SECOND.to_string(), "--first-token-ms", "200"].map(String::from).to_vec();
        gateways.push((plan, stack::gateway(paths, &format!("gateway-pacing-{plan}"), &args, &[]).await?));
    }
    if paths.warm_up {
        for (_, gateway) in &gateways {
            trial::run(&gateway.url, &trial::body(Some("brief"), None, "incremental", None), false).await?;
        }
    }
    let mut rng = Rng(0x9ACED);
    let mut out = Vec::new();
    for &(load, hogs) in &LOADS[..if quick { 2 } else { LOADS.len() }] {
        let _hogs = cpu_hogs(paths, hogs)?;
        let orders = crate::balanced_by_shape(&mut rng, shapes.len(), gateways.len(), trials);
        for (round, by_shape) in orders.iter().enumerate() {
            for (s, shape) in shapes.iter().enumerate() {
                for &i in &by_shape[s] {
                    let (plan, gateway) = &gateways[i];
                    for kokoro in &containers {
                        stack::kokoro_idle(&kokoro.url).await?;
                    }
                    let body = trial::body(Some(shape), None, "incremental", None);
                    let measured = trial::run(&gateway.url, &body, false).await.map_err(|e| format!("pacing {load} {shape} {plan}: {e}"))?;
                    out.push(Trial { load: load.into(), shape: shape.clone(), plan: plan.to_string(), round, measured });
                }
            }
            eprintln!("bench: piece plan: {load}: round {}/{trials} done", round + 1);
        }
    }
    Ok(out)
}
