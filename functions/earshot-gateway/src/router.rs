//! The routes, and the response stream of a conversation. Locally, the files of the web folder (the
//! demo page and the browser client) are served at `/` as well.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use earshot_core::error::Error;
use earshot_core::protocol::{Delivery, ServerEvent};
use earshot_core::timeline::Clock;
use futures_util::stream;
use tokio_util::sync::DropGuard;

use crate::api_error::ApiError;
use crate::client_error;
use crate::config::Gateway;
use crate::conversation;
use crate::interrupts::Interrupts;
use crate::owner::Owner;
use crate::request;

/// The HTTP API on `gw`: `POST /v1/speak`, `POST /v1/audio/speech`, interrupts, `GET /v1/voices`,
/// OpenAI's listings (`GET /v1/models`, `GET /v1/audio/voices`),
/// `GET /healthz`, and the demo page where `web_dir` is set.
pub fn router(gw: Arc<Gateway>) -> Router {
    let mut router: Router<Arc<Gateway>> = Router::new()
        .route("/v1/speak", post(speak))
        .route("/v1/audio/speech", post(|gw, headers, body| openai_speech(gw, headers, body, crate::openai_speech::Route::Speech)))
        .route("/v1/audio/speech/captioned", post(|gw, headers, body| openai_speech(gw, headers, body, crate::openai_speech::Route::Captioned)))
        .route("/dev/captioned_speech", post(|gw, headers, body| openai_speech(gw, headers, body, crate::openai_speech::Route::Captioned)))
        .route("/v1/conversations/{id}/interrupt", post(interrupt))
        .route("/v1/voices", get(voices))
        .route("/v1/models", get(crate::openai_listing::models))
        .route("/v1/audio/voices", get(crate::openai_listing::voices))
        .route("/healthz", get(healthz));
    if let Some(dir) = &gw.settings().web_dir {
        router = router.fallback_service(demo_page(dir));
    }
    let allowed_hosts = gw.settings().allowed_hosts.clone();
    let router = router.layer(DefaultBodyLimit::disable()).with_state(gw);
    match allowed_hosts {
        // Outermost: a request from a page elsewhere is refused before anything else runs.
        Some(allowed) => router.layer(axum::middleware::from_fn(move |request: Request, next: axum::middleware::Next| {
            let allowed = allowed.clone();
            async move { crate::host_check::check(allowed, request, next).await }
        })),
        None => router,
    }
}

/// What the demo page may load and reach: its own scripts, styles and images only (no inline script, no
/// `eval`, no plug-ins, no frames around it), and any HTTPS gateway or a local one, since its Gateway
/// field may name a deployed function URL. A script injected into it could run nothing of its own.
pub const PAGE_CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self' https: http://localhost:* http://127.0.0.1:*; object-src 'none'; base-uri 'none'; \
     form-action 'self'; frame-ancestors 'none'";

/// The demo page's files, each with [`PAGE_CONTENT_SECURITY_POLICY`] and `Referrer-Policy: no-referrer`
/// (a page address that held a token would otherwise go with every request it makes elsewhere).
fn demo_page(
    dir: &std::path::Path,
) -> tower_http::set_header::SetResponseHeader<tower_http::set_header::SetResponseHeader<tower_http::services::ServeDir, HeaderValue>, HeaderValue> {
    use tower_http::set_header::SetResponseHeader;
    let files = tower_http::services::ServeDir::new(dir);
    let csp = SetResponseHeader::overriding(files, header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(PAGE_CONTENT_SECURITY_POLICY));
    SetResponseHeader::overriding(csp, header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"))
}

/// Who calls: in token mode the bearer's claims and owner (nothing more happens for a request without a
/// valid token: not even reading its body), else the owner the deployment's auth makes of the request.
/// It takes the request's parts, not the request, across its wait: a body is not `Sync`.
async fn caller(gw: &Gateway, headers: &HeaderMap, uri: &Uri, extensions: &axum::http::Extensions) -> Result<(Option<crate::auth::Claims>, Owner), ApiError> {
    match &gw.settings().auth {
        Some(auth) => auth.verify_request(headers, uri).await.map(|bearer| (Some(bearer.claims), bearer.owner)),
        None => Ok((None, Owner::of_request(extensions, gw.settings().iam_session_owners, gw.settings().address_owners))),
    }
}

/// A request's body, within the size limit (a declared length over it refused before a byte is read) and
/// the body deadline.
async fn read_body(gw: &Gateway, headers: &HeaderMap, body: Request) -> Result<axum::body::Bytes, ApiError> {
    let limit = gw.settings().limits.max_body_bytes;
    let too_large = || ApiError::too_large("body_too_large", format!("the body is larger than {limit} bytes"));
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let timeout = gw.settings().limits.body_timeout;
    match tokio::time::timeout(timeout, axum::body::to_bytes(body.into_body(), limit + 1)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) if is_length_limit(&e) => Err(too_large()),
        Ok(Err(_)) => Err(ApiError::bad_request("incomplete_body", "the body ended before it was complete")),
        Err(_) => Err(ApiError::timeout("body_timeout", format!("the body did not arrive within {} s", timeout.as_secs_f64()))),
    }
}

/// Starts the conversation `request` asks for, once the caller's token allows it.
async fn start(
    gw: &Arc<Gateway>,
    request: request::SpeakRequest,
    scope: Option<crate::auth::Claims>,
    owner: Owner,
    clock: Clock,
) -> Result<conversation::Started, ApiError> {
    if let Some(claims) = &scope {
        claims.check_request(&request)?;
        tracing::info!(sub = claims.sub.as_deref().unwrap_or("-"), conversation = %request.conversation_id, "token accepted");
    }
    // Whatever starting it spawns (the voice's session, the relays around it) is on the gateway's tracker.
    gw.tasks().clone().scope(conversation::start(gw.clone(), request, scope, owner, clock)).await
}

async fn speak(State(gw): State<Arc<Gateway>>, headers: HeaderMap, body: Request) -> Response {
    let clock = Clock::start();
    let (scope, owner) = match caller(&gw, &headers, &body.uri().clone(), body.extensions()).await {
        Ok(caller) => caller,
        Err(e) => return e.into_response(),
    };
    // Counted while the body arrives, and before it is parsed: a caller past its rate costs no parse.
    let (counted, bytes) = tokio::join!(gw.count_request(&owner, scope.as_ref()), read_body(&gw, &headers, body));
    if let Err(e) = counted {
        return e.into_response();
    }
    let bytes = match bytes {
        Ok(bytes) => bytes,
        Err(e) => return e.into_response(),
    };
    let request = match request::parse(&bytes, &headers, &gw.settings().limits) {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    match start(&gw, request, scope, owner, clock).await {
        Ok(started) => stream_response(started, gw.settings().keep_alive),
        Err(e) => e.into_response(),
    }
}

/// `POST /v1/audio/speech`: OpenAI's speech API over the same conversations ([`crate::openai_speech`]).
async fn openai_speech(State(gw): State<Arc<Gateway>>, headers: HeaderMap, body: Request, route: crate::openai_speech::Route) -> Response {
    use crate::openai_speech::{self, OpenAiError};
    let clock = Clock::start();
    let (scope, owner) = match caller(&gw, &headers, &body.uri().clone(), body.extensions()).await {
        Ok(caller) => caller,
        Err(e) => return OpenAiError::from(e).into_response(),
    };
    // Counted while the body arrives, and before it is parsed: a caller past its rate costs no parse.
    let (counted, bytes) = tokio::join!(gw.count_request(&owner, scope.as_ref()), read_body(&gw, &headers, body));
    if let Err(e) = counted {
        return OpenAiError::from(e).into_response();
    }
    let bytes = match bytes {
        Ok(bytes) => bytes,
        Err(e) => return OpenAiError::from(e).into_response(),
    };
    let asked = match openai_speech::parse_for(route, &bytes, &gw.backend_names(), gw.settings().limits.max_text_chars) {
        Ok(asked) => asked,
        Err(e) => return e.into_response(),
    };
    let input_chars = asked.request.input_chars();
    match start(&gw, asked.request, scope, owner, clock).await {
        Ok(started) => match asked.captions {
            Some(captions) => crate::openai_captions::captioned_response(started, &asked.framing, captions, gw.settings().keep_alive),
            None => openai_speech::stream_response(started, &asked.framing, input_chars, gw.settings().keep_alive),
        },
        Err(e) => OpenAiError::from(e).into_response(),
    }
}

/// `POST /v1/conversations/{id}/interrupt`: stops a live conversation wherever it runs. 202 when an
/// interrupt was recorded (again or not: it is idempotent), 404 when no conversation is live under
/// the id, 501 where no shared store is configured and the conversation may run elsewhere.
async fn interrupt(State(gw): State<Arc<Gateway>>, Path(id): Path<String>, headers: HeaderMap, request: Request) -> Response {
    let (scope, owner) = match &gw.settings().auth {
        Some(auth) => match auth.verify_request(&headers, &request.uri().clone()).await.and_then(|bearer| bearer.claims.may_interrupt(&id).map(|()| bearer)) {
            Ok(bearer) => (Some(bearer.claims), bearer.owner),
            Err(e) => return e.into_response(),
        },
        None => (None, Owner::of_request(request.extensions(), gw.settings().iam_session_owners, gw.settings().address_owners)),
    };
    if let Err(e) = request::check_conversation_id(&id) {
        return e.into_response();
    }
    // An interrupt is a request as any other: counted against the caller's rate.
    if let Err(e) = gw.count_request(&owner, scope.as_ref()).await {
        return e.into_response();
    }
    // Read under the same deadline as a speak request's body: a declared body never sent holds nothing.
    let timeout = gw.settings().limits.body_timeout;
    let heard_ms = match tokio::time::timeout(timeout, interrupt_body(request)).await {
        Ok(Ok(heard_ms)) => heard_ms,
        Ok(Err(e)) => return e.into_response(),
        Err(_) => return ApiError::timeout("body_timeout", format!("the body did not arrive within {} s", timeout.as_secs_f64())).into_response(),
    };
    // Only the caller's own conversation under this id: another owner's is as unknown as one never used.
    let key = owner.key(&gw.settings().conversation_secret, &id);
    let accepted = || {
        tracing::info!(conversation = %id, "interrupt asked: the conversation stops");
        (StatusCode::ACCEPTED, Json(serde_json::json!({"conversation_id": id, "interrupted": true}))).into_response()
    };
    let unknown = || {
        tracing::info!(conversation = %id, "interrupt asked: no conversation of this caller is live under the id");
        ApiError::not_found("unknown_conversation", format!("no conversation is live under `{id}`")).into_response()
    };
    match &gw.settings().interrupts {
        Interrupts::Local if gw.registry().interrupt(&key, heard_ms) => accepted(),
        Interrupts::Local => unknown(),
        // Every conversation watches the store, this process's own too: one path, the one measured.
        Interrupts::Unavailable => ApiError::not_implemented(
            "interrupt_unavailable",
            "this gateway has no interrupt store: set EARSHOT_INTERRUPT_TABLE (the CDK app does) so that an interrupt reaches the invocation that speaks",
        )
        .into_response(),
        Interrupts::Shared { store, .. } => match store.interrupt(&key, heard_ms).await {
            Ok(true) => accepted(),
            Ok(false) => unknown(),
            Err(e) => {
                // The store's own text (a table's ARN, an account) stays in the log, under an id to quote.
                let failed = Error::new("interrupt_store_unreachable", format!("cannot record the interrupt: {}", e.message), true);
                ApiError::from_upstream(client_error::for_client(failed, &uuid::Uuid::new_v4().to_string())).into_response()
            }
        },
    }
}

/// The interrupt's optional body, `{"heard_ms": N}`: how much of the answer's audio the client played (then the
/// stream's `interrupted` error says what was heard, to the word). No body, or an empty one, says nothing.
async fn interrupt_body(request: Request) -> Result<Option<u64>, ApiError> {
    const MOST_BYTES: usize = 1024;
    let bytes = axum::body::to_bytes(request.into_body(), MOST_BYTES)
        .await
        .map_err(|_| ApiError::bad_request("invalid_request", format!("the interrupt's body is at most {MOST_BYTES} bytes: {{\"heard_ms\": N}}")))?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Body {
        heard_ms: Option<f64>,
    }
    let refused = |detail: String| ApiError::bad_request("invalid_request", format!("the interrupt's body is {{\"heard_ms\": N}} or nothing: {detail}"));
    // An object only: serde would read a struct from an array as well.
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| refused(e.to_string()))?;
    if !value.is_object() {
        return Err(refused("not a JSON object".into()));
    }
    let body: Body = serde_json::from_value(value).map_err(|e| refused(e.to_string()))?;
    match body.heard_ms {
        None => Ok(None),
        // A day of audio is more than any conversation lasts.
        Some(ms) if ms.is_finite() && (0.0..=86_400_000.0).contains(&ms) => Ok(Some(ms.round() as u64)),
        Some(ms) => Err(ApiError::bad_request("invalid_request", format!("`heard_ms` must be milliseconds from 0 to 86400000, not {ms}"))),
    }
}

/// Whether reading a body failed on its length (chunked, with no declared length), rather than on a
/// client that stopped sending.
fn is_length_limit(e: &axum::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if c.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        cause = c.source();
    }
    false
}

/// The response: headers that say which backend answers and why, then the messages as they come,
/// with keep-alives while nothing flows. Dropping the body (the client went away) cancels the
/// conversation. A stream that ends with neither `done` nor `error` (the client stopped reading, or
/// could not be told why the conversation stopped) is aborted rather than finished, so that the
/// connection is let go and no client mistakes a cut answer for a whole one.
fn stream_response(started: conversation::Started, keep_alive: Duration) -> Response {
    let delivery = started.delivery;
    let guard: DropGuard = started.cancel.clone().drop_guard();
    let request_id: Arc<str> = started.request_id.as_str().into();
    let body = stream::unfold(Some((started.events, guard, false)), move |state| {
        let request_id = request_id.clone();
        async move {
            let (mut events, guard, told_the_end) = state?;
            match tokio::time::timeout(keep_alive, events.recv()).await {
                // An upstream's words never reach the client (client_error.rs).
                Ok(Some(ServerEvent::Error(e))) => {
                    let told = ServerEvent::Error(client_error::for_client(e, &request_id));
                    Some((Ok(delivery.encode(&told)), Some((events, guard, true))))
                }
                Ok(Some(event)) => {
                    let ends = matches!(event, ServerEvent::Done(_));
                    Some((Ok(delivery.encode(&event)), Some((events, guard, told_the_end || ends))))
                }
                Ok(None) if told_the_end => None,
                Ok(None) => Some((Err(std::io::Error::other("the conversation ended without done or error")), None)),
                Err(_) => Some((Ok(delivery.keep_alive()), Some((events, guard, told_the_end)))),
            }
        }
    });
    let mut response = Response::new(Body::from_stream(body));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(delivery.content_type()));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    let put = |headers: &mut HeaderMap, name: &'static str, value: &str| {
        if let Ok(v) = HeaderValue::from_str(value) {
            headers.insert(name, v);
        }
    };
    put(headers, "x-earshot-backend", &started.backend);
    put(headers, "x-earshot-backend-reason", started.reason.as_str());
    if let Some(arm) = &started.arm {
        put(headers, "x-earshot-arm", arm);
    }
    put(headers, "x-earshot-conversation-id", &started.conversation_id);
    put(headers, "x-earshot-request-id", &started.request_id);
    put(headers, "x-earshot-protocol", if delivery == Delivery::Sse { "sse; v=1" } else { "binary; v=1" });
    response
}

async fn voices(State(gw): State<Arc<Gateway>>) -> Json<serde_json::Value> {
    let backends: Vec<serde_json::Value> = gw
        .backends()
        .iter()
        .map(|b| {
            // Each language the backend speaks, with its voice for it when a request names none.
            let languages: serde_json::Map<String, serde_json::Value> = b.languages().into_iter().map(|(l, v)| (l.to_string(), v.into())).collect();
            serde_json::json!({"name": b.name(), "default_voice": b.default_voice(), "languages": languages, "voices": b.voices()})
        })
        .collect();
    // The agent's name and the input limits, so that a page can say what it is talking to and check lengths
    // as the user types.
    let limits = serde_json::json!({"max_prompt_chars": gw.settings().limits.max_prompt_chars, "max_text_chars": gw.settings().limits.max_text_chars, "max_messages": gw.settings().limits.max_messages});
    let mut listing = serde_json::json!({"default_backend": gw.backends().first().map(|b| b.name().to_string()), "backends": backends, "limits": limits});
    // Open to anyone in token mode: voices and limits, not what the gateway talks to.
    if gw.settings().auth.is_none() {
        listing["agent"] = serde_json::json!(gw.agent().name());
    }
    Json(listing)
}

async fn healthz(State(gw): State<Arc<Gateway>>) -> Response {
    let mut all_ok = true;
    let mut report = serde_json::Map::new();
    let sick = gw.arm_health().report();
    // Where strangers may ask (token mode, where `/healthz` takes no token; auth `public`), they learn
    // whether each backend is healthy, never why: a message may name the container's address or the endpoint.
    let strangers = gw.settings().auth.is_some() || gw.settings().address_owners;
    for b in gw.backends() {
        // Healthy means a conversation would be taken now: a backend that still learns its voices
        // is not ready, whatever its own health check says.
        let checked = match b.readiness() {
            Err(e) => Ok(Err(e)),
            Ok(()) => tokio::time::timeout(Duration::from_secs(2), b.health()).await,
        };
        let status = match checked {
            Ok(Ok(())) => serde_json::json!({"ok": true}),
            // Healthy or not, with no message; the logs have it.
            Ok(Err(e)) if strangers => {
                all_ok = false;
                tracing::warn!(backend = b.name(), code = %e.code, "health check failed: {}", earshot_core::redact::redact(&e.message));
                serde_json::json!({"ok": false})
            }
            Ok(Err(e)) => {
                all_ok = false;
                serde_json::json!({"ok": false, "code": e.code, "error": e.message})
            }
            Err(_) => {
                all_ok = false;
                serde_json::json!({"ok": false, "code": "backend_unhealthy", "error": "no answer within 2 s"})
            }
        };
        let mut status = status;
        // Remembered as sick: conversations pass it over until its probe answers (its code only: no
        // upstream text here).
        if let Some(s) = sick.get(b.name()) {
            // A stranger may learn that, not why.
            status["passed_over"] = match strangers {
                true => serde_json::json!(true),
                false => serde_json::json!({"code": s.code, "for_s": s.since.as_secs(), "probe_in_s": s.probe_in.as_secs()}),
            };
        }
        // What the deployment lets it hold at once, for the doctor to set beside the service's quota (not for strangers).
        if let Some((_, max)) = gw.settings().backend_conversations.iter().find(|(name, _)| name == b.name()).filter(|_| !strangers) {
            status["conversations_at_once"] = serde_json::json!(max);
        }
        report.insert(b.name().to_string(), status);
    }
    let status = if all_ok { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(serde_json::json!({"ok": all_ok, "backends": report}))).into_response()
}
