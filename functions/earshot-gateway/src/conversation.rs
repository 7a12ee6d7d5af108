//! One conversation, in named steps:
//!
//! 1. [`route`]: which backends may answer (the request's choice, the A/B split or the default, then
//!    the failover order), each with its voice, within what the caller's token allows;
//! 2. [`open`]: the first arm that takes it opens its session ([`earshot_core::failover`]: overflow and
//!    failover are decided there, not here); where the language is not known yet, the answer's first
//!    sentence settles it ([`earshot_core::switcher`], which asks [`crate::route::language_route`]);
//! 3. the agent starts ([`AgentDeadlines::start`](earshot_core::agent_deadlines::AgentDeadlines::start)). A failure up to here is an HTTP error: no stream has started;
//! 4. [`track`]: the conversation is findable by an interrupt (this process's registry, and the shared
//!    store where conversations run in other processes);
//! 5. [`converse`]: a task runs the scheduler, which feeds the response stream, then logs the metrics;
//! 6. [`supervise`]: a second task owns every way the conversation ends (its own end, a panic, an
//!    interrupt, the maximum length, the server's shutdown, the client leaving) and lets go of what
//!    [`track`] recorded.
//!
//! One cancellation tree: the server's shutdown token is the parent of each conversation's token
//! ([`Stopper`]), whose children the agent and the backend sessions hold.

use std::sync::Arc;
use std::time::Duration;

use earshot_core::failover::Opened;
use earshot_core::protocol::{BackendReason, Delivery, ErrorInfo, ServerEvent, SessionInfo, PROTOCOL_VERSION};
use earshot_core::redact::redact;
use earshot_core::scheduler::{self, Conversation, Outcome, TimelineCell};
use earshot_core::tasks::Tasks;
use earshot_core::timeline::{Clock, Timeline};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::api_error::ApiError;
use crate::auth::Claims;
use crate::client_error;
use crate::config::Gateway;
use crate::interrupts::{self, ConversationStore, Interrupts, Registered, Stopper};
use crate::metrics::Ended;
use crate::owner::Owner;
use crate::owner_places::OwnerPlace;
use crate::request::SpeakRequest;
use crate::route::{language_route, open, route, Route};
use crate::routing::Choice;
use earshot_core::error::codes as error_codes;

/// A conversation whose stream is ready to be sent.
pub struct Started {
    /// The backend that speaks first.
    pub backend: String,
    /// Why the backend was chosen.
    pub reason: BackendReason,
    /// The A/B arm the split assigned, also when another backend speaks (overflow, failover); `None`
    /// when the split did not choose.
    pub arm: Option<String>,
    /// The conversation's id, the client's or one the gateway generated.
    pub conversation_id: String,
    /// This request's id, as the `session` message gives it to the client.
    pub request_id: String,
    /// How the stream is framed: server-sent events or binary frames.
    pub delivery: Delivery,
    /// The conversation's messages, in the order they are to be sent.
    pub events: mpsc::Receiver<ServerEvent>,
    /// Cancels the whole conversation; the response stream holds it and fires it when dropped.
    pub cancel: CancellationToken,
}

/// The conversation's first `session` message, and the full arm it overflowed from, if any. The arm is
/// the one the split assigned, also when another backend speaks (overflow, failover): the conversation
/// counts there in every metric, as an A/B comparison by intent to treat needs.
fn session_info(gw: &Gateway, request: &SpeakRequest, route: &Route, opened: &Opened, request_id: &str) -> (SessionInfo, Option<String>) {
    let (reason, overflow_from) = reason(&route.choice, opened);
    let arm = route.choice.arm.clone();
    let experiment = arm.as_ref().map(|_| gw.settings().routing.experiment.clone());
    let info = SessionInfo {
        v: PROTOCOL_VERSION,
        conversation_id: request.conversation_id.clone(),
        request_id: request_id.to_string(),
        backend: opened.backend.clone(),
        backend_reason: reason,
        arm,
        experiment,
        release: request.release.as_str().to_string(),
        voice: opened.session.voice.clone(),
        language: route.language.as_ref().map(|(l, _)| l.clone()),
        language_source: route.language.as_ref().map(|(_, source)| *source),
        audio: opened.session.format.clone(),
    };
    (info, overflow_from)
}

/// The timeline's marks known once the session is open.
fn opening_timeline(route: &Route, opened: &Opened, overflow_from: Option<String>, session_open_ms: f64) -> Timeline {
    Timeline {
        session_open_ms: Some(session_open_ms),
        overflow_from,
        language_from: route.language_from.clone(),
        language: route.language.as_ref().map(|(l, _)| l.to_string()),
        // Why an arm before this one could not open the conversation (a full arm is `overflow_from`).
        failover_from: opened.handovers.iter().rev().find(|h| !h.is_overflow()).map(|h| h.cause.code.clone()),
        ..Default::default()
    }
}

/// Starts `owner`'s conversation: steps 1 to 4 here, 5 and 6 in tasks of their own. Everything kept
/// or sent upstream under the conversation is keyed by its owner and id together ([`Owner::key`]).
pub async fn start(gw: Arc<Gateway>, request: SpeakRequest, scope: Option<Claims>, owner: Owner, clock: Clock) -> Result<Started, ApiError> {
    let slot = gw.conversation_slot()?;
    let route = route(&gw, &request, scope.as_ref(), &owner)?;
    let key = owner.key(&gw.settings().conversation_secret, &request.conversation_id);
    let request_id = uuid::Uuid::new_v4().to_string();
    // What failed upstream is told in earshot's words (client_error.rs), with the request id.
    let for_client = |e: ApiError| ApiError { error: client_error::for_client(e.error, &request_id), ..e };
    // Before anything upstream: the caller's own share of the server, of the voices' bill and of what it
    // may send, asked together (one store round trip's wait on Lambda; a refused one gives the others
    // back when dropped; a store that fails is upstream).
    let (owner_place, budget, input) = tokio::join!(
        gw.owner_place(&owner, &request_id, scope.as_ref()),
        gw.character_budgets(&owner, scope.as_ref()),
        gw.input_charge(&owner, scope.as_ref(), request.input_chars() as u64)
    );
    let (input, owner_place, budget) = (input.map_err(for_client)?, owner_place.map_err(for_client)?, budget.map_err(for_client)?);
    // Live from here, not before (a refused request costs the warm-up nothing): the cache's warm-up
    // steps aside until it ends (warmup.rs).
    let live = gw.conversation_began();
    let stopper = Stopper::child_of(gw.shutdown());
    // Neither the request nor its text told the language, and no voice was named: the answer's first
    // sentence will (the core's switcher).
    let settle = (route.language.is_none() && request.voice.as_ref().and_then(|v| v.named()).is_none())
        .then(|| language_route(gw.clone(), &request, scope.as_ref(), &owner));
    // A sentence the voice passes over before the first audio (a script it cannot read) moves the answer to
    // an arm that speaks it, where there is another backend to move to.
    let reroute = (gw.backend_names().len() > 1).then(|| language_route(gw.clone(), &request, scope.as_ref(), &owner));
    let mut opened = open(&gw, &route, &owner, &request.conversation_id, stopper.token(), settle, reroute).await.map_err(for_client)?;
    let session_open_ms = clock.now_ms();
    // The session stack's outermost layer (earshot_core::session_stack): a sentence is charged once whichever voice ends up speaking it.
    if !budget.is_empty() {
        let charging = crate::character_budget::Charging::new(budget).after(route.lexicon.clone(), route.language.as_ref().map(|(l, _)| l.clone()));
        opened.session = earshot_core::session_stack::outermost(charging, opened.session, stopper.token());
    }
    // An answer read as SSML: its tags rendered once for every arm, outermost (earshot_core::rendering).
    if request.ssml {
        let rendering = earshot_core::rendering::Rendering::new(opened.session.format.clone());
        opened.session = earshot_core::session_stack::outermost(rendering, opened.session, stopper.token());
    }
    // The agent's session (AgentCore's, an HTTP agent's memory) is the owner's conversation, not the id's.
    // Sent upstream from here: what the request sends stays charged whatever becomes of the answer (a
    // request refused before is given it back).
    if let Some(charge) = input {
        charge.sent();
    }
    let input = request.input.clone().for_conversation(&key);
    let agent = match gw.settings().agent_deadlines.start(gw.agent().as_ref(), input, stopper.token().child_token()).await {
        Ok(agent) => agent,
        Err(e) => {
            stopper.token().cancel();
            return Err(for_client(ApiError::from_upstream(e)));
        }
    };
    let (info, overflow_from) = session_info(&gw, &request, &route, &opened, &request_id);
    let (reason, arm, experiment) = (info.backend_reason, info.arm.clone(), info.experiment.clone());
    let timeline = opening_timeline(&route, &opened, overflow_from, session_open_ms);
    let conversation = Conversation {
        agent,
        session: opened.session,
        info,
        release: request.release,
        clock,
        timeline,
        cancel: stopper.token().clone(),
        encoder: earshot_audio::encoder_for(route.output),
    };
    let tracked = track(&gw, &key, &request_id, &stopper).await;
    let (out, events) = mpsc::channel(gw.settings().client_buffer.max(1));
    // Metrics count a conversation in its arm (its `Backend` dimension says which spoke): an arm's
    // overflows and failures are the arm's.
    let assignment = arm.clone().zip(experiment);
    let cell = TimelineCell::default();
    let task = gw.tasks().spawn(converse(gw.clone(), conversation, request.ssml, out.clone(), cell.clone()));
    let counting = Counting {
        conversation_id: request.conversation_id.clone(),
        request_id: request_id.clone(),
        namespace: gw.settings().metrics_namespace.clone(),
        assignment,
        clock,
        cell,
        client_read_limit: gw.settings().scheduler.client_read_timeout,
        api: request.api,
    };
    let ending = Ending {
        shutdown: gw.shutdown().clone(),
        stopper: stopper.clone(),
        max: gw.settings().max_conversation,
        tracked,
        slot,
        counting,
        tasks: gw.tasks().clone(),
        owner_place,
        live,
    };
    gw.tasks().spawn(supervise(task, out, request_id.clone(), ending));
    Ok(Started {
        backend: opened.backend,
        reason,
        arm,
        conversation_id: request.conversation_id,
        request_id,
        delivery: request.delivery,
        events,
        cancel: stopper.token().clone(),
    })
}

/// Why the backend that opened speaks: the router's reason, unless arms were passed over (the last
/// one full: `overflow`, else `failover`). With the first full arm, for the timeline.
fn reason(choice: &Choice, opened: &Opened) -> (BackendReason, Option<String>) {
    let overflow_from = opened.handovers.iter().find(|h| h.is_overflow()).map(|h| h.from.clone());
    let reason = match opened.handovers.last() {
        None => choice.reason,
        Some(h) if h.is_overflow() => BackendReason::Overflow,
        Some(_) => BackendReason::Failover,
    };
    (reason, overflow_from)
}

/// What [`track`] recorded, let go of when the conversation ends.
pub(crate) struct Tracked {
    /// This process's registry entry.
    pub registered: Registered,
    /// The shared store's record: the store, the conversation id and this conversation's token.
    pub store: Option<(Arc<dyn ConversationStore>, String, String)>,
}

/// Step 4: makes the conversation findable by an interrupt from its owner: in this process's registry
/// always, and in the shared store (with a watcher) where conversations run in other processes too
/// (Lambda). `key` is the owner's conversation ([`Owner::key`]), so no other owner can reach it.
pub(crate) async fn track(gw: &Gateway, key: &str, request_id: &str, stopper: &Stopper) -> Tracked {
    let registered = gw.registry().register(key, stopper.clone());
    let Interrupts::Shared { store, poll } = &gw.settings().interrupts else {
        return Tracked { registered, store: None };
    };
    if let Err(e) = store.begin(key, request_id, gw.record_ttl()).await {
        tracing::warn!(conversation = %key, "cannot record the conversation in the interrupt store: {}", redact(&e.to_string()));
    }
    gw.tasks().spawn(interrupts::watch(store.clone(), key.to_string(), *poll, stopper.clone()));
    Tracked { registered, store: Some((store.clone(), key.to_string(), request_id.to_string())) }
}

/// Step 5: runs the scheduler to the conversation's end, leaving its timeline in `cell` (there too if
/// the task is aborted: the supervisor counts every conversation, step 6).
async fn converse(gw: Arc<Gateway>, conversation: Conversation, ssml: bool, out: mpsc::Sender<ServerEvent>, cell: TimelineCell) -> Outcome {
    match ssml {
        false => scheduler::run_into(conversation, &gw.settings().scheduler, out, cell).await,
        // The same settings, the answer read as SSML.
        true => scheduler::run_into(conversation, &scheduler::SchedulerConfig { ssml: true, ..gw.settings().scheduler.clone() }, out, cell).await,
    }
}

/// What the supervisor needs to count the conversation once it has ended: one metric line for every
/// conversation that got a session, with its ending.
pub(crate) struct Counting {
    pub conversation_id: String,
    pub request_id: String,
    /// The metrics namespace (none: no line is written).
    pub namespace: Option<String>,
    /// The arm the split assigned and its experiment.
    pub assignment: Option<(String, String)>,
    pub clock: Clock,
    /// Where the scheduler leaves its timeline, however its task ends.
    pub cell: TimelineCell,
    /// The client read limit, for the log line of a client that stalled.
    pub client_read_limit: Option<Duration>,
    /// The API the request came through, where not earshot's own.
    pub api: Option<&'static str>,
}

impl Counting {
    /// Logs how the conversation ended and writes its metric line.
    fn count(self, ended: Ended, failure: Option<&str>, message: Option<&str>) {
        let Counting { conversation_id, request_id, namespace, assignment, clock, cell, client_read_limit, api } = self;
        let timeline = cell.take().unwrap_or_default();
        let ending = ended.as_str();
        match ended {
            Ended::Completed => tracing::info!(conversation = %conversation_id, ttfa_ms = ?timeline.first_audio_sent_ms, "conversation completed"),
            Ended::Failed => tracing::warn!(conversation = %conversation_id, code = ?failure, "conversation failed: {}", redact(message.unwrap_or_default())),
            Ended::ClientStalled => tracing::warn!(
                conversation = %conversation_id,
                limit_ms = ?client_read_limit.map(|l| l.as_millis()),
                "conversation ended: the client took nothing for the client read limit"
            ),
            _ => tracing::info!(conversation = %conversation_id, ending, "conversation stopped"),
        }
        if let Some(namespace) = &namespace {
            let (arm, experiment) = assignment.as_ref().map(|(a, e)| (a.as_str(), e.as_str())).unzip();
            let ending = crate::metrics::ConversationEnd {
                ended,
                request_id: Some(&request_id),
                arm,
                experiment,
                failure,
                compute_ms: clock.now_ms(),
                memory_mb: None,
                api,
            };
            crate::metrics::log_conversation(&timeline, namespace, ending);
        }
    }
}

/// What can end a conversation from outside its task, and what to let go of when it ends.
pub(crate) struct Ending {
    /// The server stopping (after its drain time): the parent of the stopper's token.
    pub shutdown: CancellationToken,
    /// The conversation's token, with the reason it was stopped.
    pub stopper: Stopper,
    pub max: Option<Duration>,
    pub tracked: Tracked,
    /// The conversation's place under the server's cap, given back when it ends.
    pub slot: Option<tokio::sync::OwnedSemaphorePermit>,
    /// Its metric line, written once it has ended.
    pub counting: Counting,
    /// Where the tasks it spawns are tracked (the gateway's).
    pub tasks: Tasks,
    /// One of its owner's places, given back when it ends.
    pub owner_place: OwnerPlace,
    /// Counts it as live until it ends.
    pub live: crate::config::Live,
}

/// Step 6: watches a conversation's task so that its client is never left hanging, and owns every way
/// the conversation ends. The task ends by itself (`done` or `error` sent), or panics (the stream ends
/// with an `internal` error that names the request id, and the panic is logged), or is stopped from
/// outside: the stopper's token is cancelled (an interrupt, the maximum length, the server's shutdown,
/// the client gone), the task is aborted (it may be waiting on a client that does not read) and the
/// stream ends with the reason as an `error`: `interrupted`, `conversation_too_long`, `shutting_down`
/// (retryable), or nothing for a client that is gone. Either way the conversation's token ends up
/// cancelled, which stops the agent and the backend session, and what [`track`] recorded is let go.
/// Then, however it ended, the conversation is counted: its log line and its metric line. Returns how
/// it ended.
pub(crate) async fn supervise(mut task: JoinHandle<Outcome>, out: mpsc::Sender<ServerEvent>, request_id: String, ending: Ending) -> Ended {
    let Ending { shutdown, stopper, max, tracked, slot, counting, tasks, owner_place, live } = ending;
    let too_long = async {
        match max {
            Some(max) => tokio::time::sleep(max).await,
            None => std::future::pending().await,
        }
    };
    // Biased: when the task has ended, its outcome is what happened, whatever else is ready.
    let (error, ended, failure) = tokio::select! {
        biased;
        joined = &mut task => match joined {
            Err(e) if e.is_panic() => {
                let panic = e.into_panic();
                let what = panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
                tracing::error!(request_id = %request_id, "a conversation task panicked: {what}");
                let error = ErrorInfo::new(error_codes::INTERNAL, format!("earshot failed inside this conversation (request id {request_id}); the failure is logged"), true);
                (Some(error), Ended::Failed, Some(error_codes::INTERNAL.to_string()))
            }
            // The task saw the conversation's token first (it is the scheduler's too): the stop's
            // reason still has to be told.
            Ok(Outcome::Cancelled) | Err(_) => stopped(stopped_because(&stopper, &shutdown)),
            Ok(Outcome::Completed) => (None, Ended::Completed, None),
            // The caller's budget, not the gateway failing: an arm is not judged by it.
            Ok(Outcome::Failed(e)) if e.code == error_codes::CHARACTER_BUDGET_SPENT => (None, Ended::BudgetSpent, None),
            Ok(Outcome::Failed(e)) => (None, Ended::Failed, Some(e.code)),
            Ok(Outcome::ClientGone) => (None, Ended::ClientLeft, None),
            Ok(Outcome::ClientStalled) => (None, Ended::ClientStalled, None),
        },
        _ = stopper.stopped() => stopped(stopped_because(&stopper, &shutdown)),
        _ = too_long => {
            let max = max.unwrap_or_default();
            stopper.stop(ErrorInfo::new(error_codes::CONVERSATION_TOO_LONG, format!("the conversation ran longer than its limit of {} s", max.as_secs()), false));
            stopped(stopper.why())
        }
    };
    stopper.token().cancel();
    if !task.is_finished() {
        task.abort();
        // Wait until the task has stopped, so that nothing it sends can follow the error.
        let _ = (&mut task).await;
    }
    // The conversation is over: an interrupt now finds nothing, and the watcher has stopped.
    let Tracked { registered, store } = tracked;
    drop(registered);
    drop(slot);
    drop(owner_place);
    drop(live);
    if let Some((store, id, token)) = store {
        tasks.spawn(async move {
            if let Err(e) = store.end(&id, &token).await {
                tracing::warn!(conversation = %id, "cannot clear the conversation from the interrupt store: {}", redact(&e.to_string()));
            }
        });
    }
    // An interrupt that said how much the client played: the words heard, from what the answer sent.
    let error = error.map(|e| match e.heard_ms {
        Some(heard_ms) if e.code == error_codes::INTERRUPTED => ErrorInfo { heard: Some(counting.cell.heard(heard_ms as f64)), ..e },
        _ => e,
    });
    let message = error.as_ref().map(|e| e.message.clone());
    if let Some(error) = error {
        // A client that does not read is not waited for long.
        let _ = tokio::time::timeout(Duration::from_secs(1), out.send(ServerEvent::Error(error))).await;
    }
    counting.count(ended, failure.as_deref(), message.as_deref());
    ended
}

/// How a conversation stopped from outside ended, by the reason it was stopped: the `error` the client
/// is told, the ending counted, and no failure code (a stop is not the gateway failing).
fn stopped(why: Option<ErrorInfo>) -> (Option<ErrorInfo>, Ended, Option<String>) {
    let ended = match why.as_ref().map(|e| e.code.as_str()) {
        None => Ended::ClientLeft,
        Some(error_codes::INTERRUPTED) => Ended::Interrupted,
        Some(error_codes::CONVERSATION_TOO_LONG) => Ended::TooLong,
        Some(error_codes::SHUTTING_DOWN) => Ended::ShuttingDown,
        Some(_) => Ended::Stopped,
    };
    (why, ended, None)
}

/// The error a stopped conversation ends with: the reason given, else the server's shutdown, else
/// none (the client went away: nobody is left to tell).
fn stopped_because(stopper: &Stopper, shutdown: &CancellationToken) -> Option<ErrorInfo> {
    stopper
        .why()
        .or_else(|| shutdown.is_cancelled().then(|| ErrorInfo::new(error_codes::SHUTTING_DOWN, "the server is shutting down; retry on another instance", true)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counting with no metric line (no namespace): the ending is what `supervise` returns.
    fn uncounted() -> Counting {
        Counting {
            conversation_id: "c-1".into(),
            request_id: "req-1".into(),
            namespace: None,
            assignment: None,
            clock: Clock::start(),
            cell: TimelineCell::default(),
            client_read_limit: None,
            api: None,
        }
    }

    async fn supervised(
        task: impl std::future::Future<Output = ()> + Send + 'static,
        shutdown: &CancellationToken,
    ) -> (Vec<ServerEvent>, CancellationToken, Ended) {
        supervised_with(task, shutdown, Stopper::child_of(shutdown), None).await
    }

    /// Runs `task` as a conversation (it sends one `text` first) under the supervisor; returns what
    /// the client received and the conversation's token.
    async fn supervised_with(
        task: impl std::future::Future<Output = ()> + Send + 'static,
        shutdown: &CancellationToken,
        stopper: Stopper,
        max: Option<Duration>,
    ) -> (Vec<ServerEvent>, CancellationToken, Ended) {
        let (tx, mut rx) = mpsc::channel(8);
        let inner_tx = tx.clone();
        let task = tokio::spawn(async move {
            let _ = inner_tx.send(ServerEvent::Text(earshot_core::protocol::TextDelta { text: "Hi".into() })).await;
            task.await;
            Outcome::Completed
        });
        let registry: Arc<crate::interrupts::Registry> = Arc::default();
        let registered = registry.register("c-1", stopper.clone());
        let token = stopper.token().clone();
        let ending = Ending {
            shutdown: shutdown.clone(),
            stopper,
            max,
            tracked: Tracked { registered, store: None },
            slot: None,
            counting: uncounted(),
            tasks: Tasks::new(),
            owner_place: OwnerPlace::Unlimited,
            live: crate::config::Live::detached(),
        };
        let supervisor = tokio::spawn(supervise(task, tx, "req-1".into(), ending));
        let mut events = Vec::new();
        while let Some(e) = rx.recv().await {
            events.push(e);
        }
        assert!(!registry.interrupt("c-1", None), "the conversation is no longer registered once it ended");
        (events, token, supervisor.await.expect("the supervisor ends"))
    }

    #[tokio::test]
    async fn a_panic_ends_the_stream_with_an_internal_error() {
        let (events, cancel, ended) = supervised(async { panic!("injected") }, &CancellationToken::new()).await;
        assert!(matches!(events[0], ServerEvent::Text(_)));
        match &events[1] {
            ServerEvent::Error(e) => {
                assert_eq!(e.code, "internal");
                assert!(e.message.contains("req-1"), "{}", e.message);
            }
            other => panic!("expected an error, got {other:?}"),
        }
        assert_eq!(events.len(), 2);
        assert!(cancel.is_cancelled(), "the agent and the backend are stopped");
        assert_eq!(ended, Ended::Failed, "a panic is counted as a failure");
    }

    #[tokio::test]
    async fn shutdown_stops_the_task_and_ends_the_stream() {
        let shutdown = CancellationToken::new();
        let trigger = shutdown.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            trigger.cancel();
        });
        let (events, cancel, ended) = supervised(std::future::pending(), &shutdown).await;
        assert!(matches!(&events[1], ServerEvent::Error(e) if e.code == "shutting_down" && e.retryable), "{events:?}");
        assert!(cancel.is_cancelled());
        assert_eq!(ended, Ended::ShuttingDown);
    }

    #[tokio::test]
    async fn a_client_that_leaves_ends_the_conversation_without_an_error() {
        // The response body's drop guard cancels the conversation's token, with no reason given.
        let shutdown = CancellationToken::new();
        let stopper = Stopper::child_of(&shutdown);
        let token = stopper.token().clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            token.cancel();
        });
        let (events, cancel, ended) = supervised_with(std::future::pending(), &shutdown, stopper, None).await;
        assert_eq!(events.len(), 1, "nothing follows the text: {events:?}");
        assert!(cancel.is_cancelled());
        assert!(!shutdown.is_cancelled(), "a conversation's end does not reach the server");
        assert_eq!(ended, Ended::ClientLeft);
    }

    #[tokio::test]
    async fn a_task_that_sees_the_stop_first_still_ends_the_stream_with_its_reason() {
        // The scheduler holds the conversation's token and may return `Cancelled` before the
        // supervisor notices the stop: the client must hear why all the same.
        for (by_shutdown, code) in [(true, "shutting_down"), (false, "interrupted")] {
            let shutdown = CancellationToken::new();
            let stopper = Stopper::child_of(&shutdown);
            let (tx, mut rx) = mpsc::channel(8);
            let token = stopper.token().clone();
            let task = tokio::spawn(async move {
                token.cancelled().await;
                Outcome::Cancelled
            });
            let registry: Arc<crate::interrupts::Registry> = Arc::default();
            let registered = registry.register("c-1", stopper.clone());
            let ending = Ending {
                shutdown: shutdown.clone(),
                stopper: stopper.clone(),
                max: None,
                tracked: Tracked { registered, store: None },
                slot: None,
                counting: uncounted(),
                tasks: Tasks::new(),
                owner_place: OwnerPlace::Unlimited,
                live: crate::config::Live::detached(),
            };
            // The task is already over when the supervisor starts.
            if by_shutdown {
                shutdown.cancel();
            } else {
                stopper.stop(crate::interrupts::interrupted(None));
            }
            while !task.is_finished() {
                tokio::task::yield_now().await;
            }
            let supervisor = tokio::spawn(supervise(task, tx, "req-1".into(), ending));
            let event = rx.recv().await;
            assert!(matches!(&event, Some(ServerEvent::Error(e)) if e.code == code), "{code}: {event:?}");
            let ended = supervisor.await.unwrap();
            assert_eq!(ended, if by_shutdown { Ended::ShuttingDown } else { Ended::Interrupted });
        }
    }

    #[tokio::test]
    async fn a_task_that_ends_adds_nothing() {
        let (events, cancel, ended) = supervised(async {}, &CancellationToken::new()).await;
        assert_eq!(events.len(), 1);
        assert!(cancel.is_cancelled());
        assert_eq!(ended, Ended::Completed);
    }

    #[tokio::test(start_paused = true)]
    async fn an_interrupt_stops_the_task_and_ends_the_stream_with_interrupted() {
        let shutdown = CancellationToken::new();
        let stopper = Stopper::child_of(&shutdown);
        let trigger = stopper.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            trigger.stop(crate::interrupts::interrupted(None));
        });
        let (events, cancel, ended) = supervised_with(std::future::pending(), &shutdown, stopper, None).await;
        assert!(matches!(events.last(), Some(ServerEvent::Error(e)) if e.code == "interrupted" && !e.retryable), "{events:?}");
        assert!(cancel.is_cancelled(), "the agent and the backend are stopped too");
        assert_eq!(ended, Ended::Interrupted);
    }

    #[tokio::test(start_paused = true)]
    async fn a_conversation_past_its_maximum_length_is_stopped() {
        let started = tokio::time::Instant::now();
        let (events, cancel, ended) =
            supervised_with(std::future::pending(), &CancellationToken::new(), Stopper::default(), Some(Duration::from_secs(280))).await;
        assert!(matches!(events.last(), Some(ServerEvent::Error(e)) if e.code == "conversation_too_long"), "{events:?}");
        assert_eq!(started.elapsed().as_secs(), 280);
        assert!(cancel.is_cancelled());
        assert_eq!(ended, Ended::TooLong);
    }
}
