//! Mandarin: Arabic numerals as Chinese numerals (`105` 一百零五, `20000` 两万), the decimal point as 点 with
//! its digits one by one, years digit by digit (`2026年` 二零二六年), `%` as 百分之…, `10:30` as 十点三十分,
//! currencies (`¥12.5` 十二点五元, `$100` 一百美元), `°C` as 摄氏度, Latin units as their Chinese names,
//! `-5` as 负五, and long digit strings (a phone number, a code) digit by digit.

use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::addresses::{self, Words};
use super::numbers::{pattern, rewrite_all, Amount, Rewrite};

/// How an address is said in Mandarin (Latin words as written, the signs in Chinese).
const ADDRESS_WORDS: Words =
    Words { dot: "点", at: "艾特", slash: "斜杠", dash: "横杠", underscore: "下划线", colon: "冒号", plus: "加", digits: &DIGITS, join: "" };

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
}

static RULES: LazyLock<Rules> = LazyLock::new(|| Rules {
    // 13800138000, 138-0013-8000, +86 138 0013 8000: three, four and four digits (Chinese characters are word
    // characters, so the edges are matched as "not a digit" rather than a word boundary).
    mobile: pattern(r"(?P<before>^|\D)(?:\+(?P<country>\d{1,3})\s?)?(?P<a>1[3-9]\d)[\s-]?(?P<b>\d{4})[\s-]?(?P<c>\d{4})(?P<after>\D|$)"),
    // 010-12345678, 0755-1234567: the area code, then the number.
    landline: pattern(r"(?P<before>^|\D)(?P<a>0\d{2,3})-(?P<b>\d{7,8})(?P<after>\D|$)"),
    iso_date: pattern(r"(?P<y>\d{4})[-/](?P<m>\d{1,2})[-/](?P<d>\d{1,2})"),
    year: pattern(r"(?P<y>\d{2,4})年"),
    time: pattern(r"(?P<h>\d{1,2}):(?P<min>\d{2})"),
    currency_before: pattern(&format!(r"(?P<sign>[¥$€£])\s?{NUMBER}")),
    currency_after: pattern(&format!(r"{NUMBER}\s?(?P<sign>[¥€£])")),
    percent: pattern(&format!(r"(?P<minus>[-−])?{NUMBER}\s?%")),
    unit: pattern(&format!(r"{NUMBER}\s?(?P<unit>km/h|km|cm|mm|kg|mg|ml|mL|°C|°F|°|m|g|l|L)(?P<after>[^A-Za-z]|$)")),
    negative: pattern(r"(?P<before>^|[^0-9A-Za-z])[-−](?P<digit>\d)"),
    range: pattern(r"(?P<a>\d)\s?[-–~～]\s?(?P<b>\d)"),
    number: pattern(NUMBER),
});

/// `sentence` with its written forms in words.
pub fn spoken(sentence: &str) -> String {
    let rules = &*RULES;
    let mut text = addresses::spoken(sentence, &ADDRESS_WORDS);
    let steps: [(&Regex, Rewrite); 11] = [
        (&rules.mobile, phone),
        (&rules.landline, phone),
        (&rules.iso_date, |c| Some(format!("{}年{}月{}日", digits(&c["y"]), cardinal(c["m"].parse().ok()?), cardinal(c["d"].parse().ok()?)))),
        (&rules.year, |c| Some(format!("{}年", if c["y"].len() == 4 { digits(&c["y"]) } else { cardinal(c["y"].parse().ok()?) }))),
        (&rules.time, time),
        (&rules.currency_before, money),
        (&rules.currency_after, money),
        (&rules.percent, |c| {
            let minus = if c.name("minus").is_some() { "负" } else { "" };
            Some(format!("百分之{minus}{}", decimal(&Amount::from_captures(c, "whole", "fraction")?)))
        }),
        (&rules.range, |c| Some(format!("{}到{}", &c["a"], &c["b"]))),
        (&rules.negative, |c| Some(format!("{}负{}", &c["before"], &c["digit"]))),
        (&rules.unit, unit),
    ];
    text = rewrite_all(text, &steps);
    rules
        .number
        .replace_all(&text, |c: &Captures| Amount::from_captures(c, "whole", "fraction").map(|a| decimal(&a)).unwrap_or_else(|| c[0].to_string()))
        .into_owned()
}

/// A phone number digit by digit in its groups, one said 幺 as it is in numbers read aloud.
fn phone(c: &Captures) -> Option<String> {
    let said = |digits: &str| -> String { digits.chars().filter_map(|c| c.to_digit(10)).map(|d| if d == 1 { "幺" } else { DIGITS[d as usize] }).collect() };
    let mut groups: Vec<String> = c.name("country").map(|country| format!("加{}", said(country.as_str()))).into_iter().collect();
    groups.extend(["a", "b", "c"].iter().filter_map(|g| c.name(g)).map(|g| said(g.as_str())));
    Some(format!("{}{}{}", &c["before"], groups.join("，"), &c["after"]))
}

fn time(c: &Captures) -> Option<String> {
    let (h, m): (u64, u64) = (c["h"].parse().ok()?, c["min"].parse().ok()?);
    if h > 24 || m > 59 {
        return None;
    }
    let hour = if h == 2 { "两".to_string() } else { cardinal(h) };
    Some(match m {
        0 => format!("{hour}点整"),
        1..=9 => format!("{hour}点零{}分", cardinal(m)),
        _ => format!("{hour}点{}分", cardinal(m)),
    })
}

fn money(c: &Captures) -> Option<String> {
    let amount = Amount::from_captures(c, "whole", "fraction")?;
    let name = match &c["sign"] {
        "¥" => "元",
        "$" => "美元",
        "€" => "欧元",
        "£" => "英镑",
        _ => return None,
    };
    Some(format!("{}{name}", decimal(&amount)))
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
        _ => return None,
    };
    Some(format!("{}{name}{}", decimal(&amount), &c["after"]))
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
