// Prints what a make target produced, in a few lines: the resources of each synthesized template
// (`templates DIR`) or the URL and endpoint of a deployment (`outputs FILE`, cdk deploy's --outputs-file).
// After a deploy it also asks SNS (through the aws CLI, where it is installed) who receives the spend
// alarms, and says plainly when no one does: an alarm that reaches no one only looks like a guard. After a
// deploy that failed or was stopped (`left`), it says which earshot stacks exist and what they cost an hour.
// Before a public deploy (`strangers`), what one stranger can spend in an hour at most.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { CDK_ROOT, DEFAULT_CONFIG_FILE, EarshotConfig, instancePricePerHour, readConfigFile, resolveConfig } from '../lib/config';
import { deploymentCeiling, strangerCeiling } from '../lib/spend-guards';

const [what, where] = process.argv.slice(2);

if (what === 'templates') {
  for (const file of fs.readdirSync(where).filter((f) => f.endsWith('.template.json')).sort()) {
    const template = JSON.parse(fs.readFileSync(path.join(where, file), 'utf8'));
    const types = Object.values(template.Resources as Record<string, { Type: string }>).map((r) => r.Type.replace(/^AWS::/, ''));
    console.log(`    ${path.basename(file, '.template.json')}: ${types.length} resources: ${types.join(', ')}`);
  }
} else if (what === 'outputs') {
  const outputs = JSON.parse(fs.readFileSync(where, 'utf8')) as Record<string, Record<string, string>>;
  for (const [stack, values] of Object.entries(outputs)) {
    for (const key of ['FunctionUrl', 'AuthType', 'EndpointName', 'LogGroup', 'SpendGuards', 'StrangerCeiling', 'DeploymentCeiling']) {
      if (values[key] !== undefined) console.log(`    ${stack} ${key}: ${values[key]}`);
    }
  }
  const topic = Object.values(outputs).find((values) => values.AlarmTopicArn !== undefined)?.AlarmTopicArn;
  if (topic !== undefined) console.log(alarmReceivers(topic));
} else if (what === 'left') {
  console.log(whatBills(process.argv.slice(3)));
} else if (what === 'strangers') {
  const said = strangersBeforeDeploy(process.argv.slice(3));
  if (said !== undefined) console.log(said);
} else {
  console.error('usage: report.ts templates DIR | outputs FILE | left [key=value ...] | strangers [key=value ...]');
  process.exit(2);
}

/** The configuration a deploy with these `key=value` settings (its context) uses; throws where the deploy would refuse it. */
function configOf(context: string[]): EarshotConfig {
  const settings: Record<string, string> = Object.fromEntries(context.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  const file = readConfigFile(settings.configFile ? path.resolve(CDK_ROOT, settings.configFile) : DEFAULT_CONFIG_FILE);
  return resolveConfig(file, (key) => settings[key], process.env.AWS_REGION ?? 'us-east-1');
}

/**
 * Before a deploy whose URL anyone may call (auth NONE): what one stranger can spend in an hour at most,
 * from the configuration the deploy will use, so the number is read before anything bills. Nothing for
 * other auth types, or for a configuration the deploy itself will refuse (it says why).
 */
function strangersBeforeDeploy(context: string[]): string | undefined {
  try {
    const config = configOf(context);
    if (config.authType !== 'NONE') return undefined;
    return `    authType NONE: anyone with the URL may call. ${strangerCeiling(config)}\n    ${deploymentCeiling(config)}`;
  } catch {
    return undefined;
  }
}

/**
 * After a deploy that did not finish: which earshot stacks exist now, what each costs an hour at list price,
 * and the one command that removes them. Asked of CloudFormation through the aws CLI where it is installed;
 * without it, what the deploy may have made. `context` is the deploy's own `key=value` settings.
 */
function whatBills(context: string[]): string {
  let endpoint = 'billed by the hour per instance, day and night (SageMaker pricing, real-time inference)';
  try {
    const config = configOf(context);
    const each = instancePricePerHour(config);
    endpoint = `${config.minInstances} × ${config.instanceType} at $${each.toFixed(2)} an hour each (list price): $${(config.minInstances * each).toFixed(2)} an hour, day and night`;
  } catch {
    // A configuration the deploy refused: the price is not known from it, the rest of the report stands.
  }
  const costs: Record<string, string> = {
    EarshotKokoroModel: `the Kokoro endpoint, ${endpoint}`,
    EarshotGateway: 'the gateway: billed per use (Lambda, Polly, DynamoDB on demand), nothing while no one calls',
  };
  const ask = (stack: string) => spawnSync('aws', ['cloudformation', 'describe-stacks', '--stack-name', stack, '--query', 'Stacks[0].StackStatus', '--output', 'text'], { encoding: 'utf8', timeout: 30_000 });
  const lines = ['earshot: the deploy did not finish.'];
  if ((ask('EarshotGateway').error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') {
    lines.push('    without the aws CLI what exists cannot be listed; the deploy may have made:');
    for (const [stack, cost] of Object.entries(costs)) lines.push(`      ${stack}: ${cost}`);
  } else {
    const found = Object.keys(costs).flatMap((stack) => {
      const r = ask(stack);
      const status = r.status === 0 ? r.stdout.trim() : '';
      return status && status !== 'DELETE_COMPLETE' ? [`      ${stack} (${status}): ${costs[stack]}`] : [];
    });
    if (found.length === 0) {
      lines.push('    nothing of earshot exists in this account and Region: nothing bills');
      return lines.join('\n');
    }
    lines.push('    what exists now, and bills while it does:', ...found);
  }
  lines.push('    remove it all with: make destroy   (or fix what failed, above, and run make deploy again)');
  return lines.join('\n');
}

/** Who the spend alarms reach, in one line: confirmed subscriptions, ones awaiting confirmation, or no one. */
function alarmReceivers(topic: string): string {
  const region = topic.split(':')[3];
  const r = spawnSync('aws', ['sns', 'list-subscriptions-by-topic', '--topic-arn', topic, '--region', region, '--output', 'json'], { encoding: 'utf8', timeout: 30_000 });
  if ((r.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') return `    the spend alarms publish to ${topic}: subscribe whoever must know (the aws CLI is not installed to ask who is)`;
  if (r.status !== 0) return `    the spend alarms publish to ${topic} (who receives them could not be asked: ${(r.stderr || String(r.error ?? '')).trim().split('\n')[0]})`;
  let subscriptions: { Protocol: string; Endpoint: string; SubscriptionArn: string }[];
  try {
    subscriptions = JSON.parse(r.stdout).Subscriptions ?? [];
  } catch {
    return `    the spend alarms publish to ${topic} (the aws CLI's answer about who receives them could not be read)`;
  }
  const confirmed = subscriptions.filter((s) => s.SubscriptionArn.startsWith('arn:'));
  const pending = subscriptions.filter((s) => !s.SubscriptionArn.startsWith('arn:'));
  if (confirmed.length > 0) return `    the spend alarms reach ${confirmed.map((s) => `${s.Protocol}:${s.Endpoint}`).join(', ')}`;
  if (pending.length > 0) {
    return `warning: no one receives the spend alarms yet: ${pending.map((s) => s.Endpoint).join(', ')} must confirm the subscription (SNS sent an e-mail)`;
  }
  return [
    `warning: no one is subscribed to the spend alarms (${topic}): they will fire and reach no one.`,
    `         set alarmEmail in infra/cdk/earshot.config.json (or CDK_ARGS='-c alarmEmail=you@example.com') and deploy again,`,
    `         or: aws sns subscribe --topic-arn ${topic} --protocol email --notification-endpoint you@example.com`,
  ].join('\n');
}
