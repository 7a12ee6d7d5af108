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

/** The log group SageMaker writes an endpoint's container logs to, and its streams. */
export function endpointLogArns(stack: Stack, endpointName: string): string[] {
  const group = `/aws/sagemaker/Endpoints/${endpointName}`;
  return [
    stack.formatArn({ service: 'logs', resource: 'log-group', resourceName: group, arnFormat: ArnFormat.COLON_RESOURCE_NAME }),
    stack.formatArn({ service: 'logs', resource: 'log-group', resourceName: `${group}:log-stream:*`, arnFormat: ArnFormat.COLON_RESOURCE_NAME }),
  ];
}
