//! French and Mandarin answers through `make run-aws`'s gateway: Kokoro on the SageMaker stand-in and
//! Polly's (whose voices come from its `DescribeVoices`: French, no Mandarin), 50/50 with failover, the
//! real SDK clients, the real Kokoro container behind both. Each answer is spoken in its language by an
//! arm that can speak it, in that arm's voice for it; the arm that cannot is passed over with the reason,
//! and the container is sent the sentence's spoken form with its language.

use earshot_client::{speak, CallOptions, ClientError, Received, SpeakBody};
use earshot_core::protocol::BackendReason;
use earshot_e2e::run_aws::RunAws;

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
    // the reason and no arm, the other half in the experiment as assigned.
    let (mut passed_over, mut assigned) = (0, 0);
    for i in 0..12 {
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
