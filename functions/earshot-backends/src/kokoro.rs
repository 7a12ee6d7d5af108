//! The Kokoro container as a backend, over its WebSocket contract. One WebSocket per conversation
//! carries every sentence: each is a `synthesize` request named after its sentence index, and the
//! audio frames that come back say which request they belong to, so the audio of a cancelled
//! sentence can never be taken for the next one's.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use earshot_core::protocol::AudioFormat;
use earshot_core::speech::{SessionOptions, SpeechBackend, SpeechCommand, SpeechError, SpeechEvent, SpeechSession, Voice};
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tokio_util::sync::CancellationToken;

use crate::kokoro_wire::{self, ControlMessage};

/// Kokoro renders 24 kHz mono PCM.
pub const KOKORO_SAMPLE_RATE: u32 = 24_000;
/// Events a session may hold before it stops reading from the container.
const EVENT_CHANNEL: usize = 32;
const COMMAND_CHANNEL: usize = 32;

/// Where the container is and how to speak.
#[derive(Debug, Clone)]
pub struct KokoroConfig {
    /// The container's base URL, e.g. `http://127.0.0.1:8080`.
    pub url: String,
    /// The voice when a request names none; the container's English default when unset.
    pub default_voice: Option<String>,
    pub speed: f32,
    pub connect_timeout: Duration,
}

impl Default for KokoroConfig {
    fn default() -> Self {
        KokoroConfig { url: "http://127.0.0.1:8080".into(), default_voice: None, speed: 1.0, connect_timeout: Duration::from_secs(5) }
    }
}

#[derive(Deserialize)]
struct VoiceList {
    default_voices: HashMap<String, String>,
    voices: Vec<VoiceEntry>,
}

#[derive(Deserialize)]
struct VoiceEntry {
    name: String,
    language: String,
    #[serde(default)]
    gender: String,
}

/// The Kokoro backend.
pub struct KokoroBackend {
    cfg: KokoroConfig,
    http: reqwest::Client,
    voices: Vec<Voice>,
    default_voice: String,
}

impl KokoroBackend {
    /// Connects to the container and reads its voices, waiting up to `wait` for it to be ready.
    pub async fn connect(cfg: KokoroConfig, wait: Duration) -> Result<Self, SpeechError> {
        let http = reqwest::Client::builder().timeout(cfg.connect_timeout).build().map_err(|e| SpeechError::new("backend_config", e.to_string(), false))?;
        let deadline = tokio::time::Instant::now() + wait;
        let base = cfg.url.trim_end_matches('/').to_string();
        let list: VoiceList = loop {
            let ready = http.get(format!("{base}/ping")).send().await.map(|r| r.status().is_success()).unwrap_or(false);
            if ready {
                match http.get(format!("{base}/voices")).send().await {
                    Ok(r) if r.status().is_success() => match r.json().await {
                        Ok(list) => break list,
                        Err(e) => return Err(SpeechError::new("backend_protocol", format!("unreadable voice list from {base}: {e}"), false)),
                    },
                    _ => {}
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(SpeechError::new("backend_unreachable", format!("the Kokoro container at {base} is not ready"), true));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let voices: Vec<Voice> = list
            .voices
            .into_iter()
            .map(|v| Voice { description: format!("Kokoro {} voice ({})", v.language, if v.gender.is_empty() { "unspecified" } else { &v.gender }), id: v.name, language: v.language })
            .collect();
        let default_voice = match &cfg.default_voice {
            Some(v) if voices.iter().any(|x| &x.id == v) => v.clone(),
            Some(v) => return Err(SpeechError::new("unknown_voice", format!("the Kokoro container has no voice `{v}`"), false)),
            None => list.default_voices.get("en").cloned().or_else(|| voices.first().map(|v| v.id.clone())).unwrap_or_default(),
        };
        Ok(KokoroBackend { cfg: KokoroConfig { url: base, ..cfg }, http, voices, default_voice })
    }

    fn ws_url(&self) -> String {
        let base = &self.cfg.url;
        let rest = base.strip_prefix("http://").map(|r| format!("ws://{r}")).or_else(|| base.strip_prefix("https://").map(|r| format!("wss://{r}"))).unwrap_or_else(|| base.clone());
        format!("{rest}/invocations-bidirectional-stream")
    }
}

#[async_trait]
impl SpeechBackend for KokoroBackend {
    fn name(&self) -> &str {
        "kokoro"
    }

    fn voices(&self) -> Vec<Voice> {
        self.voices.clone()
    }

    fn default_voice(&self) -> String {
        self.default_voice.clone()
    }

    async fn open(&self, options: SessionOptions) -> Result<SpeechSession, SpeechError> {
        let url = self.ws_url();
        let connect = tokio_tungstenite::connect_async(url.as_str());
        let ws = match tokio::time::timeout(self.cfg.connect_timeout, connect).await {
            Ok(Ok((ws, _))) => ws,
            Ok(Err(e)) => return Err(SpeechError::new("backend_unreachable", format!("cannot reach the Kokoro container at {url}: {e}"), true)),
            Err(_) => return Err(SpeechError::new("backend_unreachable", format!("the Kokoro container at {url} did not answer in time"), true)),
        };
        let (commands_tx, commands_rx) = mpsc::channel(COMMAND_CHANNEL);
        let (events_tx, events_rx) = mpsc::channel(EVENT_CHANNEL);
        let session = Session { ws, events: events_tx, cancel: options.cancel.clone(), voice: options.voice.clone(), speed: self.cfg.speed, live: HashMap::new() };
        tokio::spawn(session.drive(commands_rx));
        Ok(SpeechSession { commands: commands_tx, events: events_rx, format: AudioFormat::pcm_s16le(KOKORO_SAMPLE_RATE), voice: options.voice })
    }

    async fn health(&self) -> Result<(), SpeechError> {
        let url = format!("{}/ping", self.cfg.url);
        match self.http.get(&url).send().await {
            Ok(r) if r.status().is_success() => Ok(()),
            Ok(r) => Err(SpeechError::new("backend_not_ready", format!("{url} answered {}", r.status()), true)),
            Err(e) => Err(SpeechError::new("backend_unreachable", format!("{url}: {e}"), true)),
        }
    }
}

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// One conversation's WebSocket and the requests live on it.
struct Session {
    ws: Ws,
    events: mpsc::Sender<SpeechEvent>,
    cancel: CancellationToken,
    voice: String,
    speed: f32,
    /// Request id → sentence index, for requests sent and not yet ended.
    live: HashMap<String, u32>,
}

/// What the driver does next.
enum Next {
    Go,
    /// Stop, cancelling what is live at the container.
    Abandon,
    /// Stop; the container has already ended the session.
    Stop,
}

impl Session {
    async fn drive(mut self, mut commands: mpsc::Receiver<SpeechCommand>) {
        let mut finishing = false;
        loop {
            let next = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => Next::Abandon,
                command = commands.recv(), if !finishing => match command {
                    Some(SpeechCommand::Speak(request)) => {
                        let id = format!("s{}", request.index);
                        let message = kokoro_wire::synthesize(&id, &request.text, &self.voice, self.speed);
                        self.live.insert(id, request.index);
                        self.send(message).await
                    }
                    Some(SpeechCommand::Finish) => {
                        finishing = true;
                        self.send(kokoro_wire::close()).await
                    }
                    // Dropped without Finish: the conversation is over.
                    None => Next::Abandon,
                },
                message = self.ws.next() => self.on_message(message).await,
            };
            match next {
                Next::Go => {}
                Next::Stop => return,
                Next::Abandon => {
                    self.abandon().await;
                    return;
                }
            }
        }
    }

    async fn send(&mut self, text: String) -> Next {
        match self.ws.send(Message::Text(text.into())).await {
            Ok(()) => Next::Go,
            Err(e) => self.fail("backend_gone", format!("the Kokoro container connection failed: {e}"), true).await,
        }
    }

    /// Hands an event to the scheduler, unless the conversation ends first.
    async fn emit(&self, event: SpeechEvent) -> Next {
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Next::Abandon,
            sent = self.events.send(event) => if sent.is_ok() { Next::Go } else { Next::Abandon },
        }
    }

    async fn fail(&self, code: &str, message: String, retryable: bool) -> Next {
        let _ = self.emit(SpeechEvent::Failed(SpeechError::new(code, message, retryable))).await;
        Next::Abandon
    }

    async fn on_message(&mut self, message: Option<Result<Message, tokio_tungstenite::tungstenite::Error>>) -> Next {
        match message {
            Some(Ok(Message::Text(text))) => match kokoro_wire::parse_control(&text) {
                Ok(ControlMessage::Start { sample_rate, .. }) if sample_rate != KOKORO_SAMPLE_RATE => {
                    self.fail("backend_protocol", format!("the container speaks at {sample_rate} Hz, not {KOKORO_SAMPLE_RATE}"), false).await
                }
                Ok(ControlMessage::Start { .. }) | Ok(ControlMessage::Unknown) => Next::Go,
                Ok(ControlMessage::End { request_id }) => match self.live.remove(&request_id) {
                    Some(index) => self.emit(SpeechEvent::Finished { index }).await,
                    None => Next::Go,
                },
                Ok(ControlMessage::Cancelled { request_id }) => {
                    self.live.remove(&request_id);
                    Next::Go
                }
                Ok(ControlMessage::Error { code, message, request_id }) => {
                    if let Some(id) = &request_id {
                        self.live.remove(id);
                    }
                    let retryable = matches!(code.as_str(), "queue_full" | "not_ready" | "synthesis_failed");
                    self.fail(&format!("tts_{code}"), format!("the Kokoro container: {message}"), retryable).await
                }
                Ok(ControlMessage::Closed {}) => {
                    let _ = self.emit(SpeechEvent::Closed { billed_characters: None }).await;
                    let _ = self.ws.close(None).await;
                    Next::Stop
                }
                Err(e) => self.fail("backend_protocol", e, false).await,
            },
            Some(Ok(Message::Binary(frame))) => match kokoro_wire::parse_audio(frame) {
                Ok(Some(audio)) => match self.live.get(&audio.request_id) {
                    Some(&index) => self.emit(SpeechEvent::Audio { index, pcm: audio.pcm }).await,
                    None => Next::Go,
                },
                Ok(None) => Next::Go,
                Err(e) => self.fail("backend_protocol", e, false).await,
            },
            Some(Ok(Message::Close(_))) | None => {
                self.fail("backend_gone", "the Kokoro container closed the connection".into(), true).await;
                Next::Stop
            }
            Some(Ok(_)) => Next::Go,
            Some(Err(e)) => {
                self.fail("backend_gone", format!("the Kokoro container connection failed: {e}"), true).await;
                Next::Stop
            }
        }
    }

    /// Cancels every live request at the container and closes the session, without waiting long.
    async fn abandon(&mut self) {
        let ids: Vec<String> = self.live.keys().cloned().collect();
        let work = async {
            for id in ids {
                self.ws.send(Message::Text(kokoro_wire::cancel(&id).into())).await?;
            }
            self.ws.send(Message::Text(kokoro_wire::close().into())).await?;
            self.ws.close(None).await
        };
        if let Ok(Err(e)) = tokio::time::timeout(Duration::from_secs(1), work).await {
            tracing::debug!("closing the Kokoro session: {e}");
        }
    }
}
