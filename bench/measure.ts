/**
 * The benchmark's measurements of the processes: the controller's figures
 * from its sampled process tree, CPU by process over a window and what it
 * costs per request, and the controller's own API requests in an audit window.
 */
import { cpus } from 'node:os';
import type { AuditWindow } from './analyze.js';
import { countRequests, sortCounts } from './audit.js';
import type { ControllerProcess } from './controller-process.js';
import { envCpu } from './floor.js';
import type { HeapSpaces } from './heapstat.js';
import { machineBusySeconds, type ProcTreeSampler } from './procstat.js';
import type { Setup } from './setup.js';
import { mb, round } from './stats.js';
import type { BenchOptions, ControllerFigures } from './types.js';

export function controllerRows(opts: BenchOptions, audit: AuditWindow) {
  const mine = (evs: AuditWindow['remote']) => evs.filter((e) => e.user?.username === opts.controllerUser);
  const m = countRequests('remote', mine(audit.remote));
  countRequests('internal', mine(audit.internal), m);
  return sortCounts(m).map((c) => ({ ...c, perRequest: 0 }));
}

export function exitDescription(c: ControllerProcess): string | null {
  return c.running ? null : `exit code ${String(c.exitInfo?.code)}, signal ${String(c.exitInfo?.signal)}; log ${c.logPath}`;
}

export function controllerFigures(sampler: ProcTreeSampler, cpu0: number, requests: number, seconds: number, heap: HeapSpaces | undefined): ControllerFigures {
  const end = sampler.sample();
  const peak = sampler.peakSince();
  const cpuSeconds = end.cpuSeconds - cpu0;
  return {
    cpuSeconds: round(cpuSeconds, 2),
    cpuMsPerRequest: round((cpuSeconds * 1000) / Math.max(1, requests), 2),
    cores: round(cpuSeconds / Math.max(0.001, seconds), 2),
    rssPeakMB: mb(Math.max(peak.rssBytes, end.rssBytes)),
    ...(peak.rssBytes >= end.rssBytes ? { rssPeakAnonMB: mb(peak.anonBytes), rssPeakFileMB: mb(peak.fileBytes) } : { rssPeakAnonMB: mb(end.anonBytes), rssPeakFileMB: mb(end.fileBytes) }),
    hwmMB: mb(peak.hwmBytes),
    rssEndMB: mb(end.rssBytes),
    ...(heap ? { heapAtPeak: heap } : {}),
  };
}

export type CpuSnapshot = Record<string, number>;

export function cpuSnapshot(s: Setup, controller: ProcTreeSampler): CpuSnapshot {
  const u = process.cpuUsage();
  return { controller: controller.sample().cpuSeconds, benchmark: (u.user + u.system) / 1e6, machine: machineBusySeconds(), ...envCpu(s) };
}

/**
 * CPU milliseconds per request by process, and the throughput the machine
 * could sustain if all its CPUs went to these processes at that cost — a
 * figure much less sensitive to other load on the machine than the
 * throughput itself.
 */
export function cpuCost(cores: Record<string, number>, seconds: number, requests: number): { cpuMsPerRequest: Record<string, number>; cpuBoundThroughput: number } {
  const per: Record<string, number> = {};
  let total = 0;
  for (const k of ['controller', 'remoteApiserver', 'internalApiserver', 'etcd', 'tekton', 'kcp', 'benchmark']) {
    const ms = ((cores[k] ?? 0) * seconds * 1000) / Math.max(1, requests);
    per[k] = round(ms, 2);
    total += ms;
  }
  per['total'] = round(total, 2);
  return { cpuMsPerRequest: per, cpuBoundThroughput: total > 0 ? round((cpus().length * 1000) / total, 1) : 0 };
}

/** Average cores used in the window, by process; "other" is the rest of the machine (other users of the box). */
export function cpuBreakdown(a: CpuSnapshot, b: CpuSnapshot, seconds: number): Record<string, number> {
  const out: Record<string, number> = {};
  let ours = 0;
  for (const k of Object.keys(b)) {
    if (k === 'machine') continue;
    const d = Math.max(0, (b[k] ?? 0) - (a[k] ?? 0));
    ours += d;
    out[k] = round(d / seconds, 2);
  }
  out['tekton'] = round(['tektonController', 'tektonResolvers', 'tektonWebhook'].reduce((sum, k) => sum + (out[k] ?? 0), 0), 2);
  // A sharded kcp's processes (kcp:<shard>, kcp:front-proxy, kcp:cache-server) are "kcp" together.
  const kcpParts = Object.keys(out).filter((k) => k.startsWith('kcp:'));
  if (kcpParts.length) out['kcp'] = round(kcpParts.reduce((sum, k) => sum + (out[k] ?? 0), 0), 2);
  out['otherProcesses'] = round(Math.max(0, (b['machine'] ?? 0) - (a['machine'] ?? 0) - ours) / seconds, 2);
  out['machineBusy'] = round(Math.max(0, (b['machine'] ?? 0) - (a['machine'] ?? 0)) / seconds, 2);
  return out;
}
