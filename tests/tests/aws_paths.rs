//! The production code paths for SageMaker, Polly and Bedrock, with the real AWS SDK clients, against
//! the local stand-ins (HTTP/2 over TLS, event streams, SigV4), voiced by the real Kokoro container.

use std::sync::Arc;
use std::time::Duration;

use earshot_aws::{AwsSettings, BedrockAgent, BedrockSettings, PollyBackend, PollySettings, SageMakerBackend, SageMakerSettings};
use earshot_backends::{SyntheticBackend, SyntheticConfig};
use earshot_client::{interrupt, speak, CallOptions, ClientError, Received};
use earshot_core::agent::AgentSource;
use earshot_core::protocol::ServerEvent;
use earshot_core::speech::SpeechBackend;
use earshot_e2e::{agent, check_conversation, prompt, serve, text, Kokoro};
use earshot_gateway::{Gateway, GatewaySettings, Routing};
use earshot_standins::server::Stats;
use earshot_standins::{PollyDelivery, StandIns, StandInsConfig};

async fn standins(config: StandInsConfig) -> StandIns {
    let kokoro = Kokoro::shared();
    kokoro.ready().await;
    earshot_standins::start(StandInsConfig { kokoro_url: kokoro.url.clone(), ..config }, 0).await.expect("the stand-ins start")
}

async fn sdk(standins: &StandIns) -> earshot_aws::SdkConfig {
    earshot_e2e::run_aws::sdk_for(standins).await
}

fn sagemaker_settings(endpoint: &str, variant: Option<&str>) -> SageMakerSettings {
    SageMakerSettings {
        endpoint_name: endpoint.into(),
        target_variant: variant.map(str::to_string),
        voices: vec!["jf_alpha".into(), "jm_kumo".into()],
        default_voice: "jf_alpha".into(),
        language_voices: vec![],
        speed: 1.0,
    }
}

fn sagemaker(config: &earshot_aws::SdkConfig, endpoint: &str, variant: Option<&str>) -> Arc<dyn SpeechBackend> {
    Arc::new(SageMakerBackend::new(config, sagemaker_settings(endpoint, variant)))
}

/// Polly through its stand-in, whose audio is the shared container's: its wait for a sentence's first
/// audio is not what these tests are about, so it leaves room for that container's queue.
async fn polly(config: &earshot_aws::SdkConfig, settings: PollySettings) -> Arc<dyn SpeechBackend> {
    let settings = PollySettings { first_audio_timeout: Some(earshot_e2e::untested_silence().await), ..settings };
    Arc::new(PollyBackend::new(config, settings).expect("a Polly backend"))
}

async fn gateway(backends: Vec<Arc<dyn SpeechBackend>>, agent: Arc<dyn AgentSource>, routing: Routing) -> String {
    let mut settings = GatewaySettings { metrics_namespace: None, routing, ..Default::default() };
    settings.scheduler.backend_silence = Some(earshot_e2e::untested_silence().await);
    let gw = Gateway::new(backends, agent, settings);
    serve(gw).await.url
}

#[tokio::test]
async fn kokoro_on_sagemaker_speaks_through_the_bidirectional_stream() {
    let s = standins(StandInsConfig::default()).await;
    let config = sdk(&s).await;
    let url = gateway(vec![sagemaker(&config, "earshot-kokoro", Some("blue"))], Arc::new(agent(200.0)), Routing::default()).await;
    let r = speak(&url, &text("Hello there. How are you today?"), &CallOptions::default()).await.unwrap();
    let sentences = check_conversation(&r);
    assert_eq!(sentences, vec!["Hello there.", "How are you today?"]);
    assert_eq!(r.format().unwrap().sample_rate, 24_000);
    assert_eq!(Stats::get(&s.stats.sagemaker_streams), 1, "one bidirectional stream carried every sentence");
    assert_eq!(s.stats.last_target_variant.lock().unwrap().as_deref(), Some("blue"), "target_variant is passed through");
}

#[tokio::test]
async fn response_parts_without_a_data_type_are_told_apart_by_their_content() {
    // SageMaker's API reference makes `PayloadPart.DataType` optional: a stream whose parts carry none
    // must still finish every sentence (its `end` messages are not audio).
    let s = standins(StandInsConfig::default()).await;
    let config = sdk(&s).await;
    let url = gateway(vec![sagemaker(&config, "untagged-kokoro", None)], Arc::new(agent(200.0)), Routing::default()).await;
    let r = tokio::time::timeout(std::time::Duration::from_secs(60), speak(&url, &text("Hello there. How are you today?"), &CallOptions::default()))
        .await
        .expect("the conversation finishes")
        .unwrap();
    assert_eq!(check_conversation(&r), vec!["Hello there.", "How are you today?"]);
    assert!(r.error.is_none(), "{:?}", r.error);
}

#[tokio::test]
async fn messages_cut_into_parts_and_all_marked_binary_give_the_same_answer() {
    // SageMaker documents a response part as possibly PARTIAL, and its DataType as optional; AWS's bridge
    // samples send text as bytes. Through a stream that does both, the answer is the one a whole-message
    // stream gives, byte for byte (two short sentences: one piece each, so the container's pacing cuts
    // nothing differently).
    let s = standins(StandInsConfig::default()).await;
    let config = sdk(&s).await;
    let said = "Hello there. How are you today?";
    let mut answers = Vec::new();
    for endpoint in ["earshot-kokoro", "parted-kokoro"] {
        let url = gateway(vec![sagemaker(&config, endpoint, None)], Arc::new(agent(200.0)), Routing::default()).await;
        let r =
            tokio::time::timeout(Duration::from_secs(60), speak(&url, &text(said), &CallOptions::default())).await.expect("the conversation finishes").unwrap();
        assert!(r.error.is_none(), "{endpoint}: {:?}", r.error);
        assert_eq!(check_conversation(&r), vec!["Hello there.", "How are you today?"], "{endpoint}");
        answers.push(r.audio);
    }
    assert!(answers[0].len() > 24_000, "{} bytes", answers[0].len());
    assert!(answers[0] == answers[1], "the parted stream's audio differs: {} against {} bytes", answers[1].len(), answers[0].len());
}

#[tokio::test]
async fn a_draining_container_finishes_its_sentences_and_the_rest_go_on_a_new_stream() {
    // SageMaker stops a container with SIGTERM; the container says `draining` and serves what it has. The
    // stand-in's `draining-` endpoint says it after the first audio of every stream: the answer goes on,
    // sentence by sentence, every one said once, none on the stopping stream after it spoke, and no silence
    // inside a sentence.
    let s = standins(StandInsConfig::default()).await;
    let config = sdk(&s).await;
    let url = gateway(vec![sagemaker(&config, "draining-kokoro", None)], Arc::new(agent(200.0)), Routing::default()).await;
    // The agent pauses two seconds after its first sentence: what it says after comes once the container has
    // said it is stopping.
    let r = tokio::time::timeout(Duration::from_secs(90), speak(&url, &prompt("pause"), &CallOptions::default()))
        .await
        .expect("the conversation finishes")
        .unwrap();
    let sentences = check_conversation(&r);
    assert_eq!(sentences[0], "Let me check that for you.");
    assert!(sentences.len() >= 3, "{sentences:?}");
    let timeline = r.timeline.as_ref().unwrap();
    let stalls: u32 = timeline.sentences.iter().map(|s| s.stalls).sum();
    assert_eq!(stalls, 0, "no silence inside a sentence: {:?}", timeline.sentences.iter().map(|s| s.stall_ms).collect::<Vec<_>>());
    assert_eq!(Stats::get(&s.stats.sagemaker_after_draining), 0, "nothing was sent to a container after it said it was stopping");
    assert!(Stats::get(&s.stats.sagemaker_streams) >= 2, "the session moved to a new stream");
    let texts: Vec<String> = s.stats.sagemaker_synthesize.lock().unwrap().iter().map(|m| m["text"].as_str().unwrap_or_default().to_string()).collect();
    assert_eq!(texts, sentences, "each sentence sent once, in order");
}

#[tokio::test]
async fn sagemaker_stream_errors_reach_the_client() {
    let s = standins(StandInsConfig::default()).await;
    let config = sdk(&s).await;
    for (endpoint, code) in [("fail-model-stream", "model_stream_error"), ("fail-internal-stream", "internal_stream_failure")] {
        let url = gateway(vec![sagemaker(&config, endpoint, None)], Arc::new(agent(200.0)), Routing::default()).await;
        let r = speak(&url, &text("Hello there."), &CallOptions::default()).await.unwrap();
        let error = r.error.unwrap_or_else(|| panic!("{endpoint}: an error message"));
        assert_eq!(error.code, code);
        assert!(error.retryable);
        assert!(matches!(r.events.last(), Some(ServerEvent::Error(_))));
    }
    let url = gateway(vec![sagemaker(&config, "missing", None)], Arc::new(agent(200.0)), Routing::default()).await;
    match speak(&url, &text("Hello."), &CallOptions::default()).await {
        Err(ClientError::Refused { status, code, .. }) => assert_eq!((status, code.as_str()), (502, "validation_error")),
        other => panic!("a missing endpoint is refused before streaming, got {other:?}"),
    }
}

#[tokio::test]
async fn polly_speaks_at_16_khz_and_reports_billed_characters() {
    let s = standins(StandInsConfig::default()).await;
    let config = sdk(&s).await;
    let url = gateway(vec![polly(&config, PollySettings::default()).await], Arc::new(agent(200.0)), Routing::default()).await;
    let said = "Hello there. How are you today?";
    let r = speak(&url, &text(said), &CallOptions::default()).await.unwrap();
    let sentences = check_conversation(&r);
    assert_eq!(sentences.len(), 2);
    let session = r.session.as_ref().unwrap();
    assert_eq!((session.backend.as_str(), session.voice.as_str(), session.audio.sample_rate), ("polly", "ruth", 16_000));
    let billed = r.timeline.as_ref().unwrap().billed_characters.expect("billed characters");
    // Every character sent is billed, the spare stream's keep-alive white space included.
    let keep_alives = Stats::get(&s.stats.polly_keep_alives) as usize;
    assert_eq!(billed as usize, sentences.iter().map(|s| s.chars().count()).sum::<usize>() + keep_alives);
    // One request per sentence, and at most one spare opened ahead that voiced nothing.
    let streams = Stats::get(&s.stats.polly_streams) as usize;
    assert!((sentences.len()..=sentences.len() + 1).contains(&streams), "{streams} Polly streams for {} sentences", sentences.len());
}

/// The audio the client got for each sentence, by the sentence's text; every message whole samples.
fn audio_by_sentence(r: &Received) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    for event in &r.events {
        match event {
            ServerEvent::Sentence(s) => out.push((s.text.clone(), Vec::new())),
            ServerEvent::Audio(a) => {
                assert_eq!(a.pcm.len() % 2, 0, "an audio message of {} bytes: not whole samples", a.pcm.len());
                out[a.index as usize].1.extend_from_slice(&a.pcm);
            }
            _ => {}
        }
    }
    out
}

#[tokio::test]
async fn every_byte_polly_sends_reaches_its_own_sentence_however_it_is_delivered() {
    // Polly's audio never says which text it voices, and Polly promises no pacing: the client's
    // bytes for each sentence must be exactly the bytes the stand-in sent for that sentence's text.
    let deliveries = [
        ("a 700 ms silence inside each sentence", PollyDelivery { stall: Some(Duration::from_millis(700)), ..Default::default() }),
        ("odd-length pieces", PollyDelivery { odd_chunks: true, ..Default::default() }),
        ("each sentence's audio in one late burst, in odd pieces", PollyDelivery { burst: true, odd_chunks: true, ..Default::default() }),
    ];
    for (how, delivery) in deliveries {
        let s = standins(StandInsConfig { polly_delivery: delivery, ..Default::default() }).await;
        let config = sdk(&s).await;
        let url = gateway(vec![polly(&config, PollySettings::default()).await], Arc::new(agent(200.0)), Routing::default()).await;
        let r = speak(&url, &text("Hello there. How are you today? The order shipped this morning."), &CallOptions::default()).await.unwrap();
        assert_eq!(check_conversation(&r).len(), 3, "{how}");
        let spoken = s.stats.polly_spoken.lock().unwrap().clone();
        for (sentence, audio) in audio_by_sentence(&r) {
            let sent = spoken.iter().find(|u| u.text == sentence).unwrap_or_else(|| panic!("{how}: the stand-in never voiced {sentence:?}"));
            assert!(!audio.is_empty(), "{how}: {sentence:?} has no audio");
            assert!(audio == sent.audio, "{how}: {sentence:?}: the client got {} bytes, the stand-in sent {}", audio.len(), sent.audio.len());
        }
    }
}

#[tokio::test]
async fn a_polly_stream_survives_a_long_agent_pause() {
    // A signalled 7-second pause, then 8 s of silence in the middle of a sentence, against Polly's
    // 5-second idle timeout.
    let s = standins(StandInsConfig::default()).await;
    let config = sdk(&s).await;
    let scripted =
        agent(100.0).with_script("tool", "Let me look that up.{pause:7000} It shipped this morning, and the courier{wait:8000} brings it on Friday.");
    let url = gateway(vec![polly(&config, PollySettings::default()).await], Arc::new(scripted), Routing::default()).await;
    let r = speak(&url, &prompt("tool"), &CallOptions::default()).await.unwrap();
    assert_eq!(check_conversation(&r).len(), 2);
    assert!(Stats::get(&s.stats.polly_keep_alives) >= 4, "keep-alives were sent during both silences");
    assert_eq!(Stats::get(&s.stats.polly_idle_closes), 0);

    // Without keep-alives Polly closes the waiting stream, as the stand-in does; the next sentence
    // opens another and the listener hears nothing of it.
    let strict = standins(StandInsConfig { polly_idle_timeout: Duration::from_millis(1500), ..Default::default() }).await;
    let config = sdk(&strict).await;
    let no_keep_alive = PollySettings { keep_alive: Duration::from_secs(60), ..Default::default() };
    let scripted = agent(100.0).with_script("tool", "Let me look that up.{pause:4000} It shipped this morning.");
    let url = gateway(vec![polly(&config, no_keep_alive).await], Arc::new(scripted), Routing::default()).await;
    let r = speak(&url, &prompt("tool"), &CallOptions::default()).await.unwrap();
    assert!(Stats::get(&strict.stats.polly_idle_closes) >= 1);
    assert_eq!(check_conversation(&r).len(), 2);
}

#[tokio::test]
async fn a_conversation_outlives_pollys_stream_time_limit() {
    // Polly ends a stream after 10 minutes; here the stand-in ends one after 5 s, and the backend
    // replaces its waiting stream after 2 s. The agent thinks for 7 s before its first sentence. A stream
    // taken for a sentence is then at most 2 s old and has 3 s left to voice it: enough on a busy 2-core
    // machine (with 2 s and 1 s, a sentence queued behind another in the one container could meet the
    // limit before its audio, and the test failed now and then for that reason alone). On a slower
    // machine the time to voice it grows with the model's measured speed, and the limit and the agent's
    // wait with it, so that the first stream would still meet the limit had it not been replaced.
    let max_stream_age = Duration::from_secs(2);
    let to_voice = Kokoro::shared().speed().await.scaled(Duration::from_secs(3));
    let polly_max_duration = max_stream_age + to_voice;
    let wait = polly_max_duration + Duration::from_secs(2);
    let s = standins(StandInsConfig { polly_max_duration, ..Default::default() }).await;
    let config = sdk(&s).await;
    let settings = PollySettings { max_stream_age, ..Default::default() };
    let scripted = agent(100.0).with_script("slow", &format!("{{wait:{}}}Here is the answer. It shipped.", wait.as_millis()));
    let url = gateway(vec![polly(&config, settings).await], Arc::new(scripted), Routing::default()).await;
    let r = speak(&url, &prompt("slow"), &CallOptions::default()).await.unwrap();
    assert_eq!(check_conversation(&r).len(), 2);
    assert_eq!(Stats::get(&s.stats.polly_max_duration_closes), 0, "no stream was left to reach the limit");
    assert!(Stats::get(&s.stats.polly_streams) >= 5, "the waiting stream was replaced: {} streams", Stats::get(&s.stats.polly_streams));
}

#[tokio::test]
async fn polly_exceptions_reach_the_client_with_their_retry_flag() {
    let s = standins(StandInsConfig::default()).await;
    let config = sdk(&s).await;
    let url = gateway(vec![polly(&config, PollySettings::default()).await], Arc::new(agent(500.0)), Routing::default()).await;
    for (exception, code, retryable) in [
        ("ValidationException", "polly_validation", false),
        ("ThrottlingException", "polly_throttled", true),
        ("ServiceQuotaExceededException", "polly_quota_exceeded", true),
        ("ServiceFailureException", "polly_service_failure", true),
    ] {
        let r = speak(&url, &text(&format!("Please say [[{exception}]] now.")), &CallOptions::default()).await.unwrap();
        let error = r.error.unwrap_or_else(|| panic!("{exception}: an error message"));
        assert_eq!((error.code.as_str(), error.retryable), (code, retryable), "{exception}");
    }

    // Throttled before any audio, with another arm: the conversation moves there, every sentence spoken.
    let routing = Routing { weights: vec![("polly".into(), 100)], failover: true, ..Default::default() };
    let other: Arc<dyn SpeechBackend> = Arc::new(SyntheticBackend::new(SyntheticConfig::default()));
    let url = gateway(vec![polly(&config, PollySettings::default()).await, other], Arc::new(agent(500.0)), routing).await;
    let r = speak(&url, &text("Please say [[ThrottlingException]] now. And then more."), &CallOptions::default()).await.unwrap();
    assert_eq!(check_conversation(&r).len(), 2);
    let last_session = r.events.iter().rev().find_map(|e| if let ServerEvent::Session(s) = e { Some(s.clone()) } else { None }).unwrap();
    assert_eq!((last_session.backend.as_str(), last_session.backend_reason.as_str()), ("synthetic", "failover"));
}

#[tokio::test]
async fn a_bedrock_agent_answers_through_converse_stream() {
    let s = standins(StandInsConfig { tokens_per_second: 300.0, ..Default::default() }).await;
    let config = sdk(&s).await;
    let voice: Arc<dyn SpeechBackend> =
        Arc::new(SyntheticBackend::new(SyntheticConfig { first_audio: Duration::from_millis(5), chars_per_second: 2000.0, ..Default::default() }));
    let bedrock = Arc::new(BedrockAgent::new(&config, BedrockSettings { model_id: "test-model".into(), ..Default::default() }));
    let url = gateway(vec![voice], bedrock, Routing::default()).await;

    let r = speak(&url, &prompt("brief"), &CallOptions::default()).await.unwrap();
    assert!(r.error.is_none(), "{:?}", r.error);
    let spoken: Vec<String> = r.events.iter().filter_map(|e| if let ServerEvent::Sentence(s) = e { Some(s.text.clone()) } else { None }).collect();
    assert_eq!(spoken.first().map(String::as_str), Some("Sure."));
    assert_eq!(spoken.len(), 4);
    assert_eq!(Stats::get(&s.stats.bedrock_calls), 1);

    match speak(&url, &prompt("[[ThrottlingException]]"), &CallOptions::default()).await {
        Err(ClientError::Refused { status, code, .. }) => assert_eq!((status, code.as_str()), (502, "agent_throttled")),
        other => panic!("throttling is refused before the stream, got {other:?}"),
    }
    let mid = speak(&url, &prompt("brief [[ModelStreamErrorException]]"), &CallOptions::default()).await.unwrap();
    assert_eq!(mid.error.expect("an error").code, "agent_stream_error");
    let filtered = speak(&url, &prompt("brief [[filtered]]"), &CallOptions::default()).await.unwrap();
    assert_eq!(filtered.error.expect("an error").code, "agent_content_filtered");
}

#[tokio::test]
async fn failover_hands_a_failing_arm_to_the_other_before_any_audio() {
    let s = standins(StandInsConfig::default()).await;
    let config = sdk(&s).await;
    // An endpoint that cannot be found fails at once, before any audio: the conversation fails over.
    let routing = Routing { weights: vec![("kokoro".into(), 100)], failover: true, ..Default::default() };
    let url = gateway(vec![sagemaker(&config, "missing", None), polly(&config, PollySettings::default()).await], Arc::new(agent(200.0)), routing.clone()).await;
    let r = speak(&url, &text("Hello there."), &CallOptions::default()).await.unwrap();
    check_conversation(&r);
    assert_eq!(r.header("x-earshot-backend"), Some("polly"));
    assert_eq!(r.header("x-earshot-backend-reason"), Some("failover"));

    // A stream that fails before any audio hands its sentences to the other backend mid-conversation:
    // a second `session` message announces it, and every sentence is still spoken once.
    let url =
        gateway(vec![sagemaker(&config, "fail-before-audio", None), polly(&config, PollySettings::default()).await], Arc::new(agent(200.0)), routing.clone())
            .await;
    let r = speak(&url, &text("Hello there. How are you?"), &CallOptions::default()).await.unwrap();
    let sessions: Vec<&earshot_core::protocol::SessionInfo> =
        r.events.iter().filter_map(|e| if let ServerEvent::Session(s) = e { Some(s) } else { None }).collect();
    assert_eq!(sessions.len(), 2, "a second session message after the failover");
    assert_eq!((sessions[0].backend.as_str(), sessions[1].backend.as_str(), sessions[1].backend_reason.as_str()), ("kokoro", "polly", "failover"));
    assert_eq!(sessions[1].audio.sample_rate, 16_000);
    let first_audio = r.events.iter().position(|e| matches!(e, ServerEvent::Audio(_))).unwrap();
    let second_session = r.events.iter().rposition(|e| matches!(e, ServerEvent::Session(_))).unwrap();
    assert!(second_session < first_audio, "the new session is announced before any audio");
    let sentences = check_conversation(&r);
    assert_eq!(sentences, vec!["Hello there.", "How are you?"]);
    assert_eq!(r.timeline.as_ref().unwrap().failover_from.as_deref(), Some("model_stream_error"));

    // A failure after audio has been sent is reported, not hidden by a failover.
    let url =
        gateway(vec![sagemaker(&config, "fail-model-stream", None), polly(&config, PollySettings::default()).await], Arc::new(agent(200.0)), routing).await;
    let r = speak(&url, &text("Hello there."), &CallOptions::default()).await.unwrap();
    assert_eq!(r.header("x-earshot-backend"), Some("kokoro"));
    let first_audio = r.events.iter().position(|e| matches!(e, ServerEvent::Audio(_))).expect("audio before the failure");
    let error = r.events.iter().position(|e| matches!(e, ServerEvent::Error(_))).expect("the failure is reported");
    assert!(first_audio < error);
    assert_eq!(r.error.expect("an error").code, "model_stream_error");
    let sessions = r.events.iter().filter(|e| matches!(e, ServerEvent::Session(_))).count();
    assert_eq!(sessions, 1, "no failover after audio");
}

#[tokio::test]
async fn a_failover_keeps_the_clients_format_and_polly_is_asked_for_8_khz_for_telephony() {
    let s = standins(StandInsConfig::default()).await;
    let config = sdk(&s).await;
    let routing = Routing { weights: vec![("kokoro".into(), 100)], failover: true, ..Default::default() };
    let url =
        gateway(vec![sagemaker(&config, "fail-before-audio", None), polly(&config, PollySettings::default()).await], Arc::new(agent(200.0)), routing).await;
    let body = earshot_client::SpeakBody { text: Some("Hello there. How are you?".into()), output_format: Some("pcm_24000".into()), ..Default::default() };
    let r = speak(&url, &body, &CallOptions::default()).await.unwrap();
    let sessions: Vec<&earshot_core::protocol::SessionInfo> =
        r.events.iter().filter_map(|e| if let ServerEvent::Session(s) = e { Some(s) } else { None }).collect();
    assert_eq!(sessions.len(), 2, "a second session message after the failover");
    assert_eq!(sessions[1].backend, "polly");
    for session in &sessions {
        assert_eq!(session.audio, earshot_core::protocol::AudioFormat::pcm_s16le(24_000), "the player never has to reopen");
    }
    assert_eq!(*s.stats.last_polly_rate.lock().unwrap(), Some(16_000), "Polly speaks 16 kHz, made 24 kHz by the gateway");
    assert_eq!(check_conversation(&r), vec!["Hello there.", "How are you?"]);

    // Ogg Opus across the same failover: one stream from its headers on, whichever voice speaks.
    let body = earshot_client::SpeakBody { text: Some("Hello there. How are you?".into()), output_format: Some("opus_48000".into()), ..Default::default() };
    let r = speak(&url, &body, &CallOptions::default()).await.unwrap();
    let sessions: Vec<&earshot_core::protocol::AudioFormat> =
        r.events.iter().filter_map(|e| if let ServerEvent::Session(s) = e { Some(&s.audio) } else { None }).collect();
    assert_eq!(sessions.len(), 2, "a second session message after the failover");
    assert!(sessions.iter().all(|a| a.encoding == "ogg_opus" && a.sample_rate == 48_000), "{sessions:?}");
    assert!(r.audio.starts_with(b"OggS") && r.audio.windows(8).filter(|w| w == b"OpusHead").count() == 1, "one stream, one header");
    assert_eq!(check_conversation(&r), vec!["Hello there.", "How are you?"]);

    // A telephone bridge: Polly's own 8 kHz, as μ-law.
    let url = gateway(vec![polly(&config, PollySettings::default()).await], Arc::new(agent(200.0)), Routing::default()).await;
    let body = earshot_client::SpeakBody { text: Some("Thanks for calling.".into()), output_format: Some("ulaw_8000".into()), ..Default::default() };
    let r = speak(&url, &body, &CallOptions::default()).await.unwrap();
    check_conversation(&r);
    assert_eq!(*s.stats.last_polly_rate.lock().unwrap(), Some(8_000), "Polly is asked for the rate the client plays");
    let format = r.format().unwrap();
    assert_eq!((format.encoding.as_str(), format.sample_rate), ("mulaw", 8_000));
    // A byte a sample: each sentence's bytes are its `sentence_end` milliseconds at 8 kHz, to the sample.
    let ends: Vec<f64> = r.events.iter().filter_map(|e| if let ServerEvent::SentenceEnd(end) = e { Some(end.audio_ms) } else { None }).collect();
    let expected: f64 = ends.iter().map(|ms| (ms * 8.0).round()).sum();
    assert!((r.audio.len() as f64 - expected).abs() <= ends.len() as f64, "{} bytes for {expected} samples", r.audio.len());
}

#[tokio::test]
async fn an_interrupt_closes_pollys_streams() {
    let s = standins(StandInsConfig::default()).await;
    let config = sdk(&s).await;
    let url = gateway(vec![polly(&config, PollySettings::default()).await], Arc::new(agent(200.0)), Routing::default()).await;
    let body = earshot_client::SpeakBody {
        text: Some("This answer goes on for a long while, sentence after sentence. ".repeat(20)),
        conversation_id: Some("polly-stop".into()),
        ..Default::default()
    };
    let stream = tokio::spawn({
        let url = url.clone();
        async move { speak(&url, &body, &CallOptions::default()).await }
    });
    while s.stats.polly_spoken.lock().unwrap().iter().all(|u| u.audio.is_empty()) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let sent = std::time::Instant::now();
    interrupt(&url, "polly-stop").await.expect("202");
    let r = stream.await.unwrap().unwrap();
    assert_eq!(r.error.expect("an error").code, "interrupted");
    let mut closed = None;
    for _ in 0..500 {
        if Stats::get(&s.stats.polly_streams_live) == 0 {
            closed = Some(sent.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    eprintln!("interrupt to Polly's streams closed: {closed:?}");
    assert!(closed.is_some_and(|t| t < Duration::from_secs(1)), "Polly's streams were still open a second after the interrupt");
}

#[tokio::test]
async fn health_probes_reach_the_standins_through_the_trusted_certificate() {
    let s = standins(StandInsConfig::default()).await;
    let settings = AwsSettings {
        region: Some("us-east-1".into()),
        endpoint_url: Some(s.url.clone()),
        trust_pem: Some(s.cert_pem.clone().into_bytes()),
        static_credentials: Some(("AKIDTEST".into(), "secret".into())),
    };
    let config = settings.sdk_config().await;
    let control = settings.control_client().unwrap();
    let with_control = |endpoint: &str| SageMakerBackend::new(&config, sagemaker_settings(endpoint, None)).with_control_client(control.clone());
    with_control("earshot-kokoro").health().await.expect("the stand-in's endpoint is in service");
    let err = with_control("missing-endpoint").health().await.expect_err("an endpoint SageMaker does not know");
    assert!(err.message.contains("ValidationException"), "{}", err.message);
    // Without the stand-in's certificate the probe fails: the control client trusts no one else's.
    let untrusted = SageMakerBackend::new(
        &config,
        SageMakerSettings {
            endpoint_name: "earshot-kokoro".into(),
            target_variant: None,
            voices: vec![],
            default_voice: "x".into(),
            language_voices: vec![],
            speed: 1.0,
        },
    );
    assert!(untrusted.health().await.is_err());
    polly(&config, PollySettings::default()).await.health().await.expect("DescribeVoices answers");
}

/// `earshot doctor` against `url`: its exit status and what it printed.
fn doctor(url: &str) -> (bool, String) {
    let out = std::process::Command::new(earshot_e2e::earshot_bin()).args(["doctor", "--url", url]).output().expect("earshot doctor runs");
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[tokio::test]
async fn the_doctor_says_each_arm_speaks_or_what_stops_it_while_failover_hides_it() {
    let s = standins(StandInsConfig::default()).await;
    let config = sdk(&s).await;
    let routing = Routing { weights: vec![("kokoro".into(), 50), ("polly".into(), 50)], failover: true, allow_override: true, ..Default::default() };
    // The SageMaker arm's health probe (DescribeEndpoint) trusts the stand-ins' certificate, as the wiring sets it up.
    let control = AwsSettings { trust_pem: Some(s.cert_pem.clone().into_bytes()), ..Default::default() }.control_client().unwrap();
    let checked = |endpoint: &str| -> Arc<dyn SpeechBackend> {
        Arc::new(SageMakerBackend::new(&config, sagemaker_settings(endpoint, None)).with_control_client(control.clone()))
    };
    let url = gateway(vec![checked("earshot-kokoro"), polly(&config, PollySettings::default()).await], Arc::new(agent(200.0)), routing.clone()).await;
    let (ok, said) = tokio::task::spawn_blocking(move || doctor(&url)).await.unwrap();
    assert!(ok, "{said}");
    assert!(said.contains("kokoro: speaks (healthy)") && said.contains("polly: speaks (healthy)"), "{said}");
    assert!(said.contains("characters billed"), "Polly's billed characters are reported: {said}");

    // A role without the bidirectional action: the gateway still speaks (an unpinned conversation fails
    // over to Polly), which is exactly why the doctor, pinning each arm, must say so.
    let all_to_kokoro = Routing { weights: vec![("kokoro".into(), 100), ("polly".into(), 0)], failover: true, allow_override: true, ..Default::default() };
    let url = gateway(vec![checked("denied-kokoro"), polly(&config, PollySettings::default()).await], Arc::new(agent(200.0)), all_to_kokoro).await;
    let r = speak(&url, &text("Hello there."), &CallOptions::default()).await.unwrap();
    check_conversation(&r);
    assert_eq!(r.header("x-earshot-backend-reason"), Some("failover"), "the gateway keeps speaking");
    assert_eq!(r.timeline.as_ref().unwrap().failover_from.as_deref(), Some("access_denied_exception"), "the cause of an open-time failover is in the timeline");
    let (ok, said) = tokio::task::spawn_blocking(move || doctor(&url)).await.unwrap();
    assert!(!ok, "the doctor fails when an arm cannot speak: {said}");
    assert!(said.contains("kokoro: CANNOT SPEAK (healthy): access_denied_exception"), "{said}");
    assert!(said.contains("InvokeEndpointWithBidirectionalStream"), "the fix names the action: {said}");
    assert!(said.contains("kokoro cannot speak"), "{said}");
    assert!(said.contains("polly: speaks"), "{said}");
}

#[tokio::test]
async fn the_doctor_asks_the_agent_and_names_what_stops_it() {
    // Voices that speak, an agent that cannot answer: a `text` conversation would never notice.
    let s = standins(StandInsConfig { tokens_per_second: 300.0, ..Default::default() }).await;
    let config = sdk(&s).await;
    let voice = || -> Arc<dyn SpeechBackend> {
        Arc::new(SyntheticBackend::new(SyntheticConfig { first_audio: Duration::from_millis(5), chars_per_second: 2000.0, ..Default::default() }))
    };
    let bedrock = |model: &str| Arc::new(BedrockAgent::new(&config, BedrockSettings { model_id: model.into(), ..Default::default() }));
    let url = gateway(vec![voice()], bedrock("test-model"), Routing::default()).await;
    let (ok, said) = tokio::task::spawn_blocking(move || doctor(&url)).await.unwrap();
    assert!(ok && said.contains("the agent: answers") && said.contains("every arm speaks, and the agent answers"), "{said}");
    let asked = Stats::get(&s.stats.bedrock_calls);
    assert_eq!(asked, 1, "the agent itself was asked, once");

    // A role without bedrock:InvokeModelWithResponseStream on the model.
    let url = gateway(vec![voice()], bedrock("denied-model"), Routing::default()).await;
    let (ok, said) = tokio::task::spawn_blocking(move || doctor(&url)).await.unwrap();
    assert!(!ok, "the doctor fails when the agent cannot answer: {said}");
    assert!(said.contains("synthetic: speaks"), "the voice is still reported: {said}");
    assert!(said.contains("the agent: CANNOT ANSWER: agent_access_denied"), "{said}");
    assert!(said.contains("bedrock:InvokeModelWithResponseStream"), "the fix names the action: {said}");
    assert!(said.contains("every arm speaks, but the agent cannot answer"), "{said}");

    // An OpenAI-compatible agent with nothing at its address, through earshot serve as deployed.
    let earshot = earshot_e2e::EarshotProcess::start(&[
        "--backends",
        "synthetic",
        "--agent",
        "openai",
        "--openai-base-url",
        "http://127.0.0.1:9/v1",
        "--openai-model",
        "standin",
    ])
    .await;
    earshot.healthy().await;
    let url = earshot.url.clone();
    let (ok, said) = tokio::task::spawn_blocking(move || doctor(&url)).await.unwrap();
    assert!(!ok, "{said}");
    assert!(said.contains("the agent: CANNOT ANSWER: agent_unreachable") && said.contains("EARSHOT_OPENAI_BASE_URL"), "{said}");
}

#[tokio::test]
async fn polly_offers_the_generative_voices_polly_describes() {
    let s = standins(StandInsConfig::default()).await;
    let config = sdk(&s).await;
    let backend = Arc::new(PollyBackend::new(&config, PollySettings::default()).expect("a Polly backend"));
    assert!(backend.voices().iter().all(|v| v.id != "ayanda"), "the built-in list until Polly answers");
    backend.describe_voices().await.expect("the stand-in answers DescribeVoices");
    let voices = backend.voices();
    let kajal = voices.iter().find(|v| v.id == "kajal").expect("a voice outside the built-in list is offered");
    assert_eq!(kajal.language, "en-IN");
    assert!(kajal.description.contains("hi-IN"), "a bilingual voice says its other language: {}", kajal.description);
    let french: Vec<&str> = voices.iter().filter(|v| v.language.starts_with("fr")).map(|v| v.id.as_str()).collect();
    assert_eq!(french, vec!["lea", "remi"]);
    let url = gateway(vec![backend.clone()], Arc::new(agent(200.0)), Routing::default()).await;
    let listed: serde_json::Value = reqwest::get(format!("{url}/v1/voices")).await.unwrap().json().await.unwrap();
    assert!(listed["backends"][0]["voices"].as_array().unwrap().iter().any(|v| v["id"] == "ayanda"), "{listed}");
    // The new voice speaks, under Polly's own id.
    let body = earshot_client::SpeakBody { voice: Some("ayanda".into()), ..text("Hello there.") };
    let r = speak(&url, &body, &CallOptions::default()).await.unwrap();
    check_conversation(&r);
    assert_eq!(s.stats.last_polly_voice.lock().unwrap().as_deref(), Some("Ayanda"));
    // A built-in voice this Polly does not list is refused before any stream.
    let body = earshot_client::SpeakBody { voice: Some("joanna".into()), ..text("Hello there.") };
    match speak(&url, &body, &CallOptions::default()).await {
        Err(ClientError::Refused { status, code, .. }) => assert_eq!((status, code.as_str()), (400, "unknown_voice")),
        other => panic!("{other:?}"),
    }
}
