//! The Kokoro container alone (onnx, CPU): first-audio latency and real-time factor for a short and
//! a long sentence, and what per-piece streaming buys: the first audio of a long sentence against
//! the moment its whole audio is ready, which is when a server that synthesizes the whole request
//! before answering (as the reference sample does) could send its first byte.

use std::time::{Duration, Instant};

use earshot_backends::{KokoroBackend, KokoroConfig};
use earshot_core::speech::{SessionOptions, SpeechBackend, SpeechCommand, SpeechEvent, SpeechRequest};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::stack::{self, Paths};
use crate::Rng;

pub const SHORT: &str = "Your order shipped this morning.";
pub const LONG: &str = "A sentence is sent to the voice the moment it is complete, so the first words can be heard while \
the rest is still being written, and the audio of a long sentence like this one streams back piece by piece, \
clause after clause, instead of arriving all at once after the whole of it has been synthesized.";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trial {
    pub sentence: String,
    pub chars: usize,
    pub round: usize,
    pub first_audio_ms: f64,
    /// All of the sentence's audio received.
    pub whole_ms: f64,
    pub audio_ms: f64,
    /// Synthesis time over audio time: under 1 is faster than real time.
    pub rtf: f64,
    pub chunks: usize,
}

pub async fn run(paths: &Paths, trials: usize) -> Result<Vec<Trial>, String> {
    let kokoro = stack::kokoro(paths).await?;
    let voice =
        KokoroBackend::connect(KokoroConfig { url: kokoro.url.clone(), ..Default::default() }, Duration::from_secs(60)).await.map_err(|e| e.to_string())?;
    if paths.warm_up {
        eprintln!("bench: container: warming up the model");
        synthesize(&voice, SHORT).await?;
    }
    let cells = [("short", SHORT), ("long", LONG)];
    let mut out = Vec::new();
    for (round, order) in Rng(0xC047A14E4).balanced_orders(cells.len(), trials).into_iter().enumerate() {
        for (name, text) in order.into_iter().map(|i| cells[i]) {
            stack::kokoro_idle(&kokoro.url).await?;
            let (first_audio_ms, whole_ms, audio_ms, chunks) = synthesize(&voice, text).await?;
            out.push(Trial {
                sentence: name.into(),
                chars: text.chars().count(),
                round,
                first_audio_ms,
                whole_ms,
                audio_ms,
                rtf: whole_ms / audio_ms.max(1.0),
                chunks,
            });
        }
    }
    Ok(out)
}

/// (first audio ms, all audio ms, audio duration ms, chunks) of one sentence on a fresh session, timed
/// from the request (the session being open, as the gateway's is by the time a sentence is complete).
pub async fn synthesize(voice: &KokoroBackend, text: &str) -> Result<(f64, f64, f64, usize), String> {
    let cancel = CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    let mut session = voice
        .open(SessionOptions {
            voice: voice.default_voice(),
            language: None,
            sample_rate: None,
            speaking_rate: Default::default(),
            conversation_id: "bench-container".into(),
            cancel,
        })
        .await
        .map_err(|e| e.to_string())?;
    let bytes_per_ms = session.format.sample_rate as f64 * 2.0 / 1000.0;
    let sent = Instant::now();
    let ms = || sent.elapsed().as_secs_f64() * 1000.0;
    session
        .commands
        .send(SpeechCommand::Speak(SpeechRequest { index: 0, text: text.into(), language: None, rate: None, silence_ms: 0 }))
        .await
        .map_err(|_| "the session closed")?;
    session.commands.send(SpeechCommand::Finish).await.map_err(|_| "the session closed")?;
    let (mut first, mut whole, mut bytes, mut chunks) = (None, None, 0usize, 0usize);
    while let Some(event) = session.events.recv().await {
        match event {
            SpeechEvent::Audio { pcm, .. } => {
                first.get_or_insert_with(ms);
                bytes += pcm.len();
                chunks += 1;
            }
            SpeechEvent::Finished { .. } => whole = Some(ms()),
            SpeechEvent::Words { .. } | SpeechEvent::Billed { .. } => {}
            SpeechEvent::Failed(e) => return Err(e.to_string()),
            SpeechEvent::Closed { .. } => break,
            // One backend, opened directly: no failover to switch to.
            SpeechEvent::Switched(_) => return Err("an unexpected switch of backend".into()),
        }
    }
    match (first, whole) {
        (Some(first), Some(whole)) => Ok((first, whole, bytes as f64 / bytes_per_ms, chunks)),
        _ => Err("the container did not finish the sentence".into()),
    }
}
