//! French and Mandarin answers through `make run-aws`'s gateway: Kokoro on the SageMaker stand-in and
//! Polly's (whose voices come from its `DescribeVoices`: French, no Mandarin), 50/50 with failover, the
//! real SDK clients, the real Kokoro container behind both. Each answer is spoken in its language by an
//! arm that can speak it, in that arm's voice for it; the arm that cannot is passed over with the reason,
//! and the container is sent the sentence's spoken form with its language.

use earshot_client::{speak, CallOptions, ClientError, Received, SpeakBody};
use earshot_core::protocol::{BackendReason, ServerEvent};
use earshot_e2e::run_aws::RunAws;
use earshot_e2e::{check_conversation, EarshotProcess, Kokoro};

const FRENCH: &str = "Votre commande est partie ce matin de notre entrepôt. La livraison coûte 12,50 € et arrivera avant 18 h 30.";
const MANDARIN: &str = "您的订单今天早上已经发出。运费是¥12.5，预计下午3:30之前送达。";

fn body(text: &str, backend: Option<&str>, id: &str) -> SpeakBody {
    SpeakBody { text: Some(text.into()), backend: backend.map(str::to_string), conversation_id: Some(id.into()), ..Default::default() }
}

fn spoken_by(r: &Received) -> (String, String, Option<String>, BackendReason) {
    assert!(r.error.is_none(), "{:?}", r.error);
    let s = r.session.as_ref().expect("a session");
    (s.backend.clone(), s.voice.clone(), s.language.as_ref().map(|l| l.to_string()), s.backend_reason)
}

#[tokio::test]
async fn french_and_mandarin_answers_are_spoken_by_an_arm_that_speaks_them_in_its_voice_for_them() {
    // The local container has Japanese voice packs only, which read any language it has a front end for:
    // `make run-aws` gives each language one of them (fr=jf_nezumi, zh=jf_tebukuro).
    let stack = RunAws::start("languages", &[]).await;
    let (standins, earshot) = (&stack.standins, &stack.earshot);
    let call = CallOptions::default();

    // French on the Kokoro arm: its French voice, the language detected, the container sent French in words.
    let r = speak(&earshot.url, &body(FRENCH, Some("kokoro"), "fr-kokoro"), &call).await.unwrap();
    assert_eq!(spoken_by(&r), ("kokoro".into(), "jf_nezumi".into(), Some("fr".into()), BackendReason::Request));
    assert_eq!(r.session.as_ref().unwrap().language_source, Some(earshot_core::language::LanguageSource::Detected));
    let sent = standins.stats.sagemaker_synthesize.lock().unwrap().clone();
    let french: Vec<&serde_json::Value> = sent.iter().filter(|m| m["language"] == "fr").collect();
    assert_eq!(french.len(), 2, "both sentences went to the container in French: {sent:?}");
    assert!(french.iter().all(|m| m["voice"] == "jf_nezumi"));
    assert!(french[1]["text"].as_str().unwrap().contains("douze euros cinquante et arrivera avant dix-huit heures trente"), "{}", french[1]["text"]);
    // The captions keep what the agent wrote.
    assert!(r.events.iter().any(|e| matches!(e, earshot_core::protocol::ServerEvent::Sentence(s) if s.text.contains("12,50 €"))));
    assert!(!r.audio.is_empty());

    // French on the Polly arm: the first French voice Polly's DescribeVoices lists.
    let r = speak(&earshot.url, &body(FRENCH, Some("polly"), "fr-polly"), &call).await.unwrap();
    assert_eq!(spoken_by(&r), ("polly".into(), "lea".into(), Some("fr".into()), BackendReason::Request));
    assert_eq!(standins.stats.last_polly_voice.lock().unwrap().as_deref(), Some("Lea"));
    assert!(!r.audio.is_empty());

    // Mandarin, asked of Polly, which has no Mandarin voice: refused before any stream, saying why.
    match speak(&earshot.url, &SpeakBody { language: Some("zh".into()), ..body(MANDARIN, Some("polly"), "zh-polly") }, &call).await {
        Err(ClientError::Refused { status, code, message }) => {
            assert_eq!((status, code.as_str()), (400, "language_unsupported"));
            assert!(message.contains("backend `polly` cannot speak zh"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }

    // Mandarin through the split: every answer on Kokoro; the half the split gave Polly passed over with
    // the reason and no arm, the other half in the experiment as assigned. Answers are asked for until
    // both halves have been seen (the split is by conversation: the same few each run), at most twelve.
    let (mut passed_over, mut assigned) = (0, 0);
    for i in 0..12 {
        if passed_over > 0 && assigned > 0 {
            break;
        }
        let r = speak(&earshot.url, &body(MANDARIN, None, &format!("zh-{i}")), &call).await.unwrap();
        let (backend, voice, language, reason) = spoken_by(&r);
        assert_eq!((backend.as_str(), voice.as_str(), language.as_deref()), ("kokoro", "jf_tebukuro", Some("zh")));
        let session = r.session.as_ref().unwrap();
        match reason {
            BackendReason::Language => {
                assert_eq!(session.arm, None);
                assert_eq!(r.timeline.as_ref().and_then(|t| t.language_from.as_deref()), Some("polly"));
                passed_over += 1;
            }
            BackendReason::Ab => {
                assert_eq!(session.arm.as_deref(), Some("kokoro"));
                assigned += 1;
            }
            other => panic!("unexpected reason {other:?}"),
        }
    }
    assert!(passed_over > 0 && assigned > 0, "both halves of the split: {passed_over} passed over, {assigned} assigned");
    let sent = standins.stats.sagemaker_synthesize.lock().unwrap().clone();
    let mandarin = sent.iter().rev().find(|m| m["language"] == "zh").expect("a Mandarin sentence at the container");
    assert!(
        mandarin["text"].as_str().unwrap().contains("十二点五元") || sent.iter().any(|m| m["text"].as_str().unwrap_or("").contains("十二点五元")),
        "{sent:?}"
    );
    assert!(sent.iter().any(|m| m["language"] == "zh" && m["text"].as_str().unwrap_or("").contains("三点三十分")), "{sent:?}");

    // The metric lines carry the language and, where an arm was passed over, which.
    let lines = earshot.metric_lines();
    assert!(lines.iter().any(|l| l["Language"] == "zh" && l["LanguageFrom"] == "polly"), "{lines:?}");
}

/// The events of one answer to `prompt` from the local stack (the scripted agent, the Kokoro container).
async fn sessions_for(earshot: &EarshotProcess, prompt: &str) -> (Received, Vec<earshot_core::protocol::SessionInfo>) {
    let body = SpeakBody { prompt: Some(prompt.into()), ..Default::default() };
    let r = speak(&earshot.url, &body, &CallOptions::default()).await.expect("the answer is spoken");
    assert!(r.error.is_none(), "{:?}", r.error);
    let sessions = r.events.iter().filter_map(|e| if let ServerEvent::Session(s) = e { Some(s.clone()) } else { None }).collect();
    (r, sessions)
}

#[tokio::test]
async fn a_prompt_that_tells_no_language_is_spoken_in_the_language_of_the_answers_first_sentence() {
    let kokoro = Kokoro::shared();
    kokoro.ready().await;
    let earshot = EarshotProcess::start(&["--kokoro-url", &kokoro.url]).await;
    earshot.healthy().await;
    // `mandarin` is one English-looking word: the voice is chosen without a language, and the answer's first
    // sentence (Chinese) tells it, before any audio, in a second `session`.
    let (r, sessions) = sessions_for(&earshot, "mandarin").await;
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    assert_eq!((sessions[0].language.as_ref(), sessions[0].backend_reason), (None, BackendReason::Default));
    let second = &sessions[1];
    assert_eq!(second.language.as_ref().map(|l| l.as_str()), Some("zh"));
    // The local container's one voice speaks Mandarin too: the same backend and voice, the language told
    // (the reason stands); the container gets each sentence with it, in its spoken form.
    assert_eq!((second.language_source, second.backend_reason), (Some(earshot_core::language::LanguageSource::Detected), BackendReason::Default));
    assert_eq!((second.backend.as_str(), second.voice.as_str()), (sessions[0].backend.as_str(), sessions[0].voice.as_str()));
    let first_audio = r.events.iter().position(|e| matches!(e, ServerEvent::Audio(_))).expect("audio");
    let second_session = r.events.iter().rposition(|e| matches!(e, ServerEvent::Session(_))).unwrap();
    assert!(second_session < first_audio, "the switch comes before any audio");
    assert_eq!(r.timeline.as_ref().and_then(|t| t.language.as_deref()), Some("zh"));
    // The same for French; and an English answer to an English-looking prompt costs no switch.
    let (_, sessions) = sessions_for(&earshot, "french").await;
    assert_eq!(sessions.last().and_then(|s| s.language.as_ref()).map(|l| l.as_str()), Some("fr"));
    let (_, sessions) = sessions_for(&earshot, "brief").await;
    assert_eq!(sessions.len(), 1, "the first sentence is English, as the voice was chosen for: {sessions:?}");
}

#[tokio::test]
async fn a_first_sentence_another_voice_must_speak_moves_the_conversation_to_it_before_any_audio() {
    // Polly first (English voice Ruth; French voices; no Mandarin), Kokoro on SageMaker second, the
    // scripted agent: prompts that tell no language, answers that do.
    let kokoro = Kokoro::shared();
    kokoro.ready().await;
    let standins = earshot_standins::start(earshot_standins::StandInsConfig { kokoro_url: kokoro.url.clone(), ..Default::default() }, 0).await.unwrap();
    let config = earshot_e2e::run_aws::sdk_for(&standins).await;
    let silence = earshot_e2e::untested_silence().await;
    let polly_settings = earshot_aws::PollySettings { first_audio_timeout: Some(silence), ..Default::default() };
    let polly = std::sync::Arc::new(earshot_aws::PollyBackend::new(&config, polly_settings).unwrap());
    let sagemaker = earshot_aws::SageMakerSettings {
        endpoint_name: "earshot-kokoro".into(),
        target_variant: None,
        voices: vec!["jf_alpha".into()],
        default_voice: "jf_alpha".into(),
        language_voices: vec![(earshot_core::language::Language::parse("zh").unwrap(), "jf_tebukuro".into())],
        speed: 1.0,
    };
    let backends: Vec<std::sync::Arc<dyn earshot_core::speech::SpeechBackend>> =
        vec![polly, std::sync::Arc::new(earshot_aws::SageMakerBackend::new(&config, sagemaker))];
    let mut settings = earshot_gateway::GatewaySettings { metrics_namespace: None, ..Default::default() };
    settings.scheduler.backend_silence = Some(silence);
    let served = earshot_e2e::serve(earshot_gateway::Gateway::new(backends, std::sync::Arc::new(earshot_e2e::agent(200.0)), settings)).await;
    let ask = |prompt: &str| SpeakBody { prompt: Some(prompt.into()), ..Default::default() };
    let sessions = |r: &Received| r.events.iter().filter_map(|e| if let ServerEvent::Session(s) = e { Some(s.clone()) } else { None }).collect::<Vec<_>>();

    // French: Polly still, in its French voice, on a new stream.
    let r = speak(&served.url, &ask("french"), &CallOptions::default()).await.unwrap();
    let s = sessions(&r);
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!((s.len(), s[0].voice.as_str(), s[1].voice.as_str(), s[1].backend_reason), (2, "ruth", "lea", BackendReason::Language));
    assert_eq!(standins.stats.last_polly_voice.lock().unwrap().as_deref(), Some("Lea"), "the French voice spoke");
    // Mandarin: Polly cannot; Kokoro takes it, in its Mandarin voice, the language and its spoken forms sent.
    let r = speak(&served.url, &ask("mandarin"), &CallOptions::default()).await.unwrap();
    let s = sessions(&r);
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!((s[1].backend.as_str(), s[1].voice.as_str(), s[1].backend_reason), ("kokoro", "jf_tebukuro", BackendReason::Language));
    let timeline = r.timeline.as_ref().unwrap();
    assert_eq!((timeline.language.as_deref(), timeline.language_from.as_deref()), (Some("zh"), Some("polly")));
    let sent = standins.stats.sagemaker_synthesize.lock().unwrap().clone();
    assert!(sent.iter().any(|m| m["language"] == "zh" && m["text"].as_str().unwrap_or("").contains("十二点五元")), "{sent:?}");
    assert!(!r.audio.is_empty());
}

#[tokio::test]
async fn a_sentence_in_a_script_no_voice_reads_is_passed_over_and_the_answer_goes_on() {
    // Hangul between two English sentences: the container reads none of it. The listener hears the first
    // sentence and the last; the middle one ends `skipped`, with no audio and no words.
    let kokoro = Kokoro::shared();
    kokoro.ready().await;
    let earshot = EarshotProcess::start(&["--kokoro-url", &kokoro.url]).await;
    earshot.healthy().await;
    let text = "Hello there, this is the first sentence. 안녕하세요 여러분 반갑습니다. And this is the last one.";
    let r = speak(&earshot.url, &SpeakBody { text: Some(text.into()), ..Default::default() }, &CallOptions::default()).await.unwrap();
    let sentences = check_conversation(&r);
    assert_eq!(sentences.len(), 3, "{sentences:?}");
    let ends: Vec<(u32, f64, Option<String>)> = r
        .events
        .iter()
        .filter_map(|e| match e {
            ServerEvent::SentenceEnd(end) => Some((end.index, end.audio_ms, end.skipped.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(ends.iter().map(|e| (e.0, e.2.as_deref())).collect::<Vec<_>>(), vec![(0, None), (1, Some("unsupported_script")), (2, None)]);
    assert!(ends[0].1 > 500.0 && ends[2].1 > 500.0, "the first and the last are spoken: {ends:?}");
}

/// The `error` a conversation ended with, and whether a `done` came (it must not, after an error).
fn ending(r: &Received) -> (Option<&earshot_core::protocol::ErrorInfo>, bool) {
    (r.error.as_ref(), r.events.iter().any(|e| matches!(e, ServerEvent::Done(_))))
}

#[tokio::test]
async fn an_answer_no_voice_can_read_ends_with_nothing_speakable_on_sse_and_binary_and_in_its_metric_line() {
    // The local stack as `make run` has it: the Kokoro container alone, whose voices read Latin script, Han and
    // kana. A text in Cyrillic or Arabic has nothing it can read: the answer ends with an error that says
    // what the text is written in, never with a silent `done`.
    let kokoro = Kokoro::shared();
    kokoro.ready().await;
    let earshot = EarshotProcess::start(&["--kokoro-url", &kokoro.url]).await;
    earshot.healthy().await;
    let cases = [("Привет, как дела? Всё хорошо.", "Cyrillic", "ru"), ("مرحبا، كيف حالك؟ كل شيء بخير.", "Arabic", "ar")];
    for (i, (text, script, language)) in cases.iter().enumerate() {
        for delivery in [earshot_core::protocol::Delivery::Sse, earshot_core::protocol::Delivery::Binary] {
            let call = CallOptions { delivery, ..CallOptions::default() };
            let r = speak(&earshot.url, &SpeakBody { text: Some(text.to_string()), ..Default::default() }, &call).await.unwrap();
            let (error, done) = ending(&r);
            let error = error.unwrap_or_else(|| panic!("{script} over {delivery:?}: no error; events {:?}", r.events));
            assert_eq!(error.code, "nothing_speakable", "{script} over {delivery:?}");
            assert!(error.message.contains(script) && error.message.contains(language), "{}", error.message);
            assert!(!done, "no `done` after the error");
            assert!(r.audio.is_empty());
            // Each sentence still told the listener it was passed over, before the error.
            let passed = r.events.iter().filter(|e| matches!(e, ServerEvent::SentenceEnd(end) if end.skipped.as_deref() == Some("unsupported_script"))).count();
            assert_eq!(passed, 2, "{script}: {:?}", r.events);
        }
        // The metric line of each says how it ended.
        let lines = earshot.metric_lines_at_least(2 * (i + 1)).await;
        let last = lines.last().expect("a metric line");
        assert_eq!((last["Ending"].as_str(), last["FailureCode"].as_str()), (Some("failed"), Some("nothing_speakable")), "{last}");
    }
}

#[tokio::test]
async fn a_cyrillic_answer_goes_to_an_arm_that_speaks_it_as_text_and_from_the_agent() {
    // Kokoro first (Latin, Han, kana), the synthetic voice second (a tone for any language). A Cyrillic text is
    // routed to the synthetic voice from the start (its language is detected before any session opens). An
    // agent's Cyrillic answer to a request that said English opens on Kokoro, which passes over its first
    // sentence: before any audio, the answer moves to the arm that speaks the sentence, which speaks all of it.
    let kokoro = Kokoro::shared();
    kokoro.ready().await;
    let script = "russian=Привет, как дела? Всё хорошо, спасибо.";
    let earshot = EarshotProcess::start(&["--kokoro-url", &kokoro.url, "--backends", "kokoro,synthetic", "--script", script]).await;
    earshot.healthy().await;
    let call = CallOptions::default();

    let r = speak(&earshot.url, &SpeakBody { text: Some("Привет, как дела? Всё хорошо.".into()), ..Default::default() }, &call).await.unwrap();
    assert_eq!(spoken_by(&r), ("synthetic".into(), "tone".into(), Some("ru".into()), BackendReason::Language));
    assert!(ending(&r).1, "the answer ends with done");
    assert!(!r.audio.is_empty());

    let asked = SpeakBody { prompt: Some("russian".into()), language: Some("en".into()), ..Default::default() };
    let r = speak(&earshot.url, &asked, &call).await.unwrap();
    assert!(r.error.is_none(), "{:?}", r.error);
    let sessions: Vec<_> = r.events.iter().filter_map(|e| if let ServerEvent::Session(s) = e { Some(s.clone()) } else { None }).collect();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    assert_eq!((sessions[0].backend.as_str(), sessions[1].backend.as_str(), sessions[1].backend_reason), ("kokoro", "synthetic", BackendReason::Language));
    assert_eq!(sessions[1].language.as_ref().map(|l| l.as_str()), Some("ru"));
    let first_audio = r.events.iter().position(|e| matches!(e, ServerEvent::Audio(_))).expect("audio");
    let switch = r.events.iter().rposition(|e| matches!(e, ServerEvent::Session(_))).unwrap();
    assert!(switch < first_audio, "the move comes before any audio");
    // Both sentences spoken, none passed over: the first was spoken again by the arm that reads it.
    let ends: Vec<_> = r.events.iter().filter_map(|e| if let ServerEvent::SentenceEnd(end) = e { Some(end.clone()) } else { None }).collect();
    assert_eq!(ends.len(), 2, "{ends:?}");
    assert!(ends.iter().all(|e| e.skipped.is_none() && e.audio_ms > 100.0), "{ends:?}");
    let timeline = r.timeline.as_ref().expect("done");
    assert_eq!((timeline.language.as_deref(), timeline.language_from.as_deref()), (Some("ru"), Some("kokoro")));
}
