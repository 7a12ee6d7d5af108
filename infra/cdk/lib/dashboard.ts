// The CloudWatch dashboard of a deployment, drawn from the Embedded Metric Format line the gateway logs after
// each conversation (dimensions Backend+Release, Backend+Release+Arm and Arm; docs/metrics.json) and from the
// Lambda's own metrics.
import { Duration } from 'aws-cdk-lib';
import * as cw from 'aws-cdk-lib/aws-cloudwatch';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { Backend, InstanceKind, RELEASE_MODES } from './config';
import { Prices, publishedPrices } from './prices';

export interface EarshotDashboardProps {
  readonly dashboardName: string;
  readonly namespace: string;
  readonly backends: Backend[];
  /** The A/B arms (backends with a weight): each conversation counts in the arm the split chose for it. */
  readonly arms: string[];
  readonly fn: lambda.IFunction;
  /** The Kokoro endpoint, when the deployment has one. */
  readonly endpoint?: { readonly name: string; readonly variant: string; readonly kind: InstanceKind };
  /**
   * What the cost widgets price: the function's memory, the endpoint's instances (none: Polly only) and what
   * one of them costs an hour (the listed price for the listed type, else the deployment's `instanceUsdPerHour`).
   */
  readonly cost: EndpointCost;
}

/**
 * Dollars per 1,000 answers of one arm, as metric math over one period: the characters Polly billed the
 * arm, the gateway's time (GB-seconds) and requests, and the endpoint's instance-hours shared by the answers
 * Kokoro spoke, in proportion (the same sums `earshot ab` makes per answer).
 */
export interface EndpointCost {
  readonly memoryMb: number;
  readonly instances: number;
  readonly instancePerHour: number;
}

/**
 * A price as metric math reads it: plain decimals. JavaScript writes $0.20 per million requests as `2e-7`, which
 * CloudWatch's metric math would read as the number 2 less an unknown metric `e`.
 */
export function decimal(x: number): string {
  return x.toFixed(12).replace(/0+$/, '').replace(/\.$/, '');
}

export function costPerThousand(namespace: string, arm: string, prices: Prices, cost: EndpointCost, withEndpoint: boolean): cw.MathExpression {
  const sum = (metricName: string, dimensionsMap: Record<string, string>) => new cw.Metric({ namespace, metricName, dimensionsMap, statistic: 'Sum', period: PERIOD });
  // Ids are unique within a graph, which holds every arm's expression: each carries its arm's name.
  const id = (name: string) => `${arm.replace(/[^a-z0-9]/gi, '').toLowerCase()}_${name}`;
  const usingMetrics: Record<string, cw.IMetric> = {
    [id('answers')]: sum('Answers', { Arm: arm }),
    [id('chars')]: sum('BilledCharacters', { Arm: arm }),
    [id('computems')]: sum('ComputeTime', { Arm: arm }),
  };
  const gb = cost.memoryMb / 1024;
  let spend = `FILL(${id('chars')}, 0) * ${decimal(prices.pollyPerMillionCharacters / 1e6)} + FILL(${id('computems')}, 0) / 1000 * ${decimal(gb)} * ${decimal(prices.lambdaPerGbSecond)} + ${id('answers')} * ${decimal(prices.lambdaPerMillionRequests / 1e6)}`;
  if (withEndpoint) {
    usingMetrics[id('spokenbyendpoint')] = sum('Answers', { Backend: 'kokoro', Arm: arm });
    usingMetrics[id('endpointanswers')] = sum('Answers', { Backend: 'kokoro' });
    const perPeriod = `${cost.instances} * ${decimal(cost.instancePerHour)} * PERIOD(${id('answers')}) / 3600`;
    spend += ` + ${perPeriod} * FILL(${id('spokenbyendpoint')}, 0) / FILL(${id('endpointanswers')}, 1)`;
  }
  return new cw.MathExpression({ expression: `1000 * (${spend}) / ${id('answers')}`, usingMetrics, period: PERIOD, label: `arm ${arm} $ per 1,000 answers` });
}

const PERIOD = Duration.minutes(5);

export class EarshotDashboard extends Construct {
  public readonly dashboard: cw.Dashboard;

  constructor(scope: Construct, id: string, props: EarshotDashboardProps) {
    super(scope, id);
    const { namespace, backends } = props;
    const prices = publishedPrices();

    // One line per backend and release mode, on the Backend+Release dimension set.
    const perArm = (metricName: string, statistic: string): cw.IMetric[] =>
      backends.flatMap((backend) => RELEASE_MODES.map((release) => new cw.Metric({
        namespace,
        metricName,
        dimensionsMap: { Backend: backend, Release: release },
        statistic,
        period: PERIOD,
        label: `${backend} ${release} ${statistic}`,
      })));
    // One line per A/B arm, on the Arm dimension set: the arms compared whole, whichever backend spoke
    // (a conversation that overflowed or failed over stays in its arm).
    const byArm = (metricName: string, statistic: string): cw.IMetric[] =>
      props.arms.map((arm) => new cw.Metric({ namespace, metricName, dimensionsMap: { Arm: arm }, statistic, period: PERIOD, label: `arm ${arm} ${statistic}` }));
    const graph = (title: string, left: cw.IMetric[], unit?: string) => new cw.GraphWidget({
      title,
      left,
      width: 12,
      height: 6,
      leftYAxis: { min: 0, label: unit, showUnits: false },
    });

    const widgets: cw.IWidget[][] = [
      [new cw.TextWidget({
        markdown: `# earshot\nTime to first audio is measured from the request's arrival to the first audio chunk sent, per backend (${backends.join(', ')}) and release mode (incremental, buffered). Metrics: namespace \`${namespace}\`.`,
        width: 24,
        height: 2,
      })],
      [
        graph('Time to first audio p50 (ms)', perArm('TimeToFirstAudio', 'p50'), 'ms'),
        graph('Time to first audio p90 (ms)', perArm('TimeToFirstAudio', 'p90'), 'ms'),
      ],
      [
        graph('Errors and throttles (Lambda)', [
          props.fn.metricErrors({ period: PERIOD, statistic: 'Sum', label: 'Errors' }),
          props.fn.metricThrottles({ period: PERIOD, statistic: 'Sum', label: 'Throttles' }),
          props.fn.metricInvocations({ period: PERIOD, statistic: 'Sum', label: 'Invocations' }),
        ], 'count'),
        graph('Audio underruns (sum)', perArm('Underruns', 'Sum'), 'count'),
      ],
      [
        graph('Synthesis latency p90 (ms)', perArm('SynthesisLatency', 'p90'), 'ms'),
        graph('Gap between sentences p90 (ms)', perArm('InterSentenceGap', 'p90'), 'ms'),
      ],
      [
        // Every silence a listener hears, told apart: the voice stopping inside a sentence (the worst), and
        // the gaps before sentences by what caused them.
        graph('Stalls inside sentences (sum)', perArm('Stalls', 'Sum'), 'count'),
        graph('Gaps before sentences by cause (sum)', ['UnderrunsText', 'UnderrunsBackend', 'UnderrunsRelease'].flatMap((cause) =>
          backends.map((backend) => new cw.Metric({
            namespace,
            metricName: cause,
            dimensionsMap: { Backend: backend, Release: 'incremental' },
            statistic: 'Sum',
            period: PERIOD,
            label: `${backend} ${cause.replace('Underruns', '').toLowerCase()}`,
          }))), 'count'),
      ],
      [
        graph('Orchestration overhead p99 (ms)', perArm('OrchestrationOverhead', 'p99'), 'ms'),
        // Over all sentences, the share the sentence cache played without the model.
        graph('Sentences spoken and from the sentence cache (sum)', backends.flatMap((backend) => ['Sentences', 'CacheHits'].map((metricName) => new cw.Metric({
          namespace,
          metricName,
          dimensionsMap: metricName === 'Sentences' ? { Backend: backend, Release: 'incremental' } : { Backend: backend },
          statistic: 'Sum',
          period: PERIOD,
          label: `${backend} ${metricName === 'Sentences' ? 'sentences' : 'from the cache'}`,
        }))), 'count'),
      ],
    ];
    if (props.arms.length > 0) {
      widgets.push(
        [
          graph('A/B arms: time to first audio p50 (ms)', byArm('TimeToFirstAudio', 'p50'), 'ms'),
          graph('A/B arms: time to first audio p90 (ms)', byArm('TimeToFirstAudio', 'p90'), 'ms'),
        ],
        [
          graph('A/B arms: gap between sentences p90 (ms)', byArm('InterSentenceGap', 'p90'), 'ms'),
          graph('A/B arms: underruns, failures and overflows (sum)', [...byArm('Underruns', 'Sum'), ...byArm('Failures', 'Sum'), ...byArm('Overflows', 'Sum')], 'count'),
        ],
        [
          graph('A/B arms: stalls inside sentences (sum)', byArm('Stalls', 'Sum'), 'count'),
          graph('A/B arms: time stalled inside sentences p90 (ms)', byArm('StallTime', 'p90'), 'ms'),
        ],
        [
          graph(
            `A/B arms: cost per 1,000 answers ($, ${prices.region} list prices of ${prices.asOf})`,
            props.arms.map((arm) => costPerThousand(namespace, arm, prices, props.cost, props.endpoint !== undefined)),
            '$',
          ),
          // The split actually served: each arm's answers by the backend that spoke them (overflow and
          // failover move answers to another backend; they stay in their arm).
          graph('A/B arms: answers by arm and the backend that spoke (sum)', props.arms.flatMap((arm) => backends.map((backend) => new cw.Metric({
            namespace,
            metricName: 'Answers',
            dimensionsMap: { Backend: backend, Arm: arm },
            statistic: 'Sum',
            period: PERIOD,
            label: `arm ${arm} spoken by ${backend}`,
          }))), 'answers'),
        ],
      );
    }

    const lastRow: cw.IWidget[] = [];
    if (backends.includes('polly')) {
      // Billed, and spared by the sentence cache (docs/cache.md): what the cache is worth on the bill.
      lastRow.push(graph('Polly billed characters (sum)', ['BilledCharacters', 'BilledCharactersSaved'].map((metricName) => new cw.Metric({
        namespace,
        metricName,
        dimensionsMap: { Backend: 'polly' },
        statistic: 'Sum',
        period: PERIOD,
        label: metricName === 'BilledCharacters' ? 'polly characters billed' : 'spared by the sentence cache',
      })), 'characters'));
    }
    if (props.endpoint) {
      const dims = { EndpointName: props.endpoint.name, VariantName: props.endpoint.variant };
      lastRow.push(graph('Kokoro endpoint', [
        new cw.Metric({ namespace: 'AWS/SageMaker', metricName: 'Invocations', dimensionsMap: dims, statistic: 'Sum', period: PERIOD, label: 'invocations' }),
        new cw.Metric({ namespace: 'AWS/SageMaker', metricName: 'ConcurrentRequestsPerModel', dimensionsMap: dims, statistic: 'Maximum', period: PERIOD, label: 'concurrent streams (what autoscaling tracks)' }),
        // The engine's own processor: the GPU's on a GPU instance; on a CPU one, the cores (SageMaker sums them:
        // up to 100% per vCPU).
        props.endpoint.kind === 'gpu'
          ? new cw.Metric({ namespace: '/aws/sagemaker/Endpoints', metricName: 'GPUUtilization', dimensionsMap: dims, statistic: 'Average', period: PERIOD, label: 'GPU utilization (%)' })
          : new cw.Metric({ namespace: '/aws/sagemaker/Endpoints', metricName: 'CPUUtilization', dimensionsMap: dims, statistic: 'Average', period: PERIOD, label: 'CPU utilization (%, 100 per vCPU)' }),
      ]));
      // The container holds a sentence back when it renders slower than real time: more of this is the
      // endpoint running out of speed before it runs out of sessions.
      lastRow.push(graph('Kokoro: audio held back so sentences play through (ms)', [
        new cw.Metric({ namespace, metricName: 'BackendHeldTime', dimensionsMap: { Backend: 'kokoro' }, statistic: 'p90', period: PERIOD, label: 'p90 per conversation' }),
        new cw.Metric({ namespace, metricName: 'BackendHeldTime', dimensionsMap: { Backend: 'kokoro' }, statistic: 'Sum', period: PERIOD, label: 'sum' }),
      ], 'ms'));
    }
    if (lastRow.length) widgets.push(lastRow);

    this.dashboard = new cw.Dashboard(this, 'Dashboard', {
      dashboardName: props.dashboardName,
      defaultInterval: Duration.hours(3),
      widgets,
    });
  }
}
