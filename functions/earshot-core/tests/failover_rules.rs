//! The switcher's rules in virtual time: several backends in order as one session
//! ([`earshot_core::failover`], [`earshot_core::switcher`]: a failure, or the first sentence's language,
//! before the first audio), driven by the scheduler as in production. Each test names one rule
//! from the module's docs; every run is also checked against the protocol's ordering rules.

mod scheduler_harness;

use std::sync::Arc;
use std::time::Duration;

use earshot_core::failover::{Arm, Failover, Handover};
use earshot_core::language::Language;
use earshot_core::protocol::{BackendReason, ServerEvent};
use earshot_core::scheduler::{Outcome, SchedulerConfig};
use earshot_core::speech::{codes, SpeechBackend};
use earshot_core::switcher::LanguageRoute;
use scheduler_harness::*;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

fn assert_protocol(run: &Run) {
    if let Err(broken) = check_protocol(run) {
        panic!("{broken}\nevents: {:?}", run.kinds());
    }
}

fn arm(backend: ScriptedBackend) -> Arm {
    Arm { backend: Arc::new(backend), voice: "test".into() }
}

fn sessions(run: &Run) -> Vec<(String, BackendReason)> {
    run.events.iter().filter_map(|(_, e)| if let ServerEvent::Session(s) = e { Some((s.backend.clone(), s.backend_reason)) } else { None }).collect()
}

// --- Opening ----------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_full_arm_spills_over_and_a_starting_or_failing_one_fails_over() {
    let origin = Instant::now();
    let cancel = CancellationToken::new();
    let (session, _) = backend(|_| speak_ms(10, 1, 0), origin);
    let starting = ScriptedBackend { starting: true, ..ScriptedBackend::refusing("starting", "unused") };
    let arms = vec![
        arm(ScriptedBackend::refusing("full", codes::BUSY)),
        arm(starting),
        arm(ScriptedBackend::refusing("failing", "backend_unavailable")),
        arm(ScriptedBackend::new("last", session, Duration::from_millis(5))),
    ];
    let opened = Failover::new(arms).open_arms("c", &cancel).await.unwrap_or_else(|(_, e)| panic!("{e}"));
    assert_eq!(opened.backend, "last");
    let passed: Vec<(&str, bool)> = opened.handovers.iter().map(|h: &Handover| (h.from.as_str(), h.is_overflow())).collect();
    assert_eq!(passed, vec![("full", true), ("starting", false), ("failing", false)]);
    assert_eq!(opened.handovers[1].cause.code, codes::NOT_READY);
}

#[tokio::test(start_paused = true)]
async fn an_arm_whose_open_stalls_hands_over_at_the_open_timeout() {
    let origin = Instant::now();
    let (session, _) = backend(|_| speak_ms(10, 1, 0), origin);
    let arms = vec![arm(ScriptedBackend::hanging("stalled")), arm(ScriptedBackend::new("next", session, Duration::ZERO))];
    let failover = Failover::new(arms).open_timeout(Duration::from_millis(1500));
    let opened = failover.open_arms("c", &CancellationToken::new()).await.unwrap_or_else(|(_, e)| panic!("{e}"));
    assert_eq!(opened.backend, "next");
    assert_eq!(opened.handovers[0].cause.code, earshot_core::failover::OPEN_TIMEOUT);
    assert!(!opened.handovers[0].is_overflow(), "a stalled open is a failover, not an overflow");
    assert_eq!(origin.elapsed(), Duration::from_millis(1500), "handed over at the limit, not before or after");
    // Alone, a stalled arm's timeout is the answer.
    let alone = Failover::new(vec![arm(ScriptedBackend::hanging("stalled"))]);
    let (name, error) = alone.open_arms("c", &CancellationToken::new()).await.err().expect("nothing opens");
    assert_eq!((name.as_str(), error.code.as_str(), error.retryable), ("stalled", earshot_core::failover::OPEN_TIMEOUT, true));
    assert_eq!(origin.elapsed(), Duration::from_millis(1500) + earshot_core::failover::DEFAULT_OPEN_TIMEOUT);
}

#[tokio::test(start_paused = true)]
async fn with_every_arm_refusing_the_last_arms_error_is_the_answer() {
    let cancel = CancellationToken::new();
    let first = ScriptedBackend::refusing("first", "backend_unavailable");
    let asked = first.asked.clone();
    let arms = vec![arm(first), arm(ScriptedBackend::refusing("second", codes::BUSY))];
    let (name, error) = Failover::new(arms).open_arms("c", &cancel).await.err().expect("no arm opens");
    assert_eq!((name.as_str(), error.code.as_str()), ("second", codes::BUSY));
    assert_eq!(*asked.lock().unwrap(), 1, "each arm is asked once");
}

#[tokio::test(start_paused = true)]
async fn one_arm_is_its_own_session_with_nothing_between() {
    let origin = Instant::now();
    let (session, probe) = backend(|_| speak_ms(10, 1, 0), origin);
    let commands = session.commands.clone();
    let opened = Failover::new(vec![arm(ScriptedBackend::new("only", session, Duration::ZERO))]).open_arms("c", &CancellationToken::new()).await.ok().unwrap();
    assert!(opened.session.commands.same_channel(&commands), "no relay for a single arm");
    drop((opened, commands));
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(probe.log().dropped_ms.is_some());
}

// --- Before the first audio ------------------------------------------------------------------------

/// Opens `arms` as the production gateway does, then runs the conversation through them.
async fn converse_through(arms: Vec<Arm>, steps: Vec<Step>, setup: Setup, origin: Instant) -> Run {
    let cancel = CancellationToken::new();
    let (agent, _) = agent(steps, origin);
    let opened = Failover::new(arms).open_arms("c", &cancel).await.expect("the first arm opens");
    run_cancelled_by(agent, opened.session, setup, cancel, origin).await
}

#[tokio::test(start_paused = true)]
async fn failover_before_audio_moves_every_unfinished_sentence_without_announcing_it_again() {
    let origin = Instant::now();
    let (primary, primary_probe) = backend(|_| Plan::Fail { after: Duration::from_millis(100), code: "backend_unavailable" }, origin);
    let (mut secondary, secondary_probe) = backend(|_| speak_ms(50, 2, 10), origin);
    (secondary.voice, secondary.format) = ("fallback-voice".into(), earshot_core::protocol::AudioFormat::pcm_s16le(16_000));
    let arms = vec![arm(ScriptedBackend::new("primary", primary, Duration::ZERO)), arm(ScriptedBackend::new("fallback", secondary, Duration::from_millis(30)))];
    let steps = vec![say("One is here. Two is here. Three"), wait_ms(500), say(" is here."), Step::Done];
    let setup = Setup { cfg: SchedulerConfig { max_in_flight: 2, ..Default::default() }, ..Default::default() };
    let run = converse_through(arms, steps, setup, origin).await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert_protocol(&run);
    assert_eq!(run.sentences(), vec!["One is here.", "Two is here.", "Three is here."], "each sentence announced once");
    assert_eq!(sessions(&run), vec![("primary".into(), BackendReason::Ab), ("fallback".into(), BackendReason::Failover)]);
    // The second `session` is the new backend's: its voice, its audio format; the arm and experiment stay the
    // ones the split assigned (the conversation counts there).
    let ServerEvent::Session(switched) = &run.events.iter().filter(|(_, e)| matches!(e, ServerEvent::Session(_))).nth(1).unwrap().1 else { unreachable!() };
    assert_eq!((switched.voice.as_str(), switched.audio.sample_rate), ("fallback-voice", 16_000));
    assert_eq!((switched.arm.as_deref(), switched.experiment.as_deref()), (Some("primary"), Some("default")));
    assert_eq!(run.timeline.sentences.iter().map(|s| s.audio_ms).sum::<f64>(), 3.0 * 2.0 * 15.0, "durations at the new format's rate");
    let kinds = run.kinds();
    let switched_at = kinds.iter().rposition(|k| *k == "session").unwrap();
    assert!(kinds[..switched_at].iter().all(|k| *k != "audio"), "the switch comes before any audio");
    let spoken: Vec<u32> = secondary_probe.log().spoken.iter().map(|(i, _, _)| *i).collect();
    assert_eq!(spoken, vec![0, 1, 2], "the fallback speaks what the first backend had not, in order");
    assert_eq!(secondary_probe.log().spoken[0].2, 130, "handed over when the open finished");
    assert_eq!(run.timeline.failover_from.as_deref(), Some("backend_unavailable"));
    assert_eq!(run.timeline.backend, "fallback");
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(primary_probe.log().dropped_ms, Some(130), "the failed session is let go when the next one takes over");
    assert!(secondary_probe.log().dropped_ms.is_some(), "the fallback is let go when the conversation ends");
}

#[tokio::test(start_paused = true)]
async fn a_finish_already_said_is_said_again_to_the_new_session() {
    let origin = Instant::now();
    let (primary, _) = backend(|_| Plan::Fail { after: Duration::from_millis(100), code: "backend_unavailable" }, origin);
    let (secondary, secondary_probe) = backend(|_| speak_ms(50, 1, 0), origin);
    let arms = vec![arm(ScriptedBackend::new("primary", primary, Duration::ZERO)), arm(ScriptedBackend::new("fallback", secondary, Duration::ZERO))];
    // The whole answer is in, and `Finish` sent, before the first backend fails.
    let run = converse_through(arms, vec![say("Only this."), Step::Done], Setup::default(), origin).await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert_protocol(&run);
    assert_eq!(secondary_probe.log().finish_ms, Some(100));
    assert_eq!(run.first_ms(|e| matches!(e, ServerEvent::Done(_))), Some(150));
}

#[tokio::test(start_paused = true)]
async fn a_session_that_vanishes_before_audio_fails_over_too() {
    let origin = Instant::now();
    let (primary, _) = backend(|_| Plan::Vanish, origin);
    let (secondary, _) = backend(|_| speak_ms(50, 1, 0), origin);
    let arms = vec![arm(ScriptedBackend::new("primary", primary, Duration::ZERO)), arm(ScriptedBackend::new("fallback", secondary, Duration::ZERO))];
    let run = converse_through(arms, vec![say("Hello there."), Step::Done], Setup::default(), origin).await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert_protocol(&run);
    assert_eq!(run.timeline.failover_from.as_deref(), Some("backend_gone"));
}

#[tokio::test(start_paused = true)]
async fn no_failover_once_audio_has_been_heard() {
    let origin = Instant::now();
    let (primary, _) = backend(|i| if i == 0 { speak_ms(50, 1, 0) } else { Plan::Fail { after: Duration::ZERO, code: "backend_unavailable" } }, origin);
    let (secondary, secondary_probe) = backend(|_| speak_ms(10, 1, 0), origin);
    let fallback = ScriptedBackend::new("fallback", secondary, Duration::ZERO);
    let asked = fallback.asked.clone();
    let arms = vec![arm(ScriptedBackend::new("primary", primary, Duration::ZERO)), arm(fallback)];
    let run = converse_through(arms, vec![say("One is here. Two is here."), Step::Done], Setup::default(), origin).await;
    assert_protocol(&run);
    assert_eq!(run.last_error_code().as_deref(), Some("backend_unavailable"));
    assert_eq!(*asked.lock().unwrap(), 0, "the fallback is not even opened");
    assert!(secondary_probe.log().spoken.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_fallback_that_cannot_open_fails_with_the_first_backends_error() {
    let origin = Instant::now();
    let (primary, primary_probe) = backend(|_| Plan::Fail { after: Duration::ZERO, code: "backend_unavailable" }, origin);
    let arms = vec![arm(ScriptedBackend::new("primary", primary, Duration::ZERO)), arm(ScriptedBackend::refusing("fallback", codes::BUSY))];
    let run = converse_through(arms, vec![say("Hello there."), Step::Done], Setup::default(), origin).await;
    assert_protocol(&run);
    assert_eq!(run.last_error_code().as_deref(), Some("backend_unavailable"));
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(primary_probe.log().dropped_ms.is_some(), "the failed session is let go");
}

#[tokio::test(start_paused = true)]
async fn a_client_that_leaves_during_a_hanging_failover_is_noticed() {
    // The first backend fails before any audio; the fallback's session never opens. Cancelling the
    // conversation must end it at once, not when (if ever) the fallback answers.
    let origin = Instant::now();
    let (primary, primary_probe) = backend(|_| Plan::Fail { after: Duration::ZERO, code: "backend_gone" }, origin);
    let arms = vec![arm(ScriptedBackend::new("primary", primary, Duration::ZERO)), arm(ScriptedBackend::hanging("fallback"))];
    let setup = Setup { cancel_at: Some(Duration::from_secs(1)), ..Default::default() };
    let run = converse_through(arms, vec![say("Hello there."), Step::Done], setup, origin).await;
    assert_eq!(run.outcome, Outcome::Cancelled);
    assert_eq!(run.ended_ms, 1000);
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert!(primary_probe.log().dropped_ms.is_some_and(|at| at <= 1000), "nothing of the conversation is left");
}

#[tokio::test(start_paused = true)]
async fn the_relay_lets_go_of_a_live_session_when_the_scheduler_ends() {
    // The client leaves mid-answer: the scheduler returns, and the session the relay holds must
    // close then, not when the backend next speaks.
    let origin = Instant::now();
    let (primary, primary_probe) = backend(|_| speak_ms(100, 50, 100), origin);
    let (secondary, _) = backend(|_| speak_ms(10, 1, 0), origin);
    let arms = vec![arm(ScriptedBackend::new("primary", primary, Duration::ZERO)), arm(ScriptedBackend::new("fallback", secondary, Duration::ZERO))];
    let setup = Setup { client: Client { leave_after: Some(6), ..Default::default() }, ..Default::default() };
    let run = converse_through(arms, vec![say("A long sentence here."), Step::Done], setup, origin).await;
    assert_eq!(run.outcome, Outcome::ClientGone);
    tokio::time::sleep(Duration::from_millis(1)).await;
    let dropped = primary_probe.log().dropped_ms.expect("the session is let go");
    assert!(dropped <= run.ended_ms + 1, "let go at {dropped} ms, the conversation ended at {} ms", run.ended_ms);
}

// --- The first sentence's language (the switcher's other rule) -------------------------------------

/// An answer whose first sentence is French, for a conversation that opened not knowing its language.
fn french_answer() -> Vec<Step> {
    vec![say("Bonjour, je suis votre assistant et je vais vous répondre tout de suite. "), wait_ms(200), say("Voici la réponse complète."), Step::Done]
}

/// Opens `arms` with a language route that gives `for_french` for French (and nothing for any other
/// language), then runs `steps` through them.
async fn converse_settling(arms: Vec<Arm>, for_french: Vec<Arm>, steps: Vec<Step>, origin: Instant) -> Run {
    let cancel = CancellationToken::new();
    let (agent, _) = agent(steps, origin);
    let route: LanguageRoute = Arc::new(move |language: &Language| (language.to_string() == "fr").then(|| for_french.clone()));
    let opened = Failover::new(arms).language_route(Some(route)).open_arms("c", &cancel).await.unwrap_or_else(|(_, e)| panic!("{e}"));
    run_cancelled_by(agent, opened.session, Setup::default(), cancel, origin).await
}

fn session_languages(run: &Run) -> Vec<Option<String>> {
    run.events.iter().filter_map(|(_, e)| if let ServerEvent::Session(s) = e { Some(s.language.as_ref().map(|l| l.to_string())) } else { None }).collect()
}

#[tokio::test(start_paused = true)]
async fn a_first_sentence_another_voice_speaks_moves_the_conversation_before_any_audio() {
    let origin = Instant::now();
    let (english, english_probe) = backend(|_| speak_ms(10, 1, 0), origin);
    let (french, french_probe) = backend(|_| speak_ms(10, 2, 5), origin);
    let arms = vec![arm(ScriptedBackend::new("primary", english, Duration::ZERO))];
    let for_french = vec![arm(ScriptedBackend::new("french", french, Duration::from_millis(40)))];
    let run = converse_settling(arms, for_french, french_answer(), origin).await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert_protocol(&run);
    assert_eq!(sessions(&run), vec![("primary".into(), BackendReason::Ab), ("french".into(), BackendReason::Language)]);
    assert_eq!(session_languages(&run), vec![None, Some("fr".into())]);
    let kinds = run.kinds();
    assert!(kinds[..kinds.iter().rposition(|k| *k == "session").unwrap()].iter().all(|k| *k != "audio"), "the switch comes before any audio");
    assert!(english_probe.log().spoken.is_empty(), "the first session never hears the answer");
    assert!(english_probe.log().dropped_ms.is_some(), "and is let go");
    let french_log = french_probe.log();
    assert_eq!(french_log.spoken.iter().map(|(i, _, _)| *i).collect::<Vec<_>>(), vec![0, 1]);
    assert_eq!(french_log.told, vec![Some("fr".to_string()); 2], "every sentence goes with its language");
    let released = run.timeline.sentences[0].released_ms.expect("released") as u64;
    assert_eq!(french_log.spoken[0].2, released + 40, "the first sentence goes to the French session as soon as it opens");
}

#[tokio::test(start_paused = true)]
async fn the_same_voice_is_told_the_language_with_every_sentence_and_the_client_in_a_second_session() {
    let origin = Instant::now();
    let (session, probe) = backend(|_| speak_ms(10, 1, 0), origin);
    let primary = Arc::new(ScriptedBackend::new("primary", session, Duration::ZERO));
    let same = Arm { backend: primary.clone(), voice: "test".into() };
    let run = converse_settling(vec![same.clone()], vec![same], french_answer(), origin).await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert_protocol(&run);
    // The reason stands (the same session, its language now known).
    assert_eq!(sessions(&run), vec![("primary".into(), BackendReason::Ab), ("primary".into(), BackendReason::Ab)]);
    assert_eq!(session_languages(&run), vec![None, Some("fr".into())]);
    assert_eq!(*primary.asked.lock().unwrap(), 1, "no second session is opened");
    assert_eq!(probe.log().told, vec![Some("fr".to_string()); 2]);
}

#[tokio::test(start_paused = true)]
async fn an_english_answer_or_a_reopening_that_fails_leaves_the_conversation_where_it_was() {
    let origin = Instant::now();
    // English: routed for nothing here, so nothing changes and nothing is told.
    let (session, probe) = backend(|_| speak_ms(10, 1, 0), origin);
    let refusing = || vec![arm(ScriptedBackend::refusing("french", "backend_unavailable"))];
    let english = vec![say("Sure, here is the whole answer for you today. "), say("It has two sentences."), Step::Done];
    let run = converse_settling(vec![arm(ScriptedBackend::new("primary", session, Duration::ZERO))], refusing(), english, origin).await;
    assert_eq!((&run.outcome, sessions(&run).len()), (&Outcome::Completed, 1));
    assert_eq!(probe.log().told, vec![None, None]);
    // French, but its voice does not open: the first voice speaks it, untold, and the client hears no switch.
    let (session, probe) = backend(|_| speak_ms(10, 1, 0), origin);
    let run = converse_settling(vec![arm(ScriptedBackend::new("primary", session, Duration::ZERO))], refusing(), french_answer(), origin).await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert_protocol(&run);
    assert_eq!(sessions(&run), vec![("primary".into(), BackendReason::Ab)]);
    assert_eq!(probe.log().spoken.len(), 2);
    assert_eq!(probe.log().told, vec![None, None]);
}

/// Opens `arms` with a route for sentences the voice passes over that gives `for_russian` for Russian, then runs
/// `steps` through them.
async fn converse_rerouting(arms: Vec<Arm>, for_russian: Vec<Arm>, steps: Vec<Step>, origin: Instant) -> Run {
    let cancel = CancellationToken::new();
    let (agent, _) = agent(steps, origin);
    let route: LanguageRoute = Arc::new(move |language: &Language| (language.to_string() == "ru").then(|| for_russian.clone()));
    let opened = Failover::new(arms).reroute(Some(route)).open_arms("c", &cancel).await.unwrap_or_else(|(_, e)| panic!("{e}"));
    run_cancelled_by(agent, opened.session, Setup::default(), cancel, origin).await
}

#[tokio::test(start_paused = true)]
async fn a_sentence_the_voice_passes_over_before_any_audio_moves_the_answer_to_an_arm_that_speaks_it() {
    let origin = Instant::now();
    // The first voice reads no Cyrillic: it passes over both sentences; the Russian arm speaks them.
    let (latin, latin_probe) = backend(|_| Plan::PassOver, origin);
    let (russian, russian_probe) = backend(|_| speak_ms(10, 2, 5), origin);
    let arms = vec![arm(ScriptedBackend::new("primary", latin, Duration::ZERO))];
    let for_russian = vec![arm(ScriptedBackend::new("russian", russian, Duration::from_millis(30)))];
    let steps = vec![say("Привет, как дела у вас сегодня? "), say("Всё хорошо, спасибо."), Step::Done];
    let run = converse_rerouting(arms, for_russian, steps, origin).await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert_protocol(&run);
    assert_eq!(sessions(&run), vec![("primary".into(), BackendReason::Ab), ("russian".into(), BackendReason::Language)]);
    assert_eq!(session_languages(&run), vec![None, Some("ru".into())]);
    // The client never heard the first voice pass the sentence over: it was spoken again by the one that reads it.
    assert!(!run.events.iter().any(|(_, e)| matches!(e, ServerEvent::SentenceEnd(end) if end.skipped.is_some())));
    assert_eq!(russian_probe.log().spoken.iter().map(|(i, _, _)| *i).collect::<Vec<_>>(), vec![0, 1]);
    assert_eq!(russian_probe.log().told, vec![Some("ru".to_string()); 2]);
    assert!(latin_probe.log().dropped_ms.is_some(), "the first session is let go");
    assert_eq!((run.timeline.language.as_deref(), run.timeline.language_from.as_deref()), (Some("ru"), Some("primary")));
}

#[tokio::test(start_paused = true)]
async fn after_the_first_audio_or_with_no_arm_for_its_language_a_sentence_passed_over_stays_so() {
    let origin = Instant::now();
    // English heard first: the Cyrillic sentence after it is passed over, the answer goes on in the first voice.
    let (latin, _) = backend(|index| if index == 0 { speak_ms(10, 2, 5) } else { Plan::PassOver }, origin);
    let (russian, russian_probe) = backend(|_| speak_ms(10, 2, 5), origin);
    let arms = vec![arm(ScriptedBackend::new("primary", latin, Duration::ZERO))];
    let for_russian = vec![arm(ScriptedBackend::new("russian", russian, Duration::ZERO))];
    let steps = vec![say("Hello there, this is the first sentence. "), wait_ms(100), say("Привет, как дела у вас сегодня?"), Step::Done];
    let run = converse_rerouting(arms, for_russian, steps, origin).await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert_protocol(&run);
    assert_eq!(sessions(&run).len(), 1, "no second voice mid-answer");
    assert!(russian_probe.log().spoken.is_empty());
    let passed: Vec<u32> =
        run.events.iter().filter_map(|(_, e)| if let ServerEvent::SentenceEnd(end) = e { end.skipped.as_ref().map(|_| end.index) } else { None }).collect();
    assert_eq!(passed, vec![1]);
    // Korean, for which the route has no arm: passed over where it is, and with nothing else the answer is an error.
    let (latin, _) = backend(|_| Plan::PassOver, origin);
    let (russian, _) = backend(|_| speak_ms(10, 2, 5), origin);
    let arms = vec![arm(ScriptedBackend::new("primary", latin, Duration::ZERO))];
    let for_russian = vec![arm(ScriptedBackend::new("russian", russian, Duration::ZERO))];
    let run = converse_rerouting(arms, for_russian, vec![say("안녕하세요, 반갑습니다."), Step::Done], origin).await;
    assert_eq!(run.last_error_code().as_deref(), Some("nothing_speakable"));
    assert_eq!(sessions(&run).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn after_a_reopening_the_languages_other_arms_are_the_failover_order() {
    let origin = Instant::now();
    let (english, _) = backend(|_| speak_ms(10, 1, 0), origin);
    let (failing, _) = backend(|_| Plan::Fail { after: Duration::from_millis(50), code: "backend_unavailable" }, origin);
    let (second, second_probe) = backend(|_| speak_ms(10, 1, 0), origin);
    // An English fallback the first route had: not the French one's.
    let (unused, unused_probe) = backend(|_| speak_ms(10, 1, 0), origin);
    let arms = vec![arm(ScriptedBackend::new("primary", english, Duration::ZERO)), arm(ScriptedBackend::new("english-fallback", unused, Duration::ZERO))];
    let for_french = vec![arm(ScriptedBackend::new("french", failing, Duration::ZERO)), arm(ScriptedBackend::new("french-fallback", second, Duration::ZERO))];
    let run = converse_settling(arms, for_french, french_answer(), origin).await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert_protocol(&run);
    let reasons = vec![("primary".into(), BackendReason::Ab), ("french".into(), BackendReason::Language), ("french-fallback".into(), BackendReason::Failover)];
    assert_eq!(sessions(&run), reasons);
    assert_eq!(second_probe.log().told, vec![Some("fr".to_string()); 2], "the fallback is told the language too");
    assert!(unused_probe.log().spoken.is_empty(), "the first route's fallback is not the French answer's");
    assert_eq!(run.timeline.failover_from.as_deref(), Some("backend_unavailable"));
}

// --- Arm health remembered -------------------------------------------------------------------------

/// A backend whose opens stall and whose health check fails while it is sick; healthy, it opens one of
/// its sessions at once.
struct Flaky {
    name: &'static str,
    sick: Arc<std::sync::atomic::AtomicBool>,
    asked: Arc<std::sync::atomic::AtomicU32>,
    sessions: std::sync::Mutex<Vec<earshot_core::speech::SpeechSession>>,
}

impl Flaky {
    fn new(name: &'static str, sick: bool, sessions: usize, origin: Instant) -> Arc<Flaky> {
        let sessions = (0..sessions).map(|_| backend(|_| speak_ms(10, 1, 0), origin).0).collect();
        Arc::new(Flaky { name, sick: Arc::new(sick.into()), asked: Arc::default(), sessions: std::sync::Mutex::new(sessions) })
    }
    fn asked(&self) -> u32 {
        self.asked.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[async_trait::async_trait]
impl SpeechBackend for Flaky {
    fn name(&self) -> &str {
        self.name
    }
    fn voices(&self) -> Vec<earshot_core::speech::Voice> {
        vec![earshot_core::speech::Voice { id: "test".into(), language: "en".into(), description: "a test voice".into() }]
    }
    fn default_voice(&self) -> String {
        "test".into()
    }
    async fn open(&self, _: earshot_core::speech::SessionOptions) -> Result<earshot_core::speech::SpeechSession, earshot_core::speech::SpeechError> {
        self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if self.sick.load(std::sync::atomic::Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        Ok(self.sessions.lock().unwrap().pop().expect("a session left"))
    }
    async fn health(&self) -> Result<(), earshot_core::speech::SpeechError> {
        if self.sick.load(std::sync::atomic::Ordering::SeqCst) {
            Err(earshot_core::speech::SpeechError::new("backend_unreachable", "sick", true))
        } else {
            Ok(())
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_sick_arm_is_passed_over_by_the_next_conversations_until_its_probe_answers() {
    use earshot_core::arm_health::{ArmHealth, FIRST_BACKOFF, PASSED_OVER, SICK};
    assert!(SICK.contains(&earshot_core::failover::OPEN_TIMEOUT), "an open that stalls makes an arm sick");
    let origin = Instant::now();
    let health = ArmHealth::new();
    let (primary, secondary) = (Flaky::new("primary", true, 2, origin), Flaky::new("secondary", false, 4, origin));
    let arms =
        || vec![Arm { backend: primary.clone() as Arc<dyn SpeechBackend>, voice: "test".into() }, Arm { backend: secondary.clone(), voice: "test".into() }];
    let open = |arms: Vec<Arm>| {
        let failover = Failover::new(arms).open_timeout(Duration::from_millis(1500)).arm_health(Some(health.clone()));
        async move { failover.open_arms("c", &CancellationToken::new()).await.unwrap_or_else(|(_, e)| panic!("{e}")) }
    };

    // The first conversation pays the open limit once; the arm is remembered.
    let first = open(arms()).await;
    assert_eq!((first.backend.as_str(), first.handovers[0].cause.code.as_str()), ("secondary", earshot_core::failover::OPEN_TIMEOUT));
    assert_eq!(origin.elapsed(), Duration::from_millis(1500));
    assert_eq!(health.report()["primary"].code, earshot_core::failover::OPEN_TIMEOUT);

    // The next goes straight on, without asking the sick arm.
    let started = Instant::now();
    let second = open(arms()).await;
    assert_eq!((second.backend.as_str(), second.handovers[0].cause.code.as_str()), ("secondary", PASSED_OVER));
    assert_eq!(started.elapsed(), Duration::ZERO, "no wait on the sick arm");
    assert_eq!(primary.asked(), 1);

    // Its probe fails after the first backoff: still passed over, probed again later.
    tokio::time::sleep(FIRST_BACKOFF + Duration::from_secs(1)).await;
    assert_eq!(open(arms()).await.handovers[0].cause.code, PASSED_OVER);
    assert!(health.report()["primary"].probe_in > FIRST_BACKOFF, "the backoff doubles: {:?}", health.report());

    // Recovered: the next probe finds it, and the next conversation is its again.
    primary.sick.store(false, std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(FIRST_BACKOFF * 2 + Duration::from_secs(1)).await;
    assert!(health.report().is_empty(), "{:?}", health.report());
    let back = open(arms()).await;
    assert!(back.handovers.is_empty());
    assert_eq!((back.backend.as_str(), primary.asked()), ("primary", 2));

    // The last arm left is tried, remembered or not.
    primary.sick.store(true, std::sync::atomic::Ordering::SeqCst);
    let _ = open(arms()).await;
    assert!(health.report().contains_key("primary"));
    let alone = Failover::new(vec![Arm { backend: primary.clone() as Arc<dyn SpeechBackend>, voice: "test".into() }])
        .open_timeout(Duration::from_millis(1500))
        .arm_health(Some(health.clone()));
    let (_, error) = alone.open_arms("c", &CancellationToken::new()).await.err().expect("the sick arm stalls");
    assert_eq!(error.code, earshot_core::failover::OPEN_TIMEOUT, "asked, not refused from memory");
    assert_eq!(primary.asked(), 4);
}

#[tokio::test(start_paused = true)]
async fn an_arm_passed_over_is_still_tried_when_every_arm_after_it_fails() {
    use earshot_core::arm_health::{ArmHealth, PASSED_OVER};
    let origin = Instant::now();
    let health = ArmHealth::new();
    let remembered = Flaky::new("remembered", true, 1, origin);
    let failover = |arms: Vec<Arm>| Failover::new(arms).open_timeout(Duration::from_millis(1500)).arm_health(Some(health.clone()));
    let arm_of = |b: &Arc<Flaky>| Arm { backend: b.clone() as Arc<dyn SpeechBackend>, voice: "test".into() };
    // Fallen sick in an earlier conversation.
    let _ = failover(vec![arm_of(&remembered)]).open_arms("c", &CancellationToken::new()).await;
    assert!(health.report().contains_key("remembered"));
    // Recovered before its probe; the arm after it refuses: it is asked after all, and speaks.
    remembered.sick.store(false, std::sync::atomic::Ordering::SeqCst);
    let arms = vec![arm_of(&remembered), arm(ScriptedBackend::refusing("after", "backend_unavailable"))];
    let opened = failover(arms).open_arms("c", &CancellationToken::new()).await.unwrap_or_else(|(_, e)| panic!("{e}"));
    assert_eq!(opened.backend, "remembered");
    let causes: Vec<&str> = opened.handovers.iter().map(|h| h.cause.code.as_str()).collect();
    assert_eq!(causes, vec![PASSED_OVER, "backend_unavailable"]);
    assert!(health.report().is_empty(), "taken back when it opened");
}

#[tokio::test(start_paused = true)]
async fn a_reopening_for_the_language_tries_an_arm_remembered_as_sick_last() {
    use earshot_core::arm_health::ArmHealth;
    let origin = Instant::now();
    let health = ArmHealth::new();
    let remembered = Flaky::new("remembered", true, 1, origin);
    let arm_of = |b: &Arc<Flaky>| Arm { backend: b.clone() as Arc<dyn SpeechBackend>, voice: "test".into() };
    // Fallen sick in an earlier conversation, recovered before its probe.
    let _ = Failover::new(vec![arm_of(&remembered)])
        .open_timeout(Duration::from_millis(1500))
        .arm_health(Some(health.clone()))
        .open_arms("c", &CancellationToken::new())
        .await;
    assert!(health.report().contains_key("remembered"));
    remembered.sick.store(false, std::sync::atomic::Ordering::SeqCst);
    // French routes to it first and to an arm that refuses: the refusing one is asked first, then the sick one.
    let (english, _) = backend(|_| speak_ms(10, 1, 0), origin);
    let for_french = vec![arm_of(&remembered), arm(ScriptedBackend::refusing("after", "backend_unavailable"))];
    let route: LanguageRoute = Arc::new(move |language: &Language| (language.to_string() == "fr").then(|| for_french.clone()));
    let cancel = CancellationToken::new();
    let opened = Failover::new(vec![arm(ScriptedBackend::new("primary", english, Duration::ZERO))])
        .arm_health(Some(health.clone()))
        .language_route(Some(route))
        .open_arms("c", &cancel)
        .await
        .unwrap_or_else(|(_, e)| panic!("{e}"));
    let (agent, _) = agent(french_answer(), origin);
    let run = run_cancelled_by(agent, opened.session, Setup::default(), cancel, origin).await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert_eq!(sessions(&run), vec![("primary".into(), BackendReason::Ab), ("remembered".into(), BackendReason::Language)]);
    assert_eq!(remembered.asked(), 2, "asked once in the earlier conversation, once here, last");
}

#[tokio::test(start_paused = true)]
async fn a_voice_told_the_language_fails_over_to_the_languages_other_arm() {
    let origin = Instant::now();
    let (failing, _) = backend(|_| Plan::Fail { after: Duration::from_millis(50), code: "backend_unavailable" }, origin);
    let primary = Arc::new(ScriptedBackend::new("primary", failing, Duration::ZERO));
    let (french, french_probe) = backend(|_| speak_ms(10, 1, 0), origin);
    let (english, english_probe) = backend(|_| speak_ms(10, 1, 0), origin);
    let same = Arm { backend: primary.clone(), voice: "test".into() };
    // Opened not knowing the language: an English fallback. French: the same voice first, then a French one.
    let arms = vec![same.clone(), arm(ScriptedBackend::new("english-fallback", english, Duration::ZERO))];
    let for_french = vec![same, arm(ScriptedBackend::new("french-fallback", french, Duration::ZERO))];
    let run = converse_settling(arms, for_french, french_answer(), origin).await;
    assert_eq!(run.outcome, Outcome::Completed);
    assert_protocol(&run);
    let reasons = vec![("primary".into(), BackendReason::Ab), ("primary".into(), BackendReason::Ab), ("french-fallback".into(), BackendReason::Failover)];
    assert_eq!(sessions(&run), reasons);
    assert_eq!(french_probe.log().told, vec![Some("fr".to_string()); 2]);
    assert!(english_probe.log().spoken.is_empty(), "the English fallback never reads the French answer");
}
