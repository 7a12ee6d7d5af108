//! What an agent source offers the scheduler: its answer as a stream of text deltas.
//!
//! The stream is a bounded channel: when the scheduler stops pulling (the voice has fallen behind),
//! the agent's task waits, and memory stays bounded.

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What a model is told when the deployment gives it no system prompt of its own: answers that read
/// well aloud (every agent source that takes a system prompt starts from it).
pub const VOICE_SYSTEM_PROMPT: &str =
    "You are a helpful voice assistant. Answer in short, complete sentences that read well aloud. Avoid tables and code unless asked.";

/// What the agent is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentInput {
    /// A prompt the agent answers, after the conversation so far (oldest turn first; empty for a
    /// conversation's first question). The history starts with a user turn and alternates, so the
    /// prompt follows an assistant turn: every source can pass it on as it is. `conversation_id` is
    /// the conversation's key (agents that keep sessions of their own key them by it): the gateway
    /// derives it from the conversation's owner and the client's id, so that callers never share one.
    Prompt {
        /// The question the agent answers.
        prompt: String,
        /// The conversation's earlier turns, oldest first.
        history: Vec<Turn>,
        /// The conversation's key, where the conversation has one.
        conversation_id: Option<String>,
    },
    /// Text to speak as given (streamed as an agent would, so that it takes the same path).
    Text(String),
}

impl AgentInput {
    /// A first question, with no history.
    pub fn prompt(prompt: impl Into<String>) -> Self {
        AgentInput::Prompt { prompt: prompt.into(), history: Vec::new(), conversation_id: None }
    }

    /// The same input, for the conversation `key` (text to speak has no agent session to key).
    pub fn for_conversation(self, key: &str) -> Self {
        match self {
            AgentInput::Prompt { prompt, history, .. } => AgentInput::Prompt { prompt, history, conversation_id: Some(key.to_string()) },
            text => text,
        }
    }
}

/// One earlier turn of a conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// Who said it.
    pub role: Role,
    /// What was said.
    pub content: String,
}

/// Who said a turn. The system prompt is the operator's, never a request's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The person asking.
    User,
    /// The agent answering.
    Assistant,
}

impl Role {
    /// The name chat APIs use (`user`, `assistant`).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One step of an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentEvent {
    /// More text.
    Delta(String),
    /// The agent is pausing (a tool call, or "speak now"): what it has said may be spoken at once.
    Pause,
    /// The answer is complete.
    Done,
    /// The answer's body ended without its format's end marker (an SSE agent's `data: [DONE]`): taken
    /// as complete, and recorded in the timeline (`agent_end_unmarked`), since a cut connection looks
    /// the same.
    DoneUnmarked,
}

/// An agent failure, as the client will see it in an `error` message.
pub type AgentError = crate::error::Error;

/// An answer in progress. The channel closing without [`AgentEvent::Done`] is a failure.
pub type AgentStream = mpsc::Receiver<Result<AgentEvent, AgentError>>;

/// Capacity of an agent's channel: a few tokens, so that backpressure reaches the agent quickly.
pub const AGENT_CHANNEL: usize = 16;

/// A source of answers.
#[async_trait]
pub trait AgentSource: Send + Sync {
    /// The source's name, as logs and `GET /v1/voices` say it (`scripted`, for example).
    fn name(&self) -> &str;
    /// Starts answering. The answer stops when `cancel` fires or the stream is dropped. A conversation
    /// starts its agent through [`crate::agent_deadlines`], which sends text to speak as given to
    /// [`AgentSource::speak_text`] and never here; a source called directly with it answers as
    /// `speak_text` does.
    async fn start(&self, input: AgentInput, cancel: CancellationToken) -> Result<AgentStream, AgentError>;

    /// Text to speak as given (`/v1/speak`'s `text`), decided once for every source: streamed as it is,
    /// with no model asked ([`spoken_as_given`]). A source that stands in for a model (the scripted agent)
    /// streams it at its own pace instead.
    async fn speak_text(&self, text: String, _cancel: CancellationToken) -> Result<AgentStream, AgentError> {
        Ok(spoken_as_given(text))
    }
}

/// Text to speak as given needs no agent: it is streamed as it is, so that it takes the same path.
pub fn spoken_as_given(text: String) -> AgentStream {
    let (tx, rx) = mpsc::channel(2);
    crate::tasks::spawn(async move {
        if tx.send(Ok(AgentEvent::Delta(text))).await.is_ok() {
            let _ = tx.send(Ok(AgentEvent::Done)).await;
        }
    });
    rx
}
