/** What the caches keep: the compact record of a finished request, and which Events each --events mode records. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isFinished, succeededCondition } from '../../src/api/conditions.js';
import type { InternalRequest } from '../../src/api/types.js';
import { decide, type EventSpec } from '../../src/controller/decide.js';
import { eventWanted } from '../../src/controller/status-writer.js';
import { ANNOTATION_SPEC_HASH, LABEL_IDEMPOTENCY_KEY, specHash } from '../../src/requests/idempotency.js';
import { ANNOTATION_KCP_CLUSTER, FinishedRequest, slimRequest } from '../../src/requests/cached-requests.js';
import { config, NOW, NS, pipeline } from './fixtures.js';

function finished(over: { labels?: Record<string, string>; created?: string; ltt?: string; spec?: InternalRequest['spec']; status?: 'True' | 'False'; reason?: string } = {}): InternalRequest {
  return {
    apiVersion: 'appstudio.redhat.com/v1alpha1',
    kind: 'InternalRequest',
    metadata: {
      name: 'sign-1',
      namespace: 'team-a',
      uid: '0b6f2a1e-0000-4000-8000-000000000001',
      resourceVersion: '4711',
      generation: 1,
      creationTimestamp: over.created ?? '2026-11-23T10:00:00Z',
      labels: { app: 'x', ...over.labels },
      annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"big":"…"}' },
      managedFields: [{ manager: 'kubectl' }],
    } as InternalRequest['metadata'],
    spec: over.spec ?? { request: 'sign', params: { image: 'quay.io/a/b@sha256:00' } },
    status: {
      conditions: [{ type: 'Succeeded', status: over.status ?? 'True', reason: over.reason ?? 'Succeeded', message: 'PipelineRun internal-services/ir-x succeeded', lastTransitionTime: over.ltt ?? '2026-11-23T10:00:07Z', observedGeneration: 1 }],
      results: { digest: 'sha256:…' },
      pipelineRun: 'internal-services/ir-x',
      startTime: '2026-11-23T10:00:01Z',
      completionTime: '2026-11-23T10:00:07Z',
    },
  };
}

test('a finished request is kept as a compact record that reads like the request it stands for', () => {
  const r = slimRequest(finished());
  assert.ok(r instanceof FinishedRequest);
  assert.equal(r.apiVersion, 'appstudio.redhat.com/v1alpha1');
  assert.equal(r.kind, 'InternalRequest');
  const md = r.metadata;
  assert.deepEqual(
    { name: md.name, namespace: md.namespace, uid: md.uid, rv: md.resourceVersion, gen: md.generation, created: md.creationTimestamp, labels: md.labels, annotations: md.annotations, deleting: md.deletionTimestamp },
    { name: 'sign-1', namespace: 'team-a', uid: '0b6f2a1e-0000-4000-8000-000000000001', rv: '4711', gen: 1, created: '2026-11-23T10:00:00Z', labels: undefined, annotations: undefined, deleting: undefined },
    'only what the controller reads; no labels without an idempotency key',
  );
  assert.equal(isFinished(r), true);
  assert.deepEqual(succeededCondition(r), { type: 'Succeeded', status: 'True', reason: 'Succeeded', message: '', lastTransitionTime: '2026-11-23T10:00:07Z' });
  assert.deepEqual(r.spec, { request: 'sign' }, 'params dropped');
  assert.equal(r.status?.results, undefined, 'results dropped');
  assert.equal(slimRequest(r), r, 'a record is kept as it is');
  // It serialises as the request stub it stands for.
  assert.deepEqual(JSON.parse(JSON.stringify(r)), {
    apiVersion: 'appstudio.redhat.com/v1alpha1',
    kind: 'InternalRequest',
    metadata: { name: 'sign-1', namespace: 'team-a', uid: '0b6f2a1e-0000-4000-8000-000000000001', resourceVersion: '4711', generation: 1, creationTimestamp: '2026-11-23T10:00:00Z' },
    spec: { request: 'sign' },
    status: { conditions: [{ type: 'Succeeded', status: 'True', reason: 'Succeeded', message: '', lastTransitionTime: '2026-11-23T10:00:07Z' }] },
  });
});

test('the record keeps the finalizers left on a finished request (the incumbent\'s, to be released), and says them when serialised', () => {
  const req = finished();
  req.metadata.finalizers = ['internal-services.appstudio.openshift.io/pipelinerun-cleanup'];
  const r = slimRequest(req);
  assert.ok(r instanceof FinishedRequest);
  assert.deepEqual(r.metadata.finalizers, ['internal-services.appstudio.openshift.io/pipelinerun-cleanup']);
  assert.deepEqual((JSON.parse(JSON.stringify(r)) as InternalRequest).metadata.finalizers, ['internal-services.appstudio.openshift.io/pipelinerun-cleanup']);
  assert.equal(slimRequest(finished()).metadata.finalizers, undefined, 'none kept where there were none');
});

test('the record keeps what idempotent retries compare, failures, odd timestamps and resolver specs', () => {
  const idem = finished({ labels: { [LABEL_IDEMPOTENCY_KEY]: 'rel-7' } });
  const r = slimRequest(idem);
  assert.deepEqual(r.metadata.labels, { [LABEL_IDEMPOTENCY_KEY]: 'rel-7' });
  assert.deepEqual(r.metadata.annotations, { [ANNOTATION_SPEC_HASH]: specHash(idem.spec) }, 'the hash of the full spec, taken before params are dropped');

  const failed = slimRequest(finished({ status: 'False', reason: 'Rejected' }));
  assert.equal(isFinished(failed), true);
  assert.equal(succeededCondition(failed)?.status, 'False');
  assert.equal(succeededCondition(failed)?.reason, 'Rejected');

  // Timestamps not in the second-precision form are kept as the text they were.
  const odd = slimRequest(finished({ created: '2026-11-23T10:00:00.123456Z', ltt: '2026-11-23T11:00:00+01:00' }));
  assert.equal(odd.metadata.creationTimestamp, '2026-11-23T10:00:00.123456Z');
  assert.equal(succeededCondition(odd)?.lastTransitionTime, '2026-11-23T11:00:00+01:00');

  const ref = { resolver: 'git', params: [{ name: 'url', value: 'https://git.example/p.git' }] };
  const resolver = slimRequest(finished({ spec: { pipeline: { pipelineRef: ref } } as InternalRequest['spec'] }));
  assert.deepEqual(resolver.spec, { pipeline: { pipelineRef: ref } });

  // Records of the same Pipeline share their spec object.
  assert.equal(slimRequest(finished()).spec, slimRequest(finished()).spec);
});

test('a live request is cached whole, without managedFields and the last-applied annotation', () => {
  const live = finished();
  live.status = { conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running', message: 'running', lastTransitionTime: '2026-11-23T10:00:01Z' }] };
  const r = slimRequest(live);
  assert.ok(!(r instanceof FinishedRequest));
  assert.equal(isFinished(r), false);
  assert.equal((r.metadata as { managedFields?: unknown }).managedFields, undefined);
  assert.equal(r.metadata.annotations, undefined);
  assert.deepEqual(r.spec.params, { image: 'quay.io/a/b@sha256:00' });
});

test('decide() on a record: a finished request is left alone, and goes after ttlSecondsAfterFinished', () => {
  const r = slimRequest(finished());
  const base = { namespace: NS, request: r, pipelineRuns: [], pipeline: pipeline() };
  assert.deepEqual(decide({ ...base, config: config(), now: NOW }), []);
  const ttl = config({ ttlSecondsAfterFinished: 60 });
  const soon = decide({ ...base, config: ttl, now: new Date('2026-11-23T10:00:30Z') });
  assert.deepEqual(soon.map((a) => a.type), ['requeueAfter'], 'finished at 10:00:07, 60 s TTL: not yet');
  const late = decide({ ...base, config: ttl, now: new Date('2026-11-23T10:01:08Z') });
  assert.deepEqual(late.map((a) => a.type), ['deleteRequest']);
});

test('--events: routine successes only with all; failures, rejections and approvals by default', () => {
  const ev = (type: EventSpec['type'], reason: string, success?: true): EventSpec => ({ type, reason, message: 'm', ...(success ? { success } : {}) });
  const cases: Array<[EventSpec, Record<string, boolean>]> = [
    [ev('Normal', 'Running', true), { all: true, important: false, warnings: false, none: false }],
    [ev('Normal', 'Succeeded', true), { all: true, important: false, warnings: false, none: false }],
    [ev('Normal', 'Running'), { all: true, important: true, warnings: false, none: false }], // approved: names the approver
    [ev('Normal', 'AwaitingApproval'), { all: true, important: true, warnings: false, none: false }],
    [ev('Warning', 'Rejected'), { all: true, important: true, warnings: true, none: false }],
    [ev('Warning', 'Failed'), { all: true, important: true, warnings: true, none: false }],
  ];
  for (const [e, want] of cases) {
    for (const [mode, yes] of Object.entries(want)) assert.equal(eventWanted(mode as 'all', e), yes, `${mode}: ${e.type}/${e.reason}${e.success ? ' (success)' : ''}`);
  }
});

test('a record gives back every timestamp exactly as listed, packed or not (30 February, 24:00, leap seconds, other forms)', () => {
  const odd = ['2026-02-30T10:00:00Z', '2026-02-29T10:00:00Z', '2024-02-29T10:00:00Z', '2026-04-31T00:00:00Z', '2026-11-23T24:00:00Z', '2026-12-31T23:59:60Z', '2026-11-23t10:00:00z', '2026-11-23T10:00:00.000Z', '0000-01-01T00:00:00Z', '9999-12-31T23:59:59Z', ' 2026-11-23T10:00:00Z', '2026-11-23T10:00:00Z\n', '', '2026-1-3T10:00:00Z'];
  const second = fc.date({ min: new Date(Date.UTC(0, 0, 1)), max: new Date(Date.UTC(9999, 11, 31, 23, 59, 59)), noInvalidDate: true }).map((d) => d.toISOString().replace(/\.\d{3}Z$/, 'Z'));
  const nearly = fc.tuple(fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 0, max: 13 }), fc.integer({ min: 0, max: 32 }), fc.integer({ min: 0, max: 25 }), fc.integer({ min: 0, max: 61 })).map(
    ([y, mo, d, h, m]) => `${String(y).padStart(4, '0')}-${String(mo).padStart(2, '0')}-${String(d).padStart(2, '0')}T${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}:${String(m).padStart(2, '0')}Z`,
  );
  const check = (t: string) => {
    const r = slimRequest(finished({ created: t, ltt: t }));
    assert.equal(r.metadata.creationTimestamp, t);
    assert.equal(succeededCondition(r)?.lastTransitionTime, t);
  };
  for (const t of odd) check(t);
  fc.assert(fc.property(fc.oneof(second, nearly), (t) => check(t)), { numRuns: 2000 });
});

test('a finished request\'s record keeps every status field the schema declares, unless cached-requests.ts drops or slims it with its reason', async () => {
  const { internalRequestStatusSchema } = await import('../../src/api/types.js');
  const { DROPPED_WHEN_FINISHED, SLIMMED_WHEN_FINISHED, FinishedRequest } = await import('../../src/requests/cached-requests.js');
  const declared = Object.keys(internalRequestStatusSchema.properties);
  assert.ok(declared.length >= 10, `the schema's status fields were read (${declared.join(', ')})`);
  // The lists name fields that exist.
  for (const k of [...Object.keys(DROPPED_WHEN_FINISHED), ...Object.keys(SLIMMED_WHEN_FINISHED)]) assert.ok(declared.includes(k), `cached-requests.ts lists ${k}, which the schema does not declare`);
  const kept = declared.filter((k) => !(k in DROPPED_WHEN_FINISHED) && !(k in SLIMMED_WHEN_FINISHED));
  let checked = 0;
  for (const field of [...kept, 'aFieldAddedLater']) {
    const value = { probe: field };
    const base = finished();
    const req = { ...base, status: { ...base.status, [field]: value } } as InternalRequest;
    const record = FinishedRequest.of(req);
    assert.deepEqual((record.status as Record<string, unknown>)[field], value, `status.${field} is dropped from finished requests without a reason in cached-requests.ts (DROPPED_WHEN_FINISHED)`);
    assert.deepEqual((JSON.parse(JSON.stringify(record)) as { status: Record<string, unknown> }).status[field], value);
    checked++;
  }
  assert.ok(checked >= 1);
  for (const field of Object.keys(DROPPED_WHEN_FINISHED)) {
    const base = finished();
    const req = { ...base, status: { ...base.status, [field]: { probe: field } } } as InternalRequest;
    assert.equal((FinishedRequest.of(req).status as Record<string, unknown>)[field], undefined, `${field} is listed as dropped`);
  }
});

test('a finished request seen through a kcp virtual workspace keeps its logical cluster (kcp.io/cluster): its shard routes updates and deletes by it', () => {
  const req = finished();
  req.metadata.annotations = { ...req.metadata.annotations, [ANNOTATION_KCP_CLUSTER]: '2ye1ioskk7w06ecj', 'other.example/x': 'dropped' };
  const r = slimRequest(req);
  assert.equal(r instanceof FinishedRequest, true, 'slimmed to a record');
  assert.deepEqual(r.metadata.annotations, { [ANNOTATION_KCP_CLUSTER]: '2ye1ioskk7w06ecj' });
  // With an idempotency key too: both kept.
  const idem = finished({ labels: { [LABEL_IDEMPOTENCY_KEY]: 'rel-8' } });
  idem.metadata.annotations = { [ANNOTATION_KCP_CLUSTER]: 'c1' };
  assert.deepEqual(slimRequest(idem).metadata.annotations, { [ANNOTATION_SPEC_HASH]: specHash(idem.spec), [ANNOTATION_KCP_CLUSTER]: 'c1' });
  // Without it, nothing is added.
  assert.equal(slimRequest(finished()).metadata.annotations, undefined);
});
