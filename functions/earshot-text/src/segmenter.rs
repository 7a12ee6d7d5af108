//! Streaming sentence segmentation: text in, in chunks of any size; sentences out, as soon as they
//! are certain.
//!
//! The segmenter is a pure state machine: it owns no clock and does no I/O. It scans each character
//! once and keeps a scan position, so pushing text costs time linear in the text. At a candidate
//! boundary (a full stop, a newline, a list marker) it decides from the text around it; when that
//! needs text not yet seen (the character after a full stop, the rest of a URL), it stops and waits
//! for the next push. Decisions depend only on the text, never on how it was chunked, so the output is
//! the same however the text arrives. Memory holds only the pending sentence and its lookahead.
//!
//! Rules, in the order a reader meets them:
//! - `.` `?` `!` `…` and CJK `。！？` end sentences; closing quotes and brackets after them stay with
//!   the sentence (`."`, `.)`, `。」`, French `! »`).
//! - A full stop followed by a lower-case word, a digit (`3.14`, `2.10.0`) or another letter of the
//!   same word (`e.g`, `Node.js`) does not end a sentence; a capitalised word glued to a full stop
//!   (`arrived.Please`) does, unless the word is a link, an address or a file name.
//! - Titles (`Dr.`, `Mt.`), initials (`E.`), number words (`p. 55`, `No. 5`) and `e.g.`/`i.e.` keep the
//!   sentence going before a capitalised word; multi-dot abbreviations (`U.S.`) end it only when a
//!   typical sentence opener follows (`U.S. How` but `U.S. Government`).
//! - Text inside brackets and quotations does not end the enclosing sentence (`(… engineer.) at`,
//!   `《摔跤吧！爸爸》`), up to a bound in case a bracket is never closed.
//! - Ellipses end a sentence only before a capitalised word other than the pronoun `I`.
//! - A newline ends a sentence unless it wraps a line of prose (a lower-case continuation); a blank
//!   line always does.
//! - A list written on one line (`1. The first item 2. The second item`) splits at each marker.
//! - Options: a fast first fragment (the first clause of an answer, after a minimum number of words)
//!   and a maximum length (over-long sentences split at clause marks, else at spaces).

use crate::abbreviations::{
    is_proper_abbreviation, is_sentence_starter, is_street, is_time_of_day, is_time_preposition, is_title, is_unit, never_ends, precedes_number,
};
use crate::chars::{
    is_bracket_closer, is_cjk, is_cjk_clause_mark, is_cjk_terminator, is_clause_mark, is_closer, is_digit, is_dot, is_lower, is_markup, is_opener,
    is_terminator, straight_quote_opens,
};
use crate::language::Language;
use crate::list_marker::{self, ListMarker, Parsed};
use crate::markup;

/// How far (bytes) an unclosed bracket or quotation may reach before its contents may end sentences.
const BRACKET_REACH: usize = 400;
/// How much of a word (bytes) the segmenter reads ahead to classify it (a URL, an address).
const TOKEN_LOOKAHEAD: usize = 256;

/// Options of a [`Segmenter`].
#[derive(Debug, Clone, Default)]
pub struct SegmenterConfig {
    /// The text's language, where it is known (the conversation's): which abbreviation lists apply
    /// (French: `Me.` is a title too). `None`: the lists a wrong guess cannot hurt; CJK rules follow
    /// the script either way.
    pub language: Option<Language>,
    /// Release the first clause of an answer at a clause mark once it has this many words.
    pub fast_first_min_words: Option<usize>,
    /// Split sentences longer than this many characters at clause marks, else at spaces.
    pub max_chars: Option<usize>,
}

/// Why a sentence ended where it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoundaryKind {
    /// A terminator: `.`, `?`, `!`, an ellipsis, `。`.
    Terminal,
    /// A newline between lines of prose, or a blank line.
    Newline,
    /// The next item of a list written on one line.
    ListItem,
    /// The first clause of an answer, released early.
    FastFirst,
    /// A clause of an over-long sentence.
    MaxLength,
    /// Pending text released by [`Segmenter::flush`].
    Flush,
}

/// A sentence released by the segmenter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sentence {
    /// Its place in the answer, from 0.
    pub index: usize,
    /// Its text, trimmed, with line breaks inside it turned into spaces.
    pub text: String,
    /// What ended it.
    pub kind: BoundaryKind,
}

/// What the scan does at the current position.
enum Step {
    /// Not enough text to decide; wait for the next push.
    NeedMore,
    /// Move on to this position; the state was updated for what lies before it.
    Advance(usize),
    /// A sentence ends at this position.
    Boundary(usize, BoundaryKind),
}

/// What a terminator and the closers after it look like.
struct Run {
    end: usize,
    /// Dots in the run (`…` counts as three).
    dots: usize,
    question_or_bang: bool,
    cjk: bool,
    /// Dots separated by spaces (`. . .`).
    spaced: bool,
    first_end: usize,
    depth_after: u32,
}

/// The scan state of the sentence being read. Positions are absolute byte offsets in the stream.
#[derive(Debug, Clone, Default)]
struct SentenceState {
    depth: u32,
    depth_since: usize,
    word_start: Option<usize>,
    words: usize,
    cjk_chars: usize,
    chars: usize,
    has_word: bool,
    has_content: bool,
    /// Quotation marks standing alone as words (tokenised text: `saying '' …`); an odd count means
    /// a quotation is open.
    detached_quotes: u32,
    marker_checked: bool,
    prev: Option<char>,
    last_nonspace: Option<char>,
    last_clause: Option<usize>,
    last_space: Option<usize>,
    /// Where the SSML element holding text only that is open began (its opening marker): no length
    /// cut lands after it until it closes.
    element: Option<usize>,
}

/// The streaming segmenter. See the module documentation for its rules.
#[derive(Debug, Clone)]
pub struct Segmenter {
    cfg: SegmenterConfig,
    /// Pending text; `buf[0]` is at absolute offset `base`.
    buf: String,
    base: usize,
    /// Absolute offset where the pending sentence starts.
    start: usize,
    /// Absolute offset of the next character to scan.
    pos: usize,
    s: SentenceState,
    /// The marker of the current item of a list written on one line.
    list: Option<ListMarker>,
    /// Sentences released in this answer.
    emitted: usize,
    /// Absolute offset of the last boundary.
    last_boundary: usize,
    out: Vec<Sentence>,
    /// Whether [`Self::skim`] may read plain text; off only to test it against [`Self::step`].
    fast_path: bool,
}

impl Default for Segmenter {
    fn default() -> Self {
        Self::new(SegmenterConfig::default())
    }
}

impl Segmenter {
    /// A segmenter at the start of an answer.
    pub fn new(cfg: SegmenterConfig) -> Self {
        Segmenter {
            cfg,
            buf: String::new(),
            base: 0,
            start: 0,
            pos: 0,
            s: SentenceState::default(),
            list: None,
            emitted: 0,
            last_boundary: 0,
            out: Vec::new(),
            fast_path: true,
        }
    }

    /// Turns the fast path for plain text off, so that tests can check it changes nothing.
    #[doc(hidden)]
    pub fn without_fast_path(mut self) -> Self {
        self.fast_path = false;
        self
    }

    /// Adds text and returns the sentences it completes.
    pub fn push(&mut self, text: &str) -> std::vec::Drain<'_, Sentence> {
        self.buf.push_str(text);
        self.scan(false);
        self.compact();
        self.out.drain(..)
    }

    /// Releases everything pending, as at the end of an answer or when the agent says "speak now".
    /// Sentences inside the pending text are still split by the ordinary rules; the rest becomes
    /// one last sentence.
    pub fn flush(&mut self) -> std::vec::Drain<'_, Sentence> {
        self.scan(true);
        let end = self.end();
        self.emit(end, BoundaryKind::Flush);
        self.compact();
        self.out.drain(..)
    }

    /// The text not yet released.
    pub fn pending(&self) -> &str {
        &self.buf[self.start - self.base..]
    }

    /// Whether the pending text would be a complete sentence if a new sentence followed it. The
    /// scheduler asks this when the agent has gone quiet, to release a finished sentence without
    /// waiting for the character that would confirm it.
    pub fn pending_is_complete(&self) -> bool {
        self.probe_pending().0
    }

    /// How sure the end of the pending text is, where it would end a sentence were one to follow
    /// ([`Segmenter::pending_is_complete`]); `None` where it would not. The idle release lets a sure end
    /// go at once and holds an ambiguous one (`It costs $3.`) for the text that settles it
    /// ([`crate::certainty`]).
    pub fn pending_certainty(&self) -> Option<crate::certainty::Certainty> {
        self.pending_is_complete().then(|| crate::certainty::of_end(self.pending(), self.cfg.language.as_ref()))
    }

    /// Whether the pending text would end at a boundary were a new sentence to follow it, and the
    /// sentences the segmenter would then release.
    fn probe_pending(&self) -> (bool, Vec<Sentence>) {
        let pending = self.pending();
        let real_end = self.start + pending.trim_end().len();
        if pending.trim().is_empty() {
            return (false, Vec::new());
        }
        let mut probe = self.clone();
        probe.out.clear();
        probe.buf.push_str(" A ");
        probe.scan(false);
        (probe.last_boundary >= real_end, probe.out)
    }

    /// The pending text as the sentence it would be released as, if a new sentence followed it (as
    /// [`Segmenter::pending_is_complete`] decides); `None` where it would not be one sentence.
    pub fn pending_sentence(&self) -> Option<String> {
        match self.probe_pending() {
            (true, sentences) if sentences.len() == 1 => sentences.into_iter().next().map(|s| s.text),
            _ => None,
        }
    }

    #[inline]
    fn end(&self) -> usize {
        self.base + self.buf.len()
    }

    #[inline]
    fn text(&self, from: usize, to: usize) -> &str {
        &self.buf[from - self.base..to - self.base]
    }

    #[inline]
    fn rest(&self, from: usize) -> &str {
        &self.buf[from - self.base..]
    }

    #[inline]
    fn char_at(&self, at: usize) -> Option<char> {
        self.rest(at).chars().next()
    }

    fn compact(&mut self) {
        let drop = self.start - self.base;
        if drop > 0 {
            self.buf.drain(..drop);
            self.base = self.start;
        }
    }

    fn scan(&mut self, eof: bool) {
        while self.pos < self.end() {
            self.skim();
            if self.pos >= self.end() {
                break;
            }
            match self.step(eof) {
                Step::NeedMore => break,
                Step::Advance(to) => self.pos = to,
                Step::Boundary(at, kind) => self.emit(at, kind),
            }
        }
    }

    /// The fast path: reads plain ASCII words, the commas, hyphens and apostrophes inside or after
    /// them, and single spaces between them. None of these can end a sentence, so the fast path only
    /// keeps the counters that [`Self::step`] would keep. Everything else (other punctuation, line
    /// breaks, a sentence's first word, words of a one-line list, a fast first fragment's clause
    /// break) goes through `step`.
    #[inline]
    fn skim(&mut self) {
        if !self.fast_path || !self.s.marker_checked || self.list.is_some() {
            return;
        }
        let budget = match self.cfg.max_chars {
            Some(max) => max.saturating_sub(self.s.chars + 1),
            None => usize::MAX,
        };
        let watch_clauses = self.cfg.fast_first_min_words.is_some() && self.emitted == 0;
        let clause_ok = self.live_depth() == 0;
        let bytes = &self.buf.as_bytes()[self.pos - self.base..];
        let limit = bytes.len().min(budget);
        let mut i = 0;
        let mut last = match self.s.prev {
            Some(p) if p.is_ascii() => p as u8,
            _ => 0,
        };
        let mut last_nonspace = None;
        let mut word_start = self.s.word_start;
        let mut words = 0;
        let mut last_space = self.s.last_space;
        let mut last_clause = self.s.last_clause;
        while i < limit {
            let b = bytes[i];
            match SKIM_CLASS[b as usize] {
                ALNUM => {
                    if word_start.is_none() {
                        word_start = Some(self.pos + i);
                        words += 1;
                    }
                }
                INNER if word_start.is_some() && SKIM_CLASS[last as usize] == ALNUM => {}
                // After a word or its comma only: a word made of quotes is counted by `step`.
                SPACE if word_start.is_some() && (SKIM_CLASS[last as usize] == ALNUM || last == b',') => {
                    if last == b',' {
                        if watch_clauses {
                            break;
                        }
                        if clause_ok {
                            last_clause = Some(self.pos + i);
                        }
                    }
                    word_start = None;
                    last_space = Some(self.pos + i);
                    last = b;
                    i += 1;
                    continue;
                }
                _ => break,
            }
            last_nonspace = Some(b);
            last = b;
            i += 1;
        }
        if i == 0 {
            return;
        }
        self.s.chars += i;
        self.s.words += words;
        self.s.word_start = word_start;
        self.s.last_space = last_space;
        self.s.last_clause = last_clause;
        self.s.prev = Some(last as char);
        if let Some(b) = last_nonspace {
            self.s.last_nonspace = Some(b as char);
            self.s.has_word = true;
            self.s.has_content = true;
        }
        self.pos += i;
    }

    fn emit(&mut self, at: usize, kind: BoundaryKind) {
        let text = tidy(self.text(self.start, at));
        if !text.is_empty() {
            self.out.push(Sentence { index: self.emitted, text, kind });
            self.emitted += 1;
            self.last_boundary = at;
        }
        self.start = at;
        self.pos = at;
        self.s = SentenceState::default();
    }

    /// Bracket depth at the current position, ignoring brackets left open too long.
    #[inline]
    fn live_depth(&self) -> u32 {
        if self.s.depth > 0 && self.pos - self.s.depth_since <= BRACKET_REACH {
            self.s.depth
        } else {
            0
        }
    }

    /// Marks one character as read and updates the counters that do not depend on its class.
    #[inline]
    fn consume(&mut self, c: char) {
        self.s.chars += 1;
        self.s.prev = Some(c);
        if !c.is_whitespace() {
            self.s.last_nonspace = Some(c);
            self.s.has_content = true;
            if c.is_alphanumeric() {
                self.s.has_word = true;
            }
        }
    }

    /// Marks a span as read; says whether it held white space.
    fn consume_span(&mut self, from: usize, to: usize) -> bool {
        let mut spaced = false;
        let mut i = from;
        while i < to {
            let Some(ch) = self.char_at(i) else { break };
            spaced |= ch.is_whitespace();
            self.consume(ch);
            i += ch.len_utf8();
        }
        spaced
    }

    fn step(&mut self, eof: bool) -> Step {
        let at = self.pos;
        let Some(c) = self.char_at(at) else { return Step::NeedMore };
        let next = at + c.len_utf8();

        // An SSML marker (`crate::markup`) is read whole: it is no text and counts for no length, and
        // no length cut lands inside it or inside the element holding text only that it opens.
        if c == markup::OPEN {
            let rest = self.rest(at);
            let Some(len) = rest.find(markup::SEP) else { return if eof { Step::Advance(next) } else { Step::NeedMore } };
            if markup::opens_text_only(&rest[c.len_utf8()..len]) && self.s.element.is_none() {
                self.s.element = Some(at);
            }
            self.s.has_content = true;
            return Step::Advance(at + len + markup::SEP.len_utf8());
        }
        if c == markup::CLOSE {
            self.s.element = None;
            self.s.has_content = true;
            return Step::Advance(next);
        }

        // A sentence may open with a list marker, which is read whole and never ends the sentence.
        if !self.s.has_content && !c.is_whitespace() && !self.s.marker_checked {
            match list_marker::parse(self.rest(at), eof) {
                Parsed::NeedMore => return Step::NeedMore,
                Parsed::NotAMarker => {
                    self.list = None;
                    self.s.marker_checked = true;
                }
                Parsed::Marker(marker, len) => {
                    self.list = Some(marker);
                    self.s.marker_checked = true;
                    self.consume_span(at, at + len);
                    self.s.has_word = false;
                    return Step::Advance(at + len);
                }
            }
        }

        // Within a one-line list, the next marker starts the next item.
        if self.s.word_start.is_none() && self.s.has_word && !c.is_whitespace() {
            if let Some(expected) = self.list {
                match list_marker::parse(self.rest(at), eof) {
                    Parsed::NeedMore => return Step::NeedMore,
                    Parsed::Marker(found, _) if found.follows(&expected) => return Step::Boundary(at, BoundaryKind::ListItem),
                    _ => {}
                }
            }
        }

        if let Some(step) = self.clause_break(c, at) {
            return step;
        }

        if c.is_whitespace() {
            if c == '\n' && self.s.has_content {
                return self.decide_newline(at, eof);
            }
            if let Some(ws) = self.s.word_start {
                if self.text(ws, at).chars().all(|q| matches!(q, '\'' | '"')) {
                    self.s.detached_quotes += 1;
                }
            }
            self.s.word_start = None;
            self.s.last_space = Some(at);
            self.consume(c);
            return self.advance_checked(next);
        }

        if is_terminator(c) {
            return self.decide_terminator(at, eof);
        } else if is_opener(c) || (c == '"' && straight_quote_opens(self.s.prev)) {
            if self.live_depth() == 0 {
                self.s.depth = 0;
                self.s.depth_since = at;
            }
            self.s.depth += 1;
        } else if is_bracket_closer(c) || c == '"' {
            self.s.depth = self.s.depth.saturating_sub(1);
        } else if !c.is_ascii() && is_cjk(c) {
            self.s.cjk_chars += 1;
        }
        if self.s.word_start.is_none() {
            self.s.word_start = Some(at);
            if c.is_alphanumeric() && (c.is_ascii() || !is_cjk(c)) {
                self.s.words += 1;
            }
        }
        self.consume(c);
        self.advance_checked(next)
    }

    /// Records clause breaks (a clause mark followed by a space, or a CJK clause mark) and releases a
    /// fast first fragment there.
    fn clause_break(&mut self, c: char, at: usize) -> Option<Step> {
        let break_at = if c.is_whitespace() && self.s.prev.is_some_and(|p| is_clause_mark(p) && !is_cjk_clause_mark(p)) {
            at
        } else if is_cjk_clause_mark(c) {
            at + c.len_utf8()
        } else {
            return None;
        };
        if self.live_depth() > 0 || self.s.element.is_some() {
            return None;
        }
        self.s.last_clause = Some(break_at);
        let words = self.s.words + self.s.cjk_chars / 2;
        match self.cfg.fast_first_min_words {
            Some(min) if self.emitted == 0 && words >= min && break_at > at => {
                // A CJK clause mark: read it, then cut after it.
                self.consume(c);
                Some(Step::Boundary(break_at, BoundaryKind::FastFirst))
            }
            Some(min) if self.emitted == 0 && words >= min => Some(Step::Boundary(break_at, BoundaryKind::FastFirst)),
            _ => None,
        }
    }

    /// Moves on, unless the sentence has grown past the maximum length: then it ends at the best
    /// break before here (a clause mark in the second half, else the last space, else here).
    #[inline]
    fn advance_checked(&mut self, next: usize) -> Step {
        match self.length_cut(next) {
            Some(cut) => Step::Boundary(cut, BoundaryKind::MaxLength),
            None => Step::Advance(next),
        }
    }

    /// Where to cut a sentence that has reached the maximum length with the text up to `next`
    /// read, or `None` if it has not.
    fn length_cut(&self, next: usize) -> Option<usize> {
        let max = self.cfg.max_chars?.max(1);
        if self.s.chars < max {
            return None;
        }
        let half = self.start + (next - self.start) / 2;
        let cut = match (self.s.last_clause, self.s.last_space) {
            (Some(clause), _) if clause >= half && clause > self.start => clause,
            (_, Some(space)) if space > self.start => space,
            (Some(clause), _) if clause > self.start => clause,
            // No break: cut after exactly `max` characters.
            _ => self.start + markup::text_len_at(self.text(self.start, next), max),
        };
        // Never inside an element holding text only: before it, or (it starting the sentence) after it.
        match self.s.element {
            Some(open) if cut > open && open > self.start => Some(open),
            Some(open) if cut > open => None,
            _ => Some(cut),
        }
    }

    fn decide_newline(&mut self, at: usize, eof: bool) -> Step {
        let mut newlines = 0;
        let mut follower = None;
        for ch in self.rest(at).chars() {
            if ch == '\n' {
                newlines += 1;
            } else if !ch.is_whitespace() {
                follower = Some(ch);
                break;
            }
        }
        let Some(y) = follower else {
            if eof {
                self.consume('\n');
                return Step::Advance(at + 1);
            }
            return Step::NeedMore;
        };
        let p = self.s.last_nonspace.unwrap_or(' ');
        let wraps = newlines == 1 && (p.is_alphanumeric() || p == ',') && (is_lower(y) || (is_cjk(y) && is_cjk(p)));
        if wraps {
            self.s.word_start = None;
            self.s.last_space = Some(at);
            self.consume('\n');
            self.advance_checked(at + 1)
        } else {
            Step::Boundary(at, BoundaryKind::Newline)
        }
    }

    /// Reads the terminator run at `at`: terminators, the closers after them (also after a space,
    /// as in French `! »` or tokenised text `? ''`), spaced terminators (`. . .`, `! ?`) and citation
    /// marks (`.[1]`, `. [2][3]`). `None` when the run may go on past the text.
    fn read_run(&self, at: usize, eof: bool) -> Option<Run> {
        let mut run = Run {
            end: at,
            dots: 0,
            question_or_bang: false,
            cjk: false,
            spaced: false,
            first_end: at + self.char_at(at).map_or(1, char::len_utf8),
            depth_after: self.live_depth(),
        };
        let rest = self.rest(at);
        let mut glued_closer = false;
        let mut i = 0;
        while i < rest.len() {
            let c = rest[i..].chars().next().unwrap_or(' ');
            if is_terminator(c) {
                match c {
                    '.' | '．' => run.dots += 1,
                    '…' => run.dots += 3,
                    c if is_cjk_terminator(c) => run.cjk = true,
                    _ => run.question_or_bang = true,
                }
                i += c.len_utf8();
            } else if is_closer(c) || c == '`' {
                if is_bracket_closer(c) || c == '"' {
                    run.depth_after = run.depth_after.saturating_sub(1);
                }
                glued_closer = true;
                i += c.len_utf8();
            } else if c == '[' {
                match citation_len(&rest[i..], eof) {
                    None => return None,
                    Some(0) => break,
                    Some(n) => i += n,
                }
            } else if c.is_whitespace() && c != '\n' {
                // After a space: more terminators, a closing quote standing alone, or a citation.
                let after = &rest[i + c.len_utf8()..];
                let Some(n) = after.chars().next() else {
                    if eof {
                        break;
                    }
                    return None;
                };
                let skip = i + c.len_utf8();
                if is_terminator(n) && !run.cjk {
                    if is_dot(n) {
                        run.spaced = true;
                    }
                    i = skip;
                } else if n == '»' || n == '›' {
                    run.depth_after = run.depth_after.saturating_sub(1);
                    i = skip + n.len_utf8();
                } else if is_closer(n) && !glued_closer && !is_bracket_closer(n) {
                    // A detached quote (`as a ' Maistre Boursier . ' He`) closes the sentence's open
                    // quotation, or stands before a comma; otherwise it opens the next sentence.
                    let quote_len: usize = after.chars().take_while(|&q| is_closer(q) && !is_bracket_closer(q)).map(char::len_utf8).sum();
                    let beyond = &after[quote_len..];
                    let Some(w) = beyond.chars().next() else {
                        if eof {
                            i = skip + quote_len;
                            break;
                        }
                        return None;
                    };
                    if !w.is_whitespace() {
                        break;
                    }
                    let next_visible = beyond.trim_start().chars().next();
                    if next_visible.is_none() && !eof {
                        return None;
                    }
                    let closes = self.s.detached_quotes % 2 == 1 || next_visible.is_none_or(|v| matches!(v, ',' | ';' | ':' | ')'));
                    if !closes {
                        break;
                    }
                    glued_closer = true;
                    i = skip + quote_len;
                } else if n == '[' {
                    match citation_len(after, eof) {
                        None => return None,
                        Some(0) => break,
                        Some(len) => i = skip + len,
                    }
                } else {
                    break;
                }
            } else {
                break;
            }
        }
        if i >= rest.len() && !eof {
            return None;
        }
        run.end = at + i;
        Some(run)
    }

    /// Takes a terminator run as read: updates the state for its characters and moves past it.
    fn take_run(&mut self, at: usize, run: &Run) -> Step {
        if self.consume_span(at, run.end) {
            self.s.word_start = None;
        }
        self.s.depth = run.depth_after;
        self.advance_checked(run.end)
    }

    fn decide_terminator(&mut self, at: usize, eof: bool) -> Step {
        let Some(run) = self.read_run(at, eof) else { return Step::NeedMore };
        // Inside an SSML element holding text (`<sub alias="…">Smith, J.</sub>`) no sentence ends.
        if self.s.element.is_some() {
            return self.take_run(at, &run);
        }
        match self.judge_run(at, &run, eof) {
            Verdict::NeedMore => Step::NeedMore,
            Verdict::Continue => self.take_run(at, &run),
            Verdict::EndAt(end) => {
                if end == run.end {
                    // Count the run as read, so that the sentence's length includes it.
                    if let Step::Boundary(cut, kind) = self.take_run(at, &run) {
                        return Step::Boundary(cut, kind);
                    }
                }
                Step::Boundary(end, BoundaryKind::Terminal)
            }
        }
    }

    fn judge_run(&self, at: usize, run: &Run, eof: bool) -> Verdict {
        // A terminator before any word (`. . . The`, a stray `.`) ends nothing.
        if !self.s.has_word && self.s.cjk_chars == 0 {
            return Verdict::Continue;
        }
        // An elision inside brackets (`[...]`) is not a full stop.
        if self.s.prev.is_some_and(is_opener) {
            return Verdict::Continue;
        }
        let depth_before = self.live_depth();
        if run.depth_after > 0 {
            return Verdict::Continue;
        }
        let quoted_end = depth_before > 0;
        let follower = self.char_at(run.end);
        let Some(x) = follower else {
            return if eof { Verdict::EndAt(run.end) } else { Verdict::NeedMore };
        };
        if !x.is_whitespace() {
            return self.judge_glued(at, run, x, quoted_end, eof);
        }
        // White space follows: find the first character after it.
        let mut newlines = 0;
        let mut y_at = None;
        for (i, ch) in self.rest(run.end).char_indices() {
            if ch == '\n' {
                newlines += 1;
            } else if !ch.is_whitespace() {
                y_at = Some((run.end + i, ch));
                break;
            }
        }
        let Some((y_pos, y)) = y_at else {
            return if eof { Verdict::EndAt(run.end) } else { Verdict::NeedMore };
        };
        if newlines >= 2 || run.cjk {
            return Verdict::EndAt(run.end);
        }
        if run.dots >= 3 {
            return self.judge_ellipsis(run, y_pos, y, eof);
        }
        if is_lower(y) || matches!(y, ',' | ';' | ':' | ')') {
            return Verdict::Continue;
        }
        if run.question_or_bang {
            return Verdict::EndAt(run.end);
        }
        let word = self.word_before(at);
        if word.len() > 8 && !word.contains('.') && !is_digit(y) {
            // No abbreviation is this long: an ordinary word ends its sentence.
            return Verdict::EndAt(run.end);
        }
        let after_number = self.word_before_word().is_some_and(is_number);
        if is_digit(y) {
            let continues = precedes_number(word) || (after_number && is_unit(word));
            return if continues && !quoted_end { Verdict::Continue } else { Verdict::EndAt(run.end) };
        }
        if !y.is_uppercase() || quoted_end {
            return Verdict::EndAt(run.end);
        }
        if precedes_number(word) {
            // `Vol. II`: a number word before a Roman numeral.
            let Some(next_word) = self.word_at(y_pos, eof) else { return Verdict::NeedMore };
            if is_roman_numeral(next_word) {
                return Verdict::Continue;
            }
        }
        if (is_title(word, self.cfg.language.as_ref()) && !after_number) || never_ends(word) || (after_number && is_street(word)) {
            return Verdict::Continue;
        }
        let mut letters = word.chars();
        if let (Some(only), None) = (letters.next(), letters.next()) {
            if only.is_alphabetic() {
                // An initial (`Jonas E. Smith`), unless it is the pronoun `I` closing a clause.
                if only == 'I' && !self.previous_word_capitalised() {
                    return Verdict::EndAt(run.end);
                }
                return Verdict::Continue;
            }
        }
        if is_dotted_abbreviation(word) {
            // After `U.S.` or a time of day in an opening time phrase (`At 5 a.m. Mr. Smith went`), a
            // typical sentence opener starts a new sentence and a name goes on; other dotted
            // abbreviations (`Ph.D.`, `B.C.`, `p.m.` after a subject) end their sentence.
            let name_like = is_proper_abbreviation(word) || (is_time_of_day(word) && self.opens_with_preposition());
            if !name_like {
                return Verdict::EndAt(run.end);
            }
            let Some(next_word) = self.word_at(y_pos, eof) else { return Verdict::NeedMore };
            return if is_sentence_starter(next_word) { Verdict::EndAt(run.end) } else { Verdict::Continue };
        }
        Verdict::EndAt(run.end)
    }

    /// A terminator run glued to the next character (`3.14`, `e.g`, `arrived.Please`, `。次`).
    fn judge_glued(&self, at: usize, run: &Run, x: char, quoted_end: bool, eof: bool) -> Verdict {
        if run.cjk {
            return if quoted_end && (is_cjk(x) || is_lower(x)) { Verdict::Continue } else { Verdict::EndAt(run.end) };
        }
        let single_dot = run.dots == 1 && !run.question_or_bang;
        if single_dot && is_digit(x) {
            return Verdict::Continue;
        }
        if is_cjk(x) {
            // A full stop between CJK letters ends a sentence; after Latin text it does too.
            return Verdict::EndAt(run.end);
        }
        if is_lower(x) || !x.is_alphabetic() {
            return Verdict::Continue;
        }
        // A capital letter glued to the terminator: read the whole word to see what it is.
        let word_start = self.s.word_start.unwrap_or(at);
        let rest = self.rest(run.end);
        let token_end = rest.find(char::is_whitespace);
        let token = match token_end {
            Some(n) => self.text(word_start, run.end + n),
            None if eof || rest.len() >= TOKEN_LOOKAHEAD => self.rest(word_start),
            None => return Verdict::NeedMore,
        };
        if looks_like_link(token) {
            return Verdict::Continue;
        }
        if run.dots >= 3 || run.question_or_bang {
            return Verdict::EndAt(run.end);
        }
        // `world.Today`, `1,000.That`: a capitalised word (letters only: not `7.Bg5`) after a word
        // or a number.
        let glued: &str = rest.split(|c: char| !c.is_alphanumeric()).next().unwrap_or("");
        let mut after = glued.chars();
        after.next();
        let capitalised = after.next().is_some_and(is_lower) && glued.chars().all(char::is_alphabetic);
        let piece = self.text(word_start, at);
        let piece = piece.rsplit(|c: char| is_dot(c)).next().unwrap_or(piece);
        let wordlike = piece.chars().count() >= 2 || (!piece.is_empty() && piece.chars().all(is_digit));
        if capitalised && wordlike && !is_title(piece, self.cfg.language.as_ref()) {
            Verdict::EndAt(run.end)
        } else {
            Verdict::Continue
        }
    }

    /// An ellipsis followed by white space and `y`.
    fn judge_ellipsis(&self, run: &Run, y_pos: usize, y: char, eof: bool) -> Verdict {
        let attached = self.s.prev.is_some_and(|p| !p.is_whitespace());
        if run.spaced && attached && run.dots >= 4 && y.is_uppercase() {
            // `compounds. . . . The`: a full stop, then an ellipsis that opens the next sentence.
            return Verdict::EndAt(run.first_end);
        }
        if is_lower(y) || is_digit(y) {
            return Verdict::Continue;
        }
        if y.is_uppercase() {
            if run.dots >= 4 {
                return Verdict::EndAt(run.end);
            }
            if y == 'I' {
                match self.char_at(y_pos + 1) {
                    None if !eof => return Verdict::NeedMore,
                    Some(c) if c.is_whitespace() || c == '\'' || c == '’' => return Verdict::Continue,
                    _ => {}
                }
            }
        }
        Verdict::EndAt(run.end)
    }

    /// The word before a terminator at `at`, without leading quotes or brackets. A terminator
    /// standing alone (tokenised text: `Mr . Robinson`) takes the word before it.
    fn word_before(&self, at: usize) -> &str {
        let raw = match self.s.word_start {
            Some(ws) => self.text(ws, at),
            None => self.text(self.start, at).trim_end().rsplit(char::is_whitespace).next().unwrap_or(""),
        };
        raw.trim_matches(is_markup).trim_start_matches(|c: char| is_opener(c) || is_closer(c) || is_markup(c))
    }

    /// The word before the current word (`5` in `5 ft.`).
    fn word_before_word(&self) -> Option<&str> {
        let ws = self.s.word_start?;
        let before = self.text(self.start, ws).trim_end();
        before.rsplit(char::is_whitespace).next().filter(|w| !w.is_empty())
    }

    /// Whether the word before the current one starts with a capital (`Albert I.`).
    fn previous_word_capitalised(&self) -> bool {
        let Some(ws) = self.s.word_start else { return false };
        let before = self.text(self.start, ws).trim_end();
        let prev = before.rsplit(char::is_whitespace).next().unwrap_or("");
        prev.trim_start_matches(|c: char| is_opener(c) || is_closer(c)).chars().next().is_some_and(char::is_uppercase)
    }

    /// The word that starts at `at` (letters and apostrophes), or `None` if it may go on.
    fn word_at(&self, at: usize, eof: bool) -> Option<&str> {
        let rest = self.rest(at);
        match rest.find(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’')) {
            Some(n) => Some(&rest[..n]),
            None if eof || rest.len() >= TOKEN_LOOKAHEAD => Some(rest),
            None => None,
        }
    }

    /// Whether the sentence so far opens with a preposition (`At 5 a.m.`, `On Monday at 6 a.m.`).
    fn opens_with_preposition(&self) -> bool {
        let text = self.text(self.start, self.pos).trim_start();
        let first = text.split(char::is_whitespace).next().unwrap_or("");
        is_time_preposition(first)
    }
}

const OTHER: u8 = 0;
const ALNUM: u8 = 1;
const SPACE: u8 = 2;
const INNER: u8 = 3;

/// Byte classes for [`Segmenter::skim`]: ASCII letters and digits, the space, and the marks that
/// may follow a letter inside a clause (`,` `-` `'`).
static SKIM_CLASS: [u8; 256] = {
    let mut table = [OTHER; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if c.is_ascii_alphanumeric() {
            table[b] = ALNUM;
        }
        b += 1;
    }
    table[b' ' as usize] = SPACE;
    table[b',' as usize] = INNER;
    table[b'-' as usize] = INNER;
    table[b'\'' as usize] = INNER;
    table
};

/// The judgement on a terminator run.
enum Verdict {
    NeedMore,
    Continue,
    EndAt(usize),
}

/// The length of a citation mark (`[1]`, `[12][13]`) at the start of `s`: `Some(0)` if there is
/// none, `None` if more text is needed to tell.
fn citation_len(s: &str, eof: bool) -> Option<usize> {
    let mut len = 0;
    let mut rest = s;
    while rest.starts_with('[') {
        let digits = rest[1..].chars().take_while(char::is_ascii_digit).count();
        match rest[1 + digits..].chars().next() {
            Some(']') if (1..=3).contains(&digits) => {
                len += digits + 2;
                rest = &rest[digits + 2..];
            }
            None if !eof && digits <= 3 => return None,
            _ => return Some(len),
        }
    }
    if rest.is_empty() && !eof && len > 0 {
        return None;
    }
    Some(len)
}

fn is_number(word: &str) -> bool {
    !word.is_empty() && word.chars().all(|c| is_digit(c) || matches!(c, '.' | ',' | '/' | '-')) && word.chars().any(is_digit)
}

fn is_roman_numeral(word: &str) -> bool {
    !word.is_empty() && word.len() <= 6 && word.chars().all(|c| matches!(c, 'I' | 'V' | 'X' | 'L' | 'C'))
}

/// `U.S`, `E.U`, `a.m`, `Ph.D`: letters in short pieces joined by dots.
fn is_dotted_abbreviation(word: &str) -> bool {
    word.contains('.') && word.split('.').all(|piece| !piece.is_empty() && piece.len() <= 3 && piece.chars().all(char::is_alphabetic))
}

/// URLs, e-mail addresses, paths and code, whose dots never end a sentence.
fn looks_like_link(token: &str) -> bool {
    token.contains("://")
        || token.contains('`')
        || token.starts_with("www.")
        || token.contains('/')
        || token.contains('\\')
        || token.find('@').is_some_and(|at| token[at..].contains('.'))
}

/// Trims a sentence and turns line breaks inside it into a space (or nothing between CJK letters,
/// which are written without spaces).
fn tidy(raw: &str) -> String {
    let raw = raw.trim();
    if !raw.contains('\n') {
        return raw.to_string();
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_whitespace() {
            let mut run = String::from(c);
            while let Some(&n) = chars.peek() {
                if !n.is_whitespace() {
                    break;
                }
                run.push(n);
                chars.next();
            }
            if run.contains('\n') {
                let before = out.chars().next_back();
                let after = chars.peek().copied();
                let cjk_join = before.is_some_and(is_cjk) && after.is_some_and(is_cjk);
                if !cjk_join {
                    out.push(' ');
                }
            } else {
                out.push_str(&run);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Splits a whole text at once (a convenience over [`Segmenter::push`] and [`Segmenter::flush`]).
pub fn split(text: &str, cfg: SegmenterConfig) -> Vec<String> {
    let mut seg = Segmenter::new(cfg);
    let mut out: Vec<String> = seg.push(text).map(|s| s.text).collect();
    out.extend(seg.flush().map(|s| s.text));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn en(text: &str) -> Vec<String> {
        split(text, SegmenterConfig { language: Some(Language::parse("en").unwrap()), ..Default::default() })
    }

    #[test]
    fn holds_a_full_stop_until_the_next_character_decides() {
        let mut seg = Segmenter::default();
        assert_eq!(seg.push("Hello world.").count(), 0);
        assert_eq!(seg.push(" ").count(), 0);
        let out: Vec<_> = seg.push("M").map(|s| s.text).collect();
        assert_eq!(out, vec!["Hello world."]);
        assert_eq!(seg.pending(), " M");
    }

    #[test]
    fn a_fragment_waits_for_flush() {
        let mut seg = Segmenter::default();
        assert_eq!(seg.push("The answer is").count(), 0);
        let out: Vec<_> = seg.flush().map(|s| (s.text, s.kind)).collect();
        assert_eq!(out, vec![("The answer is".to_string(), BoundaryKind::Flush)]);
    }

    #[test]
    fn pending_completeness_follows_abbreviations() {
        let mut seg = Segmenter::default();
        let _ = seg.push("Let me check that for you.");
        assert!(seg.pending_is_complete());
        let mut seg = Segmenter::default();
        let _ = seg.push("I will ask Dr.");
        assert!(!seg.pending_is_complete());
        let mut seg = Segmenter::default();
        let _ = seg.push("Still writing");
        assert!(!seg.pending_is_complete());
    }

    #[test]
    fn numbers_and_versions_stay_whole() {
        assert_eq!(en("Install torch 2.10.0 today. It costs $1,299.99 now."), vec!["Install torch 2.10.0 today.", "It costs $1,299.99 now."]);
        assert_eq!(en("It is -3.5 degrees at 10:30 p.m. and rising."), vec!["It is -3.5 degrees at 10:30 p.m. and rising."]);
    }

    #[test]
    fn links_and_files_stay_whole() {
        assert_eq!(
            en("Open https://example.com/a.B?x=1 now. Then run main.rs twice."),
            vec!["Open https://example.com/a.B?x=1 now.", "Then run main.rs twice."]
        );
        assert_eq!(en("Edit `config.Toml` and `a.B` please. Done."), vec!["Edit `config.Toml` and `a.B` please.", "Done."]);
    }

    #[test]
    fn newlines_split_lines_but_not_wrapped_prose() {
        assert_eq!(en("Steps:\n- one\n- two"), vec!["Steps:", "- one", "- two"]);
        assert_eq!(en("a wrapped\nline of prose."), vec!["a wrapped line of prose."]);
        assert_eq!(en("Para one\n\nand two"), vec!["Para one", "and two"]);
    }

    #[test]
    fn fast_first_releases_the_first_clause_only() {
        let cfg = SegmenterConfig { fast_first_min_words: Some(4), ..Default::default() };
        assert_eq!(
            split("Sure, I can help with that, and here is how, step by step. Next, we go.", cfg),
            vec!["Sure, I can help with that,", "and here is how, step by step.", "Next, we go."]
        );
    }

    #[test]
    fn max_chars_splits_at_clause_marks() {
        let cfg = SegmenterConfig { max_chars: Some(40), ..Default::default() };
        let out = split("This sentence is long, and it keeps going with many words until the limit is passed.", cfg);
        assert!(out.iter().all(|s| s.chars().count() <= 40), "{out:?}");
        assert_eq!(out[0], "This sentence is long,");
    }

    #[test]
    fn cjk_sentences_need_no_spaces() {
        assert_eq!(split("今日は晴れです。明日は雨？はい！", Default::default()), vec!["今日は晴れです。", "明日は雨？", "はい！"]);
        assert_eq!(split("价格是３．２９元。好的。", Default::default()), vec!["价格是３．２９元。", "好的。"]);
    }

    #[test]
    fn french_spacing_and_guillemets() {
        let cfg = SegmenterConfig { language: Some(Language::parse("fr").unwrap()), ..Default::default() };
        assert_eq!(
            split("Vous venez ? Il a dit : « Oui ! » et il est parti. Mme Dupont aussi.", cfg),
            vec!["Vous venez ?", "Il a dit : « Oui ! » et il est parti.", "Mme Dupont aussi."]
        );
    }
}
