//! Starting a conversation: choose the backend, open its session and start the agent (any failure
//! here is an HTTP error, since no stream has started), then run the scheduler in a task of its own
//! that feeds the response stream.

use std::sync::Arc;
use std::time::Duration;

use earshot_core::protocol::{Delivery, ErrorInfo, ServerEvent, SessionInfo, PROTOCOL_VERSION};
use earshot_core::scheduler::{self, Fallback, Outcome};
use earshot_core::speech::{codes, SessionOptions, SpeechBackend, SpeechSession};
use earshot_core::timeline::{Clock, Timeline};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::api_error::ApiError;
use crate::config::Gateway;
use crate::interrupts::{self, Interrupts, Registered, Stopper};
use crate::request::SpeakRequest;
use crate::routing::Reason;

/// A conversation whose stream is ready to be sent.
pub struct Started {
    pub backend: String,
    /// Why the backend was chosen.
    pub reason: Reason,
    pub arm: Option<String>,
    pub conversation_id: String,
    pub request_id: String,
    pub delivery: Delivery,
    pub events: mpsc::Receiver<ServerEvent>,
    /// Cancels the whole conversation; the response stream holds it and fires it when dropped.
    pub cancel: CancellationToken,
}

fn voice_for(backend: &Arc<dyn SpeechBackend>, requested: Option<&String>) -> Result<String, ApiError> {
    match requested {
        Some(v) if backend.voices().iter().any(|x| &x.id == v) => Ok(v.clone()),
        Some(v) => {
            let known: Vec<String> = backend.voices().into_iter().map(|x| x.id).collect();
            Err(ApiError::bad_request("unknown_voice", format!("backend `{}` has no voice `{v}` (voices: {})", backend.name(), known.join(", "))))
        }
        None => Ok(backend.default_voice()),
    }
}

fn session_info(
    request: &SpeakRequest,
    request_id: &str,
    backend: &str,
    reason: Reason,
    arm: Option<String>,
    voice: String,
    session: &SpeechSession,
) -> SessionInfo {
    SessionInfo {
        v: PROTOCOL_VERSION,
        conversation_id: request.conversation_id.clone(),
        request_id: request_id.to_string(),
        backend: backend.to_string(),
        backend_reason: reason.as_str().to_string(),
        arm,
        release: request.release.as_str().to_string(),
        voice,
        audio: session.format.clone(),
    }
}

pub async fn start(gw: Arc<Gateway>, request: SpeakRequest, clock: Clock) -> Result<Started, ApiError> {
    // A token may allow only some backends: the choice, and any failover, stay among them.
    let names: Vec<String> = gw.backend_names().into_iter().filter(|n| request.scope.as_ref().is_none_or(|s| s.allows_backend(n))).collect();
    let choice = gw.routing.choose(request.backend.as_deref(), &request.conversation_id, &names)?;
    let mut fallbacks: Vec<Arc<dyn SpeechBackend>> = gw.routing.fallbacks(&choice, &names).iter().filter_map(|n| gw.backend(n).cloned()).collect();
    let first = gw.backend(&choice.backend).cloned().ok_or_else(|| ApiError::upstream("no_backend", "no backend is configured", false))?;
    let cancel = CancellationToken::new();
    let request_id = uuid::Uuid::new_v4().to_string();
    let open = |backend: &Arc<dyn SpeechBackend>, voice: String| {
        let options = SessionOptions { voice, conversation_id: request.conversation_id.clone(), cancel: cancel.child_token() };
        let backend = backend.clone();
        async move { backend.open(options).await }
    };

    // Open the chosen backend. With failover, one that is starting or failing hands over to the next
    // (`failover`), and one that is full spills over to it (`overflow`); without, the client is told
    // before any stream starts (503 with Retry-After for starting or full).
    let (mut backend, mut reason, mut requested_voice) = (first, choice.reason, request.voice.clone());
    let mut overflow_from: Option<String> = None;
    let (session, voice) = loop {
        let opened = match backend.readiness() {
            Err(e) => Err(e),
            Ok(()) => {
                let voice = voice_for(&backend, requested_voice.as_ref())?;
                if request.scope.as_ref().is_some_and(|s| !s.allows_voice(&voice)) {
                    return Err(ApiError::forbidden(
                        "token_out_of_scope",
                        format!("this token may not use the voice `{voice}` of {}: name an allowed voice", backend.name()),
                    ));
                }
                open(&backend, voice.clone()).await.map(|session| (session, voice))
            }
        };
        match opened {
            Ok(opened) => break opened,
            Err(e) if !fallbacks.is_empty() => {
                let full = e.code == codes::BUSY;
                tracing::warn!(
                    "{} cannot take the conversation ({}: {}); {}",
                    backend.name(),
                    e.code,
                    e.message,
                    if full { "spilling over" } else { "failing over" }
                );
                if full {
                    overflow_from.get_or_insert_with(|| backend.name().to_string());
                    reason = Reason::Overflow;
                } else {
                    reason = Reason::Failover;
                }
                backend = fallbacks.remove(0);
                requested_voice = None;
            }
            Err(e) => {
                if e.code == codes::BUSY {
                    print_refusal(&gw, backend.name());
                }
                return Err(ApiError::from_backend(e));
            }
        }
    };
    let session_open_ms = clock.now_ms();
    let agent = match gw.agent.start(request.input.clone(), cancel.child_token()).await {
        Ok(agent) => agent,
        Err(e) => {
            cancel.cancel();
            return Err(ApiError::from_upstream(e));
        }
    };
    let arm = if reason == Reason::Ab { choice.arm.clone() } else { None };
    let info = session_info(&request, &request_id, backend.name(), reason, arm.clone(), voice, &session);
    // A backend that fails before any audio mid-stream hands over to the next one.
    let fallback: Option<Fallback> = fallbacks.first().cloned().map(|next| {
        let voice = next.default_voice();
        let opening = open(&next, voice.clone());
        let (request, request_id) = (request.clone(), request_id.clone());
        let fut: Fallback = Box::pin(async move {
            let session = opening.await.ok()?;
            let info = session_info(&request, &request_id, next.name(), Reason::Failover, None, voice, &session);
            Some((session, info))
        });
        fut
    });

    let (tx, rx) = mpsc::channel(gw.client_buffer.max(1));
    let task_cancel = cancel.clone();
    let backend_name = backend.name().to_string();
    let conversation_id = request.conversation_id.clone();
    let release = request.release;
    // Metrics count a conversation in the arm the A/B split chose for it, even when it spilled over or
    // failed over to another backend (its `Backend` dimension says which spoke): an arm's overflows and
    // failures are the arm's, as an A/B comparison by intent to treat needs.
    let arm_for_metrics = if choice.reason == Reason::Ab { choice.arm.clone() } else { None };
    let (supervisor_out, supervisor_cancel, shutdown) = (tx.clone(), cancel.clone(), gw.shutdown.clone());
    let max_conversation = gw.max_conversation;
    // Interrupts: this process's registry always; the shared store too where conversations run in
    // other processes (Lambda).
    let stopper = Stopper::default();
    let registered = gw.registry.register(&request.conversation_id, stopper.clone());
    let mut store_end = None;
    if let Interrupts::Shared { store, poll } = &gw.interrupts {
        let ttl = gw.max_conversation.unwrap_or(Duration::from_secs(900)) + Duration::from_secs(60);
        if let Err(e) = store.begin(&request.conversation_id, &request_id, ttl).await {
            tracing::warn!(conversation = %request.conversation_id, "cannot record the conversation in the interrupt store: {e}");
        }
        tokio::spawn(interrupts::watch(store.clone(), request.conversation_id.clone(), *poll, stopper.clone()));
        store_end = Some((store.clone(), request.conversation_id.clone(), request_id.clone()));
    }
    let conversation = tokio::spawn(async move {
        if tx.send(ServerEvent::Session(info)).await.is_err() {
            task_cancel.cancel();
            return;
        }
        let mut cfg = gw.scheduler.clone();
        cfg.release = release;
        let timeline =
            Timeline { backend: backend_name, release: release.as_str().into(), session_open_ms: Some(session_open_ms), overflow_from, ..Default::default() };
        let (outcome, timeline) = scheduler::run(agent, session, tx, &cfg, clock, timeline, task_cancel.clone(), fallback).await;
        match &outcome {
            Outcome::Completed => tracing::info!(conversation = %conversation_id, ttfa_ms = ?timeline.first_audio_sent_ms, "conversation completed"),
            Outcome::Failed(e) => tracing::warn!(conversation = %conversation_id, code = %e.code, "conversation failed: {}", e.message),
            Outcome::Cancelled | Outcome::ClientGone => tracing::info!(conversation = %conversation_id, "conversation cancelled"),
        }
        if let (Some(namespace), Outcome::Completed | Outcome::Failed(_)) = (&gw.metrics_namespace, &outcome) {
            crate::metrics::log_conversation(&timeline, namespace, arm_for_metrics.as_deref(), matches!(outcome, Outcome::Failed(_)));
        }
        // Ends whatever is left of the conversation: the backend session and the agent.
        task_cancel.cancel();
    });
    let ending = Ending { shutdown, stopper, max: max_conversation, registered, store_end };
    tokio::spawn(supervise(conversation, supervisor_out, request_id.clone(), ending, supervisor_cancel));
    Ok(Started {
        backend: backend.name().to_string(),
        reason,
        arm,
        conversation_id: request.conversation_id,
        request_id,
        delivery: request.delivery,
        events: rx,
        cancel,
    })
}

/// What can end a conversation from outside its task, and what to let go of when it ends.
pub(crate) struct Ending {
    /// The server stopping (after its drain time).
    pub shutdown: CancellationToken,
    /// An interrupt, or the maximum length.
    pub stopper: Stopper,
    pub max: Option<Duration>,
    pub registered: Registered,
    /// The shared store's record of the conversation, forgotten at the end.
    pub store_end: Option<(Arc<dyn interrupts::ConversationStore>, String, String)>,
}

/// Watches a conversation's task so that its client is never left hanging: if the task panics, the
/// stream ends with an `internal` error that names the request id (and the panic is logged); if the
/// server shuts down, the conversation is interrupted or it runs past its maximum length, the task is
/// stopped and the stream ends with `shutting_down` (retryable), `interrupted` or
/// `conversation_too_long`. Either way the conversation's token is cancelled, which stops the agent
/// and the backend session.
pub(crate) async fn supervise(mut task: JoinHandle<()>, out: mpsc::Sender<ServerEvent>, request_id: String, ending: Ending, cancel: CancellationToken) {
    let Ending { shutdown, stopper, max, registered, store_end } = ending;
    let too_long = async {
        match max {
            Some(max) => {
                tokio::time::sleep(max).await;
                max
            }
            None => std::future::pending().await,
        }
    };
    let error = tokio::select! {
        joined = &mut task => match joined {
            Err(e) if e.is_panic() => {
                let panic = e.into_panic();
                let what = panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
                tracing::error!(request_id = %request_id, "a conversation task panicked: {what}");
                Some(ErrorInfo { code: "internal".into(), message: format!("earshot failed inside this conversation (request id {request_id}); the failure is logged"), retryable: true })
            }
            _ => None,
        },
        _ = shutdown.cancelled() => Some(ErrorInfo { code: "shutting_down".into(), message: "the server is shutting down; retry on another instance".into(), retryable: true }),
        why = stopper.stopped() => Some(why),
        max = too_long => Some(ErrorInfo::new("conversation_too_long", format!("the conversation ran longer than its limit of {} s", max.as_secs()), false)),
    };
    if error.is_some() && !task.is_finished() {
        task.abort();
        // Wait until the task has stopped, so that nothing it sends can follow the error.
        let _ = (&mut task).await;
    }
    cancel.cancel();
    // The conversation is over: an interrupt now finds nothing, and the watcher stops.
    drop(registered);
    stopper.stop(interrupts::interrupted());
    if let Some((store, id, token)) = store_end {
        tokio::spawn(async move {
            if let Err(e) = store.end(&id, &token).await {
                tracing::warn!(conversation = %id, "cannot clear the conversation from the interrupt store: {e}");
            }
        });
    }
    if let Some(error) = error {
        // A client that does not read is not waited for long.
        let _ = tokio::time::timeout(Duration::from_secs(1), out.send(ServerEvent::Error(error))).await;
    }
}

/// A metrics line for a conversation refused because its backend was full and no other could take it.
fn print_refusal(gw: &Gateway, backend: &str) {
    if let Some(namespace) = &gw.metrics_namespace {
        crate::metrics::log_refusal(backend, namespace);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn supervised(task: impl std::future::Future<Output = ()> + Send + 'static, shutdown: &CancellationToken) -> (Vec<ServerEvent>, CancellationToken) {
        supervised_with(task, shutdown, Stopper::default(), None).await
    }

    async fn supervised_with(
        task: impl std::future::Future<Output = ()> + Send + 'static,
        shutdown: &CancellationToken,
        stopper: Stopper,
        max: Option<Duration>,
    ) -> (Vec<ServerEvent>, CancellationToken) {
        let (tx, mut rx) = mpsc::channel(8);
        let cancel = CancellationToken::new();
        let inner_tx = tx.clone();
        let task = tokio::spawn(async move {
            let _ = inner_tx.send(ServerEvent::Text(earshot_core::protocol::TextDelta { text: "Hi".into() })).await;
            task.await;
        });
        let registry: Arc<crate::interrupts::Registry> = Arc::default();
        let registered = registry.register("c-1", stopper.clone());
        let ending = Ending { shutdown: shutdown.clone(), stopper, max, registered, store_end: None };
        tokio::spawn(supervise(task, tx, "req-1".into(), ending, cancel.clone()));
        let mut events = Vec::new();
        while let Some(e) = rx.recv().await {
            events.push(e);
        }
        (events, cancel)
    }

    #[tokio::test]
    async fn a_panic_ends_the_stream_with_an_internal_error() {
        let (events, cancel) = supervised(async { panic!("injected") }, &CancellationToken::new()).await;
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
    }

    #[tokio::test]
    async fn shutdown_stops_the_task_and_ends_the_stream() {
        let shutdown = CancellationToken::new();
        let trigger = shutdown.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            trigger.cancel();
        });
        let (events, cancel) = supervised(std::future::pending(), &shutdown).await;
        assert!(matches!(&events[1], ServerEvent::Error(e) if e.code == "shutting_down" && e.retryable), "{events:?}");
        assert!(cancel.is_cancelled());
    }

    #[tokio::test]
    async fn a_task_that_ends_adds_nothing() {
        let (events, cancel) = supervised(async {}, &CancellationToken::new()).await;
        assert_eq!(events.len(), 1);
        assert!(cancel.is_cancelled());
    }

    #[tokio::test(start_paused = true)]
    async fn an_interrupt_stops_the_task_and_ends_the_stream_with_interrupted() {
        let stopper = Stopper::default();
        let trigger = stopper.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            trigger.stop(crate::interrupts::interrupted());
        });
        let (events, cancel) = supervised_with(std::future::pending(), &CancellationToken::new(), stopper, None).await;
        assert!(matches!(events.last(), Some(ServerEvent::Error(e)) if e.code == "interrupted" && !e.retryable), "{events:?}");
        assert!(cancel.is_cancelled(), "the agent and the backend are stopped too");
    }

    #[tokio::test(start_paused = true)]
    async fn a_conversation_past_its_maximum_length_is_stopped() {
        let started = tokio::time::Instant::now();
        let (events, cancel) = supervised_with(std::future::pending(), &CancellationToken::new(), Stopper::default(), Some(Duration::from_secs(280))).await;
        assert!(matches!(events.last(), Some(ServerEvent::Error(e)) if e.code == "conversation_too_long"), "{events:?}");
        assert_eq!(started.elapsed().as_secs(), 280);
        assert!(cancel.is_cancelled());
    }
}
