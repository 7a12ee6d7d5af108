// The few questions the deploy's preflight asks AWS, answered through the AWS SDK for JavaScript the CDK app
// already ships, for a machine without the aws CLI (a laptop, a fresh CI runner). It takes the aws CLI's own
// arguments and answers in its shape: the operation's output as JSON on stdout and exit 0, or on stderr
// "An error occurred (Code) when calling the Operation operation: message" and exit 254, as the CLI does. So
// lib/preflight.ts reads one kind of answer whichever asked, and a new account's 10 concurrent executions stop
// the deploy before anything is created whether or not the CLI is installed.
//
// Asked this way: every question the preflight asks (the account's Lambda concurrency, whether a stack exists,
// Polly's generative voices, the Bedrock model or inference profile, the service quotas). A question added to
// the preflight and not here answers that it needs the aws CLI (exit 252, the CLI's own code for bad
// arguments), which the preflight reports as not checked, never as missing. Credentials and Region come from
// where the SDK finds them (the environment, ~/.aws), the endpoint from AWS_ENDPOINT_URL_<SERVICE> as the SDK
// reads it. Each question is a process of its own (the preflight asks synchronously): about half a
// second of node and ts-node start each (measured here), a few seconds in all, before a deploy of minutes.
import { BedrockClient, GetFoundationModelCommand, GetInferenceProfileCommand } from '@aws-sdk/client-bedrock';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { GetAccountSettingsCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { DescribeVoicesCommand, Engine, PollyClient } from '@aws-sdk/client-polly';
import { ServiceQuotasClient, paginateListAWSDefaultServiceQuotas, paginateListServiceQuotas } from '@aws-sdk/client-service-quotas';

/** The value of `--name` in the CLI's arguments. */
const option = (args: string[], name: string): string | undefined => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};

/** One question: its operation's name (as errors name it) and the call that answers it. */
interface Question {
  readonly operation: string;
  readonly answer: () => Promise<object>;
}

function question(args: string[]): Question | undefined {
  const region = option(args, '--region');
  const [service, verb] = args;
  if (service === 'lambda' && verb === 'get-account-settings') {
    return { operation: 'GetAccountSettings', answer: () => new LambdaClient({ region }).send(new GetAccountSettingsCommand({})) };
  }
  if (service === 'cloudformation' && verb === 'describe-stacks') {
    const StackName = option(args, '--stack-name');
    return { operation: 'DescribeStacks', answer: () => new CloudFormationClient({ region }).send(new DescribeStacksCommand({ StackName })) };
  }
  if (service === 'service-quotas' && (verb === 'list-service-quotas' || verb === 'list-aws-default-service-quotas')) {
    // The CLI gathers every page; so does this.
    const ServiceCode = option(args, '--service-code');
    const applied = verb === 'list-service-quotas';
    return {
      operation: applied ? 'ListServiceQuotas' : 'ListAWSDefaultServiceQuotas',
      answer: async () => {
        const client = { client: new ServiceQuotasClient({ region }) };
        const pages = applied ? paginateListServiceQuotas(client, { ServiceCode }) : paginateListAWSDefaultServiceQuotas(client, { ServiceCode });
        const Quotas = [];
        for await (const page of pages) Quotas.push(...(page.Quotas ?? []));
        return { Quotas };
      },
    };
  }
  if (service === 'bedrock' && verb === 'get-foundation-model') {
    const modelIdentifier = option(args, '--model-identifier');
    return { operation: 'GetFoundationModel', answer: () => new BedrockClient({ region }).send(new GetFoundationModelCommand({ modelIdentifier })) };
  }
  if (service === 'bedrock' && verb === 'get-inference-profile') {
    const inferenceProfileIdentifier = option(args, '--inference-profile-identifier');
    return { operation: 'GetInferenceProfile', answer: () => new BedrockClient({ region }).send(new GetInferenceProfileCommand({ inferenceProfileIdentifier })) };
  }
  if (service === 'polly' && verb === 'describe-voices') {
    const engine = option(args, '--engine') as Engine | undefined;
    return { operation: 'DescribeVoices', answer: () => new PollyClient({ region }).send(new DescribeVoicesCommand({ Engine: engine })) };
  }
  return undefined;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const q = question(args);
  if (q === undefined) {
    console.error(`aws ${args.slice(0, 2).join(' ')}: this question needs the aws CLI (it is not installed)`);
    process.exit(252);
  }
  try {
    const { $metadata: _metadata, ...output } = (await q.answer()) as { $metadata?: unknown };
    console.log(JSON.stringify(output));
  } catch (e) {
    const error = e as { name?: string; Code?: string; message?: string };
    console.error(`An error occurred (${error.Code ?? error.name ?? 'Error'}) when calling the ${q.operation} operation: ${(error.message ?? String(e)).split('\n')[0]}`);
    process.exit(254);
  }
}

void main();
