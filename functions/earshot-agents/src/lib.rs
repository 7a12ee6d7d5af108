//! Agent sources: where an answer's text comes from.
//!
//! - [`scripted`]: a scripted agent that streams a given answer at a chosen token rate, with pauses
//!   as when an agent calls a tool. It is the embedded default for local runs, and the agent of the
//!   tests and benchmarks, where a fixed pace makes runs comparable.

pub mod scripted;
pub mod tokens;

pub use scripted::{Sample, Script, ScriptItem, ScriptedAgent, ScriptedConfig};
