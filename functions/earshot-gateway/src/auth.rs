//! Token mode: a browser or a mobile app cannot sign AWS requests, so the app's own backend mints a
//! short-lived token (a JWT, HS256) and the client presents it, as real-time voice platforms do. The
//! gateway verifies it on every request before any work: signature (any of the configured keys, by
//! `kid`, so that a key can be rotated by accepting the current and the previous one), expiry, audience;
//! then the scopes the token carries:
//!
//! | claim | meaning |
//! | --- | --- |
//! | `exp`, `aud` | required: the expiry (at most the gateway's maximum lifetime away, one hour by default), and this gateway's audience (a string, or an array holding it) |
//! | `nbf` | optional: not valid before (with the same leeway as `exp`) |
//! | `sub` | who the token is for: the owner of the conversations it starts (see `owner.rs`); a token without one owns only its own |
//! | `backends`, `voices`, `releases` | the backends, voices and release modes the bearer may use |
//! | `max_chars` | the most characters a request may send (prompt, earlier turns, or text) |
//! | `lexicon` | the owner's pronunciation lexicon: one the deployment names (`EARSHOT_OWNER_LEXICONS`), its entries said before the deployment's (a name the deployment does not have is a 403) |
//! | `conversations` | the conversation ids the bearer may speak under and interrupt (an id, `*`, or whole segments then `:*`: `conversation_scope.rs`) |
//! | `max_conversations`, `max_chars_per_hour`, `max_input_chars_per_hour`, `max_requests_per_minute` | the owner's live conversations, characters spoken and sent per rolling hour, and requests per minute, narrowed below the gateway's own limits (a token narrows them, never widens: the lower of the two holds) |
//!
//! A claim left out allows anything, except `conversations`: without it the bearer may interrupt nothing.
//! Each failure has its own code (401, with `WWW-Authenticate: Bearer`: `token_missing`,
//! `token_malformed`, `token_expired`, `token_not_yet_valid`, `token_lifetime_too_long`,
//! `token_bad_signature`, `token_wrong_audience`; 403: `token_out_of_scope`).
//! Verification and minting are `jsonwebtoken`'s; the scopes are this module's.
//!
//! Keys kept in Secrets Manager are read again while the process lives ([`TokenAuth::with_refresh`]):
//! a warm Lambda would otherwise go on accepting a key removed from the secret until AWS recycles it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

use axum::http::{HeaderMap, Uri};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::api_error::ApiError;
use crate::conversation_scope::{check_pattern, covers};
use crate::owner::Owner;
use crate::request::SpeakRequest;

/// The query parameter for clients that cannot set an `Authorization` header.
pub const QUERY_PARAMETER: &str = "access_token";
/// Seconds of clock difference tolerated between the minting backend and the gateway.
const LEEWAY_SECONDS: u64 = 5;

/// The longest a token may be valid for, by default: a token is handed to a browser, so it should not
/// outlive a session by much.
pub const DEFAULT_MAX_LIFETIME_SECONDS: u64 = 3600;

/// The keys and the audience tokens are checked against.
pub struct TokenAuth {
    /// Key id → key; replaced whole when the keys are read again.
    keys: Arc<RwLock<HashMap<String, DecodingKey>>>,
    /// API keys (`sk-earshot-…`) that work where tokens do ([`crate::api_keys`]).
    api_keys: Option<Arc<dyn crate::api_keys::KeyBook>>,
    audience: String,
    max_lifetime: u64,
    refresh: Option<Refresh>,
}

/// Reads the keys' text again (`parse_keys`'s forms) from where they are kept.
pub type ReadKeys = Arc<dyn Fn() -> futures_util::future::BoxFuture<'static, Result<String, String>> + Send + Sync>;

/// When and how the keys are read again: on a request at least `every` after the last reading, in a
/// task of its own (the request itself is verified with the keys as they are, and never waits).
/// Wall-clock time, so that a Lambda frozen between invocations reads them at its first request after
/// the interval, however long it slept.
struct Refresh {
    every: Duration,
    read: ReadKeys,
    last: Mutex<SystemTime>,
    running: Arc<AtomicBool>,
}

/// A verified token: what it allows, and whose conversations it speaks in.
#[derive(Debug, Clone)]
pub struct Bearer {
    /// The token's claims, as verified.
    pub claims: Claims,
    /// The owner of the conversations the token speaks in (its `sub`, or the token itself when it has none).
    pub owner: Owner,
}

/// A token's audience: one, or several (RFC 7519 allows both).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Audience {
    /// A single audience, as a string.
    One(String),
    /// Several audiences, as an array: the token is for this gateway when it holds the gateway's.
    Many(Vec<String>),
}

impl Default for Audience {
    fn default() -> Self {
        Audience::One(String::new())
    }
}

impl From<&str> for Audience {
    fn from(aud: &str) -> Self {
        Audience::One(aud.to_string())
    }
}

impl From<String> for Audience {
    fn from(aud: String) -> Self {
        Audience::One(aud)
    }
}

/// What a token's claims allow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The audience: the gateway's (`earshot` by default), alone or in an array. Required.
    pub aud: Audience,
    /// When the token expires, in seconds since the Unix epoch; at most the gateway's maximum lifetime away.
    /// Required.
    pub exp: u64,
    /// When the token was issued, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<u64>,
    /// Not valid before this, in seconds since the Unix epoch (with the same leeway as `exp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<u64>,
    /// Who the token is for: the owner of the conversations it starts. A token without one owns only its
    /// own conversations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub: Option<String>,
    /// The backends the bearer may use; any when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backends: Option<Vec<String>>,
    /// The voices the bearer may use; any when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voices: Option<Vec<String>>,
    /// The release modes the bearer may ask for; any when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub releases: Option<Vec<String>>,
    /// The owner's lexicon: one of the deployment's named lexicons (`EARSHOT_OWNER_LEXICONS`), laid on the
    /// deployment's own for the bearer's conversations; the deployment's alone when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lexicon: Option<String>,
    /// The most characters one request may send (its prompt, earlier turns or text); no limit when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
    /// The conversation ids the bearer may speak under and interrupt: an id, `*`, or whole segments then
    /// `:*`. Without it the bearer may speak under any id but interrupt none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversations: Option<Vec<String>>,
    /// The most live conversations of the owner while this token speaks: below the gateway's
    /// `max_conversations_per_owner` it narrows it; above, the gateway's holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_conversations: Option<usize>,
    /// The most characters the owner may have spoken in a rolling hour when this token speaks: below
    /// the gateway's `max_chars_per_owner_hour` it narrows it; above, the gateway's holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars_per_hour: Option<u64>,
    /// The most characters of prompts, turns and texts the owner may send in a rolling hour when this token
    /// speaks (narrows `max_input_chars_per_owner_hour`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_input_chars_per_hour: Option<u64>,
    /// The most requests the owner may make in a minute when this token speaks (narrows
    /// `max_requests_per_owner_minute`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_requests_per_minute: Option<u64>,
}

impl TokenAuth {
    /// `keys`: key id → secret (at least 32 bytes each, as HS256 asks).
    pub fn new(keys: Vec<(String, Vec<u8>)>, audience: impl Into<String>) -> Result<Self, String> {
        let keys = decoding_keys(keys)?;
        Ok(TokenAuth {
            keys: Arc::new(RwLock::new(keys)),
            audience: audience.into(),
            max_lifetime: DEFAULT_MAX_LIFETIME_SECONDS,
            refresh: None,
            api_keys: None,
        })
    }

    /// Reads the keys again with `read` when a request comes `every` or more after the last reading
    /// (the one at start counts): a key removed from where they are kept stops verifying by the second
    /// request after that. A reading that fails, or holds no valid key, keeps the keys as they were.
    pub fn with_refresh(mut self, every: Duration, read: ReadKeys) -> Self {
        self.refresh = Some(Refresh { every, read, last: Mutex::new(SystemTime::now()), running: Arc::new(AtomicBool::new(false)) });
        self
    }

    /// Starts a reading of the keys when one is due (see [`TokenAuth::with_refresh`]).
    fn refresh_if_due(&self) {
        let Some(refresh) = &self.refresh else { return };
        // Outside a runtime (a synchronous check) there is nothing to read on.
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        {
            let mut last = refresh.last.lock().expect("the refresh clock");
            let now = SystemTime::now();
            if now.duration_since(*last).unwrap_or_default() < refresh.every || refresh.running.swap(true, Ordering::SeqCst) {
                return;
            }
            *last = now;
        }
        let (read, keys, running) = (refresh.read.clone(), self.keys.clone(), refresh.running.clone());
        earshot_core::tasks::spawn(async move {
            // A secret that cannot be read or parsed changes nothing; one that can is the keys from now
            // on, whatever it lost: a key removed there (even the last one) stops verifying here, and a
            // key added unusable is left out, loudly, rather than keeping the old set alive.
            match read().await.and_then(|raw| TokenAuth::parse_keys(&raw)) {
                Ok(listed) => {
                    let (fresh, unusable) = usable_keys(listed);
                    for (kid, why) in &unusable {
                        tracing::error!("token key `{kid}` in the secret is left out: {why}");
                    }
                    let mut ids: Vec<&String> = fresh.keys().collect();
                    ids.sort();
                    tracing::info!(
                        "token keys read again: {}",
                        if ids.is_empty() {
                            "none (every token is refused)".to_string()
                        } else {
                            ids.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
                        }
                    );
                    *keys.write().expect("the token keys") = fresh;
                }
                Err(e) => tracing::warn!("cannot read the token keys again (the ones read before stay): {}", earshot_core::redact::redact(&e)),
            }
            running.store(false, Ordering::SeqCst);
        });
    }

    /// Takes the API keys `book` keeps beside tokens.
    pub fn with_api_keys(mut self, book: Arc<dyn crate::api_keys::KeyBook>) -> Self {
        self.api_keys = Some(book);
        self
    }

    /// Takes the API keys `book` keeps beside tokens, in a verifier already made (the book may be known only
    /// once the deployment's parts are connected).
    pub fn set_api_keys(&mut self, book: Arc<dyn crate::api_keys::KeyBook>) {
        self.api_keys = Some(book);
    }

    /// Refuses tokens valid for longer than `seconds` from now (`token_lifetime_too_long`).
    pub fn with_max_lifetime(mut self, seconds: u64) -> Self {
        self.max_lifetime = seconds;
        self
    }

    /// Parses `kid=secret,kid2=secret2` (local runs, tests) or a JSON object `{"kid": "secret", …}` (the
    /// form kept in Secrets Manager).
    pub fn parse_keys(spec: &str) -> Result<Vec<(String, Vec<u8>)>, String> {
        let spec = spec.trim();
        if spec.starts_with('{') {
            let map: HashMap<String, String> = serde_json::from_str(spec).map_err(|e| format!("the keys are not a JSON object of strings: {e}"))?;
            let mut keys: Vec<_> = map.into_iter().map(|(k, v)| (k, v.into_bytes())).collect();
            keys.sort();
            return Ok(keys);
        }
        spec.split(',')
            .filter(|p| !p.trim().is_empty())
            .map(|pair| match pair.split_once('=') {
                Some((kid, secret)) if !kid.trim().is_empty() => Ok((kid.trim().to_string(), secret.trim().as_bytes().to_vec())),
                _ => Err(format!("`{pair}` is not kid=secret")),
            })
            .collect()
    }

    /// The token of a request (`Authorization: Bearer …`, else `?access_token=`), verified, with the
    /// owner of the conversations it speaks in.
    pub async fn verify_request(&self, headers: &HeaderMap, uri: &Uri) -> Result<Bearer, ApiError> {
        self.refresh_if_due();
        let from_header = headers.get(axum::http::header::AUTHORIZATION).and_then(|v| v.to_str().ok()).map(str::trim);
        let token = match from_header {
            Some(value) => match value.split_once(' ') {
                Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() => token.trim().to_string(),
                _ => return Err(ApiError::unauthorized("token_malformed", "the Authorization header must be `Bearer <token>`")),
            },
            None => match query_token(uri) {
                Some(token) => token,
                None => {
                    return Err(ApiError::unauthorized(
                        "token_missing",
                        format!("this gateway needs a token: `Authorization: Bearer <token>` or `?{QUERY_PARAMETER}=<token>`"),
                    ))
                }
            },
        };
        if token.starts_with(crate::api_keys::PREFIX) {
            let keys = self.api_keys.as_ref().ok_or_else(|| ApiError::unauthorized("key_unknown", "this gateway takes no API keys: present a token"))?;
            let record = crate::api_keys::verify_in(keys.as_ref(), &token).await?;
            let owner = Owner::subject(&record.owner);
            return Ok(Bearer { claims: key_claims(&record, &self.audience), owner });
        }
        let claims = self.verify(&token)?;
        let owner = match &claims.sub {
            Some(sub) if !sub.is_empty() => Owner::subject(sub),
            _ => Owner::bearer(&token),
        };
        Ok(Bearer { claims, owner })
    }

    /// A token's claims, if its signature, expiry and audience hold.
    pub fn verify(&self, token: &str) -> Result<Claims, ApiError> {
        let header = jsonwebtoken::decode_header(token).map_err(|e| ApiError::unauthorized("token_malformed", format!("the token is not a JWT: {e}")))?;
        if header.alg != Algorithm::HS256 {
            return Err(ApiError::unauthorized("token_malformed", format!("the token is signed with {:?}; this gateway accepts HS256", header.alg)));
        }
        let key = {
            let keys = self.keys.read().expect("the token keys");
            match (&header.kid, keys.len()) {
                (Some(kid), _) => keys
                    .get(kid)
                    .cloned()
                    .ok_or_else(|| ApiError::unauthorized("token_bad_signature", format!("the token's key `{kid}` is not one of this gateway's")))?,
                (None, 1) => keys.values().next().cloned().expect("one key"),
                (None, _) => return Err(ApiError::unauthorized("token_malformed", "the token names no key (`kid`) and this gateway has several")),
            }
        };
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "aud"]);
        validation.validate_nbf = true;
        validation.leeway = LEEWAY_SECONDS;
        let data = jsonwebtoken::decode::<Claims>(token, &key, &validation).map_err(|e| match e.kind() {
            ErrorKind::ExpiredSignature => ApiError::unauthorized("token_expired", "the token has expired: get a new one"),
            ErrorKind::ImmatureSignature => ApiError::unauthorized("token_not_yet_valid", "the token is not valid yet (`nbf`)"),
            ErrorKind::InvalidSignature => ApiError::unauthorized("token_bad_signature", "the token's signature does not match"),
            ErrorKind::InvalidAudience => {
                ApiError::unauthorized("token_wrong_audience", format!("the token is not for this gateway (audience `{}`)", self.audience))
            }
            ErrorKind::MissingRequiredClaim(claim) => ApiError::unauthorized("token_malformed", format!("the token has no `{claim}` claim")),
            _ => ApiError::unauthorized("token_malformed", format!("the token cannot be read: {e}")),
        })?;
        let c = &data.claims;
        if c.max_conversations == Some(0) || [c.max_chars_per_hour, c.max_input_chars_per_hour, c.max_requests_per_minute].contains(&Some(0)) {
            return Err(ApiError::unauthorized(
                "token_malformed",
                "the token's `max_conversations`, `max_chars_per_hour`, `max_input_chars_per_hour` and `max_requests_per_minute` must be at least 1 where given",
            ));
        }
        for pattern in data.claims.conversations.iter().flatten() {
            check_pattern(pattern).map_err(|why| ApiError::unauthorized("token_malformed", format!("the token's `conversations` claim: {why}")))?;
        }
        let lifetime = data.claims.exp.saturating_sub(now());
        if lifetime > self.max_lifetime + LEEWAY_SECONDS {
            return Err(ApiError::unauthorized(
                "token_lifetime_too_long",
                format!("the token is valid for {lifetime} s; this gateway accepts tokens valid for at most {} s", self.max_lifetime),
            ));
        }
        Ok(data.claims)
    }
}

/// The claims an API key speaks with: its owner as the subject, its scope as a token's narrowing claims,
/// its expiry (or none) as `exp`, for the gateway's `audience`.
fn key_claims(record: &crate::api_keys::KeyRecord, audience: &str) -> Claims {
    let s = &record.scope;
    Claims {
        aud: Audience::One(audience.to_string()),
        exp: record.expires.unwrap_or(u64::MAX),
        sub: Some(record.owner.clone()),
        backends: s.backends.clone(),
        voices: s.voices.clone(),
        releases: s.releases.clone(),
        max_chars: s.max_chars,
        max_conversations: s.max_conversations,
        max_chars_per_hour: s.max_chars_per_hour,
        max_requests_per_minute: s.max_requests_per_minute,
        ..Default::default()
    }
}

/// The lower of a gateway's limit and a token's (either may be absent: no limit).
fn narrowed<T: Ord>(gateway: Option<T>, token: Option<T>) -> Option<T> {
    match (gateway, token) {
        (Some(g), Some(t)) => Some(g.min(t)),
        (g, t) => g.or(t),
    }
}

/// The keys as `jsonwebtoken` verifies with them: at least one, each of at least 32 bytes (as HS256 asks).
fn decoding_keys(keys: Vec<(String, Vec<u8>)>) -> Result<HashMap<String, DecodingKey>, String> {
    if keys.is_empty() {
        return Err("token mode needs at least one key".into());
    }
    match usable_keys(keys) {
        (map, unusable) if unusable.is_empty() => Ok(map),
        (_, unusable) => Err(unusable.into_iter().map(|(_, why)| why).collect::<Vec<_>>().join("; ")),
    }
}

/// The keys that can verify, and each one that cannot with why.
fn usable_keys(keys: Vec<(String, Vec<u8>)>) -> (HashMap<String, DecodingKey>, Vec<(String, String)>) {
    let (mut map, mut unusable) = (HashMap::new(), Vec::new());
    for (kid, secret) in keys {
        if secret.len() < 32 {
            let why = format!("key `{kid}` is {} bytes; HS256 keys must have at least 32", secret.len());
            unusable.push((kid, why));
            continue;
        }
        match DecodingKey::from_secret(&secret) {
            Ok(key) => {
                map.insert(kid, key);
            }
            Err(e) => unusable.push((kid.clone(), format!("key `{kid}`: {e}"))),
        }
    }
    (map, unusable)
}

fn query_token(uri: &Uri) -> Option<String> {
    let query = uri.query()?;
    query.split('&').find_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        (name == QUERY_PARAMETER && !value.is_empty()).then(|| value.to_string())
    })
}

fn out_of_scope(message: String) -> ApiError {
    ApiError::forbidden("token_out_of_scope", message)
}

impl Claims {
    /// Checks what a request asks for against the token's scopes (the backend and voice the gateway
    /// will choose are checked when it chooses them: [`Claims::allows_backend`], [`Claims::allows_voice`]).
    pub fn check_request(&self, request: &SpeakRequest) -> Result<(), ApiError> {
        if let (Some(allowed), Some(backend)) = (&self.backends, &request.backend) {
            if !allowed.contains(backend) {
                return Err(out_of_scope(format!("this token may use the backends {}, not `{backend}`", allowed.join(", "))));
            }
        }
        if let (Some(allowed), Some(voice)) = (&self.voices, request.voice.as_ref().and_then(|v| v.named())) {
            if !allowed.iter().any(|a| a == voice) {
                return Err(out_of_scope(format!("this token may use the voices {}, not `{voice}`", allowed.join(", "))));
            }
        }
        if let Some(allowed) = &self.releases {
            let release = request.release.as_str();
            if !allowed.iter().any(|r| r == release) {
                return Err(out_of_scope(format!("this token may use the release modes {}, not `{release}`", allowed.join(", "))));
            }
        }
        if let Some(max) = self.max_chars {
            let chars = request.input_chars();
            if chars > max {
                return Err(out_of_scope(format!("this token allows {max} characters a request; this one has {chars}")));
            }
        }
        if let Some(allowed) = &self.conversations {
            if !request.conversation_id_given || !allowed.iter().any(|p| covers(p, &request.conversation_id)) {
                return Err(out_of_scope(format!("this token speaks only under the conversation ids {}: give one as `conversation_id`", allowed.join(", "))));
            }
        }
        Ok(())
    }

    /// The owner's limit of live conversations under this token: the gateway's, narrowed by the
    /// token's `max_conversations` (`None`: no limit).
    pub fn conversations_limit(&self, gateway: Option<usize>) -> Option<usize> {
        narrowed(gateway, self.max_conversations)
    }

    /// The owner's characters per rolling hour under this token: the gateway's, narrowed by the
    /// token's `max_chars_per_hour` (`None`: no budget).
    pub fn chars_per_hour_limit(&self, gateway: Option<u64>) -> Option<u64> {
        narrowed(gateway, self.max_chars_per_hour)
    }

    /// What the owner may send under this token: the gateway's limits, each narrowed by its claim.
    pub fn input_limits(&self, gateway: crate::input_budget::InputLimits) -> crate::input_budget::InputLimits {
        crate::input_budget::InputLimits {
            chars_per_hour: narrowed(gateway.chars_per_hour, self.max_input_chars_per_hour),
            requests_per_minute: narrowed(gateway.requests_per_minute, self.max_requests_per_minute),
        }
    }

    /// Whether the token allows the backend `name` (any, without a `backends` claim).
    pub fn allows_backend(&self, name: &str) -> bool {
        self.backends.as_ref().is_none_or(|b| b.iter().any(|x| x == name))
    }

    /// Whether the token allows `voice` (any, without a `voices` claim).
    pub fn allows_voice(&self, voice: &str) -> bool {
        self.voices.as_ref().is_none_or(|v| v.iter().any(|x| x == voice))
    }

    /// Whether the bearer may interrupt the conversation `id`: only ids its `conversations` claim covers.
    pub fn may_interrupt(&self, id: &str) -> Result<(), ApiError> {
        match &self.conversations {
            Some(allowed) if allowed.iter().any(|p| covers(p, id)) => Ok(()),
            Some(allowed) => Err(out_of_scope(format!("this token may interrupt only the conversations {}", allowed.join(", ")))),
            None => Err(out_of_scope("this token names no conversations (`conversations` claim), so it may interrupt none".into())),
        }
    }
}

/// Mints a token: what an app's backend does (`earshot token` for local use and scripts, the tests).
pub fn mint(kid: &str, secret: &[u8], claims: &Claims) -> Result<String, String> {
    let header = Header { kid: Some(kid.to_string()), ..Header::new(Algorithm::HS256) };
    let key = EncodingKey::from_secret(secret).map_err(|e| e.to_string())?;
    jsonwebtoken::encode(&header, claims, &key).map_err(|e| e.to_string())
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";
    const OLD: &[u8] = b"fedcba9876543210fedcba9876543210";

    fn auth() -> TokenAuth {
        TokenAuth::new(vec![("k2".into(), KEY.to_vec()), ("k1".into(), OLD.to_vec())], "earshot").unwrap()
    }

    fn claims() -> Claims {
        Claims { aud: "earshot".into(), exp: now() + 300, ..Default::default() }
    }

    fn code<T: std::fmt::Debug>(result: Result<T, ApiError>) -> (u16, String) {
        let e = result.unwrap_err();
        (e.status.as_u16(), e.error.code)
    }

    /// A request bearing a token minted with `kid` and `key`, as the router verifies it.
    fn request(a: &TokenAuth, kid: &str, key: &[u8]) -> Result<Bearer, ApiError> {
        let mut headers = HeaderMap::new();
        headers.insert(axum::http::header::AUTHORIZATION, format!("Bearer {}", mint(kid, key, &claims()).unwrap()).parse().unwrap());
        ready(a.verify_request(&headers, &"/v1/speak".parse().unwrap()))
    }

    /// What a check that never waits (a token's, not a key's from a book) gives, without a runtime.
    fn ready<T>(check: impl std::future::Future<Output = T>) -> T {
        let mut check = std::pin::pin!(check);
        match check.as_mut().poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
            std::task::Poll::Ready(value) => value,
            std::task::Poll::Pending => panic!("a token's check waited"),
        }
    }

    /// Until the reading started by a request has finished.
    async fn refreshed(a: &TokenAuth) {
        let running = a.refresh.as_ref().unwrap().running.clone();
        for _ in 0..200 {
            if !running.load(Ordering::SeqCst) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("the keys were not read again");
    }

    #[tokio::test]
    async fn a_key_removed_where_the_keys_are_kept_stops_verifying_once_they_are_read_again() {
        // The secret now holds k2 alone: k1 was removed (rotated out).
        let secret = Arc::new(Mutex::new(Ok::<String, String>(format!("{{\"k2\": \"{}\"}}", std::str::from_utf8(KEY).unwrap()))));
        let reads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (from, counted) = (secret.clone(), reads.clone());
        let read: ReadKeys = Arc::new(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            let answer = from.lock().unwrap().clone();
            Box::pin(async move { answer })
        });
        // Not due yet: nothing is read, k1 verifies.
        let patient = auth().with_refresh(Duration::from_secs(300), read.clone());
        assert!(request(&patient, "k1", OLD).is_ok());
        assert_eq!(reads.load(Ordering::SeqCst), 0);
        // Due: the request that finds it due is verified as the keys were, and starts the reading.
        let a = auth().with_refresh(Duration::ZERO, read);
        assert!(request(&a, "k1", OLD).is_ok(), "the request that starts the reading does not wait for it");
        refreshed(&a).await;
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        assert_eq!(code(request(&a, "k1", OLD)), (401, "token_bad_signature".into()), "the removed key no longer verifies");
        refreshed(&a).await;
        assert!(request(&a, "k2", KEY).is_ok());
        refreshed(&a).await;
        // A reading that fails, or a secret that is not keys, keeps the keys read before.
        for broken in [Err("AccessDeniedException: not allowed".to_string()), Ok("not json, not kid=secret".to_string())] {
            *secret.lock().unwrap() = broken.clone();
            assert!(request(&a, "k2", KEY).is_ok());
            refreshed(&a).await;
            assert!(request(&a, "k2", KEY).is_ok(), "{broken:?}: the keys read before stay");
            refreshed(&a).await;
        }
        // A readable secret is the keys from now on: a key added unusable is left out (the others kept),
        // and an emptied secret refuses every token.
        *secret.lock().unwrap() = Ok(format!("{{\"k2\": \"{}\", \"k3\": \"short\"}}", std::str::from_utf8(KEY).unwrap()));
        let _ = request(&a, "k2", KEY);
        refreshed(&a).await;
        assert!(request(&a, "k2", KEY).is_ok(), "k2 stays beside the unusable k3");
        refreshed(&a).await;
        *secret.lock().unwrap() = Ok("{}".to_string());
        let _ = request(&a, "k2", KEY);
        refreshed(&a).await;
        assert_eq!(code(request(&a, "k2", KEY)), (401, "token_bad_signature".into()), "an emptied secret revokes every key");
    }

    #[test]
    fn a_token_narrows_the_owners_limits_and_never_widens_them() {
        let narrow = Claims { max_conversations: Some(1), max_chars_per_hour: Some(2_000), ..claims() };
        assert_eq!((narrow.conversations_limit(Some(4)), narrow.chars_per_hour_limit(Some(30_000))), (Some(1), Some(2_000)));
        let wide = Claims { max_conversations: Some(40), max_chars_per_hour: Some(1_000_000), ..claims() };
        assert_eq!((wide.conversations_limit(Some(4)), wide.chars_per_hour_limit(Some(30_000))), (Some(4), Some(30_000)), "never wider");
        assert_eq!((narrow.conversations_limit(None), narrow.chars_per_hour_limit(None)), (Some(1), Some(2_000)), "a gateway without limits");
        assert_eq!((claims().conversations_limit(Some(4)), claims().chars_per_hour_limit(None)), (Some(4), None), "no claim: the gateway's");
        let zero = Claims { max_conversations: Some(0), ..claims() };
        assert_eq!(code(auth().verify(&mint("k2", KEY, &zero).unwrap())), (401, "token_malformed".into()));
        let gateway = crate::input_budget::InputLimits { chars_per_hour: Some(300_000), requests_per_minute: Some(30) };
        let sending = Claims { max_input_chars_per_hour: Some(5_000), max_requests_per_minute: Some(60), ..claims() };
        assert_eq!(sending.input_limits(gateway), crate::input_budget::InputLimits { chars_per_hour: Some(5_000), requests_per_minute: Some(30) });
        let zero = Claims { max_requests_per_minute: Some(0), ..claims() };
        assert_eq!(code(auth().verify(&mint("k2", KEY, &zero).unwrap())), (401, "token_malformed".into()));
    }

    #[test]
    fn the_current_and_the_previous_key_are_accepted() {
        assert!(auth().verify(&mint("k2", KEY, &claims()).unwrap()).is_ok());
        assert!(auth().verify(&mint("k1", OLD, &claims()).unwrap()).is_ok(), "rotation: the previous key still works");
    }

    #[test]
    fn each_failure_has_its_code() {
        let a = auth();
        assert_eq!(code(a.verify("not a token")), (401, "token_malformed".into()));
        assert_eq!(code(a.verify(&mint("k2", OLD, &claims()).unwrap())), (401, "token_bad_signature".into()));
        assert_eq!(code(a.verify(&mint("k9", KEY, &claims()).unwrap())), (401, "token_bad_signature".into()));
        assert_eq!(code(a.verify(&mint("k2", KEY, &Claims { exp: now() - 60, ..claims() }).unwrap())), (401, "token_expired".into()));
        assert_eq!(code(a.verify(&mint("k2", KEY, &Claims { aud: "another".into(), ..claims() }).unwrap())), (401, "token_wrong_audience".into()));
        assert_eq!(code(a.verify(&mint("k2", KEY, &Claims { nbf: Some(now() + 120), ..claims() }).unwrap())), (401, "token_not_yet_valid".into()));
        assert!(a.verify(&mint("k2", KEY, &Claims { nbf: Some(now() + 2), ..claims() }).unwrap()).is_ok(), "within the leeway");
        let ten_years = Claims { exp: now() + 10 * 365 * 86_400, ..claims() };
        assert_eq!(code(a.verify(&mint("k2", KEY, &ten_years).unwrap())), (401, "token_lifetime_too_long".into()));
        assert!(auth().with_max_lifetime(20 * 365 * 86_400).verify(&mint("k2", KEY, &ten_years).unwrap()).is_ok(), "the maximum is a setting");
        let no_exp = serde_json::json!({"aud": "earshot", "sub": "u"});
        let no_exp =
            jsonwebtoken::encode(&Header { kid: Some("k2".into()), ..Header::new(Algorithm::HS256) }, &no_exp, &EncodingKey::from_secret(KEY).unwrap())
                .unwrap();
        assert_eq!(code(a.verify(&no_exp)), (401, "token_malformed".into()));
        for alg in [Algorithm::HS512, Algorithm::HS384] {
            let other =
                jsonwebtoken::encode(&Header { kid: Some("k2".into()), ..Header::new(alg) }, &claims(), &EncodingKey::from_secret(KEY).unwrap()).unwrap();
            assert_eq!(code(a.verify(&other)), (401, "token_malformed".into()), "{alg:?}");
        }
        // `alg: none`, unsigned: the header alone says so.
        let none = format!("{}.{}.", b64(r#"{"alg":"none","typ":"JWT"}"#), b64(&serde_json::to_string(&claims()).unwrap()));
        assert_eq!(code(a.verify(&none)), (401, "token_malformed".into()));
        let rs256 = format!("{}.{}.c2ln", b64(r#"{"alg":"RS256","typ":"JWT","kid":"k2"}"#), b64(&serde_json::to_string(&claims()).unwrap()));
        assert_eq!(code(a.verify(&rs256)), (401, "token_malformed".into()));
        let missing = ready(a.verify_request(&HeaderMap::new(), &"/v1/speak".parse().unwrap())).unwrap_err();
        assert_eq!((missing.status.as_u16(), missing.error.code.as_str()), (401, "token_missing"));
        let mut basic = HeaderMap::new();
        basic.insert("authorization", "Basic dXNlcjpwYXNz".parse().unwrap());
        assert_eq!(ready(a.verify_request(&basic, &"/v1/speak".parse().unwrap())).unwrap_err().error.code, "token_malformed");
    }

    fn b64(text: &str) -> String {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(text)
    }

    #[test]
    fn an_audience_may_be_an_array_that_holds_this_gateways() {
        let many = Claims { aud: Audience::Many(vec!["another".into(), "earshot".into()]), ..claims() };
        assert!(auth().verify(&mint("k2", KEY, &many).unwrap()).is_ok());
        let none_of_ours = Claims { aud: Audience::Many(vec!["another".into()]), ..claims() };
        assert_eq!(code(auth().verify(&mint("k2", KEY, &none_of_ours).unwrap())), (401, "token_wrong_audience".into()));
    }

    #[test]
    fn a_token_owns_by_its_subject_or_else_by_itself() {
        let bearer = |claims: &Claims| {
            let mut headers = HeaderMap::new();
            headers.insert("authorization", format!("Bearer {}", mint("k2", KEY, claims).unwrap()).parse().unwrap());
            ready(auth().verify_request(&headers, &"/v1/speak".parse().unwrap())).unwrap().owner
        };
        let alice = Claims { sub: Some("alice".into()), ..claims() };
        assert_eq!(bearer(&alice), Owner::subject("alice"));
        assert_eq!(bearer(&alice), bearer(&Claims { exp: now() + 200, ..alice.clone() }), "a refreshed token keeps its owner");
        let anonymous = claims();
        assert_ne!(bearer(&anonymous), bearer(&Claims { exp: now() + 200, ..claims() }), "without `sub`, each token is its own owner");
    }

    #[test]
    fn a_token_in_the_query_is_accepted_for_clients_without_headers() {
        let token = mint("k2", KEY, &claims()).unwrap();
        let uri: Uri = format!("/v1/speak?x=1&access_token={token}").parse().unwrap();
        assert!(ready(auth().verify_request(&HeaderMap::new(), &uri)).is_ok());
    }

    #[test]
    fn keys_are_read_from_pairs_or_a_json_object_and_must_be_long_enough() {
        assert_eq!(TokenAuth::parse_keys("a=x, b=y").unwrap(), vec![("a".into(), b"x".to_vec()), ("b".into(), b"y".to_vec())]);
        assert_eq!(TokenAuth::parse_keys(r#"{"b": "y", "a": "x"}"#).unwrap(), vec![("a".into(), b"x".to_vec()), ("b".into(), b"y".to_vec())]);
        assert!(TokenAuth::parse_keys("nokey").is_err());
        assert!(TokenAuth::new(vec![("a".into(), b"short".to_vec())], "earshot").is_err());
        assert!(TokenAuth::new(vec![], "earshot").is_err());
    }

    #[test]
    fn conversations_are_matched_by_id_or_whole_segments() {
        let c = Claims { conversations: Some(vec!["user-42:*".into(), "exact".into()]), ..claims() };
        assert!(c.may_interrupt("user-42:7").is_ok());
        assert!(c.may_interrupt("exact").is_ok());
        assert_eq!(c.may_interrupt("user-42-smith:1").unwrap_err().error.code, "token_out_of_scope");
        assert_eq!(c.may_interrupt("user-43:1").unwrap_err().error.code, "token_out_of_scope");
        assert_eq!(claims().may_interrupt("anything").unwrap_err().status.as_u16(), 403);
    }

    #[test]
    fn a_token_with_a_pattern_that_is_not_whole_segments_is_refused() {
        let auth = auth();
        let bad = Claims { conversations: Some(vec!["bob-*".into()]), ..claims() };
        let (status, code) = code(auth.verify(&mint("k2", KEY, &bad).unwrap()));
        assert_eq!((status, code.as_str()), (401, "token_malformed"));
        let good = Claims { conversations: Some(vec!["bob:*".into()]), ..claims() };
        assert!(auth.verify(&mint("k2", KEY, &good).unwrap()).is_ok());
    }
}
