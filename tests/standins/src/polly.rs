//! The Polly stand-in: `StartSpeechSynthesisStream`, voiced by the local Kokoro with a voice pack
//! of its own and resampled to Polly's 16 kHz. It models what Polly documents and nothing more:
//! - the stream opens without the voice: it is reached at the first text to speak, so a stream opened
//!   and closed with no text (the deploy preflight's probe) ends in a `StreamClosedEvent` of 0 characters;
//!   a voice it cannot reach then is a `ServiceFailureException` in the stream;
//! - `TextEvent`s are buffered until a forced flush (or the close); each flush is one utterance;
//! - `AudioEvent`s carry audio only, never which text they voice (nothing here tags them);
//! - `CloseStreamEvent` finishes the audio of what was sent, then `StreamClosedEvent` reports the
//!   characters received (white space included: the stand-in cannot know what Polly bills for it);
//! - a stream with no input for 5 s is closed (`StreamClosedEvent`), white space counting as input;
//! - a stream ends after its maximum duration (10 minutes). Polly does not document what it sends
//!   then; the stand-in assumes a `StreamClosedEvent`, the only documented end;
//! - only the generative engine and PCM are accepted;
//! - a `TextEvent` whose `TextType` is `ssml` is one `<speak>` document ("All SSML-enhanced text must be
//!   enclosed within a pair of `<speak>` tags", Polly's SSML reference). The stand-in reads the tags
//!   earshot sends, `<prosody rate="N%">` (20 % to 200 %, or `x-slow` to `x-fast`), and says the text at
//!   that rate, and `<phoneme alphabet="ipa" ph="…">` (said by the local Kokoro with those phonemes; AWS's
//!   "Supported SSML tags" gives the generative voices partial availability of it); any other tag, or a document that is not well formed, is a `ValidationException`
//!   ("Unsupported SSML tags in input text generate errors"). SSML tags are not billed characters (the
//!   `SynthesizeSpeech` limits: "SSML tags are not counted as billed characters"), so only the text is
//!   counted.
//!
//! A test makes it throw a documented exception by sending a text holding `[[ExceptionName]]`, and
//! can make it deliver audio late, in bursts or in odd-length pieces ([`PollyDelivery`]): Polly
//! promises no pacing, so a client must not depend on one. Every utterance's text and the exact
//! bytes sent for it are kept in `Stats::polly_spoken`, so a test can compare what a client got.

use std::collections::HashMap;
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
use crate::server::{error, stream_response, Body, PollyDelivery, Spoken, State};

const EXCEPTIONS: [&str; 4] = ["ValidationException", "ThrottlingException", "ServiceQuotaExceededException", "ServiceFailureException"];

pub async fn handle(req: Request<Incoming>, state: Arc<State>) -> Response<Body> {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    if header("x-amzn-engine") != "generative" {
        return error(StatusCode::BAD_REQUEST, "ValidationException", "StartSpeechSynthesisStream requires the generative engine");
    }
    if header("x-amzn-outputformat") != "pcm" {
        return error(StatusCode::BAD_REQUEST, "ValidationException", "this stand-in speaks PCM only");
    }
    let voice_id = header("x-amzn-voiceid");
    if voice_id.is_empty() {
        return error(StatusCode::BAD_REQUEST, "ValidationException", "VoiceId is required");
    }
    // The language the voice speaks: a bilingual voice's `LanguageCode` where given, else its own. The
    // local Kokoro reads it with that language's front end (it speaks en, fr, zh and ja).
    let language = Some(header("x-amzn-languagecode"))
        .filter(|l| !l.is_empty())
        .or_else(|| VOICES.iter().find(|(name, _, _)| *name == voice_id).map(|(_, l, _)| l.to_string()))
        .and_then(|tag| earshot_core::language::Language::parse(&tag).ok())
        .filter(|l| ["en", "fr", "zh", "ja"].contains(&l.as_str()));
    *state.stats.last_polly_voice.lock().expect("stats lock") = Some(voice_id);
    // "Valid values for pcm are 8000 and 16000. The default value is 16000" (`SampleRate`, Polly's API reference).
    let rate: u32 = match header("x-amzn-samplerate").as_str() {
        "" | "16000" => 16_000,
        "8000" => 8_000,
        other => return error(StatusCode::BAD_REQUEST, "ValidationException", &format!("SampleRate {other} is not valid for pcm (8000 or 16000)")),
    };
    *state.stats.last_polly_rate.lock().expect("stats lock") = Some(rate);
    state.stats.polly_streams.fetch_add(1, Ordering::SeqCst);
    state.stats.polly_streams_live.fetch_add(1, Ordering::SeqCst);
    let (out, body) = channel_body();
    let events = read_events(req.into_body());
    tokio::spawn(async move {
        let live = state.clone();
        session(state, events, out, rate, language).await;
        live.stats.polly_streams_live.fetch_sub(1, Ordering::SeqCst);
    });
    stream_response(body, &[])
}

async fn session(
    state: Arc<State>,
    mut events: tokio::sync::mpsc::Receiver<Result<crate::eventstream::Event, String>>,
    out: tokio::sync::mpsc::Sender<Bytes>,
    rate: u32,
    language: Option<earshot_core::language::Language>,
) {
    let voice = state.config.polly_voice.clone();
    let idle = state.config.polly_idle_timeout;
    let ends_at = Instant::now() + state.config.polly_max_duration;
    // A client that resets its stream drops the response body: the session ends then, as Polly's does.
    let client = out.clone();
    let sender = Sender::start(out, state.clone());
    // The voice is reached at the first text to speak, not at the stream's opening: a stream opened and
    // closed without text (the deploy preflight's probe) costs Polly nothing and needs no voice here.
    let mut ws: Option<Ws> = None;
    let mut buffer = String::new();
    // The rate of the text in the buffer (the last SSML `prosody` read; 1: the voice's own).
    let mut speed = 1.0f32;
    let mut characters: u64 = 0;
    // Utterances at the voice: request id → its place in `Stats::polly_spoken`.
    let mut utterances: HashMap<String, usize> = HashMap::new();
    let mut next_request = 0u32;
    let mut closing = false;
    let mut input_open = true;
    let mut last_activity = Instant::now();
    loop {
        if closing && utterances.is_empty() {
            sender.raw(event("StreamClosedEvent", "application/json", &[], closed_json(characters))).await;
            break;
        }
        let idle_at = last_activity + idle;
        tokio::select! {
            input = events.recv(), if input_open => match input {
                Some(Ok(e)) if e.event_type == "TextEvent" => {
                    last_activity = Instant::now();
                    let json: serde_json::Value = serde_json::from_slice(&e.payload).unwrap_or_default();
                    let mut text = json["Text"].as_str().unwrap_or("").to_string();
                    if json["TextType"].as_str() == Some("ssml") {
                        state.stats.polly_ssml.lock().expect("stats lock").push(text.clone());
                        match read_ssml(&text) {
                            Ok((said, rate)) => {
                                text = said;
                                speed = rate;
                            }
                            Err(message) => {
                                sender.raw(exception("ValidationException", &serde_json::json!({"message": message}))).await;
                                break;
                            }
                        }
                    } else if !text.trim().is_empty() {
                        speed = 1.0;
                    }
                    if let Some(name) = EXCEPTIONS.iter().find(|n| text.contains(&format!("[[{n}]]"))) {
                        sender.raw(exception(name, &serde_json::json!({"message": format!("{name} requested by the test")}))).await;
                        break;
                    }
                    if text.trim().is_empty() {
                        state.stats.polly_keep_alives.fetch_add(1, Ordering::SeqCst);
                    }
                    characters += text.chars().count() as u64;
                    buffer.push_str(&text);
                    let flush = json["FlushStreamConfiguration"]["Force"].as_bool() == Some(true);
                    if flush && !speak_buffer(&state, &mut ws, &mut buffer, (&voice, language.as_ref(), speed), &mut next_request, &mut utterances).await {
                        sender.raw(exception("ServiceFailureException", &serde_json::json!({"message": "the voice is unavailable"}))).await;
                        break;
                    }
                }
                Some(Ok(e)) if e.event_type == "CloseStreamEvent" => {
                    if !speak_buffer(&state, &mut ws, &mut buffer, (&voice, language.as_ref(), speed), &mut next_request, &mut utterances).await {
                        sender.raw(exception("ServiceFailureException", &serde_json::json!({"message": "the voice is unavailable"}))).await;
                        break;
                    }
                    closing = true;
                }
                Some(Ok(_)) => {}
                Some(Err(message)) => {
                    sender.raw(exception("ValidationException", &serde_json::json!({"message": message}))).await;
                    break;
                }
                None => {
                    input_open = false;
                    closing = true;
                }
            },
            message = next_message(&mut ws) => match message {
                Some(Ok(Message::Binary(frame))) => {
                    if let Ok(Some(audio)) = kokoro_wire::parse_audio(Bytes::from(frame.to_vec())) {
                        if let Some(&utterance) = utterances.get(&audio.request_id) {
                            let pcm = resample(&audio.pcm, kokoro_wire_rate(), rate);
                            sender.audio(utterance, pcm).await;
                        }
                    }
                }
                Some(Ok(Message::Text(text))) => match kokoro_wire::parse_control(&text) {
                    Ok(ControlMessage::End { request_id, .. }) | Ok(ControlMessage::Cancelled { request_id, .. }) => {
                        if let Some(utterance) = utterances.remove(&request_id) {
                            sender.end(utterance).await;
                        }
                        last_activity = Instant::now();
                    }
                    Ok(ControlMessage::Error { message, .. }) => {
                        sender.raw(exception("ServiceFailureException", &serde_json::json!({"message": message}))).await;
                        break;
                    }
                    _ => {}
                },
                Some(Ok(_)) => {}
                _ => {
                    sender.raw(exception("ServiceFailureException", &serde_json::json!({"message": "the voice went away"}))).await;
                    break;
                }
            },
            _ = tokio::time::sleep_until(idle_at), if !closing && utterances.is_empty() => {
                // Polly closes a stream that has had no input for 5 s.
                state.stats.polly_idle_closes.fetch_add(1, Ordering::SeqCst);
                sender.raw(event("StreamClosedEvent", "application/json", &[], closed_json(characters))).await;
                break;
            }
            _ = client.closed() => break,
            _ = tokio::time::sleep_until(ends_at) => {
                state.stats.polly_max_duration_closes.fetch_add(1, Ordering::SeqCst);
                sender.raw(event("StreamClosedEvent", "application/json", &[], closed_json(characters))).await;
                break;
            }
        }
    }
    sender.finish().await;
    if let Some(mut ws) = ws {
        let _ = ws.send(Message::Text(kokoro_wire::close().into())).await;
        let _ = ws.close(None).await;
    }
}

/// The voice's next message; never, while no text has needed the voice.
async fn next_message(ws: &mut Option<Ws>) -> Option<Result<Message, tokio_tungstenite::tungstenite::Error>> {
    match ws {
        Some(ws) => ws.next().await,
        None => std::future::pending().await,
    }
}

fn closed_json(characters: u64) -> String {
    serde_json::json!({"RequestCharacters": characters}).to_string()
}

/// What the session hands to the sender, in the order it must leave.
enum Out {
    Audio {
        utterance: usize,
        pcm: Vec<u8>,
    },
    /// The utterance's audio is complete.
    End {
        utterance: usize,
    },
    Raw(Bytes),
}

/// Writes the stream's events in order, paced and cut as the delivery says, and records each byte of
/// audio against its utterance as it leaves.
struct Sender {
    queue: tokio::sync::mpsc::UnboundedSender<Out>,
    task: tokio::task::JoinHandle<()>,
}

impl Sender {
    fn start(out: tokio::sync::mpsc::Sender<Bytes>, state: Arc<State>) -> Sender {
        let (queue, mut items) = tokio::sync::mpsc::unbounded_channel::<Out>();
        let delivery: PollyDelivery = state.config.polly_delivery.clone();
        let task = tokio::spawn(async move {
            let mut started: HashMap<usize, bool> = HashMap::new();
            let mut held: HashMap<usize, Vec<u8>> = HashMap::new();
            while let Some(item) = items.recv().await {
                let (utterance, pcm) = match item {
                    Out::Raw(bytes) => {
                        if out.send(bytes).await.is_err() {
                            return;
                        }
                        continue;
                    }
                    Out::Audio { utterance, pcm } if delivery.burst => {
                        held.entry(utterance).or_default().extend_from_slice(&pcm);
                        continue;
                    }
                    Out::Audio { utterance, pcm } => (utterance, pcm),
                    Out::End { utterance } => match held.remove(&utterance) {
                        Some(pcm) => (utterance, pcm),
                        None => continue,
                    },
                };
                let first = !started.insert(utterance, true).unwrap_or(false);
                let pieces: Vec<&[u8]> = if delivery.odd_chunks { pcm.chunks(301).collect() } else { vec![&pcm[..]] };
                for piece in pieces {
                    if piece.is_empty() {
                        continue;
                    }
                    if out.send(event("AudioEvent", "application/octet-stream", &[], Bytes::copy_from_slice(piece))).await.is_err() {
                        return;
                    }
                    if let Some(spoken) = state.stats.polly_spoken.lock().expect("the log").get_mut(utterance) {
                        spoken.audio.extend_from_slice(piece);
                    }
                }
                if first {
                    if let Some(stall) = delivery.stall {
                        tokio::time::sleep(stall).await;
                    }
                }
            }
        });
        Sender { queue, task }
    }

    async fn audio(&self, utterance: usize, pcm: Vec<u8>) {
        let _ = self.queue.send(Out::Audio { utterance, pcm });
    }

    async fn end(&self, utterance: usize) {
        let _ = self.queue.send(Out::End { utterance });
    }

    async fn raw(&self, bytes: Bytes) {
        let _ = self.queue.send(Out::Raw(bytes));
    }

    /// Waits until everything queued has left (or the client has gone).
    async fn finish(self) {
        drop(self.queue);
        let _ = self.task.await;
    }
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Sends the buffered text, if there is any, to the voice as one utterance; says whether the voice is
/// still there.
async fn speak_buffer(
    state: &State,
    ws: &mut Option<Ws>,
    buffer: &mut String,
    (voice, language, speed): (&str, Option<&earshot_core::language::Language>, f32),
    next_request: &mut u32,
    utterances: &mut HashMap<String, usize>,
) -> bool {
    if buffer.trim().is_empty() {
        buffer.clear();
        return true;
    }
    if ws.is_none() {
        match tokio_tungstenite::connect_async_with_config(state.kokoro_ws_url(), None, true).await {
            Ok((connected, _)) => *ws = Some(connected),
            Err(_) => return false,
        }
    }
    let Some(voice_ws) = ws.as_mut() else { return false };
    let id = format!("p{next_request}");
    *next_request += 1;
    if voice_ws.send(Message::Text(kokoro_wire::synthesize(&id, buffer.trim(), voice, language, speed.clamp(0.5, 2.0)).into())).await.is_err() {
        return false;
    }
    let mut spoken = state.stats.polly_spoken.lock().expect("the log");
    spoken.push(Spoken { text: buffer.trim().to_string(), audio: Vec::new() });
    utterances.insert(id, spoken.len() - 1);
    buffer.clear();
    true
}

/// An SSML `TextEvent`'s text and rate (see the module docs); `Err` with Polly's kind of message.
fn read_ssml(document: &str) -> Result<(String, f32), String> {
    let inner = document
        .trim()
        .strip_prefix("<speak>")
        .and_then(|d| d.strip_suffix("</speak>"))
        .ok_or_else(|| "Invalid SSML request: the text must be one <speak> document".to_string())?;
    let (mut text, mut rate, mut open) = (String::new(), 1.0f32, 0usize);
    // The phonemes of the `<phoneme>` being read, and where its words start in `text`.
    let mut phoneme: Option<(String, usize)> = None;
    let mut rest = inner;
    while let Some(at) = rest.find('<') {
        text.push_str(&rest[..at]);
        let end = rest[at..].find('>').ok_or("Invalid SSML request: a tag is not closed")? + at;
        let tag = &rest[at + 1..end];
        if tag == "/prosody" && open > 0 {
            open -= 1;
        } else if let Some(ph) = tag.strip_prefix("phoneme alphabet=\"ipa\" ph=\"").and_then(|t| t.strip_suffix('"')) {
            if phoneme.is_some() || ph.is_empty() {
                return Err("Invalid SSML request: a <phoneme> inside a <phoneme>, or one without phonemes".into());
            }
            phoneme = Some((ph.to_string(), text.len()));
        } else if tag == "/phoneme" && phoneme.is_some() {
            // Said by the local Kokoro as its own markup says a pronunciation: `[words](/phonemes/)`.
            let (ph, start) = phoneme.take().expect("a phoneme is open");
            let words = text.split_off(start);
            text.push_str(&format!("[{words}](/{ph}/)"));
        } else if let Some(value) = tag.strip_prefix("prosody rate=\"").and_then(|t| t.strip_suffix('"')) {
            rate = match value {
                "x-slow" => 0.5,
                "slow" => 0.75,
                "medium" => 1.0,
                "fast" => 1.25,
                "x-fast" => 1.5,
                percent => match percent.strip_suffix('%').and_then(|p| p.parse::<f32>().ok()) {
                    Some(p) if (20.0..=200.0).contains(&p) => p / 100.0,
                    _ => return Err(format!("Invalid SSML request: prosody rate `{value}` is not 20% to 200%")),
                },
            };
            open += 1;
        } else {
            return Err(format!("Invalid SSML request: unsupported tag <{tag}>"));
        }
        rest = &rest[end + 1..];
    }
    text.push_str(rest);
    if open != 0 || phoneme.is_some() {
        return Err("Invalid SSML request: a <prosody> or <phoneme> is not closed".into());
    }
    let text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&");
    Ok((text, rate))
}

fn kokoro_wire_rate() -> u32 {
    earshot_backends::container_session::KOKORO_SAMPLE_RATE
}

/// The generative voices the stand-in offers: (Id, LanguageCode, an additional language). None speaks
/// Mandarin, so that a Mandarin answer must go to another arm: the case the router's language rule is for.
const VOICES: [(&str, &str, Option<&str>); 7] = [
    ("Ruth", "en-US", None),
    ("Matthew", "en-US", None),
    ("Amy", "en-GB", None),
    ("Ayanda", "en-ZA", None),
    ("Kajal", "en-IN", Some("hi-IN")),
    ("Lea", "fr-FR", None),
    ("Remi", "fr-FR", None),
];

/// `DescribeVoices` (`GET /v1/voices`), which the backend reads its voices from: generative voices of
/// several languages from the developer guide's "Generative voices" table, two of them outside earshot's
/// built-in list (Ayanda, and Kajal, bilingual), in the response shape of Polly's API reference
/// (`Voices`, each with `Id`, `Name`, `LanguageCode`, `AdditionalLanguageCodes`, `SupportedEngines`).
pub fn describe_voices() -> Response<Body> {
    let voices: Vec<serde_json::Value> = VOICES
        .iter()
        .map(|(name, language, other)| {
            let mut voice = serde_json::json!({"Id": name, "Name": name, "LanguageCode": language, "SupportedEngines": ["generative", "neural"]});
            if let Some(other) = other {
                voice["AdditionalLanguageCodes"] = serde_json::json!([other]);
            }
            voice
        })
        .collect();
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .body(crate::server::full(serde_json::json!({ "Voices": voices }).to_string()))
        .expect("a voices response")
}

#[cfg(test)]
mod tests {
    use super::read_ssml;

    #[test]
    fn ssml_is_read_for_its_text_and_rate_and_other_tags_are_refused() {
        assert_eq!(read_ssml("<speak><prosody rate=\"150%\">Tom &amp; Jerry.</prosody></speak>"), Ok(("Tom & Jerry.".into(), 1.5)));
        assert_eq!(read_ssml("<speak>Plain.</speak>"), Ok(("Plain.".into(), 1.0)));
        assert_eq!(read_ssml("<speak>Ask <phoneme alphabet=\"ipa\" ph=\"wˈɪn\">Nguyen</phoneme>.</speak>"), Ok(("Ask [Nguyen](/wˈɪn/).".into(), 1.0)));
        assert!(read_ssml("<speak>Ask <phoneme alphabet=\"ipa\" ph=\"wˈɪn\">Nguyen.</speak>").is_err());
        assert!(read_ssml("Plain.").is_err());
        assert!(read_ssml("<speak><emphasis>Hi</emphasis></speak>").unwrap_err().contains("unsupported tag <emphasis>"));
        assert!(read_ssml("<speak><prosody rate=\"300%\">Hi</prosody></speak>").is_err());
        assert!(read_ssml("<speak><prosody rate=\"90%\">Hi</speak>").is_err());
    }
}
