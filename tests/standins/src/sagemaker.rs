//! The SageMaker stand-in: `InvokeEndpointWithBidirectionalStream` bridged to the Kokoro container's
//! WebSocket, exactly as SageMaker bridges to a container: a request `PayloadPart` whose `DataType`
//! is `UTF8` becomes a text frame and any other a binary frame; a text frame comes back as a `UTF8`
//! part and a binary frame as a `BINARY` part. An endpoint named `fail-model-stream` or
//! `fail-internal-stream` fails after its first audio with `ModelStreamError` or
//! `InternalStreamFailure`, for tests; one named `fail-before-audio` fails with `ModelStreamError` as soon
//! as the first request reaches it, before any audio. One whose name starts with `untagged` sends its
//! response parts without a `DataType` header: SageMaker's API reference lists the header as optional
//! (`PayloadPart.DataType`, "UTF8 | BINARY", not required), so a client must not depend on it. One whose
//! name starts with `denied` answers `AccessDeniedException` (403), as for a role without
//! `sagemaker:InvokeEndpointWithBidirectionalStream`. One whose name starts with `parted` sends every
//! container message as AWS documents a stream may: in several parts (`CompletionState` `PARTIAL` then
//! `COMPLETE`, cut anywhere, inside a UTF-8 character too) and every part `DataType: BINARY`, as AWS's own
//! WebSocket bridge samples send text; the others send each message whole, marked `COMPLETE`. One whose
//! name starts with `draining` says `draining` (as a container does on SIGTERM) after the first audio of
//! each stream, then serves on, counting any `synthesize` it is sent after that (a client that moves to a
//! new stream sends none).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use tokio_tungstenite::tungstenite::Message;

use crate::eventstream::{channel_body, event, exception, read_events};
use crate::server::{error, stream_response, Body, State};

pub async fn handle(req: Request<Incoming>, state: Arc<State>, path: &str) -> Response<Body> {
    let name = path.trim_start_matches("/endpoints/").trim_end_matches("/invocations-bidirectional-stream").to_string();
    if name.is_empty() || name == "missing" {
        return error(StatusCode::BAD_REQUEST, "ValidationError", &format!("Endpoint {name} not found."));
    }
    // A caller whose role lacks the bidirectional action, as IAM answers it.
    if name.starts_with("denied") {
        let message = format!(
            "User: arn:aws:sts::123456789012:assumed-role/earshot-gateway/fn is not authorized to perform: sagemaker:InvokeEndpointWithBidirectionalStream on resource: arn:aws:sagemaker:us-east-1:123456789012:endpoint/{name}"
        );
        return error(StatusCode::FORBIDDEN, "AccessDeniedException", &message);
    }
    let requested = req.headers().get("x-amzn-sagemaker-target-variant").and_then(|v| v.to_str().ok()).map(str::to_string);
    *state.stats.last_target_variant.lock().expect("stats lock") = requested.clone();
    let variant = requested.unwrap_or_else(|| "AllTraffic".into());
    let ws = match tokio_tungstenite::connect_async_with_config(state.kokoro_ws_url(), None, true).await {
        Ok((ws, _)) => ws,
        Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailableError", &format!("the model container is unavailable: {e}")),
    };
    state.stats.sagemaker_streams.fetch_add(1, Ordering::SeqCst);
    let (out, body) = channel_body();
    let mut events = read_events(req.into_body());
    let fail_after_audio = match name.as_str() {
        "fail-model-stream" => {
            Some(("ModelStreamError", serde_json::json!({"Message": "the model stream failed (requested by the test)", "ErrorCode": "ModelError"})))
        }
        "fail-internal-stream" => Some(("InternalStreamFailure", serde_json::json!({"Message": "the stream failed (requested by the test)"}))),
        _ => None,
    };
    let fail_before_audio = name == "fail-before-audio";
    let drains = name.starts_with("draining");
    let mut said_draining = false;
    let framing = if name.starts_with("untagged") {
        Framing::Untagged
    } else if name.starts_with("parted") {
        Framing::Parted
    } else {
        Framing::Whole
    };
    tokio::spawn(async move {
        let (mut sink, mut stream) = ws.split();
        let mut input_open = true;
        loop {
            tokio::select! {
                input = events.recv(), if input_open => match input {
                    Some(Ok(_)) if fail_before_audio => {
                        let _ = out.send(exception("ModelStreamError", &serde_json::json!({"Message": "the model failed before any audio (requested by the test)", "ErrorCode": "ModelError"}))).await;
                        break;
                    }
                    Some(Ok(e)) if e.event_type == "PayloadPart" => {
                        let frame = if e.header("DataType") == Some("UTF8") {
                            match String::from_utf8(e.payload.to_vec()) {
                                Ok(text) => {
                                    if let Ok(message) = serde_json::from_str::<serde_json::Value>(&text) {
                                        if message["type"] == "synthesize" {
                                            if said_draining {
                                                state.stats.sagemaker_after_draining.fetch_add(1, Ordering::SeqCst);
                                            }
                                            state.stats.sagemaker_synthesize.lock().expect("stats lock").push(message);
                                        }
                                    }
                                    Message::Text(text.into())
                                }
                                Err(_) => {
                                    let _ = out.send(exception("InputValidationError", &serde_json::json!({"Message": "a UTF8 part is not UTF-8"}))).await;
                                    break;
                                }
                            }
                        } else {
                            Message::Binary(e.payload.to_vec().into())
                        };
                        if sink.send(frame).await.is_err() {
                            break;
                        }
                    }
                    Some(Ok(_)) => {}
                    Some(Err(message)) => {
                        let _ = out.send(exception("InputValidationError", &serde_json::json!({"Message": message}))).await;
                        break;
                    }
                    None => {
                        // The caller ended its input: SageMaker closes the container's side.
                        input_open = false;
                        let _ = sink.close().await;
                    }
                },
                message = stream.next() => {
                    let part = match message {
                        Some(Ok(Message::Text(text))) => framing.parts(Bytes::from(text.to_string()), "UTF8"),
                        Some(Ok(Message::Binary(bytes))) => {
                            let mut parts = framing.parts(Bytes::from(bytes.to_vec()), "BINARY");
                            if drains && !said_draining {
                                said_draining = true;
                                parts.extend(framing.parts(Bytes::from(r#"{"type": "draining", "v": 1, "seconds": 20}"#), "UTF8"));
                            }
                            if let Some((name, json)) = &fail_after_audio {
                                for part in parts {
                                    let _ = out.send(part).await;
                                }
                                let _ = out.send(exception(name, json)).await;
                                break;
                            }
                            parts
                        }
                        Some(Ok(Message::Close(_))) | None => break,
                        Some(Ok(_)) => continue,
                        Some(Err(e)) => {
                            let _ = out.send(exception("ModelStreamError", &serde_json::json!({"Message": format!("the container connection failed: {e}"), "ErrorCode": "ContainerError"}))).await;
                            break;
                        }
                    };
                    let mut gone = false;
                    for part in part {
                        gone = gone || out.send(part).await.is_err();
                    }
                    if gone {
                        break;
                    }
                }
            }
        }
    });
    stream_response(body, &[("x-amzn-invoked-production-variant", variant)])
}

/// How the stand-in sends a container message back as `PayloadPart`s.
#[derive(Clone, Copy)]
enum Framing {
    /// One part, its `DataType` as the frame's kind, `CompletionState: COMPLETE`.
    Whole,
    /// One part with neither header (both are optional in the API reference).
    Untagged,
    /// Up to three parts, all `BINARY`, the last `COMPLETE` and the others `PARTIAL`.
    Parted,
}

impl Framing {
    fn parts(self, message: Bytes, data_type: &'static str) -> Vec<Bytes> {
        let part = |bytes: Bytes, headers: &[(&str, &str)]| event("PayloadPart", "application/octet-stream", headers, bytes);
        match self {
            Framing::Whole => vec![part(message, &[("DataType", data_type), ("CompletionState", "COMPLETE")])],
            Framing::Untagged => vec![part(message, &[])],
            Framing::Parted => {
                let n = message.len();
                let cuts: Vec<usize> = [0, n / 3, 2 * n / 3, n].into_iter().collect();
                let spans: Vec<(usize, usize)> = cuts.windows(2).map(|w| (w[0], w[1])).filter(|(a, b)| b > a).collect();
                let last = spans.len().saturating_sub(1);
                spans
                    .iter()
                    .enumerate()
                    .map(|(i, &(a, b))| {
                        part(message.slice(a..b), &[("DataType", "BINARY"), ("CompletionState", if i == last { "COMPLETE" } else { "PARTIAL" })])
                    })
                    .collect()
            }
        }
    }
}

/// `DescribeEndpoint` (JSON 1.1), which the backend's health probe calls. Every endpoint the stand-in
/// streams for is `InService`, except `missing-*`, which SageMaker would not know (its
/// `ValidationException`, as the API reference and moto answer).
pub async fn describe_endpoint(req: Request<Incoming>) -> Response<Body> {
    use http_body_util::BodyExt;
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return error(StatusCode::BAD_REQUEST, "ValidationException", "unreadable body"),
    };
    let input: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let Some(name) = input.get("EndpointName").and_then(|v| v.as_str()) else {
        return error(StatusCode::BAD_REQUEST, "ValidationException", "EndpointName is required");
    };
    if name.starts_with("missing-") {
        return error(StatusCode::BAD_REQUEST, "ValidationException", &format!("Could not find endpoint \"{name}\"."));
    }
    let answer = serde_json::json!({
        "EndpointName": name,
        "EndpointArn": format!("arn:aws:sagemaker:us-east-1:123456789012:endpoint/{name}"),
        "EndpointConfigName": format!("{name}-config"),
        "EndpointStatus": "InService",
        "CreationTime": 1_700_000_000.0,
        "LastModifiedTime": 1_700_000_000.0,
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/x-amz-json-1.1")
        .body(crate::server::full(answer.to_string()))
        .expect("a describe response")
}
