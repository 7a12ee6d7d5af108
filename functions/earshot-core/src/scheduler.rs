//! The speech scheduler: agent text in, spoken sentences out, in order, as early as the release policy
//! allows.
//!
//! ```text
//! agent deltas ─▶ normaliser ─▶ segmenter ─▶ release queue ─▶ TTS session ─▶ audio events ─▶ client
//!                                   ▲ idle timer / pause
//! ```
//!
//! Release policies differ only in *when* a finished sentence leaves the release queue: `incremental`
//! at once, `buffered` when the agent has finished. Everything else (backend, session, segmenter) is
//! the same, so the two can be compared fairly.
//!
//! Bounded queues, and what happens when they fill:
//! - at most `max_in_flight` sentences are at the backend and not finished; further sentences wait in
//!   the release queue, and while that queue is not empty (incremental) the scheduler stops pulling
//!   from the agent, whose bounded channel then stops the agent itself;
//! - the client channel is bounded: a slow client stops the scheduler reading audio, which stops the
//!   backend reading from the model;
//! - every answer's length is capped (`max_answer_chars`): a buffered one is held whole by definition,
//!   and an agent that writes on without end would otherwise speak (and bill) until the conversation's
//!   maximum length.
//!
//! The scheduler owns time: when the agent has been silent for the idle window and the pending text
//! would be a complete sentence, it is released without waiting for the character that would confirm
//! it. A pause signalled by the agent (a tool call) releases pending text at once.
//!
//! The scheduler speaks through one session and knows nothing of failover: a session made of several
//! backends ([`crate::failover`]) re-sends what it must itself and says when another backend has taken
//! over ([`SpeechEvent::Switched`]); the scheduler then tells the client, in a second `session`.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use bytes::Bytes;

use crate::agent::{AgentEvent, AgentStream};
use crate::error::codes as error_codes;
use crate::language::LanguageSource;
use crate::output::AudioEncoder;
use crate::protocol::{
    AudioChunk, AudioFormat, BackendReason, Done, ErrorInfo, SentenceEnd, SentenceText, SentenceWords, ServerEvent, SessionInfo, TextDelta, TimingSource,
    WordTiming,
};
use crate::speech::{FinishReport, SpeechCommand, SpeechEvent, SpeechRequest, SpeechSession, Switch};
use crate::text::certainty::Certainty;
use crate::text::ssml::{Piece, SsmlReader};
use crate::text::{Normaliser, Segmenter, SegmenterConfig, Sentence};
use crate::timeline::{Clock, SentenceMarks, Timeline};
use crate::words::{estimate, Envelope};

/// When finished sentences are released to speech.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// Each sentence the moment it is complete.
    Incremental,
    /// Everything once the agent has finished.
    Buffered,
}

impl Release {
    /// The policy's name, as the request's `release` and the `session` message write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Release::Incremental => "incremental",
            Release::Buffered => "buffered",
        }
    }
}

impl std::str::FromStr for Release {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "incremental" => Ok(Release::Incremental),
            "buffered" => Ok(Release::Buffered),
            other => Err(format!("unknown release `{other}` (expected incremental or buffered)")),
        }
    }
}

/// How conversations are scheduled: the gateway's settings, the same for every conversation.
#[derive(Debug, Clone)]
pub struct SchedulerConfig {
    /// Release pending text that would be a complete sentence after this much agent silence, where its
    /// end is sure ([`crate::text::certainty`]: `Sure.`).
    pub idle_release: Option<Duration>,
    /// Release pending text whose end is ambiguous (`It costs $3.`, `The U.S.`, `at 4 p.m.`) after this much
    /// agent silence: the text that settles it is waited for, this long at most (`None`: until the agent
    /// goes on or ends). A tool call's pause releases at once either way.
    pub ambiguous_release: Option<Duration>,
    /// How the answer's text is cut into sentences.
    pub segmenter: SegmenterConfig,
    /// Make Markdown speakable before segmenting.
    pub normalise_markdown: bool,
    /// Read the answer as SSML ([`crate::text::ssml`]): set per conversation, for a request's
    /// `"markup": "ssml"` (Markdown is then not normalised: the answer is SSML, not Markdown).
    pub ssml: bool,
    /// Tell the session the answer's first sentence as soon as its full stop has come, before the
    /// character that confirms it ([`SpeechCommand::Prepare`]): a voice that starts on it gains the time
    /// between the two (one stream piece).
    pub prepare_first_sentence: bool,
    /// Sentences at the backend and not finished (at least one: [`SchedulerConfig::in_flight_bound`]).
    pub max_in_flight: usize,
    /// The longest answer accepted, in characters.
    pub max_answer_chars: usize,
    /// The longest a backend may stay silent while it has sentences to speak (`backend_stalled`).
    /// Only time the scheduler spends listening counts: a client that does not read is not the
    /// backend's fault.
    pub backend_silence: Option<Duration>,
    /// The longest the client may leave one message untaken once the bounded queue to it is full
    /// (`None`: no limit). A caller that reads nothing would otherwise hold the conversation, its
    /// place under the server's cap and the backend's session until the maximum length; past this
    /// the conversation ends as [`Outcome::ClientStalled`].
    pub client_read_timeout: Option<Duration>,
}

/// The scheduler's defaults, named once: `SchedulerConfig::default` and the settings' flags both read them.
pub mod defaults {
    /// How long the agent's silence releases a finished-looking sentence whose end is sure.
    pub const IDLE_RELEASE_MS: u64 = 150;
    /// How long the agent's silence releases one whose end is ambiguous (a decimal, an abbreviation):
    /// longer than the pauses model streams make between chunks, so that `$3.` waits for its `50`.
    pub const AMBIGUOUS_RELEASE_MS: u64 = 2_000;
    /// Sentences sent to the voice and not yet finished, at most.
    pub const MAX_IN_FLIGHT: usize = 4;
    /// The longest answer spoken, in characters.
    pub const MAX_ANSWER_CHARS: usize = 20_000;
    /// How long a voice may stay silent on a sentence it was sent.
    pub const BACKEND_SILENCE_MS: u64 = 15_000;
    /// How long a client may leave the stream unread.
    pub const CLIENT_READ_TIMEOUT_MS: u64 = 30_000;
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            idle_release: Some(Duration::from_millis(defaults::IDLE_RELEASE_MS)),
            ambiguous_release: Some(Duration::from_millis(defaults::AMBIGUOUS_RELEASE_MS)),
            segmenter: SegmenterConfig { max_chars: Some(400), ..Default::default() },
            normalise_markdown: true,
            ssml: false,
            prepare_first_sentence: true,
            max_in_flight: defaults::MAX_IN_FLIGHT,
            max_answer_chars: defaults::MAX_ANSWER_CHARS,
            backend_silence: Some(Duration::from_millis(defaults::BACKEND_SILENCE_MS)),
            client_read_timeout: Some(Duration::from_millis(defaults::CLIENT_READ_TIMEOUT_MS)),
        }
    }
}

impl SchedulerConfig {
    /// The in-flight bound as applied: a bound of zero would never send anything, so it is one.
    pub fn in_flight_bound(&self) -> usize {
        self.max_in_flight.max(1)
    }

    /// The sentences an answer of exactly `text` is sent to speech as: normalised as the scheduler
    /// normalises, split as it splits. What the sentence cache's warm-up renders, so that its keys are
    /// the ones a conversation looks up.
    pub fn sentences_of(&self, text: &str) -> Vec<String> {
        let speakable = if self.normalise_markdown { crate::text::normalise(text) } else { text.to_string() };
        crate::text::split(&speakable, self.segmenter.clone())
    }
}

/// The error an answer that is not SSML of the subset ends with.
/// The error an answer that is not SSML of the subset ends with: the reader's words, which name the tag
/// (never the text around it), with every control character escaped and at most 240 characters, so that
/// the agent's own writing reaches neither the client nor a log line of its own.
fn invalid_ssml(e: crate::text::ssml::SsmlError) -> ErrorInfo {
    let said: String = e.0.chars().flat_map(|c| if c.is_control() { c.escape_default().collect::<Vec<_>>() } else { vec![c] }).take(240).collect();
    ErrorInfo::new(error_codes::INVALID_SSML, format!("the answer is not SSML this gateway reads: {said}"), false)
}

/// One conversation for the scheduler: what it reads, what it speaks through, and what it says first.
pub struct Conversation {
    /// The agent's answer, as it streams in.
    pub agent: AgentStream,
    /// The speech session the sentences are spoken through.
    pub session: SpeechSession,
    /// The `session` message, sent first; a switch of backend sends it again, naming the new one.
    pub info: SessionInfo,
    /// This conversation's release policy.
    pub release: Release,
    /// Every mark is milliseconds from this clock's start.
    pub clock: Clock,
    /// Marks made before the scheduler started (the session's open, an overflow); it adds the rest.
    pub timeline: Timeline,
    /// Cancelled when the conversation must end (the client left, an interrupt, shutdown).
    pub cancel: CancellationToken,
    /// Turns the backend's PCM into the format the client asked for ([`crate::output`]); `None`: the
    /// backend's PCM goes out as it comes.
    pub encoder: Option<Box<dyn AudioEncoder>>,
}

/// How a conversation ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Every sentence was spoken and `done` was sent.
    Completed,
    /// An `error` message was sent to the client.
    Failed(ErrorInfo),
    /// The conversation's token was cancelled.
    Cancelled,
    /// The client went away (the stream to it was dropped).
    ClientGone,
    /// The client is still connected but took nothing for the client read limit
    /// ([`SchedulerConfig::client_read_timeout`]): nothing more can reach it, so nothing is sent.
    ClientStalled,
}

/// Where a conversation's timeline is left however its task ends: returned, aborted from outside (an
/// interrupt, the maximum length, shutdown, a client that left) or unwound by a panic. Whoever owns
/// the conversation's ending reads it there, so that every conversation that got a session is counted
/// with what it did, not only the ones that finished.
#[derive(Debug, Clone, Default)]
pub struct TimelineCell(std::sync::Arc<std::sync::Mutex<Option<Timeline>>>);

impl TimelineCell {
    /// The timeline left in the cell, once the scheduler's task has ended (None before).
    pub fn take(&self) -> Option<Timeline> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take()
    }

    /// What a listener heard of the answer so far who played `heard_ms` of its audio, to the word
    /// ([`crate::words::heard_text`]), from the timeline left in the cell (empty before).
    pub fn heard(&self, heard_ms: f64) -> String {
        let cell = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(timeline) = cell.as_ref() else { return String::new() };
        crate::words::heard_text(timeline.sentences.iter().map(|s| (s.text.as_str(), s.audio_ms, &s.words[..])), heard_ms)
    }

    fn put(&self, timeline: Timeline) {
        *self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(timeline);
    }
}

struct Scheduler<'a> {
    cfg: &'a SchedulerConfig,
    /// Receives the timeline when the scheduler is dropped, whatever dropped it.
    cell: TimelineCell,
    release: Release,
    clock: Clock,
    timeline: Timeline,
    out: mpsc::Sender<ServerEvent>,
    commands: mpsc::Sender<SpeechCommand>,
    /// The session's audio format (a switch of backend may change it).
    format: AudioFormat,
    /// What the client receives: `format`, or the encoder's output.
    encoder: Option<Box<dyn AudioEncoder>>,
    /// The last `session` message sent, the template of the next.
    info: SessionInfo,
    normaliser: Normaliser,
    /// The SSML reader, for an answer read as SSML.
    ssml: Option<SsmlReader>,
    /// Markers of a sentence with nothing to say (a break before any text): said with the next one.
    carried_markers: String,
    /// The first sentence as the session was told to prepare it, if it was, and when.
    prepared: Option<(String, f64)>,
    segmenter: Segmenter,
    /// Sentences to release: their index, as the client is shown them, and as they go to the voice (with
    /// their SSML markers, where the answer is SSML).
    queue: VecDeque<(u32, String, String)>,
    next_index: u32,
    in_flight: usize,
    agent_done: bool,
    finish_sent: bool,
    answer_chars: usize,
    /// The sentences at the backend, for their word timings: the text, and the audio's envelope until the
    /// backend times a word itself (then its timings are passed on and nothing is estimated).
    speaking: std::collections::HashMap<u32, Spoken>,
    /// The sentences the voice passed over (a script it cannot read): an answer that is nothing else ends
    /// with `nothing_speakable`, naming what they are written in.
    passed_over: Vec<String>,
}

/// A sentence at the backend, as its word timings need it.
struct Spoken {
    text: String,
    /// `None` once the backend timed its words itself.
    envelope: Option<Envelope>,
    /// The backend's word timings that came before any of the sentence's audio: sent just before it, so
    /// that a switch of backend before any audio (which speaks the sentence again) leaves none behind.
    held: Vec<WordTiming>,
    /// The audio chunks sent to the client: the next one's `seq`.
    sent: u32,
}

/// What a step of the loop decided.
enum Flow {
    Continue,
    End(Outcome),
}

impl Drop for Scheduler<'_> {
    fn drop(&mut self) {
        self.cell.put(std::mem::take(&mut self.timeline));
    }
}

/// Runs one conversation to its end: sends its `session` message, then everything after it, ending
/// with `done` or `error` (unless the client is gone or the conversation was cancelled). Returns how
/// it ended and the timeline.
pub async fn run(conversation: Conversation, cfg: &SchedulerConfig, out: mpsc::Sender<ServerEvent>) -> (Outcome, Timeline) {
    let cell = TimelineCell::default();
    let outcome = run_into(conversation, cfg, out, cell.clone()).await;
    (outcome, cell.take().unwrap_or_default())
}

/// [`run`], leaving the timeline in `cell` rather than returning it: there too when the task running
/// this future is aborted or panics before the end.
pub async fn run_into(conversation: Conversation, cfg: &SchedulerConfig, out: mpsc::Sender<ServerEvent>, cell: TimelineCell) -> Outcome {
    let Conversation { mut agent, session, mut info, release, clock, mut timeline, cancel, mut encoder } = conversation;
    let SpeechSession { commands, mut events, format, .. } = session;
    if let Some(encoder) = encoder.as_mut() {
        encoder.source(&format);
        info.audio = encoder.output();
    }
    timeline.backend = info.backend.clone();
    timeline.release = release.as_str().to_string();
    // The conversation's language, where the request, its text or its prompt told it, chooses the
    // segmenter's rules (a French `Me.` is a title, an English one ends a sentence).
    let segmenting = SegmenterConfig { language: info.language.clone().or_else(|| cfg.segmenter.language.clone()), ..cfg.segmenter.clone() };
    let mut s = Scheduler {
        cfg,
        cell,
        release,
        clock,
        timeline,
        out,
        commands,
        format,
        encoder,
        info,
        normaliser: Normaliser::new(),
        ssml: cfg.ssml.then(SsmlReader::new),
        carried_markers: String::new(),
        prepared: None,
        segmenter: Segmenter::new(segmenting),
        queue: VecDeque::new(),
        next_index: 0,
        in_flight: 0,
        agent_done: false,
        finish_sent: false,
        answer_chars: 0,
        speaking: std::collections::HashMap::new(),
        passed_over: Vec::new(),
    };
    let mut clocks = Clocks::new();

    if let Flow::End(outcome) = s.send(ServerEvent::Session(s.info.clone())).await {
        return outcome;
    }
    let outcome = loop {
        let can_pull = !s.agent_done
            && match release {
                Release::Incremental => s.queue.is_empty(),
                Release::Buffered => true,
            };
        clocks.pulling(can_pull);
        let window = if clocks.held_ambiguous { cfg.ambiguous_release } else { cfg.idle_release };
        let idle_at = clocks.idle_at(window, can_pull);
        let listening = Instant::now();
        let backend_deadline = clocks.backend_deadline(cfg.backend_silence, s.in_flight > 0 || s.finish_sent, listening);
        let mut heard_backend = false;
        // When the select woke for something else: what its handler then spends (waiting on the
        // client, say) is not the backend's silence.
        let mut woke = None;
        let flow = tokio::select! {
            biased;
            _ = cancel.cancelled() => Flow::End(Outcome::Cancelled),
            event = events.recv() => {
                heard_backend = true;
                s.on_speech(event).await
            }
            event = agent.recv(), if can_pull => {
                woke = Some(Instant::now());
                if matches!(event, Some(Ok(AgentEvent::Delta(_)))) {
                    clocks.text_arrived();
                }
                s.on_agent(event).await
            }
            _ = sleep_until_opt(backend_deadline), if backend_deadline.is_some() => {
                let limit = cfg.backend_silence.unwrap_or_default();
                let message = format!("{} said nothing for {} ms while it had sentences to speak", s.info.backend, limit.as_millis());
                Flow::End(s.fail(ErrorInfo::new(error_codes::BACKEND_STALLED, message, true)).await)
            }
            _ = sleep_until_opt(idle_at), if idle_at.is_some() => {
                woke = Some(Instant::now());
                clocks.idle_checked = true;
                match s.segmenter.pending_certainty() {
                    // An ambiguous end the first time: held for the text that settles it, up to the longer limit.
                    Some(Certainty::Ambiguous) if !clocks.held_ambiguous => {
                        clocks.hold_ambiguous();
                        Flow::Continue
                    }
                    Some(_) => {
                        let sentences: Vec<Sentence> = s.segmenter.flush().collect();
                        s.release_all(sentences)
                    }
                    None => Flow::Continue,
                }
            }
        };
        clocks.after_turn(heard_backend, woke, listening);
        if let Flow::End(outcome) = flow {
            break outcome;
        }
        if let Flow::End(outcome) = s.pump().await {
            break outcome;
        }
        if let Flow::End(outcome) = s.maybe_finish().await {
            break outcome;
        }
    };
    outcome
}

/// The scheduler's clocks between turns of its loop. Silence is the agent's only while earshot listens:
/// when the release queue is full the agent is not read, and its next delta may already be waiting, so
/// the idle window counts from the later of the last delta and the moment reading resumed. The backend's
/// silence is counted only while it has work and earshot listens.
struct Clocks {
    /// When the agent's last delta came.
    last_text: Instant,
    /// The idle window has fired since the last delta (or none has come).
    idle_checked: bool,
    /// When reading the agent last resumed.
    listening_since: Instant,
    was_pulling: bool,
    /// How long the backend has been silent while it had work.
    backend_silent_for: Duration,
    /// The idle window found an ambiguous end and holds it: the longer window counts now.
    held_ambiguous: bool,
}

impl Clocks {
    fn new() -> Self {
        let now = Instant::now();
        Clocks { last_text: now, idle_checked: true, listening_since: now, was_pulling: true, backend_silent_for: Duration::ZERO, held_ambiguous: false }
    }

    /// Whether the agent is read this turn.
    fn pulling(&mut self, can_pull: bool) {
        if can_pull && !self.was_pulling {
            self.listening_since = Instant::now();
        }
        self.was_pulling = can_pull;
    }

    /// When the idle window releases a finished-looking sentence, if it may this turn.
    fn idle_at(&self, window: Option<Duration>, can_pull: bool) -> Option<Instant> {
        match window {
            Some(window) if !self.idle_checked && can_pull => Some(self.last_text.max(self.listening_since) + window),
            _ => None,
        }
    }

    /// When the backend's silence becomes a stall, counted from `now`, if it has work.
    fn backend_deadline(&mut self, limit: Option<Duration>, has_work: bool, now: Instant) -> Option<Instant> {
        if !has_work {
            self.backend_silent_for = Duration::ZERO;
        }
        limit.filter(|_| has_work).map(|limit| now + limit.saturating_sub(self.backend_silent_for))
    }

    /// A delta came from the agent.
    fn text_arrived(&mut self) {
        self.last_text = Instant::now();
        self.idle_checked = false;
        self.held_ambiguous = false;
    }

    /// The idle window found an ambiguous end: it is looked at again once the longer window has passed.
    fn hold_ambiguous(&mut self) {
        self.held_ambiguous = true;
        self.idle_checked = false;
    }

    /// After a turn that began listening at `listening`: the backend was heard, or its silence goes on
    /// (until `woke`, when the select woke for something else: what that handler then spent, waiting on
    /// the client say, is not the backend's silence).
    fn after_turn(&mut self, heard_backend: bool, woke: Option<Instant>, listening: Instant) {
        self.backend_silent_for =
            if heard_backend { Duration::ZERO } else { self.backend_silent_for + woke.unwrap_or_else(Instant::now).duration_since(listening) };
    }
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl Scheduler<'_> {
    /// Hands one message to the client's queue, waiting while it is full for no longer than the
    /// client read limit.
    async fn deliver(&mut self, event: ServerEvent) -> Result<(), Outcome> {
        let sent = match self.cfg.client_read_timeout {
            Some(limit) => tokio::time::timeout(limit, self.out.send(event)).await.map_err(|_| Outcome::ClientStalled)?,
            None => self.out.send(event).await,
        };
        sent.map_err(|_| Outcome::ClientGone)
    }

    async fn send(&mut self, event: ServerEvent) -> Flow {
        match self.deliver(event).await {
            Ok(()) => Flow::Continue,
            Err(outcome) => Flow::End(outcome),
        }
    }

    /// Sends a chunk of a sentence's audio in the client's format (nothing, where the encoder held it
    /// all), after any words of the backend's that came before its first audio, and marks it sent.
    async fn send_audio(&mut self, index: u32, audio: Bytes) -> Flow {
        if audio.is_empty() {
            return Flow::Continue;
        }
        let (seq, held) = match self.speaking.get_mut(&index) {
            Some(spoken) => {
                spoken.sent += 1;
                (spoken.sent - 1, std::mem::take(&mut spoken.held))
            }
            None => (self.timeline.sentence_mut(index).map_or(0, |m| m.audio_chunks.saturating_sub(1)), Vec::new()),
        };
        if !held.is_empty() {
            if let Flow::End(o) = self.send_words(index, TimingSource::Model, held).await {
                return Flow::End(o);
            }
        }
        let bytes = audio.len() as u64;
        let duration_ms = match self.encoder.as_ref() {
            Some(encoder) => encoder.duration_ms(&audio),
            None => self.format.duration_ms(audio.len()),
        };
        if let Flow::End(o) = self.send(ServerEvent::Audio(AudioChunk { index, seq, pcm: audio })).await {
            return Flow::End(o);
        }
        let sent = self.clock.now_ms();
        if let Some(marks) = self.timeline.sentence_mut(index) {
            marks.first_audio_sent_ms.get_or_insert(sent);
        }
        self.timeline.note_audio_sent(index, sent, duration_ms);
        self.timeline.first_audio_sent_ms.get_or_insert(sent);
        self.timeline.audio_chunks_sent += 1;
        self.timeline.audio_bytes_sent += bytes;
        Flow::Continue
    }

    /// Sends words of a sentence, keeping them in its marks (what an interrupt's `heard` is cut by).
    /// The protocol's promise (words never go back or overlap) is kept here whatever a backend sent.
    async fn send_words(&mut self, index: u32, timing: TimingSource, mut words: Vec<WordTiming>) -> Flow {
        if let Some(marks) = self.timeline.sentence_mut(index) {
            let mut last = marks.words.last().map_or(0.0, |w| w.end_ms);
            for word in &mut words {
                word.start_ms = word.start_ms.max(last);
                word.end_ms = word.end_ms.max(word.start_ms);
                last = word.end_ms;
            }
            marks.words.extend(words.iter().cloned());
        }
        self.send(ServerEvent::Words(SentenceWords { index, timing, words })).await
    }

    /// Ends with `error`. An error the client can no longer receive is not reported as sent: the
    /// outcome is then `ClientGone` or `ClientStalled`, as [`Outcome::Failed`] promises an `error`
    /// message went out.
    async fn fail(&mut self, info: ErrorInfo) -> Outcome {
        match self.deliver(ServerEvent::Error(info.clone())).await {
            Ok(()) => Outcome::Failed(info),
            Err(outcome) => outcome,
        }
    }

    async fn on_agent(&mut self, event: Option<Result<AgentEvent, crate::agent::AgentError>>) -> Flow {
        match event {
            Some(Ok(AgentEvent::Delta(text))) => {
                // earshot's own marker characters are never the agent's: left out, so that no answer can
                // write a tag of its own (earshot_text::markup::is_reserved).
                let text = match crate::text::markup::without_reserved(&text) {
                    std::borrow::Cow::Borrowed(_) => text,
                    std::borrow::Cow::Owned(kept) => kept,
                };
                if self.timeline.first_agent_token_ms.is_none() {
                    self.timeline.first_agent_token_ms = Some(self.clock.now_ms());
                }
                self.answer_chars += text.chars().count();
                if self.answer_chars > self.cfg.max_answer_chars {
                    let message = format!("the answer is longer than {} characters", self.cfg.max_answer_chars);
                    return Flow::End(self.fail(ErrorInfo::new(error_codes::ANSWER_TOO_LONG, message, false)).await);
                }
                if let Flow::End(o) = self.send(ServerEvent::Text(TextDelta { text: text.clone() })).await {
                    return Flow::End(o);
                }
                if self.ssml.is_some() {
                    return match self.ssml.as_mut().map(|r| r.push(&text)) {
                        Some(Ok(pieces)) => self.segment_pieces(pieces),
                        Some(Err(e)) => Flow::End(self.fail(invalid_ssml(e)).await),
                        None => Flow::Continue,
                    };
                }
                let speakable = if self.cfg.normalise_markdown { self.normaliser.push(&text) } else { text };
                let sentences: Vec<Sentence> = self.segmenter.push(&speakable).collect();
                if let Flow::End(o) = self.release_all(sentences) {
                    return Flow::End(o);
                }
                self.prepare_first().await
            }
            Some(Ok(AgentEvent::Pause)) => {
                let sentences = self.flush_text();
                self.release_all(sentences)
            }
            Some(Ok(done @ (AgentEvent::Done | AgentEvent::DoneUnmarked))) => {
                self.timeline.agent_done_ms = Some(self.clock.now_ms());
                self.timeline.agent_end_unmarked = done == AgentEvent::DoneUnmarked;
                self.agent_done = true;
                if let Some(reader) = self.ssml.as_mut() {
                    match reader.finish() {
                        Ok(pieces) => {
                            if let Flow::End(o) = self.segment_pieces(pieces) {
                                return Flow::End(o);
                            }
                        }
                        Err(e) => return Flow::End(self.fail(invalid_ssml(e)).await),
                    }
                }
                let sentences = self.flush_text();
                self.release_all(sentences)
            }
            Some(Err(e)) => Flow::End(self.fail(e).await),
            None => {
                let info = ErrorInfo::new(error_codes::AGENT_ENDED, "the agent stopped without finishing its answer", true);
                Flow::End(self.fail(info).await)
            }
        }
    }

    /// The answer's first sentence, told to the session as soon as it would be complete were a sentence to
    /// follow, and again if what it would be changes. It is sent as it will be (`Speak`, released by the
    /// pump) only once the segmenter releases it; the session keeps what it made of the preparation
    /// unheard until then.
    async fn prepare_first(&mut self) -> Flow {
        if !self.cfg.prepare_first_sentence || self.next_index > 0 || !self.queue.is_empty() || self.release != Release::Incremental {
            return Flow::Continue;
        }
        let Some(text) = self.segmenter.pending_sentence().filter(|t| t.chars().any(char::is_alphanumeric)) else { return Flow::Continue };
        if self.prepared.as_ref().is_some_and(|(prepared, _)| *prepared == text) {
            return Flow::Continue;
        }
        self.prepared = Some((text.clone(), self.clock.now_ms()));
        if self.commands.send(SpeechCommand::Prepare(SpeechRequest { index: 0, text, language: None, rate: None, silence_ms: 0 })).await.is_err() {
            let info = ErrorInfo::new(error_codes::BACKEND_GONE, "the speech session ended unexpectedly", true);
            return Flow::End(self.fail(info).await);
        }
        Flow::Continue
    }

    /// What the SSML reader gave, through the segmenter: a boundary (a break, the end of `<s>` or `<p>`)
    /// ends the sentence there.
    fn segment_pieces(&mut self, pieces: Vec<Piece>) -> Flow {
        for piece in pieces {
            let sentences: Vec<Sentence> = match piece {
                Piece::Text(text) => self.segmenter.push(&text).collect(),
                Piece::Boundary => self.segmenter.flush().collect(),
            };
            if let Flow::End(o) = self.release_all(sentences) {
                return Flow::End(o);
            }
        }
        Flow::Continue
    }

    /// Everything pending in the normaliser and the segmenter, as sentences.
    fn flush_text(&mut self) -> Vec<Sentence> {
        let rest = if self.cfg.normalise_markdown { self.normaliser.flush() } else { String::new() };
        let mut sentences: Vec<Sentence> = self.segmenter.push(&rest).collect();
        sentences.extend(self.segmenter.flush());
        sentences
    }

    /// Puts finished sentences in the release queue, marking when their text was complete.
    fn release_all(&mut self, sentences: Vec<Sentence>) -> Flow {
        let now = self.clock.now_ms();
        for sentence in sentences {
            // As the client is shown it (SSML markers left out), and as the voice is sent it.
            let marked = match self.carried_markers.is_empty() {
                true => sentence.text,
                false => std::mem::take(&mut self.carried_markers) + &sentence.text,
            };
            let written = crate::text::markup::written(&marked).trim().to_string();
            // Punctuation alone has nothing to say; a break alone is said with the next sentence.
            if !written.chars().any(char::is_alphanumeric) {
                if crate::text::markup::has_markers(&marked) {
                    self.carried_markers = marked;
                }
                continue;
            }
            let index = self.next_index;
            self.next_index += 1;
            let prepared_ms = self.prepared.as_ref().filter(|(prepared, _)| index == 0 && *prepared == marked).map(|(_, at)| *at);
            self.timeline.sentences.push(SentenceMarks {
                index,
                chars: written.chars().count(),
                complete_ms: now,
                prepared_ms,
                text: written.clone(),
                ..Default::default()
            });
            self.queue.push_back((index, written, marked));
        }
        Flow::Continue
    }

    /// Sends queued sentences to the backend while the policy and the in-flight bound allow.
    async fn pump(&mut self) -> Flow {
        if self.release == Release::Buffered && !self.agent_done {
            return Flow::Continue;
        }
        while self.in_flight < self.cfg.in_flight_bound() {
            let Some((index, text, marked)) = self.queue.pop_front() else { break };
            let now = self.clock.now_ms();
            if let Some(marks) = self.timeline.sentence_mut(index) {
                marks.released_ms = Some(now);
            }
            if let Flow::End(o) = self.send(ServerEvent::Sentence(SentenceText { index, text: text.clone() })).await {
                return Flow::End(o);
            }
            self.speaking.insert(index, Spoken { text: text.clone(), envelope: Some(Envelope::new(self.format.sample_rate)), held: Vec::new(), sent: 0 });
            if self.commands.send(SpeechCommand::Speak(SpeechRequest { index, text: marked, language: None, rate: None, silence_ms: 0 })).await.is_err() {
                let info = ErrorInfo::new(error_codes::BACKEND_GONE, "the speech session ended unexpectedly", true);
                return Flow::End(self.fail(info).await);
            }
            self.in_flight += 1;
        }
        Flow::Continue
    }

    /// Once the agent is done and every sentence has been sent, tells the backend to finish.
    async fn maybe_finish(&mut self) -> Flow {
        if self.agent_done && self.next_index == 0 {
            // Nothing in the whole answer could be spoken: say so rather than end with a silent `done`.
            let message = "the answer has nothing to speak (no letters or digits once formatting is set aside)";
            return Flow::End(self.fail(ErrorInfo::new(error_codes::EMPTY_ANSWER, message, false)).await);
        }
        if self.agent_done && self.queue.is_empty() && !self.finish_sent {
            self.finish_sent = true;
            if self.commands.send(SpeechCommand::Finish).await.is_err() {
                let info = ErrorInfo::new(error_codes::BACKEND_GONE, "the speech session ended unexpectedly", true);
                return Flow::End(self.fail(info).await);
            }
        }
        Flow::Continue
    }

    /// At the end of an answer whose every sentence the voice passed over: the error that says so, rather
    /// than a `done` after which a client would believe it spoke. An answer with one sentence heard, or one
    /// that got no audio for another reason, ends as it ends.
    fn nothing_spoken(&self) -> Option<ErrorInfo> {
        let all_passed_over = !self.passed_over.is_empty() && self.passed_over.len() == self.timeline.sentences.len();
        if !all_passed_over || self.timeline.sentences.iter().any(|s| s.audio_chunks > 0) {
            return None;
        }
        let text = self.passed_over.join(" ");
        let scripts = crate::language::scripts(&text);
        let written = match (scripts.is_empty(), crate::language::detect(&text)) {
            (true, _) => "letters no voice here reads".to_string(),
            (false, Some(language)) => format!("{} script (language {language})", scripts.join(" and ")),
            (false, None) => format!("{} script", scripts.join(" and ")),
        };
        let message = format!("nothing in the answer could be spoken: it is written in {written}, which no voice here can read");
        Some(ErrorInfo::new(error_codes::NOTHING_SPEAKABLE, message, false))
    }

    /// An event of the speech session, handed to its kind's own handler.
    async fn on_speech(&mut self, event: Option<SpeechEvent>) -> Flow {
        match event {
            Some(SpeechEvent::Audio { index, pcm }) => self.on_audio(index, pcm).await,
            Some(SpeechEvent::Words { index, words }) => self.on_words(index, words).await,
            Some(SpeechEvent::Finished { index, report }) => self.on_finished(index, report).await,
            Some(SpeechEvent::Switched(switch)) => self.on_switched(switch).await,
            Some(SpeechEvent::Failed(e)) => Flow::End(self.fail(e).await),
            Some(SpeechEvent::Billed { characters }) => {
                self.timeline.billed_characters = Some(characters);
                Flow::Continue
            }
            Some(SpeechEvent::Closed { billed_characters }) => self.on_closed(billed_characters).await,
            None => {
                let info = ErrorInfo::new(error_codes::BACKEND_GONE, "the speech session ended unexpectedly", true);
                Flow::End(self.fail(info).await)
            }
        }
    }

    /// A chunk of a sentence's audio: timed, kept for the word estimate, encoded and sent.
    async fn on_audio(&mut self, index: u32, pcm: Bytes) -> Flow {
        let now = self.clock.now_ms();
        let Some(marks) = self.timeline.sentence_mut(index) else {
            let info = ErrorInfo::new(error_codes::BACKEND_PROTOCOL, format!("audio for unknown sentence {index}"), false);
            return Flow::End(self.fail(info).await);
        };
        marks.tts_first_audio_ms.get_or_insert(now);
        marks.audio_chunks += 1;
        marks.audio_ms += self.format.duration_ms(pcm.len());
        if let Some(envelope) = self.speaking.get_mut(&index).and_then(|s| s.envelope.as_mut()) {
            envelope.push(&pcm);
        }
        let audio = match self.encoder.as_mut() {
            Some(encoder) => encoder.encode(&pcm),
            None => pcm,
        };
        self.send_audio(index, audio).await
    }

    /// The voice's own word timings for a sentence: sent once some of its audio has been (held until then).
    async fn on_words(&mut self, index: u32, words: Vec<WordTiming>) -> Flow {
        // Heard: some of the sentence's audio has gone to the client (an encoder may still hold the
        // first chunks the backend sent; until then its words wait, in order, with those held).
        let heard = self.speaking.get(&index).map_or_else(|| self.timeline.sentence_mut(index).is_some_and(|m| m.audio_chunks > 0), |s| s.sent > 0);
        if let Some(spoken) = self.speaking.get_mut(&index) {
            spoken.envelope = None;
            if !heard {
                spoken.held.extend(words);
                return Flow::Continue;
            }
        }
        if words.is_empty() {
            return Flow::Continue;
        }
        self.send_words(index, TimingSource::Model, words).await
    }

    /// A sentence finished: what the encoder held, its words (the voice's or estimated), its marks, and
    /// its `sentence_end`.
    async fn on_finished(&mut self, index: u32, report: FinishReport) -> Flow {
        self.in_flight = self.in_flight.saturating_sub(1);
        // What the encoder held of the sentence's audio ends it.
        if let Some(rest) = self.encoder.as_mut().map(|e| e.end_sentence()) {
            if let Flow::End(o) = self.send_audio(index, rest).await {
                return Flow::End(o);
            }
        }
        let words = match self.speaking.remove(&index) {
            // Passed over by the voice: nothing was heard, so no word has a time.
            Some(Spoken { text, .. }) if report.skipped.is_some() => {
                self.passed_over.push(text);
                None
            }
            Some(Spoken { text, envelope: Some(envelope), .. }) => Some((TimingSource::Estimated, estimate(&text, &envelope))),
            // Model words for a sentence that got no audio would end after it: none are sent.
            Some(Spoken { held, sent, .. }) if sent > 0 => Some((TimingSource::Model, held)),
            Some(_) => None,
            None => None,
        };
        if let Some((timing, words)) = words.filter(|(_, w)| !w.is_empty()) {
            if let Flow::End(o) = self.send_words(index, timing, words).await {
                return Flow::End(o);
            }
        }
        let now = self.clock.now_ms();
        let audio_ms = match self.timeline.sentence_mut(index) {
            Some(marks) => {
                marks.tts_done_ms = Some(now);
                marks.backend_held_ms = report.held_ms;
                marks.backend_own_first_audio_ms = report.own_first_audio_ms;
                marks.cached = report.cached;
                marks.audio_ms
            }
            None => 0.0,
        };
        let skipped = report.skipped.map(|s| s.code().to_string());
        self.send(ServerEvent::SentenceEnd(SentenceEnd { index, audio_ms, cached: report.cached, skipped })).await
    }

    /// Another session speaks from here (a failover, or the language the first sentence settled): the
    /// client is told in a second `session`.
    async fn on_switched(&mut self, switch: Switch) -> Flow {
        // The sentences in flight stay in flight: the new session speaks them again, and its words
        // are timed afresh.
        self.format = switch.format.clone();
        let client_format = match self.encoder.as_mut() {
            Some(encoder) => {
                encoder.source(&switch.format);
                encoder.output()
            }
            None => switch.format.clone(),
        };
        for spoken in self.speaking.values_mut() {
            spoken.envelope = Some(Envelope::new(switch.format.sample_rate));
            spoken.held.clear();
        }
        let from = std::mem::replace(&mut self.timeline.backend, switch.backend.clone());
        match (switch.reason, &switch.language) {
            (Some(BackendReason::Language) | None, Some(language)) => {
                self.timeline.language = Some(language.to_string());
                if from != switch.backend {
                    self.timeline.language_from = Some(from);
                }
            }
            _ => self.timeline.failover_from = Some(switch.cause.code.clone()),
        }
        let detected = switch.language.is_some().then_some(LanguageSource::Detected);
        self.info = SessionInfo {
            backend: switch.backend,
            backend_reason: switch.reason.unwrap_or(self.info.backend_reason),
            voice: switch.voice,
            audio: client_format,
            language: switch.language.or_else(|| self.info.language.clone()),
            language_source: detected.or(self.info.language_source),
            ..self.info.clone()
        };
        self.send(ServerEvent::Session(self.info.clone())).await
    }

    /// The session closed: `done` where the answer was spoken whole, else the failure that says why not.
    async fn on_closed(&mut self, billed_characters: Option<u64>) -> Flow {
        self.timeline.billed_characters = billed_characters;
        if self.agent_done && self.finish_sent && self.in_flight == 0 {
            if let Some(info) = self.nothing_spoken() {
                return Flow::End(self.fail(info).await);
            }
            self.timeline.done_ms = Some(self.clock.now_ms());
            let done = ServerEvent::Done(Done { timeline: self.timeline.clone() });
            match self.send(done).await {
                Flow::Continue => Flow::End(Outcome::Completed),
                end => end,
            }
        } else {
            let info = ErrorInfo::new(error_codes::BACKEND_CLOSED, "the speech session closed before the answer was spoken", true);
            Flow::End(self.fail(info).await)
        }
    }
}
