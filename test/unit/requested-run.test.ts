/** Both request shapes folded into one value (src/controller/requested-run.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { describeRequested, installedPipelineName, requestedOf } from '../../src/controller/requested-run.js';
import type { InternalRequestSpec } from '../../src/api/types.js';

test('spec.request and spec.pipeline.pipelineRef.name mean the same', () => {
  const a = requestedOf({ request: 'sign', params: { image: 'x' } });
  const b = requestedOf({ pipeline: { pipelineRef: { name: 'sign' } }, params: { image: 'x' } });
  assert.deepEqual(a, b);
  assert.equal(a.kind, 'installed');
  assert.equal(installedPipelineName({ request: 'sign' }), 'sign');
  assert.equal(installedPipelineName({ pipeline: { pipelineRef: { name: 'p' } } }), 'p');
  assert.equal(installedPipelineName({ pipeline: { pipelineRef: { resolver: 'git' } } }), undefined);
});

test('a resolver reference keeps its params; describeRequested names resolver and path', () => {
  const spec: InternalRequestSpec = {
    pipeline: { pipelineRef: { resolver: 'git', params: [{ name: 'url', value: 'u' }, { name: 'pathInRepo', value: 'pipelines/p.yaml' }] } },
  };
  const r = requestedOf(spec);
  assert.equal(r.kind, 'resolver');
  assert.ok(r.kind === 'resolver');
  assert.deepEqual(r.resolverParams, [{ name: 'url', value: 'u' }, { name: 'pathInRepo', value: 'pipelines/p.yaml' }]);
  assert.equal(describeRequested(spec), 'git: pipelines/p.yaml');
  assert.equal(describeRequested({ pipeline: { pipelineRef: { resolver: 'bundles', params: [{ name: 'bundle', value: 'quay.io/b:1' }] } } }), 'bundles: quay.io/b:1');
  assert.equal(describeRequested({ request: 'sign' }), 'sign');
});

test('empty timeouts count as none; equal values in both places merge', () => {
  const r = requestedOf({ request: 'sign', timeouts: { pipeline: '' } });
  assert.ok(r.kind === 'installed');
  assert.equal(r.timeouts, undefined);
  const m = requestedOf({ pipeline: { pipelineRef: { name: 's' }, timeouts: { tasks: '1h', pipeline: '2h' } }, timeouts: { pipeline: '2h', tasks: '1h' } });
  assert.ok(m.kind === 'installed');
  assert.deepEqual(m.timeouts, { pipeline: '2h', tasks: '1h' });
});
