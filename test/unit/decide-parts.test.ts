/**
 * The parts of decide() beside the workflow, each on its own, by tables:
 * status-report.ts (every status decide() writes), resolutions.ts (what a
 * request's ResolutionRequests and commit checks say and ask for),
 * approval-gate.ts (create, wait, expire, deny, trust) and retention.ts
 * (Results' archive and a requester's logs). decide.test.ts covers them
 * within the workflow; these pin each part's contract where it lives.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Phase, Reason } from '../../src/api/conditions.js';
import type { InternalRequestApproval } from '../../src/api/types.js';
import { endWithoutResults, finish, reject, running, waiting } from '../../src/controller/status-report.js';
import { Resolutions } from '../../src/controller/resolutions.js';
import { approvalGate } from '../../src/controller/approval-gate.js';
import { logsAnswer, removeDone } from '../../src/controller/retention.js';
import { resolutionFor } from '../../src/tekton/pipelinerun.js';
import type { Grant } from '../../src/policy/grant.js';
import { done, NOW, NS, observation, pipelineRun, request, runningStatus } from './fixtures.js';

const SUCCEEDED = 'Succeeded';

test('status-report: conditions[0] is Unknown/Running until a terminal reason, whatever the phase; Progressing carries the phase', () => {
  const req = request();
  const o = observation();
  const rows: Array<[string, ReturnType<typeof waiting>['status'], string, string, string]> = [
    ['waiting (Queued)', waiting(req, o, Phase.Queued, 'position 2', {}).status, 'Unknown', 'Running', Phase.Queued],
    ['waiting (Resolving)', waiting(req, o, Phase.Resolving, 'resolving', {}).status, 'Unknown', 'Running', Phase.Resolving],
    ['running', (running(req, o, `${NS}/ir-u-1`, pipelineRun('u-1', runningStatus())) as { status: ReturnType<typeof waiting>['status'] }).status, 'Unknown', 'Running', Phase.Running],
    ['rejected', (reject(req, o, 'no', 'REQUEST_INVALID') as { status: ReturnType<typeof waiting>['status'] }).status, 'False', 'Rejected', 'Rejected'],
    ['failed', endWithoutResults(req, Reason.Failed, 'broke', NOW, 'PIPELINERUN_FAILED').status, 'False', 'Failed', 'Failed'],
    ['succeeded', (finish(req, o, Reason.Succeeded, 'ok', { results: { a: '1' } }) as { status: ReturnType<typeof waiting>['status'] }).status, 'True', SUCCEEDED, SUCCEEDED],
  ];
  for (const [name, status, s, reason, progressing] of rows) {
    const [first, second] = status?.conditions ?? [];
    assert.deepEqual([first?.type, first?.status, first?.reason], [SUCCEEDED, s, reason], `${name}: conditions[0]`);
    assert.equal(second?.type, 'Progressing', name);
    assert.equal(second?.reason, progressing, `${name}: Progressing`);
    assert.equal(first?.message, second?.message, `${name}: both conditions carry the same message`);
  }
  assert.equal(endWithoutResults(request({}, {}, { results: { x: 'y' } }), Reason.Failed, 'm', NOW, 'PIPELINERUN_FAILED').status.results, undefined, 'an unsuccessful end drops results');
  assert.equal(endWithoutResults(req, Reason.Rejected, 'm', NOW, 'REQUEST_INVALID').code, 'REQUEST_INVALID');
});

test('resolutions: a reference not started is a need; a pending one waits until the deadline; the commit checks asked for are started', () => {
  const req = request({}, { uid: 'u-1' });
  const ref = { resolver: 'git', params: [{ name: 'url', value: 'https://example.com/c.git' }, { name: 'revision', value: 'refs/heads/main' }, { name: 'pathInRepo', value: 'p.yaml' }] };
  const rr = resolutionFor(req, ref, NS);
  rr.metadata!.creationTimestamp = '2026-11-22T09:59:50Z';
  const rows: Array<[string, ReturnType<typeof observation>, string | undefined]> = [
    ['none yet', observation({ request: req }), undefined],
    ['pending', observation({ request: req, resolutions: [rr] }), 'pending'],
    ['answered', observation({ request: req, resolutions: [{ ...rr, status: { data: Buffer.from('x').toString('base64'), conditions: [{ type: 'Succeeded', status: 'True' }] } }] }), 'resolved'],
  ];
  for (const [name, o, state] of rows) assert.equal(new Resolutions(o, 'u-1').lookup(ref, req)?.state, state, name);
  const check = { url: 'https://example.com/c.git', commit: 'a'.repeat(40), refs: ['refs/heads/main'], rules: ['sources.git[0]'] };
  const lookup = { url: 'https://example.com/c.git', ref: 'refs/heads/main' };
  const waitActions = new Resolutions(observation({ request: req, resolutions: [rr] }), 'u-1').wait(req, [ref], 'resolving', { checks: [check], lookups: [lookup] });
  assert.deepEqual(waitActions.map((a) => a.type), ['startResolution', 'checkCommit', 'lookUpRef', 'writeStatus', 'requeueAfter']);
  assert.equal((waitActions.at(-1) as { ms: number }).ms, 110_250, 'looks again by the deadline (the default 2m from its creation, 10 s ago)');
  assert.deepEqual(new Resolutions(observation({ request: req, resolutions: [rr] }), 'u-1').cleanup().map((a) => a.type), ['deleteResolution']);
  assert.deepEqual(new Resolutions(observation({ request: req, resolutions: [rr] }), 'another-uid').cleanup(), [], 'only its own request\'s');
});

test('approval gate: create, wait, expire, deny, accept only a trusted approval', () => {
  const req = request({}, { uid: 'u-1' });
  const pr = pipelineRun('u-1');
  const grant = { rule: 'rules[0] ("signing")', approval: { required: true, timeoutMs: 3_600_000, rule: 'signing' } } as unknown as Grant;
  const what = { params: { image: 'x' } };
  const made = approvalGate(observation({ request: req }), req, grant, pr, what, undefined);
  assert.equal(made.state, 'waiting');
  const create = made.state === 'waiting' ? made.actions.find((a) => a.type === 'createApproval') : undefined;
  assert.ok(create && create.type === 'createApproval');
  const approval = create.approval;
  const decided = (result: 'Approved' | 'Denied'): InternalRequestApproval => ({ ...approval, status: { decision: { result, by: 'alice', at: '2026-11-22T10:00:00Z', message: 'looks fine' } } });
  const rows: Array<[string, Parameters<typeof approvalGate>, string, string?]> = [
    ['no decision yet', [observation({ request: req }), req, grant, pr, what, approval], 'waiting'],
    ['expired', [observation({ request: req, now: new Date(NOW.getTime() + 3_600_001) }), req, grant, pr, what, approval], 'ended', 'Expired'],
    ['denied', [observation({ request: req }), req, grant, pr, what, decided('Denied')], 'ended', 'Denied'],
    ['approved, not trusted', [observation({ request: req, approvalTrust: { trusted: false, why: 'alice may not approve under signing' } }), req, grant, pr, what, decided('Approved')], 'waiting'],
    ['approved, trust unknown', [observation({ request: req }), req, grant, pr, what, decided('Approved')], 'waiting'],
    ['approved, trusted', [observation({ request: req, approvalTrust: { trusted: true } }), req, grant, pr, what, decided('Approved')], 'approved'],
  ];
  for (const [name, args, state, result] of rows) {
    const g = approvalGate(...args);
    assert.equal(g.state, state, name);
    if (g.state === 'ended') {
      const w = g.actions[0] as { status: { approval?: { result: string }; conditions?: Array<{ reason?: string }> }; code?: string };
      assert.equal(w.status.approval?.result, result, name);
      assert.equal(w.status.conditions?.[0]?.reason, 'Rejected', name);
      assert.equal(w.code, 'REQUEST_NOT_APPROVED', name);
    }
    if (g.state === 'approved') assert.deepEqual([g.record.result, g.record.by], ['Approved', 'alice']);
  }
});

test('retention: Results and logs are needs decide() returns, never calls', () => {
  const fin = pipelineRun('u-1', done(true, { completionTime: '2026-11-22T09:59:50Z' }));
  const seen = { ...fin, metadata: { ...fin.metadata, annotations: { ...fin.metadata.annotations, 'results.tekton.dev/record': 'ns/results/x/records/y' } } };
  const rows: Array<[string, ReturnType<typeof observation>, typeof fin, string[]]> = [
    ['no Results at all', observation(), fin, ['deletePipelineRun']],
    ['the watcher saw it, no API', observation(), seen, ['requeueAfter']],
    ['API, not asked yet', observation({ archive: new Map() }), fin, ['askArchive', 'requeueAfter']],
    ['API, not stored', observation({ archive: new Map([['uid-of-u-1', { stored: false, why: 'not yet' }]]) }), fin, ['askArchive', 'requeueAfter']],
    ['API, stored', observation({ archive: new Map([[fin.metadata.uid ?? '', { stored: true, record: 'r' }]]) }), fin, ['deletePipelineRun']],
    ['API, past the bound', observation({ archive: new Map(), now: new Date(NOW.getTime() + 3_600_000) }), fin, ['deletePipelineRun']],
  ];
  for (const [name, o, pr, types] of rows) assert.deepEqual(removeDone(o, pr, 'done').map((a) => a.type), types, name);
  const asked = request({}, { uid: 'u-1', annotations: { 'internal-services.dev/logs': '1' } });
  assert.deepEqual(logsAnswer(observation(), asked)?.map((a) => a.type), ['fetchLogs', 'requeueAfter'], 'not asked yet: the need');
  assert.deepEqual(logsAnswer(observation({ logs: 'fetching' }), asked)?.map((a) => a.type), ['requeueAfter']);
  assert.deepEqual(logsAnswer(observation({ logs: { source: 'PipelineRun', text: 'hi', truncated: false } }), asked)?.map((a) => a.type), ['writeStatus']);
  assert.equal(logsAnswer(observation(), request()), undefined, 'no ask: nothing');
});
