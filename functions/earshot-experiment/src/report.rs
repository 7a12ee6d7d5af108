//! The report: each arm's figures, each measure's difference between arms with its bootstrap interval,
//! and a one-line verdict that says what the data supports and, where it does not yet, about how many
//! more answers it would take.
//!
//! Answers count in the arm the split assigned them (intent to treat): an arm whose backend was full
//! or failing keeps its overflows and failures, whichever backend spoke instead, and every
//! conversation counts however it ended: an arm that makes listeners leave keeps them, and the rate
//! of listeners who leave is compared like the other measures. Lower is better for every measure
//! compared.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::cost::{self, Cost, Deployment, Prices};
use crate::lines::{Answer, Lines};
use crate::stats::{self, bootstrap, Difference, Statistic};

/// How to read the lines.
#[derive(Debug, Clone)]
pub struct Options {
    /// The experiment to report on; None: the one with the most answers (lines of gateways that name
    /// none are read as one experiment).
    pub experiment: Option<String>,
    /// The prices costs are figured with.
    pub prices: Prices,
    /// What the lines do not say of the deployment (endpoint instances, Lambda memory).
    pub deployment: Deployment,
    /// The window the lines were read for, in epoch milliseconds; None: from the first line to the last.
    pub window: Option<(u64, u64)>,
    /// Bootstrap resamples per comparison.
    pub resamples: usize,
    /// The bootstrap's seed: the same lines and seed give the same report.
    pub seed: u64,
    /// Fewer answers than this in an arm, and no difference is called: an interval from a handful of
    /// answers says little, however narrow it looks.
    pub min_answers: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { experiment: None, prices: Prices::published(), deployment: Deployment::default(), window: None, resamples: 2000, seed: 1, min_answers: 30 }
    }
}

/// Three percentiles of time to first audio, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Percentiles {
    /// The median.
    pub p50: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// The 99th percentile.
    pub p99: f64,
}

/// One arm's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArmFigures {
    /// The arm's name (the backend the split assigned).
    pub arm: String,
    /// Conversations the split assigned to the arm, however they ended.
    pub answers: usize,
    /// Conversations that ended with an error.
    pub failures: usize,
    /// Failures by their `error` code.
    pub failure_causes: BTreeMap<String, usize>,
    /// Answers another backend spoke because this arm's was full, by the backend that was full.
    pub overflows: usize,
    /// Answers another backend spoke because this arm's failed to open, by the failure's code.
    pub failovers: BTreeMap<String, usize>,
    /// Answers by the backend that spoke them: the split actually served.
    pub served_by: BTreeMap<String, usize>,
    /// Conversations by how they ended (`completed`, `client_left`, `interrupted`, ...).
    pub endings: BTreeMap<String, usize>,
    /// Conversations whose listener went away before the end (`client_left`).
    pub left: usize,
    /// Audio heard per conversation, in milliseconds (lines that say).
    pub heard_ms_per_answer: Option<f64>,
    /// Sentences played from the sentence cache, of all sentences spoken (`None`: no line says).
    pub cache_hit_rate: Option<f64>,
    /// Characters the cache spared a billing backend, in all.
    pub billed_characters_saved: u64,
    /// Time to first audio (answers with audio).
    pub ttfa_ms: Option<Percentiles>,
    /// Silences inside sentences, per answer.
    pub stalls_per_answer: f64,
    /// Milliseconds of silence inside sentences, per answer.
    pub stall_ms_per_answer: f64,
    /// Gaps longer than 5 ms, per answer.
    pub underruns_per_answer: f64,
    /// Dollars per 1,000 answers, and its parts.
    pub cost_per_1000: f64,
    /// The cost per 1,000 answers, by part (Polly, Lambda, endpoint), in US dollars.
    pub cost_parts_per_1000: Cost,
}

/// One measure compared between two arms: `difference` is `b − a`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The measure's name in JSON (`ttfa_p50_ms`, `cost_per_1000`, …).
    pub measure: &'static str,
    /// The measure's name in words (`time to first audio p50`).
    pub label: &'static str,
    /// The measure's unit (`ms`, `$`), empty for counts and rates.
    pub unit: &'static str,
    /// The first arm.
    pub a: String,
    /// The arm compared with it.
    pub b: String,
    /// The measure in arm `a`; `None` when no answer of it has a value.
    pub a_value: Option<f64>,
    /// The measure in arm `b`; `None` when no answer of it has a value.
    pub b_value: Option<f64>,
    /// `b − a`, with its bootstrap interval; `None` when an arm has no values.
    pub difference: Option<Difference>,
    /// The arm the data shows lower, when its interval leaves out zero and both arms have enough answers.
    pub better: Option<String>,
    /// About how many more answers per arm would make the observed difference tell (when it does not yet).
    pub more_answers_per_arm: Option<usize>,
}

/// The whole report; `--json` prints it as it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The experiment reported on; `None` when no line names one.
    pub experiment: Option<String>,
    /// Other experiments the lines hold, left out.
    pub other_experiments: Vec<String>,
    /// The window read, in epoch milliseconds (from, to).
    pub window_ms: (u64, u64),
    /// The window's length in hours (what the endpoint's instance-hours are billed for).
    pub window_hours: f64,
    /// The prices the costs were figured with.
    pub prices: Prices,
    /// The deployment the costs were figured for.
    pub deployment: Deployment,
    /// Bootstrap resamples per comparison.
    pub resamples: usize,
    /// Each arm's figures, by arm name.
    pub arms: Vec<ArmFigures>,
    /// Every measure compared between the first arm and each other.
    pub comparisons: Vec<Comparison>,
    /// Answers outside the split (the request chose the backend), left out.
    pub outside_split: usize,
    /// Conversations refused busy before they started, by backend (they have no arm).
    pub refusals: BTreeMap<String, usize>,
    /// What the data supports, in one line.
    pub verdict: String,
}

/// One measure compared between arms, lower better.
struct Measure {
    name: &'static str,
    label: &'static str,
    unit: &'static str,
    statistic: Statistic,
    /// An answer's value, when it has one (time to first audio needs audio).
    value: fn(&Answer, &Cost) -> Option<f64>,
}

const TTFA: fn(&Answer, &Cost) -> Option<f64> = |a, _| a.ttfa_ms;

/// The ending of a conversation whose listener went away before it ended.
const LEFT: &str = "client_left";

const MEASURES: [Measure; 6] = [
    Measure { name: "ttfa_p50_ms", label: "time to first audio p50", unit: "ms", statistic: Statistic::Percentile(50.0), value: TTFA },
    Measure { name: "ttfa_p90_ms", label: "time to first audio p90", unit: "ms", statistic: Statistic::Percentile(90.0), value: TTFA },
    Measure { name: "stalls_per_answer", label: "stalls per answer", unit: "", statistic: Statistic::Mean, value: |a, _| Some(a.stalls) },
    Measure {
        name: "failures_per_answer",
        label: "failures per answer",
        unit: "",
        statistic: Statistic::Mean,
        value: |a, _| Some(if a.failure.is_some() { 1.0 } else { 0.0 }),
    },
    Measure {
        name: "left_per_answer",
        label: "listeners who left",
        unit: "",
        statistic: Statistic::Mean,
        value: |a, _| Some(if a.ending == LEFT { 1.0 } else { 0.0 }),
    },
    Measure { name: "cost_per_1000", label: "cost per 1,000 answers", unit: "$", statistic: Statistic::Mean, value: |_, c| Some(c.total() * 1000.0) },
];

/// The answers a report reads: those in the window, of the experiment asked for (or, with none asked, the
/// one with the most answers), with lines that name no experiment read as part of it. The experiment chosen
/// comes with them.
pub fn selected<'a>(lines: &'a Lines, options: &Options) -> (Option<String>, Vec<&'a Answer>) {
    let experiment = options.experiment.clone().or_else(|| lines.experiments().first().map(|(name, _)| name.clone()));
    let answers = lines
        .answers
        .iter()
        .filter(|a| in_window(options, a.epoch_ms) && (experiment.is_none() || a.experiment.is_none() || a.experiment == experiment))
        .collect();
    (experiment, answers)
}

fn in_window(options: &Options, at: u64) -> bool {
    options.window.is_none_or(|(from, to)| (from..=to).contains(&at))
}

/// Builds the report, or says why there is nothing to report.
pub fn build(lines: &Lines, options: &Options) -> Result<Report, String> {
    let experiments = lines.experiments();
    let (experiment, chosen) = selected(lines, options);
    if let Some(name) = &options.experiment {
        if !experiments.iter().any(|(e, _)| e == name) {
            let known: Vec<&str> = experiments.iter().map(|(e, _)| e.as_str()).collect();
            return Err(format!("no answers of experiment `{name}` (the lines name: {})", if known.is_empty() { "none".into() } else { known.join(", ") }));
        }
    }
    if chosen.is_empty() {
        return Err("no conversation lines in the window: is the gateway logging metrics (EARSHOT_METRICS_NAMESPACE), and is this its log?".into());
    }
    let window_ms = options.window.unwrap_or_else(|| {
        let times = chosen.iter().map(|a| a.epoch_ms);
        (times.clone().min().unwrap_or(0), times.max().unwrap_or(0))
    });
    let window_hours = window_ms.1.saturating_sub(window_ms.0) as f64 / 3_600_000.0;
    let costs = cost::per_answer(&chosen, &options.prices, &options.deployment, window_hours);
    let mut by_arm: BTreeMap<&str, Vec<(&Answer, Cost)>> = BTreeMap::new();
    let mut outside_split = 0;
    for (answer, cost) in chosen.iter().zip(costs) {
        if answer.arm == "none" {
            outside_split += 1;
        } else {
            by_arm.entry(answer.arm.as_str()).or_default().push((answer, cost));
        }
    }
    if by_arm.is_empty() {
        return Err(format!("none of the {outside_split} answers came through the A/B split (set EARSHOT_AB_WEIGHTS, and leave `backend` out of requests)"));
    }
    let arms: Vec<ArmFigures> = by_arm.iter().map(|(arm, answers)| figures(arm, answers)).collect();
    let names: Vec<&str> = by_arm.keys().copied().collect();
    let mut comparisons = Vec::new();
    for b in names.iter().skip(1) {
        for measure in &MEASURES {
            comparisons.push(compare(measure, (names[0], &by_arm[names[0]]), (b, &by_arm[b]), options));
        }
    }
    let mut refusals = BTreeMap::new();
    for (at, backend) in &lines.refusals {
        if in_window(options, *at) {
            *refusals.entry(backend.clone()).or_default() += 1;
        }
    }
    let verdict = verdict(&arms, &comparisons, options.min_answers);
    let other_experiments = experiments.into_iter().map(|(e, _)| e).filter(|e| Some(e) != experiment.as_ref()).collect();
    Ok(Report {
        experiment,
        other_experiments,
        window_ms,
        window_hours,
        prices: options.prices.clone(),
        deployment: options.deployment.clone(),
        resamples: options.resamples,
        arms,
        comparisons,
        outside_split,
        refusals,
        verdict,
    })
}

/// The values a measure is computed from, one per answer that has it.
fn values(value: fn(&Answer, &Cost) -> Option<f64>, answers: &[(&Answer, Cost)]) -> Vec<f64> {
    answers.iter().filter_map(|(a, cost)| value(a, cost)).collect()
}

fn figures(arm: &str, answers: &[(&Answer, Cost)]) -> ArmFigures {
    let count = |f: &dyn Fn(&Answer) -> Option<String>| {
        let mut map: BTreeMap<String, usize> = BTreeMap::new();
        for (a, _) in answers {
            if let Some(key) = f(a) {
                *map.entry(key).or_default() += 1;
            }
        }
        map
    };
    let failure_causes = count(&|a| a.failure.clone());
    let ttfa = values(TTFA, answers);
    let per_answer = |f: &dyn Fn(&Answer) -> f64| stats::mean(&answers.iter().map(|(a, _)| f(a)).collect::<Vec<_>>()).unwrap_or(0.0);
    let per_1000 = |f: &dyn Fn(&Cost) -> f64| 1000.0 * stats::mean(&answers.iter().map(|(_, c)| f(c)).collect::<Vec<_>>()).unwrap_or(0.0);
    ArmFigures {
        arm: arm.to_string(),
        answers: answers.len(),
        failures: failure_causes.values().sum(),
        failure_causes,
        overflows: answers.iter().filter(|(a, _)| a.overflow_from.is_some()).count(),
        failovers: count(&|a| a.failover_from.clone()),
        served_by: count(&|a| Some(a.backend.clone())),
        endings: count(&|a| Some(a.ending.clone())),
        left: answers.iter().filter(|(a, _)| a.ending == LEFT).count(),
        heard_ms_per_answer: stats::mean(&answers.iter().filter_map(|(a, _)| a.heard_ms).collect::<Vec<_>>()),
        cache_hit_rate: {
            let sentences: u64 = answers.iter().map(|(a, _)| a.sentences).sum();
            (sentences > 0).then(|| answers.iter().map(|(a, _)| a.cache_hits).sum::<u64>() as f64 / sentences as f64)
        },
        billed_characters_saved: answers.iter().map(|(a, _)| a.billed_characters_saved).sum(),
        ttfa_ms: (!ttfa.is_empty()).then(|| Percentiles {
            p50: stats::percentile(&ttfa, 50.0).unwrap_or(0.0),
            p90: stats::percentile(&ttfa, 90.0).unwrap_or(0.0),
            p99: stats::percentile(&ttfa, 99.0).unwrap_or(0.0),
        }),
        stalls_per_answer: per_answer(&|a| a.stalls),
        stall_ms_per_answer: per_answer(&|a| a.stall_ms),
        underruns_per_answer: per_answer(&|a| a.underruns),
        cost_per_1000: per_1000(&|c| c.total()),
        cost_parts_per_1000: Cost { polly: per_1000(&|c| c.polly), lambda: per_1000(&|c| c.lambda), endpoint: per_1000(&|c| c.endpoint) },
    }
}

fn compare(measure: &Measure, (a, a_answers): (&str, &[(&Answer, Cost)]), (b, b_answers): (&str, &[(&Answer, Cost)]), options: &Options) -> Comparison {
    let statistic = measure.statistic;
    let (av, bv) = (values(measure.value, a_answers), values(measure.value, b_answers));
    let difference = bootstrap(&av, &bv, statistic, options.resamples, options.seed);
    let n = av.len().min(bv.len());
    let enough = n >= options.min_answers;
    let better = difference.filter(|d| enough && d.excludes_zero()).map(|d| if d.estimate < 0.0 { b } else { a }.to_string());
    let more_answers_per_arm = match difference {
        _ if !enough => Some(options.min_answers - n),
        Some(d) if !d.excludes_zero() && d.estimate != 0.0 => {
            // An interval narrows as one over the square root of the answers: it leaves out zero, about,
            // once its half-width is under the difference seen.
            let needed = n as f64 * (d.half_width() / d.estimate.abs()).powi(2);
            Some((needed.ceil() as usize).saturating_sub(n).max(1))
        }
        _ => None,
    };
    Comparison {
        measure: measure.name,
        label: measure.label,
        unit: measure.unit,
        a: a.to_string(),
        b: b.to_string(),
        a_value: statistic.of(&av),
        b_value: statistic.of(&bv),
        difference,
        better,
        more_answers_per_arm,
    }
}

/// One line: what the data says of speed, steadiness, failures and cost, or that it is not enough yet.
fn verdict(arms: &[ArmFigures], comparisons: &[Comparison], min_answers: usize) -> String {
    if arms.len() < 2 {
        let arm = &arms[0];
        return format!("Only arm {} answered ({} answers): nothing to compare (does the split weigh two arms?).", arm.arm, arm.answers);
    }
    let fewest = arms.iter().map(|a| a.answers).min().unwrap_or(0);
    if fewest < min_answers {
        let counts: Vec<String> = arms.iter().map(|a| format!("{} {}", a.arm, a.answers)).collect();
        return format!(
            "Not enough data yet: {} answers; at least {min_answers} per arm are needed before an interval means much (about {} more in the smallest arm).",
            counts.join(", "),
            min_answers - fewest
        );
    }
    let mut parts = Vec::new();
    // (measure, what the arm found lower is, the quality not yet told, the same after "no difference
    // seen in", what to say when neither arm has any)
    let measures = [
        ("ttfa_p50_ms", "is faster to first audio", "faster to first audio", "being faster to first audio", ""),
        ("stalls_per_answer", "is steadier", "steadier", "being steadier", "neither stalls"),
        ("failures_per_answer", "fails less", "failing less", "failing less", "neither fails"),
        ("left_per_answer", "loses fewer listeners", "losing fewer listeners", "losing listeners", "no listener left"),
        ("cost_per_1000", "is cheaper", "cheaper", "being cheaper", ""),
    ];
    for (measure, claim, not_yet, seen_in, neither) in measures {
        for c in comparisons.iter().filter(|c| c.measure == measure) {
            let Some(d) = c.difference else { continue };
            let part = match (&c.better, c.more_answers_per_arm) {
                (Some(better), _) => format!("{better} {claim} ({})", amount(c.unit, d)),
                (None, Some(more)) => format!("not yet {not_yet} either way (about {more} more answers per arm)"),
                (None, None) if c.a_value == Some(0.0) && c.b_value == Some(0.0) && !neither.is_empty() => neither.to_string(),
                (None, None) => format!("no difference seen in {seen_in}"),
            };
            parts.push(part);
        }
    }
    let mut line = parts.join("; ");
    line.insert_str(0, "Verdict: ");
    line.push('.');
    line
}

/// A difference as `212 ms (95 % CI 180 to 240)`, without its sign (the arm says which way).
fn amount(unit: &str, d: Difference) -> String {
    let (low, high) = (d.low.abs().min(d.high.abs()), d.low.abs().max(d.high.abs()));
    match unit {
        "ms" => format!("by {:.0} ms, 95 % CI {:.0} to {:.0}", d.estimate.abs(), low, high),
        "$" => format!("by ${:.2} per 1,000, 95 % CI {:.2} to {:.2}", d.estimate.abs(), low, high),
        _ => format!("by {:.3} per answer, 95 % CI {:.3} to {:.3}", d.estimate.abs(), low, high),
    }
}

/// The report for people.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let experiment = report.experiment.as_deref().unwrap_or("(unnamed)");
    let answers: usize = report.arms.iter().map(|a| a.answers).sum();
    let _ = writeln!(
        out,
        "earshot ab: experiment {experiment}, {} to {} UTC ({:.2} h), {answers} answers in the split",
        utc(report.window_ms.0),
        utc(report.window_ms.1),
        report.window_hours
    );
    if report.outside_split > 0 {
        let _ = writeln!(out, "  left out: {} answers outside the split (the request chose the backend)", report.outside_split);
    }
    if !report.other_experiments.is_empty() {
        let _ = writeln!(out, "  left out: other experiments {} (--experiment NAME)", report.other_experiments.join(", "));
    }
    if !report.refusals.is_empty() {
        let _ = writeln!(out, "  refused busy before starting (no arm): {}", join_counts(&report.refusals));
    }
    out.push('\n');
    let mut rows: Vec<(String, Vec<String>)> = vec![
        ("".into(), report.arms.iter().map(|a| format!("arm {}", a.arm)).collect()),
        ("answers".into(), report.arms.iter().map(|a| a.answers.to_string()).collect()),
        ("served by".into(), report.arms.iter().map(|a| join_counts(&a.served_by)).collect()),
        ("failures".into(), report.arms.iter().map(|a| with_causes(a.failures, &a.failure_causes)).collect()),
        ("endings".into(), report.arms.iter().map(|a| join_counts(&a.endings)).collect()),
        ("heard s per answer".into(), report.arms.iter().map(|a| a.heard_ms_per_answer.map_or("-".into(), |ms| format!("{:.1}", ms / 1000.0))).collect()),
        ("sentences from the cache".into(), report.arms.iter().map(|a| a.cache_hit_rate.map_or("-".into(), |r| format!("{:.1}%", r * 100.0))).collect()),
        ("billed characters saved".into(), report.arms.iter().map(|a| a.billed_characters_saved.to_string()).collect()),
        ("overflows".into(), report.arms.iter().map(|a| a.overflows.to_string()).collect()),
        ("failovers".into(), report.arms.iter().map(|a| with_causes(a.failovers.values().sum(), &a.failovers)).collect()),
        (
            "first audio p50/p90/p99 ms".into(),
            report.arms.iter().map(|a| a.ttfa_ms.map_or("-".into(), |t| format!("{:.0} / {:.0} / {:.0}", t.p50, t.p90, t.p99))).collect(),
        ),
        ("stalls per answer".into(), report.arms.iter().map(|a| format!("{:.3}", a.stalls_per_answer)).collect()),
        ("stalled ms per answer".into(), report.arms.iter().map(|a| format!("{:.1}", a.stall_ms_per_answer)).collect()),
        ("underruns per answer".into(), report.arms.iter().map(|a| format!("{:.3}", a.underruns_per_answer)).collect()),
        ("$ per 1,000 answers".into(), report.arms.iter().map(|a| format!("{:.2}", a.cost_per_1000)).collect()),
        (
            "  endpoint / Lambda / Polly".into(),
            report
                .arms
                .iter()
                .map(|a| format!("{:.2} / {:.2} / {:.2}", a.cost_parts_per_1000.endpoint, a.cost_parts_per_1000.lambda, a.cost_parts_per_1000.polly))
                .collect(),
        ),
    ];
    let label_width = rows.iter().map(|(l, _)| l.chars().count()).max().unwrap_or(0);
    let width = rows.iter().flat_map(|(_, cells)| cells.iter().map(|c| c.chars().count())).max().unwrap_or(0).max(8);
    for (label, cells) in rows.drain(..) {
        let _ = write!(out, "{label:<label_width$}");
        for cell in cells {
            let _ = write!(out, "  {cell:>width$}");
        }
        out.push('\n');
    }
    for pair in report.comparisons.chunks(MEASURES.len()) {
        let Some(first) = pair.first() else { continue };
        let _ = writeln!(out, "\n{} − {} (95 % bootstrap interval, {} resamples):", first.b, first.a, report.resamples);
        for c in pair {
            let shown = match c.difference {
                None => "-".to_string(),
                Some(d) => match c.unit {
                    "ms" => format!("{:+.0} ms  [{:+.0}, {:+.0}]", d.estimate, d.low, d.high),
                    "$" => format!("{:+.2} $  [{:+.2}, {:+.2}]", d.estimate, d.low, d.high),
                    _ => format!("{:+.3}  [{:+.3}, {:+.3}]", d.estimate, d.low, d.high),
                },
            };
            let call = match (&c.better, c.more_answers_per_arm) {
                (Some(arm), _) => format!("{arm} lower"),
                (None, Some(more)) => format!("not yet (~{more} more answers per arm)"),
                (None, None) => "no difference seen".into(),
            };
            let _ = writeln!(out, "  {:<26}{shown:<34}{call}", c.label);
        }
    }
    let _ = writeln!(out, "\n{}", report.verdict);
    let p = &report.prices;
    let _ = writeln!(
        out,
        "Prices: {} list prices as of {} (Polly ${}/M characters, Lambda ${}/GB-s{}); Kokoro endpoint {} × {} at ${}/h over the window.",
        p.region,
        p.as_of,
        p.polly_per_million_characters,
        p.lambda_per_gb_second,
        if report.deployment.lambda { "" } else { ", not billed: --no-lambda" },
        report.deployment.instances,
        p.instance_type,
        p.instance_per_hour
    );
    out
}

fn join_counts(map: &BTreeMap<String, usize>) -> String {
    if map.is_empty() {
        return "-".into();
    }
    map.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
}

fn with_causes(total: usize, causes: &BTreeMap<String, usize>) -> String {
    if total == 0 {
        "0".into()
    } else {
        format!("{total} ({})", join_counts(causes))
    }
}

/// `2026-12-02 08:00` for epoch milliseconds (UTC), by the civil-from-days algorithm: a date is all the
/// report needs, not a time-zone crate.
pub fn utc(epoch_ms: u64) -> String {
    let secs = epoch_ms / 1000;
    let days = (secs / 86_400) as i64;
    let (hour, minute) = ((secs % 86_400) / 3600, (secs % 3600) / 60);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_calendar_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00");
        assert_eq!(utc(1_796_198_400_000), "2026-12-02 08:00");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00");
    }
}
