//! `POST /v1/audio/speech/captioned` (and Kokoro-FastAPI's path for it, `POST /dev/captioned_speech`):
//! OpenAI's speech request answered with the words and when each is heard, as Kokoro-FastAPI's captioned
//! speech gives them, so that a client switching from it keeps its captions and karaoke highlighting.
//!
//! The request is `/v1/audio/speech`'s, with Kokoro-FastAPI's `stream` (default `true`) and
//! `return_timestamps` (default `true`). The answer is its `CaptionedSpeechResponse`:
//! `{"audio": base64, "audio_format": "mp3", "timestamps": [{"word", "start_time", "end_time"}]}`, times in
//! seconds from the start of the whole answer's audio as a decoder plays it.
//! - `stream: true`: one such object a line (`application/x-ndjson`), as the audio and words are made:
//!   a line for each audio chunk (its `timestamps` empty) and a line for each sentence's words once some of
//!   its audio has gone out (its `audio` empty); a failure after the first line is a last line
//!   `{"error": {"message", "type", "code"}}`.
//! - `stream: false`: one object with the whole audio and every word, once the answer is complete (at
//!   most [`MOST_WHOLE_BYTES`] of audio; past that, an `error` object that says to stream it).
//!
//! The times are earshot's `words` (the voice's own durations where it predicts them, estimated from the
//! audio otherwise, on both arms), each placed at its sentence's start as a client plays the chunks: the
//! chunks' own length (their frames, for a compressed format) plus what the codec plays first
//! (`earshot_audio::coded::lead_ms`).

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use earshot_core::protocol::ServerEvent;
use futures_util::stream;
use tokio_util::sync::DropGuard;

use crate::client_error;
use crate::conversation::Started;
use crate::openai_speech::{Captions, Framing};

/// The most audio one `stream: false` object holds (about 5 minutes of 24 kHz PCM): past it the answer
/// ends with an error that says to stream it.
pub const MOST_WHOLE_BYTES: usize = 16 << 20;

/// Where the answer's audio has reached, as a client plays it.
struct Clock {
    format: Option<earshot_core::protocol::AudioFormat>,
    chunks: Option<earshot_audio::coded::ChunkClock>,
    /// Milliseconds of audio in the chunks so far.
    played_ms: f64,
    /// Each sentence's start, by index (set by its first chunk).
    starts: std::collections::HashMap<u32, f64>,
}

impl Clock {
    fn audio(&mut self, index: u32, seq: u32, bytes: &[u8]) {
        if seq == 0 {
            let lead = self.format.as_ref().map_or(0.0, |f| earshot_audio::coded::lead_ms(&f.encoding));
            self.starts.insert(index, self.played_ms + lead);
        }
        self.played_ms += match (self.chunks.as_mut(), &self.format) {
            (Some(clock), _) => clock.advance(bytes),
            (None, Some(format)) => format.duration_ms(bytes.len()),
            (None, None) => 0.0,
        };
    }
}

/// One `CaptionedSpeechResponse`.
fn captioned(audio: &[u8], format: &str, timestamps: &[serde_json::Value]) -> serde_json::Value {
    let audio = base64::engine::general_purpose::STANDARD.encode(audio);
    serde_json::json!({"audio": audio, "audio_format": format, "timestamps": timestamps})
}

struct Streaming {
    events: tokio::sync::mpsc::Receiver<ServerEvent>,
    _guard: DropGuard,
    clock: Clock,
    /// A WAV answer's header, still to go before its first audio.
    header: Option<Bytes>,
    /// The whole answer, for `stream: false`.
    audio: Vec<u8>,
    words: Vec<serde_json::Value>,
    ended: bool,
}

/// The response: the captioned answer as asked; dropping it (the client left) cancels the conversation.
pub fn captioned_response(started: Started, framing: &Framing, captions: Captions, keep_alive: Duration) -> Response {
    let request_id: Arc<str> = started.request_id.as_str().into();
    let format_name = framing.container.name();
    let clock = Clock { format: None, chunks: None, played_ms: 0.0, starts: Default::default() };
    let header = (framing.container == crate::openai_speech::Container::Wav).then(|| crate::openai_speech::wav_header(crate::openai_speech::PCM_RATE));
    let guard = started.cancel.clone().drop_guard();
    let state = Streaming { events: started.events, _guard: guard, clock, header, audio: Vec::new(), words: Vec::new(), ended: false };
    let body = stream::unfold(Some(state), move |state| {
        let request_id = request_id.clone();
        async move {
            let mut state = state?;
            if state.ended {
                return None;
            }
            loop {
                let next = match tokio::time::timeout(keep_alive, state.events.recv()).await {
                    // An empty line keeps a quiet stream open; readers of lines skip it.
                    Err(_) if captions.stream => return Some((Ok(Bytes::from_static(b"\n")), Some(state))),
                    Err(_) => continue,
                    Ok(next) => next,
                };
                let line = match next {
                    Some(ServerEvent::Session(session)) => {
                        state.clock.chunks = earshot_audio::coded::ChunkClock::for_encoding(&session.audio.encoding);
                        state.clock.format = Some(session.audio);
                        continue;
                    }
                    Some(ServerEvent::Audio(chunk)) => {
                        state.clock.audio(chunk.index, chunk.seq, &chunk.pcm);
                        let bytes = match state.header.take() {
                            Some(header) => [&header[..], &chunk.pcm[..]].concat(),
                            None => chunk.pcm.to_vec(),
                        };
                        if !captions.stream && state.audio.len() + bytes.len() > MOST_WHOLE_BYTES {
                            state.ended = true;
                            let message =
                                format!("the answer's audio passed {MOST_WHOLE_BYTES} bytes, more than one object holds here: ask with `stream: true`");
                            serde_json::json!({"error": {"message": message, "type": "invalid_request_error", "code": "answer_too_long"}})
                        } else if !captions.stream {
                            state.audio.extend_from_slice(&bytes);
                            continue;
                        } else {
                            captioned(&bytes, format_name, &[])
                        }
                    }
                    Some(ServerEvent::Words(words)) if captions.timestamps => {
                        let start = state.clock.starts.get(&words.index).copied().unwrap_or(state.clock.played_ms);
                        let timed: Vec<serde_json::Value> = words
                            .words
                            .iter()
                            .map(|w| serde_json::json!({"word": w.text, "start_time": (start + w.start_ms) / 1000.0, "end_time": (start + w.end_ms) / 1000.0}))
                            .collect();
                        if !captions.stream {
                            state.words.extend(timed);
                            continue;
                        }
                        captioned(&[], format_name, &timed)
                    }
                    Some(ServerEvent::Done(_)) => {
                        state.ended = true;
                        if captions.stream {
                            return None;
                        }
                        captioned(&state.audio, format_name, &state.words)
                    }
                    Some(ServerEvent::Error(e)) => {
                        let e = client_error::for_client(e, &request_id);
                        state.ended = true;
                        serde_json::json!({"error": {"message": e.message, "type": "server_error", "code": e.code}})
                    }
                    Some(_) => continue,
                    None => return Some((Err(std::io::Error::other("the conversation ended without done or error")), None)),
                };
                let mut bytes = serde_json::to_vec(&line).expect("JSON of JSON values");
                bytes.push(b'\n');
                return Some((Ok(Bytes::from(bytes)), Some(state)));
            }
        }
    });
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = StatusCode::OK;
    let content_type = if captions.stream { "application/x-ndjson" } else { "application/json" };
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    crate::openai_speech::common_headers(&mut response, &started.backend, &started.request_id, framing);
    response.into_response()
}
