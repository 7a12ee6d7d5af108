// What `make deploy` asks AWS before it creates anything: does this Region offer what the configuration needs?
// AWS publishes no single list, and its Region tables change, so the answers come from AWS itself through the
// aws CLI, in the deploying account and Region:
// - Polly: bidirectional streaming needs the generative engine ("Synthesizing speech with bidirectional
//   streaming", Polly developer guide), so `polly describe-voices --engine generative` must list the configured
//   voice. Having generative voices does not prove the streaming operation, and no API lists where
//   StartSpeechSynthesisStream is offered, so the deploying credentials open one stream and close it at once
//   (lib/polly-probe.ts: the aws CLI cannot call the operation, the JavaScript SDK can): an endpoint that does not
//   know the operation stops the deploy. Where the probe gets no verdict (no permission, no connection), the
//   Region is held to the dated list below, from AWS's documents; one not on it is said (not stopped: the list
//   may be behind AWS), and `make doctor` after the deploy speaks through the Polly arm to prove it.
// - Bedrock (only when the agent is Bedrock): `bedrock get-foundation-model` (or `get-inference-profile` for a
//   `us.`/`eu.`/… id) answers only where the model or profile is offered, and a foundation model must list
//   `ON_DEMAND` in its `inferenceTypesSupported`: most models, Nova Lite included, are invoked on demand in most
//   Regions only through a cross-Region inference profile ("on-demand throughput isn't supported"), which the
//   check then names for the Region's geography and confirms exists.
// - SageMaker: the service quota "<instance type> for endpoint usage" exists where the instance type is offered,
//   and must allow `maxInstances` (what autoscaling may reach). ListServiceQuotas lists a quota's applied value
//   only once one is set, so where it is absent the AWS default (ListAWSDefaultServiceQuotas) is the answer. No API reports bidirectional streaming by Region (the SDK's endpoint
//   rules resolve every Region of the partition to runtime.sagemaker.<region>.amazonaws.com:8443), so that one
//   is named as a thing to confirm in the SageMaker documentation, not checked.
// - Lambda (when `reservedConcurrency` is set): a function may reserve up to the account's concurrency less the
//   100 Lambda keeps for functions without a reservation ("Configuring reserved concurrency", Lambda developer
//   guide), so `lambda get-account-settings` must report a `ConcurrentExecutions` of at least 100 more than
//   the figure; new accounts start with 10, where no function can reserve any. On a first deploy (no
//   EarshotGateway stack yet) the unreserved figure must also leave it, less what other functions reserve;
//   on a redeploy this function's own reservation is already subtracted from that figure, so only the
//   account's limit is held to it.
// Each check that cannot be made (no permission to ask) is reported as unchecked, never as missing.
import { EarshotConfig, deployedBackends } from './config';
import { inferenceProfile, regionalProfilePrefix } from './arns';
import { PollyProbe } from './polly-probe';

/** One aws CLI run: its exit status and output. */
export interface Answer {
  readonly ok: boolean;
  readonly stdout: string;
  readonly stderr: string;
}
export type Ask = (args: string[]) => Answer;

export interface Preflight {
  /** What the Region lacks: the deploy stops. */
  readonly missing: string[];
  /** What could not be asked: said, the deploy goes on. */
  readonly unchecked: string[];
  /** What was found that the deployer should know (a quota beside the cap that depends on it): said. */
  readonly notes: string[];
  /**
   * Settings the deploy takes in place of the configuration's, because the account cannot hold them (each said
   * in `notes`): `-c key=value` for cdk, which `make deploy` passes on.
   */
  readonly adjusted: Record<string, string>;
}

/** What the deployer named on the command line (`-c key=value`): a figure chosen there is held to, never adjusted. */
export interface Chosen {
  readonly reservedConcurrency?: boolean;
}

/**
 * Polly's concurrency for generative voices by default: "Amazon Polly supports up to 26 concurrent requests"
 * (Quotas in Amazon Polly, "Concurrent requests"). The name Service Quotas gives it is not in the documents
 * read here, so an applied value is found by what its name says (generative, concurrent).
 */
export const POLLY_GENERATIVE_CONCURRENCY_DEFAULT = 26;
/** Polly streams one conversation holds at most: the sentence speaking, the next opened ahead, one closing. */
export const POLLY_STREAMS_PER_CONVERSATION = 3;

/**
 * Where Polly's StartSpeechSynthesisStream is documented, with the source of each and the date of what was
 * read. AWS's Polly document history, entry of 2026-04-20 ("Bidirectional streaming available in new
 * regions"): "now available in two additional AWS Regions: Europe (London) and Canada (Central)". The launch
 * Regions (API added 2026-03-19) are not named in the parts of AWS's guide read here; the four below are the
 * ones published lists of the launch give (and the two additions imply a set before them). Checked
 * 2026-12-04. A Region outside the list is said, never refused: AWS may have added it since.
 */
export const POLLY_STREAMING_REGIONS: Readonly<Record<string, string>> = {
  'us-east-1': 'launch, 2026-03-19',
  'us-west-2': 'launch, 2026-03-19',
  'eu-central-1': 'launch, 2026-03-19',
  'ap-southeast-1': 'launch, 2026-03-19',
  'eu-west-2': 'Polly document history, 2026-04-20',
  'ca-central-1': 'Polly document history, 2026-04-20',
};
export const POLLY_STREAMING_REGIONS_AS_OF = '2026-12-04';

/** The concurrency Lambda keeps unreserved in every account ("Configuring reserved concurrency"). */
export const LAMBDA_UNRESERVED_MINIMUM = 100;

const NOT_FOUND = /ResourceNotFoundException|ValidationException|could not be found|not found|does not exist|Could not connect to the endpoint URL/i;

/** Polly's voice id for earshot's voice name (`ruth` → `Ruth`). */
export const pollyVoiceId = (name: string): string => name.charAt(0).toUpperCase() + name.slice(1);

/**
 * `probe` is what opening one Polly stream in the Region found (bin/preflight.ts runs it when Polly is
 * deployed); without one, the dated list alone speaks for the Region.
 */
export function preflight(c: EarshotConfig, region: string, ask: Ask, probe?: PollyProbe, chosen: Chosen = {}): Preflight {
  const missing: string[] = [];
  const unchecked: string[] = [];
  const notes: string[] = [];
  const adjusted: Record<string, string> = {};
  const run = (args: string[]) => ask([...args, '--region', region, '--output', 'json']);

  if (deployedBackends(c).includes('polly')) {
    const voice = pollyVoiceId(c.pollyVoice);
    const a = run(['polly', 'describe-voices', '--engine', 'generative']);
    if (!a.ok && !NOT_FOUND.test(a.stderr)) {
      unchecked.push(`Polly generative voices (aws polly describe-voices failed: ${firstLine(a.stderr)})`);
    } else {
      const ids = a.ok ? ((JSON.parse(a.stdout).Voices ?? []) as { Id: string }[]).map((v) => v.Id) : [];
      if (ids.length === 0) missing.push(`Polly's generative engine, which bidirectional streaming needs, is not offered in ${region} (or deploy with backends=kokoro)`);
      else if (!ids.includes(voice)) missing.push(`the Polly generative voice ${voice} (pollyVoice) is not offered in ${region}; it offers ${ids.join(', ')}`);
    }
    if (probe?.kind === 'absent') {
      missing.push(
        `Polly bidirectional streaming (StartSpeechSynthesisStream) in ${region}: the Region's Polly endpoint does not know the operation ` +
          `(${probe.detail}); deploy in a Region that offers it (${Object.keys(POLLY_STREAMING_REGIONS).join(', ')}) or with backends=kokoro`,
      );
    } else if (probe?.kind !== 'offered') {
      if (probe) unchecked.push(`Polly bidirectional streaming by opening a stream (${probe.detail})`);
      if (POLLY_STREAMING_REGIONS[region] === undefined) {
        unchecked.push(
          `Polly bidirectional streaming in ${region}: not among the Regions AWS's documents named by ${POLLY_STREAMING_REGIONS_AS_OF} ` +
            `(${Object.keys(POLLY_STREAMING_REGIONS).join(', ')}); where it is not offered the Polly arm fails and failover hides it: ` +
            `run make doctor after the deploy (it speaks through each arm), or see "Generative voices" in the Polly developer guide`,
        );
      }
    }
  }

  if (deployedBackends(c).includes('polly')) checkPollyQuota(c, region, run, notes, unchecked);

  if (c.agent === 'bedrock') checkBedrock(c, region, run, missing, unchecked);

  if (c.reservedConcurrency > 0) {
    const a = run(['lambda', 'get-account-settings']);
    if (!a.ok) {
      unchecked.push(`the account's Lambda concurrency, for reservedConcurrency ${c.reservedConcurrency} (aws lambda get-account-settings failed: ${firstLine(a.stderr)})`);
    } else {
      const account = JSON.parse(a.stdout).AccountLimit ?? {};
      const limit = account.ConcurrentExecutions;
      const unreserved = account.UnreservedConcurrentExecutions;
      const fix = `deploy with -c reservedConcurrency=0 (no cap on conversations at once; the per-caller limits and the spend alarms remain), a smaller figure, or request a higher "Concurrent executions" quota (Service Quotas, AWS Lambda)`;
      const tooMany: string[] = [];
      if (
        typeof limit === 'number' &&
        limit - LAMBDA_UNRESERVED_MINIMUM >= c.reservedConcurrency &&
        typeof unreserved === 'number' &&
        unreserved - LAMBDA_UNRESERVED_MINIMUM < c.reservedConcurrency &&
        !run(['cloudformation', 'describe-stacks', '--stack-name', 'EarshotGateway']).ok
      ) {
        tooMany.push(
          `reservedConcurrency ${c.reservedConcurrency}: other functions already reserve ${limit - unreserved} of the account's ${limit} in ${region}, ` +
            `and Lambda keeps ${LAMBDA_UNRESERVED_MINIMUM} unreserved, so at most ${Math.max(0, unreserved - LAMBDA_UNRESERVED_MINIMUM)} can be reserved`,
        );
      }
      if (typeof limit === 'number' && limit - LAMBDA_UNRESERVED_MINIMUM < c.reservedConcurrency) {
        tooMany.push(
          `reservedConcurrency ${c.reservedConcurrency}: the account's Lambda concurrency in ${region} is ${limit}, and Lambda keeps ${LAMBDA_UNRESERVED_MINIMUM} of it unreserved, ` +
            `so ${limit > LAMBDA_UNRESERVED_MINIMUM ? `at most ${limit - LAMBDA_UNRESERVED_MINIMUM} can be reserved` : 'no function can reserve any'}`,
        );
      }
      if (tooMany.length > 0 && chosen.reservedConcurrency) {
        // The deployer named the figure: held to it.
        missing.push(...tooMany.map((why) => `${why}: ${fix}`));
      } else if (tooMany.length > 0) {
        // The configuration's figure, which a new account (10 concurrent executions) cannot hold: none is reserved.
        adjusted.reservedConcurrency = '0';
        notes.push(
          ...tooMany.map(
            (why) =>
              `${why}: this deploy reserves none (reservedConcurrency=0: no cap on conversations at once; the per-caller limits, ` +
              `the deployment's hourly budgets and the spend alarms remain). To keep the cap, request a higher "Concurrent executions" ` +
              `quota (Service Quotas, AWS Lambda) and deploy again, or name a figure the account holds with -c reservedConcurrency=N`,
          ),
        );
      }
    }
  }

  if (!c.pollyOnly) {
    const name = `${c.instanceType} for endpoint usage`;
    const q = run(['service-quotas', 'list-service-quotas', '--service-code', 'sagemaker']);
    let quota: { Value: number } | undefined;
    if (!q.ok) {
      unchecked.push(`the SageMaker quota "${name}" (aws service-quotas failed: ${firstLine(q.stderr)})`);
    } else {
      quota = quotaNamed(q.stdout, name);
      if (!quota) {
        const d = run(['service-quotas', 'list-aws-default-service-quotas', '--service-code', 'sagemaker']);
        if (d.ok) quota = quotaNamed(d.stdout, name);
        else unchecked.push(`the default SageMaker quota "${name}" (aws service-quotas failed: ${firstLine(d.stderr)})`);
      }
      if (!quota) missing.push(`SageMaker offers no ${c.instanceType} endpoints in ${region} (no quota "${name}"): choose another instanceType or Region`);
      else if (quota.Value < c.maxInstances) {
        missing.push(`the SageMaker quota "${name}" is ${quota.Value} in ${region}, below maxInstances ${c.maxInstances}: request an increase in the Service Quotas console (or lower maxInstances)`);
      }
    }
    unchecked.push(`SageMaker bidirectional streaming in ${region}: no API reports it; the SageMaker documentation on bidirectional streaming lists its Regions`);
    const deployed = checkInstanceTypeChange(c, run, missing, unchecked);
    // A new image or model for a deployed endpoint is a blue/green update: SageMaker brings up the new fleet
    // beside the old before it moves traffic, so the quota must hold both (at most 2 × maxInstances).
    if (deployed && quota && quota.Value >= c.maxInstances && quota.Value < 2 * c.maxInstances) {
      notes.push(
        `the SageMaker quota "${name}" is ${quota.Value} in ${region}: a redeploy that changes the Kokoro image or model brings up a new fleet beside ` +
          `the running one (up to ${2 * c.maxInstances} instances at maxInstances ${c.maxInstances}) and fails past the quota, rolled back with the old ` +
          `endpoint serving; request ${2 * c.maxInstances} in the Service Quotas console before changing the image`,
      );
    }
  }
  return { missing, unchecked, notes, adjusted };
}

/**
 * A new `instanceType` for a deployed endpoint. The endpoint is an autoscaling target, and SageMaker refuses
 * to change the instance type of one ("Update endpoints that use auto scaling", SageMaker developer guide:
 * the update fails until its scaling policies are deleted and the variant deregistered), so CloudFormation's
 * update would fail after minutes with the stack rolled back. A new `endpointName` makes it a new endpoint
 * (and scaling target) beside the old one instead: the old serves until the new one is in service, then
 * CloudFormation deletes it. The deployed type is the model stack's `InstanceType` output. Returns whether the
 * configured endpoint is deployed already.
 */
function checkInstanceTypeChange(c: EarshotConfig, run: (args: string[]) => Answer, missing: string[], unchecked: string[]): boolean {
  const a = run(['cloudformation', 'describe-stacks', '--stack-name', 'EarshotKokoroModel']);
  if (!a.ok) {
    if (!NOT_FOUND.test(a.stderr)) unchecked.push(`whether the endpoint's instance type changes (aws cloudformation describe-stacks failed: ${firstLine(a.stderr)})`);
    return false; // a first deploy: nothing to change
  }
  const outputs = Object.fromEntries(((JSON.parse(a.stdout).Stacks?.[0]?.Outputs ?? []) as { OutputKey: string; OutputValue: string }[]).map((o) => [o.OutputKey, o.OutputValue]));
  if (outputs.EndpointName !== c.endpointName) return false; // a new endpoint already: no update of the old
  if (outputs.InstanceType === undefined) {
    unchecked.push(`whether the endpoint's instance type changes: the deployed model stack predates its InstanceType output (to change instanceType, change endpointName with it: SageMaker refuses to change the instance type of an endpoint under autoscaling)`);
  } else if (outputs.InstanceType !== c.instanceType) {
    const renamed = `${c.endpointName}-${c.instanceType.split('.').slice(1).join('-')}`.slice(0, 63).replace(/-+$/, '');
    missing.push(
      `instanceType ${c.instanceType}: the endpoint ${c.endpointName} runs ${outputs.InstanceType} as an autoscaling target, and SageMaker refuses to change ` +
        `the instance type of one (the update would fail after minutes and roll back). Deploy it as a new endpoint beside the old: add -c endpointName=${renamed}. ` +
        `The old endpoint serves until the new one is in service (10-15 minutes), then is deleted; Kokoro conversations fail over to the other arm for the minute the gateway takes to follow`,
    );
  }
  return true;
}

/**
 * Polly's concurrency quota beside the cap the gateway keeps (`pollyConversations`, up to 3 streams each):
 * an applied value where Service Quotas lists one (ListServiceQuotas lists only applied values), else the
 * documented default. Said, never stopping the deploy: past the quota Polly throttles and the failover
 * spills to the other arm, and the gateway's own cap answers 503 before that.
 */
function checkPollyQuota(c: EarshotConfig, region: string, run: (args: string[]) => Answer, notes: string[], unchecked: string[]): void {
  const q = run(['service-quotas', 'list-service-quotas', '--service-code', 'polly']);
  if (!q.ok) {
    unchecked.push(`Polly's concurrency quota for generative voices (aws service-quotas failed: ${firstLine(q.stderr)})`);
    return;
  }
  const applied = ((JSON.parse(q.stdout).Quotas ?? []) as { QuotaName: string; Value: number }[]).find((x) => /generative/i.test(x.QuotaName) && /concurren/i.test(x.QuotaName));
  const quota = applied?.Value ?? POLLY_GENERATIVE_CONCURRENCY_DEFAULT;
  const source = applied ? `"${applied.QuotaName}" applied in ${region}` : `the default, none applied in ${region}`;
  const fits = Math.floor(quota / POLLY_STREAMS_PER_CONVERSATION);
  if (c.pollyConversations === 0) {
    notes.push(`Polly allows ${quota} concurrent generative requests (${source}) and pollyConversations is 0 (no cap): past about ${fits} conversations at once Polly throttles; set -c pollyConversations=${fits}`);
  } else if (c.pollyConversations * POLLY_STREAMS_PER_CONVERSATION > quota) {
    notes.push(`pollyConversations ${c.pollyConversations} holds up to ${c.pollyConversations * POLLY_STREAMS_PER_CONVERSATION} Polly streams, above its ${quota} concurrent generative requests (${source}): Polly will throttle first; set -c pollyConversations=${fits} or raise the quota`);
  } else {
    notes.push(`Polly allows ${quota} concurrent generative requests (${source}); pollyConversations ${c.pollyConversations} holds up to ${c.pollyConversations * POLLY_STREAMS_PER_CONVERSATION}${fits > c.pollyConversations ? ` (the quota would take -c pollyConversations=${fits})` : ''}`);
  }
}

const quotaNamed = (stdout: string, name: string): { Value: number } | undefined =>
  ((JSON.parse(stdout).Quotas ?? []) as { QuotaName: string; Value: number }[]).find((x) => x.QuotaName === name);


function checkBedrock(c: EarshotConfig, region: string, run: (args: string[]) => Answer, missing: string[], unchecked: string[]): void {
  const profile = inferenceProfile(c.bedrockModelId);
  const model = profile
    ? run(['bedrock', 'get-inference-profile', '--inference-profile-identifier', c.bedrockModelId])
    : run(['bedrock', 'get-foundation-model', '--model-identifier', c.bedrockModelId]);
  if (!model.ok) {
    if (NOT_FOUND.test(model.stderr)) {
      missing.push(`the Bedrock ${profile ? 'inference profile' : 'model'} ${c.bedrockModelId} (bedrockModelId) is not offered in ${region}: 'aws bedrock list-${profile ? 'inference-profiles' : 'foundation-models'} --region ${region}' lists those that are`);
    } else {
      unchecked.push(`the Bedrock model ${c.bedrockModelId} (${firstLine(model.stderr)})`);
    }
  } else if (!profile) {
    const details = JSON.parse(model.stdout).modelDetails ?? {};
    if (details.modelLifecycle?.status === 'LEGACY') unchecked.push(`the Bedrock model ${c.bedrockModelId} is LEGACY in ${region}: it will reach end of life; consider a newer one`);
    if (details.responseStreamingSupported === false) missing.push(`the Bedrock model ${c.bedrockModelId} does not stream responses, which ConverseStream needs`);
    const inference = details.inferenceTypesSupported as string[] | undefined;
    if (inference && !inference.includes('ON_DEMAND')) {
      const suggested = `${regionalProfilePrefix(region) ?? 'global'}.${c.bedrockModelId}`;
      const p = run(['bedrock', 'get-inference-profile', '--inference-profile-identifier', suggested]);
      missing.push(
        p.ok
          ? `the Bedrock model ${c.bedrockModelId} is not invoked on demand in ${region} (only ${inference.join(', ')}): deploy with -c bedrockModelId=${suggested}, its cross-Region inference profile here`
          : `the Bedrock model ${c.bedrockModelId} is not invoked on demand in ${region} (only ${inference.join(', ')}), and no inference profile ${suggested} answers: 'aws bedrock list-inference-profiles --region ${region}' lists those that do`,
      );
    }
  }
}

const firstLine = (s: string): string => s.trim().split('\n')[0] || 'no output';
