//! The semiotic classes every language's rules are grouped by, and the tokenisers they share.
//!
//! Text normalisation's references (the Google text-normalisation data, NeMo's and WeTextProcessing's
//! grammars) sort what a writer writes and a speaker says differently into classes: a cardinal, an
//! ordinal, a date, a telephone number, an address on the web... Each language here keeps one ordered list
//! of rules, each tagged with its [`Class`]; a rule is a pattern (its tokeniser: what it takes as one
//! token, and where that token's edges are) and a verbaliser (what is said for it). The order is the same
//! in every language, from the most specific class to the least, so that a class never reads part of
//! another's token:
//!
//! 1. [`Class::Electronic`]: web and e-mail addresses, hosts and ports, paths, versions, handles.
//! 2. [`Class::Telephone`], 3. [`Class::Date`], 4. [`Class::Time`]: forms made of numbers with signs
//!    between them, before any sign is read as a range, a fraction or a minus.
//! 5. [`Class::Address`]: house numbers, street types, postcodes.
//! 6. [`Class::Roman`]: numerals after a name or a word that numbers (`Louis XIV`, `Chapter IV`).
//! 7. [`Class::Ordinal`], 8. [`Class::Money`], 9. [`Class::Measure`]: a number with what it counts.
//! 10. [`Class::Verbatim`] and 11. [`Class::Letters`]: codes mixing letters and digits said part by part,
//!     and initialisms spelled; from here on no digit stuck to a letter is left (no number is read inside a word).
//! 12. [`Class::Fraction`], 13. [`Class::Math`], 14. [`Class::Range`]: signs between numbers.
//! 15. [`Class::Decimal`] and [`Class::Cardinal`]: whatever number is left, with its sign.
//!
//! A language's list is in its own module (`en`, `fr`, `zh`); what the lists share is here: the Roman
//! numerals' values, the scanner that finds a code's token by its edges (the `regex` crate has no
//! look-around, and a code's edges are what decides it), and how an initialism is told from an acronym
//! said as a word. No crate does this for these three languages in Rust (the field's grammars are
//! Pynini/OpenFST programs, and a Python step in the gateway's path is out of the question): see
//! docs/pronunciation.md for the ones compared.

use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::numbers::{pattern, Amount};

/// A semiotic class: what kind of written form a rule says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// A count: `1,250`, `2 500 000`, `105`, `-7`.
    Cardinal,
    /// A place in order: `22nd`, `1er`, `第3`.
    Ordinal,
    /// A number with decimals: `3.14`, `0,05`, `1.5 million`.
    Decimal,
    /// `3/4`, `½`, `1 1/2`.
    Fraction,
    /// An amount with its currency: `$12.50`, `12,50 €`, `US$1,299.99`, `¥1.2万`.
    Money,
    /// An amount with its unit: `5 km`, `-12 °C`, `16 GB`.
    Measure,
    /// `2026-12-01`, `the 1st of May`, `2026年12月1日`.
    Date,
    /// `3:30 pm`, `10 h 30`, `1h 30m`.
    Time,
    /// Phone numbers, with their country codes and extensions.
    Telephone,
    /// URLs, e-mails, hosts, ports, paths, versions, hashtags and handles.
    Electronic,
    /// Initialisms spelled letter by letter: `FBI`, `U.S.`.
    Letters,
    /// Codes and identifiers mixing letters and digits: `A4B2`, `UA857`, `GPT-4o`.
    Verbatim,
    /// Street addresses: house numbers, street types, postcodes.
    Address,
    /// Roman numerals: `Louis XIV`, `World War II`, `Ⅲ期`.
    Roman,
    /// Operators and their operands: `3 × 4 = 12`, `x ≤ 10`, `2^10`, `16:9`.
    Math,
    /// Ranges: `10–15`, `2–8 °C`, `9am–5pm`, `1990–1995`.
    Range,
}

impl Class {
    /// Every class, in the order of the module docs' table (the scored set's headings).
    pub const ALL: [Class; 16] = [
        Class::Cardinal,
        Class::Ordinal,
        Class::Decimal,
        Class::Fraction,
        Class::Money,
        Class::Measure,
        Class::Date,
        Class::Time,
        Class::Telephone,
        Class::Electronic,
        Class::Letters,
        Class::Verbatim,
        Class::Address,
        Class::Roman,
        Class::Math,
        Class::Range,
    ];

    /// The class's name as the Google data writes it (`CARDINAL`, `TELEPHONE`...).
    pub fn name(self) -> &'static str {
        match self {
            Class::Cardinal => "CARDINAL",
            Class::Ordinal => "ORDINAL",
            Class::Decimal => "DECIMAL",
            Class::Fraction => "FRACTION",
            Class::Money => "MONEY",
            Class::Measure => "MEASURE",
            Class::Date => "DATE",
            Class::Time => "TIME",
            Class::Telephone => "TELEPHONE",
            Class::Electronic => "ELECTRONIC",
            Class::Letters => "LETTERS",
            Class::Verbatim => "VERBATIM",
            Class::Address => "ADDRESS",
            Class::Roman => "ROMAN",
            Class::Math => "MATH",
            Class::Range => "RANGE",
        }
    }
}

/// How a rule rewrites what its pattern matched; `None` leaves the match as written.
pub type Rewrite = fn(&Captures) -> Option<String>;

/// One rule: its class, its pattern, its verbaliser.
pub type Rule<'a> = (Class, &'a Regex, Rewrite);

/// Applies each rule in turn over the whole text. A text with no digit (left: an earlier rule may have said
/// them) skips the rules that need one (those whose pattern asks for a digit, but Roman numerals,
/// initialisms, addresses, en dashes between words and Unicode fractions): most of an answer's sentences
/// hold none, and this keeps their cost near what it was before the classes grew. The text is copied only
/// where a rule changed it, and which rules need a digit is worked out once ([`steps`]).
pub fn apply(mut text: String, steps: &[Step]) -> String {
    // No rule writes a digit where there was none, so the text's digits are looked for again only after a change.
    let mut has_digit = text.bytes().any(|b| b.is_ascii_digit());
    for step in steps {
        if (step.needs_digit && !has_digit) || (step.class == Class::Roman && !might_hold_roman(&text)) {
            continue;
        }
        let rewrite = step.rewrite;
        if let std::borrow::Cow::Owned(changed) = step.pattern.replace_all(&text, |c: &Captures| rewrite(c).unwrap_or_else(|| c[0].to_string())) {
            text = changed;
            has_digit = text.bytes().any(|b| b.is_ascii_digit());
        }
    }
    text
}

/// A language's rule, with what `apply` needs to know of it worked out once.
pub struct Step {
    class: Class,
    pattern: &'static Regex,
    rewrite: Rewrite,
    /// Whether its pattern asks for a digit (but Roman numerals, initialisms, addresses, en dashes between
    /// words and Unicode fractions, which run on any text).
    needs_digit: bool,
}

/// A language's rules, in order, ready for [`apply`]: built once a process.
pub fn steps(rules: Vec<Rule<'static>>) -> Vec<Step> {
    let shared = &*SHARED;
    rules
        .into_iter()
        .map(|(class, pattern, rewrite)| {
            let digitless = matches!(class, Class::Roman | Class::Letters | Class::Electronic)
                || std::ptr::eq(pattern, &shared.word_range)
                || std::ptr::eq(pattern, &shared.vulgar)
                || !pattern.as_str().contains("\\d");
            Step { class, pattern, rewrite, needs_digit: !digitless }
        })
        .collect()
}

/// The patterns of the classes whose tokens are written alike in every language here (math's signs,
/// fractions, file names); each language says them in its own words.
pub struct Shared {
    /// `16:9`: a colon before one digit is a ratio (a time has two).
    pub ratio: Regex,
    /// `2^10`.
    pub power: Regex,
    /// `5 - 3 = 2`: a minus between numbers where an equals sign follows, not a range.
    pub minus_sum: Regex,
    /// `2 + 2`.
    pub plus: Regex,
    /// An en dash between words or numbers, unspaced (`Monday–Friday`, `nine a m–five p m`); a spaced one is a pause.
    pub word_range: Regex,
    /// `n < 100`, `x > 5`: a comparison between numbers or one-letter variables (not a menu path's `>`).
    pub comparison: Regex,
    /// `1 1/2`.
    pub mixed_fraction: Regex,
    /// `½`, `1½`.
    pub vulgar: Regex,
    /// `config.json`, `error.log`: a file's name.
    pub file: Regex,
    /// `10k`, `1.5k`, `2M`: a count with its scale's letter.
    pub scaled: Regex,
    /// `3x faster`: so many times (`2x + 3`, a variable, is left to math: the `op` group).
    pub times: Regex,
    /// `1920×1080`: dimensions.
    pub dimensions: Regex,
    /// `#1E90FF`: a colour in hexadecimal (a letter among its digits).
    pub hex_colour: Regex,
    /// `2026-12-07T14:30Z`: an ISO 8601 timestamp.
    pub timestamp: Regex,
    /// `IBAN DE89 3704 0044 …`: a bank account in groups.
    pub iban: Regex,
}

/// The shared patterns, compiled once.
pub static SHARED: LazyLock<Shared> = LazyLock::new(|| Shared {
    ratio: pattern(r"(?P<before>^|[^\d:])(?P<a>\d{1,2}):(?P<b>\d)(?P<after>[^\d:]|$)"),
    power: pattern(r"(?P<a>[\p{L}\d)])\^(?P<b>\d+)"),
    minus_sum: pattern(r"(?P<a>\d)\s*[-−]\s*(?P<b>\d[\d.,]*\s*=)"),
    plus: pattern(r"(?P<a>[\d\p{L}])\s*\+\s*(?P<b>\d)"),
    word_range: pattern(r"(?P<a>[\p{L}\d.])–(?P<b>[\p{L}\d])"),
    comparison: pattern(r"(?P<a>(?-u:\b)(?:[A-Za-z_]\w*|\d+(?:[.,]\d+)?))\s?(?P<op>[<>])\s?(?P<b>-?\d|[A-Za-z](?-u:\b))"),
    mixed_fraction: pattern(r"(?P<w>\d+)(?:\s|又)(?P<a>\d{1,2})/(?P<b>\d{1,2})(?P<after>\D|$)"),
    vulgar: pattern(r"(?:(?P<w>\d+)\s?)?(?P<f>[½⅓⅔¼¾⅕⅖⅗⅘⅙⅚⅛⅜⅝⅞])"),
    scaled: pattern(r"(?P<before>^|[\s(（\p{Han}])(?P<n>\d+(?:[.,]\d+)?)\s?(?P<scale>k|M|bn)(?P<after>[^A-Za-z0-9€$£¥&]|$)"),
    times: pattern(r"(?P<n>(?-u:\b)\d+(?:[.,]\d+)?)x(?:(?P<op>\s*[-+=×*/^<>≤≥])|(?P<after>[^A-Za-z0-9]|$))"),
    dimensions: pattern(r"(?P<a>(?-u:\b)\d{2,5})\s?[×x]\s?(?P<b>\d{2,5})\b"),
    hex_colour: pattern(r"#(?P<hex>[0-9A-Fa-f]{6}|[0-9A-Fa-f]{3})(?-u:\b)"),
    timestamp: pattern(r"(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})[T ](?P<h>\d{2}):(?P<min>\d{2})(?::\d{2}(?:\.\d+)?)?(?P<zone>Z|[+-]\d{2}:?\d{2})?"),
    iban: pattern(r"\bIBAN:?\s(?P<iban>[A-Z]{2}\d{2}(?:\s?[A-Z0-9]{4}){2,7}(?:\s?[A-Z0-9]{1,3})?)\b"),
    file: pattern(
        r"(?-u:\b)(?P<name>[A-Za-z_][A-Za-z0-9_-]*)\.(?P<ext>json|yaml|yml|toml|txt|csv|log|md|py|rs|html|xml|zip|exe|png|jpg|jpeg|docx?|xlsx?|pptx?|sh|conf|ini)(?-u:\b)",
    ),
});

/// A hexadecimal colour or code, sign by sign: `digit` says a digit, letters stay capitals.
pub fn hex_said(hex: &str, digit: impl Fn(u32) -> String, join: &str) -> Option<String> {
    is_hex_colour(hex).then(|| hex.chars().map(|c| c.to_digit(10).map_or_else(|| c.to_ascii_uppercase().to_string(), &digit)).collect::<Vec<_>>().join(join))
}

/// Whether a `#` token is a colour rather than a hashtag or a number: three or six hexadecimal digits with a
/// letter among them, and a digit too or one letter repeated (`#1E90FF`, `#fff`; not `#123456` nor `#bad`).
pub fn is_hex_colour(hex: &str) -> bool {
    let hexadecimal = matches!(hex.len(), 3 | 6) && hex.chars().all(|c| c.is_ascii_hexdigit());
    let mut chars = hex.chars();
    let first = chars.next();
    hexadecimal && hex.chars().any(|c| c.is_ascii_alphabetic()) && (hex.chars().any(|c| c.is_ascii_digit()) || chars.all(|c| Some(c) == first))
}

/// An IBAN group by group, a pause between: its letters spelled, its digits one by one.
pub fn iban_said(iban: &str, digit: impl Fn(u32) -> String) -> String {
    let compact: String = iban.chars().filter(|c| !c.is_whitespace()).collect();
    let chars: Vec<char> = compact.chars().collect();
    chars
        .chunks(4)
        .map(|group| group.iter().map(|c| c.to_digit(10).map_or_else(|| c.to_string(), &digit)).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `10k` said as its count in full, by `cardinal` (the `scaled` pattern's match), `decimal` the language's
/// decimal mark. A `k` after a count below ten without decimals is left: `4k` and `8k` are screens' widths.
pub fn scaled_said(c: &Captures, cardinal: fn(u64) -> String, decimal: char) -> Option<String> {
    if c["scale"] == *"k" && c["n"].len() == 1 {
        return None;
    }
    let value = Amount::parse(&c["n"], decimal)?.scaled(&c["scale"])?;
    Some(format!("{}{}{}", &c["before"], cardinal(value), &c["after"]))
}

/// `3x` said with `times` after the count (" times", " fois", "倍"); `2x + 3`, a variable, as `x`
/// (`space`: what goes between the count and the `x`).
pub fn times_said(c: &Captures, times: &str, space: &str) -> Option<String> {
    let after = c.name("after").map_or("", |a| a.as_str());
    Some(match c.name("op") {
        Some(op) => format!("{}{space}x{}{after}", &c["n"], op.as_str()),
        None => format!("{}{times}{after}", &c["n"]),
    })
}

/// Each operator of `table` in `text` said in words (`≤`, `×`...), with the spaces its words brought
/// made single again; a text with none is returned as it is.
pub fn operators(mut text: String, table: &[(&str, &str)]) -> String {
    let mut any = false;
    for (sign, said) in table {
        if text.contains(sign) {
            text = text.replace(sign, said);
            any = true;
        }
    }
    if !any {
        return text;
    }
    while text.contains("  ") {
        text = text.replace("  ", " ");
    }
    text.replace(" ,", ",").replace(" .", ".").trim_start().to_string()
}

/// A Unicode fraction's numerator and denominator.
pub fn vulgar(c: char) -> Option<(u64, u64)> {
    Some(match c {
        '½' => (1, 2),
        '⅓' => (1, 3),
        '⅔' => (2, 3),
        '¼' => (1, 4),
        '¾' => (3, 4),
        '⅕' => (1, 5),
        '⅖' => (2, 5),
        '⅗' => (3, 5),
        '⅘' => (4, 5),
        '⅙' => (1, 6),
        '⅚' => (5, 6),
        '⅛' => (1, 8),
        '⅜' => (3, 8),
        '⅝' => (5, 8),
        '⅞' => (7, 8),
        _ => return None,
    })
}

/// Whether `text` has a capital that may begin a Roman numeral (`I`, `V`, `X`, `L`, `C`, `D`, `M` after no
/// letter) or a Unicode numeral (`Ⅲ`): a scan that spares most sentences the Roman rules.
fn might_hold_roman(text: &str) -> bool {
    let mut prev_letter = false;
    for c in text.chars() {
        if (matches!(c, 'I' | 'V' | 'X' | 'L' | 'C' | 'D' | 'M') && !prev_letter) || ('Ⅰ'..='ⅻ').contains(&c) {
            return true;
        }
        prev_letter = c.is_ascii_alphabetic();
    }
    false
}

/// A Roman numeral's value, where it is written as Roman numerals are (`XIV` 14, `LVIII` 58; `IIII` and
/// `VX` are not numerals), up to 3999.
pub fn roman(s: &str) -> Option<u64> {
    let value = |c: char| match c {
        'I' => Some(1),
        'V' => Some(5),
        'X' => Some(10),
        'L' => Some(50),
        'C' => Some(100),
        'D' => Some(500),
        'M' => Some(1000),
        _ => None,
    };
    let values: Vec<i64> = s.chars().map(value).collect::<Option<_>>()?;
    let mut total = 0i64;
    for (i, v) in values.iter().enumerate() {
        if values.get(i + 1).is_some_and(|next| next > v) {
            total -= v;
        } else {
            total += v;
        }
    }
    let total = u64::try_from(total).ok().filter(|t| (1..4000).contains(t))?;
    (to_roman(total) == s).then_some(total)
}

fn to_roman(mut n: u64) -> String {
    let table =
        [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")];
    let mut out = String::new();
    for (value, letters) in table {
        while n >= value {
            out.push_str(letters);
            n -= value;
        }
    }
    out
}

/// The Unicode Roman numerals `Ⅰ`..`Ⅻ` (and their small forms) as their value.
pub fn roman_sign(c: char) -> Option<u64> {
    match c {
        'Ⅰ'..='Ⅻ' => Some(u64::from(c as u32 - 'Ⅰ' as u32 + 1)),
        'ⅰ'..='ⅻ' => Some(u64::from(c as u32 - 'ⅰ' as u32 + 1)),
        _ => None,
    }
}

/// Initialisms said as words, not spelled, though short or all in capitals.
const SAID_AS_WORDS: [&str; 64] = [
    "OK", "GIF", "PIN", "RAM", "ROM", "LAN", "WAN", "SIM", "ZIP", "JSON", "JPEG", "ASAP", "CAPTCHA", "SQL", "NVIDIA", "NGINX",
    // English words an agent writes in capitals for emphasis.
    "NOT", "ALL", "NEW", "NOW", "YES", "AND", "THE", "FOR", "BUT", "OUT", "YOU", "ARE", "CAN", "GET", "SET", "USE", "RUN", "OFF", "TOP", "BIG", "HOT", "ONE",
    "TWO", "ANY", "NEXT", "FIRST", "LAST", "LEFT", "RIGHT", "PASS", "FAIL", "TEXT", "USERS", "NOTE", "STOP", "FREE", "ONLY", "NEVER", "MUST", "STEP", "STEPS",
    "TEST", "BEST", "MOST", "JUST", "SAFE", "SALE", "DONE",
];

/// Whether a word of capitals is spelled letter by letter (`FBI`, `HTML`, `SNCF`, `RATP`) rather than said
/// as a word (`NASA`, `NATO`, `COVID`, `OTAN`): three letters or fewer are spelled, and a longer one is
/// spelled when a speaker could not say it (no vowel, or three consonants in a row, or two at its start
/// or end that no English or French word begins or ends with).
pub fn is_spelled(word: &str) -> bool {
    if SAID_AS_WORDS.contains(&word) || !word.chars().all(|c| c.is_ascii_uppercase()) || word.len() < 2 {
        return false;
    }
    if word.len() <= 3 {
        return true;
    }
    let vowel = |c: char| "AEIOUY".contains(c);
    let chars: Vec<char> = word.chars().collect();
    if !chars.iter().any(|c| vowel(*c)) || chars.windows(3).any(|w| w.iter().all(|c| !vowel(*c))) {
        return true;
    }
    const ONSETS: [&str; 22] =
        ["BL", "BR", "CH", "CL", "CR", "DR", "FL", "FR", "GL", "GR", "PH", "PL", "PR", "SC", "SH", "SK", "SL", "SM", "SN", "SP", "ST", "TR"];
    const CODAS: [&str; 14] = ["CH", "CK", "CT", "LD", "LT", "MP", "ND", "NG", "NK", "NT", "RD", "RT", "SH", "ST"];
    let head: String = chars[..2].iter().collect();
    let tail: String = chars[chars.len() - 2..].iter().collect();
    (!vowel(chars[0]) && !vowel(chars[1]) && !ONSETS.contains(&head.as_str()))
        || (!vowel(chars[chars.len() - 1]) && !vowel(chars[chars.len() - 2]) && !CODAS.contains(&tail.as_str()))
}

/// Where `text` has two words or more in capitals in a row (`NEXT STEPS`, `DO NOT`): byte ranges.
fn shouted_runs(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut runs = Vec::new();
    // The run being read: where it starts, its words in capitals, and whether one of them is a word.
    let mut run: Option<(usize, usize, bool)> = None;
    let mut at = 0;
    for piece in text.split(' ') {
        let letters = piece.trim_matches(|c: char| !c.is_alphanumeric());
        if letters.len() >= 2 && letters.chars().all(|c| c.is_ascii_uppercase()) {
            let said = SAID_AS_WORDS.contains(&letters) || !is_spelled(letters);
            run = Some(match run {
                None => (at, 1, said),
                Some((start, n, worded)) => (start, n + 1, worded || said),
            });
        } else {
            close_run(run.take(), at, &mut runs);
        }
        at += piece.len() + 1;
    }
    close_run(run, text.len(), &mut runs);
    runs
}

/// Keeps a run of words in capitals that is shouting: two words or more, one of them a word (`NEXT STEPS`,
/// `BUY NOW`); `CPU, GPU` are initialisms.
fn close_run(run: Option<(usize, usize, bool)>, end: usize, runs: &mut Vec<std::ops::Range<usize>>) {
    if let Some((start, _, true)) = run.filter(|(_, n, _)| *n >= 2) {
        runs.push(start..end);
    }
}

/// A word spelled letter by letter, `join` between the letters.
pub fn spell(word: &str, join: &str) -> String {
    word.chars().map(String::from).collect::<Vec<_>>().join(join)
}

/// One token a code scanner found: a run of ASCII letters and digits, hyphens allowed between them.
pub struct Token<'a> {
    /// The token as written.
    pub text: &'a str,
    /// The character before it, if any.
    pub before: Option<char>,
    /// The two characters after it, if any.
    pub after: (Option<char>, Option<char>),
}

/// `text` with each token of ASCII letters, digits and inner hyphens passed to `say`, which gives its
/// spoken form or `None` to leave it. The edges are found here, by hand, as no pattern of the `regex`
/// crate can say "not after a letter".
pub fn each_token(text: &str, mut say: impl FnMut(&Token<'_>) -> Option<String>) -> String {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let alnum = |i: usize| chars.get(i).is_some_and(|(_, c)| c.is_ascii_alphanumeric());
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < chars.len() {
        if !alnum(i) || (i > 0 && alnum(i - 1)) {
            i += 1;
            continue;
        }
        let start = i;
        let mut end = i;
        while alnum(end) || (chars.get(end).is_some_and(|(_, c)| *c == '-') && end > start && alnum(end - 1) && alnum(end + 1)) {
            end += 1;
        }
        let (from, to) = (chars[start].0, chars.get(end).map_or(text.len(), |(at, _)| *at));
        let token = Token {
            text: &text[from..to],
            before: start.checked_sub(1).map(|b| chars[b].1),
            after: (chars.get(end).map(|(_, c)| *c), chars.get(end + 1).map(|(_, c)| *c)),
        };
        if let Some(said) = say(&token) {
            out.push_str(&text[copied..from]);
            out.push_str(&said);
            copied = to;
        }
        i = end.max(start + 1);
    }
    out.push_str(&text[copied..]);
    out
}

/// One part of a code: a run of letters or a run of digits.
#[derive(Debug, PartialEq, Eq)]
pub enum Part<'a> {
    /// A run of letters.
    Letters(&'a str),
    /// A run of digits.
    Digits(&'a str),
}

/// A token that is a count and then its unit in letters (`5000mAh`, `100Mbps`, `1000W`): the two parts.
pub fn count_and_unit(token: &str) -> Option<(&str, &str)> {
    let at = token.find(|c: char| !c.is_ascii_digit())?;
    let (count, unit) = token.split_at(at);
    (!count.is_empty() && count.len() <= 6 && unit.len() >= 2 && unit.chars().all(|c| c.is_ascii_alphabetic())).then_some((count, unit))
}

/// A code's groups (between its hyphens), each cut into runs of letters and of digits: `ZX9-4Q7` is
/// `[[ZX, 9], [4, Q, 7]]`.
pub fn code_groups(code: &str) -> Vec<Vec<Part<'_>>> {
    code.split('-')
        .map(|group| {
            let mut parts = Vec::new();
            let mut start = 0;
            for (i, c) in group.char_indices().skip(1) {
                let prev = group[..i].chars().next_back().unwrap_or(c);
                if prev.is_ascii_digit() != c.is_ascii_digit() {
                    parts.push(part(&group[start..i]));
                    start = i;
                }
            }
            if start < group.len() {
                parts.push(part(&group[start..]));
            }
            parts
        })
        .collect()
}

fn part(run: &str) -> Part<'_> {
    if run.starts_with(|c: char| c.is_ascii_digit()) {
        Part::Digits(run)
    } else {
        Part::Letters(run)
    }
}

/// Whether a token holds both a letter and a digit (a code), and is not glued to a number or a sign
/// (`3.5km`, `$5k`, `v2.1`: those are other classes' tokens).
pub fn is_code(token: &Token<'_>) -> bool {
    let t = token.text;
    t.chars().any(|c| c.is_ascii_digit())
        && t.chars().any(|c| c.is_ascii_alphabetic())
        && !matches!(token.before, Some('.' | ',' | '$' | '€' | '£' | '¥' | '/' | ':' | '#' | '@' | '_'))
        && !(matches!(token.after.0, Some('.' | ',' | ':' | '/')) && token.after.1.is_some_and(|c| c.is_ascii_alphanumeric()))
}

/// A code said part by part: `say_part` says each run; the groups go with `between` where each group
/// mixes letters and digits (`ZX9-4Q7`, said as two codes), else with `join`.
pub fn say_code(code: &str, join: &str, between: &str, say_part: impl Fn(&Part<'_>) -> String) -> String {
    let groups = code_groups(code);
    let mixed = groups.len() > 1 && groups.iter().all(|g| g.iter().any(|p| matches!(p, Part::Digits(_))) && g.iter().any(|p| matches!(p, Part::Letters(_))));
    groups.iter().map(|g| g.iter().map(&say_part).collect::<Vec<_>>().join(join)).collect::<Vec<_>>().join(if mixed { between } else { join })
}

/// Every code in `text` said part by part, as English and French say them (`say_part` each run, a space
/// between, a pause between groups that each mix letters and digits); a count and its unit (`5000mAh`) as
/// `count` says the count, the unit as written; a token `leaves` names left for another class.
pub fn codes_spaced(text: &str, leaves: fn(&str) -> bool, count: fn(&str) -> String, say_part: fn(&Part<'_>) -> String) -> String {
    each_token(text, |token| {
        if !is_code(token) || leaves(token.text) {
            return None;
        }
        Some(match count_and_unit(token.text) {
            Some((n, unit)) => format!("{} {}", count(n), letters_said(unit)),
            None => say_code(token.text, " ", ", ", say_part),
        })
    })
}

/// A run of letters in a code as English or French say it: capitals spelled unless said as a word
/// (`GPT` G P T, `COVID` as written), two lower-case letters spelled (`mp`), any other run as written.
pub fn letters_said(run: &str) -> String {
    if is_spelled(run) || (run.len() == 2 && run.chars().all(|c| c.is_ascii_lowercase())) {
        spell(run, " ")
    } else {
        run.to_string()
    }
}

/// Initialisms in `text` spelled (`FBI` F B I, `USB-C` U S B C); a plural's `s` (`APIs`) said as
/// `plural` (English " s"; French nothing, its `s` being silent).
pub fn initialisms(text: &str, plural: &str) -> String {
    if !text.as_bytes().windows(2).any(|w| w[0].is_ascii_uppercase() && w[1].is_ascii_uppercase()) {
        return text.to_string();
    }
    let shouted = shouted_runs(text);
    each_token(text, |token| {
        // `DON'T`, and a run of words in capitals (`NEXT STEPS`): shouting, not initialisms.
        let at = token.text.as_ptr() as usize - text.as_ptr() as usize;
        if matches!(token.after.0, Some('\'' | '’')) || shouted.iter().any(|r| r.contains(&at)) {
            return None;
        }
        if let Some(caps) = token.text.strip_suffix('s').filter(|c| c.len() >= 2 && c.chars().all(|c| c.is_ascii_uppercase()) && is_spelled(c)) {
            return Some(format!("{}{plural}", spell(caps, " ")));
        }
        let groups: Vec<&str> = token.text.split('-').collect();
        if token.text.chars().any(|c| c.is_ascii_digit()) || !groups.iter().all(|g| g.chars().all(|c| c.is_ascii_uppercase())) {
            return None;
        }
        if !groups.iter().any(|g| is_spelled(g)) {
            return None;
        }
        Some(groups.iter().map(|g| if g.len() == 1 || is_spelled(g) { spell(g, " ") } else { g.to_string() }).collect::<Vec<_>>().join(" "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaled_counts_hex_and_iban() {
        let scaled_value = |n: &str, scale: &str, decimal: char| Amount::parse(n, decimal).and_then(|a| a.scaled(scale));
        assert_eq!(
            (
                scaled_value("10", "k", '.'),
                scaled_value("1.5", "k", '.'),
                scaled_value("2,3", "M", ','),
                scaled_value("1.2345", "k", '.'),
                scaled_value("1,500", "k", '.')
            ),
            (Some(10_000), Some(1_500), Some(2_300_000), None, Some(1_500_000))
        );
        assert_eq!(hex_said("1E90FF", |d| d.to_string(), " ").as_deref(), Some("1 E 9 0 F F"));
        assert_eq!(hex_said("123456", |d| d.to_string(), " "), None);
        assert_eq!(iban_said("DE89 3704 00", |d| d.to_string()), "D E 8 9, 3 7 0 4, 0 0");
    }

    #[test]
    fn roman_numerals_are_read_only_when_well_formed() {
        assert_eq!((roman("XIV"), roman("LVIII"), roman("IV"), roman("MCMXCIX")), (Some(14), Some(58), Some(4), Some(1999)));
        assert_eq!((roman("IIII"), roman("VX"), roman("MIX"), roman("CV")), (None, None, Some(1009), Some(105)));
        assert_eq!((roman_sign('Ⅲ'), roman_sign('Ⅻ'), roman_sign('3')), (Some(3), Some(12), None));
    }

    #[test]
    fn initialisms_are_spelled_and_acronyms_said() {
        for spelled in ["FBI", "HTML", "SNCF", "RATP", "AWS", "CEO", "API", "EU", "USA", "PDF"] {
            assert!(is_spelled(spelled), "{spelled}");
        }
        for said in ["NASA", "NATO", "COVID", "OTAN", "UNESCO", "IKEA", "OK", "FIFA", "Paris", "I"] {
            assert!(!is_spelled(said), "{said}");
        }
        assert_eq!(initialisms("The FBI and NASA use USB-C, not HTML.", " s"), "The F B I and NASA use U S B C, not H T M L.");
        assert_eq!(initialisms("Both APIs take PDFs.", " s"), "Both A P I s take P D F s.");
        assert_eq!(initialisms("NEXT STEPS: do NOT worry, DON'T wait for the FBI.", " s"), "NEXT STEPS: do NOT worry, DON'T wait for the F B I.");
    }

    #[test]
    fn codes_are_found_by_their_edges_and_cut_into_runs() {
        let found = |text: &str| {
            let mut codes = Vec::new();
            each_token(text, |t| {
                if is_code(t) {
                    codes.push(t.text.to_string());
                }
                None
            });
            codes
        };
        assert_eq!(found("Order A4B2, flight UA857 and GPT-4o; not 3.5km or $5k or v2.1 here."), ["A4B2", "UA857", "GPT-4o"]);
        assert_eq!(code_groups("ZX9-4Q7"), vec![vec![Part::Letters("ZX"), Part::Digits("9")], vec![Part::Digits("4"), Part::Letters("Q"), Part::Digits("7")]]);
    }
}
