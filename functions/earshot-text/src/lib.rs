//! Text on its way from a language model to a voice: everything earshot does to text, as a library with
//! no async runtime, no clock and no I/O, usable alone (as ripgrep's `grep-*` crates are).
//!
//! - [`normaliser`]: Markdown made speakable as it streams (emphasis, links, code, tables and list
//!   markers become what a voice should say).
//! - [`segmenter`]: the streaming sentence segmenter: text in, in chunks of any size; sentences out as
//!   soon as they are certain, the same however the text was chunked. Its word lists are
//!   [`abbreviations`], its character classes [`chars`], its list markers [`list_marker`].
//! - [`spoken`]: each sentence's numbers, times, dates, money, units, phone numbers and web and e-mail
//!   addresses in words for its language (English, French and Mandarin).
//! - [`lexicon`]: a pronunciation lexicon: written forms and what a voice says for them (words, or IPA
//!   marked inline as [`pronounced`] says).
//! - [`ssml`]: a portable SSML subset read as it streams, each tag carried in the text as a [`markup`]
//!   marker, and [`markup`]'s renderer: each sentence as written, and as every voice is sent it.
//! - [`language`]: BCP 47 tags, and detection by script then by trigram profile.
//! - [`words`]: the written words of a sentence, when each is heard (from a voice, or estimated from the
//!   sentence's audio), and the map from a spoken form's word timings back to the written words.
//!
//! ```
//! use earshot_text::{Segmenter, SegmenterConfig};
//!
//! let mut segmenter = Segmenter::new(SegmenterConfig::default());
//! let mut sentences = Vec::new();
//! for chunk in ["Dr. Smith paid $3.50 at 9 a.m. to", "day. It rained."] {
//!     sentences.extend(segmenter.push(chunk).into_iter().map(|s| s.text));
//! }
//! sentences.extend(segmenter.flush().into_iter().map(|s| s.text));
//! assert_eq!(sentences, ["Dr. Smith paid $3.50 at 9 a.m. today.", "It rained."]);
//! ```

#![warn(missing_docs)]

pub mod abbreviations;
pub mod certainty;
pub mod chars;
pub mod language;
pub mod lexicon;
pub mod list_marker;
pub mod markup;
pub mod normaliser;
pub mod pronounced;
pub mod segmenter;
pub mod spoken;
pub mod ssml;
pub mod words;

pub use language::Language;
pub use lexicon::Lexicon;
pub use normaliser::{normalise, Normaliser};
pub use segmenter::{split, BoundaryKind, Segmenter, SegmenterConfig, Sentence};
