//! The Bedrock AgentCore Runtime stand-in: `InvokeAgentRuntime` (`POST /runtimes/{arn}/invocations`,
//! the runtime session in `X-Amzn-Bedrock-AgentCore-Runtime-Session-Id`, the payload as the body), shaped
//! after the API reference and the SDK's model: a session id of fewer than 33 characters is a
//! `ValidationException`; a runtime ARN ending in `missing` is `ResourceNotFoundException`; a prompt
//! holding `[[ThrottlingException]]` is throttled. The agent answers the payload's `prompt` with the
//! scripted agent's samples, as an agent that yields text chunks (AWS's Strands samples) is streamed by the
//! runtime: `text/event-stream`, each event's data a JSON string. Every request's session id and payload
//! are kept for tests.

use std::sync::Arc;
use std::time::Duration;

use earshot_agents::scripted::ScriptItem;
use earshot_agents::tokens::llm_tokens;
use earshot_agents::ScriptedAgent;
use earshot_core::agent::AgentInput;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};

use crate::eventstream::channel_body;
use crate::server::{error, Body, State};

pub async fn handle(req: Request<Incoming>, state: Arc<State>, path: &str) -> Response<Body> {
    let arn = percent_decode(path.trim_start_matches("/runtimes/").trim_end_matches("/invocations"));
    let session = req.headers().get("x-amzn-bedrock-agentcore-runtime-session-id").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let Ok(body) = req.into_body().collect().await else {
        return error(StatusCode::BAD_REQUEST, "ValidationException", "unreadable body");
    };
    if session.len() < 33 {
        return error(StatusCode::BAD_REQUEST, "ValidationException", "runtimeSessionId must be at least 33 characters");
    }
    if arn.ends_with("missing") {
        return error(StatusCode::NOT_FOUND, "ResourceNotFoundException", &format!("no agent runtime {arn}"));
    }
    let payload: serde_json::Value = serde_json::from_slice(&body.to_bytes()).unwrap_or_default();
    state.stats.agentcore_calls.lock().unwrap().push((session, payload.clone()));
    let prompt = payload["prompt"].as_str().unwrap_or("").to_string();
    if prompt.contains("[[ThrottlingException]]") {
        return error(StatusCode::TOO_MANY_REQUESTS, "ThrottlingException", "rate exceeded (requested by the test)");
    }
    let script = ScriptedAgent::default().script_for(&AgentInput::prompt(prompt.clone()));
    let interval = Duration::from_secs_f64(1.0 / state.config.tokens_per_second.max(0.1));
    let (out, stream) = channel_body();
    tokio::spawn(async move {
        for item in script.0 {
            match item {
                ScriptItem::Text(text) => {
                    for token in llm_tokens(&text) {
                        tokio::time::sleep(interval).await;
                        let event = format!("data: {}\n\n", serde_json::Value::String(token));
                        if out.send(bytes::Bytes::from(event)).await.is_err() {
                            return;
                        }
                    }
                }
                // A tool call inside the agent is silence on the wire: the runtime streams only what the
                // agent yields.
                ScriptItem::Pause(d) | ScriptItem::Wait(d) => tokio::time::sleep(d).await,
            }
        }
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("x-amzn-bedrock-agentcore-runtime-session-id", "echoed")
        .body(stream.boxed_unsync())
        .expect("a stream")
}

/// The ARN as sent: the SDK percent-encodes it as one path segment.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
