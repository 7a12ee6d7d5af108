// The gateway stack as CloudFormation will see it: the Lambda (arm64, provided.al2023), its streaming
// function URL and who may call it, its least-privilege role, and the environment the Rust bootstrap reads.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { Match } from 'aws-cdk-lib/assertions';
import { readConfigFile } from '../lib/config';
import { ENV_NAMES, UPSTREAM_LIMITS } from '../lib/lambda-env';
import { EXPOSED_HEADERS } from '../lib/gateway-stack';
import { ACCOUNT, REGION, actionsOf, only, onlyId, render, resourcesOf, statements, synth } from './fixture';

const ENDPOINT_ARN = `arn:aws:sagemaker:${REGION}:${ACCOUNT}:endpoint/earshot-kokoro`;

/** The role's reads of secrets other than the conversation secret, which every deployment has. */
const secretReads = (t: ReturnType<typeof synth>) =>
  statements(t.gatewayTemplate).filter((st) => actionsOf(st).includes('secretsmanager:GetSecretValue') && st.Sid !== 'ConversationSecret');


describe('gateway Lambda', () => {
  const { gatewayTemplate: t } = synth();
  const fn = only(t, 'AWS::Lambda::Function').Properties;

  it('is a Rust custom runtime on arm64', () => {
    assert.equal(fn.Runtime, 'provided.al2023');
    assert.deepEqual(fn.Architectures, ['arm64']);
    assert.equal(fn.Handler, 'bootstrap');
  });

  it('has the memory and timeout of the config, sized for long streamed answers', () => {
    assert.equal(fn.MemorySize, 1024);
    assert.equal(fn.Timeout, 300);
    const other = only(synth({ lambdaMemoryMb: '2048', lambdaTimeoutSeconds: '600' }).gatewayTemplate, 'AWS::Lambda::Function').Properties;
    assert.equal(other.MemorySize, 2048);
    assert.equal(other.Timeout, 600);
  });

  it('logs to its own log group with a retention', () => {
    t.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
    assert.deepEqual(fn.LoggingConfig.LogGroup, { Ref: Object.keys(t.findResources('AWS::Logs::LogGroup'))[0] });
  });
});

describe('function URL', () => {
  it('streams responses and requires IAM auth by default, with no CORS and no public permission', () => {
    const { gatewayTemplate: t } = synth();
    const url = only(t, 'AWS::Lambda::Url').Properties;
    assert.equal(url.InvokeMode, 'RESPONSE_STREAM');
    assert.equal(url.AuthType, 'AWS_IAM');
    assert.equal(url.Cors, undefined);
    t.resourceCountIs('AWS::Lambda::Permission', 0);
    t.hasOutput('FunctionUrl', { Value: { 'Fn::GetAtt': [Match.anyValue(), 'FunctionUrl'] } });
  });

  it('is public only on the explicit NONE opt-in, and then lets the listed origins call it', () => {
    const { gatewayTemplate: t } = synth({ authType: 'NONE', corsAllowedOrigins: 'https://demo.example.com,http://localhost:8787' });
    const url = only(t, 'AWS::Lambda::Url').Properties;
    assert.equal(url.InvokeMode, 'RESPONSE_STREAM');
    assert.equal(url.AuthType, 'NONE');
    assert.deepEqual(url.Cors.AllowOrigins, ['https://demo.example.com', 'http://localhost:8787']);
    assert.deepEqual([...url.Cors.AllowMethods].sort(), ['GET', 'POST']);
    assert.deepEqual([...url.Cors.AllowHeaders].sort(), ['accept', 'content-type']);
    assert.ok(url.Cors.ExposeHeaders.includes('x-earshot-backend'), 'a page can read which backend answered');
    assert.ok(url.Cors.ExposeHeaders.includes('x-earshot-arm'), 'a page can read its A/B arm');
    t.hasResourceProperties('AWS::Lambda::Permission', { Action: 'lambda:InvokeFunctionUrl', Principal: '*', FunctionUrlAuthType: 'NONE' });
    // The gateway is told the URL is open on purpose; with `none` it would refuse every unsigned caller.
    const env = only(t, 'AWS::Lambda::Function').Properties.Environment.Variables;
    assert.equal(env.EARSHOT_AUTH, 'public');
  });
});

describe('gateway IAM', () => {
  const { gatewayTemplate: t } = synth();
  const all = statements(t);
  const withAction = (action: string) => all.filter((s) => actionsOf(s).includes(action));

  it('may invoke exactly the Kokoro endpoint, by its ARN, over the bidirectional stream too', () => {
    const found = withAction('sagemaker:InvokeEndpointWithBidirectionalStream');
    assert.equal(found.length, 1);
    assert.deepEqual(actionsOf(found[0]).sort(), ['sagemaker:InvokeEndpoint', 'sagemaker:InvokeEndpointWithBidirectionalStream']);
    assert.deepEqual(resourcesOf(found[0]), [ENDPOINT_ARN]);
  });

  it('suppresses cfn-lint\'s unknown-action warning on that statement\'s policy alone', () => {
    const policies = Object.values(t.findResources('AWS::IAM::Policy'));
    const suppressing = policies.filter((p) => p.Metadata?.['cfn-lint']?.config?.ignore_checks?.includes('W3037'));
    assert.equal(suppressing.length, 1, 'one policy suppresses W3037');
    const inside = suppressing[0].Properties.PolicyDocument.Statement;
    assert.deepEqual(inside.flatMap(actionsOf).sort(), ['sagemaker:InvokeEndpoint', 'sagemaker:InvokeEndpointWithBidirectionalStream'], 'and holds nothing else');
    assert.match(suppressing[0].Metadata.reason, /W3037/);
    assert.deepEqual(suppressing[0].Properties.Roles.length, 1, 'attached to the function\'s role');
  });

  it('may describe exactly that endpoint, for the health probe', () => {
    const found = withAction('sagemaker:DescribeEndpoint');
    assert.equal(found.length, 1);
    assert.deepEqual(actionsOf(found[0]), ['sagemaker:DescribeEndpoint']);
    assert.deepEqual(resourcesOf(found[0]), [ENDPOINT_ARN]);
  });

  it('grants no SageMaker action beyond those two, and none on a wildcard', () => {
    const sagemaker = all.filter((s) => actionsOf(s).some((a) => a.startsWith('sagemaker:')));
    assert.deepEqual(sagemaker.flatMap(actionsOf).sort(), ['sagemaker:DescribeEndpoint', 'sagemaker:InvokeEndpoint', 'sagemaker:InvokeEndpointWithBidirectionalStream']);
    for (const s of sagemaker) for (const r of resourcesOf(s)) assert.ok(!r.includes('*'), `SageMaker resource ${r}`);
  });

  it('may stream from exactly the configured Bedrock foundation model', () => {
    const found = withAction('bedrock:InvokeModelWithResponseStream');
    assert.equal(found.length, 1);
    assert.deepEqual(resourcesOf(found[0]), [`arn:aws:bedrock:${REGION}::foundation-model/amazon.nova-lite-v1:0`]);
    const other = statements(synth({ bedrockModelId: 'anthropic.claude-3-haiku-20240307-v1:0' }).gatewayTemplate)
      .filter((s) => actionsOf(s).includes('bedrock:InvokeModelWithResponseStream'));
    assert.deepEqual(resourcesOf(other[0]), [`arn:aws:bedrock:${REGION}::foundation-model/anthropic.claude-3-haiku-20240307-v1:0`]);
  });

  it('may stream through a cross-Region inference profile: the profile and its model wherever it routes', () => {
    const found = statements(synth({ bedrockModelId: 'us.amazon.nova-lite-v1:0' }).gatewayTemplate)
      .filter((s) => actionsOf(s).includes('bedrock:InvokeModelWithResponseStream'));
    assert.equal(found.length, 1);
    assert.deepEqual(resourcesOf(found[0]), [
      `arn:aws:bedrock:${REGION}:${ACCOUNT}:inference-profile/us.amazon.nova-lite-v1:0`,
      'arn:aws:bedrock:*::foundation-model/amazon.nova-lite-v1:0',
    ]);
  });

  it('may use Polly streaming synthesis and describe its voices for the health probe (Polly offers no narrower resource than *)', () => {
    const found = withAction('polly:StartSpeechSynthesisStream');
    assert.equal(found.length, 1);
    assert.deepEqual(actionsOf(found[0]), ['polly:StartSpeechSynthesisStream', 'polly:DescribeVoices']);
  });

  it('holds no other wildcard grant, no wildcard action and no managed policy', () => {
    for (const s of all) {
      for (const a of actionsOf(s)) assert.ok(!a.includes('*'), `wildcard action ${a}`);
      if (resourcesOf(s).includes('*')) assert.deepEqual(actionsOf(s), ['polly:StartSpeechSynthesisStream', 'polly:DescribeVoices']);
    }
    for (const role of Object.values(t.findResources('AWS::IAM::Role'))) assert.equal(role.Properties.ManagedPolicyArns, undefined);
  });

  it('writes logs only to its own log group', () => {
    const logs = all.filter((s) => actionsOf(s).some((a) => a.startsWith('logs:')));
    assert.equal(logs.length, 1);
    assert.deepEqual(logs[0].Resource, { 'Fn::GetAtt': [Object.keys(t.findResources('AWS::Logs::LogGroup'))[0], 'Arn'] });
  });
});

describe('Lambda architecture', () => {
  it('is arm64 by default and x86_64 when configured, as the bootstrap is built', () => {
    assert.deepEqual(only(synth().gatewayTemplate, 'AWS::Lambda::Function').Properties.Architectures, ['arm64']);
    assert.deepEqual(only(synth({ lambdaArchitecture: 'x86_64' }).gatewayTemplate, 'AWS::Lambda::Function').Properties.Architectures, ['x86_64']);
    assert.throws(() => synth({ lambdaArchitecture: 'riscv64' }), /`lambdaArchitecture` must be arm64 or x86_64/);
  });
});

describe('Lambda environment (the contract with the Rust bootstrap)', () => {
  it('carries every variable of the default (Bedrock) agent, with the default values', () => {
    const env = only(synth().gatewayTemplate, 'AWS::Lambda::Function').Properties.Environment.Variables;
    // Each agent's own, the token mode's, the warm-up list (written only when it is not earshot's own), the speaking rate and lexicon (only when set) and the
    // audio format (only when one is configured: each backend's own PCM otherwise).
    const otherAgents = ENV_NAMES.filter((n) =>
      /^EARSHOT_(OPENAI|HTTP_AGENT|TEMPERATURE|MAX_TOKENS|AGENT_KEY|AGENTCORE|TOKEN_|CACHE_WARMUP|CACHE_BUCKET|CACHE_PREFIX|CACHE_SHARED_BACKENDS|CACHE_FETCH_MS|OUTPUT_FORMAT|SPEAKING_RATE|LEXICON)/.test(n),
    );
    assert.deepEqual(Object.keys(env).sort(), ENV_NAMES.filter((n) => !otherAgents.includes(n)).sort());
    assert.deepEqual(env, {
      EARSHOT_BACKENDS: 'kokoro,polly',
      EARSHOT_AB_WEIGHTS: 'kokoro=50,polly=50',
      EARSHOT_AB_ALLOW_OVERRIDE: 'false',
      EARSHOT_AB_EXPERIMENT: 'default',
      EARSHOT_FAILOVER: 'true',
      EARSHOT_SAGEMAKER_ENDPOINT: 'earshot-kokoro',
      EARSHOT_KOKORO_VOICE: 'af_heart',
      EARSHOT_POLLY_VOICE: 'ruth',
      EARSHOT_KOKORO_LANGUAGE_VOICES: '',
      EARSHOT_POLLY_LANGUAGE_VOICES: '',
      EARSHOT_AGENT: 'bedrock',
      EARSHOT_BEDROCK_MODEL_ID: 'amazon.nova-lite-v1:0',
      EARSHOT_SYSTEM_PROMPT: readConfigFile().systemPrompt,
      EARSHOT_MAX_PROMPT_CHARS: '4000',
      EARSHOT_MAX_TEXT_CHARS: '20000',
      EARSHOT_MAX_ANSWER_CHARS: '20000',
      EARSHOT_IDLE_RELEASE_MS: '150',
      EARSHOT_AMBIGUOUS_RELEASE_MS: '2000',
      EARSHOT_METRICS_NAMESPACE: 'earshot',
      EARSHOT_INTERRUPT_TABLE: { Ref: Object.keys(synth().gatewayTemplate.findResources('AWS::DynamoDB::Table'))[0] },
      EARSHOT_CONVERSATION_SECRET_ID: env.EARSHOT_CONVERSATION_SECRET_ID, // its reference: 'the conversation secret' below
      EARSHOT_INTERRUPT_POLL_MS: '250',
      EARSHOT_MAX_CONVERSATION_SECONDS: '280',
      EARSHOT_LOG: 'info',
      EARSHOT_AUTH: 'none',
      EARSHOT_IAM_SESSION_OWNERS: 'false',
      EARSHOT_AGENT_RESPONSE_TIMEOUT_MS: '10000',
      EARSHOT_AGENT_FIRST_TOKEN_TIMEOUT_MS: '30000',
      EARSHOT_AGENT_IDLE_TIMEOUT_MS: '30000',
      EARSHOT_AGENT_MAX_EVENT_BYTES: '1048576',
      EARSHOT_BACKEND_OPEN_TIMEOUT_MS: '5000',
      EARSHOT_BACKEND_SILENCE_TIMEOUT_MS: '15000',
      EARSHOT_CLIENT_READ_TIMEOUT_MS: '30000',
      EARSHOT_KEEP_ALIVE_MS: '15000',
      EARSHOT_MAX_CONVERSATIONS_PER_OWNER: '4',
      EARSHOT_MAX_CHARS_PER_OWNER_HOUR: '30000',
      EARSHOT_MAX_INPUT_CHARS_PER_OWNER_HOUR: '300000',
      EARSHOT_MAX_REQUESTS_PER_OWNER_MINUTE: '30',
      EARSHOT_CEILING_CHARS_PER_HOUR: '300000',
      EARSHOT_CEILING_INPUT_CHARS_PER_HOUR: '3000000',
      EARSHOT_CEILING_REQUESTS_PER_HOUR: '20000',
      EARSHOT_TRUSTED_PROXIES: '',
      EARSHOT_BACKEND_CONVERSATIONS: 'polly=8',
      EARSHOT_CACHE: 'deployment',
      EARSHOT_CACHE_MIB: '64',
      EARSHOT_CACHE_MAX_CHARS: '200',
    });
  });

  it('passes overridden config values through', () => {
    const env = only(synth({
      backends: 'polly,kokoro',
      abWeights: 'kokoro=20,polly=80',
      abAllowOverride: 'true',
      abExperiment: 'voices-2026-12',
      failover: 'false',
      kokoroVoice: 'af_bella',
      pollyVoice: 'matthew',
      kokoroLanguageVoices: 'fr=ff_siwis,zh=zm_yunxi',
      pollyLanguageVoices: '{"fr": "remi"}',
      bedrockModelId: 'amazon.nova-micro-v1:0',
      systemPrompt: 'Speak like a pirate.',
      maxPromptChars: '1000',
      maxTextChars: '5000',
      idleReleaseMs: '200',
      metricsNamespace: 'earshot-staging',
      logLevel: 'debug',
      endpointName: 'kokoro-staging',
      cacheScope: 'owner',
      cacheMib: '32',
      cacheMaxChars: '120',
      cacheWarmup: '{"af_bella": ["Aye."]}',
      outputFormat: 'ulaw_8000',
    }).gatewayTemplate, 'AWS::Lambda::Function').Properties.Environment.Variables;
    assert.deepEqual(env, {
      EARSHOT_BACKENDS: 'polly,kokoro',
      EARSHOT_AB_WEIGHTS: 'polly=80,kokoro=20',
      EARSHOT_AB_ALLOW_OVERRIDE: 'true',
      EARSHOT_AB_EXPERIMENT: 'voices-2026-12',
      EARSHOT_FAILOVER: 'false',
      EARSHOT_SAGEMAKER_ENDPOINT: 'kokoro-staging',
      EARSHOT_KOKORO_VOICE: 'af_bella',
      EARSHOT_POLLY_VOICE: 'matthew',
      EARSHOT_KOKORO_LANGUAGE_VOICES: 'fr=ff_siwis,zh=zm_yunxi',
      EARSHOT_POLLY_LANGUAGE_VOICES: 'fr=remi',
      EARSHOT_AGENT: 'bedrock',
      EARSHOT_BEDROCK_MODEL_ID: 'amazon.nova-micro-v1:0',
      EARSHOT_SYSTEM_PROMPT: 'Speak like a pirate.',
      EARSHOT_MAX_PROMPT_CHARS: '1000',
      EARSHOT_MAX_TEXT_CHARS: '5000',
      EARSHOT_MAX_ANSWER_CHARS: '20000',
      EARSHOT_IDLE_RELEASE_MS: '200',
      EARSHOT_AMBIGUOUS_RELEASE_MS: '2000',
      EARSHOT_METRICS_NAMESPACE: 'earshot-staging',
      EARSHOT_INTERRUPT_TABLE: env.EARSHOT_INTERRUPT_TABLE,
      EARSHOT_CONVERSATION_SECRET_ID: env.EARSHOT_CONVERSATION_SECRET_ID,
      EARSHOT_INTERRUPT_POLL_MS: '250',
      EARSHOT_MAX_CONVERSATION_SECONDS: '280',
      EARSHOT_LOG: 'debug',
      EARSHOT_AUTH: 'none',
      EARSHOT_IAM_SESSION_OWNERS: 'false',
      EARSHOT_CLIENT_READ_TIMEOUT_MS: '30000',
      EARSHOT_KEEP_ALIVE_MS: '15000',
      EARSHOT_MAX_CONVERSATIONS_PER_OWNER: '4',
      EARSHOT_MAX_CHARS_PER_OWNER_HOUR: '30000',
      EARSHOT_MAX_INPUT_CHARS_PER_OWNER_HOUR: '300000',
      EARSHOT_MAX_REQUESTS_PER_OWNER_MINUTE: '30',
      EARSHOT_CEILING_CHARS_PER_HOUR: '300000',
      EARSHOT_CEILING_INPUT_CHARS_PER_HOUR: '3000000',
      EARSHOT_CEILING_REQUESTS_PER_HOUR: '20000',
      EARSHOT_TRUSTED_PROXIES: '',
      EARSHOT_BACKEND_CONVERSATIONS: 'polly=8',
      EARSHOT_CACHE: 'owner',
      EARSHOT_CACHE_MIB: '32',
      EARSHOT_CACHE_MAX_CHARS: '120',
      EARSHOT_CACHE_WARMUP: '{"af_bella": ["Aye."]}',
      EARSHOT_OUTPUT_FORMAT: 'ulaw_8000',
      ...UPSTREAM_LIMITS,
    });
  });

  it('grants the four item calls on the interrupt table the environment names, and nothing else of DynamoDB', () => {
    const { gatewayTemplate: t } = synth();
    const tables = t.findResources('AWS::DynamoDB::Table');
    assert.equal(Object.keys(tables).length, 1);
    const [logicalId, table] = Object.entries(tables)[0] as [string, { Properties: Record<string, unknown> }];
    assert.equal(table.Properties.BillingMode, 'PAY_PER_REQUEST');
    assert.deepEqual(table.Properties.TimeToLiveSpecification, { AttributeName: 'expires_at', Enabled: true });
    const dynamo = statements(t).filter((s) => actionsOf(s).some((a) => a.startsWith('dynamodb:')));
    assert.equal(dynamo.length, 1);
    assert.deepEqual([...actionsOf(dynamo[0])].sort(), ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem']);
    assert.deepEqual(resourcesOf(dynamo[0]), [`<GetAtt:${logicalId}.Arn>`]);
    const env = only(t, 'AWS::Lambda::Function').Properties.Environment.Variables;
    assert.deepEqual(env.EARSHOT_INTERRUPT_TABLE, { Ref: logicalId });
  });

  it('grants the endpoint the environment names', () => {
    const { gatewayTemplate: t } = synth({ endpointName: 'kokoro-staging' });
    const sm = statements(t).find((s) => actionsOf(s).includes('sagemaker:InvokeEndpoint'));
    assert.ok(sm);
    assert.deepEqual(resourcesOf(sm), [`arn:aws:sagemaker:${REGION}:${ACCOUNT}:endpoint/kokoro-staging`]);
  });
});

describe('outputs', () => {
  it('name the endpoint beside the URL', () => {
    const { gatewayTemplate: t } = synth();
    t.hasOutput('EndpointName', { Value: 'earshot-kokoro' });
    assert.equal(render(t.toJSON().Outputs.Backends.Value), 'kokoro,polly');
  });
});

describe('bring your own agent', () => {
  const envOf = (t: ReturnType<typeof synth>) => only(t.gatewayTemplate, 'AWS::Lambda::Function').Properties.Environment.Variables;

  it('points the Lambda at an OpenAI-compatible endpoint, with its key read from a secret it alone may read', () => {
    const s = synth({ agent: 'openai', openaiBaseUrl: 'https://llm.example.com/v1', openaiModel: 'gpt-4o-mini', agentTemperature: '0.3', agentMaxTokens: '400', agentKeySecret: 'earshot/openai' });
    const env = envOf(s);
    assert.equal(env.EARSHOT_AGENT, 'openai');
    assert.equal(env.EARSHOT_OPENAI_BASE_URL, 'https://llm.example.com/v1');
    assert.equal(env.EARSHOT_OPENAI_MODEL, 'gpt-4o-mini');
    assert.equal(env.EARSHOT_TEMPERATURE, '0.3');
    assert.equal(env.EARSHOT_MAX_TOKENS, '400');
    assert.equal(env.EARSHOT_AGENT_KEY_SECRET, 'earshot/openai');
    assert.equal(env.EARSHOT_OPENAI_API_KEY, undefined, 'the key itself never travels as a variable');
    const all = statements(s.gatewayTemplate);
    const secret = secretReads(s);
    assert.equal(secret.length, 1);
    assert.deepEqual(resourcesOf(secret[0]), [`arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:earshot/openai-??????`]);
    assert.ok(!all.some((st) => actionsOf(st).some((a) => a.startsWith('bedrock:'))), 'no Bedrock grant for another agent');
  });

  it('points the Lambda at an HTTP agent with its format, pointer and headers; a secret given by ARN is granted as given', () => {
    const arn = `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:agent-key-AbCdEf`;
    const s = synth({ agent: 'http', httpAgentUrl: 'https://agent.example.com/answer', httpAgentFormat: 'sse', httpAgentTextPointer: '/delta/text', httpAgentHeader: 'x-tenant: voice', httpAgentKeyHeader: 'authorization', agentKeySecret: arn });
    const env = envOf(s);
    assert.deepEqual(
      [env.EARSHOT_AGENT, env.EARSHOT_HTTP_AGENT_URL, env.EARSHOT_HTTP_AGENT_FORMAT, env.EARSHOT_HTTP_AGENT_TEXT_POINTER, env.EARSHOT_HTTP_AGENT_HEADER, env.EARSHOT_HTTP_AGENT_KEY_HEADER],
      ['http', 'https://agent.example.com/answer', 'sse', '/delta/text', 'x-tenant: voice', 'authorization'],
    );
    const secret = secretReads(s);
    assert.deepEqual(resourcesOf(secret[0]), [arn]);
  });

  it('points the Lambda at an agent on AgentCore Runtime, which alone it may invoke, at its endpoint', () => {
    const arn = `arn:aws:bedrock-agentcore:${REGION}:${ACCOUNT}:runtime/support_agent-AbCdEf1234`;
    const s = synth({ agent: 'agentcore', agentcoreRuntimeArn: arn, agentcoreQualifier: 'prod' });
    const env = envOf(s);
    assert.deepEqual([env.EARSHOT_AGENT, env.EARSHOT_AGENTCORE_RUNTIME_ARN, env.EARSHOT_AGENTCORE_QUALIFIER, env.EARSHOT_AGENTCORE_TEXT_POINTER], ['agentcore', arn, 'prod', '/data']);
    const found = statements(s.gatewayTemplate).filter((st) => actionsOf(st).includes('bedrock-agentcore:InvokeAgentRuntime'));
    assert.equal(found.length, 1);
    assert.deepEqual(resourcesOf(found[0]), [arn, `${arn}/runtime-endpoint/prod`]);
    const byDefault = statements(synth({ agent: 'agentcore', agentcoreRuntimeArn: arn }).gatewayTemplate).find((st) => actionsOf(st).includes('bedrock-agentcore:InvokeAgentRuntime'));
    assert.deepEqual(resourcesOf(byDefault!), [arn, `${arn}/runtime-endpoint/DEFAULT`]);
    assert.throws(() => synth({ agent: 'agentcore', agentcoreRuntimeArn: 'support_agent' }), /`agentcoreRuntimeArn` must be an AgentCore runtime ARN/);
  });

  it('refuses at synth what the gateway could not use', () => {
    assert.throws(() => synth({ agent: 'langchain' }), /`agent` must be one of bedrock, openai, http, agentcore/);
    assert.throws(() => synth({ agent: 'openai', openaiModel: '' }), /`openaiModel` must name the model/);
    assert.throws(() => synth({ agent: 'openai', openaiModel: 'm', openaiBaseUrl: 'api.openai.com' }), /`openaiBaseUrl` must be an http or https URL/);
    assert.throws(() => synth({ agent: 'http', httpAgentUrl: '' }), /`httpAgentUrl` must be an http or https URL/);
    assert.throws(() => synth({ httpAgentFormat: 'xml' }), /`httpAgentFormat` must be one of/);
    assert.throws(() => synth({ httpAgentTextPointer: 'delta.text' }), /`httpAgentTextPointer`/);
    assert.throws(() => synth({ httpAgentHeader: 'no colon' }), /`httpAgentHeader`/);
    assert.throws(() => synth({ httpAgentKeyHeader: 'x-api-key' }), /agentKeySecret names no secret/);
    assert.throws(() => synth({ agentTemperature: 'warm' }), /`agentTemperature`/);
  });
});

describe('the conversation secret', () => {
  it('makes one per deployment, tells the Lambda its name and lets the role alone read it', () => {
    for (const s of [synth(), synth({ pollyOnly: true }), synth({ authType: 'TOKEN', corsAllowedOrigins: 'https://app.example.com' })]) {
      const [id, secret] = Object.entries(s.gatewayTemplate.findResources('AWS::SecretsManager::Secret')).find(([name]) => name.startsWith('ConversationSecret'))!;
      assert.deepEqual(secret.Properties.GenerateSecretString, { ExcludePunctuation: true, PasswordLength: 64 }, '64 letters and digits: well over the 32 bytes the gateway asks');
      const env = only(s.gatewayTemplate, 'AWS::Lambda::Function').Properties.Environment.Variables;
      assert.ok(JSON.stringify(env.EARSHOT_CONVERSATION_SECRET_ID).includes(`"Ref":"${id}"`), `the Lambda is told this secret: ${JSON.stringify(env.EARSHOT_CONVERSATION_SECRET_ID)}`);
      assert.equal(env.EARSHOT_CONVERSATION_SECRET, undefined, 'the secret itself never travels as a variable');
      const read = statements(s.gatewayTemplate).filter((st) => st.Sid === 'ConversationSecret');
      assert.equal(read.length, 1);
      assert.deepEqual(actionsOf(read[0]), ['secretsmanager:GetSecretValue']);
      assert.deepEqual(read[0].Resource, { Ref: id });
    }
  });
});

describe('token mode and spend guards', () => {
  it('says what bounds the spend beside the alarms: the caps, with the budget priced, then the alarms', () => {
    const said = synth().gatewayTemplate.findOutputs('SpendGuards').SpendGuards.Value;
    assert.match(said, /^caps: 20 requests at once, conversations and interrupts together \(reservedConcurrency\); 4 live per caller; 30,000 characters per caller per rolling hour \(about \$\d+\.\d\d of Polly at \d{4}-\d\d-\d\d list prices\); 300,000 characters sent per caller per rolling hour \(the agent's input\); 30 requests per caller per minute\. alarms \(notify only\): 5,000 conversations an hour; 500,000 Polly characters an hour$/);
    const open = synth({ reservedConcurrency: '0', maxCharsPerOwnerHour: '0', maxInputCharsPerOwnerHour: '0', maxRequestsPerOwnerMinute: '0', alarmInvocationsPerHour: '0', alarmPollyCharactersPerHour: '0' }).gatewayTemplate.findOutputs('SpendGuards').SpendGuards.Value;
    assert.equal(open, 'caps: requests at once: no cap (reservedConcurrency 0); 4 live per caller; characters per caller: no budget; characters sent per caller: no budget; requests per caller: no cap. alarms (notify only): none');
    // Auth NONE: strangers are known by their address, and the caps say so.
    const strangers = synth({ authType: 'NONE', corsAllowedOrigins: 'https://demo.example.com' }).gatewayTemplate.findOutputs('SpendGuards').SpendGuards.Value;
    assert.match(strangers, /4 live per caller address; 30,000 characters per caller address per rolling hour .*; 30 requests per caller address per minute\./);
  });

  it('says what one stranger can spend in an hour at most where anyone may call, and only there', () => {
    const open = synth({ authType: 'NONE', corsAllowedOrigins: 'https://demo.example.com' }).gatewayTemplate.findOutputs('StrangerCeiling').StrangerCeiling.Value;
    // 30,000 characters at $30 a million: $0.90; 1,800 requests and 4 conversations held an hour.
    assert.match(open, /^One stranger \(one address, or one IPv6 \/64\) in an hour at most: 30,000 characters spoken \(\$0\.90 of Polly\); 300,000 characters sent to the agent \(about 75,000 input tokens, at the agent's price\); 1,800 requests, 4 at once \(\$\d+\.\d\d of Lambda at [\d,]+ MB\)\. Each new address adds as much; all callers together: 20 requests at once/);
    const unbounded = synth({ authType: 'NONE', corsAllowedOrigins: 'https://demo.example.com', maxCharsPerOwnerHour: '0' }).gatewayTemplate.findOutputs('StrangerCeiling').StrangerCeiling.Value;
    assert.match(unbounded, /in an hour: characters spoken: no limit;/, 'an unbounded line is said, and "at most" is not');
    assert.deepEqual(synth().gatewayTemplate.findOutputs('StrangerCeiling'), {}, 'IAM callers are no strangers');
  });

  it('names the table that keeps API keys for OpenAI clients in token mode, and only there', () => {
    const token = synth({ authType: 'TOKEN', corsAllowedOrigins: 'https://app.example.com' }).gatewayTemplate;
    const table = Object.keys(token.findResources('AWS::DynamoDB::Table'))[0];
    token.hasOutput('KeysTable', { Value: { Ref: table } });
    assert.deepEqual(synth().gatewayTemplate.findOutputs('KeysTable'), {}, 'IAM callers sign their requests: no keys');
  });

  it('says what all callers together can spend in an hour, and alarms when the ceiling refuses anyone', () => {
    const template = synth({ authType: 'NONE', corsAllowedOrigins: 'https://demo.example.com' }).gatewayTemplate;
    const said = template.findOutputs('DeploymentCeiling').DeploymentCeiling.Value;
    // 300,000 characters at $30 a million: $9.00.
    assert.match(said, /^All callers together in an hour at most: 300,000 characters spoken \(\$9\.00 of Polly\); 3,000,000 characters sent to the agent \(about 750,000 input tokens, at the agent's price\); 20,000 requests \(\$\d+\.\d\d of Lambda requests\); past it 503 spend_ceiling/);
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')).filter((a) => String(a.Properties.AlarmDescription).includes('spend ceiling'));
    assert.equal(alarms.length, 1, 'one alarm on the ceiling');
    const watched = (alarms[0].Properties.Metrics as { MetricStat?: { Metric: { MetricName: string; Dimensions: { Value: string }[] } } }[])
      .filter((m) => m.MetricStat !== undefined)
      .map((m) => `${m.MetricStat!.Metric.MetricName}/${m.MetricStat!.Metric.Dimensions[0].Value}`)
      .sort();
    assert.deepEqual(watched, ['SpendCeilingReached/characters', 'SpendCeilingReached/input', 'SpendCeilingReached/requests']);
    const off = synth({ ceilingCharsPerHour: '0', ceilingInputCharsPerHour: '0', ceilingRequestsPerHour: '0' }).gatewayTemplate;
    assert.match(off.findOutputs('DeploymentCeiling').DeploymentCeiling.Value, /characters spoken: no ceiling; characters sent to the agent: no ceiling; requests: no ceiling/);
    assert.equal(Object.values(off.findResources('AWS::CloudWatch::Alarm')).filter((a) => String(a.Properties.AlarmDescription).includes('spend ceiling')).length, 0);
  });

  it('passes the trusted proxies to the gateway, and refuses what is no CIDR', () => {
    const env = only(synth({ trustedProxies: '10.0.0.0/8,2600:9000::/28' }).gatewayTemplate, 'AWS::Lambda::Function').Properties.Environment.Variables;
    assert.equal(env.EARSHOT_TRUSTED_PROXIES, '10.0.0.0/8,2600:9000::/28');
    assert.throws(() => synth({ trustedProxies: 'proxy.example.com' }), /trustedProxies/);
  });

  const urlOf = (t: ReturnType<typeof synth>) => only(t.gatewayTemplate, 'AWS::Lambda::Url').Properties;
  const envOf = (t: ReturnType<typeof synth>) => only(t.gatewayTemplate, 'AWS::Lambda::Function').Properties.Environment.Variables;

  it('uploads the lexicon file with the deploy, names its object to the gateway and lets it read that object alone', () => {
    const file = path.join(os.tmpdir(), `earshot-lexicon-${process.pid}.lex`);
    fs.writeFileSync(file, 'kubectl = cube control\n');
    const s = synth({ lexiconFile: file, speakingRate: '1.25' });
    const env = envOf(s);
    assert.match(env.EARSHOT_LEXICON, /^s3:\/\/cdk-[a-z0-9]+-assets-\d+-[a-z0-9-]+\/[0-9a-f]{64}\.lex$/, 'the asset, named by its content');
    assert.equal(env.EARSHOT_SPEAKING_RATE, '1.25');
    const read = statements(s.gatewayTemplate).find((st) => st.Sid === 'LexiconObject');
    assert.deepEqual(read?.Action, 's3:GetObject');
    assert.match(JSON.stringify(read?.Resource), /[0-9a-f]{64}\.lex/, 'that object, not the bucket');
    const plain = envOf(synth());
    assert.equal(plain.EARSHOT_LEXICON, undefined);
    assert.equal(plain.EARSHOT_SPEAKING_RATE, undefined, "each voice's own rate");
    assert.throws(() => synth({ lexiconFile: '/nonexistent/lexicon.lex' }), /lexiconFile` names no file/);
    assert.throws(() => synth({ speakingRate: '3' }), /speakingRate` must be from 0\.5 to 2\.0/);
  });

  it('makes the URL public at the AWS level, with CORS for the listed origins, and the gateway check a token', () => {
    const s = synth({ authType: 'TOKEN', corsAllowedOrigins: 'https://app.example.com' });
    const url = urlOf(s);
    assert.equal(url.AuthType, 'NONE');
    assert.deepEqual(url.Cors.AllowOrigins, ['https://app.example.com']);
    assert.ok(url.Cors.AllowHeaders.includes('authorization'), 'the page sends its token in a header');
    for (const h of EXPOSED_HEADERS) assert.ok(url.Cors.ExposeHeaders.includes(h), h);
    const env = envOf(s);
    assert.equal(env.EARSHOT_AUTH, 'token');
    assert.equal(env.EARSHOT_TOKEN_AUDIENCE, 'earshot');
    assert.equal(env.EARSHOT_TOKEN_MAX_LIFETIME_SECONDS, '3600', 'tokens live an hour at most unless configured');
    // The stack's own secret of keys, which the role alone may read.
    const [secretId, keys] = Object.entries(s.gatewayTemplate.findResources('AWS::SecretsManager::Secret')).find(([id]) => id.startsWith('TokenKeys'))!;
    assert.ok(env.EARSHOT_TOKEN_KEYS_SECRET, 'the Lambda is told which secret holds the keys');
    const read = secretReads(s);
    assert.equal(read.length, 1);
    assert.deepEqual(read[0].Resource, { Ref: secretId });
    assert.equal(keys.Properties.GenerateSecretString.GenerateStringKey, 'k1');
    s.gatewayTemplate.hasOutput('TokenKeysSecret', {});
  });

  it('reads an existing secret of keys when one is named, and refuses a browser URL without origins', () => {
    const s = synth({ authType: 'TOKEN', corsAllowedOrigins: 'https://app.example.com', tokenKeysSecret: 'earshot/token-keys', tokenAudience: 'voice.example.com' });
    assert.deepEqual(Object.keys(s.gatewayTemplate.findResources('AWS::SecretsManager::Secret')).map((id) => id.replace(/[0-9A-F]{8}$/, '')), ['ConversationSecret']);
    const env = envOf(s);
    assert.deepEqual([env.EARSHOT_TOKEN_KEYS_SECRET, env.EARSHOT_TOKEN_AUDIENCE], ['earshot/token-keys', 'voice.example.com']);
    const read = secretReads(s);
    assert.deepEqual(resourcesOf(read[0]), [`arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:earshot/token-keys-??????`]);
    assert.equal(envOf(synth({ authType: 'TOKEN', corsAllowedOrigins: 'https://app.example.com', tokenMaxLifetimeSeconds: '900' })).EARSHOT_TOKEN_MAX_LIFETIME_SECONDS, '900');
    assert.throws(() => synth({ authType: 'TOKEN', corsAllowedOrigins: 'https://app.example.com', tokenMaxLifetimeSeconds: '31536000' }), /tokenMaxLifetimeSeconds/);
    assert.throws(() => synth({ authType: 'TOKEN', corsAllowedOrigins: '' }), /`corsAllowedOrigins` must list the browser origins allowed to call a public \(authType TOKEN\) URL/);
  });

  it('keeps IAM mode closed: signed callers only, no CORS, no token check', () => {
    const s = synth();
    assert.equal(urlOf(s).AuthType, 'AWS_IAM');
    assert.equal(urlOf(s).Cors, undefined);
    assert.equal(envOf(s).EARSHOT_AUTH, 'none');
  });

  it('outputs a policy for IAM callers that invokes only through the function URL', () => {
    const t = synth().gatewayTemplate;
    const fnId = onlyId(t, 'AWS::Lambda::Function');
    const doc = only(t, 'AWS::IAM::ManagedPolicy').Properties.PolicyDocument.Statement as Record<string, any>[];
    const url = doc.find((st) => st.Action === 'lambda:InvokeFunctionUrl');
    const direct = doc.find((st) => st.Action === 'lambda:InvokeFunction');
    assert.deepEqual(url?.Resource, { 'Fn::GetAtt': [fnId, 'Arn'] });
    assert.deepEqual(url?.Condition, { StringEquals: { 'lambda:FunctionUrlAuthType': 'AWS_IAM' } });
    // A direct invoke could carry a hand-made URL event naming another principal as the caller.
    assert.deepEqual(direct?.Condition, { Bool: { 'lambda:InvokedViaFunctionUrl': 'true' } });
    assert.equal(doc.length, 2);
    t.hasOutput('CallerPolicyArn', {});
    const token = synth({ authType: 'TOKEN', corsAllowedOrigins: 'https://app.example.com' }).gatewayTemplate;
    assert.equal(Object.keys(token.findResources('AWS::IAM::ManagedPolicy')).length, 0, 'no IAM callers, no caller policy');
  });

  it("outputs the gateway's log group for earshot ab", () => {
    const t = synth().gatewayTemplate;
    t.hasOutput('LogGroup', { Value: { Ref: onlyId(t, 'AWS::Logs::LogGroup') } });
  });

  it('caps simultaneous conversations when asked, and alarms on an hour of invocations and of Polly characters to a topic', () => {
    const fn = (t: ReturnType<typeof synth>) => only(t.gatewayTemplate, 'AWS::Lambda::Function').Properties;
    assert.equal(fn(synth()).ReservedConcurrentExecutions, 20, 'twenty conversations at once by default: a cap on the spend rate (README, reservedConcurrency)');
    assert.equal(fn(synth({ reservedConcurrency: '0' })).ReservedConcurrentExecutions, undefined, '0: unreserved, for accounts that cannot reserve');
    assert.equal(fn(synth({ reservedConcurrency: '25' })).ReservedConcurrentExecutions, 25);
    const alarms = Object.values(synth().gatewayTemplate.findResources('AWS::CloudWatch::Alarm')).map((a) => a.Properties);
    const invocations = alarms.find((a) => a.MetricName === 'Invocations');
    assert.ok(invocations);
    assert.deepEqual([invocations.Threshold, invocations.Period, invocations.Statistic, invocations.Namespace], [5000, 3600, 'Sum', 'AWS/Lambda']);
    const polly = alarms.find((a) => a.MetricName === 'BilledCharacters');
    assert.ok(polly);
    assert.deepEqual([polly.Threshold, polly.Period, polly.Namespace, polly.Dimensions], [500000, 3600, 'earshot', [{ Name: 'Backend', Value: 'polly' }]]);
    // Each alarm tells someone: it publishes to the stack's topic, which the configured address subscribes to.
    const topicId = onlyId(synth().gatewayTemplate, 'AWS::SNS::Topic');
    for (const alarm of alarms) assert.deepEqual(alarm.AlarmActions, [{ Ref: topicId }], `${alarm.MetricName}: no action`);
    assert.equal(Object.keys(synth().gatewayTemplate.findResources('AWS::SNS::Subscription')).length, 0, 'no address, no subscription');
    const mailed = only(synth({ alarmEmail: 'ops@example.com' }).gatewayTemplate, 'AWS::SNS::Subscription').Properties;
    assert.deepEqual([mailed.Protocol, mailed.Endpoint], ['email', 'ops@example.com']);
    synth().gatewayTemplate.hasOutput('AlarmTopicArn', {});
    // enforceSSL replaces SNS's default topic policy: CloudWatch must be let in, for this account's alarms only.
    const policy = only(synth().gatewayTemplate, 'AWS::SNS::TopicPolicy').Properties.PolicyDocument.Statement as Record<string, any>[];
    const publish = policy.find((st) => st.Sid === 'CloudWatchAlarmsPublish');
    assert.ok(publish, `no statement lets CloudWatch publish: ${JSON.stringify(policy)}`);
    assert.deepEqual([publish.Effect, publish.Principal, publish.Action], ['Allow', { Service: 'cloudwatch.amazonaws.com' }, 'sns:Publish']);
    assert.match(render(publish.Condition.ArnLike['aws:SourceArn']), new RegExp(`^arn:aws:cloudwatch:${REGION}:${ACCOUNT}:alarm:\\*$`));
    assert.equal(render(publish.Condition.StringEquals['aws:SourceAccount']), ACCOUNT);
    assert.ok(policy.some((st) => st.Effect === 'Deny' && st.Condition?.Bool?.['aws:SecureTransport'] === 'false'), 'SSL is still enforced');
    assert.throws(() => synth({ alarmEmail: 'not an address' }), /alarmEmail/);
    const quiet = synth({ alarmInvocationsPerHour: '0', alarmPollyCharactersPerHour: '0', ceilingCharsPerHour: '0', ceilingInputCharsPerHour: '0', ceilingRequestsPerHour: '0' }).gatewayTemplate;
    assert.equal(Object.keys(quiet.findResources('AWS::CloudWatch::Alarm')).length, 0);
    assert.equal(Object.keys(quiet.findResources('AWS::SNS::Topic')).length, 0, 'no alarm, no topic');
    assert.throws(() => synth({ reservedConcurrency: '-1' }), /`reservedConcurrency` must be between 0 and 10000/);
  });
});

describe('the sentence cache\'s shared tier', () => {
  it('is absent by default, and when on is a private bucket with a lifecycle rule the Lambda reads and writes under its prefix alone', () => {
    assert.equal(Object.keys(synth().gatewayTemplate.findResources('AWS::S3::Bucket')).length, 0);
    const t = synth({ cacheSharedTier: 'true', cacheSharedDays: '7' }).gatewayTemplate;
    const bucket = only(t, 'AWS::S3::Bucket');
    assert.deepEqual(bucket.Properties.LifecycleConfiguration.Rules, [{ Prefix: 'earshot-cache/', ExpirationInDays: 7, Status: 'Enabled' }]);
    assert.deepEqual(bucket.Properties.PublicAccessBlockConfiguration, { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true });
    const env = only(t, 'AWS::Lambda::Function').Properties.Environment.Variables;
    assert.equal(env.EARSHOT_CACHE_PREFIX, 'earshot-cache/');
    assert.deepEqual([env.EARSHOT_CACHE_SHARED_BACKENDS, env.EARSHOT_CACHE_FETCH_MS], ['polly', '150']);
    assert.deepEqual(env.EARSHOT_CACHE_BUCKET, { Ref: Object.keys(t.findResources('AWS::S3::Bucket'))[0] });
    const statements = Object.values(t.findResources('AWS::IAM::Policy')).flatMap((p: any) => p.Properties.PolicyDocument.Statement);
    const cache = statements.find((s: any) => s.Sid === 'SentenceCacheObjects');
    assert.deepEqual(cache.Action, ['s3:GetObject', 's3:PutObject']);
    assert.match(JSON.stringify(cache.Resource), /earshot-cache\/\*/);
    // Without ListBucket S3 answers a missing object 403, and every miss would read as a refusal.
    const list = statements.find((s: any) => s.Sid === 'SentenceCacheMisses');
    assert.equal(list.Action, 's3:ListBucket');
    assert.deepEqual(list.Condition, { StringLike: { 's3:prefix': 'earshot-cache/*' } });
    const others = statements.filter((s: any) => JSON.stringify(s.Action).includes('s3:') && !['SentenceCacheObjects', 'SentenceCacheMisses'].includes(s.Sid) && s.Principal === undefined);
    assert.deepEqual(others, [], 'no other S3 grant to the Lambda');
  });
});
