//! What a gateway is configured with, wherever it runs: one type, one set of defaults. Each setting is
//! a flag of `earshot serve` and an `EARSHOT_*` variable; the Lambda reads the variables alone (the
//! CDK app sets them, `infra/cdk/lib/lambda-env.ts`), `earshot serve` reads both, a flag winning.
//!
//! Parsed with clap's `env` support rather than by hand, so that a flag and its variable cannot drift
//! apart, and `--help` lists the variable beside each flag.

use clap::{ArgAction, Args, CommandFactory, Parser, ValueEnum};
use earshot_core::agent_deadlines::defaults as agent_defaults;
use earshot_core::cache::{CacheLimits, CacheScope};
use earshot_core::language::Language;
use earshot_core::scheduler::defaults as scheduler_defaults;
use earshot_core::speech::SpeakingRate;
use earshot_core::text::Lexicon;
use earshot_gateway::auth::TokenAuth;
use earshot_gateway::cache_settings::{CacheSettings, Warmup};
use earshot_gateway::config::defaults as gateway_defaults;
use earshot_gateway::{ConversationSecret, GatewaySettings, Interrupts, Routing};
use std::sync::Arc;
use std::time::Duration;

pub use crate::settings_error::SettingsError;

/// The Bedrock model when none is configured: Amazon Nova Lite, invoked on demand by its model id
/// (the CDK app's default too; `infra/cdk/earshot.config.json`). The AWS adapter's own default, which
/// a test holds equal to this one: a build without the feature `aws` has no adapter to ask.
pub const DEFAULT_BEDROCK_MODEL: &str = "amazon.nova-lite-v1:0";

/// A text-to-speech backend a gateway can offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendKind {
    /// Kokoro: the container over its WebSocket, or a SageMaker endpoint with --sagemaker-endpoint.
    Kokoro,
    /// Amazon Polly bidirectional streaming.
    Polly,
    /// A tone at speaking pace after a fixed latency (load tests).
    Synthetic,
}

impl BackendKind {
    /// The name clients and settings use for it (`kokoro`, `polly`, `synthetic`): clap's, the one
    /// `EARSHOT_BACKENDS` is read by.
    pub fn name(self) -> String {
        self.to_possible_value().expect("every kind has a name").get_name().to_string()
    }
}

/// Who may call the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AuthMode {
    /// No check in the gateway: IAM in front of it (on Lambda a request without an IAM caller is then
    /// refused `403 iam_caller_missing`: the function URL is not the IAM one it was meant to be), or a
    /// local run on loopback.
    None,
    /// A signed, short-lived token on every speak and interrupt.
    Token,
    /// Anyone may call, on purpose: a function URL with auth NONE, or `earshot serve` on a public
    /// address (as `--allow-unauthenticated`). Each caller is its network address (an IPv6 one by its
    /// /64), with places, budgets and conversation ids of its own.
    Public,
}

/// Where the answers come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AgentKind {
    /// Scripted answers at a chosen token rate.
    Scripted,
    /// A model on Bedrock ConverseStream.
    Bedrock,
    /// A model behind an OpenAI-compatible chat completions endpoint.
    Openai,
    /// Any agent behind an HTTP endpoint that streams its answer (SSE, NDJSON or plain text).
    Http,
    /// An agent hosted on Bedrock AgentCore Runtime.
    Agentcore,
}

/// Where the gateway runs: a few rules differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// `earshot serve`: Kokoro may be the container over its WebSocket.
    Serve,
    /// The Lambda: Kokoro is a SageMaker endpoint, nothing else can reach a GPU.
    Lambda,
}

/// The gateway's configuration, from flags or `EARSHOT_*` variables, the same for `earshot serve` and the Lambda.
#[derive(Debug, Clone, Args)]
pub struct Settings {
    /// Backends to offer, the first being the default.
    #[arg(long, env = "EARSHOT_BACKENDS", value_enum, ignore_case = true, value_delimiter = ',', default_value = "kokoro")]
    pub backends: Vec<BackendKind>,
    /// A/B weights per backend, e.g. `kokoro=50,polly=50` (none: the first backend answers).
    #[arg(long, env = "EARSHOT_AB_WEIGHTS")]
    pub ab_weights: Option<String>,
    /// The A/B experiment's name: the split assigns each caller by a hash of it, so a new name draws
    /// the assignment anew and the same name reproduces it; in every metric line and `session`.
    #[arg(long, env = "EARSHOT_AB_EXPERIMENT", default_value = earshot_gateway::routing::DEFAULT_EXPERIMENT, value_parser = experiment_name)]
    pub ab_experiment: String,
    /// Whether any request may name its backend (off: only IAM callers, and tokens whose `backends`
    /// claim lists the backends, may).
    #[arg(long, env = "EARSHOT_AB_ALLOW_OVERRIDE", default_value_t = true, action = ArgAction::Set, value_name = "true|false")]
    pub ab_allow_override: bool,
    /// Behind IAM, make each session of an assumed role an owner of its own (its limits, interrupts and agent
    /// sessions); off (the default), the role is the owner, since the session name is the caller's to choose.
    #[arg(long, env = "EARSHOT_IAM_SESSION_OWNERS", default_value_t = false, default_missing_value = "true", num_args = 0..=1, action = ArgAction::Set, value_name = "true|false")]
    pub iam_session_owners: bool,
    /// Hand a conversation to the next backend when its own fails before any audio, or is full.
    #[arg(long, env = "EARSHOT_FAILOVER", default_value_t = false, default_missing_value = "true", num_args = 0..=1, action = ArgAction::Set, value_name = "true|false")]
    pub failover: bool,
    /// Reach Kokoro through a SageMaker endpoint of this name (the production path) instead of the
    /// container's WebSocket.
    #[arg(long, env = "EARSHOT_SAGEMAKER_ENDPOINT")]
    pub sagemaker_endpoint: Option<String>,
    /// The Kokoro container's base URL (local runs).
    #[arg(long, env = "KOKORO_URL", default_value = "http://127.0.0.1:8080")]
    pub kokoro_url: String,
    /// The Kokoro voice when a request names none (the container's English default otherwise; af_heart
    /// through SageMaker).
    #[arg(long, env = "EARSHOT_KOKORO_VOICE")]
    pub kokoro_voice: Option<String>,
    /// The Polly voice (a generative voice: ruth, stephen, matthew, joanna, danielle, amy, olivia, lea, remi).
    #[arg(long, env = "EARSHOT_POLLY_VOICE", default_value = "ruth")]
    pub polly_voice: String,
    /// The Kokoro voice of each language when a request names none, e.g. `fr=ff_siwis,zh=zf_xiaobei` (the
    /// container's own choice otherwise; through SageMaker, the production voices fr=ff_siwis,
    /// zh=zf_xiaobei, ja=jf_alpha).
    #[arg(long, env = "EARSHOT_KOKORO_LANGUAGE_VOICES", value_parser = language_voices, default_value = "")]
    pub kokoro_language_voices: LanguageVoices,
    /// The Polly voice of each language when a request names none, e.g. `fr=remi` (otherwise the
    /// default voice where it speaks the language, else Polly's first voice of it).
    #[arg(long, env = "EARSHOT_POLLY_LANGUAGE_VOICES", value_parser = language_voices, default_value = "")]
    pub polly_language_voices: LanguageVoices,
    /// Where the agent comes from.
    #[arg(long, env = "EARSHOT_AGENT", value_enum, ignore_case = true, default_value = "scripted")]
    pub agent: AgentKind,
    /// The Bedrock model of the bedrock agent.
    #[arg(long, env = "EARSHOT_BEDROCK_MODEL_ID", default_value = DEFAULT_BEDROCK_MODEL)]
    pub bedrock_model: String,
    /// The system prompt of the bedrock agent (none: its built-in one, for short spoken answers).
    #[arg(long, env = "EARSHOT_SYSTEM_PROMPT")]
    pub system_prompt: Option<String>,
    /// The OpenAI-compatible API's base URL, with its version (OPENAI_BASE_URL when unset; else OpenAI's).
    #[arg(long, env = "EARSHOT_OPENAI_BASE_URL")]
    pub openai_base_url: Option<String>,
    /// The model of the openai agent (required with --agent openai).
    #[arg(long, env = "EARSHOT_OPENAI_MODEL")]
    pub openai_model: Option<String>,
    /// The openai agent's API key (OPENAI_API_KEY when unset). On Lambda, prefer --agent-key-secret.
    #[arg(long, env = "EARSHOT_OPENAI_API_KEY", hide_env_values = true)]
    pub openai_api_key: Option<String>,
    /// A Secrets Manager secret (name or ARN) whose string is the agent's key, read once at start: the
    /// openai agent's API key, or the value of --http-agent-key-header.
    #[arg(long, env = "EARSHOT_AGENT_KEY_SECRET")]
    pub agent_key_secret: Option<String>,
    /// Sampling temperature of the openai agent (its server's default when unset).
    #[arg(long, env = "EARSHOT_TEMPERATURE")]
    pub temperature: Option<f32>,
    /// The longest answer of the openai agent, in tokens (its server's default when unset).
    #[arg(long, env = "EARSHOT_MAX_TOKENS")]
    pub max_tokens: Option<u32>,
    /// The URL the http agent POSTs each prompt to (required with --agent http).
    #[arg(long, env = "EARSHOT_HTTP_AGENT_URL")]
    pub http_agent_url: Option<String>,
    /// How the http agent writes its answer: auto (by content type), sse, ndjson or text.
    #[arg(long, env = "EARSHOT_HTTP_AGENT_FORMAT", default_value = "auto")]
    pub http_agent_format: earshot_agents::AnswerFormat,
    /// Where the text is in each JSON event of the http agent (a JSON pointer such as /delta/text).
    #[arg(long, env = "EARSHOT_HTTP_AGENT_TEXT_POINTER")]
    pub http_agent_text_pointer: Option<String>,
    /// A header sent to the http agent, `Name: value` (repeat the flag for more).
    #[arg(long = "http-agent-header", env = "EARSHOT_HTTP_AGENT_HEADER", value_name = "NAME: VALUE")]
    pub http_agent_headers: Vec<String>,
    /// The header that carries the key read from --agent-key-secret to the http agent (`authorization`
    /// gets `Bearer KEY`).
    #[arg(long, env = "EARSHOT_HTTP_AGENT_KEY_HEADER")]
    pub http_agent_key_header: Option<String>,
    /// The AgentCore runtime of the agentcore agent (required with --agent agentcore).
    #[arg(long, env = "EARSHOT_AGENTCORE_RUNTIME_ARN")]
    pub agentcore_runtime_arn: Option<String>,
    /// The AgentCore runtime endpoint (its DEFAULT endpoint when unset).
    #[arg(long, env = "EARSHOT_AGENTCORE_QUALIFIER")]
    pub agentcore_qualifier: Option<String>,
    /// Where the text is in an AgentCore event that is a JSON object (events that are strings are text).
    #[arg(long, env = "EARSHOT_AGENTCORE_TEXT_POINTER", default_value = "/data")]
    pub agentcore_text_pointer: String,
    /// Who may call: `none` (no check: behind the function URL's IAM, or locally), `token` (every
    /// speak and interrupt needs a signed token; see docs/access.md) or `public` (anyone, on purpose).
    #[arg(long, env = "EARSHOT_AUTH", value_enum, ignore_case = true, default_value = "none")]
    pub auth: AuthMode,
    /// Token keys, `kid=secret,…` (at least 32 bytes each); the first signs `earshot token`'s tokens.
    #[arg(long, env = "EARSHOT_TOKEN_KEYS", hide_env_values = true)]
    pub token_keys: Option<String>,
    /// API keys (`sk-earshot-…`, made by `earshot key create`) taken beside tokens in token mode: the
    /// JSON file that keeps their digests, read again when it changes. Without it, a gateway with an
    /// interrupt table (Lambda) reads them from that table (`earshot key create --table`).
    #[arg(long = "api-keys", env = "EARSHOT_API_KEYS_FILE", value_name = "FILE")]
    pub api_keys_file: Option<std::path::PathBuf>,
    /// A Secrets Manager secret holding the token keys as JSON `{"kid": "secret", …}`, read at start
    /// and again on a request this long after the last reading (a key removed from it stops verifying).
    #[arg(long, env = "EARSHOT_TOKEN_KEYS_SECRET")]
    pub token_keys_secret: Option<String>,
    /// How often the token keys' secret is read again, in seconds (0: only at start).
    #[arg(long, env = "EARSHOT_TOKEN_KEYS_REFRESH_SECONDS", default_value_t = 300)]
    pub token_keys_refresh_seconds: u64,
    /// The deployment's conversation secret (at least 32 bytes), which keys every conversation's key
    /// (the interrupt store's items, the agent's session ids): every process of one deployment needs
    /// the same. None given: `earshot serve` draws one for the process; the Lambda refuses to start.
    #[arg(long, env = "EARSHOT_CONVERSATION_SECRET", hide_env_values = true)]
    pub conversation_secret: Option<String>,
    /// A file holding the conversation secret (its surrounding white space dropped).
    #[arg(long, env = "EARSHOT_CONVERSATION_SECRET_FILE")]
    pub conversation_secret_file: Option<std::path::PathBuf>,
    /// A Secrets Manager secret (name or ARN) whose string is the conversation secret, read at start
    /// (the CDK stack makes one per deployment).
    #[arg(long, env = "EARSHOT_CONVERSATION_SECRET_ID")]
    pub conversation_secret_id: Option<String>,
    /// The audience (`aud`) tokens must name.
    #[arg(long, env = "EARSHOT_TOKEN_AUDIENCE", default_value = "earshot")]
    pub token_audience: String,
    /// The longest a token may be valid for, in seconds (`exp` further away is `token_lifetime_too_long`).
    #[arg(long, env = "EARSHOT_TOKEN_MAX_LIFETIME_SECONDS", default_value_t = earshot_gateway::auth::DEFAULT_MAX_LIFETIME_SECONDS)]
    pub token_max_lifetime_seconds: u64,
    /// The longest prompt accepted, in characters.
    #[arg(long, env = "EARSHOT_MAX_PROMPT_CHARS", default_value_t = earshot_gateway::request::defaults::MAX_PROMPT_CHARS)]
    pub max_prompt_chars: usize,
    /// The longest text accepted, in characters.
    #[arg(long, env = "EARSHOT_MAX_TEXT_CHARS", default_value_t = earshot_gateway::request::defaults::MAX_TEXT_CHARS)]
    pub max_text_chars: usize,
    /// The longest answer spoken, in characters: an agent that writes on past it is stopped and the
    /// stream ends with `answer_too_long` (the answer's cap, as the text's is the input's).
    #[arg(long, env = "EARSHOT_MAX_ANSWER_CHARS", default_value_t = scheduler_defaults::MAX_ANSWER_CHARS)]
    pub max_answer_chars: usize,
    /// Release a finished sentence after this much agent silence, in milliseconds (0: never).
    #[arg(long, env = "EARSHOT_IDLE_RELEASE_MS", default_value_t = scheduler_defaults::IDLE_RELEASE_MS)]
    pub idle_release_ms: u64,
    /// Release a finished sentence whose end is ambiguous (`It costs $3.`, `The U.S.`, `at 4 p.m.`) after this
    /// much agent silence, in milliseconds: the text that settles it is waited for this long at most (0:
    /// until the agent goes on or ends). A tool call's pause releases at once.
    #[arg(long, env = "EARSHOT_AMBIGUOUS_RELEASE_MS", default_value_t = scheduler_defaults::AMBIGUOUS_RELEASE_MS)]
    pub ambiguous_release_ms: u64,
    /// Release the first clause of an answer early once it has this many words.
    #[arg(long, env = "EARSHOT_FAST_FIRST", value_name = "WORDS")]
    pub fast_first: Option<usize>,
    /// Sentences at the backend and not finished, at most.
    #[arg(long, env = "EARSHOT_MAX_IN_FLIGHT", default_value_t = scheduler_defaults::MAX_IN_FLIGHT)]
    pub max_in_flight: usize,
    /// Start the voice on the answer's first sentence as soon as its full stop has come, before the
    /// character that confirms it (the Kokoro container; Polly is sent only what is certain).
    #[arg(long, env = "EARSHOT_PREPARE_FIRST_SENTENCE", default_value_t = true, default_missing_value = "true", num_args = 0..=1, action = ArgAction::Set, value_name = "true|false")]
    pub prepare_first_sentence: bool,
    /// The DynamoDB table through which an interrupt reaches the invocation that speaks (Lambda; none:
    /// interrupts stay in this process, and on Lambda are refused with 501).
    #[arg(long, env = "EARSHOT_INTERRUPT_TABLE")]
    pub interrupt_table: Option<String>,
    /// DynamoDB's endpoint for the interrupt table, when it is not where the other AWS calls go (local
    /// runs: moto's server).
    #[arg(long, env = "EARSHOT_INTERRUPT_ENDPOINT")]
    pub interrupt_endpoint: Option<String>,
    /// How often a conversation reads the interrupt table, in milliseconds.
    #[arg(long, env = "EARSHOT_INTERRUPT_POLL_MS", default_value_t = 250)]
    pub interrupt_poll_ms: u64,
    /// The longest the agent may take to answer a request (an HTTP agent: its response headers), in
    /// milliseconds (`agent_no_response`).
    #[arg(long, env = "EARSHOT_AGENT_RESPONSE_TIMEOUT_MS", default_value_t = agent_defaults::RESPONSE_MS)]
    pub agent_response_timeout_ms: u64,
    /// The longest the agent may take from its answer's start to its first event, in milliseconds
    /// (`agent_first_token_timeout`).
    #[arg(long, env = "EARSHOT_AGENT_FIRST_TOKEN_TIMEOUT_MS", default_value_t = agent_defaults::FIRST_EVENT_MS)]
    pub agent_first_token_timeout_ms: u64,
    /// The longest the agent may be silent between events (a tool call included), in milliseconds
    /// (`agent_stalled`).
    #[arg(long, env = "EARSHOT_AGENT_IDLE_TIMEOUT_MS", default_value_t = agent_defaults::BETWEEN_EVENTS_MS)]
    pub agent_idle_timeout_ms: u64,
    /// The most bytes one SSE event or NDJSON line of an HTTP or OpenAI-compatible agent may hold
    /// (`agent_event_too_large`).
    #[arg(long, env = "EARSHOT_AGENT_MAX_EVENT_BYTES", default_value_t = earshot_agents::http_stream::DEFAULT_MAX_EVENT_BYTES)]
    pub agent_max_event_bytes: usize,
    /// The longest a backend may stay silent while it has sentences to speak, in milliseconds
    /// (`backend_stalled`; Polly's sentence with no audio for as long: `polly_timeout`; 0: no limit).
    #[arg(long, env = "EARSHOT_BACKEND_SILENCE_TIMEOUT_MS", default_value_t = scheduler_defaults::BACKEND_SILENCE_MS)]
    pub backend_silence_timeout_ms: u64,
    /// The longest a client may leave the stream untaken once earshot's queue to it is full, in
    /// milliseconds (0: no limit): past it the conversation ends, its place and the backend's session
    /// are given back and the connection is let go.
    #[arg(long, env = "EARSHOT_CLIENT_READ_TIMEOUT_MS", default_value_t = scheduler_defaults::CLIENT_READ_TIMEOUT_MS)]
    pub client_read_timeout_ms: u64,
    /// How long a stream may go quiet before a keep-alive is sent, in milliseconds: what keeps a proxy
    /// from closing a quiet stream, and (under Lambda's emulator) how soon a departed client is noticed.
    #[arg(long, env = "EARSHOT_KEEP_ALIVE_MS", default_value_t = gateway_defaults::KEEP_ALIVE_MS)]
    pub keep_alive_ms: u64,
    /// The longest a backend may take to open a session before the next in the failover order is tried,
    /// in milliseconds (`backend_open_timeout`).
    #[arg(long, env = "EARSHOT_BACKEND_OPEN_TIMEOUT_MS", default_value_t = earshot_core::arm::DEFAULT_OPEN_TIMEOUT.as_millis() as u64)]
    pub backend_open_timeout_ms: u64,
    /// The longest a conversation may run, in seconds (0: no limit); under the Lambda's timeout.
    #[arg(long, env = "EARSHOT_MAX_CONVERSATION_SECONDS", default_value_t = 280)]
    pub max_conversation_seconds: u64,
    /// The audio format of an answer whose request names none (`output_format`): pcm_8000, pcm_16000,
    /// pcm_22050, pcm_24000, pcm_44100, pcm_48000, ulaw_8000 or alaw_8000. Unset: each backend's own
    /// PCM (Kokoro 24 kHz, Polly 16 kHz).
    #[arg(long, env = "EARSHOT_OUTPUT_FORMAT")]
    pub output_format: Option<earshot_core::output::OutputFormat>,
    /// How fast a voice speaks where a request names no `rate`: 0.5 to 2.0 (1: the voice's own).
    #[arg(long, env = "EARSHOT_SPEAKING_RATE", default_value_t = 1.0)]
    pub speaking_rate: f64,
    /// Voices pinned to OpenAI's voice names, per backend, as JSON: `{"kokoro": {"nova": "af_bella"},
    /// "polly": {"onyx": "matthew"}}`. A name left out is given one of the backend's voices for the
    /// language in turn (docs/openai.md lists them).
    #[arg(long, env = "EARSHOT_OPENAI_VOICES", value_name = "JSON")]
    pub openai_voices: Option<String>,
    /// A pronunciation lexicon of `written form [language] = what to say` lines (`docs/pronunciation.md`):
    /// a file, or an S3 object `s3://bucket/key` read at start (the CDK app uploads one there). Every
    /// sentence is said as it says, on every voice. A bad line stops the start with its number and why.
    #[arg(long, env = "EARSHOT_LEXICON", value_name = "FILE|s3://BUCKET/KEY")]
    pub lexicon: Option<String>,
    /// Lexicons an owner's token may name in its `lexicon` claim: `NAME=FILE|s3://BUCKET/KEY`, comma
    /// separated (`acme=acme.txt,globex=s3://lexicons/globex.txt`). Each is read at start, checked as the
    /// deployment's is, and laid on it for that owner's conversations.
    #[arg(long, env = "EARSHOT_OWNER_LEXICONS", value_name = "NAME=SOURCE,...", default_value = "", value_parser = owner_lexicons)]
    pub owner_lexicons: OwnerLexicons,
    /// How often a lexicon kept in S3 is read again while the process lives, in seconds (0: only at start).
    /// A conversation that opens after that long starts a reading; a bad one keeps the lexicon before it.
    #[arg(long, env = "EARSHOT_LEXICON_REFRESH_SECONDS", default_value_t = 300)]
    pub lexicon_refresh_seconds: u64,
    /// Live conversations one caller (a token's `sub`, an IAM principal) may hold at once; more are
    /// refused `429 too_many_conversations` (0: no limit). Shared across instances through the
    /// interrupt table where there is one.
    #[arg(long, env = "EARSHOT_MAX_CONVERSATIONS_PER_OWNER", default_value_t = gateway_defaults::MAX_CONVERSATIONS_PER_OWNER)]
    pub max_conversations_per_owner: usize,
    /// Characters one caller may have spoken in a rolling hour (what the voices bill); a sentence past
    /// it is not spoken (the answer ends with `character_budget_spent`) and the caller's next request is
    /// refused `429` until the hour rolls on (0: no budget). Shared across instances through the
    /// interrupt table where there is one. A server without callers of its own (no token, no IAM) has none.
    #[arg(long, env = "EARSHOT_MAX_CHARS_PER_OWNER_HOUR", default_value_t = gateway_defaults::MAX_CHARS_PER_OWNER_HOUR)]
    pub max_chars_per_owner_hour: u64,
    /// Characters one caller may send in a rolling hour: prompts, earlier turns (`messages`) and texts,
    /// what the agent bills as input whatever the answer's length (0: no limit). Past it a request is
    /// refused `429 input_budget_spent`; what a request sent stays charged. The default, about 75,000
    /// input tokens, is $0.23 an hour at $3 per million. Shared across instances as the character budget is.
    #[arg(long, env = "EARSHOT_MAX_INPUT_CHARS_PER_OWNER_HOUR", default_value_t = earshot_gateway::input_budget::DEFAULT_CHARS_PER_HOUR)]
    pub max_input_chars_per_owner_hour: u64,
    /// Requests one caller may make in a minute (0: no limit); past it `429 request_rate_exceeded`.
    #[arg(long, env = "EARSHOT_MAX_REQUESTS_PER_OWNER_MINUTE", default_value_t = earshot_gateway::input_budget::DEFAULT_REQUESTS_PER_MINUTE)]
    pub max_requests_per_owner_minute: u64,
    /// Characters all callers together (every one but the local owner) may have spoken in a rolling hour:
    /// the deployment's ceiling over every caller's own budget, which a public URL's many addresses could
    /// otherwise add up past any bill (0: no ceiling). Past it `503 spend_ceiling`; kept where the budgets are.
    #[arg(long, env = "EARSHOT_CEILING_CHARS_PER_HOUR", default_value_t = 0)]
    pub ceiling_chars_per_hour: u64,
    /// Characters all callers together may send to the agent in a rolling hour (0: no ceiling).
    #[arg(long, env = "EARSHOT_CEILING_INPUT_CHARS_PER_HOUR", default_value_t = 0)]
    pub ceiling_input_chars_per_hour: u64,
    /// Requests all callers together may make in a rolling hour (0: no ceiling).
    #[arg(long, env = "EARSHOT_CEILING_REQUESTS_PER_HOUR", default_value_t = 0)]
    pub ceiling_requests_per_hour: u64,
    /// The proxies in front whose forwarding headers (`Forwarded`, `X-Forwarded-For`) name the caller:
    /// CIDRs separated by commas (CloudFront's, a load balancer's subnet). Checked against the TCP peer
    /// under `earshot serve`, the function URL's `sourceIp` on Lambda; from any other peer the headers are
    /// ignored. Empty: none (every caller is its own address).
    #[arg(long, env = "EARSHOT_TRUSTED_PROXIES", default_value = "")]
    pub trusted_proxies: String,
    /// Conversations a backend may hold at once across the deployment, `NAME=N` separated by commas, where
    /// its service has a concurrency quota: Polly's generative voices allow 26 concurrent requests and a
    /// conversation holds up to 3 streams, so 8 (raise it with the quota; `polly=0`: no cap). Past it a
    /// conversation goes to the next arm, or is refused `503 backend_busy`. Counted in the interrupt table
    /// where there is one.
    #[arg(long, env = "EARSHOT_BACKEND_CONVERSATIONS", default_value = "polly=8", value_parser = backend_conversations)]
    pub backend_conversations: BackendCaps,
    /// What a caller may hear from the cache: `deployment` (its own sentences and the ones the deployment
    /// declared, the warm-up's: the default where every caller is one local owner), `owner` (its own
    /// only, no warm-up: the default where callers are owners, tokens or IAM) or `off`. No caller ever
    /// hears another's sentence from the cache: a hit is faster, and would tell it the sentence was said.
    #[arg(long, env = "EARSHOT_CACHE", value_parser = cache_scope)]
    pub cache: Option<CacheScope>,
    /// The sentence cache's bound, in MiB of audio (least recently used sentences go first; a fraction
    /// such as 0.5 is allowed).
    #[arg(long, env = "EARSHOT_CACHE_MIB", default_value_t = 64.0)]
    pub cache_mib: f64,
    /// The longest sentence the cache keeps, in characters.
    #[arg(long, env = "EARSHOT_CACHE_MAX_CHARS", default_value_t = 200)]
    pub cache_max_chars: usize,
    /// The openers rendered into the cache at start: a JSON list of sentences (every backend's default
    /// voice), a JSON object from voice to sentences, or `none`. Unset: a few common openers.
    #[arg(long, env = "EARSHOT_CACHE_WARMUP")]
    pub cache_warmup: Option<String>,
    /// The sentence cache's shared tier: an S3 bucket whose prefix every process of the deployment reads
    /// and fills, for the backends that bill each character (none: each process keeps its own cache).
    #[arg(long, env = "EARSHOT_CACHE_BUCKET")]
    pub cache_bucket: Option<String>,
    /// The prefix of the shared tier's objects (a lifecycle rule on it expires them).
    #[arg(long, env = "EARSHOT_CACHE_PREFIX", default_value = "earshot-cache/")]
    pub cache_prefix: String,
    /// The backends whose sentences go to the shared tier.
    #[arg(long, env = "EARSHOT_CACHE_SHARED_BACKENDS", value_enum, ignore_case = true, value_delimiter = ',', default_value = "polly")]
    pub cache_shared_backends: Vec<BackendKind>,
    /// The longest a fetch from the shared tier may take before the backend speaks the sentence, in ms.
    #[arg(long, env = "EARSHOT_CACHE_FETCH_MS", default_value_t = 150)]
    pub cache_fetch_ms: u64,
    /// S3's endpoint for the shared tier, when it is not where the other AWS calls go (tests: moto's server).
    #[arg(long, env = "EARSHOT_CACHE_ENDPOINT")]
    pub cache_endpoint: Option<String>,
    /// The CloudWatch namespace of the metrics line logged after each conversation.
    #[arg(long, env = "EARSHOT_METRICS_NAMESPACE", default_value = gateway_defaults::METRICS_NAMESPACE)]
    pub metrics_namespace: String,
    /// The scripted agent's pace, in tokens per second.
    #[arg(long, env = "EARSHOT_SCRIPTED_TOKENS_PER_SECOND", default_value_t = 30.0)]
    pub tokens_per_second: f64,
    /// A named answer for the scripted agent, `NAME=TEXT` (repeatable): a prompt that is NAME (case and
    /// surrounding spaces aside) is answered with TEXT, which may hold `{pause:MS}` marks (a tool call's
    /// silence). For demos and tests that want an answer of their own rather than the samples. The variable
    /// holds one a line.
    #[arg(long = "script", env = "EARSHOT_SCRIPTS", value_name = "NAME=TEXT", value_delimiter = '\n')]
    pub scripts: Vec<String>,
    /// The scripted agent's delay before its first token, in milliseconds.
    #[arg(long, env = "EARSHOT_SCRIPTED_FIRST_TOKEN_MS", default_value_t = 200)]
    pub first_token_ms: u64,
    /// How the scripted agent cuts its answer into tokens: 0, shaped like an LLM's (a word with its leading
    /// space, punctuation on its own); N, pieces of N characters cut anywhere (a benchmark that feeds another
    /// system the same stream).
    #[arg(long, env = "EARSHOT_SCRIPTED_TOKEN_CHARS", default_value_t = 0)]
    pub token_chars: usize,
    /// The synthetic backend's first-audio latency, in milliseconds.
    #[arg(long, env = "EARSHOT_SYNTHETIC_LATENCY_MS", default_value_t = 200)]
    pub synthetic_latency_ms: u64,
    /// Sessions the synthetic backend serves at once, as a container with that many workers; a session past
    /// them waits for one to end. 0: any number.
    #[arg(long, env = "EARSHOT_SYNTHETIC_SESSIONS", default_value_t = 0)]
    pub synthetic_sessions: usize,
    /// How far ahead of its playback the synthetic backend sends audio, in milliseconds (0: each chunk as it
    /// would start playing).
    #[arg(long, env = "EARSHOT_SYNTHETIC_LEAD_MS", default_value_t = 0)]
    pub synthetic_lead_ms: u64,
    /// An endpoint for every AWS call (local stand-ins: `https://127.0.0.1:8443`).
    #[arg(long, env = "EARSHOT_AWS_ENDPOINT")]
    pub aws_endpoint: Option<String>,
    /// A PEM certificate to trust for the AWS endpoint (the stand-ins' self-signed one).
    #[arg(long, env = "EARSHOT_AWS_TRUST_PEM")]
    pub aws_trust_pem: Option<std::path::PathBuf>,
}

/// Variables no deployment sets: local runs and tests only (a deployment keeps the agent's key in
/// Secrets Manager, never in a variable).
pub const LOCAL_ONLY: &[&str] = &[
    "KOKORO_URL",
    "EARSHOT_AWS_ENDPOINT",
    "EARSHOT_AWS_TRUST_PEM",
    "EARSHOT_INTERRUPT_ENDPOINT",
    "EARSHOT_CACHE_ENDPOINT",
    "EARSHOT_FAST_FIRST",
    "EARSHOT_MAX_IN_FLIGHT",
    "EARSHOT_OPENAI_API_KEY",
    "EARSHOT_TOKEN_KEYS",
    // API keys in a file: `earshot serve` (a deployment keeps them in its table).
    "EARSHOT_API_KEYS_FILE",
    "EARSHOT_CONVERSATION_SECRET",
    "EARSHOT_CONVERSATION_SECRET_FILE",
    // The scripted agent and the synthetic voice: demos, tests and benches (a Lambda under `cargo lambda
    // watch` among them).
    "EARSHOT_SCRIPTS",
    "EARSHOT_SCRIPTED_TOKENS_PER_SECOND",
    "EARSHOT_SCRIPTED_FIRST_TOKEN_MS",
    "EARSHOT_SCRIPTED_TOKEN_CHARS",
    "EARSHOT_SYNTHETIC_LATENCY_MS",
    "EARSHOT_SYNTHETIC_SESSIONS",
    "EARSHOT_SYNTHETIC_LEAD_MS",
    // The CDK app's lexicon is an asset: a changed file is a new object, named by a new deploy, so a deployed
    // function keeps the default; an operator who edits an object of their own in place may set it.
    "EARSHOT_LEXICON_REFRESH_SECONDS",
    // Owners' lexicons are not part of the CDK configuration yet: an operator who keeps them in S3 sets the
    // variable on the function and grants it s3:GetObject on those objects (docs/pronunciation.md).
    "EARSHOT_OWNER_LEXICONS",
    // On by default everywhere; off only to measure what it is worth (the peer bench's variant).
    "EARSHOT_PREPARE_FIRST_SENTENCE",
];

/// Read by the logging set-up of both binaries rather than by [`Settings`].
pub const LOG_VARIABLE: &str = "EARSHOT_LOG";

/// Libraries whose debug and trace logs carry requests as they are (the Lambda runtime logs the raw
/// event, `Authorization` and `?access_token=` included; HTTP clients log headers): held at `warn`
/// whatever `EARSHOT_LOG` asks, so that no level logs a caller's or an upstream's secret.
pub const QUIET_LOG_TARGETS: &[&str] = &[
    "lambda_runtime",
    "lambda_http",
    "aws_smithy_runtime",
    "aws_smithy_http_client",
    "hyper",
    "hyper_util",
    "h2",
    "reqwest",
    "tungstenite",
    "tokio_tungstenite",
];

/// The `EARSHOT_LOG` filter (`info` when unset), with [`QUIET_LOG_TARGETS`] held at `warn`.
pub fn log_directives(requested: Option<&str>) -> String {
    let mut directives = requested.filter(|r| !r.trim().is_empty()).unwrap_or("info").to_string();
    for target in QUIET_LOG_TARGETS {
        directives.push_str(&format!(",{target}=warn"));
    }
    directives
}

/// The settings alone, as a command with no arguments: the Lambda's way of reading its variables.
#[derive(Parser)]
#[command(name = "bootstrap")]
struct FromEnv {
    #[command(flatten)]
    settings: Settings,
}

impl Settings {
    /// The proxies whose forwarding headers name the caller ([`earshot_gateway::trusted_proxies`]).
    pub fn proxies(&self) -> Result<earshot_gateway::trusted_proxies::TrustedProxies, SettingsError> {
        earshot_gateway::trusted_proxies::TrustedProxies::parse(&self.trusted_proxies).map_err(|why| SettingsError::of("trusted-proxies", why))
    }

    /// Reads the settings from variables alone and checks them for `place` (tests and tools; the Lambda
    /// reads them with [`Settings::parse_vars`] and checks them once, in [`Settings::resolve`]).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>, place: Place) -> Result<Settings, SettingsError> {
        let settings = Settings::parse_vars(get)?;
        settings.check(place)?;
        Ok(settings)
    }

    /// Reads the settings from variables alone (the Lambda: `get` is the process environment), unchecked.
    /// An empty variable counts as unset; a bad value names its variable.
    pub fn parse_vars(get: impl Fn(&str) -> Option<String>) -> Result<Settings, SettingsError> {
        // Each variable becomes its flag, so that both go through the same parser and defaults.
        let mut argv = vec!["bootstrap".to_string()];
        for arg in FromEnv::command().get_arguments() {
            let (Some(variable), Some(long)) = (arg.get_env(), arg.get_long()) else { continue };
            if let Some(value) = get(&variable.to_string_lossy()).map(|v| v.trim().to_string()).filter(|v| !v.is_empty()) {
                argv.push(format!("--{long}={value}"));
            }
        }
        Ok(FromEnv::try_parse_from(argv).map_err(|e| explain(&e))?.settings)
    }

    /// Every variable the settings read.
    pub fn variables() -> Vec<String> {
        FromEnv::command().get_arguments().filter_map(|a| a.get_env()).map(|v| v.to_string_lossy().into_owned()).collect()
    }

    /// The time limits the agent runs under.
    pub fn agent_deadlines(&self) -> earshot_core::agent_deadlines::AgentDeadlines {
        earshot_core::agent_deadlines::AgentDeadlines {
            response: Duration::from_millis(self.agent_response_timeout_ms),
            first_event: Duration::from_millis(self.agent_first_token_timeout_ms),
            between_events: Duration::from_millis(self.agent_idle_timeout_ms),
        }
    }

    /// The longest a backend may stay silent while it has sentences to speak (`None`: no limit): the
    /// conversation's limit (`backend_stalled`) and Polly's own for a sentence's first audio.
    pub fn backend_silence(&self) -> Option<Duration> {
        (self.backend_silence_timeout_ms > 0).then(|| Duration::from_millis(self.backend_silence_timeout_ms))
    }

    /// The longest a client may take nothing (`None`: no limit).
    pub fn client_read_timeout(&self) -> Option<Duration> {
        (self.client_read_timeout_ms > 0).then(|| Duration::from_millis(self.client_read_timeout_ms))
    }

    /// The cache's scope: as set, else `owner` where callers are owners of their own (tokens; IAM on
    /// Lambda) and `deployment` where every caller is the one local owner.
    pub fn cache_scope(&self, place: Place) -> CacheScope {
        let owners = match self.auth {
            AuthMode::Token => true,
            AuthMode::None => place == Place::Lambda,
            AuthMode::Public => false,
        };
        self.cache.unwrap_or(if owners { CacheScope::Owner } else { CacheScope::Deployment })
    }

    /// The sentence cache's settings.
    pub fn cache(&self, place: Place) -> Result<CacheSettings, SettingsError> {
        Ok(CacheSettings {
            scope: self.cache_scope(place),
            limits: CacheLimits { max_bytes: (self.cache_mib * (1 << 20) as f64) as usize, max_chars: self.cache_max_chars },
            warmup: self.cache_warmup()?,
        })
    }

    /// The speaking rate of a request that names none.
    pub fn speaking_rate(&self) -> Result<SpeakingRate, SettingsError> {
        SpeakingRate::from_factor(self.speaking_rate).map_err(|e| SettingsError::of("speaking-rate", e))
    }

    /// The voices pinned to OpenAI's names; none pinned where the setting is left out.
    pub fn openai_voices(&self) -> Result<earshot_gateway::voice_ask::OpenAiVoiceTable, SettingsError> {
        match self.openai_voices.as_deref() {
            None | Some("") => Ok(Default::default()),
            Some(json) => earshot_gateway::voice_ask::OpenAiVoiceTable::parse(json).map_err(|why| SettingsError::of("openai-voices", why)),
        }
    }

    /// The lexicon of a file, read and checked; `None` where none is named, or where it is an S3 object
    /// ([`Settings::lexicon_object`], read when the AWS parts connect).
    pub fn lexicon(&self) -> Result<Option<Arc<Lexicon>>, SettingsError> {
        let Some(path) = self.lexicon.as_deref() else { return Ok(None) };
        if path.starts_with("s3://") {
            return match self.lexicon_object() {
                Some(_) => Ok(None),
                None => Err(SettingsError::of("lexicon", format!("{path} is not s3://BUCKET/KEY"))),
            };
        }
        let text = std::fs::read_to_string(path).map_err(|e| SettingsError::of("lexicon", format!("{path} cannot be read: {e}")))?;
        Ok(Some(Arc::new(Settings::lexicon_of(path, &text)?)))
    }

    /// The owner lexicons kept in files, read and checked, by name (those kept in S3 are read when the AWS
    /// parts connect: [`Settings::owner_lexicon_objects`]).
    pub fn owner_lexicons(&self) -> Result<std::collections::BTreeMap<String, Arc<Lexicon>>, SettingsError> {
        let mut read = std::collections::BTreeMap::new();
        for (name, source) in self.owner_lexicons.0.iter().filter(|(_, source)| !source.starts_with("s3://")) {
            let text = std::fs::read_to_string(source).map_err(|e| SettingsError::of("owner-lexicons", format!("{name}: {source} cannot be read: {e}")))?;
            let lexicon = Lexicon::parse(&text).map_err(|e| SettingsError::of("owner-lexicons", format!("{name}: {source}, {e}")))?;
            read.insert(name.clone(), Arc::new(lexicon));
        }
        Ok(read)
    }

    /// The owner lexicons kept in S3: name, bucket and key.
    pub fn owner_lexicon_objects(&self) -> Vec<(&str, &str, &str)> {
        self.owner_lexicons.0.iter().filter_map(|(name, source)| s3_object(source).map(|(bucket, key)| (name.as_str(), bucket, key))).collect()
    }

    /// The lexicon's S3 object as its bucket and key, where `--lexicon` names one.
    pub fn lexicon_object(&self) -> Option<(&str, &str)> {
        s3_object(self.lexicon.as_deref()?)
    }

    /// The lexicon in `text`, read from `whence` (a path or an `s3://` address, for the message).
    pub fn lexicon_of(whence: &str, text: &str) -> Result<Lexicon, SettingsError> {
        Lexicon::parse(text).map_err(|e| SettingsError::of("lexicon", format!("{whence}, {e}")))
    }

    fn cache_warmup(&self) -> Result<Warmup, SettingsError> {
        match &self.cache_warmup {
            None => Ok(Warmup::default_openers()),
            Some(spec) => Warmup::parse(spec).map_err(SettingsError::wrap("cache-warmup")),
        }
    }

    /// The scripted agent's named answers from `--script NAME=TEXT`.
    pub fn named_scripts(&self) -> Result<Vec<(String, String)>, SettingsError> {
        if !self.scripts.is_empty() && self.agent != AgentKind::Scripted {
            return Err(SettingsError::of("script", "names an answer of the scripted agent, but the agent is not scripted (--agent)"));
        }
        let mut named: Vec<(String, String)> = Vec::new();
        for spec in &self.scripts {
            let Some((name, text)) = spec.split_once('=').filter(|(name, text)| !name.trim().is_empty() && !text.trim().is_empty()) else {
                return Err(SettingsError::of("script", format!("`{spec}` is not `NAME=TEXT` with a name and a text")));
            };
            let name = name.trim();
            if named.iter().any(|(earlier, _)| earlier.eq_ignore_ascii_case(name)) {
                return Err(SettingsError::of("script", format!("`{name}` is named twice (names match whatever their case)")));
            }
            named.push((name.to_string(), text.to_string()));
        }
        Ok(named)
    }

    /// The rules on each setting and across them, checked before anything is built.
    pub fn check(&self, place: Place) -> Result<(), SettingsError> {
        let refuse = |flag: &str, message: String| Err(SettingsError::of(flag, message));
        if self.backends.is_empty() {
            return refuse("backends", "names no backend".into());
        }
        self.agent_deadlines().check().map_err(|e| SettingsError::named("EARSHOT_AGENT_*_TIMEOUT_MS", e))?;
        within(self.agent_max_event_bytes as u64, 1024, 64 << 20, "agent-max-event-bytes", "must be 1 KiB to 64 MiB")?;
        within(self.client_read_timeout_ms, 0, 3_600_000, "client-read-timeout-ms", "must be at most 3600000 (0: no limit)")?;
        within(self.max_answer_chars as u64, 100, 1_000_000, "max-answer-chars", "must be 100 to 1000000")?;
        // A text is its own answer: one the input limit takes must not be cut by the answer's.
        if self.max_answer_chars < self.max_text_chars {
            return refuse(
                "max-answer-chars",
                format!("{} is below EARSHOT_MAX_TEXT_CHARS ({}), so an accepted text would be cut; raise it", self.max_answer_chars, self.max_text_chars),
            );
        }
        within(self.max_conversations_per_owner as u64, 0, 10_000, "max-conversations-per-owner", "must be at most 10000 (0: no limit)")?;
        within(self.max_chars_per_owner_hour, 0, 100_000_000, "max-chars-per-owner-hour", "must be at most 100000000 (0: no budget)")?;
        self.proxies()?;
        within(self.ceiling_chars_per_hour, 0, 10_000_000_000, "ceiling-chars-per-hour", "must be at most 10000000000 (0: no ceiling)")?;
        within(self.ceiling_input_chars_per_hour, 0, 10_000_000_000, "ceiling-input-chars-per-hour", "must be at most 10000000000 (0: no ceiling)")?;
        within(self.ceiling_requests_per_hour, 0, 100_000_000, "ceiling-requests-per-hour", "must be at most 100000000 (0: no ceiling)")?;
        if !(0.01..=4096.0).contains(&self.cache_mib) {
            return refuse("cache-mib", format!("must be 0.01 to 4096, not {}", self.cache_mib));
        }
        within(self.cache_max_chars as u64, 1, 2000, "cache-max-chars", "must be 1 to 2000")?;
        self.cache_warmup()?;
        within(self.cache_fetch_ms, 1, 5_000, "cache-fetch-ms", "must be 1 to 5000")?;
        if let Some(bucket) = &self.cache_bucket {
            // No dots: a dotted name does not match S3's certificate in a virtual-hosted URL.
            let ok = (3..=63).contains(&bucket.len()) && bucket.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            if !ok {
                return refuse("cache-bucket", format!("`{bucket}` is not a bucket name the tier can use (3 to 63 lower-case letters, digits and -)"));
            }
            let prefix_ok = self.cache_prefix.ends_with('/') && self.cache_prefix.chars().all(|c| c.is_ascii_alphanumeric() || "-_/.".contains(c));
            if !prefix_ok {
                return refuse("cache-prefix", format!("`{}` must be letters, digits, - _ . and /, ending with /", self.cache_prefix));
            }
            if self.cache == Some(CacheScope::Off) {
                return refuse("cache-bucket", "the cache is off (EARSHOT_CACHE=off): a shared tier needs it on".into());
            }
        }
        within(self.keep_alive_ms, 100, 600_000, "keep-alive-ms", "must be 100 to 600000")?;
        within(self.backend_open_timeout_ms, 1, 60_000, "backend-open-timeout-ms", "must be 1 to 60000")?;
        // Strangers and token holders are held to limits kept per owner: on Lambda those live in the table,
        // or each warm instance would keep (and reset) its own. Refused rather than run open.
        if place == Place::Lambda && matches!(self.auth, AuthMode::Public | AuthMode::Token) && self.interrupt_table.is_none() {
            return refuse(
                "interrupt-table",
                format!(
                    "is required on Lambda with EARSHOT_AUTH={}: each caller's places, budgets and rates are kept there for every instance (without it each warm instance would keep limits of its own); the CDK stack makes one",
                    if self.auth == AuthMode::Public { "public" } else { "token" }
                ),
            );
        }
        if place == Place::Lambda && self.backends.contains(&BackendKind::Kokoro) && self.sagemaker_endpoint.is_none() {
            return refuse("sagemaker-endpoint", "is required when EARSHOT_BACKENDS includes kokoro".into());
        }
        match self.agent {
            AgentKind::Openai if self.openai_model.is_none() => return refuse("openai-model", "is required with EARSHOT_AGENT=openai".into()),
            AgentKind::Http if self.http_agent_url.is_none() => return refuse("http-agent-url", "is required with EARSHOT_AGENT=http".into()),
            AgentKind::Agentcore if self.agentcore_runtime_arn.is_none() => {
                return refuse("agentcore-runtime-arn", "is required with EARSHOT_AGENT=agentcore".into())
            }
            _ => {}
        }
        let secrets = [self.conversation_secret.is_some(), self.conversation_secret_file.is_some(), self.conversation_secret_id.is_some()];
        match secrets.iter().filter(|given| **given).count() {
            0 if place == Place::Lambda => {
                return refuse(
                    "conversation-secret-id",
                    "the Lambda needs the deployment's conversation secret, \
                    the same in every instance (an interrupt reaches a conversation in another; the agent keeps its session across turns): \
                    the CDK stack makes one in Secrets Manager; elsewhere give EARSHOT_CONVERSATION_SECRET or EARSHOT_CONVERSATION_SECRET_FILE"
                        .into(),
                )
            }
            0 | 1 => {}
            _ => {
                return Err(SettingsError::named(
                    "EARSHOT_CONVERSATION_SECRET, EARSHOT_CONVERSATION_SECRET_FILE and EARSHOT_CONVERSATION_SECRET_ID (--conversation-secret…)",
                    "give one, not several",
                ))
            }
        }
        within(self.token_keys_refresh_seconds, 0, 86_400, "token-keys-refresh-seconds", "must be at most 86400 (0: only at start)")?;
        within(self.lexicon_refresh_seconds, 0, 86_400, "lexicon-refresh-seconds", "must be at most 86400 (0: only at start)")?;
        if self.auth == AuthMode::Token && self.token_keys.is_none() && self.token_keys_secret.is_none() {
            return refuse("auth", "token mode needs keys: EARSHOT_TOKEN_KEYS_SECRET (--token-keys-secret) or EARSHOT_TOKEN_KEYS (--token-keys)".into());
        }
        if self.http_agent_key_header.is_some() && self.agent_key_secret.is_none() {
            return refuse("http-agent-key-header", "names where the key goes, but EARSHOT_AGENT_KEY_SECRET names no secret".into());
        }
        self.named_scripts()?;
        for h in &self.http_agent_headers {
            if !matches!(h.split_once(':'), Some((name, _)) if !name.trim().is_empty()) {
                return refuse("http-agent-header", format!("`{h}` is not `Name: value`"));
            }
        }
        let weights = self.weights()?;
        if let Some((name, _)) = weights.iter().find(|(name, _)| !self.backend_names().contains(name)) {
            return refuse("ab-weights", format!("weighs `{name}`, which EARSHOT_BACKENDS does not offer"));
        }
        Ok(())
    }

    /// The gateway's settings, converted from these alone: every rule checked, nothing connected. What
    /// needs a secret read or an AWS client (token keys kept in Secrets Manager, the conversation secret
    /// from a file or a secret, a shared interrupt store, the cache's shared tier) is left at its
    /// default here and filled by [`crate::build`]; everything else a gateway runs with is decided here,
    /// where a table test reads it.
    pub fn gateway_settings(&self, place: Place) -> Result<GatewaySettings, SettingsError> {
        self.check(place)?;
        let defaults = GatewaySettings::default();
        let mut scheduler = defaults.scheduler.clone();
        scheduler.max_answer_chars = self.max_answer_chars;
        scheduler.idle_release = (self.idle_release_ms > 0).then(|| Duration::from_millis(self.idle_release_ms));
        scheduler.ambiguous_release = (self.ambiguous_release_ms > 0).then(|| Duration::from_millis(self.ambiguous_release_ms));
        scheduler.segmenter.fast_first_min_words = self.fast_first;
        scheduler.max_in_flight = self.max_in_flight;
        scheduler.prepare_first_sentence = self.prepare_first_sentence;
        scheduler.backend_silence = self.backend_silence();
        scheduler.client_read_timeout = self.client_read_timeout();
        let mut limits = defaults.limits.clone();
        limits.max_prompt_chars = self.max_prompt_chars;
        limits.max_text_chars = self.max_text_chars;
        let auth = match (self.auth, &self.token_keys, &self.token_keys_secret) {
            (AuthMode::Token, Some(spec), None) => {
                let keys = TokenAuth::parse_keys(spec).map_err(SettingsError::wrap("token-keys"))?;
                Some(Arc::new(self.token_auth(keys, "token-keys")?))
            }
            _ => None,
        };
        let conversation_secret = match &self.conversation_secret {
            Some(value) => ConversationSecret::new(value.as_bytes()).map_err(SettingsError::wrap("conversation-secret"))?,
            None => defaults.conversation_secret.clone(),
        };
        let gateway = GatewaySettings {
            scheduler,
            limits,
            routing: Routing {
                weights: self.weights()?,
                allow_override: self.ab_allow_override,
                failover: self.failover,
                experiment: self.ab_experiment.clone(),
            },
            keep_alive: Duration::from_millis(self.keep_alive_ms),
            metrics_namespace: Some(self.metrics_namespace.clone()),
            agent_deadlines: self.agent_deadlines(),
            backend_open_timeout: Duration::from_millis(self.backend_open_timeout_ms),
            max_conversation: (self.max_conversation_seconds > 0).then(|| Duration::from_secs(self.max_conversation_seconds)),
            max_conversations_per_owner: (self.max_conversations_per_owner > 0).then_some(self.max_conversations_per_owner),
            max_chars_per_owner_hour: (self.max_chars_per_owner_hour > 0).then_some(self.max_chars_per_owner_hour),
            ceiling: earshot_gateway::spend_ceiling::Ceiling {
                chars_per_hour: (self.ceiling_chars_per_hour > 0).then_some(self.ceiling_chars_per_hour),
                input_chars_per_hour: (self.ceiling_input_chars_per_hour > 0).then_some(self.ceiling_input_chars_per_hour),
                requests_per_hour: (self.ceiling_requests_per_hour > 0).then_some(self.ceiling_requests_per_hour),
            },
            input_limits: earshot_gateway::input_budget::InputLimits {
                chars_per_hour: (self.max_input_chars_per_owner_hour > 0).then_some(self.max_input_chars_per_owner_hour),
                requests_per_minute: (self.max_requests_per_owner_minute > 0).then_some(self.max_requests_per_owner_minute),
            },
            cache: self.cache(place)?,
            output_format: self.output_format,
            speaking_rate: self.speaking_rate()?,
            openai_voices: self.openai_voices()?,
            lexicon: self.lexicon()?,
            owner_lexicons: self.owner_lexicons()?,
            backend_conversations: self.backend_conversations.0.iter().filter(|(_, max)| *max > 0).cloned().collect(),
            interrupts: match place {
                // Conversations run in other invocations, out of this process's reach (unless a shared
                // table is named: `build` connects it).
                Place::Lambda => Interrupts::Unavailable,
                Place::Serve => Interrupts::Local,
            },
            auth,
            conversation_secret,
            iam_session_owners: self.iam_session_owners,
            // Anyone may call: each caller is its address, with places, budgets and conversation ids of its own.
            address_owners: self.auth == AuthMode::Public,
            ..defaults
        };
        Ok(gateway)
    }

    /// Token mode's verifier over these keys, read from the setting whose flag is `--{from}`, with this
    /// deployment's audience and longest lifetime.
    pub(crate) fn token_auth(&self, keys: Vec<(String, Vec<u8>)>, from: &str) -> Result<TokenAuth, SettingsError> {
        let mut auth = TokenAuth::new(keys, self.token_audience.clone()).map_err(SettingsError::wrap(from))?;
        if let Some(path) = &self.api_keys_file {
            let file = earshot_gateway::api_keys::KeyFile::open(path).map_err(|why| SettingsError::of("api-keys", why))?;
            auth = auth.with_api_keys(Arc::new(file));
        }
        Ok(auth.with_max_lifetime(self.token_max_lifetime_seconds))
    }

    /// The names of the backends to offer, in order, the default first.
    pub fn backend_names(&self) -> Vec<String> {
        self.backends.iter().map(|b| b.name()).collect()
    }

    /// The A/B weights, parsed.
    pub fn weights(&self) -> Result<Vec<(String, u32)>, SettingsError> {
        match &self.ab_weights {
            Some(spec) => earshot_gateway::Routing::parse_weights(spec).map_err(SettingsError::wrap("ab-weights")),
            None => Ok(Vec::new()),
        }
    }
}

/// Conversations each named backend may hold at once across the deployment: `polly=8,kokoro=40` (0: no cap).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BackendCaps(pub Vec<(String, usize)>);

impl BackendCaps {
    /// The cap of the backend `name`, where it has one.
    pub fn of(&self, name: &str) -> Option<usize> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, max)| *max).filter(|max| *max > 0)
    }
}

/// An S3 object's bucket and key, from `s3://BUCKET/KEY`.
fn s3_object(source: &str) -> Option<(&str, &str)> {
    let (bucket, key) = source.strip_prefix("s3://")?.split_once('/')?;
    (!bucket.is_empty() && !key.is_empty()).then_some((bucket, key))
}

/// The lexicons owners' tokens may name: `acme=acme.txt,globex=s3://lexicons/globex.txt`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OwnerLexicons(pub Vec<(String, String)>);

fn owner_lexicons(spec: &str) -> Result<OwnerLexicons, String> {
    let mut named: Vec<(String, String)> = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, source) =
            part.split_once('=').map(|(n, s)| (n.trim(), s.trim())).ok_or_else(|| format!("`{part}` is not NAME=FILE or NAME=s3://BUCKET/KEY"))?;
        if name.is_empty() || name.len() > 64 || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(format!("`{name}` is not a lexicon name (1 to 64 letters, digits, - or _: a token's `lexicon` claim names it)"));
        }
        if source.is_empty() || (source.starts_with("s3://") && s3_object(source).is_none()) {
            return Err(format!("`{part}`: the source is a file or s3://BUCKET/KEY"));
        }
        if named.iter().any(|(n, _)| n == name) {
            return Err(format!("the lexicon `{name}` is named twice"));
        }
        named.push((name.to_string(), source.to_string()));
    }
    Ok(OwnerLexicons(named))
}

fn backend_conversations(spec: &str) -> Result<BackendCaps, String> {
    let mut caps = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, max) = part.split_once('=').ok_or_else(|| format!("`{part}` is not BACKEND=N (polly=8)"))?;
        let name = name.trim();
        let kind: BackendKind = clap::ValueEnum::from_str(name, true).map_err(|_| format!("`{name}` is not a backend (kokoro, polly, synthetic)"))?;
        let max: usize = max.trim().parse().map_err(|_| format!("`{part}`: the cap must be a whole number (0: no cap)"))?;
        if caps.iter().any(|(n, _): &(String, usize)| *n == kind.name()) {
            return Err(format!("{name} is given a cap twice"));
        }
        caps.push((kind.name(), max));
    }
    Ok(BackendCaps(caps))
}

/// An experiment's name: a metric property and a hash input, so short and printable.
/// A voice for each language: `fr=ff_siwis,zh=zf_xiaobei` (BCP 47 tags, read as their language).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LanguageVoices(pub Vec<(Language, String)>);

fn language_voices(spec: &str) -> Result<LanguageVoices, String> {
    let mut voices: Vec<(Language, String)> = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (tag, voice) = part.split_once('=').ok_or_else(|| format!("`{part}` is not LANGUAGE=VOICE (fr=ff_siwis)"))?;
        let language = Language::parse(tag)?;
        let voice = voice.trim();
        if voice.is_empty() {
            return Err(format!("`{part}` names no voice"));
        }
        if voices.iter().any(|(l, _)| *l == language) {
            return Err(format!("{language} is given a voice twice"));
        }
        voices.push((language, voice.to_string()));
    }
    Ok(LanguageVoices(voices))
}

fn experiment_name(name: &str) -> Result<String, String> {
    let ok = !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b));
    if ok {
        Ok(name.to_string())
    } else {
        Err("an experiment's name is 1 to 64 letters, digits, `-`, `_`, `.` or `:`".into())
    }
}

/// A clap error as one line that names the variable (the Lambda has no flags to speak of).
fn explain(e: &clap::Error) -> SettingsError {
    use clap::error::{ContextKind, ContextValue};
    let flag = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(arg)) => arg.split_whitespace().next().unwrap_or_default().trim_start_matches("--").to_string(),
        _ => String::new(),
    };
    let value = match e.get(ContextKind::InvalidValue) {
        Some(ContextValue::String(v)) => format!("`{v}` "),
        _ => String::new(),
    };
    // The value parser's own words, where it gave any (which values it takes).
    let why = std::error::Error::source(e).map(|source| format!(": {source}")).unwrap_or_default();
    match variable_of(&flag) {
        Some(_) => SettingsError::of(&flag, format!("{value}is not valid{why} (see --{flag} in `earshot serve --help`)")),
        None => SettingsError::named("the settings", e.to_string().lines().next().unwrap_or("bad configuration").trim_start_matches("error: ").to_string()),
    }
}

impl SettingsError {
    /// The gateway's setting whose flag is `--{flag}`, named with its variable where it has one.
    pub fn of(flag: &str, message: impl Into<String>) -> Self {
        SettingsError::of_arg(&FromEnv::command(), flag, message)
    }

    /// A check whose own words carry no setting, put under the gateway's setting it checked.
    pub fn wrap<E: std::fmt::Display>(flag: &str) -> impl FnOnce(E) -> SettingsError {
        let flag = flag.to_string();
        move |e| SettingsError::of(&flag, e.to_string())
    }
}

/// The variable clap reads for the gateway's setting `--{flag}` (`None`: a flag with no variable).
pub fn variable_of(flag: &str) -> Option<String> {
    crate::settings_error::variable_of(&FromEnv::command(), flag)
}

/// `value` when it lies in `min..=max`; otherwise the setting `--{flag}` is refused with `rule`.
fn within(value: u64, min: u64, max: u64, flag: &str, rule: &str) -> Result<u64, SettingsError> {
    crate::settings_error::within(value, min, max, rule).map_err(|why| SettingsError::of(flag, why))
}

/// Reads `EARSHOT_CACHE`.
fn cache_scope(s: &str) -> Result<CacheScope, String> {
    s.parse()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn no_log_level_lets_the_runtime_or_the_http_clients_log_requests() {
        for requested in [None, Some("trace"), Some("earshot=debug,trace")] {
            let directives = log_directives(requested);
            assert!(directives.starts_with(requested.unwrap_or("info")), "{directives}");
            // A later, more specific directive wins in tracing-subscriber's filter.
            assert!(directives.ends_with(",tokio_tungstenite=warn"), "{directives}");
            for target in ["lambda_runtime", "lambda_http", "aws_smithy_runtime", "hyper", "reqwest"] {
                assert!(directives.contains(&format!(",{target}=warn")), "{target}: {directives}");
            }
        }
    }

    /// The Lambda's settings from these variables, and the conversation secret's id the CDK app always
    /// sets (unless one of the secret's variables is among them).
    fn lambda(vars: &[(&str, &str)]) -> Result<Settings, String> {
        let mut map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        if !map.keys().any(|k| k.starts_with("EARSHOT_CONVERSATION_SECRET")) {
            map.insert("EARSHOT_CONVERSATION_SECRET_ID".into(), "earshot/conversation".into());
        }
        Settings::from_vars(|name| map.get(name).cloned(), Place::Lambda).map_err(String::from)
    }

    /// `earshot serve`'s settings from these variables, converted for the gateway.
    fn served(vars: &[(&str, &str)]) -> Result<GatewaySettings, SettingsError> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Settings::from_vars(|name| map.get(name).cloned(), Place::Serve)?.gateway_settings(Place::Serve)
    }

    #[test]
    fn a_lexicon_is_read_at_start_and_a_missing_file_a_bad_line_or_a_rate_out_of_range_stops_it() {
        let dir = std::env::temp_dir();
        let good = dir.join(format!("earshot-lexicon-good-{}.txt", std::process::id()));
        let bad = dir.join(format!("earshot-lexicon-bad-{}.txt", std::process::id()));
        std::fs::write(&good, "# names\nSQL = sequel\n").unwrap();
        std::fs::write(&bad, "SQL = sequel\nkubectl cube control\n").unwrap();
        let loaded = served(&[("EARSHOT_LEXICON", good.to_str().unwrap()), ("EARSHOT_SPEAKING_RATE", "1.25")]).unwrap();
        assert_eq!(loaded.lexicon.map(|l| l.entries().len()), Some(1));
        assert_eq!(loaded.speaking_rate.percent(), 125);
        let refused = |vars: &[(&str, &str)]| match served(vars) {
            Ok(_) => panic!("{vars:?} was taken"),
            Err(e) => e.to_string(),
        };
        let missing = refused(&[("EARSHOT_LEXICON", "/nonexistent/lexicon.txt")]);
        assert!(missing.contains("lexicon") && missing.contains("cannot be read"), "{missing}");
        let line = refused(&[("EARSHOT_LEXICON", bad.to_str().unwrap())]);
        assert!(line.contains("line 2") && line.contains("written form = what to say"), "{line}");
        let rate = refused(&[("EARSHOT_SPEAKING_RATE", "3")]);
        assert!(rate.contains("speaking-rate") && rate.contains("0.5 to 2"), "{rate}");
        for file in [good, bad] {
            let _ = std::fs::remove_file(file);
        }
    }

    #[test]
    fn owner_lexicons_are_named_read_at_start_and_a_bad_one_stops_it_named() {
        let dir = std::env::temp_dir();
        let acme = dir.join(format!("earshot-owner-lexicon-{}.txt", std::process::id()));
        std::fs::write(&acme, "Acme = Ack me\nNguyen = /wˈɪn/\n").unwrap();
        let spec = format!("acme={},globex=s3://lexicons/globex.txt", acme.display());
        let loaded = served(&[("EARSHOT_OWNER_LEXICONS", &spec)]).unwrap();
        assert_eq!(loaded.owner_lexicons.keys().collect::<Vec<_>>(), ["acme"], "the S3 one is read when the AWS parts connect");
        let refused = |vars: &[(&str, &str)]| match served(vars) {
            Ok(_) => panic!("{vars:?} was taken"),
            Err(e) => e.to_string(),
        };
        assert!(refused(&[("EARSHOT_OWNER_LEXICONS", "acme")]).contains("is not NAME=FILE"));
        assert!(refused(&[("EARSHOT_OWNER_LEXICONS", "a b=x.txt")]).contains("is not a lexicon name"));
        assert!(refused(&[("EARSHOT_OWNER_LEXICONS", "a=x.txt,a=y.txt")]).contains("named twice"));
        assert!(refused(&[("EARSHOT_OWNER_LEXICONS", "a=s3://bucket")]).contains("s3://BUCKET/KEY"));
        let missing = refused(&[("EARSHOT_OWNER_LEXICONS", "acme=/nonexistent/acme.txt")]);
        assert!(missing.contains("acme") && missing.contains("cannot be read"), "{missing}");
        std::fs::write(&acme, "Acme Ack me\n").unwrap();
        let line = refused(&[("EARSHOT_OWNER_LEXICONS", &format!("acme={}", acme.display()))]);
        assert!(line.contains("acme") && line.contains("line 1"), "{line}");
        let _ = std::fs::remove_file(acme);
    }

    #[test]
    fn a_backend_s_cap_is_a_backend_and_a_whole_number() {
        assert_eq!(backend_conversations("polly=8").unwrap().of("polly"), Some(8));
        assert_eq!(backend_conversations("Polly=8, synthetic=0").unwrap().of("synthetic"), None, "0: no cap");
        assert_eq!(backend_conversations("").unwrap(), BackendCaps::default());
        for bad in ["polly", "polly=many", "voice=3", "polly=1,polly=2"] {
            assert!(backend_conversations(bad).is_err(), "{bad} is refused");
        }
        let defaults = Settings::from_vars(|_: &str| None, Place::Serve).unwrap();
        assert_eq!(defaults.backend_conversations.of("polly"), Some(8), "Polly's generative quota by default");
    }

    #[test]
    fn callers_that_are_owners_share_nothing_of_the_cache_unless_told() {
        let read = |vars: &[(&str, &str)], place| {
            let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            Settings::from_vars(|name| map.get(name).cloned(), Place::Serve).unwrap().cache_scope(place)
        };
        assert_eq!(read(&[], Place::Lambda), CacheScope::Owner, "IAM callers on Lambda are owners");
        assert_eq!(read(&[], Place::Serve), CacheScope::Deployment, "a local server's callers are the one local owner");
        assert_eq!(read(&[("EARSHOT_AUTH", "public")], Place::Lambda), CacheScope::Deployment, "auth NONE: every caller is the local owner");
        assert_eq!(read(&[("EARSHOT_CACHE", "deployment")], Place::Lambda), CacheScope::Deployment);
    }

    #[test]
    fn the_lambda_needs_one_conversation_secret_and_serve_may_draw_its_own() {
        let none = Settings::from_vars(|name| (name == "EARSHOT_BACKENDS").then(|| "polly".to_string()), Place::Lambda).unwrap_err().to_string();
        assert!(none.starts_with("EARSHOT_CONVERSATION_SECRET_ID (--conversation-secret-id): the Lambda needs"), "{none}");
        let long = "x".repeat(40);
        let two = lambda(&[("EARSHOT_BACKENDS", "polly"), ("EARSHOT_CONVERSATION_SECRET", &long), ("EARSHOT_CONVERSATION_SECRET_ID", "earshot/conversation")])
            .unwrap_err();
        assert!(two.contains("give one, not several"), "{two}");
        assert!(lambda(&[("EARSHOT_BACKENDS", "polly"), ("EARSHOT_CONVERSATION_SECRET_FILE", "/run/secret")]).is_ok());
        let serve = Settings::from_vars(|_| None, Place::Serve).unwrap();
        assert_eq!((serve.conversation_secret, serve.conversation_secret_file, serve.conversation_secret_id), (None, None, None));
    }

    #[test]
    fn reads_what_the_cdk_app_sets() {
        let s = lambda(&[
            ("EARSHOT_BACKENDS", "kokoro,Polly"),
            ("EARSHOT_AB_WEIGHTS", "kokoro=70,polly=30"),
            ("EARSHOT_AB_ALLOW_OVERRIDE", "false"),
            ("EARSHOT_AB_EXPERIMENT", "voices-2026-12"),
            ("EARSHOT_FAILOVER", "true"),
            ("EARSHOT_SAGEMAKER_ENDPOINT", "earshot-kokoro"),
            ("EARSHOT_AGENT", "bedrock"),
            ("EARSHOT_POLLY_VOICE", "Matthew"),
            ("EARSHOT_KOKORO_LANGUAGE_VOICES", "fr=ff_siwis, zh-CN=zf_xiaobei"),
            ("EARSHOT_POLLY_LANGUAGE_VOICES", ""),
            ("EARSHOT_IDLE_RELEASE_MS", "0"),
            ("EARSHOT_SYSTEM_PROMPT", "   "),
        ])
        .unwrap();
        assert_eq!(s.backends, vec![BackendKind::Kokoro, BackendKind::Polly]);
        assert_eq!(s.weights().unwrap(), vec![("kokoro".to_string(), 70), ("polly".to_string(), 30)]);
        assert!(!s.ab_allow_override && s.failover);
        assert_eq!(s.ab_experiment, "voices-2026-12");
        assert_eq!(s.agent, AgentKind::Bedrock);
        assert_eq!(s.polly_voice, "Matthew");
        let language = |tag: &str| Language::parse(tag).unwrap();
        assert_eq!(s.kokoro_language_voices.0, vec![(language("fr"), "ff_siwis".to_string()), (language("zh"), "zf_xiaobei".to_string())]);
        assert!(s.polly_language_voices.0.is_empty());
        assert_eq!(s.idle_release_ms, 0);
        assert_eq!(s.system_prompt, None, "an empty variable is unset");
    }

    #[test]
    fn with_nothing_set_the_gateway_runs_with_its_own_defaults() {
        // The flags' defaults are the gateway's constants; this holds the conversions to them.
        let (converted, defaults) = (served(&[]).unwrap(), GatewaySettings::default());
        assert_eq!(format!("{:?}", converted.scheduler), format!("{:?}", defaults.scheduler));
        assert_eq!(format!("{:?}", converted.limits), format!("{:?}", defaults.limits));
        assert_eq!(converted.agent_deadlines, defaults.agent_deadlines);
        assert_eq!(converted.input_limits, defaults.input_limits);
        assert_eq!(
            (converted.keep_alive, converted.backend_open_timeout, converted.max_conversations_per_owner, converted.max_chars_per_owner_hour),
            (defaults.keep_alive, defaults.backend_open_timeout, defaults.max_conversations_per_owner, defaults.max_chars_per_owner_hour)
        );
        assert_eq!(converted.metrics_namespace, defaults.metrics_namespace);
    }

    #[test]
    fn the_lambda_and_serve_share_one_set_of_defaults() {
        #[derive(Parser)]
        struct Serve {
            #[command(flatten)]
            settings: Settings,
        }
        let from_flags = Serve::try_parse_from(["earshot"]).unwrap().settings;
        let from_vars = Settings::from_vars(|_| None, Place::Serve).unwrap();
        assert_eq!(format!("{from_flags:?}"), format!("{from_vars:?}"));
        assert_eq!(from_flags.bedrock_model, DEFAULT_BEDROCK_MODEL);
        #[cfg(feature = "aws")]
        assert_eq!(DEFAULT_BEDROCK_MODEL, earshot_aws::bedrock::DEFAULT_MODEL_ID, "the wiring's default model is the adapter's");
        assert_eq!((from_flags.max_prompt_chars, from_flags.max_text_chars, from_flags.idle_release_ms), (4_000, 20_000, 150));
        // `--failover` alone still switches it on.
        assert!(Serve::try_parse_from(["earshot", "--failover"]).unwrap().settings.failover);
    }

    #[test]
    fn every_setting_is_a_flag_and_a_variable_the_test_voices_too() {
        // What docs/operations.md promises: the Lambda can set whatever `earshot serve` can.
        for arg in FromEnv::command().get_arguments() {
            let id = arg.get_id();
            assert!(arg.get_long().is_some(), "{id} has no flag");
            assert!(arg.get_env().is_some(), "{id} has no variable");
        }
        let vars = HashMap::from([
            ("EARSHOT_BACKENDS", "synthetic"),
            ("EARSHOT_SYNTHETIC_LATENCY_MS", "20"),
            ("EARSHOT_SYNTHETIC_SESSIONS", "2"),
            ("EARSHOT_SYNTHETIC_LEAD_MS", "250"),
            ("EARSHOT_SCRIPTED_TOKENS_PER_SECOND", "12.5"),
            ("EARSHOT_SCRIPTED_FIRST_TOKEN_MS", "0"),
            ("EARSHOT_SCRIPTED_TOKEN_CHARS", "4"),
            ("EARSHOT_SCRIPTS", "short=Sure.\ntool=One moment.{pause:500} Done, a, b.\n"),
        ]);
        let s = Settings::from_vars(|name| vars.get(name).map(|v| v.to_string()), Place::Serve).unwrap();
        assert_eq!((s.synthetic_latency_ms, s.synthetic_sessions, s.synthetic_lead_ms, s.first_token_ms), (20, 2, 250, 0));
        assert_eq!((s.tokens_per_second, s.token_chars), (12.5, 4));
        assert_eq!(
            s.named_scripts().unwrap(),
            vec![("short".to_string(), "Sure.".to_string()), ("tool".to_string(), "One moment.{pause:500} Done, a, b.".to_string())],
            "one script a line, commas kept"
        );
    }

    #[test]
    fn named_scripts_are_name_and_text_for_the_scripted_agent_only() {
        #[derive(Parser)]
        struct Serve {
            #[command(flatten)]
            settings: Settings,
        }
        let parse = |args: &[&str]| Serve::try_parse_from(["earshot"].iter().chain(args)).unwrap().settings;
        let two = parse(&["--script", "short=Sure. It shipped.", "--script", "tool=One moment.{pause:500} Done = 3."]);
        assert_eq!(
            two.named_scripts().unwrap(),
            vec![("short".to_string(), "Sure. It shipped.".to_string()), ("tool".to_string(), "One moment.{pause:500} Done = 3.".to_string())],
            "the text is everything after the first ="
        );
        let twice = parse(&["--script", "short=Sure.", "--script", "SHORT=No."]).check(Place::Serve).unwrap_err().to_string();
        assert!(twice.contains("`SHORT` is named twice"), "{twice}");
        for bad in ["short", "=Sure.", "short= "] {
            let e = parse(&["--script", bad]).check(Place::Serve).unwrap_err().to_string();
            assert!(e.starts_with("EARSHOT_SCRIPTS (--script): `") && e.contains("NAME=TEXT"), "{bad}: {e}");
        }
        let other = parse(&["--agent", "http", "--http-agent-url", "http://127.0.0.1:1/", "--script", "a=b"]).check(Place::Serve).unwrap_err().to_string();
        assert!(other.contains("the agent is not scripted"), "{other}");
    }

    #[test]
    fn language_voices_refuse_what_is_not_a_language_or_a_pair() {
        for (spec, why) in [("french=ff_siwis", "BCP 47"), ("fr", "LANGUAGE=VOICE"), ("fr=", "names no voice"), ("fr=a,fr-CA=b", "twice")] {
            let e = language_voices(spec).unwrap_err();
            assert!(e.contains(why), "{spec}: {e}");
        }
    }

    #[test]
    fn each_refused_setting_is_named_by_its_variable_and_flag() {
        // (the Lambda's variables, the start of the one line it refuses them with)
        let polly = ("EARSHOT_BACKENDS", "polly");
        let table: &[(&[(&str, &str)], &str)] = &[
            (&[("EARSHOT_BACKENDS", "kokoro")], "EARSHOT_SAGEMAKER_ENDPOINT (--sagemaker-endpoint): is required when EARSHOT_BACKENDS includes kokoro"),
            (&[("EARSHOT_BACKENDS", "espeak")], "EARSHOT_BACKENDS (--backends): `espeak` is not valid"),
            (&[polly, ("EARSHOT_AB_EXPERIMENT", "two words")], "EARSHOT_AB_EXPERIMENT (--ab-experiment): `two words` is not valid: an experiment's name"),
            (&[("EARSHOT_FAILOVER", "yes")], "EARSHOT_FAILOVER (--failover): `yes` is not valid"),
            (&[("EARSHOT_MAX_TEXT_CHARS", "lots")], "EARSHOT_MAX_TEXT_CHARS (--max-text-chars): `lots` is not valid"),
            (&[("EARSHOT_AGENT", "gpt")], "EARSHOT_AGENT (--agent): `gpt` is not valid"),
            (&[polly, ("EARSHOT_OUTPUT_FORMAT", "mp3")], "EARSHOT_OUTPUT_FORMAT (--output-format): `mp3` is not valid"),
            (
                &[polly, ("EARSHOT_KOKORO_LANGUAGE_VOICES", "fr")],
                "EARSHOT_KOKORO_LANGUAGE_VOICES (--kokoro-language-voices): `fr` is not valid: `fr` is not LANGUAGE=VOICE",
            ),
            (&[polly, ("EARSHOT_AB_WEIGHTS", "kokoro=50")], "EARSHOT_AB_WEIGHTS (--ab-weights): weighs `kokoro`, which EARSHOT_BACKENDS does not offer"),
            (&[polly, ("EARSHOT_AB_WEIGHTS", "polly")], "EARSHOT_AB_WEIGHTS (--ab-weights): "),
            (&[polly, ("EARSHOT_AGENT_RESPONSE_TIMEOUT_MS", "0")], "EARSHOT_AGENT_*_TIMEOUT_MS: the agent's"),
            (&[polly, ("EARSHOT_AGENT_MAX_EVENT_BYTES", "10")], "EARSHOT_AGENT_MAX_EVENT_BYTES (--agent-max-event-bytes): must be 1 KiB to 64 MiB, not 10"),
            (
                &[polly, ("EARSHOT_CLIENT_READ_TIMEOUT_MS", "3600001")],
                "EARSHOT_CLIENT_READ_TIMEOUT_MS (--client-read-timeout-ms): must be at most 3600000 (0: no limit), not 3600001",
            ),
            (&[polly, ("EARSHOT_MAX_ANSWER_CHARS", "5")], "EARSHOT_MAX_ANSWER_CHARS (--max-answer-chars): must be 100 to 1000000, not 5"),
            (&[polly, ("EARSHOT_MAX_ANSWER_CHARS", "1000")], "EARSHOT_MAX_ANSWER_CHARS (--max-answer-chars): 1000 is below EARSHOT_MAX_TEXT_CHARS (20000)"),
            (
                &[polly, ("EARSHOT_MAX_CONVERSATIONS_PER_OWNER", "10001")],
                "EARSHOT_MAX_CONVERSATIONS_PER_OWNER (--max-conversations-per-owner): must be at most 10000",
            ),
            (
                &[polly, ("EARSHOT_MAX_CHARS_PER_OWNER_HOUR", "100000001")],
                "EARSHOT_MAX_CHARS_PER_OWNER_HOUR (--max-chars-per-owner-hour): must be at most 100000000",
            ),
            (&[polly, ("EARSHOT_CACHE_MIB", "0")], "EARSHOT_CACHE_MIB (--cache-mib): must be 0.01 to 4096, not 0"),
            (&[polly, ("EARSHOT_CACHE_MAX_CHARS", "0")], "EARSHOT_CACHE_MAX_CHARS (--cache-max-chars): must be 1 to 2000, not 0"),
            (&[polly, ("EARSHOT_CACHE_WARMUP", "@")], "EARSHOT_CACHE_WARMUP (--cache-warmup): "),
            (&[polly, ("EARSHOT_CACHE_FETCH_MS", "0")], "EARSHOT_CACHE_FETCH_MS (--cache-fetch-ms): must be 1 to 5000, not 0"),
            (&[polly, ("EARSHOT_CACHE_BUCKET", "My.Bucket")], "EARSHOT_CACHE_BUCKET (--cache-bucket): `My.Bucket` is not a bucket name"),
            (&[polly, ("EARSHOT_CACHE_BUCKET", "voices"), ("EARSHOT_CACHE_PREFIX", "cache")], "EARSHOT_CACHE_PREFIX (--cache-prefix): `cache` must be"),
            (&[polly, ("EARSHOT_CACHE_BUCKET", "voices"), ("EARSHOT_CACHE", "off")], "EARSHOT_CACHE_BUCKET (--cache-bucket): the cache is off"),
            (&[polly, ("EARSHOT_KEEP_ALIVE_MS", "10")], "EARSHOT_KEEP_ALIVE_MS (--keep-alive-ms): must be 100 to 600000, not 10"),
            (&[polly, ("EARSHOT_BACKEND_OPEN_TIMEOUT_MS", "0")], "EARSHOT_BACKEND_OPEN_TIMEOUT_MS (--backend-open-timeout-ms): must be 1 to 60000, not 0"),
            (&[polly, ("EARSHOT_AGENT", "openai")], "EARSHOT_OPENAI_MODEL (--openai-model): is required with EARSHOT_AGENT=openai"),
            (&[polly, ("EARSHOT_AGENT", "http")], "EARSHOT_HTTP_AGENT_URL (--http-agent-url): is required with EARSHOT_AGENT=http"),
            (&[polly, ("EARSHOT_AGENT", "agentcore")], "EARSHOT_AGENTCORE_RUNTIME_ARN (--agentcore-runtime-arn): is required"),
            (
                &[polly, ("EARSHOT_TOKEN_KEYS_REFRESH_SECONDS", "86401")],
                "EARSHOT_TOKEN_KEYS_REFRESH_SECONDS (--token-keys-refresh-seconds): must be at most 86400",
            ),
            (&[polly, ("EARSHOT_AUTH", "token"), ("EARSHOT_INTERRUPT_TABLE", "t")], "EARSHOT_AUTH (--auth): token mode needs keys"),
            (&[polly, ("EARSHOT_AUTH", "token")], "EARSHOT_INTERRUPT_TABLE (--interrupt-table): is required on Lambda with EARSHOT_AUTH=token"),
            (&[polly, ("EARSHOT_AUTH", "public")], "EARSHOT_INTERRUPT_TABLE (--interrupt-table): is required on Lambda with EARSHOT_AUTH=public"),
            (&[polly, ("EARSHOT_HTTP_AGENT_KEY_HEADER", "x-api-key")], "EARSHOT_HTTP_AGENT_KEY_HEADER (--http-agent-key-header): names where the key goes"),
            (&[polly, ("EARSHOT_HTTP_AGENT_HEADER", "no colon")], "EARSHOT_HTTP_AGENT_HEADER (--http-agent-header): `no colon` is not `Name: value`"),
        ];
        for (vars, said) in table {
            let refused = lambda(vars).unwrap_err();
            assert!(refused.starts_with(said), "{vars:?}\n  said: {refused}\n  expected: {said}…");
        }
    }

    #[test]
    fn every_flag_with_a_variable_is_named_by_it_and_a_flag_without_one_by_itself() {
        assert_eq!(SettingsError::of("max-answer-chars", "why").to_string(), "EARSHOT_MAX_ANSWER_CHARS (--max-answer-chars): why");
        assert_eq!(SettingsError::of("tokens-per-second", "why").to_string(), "EARSHOT_SCRIPTED_TOKENS_PER_SECOND (--tokens-per-second): why");
        // `earshot serve`'s own flags (the listener's) have no variable.
        assert_eq!(SettingsError::of("drain", "why").to_string(), "--drain: why");
        assert_eq!(variable_of("kokoro-url").as_deref(), Some("KOKORO_URL"));
    }

    #[test]
    fn the_conversion_decides_what_the_gateway_runs_with() {
        let s = served(&[]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((s.limits.max_prompt_chars, s.limits.max_text_chars, s.scheduler.max_answer_chars), (4_000, 20_000, 20_000));
        assert_eq!((s.scheduler.idle_release, s.scheduler.max_in_flight), (Some(Duration::from_millis(150)), 4));
        assert_eq!((s.scheduler.backend_silence, s.scheduler.client_read_timeout), (Some(Duration::from_secs(15)), Some(Duration::from_secs(30))));
        assert_eq!(
            (s.keep_alive, s.backend_open_timeout, s.max_conversation),
            (Duration::from_secs(15), Duration::from_secs(5), Some(Duration::from_secs(280)))
        );
        assert_eq!((s.max_conversations_per_owner, s.max_chars_per_owner_hour), (Some(4), Some(30_000)));
        assert_eq!(s.metrics_namespace.as_deref(), Some("earshot"));
        assert!(matches!(s.interrupts, Interrupts::Local) && s.auth.is_none() && s.cache_shared.is_none() && s.output_format.is_none());
        assert_eq!((s.routing.weights.clone(), s.routing.allow_override, s.routing.failover), (vec![], true, false));

        // (variables, what the gateway runs with because of them)
        type Reads = fn(&GatewaySettings) -> bool;
        let table: &[(&[(&str, &str)], Reads)] = &[
            (&[("EARSHOT_IDLE_RELEASE_MS", "0")], |g| g.scheduler.idle_release.is_none()),
            (&[("EARSHOT_BACKEND_SILENCE_TIMEOUT_MS", "0")], |g| g.scheduler.backend_silence.is_none()),
            (&[("EARSHOT_CLIENT_READ_TIMEOUT_MS", "0")], |g| g.scheduler.client_read_timeout.is_none()),
            (&[("EARSHOT_MAX_CONVERSATION_SECONDS", "0")], |g| g.max_conversation.is_none()),
            (&[("EARSHOT_MAX_CONVERSATIONS_PER_OWNER", "0")], |g| g.max_conversations_per_owner.is_none()),
            (&[("EARSHOT_MAX_CHARS_PER_OWNER_HOUR", "0")], |g| g.max_chars_per_owner_hour.is_none()),
            (&[("EARSHOT_MAX_INPUT_CHARS_PER_OWNER_HOUR", "0")], |g| g.input_limits.chars_per_hour.is_none()),
            (&[("EARSHOT_MAX_REQUESTS_PER_OWNER_MINUTE", "5")], |g| g.input_limits.requests_per_minute == Some(5)),
            (&[("EARSHOT_FAST_FIRST", "3")], |g| g.scheduler.segmenter.fast_first_min_words == Some(3)),
            (&[("EARSHOT_MAX_IN_FLIGHT", "2")], |g| g.scheduler.max_in_flight == 2),
            (&[("EARSHOT_KEEP_ALIVE_MS", "2500")], |g| g.keep_alive == Duration::from_millis(2500)),
            (&[("EARSHOT_AGENT_IDLE_TIMEOUT_MS", "700")], |g| g.agent_deadlines.between_events == Duration::from_millis(700)),
            (&[("EARSHOT_METRICS_NAMESPACE", "voices")], |g| g.metrics_namespace.as_deref() == Some("voices")),
            (&[("EARSHOT_CACHE", "off")], |g| g.cache.scope == CacheScope::Off),
            (&[("EARSHOT_CACHE_MIB", "1")], |g| g.cache.limits.max_bytes == 1 << 20),
            (&[("EARSHOT_OUTPUT_FORMAT", "ulaw_8000")], |g| g.output_format.is_some()),
            (&[("EARSHOT_OPENAI_VOICES", r#"{"kokoro": {"nova": "af_bella"}}"#)], |g| g.openai_voices != Default::default()),
            (&[("EARSHOT_BACKENDS", "kokoro,polly"), ("EARSHOT_AB_WEIGHTS", "kokoro=70,polly=30"), ("EARSHOT_FAILOVER", "true")], |g| {
                g.routing.weights == [("kokoro".to_string(), 70), ("polly".to_string(), 30)] && g.routing.failover
            }),
            (&[("EARSHOT_AUTH", "token"), ("EARSHOT_TOKEN_KEYS", "k1=0123456789abcdef0123456789abcdef")], |g| {
                g.auth.is_some() && g.cache.scope == CacheScope::Owner
            }),
            (&[("EARSHOT_AUTH", "token"), ("EARSHOT_TOKEN_KEYS", "k1=0123456789abcdef0123456789abcdef"), ("EARSHOT_CACHE", "deployment")], |g| {
                g.cache.scope == CacheScope::Deployment
            }),
            (&[("EARSHOT_AUTH", "public")], |g| g.cache.scope == CacheScope::Deployment),
            (&[], |g| g.cache.scope == CacheScope::Deployment),
        ];
        for (vars, reads) in table {
            let converted = served(vars).unwrap_or_else(|e| panic!("{vars:?}: {e}"));
            assert!(reads(&converted), "{vars:?}");
        }

        // Refused in the conversion itself: what only the converted value can tell.
        let short = served(&[("EARSHOT_CONVERSATION_SECRET", "short")]).err().expect("a short secret is refused");
        assert_eq!(short.setting, "EARSHOT_CONVERSATION_SECRET (--conversation-secret)");
        let keys = served(&[("EARSHOT_AUTH", "token"), ("EARSHOT_TOKEN_KEYS", "k1=short")]).err().expect("a short key is refused");
        assert_eq!(keys.setting, "EARSHOT_TOKEN_KEYS (--token-keys)", "{keys}");
        // On Lambda no interrupt reaches another invocation's conversation without a shared table.
        let lambda = lambda(&[("EARSHOT_BACKENDS", "polly")]).unwrap().gateway_settings(Place::Lambda).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(lambda.interrupts, Interrupts::Unavailable));
    }
}
