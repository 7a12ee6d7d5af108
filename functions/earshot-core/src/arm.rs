//! One arm of a conversation: a backend with the voice it would speak in, and how one is opened.
//!
//! Both places that open sessions for a conversation walk the arms the same way, with
//! [`first_that_opens`]: [`crate::failover`] at the start (the arms in order, the first that takes it) and
//! [`crate::switcher`] before the first audio (the next arm after a failure, or the arms routed for the
//! language the first sentence turns out to be in). Opening is bounded in time, goes through the sentence
//! cache where one is on, and tells the arms' remembered health ([`crate::arm_health`]) what happened.
//!
//! The walk: each arm in order; one remembered as sick is passed over and *tried last*, once every arm
//! after it has failed (never passed over when it is the last one left); one that fails hands over to the
//! next. Whatever was passed over or failed is a [`Handover`], in order.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::arm_health::ArmHealth;
use crate::cached_session::CacheUse;
use crate::language::Language;
use crate::speech::{codes, SessionOptions, SpeakingRate, SpeechBackend, SpeechError, SpeechSession};

/// How long an arm may take to open a session, by default: a voice's handshake takes milliseconds, a
/// cold container's first one a second or two.
pub const DEFAULT_OPEN_TIMEOUT: Duration = Duration::from_secs(5);

/// The code of an arm that did not open within its time.
pub const OPEN_TIMEOUT: &str = "backend_open_timeout";

/// One backend in the order, with the voice it speaks this conversation in.
#[derive(Clone)]
pub struct Arm {
    /// The backend that would speak.
    pub backend: Arc<dyn SpeechBackend>,
    /// The voice it would speak in.
    pub voice: String,
}

/// An arm passed over when the conversation opened.
#[derive(Debug, Clone, PartialEq)]
pub struct Handover {
    /// The arm's backend name.
    pub from: String,
    /// Why it was passed over: its failure, or that it was full or remembered as sick.
    pub cause: SpeechError,
}

impl Handover {
    /// The arm was full: the conversation spilled over rather than failed over.
    pub fn is_overflow(&self) -> bool {
        self.cause.code == codes::BUSY
    }
}

/// The arm that opened, its session, and the walk that led there.
pub(crate) struct Walked {
    pub session: SpeechSession,
    pub arm: Arm,
    /// The arms not tried (those passed over as sick at their end): the failover order from here.
    pub rest: VecDeque<Arm>,
    /// The arms before it that could not, in order.
    pub handovers: Vec<Handover>,
}

/// Opens the first of `arms` that takes the conversation (see the module docs). `Err`: every arm was
/// passed over or failed (the last handover is the last arm's answer), or the conversation was
/// cancelled meanwhile (the handovers so far, perhaps none).
pub(crate) async fn first_that_opens(with: &OpenWith, mut arms: VecDeque<Arm>) -> Result<Walked, Vec<Handover>> {
    let mut handovers = Vec::new();
    // Arms passed over as remembered sick, tried last if every other arm fails.
    let mut deferred: VecDeque<Arm> = VecDeque::new();
    let mut must_try = false;
    loop {
        let arm = match arms.pop_front() {
            Some(arm) => arm,
            None if !deferred.is_empty() => {
                // Every arm that was not passed over failed: the ones that were get their chance.
                arms = std::mem::take(&mut deferred);
                must_try = true;
                continue;
            }
            None => return Err(handovers),
        };
        let name = arm.backend.name().to_string();
        if let Some(cause) = with.passed_over(&arm, must_try || (arms.is_empty() && deferred.is_empty())) {
            handovers.push(Handover { from: name, cause });
            deferred.push_back(arm);
            continue;
        }
        let opened = tokio::select! {
            biased;
            _ = with.cancel.cancelled() => return Err(handovers),
            opened = with.open(&arm) => opened,
        };
        match opened {
            Ok(session) => {
                arms.extend(deferred);
                return Ok(Walked { session, arm, rest: arms, handovers });
            }
            Err(cause) => {
                let next = if arms.is_empty() && deferred.is_empty() {
                    "no arm is left"
                } else if cause.code == codes::BUSY {
                    "spilling over"
                } else {
                    "failing over"
                };
                // The upstream's words may carry a URL's key or an account's ARN: redacted, as every log line of them.
                tracing::warn!("{name} cannot take the conversation ({}: {}); {next}", cause.code, crate::redact::redact(&cause.message));
                handovers.push(Handover { from: name, cause });
            }
        }
    }
}

/// Opens `arm` alone, as a conversation's first arm is opened (at its sample and speaking rates, within
/// `limit`, through `cache` where one is given), with no failover, no switcher and no health remembered:
/// what renders a sentence into the cache outside any conversation (the gateway's warm-up).
pub async fn open_alone(
    arm: &Arm,
    conversation_id: &str,
    (sample_rate, speaking_rate): (Option<u32>, SpeakingRate),
    cache: Option<CacheUse>,
    limit: Duration,
    cancel: &CancellationToken,
) -> Result<SpeechSession, SpeechError> {
    let with = OpenWith {
        conversation_id: conversation_id.to_string(),
        language: None,
        sample_rate,
        speaking_rate,
        cancel: cancel.clone(),
        limit,
        cache,
        health: None,
    };
    with.open(arm).await
}

/// What every arm of one conversation is opened with.
pub(crate) struct OpenWith {
    pub conversation_id: String,
    /// The language sessions open in; the switcher changes it when the first sentence settles another.
    pub language: Option<Language>,
    pub sample_rate: Option<u32>,
    pub speaking_rate: SpeakingRate,
    pub cancel: CancellationToken,
    /// How long an arm may take to open.
    pub limit: Duration,
    pub cache: Option<CacheUse>,
    pub health: Option<Arc<ArmHealth>>,
}

impl OpenWith {
    /// Why `arm` is passed over, where it is remembered as sick and need not be tried anyway (`must_try`:
    /// it is the last one left, or every other has failed).
    pub fn passed_over(&self, arm: &Arm, must_try: bool) -> Option<SpeechError> {
        self.health.as_ref().filter(|_| !must_try).and_then(|h| h.passed_over(arm.backend.name()))
    }

    /// Opens `arm`, if it is ready, within its time (past it, what the open started is cancelled), and
    /// remembers how that went.
    pub async fn open(&self, arm: &Arm) -> Result<SpeechSession, SpeechError> {
        let opened = self.open_once(arm).await;
        if let Some(health) = &self.health {
            match &opened {
                Ok(_) => health.opened(arm.backend.name()),
                Err(cause) => health.failed(&arm.backend, cause),
            }
        }
        opened
    }

    /// Remembers that `arm`'s session failed before its first audio.
    pub fn remember_failed(&self, arm: &Arm, cause: &SpeechError) {
        if let Some(health) = &self.health {
            health.failed(&arm.backend, cause);
        }
    }

    async fn open_once(&self, arm: &Arm) -> Result<SpeechSession, SpeechError> {
        arm.backend.readiness()?;
        let session_cancel = self.cancel.child_token();
        let options = SessionOptions {
            voice: arm.voice.clone(),
            language: self.language.clone(),
            sample_rate: self.sample_rate,
            speaking_rate: self.speaking_rate,
            conversation_id: self.conversation_id.clone(),
            cancel: session_cancel.clone(),
        };
        match tokio::time::timeout(self.limit, arm.backend.open(options)).await {
            Ok(Ok(session)) => {
                Ok(crate::session_stack::per_arm(session, arm.backend.clone(), self.language.clone(), self.speaking_rate, self.cache.clone(), session_cancel))
            }
            Ok(Err(e)) => Err(e),
            Err(_) => {
                session_cancel.cancel();
                Err(SpeechError::new(OPEN_TIMEOUT, format!("{} did not open a session within {} ms", arm.backend.name(), self.limit.as_millis()), true))
            }
        }
    }
}
