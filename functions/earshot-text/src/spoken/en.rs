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
//!
//! By class (`super::classes`): also codes part by part (`GPT-4o` G P T four o), initialisms spelled (`FBI`),
//! Roman numerals after names (`Louis XIV` Louis the Fourteenth), house numbers and street types, fractions,
//! operators, ranges, scales (`10k`), timestamps, IBANs and hex colours.

use std::sync::LazyLock;

use regex::{Captures, Regex, RegexSet};

use super::addresses::{self, Words};
use super::classes::{self, Class, Part};
use super::numbers::{pattern, Amount};

/// A number: digits grouped in threes by commas, or not grouped; then a decimal point with its digits.
const NUMBER: &str = r"(?P<whole>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<fraction>\d+))?";

/// How an address is said in English.
pub const ADDRESS_WORDS: Words = Words {
    dot: "dot",
    at: "at",
    slash: "slash",
    dash: "dash",
    underscore: "underscore",
    colon: "colon",
    plus: "plus",
    question: "question mark",
    equals: "equals",
    and: "and",
    hashtag: "hashtag",
    point: "point",
    beta: "beta",
    version: "version",
    octet: digits,
    version_part: |p| p.parse().map(cardinal).unwrap_or_else(|_| digits(p)),
    digits: &DIGITS,
    join: " ",
};

const DIGITS: [&str; 10] = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"];

/// The states of the United States, before a ZIP code.
const STATES: &str = "Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|Florida|Georgia|Hawaii|Idaho|Illinois|Indiana|Iowa|Kansas|Kentucky|Louisiana|Maine|Maryland|Massachusetts|Michigan|Minnesota|Mississippi|Missouri|Montana|Nebraska|Nevada|Hampshire|Jersey|Mexico|York|Carolina|Dakota|Ohio|Oklahoma|Oregon|Pennsylvania|Island|Tennessee|Texas|Utah|Vermont|Virginia|Washington|Wisconsin|Wyoming";

const MONTHS: [&str; 12] = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

/// The months as written in full or cut short (`Dec.`, `Sept`), for the pattern of a written date.
const MONTH_NAMES: &str =
    r"(?P<month>January|February|March|April|May|June|July|August|September|October|November|December|(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?)";

struct Rules {
    abbreviations: Vec<(Regex, String)>,
    streets: Vec<(Regex, &'static str, bool)>,
    /// Whether any street rule may match: one scan, so that a sentence with none pays for no loop.
    any_street: RegexSet,
    extension: Regex,
    dialled: Regex,
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
    year_range: Regex,
    day_range: Regex,
    dotted_time: Regex,
    weekday_before: Regex,
    weekday_after: Regex,
    expiry: Regex,
    per: Regex,
    duration: Regex,
    house: Regex,
    zip: Regex,
    roman: Regex,
    money_range: Regex,
    money_code_before: Regex,
    money_code_after: Regex,
    model_number: Regex,
    dotted_letters: Regex,
}

static RULES: LazyLock<Rules> = LazyLock::new(|| {
    let streets = street_rules();
    let any_street = RegexSet::new(streets.iter().map(|(p, _, _)| p.as_str())).unwrap_or_else(|e| panic!("the street rules: {e}"));
    rules(streets, any_street)
});

fn rules(streets: Vec<(Regex, &'static str, bool)>, any_street: RegexSet) -> Rules {
    Rules {
        streets,
        any_street,
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
                    (r"(?i)\bapprox\.(\s)", "approximately$1"),
                    (r"№\s?(\d)", "number $1"),
                    (r"\b[Nn]o\.\s?(\d)", "number $1"),
                    (r"#(\d)", "number $1"),
                ]
                .into_iter()
                .map(|(p, with)| (pattern(p), with.to_string())),
            )
            .collect(),
        // (555) 123-4567, 555-123-4567, 555.123.4567, +1 555 123 4567, 1-800-555-0199.
        // `ext. 89`, `x204` after a number's last digit.
        extension: pattern(r"(?P<last>\d)(?:,?\s?(?:ext\.?|extension)\s?|\sx)(?P<n>\d{1,6})\b"),
        // `dial 911`: a short number said digit by digit.
        dialled: pattern(r"(?i)\b(?P<verb>dial|call|text)\s(?P<n>\d{3,6})\b"),
        phone_nanp: pattern(r"(?P<country>\+?1[\s.-])?(?:\((?P<area1>\d{3})\)\s?|(?P<area2>\d{3})[\s.-])(?P<exchange>\d{3})[\s.-](?P<line>\d{4})\b"),
        // +44 20 7946 0958, +33 1 23 45 67 89: a plus, then groups of digits.
        phone_international: pattern(r"\+(?P<groups>\d{1,3}(?:[\s.-]\d{1,8}){2,5})\b"),
        iso_date: pattern(r"\b(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})\b"),
        slash_date: pattern(r"\b(?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{4})\b"),
        month_day: pattern(&format!(r"\b{MONTH_NAMES}\s(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s(?P<y>\d{{4}})\b)?")),
        day_month: pattern(&format!(r"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s(?P<of>of\s)?{MONTH_NAMES}(?:,?\s(?P<y>\d{{4}})\b)?")),
        month_year: pattern(&format!(r"\b{MONTH_NAMES}\s(?P<y>\d{{4}})\b")),
        decade: pattern(r"(?:['’]|\b(?P<century>1[0-9]|20))(?P<tens>\d)0s\b"),
        year: pattern(r"(?i)\b(?P<before>in|since|by|until|till|from|of|during|before|after|around|circa|year|through|to|and)\s(?P<y>1[1-9]\d{2}|20\d{2})\b"),
        // `a.m.` ending the sentence keeps its full stop for the sentence (the `end` group).
        time: pattern(r"(?i)\b(?P<h>\d{1,2}):(?P<min>\d{2})(?:\s?(?P<half>[ap])(?:\.m\.(?P<end>$)?|m\b))?"),
        hour: pattern(r"(?i)\b(?P<h>\d{1,2})\s?(?P<half>[ap])(?:\.m\.(?P<end>$)?|m\b)"),
        ordinal: pattern(r"\b(?P<n>\d{1,3}(?:,\d{3})+|\d+)(?:st|nd|rd|th)\b"),
        money_before: pattern(&format!(
            r"(?P<minus>-)?(?P<prefix>US|CA|AU|NZ|HK|NT|C|A|S)?(?P<sign>[$€£¥])\s?{NUMBER}(?:\s?(?P<short>[kK]|bn|M)\b|\s(?P<scale>thousand|million|billion|trillion)\b)?"
        )),
        money_after: pattern(&format!(r"{NUMBER}\s?(?P<sign>[€£¥])")),
        percent: pattern(&format!(r"(?P<minus>[-−])?{NUMBER}\s?%")),
        unit: pattern(&format!(
            r"(?P<minus>(?:^|[\s(])[-−])?{NUMBER}\s?(?P<unit>km/h|mph|km|cm|mm|kg|mg|lbs|lb|oz|ft|mi|ml|mL|kWh|GHz|MHz|Hz|TiB|GiB|MiB|TB|GB|MB|KB|kB|ms|min|hrs|hr|°C|°F|°|m|g|l|L|h)(?P<after>[^\p{{L}}\p{{N}}]|$)"
        )),
        fraction: pattern(r"\b(?P<a>\d{1,2})/(?P<b>\d{1,2})\b"),
        // Not inside a code (`ZX9-4Q7`): the first number starts after no letter.
        range: pattern(r"(?P<a>(?:^|[^A-Za-z0-9.,])\d+(?:[.,]\d+)?)\s?[-–]\s?(?P<b>\d)"),
        negative: pattern(r"(?P<before>^|[\s(])[-−](?P<digit>\d)"),
        number: pattern(NUMBER),
        // `7.30 a.m.`: a clock time with a dot, told by its a.m. or p.m.
        dotted_time: pattern(r"(?i)\b(?P<h>\d{1,2})\.(?P<min>\d{2})\s?(?P<half>[ap])(?:\.m\.(?P<end>$)?|m\b)"),
        // `Tue, 03/10`, `Mon–Fri`: a weekday cut short before a comma or a dash, or after a dash.
        weekday_before: pattern(r"\b(?P<d>Mon|Tues?|Wed|Thu(?:rs?)?|Fri|Sat|Sun)\.?(?P<after>,|\s?–|\s-\s)"),
        weekday_after: pattern(r"(?P<before>–\s?|\s-\s)(?P<d>Mon|Tues?|Wed|Thu(?:rs?)?|Fri|Sat|Sun)\b\.?"),
        // `expires 08/27`: a month and a year of two digits (a card's expiry), the month with its zero.
        expiry: pattern(r"\b(?P<m>0[1-9])/(?P<y>\d{2})\b"),
        // `$9.99/month`, `5/user`: per.
        per: pattern(r"(?P<a>\d)\s?/\s?(?P<per>month|mo|year|yr|day|week|hour|hr|night|person|user|seat|unit)\b"),
        // `Dec. 24–26`: a range of days in one month.
        day_range: pattern(&format!(r"\b{MONTH_NAMES}\s(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s?[-–]\s?(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?\b")),
        year_range: pattern(r"\b(?P<a>1[1-9]\d{2}|20\d{2})\s?[-–]\s?(?P<b>1[1-9]\d{2}|20\d{2})\b"),
        duration: pattern(r"\b(?P<h>\d{1,2})\s?(?:h|hr|hrs)\s?(?P<m>\d{1,2})\s?(?:m|min|mins)\b"),
        // A house number before a street's name and type (`123 Main Street`, `221B Baker Street`).
        house: pattern(
            r"\b(?P<n>\d{1,5})(?P<letter>[A-Z])?(?P<street>\s(?:(?:North|South|East|West)\s)?(?:\d{1,3}(?:st|nd|rd|th)\s|\p{Lu}[\p{L}'’.-]*\s){1,4}(?:Street|Avenue|Road|Boulevard|Drive|Lane|Court|Place|Parkway|Highway|Square|Way|Terrace|Circle)\b)",
        ),
        zip: pattern(&format!(r"\b(?P<before>ZIP(?: code)?|zip(?: code)?|[A-Z]{{2}}|{STATES})\s(?P<zip>\d{{5}})(?:-(?P<plus>\d{{4}}))?\b")),
        // A numeral after a name, or after a word that numbers (`Chapter IV`, `World War II`).
        roman: pattern(
            r"\b(?P<name>\p{Lu}[\p{Ll}'’-]*|chapter|part|volume|book|act|phase|season|article|type|class|stage|grade|level|tier|mark|episode|appendix|section)\s(?P<n>[IVXLCDM]{1,7})(?P<after>[^\p{L}\p{N}'’]|$)",
        ),
        money_range: pattern(r"(?P<sign>[$€£])(?P<a>\d[\d,]*(?:\.\d+)?)\s?[-–]\s?[$€£]?(?P<b>\d[\d,]*(?:\.\d+)?)(?:\s(?P<scale>thousand|million|billion)\b)?"),
        money_code_before: pattern(&format!(r"\b(?P<code>USD|EUR|GBP|JPY|CHF|CAD|AUD|CNY|RMB|INR)\s?{NUMBER}")),
        money_code_after: pattern(&format!(r"{NUMBER}\s?(?P<code>USD|EUR|GBP|JPY|CHF|CAD|AUD|CNY|RMB|INR)\b")),
        // A product's model number after its name in capitals (`RTX 4090`, `ISO 9001`), read in pairs.
        model_number: pattern(r"\b(?P<model>[A-Z]{2,5})\s(?P<n>[1-9]\d{3})\b"),
        dotted_letters: pattern(r"\b(?P<a>[A-Z])\.(?P<b>[A-Z])\.(?:(?P<c>[A-Z])\.)?(?P<end>$)?"),
    }
}

/// What an operator is said as, in English.
const OPERATORS: [(&str, &str); 11] = [
    ("≤", " is less than or equal to "),
    ("≥", " is greater than or equal to "),
    ("≠", " is not equal to "),
    ("×", " times "),
    ("÷", " divided by "),
    ("±", " plus or minus "),
    ("√", " the square root of "),
    ("²", " squared"),
    ("³", " cubed"),
    (" = ", " equals "),
    ("=", " equals "),
];

/// The street rules: after a street's name (`Main St.`, `Lakeview Dr.`), the type of street; `St.` elsewhere
/// is Saint. A full stop that ends the sentence stays (the `end` group).
fn street_rules() -> Vec<(Regex, &'static str, bool)> {
    // `123 Main St. Louis`: a street after a house number; `St. Louis` elsewhere: Saint, before any other
    // street rule reads `Visit St.` as a street.
    [
        (pattern(r"(?P<name>\d+[A-Z]?\s(?:\p{Lu}[\p{L}'’-]*\s){1,3})St\.(?P<end>$)?"), "Street", true),
        (pattern(r"(?P<name>)\bSt\.(?P<end>\s\p{Lu})"), "Saint", true),
    ]
    .into_iter()
    .chain(
        [
            ("Jr", "Junior"),
            ("Sr", "Senior"),
            ("St", "Street"),
            ("Ave", "Avenue"),
            ("Rd", "Road"),
            ("Blvd", "Boulevard"),
            ("Dr", "Drive"),
            ("Ln", "Lane"),
            ("Ct", "Court"),
            ("Pl", "Place"),
            ("Pkwy", "Parkway"),
            ("Hwy", "Highway"),
            ("Sq", "Square"),
        ]
        .into_iter()
        .map(|(written, said)| (pattern(&format!(r"(?P<name>(?:\p{{Lu}}[\p{{L}}'’-]*|\d+(?:st|nd|rd|th)),?\s){written}\.(?P<end>$)?")), said, true)),
    )
    .chain(
        [
            (r"\bMt\.(?P<name>\s\p{Lu})", "Mount"),
            (r"\bApt\.?(?P<name>\s\d)", "Apartment"),
            (r"\bSte\.(?P<name>\s\d)", "Suite"),
            (r"\bBldg\.(?P<name>\s)", "Building"),
        ]
        .into_iter()
        .map(|(p, said)| (pattern(p), said, false)),
    )
    .chain(
        // `Baker St, London`: the type without its dot, before a comma.
        [("St", "Street"), ("Ave", "Avenue"), ("Rd", "Road"), ("Blvd", "Boulevard"), ("Ln", "Lane")]
            .into_iter()
            .map(|(written, said)| (pattern(&format!(r"(?P<name>\p{{Lu}}[\p{{L}}'’-]*\s){written}(?P<end>[,;])")), said, true)),
    )
    .chain(
        [("N", "North"), ("S", "South"), ("E", "East"), ("W", "West")]
            .into_iter()
            .map(|(written, said)| (pattern(&format!(r"(?P<name>\d\s){written}\.(?P<end>\s)")), said, true)),
    )
    .collect()
}

/// `sentence` with its written forms in words, class by class in the order of `classes`' table.
pub fn spoken(sentence: &str) -> String {
    let (rules, shared) = (&*RULES, &*classes::SHARED);
    let mut text = addresses::spoken(sentence, &ADDRESS_WORDS);
    // A colour's `#` and an account's groups before `#5` is read "number 5" and a group as a count.
    text = shared
        .hex_colour
        .replace_all(&text, |c: &Captures| classes::hex_said(&c["hex"], digit, " ").map_or_else(|| c[0].to_string(), |h| format!("hash {h}")))
        .into_owned();
    text = shared.iban.replace_all(&text, |c: &Captures| format!("I B A N {}", classes::iban_said(&c["iban"], digit))).into_owned();
    for (pattern, with) in &rules.abbreviations {
        text = pattern.replace_all(&text, with.as_str()).into_owned();
    }
    // Every street abbreviation ends in a full stop.
    let streets = if rules.any_street.is_match(&text) { &rules.streets[..] } else { &[] };
    for (pattern, said, name_first) in streets {
        text = pattern
            .replace_all(&text, |c: &Captures| {
                // An empty `end` is the sentence's end: its full stop stays.
                let end = c.name("end").map_or("", |e| if e.as_str().is_empty() { "." } else { e.as_str() });
                let name = &c["name"];
                if *name_first {
                    format!("{name}{said}{end}")
                } else {
                    format!("{said}{name}{end}")
                }
            })
            .into_owned();
    }
    static STEPS: LazyLock<Vec<classes::Step>> = LazyLock::new(|| {
        let (rules, shared) = (&*RULES, &*classes::SHARED);
        classes::steps(vec![
            (Class::Telephone, &rules.extension, |c| Some(format!("{}, extension {}", &c["last"], digits(&c["n"])))),
            (Class::Telephone, &rules.phone_nanp, phone_nanp),
            (Class::Telephone, &rules.phone_international, |c| Some(format!("plus {}", phone_groups(&c["groups"])))),
            (Class::Telephone, &rules.dialled, |c| Some(format!("{} {}", &c["verb"], digits(&c["n"])))),
            (Class::Date, &shared.timestamp, |c| {
                let day = date_of(c["y"].parse().ok()?, c["m"].parse().ok()?, c["d"].parse().ok()?)?;
                let zone = match c.name("zone").map(|z| z.as_str()) {
                    Some("Z") => " U T C".to_string(),
                    Some(offset) => {
                        let (sign, rest) = offset.split_at(1);
                        let hours: u64 = rest.get(..2)?.parse().ok()?;
                        format!(" U T C {} {}", if sign == "+" { "plus" } else { "minus" }, cardinal(hours))
                    }
                    None => String::new(),
                };
                Some(format!("{day}, at {}{zone}", clock(c["h"].parse().ok()?, c["min"].parse().ok()?)?))
            }),
            (Class::Date, &rules.iso_date, date),
            (Class::Date, &rules.slash_date, date),
            (Class::Date, &rules.weekday_before, |c| Some(format!("{}{}", weekday(&c["d"])?, &c["after"]))),
            (Class::Date, &rules.weekday_after, |c| Some(format!("{}{}", &c["before"], weekday(&c["d"])?))),
            (Class::Date, &rules.expiry, |c| Some(format!("{} twenty {}", MONTHS.get(c["m"].parse::<usize>().ok()? - 1)?, two_digits(c["y"].parse().ok()?)))),
            (Class::Date, &rules.day_range, |c| {
                let (a, b): (u64, u64) = (c["d"].parse().ok()?, c["d2"].parse().ok()?);
                ((1..=31).contains(&a) && (1..=31).contains(&b)).then(|| format!("{} {} to {}", month(&c["month"]).unwrap_or("the"), ordinal(a), ordinal(b)))
            }),
            (Class::Date, &rules.month_day, date),
            (Class::Date, &rules.day_month, date),
            (Class::Date, &rules.month_year, |c| Some(format!("{} {}", month(&c["month"])?, year(c["y"].parse().ok()?)))),
            (Class::Date, &rules.year_range, |c| Some(format!("{} to {}", year(c["a"].parse().ok()?), year(c["b"].parse().ok()?)))),
            (Class::Date, &rules.decade, decade),
            (Class::Date, &rules.year, |c| Some(format!("{} {}", &c["before"], year(c["y"].parse().ok()?)))),
            (Class::Time, &rules.dotted_time, time),
            (Class::Time, &rules.time, time),
            (Class::Time, &rules.hour, time),
            (Class::Time, &rules.duration, |c| {
                let (h, m): (u64, u64) = (c["h"].parse().ok()?, c["m"].parse().ok()?);
                Some(format!("{} {} {} {}", cardinal(h), if h == 1 { "hour" } else { "hours" }, cardinal(m), if m == 1 { "minute" } else { "minutes" }))
            }),
            (Class::Address, &rules.house, house),
            (Class::Address, &rules.zip, |c| {
                let plus = c.name("plus").map(|p| format!(" dash {}", digits(p.as_str()))).unwrap_or_default();
                Some(format!("{} {}{plus}", &c["before"], digits(&c["zip"])))
            }),
            (Class::Roman, &rules.roman, roman),
            (Class::Ordinal, &rules.ordinal, |c| Some(ordinal(c["n"].replace(',', "").parse().ok()?))),
            (Class::Cardinal, &shared.scaled, |c| classes::scaled_said(c, cardinal, '.')),
            (Class::Math, &shared.comparison, |c| {
                let op = if &c["op"] == "<" { "is less than" } else { "is greater than" };
                Some(format!("{} {op} {}", &c["a"], &c["b"]))
            }),
            (Class::Math, &shared.dimensions, |c| Some(format!("{} by {}", &c["a"], &c["b"]))),
            (Class::Math, &shared.times, |c| classes::times_said(c, " times", " ")),
            (Class::Math, &shared.minus_sum, |c| Some(format!("{} minus {}", &c["a"], &c["b"]))),
            (Class::Math, &shared.ratio, |c| Some(format!("{}{} to {}{}", &c["before"], &c["a"], &c["b"], &c["after"]))),
            (Class::Math, &shared.power, |c| Some(format!("{} to the power of {}", &c["a"], &c["b"]))),
            (Class::Math, &shared.plus, |c| Some(format!("{} plus {}", &c["a"], &c["b"]))),
            (Class::Money, &rules.money_range, money_range),
            (Class::Range, &rules.range, |c| Some(format!("{} to {}", &c["a"], &c["b"]))),
            (Class::Money, &rules.money_before, money),
            (Class::Money, &rules.money_after, money),
            (Class::Money, &rules.money_code_before, money_code),
            (Class::Money, &rules.money_code_after, money_code),
            (Class::Measure, &rules.percent, |c| {
                let minus = if c.name("minus").is_some() { "minus " } else { "" };
                Some(format!("{minus}{} percent", decimal(&Amount::from_captures(c, "whole", "fraction")?)))
            }),
            (Class::Measure, &rules.unit, unit),
            (Class::Measure, &rules.per, |c| {
                let per = match &c["per"] {
                    "mo" => "month",
                    "yr" => "year",
                    "hr" => "hour",
                    other => other,
                };
                Some(format!("{} per {per}", &c["a"]))
            }),
            (Class::Verbatim, &rules.model_number, |c| Some(format!("{} {}", &c["model"], year(c["n"].parse().ok()?)))),
            (Class::Fraction, &shared.mixed_fraction, |c| {
                let (a, b): (u64, u64) = (c["a"].parse().ok()?, c["b"].parse().ok()?);
                let w: u64 = c["w"].parse().ok()?;
                (a < b).then(|| format!("{} and {}{}", cardinal(w), fraction_words(a, b, true), &c["after"]))
            }),
            (Class::Electronic, &shared.file, |c| Some(format!("{} dot {}", &c["name"], &c["ext"]))),
            (Class::Fraction, &shared.vulgar, |c| {
                let (a, b) = classes::vulgar(c["f"].chars().next()?)?;
                Some(match c.name("w") {
                    Some(w) => format!("{} and {}", cardinal(w.as_str().parse().ok()?), fraction_words(a, b, true)),
                    None => fraction_words(a, b, false),
                })
            }),
            (Class::Fraction, &rules.fraction, fraction),
            (Class::Range, &shared.word_range, |c| Some(format!("{} to {}", &c["a"], &c["b"]))),
            (Class::Letters, &rules.dotted_letters, |c| {
                let letters: Vec<&str> = ["a", "b", "c"].iter().filter_map(|g| c.name(g)).map(|m| m.as_str()).collect();
                Some(format!("{}{}", letters.join(" "), if c.name("end").is_some() { "." } else { "" }))
            }),
            (Class::Cardinal, &rules.negative, |c| Some(format!("{}minus {}", &c["before"], &c["digit"]))),
        ])
    });
    text = classes::operators(classes::apply(text, &STEPS), &OPERATORS);
    // Codes, then initialisms: from here no digit is glued to a letter.
    text = classes::codes_spaced(&text, leaves, |n| n.parse().map(cardinal).unwrap_or_else(|_| digits(n)), code_part);
    text = classes::initialisms(&text, " s");
    rules
        .number
        .replace_all(&text, |c: &Captures| Amount::from_captures(c, "whole", "fraction").map(|a| decimal(&a)).unwrap_or_else(|| c[0].to_string()))
        .into_owned()
}

/// A token another class reads, though it mixes digits and letters: `5km`, `22nd`, `3pm`, `1990s`.
fn leaves(token: &str) -> bool {
    let suffix = token.trim_start_matches(|c: char| c.is_ascii_digit());
    suffix.len() < token.len()
        && matches!(
            suffix,
            "st" | "nd"
                | "rd"
                | "th"
                | "s"
                | "am"
                | "pm"
                | "k"
                | "km"
                | "cm"
                | "mm"
                | "kg"
                | "mg"
                | "lb"
                | "lbs"
                | "oz"
                | "ft"
                | "mi"
                | "ml"
                | "mL"
                | "kWh"
                | "GHz"
                | "MHz"
                | "Hz"
                | "TB"
                | "GB"
                | "MB"
                | "KB"
                | "kB"
                | "ms"
                | "min"
                | "hr"
                | "hrs"
                | "m"
                | "g"
                | "l"
                | "L"
                | "h"
                | "mph"
                | "x"
        )
}

/// A run of a code: digits one by one from three of them (`UA857`), else as a number (`x86`, `4o`).
fn code_part(part: &Part<'_>) -> String {
    match part {
        Part::Digits(d) if d.len() >= 3 || d.starts_with('0') => digits(d),
        Part::Digits(d) => d.parse().map(cardinal).unwrap_or_else(|_| digits(d)),
        Part::Letters(l) => classes::letters_said(l),
    }
}

fn digit(d: u32) -> String {
    DIGITS[d as usize].to_string()
}

/// A weekday written short, in full.
fn weekday(short: &str) -> Option<&'static str> {
    ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"].into_iter().find(|day| day.starts_with(short))
}

/// A date in full: `December seventh, twenty twenty-six`.
fn date_of(y: u64, m: usize, d: u64) -> Option<String> {
    let month = MONTHS.get(m.checked_sub(1)?)?;
    (1..=31).contains(&d).then(|| format!("{month} {}, {}", ordinal(d), year(y)))
}

/// A time on the 24-hour clock: `14:30` fourteen thirty, `09:00` nine o'clock.
fn clock(h: u64, minutes: u64) -> Option<String> {
    if h > 24 || minutes > 59 {
        return None;
    }
    let hour = cardinal(h);
    Some(match minutes {
        0 if h > 12 || h == 0 => format!("{} hundred", if h == 0 { "zero".to_string() } else { hour }),
        0 => format!("{hour} o'clock"),
        1..=9 => format!("{hour} oh {}", cardinal(minutes)),
        _ => format!("{hour} {}", cardinal(minutes)),
    })
}

/// A house number as an address says it: `123` one twenty-three, `1600` sixteen hundred, `42` forty-two.
fn house(c: &Captures) -> Option<String> {
    let n: u64 = c["n"].parse().ok()?;
    let said = match c["n"].len() {
        1 | 2 => cardinal(n),
        3 if n.is_multiple_of(100) => cardinal(n),
        3 => format!("{} {}", cardinal(n / 100), two_digits(n % 100)),
        4 => year(n),
        _ => digits(&c["n"]),
    };
    let letter = c.name("letter").map(|l| format!(" {}", l.as_str())).unwrap_or_default();
    Some(format!("{said}{letter}{}", &c["street"]))
}

/// The last two digits of a number said in pairs: `05` oh five, `23` twenty-three.
fn two_digits(n: u64) -> String {
    if n < 10 {
        format!("oh {}", cardinal(n))
    } else {
        cardinal(n)
    }
}

/// The names a monarch or a pope takes with a number: `Louis XIV` is Louis the Fourteenth.
const REGNAL: [&str; 40] = [
    "Louis",
    "Henry",
    "Elizabeth",
    "Charles",
    "George",
    "Edward",
    "Richard",
    "James",
    "William",
    "John",
    "Paul",
    "Mary",
    "Victoria",
    "Anne",
    "Peter",
    "Catherine",
    "Frederick",
    "Philip",
    "Napoleon",
    "Alexander",
    "Nicholas",
    "Benedict",
    "Gregory",
    "Pius",
    "Leo",
    "Innocent",
    "Clement",
    "Ferdinand",
    "Francis",
    "Urban",
    "Ivan",
    "Constantine",
    "Ramesses",
    "Felipe",
    "Carlos",
    "Gustav",
    "Harald",
    "Olaf",
    "Christian",
    "Stephen",
];

/// Words after which a numeral counts (`Chapter IV`, `World War II`, `Super Bowl LVIII`): any numeral.
const COUNTING: [&str; 22] = [
    "Chapter", "Part", "Volume", "Book", "Act", "Phase", "Season", "Article", "Type", "Class", "Stage", "Grade", "Level", "Tier", "Mark", "Episode",
    "Appendix", "Section", "War", "Bowl", "Fantasy", "Rocky",
];

fn roman(c: &Captures) -> Option<String> {
    let (name, n) = (&c["name"], &c["n"]);
    let value = classes::roman(n)?;
    let regnal = REGNAL.contains(&name);
    let counting = COUNTING.iter().any(|w| w.eq_ignore_ascii_case(name));
    // After a monarch's name a numeral of one letter too, but only before a pause (`Elizabeth I, …`;
    // `John I decided` is the pronoun); after any other name two letters or more, of I, V and X only
    // (`Rocky III`; `The CLI`, `Washington DC`, `Size XL` and `Plan B` are letters), but after a word that
    // counts (`Chapter IV`, `Super Bowl LVIII`).
    let one_letter_ok = regnal && !c["after"].starts_with(' ');
    let fits = match (n.len(), regnal, counting) {
        (1, _, _) => one_letter_ok,
        (_, true, _) | (_, _, true) => true,
        _ => n.chars().all(|ch| matches!(ch, 'I' | 'V' | 'X')),
    };
    if !fits {
        return None;
    }
    let said = if regnal { format!("the {}", capitalised(&ordinal(value))) } else { cardinal(value) };
    Some(format!("{name} {said}{}", &c["after"]))
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map(|first| first.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// `$10–$20` ten to twenty dollars.
fn money_range(c: &Captures) -> Option<String> {
    let (a, b) = (Amount::parse(&c["a"], '.')?, Amount::parse(&c["b"], '.')?);
    let (_, many, _, _) = currency(&c["sign"])?;
    let scale = c.name("scale").map(|s| format!(" {}", s.as_str())).unwrap_or_default();
    Some(format!("{} to {}{scale} {many}", decimal(&a), decimal(&b)))
}

/// An amount with its ISO code (`USD 200`, `200 EUR`).
fn money_code(c: &Captures) -> Option<String> {
    let amount = Amount::from_captures(c, "whole", "fraction")?;
    let (one, many) = match &c["code"] {
        "USD" => ("US dollar", "US dollars"),
        "EUR" => ("euro", "euros"),
        "GBP" => ("pound", "pounds"),
        "JPY" => ("yen", "yen"),
        "CHF" => ("Swiss franc", "Swiss francs"),
        "CAD" => ("Canadian dollar", "Canadian dollars"),
        "AUD" => ("Australian dollar", "Australian dollars"),
        "CNY" | "RMB" => ("yuan", "yuan"),
        "INR" => ("rupee", "rupees"),
        _ => return None,
    };
    let single = amount.fraction.is_none() && amount.whole_value() == Some(1);
    Some(format!("{} {}", decimal(&amount), if single { one } else { many }))
}

/// `3/5` three fifths, `1/2` one half (after a whole number: `and a half`).
fn fraction_words(a: u64, b: u64, after_whole: bool) -> String {
    let denominator = match b {
        2 => "half".to_string(),
        4 => "quarter".to_string(),
        _ => ordinal(b),
    };
    let plural = if a == 1 {
        denominator
    } else if b == 2 {
        "halves".to_string()
    } else {
        format!("{denominator}s")
    };
    match (a, after_whole) {
        (1, true) => format!("a {plural}"),
        _ => format!("{} {plural}", cardinal(a)),
    }
}

/// What a `<say-as>` asks, in English.
pub fn said(what: super::Said) -> Option<String> {
    use super::Said;
    let plural = |n: u64, one: &str| if n == 1 { format!("{} {one}", cardinal(n)) } else { format!("{} {one}s", cardinal(n)) };
    Some(match what {
        Said::Cardinal(n) => cardinal(n),
        Said::Ordinal(n) => ordinal(n),
        Said::Duration(0, s) => plural(s, "second"),
        Said::Duration(m, 0) => plural(m, "minute"),
        Said::Duration(m, s) => format!("{} {}", plural(m, "minute"), plural(s, "second")),
        Said::Date { y, m, d } => {
            let month = m.and_then(|m| MONTHS.get(m as usize - 1)).copied();
            let year = y.map(|y| year(u64::from(y)));
            match (month, d, year) {
                (Some(month), Some(d), Some(year)) => format!("{month} {}, {year}", ordinal(u64::from(d))),
                (Some(month), Some(d), None) => format!("{month} {}", ordinal(u64::from(d))),
                (Some(month), None, Some(year)) => format!("{month} {year}"),
                (Some(month), None, None) => month.to_string(),
                (None, Some(d), None) => ordinal(u64::from(d)),
                (None, None, Some(year)) => year,
                _ => return None,
            }
        }
    })
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
    Some(match (c.name("y"), c.name("of")) {
        // `the 1st of May`: the day first, as written.
        (None, Some(_)) => format!("{} of {month}", ordinal(day)),
        (Some(y), Some(_)) => format!("{} of {month}, {}", ordinal(day), year(y.as_str().parse().ok()?)),
        (Some(y), None) => format!("{month} {}, {}", ordinal(day), year(y.as_str().parse().ok()?)),
        (None, None) => format!("{month} {}", ordinal(day)),
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
    let (mut one, mut many, hundredth, hundredths) = currency(&c["sign"])?;
    if let Some(prefix) = c.name("prefix") {
        (one, many) = match prefix.as_str() {
            "US" => ("US dollar", "US dollars"),
            "CA" | "C" => ("Canadian dollar", "Canadian dollars"),
            "AU" | "A" => ("Australian dollar", "Australian dollars"),
            "NZ" => ("New Zealand dollar", "New Zealand dollars"),
            "HK" => ("Hong Kong dollar", "Hong Kong dollars"),
            "NT" => ("New Taiwan dollar", "New Taiwan dollars"),
            "S" => ("Singapore dollar", "Singapore dollars"),
            _ => (one, many),
        };
    }
    let minus = if c.name("minus").is_some() { "minus " } else { "" };
    let scale = match c.name("short").map(|s| s.as_str()) {
        Some("k" | "K") => Some("thousand"),
        Some("M") => Some("million"),
        Some("bn") => Some("billion"),
        _ => c.name("scale").map(|s| s.as_str()),
    };
    if let Some(scale) = scale {
        return Some(format!("{minus}{} {scale} {many}", decimal(&amount)));
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
        "hr" | "hrs" | "h" => ("hour", "hours"),
        "GiB" => ("gibibyte", "gibibytes"),
        "MiB" => ("mebibyte", "mebibytes"),
        "TiB" => ("tebibyte", "tebibytes"),
        "°C" => ("degree Celsius", "degrees Celsius"),
        "°F" => ("degree Fahrenheit", "degrees Fahrenheit"),
        "°" => ("degree", "degrees"),
        _ => return None,
    };
    let single = amount.fraction.is_none() && amount.whole_value() == Some(1);
    let minus = c.name("minus").map(|m| format!("{}minus ", m.as_str().trim_end_matches(['-', '−']))).unwrap_or_default();
    Some(format!("{minus}{} {}{}", decimal(&amount), if single { one } else { many }, &c["after"]))
}

fn fraction(c: &Captures) -> Option<String> {
    // A numerator with a leading zero (`08/27`) is no fraction.
    if c["a"].starts_with('0') {
        return None;
    }
    let (a, b): (u64, u64) = (c["a"].parse().ok()?, c["b"].parse().ok()?);
    Some(match (a, b) {
        (24, 7) => "twenty-four seven".into(),
        (_, 0) => return None,
        // A score (`8/10`, `0/5`, `95/100`): out of.
        (0, _) => format!("zero out of {}", cardinal(b)),
        _ if matches!(b, 10 | 100) && a > 1 => format!("{} out of {}", cardinal(a), cardinal(b)),
        _ if a < b => fraction_words(a, b, false),
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
    // Past a quintillion no one says the number: its digits.
    if n >= 1_000_000_000_000_000_000 {
        return digits(&n.to_string());
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
