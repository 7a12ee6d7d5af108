//! Words and when each is heard: what captions highlight in step with the audio, and what tells how much of
//! an interrupted answer was heard, to the word.
//!
//! Timings come two ways. A backend that knows them sends them (the Kokoro container times each word from
//! its model's durations, exact to the model's 25 ms frames; earshot-core's `SpeechEvent::Words`). For
//! one that does not (Polly's bidirectional stream gives no speech marks), the scheduler estimates them from
//! the sentence's own audio once it is complete ([`estimate()`]): silences found in the PCM, then the words'
//! syllables shared out between them. Either way a sentence's words are its written words ([`written`]), in
//! order, never overlapping, timed in milliseconds from the sentence's first sample, and the `words`
//! message says which way they were made.
//!
//! A backend sent a sentence in its spoken form (`12,50 €` as « douze euros cinquante ») times the words
//! it was sent; [`spoken_map`] turns them back into the written words, each spanning what was said for it.

pub mod estimate;
pub mod spoken_map;
pub mod written;

use serde::{Deserialize, Serialize};

pub use estimate::{estimate, Envelope};
pub use spoken_map::SpokenMap;
pub use written::written_words;

/// When a word of a sentence is heard: milliseconds from the sentence's first sample. What the `words`
/// message carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WordTiming {
    /// The word as the sentence writes it.
    pub text: String,
    /// When it starts being heard.
    pub start_ms: f64,
    /// When it has been heard.
    pub end_ms: f64,
}

/// What a listener heard of an answer who heard `heard_ms` of its audio, each sentence lasting its audio
/// (`(text, audio_ms, words)`, in order): the sentences heard whole, then the one the time falls in cut after
/// its last whole word heard ([`heard_chars`]), or, without word timings, at the word its share of the audio
/// reaches.
pub fn heard_text<'a>(sentences: impl IntoIterator<Item = (&'a str, f64, &'a [WordTiming])>, heard_ms: f64) -> String {
    let mut parts: Vec<&str> = Vec::new();
    let mut before = 0.0;
    for (text, audio_ms, words) in sentences {
        if audio_ms <= 0.0 || heard_ms <= before {
            break;
        }
        // Within a millisecond of its end is the whole sentence (a client may round what it played).
        if heard_ms >= before + audio_ms - 1.0 {
            parts.push(text);
            before += audio_ms;
            continue;
        }
        let into = heard_ms - before;
        let letters: Vec<char> = text.chars().collect();
        let chars = heard_chars(text, words, into).unwrap_or_else(|| word_start(&letters, (letters.len() as f64 * into / audio_ms).round() as usize));
        let end = text.char_indices().nth(chars).map_or(text.len(), |(i, _)| i);
        let cut = text[..end].trim_end();
        if !cut.is_empty() {
            parts.push(cut);
        }
        break;
    }
    parts.join(" ")
}

/// `offset` (in characters of `text`), moved back to the start of the word it falls in (kept where a word
/// has just ended): where an interrupted sentence is cut when it has no word timings.
pub fn word_start(text: &[char], offset: usize) -> usize {
    if offset >= text.len() || text[offset].is_whitespace() {
        return offset.min(text.len());
    }
    let mut i = offset;
    while i > 0 && !text[i - 1].is_whitespace() {
        i -= 1;
    }
    i
}

/// How much of a sentence a listener heard who heard `heard_ms` of its audio, cut at words: the
/// characters of `text` up to the end of the last word that ended by then (0 when none did). `None`
/// when the sentence has no word timings (the caller then estimates from the audio's share). The web
/// client's `heardText` applies the same rule.
pub fn heard_chars(text: &str, words: &[WordTiming], heard_ms: f64) -> Option<usize> {
    if words.is_empty() {
        return None;
    }
    let mut at = 0usize;
    let mut heard_to = 0usize;
    for word in words {
        let Some(found) = text[at..].find(&word.text) else { break };
        at += found + word.text.len();
        if word.end_ms > heard_ms {
            break;
        }
        heard_to = at;
    }
    Some(text[..heard_to].chars().count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heard_part_ends_with_the_last_whole_word_heard() {
        let word = |text: &str, start: f64, end: f64| WordTiming { text: text.into(), start_ms: start, end_ms: end };
        let words = [word("Ça", 0.0, 150.0), word("coûte", 200.0, 450.0), word("12,50", 500.0, 1400.0)];
        let text = "Ça coûte 12,50 €.";
        assert_eq!(heard_chars(text, &words, 100.0), Some(0));
        assert_eq!(heard_chars(text, &words, 460.0), Some("Ça coûte".chars().count()));
        assert_eq!(heard_chars(text, &words, 1000.0), Some("Ça coûte".chars().count()));
        assert_eq!(heard_chars(text, &words, 1400.0), Some("Ça coûte 12,50".chars().count()));
        assert_eq!(heard_chars(text, &[], 1400.0), None);
    }

    #[test]
    fn an_answer_is_heard_whole_sentences_then_whole_words() {
        let word = |text: &str, start: f64, end: f64| WordTiming { text: text.into(), start_ms: start, end_ms: end };
        let first = [word("Hello", 0.0, 400.0), word("there", 450.0, 800.0)];
        let second = [word("It", 0.0, 100.0), word("shipped", 150.0, 500.0), word("today", 550.0, 900.0)];
        let answer = || [("Hello there.", 1000.0, &first[..]), ("It shipped today.", 1000.0, &second[..])];
        assert_eq!(heard_text(answer(), 0.0), "");
        assert_eq!(heard_text(answer(), 500.0), "Hello");
        assert_eq!(heard_text(answer(), 1000.0), "Hello there.");
        assert_eq!(heard_text(answer(), 1600.0), "Hello there. It shipped");
        assert_eq!(heard_text(answer(), 5000.0), "Hello there. It shipped today.");
        // Without word timings: the share of the audio, back to a word start.
        assert_eq!(heard_text([("One two three four.", 1000.0, &[][..])], 600.0), "One two");
    }
}
