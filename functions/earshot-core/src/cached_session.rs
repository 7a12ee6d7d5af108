//! A backend session with the sentence cache in front ([`crate::cache`]): a sentence said before is
//! answered from memory, at once, and the rest go to the backend, whose whole sentences are kept.
//!
//! ```text
//! scheduler ─Speak─▶ relay ─(misses)─▶ backend session
//!          ◀─audio── relay ◀─────────── (audio, kept when whole)
//!                     └─ hits: the kept chunks, in their turn
//! ```
//!
//! The order the scheduler sent is the order the client hears: a hit behind a sentence the backend is
//! still speaking waits for that sentence's `Finished`, then plays at once. A hit's `Finished` says
//! `cached`, so the timeline tells a hit from the model's first audio.
//!
//! The relay wraps each backend's own session, inside failover ([`crate::failover`]): a hit is that
//! backend's audio, so once it has played the conversation keeps its voice, as with any audio.
//!
//! Like failover's relay, it never waits on one side while the other could be waiting on it: events for
//! the scheduler queue in the relay (at most one sentence's kept chunks beyond one backend event, as the
//! backend is not read while any wait) and commands for the backend are taken only once the previous one
//! is, so the bounded channels on both sides keep their backpressure.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::cache::{format_key, CacheKey, CachedSentence, Partition, SentenceCache};
use crate::language::Language;
use crate::speech::{FinishReport, SpeechBackend, SpeechCommand, SpeechEvent, SpeechRequest, SpeechSession};

/// The relay's channels: small, as the session's own channels already buffer.
const CACHE_CHANNEL: usize = 8;

/// A conversation's use of the store: which store, and which part of it.
#[derive(Clone)]
pub struct CacheUse {
    pub cache: Arc<SentenceCache>,
    pub partition: Partition,
}

/// What every key of one session shares: the session's backend, voice, language told and format.
struct SessionKey {
    backend: Arc<dyn SpeechBackend>,
    voice: String,
    language: Option<Language>,
    format: String,
}

impl SessionKey {
    /// The key of `request` spoken in this session: the language is the one the backend reads the
    /// sentence in (a request told its language is read in it), so that a sentence read the same way is
    /// found whether or not the language was told.
    fn for_request(&self, partition: &Partition, request: &SpeechRequest) -> CacheKey {
        let told = request.language.as_ref().or(self.language.as_ref());
        CacheKey {
            partition: partition.clone(),
            backend: self.backend.name().to_string(),
            voice: self.voice.clone(),
            language: self.backend.reading_language(&self.voice, told, &request.text).map(|l| l.to_string()),
            format: self.format.clone(),
            text: request.text.clone(),
        }
    }
}

/// Puts the cache in front of `session`, opened on `backend` in `language`; see the module docs.
pub fn wrap(session: SpeechSession, backend: Arc<dyn SpeechBackend>, language: Option<Language>, cache: CacheUse, cancel: CancellationToken) -> SpeechSession {
    let (commands, from_scheduler) = mpsc::channel(CACHE_CHANNEL);
    let (to_scheduler, events) = mpsc::channel(CACHE_CHANNEL);
    let (format, voice) = (session.format.clone(), session.voice.clone());
    let key = SessionKey { backend, voice: voice.clone(), language, format: format_key(&format) };
    let relay = Relay { inner: session, key, cache, pending: VecDeque::new(), outbox: VecDeque::new(), to_inner: VecDeque::new() };
    tokio::spawn(relay.run(from_scheduler, to_scheduler, cancel));
    SpeechSession { commands, events, format, voice }
}

/// A sentence sent and not yet finished for the scheduler.
enum Pending {
    /// Said before: its kept audio plays when its turn comes.
    Hit { index: u32, sentence: Arc<CachedSentence> },
    /// At the backend; its audio is kept as it comes, where the sentence may be cached.
    Miss { index: u32, key: Option<CacheKey>, chunks: Vec<Bytes>, bytes: usize },
}

/// What a turn of the relay's loop took in.
enum Step {
    None,
    Command(SpeechCommand),
    Event(SpeechEvent),
}

struct Relay {
    inner: SpeechSession,
    key: SessionKey,
    cache: CacheUse,
    /// Sentences in the scheduler's order, not yet finished for it.
    pending: VecDeque<Pending>,
    /// Events for the scheduler, in order.
    outbox: VecDeque<SpeechEvent>,
    /// Commands for the backend not yet taken.
    to_inner: VecDeque<SpeechCommand>,
}

impl Relay {
    async fn run(mut self, mut from_scheduler: mpsc::Receiver<SpeechCommand>, to_scheduler: mpsc::Sender<SpeechEvent>, cancel: CancellationToken) {
        // The backend's events have ended: what is queued is passed on, then the relay ends.
        let mut inner_ended = false;
        let mut step = Step::None;
        loop {
            if inner_ended && self.outbox.is_empty() {
                return;
            }
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return,
                // The scheduler has ended: whatever the session is doing, let it go.
                _ = to_scheduler.closed() => return,
                permit = to_scheduler.reserve(), if !self.outbox.is_empty() => {
                    let Ok(permit) = permit else { return };
                    let event = self.outbox.pop_front().expect("an event to send");
                    let closed = matches!(event, SpeechEvent::Closed { .. });
                    permit.send(event);
                    if closed {
                        return;
                    }
                }
                permit = self.inner.commands.reserve(), if !self.to_inner.is_empty() => {
                    // A session that is gone says so on its event channel; its commands are dropped.
                    match permit {
                        Ok(permit) => permit.send(self.to_inner.pop_front().expect("a command to send")),
                        Err(_) => self.to_inner.clear(),
                    }
                }
                command = from_scheduler.recv(), if self.to_inner.is_empty() => match command {
                    Some(command) => step = Step::Command(command),
                    // The scheduler let go: dropping the backend's session cancels it.
                    None => return,
                },
                event = self.inner.events.recv(), if self.outbox.is_empty() && !inner_ended => match event {
                    Some(event) => step = Step::Event(event),
                    None => inner_ended = true,
                },
            }
            // Outside the select: its branches borrow the relay's channels.
            match std::mem::replace(&mut step, Step::None) {
                Step::Command(command) => self.take(command),
                Step::Event(event) => self.backend_said(event),
                Step::None => {}
            }
        }
    }

    /// A command from the scheduler: a sentence heard before is answered here, the rest go on.
    fn take(&mut self, command: SpeechCommand) {
        let SpeechCommand::Speak(request) = command else {
            self.to_inner.push_back(command);
            return;
        };
        let key = self.cache.cache.admits(&request.text).then(|| self.key.for_request(&self.cache.partition, &request));
        match key.as_ref().and_then(|k| self.cache.cache.get(k)) {
            Some(sentence) => self.pending.push_back(Pending::Hit { index: request.index, sentence }),
            None => {
                self.pending.push_back(Pending::Miss { index: request.index, key, chunks: Vec::new(), bytes: 0 });
                self.to_inner.push_back(SpeechCommand::Speak(request));
            }
        }
        self.play_hits();
    }

    /// An event from the backend: passed on, its audio kept for the sentence it belongs to.
    fn backend_said(&mut self, event: SpeechEvent) {
        match &event {
            SpeechEvent::Audio { index, pcm } => {
                let limit = self.cache.cache.limits().max_bytes;
                if let Some(Pending::Miss { index: head, key, chunks, bytes }) = self.pending.front_mut() {
                    if head == index && key.is_some() {
                        *bytes += pcm.len();
                        chunks.push(pcm.clone());
                        if *bytes > limit {
                            // Larger than the whole store: not kept.
                            *key = None;
                            chunks.clear();
                        }
                    }
                }
                self.outbox.push_back(event);
            }
            SpeechEvent::Finished { index, .. } => {
                if matches!(self.pending.front(), Some(Pending::Miss { index: head, .. }) if head == index) {
                    if let Some(Pending::Miss { key: Some(key), chunks, .. }) = self.pending.pop_front() {
                        if !chunks.is_empty() {
                            self.cache.cache.put(key, CachedSentence { chunks });
                        }
                    }
                }
                self.outbox.push_back(event);
                self.play_hits();
            }
            SpeechEvent::Failed(_) => {
                // The session is over: sentences after the failure are not played, kept or not.
                self.pending.clear();
                self.outbox.push_back(event);
            }
            SpeechEvent::Closed { .. } | SpeechEvent::Switched(_) => self.outbox.push_back(event),
        }
    }

    /// Plays every hit now at the head of the order.
    fn play_hits(&mut self) {
        while let Some(Pending::Hit { .. }) = self.pending.front() {
            let Some(Pending::Hit { index, sentence }) = self.pending.pop_front() else { unreachable!("a hit is at the head") };
            for pcm in &sentence.chunks {
                self.outbox.push_back(SpeechEvent::Audio { index, pcm: pcm.clone() });
            }
            self.outbox.push_back(SpeechEvent::Finished { index, report: FinishReport { cached: true, ..Default::default() } });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::CacheLimits;
    use crate::protocol::AudioFormat;
    use crate::speech::{SessionOptions, SpeechError, Voice};
    use std::sync::Mutex;

    /// A backend known by its name and its one voice, American English (the relay only asks it how it
    /// reads a sentence).
    struct Named;

    #[async_trait::async_trait]
    impl SpeechBackend for Named {
        fn name(&self) -> &str {
            "kokoro"
        }
        fn voices(&self) -> Vec<Voice> {
            vec![Voice { id: "af_heart".into(), language: "en-US".into(), description: String::new() }]
        }
        fn default_voice(&self) -> String {
            "af_heart".into()
        }
        async fn open(&self, _: SessionOptions) -> Result<SpeechSession, SpeechError> {
            Err(SpeechError::new("unused", "the relay opens nothing", false))
        }
        async fn health(&self) -> Result<(), SpeechError> {
            Ok(())
        }
    }

    fn kokoro() -> Arc<dyn SpeechBackend> {
        Arc::new(Named)
    }

    /// A backend session that speaks each sentence as two chunks made from its text, and notes what it
    /// was asked to speak. `hold` sentences are never finished (a model still at work).
    fn backend(heard: Arc<Mutex<Vec<String>>>, hold: &'static str) -> SpeechSession {
        let (commands, mut from_relay) = mpsc::channel::<SpeechCommand>(8);
        let (to_relay, events) = mpsc::channel(8);
        tokio::spawn(async move {
            while let Some(command) = from_relay.recv().await {
                match command {
                    SpeechCommand::Speak(request) => {
                        heard.lock().unwrap().push(request.text.clone());
                        for half in [&request.text[..1], &request.text[1..]] {
                            let _ = to_relay.send(SpeechEvent::Audio { index: request.index, pcm: Bytes::from(half.as_bytes().to_vec()) }).await;
                        }
                        if request.text == hold {
                            std::future::pending::<()>().await;
                        }
                        let _ = to_relay.send(SpeechEvent::Finished { index: request.index, report: FinishReport::default() }).await;
                    }
                    SpeechCommand::Finish => {
                        let _ = to_relay.send(SpeechEvent::Closed { billed_characters: None }).await;
                    }
                }
            }
        });
        SpeechSession { commands, events, format: AudioFormat::pcm_s16le(24000), voice: "af_heart".into() }
    }

    /// Speaks `sentences` through a cached session; the events the scheduler would see, and what the
    /// backend was asked to speak.
    async fn speak(cache: &CacheUse, sentences: &[&str]) -> (Vec<SpeechEvent>, Vec<String>) {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let mut session = wrap(backend(heard.clone(), ""), kokoro(), None, cache.clone(), CancellationToken::new());
        for (index, text) in sentences.iter().enumerate() {
            let request = SpeechRequest { index: index as u32, text: text.to_string(), language: None };
            session.commands.send(SpeechCommand::Speak(request)).await.unwrap();
        }
        session.commands.send(SpeechCommand::Finish).await.unwrap();
        let mut events = Vec::new();
        while let Some(event) = session.events.recv().await {
            let closed = matches!(event, SpeechEvent::Closed { .. });
            events.push(event);
            if closed {
                break;
            }
        }
        let heard = heard.lock().unwrap().clone();
        (events, heard)
    }

    fn store(partition: Option<&str>, cache: &Arc<SentenceCache>) -> CacheUse {
        CacheUse { cache: cache.clone(), partition: partition.map(str::to_string) }
    }

    /// Each event as a short word: `0:Su`, `0:end`, `0:end(cached)`, `closed`.
    fn told(events: &[SpeechEvent]) -> Vec<String> {
        events
            .iter()
            .map(|e| match e {
                SpeechEvent::Audio { index, pcm } => format!("{index}:{}", String::from_utf8_lossy(pcm)),
                SpeechEvent::Finished { index, report } => format!("{index}:end{}", if report.cached { "(cached)" } else { "" }),
                SpeechEvent::Closed { .. } => "closed".into(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[tokio::test]
    async fn a_sentence_said_before_is_the_same_chunks_without_the_backend_in_the_order_sent() {
        let cache = Arc::new(SentenceCache::new(CacheLimits::default()));
        let (first, asked) = speak(&store(None, &cache), &["Sure.", "One moment."]).await;
        assert_eq!(asked, ["Sure.", "One moment."]);
        let (second, asked) = speak(&store(None, &cache), &["Let me see.", "Sure.", "Done."]).await;
        assert_eq!(asked, ["Let me see.", "Done."], "the sentence said before never reaches the backend");
        assert_eq!(told(&second), ["0:L", "0:et me see.", "0:end", "1:S", "1:ure.", "1:end(cached)", "2:D", "2:one.", "2:end", "closed"]);
        assert_eq!(told(&first)[..3], ["0:S", "0:ure.", "0:end"], "the same chunks as when it was synthesized");
        assert_eq!(cache.stats().hits, 1);
    }

    #[tokio::test]
    async fn another_owner_s_partition_hears_nothing_of_this_one() {
        let cache = Arc::new(SentenceCache::new(CacheLimits::default()));
        speak(&store(Some("owner-a"), &cache), &["Sure."]).await;
        let (_, asked) = speak(&store(Some("owner-b"), &cache), &["Sure."]).await;
        assert_eq!(asked, ["Sure."], "owner b's sentence is synthesized anew");
        let (events, asked) = speak(&store(Some("owner-a"), &cache), &["Sure."]).await;
        assert!(asked.is_empty() && told(&events).contains(&"0:end(cached)".to_string()));
    }

    #[tokio::test]
    async fn a_sentence_cut_before_its_end_is_not_kept() {
        let cache = Arc::new(SentenceCache::new(CacheLimits::default()));
        let heard = Arc::new(Mutex::new(Vec::new()));
        let cancel = CancellationToken::new();
        let mut session = wrap(backend(heard, "Held."), kokoro(), None, store(None, &cache), cancel.clone());
        session.commands.send(SpeechCommand::Speak(SpeechRequest { index: 0, text: "Held.".into(), language: None })).await.unwrap();
        for _ in 0..2 {
            assert!(matches!(session.events.recv().await, Some(SpeechEvent::Audio { .. })));
        }
        cancel.cancel();
        assert!(session.events.recv().await.is_none(), "the relay ends with its token");
        assert_eq!(cache.stats().entries, 0, "half a sentence is never kept");
    }

    #[tokio::test]
    async fn a_language_told_with_the_sentence_is_part_of_its_key() {
        let cache = Arc::new(SentenceCache::new(CacheLimits::default()));
        speak(&store(None, &cache), &["Paris."]).await;
        let heard = Arc::new(Mutex::new(Vec::new()));
        let mut session = wrap(backend(heard.clone(), ""), kokoro(), None, store(None, &cache), CancellationToken::new());
        let french = SpeechRequest { index: 0, text: "Paris.".into(), language: Language::parse("fr").ok() };
        session.commands.send(SpeechCommand::Speak(french)).await.unwrap();
        session.commands.send(SpeechCommand::Finish).await.unwrap();
        while let Some(event) = session.events.recv().await {
            if matches!(event, SpeechEvent::Closed { .. }) {
                break;
            }
        }
        assert_eq!(*heard.lock().unwrap(), ["Paris."], "read as French, it is another sound");
        let english = SpeechRequest { index: 0, text: "Paris.".into(), language: Language::parse("en").ok() };
        let mut session = wrap(backend(heard.clone(), ""), kokoro(), None, store(None, &cache), CancellationToken::new());
        session.commands.send(SpeechCommand::Speak(english)).await.unwrap();
        session.commands.send(SpeechCommand::Finish).await.unwrap();
        let mut events = Vec::new();
        while let Some(event) = session.events.recv().await {
            events.push(event);
        }
        assert_eq!(told(&events), ["0:P", "0:aris.", "0:end(cached)", "closed"], "told English, an English voice reads it as untold");
    }
}
