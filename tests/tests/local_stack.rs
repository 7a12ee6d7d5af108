//! The local stack end to end: scripted agent → gateway over HTTP → real Kokoro container → a
//! client decoding SSE or binary frames.

use std::sync::Arc;
use std::time::Duration;

use earshot_client::{speak, CallOptions, SpeakBody};
use earshot_core::protocol::{Delivery, ServerEvent};
use earshot_core::speech::SpeechBackend;
use earshot_e2e::{agent, check_conversation, kokoro_backend, prompt, serve, text, Kokoro};
use earshot_gateway::{Gateway, GatewaySettings};

/// How long the `quiet` script goes silent after its first sentence without saying so: 2.5 s, longer
/// than the first sentence takes the model on a busy 2-core machine (about 1.2 s, up to 1.6 s at the
/// slowest), so that its audio can come inside the silence; longer in proportion on a slower machine.
async fn quiet_wait() -> Duration {
    Kokoro::shared().speed().await.scaled(Duration::from_millis(2500))
}

async fn stack(tokens_per_second: f64, tweak: impl FnOnce(&mut GatewaySettings)) -> (String, Arc<dyn SpeechBackend>) {
    let backend = kokoro_backend(Kokoro::shared()).await;
    let quiet = format!("Let me check that for you.{{wait:{}}} It shipped today.", quiet_wait().await.as_millis());
    let agent = agent(tokens_per_second).with_script("quiet", &quiet).with_script("three", "One two three. Four five six. Seven eight nine.");
    let mut settings = GatewaySettings { metrics_namespace: None, ..Default::default() };
    // These tests measure the model: a sentence said in an earlier test is synthesized again, not played
    // from the sentence cache (tests/tests/cache.rs is about the cache).
    settings.cache.scope = earshot_core::cache::CacheScope::Off;
    // No test here is about the backend's silence limit: it waits for the shared container's queue.
    settings.scheduler.backend_silence = Some(earshot_e2e::untested_silence().await);
    tweak(&mut settings);
    let gateway = Gateway::new(vec![backend.clone()], Arc::new(agent), settings);
    (serve(gateway).await.url, backend)
}

#[tokio::test]
async fn a_prompt_is_spoken_in_both_formats() {
    let (url, _) = stack(200.0, |_| {}).await;
    for delivery in [Delivery::Sse, Delivery::Binary] {
        let r = speak(&url, &prompt("brief"), &CallOptions { delivery, ..Default::default() }).await.expect("spoken");
        let sentences = check_conversation(&r);
        assert_eq!(sentences.len(), 4, "{sentences:?}");
        assert_eq!(sentences[0], "Sure.");
        assert_eq!(r.header("x-earshot-backend"), Some("kokoro"));
        assert_eq!(r.header("x-earshot-backend-reason"), Some("default"));
        let session = r.session.as_ref().unwrap();
        assert_eq!((session.v, session.release.as_str()), (1, "incremental"));
    }
}

#[tokio::test]
async fn incremental_speaks_before_the_agent_finishes_and_buffered_after() {
    // Three tokens a second on the reference machine: the agent takes about four seconds to write
    // three short sentences, several times what the first one takes to synthesize. Where the voice is
    // slower, so is the agent (x2.4 slower, first audio came 1.3 s after the last token at three a second).
    let pace = 3.0 / Kokoro::shared().speed().await.factor();
    let (url, _) = stack(pace, |_| {}).await;
    let incremental = speak(&url, &prompt("three"), &CallOptions::default()).await.unwrap();
    check_conversation(&incremental);
    let t = incremental.timeline.unwrap();
    assert!(t.first_audio_sent_ms.unwrap() < t.agent_done_ms.unwrap(), "incremental: first audio before the last token: {t:?}");
    assert!(t.sentences[0].released_ms.unwrap() < t.agent_done_ms.unwrap());

    let buffered_body = SpeakBody { release: Some("buffered".into()), ..prompt("three") };
    let buffered = speak(&url, &buffered_body, &CallOptions::default()).await.unwrap();
    check_conversation(&buffered);
    let t = buffered.timeline.unwrap();
    let done = t.agent_done_ms.unwrap();
    assert!(t.first_audio_sent_ms.unwrap() > done, "buffered: first audio after the last token: {t:?}");
    assert!(t.sentences.iter().all(|s| s.released_ms.unwrap() >= done), "buffered: nothing released before the agent finished");
    assert!(t.sentences[0].complete_ms < done, "the text was complete early all the same");
}

#[tokio::test]
async fn a_finished_sentence_is_released_while_the_agent_is_quiet() {
    let quiet = |idle: Option<Duration>| async move {
        let (url, _) = stack(100.0, |g| g.scheduler.idle_release = idle).await;
        let r = speak(&url, &prompt("quiet"), &CallOptions::default()).await.unwrap();
        check_conversation(&r);
        r.timeline.unwrap()
    };
    // The script goes quiet after its first sentence without saying so (`quiet_wait`), long enough for
    // the first sentence's audio to come inside the silence. The shared container first finishes what
    // earlier tests left.
    let silence = quiet_wait().await.as_millis() as f64;
    Kokoro::shared().wait_idle(Duration::from_secs(10)).await;
    let with_idle = quiet(Some(Duration::from_millis(150))).await;
    let first_token = with_idle.first_agent_token_ms.unwrap();
    assert!(with_idle.sentences[0].released_ms.unwrap() < first_token + silence, "released during the silence: {with_idle:?}");
    assert!(with_idle.first_audio_sent_ms.unwrap() < with_idle.sentences[1].complete_ms, "first audio inside the silence: {with_idle:?}");

    Kokoro::shared().wait_idle(Duration::from_secs(10)).await;
    let without = quiet(None).await;
    let first_token = without.first_agent_token_ms.unwrap();
    assert!(without.sentences[0].released_ms.unwrap() >= first_token + silence, "held until the next token: {without:?}");
}

#[tokio::test]
async fn a_signalled_pause_releases_pending_text_at_once() {
    let (url, _) = stack(100.0, |g| g.scheduler.idle_release = None).await;
    let r = speak(&url, &prompt("pause"), &CallOptions::default()).await.unwrap();
    check_conversation(&r);
    let t = r.timeline.unwrap();
    // The pause sample pauses 2 s after "Let me check that for you." and signals it.
    assert!(t.sentences[0].released_ms.unwrap() < t.first_agent_token_ms.unwrap() + 2000.0, "{t:?}");
}

#[tokio::test]
async fn bad_requests_get_a_4xx_json_error_before_any_stream() {
    let (url, _) = stack(100.0, |_| {}).await;
    let client = reqwest::Client::new();
    let post = |body: &'static str| client.post(format!("{url}/v1/speak")).body(body).send();
    for (body, status, code) in [
        ("not json", 400, "invalid_json"),
        (r#"{"prompt":"hi","volume":11}"#, 400, "invalid_request"),
        (r#"{"prompt":["hi"]}"#, 400, "invalid_request"),
        (r#"{"prompt":""}"#, 400, "empty_input"),
        (r#"{"prompt":"hi","backend":"espeak"}"#, 400, "unknown_backend"),
        (r#"{"prompt":"hi","voice":"nobody"}"#, 400, "unknown_voice"),
        (r#"{"prompt":"hi","release":"soon"}"#, 400, "invalid_release"),
    ] {
        let response = post(body).await.unwrap();
        assert_eq!(response.status().as_u16(), status, "{body}");
        let json: serde_json::Value = response.json().await.unwrap();
        assert_eq!(json["error"]["code"], code, "{body}");
        assert!(!json["error"]["message"].as_str().unwrap().is_empty());
    }
    let huge = format!(r#"{{"text":"{}"}}"#, "word ".repeat(30_000));
    let response = client.post(format!("{url}/v1/speak")).body(huge).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 413);
}

#[tokio::test]
async fn voices_and_health_are_listed() {
    let web = earshot_e2e::package_dir().join("../web");
    let (url, backend) = stack(100.0, |g| g.web_dir = Some(web)).await;
    let voices: serde_json::Value = reqwest::get(format!("{url}/v1/voices")).await.unwrap().json().await.unwrap();
    assert_eq!(voices["default_backend"], "kokoro");
    assert_eq!(voices["backends"][0]["default_voice"], backend.default_voice());
    assert!(voices["backends"][0]["voices"].as_array().unwrap().len() >= 5);
    // What a page needs to describe the gateway: its agent, and the limits to check input against.
    assert_eq!(voices["agent"], "scripted");
    assert_eq!(voices["limits"]["max_prompt_chars"], 4000);
    assert_eq!(voices["limits"]["max_text_chars"], 20000);
    let health = reqwest::get(format!("{url}/healthz")).await.unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let page = reqwest::get(format!("{url}/")).await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(page.text().await.unwrap().contains("earshot"));
    let module = reqwest::get(format!("{url}/earshot.js")).await.unwrap();
    assert!(module.headers()["content-type"].to_str().unwrap().contains("javascript"));
}

#[tokio::test]
async fn a_client_that_goes_away_cancels_the_work_upstream() {
    let (url, _) = stack(200.0, |_| {}).await;
    let kokoro = Kokoro::shared();
    let before = kokoro.stats().await;
    let options = CallOptions { stop_after_audio_chunks: Some(1), ..Default::default() };
    let r = speak(&url, &prompt("long"), &options).await.unwrap();
    assert!(r.timeline.is_none(), "the client left before the end");
    // The container sees the cancel: nothing of this conversation keeps running there.
    let mut after = kokoro.stats().await;
    for _ in 0..50 {
        if after["active_requests"] == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        after = kokoro.stats().await;
    }
    assert_eq!(after["active_requests"], 0, "{after}");
    let cancelled = |s: &serde_json::Value| s["cancelled_requests"].as_u64().unwrap();
    assert!(cancelled(&after) > cancelled(&before), "the container cancelled work: {before} → {after}");
}

#[tokio::test]
async fn a_container_that_stops_mid_answer_ends_the_stream_with_an_error() {
    let own = Kokoro::start();
    let backend = kokoro_backend(&own).await;
    let gateway = Gateway::new(vec![backend], Arc::new(agent(50.0)), GatewaySettings { metrics_namespace: None, ..Default::default() });
    let url = serve(gateway).await.url;

    let (long, options) = (prompt("long"), CallOptions::default());
    let stop_after_first_audio = async {
        let r = speak(&url, &long, &options);
        tokio::pin!(r);
        // Stop the container shortly after the answer starts.
        tokio::select! {
            done = &mut r => done,
            _ = tokio::time::sleep(Duration::from_millis(2500)) => {
                own.stop();
                r.await
            }
        }
    };
    let r = tokio::time::timeout(Duration::from_secs(30), stop_after_first_audio).await.expect("no hang").unwrap();
    let error = r.error.expect("an error message");
    assert!(error.code.starts_with("backend"), "{error:?}");
    assert!(matches!(r.events.last(), Some(ServerEvent::Error(_))), "the stream ends after the error");

    // A conversation that starts while the container is down is refused before streaming.
    let refused = speak(&url, &prompt("brief"), &CallOptions::default()).await.unwrap_err();
    match refused {
        earshot_client::ClientError::Refused { status, code, .. } => {
            assert_eq!(status, 502);
            assert_eq!(code, "backend_unreachable");
        }
        other => panic!("expected a 502, got {other:?}"),
    }
}

#[tokio::test]
async fn markdown_reaches_captions_but_not_the_voice() {
    let (url, _) = stack(200.0, |_| {}).await;
    let r = speak(&url, &text("## Plan\n- **Call** the [desk](https://x.io/a_b).\n```\nrm -rf /\n```\nDone."), &CallOptions::default()).await.unwrap();
    let sentences = check_conversation(&r);
    assert_eq!(sentences, vec!["Plan", "Call the desk.", "Done."]);
    let captions: String = r.events.iter().filter_map(|e| if let ServerEvent::Text(t) = e { Some(t.text.as_str()) } else { None }).collect();
    assert!(captions.contains("**Call**") && captions.contains("rm -rf"), "captions keep the agent's own text");
}
