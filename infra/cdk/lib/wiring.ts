// How the stacks of a deployment fit together, shared by the app and the tests: the Kokoro model stack
// (unless Polly-only) and the gateway stack, which gets the endpoint's name from it and deploys after it,
// both judged by cdk-nag.
import { App, Environment, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { BootstrapCode } from './bootstrap-code';
import { EarshotConfig, instanceKind } from './config';
import { EarshotGatewayStack } from './gateway-stack';
import { KokoroModelStack } from './model-stack';

export const MODEL_STACK_ID = 'EarshotKokoroModel';
export const GATEWAY_STACK_ID = 'EarshotGateway';

export interface Deployment {
  readonly model?: KokoroModelStack;
  readonly gateway: EarshotGatewayStack;
}

export function addDeployment(app: App, config: EarshotConfig, code: BootstrapCode, env?: Environment, kokoroDir?: string): Deployment {
  // cdk-nag's AWS Solutions rules judge every synth (make synth, make deploy, the tests): an unacknowledged
  // finding fails it. Each acknowledgement sits beside its resource with the reason.
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  const model = config.pollyOnly
    ? undefined
    : new KokoroModelStack(app, MODEL_STACK_ID, {
        env,
        config,
        kokoroDir,
        description: `earshot: the Kokoro TTS model on a SageMaker ${instanceKind(config.instanceType) === 'cpu' ? 'CPU' : 'GPU'} endpoint, with autoscaling`,
      });
  const gateway = new EarshotGatewayStack(app, GATEWAY_STACK_ID, {
    env,
    config,
    code,
    kokoro: model ? { endpointName: model.endpointName, variantName: model.variantName } : undefined,
    description: config.pollyOnly
      ? 'earshot: the voice gateway Lambda and its function URL (Polly only)'
      : 'earshot: the voice gateway Lambda and its function URL',
  });
  if (model) gateway.addStackDependency(model, 'the gateway invokes the Kokoro endpoint');
  return { model, gateway };
}
