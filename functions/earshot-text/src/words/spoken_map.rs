//! From the words a backend was sent back to the words the answer wrote.
//!
//! The Kokoro container is sent a sentence in its spoken form for its language (`12,50 €` goes as
//! `douze euros cinquante`, `10 h 30` as `dix heures trente`) and times the words it was sent. Captions
//! show the sentence as written, so each written word must span what was said for it. The two word
//! lists are aligned in order on the words they share (a longest common subsequence, ignoring case);
//! between two shared words, the written words there span the spoken words there, shared by length.
//! A written word is given out once every spoken word of its group has been timed, so the words still
//! stream piece by piece.

use std::ops::Range;

use super::written::written_words;
use super::WordTiming;

/// One sentence's written words, the spoken words that stand for them, and those timed so far.
#[derive(Debug)]
pub struct SpokenMap {
    written: Vec<String>,
    /// The words the backend was sent, as this side cuts them.
    spoken: Vec<String>,
    /// Written and spoken ranges that stand for each other, in order, covering both lists.
    groups: Vec<(Range<usize>, Range<usize>)>,
    /// The backend's timing of each spoken word, by place; `None` for one it did not time (a word of a
    /// script its front end drops) or not yet.
    timed: Vec<Option<WordTiming>>,
    /// The spoken words placed so far: the backend's words are matched to them by text, in order.
    placed: usize,
    next_group: usize,
}

/// How far ahead of the next expected word a timed word is looked for: the words a backend may drop in a row.
const LOOK_AHEAD: usize = 6;

impl SpokenMap {
    /// The map for a sentence `written` as it was sent, `spoken`.
    pub fn new(written: &str, spoken: &str) -> SpokenMap {
        // A pronunciation marked inline is timed as its words (`crate::pronounced`).
        let written_list = written_words(&crate::pronounced::plain(written));
        let spoken_list = written_words(&crate::pronounced::plain(spoken));
        let groups = groups(&written_list, &spoken_list);
        let timed = vec![None; spoken_list.len()];
        SpokenMap { written: written_list, spoken: spoken_list, groups, timed, placed: 0, next_group: 0 }
    }

    /// Takes the next spoken words, timed; returns the written words now complete. Each is placed by its
    /// text at or a little after the next expected word: a word the backend did not time (its front end
    /// dropped a script it cannot read) is passed over, and one this side does not expect is set aside.
    pub fn push(&mut self, words: Vec<WordTiming>) -> Vec<WordTiming> {
        for word in words {
            let wanted = word.text.to_lowercase();
            let end = (self.placed + LOOK_AHEAD).min(self.spoken.len());
            if let Some(at) = (self.placed..end).find(|&j| self.spoken[j].to_lowercase() == wanted) {
                self.timed[at] = Some(word);
                self.placed = at + 1;
            }
        }
        self.ready(false)
    }

    /// Whether the backend has timed any word of the sentence (one that times none gives no words).
    pub fn timed_any(&self) -> bool {
        self.timed.iter().any(Option::is_some)
    }

    /// The sentence's audio is complete: the written words still owed, timed with what came (a backend
    /// that timed fewer words than expected ends them at its last).
    pub fn finish(&mut self) -> Vec<WordTiming> {
        self.ready(true)
    }

    fn ready(&mut self, finishing: bool) -> Vec<WordTiming> {
        let mut out = Vec::new();
        while let Some((written, spoken)) = self.groups.get(self.next_group).cloned() {
            if spoken.end > self.placed && !finishing {
                break;
            }
            // The group's span: from its first timed word to its last; a group with none timed is a
            // moment, where the words before it ended.
            let timed: Vec<&WordTiming> = self.timed[spoken.clone()].iter().flatten().collect();
            let before = self.timed[..spoken.start].iter().flatten().last().map_or(0.0, |w| w.end_ms);
            let start = timed.first().map_or(before, |w| w.start_ms.max(before));
            let end = timed.last().map_or(start, |w| w.end_ms).max(start);
            let words = &self.written[written];
            let total: usize = words.iter().map(|w| w.chars().count()).sum::<usize>().max(1);
            let mut at = 0usize;
            for word in words {
                let share = |n: usize| start + (end - start) * n as f64 / total as f64;
                let length = word.chars().count();
                out.push(WordTiming { text: word.clone(), start_ms: share(at), end_ms: share(at + length) });
                at += length;
            }
            self.next_group += 1;
        }
        out
    }
}

/// The written and spoken ranges that stand for each other: each shared word is a group of its own,
/// the words between two shared ones another; a range empty on one side joins its neighbour.
fn groups(written: &[String], spoken: &[String]) -> Vec<(Range<usize>, Range<usize>)> {
    let (n, m) = (written.len(), spoken.len());
    if n == 0 {
        return Vec::new();
    }
    if m == 0 {
        return vec![(0..n, 0..0)];
    }
    let same = |i: usize, j: usize| written[i].to_lowercase() == spoken[j].to_lowercase();
    // Longest common subsequence, from the ends.
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if same(i, j) { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let mut segments: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    let (mut i, mut j, mut gap) = (0, 0, (0, 0));
    while i < n && j < m {
        if same(i, j) && lcs[i][j] == lcs[i + 1][j + 1] + 1 {
            segments.push((gap.0..i, gap.1..j));
            segments.push((i..i + 1, j..j + 1));
            i += 1;
            j += 1;
            gap = (i, j);
        } else if lcs[i + 1][j] >= lcs[i][j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    segments.push((gap.0..n, gap.1..m));
    // Fold the ranges empty on one side into the group before (or, at the start, the one after).
    let mut out: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    let mut pending: Option<(Range<usize>, Range<usize>)> = None;
    for (w, s) in segments.into_iter().filter(|(w, s)| !(w.is_empty() && s.is_empty())) {
        let (w, s) = match pending.take() {
            Some((pw, ps)) => (pw.start.min(w.start)..w.end, ps.start.min(s.start)..s.end),
            None => (w, s),
        };
        if !w.is_empty() && !s.is_empty() {
            out.push((w, s));
        } else if let Some(last) = out.last_mut() {
            last.0.end = w.end.max(last.0.end);
            last.1.end = s.end.max(last.1.end);
        } else {
            pending = Some((w, s));
        }
    }
    if let Some((w, s)) = pending {
        out.push((w, s));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(words: &[&str]) -> Vec<WordTiming> {
        words.iter().enumerate().map(|(i, w)| WordTiming { text: w.to_string(), start_ms: i as f64 * 100.0, end_ms: i as f64 * 100.0 + 80.0 }).collect()
    }

    #[test]
    fn a_sentence_sent_as_written_maps_word_for_word() {
        let mut map = SpokenMap::new("Hello there, friend.", "Hello there, friend.");
        let got = map.push(timed(&["Hello", "there", "friend"]));
        assert_eq!(got, timed(&["Hello", "there", "friend"]));
        assert!(map.finish().is_empty());
    }

    #[test]
    fn a_written_number_spans_the_words_said_for_it() {
        let mut map = SpokenMap::new("Ça coûte 12,50 € ici.", "Ça coûte douze euros cinquante ici.");
        // The first piece timed "Ça coûte douze": the number is not complete yet.
        let first = map.push(timed(&["Ça", "coûte", "douze"]));
        assert_eq!(first.iter().map(|w| w.text.as_str()).collect::<Vec<_>>(), ["Ça", "coûte"]);
        let mut rest = timed(&["Ça", "coûte", "douze", "euros", "cinquante", "ici"]);
        let rest = map.push(rest.split_off(3));
        assert_eq!(rest.iter().map(|w| (w.text.as_str(), w.start_ms, w.end_ms)).collect::<Vec<_>>(), [("12,50", 200.0, 480.0), ("ici", 500.0, 580.0)]);
    }

    #[test]
    fn a_word_the_backend_dropped_is_passed_over_not_given_the_next_ones_time() {
        // The container reads English and drops the Cyrillic word.
        let mut map = SpokenMap::new("Hello Привет, my friend.", "Hello Привет, my friend.");
        let got = map.push(timed(&["Hello", "my", "friend"]));
        let got: Vec<(&str, f64, f64)> = got.iter().map(|w| (w.text.as_str(), w.start_ms, w.end_ms)).collect();
        assert_eq!(got, [("Hello", 0.0, 80.0), ("Привет", 80.0, 80.0), ("my", 100.0, 180.0), ("friend", 200.0, 280.0)]);
    }

    #[test]
    fn words_the_backend_never_timed_end_at_its_last() {
        let mut map = SpokenMap::new("one two three", "one two three");
        assert_eq!(map.push(timed(&["one"])).len(), 1);
        let rest = map.finish();
        assert_eq!(rest.iter().map(|w| (w.text.as_str(), w.start_ms, w.end_ms)).collect::<Vec<_>>(), [("two", 80.0, 80.0), ("three", 80.0, 80.0)]);
    }
}
