//! What an outside caller can do to `earshot serve` with one request, tried as a hostile caller would:
//! earshot's own marker characters written into the text (raw, or as SSML character references), and
//! silence asked for by the thousand `<break>`s. Each is refused by name or spoken within its cap, and the
//! process stays up with its memory within a stated bound. The voice is the synthetic one: what is under
//! test is the gateway, not the model.

use std::time::Duration;

use earshot_client::{speak, CallOptions, SpeakBody};
use earshot_e2e::EarshotProcess;

/// What a hundred refused requests of a thousand breaks and ten answers of the most silence one answer may
/// hold may leave the process holding, more than it held before them, in MiB: the silence is cut from
/// static buffers, so nothing of it stays.
const RSS_GROWTH_BOUND_MIB: u64 = 64;

async fn gateway() -> EarshotProcess {
    let earshot = EarshotProcess::start(&["--backends", "synthetic", "--cache", "off"]).await;
    earshot.healthy().await;
    earshot
}

async fn post(url: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
    let r = reqwest::Client::new().post(format!("{url}/v1/speak")).json(&body).send().await.expect("a response");
    let status = r.status().as_u16();
    let text = r.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)))
}

fn ssml(document: &str) -> SpeakBody {
    SpeakBody { text: Some(document.into()), markup: Some("ssml".into()), ..Default::default() }
}

fn rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the process is alive");
    let kib: u64 = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()?.parse().ok()).expect("VmRSS");
    kib / 1024
}

#[tokio::test]
async fn earshot_s_own_marker_characters_are_refused_at_every_entry_and_the_process_stays_up() {
    let earshot = gateway().await;
    // The break marker for 4,000,000,000 ms, as the reader once wrote it, in a caller's text.
    let injected = "\u{F8F0}\u{F0062}\u{F0034}\u{F0030}\u{F0030}\u{F0030}\u{F0030}\u{F0030}\u{F0030}\u{F0030}\u{F0030}\u{F0030}\u{F8F1}Hi.";
    for markup in ["ssml", "none"] {
        let (status, body) = post(&earshot.url, serde_json::json!({"text": injected, "markup": markup})).await;
        assert_eq!((status, body["error"]["code"].as_str()), (400, Some("reserved_character")), "{markup}: {body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("U+F8F0"), "{body}");
    }
    let (status, body) = post(&earshot.url, serde_json::json!({"prompt": format!("Say {injected}")})).await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("reserved_character")), "{body}");
    let messages = serde_json::json!([{"role": "user", "content": injected}, {"role": "assistant", "content": "ok"}]);
    let (status, body) = post(&earshot.url, serde_json::json!({"prompt": "Hi.", "messages": messages})).await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("reserved_character")), "{body}");
    // As SSML character references: never a marker.
    let (status, body) = post(&earshot.url, serde_json::json!({"text": "<speak>&#xF8F0;&#xF0062;&#xF0034;&#xF8F1;Hi.</speak>", "markup": "ssml"})).await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("invalid_ssml")), "{body}");
    // OpenAI's input too.
    let r = reqwest::Client::new()
        .post(format!("{}/v1/audio/speech", earshot.url))
        .json(&serde_json::json!({"model": "tts-1", "voice": "alloy", "input": injected, "response_format": "pcm"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    // Still up, and still speaking.
    let r = speak(&earshot.url, &ssml("<speak>Still <break time=\"200ms\"/>here.</speak>"), &CallOptions::default()).await.expect("spoken");
    assert!(r.error.is_none(), "{:?}", r.error);
}

#[tokio::test]
async fn silence_is_capped_by_name_streamed_in_pieces_and_leaves_nothing_behind() {
    let earshot = gateway().await;
    for n in [2, 50, 1_000] {
        let document = format!("<speak>{}Hi.</speak>", "<break time=\"10s\"/>".repeat(n));
        let (status, body) = post(&earshot.url, serde_json::json!({"text": document, "markup": "ssml"})).await;
        assert_eq!((status, body["error"]["code"].as_str()), (400, Some("invalid_ssml")), "{n} breaks: {body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("<break>"), "{body}");
    }
    // The most one answer may hold: six pauses of 10 s, a minute of silence, said in pieces.
    let most = format!("<speak>{}</speak>", "Hi.<break time=\"10s\"/>".repeat(6));
    let r = speak(&earshot.url, &ssml(&most), &CallOptions::default()).await.expect("spoken");
    assert!(r.error.is_none(), "{:?}", r.error);
    let format = &r.session.as_ref().expect("a session").audio;
    let seconds = r.audio.len() as f64 / (f64::from(format.sample_rate) * 2.0 * f64::from(format.channels));
    assert!(seconds >= 60.0, "a minute of silence and six words: {seconds} s");
    let largest = r.marks.audio_chunks.iter().map(|(_, bytes)| *bytes).max().unwrap_or(0);
    assert!(
        largest <= earshot_core::rendering::SILENCE_PIECE_BYTES,
        "no piece of audio over {} bytes: {largest}",
        earshot_core::rendering::SILENCE_PIECE_BYTES
    );
    // A hundred requests of a thousand breaks, and ten answers of a minute's silence: the process holds no
    // more than it did, within the bound.
    let before = rss_mib(earshot.pid());
    let thousand = format!("<speak>{}Hi.</speak>", "<break time=\"10s\"/>".repeat(1_000));
    for _ in 0..100 {
        let (status, _) = post(&earshot.url, serde_json::json!({"text": thousand, "markup": "ssml"})).await;
        assert_eq!(status, 400);
    }
    for _ in 0..10 {
        let r = speak(&earshot.url, &ssml(&most), &CallOptions::default()).await.expect("spoken");
        assert!(r.error.is_none(), "{:?}", r.error);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = rss_mib(earshot.pid());
    assert!(after <= before + RSS_GROWTH_BOUND_MIB, "RSS {before} MiB before, {after} MiB after");
    println!("RSS: {before} MiB before, {after} MiB after a hundred refused requests of a thousand breaks and ten answers of a minute's silence");
}

#[tokio::test]
async fn an_agent_s_answer_outside_the_subset_ends_with_invalid_ssml_naming_the_tag_only() {
    let script = "bad=<speak>Hi there. <emphasis level=\"strong\">my private notes</emphasis> more.</speak>";
    let earshot = EarshotProcess::start(&["--backends", "synthetic", "--cache", "off", "--script", script]).await;
    earshot.healthy().await;
    let body = SpeakBody { prompt: Some("bad".into()), markup: Some("ssml".into()), ..Default::default() };
    let r = speak(&earshot.url, &body, &CallOptions::default()).await.expect("a stream");
    let error = r.error.expect("the answer ends with an error");
    assert_eq!(error.code, "invalid_ssml");
    assert!(error.message.contains("<emphasis>") && !error.message.contains("private notes"), "the tag's name, never the text: {}", error.message);
    assert!(!error.message.contains("service failed"), "earshot's own words, not a generic upstream failure: {}", error.message);
}
