// CDK's own CloudFormation check (resource schemas and common misconfigurations), with findings as errors as
// cdk.json sets it, over every variant a user can deploy: the default, a public demo URL, Polly only.
import assert from 'node:assert/strict';
import * as fs from 'fs';
import * as path from 'path';
import { describe, it } from 'node:test';
import { synth } from './fixture';

const variants: Record<string, Record<string, string>> = {
  default: {},
  'public demo URL': { authType: 'NONE', corsAllowedOrigins: 'https://demo.example.com' },
  'Polly only': { pollyOnly: 'true' },
  'token mode with spend guards': { authType: 'TOKEN', corsAllowedOrigins: 'https://app.example.com', reservedConcurrency: '20' },
};

describe('CloudFormation validation', () => {
  for (const [name, overrides] of Object.entries(variants)) {
    it(`passes for the ${name} deployment`, () => {
      const s = synth(overrides, true); // throws on any finding
      const report = JSON.parse(fs.readFileSync(path.join(s.app.outdir, 'validation-report.json'), 'utf8'));
      const violations = (report.pluginReports ?? []).flatMap((r: { violations?: unknown[] }) => r.violations ?? []);
      assert.deepEqual(violations, []);
    });
  }
});
