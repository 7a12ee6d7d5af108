//! Time limits on an agent, whatever it is: an agent that accepts a request and never answers, or goes
//! silent mid-answer, must not hold a conversation (and the voice session opened for it) until some
//! outer limit, minutes away, notices. Three deadlines, each with its own code, so a log says which
//! step hung:
//!
//! | deadline | from | to | code |
//! | --- | --- | --- | --- |
//! | `response` | the request | the agent's stream exists (an HTTP agent: its response headers) | `agent_no_response` |
//! | `first_event` | the stream exists | its first event (text, a pause or the end) | `agent_first_token_timeout` |
//! | `between_events` | each event | the next | `agent_stalled` |
//!
//! A pause (a tool call the agent signals) is an event like any other: a tool that runs longer than
//! `between_events` ends the answer, so that limit should exceed the slowest tool. On a deadline the
//! agent's token is cancelled (its request stops) and the stream ends with the error; the scheduler
//! then ends the conversation as for any agent failure (with failover before the first audio, where a
//! backend failed: an agent's silence is not the voice's fault).
//!
//! The limits wrap [`AgentSource::start`] from outside, so every agent gets them alike and none has to
//! remember; under a paused tokio clock they run in virtual time.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::{AgentError, AgentEvent, AgentInput, AgentSource, AgentStream, AGENT_CHANNEL};

/// The codes of the three deadlines.
pub mod codes {
    /// The agent did not answer the request within the `response` deadline.
    pub const NO_RESPONSE: &str = "agent_no_response";
    /// The agent's answer started but brought no first event within the `first_event` deadline.
    pub const FIRST_TOKEN_TIMEOUT: &str = "agent_first_token_timeout";
    /// The agent was silent between two events for longer than the `between_events` deadline.
    pub const STALLED: &str = "agent_stalled";
}

/// How long an agent may take at each step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentDeadlines {
    /// From the request to the agent's stream existing (an HTTP agent: its response headers).
    pub response: Duration,
    /// From the stream existing to its first event (text, a pause or the end).
    pub first_event: Duration,
    /// From each event to the next.
    pub between_events: Duration,
}

/// The agent's time limits by default, in milliseconds (the settings' flags read them too).
pub mod defaults {
    /// From the request to the agent's answer starting.
    pub const RESPONSE_MS: u64 = 10_000;
    /// From the answer starting to its first event.
    pub const FIRST_EVENT_MS: u64 = 30_000;
    /// Between two events.
    pub const BETWEEN_EVENTS_MS: u64 = 30_000;
}

impl Default for AgentDeadlines {
    /// Limits that suit voice: a caller waits seconds, not minutes, before hearing that something broke.
    fn default() -> Self {
        AgentDeadlines {
            response: Duration::from_millis(defaults::RESPONSE_MS),
            first_event: Duration::from_millis(defaults::FIRST_EVENT_MS),
            between_events: Duration::from_millis(defaults::BETWEEN_EVENTS_MS),
        }
    }
}

impl AgentDeadlines {
    /// Refuses a limit of zero (every answer would fail) or over an hour (no limit in effect).
    pub fn check(&self) -> Result<(), String> {
        for (name, limit) in [("response", self.response), ("first event", self.first_event), ("between events", self.between_events)] {
            if limit.is_zero() || limit > Duration::from_secs(3600) {
                return Err(format!("the agent's {name} deadline must be between 1 ms and an hour, not {limit:?}"));
            }
        }
        Ok(())
    }

    /// Starts `agent` under these deadlines: its stream, relayed with the between-event limits.
    pub async fn start(&self, agent: &dyn AgentSource, input: AgentInput, cancel: CancellationToken) -> Result<AgentStream, AgentError> {
        // Text to speak as given goes to `speak_text`, the one place it is decided.
        let started = async {
            match input {
                AgentInput::Text(text) => agent.speak_text(text, cancel.clone()).await,
                input => agent.start(input, cancel.clone()).await,
            }
        };
        let inner = match tokio::time::timeout(self.response, started).await {
            Ok(started) => started?,
            Err(_) => {
                cancel.cancel();
                return Err(AgentError::new(codes::NO_RESPONSE, format!("{} did not answer within {} ms", agent.name(), self.response.as_millis()), true));
            }
        };
        let (tx, rx) = mpsc::channel(AGENT_CHANNEL);
        crate::tasks::spawn(relay(inner, tx, *self, agent.name().to_string(), cancel));
        Ok(rx)
    }
}

/// Forwards the agent's events until its end, or until a deadline passes (then the error, and the
/// agent is cancelled). Stops when the scheduler lets go of its end.
async fn relay(mut inner: AgentStream, tx: mpsc::Sender<Result<AgentEvent, AgentError>>, limits: AgentDeadlines, name: String, cancel: CancellationToken) {
    let mut first = true;
    loop {
        let limit = if first { limits.first_event } else { limits.between_events };
        let next = tokio::select! {
            _ = tx.closed() => return,
            next = tokio::time::timeout(limit, inner.recv()) => next,
        };
        let item = match next {
            Ok(Some(item)) => item,
            // The agent's task ended without a last event: the scheduler reports it (`agent_ended`).
            Ok(None) => return,
            Err(_) => {
                cancel.cancel();
                let (code, what) = if first { (codes::FIRST_TOKEN_TIMEOUT, "began no answer") } else { (codes::STALLED, "went silent mid-answer") };
                let _ = tx.send(Err(AgentError::new(code, format!("{name} {what} for {} ms", limit.as_millis()), true))).await;
                return;
            }
        };
        first = false;
        let last = !matches!(item, Ok(AgentEvent::Delta(_) | AgentEvent::Pause));
        if tx.send(item).await.is_err() || last {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;

    /// An agent that takes `start_after` to answer, then sends `events` each after its delay, then
    /// holds its stream open; it records whether it was cancelled.
    struct Slow {
        start_after: Duration,
        events: Vec<(Duration, AgentEvent)>,
        cancelled: CancellationToken,
    }

    #[async_trait]
    impl AgentSource for Slow {
        fn name(&self) -> &str {
            "the slow agent"
        }
        async fn start(&self, _: AgentInput, cancel: CancellationToken) -> Result<AgentStream, AgentError> {
            tokio::time::sleep(self.start_after).await;
            let (tx, rx) = mpsc::channel(4);
            let (events, cancelled) = (self.events.clone(), self.cancelled.clone());
            tokio::spawn(async move {
                for (after, event) in events {
                    tokio::time::sleep(after).await;
                    let _ = tx.send(Ok(event)).await;
                }
                cancel.cancelled().await;
                cancelled.cancel();
                drop(tx);
            });
            Ok(rx)
        }
    }

    fn slow(start_after_ms: u64, events: &[(u64, &str)]) -> Slow {
        let events = events
            .iter()
            .map(|(ms, e)| {
                let event = match *e {
                    "pause" => AgentEvent::Pause,
                    "done" => AgentEvent::Done,
                    text => AgentEvent::Delta(text.to_string()),
                };
                (Duration::from_millis(*ms), event)
            })
            .collect();
        Slow { start_after: Duration::from_millis(start_after_ms), events, cancelled: CancellationToken::new() }
    }

    const LIMITS: AgentDeadlines =
        AgentDeadlines { response: Duration::from_secs(10), first_event: Duration::from_secs(30), between_events: Duration::from_secs(20) };

    /// What the stream gave, and when (virtual ms after the start).
    async fn run(agent: &Slow) -> (Vec<String>, u128) {
        let begun = tokio::time::Instant::now();
        let mut seen = Vec::new();
        match LIMITS.start(agent, AgentInput::prompt("hi"), CancellationToken::new()).await {
            Err(e) => seen.push(format!("error {}", e.code)),
            Ok(mut rx) => {
                while let Some(item) = rx.recv().await {
                    seen.push(match item {
                        Ok(AgentEvent::Delta(t)) => t,
                        Ok(AgentEvent::Pause) => "pause".into(),
                        Ok(AgentEvent::Done | AgentEvent::DoneUnmarked) => "done".into(),
                        Err(e) => format!("error {}", e.code),
                    });
                }
            }
        }
        (seen, begun.elapsed().as_millis())
    }

    #[tokio::test(start_paused = true)]
    async fn an_agent_that_never_answers_fails_at_the_response_deadline() {
        let agent = slow(3_600_000, &[]);
        assert_eq!(run(&agent).await, (vec!["error agent_no_response".to_string()], 10_000));
    }

    #[tokio::test(start_paused = true)]
    async fn an_agent_that_answers_but_never_begins_fails_at_the_first_event_deadline() {
        let agent = slow(2_000, &[]);
        assert_eq!(run(&agent).await, (vec!["error agent_first_token_timeout".to_string()], 32_000));
        tokio::task::yield_now().await;
        assert!(agent.cancelled.is_cancelled(), "the agent's request is stopped");
    }

    #[tokio::test(start_paused = true)]
    async fn an_agent_silent_mid_answer_fails_at_the_between_events_deadline_counted_from_its_last_event() {
        // 29 s to its first word (inside 30), then a pause at 19 s (inside 20), then nothing.
        let agent = slow(0, &[(29_000, "Hello."), (19_000, "pause")]);
        let (seen, at) = run(&agent).await;
        assert_eq!(seen, ["Hello.", "pause", "error agent_stalled"]);
        assert_eq!(at, 29_000 + 19_000 + 20_000);
        tokio::task::yield_now().await;
        assert!(agent.cancelled.is_cancelled());
    }

    #[tokio::test(start_paused = true)]
    async fn an_agent_within_every_deadline_is_relayed_whole() {
        let agent = slow(9_000, &[(1, "One. "), (19_000, "Two."), (10, "done")]);
        let (seen, at) = run(&agent).await;
        assert_eq!(seen, ["One. ", "Two.", "done"]);
        assert_eq!(at, 9_000 + 1 + 19_000 + 10);
    }

    #[test]
    fn limits_of_zero_or_over_an_hour_are_refused() {
        assert!(AgentDeadlines::default().check().is_ok());
        assert!(AgentDeadlines { response: Duration::ZERO, ..Default::default() }.check().is_err());
        assert!(AgentDeadlines { between_events: Duration::from_secs(7200), ..Default::default() }.check().is_err());
    }
}
