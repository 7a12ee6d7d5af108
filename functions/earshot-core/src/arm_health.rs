//! Arms that failed lately, remembered across conversations, so that one sick arm does not cost every
//! conversation its open limit.
//!
//! Without memory each new conversation tries the failing arm first and waits out its open limit (5 s
//! by default) before the failover goes on, for as long as the arm stays sick. Here, as in LiveKit's
//! FallbackAdapter, an arm that failed to open (or whose session failed before its first audio) is
//! **passed over**: the next conversations go straight to the next arm, with the handover's cause
//! `backend_passed_over`. A task of its own probes the arm's health (`SpeechBackend::health`) after a
//! backoff (5 s, doubling up to a minute while the probe fails) and takes it back the moment it
//! answers. Only failures that say the arm itself cannot be reached or stalls count ([`SICK`]): one full
//! (`backend_busy`) or still starting is known at once and costs nothing to ask, and a refusal of one
//! text (a validation error, a throttle) says nothing of the next conversation's. The last arm left is
//! always tried, remembered or not: memory never turns a conversation away that the arm might have
//! taken, and an arm passed over is still tried, last, when every arm after it has failed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::speech::{SpeechBackend, SpeechError};

/// The code of a handover past an arm remembered as sick.
pub const PASSED_OVER: &str = "backend_passed_over";

/// The failures that make an arm sick: it could not be reached, did not open in time, went away or
/// went silent, or spoke what cannot be read.
pub const SICK: &[&str] = &[
    // `failover::OPEN_TIMEOUT`, named here as text: failover remembers through this module.
    "backend_open_timeout",
    "backend_unreachable",
    "backend_unhealthy",
    "polly_timeout",
    crate::error::codes::BACKEND_GONE,
    crate::error::codes::BACKEND_CLOSED,
    crate::error::codes::BACKEND_STALLED,
    crate::error::codes::BACKEND_PROTOCOL,
];

/// The first wait before a sick arm is probed, doubled after each failed probe up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_secs(5);
/// The longest wait between two probes of a sick arm.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// How long a probe waits for the arm's health check.
const PROBE_LIMIT: Duration = Duration::from_secs(2);

/// What is remembered of one sick arm.
#[derive(Debug, Clone)]
struct Sick {
    cause: SpeechError,
    since: Instant,
    /// When the next probe runs.
    probe_at: Instant,
    backoff: Duration,
    /// Which sickness this is: the probe started for it stops when the arm is taken back and falls
    /// sick again (the next sickness has a probe of its own).
    generation: u64,
}

/// A sick arm as `/healthz` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SickArm {
    /// What its last failure was.
    pub code: String,
    /// How long ago it was first found sick.
    pub since: Duration,
    /// How long until its next probe.
    pub probe_in: Duration,
}

/// The arms' remembered health, one per gateway (shared by every conversation's failover).
#[derive(Debug, Default)]
pub struct ArmHealth {
    sick: Mutex<HashMap<String, Sick>>,
    /// The last sickness's number, across arms.
    generations: std::sync::atomic::AtomicU64,
}

impl ArmHealth {
    /// No arm remembered as sick, ready to be shared by every conversation.
    pub fn new() -> Arc<Self> {
        Arc::new(ArmHealth::default())
    }

    /// Why `name` is passed over now, or `None` when it is not remembered as sick.
    pub fn passed_over(&self, name: &str) -> Option<SpeechError> {
        let sick = self.sick.lock().expect("arm health").get(name).cloned()?;
        let ago = sick.since.elapsed().as_secs_f64();
        Some(SpeechError::new(PASSED_OVER, format!("{name} failed {ago:.1} s ago ({}); passed over until its health check answers", sick.cause.code), true))
    }

    /// `backend` failed to open a session, or its session failed before any audio: remembered as sick
    /// where the failure is one of [`SICK`], and probed in the background until it answers.
    pub fn failed(self: &Arc<Self>, backend: &Arc<dyn SpeechBackend>, cause: &SpeechError) {
        if !SICK.contains(&cause.code.as_str()) {
            return;
        }
        let name = backend.name().to_string();
        let now = Instant::now();
        let started = {
            let mut sick = self.sick.lock().expect("arm health");
            match sick.get_mut(&name) {
                Some(entry) => {
                    entry.cause = cause.clone();
                    None
                }
                None => {
                    let generation = self.generations.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                    sick.insert(name.clone(), Sick { cause: cause.clone(), since: now, probe_at: now + FIRST_BACKOFF, backoff: FIRST_BACKOFF, generation });
                    Some(generation)
                }
            }
        };
        if let Some(generation) = started {
            tracing::warn!("{name} is passed over until it answers its health check ({}: {})", cause.code, crate::redact::redact(&cause.message));
            crate::tasks::spawn(self.clone().probe(backend.clone(), generation));
        }
    }

    /// `name` opened a session: whatever was remembered of it is forgotten.
    pub fn opened(&self, name: &str) {
        if self.sick.lock().expect("arm health").remove(name).is_some() {
            tracing::info!("{name} took a conversation again");
        }
    }

    /// The arms remembered as sick now.
    pub fn report(&self) -> HashMap<String, SickArm> {
        let now = Instant::now();
        self.sick
            .lock()
            .expect("arm health")
            .iter()
            .map(|(name, s)| (name.clone(), SickArm { code: s.cause.code.clone(), since: now - s.since, probe_in: s.probe_at.saturating_duration_since(now) }))
            .collect()
    }

    /// Probes a sick arm after each backoff until its health check answers (or something else forgets
    /// it: a conversation that opened it as the last arm), or the server stops.
    async fn probe(self: Arc<Self>, backend: Arc<dyn SpeechBackend>, generation: u64) {
        let name = backend.name().to_string();
        let this = |s: &Sick| s.generation == generation;
        loop {
            let Some(at) = self.sick.lock().expect("arm health").get(&name).filter(|s| this(s)).map(|s| s.probe_at) else { return };
            // A server that stops does not wait for an arm to recover.
            let answered = tokio::select! {
                _ = crate::tasks::stopping() => return,
                answered = async {
                    tokio::time::sleep_until(at).await;
                    matches!(tokio::time::timeout(PROBE_LIMIT, backend.health()).await, Ok(Ok(())))
                } => answered,
            };
            let mut sick = self.sick.lock().expect("arm health");
            let Some(entry) = sick.get_mut(&name).filter(|s| this(s)) else { return };
            if answered {
                sick.remove(&name);
                tracing::info!("{name} answers its health check again: no longer passed over");
                return;
            }
            entry.backoff = (entry.backoff * 2).min(MAX_BACKOFF);
            entry.probe_at = Instant::now() + entry.backoff;
        }
    }
}
