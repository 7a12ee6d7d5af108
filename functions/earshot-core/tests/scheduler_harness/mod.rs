//! A scripted agent, an in-memory speech backend and the protocol's ordering rules, for driving the
//! scheduler in virtual time (tokio's paused clock). Every delay here is virtual: a test that waits a
//! minute takes microseconds, and the same marks come out on any machine under any load.
//!
//! Both sides record what they saw (when the agent was stopped, how many sentences the backend held at
//! once, when its session was dropped), so tests can check that backpressure and cancellation reach
//! them, not only what the client received.

#![allow(clippy::disallowed_methods)] // test helpers spawn as they like; clippy.toml keeps the crates on the tracker
#![allow(dead_code)] // each test file uses its own part of the harness

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use earshot_core::agent::{AgentError, AgentEvent, AgentStream, AGENT_CHANNEL};
use earshot_core::protocol::{AudioFormat, BackendReason, ServerEvent, SessionInfo};
use earshot_core::scheduler::{self, Conversation, Outcome, Release, SchedulerConfig};
use earshot_core::speech::{SessionOptions, SpeechBackend, SpeechCommand, SpeechError, SpeechEvent, SpeechSession, Voice};
use earshot_core::timeline::{Clock, Timeline};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Virtual milliseconds since `origin`.
pub fn ms_since(origin: Instant) -> u64 {
    origin.elapsed().as_millis() as u64
}

// ---------------------------------------------------------------------------------------------------
// The agent

/// One step of a scripted agent.
#[derive(Debug, Clone)]
pub enum Step {
    /// Wait this long (virtual) before the next step.
    Wait(Duration),
    Say(String),
    Pause,
    Done,
    /// The end without the format's end marker (`AgentEvent::DoneUnmarked`).
    DoneUnmarked,
    Fail(&'static str),
    /// Drop the channel without `Done`.
    Hangup,
}

pub fn say(text: &str) -> Step {
    Step::Say(text.to_string())
}

pub fn wait_ms(ms: u64) -> Step {
    Step::Wait(Duration::from_millis(ms))
}

/// What the agent saw.
#[derive(Debug, Default, Clone)]
pub struct AgentLog {
    /// Virtual ms at which each delta was accepted by the channel.
    pub delta_sent_ms: Vec<u64>,
    /// Virtual ms at which the scheduler dropped the agent's stream (the agent was stopped).
    pub stopped_ms: Option<u64>,
}

#[derive(Clone, Default)]
pub struct AgentProbe(Arc<Mutex<AgentLog>>);

impl AgentProbe {
    pub fn log(&self) -> AgentLog {
        self.0.lock().unwrap().clone()
    }
}

/// An agent that plays `steps` into a channel of the production capacity, then waits for the
/// scheduler to let go of it.
pub fn agent(steps: Vec<Step>, origin: Instant) -> (AgentStream, AgentProbe) {
    let (tx, rx) = mpsc::channel(AGENT_CHANNEL);
    let probe = AgentProbe::default();
    let log = probe.clone();
    tokio::spawn(async move {
        for step in steps {
            let sent = match step {
                Step::Wait(d) => {
                    tokio::select! {
                        _ = tokio::time::sleep(d) => true,
                        _ = tx.closed() => false,
                    }
                }
                Step::Say(text) => {
                    let ok = tx.send(Ok(AgentEvent::Delta(text))).await.is_ok();
                    if ok {
                        log.0.lock().unwrap().delta_sent_ms.push(ms_since(origin));
                    }
                    ok
                }
                Step::Pause => tx.send(Ok(AgentEvent::Pause)).await.is_ok(),
                Step::Done => tx.send(Ok(AgentEvent::Done)).await.is_ok(),
                Step::DoneUnmarked => tx.send(Ok(AgentEvent::DoneUnmarked)).await.is_ok(),
                Step::Fail(code) => tx.send(Err(AgentError::new(code, "the agent failed", false))).await.is_ok(),
                Step::Hangup => {
                    drop(tx);
                    // The agent is gone of its own accord: nothing is left to stop.
                    log.0.lock().unwrap().stopped_ms = Some(ms_since(origin));
                    return;
                }
            };
            if !sent {
                break;
            }
        }
        tx.closed().await;
        log.0.lock().unwrap().stopped_ms = Some(ms_since(origin));
    });
    (rx, probe)
}

// ---------------------------------------------------------------------------------------------------
// The backend

/// What the in-memory backend does with one sentence.
#[derive(Debug, Clone)]
pub enum Plan {
    /// First audio after `first`, then `chunks - 1` more every `gap`, then `Finished`.
    Speak { first: Duration, chunks: u32, gap: Duration },
    /// `Failed` with this code after `after`, before any audio of the sentence.
    Fail { after: Duration, code: &'static str },
    /// One chunk of audio, then `Failed`.
    FailAfterAudio { code: &'static str },
    /// Drops its event channel (the session vanished).
    Vanish,
    /// Sends `Closed` though the scheduler has not said `Finish`.
    CloseEarly,
    /// Audio labelled with a sentence index the scheduler never sent.
    WrongIndex,
    /// `Finished` with no audio, passed over as a script the voice cannot read (the Kokoro container's
    /// `unsupported_script`).
    PassOver,
}

pub fn speak_ms(first: u64, chunks: u32, gap: u64) -> Plan {
    Plan::Speak { first: Duration::from_millis(first), chunks, gap: Duration::from_millis(gap) }
}

/// Bytes in each audio chunk: 10 ms at 24 kHz, whole samples.
pub const CHUNK_BYTES: usize = 480;

/// What the backend saw.
#[derive(Debug, Default, Clone)]
pub struct BackendLog {
    /// `(index, text, virtual ms)` for each `Speak`, in arrival order.
    pub spoken: Vec<(u32, String, u64)>,
    /// The language each `Speak` was told, in the same order.
    pub told: Vec<Option<String>>,
    /// `(index, text, virtual ms)` for each `Prepare` (a voice that starts on it; this one only notes it).
    pub prepared: Vec<(u32, String, u64)>,
    /// The most sentences it held (sent and not finished) at once.
    pub max_outstanding: usize,
    /// Sentences it finished (or gave up on).
    pub finished: usize,
    pub finish_ms: Option<u64>,
    /// When the scheduler dropped the session's command channel (the session was cancelled or ended).
    pub dropped_ms: Option<u64>,
    /// Audio chunks the backend managed to hand to the scheduler.
    pub chunks_sent: usize,
}

#[derive(Clone, Default)]
pub struct BackendProbe(Arc<Mutex<BackendLog>>);

impl BackendProbe {
    pub fn log(&self) -> BackendLog {
        self.0.lock().unwrap().clone()
    }
}

/// An in-memory session that speaks its sentences one at a time, in order, as the Kokoro container
/// does, each as `plan(index)` says. Its event channel holds `events_capacity` events, like a real
/// backend's bounded channel.
pub fn backend(plan: impl Fn(u32) -> Plan + Send + 'static, origin: Instant) -> (SpeechSession, BackendProbe) {
    backend_with_capacity(plan, origin, 32)
}

pub fn backend_with_capacity(plan: impl Fn(u32) -> Plan + Send + 'static, origin: Instant, events_capacity: usize) -> (SpeechSession, BackendProbe) {
    let (commands_tx, mut commands) = mpsc::channel::<SpeechCommand>(32);
    let (events_tx, events) = mpsc::channel(events_capacity);
    let probe = BackendProbe::default();
    let log = probe.clone();
    // The reader takes commands as they come (a real backend reads its socket while it synthesizes)
    // and says when the scheduler lets go of the session.
    let (work_tx, mut work) = mpsc::unbounded_channel::<Option<(u32, String)>>();
    let gone = CancellationToken::new();
    let reader_gone = gone.clone();
    let reader_log = log.clone();
    tokio::spawn(async move {
        while let Some(command) = commands.recv().await {
            let mut l = reader_log.0.lock().unwrap();
            match command {
                SpeechCommand::Speak(r) => {
                    l.spoken.push((r.index, r.text.clone(), ms_since(origin)));
                    l.told.push(r.language.as_ref().map(|l| l.to_string()));
                    l.max_outstanding = l.max_outstanding.max(l.spoken.len() - l.finished);
                    let _ = work_tx.send(Some((r.index, r.text)));
                }
                SpeechCommand::Finish => {
                    l.finish_ms = Some(ms_since(origin));
                    let _ = work_tx.send(None);
                }
                SpeechCommand::Prepare(r) => l.prepared.push((r.index, r.text, ms_since(origin))),
            }
        }
        reader_log.0.lock().unwrap().dropped_ms = Some(ms_since(origin));
        reader_gone.cancel();
    });
    tokio::spawn(async move {
        let send = |event: SpeechEvent| {
            let events_tx = events_tx.clone();
            let gone = gone.clone();
            let log = log.clone();
            async move {
                let audio = matches!(event, SpeechEvent::Audio { .. });
                let ok = tokio::select! {
                    r = events_tx.send(event) => r.is_ok(),
                    _ = gone.cancelled() => false,
                };
                if ok && audio {
                    log.0.lock().unwrap().chunks_sent += 1;
                }
                ok
            }
        };
        loop {
            let item = tokio::select! {
                item = work.recv() => item,
                _ = gone.cancelled() => return,
            };
            let Some(Some((index, _text))) = item else {
                // `Finish` (or the reader ended): close once every sentence is done.
                if matches!(item, Some(None)) {
                    let _ = send(SpeechEvent::Closed { billed_characters: Some(7) }).await;
                    gone.cancelled().await;
                }
                return;
            };
            let step = |d: Duration| {
                let gone = gone.clone();
                async move {
                    tokio::select! {
                        _ = tokio::time::sleep(d) => true,
                        _ = gone.cancelled() => false,
                    }
                }
            };
            let ok = match plan(index) {
                Plan::Speak { first, chunks, gap } => {
                    let mut ok = step(first).await;
                    for c in 0..chunks {
                        if !ok {
                            break;
                        }
                        if c > 0 {
                            ok = step(gap).await;
                            if !ok {
                                break;
                            }
                        }
                        ok = send(SpeechEvent::Audio { index, pcm: Bytes::from(vec![0u8; CHUNK_BYTES]) }).await;
                    }
                    ok && send(SpeechEvent::Finished { index, report: Default::default() }).await
                }
                Plan::Fail { after, code } => step(after).await && send(SpeechEvent::Failed(SpeechError::new(code, "the backend failed", true))).await,
                Plan::FailAfterAudio { code } => {
                    send(SpeechEvent::Audio { index, pcm: Bytes::from(vec![0u8; CHUNK_BYTES]) }).await
                        && send(SpeechEvent::Failed(SpeechError::new(code, "the backend failed mid-sentence", true))).await
                }
                Plan::Vanish => return,
                Plan::CloseEarly => send(SpeechEvent::Closed { billed_characters: None }).await,
                Plan::WrongIndex => send(SpeechEvent::Audio { index: index + 1000, pcm: Bytes::from(vec![0u8; CHUNK_BYTES]) }).await,
                Plan::PassOver => {
                    let report = earshot_core::speech::FinishReport { skipped: Some(earshot_core::speech::Skipped::UnsupportedScript), ..Default::default() };
                    send(SpeechEvent::Finished { index, report }).await
                }
            };
            log.0.lock().unwrap().finished += 1;
            if !ok {
                return;
            }
        }
    });
    (SpeechSession { commands: commands_tx, events, format: AudioFormat::pcm_s16le(24_000), voice: "test".into() }, probe)
}

/// The `session` message a conversation starts with.
pub fn first_info() -> SessionInfo {
    SessionInfo {
        v: 1,
        conversation_id: "c".into(),
        request_id: "r".into(),
        backend: "primary".into(),
        backend_reason: BackendReason::Ab,
        arm: Some("primary".into()),
        experiment: Some("default".into()),
        release: "incremental".into(),
        voice: "test".into(),
        language: None,
        language_source: None,
        audio: AudioFormat::pcm_s16le(24_000),
    }
}

/// A backend whose one session is an in-memory one ([`backend`]), opened after `delay`; or that
/// refuses with `refuse` (before any session: `backend_busy`, `backend_not_ready`, a failure). It
/// records each time it was asked to open.
pub struct ScriptedBackend {
    pub name: String,
    pub delay: Duration,
    pub session: Mutex<Option<SpeechSession>>,
    pub refuse: Option<&'static str>,
    /// Not ready (`readiness`), without a network call.
    pub starting: bool,
    pub asked: Arc<Mutex<u32>>,
}

impl ScriptedBackend {
    pub fn new(name: &str, session: SpeechSession, delay: Duration) -> Self {
        ScriptedBackend { name: name.into(), delay, session: Mutex::new(Some(session)), refuse: None, starting: false, asked: Arc::default() }
    }

    pub fn refusing(name: &str, code: &'static str) -> Self {
        ScriptedBackend { name: name.into(), delay: Duration::ZERO, session: Mutex::new(None), refuse: Some(code), starting: false, asked: Arc::default() }
    }

    /// Never opens: the open waits for ever.
    pub fn hanging(name: &str) -> Self {
        ScriptedBackend { name: name.into(), delay: Duration::MAX, session: Mutex::new(None), refuse: None, starting: false, asked: Arc::default() }
    }
}

#[async_trait]
impl SpeechBackend for ScriptedBackend {
    fn name(&self) -> &str {
        &self.name
    }
    fn voices(&self) -> Vec<Voice> {
        vec![Voice { id: "test".into(), language: "en".into(), description: "a test voice".into() }]
    }
    fn default_voice(&self) -> String {
        "test".into()
    }
    async fn open(&self, _options: SessionOptions) -> Result<SpeechSession, SpeechError> {
        *self.asked.lock().unwrap() += 1;
        if self.delay == Duration::MAX {
            std::future::pending::<()>().await;
        }
        tokio::time::sleep(self.delay).await;
        if let Some(code) = self.refuse {
            return Err(SpeechError::new(code, "the backend refused", true));
        }
        self.session.lock().unwrap().take().ok_or_else(|| SpeechError::new("backend_unavailable", "opened once already", true))
    }
    /// A backend that refuses is unhealthy too.
    async fn health(&self) -> Result<(), SpeechError> {
        match self.refuse {
            Some(code) => Err(SpeechError::new(code, "the backend refuses", true)),
            None => Ok(()),
        }
    }
    fn readiness(&self) -> Result<(), SpeechError> {
        if self.starting {
            Err(SpeechError::new(earshot_core::speech::codes::NOT_READY, "still loading", true))
        } else {
            Ok(())
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// Running a conversation

/// What one conversation gave: the outcome, every event with the virtual ms it was received, and the
/// timeline.
pub struct Run {
    pub outcome: Outcome,
    pub events: Vec<(u64, ServerEvent)>,
    pub timeline: Timeline,
    pub ended_ms: u64,
    /// The client stopped reading before the stream ended: `events` is a prefix of what was sent.
    pub client_left: bool,
}

impl Run {
    pub fn sentences(&self) -> Vec<String> {
        self.events.iter().filter_map(|(_, e)| if let ServerEvent::Sentence(s) = e { Some(s.text.clone()) } else { None }).collect()
    }

    /// Virtual ms of the first event matching `pick`.
    pub fn first_ms(&self, pick: impl Fn(&ServerEvent) -> bool) -> Option<u64> {
        self.events.iter().find(|(_, e)| pick(e)).map(|(t, _)| *t)
    }

    pub fn kinds(&self) -> Vec<&'static str> {
        self.events.iter().map(|(_, e)| e.kind()).collect()
    }

    pub fn last_error_code(&self) -> Option<String> {
        match self.events.last() {
            Some((_, ServerEvent::Error(e))) => Some(e.code.clone()),
            _ => None,
        }
    }
}

/// How the client side of a run behaves.
#[derive(Clone, Copy)]
pub struct Client {
    /// Capacity of the channel to the client (production: the gateway's bounded channel).
    pub capacity: usize,
    /// Stop reading (and drop the receiver) after this many events.
    pub leave_after: Option<usize>,
    /// Wait this long before reading anything (a stalled client).
    pub stall: Duration,
}

impl Default for Client {
    fn default() -> Self {
        Client { capacity: 1024, leave_after: None, stall: Duration::ZERO }
    }
}

/// How one conversation is run: the gateway's scheduler settings and the request's own choices.
#[derive(Clone)]
pub struct Setup {
    pub cfg: SchedulerConfig,
    pub release: Release,
    /// Cancel the conversation's token at this virtual time.
    pub cancel_at: Option<Duration>,
    pub client: Client,
    /// The conversation's language, as routing settled it (`None`: not known).
    pub language: Option<earshot_core::language::Language>,
}

impl Default for Setup {
    fn default() -> Self {
        Setup { cfg: SchedulerConfig::default(), release: Release::Incremental, cancel_at: None, client: Client::default(), language: None }
    }
}

impl From<SchedulerConfig> for Setup {
    fn from(cfg: SchedulerConfig) -> Self {
        Setup { cfg, ..Default::default() }
    }
}

/// Runs one conversation to its end.
pub async fn run(agent: AgentStream, session: SpeechSession, setup: impl Into<Setup>, origin: Instant) -> Run {
    run_cancelled_by(agent, session, setup, CancellationToken::new(), origin).await
}

/// Runs one conversation to its end under `cancel` (shared with the sessions a test opened with it).
pub async fn run_cancelled_by(agent: AgentStream, session: SpeechSession, setup: impl Into<Setup>, cancel: CancellationToken, origin: Instant) -> Run {
    let Setup { cfg, release, cancel_at, client, language } = setup.into();
    if let Some(at) = cancel_at {
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(origin + at).await;
            trigger.cancel();
        });
    }
    let (out, mut rx) = mpsc::channel(client.capacity);
    let task = tokio::spawn(async move {
        let info = SessionInfo { audio: session.format.clone(), language, ..first_info() };
        let conversation = Conversation { agent, session, info, release, clock: Clock::start(), timeline: Timeline::default(), cancel, encoder: None };
        let (outcome, timeline) = scheduler::run(conversation, &cfg, out).await;
        (outcome, timeline, ms_since(origin))
    });
    tokio::time::sleep(client.stall).await;
    let mut events = Vec::new();
    let mut client_left = false;
    while let Some(event) = rx.recv().await {
        events.push((ms_since(origin), event));
        if client.leave_after.is_some_and(|n| events.len() >= n) {
            drop(rx);
            client_left = true;
            break;
        }
    }
    let (outcome, timeline, ended_ms) = task.await.expect("the scheduler does not panic");
    Run { outcome, events, timeline, ended_ms, client_left }
}

/// The common case: one backend, no failover.
pub async fn converse(steps: Vec<Step>, plan: impl Fn(u32) -> Plan + Send + 'static, setup: impl Into<Setup>) -> (Run, AgentProbe, BackendProbe) {
    let origin = Instant::now();
    let (agent, agent_probe) = agent(steps, origin);
    let (session, backend_probe) = backend(plan, origin);
    let run = run(agent, session, setup, origin).await;
    (run, agent_probe, backend_probe)
}

// ---------------------------------------------------------------------------------------------------
// The protocol's ordering rules (docs/protocol.md, "Messages")

/// Checks the events against the ordering the protocol promises (the one checker,
/// [`earshot_core::protocol::check_order`]), and, when the client read the stream to its end, that
/// the outcome agrees with how the stream ended. Returns the first rule broken.
pub fn check_protocol(run: &Run) -> Result<(), String> {
    let events: Vec<ServerEvent> = run.events.iter().map(|(_, e)| e.clone()).collect();
    earshot_core::protocol::check_order(&events)?;
    if run.client_left {
        // What was read is a prefix; the scheduler may have finished into the channel meanwhile.
        return Ok(());
    }
    match (&run.outcome, events.last()) {
        (Outcome::Completed, Some(ServerEvent::Done(_))) => Ok(()),
        (Outcome::Failed(info), Some(ServerEvent::Error(e))) if e == info => Ok(()),
        (Outcome::Cancelled | Outcome::ClientGone | Outcome::ClientStalled, last) if !matches!(last, Some(ServerEvent::Done(_) | ServerEvent::Error(_))) => {
            Ok(())
        }
        (outcome, last) => Err(format!("outcome {outcome:?} but the stream ended with {:?}", last.map(|e| e.kind()))),
    }
}
