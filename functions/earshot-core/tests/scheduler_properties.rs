//! The scheduler under random agents, random backends and random departures, in virtual time: whatever
//! happens, the stream keeps the protocol's ordering rules, ends with at most one `done` or `error`
//! (exactly one unless the conversation was cancelled or the client left), speaks every word of a
//! completed answer in order, holds no more sentences at a backend than its bound, releases nothing
//! of a buffered answer before the agent is done, and lets go of the agent and every backend session
//! (through the switcher, when there is a second backend) when it ends.

mod scheduler_harness;

use std::sync::Arc;
use std::time::Duration;

use earshot_core::failover::{Arm, Failover};
use earshot_core::scheduler::{Outcome, Release, SchedulerConfig};
use proptest::prelude::*;
use scheduler_harness::*;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const WORDS: &[&str] =
    &["the", "order", "shipped", "today", "and", "it", "arrives", "on", "Friday", "we", "checked", "your", "account", "twice", "price", "is", "lower", "now"];
const MARKS: &[&str] = &["", "", "", "", ",", ".", "?", "!", ":", ";"];

#[derive(Debug, Clone)]
struct Case {
    /// (delta, wait before it in ms, pause after it)
    deltas: Vec<(String, u64, bool)>,
    ending: u8,
    plans: Vec<Plan>,
    fallback: Option<Vec<Plan>>,
    max_in_flight: usize,
    buffered: bool,
    idle: bool,
    cancel_at: Option<u64>,
    leave_after: Option<usize>,
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec((0..WORDS.len(), 0..MARKS.len()), 1..40).prop_map(|words| {
        let mut text = String::new();
        for (i, (w, m)) in words.iter().enumerate() {
            if i > 0 {
                text.push(' ');
            }
            text.push_str(WORDS[*w]);
            text.push_str(MARKS[*m]);
        }
        text
    })
}

/// Cuts `text` into deltas at the given byte lengths (all ASCII here), with waits and pauses.
fn deltas(text: String, cuts: Vec<(usize, u64, bool)>) -> Vec<(String, u64, bool)> {
    let mut out = Vec::new();
    let mut rest = text.as_str();
    let mut cuts = cuts.into_iter().cycle();
    while !rest.is_empty() {
        let (n, wait, pause) = cuts.next().expect("a cycle");
        let n = n.min(rest.len());
        out.push((rest[..n].to_string(), wait, pause));
        rest = &rest[n..];
    }
    out
}

fn plan() -> impl Strategy<Value = Plan> {
    prop_oneof![
        8 => (0u64..500, 1u32..5, 0u64..100).prop_map(|(first, chunks, gap)| speak_ms(first, chunks, gap)),
        1 => (0u64..300).prop_map(|after| Plan::Fail { after: Duration::from_millis(after), code: "backend_unavailable" }),
        1 => Just(Plan::FailAfterAudio { code: "backend_timeout" }),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        text(),
        prop::collection::vec((1usize..12, prop_oneof![4 => Just(0u64), 1 => 0u64..400], prop::bool::weighted(0.05)), 1..8),
        prop_oneof![8 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)],
        prop::collection::vec(plan(), 1..6),
        prop::option::weighted(0.3, prop::collection::vec(plan(), 1..4)),
        1usize..5,
        any::<bool>(),
        prop::bool::weighted(0.8),
        prop::option::weighted(0.3, 0u64..5000),
        prop::option::weighted(0.1, 1usize..30),
    )
        .prop_map(|(text, cuts, ending, plans, fallback, max_in_flight, buffered, idle, cancel_at, leave_after)| Case {
            deltas: deltas(text, cuts),
            ending,
            plans,
            fallback,
            max_in_flight,
            buffered,
            idle,
            cancel_at,
            leave_after,
        })
}

fn planner(plans: Vec<Plan>) -> impl Fn(u32) -> Plan + Send + 'static {
    move |i| plans[i as usize % plans.len()].clone()
}

/// The text's letters: a pause may split a word (the agent said "speak now" inside it), and a piece
/// that is punctuation alone is not spoken, but no letter may be lost, repeated or moved.
fn letters(text: &str) -> String {
    text.chars().filter(|c| c.is_alphanumeric()).collect()
}

fn check(case: Case) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().expect("a runtime");
    rt.block_on(async move {
        let origin = Instant::now();
        let mut steps = Vec::new();
        let mut input = String::new();
        for (delta, wait, pause) in &case.deltas {
            if *wait > 0 {
                steps.push(wait_ms(*wait));
            }
            steps.push(say(delta));
            input.push_str(delta);
            if *pause {
                steps.push(Step::Pause);
            }
        }
        steps.push(match case.ending {
            0 => Step::Done,
            1 => Step::Fail("agent_failed"),
            _ => Step::Hangup,
        });
        let (agent, agent_probe) = agent(steps, origin);
        let (session, backend_probe) = backend(planner(case.plans.clone()), origin);
        let cancel = CancellationToken::new();
        // With a second backend the scheduler speaks through the switcher, as in production.
        let (session, fallback_probe) = match case.fallback.clone() {
            Some(plans) => {
                let (fallback, probe) = backend(planner(plans), origin);
                let arms = vec![
                    Arm { backend: Arc::new(ScriptedBackend::new("primary", session, Duration::ZERO)), voice: "test".into() },
                    Arm { backend: Arc::new(ScriptedBackend::new("fallback", fallback, Duration::from_millis(20))), voice: "test".into() },
                ];
                let opened = Failover::new(arms).open_arms("c", &cancel).await.map_err(|(_, e)| TestCaseError::fail(format!("cannot open: {e}")))?;
                (opened.session, Some(probe))
            }
            None => (session, None),
        };
        let setup = Setup {
            cfg: SchedulerConfig {
                idle_release: if case.idle { Some(Duration::from_millis(150)) } else { None },
                max_in_flight: case.max_in_flight,
                ..Default::default()
            },
            release: if case.buffered { Release::Buffered } else { Release::Incremental },
            cancel_at: case.cancel_at.map(Duration::from_millis),
            client: Client { leave_after: case.leave_after, ..Default::default() },
            language: None,
        };
        let run = tokio::time::timeout(Duration::from_secs(3600), run_cancelled_by(agent, session, setup, cancel, origin))
            .await
            .map_err(|_| TestCaseError::fail("the conversation never ended"))?;
        check_protocol(&run).map_err(|broken| TestCaseError::fail(format!("{broken}; events {:?}", run.kinds())))?;
        match &run.outcome {
            Outcome::Completed if !run.client_left => {
                prop_assert_eq!(case.ending, 0, "completed though the agent did not finish");
                prop_assert_eq!(letters(&run.sentences().concat()), letters(&input), "a completed answer speaks every letter, in order");
            }
            Outcome::Cancelled => prop_assert_eq!(Some(run.ended_ms), case.cancel_at, "cancellation ends the conversation at once"),
            Outcome::ClientGone => prop_assert!(case.leave_after.is_some()),
            // The client here reads everything it takes at once: it never stalls.
            Outcome::ClientStalled => prop_assert!(false, "a client that reads was held to be stalled"),
            Outcome::Completed | Outcome::Failed(_) => {}
        }
        // The bounds: never more sentences at a backend than the in-flight bound (a fallback is sent
        // again only what was in flight), and nothing of a buffered answer before the agent is done.
        let bound = case.max_in_flight.max(1);
        for probe in std::iter::once(&backend_probe).chain(fallback_probe.as_ref()) {
            let log = probe.log();
            prop_assert!(log.max_outstanding <= bound, "{} sentences at a backend at once, bound {}", log.max_outstanding, bound);
            if case.buffered {
                let done = run.timeline.agent_done_ms;
                prop_assert!(
                    log.spoken.iter().all(|(_, _, at)| done.is_some_and(|d| *at as f64 + 0.5 >= d)),
                    "buffered, spoken before the agent was done ({:?}): {:?}",
                    done,
                    log.spoken
                );
            }
        }
        // Whatever the end, both sides are let go: the agent, and every backend session the relay held.
        tokio::time::sleep(Duration::from_millis(1)).await;
        prop_assert!(agent_probe.log().stopped_ms.is_some(), "the agent outlived the conversation");
        prop_assert!(backend_probe.log().dropped_ms.is_some(), "the backend session outlived the conversation");
        if let Some(probe) = fallback_probe {
            let log = probe.log();
            prop_assert!(log.spoken.is_empty() || log.dropped_ms.is_some(), "the fallback session outlived the conversation");
        }
        Ok(())
    })
}

proptest! {
    // The regressions file beside this one is replayed first (proptest's default persistence).
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn any_conversation_keeps_the_protocol(case in case()) {
        check(case)?;
    }
}
