//! A model behind an OpenAI-compatible chat completions endpoint (OpenAI, vLLM, Ollama, LiteLLM and the
//! many servers that copy its API), streamed: `POST {base}/chat/completions` with `stream: true`, read
//! as server-sent events. Each chunk's `choices[0].delta.content` is more text; the first chunk of a
//! streamed tool call is a pause (what was said before it can be spoken while the tool runs);
//! `data: [DONE]` ends the answer. A stream that ends before any `finish_reason` broke, an `error` object in the
//! stream is a failure mid-answer, and a `content_filter` finish stops the answer with its own code.

use std::time::Duration;

use async_trait::async_trait;
use earshot_core::agent::{AgentError, AgentEvent, AgentInput, AgentSource, AgentStream, AGENT_CHANNEL};
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::http_stream::{self, send};

/// Where the model is and how it is asked.
#[derive(Debug, Clone)]
pub struct OpenAiSettings {
    /// The API's base URL, up to and including its version (`https://api.openai.com/v1`).
    pub base_url: String,
    /// The model to ask, as the endpoint names it (`gpt-4o-mini`, `llama3.2`).
    pub model: String,
    /// Sent as `Authorization: Bearer …` when set (local servers often need none).
    pub api_key: Option<String>,
    /// The system message sent first in every request.
    pub system_prompt: String,
    /// The sampling temperature; the server's default when unset.
    pub temperature: Option<f32>,
    /// The most tokens the model may write for one answer; the server's default when unset.
    pub max_tokens: Option<u32>,
    /// How long to wait for a connection (the answer's own time limits are the gateway's:
    /// `earshot_core::agent_deadlines`).
    pub connect_timeout: Duration,
    /// The most bytes one SSE event may hold (`agent_event_too_large`).
    pub max_event_bytes: usize,
}

/// A model behind an OpenAI-compatible chat completions endpoint, streamed.
pub struct OpenAiAgent {
    http: reqwest::Client,
    settings: OpenAiSettings,
}

impl OpenAiAgent {
    /// An agent for these settings, or why they cannot work (a base URL that is not http or https, no
    /// model named).
    pub fn new(settings: OpenAiSettings) -> Result<Self, String> {
        let parsed = reqwest::Url::parse(&settings.base_url).map_err(|e| format!("the base URL `{}` is not a URL: {e}", settings.base_url))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!("the base URL `{}` must be http or https", settings.base_url));
        }
        if settings.model.trim().is_empty() {
            return Err("no model is named".into());
        }
        let http = reqwest::Client::builder().connect_timeout(settings.connect_timeout).build().map_err(|e| e.to_string())?;
        Ok(OpenAiAgent { http, settings })
    }

    /// The request body: the system prompt, the conversation so far, the prompt.
    pub fn body(&self, prompt: &str, history: &[earshot_core::agent::Turn]) -> serde_json::Value {
        let mut messages = vec![serde_json::json!({"role": "system", "content": self.settings.system_prompt})];
        messages.extend(history.iter().map(|t| serde_json::json!({"role": t.role.as_str(), "content": t.content})));
        messages.push(serde_json::json!({"role": "user", "content": prompt}));
        let mut body = serde_json::json!({"model": self.settings.model, "messages": messages, "stream": true});
        if let Some(t) = self.settings.temperature {
            body["temperature"] = serde_json::json!(t);
        }
        if let Some(m) = self.settings.max_tokens {
            body["max_tokens"] = serde_json::json!(m);
        }
        body
    }
}

const WHO: &str = "the OpenAI-compatible endpoint";

#[async_trait]
impl AgentSource for OpenAiAgent {
    fn name(&self) -> &str {
        "openai"
    }

    async fn start(&self, input: AgentInput, cancel: CancellationToken) -> Result<AgentStream, AgentError> {
        let (tx, rx) = mpsc::channel(AGENT_CHANNEL);
        let (prompt, history) = match input {
            AgentInput::Text(text) => return self.speak_text(text, cancel).await,
            AgentInput::Prompt { prompt, history, .. } => (prompt, history),
        };
        let url = format!("{}/chat/completions", self.settings.base_url.trim_end_matches('/'));
        let mut request = self.http.post(&url).header("accept", "text/event-stream").json(&self.body(&prompt, &history));
        if let Some(key) = &self.settings.api_key {
            request = request.bearer_auth(key);
        }
        let response = tokio::select! {
            _ = cancel.cancelled() => return Ok(rx),
            r = request.send() => r.map_err(|e| http_stream::unreachable(WHO, &e))?,
        };
        let status = response.status();
        if !status.is_success() {
            let body = http_stream::error_body(response).await;
            return Err(http_stream::status_error(WHO, status, &body));
        }
        let bounded = http_stream::bounded_records(response.bytes_stream(), http_stream::RecordEnd::BlankLine, self.settings.max_event_bytes);
        let mut events = http_stream::lossy_utf8(bounded).eventsource();
        earshot_core::tasks::spawn(async move {
            // An answer whose last chunk gave its finish_reason is complete even if the server then
            // closes without `[DONE]` (some compatible servers do); one that stops before is broken.
            let mut finished = false;
            loop {
                let event = tokio::select! {
                    _ = cancel.cancelled() => return,
                    e = events.next() => e,
                };
                let event = match event {
                    None if finished => {
                        let _ = send(&tx, &cancel, Ok(AgentEvent::DoneUnmarked)).await;
                        return;
                    }
                    None => {
                        let _ = send(
                            &tx,
                            &cancel,
                            Err(AgentError::new("agent_stream_error", format!("{WHO} ended its stream mid-answer (no finish_reason, no [DONE])"), true)),
                        )
                        .await;
                        return;
                    }
                    Some(Err(e)) => {
                        let _ = send(&tx, &cancel, Err(http_stream::sse_error(e, WHO))).await;
                        return;
                    }
                    Some(Ok(event)) => event,
                };
                let (items, finish) = chunk_events(&event.data);
                finished |= finish;
                for item in items {
                    if !send(&tx, &cancel, item).await {
                        return;
                    }
                }
            }
        });
        Ok(rx)
    }
}

/// What one `data:` payload of the stream means for the answer, and whether it gave a `finish_reason`.
pub fn chunk_events(data: &str) -> (Vec<Result<AgentEvent, AgentError>>, bool) {
    if data.trim() == "[DONE]" {
        return (vec![Ok(AgentEvent::Done)], false);
    }
    let chunk: serde_json::Value = match serde_json::from_str(data) {
        Ok(v) => v,
        Err(e) => return (vec![Err(AgentError::new("agent_stream_error", format!("{WHO} sent a chunk that is not JSON ({e})"), true))], false),
    };
    if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
        let message = error.get("message").and_then(|m| m.as_str()).unwrap_or("no message");
        return (vec![Err(AgentError::new("agent_stream_error", format!("{WHO} failed mid-answer: {message}"), true))], false);
    }
    let mut out = Vec::new();
    let Some(choice) = chunk.pointer("/choices/0") else { return (out, false) };
    if let Some(text) = choice.pointer("/delta/content").and_then(|c| c.as_str()).filter(|t| !t.is_empty()) {
        out.push(Ok(AgentEvent::Delta(text.to_string())));
    }
    // A tool call is streamed as several chunks; only its first carries an `id`.
    let starts_tool_call =
        choice.pointer("/delta/tool_calls").and_then(|t| t.as_array()).is_some_and(|calls| calls.iter().any(|c| c.get("id").is_some_and(|id| !id.is_null())));
    if starts_tool_call {
        out.push(Ok(AgentEvent::Pause));
    }
    let finish = choice.get("finish_reason").and_then(|f| f.as_str());
    match finish {
        Some("content_filter") => {
            out.push(Err(AgentError::new("agent_content_filtered", format!("{WHO} stopped the answer: its content was filtered"), false)))
        }
        Some("length") => tracing::info!("the answer reached the token limit"),
        _ => {}
    }
    (out, finish.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_become_deltas_pauses_and_the_end() {
        let delta = r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}"#;
        assert_eq!(chunk_events(delta).0, vec![Ok(AgentEvent::Delta("Hello".into()))]);
        let role_only = r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#;
        assert!(chunk_events(role_only).0.is_empty());
        let tool_start =
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"lookup","arguments":""}}]}}]}"#;
        assert_eq!(chunk_events(tool_start).0, vec![Ok(AgentEvent::Pause)]);
        let tool_more = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"id\":"}}]}}]}"#;
        assert!(chunk_events(tool_more).0.is_empty(), "only the first chunk of a call pauses");
        assert_eq!(chunk_events("[DONE]").0, vec![Ok(AgentEvent::Done)]);
        let usage_only = r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}}"#;
        assert!(chunk_events(usage_only).0.is_empty());
    }

    #[test]
    fn failures_in_the_stream_have_their_codes() {
        let code = |data: &str| chunk_events(data).0.into_iter().find_map(Result::err).map(|e| e.code).unwrap();
        assert_eq!(code(r#"{"error":{"message":"overloaded","type":"server_error"}}"#), "agent_stream_error");
        assert_eq!(code(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]}"#), "agent_content_filtered");
        assert_eq!(code("not json"), "agent_stream_error");
    }

    #[test]
    fn settings_that_cannot_work_are_refused() {
        let settings = |base: &str, model: &str| OpenAiSettings {
            base_url: base.into(),
            model: model.into(),
            api_key: None,
            system_prompt: String::new(),
            temperature: None,
            max_tokens: None,
            connect_timeout: Duration::from_secs(1),
            max_event_bytes: crate::http_stream::DEFAULT_MAX_EVENT_BYTES,
        };
        assert!(OpenAiAgent::new(settings("api.openai.com/v1", "m")).is_err());
        assert!(OpenAiAgent::new(settings("ftp://x/v1", "m")).is_err());
        assert!(OpenAiAgent::new(settings("http://127.0.0.1:1/v1", " ")).is_err());
        assert!(OpenAiAgent::new(settings("http://127.0.0.1:1/v1", "m")).is_ok());
    }
}
