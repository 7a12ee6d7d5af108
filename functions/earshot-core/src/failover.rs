//! Failover at the start: several backends in order, the first that takes the conversation opens it.
//!
//! - **Opening** ([`Failover::open_arms`]): the arms are tried in order. One that is still starting
//!   (`readiness`) or fails to open hands over to the next (a *failover*); one that is full
//!   ([`codes::BUSY`]) spills over to it (an *overflow*). What was passed over, and why, comes back
//!   with the session ([`Opened::handovers`]), since no stream exists yet to announce it on. With
//!   every arm refused, the last one's error is the answer.
//! - **After it**, until the first audio, the arms not used are the [`crate::switcher`]'s: a session
//!   that fails before anything is heard is replaced there, as is one whose first sentence turns out to be
//!   in a language another voice speaks ([`Failover::language_route`]), or whose voice passes over a
//!   sentence another arm could speak ([`Failover::reroute`]). With one arm, no language to settle and no
//!   route for a sentence passed over, [`Failover::open_arms`] hands back that arm's own session: no relay,
//!   no extra hop.
//!
//! Opening an arm is bounded in time ([`Failover::open_timeout`], 5 s by default): a handshake that stalls
//! fails with `backend_open_timeout` and hands over like any other failure to open ([`crate::arm`]).
//!
//! With [`Failover::arm_health`], what failed is remembered across conversations
//! ([`crate::arm_health`]): an arm that failed to open, or whose session failed before its first audio,
//! is passed over at once by the next conversations (but never when it is the last arm left) until a
//! background probe finds it healthy again.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::arm::OpenWith;
pub use crate::arm::{Arm, DEFAULT_OPEN_TIMEOUT, OPEN_TIMEOUT};
use crate::arm_health::ArmHealth;
use crate::cached_session::CacheUse;
use crate::language::Language;
use crate::speech::{codes, SpeechError, SpeechSession};
use crate::switcher::{LanguageRoute, Switcher};

/// An arm passed over when the conversation opened.
#[derive(Debug, Clone, PartialEq)]
pub struct Handover {
    /// The arm's backend name.
    pub from: String,
    pub cause: SpeechError,
}

impl Handover {
    /// The arm was full: the conversation spilled over rather than failed over.
    pub fn is_overflow(&self) -> bool {
        self.cause.code == codes::BUSY
    }
}

/// A session opened on one of the arms.
pub struct Opened {
    pub session: SpeechSession,
    /// The backend that took the conversation.
    pub backend: String,
    /// The arms before it that could not, in order.
    pub handovers: Vec<Handover>,
}

/// Backends in order: the first that can take the conversation speaks it.
#[derive(Clone)]
pub struct Failover {
    arms: Vec<Arm>,
    open_timeout: Duration,
    language: Option<Language>,
    sample_rate: Option<u32>,
    cache: Option<CacheUse>,
    health: Option<Arc<ArmHealth>>,
    language_route: Option<LanguageRoute>,
    reroute: Option<LanguageRoute>,
}

impl Failover {
    /// `arms` in the order they are tried; at least one.
    pub fn new(arms: Vec<Arm>) -> Self {
        assert!(!arms.is_empty(), "a failover needs at least one arm");
        Failover { arms, open_timeout: DEFAULT_OPEN_TIMEOUT, language: None, sample_rate: None, cache: None, health: None, language_route: None, reroute: None }
    }

    /// The arms' remembered health, shared with other conversations ([`crate::arm_health`]); `None`:
    /// each conversation tries every arm afresh.
    pub fn arm_health(mut self, health: Option<Arc<ArmHealth>>) -> Self {
        self.health = health;
        self
    }

    /// The longest an arm may take to open its session before the next is tried.
    pub fn open_timeout(mut self, limit: Duration) -> Self {
        self.open_timeout = limit;
        self
    }

    /// The language every arm's session is opened in ([`crate::speech::SessionOptions::language`]).
    pub fn language(mut self, language: Option<Language>) -> Self {
        self.language = language;
        self
    }

    /// The rate the client plays, which an arm produces natively where it can
    /// ([`crate::speech::SessionOptions::sample_rate`]); `None`: each arm's own.
    pub fn sample_rate(mut self, rate: Option<u32>) -> Self {
        self.sample_rate = rate;
        self
    }

    /// The sentence cache every arm's session speaks through ([`crate::cached_session`]); `None`: none.
    pub fn cache(mut self, cache: Option<CacheUse>) -> Self {
        self.cache = cache;
        self
    }

    /// Where the language is not known yet: how to route the conversation for the language its first
    /// sentence is in ([`crate::switcher`]). `None`: the language the session opened in stands.
    pub fn language_route(mut self, route: Option<LanguageRoute>) -> Self {
        self.language_route = route;
        self
    }

    /// How to route the conversation for the language of a sentence its voice passes over before the first
    /// audio (a script it cannot read), so that an arm that speaks it takes the answer ([`crate::switcher`]).
    /// `None`: a sentence passed over stays so.
    pub fn reroute(mut self, route: Option<LanguageRoute>) -> Self {
        self.reroute = route;
        self
    }

    /// Opens the first arm that takes the conversation; see the module docs. `Err` carries the name
    /// of the last arm tried beside its error.
    pub async fn open_arms(&self, conversation_id: &str, cancel: &CancellationToken) -> Result<Opened, (String, SpeechError)> {
        let mut rest: VecDeque<Arm> = self.arms.iter().cloned().collect();
        let mut handovers = Vec::new();
        let with = OpenWith {
            conversation_id: conversation_id.to_string(),
            language: self.language.clone(),
            sample_rate: self.sample_rate,
            cancel: cancel.clone(),
            limit: self.open_timeout,
            cache: self.cache.clone(),
            health: self.health.clone(),
        };
        // Arms passed over as remembered sick, tried last if every other arm fails.
        let mut deferred: VecDeque<Arm> = VecDeque::new();
        let mut passing_over = true;
        while let Some(arm) = rest.pop_front() {
            let name = arm.backend.name().to_string();
            // Remembered as sick: straight on to the next arm (the last one left is always tried).
            if let Some(cause) = with.passed_over(&arm, !passing_over || rest.is_empty()) {
                handovers.push(Handover { from: name, cause });
                deferred.push_back(arm);
                continue;
            }
            match with.open(&arm).await {
                Ok(session) if rest.is_empty() && self.language_route.is_none() && self.reroute.is_none() => {
                    return Ok(Opened { session, backend: name, handovers })
                }
                Ok(session) => {
                    let switcher =
                        Switcher { current: session, current_arm: arm, rest, with, settle: self.language_route.clone(), reroute: self.reroute.clone() };
                    let session = switcher.spawn();
                    return Ok(Opened { session, backend: name, handovers });
                }
                Err(cause) if rest.is_empty() && !deferred.is_empty() => {
                    // Every arm that was not passed over failed: the ones that were get their chance.
                    handovers.push(Handover { from: name, cause });
                    rest = std::mem::take(&mut deferred);
                    passing_over = false;
                }
                Err(cause) if rest.is_empty() => return Err((name, cause)),
                Err(cause) => {
                    tracing::warn!(
                        "{name} cannot take the conversation ({}: {}); {}",
                        cause.code,
                        // The upstream's words may carry a URL's key or an account's ARN: redacted, as every log line of them.
                        crate::redact::redact(&cause.message),
                        if cause.code == codes::BUSY { "spilling over" } else { "failing over" }
                    );
                    handovers.push(Handover { from: name, cause });
                }
            }
        }
        unreachable!("the loop returns on its last arm")
    }
}
