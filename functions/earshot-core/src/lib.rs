//! earshot's core: everything that decides *what* to speak and *when*, with no AWS and no network in
//! it. The TTS backends, the agent sources and the binaries build on this crate; it depends on none of
//! them.
//!
//! - [`text`]: the text path, which is its own crate (`earshot-text`, no async runtime): the streaming
//!   sentence segmenter, the speech normaliser and spoken forms; [`language`]: which language an answer
//!   is spoken in (a request's BCP 47 tag, or detected); [`words`]: the words of a sentence and when each
//!   is heard. Re-exported here so that the core's users name one crate.
//! - [`scheduler`]: agent text to ordered speech, with a release policy, bounded queues and
//!   cancellation.
//! - [`agent`] and [`speech`]: the interfaces of agent sources and TTS backends ([`agent_deadlines`]: the
//!   time limits every agent runs under); [`error`]: the one
//!   failure shape they, the transport and the protocol share.
//! - [`tasks`]: the one tracker every task of a conversation is spawned on, however deep.
//! - [`store`]: the shared record of live conversations (interrupts across processes), as a trait;
//!   [`key_book`]: where a deployment keeps its API keys' records, as a trait.
//! - [`failover`]: several backends in order, the first that opens ([`arm`]: one of them, opened);
//!   [`switcher`]: the one place a conversation changes session before its first audio (a failure, or
//!   the language its first sentence settles).
//! - [`cache`]: the audio of sentences said before, bounded in bytes; [`cached_session`]: a backend
//!   session that answers them from it.
//! - [`session_layer`]: a layer around a speech session (the budget, the lexicon, the switcher, the
//!   cache) and the one relay each runs in; [`session_stack`]: their order, written once;
//!   [`pronouncing`]: the lexicon's layer; [`rendering`]: an SSML answer's, outermost.
//! - [`protocol`]: the versioned wire protocol to frontends (SSE and binary frames); [`output`]: the
//!   audio format a client plays, and the encoder that turns a backend's PCM into it.
//! - [`timeline`]: the measurement marks and the metrics derived from them; [`playback`]: the
//!   simulated listener whose silences they count.

#![warn(missing_docs)]
// Unit tests spawn their own helpers; clippy.toml keeps the crate's own code on the tracker.
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub use earshot_text as text;
pub use earshot_text::{language, words};

pub mod agent;
pub mod agent_deadlines;
pub mod arm;
pub mod arm_health;
pub mod budget;
pub mod cache;
pub mod cached_session;
pub mod error;
pub mod failover;
pub mod key_book;
pub mod output;
pub mod playback;
pub mod pronouncing;
pub mod protocol;
pub mod redact;
pub mod rendering;
pub mod scheduler;
pub mod session_layer;
pub mod session_stack;
pub mod speech;
pub mod stats;
pub mod store;
pub mod switcher;
pub mod tasks;
pub mod timeline;
pub mod voice_blend;
