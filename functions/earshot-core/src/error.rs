//! One shape for every failure a client can see, whichever part failed: the agent, a speech backend,
//! the transport to a model, or the gateway itself. It is what an `error` message carries on the wire
//! (`docs/protocol.md` lists the codes), so a failure passes from the part that saw it to the client
//! without being converted field by field. The HTTP errors before a stream add a status to it.
//!
//! The code is a string, not an enum: backends and agents relay codes from outside (the Kokoro
//! container's own `error` codes, AWS exception names mapped at the edge), so the set is open. The
//! codes earshot itself makes in more than one place are the constants of [`codes`]; every code is
//! documented in `docs/protocol.md` (a test scans the sources for them, formatted ones included).

use serde::{Deserialize, Serialize};

/// A failure: a stable `code` for programs, a `message` for people, and whether the same request may
/// succeed if tried again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct Error {
    /// The stable code, for programs (`docs/protocol.md` lists them).
    pub code: String,
    /// What happened, for people.
    pub message: String,
    /// Whether the same request may succeed if sent again.
    pub retryable: bool,
    /// On `interrupted`, when the client said how much of the answer it played (`heard_ms`): the words
    /// heard, whole sentences then whole words (`docs/protocol.md`, "Interrupting a conversation").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heard: Option<String>,
    /// On `interrupted`, how much of the answer's audio the client said it played, in milliseconds
    /// (the sentences' audio end to end, silences between them left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heard_ms: Option<u64>,
}

impl Error {
    /// A failure with this code, message and retryability, and nothing heard.
    pub fn new(code: &str, message: impl Into<String>, retryable: bool) -> Self {
        Error { code: code.into(), message: message.into(), retryable, heard: None, heard_ms: None }
    }
}

/// Codes earshot itself gives, shared by the parts that give them (the backends' refusals are
/// [`crate::speech::codes`]).
pub mod codes {
    /// The agent's stream stopped without finishing its answer.
    pub const AGENT_ENDED: &str = "agent_ended";
    /// A speech session ended unexpectedly.
    pub const BACKEND_GONE: &str = "backend_gone";
    /// A speech session closed before the answer was spoken.
    pub const BACKEND_CLOSED: &str = "backend_closed";
    /// A backend had sentences to speak and said nothing for longer than its limit.
    pub const BACKEND_STALLED: &str = "backend_stalled";
    /// A backend sent something the protocol does not allow.
    pub const BACKEND_PROTOCOL: &str = "backend_protocol";
    /// The whole answer had nothing to speak.
    pub const EMPTY_ANSWER: &str = "empty_answer";
    /// Every sentence of the answer was passed over by the voice (a script it cannot read) and no other
    /// voice here could take it: nothing was spoken.
    pub const NOTHING_SPEAKABLE: &str = "nothing_speakable";
    /// A buffered answer over its cap.
    pub const ANSWER_TOO_LONG: &str = "answer_too_long";
    /// An answer read as SSML (`markup: ssml`) holds a tag, attribute or value outside the subset, or is
    /// not well formed: the message names it.
    pub const INVALID_SSML: &str = "invalid_ssml";
    /// The client asked to stop the conversation.
    pub const INTERRUPTED: &str = "interrupted";
    /// The conversation ran past its maximum length.
    pub const CONVERSATION_TOO_LONG: &str = "conversation_too_long";
    /// earshot failed inside a conversation (a panic).
    pub const INTERNAL: &str = "internal";
    /// The server is stopping.
    pub const SHUTTING_DOWN: &str = "shutting_down";
    /// The caller has spoken all the characters its budget allows in the rolling hour.
    pub const CHARACTER_BUDGET_SPENT: &str = "character_budget_spent";
}
