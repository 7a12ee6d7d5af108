//! The voice stopping mid-sentence, made to happen in the real container and seen at every layer.
//!
//! The container runs the real model four times slower than it can (`KOKORO_SLOWDOWN=4`, a busy or small
//! machine). With the earlier fixed piece plan it sends a sentence's first clause, and the rest is not
//! rendered before that clause has played out: the container's own count, the gateway's timeline (`done`),
//! its metric line (EMF, on standard output) and the client's playback all report a stall inside the
//! sentence. With the paced plan (the default) the same container holds the sentence until the rest keeps
//! up: no layer reports a stall, and the wait shows as time before the sentence instead.

use std::time::Duration;

use earshot_client::{speak, CallOptions, Received};
use earshot_e2e::{check_conversation, text, EarshotProcess, Kokoro};

const SENTENCE: &str = "I found your order, and it shipped yesterday afternoon from our warehouse in Ohio, so it should arrive by Thursday.";
/// Silences shorter than this are delivery jitter, as the benchmarks count them.
const THRESHOLD_MS: f64 = 20.0;

struct Heard {
    received: Received,
    metric: serde_json::Value,
}

async fn speak_through(plan: &str) -> Heard {
    let kokoro = Kokoro::start_with(None, &[("KOKORO_PIECE_PLAN", plan), ("KOKORO_SLOWDOWN", "4")]);
    kokoro.ready().await;
    let earshot = EarshotProcess::start(&["--kokoro-url", &kokoro.url]).await;
    earshot.healthy().await;
    let options = CallOptions { timeout: Duration::from_secs(120), ..Default::default() };
    let received = speak(&earshot.url, &text(SENTENCE), &options).await.expect("the conversation runs");
    assert_eq!(check_conversation(&received), vec![SENTENCE.to_string()]);
    // The metric line is written as the conversation ends; give the process a moment to flush it.
    let mut lines = Vec::new();
    for _ in 0..100 {
        lines = earshot.metric_lines().into_iter().filter(|l| l.get("TimeToFirstAudio").is_some()).collect();
        if !lines.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(lines.len(), 1, "one conversation, one metric line");
    Heard { received, metric: lines.remove(0) }
}

fn client_stalls(r: &Received) -> Vec<f64> {
    let format = r.format().expect("format");
    let bytes_per_ms = format.sample_rate as f64 * format.channels as f64 * 2.0 / 1000.0;
    r.marks.playback_silences(bytes_per_ms, THRESHOLD_MS).inside_sentences
}

#[tokio::test]
async fn a_container_that_falls_behind_mid_sentence_is_reported_as_a_stall_at_every_layer() {
    let heard = speak_through("fixed").await;
    let timeline = heard.received.timeline.as_ref().expect("done carries the timeline");
    let sentence = &timeline.sentences[0];
    assert!(sentence.audio_chunks >= 2, "the sentence came in pieces: {sentence:?}");
    assert!(sentence.stalls >= 1 && sentence.stall_ms > 300.0, "the gateway counts the stall: {sentence:?}");
    assert_eq!(heard.metric["Stalls"], sentence.stalls, "the metric line carries it: {}", heard.metric);
    assert!(heard.metric["StallTime"].as_f64().unwrap() > 300.0, "{}", heard.metric);
    // One sentence: no gap before another sentence to confuse it with.
    assert_eq!(heard.metric["Underruns"], 0);
    assert_eq!(sentence.backend_held_ms, Some(0.0), "the fixed plan holds nothing back");
    let client = client_stalls(&heard.received);
    assert!(!client.is_empty() && client.iter().sum::<f64>() > 300.0, "the client hears it: {client:?}");
}

#[tokio::test]
async fn the_paced_plan_holds_the_sentence_rather_than_stop_inside_it() {
    let heard = speak_through("paced").await;
    let timeline = heard.received.timeline.as_ref().expect("done carries the timeline");
    let sentence = &timeline.sentences[0];
    assert_eq!((sentence.stalls, sentence.stall_ms), (0, 0.0), "no stall at the gateway: {sentence:?}");
    assert_eq!(heard.metric["Stalls"], 0, "{}", heard.metric);
    assert_eq!(heard.metric["StallTime"], 0.0, "{}", heard.metric);
    assert_eq!(client_stalls(&heard.received), Vec::<f64>::new(), "no stall at the client");
    assert!(sentence.audio_ms > 5000.0, "the whole sentence was spoken: {sentence:?}");
    // What it cost instead: the container says how long it held the sentence back, and the metric line
    // carries it (a busy endpoint's first sign).
    let held = sentence.backend_held_ms.expect("the container says what it held");
    assert!(held > 100.0, "the sentence was held back: {sentence:?}");
    assert_eq!(heard.metric["BackendHeldTime"], held, "{}", heard.metric);
}
