// What `make deploy` does with AWS's answers about a Region (lib/preflight.ts). Only AWS knows which Regions
// offer what, so these are the answers the aws CLI gives (shapes from the Polly, Bedrock and Service Quotas API
// references), and the tests check what the check concludes from each.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultConfig } from '../lib/config';
import { judgeProbe } from '../lib/polly-probe';
import { Answer, preflight } from '../lib/preflight';

const ok = (body: unknown): Answer => ({ ok: true, stdout: JSON.stringify(body), stderr: '' });
const fail = (stderr: string): Answer => ({ ok: false, stdout: '', stderr });

const VOICES = ok({ Voices: [{ Id: 'Ruth', LanguageCode: 'en-US', SupportedEngines: ['generative', 'neural'] }, { Id: 'Matthew', LanguageCode: 'en-US' }] });
const MODEL = ok({ modelDetails: { modelId: 'amazon.nova-lite-v1:0', responseStreamingSupported: true, modelLifecycle: { status: 'ACTIVE' }, inferenceTypesSupported: ['ON_DEMAND'] } });
const QUOTAS = ok({ Quotas: [{ QuotaName: 'ml.g5.xlarge for endpoint usage', Value: 2 }, { QuotaName: 'ml.g5.2xlarge for endpoint usage', Value: 0 }] });

/** An aws CLI that answers each service with the given answer and records what it was asked. */
const ACCOUNT = ok({ AccountLimit: { ConcurrentExecutions: 1000, UnreservedConcurrentExecutions: 980 }, AccountUsage: { FunctionCount: 3 } });

function cli(answers: { polly?: Answer; bedrock?: Answer; profile?: Answer; quotas?: Answer; defaults?: Answer; lambda?: Answer; stack?: Answer; pollyQuotas?: Answer }) {
  const asked: string[][] = [];
  const ask = (args: string[]): Answer => {
    asked.push(args);
    if (args[0] === 'polly') return answers.polly ?? VOICES;
    if (args[1] === 'get-inference-profile' && answers.profile) return answers.profile;
    if (args[0] === 'bedrock') return answers.bedrock ?? MODEL;
    if (args[0] === 'service-quotas' && args.includes('polly')) return answers.pollyQuotas ?? ok({ Quotas: [] });
    if (args[1] === 'list-aws-default-service-quotas') return answers.defaults ?? ok({ Quotas: [] });
    if (args[0] === 'service-quotas') return answers.quotas ?? QUOTAS;
    if (args[0] === 'lambda') return answers.lambda ?? ACCOUNT;
    if (args[0] === 'cloudformation') return answers.stack ?? fail('An error occurred (ValidationError) when calling the DescribeStacks operation: Stack with id EarshotGateway does not exist');
    throw new Error(`unexpected ${args.join(' ')}`);
  };
  return { ask, asked };
}

describe('deploy preflight', () => {
  it('passes a Region that offers the voice, the model and the instance quota, asking each in that Region', () => {
    const { ask, asked } = cli({});
    const r = preflight(defaultConfig({ instanceType: 'ml.g5.xlarge', minInstances: 1 }), 'eu-west-2', ask);
    assert.deepEqual(r.missing, []);
    for (const args of asked) assert.deepEqual(args.slice(-4), ['--region', 'eu-west-2', '--output', 'json']);
    assert.deepEqual(asked.map((a) => a.slice(0, 2).join(' ')), ['polly describe-voices', 'service-quotas list-service-quotas', 'bedrock get-foundation-model', 'lambda get-account-settings', 'service-quotas list-service-quotas', 'cloudformation describe-stacks']);
    assert.ok(r.unchecked.some((u) => u.includes('bidirectional streaming')), 'SageMaker streaming is named as unchecked');
  });

  it("says a Region outside the dated list of Polly's streaming Regions, and nothing for one on it", () => {
    const listed = preflight(defaultConfig(), 'ca-central-1', cli({}).ask);
    assert.ok(!listed.unchecked.some((u) => u.includes('Polly bidirectional streaming')), listed.unchecked.join('; '));
    const unlisted = preflight(defaultConfig(), 'ap-northeast-1', cli({}).ask);
    assert.deepEqual(unlisted.missing, [], 'generative voices there: said, not stopped (the list may be behind AWS)');
    const said = unlisted.unchecked.find((u) => u.startsWith('Polly bidirectional streaming in ap-northeast-1'));
    assert.ok(said?.includes('make doctor') && said.includes('eu-west-2'), said);
    const kokoroOnly = preflight(defaultConfig({ backends: ['kokoro'], abWeights: { kokoro: 100 } }), 'ap-northeast-1', cli({}).ask);
    assert.ok(!kokoroOnly.unchecked.some((u) => u.includes('Polly')), 'no Polly, nothing said of it');
  });

  it('names a Region without Polly generative voices, and a missing voice with the ones offered', () => {
    const none = preflight(defaultConfig(), 'sa-east-1', cli({ polly: ok({ Voices: [] }) }).ask);
    assert.equal(none.missing.length, 1);
    assert.match(none.missing[0], /generative engine.*sa-east-1/);
    const other = preflight(defaultConfig({ pollyVoice: 'ruth' }), 'eu-central-1', cli({ polly: ok({ Voices: [{ Id: 'Vicki' }] }) }).ask);
    assert.match(other.missing[0], /voice Ruth.*offers Vicki/);
  });

  it('names a Bedrock model the Region does not offer, and asks for an inference profile by its own call', () => {
    const r = preflight(defaultConfig(), 'ap-south-2', cli({ bedrock: fail('An error occurred (ValidationException) when calling the GetFoundationModel operation: The provided model identifier is invalid.') }).ask);
    assert.equal(r.missing.length, 1);
    assert.match(r.missing[0], /amazon\.nova-lite-v1:0.*ap-south-2.*list-foundation-models/);
    const { ask, asked } = cli({ bedrock: fail('An error occurred (ResourceNotFoundException) when calling the GetInferenceProfile operation') });
    const p = preflight(defaultConfig({ bedrockModelId: 'eu.amazon.nova-lite-v1:0' }), 'us-east-1', ask);
    assert.deepEqual(asked.find((a) => a[0] === 'bedrock')?.slice(0, 4), ['bedrock', 'get-inference-profile', '--inference-profile-identifier', 'eu.amazon.nova-lite-v1:0']);
    assert.match(p.missing[0], /inference profile eu\.amazon\.nova-lite-v1:0/);
  });

  it('stops on an instance type the Region has no quota for, or a quota below the maximum autoscaling may reach', () => {
    const absent = preflight(defaultConfig({ instanceType: 'ml.g6e.xlarge', instanceUsdPerHour: 2 }), 'us-east-1', cli({}).ask);
    assert.match(absent.missing[0], /no ml\.g6e\.xlarge endpoints/);
    const low = preflight(defaultConfig({ instanceType: 'ml.g5.2xlarge', instanceUsdPerHour: 2, minInstances: 1, maxInstances: 1 }), 'us-east-1', cli({}).ask);
    assert.match(low.missing[0], /quota "ml\.g5\.2xlarge for endpoint usage" is 0.*below maxInstances 1/);
    const underMax = preflight(defaultConfig({ instanceType: 'ml.g5.xlarge', minInstances: 1, maxInstances: 3 }), 'us-east-1', cli({}).ask);
    assert.match(underMax.missing[0], /is 2 .*below maxInstances 3/);
  });

  it("takes AWS's default where no applied quota value is listed, and only then calls an instance type not offered", () => {
    const defaults = ok({ Quotas: [{ QuotaName: 'ml.g6e.xlarge for endpoint usage', Value: 4 }] });
    const { ask, asked } = cli({ defaults });
    const r = preflight(defaultConfig({ instanceType: 'ml.g6e.xlarge', instanceUsdPerHour: 2, maxInstances: 2 }), 'us-east-1', ask);
    assert.deepEqual(r.missing, []);
    assert.ok(asked.some((a) => a[1] === 'list-aws-default-service-quotas'));
  });

  it('stops on a model not invoked on demand in the Region, naming the inference profile to use there', () => {
    const provisioned = ok({ modelDetails: { responseStreamingSupported: true, inferenceTypesSupported: ['INFERENCE_PROFILE'] } });
    const { ask, asked } = cli({ bedrock: provisioned, profile: ok({ inferenceProfileId: 'eu.amazon.nova-lite-v1:0', status: 'ACTIVE' }) });
    const r = preflight(defaultConfig(), 'eu-west-3', ask);
    assert.equal(r.missing.length, 1);
    assert.match(r.missing[0], /not invoked on demand in eu-west-3.*-c bedrockModelId=eu\.amazon\.nova-lite-v1:0/);
    assert.ok(asked.some((a) => a.includes('eu.amazon.nova-lite-v1:0')), 'the suggested profile is confirmed with AWS');
    const none = preflight(defaultConfig(), 'me-central-1', cli({ bedrock: provisioned, profile: fail('ResourceNotFoundException') }).ask);
    assert.match(none.missing[0], /no inference profile global\.amazon\.nova-lite-v1:0 answers.*list-inference-profiles/);
  });

  it('asks nothing of Bedrock when the agent is not Bedrock', () => {
    const { ask, asked } = cli({ bedrock: fail('ValidationException') });
    const r = preflight(defaultConfig({ agent: 'openai', openaiModel: 'gpt-4o-mini' }), 'us-east-1', ask);
    assert.ok(!asked.some((a) => a[0] === 'bedrock'));
    assert.ok(!r.missing.some((m) => m.includes('Bedrock')));
  });

  it('reports what it may not ask as unchecked, never as missing', () => {
    const denied = fail('An error occurred (AccessDeniedException) when calling the ListServiceQuotas operation: User is not authorized');
    const r = preflight(defaultConfig(), 'us-east-1', cli({ quotas: denied, polly: fail('An error occurred (AccessDeniedException)') }).ask);
    assert.deepEqual(r.missing, []);
    assert.ok(r.unchecked.some((u) => u.includes('AccessDeniedException') && u.includes('endpoint usage')));
    assert.ok(r.unchecked.some((u) => u.includes('Polly')));
  });

  it('asks nothing about SageMaker for a Polly-only deployment, nor about Polly without the Polly backend', () => {
    const pollyOnly = cli({});
    preflight(defaultConfig({ pollyOnly: true }), 'us-east-1', pollyOnly.ask);
    assert.ok(!pollyOnly.asked.some((a) => a[0] === 'service-quotas' && a.includes('sagemaker')));
    const kokoroOnly = cli({});
    preflight(defaultConfig({ backends: ['kokoro'], abWeights: { kokoro: 100 } }), 'us-east-1', kokoroOnly.ask);
    assert.ok(!kokoroOnly.asked.some((a) => a[0] === 'polly'));
  });

  it('warns about a LEGACY model and stops on one that cannot stream', () => {
    const legacy = preflight(defaultConfig(), 'us-east-1', cli({ bedrock: ok({ modelDetails: { responseStreamingSupported: true, modelLifecycle: { status: 'LEGACY' } } }) }).ask);
    assert.deepEqual(legacy.missing, []);
    assert.ok(legacy.unchecked.some((u) => u.includes('LEGACY')));
    const batch = preflight(defaultConfig(), 'us-east-1', cli({ bedrock: ok({ modelDetails: { responseStreamingSupported: false } }) }).ask);
    assert.match(batch.missing[0], /does not stream/);
  });

  it("lets the stream probe decide: an endpoint without the operation stops the deploy, an answer needs no list", () => {
    const absent = preflight(defaultConfig(), 'eu-west-2', cli({}).ask, { kind: 'absent', detail: 'UnknownOperationException (HTTP 404)' });
    assert.equal(absent.missing.length, 1);
    assert.match(absent.missing[0], /StartSpeechSynthesisStream\) in eu-west-2.*UnknownOperationException.*backends=kokoro/);
    const offered = preflight(defaultConfig(), 'ap-northeast-1', cli({}).ask, { kind: 'offered', detail: 'a stream opened and closed' });
    assert.deepEqual(offered.missing, []);
    assert.ok(!offered.unchecked.some((u) => u.includes('Polly')), `a Region off the list whose Polly answered: ${offered.unchecked.join('; ')}`);
    const unknownListed = preflight(defaultConfig(), 'eu-west-2', cli({}).ask, { kind: 'unknown', detail: 'AccessDeniedException (HTTP 403): no' });
    assert.deepEqual(unknownListed.missing, []);
    assert.deepEqual(unknownListed.unchecked.filter((u) => u.includes('Polly')), ['Polly bidirectional streaming by opening a stream (AccessDeniedException (HTTP 403): no)']);
    const unknownUnlisted = preflight(defaultConfig(), 'ap-northeast-1', cli({}).ask, { kind: 'unknown', detail: 'no answer within 20 s' });
    assert.equal(unknownUnlisted.unchecked.filter((u) => u.includes('Polly bidirectional streaming')).length, 2, 'the failed probe and the list both said');
  });

  it("judges the probe's errors as the SDK reports them", () => {
    const http = (name: string, status: number) => Object.assign(new Error('said'), { name, $metadata: { httpStatusCode: status } });
    assert.equal(judgeProbe(http('UnknownOperationException', 404)).kind, 'absent');
    assert.equal(judgeProbe(http('NotFound', 404)).kind, 'absent');
    for (const [name, status] of [['AccessDeniedException', 403], ['UnrecognizedClientException', 400], ['ExpiredTokenException', 400], ['SomethingNew', 401]] as const) {
      assert.equal(judgeProbe(http(name, status)).kind, 'unknown', name);
    }
    for (const [name, status] of [['ValidationException', 400], ['ThrottlingException', 429], ['ServiceQuotaExceededException', 402], ['ServiceFailureException', 500]] as const) {
      const v = judgeProbe(http(name, status));
      assert.equal(v.kind, 'offered', name);
      assert.match(v.detail, new RegExp(`${name} \\(HTTP ${status}\\)`));
    }
    assert.equal(judgeProbe(Object.assign(new Error('Could not load credentials from any providers'), { name: 'CredentialsProviderError' })).kind, 'unknown');
    // Inside the stream the SDK builds the operation's own exceptions without an HTTP status.
    assert.equal(judgeProbe(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' })).kind, 'offered');
    assert.equal(judgeProbe(Object.assign(new Error('bad'), { name: 'ValidationException', $metadata: {} })).kind, 'offered');
    assert.equal(judgeProbe(new Error('connect ECONNREFUSED')).kind, 'unknown');
  });

  it("drops the configuration's reservedConcurrency where the account cannot hold it, and says so", () => {
    const newAccount = preflight(defaultConfig({ reservedConcurrency: 20 }), 'eu-west-2', cli({ lambda: ok({ AccountLimit: { ConcurrentExecutions: 10, UnreservedConcurrentExecutions: 10 } }) }).ask);
    assert.deepEqual(newAccount.missing, []);
    assert.deepEqual(newAccount.adjusted, { reservedConcurrency: '0' });
    assert.ok(newAccount.notes.some((n) => /is 10, .*no function can reserve any: this deploy reserves none/.test(n)), newAccount.notes.join('; '));
    const crowded = cli({ lambda: ok({ AccountLimit: { ConcurrentExecutions: 1000, UnreservedConcurrentExecutions: 110 } }) });
    assert.deepEqual(preflight(defaultConfig({ reservedConcurrency: 20 }), 'eu-west-2', crowded.ask).adjusted, { reservedConcurrency: '0' });
    assert.deepEqual(preflight(defaultConfig({ reservedConcurrency: 20 }), 'eu-west-2', cli({ lambda: ok({ AccountLimit: { ConcurrentExecutions: 1000 } }) }).ask).adjusted, {}, 'room: nothing changes');
  });

  it("holds a reservedConcurrency named on the command line to what the account's Lambda concurrency lets a function reserve", () => {
    const named = { reservedConcurrency: true };
    const newAccount = preflight(defaultConfig({ reservedConcurrency: 20 }), 'eu-west-2', cli({ lambda: ok({ AccountLimit: { ConcurrentExecutions: 10, UnreservedConcurrentExecutions: 10 } }) }).ask, undefined, named);
    assert.equal(newAccount.missing.length, 1);
    assert.match(newAccount.missing[0], /reservedConcurrency 20: the account's Lambda concurrency in eu-west-2 is 10, .*no function can reserve any: deploy with -c reservedConcurrency=0/);
    const small = preflight(defaultConfig({ reservedConcurrency: 50 }), 'eu-west-2', cli({ lambda: ok({ AccountLimit: { ConcurrentExecutions: 120 } }) }).ask, undefined, named);
    assert.match(small.missing[0], /at most 20 can be reserved/);
    assert.deepEqual(preflight(defaultConfig({ reservedConcurrency: 20 }), 'eu-west-2', cli({ lambda: ok({ AccountLimit: { ConcurrentExecutions: 120 } }) }).ask).missing, []);
    const denied = preflight(defaultConfig({ reservedConcurrency: 20 }), 'eu-west-2', cli({ lambda: fail('An error occurred (AccessDeniedException) when calling the GetAccountSettings operation') }).ask);
    assert.deepEqual(denied.missing, []);
    assert.ok(denied.unchecked.some((u) => u.startsWith("the account's Lambda concurrency, for reservedConcurrency 20")), denied.unchecked.join('; '));
    // Other functions' reservations: a first deploy must fit beside them; a redeploy already holds its own.
    const crowded = cli({ lambda: ok({ AccountLimit: { ConcurrentExecutions: 1000, UnreservedConcurrentExecutions: 110 } }) });
    const first = preflight(defaultConfig({ reservedConcurrency: 20 }), 'eu-west-2', crowded.ask, undefined, named);
    assert.match(first.missing[0] ?? '', /other functions already reserve 890 of the account's 1000 in eu-west-2, .*at most 10 can be reserved/);
    const again = cli({ lambda: ok({ AccountLimit: { ConcurrentExecutions: 1000, UnreservedConcurrentExecutions: 110 } }), stack: ok({ Stacks: [{ StackName: 'EarshotGateway' }] }) });
    assert.deepEqual(preflight(defaultConfig({ reservedConcurrency: 20 }), 'eu-west-2', again.ask).missing, [], 'a redeploy counts its own reservation');
    const { ask, asked } = cli({});
    preflight(defaultConfig({ reservedConcurrency: 0 }), 'eu-west-2', ask);
    assert.ok(!asked.some((a) => a[0] === 'lambda'), 'no reservation, nothing to ask');
  });

  it("sets Polly's concurrency quota beside the gateway's cap, and never stops the deploy for it", () => {
    // No value applied (ListServiceQuotas lists only applied ones): the documented 26, 8 conversations of 3 fit.
    const byDefault = preflight(defaultConfig(), 'us-east-1', cli({}).ask);
    assert.deepEqual(byDefault.missing, []);
    assert.match(byDefault.notes.join('\n'), /Polly allows 26 concurrent generative requests \(the default, none applied in us-east-1\); pollyConversations 8 holds up to 24/);
    // An applied value, by what its name says (the exact name Service Quotas gives is not in the documents read).
    const raised = ok({ Quotas: [{ QuotaName: 'Concurrent requests for generative voices', Value: 60 }] });
    const more = preflight(defaultConfig(), 'us-east-1', cli({ pollyQuotas: raised }).ask);
    assert.match(more.notes.join('\n'), /Polly allows 60 .*applied in us-east-1.*the quota would take -c pollyConversations=20/);
    const lowered = ok({ Quotas: [{ QuotaName: 'Concurrent requests for generative voices', Value: 12 }] });
    const over = preflight(defaultConfig(), 'us-east-1', cli({ pollyQuotas: lowered }).ask);
    assert.deepEqual(over.missing, [], 'said, not stopped: the failover and the cap answer before Polly throttles a caller');
    assert.match(over.notes.join('\n'), /pollyConversations 8 holds up to 24 Polly streams, above its 12 .*set -c pollyConversations=4/);
    const uncapped = preflight(defaultConfig({ pollyConversations: 0 }), 'us-east-1', cli({}).ask);
    assert.match(uncapped.notes.join('\n'), /no cap\): past about 8 conversations at once Polly throttles/);
    const denied = preflight(defaultConfig(), 'us-east-1', cli({ pollyQuotas: fail('An error occurred (AccessDeniedException) when calling the ListServiceQuotas operation') }).ask);
    assert.ok(denied.unchecked.some((u) => u.startsWith("Polly's concurrency quota for generative voices (aws service-quotas failed: An error occurred (AccessDeniedException)")), denied.unchecked.join('\n'));
    const kokoroOnly = preflight(defaultConfig({ backends: ['kokoro'], abWeights: { kokoro: 100 } }), 'us-east-1', cli({}).ask);
    assert.deepEqual(kokoroOnly.notes, [], 'no Polly, no quota to say');
  });

  it('refuses a new instance type for a deployed endpoint under autoscaling, with the new endpoint name that deploys it beside the old', () => {
    const deployed = (outputs: Record<string, string>) =>
      ok({ Stacks: [{ StackName: 'EarshotKokoroModel', StackStatus: 'UPDATE_COMPLETE', Outputs: Object.entries(outputs).map(([OutputKey, OutputValue]) => ({ OutputKey, OutputValue })) }] });
    const g5 = deployed({ EndpointName: 'earshot-kokoro', InstanceType: 'ml.g5.xlarge' });
    const quotas = ok({ Quotas: [{ QuotaName: 'ml.g6.xlarge for endpoint usage', Value: 2 }, { QuotaName: 'ml.g5.xlarge for endpoint usage', Value: 2 }] });
    const same = preflight(defaultConfig(), 'us-east-1', cli({ stack: g5 }).ask);
    assert.deepEqual(same.missing, [], 'a redeploy of the same type is an update SageMaker takes');
    const changed = preflight(defaultConfig({ instanceType: 'ml.g6.xlarge', instanceUsdPerHour: 0.805 }), 'us-east-1', cli({ stack: g5, quotas }).ask);
    assert.equal(changed.missing.length, 1, changed.missing.join('\n'));
    assert.match(changed.missing[0], /^instanceType ml\.g6\.xlarge: the endpoint earshot-kokoro runs ml\.g5\.xlarge .* add -c endpointName=earshot-kokoro-g6-xlarge\./);
    const renamed = preflight(defaultConfig({ instanceType: 'ml.g6.xlarge', instanceUsdPerHour: 0.805, endpointName: 'earshot-kokoro-g6-xlarge' }), 'us-east-1', cli({ stack: g5, quotas }).ask);
    assert.deepEqual(renamed.missing, [], 'a new endpoint beside the old is no update of it');
    const older = preflight(defaultConfig({ instanceType: 'ml.g6.xlarge', instanceUsdPerHour: 0.805 }), 'us-east-1', cli({ stack: deployed({ EndpointName: 'earshot-kokoro' }), quotas }).ask);
    assert.ok(older.unchecked.some((u) => u.includes('predates its InstanceType output')), older.unchecked.join('\n'));
  });

  it('says where a deployed endpoint cannot be replaced blue/green within the quota (2 × maxInstances)', () => {
    const deployed = ok({ Stacks: [{ StackName: 'EarshotKokoroModel', Outputs: [{ OutputKey: 'EndpointName', OutputValue: 'earshot-kokoro' }, { OutputKey: 'InstanceType', OutputValue: 'ml.g5.xlarge' }] }] });
    const quota = (value: number) => ok({ Quotas: [{ QuotaName: 'ml.g5.xlarge for endpoint usage', Value: value }] });
    const tight = preflight(defaultConfig({ maxInstances: 2 }), 'us-east-1', cli({ stack: deployed, quotas: quota(3) }).ask);
    assert.deepEqual(tight.missing, [], 'a redeploy that changes nothing of the model needs no second fleet: said, not stopped');
    assert.ok(tight.notes.some((n) => /is 3 in us-east-1: a redeploy that changes the Kokoro image .*up to 4 instances .* request 4/.test(n)), tight.notes.join('\n'));
    assert.ok(!preflight(defaultConfig({ maxInstances: 2 }), 'us-east-1', cli({ stack: deployed, quotas: quota(4) }).ask).notes.some((n) => n.includes('new fleet')), 'room for both fleets');
    assert.ok(!preflight(defaultConfig({ maxInstances: 2 }), 'us-east-1', cli({ quotas: quota(3) }).ask).notes.some((n) => n.includes('new fleet')), 'a first deploy has one fleet');
  });
});
