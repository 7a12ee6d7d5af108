//! `POST /v1/conversations/{id}/interrupt` over HTTP, with no model: a live conversation stops at once
//! (its stream ends with `error` `interrupted`, its backend session closes), and every other case gets
//! its own answer.

#![allow(clippy::disallowed_methods)] // a test spawns its own helpers; clippy.toml keeps the crates on the tracker

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::serve;
use earshot_agents::{ScriptedAgent, ScriptedConfig};
use earshot_backends::{SyntheticBackend, SyntheticConfig};
use earshot_client::{interrupt, speak, CallOptions, ClientError, SpeakBody};
use earshot_gateway::{Gateway, GatewaySettings, Interrupts};

fn slow_voice() -> Arc<SyntheticBackend> {
    Arc::new(SyntheticBackend::new(SyntheticConfig { first_audio: Duration::from_millis(10), chars_per_second: 50.0, ..Default::default() }))
}

fn gateway(voice: Arc<SyntheticBackend>) -> Gateway {
    gateway_with(voice, GatewaySettings { metrics_namespace: None, ..Default::default() })
}

fn gateway_with(voice: Arc<SyntheticBackend>, settings: GatewaySettings) -> Gateway {
    let agent = ScriptedAgent::new(ScriptedConfig { tokens_per_second: 1000.0, first_token_delay: Duration::ZERO, ..Default::default() });
    Gateway::new(vec![voice], Arc::new(agent), settings)
}

fn refused(result: Result<(), ClientError>) -> (u16, String) {
    match result {
        Err(ClientError::Refused { status, code, .. }) => (status, code),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn an_interrupt_stops_a_live_conversation_and_its_backend_at_once() {
    let voice = slow_voice();
    let url = serve(gateway(voice.clone())).await;
    let body = SpeakBody { text: Some("A sentence to speak. ".repeat(50)), conversation_id: Some("call-7".into()), ..Default::default() };
    let speaking = {
        let url = url.clone();
        tokio::spawn(async move { speak(&url, &body, &CallOptions::default()).await })
    };
    // Fifty sentences at this pace take twenty seconds; interrupt once it speaks.
    while voice.live_sessions() == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sent = Instant::now();
    interrupt(&url, "call-7").await.expect("202: the interrupt is accepted");
    let r = tokio::time::timeout(Duration::from_secs(5), speaking).await.expect("the stream ends").unwrap().unwrap();
    let ended = sent.elapsed();
    let error = r.error.expect("the stream ends with an error");
    assert_eq!((error.code.as_str(), error.retryable), ("interrupted", false));
    assert!(r.timeline.is_none(), "no `done` after an interrupt");
    assert!(ended < Duration::from_secs(2), "the stream ended {ended:?} after the interrupt");
    for _ in 0..100 {
        if voice.live_sessions() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(voice.live_sessions(), 0, "the backend session is closed");
    // Finished: a second interrupt finds nothing.
    assert_eq!(refused(interrupt(&url, "call-7").await), (404, "unknown_conversation".into()));
}

#[tokio::test]
async fn interrupts_that_cannot_be_honoured_are_told_why() {
    let url = serve(gateway(slow_voice())).await;
    assert_eq!(refused(interrupt(&url, "never-started").await), (404, "unknown_conversation".into()));
    assert_eq!(refused(interrupt(&url, "bad%20id").await), (400, "invalid_conversation_id".into()));
    assert_eq!(refused(interrupt(&url, &"x".repeat(129)).await), (400, "invalid_conversation_id".into()));

    // A gateway whose conversations may run in other processes, with no store to reach them.
    let elsewhere = gateway_with(slow_voice(), GatewaySettings { interrupts: Interrupts::Unavailable, metrics_namespace: None, ..Default::default() });
    let url = serve(elsewhere).await;
    assert_eq!(refused(interrupt(&url, "call-1").await), (501, "interrupt_unavailable".into()));
}

#[tokio::test]
async fn a_conversation_longer_than_its_limit_is_stopped() {
    let voice = slow_voice();
    let gw = gateway_with(voice.clone(), GatewaySettings { max_conversation: Some(Duration::from_millis(500)), metrics_namespace: None, ..Default::default() });
    let url = serve(gw).await;
    let body = SpeakBody { text: Some("A sentence to speak. ".repeat(50)), ..Default::default() };
    let r = speak(&url, &body, &CallOptions::default()).await.unwrap();
    assert_eq!(r.error.expect("an error").code, "conversation_too_long");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(voice.live_sessions(), 0);
}
