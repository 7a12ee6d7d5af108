//! One arm of a conversation: a backend with the voice it would speak in, and how one is opened.
//!
//! Both places that open sessions for a conversation use this: [`crate::failover`] at the start (the
//! arms in order, the first that takes it) and [`crate::switcher`] before the first audio (the next arm
//! after a failure, or the arms routed for the language the first sentence turns out to be in). Opening
//! is bounded in time, goes through the sentence cache where one is on, and tells the arms' remembered
//! health ([`crate::arm_health`]) what happened.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::arm_health::ArmHealth;
use crate::cached_session::{self, CacheUse};
use crate::language::Language;
use crate::speech::{SessionOptions, SpeechBackend, SpeechError, SpeechSession};

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

/// What every arm of one conversation is opened with.
pub(crate) struct OpenWith {
    pub conversation_id: String,
    /// The language sessions open in; the switcher changes it when the first sentence settles another.
    pub language: Option<Language>,
    pub sample_rate: Option<u32>,
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
            conversation_id: self.conversation_id.clone(),
            cancel: session_cancel.clone(),
        };
        match tokio::time::timeout(self.limit, arm.backend.open(options)).await {
            Ok(Ok(session)) => Ok(match &self.cache {
                Some(cache) => cached_session::wrap(session, arm.backend.clone(), self.language.clone(), cache.clone(), session_cancel),
                None => session,
            }),
            Ok(Err(e)) => Err(e),
            Err(_) => {
                session_cancel.cancel();
                Err(SpeechError::new(OPEN_TIMEOUT, format!("{} did not open a session within {} ms", arm.backend.name(), self.limit.as_millis()), true))
            }
        }
    }
}
