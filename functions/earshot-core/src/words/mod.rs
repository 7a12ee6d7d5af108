//! Words and when each is heard: what captions highlight in step with the audio, and what tells how much of
//! an interrupted answer was heard, to the word.
//!
//! Timings come two ways. A backend that knows them sends them (the Kokoro container times each word from
//! its model's durations, exact to the model's 25 ms frames): [`crate::speech::SpeechEvent::Words`]. For
//! one that does not (Polly's bidirectional stream gives no speech marks), the scheduler estimates them from
//! the sentence's own audio once it is complete ([`estimate`]): silences found in the PCM, then the words'
//! syllables shared out between them. Either way a sentence's words are its written words ([`written`]), in
//! order, never overlapping, timed in milliseconds from the sentence's first sample, and the `words`
//! message says which way they were made.
//!
//! A backend sent a sentence in its spoken form (`12,50 €` as « douze euros cinquante ») times the words
//! it was sent; [`spoken_map`] turns them back into the written words, each spanning what was said for it.

pub mod estimate;
pub mod spoken_map;
pub mod written;

pub use estimate::{estimate, Envelope};
pub use spoken_map::SpokenMap;
pub use written::written_words;
