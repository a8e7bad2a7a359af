/** The status contract's shape: src/api/conditions.ts. */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { finished, inProgress, isFinished, Phase, PHASES, phaseMessageOf, phaseOf, Reason, showsPhase } from '../../src/api/conditions.js';
import type { Condition } from '../../src/api/types.js';
import { readAll } from '../../src/api/readers.js';

const t1 = new Date('2026-01-01T00:00:00Z');
const t2 = new Date('2026-01-01T01:00:00Z');
const t3 = new Date('2026-01-01T02:00:00Z');
const w = (message: string, observedGeneration = 1) => ({ message, observedGeneration });
const req = (conditions: Condition[] | undefined, generation = 1) => ({ metadata: { generation }, status: conditions ? { conditions } : {} });

describe('inProgress', () => {
  test('every phase: Succeeded Unknown/Running first, Progressing True/<phase> second, the message in both', () => {
    for (const phase of PHASES) {
      const c = inProgress(undefined, phase, w(`doing ${phase}`), t1);
      assert.deepEqual(
        c.map((x) => [x.type, x.status, x.reason, x.message]),
        [
          ['Succeeded', 'Unknown', 'Running', `doing ${phase}`],
          ['Progressing', 'True', phase, `doing ${phase}`],
        ],
      );
      assert.equal(phaseOf(req(c)), phase);
      assert.equal(phaseMessageOf(req(c)), `doing ${phase}`);
      assert.equal(isFinished(req(c)), false);
    }
  });
  test("Succeeded's transition time stays while unfinished; Progressing's moves with the phase", () => {
    const a = inProgress(undefined, Phase.Resolving, w('r'), t1);
    const b = inProgress(a, Phase.Resolving, w('r again'), t2);
    assert.equal(b[1]!.lastTransitionTime, '2026-01-01T00:00:00Z', 'same phase, new message: no transition');
    const c = inProgress(b, Phase.Queued, w('q'), t2);
    assert.equal(c[0]!.lastTransitionTime, '2026-01-01T00:00:00Z');
    assert.equal(c[1]!.lastTransitionTime, '2026-01-01T01:00:00Z');
    const d = finished(c, Reason.Succeeded, w('ok'), t3);
    assert.equal(d[0]!.lastTransitionTime, '2026-01-01T02:00:00Z');
    assert.equal(d[1]!.lastTransitionTime, '2026-01-01T02:00:00Z');
  });
  test('other condition types keep their place after the two; an earlier order is put right', () => {
    const other: Condition = { type: 'Example', status: 'True', reason: 'X', message: '', lastTransitionTime: '2025-01-01T00:00:00Z' };
    const mixed: Condition[] = [other, { type: 'Progressing', status: 'True', reason: 'Queued', message: 'q', lastTransitionTime: '2025-01-01T00:00:00Z' }, { type: 'Succeeded', status: 'Unknown', reason: 'Running', message: 'q', lastTransitionTime: '2025-01-01T00:00:00Z' }];
    const c = inProgress(mixed, Phase.Queued, w('q'), t1);
    assert.deepEqual(c.map((x) => x.type), ['Succeeded', 'Progressing', 'Example']);
    assert.deepEqual(c[2], other);
    assert.equal(showsPhase(req(mixed), Phase.Queued, 'q'), false, 'the wrong order needs a write');
    assert.equal(showsPhase(req(c), Phase.Queued, 'q'), true);
  });
});

describe('finished', () => {
  test('the three outcomes; Progressing False with the outcome as its reason', () => {
    for (const [outcome, status] of [[Reason.Succeeded, 'True'], [Reason.Failed, 'False'], [Reason.Rejected, 'False']] as const) {
      const c = finished(inProgress(undefined, Phase.Running, w('r'), t1), outcome, w('done'), t2);
      assert.deepEqual(c.map((x) => [x.type, x.status, x.reason]), [['Succeeded', status, outcome], ['Progressing', 'False', outcome]]);
      assert.equal(isFinished(req(c)), true);
      assert.equal(phaseOf(req(c)), outcome);
      assert.equal(phaseMessageOf(req(c)), 'done');
    }
  });
});

describe('showsPhase: what needs a write', () => {
  const good = inProgress(undefined, Phase.AwaitingApproval, w('a'), t1);
  test('the same phase, message and generation: nothing to write', () => assert.equal(showsPhase(req(good), Phase.AwaitingApproval, 'a'), true));
  test('another message, phase or generation: a write', () => {
    assert.equal(showsPhase(req(good), Phase.AwaitingApproval, 'b'), false);
    assert.equal(showsPhase(req(good), Phase.Queued, 'a'), false);
    assert.equal(showsPhase(req(good, 2), Phase.AwaitingApproval, 'a'), false);
  });
  test("an earlier version's in-progress reason in Succeeded (no Progressing): a write", () => {
    for (const legacy of ['Pending', 'Resolving', 'AwaitingApproval', 'Queued', 'Following']) {
      const old = [{ type: 'Succeeded', status: 'Unknown' as const, reason: legacy, message: 'a', lastTransitionTime: '2025-01-01T00:00:00Z', observedGeneration: 1 }];
      assert.equal(showsPhase(req(old), phaseOf(req(old)) as Phase, 'a'), false, legacy);
    }
  });
});

describe('phaseOf', () => {
  test('no status yet: undefined', () => assert.equal(phaseOf(req(undefined)), undefined));
  test("an earlier version's reasons read as their phases", () => {
    const one = (reason: string) => phaseOf(req([{ type: 'Succeeded', status: 'Unknown', reason, message: '', lastTransitionTime: '2025-01-01T00:00:00Z' }]));
    assert.equal(one('Pending'), Phase.WaitingForConfig);
    assert.equal(one('Resolving'), Phase.Resolving);
    assert.equal(one('AwaitingApproval'), Phase.AwaitingApproval);
    assert.equal(one('Queued'), Phase.Queued);
    assert.equal(one('Following'), Phase.Following);
    assert.equal(one('Running'), Phase.Running);
  });
  test('a finished request: its outcome, whatever Progressing says', () => {
    const c: Condition[] = [
      { type: 'Succeeded', status: 'False', reason: 'Rejected', message: '', lastTransitionTime: '2025-01-01T00:00:00Z' },
      { type: 'Progressing', status: 'True', reason: 'Queued', message: '', lastTransitionTime: '2025-01-01T00:00:00Z' },
    ];
    assert.equal(phaseOf(req(c)), 'Rejected');
  });
});

test('every shape the controller writes is read the same way by the three requesters', () => {
  for (const phase of PHASES) {
    const r = readAll(req(inProgress(undefined, phase, w('m'), t1)));
    assert.deepEqual(r, { requester: 'wait', go: 'wait', kubectl: 'wait', agree: true }, phase);
  }
  for (const [outcome, verdict] of [[Reason.Succeeded, 'succeeded'], [Reason.Failed, 'failed'], [Reason.Rejected, 'failed']] as const) {
    const r = readAll(req(finished(undefined, outcome, w('m'), t1)));
    assert.deepEqual(r, { requester: verdict, go: verdict, kubectl: verdict, agree: true }, outcome);
  }
});
