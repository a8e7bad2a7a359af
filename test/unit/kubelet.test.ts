/** The simulated kubelet's reading of a step's SIMULATED_* env and its termination messages. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planStep, terminationMessage } from '../../src/localenv/index.js';

const container = (env: Record<string, string>) => ({ name: 'step-x', env: Object.entries(env).map(([name, value]) => ({ name, value })) });

test('planStep: defaults, exit codes, failure switch, durations, results', () => {
  assert.deepEqual(planStep(container({}), 100), { container: 'step-x', exitCode: 0, durationMs: 100, results: [] });
  assert.equal(planStep(container({ SIMULATED_EXIT_CODE: '3' }), 0).exitCode, 3);
  assert.equal(planStep(container({ SIMULATED_EXIT_CODE: 'nonsense' }), 0).exitCode, 1);
  assert.equal(planStep(container({ SIMULATED_EXIT_CODE: '300' }), 0).exitCode, 1);
  assert.equal(planStep(container({ SIMULATED_FAIL: 'true' }), 0).exitCode, 1);
  assert.equal(planStep(container({ SIMULATED_FAIL: 'false' }), 0).exitCode, 0);
  assert.equal(planStep(container({ SIMULATED_FAIL: 'true', SIMULATED_EXIT_CODE: '7' }), 0).exitCode, 7);
  assert.equal(planStep(container({ SIMULATED_DURATION: '250ms' }), 0).durationMs, 250);
  assert.equal(planStep(container({ SIMULATED_DURATION: '2s' }), 0).durationMs, 2000);
  assert.equal(planStep(container({ SIMULATED_DURATION: '1m' }), 0).durationMs, 60_000);
  assert.equal(planStep(container({ SIMULATED_DURATION: 'never' }), 0).durationMs, undefined);
  assert.equal(planStep(container({ SIMULATED_DURATION: 'gate' }), 0).durationMs, 'gate');
  assert.deepEqual(planStep(container({ SIMULATED_RESULT_a: 'x', SIMULATED_RESULT_: 'ignored', OTHER: 'y', SIMULATED_RESULT_b: '["1"]' }), 0).results, [
    { name: 'a', value: 'x' },
    { name: 'b', value: '["1"]' },
  ]);
});

test('terminationMessage: the entrypoint format Tekton parses (start time, results; Skipped after a failure)', () => {
  const plan = planStep(container({ SIMULATED_RESULT_sig: 'abc' }), 0);
  assert.deepEqual(JSON.parse(terminationMessage('2026-11-23T10:00:00Z', plan, false)), [
    { key: 'StartedAt', value: '2026-11-23T10:00:00Z', type: 3 },
    { key: 'sig', value: 'abc', type: 1 },
  ]);
  assert.deepEqual(JSON.parse(terminationMessage('2026-11-23T10:00:00Z', plan, true)), [
    { key: 'StartedAt', value: '2026-11-23T10:00:00Z', type: 3 },
    { key: 'Reason', value: 'Skipped', type: 3 },
  ]);
});
