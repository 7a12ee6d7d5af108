// Builds a deployment in-process for the tests (no Docker, no credentials, no network) and reads its
// templates: a fixed account and region, a fresh output folder, and a bootstrap folder that may be missing.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { resolveBootstrap } from '../lib/bootstrap-code';
import { EarshotConfig, defaultConfig } from '../lib/config';
import { Deployment, addDeployment } from '../lib/wiring';

export const ACCOUNT = '123456789012';
export const REGION = 'us-east-1';

const tempDirs: string[] = [];
process.on('exit', () => tempDirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

export function tempDir(prefix = 'earshot-cdk-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

export interface Synthesized extends Deployment {
  readonly app: App;
  readonly config: EarshotConfig;
  readonly gatewayTemplate: Template;
  readonly modelTemplate?: Template;
}

/** The feature flag that makes CloudFormation schema findings fail synthesis, as cdk.json sets it. */
export const STRICT_VALIDATION = { '@aws-cdk/core:validateAgainstDefaultRules': true };

/**
 * The deployment for the default config with these values instead, as `-c key=value` would give them.
 * CDK's CloudFormation schema check (a few seconds per process) runs only when `validate` is set: one test
 * file runs it on every variant, the others check behaviour.
 */
export function synth(overrides: Partial<Record<keyof EarshotConfig, unknown>> = {}, validate = false): Synthesized {
  // A bootstrap folder that does not exist unless a test gave one, so that the result does not depend on
  // whether this machine has built the Lambda.
  const config = defaultConfig({ bootstrapDir: path.join(tempDir(), 'no-bootstrap-here'), ...overrides });
  const app = new App({ outdir: tempDir('earshot-cdk-out-'), context: STRICT_VALIDATION });
  const deployment = addDeployment(app, config, resolveBootstrap(config.bootstrapDir), { account: ACCOUNT, region: REGION });
  const before = process.env.CDK_VALIDATION;
  process.env.CDK_VALIDATION = validate ? 'true' : 'false';
  try {
    return {
      ...deployment,
      app,
      config,
      gatewayTemplate: Template.fromStack(deployment.gateway),
      modelTemplate: deployment.model ? Template.fromStack(deployment.model) : undefined,
    };
  } finally {
    if (before === undefined) delete process.env.CDK_VALIDATION;
    else process.env.CDK_VALIDATION = before;
  }
}

const PSEUDO: Record<string, string> = { 'AWS::Partition': 'aws', 'AWS::Region': REGION, 'AWS::AccountId': ACCOUNT, 'AWS::URLSuffix': 'amazonaws.com' };

/**
 * Renders a template value to a string where it is built only from literals and pseudo parameters
 * (Fn::Join, Fn::Sub, Ref AWS::…); anything else (a reference to a resource) renders as `<Ref:Id>` or
 * `<GetAtt:Id.Attr>`, so that a test can still compare it exactly.
 */
export function render(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const [[fn, arg]] = Object.entries(value as Record<string, unknown>);
    if (fn === 'Ref') return PSEUDO[arg as string] ?? `<Ref:${arg}>`;
    if (fn === 'Fn::GetAtt') return `<GetAtt:${(arg as string[]).join('.')}>`;
    if (fn === 'Fn::Join') {
      const [sep, parts] = arg as [string, unknown[]];
      return parts.map(render).join(sep);
    }
    if (fn === 'Fn::Sub') return (arg as string).replace(/\$\{([^}]+)\}/g, (_, name: string) => PSEUDO[name] ?? `<Ref:${name}>`);
  }
  throw new Error(`cannot render ${JSON.stringify(value)}`);
}

export interface Statement {
  readonly Sid?: string;
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource: unknown;
  readonly Condition?: Record<string, unknown>;
}

/** Every IAM policy statement of a template (inline policies of AWS::IAM::Policy resources). */
export function statements(template: Template): Statement[] {
  return Object.values(template.findResources('AWS::IAM::Policy')).flatMap((r) => r.Properties.PolicyDocument.Statement as Statement[]);
}

export const actionsOf = (s: Statement): string[] => (Array.isArray(s.Action) ? s.Action : [s.Action]);
export const resourcesOf = (s: Statement): string[] => (Array.isArray(s.Resource) ? s.Resource : [s.Resource]).map(render);

/** The one resource of a type in a template, checking that there is exactly one. */
export function only(template: Template, type: string): { Properties: Record<string, any>; DependsOn?: string[] } {
  const found = Object.values(template.findResources(type));
  if (found.length !== 1) throw new Error(`expected one ${type}, found ${found.length}`);
  return found[0] as { Properties: Record<string, any>; DependsOn?: string[] };
}

/** The logical id of the one resource of a type. */
export function onlyId(template: Template, type: string): string {
  const ids = Object.keys(template.findResources(type));
  if (ids.length !== 1) throw new Error(`expected one ${type}, found ${ids.length}`);
  return ids[0];
}
