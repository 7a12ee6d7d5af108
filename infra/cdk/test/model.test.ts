// The Kokoro model stack as CloudFormation will see it: the image asset (recorded, not built, at synth), the
// model and its execution role, the endpoint config, the endpoint, and its target-tracking autoscaling.
import assert from 'node:assert/strict';
import * as fs from 'fs';
import * as path from 'path';
import { describe, it } from 'node:test';
import { IMAGE_CONTEXTS } from '../lib/model-stack';
import { Template } from 'aws-cdk-lib/assertions';
import { ACCOUNT, REGION, actionsOf, only, onlyId, render, resourcesOf, statements, synth } from './fixture';

/** The endpoint's target-tracking policy (the other scales out on the gateway's overflows). */
function trackingPolicy(template: Template): { Properties: Record<string, any> } {
  return policyOfType(template, 'TargetTrackingScaling')[1];
}

/** The one scaling policy of `type`: its logical id and resource. */
function policyOfType(template: Template, type: string): [string, { Properties: Record<string, any> }] {
  const all = Object.entries(template.findResources('AWS::ApplicationAutoScaling::ScalingPolicy')).filter(([, p]) => p.Properties.PolicyType === type);
  assert.equal(all.length, 1, `one ${type} policy`);
  return all[0] as [string, { Properties: Record<string, any> }];
}

describe('Kokoro image', () => {
  const s = synth();
  const manifest = JSON.parse(fs.readFileSync(path.join(s.app.outdir, `${s.model!.artifactId}.assets.json`), 'utf8'));
  const images = Object.values(manifest.dockerImages) as { source: { directory: string; platform?: string; dockerOutputs?: string[] } }[];

  it('is built with Docker media types, which SageMaker accepts (not the OCI ones of a containerd image store)', () => {
    assert.deepEqual(images[0].source.dockerOutputs, ['type=image,oci-mediatypes=false']);
    // That no provenance attestation wraps it in an OCI index is make deploy's part: the deploy rehearsal
    // (tests/deploy/rehearse.py, make test-deploy) runs the recipe and checks the variable reaches cdk and Docker.
  });

  it('is one Docker image asset for linux/amd64, referenced by the model', () => {
    assert.equal(images.length, 1);
    assert.equal(images[0].source.platform, 'linux/amd64');
    const image = render(only(s.modelTemplate!, 'AWS::SageMaker::Model').Properties.PrimaryContainer.Image);
    assert.match(image, new RegExp(`^${ACCOUNT}\\.dkr\\.ecr\\.${REGION}\\.amazonaws\\.com/cdk-[a-z0-9]+-container-assets-${ACCOUNT}-${REGION}:[0-9a-f]{64}$`));
  });

  it('has a build context of the Dockerfile and what it copies, no tests, docs or caches', () => {
    const staged = fs.readdirSync(path.join(s.app.outdir, images[0].source.directory)).filter((f) => f !== '.dockerignore').sort();
    assert.deepEqual(staged, [...IMAGE_CONTEXTS.gpu].sort());
  });
});

describe('model and endpoint', () => {
  const { modelTemplate: t } = synth();

  it('runs the image as a single model with a dedicated execution role', () => {
    const model = only(t!, 'AWS::SageMaker::Model');
    assert.deepEqual(model.Properties.ExecutionRoleArn, { 'Fn::GetAtt': [onlyId(t!, 'AWS::IAM::Role'), 'Arn'] });
    assert.equal(model.Properties.PrimaryContainer.Mode, 'SingleModel');
    // The role's permissions exist before SageMaker pulls the image.
    assert.ok(model.DependsOn?.includes(onlyId(t!, 'AWS::IAM::Policy')));
  });

  it('configures one GPU instance, a long startup health check and the variant', () => {
    const variants = only(t!, 'AWS::SageMaker::EndpointConfig').Properties.ProductionVariants;
    assert.equal(variants.length, 1);
    assert.equal(variants[0].InstanceType, 'ml.g5.xlarge');
    assert.equal(variants[0].InitialInstanceCount, 1);
    assert.equal(variants[0].ContainerStartupHealthCheckTimeoutInSeconds, 600);
    assert.equal(variants[0].VariantName, 'AllTraffic');
    // Streams last: a new one goes to the instance with the fewest in flight.
    assert.deepEqual(variants[0].RoutingConfig, { RoutingStrategy: 'LEAST_OUTSTANDING_REQUESTS' });
    // A host AMI with a CUDA 12 driver (the default ml.g5 AMI has CUDA 11.4, too old for the image's ONNX Runtime).
    assert.equal(variants[0].InferenceAmiVersion, 'al2-ami-sagemaker-inference-gpu-3-1');
    assert.deepEqual(variants[0].ModelName, { 'Fn::GetAtt': [onlyId(t!, 'AWS::SageMaker::Model'), 'ModelName'] });
  });

  it('takes the instance type and timeouts from the config', () => {
    const variants = only(synth({ instanceType: 'ml.g6.xlarge', instanceUsdPerHour: '1.5', startupHealthCheckTimeoutSeconds: '900', variantName: 'Blue' }).modelTemplate!,
      'AWS::SageMaker::EndpointConfig').Properties.ProductionVariants;
    assert.equal(variants[0].InstanceType, 'ml.g6.xlarge');
    assert.equal(variants[0].ContainerStartupHealthCheckTimeoutInSeconds, 900);
    assert.equal(variants[0].VariantName, 'Blue');
  });

  it('refuses an AMI version SageMaker does not document for GPUs', () => {
    assert.throws(() => synth({ inferenceAmiVersion: 'al2-ami-sagemaker-inference-gpu-9' }), /`inferenceAmiVersion` must be one of al2-ami-sagemaker-inference-gpu-2/);
    assert.throws(() => synth({ inferenceAmiVersion: 'al2-ami-sagemaker-inference-neuron-2' }), /inferenceAmiVersion/);
    const variants = only(synth({ inferenceAmiVersion: 'al2-ami-sagemaker-inference-gpu-2-1' }).modelTemplate!, 'AWS::SageMaker::EndpointConfig').Properties.ProductionVariants;
    assert.equal(variants[0].InferenceAmiVersion, 'al2-ami-sagemaker-inference-gpu-2-1');
  });

  it('names the endpoint as the gateway expects and outputs the name', () => {
    const endpoint = only(t!, 'AWS::SageMaker::Endpoint').Properties;
    assert.equal(endpoint.EndpointName, 'earshot-kokoro');
    assert.deepEqual(endpoint.EndpointConfigName, { 'Fn::GetAtt': [onlyId(t!, 'AWS::SageMaker::EndpointConfig'), 'EndpointConfigName'] });
    t!.hasOutput('EndpointName', { Value: { 'Fn::GetAtt': [onlyId(t!, 'AWS::SageMaker::Endpoint'), 'EndpointName'] } });
    // make deploy reads it to refuse an instance type change SageMaker would refuse (lib/preflight.ts).
    t!.hasOutput('InstanceType', { Value: 'ml.g5.xlarge' });
  });

  it('keeps the instance count autoscaling chose when a redeploy brings a new endpoint config', () => {
    const endpoint = only(t!, 'AWS::SageMaker::Endpoint').Properties;
    assert.equal(endpoint.RetainAllVariantProperties, true);
    assert.equal(endpoint.ExcludeRetainedVariantProperties, undefined, 'no property is taken from the new config instead');
  });
});

describe('execution role', () => {
  const { modelTemplate: t } = synth();
  const all = statements(t!);

  it('is assumed by SageMaker only', () => {
    const trust = only(t!, 'AWS::IAM::Role').Properties.AssumeRolePolicyDocument.Statement;
    assert.deepEqual(trust.map((s: { Principal: unknown }) => s.Principal), [{ Service: 'sagemaker.amazonaws.com' }]);
  });

  it('pulls from the asset repository only (the ECR token call is account-wide by design)', () => {
    for (const s of all.filter((x) => actionsOf(x).some((a) => a.startsWith('ecr:')))) {
      const resources = resourcesOf(s);
      if (actionsOf(s).includes('ecr:GetAuthorizationToken')) {
        assert.deepEqual(actionsOf(s), ['ecr:GetAuthorizationToken']);
      } else {
        assert.deepEqual(resources, [`arn:aws:ecr:${REGION}:${ACCOUNT}:repository/cdk-hnb659fds-container-assets-${ACCOUNT}-${REGION}`]);
        assert.ok(actionsOf(s).includes('ecr:BatchGetImage'));
      }
    }
  });

  it("writes only this endpoint's logs", () => {
    const logs = all.filter((s) => actionsOf(s).some((a) => a.startsWith('logs:')));
    assert.equal(logs.length, 1);
    const group = `arn:aws:logs:${REGION}:${ACCOUNT}:log-group:/aws/sagemaker/Endpoints/earshot-kokoro`;
    assert.deepEqual(resourcesOf(logs[0]), [group, `${group}:log-stream:*`]);
    t!.hasResourceProperties('AWS::Logs::LogGroup', { LogGroupName: '/aws/sagemaker/Endpoints/earshot-kokoro', RetentionInDays: 30 });
  });

  it("publishes metrics to SageMaker's namespaces only (the dashboard's GPU charts)", () => {
    const metrics = all.filter((s) => actionsOf(s).includes('cloudwatch:PutMetricData'));
    assert.equal(metrics.length, 1);
    assert.deepEqual(actionsOf(metrics[0]), ['cloudwatch:PutMetricData']);
    assert.deepEqual(metrics[0].Condition, { StringLike: { 'cloudwatch:namespace': ['/aws/sagemaker/*', 'AWS/SageMaker'] } });
  });

  it('grants nothing else', () => {
    const actions = new Set(all.flatMap(actionsOf).map((a) => a.split(':')[0]));
    assert.deepEqual([...actions].sort(), ['cloudwatch', 'ecr', 'logs']);
  });
});

describe('autoscaling', () => {
  it('tracks concurrent streams per model between the configured bounds, after the endpoint exists', () => {
    const { modelTemplate: t } = synth({ minInstances: '1', maxInstances: '3', targetConcurrentStreams: '9' });
    const target = only(t!, 'AWS::ApplicationAutoScaling::ScalableTarget');
    assert.equal(target.Properties.ServiceNamespace, 'sagemaker');
    assert.equal(target.Properties.ScalableDimension, 'sagemaker:variant:DesiredInstanceCount');
    assert.equal(target.Properties.ResourceId, 'endpoint/earshot-kokoro/variant/AllTraffic');
    assert.equal(target.Properties.MinCapacity, 1);
    assert.equal(target.Properties.MaxCapacity, 3);
    assert.ok(target.DependsOn?.includes(onlyId(t!, 'AWS::SageMaker::Endpoint')));

    const policy = trackingPolicy(t!).Properties;
    assert.equal(policy.PolicyType, 'TargetTrackingScaling');
    assert.deepEqual(policy.ScalingTargetId, { Ref: onlyId(t!, 'AWS::ApplicationAutoScaling::ScalableTarget') });
    const tracking = policy.TargetTrackingScalingPolicyConfiguration;
    // Long-lived streams: concurrency, at high resolution, not invocations per minute.
    assert.equal(tracking.PredefinedMetricSpecification.PredefinedMetricType, 'SageMakerVariantConcurrentRequestsPerModelHighResolution');
    assert.equal(tracking.TargetValue, 9);
  });

  it("scales out on the gateway's own count of conversations Kokoro was too full to take, whatever the endpoint's metric counts", () => {
    const { modelTemplate: t } = synth();
    const [stepsId, steps] = policyOfType(t!, 'StepScaling');
    const config = steps.Properties.StepScalingPolicyConfiguration;
    assert.equal(config.AdjustmentType, 'ChangeInCapacity');
    assert.equal(config.Cooldown, 120);
    assert.deepEqual(config.StepAdjustments, [
      { MetricIntervalLowerBound: 0, MetricIntervalUpperBound: 2, ScalingAdjustment: 1 },
      { MetricIntervalLowerBound: 2, ScalingAdjustment: 2 },
    ]);
    const alarm = only(t!, 'AWS::CloudWatch::Alarm').Properties;
    const [sum, ...counted] = alarm.Metrics as { Id: string; Expression?: string; MetricStat?: { Metric: { Namespace: string; MetricName: string; Dimensions: { Name: string; Value: string }[] }; Period: number; Stat: string } }[];
    assert.equal(sum.Expression, 'FILL(spilled, 0) + FILL(refused, 0)');
    // Only what the gateway emits, on the dimensions it emits it with (docs/metrics.json, checked against metrics.rs).
    const contract: { metrics: { name: string; dimensions: string[][] }[] } = JSON.parse(fs.readFileSync(path.join(__dirname, '../../../docs/metrics.json'), 'utf8'));
    const said = counted.map((m) => [m.Id, m.MetricStat!.Metric.MetricName, m.MetricStat!.Metric.Dimensions.map((d) => `${d.Name}=${d.Value}`).join(','), m.MetricStat!.Stat, m.MetricStat!.Period]);
    assert.deepEqual(said, [['spilled', 'Overflows', 'Arm=kokoro', 'Sum', 60], ['refused', 'BusyRefusals', 'Backend=kokoro', 'Sum', 60]]);
    for (const m of counted) {
      const emitted = contract.metrics.find((c) => c.name === m.MetricStat!.Metric.MetricName);
      assert.ok(emitted?.dimensions.some((d) => JSON.stringify(d) === JSON.stringify(m.MetricStat!.Metric.Dimensions.map((x) => x.Name))), `${m.MetricStat!.Metric.MetricName} is emitted on those dimensions`);
      assert.equal(m.MetricStat!.Metric.Namespace, 'earshot');
    }
    assert.equal(alarm.Threshold, 1);
    assert.equal(alarm.ComparisonOperator, 'GreaterThanOrEqualToThreshold');
    assert.equal(alarm.TreatMissingData, 'notBreaching');
    assert.deepEqual(alarm.AlarmActions, [{ Ref: stepsId }]);
  });

  it("uses Application Auto Scaling's service-linked role instead of creating one", () => {
    const { modelTemplate: t } = synth();
    t!.resourceCountIs('AWS::IAM::Role', 1); // the execution role only
    const role = render(only(t!, 'AWS::ApplicationAutoScaling::ScalableTarget').Properties.RoleARN);
    assert.equal(role, `arn:aws:iam::${ACCOUNT}:role/aws-service-role/sagemaker.application-autoscaling.amazonaws.com/AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint`);
  });
});

describe('wiring', () => {
  it('deploys the gateway after the model stack', () => {
    const s = synth();
    assert.deepEqual(s.gateway.dependencies.map((d) => d.stackName), [s.model!.stackName]);
  });

  it('creates the endpoint log group before the endpoint, and gives SageMaker no right to create it again', () => {
    const { modelTemplate: t } = synth();
    const endpoint = only(t!, 'AWS::SageMaker::Endpoint');
    assert.ok(endpoint.DependsOn?.includes(onlyId(t!, 'AWS::Logs::LogGroup')), `DependsOn: ${endpoint.DependsOn}`);
    const actions = statements(t!).flatMap(actionsOf);
    assert.ok(!actions.includes('logs:CreateLogGroup'), actions.join(' '));
    assert.ok(actions.includes('logs:PutLogEvents'));
  });
});

describe('a CPU endpoint', () => {
  // An ml.c7i.xlarge: four vCPUs; the price is the deployment's to give (none is listed).
  const s = synth({ instanceType: 'ml.c7i.xlarge', instanceUsdPerHour: '0.25' });
  const manifest = JSON.parse(fs.readFileSync(path.join(s.app.outdir, `${s.model!.artifactId}.assets.json`), 'utf8'));
  const images = Object.values(manifest.dockerImages) as { source: { directory: string; dockerFile?: string } }[];

  it('builds the ONNX engine image from Dockerfile.cpu, with only what it copies', () => {
    assert.equal(images.length, 1);
    assert.equal(images[0].source.dockerFile, 'Dockerfile.cpu');
    const staged = fs.readdirSync(path.join(s.app.outdir, images[0].source.directory)).filter((f) => f !== '.dockerignore').sort();
    assert.deepEqual(staged, [...IMAGE_CONTEXTS.cpu].sort());
  });

  it('runs on SageMaker\'s default host, with no GPU AMI', () => {
    const variants = only(s.modelTemplate!, 'AWS::SageMaker::EndpointConfig').Properties.ProductionVariants;
    assert.equal(variants[0].InstanceType, 'ml.c7i.xlarge');
    assert.equal(variants[0].InferenceAmiVersion, undefined);
    assert.match(s.model!.templateOptions.description ?? '', /CPU endpoint/);
  });

  it('admits one conversation per vCPU and scales out before the instance is full', () => {
    const model = only(s.modelTemplate!, 'AWS::SageMaker::Model').Properties;
    assert.deepEqual(model.PrimaryContainer.Environment, { KOKORO_MAX_SESSIONS: '4' });
    const tracking = trackingPolicy(s.modelTemplate!).Properties.TargetTrackingScalingPolicyConfiguration;
    assert.equal(tracking.TargetValue, 3);
    // Given: the measured figure wins over the estimate.
    const measured = synth({ instanceType: 'ml.c7i.4xlarge', instanceUsdPerHour: '1', maxSessionsPerInstance: '6' }).modelTemplate!;
    assert.deepEqual(only(measured, 'AWS::SageMaker::Model').Properties.PrimaryContainer.Environment, { KOKORO_MAX_SESSIONS: '6' });
    assert.equal(trackingPolicy(measured).Properties.TargetTrackingScalingPolicyConfiguration.TargetValue, 4);
  });

  it('charts the CPU, not a GPU, and prices the instance at the price given', () => {
    const body = render(only(s.gatewayTemplate, 'AWS::CloudWatch::Dashboard').Properties.DashboardBody);
    assert.ok(body.includes('CPUUtilization') && !body.includes('GPUUtilization'));
    assert.ok(body.includes('1 * 0.25 * PERIOD('), 'one instance at $0.25 an hour in the cost per 1,000 answers');
  });
});

describe('the instance, checked', () => {
  it('keeps the GPU image\'s admission limit and scales out at the measured knee', () => {
    const { modelTemplate: t } = synth();
    assert.deepEqual(only(t!, 'AWS::SageMaker::Model').Properties.PrimaryContainer.Environment, { KOKORO_MAX_SESSIONS: '16' });
    assert.equal(trackingPolicy(t!).Properties.TargetTrackingScalingPolicyConfiguration.TargetValue, 4);
  });

  it('refuses an instance the image cannot run on, an unlisted one without a price, a target over what an instance admits', () => {
    assert.throws(() => synth({ instanceType: 'ml.inf2.xlarge', instanceUsdPerHour: '1' }), /`instanceType` must be a GPU \(ml.g\*, ml.p\*\) or CPU/);
    assert.throws(() => synth({ instanceType: 'ml.c7i.xlarge' }), /`instanceUsdPerHour` must be given for ml.c7i.xlarge: docs\/prices.json lists only ml.g5.xlarge/);
    assert.throws(() => synth({ instanceType: 'ml.c7i.xlarge', instanceUsdPerHour: '0.25', targetConcurrentStreams: '5' }), /`targetConcurrentStreams` \(5\) must not exceed the conversations one instance admits \(4\)/);
    assert.throws(() => synth({ instanceUsdPerHour: 'cheap' }), /`instanceUsdPerHour` must be a price in dollars/);
    // Polly only: no endpoint, nothing to check.
    assert.doesNotThrow(() => synth({ pollyOnly: 'true', backends: 'polly', instanceType: 'ml.inf2.xlarge' }));
  });
});
