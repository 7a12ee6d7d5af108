//! The Polly stand-in: `StartSpeechSynthesisStream`, voiced by the local Kokoro with a voice pack
//! of its own and resampled to Polly's 16 kHz. `TextEvent`s are buffered until a forced flush (or the
//! close); `CloseStreamEvent` finishes the audio and answers `StreamClosedEvent` with the characters
//! received. Like Polly, it closes a stream that has had no input for 5 s, and it only accepts the
//! generative engine and PCM. A test makes it throw a documented exception by sending a text
//! holding `[[ExceptionName]]`.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use earshot_backends::kokoro_wire::{self, ControlMessage};
use futures_util::{SinkExt, StreamExt};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

use crate::eventstream::{channel_body, event, exception, read_events};
use crate::resample::resample;
use crate::server::{error, stream_response, Body, State};

const EXCEPTIONS: [&str; 4] = ["ValidationException", "ThrottlingException", "ServiceQuotaExceededException", "ServiceFailureException"];

pub async fn handle(req: Request<Incoming>, state: Arc<State>) -> Response<Body> {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    if header("x-amzn-engine") != "generative" {
        return error(StatusCode::BAD_REQUEST, "ValidationException", "StartSpeechSynthesisStream requires the generative engine");
    }
    if header("x-amzn-outputformat") != "pcm" {
        return error(StatusCode::BAD_REQUEST, "ValidationException", "this stand-in speaks PCM only");
    }
    if header("x-amzn-voiceid").is_empty() {
        return error(StatusCode::BAD_REQUEST, "ValidationException", "VoiceId is required");
    }
    let rate: u32 = header("x-amzn-samplerate").parse().unwrap_or(16_000);
    let ws = match tokio_tungstenite::connect_async(state.kokoro_ws_url()).await {
        Ok((ws, _)) => ws,
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, "ServiceFailureException", &format!("the voice is unavailable: {e}")),
    };
    state.stats.polly_streams.fetch_add(1, Ordering::SeqCst);
    let (out, body) = channel_body();
    let events = read_events(req.into_body());
    tokio::spawn(session(state, events, ws, out, rate));
    stream_response(body, &[])
}

async fn session(
    state: Arc<State>,
    mut events: tokio::sync::mpsc::Receiver<Result<crate::eventstream::Event, String>>,
    mut ws: Ws,
    out: tokio::sync::mpsc::Sender<Bytes>,
    rate: u32,
) {
    let voice = state.config.polly_voice.clone();
    let idle = state.config.polly_idle_timeout;
    let mut buffer = String::new();
    let mut characters: u64 = 0;
    let mut next_request = 0u32;
    let mut outstanding = 0usize;
    let mut closing = false;
    let mut input_open = true;
    let mut last_activity = Instant::now();
    loop {
        if closing && outstanding == 0 {
            let closed = serde_json::json!({"RequestCharacters": characters}).to_string();
            let _ = out.send(event("StreamClosedEvent", "application/json", &[], closed)).await;
            break;
        }
        let idle_at = last_activity + idle;
        tokio::select! {
            input = events.recv(), if input_open => match input {
                Some(Ok(e)) if e.event_type == "TextEvent" => {
                    last_activity = Instant::now();
                    let json: serde_json::Value = serde_json::from_slice(&e.payload).unwrap_or_default();
                    let text = json["Text"].as_str().unwrap_or("").to_string();
                    if let Some(name) = EXCEPTIONS.iter().find(|n| text.contains(&format!("[[{n}]]"))) {
                        let _ = out.send(exception(name, &serde_json::json!({"message": format!("{name} requested by the test")}))).await;
                        break;
                    }
                    if text.trim().is_empty() {
                        state.stats.polly_keep_alives.fetch_add(1, Ordering::SeqCst);
                    }
                    characters += text.chars().count() as u64;
                    buffer.push_str(&text);
                    let flush = json["FlushStreamConfiguration"]["Force"].as_bool() == Some(true);
                    if flush && !speak_buffer(&mut ws, &mut buffer, &voice, &mut next_request, &mut outstanding).await {
                        break;
                    }
                }
                Some(Ok(e)) if e.event_type == "CloseStreamEvent" => {
                    if !speak_buffer(&mut ws, &mut buffer, &voice, &mut next_request, &mut outstanding).await {
                        break;
                    }
                    closing = true;
                }
                Some(Ok(_)) => {}
                Some(Err(message)) => {
                    let _ = out.send(exception("ValidationException", &serde_json::json!({"message": message}))).await;
                    break;
                }
                None => {
                    input_open = false;
                    closing = true;
                }
            },
            message = ws.next() => match message {
                Some(Ok(Message::Binary(frame))) => {
                    if let Ok(Some(audio)) = kokoro_wire::parse_audio(Bytes::from(frame.to_vec())) {
                        let pcm = resample(&audio.pcm, kokoro_wire_rate(), rate);
                        if out.send(event("AudioEvent", "application/octet-stream", &[], pcm)).await.is_err() {
                            break;
                        }
                    }
                }
                Some(Ok(Message::Text(text))) => match kokoro_wire::parse_control(&text) {
                    Ok(ControlMessage::End { .. }) | Ok(ControlMessage::Cancelled { .. }) => {
                        outstanding = outstanding.saturating_sub(1);
                        last_activity = Instant::now();
                    }
                    Ok(ControlMessage::Error { message, .. }) => {
                        let _ = out.send(exception("ServiceFailureException", &serde_json::json!({"message": message}))).await;
                        break;
                    }
                    _ => {}
                },
                Some(Ok(_)) => {}
                _ => {
                    let _ = out.send(exception("ServiceFailureException", &serde_json::json!({"message": "the voice went away"}))).await;
                    break;
                }
            },
            _ = tokio::time::sleep_until(idle_at), if !closing && outstanding == 0 => {
                // Polly closes a stream that has had no input for 5 s.
                state.stats.polly_idle_closes.fetch_add(1, Ordering::SeqCst);
                let closed = serde_json::json!({"RequestCharacters": characters}).to_string();
                let _ = out.send(event("StreamClosedEvent", "application/json", &[], closed)).await;
                break;
            }
        }
    }
    let _ = ws.send(Message::Text(kokoro_wire::close().into())).await;
    let _ = ws.close(None).await;
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Sends the buffered text, if there is any, to the voice as one request; says whether the voice is
/// still there.
async fn speak_buffer(ws: &mut Ws, buffer: &mut String, voice: &str, next_request: &mut u32, outstanding: &mut usize) -> bool {
    if buffer.trim().is_empty() {
        return true;
    }
    let id = format!("p{next_request}");
    *next_request += 1;
    if ws.send(Message::Text(kokoro_wire::synthesize(&id, buffer.trim(), voice, 1.0).into())).await.is_err() {
        return false;
    }
    *outstanding += 1;
    buffer.clear();
    true
}

fn kokoro_wire_rate() -> u32 {
    earshot_backends::container_session::KOKORO_SAMPLE_RATE
}
