/**
 * The admission scheduler and the read-only views, over plain objects
 * standing for the caches (no cluster, no informer).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { InternalRequest } from '../../src/api/types.js';
import { CapacityGate } from '../../src/controller/capacity-gate.js';
import * as views from '../../src/controller/health-views.js';
import { LABEL_REQUEST_NAMESPACE, LABEL_REQUEST_REMOTE } from '../../src/tekton/pipelinerun.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';
import { done, pipelineRun, request, runningStatus } from './fixtures.js';

const queued: InternalRequest['status'] = { conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Queued', message: 'waiting for a slot', lastTransitionTime: '2026-11-22T09:00:00Z' }] };
const runningReq: InternalRequest['status'] = { conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running', message: 'running', lastTransitionTime: '2026-11-22T09:00:00Z' }], pipelineRun: 'internal-services/x' };
const succeededReq: InternalRequest['status'] = { conditions: [{ type: 'Succeeded', status: 'True', reason: 'Succeeded', message: 'done', lastTransitionTime: '2026-11-22T09:00:00Z' }], pipelineRun: 'internal-services/y' };

function fakeRemote(name: string, requests: InternalRequest[], healthy = true) {
  return {
    name,
    healthy,
    entries: () => requests.map((r): [string, InternalRequest] => [`${name}/${r.metadata.namespace}/${r.metadata.name}`, r]),
    cachedRequests: () => requests,
    readiness: (required: boolean) => [{ name: `remote/${name}/internalrequests`, ok: healthy, required }],
  };
}

function run(uid: string, ns: string, remote: string, status: PipelineRun['status']): PipelineRun {
  const pr = pipelineRun(uid, status, { ns, name: uid });
  pr.metadata.labels = { ...pr.metadata.labels, [LABEL_REQUEST_NAMESPACE]: ns, [LABEL_REQUEST_REMOTE]: remote };
  return pr;
}

const req = (name: string, ns: string, status?: InternalRequest['status'], created = '2026-11-22T09:00:00Z') => request({}, { name, namespace: ns, uid: `uid-${name}`, creationTimestamp: created }, status);

test('admission: the capacity view counts unfinished runs in all and per remote namespace, and the queued requests', () => {
  const remote = fakeRemote('default', [req('q1', 'team-a', queued), req('r1', 'team-a', runningReq), req('q2', 'team-b', queued)]);
  const a = new CapacityGate({
    pipelineRuns: () => [run('p1', 'team-a', 'default', runningStatus()), run('p2', 'team-a', 'default', done(true)), run('p3', 'team-b', 'default', undefined)],
    pipelineRunsSynced: () => true,
    remotes: () => [remote],
    capacity: () => ({ maxRunning: 3, maxRunningPerNamespace: undefined }),
    enqueue: () => {},
  });
  const v = a.view();
  assert.equal(v.running, 2);
  assert.deepEqual([...v.runningByTenant.entries()].sort(), [['default/team-a', 1], ['default/team-b', 1]]);
  assert.deepEqual(v.waiting.map((w) => w.key).sort(), ['default/team-a/q1', 'default/team-b/q2']);
});

test('admission: admitNext() looks again at as many queued requests as there are free slots, in fair order', () => {
  const enqueued: string[] = [];
  const remote = fakeRemote('default', [
    req('a-old', 'team-a', queued, '2026-11-22T08:00:00Z'),
    req('a-new', 'team-a', queued, '2026-11-22T09:00:00Z'),
    req('b-one', 'team-b', queued, '2026-11-22T09:30:00Z'),
  ]);
  let cap: { maxRunning: number | undefined; maxRunningPerNamespace: number | undefined } = { maxRunning: 3, maxRunningPerNamespace: undefined };
  const a = new CapacityGate({
    pipelineRuns: () => [run('p1', 'team-a', 'default', runningStatus())],
    pipelineRunsSynced: () => true,
    remotes: () => [remote],
    capacity: () => cap,
    enqueue: (k) => enqueued.push(k),
  });
  assert.equal(a.capped, true);
  a.admitNext();
  // Two slots free; team-b runs nothing so it has the first turn, then team-a's oldest.
  assert.deepEqual(enqueued, ['default/team-b/b-one', 'default/team-a/a-old']);
  cap = { maxRunning: undefined, maxRunningPerNamespace: undefined };
  enqueued.length = 0;
  assert.equal(a.capped, false);
  a.admitNext();
  assert.deepEqual(enqueued, [], 'no capacity set: nothing to admit');
});

test('admission: serialize() runs decisions one after another, and a failed one does not stop the next', async () => {
  const a = new CapacityGate({ pipelineRuns: () => [], pipelineRunsSynced: () => true, remotes: () => [], capacity: () => ({ maxRunning: 1, maxRunningPerNamespace: undefined }), enqueue: () => {} });
  const order: string[] = [];
  let release!: () => void;
  const first = a.serialize(async () => {
    order.push('first starts');
    await new Promise<void>((r) => (release = r));
    order.push('first ends');
    throw new Error('boom');
  });
  const second = a.serialize(async () => {
    order.push('second');
  });
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order, ['first starts']);
  release();
  await assert.rejects(first, /boom/);
  await second;
  assert.deepEqual(order, ['first starts', 'first ends', 'second']);
});

test('views: waiting by phase, running requests, remote health', () => {
  const a = fakeRemote('a', [req('q', 'team-a', queued), req('new', 'team-a'), req('run', 'team-a', runningReq), req('done', 'team-a', succeededReq)]);
  const b = fakeRemote('b', [], false);
  assert.deepEqual(views.waitingByPhase([a, b]), {
    a: { none: 1, WaitingForConfig: 0, WaitingForWorkspace: 0, Resolving: 0, AwaitingApproval: 0, Queued: 1, Following: 0 },
    b: { none: 0, WaitingForConfig: 0, WaitingForWorkspace: 0, Resolving: 0, AwaitingApproval: 0, Queued: 0, Following: 0 },
  });
  assert.equal(views.runningRequests([a, b]), 1);
  assert.deepEqual(views.remoteHealth([a, b]), [
    { remote: 'a', up: true },
    { remote: 'b', up: false },
  ]);
});

test('views: runs past their timeout are counted per remote, every served remote listed', () => {
  const late = run('late', 'team-a', 'a', { ...runningStatus(), startTime: '2026-11-22T08:00:00Z' });
  late.spec = { ...late.spec, timeouts: { pipeline: '1m' } };
  const fine = run('fine', 'team-a', 'a', { ...runningStatus(), startTime: '2026-11-22T09:59:30Z' });
  const out = views.pipelineRunsPastTimeout(['a', 'b'], [late, fine], Date.parse('2026-11-22T10:00:00Z'));
  assert.deepEqual(out, { a: 1, b: 0 });
});

test('views: readiness — a single remote is required, several are reported; the configuration and its unusable rules are reported', () => {
  const internal = [{ name: 'internal/pipelineruns', health: { lastContact: 0 }, readiness: (required: boolean) => ({ name: 'internal/pipelineruns', ok: true, required }) }];
  const one = views.readiness([fakeRemote('a', [], false)], internal, { namespace: 'ns', present: true, problems: [] });
  assert.deepEqual(one.map((c) => [c.name, c.ok, c.required]), [
    ['remote/a/internalrequests', false, true],
    ['internal/pipelineruns', true, true],
    ['config', true, false],
  ]);
  const two = views.readiness([fakeRemote('a', []), fakeRemote('b', [], false)], internal, { namespace: 'ns', present: false, problems: [] });
  assert.deepEqual(two.filter((c) => c.name.startsWith('remote/')).map((c) => c.required), [false, false]);
  assert.match(two.find((c) => c.name === 'config')?.detail ?? '', /no InternalServicesConfig "config" in namespace ns/);
  const bad = views.readiness([], internal, { namespace: 'ns', present: true, problems: ['rule 1: x', 'rule 2: y'] });
  assert.deepEqual(bad.at(-1), { name: 'config-rules', ok: false, required: false, detail: 'rule 1: x; rule 2: y' });
  assert.deepEqual(views.lastContact([{ ...internal[0]!, health: { lastContact: 1_000 } }], 3_500), [{ informer: 'internal/pipelineruns', ms: 2_500 }]);
});

test('views: remotes that share a metrics name (a provider\'s workspaces) are one label value: summed, up only when all are, one line per shared cache', () => {
  const ws1 = { ...fakeRemote('ws1', [req('q', 'team', queued), req('new', 'team')]), metricsName: 'kcp' };
  const ws2 = { ...fakeRemote('ws2', [req('q2', 'team', queued)], false), metricsName: 'kcp' };
  const plain = fakeRemote('prod', [req('x', 'team')]);
  assert.deepEqual(views.waitingByPhase([ws1, ws2, plain]), {
    kcp: { none: 1, WaitingForConfig: 0, WaitingForWorkspace: 0, Resolving: 0, AwaitingApproval: 0, Queued: 2, Following: 0 },
    prod: { none: 1, WaitingForConfig: 0, WaitingForWorkspace: 0, Resolving: 0, AwaitingApproval: 0, Queued: 0, Following: 0 },
  });
  assert.deepEqual(views.remoteHealth([ws1, ws2, plain]), [
    { remote: 'kcp', up: false },
    { remote: 'prod', up: true },
  ]);
  const late = run('late', 'team', 'ws2', { ...runningStatus(), startTime: '2026-11-22T08:00:00Z' });
  late.spec = { ...late.spec, timeouts: { pipeline: '1m' } };
  const label = (r: string) => (r.startsWith('ws') ? 'kcp' : r);
  assert.deepEqual(views.pipelineRunsPastTimeout(['ws1', 'ws2', 'prod'], [late], Date.parse('2026-11-22T10:00:00Z'), label), { kcp: 1, prod: 0 });
  // Shares of one watch carry its name: one gauge line and one /readyz line for all of them.
  const share = (ms: number) => ({ name: 'kcp/export/internalrequests', health: { lastContact: ms }, readiness: (required: boolean) => ({ name: 'kcp/export/internalrequests', ok: true, required }) });
  assert.deepEqual(views.lastContact([share(1000), share(1000), { ...share(0), name: 'internal/pipelineruns' }], 3000), [
    { informer: 'kcp/export/internalrequests', ms: 2000 },
    { informer: 'internal/pipelineruns', ms: 3000 },
  ]);
  const shared = (name: string) => ({ ...fakeRemote(name, []), readiness: (required: boolean) => [{ name: 'kcp/export/internalrequests', ok: true, required }] });
  const checks = views.readiness([shared('ws1'), shared('ws2')], [], { namespace: 'ns', present: true, problems: [] });
  assert.deepEqual(checks.map((c) => c.name), ['kcp/export/internalrequests', 'config']);
});
