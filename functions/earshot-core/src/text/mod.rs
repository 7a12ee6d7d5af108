//! Text on its way from an agent to a voice: Markdown made speakable ([`normaliser`]) and cut into
//! sentences as it streams ([`segmenter`]), then each sentence's numbers, times, currencies and
//! abbreviations in words for its language ([`spoken`]).

pub mod abbreviations;
pub mod chars;
pub mod list_marker;
pub mod normaliser;
pub mod segmenter;
pub mod spoken;

pub use normaliser::{normalise, Normaliser};
pub use segmenter::{split, BoundaryKind, Segmenter, SegmenterConfig, Sentence};
