//! The scheduler's rules in virtual time (tokio's paused clock): a scripted agent and an in-memory
//! backend, no model, deterministic to the millisecond whatever the machine is doing.

use std::time::Duration;

use bytes::Bytes;
use earshot_core::agent::{AgentEvent, AgentStream};
use earshot_core::protocol::{AudioFormat, ServerEvent};
use earshot_core::scheduler::{self, Fallback, Outcome, SchedulerConfig};
use earshot_core::speech::{SpeechCommand, SpeechError, SpeechEvent, SpeechSession};
use earshot_core::timeline::{Clock, Timeline};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// An in-memory backend session: each sentence takes `per_sentence` of virtual time, then gives one
/// chunk of audio and its end; `Finish` closes the session once every sentence is done.
fn backend(per_sentence: Duration) -> SpeechSession {
    let (commands_tx, mut commands) = mpsc::channel::<SpeechCommand>(32);
    let (events_tx, events) = mpsc::channel(32);
    tokio::spawn(async move {
        while let Some(command) = commands.recv().await {
            match command {
                SpeechCommand::Speak(request) => {
                    tokio::time::sleep(per_sentence).await;
                    let _ = events_tx.send(SpeechEvent::Audio { index: request.index, pcm: Bytes::from_static(&[0, 0, 1, 0]) }).await;
                    let _ = events_tx.send(SpeechEvent::Finished { index: request.index }).await;
                }
                SpeechCommand::Finish => {
                    let _ = events_tx.send(SpeechEvent::Closed { billed_characters: None }).await;
                    return;
                }
            }
        }
    });
    SpeechSession { commands: commands_tx, events, format: AudioFormat::pcm_s16le(24_000), voice: "test".into() }
}

/// A backend session that fails before any audio.
fn failing_backend() -> SpeechSession {
    let (commands_tx, mut commands) = mpsc::channel::<SpeechCommand>(32);
    let (events_tx, events) = mpsc::channel(32);
    tokio::spawn(async move {
        if commands.recv().await.is_some() {
            let _ = events_tx.send(SpeechEvent::Failed(SpeechError::new("backend_gone", "gone", true))).await;
        }
        // Hold the channels open, as a session that has failed but not closed.
        std::future::pending::<()>().await;
    });
    SpeechSession { commands: commands_tx, events, format: AudioFormat::pcm_s16le(24_000), voice: "test".into() }
}

fn agent(events: Vec<AgentEvent>) -> AgentStream {
    let (tx, rx) = mpsc::channel(earshot_core::agent::AGENT_CHANNEL);
    tokio::spawn(async move {
        for event in events {
            if tx.send(Ok(event)).await.is_err() {
                return;
            }
        }
        std::future::pending::<()>().await;
    });
    rx
}

async fn run(agent: AgentStream, session: SpeechSession, cfg: SchedulerConfig, cancel: CancellationToken, fallback: Option<Fallback>) -> (Outcome, Vec<ServerEvent>) {
    let (out, mut events) = mpsc::channel(1024);
    let task = tokio::spawn(async move { scheduler::run(agent, session, out, &cfg, Clock::start(), Timeline::default(), cancel, fallback).await.0 });
    let mut seen = Vec::new();
    while let Some(event) = events.recv().await {
        seen.push(event);
    }
    (task.await.expect("the scheduler does not panic"), seen)
}

fn sentences(events: &[ServerEvent]) -> Vec<String> {
    events.iter().filter_map(|e| if let ServerEvent::Sentence(s) = e { Some(s.text.clone()) } else { None }).collect()
}

#[tokio::test(start_paused = true)]
async fn idle_release_waits_for_the_agent_not_for_earshot() {
    // One sentence at the backend at a time, each taking a second: the release queue fills and the
    // scheduler stops reading the agent, whose "50 today." is already waiting in its channel. The
    // pending "It costs $3." must not be taken for a finished sentence: the agent was not silent,
    // earshot was not listening.
    let cfg = SchedulerConfig { max_in_flight: 1, ..Default::default() };
    let agent = agent(vec![AgentEvent::Delta("First one. Second one. It costs $3.".into()), AgentEvent::Delta("50 today.".into()), AgentEvent::Done]);
    let (outcome, events) = run(agent, backend(Duration::from_secs(1)), cfg, CancellationToken::new(), None).await;
    assert_eq!(outcome, Outcome::Completed);
    assert_eq!(sentences(&events), vec!["First one.", "Second one.", "It costs $3.50 today."]);
}

#[tokio::test(start_paused = true)]
async fn idle_release_still_releases_after_real_silence() {
    // The control: the agent really pauses (nothing in its channel) with a finished sentence pending.
    let cfg = SchedulerConfig::default();
    let (tx, rx) = mpsc::channel(16);
    let session = backend(Duration::from_millis(100));
    let (out, mut events) = mpsc::channel(1024);
    let task = tokio::spawn(async move { scheduler::run(rx, session, out, &cfg, Clock::start(), Timeline::default(), CancellationToken::new(), None).await.0 });
    tx.send(Ok(AgentEvent::Delta("It shipped today.".into()))).await.unwrap();
    let started = tokio::time::Instant::now();
    let mut first_sentence_at = None;
    while let Some(event) = events.recv().await {
        if matches!(event, ServerEvent::Sentence(_)) {
            first_sentence_at = Some(started.elapsed());
            break;
        }
    }
    let at = first_sentence_at.expect("the sentence is released while the agent is silent");
    assert!(at >= Duration::from_millis(150) && at < Duration::from_millis(200), "released at {at:?}");
    tx.send(Ok(AgentEvent::Done)).await.unwrap();
    while events.recv().await.is_some() {}
    assert_eq!(task.await.unwrap(), Outcome::Completed);
}

#[tokio::test(start_paused = true)]
async fn a_client_that_leaves_during_a_hanging_failover_is_noticed() {
    // The first backend fails before any audio; the fallback's session never opens. Cancelling the
    // conversation must end it at once, not when (if ever) the fallback answers.
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        trigger.cancel();
    });
    let hanging: Fallback = Box::pin(std::future::pending());
    let agent = agent(vec![AgentEvent::Delta("Hello there. ".into()), AgentEvent::Done]);
    let started = tokio::time::Instant::now();
    let ended = tokio::time::timeout(Duration::from_secs(60), run(agent, failing_backend(), SchedulerConfig::default(), cancel, Some(hanging))).await;
    let (outcome, _) = ended.expect("the conversation ends once cancelled");
    assert_eq!(outcome, Outcome::Cancelled);
    assert!(started.elapsed() < Duration::from_millis(1100), "ended after {:?}", started.elapsed());
}
