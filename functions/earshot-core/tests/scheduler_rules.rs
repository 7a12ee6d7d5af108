//! The scheduler's rules in virtual time (tokio's paused clock): a scripted agent and an in-memory
//! backend, no model, deterministic to the millisecond whatever the machine is doing. Each test names
//! one rule from the scheduler's module docs or the protocol, and every run is also checked against
//! the protocol's ordering rules.

#![allow(clippy::disallowed_methods)] // a test spawns its own helpers; clippy.toml keeps the crates on the tracker

mod scheduler_harness;

use std::time::Duration;

use earshot_core::agent::AGENT_CHANNEL;
use earshot_core::protocol::ServerEvent;
use earshot_core::protocol::SessionInfo;
use earshot_core::scheduler::{self, Conversation, Outcome, Release, SchedulerConfig};
use earshot_core::timeline::{Clock, Timeline};
use scheduler_harness::*;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

fn assert_protocol(run: &Run) {
    if let Err(broken) = check_protocol(run) {
        panic!("{broken}\nevents: {:?}", run.kinds());
    }
}

fn is_sentence(e: &ServerEvent) -> bool {
    matches!(e, ServerEvent::Sentence(_))
}

fn is_audio(e: &ServerEvent) -> bool {
    matches!(e, ServerEvent::Audio(_))
}

fn plain(ms: u64) -> impl Fn(u32) -> Plan + Send + 'static {
    move |_| speak_ms(ms, 1, 0)
}

// --- Release ---------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn incremental_speaks_the_first_sentence_while_the_agent_still_writes() {
    let steps = vec![say("The order shipped today. It"), wait_ms(2000), say(" arrives on Friday."), Step::Done];
    let (run, _, backend) = converse(steps, |_| speak_ms(200, 3, 50), SchedulerConfig::default()).await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert_protocol(&run);
    // "It" confirms the first sentence: released at once, its audio 200 ms later, two seconds before
    // the agent finishes.
    assert_eq!(run.first_ms(is_sentence), Some(0));
    assert_eq!(run.first_ms(is_audio), Some(200));
    assert_eq!(backend.log().spoken.iter().map(|(i, _, at)| (*i, *at)).collect::<Vec<_>>(), vec![(0, 0), (1, 2000)]);
    let t = &run.timeline;
    assert_eq!((t.sentences[0].complete_ms, t.sentences[0].released_ms, t.sentences[0].tts_first_audio_ms), (0.0, Some(0.0), Some(200.0)));
    assert_eq!(t.first_audio_sent_ms, Some(200.0));
    assert_eq!(t.agent_done_ms, Some(2000.0));
    assert_eq!(t.sentences[1].complete_ms, 2000.0, "complete when its last word arrived");
    assert_eq!(t.sentences[0].audio_chunks, 3);
    assert!(!t.agent_end_unmarked);
}

#[tokio::test(start_paused = true)]
async fn the_conversations_language_chooses_the_segmenters_rules() {
    // `Me.` is the title of a French lawyer (Maître) and an English word that ends a sentence: the
    // conversation's language, as routing settled it, decides; not known, the title is not assumed.
    let answer = "Je vous présente Me. Dupont, notre avocate. Elle arrive.";
    let spoken_as = |language: Option<&str>| {
        let setup = Setup { language: language.map(|l| earshot_core::language::Language::parse(l).unwrap()), ..Default::default() };
        async move {
            let (run, _, _) = converse(vec![say(answer), Step::Done], plain(100), setup).await;
            assert_eq!(run.outcome, Outcome::Completed);
            run.sentences()
        }
    };
    assert_eq!(spoken_as(Some("fr-FR")).await, vec!["Je vous présente Me. Dupont, notre avocate.", "Elle arrive."]);
    assert_eq!(spoken_as(Some("en")).await, vec!["Je vous présente Me.", "Dupont, notre avocate.", "Elle arrive."]);
    assert_eq!(spoken_as(None).await, vec!["Je vous présente Me.", "Dupont, notre avocate.", "Elle arrive."]);
}

#[tokio::test(start_paused = true)]
async fn an_answer_ended_without_its_marker_is_spoken_whole_and_marked_in_the_timeline() {
    let steps = vec![say("The order shipped today. It arrives on Friday"), Step::DoneUnmarked];
    let (run, _, backend) = converse(steps, |_| speak_ms(50, 1, 0), SchedulerConfig::default()).await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert_protocol(&run);
    assert_eq!(backend.log().spoken.len(), 2, "the unfinished last sentence is spoken too");
    assert!(run.timeline.agent_end_unmarked);
    assert_eq!(run.timeline.agent_done_ms, Some(0.0));
}

#[tokio::test(start_paused = true)]
async fn a_backend_that_stalls_mid_sentence_is_reported_as_stalls_inside_the_sentence() {
    // Each chunk is 10 ms of audio. Every 50 ms: the voice runs dry for 40 ms twice inside sentence 0.
    // Every 5 ms: always ahead. Every 12 ms: 2 ms short, within the tolerance a player absorbs.
    for (gap, stalls, stall_ms) in [(50, 2, 80.0), (5, 0, 0.0), (12, 0, 0.0)] {
        let steps = vec![say("The order shipped today."), Step::Done];
        let (run, _, _) = converse(steps, move |_| speak_ms(200, 3, gap), SchedulerConfig::default()).await;
        assert_eq!(run.outcome, Outcome::Completed);
        let s = &run.timeline.sentences[0];
        assert_eq!((s.stalls, s.stall_ms), (stalls, stall_ms), "chunks every {gap} ms");
        let d = run.timeline.derive();
        assert_eq!((d.stalls, d.stall_ms), (stalls as usize, stall_ms), "derived, chunks every {gap} ms");
        assert!(d.gaps_ms.is_empty(), "one sentence: no gap before any sentence, only stalls inside it");
    }
}

#[tokio::test(start_paused = true)]
async fn buffered_holds_every_sentence_until_the_agent_is_done() {
    let steps = vec![say("The order shipped today. It"), wait_ms(2000), say(" arrives on Friday."), Step::Done];
    let setup = Setup { release: Release::Buffered, ..Default::default() };
    let (run, _, backend) = converse(steps, |_| speak_ms(200, 1, 0), setup).await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert_protocol(&run);
    assert_eq!(run.first_ms(is_sentence), Some(2000));
    assert_eq!(run.first_ms(is_audio), Some(2200));
    assert!(backend.log().spoken.iter().all(|(_, _, at)| *at == 2000));
    assert_eq!(run.timeline.release, "buffered", "the timeline names the conversation's policy");
    let first = &run.timeline.sentences[0];
    // Complete at 0, held until the agent finished: the timeline shows both.
    assert_eq!((first.complete_ms, first.released_ms), (0.0, Some(2000.0)));
}

#[tokio::test(start_paused = true)]
async fn a_buffered_answer_exactly_at_the_cap_is_spoken() {
    let answer = format!("{}.", "a".repeat(199));
    let setup = Setup { release: Release::Buffered, cfg: SchedulerConfig { max_answer_chars: 200, ..Default::default() }, ..Default::default() };
    let (run, _, _) = converse(vec![say(&answer), Step::Done], plain(10), setup).await;
    assert_eq!(run.outcome, Outcome::Completed, "200 characters is within a cap of 200");
}

#[tokio::test(start_paused = true)]
async fn a_buffered_answer_longer_than_the_cap_fails_and_stops_the_agent() {
    let long = "word ".repeat(30);
    let steps = vec![say(&long), wait_ms(100), say(&long), wait_ms(10_000), Step::Done];
    let setup = Setup { release: Release::Buffered, cfg: SchedulerConfig { max_answer_chars: 200, ..Default::default() }, ..Default::default() };
    let (run, agent, backend) = converse(steps, plain(10), setup).await;
    assert_protocol(&run);
    assert_eq!(run.last_error_code().as_deref(), Some("answer_too_long"));
    assert!(backend.log().spoken.is_empty(), "nothing of a refused answer is spoken");
    assert_eq!(run.ended_ms, 100);
    assert_eq!(agent.log().stopped_ms, Some(100), "the agent is stopped when the answer is refused");
}

// --- Pauses and the idle window --------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_signalled_pause_releases_unfinished_text_at_once() {
    let steps = vec![say("Let me check that for you"), Step::Pause, wait_ms(5000), say("It shipped."), Step::Done];
    let (run, _, backend) = converse(steps, plain(100), SchedulerConfig::default()).await;
    assert_protocol(&run);
    assert_eq!(run.sentences(), vec!["Let me check that for you", "It shipped."]);
    assert_eq!(backend.log().spoken[0].2, 0, "released at the pause, not after the idle window");
}

#[tokio::test(start_paused = true)]
async fn an_unsignalled_pause_inside_a_sentence_releases_nothing() {
    let steps = vec![say("Let me check that for you"), wait_ms(5000), say(" right now."), Step::Done];
    let (run, _, backend) = converse(steps, plain(100), SchedulerConfig::default()).await;
    assert_protocol(&run);
    assert_eq!(run.sentences(), vec!["Let me check that for you right now."]);
    assert_eq!(backend.log().spoken[0].2, 5000);
}

#[tokio::test(start_paused = true)]
async fn idle_release_still_releases_after_real_silence() {
    // The agent really pauses (nothing in its channel) with a finished sentence pending.
    let steps = vec![say("It shipped today."), wait_ms(3000), say(" More soon."), Step::Done];
    let (run, _, backend) = converse(steps, plain(100), SchedulerConfig::default()).await;
    assert_protocol(&run);
    assert_eq!(backend.log().spoken[0].2, 150, "released after exactly the 150 ms idle window");
    assert_eq!(run.first_ms(is_audio), Some(250));
}

#[tokio::test(start_paused = true)]
async fn without_an_idle_window_a_sentence_waits_for_the_text_that_confirms_it() {
    let steps = vec![say("It shipped today."), wait_ms(3000), say(" More soon."), Step::Done];
    let cfg = SchedulerConfig { idle_release: None, ..Default::default() };
    let (run, _, backend) = converse(steps, plain(100), cfg).await;
    assert_protocol(&run);
    assert_eq!(backend.log().spoken[0].2, 3000);
}

#[tokio::test(start_paused = true)]
async fn idle_release_does_not_cut_an_abbreviation_that_needs_what_follows() {
    // Pending text that only looks finished to a naive splitter is held through a real silence.
    for (first, rest) in [("Please ask Dr.", " Smith today."), ("I spoke to Mr.", " Brown."), ("Bring a snack, e.g.", " fruit.")] {
        let steps = vec![say(first), wait_ms(3000), say(rest), Step::Done];
        let (run, _, _) = converse(steps, plain(100), SchedulerConfig::default()).await;
        assert_protocol(&run);
        assert_eq!(run.sentences().len(), 1, "{first:?} was cut: {:?}", run.sentences());
    }
}

#[tokio::test(start_paused = true)]
async fn a_pause_after_an_ambiguous_full_stop_waits_for_the_text_that_settles_it() {
    // A slow model pauses 400 ms after each piece: a decimal, an abbreviation, an initial, a time, a
    // version, in English, French and Mandarin, are each one sentence, whatever the pause.
    for (first, rest) in [
        ("It costs $3.", "50 today."),
        ("The U.S.", " team won."),
        ("We meet at 4 p.m.", " today."),
        ("Signed by J.", " Smith."),
        ("Install version 2.", "1 now."),
        ("Il coûte 3.", "50 euros."),
        ("温度是 3.", "5 度。"),
    ] {
        let steps = vec![say(first), wait_ms(400), say(rest), Step::Done];
        let (run, _, _) = converse(steps, plain(100), SchedulerConfig::default()).await;
        assert_protocol(&run);
        assert_eq!(run.sentences().len(), 1, "{first:?} was cut: {:?}", run.sentences());
    }
}

#[tokio::test(start_paused = true)]
async fn an_ambiguous_end_the_agent_never_settles_is_released_at_the_longer_limit() {
    let steps = vec![say("It costs $3."), wait_ms(5000), say(" More soon."), Step::Done];
    let (run, _, backend) = converse(steps, plain(100), SchedulerConfig::default()).await;
    assert_protocol(&run);
    assert_eq!(run.sentences(), vec!["It costs $3.", "More soon."]);
    assert_eq!(backend.log().spoken[0].2, 2000, "released at the 2 s limit for an ambiguous end");
    // A sure end still goes at the idle window: "Sure." then a pause.
    let steps = vec![say("Sure."), wait_ms(3000), say(" Here it is."), Step::Done];
    let (run, _, backend) = converse(steps, plain(100), SchedulerConfig::default()).await;
    assert_protocol(&run);
    assert_eq!(backend.log().spoken[0].2, 150, "a sure end is released after the 150 ms idle window");
    assert_eq!(run.sentences(), vec!["Sure.", "Here it is."]);
}

#[tokio::test(start_paused = true)]
async fn the_idle_window_is_not_pushed_back_by_audio_arriving_meanwhile() {
    // The agent falls silent with "It shipped." pending while sentence 0's audio streams in, a chunk
    // every 10 ms for a second: the window counts from the agent's last delta, not from each wake-up.
    let steps = vec![say("First one is here. It shipped."), wait_ms(5000), Step::Done];
    let (run, _, backend) = converse(steps, |i| if i == 0 { speak_ms(0, 100, 10) } else { speak_ms(10, 1, 0) }, SchedulerConfig::default()).await;
    assert_protocol(&run);
    assert_eq!(run.sentences(), vec!["First one is here.", "It shipped."]);
    assert_eq!(backend.log().spoken[1].2, 150, "released 150 ms after the agent's last delta, while audio kept arriving");
}

#[tokio::test(start_paused = true)]
async fn idle_release_waits_for_the_agent_not_for_earshot() {
    // One sentence at the backend at a time, each taking a second: the release queue fills and the
    // scheduler stops reading the agent, whose "50 today." is already waiting in its channel. The
    // pending "It costs $3." must not be taken for a finished sentence: the agent was not silent,
    // earshot was not listening.
    let cfg = SchedulerConfig { max_in_flight: 1, ..Default::default() };
    let steps = vec![say("First one. Second one. It costs $3."), say("50 today."), Step::Done];
    let (run, _, _) = converse(steps, plain(1000), cfg).await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert_protocol(&run);
    assert_eq!(run.sentences(), vec!["First one.", "Second one.", "It costs $3.50 today."]);
}

#[tokio::test(start_paused = true)]
async fn the_fast_first_fragment_is_spoken_before_its_sentence_ends() {
    let mut cfg = SchedulerConfig::default();
    cfg.segmenter.fast_first_min_words = Some(3);
    let steps = vec![say("Okay so I checked, "), wait_ms(1000), say("and the order shipped."), Step::Done];
    let (run, _, backend) = converse(steps, plain(100), cfg).await;
    assert_protocol(&run);
    assert_eq!(run.sentences(), vec!["Okay so I checked,", "and the order shipped."]);
    assert!(backend.log().spoken[0].2 < 1000, "the first clause went before the rest was written");
}

// --- Backpressure ----------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn the_backend_never_holds_more_than_max_in_flight() {
    let text: String = (0..12).map(|i| format!("Sentence number {i}. ")).collect();
    for max_in_flight in [1, 2, 4] {
        let cfg = SchedulerConfig { max_in_flight, ..Default::default() };
        let (run, _, backend) = converse(vec![say(&text), Step::Done], plain(300), cfg).await;
        assert_eq!(run.outcome, Outcome::Completed);
        assert_protocol(&run);
        let log = backend.log();
        assert_eq!(log.max_outstanding, max_in_flight);
        assert_eq!(log.spoken.iter().map(|(i, _, _)| *i).collect::<Vec<_>>(), (0..12).collect::<Vec<u32>>());
    }
}

#[tokio::test(start_paused = true)]
async fn a_slow_backend_stops_the_agent_through_the_bounded_queues() {
    // A hundred one-sentence deltas, a backend that takes a second each, one at a time: the agent is
    // held back by its bounded channel rather than written into memory.
    let mut steps: Vec<Step> = (0..100).map(|i| say(&format!("Point {i}. "))).collect();
    steps.push(Step::Done);
    let cfg = SchedulerConfig { max_in_flight: 1, ..Default::default() };
    let (run, agent, _) = converse(steps, plain(1000), cfg).await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert_protocol(&run);
    assert_eq!(run.sentences().len(), 100);
    let sent_early = agent.log().delta_sent_ms.iter().filter(|at| **at < 5000).count();
    assert!(sent_early <= AGENT_CHANNEL + 8, "{sent_early} deltas taken in 5 s while 5 sentences could be spoken");
}

#[tokio::test(start_paused = true)]
async fn a_stalled_client_stops_the_backend_through_the_bounded_queues() {
    let origin = Instant::now();
    let (agent, _) = agent(vec![say("One long sentence."), Step::Done], origin);
    let (session, backend) = backend_with_capacity(|_| speak_ms(0, 1000, 1), origin, 8);
    let client = Client { capacity: 4, stall: Duration::from_secs(10), ..Default::default() };
    let probe = backend.clone();
    let sampled = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(9)).await;
        probe.log().chunks_sent
    });
    let run = run(agent, session, Setup { client, ..Default::default() }, origin).await;
    let held = sampled.await.unwrap();
    assert!(held <= 8 + 4 + 2, "the backend produced {held} chunks for a client that read none");
    assert_eq!(run.outcome, Outcome::Completed);
    assert_protocol(&run);
    assert_eq!(run.events.iter().filter(|(_, e)| is_audio(e)).count(), 1000, "nothing is lost once the client reads");
}

#[tokio::test(start_paused = true)]
async fn a_backend_silent_past_its_limit_while_it_has_sentences_ends_the_conversation() {
    // First audio 20 s after the sentence: the limit (15 s) counts from the sentence being sent.
    let steps = vec![say("The order shipped today."), Step::Done];
    let (run, _, backend) = converse(steps, |_| speak_ms(20_000, 3, 10), SchedulerConfig::default()).await;
    assert_eq!(run.last_error_code().as_deref(), Some("backend_stalled"));
    assert_eq!(run.ended_ms, 15_000);
    assert_protocol(&run);
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(backend.log().dropped_ms.is_some(), "the silent session is let go");
    // Silence between chunks counts from the last one; 14 s gaps are within the limit.
    let steps = vec![say("The order shipped today."), Step::Done];
    let (run, _, _) = converse(steps, |_| speak_ms(14_000, 3, 14_000), SchedulerConfig::default()).await;
    assert_eq!(run.outcome, Outcome::Completed);
    // Nothing to speak, nothing to wait for: an agent thinking for a minute is not the backend's silence.
    let steps = vec![say("One."), wait_ms(60_000), say(" Two."), Step::Done];
    let (run, _, _) = converse(steps, |_| speak_ms(100, 1, 0), SchedulerConfig::default()).await;
    assert_eq!(run.outcome, Outcome::Completed);
}

#[tokio::test(start_paused = true)]
async fn a_client_that_does_not_read_is_not_counted_as_the_backends_silence() {
    let origin = Instant::now();
    let (agent, _) = agent(vec![say("One long sentence."), Step::Done], origin);
    let (session, _) = backend_with_capacity(|_| speak_ms(0, 200, 1), origin, 8);
    let client = Client { capacity: 4, stall: Duration::from_secs(40), ..Default::default() };
    // Forty seconds is past the client read limit's default: this is about the backend's silence alone.
    let cfg = SchedulerConfig { client_read_timeout: None, ..Default::default() };
    let run = run(agent, session, Setup { client, cfg, ..Default::default() }, origin).await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert_protocol(&run);
}

#[tokio::test(start_paused = true)]
async fn a_client_that_takes_nothing_past_the_read_limit_ends_the_conversation_and_frees_the_backend() {
    let origin = Instant::now();
    let (agent, _) = agent(vec![say("One long sentence."), Step::Done], origin);
    let (session, backend) = backend_with_capacity(|_| speak_ms(0, 1000, 1), origin, 8);
    let client = Client { capacity: 4, stall: Duration::from_secs(3600), ..Default::default() };
    let cfg = SchedulerConfig { client_read_timeout: Some(Duration::from_secs(30)), ..Default::default() };
    let run = run(agent, session, Setup { client, cfg: cfg.clone(), ..Default::default() }, origin).await;
    assert_eq!(run.outcome, Outcome::ClientStalled);
    // The queue filled at once (4 messages); the limit counts from the message that did not fit.
    assert!((30_000..30_100).contains(&run.ended_ms), "ended at {} ms", run.ended_ms);
    assert_protocol(&run);
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(backend.log().dropped_ms.is_some_and(|ms| ms <= run.ended_ms + 1), "the session is let go when the conversation ends");
    // A client that pauses for less than the limit loses nothing.
    let (paused_agent, _) = scheduler_harness::agent(vec![say("One long sentence."), Step::Done], origin);
    let (session, _) = backend_with_capacity(|_| speak_ms(0, 1000, 1), origin, 8);
    let client = Client { capacity: 4, stall: Duration::from_secs(29), ..Default::default() };
    let paused = scheduler_harness::run(paused_agent, session, Setup { client, cfg, ..Default::default() }, origin).await;
    assert_eq!(paused.outcome, Outcome::Completed);
}

#[tokio::test(start_paused = true)]
async fn a_task_aborted_mid_answer_leaves_its_timeline_with_what_was_sent() {
    // The gateway's supervisor aborts a conversation's task it stops from outside (a client that
    // reads nothing cannot be waited for); the conversation must still be counted with what it did.
    let origin = Instant::now();
    let (agent, _) = agent(vec![say("First sentence here. Second sentence follows."), wait_ms(60_000), Step::Done], origin);
    let (session, _) = backend(|_| speak_ms(100, 10, 50), origin);
    let (out, mut rx) = tokio::sync::mpsc::channel(1024);
    let cell = scheduler::TimelineCell::default();
    let info = SessionInfo { audio: session.format.clone(), ..first_info() };
    let conversation = Conversation {
        agent,
        session,
        info,
        release: Release::Incremental,
        clock: Clock::start(),
        timeline: Timeline::default(),
        cancel: CancellationToken::new(),
        encoder: None,
    };
    let cfg = SchedulerConfig::default();
    let left = cell.clone();
    let task = tokio::spawn(async move { scheduler::run_into(conversation, &cfg, out, left).await });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(cell.take().is_none(), "nothing is left while the conversation runs");
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    let timeline = cell.take().expect("the aborted scheduler left its timeline");
    assert_eq!(timeline.sentences.len(), 2, "both sentences were spoken before the abort");
    assert!(timeline.first_audio_sent_ms.is_some() && timeline.done_ms.is_none(), "{timeline:?}");
    assert!(timeline.audio_chunks_sent >= 20);
    while rx.try_recv().is_ok() {}
}

/// An encoder that holds every chunk until the sentence ends (as a resampler holds a chunk shorter than
/// its input block), then gives the sentence back whole.
struct HoldingEncoder(Vec<u8>);

impl earshot_core::output::AudioEncoder for HoldingEncoder {
    fn output(&self) -> earshot_core::protocol::AudioFormat {
        earshot_core::protocol::AudioFormat::pcm_s16le(8_000)
    }
    fn source(&mut self, _: &earshot_core::protocol::AudioFormat) {}
    fn encode(&mut self, pcm: &[u8]) -> bytes::Bytes {
        self.0.extend_from_slice(pcm);
        bytes::Bytes::new()
    }
    fn end_sentence(&mut self) -> bytes::Bytes {
        std::mem::take(&mut self.0).into()
    }
}

#[tokio::test(start_paused = true)]
async fn model_words_stay_in_order_while_the_encoder_holds_the_first_audio() {
    use earshot_core::protocol::WordTiming;
    use earshot_core::speech::{FinishReport, SpeechCommand, SpeechEvent, SpeechSession};
    let origin = Instant::now();
    let (agent, _) = agent(vec![say("Hello there friend."), Step::Done], origin);
    // A backend that times its words before the audio they end in, a piece at a time.
    let (commands_tx, mut commands) = tokio::sync::mpsc::channel(8);
    let (events_tx, events) = tokio::sync::mpsc::channel(32);
    tokio::spawn(async move {
        let word = |text: &str, start_ms: f64, end_ms: f64| WordTiming { text: text.into(), start_ms, end_ms };
        while let Some(command) = commands.recv().await {
            let request = match command {
                SpeechCommand::Speak(request) => request,
                SpeechCommand::Prepare(_) => continue,
                SpeechCommand::Finish => {
                    let _ = events_tx.send(SpeechEvent::Closed { billed_characters: None }).await;
                    return;
                }
            };
            let index = request.index;
            for event in [
                SpeechEvent::Words { index, words: vec![word("Hello", 0.0, 300.0)] },
                SpeechEvent::Audio { index, pcm: vec![1u8; 14_400].into() },
                SpeechEvent::Words { index, words: vec![word("there", 300.0, 600.0), word("friend", 600.0, 900.0)] },
                SpeechEvent::Audio { index, pcm: vec![1u8; 28_800].into() },
                SpeechEvent::Finished { index, report: FinishReport::default() },
            ] {
                let _ = events_tx.send(event).await;
            }
        }
    });
    let session = SpeechSession { commands: commands_tx, events, format: earshot_core::protocol::AudioFormat::pcm_s16le(24_000), voice: "test".into() };
    let (out, mut rx) = tokio::sync::mpsc::channel(1024);
    let conversation = Conversation {
        agent,
        session,
        info: first_info(),
        release: Release::Incremental,
        clock: Clock::start(),
        timeline: Timeline::default(),
        cancel: CancellationToken::new(),
        encoder: Some(Box::new(HoldingEncoder(Vec::new()))),
    };
    let (outcome, _) = scheduler::run(conversation, &SchedulerConfig::default(), out).await;
    assert_eq!(outcome, Outcome::Completed);
    let mut events = Vec::new();
    while let Ok(event) = rx.try_recv() {
        events.push(event);
    }
    if let Err(broken) = earshot_core::protocol::check_order(&events) {
        panic!("{broken}");
    }
    let words: Vec<(String, f64)> = events
        .iter()
        .filter_map(|e| if let ServerEvent::Words(w) = e { Some(w.words.iter().map(|w| (w.text.clone(), w.start_ms))) } else { None })
        .flatten()
        .collect();
    assert_eq!(words, vec![("Hello".into(), 0.0), ("there".into(), 300.0), ("friend".into(), 600.0)], "the words in order, their times as the model gave them");
    let session = events.iter().find_map(|e| if let ServerEvent::Session(s) = e { Some(s.audio.sample_rate) } else { None });
    assert_eq!(session, Some(8_000), "the session says the encoder's format");
    let audio: Vec<usize> = events.iter().filter_map(|e| if let ServerEvent::Audio(a) = e { Some(a.pcm.len()) } else { None }).collect();
    assert_eq!(audio, vec![43_200], "the held audio goes out whole at the sentence's end, as one chunk with seq 0");
}

// --- Cancellation ----------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn cancellation_at_every_stage_stops_both_sides_at_once() {
    // (stage, agent script, cancel at ms)
    let stages: Vec<(&str, Vec<Step>, u64)> = vec![
        ("before the agent's first token", vec![wait_ms(1000), say("Hello there."), Step::Done], 300),
        ("while the agent writes, nothing released", vec![say("Hello"), wait_ms(1000), say(" there."), Step::Done], 300),
        ("released, before first audio", vec![say("Hello there. And"), wait_ms(5000), Step::Done], 100),
        ("while audio streams", vec![say("Hello there. And"), wait_ms(5000), Step::Done], 450),
        ("agent done, backend still speaking", vec![say("Hello there. And more."), Step::Done], 450),
    ];
    for (stage, steps, cancel_ms) in stages {
        let origin = Instant::now();
        let (agent, agent_probe) = agent(steps, origin);
        let (session, backend_probe) = backend(|_| speak_ms(200, 20, 50), origin);
        let run = run(agent, session, Setup { cancel_at: Some(Duration::from_millis(cancel_ms)), ..Default::default() }, origin).await;
        let at = run.ended_ms;
        assert_eq!(run.outcome, Outcome::Cancelled, "{stage}");
        assert_protocol(&run);
        assert_eq!(at, cancel_ms, "{stage}: ended at {at} ms");
        assert!(run.events.iter().all(|(t, _)| *t <= cancel_ms), "{stage}: an event after cancellation");
        // Let the two sides see the channels close.
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(backend_probe.log().dropped_ms, Some(cancel_ms), "{stage}: the backend session was not dropped");
        assert_eq!(agent_probe.log().stopped_ms, Some(cancel_ms), "{stage}: the agent was not stopped");
    }
}

#[tokio::test(start_paused = true)]
async fn a_client_that_stops_reading_ends_the_conversation() {
    let origin = Instant::now();
    let (agent, agent_probe) = agent(vec![say("Hello there. And more text here."), wait_ms(10_000), Step::Done], origin);
    let (session, backend_probe) = backend(|_| speak_ms(100, 50, 20), origin);
    let client = Client { leave_after: Some(5), ..Default::default() };
    let run = run(agent, session, Setup { client, ..Default::default() }, origin).await;
    assert_eq!(run.outcome, Outcome::ClientGone);
    tokio::time::sleep(Duration::from_millis(1)).await;
    let left = run.events.last().unwrap().0;
    assert!(backend_probe.log().dropped_ms.unwrap() <= left + 20, "the backend kept going after the client left");
    assert!(agent_probe.log().stopped_ms.unwrap() <= left + 20);
}

// --- Errors from each side -------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn every_failure_ends_the_stream_with_one_error_naming_its_cause() {
    let hello = || vec![say("Hello there. And more."), Step::Done];
    type Planner = Box<dyn Fn(u32) -> Plan + Send>;
    let cases: Vec<(&str, Vec<Step>, Planner, &str)> = vec![
        ("the agent fails", vec![say("Hello there. "), Step::Fail("agent_throttled")], Box::new(plain(10)), "agent_throttled"),
        ("the agent hangs up", vec![say("Hello there. "), Step::Hangup], Box::new(plain(10)), "agent_ended"),
        ("the backend fails mid-sentence", hello(), Box::new(|_| Plan::FailAfterAudio { code: "backend_timeout" }), "backend_timeout"),
        ("the backend fails before audio", hello(), Box::new(|_| Plan::Fail { after: Duration::ZERO, code: "backend_unavailable" }), "backend_unavailable"),
        ("the backend's session vanishes", hello(), Box::new(|_| Plan::Vanish), "backend_gone"),
        ("the backend closes before finishing", hello(), Box::new(|_| Plan::CloseEarly), "backend_closed"),
        ("audio for a sentence never sent", hello(), Box::new(|_| Plan::WrongIndex), "backend_protocol"),
        ("an answer with nothing to speak", vec![say("*** --- !!!"), Step::Done], Box::new(plain(10)), "empty_answer"),
    ];
    for (case, steps, plan, code) in cases {
        let (run, agent, backend) = converse(steps, plan, SchedulerConfig::default()).await;
        assert!(matches!(run.outcome, Outcome::Failed(_)), "{case}: {:?}", run.outcome);
        assert_protocol(&run);
        assert_eq!(run.last_error_code().as_deref(), Some(code), "{case}");
        // `run` owns the agent's stream and the session and drops both when it returns; that a
        // session is let go where a task holds it is checked in `failover_rules.rs`.
        let _ = (agent, backend);
    }
}

#[tokio::test(start_paused = true)]
async fn an_answer_the_voice_passed_over_whole_ends_with_nothing_speakable_naming_its_script() {
    // Every sentence passed over: no `done`, an error that says what the answer is written in.
    let steps = vec![say("Привет, как дела? Всё хорошо."), Step::Done];
    let (run, _, _) = converse(steps, |_| Plan::PassOver, SchedulerConfig::default()).await;
    assert!(matches!(run.outcome, Outcome::Failed(_)), "{:?}", run.outcome);
    assert_protocol(&run);
    assert_eq!(run.last_error_code().as_deref(), Some("nothing_speakable"));
    let message = run.events.iter().find_map(|(_, e)| if let ServerEvent::Error(e) = e { Some(e.message.clone()) } else { None }).unwrap();
    assert!(message.contains("Cyrillic") && message.contains("ru"), "{message}");
    assert!(!run.events.iter().any(|(_, e)| matches!(e, ServerEvent::Done(_))));
    // Both sentences were told passed over before the error.
    let passed = run.events.iter().filter(|(_, e)| matches!(e, ServerEvent::SentenceEnd(end) if end.skipped.is_some())).count();
    assert_eq!(passed, 2);

    // One sentence spoken is an answer: the one passed over is skipped and the answer ends with `done`.
    let steps = vec![say("Hello there. 안녕하세요, 반갑습니다."), Step::Done];
    let (run, _, _) = converse(steps, |index| if index == 0 { speak_ms(10, 2, 5) } else { Plan::PassOver }, SchedulerConfig::default()).await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert!(run.events.iter().any(|(_, e)| matches!(e, ServerEvent::Done(_))));
}

#[tokio::test(start_paused = true)]
async fn finish_is_sent_once_after_the_last_sentence_and_done_waits_for_the_close() {
    let steps = vec![say("One is here. Two is here."), Step::Done];
    let (run, _, backend) = converse(steps, |_| speak_ms(100, 2, 50), SchedulerConfig::default()).await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert_protocol(&run);
    let log = backend.log();
    assert_eq!(log.finish_ms, Some(0), "finish follows the last sentence at once");
    // Two sentences of 150 ms each, one after the other.
    assert_eq!(run.first_ms(|e| matches!(e, ServerEvent::Done(_))), Some(300));
    assert_eq!(run.timeline.done_ms, Some(300.0));
    assert_eq!(run.timeline.billed_characters, Some(7), "what the backend billed reaches the timeline");
    let t = &run.timeline;
    assert_eq!((t.audio_chunks_sent, t.audio_bytes_sent), (4, 4 * CHUNK_BYTES as u64), "every chunk counted once");
    assert_eq!(t.sentences.iter().map(|m| (m.chars, m.audio_chunks)).collect::<Vec<_>>(), vec![(12, 2), (12, 2)]);
}

#[tokio::test(start_paused = true)]
async fn a_backend_silent_past_its_limit_with_a_sentence_to_speak_ends_the_conversation_with_backend_stalled() {
    let cfg = SchedulerConfig { backend_silence: Some(Duration::from_secs(15)), ..Default::default() };
    // The first sentence is spoken at once; the second is heard of 20 s after it was sent.
    let steps = vec![say("The order shipped today. It arrives on Friday."), Step::Done];
    let plan = |i: u32| if i == 0 { speak_ms(100, 2, 50) } else { speak_ms(20_000, 1, 0) };
    let (run, _, _) = converse(steps, plan, cfg.clone()).await;
    assert_eq!(run.last_error_code().as_deref(), Some("backend_stalled"));
    let failed_at = run.events.last().map(|(at, _)| *at).unwrap();
    // Silent from the end of the first sentence's audio (about 150 ms) for the 15 s limit.
    assert!((15_000..15_400).contains(&failed_at), "failed at {failed_at} ms");
    // Within the limit, the same answer completes; and a quiet agent (no sentence to speak) is not the voice's fault.
    let (run, _, _) = converse(
        vec![say("The order shipped today. It arrives on Friday."), Step::Done],
        |i| if i == 0 { speak_ms(100, 2, 50) } else { speak_ms(14_000, 1, 0) },
        cfg.clone(),
    )
    .await;
    assert_eq!(run.outcome, Outcome::Completed);
    let (run, _, _) =
        converse(vec![say("The order shipped today."), wait_ms(30_000), say(" It arrives on Friday."), Step::Done], |_| speak_ms(100, 2, 50), cfg).await;
    assert_eq!(run.outcome, Outcome::Completed);
}

#[tokio::test(start_paused = true)]
async fn an_answer_read_as_ssml_is_shown_as_written_cut_at_its_breaks_and_sent_with_its_markers() {
    let ssml = SchedulerConfig { ssml: true, ..Default::default() };
    let steps = vec![say("<speak>Ask <sub alias=\"Doctor Smith\">Dr. Sm"), say("ith</sub> now<break time=\"1s\"/> then wait.</speak>"), Step::Done];
    let (run, _, backend) = converse(steps, plain(10), ssml.clone()).await;
    assert!(matches!(run.outcome, Outcome::Completed), "{:?}", run.outcome);
    assert_protocol(&run);
    let shown: Vec<String> = run.events.iter().filter_map(|(_, e)| if let ServerEvent::Sentence(s) = e { Some(s.text.clone()) } else { None }).collect();
    // The alias's full stop is no sentence end, the break is one; the client never sees a tag or a marker.
    assert_eq!(shown, ["Ask Dr. Smith now", "then wait."]);
    let sent: Vec<String> = backend.log().spoken.iter().map(|(_, text, _)| earshot_core::text::markup::shown(text)).collect();
    assert_eq!(sent, ["Ask {sub Doctor Smith}Dr. Smith{/} now{break 1000}", "then wait."]);
}

#[tokio::test(start_paused = true)]
async fn an_answer_with_a_tag_outside_the_subset_ends_with_invalid_ssml_naming_it() {
    let ssml = SchedulerConfig { ssml: true, ..Default::default() };
    let steps = vec![say("<speak>Fine so far. <emphasis>Loud</emphasis> words.</speak>"), Step::Done];
    let (run, _, _) = converse(steps, plain(10), ssml).await;
    assert!(matches!(run.outcome, Outcome::Failed(_)), "{:?}", run.outcome);
    assert_protocol(&run);
    assert_eq!(run.last_error_code().as_deref(), Some("invalid_ssml"));
    let message = run.events.iter().find_map(|(_, e)| if let ServerEvent::Error(e) = e { Some(e.message.clone()) } else { None }).unwrap();
    assert!(message.contains("<emphasis>"), "{message}");
}

#[tokio::test(start_paused = true)]
async fn the_first_sentence_is_prepared_at_its_full_stop_before_the_character_that_confirms_it() {
    // The full stop comes, then nothing for 100 ms, then the next sentence's first letter.
    let steps = vec![say("Returning a jacket is eas"), say("y. "), wait_ms(100), say("Bring it in."), Step::Done];
    let (run, _, backend) = converse(steps, plain(10), SchedulerConfig { idle_release: None, ..Default::default() }).await;
    assert!(matches!(run.outcome, Outcome::Completed), "{:?}", run.outcome);
    assert_protocol(&run);
    let log = backend.log();
    assert_eq!(
        log.prepared.iter().map(|(i, t, _)| (*i, t.as_str())).collect::<Vec<_>>(),
        [(0, "Returning a jacket is easy.")],
        "prepared once, only the first"
    );
    let (prepared_at, spoken_at) = (log.prepared[0].2, log.spoken[0].2);
    assert!(spoken_at >= prepared_at + 100, "prepared at {prepared_at} ms, sent at {spoken_at} ms");
    assert_eq!(log.spoken[0].1, "Returning a jacket is easy.");
    let marks = &run.timeline.sentences[0];
    assert!(marks.prepared_ms.is_some_and(|p| p + 100.0 <= marks.complete_ms), "{marks:?}");
    assert!(run.timeline.sentences[1].prepared_ms.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_first_sentence_that_turns_out_longer_is_prepared_again_and_sent_as_it_is() {
    // "It costs 3." looks complete until "50" comes: the session is told again, and the sentence sent is the whole.
    let steps = vec![say("It costs 3."), wait_ms(50), say("50 today. "), wait_ms(50), say("Fine."), Step::Done];
    let (run, _, backend) = converse(steps, plain(10), SchedulerConfig { idle_release: None, ..Default::default() }).await;
    assert!(matches!(run.outcome, Outcome::Completed), "{:?}", run.outcome);
    let log = backend.log();
    let prepared: Vec<&str> = log.prepared.iter().map(|(_, t, _)| t.as_str()).collect();
    assert_eq!(prepared, ["It costs 3.", "It costs 3.50 today."]);
    assert_eq!(log.spoken.iter().map(|(_, t, _)| t.as_str()).collect::<Vec<_>>(), ["It costs 3.50 today.", "Fine."]);
    assert!(run.timeline.sentences[0].prepared_ms.is_some(), "the second preparation was the sentence");
    // A setting that turns it off prepares nothing.
    let steps = vec![say("Returning a jacket is easy. "), wait_ms(100), say("Bring it in."), Step::Done];
    let off = SchedulerConfig { prepare_first_sentence: false, ..Default::default() };
    let (_, _, backend) = converse(steps, plain(10), off).await;
    assert!(backend.log().prepared.is_empty());
}
