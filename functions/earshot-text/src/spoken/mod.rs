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
//! case character by character). Each language's rules are a list of patterns tried in order, each tagged
//! with its semiotic class and run in the classes' order ([`classes`]); the lists in `tests/spoken/` score
//! them: the project's by category, `classes/` and `heldout/` by class.
//!
//! English has rules too (phone numbers, dates, units and abbreviations its front end reads its own way);
//! any other language is left to the front ends. Web and e-mail addresses are said part by part in each
//! language with rules (the `addresses` module).

mod addresses;
pub mod classes;
mod en;
mod fr;
mod numbers;
mod zh;

use std::borrow::Cow;

use crate::language::Language;

/// The revision of the rules: one more whenever what they say for a sentence changes (2: the semiotic
/// classes). A shared sentence cache names its objects with it, so that no audio made under older rules is
/// served for a sentence the rules now say otherwise.
pub const RULES_REVISION: u32 = 2;

/// Whether the container must be told `language` for its spoken forms to apply before the first sentence
/// settles it (`fr`, `zh`): English's apply untold as well, as the container reads Latin script as English.
pub fn has_rules(language: &Language) -> bool {
    matches!(language.as_str(), "fr" | "zh")
}

/// `sentence` as a voice should say it in `language`; unchanged for a language with no rules here.
pub fn spoken<'a>(sentence: &'a str, language: &Language) -> Cow<'a, str> {
    match language.as_str() {
        "en" => Cow::Owned(en::spoken(&half_width(sentence))),
        "fr" => Cow::Owned(fr::spoken(&half_width(sentence))),
        "zh" => Cow::Owned(zh::spoken(&half_width(sentence))),
        _ => Cow::Borrowed(sentence),
    }
}

/// What a `<say-as interpret-as="…">` says for `text` in `language`, in words: `cardinal` (`number`) and
/// `ordinal` a number, `time` a duration written `1'21"`, `date` in its `format`'s order (`mdy` by default;
/// `dmy`, `ymd`, `md`, `dm`, `ym`, `my`, `d`, `m`, `y`). `None` for a language with no rules here, for a
/// text that is not what it says it is, and for a clock time (the language's time rule reads it as written).
pub fn say_as(interpret: &str, format: &str, text: &str, language: &Language) -> Option<String> {
    let words: &dyn Fn(Said) -> Option<String> = match language.as_str() {
        "en" => &en::said,
        "fr" => &fr::said,
        "zh" => &zh::said,
        _ => return None,
    };
    // A whole number, its thousands grouped or not (`1,200`, `1 200`); a decimal (`3.5`) is not one, and is
    // left as written for the language's rules to read.
    let number = || -> Option<u64> {
        let text = text.trim();
        let groups: Vec<&str> = text.split([',', ' ', '\u{a0}', '\u{202f}', '.']).collect();
        let grouped = groups.len() > 1 && groups[0].len() <= 3 && groups[1..].iter().all(|g| g.len() == 3);
        if groups.len() > 1 && !grouped {
            return None;
        }
        groups.concat().parse().ok()
    };
    match interpret {
        "cardinal" | "number" => words(Said::Cardinal(number()?)),
        "ordinal" => words(Said::Ordinal(number()?)),
        "time" => {
            let (minutes, seconds) = text.trim().trim_end_matches('"').split_once('\'')?;
            words(Said::Duration(minutes.parse().ok()?, if seconds.is_empty() { 0 } else { seconds.parse().ok()? }))
        }
        "date" => {
            let parts: Vec<u32> = text.split(['/', '-', '.', ' ']).filter(|p| !p.is_empty()).map(str::parse).collect::<Result<_, _>>().ok()?;
            let order = if format.is_empty() { "mdy" } else { format };
            if parts.len() != order.len() {
                return None;
            }
            let field = |c: char| order.find(c).map(|at| parts[at]);
            let (y, m, d) = (field('y'), field('m'), field('d'));
            if m.is_some_and(|m| !(1..=12).contains(&m)) || d.is_some_and(|d| !(1..=31).contains(&d)) {
                return None;
            }
            words(Said::Date { y, m, d })
        }
        _ => None,
    }
}

/// What a `<say-as>` asks a language to say.
pub enum Said {
    /// A count.
    Cardinal(u64),
    /// A place in order.
    Ordinal(u64),
    /// Minutes and seconds.
    Duration(u64, u64),
    /// A date, or part of one.
    Date {
        /// The year.
        y: Option<u32>,
        /// The month, 1 to 12.
        m: Option<u32>,
        /// The day, 1 to 31.
        d: Option<u32>,
    },
}

/// Compiles every language's patterns now. They are compiled on first use otherwise, and that costs the
/// first sentence of a process 4 to 10 ms a language on a 2-core machine (`make bench`, the segmenter
/// suite's "spoken forms" rows), on its way to first audio; a gateway calls this on a thread of its own
/// when it starts.
pub fn prepare() {
    for language in ["en", "fr", "zh"] {
        if let Ok(language) = Language::parse(language) {
            std::hint::black_box(spoken("1 a.b.com", &language));
        }
    }
}

/// How the Kokoro container reads `text` told `told` (or nothing), for the sentence cache's key: the language
/// told; untold, the language its script is read in (the container reads Latin script as English, Han as
/// Chinese, and the sentence is sent in that language's spoken form), so an untold `价格是12元` is the same
/// sound as a told one.
pub fn container_reading(told: Option<&Language>, text: &str) -> Language {
    told.cloned().unwrap_or_else(|| crate::language::read_by_script(text))
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
    fn the_container_reads_untold_text_as_told_its_script() {
        let (en, zh) = (Language::parse("en").unwrap(), Language::parse("zh").unwrap());
        assert_eq!(container_reading(None, "Sure."), en.clone(), "an English opener untold is the same sound as told");
        assert_eq!(container_reading(Some(&en), "Sure."), en);
        assert_eq!(container_reading(None, "好的。"), zh.clone());
        // Told Mandarin or not, the digits go in their spoken form: one sound.
        assert_eq!(container_reading(None, "价格是12元。"), zh.clone());
        assert_eq!(container_reading(Some(&zh), "价格是12元。"), zh);
    }

    #[test]
    fn other_languages_pass_unchanged() {
        assert!(matches!(spoken("Es kostet 12,50 €.", &Language::parse("de").unwrap()), Cow::Borrowed(_)));
    }

    #[test]
    fn full_width_digits_and_signs_are_read_as_digits_but_punctuation_stays() {
        assert_eq!(half_width("１２．５％，好！"), "12.5%，好！");
        assert_eq!(half_width("１０：３０"), "10:30");
    }
}
