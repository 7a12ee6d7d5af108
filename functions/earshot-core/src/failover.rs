//! Failover at the start: several backends in order, the first that takes the conversation opens it.
//!
//! - **Opening** ([`Failover::open_arms`]): the arms are tried in order. One that is still starting
//!   (`readiness`) or fails to open hands over to the next (a *failover*); one that is full
//!   ([`crate::speech::codes::BUSY`]) spills over to it (an *overflow*). What was passed over, and why, comes back
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

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::arm::{first_that_opens, OpenWith, Walked};
pub use crate::arm::{Arm, Handover, DEFAULT_OPEN_TIMEOUT, OPEN_TIMEOUT};
use crate::arm_health::ArmHealth;
use crate::cached_session::CacheUse;
use crate::error::codes as error_codes;
use crate::language::Language;
use crate::speech::{SpeakingRate, SpeechError, SpeechSession};
use crate::switcher::{LanguageRoute, Switcher};
use crate::text::Lexicon;

/// A session opened on one of the arms.
pub struct Opened {
    /// The session, ready for the scheduler.
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
    lexicon: Option<Arc<Lexicon>>,
    speaking_rate: SpeakingRate,
}

impl Failover {
    /// `arms` in the order they are tried; at least one.
    pub fn new(arms: Vec<Arm>) -> Self {
        assert!(!arms.is_empty(), "a failover needs at least one arm");
        Failover {
            arms,
            open_timeout: DEFAULT_OPEN_TIMEOUT,
            language: None,
            sample_rate: None,
            cache: None,
            health: None,
            language_route: None,
            reroute: None,
            lexicon: None,
            speaking_rate: SpeakingRate::NORMAL,
        }
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

    /// The lexicon every sentence is said by, whichever arm speaks it ([`crate::pronouncing`]); `None`:
    /// each as written.
    pub fn lexicon(mut self, lexicon: Option<Arc<Lexicon>>) -> Self {
        self.lexicon = lexicon;
        self
    }

    /// How fast every arm speaks ([`crate::speech::SessionOptions::speaking_rate`]).
    pub fn speaking_rate(mut self, rate: SpeakingRate) -> Self {
        self.speaking_rate = rate;
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
        let with = OpenWith {
            conversation_id: conversation_id.to_string(),
            language: self.language.clone(),
            sample_rate: self.sample_rate,
            speaking_rate: self.speaking_rate,
            cancel: cancel.clone(),
            limit: self.open_timeout,
            cache: self.cache.clone(),
            health: self.health.clone(),
        };
        let Walked { session, arm, rest, handovers } = match first_that_opens(&with, self.arms.iter().cloned().collect()).await {
            Ok(walked) => walked,
            Err(mut handovers) => {
                return Err(match handovers.pop() {
                    Some(last) => (last.from, last.cause),
                    // Before the conversation is tracked only the server's shutdown cancels it.
                    None => (self.arms[0].backend.name().to_string(), SpeechError::new(error_codes::SHUTTING_DOWN, "the server is shutting down", true)),
                });
            }
        };
        let backend = arm.backend.name().to_string();
        let cancel = with.cancel.clone();
        let session = if rest.is_empty() && self.language_route.is_none() && self.reroute.is_none() {
            session
        } else {
            let switcher = Switcher::new(arm, rest, with, self.language_route.clone(), self.reroute.clone());
            crate::session_stack::across_arms(switcher, session, cancel.clone())
        };
        let session = crate::session_stack::lexicon(session, self.lexicon.clone(), self.language.clone(), cancel);
        Ok(Opened { session, backend, handovers })
    }
}
