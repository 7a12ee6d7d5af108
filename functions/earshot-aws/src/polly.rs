//! Amazon Polly as a backend, over `StartSpeechSynthesisStream` (generative engine, PCM at 16 kHz, or 8 kHz
//! where the client plays 8 kHz: [`polly_rate`]).
//!
//! Polly's `AudioEvent` carries audio only: it never says which text it voices. The one end Polly
//! documents is the stream's: `CloseStreamEvent` in, then `StreamClosedEvent` out once the audio of
//! everything sent has been delivered, with the characters billed. So each sentence gets a stream of
//! its own: its text with a forced flush, then `CloseStreamEvent`. Every byte of that stream's audio
//! is that sentence's, and its `StreamClosedEvent` says the sentence is complete. Nothing is guessed
//! from a clock, so audio that comes late, in bursts or after a silence is never cut off or given to
//! the wrong sentence.
//!
//! Opening a stream costs a round trip, so the session keeps one open ahead, a *spare*: the first is
//! opened with the session, while the agent is still thinking, and the next as soon as one is used.
//! Up to `ahead` sentences synthesize at once, each on its own stream; their audio goes to the client
//! in sentence order, a later sentence's held until the one before it is complete (memory bounded by
//! `ahead`). Only the spare ever waits for text, so only the spare needs keeping open: white-space
//! text events on a timer of its own (Polly closes a stream after 5 s without input), and a fresh
//! spare before the old one reaches Polly's 10-minute limit.
//!
//! Audio chunks need not hold whole samples; an odd byte is carried to the sentence's next chunk, so
//! every `audio` message holds whole 16-bit samples, as the protocol promises.

use std::collections::VecDeque;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_polly::error::ProvideErrorMetadata;
use aws_sdk_polly::types::error::{StartSpeechSynthesisStreamActionStreamError, StartSpeechSynthesisStreamEventStreamError};
use aws_sdk_polly::types::{
    CloseStreamEvent, Engine, FlushStreamConfiguration, LanguageCode, OutputFormat, StartSpeechSynthesisStreamActionStream,
    StartSpeechSynthesisStreamEventStream, TextEvent, TextType, VoiceId,
};
use aws_sdk_polly::Client;

use crate::health::{CachedHealth, DEFAULT_HEALTH_TTL};
use crate::polly_voices::{PollyVoice, VoiceCatalogue};
use aws_smithy_types::Blob;
use bytes::Bytes;
use earshot_core::language::Language;
use earshot_core::protocol::AudioFormat;
use earshot_core::speech::{SessionOptions, SpeakingRate, SpeechBackend, SpeechCommand, SpeechError, SpeechEvent, SpeechSession, Voice};
use earshot_core::text::pronounced::{self, Part};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

/// Polly's PCM rate, unless the client plays at 8 kHz.
pub const POLLY_SAMPLE_RATE: u32 = 16_000;

/// The PCM rate Polly is asked for: the two its `pcm` output offers are 8000 and 16000 Hz ("Valid values
/// for pcm are 8000 and 16000", `SampleRate` in Polly's API reference). A client that plays at 8 kHz
/// (telephony) gets Polly's own 8 kHz rather than 16 kHz resampled; every other rate is made from 16 kHz.
pub fn polly_rate(client_rate: Option<u32>) -> u32 {
    match client_rate {
        Some(rate) if rate <= 8_000 => 8_000,
        _ => POLLY_SAMPLE_RATE,
    }
}

/// Billed characters Polly accepts in one `TextEvent` (6,000 in all, of which 3,000 billed: the
/// StartSpeechSynthesisStream column of "SynthesizeSpeech and StartSpeechSynthesisStream compared"
/// in Polly's developer guide). A longer sentence is sent in several events.
pub const MAX_EVENT_CHARS: usize = 3_000;

/// How the Polly session behaves.
#[derive(Debug, Clone)]
pub struct PollySettings {
    /// The voice when a request names none, by earshot's name (Polly's id in lower case: `ruth`); one of
    /// the built-in generative voices.
    pub default_voice: String,
    /// The voice each language is spoken in when a request names none, where it should not be the
    /// default voice (when that speaks it) or Polly's first voice of the language.
    pub language_voices: Vec<(Language, String)>,
    /// Sentences synthesizing at once, each on its own stream.
    pub ahead: usize,
    /// A sentence with no audio at all after this long fails (`polly_timeout`, retryable); `None`: no
    /// limit of Polly's own. A gateway gives it its backend silence limit, so that one setting bounds
    /// every backend's silence.
    pub first_audio_timeout: Option<Duration>,
    /// White space is sent to the spare stream after this long without input, to keep it open
    /// (Polly closes a stream after 5 s).
    pub keep_alive: Duration,
    /// The spare stream is replaced after this long (Polly ends a stream after 10 minutes).
    pub max_stream_age: Duration,
    /// How long the end of a conversation waits for the spare stream's `StreamClosedEvent`, whose
    /// billed characters (keep-alive white space) belong in the total.
    pub close_wait: Duration,
}

impl Default for PollySettings {
    fn default() -> Self {
        PollySettings {
            default_voice: "ruth".into(),
            language_voices: Vec::new(),
            ahead: 2,
            first_audio_timeout: Some(Duration::from_secs(15)),
            keep_alive: Duration::from_secs(3),
            max_stream_age: Duration::from_secs(9 * 60),
            close_wait: Duration::from_secs(2),
        }
    }
}

/// Amazon Polly as a speech backend: one `StartSpeechSynthesisStream` per sentence, and the voices Polly
/// offers.
pub struct PollyBackend {
    client: Client,
    settings: PollySettings,
    health: CachedHealth,
    catalogue: Arc<VoiceCatalogue>,
}

impl PollyBackend {
    /// A backend calling Polly with the credentials and region of `config`; an error when the default voice
    /// is not one of the built-in generative voices.
    pub fn new(config: &aws_config::SdkConfig, settings: PollySettings) -> Result<Self, String> {
        // The default is checked against the voices earshot knows before Polly has answered; any voice
        // Polly lists may be asked for per request.
        if !VoiceCatalogue::built_in(&settings.default_voice) {
            return Err(format!("`{}` is not a Polly generative voice of earshot (voices: {})", settings.default_voice, VoiceCatalogue::built_in_names()));
        }
        Ok(PollyBackend { client: Client::new(config), settings, health: CachedHealth::new(DEFAULT_HEALTH_TTL), catalogue: Arc::default() })
    }

    /// The voices on offer and where they came from.
    pub fn catalogue(&self) -> &VoiceCatalogue {
        &self.catalogue
    }

    /// Asks Polly for its generative voices (`DescribeVoices`), and offers them from then on; the
    /// wiring calls it in the background at start, and every health probe calls it again. Healthy when
    /// Polly answers: reachable, this role authorized, and the service up in this region. Cheap (no
    /// synthesis, nothing billed).
    pub async fn describe_voices(&self) -> Result<(), SpeechError> {
        let call = self.client.describe_voices().engine(Engine::Generative).send();
        match tokio::time::timeout(crate::health::PROBE_TIMEOUT, call).await {
            Ok(Ok(answer)) => {
                let taken = self.catalogue.take(answer.voices());
                tracing::debug!(voices = taken, "Polly's generative voices, from DescribeVoices");
                Ok(())
            }
            Ok(Err(e)) => {
                let detail =
                    e.as_service_error().map(|s| format!("{}: {}", s.code().unwrap_or("error"), s.message().unwrap_or(""))).unwrap_or_else(|| e.to_string());
                Err(SpeechError::new("backend_unhealthy", format!("Polly DescribeVoices: {detail}"), true))
            }
            Err(_) => Err(SpeechError::new("backend_unhealthy", format!("Polly DescribeVoices: no answer within {:?}", crate::health::PROBE_TIMEOUT), true)),
        }
    }
}

/// Polly's exceptions as client-facing errors. Throttling, quota and service failures are retryable:
/// before any audio the gateway fails over to another backend.
fn polly_error(code: Option<&str>, message: Option<&str>) -> SpeechError {
    let (name, retryable) = match code.unwrap_or("") {
        "ValidationException" => ("polly_validation", false),
        "ThrottlingException" => ("polly_throttled", true),
        "ServiceQuotaExceededException" => ("polly_quota_exceeded", true),
        "ServiceFailureException" => ("polly_service_failure", true),
        _ => ("polly_error", true),
    };
    SpeechError::new(name, format!("Polly: {}{}", code.unwrap_or("error"), message.map(|m| format!(": {m}")).unwrap_or_default()), retryable)
}

fn modeled_name(e: &StartSpeechSynthesisStreamEventStreamError) -> &str {
    match e {
        StartSpeechSynthesisStreamEventStreamError::ValidationException(_) => "ValidationException",
        StartSpeechSynthesisStreamEventStreamError::ThrottlingException(_) => "ThrottlingException",
        StartSpeechSynthesisStreamEventStreamError::ServiceQuotaExceededException(_) => "ServiceQuotaExceededException",
        StartSpeechSynthesisStreamEventStreamError::ServiceFailureException(_) => "ServiceFailureException",
        other => other.code().unwrap_or("UnknownError"),
    }
}

type Action = Result<StartSpeechSynthesisStreamActionStream, StartSpeechSynthesisStreamActionStreamError>;

/// What one stream's reader reports.
enum FromStream {
    Audio(Vec<u8>),
    Closed {
        billed: u64,
    },
    Failed(SpeechError),
    /// The stream ended without `StreamClosedEvent`.
    Ended,
}

/// An open stream: where its input goes. Its output arrives, tagged with `id`, on the session's
/// channel.
struct Stream {
    id: u64,
    actions: mpsc::Sender<Action>,
    opened: Instant,
    last_input: Instant,
    /// Characters sent on it (keep-alive white space, for a spare).
    sent_chars: u64,
}

impl Stream {
    async fn send(&mut self, action: StartSpeechSynthesisStreamActionStream) -> bool {
        self.last_input = Instant::now();
        self.actions.send(Ok(action)).await.is_ok()
    }
}

/// What a session needs to open streams.
#[derive(Clone)]
struct Opener {
    client: Client,
    voice: VoiceId,
    /// Set where a bilingual voice speaks its other language (Polly's `LanguageCode`).
    language_code: Option<LanguageCode>,
    output: mpsc::Sender<(u64, FromStream)>,
    /// The PCM rate asked for ([`polly_rate`]).
    sample_rate: u32,
    /// Cancelled when the session ends: every stream's reader stops and its HTTP/2 stream is reset.
    cancel: CancellationToken,
}

impl Opener {
    async fn open(&self, id: u64) -> Result<Stream, SpeechError> {
        let (actions, action_stream) = mpsc::channel::<Action>(16);
        let output = self
            .client
            .start_speech_synthesis_stream()
            .engine(Engine::Generative)
            .output_format(OutputFormat::Pcm)
            .sample_rate(self.sample_rate.to_string())
            .voice_id(self.voice.clone())
            .set_language_code(self.language_code.clone())
            .action_stream(ReceiverStream::new(action_stream).into())
            .send()
            .await
            .map_err(|e| match e.as_service_error() {
                Some(s) => polly_error(s.code(), s.message()),
                None => SpeechError::new("backend_unreachable", format!("cannot reach Polly: {e:?}"), true),
            })?;
        let mut stream = output.event_stream;
        let (to_session, cancel) = (self.output.clone(), self.cancel.clone());
        earshot_core::tasks::spawn(async move {
            loop {
                let received = tokio::select! {
                    _ = cancel.cancelled() => return,
                    received = stream.recv() => received,
                };
                let report = match received {
                    Ok(Some(StartSpeechSynthesisStreamEventStream::AudioEvent(audio))) => {
                        FromStream::Audio(audio.audio_chunk.map(Blob::into_inner).unwrap_or_default())
                    }
                    Ok(Some(StartSpeechSynthesisStreamEventStream::StreamClosedEvent(closed))) => {
                        FromStream::Closed { billed: closed.request_characters.max(0) as u64 }
                    }
                    Ok(Some(_)) => continue,
                    Ok(None) => FromStream::Ended,
                    Err(e) => FromStream::Failed(match e.as_service_error() {
                        // The modeled exceptions are told by their variant (their metadata may not
                        // carry a code).
                        Some(s) => polly_error(Some(modeled_name(s)), s.message()),
                        None => SpeechError::new("backend_gone", format!("the Polly stream broke: {e:?}"), true),
                    }),
                };
                let last = !matches!(report, FromStream::Audio(_));
                if to_session.send((id, report)).await.is_err() || last {
                    return;
                }
            }
        });
        let now = Instant::now();
        Ok(Stream { id, actions, opened: now, last_input: now, sent_chars: 0 })
    }
}

/// Whether a Polly voice speaks `language`, as its first language or a second.
fn speaks(voice: &PollyVoice, language: &Language) -> bool {
    std::iter::once(&voice.language).chain(&voice.other_languages).any(|tag| Language::of_voice(tag).as_ref() == Some(language))
}

#[async_trait]
impl SpeechBackend for PollyBackend {
    fn name(&self) -> &str {
        "polly"
    }

    fn voices(&self) -> Vec<Voice> {
        self.catalogue
            .voices()
            .iter()
            .map(|v| {
                let also = if v.other_languages.is_empty() { String::new() } else { format!(", also {}", v.other_languages.join(", ")) };
                Voice { id: v.id.clone(), language: v.language.clone(), description: format!("Polly {} (generative{also})", v.polly_id) }
            })
            .collect()
    }

    fn default_voice(&self) -> String {
        self.settings.default_voice.clone()
    }

    /// The language the session opened in where the voice speaks it (a bilingual voice's second language is
    /// then asked for), else the voice's own: a sentence's own language is never sent to Polly.
    fn reading_language(&self, voice: &str, session: Option<&Language>, _sentence: Option<&Language>, _text: &str) -> Option<Language> {
        let voice = self.catalogue.find(voice)?;
        session.filter(|l| speaks(&voice, l)).cloned().or_else(|| Language::of_voice(&voice.language))
    }

    /// Every language of Polly's voices (a bilingual voice's second language too), each spoken by the
    /// configured voice, else the default voice where it speaks it, else the first voice whose own
    /// language it is, else the first that speaks it as a second language.
    fn languages(&self) -> Vec<(Language, String)> {
        let voices = self.catalogue.voices();
        let mut languages: Vec<Language> =
            voices.iter().flat_map(|v| std::iter::once(&v.language).chain(&v.other_languages)).filter_map(|tag| Language::of_voice(tag)).collect();
        languages.sort();
        languages.dedup();
        let first_language = |v: &PollyVoice| Language::of_voice(&v.language);
        languages
            .into_iter()
            .filter_map(|language| {
                let configured = self.settings.language_voices.iter().find(|(l, _)| *l == language).map(|(_, v)| v.as_str());
                let voice = configured
                    .into_iter()
                    .chain([self.settings.default_voice.as_str()])
                    .filter_map(|id| self.catalogue.find(id))
                    .find(|v| speaks(v, &language))
                    .or_else(|| voices.iter().find(|v| first_language(v).as_ref() == Some(&language)).cloned())
                    .or_else(|| voices.iter().find(|v| speaks(v, &language)).cloned())?;
                Some((language, voice.id))
            })
            .collect()
    }

    fn voice_speaks(&self, voice: &str, language: &Language) -> bool {
        self.catalogue.find(voice).is_some_and(|v| speaks(&v, language))
    }

    async fn open(&self, options: SessionOptions) -> Result<SpeechSession, SpeechError> {
        let Some(voice) = self.catalogue.find(&options.voice) else {
            let known: Vec<String> = self.catalogue.voices().iter().map(|v| v.id.clone()).collect();
            return Err(SpeechError::new("unknown_voice", format!("Polly has no generative voice `{}` (voices: {})", options.voice, known.join(", ")), false));
        };
        let (output, from_streams) = mpsc::channel(64);
        // A bilingual voice (Kajal: en-IN and hi-IN) is told which of its languages to speak when it is
        // not its first; a voice's first language needs no code.
        let language_code = options
            .language
            .as_ref()
            .and_then(|l| voice.other_languages.iter().find(|tag| Language::of_voice(tag).as_ref() == Some(l)))
            .filter(|_| options.language.as_ref() != Language::of_voice(&voice.language).as_ref())
            .map(|tag| LanguageCode::from(tag.as_str()));
        let sample_rate = polly_rate(options.sample_rate);
        let opener = Opener {
            client: self.client.clone(),
            voice: VoiceId::from(voice.polly_id.as_str()),
            language_code,
            output,
            sample_rate,
            cancel: options.cancel.child_token(),
        };
        // The first stream opens with the session, so that a Polly that cannot be reached fails the
        // request before any stream starts (and the gateway can answer or fail over).
        let spare = opener.open(0).await?;
        let (events_tx, events) = mpsc::channel(32);
        let (commands_tx, commands) = mpsc::channel(32);
        let (opened_tx, opened) = mpsc::channel(1);
        let session = Session {
            settings: self.settings.clone(),
            rate: options.speaking_rate,
            opener,
            events: events_tx,
            cancel: options.cancel.clone(),
            queue: VecDeque::new(),
            live: VecDeque::new(),
            spare: Some(spare),
            opening: false,
            opened_tx,
            retiring: Vec::new(),
            next_id: 1,
            billed: 0,
            finishing: false,
            finished_at: None,
        };
        earshot_core::tasks::spawn(session.drive(commands, from_streams, opened));
        Ok(SpeechSession { commands: commands_tx, events, format: AudioFormat::pcm_s16le(sample_rate), voice: options.voice })
    }

    async fn health(&self) -> Result<(), SpeechError> {
        self.health.check(|| self.describe_voices()).await
    }
}

/// A sentence on its stream.
struct Sentence {
    index: u32,
    stream: Stream,
    sent_at: Instant,
    /// Whole-sample audio received while an earlier sentence was still playing.
    held: Vec<Bytes>,
    /// A byte of a sample whose other byte has not come yet.
    carry: Option<u8>,
    got_audio: bool,
    closed: bool,
}

impl Sentence {
    /// The chunk as whole samples, carrying an odd byte over to the next chunk.
    fn whole_samples(&mut self, chunk: Vec<u8>) -> Option<Bytes> {
        let mut bytes = Vec::with_capacity(chunk.len() + 1);
        bytes.extend(self.carry.take());
        bytes.extend_from_slice(&chunk);
        if bytes.len() % 2 == 1 {
            self.carry = bytes.pop();
        }
        (!bytes.is_empty()).then(|| Bytes::from(bytes))
    }
}

struct Session {
    settings: PollySettings,
    /// How fast to speak: at another rate than the voice's own each sentence goes as SSML, in a
    /// `prosody` of that rate.
    rate: SpeakingRate,
    opener: Opener,
    events: mpsc::Sender<SpeechEvent>,
    cancel: CancellationToken,
    /// Sentences waiting for a stream.
    /// Sentences not yet sent: their index, text and own rate (an SSML `<prosody rate>`), if any.
    queue: VecDeque<(u32, String, Option<SpeakingRate>)>,
    /// Sentences on their streams, in order; the first is the one whose audio goes out.
    live: VecDeque<Sentence>,
    spare: Option<Stream>,
    opening: bool,
    opened_tx: mpsc::Sender<Result<Stream, SpeechError>>,
    /// Spare streams closed and awaiting their `StreamClosedEvent` (their billed characters).
    retiring: Vec<Stream>,
    next_id: u64,
    billed: u64,
    finishing: bool,
    /// When the last sentence finished: the bound on waiting for retiring streams.
    finished_at: Option<Instant>,
}

enum Next {
    Go,
    End,
}

impl Session {
    async fn drive(
        mut self,
        mut commands: mpsc::Receiver<SpeechCommand>,
        mut streams: mpsc::Receiver<(u64, FromStream)>,
        mut opened: mpsc::Receiver<Result<Stream, SpeechError>>,
    ) {
        // However the session ends, its streams' readers stop and their HTTP/2 streams are reset.
        let _guard = self.opener.cancel.clone().drop_guard();
        loop {
            if let Next::End = self.advance().await {
                return;
            }
            let wake = self.next_wake();
            let next = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => Next::End,
                command = commands.recv(), if !self.finishing => match command {
                    Some(SpeechCommand::Speak(r)) => {
                        self.queue.push_back((r.index, r.text, r.rate));
                        Next::Go
                    }
                    Some(SpeechCommand::Finish) => {
                        self.finishing = true;
                        Next::Go
                    }
                    // A sentence sent to Polly is billed and cannot be taken back: only what is certain goes.
                    Some(SpeechCommand::Prepare(_)) => Next::Go,
                    None => Next::End,
                },
                Some((id, report)) = streams.recv() => self.on_stream(id, report).await,
                Some(result) = opened.recv() => self.on_opened(result).await,
                _ = sleep_until_opt(wake), if wake.is_some() => self.on_timer().await,
            };
            if let Next::End = next {
                return;
            }
        }
    }

    /// Gives waiting sentences the spare stream, keeps a spare coming, and ends the session once all
    /// is said.
    async fn advance(&mut self) -> Next {
        while !self.queue.is_empty() && self.live.len() < self.settings.ahead.max(1) {
            let Some(mut stream) = self.spare.take() else { break };
            let (index, text, rate) = self.queue.pop_front().expect("a sentence");
            if !send_sentence(&mut stream, &text, rate.unwrap_or(self.rate)).await {
                return self.fail(SpeechError::new("backend_gone", "the Polly stream is closed", true)).await;
            }
            self.live.push_back(Sentence { index, stream, sent_at: Instant::now(), held: Vec::new(), carry: None, got_audio: false, closed: false });
        }
        let more_to_say = !(self.finishing && self.queue.is_empty());
        if more_to_say && self.spare.is_none() && !self.opening {
            self.open_spare();
        }
        if !more_to_say {
            if let Some(spare) = self.spare.take() {
                self.retire(spare).await;
            }
            if self.live.is_empty() {
                self.finished_at.get_or_insert_with(Instant::now);
                if self.retiring.is_empty() && !self.opening {
                    let _ = self.emit(SpeechEvent::Closed { billed_characters: Some(self.billed) }).await;
                    return Next::End;
                }
            }
        }
        Next::Go
    }

    fn open_spare(&mut self) {
        self.opening = true;
        let (opener, opened, id) = (self.opener.clone(), self.opened_tx.clone(), self.next_id);
        self.next_id += 1;
        earshot_core::tasks::spawn(async move {
            let result = opener.open(id).await;
            let _ = opened.send(result).await;
        });
    }

    /// Closes a stream that voices nothing; its `StreamClosedEvent` still reports what it billed.
    async fn retire(&mut self, mut stream: Stream) {
        if stream.send(StartSpeechSynthesisStreamActionStream::CloseStreamEvent(CloseStreamEvent::builder().build())).await {
            self.retiring.push(stream);
        } else {
            self.billed += stream.sent_chars;
        }
    }

    async fn on_opened(&mut self, result: Result<Stream, SpeechError>) -> Next {
        self.opening = false;
        match result {
            Ok(stream) => {
                // A replacement for a spare about to reach Polly's time limit retires the old one.
                if let Some(old) = self.spare.replace(stream) {
                    self.retire(old).await;
                }
                Next::Go
            }
            // A spare that could not open fails the conversation only if a sentence needs it.
            Err(e) if self.finishing && self.queue.is_empty() => {
                tracing::warn!("a spare Polly stream did not open: {}", earshot_core::redact::redact(&e.to_string()));
                Next::Go
            }
            Err(e) => self.fail(e).await,
        }
    }

    fn next_wake(&self) -> Option<Instant> {
        let mut wake: Option<Instant> = None;
        let mut at = |t: Instant| wake = Some(wake.map_or(t, |w| w.min(t)));
        if let Some(spare) = &self.spare {
            at(spare.last_input + self.settings.keep_alive);
            if !self.opening {
                at(spare.opened + self.settings.max_stream_age);
            }
        }
        if let (Some(front), Some(limit)) = (self.live.front().filter(|s| !s.got_audio && !s.closed), self.settings.first_audio_timeout) {
            at(front.sent_at + limit);
        }
        if let Some(done) = self.finished_at.filter(|_| !self.retiring.is_empty()) {
            at(done + self.settings.close_wait);
        }
        wake
    }

    async fn on_timer(&mut self) -> Next {
        let now = Instant::now();
        if let (Some(front), Some(limit)) = (self.live.front().filter(|s| !s.got_audio && !s.closed), self.settings.first_audio_timeout) {
            if now >= front.sent_at + limit {
                return self.fail(SpeechError::new("polly_timeout", "Polly sent no audio for a sentence", true)).await;
            }
        }
        if let Some(done) = self.finished_at {
            if now >= done + self.settings.close_wait {
                // A spare that never reported its close: count what was sent on it.
                for stream in self.retiring.drain(..) {
                    self.billed += stream.sent_chars;
                }
            }
        }
        let age = self.settings.max_stream_age;
        if let Some(spare) = self.spare.as_mut() {
            if !self.opening && now >= spare.opened + age {
                self.open_spare();
            } else if now >= spare.last_input + self.settings.keep_alive {
                // Keep the spare open while the agent thinks: white space, no flush.
                let event = TextEvent::builder().text(" ").build().expect("a text event");
                spare.sent_chars += 1;
                if !spare.send(StartSpeechSynthesisStreamActionStream::TextEvent(event)).await {
                    // Gone (Polly closed it, or it failed): the next sentence gets a new one.
                    self.spare = None;
                }
            }
        }
        Next::Go
    }

    async fn on_stream(&mut self, id: u64, report: FromStream) -> Next {
        if let Some(position) = self.live.iter().position(|s| s.stream.id == id) {
            return self.on_sentence_stream(position, report).await;
        }
        if self.spare.as_ref().is_some_and(|s| s.id == id) {
            // Polly ended the spare (idle, time limit, failure): a new one is opened when needed.
            if let FromStream::Closed { billed } = report {
                self.billed += billed;
            }
            self.spare = None;
            return Next::Go;
        }
        // A retired spare voices nothing; its end says what it billed.
        if let (Some(position), false) = (self.retiring.iter().position(|s| s.id == id), matches!(report, FromStream::Audio(_))) {
            let stream = self.retiring.swap_remove(position);
            self.billed += if let FromStream::Closed { billed } = report { billed } else { stream.sent_chars };
        }
        Next::Go
    }

    async fn on_sentence_stream(&mut self, position: usize, report: FromStream) -> Next {
        match report {
            FromStream::Audio(chunk) => {
                let sentence = &mut self.live[position];
                let Some(pcm) = sentence.whole_samples(chunk) else { return Next::Go };
                sentence.got_audio = true;
                if position == 0 {
                    let index = sentence.index;
                    self.emit(SpeechEvent::Audio { index, pcm }).await
                } else {
                    sentence.held.push(pcm);
                    Next::Go
                }
            }
            FromStream::Closed { billed } => {
                self.billed += billed;
                self.live[position].closed = true;
                self.finish_front().await
            }
            FromStream::Failed(e) => self.fail(e).await,
            FromStream::Ended => self.fail(SpeechError::new("backend_gone", "the Polly stream ended before its sentence was complete", true)).await,
        }
    }

    /// Ends every complete sentence at the front, passing on the held audio of the one that follows.
    async fn finish_front(&mut self) -> Next {
        while self.live.front().is_some_and(|s| s.closed) {
            let done = self.live.pop_front().expect("a front sentence");
            if done.carry.is_some() {
                tracing::warn!("Polly's audio for sentence {} ended inside a sample; its last byte is dropped", done.index);
            }
            if let Next::End = self.emit(SpeechEvent::Finished { index: done.index, report: Default::default() }).await {
                return Next::End;
            }
            if let Some(next) = self.live.front_mut() {
                let (index, held) = (next.index, std::mem::take(&mut next.held));
                for pcm in held {
                    if let Next::End = self.emit(SpeechEvent::Audio { index, pcm }).await {
                        return Next::End;
                    }
                }
            }
        }
        Next::Go
    }

    async fn emit(&self, event: SpeechEvent) -> Next {
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Next::End,
            sent = self.events.send(event) => if sent.is_ok() { Next::Go } else { Next::End },
        }
    }

    async fn fail(&mut self, error: SpeechError) -> Next {
        let _ = self.emit(SpeechEvent::Failed(error)).await;
        Next::End
    }
}

/// Sends a sentence on its own stream: its text (in events of at most [`MAX_EVENT_CHARS`]), a forced
/// flush with the last, then the close that makes Polly say when its audio is complete. At a rate other
/// than the voice's own, or with a pronunciation marked in it (a lexicon's IPA entry), each piece is an
/// SSML document of its own (`TextType` `ssml`): its text in a `<prosody rate="N%">` (Polly's SSML
/// reference: a rate of 20 % to 200 %; SSML tags are not billed), each mark a `<phoneme alphabet="ipa">`.
/// A sentence is far shorter than a piece (the segmenter's 400 characters against 3,000), so no mark is cut.
async fn send_sentence(stream: &mut Stream, text: &str, rate: SpeakingRate) -> bool {
    let pieces = text_pieces(text, MAX_EVENT_CHARS);
    let last = pieces.len() - 1;
    let ssml = !rate.is_normal() || pronounced::has_marks(text);
    for (i, piece) in pieces.into_iter().enumerate() {
        let mut event = match ssml {
            false => TextEvent::builder().text(piece),
            true => TextEvent::builder().text(ssml_document(&piece, rate)).text_type(TextType::Ssml),
        };
        if i == last {
            event = event.flush_stream_configuration(FlushStreamConfiguration::builder().force(true).build());
        }
        let Ok(event) = event.build() else { return false };
        if !stream.send(StartSpeechSynthesisStreamActionStream::TextEvent(event)).await {
            return false;
        }
    }
    stream.send(StartSpeechSynthesisStreamActionStream::CloseStreamEvent(CloseStreamEvent::builder().build())).await
}

/// `text` as an SSML document: said at `rate` (a `prosody` where it is not the voice's own), each
/// pronunciation marked in it as a `phoneme` in IPA, its XML characters escaped.
fn ssml_document(text: &str, rate: SpeakingRate) -> String {
    let mut body = String::with_capacity(text.len() + 64);
    for part in pronounced::parts(text) {
        match part {
            Part::Text(text) => escape_into(&mut body, text),
            Part::Said { words, ipa } => {
                body.push_str("<phoneme alphabet=\"ipa\" ph=\"");
                escape_into(&mut body, ipa);
                body.push_str("\">");
                escape_into(&mut body, words);
                body.push_str("</phoneme>");
            }
        }
    }
    match rate.is_normal() {
        true => format!("<speak>{body}</speak>"),
        false => format!("<speak><prosody rate=\"{}%\">{body}</prosody></speak>", rate.percent()),
    }
}

fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
}

/// `text` in pieces of at most `max` characters, cut after white space where there is some.
fn text_pieces(text: &str, max: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while rest.chars().count() > max {
        let limit = rest.char_indices().nth(max).map_or(rest.len(), |(i, _)| i);
        // After the white space, however many bytes it takes (an ideographic space is three).
        let cut = rest[..limit].char_indices().rev().find(|(_, c)| c.is_whitespace()).map(|(i, c)| i + c.len_utf8()).unwrap_or(limit);
        pieces.push(rest[..cut].to_string());
        rest = &rest[cut..];
    }
    if !rest.is_empty() || pieces.is_empty() {
        pieces.push(rest.to_string());
    }
    pieces
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_rate_is_a_prosody_around_the_text_escaped() {
        let rate = SpeakingRate::from_factor(1.5).unwrap();
        assert_eq!(ssml_document("Tom & Jerry <3 \"you\".", rate), "<speak><prosody rate=\"150%\">Tom &amp; Jerry &lt;3 &quot;you&quot;.</prosody></speak>");
    }

    #[test]
    fn a_marked_pronunciation_is_a_phoneme_in_ipa() {
        let normal = SpeakingRate::from_factor(1.0).unwrap();
        assert_eq!(ssml_document("Ask [Nguyen](/wˈɪn/) & me.", normal), "<speak>Ask <phoneme alphabet=\"ipa\" ph=\"wˈɪn\">Nguyen</phoneme> &amp; me.</speak>");
    }

    #[test]
    fn a_long_sentence_is_cut_after_white_space_and_nothing_is_lost() {
        let text = "word ".repeat(1000);
        let pieces = text_pieces(&text, MAX_EVENT_CHARS);
        assert!(pieces.len() >= 2);
        assert!(pieces.iter().all(|p| p.chars().count() <= MAX_EVENT_CHARS));
        assert!(pieces[..pieces.len() - 1].iter().all(|p| p.ends_with(' ')));
        assert_eq!(pieces.concat(), text);
        assert_eq!(text_pieces("Short.", MAX_EVENT_CHARS), vec!["Short."]);
        let unbroken = "x".repeat(7000);
        assert_eq!(text_pieces(&unbroken, MAX_EVENT_CHARS).concat(), unbroken);
    }

    #[test]
    fn a_cut_after_white_space_of_several_bytes_lands_between_characters() {
        for space in ['\u{3000}', '\u{a0}', '\u{2003}'] {
            let text: String = std::iter::repeat_n(format!("字{space}"), 3000).collect();
            let pieces = text_pieces(&text, MAX_EVENT_CHARS);
            assert!(pieces.len() >= 2);
            assert!(pieces[..pieces.len() - 1].iter().all(|p| p.ends_with(space)), "{space:?}");
            assert!(pieces.iter().all(|p| p.chars().count() <= MAX_EVENT_CHARS));
            assert_eq!(pieces.concat(), text);
        }
    }
}
