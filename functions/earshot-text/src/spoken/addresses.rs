//! Web addresses and e-mail addresses as a speaker says them: `https://example.com/returns` "example dot
//! com slash returns", `jane.doe@example.co.uk` "jane dot doe at example dot co dot u k".
//!
//! Agents paste links and addresses into answers; a front end left to itself spells them letter by letter,
//! reads `.com` as a sentence end, or reads `/` as "slash" in one language and drops it in another. The
//! rules are the same in every language, only the words for the signs and digits differ ([`Words`]): the
//! scheme (`https://`) is not said, as people do not; `www` and a two-letter country domain are spelled;
//! every other run of letters is said as written; digits one by one. A bare domain without a scheme is
//! recognised by its top-level domain (a short list of common ones), so `Node.js` and `e.g.` stay words.
//! They run before every other rule, so no number rule reads part of an address.

use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::numbers::pattern;

/// What a language calls the signs of an address, and its digits.
pub struct Words {
    pub dot: &'static str,
    pub at: &'static str,
    pub slash: &'static str,
    pub dash: &'static str,
    pub underscore: &'static str,
    pub colon: &'static str,
    pub plus: &'static str,
    pub digits: &'static [&'static str; 10],
    /// What goes between two spoken parts: a space, or nothing in a script written without spaces.
    pub join: &'static str,
}

/// A path after a host: letters, digits and `._~/-`, not ending on a full stop (that ends the sentence).
const PATH: &str = r"(?:/(?:[A-Za-z0-9._~/-]*[A-Za-z0-9_~/-])?)?";

/// The top-level domains that mark a bare domain (no scheme) as an address.
const TOP_LEVEL: &str = "com|org|net|io|dev|ai|app|edu|gov|co|uk|fr|cn|de|eu|jp|us|ca|info";

struct Rules {
    email: Regex,
    with_scheme: Regex,
    bare: Regex,
}

// The edges are ASCII word boundaries (`(?-u:\b)`): an address written straight after a Chinese character
// (`请看https://…`, `example.cn了解`) has no Unicode word boundary there, as Han characters are word characters.
static RULES: LazyLock<Rules> = LazyLock::new(|| Rules {
    email: pattern(r"(?-u:\b)(?P<address>[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})(?-u:\b)"),
    with_scheme: pattern(&format!(r"(?i)(?-u:\b)https?://(?P<address>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?::\d+)?{PATH})")),
    bare: pattern(&format!(r"(?-u:\b)(?P<address>(?:[A-Za-z0-9-]+\.)+(?:{TOP_LEVEL})(?-u:\b){PATH})")),
});

/// `text` with every address in it said in `words`.
pub fn spoken(text: &str, words: &Words) -> String {
    let rules = &*RULES;
    let mut text = text.to_string();
    for pattern in [&rules.email, &rules.with_scheme, &rules.bare] {
        text = pattern.replace_all(&text, |c: &Captures| said(&c["address"], words)).into_owned();
    }
    text
}

/// One address, part by part.
fn said(address: &str, words: &Words) -> String {
    let address = address.trim_end_matches('/');
    // Where the host ends: its last label, the top-level domain, is spelled when it is a country's.
    let host_end = if address.contains('@') { address.len() } else { address.find(['/', ':']).unwrap_or(address.len()) };
    let mut parts: Vec<String> = Vec::new();
    let mut run = String::new();
    for (i, c) in address.char_indices() {
        let sign = match c {
            '.' => Some(words.dot),
            '@' => Some(words.at),
            '/' => Some(words.slash),
            '-' => Some(words.dash),
            '_' => Some(words.underscore),
            ':' => Some(words.colon),
            '+' => Some(words.plus),
            _ => None,
        };
        let kind_changes = run.chars().last().is_some_and(|last| last.is_ascii_digit() != c.is_ascii_digit());
        if sign.is_some() || kind_changes {
            parts.extend(run_said(&std::mem::take(&mut run), i == host_end, words));
        }
        match sign {
            Some(word) => parts.push(word.to_string()),
            None => run.push(c),
        }
    }
    parts.extend(run_said(&run, address.len() == host_end, words));
    parts.join(words.join)
}

/// A run of letters or of digits: digits one by one; `www` and a country's top-level domain (`uk`, the run
/// that ends the host) letter by letter; any other word as written.
fn run_said(run: &str, ends_host: bool, words: &Words) -> Option<String> {
    if run.is_empty() {
        None
    } else if run.chars().all(|c| c.is_ascii_digit()) {
        Some(run.chars().filter_map(|c| c.to_digit(10)).map(|d| words.digits[d as usize]).collect::<Vec<_>>().join(words.join))
    } else if run == "www" || (ends_host && run.len() == 2 && run.chars().all(|c| c.is_ascii_lowercase())) {
        Some(run.chars().map(String::from).collect::<Vec<_>>().join(" "))
    } else {
        Some(run.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spoken::en::ADDRESS_WORDS;

    #[test]
    fn addresses_are_said_part_by_part() {
        for (written, said) in [
            ("See https://example.com/returns today.", "See example dot com slash returns today."),
            ("Go to www.example.co.uk.", "Go to w w w dot example dot co dot u k."),
            ("Write to jane.doe@example.com.", "Write to jane dot doe at example dot com."),
            ("Open http://localhost.dev:8080/api/v2 now.", "Open localhost dot dev colon eight zero eight zero slash api slash v two now."),
            ("Node.js and e.g. stay.", "Node.js and e.g. stay."),
        ] {
            assert_eq!(spoken(written, &ADDRESS_WORDS), said, "{written}");
        }
    }
}
