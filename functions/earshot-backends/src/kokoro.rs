//! The Kokoro container as a backend, over a direct WebSocket (local runs): one WebSocket per
//! conversation carries every sentence. The conversation itself is [`crate::container_session`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;
use std::time::Duration;

use async_trait::async_trait;
use async_trait::async_trait as transport_trait;
use bytes::Bytes;
use earshot_core::language::Language;
use earshot_core::speech::{codes, SessionOptions, SpeechBackend, SpeechError, SpeechSession, Voice};
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::container_session::{self, ContainerTransport, Frame, TransportError};
use earshot_core::error::codes as error_codes;

pub use crate::container_session::KOKORO_SAMPLE_RATE;
/// Where the container is and how to speak.
#[derive(Debug, Clone)]
pub struct KokoroConfig {
    /// The container's base URL, e.g. `http://127.0.0.1:8080`.
    pub url: String,
    /// The voice when a request names none; the container's English default when unset.
    pub default_voice: Option<String>,
    /// The voice each language is spoken in when a request names none, where it should not be the
    /// container's own choice (its `default_voices`).
    pub language_voices: Vec<(Language, String)>,
    /// How fast the voice speaks: 1.0 is its own pace (the container takes 0.5 to 2.0).
    pub speed: f32,
    /// How long to wait for the container: to open a conversation's WebSocket, and for each HTTP
    /// request (`/ping`, `/voices`).
    pub connect_timeout: Duration,
}

impl Default for KokoroConfig {
    fn default() -> Self {
        KokoroConfig {
            url: "http://127.0.0.1:8080".into(),
            default_voice: None,
            language_voices: Vec::new(),
            speed: 1.0,
            connect_timeout: Duration::from_secs(5),
        }
    }
}

#[derive(Deserialize)]
struct VoiceList {
    /// The languages the container has text front ends for: what it can speak, whatever the voices'
    /// own languages (any Kokoro voice reads any language's phonemes, with its accent).
    #[serde(default)]
    languages: Vec<String>,
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

/// What the container offers, known once it is ready.
#[derive(Debug, Clone)]
struct Catalogue {
    voices: Vec<Voice>,
    default_voice: String,
    /// Each language the container speaks, with the voice it is spoken in by default.
    languages: Vec<(Language, String)>,
}

/// The Kokoro backend. It exists before the container is ready (the gateway listens, and answers
/// `503 backend_not_ready`, while the model loads); [`KokoroBackend::poll_ready_forever`] learns the voices once
/// the container answers.
pub struct KokoroBackend {
    cfg: KokoroConfig,
    http: reqwest::Client,
    catalogue: RwLock<Option<Catalogue>>,
    /// Whether the last look found something answering at the URL (a container loading its model)
    /// rather than nothing at all: the two call for different words to a new user.
    answered: AtomicBool,
}

impl KokoroBackend {
    /// A backend for the container at `cfg.url`, not yet ready.
    pub fn new(cfg: KokoroConfig) -> Result<Self, SpeechError> {
        let http = reqwest::Client::builder().timeout(cfg.connect_timeout).build().map_err(|e| SpeechError::new("backend_config", e.to_string(), false))?;
        let url = cfg.url.trim_end_matches('/').to_string();
        Ok(KokoroBackend { cfg: KokoroConfig { url, ..cfg }, http, catalogue: RwLock::new(None), answered: AtomicBool::new(false) })
    }

    /// Connects to the container and reads its voices, waiting up to `wait` for it to be ready.
    pub async fn connect(cfg: KokoroConfig, wait: Duration) -> Result<Self, SpeechError> {
        let backend = Self::new(cfg)?;
        backend.wait_ready(wait).await?;
        Ok(backend)
    }

    /// Polls the container until it is ready and its voices are known, for up to `wait`.
    pub async fn wait_ready(&self, wait: Duration) -> Result<(), SpeechError> {
        self.poll_until(tokio::time::Instant::now().checked_add(wait)).await
    }

    /// Polls until the container is ready, or until `deadline` (never, when `None`). A reply that
    /// can never turn into readiness (an unknown default voice, an unreadable voice list) ends it.
    async fn poll_until(&self, deadline: Option<tokio::time::Instant>) -> Result<(), SpeechError> {
        loop {
            match self.try_load().await {
                Err(e) if e.code == "backend_unreachable" && deadline.is_none_or(|d| tokio::time::Instant::now() < d) => {
                    tokio::time::sleep(Duration::from_millis(200)).await
                }
                done => return done,
            }
        }
    }

    /// One look at the container: `Ok` once it is ready and its voices are read.
    async fn try_load(&self) -> Result<(), SpeechError> {
        let base = &self.cfg.url;
        let not_yet = || SpeechError::new("backend_unreachable", format!("the Kokoro container at {base} is not ready"), true);
        let ping = self.http.get(format!("{base}/ping")).send().await;
        self.answered.store(ping.is_ok(), Ordering::Relaxed);
        if !ping.is_ok_and(|r| r.status().is_success()) {
            return Err(not_yet());
        }
        let list: VoiceList = match self.http.get(format!("{base}/voices")).send().await {
            Ok(r) if r.status().is_success() => {
                r.json().await.map_err(|e| SpeechError::new(error_codes::BACKEND_PROTOCOL, format!("unreadable voice list from {base}: {e}"), false))?
            }
            _ => return Err(not_yet()),
        };
        let voices: Vec<Voice> = list
            .voices
            .into_iter()
            .map(|v| Voice {
                description: format!("Kokoro {} voice ({})", v.language, if v.gender.is_empty() { "unspecified" } else { &v.gender }),
                id: v.name,
                language: v.language,
            })
            .collect();
        let default_voice = match &self.cfg.default_voice {
            Some(v) if voices.iter().any(|x| &x.id == v) => v.clone(),
            Some(v) => return Err(SpeechError::new("unknown_voice", format!("the Kokoro container has no voice `{v}`"), false)),
            None => list.default_voices.get("en").cloned().or_else(|| voices.first().map(|v| v.id.clone())).unwrap_or_default(),
        };
        let languages = self.languages_of(&list.languages, &list.default_voices, &voices, &default_voice)?;
        *self.catalogue.write().unwrap_or_else(|e| e.into_inner()) = Some(Catalogue { voices, default_voice, languages });
        Ok(())
    }

    /// The languages of the container's front ends, each with its voice: the configured one, else (for
    /// English) the arm's default voice, else the container's default for the language.
    fn languages_of(
        &self,
        tags: &[String],
        defaults: &HashMap<String, String>,
        voices: &[Voice],
        default_voice: &str,
    ) -> Result<Vec<(Language, String)>, SpeechError> {
        let mut languages = Vec::new();
        for tag in tags {
            let Some(language) = Language::of_voice(tag) else { continue };
            let configured = self.cfg.language_voices.iter().find(|(l, _)| *l == language).map(|(_, v)| v.clone());
            let voice = match configured {
                Some(v) if voices.iter().any(|x| x.id == v) => v,
                Some(v) => {
                    return Err(SpeechError::new("unknown_voice", format!("the Kokoro container has no voice `{v}` (configured for {language})"), false))
                }
                None if language.as_str() == "en" => default_voice.to_string(),
                None => match defaults.get(tag) {
                    Some(v) => v.clone(),
                    None => continue,
                },
            };
            languages.push((language, voice));
        }
        Ok(languages)
    }

    /// Waits until the container is ready, however long its model takes, and logs it; a reply that
    /// can never turn into readiness (an unknown default voice) is logged and returned. Meant to run
    /// in the background while the gateway already serves.
    pub async fn poll_ready_forever(&self) -> Result<(), SpeechError> {
        let result = self.poll_until(None).await;
        match &result {
            Ok(()) => tracing::info!("Kokoro is ready; default voice {}", self.default_voice()),
            Err(e) => tracing::error!("Kokoro cannot be used: {}", earshot_core::redact::redact(&e.message)),
        }
        result
    }

    fn catalogue(&self) -> Option<Catalogue> {
        self.catalogue.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn ws_url(&self) -> String {
        let base = &self.cfg.url;
        let rest = base
            .strip_prefix("http://")
            .map(|r| format!("ws://{r}"))
            .or_else(|| base.strip_prefix("https://").map(|r| format!("wss://{r}")))
            .unwrap_or_else(|| base.clone());
        format!("{rest}/invocations-bidirectional-stream")
    }
}

#[async_trait]
impl SpeechBackend for KokoroBackend {
    fn name(&self) -> &str {
        "kokoro"
    }

    fn voices(&self) -> Vec<Voice> {
        self.catalogue().map(|c| c.voices).unwrap_or_default()
    }

    fn default_voice(&self) -> String {
        match self.catalogue() {
            Some(c) => c.default_voice,
            None => self.cfg.default_voice.clone().unwrap_or_default(),
        }
    }

    /// What the container's front ends read, not its voices' own languages: a local container's voices
    /// may all be Japanese packs and still speak English and French.
    fn languages(&self) -> Vec<(Language, String)> {
        self.catalogue().map(|c| c.languages).unwrap_or_default()
    }

    /// The container told no language reads by script, whatever the voice's own language.
    fn reading_language(&self, _voice: &str, session: Option<&Language>, sentence: Option<&Language>, text: &str) -> Option<Language> {
        Some(earshot_core::text::spoken::container_reading(sentence.or(session), text))
    }

    fn voice_speaks(&self, voice: &str, language: &Language) -> bool {
        self.catalogue().is_some_and(|c| earshot_core::voice_blend::offers(&c.voices, true, voice) && c.languages.iter().any(|(l, _)| l == language))
    }

    fn blends_voices(&self) -> bool {
        true
    }

    fn readiness(&self) -> Result<(), SpeechError> {
        // On every request: look, without cloning the voice list.
        match self.catalogue.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
            Some(_) => Ok(()),
            None if self.answered.load(Ordering::Relaxed) => {
                Err(SpeechError::new(codes::NOT_READY, format!("the Kokoro container at {} is still loading its model", self.cfg.url), true))
            }
            None => Err(SpeechError::new(
                codes::NOT_READY,
                format!("nothing answers at the Kokoro container's address {} yet: start the container, or check --kokoro-url", self.cfg.url),
                true,
            )),
        }
    }

    async fn open(&self, options: SessionOptions) -> Result<SpeechSession, SpeechError> {
        self.readiness()?;
        let url = self.ws_url();
        // Nagle's algorithm off: a `synthesize` is a small write, and with Nagle on it may wait for the
        // ACK of the write before it, which the container's kernel may delay by up to 40 ms (delayed ACK).
        let connect = tokio_tungstenite::connect_async_with_config(url.as_str(), None, true);
        let ws = match tokio::time::timeout(self.cfg.connect_timeout, connect).await {
            Ok(Ok((ws, _))) => ws,
            // The container refuses a session over its cap at the handshake (503, `busy`).
            Ok(Err(WsError::Http(response))) if response.status() == 503 => {
                let body = response.body().as_deref().map(String::from_utf8_lossy).unwrap_or_default().to_string();
                return Err(SpeechError::new(codes::BUSY, format!("the Kokoro container is full: {body}"), true));
            }
            Ok(Err(e)) => return Err(SpeechError::new("backend_unreachable", format!("cannot reach the Kokoro container at {url}: {e}"), true)),
            Err(_) => return Err(SpeechError::new("backend_unreachable", format!("the Kokoro container at {url} did not answer in time"), true)),
        };
        Ok(container_session::start(WsTransport { ws }, options, self.cfg.speed))
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

/// The container's WebSocket, as a transport of its protocol.
struct WsTransport {
    ws: Ws,
}

#[transport_trait]
impl ContainerTransport for WsTransport {
    async fn send_text(&mut self, text: String) -> Result<(), TransportError> {
        self.ws
            .send(Message::Text(text.into()))
            .await
            .map_err(|e| TransportError::new(error_codes::BACKEND_GONE, format!("the Kokoro container connection failed: {e}"), true))
    }

    async fn recv(&mut self) -> Option<Result<Frame, TransportError>> {
        loop {
            return match self.ws.next().await {
                Some(Ok(Message::Text(text))) => Some(Ok(Frame::Text(text.to_string()))),
                Some(Ok(Message::Binary(bytes))) => Some(Ok(Frame::Binary(Bytes::from(bytes.to_vec())))),
                Some(Ok(Message::Close(_))) | None => None,
                Some(Ok(_)) => continue,
                Some(Err(e)) => Some(Err(TransportError::new(error_codes::BACKEND_GONE, format!("the Kokoro container connection failed: {e}"), true))),
            };
        }
    }

    async fn close(&mut self) {
        let _ = self.ws.close(None).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn nothing_listening_is_told_apart_from_a_model_still_loading() {
        // A port that was free a moment ago: nothing answers there.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let cfg = KokoroConfig { url: format!("http://127.0.0.1:{port}"), connect_timeout: Duration::from_millis(200), ..Default::default() };
        let backend = KokoroBackend::new(cfg).unwrap();
        assert!(backend.wait_ready(Duration::from_millis(300)).await.is_err());
        let e = backend.readiness().unwrap_err();
        assert_eq!(e.code, codes::NOT_READY);
        assert!(e.message.starts_with("nothing answers at the Kokoro container's address"), "{}", e.message);
        assert!(!e.message.contains("loading"), "{}", e.message);
    }
}
