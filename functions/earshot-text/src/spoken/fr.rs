//! French: the decimal comma (and the point LLMs also write), spaces between thousands, the currency after
//! the amount (or before), `%` as « pour cent », `10 h 30`, `01/12/2026`, `1er` and `XXIe`, units in words
//! (singular below two, as French counts), `M.`, `Mme`, `etc.`, `p. ex.` and their kin. Numbers are read in
//! traditional spelling (`quatre-vingts`, `vingt et un`), `une` where the noun is feminine (`une heure`).

use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::addresses::{self, Words};
use super::numbers::{pattern, rewrite_all, Amount, Rewrite};

/// How an address is said in French.
const ADDRESS_WORDS: Words = Words {
    dot: "point",
    at: "arobase",
    slash: "slash",
    dash: "tiret",
    underscore: "tiret bas",
    colon: "deux-points",
    plus: "plus",
    digits: &["zéro", "un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf"],
    join: " ",
};

/// A number: digits grouped in threes by a space (plain, no-break or narrow), or not grouped; then a
/// decimal comma or point with its digits.
const NUMBER: &str = r"(?P<whole>\d{1,3}(?:[ \u{a0}\u{202f}]\d{3})+|\d+)(?:[,.](?P<fraction>\d+))?";

struct Rules {
    abbreviations: Vec<(Regex, &'static str)>,
    phone: Regex,
    iso_date: Regex,
    date: Regex,
    time: Regex,
    hour: Regex,
    roman_ordinal: Regex,
    ordinal: Regex,
    currency_after: Regex,
    currency_before: Regex,
    percent: Regex,
    unit: Regex,
    range: Regex,
    negative: Regex,
    number: Regex,
}

static RULES: LazyLock<Rules> = LazyLock::new(|| Rules {
    abbreviations: [
        (r"\bM\.(\s+)(\p{Lu})", "Monsieur$1$2"),
        (r"\bMM\.(\s+)", "Messieurs$1"),
        (r"\bMmes\b\.?", "Mesdames"),
        (r"\bMme\b\.?", "Madame"),
        (r"\bMlles\b\.?", "Mesdemoiselles"),
        (r"\bMlle\b\.?", "Mademoiselle"),
        (r"\bDr\b\.?", "docteur"),
        (r"\bPr\b\.?", "professeur"),
        (r"\bMe\b\.?(\s+\p{Lu})", "maître$1"),
        (r"\betc\.", "et cetera"),
        (r"\bp\.\s?ex\.", "par exemple"),
        (r"\bc\.-à-d\.", "c'est-à-dire"),
        (r"\benv\.(\s)", "environ$1"),
        (r"\bav\.\s?J\.-C\.", "avant Jésus-Christ"),
        (r"\bapr\.\s?J\.-C\.", "après Jésus-Christ"),
        (r"\b[nN][°º]\s?(\d)", "numéro $1"),
    ]
    .into_iter()
    .map(|(p, with)| (pattern(p), with))
    .collect(),
    // 06 12 34 56 78, 01.23.45.67.89, +33 6 12 34 56 78: read in pairs, as French numbers are said.
    phone: pattern(r"(?:\+(?P<country>\d{1,3})\s?(?P<first>[1-9])|\b(?P<national>0[1-9]))(?P<pairs>(?:[\s.]\d{2}){4})\b"),
    iso_date: pattern(r"\b(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})\b"),
    date: pattern(r"\b(?P<d>\d{1,2})/(?P<m>\d{1,2})/(?P<y>\d{4})\b"),
    time: pattern(r"\b(?P<h>\d{1,2})(?:\s?h\s?|:)(?P<min>\d{2})\b"),
    hour: pattern(r"\b(?P<h>\d{1,2})\s?h\b"),
    // A numeral of one letter is I, V or X only: `Le` and `Ce` are words.
    roman_ordinal: pattern(r"\b(?P<n>[IVX][IVXLC]*|[LC][IVXLC]+)(?P<suffix>er|re|ère|e|ème)\b"),
    ordinal: pattern(r"\b(?P<n>\d+)(?P<suffix>er|re|ère|e|ème|nd|nde)\b"),
    currency_after: pattern(&format!(r"(?P<minus>-)?{NUMBER}\s?(?P<sign>[€$£¥])")),
    currency_before: pattern(&format!(r"(?P<minus>-)?(?P<sign>[€$£¥])\s?{NUMBER}")),
    percent: pattern(&format!(r"{NUMBER}\s?%")),
    unit: pattern(&format!(r"{NUMBER}\s?(?P<unit>km/h|km|cm|mm|kg|mg|ml|mL|min|Go|Mo|ko|kWh|°C|°F|°|m|g|l|L)(?P<after>\W|$)")),
    range: pattern(r"(?P<a>\d)\s?[-–]\s?(?P<b>\d)"),
    negative: pattern(r"(?P<before>^|[\s(])[-−](?P<digit>\d)"),
    number: pattern(NUMBER),
});

/// `sentence` with its written forms in words.
pub fn spoken(sentence: &str) -> String {
    let rules = &*RULES;
    let mut text = addresses::spoken(sentence, &ADDRESS_WORDS);
    for (pattern, with) in &rules.abbreviations {
        text = pattern.replace_all(&text, *with).into_owned();
    }
    let steps: [(&Regex, Rewrite); 13] = [
        (&rules.phone, phone),
        (&rules.iso_date, date),
        (&rules.date, date),
        (&rules.time, time),
        (&rules.hour, time),
        (&rules.roman_ordinal, roman_ordinal),
        (&rules.ordinal, ordinal),
        (&rules.currency_after, money),
        (&rules.currency_before, money),
        (&rules.range, |c| Some(format!("{} à {}", &c["a"], &c["b"]))),
        (&rules.negative, |c| Some(format!("{}moins {}", &c["before"], &c["digit"]))),
        (&rules.percent, |c| Some(format!("{} pour cent", decimal(&Amount::from_captures(c, "whole", "fraction")?)))),
        (&rules.unit, unit),
    ];
    text = rewrite_all(text, &steps);
    rules
        .number
        .replace_all(&text, |c: &Captures| Amount::from_captures(c, "whole", "fraction").map(|a| decimal(&a)).unwrap_or_else(|| c[0].to_string()))
        .into_owned()
}

/// A phone number in pairs: `06 12 34 56 78` « zéro six, douze, trente-quatre, cinquante-six, soixante-dix-huit »;
/// a pair with a leading zero as its two digits (`05` « zéro cinq »).
fn phone(c: &Captures) -> Option<String> {
    let pair = |p: &str| match p.strip_prefix('0') {
        Some(d) => format!("zéro {}", digits(d)),
        None => p.parse().map(cardinal).unwrap_or_else(|_| digits(p)),
    };
    let mut said = match (c.name("country"), c.name("first"), c.name("national")) {
        (Some(country), Some(first), _) => vec![format!("plus {}", cardinal(country.as_str().parse().ok()?)), digits(first.as_str())],
        (_, _, Some(national)) => vec![pair(national.as_str())],
        _ => return None,
    };
    said.extend(c["pairs"].split([' ', '.']).filter(|p| !p.is_empty()).map(pair));
    Some(said.join(", "))
}

const MONTHS: [&str; 12] = ["janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre", "octobre", "novembre", "décembre"];

fn date(c: &Captures) -> Option<String> {
    let (d, m, y): (u64, usize, u64) = (c["d"].parse().ok()?, c["m"].parse().ok()?, c["y"].parse().ok()?);
    let month = MONTHS.get(m.checked_sub(1)?)?;
    if !(1..=31).contains(&d) {
        return None;
    }
    let day = if d == 1 { "premier".to_string() } else { cardinal(d) };
    Some(format!("{day} {month} {}", cardinal(y)))
}

fn time(c: &Captures) -> Option<String> {
    let h: u64 = c["h"].parse().ok()?;
    let minutes: u64 = c.name("min").map(|m| m.as_str().parse()).transpose().ok()?.unwrap_or(0);
    if h > 24 || minutes > 59 {
        return None;
    }
    let hours = format!("{} {}", feminine(h), if h < 2 { "heure" } else { "heures" });
    Some(if minutes == 0 { hours } else { format!("{hours} {}", feminine(minutes)) })
}

fn roman_ordinal(c: &Captures) -> Option<String> {
    Some(ordinal_words(roman(&c["n"])?, &c["suffix"]))
}

fn ordinal(c: &Captures) -> Option<String> {
    Some(ordinal_words(c["n"].parse().ok()?, &c["suffix"]))
}

fn ordinal_words(n: u64, suffix: &str) -> String {
    match (n, suffix) {
        (1, "er") => "premier".into(),
        (1, "re" | "ère") => "première".into(),
        (2, "nd") => "second".into(),
        (2, "nde") => "seconde".into(),
        _ => ordinal_of(n),
    }
}

/// A currency's name: singular, plural, and what a hundredth of it is called.
fn currency(sign: &str) -> Option<(&'static str, &'static str, &'static str)> {
    match sign {
        "€" => Some(("euro", "euros", "centimes")),
        "$" => Some(("dollar", "dollars", "cents")),
        "£" => Some(("livre", "livres", "pence")),
        "¥" => Some(("yen", "yens", "sens")),
        _ => None,
    }
}

fn money(c: &Captures) -> Option<String> {
    let amount = Amount::from_captures(c, "whole", "fraction")?;
    let (one, many, hundredth) = currency(&c["sign"])?;
    let minus = if c.name("minus").is_some() { "moins " } else { "" };
    let whole = amount.whole_value()?;
    let name = if whole < 2 { one } else { many };
    let count = if one == "livre" { feminine(whole) } else { cardinal(whole) };
    Some(match amount.fraction.as_deref() {
        None => format!("{minus}{count} {name}"),
        Some(_) => match amount.cents() {
            Some(0) => format!("{minus}{count} {name}"),
            Some(cents) if whole == 0 => format!("{minus}{} {hundredth}", cardinal(cents)),
            Some(cents) => format!("{minus}{count} {name} {}", cardinal(cents)),
            None => format!("{minus}{} {many}", decimal(&amount)),
        },
    })
}

fn unit(c: &Captures) -> Option<String> {
    let amount = Amount::from_captures(c, "whole", "fraction")?;
    let (one, many) = match &c["unit"] {
        "km/h" => ("kilomètre heure", "kilomètres heure"),
        "km" => ("kilomètre", "kilomètres"),
        "cm" => ("centimètre", "centimètres"),
        "mm" => ("millimètre", "millimètres"),
        "m" => ("mètre", "mètres"),
        "kg" => ("kilogramme", "kilogrammes"),
        "mg" => ("milligramme", "milligrammes"),
        "g" => ("gramme", "grammes"),
        "ml" | "mL" => ("millilitre", "millilitres"),
        "l" | "L" => ("litre", "litres"),
        "min" => ("minute", "minutes"),
        "Go" => ("gigaoctet", "gigaoctets"),
        "Mo" => ("mégaoctet", "mégaoctets"),
        "ko" => ("kilooctet", "kilooctets"),
        "kWh" => ("kilowattheure", "kilowattheures"),
        "°C" => ("degré Celsius", "degrés Celsius"),
        "°F" => ("degré Fahrenheit", "degrés Fahrenheit"),
        "°" => ("degré", "degrés"),
        _ => return None,
    };
    let count = if one == "minute" && amount.fraction.is_none() { feminine(amount.whole_value()?) } else { decimal(&amount) };
    Some(format!("{count} {}{}", if amount.below_two() { one } else { many }, &c["after"]))
}

/// A number with its decimals: `3,14` « trois virgule quatorze », `0,05` « zéro virgule zéro cinq »; more
/// than three decimals digit by digit, as a long number is read.
pub fn decimal(amount: &Amount) -> String {
    let whole = match amount.whole_value() {
        Some(v) if !(amount.whole.len() > 1 && amount.whole.starts_with('0')) => cardinal(v),
        _ => digits(&amount.whole),
    };
    match amount.fraction.as_deref() {
        None => whole,
        Some(f) if f.len() > 3 => format!("{whole} virgule {}", digits(f)),
        Some(f) => {
            let zeros = f.len() - f.trim_start_matches('0').len();
            let rest = f.trim_start_matches('0');
            let mut words: Vec<String> = vec!["zéro".to_string(); zeros];
            if let Ok(v) = rest.parse::<u64>() {
                words.push(cardinal(v));
            }
            format!("{whole} virgule {}", words.join(" "))
        }
    }
}

fn digits(s: &str) -> String {
    s.chars().filter_map(|c| c.to_digit(10)).map(|d| UNITS[d as usize]).collect::<Vec<_>>().join(" ")
}

const UNITS: [&str; 17] =
    ["zéro", "un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf", "dix", "onze", "douze", "treize", "quatorze", "quinze", "seize"];
const TENS: [&str; 7] = ["", "", "vingt", "trente", "quarante", "cinquante", "soixante"];

fn below_100(n: u64) -> String {
    let (t, u) = ((n / 10) as usize, (n % 10) as usize);
    match n {
        0..=16 => UNITS[n as usize].to_string(),
        17..=19 => format!("dix-{}", UNITS[u]),
        _ if t < 7 && u == 0 => TENS[t].to_string(),
        _ if t < 7 && u == 1 => format!("{} et un", TENS[t]),
        _ if t < 7 => format!("{}-{}", TENS[t], UNITS[u]),
        71 => "soixante et onze".into(),
        _ if t == 7 => format!("soixante-{}", below_100(10 + u as u64)),
        80 => "quatre-vingts".into(),
        _ if t == 8 => format!("quatre-vingt-{}", UNITS[u]),
        _ => format!("quatre-vingt-{}", below_100(10 + u as u64)),
    }
}

/// 0 to 999; `last`: nothing follows (only then do `cents` and `quatre-vingts` keep their `s`).
fn below_1000(n: u64, last: bool) -> String {
    let (h, rest) = (n / 100, n % 100);
    let mut words = match (h, rest) {
        (0, _) => below_100(rest),
        (1, 0) => "cent".into(),
        (1, _) => format!("cent {}", below_100(rest)),
        (_, 0) => format!("{} cents", UNITS[h as usize]),
        _ => format!("{} cent {}", UNITS[h as usize], below_100(rest)),
    };
    if !last && (words.ends_with("cents") || words.ends_with("vingts")) {
        words.pop();
    }
    words
}

/// A whole number in words (masculine).
pub fn cardinal(n: u64) -> String {
    if n == 0 {
        return "zéro".into();
    }
    let mut parts = Vec::new();
    let mut rest = n;
    for (size, one, many) in [(1_000_000_000_000u64, "billion", "billions"), (1_000_000_000, "milliard", "milliards"), (1_000_000, "million", "millions")] {
        let count = rest / size;
        rest %= size;
        if count > 0 {
            parts.push(format!("{} {}", if count >= 1000 { cardinal(count) } else { below_1000(count, true) }, if count > 1 { many } else { one }));
        }
    }
    let thousands = rest / 1000;
    rest %= 1000;
    match thousands {
        0 => {}
        1 => parts.push("mille".into()),
        _ => parts.push(format!("{} mille", below_1000(thousands, false))),
    }
    if rest > 0 {
        parts.push(below_1000(rest, true));
    }
    parts.join(" ")
}

/// A whole number in words before a feminine noun: `une`, `vingt et une` (the others do not change).
fn feminine(n: u64) -> String {
    let words = cardinal(n);
    match words.strip_suffix("un") {
        Some(head) if head.is_empty() || head.ends_with([' ', '-']) => format!("{head}une"),
        _ => words,
    }
}

/// The ordinal of `n` (2 and up): the cardinal's last word with `-ième`.
fn ordinal_of(n: u64) -> String {
    let words = cardinal(n);
    let words = words.strip_suffix('s').filter(|w| w.ends_with("cent") || w.ends_with("vingt")).map(str::to_string).unwrap_or(words);
    if let Some(head) = words.strip_suffix("cinq") {
        return format!("{head}cinquième");
    }
    if let Some(head) = words.strip_suffix("neuf") {
        return format!("{head}neuvième");
    }
    match words.strip_suffix('e') {
        Some(head) => format!("{head}ième"),
        None => format!("{words}ième"),
    }
}

/// A Roman numeral's value (`XXI` is 21), up to 399.
fn roman(s: &str) -> Option<u64> {
    let value = |c: char| match c {
        'I' => Some(1),
        'V' => Some(5),
        'X' => Some(10),
        'L' => Some(50),
        'C' => Some(100),
        _ => None,
    };
    let values: Vec<u64> = s.chars().map(value).collect::<Option<_>>()?;
    let mut total = 0;
    for (i, v) in values.iter().enumerate() {
        if values.get(i + 1).is_some_and(|next| next > v) {
            total -= *v as i64;
        } else {
            total += *v as i64;
        }
    }
    u64::try_from(total).ok().filter(|t| *t > 0 && *t < 400)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cardinals_in_traditional_spelling() {
        for (n, words) in [
            (0, "zéro"),
            (1, "un"),
            (17, "dix-sept"),
            (21, "vingt et un"),
            (70, "soixante-dix"),
            (71, "soixante et onze"),
            (77, "soixante-dix-sept"),
            (80, "quatre-vingts"),
            (81, "quatre-vingt-un"),
            (91, "quatre-vingt-onze"),
            (99, "quatre-vingt-dix-neuf"),
            (100, "cent"),
            (101, "cent un"),
            (200, "deux cents"),
            (201, "deux cent un"),
            (1000, "mille"),
            (1001, "mille un"),
            (2026, "deux mille vingt-six"),
            (80_000, "quatre-vingt mille"),
            (200_000, "deux cent mille"),
            (1_000_000, "un million"),
            (2_500_000, "deux millions cinq cent mille"),
            (3_000_000_000, "trois milliards"),
        ] {
            assert_eq!(cardinal(n), words, "{n}");
        }
    }

    #[test]
    fn ordinals_and_roman_numerals() {
        for (n, words) in [
            (2, "deuxième"),
            (4, "quatrième"),
            (5, "cinquième"),
            (9, "neuvième"),
            (11, "onzième"),
            (21, "vingt et unième"),
            (80, "quatre-vingtième"),
            (100, "centième"),
            (1000, "millième"),
        ] {
            assert_eq!(ordinal_of(n), words, "{n}");
        }
        assert_eq!((roman("XXI"), roman("XIX"), roman("IV"), roman("IIII"), roman("M")), (Some(21), Some(19), Some(4), Some(4), None));
    }

    #[test]
    fn feminine_only_changes_a_final_un() {
        assert_eq!((feminine(1), feminine(21), feminine(2), feminine(81)), ("une".into(), "vingt et une".into(), "deux".into(), "quatre-vingt-une".into()));
    }
}
