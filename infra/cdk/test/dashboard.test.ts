// The dashboard: time to first audio p50 and p90 per backend and release mode, Lambda errors, Polly's
// billed characters and underruns, all read from the metrics the gateway really logs.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import { only, render, synth } from './fixture';

interface Widget { type: string; properties: { title?: string; metrics?: unknown[][] } }

function widgets(t: Template): Widget[] {
  const body = only(t, 'AWS::CloudWatch::Dashboard').Properties.DashboardBody;
  return JSON.parse(render(body)).widgets;
}

/** Each metric line of a widget as `namespace metric dim=value… stat` (a math expression's own entry is left out; the
 * metrics it uses are lines). */
function lines(w: Widget): string[] {
  return (w.properties.metrics ?? []).filter((m) => typeof m[0] === 'string').map((m) => {
    const opts = m[m.length - 1] as { stat: string };
    const [ns, name, ...dims] = m.slice(0, -1) as string[];
    const pairs = [];
    for (let i = 0; i < dims.length; i += 2) pairs.push(`${dims[i]}=${dims[i + 1]}`);
    return [ns, name, ...pairs, opts.stat].join(' ');
  });
}

const byTitle = (ws: Widget[], pattern: RegExp) => {
  const found = ws.filter((w) => pattern.test(w.properties.title ?? ''));
  assert.equal(found.length, 1, `one widget titled ${pattern}`);
  return found[0];
};

describe('dashboard', () => {
  const { gatewayTemplate: t } = synth();
  const ws = widgets(t);

  for (const stat of ['p50', 'p90']) {
    it(`plots time to first audio ${stat} for kokoro and polly, incremental and buffered`, () => {
      assert.deepEqual(lines(byTitle(ws, new RegExp(`^Time to first audio ${stat}`))).sort(), [
        `earshot TimeToFirstAudio Backend=kokoro Release=buffered ${stat}`,
        `earshot TimeToFirstAudio Backend=kokoro Release=incremental ${stat}`,
        `earshot TimeToFirstAudio Backend=polly Release=buffered ${stat}`,
        `earshot TimeToFirstAudio Backend=polly Release=incremental ${stat}`,
      ]);
    });
  }

  it("plots the Lambda's errors", () => {
    const errors = lines(byTitle(ws, /^Errors/));
    assert.ok(errors.includes('AWS/Lambda Errors FunctionName=<Ref:' + Object.keys(t.findResources('AWS::Lambda::Function'))[0] + '> Sum'), errors.join('\n'));
  });

  it("plots Polly's billed characters and the underruns", () => {
    assert.deepEqual(lines(byTitle(ws, /^Polly billed characters/)), ['earshot BilledCharacters Backend=polly Sum', 'earshot BilledCharactersSaved Backend=polly Sum']);
    assert.deepEqual(lines(byTitle(ws, /^Sentences spoken and from the sentence cache/)).sort(), [
      'earshot CacheHits Backend=kokoro Sum',
      'earshot CacheHits Backend=polly Sum',
      'earshot Sentences Backend=kokoro Release=incremental Sum',
      'earshot Sentences Backend=polly Release=incremental Sum',
    ]);
    assert.equal(lines(byTitle(ws, /^Audio underruns/)).filter((l) => / Underruns .* Sum$/.test(l)).length, 4);
  });

  it('tells stalls inside sentences apart from gaps before them, and the gaps by cause', () => {
    assert.deepEqual(lines(byTitle(ws, /^Stalls inside sentences/)).sort(), [
      'earshot Stalls Backend=kokoro Release=buffered Sum',
      'earshot Stalls Backend=kokoro Release=incremental Sum',
      'earshot Stalls Backend=polly Release=buffered Sum',
      'earshot Stalls Backend=polly Release=incremental Sum',
    ]);
    const causes = lines(byTitle(ws, /^Gaps before sentences by cause/));
    for (const cause of ['UnderrunsText', 'UnderrunsBackend', 'UnderrunsRelease']) {
      assert.deepEqual(causes.filter((l) => l.includes(` ${cause} `)).sort(), [
        `earshot ${cause} Backend=kokoro Release=incremental Sum`,
        `earshot ${cause} Backend=polly Release=incremental Sum`,
      ]);
    }
    assert.deepEqual(lines(byTitle(ws, /^A\/B arms: stalls inside sentences/)).sort(), ['earshot Stalls Arm=kokoro Sum', 'earshot Stalls Arm=polly Sum']);
    assert.deepEqual(lines(byTitle(ws, /^A\/B arms: time stalled/)).sort(), ['earshot StallTime Arm=kokoro p90', 'earshot StallTime Arm=polly p90']);
  });

  it('charts the audio the Kokoro container held back, the endpoint running short of speed', () => {
    assert.deepEqual(lines(byTitle(ws, /^Kokoro: audio held back/)).sort(), ['earshot BackendHeldTime Backend=kokoro Sum', 'earshot BackendHeldTime Backend=kokoro p90']);
  });

  it('uses the configured metrics namespace', () => {
    const other = widgets(synth({ metricsNamespace: 'earshot-staging' }).gatewayTemplate);
    assert.ok(lines(byTitle(other, /^Time to first audio p50/)).every((l) => l.startsWith('earshot-staging TimeToFirstAudio ')));
  });

  it('draws only Polly lines, and no endpoint, when Polly-only', () => {
    const polly = widgets(synth({ pollyOnly: 'true' }).gatewayTemplate);
    assert.deepEqual(lines(byTitle(polly, /^Time to first audio p90/)).sort(), [
      'earshot TimeToFirstAudio Backend=polly Release=buffered p90',
      'earshot TimeToFirstAudio Backend=polly Release=incremental p90',
    ]);
    assert.equal(polly.filter((w) => /Kokoro endpoint/.test(w.properties.title ?? '')).length, 0);
    assert.equal(polly.filter((w) => /^Kokoro: audio held back/.test(w.properties.title ?? '')).length, 0);
  });

  it('charts only metrics the gateway emits, on the dimensions it emits them with (docs/metrics.json)', () => {
    const contract: { metrics: { name: string; dimensions: string[][] }[] } = JSON.parse(readFileSync(join(__dirname, '../../../docs/metrics.json'), 'utf8'));
    const emitted = new Set(contract.metrics.flatMap((m) => m.dimensions.map((d) => `${m.name} ${[...d].sort().join(',')}`)));
    const charted = ws.flatMap(lines).filter((l) => l.startsWith('earshot '));
    assert.ok(charted.length >= 20, `the dashboard's own metrics were read: ${charted.length}`);
    for (const line of charted) {
      const [, name, ...rest] = line.split(' ');
      const dims = rest.slice(0, -1).map((p) => p.split('=')[0]).sort().join(',');
      assert.ok(emitted.has(`${name} ${dims}`), `the dashboard charts ${name} on [${dims}], which the gateway does not emit`);
    }
  });

  it('prices each arm per 1,000 answers from what the gateway emits and the dated prices earshot ab uses', () => {
    const cost = byTitle(ws, /^A\/B arms: cost per 1,000 answers/);
    assert.match(cost.properties.title ?? '', /us-east-1 list prices of \d{4}-\d{2}-\d{2}/);
    const expressions = (cost.properties.metrics ?? []).filter((m) => typeof m[0] === 'object').map((m) => (m[0] as { expression: string }).expression);
    assert.equal(expressions.length, 2, 'one expression per arm');
    const prices = JSON.parse(readFileSync(join(__dirname, '../../../docs/prices.json'), 'utf8'));
    for (const [e, arm] of expressions.map((e, i) => [e, ['kokoro', 'polly'][i]])) {
      assert.ok(e.startsWith('1000 * (') && e.endsWith(`) / ${arm}_answers`), e);
      assert.ok(e.includes(`* ${prices.polly_generative_usd_per_million_characters.value / 1e6}`), `Polly's price per character: ${e}`);
      assert.ok(e.includes(`* 1 * ${prices.lambda_usd_per_gb_second.value}`), `1024 MB at the GB-second price: ${e}`);
      assert.ok(e.includes(`1 * ${prices.sagemaker_usd_per_instance_hour.value} * PERIOD(${arm}_answers) / 3600`), `one instance-hour's share: ${e}`);
      // Metric math reads `2e-7` as 2 less a metric named `e`: every price is written as a plain decimal.
      assert.ok(!/\d[eE][-+]?\d/.test(e), `no exponent notation: ${e}`);
      assert.ok(e.includes(`${arm}_answers * ${(prices.lambda_usd_per_million_requests.value / 1e6).toFixed(12).replace(/0+$/, '')}`), `the request price: ${e}`);
    }
    assert.deepEqual(lines(cost).sort(), [
      'earshot Answers Arm=kokoro Backend=kokoro Sum', 'earshot Answers Arm=kokoro Sum', 'earshot Answers Arm=polly Backend=kokoro Sum', 'earshot Answers Arm=polly Sum',
      'earshot Answers Backend=kokoro Sum', 'earshot Answers Backend=kokoro Sum',
      'earshot BilledCharacters Arm=kokoro Sum', 'earshot BilledCharacters Arm=polly Sum', 'earshot ComputeTime Arm=kokoro Sum', 'earshot ComputeTime Arm=polly Sum',
    ].sort());
    // Polly only: no endpoint to share.
    const polly = widgets(synth({ pollyOnly: 'true' }).gatewayTemplate);
    const pollyCost = (byTitle(polly, /^A\/B arms: cost per 1,000 answers/).properties.metrics ?? []).filter((m) => typeof m[0] === 'object');
    assert.ok(!(pollyCost[0][0] as { expression: string }).expression.includes('PERIOD'));
  });

  it('shows the traffic split actually served: each arm by the backend that spoke', () => {
    assert.deepEqual(lines(byTitle(ws, /^A\/B arms: answers by arm and the backend/)).sort(), [
      'earshot Answers Arm=kokoro Backend=kokoro Sum', 'earshot Answers Arm=kokoro Backend=polly Sum',
      'earshot Answers Arm=polly Backend=kokoro Sum', 'earshot Answers Arm=polly Backend=polly Sum',
    ]);
  });

  it('compares the A/B arms side by side, on the Arm dimension set', () => {
    assert.deepEqual(lines(byTitle(ws, /^A\/B arms: time to first audio p50/)).sort(), ['earshot TimeToFirstAudio Arm=kokoro p50', 'earshot TimeToFirstAudio Arm=polly p50']);
    assert.deepEqual(lines(byTitle(ws, /^A\/B arms: gap between sentences p90/)).sort(), ['earshot InterSentenceGap Arm=kokoro p90', 'earshot InterSentenceGap Arm=polly p90']);
    const counts = lines(byTitle(ws, /^A\/B arms: underruns, failures and overflows/));
    for (const metric of ['Underruns', 'Failures', 'Overflows']) {
      assert.deepEqual(counts.filter((l) => l.includes(` ${metric} `)).sort(), [`earshot ${metric} Arm=kokoro Sum`, `earshot ${metric} Arm=polly Sum`]);
    }
    // An arm with no weight is not an arm.
    const kokoroOnly = widgets(synth({ abWeights: 'kokoro=100,polly=0' }).gatewayTemplate);
    assert.deepEqual(lines(byTitle(kokoroOnly, /^A\/B arms: time to first audio p50/)), ['earshot TimeToFirstAudio Arm=kokoro p50']);
  });
});
