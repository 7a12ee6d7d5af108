//! An agent on Amazon Bedrock's `ConverseStream`: the model's text deltas become the answer's stream.
//! Text to speak as given needs no model and is streamed as it is.

use async_trait::async_trait;
use aws_sdk_bedrockruntime::error::ProvideErrorMetadata;
use aws_sdk_bedrockruntime::types::error::ConverseStreamOutputError;
use aws_sdk_bedrockruntime::types::{
    ContentBlock, ContentBlockDelta, ContentBlockStart, ConversationRole, ConverseStreamOutput, Message, StopReason, SystemContentBlock,
};
use aws_sdk_bedrockruntime::Client;
use earshot_core::agent::{AgentError, AgentEvent, AgentInput, AgentSource, AgentStream, Role, AGENT_CHANNEL};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The model a deployment answers with unless told otherwise: served on demand in us-east-1 (elsewhere
/// through a cross-Region inference profile: the CDK preflight checks). The one default: the wiring's
/// setting and the CDK config use it too.
pub const DEFAULT_MODEL_ID: &str = "amazon.nova-lite-v1:0";

/// Which model, and how it is told to answer.
#[derive(Debug, Clone)]
pub struct BedrockSettings {
    /// The model (or inference profile) answered with; [`DEFAULT_MODEL_ID`] by default.
    pub model_id: String,
    /// What the model is told before the conversation; by default earshot's prompt for answers that read
    /// well aloud.
    pub system_prompt: String,
    /// The most tokens the model may answer one turn with (1024 by default).
    pub max_tokens: i32,
}

impl Default for BedrockSettings {
    fn default() -> Self {
        BedrockSettings { model_id: DEFAULT_MODEL_ID.into(), system_prompt: earshot_core::agent::VOICE_SYSTEM_PROMPT.into(), max_tokens: 1024 }
    }
}

/// An agent on Bedrock's `ConverseStream`: each turn is one call, its text deltas streamed as they arrive.
pub struct BedrockAgent {
    client: Client,
    settings: BedrockSettings,
}

impl BedrockAgent {
    /// An agent calling Bedrock with the credentials and region of `config`.
    pub fn new(config: &aws_config::SdkConfig, settings: BedrockSettings) -> Self {
        BedrockAgent { client: Client::new(config), settings }
    }
}

fn agent_error(code: Option<&str>, message: Option<&str>) -> AgentError {
    let (name, retryable) = match code.unwrap_or("") {
        "ThrottlingException" => ("agent_throttled", true),
        "ServiceUnavailableException" | "InternalServerException" | "ModelNotReadyException" => ("agent_unavailable", true),
        "ModelTimeoutException" => ("agent_timeout", true),
        "ValidationException" => ("agent_validation", false),
        "AccessDeniedException" => ("agent_access_denied", false),
        "ResourceNotFoundException" => ("agent_model_not_found", false),
        "ModelStreamErrorException" => ("agent_stream_error", true),
        _ => ("agent_error", true),
    };
    AgentError::new(name, format!("Bedrock: {}{}", code.unwrap_or("error"), message.map(|m| format!(": {m}")).unwrap_or_default()), retryable)
}

/// The stream's modeled exceptions, told by their variant.
fn modeled_name(e: &ConverseStreamOutputError) -> &str {
    match e {
        ConverseStreamOutputError::InternalServerException(_) => "InternalServerException",
        ConverseStreamOutputError::ModelStreamErrorException(_) => "ModelStreamErrorException",
        ConverseStreamOutputError::ValidationException(_) => "ValidationException",
        ConverseStreamOutputError::ThrottlingException(_) => "ThrottlingException",
        ConverseStreamOutputError::ServiceUnavailableException(_) => "ServiceUnavailableException",
        other => other.code().unwrap_or("UnknownError"),
    }
}

#[async_trait]
impl AgentSource for BedrockAgent {
    fn name(&self) -> &str {
        "bedrock"
    }

    async fn start(&self, input: AgentInput, cancel: CancellationToken) -> Result<AgentStream, AgentError> {
        let (prompt, history) = match input {
            AgentInput::Text(text) => return self.speak_text(text, cancel).await,
            AgentInput::Prompt { prompt, history, .. } => (prompt, history),
        };
        let (tx, rx) = mpsc::channel(AGENT_CHANNEL);
        // The conversation so far, then the prompt: alternating turns from the user's, as Converse needs.
        let turns = history.into_iter().map(|t| (t.role, t.content)).chain([(Role::User, prompt)]);
        let messages = turns
            .map(|(role, content)| {
                let role = if role == Role::User { ConversationRole::User } else { ConversationRole::Assistant };
                Message::builder().role(role).content(ContentBlock::Text(content)).build()
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| AgentError::new("agent_validation", e.to_string(), false))?;
        let inference = aws_sdk_bedrockruntime::types::InferenceConfiguration::builder().max_tokens(self.settings.max_tokens).build();
        let output = self
            .client
            .converse_stream()
            .model_id(&self.settings.model_id)
            .system(SystemContentBlock::Text(self.settings.system_prompt.clone()))
            .set_messages(Some(messages))
            .inference_config(inference)
            .send()
            .await
            .map_err(|e| match e.as_service_error() {
                Some(s) => agent_error(s.code(), s.message()),
                None => AgentError::new("agent_unreachable", format!("cannot reach Bedrock: {e:?}"), true),
            })?;
        let mut stream = output.stream;
        earshot_core::tasks::spawn(async move {
            loop {
                let event = tokio::select! {
                    _ = cancel.cancelled() => return,
                    event = stream.recv() => event,
                };
                let item = match event {
                    Ok(Some(ConverseStreamOutput::ContentBlockDelta(delta))) => match delta.delta {
                        Some(ContentBlockDelta::Text(text)) => Ok(AgentEvent::Delta(text)),
                        _ => continue,
                    },
                    // A tool call begins: what the model said before it can be spoken while the tool runs.
                    Ok(Some(ConverseStreamOutput::ContentBlockStart(start))) if matches!(start.start, Some(ContentBlockStart::ToolUse(_))) => {
                        Ok(AgentEvent::Pause)
                    }
                    Ok(Some(ConverseStreamOutput::MessageStop(stop))) => match stop.stop_reason {
                        StopReason::GuardrailIntervened | StopReason::ContentFiltered => {
                            Err(AgentError::new("agent_content_filtered", "Bedrock stopped the answer: its content was filtered", false))
                        }
                        StopReason::MaxTokens => {
                            tracing::info!("the answer reached the token limit");
                            Ok(AgentEvent::Done)
                        }
                        _ => Ok(AgentEvent::Done),
                    },
                    Ok(Some(_)) => continue,
                    Ok(None) => return,
                    Err(e) => Err(match e.as_service_error() {
                        Some(s) => agent_error(Some(modeled_name(s)), s.message()),
                        None => AgentError::new("agent_stream_error", format!("the Bedrock stream broke: {e:?}"), true),
                    }),
                };
                let last = !matches!(item, Ok(AgentEvent::Delta(_) | AgentEvent::Pause));
                let sent = tokio::select! {
                    _ = cancel.cancelled() => return,
                    sent = tx.send(item) => sent,
                };
                if sent.is_err() || last {
                    return;
                }
            }
        });
        Ok(rx)
    }
}
