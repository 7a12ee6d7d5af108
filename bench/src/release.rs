//! Release timing on the real model: incremental vs buffered release on the local Kokoro container,
//! the same scripted agent pacing, three answer shapes; the floor of each shape and earshot's
//! distance from it with the idle release and the fast first fragment each on and off; the gaps
//! between sentences and the orchestration overhead of every full conversation.
//!
//! Trials run in rounds. Each round runs every cell of every shape once, in an order shuffled from
//! a fixed seed, so that drift on a shared machine touches every cell alike.

use std::time::{Duration, Instant};

use earshot_agents::tokens::llm_tokens;
use earshot_agents::{Sample, Script, ScriptItem};
use earshot_backends::{KokoroBackend, KokoroConfig};
use serde::{Deserialize, Serialize};

use crate::container;
use crate::stack::{self, Paths};
use crate::stats::median;
use crate::trial::{self, Measured};
use crate::{balanced_by_shape, Rng};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Settings {
    pub trials: usize,
    pub shapes: Vec<String>,
    pub tokens_per_second: f64,
    pub first_token_ms: u64,
    pub idle_release_ms: u64,
    pub fast_first_words: usize,
}

/// A gateway configuration under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Config {
    /// The defaults: idle release on, fast first fragment off.
    Default,
    /// Idle release off.
    IdleOff,
    /// Fast first fragment on (idle release on).
    FastFirst,
}

impl Config {
    pub fn name(self) -> &'static str {
        match self {
            Config::Default => "default",
            Config::IdleOff => "idle-off",
            Config::FastFirst => "fast-first",
        }
    }
}

/// One cell of a round.
#[derive(Debug, Clone, Copy)]
enum Cell {
    Conversation {
        config: Config,
        release: &'static str,
        ttfa_only: bool,
    },
    /// The first sentence synthesized alone, straight from the container.
    Floor,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trial {
    pub shape: String,
    pub config: Config,
    pub release: String,
    pub ttfa_only: bool,
    pub round: usize,
    #[serde(flatten)]
    pub measured: Measured,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FloorTrial {
    pub shape: String,
    pub round: usize,
    /// From the request to the container to its first audio, the session being open.
    pub synthesis_first_audio_ms: f64,
}

/// The floor of a shape: the first sentence's text complete, plus that sentence synthesized alone.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Floor {
    pub shape: String,
    pub first_sentence: String,
    /// Tokens up to and including the one that ends the first sentence.
    pub tokens_to_complete: usize,
    /// When the first sentence's text was complete: the agent's first token (median of the
    /// timelines) plus the tokens after it at the agent's pace.
    pub text_complete_ms: f64,
    pub synthesis_first_audio_ms: f64,
    pub floor_ms: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    pub settings: Settings,
    pub trials: Vec<Trial>,
    pub floor_trials: Vec<FloorTrial>,
    pub floors: Vec<Floor>,
}

pub async fn run(paths: &Paths, settings: Settings) -> Result<Results, String> {
    let kokoro = stack::kokoro(paths).await?;
    let common = |extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = vec![
            "--kokoro-url".into(),
            kokoro.url.clone(),
            "--tokens-per-second".into(),
            settings.tokens_per_second.to_string(),
            "--first-token-ms".into(),
            settings.first_token_ms.to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    let idle = settings.idle_release_ms.to_string();
    let words = settings.fast_first_words.to_string();
    let default = stack::gateway(paths, "gateway-default", &common(&["--idle-release-ms", &idle]), &[]).await?;
    let idle_off = stack::gateway(paths, "gateway-idle-off", &common(&["--idle-release-ms", "0"]), &[]).await?;
    let fast_first = stack::gateway(paths, "gateway-fast-first", &common(&["--idle-release-ms", &idle, "--fast-first", &words]), &[]).await?;
    let url = |config: Config| match config {
        Config::Default => default.url.as_str(),
        Config::IdleOff => idle_off.url.as_str(),
        Config::FastFirst => fast_first.url.as_str(),
    };
    let voice =
        KokoroBackend::connect(KokoroConfig { url: kokoro.url.clone(), ..Default::default() }, Duration::from_secs(60)).await.map_err(|e| e.to_string())?;

    let shapes: Vec<Sample> =
        settings.shapes.iter().map(|s| Sample::from_name(s).ok_or(format!("unknown shape `{s}` (brief, long, pause)"))).collect::<Result<_, _>>()?;
    // Warm-up, not recorded: the model's first inferences are slower than the rest.
    if paths.warm_up {
        eprintln!("bench: release timing: warming up the model");
        for config in [Config::Default, Config::IdleOff, Config::FastFirst] {
            trial::run(url(config), &trial::body(Some("brief"), None, "incremental", None), true).await?;
            stack::kokoro_idle(&kokoro.url).await?;
        }
    }
    // The first sentence of each shape, as the gateway releases it.
    let mut first_sentences = Vec::new();
    for &shape in &shapes {
        let m = trial::run(url(Config::Default), &trial::body(Some(shape.name()), None, "incremental", None), false).await?;
        first_sentences.push(m.first_sentence);
    }

    let cells = [
        Cell::Conversation { config: Config::Default, release: "incremental", ttfa_only: false },
        Cell::Conversation { config: Config::Default, release: "buffered", ttfa_only: false },
        Cell::Conversation { config: Config::IdleOff, release: "incremental", ttfa_only: true },
        Cell::Conversation { config: Config::FastFirst, release: "incremental", ttfa_only: true },
        Cell::Floor,
    ];
    let mut rng = Rng(0x5EED0FBE7C);
    let orders = balanced_by_shape(&mut rng, shapes.len(), cells.len(), settings.trials);
    let mut trials = Vec::new();
    let mut floor_trials = Vec::new();
    let started = Instant::now();
    for (round, by_shape) in orders.iter().enumerate() {
        for (s, &shape) in shapes.iter().enumerate() {
            for cell in by_shape[s].iter().map(|&i| cells[i]) {
                stack::kokoro_idle(&kokoro.url).await?;
                match cell {
                    Cell::Conversation { config, release, ttfa_only } => {
                        let body = trial::body(Some(shape.name()), None, release, None);
                        let measured =
                            trial::run(url(config), &body, ttfa_only).await.map_err(|e| format!("{} {} {release}: {e}", shape.name(), config.name()))?;
                        trials.push(Trial { shape: shape.name().into(), config, release: release.into(), ttfa_only, round, measured });
                        if ttfa_only {
                            // The container is cancelling the rest; let its current piece finish.
                            stack::kokoro_idle(&kokoro.url).await?;
                            tokio::time::sleep(Duration::from_millis(1500)).await;
                        }
                    }
                    Cell::Floor => {
                        let (ms, ..) = container::synthesize(&voice, &first_sentences[s]).await?;
                        floor_trials.push(FloorTrial { shape: shape.name().into(), round, synthesis_first_audio_ms: ms });
                    }
                }
            }
        }
        eprintln!("bench: release timing: round {}/{} done ({:.0} s)", round + 1, settings.trials, started.elapsed().as_secs_f64());
    }

    let mut floors = Vec::new();
    for (s, &shape) in shapes.iter().enumerate() {
        let first_token =
            median(&trials.iter().filter(|t| t.shape == shape.name() && !t.ttfa_only).filter_map(|t| t.measured.first_agent_token_ms).collect::<Vec<_>>());
        let synthesis = median(&floor_trials.iter().filter(|f| f.shape == shape.name()).map(|f| f.synthesis_first_audio_ms).collect::<Vec<_>>());
        if let Some(tokens) = tokens_to_complete(&shape.script(), &first_sentences[s]) {
            let text_complete_ms = first_token + (tokens - 1) as f64 * 1000.0 / settings.tokens_per_second;
            floors.push(Floor {
                shape: shape.name().into(),
                first_sentence: first_sentences[s].clone(),
                tokens_to_complete: tokens,
                text_complete_ms,
                synthesis_first_audio_ms: synthesis,
                floor_ms: text_complete_ms + synthesis,
            });
        }
    }
    Ok(Results { settings, trials, floor_trials, floors })
}

/// How many of the agent's tokens it takes to write `sentence`, the script's first sentence: the
/// tokens up to and including the one holding its last character. `None` when the sentence (as
/// normalised for speech) cannot be found in the script's first text.
pub fn tokens_to_complete(script: &Script, sentence: &str) -> Option<usize> {
    let ScriptItem::Text(text) = script.0.first()? else { return None };
    let sentence = sentence.trim();
    let tail: String = sentence.chars().rev().take(12).collect::<Vec<_>>().into_iter().rev().collect();
    let end = text.find(&tail)? + tail.len();
    let mut written = 0;
    for (i, token) in llm_tokens(text).iter().enumerate() {
        written += token.len();
        if written >= end {
            return Some(i + 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_to_complete_counts_through_the_sentence_end() {
        // " Sure" is not a token: the first token is "Sure", then "." ends the sentence.
        assert_eq!(tokens_to_complete(&Sample::Brief.script(), "Sure."), Some(2));
        let pause = Sample::Pause.script();
        let n = tokens_to_complete(&pause, "Let me check that for you.").unwrap();
        let ScriptItem::Text(text) = &pause.0[0] else { panic!() };
        assert_eq!(llm_tokens(text)[..n].concat(), "Let me check that for you.");
        assert_eq!(tokens_to_complete(&pause, "Not in the script."), None);
    }
}
