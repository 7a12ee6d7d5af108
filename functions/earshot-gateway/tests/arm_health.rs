//! A sick arm remembered across conversations, over HTTP: the first conversation fails over from it, the
//! next passes it over at once (`failover_from: backend_passed_over`), and `/healthz` shows it.

mod common;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use common::serve;
use earshot_agents::{ScriptedAgent, ScriptedConfig};
use earshot_backends::{SyntheticBackend, SyntheticConfig};
use earshot_client::{speak, CallOptions, SpeakBody};
use earshot_core::speech::{SessionOptions, SpeechBackend, SpeechError, SpeechSession, Voice};
use earshot_gateway::{Gateway, GatewaySettings, Routing};

/// A voice that cannot be reached: every open and every health check fails.
struct Unreachable;

#[async_trait]
impl SpeechBackend for Unreachable {
    fn name(&self) -> &str {
        "primary"
    }
    fn voices(&self) -> Vec<Voice> {
        vec![Voice { id: "v".into(), language: "en".into(), description: "unreachable".into() }]
    }
    fn default_voice(&self) -> String {
        "v".into()
    }
    async fn open(&self, _: SessionOptions) -> Result<SpeechSession, SpeechError> {
        Err(SpeechError::new("backend_unreachable", "connection refused", true))
    }
    async fn health(&self) -> Result<(), SpeechError> {
        Err(SpeechError::new("backend_unreachable", "connection refused", true))
    }
}

#[tokio::test]
async fn a_sick_arm_is_passed_over_by_the_next_conversation_and_healthz_shows_it() {
    let voice = Arc::new(SyntheticBackend::new(SyntheticConfig { first_audio: Duration::from_millis(5), chars_per_second: 2000.0, ..Default::default() }));
    let agent = ScriptedAgent::new(ScriptedConfig { tokens_per_second: 1000.0, first_token_delay: Duration::ZERO, ..Default::default() });
    let routing = Routing { weights: vec![("primary".into(), 100)], failover: true, ..Default::default() };
    let settings = GatewaySettings { metrics_namespace: None, routing, ..Default::default() };
    let url = serve(Gateway::new(vec![Arc::new(Unreachable), voice], Arc::new(agent), settings)).await;

    let body = SpeakBody { text: Some("Hello there.".into()), ..Default::default() };
    let failover_from = |r: &earshot_client::Received| r.timeline.as_ref().and_then(|t| t.failover_from.clone());
    let first = speak(&url, &body, &CallOptions::default()).await.unwrap();
    assert_eq!((first.header("x-earshot-backend"), failover_from(&first).as_deref()), (Some("synthetic"), Some("backend_unreachable")));
    let second = speak(&url, &body, &CallOptions::default()).await.unwrap();
    assert_eq!((second.header("x-earshot-backend"), failover_from(&second).as_deref()), (Some("synthetic"), Some("backend_passed_over")));

    let health = healthz(&url).await;
    assert_eq!(health["backends"]["primary"]["passed_over"]["code"], "backend_unreachable", "{health}");
    assert!(health["backends"]["primary"]["passed_over"]["probe_in_s"].as_u64().unwrap() <= 5, "{health}");
    assert!(health["backends"]["synthetic"].get("passed_over").is_none(), "{health}");
}

/// `GET /healthz`'s JSON, over a plain HTTP/1.1 connection (the test needs no client crate for one GET).
async fn healthz(url: &str) -> serde_json::Value {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(url.trim_start_matches("http://")).await.unwrap();
    stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (_, body) = response.split_once("\r\n\r\n").expect("a response with a body");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"))
}
