//! Failover as a backend: several backends in order, opened as one session.
//!
//! The scheduler speaks to one [`SpeechSession`] and knows nothing of arms. Everything about handing a
//! conversation from one backend to another lives here, in one place:
//!
//! - **Opening** ([`Failover::open_arms`]): the arms are tried in order. One that is still starting
//!   (`readiness`) or fails to open hands over to the next (a *failover*); one that is full
//!   ([`codes::BUSY`]) spills over to it (an *overflow*). What was passed over, and why, comes back
//!   with the session ([`Opened::handovers`]), since no stream exists yet to announce it on. With
//!   every arm refused, the last one's error is the answer.
//! - **Before the first audio** (a relay task between the scheduler and the live session): a session
//!   that fails, or vanishes, before any of its audio has been passed on is replaced by the next arm
//!   that opens. Every sentence sent and not finished is sent again to the new session, in order (and
//!   `Finish`, if it had been said), and the switch is announced as [`SpeechEvent::Switched`] before
//!   any of the new session's audio, so the scheduler tells the client which backend now speaks. Once
//!   audio has been heard a failure is the conversation's, as a voice that changes mid-answer would be
//!   worse than an error.
//!
//! Opening an arm is bounded in time ([`Failover::open_timeout`], 5 s by default): a handshake that stalls
//! fails with `backend_open_timeout` and hands over like any other failure to open.
//!
//! With [`Failover::arm_health`], what failed is remembered across conversations
//! ([`crate::arm_health`]): an arm that failed to open, or whose session failed before its first audio,
//! is passed over at once by the next conversations (but never when it is the last arm left) until a
//! background probe finds it healthy again.
//!
//! With one arm there is nothing to fail over to, and [`Failover::open_arms`] hands back that arm's
//! own session: no relay, no extra hop.
//!
//! The relay never waits on one side while the other could be waiting on it: it holds at most one
//! event for the scheduler and the commands not yet taken by the session, and selects on both, so the
//! bounded channels on each side keep their backpressure and no cycle of full channels can form.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::arm_health::ArmHealth;
use crate::cached_session::{self, CacheUse};
use crate::error::codes as error_codes;
use crate::language::Language;
use crate::protocol::BackendReason;
use crate::speech::{codes, SessionOptions, SpeechBackend, SpeechCommand, SpeechError, SpeechEvent, SpeechRequest, SpeechSession, Switch, Voice};

/// The composite session's channels: small, since each side's own channel already buffers.
const RELAY_CHANNEL: usize = 8;

/// How long an arm may take to open a session, by default: a voice's handshake takes milliseconds, a
/// cold container's first one a second or two.
pub const DEFAULT_OPEN_TIMEOUT: Duration = Duration::from_secs(5);

/// The code of an arm that did not open within its time.
pub const OPEN_TIMEOUT: &str = "backend_open_timeout";

/// One backend in the order, with the voice it speaks this conversation in.
#[derive(Clone)]
pub struct Arm {
    pub backend: Arc<dyn SpeechBackend>,
    pub voice: String,
}

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
}

impl Failover {
    /// `arms` in the order they are tried; at least one.
    pub fn new(arms: Vec<Arm>) -> Self {
        assert!(!arms.is_empty(), "a failover needs at least one arm");
        Failover { arms, open_timeout: DEFAULT_OPEN_TIMEOUT, language: None, sample_rate: None, cache: None, health: None }
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

    /// The language every arm's session is opened in ([`SessionOptions::language`]).
    pub fn language(mut self, language: Option<Language>) -> Self {
        self.language = language;
        self
    }

    /// The rate the client plays, which an arm produces natively where it can
    /// ([`SessionOptions::sample_rate`]); `None`: each arm's own.
    pub fn sample_rate(mut self, rate: Option<u32>) -> Self {
        self.sample_rate = rate;
        self
    }

    /// The sentence cache every arm's session speaks through ([`crate::cached_session`]); `None`: none.
    pub fn cache(mut self, cache: Option<CacheUse>) -> Self {
        self.cache = cache;
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
            if let Some(cause) = with.health.as_ref().filter(|_| passing_over && !rest.is_empty()).and_then(|h| h.passed_over(&name)) {
                handovers.push(Handover { from: name, cause });
                deferred.push_back(arm);
                continue;
            }
            let opened = open_arm(&arm, &with).await;
            match &opened {
                Ok(_) => with.remember_opened(&name),
                Err(cause) => with.remember_failed(&arm, cause),
            }
            match opened {
                Ok(session) if rest.is_empty() => return Ok(Opened { session, backend: name, handovers }),
                Ok(session) => {
                    let (commands, from_scheduler) = mpsc::channel(RELAY_CHANNEL);
                    let (to_scheduler, events) = mpsc::channel(RELAY_CHANNEL);
                    let (format, voice) = (session.format.clone(), session.voice.clone());
                    let relay = Relay { current: session, current_arm: arm, rest, with, unfinished: VecDeque::new(), finishing: false, heard: false };
                    tokio::spawn(relay.run(from_scheduler, to_scheduler));
                    return Ok(Opened { session: SpeechSession { commands, events, format, voice }, backend: name, handovers });
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
                        cause.message,
                        if cause.code == codes::BUSY { "spilling over" } else { "failing over" }
                    );
                    handovers.push(Handover { from: name, cause });
                }
            }
        }
        unreachable!("the loop returns on its last arm")
    }
}

/// What every arm of one conversation is opened with.
struct OpenWith {
    conversation_id: String,
    language: Option<Language>,
    sample_rate: Option<u32>,
    cancel: CancellationToken,
    /// How long an arm may take to open.
    limit: Duration,
    cache: Option<CacheUse>,
    health: Option<Arc<ArmHealth>>,
}

impl OpenWith {
    fn remember_opened(&self, name: &str) {
        if let Some(health) = &self.health {
            health.opened(name);
        }
    }

    fn remember_failed(&self, arm: &Arm, cause: &SpeechError) {
        if let Some(health) = &self.health {
            health.failed(&arm.backend, cause);
        }
    }
}

/// Opens one arm, if it is ready, within its time (past it, what the open started is cancelled).
async fn open_arm(arm: &Arm, with: &OpenWith) -> Result<SpeechSession, SpeechError> {
    arm.backend.readiness()?;
    let session_cancel = with.cancel.child_token();
    let options = SessionOptions {
        voice: arm.voice.clone(),
        language: with.language.clone(),
        sample_rate: with.sample_rate,
        conversation_id: with.conversation_id.clone(),
        cancel: session_cancel.clone(),
    };
    let limit = with.limit;
    match tokio::time::timeout(limit, arm.backend.open(options)).await {
        Ok(Ok(session)) => Ok(match &with.cache {
            Some(cache) => cached_session::wrap(session, arm.backend.clone(), with.language.clone(), cache.clone(), session_cancel),
            None => session,
        }),
        Ok(Err(e)) => Err(e),
        Err(_) => {
            session_cancel.cancel();
            Err(SpeechError::new(OPEN_TIMEOUT, format!("{} did not open a session within {} ms", arm.backend.name(), limit.as_millis()), true))
        }
    }
}

/// Failover is a backend like any other: named after its first arm, with that arm's voices; the voice
/// a session is opened with is the first arm's (the others keep theirs).
#[async_trait]
impl SpeechBackend for Failover {
    fn name(&self) -> &str {
        self.arms[0].backend.name()
    }

    fn voices(&self) -> Vec<Voice> {
        self.arms[0].backend.voices()
    }

    fn default_voice(&self) -> String {
        self.arms[0].voice.clone()
    }

    fn languages(&self) -> Vec<(Language, String)> {
        self.arms[0].backend.languages()
    }

    fn voice_speaks(&self, voice: &str, language: &Language) -> bool {
        self.arms[0].backend.voice_speaks(voice, language)
    }

    fn reading_language(&self, voice: &str, session: Option<&Language>, sentence: Option<&Language>, text: &str) -> Option<Language> {
        self.arms[0].backend.reading_language(voice, session, sentence, text)
    }

    async fn open(&self, options: SessionOptions) -> Result<SpeechSession, SpeechError> {
        let mut arms = self.arms.clone();
        arms[0].voice = options.voice;
        Failover {
            arms,
            open_timeout: self.open_timeout,
            language: options.language,
            sample_rate: options.sample_rate,
            cache: self.cache.clone(),
            health: self.health.clone(),
        }
        .open_arms(&options.conversation_id, &options.cancel)
        .await
        .map(|o| o.session)
        .map_err(|(_, e)| e)
    }

    /// Healthy while any arm answers.
    async fn health(&self) -> Result<(), SpeechError> {
        let mut last = None;
        for arm in &self.arms {
            match arm.backend.health().await {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("at least one arm"))
    }

    /// Ready while any arm is.
    fn readiness(&self) -> Result<(), SpeechError> {
        let mut last = None;
        for arm in &self.arms {
            match arm.backend.readiness() {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("at least one arm"))
    }
}

/// Sits between the scheduler and the live session until the first audio; see the module docs.
struct Relay {
    current: SpeechSession,
    /// The arm whose session `current` is.
    current_arm: Arm,
    /// Arms not yet tried.
    rest: VecDeque<Arm>,
    with: OpenWith,
    /// Sentences sent and not finished: what a new session must speak again.
    unfinished: VecDeque<SpeechRequest>,
    /// The scheduler has said `Finish`.
    finishing: bool,
    /// Audio has been passed on: no more failover.
    heard: bool,
}

impl Relay {
    async fn run(mut self, mut from_scheduler: mpsc::Receiver<SpeechCommand>, to_scheduler: mpsc::Sender<SpeechEvent>) {
        let mut to_session: VecDeque<SpeechCommand> = VecDeque::new();
        let mut to_send: Option<SpeechEvent> = None;
        let mut failure: Option<SpeechError> = None;
        loop {
            tokio::select! {
                biased;
                _ = self.with.cancel.cancelled() => return,
                // The scheduler has ended: whatever the session is doing, let it go.
                _ = to_scheduler.closed() => return,
                permit = to_scheduler.reserve(), if to_send.is_some() => {
                    let Ok(permit) = permit else { return };
                    let event = to_send.take().expect("an event to send");
                    let closed = matches!(event, SpeechEvent::Closed { .. });
                    permit.send(event);
                    if closed {
                        return;
                    }
                }
                permit = self.current.commands.reserve(), if !to_session.is_empty() => {
                    // A session that is gone says so on its event channel; its commands are dropped.
                    if let Ok(permit) = permit {
                        permit.send(to_session.pop_front().expect("a command to send"));
                    } else {
                        to_session.clear();
                    }
                }
                command = from_scheduler.recv(), if to_session.is_empty() => {
                    // The scheduler let go: dropping the session cancels it.
                    let Some(command) = command else { return };
                    match &command {
                        SpeechCommand::Speak(request) => self.unfinished.push_back(request.clone()),
                        SpeechCommand::Finish => self.finishing = true,
                    }
                    to_session.push_back(command);
                }
                event = self.current.events.recv(), if to_send.is_none() => {
                    let cause = match event {
                        Some(SpeechEvent::Failed(e)) if !self.heard && !self.rest.is_empty() => e,
                        None if !self.heard && !self.rest.is_empty() => SpeechError::new(error_codes::BACKEND_GONE, "the speech session ended unexpectedly", true),
                        // Dropping the scheduler's event channel tells it the session is gone.
                        None => return,
                        Some(event) => {
                            match &event {
                                SpeechEvent::Audio { .. } => self.heard = true,
                                SpeechEvent::Finished { index, .. } => self.unfinished.retain(|r| r.index != *index),
                                _ => {}
                            }
                            to_send = Some(event);
                            continue;
                        }
                    };
                    failure = Some(cause);
                }
            }
            // Outside the select: its branches borrow the relay.
            if let Some(cause) = failure.take() {
                self.with.remember_failed(&self.current_arm, &cause);
                let Some(switch) = self.hand_over(&cause).await else {
                    // Cancelled while opening, or no arm left that opens: the first failure is the answer.
                    if !self.with.cancel.is_cancelled() {
                        let _ = to_scheduler.send(SpeechEvent::Failed(cause)).await;
                    }
                    return;
                };
                to_session = self.unfinished.iter().cloned().map(SpeechCommand::Speak).collect();
                if self.finishing {
                    to_session.push_back(SpeechCommand::Finish);
                }
                to_send = Some(SpeechEvent::Switched(switch));
            }
        }
    }

    /// Opens the next arm that takes the conversation, in place of the current session.
    async fn hand_over(&mut self, cause: &SpeechError) -> Option<Switch> {
        while let Some(arm) = self.rest.pop_front() {
            if !self.rest.is_empty() && self.with.health.as_ref().is_some_and(|h| h.passed_over(arm.backend.name()).is_some()) {
                continue;
            }
            let opened = tokio::select! {
                biased;
                _ = self.with.cancel.cancelled() => return None,
                opened = open_arm(&arm, &self.with) => opened,
            };
            match &opened {
                Ok(_) => self.with.remember_opened(arm.backend.name()),
                Err(e) => self.with.remember_failed(&arm, e),
            }
            match opened {
                Ok(session) => {
                    tracing::warn!("{}: {}; continuing on {}", cause.code, crate::redact::redact(&cause.message), arm.backend.name());
                    let switch = Switch {
                        backend: arm.backend.name().to_string(),
                        voice: session.voice.clone(),
                        format: session.format.clone(),
                        cause: cause.clone(),
                        reason: Some(BackendReason::Failover),
                        language: None,
                    };
                    // The old session is dropped here, which cancels it.
                    self.current = session;
                    self.current_arm = arm;
                    return Some(switch);
                }
                Err(e) => tracing::warn!("{} cannot take over ({}: {})", arm.backend.name(), e.code, crate::redact::redact(&e.message)),
            }
        }
        None
    }
}
