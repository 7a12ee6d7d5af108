//! A server that stops waits for every task of a live conversation: the scheduler, the relays around
//! the voice, the agent's reader and the voice's own session task, however deep each was spawned
//! (`earshot_core::tasks`). What `earshot serve` does once its streams end is done here by hand.

#![allow(clippy::disallowed_methods)] // a test spawns its own helpers; clippy.toml keeps the crates on the tracker

use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use earshot_agents::{ScriptedAgent, ScriptedConfig};
use earshot_backends::{SyntheticBackend, SyntheticConfig};
use earshot_client::{speak, CallOptions, SpeakBody};
use earshot_gateway::{Gateway, GatewaySettings};

#[tokio::test]
async fn shutdown_waits_for_every_task_of_a_live_conversation() {
    let voice = Arc::new(SyntheticBackend::new(SyntheticConfig {
        first_audio: Duration::from_millis(10),
        chars_per_second: 50.0,
        // A voice whose session takes a moment to close: a wait that missed its task returns before it is done.
        closing: Duration::from_millis(300),
        ..Default::default()
    }));
    let agent = ScriptedAgent::new(ScriptedConfig { tokens_per_second: 20.0, first_token_delay: Duration::ZERO, ..Default::default() });
    let gateway = Arc::new(Gateway::new(vec![voice.clone()], Arc::new(agent), GatewaySettings { metrics_namespace: None, ..Default::default() }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(axum::serve(listener, earshot_gateway::router(gateway.clone())).into_future());

    // A long answer, from the agent (its reader task) through the cache's relay to the voice.
    let body = SpeakBody { prompt: Some("long".into()), ..Default::default() };
    let speaking = tokio::spawn(async move { speak(&url, &body, &CallOptions::default()).await });
    while voice.live_sessions() == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!speaking.is_finished() && !gateway.tasks().is_empty(), "the conversation is live");

    gateway.shutdown().cancel();
    gateway.tasks().close();
    tokio::time::timeout(Duration::from_secs(5), gateway.tasks().wait()).await.expect("every task ends once the conversations are cancelled");
    // Nothing of the conversation runs once the wait is over: not even the voice's session task, which
    // the backend spawned with no tracker in sight.
    assert_eq!(voice.live_sessions(), 0, "the voice's session task outlived the wait");
    assert!(gateway.tasks().is_empty());
    let r = tokio::time::timeout(Duration::from_secs(5), speaking).await.expect("the stream ends").unwrap().unwrap();
    assert_eq!(r.error.map(|e| e.code).as_deref(), Some("shutting_down"));
}
