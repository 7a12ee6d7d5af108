//! `POST /v1/audio/speech`, as OpenAI documents it, on the same URL as earshot's own API: what most
//! frameworks, UIs and SDKs already speak to a TTS server (the official `openai` SDKs, open-webui,
//! LiveKit's and pipecat's OpenAI TTS plugins). The request becomes a conversation of `/v1/speak`'s `text`
//! mode (the input split into sentences as it is read, each spoken the moment it is complete), with the
//! same auth, owner limits, cache and metrics; only the request's shape and the response's framing are
//! OpenAI's.
//!
//! The request (OpenAI's fields; see `docs/openai.md`):
//! - `model`: a backend of this gateway (`kokoro`, `polly`, `synthetic`) chooses it; `auto`, `earshot`
//!   and OpenAI's own names (`tts-1`, `tts-1-hd`, `gpt-4o-mini-tts`, and their dated snapshots such as
//!   `gpt-4o-mini-tts-2025-12-15` or `tts-1-1106`) let the gateway choose (its A/B split); anything else
//!   is `400 model_not_found`.
//! - `voice`: OpenAI's voice names (`alloy`, `nova`, …) are each a voice of the chosen arm's own
//!   ([`crate::voice_ask`]: as many distinct ones as it has for the language); a voice of the backend itself
//!   (`af_heart`, `ruth`), or OpenAI's `{"id": …}` naming one, is that voice; on Kokoro a blend of its voices
//!   (`af_bella(2)+af_sky(1)`) is spoken as one.
//! - `input`: the text, at most the deployment's `max_text_chars` (past it, `400 input_too_long`, as
//!   OpenAI answers: every refusal on this route is a 400 or an auth or rate answer, never a 413).
//! - `response_format`: `mp3` (the default, as OpenAI's: 24 kHz mono, 64 kbit/s), `opus` (Ogg Opus at
//!   48 kHz), `aac` (AAC-LC in ADTS at 24 kHz), `flac` (24 kHz), `wav` (a header of unknown length, then
//!   16-bit PCM at 24 kHz) and `pcm` (raw 16-bit little-endian mono at 24 kHz, as OpenAI's): each streamed
//!   sentence by sentence, coded in process (`earshot_audio`).
//! - `speed`: OpenAI's 0.25 to 4.0. The voices speak 0.5 to 2.0 (Kokoro's `speed`, Polly's prosody rate):
//!   a speed past that is spoken at the nearest rate they have, and the response's `x-earshot-speed`
//!   says the rate used. `instructions`: read and ignored.
//! - `stream_format`: `audio` (the bytes, streamed as they are made) or `sse` (`speech.audio.delta`
//!   events with base64 audio, then `speech.audio.done`).
//!
//! - Fields OpenAI does not document (Kokoro-FastAPI's `lang_code`, `stream`, …) are ignored, as
//!   OpenAI-compatible servers do, so that a client written for another server still speaks; the
//!   response's `x-earshot-ignored-fields` names them, so that nothing is ignored unseen.
//!
//! Errors before the stream are OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, with
//! earshot's status and code. Once audio is flowing a failure cannot change the status: an `audio` stream
//! is cut short (the client sees an incomplete body, never a whole-looking one), an `sse` stream ends with
//! an `error` event.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::Engine;
use earshot_core::agent::AgentInput;
use earshot_core::output::OutputFormat;
use earshot_core::protocol::{Delivery, ServerEvent};
use earshot_core::scheduler::Release;
use earshot_core::speech::SpeakingRate;
use futures_util::stream;
use serde::Deserialize;
use tokio_util::sync::DropGuard;

use crate::api_error::ApiError;
use crate::client_error;
use crate::conversation::Started;
use crate::request::SpeakRequest;
use crate::voice_ask::VoiceAsk;

/// Model names with which the gateway chooses the arm: earshot's own and OpenAI's.
pub const CHOOSING_MODELS: [&str; 5] = ["auto", "earshot", "tts-1", "tts-1-hd", "gpt-4o-mini-tts"];

/// The API a conversation came through, as its metric line's `Api` says.
pub const API: &str = "openai_speech";

/// The rate of OpenAI's `pcm` and of the `wav` made here.
pub(crate) const PCM_RATE: u32 = 24_000;

/// The speeds OpenAI takes.
const OPENAI_SPEEDS: (f64, f64) = (0.25, 4.0);

/// The request's body, as OpenAI documents it.
#[derive(Deserialize)]
struct OpenAiBody {
    model: Option<String>,
    input: Option<String>,
    voice: Option<serde_json::Value>,
    #[allow(dead_code)]
    instructions: Option<String>,
    response_format: Option<String>,
    speed: Option<f64>,
    stream_format: Option<String>,
}

/// The fields OpenAI documents for this route: any other is ignored and named in `x-earshot-ignored-fields`.
const FIELDS: [&str; 7] = ["model", "input", "voice", "instructions", "response_format", "speed", "stream_format"];

/// How the audio leaves: OpenAI's `response_format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    /// MP3 at 24 kHz (OpenAI's default).
    Mp3,
    /// Ogg Opus at 48 kHz.
    Opus,
    /// AAC-LC in ADTS frames at 24 kHz.
    Aac,
    /// FLAC at 24 kHz.
    Flac,
    /// A WAV header for a stream of unknown length, then 16-bit PCM at 24 kHz.
    Wav,
    /// 16-bit little-endian PCM at 24 kHz, headerless.
    Pcm,
}

impl Container {
    /// Every `response_format`, by OpenAI's name, the default first.
    pub const ALL: [Container; 6] = [Container::Mp3, Container::Opus, Container::Aac, Container::Flac, Container::Wav, Container::Pcm];

    /// OpenAI's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Container::Mp3 => "mp3",
            Container::Opus => "opus",
            Container::Aac => "aac",
            Container::Flac => "flac",
            Container::Wav => "wav",
            Container::Pcm => "pcm",
        }
    }

    fn output(self) -> OutputFormat {
        match self {
            Container::Mp3 => OutputFormat::Mp3,
            Container::Opus => OutputFormat::Opus48000,
            Container::Aac => OutputFormat::Aac,
            Container::Flac => OutputFormat::Flac,
            Container::Wav | Container::Pcm => OutputFormat::Pcm(PCM_RATE),
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Container::Mp3 => "audio/mpeg",
            Container::Opus => "audio/ogg",
            Container::Aac => "audio/aac",
            Container::Flac => "audio/flac",
            Container::Wav => "audio/wav",
            Container::Pcm => "audio/pcm",
        }
    }
}

/// Whether `model` is one of OpenAI's own names, or a dated snapshot of one (`gpt-4o-mini-tts-2025-12-15`,
/// `tts-1-1106`): OpenAI pins a snapshot by a date after the name, as `-YYYY-MM-DD` or `-MMDD`.
fn is_choosing_model(model: &str) -> bool {
    CHOOSING_MODELS.iter().any(|name| {
        let Some(rest) = model.strip_prefix(name) else { return false };
        let Some(date) = rest.strip_prefix('-') else { return rest.is_empty() };
        let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
        match date.split('-').collect::<Vec<_>>()[..] {
            [mmdd] => digits(mmdd, 4),
            [year, month, day] => digits(year, 4) && digits(month, 2) && digits(day, 2),
            _ => false,
        }
    })
}

/// A request read: earshot's own, and how its audio leaves.
pub struct Asked {
    /// The request as earshot's own `/v1/speak` would take it.
    pub request: SpeakRequest,
    /// How the response carries the audio.
    pub framing: Framing,
    /// On the captioned route, how the words come with the audio.
    pub captions: Option<Captions>,
}

/// How a captioned answer is given (the captioned route's `stream` and `return_timestamps`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Captions {
    /// Line by line as it is made (`stream`), or one object at the end.
    pub stream: bool,
    /// Whether the words are given (`return_timestamps`).
    pub timestamps: bool,
}

/// Which of OpenAI's speech routes a request came by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `POST /v1/audio/speech`: the audio alone.
    Speech,
    /// `POST /v1/audio/speech/captioned` (`/dev/captioned_speech`): the audio with its words' times.
    Captioned,
}

/// Kokoro-FastAPI's fields of the captioned route.
const CAPTION_FIELDS: [&str; 2] = ["stream", "return_timestamps"];

/// How the response carries the audio, and what it says of the request.
#[derive(Debug, Clone, PartialEq)]
pub struct Framing {
    /// How the audio is packaged (`response_format`).
    pub container: Container,
    /// `stream_format` `sse`.
    pub sse: bool,
    /// The rate the voices speak at, where `speed` asked for one past what they have (0.5 to 2.0).
    pub speed_used: Option<SpeakingRate>,
    /// Fields of the body OpenAI does not document, ignored.
    pub ignored: Vec<String>,
}

/// An error in OpenAI's shape, with earshot's status and code.
#[derive(Debug)]
pub struct OpenAiError(pub Box<ApiError>, pub Option<&'static str>);

impl From<ApiError> for OpenAiError {
    fn from(e: ApiError) -> Self {
        OpenAiError(Box::new(e), None)
    }
}

impl IntoResponse for OpenAiError {
    fn into_response(self) -> Response {
        let (mut e, param) = (*self.0, self.1);
        // OpenAI answers input over its limit with a 400, and its SDKs raise their generic error for a 413.
        if e.status == StatusCode::PAYLOAD_TOO_LARGE {
            e.status = StatusCode::BAD_REQUEST;
        }
        let kind = match e.status.as_u16() {
            401 => "authentication_error",
            403 => "permission_error",
            429 => "rate_limit_error",
            400..=499 => "invalid_request_error",
            _ => "server_error",
        };
        let body = serde_json::json!({"error": {"message": e.error.message, "type": kind, "param": param, "code": e.error.code}});
        let mut response = (e.status, Json(body)).into_response();
        // Retry-After and the bearer challenge, as earshot's own answer has them.
        let earshot = e.into_response();
        for name in [header::RETRY_AFTER, header::WWW_AUTHENTICATE] {
            if let Some(value) = earshot.headers().get(&name) {
                response.headers_mut().insert(name, value.clone());
            }
        }
        response
    }
}

fn invalid(code: &str, param: &'static str, message: impl Into<String>) -> OpenAiError {
    OpenAiError(Box::new(ApiError::bad_request(code, message)), Some(param))
}

/// Reads OpenAI's request into earshot's, for a gateway with `backends` and at most `max_text_chars` of input.
pub fn parse(body: &[u8], backends: &[String], max_text_chars: usize) -> Result<Asked, OpenAiError> {
    parse_for(Route::Speech, body, backends, max_text_chars)
}

/// Reads a request of `route`.
pub fn parse_for(route: Route, body: &[u8], backends: &[String], max_text_chars: usize) -> Result<Asked, OpenAiError> {
    let value = crate::strict_json::from_slice(body).map_err(|e| match e {
        crate::strict_json::StrictError::Syntax(why) => invalid("invalid_json", "body", format!("the body is not JSON: {why}")),
        crate::strict_json::StrictError::DuplicateKey(key) => invalid("invalid_json", "body", format!("`{key}` is given twice")),
        crate::strict_json::StrictError::TooManyValues => {
            invalid("invalid_request", "body", format!("the body holds more than {} JSON values", crate::strict_json::MOST_VALUES))
        }
    })?;
    let serde_json::Value::Object(mut fields) = value else {
        return Err(invalid("invalid_json", "body", "the body is a JSON object"));
    };
    let known = |k: &str| FIELDS.contains(&k) || (route == Route::Captioned && CAPTION_FIELDS.contains(&k));
    let ignored: Vec<String> = fields.keys().filter(|k| !known(k)).cloned().collect();
    let flag = |name: &'static str| match fields.get(name) {
        None | Some(serde_json::Value::Null) => Ok(true),
        Some(serde_json::Value::Bool(b)) => Ok(*b),
        Some(_) => Err(invalid("invalid_request", name, format!("`{name}` is true or false"))),
    };
    let captions = match route {
        Route::Captioned => Some(Captions { stream: flag("stream")?, timestamps: flag("return_timestamps")? }),
        Route::Speech => None,
    };
    fields.retain(|k, _| FIELDS.contains(&k.as_str()));
    let body: OpenAiBody = serde_json::from_value(serde_json::Value::Object(fields)).map_err(|e| invalid("invalid_request", "body", e.to_string()))?;
    let model = body.model.filter(|m| !m.trim().is_empty()).ok_or_else(|| invalid("missing_model", "model", "`model` is required"))?;
    let backend = if is_choosing_model(&model) {
        None
    } else if backends.contains(&model) {
        Some(model)
    } else {
        let known = backends.iter().map(String::as_str).chain(CHOOSING_MODELS).collect::<Vec<_>>().join(", ");
        return Err(invalid("model_not_found", "model", format!("no model `{model}` here (models: {known})")));
    };
    // A name, or OpenAI's object form `{"id": …}` (its custom voices): here a backend's voice id.
    let written = match &body.voice {
        Some(serde_json::Value::String(v)) => Some(v.as_str()),
        Some(serde_json::Value::Object(o)) if o.len() == 1 => o.get("id").and_then(|id| id.as_str()),
        Some(_) => None,
        None => return Err(invalid("missing_voice", "voice", "`voice` is required")),
    };
    let voice = match written.filter(|v| !v.is_empty() && v.len() <= 64) {
        Some(v) => VoiceAsk::read(v).map_err(|why| invalid("unknown_voice", "voice", why))?,
        None => {
            return Err(invalid("unknown_voice", "voice", "`voice` is one of OpenAI's voice names, a voice of GET /v1/audio/voices, or {\"id\": one of them}"))
        }
    };
    let input = body.input.ok_or_else(|| invalid("missing_input", "input", "`input` is required"))?;
    let input = crate::request::checked_text(input, "input", max_text_chars).map_err(|e| OpenAiError(Box::new(e), Some("input")))?;
    let asked_format = body.response_format.as_deref().unwrap_or(Container::Mp3.name());
    let Some(container) = Container::ALL.into_iter().find(|c| c.name() == asked_format) else {
        let names = Container::ALL.map(Container::name).join(", ");
        return Err(invalid("invalid_response_format", "response_format", format!("unknown `response_format` `{asked_format}` ({names})")));
    };
    // OpenAI takes 0.25 to 4.0; earshot's voices speak 0.5 to 2.0 (Kokoro's `speed`, Polly's prosody rate):
    // past that, the nearest rate they have, said in `x-earshot-speed`.
    let (rate, speed_used) = match body.speed {
        None => (None, None),
        Some(speed) if !speed.is_finite() || !(OPENAI_SPEEDS.0..=OPENAI_SPEEDS.1).contains(&speed) => {
            return Err(invalid("invalid_speed", "speed", format!("`speed` is from {} to {}, not {speed}", OPENAI_SPEEDS.0, OPENAI_SPEEDS.1)))
        }
        Some(speed) => {
            let spoken = speed.clamp(SpeakingRate::MIN, SpeakingRate::MAX);
            let rate = SpeakingRate::from_factor(spoken).map_err(|e| invalid("invalid_speed", "speed", format!("`speed`: {e}")))?;
            (Some(rate), (spoken != speed).then_some(rate))
        }
    };
    let sse = match body.stream_format.as_deref() {
        None | Some("audio") => false,
        Some("sse") => true,
        Some(other) => return Err(invalid("invalid_stream_format", "stream_format", format!("unknown `stream_format` `{other}` (audio or sse)"))),
    };
    let request = SpeakRequest {
        input: AgentInput::Text(input),
        backend,
        voice: Some(voice),
        language: None,
        release: Release::Incremental,
        delivery: Delivery::Sse,
        output: Some(container.output()),
        rate,
        conversation_id: uuid::Uuid::new_v4().to_string(),
        conversation_id_given: false,
        api: Some(API),
        ssml: false,
    };
    Ok(Asked { request, framing: Framing { container, sse, speed_used, ignored }, captions })
}

/// A WAV header for 16-bit mono PCM at `rate` whose length is not known yet: both sizes at their
/// largest, as streaming WAV writers (ffmpeg's, OpenAI's) leave them. Written by hand: hound's writer
/// needs a seekable sink to fill the sizes in afterwards, which a stream is not.
pub(crate) fn wav_header(rate: u32) -> Bytes {
    let mut h = Vec::with_capacity(44);
    h.extend_from_slice(b"RIFF");
    h.extend_from_slice(&u32::MAX.to_le_bytes());
    h.extend_from_slice(b"WAVEfmt ");
    h.extend_from_slice(&16u32.to_le_bytes());
    h.extend_from_slice(&1u16.to_le_bytes()); // PCM
    h.extend_from_slice(&1u16.to_le_bytes()); // mono
    h.extend_from_slice(&rate.to_le_bytes());
    h.extend_from_slice(&(rate * 2).to_le_bytes());
    h.extend_from_slice(&2u16.to_le_bytes());
    h.extend_from_slice(&16u16.to_le_bytes());
    h.extend_from_slice(b"data");
    h.extend_from_slice(&u32::MAX.to_le_bytes());
    Bytes::from(h)
}

/// What the response stream has said so far.
struct Streaming {
    events: tokio::sync::mpsc::Receiver<ServerEvent>,
    _guard: DropGuard,
    /// The WAV header is still to be sent.
    header: Option<Bytes>,
    ended: bool,
}

/// The response: the audio as it is made, framed as asked; dropping it (the client left) cancels the
/// conversation.
pub fn stream_response(started: Started, framing: &Framing, input_chars: usize, keep_alive: Duration) -> Response {
    let request_id: Arc<str> = started.request_id.as_str().into();
    let sse = framing.sse;
    // A WAV answer starts with its header: the body's first bytes, or in SSE the first delta's.
    let header = (framing.container == Container::Wav).then(|| wav_header(PCM_RATE));
    let state = Streaming { events: started.events, _guard: started.cancel.clone().drop_guard(), header, ended: false };
    let body = stream::unfold(Some(state), move |state| {
        let request_id = request_id.clone();
        async move {
            let mut state = state?;
            if !sse {
                if let Some(header) = state.header.take() {
                    return Some((Ok(header), Some(state)));
                }
            }
            if state.ended {
                return None;
            }
            loop {
                let next = match tokio::time::timeout(keep_alive, state.events.recv()).await {
                    Err(_) if sse => return Some((Ok(Bytes::from_static(b": keep-alive\n\n")), Some(state))),
                    Err(_) => continue,
                    Ok(next) => next,
                };
                match next {
                    Some(ServerEvent::Audio(chunk)) if sse => {
                        let audio = match state.header.take() {
                            Some(header) => base64::engine::general_purpose::STANDARD.encode([&header[..], &chunk.pcm[..]].concat()),
                            None => base64::engine::general_purpose::STANDARD.encode(&chunk.pcm),
                        };
                        return Some((Ok(sse_event(&serde_json::json!({"type": "speech.audio.delta", "audio": audio}))), Some(state)));
                    }
                    Some(ServerEvent::Audio(chunk)) => return Some((Ok(chunk.pcm), Some(state))),
                    Some(ServerEvent::Done(_)) if sse => {
                        // OpenAI counts tokens; earshot's input is characters, said as such.
                        let usage = serde_json::json!({"input_tokens": input_chars, "output_tokens": 0, "total_tokens": input_chars});
                        state.ended = true;
                        return Some((Ok(sse_event(&serde_json::json!({"type": "speech.audio.done", "usage": usage}))), Some(state)));
                    }
                    Some(ServerEvent::Done(_)) => return None,
                    Some(ServerEvent::Error(e)) => {
                        let e = client_error::for_client(e, &request_id);
                        if sse {
                            state.ended = true;
                            let error = serde_json::json!({"type": "error", "error": {"message": e.message, "type": "server_error", "code": e.code}});
                            return Some((Ok(sse_event(&error)), Some(state)));
                        }
                        // The status is long sent: a cut body is the only way to say the audio is not whole.
                        return Some((Err(std::io::Error::other(format!("{}: {}", e.code, e.message))), None));
                    }
                    // The session, text, words and sentence ends are earshot's own messages: not OpenAI's.
                    Some(_) => continue,
                    None => return Some((Err(std::io::Error::other("the conversation ended without done or error")), None)),
                }
            }
        }
    });
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = StatusCode::OK;
    let content_type = if sse { "text/event-stream" } else { framing.container.content_type() };
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    common_headers(&mut response, &started.backend, &started.request_id, framing);
    response
}

/// What every answer on OpenAI's routes says beside its body: no caching, no proxy buffering, the
/// backend and request id, the rate used where `speed` asked past the voices', and the fields ignored.
pub(crate) fn common_headers(response: &mut Response, backend: &str, request_id: &str, framing: &Framing) {
    let headers = response.headers_mut();
    if let Some(rate) = framing.speed_used {
        if let Ok(v) = HeaderValue::from_str(&format!("{:.2}", rate.factor())) {
            headers.insert("x-earshot-speed", v);
        }
    }
    if !framing.ignored.is_empty() {
        if let Ok(v) = HeaderValue::from_str(&ignored_header(&framing.ignored)) {
            headers.insert("x-earshot-ignored-fields", v);
        }
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    // `x-request-id` is where OpenAI's SDKs read a response's request id (LiveKit's voice logs it).
    for (name, value) in [("x-earshot-backend", backend), ("x-earshot-request-id", request_id), ("x-request-id", request_id)] {
        if let Ok(v) = HeaderValue::from_str(value) {
            headers.insert(name, v);
        }
    }
}

/// The ignored fields' names for a header: the first few, each cut short, in visible ASCII (a name is
/// the caller's text: it is capped and cleaned like any).
fn ignored_header(names: &[String]) -> String {
    const MOST_NAMES: usize = 8;
    const LONGEST: usize = 40;
    let mut shown: Vec<String> = names
        .iter()
        .take(MOST_NAMES)
        .map(|n| n.chars().filter(|c| c.is_ascii_graphic() && *c != ',').take(LONGEST).collect::<String>())
        .filter(|n| !n.is_empty())
        .collect();
    if names.len() > MOST_NAMES {
        shown.push(format!("and {} more", names.len() - MOST_NAMES));
    }
    shown.join(", ")
}

fn sse_event(value: &serde_json::Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backends() -> Vec<String> {
        vec!["kokoro".into(), "polly".into()]
    }

    fn refused(body: &str) -> (u16, String, Option<&'static str>) {
        match parse(body.as_bytes(), &backends(), 100) {
            Err(OpenAiError(e, param)) => (e.status.as_u16(), e.error.code, param),
            Ok(_) => panic!("{body} was taken"),
        }
    }

    #[test]
    fn openai_s_request_becomes_earshot_s_text_mode() {
        let asked = parse(br#"{"model":"tts-1","voice":"alloy","input":"Hello there. How are you?"}"#, &backends(), 100).unwrap();
        assert_eq!((asked.framing.container, asked.framing.sse), (Container::Mp3, false), "mp3 unless asked, as OpenAI's");
        assert_eq!(asked.request.backend, None, "OpenAI's model names let the gateway choose");
        assert_eq!(asked.request.voice, Some(VoiceAsk::OpenAi("alloy")), "OpenAI's voices are each arm's own for the name");
        assert_eq!(asked.request.output, Some(OutputFormat::Mp3));
        assert!(asked.framing.ignored.is_empty() && asked.framing.speed_used.is_none());
        assert_eq!(asked.request.api, Some(API));
        assert!(matches!(&asked.request.input, AgentInput::Text(t) if t == "Hello there. How are you?"));
        let named = parse(
            br#"{"model":"polly","voice":"ruth","input":"Hi.","response_format":"opus","stream_format":"sse","speed":1.0,"instructions":"warm"}"#,
            &backends(),
            100,
        )
        .unwrap();
        assert_eq!((named.request.backend.as_deref(), named.request.voice), (Some("polly"), Some(VoiceAsk::Named("ruth".into()))));
        let by_id = parse(br#"{"model":"kokoro","voice":{"id":"af_bella"},"input":"Hi."}"#, &backends(), 100).unwrap();
        assert_eq!(by_id.request.voice, Some(VoiceAsk::Named("af_bella".into())), "OpenAI's object form names a voice by its id");
        let blend = parse(br#"{"model":"kokoro","voice":"af_bella(2)+af_sky(1)","input":"Hi."}"#, &backends(), 100).unwrap();
        assert_eq!(blend.request.voice, Some(VoiceAsk::Named("af_bella(0.667)+af_sky(0.333)".into())), "a blend under its canonical name");
        assert_eq!(refused(r#"{"model":"kokoro","voice":"af_bella(0)+af_sky","input":"Hi."}"#).1, "unknown_voice");
        assert_eq!(refused(r#"{"model":"kokoro","voice":{"name":"x"},"input":"Hi."}"#).1, "unknown_voice");
        assert_eq!((named.framing.container, named.framing.sse, named.request.output), (Container::Opus, true, Some(OutputFormat::Opus48000)));
        assert_eq!(named.request.rate, Some(SpeakingRate::NORMAL));
        let faster = parse(br#"{"model":"tts-1","voice":"alloy","input":"Hi.","speed":1.5}"#, &backends(), 100).unwrap();
        assert_eq!(faster.request.rate.map(SpeakingRate::percent), Some(150), "OpenAI's speed is earshot's speaking rate");
        for (format, output) in
            [("aac", OutputFormat::Aac), ("flac", OutputFormat::Flac), ("wav", OutputFormat::Pcm(24_000)), ("pcm", OutputFormat::Pcm(24_000))]
        {
            let asked =
                parse(format!(r#"{{"model":"tts-1","voice":"alloy","input":"Hi.","response_format":"{format}"}}"#).as_bytes(), &backends(), 100).unwrap();
            assert_eq!((asked.framing.container.name(), asked.request.output), (format, Some(output)));
        }
    }

    #[test]
    fn openai_s_whole_speed_range_is_taken_and_what_the_voices_cannot_do_is_said() {
        let asked = |speed: f64| parse(format!(r#"{{"model":"tts-1","voice":"alloy","input":"Hi.","speed":{speed}}}"#).as_bytes(), &backends(), 100);
        let slowest = asked(0.25).unwrap();
        assert_eq!(slowest.request.rate.map(SpeakingRate::percent), Some(50), "the slowest the voices speak");
        assert_eq!(slowest.framing.speed_used.map(SpeakingRate::percent), Some(50), "said in x-earshot-speed");
        let fastest = asked(4.0).unwrap();
        assert_eq!(fastest.framing.speed_used.map(SpeakingRate::percent), Some(200));
        assert_eq!(asked(1.25).unwrap().framing.speed_used, None, "a speed the voices have is not remarked on");
        assert!(asked(4.5).is_err() && asked(0.2).is_err());
    }

    #[test]
    fn dated_snapshots_of_openai_s_models_let_the_gateway_choose() {
        for model in ["gpt-4o-mini-tts-2025-12-15", "gpt-4o-mini-tts-2025-03-20", "tts-1-1106", "tts-1-hd-1106", "tts-1-hd"] {
            let asked = parse(format!(r#"{{"model":"{model}","voice":"alloy","input":"Hi."}}"#).as_bytes(), &backends(), 100).unwrap();
            assert_eq!(asked.request.backend, None, "{model}");
        }
        for model in ["tts-1-latest", "gpt-4o-mini-tts-2025-12", "tts-1-11062", "gpt-4o-mini-tts2025"] {
            assert_eq!(refused(&format!(r#"{{"model":"{model}","voice":"alloy","input":"Hi."}}"#)).1, "model_not_found", "{model}");
        }
    }

    #[test]
    fn fields_openai_does_not_document_are_ignored_and_named() {
        let asked = parse(br#"{"model":"tts-1","voice":"alloy","input":"Hi.","lang_code":"a","stream":true}"#, &backends(), 100).unwrap();
        assert_eq!(asked.framing.ignored, ["lang_code", "stream"]);
        let many: Vec<String> = (0..12).map(|i| format!("extra{i}")).collect();
        assert_eq!(ignored_header(&many), "extra0, extra1, extra2, extra3, extra4, extra5, extra6, extra7, and 4 more");
        assert_eq!(ignored_header(&["a\u{7}b,c".into(), "x".repeat(60)]), format!("abc, {}", "x".repeat(40)), "control characters and commas left out");
    }

    #[test]
    fn what_cannot_be_honoured_is_refused_in_openai_s_words() {
        assert_eq!(
            refused(r#"{"model":"tts-1","voice":"alloy","input":"Hi.","response_format":"wma"}"#),
            (400, "invalid_response_format".into(), Some("response_format"))
        );
        assert_eq!(refused(r#"{"model":"whisper","voice":"alloy","input":"Hi."}"#), (400, "model_not_found".into(), Some("model")));
        assert_eq!(refused(r#"{"model":"tts-1","input":"Hi."}"#), (400, "missing_voice".into(), Some("voice")));
        assert_eq!(refused(r#"{"model":"tts-1","voice":"alloy","input":"  "}"#), (400, "empty_input".into(), Some("input")));
        assert_eq!(refused(&format!(r#"{{"model":"tts-1","voice":"alloy","input":"{}"}}"#, "a".repeat(101))).1, "input_too_long");
        assert_eq!(refused(r#"{"model":"tts-1","voice":"alloy","input":"Hi.","speed":5.0}"#), (400, "invalid_speed".into(), Some("speed")));
        assert_eq!(refused(r#"{"model":"tts-1","voice":"alloy","input":"Hi.","stream_format":"chunks"}"#).1, "invalid_stream_format");
        let response = OpenAiError(Box::new(ApiError::bad_request("model_not_found", "no")), Some("model")).into_response();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let too_long = OpenAiError(Box::new(ApiError::too_large("input_too_long", "long")), Some("input")).into_response();
        assert_eq!(too_long.status(), StatusCode::BAD_REQUEST, "OpenAI's status for input past the limit");
    }

    #[test]
    fn the_wav_header_says_pcm_16_bit_mono_at_24_khz_of_unknown_length() {
        let h = wav_header(24_000);
        assert_eq!(h.len(), 44);
        assert_eq!(&h[0..4], b"RIFF");
        assert_eq!(&h[8..16], b"WAVEfmt ");
        assert_eq!(u16::from_le_bytes([h[22], h[23]]), 1, "mono");
        assert_eq!(u32::from_le_bytes([h[24], h[25], h[26], h[27]]), 24_000);
        assert_eq!(u16::from_le_bytes([h[34], h[35]]), 16);
        assert_eq!(&h[36..40], b"data");
    }
}
