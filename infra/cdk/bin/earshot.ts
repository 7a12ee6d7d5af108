#!/usr/bin/env node
// The CDK app: reads earshot.config.json (or -c configFile=...), applies -c overrides, and adds the stacks.
// -c requireBootstrap=true (set by make deploy) refuses to go on without the real Lambda bootstrap.
import * as path from 'path';
import { App } from 'aws-cdk-lib';
import { resolveBootstrap } from '../lib/bootstrap-code';
import { CDK_ROOT, DEFAULT_CONFIG_FILE, readConfigFile, resolveConfig } from '../lib/config';
import { addDeployment } from '../lib/wiring';

const app = new App();
const configFile = app.node.tryGetContext('configFile');
const file = readConfigFile(configFile ? path.resolve(CDK_ROOT, String(configFile)) : DEFAULT_CONFIG_FILE);
// `bedrockModelId: auto` becomes the form of the default model that the deploying Region invokes on demand.
const config = resolveConfig(file, (key) => app.node.tryGetContext(key), process.env.CDK_DEFAULT_REGION);
const requireBootstrap = String(app.node.tryGetContext('requireBootstrap') ?? 'false') === 'true';
const code = resolveBootstrap(config.bootstrapDir, requireBootstrap);

// Account and region come from the deploying credentials; without them (an offline synth) the stacks are
// environment-agnostic.
addDeployment(app, config, code, { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION });
