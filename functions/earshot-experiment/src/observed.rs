//! The capacity a deployment showed: the knee of a self-hosted voice read from the gateway's metric lines
//! instead of a benchmark. `earshot plan --observed` uses it where the endpoint's own instance type was never
//! measured, or to check a measurement against real traffic.
//!
//! It judges as the capacity benchmark judges (`bench/src/capacity.rs`), on answers as they came:
//! - *the load an answer met*: the most of the backend's answers open at one moment while it waited for its
//!   first audio (itself included; the whole conversation for one that never had audio), over the instances
//!   the endpoint had. A burst of k that arrive together all meet k, whatever their order; answers that came
//!   and went one after another during a long wait are not counted as if at once. A line says when it was
//!   written and the conversation's wall time (`ComputeTime`), so its start is the one less the other. Lines
//!   of gateways before `ComputeTime` are left out.
//! - *the budget*: twice the median first audio of answers that met no other.
//! - *a level* (k conversations at once per instance) holds when it has at least [`MIN_ANSWERS`] answers,
//!   the p95 of their first audio is within the budget, and at most [`MAX_TROUBLED_SHARE`] of them stalled
//!   audibly inside a sentence (longer than [`STALL_MS`] in all, the benchmark's threshold) or failed. A level
//!   whose every answer failed before its first audio does not hold. Real traffic is never spotless: one stalled answer in thousands is the
//!   network's, not the instance's; the benchmark's few conversations a level make its "none" the same rule.
//! - *the knee* is the last level of the unbroken holding run from one. A level with too few answers ends
//!   the run unjudged, and the knee is then "at least": traffic never went there.

use serde::Serialize;

use crate::lines::Answer;
use crate::stats::percentile;

/// Answers a level needs before its p95 is taken.
pub const MIN_ANSWERS: usize = 5;
/// The share of a level's answers that may have stalled or failed.
pub const MAX_TROUBLED_SHARE: f64 = 0.01;
/// Silence inside sentences, in all, that a listener hears as a stall (the benchmark's threshold; the
/// gateway counts any underrun past a few milliseconds).
pub const STALL_MS: f64 = 50.0;

/// One level: answers that met `conversations` at once per instance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Level {
    /// Conversations at once per instance.
    pub conversations: u32,
    /// Answers that met this load.
    pub answers: usize,
    /// The 95th percentile of their time to first audio, in milliseconds; `None` when none had audio.
    pub p95_first_audio_ms: Option<f64>,
    /// Answers that stalled inside a sentence or failed.
    pub troubled: usize,
    /// `None`: too few answers to judge.
    pub holds: Option<bool>,
}

/// What a deployment's answers show of one backend's capacity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Observed {
    /// The backend judged (`kokoro`).
    pub backend: String,
    /// Answers of the backend whose start is known.
    pub answers: usize,
    /// Twice the median first audio of answers alone; `None` with too few of them.
    pub budget_ms: Option<f64>,
    /// Every level from one conversation at once to the highest the answers met.
    pub levels: Vec<Level>,
    /// The last level of the unbroken holding run from one; `None` when one was not judged or failed.
    pub knee: Option<u32>,
    /// Whether a judged level above the knee failed (otherwise the knee is "at least").
    pub bounded: bool,
    /// The median wall time of the answers that completed, in seconds: how long an answer holds its
    /// conversation.
    pub answer_seconds: Option<f64>,
}

/// The capacity `backend` showed in `answers`, with `instances` behind it (the endpoint's average through
/// the window; 1 for `earshot serve` on one container).
pub fn capacity(answers: &[Answer], backend: &str, instances: f64) -> Observed {
    debug_assert!(instances >= 1.0, "the caller refuses fewer than one instance");
    let instances = instances.max(1.0);
    // (start, end, answer) of the backend's answers whose wall time is known.
    let spans: Vec<(f64, f64, &Answer)> =
        answers.iter().filter(|a| a.backend == backend).filter_map(|a| a.compute_ms.map(|wall| (a.epoch_ms as f64 - wall, a.epoch_ms as f64, a))).collect();
    // The most answers open at one moment of [from, to]: the count only rises at a start, so it is
    // highest at `from` or at a start inside the interval. Starts and ends sorted, each count is two searches.
    let mut starts: Vec<f64> = spans.iter().map(|(s, _, _)| *s).collect();
    let mut ends: Vec<f64> = spans.iter().map(|(_, e, _)| *e).collect();
    starts.sort_by(f64::total_cmp);
    ends.sort_by(f64::total_cmp);
    let open_at = |t: f64| starts.partition_point(|&s| s <= t) - ends.partition_point(|&e| e <= t);
    let load = |from: f64, to: f64| {
        let inside = &starts[starts.partition_point(|&s| s <= from)..starts.partition_point(|&s| s <= to)];
        inside.iter().map(|&t| open_at(t)).fold(open_at(from), usize::max).max(1)
    };
    let mut by_level: std::collections::BTreeMap<u32, Vec<&Answer>> = Default::default();
    for (start, end, answer) in &spans {
        let waited_until = answer.ttfa_ms.map_or(*end, |ttfa| start + ttfa);
        let per_instance = (load(*start, waited_until) as f64 / instances).ceil().max(1.0) as u32;
        by_level.entry(per_instance).or_default().push(answer);
    }
    let first_audio = |of: &[&Answer]| of.iter().filter_map(|a| a.ttfa_ms).collect::<Vec<f64>>();
    let alone = by_level.get(&1).map(|a| first_audio(a)).unwrap_or_default();
    let budget_ms = (alone.len() >= MIN_ANSWERS).then(|| 2.0 * percentile(&alone, 50.0).unwrap_or(f64::NAN));
    let top = by_level.keys().last().copied().unwrap_or(0);
    let levels: Vec<Level> = (1..=top)
        .map(|k| {
            let of = by_level.get(&k).map(Vec::as_slice).unwrap_or_default();
            let troubled = of.iter().filter(|a| a.stall_ms > STALL_MS || a.failure.is_some()).count();
            let p95 = percentile(&first_audio(of), 95.0);
            let holds = match (budget_ms, p95) {
                _ if of.len() < MIN_ANSWERS => None,
                (Some(budget), Some(p95)) => Some(p95 <= budget && troubled as f64 <= MAX_TROUBLED_SHARE * of.len() as f64),
                // Enough answers and not one first audio: nothing held.
                (Some(_), None) => Some(false),
                (None, _) => None,
            };
            Level { conversations: k, answers: of.len(), p95_first_audio_ms: p95, troubled, holds }
        })
        .collect();
    let run: Vec<&Level> = levels.iter().take_while(|l| l.holds == Some(true)).collect();
    let knee = run.last().map(|l| l.conversations);
    let bounded = levels.get(run.len()).is_some_and(|l| l.holds == Some(false));
    let mut walls: Vec<f64> = spans.iter().filter(|(_, _, a)| a.ending == "completed").map(|(s, e, _)| (e - s) / 1000.0).collect();
    walls.sort_by(f64::total_cmp);
    Observed { backend: backend.to_string(), answers: spans.len(), budget_ms, levels, knee, bounded, answer_seconds: percentile(&walls, 50.0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer of `backend` that started at `start_ms` and took `wall_ms`, first audio at `ttfa_ms`.
    fn answer(backend: &str, start_ms: u64, wall_ms: u64, ttfa_ms: f64) -> Answer {
        Answer { epoch_ms: start_ms + wall_ms, compute_ms: Some(wall_ms as f64), ..Answer::plain(backend, ttfa_ms) }
    }

    /// `n` answers at once, every `apart` ms a burst: each meets `n` (itself and the others).
    fn bursts(n: u64, times: u64, from: u64, ttfa_ms: f64) -> Vec<Answer> {
        (0..times).flat_map(|t| (0..n).map(move |i| answer("kokoro", from + t * 20_000 + i, 10_000, ttfa_ms))).collect()
    }

    #[test]
    fn the_knee_is_the_last_level_within_twice_the_lone_median() {
        // Alone: 300 ms (budget 600); two at once: 500 ms; three at once: 900 ms.
        let mut answers = bursts(1, 6, 0, 300.0);
        answers.extend(bursts(2, 3, 1_000_000, 500.0));
        answers.extend(bursts(3, 2, 2_000_000, 900.0));
        answers.push(answer("polly", 0, 10_000, 100.0)); // another backend's: not counted
        let o = capacity(&answers, "kokoro", 1.0);
        assert_eq!(o.budget_ms, Some(600.0));
        let judged: Vec<(u32, usize, Option<bool>)> = o.levels.iter().map(|l| (l.conversations, l.answers, l.holds)).collect();
        assert_eq!(judged, [(1, 6, Some(true)), (2, 6, Some(true)), (3, 6, Some(false))]);
        assert_eq!((o.knee, o.bounded, o.answers), (Some(2), true, 18));
        assert_eq!(o.answer_seconds, Some(10.0));
    }

    #[test]
    fn the_load_is_shared_over_the_instances() {
        // Two at once on two instances is one each: every answer is "alone".
        let o = capacity(&bursts(2, 3, 0, 300.0), "kokoro", 2.0);
        assert_eq!(o.levels.iter().map(|l| (l.conversations, l.answers)).collect::<Vec<_>>(), [(1, 6)]);
        assert_eq!((o.knee, o.bounded), (Some(1), false), "no level above was seen: at least one");
    }

    #[test]
    fn a_level_with_too_few_answers_ends_the_run_unjudged() {
        let mut answers = bursts(1, 6, 0, 300.0);
        answers.extend(bursts(2, 2, 1_000_000, 300.0)); // four answers: too few
        answers.extend(bursts(3, 2, 2_000_000, 300.0));
        let o = capacity(&answers, "kokoro", 1.0);
        assert_eq!(o.levels[1].holds, None);
        assert_eq!((o.knee, o.bounded), (Some(1), false));
    }

    #[test]
    fn a_stall_or_failure_past_the_share_breaks_a_level_and_a_rare_one_does_not() {
        let mut answers = bursts(1, 200, 0, 300.0);
        answers[5].stall_ms = STALL_MS + 1.0; // one in 200 alone: the network's
        answers[6].stall_ms = STALL_MS; // not heard as a stall
        answers.extend(bursts(2, 3, 10_000_000, 300.0));
        let failed = answers.len() - 1;
        answers[failed].failure = Some("backend_gone".into());
        let o = capacity(&answers, "kokoro", 1.0);
        assert_eq!((o.levels[0].troubled, o.levels[0].holds), (1, Some(true)));
        assert_eq!((o.levels[1].troubled, o.levels[1].holds), (1, Some(false)));
        assert_eq!((o.knee, o.bounded), (Some(1), true));
    }

    #[test]
    fn answers_that_came_and_went_one_after_another_during_a_long_wait_were_not_at_once() {
        // A long wait (5 s to first audio) while short answers came and went one at a time: never more than
        // two open at one moment.
        let mut answers = bursts(1, 6, 0, 300.0);
        answers.push(answer("kokoro", 1_000_000, 6_000, 5_000.0));
        answers.extend((0..4).map(|i| answer("kokoro", 1_000_100 + i * 1_000, 900, 300.0)));
        let o = capacity(&answers, "kokoro", 1.0);
        let counts: Vec<(u32, usize)> = o.levels.iter().map(|l| (l.conversations, l.answers)).collect();
        assert_eq!(counts, [(1, 6), (2, 5)]);
    }

    #[test]
    fn a_level_whose_every_answer_failed_does_not_hold() {
        let mut answers = bursts(1, 6, 0, 300.0);
        let mut failed = bursts(2, 3, 1_000_000, 300.0);
        for a in &mut failed {
            (a.ttfa_ms, a.failure) = (None, Some("backend_gone".into()));
        }
        answers.extend(failed);
        let o = capacity(&answers, "kokoro", 1.0);
        assert_eq!(o.levels[1].holds, Some(false));
        assert_eq!((o.knee, o.bounded), (Some(1), true));
    }

    #[test]
    fn without_enough_answers_alone_there_is_no_budget_and_no_knee() {
        let o = capacity(&bursts(2, 5, 0, 300.0), "kokoro", 1.0);
        assert_eq!((o.budget_ms, o.knee, o.bounded), (None, None, false));
        let older = Answer { compute_ms: None, ..Answer::plain("kokoro", 300.0) };
        assert_eq!(capacity(&[older], "kokoro", 1.0).answers, 0, "a line without its wall time has no start");
    }
}
