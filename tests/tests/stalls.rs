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
/// The gateway's limit on a silent voice, raised well past what a container made slow on purpose keeps
/// quiet on a busy machine: these tests measure the stall, not the limit (the scheduler's rules test it).
const SILENCE_LIMIT_MS: &str = "120000";
/// Silences shorter than this are delivery jitter, as the benchmarks count them.
const THRESHOLD_MS: f64 = 20.0;

struct Heard {
    received: Received,
    metric: serde_json::Value,
}

async fn speak_through(plan: &str) -> Heard {
    let kokoro = Kokoro::start_with(None, &[("KOKORO_PIECE_PLAN", plan), ("KOKORO_SLOWDOWN", "4")]);
    kokoro.ready().await;
    let earshot = EarshotProcess::start(&["--kokoro-url", &kokoro.url, "--backend-silence-timeout-ms", SILENCE_LIMIT_MS]).await;
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
    r.marks.playback_silences(THRESHOLD_MS).inside_sentences
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

/// Silences inside sentences as the client's player hears them, at the timeline's own tolerance.
fn client_stalls_at_tolerance(r: &Received) -> Vec<f64> {
    r.marks.playback_silences(earshot_core::timeline::UNDERRUN_TOLERANCE_MS).inside_sentences
}

/// The same chunks counted by the rule the timeline once had: a clock per sentence, started at that
/// sentence's own first audio, blind to earlier audio still queued ahead of the listener.
fn stalls_by_a_clock_per_sentence(r: &Received) -> Vec<f64> {
    let mut stalls = Vec::new();
    let mut clock: Option<(u32, f64)> = None;
    for ((at, duration), &sentence) in r.marks.played_chunks().zip(&r.marks.audio_chunk_sentences) {
        let start = match clock {
            Some((same, until)) if same == sentence => {
                if at - until > earshot_core::timeline::UNDERRUN_TOLERANCE_MS {
                    stalls.push(at - until);
                }
                at.max(until)
            }
            _ => at,
        };
        clock = Some((sentence, start + duration));
    }
    stalls
}

#[tokio::test]
async fn the_timeline_and_the_client_count_the_same_stalls_on_a_slow_machine() {
    // Slower than it can, the earlier fixed plan, the long answer: the voice stops inside sentences, and a
    // later sentence's pieces often come late for that sentence's own first audio while earlier audio is
    // still queued ahead of the listener. The gateway's timeline follows the same listener as the client
    // (one clock from the answer's first audio, audio queued ahead counted), so the two agree.
    // How slow "slow" must be depends on the machine. Too slow, and every sentence's pieces come after the
    // audio before them has played out: the voice stops, but with nothing queued ahead the two rules
    // agree (the brief answer never shows the case, its one stall is inside its longest sentence). On
    // an idle 2-core machine the long answer shows it at twice slower (seen twice in a row, 2026-12-04;
    // at four times, not in the run that tried it), and each run at four times costs two minutes more. So
    // twice slower is tried first, then four and six times (a faster machine keeps ahead at twice);
    // the two counts must agree on every run.
    let mut arose = Vec::new();
    for slowdown in ["2", "4", "6"] {
        let kokoro = Kokoro::start_with(None, &[("KOKORO_PIECE_PLAN", "fixed"), ("KOKORO_SLOWDOWN", slowdown)]);
        kokoro.ready().await;
        // Four times slower, the long answer took over 240 s on a fresh clone's run (the client's limit was
        // hit mid-answer): neither the client nor the gateway's maximum length may end it here.
        let earshot =
            EarshotProcess::start(&["--kokoro-url", &kokoro.url, "--backend-silence-timeout-ms", SILENCE_LIMIT_MS, "--max-conversation-seconds", "0"]).await;
        earshot.healthy().await;
        let options = CallOptions { timeout: Duration::from_secs(600), ..Default::default() };
        let received = speak(&earshot.url, &earshot_e2e::prompt("long"), &options).await.expect("the conversation runs");
        assert!(check_conversation(&received).len() > 5);
        let timeline = received.timeline.as_ref().expect("done carries the timeline");
        let server_count: u32 = timeline.sentences.iter().map(|s| s.stalls).sum();
        let server_ms: f64 = timeline.sentences.iter().map(|s| s.stall_ms).sum();
        let client = client_stalls_at_tolerance(&received);
        let client_ms: f64 = client.iter().sum();
        // The client decodes each chunk a fraction of a millisecond after the gateway sends it: a silence
        // right at the tolerance may fall on either side of it, nothing more.
        assert!(server_count.abs_diff(client.len() as u32) <= 1, "slowdown {slowdown}: stalls: timeline {server_count}, client {client:?}");
        assert!((server_ms - client_ms).abs() <= 50.0, "slowdown {slowdown}: stall time: timeline {server_ms:.0} ms, client {client_ms:.0} ms ({client:?})");
        // The case is one where the rule matters: the voice stopped inside a sentence, and a clock per
        // sentence would have counted more silence than the listener heard.
        let per_sentence: f64 = stalls_by_a_clock_per_sentence(&received).iter().sum();
        eprintln!("slowdown {slowdown}: {server_count} stalls ({server_ms:.0} ms); a clock per sentence counts {per_sentence:.0} ms");
        arose.push((slowdown, server_count, per_sentence - client_ms));
        // More than the 50 ms the two counts may differ by: the per-sentence clock overcounted for real
        // (a loaded run saw 87 ms at twice slower, none at four and six times).
        if server_count >= 1 && per_sentence > client_ms + 50.0 {
            return;
        }
    }
    panic!("no slowdown made the voice stop inside a sentence with audio queued ahead (slowdown, stalls, per-sentence excess ms): {arose:?}");
}
