/**
 * One pass of the workload against the running controller: the requests
 * created (workload.ts) and followed to their end, then what the pass
 * measured — throughput, latencies, API requests from the audit logs, CPU and
 * memory by process, correctness.
 */
import { apiFigures, correctness, latencies } from './analyze.js';
import { controllerFigures, cpuBreakdown, cpuCost, cpuSnapshot, exitDescription } from './measure.js';
import { expectedResults } from './pipeline.js';
import { readAudit, type RunContext } from './setup.js';
import { mb, round, sleep } from './stats.js';
import type { ProcTreeSampler } from './procstat.js';

function kcpFigures(sampler: ProcTreeSampler): { rssPeakMB: number; rssEndMB: number } {
  const end = sampler.sample();
  return { rssPeakMB: mb(Math.max(sampler.peakSince().rssBytes, end.rssBytes)), rssEndMB: mb(end.rssBytes) };
}

/** Per shard of a sharded kcp: its process' RSS over the pass and its CPU (cores, ms per request). */
function shardFigures(shards: Array<{ name: string; sampler: ProcTreeSampler }>, cpu: Record<string, number>, seconds: number, requests: number) {
  return shards.map(({ name, sampler }) => {
    const cores = cpu[`kcp:${name}`] ?? 0;
    return { name, ...kcpFigures(sampler), cpuCores: cores, cpuMsPerRequest: round((cores * seconds * 1000) / Math.max(1, requests), 2) };
  });
}
import type { BurstHeap, PassResult } from './types.js';
import type { RequestRecord } from './observer.js';
import { heapGrowth, heapSnapshotOf, topGroups } from './heap-snapshot.js';
import { join } from 'node:path';
import { runWorkload } from './workload.js';

export async function onePass(run: RunContext, pass: number, ceilingWritesPerSecond: number | undefined): Promise<PassResult> {
  const { opts, s, observer, controller, sampler, heapSampler, requester, runId, log } = run;
  readAudit(s); // close the previous window
  const cpuAt = cpuSnapshot(s, sampler);
  const cpu0 = sampler.sample().cpuSeconds;
  sampler.markPeak();
  heapSampler.markPeak();
  s.kcp?.sampler.markPeak();
  for (const sh of s.kcp?.shards ?? []) sh.sampler.markPeak();
  const errors0 = controller.errorLines;
  const samples0 = controller.errorSamples.length;
  let heapInBurst: BurstHeap | undefined;
  const t0 = performance.now();
  // Real Tekton works through a PipelineRun much more slowly (TaskRun, pod, several status writes, client-side rate limits).
  const timeoutMs = (opts.timeoutSeconds ?? (opts.tekton === 'real' ? Math.max(300, opts.requests) : Math.max(60, opts.requests / 5))) * 1000;
  log(`pass ${pass}: ${opts.requests} requests, ${opts.rate === undefined ? `burst (${opts.concurrency} in flight)` : `${opts.rate}/s`}`);
  const out = await runWorkload(requester, observer, {
    pass,
    runId,
    requests: opts.requests,
    rate: opts.rate,
    concurrency: opts.concurrency,
    allowedNamespaces: s.allowed,
    deniedNamespaces: s.denied,
    rejectedShare: opts.rejectedShare,
    noisyNeighbour: opts.noisyNeighbour,
    timeoutMs,
    drainMs: opts.drainSeconds * 1000,
    log,
    ...(opts.heapSnapshot && pass === opts.passes && run.floorHeap ? { onAllCreated: async (recs: readonly RequestRecord[]) => void (heapInBurst = await burstHeap(run, recs)) } : {}),
  });
  await sleep(1000); // let the last audit lines and samples land
  const windowSeconds = (performance.now() - t0) / 1000;
  const cpu = cpuBreakdown(cpuAt, cpuSnapshot(s, sampler), windowSeconds);
  const audit = readAudit(s);
  const records = out.records;
  const allTerminalSeconds = out.lastTerminalAt !== undefined ? (out.lastTerminalAt - out.firstSentAt) / 1000 : NaN;
  const terminal = records.filter((r) => r.terminalAt !== undefined).length;
  const api = apiFigures(records, opts.controllerUser, audit, windowSeconds);
  const submitSeconds = (out.lastSentAt - out.firstSentAt) / 1000;
  return {
    pass,
    label: pass === 1 ? 'cold' : 'warm',
    workload: {
      requests: records.length,
      allowed: records.filter((r) => r.allowed).length,
      rejected: records.filter((r) => !r.allowed).length,
      mode: opts.rate === undefined ? 'burst' : 'rate',
      rate: opts.rate ?? null,
      concurrency: opts.concurrency,
      namespaces: s.allowed.length,
      tekton: opts.tekton,
      executorDelayMs: opts.executorDelayMs,
      submitSeconds: round(submitSeconds, 2),
      submitRate: round(records.length / Math.max(0.001, submitSeconds), 1),
    },
    noisyNeighbour: out.lone
      ? {
          flood: records.length - 1,
          floodNamespace: s.allowed[0]!,
          loneNamespace: out.lone.record.namespace,
          createToRunningMs: out.lone.record.runningAt !== undefined && out.lone.record.ackAt !== undefined ? round(out.lone.record.runningAt - out.lone.record.sentAt!, 0) : null,
          createToTerminalMs: out.lone.record.terminalAt !== undefined ? round(out.lone.record.terminalAt - out.lone.record.sentAt!, 0) : null,
          floodTerminalAtLoneCreate: out.lone.floodTerminalAtCreate,
        }
      : null,
    throughput: Number.isFinite(allTerminalSeconds) ? round(terminal / Math.max(0.001, allTerminalSeconds), 1) : 0,
    allTerminalSeconds: round(allTerminalSeconds, 2),
    windowSeconds: round(windowSeconds, 1),
    latencyMs: latencies(records),
    api,
    controller: controllerFigures(sampler, cpu0, records.length, windowSeconds, heapSampler.peakSince()),
    cpuCores: cpu,
    ...cpuCost(cpu, windowSeconds, records.length),
    ...(s.kcp ? { kcp: { ...kcpFigures(s.kcp.sampler), ...(s.kcp.shards ? { shards: shardFigures(s.kcp.shards, cpu, windowSeconds, records.length) } : {}) } } : {}),
    correctness: correctness({
      records,
      controllerUser: opts.controllerUser,
      audit,
      errorLines: controller.errorLines - errors0,
      errorSamples: controller.errorSamples.slice(samples0),
      controllerExited: exitDescription(controller),
      observerGaps: observer.gaps,
      expectedResults,
    }),
    fractionOfCeiling: ceilingWritesPerSecond
      ? { remote: round(api.allIdentitiesWritesPerSecond.remote / ceilingWritesPerSecond, 3), internal: round(api.allIdentitiesWritesPerSecond.internal / ceilingWritesPerSecond, 3) }
      : null,
    ...(heapInBurst ? { heapInBurst } : {}),
  };
}

/** The live heap at the burst's height, against the floor (--heap-snapshot, last pass). */
async function burstHeap(run: RunContext, records: readonly RequestRecord[]): Promise<BurstHeap | undefined> {
  const floor = run.floorHeap;
  if (!floor) return undefined;
  const inFlight = records.filter((r) => !r.createError && r.terminalAt === undefined).length;
  const pipelineRunsLive = records.filter((r) => r.prUids.size > 0 && r.prDeletedAt === undefined).length;
  const t = performance.now();
  const h = await heapSnapshotOf(run.controller, join(run.s.dir, 'heap'), run.log);
  if (!h) return undefined;
  return {
    inFlight,
    pipelineRunsLive,
    liveMB: mb(h.totalBytes),
    floorMB: mb(floor.totalBytes),
    bytesPerRequestInFlight: inFlight ? Math.round((h.totalBytes - floor.totalBytes) / inFlight) : 0,
    pauseMs: round(performance.now() - t, 0),
    grew: heapGrowth(floor, h),
    heap: topGroups(h),
  };
}
