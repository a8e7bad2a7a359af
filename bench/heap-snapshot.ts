/**
 * Heap snapshots of the running controller (started with
 * `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir DIR`, as `--heap-snapshot`
 * arranges), and the difference between two of them by constructor.
 *
 * A snapshot is taken after a full garbage collection, so it holds what is
 * live — what the controller retains — and not the garbage V8 has not yet
 * collected, which is the rest of its committed heap. Writing one stops the
 * controller for as long as it takes (about a second per 20 MB of heap here).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ControllerProcess } from './controller-process.js';
import { summariseHeap, type HeapGroup, type HeapSummary } from './heap-summary.js';
import { mb, sleep } from './stats.js';

/** SIGUSR2 to the controller: waits (at most 120 s) for the snapshot to be written, and summarises it with every group kept. */
export async function heapSnapshotOf(controller: ControllerProcess, dir: string, log: (m: string) => void): Promise<HeapSummary | undefined> {
  const before = new Set(readdirSync(dir));
  process.kill(controller.pid, 'SIGUSR2');
  const deadline = performance.now() + 120_000;
  let last = -1;
  while (performance.now() < deadline) {
    await sleep(500);
    const file = readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (!file) continue;
    const size = statSync(join(dir, file)).size;
    if (size > 0 && size === last) {
      try {
        const h = summariseHeap(readFileSync(join(dir, file), 'utf8'), Infinity);
        log(`heap snapshot ${join(dir, file)}: ${mb(h.totalBytes)} MB`);
        return h;
      } catch {
        // still being written
      }
    }
    last = size;
  }
  log('heap snapshot: none written within 120 s');
  return undefined;
}

/** The groups of `to` that grew since `from` (bytes and count added), largest first. */
export function heapGrowth(from: HeapSummary, to: HeapSummary, top = 15): HeapGroup[] {
  const base = new Map(from.groups.map((g) => [g.name, g]));
  return to.groups
    .map((g) => ({ name: g.name, count: g.count - (base.get(g.name)?.count ?? 0), bytes: g.bytes - (base.get(g.name)?.bytes ?? 0) }))
    .filter((g) => g.bytes > 0)
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, top);
}

/** The largest `top` groups only (for the report and the JSON). */
export function topGroups(h: HeapSummary, top = 25): HeapSummary {
  return { ...h, groups: h.groups.slice(0, top) };
}
