/** The gate every action passes in the executor while the Go controller is back (src/controller/incumbent-gate.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gate, passesHold } from '../../src/controller/incumbent-gate.js';
import type { Action } from '../../src/controller/actions.js';
import { pipelineRun, request } from './fixtures.js';

const req = request();
const pr = pipelineRun('u-1');
/** One action of every type decide() returns. */
const every: Action[] = [
  { type: 'createPipelineRun', pipelineRun: pr },
  { type: 'writeStatus', status: {} },
  { type: 'cancelPipelineRun', pipelineRun: pr, why: 'x' },
  { type: 'deletePipelineRun', pipelineRun: pr, why: 'x' },
  { type: 'relayAttestation', attestation: {} as never, event: { type: 'Normal', reason: 'x', message: 'x' } },
  { type: 'startResolution', resolution: {} as never },
  { type: 'checkCommit', check: {} as never },
  { type: 'lookUpRef', lookup: {} as never },
  { type: 'checkPath', check: { url: 'https://x/y.git', commit: 'a'.repeat(40), path: 'p.yaml' } },
  { type: 'checkServiceAccount', name: 'sa' },
  { type: 'createApproval', approval: {} as never },
  { type: 'deleteApproval', approval: {} as never, why: 'x' },
  { type: 'deleteResolution', resolution: {} as never, why: 'x' },
  { type: 'removeFinalizer', request: req, finalizer: 'f', why: 'x' },
  { type: 'deleteRequest', request: req, why: 'x' },
  { type: 'askArchive', pipelineRun: pr },
  { type: 'fetchLogs', asked: 'all', pipelineRun: 'p' },
  { type: 'requeueAfter', ms: 1 },
];

/** Every action type, checked by the compiler: a new one fails the build here until it is listed. */
const TYPES: Record<Action['type'], true> = {
  createPipelineRun: true, writeStatus: true, cancelPipelineRun: true, deletePipelineRun: true, relayAttestation: true, startResolution: true, checkCommit: true, lookUpRef: true, checkPath: true,
  checkServiceAccount: true, createApproval: true, deleteApproval: true, deleteResolution: true, removeFinalizer: true, deleteRequest: true, askArchive: true, fetchLogs: true, requeueAfter: true,
};

test('held: only a requeue passes; every write and every need started for a request is held', () => {
  assert.deepEqual(every.map((a) => a.type).sort(), Object.keys(TYPES).sort(), 'every type is tried');
  const passing = every.filter(passesHold).map((a) => a.type);
  assert.deepEqual(passing, ['requeueAfter']);
  for (const a of every) {
    assert.equal(gate('the Go controller is back', a), a.type === 'requeueAfter' ? 'act' : 'hold', a.type);
    assert.equal(gate(undefined, a), 'act', `${a.type} when not held`);
  }
});
