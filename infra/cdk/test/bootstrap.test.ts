// Where the Lambda's code comes from: the real bootstrap when it has been built, the placeholder folder when
// not (so synth and tests need no Rust cross-build), and a refusal when a deployment requires the real one.
import assert from 'node:assert/strict';
import * as fs from 'fs';
import * as path from 'path';
import { describe, it } from 'node:test';
import { PLACEHOLDER_DIR, resolveBootstrap } from '../lib/bootstrap-code';
import { synth, tempDir } from './fixture';

describe('bootstrap code', () => {
  it('uses the built folder when it holds a bootstrap file', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'bootstrap'), '#!/bin/sh\n');
    assert.deepEqual(resolveBootstrap(dir), { dir, placeholder: false, expected: path.join(dir, 'bootstrap') });
  });

  it('falls back to the placeholder, a folder holding only a README, when the folder is missing or empty', () => {
    const missing = path.join(tempDir(), 'nothing');
    assert.equal(resolveBootstrap(missing).dir, PLACEHOLDER_DIR);
    assert.equal(resolveBootstrap(tempDir()).placeholder, true);
    assert.deepEqual(fs.readdirSync(PLACEHOLDER_DIR), ['README.md']);
    assert.match(fs.readFileSync(path.join(PLACEHOLDER_DIR, 'README.md'), 'utf8'), /make deploy/);
  });

  it('refuses the placeholder when the real bootstrap is required, naming the missing file', () => {
    const missing = path.join(tempDir(), 'nothing');
    assert.throws(() => resolveBootstrap(missing, true), (e: Error) => e.message.includes(path.join(missing, 'bootstrap')));
  });

  it('resolves a relative folder from infra/cdk', () => {
    assert.equal(resolveBootstrap('../../target/lambda/bootstrap').expected, path.resolve(__dirname, '../../../target/lambda/bootstrap/bootstrap'));
  });

  it('packages the built folder as the Lambda code', () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'bootstrap'), 'not really a binary');
    const s = synth({ bootstrapDir: dir });
    const manifest = JSON.parse(fs.readFileSync(path.join(s.app.outdir, `${s.gateway.artifactId}.assets.json`), 'utf8'));
    const staged = (Object.values(manifest.files) as { source: { path: string } }[])
      .map((f) => path.join(s.app.outdir, f.source.path))
      .filter((p) => fs.statSync(p).isDirectory());
    assert.equal(staged.length, 1);
    assert.deepEqual(fs.readdirSync(staged[0]), ['bootstrap']);
  });
});
