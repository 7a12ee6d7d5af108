// Prints what a make target produced, in a few lines: the resources of each synthesized template
// (`templates DIR`) or the URL and endpoint of a deployment (`outputs FILE`, cdk deploy's --outputs-file).
// After a deploy it also asks SNS (through the aws CLI, where it is installed) who receives the spend
// alarms, and says plainly when no one does: an alarm that reaches no one only looks like a guard.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

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
    for (const key of ['FunctionUrl', 'AuthType', 'EndpointName', 'LogGroup', 'SpendGuards']) {
      if (values[key] !== undefined) console.log(`    ${stack} ${key}: ${values[key]}`);
    }
  }
  const topic = Object.values(outputs).find((values) => values.AlarmTopicArn !== undefined)?.AlarmTopicArn;
  if (topic !== undefined) console.log(alarmReceivers(topic));
} else {
  console.error('usage: report.ts templates DIR | outputs FILE');
  process.exit(2);
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
