/**
 * The soak (`npm run chaos -- --soak DURATION`): one controller process at a
 * steady rate for a long time, sampled, so that a leak shows as a slope.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { isFinished } from '../src/api/conditions.js';
import { INTERNAL_REQUEST, type InternalRequest } from '../src/api/types.js';
import { applyObjects, grantRequester, installProject, CONTROLLER_NAMESPACE, startEnvironment, SimulatedTektonExecutor } from '../src/localenv/index.js';
import { fromKubeConfig } from '../src/kube/client.js';
import { repoRoot } from '../src/util/repo.js';
import { ControllerProcess, RUNTIME_CONTROLLER } from './controller-process.js';
import { parseHeapSpaces } from './heapstat.js';
import { benchPipeline } from './pipeline.js';
import { round, sleep } from './stats.js';
import { createUntilDone, requestBody } from './workload.js';

const NS = CONTROLLER_NAMESPACE;

export interface SoakOptions {
  /** Requests per second. */
  rate: number;
  durationMs: number;
  sampleEveryMs: number;
  stepMs: number;
  log: (m: string) => void;
}

export interface SoakSample {
  /** Seconds since the soak started. */
  t: number;
  rssMb: number;
  heapMb: number;
  /** Memory V8 tracks outside the JS heap (Buffers, ArrayBuffers: response bodies, TLS). */
  externalMb: number;
  fds: number;
  eventLoopP99Ms: number;
  requestsDone: number;
}

export interface SoakResult {
  samples: SoakSample[];
  /** Least-squares slopes, per 10 minutes, over the second half of the run (the first half is warm-up). */
  rssMbPer10Min: number;
  heapMbPer10Min: number;
  externalMbPer10Min: number;
  fdsPer10Min: number;
  requests: number;
  failed: number;
}

/** Least-squares slope of y over x. */
export function slope(xs: readonly number[], ys: readonly number[]): number {
  const n = xs.length;
  if (n < 2) return 0;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

/**
 * The soak: one controller process at a steady rate for a long time, finished
 * requests removed by ttlSecondsAfterFinished (so that what is cached stays
 * the same size), sampling the process's RSS, heap, open file descriptors and
 * event-loop delay: a leak shows as a slope.
 */
export async function runSoak(opts: SoakOptions): Promise<SoakResult> {
  const log = opts.log;
  const env = await startEnvironment({ log: () => {} });
  let proc: ControllerProcess | undefined;
  let executor: { stop(): Promise<void> } | undefined;
  try {
    await installProject(env);
    const remoteAdmin = env.remote.identities.admin.kubeConfig();
    await applyObjects(remoteAdmin, loadTtlRole());
    const ns = 'soak-a';
    await grantRequester(env, ns);
    const internalAdmin = env.internal.identities.admin.kubeConfig();
    await applyObjects(internalAdmin, [
      benchPipeline(),
      { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name: 'config', namespace: NS }, spec: { allowList: [ns], ttlSecondsAfterFinished: 30 } } as KubernetesObject,
    ]);
    executor = new SimulatedTektonExecutor(internalAdmin, (m) => log(`executor: ${m}`)).startAuto({ namespace: NS, delayMs: opts.stepMs });
    const dir = join(env.dir, 'soak');
    mkdirSync(dir, { recursive: true });
    proc = new ControllerProcess({
      command: `${RUNTIME_CONTROLLER} --remote-kubeconfig {remoteKubeconfig} --kubeconfig {internalKubeconfig} --namespace {namespace} --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 0`,
      vars: { remoteKubeconfig: env.remote.identities.controller.kubeconfigPath, internalKubeconfig: env.internal.identities.controller.kubeconfigPath, namespace: NS, node: process.execPath, repo: repoRoot(), dir },
      readyLog: 'caches synced',
      index: 0,
    });
    let metricsPort = 0;
    proc.onLineSeen((line) => {
      const m = /"address":"127\.0\.0\.1:(\d+)".*"msg":"serving metrics"/.exec(line);
      if (m) metricsPort = Number(m[1]);
    });
    await proc.waitReady(60_000);
    const requester = (await fromKubeConfig('remote', env.remote.identities.requester!.kubeConfig())).resource<InternalRequest>(INTERNAL_REQUEST);
    const samples: SoakSample[] = [];
    let sent = 0;
    let failed = 0;
    let done = 0;
    const t0 = performance.now();
    const metric = (text: string, name: string): number => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    const sampleNow = async () => {
      const status = readFileSync(`/proc/${proc!.pid}/status`, 'utf8');
      const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      const fds = readdirCount(`/proc/${proc!.pid}/fd`);
      const text = metricsPort ? await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text() : '';
      const heap = parseHeapSpaces(text);
      const s: SoakSample = {
        t: round((performance.now() - t0) / 1000, 0),
        rssMb: round(rssKb / 1024, 1),
        heapMb: heap?.heapUsedMB ?? NaN,
        externalMb: heap?.externalMB ?? NaN,
        fds,
        eventLoopP99Ms: round(metric(text, 'nodejs_eventloop_lag_p99_seconds') * 1000, 1),
        requestsDone: done,
      };
      samples.push(s);
      log(`soak ${String(s.t).padStart(5)} s: rss ${s.rssMb} MB, heap ${s.heapMb} MB, external ${s.externalMb} MB, fds ${s.fds}, event-loop p99 ${s.eventLoopP99Ms} ms, ${s.requestsDone} requests done`);
    };
    const sampler = setInterval(() => void sampleNow().catch((e: unknown) => log(`soak: sample failed: ${String(e)}`)), opts.sampleEveryMs);
    await sampleNow();
    // Requests created and not yet seen finished, by name, with when they were created.
    const pending = new Map<string, number>();
    const DONE_WITHIN_MS = 600_000;
    // One list of the namespace every 2 s tells which finished (a final
    // condition, or gone: ttlSecondsAfterFinished deletes only finished
    // ones). One request at a time, whatever the backlog: a poll per request
    // would grow with it and slow the machine down further.
    const checkDone = async () => {
      const listedAt = Date.now();
      const { items } = await requester.list(ns);
      const byName = new Map(items.map((r) => [r.metadata.name ?? '', r]));
      for (const [name, createdAt] of pending) {
        const r = byName.get(name);
        if (r ? isFinished(r) : createdAt < listedAt) {
          pending.delete(name);
          done++;
        } else if (Date.now() - createdAt > DONE_WITHIN_MS) {
          pending.delete(name);
          failed++;
          log(`soak: ${name} not finished ${DONE_WITHIN_MS / 1000} s after its create`);
        }
      }
    };
    let checking = Promise.resolve();
    const checker = setInterval(() => {
      checking = checking.then(checkDone).catch((e: unknown) => log(`soak: list failed: ${String(e)}`));
    }, 2000);
    const creating = new Set<Promise<void>>();
    while (performance.now() - t0 < opts.durationMs) {
      const due = t0 + (sent * 1000) / opts.rate - performance.now();
      if (due > 0) await sleep(due);
      const i = sent++;
      const name = `soak-${String(i).padStart(7, '0')}`;
      const p = createUntilDone(requester, requestBody(ns, name, i), Date.now() + 60_000)
        .then((created) => {
          if (created) pending.set(name, Date.now());
          else failed++;
        })
        .catch(() => {
          failed++;
        })
        .finally(() => creating.delete(p));
      creating.add(p);
    }
    await Promise.all(creating);
    while (pending.size) await sleep(1000);
    clearInterval(checker);
    await checking;
    clearInterval(sampler);
    await sampleNow();
    const half = samples.filter((s) => s.t >= samples[samples.length - 1]!.t / 2);
    const per10 = (ys: number[]) => round(slope(half.map((s) => s.t), ys) * 600, 2);
    return {
      samples,
      rssMbPer10Min: per10(half.map((s) => s.rssMb)),
      heapMbPer10Min: per10(half.map((s) => s.heapMb)),
      externalMbPer10Min: per10(half.map((s) => s.externalMb)),
      fdsPer10Min: per10(half.map((s) => s.fds)),
      requests: sent,
      failed,
    };
  } finally {
    await proc?.stop(3000);
    await executor?.stop();
    await env.stop();
  }
}

function readdirCount(path: string): number {
  try {
    return readdirSync(path).length;
  } catch {
    return -1;
  }
}

function loadTtlRole(): KubernetesObject[] {
  return parseAllDocuments(readFileSync(join(repoRoot(), 'config', 'rbac', 'remote-ttl', 'ttl_role.yaml'), 'utf8'))
    .map((d) => d.toJS() as KubernetesObject)
    .filter(Boolean);
}
