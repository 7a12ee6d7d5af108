//! Stand-ins for the agents a team brings (plain HTTP, as an agent on the same network would be):
//!
//! - `POST /v1/chat/completions`: an OpenAI-compatible chat completions endpoint, streaming as OpenAI's
//!   API reference describes (`chat.completion.chunk` objects as `data:` events, a role chunk first, text
//!   in `choices[0].delta.content`, a tool call as `delta.tool_calls` whose first chunk carries the call's
//!   `id`, a last chunk with `finish_reason`, then `data: [DONE]`; errors as `{"error": {...}}` with the
//!   HTTP status). The official `openai` Python package reads every stream it serves, in a test.
//! - `POST /agent/sse`, `/agent/ndjson`, `/agent/text`: an agent of a team's own, answering the request
//!   body `{"prompt", "messages"}` as SSE (`{"delta": {"text": …}}` events, `event: pause`, `[DONE]`),
//!   NDJSON (`{"text": …}` lines, `{"type": "pause"}`) or a plain chunked text body.
//!
//! Both answer with the scripted agent's samples for the last user turn, at a chosen token rate, a
//! signalled pause becoming a tool call. Markers in the prompt ask for failures: `[[401]]`, `[[429]]`,
//! `[[500]]` before the stream; `[[midstream]]` (an error object after three tokens), `[[cut]]` (the
//! stream ends without `[DONE]`), `[[filtered]]` (`finish_reason: content_filter`). And the agents
//! that misbehave, for earshot's limits: `[[hang]]` (never answers, not even headers), `[[silent]]`
//! (headers, then nothing), `[[stall]]` (one token, then silence), `[[endless]]` (one event or line that
//! never ends), `[[huge-error]]` (a 500 whose body is 100 MB). Each waits or writes only while the
//! client is still there.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use earshot_agents::scripted::ScriptItem;
use earshot_agents::tokens::llm_tokens;
use earshot_agents::ScriptedAgent;
use earshot_core::agent::AgentInput;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

use crate::eventstream::channel_body;
use crate::server::Body;

/// What the last request carried, for tests to check.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub path: String,
    pub body: serde_json::Value,
    pub authorization: Option<String>,
    pub headers: Vec<(String, String)>,
}

pub struct AgentStandIns {
    pub url: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

/// Starts the agent stand-ins on a free port, answering at `tokens_per_second`.
pub async fn start_agents(tokens_per_second: f64) -> std::io::Result<AgentStandIns> {
    start_agents_on(0, tokens_per_second, None).await
}

/// Starts the agent stand-ins on `port` (0: a free one); with `required_key`, a request without
/// `Authorization: Bearer <key>` is refused 401, as a real endpoint refuses a wrong key.
pub async fn start_agents_on(port: u16, tokens_per_second: f64, required_key: Option<String>) -> std::io::Result<AgentStandIns> {
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    let url = format!("http://127.0.0.1:{}", listener.local_addr()?.port());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let shared = seen.clone();
    let interval = Duration::from_secs_f64(1.0 / tokens_per_second.max(0.1));
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            let seen = shared.clone();
            let required_key = required_key.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let seen = seen.clone();
                    let refused = required_key
                        .as_ref()
                        .is_some_and(|key| req.headers().get("authorization").and_then(|v| v.to_str().ok()) != Some(format!("Bearer {key}").as_str()));
                    async move {
                        if refused {
                            return Ok::<_, Infallible>(api_error(StatusCode::UNAUTHORIZED, "invalid_request_error", "Incorrect API key provided"));
                        }
                        Ok::<_, Infallible>(handle(req, seen, interval).await)
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new()).serve_connection(TokioIo::new(tcp), service).await;
            });
        }
    });
    Ok(AgentStandIns { url, seen })
}

fn full(status: StatusCode, content_type: &str, body: String) -> Response<Body> {
    Response::builder().status(status).header("content-type", content_type).body(Full::new(Bytes::from(body)).boxed_unsync()).expect("a response")
}

/// An OpenAI-style error body with its status.
fn api_error(status: StatusCode, kind: &str, message: &str) -> Response<Body> {
    full(status, "application/json", serde_json::json!({"error": {"message": message, "type": kind, "param": null, "code": null}}).to_string())
}

async fn handle(req: Request<Incoming>, seen: Arc<Mutex<Vec<Seen>>>, interval: Duration) -> Response<Body> {
    let path = req.uri().path().to_string();
    let headers: Vec<(String, String)> = req.headers().iter().map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string())).collect();
    let authorization = req.headers().get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string);
    let Ok(body) = req.into_body().collect().await else { return api_error(StatusCode::BAD_REQUEST, "invalid_request_error", "unreadable body") };
    let body: serde_json::Value = match serde_json::from_slice(&body.to_bytes()) {
        Ok(b) => b,
        Err(e) => return api_error(StatusCode::BAD_REQUEST, "invalid_request_error", &format!("the body is not JSON: {e}")),
    };
    seen.lock().unwrap().push(Seen { path: path.clone(), body: body.clone(), authorization, headers });
    let prompt = match path.as_str() {
        "/v1/chat/completions" => {
            if body["stream"] != serde_json::json!(true) {
                return api_error(StatusCode::BAD_REQUEST, "invalid_request_error", "this stand-in only streams (stream: true)");
            }
            body["messages"].as_array().and_then(|m| m.iter().rev().find(|m| m["role"] == "user")).and_then(|m| m["content"].as_str()).unwrap_or("").to_string()
        }
        "/agent/sse" | "/agent/ndjson" | "/agent/text" => body["prompt"].as_str().unwrap_or("").to_string(),
        _ => return api_error(StatusCode::NOT_FOUND, "invalid_request_error", &format!("no route {path}")),
    };
    for (marker, status, kind) in [
        ("[[401]]", StatusCode::UNAUTHORIZED, "invalid_request_error"),
        ("[[429]]", StatusCode::TOO_MANY_REQUESTS, "rate_limit_exceeded"),
        ("[[500]]", StatusCode::INTERNAL_SERVER_ERROR, "server_error"),
    ] {
        if prompt.contains(marker) {
            return api_error(status, kind, &format!("{} (requested by the test)", status.canonical_reason().unwrap_or("error")));
        }
    }
    if prompt.contains("[[hang]]") {
        // Long enough for any limit under test; the connection's end drops this future.
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
    let (out, stream) = channel_body();
    if prompt.contains("[[huge-error]]") {
        tokio::spawn(async move {
            // One megabyte shared by every chunk: the stand-in itself holds no more than that.
            let megabyte = Bytes::from(vec![b'x'; 1 << 20]);
            for _ in 0..100 {
                if out.send(megabyte.clone()).await.is_err() {
                    return;
                }
            }
        });
        return Response::builder().status(StatusCode::INTERNAL_SERVER_ERROR).header("content-type", "text/html").body(stream.boxed_unsync()).expect("a body");
    }
    let script = ScriptedAgent::default().script_for(&AgentInput::prompt(prompt.clone()));
    let shape = path.clone();
    tokio::spawn(async move {
        if prompt.contains("[[silent]]") {
            out.closed().await;
            return;
        }
        if prompt.contains("[[endless]]") {
            let opening = match shape.as_str() {
                "/agent/ndjson" => "{\"text\": \"",
                "/agent/text" => "",
                _ => "data: ",
            };
            let run = Bytes::from(vec![b'x'; 64 << 10]);
            if out.send(Bytes::from(opening)).await.is_err() {
                return;
            }
            while out.send(run.clone()).await.is_ok() {}
            return;
        }
        let send = |s: String| {
            let out = out.clone();
            async move { out.send(Bytes::from(s)).await.is_ok() }
        };
        let openai = shape == "/v1/chat/completions";
        let chunk = |delta: serde_json::Value, finish: Option<&str>| {
            let c = serde_json::json!({"id": "chatcmpl-standin", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": "standin",
                "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]});
            format!("data: {c}\n\n")
        };
        if openai && !send(chunk(serde_json::json!({"role": "assistant", "content": ""}), None)).await {
            return;
        }
        let mut tokens = 0;
        let mut calls = 0;
        for item in script.0 {
            match item {
                ScriptItem::Text(text) => {
                    for token in llm_tokens(&text) {
                        tokio::time::sleep(interval).await;
                        tokens += 1;
                        let framed = match shape.as_str() {
                            "/v1/chat/completions" => chunk(serde_json::json!({"content": token}), None),
                            "/agent/sse" => format!("data: {}\n\n", serde_json::json!({"delta": {"text": token}})),
                            "/agent/ndjson" => format!("{}\n", serde_json::json!({"text": token})),
                            _ => token.clone(),
                        };
                        if !send(framed).await {
                            return;
                        }
                        if tokens == 3 && prompt.contains("[[midstream]]") {
                            let failure = match shape.as_str() {
                                "/agent/sse" => "event: error\ndata: {\"message\": \"the agent failed (requested by the test)\"}\n\n".to_string(),
                                _ => format!(
                                    "data: {}\n\n",
                                    serde_json::json!({"error": {"message": "the model failed (requested by the test)", "type": "server_error"}})
                                ),
                            };
                            let _ = send(failure).await;
                            return;
                        }
                        if tokens == 3 && prompt.contains("[[cut]]") {
                            return;
                        }
                        if tokens == 1 && prompt.contains("[[stall]]") {
                            out.closed().await;
                            return;
                        }
                    }
                }
                ScriptItem::Pause(d) => {
                    calls += 1;
                    let framed = match shape.as_str() {
                        "/v1/chat/completions" => {
                            chunk(
                                serde_json::json!({"tool_calls": [{"index": 0, "id": format!("call_{calls}"), "type": "function", "function": {"name": "lookup_order", "arguments": ""}}]}),
                                None,
                            ) + &chunk(serde_json::json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"order\": 1}"}}]}), None)
                        }
                        "/agent/sse" => "event: pause\ndata: {}\n\n".to_string(),
                        "/agent/ndjson" => "{\"type\": \"pause\"}\n".to_string(),
                        _ => String::new(),
                    };
                    if !framed.is_empty() && !send(framed).await {
                        return;
                    }
                    tokio::time::sleep(d).await;
                }
                ScriptItem::Wait(d) => tokio::time::sleep(d).await,
            }
        }
        let end = match shape.as_str() {
            "/v1/chat/completions" => {
                let finish = if prompt.contains("[[filtered]]") { "content_filter" } else { "stop" };
                chunk(serde_json::json!({}), Some(finish)) + "data: [DONE]\n\n"
            }
            "/agent/sse" => "data: [DONE]\n\n".to_string(),
            _ => String::new(),
        };
        if !end.is_empty() {
            let _ = send(end).await;
        }
    });
    let content_type = match path.as_str() {
        "/agent/ndjson" => "application/x-ndjson",
        "/agent/text" => "text/plain; charset=utf-8",
        _ => "text/event-stream",
    };
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", content_type)
        .header("cache-control", "no-cache")
        .body(stream.boxed_unsync())
        .expect("a stream")
}
