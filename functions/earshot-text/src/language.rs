//! Which language an answer is spoken in.
//!
//! A request may name it as a BCP 47 tag (RFC 5646: `fr`, `fr-CA`, `zh-Hans-CN`, `cmn`); otherwise it is
//! detected from text. Routing and voices work on the tag's *language*, its primary subtag, lower-cased,
//! with Mandarin's individual-language code `cmn` (Polly's `cmn-CN`) read as its macrolanguage `zh`: a
//! voice tagged `fr-FR` speaks a request's `fr`, `fr-CA` and `fr-FR` alike.
//!
//! Detection goes by script first, since a script settles most languages outright: kana is Japanese,
//! Han without kana Chinese, Hangul Korean, and so on. Only Latin script, shared by many languages, needs
//! a statistical guess: that is `whatlang` (trigram profiles, MIT, no model download), limited to Latin
//! languages the services have voices for, and taken only at a confidence of [`LATIN_CONFIDENCE`] or more.
//! whatlang's own `is_reliable` was measured too strict for a sentence (`Il fait beau à Paris aujourd'hui.`
//! is 0.52 and "unreliable"), while below 0.25 its guesses go wrong (`Voici la météo.` is Catalan at
//! 0.17). A text too short or too mixed to tell gives `None`: the arm's default voice speaks it, as
//! before languages were known.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A language: a BCP 47 primary language subtag, lower-cased, `cmn` read as `zh`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Language(String);

impl Language {
    /// The language of a BCP 47 tag, checked for the tag's shape: a primary subtag of 2 or 3 letters,
    /// then subtags of 1 to 8 letters or digits, separated by `-` (or `_`, as in `en_US`, which some
    /// services write). The subtags after the first are checked, not kept.
    pub fn parse(tag: &str) -> Result<Language, String> {
        let mut parts = tag.trim().split(['-', '_']);
        let primary = parts.next().unwrap_or_default();
        if !(2..=3).contains(&primary.len()) || !primary.chars().all(|c| c.is_ascii_alphabetic()) {
            return Err(format!("`{tag}` is not a BCP 47 language tag: it starts with a language of 2 or 3 letters (en, fr, zh)"));
        }
        if let Some(bad) = parts.find(|p| p.is_empty() || p.len() > 8 || !p.chars().all(|c| c.is_ascii_alphanumeric())) {
            return Err(format!("`{tag}` is not a BCP 47 language tag: `{bad}` is not a subtag (1 to 8 letters or digits)"));
        }
        Ok(Language::from_primary(primary))
    }

    /// The language of a voice's tag as a service writes it (`en-US`, `cmn-CN`, Kokoro's `en-us`, `fr`);
    /// `None` when it is not a tag (Kokoro's `?` for a voice name it cannot read).
    pub fn of_voice(tag: &str) -> Option<Language> {
        Language::parse(tag).ok()
    }

    fn from_primary(primary: &str) -> Language {
        let primary = primary.to_ascii_lowercase();
        Language(if primary == "cmn" { "zh".to_string() } else { primary })
    }

    /// The language subtag (`fr`, `zh`).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The language a text front end that is told none takes a text to be in, from its script: kana is
/// Japanese, Han Chinese, anything else English (the Kokoro container's reading). The ranges are the
/// letters the container's `scripts.py` names `HIRAGANA…`/`KATAKANA…` and `CJK UNIFIED IDEOGRAPH…`/`CJK
/// COMPATIBILITY IDEOGRAPH…`/`IDEOGRAPHIC…` (every extension block; not half-width katakana, whose names
/// start `HALFWIDTH`), so that the two read a text alike.
pub fn read_by_script(text: &str) -> Language {
    let kana =
        text.chars().any(|c| matches!(c as u32, 0x3041..=0x3096 | 0x309D..=0x309F | 0x30A1..=0x30FA | 0x30FC..=0x30FF | 0x31F0..=0x31FF | 0x1B000..=0x1B16F));
    let han = text.chars().any(|c| matches!(c as u32, 0x3005..=0x3006 | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x323AF));
    Language::from_primary(match (kana, han) {
        (true, _) => "ja",
        (false, true) => "zh",
        _ => "en",
    })
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a conversation's language came from, as the `session` event says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LanguageSource {
    /// The request named it.
    Request,
    /// Detected from text (the text to speak, or the prompt the answer replies to).
    Detected,
    /// A source this client does not know (a newer server's).
    #[serde(other)]
    Unknown,
}

/// The Latin-script languages detection chooses among: those whose voices the services offer (Polly's
/// generative voices, Kokoro's), so that a guess is a language some arm could speak. Each with its
/// ISO 639-3 code (whatlang's) and its BCP 47 subtag.
const LATIN_LANGUAGES: [(whatlang::Lang, &str); 9] = [
    (whatlang::Lang::Eng, "en"),
    (whatlang::Lang::Fra, "fr"),
    (whatlang::Lang::Deu, "de"),
    (whatlang::Lang::Spa, "es"),
    (whatlang::Lang::Ita, "it"),
    (whatlang::Lang::Por, "pt"),
    (whatlang::Lang::Nld, "nl"),
    (whatlang::Lang::Pol, "pl"),
    (whatlang::Lang::Cat, "ca"),
];

/// The least whatlang confidence taken as a Latin-script language (see the module docs).
pub const LATIN_CONFIDENCE: f64 = 0.25;

/// The language of `text`, where it can be told; see the module docs.
pub fn detect(text: &str) -> Option<Language> {
    let mut counts = ScriptCounts::default();
    for c in text.chars() {
        counts.add(c);
    }
    if counts.kana > 0 {
        return Some(Language::from_primary("ja"));
    }
    if counts.han > 0 && counts.han >= counts.latin / 4 {
        return Some(Language::from_primary("zh"));
    }
    if counts.hangul > 0 {
        return Some(Language::from_primary("ko"));
    }
    if let Some(other) = counts.other_script() {
        return Some(Language::from_primary(other));
    }
    if counts.latin == 0 {
        return None;
    }
    let detector = whatlang::Detector::with_allowlist(LATIN_LANGUAGES.iter().map(|(l, _)| *l).collect());
    let info = detector.detect(text)?;
    if info.confidence() < LATIN_CONFIDENCE {
        return None;
    }
    LATIN_LANGUAGES.iter().find(|(l, _)| *l == info.lang()).map(|(_, code)| Language::from_primary(code))
}

/// The scripts a text's letters are written in, by name (`Cyrillic`, `Arabic`, `Latin`, …), those with the
/// most letters first: for messages that say what a text is written in.
pub fn scripts(text: &str) -> Vec<&'static str> {
    let mut counts = ScriptCounts::default();
    for c in text.chars() {
        counts.add(c);
    }
    let mut named: Vec<(usize, &'static str)> = [
        (counts.latin, "Latin"),
        (counts.han, "Han"),
        (counts.kana, "kana"),
        (counts.hangul, "Hangul"),
        (counts.cyrillic, "Cyrillic"),
        (counts.arabic, "Arabic"),
        (counts.devanagari, "Devanagari"),
        (counts.greek, "Greek"),
        (counts.hebrew, "Hebrew"),
        (counts.thai, "Thai"),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .collect();
    named.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
    named.into_iter().map(|(_, name)| name).collect()
}

/// Letters of each script in a text.
#[derive(Default)]
struct ScriptCounts {
    latin: usize,
    han: usize,
    kana: usize,
    hangul: usize,
    cyrillic: usize,
    arabic: usize,
    devanagari: usize,
    greek: usize,
    hebrew: usize,
    thai: usize,
}

impl ScriptCounts {
    fn add(&mut self, c: char) {
        let slot = match c as u32 {
            0x41..=0x5A | 0x61..=0x7A | 0xC0..=0x24F | 0x1E00..=0x1EFF => &mut self.latin,
            0x3040..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9D => &mut self.kana,
            0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x3134F => &mut self.han,
            0xAC00..=0xD7AF | 0x1100..=0x11FF | 0x3130..=0x318F => &mut self.hangul,
            0x0400..=0x052F => &mut self.cyrillic,
            0x0600..=0x06FF | 0x0750..=0x077F => &mut self.arabic,
            0x0900..=0x097F => &mut self.devanagari,
            0x0370..=0x03FF => &mut self.greek,
            0x0590..=0x05FF => &mut self.hebrew,
            0x0E00..=0x0E7F => &mut self.thai,
            _ => return,
        };
        *slot += 1;
    }

    /// A script used by one main language (Arabic script by several: Arabic is the guess the
    /// services' voices can speak), when it has more letters than Latin.
    fn other_script(&self) -> Option<&'static str> {
        [(self.cyrillic, "ru"), (self.arabic, "ar"), (self.devanagari, "hi"), (self.greek, "el"), (self.hebrew, "he"), (self.thai, "th")]
            .into_iter()
            .filter(|(n, _)| *n > self.latin)
            .max_by_key(|(n, _)| *n)
            .map(|(_, code)| code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lang(s: &str) -> Language {
        Language::parse(s).unwrap()
    }

    #[test]
    fn tags_read_as_their_primary_language() {
        for (tag, want) in
            [("fr", "fr"), ("fr-CA", "fr"), ("FR-fr", "fr"), ("zh-Hans-CN", "zh"), ("cmn-CN", "zh"), ("cmn", "zh"), ("en_US", "en"), ("yue", "yue")]
        {
            assert_eq!(lang(tag).as_str(), want, "{tag}");
        }
    }

    #[test]
    fn malformed_tags_are_refused_with_the_reason() {
        for tag in ["", "f", "french", "fr-", "fr--CA", "fr-toolongsubtag", "1r", "fr CA", "zh-漢"] {
            assert!(Language::parse(tag).is_err(), "{tag}");
        }
        assert!(Language::parse("f").unwrap_err().contains("2 or 3 letters"));
    }

    #[test]
    fn voice_tags_as_services_write_them() {
        assert_eq!(Language::of_voice("en-us"), Some(lang("en")));
        assert_eq!(Language::of_voice("cmn-CN"), Some(lang("zh")));
        assert_eq!(Language::of_voice("?"), None);
    }

    #[test]
    fn scripts_settle_their_languages() {
        assert_eq!(detect("今天天气很好。"), Some(lang("zh")));
        assert_eq!(detect("今日はいい天気ですね。"), Some(lang("ja")));
        assert_eq!(detect("안녕하세요, 반갑습니다."), Some(lang("ko")));
        assert_eq!(detect("Привет, как дела?"), Some(lang("ru")));
        // A Chinese sentence naming a product in Latin letters is still Chinese.
        assert_eq!(detect("我们用 Amazon Polly 合成语音。"), Some(lang("zh")));
    }

    #[test]
    fn the_script_reading_covers_the_blocks_the_container_reads() {
        for (text, reading) in
            [("𠀀好。", "zh"), ("﨑。", "zh"), ("々。", "zh"), ("〇。", "en"), ("ㇰ。", "ja"), ("ひらがな", "ja"), ("ｶﾀｶﾅ", "en"), ("Sure.", "en")]
        {
            assert_eq!(read_by_script(text).as_str(), reading, "{text}");
        }
    }

    #[test]
    fn latin_script_languages_are_told_apart() {
        assert_eq!(detect("Bonjour, je suis votre assistant et je vais vous répondre tout de suite."), Some(lang("fr")));
        assert_eq!(detect("Hello, I am your assistant and I will answer you right away."), Some(lang("en")));
        assert_eq!(detect("Hola, soy tu asistente y te voy a responder enseguida."), Some(lang("es")));
    }

    #[test]
    fn scripts_are_named_most_letters_first() {
        assert_eq!(scripts("Привет, как дела?"), vec!["Cyrillic"]);
        assert_eq!(scripts("مرحبا بك. OK"), vec!["Arabic", "Latin"]);
        assert_eq!(scripts("Hello 안녕"), vec!["Latin", "Hangul"]);
        assert!(scripts("12 — !").is_empty());
    }

    #[test]
    fn what_cannot_be_told_is_none() {
        assert_eq!(detect(""), None);
        assert_eq!(detect("12 345"), None);
        assert_eq!(detect("OK"), None);
        // Too short for trigrams to tell French from Catalan: not guessed.
        assert_eq!(detect("Voici la météo."), None);
    }
}
