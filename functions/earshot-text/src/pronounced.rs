//! A pronunciation given inline, `[Nguyen](/wˈɪn/)`: words to show and time, said with the phonemes given.
//!
//! A lexicon entry in IPA cannot be said by rewriting the sentence into other words: each voice takes a
//! pronunciation in its own form. So the lexicon marks the span, in the markup Kokoro's own front end
//! (misaki) reads and the Kokoro container reads as well (its `PROTOCOL.md`), and each arm renders the mark
//! as it must: the container takes it as it is; Polly is sent `<phoneme alphabet="ipa" ph="…">words</phoneme>`
//! in SSML. Everything that reads a sentence for its words (the words map, captions) reads it through
//! [`plain`], so a mark is timed and shown as its words.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// A mark: the words may hold anything but brackets; the phonemes anything but slashes and parentheses.
static MARK: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\[([^\[\]]+)\]\(/([^/()]+)/\)").expect("the mark's pattern"));

/// A part of a sentence: text as written, or words said with the phonemes given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part<'a> {
    /// Text the voice's own front end reads.
    Text(&'a str),
    /// Words said as `ipa` says.
    Said {
        /// What is shown and timed.
        words: &'a str,
        /// The phonemes, in IPA.
        ipa: &'a str,
    },
}

/// `words` marked to be said as `ipa`.
pub fn mark(words: &str, ipa: &str) -> String {
    format!("[{words}](/{ipa}/)")
}

/// Whether `text` holds a mark.
pub fn has_marks(text: &str) -> bool {
    text.contains("](/") && MARK.is_match(text)
}

/// `text` with each mark replaced by its words.
pub fn plain(text: &str) -> Cow<'_, str> {
    if has_marks(text) {
        MARK.replace_all(text, "$1")
    } else {
        Cow::Borrowed(text)
    }
}

/// `text` in its parts, in order.
pub fn parts(text: &str) -> Vec<Part<'_>> {
    let mut out = Vec::new();
    let mut at = 0;
    for caps in MARK.captures_iter(text) {
        let whole = caps.get(0).expect("a match");
        if whole.start() > at {
            out.push(Part::Text(&text[at..whole.start()]));
        }
        out.push(Part::Said { words: caps.get(1).expect("words").as_str(), ipa: caps.get(2).expect("phonemes").as_str() });
        at = whole.end();
    }
    if at < text.len() {
        out.push(Part::Text(&text[at..]));
    }
    out
}

/// Why `ipa` cannot be a pronunciation, if it cannot: it must hold a letter, and only letters (IPA's are
/// letters, and so are its stress and length marks `ˈ ˌ ː`), combining diacritics, the arrows misaki writes
/// Mandarin tones with, and spaces between words. No digit, no punctuation (the model reads punctuation as a
/// pause), and none of the mark's own signs.
pub fn check_ipa(ipa: &str) -> Result<(), String> {
    // A letter that is not only a modifier (`ˈ`, `ː` and `ʰ` are modifier letters: alone they say nothing).
    if !ipa.chars().any(|c| c.is_alphabetic() && !('\u{2b0}'..='\u{2ff}').contains(&c)) {
        return Err(format!("`/{ipa}/` holds no phoneme"));
    }
    let allowed = |c: char| c.is_alphabetic() || c == ' ' || ('\u{300}'..='\u{36f}').contains(&c) || "→↗↓↘".contains(c);
    match ipa.chars().find(|c| !allowed(*c)) {
        Some(c) => Err(format!("`/{ipa}/` holds `{c}`, which is not a phoneme (letters, stress and length marks, diacritics)")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_is_its_words_when_shown_and_its_phonemes_when_said() {
        let text = format!("Call {} or {}.", mark("Nguyen", "wˈɪn"), mark("New York", "nuː jˈɔːk"));
        assert_eq!(text, "Call [Nguyen](/wˈɪn/) or [New York](/nuː jˈɔːk/).");
        assert_eq!(plain(&text), "Call Nguyen or New York.");
        assert_eq!(
            parts(&text),
            [
                Part::Text("Call "),
                Part::Said { words: "Nguyen", ipa: "wˈɪn" },
                Part::Text(" or "),
                Part::Said { words: "New York", ipa: "nuː jˈɔːk" },
                Part::Text("."),
            ]
        );
        assert!(matches!(plain("No [marks](here)."), Cow::Borrowed(_)));
    }

    #[test]
    fn a_pronunciation_holds_phonemes_only() {
        assert!(check_ipa("wˈɪn").is_ok());
        assert!(check_ipa("tʰɑ̃").is_ok());
        assert!(check_ipa("ʈʂʰʊ→ŋ").is_ok());
        assert!(check_ipa("").is_err());
        assert!(check_ipa("ˈ").is_err());
        assert_eq!(check_ipa("wɪn.").unwrap_err(), "`/wɪn./` holds `.`, which is not a phoneme (letters, stress and length marks, diacritics)");
        assert!(check_ipa("w1n").is_err());
        assert!(check_ipa("a/b").is_err());
    }
}
