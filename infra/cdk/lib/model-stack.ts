// The Kokoro voice on a SageMaker real-time endpoint: the image built from infra/kokoro (the CUDA image on a GPU
// instance, the ONNX engine's CPU image on a CPU one), the model, the endpoint and its autoscaling. The gateway stack talks to it by name over bidirectional streaming.
import * as path from 'path';
import { CfnOutput, Duration, RemovalPolicy, Stack, StackProps, Token, Validations } from 'aws-cdk-lib';
import * as appscaling from 'aws-cdk-lib/aws-applicationautoscaling';
import * as cw from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import { DockerImageAsset, Platform } from 'aws-cdk-lib/aws-ecr-assets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sagemaker from 'aws-cdk-lib/aws-sagemaker';
import { Construct } from 'constructs';
import { endpointArn, endpointLogArns } from './arns';
import { CDK_ROOT, EarshotConfig, InstanceKind, instanceKind, scalingTarget, sessionsPerInstance } from './config';

/** The image's build output: Docker media types (not OCI), which SageMaker accepts. */
export const DOCKER_MEDIA_TYPES = 'type=image,oci-mediatypes=false';

export const KOKORO_DIR = path.resolve(CDK_ROOT, '..', 'kokoro');

/** Each instance kind's Dockerfile in infra/kokoro. */
export const DOCKERFILES: Record<InstanceKind, string> = { gpu: 'Dockerfile', cpu: 'Dockerfile.cpu' };

// The build context is what the Dockerfile copies and nothing else (the folder's .dockerignore still applies
// on top), so that docs, tests and local caches neither enter the image nor change its hash: a new hash
// means a new model and a new endpoint deployment. A test checks each list against its Dockerfile.
export const IMAGE_CONTEXTS: Record<InstanceKind, string[]> = {
  gpu: ['Dockerfile', 'requirements.txt', 'requirements-cpu.txt', 'requirements-gpu.txt', 'requirements-torch.txt', 'kokoro_server'],
  cpu: ['Dockerfile.cpu', 'requirements.txt', 'requirements-cpu.txt', 'kokoro_server'],
};
const imageExcludes = (context: string[]) => ['*', ...context.flatMap((p) => [`!${p}`, `!${p}/**`]), '**/__pycache__', '**/*.pyc'];

/** How cdk-nag writes a value in a finding's id: itself when known at synth, `<AWS::Region>` when a token. */
const nagName = (value: string, pseudo: string): string => (Token.isUnresolved(value) ? `<${pseudo}>` : value);

export interface KokoroModelStackProps extends StackProps {
  readonly config: EarshotConfig;
  /** The folder with the Kokoro Dockerfile; infra/kokoro by default. */
  readonly kokoroDir?: string;
}

export class KokoroModelStack extends Stack {
  /** The endpoint's name, which the gateway passes to InvokeEndpointWithBidirectionalStream. */
  public readonly endpointName: string;
  /** The endpoint's ARN, the only resource the gateway may invoke. */
  public readonly endpointArn: string;
  public readonly variantName: string;
  public readonly endpoint: sagemaker.CfnEndpoint;

  constructor(scope: Construct, id: string, props: KokoroModelStackProps) {
    super(scope, id, props);
    const c = props.config;
    const kind = instanceKind(c.instanceType) ?? 'gpu';
    this.endpointName = c.endpointName;
    this.endpointArn = endpointArn(this, c.endpointName);
    this.variantName = c.variantName;

    // Recorded at synth time, built and pushed to the CDK asset repository by `cdk deploy` (needs Docker).
    // Docker's own media types: Docker Engine 29+ and Docker Desktop default to the containerd image store,
    // whose builds push OCI manifests, and SageMaker has been reported to refuse them ("Unsupported manifest
    // media type application/vnd.oci.image.manifest.v1+json"). `make deploy` also turns off BuildKit's default
    // provenance attestation (BUILDX_NO_DEFAULT_ATTESTATIONS), which would wrap the image in an OCI index.
    const image = new DockerImageAsset(this, 'KokoroImage', {
      directory: props.kokoroDir ?? KOKORO_DIR,
      file: DOCKERFILES[kind],
      platform: Platform.LINUX_AMD64,
      exclude: imageExcludes(IMAGE_CONTEXTS[kind]),
      outputs: [DOCKER_MEDIA_TYPES],
    });

    // Created here, with a retention, so that container logs neither pile up forever nor outlive the stack.
    const endpointLogs = new logs.LogGroup(this, 'EndpointLogs', {
      logGroupName: `/aws/sagemaker/Endpoints/${c.endpointName}`,
      retention: c.logRetentionDays as logs.RetentionDays,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    // What SageMaker needs to run the container: pull this image, write this endpoint's logs. Nothing else: not
    // logs:CreateLogGroup, so that an endpoint still shutting down after `make destroy` cannot create the
    // group again outside the stack (the stack creates it, before the endpoint).
    const role = new iam.Role(this, 'ExecutionRole', {
      assumedBy: new iam.ServicePrincipal('sagemaker.amazonaws.com'),
      description: 'SageMaker runs the earshot Kokoro container: pull its image, write its logs and metrics',
    });
    image.repository.grantPull(role); // ecr:GetAuthorizationToken is account-wide by AWS's design; the rest is this repository
    role.addToPolicy(new iam.PolicyStatement({
      sid: 'EndpointLogs',
      actions: ['logs:CreateLogStream', 'logs:PutLogEvents', 'logs:DescribeLogStreams'],
      resources: endpointLogArns(this, c.endpointName),
    }));
    Validations.of(role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:${nagName(this.region, 'AWS::Region')}:${nagName(this.account, 'AWS::AccountId')}:log-group:/aws/sagemaker/Endpoints/${c.endpointName}:log-stream:*]`,
      reason: "SageMaker names the endpoint's log streams itself, one per variant and instance, after deployment; the grant is limited to this endpoint's own log group.",
    });

    // SageMaker publishes the instance's GPU and memory metrics (the dashboard's GPU charts) with the execution
    // role, as AWS's CreateModel execution-role policy lists; PutMetricData takes no resource, so the grant is
    // held to SageMaker's own namespaces by condition.
    role.addToPolicy(new iam.PolicyStatement({
      sid: 'EndpointMetrics',
      actions: ['cloudwatch:PutMetricData'],
      resources: ['*'],
      conditions: { StringLike: { 'cloudwatch:namespace': ['/aws/sagemaker/*', 'AWS/SageMaker'] } },
    }));
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'ecr:GetAuthorizationToken and cloudwatch:PutMetricData accept no resource but `*`; the image pull is scoped to the asset repository and the metrics to SageMaker namespaces by condition.',
    });

    const model = new sagemaker.CfnModel(this, 'Model', {
      executionRoleArn: role.roleArn,
      primaryContainer: {
        image: image.imageUri,
        mode: 'SingleModel',
        // The admission limit, written out so that autoscaling's target and the container's cap are read from
        // one place (config.ts's sessionsPerInstance): a session past it is refused 503 and the gateway spills over.
        environment: { KOKORO_MAX_SESSIONS: String(sessionsPerInstance(c)) },
      },
    });
    // The role's policy (a separate resource) must exist before SageMaker checks the image.
    model.node.addDependency(role);

    const endpointConfig = new sagemaker.CfnEndpointConfig(this, 'EndpointConfig', {
      productionVariants: [{
        variantName: c.variantName,
        modelName: model.attrModelName,
        instanceType: c.instanceType,
        // A GPU host whose driver runs the image's CUDA 12 runtime (the default AMI's CUDA 11.4 does not). A CPU
        // instance takes no GPU AMI: SageMaker's default host runs the ONNX engine.
        inferenceAmiVersion: kind === 'gpu' ? c.inferenceAmiVersion : undefined,
        initialInstanceCount: 1,
        initialVariantWeight: 1,
        // Loading the image and the model takes minutes, not the default seconds.
        containerStartupHealthCheckTimeoutInSeconds: c.startupHealthCheckTimeoutSeconds,
        // A conversation holds its stream for seconds to minutes: a new one goes to the instance with the
        // fewest in flight, not a random one that may already be full (RANDOM is the default; AWS's own
        // Kokoro streaming sample sets this for long-lived streams).
        routingConfig: { routingStrategy: 'LEAST_OUTSTANDING_REQUESTS' },
      }],
    });

    this.endpoint = new sagemaker.CfnEndpoint(this, 'Endpoint', {
      endpointName: c.endpointName,
      endpointConfigName: endpointConfig.attrEndpointConfigName,
      // A redeploy (a new image, a new model) makes a new endpoint config with `initialInstanceCount: 1`: without
      // this, the update would set a scaled-out endpoint back to one instance under load (UpdateEndpoint's
      // RetainAllVariantProperties, SageMaker API reference). The count stays what autoscaling made it.
      retainAllVariantProperties: true,
    });
    // The group exists before the endpoint writes to it, and outlives it on deletion until the endpoint is gone.
    this.endpoint.node.addDependency(endpointLogs);

    // Application Auto Scaling for SageMaker uses its service-linked role (created on first use), so no new
    // role is made for it.
    const scalingRole = iam.Role.fromRoleArn(this, 'ScalingRole', this.formatArn({
      service: 'iam',
      region: '',
      resource: 'role',
      resourceName: 'aws-service-role/sagemaker.application-autoscaling.amazonaws.com/AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint',
    }), { mutable: false });
    const target = new appscaling.ScalableTarget(this, 'Scaling', {
      serviceNamespace: appscaling.ServiceNamespace.SAGEMAKER,
      resourceId: `endpoint/${c.endpointName}/variant/${c.variantName}`,
      scalableDimension: 'sagemaker:variant:DesiredInstanceCount',
      minCapacity: c.minInstances,
      maxCapacity: c.maxInstances,
      role: scalingRole,
    });
    target.node.addDependency(this.endpoint);
    // A conversation holds one bidirectional stream for its whole length: invocations per minute count how
    // many start, not how many the GPU is serving. ConcurrentRequestsPerModel counts the requests the
    // container holds (a streaming response until its last byte), every 10 s ("Define a scaling policy" in
    // SageMaker's autoscaling guide): the load itself, seen six times sooner. The target sits under the
    // container's admission cap (KOKORO_MAX_SESSIONS, above), so instances are added before sessions are refused.
    target.scaleToTrackMetric('ConcurrentStreams', {
      predefinedMetric: appscaling.PredefinedMetric.SAGEMAKER_VARIANT_CONCURRENT_REQUESTS_PER_MODEL_HIGH_RESOLUTION,
      targetValue: scalingTarget(c),
      // Instances take minutes to come up: scale out promptly, scale in only after a quiet spell.
      scaleOutCooldown: Duration.minutes(2),
      scaleInCooldown: Duration.minutes(10),
    });
    // Whether ConcurrentRequestsPerModel counts a bidirectional session is not documented. If it does not, the
    // policy above never sees the load: the container refuses sessions at its cap and the gateway spills them
    // to the other arm, silently. So the gateway's own count of those spills scales out too: its metric line
    // says `Overflows` 1 for a conversation assigned to Kokoro that another arm spoke because Kokoro was full
    // (functions/earshot-gateway/src/metrics.rs), or `BusyRefusals` 1 for one refused 503 where no arm could
    // take it; a minute with any adds an instance (three or more, two).
    const count = (metricName: string, dimensionsMap: Record<string, string>) =>
      new cw.Metric({ namespace: c.metricsNamespace, metricName, dimensionsMap, statistic: 'Sum', period: Duration.minutes(1) });
    const turnedAway = new cw.MathExpression({
      expression: 'FILL(spilled, 0) + FILL(refused, 0)',
      usingMetrics: { spilled: count('Overflows', { Arm: 'kokoro' }), refused: count('BusyRefusals', { Backend: 'kokoro' }) },
      label: 'conversations Kokoro was too full to take',
      period: Duration.minutes(1),
    });
    const spill = new appscaling.StepScalingAction(this, 'ScaleOutOnOverflow', {
      scalingTarget: target,
      adjustmentType: appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
      metricAggregationType: appscaling.MetricAggregationType.MAXIMUM,
      cooldown: Duration.minutes(2),
    });
    spill.addAdjustment({ lowerBound: 0, upperBound: 2, adjustment: 1 });
    spill.addAdjustment({ lowerBound: 2, adjustment: 2 });
    new cw.Alarm(this, 'KokoroOverflow', {
      alarmDescription: 'earshot: conversations meant for Kokoro were spoken by another arm, or refused, because the endpoint was full',
      metric: turnedAway,
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cw.TreatMissingData.NOT_BREACHING,
    }).addAlarmAction(new cwActions.ApplicationScalingAction(spill));

    new CfnOutput(this, 'EndpointName', { value: this.endpoint.attrEndpointName, description: 'The Kokoro SageMaker endpoint' });
    new CfnOutput(this, 'ImageUri', { value: image.imageUri, description: 'The Kokoro image' });
    // make deploy compares it with the configuration's: SageMaker refuses to change the instance type of an
    // endpoint that is an autoscaling target, so a new type is deployed as a new endpoint (lib/preflight.ts).
    new CfnOutput(this, 'InstanceType', { value: c.instanceType, description: "The endpoint's instance type" });
  }
}
