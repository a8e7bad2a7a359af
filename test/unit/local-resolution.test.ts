/**
 * src/controller/local-resolution.ts: a cluster-resolver reference to the
 * controller's own namespace is answered from the caches, as Tekton's cluster
 * resolver would answer it (the object, its source URI with the uid, its
 * Trusted Resources checksum as the digest); anything else is left to Tekton.
 * And through decide(): such a request runs with no ResolutionRequest made,
 * the installed spec embedded; a cache miss still asks Tekton.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide } from '../../src/controller/decide.js';
import { localResolution } from '../../src/controller/local-resolution.js';
import { tektonChecksum } from '../../src/policy/trusted.js';
import type { Pipeline } from '../../src/tekton/tekton-types.js';
import { config, NS, observation, request } from './fixtures.js';

const installed: Pipeline = {
  metadata: { name: 'sign', namespace: NS, uid: 'p-uid-1', labels: { team: 'x' }, annotations: { note: 'reviewed' } },
  spec: { params: [{ name: 'image' }], tasks: [{ name: 't', taskSpec: { steps: [{ name: 's', image: 'registry.example/x@sha256:' + 'a'.repeat(64), script: 'echo hi' }] } }] },
} as unknown as Pipeline;
const task = { metadata: { name: 'build', namespace: NS, uid: 't-uid-1' }, spec: { steps: [{ name: 's', image: 'x', script: 'true' }] } };
const cache = { get: (name: string) => (name === 'sign' ? installed : undefined) };
const o = { namespace: NS, installedPipelines: cache, tasks: new Map([['build', task as Record<string, unknown>]]) };
const ref = (params: Record<string, string>, resolver = 'cluster') => ({ resolver, params: Object.entries(params).map(([name, value]) => ({ name, value })) });

test('local resolution: an installed Pipeline or Task of the controller\'s namespace, as Tekton\'s cluster resolver gives it', () => {
  const r = localResolution(o, ref({ kind: 'pipeline', name: 'sign', namespace: NS }));
  assert.ok(r);
  const obj = JSON.parse(String(r.content)) as Record<string, unknown>;
  assert.deepEqual(obj, { ...installed, apiVersion: 'tekton.dev/v1', kind: 'Pipeline' });
  assert.equal(r.refSource?.uri, `/apis/tekton.dev/v1/namespaces/${NS}/pipeline/sign@p-uid-1`);
  const sum = tektonChecksum(obj);
  assert.ok(Buffer.isBuffer(sum));
  assert.deepEqual(r.refSource?.digest, { sha256: sum.toString('hex') }, 'the digest is Tekton\'s checksum (test/unit/trusted.test.ts holds it to Go\'s)');
  const t = localResolution(o, ref({ kind: 'task', name: 'build', namespace: NS }));
  assert.equal(t?.refSource?.uri, `/apis/tekton.dev/v1/namespaces/${NS}/task/build@t-uid-1`);
  assert.equal((JSON.parse(String(t?.content)) as { kind: string }).kind, 'Task');
});

test('local resolution: anything else is left to Tekton\'s resolver', () => {
  let left = 0;
  const cases: Array<[string, ReturnType<typeof ref>]> = [
    ['not in the cache', ref({ kind: 'pipeline', name: 'other', namespace: NS })],
    ['another namespace', ref({ kind: 'pipeline', name: 'sign', namespace: 'kube-system' })],
    ['no kind (Tekton\'s default would be task)', ref({ name: 'sign', namespace: NS })],
    ['a kind the cache does not hold', ref({ kind: 'stepaction', name: 'sign', namespace: NS })],
    ['another param', ref({ kind: 'pipeline', name: 'sign', namespace: NS, cache: 'always' })],
    ['another resolver', ref({ kind: 'pipeline', name: 'sign', namespace: NS }, 'hub')],
    ['a task named like the Pipeline', ref({ kind: 'task', name: 'sign', namespace: NS })],
  ];
  for (const [why, r] of cases) {
    assert.equal(localResolution(o, r), undefined, why);
    left++;
  }
  assert.equal(left, cases.length);
  assert.equal(localResolution({ namespace: NS }, ref({ kind: 'pipeline', name: 'sign', namespace: NS })), undefined, 'no caches in the observation: Tekton resolves');
});

test('decide: a cluster-resolver request for an installed Pipeline runs with no ResolutionRequest; a miss asks Tekton', () => {
  const req = request({ request: undefined, pipeline: { pipelineRef: { resolver: 'cluster', params: [{ name: 'name', value: 'sign' }, { name: 'namespace', value: NS }, { name: 'kind', value: 'pipeline' }] } } });
  const cfg = config({ allowList: ['team-a'], sources: { cluster: true } });
  const hit = decide(observation({ request: req, config: cfg, pipeline: undefined, installedPipelines: cache }));
  assert.deepEqual(hit.map((a) => a.type), ['createPipelineRun', 'writeStatus']);
  const create = hit[0]!;
  assert.ok(create.type === 'createPipelineRun');
  assert.deepEqual(create.pipelineRun.spec.pipelineSpec, installed.spec, 'the installed spec, embedded: nothing left for Tekton to resolve');
  assert.equal(create.pipelineRun.spec.pipelineRef, undefined);
  const miss = decide(observation({ request: req, config: cfg, pipeline: undefined, installedPipelines: { get: () => undefined } }));
  assert.deepEqual(miss.map((a) => a.type), ['startResolution', 'writeStatus', 'requeueAfter'], 'not in the cache: Tekton\'s cluster resolver is asked, as before');
});
