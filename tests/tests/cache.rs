//! The sentence cache end to end: a sentence said again plays from memory, at once and byte for byte,
//! on the real Kokoro model; another voice or language is synthesized anew; the store gives up its least
//! recently used sentences by bytes; no caller hears another's sentence from it; and the warm-up fills the
//! cache without holding up the first caller. The bounds, scope and warm-up go through `earshot serve`'s
//! own flags where the test is about them.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use earshot_client::{speak, CallOptions, Received, SpeakBody};
use earshot_core::protocol::ServerEvent;
use earshot_e2e::{agent, earshot_bin, kokoro_backend, serve, EarshotProcess, Kokoro};
use earshot_gateway::{Gateway, GatewaySettings};

fn said(text: &str, id: &str) -> SpeakBody {
    SpeakBody { text: Some(text.into()), conversation_id: Some(id.into()), ..Default::default() }
}

/// Whether each sentence of the answer came from the cache, in order.
fn cached(r: &Received) -> Vec<bool> {
    assert!(r.error.is_none(), "error: {:?}", r.error);
    r.events.iter().filter_map(|e| if let ServerEvent::SentenceEnd(end) = e { Some(end.cached) } else { None }).collect()
}

/// Milliseconds from the first sentence's release to its first audio at the gateway.
fn release_to_first_audio(r: &Received) -> f64 {
    let first = &r.timeline.as_ref().expect("a timeline").sentences[0];
    first.tts_first_audio_ms.expect("first audio") - first.released_ms.expect("released")
}

#[tokio::test]
async fn a_sentence_said_again_plays_from_the_cache_at_once_with_the_same_bytes_and_another_voice_or_language_does_not() {
    let kokoro = kokoro_backend(Kokoro::shared()).await;
    let voices: Vec<String> = kokoro.voices().into_iter().map(|v| v.id).collect();
    let gateway = Gateway::new(vec![kokoro], Arc::new(agent(200.0)), GatewaySettings { metrics_namespace: None, ..Default::default() });
    let url = serve(gateway).await.url;
    let opener = "Let me check that for you.";

    let first = speak(&url, &said(opener, "cache:1"), &CallOptions::default()).await.expect("spoken");
    assert_eq!(cached(&first), [false], "the first time, the model speaks it");
    let again = speak(&url, &said(opener, "cache:2"), &CallOptions::default()).await.expect("spoken");
    assert_eq!(cached(&again), [true], "the second time, the cache does");
    assert!(release_to_first_audio(&again) < 20.0, "a hit's first audio follows its release at once: {} ms", release_to_first_audio(&again));
    assert!(release_to_first_audio(&first) > release_to_first_audio(&again), "the model's first time is slower than the hit");
    assert_eq!(again.audio, first.audio, "the same bytes");
    assert!(again.timeline.as_ref().unwrap().sentences[0].cached, "the timeline marks the hit");

    let spoken_by = &first.session.as_ref().expect("a session").voice;
    let another = voices.iter().find(|v| *v != spoken_by).expect("a second voice");
    let other_voice = SpeakBody { voice: Some(another.clone()), ..said(opener, "cache:3") };
    assert_eq!(cached(&speak(&url, &other_voice, &CallOptions::default()).await.expect("spoken")), [false], "another voice is another sound");
    let french = SpeakBody { language: Some("fr".into()), ..said(opener, "cache:4") };
    assert_eq!(cached(&speak(&url, &french, &CallOptions::default()).await.expect("spoken")), [false], "another language is another sound");
    let once_more = speak(&url, &said(opener, "cache:5"), &CallOptions::default()).await.expect("spoken");
    assert_eq!((cached(&once_more), once_more.audio == first.audio), (vec![true], true), "and the first voice's is still there");
}

/// The synthetic voice: 18 characters a sentence are 1.2 s of 24 kHz audio, 57.6 kB; the bound below holds
/// two such sentences and not three.
const BOUND_MIB: &str = "0.15";

#[tokio::test]
async fn the_least_recently_used_sentence_goes_once_the_bytes_pass_the_bound() {
    let earshot = EarshotProcess::start(&[
        "--backends",
        "synthetic",
        "--cache-mib",
        BOUND_MIB,
        "--cache-warmup",
        "none",
        "--ab-weights",
        "synthetic=1",
        "--ab-experiment",
        "e2e-cache",
    ])
    .await;
    earshot.healthy().await;
    let (a, b, c) = ("Alpha is the one.", "Bravo is the one.", "Gamma is the one.");
    let mut seen = Vec::new();
    for (i, sentence) in [a, b, a, c, b, a].into_iter().enumerate() {
        let r = speak(&earshot.url, &said(sentence, &format!("bound:{i}")), &CallOptions::default()).await.expect("spoken");
        seen.push((sentence, cached(&r)[0]));
    }
    // a, b kept; a heard again (now the most recent); c pushes out b; b comes back and pushes out a.
    let want = [(a, false), (b, false), (a, true), (c, false), (b, false), (a, false)];
    assert_eq!(seen, want);

    // `earshot ab` on the gateway's metric lines: one sentence in six from the cache.
    let lines = earshot.metric_lines_at_least(6).await;
    assert_eq!(lines.iter().map(|l| l["CacheHits"].as_u64().unwrap()).sum::<u64>(), 1, "{lines:?}");
    let out = Command::new(earshot_bin()).args(["ab", "--log", earshot.stdout.to_str().unwrap(), "--no-lambda", "--json"]).output().expect("earshot ab runs");
    assert!(out.status.success(), "earshot ab failed: {}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    let rate = report["arms"][0]["cache_hit_rate"].as_f64().expect("a hit rate");
    assert!((rate - 1.0 / 6.0).abs() < 1e-9, "{}", report["arms"][0]);
}

/// Gateway tokens for two callers, from `earshot token`.
const KEYS: &str = "k1=0123456789abcdef0123456789abcdef";

fn token_for(sub: &str) -> CallOptions {
    let out = Command::new(earshot_bin()).args(["token", "--sub", sub]).env("EARSHOT_TOKEN_KEYS", KEYS).output().expect("earshot token runs");
    assert!(out.status.success(), "earshot token: {}", String::from_utf8_lossy(&out.stderr));
    CallOptions { bearer: Some(String::from_utf8(out.stdout).unwrap().trim().to_string()), ..Default::default() }
}

/// No caller hears another's sentence from the cache, whatever the scope: a hit is faster than a miss, so
/// caller b's `cached` (or its first audio) would tell him caller a was told "Your order has shipped.".
/// Token callers are owners, so the default scope is `owner` (nothing shared, no warm-up); under
/// `deployment` the sentences the deployment declared (the warm-up's) are heard from the cache by both.
#[tokio::test]
async fn no_caller_hears_another_s_sentence_and_the_declared_ones_are_heard_by_all_under_deployment() {
    for scope in [None, Some("deployment")] {
        let mut args = vec!["--backends", "synthetic", "--auth", "token", "--token-keys", KEYS, "--cache-warmup", r#"["Sure."]"#];
        args.extend(scope.iter().flat_map(|s| ["--cache", s]));
        let earshot = EarshotProcess::start(&args).await;
        earshot.healthy().await;
        let scope = scope.unwrap_or("default");
        let log = earshot.log_path();
        if scope == "deployment" {
            let done = wait_for_line(&log, "cache warm-up done", Duration::from_secs(60)).await;
            assert!(done.contains("1 sentences rendered"), "{done}");
        } else {
            wait_for_line(&log, "each caller hears only its own sentences", Duration::from_secs(10)).await;
        }
        let (alice, bob) = (token_for("caller-a"), token_for("caller-b"));
        let say = |who: &CallOptions, text: &str, id: &str| {
            let (url, who, text, id) = (earshot.url.clone(), who.clone(), text.to_string(), id.to_string());
            async move { cached(&speak(&url, &said(&text, &id), &who).await.expect("spoken"))[0] }
        };
        assert!(!say(&alice, "Your order has shipped.", "a1").await, "{scope}: caller a, the first time");
        assert!(say(&alice, "Your order has shipped.", "a2").await, "{scope}: caller a hears her own sentence from the cache");
        assert!(!say(&bob, "Your order has shipped.", "b1").await, "{scope}: caller b's sentence is synthesized anew");
        let declared_heard = scope == "deployment";
        assert_eq!(say(&alice, "Sure.", "a3").await, declared_heard, "{scope}: the declared sentence, caller a");
        assert_eq!(say(&bob, "Sure.", "b2").await, declared_heard, "{scope}: the declared sentence, caller b");
    }
}

/// A warm-up list long enough to be still rendering when the first caller comes (the synthetic voice speaks
/// 15 characters a second).
const WARMUP: &str =
    r#"["Sure.", "One moment while I look into that for you.", "Thank you for waiting while I checked.", "Is there anything else I can help with today?"]"#;

#[tokio::test]
async fn the_warm_up_steps_aside_for_the_first_caller_then_fills_the_cache() {
    let earshot = EarshotProcess::start(&["--backends", "synthetic", "--cache-warmup", WARMUP]).await;
    earshot.healthy().await;
    // A caller at once, while the warm-up renders: the synthetic voice's first audio comes 200 ms after the
    // release, as without a warm-up, because the warm-up's session was let go for it.
    let first = speak(&earshot.url, &said("Hello, a question about my order.", "warm:first"), &CallOptions::default()).await.expect("spoken");
    assert_eq!(cached(&first), [false]);
    let log = earshot.log_path();
    let done = wait_for_line(&log, "cache warm-up done", Duration::from_secs(60)).await;
    assert!(std::fs::read_to_string(&log).unwrap().contains("cache warm-up: a conversation started"), "the warm-up stepped aside for the caller:\n{done}");
    assert!(done.contains("4 sentences rendered"), "{done}");
    let opener = speak(&earshot.url, &said("One moment while I look into that for you.", "warm:opener"), &CallOptions::default()).await.expect("spoken");
    assert_eq!(cached(&opener), [true], "an opener plays from the cache");
    assert!(release_to_first_audio(&opener) < 20.0, "{} ms", release_to_first_audio(&opener));
}

/// Waits for a line of the server's log containing `needle`; the line.
async fn wait_for_line(log: &std::path::Path, needle: &str, within: Duration) -> String {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.contains(needle)) {
            return line.to_string();
        }
        assert!(tokio::time::Instant::now() < deadline, "no `{needle}` in {} within {within:?}:\n{text}", log.display());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Two instances of the gateway (two warm Lambdas) sharing the cache's S3 tier on moto: a sentence one
/// paid for, the other fetches instead of asking its voice. The synthetic voice stands in for Polly (the
/// backends that use the tier are a setting); the objects are read back by boto3.
#[tokio::test]
async fn a_sentence_one_instance_paid_for_is_fetched_by_another_from_the_shared_tier() {
    let moto = earshot_e2e::moto::Moto::start().await;
    moto.boto3("client('s3').create_bucket(Bucket='earshot-cache-e2e')");
    let env = [("AWS_ACCESS_KEY_ID", "AKIDTEST"), ("AWS_SECRET_ACCESS_KEY", "secret"), ("AWS_REGION", "us-east-1")];
    let args = [
        "--backends",
        "synthetic",
        "--cache-bucket",
        "earshot-cache-e2e",
        "--cache-endpoint",
        &moto.url,
        "--cache-shared-backends",
        "synthetic",
        "--cache-warmup",
        "none",
        // moto is Python on a busy machine: the test is about what is shared, not the default fetch limit.
        "--cache-fetch-ms",
        "3000",
    ];
    let one = EarshotProcess::start_with_env(&args, &env).await;
    let two = EarshotProcess::start_with_env(&args, &env).await;
    one.healthy().await;
    two.healthy().await;
    let sentence = "Your parcel is on its way.";
    let paid = speak(&one.url, &said(sentence, "shared:1"), &CallOptions::default()).await.expect("spoken");
    assert_eq!(cached(&paid), [false], "the first instance asks its voice");
    // The store is in the background, after the sentence's end.
    let listing = format!("{}/earshot-cache-e2e?list-type=2&prefix=earshot-cache/", moto.url);
    let mut stored = false;
    for _ in 0..100 {
        let xml = reqwest::get(&listing).await.expect("moto lists").text().await.unwrap();
        if xml.contains("<KeyCount>1</KeyCount>") {
            stored = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(stored, "the sentence was stored under the prefix");
    let fetched = speak(&two.url, &said(sentence, "shared:2"), &CallOptions::default()).await.expect("spoken");
    assert_eq!(cached(&fetched), [true], "the second instance fetched it");
    assert_eq!(fetched.audio, paid.audio, "the same bytes");
    // The figure is the bench's (BENCHMARKS.md); here it is only shown.
    eprintln!(
        "shared tier (moto, loopback): release to first audio {:.1} ms; the voice's own: {:.1} ms",
        release_to_first_audio(&fetched),
        release_to_first_audio(&paid)
    );
    // Told again, the second instance has it in memory; and boto3 reads what the gateway wrote.
    assert_eq!(cached(&speak(&two.url, &said(sentence, "shared:3"), &CallOptions::default()).await.expect("spoken")), [true]);
    moto.boto3(
        "s3 = client('s3')\n\
         objects = s3.list_objects_v2(Bucket='earshot-cache-e2e', Prefix='earshot-cache/')['Contents']\n\
         assert len(objects) == 1, objects\n\
         body = s3.get_object(Bucket='earshot-cache-e2e', Key=objects[0]['Key'])['Body'].read()\n\
         assert body[:4] == b'ESC1' and len(objects[0]['Key']) == len('earshot-cache/') + 64, objects[0]['Key']\n",
    );
}
