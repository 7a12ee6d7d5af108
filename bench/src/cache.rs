//! The sentence cache: first audio of a sentence said again against the model's first time, on the real
//! Kokoro model, and the Polly characters it spares over a scripted day of answers.
//!
//! - **First audio**: each round speaks a sentence never said before (a miss: the model's first audio), then
//!   the same sentence again (a hit). Both through `earshot serve` with the cache on and no warm-up, so
//!   every miss is the model's.
//! - **A scripted day**: answers built like an agent's (an opener, one of a few bodies, a closer), spoken
//!   through the Polly stand-in (the real SDK, Kokoro's voice) with the cache on, as a day's traffic
//!   repeats itself. Polly bills what it is sent: the characters billed and those the cache spared are
//!   read from each answer's timeline.
//! - **The shared tier**: the day's gateway and a second one (a second warm Lambda) share an S3 prefix on
//!   moto's server; the second replays some of the day's answers, and each sentence it fetches is timed
//!   from release to first audio beside Polly's own first audio for the sentences it synthesized. moto
//!   answers on loopback: the figure is the tier's own cost, not S3's network time.

use serde::{Deserialize, Serialize};

use crate::stack::{self, Paths};
use crate::trial::{self, Measured};
use crate::Rng;

const OPENERS: &[&str] = &["Sure.", "Okay.", "Let me check that for you.", "One moment."];
const BODIES: &[&str] = &[
    "Your order shipped this morning.",
    "Your refund was issued yesterday.",
    "The store opens at nine tomorrow.",
    "Your appointment is on Tuesday at three.",
    "That item is back in stock.",
    "Your password was reset.",
    "The delivery is running a day late.",
    "Your plan renews on the first of the month.",
];
const CLOSERS: &[&str] = &["Is there anything else I can help you with?", "Anything else?", "Have a good day."];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    /// Pairs of the same sentence: the model's first time, then the cache's.
    pub first_audio: Vec<Pair>,
    pub day: Day,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pair {
    pub round: usize,
    pub miss: Measured,
    pub hit: Measured,
    /// Release to first audio at the gateway, for each.
    pub miss_release_to_audio_ms: Option<f64>,
    pub hit_release_to_audio_ms: Option<f64>,
    pub hit_was_cached: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Day {
    /// Release to first audio of each sentence Polly synthesized, and of each the second gateway fetched
    /// from the shared tier.
    #[serde(default)]
    pub polly_release_to_audio_ms: Vec<f64>,
    #[serde(default)]
    pub shared_release_to_audio_ms: Vec<f64>,
    pub answers: usize,
    pub sentences: usize,
    pub cache_hits: usize,
    /// Characters Polly billed, and characters of the sentences played from the cache instead.
    pub billed_characters: u64,
    pub saved_characters: u64,
}

pub async fn run(paths: &Paths, trials: usize, day_answers: usize, moto_server: &std::path::Path) -> Result<Results, String> {
    let kokoro = stack::kokoro(paths).await?;
    // The text arrives at once (the scripted agent would otherwise type it at 30 tokens a second, and first
    // audio would wait for the sentence's last word either way).
    let args: Vec<String> =
        ["--kokoro-url", &kokoro.url, "--cache", "deployment", "--cache-warmup", "none", "--tokens-per-second", "10000", "--first-token-ms", "0"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let gateway = stack::gateway(paths, "gateway-cache", &args, &[]).await?;
    let mut first_audio = Vec::new();
    for round in 0..trials {
        // A sentence no round has said: the first time is the model's.
        let text = format!("Your order number {} shipped this morning.", 1000 + round);
        let body = trial::body(None, Some(&text), "incremental", None);
        stack::kokoro_idle(&kokoro.url).await?;
        let (miss, miss_release) = spoken(&gateway.url, &body).await?;
        stack::kokoro_idle(&kokoro.url).await?;
        let (hit, hit_release) = spoken(&gateway.url, &body).await?;
        first_audio.push(Pair {
            round,
            miss: miss.0,
            hit: hit.0,
            miss_release_to_audio_ms: miss_release,
            hit_release_to_audio_ms: hit_release,
            hit_was_cached: hit.1,
        });
    }
    drop(gateway);
    let (standins, pem) = stack::standins(paths, &kokoro.url).await?;
    let (_moto, moto_url) = moto(paths, moto_server).await?;
    let args: Vec<String> = [
        "--backends",
        "polly",
        "--aws-endpoint",
        &standins.url,
        "--cache",
        "deployment",
        "--cache-warmup",
        "none",
        "--cache-bucket",
        BUCKET,
        "--cache-endpoint",
        &moto_url,
        "--aws-trust-pem",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([pem.display().to_string()])
    .collect();
    let polly = stack::gateway(paths, "gateway-cache-polly", &args, &stack::aws_env()).await?;
    let second = stack::gateway(paths, "gateway-cache-polly-second", &args, &stack::aws_env()).await?;
    let mut rng = Rng(0xCAC4E);
    let mut day = Day::default();
    let mut answers = Vec::new();
    for _ in 0..day_answers {
        let text = format!("{} {} {}", rng.pick(OPENERS), rng.pick(BODIES), rng.pick(CLOSERS));
        let (timeline, _) = answer(&polly.url, &text).await?;
        day.answers += 1;
        day.sentences += timeline.sentences.len();
        day.cache_hits += timeline.cache_hits();
        day.billed_characters += timeline.billed_characters.unwrap_or(0);
        day.saved_characters += timeline.cached_characters();
        day.polly_release_to_audio_ms.extend(timeline.sentences.iter().filter(|s| !s.cached).filter_map(release_to_audio));
        answers.push(text);
    }
    // The second gateway's memory is empty: a sentence it has not said before and does not synthesize, it
    // fetched (its repeats after that come from its own memory, and are not counted here).
    let mut seen = std::collections::HashSet::new();
    for text in answers.iter().take(day_answers.div_ceil(4)) {
        let (timeline, texts) = answer(&second.url, text).await?;
        for (sentence, said) in timeline.sentences.iter().zip(texts) {
            if sentence.cached && seen.insert(said) {
                day.shared_release_to_audio_ms.extend(release_to_audio(sentence));
            }
        }
    }
    Ok(Results { first_audio, day })
}

/// The bucket of the shared tier on moto's server.
const BUCKET: &str = "earshot-bench-cache";

/// moto's server, with the shared tier's bucket, and its URL (the server stops when the service is dropped).
async fn moto(paths: &Paths, moto_server: &std::path::Path) -> Result<(crate::services::Service, String), String> {
    if !moto_server.exists() {
        return Err(format!("{} is missing: `make moto-venv` installs it (make bench does)", moto_server.display()));
    }
    let port = crate::services::free_port();
    let mut command = std::process::Command::new(moto_server);
    command.args(["-H", "127.0.0.1", "-p", &port.to_string()]);
    let mut service = crate::services::Service::spawn("moto-cache", command, &paths.logs)?;
    let url = format!("http://127.0.0.1:{port}");
    service.wait_ready(&format!("{url}/moto-api/"), std::time::Duration::from_secs(60), std::time::Duration::from_millis(50)).await?;
    // moto takes an unsigned CreateBucket; the gateway's own calls are signed.
    let created = reqwest::Client::new().put(format!("{url}/{BUCKET}")).send().await.map_err(|e| format!("moto: {e}"))?;
    if !created.status().is_success() {
        return Err(format!("moto refused the bucket: {}", created.status()));
    }
    Ok((service, url))
}

/// One answer of the day: its timeline, and its sentences' texts in order.
async fn answer(url: &str, text: &str) -> Result<(earshot_core::timeline::Timeline, Vec<String>), String> {
    let options = earshot_client::CallOptions { timeout: std::time::Duration::from_secs(300), ..Default::default() };
    let received = earshot_client::speak(url, &trial::body(None, Some(text), "incremental", None), &options).await.map_err(|e| e.to_string())?;
    if let Some(error) = &received.error {
        return Err(format!("a day's answer failed: {}: {}", error.code, error.message));
    }
    let texts =
        received.events.iter().filter_map(|e| if let earshot_core::protocol::ServerEvent::Sentence(s) = e { Some(s.text.clone()) } else { None }).collect();
    Ok((received.timeline.ok_or_else(|| "an answer ended without `done`".to_string())?, texts))
}

fn release_to_audio(s: &earshot_core::timeline::SentenceMarks) -> Option<f64> {
    Some(s.tts_first_audio_ms? - s.released_ms?)
}

/// One conversation: what it measured, whether its first sentence came from the cache, and its first
/// sentence's release to first audio at the gateway.
async fn spoken(url: &str, body: &earshot_client::SpeakBody) -> Result<((Measured, bool), Option<f64>), String> {
    let options = earshot_client::CallOptions { timeout: std::time::Duration::from_secs(300), ..Default::default() };
    let received = earshot_client::speak(url, body, &options).await.map_err(|e| e.to_string())?;
    if let Some(error) = &received.error {
        return Err(format!("the conversation failed: {}: {}", error.code, error.message));
    }
    let first = received.timeline.as_ref().and_then(|t| t.sentences.first()).cloned().unwrap_or_default();
    let release_to_audio = first.tts_first_audio_ms.zip(first.released_ms).map(|(a, r)| a - r);
    Ok(((trial::measure(&received), first.cached), release_to_audio))
}
