// ARNs that two stacks must agree on, built in one place: the Kokoro endpoint (granted to the gateway,
// scaled by the model stack) and the Bedrock foundation model the agent streams from.
import { ArnFormat, Stack } from 'aws-cdk-lib';

/** The ARN of a SageMaker endpoint in the given stack's account and region (names are lower case). */
export function endpointArn(stack: Stack, endpointName: string): string {
  return stack.formatArn({ service: 'sagemaker', resource: 'endpoint', resourceName: endpointName.toLowerCase() });
}

/** arn:aws:bedrock:REGION::foundation-model/MODEL_ID (foundation models belong to no account). */
export function foundationModelArn(stack: Stack, modelId: string): string {
  return stack.formatArn({ service: 'bedrock', account: '', resource: 'foundation-model', resourceName: modelId });
}

/** The geography prefixes of Bedrock's cross-Region inference profiles (`us.amazon.nova-lite-v1:0`). */
export const INFERENCE_PROFILE_PREFIXES = ['us', 'eu', 'apac', 'us-gov', 'ca', 'jp', 'au', 'global'] as const;

/**
 * The geography of the cross-Region inference profiles that serve `region` (`us.`, `eu.`, `apac.`, `us-gov.`),
 * or `undefined` where none is known.
 */
export function regionalProfilePrefix(region: string): string | undefined {
  if (region.startsWith('us-gov-')) return 'us-gov';
  if (region.startsWith('us-') || region.startsWith('ca-')) return 'us';
  if (region.startsWith('eu-')) return 'eu';
  if (region.startsWith('ap-')) return 'apac';
  return undefined;
}

/** The default agent model: Amazon Nova Lite, on demand by its id in us-east-1 (and where the Region is unknown). */
export const DEFAULT_BEDROCK_MODEL = 'amazon.nova-lite-v1:0';

/**
 * `bedrockModelId: "auto"` for `region`: Nova Lite on demand in us-east-1; elsewhere through the Region's
 * cross-Region inference profile (on-demand throughput of the bare model id is refused in most Regions).
 */
export function defaultBedrockModel(region: string | undefined): string {
  if (region === undefined || region === 'us-east-1') return DEFAULT_BEDROCK_MODEL;
  const prefix = regionalProfilePrefix(region);
  return prefix ? `${prefix}.${DEFAULT_BEDROCK_MODEL}` : DEFAULT_BEDROCK_MODEL;
}

/** The inference profile's prefix and its foundation model, when `modelId` names a profile. */
export function inferenceProfile(modelId: string): { prefix: string; model: string } | undefined {
  const dot = modelId.indexOf('.');
  const prefix = modelId.slice(0, dot);
  return dot > 0 && (INFERENCE_PROFILE_PREFIXES as readonly string[]).includes(prefix) ? { prefix, model: modelId.slice(dot + 1) } : undefined;
}

/**
 * What invoking `modelId` needs in IAM. A foundation model: its ARN in this Region. An inference profile: the
 * profile's ARN (it belongs to the account) and the foundation model in every Region the profile may route to
 * (Bedrock's "Prerequisites for inference profiles" asks for both; the Regions are the profile's, known only to
 * Bedrock, so the model is granted in any Region).
 */
export function bedrockModelArns(stack: Stack, modelId: string): string[] {
  const profile = inferenceProfile(modelId);
  if (!profile) return [foundationModelArn(stack, modelId)];
  return [
    stack.formatArn({ service: 'bedrock', resource: 'inference-profile', resourceName: modelId }),
    stack.formatArn({ service: 'bedrock', region: '*', account: '', resource: 'foundation-model', resourceName: profile.model }),
  ];
}

/** The log group SageMaker writes an endpoint's container logs to, and its streams. */
export function endpointLogArns(stack: Stack, endpointName: string): string[] {
  const group = `/aws/sagemaker/Endpoints/${endpointName}`;
  return [
    stack.formatArn({ service: 'logs', resource: 'log-group', resourceName: group, arnFormat: ArnFormat.COLON_RESOURCE_NAME }),
    stack.formatArn({ service: 'logs', resource: 'log-group', resourceName: `${group}:log-stream:*`, arnFormat: ArnFormat.COLON_RESOURCE_NAME }),
  ];
}

/**
 * A Secrets Manager secret by name or ARN. Secrets Manager appends six random characters to a secret's
 * name in its ARN, so a name is granted as `NAME-??????` (the pattern its documentation recommends, which
 * cannot match another secret whose name merely starts with NAME).
 */
export function secretArn(stack: Stack, nameOrArn: string): string {
  if (nameOrArn.startsWith('arn:')) return nameOrArn;
  return stack.formatArn({ service: 'secretsmanager', resource: 'secret', resourceName: `${nameOrArn}-??????`, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
}
