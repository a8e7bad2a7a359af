/**
 * A short chaos run (bench/chaos.ts) with a fixed seed: one fault of each kind
 * while requests flow, against two real controller processes with leader
 * election on real control planes (PipelineRuns completed by the simulated
 * executor, a stand-in for Tekton: this run is about the controller's
 * guarantees, not about Tekton). Correctness only; the figures are for
 * `npm run chaos` (docs/reliability.md).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runChaos } from '../../bench/chaos.js';
import { schedule } from '../../bench/chaos-faults.js';
import { formatChaos } from '../../bench/chaos-report.js';
import { FAULT_KINDS } from '../../bench/chaos-types.js';

test('the fault schedule is a function of the seed', () => {
  const o = { faults: 22, kinds: FAULT_KINDS, faultSeconds: [2, 8] as [number, number], seed: 42 };
  assert.deepEqual(schedule(o, 60_000), schedule(o, 60_000));
  assert.notDeepEqual(schedule(o, 60_000), schedule({ ...o, seed: 43 }, 60_000));
  const s = schedule(o, 60_000);
  assert.equal(s.length, 22);
  assert.deepEqual([...new Set(s.map((f) => f.kind))].sort(), [...FAULT_KINDS].sort(), 'every kind, twice');
  assert.ok(s.every((f, i) => f.at >= 0 && f.at < 60_000 && f.ms >= 2000 && f.ms <= 8000 && (i === 0 || s[i - 1]!.at <= f.at)));
});

test('chaos, short (seed 20261123): every request answered once, with the right outcome; nothing left behind', { timeout: 15 * 60_000 }, async () => {
  const r = await runChaos({ requests: 80, rate: 4, seed: 20261123, faults: FAULT_KINDS.length, kinds: FAULT_KINDS, faultSeconds: [2, 5], gapSeconds: 1, baseline: 0, stepMs: 300, settleSeconds: 180, log: (m) => console.log(`# ${m}`) });
  console.log(formatChaos(r).replace(/^/gm, '# '));
  assert.deepEqual(r.problems, []);
  assert.equal(r.faults.length, FAULT_KINDS.length);
  assert.equal(r.counts.succeeded + r.counts.rejectedSeen + r.counts.deletedByRun, r.requests);
  assert.equal(r.counts.rejectedSeen, r.counts.rejected);
  assert.ok(r.counts.restarts >= 3, `replicas were killed and restarted (${r.counts.restarts})`);
});
