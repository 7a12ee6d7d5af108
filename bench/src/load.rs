//! The orchestrator under load: many concurrent conversations against one `earshot serve` on this
//! machine. The model cannot serve hundreds of conversations here, so the backend is the synthetic
//! voice: a tone at real-time pace after a fixed first-audio latency. What is measured is earshot
//! (agent pacing, segmenting, scheduling, encoding, HTTP streaming), not a model: the report says so.
//!
//! Each level N gets a fresh server, so that its memory figure is not flattered by memory an earlier
//! level left to the allocator. Conversations start spread evenly over one second.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::stack::{self, Paths};
use crate::stats::median;
use crate::trial::{self, Measured};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Level {
    pub conversations: usize,
    pub waves: usize,
    pub failed: usize,
    pub errors: Vec<String>,
    /// Idle server, after one warm-up conversation.
    pub baseline_rss_kb: u64,
    pub peak_rss_kb: u64,
    /// (peak − baseline) / concurrent conversations.
    pub kb_per_conversation: f64,
    /// The server's CPU time over the waves' wall time, in cores (1.0 = one core busy).
    pub server_cores: f64,
    pub server_cpu_ms_per_conversation: f64,
    pub trials: Vec<Measured>,
    /// Client time to first audio minus the median at N = 1.
    #[serde(default)]
    pub added_ttfa_ms: Vec<f64>,
}

pub struct Settings {
    pub levels: Vec<usize>,
    /// Conversations measured at N = 1 (one after another) and at least that many at small N.
    pub min_samples: usize,
    pub latency_ms: u64,
    /// How far ahead of playback the synthetic voice sends (0: as it would play, as a measurement needs;
    /// quick runs send the whole answer at once, since their figures mean nothing).
    pub lead_ms: u64,
    pub prompt: String,
}

pub async fn run(paths: &Paths, settings: &Settings) -> Result<Vec<Level>, String> {
    raise_open_files_limit();
    let mut levels = Vec::new();
    for &n in &settings.levels {
        let args: Vec<String> = [
            "--backends",
            "synthetic",
            "--synthetic-latency-ms",
            &settings.latency_ms.to_string(),
            "--synthetic-lead-ms",
            &settings.lead_ms.to_string(),
            "--tokens-per-second",
            "30",
            "--first-token-ms",
            "200",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let server = stack::gateway(paths, &format!("gateway-load-{n}"), &args, &[]).await?;
        let body = trial::body(Some(&settings.prompt), None, "incremental", None);
        trial::run(&server.url, &body, false).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let baseline = server.service.rss_kb().unwrap_or(0);
        let waves = settings.min_samples.div_ceil(n).max(1);
        let cpu_before = server.service.cpu_ms().unwrap_or(0.0);
        let peak = Arc::new(AtomicU64::new(baseline));
        let sampling = Arc::new(AtomicBool::new(true));
        let sampler = {
            let (peak, sampling, pid) = (peak.clone(), sampling.clone(), server.service.pid());
            tokio::spawn(async move {
                while sampling.load(Ordering::SeqCst) {
                    if let Some(rss) = crate::services::rss_kb(pid) {
                        peak.fetch_max(rss, Ordering::SeqCst);
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
        };
        let started = Instant::now();
        let mut trials = Vec::new();
        let mut errors = Vec::new();
        for _ in 0..waves {
            let mut tasks = Vec::with_capacity(n);
            for i in 0..n {
                let (url, body) = (server.url.clone(), body.clone());
                let delay = Duration::from_secs_f64(i as f64 / n as f64);
                tasks.push(tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    trial::run(&url, &body, false).await
                }));
            }
            for task in tasks {
                match task.await.map_err(|e| e.to_string()).and_then(|r| r) {
                    Ok(m) => trials.push(m),
                    Err(e) => errors.push(e),
                }
            }
        }
        let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
        sampling.store(false, Ordering::SeqCst);
        let _ = sampler.await;
        let cpu_ms = server.service.cpu_ms().unwrap_or(0.0) - cpu_before;
        let peak_rss = peak.load(Ordering::SeqCst);
        let failed = errors.len();
        errors.sort();
        errors.dedup();
        eprintln!("bench: load: N = {n}: {} conversations, {failed} failed, {:.1} s", trials.len(), wall_ms / 1000.0);
        levels.push(Level {
            conversations: n,
            waves,
            failed,
            errors,
            baseline_rss_kb: baseline,
            peak_rss_kb: peak_rss,
            kb_per_conversation: peak_rss.saturating_sub(baseline) as f64 / n as f64,
            server_cores: cpu_ms / wall_ms,
            server_cpu_ms_per_conversation: cpu_ms / (n * waves) as f64,
            trials,
            added_ttfa_ms: Vec::new(),
        });
    }
    // Added latency is against the single conversation.
    let single = levels.iter().find(|l| l.conversations == 1).map(|l| median(&l.trials.iter().filter_map(|t| t.client_ttfa_ms).collect::<Vec<_>>()));
    if let Some(single) = single {
        for level in &mut levels {
            level.added_ttfa_ms = level.trials.iter().filter_map(|t| t.client_ttfa_ms).map(|t| t - single).collect();
        }
    }
    Ok(levels)
}

/// Hundreds of connections need more descriptors than some shells allow by default; the servers
/// this process starts inherit the limit.
fn raise_open_files_limit() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: plain system calls on a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max.min(65_536);
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}
