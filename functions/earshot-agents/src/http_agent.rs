//! Any agent behind an HTTP endpoint that streams its answer's text: earshot POSTs
//! `{"prompt": …, "messages": [{"role", "content"}, …], "conversation_id": …}` (the conversation so far)
//! to the configured URL
//! with the configured headers, and reads the answer as it arrives, in one of three shapes:
//!
//! - **SSE** (`text/event-stream`): each `data:` is text, or, with a JSON pointer configured, a JSON
//!   object whose text is at that pointer (`/delta/text`); `data: [DONE]` or the body's end completes
//!   the answer; an event named `pause` is a pause (say what you have while a tool runs), one named
//!   `error` a failure with its data as the message. Only `message` events (the default name, when an
//!   event has no `event:` line) are text: any other name (`ping`, `keepalive`, …) is skipped, never
//!   spoken. Invalid UTF-8 becomes U+FFFD and the answer goes on, as in the other two shapes.
//! - **NDJSON** (`application/x-ndjson`, `application/jsonl`): one JSON object per line, text at the
//!   pointer (`/text` unless configured); a line `{"type": "pause"}` is a pause.
//! - **Plain text** (anything else): every byte is the answer's, as it comes.
//!
//! The shape is read from the response's content type unless configured. The URL and headers are
//! the operator's; a request never chooses where earshot connects.

use std::time::Duration;

use async_trait::async_trait;
use earshot_core::agent::{AgentError, AgentEvent, AgentInput, AgentSource, AgentStream, AGENT_CHANNEL};
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::http_stream::{self, send, BodyError, RecordEnd, Utf8Carry};

/// How the answer is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerFormat {
    /// Chosen by the response's content type.
    Auto,
    /// Server-sent events (`text/event-stream`): each `data:` is text, or JSON with the text at the pointer.
    Sse,
    /// One JSON object per line (`application/x-ndjson`), the text at the pointer (`/text` unless configured).
    Ndjson,
    /// Plain text: every byte of the body is the answer's.
    Text,
}

impl std::str::FromStr for AnswerFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(AnswerFormat::Auto),
            "sse" => Ok(AnswerFormat::Sse),
            "ndjson" => Ok(AnswerFormat::Ndjson),
            "text" => Ok(AnswerFormat::Text),
            other => Err(format!("`{other}` is not an answer format (auto, sse, ndjson, text)")),
        }
    }
}

#[derive(Debug, Clone)]
/// Where the agent is and how its answer is read.
pub struct HttpAgentSettings {
    /// The endpoint earshot POSTs each prompt to (http or https).
    pub url: String,
    /// Headers sent with every request (an API key, a tenant).
    pub headers: Vec<(String, String)>,
    /// The shape of the answer, or `Auto` to read it from the response's content type.
    pub format: AnswerFormat,
    /// Where the text is in each JSON event (RFC 6901); SSE data is plain text without one.
    pub text_pointer: Option<String>,
    /// How long to wait for a connection (the answer's own time limits are the gateway's:
    /// `earshot_core::agent_deadlines`).
    pub connect_timeout: Duration,
    /// The most bytes one SSE event or NDJSON line may hold (`agent_event_too_large`).
    pub max_event_bytes: usize,
}

/// An agent behind an HTTP endpoint that streams its answer's text.
pub struct HttpAgent {
    http: reqwest::Client,
    settings: HttpAgentSettings,
}

const WHO: &str = "the HTTP agent";

impl HttpAgent {
    /// An agent for these settings, or why they cannot work (a URL that is not http or https, a pointer
    /// that does not start with `/`, a header that is not a header).
    pub fn new(settings: HttpAgentSettings) -> Result<Self, String> {
        let parsed = reqwest::Url::parse(&settings.url).map_err(|e| format!("the agent URL `{}` is not a URL: {e}", settings.url))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!("the agent URL `{}` must be http or https", settings.url));
        }
        if let Some(p) = &settings.text_pointer {
            if !p.starts_with('/') {
                return Err(format!("the text pointer `{p}` must start with `/` (a JSON pointer, such as /delta/text)"));
            }
        }
        for (name, value) in &settings.headers {
            reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|_| format!("`{name}` is not a header name"))?;
            reqwest::header::HeaderValue::from_str(value).map_err(|_| format!("the value of header `{name}` is not a header value"))?;
        }
        let http = reqwest::Client::builder().connect_timeout(settings.connect_timeout).build().map_err(|e| e.to_string())?;
        Ok(HttpAgent { http, settings })
    }
}

#[async_trait]
impl AgentSource for HttpAgent {
    fn name(&self) -> &str {
        "http"
    }

    async fn start(&self, input: AgentInput, cancel: CancellationToken) -> Result<AgentStream, AgentError> {
        let (prompt, history, conversation_id) = match input {
            AgentInput::Text(text) => return self.speak_text(text, cancel).await,
            AgentInput::Prompt { prompt, history, conversation_id } => (prompt, history, conversation_id),
        };
        let mut request = self.http.post(&self.settings.url).json(&request_body(&prompt, &history, conversation_id.as_deref()));
        for (name, value) in &self.settings.headers {
            request = request.header(name, value);
        }
        let response = tokio::select! {
            _ = cancel.cancelled() => return Ok(mpsc::channel(1).1),
            r = request.send() => r.map_err(|e| http_stream::unreachable(WHO, &e))?,
        };
        let status = response.status();
        if !status.is_success() {
            let body = http_stream::error_body(response).await;
            return Err(http_stream::status_error(WHO, status, &body));
        }
        let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let format = self.settings.format.resolve(&content_type);
        let text = match &self.settings.text_pointer {
            Some(p) => TextAt::Pointer(p.clone()),
            None if format == AnswerFormat::Ndjson => TextAt::Pointer("/text".into()),
            None => TextAt::Raw,
        };
        Ok(read_answer(response.bytes_stream(), format, text, self.settings.max_event_bytes, cancel))
    }
}

impl AnswerFormat {
    /// The format to read: this one, or for `Auto` the one the content type names (plain text when it
    /// names neither SSE nor NDJSON).
    pub fn resolve(self, content_type: &str) -> AnswerFormat {
        if self != AnswerFormat::Auto {
            return self;
        }
        let content_type = content_type.to_ascii_lowercase();
        if content_type.starts_with("text/event-stream") {
            AnswerFormat::Sse
        } else if content_type.starts_with("application/x-ndjson") || content_type.starts_with("application/jsonl") {
            AnswerFormat::Ndjson
        } else {
            AnswerFormat::Text
        }
    }
}

/// Where an event's text is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextAt {
    /// The event's data is the text (SSE only).
    Raw,
    /// The event is JSON and its text is at this pointer.
    Pointer(String),
    /// The event is JSON: a string is the text; an object has it at this pointer (an agent on AgentCore
    /// that yields strings is streamed as `data: "…"`).
    StringOr(String),
}

/// Reads an answer's body as it arrives, in a resolved format (not `Auto`), into the scheduler's
/// stream, each SSE event or NDJSON line held to `max_event_bytes`. Shared by every source whose answer
/// is a byte stream (the HTTP agent; AgentCore).
pub fn read_answer<S, E>(body: S, format: AnswerFormat, text: TextAt, max_event_bytes: usize, cancel: CancellationToken) -> AgentStream
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, E>> + Send + Unpin + 'static,
    E: std::fmt::Display + Send + 'static,
{
    let (tx, rx) = mpsc::channel(AGENT_CHANNEL);
    earshot_core::tasks::spawn(async move {
        match format {
            AnswerFormat::Sse => read_sse(http_stream::bounded_records(body, RecordEnd::BlankLine, max_event_bytes), text, tx, cancel).await,
            AnswerFormat::Ndjson => read_ndjson(http_stream::bounded_records(body, RecordEnd::Newline, max_event_bytes), text, tx, cancel).await,
            _ => read_text(body, tx, cancel).await,
        }
    });
    rx
}

/// What an agent of a team's own is sent: the prompt, the turns before it, and the conversation's id
/// when the client gave or was given one (for agents that keep sessions).
pub fn request_body(prompt: &str, history: &[earshot_core::agent::Turn], conversation_id: Option<&str>) -> serde_json::Value {
    let messages: Vec<_> = history.iter().map(|t| serde_json::json!({"role": t.role.as_str(), "content": t.content})).collect();
    let mut body = serde_json::json!({"prompt": prompt, "messages": messages});
    if let Some(id) = conversation_id {
        body["conversation_id"] = serde_json::json!(id);
    }
    body
}

type Tx = mpsc::Sender<Result<AgentEvent, AgentError>>;

fn broke(e: impl std::fmt::Display) -> AgentError {
    AgentError::new("agent_stream_error", format!("{WHO}'s answer broke: {e}"), true)
}

/// The text at `pointer` in a JSON value.
fn text_at(json: &serde_json::Value, pointer: &str) -> Option<String> {
    json.pointer(pointer).and_then(|t| t.as_str()).filter(|t| !t.is_empty()).map(str::to_string)
}

/// The text of one JSON event, by `text`; `Ok(None)` for an event without text there (not an error:
/// agents send bookkeeping events too).
fn event_text(data: &str, text: &TextAt) -> Result<Option<String>, AgentError> {
    if *text == TextAt::Raw {
        return Ok(Some(data.to_string()).filter(|t| !t.is_empty()));
    }
    let json: serde_json::Value = serde_json::from_str(data).map_err(|e| broke(format!("an event is not JSON ({e})")))?;
    Ok(json_text(&json, text))
}

/// The text of a JSON event: a string itself (with [`TextAt::StringOr`]), or what is at the pointer.
fn json_text(json: &serde_json::Value, text: &TextAt) -> Option<String> {
    match (text, json) {
        (TextAt::StringOr(_), serde_json::Value::String(s)) => Some(s.clone()).filter(|t| !t.is_empty()),
        (TextAt::Pointer(p) | TextAt::StringOr(p), _) => text_at(json, p),
        (TextAt::Raw, _) => None,
    }
}

async fn read_sse<S, E>(body: S, text: TextAt, tx: Tx, cancel: CancellationToken)
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, BodyError<E>>> + Send + Unpin + 'static,
    E: std::fmt::Display + Send + 'static,
{
    let mut events = http_stream::lossy_utf8(body).eventsource();
    loop {
        let event = tokio::select! {
            _ = cancel.cancelled() => return,
            e = events.next() => e,
        };
        let item = match event {
            // The body ended without `data: [DONE]`: complete, as this format allows, but marked.
            None => Ok(AgentEvent::DoneUnmarked),
            Some(Err(e)) => Err(http_stream::sse_error(e, WHO)),
            Some(Ok(e)) if e.event == "pause" => Ok(AgentEvent::Pause),
            Some(Ok(e)) if e.event == "error" => {
                Err(AgentError::new("agent_stream_error", format!("{WHO} failed mid-answer: {}", http_stream::body_message(&e.data)), true))
            }
            Some(Ok(e)) if e.data.trim() == "[DONE]" => Ok(AgentEvent::Done),
            // Events of other names (`ping`, keep-alives) are not the answer's text.
            Some(Ok(e)) if e.event != "message" => continue,
            Some(Ok(e)) => match event_text(&e.data, &text) {
                Ok(Some(t)) => Ok(AgentEvent::Delta(t)),
                Ok(None) => continue,
                Err(err) => Err(err),
            },
        };
        if !send(&tx, &cancel, item).await {
            return;
        }
    }
}

async fn read_ndjson<S, E>(mut body: S, text: TextAt, tx: Tx, cancel: CancellationToken)
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, BodyError<E>>> + Send + Unpin,
    E: std::fmt::Display,
{
    let mut carry = Utf8Carry::default();
    let mut line = String::new();
    // Where the search for the next line end resumes: each byte is looked at once, however the
    // line arrives.
    let mut searched = 0;
    loop {
        let chunk = tokio::select! {
            _ = cancel.cancelled() => return,
            c = body.next() => c,
        };
        // The body's end completes the last line.
        let (decoded, ended) = match chunk {
            Some(Ok(bytes)) => (carry.push(&bytes), false),
            Some(Err(e)) => {
                let _ = send(&tx, &cancel, Err(e.agent_error(WHO))).await;
                return;
            }
            None => (carry.finish() + "\n", true),
        };
        line.push_str(&decoded);
        while let Some(at) = line[searched..].find('\n') {
            let one: String = line.drain(..=searched + at).collect();
            searched = 0;
            let one = one.trim();
            if one.is_empty() {
                continue;
            }
            let item = match serde_json::from_str::<serde_json::Value>(one) {
                Ok(json) if json.get("type").and_then(|t| t.as_str()) == Some("pause") => Ok(AgentEvent::Pause),
                Ok(json) => match json_text(&json, &text) {
                    Some(t) => Ok(AgentEvent::Delta(t)),
                    None => continue,
                },
                Err(e) => Err(broke(format!("a line is not JSON ({e})"))),
            };
            if !send(&tx, &cancel, item).await {
                return;
            }
        }
        searched = line.len();
        if ended {
            let _ = send(&tx, &cancel, Ok(AgentEvent::Done)).await;
            return;
        }
    }
}

async fn read_text<S, E>(mut body: S, tx: Tx, cancel: CancellationToken)
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, E>> + Send + Unpin,
    E: std::fmt::Display,
{
    let mut carry = Utf8Carry::default();
    loop {
        let chunk = tokio::select! {
            _ = cancel.cancelled() => return,
            c = body.next() => c,
        };
        let item = match chunk {
            Some(Ok(bytes)) => match carry.push(&bytes) {
                t if t.is_empty() => continue,
                t => Ok(AgentEvent::Delta(t)),
            },
            Some(Err(e)) => Err(broke(e)),
            None => {
                let rest = carry.finish();
                if !rest.is_empty() && !send(&tx, &cancel, Ok(AgentEvent::Delta(rest))).await {
                    return;
                }
                Ok(AgentEvent::Done)
            }
        };
        if !send(&tx, &cancel, item).await {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events of an SSE answer read from `body`.
    async fn events_of(body: &'static [u8]) -> Vec<AgentEvent> {
        events_in(AnswerFormat::Sse, TextAt::Raw, body).await
    }

    /// The events of an answer in `format` read from `body`.
    async fn events_in(format: AnswerFormat, text: TextAt, body: &'static [u8]) -> Vec<AgentEvent> {
        let chunks: Vec<Result<bytes::Bytes, std::convert::Infallible>> = vec![Ok(bytes::Bytes::from_static(body))];
        let mut stream = read_answer(futures_util::stream::iter(chunks), format, text, http_stream::DEFAULT_MAX_EVENT_BYTES, CancellationToken::new());
        let mut out = Vec::new();
        while let Some(event) = stream.recv().await {
            out.push(event.expect("no error"));
        }
        out
    }

    #[tokio::test]
    async fn only_message_events_are_spoken() {
        let events = events_of(b"event: ping\ndata: keepalive\n\ndata: Hello.\n\nevent: message\ndata: Bye.\n\ndata: [DONE]\n\n").await;
        assert_eq!(events, vec![AgentEvent::Delta("Hello.".into()), AgentEvent::Delta("Bye.".into()), AgentEvent::Done]);
    }

    #[tokio::test]
    async fn an_invalid_byte_is_replaced_and_the_answer_goes_on() {
        let events = events_of(b"data: caf\xe9\n\ndata: more\n\ndata: [DONE]\n\n").await;
        assert_eq!(events, vec![AgentEvent::Delta("caf\u{fffd}".into()), AgentEvent::Delta("more".into()), AgentEvent::Done]);
        // The same in every format: replaced, and the answer goes on.
        let ndjson = events_in(AnswerFormat::Ndjson, TextAt::Pointer("/text".into()), b"{\"text\": \"caf\xe9\"}\n{\"text\": \"more\"}\n").await;
        assert_eq!(ndjson, vec![AgentEvent::Delta("caf\u{fffd}".into()), AgentEvent::Delta("more".into()), AgentEvent::Done]);
        let text = events_in(AnswerFormat::Text, TextAt::Raw, b"caf\xe9 more").await;
        assert_eq!(text, vec![AgentEvent::Delta("caf\u{fffd} more".into()), AgentEvent::Done]);
    }

    #[tokio::test]
    async fn an_sse_answer_without_its_end_marker_is_complete_but_marked() {
        let events = events_of(b"data: Hello.\n\n").await;
        assert_eq!(events, vec![AgentEvent::Delta("Hello.".into()), AgentEvent::DoneUnmarked]);
    }
}
