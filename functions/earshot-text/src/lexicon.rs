//! A pronunciation lexicon: written forms a voice should say another way (a brand, a product code, a
//! person's name), each with the words to say instead.
//!
//! Agents write `SQL`, `kubectl`, `Nguyen` and `EKS`; a voice's own front end guesses, and guesses
//! differently on each voice. A lexicon tells every voice the same thing. Each sentence is rewritten
//! before any voice gets it, so a failover or the other arm of an A/B split says an entry the same way;
//! the words the voice times are mapped back to the written ones ([`crate::words::SpokenMap`]), so
//! captions, word timings and the heard text after an interruption show what the answer wrote.
//!
//! # Format
//!
//! UTF-8 text, one entry per line; blank lines and lines starting with `#` are skipped:
//!
//! ```text
//! # written form [language] = what to say
//! SQL = sequel
//! kubectl = cube control
//! EKS = E K S
//! Dupont [fr] = Dupon
//! Nguyen = /wˈɪn/
//! ```
//!
//! - The written form is a word or a phrase, matched whole: not inside a longer word (a form in a
//!   script written without spaces, such as Chinese, matches wherever it stands).
//! - **Case**: a written form with a capital letter matches only as written (`SQL` leaves `sql`
//!   alone); one all in small letters matches in any case (`kubectl` also matches `Kubectl`).
//! - `[language]` (a BCP 47 tag) limits the entry to sentences in that language; with none, it applies
//!   in every language.
//! - Where two entries match at the same place, the longer written form wins; then the earlier line.
//! - What to say is words, or a pronunciation in IPA between slashes (`Nguyen = /wˈɪn/`): the written form
//!   is then marked to be said with those phonemes ([`crate::pronounced`]), and each voice says it in its
//!   own form (the Kokoro container as phonemes, Polly as an SSML `<phoneme>`). Only phonemes are taken:
//!   letters, stress and length marks, diacritics and spaces.
//!
//! A bad line stops the load with its number and the reason ([`LexiconError`]).
//!
//! Matching is one pass of an Aho–Corasick automaton over the sentence in small letters (the
//! `aho-corasick` crate, which `regex` already brings), so a lexicon of ten thousand entries costs a
//! sentence microseconds, not a scan per entry.

use std::borrow::Cow;
use std::fmt;

use aho_corasick::AhoCorasick;

use crate::chars::is_cjk;
use crate::language::Language;

/// The most entries a lexicon may hold.
pub const MAX_ENTRIES: usize = 100_000;

/// One entry: a written form and what to say for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The written form, as the file gives it.
    pub written: String,
    /// What a voice says for it: words, or, where [`Entry::ipa`], phonemes in IPA (without their slashes).
    pub say: String,
    /// Whether `say` is a pronunciation in IPA (`= /wɪn/` in the file): the written form is then marked
    /// to be said so ([`crate::pronounced`]), each voice in its own form.
    pub ipa: bool,
    /// Whether it matches only as written (it has a capital letter).
    pub exact_case: bool,
    /// The language it is limited to; `None`: every language.
    pub language: Option<Language>,
    /// Its line in the file, from 1.
    pub line: usize,
}

/// A line of a lexicon that cannot be loaded, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexiconError {
    /// The line, from 1 (0: the lexicon as a whole).
    pub line: usize,
    /// Why it is refused.
    pub reason: String,
}

impl fmt::Display for LexiconError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "{}", self.reason),
            line => write!(f, "line {line}: {}", self.reason),
        }
    }
}

impl std::error::Error for LexiconError {}

/// A loaded lexicon; see the module docs.
#[derive(Clone)]
pub struct Lexicon {
    entries: Vec<Entry>,
    /// Over the entries' written forms in small letters, in the entries' order.
    automaton: AhoCorasick,
    version: String,
}

impl fmt::Debug for Lexicon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lexicon").field("entries", &self.entries.len()).field("version", &self.version).finish()
    }
}

impl Lexicon {
    /// Loads a lexicon from its text; the first bad line refuses the whole.
    pub fn parse(text: &str) -> Result<Lexicon, LexiconError> {
        let mut entries = Vec::new();
        for (at, raw) in text.lines().enumerate() {
            let line = at + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            entries.push(entry(trimmed, line)?);
            if entries.len() > MAX_ENTRIES {
                return Err(LexiconError { line, reason: format!("a lexicon holds at most {MAX_ENTRIES} entries") });
            }
        }
        let mut seen = std::collections::HashMap::new();
        for e in &entries {
            if let Some(first) = seen.insert(key(e), e.line) {
                return Err(LexiconError { line: e.line, reason: format!("`{}` is given on line {first} already", e.written) });
            }
        }
        let patterns: Vec<String> = entries.iter().map(|e| lowered(&e.written)).collect();
        let automaton = AhoCorasick::new(&patterns).map_err(|e| LexiconError { line: 0, reason: format!("the lexicon cannot be built: {e}") })?;
        Ok(Lexicon { version: version_of(&entries), entries, automaton })
    }

    /// `over` laid on `under`: every entry of `over`, then each of `under` that `over` does not give again
    /// (the same written form, case rule and language). An owner's lexicon laid on the deployment's says
    /// the owner's names the owner's way and every other entry the deployment's.
    pub fn layered(over: &Lexicon, under: &Lexicon) -> Lexicon {
        let given: std::collections::HashSet<_> = over.entries.iter().map(key).collect();
        let entries: Vec<Entry> = over.entries.iter().chain(under.entries.iter().filter(|e| !given.contains(&key(e)))).cloned().collect();
        let patterns: Vec<String> = entries.iter().map(|e| lowered(&e.written)).collect();
        let automaton = AhoCorasick::new(&patterns).expect("patterns that built two lexicons build one");
        Lexicon { version: version_of(&entries), entries, automaton }
    }

    /// A lexicon with no entries: every sentence is said as written.
    pub fn empty() -> Lexicon {
        Lexicon::parse("").expect("an empty lexicon")
    }

    /// Its entries, in the file's order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Whether it has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// A short name for what it says (a hash of its entries): two lexicons with the same version say
    /// every sentence the same way.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// `sentence` as a voice should say it in `language` (`None`: unknown, so only the entries for
    /// every language apply); unchanged where no entry matches.
    pub fn apply<'a>(&self, sentence: &'a str, language: Option<&Language>) -> Cow<'a, str> {
        if self.entries.is_empty() {
            return Cow::Borrowed(sentence);
        }
        let (small, origin) = lowered_with_origin(sentence);
        // Every match, then the leftmost, longest, earliest-line one that is whole and in case.
        let mut found: Vec<(usize, usize, usize)> = Vec::new();
        for m in self.automaton.find_overlapping_iter(&small) {
            if !at_edge(&origin, m.start()) || !at_edge(&origin, m.end()) {
                continue;
            }
            let (start, end) = (origin[m.start()], origin[m.end()]);
            let entry = &self.entries[m.pattern().as_usize()];
            let applies = entry.language.as_ref().is_none_or(|l| language == Some(l));
            if applies && (!entry.exact_case || sentence[start..end] == entry.written) && whole(sentence, start, end) {
                found.push((start, end, m.pattern().as_usize()));
            }
        }
        if found.is_empty() {
            return Cow::Borrowed(sentence);
        }
        found.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
        let mut out = String::with_capacity(sentence.len() + 16);
        let mut at = 0;
        for (start, end, index) in found {
            if start < at {
                continue;
            }
            out.push_str(&sentence[at..start]);
            let entry = &self.entries[index];
            match entry.ipa {
                true => out.push_str(&crate::pronounced::mark(&sentence[start..end], &entry.say)),
                false => out.push_str(&entry.say),
            }
            at = end;
        }
        out.push_str(&sentence[at..]);
        Cow::Owned(out)
    }
}

/// One entry from its line.
fn entry(line_text: &str, line: usize) -> Result<Entry, LexiconError> {
    let refuse = |reason: String| LexiconError { line, reason };
    let Some((left, say)) = line_text.split_once('=') else {
        return Err(refuse("expected `written form = what to say`".into()));
    };
    let (left, say) = (left.trim(), say.trim());
    let (written, language) = match left.strip_suffix(']').and_then(|l| l.rsplit_once('[')) {
        Some((written, tag)) => {
            let language = Language::parse(tag.trim()).map_err(|e| refuse(format!("`[{tag}]` is not a language tag: {e}")))?;
            (written.trim(), Some(language))
        }
        None => (left, None),
    };
    if written.is_empty() {
        return Err(refuse("the written form is empty".into()));
    }
    if say.is_empty() {
        return Err(refuse(format!("nothing to say for `{written}`")));
    }
    let ipa = say.len() > 2 && say.starts_with('/') && say.ends_with('/');
    let say = if ipa { say[1..say.len() - 1].trim() } else { say };
    if ipa {
        crate::pronounced::check_ipa(say).map_err(&refuse)?;
    }
    if written.contains(['[', ']']) {
        return Err(refuse(format!("`{written}` holds a bracket, which marks a pronunciation")));
    }
    if written.chars().any(|c| c.is_control()) || say.chars().any(|c| c.is_control()) {
        return Err(refuse("control characters are not allowed".into()));
    }
    if let Some(c) = crate::markup::first_reserved(line_text) {
        return Err(refuse(format!("U+{:04X} is a private-use character earshot keeps for itself", c as u32)));
    }
    if !written.chars().any(char::is_alphanumeric) {
        return Err(refuse(format!("`{written}` has no letter or digit to match")));
    }
    Ok(Entry { written: written.to_string(), say: say.to_string(), ipa, exact_case: written.chars().any(char::is_uppercase), language, line })
}

/// What makes two entries the same entry: the written form as it matches, and the language.
fn key(e: &Entry) -> (String, Option<String>, Option<Language>) {
    (lowered(&e.written), e.exact_case.then(|| e.written.clone()), e.language.clone())
}

fn lowered(text: &str) -> String {
    text.chars().flat_map(char::to_lowercase).collect()
}

/// `text` in small letters, with the byte in `text` where the character that each byte of it comes from
/// starts (and, last, `text`'s length): a character's small form may be longer or shorter than it.
fn lowered_with_origin(text: &str) -> (String, Vec<usize>) {
    let mut small = String::with_capacity(text.len());
    let mut origin = Vec::with_capacity(text.len() + 1);
    for (at, c) in text.char_indices() {
        let before = small.len();
        small.extend(c.to_lowercase());
        origin.extend(std::iter::repeat_n(at, small.len() - before));
    }
    origin.push(text.len());
    (small, origin)
}

/// Whether `at` in the small-letter text is at the edge of a whole character of the original (not
/// inside the small form of one, such as the `i` of `İ`'s two).
fn at_edge(origin: &[usize], at: usize) -> bool {
    at == 0 || at + 1 == origin.len() || origin[at] != origin[at - 1]
}

/// Whether `text[start..end]` stands whole: no letter or digit of a spaced script runs on into it.
fn whole(text: &str, start: usize, end: usize) -> bool {
    let joins = |c: Option<char>, edge: Option<char>| match (c, edge) {
        (Some(c), Some(edge)) => c.is_alphanumeric() && edge.is_alphanumeric() && !is_cjk(c) && !is_cjk(edge),
        _ => false,
    };
    let inner = &text[start..end];
    !joins(text[..start].chars().next_back(), inner.chars().next()) && !joins(text[end..].chars().next(), inner.chars().next_back())
}

/// FNV-1a over the entries, as 12 hex digits: written by hand because it must stay the same across
/// builds and machines (std's hasher promises neither), and it is eight lines.
fn version_of(entries: &[Entry]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for e in entries {
        let language = e.language.as_ref().map(Language::to_string).unwrap_or_default();
        let kind = if e.ipa { "/" } else { "" };
        for byte in [e.written.as_str(), "\u{1f}", language.as_str(), "\u{1f}", kind, e.say.as_str(), "\u{1e}"].iter().flat_map(|s| s.bytes()) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{:012x}", hash >> 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lexicon(text: &str) -> Lexicon {
        Lexicon::parse(text).unwrap()
    }

    #[test]
    fn an_entry_is_said_whole_words_only() {
        let l = lexicon("kubectl = cube control\nSQL = sequel\n");
        assert_eq!(l.apply("Run kubectl get pods.", None), "Run cube control get pods.");
        assert_eq!(l.apply("We use SQL, and MySQL too.", None), "We use sequel, and MySQL too.");
        assert_eq!(l.apply("kubectlx is not it.", None), "kubectlx is not it.");
    }

    #[test]
    fn a_form_with_a_capital_matches_only_as_written_and_one_in_small_letters_in_any_case() {
        let l = lexicon("SQL = sequel\nkubectl = cube control\n");
        assert_eq!(l.apply("sql and SQL.", None), "sql and sequel.");
        assert_eq!(l.apply("Kubectl and KUBECTL.", None), "cube control and cube control.");
    }

    #[test]
    fn the_longer_form_wins_then_the_earlier_line() {
        let l = lexicon("New York = the big apple\nYork = Yorick\nNew = gnu\n");
        assert_eq!(l.apply("New York and York.", None), "the big apple and Yorick.");
    }

    #[test]
    fn a_language_entry_applies_only_to_its_language() {
        let l = lexicon("Dupont [fr] = Dupon\n");
        let fr = Language::parse("fr").unwrap();
        assert_eq!(l.apply("M. Dupont arrive.", Some(&fr)), "M. Dupon arrive.");
        assert_eq!(l.apply("Mr Dupont arrives.", Some(&Language::parse("en").unwrap())), "Mr Dupont arrives.");
        assert_eq!(l.apply("Mr Dupont arrives.", None), "Mr Dupont arrives.");
    }

    #[test]
    fn a_chinese_form_matches_inside_a_run_of_characters() {
        let l = lexicon("重庆 = 崇庆\n");
        assert_eq!(l.apply("我们去重庆吧。", None), "我们去崇庆吧。");
    }

    #[test]
    fn letters_whose_small_form_is_longer_keep_their_places() {
        // `İ` is two characters in small letters: the match after it still lands on its own bytes.
        let l = lexicon("sql = sequel\n");
        assert_eq!(l.apply("İİ SQL İ.", None), "İİ sequel İ.");
    }

    #[test]
    fn bad_lines_are_refused_with_their_number_and_reason() {
        let refused = |text: &str| Lexicon::parse(text).unwrap_err().to_string();
        assert_eq!(refused("# ok\nSQL sequel\n"), "line 2: expected `written form = what to say`");
        assert_eq!(refused("SQL =\n"), "line 1: nothing to say for `SQL`");
        assert_eq!(refused("Nguyen = /wɪn./\n"), "line 1: `/wɪn./` holds `.`, which is not a phoneme (letters, stress and length marks, diacritics)");
        assert_eq!(refused("Nguyen = / /\n"), "line 1: `//` holds no phoneme");
        assert!(refused("Dupont [not a tag!] = Dupon\n").starts_with("line 1: `[not a tag!]` is not a language tag"));
        assert_eq!(refused("SQL = sequel\n\nSQL = squeal\n"), "line 3: `SQL` is given on line 1 already");
        assert_eq!(refused("... = dots\n"), "line 1: `...` has no letter or digit to match");
    }

    #[test]
    fn an_ipa_entry_marks_the_words_as_written_to_be_said_with_its_phonemes() {
        let l = lexicon("nguyen = /wˈɪn/\nSQL = sequel\n");
        assert_eq!(l.apply("Ask Nguyen about SQL.", None), "Ask [Nguyen](/wˈɪn/) about sequel.");
        assert_eq!(crate::pronounced::plain(&l.apply("Ask Nguyen.", None)), "Ask Nguyen.");
        assert_ne!(lexicon("SQL = sequel\n").version(), lexicon("SQL = /sequel/\n").version());
    }

    #[test]
    fn an_owners_lexicon_laid_on_the_deployments_wins_where_both_give_a_form() {
        let deployment = lexicon("SQL = sequel\nkubectl = cube control\n");
        let owner = lexicon("SQL = S Q L\nAcme = Ack me\n");
        let both = Lexicon::layered(&owner, &deployment);
        assert_eq!(both.apply("Acme runs SQL with kubectl.", None), "Ack me runs S Q L with cube control.");
        assert_eq!(both.entries().len(), 3);
        assert_ne!(both.version(), deployment.version());
        assert_eq!(Lexicon::layered(&owner, &deployment).version(), both.version());
    }

    #[test]
    fn the_version_follows_what_is_said() {
        let (a, b, c) = (lexicon("SQL = sequel\n"), lexicon("# a comment\nSQL   =   sequel\n"), lexicon("SQL = squeal\n"));
        assert_eq!(a.version(), b.version());
        assert_ne!(a.version(), c.version());
        assert_eq!(a.version().len(), 12);
    }

    #[test]
    fn an_empty_lexicon_borrows() {
        assert!(matches!(Lexicon::empty().apply("SQL.", None), Cow::Borrowed(_)));
        assert!(matches!(lexicon("SQL = sequel\n").apply("Nothing here.", None), Cow::Borrowed(_)));
    }
}
