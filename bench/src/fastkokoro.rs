//! The `fastkokoro` suite: earshot's `POST /v1/audio/speech` beside fastkokoro's, an OpenAI-compatible
//! Kokoro server from PyPI (ONNX Runtime, FastAPI), on the same model file and voice pack (the container's,
//! `peer::model_files`), the same voice and the same texts: one, three and seven sentences of Japanese (the
//! local model's voices are Japanese packs, and fastkokoro refuses a voice for another language). Both are
//! asked for raw PCM, streamed (`stream: true` for fastkokoro, as its clients send). The cells alternate
//! in a shuffled order each round, each text said once per system and round (earshot's cache is off).
//! Measured at the client from the request's send: the first byte of audio and the whole answer.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::services::{free_port, Service};
use crate::stack::{self, Paths, Running};
use crate::Rng;

/// The voice both speak in: one of the local model's packs.
const VOICE: &str = "jf_alpha";
/// Seven sentences; the one-, three- and seven-sentence inputs are their first one, three and seven.
const SENTENCES: [&str; 7] = [
    "ご注文の品は今朝、倉庫から発送されました。",
    "木曜日の正午までにお届けする予定です。",
    "配達の一時間前にメッセージでお知らせします。",
    "ご不在の場合は、近くの営業所でお預かりします。",
    "再配達は、アプリからいつでもご依頼いただけます。",
    "お届け先の変更は、発送の前日まで承ります。",
    "ほかにご不明な点があれば、お気軽にお尋ねください。",
];
/// The input lengths measured, in sentences.
pub const LENGTHS: [usize; 3] = [1, 3, 7];

/// One system's figures for one input length.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Cell {
    /// The first byte of audio, per request, in milliseconds from the send.
    pub first_ms: Vec<f64>,
    /// The whole answer, per request.
    pub whole_ms: Vec<f64>,
    /// Seconds of audio in each answer.
    pub audio_s: Vec<f64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Results {
    /// earshot's cells, by input length (`LENGTHS`).
    pub earshot: Vec<Cell>,
    /// fastkokoro's.
    pub fastkokoro: Vec<Cell>,
    /// The fastkokoro release measured.
    pub fastkokoro_version: String,
}

/// fastkokoro from its venv (`make fastkokoro-venv`), on the container's model and voices, ready.
async fn start_fastkokoro(paths: &Paths, dir: &Path) -> Result<(Running, String), String> {
    let bin = dir.join(".venv/bin/fastkokoro");
    if !bin.exists() {
        return Err(format!("{} is missing: run `make fastkokoro-venv` (make bench does)", bin.display()));
    }
    let (model, voices) = crate::peer::model_files(&paths.kokoro_dir)?;
    let port = free_port();
    let mut command = Command::new(bin);
    command
        .env("FASTKOKORO_MODEL_PATH", &model)
        .env("FASTKOKORO_VOICES_PATH", &voices)
        .env("FASTKOKORO_DEFAULT_VOICE", VOICE)
        .env("FASTKOKORO_DEFAULT_LANG", "ja")
        .env("FASTKOKORO_PORT", port.to_string())
        .env("FASTKOKORO_HOST", "127.0.0.1")
        // Its simplified copy of the model is kept beside its venv: made once, not at every start.
        .env("FASTKOKORO_CACHE_DIR", dir.join(".cache"))
        // Nothing is fetched from a model hub: the files are given.
        .env("HF_HUB_OFFLINE", "1");
    let mut service = Service::spawn("fastkokoro", command, &paths.logs)?;
    let url = format!("http://127.0.0.1:{port}");
    let took = service.wait_ready(&format!("{url}/health"), Duration::from_secs(600), Duration::from_millis(50)).await?;
    eprintln!("bench: fastkokoro is ready ({:.1} s; log {})", took.as_secs_f64(), service.log.display());
    let version = Command::new(dir.join(".venv/bin/python"))
        .args(["-c", "import importlib.metadata as m; print(m.version('fastkokoro'))"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    Ok((Running { service, url }, version))
}

/// One answer: the first byte and the whole, and the audio's seconds (16-bit mono at 24 kHz).
async fn answer(http: &reqwest::Client, url: &str, text: &str) -> Result<(f64, f64, f64), String> {
    let sent = Instant::now();
    let body = serde_json::json!({"model": "kokoro", "voice": VOICE, "input": text, "response_format": "pcm", "stream": true, "lang_code": "j"});
    let mut response = http.post(format!("{url}/v1/audio/speech")).json(&body).send().await.map_err(|e| format!("{url}: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("{url}/v1/audio/speech: {} {}", response.status(), response.text().await.unwrap_or_default()));
    }
    let (mut first, mut bytes) = (None, 0usize);
    while let Some(chunk) = response.chunk().await.map_err(|e| format!("{url}: {e}"))? {
        if !chunk.is_empty() {
            first.get_or_insert(sent.elapsed().as_secs_f64() * 1000.0);
            bytes += chunk.len();
        }
    }
    let first = first.ok_or_else(|| format!("{url}: no audio"))?;
    Ok((first, sent.elapsed().as_secs_f64() * 1000.0, bytes as f64 / 48_000.0))
}

pub async fn run(paths: &Paths, dir: &Path, trials: usize, lengths: &[usize]) -> Result<Results, String> {
    let kokoro = stack::kokoro(paths).await?;
    let args: Vec<String> = ["--backends", "kokoro", "--kokoro-url", &kokoro.url].iter().map(|s| s.to_string()).collect();
    let earshot = stack::gateway(paths, "gateway-fastkokoro", &args, &[]).await?;
    let (fastkokoro, version) = start_fastkokoro(paths, dir).await?;
    let http = reqwest::Client::new();
    let cells = || lengths.iter().map(|_| Cell::default()).collect::<Vec<_>>();
    let mut results = Results { earshot: cells(), fastkokoro: cells(), fastkokoro_version: version };
    // One round unmeasured: each opens its connections and warms its model. Cells: length × system.
    for (round, order) in Rng(0x0FA5_7C0C).balanced_orders(lengths.len() * 2, trials + 1).into_iter().enumerate() {
        for cell in order {
            let (at, system) = (cell / 2, cell % 2);
            // The round's own ending, so that no two requests say the same text (earshot's cache is off anyway).
            let text = format!("{}第{}回。", SENTENCES[..lengths[at]].concat(), round + 1);
            let url = if system == 0 { &earshot.url } else { &fastkokoro.url };
            let (first, whole, audio) = answer(&http, url, &text).await?;
            if round > 0 {
                let cells = if system == 0 { &mut results.earshot } else { &mut results.fastkokoro };
                cells[at].first_ms.push(first);
                cells[at].whole_ms.push(whole);
                cells[at].audio_s.push(audio);
            }
            stack::kokoro_idle(&kokoro.url).await?;
        }
    }
    Ok(results)
}
