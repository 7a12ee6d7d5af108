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
//! Where the deployment has a shared tier for this backend ([`SharedUse`]: an S3 prefix for the Polly arm),
//! a sentence not in memory is looked for there first, within [`SharedUse::fetch_limit`], and the
//! sentences after it wait for the answer before they go to the backend, so that the backend still
//! speaks in the scheduler's order. A sentence the backend speaks whole is stored there too, in the
//! background.
//!
//! The layer wraps each backend's own session, inside the switcher ([`crate::switcher`]): a hit is that
//! backend's audio, so once it has played the conversation keeps its voice, as with any audio.
//!
//! It is a layer of the session stack ([`crate::session_stack`]), run by the one relay of
//! [`crate::session_layer`], whose backpressure rule holds here too: events for the scheduler queue in the
//! relay (at most one sentence's kept chunks beyond one backend event, as the backend is not read while
//! any wait) and commands for the backend are taken only once the previous one is.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::cache::{format_key, CacheKey, CachedSentence, Partition, SentenceCache, SharedTier};
use crate::language::Language;
use crate::session_layer::{self, Ctx, SessionLayer};
use crate::speech::{FinishReport, SpeakingRate, SpeechBackend, SpeechCommand, SpeechEvent, SpeechRequest, SpeechSession};

/// A conversation's use of the store: which store, which part of it, and the shared tier.
#[derive(Clone)]
pub struct CacheUse {
    /// The process's store.
    pub cache: Arc<SentenceCache>,
    /// The part this conversation reads and fills.
    pub partition: Partition,
    /// A part this conversation also reads and never fills: the deployment's declared sentences,
    /// rendered by the deployment itself, so a hit there tells a caller nothing of another.
    pub declared: Option<Partition>,
    /// The deployment's shared tier, where it has one.
    pub shared: Option<SharedUse>,
}

impl CacheUse {
    /// A use that reads and fills `partition` alone.
    pub fn only(cache: Arc<SentenceCache>, partition: Partition) -> Self {
        CacheUse { cache, partition, declared: None, shared: None }
    }

    /// Whether a sentence is kept under `key` in this conversation's part or the declared part (nothing
    /// counted: a look before the sentence is asked for).
    fn holds(&self, key: &CacheKey) -> bool {
        self.cache.contains(key) || self.declared.as_ref().is_some_and(|declared| self.cache.contains(&CacheKey { partition: declared.clone(), ..key.clone() }))
    }

    /// The sentence kept under `key` in this conversation's part, else in the declared part (one hit or
    /// one miss counted either way).
    fn find(&self, key: &CacheKey) -> Option<Arc<CachedSentence>> {
        match &self.declared {
            Some(declared) if !self.cache.contains(key) => self.cache.get(&CacheKey { partition: declared.clone(), ..key.clone() }),
            _ => self.cache.get(key),
        }
    }
}

/// A shared tier and the backends whose sentences go there: those that bill each character, where a
/// fetch spares the bill (a model on the deployment's own instances is as fast as a fetch and costs
/// nothing more).
#[derive(Clone)]
pub struct SharedUse {
    /// The tier every process of the deployment reads and fills.
    pub tier: Arc<dyn SharedTier>,
    /// The names of the backends whose sentences are looked for and stored there.
    pub backends: Vec<String>,
    /// The longest a fetch may take before the backend speaks the sentence instead.
    pub fetch_limit: Duration,
}

/// What every key of one session shares: the session's backend, voice, language told and format.
struct SessionKey {
    backend: Arc<dyn SpeechBackend>,
    voice: String,
    language: Option<Language>,
    rate: SpeakingRate,
    format: String,
}

impl SessionKey {
    /// The key of `request` spoken in this session: the language is the one the backend reads the
    /// sentence in (a request told its language is read in it), so that a sentence read the same way is
    /// found whether or not the language was told.
    fn for_request(&self, partition: &Partition, request: &SpeechRequest) -> CacheKey {
        let reading = self.backend.reading_language(&self.voice, self.language.as_ref(), request.language.as_ref(), &request.text);
        CacheKey {
            partition: partition.clone(),
            backend: self.backend.name().to_string(),
            voice: self.voice.clone(),
            language: reading.map(|l| l.to_string()),
            format: self.format.clone(),
            rate: request.rate.unwrap_or(self.rate).percent(),
            text: request.text.clone(),
        }
    }
}

/// Puts the cache in front of `session`, opened on `backend` in `language`; see the module docs.
pub fn wrap(
    session: SpeechSession,
    backend: Arc<dyn SpeechBackend>,
    language: Option<Language>,
    rate: SpeakingRate,
    cache: CacheUse,
    cancel: CancellationToken,
) -> SpeechSession {
    let shared = cache.shared.clone().filter(|s| s.backends.iter().any(|b| b == backend.name()));
    let key = SessionKey { backend, voice: session.voice.clone(), language, rate, format: format_key(&session.format) };
    let caching = Caching { key, cache, shared, pending: VecDeque::new(), finish_held: false, failed: false };
    session_layer::relay(caching, session, cancel)
}

/// A sentence sent and not yet finished for the scheduler.
enum Pending {
    /// Said before: its kept audio plays when its turn comes.
    Hit { index: u32, sentence: Arc<CachedSentence> },
    /// Looked for in the shared tier; it and the sentences after it wait for the answer.
    Fetching { index: u32, key: CacheKey, request: SpeechRequest },
    /// For the backend (`request` until it is handed over); its audio is kept as it comes, where the
    /// sentence may be cached.
    Miss { index: u32, key: Option<CacheKey>, request: Option<SpeechRequest>, chunks: Vec<Bytes>, bytes: usize },
}

/// A shared tier's answer for the sentence `index`.
type Fetched = (u32, Option<CachedSentence>);

/// Gives the relay the fetch's answer once: what was found, or nothing if the fetch ended any other way (a
/// panic in the tier), so that a sentence never waits for an answer that cannot come.
struct Answer {
    index: u32,
    to_relay: Option<mpsc::UnboundedSender<Fetched>>,
}

impl Answer {
    fn send(mut self, found: Option<CachedSentence>) {
        if let Some(to_relay) = self.to_relay.take() {
            let _ = to_relay.send((self.index, found));
        }
    }
}

impl Drop for Answer {
    fn drop(&mut self) {
        if let Some(to_relay) = self.to_relay.take() {
            let _ = to_relay.send((self.index, None));
        }
    }
}

/// The cache's rule, as a layer around one arm's session.
struct Caching {
    key: SessionKey,
    cache: CacheUse,
    /// The shared tier, where this session's backend uses one.
    shared: Option<SharedUse>,
    /// Sentences in the scheduler's order, not yet finished for it.
    pending: VecDeque<Pending>,
    /// The scheduler said `Finish`; it goes on once every sentence before it has.
    finish_held: bool,
    /// The backend failed: the session is over, and nothing more is answered, from the cache or not.
    failed: bool,
}

#[async_trait]
impl SessionLayer for Caching {
    type Note = Fetched;

    async fn command(&mut self, command: SpeechCommand, ctx: &mut Ctx<Fetched>) {
        self.take(command, ctx);
    }

    async fn event(&mut self, event: SpeechEvent, ctx: &mut Ctx<Fetched>) {
        self.backend_said(event, ctx);
    }

    async fn note(&mut self, (index, found): Fetched, ctx: &mut Ctx<Fetched>) {
        self.fetched(index, found, ctx);
    }
}

impl Caching {
    /// A command from the scheduler: a sentence heard before is answered here, one the shared tier may
    /// hold is looked for there, the rest go on.
    fn take(&mut self, command: SpeechCommand, ctx: &mut Ctx<Fetched>) {
        if self.failed {
            return;
        }
        let request = match command {
            SpeechCommand::Speak(request) => request,
            SpeechCommand::Prepare(request) => {
                // Prepared only where the backend will speak it: not a sentence the cache holds, nor one the
                // shared tier may, nor one behind sentences still to be answered.
                let key = self.cache.cache.admits(&request.text).then(|| self.key.for_request(&self.cache.partition, &request));
                if self.pending.is_empty() && self.shared.is_none() && key.as_ref().is_none_or(|k| !self.cache.holds(k)) {
                    ctx.send_on(SpeechCommand::Prepare(request));
                }
                return;
            }
            SpeechCommand::Finish => {
                self.finish_held = true;
                self.dispatch(ctx);
                return;
            }
        };
        let index = request.index;
        let key = self.cache.cache.admits(&request.text).then(|| self.key.for_request(&self.cache.partition, &request));
        match (key.as_ref().and_then(|k| self.cache.find(k)), key, &self.shared) {
            (Some(sentence), _, _) => self.pending.push_back(Pending::Hit { index, sentence }),
            (None, Some(key), Some(shared)) => {
                let (tier, limit, looked_up) = (shared.tier.clone(), shared.fetch_limit, key.clone());
                let answer = Answer { index, to_relay: Some(ctx.notes()) };
                crate::tasks::spawn(async move {
                    let found = match tokio::time::timeout(limit, tier.get(&looked_up)).await {
                        Ok(Ok(found)) => found,
                        Ok(Err(e)) => {
                            tracing::warn!("the shared sentence cache: {}; the backend speaks the sentence", crate::redact::redact(&e.to_string()));
                            None
                        }
                        Err(_) => None,
                    };
                    answer.send(found);
                });
                self.pending.push_back(Pending::Fetching { index, key, request });
            }
            (None, key, _) => self.pending.push_back(Pending::Miss { index, key, request: Some(request), chunks: Vec::new(), bytes: 0 }),
        }
        self.dispatch(ctx);
        self.play_hits(ctx);
    }

    /// The shared tier's answer for a sentence: a hit plays in its turn (and is kept in memory), a miss
    /// goes to the backend.
    fn fetched(&mut self, index: u32, found: Option<CachedSentence>, ctx: &mut Ctx<Fetched>) {
        let Some(at) = self.pending.iter().position(|p| matches!(p, Pending::Fetching { index: i, .. } if *i == index)) else { return };
        let Pending::Fetching { key, request, .. } =
            std::mem::replace(&mut self.pending[at], Pending::Hit { index, sentence: Arc::new(CachedSentence { chunks: Vec::new() }) })
        else {
            unreachable!("found as fetching")
        };
        self.pending[at] = match found {
            Some(sentence) => {
                self.cache.cache.put(key, sentence.clone());
                Pending::Hit { index, sentence: Arc::new(sentence) }
            }
            None => Pending::Miss { index, key: Some(key), request: Some(request), chunks: Vec::new(), bytes: 0 },
        };
        self.dispatch(ctx);
        self.play_hits(ctx);
    }

    /// Hands the backend every sentence it may speak now: those before the first one still looked for in
    /// the shared tier; then `Finish`, once nothing is left before it.
    fn dispatch(&mut self, ctx: &mut Ctx<Fetched>) {
        for pending in self.pending.iter_mut() {
            match pending {
                Pending::Fetching { .. } => return,
                Pending::Miss { request, .. } => {
                    if let Some(request) = request.take() {
                        ctx.send_on(SpeechCommand::Speak(request));
                    }
                }
                Pending::Hit { .. } => {}
            }
        }
        if std::mem::take(&mut self.finish_held) {
            ctx.send_on(SpeechCommand::Finish);
        }
    }

    /// An event from the backend: passed on, its audio kept for the sentence it belongs to.
    fn backend_said(&mut self, event: SpeechEvent, ctx: &mut Ctx<Fetched>) {
        match &event {
            SpeechEvent::Audio { index, pcm } => {
                let limit = self.cache.cache.limits().max_bytes;
                if let Some(Pending::Miss { index: head, key, chunks, bytes, .. }) = self.pending.front_mut() {
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
                ctx.tell(event);
            }
            SpeechEvent::Finished { index, .. } => {
                if matches!(self.pending.front(), Some(Pending::Miss { index: head, .. }) if head == index) {
                    if let Some(Pending::Miss { key: Some(key), chunks, .. }) = self.pending.pop_front() {
                        if !chunks.is_empty() {
                            self.keep(key, CachedSentence { chunks });
                        }
                    }
                }
                ctx.tell(event);
                self.play_hits(ctx);
            }
            SpeechEvent::Failed(_) => {
                // The session is over: sentences after the failure are not played, kept or not.
                self.pending.clear();
                self.failed = true;
                ctx.tell(event);
            }
            // A hit's words are estimated from its audio by the scheduler: the store keeps audio only.
            SpeechEvent::Words { .. } | SpeechEvent::Closed { .. } | SpeechEvent::Billed { .. } | SpeechEvent::Switched(_) => ctx.tell(event),
        }
    }

    /// Keeps a whole sentence the backend spoke: in memory, and in the shared tier in the background.
    fn keep(&self, key: CacheKey, sentence: CachedSentence) {
        if let Some(shared) = &self.shared {
            let (tier, key, sentence) = (shared.tier.clone(), key.clone(), sentence.clone());
            crate::tasks::spawn(async move {
                if let Err(e) = tier.put(&key, &sentence).await {
                    tracing::warn!("the shared sentence cache: {}; the sentence stays in this process only", crate::redact::redact(&e.to_string()));
                }
            });
        }
        self.cache.cache.put(key, sentence);
    }

    /// Plays every hit now at the head of the order.
    fn play_hits(&mut self, ctx: &mut Ctx<Fetched>) {
        while let Some(Pending::Hit { .. }) = self.pending.front() {
            let Some(Pending::Hit { index, sentence }) = self.pending.pop_front() else { unreachable!("a hit is at the head") };
            for pcm in &sentence.chunks {
                ctx.tell(SpeechEvent::Audio { index, pcm: pcm.clone() });
            }
            ctx.tell(SpeechEvent::Finished { index, report: FinishReport { cached: true, ..Default::default() } });
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
    use std::time::Duration;

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
                    SpeechCommand::Prepare(_) => {}
                }
            }
        });
        SpeechSession { commands, events, format: AudioFormat::pcm_s16le(24000), voice: "af_heart".into() }
    }

    /// Speaks `sentences` through a cached session; the events the scheduler would see, and what the
    /// backend was asked to speak.
    async fn speak(cache: &CacheUse, sentences: &[&str]) -> (Vec<SpeechEvent>, Vec<String>) {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let session = wrap(backend(heard.clone(), ""), kokoro(), None, SpeakingRate::NORMAL, cache.clone(), CancellationToken::new());
        let events = drive(session, sentences).await;
        let heard = heard.lock().unwrap().clone();
        (events, heard)
    }

    /// Sends `sentences` and `Finish` to `session`: every event up to its close.
    async fn drive(mut session: SpeechSession, sentences: &[&str]) -> Vec<SpeechEvent> {
        for (index, text) in sentences.iter().enumerate() {
            let request = SpeechRequest { index: index as u32, text: text.to_string(), language: None, rate: None, silence_ms: 0 };
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
        events
    }

    fn store(partition: Option<&str>, cache: &Arc<SentenceCache>) -> CacheUse {
        CacheUse::only(cache.clone(), partition.map(str::to_string))
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

    /// Speaks `sentences` through the lexicon's layer over a cached session, as the session stack puts them.
    async fn speak_said_by(lexicon: &str, cache: &CacheUse, sentences: &[&str]) -> (Vec<SpeechEvent>, Vec<String>) {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let cached = wrap(backend(heard.clone(), ""), kokoro(), None, SpeakingRate::NORMAL, cache.clone(), CancellationToken::new());
        let lexicon = Arc::new(crate::text::Lexicon::parse(lexicon).unwrap());
        let session = crate::pronouncing::wrap(cached, Some(lexicon), None, CancellationToken::new());
        let events = drive(session, sentences).await;
        let heard = heard.lock().unwrap().clone();
        (events, heard)
    }

    #[tokio::test]
    async fn a_sentence_said_again_under_a_changed_lexicon_entry_is_a_miss_never_the_old_sound() {
        let cache = Arc::new(SentenceCache::new(CacheLimits::default()));
        let said = ["Ask Nguyen."];
        let (_, asked) = speak_said_by("Nguyen = /wˈɪn/\n", &store(None, &cache), &said).await;
        assert_eq!(asked, ["Ask [Nguyen](/wˈɪn/)."]);
        let (events, asked) = speak_said_by("Nguyen = /wˈɪn/\n", &store(None, &cache), &said).await;
        assert!(asked.is_empty() && told(&events).contains(&"0:end(cached)".to_string()), "the same lexicon: a hit");
        // The entry changed (an operator corrected it, or another owner's lexicon says it otherwise).
        let (events, asked) = speak_said_by("Nguyen = /ŋwˈiən/\n", &store(None, &cache), &said).await;
        assert_eq!(asked, ["Ask [Nguyen](/ŋwˈiən/)."], "a changed entry is a miss");
        assert!(!told(&events).contains(&"0:end(cached)".to_string()));
        let (_, asked) = speak_said_by("Nguyen = win\n", &store(None, &cache), &said).await;
        assert_eq!(asked, ["Ask win."], "and so is the same form said by words");
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
    async fn the_declared_part_is_heard_by_every_owner_and_filled_by_none() {
        let cache = Arc::new(SentenceCache::new(CacheLimits::default()));
        // The deployment renders its declared sentence into its own part.
        speak(&store(None, &cache), &["Sure."]).await;
        let owner = |name: &str| CacheUse { declared: Some(None), ..store(Some(name), &cache) };
        for name in ["owner-a", "owner-b"] {
            let (events, asked) = speak(&owner(name), &["Sure.", "Your order has shipped."]).await;
            assert_eq!(asked, ["Your order has shipped."], "{name} hears the declared sentence from the cache");
            assert!(told(&events).contains(&"0:end(cached)".to_string()), "{name}");
        }
        let stats = cache.stats();
        assert_eq!((stats.hits, stats.misses), (2, 3), "a declared hit is one hit, not a miss and a hit");
        let (_, asked) = speak(&owner("owner-c"), &["Your order has shipped."]).await;
        assert_eq!(asked, ["Your order has shipped."], "an owner's own sentence never reaches the declared part");
        let (_, asked) = speak(&store(None, &cache), &["Your order has shipped."]).await;
        assert_eq!(asked, ["Your order has shipped."], "the declared part holds only what the deployment rendered");
    }

    #[tokio::test]
    async fn a_sentence_cut_before_its_end_is_not_kept() {
        let cache = Arc::new(SentenceCache::new(CacheLimits::default()));
        let heard = Arc::new(Mutex::new(Vec::new()));
        let cancel = CancellationToken::new();
        let mut session = wrap(backend(heard, "Held."), kokoro(), None, SpeakingRate::NORMAL, store(None, &cache), cancel.clone());
        session.commands.send(SpeechCommand::Speak(SpeechRequest { index: 0, text: "Held.".into(), language: None, rate: None, silence_ms: 0 })).await.unwrap();
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
        let mut session = wrap(backend(heard.clone(), ""), kokoro(), None, SpeakingRate::NORMAL, store(None, &cache), CancellationToken::new());
        let french = SpeechRequest { index: 0, text: "Paris.".into(), language: Language::parse("fr").ok(), rate: None, silence_ms: 0 };
        session.commands.send(SpeechCommand::Speak(french)).await.unwrap();
        session.commands.send(SpeechCommand::Finish).await.unwrap();
        while let Some(event) = session.events.recv().await {
            if matches!(event, SpeechEvent::Closed { .. }) {
                break;
            }
        }
        assert_eq!(*heard.lock().unwrap(), ["Paris."], "read as French, it is another sound");
        let english = SpeechRequest { index: 0, text: "Paris.".into(), language: Language::parse("en").ok(), rate: None, silence_ms: 0 };
        let mut session = wrap(backend(heard.clone(), ""), kokoro(), None, SpeakingRate::NORMAL, store(None, &cache), CancellationToken::new());
        session.commands.send(SpeechCommand::Speak(english)).await.unwrap();
        session.commands.send(SpeechCommand::Finish).await.unwrap();
        let mut events = Vec::new();
        while let Some(event) = session.events.recv().await {
            events.push(event);
        }
        assert_eq!(told(&events), ["0:P", "0:aris.", "0:end(cached)", "closed"], "told English, an English voice reads it as untold");
    }

    /// A shared tier in memory that answers after `delay` (the relay's rules; the S3 tier is tested
    /// against moto end to end).
    #[derive(Default)]
    struct MemoryTier {
        objects: Mutex<std::collections::HashMap<CacheKey, Bytes>>,
        delay: Duration,
    }

    #[async_trait::async_trait]
    impl SharedTier for MemoryTier {
        async fn get(&self, key: &CacheKey) -> Result<Option<CachedSentence>, String> {
            tokio::time::sleep(self.delay).await;
            Ok(self.objects.lock().unwrap().get(key).and_then(CachedSentence::from_object))
        }
        async fn put(&self, key: &CacheKey, sentence: &CachedSentence) -> Result<(), String> {
            self.objects.lock().unwrap().insert(key.clone(), sentence.to_object());
            Ok(())
        }
    }

    /// A process of its own (its own memory) sharing `tier`, for the backend `kokoro`.
    fn process_with(tier: &Arc<MemoryTier>, limit: Duration) -> CacheUse {
        let shared = SharedUse { tier: tier.clone(), backends: vec!["kokoro".into()], fetch_limit: limit };
        CacheUse { shared: Some(shared), ..CacheUse::only(Arc::new(SentenceCache::new(CacheLimits::default())), None) }
    }

    #[tokio::test]
    async fn a_sentence_one_process_paid_for_is_fetched_by_another_and_the_backend_keeps_its_order() {
        let tier = Arc::new(MemoryTier { delay: Duration::from_millis(30), ..Default::default() });
        let (_, asked) = speak(&process_with(&tier, Duration::from_secs(1)), &["Sure."]).await;
        assert_eq!(asked, ["Sure."]);
        tokio::time::sleep(Duration::from_millis(50)).await;
        // Another process: "Sure." from the tier, after which the backend speaks the rest in order.
        let (events, asked) = speak(&process_with(&tier, Duration::from_secs(1)), &["New one.", "Sure.", "Last one."]).await;
        assert_eq!(asked, ["New one.", "Last one."], "the fetched sentence never reaches the backend, the others in order");
        let order: Vec<String> = told(&events).into_iter().filter(|e| e.contains("end")).collect();
        assert_eq!(order, ["0:end", "1:end(cached)", "2:end"]);
    }

    #[tokio::test]
    async fn a_tier_slower_than_its_limit_leaves_the_sentence_to_the_backend() {
        let tier = Arc::new(MemoryTier { delay: Duration::from_millis(200), ..Default::default() });
        speak(&process_with(&tier, Duration::from_secs(1)), &["Sure."]).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        let (events, asked) = speak(&process_with(&tier, Duration::from_millis(20)), &["Sure."]).await;
        assert_eq!((asked, told(&events)), (vec!["Sure.".to_string()], vec!["0:S".to_string(), "0:ure.".into(), "0:end".into(), "closed".into()]));
    }
}
