//! The AWS event-stream framing, both ways, using `aws-smithy-eventstream`: request bodies are
//! read as signed envelopes (`:chunk-signature`, `:date`) whose payload is the event message; response
//! events and exceptions are written as unsigned messages.

use std::convert::Infallible;

use aws_smithy_eventstream::frame::{read_message_from, write_message_to, DecodedFrame, MessageFrameDecoder};
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::{Frame, Incoming};
use tokio::sync::mpsc;

/// An event read from a request body.
#[derive(Debug, Clone)]
pub struct Event {
    pub event_type: String,
    pub headers: Vec<(String, String)>,
    pub payload: Bytes,
}

impl Event {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

fn string_headers(message: &Message) -> Vec<(String, String)> {
    message
        .headers()
        .iter()
        .filter_map(|h| match h.value() {
            HeaderValue::String(s) => Some((h.name().as_str().to_string(), s.as_str().to_string())),
            _ => None,
        })
        .collect()
}

/// Reads the events of a request body as they arrive. The channel ends with the body; an `Err`
/// reports a body that is not a valid event stream or an envelope that is not signed.
pub fn read_events(mut body: Incoming) -> mpsc::Receiver<Result<Event, String>> {
    let (tx, rx) = mpsc::channel(32);
    tokio::spawn(async move {
        let mut decoder = MessageFrameDecoder::new();
        let mut buf = BytesMut::new();
        while let Some(frame) = body.frame().await {
            let Ok(frame) = frame else {
                let _ = tx.send(Err("the request body broke".into())).await;
                return;
            };
            let Ok(data) = frame.into_data() else { continue };
            buf.extend_from_slice(&data);
            loop {
                match decoder.decode_frame(&mut buf) {
                    Ok(DecodedFrame::Complete(envelope)) => {
                        let signed = envelope.headers().iter().any(|h| h.name().as_str() == ":chunk-signature");
                        if !signed {
                            let _ = tx.send(Err("an event envelope without :chunk-signature".into())).await;
                            return;
                        }
                        if envelope.payload().is_empty() {
                            // The signed end of the input stream.
                            continue;
                        }
                        let inner = match read_message_from(envelope.payload().clone()) {
                            Ok(m) => m,
                            Err(e) => {
                                let _ = tx.send(Err(format!("an unreadable event: {e}"))).await;
                                return;
                            }
                        };
                        let headers = string_headers(&inner);
                        let event_type = headers.iter().find(|(n, _)| n == ":event-type").map(|(_, v)| v.clone()).unwrap_or_default();
                        if tx.send(Ok(Event { event_type, headers, payload: inner.payload().clone() })).await.is_err() {
                            return;
                        }
                    }
                    Ok(DecodedFrame::Incomplete) => break,
                    Err(e) => {
                        let _ = tx.send(Err(format!("not an event stream: {e}"))).await;
                        return;
                    }
                }
            }
        }
    });
    rx
}

fn encode(message: &Message) -> Bytes {
    let mut out = Vec::new();
    write_message_to(message, &mut out).expect("an event message encodes");
    Bytes::from(out)
}

/// An event message: `:message-type event`, its type, content type and extra string headers.
pub fn event(event_type: &str, content_type: &str, extra: &[(&str, &str)], payload: impl Into<Bytes>) -> Bytes {
    let mut headers = vec![
        Header::new(":message-type", HeaderValue::String("event".into())),
        Header::new(":event-type", HeaderValue::String(event_type.to_string().into())),
        Header::new(":content-type", HeaderValue::String(content_type.to_string().into())),
    ];
    for (name, value) in extra {
        headers.push(Header::new(name.to_string(), HeaderValue::String(value.to_string().into())));
    }
    encode(&Message::new_from_parts(headers, payload))
}

/// A modeled exception in the stream.
pub fn exception(exception_type: &str, json: &serde_json::Value) -> Bytes {
    let headers = vec![
        Header::new(":message-type", HeaderValue::String("exception".into())),
        Header::new(":exception-type", HeaderValue::String(exception_type.to_string().into())),
        Header::new(":content-type", HeaderValue::String("application/json".into())),
    ];
    encode(&Message::new_from_parts(headers, Bytes::from(json.to_string())))
}

/// A streaming response body fed through a channel.
pub type BodyStream = http_body_util::StreamBody<futures_util::stream::BoxStream<'static, Result<Frame<Bytes>, Infallible>>>;

pub fn channel_body() -> (mpsc::Sender<Bytes>, BodyStream) {
    let (tx, rx) = mpsc::channel::<Bytes>(32);
    let stream = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (Ok(Frame::data(b)), rx)) });
    (tx, http_body_util::StreamBody::new(Box::pin(stream)))
}
