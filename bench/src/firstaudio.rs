//! First audio as a distribution, not a median: what the path between a sentence's release and its
//! first audio adds, run after run, this build against an earlier one in the same run.
//!
//! Two cells per answer shape, each run `trials` times (50 by default) through every build:
//! - **sentence**: the shape's first sentence as `text`, spoken whole. The gateway's timeline gives the
//!   time from the sentence's release to the backend's first audio, and the container gives its own time
//!   for that sentence (from reading the request to sending its first audio; read from its `GET /stats`,
//!   so that a build that does not read the container's `end` is measured alike). The difference is
//!   what the transport between them added (the gateway's write, the WebSocket, the container's read,
//!   and the same on the way back): it should be a few milliseconds every time, p100 included.
//! - **answer**: the shape itself through the scripted agent, the client leaving after the first audio
//!   chunk. Its time to first audio less the shape's floor (the first sentence's text complete, from the
//!   agent's configured first-token delay and pace, plus the container's own median time for that
//!   sentence) is what earshot adds to a whole answer.
//!
//! A third build, `this-fixed`, is this build against a second container on the earlier fixed piece plan,
//! so that the paced plan's cost at first audio (if any) is measured with as many runs as the rest.
//!
//! Every distribution is checked for two modes: a step between consecutive sorted trials of at least
//! [`STEP_MS`], and at least a quarter of the interquartile range (a spread distribution has gaps of its
//! own), with at least a fifth of the trials on each side (a timer, a poll or a delayed ACK that
//! some runs wait on and others do not) is reported as bimodal; a step with fewer above it is a tail. Builds and shapes run in an order
//! shuffled per round from a fixed seed, against one container, so that drift touches all alike.

use std::time::Duration;

use earshot_agents::Sample;
use serde::{Deserialize, Serialize};

use crate::release::tokens_to_complete;
use crate::stack::{self, Paths, Running};
use crate::stats::median;
use crate::trial;
use crate::Rng;

pub const TOKENS_PER_SECOND: f64 = 30.0;
pub const FIRST_TOKEN_MS: f64 = 200.0;
/// The smallest step between two groups of trials that is called a second mode.
pub const STEP_MS: f64 = 15.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cell {
    Sentence,
    Answer,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trial {
    /// `this`, `this-fixed` (this build, the container on the fixed piece plan) or `baseline`.
    pub build: String,
    pub shape: String,
    pub cell: Cell,
    pub round: usize,
    /// Sentence cells: the gateway's release of sentence 0 to the backend's first audio for it.
    pub release_to_first_audio_ms: Option<f64>,
    /// Sentence cells: the container's own time for it (absent where the build does not read it).
    pub container_own_ms: Option<f64>,
    pub server_ttfa_ms: Option<f64>,
    pub client_ttfa_ms: Option<f64>,
}

impl Trial {
    /// What the transport added to the sentence's first audio.
    pub fn transport_ms(&self) -> Option<f64> {
        Some(self.release_to_first_audio_ms? - self.container_own_ms?)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Floor {
    pub shape: String,
    pub first_sentence: String,
    pub text_complete_ms: f64,
    /// The container's own median time for the first sentence (this build's sentence cells).
    pub container_own_ms: f64,
    pub floor_ms: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    pub trials: Vec<Trial>,
    pub floors: Vec<Floor>,
    /// Whether an earlier build ran beside this one.
    pub baseline: bool,
}

/// A second mode in `values`: the step and the share of trials below it, or `None`.
pub fn second_mode(values: &[f64]) -> Option<(f64, f64)> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.len() < 10 {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let least = v.len().div_ceil(5);
    let threshold = STEP_MS.max((v[v.len() * 3 / 4] - v[v.len() / 4]) / 4.0);
    (least..=v.len() - least)
        .map(|i| (v[i] - v[i - 1], i))
        .filter(|(step, _)| *step >= threshold)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(step, i)| (step, i as f64 / v.len() as f64))
}

pub async fn run(paths: &Paths, trials: usize, shapes: &[String], baseline: Option<&std::path::Path>) -> Result<Results, String> {
    let kokoro = stack::kokoro(paths).await?;
    let fixed = stack::kokoro_with(paths, &[("KOKORO_PIECE_PLAN", "fixed".to_string())]).await?;
    let args = |kokoro: &Running| -> Vec<String> {
        ["--kokoro-url", kokoro.url.as_str(), "--tokens-per-second", &TOKENS_PER_SECOND.to_string(), "--first-token-ms", &FIRST_TOKEN_MS.to_string()]
            .map(String::from)
            .to_vec()
    };
    // Each build with the container it speaks to.
    let mut builds: Vec<(&str, Running, &Running)> = vec![
        ("this", stack::gateway(paths, "gateway-firstaudio-this", &args(&kokoro), &[]).await?, &kokoro),
        ("this-fixed", stack::gateway(paths, "gateway-firstaudio-this-fixed", &args(&fixed), &[]).await?, &fixed),
    ];
    if let Some(binary) = baseline {
        let earlier = Paths { earshot: binary.to_path_buf(), ..paths.clone() };
        builds.push(("baseline", stack::gateway(&earlier, "gateway-firstaudio-baseline", &args(&kokoro), &[]).await?, &kokoro));
    }
    let shapes: Vec<Sample> =
        shapes.iter().map(|s| Sample::from_name(s).ok_or(format!("unknown shape `{s}` (brief, long, pause)"))).collect::<Result<_, _>>()?;
    // Warm-up, not recorded; and the first sentence of each shape, as the gateway releases it.
    let mut first_sentences = Vec::new();
    for &shape in &shapes {
        let mut first = String::new();
        for (i, (_, gateway, _)) in builds.iter().enumerate() {
            let m = trial::run(&gateway.url, &trial::body(Some(shape.name()), None, "incremental", None), false).await?;
            if i == 0 {
                first = m.first_sentence;
            }
        }
        first_sentences.push(first);
    }
    let cells: Vec<(usize, usize, Cell)> =
        (0..shapes.len()).flat_map(|s| (0..builds.len()).flat_map(move |b| [(s, b, Cell::Sentence), (s, b, Cell::Answer)])).collect();
    let mut out = Vec::new();
    for (round, order) in Rng(0xF1257A0D10).balanced_orders(cells.len(), trials).into_iter().enumerate() {
        for (s, b, cell) in order.into_iter().map(|i| cells[i]) {
            let (build, gateway, container) = &builds[b];
            stack::kokoro_idle(&container.url).await?;
            let shape = shapes[s].name();
            let trial = match cell {
                Cell::Sentence => sentence(&gateway.url, &container.url, &first_sentences[s]).await,
                Cell::Answer => answer(&gateway.url, shape).await,
            }
            .map_err(|e| format!("first audio, {build} build, {shape} {cell:?}: {e}"))?;
            out.push(Trial { build: build.to_string(), shape: shape.into(), cell, round, ..trial });
            if cell == Cell::Answer {
                // The container is cancelling the rest of the answer.
                stack::kokoro_idle(&container.url).await?;
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        }
        if (round + 1) % 10 == 0 || round + 1 == trials {
            eprintln!("bench: first audio: round {}/{trials} done", round + 1);
        }
    }
    let mut floors = Vec::new();
    for (s, &shape) in shapes.iter().enumerate() {
        let own: Vec<f64> =
            out.iter().filter(|t| t.build == "this" && t.shape == shape.name() && t.cell == Cell::Sentence).filter_map(|t| t.container_own_ms).collect();
        let sentence = &first_sentences[s];
        if let Some(tokens) = tokens_to_complete(&shape.script(), sentence) {
            let text_complete_ms = FIRST_TOKEN_MS + (tokens - 1) as f64 * 1000.0 / TOKENS_PER_SECOND;
            let container_own_ms = median(&own);
            floors.push(Floor {
                shape: shape.name().into(),
                first_sentence: sentence.clone(),
                text_complete_ms,
                container_own_ms,
                floor_ms: text_complete_ms + container_own_ms,
            });
        }
    }
    Ok(Results { trials: out, floors, baseline: baseline.is_some() })
}

/// One sentence as `text`, spoken whole; the marks of its first audio on both sides.
async fn sentence(url: &str, kokoro_url: &str, text: &str) -> Result<Trial, String> {
    let options = earshot_client::CallOptions { timeout: Duration::from_secs(120), ..Default::default() };
    let r = earshot_client::speak(url, &trial::body(None, Some(text), "incremental", None), &options).await.map_err(|e| e.to_string())?;
    if let Some(error) = &r.error {
        return Err(format!("{}: {}", error.code, error.message));
    }
    let timeline = r.timeline.as_ref().ok_or("the stream ended without `done`")?;
    let first = timeline.sentences.first().ok_or("no sentence in the timeline")?;
    let release_to_first_audio_ms = match (first.released_ms, first.tts_first_audio_ms) {
        (Some(released), Some(audio)) => Some(audio - released),
        _ => None,
    };
    // The container is idle again once its `end` has reached the gateway (the stream's `done` follows it):
    // the last request it completed is this one.
    stack::kokoro_idle(kokoro_url).await?;
    let stats: serde_json::Value = reqwest::get(format!("{kokoro_url}/stats")).await.map_err(|e| e.to_string())?.json().await.map_err(|e| e.to_string())?;
    let container_own_ms = stats["last_first_audio_seconds"].as_f64().map(|s| s * 1000.0);
    if let (Some(own), Some(said)) = (container_own_ms, first.backend_own_first_audio_ms) {
        // This build reads the same figure from `end`: the two must agree (to the rounding of `end`).
        if (own - said).abs() > 0.01 {
            return Err(format!("the container's own time is {own} ms in /stats and {said} ms in end"));
        }
    }
    Ok(Trial {
        build: String::new(),
        shape: String::new(),
        cell: Cell::Sentence,
        round: 0,
        release_to_first_audio_ms,
        container_own_ms,
        server_ttfa_ms: timeline.first_audio_sent_ms,
        client_ttfa_ms: r.marks.first_audio_decoded_ms,
    })
}

/// One answer through the scripted agent, the client leaving after its first audio chunk.
async fn answer(url: &str, shape: &str) -> Result<Trial, String> {
    let m = trial::run(url, &trial::body(Some(shape), None, "incremental", None), true).await?;
    Ok(Trial {
        build: String::new(),
        shape: String::new(),
        cell: Cell::Answer,
        round: 0,
        release_to_first_audio_ms: None,
        container_own_ms: None,
        server_ttfa_ms: None,
        client_ttfa_ms: m.client_ttfa_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::second_mode;

    #[test]
    fn a_step_with_trials_on_both_sides_is_a_second_mode() {
        // The shape the issue saw: about half the runs 48 ms later than the rest.
        let mut values: Vec<f64> = (0..25).map(|i| 188.0 + (i % 5) as f64).collect();
        values.extend((0..25).map(|i| 236.0 + (i % 7) as f64));
        let (step, below) = second_mode(&values).expect("bimodal");
        assert!((43.0..=49.0).contains(&step), "{step}");
        assert!((below - 0.5).abs() < 1e-9);
        // The slowest few in fifty (a tenth) are a tail, not a mode; a spread without a step is one mode.
        let mut tail: Vec<f64> = (0..45).map(|i| 190.0 + (i % 9) as f64).collect();
        tail.extend([260.0, 262.0, 265.0, 270.0, 280.0]);
        assert_eq!(second_mode(&tail), None);
        assert_eq!(second_mode(&(0..50).map(|i| 180.0 + i as f64).collect::<Vec<_>>()), None);
        // A wide spread (the model's own, hundreds of milliseconds) has gaps of 20 ms by chance: one mode.
        let wide: Vec<f64> = (0..50).map(|i| 1000.0 + (i * 10) as f64 + if i > 30 { 20.0 } else { 0.0 }).collect();
        assert_eq!(second_mode(&wide), None);
        assert_eq!(second_mode(&[1.0, 100.0]), None);
    }
}
