//! The release decision where agents really pause: the real scheduler, in virtual time (tokio's paused
//! clock), fed answers as model streams chunk them, with a pause placed after every full stop, under the
//! old rule (every end released after the 150 ms idle window) and the new one (an ambiguous end waits for
//! the text that settles it, up to 2 s). It scores, side by side, the sentences cut wrong and the first
//! audio on each arm.
//!
//! The chunkings are modelled on what the services document: OpenAI's Chat Completions stream sends one
//! delta per token (about four characters), here 30 ms apart; Bedrock's ConverseStream sends
//! `contentBlockDelta` events of a few tokens each, here 20 characters 80 ms apart. The pauses are synthetic:
//! 100 to 500 ms, right after each `.`, `?` or `。` (where a slow model's gap does harm).
//!
//! First audio is modelled from when the scheduler told the voice, not measured on a model (the suite needs
//! none): on the Kokoro arm the first sentence is prepared at its full stop, so its audio comes at the later
//! of its release and its preparation plus a render of [`KOKORO_RENDER_MS`] + [`KOKORO_RENDER_MS_PER_CHAR`]
//! per character (this machine's CPU figures, BENCHMARKS "Release timing"); on Polly (never prepared: billed)
//! at its release plus [`POLLY_FIRST_AUDIO_MS`].

use std::sync::{Arc, Mutex};
use std::time::Duration;

use earshot_core::agent::{AgentEvent, AGENT_CHANNEL};
use earshot_core::protocol::{AudioFormat, BackendReason, ServerEvent, SessionInfo};
use earshot_core::scheduler::{self, Conversation, Release, SchedulerConfig};
use earshot_core::speech::{FinishReport, SpeechCommand, SpeechEvent, SpeechSession};
use earshot_core::timeline::{Clock, Timeline};
use serde_json::json;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The Kokoro arm's render of a first sentence on this machine's CPU: a fixed part and a part per character.
const KOKORO_RENDER_MS: f64 = 300.0;
const KOKORO_RENDER_MS_PER_CHAR: f64 = 12.0;
/// Polly's first audio after a sentence is sent (the `polly` suite's order of magnitude).
const POLLY_FIRST_AUDIO_MS: f64 = 250.0;

/// Answers whose first sentence holds a full stop the next characters could undo (`ambiguous`: `$3.` then
/// `50`), and answers whose first end is sure; each with the sentences it must be spoken as.
const ANSWERS: [(&str, &[&str], bool); 8] = [
    ("It costs $3.50 today. Shall I order it?", &["It costs $3.50 today.", "Shall I order it?"], true),
    ("The U.S. team won. It was close.", &["The U.S. team won.", "It was close."], true),
    ("We meet at 4 p.m. today. Bring the notes.", &["We meet at 4 p.m. today.", "Bring the notes."], true),
    ("Version 2.1 is out. Update when you can.", &["Version 2.1 is out.", "Update when you can."], true),
    ("Il coûte 3.50 euros. Voulez-vous le commander ?", &["Il coûte 3.50 euros.", "Voulez-vous le commander ?"], true),
    ("温度是 3.5 度。明天会更冷。", &["温度是 3.5 度。", "明天会更冷。"], true),
    ("Sure. Here is the plan.", &["Sure.", "Here is the plan."], false),
    ("Thanks for waiting. Your order shipped today.", &["Thanks for waiting.", "Your order shipped today."], false),
];

/// How a service chunks its stream: characters per chunk and the gap between chunks.
#[derive(Clone, Copy)]
struct Chunking {
    name: &'static str,
    chars: usize,
    gap_ms: u64,
}

const CHUNKINGS: [Chunking; 2] = [Chunking { name: "openai", chars: 4, gap_ms: 30 }, Chunking { name: "bedrock", chars: 20, gap_ms: 80 }];
const PAUSES_MS: [u64; 5] = [100, 200, 300, 400, 500];

/// What the voice was told, in virtual milliseconds from the start.
#[derive(Default)]
struct Told {
    /// Each preparation of sentence 0: when, and its text.
    prepared: Vec<(f64, String)>,
    /// When sentence 0 was sent to speak, and its text.
    spoken: Option<(f64, String)>,
}

/// The agent's chunks, and a pause after each that ends in a full stop.
fn chunks(text: &str, chunking: Chunking) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut current = String::new();
    for c in chars {
        current.push(c);
        let boundary = matches!(c, '.' | '?' | '!' | '。');
        if current.chars().count() >= chunking.chars || boundary {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// One answer through the real scheduler: the sentences it released, and what the voice was told.
async fn one(text: &str, chunking: Chunking, pause_ms: u64, ambiguous_release: Option<Duration>) -> (Vec<String>, Told) {
    let origin = Instant::now();
    let (agent_tx, agent) = mpsc::channel(AGENT_CHANNEL);
    let pieces = chunks(text, chunking);
    tokio::spawn(async move {
        for piece in pieces {
            let ends = piece.ends_with(['.', '?', '!', '。']);
            if agent_tx.send(Ok(AgentEvent::Delta(piece))).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(if ends { pause_ms } else { chunking.gap_ms })).await;
        }
        let _ = agent_tx.send(Ok(AgentEvent::Done)).await;
        agent_tx.closed().await;
    });
    // A voice that answers each sentence at once and notes when it was told what.
    let told = Arc::new(Mutex::new(Told::default()));
    let (commands, mut commands_rx) = mpsc::channel(8);
    let (events_tx, events) = mpsc::channel(64);
    let noted = told.clone();
    tokio::spawn(async move {
        while let Some(command) = commands_rx.recv().await {
            let at = origin.elapsed().as_secs_f64() * 1000.0;
            match command {
                SpeechCommand::Prepare(r) if r.index == 0 => noted.lock().unwrap().prepared.push((at, r.text)),
                SpeechCommand::Speak(r) => {
                    if r.index == 0 {
                        noted.lock().unwrap().spoken = Some((at, r.text.clone()));
                    }
                    let _ = events_tx.send(SpeechEvent::Audio { index: r.index, pcm: bytes::Bytes::from_static(&[0u8; 480]) }).await;
                    let _ = events_tx.send(SpeechEvent::Finished { index: r.index, report: FinishReport::default() }).await;
                }
                SpeechCommand::Finish => {
                    let _ = events_tx.send(SpeechEvent::Closed { billed_characters: None }).await;
                }
                _ => {}
            }
        }
    });
    let format = AudioFormat::pcm_s16le(24_000);
    let session = SpeechSession { commands, events, format: format.clone(), voice: "bench".into() };
    let info = SessionInfo {
        v: 1,
        conversation_id: "c".into(),
        request_id: "r".into(),
        backend: "bench".into(),
        backend_reason: BackendReason::Ab,
        arm: None,
        experiment: None,
        release: "incremental".into(),
        voice: "bench".into(),
        language: None,
        language_source: None,
        audio: format,
    };
    let conversation = Conversation {
        agent,
        session,
        info,
        release: Release::Incremental,
        clock: Clock::start(),
        timeline: Timeline::default(),
        cancel: CancellationToken::new(),
        encoder: None,
    };
    let cfg = SchedulerConfig { ambiguous_release, ..Default::default() };
    let (out, mut rx) = mpsc::channel(1024);
    let task = tokio::spawn(async move { scheduler::run(conversation, &cfg, out).await });
    let mut sentences = Vec::new();
    while let Some(event) = rx.recv().await {
        if let ServerEvent::Sentence(s) = event {
            sentences.push(s.text);
        }
    }
    let _ = task.await;
    let told = std::mem::take(&mut *told.lock().unwrap());
    (sentences, told)
}

/// The modelled first audio of each arm, in milliseconds, from what the voice was told.
fn first_audio(told: &Told) -> Option<(f64, f64)> {
    let (spoken_at, text) = told.spoken.as_ref()?;
    let render = KOKORO_RENDER_MS + KOKORO_RENDER_MS_PER_CHAR * text.chars().count() as f64;
    // The preparation of the very text spoken, if any: its render began then.
    let prepared_at = told.prepared.iter().rev().find(|(_, t)| t == text).map(|(at, _)| *at);
    let kokoro = match prepared_at {
        Some(at) => spoken_at.max(at + render),
        None => spoken_at + render,
    };
    Some((kokoro, spoken_at + POLLY_FIRST_AUDIO_MS))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Runs every answer, chunking and pause under both rules, on a thread of its own (its virtual clock is
/// its own runtime's); prints the table and gives the results.
pub fn run() -> serde_json::Value {
    std::thread::spawn(run_paused).join().expect("the pauses cell does not panic")
}

fn run_paused() -> serde_json::Value {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().expect("a runtime");
    println!(
        "the release decision where agents pause: {} answers x {} chunkings x {} pauses, old rule and new",
        ANSWERS.len(),
        CHUNKINGS.len(),
        PAUSES_MS.len()
    );
    println!(
        "{:<8} {:<10} {:>12} {:>14} {:>14} {:>14} {:>14}",
        "rule", "first end", "wrong splits", "kokoro median", "kokoro worst", "polly median", "polly worst"
    );
    let mut rows = Vec::new();
    for (rule, ambiguous_release) in [("old", Some(Duration::from_millis(150))), ("new", Some(Duration::from_millis(2_000)))] {
        for ambiguous_first in [true, false] {
            let (mut wrong, mut cases, mut kokoro, mut polly) = (0, 0, Vec::new(), Vec::new());
            for (text, expected, ambiguous) in ANSWERS {
                if ambiguous != ambiguous_first {
                    continue;
                }
                for chunking in CHUNKINGS {
                    for pause in PAUSES_MS {
                        let (sentences, told) = runtime.block_on(one(text, chunking, pause, ambiguous_release));
                        cases += 1;
                        if sentences != expected {
                            wrong += 1;
                        }
                        if let Some((k, p)) = first_audio(&told) {
                            kokoro.push(k);
                            polly.push(p);
                        }
                    }
                }
            }
            let worst = |v: &[f64]| v.iter().copied().fold(f64::NAN, f64::max);
            let label = if ambiguous_first { "ambiguous" } else { "sure" };
            println!(
                "{rule:<8} {label:<10} {:>12} {:>14.0} {:>14.0} {:>14.0} {:>14.0}",
                format!("{wrong}/{cases}"),
                median(kokoro.clone()),
                worst(&kokoro),
                median(polly.clone()),
                worst(&polly)
            );
            rows.push(json!({
                "rule": rule, "first_end": label, "cases": cases, "wrong_splits": wrong,
                "kokoro_first_audio_ms_median": median(kokoro.clone()), "kokoro_first_audio_ms_worst": worst(&kokoro),
                "polly_first_audio_ms_median": median(polly.clone()), "polly_first_audio_ms_worst": worst(&polly),
            }));
        }
    }
    json!({ "rows": rows, "pauses_ms": PAUSES_MS, "chunkings": CHUNKINGS.iter().map(|c| json!({"name": c.name, "chars": c.chars, "gap_ms": c.gap_ms})).collect::<Vec<_>>() })
}
