//! French: the decimal comma (and the point LLMs also write), spaces between thousands, the currency after
//! the amount (or before), `%` as « pour cent », `10 h 30`, `01/12/2026`, `1er` and `XXIe`, units in words
//! (singular below two, as French counts), `M.`, `Mme`, `etc.`, `p. ex.` and their kin. Numbers are read in
//! traditional spelling (`quatre-vingts`, `vingt et un`), `une` where the noun is feminine (`une heure`).
//!
//! By class (`super::classes`): also codes part by part, initialisms spelled (`SNCF`), Roman numerals after
//! names (`Louis XIV` Louis quatorze), street types and postcodes, fractions (trois cinquièmes), operators,
//! ranges, scales (`5 k€`), timestamps and phone numbers from abroad.

use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::addresses::{self, Words};
use super::classes::{self, Class, Part};
use super::numbers::{pattern, Amount};

/// How an address is said in French.
const ADDRESS_WORDS: Words = Words {
    dot: "point",
    at: "arobase",
    slash: "slash",
    dash: "tiret",
    underscore: "tiret bas",
    colon: "deux-points",
    plus: "plus",
    question: "point d'interrogation",
    equals: "égal",
    and: "et",
    hashtag: "hashtag",
    point: "point",
    beta: "bêta",
    version: "version",
    octet: |o| o.parse().map(cardinal).unwrap_or_else(|_| digits(o)),
    version_part: |p| p.parse().map(cardinal).unwrap_or_else(|_| digits(p)),
    digits: &["zéro", "un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf"],
    join: " ",
};

/// A number: digits grouped in threes by a space (plain, no-break or narrow), or not grouped; then a
/// decimal comma or point with its digits.
const NUMBER: &str = r"(?P<whole>\d{1,3}(?:[ \u{a0}\u{202f}]\d{3})+|\d+)(?:[,.](?P<fraction>\d+))?";

struct Rules {
    abbreviations: Vec<(Regex, &'static str)>,
    phone: Regex,
    phone_international: Regex,
    phone_free: Regex,
    duration: Regex,
    product_version: Regex,
    half_after: Regex,
    decade: Regex,
    postcode: Regex,
    day_month: Regex,
    roman: Regex,
    money_scaled: Regex,
    money_code: Regex,
    money_code_after: Regex,
    money_range: Regex,
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
    fraction: Regex,
}

static RULES: LazyLock<Rules> = LazyLock::new(|| Rules {
    abbreviations: [
        (r"\bM\.(\s+)(\p{Lu}|et\s)", "Monsieur$1$2"),
        (r"(\d,?\s)bd\.?(\s)", "${1}boulevard$2"),
        (r"\bpl\.(\s)", "place$1"),
        (r"\bbât\.(\s)", "bâtiment$1"),
        (r"\bapt\.?(\s\d)", "appartement$1"),
        (r"\bBP(\s\d)", "boîte postale$1"),
        (r"\bSt-(\p{Lu})", "Saint-$1"),
        (r"\bSte-(\p{Lu})", "Sainte-$1"),
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
        (r"(?i)\benv\.(\s)", "environ$1"),
        (r"\bav\.\s?J\.-C\.", "avant Jésus-Christ"),
        (r"\bav\.(\s)", "avenue$1"),
        (r"№\s?(\d)", "numéro $1"),
        // `7 déc. 2026`: a month cut short after a day.
        (r"(\d\s)janv\.", "${1}janvier"),
        (r"(\d\s)févr?\.", "${1}février"),
        (r"(\d\s)avr\.", "${1}avril"),
        (r"(\d\s)juil\.", "${1}juillet"),
        (r"(\d\s)sept\.", "${1}septembre"),
        (r"(\d\s)oct\.", "${1}octobre"),
        (r"(\d\s)nov\.", "${1}novembre"),
        (r"(\d\s)déc\.", "${1}décembre"),
        // `lun.–ven.`: weekdays cut short.
        (r"\blun\.", "lundi"),
        (r"\bmer\.(\s?[–,-])", "mercredi$1"),
        (r"\bjeu\.(\s?[–,-])", "jeudi$1"),
        (r"\bven\.", "vendredi"),
        (r"\bsam\.(\s?[–,-])", "samedi$1"),
        (r"\bdim\.(\s?[–,-])", "dimanche$1"),
        (r"(\d)\s?h\s?/\s?24\b", "${1} heures sur vingt-quatre"),
        (r"(\d)\s?j\s?/\s?7\b", "${1} jours sur sept"),
        (r"([\p{L}\d€$£])\s?/\s?(mois|an|jour|semaine|nuit|personne|utilisateur)\b", "$1 par $2"),
        (r"\bapr\.\s?J\.-C\.", "après Jésus-Christ"),
        (r"\b[nN][°º]\s?(\d)", "numéro $1"),
    ]
    .into_iter()
    .map(|(p, with)| (pattern(p), with))
    .collect(),
    // 06 12 34 56 78, 01.23.45.67.89, +33 6 12 34 56 78: read in pairs, as French numbers are said.
    phone: pattern(r"(?:\+(?P<country>\d{1,3})\s?(?P<first>[1-9])|\b(?P<national>0[1-9]))(?P<pairs>(?:[\s.-]\d{2}){4})\b"),
    // +1 555 123 4567, +44 20 7946 0958: a foreign number, its groups digit by digit.
    phone_international: pattern(r"\+(?P<country>\d{1,3})(?P<groups>(?:[\s.-]\d{1,8}){2,5})\b"),
    // 0 800 123 456: a free number, in its groups.
    phone_free: pattern(r"\b0\s(?P<a>8\d{2})\s(?P<b>\d{3})\s(?P<c>\d{3})\b"),
    iso_date: pattern(r"\b(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})\b"),
    date: pattern(r"\b(?P<d>\d{1,2})/(?P<m>\d{1,2})/(?P<y>\d{4})\b"),
    time: pattern(r"\b(?P<h>\d{1,2})(?:\s?h\s?|:)(?P<min>\d{2})\b"),
    hour: pattern(r"\b(?P<h>\d{1,2})\s?h\b"),
    // A numeral of one letter is I, V or X only: `Le` and `Ce` are words.
    roman_ordinal: pattern(r"\b(?P<n>[IVX][IVXLC]*|[LC][IVXLC]+)(?P<suffix>er|re|ère|e|ème)\b"),
    ordinal: pattern(r"\b(?P<n>\d+)(?P<suffix>er|re|ère|e|ème|nd|nde|de|d)\b"),
    // `1½ litre`: un litre et demi, the half after the noun.
    half_after: pattern(r"(?P<w>\d+)\s?½\s(?P<noun>\p{L}+)"),
    // `Python 3.12`, `version 2.1`: a version after what it numbers, its parts said as numbers with « point ».
    product_version: pattern(
        r"\b(?P<name>Python|Node|Java|PHP|Ruby|Rust|Kotlin|Swift|iOS|Android|macOS|Windows|Ubuntu|Debian|version)\s(?P<v>\d+(?:\.\d+)+)\b",
    ),
    duration: pattern(r"\b(?P<h>\d{1,2})\s?h\s?(?P<min>\d{2})\s?min\b"),
    decade: pattern(r"\b(?P<before>années\s)(?P<y>1[1-9]\d0|20\d0)\b"),
    postcode: pattern(r"(?P<before>^|,\s)(?P<dept>\d{2})(?P<rest>\d{3})(?P<city>\s\p{Lu})"),
    // `le 15/06`: a day and a month (with its zero), no year.
    day_month: pattern(r"\b(?P<d>[1-9]|[12]\d|3[01])/(?P<m>0[1-9])\b"),
    // A numeral after a name or a word that numbers (`Louis XIV`, `chapitre IX`); `Ier` is an ordinal's.
    roman: pattern(
        r"\b(?P<name>\p{Lu}[\p{Ll}'’-]*(?:-\p{Lu}[\p{Ll}]*)?|[Cc]hapitre|[Tt]ome|[Aa]cte|[Pp]artie|[Ll]ivre|[Vv]olume|[Ss]aison|[Aa]rticle|[Tt]ype)\s(?P<n>[IVXLCDM]{1,7})(?P<after>[^\p{L}\p{N}'’]|$)",
    ),
    money_scaled: pattern(&format!(r"{NUMBER}\s?(?P<scale>k|M|Md|Mds)€")),
    money_code: pattern(&format!(r"\b(?P<code>CHF|USD|EUR|GBP|CAD)\s?{NUMBER}")),
    money_code_after: pattern(&format!(r"{NUMBER}\s?(?P<code>CHF|USD|EUR|GBP|CAD)\b")),
    money_range: pattern(r"(?P<a>\d[\d\s]*?(?:,\d+)?)\s?[-–]\s?(?P<b>\d[\d\s]*?(?:,\d+)?)\s?(?P<sign>[€$£])"),
    currency_after: pattern(&format!(r"(?P<minus>-)?{NUMBER}\s?(?P<sign>[€$£¥])")),
    currency_before: pattern(&format!(r"(?P<minus>-)?(?P<prefix>US|CA|AU|C|A)?(?P<sign>[€$£¥])\s?(?:(?P<us>\d{{1,3}}(?:,\d{{3}})+\.\d{{2}}\b)|{NUMBER})")),
    percent: pattern(&format!(r"{NUMBER}\s?%")),
    unit: pattern(&format!(
        r"(?P<minus>(?:^|[\s(])[-−])?{NUMBER}\s?(?P<unit>km/h|km|cm|mm|kg|mg|ml|mL|min|Go|Mo|ko|To|kWh|GHz|MHz|Hz|°C|°F|°|m|g|l|L|h)(?P<after>\W|$)"
    )),
    range: pattern(r"(?P<a>(?:^|[^A-Za-z0-9.,])\d+(?:[.,]\d+)?)\s?[-–]\s?(?P<b>\d)"),
    negative: pattern(r"(?P<before>^|[\s(])[-−](?P<digit>\d)"),
    number: pattern(NUMBER),
    fraction: pattern(r"\b(?P<a>\d{1,2})/(?P<b>\d{1,3})\b"),
});

/// What an operator is said as, in French.
const OPERATORS: [(&str, &str); 11] = [
    ("≤", " inférieur ou égal à "),
    ("≥", " supérieur ou égal à "),
    ("≠", " différent de "),
    ("×", " fois "),
    ("÷", " divisé par "),
    ("±", " plus ou moins "),
    ("√", " racine carrée de "),
    ("²", " au carré"),
    ("³", " au cube"),
    (" = ", " égale "),
    ("=", " égale "),
];

/// `sentence` with its written forms in words, class by class in the order of `classes`' table.
pub fn spoken(sentence: &str) -> String {
    let (rules, shared) = (&*RULES, &*classes::SHARED);
    let mut text = addresses::spoken(sentence, &ADDRESS_WORDS);
    // A colour's `#` and an account's groups before any number rule reads them.
    text = shared
        .hex_colour
        .replace_all(&text, |c: &Captures| classes::hex_said(&c["hex"], digit, " ").map_or_else(|| c[0].to_string(), |h| format!("dièse {h}")))
        .into_owned();
    text = shared.iban.replace_all(&text, |c: &Captures| format!("I B A N {}", classes::iban_said(&c["iban"], digit))).into_owned();
    for (pattern, with) in &rules.abbreviations {
        text = pattern.replace_all(&text, *with).into_owned();
    }
    static STEPS: LazyLock<Vec<classes::Step>> = LazyLock::new(|| {
        let (rules, shared) = (&*RULES, &*classes::SHARED);
        classes::steps(vec![
            (Class::Electronic, &shared.file, |c| Some(format!("{} point {}", &c["name"], &c["ext"]))),
            (Class::Electronic, &rules.product_version, |c| {
                let parts: Vec<String> = c["v"].split('.').map(|p| p.parse().map(cardinal).unwrap_or_else(|_| digits(p))).collect();
                Some(format!("{} {}", &c["name"], parts.join(" point ")))
            }),
            (Class::Telephone, &rules.phone, phone),
            (Class::Telephone, &rules.phone_international, |c| {
                // Where French is spoken the groups are said as numbers (`+32 2 123 45 67`); elsewhere digit by digit.
                let as_numbers = matches!(&c["country"], "32" | "41" | "352" | "377" | "33");
                let group = |g: &str| match g.strip_prefix('0') {
                    _ if !as_numbers => digits(g),
                    Some(_) => digits(g),
                    None => g.parse().map(cardinal).unwrap_or_else(|_| digits(g)),
                };
                let groups: Vec<String> = c["groups"].split([' ', '.', '-']).filter(|g| !g.is_empty()).map(group).collect();
                Some(format!("plus {}, {}", cardinal(c["country"].parse().ok()?), groups.join(", ")))
            }),
            (Class::Telephone, &rules.phone_free, |c| {
                Some(format!("zéro, {}, {}, {}", cardinal(c["a"].parse().ok()?), cardinal(c["b"].parse().ok()?), cardinal(c["c"].parse().ok()?)))
            }),
            (Class::Date, &shared.timestamp, |c| {
                let (d, m, y): (u64, usize, u64) = (c["d"].parse().ok()?, c["m"].parse().ok()?, c["y"].parse().ok()?);
                let day = if d == 1 { "premier".to_string() } else { cardinal(d) };
                let (h, min): (u64, u64) = (c["h"].parse().ok()?, c["min"].parse().ok()?);
                let zone = if c.name("zone").is_some_and(|z| z.as_str() == "Z") { " U T C" } else { "" };
                let time = if min == 0 { format!("{} heures", feminine(h)) } else { format!("{} heures {}", feminine(h), feminine(min)) };
                Some(format!("{day} {} {} à {time}{zone}", MONTHS.get(m.checked_sub(1)?)?, cardinal(y)))
            }),
            (Class::Date, &rules.iso_date, date),
            (Class::Date, &rules.date, date),
            (Class::Date, &rules.decade, |c| Some(format!("{}{}", &c["before"], cardinal(c["y"].parse().ok()?).trim_end_matches('s')))),
            (Class::Time, &rules.duration, |c| {
                let (h, m): (u64, u64) = (c["h"].parse().ok()?, c["min"].parse().ok()?);
                Some(format!("{} {} {} {}", feminine(h), if h < 2 { "heure" } else { "heures" }, feminine(m), if m < 2 { "minute" } else { "minutes" }))
            }),
            (Class::Time, &rules.time, time),
            (Class::Time, &rules.hour, time),
            (Class::Address, &rules.postcode, |c| Some(format!("{}{} {}{}", &c["before"], cardinal(c["dept"].parse().ok()?), digits(&c["rest"]), &c["city"]))),
            (Class::Date, &rules.day_month, |c| {
                let d: u64 = c["d"].parse().ok()?;
                let month = MONTHS.get(c["m"].parse::<usize>().ok()?.checked_sub(1)?)?;
                Some(format!("{} {month}", if d == 1 { "premier".to_string() } else { cardinal(d) }))
            }),
            (Class::Roman, &rules.roman, roman),
            (Class::Roman, &rules.roman_ordinal, roman_ordinal),
            (Class::Ordinal, &rules.ordinal, ordinal),
            (Class::Cardinal, &shared.scaled, |c| classes::scaled_said(c, cardinal, ',')),
            (Class::Math, &shared.comparison, |c| {
                let op = if &c["op"] == "<" { "inférieur à" } else { "supérieur à" };
                Some(format!("{} {op} {}", &c["a"], &c["b"]))
            }),
            (Class::Math, &shared.dimensions, |c| Some(format!("{} par {}", &c["a"], &c["b"]))),
            (Class::Math, &shared.times, |c| classes::times_said(c, " fois", " ")),
            (Class::Math, &shared.minus_sum, |c| Some(format!("{} moins {}", &c["a"], &c["b"]))),
            (Class::Math, &shared.ratio, |c| Some(format!("{}{} sur {}{}", &c["before"], &c["a"], &c["b"], &c["after"]))),
            (Class::Math, &shared.power, |c| Some(format!("{} puissance {}", &c["a"], &c["b"]))),
            (Class::Math, &shared.plus, |c| Some(format!("{} plus {}", &c["a"], &c["b"]))),
            (Class::Money, &rules.money_range, |c| {
                let (_, many, _) = currency(&c["sign"])?;
                Some(format!("{} à {} {many}", &c["a"], &c["b"]))
            }),
            (Class::Range, &rules.range, |c| Some(format!("{} à {}", &c["a"], &c["b"]))),
            (Class::Money, &rules.money_scaled, |c| {
                let amount = Amount::from_captures(c, "whole", "fraction")?;
                let (scale, scales) = match &c["scale"] {
                    "k" => return Some(format!("{} euros", cardinal(amount.scaled("k")?))),
                    "M" => ("million", "millions"),
                    _ => ("milliard", "milliards"),
                };
                Some(format!("{} {} d'euros", decimal(&amount), if amount.below_two() { scale } else { scales }))
            }),
            (Class::Money, &rules.money_code, money_code),
            (Class::Money, &rules.money_code_after, money_code),
            (Class::Money, &rules.currency_after, money),
            (Class::Money, &rules.currency_before, money),
            (Class::Cardinal, &rules.negative, |c| Some(format!("{}moins {}", &c["before"], &c["digit"]))),
            (Class::Measure, &rules.percent, |c| Some(format!("{} pour cent", decimal(&Amount::from_captures(c, "whole", "fraction")?)))),
            (Class::Measure, &rules.unit, unit),
            (Class::Fraction, &rules.half_after, |c| {
                let n: u64 = c["w"].parse().ok()?;
                let noun = &c["noun"];
                let feminine_noun = is_feminine(noun);
                let count = if feminine_noun { feminine(n) } else { cardinal(n) };
                Some(format!("{count} {noun} et {}", if feminine_noun { "demie" } else { "demi" }))
            }),
            (Class::Fraction, &shared.mixed_fraction, |c| {
                let (w, a, b): (u64, u64, u64) = (c["w"].parse().ok()?, c["a"].parse().ok()?, c["b"].parse().ok()?);
                (a < b).then(|| format!("{} et {}{}", cardinal(w), fraction_after_whole(a, b), &c["after"]))
            }),
            (Class::Fraction, &shared.vulgar, |c| {
                let (a, b) = classes::vulgar(c["f"].chars().next()?)?;
                Some(match c.name("w") {
                    Some(w) => format!("{} et {}", cardinal(w.as_str().parse().ok()?), fraction_after_whole(a, b)),
                    None => fraction_words(a, b),
                })
            }),
            (Class::Fraction, &rules.fraction, |c| {
                let (a, b): (u64, u64) = (c["a"].parse().ok()?, c["b"].parse().ok()?);
                // `24/7`, `9/5`: sur; a fraction below one in words.
                Some(if a < b && b > 1 { fraction_words(a, b) } else { format!("{} sur {}", cardinal(a), cardinal(b)) })
            }),
            (Class::Range, &shared.word_range, |c| Some(format!("{} à {}", &c["a"], &c["b"]))),
        ])
    });
    text = classes::operators(classes::apply(text, &STEPS), &OPERATORS);
    // Codes, then initialisms: from here no digit is glued to a letter.
    text = classes::codes_spaced(&text, leaves, |n| n.parse().map(cardinal).unwrap_or_else(|_| digits(n)), code_part);
    text = classes::initialisms(&text, "");
    let source = text;
    rules
        .number
        .replace_all(&source, |c: &Captures| {
            let Some(amount) = Amount::from_captures(c, "whole", "fraction") else { return c[0].to_string() };
            // `une` before a feminine noun: `1 fois`, `21 personnes`.
            let next = source[c.get(0).map_or(0, |m| m.end())..].split_whitespace().next().unwrap_or("");
            match amount.whole_value() {
                Some(v) if amount.fraction.is_none() && is_feminine(next) => feminine(v),
                _ => decimal(&amount),
            }
        })
        .into_owned()
}

/// Nouns an agent counts often that are feminine, before which `1` and `21` are `une`, `vingt et une`.
fn is_feminine(word: &str) -> bool {
    let word = word.trim_end_matches([',', '.', ';', '!', '?']);
    let singular = if word == "fois" { word } else { word.strip_suffix('s').unwrap_or(word) };
    [
        "fois",
        "personne",
        "heure",
        "minute",
        "seconde",
        "semaine",
        "journée",
        "année",
        "page",
        "place",
        "étape",
        "question",
        "ligne",
        "chose",
        "nuit",
        "chambre",
        "voiture",
        "entreprise",
        "commande",
        "réponse",
        "option",
        "version",
        "image",
        "photo",
        "vidéo",
        "tasse",
        "cuillère",
        "part",
    ]
    .contains(&singular)
}

/// A token another class reads, though it mixes digits and letters: `5km`, `1er`, `10h30`.
fn leaves(token: &str) -> bool {
    let suffix = token.trim_start_matches(|c: char| c.is_ascii_digit());
    suffix.len() < token.len()
        && (matches!(
            suffix,
            "er" | "re"
                | "e"
                | "nd"
                | "nde"
                | "de"
                | "d"
                | "k"
                | "km"
                | "cm"
                | "mm"
                | "kg"
                | "mg"
                | "ml"
                | "mL"
                | "min"
                | "Go"
                | "Mo"
                | "ko"
                | "To"
                | "kWh"
                | "GHz"
                | "MHz"
                | "Hz"
                | "m"
                | "g"
                | "l"
                | "L"
                | "h"
                | "s"
        ) || suffix.strip_prefix('h').is_some_and(|m| m.chars().all(|c| c.is_ascii_digit())))
}

/// A run of a code: a number (`AF1234` A F mille deux cent trente-quatre), digit by digit past four digits.
fn code_part(part: &Part<'_>) -> String {
    match part {
        Part::Digits(d) if d.len() > 4 || (d.len() > 1 && d.starts_with('0')) => digits(d),
        Part::Digits(d) => d.parse().map(cardinal).unwrap_or_else(|_| digits(d)),
        Part::Letters(l) => classes::letters_said(l),
    }
}

/// The names a monarch or a pope takes with a number: `Louis I` is Louis premier.
const REGNAL: [&str; 24] = [
    "Louis",
    "Henri",
    "Charles",
    "François",
    "Napoléon",
    "Philippe",
    "Jean",
    "Élisabeth",
    "Elisabeth",
    "Léon",
    "Pie",
    "Benoît",
    "Grégoire",
    "Jean-Paul",
    "Paul",
    "Guillaume",
    "Richard",
    "Édouard",
    "Georges",
    "Jacques",
    "Frédéric",
    "Pierre",
    "Catherine",
    "Alexandre",
];

/// An amount with its ISO code (`CHF 30`, `200 USD`).
fn money_code(c: &Captures) -> Option<String> {
    let amount = Amount::from_captures(c, "whole", "fraction")?;
    let name = match &c["code"] {
        "CHF" => "francs suisses",
        "USD" => "dollars américains",
        "EUR" => "euros",
        "GBP" => "livres sterling",
        _ => "dollars canadiens",
    };
    Some(format!("{} {name}", decimal(&amount)))
}

/// `Louis XIV` Louis quatorze: a monarch's number is a cardinal in French, but the first (premier).
/// Words after which a numeral counts (`chapitre IX`, `tome III`): any numeral.
const COUNTING: [&str; 9] = ["chapitre", "tome", "acte", "partie", "livre", "volume", "saison", "article", "type"];

fn roman(c: &Captures) -> Option<String> {
    let (name, n) = (&c["name"], &c["n"]);
    let value = classes::roman(n)?;
    let regnal = REGNAL.contains(&name);
    let counting = COUNTING.iter().any(|w| w.eq_ignore_ascii_case(name));
    // As in English: one letter after a monarch before a pause only; two or more of I, V and X after any
    // other name (`Votre CV`, `Taille XL` are letters); any numeral after a word that counts.
    let fits = match (n.len(), regnal, counting) {
        (1, _, _) => regnal && !c["after"].starts_with(' '),
        (_, true, _) | (_, _, true) => true,
        _ => n.chars().all(|ch| matches!(ch, 'I' | 'V' | 'X')),
    };
    if !fits {
        return None;
    }
    let said = if regnal && value == 1 { "premier".to_string() } else { cardinal(value) };
    Some(format!("{name} {said}{}", &c["after"]))
}

/// `3/5` trois cinquièmes, `1/2` un demi, `2/3` deux tiers.
fn fraction_words(a: u64, b: u64) -> String {
    let (one, many) = match b {
        2 => ("demi".to_string(), "demis".to_string()),
        3 => ("tiers".to_string(), "tiers".to_string()),
        4 => ("quart".to_string(), "quarts".to_string()),
        _ => (ordinal_of(b), format!("{}s", ordinal_of(b))),
    };
    format!("{} {}", cardinal(a), if a == 1 { one } else { many })
}

/// After a whole number: `2 1/2` deux et demi, `1 1/4` un et quart, else the fraction.
fn fraction_after_whole(a: u64, b: u64) -> String {
    match (a, b) {
        (1, 2) => "demi".into(),
        (1, 4) => "quart".into(),
        _ => fraction_words(a, b),
    }
}

/// What a `<say-as>` asks, in French.
pub fn said(what: super::Said) -> Option<String> {
    use super::Said;
    let plural = |n: u64, one: &str| format!("{} {one}{}", feminine(n), if n < 2 { "" } else { "s" });
    let day = |d: u32| if d == 1 { "premier".to_string() } else { cardinal(u64::from(d)) };
    Some(match what {
        Said::Cardinal(n) => cardinal(n),
        Said::Ordinal(1) => "premier".into(),
        Said::Ordinal(n) => ordinal_of(n),
        Said::Duration(0, s) => plural(s, "seconde"),
        Said::Duration(m, 0) => plural(m, "minute"),
        Said::Duration(m, s) => format!("{} {}", plural(m, "minute"), plural(s, "seconde")),
        Said::Date { y, m, d } => {
            let month = m.and_then(|m| MONTHS.get(m as usize - 1)).copied();
            let year = y.map(|y| cardinal(u64::from(y)));
            match (d, month, year) {
                (Some(d), Some(month), Some(year)) => format!("{} {month} {year}", day(d)),
                (Some(d), Some(month), None) => format!("{} {month}", day(d)),
                (None, Some(month), Some(year)) => format!("{month} {year}"),
                (None, Some(month), None) => month.to_string(),
                (Some(d), None, None) => day(d),
                (None, None, Some(year)) => year,
                _ => return None,
            }
        }
    })
}

fn digit(d: u32) -> String {
    UNITS[d as usize].to_string()
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
    said.extend(c["pairs"].split([' ', '.', '-']).filter(|p| !p.is_empty()).map(pair));
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
    Some(ordinal_words(classes::roman(&c["n"])?, &c["suffix"]))
}

fn ordinal(c: &Captures) -> Option<String> {
    Some(ordinal_words(c["n"].parse().ok()?, &c["suffix"]))
}

fn ordinal_words(n: u64, suffix: &str) -> String {
    match (n, suffix) {
        (1, "er") => "premier".into(),
        (1, "re" | "ère") => "première".into(),
        (2, "nd") => "second".into(),
        (2, "nde" | "de") => "seconde".into(),
        (2, "d") => "second".into(),
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
    // `US$1,299.99`: an amount written the American way (a comma between thousands, a decimal point).
    let amount = match c.name("us") {
        Some(us) => {
            let (whole, cents) = us.as_str().split_once('.')?;
            Amount { whole: whole.replace(',', ""), fraction: Some(cents.to_string()), grouped: true }
        }
        None => Amount::from_captures(c, "whole", "fraction")?,
    };
    let (mut one, mut many, hundredth) = currency(&c["sign"])?;
    (one, many) = match c.name("prefix").map(|p| p.as_str()) {
        Some("US") => ("dollar américain", "dollars américains"),
        Some("CA" | "C") => ("dollar canadien", "dollars canadiens"),
        Some("AU" | "A") => ("dollar australien", "dollars australiens"),
        _ => (one, many),
    };
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
        "To" => ("téraoctet", "téraoctets"),
        "GHz" => ("gigahertz", "gigahertz"),
        "MHz" => ("mégahertz", "mégahertz"),
        "Hz" => ("hertz", "hertz"),
        "h" => ("heure", "heures"),
        _ => return None,
    };
    let count = if matches!(one, "minute" | "heure") && amount.fraction.is_none() { feminine(amount.whole_value()?) } else { decimal(&amount) };
    let minus = c.name("minus").map(|m| format!("{}moins ", m.as_str().trim_end_matches(['-', '−']))).unwrap_or_default();
    Some(format!("{minus}{count} {}{}", if amount.below_two() { one } else { many }, &c["after"]))
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
    }

    #[test]
    fn feminine_only_changes_a_final_un() {
        assert_eq!((feminine(1), feminine(21), feminine(2), feminine(81)), ("une".into(), "vingt et une".into(), "deux".into(), "quatre-vingt-une".into()));
    }
}
