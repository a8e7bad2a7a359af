/**
 * Scale mode (`--scale M`): M finished requests exist before the controller
 * starts; then how long it takes to be ready, how soon it serves requests
 * that are not finished (one created just before it starts, one just after),
 * what it holds in memory, and that it processes one new request without
 * writing to the finished ones (optionally with a heap snapshot of the
 * settled controller).
 */
import { join } from 'node:path';
import { CONTROLLER_NAMESPACE } from '../src/localenv/index.js';
import { INTERNAL_REQUEST, type InternalRequest } from '../src/api/types.js';
import { describeError, fromKubeConfig } from '../src/kube/client.js';
import { correctness } from './analyze.js';
import { categoryOf } from './audit.js';
import type { ControllerProcess } from './controller-process.js';
import { heapSnapshotOf, topGroups } from './heap-snapshot.js';
import { controllerRows, exitDescription } from './measure.js';
import { createdAt, type Observer, type RequestRecord } from './observer.js';
import { bareStreamedList } from './floor.js';
import { expectedResults } from './pipeline.js';
import { readAudit, type RunContext, type Setup } from './setup.js';
import { mb, round, sleep } from './stats.js';
import type { FirstNewRequest, ScaleResult } from './types.js';
import { createOne, requestBody, type Requester } from './workload.js';

const NS = CONTROLLER_NAMESPACE;

/** The finished requests precreateFinished made: their names, and each one's namespace, uid and resourceVersion once finished (by name). */
export interface Precreated {
  count: number;
  seconds: number;
  names: Set<string>;
  finished: Map<string, { namespace: string; uid: string; resourceVersion: string }>;
}

/**
 * M requests that finished long ago: created, then given a terminal status by
 * the admin through the status subresource, spread over `s.allowed` (the
 * scale mode, and the chaos run's --history).
 */
/** `finalizers`: what each finished request carries (the Go controller's, for its runs: it put it on every request it served). */
export async function precreateFinished(s: Pick<Setup, 'remoteAdmin' | 'allowed'>, m: number, runId: string, log: (msg: string) => void, finalizers?: string[]): Promise<Precreated> {
  const client = (await fromKubeConfig('remote', s.remoteAdmin)).resource<InternalRequest>(INTERNAL_REQUEST);
  const t0 = performance.now();
  const names = new Set<string>();
  const finished: Precreated['finished'] = new Map();
  let next = 0;
  let done = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= m) return;
      const ns = s.allowed[i % s.allowed.length]!;
      const name = `${runId}-old-${String(i).padStart(6, '0')}`;
      names.add(name);
      const body = requestBody(ns, name, i);
      if (finalizers) body.metadata.finalizers = finalizers;
      const created = await client.create(ns, body);
      const ts = new Date(Date.now() - 3_600_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
      const uid = created.metadata.uid ?? '';
      const status: InternalRequest['status'] = {
        conditions: [{ type: 'Succeeded', status: 'True', reason: 'Succeeded', message: `PipelineRun ${NS}/ir-${uid} succeeded`, lastTransitionTime: ts, observedGeneration: 1 }],
        startTime: ts,
        completionTime: ts,
        pipelineRun: `${NS}/ir-${uid}`,
        results: { digest: `digest:{"image":"${created.spec.params?.['image'] ?? ''}"}` },
        observedGeneration: 1,
      };
      const after = await client.replaceStatus(ns, name, { ...created, status });
      finished.set(name, { namespace: ns, uid, resourceVersion: after.metadata.resourceVersion ?? '' });
      if (++done % 1000 === 0) log(`scale: ${done}/${m} finished requests created`);
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  const seconds = (performance.now() - t0) / 1000;
  log(`scale: ${m} finished requests created in ${seconds.toFixed(1)} s`);
  return { count: m, seconds, names, finished };
}

/** The namespace whose requests come last in a list (keys in byte order): `pending` goes there, behind all the finished ones. */
export function lastInKeyOrder(namespaces: string[]): string {
  return [...namespaces].sort().at(-1)!;
}

/** One unfinished request, created by the requester and followed by the observer (`pending` before the controller starts, `fresh` just after). */
export async function submitTracked(observer: Observer, requester: Requester, ns: string, name: string, i: number): Promise<RequestRecord> {
  const rec: RequestRecord = { key: `${ns}/${name}`, namespace: ns, name, pass: 0, allowed: true, prUids: new Set(), prNames: new Set() };
  observer.track(rec);
  try {
    await createOne(typeof requester === 'function' ? requester(undefined) : requester, observer, rec, requestBody(ns, name, i));
  } catch (e) {
    rec.createError ??= describeError(e);
  }
  return rec;
}

export async function scaleMode(
  run: RunContext,
  pre: Pick<Precreated, 'count' | 'seconds' | 'names'>,
  early: { pending: RequestRecord; fresh: RequestRecord },
  readyMs: number,
  rssAtReady: number,
  startCpu?: ScaleResult['startCpu'],
): Promise<ScaleResult> {
  const { opts, s, observer, controller, sampler, heapSampler, requester, runId, log } = run;
  const cpuToReady = sampler.sample().cpuSeconds;
  const ns = s.allowed[0]!;
  const name = `${runId}-new`;
  const rec: RequestRecord = { key: `${ns}/${name}`, namespace: ns, name, pass: 0, allowed: true, prUids: new Set(), prNames: new Set() };
  observer.track(rec);
  rec.sentAt = performance.now();
  const created = await (typeof requester === 'function' ? requester(undefined) : requester).create(ns, requestBody(ns, name, 0));
  rec.ackAt = performance.now();
  if (created.metadata.uid) observer.setUid(rec, created.metadata.uid);
  const all = [early.pending, early.fresh, rec];
  const deadline = performance.now() + 120_000;
  while (all.some((r) => r.terminalAt === undefined && !r.createError) && performance.now() < deadline && controller.running) await observer.changed(250);
  const afterOne = sampler.sample();
  const processedMs = rec.terminalAt !== undefined ? rec.terminalAt - controller.startedAt : null;
  log(`scale: new request ${rec.terminalAt !== undefined ? `terminal ${((rec.terminalAt - (createdAt(rec) ?? 0)) / 1000).toFixed(2)} s after its create` : 'NOT finished'}; settling 5 s`);
  const firstNew = { pending: firstNewFigures(early.pending, controller), fresh: firstNewFigures(early.fresh, controller) };
  for (const [label, f] of Object.entries(firstNew)) {
    log(`scale: ${label} request Running ${f.runningMs ?? 'never'} ms, terminal ${f.terminalMs ?? 'never'} ms after the controller's start (${f.runningBeforeReady ? 'before' : 'not before'} ready)`);
  }
  const t = performance.now();
  while (performance.now() - t < 5000 && all.some((r) => r.prUids.size === 0 || r.prDeletedAt === undefined)) await observer.changed(250);
  await sleep(Math.max(0, 5000 - (performance.now() - t)));
  const settled = sampler.sample();
  const peak = sampler.peakSince();
  const heapSettled = await heapSampler.sample();
  const full = opts.heapSnapshot ? await heapSnapshotOf(controller, join(s.dir, 'heap'), log) : undefined;
  const heap = full ? topGroups(full) : undefined;
  // After the controller's figures: the same requests streamed to a client that keeps nothing (what "ready" cannot beat here).
  const bareList = s.kcp ? undefined : await bareStreamedList(s.remoteAdmin, s, opts.readyTimeoutSeconds * 1000).catch((e: unknown) => ({ error: describeError(e) }));
  if (bareList) log(`scale: ${'error' in bareList ? `no bare streamed list: ${bareList.error}` : `a bare streamed list of the ${bareList.events} requests took ${bareList.ms} ms (${bareList.megabytes} MB; remote apiserver CPU ${bareList.remoteApiserverCpuSeconds} s, etcd ${bareList.etcdCpuSeconds} s)`}`);
  const audit = readAudit(s);
  const rows = controllerRows(opts, audit);
  const writesToFinished = audit.remote.filter(
    (e) => e.user?.username === opts.controllerUser && categoryOf(e.verb) === 'write' && e.objectRef?.resource === 'internalrequests' && pre.names.has(e.objectRef?.name ?? ''),
  ).length;
  const c = correctness({
    records: all,
    controllerUser: opts.controllerUser,
    audit,
    errorLines: controller.errorLines,
    errorSamples: controller.errorSamples,
    controllerExited: exitDescription(controller),
    observerGaps: observer.gaps,
    expectedResults,
  });
  const failures = [...c.failures];
  if (writesToFinished) failures.push(`the controller wrote ${writesToFinished} times to requests that were already finished`);
  return {
    preexisting: pre.count,
    precreateSeconds: round(pre.seconds, 1),
    readyMs: round(readyMs, 0),
    readyAndOneProcessedMs: processedMs === null ? null : round(processedMs, 0),
    newRequestCreateToTerminalMs: rec.terminalAt !== undefined ? round(rec.terminalAt - (createdAt(rec) ?? rec.terminalAt), 1) : null,
    firstNew,
    rssAtReadyMB: mb(rssAtReady),
    rssAfterOneMB: mb(afterOne.rssBytes),
    rssSettledMB: mb(settled.rssBytes),
    rssPeakMB: mb(peak.rssBytes),
    hwmMB: mb(peak.hwmBytes),
    cpuSecondsToReady: round(cpuToReady, 2),
    cpuSecondsTotal: round(settled.cpuSeconds, 2),
    ...(startCpu ? { startCpu } : {}),
    ...(bareList ? { bareList } : {}),
    api: { rows, writesToFinishedRequests: writesToFinished, readsOutsideListWatch: rows.filter((r) => r.category === 'read').reduce((a, r) => a + r.count, 0) },
    correctness: { ok: failures.length === 0, failures },
    ...(heap ? { heap } : {}),
    ...(heapSettled ? { heapSettled } : {}),
  };
}

/** A request of ScaleResult.firstNew: its times in ms from the controller's start. */
function firstNewFigures(r: RequestRecord, controller: ControllerProcess): FirstNewRequest {
  const seen = [r.runningAt, r.prAddedAt].filter((x): x is number => x !== undefined);
  const runningAt = seen.length ? Math.min(...seen) : undefined;
  const since = (at: number | undefined) => (at === undefined ? null : round(at - controller.startedAt, 0));
  return {
    namespace: r.namespace,
    name: r.name,
    createSentMs: since(r.sentAt),
    runningMs: since(runningAt),
    terminalMs: since(r.terminalAt),
    runningBeforeReady: runningAt !== undefined && controller.readyAt !== undefined && runningAt < controller.readyAt,
  };
}

