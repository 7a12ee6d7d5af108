//! One wiring for every way earshot runs. `earshot serve` and the Lambda build their gateway here,
//! from one [`Settings`] type with one set of defaults, so that what a local run exercises is what a
//! deployment runs.
//!
//! - [`settings`]: the configuration, from flags or `EARSHOT_*` variables, and the rules across it.
//! - [`build`]: the backends, the agent and the gateway that the settings describe.
//! - `aws_edge`: the AWS parts among them, behind the cargo feature `aws` (on by default; `make run`
//!   builds without it and refuses AWS settings with a message saying so).

mod aws_edge;
pub mod settings;

use std::sync::Arc;
use std::time::Duration;

use earshot_agents::{ScriptedAgent, ScriptedConfig};
use earshot_backends::{KokoroBackend, KokoroConfig, SyntheticBackend, SyntheticConfig};
use earshot_core::agent::AgentSource;
use earshot_core::speech::{SpeechBackend, SpeechError};
use earshot_gateway::auth::TokenAuth;
use earshot_gateway::{ConversationSecret, Gateway, GatewaySettings, Interrupts, Routing};
use tokio::task::JoinSet;

pub use settings::{AgentKind, AuthMode, BackendKind, Place, Settings, DEFAULT_BEDROCK_MODEL};

/// The Kokoro voice through SageMaker when none is configured (the container's own default is not
/// known without asking it).
const SAGEMAKER_DEFAULT_VOICE: &str = "af_heart";

/// What a gateway is made of, and the background tasks that watch its backends come up: one ends
/// with an error when a backend can never be used (a default voice the container lacks), and the
/// server should stop. The binary may add its own settings (`earshot serve`: the demo page, body
/// timeout) before [`Built::gateway`] makes the gateway.
pub struct Built {
    pub backends: Vec<Arc<dyn SpeechBackend>>,
    pub agent: Arc<dyn AgentSource>,
    pub settings: GatewaySettings,
    pub watches: JoinSet<Result<(), SpeechError>>,
}

impl Built {
    /// The gateway, and the watches to keep an eye on.
    pub fn gateway(self) -> (Gateway, JoinSet<Result<(), SpeechError>>) {
        (Gateway::new(self.backends, self.agent, self.settings), self.watches)
    }
}

/// Builds the gateway the settings describe. Must run inside a tokio runtime.
pub async fn build(settings: &Settings, place: Place) -> Result<Built, String> {
    settings.check(place)?;
    let aws = match aws_edge::needs_aws(settings) {
        Some(_) => Some(aws_edge::connect(settings).await?),
        None => None,
    };
    let aws_ref = aws.as_ref();
    let aws = || aws_ref.expect("the AWS configuration is loaded whenever an AWS part is configured");

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
                let backend = Arc::new(KokoroBackend::new(cfg).map_err(|e| e.to_string())?);
                tracing::info!("waiting in the background for the Kokoro container at {}", earshot_core::redact::redact(&settings.kokoro_url));
                let watched = backend.clone();
                watches.spawn(async move { watched.poll_ready_forever().await });
                backends.push(backend);
            }
            BackendKind::Polly => backends.push(aws().polly(&settings.polly_voice, &settings.polly_language_voices.0, settings.backend_silence())?),
            BackendKind::Synthetic => {
                let cfg = SyntheticConfig { first_audio: Duration::from_millis(settings.synthetic_latency_ms), ..Default::default() };
                backends.push(Arc::new(SyntheticBackend::new(cfg)));
            }
        }
    }

    let agent: Arc<dyn AgentSource> = match settings.agent {
        AgentKind::Scripted => Arc::new(ScriptedAgent::new(ScriptedConfig {
            tokens_per_second: settings.tokens_per_second,
            first_token_delay: Duration::from_millis(settings.first_token_ms),
        })),
        AgentKind::Bedrock => aws().bedrock(&settings.bedrock_model, settings.system_prompt.as_deref()),
        AgentKind::Agentcore => aws().agentcore(
            settings.agentcore_runtime_arn.clone().unwrap_or_default(),
            settings.agentcore_qualifier.clone(),
            settings.agentcore_text_pointer.clone(),
        )?,
        AgentKind::Openai | AgentKind::Http => {
            // The key, when the operator keeps it in Secrets Manager: read once, here, never per request.
            let secret = match &settings.agent_key_secret {
                Some(id) => Some(aws().secret(id, false).await.map_err(|e| format!("EARSHOT_AGENT_KEY_SECRET (--agent-key-secret): {e}"))?),
                None => None,
            };
            agent_source(settings, place, secret)?
        }
    };

    let mut gateway = GatewaySettings::default();
    if settings.auth == AuthMode::Token {
        let keys = match (&settings.token_keys_secret, &settings.token_keys) {
            (Some(id), _) => {
                let raw = aws().secret(id, true).await.map_err(|e| format!("EARSHOT_TOKEN_KEYS_SECRET (--token-keys-secret): {e}"))?;
                TokenAuth::parse_keys(&raw).map_err(|e| format!("EARSHOT_TOKEN_KEYS_SECRET (--token-keys-secret): {e}"))?
            }
            (None, Some(spec)) => TokenAuth::parse_keys(spec).map_err(|e| format!("EARSHOT_TOKEN_KEYS (--token-keys): {e}"))?,
            (None, None) => unreachable!("checked by Settings::check"),
        };
        let mut auth = TokenAuth::new(keys, settings.token_audience.clone())
            .map_err(|e| format!("token keys: {e}"))?
            .with_max_lifetime(settings.token_max_lifetime_seconds);
        // Keys kept in Secrets Manager are read again, so that one removed there stops verifying here.
        if let (Some(id), true) = (&settings.token_keys_secret, settings.token_keys_refresh_seconds > 0) {
            auth = auth.with_refresh(Duration::from_secs(settings.token_keys_refresh_seconds), aws().secret_reader(id));
        }
        tracing::info!("token mode: speak and interrupt need a token for audience `{}`", settings.token_audience);
        gateway.auth = Some(Arc::new(auth));
    }
    gateway.conversation_secret = conversation_secret(settings, aws_ref).await?;
    gateway.routing = Routing {
        weights: settings.weights()?,
        allow_override: settings.ab_allow_override,
        failover: settings.failover,
        experiment: settings.ab_experiment.clone(),
    };
    gateway.limits.max_prompt_chars = settings.max_prompt_chars;
    gateway.limits.max_text_chars = settings.max_text_chars;
    gateway.scheduler.max_answer_chars = settings.max_answer_chars;
    gateway.scheduler.idle_release = (settings.idle_release_ms > 0).then(|| Duration::from_millis(settings.idle_release_ms));
    gateway.scheduler.segmenter.fast_first_min_words = settings.fast_first;
    gateway.scheduler.max_in_flight = settings.max_in_flight;
    gateway.scheduler.backend_silence = settings.backend_silence();
    gateway.scheduler.client_read_timeout = settings.client_read_timeout();
    gateway.keep_alive = Duration::from_millis(settings.keep_alive_ms);
    gateway.metrics_namespace = Some(settings.metrics_namespace.clone());
    gateway.agent_deadlines = settings.agent_deadlines();
    gateway.backend_open_timeout = Duration::from_millis(settings.backend_open_timeout_ms);
    gateway.max_conversation = (settings.max_conversation_seconds > 0).then(|| Duration::from_secs(settings.max_conversation_seconds));
    gateway.max_conversations_per_owner = (settings.max_conversations_per_owner > 0).then_some(settings.max_conversations_per_owner);
    gateway.max_chars_per_owner_hour = (settings.max_chars_per_owner_hour > 0).then_some(settings.max_chars_per_owner_hour);
    gateway.cache = settings.cache()?;
    gateway.output_format = settings.output_format;
    if let Some(bucket) = &settings.cache_bucket {
        let tier = aws().sentence_tier(bucket, &settings.cache_prefix, settings.cache_endpoint.as_deref());
        let backends: Vec<String> = settings.cache_shared_backends.iter().map(|b| b.name()).collect();
        tracing::info!("the sentence cache's shared tier: s3://{bucket}/{} for {}", settings.cache_prefix, backends.join(", "));
        gateway.cache_shared = Some(earshot_core::cached_session::SharedUse { tier, backends, fetch_limit: Duration::from_millis(settings.cache_fetch_ms) });
    }
    gateway.interrupts = match (&settings.interrupt_table, place) {
        (Some(table), _) => {
            let poll = Duration::from_millis(settings.interrupt_poll_ms.max(10));
            let store = aws().interrupt_store(table, settings.interrupt_endpoint.as_deref());
            Interrupts::Shared { store, poll }
        }
        // Conversations run in other invocations, out of this process's reach.
        (None, Place::Lambda) => Interrupts::Unavailable,
        (None, Place::Serve) => Interrupts::Local,
    };
    Ok(Built { backends, agent, settings: gateway, watches })
}

/// The deployment's conversation secret, from the one place the settings name; none named: one drawn
/// for this process (the Lambda never gets here without one: `Settings::check`).
async fn conversation_secret(settings: &Settings, aws: Option<&aws_edge::Aws>) -> Result<ConversationSecret, String> {
    let (raw, from) = if let Some(value) = &settings.conversation_secret {
        (value.clone(), "EARSHOT_CONVERSATION_SECRET (--conversation-secret)")
    } else if let Some(path) = &settings.conversation_secret_file {
        let read = std::fs::read_to_string(path)
            .map_err(|e| format!("EARSHOT_CONVERSATION_SECRET_FILE (--conversation-secret-file): cannot read {}: {e}", path.display()))?;
        (read, "EARSHOT_CONVERSATION_SECRET_FILE (--conversation-secret-file)")
    } else if let Some(id) = &settings.conversation_secret_id {
        let aws = aws.expect("the AWS configuration is loaded whenever a secret is named");
        let read = aws.secret(id, true).await.map_err(|e| format!("EARSHOT_CONVERSATION_SECRET_ID (--conversation-secret-id): {e}"))?;
        (read, "EARSHOT_CONVERSATION_SECRET_ID (--conversation-secret-id)")
    } else {
        if settings.interrupt_table.is_some() {
            tracing::warn!(
                "no conversation secret given: this process keys conversations with its own, so an interrupt sent through another process sharing the interrupt table finds nothing; give every process the same EARSHOT_CONVERSATION_SECRET"
            );
        }
        return Ok(ConversationSecret::random());
    };
    ConversationSecret::new(raw.as_bytes()).map_err(|e| format!("{from}: {e}"))
}

/// The OpenAI-compatible or HTTP agent. `earshot serve` honours the ecosystem's `OPENAI_BASE_URL` and
/// `OPENAI_API_KEY` where no earshot setting is given; the Lambda reads its own variables alone.
fn agent_source(settings: &Settings, place: Place, secret: Option<String>) -> Result<Arc<dyn AgentSource>, String> {
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
        return Ok(Arc::new(earshot_agents::OpenAiAgent::new(openai).map_err(|e| format!("EARSHOT_OPENAI_BASE_URL (--openai-base-url): {e}"))?));
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
    Ok(Arc::new(earshot_agents::HttpAgent::new(http).map_err(|e| format!("EARSHOT_HTTP_AGENT_URL (--http-agent-url): {e}"))?))
}
