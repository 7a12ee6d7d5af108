//! Mandarin: Arabic numerals as Chinese numerals (`105` 一百零五, `20000` 两万), the decimal point as 点 with
//! its digits one by one, years digit by digit (`2026年` 二零二六年), `%` as 百分之…, `10:30` as 十点三十分,
//! currencies (`¥12.5` 十二点五元, `$100` 一百美元), `°C` as 摄氏度, Latin units as their Chinese names,
//! `-5` as 负五, and long digit strings (a phone number, a code) digit by digit.
//!
//! By class (`super::classes`): also codes with their digits one by one (`CA1234` CA幺二三四), Roman numerals
//! (`Ⅲ期` 三期), rooms and postcodes, fractions (五分之三), operators, ranges, 两 before a measure word, and
//! money with its prefix and scale (`HK$300`, `¥1.2万`).

use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::addresses::{self, Words};
use super::classes::{self, Class, Part};
use super::numbers::{pattern, Amount};

/// How an address is said in Mandarin (Latin words as written, the signs in Chinese).
const ADDRESS_WORDS: Words = Words {
    dot: "点",
    at: "艾特",
    slash: "斜杠",
    dash: "横杠",
    underscore: "下划线",
    colon: "冒号",
    plus: "加",
    question: "问号",
    equals: "等于",
    and: "和",
    hashtag: "井号",
    point: "点",
    beta: "beta",
    version: "版本",
    octet: yao_digits,
    version_part: |p| p.parse().map(cardinal).unwrap_or_else(|_| digits(p)),
    digits: &DIGITS,
    join: "",
};

/// A number: digits grouped in threes by commas, or not grouped; then a decimal point with its digits.
const NUMBER: &str = r"(?P<whole>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<fraction>\d+))?";

struct Rules {
    mobile: Regex,
    landline: Regex,
    iso_date: Regex,
    year: Regex,
    time: Regex,
    currency_before: Regex,
    currency_after: Regex,
    percent: Regex,
    unit: Regex,
    negative: Regex,
    range: Regex,
    number: Regex,
    international: Regex,
    service: Regex,
    dialled: Regex,
    extension: Regex,
    room: Regex,
    postcode: Regex,
    time_range: Regex,
    year_range: Regex,
    duration: Regex,
    roman: Regex,
    fraction: Regex,
    half_measure: Regex,
}

static RULES: LazyLock<Rules> = LazyLock::new(|| Rules {
    // 13800138000, 138-0013-8000, +86 138 0013 8000: three, four and four digits (Chinese characters are word
    // characters, so the edges are matched as "not a digit" rather than a word boundary).
    mobile: pattern(r"(?P<before>^|\D)(?:\+(?P<country>\d{1,3})\s?)?(?P<a>1[3-9]\d)[\s-]?(?P<b>\d{4})[\s-]?(?P<c>\d{4})(?P<after>\D|$)"),
    // 010-12345678, 0755-1234567: the area code, then the number.
    landline: pattern(r"(?P<before>^|\D)(?P<a>0\d{2,3})-(?P<b>\d{7,8}|\d{3,4}-\d{4})(?P<after>\D|$)"),
    iso_date: pattern(r"(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})"),
    year: pattern(r"(?P<y>\d{2,4})年"),
    time: pattern(r"(?P<h>\d{1,2}):(?P<min>\d{2})"),
    currency_before: pattern(&format!(r"(?P<minus>[-−])?(?P<prefix>US|HK|NT|CA|AU|A|S)?(?P<sign>[¥$€£])\s?{NUMBER}(?P<scale>万|亿|k|K|M|bn)?")),
    currency_after: pattern(&format!(r"{NUMBER}\s?(?P<sign>[¥€£])")),
    percent: pattern(&format!(r"(?P<minus>[-−])?{NUMBER}\s?%")),
    unit: pattern(&format!(r"(?P<minus>(?:^|[^0-9A-Za-z])[-−])?{NUMBER}\s?(?P<unit>km/h|km|cm|mm|kg|mg|ml|mL|°C|°F|°|min|m|g|l|L|h)(?P<after>[^A-Za-z]|$)")),
    negative: pattern(r"(?P<before>^|[^0-9A-Za-z])[-−](?P<digit>\d)"),
    range: pattern(r"(?P<a>(?:^|[^A-Za-z0-9.])\d+(?:\.\d+)?%?)\s?[-–~～]\s?(?P<b>\d)"),
    number: pattern(NUMBER),
    // +86 10 1234 5678, +1 555 123 4567: a plus, then groups.
    international: pattern(r"\+(?P<country>\d{1,3})(?P<groups>(?:[\s-]\d{1,8}){2,5})(?P<after>\D|$)"),
    // 400-123-4567, 800 123 4567: a service number.
    service: pattern(r"(?P<before>^|\D)(?P<a>[48]00)[\s-]?(?P<b>\d{3})[\s-]?(?P<c>\d{4})(?P<after>\D|$)"),
    // A number after the words that dial one (拨打110, 电话是95588): digit by digit.
    dialled: pattern(r"(?P<verb>拨打|致电|呼叫|电话是|热线是|电话|热线|拨)(?P<n>\d{3,8})(?P<after>\D|$)"),
    // An extension: 转 straight after a phone number's last digit, or 分机.
    extension: pattern(r"(?P<before>\d\s?转|分机号?)\s?(?P<n>\d{1,6})"),
    room: pattern(r"(?P<n>\d{3,})(?P<after>室|房间|房)"),
    postcode: pattern(r"(?P<before>邮编|邮政编码)(?P<is>是|为|：|:)?(?P<n>\d{6})"),
    time_range: pattern(r"(?P<a>\d{1,2}):(?P<am>\d{2})\s?[-–~～至到]\s?(?P<b>\d{1,2}):(?P<bm>\d{2})"),
    year_range: pattern(r"(?P<a>\d{4})\s?[-–~～]\s?(?P<b>\d{4})年"),
    duration: pattern(r"(?P<h>\d{1,2})h(?P<m>\d{1,2})min"),
    // Roman numerals before what they number (`III级`, `IV期`) or after 第, and the Unicode signs (`Ⅲ期`).
    roman: pattern(r"(?P<before>^|[^A-Za-z])(?P<n>[IVX]{1,5})(?P<after>[期级型章部卷类》」』)）]|$)|第(?P<nth>[IVX]{1,5})|(?P<sign>[Ⅰ-Ⅻ])"),
    fraction: pattern(r"(?P<before>^|\D)(?P<a>\d{1,3})/(?P<b>\d{1,3})(?P<after>\D|$)"),
    // `1½杯`: 一杯半, the half after the measure word.
    half_measure: pattern(r"(?P<w>\d+)½(?P<measure>\p{Han})"),
});

/// What an operator is said as, in Mandarin.
const OPERATORS: [(&str, &str); 10] = [
    ("≤", "小于等于"),
    ("≥", "大于等于"),
    ("≠", "不等于"),
    ("×", "乘以"),
    ("÷", "除以"),
    ("±", "正负"),
    ("√", "根号"),
    ("²", "的平方"),
    ("³", "的立方"),
    ("=", "等于"),
];

/// The measure words and units before which a count of two is 两 (两个, 两小时), not 二.
const MEASURES: &str = "个位件本张次天年周小时分钟公里公斤千克米台辆家份种条只杯瓶块人名套间栋座所门项篇首部场趟遍倍双对万千百亿点岁斤克升";

/// `sentence` with its written forms in words, class by class in the order of `classes`' table.
pub fn spoken(sentence: &str) -> String {
    let (rules, shared) = (&*RULES, &*classes::SHARED);
    let mut text = addresses::spoken(sentence, &ADDRESS_WORDS);
    text = shared
        .hex_colour
        .replace_all(&text, |c: &Captures| {
            classes::hex_said(&c["hex"], |d| yao_digits(&d.to_string()), "").map_or_else(|| c[0].to_string(), |h| format!("井号{h}"))
        })
        .into_owned();
    static STEPS: LazyLock<Vec<classes::Step>> = LazyLock::new(|| {
        let (rules, shared) = (&*RULES, &*classes::SHARED);
        classes::steps(vec![
            (Class::Telephone, &rules.extension, |c| Some(format!("{}{}", &c["before"], yao_digits(&c["n"])))),
            (Class::Telephone, &rules.international, |c| {
                let groups: Vec<String> = c["groups"].split([' ', '-']).filter(|g| !g.is_empty()).map(yao_digits).collect();
                Some(format!("加{}，{}{}", yao_digits(&c["country"]), groups.join("，"), &c["after"]))
            }),
            (Class::Telephone, &rules.mobile, phone),
            (Class::Telephone, &rules.landline, phone),
            (Class::Telephone, &rules.service, phone),
            (Class::Telephone, &rules.dialled, |c| Some(format!("{}{}{}", &c["verb"], yao_digits(&c["n"]), &c["after"]))),
            (Class::Date, &shared.timestamp, |c| {
                let (h, m): (u64, u64) = (c["h"].parse().ok()?, c["min"].parse().ok()?);
                let time = if m == 0 { format!("{}点", hours(h)) } else { format!("{}点{}分", hours(h), cardinal(m)) };
                let zone = if c.name("zone").is_some_and(|z| z.as_str() == "Z") { "UTC" } else { "" };
                Some(format!("{}年{}月{}日{time}{zone}", digits(&c["y"]), cardinal(c["m"].parse().ok()?), cardinal(c["d"].parse().ok()?)))
            }),
            (Class::Date, &rules.iso_date, |c| Some(format!("{}年{}月{}日", digits(&c["y"]), cardinal(c["m"].parse().ok()?), cardinal(c["d"].parse().ok()?)))),
            (Class::Date, &rules.year_range, |c| Some(format!("{}到{}年", digits(&c["a"]), digits(&c["b"])))),
            (Class::Date, &rules.year, |c| Some(format!("{}年", if c["y"].len() == 4 { digits(&c["y"]) } else { cardinal(c["y"].parse().ok()?) }))),
            (Class::Time, &rules.time_range, |c| {
                let at = |h: &str, m: &str| -> Option<String> {
                    let (h, m): (u64, u64) = (h.parse().ok()?, m.parse().ok()?);
                    (h <= 24 && m <= 59).then(|| {
                        if m == 0 {
                            format!("{}点", hours(h))
                        } else {
                            format!("{}点{}分", hours(h), if m < 10 { format!("零{}", cardinal(m)) } else { cardinal(m) })
                        }
                    })
                };
                Some(format!("{}到{}", at(&c["a"], &c["am"])?, at(&c["b"], &c["bm"])?))
            }),
            (Class::Time, &rules.time, time),
            (Class::Time, &rules.duration, |c| Some(format!("{}小时{}分钟", count(c["h"].parse().ok()?), cardinal(c["m"].parse().ok()?)))),
            (Class::Address, &rules.room, |c| Some(format!("{}{}", yao_digits(&c["n"]), &c["after"]))),
            (Class::Address, &rules.postcode, |c| Some(format!("{}{}{}", &c["before"], c.name("is").map_or("", |m| m.as_str()), yao_digits(&c["n"])))),
            (Class::Roman, &rules.roman, |c| {
                if let Some(sign) = c.name("sign") {
                    return Some(cardinal(roman_value(sign.as_str())?));
                }
                if let Some(nth) = c.name("nth") {
                    return Some(format!("第{}", cardinal(roman_value(nth.as_str())?)));
                }
                Some(format!("{}{}{}", &c["before"], cardinal(roman_value(&c["n"])?), &c["after"]))
            }),
            (Class::Cardinal, &shared.scaled, |c| classes::scaled_said(c, cardinal, '.')),
            (Class::Math, &shared.comparison, |c| Some(format!("{}{}{}", &c["a"], if &c["op"] == "<" { "小于" } else { "大于" }, &c["b"]))),
            (Class::Math, &shared.dimensions, |c| Some(format!("{}乘{}", &c["a"], &c["b"]))),
            (Class::Math, &shared.times, |c| classes::times_said(c, "倍", "")),
            (Class::Math, &shared.minus_sum, |c| Some(format!("{}减{}", &c["a"], &c["b"]))),
            (Class::Math, &shared.ratio, |c| Some(format!("{}{}比{}{}", &c["before"], &c["a"], &c["b"], &c["after"]))),
            (Class::Math, &shared.power, |c| Some(format!("{}的{}次方", &c["a"], &c["b"]))),
            (Class::Math, &shared.plus, |c| Some(format!("{}加{}", &c["a"], &c["b"]))),
            (Class::Money, &rules.currency_before, money),
            (Class::Money, &rules.currency_after, money),
            (Class::Range, &rules.range, |c| Some(format!("{}到{}", &c["a"], &c["b"]))),
            (Class::Measure, &rules.percent, |c| {
                let minus = if c.name("minus").is_some() { "负" } else { "" };
                Some(format!("百分之{minus}{}", decimal(&Amount::from_captures(c, "whole", "fraction")?)))
            }),
            (Class::Measure, &rules.unit, unit),
            (Class::Fraction, &rules.half_measure, |c| Some(format!("{}{}半", count(c["w"].parse().ok()?), &c["measure"]))),
            (Class::Fraction, &shared.mixed_fraction, |c| {
                let (w, a, b): (u64, u64, u64) = (c["w"].parse().ok()?, c["a"].parse().ok()?, c["b"].parse().ok()?);
                Some(format!("{}又{}分之{}{}", cardinal(w), cardinal(b), cardinal(a), &c["after"]))
            }),
            (Class::Fraction, &shared.vulgar, |c| {
                let (a, b) = classes::vulgar(c["f"].chars().next()?)?;
                let whole = c.name("w").map(|w| w.as_str().parse().map(|w| format!("{}又", cardinal(w)))).transpose().ok()?.unwrap_or_default();
                Some(format!("{whole}{}分之{}", cardinal(b), cardinal(a)))
            }),
            (Class::Fraction, &rules.fraction, |c| {
                let (a, b): (u64, u64) = (c["a"].parse().ok()?, c["b"].parse().ok()?);
                (b > 1).then(|| format!("{}{}分之{}{}", &c["before"], cardinal(b), cardinal(a), &c["after"]))
            }),
            (Class::Cardinal, &rules.negative, |c| Some(format!("{}负{}", &c["before"], &c["digit"]))),
        ])
    });
    let mut text = classes::operators(classes::apply(text, &STEPS), &[]);
    for (sign, said) in OPERATORS {
        text = text.replace(sign, said);
    }
    // Codes: digits glued to letters one by one (`CA1234`, `ZX94`), a lone digit or a group after a
    // hyphen as a number (`COVID-19`, `5G`); the letters as written, for the voice to read.
    text = classes::each_token(&text, |token| {
        if !classes::is_code(token) {
            let letters_only = token.text.contains('-') && token.text.split('-').all(|g| !g.is_empty() && g.chars().all(|c| c.is_ascii_uppercase()));
            return letters_only.then(|| token.text.replace('-', " "));
        }
        if leaves(token.text) {
            return None;
        }
        // A count and its unit (`5000mAh`): the count as a number.
        if let Some((count, unit)) = classes::count_and_unit(token.text) {
            return Some(format!("{}{unit}", count.parse().map(cardinal).unwrap_or_else(|_| digits(count))));
        }
        Some(classes::say_code(token.text, "", "，", |part| match part {
            Part::Digits(d) if d.len() >= 2 && !token.text.contains('-') => yao_digits(d),
            Part::Digits(d) => d.parse().map(cardinal).unwrap_or_else(|_| digits(d)),
            Part::Letters(l) => l.to_string(),
        }))
    });
    let source = text;
    rules
        .number
        .replace_all(&source, |c: &Captures| {
            let Some(amount) = Amount::from_captures(c, "whole", "fraction") else { return c[0].to_string() };
            let m = c.get(0).map_or(0..0, |m| m.range());
            let said = decimal(&amount);
            if source[..m.start].ends_with('第') {
                // An ordinal is 二 (第二百), never 两.
                return said.replacen('两', "二", 1);
            }
            match amount.whole_value() {
                Some(2) if amount.fraction.is_none() && before_measure(&source[m.end..]) => "两".to_string(),
                _ => said,
            }
        })
        .into_owned()
}

/// Whether what follows a count of two is a measure word (`个`, `小时`), directly or after a range (`2到3人`).
fn before_measure(after: &str) -> bool {
    let after = match after.strip_prefix('到') {
        Some(rest) => rest.trim_start_matches(|c: char| c.is_ascii_digit()),
        None => after,
    };
    after.chars().next().is_some_and(|c| MEASURES.contains(c))
}

/// A count as said before a measure word: 两 for two.
fn count(n: u64) -> String {
    if n == 2 {
        "两".into()
    } else {
        cardinal(n)
    }
}

/// An hour as said on the clock: 两点.
fn hours(h: u64) -> String {
    count(h)
}

fn roman_value(n: &str) -> Option<u64> {
    let mut chars = n.chars();
    match (chars.next().and_then(classes::roman_sign), chars.next()) {
        (Some(v), None) => Some(v),
        _ => classes::roman(n),
    }
}

/// A token another class reads, though it mixes digits and letters: `16GB`, `5km`, `2h`.
fn leaves(token: &str) -> bool {
    let suffix = token.trim_start_matches(|c: char| c.is_ascii_digit());
    suffix.len() < token.len()
        && matches!(suffix, "GB" | "MB" | "TB" | "KB" | "km" | "cm" | "mm" | "kg" | "mg" | "ml" | "mL" | "m" | "g" | "l" | "L" | "h" | "min" | "s" | "ms")
}

/// Digits one by one, one said 幺, as numbers that are not counts are read aloud (phones, rooms, codes).
fn yao_digits(digits: &str) -> String {
    digits.chars().filter_map(|c| c.to_digit(10)).map(|d| if d == 1 { "幺" } else { DIGITS[d as usize] }).collect()
}

/// What a `<say-as>` asks, in Mandarin.
pub fn said(what: super::Said) -> Option<String> {
    use super::Said;
    Some(match what {
        Said::Cardinal(n) => cardinal(n),
        Said::Ordinal(n) => format!("第{}", cardinal(n).replacen('两', "二", 1)),
        Said::Duration(0, s) => format!("{}秒", cardinal(s)),
        Said::Duration(m, 0) => format!("{}分钟", cardinal(m)),
        Said::Duration(m, s) => format!("{}分{}秒", cardinal(m), cardinal(s)),
        Said::Date { y, m, d } => {
            let mut out = String::new();
            if let Some(y) = y {
                out.push_str(&format!("{}年", digits(&y.to_string())));
            }
            if let Some(m) = m {
                out.push_str(&format!("{}月", cardinal(u64::from(m))));
            }
            if let Some(d) = d {
                out.push_str(&format!("{}日", cardinal(u64::from(d))));
            }
            out
        }
    })
}

/// A phone number digit by digit in its groups, one said 幺 as it is in numbers read aloud.
fn phone(c: &Captures) -> Option<String> {
    let said = yao_digits;
    let mut groups: Vec<String> = c.name("country").map(|country| format!("加{}", said(country.as_str()))).into_iter().collect();
    groups.extend(["a", "b", "c"].iter().filter_map(|g| c.name(g)).map(|g| said(g.as_str())));
    Some(format!("{}{}{}", &c["before"], groups.join("，"), &c["after"]))
}

fn time(c: &Captures) -> Option<String> {
    let (h, m): (u64, u64) = (c["h"].parse().ok()?, c["min"].parse().ok()?);
    if h > 24 || m > 59 {
        return None;
    }
    let hour = hours(h);
    Some(match m {
        0 => format!("{hour}点整"),
        1..=9 => format!("{hour}点零{}分", cardinal(m)),
        _ => format!("{hour}点{}分", cardinal(m)),
    })
}

fn money(c: &Captures) -> Option<String> {
    let mut amount = Amount::from_captures(c, "whole", "fraction")?;
    // `¥12.50` 十二点五元: a trailing zero of cents is not said.
    amount.fraction = amount.fraction.map(|f| f.trim_end_matches('0').to_string()).filter(|f| !f.is_empty());
    let name = match (c.name("prefix").map(|p| p.as_str()), &c["sign"]) {
        (Some("HK"), _) => "港元",
        (Some("NT"), _) => "新台币",
        (Some("CA"), _) => "加元",
        (Some("AU" | "A"), _) => "澳元",
        (Some("S"), _) => "新加坡元",
        (_, "¥") => "元",
        (_, "$") => "美元",
        (_, "€") => "欧元",
        (_, "£") => "英镑",
        _ => return None,
    };
    let minus = if c.name("minus").is_some() { "负" } else { "" };
    let scale = c.name("scale").map_or("", |s| s.as_str());
    // `$2.3M`: the count in full (两百三十万), as Mandarin says millions in 万.
    if matches!(scale, "k" | "K" | "M" | "bn") {
        return Some(format!("{minus}{}{name}", cardinal(amount.scaled(scale)?)));
    }
    let number = if amount.fraction.is_none() && amount.whole_value() == Some(2) && !scale.is_empty() { "两".to_string() } else { decimal(&amount) };
    Some(format!("{minus}{number}{scale}{name}"))
}

fn unit(c: &Captures) -> Option<String> {
    let amount = Amount::from_captures(c, "whole", "fraction")?;
    let name = match &c["unit"] {
        "km/h" => "公里每小时",
        "km" => "公里",
        "cm" => "厘米",
        "mm" => "毫米",
        "m" => "米",
        "kg" => "公斤",
        "mg" => "毫克",
        "g" => "克",
        "ml" | "mL" => "毫升",
        "l" | "L" => "升",
        "°C" => "摄氏度",
        "°F" => "华氏度",
        "°" => "度",
        "h" => "小时",
        "min" => "分钟",
        _ => return None,
    };
    // Below zero on a thermometer is 零下; any other minus 负.
    let minus = match c.name("minus") {
        Some(m) => format!("{}{}", m.as_str().trim_end_matches(['-', '−']), if name.ends_with("氏度") { "零下" } else { "负" }),
        None => String::new(),
    };
    let number = match amount.whole_value() {
        Some(2) if amount.fraction.is_none() && !name.ends_with('度') => "两".to_string(),
        _ => decimal(&amount),
    };
    Some(format!("{minus}{number}{name}{}", &c["after"]))
}

const DIGITS: [&str; 10] = ["零", "一", "二", "三", "四", "五", "六", "七", "八", "九"];

/// Digit by digit: 2026 二零二六.
fn digits(s: &str) -> String {
    s.chars().filter_map(|c| c.to_digit(10)).map(|d| DIGITS[d as usize]).collect()
}

/// A number with its decimals read digit by digit after 点; a digit string of more than eight digits
/// not written in groups, or one with a leading zero (a phone number, a code), digit by digit.
fn decimal(amount: &Amount) -> String {
    let whole = match amount.whole_value() {
        Some(v) if (amount.grouped || amount.whole.len() <= 8) && !(amount.whole.len() > 1 && amount.whole.starts_with('0')) => cardinal(v),
        _ => digits(&amount.whole),
    };
    match amount.fraction.as_deref() {
        Some(f) => format!("{whole}点{}", digits(f)),
        None => whole,
    }
}

/// A whole number in Chinese numerals: groups of four digits under 万 and 亿, one 零 for each run of zeros
/// inside a number, 十 rather than 一十 at its head (十二), and 两 for a leading two before 百, 千, 万 or 亿
/// (两百, 两万), as it is said.
pub fn cardinal(n: u64) -> String {
    if n == 0 {
        return "零".into();
    }
    let groups = [(n / 100_000_000) % 10_000, (n / 10_000) % 10_000, n % 10_000];
    let names = ["亿", "万", ""];
    let mut out = String::new();
    let mut zero_pending = false;
    let high = n / 1_000_000_000_000;
    if high > 0 {
        out.push_str(&cardinal(high));
        out.push('万');
    }
    for (group, name) in groups.iter().zip(names) {
        if *group == 0 {
            zero_pending = !out.is_empty();
            continue;
        }
        if zero_pending || (!out.is_empty() && *group < 1000) {
            out.push('零');
        }
        zero_pending = false;
        out.push_str(&below_10000(*group));
        out.push_str(name);
    }
    if out.starts_with("一十") {
        out.remove(0);
    }
    let mut chars = out.chars();
    if chars.next() == Some('二') && matches!(chars.next(), Some('百' | '千' | '万' | '亿')) {
        out.replace_range(..'二'.len_utf8(), "两");
    }
    out
}

fn below_10000(n: u64) -> String {
    let places = [(1000, "千"), (100, "百"), (10, "十"), (1, "")];
    let mut out = String::new();
    let mut zero = false;
    for (size, name) in places {
        let d = (n / size) % 10;
        if d == 0 {
            zero = !out.is_empty();
            continue;
        }
        if zero {
            out.push('零');
            zero = false;
        }
        out.push_str(DIGITS[d as usize]);
        out.push_str(name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cardinals_as_they_are_said() {
        for (n, words) in [
            (0, "零"),
            (2, "二"),
            (10, "十"),
            (12, "十二"),
            (20, "二十"),
            (105, "一百零五"),
            (110, "一百一十"),
            (200, "两百"),
            (222, "两百二十二"),
            (1005, "一千零五"),
            (2000, "两千"),
            (10_000, "一万"),
            (20_000, "两万"),
            (100_500, "十万零五百"),
            (1_000_000, "一百万"),
            (100_000_000, "一亿"),
            (1_200_000_000, "十二亿"),
        ] {
            assert_eq!(cardinal(n), words, "{n}");
        }
    }
}
