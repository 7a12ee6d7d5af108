// Where the gateway Lambda's code comes from: the Rust `bootstrap` built by cargo-lambda, or, when it has
// not been built on this machine, a placeholder folder so that synth and the tests run without a Rust
// cross-build. Deploying the placeholder is refused (`requireBootstrap`), never done silently.
import * as fs from 'fs';
import * as path from 'path';
import { CDK_ROOT } from './config';

export const PLACEHOLDER_DIR = path.join(CDK_ROOT, 'bootstrap-placeholder');

export interface BootstrapCode {
  /** The folder whose contents become the Lambda's code. */
  readonly dir: string;
  /** True when the real bootstrap was missing and the placeholder stands in. */
  readonly placeholder: boolean;
  /** The bootstrap file that was looked for. */
  readonly expected: string;
}

/** Resolves `bootstrapDir` (relative to infra/cdk, or absolute). */
export function resolveBootstrap(bootstrapDir: string, requireBootstrap = false): BootstrapCode {
  const dir = path.resolve(CDK_ROOT, bootstrapDir);
  const expected = path.join(dir, 'bootstrap');
  if (fs.existsSync(expected) && fs.statSync(expected).isFile()) return { dir, placeholder: false, expected };
  if (requireBootstrap) {
    throw new Error(`earshot: the gateway's bootstrap is missing (${expected}); build it with cargo-lambda (make deploy does) or set bootstrapDir`);
  }
  return { dir: PLACEHOLDER_DIR, placeholder: true, expected };
}
