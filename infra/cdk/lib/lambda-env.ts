// The environment of the gateway Lambda: the contract between this deployment and the Rust `bootstrap`,
// which reads exactly these variables. Kept in one pure function so that the names live in one place.
import { EarshotConfig, deployedBackends } from './config';

export const ENV_NAMES = [
  'EARSHOT_BACKENDS',
  'EARSHOT_SPEAKING_RATE',
  'EARSHOT_OPENAI_VOICES',
  'EARSHOT_LEXICON',
  'EARSHOT_AB_WEIGHTS',
  'EARSHOT_AB_ALLOW_OVERRIDE',
  'EARSHOT_AB_EXPERIMENT',
  'EARSHOT_FAILOVER',
  'EARSHOT_SAGEMAKER_ENDPOINT',
  'EARSHOT_KOKORO_VOICE',
  'EARSHOT_POLLY_VOICE',
  'EARSHOT_KOKORO_LANGUAGE_VOICES',
  'EARSHOT_POLLY_LANGUAGE_VOICES',
  'EARSHOT_AGENT',
  'EARSHOT_BEDROCK_MODEL_ID',
  'EARSHOT_OPENAI_BASE_URL',
  'EARSHOT_OPENAI_MODEL',
  'EARSHOT_TEMPERATURE',
  'EARSHOT_MAX_TOKENS',
  'EARSHOT_AGENT_KEY_SECRET',
  'EARSHOT_HTTP_AGENT_URL',
  'EARSHOT_HTTP_AGENT_FORMAT',
  'EARSHOT_HTTP_AGENT_TEXT_POINTER',
  'EARSHOT_HTTP_AGENT_HEADER',
  'EARSHOT_HTTP_AGENT_KEY_HEADER',
  'EARSHOT_AGENTCORE_RUNTIME_ARN',
  'EARSHOT_AGENTCORE_QUALIFIER',
  'EARSHOT_AGENTCORE_TEXT_POINTER',
  'EARSHOT_SYSTEM_PROMPT',
  'EARSHOT_MAX_PROMPT_CHARS',
  'EARSHOT_MAX_TEXT_CHARS',
  'EARSHOT_MAX_ANSWER_CHARS',
  'EARSHOT_IDLE_RELEASE_MS',
  'EARSHOT_AMBIGUOUS_RELEASE_MS',
  'EARSHOT_METRICS_NAMESPACE',
  'EARSHOT_INTERRUPT_TABLE',
  'EARSHOT_INTERRUPT_POLL_MS',
  'EARSHOT_MAX_CONVERSATION_SECONDS',
  'EARSHOT_AGENT_RESPONSE_TIMEOUT_MS',
  'EARSHOT_AGENT_FIRST_TOKEN_TIMEOUT_MS',
  'EARSHOT_AGENT_IDLE_TIMEOUT_MS',
  'EARSHOT_BACKEND_OPEN_TIMEOUT_MS',
  'EARSHOT_BACKEND_SILENCE_TIMEOUT_MS',
  'EARSHOT_CLIENT_READ_TIMEOUT_MS',
  'EARSHOT_KEEP_ALIVE_MS',
  'EARSHOT_MAX_CONVERSATIONS_PER_OWNER',
  'EARSHOT_MAX_CHARS_PER_OWNER_HOUR',
  'EARSHOT_MAX_INPUT_CHARS_PER_OWNER_HOUR',
  'EARSHOT_MAX_REQUESTS_PER_OWNER_MINUTE',
  'EARSHOT_CEILING_CHARS_PER_HOUR',
  'EARSHOT_CEILING_INPUT_CHARS_PER_HOUR',
  'EARSHOT_CEILING_REQUESTS_PER_HOUR',
  'EARSHOT_TRUSTED_PROXIES',
  'EARSHOT_BACKEND_CONVERSATIONS',
  'EARSHOT_CACHE',
  'EARSHOT_CACHE_MIB',
  'EARSHOT_OUTPUT_FORMAT',
  'EARSHOT_CACHE_MAX_CHARS',
  'EARSHOT_CACHE_WARMUP',
  'EARSHOT_CACHE_BUCKET',
  'EARSHOT_CACHE_PREFIX',
  'EARSHOT_CACHE_SHARED_BACKENDS',
  'EARSHOT_CACHE_FETCH_MS',
  'EARSHOT_AGENT_MAX_EVENT_BYTES',
  'EARSHOT_LOG',
  'EARSHOT_AUTH',
  'EARSHOT_IAM_SESSION_OWNERS',
  'EARSHOT_CONVERSATION_SECRET_ID',
  'EARSHOT_TOKEN_KEYS_REFRESH_SECONDS',
  'EARSHOT_TOKEN_KEYS_SECRET',
  'EARSHOT_TOKEN_AUDIENCE',
  'EARSHOT_TOKEN_MAX_LIFETIME_SECONDS',
] as const;

/** How often a conversation reads the interrupt table, and how long before the Lambda's timeout a conversation is stopped. */
export const INTERRUPT_POLL_MS = 250;
export const CONVERSATION_MARGIN_SECONDS = 20;
/**
 * How long a caller may leave the stream untaken once the gateway's queue to it is full (docs/protocol.md,
 * "A client that stops reading"): the gateway's default, written out.
 */
export const CLIENT_READ_TIMEOUT_MS = 30000;
/** How long a stream may go quiet before a keep-alive is sent: the gateway's default, written out. */
export const KEEP_ALIVE_MS = 15000;

/**
 * The time and size limits on what the gateway calls (docs/protocol.md, "Limits on what earshot calls"), the
 * bootstrap's defaults written out so that a deployment says what it runs with. Their sum before the first
 * audio (agent response, first token, backend open) stays far under the conversation's maximum length.
 */
export const UPSTREAM_LIMITS = {
  EARSHOT_AGENT_RESPONSE_TIMEOUT_MS: '10000',
  EARSHOT_AGENT_FIRST_TOKEN_TIMEOUT_MS: '30000',
  EARSHOT_AGENT_IDLE_TIMEOUT_MS: '30000',
  EARSHOT_AGENT_MAX_EVENT_BYTES: '1048576',
  EARSHOT_BACKEND_OPEN_TIMEOUT_MS: '5000',
  EARSHOT_BACKEND_SILENCE_TIMEOUT_MS: '15000',
} as const;

/**
 * The variables for a deployment. `interruptTable` is the interrupt table's name; `endpointName` is the
 * Kokoro endpoint's name, and must be given exactly when the deployment has one (not Polly-only).
 */
/** Where the sentence cache's shared tier keeps its objects in its bucket (the lifecycle rule's prefix too). */
export const CACHE_PREFIX = 'earshot-cache/';

/** How often a warm Lambda reads the token keys' secret again, in seconds (the gateway's own default). */
export const TOKEN_KEYS_REFRESH_SECONDS = 300;

export function lambdaEnvironment(
  c: EarshotConfig,
  interruptTable: string,
  conversationSecret: string,
  endpointName?: string,
  tokenKeysSecret?: string,
  cacheBucket?: string,
  lexiconObject?: string,
): Record<string, string> {
  if (c.pollyOnly && endpointName !== undefined) throw new Error('a Polly-only deployment has no SageMaker endpoint');
  if (!c.pollyOnly && endpointName === undefined) throw new Error('the Kokoro backend needs the SageMaker endpoint name');
  const backends = deployedBackends(c);
  // With Polly alone there is nothing to split between and nothing to fail over to.
  const weights = c.pollyOnly ? 'polly=100' : backends.map((b) => `${b}=${c.abWeights[b] ?? 0}`).join(',');
  const env: Record<string, string> = {
    EARSHOT_BACKENDS: backends.join(','),
    EARSHOT_AB_WEIGHTS: weights,
    EARSHOT_AB_ALLOW_OVERRIDE: String(c.abAllowOverride),
    EARSHOT_AB_EXPERIMENT: c.abExperiment,
    EARSHOT_FAILOVER: String(c.failover && backends.length > 1),
    EARSHOT_KOKORO_VOICE: c.kokoroVoice,
    EARSHOT_POLLY_VOICE: c.pollyVoice,
    EARSHOT_KOKORO_LANGUAGE_VOICES: languageVoices(c.kokoroLanguageVoices),
    EARSHOT_POLLY_LANGUAGE_VOICES: languageVoices(c.pollyLanguageVoices),
    // The deployed gateway answers with the configured agent (`earshot serve` defaults to a scripted one).
    EARSHOT_AGENT: c.agent,
    EARSHOT_BEDROCK_MODEL_ID: c.bedrockModelId,
    EARSHOT_SYSTEM_PROMPT: c.systemPrompt,
    EARSHOT_MAX_PROMPT_CHARS: String(c.maxPromptChars),
    EARSHOT_MAX_TEXT_CHARS: String(c.maxTextChars),
    EARSHOT_MAX_ANSWER_CHARS: String(c.maxAnswerChars),
    EARSHOT_IDLE_RELEASE_MS: String(c.idleReleaseMs),
    EARSHOT_AMBIGUOUS_RELEASE_MS: String(c.ambiguousReleaseMs),
    EARSHOT_METRICS_NAMESPACE: c.metricsNamespace,
    // An interrupt reaches the invocation that speaks through this table (a client that disconnects does
    // not stop a streaming Lambda); every conversation stops before the function's timeout.
    EARSHOT_INTERRUPT_TABLE: interruptTable,
    // Keys every conversation's key (docs/protocol.md, "Conversation keys"): the same in every instance.
    EARSHOT_CONVERSATION_SECRET_ID: conversationSecret,
    EARSHOT_INTERRUPT_POLL_MS: String(INTERRUPT_POLL_MS),
    EARSHOT_MAX_CONVERSATION_SECONDS: String(Math.max(10, c.lambdaTimeoutSeconds - CONVERSATION_MARGIN_SECONDS)),
    EARSHOT_LOG: c.logLevel,
    EARSHOT_CLIENT_READ_TIMEOUT_MS: String(CLIENT_READ_TIMEOUT_MS),
    EARSHOT_KEEP_ALIVE_MS: String(KEEP_ALIVE_MS),
    // Kept in the interrupt table across invocations (docs/protocol.md, 429 too_many_conversations).
    EARSHOT_MAX_CONVERSATIONS_PER_OWNER: String(c.maxConversationsPerOwner),
    EARSHOT_MAX_CHARS_PER_OWNER_HOUR: String(c.maxCharsPerOwnerHour),
    EARSHOT_MAX_INPUT_CHARS_PER_OWNER_HOUR: String(c.maxInputCharsPerOwnerHour),
    EARSHOT_MAX_REQUESTS_PER_OWNER_MINUTE: String(c.maxRequestsPerOwnerMinute),
    // What all callers together may spend an hour (docs/security.md), kept in the same table.
    EARSHOT_CEILING_CHARS_PER_HOUR: String(c.ceilingCharsPerHour),
    EARSHOT_CEILING_INPUT_CHARS_PER_HOUR: String(c.ceilingInputCharsPerHour),
    EARSHOT_CEILING_REQUESTS_PER_HOUR: String(c.ceilingRequestsPerHour),
    // Who may name the caller in a forwarding header (docs/security.md); empty: every caller is its address.
    EARSHOT_TRUSTED_PROXIES: c.trustedProxies.join(','),
    EARSHOT_BACKEND_CONVERSATIONS: `polly=${c.pollyConversations}`,
    // The sentence cache, in each warm Lambda's memory (docs/cache.md).
    EARSHOT_CACHE: c.cacheScope,
    EARSHOT_CACHE_MIB: String(c.cacheMib),
    EARSHOT_CACHE_MAX_CHARS: String(c.cacheMaxChars),
    ...UPSTREAM_LIMITS,
  };
  if (endpointName !== undefined) env.EARSHOT_SAGEMAKER_ENDPOINT = endpointName;
  if (c.cacheWarmup.trim() !== '') env.EARSHOT_CACHE_WARMUP = c.cacheWarmup.trim();
  // A telephone bridge or a browser at 48 kHz: every answer in its format (docs/protocol.md, "Audio formats").
  if (c.outputFormat !== '') env.EARSHOT_OUTPUT_FORMAT = c.outputFormat;
  // How a sentence is said (docs/pronunciation.md): the lexicon is an S3 object the deploy uploads, read at init.
  if (c.speakingRate !== 1) env.EARSHOT_SPEAKING_RATE = String(c.speakingRate);
  // OpenAI's voice names pinned to the deployment's voices (docs/openai.md, "Voices").
  if (c.openaiVoices !== '') env.EARSHOT_OPENAI_VOICES = c.openaiVoices;
  if ((c.lexiconFile !== '') !== (lexiconObject !== undefined)) throw new Error('a lexicon file needs its uploaded object, and only then');
  if (lexiconObject !== undefined) env.EARSHOT_LEXICON = lexiconObject;
  if (c.cacheSharedTier !== (cacheBucket !== undefined)) throw new Error('the shared cache tier needs its bucket, and only then');
  if (cacheBucket !== undefined) {
    env.EARSHOT_CACHE_BUCKET = cacheBucket;
    env.EARSHOT_CACHE_PREFIX = CACHE_PREFIX;
    // The arm billed per character; a fetch waits at most this long before Polly speaks the sentence.
    env.EARSHOT_CACHE_SHARED_BACKENDS = 'polly';
    env.EARSHOT_CACHE_FETCH_MS = '150';
  }
  // Token mode: the function URL is public at the AWS level and the gateway checks a token on every request.
  // AWS_IAM: `none`, and the gateway refuses a request the URL did not authenticate; NONE: `public`, anyone on purpose.
  env.EARSHOT_AUTH = c.authType === 'TOKEN' ? 'token' : c.authType === 'NONE' ? 'public' : 'none';
  // Behind IAM the owner is the caller's role, unless each session is to be one (docs/access.md).
  env.EARSHOT_IAM_SESSION_OWNERS = String(c.iamSessionOwners);
  if (c.authType === 'TOKEN') {
    if (tokenKeysSecret === undefined) throw new Error('token mode needs the token keys secret');
    env.EARSHOT_TOKEN_KEYS_SECRET = tokenKeysSecret;
    // Read again on a request five minutes after the last reading: a key removed from the secret stops
    // verifying on warm instances too (docs/access.md, rotation).
    env.EARSHOT_TOKEN_KEYS_REFRESH_SECONDS = String(TOKEN_KEYS_REFRESH_SECONDS);
    env.EARSHOT_TOKEN_AUDIENCE = c.tokenAudience;
    env.EARSHOT_TOKEN_MAX_LIFETIME_SECONDS = String(c.tokenMaxLifetimeSeconds);
  }
  // Each agent's own settings, only when it is the agent; the key never travels as a variable, only the
  // secret's name (the Lambda reads it once at init).
  if (c.agent === 'openai') {
    env.EARSHOT_OPENAI_BASE_URL = c.openaiBaseUrl;
    env.EARSHOT_OPENAI_MODEL = c.openaiModel;
    if (c.agentTemperature !== '') env.EARSHOT_TEMPERATURE = c.agentTemperature;
    if (c.agentMaxTokens > 0) env.EARSHOT_MAX_TOKENS = String(c.agentMaxTokens);
  }
  if (c.agent === 'http') {
    env.EARSHOT_HTTP_AGENT_URL = c.httpAgentUrl;
    env.EARSHOT_HTTP_AGENT_FORMAT = c.httpAgentFormat;
    if (c.httpAgentTextPointer !== '') env.EARSHOT_HTTP_AGENT_TEXT_POINTER = c.httpAgentTextPointer;
    if (c.httpAgentHeader !== '') env.EARSHOT_HTTP_AGENT_HEADER = c.httpAgentHeader;
    if (c.httpAgentKeyHeader !== '') env.EARSHOT_HTTP_AGENT_KEY_HEADER = c.httpAgentKeyHeader;
  }
  if (c.agent === 'agentcore') {
    env.EARSHOT_AGENTCORE_RUNTIME_ARN = c.agentcoreRuntimeArn;
    if (c.agentcoreQualifier !== '') env.EARSHOT_AGENTCORE_QUALIFIER = c.agentcoreQualifier;
    env.EARSHOT_AGENTCORE_TEXT_POINTER = c.agentcoreTextPointer;
  }
  if ((c.agent === 'openai' || c.agent === 'http') && c.agentKeySecret !== '') env.EARSHOT_AGENT_KEY_SECRET = c.agentKeySecret;
  return env;
}

/** `fr=ff_siwis,zh=zf_xiaobei`, as the gateway's settings read it. */
function languageVoices(voices: Record<string, string>): string {
  return Object.entries(voices).map(([language, voice]) => `${language}=${voice}`).join(',');
}
