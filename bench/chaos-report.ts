/** The human-readable summary of a chaos run. */
import type { ChaosResult } from './chaos-types.js';
import type { Distribution } from './stats.js';

export function formatChaos(r: ChaosResult): string {
  const lines: string[] = [];
  const d = (x: Distribution | null) => (x && x.count ? `p50 ${x.p50} ms, p99 ${x.p99} ms, max ${x.max} ms (n=${x.count})` : 'n/a');
  lines.push(`chaos run, seed ${r.seed}: ${r.requests} requests, ${r.faults.length} faults, ${r.seconds} s (controller: 2 replicas, real processes; ${r.tekton === 'real' ? 'real Tekton v1.6, pods simulated' : 'PipelineRuns: simulated executor, a stand-in for Tekton'})`);
  lines.push(`  outcome: ${r.ok ? 'OK' : 'PROBLEMS'}: ${r.counts.succeeded}/${r.counts.allowed - r.counts.deletedByRun} allowed Succeeded with their results, ${r.counts.rejectedSeen}/${r.counts.rejected} rejected Rejected, ${r.counts.deletedByRun} deleted and re-created by the run; controller restarts ${r.counts.restarts}`);
  lines.push(`  exactly once (audit log): ${r.problems.filter((p) => /PipelineRun creates/.test(p)).length === 0 ? `one successful PipelineRun create per allowed request${r.notes?.some((n) => /create's answer/.test(n)) ? ' (or, where the apiserver stopped mid-create, one PipelineRun seen: notes)' : ''}, none for rejected ones` : 'VIOLATED'}`);
  if (r.history) {
    const h = r.history;
    lines.push(
      `  history: ${h.requests} finished requests, created in ${h.createSeconds} s before the controllers started: ${h.ok ? 'left alone' : 'TOUCHED'}: ` +
        `${h.controllerWrites} controller writes to them (remote audit log), ${h.pipelineRunCreates} PipelineRun creates for them (internal audit log), ${h.changed} changed or missing at the end (resourceVersions)`,
    );
  }
  const rs = r.restartSync;
  if (rs.restarts) {
    lines.push(
      `  restarted processes: ${rs.restarts}; start → caches listed (/readyz 200${r.history ? ', the history included' : ''}): ${d(rs.readyMs)}${rs.notReady ? ` (${rs.notReady} killed or stopped before)` : ''}`,
    );
    lines.push(
      `    start → "became leader": ${d(rs.leaderMs)}; start → "caches synced" (a leader's, once its remotes are listed): ${d(rs.syncedMs)}` +
        `${rs.notSynced ? `; ${rs.notSynced} never logged it (standby until killed or the end)` : ''}${rs.minRequestsAtSync !== null ? `; fewest requests cached then: ${rs.minRequestsAtSync}` : ''}`,
    );
  }
  lines.push(`  latency create→final: baseline ${d(r.latencyMs.baseline)}; under faults ${d(r.latencyMs.chaos)}`);
  lines.push(`  leader takeover after a kill: ${d(r.failover.takeoverMs)}; by the standby after kill-leader: ${d(r.failover.standbyTakeoverMs)}; after kill-both (restart first): ${d(r.failover.afterKillBothMs)}`);
  lines.push(`  watch relists after 410 Gone (controller logs): ${r.counts.relists410}`);
  lines.push('  recovery (fault end → first successful status write), by kind:');
  for (const [k, v] of Object.entries(r.recoveryByKind)) {
    const w = r.faults.filter((f) => f.kind === k && f.waiting && f.waiting.count > 0);
    const worst = w.reduce((a, f) => Math.max(a, f.waiting!.maxProgressMs ?? 0), 0);
    lines.push(`    ${k.padEnd(16)} ${d(v)}${w.length ? `; requests waiting at the fault's end: ${w.reduce((a, f) => a + f.waiting!.count, 0)}, the slowest progressed ${worst} ms after it` : ''}`);
  }
  if (r.notes?.length) {
    lines.push(`  notes (${r.notes.length}):`);
    for (const n of r.notes.slice(0, 40)) lines.push(`    - ${n}`);
  }
  if (r.problems.length) {
    lines.push(`  problems (${r.problems.length}):`);
    for (const p of r.problems.slice(0, 40)) lines.push(`    - ${p}`);
  }
  return lines.join('\n');
}
