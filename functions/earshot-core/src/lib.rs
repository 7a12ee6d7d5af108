//! earshot's core: everything that decides *what* to speak and *when*, with no AWS and no network in
//! it. The TTS backends, the agent sources and the binaries build on this crate; it depends on none of
//! them.
//!
//! - [`text`]: the streaming sentence segmenter and the speech normaliser.

pub mod text;
