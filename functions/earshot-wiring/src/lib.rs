//! One wiring for every way earshot runs. `earshot serve` and the Lambda build their gateway here,
//! from one [`Settings`] type with one set of defaults, so that what a local run exercises is what a
//! deployment runs.
//!
//! - [`settings`]: the configuration, from flags or `EARSHOT_*` variables, the rules across it, and
//!   its pure conversion into the gateway's settings ([`Settings::gateway_settings`]).
//! - [`serve_settings`]: what only `earshot serve` has (address, page, connection limits), converted
//!   the same way.
//! - [`settings_error`]: the one error every refused setting is, `SETTING: why`.
//! - [`Resolved`]: the settings made once (ripgrep's `HiArgs`): every rule checked, once, and everything
//!   the gateway runs with that needs no connection decided, `earshot serve`'s own settings included;
//!   what needs a connection (secrets, stores, the AWS parts) is left for [`connect`].
//! - [`connect`] (and [`build`], both steps at once): the backends, the agent and the gateway that the
//!   settings describe, connected.
//! - [`log_lines`]: the writer every log line goes out through, one line each whatever it quotes.
//! - `aws_edge`: the AWS parts among them, behind the cargo feature `aws` (on by default; `make run`
//!   builds without it and refuses AWS settings with a message saying so).

#![warn(missing_docs)]

mod aws_edge;
pub mod log_lines;
pub mod serve_settings;
pub mod settings;
pub mod settings_error;

use std::sync::Arc;
use std::time::Duration;

use earshot_agents::{ScriptedAgent, ScriptedConfig, Tokens};
use earshot_backends::{KokoroBackend, KokoroConfig, SyntheticBackend, SyntheticConfig};
use earshot_core::agent::AgentSource;
use earshot_core::cache::CacheScope;
use earshot_core::speech::{SpeechBackend, SpeechError};
use earshot_gateway::auth::TokenAuth;
use earshot_gateway::{ConversationSecret, Gateway, GatewaySettings, Interrupts};
use tokio::task::JoinSet;

pub use serve_settings::{ServeSettings, Served};
pub use settings::{AgentKind, AuthMode, BackendKind, Place, Settings, DEFAULT_BEDROCK_MODEL};
pub use settings_error::SettingsError;

/// The Kokoro voice through SageMaker when none is configured (the container's own default is not
/// known without asking it).
const SAGEMAKER_DEFAULT_VOICE: &str = "af_heart";

/// What a gateway is made of, and the background tasks that watch its backends come up: one ends
/// with an error when a backend can never be used (a default voice the container lacks), and the
/// server should stop.
pub struct Built {
    /// The backends, in the order the settings name them (the first is the default); one with a
    /// deployment-wide cap on its conversations is wrapped in it.
    pub backends: Vec<Arc<dyn SpeechBackend>>,
    /// The agent that answers prompts.
    pub agent: Arc<dyn AgentSource>,
    /// The gateway's settings, with everything that needed a connection filled in.
    pub settings: GatewaySettings,
    /// The tasks that watch backends come up in the background.
    pub watches: JoinSet<Result<(), SpeechError>>,
}

impl Built {
    /// The gateway, and the watches to keep an eye on.
    pub fn gateway(self) -> (Gateway, JoinSet<Result<(), SpeechError>>) {
        (Gateway::new(self.backends, self.agent, self.settings), self.watches)
    }
}

/// The settings made once: checked, and converted into the gateway's settings as far as that needs no
/// connection. The only way from [`Settings`] to a gateway ([`connect`]).
pub struct Resolved {
    /// What the gateway runs with, but for the parts [`connect`] fills in (token keys and the
    /// conversation secret kept outside the process, the interrupt store, the cache's shared tier).
    pub gateway: GatewaySettings,
    /// The raw settings those parts are read from.
    settings: Settings,
    place: Place,
}

impl Resolved {
    /// `earshot serve`'s own settings ([`Served`]), applied where the gateway runs with them: the demo
    /// page (where it has an `index.html`), the body deadline, the server's conversation cap and the
    /// names it answers to.
    pub fn serving(mut self, served: &Served) -> Self {
        match &served.web_dir {
            Some(web_dir) if web_dir.join("index.html").is_file() => self.gateway.web_dir = Some(web_dir.clone()),
            Some(web_dir) => tracing::warn!("no index.html in {}: the demo page is not served", web_dir.display()),
            None => {}
        }
        self.gateway.limits.body_timeout = served.body_timeout;
        self.gateway.max_conversations = Some(served.max_conversations);
        self.gateway.allowed_hosts = served.allowed_hosts.clone();
        self
    }

    /// The raw settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }
}

impl Settings {
    /// Every rule checked, once, and the conversion that needs no connection done
    /// ([`Settings::gateway_settings`]).
    pub fn resolve(&self, place: Place) -> Result<Resolved, SettingsError> {
        Ok(Resolved { gateway: self.gateway_settings(place)?, settings: self.clone(), place })
    }
}

/// Builds the gateway the settings describe: [`Settings::resolve`], then [`connect`]. Must run inside a
/// tokio runtime.
pub async fn build(settings: &Settings, place: Place) -> Result<Built, SettingsError> {
    connect(settings.resolve(place)?).await
}

/// Connects what the resolved settings describe: the AWS configuration where a setting names an AWS
/// part, the backends, the agent, and the secrets and stores kept outside the process. Must run inside a
/// tokio runtime.
pub async fn connect(resolved: Resolved) -> Result<Built, SettingsError> {
    let Resolved { mut gateway, settings, place } = resolved;
    let settings = &settings;
    let aws = match aws_edge::needs_aws(settings) {
        Some(_) => Some(aws_edge::connect(settings).await?),
        None => None,
    };
    let aws = aws.as_ref();
    let (backends, watches) = backends(settings, aws)?;
    let agent = agent(settings, place, aws).await?;
    connect_parts(&mut gateway, settings, aws).await?;
    let backends = capped(backends, settings, &gateway);
    Ok(Built { backends, agent, settings: gateway, watches })
}

/// The tasks that watch backends come up ([`Built::watches`]).
type Watches = JoinSet<Result<(), SpeechError>>;

/// The backends the settings name, in order, and the watches of those that come up in the background.
#[allow(clippy::disallowed_methods)] // the watches are a set the server holds and aborts when it stops (`Built::watches`)
fn backends(settings: &Settings, aws: Option<&aws_edge::Aws>) -> Result<(Vec<Arc<dyn SpeechBackend>>, Watches), SettingsError> {
    let aws = || aws.expect("the AWS configuration is loaded whenever an AWS part is configured");
    let mut backends: Vec<Arc<dyn SpeechBackend>> = Vec::new();
    let mut watches = JoinSet::new();
    for kind in &settings.backends {
        match kind {
            BackendKind::Kokoro if settings.sagemaker_endpoint.is_some() => {
                let endpoint = settings.sagemaker_endpoint.clone().unwrap_or_default();
                let voice = settings.kokoro_voice.clone().unwrap_or_else(|| SAGEMAKER_DEFAULT_VOICE.into());
                tracing::info!("Kokoro through the SageMaker endpoint {endpoint}");
                backends.push(aws().sagemaker(endpoint, voice, &settings.kokoro_language_voices.0));
            }
            BackendKind::Kokoro => {
                // Not waited for: the gateway listens at once and answers 503 `backend_not_ready`
                // (and `/healthz` 503) until the container has loaded its model.
                let cfg = KokoroConfig {
                    url: settings.kokoro_url.clone(),
                    default_voice: settings.kokoro_voice.clone(),
                    language_voices: settings.kokoro_language_voices.0.clone(),
                    ..Default::default()
                };
                let backend = Arc::new(KokoroBackend::new(cfg).map_err(SettingsError::wrap("kokoro-url"))?);
                tracing::info!("waiting in the background for the Kokoro container at {}", earshot_core::redact::redact(&settings.kokoro_url));
                let watched = backend.clone();
                watches.spawn(async move { watched.poll_ready_forever().await });
                backends.push(backend);
            }
            BackendKind::Polly => backends.push(
                aws()
                    .polly(&settings.polly_voice, &settings.polly_language_voices.0, settings.backend_silence())
                    .map_err(SettingsError::wrap("polly-voice"))?,
            ),
            BackendKind::Synthetic => {
                let cfg = SyntheticConfig {
                    first_audio: Duration::from_millis(settings.synthetic_latency_ms),
                    sessions: (settings.synthetic_sessions > 0).then_some(settings.synthetic_sessions),
                    lead: Duration::from_millis(settings.synthetic_lead_ms),
                    ..Default::default()
                };
                backends.push(Arc::new(SyntheticBackend::new(cfg)));
            }
        }
    }

    Ok((backends, watches))
}

/// The agent the settings name.
async fn agent(settings: &Settings, place: Place, aws: Option<&aws_edge::Aws>) -> Result<Arc<dyn AgentSource>, SettingsError> {
    let aws = || aws.expect("the AWS configuration is loaded whenever an AWS part is configured");
    let agent: Arc<dyn AgentSource> = match settings.agent {
        AgentKind::Scripted => {
            let agent = ScriptedAgent::new(ScriptedConfig {
                tokens_per_second: settings.tokens_per_second,
                first_token_delay: Duration::from_millis(settings.first_token_ms),
                tokens: match settings.token_chars {
                    0 => Tokens::Llm,
                    n => Tokens::Chars(n),
                },
            });
            Arc::new(settings.named_scripts()?.iter().fold(agent, |agent, (name, text)| agent.with_script(name, text)))
        }
        AgentKind::Bedrock => aws().bedrock(&settings.bedrock_model, settings.system_prompt.as_deref()),
        AgentKind::Agentcore => aws()
            .agentcore(
                settings.agentcore_runtime_arn.clone().unwrap_or_default(),
                settings.agentcore_qualifier.clone(),
                settings.agentcore_text_pointer.clone(),
            )
            .map_err(SettingsError::wrap("agentcore-runtime-arn"))?,
        AgentKind::Openai | AgentKind::Http => {
            // The key, when the operator keeps it in Secrets Manager: read once, here, never per request.
            let secret = match &settings.agent_key_secret {
                Some(id) => Some(aws().secret(id, false).await.map_err(SettingsError::wrap("agent-key-secret"))?),
                None => None,
            };
            agent_source(settings, place, secret)?
        }
    };

    Ok(agent)
}

/// The gateway's parts kept outside the process: token keys and the conversation secret (Secrets
/// Manager or a file), the cache's shared tier, the shared interrupt store.
async fn connect_parts(gateway: &mut GatewaySettings, settings: &Settings, aws_ref: Option<&aws_edge::Aws>) -> Result<(), SettingsError> {
    let aws = || aws_ref.expect("the AWS configuration is loaded whenever an AWS part is configured");
    // Token keys kept in Secrets Manager: read now, and again every so often, so that one removed
    // there stops verifying here. Keys given inline are already in `gateway.auth`.
    if let (AuthMode::Token, Some(id)) = (settings.auth, &settings.token_keys_secret) {
        let raw = aws().secret(id, true).await.map_err(SettingsError::wrap("token-keys-secret"))?;
        let keys = TokenAuth::parse_keys(&raw).map_err(SettingsError::wrap("token-keys-secret"))?;
        let mut auth = settings.token_auth(keys, "token-keys-secret")?;
        if settings.token_keys_refresh_seconds > 0 {
            auth = auth.with_refresh(Duration::from_secs(settings.token_keys_refresh_seconds), aws().secret_reader(id));
        }
        gateway.auth = Some(Arc::new(auth));
    }
    if settings.auth == AuthMode::Token {
        tracing::info!("token mode: speak and interrupt need a token for audience `{}`", settings.token_audience);
    }
    if let Some(secret) = conversation_secret(settings, aws_ref).await? {
        gateway.conversation_secret = secret;
    } else if settings.conversation_secret.is_none() && settings.interrupt_table.is_some() {
        tracing::warn!(
            "no conversation secret given: this process keys conversations with its own, so an interrupt sent through another process sharing the interrupt table finds nothing; give every process the same EARSHOT_CONVERSATION_SECRET"
        );
    }
    match gateway.cache.scope {
        CacheScope::Deployment => tracing::info!(
            "the sentence cache: each caller hears its own sentences from it, and every caller the {} the deployment declared (the warm-up's); never another caller's",
            gateway.cache.warmup.openers.len()
        ),
        CacheScope::Owner => tracing::info!("the sentence cache: each caller hears only its own sentences from it (scope owner, no warm-up)"),
        CacheScope::Off => tracing::info!("the sentence cache is off"),
    }
    if let Some((bucket, key)) = settings.lexicon_object() {
        let whence = format!("s3://{bucket}/{key}");
        let text = aws().read_object(bucket, key).await.map_err(SettingsError::wrap("lexicon"))?;
        let lexicon = Arc::new(Settings::lexicon_of(&whence, &text)?);
        if settings.lexicon_refresh_seconds > 0 {
            let every = Duration::from_secs(settings.lexicon_refresh_seconds);
            let refresh = earshot_gateway::lexicon_refresh::LexiconRefresh::new(lexicon.clone(), every, whence, aws().object_reader(bucket, key));
            gateway.lexicon_refresh = Some(Arc::new(refresh));
        }
        gateway.lexicon = Some(lexicon);
    }
    for (name, bucket, key) in settings.owner_lexicon_objects() {
        let text = aws().read_object(bucket, key).await.map_err(SettingsError::wrap("owner-lexicons"))?;
        let lexicon =
            earshot_core::text::Lexicon::parse(&text).map_err(|e| SettingsError::of("owner-lexicons", format!("{name}: s3://{bucket}/{key}, {e}")))?;
        gateway.owner_lexicons.insert(name.to_string(), Arc::new(lexicon));
    }
    for (name, lexicon) in &gateway.owner_lexicons {
        tracing::info!("the owner lexicon `{name}`: {} entries (version {}), for tokens that name it", lexicon.entries().len(), lexicon.version());
    }
    if let Some(lexicon) = &gateway.lexicon {
        tracing::info!("the lexicon: {} entries (version {}), said the same way on every voice", lexicon.entries().len(), lexicon.version());
    }
    if let Some(bucket) = &settings.cache_bucket {
        let tier = aws().sentence_tier(bucket, &settings.cache_prefix, settings.cache_endpoint.as_deref());
        let backends: Vec<String> = settings.cache_shared_backends.iter().map(|b| b.name()).collect();
        tracing::info!("the sentence cache's shared tier: s3://{bucket}/{} for {}", settings.cache_prefix, backends.join(", "));
        gateway.cache_shared = Some(earshot_core::cached_session::SharedUse { tier, backends, fetch_limit: Duration::from_millis(settings.cache_fetch_ms) });
    }
    if let Some(table) = &settings.interrupt_table {
        let poll = Duration::from_millis(settings.interrupt_poll_ms.max(10));
        let store = aws().interrupt_store(table, settings.interrupt_endpoint.as_deref());
        gateway.interrupts = Interrupts::Shared { store, poll };
        // API keys (`earshot key create --table`) kept in the same table, where no keys file is named.
        if let (Some(auth), None) = (gateway.auth.as_mut(), &settings.api_keys_file) {
            let auth = Arc::get_mut(auth).expect("the token verifier is this function's until the gateway starts");
            auth.set_api_keys(aws().key_book(table, settings.interrupt_endpoint.as_deref()));
            tracing::info!("API keys: read from the table {table}, one key a request");
        }
    }
    Ok(())
}

/// Each backend whose service has a concurrency quota, capped.
fn capped(backends: Vec<Arc<dyn SpeechBackend>>, settings: &Settings, gateway: &GatewaySettings) -> Vec<Arc<dyn SpeechBackend>> {
    // A backend whose service has a concurrency quota holds at most so many conversations, counted where the
    // owners' places are (the interrupt table, where there is one).
    let ttl = gateway.max_conversation.unwrap_or(Duration::from_secs(900)) + Duration::from_secs(60);
    let places = earshot_gateway::backend_cap::Places::new(gateway.interrupts.clone(), ttl);
    backends
        .into_iter()
        .map(|backend| match settings.backend_conversations.of(backend.name()) {
            Some(max) => {
                tracing::info!("{}: at most {max} conversations at once across the deployment", backend.name());
                Arc::new(earshot_gateway::backend_cap::CappedBackend::new(backend, max, places.clone())) as Arc<dyn SpeechBackend>
            }
            None => backend,
        })
        .collect()
}

/// The deployment's conversation secret where it is kept outside the settings (a file, or Secrets
/// Manager); `None`: given inline (already converted) or not at all (one drawn for this process; the
/// Lambda never gets here without one: `Settings::check`).
async fn conversation_secret(settings: &Settings, aws: Option<&aws_edge::Aws>) -> Result<Option<ConversationSecret>, SettingsError> {
    let (raw, flag) = if let Some(path) = &settings.conversation_secret_file {
        let read = std::fs::read_to_string(path).map_err(|e| SettingsError::of("conversation-secret-file", format!("cannot read {}: {e}", path.display())))?;
        (read, "conversation-secret-file")
    } else if let Some(id) = &settings.conversation_secret_id {
        let aws = aws.expect("the AWS configuration is loaded whenever a secret is named");
        (aws.secret(id, true).await.map_err(SettingsError::wrap("conversation-secret-id"))?, "conversation-secret-id")
    } else {
        return Ok(None);
    };
    ConversationSecret::new(raw.as_bytes()).map(Some).map_err(SettingsError::wrap(flag))
}

/// The OpenAI-compatible or HTTP agent. `earshot serve` honours the ecosystem's `OPENAI_BASE_URL` and
/// `OPENAI_API_KEY` where no earshot setting is given; the Lambda reads its own variables alone.
fn agent_source(settings: &Settings, place: Place, secret: Option<String>) -> Result<Arc<dyn AgentSource>, SettingsError> {
    let ecosystem = |name: &str| if place == Place::Serve { std::env::var(name).ok().filter(|v| !v.trim().is_empty()) } else { None };
    let system_prompt = settings.system_prompt.clone().unwrap_or_else(|| earshot_core::agent::VOICE_SYSTEM_PROMPT.to_string());
    let connect_timeout = Duration::from_secs(10);
    if settings.agent == AgentKind::Openai {
        let openai = earshot_agents::OpenAiSettings {
            base_url: settings.openai_base_url.clone().or_else(|| ecosystem("OPENAI_BASE_URL")).unwrap_or_else(|| "https://api.openai.com/v1".into()),
            model: settings.openai_model.clone().unwrap_or_default(),
            api_key: secret.or_else(|| settings.openai_api_key.clone()).or_else(|| ecosystem("OPENAI_API_KEY")),
            system_prompt,
            temperature: settings.temperature,
            max_tokens: settings.max_tokens,
            connect_timeout,
            max_event_bytes: settings.agent_max_event_bytes,
        };
        tracing::info!("agent: {} at {}", openai.model, earshot_core::redact::redact(&openai.base_url));
        return Ok(Arc::new(earshot_agents::OpenAiAgent::new(openai).map_err(SettingsError::wrap("openai-base-url"))?));
    }
    let mut headers: Vec<(String, String)> =
        settings.http_agent_headers.iter().filter_map(|h| h.split_once(':')).map(|(n, v)| (n.trim().to_string(), v.trim().to_string())).collect();
    if let (Some(name), Some(key)) = (&settings.http_agent_key_header, secret) {
        let value = if name.eq_ignore_ascii_case("authorization") { format!("Bearer {key}") } else { key };
        headers.push((name.clone(), value));
    }
    let http = earshot_agents::HttpAgentSettings {
        url: settings.http_agent_url.clone().unwrap_or_default(),
        headers,
        format: settings.http_agent_format,
        text_pointer: settings.http_agent_text_pointer.clone(),
        connect_timeout,
        max_event_bytes: settings.agent_max_event_bytes,
    };
    tracing::info!("agent: the HTTP agent at {}", earshot_core::redact::redact(&http.url));
    Ok(Arc::new(earshot_agents::HttpAgent::new(http).map_err(SettingsError::wrap("http-agent-url"))?))
}
