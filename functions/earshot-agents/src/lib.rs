//! Agent sources: where an answer's text comes from.
//!
//! - [`scripted`]: a scripted agent that streams a given answer at a chosen token rate, with pauses
//!   as when an agent calls a tool. It is the embedded default for local runs, and the agent of the
//!   tests and benchmarks, where a fixed pace makes runs comparable.
//! - [`openai`]: a model behind any OpenAI-compatible chat completions endpoint, streamed.
//! - [`http_agent`]: any agent behind an HTTP endpoint that streams text (SSE, NDJSON or plain).
//!
//! The Bedrock agent lives with the other AWS edges (`earshot-aws`).

#![warn(missing_docs)]

pub mod http_agent;
pub mod http_stream;
pub mod openai;
pub mod scripted;
pub mod tokens;

pub use http_agent::{AnswerFormat, HttpAgent, HttpAgentSettings};
pub use openai::{OpenAiAgent, OpenAiSettings};
pub use scripted::{Sample, Script, ScriptItem, ScriptedAgent, ScriptedConfig, Tokens};
