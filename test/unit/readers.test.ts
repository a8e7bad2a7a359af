/**
 * The three requester readings of src/api/readers.ts, each against its own
 * description (issue 21): the table holds what each must conclude, including
 * the shapes that break the contract (where they disagree).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isFinished, phaseOf } from '../../src/api/conditions.js';
import { goApi, goApiVerdict, kubectlWait, readAll, requesterLoop, type ReadCondition, type ReadRequest } from '../../src/api/readers.js';

const s = (status: string, reason: string): ReadCondition => ({ type: 'Succeeded', status, reason });
const r = (...conditions: ReadCondition[]): ReadRequest => ({ status: { conditions } });

// [name, request, requester loop, Go API, kubectl wait / kstatus]
const table: Array<[string, ReadRequest, string, string | undefined, string]> = [
  ['no status', {}, 'wait', 'wait', 'wait'],
  ['no conditions', r(), 'wait', 'wait', 'wait'],
  ['Unknown/Running', r(s('Unknown', 'Running')), 'wait', 'wait', 'wait'],
  ['True/Succeeded', r(s('True', 'Succeeded')), 'succeeded', 'succeeded', 'succeeded'],
  ['False/Failed', r(s('False', 'Failed')), 'failed', 'failed', 'failed'],
  ['False/Rejected', r(s('False', 'Rejected')), 'failed', 'failed', 'failed'],
  ['False/anything else', r(s('False', 'PipelineRunTimeout')), 'failed', 'failed', 'failed'],
  // The shapes of the bug: an in-progress reason in conditions[0].
  ['Unknown/Queued (the old shape)', r(s('Unknown', 'Queued')), 'failed', undefined, 'wait'],
  ['Unknown/Resolving (the old shape)', r(s('Unknown', 'Resolving')), 'failed', undefined, 'wait'],
  ['Unknown/AwaitingApproval (the old shape)', r(s('Unknown', 'AwaitingApproval')), 'failed', undefined, 'wait'],
  ['Unknown/Pending (the old shape)', r(s('Unknown', 'Pending')), 'failed', undefined, 'wait'],
  ['Unknown/Following (the old shape)', r(s('Unknown', 'Following')), 'failed', undefined, 'wait'],
  // The incumbent Go controller's in-progress shape (its MarkRunning): the
  // requester loop and Go's own API wait; kubectl wait on Succeeded=False
  // would not. This controller reads it as in progress (isFinished, phaseOf).
  ['False/Running (the incumbent Go controller\'s shape while a run goes)', r(s('False', 'Running')), 'wait', 'wait', 'failed'],
  // Odd combinations no reader can agree on.
  ['True/Running', r(s('True', 'Running')), 'wait', 'succeeded', 'succeeded'],
  ['empty reason, True', r(s('True', '')), 'wait', 'succeeded', 'succeeded'],
  // Succeeded not first: the requester loop reads another condition.
  ['Progressing first', r({ type: 'Progressing', status: 'True', reason: 'Queued' }, s('Unknown', 'Running')), 'failed', 'wait', 'wait'],
  ['Progressing second', r(s('Unknown', 'Running'), { type: 'Progressing', status: 'True', reason: 'Queued' }), 'wait', 'wait', 'wait'],
  ['a condition of another type only', r({ type: 'Ready', status: 'True', reason: 'Ready' }), 'failed', 'wait', 'wait'],
  // kstatus: a status older than the spec is not final yet.
  ['True/Succeeded for an older generation', { metadata: { generation: 2 }, status: { observedGeneration: 1, conditions: [s('True', 'Succeeded')] } }, 'succeeded', 'succeeded', 'wait'],
];

for (const [name, req, requester, go, kubectl] of table) {
  test(`readers: ${name}`, () => {
    assert.equal(requesterLoop(req), requester, 'requester loop');
    assert.equal(goApiVerdict(req), go, 'Go API');
    assert.equal(kubectlWait(req), kubectl, 'kubectl wait');
    assert.equal(readAll(req).agree, requester === go && go === kubectl);
  });
}

test('Go API helpers one by one', () => {
  assert.deepEqual(goApi(r(s('False', 'Running'))), { hasSucceeded: false, hasFailed: false, isRunning: true });
  assert.deepEqual(goApi(r(s('True', 'Running'))), { hasSucceeded: true, hasFailed: false, isRunning: false });
  assert.deepEqual(goApi(r(s('Unknown', 'Queued'))), { hasSucceeded: false, hasFailed: false, isRunning: false });
  assert.deepEqual(goApi(r({ type: 'Progressing', status: 'True', reason: 'Running' }, s('False', 'Failed'))), { hasSucceeded: false, hasFailed: true, isRunning: false }, 'the Go API finds the condition by type');
});

test('the incumbent\'s in-progress shape is in progress here too: not finished, phase Running; its outcomes are finished', () => {
  const cases: Array<[string, string, boolean, string | undefined]> = [
    ['False', 'Running', false, 'Running'],
    ['Unknown', 'Running', false, 'Running'],
    ['True', 'Succeeded', true, 'Succeeded'],
    ['False', 'Failed', true, 'Failed'],
    ['False', 'Rejected', true, 'Rejected'],
    ['False', 'PipelineRunTimeout', true, 'Failed'],
  ];
  for (const [status, reason, finished, phase] of cases) {
    const req = { status: { conditions: [{ type: 'Succeeded', status, reason, message: '', lastTransitionTime: '2026-11-27T00:00:00Z' }] } } as never;
    assert.equal(isFinished(req), finished, `${status}/${reason}: finished`);
    assert.equal(phaseOf(req), phase, `${status}/${reason}: phase`);
  }
});
