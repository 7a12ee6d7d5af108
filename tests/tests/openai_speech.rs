//! `POST /v1/audio/speech` as the ecosystem calls it: OpenAI's official Python SDK (the version the peer
//! benchmark pins, in its venv) against `earshot serve` with the local Kokoro container, every response
//! format OpenAI offers (the SDK's default included), each decoded by its reference decoder, and both
//! stream formats; and the same route's answer, sentence by sentence, next to
//! `/v1/speak`'s `text` mode (its first audio comes with the first sentence, not the whole input).

use std::time::{Duration, Instant};

use earshot_e2e::{package_dir, EarshotProcess, Kokoro};

const TEXT: &str = "Sure. Your order shipped this morning, and it should arrive on Thursday.";

/// What `tests/openai/speak_with_the_sdk.py` says.
const SDK_TEXT: &str = "Your order shipped this morning from our warehouse. It should arrive on Thursday before noon.";

/// What a Python check (run with the peer benchmark's venv, which has OpenAI's SDK and pipecat) printed,
/// given earshot's URL.
async fn python_check(script: std::path::PathBuf, url: String) -> serde_json::Value {
    let python = package_dir().join("../bench/peer/.venv/bin/python");
    assert!(python.exists(), "OpenAI's SDK and pipecat are installed with the peer benchmark's venv: make peer-venv");
    let output = tokio::task::spawn_blocking(move || std::process::Command::new(python).arg(script).arg(url).output().expect("python runs")).await.unwrap();
    assert!(output.status.success(), "the check failed: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("the check's JSON")
}

async fn kokoro_gateway() -> EarshotProcess {
    let kokoro = Kokoro::shared();
    kokoro.ready().await;
    let earshot = EarshotProcess::start(&["--backends", "kokoro", "--kokoro-url", &kokoro.url, "--cache", "off"]).await;
    earshot.healthy().await;
    earshot
}

#[tokio::test]
async fn openai_s_own_sdk_speaks_through_earshot_in_every_format_it_offers() {
    let earshot = kokoro_gateway().await;
    let out = python_check(package_dir().join("openai/speak_with_the_sdk.py"), earshot.url.clone()).await;
    eprintln!("{out}");
    // Raw PCM at 24 kHz: the whole answer is seconds of it.
    assert_eq!(out["pcm"]["content_type"], "audio/pcm");
    let pcm = out["pcm"]["bytes"].as_u64().unwrap();
    assert!(pcm > 48_000 * 2 && pcm.is_multiple_of(2), "{out}");
    let pcm_seconds = pcm as f64 / 48_000.0;
    // Every format OpenAI offers, the SDK's default (mp3) first: its reference decoder reads the whole
    // answer, as long as the PCM one (a compressed stream adds some silence a sentence) and as loud.
    for (name, content_type) in
        [("default", "audio/mpeg"), ("mp3", "audio/mpeg"), ("opus", "audio/ogg"), ("aac", "audio/aac"), ("flac", "audio/flac"), ("wav", "audio/wav")]
    {
        let call = &out[name];
        assert_eq!(call["content_type"], content_type, "{name}: {out}");
        let seconds = call["decoded"]["seconds"].as_f64().unwrap();
        assert!(seconds >= pcm_seconds - 0.01 && seconds <= pcm_seconds + 0.25, "{name}: {seconds} s decoded, {pcm_seconds} s of PCM");
        let rms = call["decoded"]["rms"].as_f64().unwrap();
        assert!(rms > 0.02, "{name}: speech, not silence ({rms})");
        assert!(call["first_chunk_s"].as_f64().is_some(), "{name}: streamed");
    }
    // WAV: a RIFF header, then the same audio.
    assert_eq!((out["wav"]["head"].as_str(), out["wav"]["format"].as_str()), (Some("RIFF"), Some("WAVE")));
    // SSE: deltas of base64 audio, then done with the usage; a WAV answer's first delta holds its header.
    for name in ["sse_pcm", "sse_wav"] {
        assert_eq!(out[name]["content_type"], "text/event-stream");
        assert_eq!(out[name]["types"], serde_json::json!(["speech.audio.delta", "speech.audio.done"]));
        assert_eq!(out[name]["last"], "speech.audio.done");
        assert!(out[name]["audio_bytes"].as_u64().unwrap() > 48_000 * 2);
        assert_eq!(out[name]["usage"]["input_tokens"], SDK_TEXT.chars().count());
    }
    assert_eq!(out["sse_wav"]["first_delta_head"], "RIFF", "{out}");
    assert_ne!(out["sse_pcm"]["first_delta_head"], "RIFF");
    // OpenAI's whole speed range is taken: 4.0 is spoken at the voices' fastest, which the header says.
    assert_eq!(out["fastest"]["speed_header"], "2.00", "{out}");
    assert!(out["fastest"]["bytes"].as_u64().unwrap() < pcm * 3 / 4, "spoken faster");
    // The SDK reads the model list: OpenAI's names and the backend.
    let models = out["models"].as_array().unwrap();
    assert!(models.iter().any(|m| m == "tts-1") && models.iter().any(|m| m == "kokoro"), "{out}");
    // A field of another server's is ignored and named.
    assert_eq!(out["extra_field"]["ignored_header"], "lang_code", "{out}");
    // What cannot be honoured is a 400 the SDK raises as its own BadRequestError, with earshot's code.
    for (name, code, param) in
        [("too_fast", "invalid_speed", "speed"), ("too_long", "input_too_long", "input"), ("unknown_format", "invalid_response_format", "response_format")]
    {
        assert_eq!((out[name]["raised"].as_str(), out[name]["status"].as_u64()), (Some("BadRequestError"), Some(400)), "{name}: {out}");
        assert_eq!((out[name]["code"].as_str(), out[name]["param"].as_str()), (Some(code), Some(param)), "{name}: {out}");
    }
    // Each call is a conversation of its own in the metric lines, which say which API it came through.
    let lines = earshot.metric_lines_at_least(3).await;
    assert!(lines.iter().filter(|l| l.get("Conversations").is_some()).all(|l| l["Api"] == "openai_speech"), "{lines:?}");
}

/// The whole PCM answer for `voice`.
async fn spoken(client: &reqwest::Client, url: &str, voice: &str) -> Vec<u8> {
    let body = serde_json::json!({"model": "kokoro", "voice": voice, "input": SDK_TEXT, "response_format": "pcm"});
    let response = client.post(format!("{url}/v1/audio/speech")).json(&body).send().await.unwrap();
    assert_eq!(response.status(), 200, "{voice}");
    response.bytes().await.unwrap().to_vec()
}

#[tokio::test]
async fn openai_s_voice_names_are_distinct_voices_and_the_listing_says_which() {
    let earshot = kokoro_gateway().await;
    let client = reqwest::Client::new();
    let listing: serde_json::Value = client.get(format!("{}/v1/audio/voices", earshot.url)).send().await.unwrap().json().await.unwrap();
    let names = listing["voices"].as_array().expect("Kokoro-FastAPI's list of names");
    let on_kokoro = |name: &str| listing["openai"]["kokoro"][name].as_str().unwrap_or_else(|| panic!("{name} in {listing}")).to_string();
    let (alloy, ash) = (on_kokoro("alloy"), on_kokoro("ash"));
    assert_ne!(alloy, ash, "two of OpenAI's names, two of Kokoro's voices: {listing}");
    for name in ["alloy", "ash", alloy.as_str(), ash.as_str()] {
        assert!(names.iter().any(|n| n == name), "{name} is listed: {listing}");
    }
    assert_eq!(listing["backends"]["kokoro"].as_array().map(Vec::len), Some(5), "the local container's five voices");
    // What speaks is what the listing says: `alloy` is its voice, byte for byte, and `ash` another.
    let said_alloy = spoken(&client, &earshot.url, "alloy").await;
    let said_ash = spoken(&client, &earshot.url, "ash").await;
    assert_eq!(said_alloy, spoken(&client, &earshot.url, &alloy).await, "alloy is {alloy}");
    assert_eq!(said_ash, spoken(&client, &earshot.url, &ash).await, "ash is {ash}");
    assert_ne!(said_alloy, said_ash, "two names, two voices");
    // A blend of the two, in Kokoro-FastAPI's writing, is a third; OpenAI's object form names a voice.
    let blend = spoken(&client, &earshot.url, &format!("{alloy}(2)+{ash}(1)")).await;
    assert!(blend != said_alloy && blend != said_ash && blend.len() > 48_000);
    let body = serde_json::json!({"model": "kokoro", "voice": {"id": ash}, "input": SDK_TEXT, "response_format": "pcm"});
    let by_id = client.post(format!("{}/v1/audio/speech", earshot.url)).json(&body).send().await.unwrap().bytes().await.unwrap();
    assert_eq!(by_id.to_vec(), said_ash);
    // The models a client may ask for: OpenAI's names and this gateway's backend.
    let models: serde_json::Value = client.get(format!("{}/v1/models", earshot.url)).send().await.unwrap().json().await.unwrap();
    let ids: Vec<&str> = models["data"].as_array().unwrap().iter().filter_map(|m| m["id"].as_str()).collect();
    assert_eq!(models["object"], "list");
    assert!(ids.contains(&"tts-1") && ids.contains(&"gpt-4o-mini-tts") && ids.contains(&"kokoro"), "{models}");
}

#[tokio::test]
async fn the_captioned_route_gives_every_written_word_a_time_inside_the_audio_as_kokoro_fastapi_does() {
    use base64::Engine;
    let earshot = kokoro_gateway().await;
    let client = reqwest::Client::new();
    let b64 = |v: &serde_json::Value| base64::engine::general_purpose::STANDARD.decode(v.as_str().unwrap()).unwrap();
    // Streamed (Kokoro-FastAPI's default), on Kokoro-FastAPI's own path: a line an audio chunk or a sentence's words.
    let body = serde_json::json!({"model": "kokoro", "voice": "alloy", "input": SDK_TEXT, "response_format": "mp3"});
    let response = client.post(format!("{}/dev/captioned_speech", earshot.url)).json(&body).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/x-ndjson");
    let text = response.text().await.unwrap();
    let lines: Vec<serde_json::Value> = text.lines().filter(|l| !l.is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.iter().all(|l| l["audio_format"] == "mp3" && l.get("error").is_none()), "{text}");
    let audio: Vec<u8> = lines.iter().flat_map(|l| b64(&l["audio"])).collect();
    let words: Vec<&serde_json::Value> = lines.iter().flat_map(|l| l["timestamps"].as_array().unwrap()).collect();
    let said: Vec<&str> = words.iter().map(|w| w["word"].as_str().unwrap()).collect();
    assert_eq!(said, earshot_core::words::written_words(SDK_TEXT), "every written word, in order");
    let seconds = earshot_audio::mp3::decode(&audio).unwrap().len() as f64 / 24_000.0;
    let (mut last, first) = (0.0, words[0]["start_time"].as_f64().unwrap());
    assert!(first >= 0.044, "after MP3's priming: {first}");
    for w in &words {
        let (start, end) = (w["start_time"].as_f64().unwrap(), w["end_time"].as_f64().unwrap());
        assert!(start >= last - 0.001 && end >= start, "in order: {w}");
        last = end;
    }
    assert!(last <= seconds && last > seconds * 0.8, "the last word ends inside the audio ({last} of {seconds} s)");
    // Whole (`stream: false`) on earshot's path: one object with the same words and the whole audio.
    let body = serde_json::json!({"model": "kokoro", "voice": "alloy", "input": SDK_TEXT, "response_format": "wav", "stream": false});
    let whole: serde_json::Value = client.post(format!("{}/v1/audio/speech/captioned", earshot.url)).json(&body).send().await.unwrap().json().await.unwrap();
    assert_eq!(whole["audio_format"], "wav");
    assert!(b64(&whole["audio"]).starts_with(b"RIFF"));
    assert_eq!(whole["timestamps"].as_array().unwrap().len(), said.len());
}

/// `earshot key …` as a new user runs it: its standard output.
fn earshot_key(file: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new(earshot_e2e::earshot_bin()).arg("key").args(args).arg("--file").arg(file).output().expect("earshot key runs");
    assert!(out.status.success(), "earshot key {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn an_api_key_made_once_serves_openai_s_sdk_until_revoked_within_its_claims() {
    let dir = std::env::temp_dir().join(format!("earshot-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("keys.json");
    let _ = std::fs::remove_file(&file);
    let key = earshot_key(&file, &["create", "--owner", "reader-app"]).trim().to_string();
    let narrow = earshot_key(&file, &["create", "--owner", "kiosk", "--voice", "jm_kumo"]).trim().to_string();
    assert!(key.starts_with("sk-earshot-") && key.len() == 62, "{key}");
    let kept = std::fs::read_to_string(&file).unwrap();
    assert!(!kept.contains(&key[19..]) && !kept.contains(&narrow[19..]), "only digests are kept: {kept}");
    assert!(kept.contains("reader-app") && kept.contains("sha256"));
    let kokoro = Kokoro::shared();
    kokoro.ready().await;
    let keys = "local=0123456789abcdef0123456789abcdef";
    let args =
        ["--backends", "kokoro", "--kokoro-url", &kokoro.url, "--cache", "off", "--auth", "token", "--token-keys", keys, "--api-keys", file.to_str().unwrap()];
    let earshot = EarshotProcess::start(&args).await;
    earshot.healthy().await;
    let script = package_dir().join("openai/with_a_key.py");
    let call = |key: &str, voice: &str| {
        let (script, url, key, voice) = (script.clone(), earshot.url.clone(), key.to_string(), voice.to_string());
        async move {
            let python = package_dir().join("../bench/peer/.venv/bin/python");
            let out = tokio::task::spawn_blocking(move || std::process::Command::new(python).arg(script).arg(url).arg(key).arg(voice).output().unwrap())
                .await
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
        }
    };
    // The SDK with only base_url and api_key speaks.
    let spoken = call(&key, "alloy").await;
    assert!(spoken["bytes"].as_u64().is_some_and(|b| b > 24_000), "{spoken}");
    // A key narrowed to one voice speaks in it (alloy is that voice there) and is refused another.
    let allowed = call(&narrow, "jm_kumo").await;
    assert!(allowed["bytes"].as_u64().is_some(), "{allowed}");
    let refused = call(&narrow, "jf_alpha").await;
    assert_eq!((refused["status"].as_u64(), refused["code"].as_str()), (Some(403), Some("token_out_of_scope")), "{refused}");
    // A key not made here, and one revoked: the SDK's AuthenticationError.
    let forged = format!("{}{}", &key[..key.len() - 4], "AAAA");
    assert_eq!(call(&forged, "alloy").await["code"], "key_unknown");
    let id = &key[11..19];
    earshot_key(&file, &["revoke", id]);
    let revoked = call(&key, "alloy").await;
    assert_eq!(
        (revoked["raised"].as_str(), revoked["status"].as_u64(), revoked["code"].as_str()),
        (Some("AuthenticationError"), Some(401), Some("key_revoked"))
    );
    assert!(earshot_key(&file, &["list"]).contains(&format!("{id}  revoked  owner=reader-app")));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn the_first_sentence_is_heard_before_the_input_is_spoken_whole() {
    let earshot = kokoro_gateway().await;
    let client = reqwest::Client::new();
    // A voice of the backend's own, by its name.
    let voices: serde_json::Value = client.get(format!("{}/v1/voices", earshot.url)).send().await.unwrap().json().await.unwrap();
    let voice = voices["backends"][0]["default_voice"].as_str().expect("Kokoro's default voice").to_string();
    let body = serde_json::json!({"model": "kokoro", "voice": voice, "input": TEXT, "response_format": "pcm"});
    let started = Instant::now();
    let mut response = client.post(format!("{}/v1/audio/speech", earshot.url)).json(&body).send().await.unwrap();
    assert_eq!(response.status(), 200, "{voice}");
    let mut first = None;
    let mut bytes = 0;
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(60), response.chunk()).await.expect("audio keeps coming").unwrap() {
        first.get_or_insert(started.elapsed());
        bytes += chunk.len();
    }
    let (first, whole) = (first.expect("some audio"), started.elapsed());
    // "Sure." is its own sentence: it plays while the rest is still being made.
    assert!(first < whole / 2, "first audio {first:?} of {whole:?}: the input was not streamed sentence by sentence");
    assert!(bytes > 48_000 * 2);
}

#[tokio::test]
async fn livekit_s_openai_voice_speaks_through_earshot_in_its_default_settings() {
    let earshot = kokoro_gateway().await;
    let python = package_dir().join("../clients/livekit/.venv/bin/python");
    assert!(python.exists(), "LiveKit Agents is installed in its own venv: make livekit-venv");
    let (script, url) = (package_dir().join("../clients/livekit/checks/openai_tts.py"), earshot.url.clone());
    let output = tokio::task::spawn_blocking(move || std::process::Command::new(python).arg(script).arg(url).arg(SDK_TEXT).output().unwrap()).await.unwrap();
    assert!(output.status.success(), "LiveKit's check failed: {}", String::from_utf8_lossy(&output.stderr));
    let out: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    // Its defaults: gpt-4o-mini-tts (so SSE), the voice `ash`, mp3 decoded by LiveKit into 24 kHz frames.
    assert_eq!(out["rates"], serde_json::json!([24_000]), "{out}");
    assert!(out["frames"].as_u64().unwrap() > 2 && out["rms"].as_f64().unwrap() > 0.02, "speech in many frames: {out}");
    // The same text in the same voice as raw PCM: LiveKit heard all of it (MP3 adds its priming and a
    // little silence a sentence).
    let pcm = spoken(&reqwest::Client::new(), &earshot.url, "ash").await;
    let (heard, said) = (out["seconds"].as_f64().unwrap(), pcm.len() as f64 / 48_000.0);
    assert!(heard >= said && heard <= said + 0.25, "LiveKit heard {heard} s of {said} s: {out}");
    // The gateway counted it as OpenAI's route, with the text LiveKit sent.
    let lines = earshot.metric_lines_at_least(2).await;
    // Its sentences' characters: the text less the space between them.
    let chars = SDK_TEXT.chars().count() - 1;
    let line =
        lines.iter().find(|l| l["Api"] == "openai_speech" && l["WrittenCharacters"] == chars && l["Sentences"] == 2).unwrap_or_else(|| panic!("{lines:?}"));
    assert_eq!(line["Ending"], "completed", "{line}");
}

#[tokio::test]
async fn pipecat_s_openai_voice_speaks_through_earshot_with_only_its_base_url_changed() {
    let earshot = kokoro_gateway().await;
    let out = python_check(package_dir().join("../clients/pipecat/checks/openai_voice.py"), earshot.url.clone()).await;
    assert_eq!(out["errors"], serde_json::json!([]), "{out}");
    assert_eq!(out["rates"], serde_json::json!([24_000]), "OpenAI's pcm is 24 kHz, and so is earshot's answer to it");
    // Every sentence pipecat asked for was spoken: seconds of audio in many frames, not one buffer at the end.
    assert!(out["requested"].as_array().is_some_and(|r| r.len() >= 2), "{out}");
    assert_eq!(out["words"], out["requested"], "pipecat tells each sentence it spoke as one word");
    assert!(out["bytes"].as_u64().unwrap() > 48_000 * 2 && out["frames"].as_u64().unwrap() > 2, "{out}");
}
