//! Behind IAM the owner of a conversation is the caller's principal, and an assumed role's session is its role:
//! the session name is the caller's choice, so two names of one role are one owner for every per-owner limit and
//! for interrupts; a deployment may make each session an owner. The principal reaches the router as the Lambda
//! binary puts it there, an [`IamCaller`] request extension (here from a header a layer reads, in place of the
//! function URL's request context).

#![allow(clippy::disallowed_methods)] // a test spawns its own helpers; clippy.toml keeps the crates on the tracker

use std::sync::Arc;
use std::time::Duration;

use earshot_agents::{ScriptedAgent, ScriptedConfig};
use earshot_backends::{SyntheticBackend, SyntheticConfig};
use earshot_gateway::{Gateway, GatewaySettings, IamCaller};

const PRINCIPAL: &str = "x-test-iam-principal";

/// Serves `gateway` as the Lambda binary does behind IAM: each request carries its caller's principal.
async fn serve_behind_iam(gateway: Gateway) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let router = earshot_gateway::router(Arc::new(gateway)).layer(axum::middleware::map_request(|mut request: axum::extract::Request| async move {
        if let Some(principal) = request.headers().get(PRINCIPAL).and_then(|v| v.to_str().ok()).map(str::to_string) {
            request.extensions_mut().insert(IamCaller(principal));
        }
        request
    }));
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    url
}

fn gateway(iam_session_owners: bool) -> Gateway {
    // A voice slow enough that a conversation is still live while the next request comes.
    let voice = Arc::new(SyntheticBackend::new(SyntheticConfig { first_audio: Duration::from_millis(10), chars_per_second: 20.0, ..Default::default() }));
    let agent = ScriptedAgent::new(ScriptedConfig { tokens_per_second: 1000.0, first_token_delay: Duration::ZERO, ..Default::default() });
    let settings = GatewaySettings { metrics_namespace: None, max_conversations_per_owner: Some(1), iam_session_owners, ..Default::default() };
    Gateway::new(vec![voice], Arc::new(agent), settings)
}

fn session(name: &str) -> String {
    format!("arn:aws:sts::123456789012:assumed-role/voice-app/{name}")
}

/// Starts a conversation as `principal` under `id` and returns the response, its stream left open.
async fn speak_as(url: &str, principal: &str, id: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{url}/v1/speak"))
        .header(PRINCIPAL, principal)
        .json(&serde_json::json!({"text": "A sentence that takes a while to speak. ".repeat(20), "conversation_id": id}))
        .send()
        .await
        .expect("an answer")
}

async fn code(response: reqwest::Response) -> (u16, String) {
    let status = response.status().as_u16();
    let body: serde_json::Value = response.json().await.unwrap_or_default();
    (status, body["error"]["code"].as_str().unwrap_or("").to_string())
}

#[tokio::test]
async fn two_session_names_of_one_role_are_one_owner_unless_the_deployment_says_otherwise() {
    let url = serve_behind_iam(gateway(false)).await;
    let live = speak_as(&url, &session("alice-1"), "call-1").await;
    assert_eq!(live.status().as_u16(), 200);
    // A new session name does not escape the role's one place.
    assert_eq!(code(speak_as(&url, &session("fresh-name-42"), "call-2").await).await, (429, "too_many_conversations".into()));
    // Another role is another owner.
    let other = speak_as(&url, "arn:aws:sts::123456789012:assumed-role/other-app/alice-1", "call-1").await;
    assert_eq!(other.status().as_u16(), 200);
    // Another session of the role reaches the role's conversation: the role owns it.
    let stopped =
        reqwest::Client::new().post(format!("{url}/v1/conversations/call-1/interrupt")).header(PRINCIPAL, session("someone-else")).send().await.unwrap();
    assert_eq!(stopped.status().as_u16(), 202);
    let said = live.text().await.unwrap();
    assert!(said.contains("interrupted"), "the role's conversation was stopped: {}", &said[said.len().saturating_sub(300)..]);
    drop(other);

    // Each session an owner, as the deployment chose: the second session has a place of its own.
    let url = serve_behind_iam(gateway(true)).await;
    let _first = speak_as(&url, &session("alice-1"), "call-1").await;
    let second = speak_as(&url, &session("bob-1"), "call-2").await;
    assert_eq!(second.status().as_u16(), 200);
}
