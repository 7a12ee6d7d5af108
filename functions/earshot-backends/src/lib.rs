//! Text-to-speech backends: each turns an earshot speech session into calls to a voice.
//!
//! - [`kokoro`]: the Kokoro container over its WebSocket contract (`infra/kokoro/PROTOCOL.md`), as
//!   the local stack runs it. The same container serves SageMaker's bidirectional stream.
//! - [`synthetic`]: a voice that emits a tone at real-time pace after a fixed first-audio latency. It
//!   stands in for a model where the model cannot serve the load (orchestrator load tests), and says so.

#![warn(missing_docs)]

pub mod container_session;
pub mod kokoro;
pub mod kokoro_wire;
pub mod synthetic;

pub use kokoro::{KokoroBackend, KokoroConfig};
pub use synthetic::{SyntheticBackend, SyntheticConfig};
