// The Region the AWS SDK would use where neither AWS_REGION nor the aws CLI says one: the profile's
// (~/.aws/config, or AWS_CONFIG_FILE; AWS_PROFILE picks the profile), as every SDK client resolves it. Prints it,
// or exits 1 when none is configured. `make deploy` asks it before anything is built, so that a deployer with
// no aws CLI whose Region lives only in the profile is checked like any other (the preflight runs in it).
import { LambdaClient } from '@aws-sdk/client-lambda';

async function main(): Promise<void> {
  // An empty variable is no Region (as the shell's `${AWS_REGION:-…}` has it); the SDK would take it for one.
  for (const name of ['AWS_REGION', 'AWS_DEFAULT_REGION']) if (process.env[name] === '') delete process.env[name];
  const region = await new LambdaClient({}).config.region();
  if (!region) process.exit(1);
  console.log(region);
}

main().catch(() => process.exit(1));
