//! The wire protocol between earshot and its frontends, version 1.
//!
//! One conversation is a stream of typed messages ([`ServerEvent`]): `session`, `text`, `sentence`,
//! `audio`, `sentence_end`, `done`, `error`. They travel either as Server-Sent Events (JSON, audio in
//! base64: [`sse`]) or as length-prefixed binary frames (JSON for control, raw PCM for audio:
//! [`binary`]). Both have an encoder, used by the gateway, and an incremental decoder that accepts
//! any chunking, used by `earshot say`, the tests and the benchmarks as a client. `docs/protocol.md`
//! documents the format with examples; [`order`] checks a stream against its ordering rules.

pub mod binary;
pub mod events;
pub mod order;
pub mod sse;

pub use events::{
    AudioChunk, AudioFormat, BackendReason, Done, ErrorInfo, SentenceEnd, SentenceText, SentenceWords, ServerEvent, SessionInfo, TextDelta, TimingSource,
    WordTiming, PROTOCOL_VERSION,
};
pub use order::check_order;

/// How a response is delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Delivery {
    /// Server-Sent Events: JSON messages, audio in base64 (`format: "sse"`, the default).
    Sse,
    /// Length-prefixed binary frames: JSON for control, raw audio bytes (`format: "binary"`).
    Binary,
}

impl Delivery {
    /// The response's `Content-Type` for this delivery.
    pub fn content_type(self) -> &'static str {
        match self {
            Delivery::Sse => sse::CONTENT_TYPE,
            Delivery::Binary => binary::CONTENT_TYPE,
        }
    }

    /// One message, encoded as this delivery sends it.
    pub fn encode(self, event: &ServerEvent) -> bytes::Bytes {
        match self {
            Delivery::Sse => sse::encode(event),
            Delivery::Binary => binary::encode(event),
        }
    }

    /// What this delivery sends while nothing else flows: an SSE comment, or an empty keep-alive frame.
    pub fn keep_alive(self) -> bytes::Bytes {
        match self {
            Delivery::Sse => sse::keep_alive(),
            Delivery::Binary => binary::keep_alive(),
        }
    }
}

/// A message that could not be decoded. The stream cannot be trusted past it.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ProtocolError {
    /// A message of a known type whose content could not be read.
    #[error("malformed {kind} message: {detail}")]
    Malformed {
        /// The message's type (`session`, `audio`, …).
        kind: String,
        /// What was wrong with it.
        detail: String,
    },
    /// A binary frame declared a payload larger than the limit: the declared length, then the limit,
    /// in bytes.
    #[error("frame of {0} bytes is larger than the {1} byte limit")]
    FrameTooLarge(usize, usize),
    /// The stream ended partway through a message.
    #[error("the stream ended inside a message")]
    Truncated,
}

/// An incremental decoder of either delivery.
pub enum Decoder {
    /// Reads Server-Sent Events.
    Sse(sse::SseDecoder),
    /// Reads binary frames.
    Binary(binary::BinaryDecoder),
}

impl Decoder {
    /// A decoder for `delivery`, with nothing read yet.
    pub fn new(delivery: Delivery) -> Self {
        match delivery {
            Delivery::Sse => Decoder::Sse(sse::SseDecoder::default()),
            Delivery::Binary => Decoder::Binary(binary::BinaryDecoder::default()),
        }
    }

    /// Feeds bytes as they arrive; returns the messages they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<ServerEvent>, ProtocolError> {
        match self {
            Decoder::Sse(d) => d.push(bytes),
            Decoder::Binary(d) => d.push(bytes),
        }
    }

    /// Says whether the stream ended cleanly between messages.
    pub fn finish(&self) -> Result<(), ProtocolError> {
        match self {
            Decoder::Sse(d) => d.finish(),
            Decoder::Binary(d) => d.finish(),
        }
    }
}
