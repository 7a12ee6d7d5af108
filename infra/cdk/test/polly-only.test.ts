// The cheap first deployment: Polly only. No model stack, no SageMaker resource or permission anywhere,
// and a gateway told that Polly is its one backend.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { actionsOf, only, statements, synth } from './fixture';

describe('Polly-only deployment', () => {
  const s = synth({ pollyOnly: 'true' });
  const t = s.gatewayTemplate;

  it('has no model stack', () => {
    assert.equal(s.model, undefined);
    assert.deepEqual(s.app.node.children.filter((c) => 'templateFile' in c).map((c) => c.node.id), ['EarshotGateway']);
    assert.equal(s.gateway.dependencies.length, 0);
  });

  it('has no SageMaker or autoscaling resource', () => {
    const types = Object.values(t.toJSON().Resources as Record<string, { Type: string }>).map((r) => r.Type);
    assert.deepEqual(types.filter((type) => type.startsWith('AWS::SageMaker::') || type.startsWith('AWS::ApplicationAutoScaling::')), []);
  });

  it('grants no SageMaker action', () => {
    const actions = statements(t).flatMap(actionsOf);
    assert.deepEqual(actions.filter((a) => a.toLowerCase().startsWith('sagemaker:')), []);
    assert.ok(actions.includes('polly:StartSpeechSynthesisStream'));
    assert.ok(actions.includes('bedrock:InvokeModelWithResponseStream'));
  });

  it('tells the gateway Polly is its only backend, with no endpoint', () => {
    const env = only(t, 'AWS::Lambda::Function').Properties.Environment.Variables;
    assert.equal(env.EARSHOT_BACKENDS, 'polly');
    assert.equal(env.EARSHOT_AB_WEIGHTS, 'polly=100');
    assert.equal(env.EARSHOT_FAILOVER, 'false');
    assert.equal('EARSHOT_SAGEMAKER_ENDPOINT' in env, false);
    assert.equal(env.EARSHOT_POLLY_VOICE, 'ruth');
  });

  it('outputs the URL and no endpoint', () => {
    const outputs = Object.keys(t.toJSON().Outputs);
    assert.ok(outputs.includes('FunctionUrl'));
    assert.ok(!outputs.includes('EndpointName'));
  });

  it('mentions SageMaker nowhere in its template', () => {
    assert.doesNotMatch(JSON.stringify(t.toJSON()), /sagemaker/i);
  });
});
