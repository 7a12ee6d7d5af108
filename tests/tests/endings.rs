//! Every conversation that got a session is counted, however it ended: `earshot serve` with the A/B
//! split on, a conversation ended each way a listener meets (heard to the end, left after the first
//! audio, interrupted, cut at the maximum length, ended by the server's shutdown), then each one's
//! metric line and `earshot ab` on the gateway's log, which counts them all in their arm.
//!
//! The synthetic voice speaks at real-time pace (15 characters a second after 200 ms), so each ending
//! comes at a time the test chooses, with no model to wait for.

use std::process::Command;
use std::time::Duration;

use earshot_client::{interrupt, speak, CallOptions, SpeakBody};
use earshot_core::protocol::ServerEvent;
use earshot_e2e::{earshot_bin, EarshotProcess};
use serde_json::Value;

const EXPERIMENT: &str = "e2e-endings";
/// About 7 s of the synthetic voice: longer than the gateway's maximum length below.
const LONG: &str = "This answer goes on for a good while. It has several sentences in it. Each one takes its time to say.";

fn body(text: &str, id: &str) -> SpeakBody {
    SpeakBody { text: Some(text.into()), conversation_id: Some(id.into()), ..Default::default() }
}

/// The conversation's metric line, once written.
async fn line_of(earshot: &EarshotProcess, request_id: &str) -> Value {
    for _ in 0..200 {
        if let Some(line) = earshot.metric_lines().into_iter().find(|l| l["RequestId"] == request_id) {
            return line;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no metric line for request {request_id}: {:?}", earshot.metric_lines());
}

fn number(line: &Value, name: &str) -> f64 {
    line[name].as_f64().unwrap_or_else(|| panic!("{name} in {line}"))
}

/// Whether a stopped conversation's line counts no more as heard than was sent, nor than could have
/// played between its first audio and its end (a listener who stopped playing hears nothing queued).
fn heard_within_its_time(line: &Value) -> bool {
    let heard = number(line, "HeardTime");
    let playing = number(line, "ComputeTime") - number(line, "TimeToFirstAudio");
    heard <= number(line, "AudioSent") && heard <= playing + 1.0
}

#[tokio::test]
async fn every_ending_leaves_its_line_and_earshot_ab_counts_them_all_in_their_arm() {
    let mut earshot = EarshotProcess::start(&[
        "--backends",
        "synthetic",
        "--ab-weights",
        "synthetic=1",
        "--ab-experiment",
        EXPERIMENT,
        "--max-conversation-seconds",
        "3",
        "--drain",
        "1",
    ])
    .await;
    earshot.healthy().await;
    let url = earshot.url.clone();
    let request_id = |r: &earshot_client::Received| r.session.as_ref().expect("a session").request_id.clone();

    // Heard to the end: everything sent was heard.
    let whole = speak(&url, &body("Hi there.", "endings:whole"), &CallOptions::default()).await.expect("spoken");
    assert!(whole.error.is_none(), "{:?}", whole.error);
    let line = line_of(&earshot, &request_id(&whole)).await;
    assert_eq!((line["Ending"].as_str(), line["Arm"].as_str(), line["Failures"].as_u64()), (Some("completed"), Some("synthetic"), Some(0)), "{line}");
    assert!(number(&line, "AudioSent") > 400.0 && number(&line, "HeardTime") == number(&line, "AudioSent"), "{line}");

    // Left after the first audio: counted, with less heard than was sent.
    let options = CallOptions { stop_after_audio_chunks: Some(2), ..Default::default() };
    let left = speak(&url, &body(LONG, "endings:left"), &options).await.expect("audio before leaving");
    let line = line_of(&earshot, &request_id(&left)).await;
    assert_eq!(line["Ending"], "client_left", "{line}");
    assert!(line.get("TimeToFirstAudio").is_some(), "it had first audio: {line}");
    assert!(heard_within_its_time(&line), "no more heard than could have played: {line}");

    // Interrupted by its owner mid-answer.
    let talking = tokio::spawn({
        let url = url.clone();
        async move { speak(&url, &body(LONG, "endings:interrupted"), &CallOptions::default()).await }
    });
    tokio::time::sleep(Duration::from_millis(1200)).await;
    interrupt(&url, "endings:interrupted").await.expect("the interrupt is taken");
    let interrupted = talking.await.unwrap().expect("a stream that ends with an error");
    assert_eq!(interrupted.error.as_ref().map(|e| e.code.as_str()), Some("interrupted"));
    let line = line_of(&earshot, &request_id(&interrupted)).await;
    assert_eq!((line["Ending"].as_str(), line["Failures"].as_u64()), (Some("interrupted"), Some(0)), "{line}");
    assert!(number(&line, "HeardTime") > 0.0 && heard_within_its_time(&line), "{line}");

    // Cut at the maximum length (3 s): not a failure of the gateway, and every sentence sent counts.
    let long = speak(&url, &body(LONG, "endings:long"), &CallOptions::default()).await.expect("a stream");
    assert_eq!(long.error.as_ref().map(|e| e.code.as_str()), Some("conversation_too_long"));
    let line = line_of(&earshot, &request_id(&long)).await;
    assert_eq!((line["Ending"].as_str(), line["Failures"].as_u64()), (Some("too_long"), Some(0)), "{line}");
    assert!((2900.0..8000.0).contains(&number(&line, "ComputeTime")), "{line}");

    // Ended by the server's shutdown: SIGTERM, a drain of 1 s, then `shutting_down`; the line is written
    // before the process exits.
    let draining = tokio::spawn({
        let url = url.clone();
        async move { speak(&url, &body(LONG, "endings:shutdown"), &CallOptions::default()).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    earshot.signal("TERM");
    let cut = draining.await.unwrap().expect("a stream");
    assert_eq!(cut.error.as_ref().map(|e| e.code.as_str()), Some("shutting_down"));
    assert!(cut.events.iter().any(|e| matches!(e, ServerEvent::Audio(_))));
    assert!(earshot.exited(Duration::from_secs(10)).await.is_some_and(|s| s.success()), "earshot exits after its drain");
    let line = line_of(&earshot, &request_id(&cut)).await;
    assert_eq!(line["Ending"], "shutting_down", "{line}");

    // `earshot ab` on the log: five conversations in the arm they were assigned, each ending counted,
    // the one who left as the measure of its own.
    let out = Command::new(earshot_bin()).args(["ab", "--log", earshot.stdout.to_str().unwrap(), "--no-lambda", "--json"]).output().expect("earshot ab runs");
    assert!(out.status.success(), "earshot ab failed: {}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(report["experiment"], EXPERIMENT);
    let arm = &report["arms"][0];
    assert_eq!((arm["arm"].as_str(), arm["answers"].as_u64(), arm["left"].as_u64()), (Some("synthetic"), Some(5), Some(1)), "{arm}");
    let endings: Vec<(&str, u64)> = arm["endings"].as_object().unwrap().iter().map(|(k, v)| (k.as_str(), v.as_u64().unwrap())).collect();
    assert_eq!(endings, vec![("client_left", 1), ("completed", 1), ("interrupted", 1), ("shutting_down", 1), ("too_long", 1)], "every ending in the arm");
    assert_eq!(arm["failures"], 0, "none of these is the gateway failing: {arm}");
}
