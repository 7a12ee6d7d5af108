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
    /// `?` before a query string, `=` and `&` inside it.
    pub question: &'static str,
    pub equals: &'static str,
    pub and: &'static str,
    /// `#` before a hashtag, and what a version's `v` is said as.
    pub hashtag: &'static str,
    pub version: &'static str,
    /// The point between a version's parts (`2.1.3`).
    pub point: &'static str,
    /// A beta, as a pre-release's name (`-beta.2`).
    pub beta: &'static str,
    /// One part of an IP address (`192`), as the language says it.
    pub octet: fn(&str) -> String,
    /// One part of a version (`2` of `v2.1.3`).
    pub version_part: fn(&str) -> String,
    pub digits: &'static [&'static str; 10],
    /// What goes between two spoken parts: a space, or nothing in a script written without spaces.
    pub join: &'static str,
}

/// A path after a host: letters, digits and `._~/-`, not ending on a full stop (that ends the sentence);
/// then a query string (`?q=shoes&page=2`).
const PATH: &str = r"(?:/(?:[A-Za-z0-9._~/-]*[A-Za-z0-9_~/-])?)?(?:\?[A-Za-z0-9_.~%=&-]*[A-Za-z0-9_~%=-])?";

/// The top-level domains that mark a bare domain (no scheme) as an address.
const TOP_LEVEL: &str = "com|org|net|io|dev|ai|app|edu|gov|co|uk|fr|cn|de|eu|jp|us|ca|info";

struct Rules {
    email: Regex,
    with_scheme: Regex,
    bare: Regex,
    local: Regex,
    ip: Regex,
    path: Regex,
    version: Regex,
    hashtag: Regex,
    handle: Regex,
}

// The edges are ASCII word boundaries (`(?-u:\b)`): an address written straight after a Chinese character
// (`请看https://…`, `example.cn了解`) has no Unicode word boundary there, as Han characters are word characters.
static RULES: LazyLock<Rules> = LazyLock::new(|| Rules {
    email: pattern(r"(?-u:\b)(?P<address>[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})(?-u:\b)"),
    with_scheme: pattern(&format!(r"(?i)(?-u:\b)https?://(?P<address>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?::\d+)?{PATH})")),
    bare: pattern(&format!(r"(?-u:\b)(?P<address>(?:[A-Za-z0-9-]+\.)+(?:{TOP_LEVEL})(?-u:\b){PATH})")),
    // A host without a dot is an address when it names a port (`localhost:8080`, `db:5432`) or is `localhost`.
    local: pattern(&format!(r"(?-u:\b)(?P<address>localhost(?::\d{{1,5}})?{PATH}|[a-z][a-z0-9-]*:\d{{2,5}}{PATH})(?-u:\b)")),
    ip: pattern(r"(?-u:\b)(?P<a>\d{1,3})\.(?P<b>\d{1,3})\.(?P<c>\d{1,3})\.(?P<d>\d{1,3})(?::(?P<port>\d{1,5}))?(?-u:\b)(?P<tail>\.\d)?"),
    // A path from the root (`/etc/hosts`), after a space or a sentence's start: not `km/h`, not `1/2`.
    path: pattern(
        r"(?P<before>^|[\s（\p{Han}]|[^\]]\()(?P<address>(?:/[A-Za-z_~-](?:[A-Za-z0-9_.~-]*[A-Za-z0-9_~-])?)+/?)(?P<after>[\s,;)）\p{Han}]|[.!?。！？]?$)",
    ),
    version: pattern(r"(?-u:\b)[vV](?P<parts>\d+(?:\.\d+)+)(?:-(?P<pre>alpha|beta|rc|RC|dev|preview)(?:\.?(?P<pre_n>\d+))?)?(?-u:\b)"),
    hashtag: pattern(r"(?P<before>^|[\s(（\p{Han}])#(?P<tag>[\p{L}_][\p{L}\p{N}_]*)"),
    handle: pattern(r"(?P<before>^|[\s(（\p{Han}])@(?P<name>[\p{L}_][\p{L}\p{N}_.]*[\p{L}\p{N}_])"),
});

/// `text` with every address in it said in `words`.
pub fn spoken(text: &str, words: &Words) -> String {
    let rules = &*RULES;
    let mut text = text.to_string();
    for pattern in [&rules.email, &rules.with_scheme, &rules.bare, &rules.local] {
        text = pattern.replace_all(&text, |c: &Captures| said(&c["address"], words)).into_owned();
    }
    text = rules
        .ip
        .replace_all(&text, |c: &Captures| {
            // Five groups or more are not an IP address (`01.45.67.89.05` is a phone number).
            if c.name("tail").is_some() {
                return c[0].to_string();
            }
            let octets = ["a", "b", "c", "d"].map(|g| (words.octet)(&c[g])).join(&format!("{}{}{}", words.join, words.dot, words.join));
            match c.name("port") {
                Some(port) => format!("{octets}{j}{}{j}{}", words.colon, said(port.as_str(), words), j = words.join),
                None => octets,
            }
        })
        .into_owned();
    text = rules.path.replace_all(&text, |c: &Captures| format!("{}{}{}", &c["before"], said(&c["address"], words), &c["after"])).into_owned();
    text = rules
        .version
        .replace_all(&text, |c: &Captures| {
            let parts: Vec<String> = c["parts"].split('.').map(words.version_part).collect();
            // A pre-release (`-beta.2`, `-rc1`): its name, then its number.
            let pre = match c.name("pre").map(|p| p.as_str()) {
                Some(name) => {
                    let name = match name {
                        "beta" => words.beta,
                        "rc" | "RC" => "R C",
                        other => other,
                    };
                    let n = c.name("pre_n").map(|n| format!("{}{}", words.join, (words.version_part)(n.as_str()))).unwrap_or_default();
                    format!("{}{name}{n}", words.join)
                }
                None => String::new(),
            };
            format!("{}{j}{}{pre}", words.version, parts.join(&format!("{j}{}{j}", words.point, j = words.join)), j = words.join)
        })
        .into_owned();
    // A colour (`#fff`, `#1E90FF`) is not a hashtag: the language's rules say it.
    text = rules
        .hashtag
        .replace_all(&text, |c: &Captures| match super::classes::is_hex_colour(&c["tag"]) {
            true => c[0].to_string(),
            false => format!("{}{}{}{}", &c["before"], words.hashtag, words.join, &c["tag"]),
        })
        .into_owned();
    rules.handle.replace_all(&text, |c: &Captures| format!("{}{}{}{}", &c["before"], words.at, words.join, &c["name"])).into_owned()
}

/// One address, part by part.
fn said(address: &str, words: &Words) -> String {
    let address = address.trim_end_matches('/');
    // Where the host ends: its last label, the top-level domain, is spelled when it is a country's.
    let host_end = if address.contains('@') { address.len() } else { address.find(['/', ':', '?']).unwrap_or(address.len()) };
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
            '?' => Some(words.question),
            '=' => Some(words.equals),
            '&' => Some(words.and),
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
