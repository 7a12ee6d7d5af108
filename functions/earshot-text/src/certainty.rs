//! How sure a sentence's end is before the character after it has come.
//!
//! The segmenter ends a sentence only once the text after it confirms the end (`It costs $3.` is not a
//! sentence until a space and a capital follow, and `$3.50` shows it was not). When the agent goes quiet
//! the scheduler may release pending text that would end a sentence were one to follow (the idle release);
//! that is right after `Sure.` and wrong after `It costs $3.` when the agent is only slow: real model
//! streams pause between chunks for longer than the idle window. So each such end is judged here:
//!
//! - **sure**: `?`, `!`, an ellipsis, a CJK full stop (`。`), a closing quote or bracket after a word's
//!   full stop (`word."`), and a full stop after an ordinary word;
//! - **ambiguous**: a full stop after a digit (a decimal, a price, a time or a version could go on:
//!   `$3.` `50`), after a known abbreviation ([`crate::abbreviations::is_abbreviation`]: `Dr.`, `p.m.`,
//!   `U.S.`, `etc.`), after an initial (`J.`), after a dotted word (`v2.1.`), or inside an open quotation.
//!
//! An ambiguous end waits for the text that settles it, up to a longer limit than a sure one.

use crate::abbreviations;
use crate::language::Language;

/// How sure the end of pending text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Certainty {
    /// The next character cannot make it anything but a sentence's end.
    Sure,
    /// The next character may show it was not one (a decimal, an abbreviation, an initial).
    Ambiguous,
}

/// How sure the end of `text` (pending text that would end a sentence were one to follow) is, in
/// `language` (`None`: not known).
pub fn of_end(text: &str, language: Option<&Language>) -> Certainty {
    let text = text.trim_end();
    if open_quotation(text) {
        return Certainty::Ambiguous;
    }
    let Some(before) = text.strip_suffix('.') else { return Certainty::Sure };
    // An ellipsis (`...`) says the speaker trails off: sure.
    if before.ends_with('.') {
        return Certainty::Sure;
    }
    let word = before.rsplit(char::is_whitespace).next().unwrap_or("");
    let word = word.trim_start_matches(|c: char| !c.is_alphanumeric());
    let Some(last) = word.chars().last() else { return Certainty::Sure };
    let ambiguous = last.is_ascii_digit()
        || (word.chars().count() == 1 && last.is_alphabetic() && last.is_uppercase())
        || word.contains('.')
        || abbreviations::is_abbreviation(word, language);
    match ambiguous {
        true => Certainty::Ambiguous,
        false => Certainty::Sure,
    }
}

/// Whether `text` ends inside a quotation that has not closed.
fn open_quotation(text: &str) -> bool {
    let count = |c: char| text.chars().filter(|x| *x == c).count();
    let straight = count('"') % 2 == 1;
    straight || count('“') > count('”') || count('«') > count('»') || count('「') > count('」') || count('『') > count('』')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_stop_that_the_next_character_could_undo_is_ambiguous() {
        for text in [
            "It costs $3.",
            "The version is 2.",
            "Version v2.1.",
            "The U.S.",
            "We meet at 4 p.m.",
            "Ask Dr.",
            "Signed, J.",
            "He said \"it costs 3.",
            "Bring apples, pears, etc.",
            "Il coûte 3.",
            "温度是 3.",
            "Vu par M.",
        ] {
            assert_eq!(of_end(text, None), Certainty::Ambiguous, "{text}");
        }
    }

    #[test]
    fn an_end_nothing_can_undo_is_sure() {
        for text in ["Sure.", "It costs three dollars.", "Really?", "Yes!", "Well...", "He said \"hi.\"", "好的。", "(See the notes.)", "C'est bon."] {
            assert_eq!(of_end(text, None), Certainty::Sure, "{text}");
        }
        // `Me.` is an English word at the end of a sentence, a French title only in French.
        assert_eq!(of_end("Tell me.", None), Certainty::Sure);
        assert_eq!(of_end("Voyez Me.", Language::parse("fr").ok().as_ref()), Certainty::Ambiguous);
    }
}
