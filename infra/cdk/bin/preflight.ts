// `make check-deploy` runs this with the deploying credentials: it asks AWS, through the aws CLI (and for Polly's
// streaming, one stream opened through the SDK), whether the Region offers what earshot.config.json needs
// (lib/preflight.ts), and stops the deploy when it does not. Without the aws CLI the questions that can stop a
// first deploy go through the SDK instead (bin/sdk-aws.ts, which answers in the CLI's shape); the rest are said
// as not checked.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { CDK_ROOT, DEFAULT_CONFIG_FILE, deployedBackends, readConfigFile, resolveConfig } from '../lib/config';
import { PollyProbe, probePollyStream } from '../lib/polly-probe';
import { Answer, preflight, pollyVoiceId } from '../lib/preflight';

// The same settings as the CDK app: earshot.config.json (or configFile=…) and the -c key=value overrides.
const [region, ...contextArgs] = process.argv.slice(2);
if (!region) {
  console.error('usage: preflight.ts REGION [key=value ...]');
  process.exit(2);
}
const context: Record<string, string> = Object.fromEntries(contextArgs.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
const file = readConfigFile(context.configFile ? path.resolve(CDK_ROOT, context.configFile) : DEFAULT_CONFIG_FILE);
const config = resolveConfig(file, (key) => context[key], region);
const cliInstalled = (spawnSync('aws', ['--version'], { encoding: 'utf8', timeout: 30_000 }).error as NodeJS.ErrnoException | undefined)?.code !== 'ENOENT';
const [program, programArgs] = cliInstalled
  ? ['aws', []]
  : [process.execPath, ['--require', 'ts-node/register', path.join(__dirname, 'sdk-aws.ts')]];
const ask = (args: string[]): Answer => {
  const r = spawnSync(program, [...programArgs, ...args], { encoding: 'utf8', timeout: 30_000, env: { ...process.env, TS_NODE_TRANSPILE_ONLY: 'true' } });
  return { ok: r.status === 0, stdout: r.stdout ?? '', stderr: r.stderr || String(r.error ?? '') };
};

async function main(): Promise<void> {
  if (!cliInstalled) console.log('    the aws CLI is not installed: every question is asked through the AWS SDK for JavaScript instead');
  let probe: PollyProbe | undefined;
  if (deployedBackends(config).includes('polly')) {
    probe = await probePollyStream(region, pollyVoiceId(config.pollyVoice));
    if (probe.kind === 'offered') console.log(`    Polly bidirectional streaming answers in ${region}: ${probe.detail}`);
  }
  const found = preflight(config, region, ask, probe, { reservedConcurrency: context.reservedConcurrency !== undefined });
  report(found);
  // What the account cannot hold of the configuration's defaults, for the deploy to take instead: the Makefile
  // passes these on to cdk (EARSHOT_PREFLIGHT_CONTEXT names the file; one `-c key=value` a line).
  const adjusted = Object.entries(found.adjusted);
  if (process.env.EARSHOT_PREFLIGHT_CONTEXT) fs.writeFileSync(process.env.EARSHOT_PREFLIGHT_CONTEXT, adjusted.map(([k, v]) => `-c ${k}=${v}\n`).join(''));
  if (adjusted.length > 0) console.log(`==> this deploy takes ${adjusted.map(([k, v]) => `-c ${k}=${v}`).join(' ')} (said above)`);
}

function report({ missing, unchecked, notes }: { missing: string[]; unchecked: string[]; notes: string[] }): void {
  for (const n of notes) console.log(`    ${n}`);
  for (const u of unchecked) console.log(`    not checked: ${u}`);
  if (missing.length > 0) {
    console.log(`earshot: ${region} lacks what this configuration needs:`);
    for (const m of missing) console.log(`  - ${m}`);
    process.exit(1);
  }
  console.log(unchecked.length === 0 ? `==> ${region} offers what this configuration needs` : `==> nothing found missing in ${region}; ${unchecked.length} thing(s) above could not be checked`);
}

main().catch((e) => {
  console.error(`earshot: the preflight failed: ${e}`);
  process.exit(1);
});
