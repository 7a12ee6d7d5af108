//! A synthetic log with known per-arm distributions, written line by line by the gateway's own metric
//! code (seeded): the report must find the differences that were put there, inside its intervals, call
//! nothing on a handful of answers, and price the answers as a hand computation does.

use earshot_core::timeline::{SentenceMarks, Timeline};
use earshot_experiment::report::{self, Options};
use earshot_experiment::{Deployment, Lines, Prices};
use earshot_gateway::metrics::{conversation_line, ConversationEnd, Ended};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// How one arm behaves.
struct Arm {
    name: &'static str,
    ttfa_median_ms: f64,
    ttfa_spread_ms: f64,
    stall_chance: f64,
    /// Characters Polly bills per answer (0: Kokoro speaks).
    billed: u64,
    compute_ms: f64,
    /// The chance a listener leaves after the first audio (no draw at 0: the other figures' draws
    /// stay as they were).
    leave_chance: f64,
}

const KOKORO: Arm = Arm { name: "kokoro", ttfa_median_ms: 300.0, ttfa_spread_ms: 40.0, stall_chance: 0.25, billed: 0, compute_ms: 4000.0, leave_chance: 0.0 };
const POLLY: Arm = Arm { name: "polly", ttfa_median_ms: 450.0, ttfa_spread_ms: 60.0, stall_chance: 0.0, billed: 150, compute_ms: 5000.0, leave_chance: 0.0 };

/// A normal draw (Box-Muller), whose median is its mean.
fn normal(rng: &mut ChaCha8Rng, mean: f64, sd: f64) -> f64 {
    let (u, v): (f64, f64) = (rng.random_range(f64::EPSILON..1.0), rng.random_range(0.0..1.0));
    mean + sd * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// `per_arm` answers of Kokoro and Polly, one a second from `start_ms`, interleaved, as the gateway logs them.
fn log(per_arm: usize, seed: u64, start_ms: u64) -> String {
    log_of([KOKORO, POLLY], per_arm, seed, start_ms)
}

fn log_of(arms: [Arm; 2], per_arm: usize, seed: u64, start_ms: u64) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = String::from("2026-12-02T08:00:00Z  INFO earshot: listening\n");
    for i in 0..per_arm {
        for (k, arm) in arms.iter().enumerate() {
            let stalled = rng.random_bool(arm.stall_chance);
            let sentence = SentenceMarks { stalls: u32::from(stalled), stall_ms: if stalled { 120.0 } else { 0.0 }, ..Default::default() };
            let timeline = Timeline {
                backend: arm.name.into(),
                release: "incremental".into(),
                first_audio_sent_ms: Some(normal(&mut rng, arm.ttfa_median_ms, arm.ttfa_spread_ms)),
                billed_characters: (arm.billed > 0).then_some(arm.billed),
                sentences: vec![sentence],
                ..Default::default()
            };
            let left = arm.leave_chance > 0.0 && rng.random_bool(arm.leave_chance);
            let ended = if left { Ended::ClientLeft } else { Ended::Completed };
            let ending = ConversationEnd {
                ended,
                arm: Some(arm.name),
                experiment: Some("voices"),
                compute_ms: arm.compute_ms,
                memory_mb: Some(1024),
                ..Default::default()
            };
            let at = start_ms + (2 * i + k) as u64 * 1000;
            out.push_str(&conversation_line(&timeline, "earshot", &ending, at).to_string());
            out.push('\n');
        }
    }
    out
}

fn prices() -> Prices {
    Prices {
        as_of: "test".into(),
        region: "test".into(),
        polly_per_million_characters: 30.0,
        lambda_per_gb_second: 0.00002,
        lambda_per_million_requests: 0.2,
        instance_per_hour: 1.8,
        instance_type: "ml.g5.xlarge".into(),
    }
}

#[test]
fn the_report_recovers_the_differences_put_in_the_log() {
    let lines = Lines::read(&log(400, 42, 1_796_198_400_000));
    let options = Options { prices: prices(), ..Default::default() };
    let r = report::build(&lines, &options).unwrap();
    assert_eq!(r.experiment.as_deref(), Some("voices"));
    assert_eq!(r.arms.iter().map(|a| (a.arm.as_str(), a.answers)).collect::<Vec<_>>(), vec![("kokoro", 400), ("polly", 400)]);
    let find = |measure: &str| r.comparisons.iter().find(|c| c.measure == measure).unwrap();

    // polly − kokoro at p50: 150 ms were put there.
    let p50 = find("ttfa_p50_ms");
    let d = p50.difference.unwrap();
    assert!(d.low <= 150.0 && 150.0 <= d.high && d.excludes_zero(), "{d:?}");
    assert_eq!(p50.better.as_deref(), Some("kokoro"));
    // Stalls: 0.25 a answer against none.
    let stalls = find("stalls_per_answer");
    let d = stalls.difference.unwrap();
    assert!(d.low <= -0.25 && -0.25 <= d.high && d.high < 0.0, "{d:?}");
    assert_eq!(stalls.better.as_deref(), Some("polly"));
    // Neither fails: nothing to call, nothing more to wait for.
    let failures = find("failures_per_answer");
    assert_eq!((failures.better.as_ref(), failures.more_answers_per_arm), (None, None));

    assert!(r.verdict.starts_with("Verdict: kokoro is faster to first audio (by 1"), "{}", r.verdict);
    assert!(r.verdict.contains("polly is steadier") && r.verdict.contains("neither fails"), "{}", r.verdict);
    assert!(r.verdict.contains("no listener left"), "{}", r.verdict);
    let text = report::render(&r);
    assert!(text.contains("arm kokoro") && text.contains("first audio p50/p90/p99 ms") && text.contains(&r.verdict), "{text}");
}

#[test]
fn an_arm_that_makes_listeners_leave_keeps_them_and_is_found_out() {
    // Polly's listeners leave after its first audio five times as often as Kokoro's: every
    // conversation counts in its arm however it ended, and the rate of leaving is compared.
    let quitters = Arm { leave_chance: 0.15, ..POLLY };
    let stayers = Arm { leave_chance: 0.03, ..KOKORO };
    let lines = Lines::read(&log_of([stayers, quitters], 400, 7, 1_796_198_400_000));
    let r = report::build(&lines, &Options { prices: prices(), ..Default::default() }).unwrap();
    for arm in &r.arms {
        assert_eq!(arm.answers, 400, "every conversation of {} counted", arm.arm);
        assert_eq!(arm.endings.values().sum::<usize>(), 400);
        assert_eq!(arm.endings.get("client_left").copied().unwrap_or(0), arm.left);
    }
    let (kokoro, polly) = (&r.arms[0], &r.arms[1]);
    assert!(kokoro.left < 25 && (40..=80).contains(&polly.left), "left: kokoro {}, polly {}", kokoro.left, polly.left);
    let left = r.comparisons.iter().find(|c| c.measure == "left_per_answer").unwrap();
    let d = left.difference.unwrap();
    assert!(d.low <= 0.12 && 0.12 <= d.high && d.excludes_zero(), "{d:?}");
    assert_eq!(left.better.as_deref(), Some("kokoro"));
    assert!(r.verdict.contains("kokoro loses fewer listeners (by 0.1"), "{}", r.verdict);
    let text = report::render(&r);
    assert!(text.contains("endings") && text.contains(&format!("client_left {}", polly.left)), "{text}");
}

#[test]
fn the_cost_per_answer_is_the_hand_computation() {
    let lines = Lines::read(&log(400, 42, 1_796_198_400_000));
    let options = Options { prices: prices(), deployment: Deployment { instances: 2.0, memory_mb: 512, lambda: true }, ..Default::default() };
    let r = report::build(&lines, &options).unwrap();
    // 800 answers a second apart: the window is 799 s.
    let hours = 799.0 / 3600.0;
    assert!((r.window_hours - hours).abs() < 1e-9);
    let lambda = |compute_ms: f64| 1.0 * compute_ms / 1000.0 * 0.00002 + 0.2 / 1e6; // the lines say 1024 MB: 1 GB
                                                                                    // Kokoro: its Lambda time and a 400th of 2 instances × the window × $1.8.
    let kokoro = 1000.0 * (lambda(4000.0) + 2.0 * hours * 1.8 / 400.0);
    // Polly: its Lambda time and 150 characters at $30 a million.
    let polly = 1000.0 * (lambda(5000.0) + 150.0 * 30.0 / 1e6);
    assert!((r.arms[0].cost_per_1000 - kokoro).abs() < 1e-9, "{} vs {kokoro}", r.arms[0].cost_per_1000);
    assert!((r.arms[1].cost_per_1000 - polly).abs() < 1e-9, "{} vs {polly}", r.arms[1].cost_per_1000);
    let cost = r.comparisons.iter().find(|c| c.measure == "cost_per_1000").unwrap();
    assert!((cost.difference.unwrap().estimate - (polly - kokoro)).abs() < 1e-9);
    // Every answer of an arm costs the same here: the interval is the point.
    assert!(cost.difference.unwrap().half_width() < 1e-9);
    assert_eq!(cost.better.as_deref(), Some(if kokoro < polly { "kokoro" } else { "polly" }));
}

#[test]
fn a_handful_of_answers_is_not_enough_to_tell() {
    let lines = Lines::read(&log(8, 42, 1_796_198_400_000));
    let r = report::build(&lines, &Options { prices: prices(), ..Default::default() }).unwrap();
    assert!(r.verdict.starts_with("Not enough data yet: kokoro 8, polly 8 answers"), "{}", r.verdict);
    assert!(r.verdict.contains("about 22 more"), "{}", r.verdict);
    assert!(r.comparisons.iter().all(|c| c.better.is_none() && c.more_answers_per_arm == Some(22)));
}

#[test]
fn a_difference_not_yet_told_asks_for_about_as_many_answers_as_it_takes() {
    // Stalls in a fifth of one arm's answers against three tenths of the other's: on 40 answers an arm
    // the interval spans zero, and the report says about how many more answers would tell.
    let steadier = Arm { name: "kokoro", stall_chance: 0.2, ..KOKORO };
    let shakier = Arm { name: "polly", stall_chance: 0.3, ..KOKORO };
    let stalls = |per_arm: usize, seed: u64| {
        let lines = Lines::read(&log_of([Arm { ..steadier }, Arm { ..shakier }], per_arm, seed, 1_796_198_400_000));
        let r = report::build(&lines, &Options { prices: prices(), ..Default::default() }).unwrap();
        r.comparisons.into_iter().find(|c| c.measure == "stalls_per_answer").unwrap()
    };
    // Some samples of 40 tell by chance; the first seed whose sample does not, with the difference the
    // right way round, is the case this test is about.
    let (seed, early) = (1..50)
        .map(|seed| (seed, stalls(40, seed)))
        .find(|(_, c)| c.difference.is_some_and(|d| !d.excludes_zero() && d.estimate > 0.0))
        .expect("a sample of 40 that does not yet tell");
    assert!(early.better.is_none(), "{early:?}");
    // A power calculation for a true 0.1 difference of these rates asks about 140 an arm in all.
    let more = early.more_answers_per_arm.expect("a difference seen but not yet told asks for more answers");
    assert!((30..=400).contains(&more), "{more} more answers per arm");
    // Given those answers, and as many again for the estimate's own noise, the difference tells.
    let later = stalls(2 * (40 + more), seed);
    assert!(later.difference.unwrap().excludes_zero(), "{later:?}");
    assert_eq!(later.better.as_deref(), Some("kokoro"));
}

#[test]
fn an_experiment_is_chosen_and_others_are_left_out() {
    let mut text = log(40, 1, 1_796_198_400_000);
    text.push_str(&log(5, 2, 1_796_198_400_000).replace("\"voices\"", "\"older\""));
    let lines = Lines::read(&text);
    let r = report::build(&lines, &Options::default()).unwrap();
    assert_eq!((r.experiment.as_deref(), r.other_experiments.clone()), (Some("voices"), vec!["older".to_string()]));
    assert_eq!(r.arms[0].answers, 40);
    let older = report::build(&lines, &Options { experiment: Some("older".into()), ..Default::default() }).unwrap();
    assert_eq!(older.arms[0].answers, 5);
    let none = report::build(&lines, &Options { experiment: Some("nope".into()), ..Default::default() }).unwrap_err();
    assert!(none.contains("voices") && none.contains("older"), "{none}");
    assert!(report::build(&Lines::read("no metric lines here"), &Options::default()).unwrap_err().contains("EARSHOT_METRICS_NAMESPACE"));
}
