//! English: numbers with their thousands commas and decimal point, money (`$12.50`, `€5`, `$1.5 million`),
//! `%`, units (`5 km`, `20°C`, `16 GB`), times (`3:30 pm`, `10:05`), dates (`2026-12-01`, `12/01/2026`,
//! `December 1, 2026`), years after the words that announce one (`in 1999`, `the 1990s`), ordinals (`22nd`),
//! phone numbers (`(555) 123-4567`, `+44 20 7946 0958`) digit by digit in their groups, and the usual
//! abbreviations (`Dr.`, `e.g.`, `vs.`).
//!
//! The container's English front end (misaki) reads plain numbers and money itself, but not every form the
//! same way an English speaker does (a phone number as one large number, `12/01/2026` as a fraction, `5 km`
//! letter by letter). Writing the forms out here makes every English voice say them one way, and keeps the
//! spoken words visible to `SpokenMap`, so word timings stay on the written words. Numbers are read in
//! American style (no "and" inside them); dates as month, day and year.

use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::addresses::{self, Words};
use super::numbers::{pattern, rewrite_all, Amount, Rewrite};

/// A number: digits grouped in threes by commas, or not grouped; then a decimal point with its digits.
const NUMBER: &str = r"(?P<whole>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<fraction>\d+))?";

/// How an address is said in English.
pub const ADDRESS_WORDS: Words =
    Words { dot: "dot", at: "at", slash: "slash", dash: "dash", underscore: "underscore", colon: "colon", plus: "plus", digits: &DIGITS, join: " " };

const DIGITS: [&str; 10] = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"];

const MONTHS: [&str; 12] = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

/// The months as written in full or cut short (`Dec.`, `Sept`), for the pattern of a written date.
const MONTH_NAMES: &str =
    r"(?P<month>January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?";

struct Rules {
    abbreviations: Vec<(Regex, String)>,
    phone_nanp: Regex,
    phone_international: Regex,
    iso_date: Regex,
    slash_date: Regex,
    month_day: Regex,
    day_month: Regex,
    month_year: Regex,
    decade: Regex,
    year: Regex,
    time: Regex,
    hour: Regex,
    ordinal: Regex,
    money_before: Regex,
    money_after: Regex,
    percent: Regex,
    unit: Regex,
    fraction: Regex,
    range: Regex,
    negative: Regex,
    number: Regex,
}

static RULES: LazyLock<Rules> = LazyLock::new(|| Rules {
    // The titles from the table the segmenter shares (crate::abbreviations), then the rest.
    abbreviations: crate::abbreviations::SPOKEN_TITLES_EN
        .iter()
        .map(|(written, said)| (pattern(&format!(r"\b{written}\.(\s+\p{{Lu}})")), format!("{said}$1")))
        .chain(
            [
                (r"\be\.g\.,?", "for example"),
                (r"\bi\.e\.,?", "that is"),
                (r"\betc\.", "et cetera"),
                (r"\bvs\.?(\s)", "versus$1"),
                (r"\bapprox\.(\s)", "approximately$1"),
                (r"\b[Nn]o\.\s?(\d)", "number $1"),
                (r"#(\d)", "number $1"),
            ]
            .into_iter()
            .map(|(p, with)| (pattern(p), with.to_string())),
        )
        .collect(),
    // (555) 123-4567, 555-123-4567, 555.123.4567, +1 555 123 4567, 1-800-555-0199.
    phone_nanp: pattern(r"(?P<country>\+?1[\s.-])?(?:\((?P<area1>\d{3})\)\s?|(?P<area2>\d{3})[\s.-])(?P<exchange>\d{3})[\s.-](?P<line>\d{4})\b"),
    // +44 20 7946 0958, +33 1 23 45 67 89: a plus, then groups of digits.
    phone_international: pattern(r"\+(?P<groups>\d{1,3}(?:[\s.-]\d{1,4}){2,5})\b"),
    iso_date: pattern(r"\b(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})\b"),
    slash_date: pattern(r"\b(?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{4})\b"),
    month_day: pattern(&format!(r"\b{MONTH_NAMES}\s(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s(?P<y>\d{{4}})\b)?")),
    day_month: pattern(&format!(r"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s(?:of\s)?{MONTH_NAMES}(?:,?\s(?P<y>\d{{4}})\b)?")),
    month_year: pattern(&format!(r"\b{MONTH_NAMES}\s(?P<y>\d{{4}})\b")),
    decade: pattern(r"\b(?:'|(?P<century>1[0-9]|20))(?P<tens>\d)0s\b"),
    year: pattern(r"(?i)\b(?P<before>in|since|by|until|till|from|of|during|before|after|around|circa|year|through|to|and)\s(?P<y>1[1-9]\d{2}|20\d{2})\b"),
    // `a.m.` ending the sentence keeps its full stop for the sentence (the `end` group).
    time: pattern(r"(?i)\b(?P<h>\d{1,2}):(?P<min>\d{2})(?:\s?(?P<half>[ap])(?:\.m\.(?P<end>$)?|m\b))?"),
    hour: pattern(r"(?i)\b(?P<h>\d{1,2})\s?(?P<half>[ap])(?:\.m\.(?P<end>$)?|m\b)"),
    ordinal: pattern(r"\b(?P<n>\d+)(?:st|nd|rd|th)\b"),
    money_before: pattern(&format!(r"(?P<minus>-)?(?P<sign>[$€£¥])\s?{NUMBER}(?:\s(?P<scale>thousand|million|billion|trillion)\b)?")),
    money_after: pattern(&format!(r"{NUMBER}\s?(?P<sign>[€£¥])")),
    percent: pattern(&format!(r"(?P<minus>[-−])?{NUMBER}\s?%")),
    unit: pattern(&format!(
        r"{NUMBER}\s?(?P<unit>km/h|mph|km|cm|mm|kg|mg|lbs|lb|oz|ft|mi|ml|mL|kWh|GHz|MHz|Hz|TB|GB|MB|KB|kB|ms|min|hrs|hr|°C|°F|°|m|g|l|L)(?P<after>[^\p{{L}}\p{{N}}]|$)"
    )),
    fraction: pattern(r"\b(?P<a>\d{1,2})/(?P<b>\d{1,2})\b"),
    range: pattern(r"(?P<a>\d)\s?[-–]\s?(?P<b>\d)"),
    negative: pattern(r"(?P<before>^|[\s(])[-−](?P<digit>\d)"),
    number: pattern(NUMBER),
});

/// `sentence` with its written forms in words.
pub fn spoken(sentence: &str) -> String {
    let rules = &*RULES;
    let mut text = addresses::spoken(sentence, &ADDRESS_WORDS);
    for (pattern, with) in &rules.abbreviations {
        text = pattern.replace_all(&text, with.as_str()).into_owned();
    }
    let steps: [(&Regex, Rewrite); 19] = [
        (&rules.phone_nanp, phone_nanp),
        (&rules.phone_international, |c| Some(format!("plus {}", phone_groups(&c["groups"])))),
        (&rules.iso_date, date),
        (&rules.slash_date, date),
        (&rules.month_day, date),
        (&rules.day_month, date),
        (&rules.month_year, |c| Some(format!("{} {}", month(&c["month"])?, year(c["y"].parse().ok()?)))),
        (&rules.decade, decade),
        (&rules.year, |c| Some(format!("{} {}", &c["before"], year(c["y"].parse().ok()?)))),
        (&rules.time, time),
        (&rules.hour, time),
        (&rules.ordinal, |c| Some(ordinal(c["n"].parse().ok()?))),
        (&rules.money_before, money),
        (&rules.money_after, money),
        (&rules.percent, |c| {
            let minus = if c.name("minus").is_some() { "minus " } else { "" };
            Some(format!("{minus}{} percent", decimal(&Amount::from_captures(c, "whole", "fraction")?)))
        }),
        (&rules.unit, unit),
        (&rules.fraction, fraction),
        (&rules.range, |c| Some(format!("{} to {}", &c["a"], &c["b"]))),
        (&rules.negative, |c| Some(format!("{}minus {}", &c["before"], &c["digit"]))),
    ];
    text = rewrite_all(text, &steps);
    rules
        .number
        .replace_all(&text, |c: &Captures| Amount::from_captures(c, "whole", "fraction").map(|a| decimal(&a)).unwrap_or_else(|| c[0].to_string()))
        .into_owned()
}

fn phone_nanp(c: &Captures) -> Option<String> {
    let area = c.name("area1").or(c.name("area2"))?.as_str();
    let groups = [area, &c["exchange"], &c["line"]].map(digits).join(", ");
    Some(match c.name("country") {
        Some(country) if country.as_str().starts_with('+') => format!("plus one, {groups}"),
        Some(_) => format!("one, {groups}"),
        None => groups,
    })
}

/// Groups of digits as written (`44 20 7946 0958`), each digit by digit, a pause between groups.
fn phone_groups(groups: &str) -> String {
    groups.split([' ', '.', '-']).filter(|g| !g.is_empty()).map(digits).collect::<Vec<_>>().join(", ")
}

fn month(written: &str) -> Option<&'static str> {
    MONTHS.iter().find(|m| m.starts_with(written.trim_end_matches('.'))).copied()
}

fn date(c: &Captures) -> Option<String> {
    let month = match c.name("month") {
        Some(name) => month(name.as_str())?,
        None => MONTHS.get(c["m"].parse::<usize>().ok()?.checked_sub(1)?)?,
    };
    let day: u64 = c["d"].parse().ok()?;
    if !(1..=31).contains(&day) {
        return None;
    }
    Some(match c.name("y") {
        Some(y) => format!("{month} {}, {}", ordinal(day), year(y.as_str().parse().ok()?)),
        None => format!("{month} {}", ordinal(day)),
    })
}

/// A year as it is said: `1999` nineteen ninety-nine, `1905` nineteen oh five, `1900` nineteen hundred,
/// `2005` two thousand five, `2026` twenty twenty-six.
pub fn year(y: u64) -> String {
    let (high, low) = (y / 100, y % 100);
    match (high, low) {
        (20, 0..=9) | (10, _) => cardinal(y),
        (_, 0) => format!("{} hundred", cardinal(high)),
        (_, 1..=9) => format!("{} oh {}", cardinal(high), cardinal(low)),
        _ => format!("{} {}", cardinal(high), cardinal(low)),
    }
}

fn decade(c: &Captures) -> Option<String> {
    let tens: u64 = c["tens"].parse().ok()?;
    let plural = match tens {
        0 => "hundreds".to_string(),
        _ => {
            let word = cardinal(tens * 10);
            format!("{}ies", word.strip_suffix('y')?)
        }
    };
    Some(match c.name("century") {
        Some(century) if tens == 0 && century.as_str() == "20" => "two thousands".to_string(),
        Some(century) => format!("{} {plural}", cardinal(century.as_str().parse().ok()?)),
        None => plural,
    })
}

fn time(c: &Captures) -> Option<String> {
    let h: u64 = c["h"].parse().ok()?;
    let minutes: u64 = c.name("min").map(|m| m.as_str().parse()).transpose().ok()?.unwrap_or(0);
    let half = c.name("half").map(|h| format!(" {} m", h.as_str().to_lowercase()));
    if h > 24 || minutes > 59 || (half.is_some() && !(1..=12).contains(&h)) {
        return None;
    }
    let hour = cardinal(h);
    let clock = match (minutes, &half) {
        (0, Some(_)) => hour,
        (0, None) if h > 12 || h == 0 => format!("{} hundred", if h == 0 { "zero".to_string() } else { hour }),
        (0, None) => format!("{hour} o'clock"),
        (1..=9, _) => format!("{hour} oh {}", cardinal(minutes)),
        _ => format!("{hour} {}", cardinal(minutes)),
    };
    let end = if c.name("end").is_some() { "." } else { "" };
    Some(format!("{clock}{}{end}", half.unwrap_or_default()))
}

/// A currency's name: singular, plural, and its hundredth's singular and plural.
fn currency(sign: &str) -> Option<(&'static str, &'static str, &'static str, &'static str)> {
    match sign {
        "$" => Some(("dollar", "dollars", "cent", "cents")),
        "€" => Some(("euro", "euros", "cent", "cents")),
        "£" => Some(("pound", "pounds", "penny", "pence")),
        "¥" => Some(("yen", "yen", "sen", "sen")),
        _ => None,
    }
}

fn money(c: &Captures) -> Option<String> {
    let amount = Amount::from_captures(c, "whole", "fraction")?;
    let (one, many, hundredth, hundredths) = currency(&c["sign"])?;
    let minus = if c.name("minus").is_some() { "minus " } else { "" };
    if let Some(scale) = c.name("scale") {
        return Some(format!("{minus}{} {} {many}", decimal(&amount), scale.as_str()));
    }
    let whole = amount.whole_value()?;
    let name = if whole == 1 { one } else { many };
    Some(match amount.fraction.as_deref().map(|_| amount.cents()) {
        None | Some(Some(0)) => format!("{minus}{} {name}", cardinal(whole)),
        Some(Some(cents)) => {
            let small = format!("{} {}", cardinal(cents), if cents == 1 { hundredth } else { hundredths });
            if whole == 0 {
                format!("{minus}{small}")
            } else {
                format!("{minus}{} {name} and {small}", cardinal(whole))
            }
        }
        Some(None) => format!("{minus}{} {many}", decimal(&amount)),
    })
}

fn unit(c: &Captures) -> Option<String> {
    let amount = Amount::from_captures(c, "whole", "fraction")?;
    let (one, many) = match &c["unit"] {
        "km/h" => ("kilometer per hour", "kilometers per hour"),
        "mph" => ("mile per hour", "miles per hour"),
        "km" => ("kilometer", "kilometers"),
        "cm" => ("centimeter", "centimeters"),
        "mm" => ("millimeter", "millimeters"),
        "m" => ("meter", "meters"),
        "kg" => ("kilogram", "kilograms"),
        "mg" => ("milligram", "milligrams"),
        "g" => ("gram", "grams"),
        "lb" | "lbs" => ("pound", "pounds"),
        "oz" => ("ounce", "ounces"),
        "ft" => ("foot", "feet"),
        "mi" => ("mile", "miles"),
        "ml" | "mL" => ("milliliter", "milliliters"),
        "l" | "L" => ("liter", "liters"),
        "kWh" => ("kilowatt hour", "kilowatt hours"),
        "GHz" => ("gigahertz", "gigahertz"),
        "MHz" => ("megahertz", "megahertz"),
        "Hz" => ("hertz", "hertz"),
        "TB" => ("terabyte", "terabytes"),
        "GB" => ("gigabyte", "gigabytes"),
        "MB" => ("megabyte", "megabytes"),
        "KB" | "kB" => ("kilobyte", "kilobytes"),
        "ms" => ("millisecond", "milliseconds"),
        "min" => ("minute", "minutes"),
        "hr" | "hrs" => ("hour", "hours"),
        "°C" => ("degree Celsius", "degrees Celsius"),
        "°F" => ("degree Fahrenheit", "degrees Fahrenheit"),
        "°" => ("degree", "degrees"),
        _ => return None,
    };
    let single = amount.fraction.is_none() && amount.whole_value() == Some(1);
    Some(format!("{} {}{}", decimal(&amount), if single { one } else { many }, &c["after"]))
}

fn fraction(c: &Captures) -> Option<String> {
    let (a, b): (u64, u64) = (c["a"].parse().ok()?, c["b"].parse().ok()?);
    Some(match (a, b) {
        (24, 7) => "twenty-four seven".into(),
        (1, 2) => "one half".into(),
        (1, 4) => "one quarter".into(),
        (3, 4) => "three quarters".into(),
        (1, 3) => "one third".into(),
        (2, 3) => "two thirds".into(),
        _ => format!("{} out of {}", cardinal(a), cardinal(b)),
    })
}

/// A number with its decimals: `3.14` three point one four, `0.05` zero point zero five; a whole part with a
/// leading zero, or too long to say, digit by digit.
pub fn decimal(amount: &Amount) -> String {
    let whole = match amount.whole_value() {
        Some(v) if !(amount.whole.len() > 1 && amount.whole.starts_with('0')) => cardinal(v),
        _ => digits(&amount.whole),
    };
    match amount.fraction.as_deref() {
        None => whole,
        Some(f) => format!("{whole} point {}", digits(f)),
    }
}

fn digits(s: &str) -> String {
    s.chars().filter_map(|c| c.to_digit(10)).map(|d| DIGITS[d as usize]).collect::<Vec<_>>().join(" ")
}

const SMALL: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];
const TENS: [&str; 10] = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"];

fn below_1000(n: u64) -> String {
    let (h, rest) = (n / 100, n % 100);
    let tail = match rest {
        0 => String::new(),
        1..=19 => SMALL[rest as usize].to_string(),
        _ if rest % 10 == 0 => TENS[(rest / 10) as usize].to_string(),
        _ => format!("{}-{}", TENS[(rest / 10) as usize], SMALL[(rest % 10) as usize]),
    };
    match (h, tail.is_empty()) {
        (0, _) => tail,
        (_, true) => format!("{} hundred", SMALL[h as usize]),
        (_, false) => format!("{} hundred {tail}", SMALL[h as usize]),
    }
}

/// A whole number in words, American style: `1250` one thousand two hundred fifty.
pub fn cardinal(n: u64) -> String {
    if n == 0 {
        return "zero".into();
    }
    let mut parts = Vec::new();
    let mut rest = n;
    for (size, name) in
        [(1_000_000_000_000_000u64, "quadrillion"), (1_000_000_000_000, "trillion"), (1_000_000_000, "billion"), (1_000_000, "million"), (1000, "thousand")]
    {
        let count = rest / size;
        rest %= size;
        if count > 0 {
            parts.push(format!("{} {name}", below_1000(count)));
        }
    }
    if rest > 0 {
        parts.push(below_1000(rest));
    }
    parts.join(" ")
}

/// The ordinal of `n`: `1` first, `22` twenty-second, `100` one hundredth.
pub fn ordinal(n: u64) -> String {
    let words = cardinal(n);
    let (head, last) = match words.rfind([' ', '-']) {
        Some(at) => words.split_at(at + 1),
        None => ("", words.as_str()),
    };
    let last = match last {
        "one" => "first".to_string(),
        "two" => "second".to_string(),
        "three" => "third".to_string(),
        "five" => "fifth".to_string(),
        "eight" => "eighth".to_string(),
        "nine" => "ninth".to_string(),
        "twelve" => "twelfth".to_string(),
        _ if last.ends_with('y') => format!("{}ieth", &last[..last.len() - 1]),
        _ => format!("{last}th"),
    };
    format!("{head}{last}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cardinals_ordinals_and_years_as_said() {
        for (n, words) in [
            (0, "zero"),
            (13, "thirteen"),
            (21, "twenty-one"),
            (105, "one hundred five"),
            (1250, "one thousand two hundred fifty"),
            (2_500_000, "two million five hundred thousand"),
            (3_000_000_000, "three billion"),
        ] {
            assert_eq!(cardinal(n), words, "{n}");
        }
        for (n, words) in
            [(1, "first"), (2, "second"), (3, "third"), (11, "eleventh"), (12, "twelfth"), (20, "twentieth"), (22, "twenty-second"), (100, "one hundredth")]
        {
            assert_eq!(ordinal(n), words, "{n}");
        }
        for (y, words) in
            [(1999, "nineteen ninety-nine"), (1905, "nineteen oh five"), (1900, "nineteen hundred"), (2005, "two thousand five"), (2026, "twenty twenty-six")]
        {
            assert_eq!(year(y), words, "{y}");
        }
    }
}
