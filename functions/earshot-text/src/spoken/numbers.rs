//! What the languages' rules share: an amount as written (sign, whole digits with their group separators,
//! decimal digits), and the regular expressions, compiled once.

use regex::{Captures, Regex};

/// A number as written: digits only, separators dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Amount {
    pub whole: String,
    /// The digits after the decimal mark, as written (leading zeros kept).
    pub fraction: Option<String>,
    /// Whether the whole part was written in groups (`1,400,000`, `2 500`): a count, never a code.
    pub grouped: bool,
}

impl Amount {
    /// From the captures `whole` and `fraction` of a rule's pattern: `whole` keeps only its digits.
    pub fn from_captures(caps: &Captures, whole: &str, fraction: &str) -> Option<Amount> {
        let written = caps.name(whole)?.as_str();
        let digits: String = written.chars().filter(char::is_ascii_digit).collect();
        let grouped = digits.len() < written.len();
        (!digits.is_empty()).then(|| Amount { whole: digits, fraction: caps.name(fraction).map(|f| f.as_str().to_string()), grouped })
    }

    /// A number as written with `decimal` as its decimal mark (`1,500.25`, `2,3`): every other mark and space
    /// groups thousands. `None` without a digit.
    pub fn parse(written: &str, decimal: char) -> Option<Amount> {
        let (whole, fraction) = written.split_once(decimal).map_or((written, None), |(w, f)| (w, Some(f)));
        let digits: String = whole.chars().filter(char::is_ascii_digit).collect();
        let fraction = fraction.map(|f| f.chars().filter(char::is_ascii_digit).collect::<String>()).filter(|f| !f.is_empty());
        (!digits.is_empty()).then(|| Amount { grouped: digits.len() < whole.trim().len(), whole: digits, fraction })
    }

    /// The amount times its scale's letter (`k`, `M`, `bn`: `1.5` and `k` is 1500), where that is whole.
    pub fn scaled(&self, scale: &str) -> Option<u64> {
        let factor: u64 = match scale {
            "k" | "K" => 1_000,
            "M" => 1_000_000,
            "bn" => 1_000_000_000,
            _ => return None,
        };
        let fraction = self.fraction.as_deref().unwrap_or("");
        let value: u64 = format!("{}{fraction}", self.whole).parse().ok()?;
        let divisor = 10u64.checked_pow(u32::try_from(fraction.len()).ok()?)?;
        let product = value.checked_mul(factor)?;
        (product % divisor == 0).then(|| product / divisor)
    }

    /// The whole part as a number, where it fits (a longer one is read digit by digit).
    pub fn whole_value(&self) -> Option<u64> {
        if self.whole.len() > 15 {
            return None;
        }
        self.whole.parse().ok()
    }

    /// Whether the amount is below 2: French puts what it counts in the singular then (`1,5 kilomètre`).
    pub fn below_two(&self) -> bool {
        self.whole_value().is_some_and(|v| v < 2)
    }

    /// Two decimal places as a whole number of cents (`,5` is 50), where there are one or two.
    pub fn cents(&self) -> Option<u64> {
        match self.fraction.as_deref() {
            Some(f) if f.len() == 1 => f.parse::<u64>().ok().map(|d| d * 10),
            Some(f) if f.len() == 2 => f.parse().ok(),
            _ => None,
        }
    }
}

/// A compiled pattern (the rules' patterns are constants: a bad one is a bug found by every test).
pub fn pattern(source: &str) -> Regex {
    Regex::new(source).unwrap_or_else(|e| panic!("spoken-form pattern {source}: {e}"))
}
