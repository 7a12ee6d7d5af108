//! Character classes shared by the segmenter and the normaliser.
//!
//! Sentence boundaries are decided on a handful of character classes (terminators, closers, openers,
//! clause marks, scripts). Keeping them in one place keeps the two text stages in agreement.

/// A mark that can end a sentence: `.`, `?`, `!`, the ellipsis, and their CJK full-width forms.
pub fn is_terminator(c: char) -> bool {
    matches!(c, '.' | '?' | '!' | '…' | '．' | '‼' | '⁇' | '⁈' | '⁉') || is_cjk_terminator(c)
}

/// A terminator that ends a sentence on its own (no following space needed, never part of a number
/// or an abbreviation): CJK `。！？`, and the full stops and question marks of other scripts without
/// letter case (Arabic, Urdu, Devanagari, Ethiopic, Burmese, Armenian). The full-width full stop `．`
/// is not one: it is also a decimal point.
pub fn is_cjk_terminator(c: char) -> bool {
    matches!(c, '。' | '！' | '？' | '｡' | '؟' | '۔' | '।' | '॥' | '።' | '፧' | '။' | '։')
}

/// A period-like mark: may be an abbreviation dot or a decimal point as well as a full stop.
pub fn is_dot(c: char) -> bool {
    matches!(c, '.' | '．')
}

/// A mark that closes a quotation or bracket and stays with the sentence before it.
pub fn is_closer(c: char) -> bool {
    // An SSML tag's marker right after a full stop (`.</prosody> Next`) stays with the sentence, as a
    // closing bracket would.
    is_markup(c)
        || matches!(c, '"' | '\'' | '”' | '’' | '»' | '›' | ')' | ']' | '}' | '」' | '』' | '）' | '】' | '》' | '〉' | '〕' | '］' | '｝' | '〗' | '〙' | '＂')
}

/// A mark that opens a bracket or quotation whose contents do not end the enclosing sentence.
/// Straight double quotes are decided by position (see [`straight_quote_opens`]); apostrophes and
/// single quotes are never counted, since they double as apostrophes (`one’s`, `'cause`).
pub fn is_opener(c: char) -> bool {
    matches!(c, '(' | '[' | '{' | '“' | '«' | '‹' | '「' | '『' | '（' | '【' | '《' | '〈' | '〔' | '［' | '｛' | '〖' | '〘')
}

/// A closer that balances an [`is_opener`] mark (straight quotes and apostrophes excluded).
pub fn is_bracket_closer(c: char) -> bool {
    is_closer(c) && !matches!(c, '"' | '\'' | '’' | '＂')
}

/// A straight double quote opens a quotation when it starts a word, and closes one otherwise.
pub fn straight_quote_opens(prev: Option<char>) -> bool {
    match prev {
        None => true,
        Some(p) => p.is_whitespace() || is_opener(p),
    }
}

/// Marks after which a long sentence may be cut into clauses.
pub fn is_clause_mark(c: char) -> bool {
    matches!(c, ',' | ';' | ':' | '—' | '–' | '，' | '、' | '；' | '：')
}

/// A clause mark that needs no following space to act as a break (CJK punctuation).
pub fn is_cjk_clause_mark(c: char) -> bool {
    matches!(c, '，' | '、' | '；' | '：')
}

/// Chinese, Japanese and Korean letters: ideographs, kana and hangul. These scripts put no spaces
/// between words or sentences and have no letter case.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // hiragana, katakana
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xF900..=0xFAFF    // compatibility ideographs
        | 0xFF66..=0xFF9F    // half-width katakana
        | 0xAC00..=0xD7AF    // hangul syllables
        | 0x20000..=0x2FA1F  // supplementary ideographs
    )
}

/// Bullets that mark list items in running text.
pub fn is_bullet(c: char) -> bool {
    matches!(c, '•' | '⁃' | '◦' | '▪' | '‣' | '●' | '○' | '■' | '□' | '➢' | '►' | '·')
}

/// Whether a character is a digit in any script (ASCII and full-width alike).
pub fn is_digit(c: char) -> bool {
    c.is_numeric()
}

/// Whether a character starts a word that continues a sentence: a lower-case letter.
pub fn is_lower(c: char) -> bool {
    c.is_lowercase()
}

/// Whether `c` belongs to an SSML tag's marker ([`crate::markup`]): private-use characters the segmenter
/// reads past, as if the tag were not there (`{sub}Dr.` is the title `Dr.`).
pub fn is_markup(c: char) -> bool {
    matches!(c, '\u{F8F0}'..='\u{F8F2}' | '\u{F0000}'..='\u{FFFFD}')
}
