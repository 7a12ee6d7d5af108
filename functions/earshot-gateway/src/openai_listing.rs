//! `GET /v1/models` and `GET /v1/audio/voices`: what UIs written for OpenAI or Kokoro-FastAPI call to fill
//! their lists (Open WebUI, SillyTavern, …), in those servers' shapes, narrowed to what the caller's token
//! allows where it presents one.
//!
//! - `/v1/models`: OpenAI's list (`{"object": "list", "data": [{"id", "object": "model", "created",
//!   "owned_by"}]}`): the names with which the gateway chooses the arm, then each backend the caller may name.
//! - `/v1/audio/voices`: Kokoro-FastAPI's `{"voices": [names]}` (OpenAI's names first, then each backend's
//!   own voices), with earshot's `openai` (what each of OpenAI's names is on each backend, for the
//!   `language` query's language or each backend's default) and `backends` (each backend's voices).
//!
//! The listing is open, as `GET /v1/voices` is; a caller that presents a token sees only the backends and
//! voices it allows, and one whose token does not verify is told so (401), as a speech request would be.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use earshot_core::text::language::Language;
use serde::Deserialize;

use crate::auth::Claims;
use crate::config::Gateway;
use crate::openai_speech::{OpenAiError, CHOOSING_MODELS};
use crate::voice_ask::OPENAI_VOICES;

/// The scope of a caller that presents a token (in token mode); none otherwise.
async fn scope(gw: &Gateway, headers: &HeaderMap, uri: &Uri) -> Result<Option<Claims>, OpenAiError> {
    match &gw.settings().auth {
        Some(auth) if headers.contains_key(axum::http::header::AUTHORIZATION) => Ok(Some(auth.verify_request(headers, uri).await?.claims)),
        _ => Ok(None),
    }
}

/// `GET /v1/models`.
pub async fn models(State(gw): State<Arc<Gateway>>, headers: HeaderMap, uri: Uri) -> Response {
    let scope = match scope(&gw, &headers, &uri).await {
        Ok(scope) => scope,
        Err(e) => return e.into_response(),
    };
    let backends = gw.backend_names().into_iter().filter(|b| scope.as_ref().is_none_or(|s| s.allows_backend(b)));
    let data: Vec<serde_json::Value> = CHOOSING_MODELS
        .iter()
        .map(|m| m.to_string())
        .chain(backends)
        .map(|id| serde_json::json!({"id": id, "object": "model", "created": 0, "owned_by": "earshot"}))
        .collect();
    Json(serde_json::json!({"object": "list", "data": data})).into_response()
}

/// The `language` query of `GET /v1/audio/voices`.
#[derive(Deserialize)]
pub struct VoicesQuery {
    language: Option<String>,
}

/// `GET /v1/audio/voices`.
pub async fn voices(State(gw): State<Arc<Gateway>>, headers: HeaderMap, uri: Uri, Query(query): Query<VoicesQuery>) -> Response {
    let scope = match scope(&gw, &headers, &uri).await {
        Ok(scope) => scope,
        Err(e) => return e.into_response(),
    };
    let language = match query.language.as_deref().map(Language::parse).transpose() {
        Ok(language) => language,
        Err(why) => return OpenAiError(Box::new(crate::api_error::ApiError::bad_request("invalid_language", why)), Some("language")).into_response(),
    };
    let allowed = |voice: &str| scope.as_ref().is_none_or(|s| s.allows_voice(voice));
    let table = &gw.settings().openai_voices;
    let mut names: Vec<String> = OPENAI_VOICES.iter().map(|n| n.to_string()).collect();
    let (mut openai, mut backends) = (serde_json::Map::new(), serde_json::Map::new());
    for backend in gw.backends().iter().filter(|b| scope.as_ref().is_none_or(|s| s.allows_backend(b.name()))) {
        // A backend still starting knows no voices yet: it is listed once it does.
        if backend.readiness().is_err() {
            continue;
        }
        let spoken = language.as_ref().filter(|l| backend.voice_for_language(l).is_some());
        let mapped: serde_json::Map<String, serde_json::Value> =
            table.table(backend.as_ref(), spoken).into_iter().filter(|(_, v)| allowed(v)).map(|(n, v)| (n.to_string(), v.into())).collect();
        openai.insert(backend.name().to_string(), mapped.into());
        let own: Vec<String> = backend.voices().into_iter().map(|v| v.id).filter(|v| allowed(v)).collect();
        names.extend(own.iter().filter(|v| !names.contains(v)).cloned().collect::<Vec<_>>());
        backends.insert(backend.name().to_string(), own.into());
    }
    Json(serde_json::json!({"voices": names, "openai": openai, "backends": backends})).into_response()
}
