//! Word timings estimated from a sentence's audio, for a backend that gives none (Polly's bidirectional
//! stream has no speech marks).
//!
//! The audio is read as an energy envelope (RMS per 10 ms, kept as the audio passes: no PCM is held).
//! Speech runs from the first to the last frame above a threshold relative to the loudest; inside it, runs
//! of quiet frames are pauses. A pause near where a punctuated word boundary (`,` `;` `.` …) is expected
//! pins that boundary; any other long pause pins the boundary nearest it; between pins the time is shared
//! out by each word's syllables (a vowel group of a Latin word, each Han or kana character, two per
//! digit). The result is marked `estimated`; BENCHMARKS.md ("Word timings") measures it against the
//! Kokoro model's own timings on the same sentences.

use super::written::{is_cjk, written_words};
use super::WordTiming;

/// Milliseconds per envelope frame (as near as whole samples allow: [`Envelope::frame_ms`]).
const FRAME_MS: f64 = 10.0;
/// Quieter than this below the loudest frame is silence (in amplitude: about −30 dB).
const SILENCE_RATIO: f64 = 0.03;
/// A quiet run at least this long inside speech is a pause.
const PAUSE_FRAMES: usize = 6;
/// A pause at least this long is a word boundary even where no punctuation says so.
const LONG_PAUSE_FRAMES: usize = 15;

/// The energy envelope of one sentence's audio: RMS per 10 ms frame of PCM s16le mono.
#[derive(Debug, Clone, Default)]
pub struct Envelope {
    frame_samples: usize,
    frame_ms: f64,
    frames: Vec<f64>,
    sum: f64,
    count: usize,
    /// A byte left over from a chunk of odd length.
    odd: Option<u8>,
}

impl Envelope {
    /// An empty envelope of audio at `sample_rate`.
    pub fn new(sample_rate: u32) -> Envelope {
        let frame_samples = (sample_rate as usize / 100).max(1);
        Envelope { frame_samples, frame_ms: frame_samples as f64 * 1000.0 / sample_rate.max(1) as f64, ..Default::default() }
    }

    /// Milliseconds one frame holds: 10, or a hair less where the rate is not a multiple of 100 Hz.
    fn frame_ms(&self) -> f64 {
        if self.frame_ms > 0.0 {
            self.frame_ms
        } else {
            FRAME_MS
        }
    }

    /// Takes the next piece of the sentence's audio.
    pub fn push(&mut self, pcm: &[u8]) {
        let mut bytes = pcm;
        if let Some(low) = self.odd.take() {
            if let Some((&high, rest)) = bytes.split_first() {
                self.sample(i16::from_le_bytes([low, high]));
                bytes = rest;
            } else {
                self.odd = Some(low);
            }
        }
        let mut pairs = bytes.chunks_exact(2);
        for pair in &mut pairs {
            self.sample(i16::from_le_bytes([pair[0], pair[1]]));
        }
        if let [last] = pairs.remainder() {
            self.odd = Some(*last);
        }
    }

    fn sample(&mut self, s: i16) {
        if self.frame_samples == 0 {
            self.frame_samples = 240;
        }
        let v = s as f64;
        self.sum += v * v;
        self.count += 1;
        if self.count == self.frame_samples {
            self.frames.push((self.sum / self.count as f64).sqrt());
            self.sum = 0.0;
            self.count = 0;
        }
    }

    /// The audio's length in milliseconds, whole frames.
    pub fn duration_ms(&self) -> f64 {
        self.frames.len() as f64 * self.frame_ms()
    }
}

/// A word to place: its text and how long it is expected to take, in syllables.
struct Word {
    text: String,
    syllables: f64,
    /// Punctuation follows it in the text: a pause is likely after it.
    pause_after: bool,
}

fn words_of(text: &str) -> Vec<Word> {
    let written = written_words(text);
    let mut out = Vec::with_capacity(written.len());
    let mut at = 0;
    for word in written {
        let found = text[at..].find(&word).map_or(at, |i| at + i);
        at = found + word.len();
        let next_word_at = text[at..].find(|c: char| c.is_alphanumeric()).map_or(text.len(), |i| at + i);
        let pause_after = text[at..next_word_at].chars().any(|c| ",;:.!?…，、；：。！？".contains(c));
        out.push(Word { syllables: syllables(&word), text: word, pause_after });
    }
    out
}

/// Syllables a word is expected to take: vowel groups of Latin letters, one per Han or kana character,
/// two per digit; never less than one.
fn syllables(word: &str) -> f64 {
    let mut count = 0.0;
    let mut in_vowel = false;
    for c in word.chars() {
        if is_cjk(c) {
            count += 1.0;
            in_vowel = false;
        } else if c.is_ascii_digit() {
            count += 2.0;
            in_vowel = false;
        } else {
            let vowel = "aeiouyàâäéèêëîïôöûùüÿœæáíóúãõåAEIOUYÀÂÉÈÊËÎÏÔÛÙÜŒÆ".contains(c);
            if vowel && !in_vowel {
                count += 1.0;
            }
            in_vowel = vowel;
        }
    }
    // A consonant onset and coda take time of their own: a third of a syllable per word.
    f64::max(count, 1.0) + 0.3
}

/// The words of `text` timed from the sentence's audio `envelope` (milliseconds from its first sample).
/// Empty when the text has no words; with no audio above silence, every word is placed by its length
/// over the whole audio.
pub fn estimate(text: &str, envelope: &Envelope) -> Vec<WordTiming> {
    let words = words_of(text);
    let frames = &envelope.frames;
    if words.is_empty() || frames.is_empty() {
        return Vec::new();
    }
    let loudest = frames.iter().cloned().fold(0.0, f64::max);
    let threshold = (loudest * SILENCE_RATIO).max(1.0);
    let voiced: Vec<bool> = frames.iter().map(|&f| f > threshold).collect();
    let first = voiced.iter().position(|&v| v).unwrap_or(0);
    let last = voiced.iter().rposition(|&v| v).map_or(frames.len(), |i| i + 1);
    // Pauses inside speech: (start, end) frames of quiet runs.
    let mut pauses: Vec<(usize, usize)> = Vec::new();
    let mut run_start = None;
    for (i, &v) in voiced.iter().enumerate().take(last).skip(first) {
        match (v, run_start) {
            (false, None) => run_start = Some(i),
            (true, Some(s)) => {
                if i - s >= PAUSE_FRAMES {
                    pauses.push((s, i));
                }
                run_start = None;
            }
            _ => {}
        }
    }
    // Where each boundary (after word k) falls if the speech were shared by syllables alone.
    let total: f64 = words.iter().map(|w| w.syllables).sum();
    let span = (last - first) as f64;
    let mut expected = Vec::with_capacity(words.len() - 1);
    let mut sum = 0.0;
    for w in &words[..words.len() - 1] {
        sum += w.syllables;
        expected.push(first as f64 + span * sum / total);
    }
    // Pins: boundary k → the pause (start, end) that lies there.
    let mut pins: Vec<Option<(usize, usize)>> = vec![None; words.len() - 1];
    let mut used = vec![false; pauses.len()];
    let reach = (span * 0.25).max(30.0);
    let pin = |k: usize, only_long: bool, pins: &mut Vec<Option<(usize, usize)>>, used: &mut Vec<bool>| {
        // The pause must lie between the pins on either side.
        let after = pins[..k].iter().rev().flatten().next().map_or(first, |p| p.1);
        let before = pins[k + 1..].iter().flatten().next().map_or(last, |p| p.0);
        let best = pauses
            .iter()
            .enumerate()
            .filter(|(i, p)| !used[*i] && p.0 >= after && p.1 <= before && (!only_long || p.1 - p.0 >= LONG_PAUSE_FRAMES))
            .map(|(i, p)| (i, ((p.0 + p.1) as f64 / 2.0 - expected[k]).abs()))
            .filter(|(_, distance)| *distance <= reach)
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((i, _)) = best {
            used[i] = true;
            pins[k] = Some(pauses[i]);
        }
    };
    for k in (0..words.len() - 1).filter(|&k| words[k].pause_after) {
        pin(k, false, &mut pins, &mut used);
    }
    // Long pauses not taken by punctuation: the boundary nearest each.
    for i in 0..pauses.len() {
        if used[i] || pauses[i].1 - pauses[i].0 < LONG_PAUSE_FRAMES {
            continue;
        }
        let centre = (pauses[i].0 + pauses[i].1) as f64 / 2.0;
        let nearest =
            (0..words.len() - 1).filter(|&k| pins[k].is_none()).min_by(|&a, &b| (expected[a] - centre).abs().total_cmp(&(expected[b] - centre).abs()));
        if let Some(k) = nearest {
            let after = pins[..k].iter().rev().flatten().next().map_or(first, |p| p.1);
            let before = pins[k + 1..].iter().flatten().next().map_or(last, |p| p.0);
            if pauses[i].0 >= after && pauses[i].1 <= before {
                used[i] = true;
                pins[k] = Some(pauses[i]);
            }
        }
    }
    // Between pins, time by syllables.
    let mut out = Vec::with_capacity(words.len());
    let mut segment_start = 0usize;
    let mut from = first as f64;
    for k in 0..words.len() {
        let is_last = k + 1 == words.len();
        let Some((to, next_from)) = (if is_last { Some((last as f64, last as f64)) } else { pins[k].map(|p| (p.0 as f64, p.1 as f64)) }) else {
            continue;
        };
        let group = &words[segment_start..=k];
        let weight: f64 = group.iter().map(|w| w.syllables).sum();
        let mut at = from;
        for w in group {
            let end = at + (to - from) * w.syllables / weight;
            out.push(WordTiming { text: w.text.clone(), start_ms: at * envelope.frame_ms(), end_ms: end * envelope.frame_ms() });
            at = end;
        }
        segment_start = k + 1;
        from = next_from;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PCM of tone bursts (speech) and silences, each `(milliseconds, loud)`.
    fn pcm(parts: &[(u32, bool)]) -> Vec<u8> {
        let mut out = Vec::new();
        for &(ms, loud) in parts {
            for i in 0..ms * 16 {
                let v = if loud { ((i as f64 * 0.3).sin() * 8000.0) as i16 } else { 0 };
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        out
    }

    #[test]
    fn a_pause_at_a_comma_pins_the_boundary_there() {
        let mut envelope = Envelope::new(16_000);
        // "Well, the answer is yes." : 300 ms, a 200 ms pause, 900 ms.
        let audio = pcm(&[(50, false), (300, true), (200, false), (900, true), (50, false)]);
        // Chunks of odd sizes: the envelope carries samples and bytes across them.
        for chunk in audio.chunks(999) {
            envelope.push(chunk);
        }
        let words = estimate("Well, the answer is yes.", &envelope);
        assert_eq!(words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>(), ["Well", "the", "answer", "is", "yes"]);
        assert!((words[0].start_ms - 50.0).abs() <= 10.0 && (words[0].end_ms - 350.0).abs() <= 10.0, "{words:?}");
        assert!((words[1].start_ms - 550.0).abs() <= 10.0, "{words:?}");
        assert!((words[4].end_ms - 1450.0).abs() <= 10.0, "{words:?}");
        for pair in words.windows(2) {
            assert!(pair[0].end_ms <= pair[1].start_ms && pair[0].start_ms <= pair[0].end_ms);
        }
    }

    #[test]
    fn silence_or_no_words_give_nothing_to_place() {
        assert!(estimate("", &Envelope::new(16_000)).is_empty());
        assert!(estimate("Hello.", &Envelope::new(16_000)).is_empty());
    }
}
