// The Kokoro images' Dockerfiles (GPU and CPU), read as text: what SageMaker's bidirectional streaming needs from it (the
// capability label, port 8080, the `serve` argument), and that the image asset's build context has
// everything it copies.
import assert from 'node:assert/strict';
import * as fs from 'fs';
import * as path from 'path';
import { describe, it } from 'node:test';
import { DOCKERFILES, IMAGE_CONTEXTS, KOKORO_DIR } from '../lib/model-stack';

/** The Dockerfile's instructions, continuation lines joined and comments dropped. */
function instructions(text: string): { op: string; args: string }[] {
  return text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const [op, ...rest] = l.split(/\s+/);
      return { op: op.toUpperCase(), args: rest.join(' ') };
    });
}

for (const [kind, dockerfile] of Object.entries(DOCKERFILES) as [keyof typeof DOCKERFILES, string][]) describe(`infra/kokoro/${dockerfile} (${kind} instances)`, () => {
  const ins = instructions(fs.readFileSync(path.join(KOKORO_DIR, dockerfile), 'utf8'));
  const args = (op: string) => ins.filter((i) => i.op === op).map((i) => i.args);

  it('carries the bidirectional-streaming capability label', () => {
    const labels = args('LABEL').flatMap((a) => a.split(/\s+/));
    assert.ok(labels.some((l) => l.replace(/"/g, '') === 'com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true'), labels.join(' '));
  });

  it('exposes port 8080 and makes the server listen there', () => {
    assert.ok(args('EXPOSE').flatMap((a) => a.split(/\s+/)).includes('8080'));
    assert.match(args('ENV').join(' '), /\bKOKORO_PORT=8080\b/);
  });

  it('accepts `serve` as SageMaker passes it, with an exec-form entrypoint', () => {
    const entrypoint = args('ENTRYPOINT');
    assert.equal(entrypoint.length, 1);
    assert.ok(Array.isArray(JSON.parse(entrypoint[0])), 'exec form receives signals');
    assert.deepEqual(JSON.parse(args('CMD').at(-1) ?? 'null'), ['serve']);
  });

  it('copies nothing that the image build context leaves out', () => {
    const sources = args('COPY')
      .filter((a) => !a.startsWith('--from'))
      .flatMap((a) => a.split(/\s+/).filter((w) => !w.startsWith('--')).slice(0, -1));
    assert.ok(sources.length > 0);
    for (const source of sources) {
      assert.ok(IMAGE_CONTEXTS[kind].includes(source.replace(/\/$/, '')), `${source} is copied by ${dockerfile} but not in its IMAGE_CONTEXTS`);
      assert.ok(fs.existsSync(path.join(KOKORO_DIR, source)), `${source} exists`);
    }
  });
});
