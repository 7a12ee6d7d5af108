//! List item markers (`1.`, `2.)`, `a)`, `• 9.`, `⁃10.`) at the start of a sentence.
//!
//! A list written on one line ("1. The first item 2. The second item") has no full stops between its
//! items. Once a sentence starts with a marker, the segmenter expects the next marker of the same
//! style and starts a new sentence there.

use crate::chars::is_bullet;

/// The label of a list item: a number or a single letter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    /// No label: a bare bullet.
    None,
    /// `1`, `2`, …
    Number(u32),
    /// `a`, `b`, … (or upper case).
    Letter(char),
    /// Lower- or upper-case Roman numerals of two letters or more (`ii`, `iv`); a lone `i` is a letter.
    Roman(u32),
}

/// What follows the label: `1.`, `1.)`, `1)`, or nothing (a bare bullet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suffix {
    /// Nothing after the label.
    None,
    /// `1.`
    Dot,
    /// `1.)`
    DotParen,
    /// `1)`
    Paren,
}

/// One parsed marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListMarker {
    /// The bullet before the label (`-`, `*`, `•`), if any.
    pub bullet: Option<char>,
    /// The number or letter.
    pub label: Label,
    /// What follows the label.
    pub suffix: Suffix,
}

impl ListMarker {
    /// Whether `self` is the marker of the item after `prev` in the same list.
    pub fn follows(&self, prev: &ListMarker) -> bool {
        if self.bullet != prev.bullet || self.suffix != prev.suffix {
            return false;
        }
        match (prev.label, self.label) {
            (Label::None, Label::None) => true,
            (Label::Number(a), Label::Number(b)) => b == a.saturating_add(1),
            (Label::Letter(a), Label::Letter(b)) => b as u32 == a as u32 + 1,
            // `i.` may open a Roman list: `i.` then `ii.`.
            (Label::Letter('i' | 'I'), Label::Roman(2)) => true,
            (Label::Roman(a), Label::Roman(b)) => b == a + 1,
            (Label::Roman(4 | 9), Label::Letter('v' | 'V' | 'x' | 'X')) => true,
            _ => false,
        }
    }
}

/// The value of a Roman numeral of two or more letters (`ii` = 2), if `s` is one.
fn roman_value(s: &str) -> Option<u32> {
    if s.len() < 2 || s.len() > 5 {
        return None;
    }
    let lower = s.to_ascii_lowercase();
    const NUMERALS: [&str; 20] =
        ["", "i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x", "xi", "xii", "xiii", "xiv", "xv", "xvi", "xvii", "xviii", "xix"];
    NUMERALS.iter().position(|n| *n == lower).map(|p| p as u32)
}

/// The answer of [`parse`]: a marker and its byte length, no marker, or not enough text yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// A marker, and its length in bytes.
    Marker(ListMarker, usize),
    /// The text does not start with a marker.
    NotAMarker,
    /// Too little text to tell yet.
    NeedMore,
}

/// Parses a marker at the start of `s`. A marker must be followed by white space; `eof` says that
/// no more text will come, so the end of `s` counts as white space.
pub fn parse(s: &str, eof: bool) -> Parsed {
    let mut it = s.char_indices().peekable();
    let mut bullet = None;
    let need_more = if eof { Parsed::NotAMarker } else { Parsed::NeedMore };
    let Some(&(_, first)) = it.peek() else { return need_more };
    let mut bullet_end = 0;
    if is_bullet(first) {
        bullet = Some(first);
        bullet_end = first.len_utf8();
        it.next();
        while matches!(it.peek(), Some(&(_, ' '))) {
            it.next();
        }
    }
    // The label.
    let mut label = Label::None;
    let mut digits = 0u32;
    let mut value = 0u32;
    while let Some(&(_, c)) = it.peek() {
        if c.is_ascii_digit() && digits < 3 {
            value = value * 10 + c.to_digit(10).unwrap_or(0);
            digits += 1;
            it.next();
        } else {
            break;
        }
    }
    if digits == 0 && it.peek().is_none() && !eof {
        return Parsed::NeedMore;
    }
    let roman_len =
        if digits == 0 { s[bullet_end..].trim_start_matches(' ').chars().take_while(|c| matches!(c, 'i' | 'v' | 'x' | 'I' | 'V' | 'X')).count() } else { 0 };
    if digits > 0 {
        label = Label::Number(value);
    } else if roman_len >= 2 {
        let start = it.peek().map_or(0, |&(i, _)| i);
        match roman_value(&s[start..start + roman_len]) {
            Some(v) => {
                label = Label::Roman(v);
                for _ in 0..roman_len {
                    it.next();
                }
            }
            None => return Parsed::NotAMarker,
        }
    } else if let Some(&(_, c)) = it.peek() {
        if c.is_ascii_alphabetic() {
            // A single letter is a label only when a suffix follows it at once.
            let mut look = it.clone();
            look.next();
            match look.peek() {
                Some(&(_, '.')) | Some(&(_, ')')) => {
                    label = Label::Letter(c);
                    it.next();
                }
                None => return need_more,
                _ => {}
            }
        }
    }
    if label == Label::None {
        // A bare bullet is a marker when white space follows it.
        return match (bullet, s[bullet_end..].chars().next()) {
            (None, _) => Parsed::NotAMarker,
            (Some(_), Some(c)) if c.is_whitespace() => Parsed::Marker(ListMarker { bullet, label, suffix: Suffix::None }, bullet_end),
            (Some(_), None) if !eof => Parsed::NeedMore,
            _ => Parsed::NotAMarker,
        };
    }
    // The suffix.
    let suffix = match it.peek() {
        Some(&(_, '.')) => {
            it.next();
            match it.peek() {
                Some(&(_, ')')) => {
                    it.next();
                    Suffix::DotParen
                }
                None if !eof => return Parsed::NeedMore,
                _ => Suffix::Dot,
            }
        }
        Some(&(_, ')')) => {
            it.next();
            Suffix::Paren
        }
        None => return need_more,
        _ => return Parsed::NotAMarker,
    };
    // White space must follow.
    match it.peek() {
        Some(&(i, c)) if c.is_whitespace() => Parsed::Marker(ListMarker { bullet, label, suffix }, i),
        Some(_) => Parsed::NotAMarker,
        None if eof => Parsed::Marker(ListMarker { bullet, label, suffix }, s.len()),
        None => Parsed::NeedMore,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_common_styles() {
        let m = |b, l, s| ListMarker { bullet: b, label: l, suffix: s };
        assert_eq!(parse("1. The", false), Parsed::Marker(m(None, Label::Number(1), Suffix::Dot), 2));
        assert_eq!(parse("12.) x", false), Parsed::Marker(m(None, Label::Number(12), Suffix::DotParen), 4));
        assert_eq!(parse("a) x", false), Parsed::Marker(m(None, Label::Letter('a'), Suffix::Paren), 2));
        assert_eq!(parse("• 9. x", false), Parsed::Marker(m(Some('•'), Label::Number(9), Suffix::Dot), 6));
        assert_eq!(parse("⁃10. x", false), Parsed::Marker(m(Some('⁃'), Label::Number(10), Suffix::Dot), 6));
        assert_eq!(parse("• item", false), Parsed::Marker(m(Some('•'), Label::None, Suffix::None), 3));
    }

    #[test]
    fn rejects_words_and_waits_for_enough_text() {
        assert_eq!(parse("The end", false), Parsed::NotAMarker);
        assert_eq!(parse("1.5 m", false), Parsed::NotAMarker);
        assert_eq!(parse("as", false), Parsed::NotAMarker);
        assert_eq!(parse("1", false), Parsed::NeedMore);
        assert_eq!(parse("1.", false), Parsed::NeedMore);
        assert_eq!(parse("a", false), Parsed::NeedMore);
        assert_eq!(parse("1.", true), Parsed::Marker(ListMarker { bullet: None, label: Label::Number(1), suffix: Suffix::Dot }, 2));
    }

    #[test]
    fn follows_counts_on() {
        let at = |l| ListMarker { bullet: None, label: l, suffix: Suffix::Dot };
        assert!(at(Label::Letter('b')).follows(&at(Label::Letter('a'))));
        assert!(at(Label::Number(10)).follows(&at(Label::Number(9))));
        assert!(at(Label::Roman(2)).follows(&at(Label::Letter('i'))));
        assert!(at(Label::Roman(3)).follows(&at(Label::Roman(2))));
        assert!(!at(Label::Number(3)).follows(&at(Label::Number(1))));
        assert_eq!(parse("iii. Second", false), Parsed::Marker(at(Label::Roman(3)), 4));
    }
}
