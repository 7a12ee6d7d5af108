//! At most so many conversations on one backend across the deployment, where the backend itself has a
//! quota the gateway would otherwise meet as throttling mid-answer. Polly's quotas page gives 26 concurrent
//! requests for generative voices, and a conversation holds up to 3 streams (the sentence speaking, the next
//! one opened ahead, one closing), so throttling may start at about 9 conversations: the default cap is 8
//! (`EARSHOT_BACKEND_CONVERSATIONS=polly=8`; raise it with the quota).
//!
//! A conversation takes a place when its session opens and gives it back when the conversation ends (its
//! cancellation token, which fires however it ends). Past the cap the session does not open: the failover
//! takes it as a full arm ([`codes::BUSY`]), so the conversation goes to the next arm (overflow), or the
//! caller is answered `503 backend_busy` with `Retry-After` where there is none, as for a full Kokoro
//! container. The places are counted where the owners' are ([`crate::owner_places::claim`]): in this process
//! under `earshot serve`, in the interrupt table across every Lambda instance.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use earshot_core::language::Language;
use earshot_core::speech::{codes, SessionOptions, SpeechBackend, SpeechError, SpeechSession, Voice};

use crate::interrupts::Interrupts;
use crate::owner_places::LocalPlaces;

/// Where the places are counted, and how long one lasts at most (a process that died holding one).
#[derive(Clone)]
pub struct Places {
    /// The shared store the places are counted in, where there is one.
    pub interrupts: Interrupts,
    /// The places counted in this process, where there is no shared store.
    pub local: Arc<LocalPlaces>,
    /// How long a place lasts at most, so that one held by a process that died lapses.
    pub ttl: Duration,
}

impl Places {
    /// Counted in the shared store where `interrupts` has one, else in this process.
    pub fn new(interrupts: Interrupts, ttl: Duration) -> Self {
        Places { interrupts, local: Arc::default(), ttl }
    }
}

/// `inner`, holding at most `max` conversations at once across the deployment.
pub struct CappedBackend {
    inner: Arc<dyn SpeechBackend>,
    max: usize,
    places: Places,
}

impl CappedBackend {
    /// `inner`, capped at `max` conversations at once, counted in `places`.
    pub fn new(inner: Arc<dyn SpeechBackend>, max: usize, places: Places) -> Self {
        CappedBackend { inner, max, places }
    }

    /// The key of the backend's places in the shared store.
    fn shared_key(&self) -> String {
        format!("backend-{}", self.inner.name())
    }
}

#[async_trait]
impl SpeechBackend for CappedBackend {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn voices(&self) -> Vec<Voice> {
        self.inner.voices()
    }

    fn default_voice(&self) -> String {
        self.inner.default_voice()
    }

    fn blends_voices(&self) -> bool {
        self.inner.blends_voices()
    }

    async fn open(&self, options: SessionOptions) -> Result<SpeechSession, SpeechError> {
        let Places { interrupts, local, ttl } = &self.places;
        // A shared place is given back by a task of the conversation's own tracker.
        let tasks = earshot_core::tasks::current();
        let token = uuid::Uuid::new_v4().to_string();
        let local_key = format!("backend:{}", self.inner.name());
        let Some(place) = crate::owner_places::claim(&local_key, self.shared_key(), &token, self.max, interrupts, local, &tasks, *ttl).await? else {
            let message = format!(
                "{} holds the {} conversations this deployment lets it hold at once (its service's concurrency quota); retry shortly",
                self.inner.name(),
                self.max
            );
            return Err(SpeechError::new(codes::BUSY, message, true));
        };
        let ended = options.cancel.clone();
        let session = self.inner.open(options).await?;
        // Given back when the conversation ends, however it ends.
        earshot_core::tasks::spawn(async move {
            ended.cancelled().await;
            drop(place);
        });
        Ok(session)
    }

    async fn health(&self) -> Result<(), SpeechError> {
        self.inner.health().await
    }

    fn languages(&self) -> Vec<(Language, String)> {
        self.inner.languages()
    }

    fn voice_for_language(&self, language: &Language) -> Option<String> {
        self.inner.voice_for_language(language)
    }

    fn voice_speaks(&self, voice: &str, language: &Language) -> bool {
        self.inner.voice_speaks(voice, language)
    }

    fn reading_language(&self, voice: &str, session: Option<&Language>, sentence: Option<&Language>, text: &str) -> Option<Language> {
        self.inner.reading_language(voice, session, sentence, text)
    }

    fn readiness(&self) -> Result<(), SpeechError> {
        self.inner.readiness()
    }
}
