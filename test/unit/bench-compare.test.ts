/** The side-by-side table of benchmark results (bench/compare.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runFailure } from '../../bench/against.js';
import { compare, mismatches } from '../../bench/compare.js';
import type { BenchResult } from '../../bench/types.js';

function result(over: { cmd: string; throughput: number; rss: number; events: number; requests?: number; date?: string }): BenchResult {
  const dist = (p50: number, p99: number) => ({ count: 1, p50, p90: p99, p99, max: p99, mean: p50 });
  return {
    ok: true,
    failures: [],
    meta: { date: over.date ?? '2026-11-23T10:00:00Z', commit: 'abc1234', dirty: false, node: 'v20', cpus: 2, cpuModel: 'EPYC', memoryGB: 23.5, controllerCmd: `${over.cmd} --remote-kubeconfig x` },
    controllerStart: { readyMs: 500, rssAtReadyMB: 70 },
    passes: [
      {
        pass: 1,
        label: 'cold',
        workload: { requests: over.requests ?? 1000, mode: 'burst', tekton: 'simulated', executorDelayMs: 0 },
        throughput: over.throughput,
        latencyMs: { createToRunning: dist(100, 900), createToTerminal: dist(200, 1500) },
        api: { stateWritesPerAllowed: { mean: 4, min: 4, max: 4 }, eventsPerRequest: over.events },
        controller: { cpuMsPerRequest: 5, rssPeakMB: over.rss },
        cpuMsPerRequest: { total: 40 },
        cpuCores: { otherProcesses: 0.02 },
        correctness: { ok: true, failures: [] },
      },
    ],
    scale: null,
  } as unknown as BenchResult;
}

test('compare: one column per result, the figures of its last pass, rows nobody has left out', () => {
  const table = compare(
    [
      { label: 'ours', result: result({ cmd: 'node a.mjs controller', throughput: 45.2, rss: 96.4, events: 0.1 }) },
      { label: 'other', result: result({ cmd: './manager', throughput: 2.6, rss: 55, events: 0 }) },
    ],
    undefined,
  );
  const lines = table.split('\n');
  assert.equal(lines[0], '| | ours | other |');
  assert.ok(lines.includes('| throughput (requests/s) | 45.2 | 2.6 |'), table);
  assert.ok(lines.includes('| controller RSS peak (MB) | 96.4 | 55 |'), table);
  assert.ok(lines.includes('| Events per request | 0.1 | 0 |'), table);
  assert.ok(lines.includes('| create→Running p50 / p99 (ms) | 100 / 900 | 100 / 900 |'), table);
  assert.ok(lines.includes('| controller command | `node a.mjs controller …` | `./manager …` |'), table);
  assert.ok(!table.includes('scale:'), 'no scale rows when no result has them');
});

test('compare: results that are not alike are flagged', () => {
  const a = { label: 'a', result: result({ cmd: 'x', throughput: 1, rss: 1, events: 0 }) };
  assert.deepEqual(mismatches([a, { label: 'b', result: result({ cmd: 'y', throughput: 1, rss: 1, events: 0 }) }], undefined), []);
  const other = mismatches([a, { label: 'c', result: result({ cmd: 'y', throughput: 1, rss: 1, events: 0, requests: 200, date: '2026-11-20T10:00:00Z' }) }], undefined);
  assert.equal(other.length, 2);
  assert.match(other[0]!, /different workloads: a: N=1000 .*; c: N=200/);
  assert.match(other[1]!, /different days: 2026-11-23, 2026-11-20/);
});

test('against the incumbent: a controller killed before it was ready is named with its memory limit, the log path left out', () => {
  const killed = new Error('controller exited before it was ready ({"code":null,"signal":"SIGKILL"}); log /tmp/x/controller-1.log:\n2026-11-29T07:12:19Z INFO setup starting manager');
  assert.equal(runFailure(killed, 512), 'controller exited before it was ready ({"code":null,"signal":"SIGKILL"}): killed at its 512 MiB memory limit');
  // Without a limit, or another exit, nothing is guessed.
  assert.equal(runFailure(killed, 0), 'controller exited before it was ready ({"code":null,"signal":"SIGKILL"})');
  assert.equal(runFailure(new Error('controller exited before it was ready ({"code":1,"signal":null}); log /tmp/y.log:'), 512), 'controller exited before it was ready ({"code":1,"signal":null})');
});
