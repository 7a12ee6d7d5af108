//! One conversation with the Kokoro container, whatever carries its messages: a direct WebSocket
//! (local runs) or SageMaker's bidirectional stream (production). Each sentence is a `synthesize`
//! request named after its index; audio frames name their request, so audio of a cancelled sentence
//! can never be taken for the next one's. When the conversation ends early, every live request is
//! cancelled at the container.
//!
//! A sentence the container refuses as unspeakable (`unsupported_script`: no letter its voice's front
//! end reads) is passed over, not the end of the answer: it is told as finished and skipped
//! ([`Skipped`]) once every sentence before it has ended (the refusal comes at once, while earlier
//! sentences still speak), and the sentences after it are spoken.
//!
//! A preparation withdrawn (the first sentence turned out otherwise) is a normal ending, whatever the
//! container says of it: on a GPU the container has often finished it before the `cancel` arrives, and
//! answers `cancelled` for an id it no longer has (or, before protocol 1.1, an `unknown_request` error).
//! Every late event about a withdrawn id is dropped; none ends the conversation or moves it to another arm.
//!
//! A container that is stopping (SageMaker's SIGTERM: scale-in, a new deployment) says `draining` and serves
//! its requests to their end. The session then moves between sentences: what it has sent there finishes
//! there, later sentences wait (in order, already counted as live) until the last of those has ended, and
//! then go on a new stream of the same endpoint ([`Reopen`]), which SageMaker routes to a container that is
//! not stopping. So no sentence is cut, no voice changes mid-answer, and the only cost is a gap between two
//! sentences while the new stream opens. Where no new stream can be opened, the sentences go on the old one
//! (which serves until its drain ends).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use earshot_core::language::Language;
use earshot_core::protocol::AudioFormat;
use earshot_core::speech::{FinishReport, SessionOptions, Skipped, SpeechCommand, SpeechError, SpeechEvent, SpeechRequest, SpeechSession};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::kokoro_wire::{self, ControlMessage};
use earshot_core::error::codes as error_codes;
use earshot_core::words::SpokenMap;

/// Kokoro renders 24 kHz mono PCM.
pub const KOKORO_SAMPLE_RATE: u32 = 24_000;
/// Events a session may hold before it stops reading from the container.
const EVENT_CHANNEL: usize = 32;
const COMMAND_CHANNEL: usize = 32;

/// A message from the container: control as text, audio as binary. The transport says which; the
/// bytes are never looked at to decide.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// A text frame: a JSON control message.
    Text(String),
    /// A binary frame: audio that names its request.
    Binary(Bytes),
}

/// A transport failure, as the client will see it.
pub type TransportError = earshot_core::error::Error;

/// What carries the container's messages. `recv` must be cancel-safe (it is raced in a select).
#[async_trait]
pub trait ContainerTransport: Send + Sync + 'static {
    /// Sends one control message (JSON) to the container as text.
    async fn send_text(&mut self, text: String) -> Result<(), TransportError>;
    /// The next message; `None` when the connection has ended.
    async fn recv(&mut self) -> Option<Result<Frame, TransportError>>;
    /// Closes the connection; errors are not reported.
    async fn close(&mut self);
}

/// Opens a new transport to the same container service: where a session moves when its container drains.
pub type Reopen<T> = Box<dyn Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, TransportError>> + Send>> + Send + Sync>;

/// Starts a session on an open transport; `speed` is the deployment's own (1.0: the model's), which the
/// session's speaking rate multiplies.
pub fn start<T: ContainerTransport>(transport: T, options: SessionOptions, speed: f32) -> SpeechSession {
    start_movable(transport, None, options, speed)
}

/// As [`start`], and where the container drains, the session moves to a transport `reopen` opens.
pub fn start_movable<T: ContainerTransport>(transport: T, reopen: Option<Reopen<T>>, options: SessionOptions, speed: f32) -> SpeechSession {
    let deployment_speed = speed;
    let speed = (speed * options.speaking_rate.factor()).clamp(0.5, 2.0);
    let (commands_tx, commands_rx) = mpsc::channel(COMMAND_CHANNEL);
    let (events_tx, events_rx) = mpsc::channel(EVENT_CHANNEL);
    let session = Session {
        transport,
        events: events_tx,
        cancel: options.cancel.clone(),
        voice: options.voice.clone(),
        language: options.language.clone(),
        deployment_speed,
        speed,
        live: HashMap::new(),
        prepared: None,
        preparations: 0,
        skipped: BTreeSet::new(),
        withdrawn: VecDeque::new(),
        reopen,
        draining: None,
    };
    earshot_core::tasks::spawn(session.drive(commands_rx));
    SpeechSession { commands: commands_tx, events: events_rx, format: AudioFormat::pcm_s16le(KOKORO_SAMPLE_RATE), voice: options.voice }
}

/// A sentence sent to the container before it was certain: its id there, the request it was prepared as,
/// and what came of it so far, for the scheduler once a `Speak` confirms it.
struct Prepared {
    id: String,
    request: SpeechRequest,
    held: Vec<SpeechEvent>,
}

struct Session<T> {
    transport: T,
    events: mpsc::Sender<SpeechEvent>,
    cancel: CancellationToken,
    voice: String,
    /// Sent with each sentence, so the container reads it with that language's front end (it would
    /// otherwise tell the language by script alone, and read French as English).
    language: Option<Language>,
    /// The deployment's speed, which a sentence's own rate (an SSML `<prosody rate>`) multiplies.
    deployment_speed: f32,
    /// The deployment's speed at the session's rate.
    speed: f32,
    /// Request id → sentence index, for requests sent and not yet ended, with the map from the words the
    /// container times (those of the spoken form it was sent) to the sentence's written words.
    live: HashMap<String, (u32, SpokenMap)>,
    /// The sentence prepared and not yet confirmed (see [`SpeechCommand::Prepare`]), and how many have been.
    prepared: Option<Prepared>,
    preparations: u32,
    /// Sentences the container refused as unspeakable, not yet told: each waits for the sentences
    /// before it to end, so that the scheduler hears of the sentences in order.
    skipped: BTreeSet<u32>,
    /// Preparations withdrawn whose `cancel` the container has not answered yet (at most
    /// [`WITHDRAWN_KEPT`], the oldest forgotten first): what it says of them is not an error.
    withdrawn: VecDeque<String>,
    /// Opens the transport the session moves to when its container drains.
    reopen: Option<Reopen<T>>,
    /// The container said `draining`: what was sent to it, and what waits for the move.
    draining: Option<Draining>,
}

/// A move between streams under way (see the module docs).
struct Draining {
    /// The requests the draining container has, which it serves to their end.
    sent: BTreeSet<String>,
    /// Messages for the new stream, in order (requests under their id, the session's `close` under none).
    waiting: Vec<(Option<String>, String)>,
}

/// Withdrawn preparations remembered at once; an answer is a message away, and a conversation withdraws
/// at most a few.
const WITHDRAWN_KEPT: usize = 16;

/// What the driver does next.
enum Next {
    Go,
    /// Stop, cancelling what is live at the container.
    Abandon,
    /// Stop; the session is over at the container too.
    Stop,
}

impl<T: ContainerTransport> Session<T> {
    async fn drive(mut self, mut commands: mpsc::Receiver<SpeechCommand>) {
        let mut finishing = false;
        loop {
            let next = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => Next::Abandon,
                command = commands.recv(), if !finishing => match command {
                    Some(SpeechCommand::Speak(request)) => self.speak(request).await,
                    Some(SpeechCommand::Prepare(request)) => self.prepare(request).await,
                    Some(SpeechCommand::Finish) => {
                        finishing = true;
                        self.finish().await
                    }
                    // Dropped without Finish: the conversation is over.
                    None => Next::Abandon,
                },
                frame = self.transport.recv() => match self.on_frame(frame).await {
                    // A request the draining container had may have ended: the move, once it has none.
                    Next::Go if self.draining.is_some() => self.move_when_served().await,
                    other => other,
                },
            };
            match next {
                Next::Go => {}
                Next::Stop => {
                    self.transport.close().await;
                    return;
                }
                Next::Abandon => {
                    self.abandon().await;
                    return;
                }
            }
        }
    }

    /// The container drains: the requests it has are the last it is sent (unless no new stream opens).
    fn on_draining(&mut self) -> Next {
        if self.reopen.is_some() && self.draining.is_none() {
            tracing::info!("the Kokoro container is stopping: the next sentences go on a new stream once its {} end", self.live.len());
            self.draining = Some(Draining { sent: self.live.keys().cloned().collect(), waiting: Vec::new() });
        }
        Next::Go
    }

    /// Once the draining container has ended the requests it has: a new stream, and what waited, sent on it.
    async fn move_when_served(&mut self) -> Next {
        let Some(draining) = &self.draining else { return Next::Go };
        // Nothing to send yet (or ever: the session may end on the old stream): the move waits for a message.
        if draining.waiting.is_empty() || draining.sent.iter().any(|id| self.live.contains_key(id)) {
            return Next::Go;
        }
        let Some(draining) = self.draining.take() else { return Next::Go };
        let reopen = self.reopen.as_ref().expect("a move is begun only with a way to reopen");
        match reopen().await {
            Ok(fresh) => {
                let mut old = std::mem::replace(&mut self.transport, fresh);
                let _ = old.send_text(kokoro_wire::close()).await;
                old.close().await;
                tracing::info!("moved to a new stream: {} message(s) sent on it", draining.waiting.len());
            }
            Err(e) => tracing::warn!("no new stream ({}): the next sentences go on the stopping container", earshot_core::redact::redact(&e.message)),
        }
        for (_, message) in draining.waiting {
            if let Next::Stop = self.send_now(message).await {
                return Next::Stop;
            }
        }
        Next::Go
    }

    /// Sends `request` under `id`, and keeps it live.
    async fn synthesize(&mut self, id: String, request: &SpeechRequest) -> Next {
        // The container's front ends read digits but not `1er`, `10 h 30`, `¥12.5` or a phone number
        // as a speaker would: the sentence goes in its spoken form for its language, or, untold, for
        // the language the container reads its script in (captions keep the text as written).
        let language = request.language.as_ref().or(self.language.as_ref());
        let reading = language.cloned().unwrap_or_else(|| earshot_core::text::language::read_by_script(&request.text));
        let text = earshot_core::text::spoken::spoken(&request.text, &reading);
        let speed = request.rate.map_or(self.speed, |rate| (self.deployment_speed * rate.factor()).clamp(0.5, 2.0));
        let message = kokoro_wire::synthesize(&id, &text, &self.voice, language, speed);
        self.live.insert(id.clone(), (request.index, SpokenMap::new(&request.text, &text)));
        self.send(Some(id), message).await
    }

    /// A sentence to speak: the one prepared, if it is that one (what it made so far is passed on now), else
    /// sent (a preparation it replaces is cancelled).
    async fn speak(&mut self, request: SpeechRequest) -> Next {
        if let Some(prepared) = self.prepared.take() {
            if prepared.request == request {
                for event in prepared.held {
                    if let Next::Abandon = self.emit(event).await {
                        return Next::Abandon;
                    }
                }
                return Next::Go;
            }
            if let Next::Stop = self.withdraw(&prepared.id).await {
                return Next::Stop;
            }
        }
        self.synthesize(format!("s{}", request.index), &request).await
    }

    /// The sentence most likely next (see [`SpeechCommand::Prepare`]): sent now under an id of its own, what
    /// comes of it held until a `Speak` confirms it; a preparation before it is cancelled.
    async fn prepare(&mut self, request: SpeechRequest) -> Next {
        if let Some(before) = self.prepared.take() {
            if let Next::Stop = self.withdraw(&before.id).await {
                return Next::Stop;
            }
        }
        self.preparations += 1;
        let id = format!("p{}-{}", request.index, self.preparations);
        self.prepared = Some(Prepared { id: id.clone(), request: request.clone(), held: Vec::new() });
        self.synthesize(id, &request).await
    }

    /// Cancels a preparation at the container: nothing more of it is passed on.
    async fn withdraw(&mut self, id: &str) -> Next {
        self.live.remove(id);
        if self.withdrawn.len() >= WITHDRAWN_KEPT {
            self.withdrawn.pop_front();
        }
        self.withdrawn.push_back(id.to_string());
        // While the container drains: a request it has is cancelled there; one still waiting is simply not sent.
        if let Some(draining) = self.draining.as_mut() {
            if !draining.sent.contains(id) {
                draining.waiting.retain(|(waiting, _)| waiting.as_deref() != Some(id));
                self.withdrawn.pop_back();
                return self.move_when_served().await;
            }
            return self.send_now(kokoro_wire::cancel(id)).await;
        }
        self.send_now(kokoro_wire::cancel(id)).await
    }

    /// The conversation has no more sentences: `close`, where the last of them goes.
    async fn finish(&mut self) -> Next {
        match &self.draining {
            // Nothing waits for a new stream: the draining container closes the session as it ends.
            Some(draining) if draining.waiting.is_empty() => {
                self.draining = None;
                self.send_now(kokoro_wire::close()).await
            }
            _ => self.send(None, kokoro_wire::close()).await,
        }
    }

    /// Whether `id` is a withdrawn preparation, forgetting it once the container has answered for it.
    fn answered_withdrawal(&mut self, id: &str) -> bool {
        match self.withdrawn.iter().position(|w| w == id) {
            Some(at) => {
                self.withdrawn.remove(at);
                true
            }
            None => false,
        }
    }

    /// Sends a message (a request's under its `id`), or keeps it for the new stream while the container drains.
    async fn send(&mut self, id: Option<String>, text: String) -> Next {
        if let Some(draining) = self.draining.as_mut() {
            draining.waiting.push((id, text));
            return self.move_when_served().await;
        }
        self.send_now(text).await
    }

    async fn send_now(&mut self, text: String) -> Next {
        match self.transport.send_text(text).await {
            Ok(()) => Next::Go,
            Err(e) => {
                self.report(e.code.as_str(), e.message, e.retryable).await;
                Next::Stop
            }
        }
    }

    /// Tells the scheduler of each skipped sentence that no live one comes before.
    async fn tell_skipped(&mut self) -> Next {
        let first_live = self.live.values().map(|(index, _)| *index).min();
        while let Some(&index) = self.skipped.first() {
            if first_live.is_some_and(|live| live < index) {
                break;
            }
            self.skipped.pop_first();
            let report = FinishReport { skipped: Some(Skipped::UnsupportedScript), ..Default::default() };
            if let Next::Abandon = self.emit(SpeechEvent::Finished { index, report }).await {
                return Next::Abandon;
            }
        }
        Next::Go
    }

    /// Hands an event to the scheduler, unless the conversation ends first; one of the sentence being
    /// prepared is held until it is confirmed.
    async fn emit(&mut self, event: SpeechEvent) -> Next {
        if let Some(prepared) = self.prepared.as_mut() {
            let index = match &event {
                SpeechEvent::Audio { index, .. } | SpeechEvent::Words { index, .. } | SpeechEvent::Finished { index, .. } => Some(*index),
                _ => None,
            };
            if index == Some(prepared.request.index) {
                prepared.held.push(event);
                return Next::Go;
            }
        }
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Next::Abandon,
            sent = self.events.send(event) => if sent.is_ok() { Next::Go } else { Next::Abandon },
        }
    }

    async fn report(&mut self, code: &str, message: String, retryable: bool) {
        let _ = self.emit(SpeechEvent::Failed(SpeechError::new(code, message, retryable))).await;
    }

    async fn on_frame(&mut self, frame: Option<Result<Frame, TransportError>>) -> Next {
        match frame {
            Some(Ok(Frame::Text(text))) => match kokoro_wire::parse_control(&text) {
                Ok(ControlMessage::Start { sample_rate, .. }) if sample_rate != KOKORO_SAMPLE_RATE => {
                    self.report(error_codes::BACKEND_PROTOCOL, format!("the container speaks at {sample_rate} Hz, not {KOKORO_SAMPLE_RATE}"), false).await;
                    Next::Abandon
                }
                Ok(ControlMessage::Start { .. }) | Ok(ControlMessage::Unknown) => Next::Go,
                Ok(ControlMessage::Draining { .. }) => self.on_draining(),
                Ok(ControlMessage::Words { request_id, words }) => match self.live.get_mut(&request_id) {
                    Some((index, map)) => {
                        let (index, words) = (*index, map.push(words));
                        if words.is_empty() {
                            return Next::Go;
                        }
                        self.emit(SpeechEvent::Words { index, words }).await
                    }
                    None => Next::Go,
                },
                Ok(ControlMessage::End { request_id, held_seconds, first_audio_seconds, queued_seconds }) => match self.live.remove(&request_id) {
                    Some((index, mut map)) => {
                        let owed = map.finish();
                        if map.timed_any() && !owed.is_empty() {
                            if let Next::Abandon = self.emit(SpeechEvent::Words { index, words: owed }).await {
                                return Next::Abandon;
                            }
                        }
                        let own_first_audio_ms = first_audio_seconds.map(|first| (first + queued_seconds.unwrap_or(0.0)) * 1000.0);
                        let report = FinishReport { held_ms: held_seconds.map(|s| s * 1000.0), own_first_audio_ms, cached: false, skipped: None };
                        match self.emit(SpeechEvent::Finished { index, report }).await {
                            Next::Go => self.tell_skipped().await,
                            other => other,
                        }
                    }
                    None => Next::Go,
                },
                Ok(ControlMessage::Cancelled { request_id, .. }) => {
                    self.answered_withdrawal(&request_id);
                    self.live.remove(&request_id);
                    self.tell_skipped().await
                }
                // What the container says of a withdrawn preparation (an `unknown_request` from a container
                // of the protocol before 1.1, for an id it had finished): the withdrawal's normal end.
                Ok(ControlMessage::Error { request_id: Some(id), code, .. }) if self.answered_withdrawal(&id) => {
                    tracing::debug!("the Kokoro container answered the withdrawal of {id} with {code}: nothing to do");
                    Next::Go
                }
                // A preparation the container refused: dropped; the sentence, if it comes, is sent as any other.
                Ok(ControlMessage::Error { request_id: Some(id), .. }) if self.prepared.as_ref().is_some_and(|p| p.id == id) => {
                    self.prepared = None;
                    self.live.remove(&id);
                    Next::Go
                }
                Ok(ControlMessage::Error { code, message, request_id })
                    if code == "unsupported_script" && request_id.as_ref().is_some_and(|id| self.live.contains_key(id)) =>
                {
                    let (index, _) = self.live.remove(request_id.as_deref().unwrap_or_default()).expect("a live request");
                    tracing::info!("the Kokoro container cannot speak sentence {index} ({}): passed over", earshot_core::redact::redact(&message));
                    self.skipped.insert(index);
                    self.tell_skipped().await
                }
                Ok(ControlMessage::Error { code, message, request_id }) => {
                    if let Some(id) = &request_id {
                        self.live.remove(id);
                    }
                    let retryable = matches!(code.as_str(), "queue_full" | "not_ready" | "synthesis_failed");
                    self.report(&format!("tts_{code}"), format!("the Kokoro container: {message}"), retryable).await;
                    Next::Abandon
                }
                Ok(ControlMessage::Closed {}) => {
                    if let Next::Abandon = self.tell_skipped().await {
                        return Next::Abandon;
                    }
                    let _ = self.emit(SpeechEvent::Closed { billed_characters: None }).await;
                    Next::Stop
                }
                Err(e) => {
                    self.report(error_codes::BACKEND_PROTOCOL, e, false).await;
                    Next::Abandon
                }
            },
            Some(Ok(Frame::Binary(frame))) => match kokoro_wire::parse_audio(frame) {
                Ok(Some(audio)) => match self.live.get(&audio.request_id) {
                    Some(&(index, _)) => self.emit(SpeechEvent::Audio { index, pcm: audio.pcm }).await,
                    None => Next::Go,
                },
                Ok(None) => Next::Go,
                Err(e) => {
                    self.report(error_codes::BACKEND_PROTOCOL, e, false).await;
                    Next::Abandon
                }
            },
            None => {
                self.report(error_codes::BACKEND_GONE, "the Kokoro container closed the connection".into(), true).await;
                Next::Stop
            }
            Some(Err(e)) => {
                self.report(&e.code, e.message, e.retryable).await;
                Next::Stop
            }
        }
    }

    /// Cancels every live request at the container and closes the session, without waiting long.
    async fn abandon(&mut self) {
        let ids: Vec<String> = self.live.keys().cloned().collect();
        let work = async {
            for id in ids {
                self.transport.send_text(kokoro_wire::cancel(&id)).await?;
            }
            self.transport.send_text(kokoro_wire::close()).await?;
            self.transport.close().await;
            Ok::<(), TransportError>(())
        };
        if let Ok(Err(e)) = tokio::time::timeout(Duration::from_secs(1), work).await {
            tracing::debug!("closing the Kokoro session: {}", earshot_core::redact::redact(&e.message));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for a container as fast as a GPU's, speaking the protocol as `infra/kokoro/PROTOCOL.md`
    /// documents it: a `synthesize` is answered at once with its `start`, one audio frame and its `end`, so
    /// that it has finished before any `cancel` can reach it; a `cancel` for a finished id is answered as a
    /// container of protocol 1.1 does (`cancelled`, `live: false`) or, `before_1_1`, with the
    /// `unknown_request` error a container of the version before sent.
    struct FastContainer {
        frames: mpsc::UnboundedSender<Frame>,
        incoming: mpsc::UnboundedReceiver<Frame>,
        before_1_1: bool,
        /// The type and request id of every message it was sent, in order.
        got: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    }

    impl FastContainer {
        fn new(before_1_1: bool) -> Self {
            let (frames, incoming) = mpsc::unbounded_channel();
            FastContainer { frames, incoming, before_1_1, got: Default::default() }
        }

        fn say(&self, message: serde_json::Value) {
            let _ = self.frames.send(Frame::Text(message.to_string()));
        }
    }

    #[async_trait]
    impl ContainerTransport for FastContainer {
        async fn send_text(&mut self, text: String) -> Result<(), TransportError> {
            let message: serde_json::Value = serde_json::from_str(&text).expect("JSON");
            let id = message["request_id"].as_str().unwrap_or_default().to_string();
            self.got.lock().unwrap().push(format!("{} {id}", message["type"].as_str().unwrap_or_default()).trim().to_string());
            match message["type"].as_str() {
                Some("synthesize") => {
                    self.say(serde_json::json!({"type": "start", "v": 1, "request_id": id, "sample_rate": KOKORO_SAMPLE_RATE}));
                    let mut frame = vec![0x01, id.len() as u8];
                    frame.extend_from_slice(id.as_bytes());
                    frame.extend_from_slice(&0u32.to_be_bytes());
                    frame.extend_from_slice(&[0u8; 480]);
                    let _ = self.frames.send(Frame::Binary(Bytes::from(frame)));
                    self.say(serde_json::json!({"type": "end", "v": 1, "request_id": id}));
                }
                Some("cancel") if self.before_1_1 => {
                    let message = format!("no queued or running request '{id}'");
                    self.say(serde_json::json!({"type": "error", "v": 1, "code": "unknown_request", "message": message, "request_id": id}));
                }
                Some("cancel") => self.say(serde_json::json!({"type": "cancelled", "v": 1, "request_id": id, "live": false})),
                Some("close") => self.say(serde_json::json!({"type": "closed", "v": 1})),
                _ => {}
            }
            Ok(())
        }

        async fn recv(&mut self) -> Option<Result<Frame, TransportError>> {
            self.incoming.recv().await.map(Ok)
        }

        async fn close(&mut self) {}
    }

    fn options() -> SessionOptions {
        SessionOptions {
            voice: "af_heart".into(),
            language: None,
            sample_rate: None,
            speaking_rate: earshot_core::speech::SpeakingRate::NORMAL,
            conversation_id: "c".into(),
            cancel: CancellationToken::new(),
        }
    }

    fn request(text: &str) -> SpeechRequest {
        SpeechRequest { index: 0, text: text.into(), language: None, rate: None, silence_ms: 0 }
    }

    /// Prepares "It costs 3." (finished by the container at once), then speaks what the sentence turned out
    /// to be; `settle` lets the preparation's end reach the session before the withdrawal (else the cancel
    /// crosses the container's `end`). Every event the scheduler is told, in order.
    async fn withdrawn_then_spoken(before_1_1: bool, settle: bool) -> Vec<SpeechEvent> {
        let mut session = start(FastContainer::new(before_1_1), options(), 1.0);
        session.commands.send(SpeechCommand::Prepare(request("It costs 3."))).await.unwrap();
        if settle {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        session.commands.send(SpeechCommand::Speak(request("It costs 3.50 today."))).await.unwrap();
        session.commands.send(SpeechCommand::Finish).await.unwrap();
        let mut events = Vec::new();
        while let Some(event) = tokio::time::timeout(Duration::from_secs(5), session.events.recv()).await.expect("the session ends") {
            let closed = matches!(event, SpeechEvent::Closed { .. });
            events.push(event);
            if closed {
                break;
            }
        }
        events
    }

    #[tokio::test]
    async fn a_draining_container_is_sent_nothing_more_and_the_next_sentence_goes_on_a_new_stream() {
        let old = FastContainer::new(false);
        old.say(serde_json::json!({"type": "draining", "v": 1, "seconds": 20}));
        let (sent_old, fresh) = (old.got.clone(), FastContainer::new(false));
        let sent_new = fresh.got.clone();
        let fresh = std::sync::Mutex::new(Some(fresh));
        let reopen: Reopen<FastContainer> = Box::new(move || {
            let next = fresh.lock().unwrap().take();
            Box::pin(async move { next.ok_or_else(|| TransportError::new("backend_gone", "one new stream only", true)) })
        });
        let mut session = start_movable(old, Some(reopen), options(), 1.0);
        let mut events = Vec::new();
        for index in 0..2 {
            session.commands.send(SpeechCommand::Speak(SpeechRequest { index, ..request("Hello there.") })).await.unwrap();
            loop {
                let event = tokio::time::timeout(Duration::from_secs(5), session.events.recv()).await.expect("an event").expect("the session");
                let finished = matches!(event, SpeechEvent::Finished { index: i, .. } if i == index);
                events.push(event);
                if finished {
                    break;
                }
            }
        }
        session.commands.send(SpeechCommand::Finish).await.unwrap();
        let closed = tokio::time::timeout(Duration::from_secs(5), session.events.recv()).await.expect("the session ends");
        assert!(matches!(closed, Some(SpeechEvent::Closed { .. })), "{closed:?}");
        assert!(!events.iter().any(|e| matches!(e, SpeechEvent::Failed(_))), "{events:?}");
        // The stopping container finished what it had and was closed; the next sentence and the end went anew.
        assert_eq!(*sent_old.lock().unwrap(), ["synthesize s0", "close"]);
        assert_eq!(*sent_new.lock().unwrap(), ["synthesize s1", "close"]);
    }

    #[tokio::test]
    async fn a_preparation_finished_before_its_withdrawal_is_withdrawn_and_the_answer_goes_on() {
        for before_1_1 in [false, true] {
            for settle in [true, false] {
                let events = withdrawn_then_spoken(before_1_1, settle).await;
                let case = format!("before 1.1: {before_1_1}, end read before the withdrawal: {settle}: {events:?}");
                assert!(!events.iter().any(|e| matches!(e, SpeechEvent::Failed(_))), "no error: {case}");
                let audio: usize = events.iter().map(|e| if let SpeechEvent::Audio { pcm, .. } = e { pcm.len() } else { 0 }).sum();
                assert_eq!(audio, 480, "the sentence as spoken, once, and nothing of the withdrawn preparation: {case}");
                assert_eq!(events.iter().filter(|e| matches!(e, SpeechEvent::Finished { index: 0, .. })).count(), 1, "{case}");
                assert!(matches!(events.last(), Some(SpeechEvent::Closed { .. })), "{case}");
            }
        }
    }
}
