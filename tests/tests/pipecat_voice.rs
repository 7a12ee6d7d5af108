//! earshot's pipecat voice (`clients/pipecat`, `EarshotTTSService`) in a real pipecat pipeline (the release
//! the peer benchmark pins, in its venv) against `earshot serve` with the local Kokoro container: the audio
//! frames at the pipeline's rate, the words pipecat emits from Kokoro's own timings, and, when the user
//! speaks over the answer, earshot's interrupt sent with what had played and what was heard coming back.

use earshot_e2e::{package_dir, EarshotProcess, Kokoro};

#[tokio::test]
async fn earshot_s_pipecat_voice_speaks_times_words_and_hears_an_interruption() {
    let python = package_dir().join("../bench/peer/.venv/bin/python");
    assert!(python.exists(), "pipecat is installed with the peer benchmark's venv: make peer-venv");
    let kokoro = Kokoro::shared();
    kokoro.ready().await;
    let earshot = EarshotProcess::start(&["--backends", "kokoro", "--kokoro-url", &kokoro.url, "--cache", "off"]).await;
    earshot.healthy().await;
    let (url, client) = (earshot.url.clone(), package_dir().join("../clients/pipecat"));
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python).arg(client.join("checks/pipeline.py")).arg(url).env("PYTHONPATH", &client).output().expect("python runs")
    })
    .await
    .unwrap();
    assert!(output.status.success(), "the pipeline failed: {}", String::from_utf8_lossy(&output.stderr));
    let out: serde_json::Value = serde_json::from_slice(&output.stdout).expect("the check's JSON");

    let whole = &out["whole"];
    assert_eq!(whole["errors"], serde_json::json!([]), "{out}");
    assert_eq!(whole["rates"], serde_json::json!([24_000]));
    assert!(whole["bytes"].as_u64().unwrap() > 48_000 && whole["frames"].as_u64().unwrap() >= 2, "{out}");
    // Kokoro's own timings reach pipecat's word path: every written word, in order.
    let words: Vec<&str> = whole["words"].as_array().unwrap().iter().filter_map(|w| w.as_str()).collect();
    for word in ["Sure", "Your", "order", "shipped", "this", "morning"] {
        assert!(words.contains(&word), "{word} is not among pipecat's words {words:?}");
    }
    // Only the words: pipecat does not add each sentence's whole text after them (its context would hold
    // the answer twice).
    assert!(words.iter().all(|w| !w.trim().contains(' ')), "a sentence among pipecat's words {words:?}");

    // Spoken over 1.6 s into the answer's audio: what had played, cut at whole words (the
    // voice runs ahead of real time, so earlier sentences may be finished at earshot and cut here by their
    // words, and the live one cut by earshot's interrupt).
    let interrupted = &out["interrupted"];
    let heard = interrupted["heard"].as_str().unwrap();
    let heard_ms = interrupted["heard_ms"].as_f64().unwrap();
    assert!(heard_ms > 1_000.0 && heard_ms <= interrupted["played_s"].as_f64().unwrap() * 1000.0 + 100.0, "{out}");
    assert!(!heard.is_empty() && "Returning a jacket is easy. Bring it to any of our stores".starts_with(heard), "heard {heard:?}: {out}");
    assert!(interrupted["heard_after_s"].as_f64().unwrap() < 5.0, "{out}");
    // At 32 kHz (not a rate earshot makes), after a settings update naming a voice: that voice speaks, in
    // frames at the pipeline's rate, as long as the 24 kHz answer (pipecat's resampler converted it).
    let updated = &out["updated"];
    assert_eq!(updated["errors"], serde_json::json!([]), "{out}");
    assert_eq!((updated["rates"].clone(), updated["voice"].as_str()), (serde_json::json!([32_000]), Some("jm_kumo")), "{out}");
    let seconds = |part: &serde_json::Value, rate: f64| part["bytes"].as_f64().unwrap() / 2.0 / rate;
    assert!(seconds(updated, 32_000.0) > 1.0, "{out}");
    // The conversation ended as interrupted at the gateway, not as a client that left.
    let lines = earshot.metric_lines_at_least(2).await;
    assert!(lines.iter().any(|l| l["Ending"] == "interrupted"), "{lines:?}");
}
