//! The Bedrock stand-in: `ConverseStream` answering with the scripted agent's answers (the same
//! samples as local runs) as `contentBlockDelta` events at a chosen token rate, framed as Bedrock
//! frames them. A prompt holding `[[ThrottlingException]]` is refused with that exception before the
//! stream; one holding `[[ModelStreamErrorException]]` fails mid-stream; one holding `[[filtered]]`
//! stops with `content_filtered`. A model id starting with `denied` is refused `AccessDeniedException`
//! (403), as Bedrock refuses a role without `bedrock:InvokeModelWithResponseStream` on the model
//! (Bedrock API reference, ConverseStream: Errors).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use earshot_agents::scripted::ScriptItem;
use earshot_agents::tokens::llm_tokens;
use earshot_agents::ScriptedAgent;
use earshot_core::agent::AgentInput;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};

use crate::eventstream::{channel_body, event, exception};
use crate::server::{error, stream_response, Body, State};

pub async fn handle(req: Request<Incoming>, state: Arc<State>, path: &str) -> Response<Body> {
    let model = path.trim_start_matches("/model/").trim_end_matches("/converse-stream").to_string();
    let Ok(body) = req.into_body().collect().await else {
        return error(StatusCode::BAD_REQUEST, "ValidationException", "unreadable body");
    };
    let json: serde_json::Value = match serde_json::from_slice(&body.to_bytes()) {
        Ok(j) => j,
        Err(e) => return error(StatusCode::BAD_REQUEST, "ValidationException", &format!("the body is not JSON: {e}")),
    };
    let prompt = json["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"][0]["text"].as_str()).unwrap_or("").to_string();
    if prompt.is_empty() {
        return error(StatusCode::BAD_REQUEST, "ValidationException", "the last message has no text");
    }
    if model.is_empty() || model == "missing" {
        return error(StatusCode::NOT_FOUND, "ResourceNotFoundException", "the model does not exist");
    }
    if model.starts_with("denied") {
        return error(StatusCode::FORBIDDEN, "AccessDeniedException", "the role may not invoke this model (requested by the test)");
    }
    if prompt.contains("[[ThrottlingException]]") {
        return error(StatusCode::TOO_MANY_REQUESTS, "ThrottlingException", "too many requests (requested by the test)");
    }
    state.stats.bedrock_calls.fetch_add(1, Ordering::SeqCst);
    let script = ScriptedAgent::default().script_for(&AgentInput::prompt(prompt.clone()));
    let interval = Duration::from_secs_f64(1.0 / state.config.tokens_per_second.max(0.1));
    let (out, body) = channel_body();
    tokio::spawn(async move {
        let json_event = |name: &str, value: serde_json::Value| event(name, "application/json", &[], value.to_string());
        if out.send(json_event("messageStart", serde_json::json!({"role": "assistant"}))).await.is_err() {
            return;
        }
        let mut tokens = 0;
        for item in script.0 {
            match item {
                ScriptItem::Text(text) => {
                    for token in llm_tokens(&text) {
                        tokio::time::sleep(interval).await;
                        tokens += 1;
                        let delta = serde_json::json!({"contentBlockIndex": 0, "delta": {"text": token}});
                        if out.send(json_event("contentBlockDelta", delta)).await.is_err() {
                            return;
                        }
                        if tokens == 3 && prompt.contains("[[ModelStreamErrorException]]") {
                            let _ = out
                                .send(exception("modelStreamErrorException", &serde_json::json!({"message": "the model failed (requested by the test)"})))
                                .await;
                            return;
                        }
                    }
                }
                // A signalled pause is a tool call, as a model on Converse makes one: a tool-use block
                // starts (ConverseStream API reference: ContentBlockStartEvent, start.toolUse). Bedrock
                // itself would then end the message (stopReason tool_use) for the caller to run the tool;
                // the stand-in goes on as an agent loop that ran it would, so that one stream exercises
                // both the pause and the speech after it.
                ScriptItem::Pause(d) => {
                    let start = serde_json::json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tooluse_standin", "name": "lookup_order"}}});
                    if out.send(json_event("contentBlockStart", start)).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(d).await;
                }
                ScriptItem::Wait(d) => tokio::time::sleep(d).await,
            }
        }
        let stop = if prompt.contains("[[filtered]]") { "content_filtered" } else { "end_turn" };
        let _ = out.send(json_event("contentBlockStop", serde_json::json!({"contentBlockIndex": 0}))).await;
        let _ = out.send(json_event("messageStop", serde_json::json!({"stopReason": stop}))).await;
        let usage = serde_json::json!({"usage": {"inputTokens": 10, "outputTokens": tokens, "totalTokens": tokens + 10}, "metrics": {"latencyMs": 100}});
        let _ = out.send(json_event("metadata", usage)).await;
    });
    stream_response(body, &[])
}
