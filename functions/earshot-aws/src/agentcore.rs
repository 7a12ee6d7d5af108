//! An agent hosted on Amazon Bedrock AgentCore Runtime, through `InvokeAgentRuntime`: the prompt and the
//! conversation so far go as the JSON payload (`{"prompt", "messages", "conversation_id"}`, the shape the
//! HTTP agent gets), the conversation's id becomes the runtime session id (so the runtime keeps the
//! agent's session across turns), and the streamed answer is read as it arrives: an agent that yields
//! text (a Strands agent in AWS's samples yields its `data` chunks) is streamed by the runtime as SSE
//! events whose data is a JSON string; an object is read at the configured pointer; a plain body is text.

use async_trait::async_trait;
use aws_sdk_bedrockagentcore::error::ProvideErrorMetadata;
use aws_sdk_bedrockagentcore::Client;
use aws_smithy_types::Blob;
use earshot_agents::http_agent::{read_answer, request_body, AnswerFormat, TextAt};
use earshot_core::agent::{AgentError, AgentInput, AgentSource, AgentStream};
use tokio_util::sync::CancellationToken;

/// Which runtime, and where the text is in its events.
#[derive(Debug, Clone)]
pub struct AgentCoreSettings {
    /// `arn:aws:bedrock-agentcore:REGION:ACCOUNT:runtime/NAME-ID`.
    pub runtime_arn: String,
    /// The runtime endpoint (`DEFAULT` when unset).
    pub qualifier: Option<String>,
    /// Where the text is in an event that is a JSON object (events that are strings are the text).
    pub text_pointer: String,
}

/// An agent hosted on AgentCore Runtime: each turn is one `InvokeAgentRuntime` call to the configured runtime.
pub struct AgentCoreAgent {
    client: Client,
    settings: AgentCoreSettings,
}

impl AgentCoreAgent {
    /// An agent invoking `settings.runtime_arn` with the credentials and region of `config`; an error when
    /// that is not an AgentCore runtime ARN.
    pub fn new(config: &aws_config::SdkConfig, settings: AgentCoreSettings) -> Result<Self, String> {
        if !settings.runtime_arn.starts_with("arn:") || !settings.runtime_arn.contains(":runtime/") {
            return Err(format!("`{}` is not an AgentCore runtime ARN (arn:aws:bedrock-agentcore:REGION:ACCOUNT:runtime/NAME)", settings.runtime_arn));
        }
        Ok(AgentCoreAgent { client: Client::new(config), settings })
    }
}

/// AgentCore requires session ids of 33 to 256 characters; a conversation's key (from the gateway: 64
/// hex characters, a digest of the conversation's owner and id, so that callers never share a session)
/// is made one the same way every turn, so that the turns of a conversation share the runtime's session.
pub fn runtime_session_id(conversation_id: Option<&str>) -> String {
    match conversation_id {
        Some(id) => format!("{:-<33}", format!("earshot-conversation-{id}")),
        None => format!("earshot-{}", uuid::Uuid::new_v4()),
    }
}

fn agent_error(code: Option<&str>, message: Option<&str>) -> AgentError {
    let (name, retryable) = match code.unwrap_or("") {
        "ThrottlingException" | "ServiceQuotaExceededException" => ("agent_throttled", true),
        "AccessDeniedException" => ("agent_access_denied", false),
        "ResourceNotFoundException" => ("agent_model_not_found", false),
        "ValidationException" => ("agent_validation", false),
        "InternalServerException" | "RetryableConflictException" => ("agent_unavailable", true),
        _ => ("agent_error", true),
    };
    AgentError::new(name, format!("AgentCore: {}{}", code.unwrap_or("error"), message.map(|m| format!(": {m}")).unwrap_or_default()), retryable)
}

#[async_trait]
impl AgentSource for AgentCoreAgent {
    fn name(&self) -> &str {
        "agentcore"
    }

    async fn start(&self, input: AgentInput, cancel: CancellationToken) -> Result<AgentStream, AgentError> {
        let (prompt, history, conversation_id) = match input {
            AgentInput::Text(text) => return self.speak_text(text, cancel).await,
            AgentInput::Prompt { prompt, history, conversation_id } => (prompt, history, conversation_id),
        };
        let payload = request_body(&prompt, &history, conversation_id.as_deref()).to_string();
        let call = self
            .client
            .invoke_agent_runtime()
            .agent_runtime_arn(&self.settings.runtime_arn)
            .set_qualifier(self.settings.qualifier.clone())
            .runtime_session_id(runtime_session_id(conversation_id.as_deref()))
            .content_type("application/json")
            .accept("text/event-stream, application/json, text/plain")
            .payload(Blob::new(payload))
            .send();
        let output = tokio::select! {
            _ = cancel.cancelled() => return Ok(tokio::sync::mpsc::channel(1).1),
            output = call => output.map_err(|e| match e.as_service_error() {
                Some(s) => agent_error(s.code(), s.message()),
                None => AgentError::new("agent_unreachable", format!("cannot reach AgentCore: {e:?}"), true),
            })?,
        };
        let format = AnswerFormat::Auto.resolve(&output.content_type);
        let text = TextAt::StringOr(self.settings.text_pointer.clone());
        let body = Box::pin(futures_util::stream::unfold(output.response, |mut body| async move { body.next().await.map(|chunk| (chunk, body)) }));
        Ok(read_answer(body, format, text, earshot_agents::http_stream::DEFAULT_MAX_EVENT_BYTES, cancel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_keeps_one_runtime_session_of_the_length_agentcore_requires() {
        let short = runtime_session_id(Some("c1"));
        assert_eq!(short.len(), 33);
        assert_eq!(short, runtime_session_id(Some("c1")), "the same conversation, the same session");
        assert_ne!(short, runtime_session_id(Some("c2")));
        let long = "x".repeat(128);
        assert!(runtime_session_id(Some(&long)).len() <= 256);
        assert!(runtime_session_id(None).len() >= 33);
    }
}
