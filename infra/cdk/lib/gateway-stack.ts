// The gateway: the Rust Lambda behind a response-streaming function URL, its least-privilege role (the
// Kokoro endpoint, Polly streaming synthesis, one Bedrock model), its logs and its dashboard.
import { Annotations, ArnFormat, CfnOutput, Duration, RemovalPolicy, Stack, StackProps, Validations } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as cw from 'aws-cdk-lib/aws-cloudwatch';
import * as cwActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3assets from 'aws-cdk-lib/aws-s3-assets';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { bedrockModelArns, endpointArn, inferenceProfile, secretArn } from './arns';
import { BootstrapCode } from './bootstrap-code';
import { EarshotConfig, deployedBackends, instanceKind, instancePricePerHour, lexiconPath } from './config';
import { EarshotDashboard } from './dashboard';
import { deploymentCeiling, spendGuards, strangerCeiling } from './spend-guards';
import { CACHE_PREFIX, lambdaEnvironment } from './lambda-env';

/** The response headers a browser page may read (they name the backend and why it was chosen). */
export const EXPOSED_HEADERS = ['x-earshot-backend', 'x-earshot-backend-reason', 'x-earshot-arm', 'x-earshot-conversation-id', 'x-earshot-request-id', 'x-earshot-protocol'];

export interface KokoroEndpointRef {
  readonly endpointName: string;
  readonly variantName: string;
}

export interface EarshotGatewayStackProps extends StackProps {
  readonly config: EarshotConfig;
  /** Where the Lambda's code comes from (see bootstrap-code.ts). */
  readonly code: BootstrapCode;
  /** The Kokoro endpoint; absent exactly when the deployment is Polly-only. */
  readonly kokoro?: KokoroEndpointRef;
}

export class EarshotGatewayStack extends Stack {
  public readonly fn: lambda.Function;
  public readonly url: lambda.FunctionUrl;

  constructor(scope: Construct, id: string, props: EarshotGatewayStackProps) {
    super(scope, id, props);
    const c = props.config;
    if (c.pollyOnly && props.kokoro) throw new Error('a Polly-only gateway takes no Kokoro endpoint');
    if (!c.pollyOnly && !props.kokoro) throw new Error('the gateway needs the Kokoro endpoint unless pollyOnly is set');
    if (props.code.placeholder) {
      Annotations.of(this).addWarningV2('earshot:placeholder-bootstrap',
        `No bootstrap at ${props.code.expected}: synthesized with the placeholder folder; make deploy builds the real one.`);
    }

    const logGroup = new logs.LogGroup(this, 'GatewayLogs', {
      retention: c.logRetentionDays as logs.RetentionDays,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    // Its own role rather than the basic execution policy, whose log grant covers every log group.
    const role = new iam.Role(this, 'GatewayRole', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: 'earshot gateway: its logs, the Kokoro endpoint, Polly streaming, one Bedrock model, its interrupt table',
    });
    logGroup.grantWrite(role);

    // Live conversations and their interrupts: the speaking invocation reads its item, the interrupting one
    // writes it (functions/earshot-aws/src/interrupts.rs). On demand, and items expire by themselves.
    const interrupts = new dynamodb.Table(this, 'Interrupts', {
      partitionKey: { name: 'conversation_id', type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      timeToLiveAttribute: 'expires_at',
      removalPolicy: RemovalPolicy.DESTROY,
    });
    Validations.of(interrupts).acknowledge({
      id: 'AwsSolutions-DDB3',
      reason: 'Each item is one live conversation and its interrupt flag, expiring within the hour by TTL: there is nothing to recover to a point in time.',
    });

    // The deployment's conversation secret: the key of everything kept or sent upstream under a conversation
    // (the interrupt table's items, the agent's session ids) is an HMAC under it, so two deployments sharing an
    // agent never meet in one session (docs/protocol.md, "Conversation keys"). Read once at init.
    const conversationSecret = new secretsmanager.Secret(this, 'ConversationSecret', {
      description: 'earshot conversation secret: keys each conversation key (HMAC-SHA-256); every instance reads the same one',
      generateSecretString: { passwordLength: 64, excludePunctuation: true },
      removalPolicy: RemovalPolicy.DESTROY,
    });
    Validations.of(conversationSecret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason: 'Rotating the conversation secret changes every conversation key at once: live conversations could no longer be interrupted and every agent session would start afresh. It is replaced by a deploy when wanted, between conversations.',
    });

    // Token mode: the keys tokens are signed with, in Secrets Manager (the Lambda reads them at init). Unless
    // an existing secret is named, the stack creates one holding a random key `k1`; rotate by adding a key
    // under a new id, minting with it, and removing the old one once its tokens have expired.
    let tokenKeys: { name: string; arn: string } | undefined;
    if (c.authType === 'TOKEN') {
      if (c.tokenKeysSecret === '') {
        const secret = new secretsmanager.Secret(this, 'TokenKeys', {
          description: 'earshot token keys: {"kid": "secret"}; the gateway accepts a token signed with any of them',
          generateSecretString: { secretStringTemplate: '{}', generateStringKey: 'k1', passwordLength: 48, excludePunctuation: true },
          removalPolicy: RemovalPolicy.DESTROY,
        });
        Validations.of(secret).acknowledge({
          id: 'AwsSolutions-SMG4',
          reason: 'Token keys rotate by adding a key under a new id while tokens signed with the old one expire (minutes); a Lambda rotation function would replace the key under its id and invalidate live tokens.',
        });
        tokenKeys = { name: secret.secretName, arn: secret.secretArn };
      } else {
        tokenKeys = { name: c.tokenKeysSecret, arn: secretArn(this, c.tokenKeysSecret) };
      }
    }

    // The sentence cache's shared tier (docs/cache.md): sentences the Polly arm paid for, fetched by every
    // warm Lambda instead of billed again. Objects expire by a lifecycle rule; `make destroy` empties the bucket.
    let cacheBucket: s3.Bucket | undefined;
    if (c.cacheSharedTier) {
      cacheBucket = new s3.Bucket(this, 'SentenceCache', {
        encryption: s3.BucketEncryption.S3_MANAGED,
        blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
        enforceSSL: true,
        lifecycleRules: [{ prefix: CACHE_PREFIX, expiration: Duration.days(c.cacheSharedDays) }],
        removalPolicy: RemovalPolicy.DESTROY,
      });
      Validations.of(cacheBucket).acknowledge({
        id: 'AwsSolutions-S1',
        reason: 'A cache of synthesized audio read and written by this stack\'s Lambda alone; every call is in its own log and CloudTrail\'s data events can be turned on where needed.',
      });
    }

    // The deployment's pronunciation lexicon (docs/pronunciation.md): the file uploaded with the deploy as an
    // asset (a new object when it changes, so each cold start reads the deployed one), read by the gateway at init.
    const lexicon = c.lexiconFile !== '' ? new s3assets.Asset(this, 'Lexicon', { path: lexiconPath(c) }) : undefined;

    this.fn = new lambda.Function(this, 'Gateway', {
      role,
      description: 'earshot voice gateway (response streaming)',
      runtime: lambda.Runtime.PROVIDED_AL2023,
      // The bootstrap is built for this processor (the root Makefile's build-lambda reads the same setting).
      architecture: c.lambdaArchitecture === 'x86_64' ? lambda.Architecture.X86_64 : lambda.Architecture.ARM_64,
      handler: 'bootstrap', // a custom runtime runs the `bootstrap` file; the handler name is not used
      code: lambda.Code.fromAsset(props.code.dir),
      // Long answers stream for minutes; the memory also buys CPU for the HTTP/2 streams and base64 encoding.
      memorySize: c.lambdaMemoryMb,
      timeout: Duration.seconds(c.lambdaTimeoutSeconds),
      environment: lambdaEnvironment(c, interrupts.tableName, conversationSecret.secretName, props.kokoro?.endpointName, tokenKeys?.name, cacheBucket?.bucketName, lexicon?.s3ObjectUrl),
      // A cap on simultaneous conversations, and so on spend (0: unreserved).
      reservedConcurrentExecutions: c.reservedConcurrency > 0 ? c.reservedConcurrency : undefined,
      logGroup,
    });

    if (lexicon) {
      // That one object, read once at init.
      this.fn.addToRolePolicy(new iam.PolicyStatement({ sid: 'LexiconObject', actions: ['s3:GetObject'], resources: [lexicon.bucket.arnForObjects(lexicon.s3ObjectKey)] }));
    }
    if (cacheBucket) {
      // Objects under the cache's prefix only: read one, write one.
      this.fn.addToRolePolicy(new iam.PolicyStatement({
        sid: 'SentenceCacheObjects',
        actions: ['s3:GetObject', 's3:PutObject'],
        resources: [cacheBucket.arnForObjects(`${CACHE_PREFIX}*`)],
      }));
      // Listing the prefix lets S3 answer a missing object 404 (NoSuchKey); without it a miss is 403.
      this.fn.addToRolePolicy(new iam.PolicyStatement({
        sid: 'SentenceCacheMisses',
        actions: ['s3:ListBucket'],
        resources: [cacheBucket.bucketArn],
        conditions: { StringLike: { 's3:prefix': `${CACHE_PREFIX}*` } },
      }));
      Validations.of(this.fn.role!).acknowledge({
        id: `AwsSolutions-IAM5[Resource::<${this.getLogicalId(cacheBucket.node.defaultChild as s3.CfnBucket)}.Arn>/${CACHE_PREFIX}*]`,
        reason: 'One object per cached sentence, named by a digest at run time: the prefix is the narrowest resource, and only GetObject and PutObject are granted on it.',
      });
      new CfnOutput(this, 'CacheBucket', { value: cacheBucket.bucketName, description: "The sentence cache's shared tier (make destroy empties it)" });
    }
    if (props.kokoro) {
      // The conversation is InvokeEndpointWithBidirectionalStream, which its own IAM action authorizes: without
      // it the stream is denied at run time (and, with failover on, every conversation silently spills to Polly
      // while the GPU bills). InvokeEndpoint is granted beside it for one-shot calls. cfn-lint's action list
      // does not know the bidirectional action yet (W3037, "unknown action"), so the statement lives in a
      // policy of its own that suppresses W3037 for that resource alone, and every other statement stays checked.
      const invoke = new iam.Policy(this, 'KokoroEndpointInvoke', {
        statements: [new iam.PolicyStatement({
          sid: 'KokoroEndpoint',
          actions: ['sagemaker:InvokeEndpoint', 'sagemaker:InvokeEndpointWithBidirectionalStream'],
          resources: [endpointArn(this, props.kokoro.endpointName)],
        })],
      });
      invoke.attachToRole(this.fn.role!);
      (invoke.node.defaultChild as iam.CfnPolicy).cfnOptions.metadata = {
        'cfn-lint': { config: { ignore_checks: ['W3037'] } },
        reason: 'W3037: sagemaker:InvokeEndpointWithBidirectionalStream is a real action that cfn-lint does not list yet',
      };
      this.fn.addToRolePolicy(new iam.PolicyStatement({
        sid: 'KokoroEndpointHealth',
        // /healthz asks SageMaker whether the endpoint is InService (cached 30 s), on this endpoint alone.
        actions: ['sagemaker:DescribeEndpoint'],
        resources: [endpointArn(this, props.kokoro.endpointName)],
      }));
    }
    if (deployedBackends(c).includes('polly')) {
      this.fn.addToRolePolicy(new iam.PolicyStatement({
        sid: 'PollyStreamingSynthesis',
        // StartSpeechSynthesisStream speaks; DescribeVoices is /healthz's probe (cached 30 s, nothing billed).
        actions: ['polly:StartSpeechSynthesisStream', 'polly:DescribeVoices'],
        // Polly's synthesis and voice actions have no voice or endpoint resource to scope to (only lexicons
        // are resources), so `*` is the narrowest resource Polly supports here.
        resources: ['*'],
      }));
      Validations.of(this.fn.role!).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason: 'Polly StartSpeechSynthesisStream and DescribeVoices take no resource but `*` (only lexicons are Polly resources); every other grant of this role names its resource.',
      });
    }
    this.fn.addToRolePolicy(new iam.PolicyStatement({
      sid: 'ConversationInterrupts',
      // The four item calls the store makes, on its one table: no scans, queries or table changes.
      actions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
      resources: [interrupts.tableArn],
    }));
    this.fn.addToRolePolicy(new iam.PolicyStatement({
      sid: 'ConversationSecret',
      // The conversation secret, read once at init; on this secret alone.
      actions: ['secretsmanager:GetSecretValue'],
      resources: [conversationSecret.secretArn],
    }));
    if (tokenKeys) {
      this.fn.addToRolePolicy(new iam.PolicyStatement({
        sid: 'TokenKeys',
        // The token keys, read once at init; on this secret alone.
        actions: ['secretsmanager:GetSecretValue'],
        resources: [tokenKeys.arn],
      }));
    }
    if (c.agent === 'bedrock') {
      this.fn.addToRolePolicy(new iam.PolicyStatement({
        sid: 'BedrockAgentStream',
        actions: ['bedrock:InvokeModelWithResponseStream'], // what ConverseStream is authorized as
        resources: bedrockModelArns(this, c.bedrockModelId),
      }));
    } else if (c.agent === 'agentcore') {
      this.fn.addToRolePolicy(new iam.PolicyStatement({
        sid: 'AgentCoreRuntime',
        // The runtime and the one endpoint the gateway invokes (the service authorization reference names
        // both as resources of InvokeAgentRuntime).
        actions: ['bedrock-agentcore:InvokeAgentRuntime'],
        resources: [c.agentcoreRuntimeArn, `${c.agentcoreRuntimeArn}/runtime-endpoint/${c.agentcoreQualifier || 'DEFAULT'}`],
      }));
    } else if (c.agentKeySecret !== '') {
      this.fn.addToRolePolicy(new iam.PolicyStatement({
        sid: 'AgentKeySecret',
        // The agent's key, read once at init; on this secret alone.
        actions: ['secretsmanager:GetSecretValue'],
        resources: [secretArn(this, c.agentKeySecret)],
      }));
    }
    const profile = c.agent === 'bedrock' ? inferenceProfile(c.bedrockModelId) : undefined;
    if (profile) {
      Validations.of(role).acknowledge({
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/${profile.model}]`,
        reason: 'An inference profile routes to its foundation model in Regions only Bedrock knows; Bedrock documents granting that one model in each, so the Region is the wildcard, the model is not.',
      });
    }

    // AWS_IAM: server-to-server callers sign with SigV4. TOKEN: public at the AWS level, the gateway checks a
    // token on every request before any work. NONE: public, an explicit opt-in for demos. Only the last two
    // are called from browsers, and then only from the listed origins.
    const open = c.authType === 'NONE';
    const browsers = c.authType !== 'AWS_IAM';
    this.url = this.fn.addFunctionUrl({
      invokeMode: lambda.InvokeMode.RESPONSE_STREAM,
      authType: browsers ? lambda.FunctionUrlAuthType.NONE : lambda.FunctionUrlAuthType.AWS_IAM,
      cors: browsers
        ? {
            allowedOrigins: c.corsAllowedOrigins,
            allowedMethods: [lambda.HttpMethod.POST, lambda.HttpMethod.GET],
            allowedHeaders: c.authType === 'TOKEN' ? ['content-type', 'accept', 'authorization'] : ['content-type', 'accept'],
            exposedHeaders: EXPOSED_HEADERS,
            maxAge: Duration.hours(1),
          }
        : undefined,
    });
    // IAM callers: a policy to attach to them. InvokeFunction only as part of a call through the URL
    // (lambda:InvokedViaFunctionUrl), so that no caller can invoke the function directly with a hand-made
    // function-URL event naming another principal as its caller, and so reach that principal's
    // conversations (AWS, "Control access to Lambda function URLs").
    if (c.authType === 'AWS_IAM') {
      const callers = new iam.ManagedPolicy(this, 'CallerPolicy', {
        description: 'Attach to the roles and users that may call the earshot gateway (SigV4, through its function URL only)',
        statements: [
          new iam.PolicyStatement({
            sid: 'InvokeTheUrl',
            actions: ['lambda:InvokeFunctionUrl'],
            resources: [this.fn.functionArn],
            conditions: { StringEquals: { 'lambda:FunctionUrlAuthType': 'AWS_IAM' } },
          }),
          new iam.PolicyStatement({
            sid: 'InvokeOnlyThroughTheUrl',
            actions: ['lambda:InvokeFunction'],
            resources: [this.fn.functionArn],
            conditions: { Bool: { 'lambda:InvokedViaFunctionUrl': 'true' } },
          }),
        ],
      });
      new CfnOutput(this, 'CallerPolicyArn', { value: callers.managedPolicyArn, description: 'Attach to IAM callers of the gateway (earshot say --sigv4, make doctor)' });
    }
    if (tokenKeys) new CfnOutput(this, 'TokenKeysSecret', { value: tokenKeys.arn, description: 'The token keys: mint tokens with them (docs/access.md)' });
    // API keys for OpenAI clients live in the same table as the conversations (one GetItem a request, which the
    // store's grant already covers): `earshot key create --outputs infra/cdk/cdk.out/outputs.json --owner app`.
    if (c.authType === 'TOKEN') {
      new CfnOutput(this, 'KeysTable', { value: interrupts.tableName, description: 'API keys for OpenAI clients: earshot key create --outputs infra/cdk/cdk.out/outputs.json --owner NAME' });
    }

    // What bounds the bill, said in one line beside the alarms (make deploy prints it): the caps that stop
    // spending, then the alarms that only tell.
    new CfnOutput(this, 'SpendGuards', { value: spendGuards(c), description: 'What bounds the spend: caps that refuse, then alarms that notify' });
    // Auth NONE: anyone may call, so make deploy says what one stranger can cost in an hour at most.
    if (c.authType === 'NONE') new CfnOutput(this, 'StrangerCeiling', { value: strangerCeiling(c), description: 'What one caller address can spend in an hour at most, at list prices' });
    new CfnOutput(this, 'DeploymentCeiling', { value: deploymentCeiling(c), description: 'What all callers together can spend in an hour at most, at list prices' });

    // Spend guards: an alarm when an hour brings more invocations, or more Polly characters, than expected.
    // An alarm that tells nobody guards nothing: each publishes to a topic of the stack's, which an
    // e-mail address from the config subscribes to (or anything else the operator adds: output AlarmTopicArn).
    const alarms: cw.Alarm[] = [];
    if (c.alarmInvocationsPerHour > 0) {
      alarms.push(new cw.Alarm(this, 'InvocationsPerHour', {
        alarmDescription: `earshot: more than ${c.alarmInvocationsPerHour} conversations in an hour`,
        metric: this.fn.metricInvocations({ period: Duration.hours(1), statistic: 'Sum' }),
        threshold: c.alarmInvocationsPerHour,
        evaluationPeriods: 1,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: cw.TreatMissingData.NOT_BREACHING,
      }));
    }
    // The deployment's ceiling refused someone (docs/security.md): the service, not one caller, is out of budget.
    if (c.ceilingCharsPerHour > 0 || c.ceilingInputCharsPerHour > 0 || c.ceilingRequestsPerHour > 0) {
      alarms.push(new cw.Alarm(this, 'SpendCeilingReached', {
        alarmDescription: 'earshot: all callers together reached the deployment\'s spend ceiling for the hour (503 spend_ceiling)',
        // One metric per limit (an alarm cannot watch a SEARCH), summed.
        metric: new cw.MathExpression({
          expression: 'FILL(characters, 0) + FILL(input, 0) + FILL(requests, 0)',
          usingMetrics: Object.fromEntries(
            ['characters', 'input', 'requests'].map((limit) => [
              limit,
              new cw.Metric({ namespace: c.metricsNamespace, metricName: 'SpendCeilingReached', dimensionsMap: { Limit: limit }, statistic: 'Sum', period: Duration.minutes(5) }),
            ]),
          ),
          label: 'SpendCeilingReached',
          period: Duration.minutes(5),
        }),
        threshold: 0,
        evaluationPeriods: 1,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: cw.TreatMissingData.NOT_BREACHING,
      }));
    }
    if (c.alarmPollyCharactersPerHour > 0 && deployedBackends(c).includes('polly')) {
      alarms.push(new cw.Alarm(this, 'PollyCharactersPerHour', {
        alarmDescription: `earshot: Polly billed more than ${c.alarmPollyCharactersPerHour} characters in an hour`,
        metric: new cw.Metric({ namespace: c.metricsNamespace, metricName: 'BilledCharacters', dimensionsMap: { Backend: 'polly' }, statistic: 'Sum', period: Duration.hours(1) }),
        threshold: c.alarmPollyCharactersPerHour,
        evaluationPeriods: 1,
        comparisonOperator: cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: cw.TreatMissingData.NOT_BREACHING,
      }));
    }
    if (alarms.length > 0) {
      const topic = new sns.Topic(this, 'AlarmTopic', { displayName: 'earshot spend alarms', enforceSSL: true });
      Validations.of(topic).acknowledge({
        id: 'AwsSolutions-SNS2',
        reason: 'CloudWatch alarms cannot publish to a topic encrypted with the AWS-managed SNS key, and an alarm message holds no secret (a threshold and a count), so a customer-managed key would cost without protecting anything.',
      });
      // enforceSSL writes a topic policy, which replaces SNS's default one: without a statement of its own,
      // CloudWatch may not publish and every alarm fails to notify (AWS knowledge center, "Why didn't I
      // receive an SNS notification for my CloudWatch alarm trigger?"). Held to this account's alarms.
      topic.addToResourcePolicy(new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsPublish',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [topic.topicArn],
        conditions: {
          ArnLike: { 'aws:SourceArn': this.formatArn({ service: 'cloudwatch', resource: 'alarm', resourceName: '*', arnFormat: ArnFormat.COLON_RESOURCE_NAME }) },
          StringEquals: { 'aws:SourceAccount': this.account },
        },
      }));
      if (c.alarmEmail !== '') topic.addSubscription(new subscriptions.EmailSubscription(c.alarmEmail));
      for (const alarm of alarms) alarm.addAlarmAction(new cwActions.SnsAction(topic));
      new CfnOutput(this, 'AlarmTopicArn', { value: topic.topicArn, description: 'The spend alarms publish here: subscribe whoever must know' });
    }
    if (open) {
      Annotations.of(this).addWarningV2('earshot:public-url', 'authType is NONE: anyone with the URL can run the agent and the voices at your cost.');
    }

    new EarshotDashboard(this, 'Dashboard', {
      dashboardName: this.stackName,
      namespace: c.metricsNamespace,
      backends: deployedBackends(c),
      arms: c.pollyOnly ? ['polly'] : deployedBackends(c).filter((b) => (c.abWeights[b] ?? 0) > 0),
      fn: this.fn,
      endpoint: props.kokoro ? { name: props.kokoro.endpointName, variant: props.kokoro.variantName, kind: instanceKind(c.instanceType) ?? 'gpu' } : undefined,
      cost: { memoryMb: c.lambdaMemoryMb, instances: props.kokoro ? c.minInstances : 0, instancePerHour: props.kokoro ? instancePricePerHour(c) : 0 },
    });

    new CfnOutput(this, 'FunctionUrl', { value: this.url.url, description: `The gateway's URL (auth ${c.authType}); POST /v1/speak` });
    new CfnOutput(this, 'AuthType', { value: c.authType });
    new CfnOutput(this, 'LogGroup', { value: logGroup.logGroupName, description: "The gateway's log group: earshot ab --log-group reads its metric lines" });
    new CfnOutput(this, 'Backends', { value: deployedBackends(c).join(',') });
    if (props.kokoro) new CfnOutput(this, 'EndpointName', { value: props.kokoro.endpointName, description: 'The Kokoro SageMaker endpoint' });
  }
}
