//! A backend whose service has a concurrency quota (Polly's generative voices) holds at most so many
//! conversations across the deployment (`--backend-conversations`): past it a conversation goes to the next
//! arm, or, with none, is refused `503 backend_busy` with `Retry-After`, as for a full Kokoro container; a
//! place is free again once its conversation ends. The synthetic voice stands in for the capped backend.

use std::time::Duration;

use earshot_client::{interrupt_as, speak, CallOptions, ClientError, SpeakBody};
use earshot_e2e::{text, EarshotProcess};

#[tokio::test]
async fn past_its_cap_a_backend_takes_no_more_conversations_until_one_ends() {
    let earshot = EarshotProcess::start(&["--backends", "synthetic", "--backend-conversations", "synthetic=1"]).await;
    earshot.healthy().await;
    let long = SpeakBody {
        conversation_id: Some("capped:1".into()),
        ..text("This first answer holds the only place for a while. It goes on, sentence after sentence, so there is time to ask again.")
    };
    let first = tokio::spawn({
        let url = earshot.url.clone();
        async move { speak(&url, &long, &CallOptions::default()).await }
    });
    tokio::time::sleep(Duration::from_millis(800)).await;
    let second = SpeakBody { conversation_id: Some("capped:2".into()), ..text("Hello there.") };
    match speak(&earshot.url, &second, &CallOptions::default()).await {
        Err(ClientError::Refused { status, code, message }) => {
            assert_eq!((status, code.as_str()), (503, "backend_busy"), "{message}");
            assert!(message.contains("every voice is busy"), "in earshot's words: {message}");
        }
        other => panic!("a second conversation past the cap was not refused: {:?}", other.map(|r| r.status)),
    }
    let log = std::fs::read_to_string(earshot.log_path()).unwrap();
    assert!(log.contains("synthetic holds the 1 conversations this deployment lets it hold at once"), "the log says why:\n{log}");
    interrupt_as(&earshot.url, "capped:1", None).await.expect("interrupted");
    assert_eq!(first.await.unwrap().unwrap().error.map(|e| e.code).as_deref(), Some("interrupted"));
    // The place is given back as the conversation ends (a task on its cancellation): served again.
    let mut served = None;
    for _ in 0..20 {
        match speak(&earshot.url, &second, &CallOptions::default()).await {
            Ok(r) => {
                served = Some(r);
                break;
            }
            Err(ClientError::Refused { status: 503, .. }) => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(e) => panic!("{e}"),
        }
    }
    let served = served.expect("the place came back within two seconds");
    assert!(served.error.is_none(), "{:?}", served.error);
}

#[tokio::test]
async fn the_doctor_says_what_a_capped_arm_holds_at_once_and_a_stranger_is_not_told() {
    let doctor = |url: &str| {
        let out = std::process::Command::new(earshot_e2e::earshot_bin()).args(["doctor", "--url", url]).output().expect("earshot doctor runs");
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let earshot = EarshotProcess::start(&["--backends", "synthetic", "--backend-conversations", "synthetic=3"]).await;
    earshot.healthy().await;
    let url = earshot.url.clone();
    let (ok, said) = tokio::task::spawn_blocking(move || doctor(&url)).await.unwrap();
    assert!(ok && said.contains("synthetic: speaks"), "{said}");
    assert!(said.contains("at most 3 conversations at once across the deployment"), "{said}");
    // Where anyone may call, /healthz tells whether each arm is healthy and no more.
    let public = EarshotProcess::start(&["--backends", "synthetic", "--backend-conversations", "synthetic=3", "--auth", "public"]).await;
    public.healthy().await;
    let health: serde_json::Value = reqwest::get(format!("{}/healthz", public.url)).await.unwrap().json().await.unwrap();
    assert_eq!(health["backends"]["synthetic"], serde_json::json!({"ok": true}), "{health}");
}
