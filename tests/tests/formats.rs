//! Audio in the format the client plays: every `output_format` through the gateway and the real Kokoro
//! container, decoded by an outside decoder (Python's standard library; `opusdec`, `mpg123`, `faad` and
//! `flac` for the compressed formats: `tests/outside/decode_audio.py`)
//! and held to the native answer (the backend's own PCM for the same text): the same length, the same
//! loudness, the same sound, and no seam where one chunk meets the next.

use std::sync::Arc;

use earshot_client::{speak, CallOptions, ClientError, Received, SpeakBody};
use earshot_core::output::OutputFormat;
use earshot_core::protocol::{Delivery, ServerEvent};
use earshot_e2e::{agent, check_conversation, kokoro_backend, serve, Kokoro};
use earshot_gateway::{Gateway, GatewaySettings};
use serde_json::{json, Value};

const ANSWER: &str = "Your order left our warehouse in Portland this morning, and it should reach you on Tuesday before noon. \
                      The courier will send a text about an hour before they arrive at your door.";

async fn gateway() -> String {
    let backend = kokoro_backend(Kokoro::shared()).await;
    let mut settings = GatewaySettings { metrics_namespace: None, ..Default::default() };
    settings.scheduler.backend_silence = Some(earshot_e2e::untested_silence().await);
    // The sentence cache stays on: after the native answer every format is made from the same PCM.
    serve(Gateway::new(vec![backend], Arc::new(agent(200.0)), settings)).await.url
}

/// Each sentence's sample range, and the samples where one audio chunk meets the next inside a sentence
/// (by the milliseconds of audio the client counted in each chunk: its bytes, or an Ogg page's granule).
fn layout(r: &Received) -> (Vec<[usize; 2]>, Vec<usize>) {
    let rate = r.format().expect("a session").sample_rate as f64;
    let (mut sentences, mut boundaries, mut ms) = (Vec::<[usize; 2]>::new(), Vec::new(), 0.0);
    let chunks = r.events.iter().filter_map(|e| match e {
        ServerEvent::Audio(chunk) => Some(chunk),
        _ => None,
    });
    for (chunk, chunk_ms) in chunks.zip(&r.marks.audio_chunk_ms) {
        let at = (ms * rate / 1000.0).round() as usize;
        if chunk.seq == 0 {
            sentences.push([at, at]);
        } else {
            boundaries.push(at);
        }
        ms += chunk_ms;
        sentences.last_mut().expect("a sentence's first chunk has seq 0")[1] = (ms * rate / 1000.0).round() as usize;
    }
    (sentences, boundaries)
}

/// What the outside decoder makes of `answer`, against `native`.
fn judged(native: &Received, answer: &Received, name: &str) -> Value {
    let dir = std::env::temp_dir();
    let pid = std::process::id();
    let (native_path, answer_path) = (dir.join(format!("earshot-formats-{pid}-native.raw")), dir.join(format!("earshot-formats-{pid}-{name}.raw")));
    std::fs::write(&native_path, &native.audio).unwrap();
    std::fs::write(&answer_path, &answer.audio).unwrap();
    let (native_sentences, _) = layout(native);
    let (sentences, boundaries) = layout(answer);
    let format = answer.format().unwrap();
    let request = json!({
        "native": {"path": native_path, "rate": native.format().unwrap().sample_rate},
        "answer": {"path": answer_path, "rate": format.sample_rate, "encoding": format.encoding, "sentences": sentences, "boundaries": boundaries},
        "native_sentences": native_sentences,
    });
    let python = earshot_e2e::package_dir().join("../infra/kokoro/.venv/bin/python");
    let script = earshot_e2e::package_dir().join("outside/decode_audio.py");
    let mut child = std::process::Command::new(python)
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the outside decoder runs");
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), request.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the outside decoder failed on {name}");
    serde_json::from_slice(&out.stdout).expect("JSON from the outside decoder")
}

#[tokio::test]
async fn every_output_format_decodes_outside_to_the_native_answer() {
    let url = gateway().await;
    let native = speak(&url, &SpeakBody { text: Some(ANSWER.into()), ..Default::default() }, &CallOptions::default()).await.expect("spoken");
    let sentences = check_conversation(&native);
    assert_eq!(native.format().unwrap().sample_rate, 24_000, "Kokoro's own PCM when no format is asked");
    for (i, format) in OutputFormat::all().into_iter().enumerate() {
        let name = format.to_string();
        let delivery = if i % 2 == 0 { Delivery::Sse } else { Delivery::Binary };
        let body = SpeakBody { text: Some(ANSWER.into()), output_format: Some(name.clone()), ..Default::default() };
        let r = speak(&url, &body, &CallOptions { delivery, ..Default::default() }).await.expect("spoken");
        assert_eq!(check_conversation(&r), sentences, "{name}");
        assert_eq!(r.format(), Some(&format.audio_format()), "the session says {name}");
        let (_, boundaries) = layout(&r);
        // AAC is coded a sentence at a time (earshot_audio::aac): its seams are the sentences' own joins.
        let whole_sentences = format == OutputFormat::Aac;
        assert!(whole_sentences || !boundaries.is_empty(), "{name}: the sentences came in several chunks, so their seams are judged");
        let j = judged(&native, &r, &name);
        eprintln!("{name}: {j}");
        let f = |k: &str| j[k].as_f64().unwrap_or_else(|| panic!("{k} in {j}"));
        // A compressed format ends each sentence through its codec's delay, with a little silence (Opus at
        // most 9 ms a sentence, MP3 68, AAC 86, FLAC none: earshot_audio::coded::most_silence_added_ms).
        // A lossy codec keeps the sound, not each sample: Opus, MP3 and AAC are held to the native answer's
        // loudness from frame to frame (about 0.96 for Opus here) rather than to its waveform.
        let longer_by = 1.0 + earshot_audio::coded::most_silence_added_ms(&format.audio_format().encoding) * sentences.len() as f64;
        let sound = match format {
            OutputFormat::Opus48000 | OutputFormat::Mp3 | OutputFormat::Aac => "envelope_correlation",
            _ => "correlation",
        };
        let extra = f("duration_ms") - f("native_duration_ms");
        assert!(extra >= -1.0 && extra <= longer_by, "{name}: the native answer's length (+{longer_by} ms at most): {j}");
        let level_db = 20.0 * (f("rms") / f("native_rms")).log10();
        assert!(level_db.abs() <= 1.0, "{name}: the same loudness within 1 dB ({level_db:.2} dB): {j}");
        assert!(f(sound) >= 0.9 && f("envelope_correlation") >= 0.9, "{name}: the native answer's sound, sentence by sentence: {j}");
        // The native answer's own joins (Kokoro's pieces, each rendered apart) score about 1.1; a click or
        // a lost filter state at a chunk boundary stands many times over its neighbours.
        assert!(f("seam") <= 3.0, "{name}: no chunk boundary stands out from the samples around it: {j}");
    }
}

#[tokio::test]
async fn an_unknown_output_format_is_refused_naming_the_accepted_ones() {
    let url = gateway().await;
    let body = SpeakBody { text: Some("Hello.".into()), output_format: Some("mp3_44100".into()), ..Default::default() };
    match speak(&url, &body, &CallOptions::default()).await {
        Err(ClientError::Refused { status, code, message }) => {
            assert_eq!((status, code.as_str()), (400, "invalid_output_format"));
            assert!(message.contains("`mp3_44100`") && message.contains("pcm_8000") && message.contains("mp3_24000"), "{message}");
        }
        other => panic!("expected a 400, got {other:?}"),
    }
}
