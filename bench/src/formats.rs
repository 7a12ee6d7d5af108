//! The `formats` suite: what converting a backend's PCM into the client's format costs (docs/protocol.md,
//! "Audio formats"). In process, on the gateway's own encoder (`earshot_audio::Transcoder`), fed as the
//! scheduler feeds it: a sentence in the chunk sizes a voice sends (a first piece of 400 ms, then 200 ms
//! pieces), from Kokoro's 24 kHz and from Polly's 16 kHz. The time to convert the first chunk is what
//! conversion adds to first audio (the target: 5 ms at p99); the bytes each format sends a second of audio
//! are counted as they leave, raw (binary frames) and as SSE writes them (base64 in `audio` events).

use std::time::Instant;

use bytes::Bytes;
use earshot_audio::Transcoder;
use earshot_core::output::{AudioEncoder, OutputFormat};
use earshot_core::protocol::{sse, AudioChunk, AudioFormat, ServerEvent};
use serde::{Deserialize, Serialize};

/// One format from one source rate, over every trial.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub format: String,
    pub source_rate: u32,
    /// Building the encoder and telling it the source, per trial (done as the conversation starts).
    pub setup_ms: Vec<f64>,
    /// Converting the sentence's first chunk, per trial: what conversion adds to first audio.
    pub first_chunk_ms: Vec<f64>,
    /// Converting each later chunk and the sentence's end.
    pub chunk_ms: Vec<f64>,
    /// Audio bytes a second of speech, as binary frames carry them (the payload).
    pub bytes_per_second: f64,
    /// The same audio as SSE `audio` events (base64, with the event's lines).
    pub sse_bytes_per_second: f64,
}

const SENTENCE_SECONDS: f64 = 3.0;
const FIRST_PIECE_MS: usize = 400;
const PIECE_MS: usize = 200;

/// A speech-like test signal: a tone gliding through the voice's range, at `rate`.
fn signal(rate: u32, samples: usize) -> Vec<u8> {
    (0..samples)
        .flat_map(|i| {
            let t = i as f64 / rate as f64;
            let hz = 120.0 + 180.0 * (t * 1.7).sin().abs();
            let x = 0.3 * (2.0 * std::f64::consts::PI * hz * t).sin() + 0.05 * (2.0 * std::f64::consts::PI * 2_900.0 * t).sin();
            ((x * 32_767.0) as i16).to_le_bytes()
        })
        .collect()
}

pub fn run(trials: usize) -> Vec<Row> {
    println!("formats: converting a {SENTENCE_SECONDS} s sentence ({FIRST_PIECE_MS} ms first piece, then {PIECE_MS} ms pieces), {trials} trials");
    println!("{:>10} {:>7} {:>14} {:>14} {:>10} {:>10}", "format", "from Hz", "first p50 ms", "first p99 ms", "B/s", "SSE B/s");
    let mut rows = Vec::new();
    for source_rate in [24_000u32, 16_000] {
        let pcm = signal(source_rate, (SENTENCE_SECONDS * source_rate as f64) as usize);
        let bytes_per_ms = source_rate as usize * 2 / 1000;
        let mut pieces = vec![&pcm[..FIRST_PIECE_MS * bytes_per_ms]];
        pieces.extend(pcm[FIRST_PIECE_MS * bytes_per_ms..].chunks(PIECE_MS * bytes_per_ms));
        for format in OutputFormat::all() {
            let mut row = Row {
                format: format.to_string(),
                source_rate,
                setup_ms: Vec::new(),
                first_chunk_ms: Vec::new(),
                chunk_ms: Vec::new(),
                bytes_per_second: 0.0,
                sse_bytes_per_second: 0.0,
            };
            for trial in 0..trials {
                let started = Instant::now();
                let mut encoder = Transcoder::new(format);
                encoder.source(&AudioFormat::pcm_s16le(source_rate));
                row.setup_ms.push(started.elapsed().as_secs_f64() * 1000.0);
                let (mut raw, mut sse_bytes) = (0usize, 0usize);
                let mut count = |audio: &Bytes, seq: u32| {
                    raw += audio.len();
                    sse_bytes += sse::encode(&ServerEvent::Audio(AudioChunk { index: 0, seq, pcm: audio.clone() })).len();
                };
                for (seq, piece) in pieces.iter().enumerate() {
                    let started = Instant::now();
                    let audio = encoder.encode(piece);
                    let took = started.elapsed().as_secs_f64() * 1000.0;
                    if seq == 0 {
                        row.first_chunk_ms.push(took);
                    } else {
                        row.chunk_ms.push(took);
                    }
                    count(&audio, seq as u32);
                }
                let started = Instant::now();
                let rest = encoder.end_sentence();
                row.chunk_ms.push(started.elapsed().as_secs_f64() * 1000.0);
                count(&rest, pieces.len() as u32);
                if trial == 0 {
                    row.bytes_per_second = raw as f64 / SENTENCE_SECONDS;
                    row.sse_bytes_per_second = sse_bytes as f64 / SENTENCE_SECONDS;
                }
            }
            let first = crate::stats::Summary::of(&row.first_chunk_ms);
            println!(
                "{:>10} {:>7} {:>14.3} {:>14.3} {:>10.0} {:>10.0}",
                row.format,
                source_rate,
                first.map_or(f64::NAN, |s| s.median),
                first.map_or(f64::NAN, |s| s.p99),
                row.bytes_per_second,
                row.sse_bytes_per_second
            );
            rows.push(row);
        }
    }
    rows
}
