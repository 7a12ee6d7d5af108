//! Starting a conversation: choose the backend, open its session and start the agent (any failure
//! here is an HTTP error, since no stream has started), then run the scheduler in a task of its own
//! that feeds the response stream.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use earshot_core::protocol::{Delivery, ServerEvent, SessionInfo, PROTOCOL_VERSION};
use earshot_core::scheduler::{self, Fallback, Outcome};
use earshot_core::speech::{SessionOptions, SpeechBackend, SpeechSession};
use earshot_core::timeline::{Clock, Timeline};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::api_error::ApiError;
use crate::config::Gateway;
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

fn session_info(request: &SpeakRequest, request_id: &str, backend: &str, reason: Reason, arm: Option<String>, voice: String, session: &SpeechSession) -> SessionInfo {
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
    let names = gw.backend_names();
    let choice = gw.routing.choose(request.backend.as_deref(), &request.conversation_id, &names)?;
    let mut fallbacks: Vec<Arc<dyn SpeechBackend>> = gw.routing.fallbacks(&choice, &names).iter().filter_map(|n| gw.backend(n).cloned()).collect();
    let backend = gw.backend(&choice.backend).cloned().ok_or_else(|| ApiError::upstream("no_backend", "no backend is configured", false))?;
    let voice = voice_for(&backend, request.voice.as_ref())?;
    let cancel = CancellationToken::new();
    let request_id = uuid::Uuid::new_v4().to_string();
    let open = |backend: &Arc<dyn SpeechBackend>, voice: String| {
        let options = SessionOptions { voice, conversation_id: request.conversation_id.clone(), cancel: cancel.child_token() };
        let backend = backend.clone();
        async move { backend.open(options).await }
    };

    // Open the chosen backend; with failover, a backend that cannot be opened hands over to the next.
    let (mut backend, mut reason, mut voice) = (backend, choice.reason, voice);
    let session = loop {
        match open(&backend, voice.clone()).await {
            Ok(session) => break session,
            Err(e) if !fallbacks.is_empty() => {
                tracing::warn!("{} failed to open ({}); failing over", backend.name(), e.message);
                backend = fallbacks.remove(0);
                voice = backend.default_voice();
                reason = Reason::Failover;
            }
            Err(e) => return Err(ApiError::upstream(&e.code, e.message, e.retryable)),
        }
    };
    let session_open_ms = clock.now_ms();
    let agent = match gw.agent.start(request.input.clone(), cancel.child_token()).await {
        Ok(agent) => agent,
        Err(e) => {
            cancel.cancel();
            return Err(ApiError::upstream(&e.code, e.message, e.retryable));
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
    let arm_for_metrics = arm.clone();
    tokio::spawn(async move {
        if tx.send(ServerEvent::Session(info)).await.is_err() {
            task_cancel.cancel();
            return;
        }
        let mut cfg = gw.scheduler.clone();
        cfg.release = release;
        let timeline = Timeline { backend: backend_name, release: release.as_str().into(), session_open_ms: Some(session_open_ms), ..Default::default() };
        let (outcome, timeline) = scheduler::run(agent, session, tx, &cfg, clock, timeline, task_cancel.clone(), fallback).await;
        match &outcome {
            Outcome::Completed => tracing::info!(conversation = %conversation_id, ttfa_ms = ?timeline.first_audio_sent_ms, "conversation completed"),
            Outcome::Failed(e) => tracing::warn!(conversation = %conversation_id, code = %e.code, "conversation failed: {}", e.message),
            Outcome::Cancelled | Outcome::ClientGone => tracing::info!(conversation = %conversation_id, "conversation cancelled"),
        }
        if let (Some(namespace), Outcome::Completed | Outcome::Failed(_)) = (&gw.metrics_namespace, &outcome) {
            let epoch_ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
            println!("{}", timeline.emf_line(namespace, arm_for_metrics.as_deref(), epoch_ms));
        }
        // Ends whatever is left of the conversation: the backend session and the agent.
        task_cancel.cancel();
    });
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
