//! What a gateway serves with: its backends, its agent, and its settings (limits, scheduling, routing,
//! interrupts, tokens), built once.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use earshot_core::agent::AgentSource;
use earshot_core::agent_deadlines::AgentDeadlines;
use earshot_core::cache::{CacheScope, SentenceCache};
use earshot_core::cached_session::{CacheUse, SharedUse};
use earshot_core::scheduler::SchedulerConfig;
use earshot_core::speech::SpeechBackend;
use earshot_core::tasks::Tasks;
use earshot_core::text::Lexicon;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::auth::TokenAuth;
pub use crate::cache_settings::CacheSettings;
use crate::character_budget::{Budget, Ledger};
use crate::host_check::AllowedHosts;
use crate::input_budget::InputCharge;
use crate::interrupts::{Interrupts, Registry};
use crate::owner_places::{LocalPlaces, OwnerPlace};
pub use crate::request::Limits;
use crate::routing::Routing;

/// How a gateway serves, apart from its backends and agent: set once, when it is built.
#[derive(Clone)]
pub struct GatewaySettings {
    /// How every conversation is scheduled (a request's own choices, such as its release policy,
    /// travel with the conversation, not in here).
    pub scheduler: SchedulerConfig,
    /// What a request may send (body, prompt, text, earlier turns) and how long its body may take.
    pub limits: Limits,
    /// Idle time after which a keep-alive is sent on a quiet stream.
    pub keep_alive: Duration,
    /// Messages the client channel holds before the conversation waits for the client (at least one).
    pub client_buffer: usize,
    /// CloudWatch namespace of the metrics line logged after each conversation (`None`: no line).
    pub metrics_namespace: Option<String>,
    /// A folder whose files are served at `/` (the demo page and its modules, for local runs).
    pub web_dir: Option<PathBuf>,
    /// Which backend answers: per request, the A/B split, failover.
    pub routing: Routing,
    /// How an interrupt reaches a conversation (in this process, or through a shared store).
    pub interrupts: Interrupts,
    /// The longest a conversation may run before it is stopped (`conversation_too_long`).
    pub max_conversation: Option<Duration>,
    /// The time limits the agent runs under (`agent_no_response`, `agent_first_token_timeout`,
    /// `agent_stalled`).
    pub agent_deadlines: AgentDeadlines,
    /// The longest a backend may take to open a session (`backend_open_timeout`, then failover).
    pub backend_open_timeout: Duration,
    /// Conversations this process speaks at once, at most (over it, `503 server_busy`); `None` on
    /// Lambda, where each invocation speaks one.
    pub max_conversations: Option<usize>,
    /// Token mode: every `/v1/speak` and interrupt must carry a token these keys verify (`None`: open,
    /// as behind IAM or locally).
    pub auth: Option<Arc<TokenAuth>>,
    /// Live conversations one owner may hold at once (over it, `429 too_many_conversations`); `None`:
    /// no limit. The one `local` owner has none (see [`crate::owner_places`]).
    pub max_conversations_per_owner: Option<usize>,
    /// Characters one owner may have spoken in a rolling hour (a sentence past it is not spoken: the
    /// answer ends with `character_budget_spent`, and the next request is refused with 429); `None`: no
    /// budget. The one `local` owner has none (see [`crate::character_budget`]).
    pub max_chars_per_owner_hour: Option<u64>,
    /// What one owner may send: input characters (prompts, earlier turns, texts) per rolling hour and
    /// requests per minute (past either, `429`; see [`crate::input_budget`]).
    pub input_limits: crate::input_budget::InputLimits,
    /// What all callers but the `local` one may spend together per rolling hour (past it, `503
    /// spend_ceiling`; see [`crate::spend_ceiling`]); none by default.
    pub ceiling: crate::spend_ceiling::Ceiling,
    /// The names a gateway that asks for no credentials answers to (`Host` and `Origin`); `None`: no
    /// check (Lambda, where the function URL and IAM stand in front).
    pub allowed_hosts: Option<AllowedHosts>,
    /// Behind IAM, whether each session of an assumed role is an owner of its own (its name is the caller's
    /// choice, so a new one escapes every per-owner limit); off: the role is the owner ([`crate::owner`]).
    pub iam_session_owners: bool,
    /// Whether a caller with no token and no IAM principal is known by its network address (auth
    /// `public`: anyone may call, so each address has its own places, budgets and conversation ids);
    /// off: every such caller is the one `local` owner ([`crate::owner`]).
    pub address_owners: bool,
    /// The sentence cache: its scope, its bounds and the openers rendered into it at start.
    pub cache: CacheSettings,
    /// The cache's shared tier (an S3 prefix) and the backends that use it; `None`: memory only.
    pub cache_shared: Option<SharedUse>,
    /// The audio format of an answer whose request names none; `None`: the backend's own PCM.
    pub output_format: Option<earshot_core::output::OutputFormat>,
    /// How fast a voice speaks where a request names no `rate`.
    pub speaking_rate: earshot_core::speech::SpeakingRate,
    /// The voices the deployment pins for OpenAI's voice names, per backend ([`crate::voice_ask`]).
    pub openai_voices: crate::voice_ask::OpenAiVoiceTable,
    /// The deployment's pronunciation lexicon ([`earshot_core::pronouncing`]); `None`: sentences are
    /// said as written.
    pub lexicon: Option<std::sync::Arc<earshot_core::text::Lexicon>>,
    /// Where the lexicon is read again while the process lives (an S3 object); `None`: `lexicon` stays as
    /// read at start ([`crate::lexicon_refresh`]).
    pub lexicon_refresh: Option<std::sync::Arc<crate::lexicon_refresh::LexiconRefresh>>,
    /// Lexicons an owner's token may name (its `lexicon` claim), by name: each laid on the deployment's
    /// for that owner's conversations ([`Gateway::lexicon_for`]); empty: none.
    pub owner_lexicons: std::collections::BTreeMap<String, std::sync::Arc<earshot_core::text::Lexicon>>,
    /// What each capped backend holds at once across the deployment (`EARSHOT_BACKEND_CONVERSATIONS`: the
    /// cap itself wraps the backend, [`crate::backend_cap`]), as `/healthz` tells the doctor; empty: none.
    pub backend_conversations: Vec<(String, usize)>,
    /// The deployment's secret that keys every conversation's key (interrupts, agent sessions): the
    /// same in every process of a deployment; by default one drawn for this process alone.
    pub conversation_secret: crate::owner::ConversationSecret,
}

/// The gateway's own defaults the settings' flags also read (the scheduler's, the request limits' and
/// the agent's are beside their types).
pub mod defaults {
    /// How long a quiet stream waits before a keep-alive.
    pub const KEEP_ALIVE_MS: u64 = 15_000;
    /// Live conversations an owner may hold at once.
    pub const MAX_CONVERSATIONS_PER_OWNER: usize = 4;
    /// Characters an owner may have spoken an hour.
    pub const MAX_CHARS_PER_OWNER_HOUR: u64 = 30_000;
    /// The metric lines' namespace.
    pub const METRICS_NAMESPACE: &str = "earshot";
}

impl Default for GatewaySettings {
    fn default() -> Self {
        GatewaySettings {
            scheduler: SchedulerConfig::default(),
            limits: Limits::default(),
            keep_alive: Duration::from_millis(defaults::KEEP_ALIVE_MS),
            client_buffer: 64,
            metrics_namespace: Some(defaults::METRICS_NAMESPACE.into()),
            web_dir: None,
            routing: Routing::default(),
            interrupts: Interrupts::Local,
            max_conversation: None,
            agent_deadlines: AgentDeadlines::default(),
            backend_open_timeout: earshot_core::failover::DEFAULT_OPEN_TIMEOUT,
            max_conversations: None,
            auth: None,
            allowed_hosts: None,
            iam_session_owners: false,
            address_owners: false,
            max_conversations_per_owner: Some(defaults::MAX_CONVERSATIONS_PER_OWNER),
            max_chars_per_owner_hour: Some(defaults::MAX_CHARS_PER_OWNER_HOUR),
            input_limits: crate::input_budget::InputLimits::default(),
            ceiling: crate::spend_ceiling::Ceiling::default(),
            cache: CacheSettings::default(),
            cache_shared: None,
            output_format: None,
            openai_voices: Default::default(),
            speaking_rate: earshot_core::speech::SpeakingRate::NORMAL,
            backend_conversations: Vec::new(),
            lexicon: None,
            lexicon_refresh: None,
            owner_lexicons: Default::default(),
            conversation_secret: crate::owner::ConversationSecret::random(),
        }
    }
}

/// A configured gateway: its backends and agent, its settings, and what it keeps while it runs (the
/// live conversations, the shutdown every conversation descends from).
pub struct Gateway {
    /// The backends, the first being the default.
    backends: Vec<Arc<dyn SpeechBackend>>,
    agent: Arc<dyn AgentSource>,
    settings: GatewaySettings,
    /// Fired when the server stops and its drain time is over: the root of every conversation's
    /// cancellation, so each live one ends with a retryable `shutting_down` error.
    shutdown: CancellationToken,
    /// The conversations live in this process.
    registry: Arc<Registry>,
    /// A permit per conversation that may speak at once (`max_conversations`).
    conversation_slots: Option<Arc<Semaphore>>,
    /// Every task a conversation spawns (its scheduler, its supervisor, its watchers, the core's
    /// switcher): a server that stops waits for them, so that nothing a conversation does
    /// after its stream ends (its metric line, clearing the interrupt store) is cut off.
    tasks: Tasks,
    /// Each owner's live conversations in this process.
    owner_places: Arc<LocalPlaces>,
    /// Where each owner's character budget is kept (this process, or the shared store).
    budgets: Ledger,
    /// The sentences said before (`None`: scope `off`).
    cache: Option<Arc<SentenceCache>>,
    /// Conversations started and not ended in this process: what the cache's warm-up waits on, so
    /// that it never takes the backends from a caller.
    live: tokio::sync::watch::Sender<usize>,
    /// The arms that failed lately, passed over by the next conversations until a probe finds them
    /// healthy ([`earshot_core::arm_health`]).
    arm_health: Arc<earshot_core::arm_health::ArmHealth>,
    /// Each owner lexicon laid on the deployment's, by name, with the deployment lexicon's version it was
    /// laid on ([`Gateway::lexicon_for`]).
    layered_lexicons: std::sync::Mutex<std::collections::HashMap<String, (String, Arc<Lexicon>)>>,
}

/// A conversation counted as live until this is dropped ([`Gateway::conversation_began`]).
pub struct Live(tokio::sync::watch::Sender<usize>);

impl Live {
    /// A guard counted nowhere (tests of the parts that hold one).
    pub fn detached() -> Self {
        Live(tokio::sync::watch::Sender::new(1))
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl Gateway {
    /// A gateway serving `backends` (the first being the default) with `agent`, under `settings`.
    pub fn new(backends: Vec<Arc<dyn SpeechBackend>>, agent: Arc<dyn AgentSource>, settings: GatewaySettings) -> Self {
        // The spoken forms' patterns, compiled off the first sentence's path (see `spoken::prepare`), on a
        // blocking thread the gateway's tracker waits for; outside a runtime (a test's), on first use.
        let tasks = Tasks::new();
        if tokio::runtime::Handle::try_current().is_ok() {
            tasks.spawn(async {
                let _ = tokio::task::spawn_blocking(earshot_core::text::spoken::prepare).await;
            });
        }
        let conversation_slots = settings.max_conversations.map(|n| Arc::new(Semaphore::new(n.max(1))));
        let cache = (settings.cache.scope != CacheScope::Off).then(|| Arc::new(SentenceCache::new(settings.cache.limits)));
        let budgets = Ledger::for_interrupts(&settings.interrupts);
        Gateway {
            backends,
            agent,
            settings,
            shutdown: CancellationToken::new(),
            registry: Arc::default(),
            conversation_slots,
            tasks,
            owner_places: Arc::default(),
            budgets,
            cache,
            live: tokio::sync::watch::Sender::new(0),
            arm_health: earshot_core::arm_health::ArmHealth::new(),
            layered_lexicons: Default::default(),
        }
    }

    /// The arms' remembered health.
    pub fn arm_health(&self) -> &Arc<earshot_core::arm_health::ArmHealth> {
        &self.arm_health
    }

    /// Counts a conversation as live from its request until the guard is dropped.
    pub fn conversation_began(&self) -> Live {
        self.live.send_modify(|n| *n += 1);
        Live(self.live.clone())
    }

    /// The number of live conversations, watched.
    pub fn live_conversations(&self) -> tokio::sync::watch::Receiver<usize> {
        self.live.subscribe()
    }

    /// The sentence cache, where its scope is not `off`.
    pub fn cache(&self) -> Option<&Arc<SentenceCache>> {
        self.cache.as_ref()
    }

    /// What `owner`'s conversation reads and fills of the cache: the owner's own part, and under scope
    /// `deployment` also the sentences the deployment declared (read, never filled: a hit never tells one
    /// caller what another heard).
    pub fn cache_use(&self, owner: &crate::owner::Owner) -> Option<CacheUse> {
        let cache = self.cache.clone()?;
        let declared = (self.settings.cache.scope == CacheScope::Deployment).then_some(None);
        Some(CacheUse { cache, partition: Some(owner.as_str().to_string()), declared, shared: self.settings.cache_shared.clone() })
    }

    /// What the warm-up fills: the deployment's own part, where every caller finds the sentences it
    /// declared (`None` unless the scope is `deployment`).
    pub fn declared_cache_use(&self) -> Option<CacheUse> {
        let cache = self.cache.clone().filter(|_| self.settings.cache.scope == CacheScope::Deployment)?;
        Some(CacheUse { shared: self.settings.cache_shared.clone(), ..CacheUse::only(cache, None) })
    }

    /// A place for one more conversation, held until it ends; `Err` when every place is taken.
    pub fn conversation_slot(&self) -> Result<Option<OwnedSemaphorePermit>, crate::api_error::ApiError> {
        let Some(slots) = &self.conversation_slots else { return Ok(None) };
        slots
            .clone()
            .try_acquire_owned()
            .map(Some)
            .map_err(|_| crate::api_error::ApiError::unavailable("server_busy", "this server is speaking as many conversations as it may; retry shortly", 1))
    }

    /// The lexicon a conversation opening now is said by: as last read where it is read again, else as
    /// read at start.
    pub fn lexicon(&self) -> Option<std::sync::Arc<earshot_core::text::Lexicon>> {
        match &self.settings().lexicon_refresh {
            Some(refresh) => Some(refresh.current()),
            None => self.settings().lexicon.clone(),
        }
    }

    /// The lexicon a conversation of a bearer of `scope` opening now is said by: the owner's (the token's
    /// `lexicon` claim) laid on the deployment's, or the deployment's alone. A name the deployment does not
    /// have is refused (403 `token_out_of_scope`), naming those it has. The two laid together are kept for
    /// the next conversation until the deployment's is read again.
    pub fn lexicon_for(&self, scope: Option<&crate::auth::Claims>) -> Result<Option<Arc<Lexicon>>, crate::api_error::ApiError> {
        let deployment = self.lexicon();
        let Some(name) = scope.and_then(|s| s.lexicon.as_deref()) else { return Ok(deployment) };
        let Some(owners) = self.settings().owner_lexicons.get(name) else {
            let known: Vec<&str> = self.settings().owner_lexicons.keys().map(String::as_str).collect();
            return Err(crate::api_error::ApiError::forbidden(
                "token_out_of_scope",
                format!(
                    "this token names the lexicon `{name}`, which this gateway does not have ({})",
                    if known.is_empty() { "it has no owner lexicons".to_string() } else { format!("it has {}", known.join(", ")) }
                ),
            ));
        };
        let Some(deployment) = deployment else { return Ok(Some(owners.clone())) };
        let mut layered = self.layered_lexicons.lock().unwrap_or_else(|e| e.into_inner());
        match layered.get(name) {
            Some((under, both)) if under == deployment.version() => Ok(Some(both.clone())),
            _ => {
                let both = Arc::new(Lexicon::layered(owners, &deployment));
                layered.insert(name.to_string(), (deployment.version().to_string(), both.clone()));
                Ok(Some(both))
            }
        }
    }

    /// The settings the gateway was built with.
    pub fn settings(&self) -> &GatewaySettings {
        &self.settings
    }

    /// The agent that answers prompts.
    pub fn agent(&self) -> &Arc<dyn AgentSource> {
        &self.agent
    }

    /// The backends, the first being the default.
    pub fn backends(&self) -> &[Arc<dyn SpeechBackend>] {
        &self.backends
    }

    /// The backend called `name`, if the gateway has one.
    pub fn backend(&self, name: &str) -> Option<&Arc<dyn SpeechBackend>> {
        self.backends.iter().find(|b| b.name() == name)
    }

    /// The backends' names, the default first.
    pub fn backend_names(&self) -> Vec<String> {
        self.backends.iter().map(|b| b.name().to_string()).collect()
    }

    /// Cancel it to end every live conversation (the server does, after its drain time).
    pub fn shutdown(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// How long a live conversation's records in the shared store last at most (its interrupt record,
    /// its owner's place): its longest life and a minute, so that a process that died holding one
    /// does not hold it for ever.
    pub fn record_ttl(&self) -> Duration {
        self.settings.max_conversation.unwrap_or(Duration::from_secs(900)) + Duration::from_secs(60)
    }

    /// One of `owner`'s places for the conversation `request_id`, or `429 too_many_conversations`.
    /// `scope`: the bearer's token, which may narrow the owner's limit.
    pub async fn owner_place(
        &self,
        owner: &crate::owner::Owner,
        request_id: &str,
        scope: Option<&crate::auth::Claims>,
    ) -> Result<OwnerPlace, crate::api_error::ApiError> {
        let ttl = self.record_ttl();
        let limit = match scope {
            Some(claims) => claims.conversations_limit(self.settings.max_conversations_per_owner),
            None => self.settings.max_conversations_per_owner,
        };
        crate::owner_places::take(owner, request_id, limit, &self.settings.interrupts, &self.owner_places, &self.tasks, ttl).await
    }

    /// The first block of `owner`'s character budget for a conversation, or `429 character_budget_spent`,
    /// and of the deployment's ceiling where there is one, or `503 spend_ceiling` (empty: no budget).
    /// `scope`: the bearer's token, which may narrow the owner's budget.
    pub async fn character_budgets(&self, owner: &crate::owner::Owner, scope: Option<&crate::auth::Claims>) -> Result<Vec<Budget>, crate::api_error::ApiError> {
        let limit = match scope {
            Some(claims) => claims.chars_per_hour_limit(self.settings.max_chars_per_owner_hour),
            None => self.settings.max_chars_per_owner_hour,
        };
        let mut budgets: Vec<Budget> = Budget::open(&self.budgets, owner, limit, &self.tasks).await?.into_iter().collect();
        // Refused, the owner's block is dropped: given back.
        let ceiling = Budget::open_ceiling(&self.budgets, owner, self.settings.ceiling.chars_per_hour, &self.tasks).await.inspect_err(|e| self.noted(e))?;
        budgets.extend(ceiling);
        Ok(budgets)
    }

    /// Logs the metric line of a refusal for the deployment's ceiling ([`crate::spend_ceiling::note`]).
    fn noted(&self, refusal: &crate::api_error::ApiError) {
        crate::spend_ceiling::note(refusal, self.settings.metrics_namespace.as_deref());
    }

    /// Counts `owner`'s request against its rate, before its body is read, or `429 request_rate_exceeded`;
    /// see [`crate::input_budget::count_request`]. `scope`: the bearer's token, which may narrow the limit.
    pub async fn count_request(&self, owner: &crate::owner::Owner, scope: Option<&crate::auth::Claims>) -> Result<(), crate::api_error::ApiError> {
        let limits = match scope {
            Some(claims) => claims.input_limits(self.settings.input_limits),
            None => self.settings.input_limits,
        };
        crate::input_budget::count_request(&self.budgets, owner, limits.requests_per_minute, self.settings.ceiling.requests_per_hour)
            .await
            .inspect_err(|e| self.noted(e))
            // Asked before any conversation (and its request id) exists: a store that fails is told in
            // earshot's words under an id of its own, the store's text kept for the log (client_error.rs).
            .map_err(|e| crate::api_error::ApiError { error: crate::client_error::for_client(e.error, &uuid::Uuid::new_v4().to_string()), ..e })
    }

    /// Charges what `owner`'s request sends (`input_chars`), or `429 input_budget_spent`; see
    /// [`crate::input_budget`]. `scope`: the bearer's token, which may narrow the limit.
    pub async fn input_charge(
        &self,
        owner: &crate::owner::Owner,
        scope: Option<&crate::auth::Claims>,
        input_chars: u64,
    ) -> Result<Option<InputCharge>, crate::api_error::ApiError> {
        let limits = match scope {
            Some(claims) => claims.input_limits(self.settings.input_limits),
            None => self.settings.input_limits,
        };
        crate::input_budget::admit(&self.budgets, owner, limits, self.settings.ceiling.input_chars_per_hour, input_chars, &self.tasks)
            .await
            .inspect_err(|e| self.noted(e))
    }

    /// The conversations' tasks: spawn through it; on shutdown, close it and wait.
    pub fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    /// The conversations live in this process, by conversation id.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }
}
