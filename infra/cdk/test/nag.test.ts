// cdk-nag (the CDK ecosystem's rule packs; AWS Solutions here) judges every synth of the app: the wiring adds
// it, so `make synth`, `make deploy` and these tests all fail on a finding nobody acknowledged beside its
// resource with a reason.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { App } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { resolveBootstrap } from '../lib/bootstrap-code';
import { defaultConfig } from '../lib/config';
import { addDeployment } from '../lib/wiring';
import { ACCOUNT, REGION, synth, tempDir } from './fixture';

const variants: Record<string, Record<string, string>> = {
  default: {},
  'public demo URL': { authType: 'NONE', corsAllowedOrigins: 'https://demo.example.com' },
  'Polly only': { pollyOnly: 'true' },
  'token mode with spend guards': { authType: 'TOKEN', corsAllowedOrigins: 'https://app.example.com', reservedConcurrency: '20' },
  'inference profile': { bedrockModelId: 'us.amazon.nova-lite-v1:0' },
};

describe('cdk-nag AWS Solutions', () => {
  for (const [name, overrides] of Object.entries(variants)) {
    it(`finds nothing unacknowledged in the ${name} deployment`, () => {
      assert.doesNotThrow(() => synth(overrides));
    });
  }

  it('finds nothing unacknowledged in an environment-agnostic synth (make synth without credentials)', () => {
    const config = defaultConfig({ bootstrapDir: tempDir() });
    const app = new App({ outdir: tempDir('earshot-cdk-out-') });
    addDeployment(app, config, resolveBootstrap(config.bootstrapDir));
    assert.doesNotThrow(() => app.synth());
  });

  it('fails the synth on a finding nobody acknowledged', () => {
    const config = defaultConfig({ bootstrapDir: tempDir() });
    const app = new App({ outdir: tempDir('earshot-cdk-out-') });
    const { gateway } = addDeployment(app, config, resolveBootstrap(config.bootstrapDir), { account: ACCOUNT, region: REGION });
    // A queue without enforced TLS and a grant of every action: two rules AWS Solutions holds.
    new sqs.Queue(gateway, 'Careless');
    gateway.fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['s3:*'], resources: ['*'] }));
    assert.throws(() => app.synth(), /Validation failed/);
  });
});
