//! Starting a conversation: choose the backend, open its session and start the agent (any failure
//! here is an HTTP error, since no stream has started), then run the scheduler in a task of its own
//! that feeds the response stream.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use earshot_core::protocol::{Delivery, ServerEvent, SessionInfo, PROTOCOL_VERSION};
use earshot_core::scheduler::{self, Outcome};
use earshot_core::speech::{SessionOptions, SpeechBackend};
use earshot_core::timeline::{Clock, Timeline};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::api_error::ApiError;
use crate::config::Gateway;
use crate::request::SpeakRequest;

/// A conversation whose stream is ready to be sent.
pub struct Started {
    pub backend: String,
    /// Why the backend was chosen: `request` or `default`.
    pub reason: &'static str,
    pub conversation_id: String,
    pub request_id: String,
    pub delivery: Delivery,
    pub events: mpsc::Receiver<ServerEvent>,
    /// Cancels the whole conversation; the response stream holds it and fires it when dropped.
    pub cancel: CancellationToken,
}

fn choose<'a>(gw: &'a Gateway, request: &SpeakRequest) -> Result<(&'a Arc<dyn SpeechBackend>, &'static str), ApiError> {
    match &request.backend {
        Some(name) => match gw.backend(name) {
            Some(b) => Ok((b, "request")),
            None => Err(ApiError::bad_request(
                "unknown_backend",
                format!("backend `{name}` is not available here (available: {}, or auto)", gw.backend_names().join(", ")),
            )),
        },
        None => gw.backends.first().map(|b| (b, "default")).ok_or_else(|| ApiError::upstream("no_backend", "no backend is configured", false)),
    }
}

pub async fn start(gw: Arc<Gateway>, request: SpeakRequest, clock: Clock) -> Result<Started, ApiError> {
    let (backend, reason) = choose(&gw, &request)?;
    let backend = backend.clone();
    let voice = match &request.voice {
        Some(v) if backend.voices().iter().any(|x| &x.id == v) => v.clone(),
        Some(v) => {
            let known: Vec<String> = backend.voices().into_iter().map(|x| x.id).collect();
            return Err(ApiError::bad_request("unknown_voice", format!("backend `{}` has no voice `{v}` (voices: {})", backend.name(), known.join(", "))));
        }
        None => backend.default_voice(),
    };
    let cancel = CancellationToken::new();
    let options = SessionOptions { voice: voice.clone(), conversation_id: request.conversation_id.clone(), cancel: cancel.child_token() };
    let session = backend.open(options).await.map_err(|e| ApiError::upstream(&e.code, e.message, e.retryable))?;
    let session_open_ms = clock.now_ms();
    let agent = match gw.agent.start(request.input.clone(), cancel.child_token()).await {
        Ok(agent) => agent,
        Err(e) => {
            cancel.cancel();
            return Err(ApiError::upstream(&e.code, e.message, e.retryable));
        }
    };

    let request_id = uuid::Uuid::new_v4().to_string();
    let info = SessionInfo {
        v: PROTOCOL_VERSION,
        conversation_id: request.conversation_id.clone(),
        request_id: request_id.clone(),
        backend: backend.name().to_string(),
        backend_reason: reason.to_string(),
        arm: None,
        release: request.release.as_str().to_string(),
        voice,
        audio: session.format.clone(),
    };
    let (tx, rx) = mpsc::channel(gw.client_buffer.max(1));
    let task_cancel = cancel.clone();
    let backend_name = backend.name().to_string();
    let conversation_id = request.conversation_id.clone();
    let release = request.release;
    tokio::spawn(async move {
        if tx.send(ServerEvent::Session(info)).await.is_err() {
            task_cancel.cancel();
            return;
        }
        let mut cfg = gw.scheduler.clone();
        cfg.release = release;
        let timeline = Timeline { backend: backend_name, release: release.as_str().into(), session_open_ms: Some(session_open_ms), ..Default::default() };
        let (outcome, timeline) = scheduler::run(agent, session, tx, &cfg, clock, timeline, task_cancel.clone()).await;
        match &outcome {
            Outcome::Completed => tracing::info!(conversation = %conversation_id, ttfa_ms = ?timeline.first_audio_sent_ms, "conversation completed"),
            Outcome::Failed(e) => tracing::warn!(conversation = %conversation_id, code = %e.code, "conversation failed: {}", e.message),
            Outcome::Cancelled | Outcome::ClientGone => tracing::info!(conversation = %conversation_id, "conversation cancelled"),
        }
        if let (Some(namespace), Outcome::Completed | Outcome::Failed(_)) = (&gw.metrics_namespace, &outcome) {
            let epoch_ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
            println!("{}", timeline.emf_line(namespace, None, epoch_ms));
        }
        // Ends whatever is left of the conversation: the backend session and the agent.
        task_cancel.cancel();
    });
    Ok(Started {
        backend: backend.name().to_string(),
        reason,
        conversation_id: request.conversation_id,
        request_id,
        delivery: request.delivery,
        events: rx,
        cancel,
    })
}
