//! One shape for every failure a client can see, whichever part failed: the agent, a speech backend,
//! the transport to a model, or the gateway itself. It is what an `error` message carries on the wire
//! (`docs/protocol.md` lists the codes), so a failure passes from the part that saw it to the client
//! without being converted field by field. The HTTP errors before a stream add a status to it.
//!
//! The code is a string, not an enum: backends and agents relay codes from outside (the Kokoro
//! container's own `error` codes, AWS exception names mapped at the edge), so the set is open; the
//! codes earshot itself gives are documented in `docs/protocol.md`.

use serde::{Deserialize, Serialize};

/// A failure: a stable `code` for programs, a `message` for people, and whether the same request may
/// succeed if tried again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct Error {
    pub code: String,
    pub message: String,
    pub retryable: bool,
}

impl Error {
    pub fn new(code: &str, message: impl Into<String>, retryable: bool) -> Self {
        Error { code: code.into(), message: message.into(), retryable }
    }
}
