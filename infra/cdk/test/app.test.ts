// The app as `cdk synth` runs it: bin/earshot.ts in its own process, with context passed the way the CDK
// CLI passes `-c key=value` (CDK_CONTEXT_JSON) and no AWS environment at all.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fs from 'fs';
import * as path from 'path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { CDK_ROOT } from '../lib/config';
import { tempDir } from './fixture';

const run = promisify(execFile);

interface Manifest { artifacts: Record<string, { type: string; dependencies?: string[] }> }

async function synthApp(context: Record<string, string>): Promise<{ manifest: Manifest; outdir: string }> {
  const outdir = tempDir('earshot-cdk-app-');
  // CDK's schema check is left to validation.test.ts: here it would only cost seconds per process.
  const env: NodeJS.ProcessEnv = { ...process.env, CDK_OUTDIR: outdir, CDK_CONTEXT_JSON: JSON.stringify(context), TS_NODE_TRANSPILE_ONLY: 'true', CDK_VALIDATION: 'false' };
  for (const key of ['CDK_DEFAULT_ACCOUNT', 'CDK_DEFAULT_REGION', 'AWS_REGION', 'AWS_DEFAULT_REGION']) delete env[key];
  await run(process.execPath, ['--require', 'ts-node/register', path.join(CDK_ROOT, 'bin', 'earshot.ts')], { cwd: CDK_ROOT, env });
  return { manifest: JSON.parse(fs.readFileSync(path.join(outdir, 'manifest.json'), 'utf8')), outdir };
}

const stacks = (m: Manifest) => Object.entries(m.artifacts).filter(([, a]) => a.type === 'aws:cloudformation:stack').map(([id]) => id).sort();
const missingBootstrap = () => path.join(tempDir(), 'missing');

describe('bin/earshot.ts', { concurrency: true }, () => {
  it('synthesizes the model and gateway stacks, the gateway depending on the model', async () => {
    const { manifest } = await synthApp({ bootstrapDir: missingBootstrap() });
    assert.deepEqual(stacks(manifest), ['EarshotGateway', 'EarshotKokoroModel']);
    assert.ok(manifest.artifacts.EarshotGateway.dependencies?.includes('EarshotKokoroModel'));
  });

  it('synthesizes only the gateway when Polly-only, and applies -c values', async () => {
    const { manifest, outdir } = await synthApp({ bootstrapDir: missingBootstrap(), pollyOnly: 'true', pollyVoice: 'matthew' });
    assert.deepEqual(stacks(manifest), ['EarshotGateway']);
    const template = JSON.parse(fs.readFileSync(path.join(outdir, 'EarshotGateway.template.json'), 'utf8'));
    const fn = Object.values(template.Resources as Record<string, { Type: string; Properties: any }>).find((r) => r.Type === 'AWS::Lambda::Function');
    assert.equal(fn?.Properties.Environment.Variables.EARSHOT_POLLY_VOICE, 'matthew');
  });

  it('reads another config file when told to', async () => {
    const file = path.join(tempDir(), 'staging.json');
    const base = JSON.parse(fs.readFileSync(path.join(CDK_ROOT, 'earshot.config.json'), 'utf8'));
    fs.writeFileSync(file, JSON.stringify({ ...base, pollyOnly: true }));
    const { manifest } = await synthApp({ configFile: file, bootstrapDir: missingBootstrap() });
    assert.deepEqual(stacks(manifest), ['EarshotGateway']);
  });

  it('refuses to go on without the real bootstrap when it is required', async () => {
    const missing = missingBootstrap();
    await assert.rejects(synthApp({ bootstrapDir: missing, requireBootstrap: 'true' }), (e: { stderr: string }) => e.stderr.includes(path.join(missing, 'bootstrap')));
  });

  it('stops on a bad setting, naming it', async () => {
    await assert.rejects(synthApp({ bootstrapDir: missingBootstrap(), authType: 'OPEN' }), (e: { stderr: string }) => /`authType` must be AWS_IAM, TOKEN or NONE/.test(e.stderr));
  });
});
