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

use crate::language::Language;

/// Whether `language` has spoken-form rules here (`fr`, `zh`).
pub fn has_rules(language: &Language) -> bool {
    matches!(language.as_str(), "fr" | "zh")
}

/// `sentence` as a voice should say it in `language`; unchanged for a language with no rules here.
pub fn spoken<'a>(sentence: &'a str, language: &Language) -> Cow<'a, str> {
    match language.as_str() {
        "fr" => Cow::Owned(fr::spoken(&half_width(sentence))),
        "zh" => Cow::Owned(zh::spoken(&half_width(sentence))),
        _ => Cow::Borrowed(sentence),
    }
}

/// How the Kokoro container reads `text` told `told` (or nothing), for the sentence cache's key: the language
/// told; untold, the language its script is read in, where that reading is the same as being told it (the
/// container turns a sentence into its spoken form only when told its language, so an untold `价格是12元`
/// is another sound than a told one); otherwise `None`, a reading of its own.
pub fn container_reading(told: Option<&Language>, text: &str) -> Option<Language> {
    match told {
        Some(language) => Some(language.clone()),
        None => {
            let by_script = crate::language::read_by_script(text);
            (spoken(text, &by_script) == text).then_some(by_script)
        }
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
    fn the_container_reads_untold_text_as_told_its_script_only_where_no_spoken_form_changes_it() {
        let (en, zh) = (Language::parse("en").unwrap(), Language::parse("zh").unwrap());
        assert_eq!(container_reading(None, "Sure."), Some(en.clone()), "an English opener untold is the same sound as told");
        assert_eq!(container_reading(Some(&en), "Sure."), Some(en));
        assert_eq!(container_reading(None, "好的。"), Some(zh.clone()));
        // Told Mandarin, the digits go in their spoken form; untold, as written: another sound.
        assert_eq!(container_reading(None, "价格是12元。"), None);
        assert_eq!(container_reading(Some(&zh), "价格是12元。"), Some(zh));
    }

    #[test]
    fn other_languages_pass_unchanged() {
        assert!(matches!(spoken("It costs $12.50.", &Language::parse("en").unwrap()), Cow::Borrowed(_)));
    }

    #[test]
    fn full_width_digits_and_signs_are_read_as_digits_but_punctuation_stays() {
        assert_eq!(half_width("１２．５％，好！"), "12.5%，好！");
        assert_eq!(half_width("１０：３０"), "10:30");
    }
}
