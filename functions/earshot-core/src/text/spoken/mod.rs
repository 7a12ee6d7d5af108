//! What a voice says for what an answer writes, per language: numbers with their decimal comma or point,
//! currencies before or after the amount, percentages, units, times, dates, ordinals, common
//! abbreviations and full-width forms.
//!
//! Agents write `12,50 €`, `1er`, `10 h 30`, `M. Dupont`, `3.5度` and `2026年12月1日`; a text front end that
//! reads them letter by letter, or with English rules, says something no listener expects. Each sentence is
//! rewritten into words before it reaches a voice whose front end needs it (the Kokoro container's espeak-ng
//! and misaki read digits, but not `1er`, `10 h 30` or `¥12.5` the way a French or Chinese speaker does).
//! Polly's own text normalisation reads such forms itself, and rewriting them for it would only add billed
//! characters, so the Polly arm is sent the text as written. Captions always show the text as written.
//!
//! The rules work on one complete sentence (the segmenter's output), so they never see half a number:
//! what they give does not depend on how the answer was streamed (`tests/spoken_forms.rs` streams every
//! case character by character). Each language's rules are a list of patterns tried in order, each with
//! its spoken form; the case lists in `tests/spoken/` hold one line per rule and form.
//!
//! English is left to the front ends (misaki reads English numbers, currencies and times), and so is any
//! other language.

mod fr;
mod numbers;
mod zh;

use std::borrow::Cow;

/// Whether `language` has spoken-form rules here (`fr`, `zh`).
pub fn has_rules(language: &str) -> bool {
    matches!(language, "fr" | "zh")
}

/// `sentence` as a voice should say it in `language` (a BCP 47 primary language: `fr`, `zh`); unchanged
/// for a language with no rules here.
pub fn spoken<'a>(sentence: &'a str, language: &str) -> Cow<'a, str> {
    match language {
        "fr" => Cow::Owned(fr::spoken(&half_width(sentence))),
        "zh" => Cow::Owned(zh::spoken(&half_width(sentence))),
        _ => Cow::Borrowed(sentence),
    }
}

/// Full-width digits and Latin letters (`１２ｋｍ`) as their ASCII forms, and the full-width signs that go
/// with numbers (`％`, `＋`, `－`, `＄`, `￥`, and `．` `：` `，` between digits). Other full-width punctuation
/// stays: the voice pauses on it.
fn half_width(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let digit = |i: Option<&char>| i.is_some_and(|c| c.is_ascii_digit() || ('０'..='９').contains(c));
    chars
        .iter()
        .enumerate()
        .map(|(i, &c)| match c {
            '０'..='９' | 'Ａ'..='Ｚ' | 'ａ'..='ｚ' | '％' | '＋' | '－' | '＄' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
            '￥' => '¥',
            '．' | '：' | '，' if i > 0 && digit(chars.get(i - 1)) && digit(chars.get(i + 1)) => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
            _ => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_languages_pass_unchanged() {
        assert!(matches!(spoken("It costs $12.50.", "en"), Cow::Borrowed(_)));
    }

    #[test]
    fn full_width_digits_and_signs_are_read_as_digits_but_punctuation_stays() {
        assert_eq!(half_width("１２．５％，好！"), "12.5%，好！");
        assert_eq!(half_width("１０：３０"), "10:30");
    }
}
