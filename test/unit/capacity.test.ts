/** Fair capacity (src/policy/capacity.ts) and the Queued state in decide(). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { admit, fairOrder, type CapacityView } from '../../src/policy/capacity.js';
import { decide } from '../../src/controller/decide.js';
import { assertPhase, config, NOW, NS, pipeline, request } from './fixtures.js';

const w = (tenant: string, n: number, created: string) => ({ key: `${tenant}/r${n}`, tenant, created });

test('fair order: namespaces take turns, fewest running first, each namespace oldest first; a namespace at its maximum gets no turn', () => {
  const view: CapacityView = {
    running: 3,
    runningByTenant: new Map([['flood', 3]]),
    waiting: [w('flood', 2, '2026-11-22T10:00:02Z'), w('flood', 1, '2026-11-22T10:00:01Z'), w('flood', 3, '2026-11-22T10:00:03Z'), w('quiet', 1, '2026-11-22T10:00:09Z'), w('other', 1, '2026-11-22T10:00:05Z')],
  };
  assert.deepEqual(fairOrder(view, { maxRunning: 4, maxRunningPerNamespace: undefined }), ['other/r1', 'quiet/r1', 'flood/r1', 'flood/r2', 'flood/r3']);
  assert.deepEqual(fairOrder(view, { maxRunning: 4, maxRunningPerNamespace: 3 }), ['other/r1', 'quiet/r1']);
  const none = new Map<string, number>();
  const fresh: CapacityView = { running: 0, runningByTenant: none, waiting: [w('a', 1, '1'), w('a', 2, '2'), w('a', 3, '3'), w('b', 1, '4')] };
  assert.deepEqual(fairOrder(fresh, { maxRunning: 1, maxRunningPerNamespace: undefined }), ['a/r1', 'b/r1', 'a/r2', 'a/r3'], 'round-robin, not arrival order');
  // a has just had a run started: b's turn comes first, though a's request waits longer
  assert.deepEqual(fairOrder({ ...fresh, lastStartByTenant: new Map([['a', 1000]]) }, { maxRunning: 1, maxRunningPerNamespace: undefined }), ['b/r1', 'a/r1', 'a/r2', 'a/r3']);
});

test('admission: within the free slots in fair order; otherwise the position and the reason', () => {
  const view: CapacityView = { running: 2, runningByTenant: new Map([['a', 2]]), waiting: [w('a', 3, '2026-11-22T10:00:03Z')] };
  const cap = { maxRunning: 3, maxRunningPerNamespace: undefined };
  assert.deepEqual(admit(w('b', 1, '2026-11-22T10:00:09Z'), view, cap), { admitted: true }, 'b has nothing running: its turn comes first');
  assert.deepEqual(admit(w('a', 4, '2026-11-22T10:00:04Z'), view, cap), { admitted: false, position: 2, waiting: 2, why: 'all 3 slots are taken (capacity.maxRunning; 2 PipelineRuns running)' });
  const perNs = admit(w('a', 4, '2026-11-22T10:00:04Z'), view, { maxRunning: undefined, maxRunningPerNamespace: 2 });
  assert.equal(perNs.admitted, false);
  assert.match((perNs as { why: string }).why, /namespace "a" on remote "default" has all its 2 slots taken \(capacity\.maxRunningPerNamespace; 2 PipelineRuns running\)/);
  assert.deepEqual(admit(w('a', 4, '1'), view, { maxRunning: undefined, maxRunningPerNamespace: undefined }), { admitted: true }, 'no capacity set: no limit');
});

test('decide: beyond the capacity the request is Queued with its position, written once; admitted, it runs', () => {
  const capped = config({ allowList: ['team-a'], capacity: { maxRunning: 1 } });
  const full: CapacityView = { running: 1, runningByTenant: new Map([['team-b', 1]]), waiting: [] };
  const a = decide({ namespace: NS, request: request(), pipelineRuns: [], config: capped, pipeline: pipeline(), now: NOW, capacity: full });
  assert.deepEqual(a.map((x) => x.type), ['writeStatus']);
  const st = (a[0] as { status: { conditions?: Array<{ reason: string; status: string; message: string }> } }).status;
  assertPhase(st as never, 'Queued');
  assert.equal(st.conditions?.[0]?.status, 'Unknown');
  assert.equal(st.conditions?.[0]?.message, 'waiting for a free slot on the internal cluster: all 1 slots are taken (capacity.maxRunning; 1 PipelineRuns running); position 1 of 1 waiting (namespaces take turns)');
  const again = decide({ namespace: NS, request: request({}, {}, st as never), pipelineRuns: [], config: capped, pipeline: pipeline(), now: NOW, capacity: { ...full, waiting: [{ key: 'default/team-a/req', tenant: 'default/team-a', created: '2026-11-22T09:59:00Z' }] } });
  assert.deepEqual(again, [], 'same position: nothing written');
  const freed = decide({ namespace: NS, request: request({}, {}, st as never), pipelineRuns: [], config: capped, pipeline: pipeline(), now: NOW, capacity: { running: 0, runningByTenant: new Map(), waiting: [{ key: 'default/team-a/req', tenant: 'default/team-a', created: '2026-11-22T09:59:00Z' }] } });
  assert.deepEqual(freed.map((x) => x.type), ['createPipelineRun', 'writeStatus']);
});
