//! The `openai` suite: OpenAI's `POST /v1/audio/speech` against earshot's own `POST /v1/speak` in text
//! mode, on one `earshot serve` with the real Kokoro model. Both take the same text, go through the same
//! routing, session stack and scheduler, and stream audio as each sentence is made; the endpoint differs
//! only in its framing (raw PCM in the body against SSE with base64 audio), so their first audio should
//! sit on the same floor. The cells alternate, in a shuffled order each round, all three saying the
//! round's text (the cache is off, so each says it anew). Measured at the client from the request's send: the first audio event decoded for
//! `/v1/speak` (earshot's client), the first byte of the body for `/v1/audio/speech` (reqwest), asked for
//! `pcm` and for `mp3` (OpenAI's default: its first bytes are whole MP3 frames, so the first byte is the
//! first decodable frame).
//!
//! The model's own spread (tens of milliseconds a request on this machine) hides what the format adds, so
//! a second part asks the same question of the synthetic voice, whose first audio comes at a fixed time:
//! `pcm` and `mp3` alternate on one `earshot serve --backends synthetic`, in a shuffled order each round,
//! and each round's difference (mp3's first byte less pcm's) is kept, so what is left is the MP3 path.

use std::time::Instant;

use earshot_client::{speak, CallOptions, SpeakBody};
use serde::{Deserialize, Serialize};

use crate::stack::{self, Paths};
use crate::Rng;

/// A short opener, then a sentence: the first audio is the opener's.
const TEXTS: &[&str] = &[
    "Sure. Your order shipped this morning.",
    "Okay. The store opens at nine tomorrow.",
    "Right. Your refund was issued yesterday.",
    "Yes. Your appointment is on Tuesday at three.",
];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    /// `POST /v1/speak` with `text`: the client's first audio, per request.
    pub speak_ms: Vec<f64>,
    /// `POST /v1/audio/speech` (`response_format` `pcm`): the first byte of audio, per request.
    pub openai_ms: Vec<f64>,
    /// `POST /v1/audio/speech` (`response_format` `mp3`): the first byte, a whole MP3 frame, per request.
    #[serde(default)]
    pub mp3_ms: Vec<f64>,
    /// The synthetic voice, `pcm`: the first byte of audio, per round.
    #[serde(default)]
    pub steady_pcm_ms: Vec<f64>,
    /// The synthetic voice, `mp3`: the first byte (a whole frame), in the same rounds.
    #[serde(default)]
    pub steady_mp3_ms: Vec<f64>,
}

/// Rounds of the synthetic voice's pair for each round of the model's cells: each takes milliseconds.
const STEADY_ROUNDS_PER_TRIAL: usize = 5;

pub async fn run(paths: &Paths, trials: usize) -> Result<Results, String> {
    let kokoro = stack::kokoro(paths).await?;
    let args: Vec<String> = ["--backends", "kokoro", "--kokoro-url", &kokoro.url].iter().map(|s| s.to_string()).collect();
    let gateway = stack::gateway(paths, "gateway-openai", &args, &[]).await?;
    let http = reqwest::Client::new();
    let mut results = Results { speak_ms: Vec::new(), openai_ms: Vec::new(), mp3_ms: Vec::new(), steady_pcm_ms: Vec::new(), steady_mp3_ms: Vec::new() };
    // One round unmeasured: the first of each opens its connections and warms the model.
    for (round, order) in Rng(0x0_0A15).balanced_orders(3, trials + 1).into_iter().enumerate() {
        for cell in order {
            // The same input for every cell of a round (the cache is off: each says it anew), so that a round's
            // cells differ only in endpoint and format; the model's time for a sentence varies by hundreds of
            // milliseconds from one text to the next on this machine.
            let text = format!("{} Round {round}.", TEXTS[round % TEXTS.len()]);
            let ms = match cell {
                0 => speak_first_audio(&gateway.url, &text).await?,
                1 => openai_first_audio(&http, &gateway.url, &text, "pcm").await?,
                _ => openai_first_audio(&http, &gateway.url, &text, "mp3").await?,
            };
            if round > 0 {
                [&mut results.speak_ms, &mut results.openai_ms, &mut results.mp3_ms][cell].push(ms);
            }
        }
    }
    drop(gateway);
    let args: Vec<String> = ["--backends", "synthetic"].iter().map(|s| s.to_string()).collect();
    let steady = stack::gateway(paths, "gateway-openai-steady", &args, &[]).await?;
    for (round, order) in Rng(0x0_0A16).balanced_orders(2, trials * STEADY_ROUNDS_PER_TRIAL + 1).into_iter().enumerate() {
        for cell in order {
            let text = format!("{} Round {round}.", TEXTS[round % TEXTS.len()]);
            let ms = openai_first_byte(&http, &steady.url, &text, ["pcm", "mp3"][cell]).await?;
            if round > 0 {
                [&mut results.steady_pcm_ms, &mut results.steady_mp3_ms][cell].push(ms);
            }
        }
    }
    Ok(results)
}

async fn speak_first_audio(url: &str, text: &str) -> Result<f64, String> {
    let body = SpeakBody { text: Some(text.to_string()), ..Default::default() };
    let received = speak(url, &body, &CallOptions::default()).await.map_err(|e| format!("/v1/speak: {e}"))?;
    if let Some(error) = &received.error {
        return Err(format!("/v1/speak: {}: {}", error.code, error.message));
    }
    received.marks.first_audio_decoded_ms.ok_or_else(|| "/v1/speak: no audio".to_string())
}

/// `POST /v1/audio/speech` for `text` in `format`, its answer's head read.
async fn send_speech(http: &reqwest::Client, url: &str, text: &str, format: &str) -> Result<reqwest::Response, String> {
    let body = serde_json::json!({"model": "tts-1", "voice": "alloy", "input": text, "response_format": format});
    let response = http.post(format!("{url}/v1/audio/speech")).json(&body).send().await.map_err(|e| format!("/v1/audio/speech: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("/v1/audio/speech: {}", response.status()));
    }
    Ok(response)
}

/// The first byte only: the answer is dropped there (the gateway stops it), so a round takes its first audio's
/// time, not the answer's.
async fn openai_first_byte(http: &reqwest::Client, url: &str, text: &str, format: &str) -> Result<f64, String> {
    let sent = Instant::now();
    let mut response = send_speech(http, url, text, format).await?;
    while let Some(chunk) = response.chunk().await.map_err(|e| format!("/v1/audio/speech: {e}"))? {
        if !chunk.is_empty() {
            return Ok(sent.elapsed().as_secs_f64() * 1000.0);
        }
    }
    Err("/v1/audio/speech: no audio".to_string())
}

async fn openai_first_audio(http: &reqwest::Client, url: &str, text: &str, format: &str) -> Result<f64, String> {
    let sent = Instant::now();
    let mut response = send_speech(http, url, text, format).await?;
    let mut first = None;
    while let Some(chunk) = response.chunk().await.map_err(|e| format!("/v1/audio/speech: {e}"))? {
        if !chunk.is_empty() {
            first.get_or_insert(sent.elapsed().as_secs_f64() * 1000.0);
        }
    }
    first.ok_or_else(|| "/v1/audio/speech: no audio".to_string())
}
