/** The rollback plan (src/migrate/rollback.ts): what becomes of each unfinished request when the Go controller takes over, and what blocks it. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { finished, inProgress, Phase, Reason } from '../../src/api/conditions.js';
import type { InternalRequest } from '../../src/api/types.js';
import { HANDED_OVER, handOverWrites, INCUMBENT_TYPE_LABEL, planRollback, type RollbackInput, type RollbackStep } from '../../src/migrate/rollback.js';
import { INCUMBENT_LABEL_NAME, INCUMBENT_LABEL_NAMESPACE, pipelineRunName } from '../../src/tekton/pipelinerun.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';
import { done, NOW, NS, pipelineRun, request, runningStatus } from './fixtures.js';

/** A cluster-resolver request as the Go controller's requesters write it: name only (it adds namespace and kind itself). */
const REF = { pipeline: { pipelineRef: { resolver: 'cluster', params: [{ name: 'name', value: 'sign' }] } }, params: { image: 'quay.io/x' } };
/** The same with namespace and kind, as this controller used to require: the Go controller would give each twice. */
const WITH_NS = { pipeline: { pipelineRef: { resolver: 'cluster', params: [{ name: 'kind', value: 'pipeline' }, { name: 'name', value: 'sign' }, { name: 'namespace', value: NS }] } }, params: { image: 'quay.io/x' } };
const inPhase = (phase: Phase, extra: InternalRequest['status'] = {}): InternalRequest['status'] => ({ conditions: inProgress(undefined, phase, { message: `in ${phase}`, observedGeneration: 1 }, NOW), ...extra });

/** A request of team-a named `name` (uid u-<name>), spec.pipeline unless `spec` says otherwise. */
function req(name: string, status?: InternalRequest['status'], spec: Partial<InternalRequest['spec']> = REF as Partial<InternalRequest['spec']>, meta: Partial<InternalRequest['metadata']> = {}): InternalRequest {
  const r = request({}, { name, uid: `u-${name}`, ...meta }, status);
  r.spec = spec as InternalRequest['spec'];
  return r;
}
const runFor = (name: string, status = runningStatus()) => pipelineRun(`u-${name}`, status, { ns: 'team-a', name });
const runningHere = (name: string) => inPhase(Phase.Running, { pipelineRun: `${NS}/${pipelineRunName(`u-${name}`)}`, startTime: '2026-11-22T09:59:30Z' });

function input(requests: InternalRequest[], runs: PipelineRun[], over: Partial<RollbackInput> = {}): RollbackInput {
  return { namespace: NS, requests, runs, incumbent: { allowList: ['team-a'] }, incumbentConfig: 'internal-services-system/config', now: NOW, ...over };
}
const stepOf = (plan: ReturnType<typeof planRollback>, name: string): RollbackStep => plan.rows.find((r) => r.request === `team-a/${name}`)!.step;

test('rollback: each state gets its step; anything the Go controller cannot continue blocks, saying what to do', () => {
  const requests = [
    req('new'),
    req('resolving', inPhase(Phase.Resolving)),
    req('waiting-config', inPhase(Phase.WaitingForConfig)),
    req('running', runningHere('running')),
    req('ended', runningHere('ended')),
    req('approval', inPhase(Phase.AwaitingApproval)),
    req('queued', inPhase(Phase.Queued)),
    req('following', inPhase(Phase.Following, { followed: { name: 'running', uid: 'u-running' } })),
    req('installed', runningHere('installed'), { request: 'sign', params: { image: 'quay.io/x' } }),
    req('deleting', runningHere('deleting'), REF as Partial<InternalRequest['spec']>, { deletionTimestamp: '2026-11-22T09:59:50Z' }),
    req('succeeded', { conditions: finished(undefined, Reason.Succeeded, { message: 'ok' }, NOW) }),
    req('new-with-ns', undefined, WITH_NS as Partial<InternalRequest['spec']>),
    req('resolving-with-ns', inPhase(Phase.Resolving), WITH_NS as Partial<InternalRequest['spec']>),
    req('running-with-ns', runningHere('running-with-ns'), WITH_NS as Partial<InternalRequest['spec']>),
  ];
  const runs = [runFor('running'), runFor('ended', done(true)), runFor('installed'), runFor('deleting'), runFor('running-with-ns')];
  const plan = planRollback(input(requests, runs));
  assert.equal(plan.ready, false);
  assert.deepEqual(plan.counts, { unfinished: 13, take: 1, release: 2, handOver: 3, blocked: 7 });
  // What the Go controller would take as new, in a shape it cannot run, is not handed to it to hang.
  for (const n of ['new-with-ns', 'resolving-with-ns']) {
    const s = stepOf(plan, n) as { kind: string; why: string; todo: string };
    assert.equal(s.kind, 'blocked', n);
    assert.match(s.why, /a shape the Go controller cannot run: its cluster-resolver pipelineRef gives "kind" and "namespace", which the Go controller appends again; Tekton refuses the duplicate params/, n);
    assert.match(s.todo, /without the namespace and kind params/, n);
  }
  assert.equal(stepOf(plan, 'running-with-ns').kind, 'handOver', 'a run already made is adopted as it is: nothing is built again');
  assert.equal(plan.rows.some((r) => r.request.endsWith('/succeeded')), false, 'finished requests are not in the plan');
  assert.equal(stepOf(plan, 'new').kind, 'take');
  for (const n of ['resolving', 'waiting-config']) assert.equal(stepOf(plan, n).kind, 'release', n);
  for (const [n, why] of [['approval', /without the approval/], ['queued', /at once/], ['following', /same work again/], ['installed', /spec\.request/], ['deleting', /being deleted/]] as const) {
    const s = stepOf(plan, n);
    assert.equal(s.kind, 'blocked', n);
    assert.match((s as { why: string }).why, why, n);
    assert.match((s as { todo: string }).todo, /--drain/, n);
  }
  // Handed over: the Go controller's labels and owner annotations, our uid label kept; the request keeps its startTime, says who follows it.
  const h = stepOf(plan, 'running') as Extract<RollbackStep, { kind: 'handOver' }>;
  assert.equal(h.kind, 'handOver');
  assert.deepEqual(h.labels, { [INCUMBENT_LABEL_NAME]: 'running', [INCUMBENT_LABEL_NAMESPACE]: 'team-a', [INCUMBENT_TYPE_LABEL]: 'release' });
  assert.deepEqual(h.annotations, { 'operator-sdk/primary-resource': 'team-a/running', 'operator-sdk/primary-resource-type': 'InternalRequest.appstudio.redhat.com' });
  assert.equal(h.status?.startTime, '2026-11-22T09:59:30Z');
  assert.deepEqual([h.status?.conditions?.[0]?.status, h.status?.conditions?.[0]?.reason], ['Unknown', 'Running'], 'the requester still waits');
  assert.equal(h.status?.conditions?.[0]?.message, HANDED_OVER);
  assert.deepEqual(h.status?.conditions?.map((c) => c.type), ['Succeeded'], 'no Progressing condition: the Go controller writes only Succeeded, and a Progressing one would stay True/Running after its outcome');
  assert.match((stepOf(plan, 'ended') as { why: string }).why, /at once \(it has ended\)/);
});

test('rollback: ready once nothing blocks; a request without startTime gets one (the Go controller reads it without a nil check); a second run writes nothing', () => {
  const noStart = req('running', inPhase(Phase.Running, { pipelineRun: `${NS}/${pipelineRunName('u-running')}` }));
  const plan = planRollback(input([noStart, req('new')], [runFor('running')]));
  assert.equal(plan.ready, true);
  const h = stepOf(plan, 'running') as Extract<RollbackStep, { kind: 'handOver' }>;
  assert.equal(h.status?.startTime, '2026-11-22T10:00:00Z');
  assert.deepEqual(handOverWrites(h), { run: true, status: true });
  // As written: the run labelled, the status handed over. Planned again, nothing is left to write.
  const run = { ...h.run, metadata: { ...h.run.metadata, labels: { ...h.run.metadata.labels, ...h.labels }, annotations: { ...h.annotations } } };
  const again = planRollback(input([{ ...noStart, status: h.status }, req('new')], [run]));
  const h2 = stepOf(again, 'running') as Extract<RollbackStep, { kind: 'handOver' }>;
  assert.deepEqual(handOverWrites(h2), { run: false, status: false });
  assert.match(h2.why, /handed over already/);
});

test("rollback: blocked where the Go controller would reject the request (its allowList, its git URLs, no configuration) or adopt another run", () => {
  const git = { pipeline: { pipelineRef: { resolver: 'git', params: [{ name: 'url', value: 'https://example.com/a.git' }, { name: 'revision', value: 'main' }, { name: 'pathInRepo', value: 'p.yaml' }] } }, params: {} } as Partial<InternalRequest['spec']>;
  const r = req('running', runningHere('running'));
  const g = req('git', runningHere('git'), git);
  const runs = [runFor('running'), runFor('git')];
  const cases: Array<[string, Partial<RollbackInput>, string, RegExp]> = [
    ['not on its allowList', { incumbent: { allowList: ['team-b'] } }, 'running', /would reject it/],
    ['no configuration', { incumbent: undefined }, 'running', /has no configuration/],
    ['git URL not listed', { incumbent: { allowList: ['team-a'], allowedGitResolverURLs: ['https://example.com/b.git'] } }, 'git', /allowedGitResolverURLs/],
  ];
  for (const [what, over, name, why] of cases) {
    const s = stepOf(planRollback(input([r, g], runs, over)), name);
    assert.equal(s.kind, 'blocked', what);
    assert.match((s as { why: string }).why, why, what);
  }
  // An empty allowedGitResolverURLs: any git URL there.
  assert.equal(stepOf(planRollback(input([g], runs, { incumbent: { allowList: ['team-a'], allowedGitResolverURLs: [] } })), 'git').kind, 'handOver');
  // A leftover run of an earlier request of the same name carries its labels: it would adopt whichever it lists first.
  const stale: PipelineRun = { apiVersion: 'tekton.dev/v1', kind: 'PipelineRun', metadata: { name: 'internalrequest-old', namespace: NS, labels: { [INCUMBENT_LABEL_NAME]: 'running', [INCUMBENT_LABEL_NAMESPACE]: 'team-a', [INCUMBENT_TYPE_LABEL]: 'release' } }, spec: {} };
  const s = stepOf(planRollback(input([r], [...runs, stale])), 'running');
  assert.equal(s.kind, 'blocked');
  assert.match((s as { todo: string }).todo, /delete internal-services\/internalrequest-old/);
});

test("rollback: a request following the Go controller's own run is its own again; two unrecorded runs of it block", () => {
  const goRun = (name: string, created: string): PipelineRun => ({ apiVersion: 'tekton.dev/v1', kind: 'PipelineRun', metadata: { name, namespace: NS, creationTimestamp: created, labels: { [INCUMBENT_LABEL_NAME]: 'go', [INCUMBENT_LABEL_NAMESPACE]: 'team-a', [INCUMBENT_TYPE_LABEL]: 'release' } }, spec: {} });
  const followed = req('go', inPhase(Phase.Running, { pipelineRun: `${NS}/internalrequest-a`, startTime: '2026-11-22T09:59:30Z' }));
  assert.equal(stepOf(planRollback(input([followed], [goRun('internalrequest-a', '2026-11-22T09:59:10Z')])), 'go').kind, 'take');
  const window = req('go', inPhase(Phase.Following));
  const s = stepOf(planRollback(input([window], [goRun('internalrequest-a', '2026-11-22T09:59:10Z'), goRun('internalrequest-b', '2026-11-22T09:59:20Z')])), 'go');
  assert.equal(s.kind, 'blocked');
});
