//! Capacity: how many conversations one Kokoro container holds at once, through `earshot serve`, before a
//! listener notices. It is the knee that sizes a self-hosted voice: the container's admission limit
//! (`KOKORO_MAX_SESSIONS`), the endpoint's autoscaling target and `earshot plan`'s instances.
//!
//! It judges as `infra/kokoro/measure_capacity.py` judges the container alone, and for the same reasons:
//! - *the budget*: twice the median first audio of conversations alone, one budget for every level;
//! - *a level* is k conversations (the `brief` answer, held to its end) whose starts are spread evenly over a
//!   second, `rounds` times. It holds when the p95 of their first audio is within the budget and none
//!   stalled inside a sentence for longer than [`STALL_MS`] (the client plays each chunk as it arrives);
//! - *the knee* is the last level of the unbroken holding run from the first; "at least" that when the
//!   highest level asked held too.
//!
//! Unlike the script, this goes through the gateway as a caller does (the agent's pace, segmenting,
//! release, the client's decoding), so its budget is a caller's. The container admits everyone
//! (no cap): what is measured is where it stops holding, not what it refuses.

use std::time::{Duration, Instant};

use earshot_agents::Sample;
use earshot_core::stats::percentile_sorted;
use serde::{Deserialize, Serialize};

use crate::stack::{self, Paths};
use crate::stats::median;
use crate::trial;

/// A silence inside a sentence longer than this is a stall the listener hears (the script's threshold).
pub const STALL_MS: f64 = 50.0;

pub struct Settings {
    /// The levels tried, rising: conversations at once.
    pub levels: Vec<usize>,
    /// Conversations alone that set the budget.
    pub lone: usize,
    /// Bursts per level.
    pub rounds: usize,
    /// One conversation first, not recorded (off in a quick run, whose figures mean nothing).
    pub warm_up: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Level {
    pub conversations: usize,
    /// Client time to first audio of every conversation of the level's rounds.
    pub first_audio_ms: Vec<f64>,
    /// The longest stall inside a sentence of each conversation (0 when none).
    pub worst_stall_ms: Vec<f64>,
    pub errors: Vec<String>,
    pub holds: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    /// First audio of the conversations alone.
    pub lone_ms: Vec<f64>,
    pub budget_ms: f64,
    pub levels: Vec<Level>,
    /// The last level of the unbroken holding run; `None` when the first did not hold.
    pub knee: Option<usize>,
    /// Whether a level above the knee failed (otherwise the knee is "at least").
    pub bounded: bool,
    /// Seconds of audio in an answer, the median of the conversations alone.
    pub answer_audio_s: f64,
    /// Characters in the answer's text, as sent to speech (`earshot plan` prices Polly by them). Absent
    /// from results written before it was recorded.
    #[serde(default)]
    pub answer_characters: Option<usize>,
}

/// Whether a level holds: p95 first audio within `budget_ms`, no stall past [`STALL_MS`], no error.
pub fn holds(first_audio_ms: &[f64], worst_stall_ms: &[f64], errors: usize, budget_ms: f64) -> bool {
    if errors > 0 || first_audio_ms.is_empty() {
        return false;
    }
    let mut sorted = first_audio_ms.to_vec();
    sorted.sort_by(f64::total_cmp);
    percentile_sorted(&sorted, 95.0) <= budget_ms && worst_stall_ms.iter().all(|&s| s <= STALL_MS)
}

/// The knee of levels in rising order: the last of the unbroken holding run from the first, and whether a
/// level after it failed.
pub fn knee(levels: &[Level]) -> (Option<usize>, bool) {
    let held = levels.iter().take_while(|l| l.holds).last().map(|l| l.conversations);
    (held, levels.iter().any(|l| !l.holds))
}

/// Answers an hour one container serves at the knee, if answers of `answer_s` seconds kept arriving that
/// many at a time: an upper bound (a steady arrival rate is not what is measured).
pub fn answers_an_hour(knee: usize, answer_s: f64) -> f64 {
    if answer_s > 0.0 {
        knee as f64 * 3600.0 / answer_s
    } else {
        f64::NAN
    }
}

/// The knee of one Kokoro container (CPU, ONNX) through `earshot serve`.
pub async fn run(paths: &Paths, settings: &Settings) -> Result<Results, String> {
    let kokoro = stack::kokoro_with(paths, &[("KOKORO_MAX_SESSIONS", "10000".to_string())]).await?;
    let args: Vec<String> = ["--backends", "kokoro", "--kokoro-url", kokoro.url.as_str()].map(String::from).to_vec();
    let gateway = stack::gateway(paths, "gateway-capacity", &args, &[]).await?;
    measure(&gateway.url, settings, || stack::kokoro_idle(&kokoro.url)).await
}

/// The knee of whatever voice the gateway at `url` speaks with; `idle` waits until that voice has
/// finished the work of the conversations before (so that a level starts from rest).
pub async fn measure<F, Fut>(url: &str, settings: &Settings, idle: F) -> Result<Results, String>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let body = trial::body(Some("brief"), None, "incremental", None);
    if settings.warm_up {
        trial::run(url, &body, false).await?;
    }
    let mut lone_ms = Vec::new();
    let mut audio_ms = Vec::new();
    for _ in 0..settings.lone.max(1) {
        idle().await?;
        let m = trial::run(url, &body, false).await.map_err(|e| format!("capacity, alone: {e}"))?;
        lone_ms.push(m.client_ttfa_ms.ok_or("capacity, alone: no audio")?);
        audio_ms.push(m.audio_ms);
    }
    let budget_ms = 2.0 * median(&lone_ms);
    eprintln!("bench: capacity: alone {:.0} ms first audio (median of {}); budget {budget_ms:.0} ms", median(&lone_ms), lone_ms.len());
    let mut levels: Vec<Level> = Vec::new();
    for &k in &settings.levels {
        let mut level = Level { conversations: k, first_audio_ms: Vec::new(), worst_stall_ms: Vec::new(), errors: Vec::new(), holds: false };
        for _ in 0..settings.rounds.max(1) {
            idle().await?;
            let started = Instant::now();
            let tasks: Vec<_> = (0..k)
                .map(|i| {
                    let (url, body) = (url.to_string(), body.clone());
                    let at = started + Duration::from_millis(1000 * i as u64 / k as u64);
                    tokio::spawn(async move {
                        tokio::time::sleep_until(at.into()).await;
                        trial::run(&url, &body, false).await
                    })
                })
                .collect();
            for task in tasks {
                match task.await.map_err(|e| e.to_string()).and_then(|r| r) {
                    Ok(m) => {
                        level.first_audio_ms.extend(m.client_ttfa_ms);
                        level.worst_stall_ms.push(m.client_stalls_ms.iter().copied().fold(0.0, f64::max));
                    }
                    Err(e) => level.errors.push(e),
                }
            }
        }
        level.holds = holds(&level.first_audio_ms, &level.worst_stall_ms, level.errors.len(), budget_ms);
        eprintln!(
            "bench: capacity: {k} at once: first audio median {:.0} ms, {} stalled, {} failed: {}",
            median(&level.first_audio_ms),
            level.worst_stall_ms.iter().filter(|&&s| s > STALL_MS).count(),
            level.errors.len(),
            if level.holds { "holds" } else { "does not hold" }
        );
        let failed = !level.holds;
        levels.push(level);
        // Past the first level that fails, higher ones only cost time.
        if failed {
            break;
        }
    }
    let (knee, bounded) = knee(&levels);
    let answer_characters = Some(Sample::Brief.source().chars().count());
    Ok(Results { lone_ms, budget_ms, levels, knee, bounded, answer_audio_s: median(&audio_ms) / 1000.0, answer_characters })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(conversations: usize, holds: bool) -> Level {
        Level { conversations, first_audio_ms: vec![1.0], worst_stall_ms: vec![0.0], errors: Vec::new(), holds }
    }

    #[test]
    fn a_level_holds_within_the_budget_with_no_stall_or_error() {
        let twenty: Vec<f64> = (1..=20).map(|i| i as f64 * 100.0).collect();
        // p95 of 100..2000 in steps of 100, interpolated as numpy does: 1905.
        assert!(holds(&twenty, &[0.0; 20], 0, 1905.0));
        assert!(!holds(&twenty, &[0.0; 20], 0, 1904.0));
        let mut stalls = vec![0.0; 20];
        stalls[3] = STALL_MS + 1.0;
        assert!(!holds(&twenty, &stalls, 0, 5000.0), "one stall past the threshold breaks it");
        stalls[3] = STALL_MS;
        assert!(holds(&twenty, &stalls, 0, 5000.0));
        assert!(!holds(&twenty, &[0.0; 20], 1, 5000.0), "a failed conversation breaks it");
        assert!(!holds(&[], &[], 0, 5000.0), "nothing measured holds nothing");
    }

    #[test]
    fn the_knee_is_the_last_level_of_the_unbroken_holding_run() {
        assert_eq!(knee(&[level(1, true), level(2, true), level(3, false)]), (Some(2), true));
        assert_eq!(knee(&[level(1, true), level(2, false), level(3, true)]), (Some(1), true), "a level after a failure does not count");
        assert_eq!(knee(&[level(1, true), level(2, true)]), (Some(2), false), "at least 2: none failed");
        assert_eq!(knee(&[level(1, false)]), (None, true));
        assert!((answers_an_hour(2, 10.0) - 720.0).abs() < 1e-9);
    }

    /// The whole measurement, against a voice whose capacity is known: the synthetic one serving two
    /// sessions at once behind a real gateway, on a socket, with the benchmark's own client. The third
    /// conversation waits for a whole answer, far past the budget, so the knee must come out at two and
    /// bounded. The voice is quick (a short answer, a long latency) and sends ahead, so that the margins
    /// are wide on a loaded machine: a holding level's first audio is the latency plus milliseconds, the
    /// budget twice that, a waiting conversation's a whole answer later; a chunk may come 300 ms late
    /// before the listener hears a gap.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_knee_is_found_at_a_voice_s_known_number_of_sessions() {
        use std::sync::Arc;

        use earshot_agents::{ScriptedAgent, ScriptedConfig};
        use earshot_backends::{SyntheticBackend, SyntheticConfig};
        use earshot_core::cache::CacheScope;
        use earshot_gateway::cache_settings::CacheSettings;
        use earshot_gateway::{Gateway, GatewaySettings, ServerLimits};
        use tokio_util::sync::CancellationToken;

        const SESSIONS: usize = 2;
        let voice = SyntheticBackend::new(SyntheticConfig {
            first_audio: Duration::from_millis(400),
            chars_per_second: 120.0,
            sessions: Some(SESSIONS),
            // Sent ahead, as a real voice sends: a late timer on a loaded machine is not a stall.
            lead: Duration::from_millis(300),
            ..Default::default()
        });
        let agent = ScriptedAgent::new(ScriptedConfig { tokens_per_second: 400.0, first_token_delay: Duration::ZERO, ..Default::default() });
        // No sentence cache: as the suite runs `earshot serve`, every sentence is the voice's work.
        let cache = CacheSettings { scope: CacheScope::Off, ..Default::default() };
        let gateway = Gateway::new(vec![Arc::new(voice.clone())], Arc::new(agent), GatewaySettings { metrics_namespace: None, cache, ..Default::default() });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let router = earshot_gateway::router(Arc::new(gateway));
        tokio::spawn(earshot_gateway::serve(listener, router, ServerLimits::default(), std::future::pending(), CancellationToken::new()));
        // At rest when the voice has no session left.
        let idle = || {
            let voice = voice.clone();
            async move {
                for _ in 0..500 {
                    if voice.live_sessions() == 0 {
                        return Ok(());
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err("the synthetic voice still has sessions after 5 s".to_string())
            }
        };
        let settings = Settings { levels: vec![1, 2, 3, 4], lone: 2, rounds: 1, warm_up: true };
        let results = measure(&url, &settings, idle).await.expect("the measurement runs");
        let held: Vec<(usize, bool)> = results.levels.iter().map(|l| (l.conversations, l.holds)).collect();
        assert_eq!((results.knee, results.bounded), (Some(SESSIONS), true), "levels {held:?}, budget {:.0} ms", results.budget_ms);
        assert_eq!(held, [(1, true), (2, true), (3, false)], "it stops at the first level that fails");
        let waited = &results.levels[2];
        assert!(waited.errors.is_empty(), "the third conversation waits, it is not refused: {:?}", waited.errors);
    }
}
