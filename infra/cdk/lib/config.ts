// Deploy-time configuration: the defaults in earshot.config.json, each overridable with `-c key=value`.
// Everything is checked here, once, so that the stacks can trust what they are given and a mistake is
// reported by name before anything is synthesized.
import * as fs from 'fs';
import * as path from 'path';
import { defaultBedrockModel } from './arns';
import { publishedPrices } from './prices';

export const BACKENDS = ['kokoro', 'polly'] as const;
export type Backend = (typeof BACKENDS)[number];
export const RELEASE_MODES = ['incremental', 'buffered'] as const;

/**
 * The GPU AMIs a SageMaker real-time endpoint can run on (ProductionVariant.InferenceAmiVersion in the SageMaker
 * API reference): gpu-2 and gpu-2-1 carry NVIDIA driver 535 / CUDA 12.2, gpu-3-1 driver 550 / CUDA 12.4. Without
 * one, ml.g5 hosts default to driver 470 / CUDA 11.4, older than the CUDA 12 runtime the image's ONNX Runtime
 * (onnxruntime-gpu 1.26, CUDA 12) needs, and the engine would refuse to start. The neuron AMI is for Inferentia and Trainium, not for this image.
 */
/** Where the deployed gateway's answers come from (the Lambda's EARSHOT_AGENT). */
export const AGENTS = ['bedrock', 'openai', 'http', 'agentcore'] as const;
export const AGENTCORE_RUNTIME_ARN = /^arn:aws[a-z-]*:bedrock-agentcore:[a-z0-9-]+:\d{12}:runtime\/[A-Za-z0-9_-]+$/;
export const HTTP_AGENT_FORMATS = ['auto', 'sse', 'ndjson', 'text'] as const;
/** The gateway's `output_format` names (earshot_core::output::OutputFormat). */
export const OUTPUT_FORMATS = ['pcm_8000', 'pcm_16000', 'pcm_22050', 'pcm_24000', 'pcm_44100', 'pcm_48000', 'ulaw_8000', 'alaw_8000', 'opus_48000', 'mp3_24000', 'aac_24000', 'flac_24000'] as const;
export const INFERENCE_AMI_VERSIONS = ['al2-ami-sagemaker-inference-gpu-2', 'al2-ami-sagemaker-inference-gpu-2-1', 'al2-ami-sagemaker-inference-gpu-3-1'] as const;

/**
 * What an endpoint instance runs the Kokoro image on. `gpu` (ml.g*, ml.p*): the CUDA image (`Dockerfile`) on a
 * GPU AMI. `cpu` (ml.c*, ml.m*, ml.r*, ml.t*): the ONNX engine's image (`Dockerfile.cpu`, Kokoro-82M int8) on
 * SageMaker's default host, no GPU AMI. Inferentia and Trainium (ml.inf*, ml.trn*) run neither.
 */
export type InstanceKind = 'gpu' | 'cpu';

export function instanceKind(instanceType: string): InstanceKind | undefined {
  const family = instanceType.split('.')[1] ?? '';
  if (/^[gp]\d/.test(family)) return 'gpu';
  if (/^[cmrt]\d/.test(family)) return 'cpu';
  return undefined;
}

/** The GPU image's admission limit (KOKORO_MAX_SESSIONS in infra/kokoro/Dockerfile). */
export const GPU_SESSIONS = 16;

/**
 * Conversations at once one GPU instance holds with p95 first audio within twice a lone conversation's median
 * and no gap inside a sentence: 4, the upper end of the 2 to 4 measured on an H200 with the image's one worker
 * (BENCHMARKS.md, "Capacity"; infra/kokoro/README.md, "Measured on a GPU"). An ml.g5's A10G is slower, so this
 * is an upper bound for it until it is measured.
 */
export const GPU_KNEE = 4;

/**
 * vCPUs of a SageMaker instance size, which follow EC2's: large 2, xlarge 4, Nxlarge 4N (medium 1).
 */
export function vcpus(instanceType: string): number | undefined {
  const size = instanceType.split('.')[2] ?? '';
  if (size === 'medium') return 1;
  if (size === 'large') return 2;
  const m = /^(\d*)xlarge$/.exec(size);
  return m ? 4 * Number(m[1] || '1') : undefined;
}

/**
 * Conversations one instance admits (the container's KOKORO_MAX_SESSIONS): `maxSessionsPerInstance`, else the
 * GPU image's 16, else on CPU one per vCPU. That is the knee measured on a two-vCPU virtual machine: two
 * conversations at once before a sentence stalled and p95 first audio passed twice the idle median
 * (bench/results/capacity/cpu.md). Past the knee a CPU cannot render fast enough and sentences stall, so the CPU
 * instance admits no more than its knee and the rest spill over to the other voice. A CPU instance's own knee
 * should be measured the same way (`make -C infra/kokoro measure-capacity`) and set here.
 */
export function sessionsPerInstance(c: EarshotConfig): number {
  if (c.maxSessionsPerInstance > 0) return c.maxSessionsPerInstance;
  if (instanceKind(c.instanceType) !== 'cpu') return GPU_SESSIONS;
  return Math.max(1, vcpus(c.instanceType) ?? 1);
}

/**
 * What autoscaling holds each instance to (ConcurrentRequestsPerModel): `targetConcurrentStreams`, else the
 * knee, where first audio is still within its budget: on a GPU the measured GPU_KNEE (the image admits more, so
 * that a burst is served slower rather than refused while a new instance starts); on CPU, where the instance
 * admits only its knee, three quarters of it, so that instances are added before conversations spill over.
 */
export function scalingTarget(c: EarshotConfig): number {
  if (c.targetConcurrentStreams > 0) return c.targetConcurrentStreams;
  const sessions = sessionsPerInstance(c);
  if (instanceKind(c.instanceType) !== 'cpu') return Math.min(GPU_KNEE, sessions);
  return Math.max(1, Math.floor((sessions * 3) / 4));
}

/**
 * What one endpoint instance costs an hour: `instanceUsdPerHour`, else the listed price where the instance is the
 * listed type (docs/prices.json). No other price is assumed: config checking refuses an unlisted type without one.
 */
export function instancePricePerHour(c: EarshotConfig): number {
  return c.instanceUsdPerHour > 0 ? c.instanceUsdPerHour : publishedPrices().instancePerHour;
}

export interface EarshotConfig {
  /** Deploy only the gateway, speaking with Polly: no SageMaker resources at all. */
  readonly pollyOnly: boolean;
  /** The backends the gateway offers, the first being the default. */
  readonly backends: Backend[];
  /** A/B split weights per backend (non-negative integers). */
  readonly abWeights: Record<string, number>;
  /** Whether a request may name its backend instead of taking the A/B arm. */
  readonly abAllowOverride: boolean;
  /** The A/B experiment's name: the split assigns each caller by a hash of it (a new name draws anew). */
  readonly abExperiment: string;
  /** Whether a failed first audio falls over to the other backend. */
  readonly failover: boolean;
  readonly kokoroVoice: string;
  readonly pollyVoice: string;
  /** The voice of each language per arm when a request names none (BCP 47 language to voice); empty: the arm's own choice. */
  readonly kokoroLanguageVoices: Record<string, string>;
  readonly pollyLanguageVoices: Record<string, string>;
  /** The agent: a Bedrock model, an OpenAI-compatible endpoint, or any HTTP agent that streams text. */
  readonly agent: (typeof AGENTS)[number];
  /** A Bedrock foundation-model id or a cross-Region inference profile id (agent bedrock). */
  readonly bedrockModelId: string;
  /** The OpenAI-compatible API's base URL with its version, and the model (agent openai). */
  readonly openaiBaseUrl: string;
  readonly openaiModel: string;
  /** Sampling temperature ('' for the server's default) and the longest answer in tokens (0 for its default). */
  readonly agentTemperature: string;
  readonly agentMaxTokens: number;
  /** A Secrets Manager secret (name or ARN) holding the agent's key, read once at start; '' for none. */
  readonly agentKeySecret: string;
  /** The HTTP agent: its URL, answer format, JSON pointer to the text, one fixed header, and the header the key goes in. */
  readonly httpAgentUrl: string;
  readonly httpAgentFormat: string;
  readonly httpAgentTextPointer: string;
  readonly httpAgentHeader: string;
  readonly httpAgentKeyHeader: string;
  /** The agent on Bedrock AgentCore Runtime: its runtime ARN, endpoint ('' for DEFAULT), and where the text is in object events. */
  readonly agentcoreRuntimeArn: string;
  readonly agentcoreQualifier: string;
  readonly agentcoreTextPointer: string;
  readonly systemPrompt: string;
  readonly maxPromptChars: number;
  readonly maxTextChars: number;
  /** The longest answer spoken, in characters (past it the stream ends with `answer_too_long`). */
  readonly maxAnswerChars: number;
  /** How long the agent may be silent before complete pending text is released to the voice. */
  readonly idleReleaseMs: number;
  /** How long the agent may be silent before text whose end is ambiguous (`$3.`, `U.S.`) goes to the voice anyway (0: until it goes on). */
  readonly ambiguousReleaseMs: number;
  readonly metricsNamespace: string;
  readonly logLevel: string;
  /** `AWS_IAM` (default) or `NONE`, the explicit opt-in for public demos. */
  readonly authType: 'AWS_IAM' | 'NONE' | 'TOKEN';
  /** AWS_IAM: each session of an assumed role an owner of its own (its name is the caller's choice); false: the role. */
  readonly iamSessionOwners: boolean;
  /** Browser origins allowed when authType is NONE or TOKEN. */
  readonly corsAllowedOrigins: string[];
  /** The proxies in front (CloudFront's ranges, a load balancer's) whose `Forwarded`/`X-Forwarded-For` names the caller, as CIDRs; empty: none (docs/security.md). */
  readonly trustedProxies: string[];
  /** TOKEN: the Secrets Manager secret with the token keys (JSON {"kid": "secret"}); '' for one the stack creates. */
  readonly tokenKeysSecret: string;
  /** TOKEN: the audience (`aud`) tokens must name. */
  readonly tokenAudience: string;
  /** TOKEN: the longest a token may be valid for, in seconds (a browser holds it). */
  readonly tokenMaxLifetimeSeconds: number;
  /** Simultaneous conversations at most (the function's reserved concurrency); 0 leaves it unreserved. */
  readonly reservedConcurrency: number;
  /** Live conversations one caller (a token's `sub`, an IAM principal) may hold at once; 0: no limit. */
  readonly maxConversationsPerOwner: number;
  /** Characters one caller may have spoken in a rolling hour (0: no budget). */
  readonly maxCharsPerOwnerHour: number;
  /** Characters of prompts, earlier turns and texts one caller may send in a rolling hour (what the agent bills as input); 0: no limit. */
  readonly maxInputCharsPerOwnerHour: number;
  /** Requests one caller may make in a minute; 0: no limit. */
  readonly maxRequestsPerOwnerMinute: number;
  /** The deployment's ceiling, all callers together per rolling hour (docs/security.md): characters spoken; 0: none. */
  readonly ceilingCharsPerHour: number;
  /** The ceiling on characters sent to the agent by all callers together per rolling hour; 0: none. */
  readonly ceilingInputCharsPerHour: number;
  /** The ceiling on requests by all callers together per rolling hour; 0: none. */
  readonly ceilingRequestsPerHour: number;
  /** Conversations Polly may hold at once across the deployment (26 concurrent generative requests, up to 3 a conversation); 0: no cap. */
  readonly pollyConversations: number;
  /** What a caller hears from the sentence cache: `deployment` (its own sentences and the warm-up's declared ones), `owner` (its own only) or `off`; never another caller's. */
  readonly cacheScope: 'deployment' | 'owner' | 'off';
  /** The audio format of an answer whose request names none (docs/protocol.md, "Audio formats"); '': each backend's own PCM. */
  readonly outputFormat: string;
  /** How fast the voices speak where a request names no `rate`: 0.5 to 2.0 (1: each voice's own; docs/pronunciation.md). */
  readonly speakingRate: number;
  /** Voices pinned to OpenAI's voice names, per backend, as JSON (`{"kokoro": {"nova": "af_bella"}}`; docs/openai.md, "Voices"); '': the rule gives them all. */
  readonly openaiVoices: string;
  /** A pronunciation lexicon file (docs/pronunciation.md), relative to infra/cdk or absolute, uploaded with the deploy and read by the gateway at init; '': none. */
  readonly lexiconFile: string;
  /** The sentence cache's bound per warm Lambda, in MiB (at most a quarter of lambdaMemoryMb). */
  readonly cacheMib: number;
  /** The longest sentence the cache keeps, in characters. */
  readonly cacheMaxChars: number;
  /** The openers rendered into the cache on a cold start: '' for earshot's few, `none`, or JSON (a list, or voice to list). */
  readonly cacheWarmup: string;
  /** A shared tier for the Polly arm: an S3 bucket whose objects (cached sentences) expire after cacheSharedDays; false: each warm Lambda keeps its own. */
  readonly cacheSharedTier: boolean;
  readonly cacheSharedDays: number;
  /** Alarm thresholds: Polly characters billed in an hour, and invocations in an hour (0: no alarm). */
  readonly alarmPollyCharactersPerHour: number;
  readonly alarmInvocationsPerHour: number;
  /** An e-mail address the alarm topic sends to ('' for none: subscribe to the AlarmTopic output yourself). */
  readonly alarmEmail: string;
  /** The Lambda's processor: arm64 (cheaper per GB-second), or x86_64 where the arm64 build cannot be made. */
  readonly lambdaArchitecture: 'arm64' | 'x86_64';
  readonly lambdaMemoryMb: number;
  readonly lambdaTimeoutSeconds: number;
  readonly logRetentionDays: number;
  /** The folder holding the Lambda's `bootstrap`, relative to infra/cdk. */
  readonly bootstrapDir: string;
  readonly endpointName: string;
  readonly variantName: string;
  readonly instanceType: string;
  /** The GPU endpoint host's AMI: its NVIDIA driver and CUDA version (see INFERENCE_AMI_VERSIONS); unused on CPU. */
  readonly inferenceAmiVersion: string;
  /** What one instance costs an hour, in US dollars, for the dashboard's cost; 0: the listed price (listed type only). */
  readonly instanceUsdPerHour: number;
  /** Conversations one instance admits (KOKORO_MAX_SESSIONS); 0: by the instance (see sessionsPerInstance). */
  readonly maxSessionsPerInstance: number;
  readonly startupHealthCheckTimeoutSeconds: number;
  readonly minInstances: number;
  readonly maxInstances: number;
  /** Target of SageMakerVariantConcurrentRequestsPerModelHighResolution: streams a model holds at once; 0: by the instance (see scalingTarget). */
  readonly targetConcurrentStreams: number;
}

type Kind = 'boolean' | 'integer' | 'decimal' | 'price' | 'string' | 'list' | 'weights' | 'voices';

const KINDS: Record<keyof EarshotConfig, Kind> = {
  pollyOnly: 'boolean',
  backends: 'list',
  abWeights: 'weights',
  abAllowOverride: 'boolean',
  abExperiment: 'string',
  failover: 'boolean',
  kokoroVoice: 'string',
  pollyVoice: 'string',
  kokoroLanguageVoices: 'voices',
  pollyLanguageVoices: 'voices',
  agent: 'string',
  bedrockModelId: 'string',
  openaiBaseUrl: 'string',
  openaiModel: 'string',
  agentTemperature: 'string',
  agentMaxTokens: 'integer',
  agentKeySecret: 'string',
  httpAgentUrl: 'string',
  httpAgentFormat: 'string',
  httpAgentTextPointer: 'string',
  httpAgentHeader: 'string',
  httpAgentKeyHeader: 'string',
  agentcoreRuntimeArn: 'string',
  agentcoreQualifier: 'string',
  agentcoreTextPointer: 'string',
  systemPrompt: 'string',
  maxPromptChars: 'integer',
  maxTextChars: 'integer',
  maxAnswerChars: 'integer',
  idleReleaseMs: 'integer',
  ambiguousReleaseMs: 'integer',
  metricsNamespace: 'string',
  logLevel: 'string',
  authType: 'string',
  iamSessionOwners: 'boolean',
  corsAllowedOrigins: 'list',
  trustedProxies: 'list',
  tokenKeysSecret: 'string',
  tokenAudience: 'string',
  tokenMaxLifetimeSeconds: 'integer',
  reservedConcurrency: 'integer',
  maxConversationsPerOwner: 'integer',
  maxCharsPerOwnerHour: 'integer',
  maxInputCharsPerOwnerHour: 'integer',
  maxRequestsPerOwnerMinute: 'integer',
  ceilingCharsPerHour: 'integer',
  ceilingInputCharsPerHour: 'integer',
  ceilingRequestsPerHour: 'integer',
  pollyConversations: 'integer',
  cacheScope: 'string',
  cacheMib: 'integer',
  outputFormat: 'string',
  speakingRate: 'decimal',
  openaiVoices: 'string',
  lexiconFile: 'string',
  cacheMaxChars: 'integer',
  cacheWarmup: 'string',
  cacheSharedTier: 'boolean',
  cacheSharedDays: 'integer',
  alarmPollyCharactersPerHour: 'integer',
  alarmInvocationsPerHour: 'integer',
  alarmEmail: 'string',
  lambdaArchitecture: 'string',
  lambdaMemoryMb: 'integer',
  lambdaTimeoutSeconds: 'integer',
  logRetentionDays: 'integer',
  bootstrapDir: 'string',
  endpointName: 'string',
  variantName: 'string',
  instanceType: 'string',
  inferenceAmiVersion: 'string',
  instanceUsdPerHour: 'price',
  maxSessionsPerInstance: 'integer',
  startupHealthCheckTimeoutSeconds: 'integer',
  minInstances: 'integer',
  maxInstances: 'integer',
  targetConcurrentStreams: 'integer',
};

export const CONFIG_KEYS = Object.keys(KINDS) as (keyof EarshotConfig)[];

/** The folder of the CDK app (infra/cdk), whatever the current directory. */
export const CDK_ROOT = path.resolve(__dirname, '..');
export const DEFAULT_CONFIG_FILE = path.join(CDK_ROOT, 'earshot.config.json');

/** The lexicon file the configuration names, as an absolute path (relative ones from infra/cdk). */
export const lexiconPath = (c: EarshotConfig): string => path.resolve(CDK_ROOT, c.lexiconFile);

// CloudWatch Logs accepts only these retention periods.
const RETENTION_DAYS = [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653];

export class ConfigError extends Error {}

function fail(key: string, message: string): never {
  throw new ConfigError(`earshot config: \`${key}\` ${message}`);
}

/** A number from the config file, or a decimal written as `-c key=1.25`; NaN for anything else. */
const decimal = (value: unknown, text: string | undefined): number =>
  typeof value === 'number' ? value : text !== undefined && /^\d+(\.\d+)?$/.test(text) ? Number(text) : NaN;

/** Turns a value from the config file (typed) or from `-c key=value` (a string) into its kind. */
function coerce(key: string, kind: Kind, value: unknown): unknown {
  const text = typeof value === 'string' ? value.trim() : undefined;
  switch (kind) {
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (text === 'true' || text === 'false') return text === 'true';
      return fail(key, `must be true or false, got ${JSON.stringify(value)}`);
    case 'integer': {
      const n = typeof value === 'number' ? value : text !== undefined && /^-?\d+$/.test(text) ? Number(text) : NaN;
      if (!Number.isSafeInteger(n)) fail(key, `must be an integer, got ${JSON.stringify(value)}`);
      return n;
    }
    case 'decimal': {
      const n = decimal(value, text);
      if (!Number.isFinite(n)) fail(key, `must be a number such as 1.25, got ${JSON.stringify(value)}`);
      return n;
    }
    case 'price': {
      const n = decimal(value, text);
      if (!Number.isFinite(n) || n < 0) fail(key, `must be a price in dollars such as 1.408, got ${JSON.stringify(value)}`);
      return n;
    }
    case 'string':
      if (typeof value !== 'string') fail(key, `must be a string, got ${JSON.stringify(value)}`);
      return value;
    case 'list': {
      let list: unknown = value;
      if (text !== undefined) list = text.startsWith('[') ? JSON.parse(text) : text === '' ? [] : text.split(',').map((s) => s.trim());
      if (!Array.isArray(list) || !list.every((s) => typeof s === 'string' && s !== '')) {
        fail(key, `must be a list of strings (JSON or comma-separated), got ${JSON.stringify(value)}`);
      }
      return list;
    }
    case 'weights': {
      let weights: unknown = value;
      if (text !== undefined) {
        weights = text.startsWith('{')
          ? JSON.parse(text)
          : Object.fromEntries(text.split(',').map((pair) => {
              const [name, weight, ...rest] = pair.split('=').map((s) => s.trim());
              if (!name || weight === undefined || rest.length) fail(key, `must look like kokoro=50,polly=50, got ${JSON.stringify(value)}`);
              return [name, /^\d+$/.test(weight) ? Number(weight) : weight];
            }));
      }
      if (typeof weights !== 'object' || weights === null || Array.isArray(weights)) fail(key, `must map backends to weights, got ${JSON.stringify(value)}`);
      for (const [name, weight] of Object.entries(weights)) {
        if (!Number.isSafeInteger(weight) || (weight as number) < 0) fail(key, `weight of ${name} must be a non-negative integer, got ${JSON.stringify(weight)}`);
      }
      return weights;
    }
    case 'voices': {
      let voices: unknown = value;
      if (text !== undefined) {
        voices = text.startsWith('{')
          ? JSON.parse(text)
          : Object.fromEntries(text === '' ? [] : text.split(',').map((pair) => {
              const [language, voice, ...rest] = pair.split('=').map((s) => s.trim());
              if (!language || !voice || rest.length) fail(key, `must look like fr=ff_siwis,zh=zf_xiaobei, got ${JSON.stringify(value)}`);
              return [language, voice];
            }));
      }
      if (typeof voices !== 'object' || voices === null || Array.isArray(voices)) fail(key, `must map languages to voices, got ${JSON.stringify(value)}`);
      for (const [language, voice] of Object.entries(voices)) {
        // BCP 47 as the gateway reads it: a language of 2 or 3 letters, then subtags of 1 to 8 letters or digits.
        if (!/^[A-Za-z]{2,3}([-_][A-Za-z0-9]{1,8})*$/.test(language)) fail(key, `has ${JSON.stringify(language)}, which is not a BCP 47 language tag (fr, zh-CN)`);
        if (typeof voice !== 'string' || !/^[A-Za-z0-9_]{1,64}$/.test(voice)) fail(key, `must give ${language} a voice name such as ff_siwis, got ${JSON.stringify(voice)}`);
      }
      return voices;
    }
  }
}

function check(c: EarshotConfig): void {
  const within = (key: keyof EarshotConfig, min = 1, max = Number.MAX_SAFE_INTEGER) => {
    const v = c[key] as number;
    if (v < min || v > max) fail(key, `must be between ${min} and ${max}, got ${v}`);
  };
  if (c.backends.length === 0) fail('backends', 'must name at least one backend');
  for (const b of c.backends) if (!(BACKENDS as readonly string[]).includes(b)) fail('backends', `has an unknown backend ${JSON.stringify(b)} (known: ${BACKENDS.join(', ')})`);
  if (new Set(c.backends).size !== c.backends.length) fail('backends', 'names a backend twice');
  if (!c.pollyOnly && !c.backends.includes('kokoro')) {
    fail('backends', 'leaves out kokoro, which would leave a GPU endpoint running unused: set pollyOnly to true instead');
  }
  for (const name of Object.keys(c.abWeights)) {
    if (!(BACKENDS as readonly string[]).includes(name)) fail('abWeights', `has an unknown backend ${JSON.stringify(name)}`);
  }
  if (!c.pollyOnly && c.backends.reduce((sum, b) => sum + (c.abWeights[b] ?? 0), 0) === 0) {
    fail('abWeights', `must give a positive weight to at least one of ${c.backends.join(', ')}`);
  }
  if (!['AWS_IAM', 'NONE', 'TOKEN'].includes(c.authType)) fail('authType', `must be AWS_IAM, TOKEN or NONE, got ${JSON.stringify(c.authType)}`);
  if (c.authType !== 'AWS_IAM') {
    if (c.corsAllowedOrigins.length === 0) fail('corsAllowedOrigins', `must list the browser origins allowed to call a public (authType ${c.authType}) URL`);
    for (const o of c.corsAllowedOrigins) {
      if (!/^https?:\/\/[A-Za-z0-9.-]+(:\d+)?$/.test(o)) fail('corsAllowedOrigins', `must hold origins such as https://demo.example.com (scheme, host, optional port; no wildcard, no path), got ${JSON.stringify(o)}`);
    }
  }
  // The ID of a foundation model (amazon.nova-lite-v1:0) or of a cross-Region inference profile
  // (us.amazon.nova-lite-v1:0), which newer models need; the gateway's IAM grant covers either (arns.ts).
  if (!/^[a-z0-9-]+\.[A-Za-z0-9.:_-]+$/.test(c.bedrockModelId)) {
    fail('bedrockModelId', `must be a foundation-model id such as amazon.nova-lite-v1:0 or an inference profile id such as us.amazon.nova-lite-v1:0 (not an ARN), got ${JSON.stringify(c.bedrockModelId)}`);
  }
  checkAgent(c);
  if (c.tokenKeysSecret !== '' && !/^(arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:)?[A-Za-z0-9/_+=.@-]{1,512}$/.test(c.tokenKeysSecret)) {
    fail('tokenKeysSecret', `must be empty (the stack creates one) or a Secrets Manager secret name or ARN, got ${JSON.stringify(c.tokenKeysSecret)}`);
  }
  if (!/^[A-Za-z0-9._:/-]{1,128}$/.test(c.tokenAudience)) fail('tokenAudience', `must be 1 to 128 letters, digits and . _ : / -, got ${JSON.stringify(c.tokenAudience)}`);
  within('tokenMaxLifetimeSeconds', 60, 86_400);
  within('reservedConcurrency', 0, 10_000);
  within('maxConversationsPerOwner', 0, 10_000);
  within('maxCharsPerOwnerHour', 0, 100_000_000);
  within('maxInputCharsPerOwnerHour', 0, 1_000_000_000);
  within('maxRequestsPerOwnerMinute', 0, 100_000);
  for (const cidr of c.trustedProxies) {
    if (!/^[0-9A-Fa-f.:]+(\/\d{1,3})?$/.test(cidr)) fail('trustedProxies', `must hold CIDRs such as 10.0.0.0/8 or 2600:9000::/28, got ${JSON.stringify(cidr)}`);
  }
  within('ceilingCharsPerHour', 0, 10_000_000_000);
  within('ceilingInputCharsPerHour', 0, 10_000_000_000);
  within('ceilingRequestsPerHour', 0, 100_000_000);
  within('pollyConversations', 0, 100_000);
  if (!['deployment', 'owner', 'off'].includes(c.cacheScope)) fail('cacheScope', `must be deployment, owner or off, got ${JSON.stringify(c.cacheScope)}`);
  within('cacheMib', 1, 4096);
  if (!(c.speakingRate >= 0.5 && c.speakingRate <= 2)) fail('speakingRate', `must be from 0.5 to 2.0 (1: each voice's own), got ${c.speakingRate}`);
  if (c.lexiconFile !== '' && !fs.existsSync(lexiconPath(c))) fail('lexiconFile', `names no file: ${lexiconPath(c)} (relative paths are read from infra/cdk)`);
  if (c.openaiVoices !== '' && !isVoiceTable(c.openaiVoices)) {
    fail('openaiVoices', `must be '' or a JSON object of backends, each an object of OpenAI's voice names to voices, got ${JSON.stringify(c.openaiVoices)}`);
  }
  if (c.outputFormat !== '' && !OUTPUT_FORMATS.includes(c.outputFormat as (typeof OUTPUT_FORMATS)[number])) {
    fail('outputFormat', `must be '' (each backend's own PCM) or one of ${OUTPUT_FORMATS.join(', ')}, got ${JSON.stringify(c.outputFormat)}`);
  }
  if (c.cacheMib * 4 > c.lambdaMemoryMb) fail('cacheMib', `must be at most a quarter of lambdaMemoryMb (${c.lambdaMemoryMb} MB), got ${c.cacheMib}`);
  within('cacheMaxChars', 1, 2000);
  within('cacheSharedDays', 1, 365);
  if (c.cacheSharedTier && c.cacheScope === 'off') fail('cacheSharedTier', 'needs the cache on (cacheScope deployment or owner)');
  if (c.cacheWarmup.trim() !== '' && c.cacheWarmup.trim() !== 'none') {
    let warmup: unknown;
    try {
      warmup = JSON.parse(c.cacheWarmup);
    } catch {
      fail('cacheWarmup', `must be '' (earshot's openers), none, or JSON, got ${JSON.stringify(c.cacheWarmup)}`);
    }
    const isList = (v: unknown) => Array.isArray(v) && v.every((s) => typeof s === 'string');
    const ok = isList(warmup) || (typeof warmup === 'object' && warmup !== null && Object.values(warmup).every(isList));
    if (!ok) fail('cacheWarmup', 'must be a JSON list of sentences or an object from voice to a list of sentences');
  }
  within('alarmPollyCharactersPerHour', 0);
  within('alarmInvocationsPerHour', 0);
  if (c.alarmEmail !== '' && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(c.alarmEmail)) fail('alarmEmail', `must be an e-mail address or empty, got ${JSON.stringify(c.alarmEmail)}`);
  if (c.systemPrompt.trim() === '') fail('systemPrompt', 'must not be empty');
  for (const key of ['kokoroVoice', 'pollyVoice', 'logLevel', 'bootstrapDir', 'instanceType'] as const) {
    if (c[key].trim() === '') fail(key, 'must not be empty');
  }
  if (!/^[A-Za-z0-9._:-]{1,64}$/.test(c.abExperiment)) fail('abExperiment', `must be 1 to 64 letters, digits, -, _, . or :, got ${JSON.stringify(c.abExperiment)}`);
  if (!/^[A-Za-z0-9_]{1,64}$/.test(c.pollyVoice)) fail('pollyVoice', `must be a Polly voice name such as ruth, got ${JSON.stringify(c.pollyVoice)}`);
  if (!/^[A-Za-z0-9_./#:-]{1,255}$/.test(c.metricsNamespace) || c.metricsNamespace.startsWith('AWS/')) {
    fail('metricsNamespace', `must be a custom CloudWatch namespace, got ${JSON.stringify(c.metricsNamespace)}`);
  }
  // SageMaker writes endpoint ARNs in lower case; a lower-case name keeps the IAM grant and the ARN equal.
  if (!/^[a-z0-9](-*[a-z0-9]){0,62}$/.test(c.endpointName)) fail('endpointName', `must be lower-case letters, digits and hyphens (at most 63), got ${JSON.stringify(c.endpointName)}`);
  if (!/^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$/.test(c.variantName)) fail('variantName', `must be letters, digits and hyphens, got ${JSON.stringify(c.variantName)}`);
  if (!/^ml\.[a-z0-9]+\.[a-z0-9]+$/.test(c.instanceType)) fail('instanceType', `must be a SageMaker instance type such as ml.g5.xlarge, got ${JSON.stringify(c.instanceType)}`);
  if (!(INFERENCE_AMI_VERSIONS as readonly string[]).includes(c.inferenceAmiVersion)) {
    fail('inferenceAmiVersion', `must be one of ${INFERENCE_AMI_VERSIONS.join(', ')}, got ${JSON.stringify(c.inferenceAmiVersion)}`);
  }
  within('maxPromptChars');
  within('maxTextChars');
  within('maxAnswerChars', 100, 1_000_000);
  if (c.maxAnswerChars < c.maxTextChars) fail('maxAnswerChars', `must be at least maxTextChars (${c.maxTextChars}): a text is its own answer, got ${c.maxAnswerChars}`);
  within('idleReleaseMs', 0, 60_000);
  within('ambiguousReleaseMs', 0, 60_000);
  if (c.lambdaArchitecture !== 'arm64' && c.lambdaArchitecture !== 'x86_64') fail('lambdaArchitecture', `must be arm64 or x86_64, got ${JSON.stringify(c.lambdaArchitecture)}`);
  within('lambdaMemoryMb', 128, 10_240);
  within('lambdaTimeoutSeconds', 1, 900);
  if (!RETENTION_DAYS.includes(c.logRetentionDays)) fail('logRetentionDays', `must be one of ${RETENTION_DAYS.join(', ')}, got ${c.logRetentionDays}`);
  within('startupHealthCheckTimeoutSeconds', 60, 3600);
  within('minInstances', 1);
  within('maxInstances', 1);
  if (c.maxInstances < c.minInstances) fail('maxInstances', `(${c.maxInstances}) must not be below minInstances (${c.minInstances})`);
  within('maxSessionsPerInstance', 0, 100_000);
  within('targetConcurrentStreams', 0, 100_000);
  if (!c.pollyOnly) checkInstance(c);
}

/** The endpoint's instance: a kind the image runs on, an autoscaling target it admits, a price to chart. */
function checkInstance(c: EarshotConfig): void {
  if (instanceKind(c.instanceType) === undefined) {
    fail('instanceType', `must be a GPU (ml.g*, ml.p*) or CPU (ml.c*, ml.m*, ml.r*, ml.t*) instance type: the image runs on no other, got ${JSON.stringify(c.instanceType)}`);
  }
  if (instanceKind(c.instanceType) === 'cpu' && c.maxSessionsPerInstance === 0 && vcpus(c.instanceType) === undefined) {
    fail('maxSessionsPerInstance', `must be given for ${c.instanceType}, whose vCPUs its size does not tell`);
  }
  const sessions = sessionsPerInstance(c);
  if (scalingTarget(c) > sessions) {
    fail('targetConcurrentStreams', `(${c.targetConcurrentStreams}) must not exceed the conversations one instance admits (${sessions}): instances would be added only after conversations were refused`);
  }
  const listed = publishedPrices().instanceType;
  if (c.instanceUsdPerHour === 0 && c.instanceType !== listed) {
    fail('instanceUsdPerHour', `must be given for ${c.instanceType}: docs/prices.json lists only ${listed}, and no other price is assumed`);
  }
  if (c.instanceUsdPerHour < 0) fail('instanceUsdPerHour', `must not be negative, got ${c.instanceUsdPerHour}`);
}

/** The agent's settings: each source needs its own, and the request can never choose a URL (the operator does). */
function checkAgent(c: EarshotConfig): void {
  if (!(AGENTS as readonly string[]).includes(c.agent)) fail('agent', `must be one of ${AGENTS.join(', ')}, got ${JSON.stringify(c.agent)}`);
  const url = (key: 'openaiBaseUrl' | 'httpAgentUrl') => {
    let parsed: URL;
    try {
      parsed = new URL(c[key]);
    } catch {
      return fail(key, `must be an http or https URL, got ${JSON.stringify(c[key])}`);
    }
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') fail(key, `must be an http or https URL, got ${JSON.stringify(c[key])}`);
  };
  if (c.agent === 'openai') {
    url('openaiBaseUrl');
    if (c.openaiModel.trim() === '') fail('openaiModel', 'must name the model when agent is openai');
  }
  if (c.agent === 'http') url('httpAgentUrl');
  if (c.agent === 'agentcore' && !AGENTCORE_RUNTIME_ARN.test(c.agentcoreRuntimeArn)) {
    fail('agentcoreRuntimeArn', `must be an AgentCore runtime ARN such as arn:aws:bedrock-agentcore:us-east-1:123456789012:runtime/my_agent-AbCdEf1234, got ${JSON.stringify(c.agentcoreRuntimeArn)}`);
  }
  if (c.agentcoreQualifier !== '' && !/^[A-Za-z0-9_-]{1,64}$/.test(c.agentcoreQualifier)) fail('agentcoreQualifier', `must be empty (DEFAULT) or an endpoint name, got ${JSON.stringify(c.agentcoreQualifier)}`);
  if (!c.agentcoreTextPointer.startsWith('/')) fail('agentcoreTextPointer', `must be a JSON pointer such as /data, got ${JSON.stringify(c.agentcoreTextPointer)}`);
  if (c.agentTemperature !== '' && !(Number(c.agentTemperature) >= 0 && Number(c.agentTemperature) <= 2)) {
    fail('agentTemperature', `must be empty or a number from 0 to 2, got ${JSON.stringify(c.agentTemperature)}`);
  }
  if (c.agentMaxTokens < 0) fail('agentMaxTokens', `must be 0 (the server's default) or more, got ${c.agentMaxTokens}`);
  if (!(HTTP_AGENT_FORMATS as readonly string[]).includes(c.httpAgentFormat)) fail('httpAgentFormat', `must be one of ${HTTP_AGENT_FORMATS.join(', ')}, got ${JSON.stringify(c.httpAgentFormat)}`);
  if (c.httpAgentTextPointer !== '' && !c.httpAgentTextPointer.startsWith('/')) fail('httpAgentTextPointer', `must be empty or a JSON pointer such as /delta/text, got ${JSON.stringify(c.httpAgentTextPointer)}`);
  if (c.httpAgentHeader !== '' && !/^[A-Za-z0-9!#$%&'*+.^_`|~-]+:.+$/.test(c.httpAgentHeader)) fail('httpAgentHeader', `must be empty or "Name: value", got ${JSON.stringify(c.httpAgentHeader)}`);
  if (c.agentKeySecret !== '' && !/^(arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:)?[A-Za-z0-9/_+=.@-]{1,512}$/.test(c.agentKeySecret)) {
    fail('agentKeySecret', `must be a Secrets Manager secret name or ARN, got ${JSON.stringify(c.agentKeySecret)}`);
  }
  if (c.httpAgentKeyHeader !== '' && c.agentKeySecret === '') fail('httpAgentKeyHeader', 'names the header for the key, but agentKeySecret names no secret');
}

/**
 * Builds the configuration from the file's values, each replaced by the context value of the same name
 * when there is one. `context` is `(key) => app.node.tryGetContext(key)` in the app.
 */
export function resolveConfig(file: Record<string, unknown>, context: (key: string) => unknown = () => undefined, region?: string): EarshotConfig {
  for (const key of Object.keys(file)) {
    if (!(key in KINDS)) fail(key, `is not a known setting (known: ${CONFIG_KEYS.join(', ')})`);
  }
  const out: Record<string, unknown> = {};
  for (const key of CONFIG_KEYS) {
    const override = context(key);
    const raw = override !== undefined ? override : file[key];
    if (raw === undefined) fail(key, 'is missing from the config file');
    try {
      out[key] = coerce(key, KINDS[key], raw);
    } catch (e) {
      if (e instanceof SyntaxError) fail(key, `is not valid JSON: ${e.message}`);
      throw e;
    }
  }
  // `auto`: the default model in the form the deploying Region invokes on demand.
  if (out.bedrockModelId === 'auto') out.bedrockModelId = defaultBedrockModel(region);
  const config = out as unknown as EarshotConfig;
  check(config);
  return config;
}

/** Reads a config file (JSON). */
export function readConfigFile(file: string = DEFAULT_CONFIG_FILE): Record<string, unknown> {
  const parsed: unknown = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ConfigError(`earshot config: ${file} must hold a JSON object`);
  return parsed as Record<string, unknown>;
}

/** The configuration with every default from earshot.config.json, and the given values instead (for tests). */
export function defaultConfig(overrides: Partial<Record<keyof EarshotConfig, unknown>> = {}): EarshotConfig {
  return resolveConfig(readConfigFile(), (key) => overrides[key as keyof EarshotConfig]);
}

/** The backends this deployment really offers: only Polly when Polly-only. */
export function deployedBackends(c: EarshotConfig): Backend[] {
  return c.pollyOnly ? ['polly'] : c.backends;
}

/** Whether `text` is a JSON object of backends, each an object of names to voice names (the gateway checks the names). */
function isVoiceTable(text: string): boolean {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return false;
  }
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  return isObject(value) && Object.values(value).every((names) => isObject(names) && Object.values(names).every((voice) => typeof voice === 'string' && voice !== ''));
}
