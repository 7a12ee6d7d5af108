// The deploy-time configuration: the committed defaults, `-c key=value` overrides (which arrive as strings),
// and the mistakes that must stop a deployment before anything is synthesized.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, readConfigFile, resolveConfig } from '../lib/config';

const file = readConfigFile();
const withContext = (ctx: Record<string, unknown>) => resolveConfig(file, (key) => ctx[key]);
const rejects = (ctx: Record<string, unknown>, pattern: RegExp) => assert.throws(() => withContext(ctx), (e: unknown) => e instanceof ConfigError && pattern.test(e.message));

describe('config file', () => {
  it('resolves with safe defaults: IAM auth, a GPU instance, both backends, the earshot namespace', () => {
    const c = withContext({});
    assert.equal(c.authType, 'AWS_IAM');
    assert.equal(c.pollyOnly, false);
    assert.match(c.instanceType, /^ml\.g/);
    assert.deepEqual(c.backends, ['kokoro', 'polly']);
    assert.equal(c.metricsNamespace, 'earshot');
    assert.ok(c.startupHealthCheckTimeoutSeconds >= 600);
    assert.ok(c.minInstances >= 1 && c.maxInstances >= c.minInstances);
  });

  it('rejects a setting it does not know, naming it', () => {
    assert.throws(() => resolveConfig({ ...file, instanceTyp: 'ml.g5.xlarge' }), /`instanceTyp` is not a known setting/);
  });

  it('reports a missing setting by name', () => {
    const { instanceType: _, ...rest } = file;
    assert.throws(() => resolveConfig(rest), /`instanceType` is missing/);
  });
});

describe('-c overrides (strings from the command line)', () => {
  it('turns strings into booleans, integers, lists and weights', () => {
    const c = withContext({
      pollyOnly: 'true',
      failover: 'false',
      maxInstances: '4',
      backends: 'polly,kokoro',
      abWeights: 'kokoro=70,polly=30',
      corsAllowedOrigins: '["https://demo.example.com"]',
    });
    assert.equal(c.pollyOnly, true);
    assert.equal(c.failover, false);
    assert.equal(c.maxInstances, 4);
    assert.deepEqual(c.backends, ['polly', 'kokoro']);
    assert.deepEqual(c.abWeights, { kokoro: 70, polly: 30 });
    assert.deepEqual(c.corsAllowedOrigins, ['https://demo.example.com']);
  });

  it('accepts weights as JSON too', () => {
    assert.deepEqual(withContext({ abWeights: '{"kokoro":1,"polly":3}' }).abWeights, { kokoro: 1, polly: 3 });
  });

  it('takes a voice per language, as pairs or JSON, and refuses what is not a language or a voice', () => {
    assert.deepEqual(withContext({ kokoroLanguageVoices: 'fr=ff_siwis, zh-CN=zf_xiaobei' }).kokoroLanguageVoices, { fr: 'ff_siwis', 'zh-CN': 'zf_xiaobei' });
    assert.deepEqual(withContext({ pollyLanguageVoices: '{"fr":"remi"}' }).pollyLanguageVoices, { fr: 'remi' });
    assert.deepEqual(withContext({ pollyLanguageVoices: '' }).pollyLanguageVoices, {});
    rejects({ kokoroLanguageVoices: 'french=ff_siwis' }, /`kokoroLanguageVoices` has "french", which is not a BCP 47 language tag/);
    rejects({ pollyLanguageVoices: 'fr' }, /`pollyLanguageVoices` must look like fr=ff_siwis/);
    rejects({ pollyLanguageVoices: '{"fr":"L\u00e9a Voice"}' }, /`pollyLanguageVoices` must give fr a voice name/);
  });

  it('takes the sentence cache\'s scope, bound and openers, and refuses what the gateway would', () => {
    assert.equal(withContext({ cacheScope: 'owner' }).cacheScope, 'owner');
    assert.equal(withContext({ cacheWarmup: '["Sure."]' }).cacheWarmup, '["Sure."]');
    rejects({ cacheScope: 'everyone' }, /`cacheScope` must be deployment, owner or off/);
    rejects({ cacheScope: 'off', cacheSharedTier: 'true' }, /`cacheSharedTier` needs the cache on/);
    rejects({ cacheMib: '512' }, /`cacheMib` must be at most a quarter of lambdaMemoryMb/);
    assert.equal(withContext({ outputFormat: 'alaw_8000' }).outputFormat, 'alaw_8000');
    assert.equal(withContext({ outputFormat: 'opus_48000' }).outputFormat, 'opus_48000');
    rejects({ maxAnswerChars: '1000' }, /`maxAnswerChars` must be at least maxTextChars \(20000\)/);
    rejects({ outputFormat: 'mp3' }, /`outputFormat` must be '' \(each backend's own PCM\) or one of pcm_8000/);
    assert.equal(withContext({ outputFormat: 'mp3_24000' }).outputFormat, 'mp3_24000');
    assert.equal(withContext({ openaiVoices: '{"kokoro": {"nova": "af_bella"}}' }).openaiVoices, '{"kokoro": {"nova": "af_bella"}}');
    rejects({ openaiVoices: '{"kokoro": "af_bella"}' }, /`openaiVoices` must be '' or a JSON object of backends/);
    rejects({ openaiVoices: 'nova=af_bella' }, /`openaiVoices` must be '' or a JSON object of backends/);
    rejects({ cacheWarmup: 'Sure.' }, /`cacheWarmup` must be '' \(earshot's openers\), none, or JSON/);
    rejects({ cacheWarmup: '{"af_heart": "Sure."}' }, /`cacheWarmup` must be a JSON list of sentences or an object/);
  });

  it('leaves settings that are not overridden at their file values', () => {
    const c = withContext({ kokoroVoice: 'af_bella' });
    assert.equal(c.kokoroVoice, 'af_bella');
    assert.equal(c.pollyVoice, file.pollyVoice);
  });

  it('rejects values of the wrong kind', () => {
    rejects({ failover: 'yes' }, /`failover` must be true or false/);
    rejects({ maxInstances: 'two' }, /`maxInstances` must be an integer/);
    rejects({ abWeights: 'kokoro=-1' }, /`abWeights` weight of kokoro/);
    rejects({ abWeights: 'kokoro' }, /`abWeights` must look like/);
    rejects({ abExperiment: 'two words' }, /`abExperiment` must be 1 to 64 letters/);
  });
});

describe('checks', () => {
  it('accepts only AWS_IAM, TOKEN or NONE', () => rejects({ authType: 'PUBLIC' }, /`authType` must be AWS_IAM, TOKEN or NONE/));

  it('needs an origin allow-list for a public URL, without wildcards or paths', () => {
    rejects({ authType: 'NONE', corsAllowedOrigins: '' }, /`corsAllowedOrigins` must list/);
    rejects({ authType: 'NONE', corsAllowedOrigins: '*' }, /`corsAllowedOrigins` must hold origins/);
    rejects({ authType: 'NONE', corsAllowedOrigins: 'https://a.example.com/page' }, /`corsAllowedOrigins` must hold origins/);
    assert.equal(withContext({ authType: 'NONE', corsAllowedOrigins: 'https://a.example.com' }).authType, 'NONE');
  });

  it('takes a foundation-model id or an inference profile id, not an ARN', () => {
    assert.equal(withContext({ bedrockModelId: 'us.amazon.nova-lite-v1:0' }).bedrockModelId, 'us.amazon.nova-lite-v1:0');
    // The default follows the deploying Region: on demand by its id in us-east-1, through the Region's profile elsewhere.
    const auto = (region?: string) => resolveConfig(readConfigFile(), () => undefined, region).bedrockModelId;
    assert.equal(auto('us-east-1'), 'amazon.nova-lite-v1:0');
    assert.equal(auto(undefined), 'amazon.nova-lite-v1:0', 'an offline synth keeps the plain id');
    assert.equal(auto('us-west-2'), 'us.amazon.nova-lite-v1:0');
    assert.equal(auto('eu-west-3'), 'eu.amazon.nova-lite-v1:0');
    assert.equal(auto('ap-southeast-1'), 'apac.amazon.nova-lite-v1:0');
    assert.equal(resolveConfig(readConfigFile(), (k) => (k === 'bedrockModelId' ? 'amazon.nova-micro-v1:0' : undefined), 'eu-west-3').bedrockModelId, 'amazon.nova-micro-v1:0', 'a chosen model is kept');
    rejects({ bedrockModelId: 'arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0' }, /`bedrockModelId`/);
    assert.equal(withContext({ bedrockModelId: 'anthropic.claude-3-haiku-20240307-v1:0' }).bedrockModelId, 'anthropic.claude-3-haiku-20240307-v1:0');
  });

  it('keeps the endpoint name lower case, as SageMaker writes it in ARNs', () => {
    rejects({ endpointName: 'Earshot-Kokoro' }, /`endpointName` must be lower-case/);
  });

  it('keeps scaling bounds in order', () => {
    rejects({ minInstances: '3', maxInstances: '2' }, /`maxInstances` \(2\) must not be below minInstances \(3\)/);
    rejects({ minInstances: '0' }, /`minInstances` must be between 1/);
  });

  it('knows only the kokoro and polly backends, each once', () => {
    rejects({ backends: 'kokoro,espeak' }, /unknown backend "espeak"/);
    rejects({ backends: 'kokoro,kokoro' }, /names a backend twice/);
    rejects({ abWeights: 'kokoro=50,azure=50' }, /`abWeights` has an unknown backend "azure"/);
  });

  it('refuses a GPU endpoint that no backend would use', () => {
    rejects({ backends: 'polly' }, /set pollyOnly to true/);
    assert.equal(withContext({ backends: 'polly', pollyOnly: 'true' }).pollyOnly, true);
  });

  it('needs a positive weight on some deployed backend', () => {
    rejects({ abWeights: 'kokoro=0,polly=0' }, /positive weight/);
  });

  it('accepts only retention periods CloudWatch Logs offers', () => {
    rejects({ logRetentionDays: '31' }, /`logRetentionDays` must be one of/);
  });
});
