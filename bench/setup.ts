/**
 * The benchmark's environment: two control planes (src/localenv), the
 * project's CRDs and RBAC, the benchmark Pipeline and config, the simulated
 * part in a worker thread (the simulated executor, or with real Tekton the
 * simulated kubelet), and the controller under test as a process.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { repoRoot } from '../src/util/repo.js';
import { CONTROLLER_NAMESPACE, startEnvironment, type Environment, applyObjects, grantRequester, installProject } from '../src/localenv/index.js';
import type { AuditWindow } from './analyze.js';
import { AuditReader } from './audit.js';
import { ControllerProcess, DEFAULT_CONTROLLER_CMD } from './controller-process.js';
import type { HeapSampler } from './heapstat.js';
import { useKeepAlive } from './keepalive.js';
import type { Observer } from './observer.js';
import { benchPipeline } from './pipeline.js';
import { ProcTreeSampler } from './procstat.js';
import type { SimulationWorkerData } from './simulation-worker.js';
import { sleep } from './stats.js';
import type { BenchOptions } from './types.js';
import type { requesterClient } from './workload.js';

const NS = CONTROLLER_NAMESPACE;

/** The simulated part, in a worker thread (simulation-worker.ts): the simulated executor, or with real Tekton the simulated kubelet. */
export class SimulationThread {
  private readonly worker: Worker;
  private readonly started: Promise<void>;

  static executor(kubeconfigPath: string, delayMs: number, log: (m: string) => void): SimulationThread {
    return new SimulationThread({ kind: 'executor', kubeconfigPath, namespace: NS, delayMs }, (m) => log(`simulated executor: ${m}`));
  }

  static kubelet(kubeconfigPath: string, stepMs: number, log: (m: string) => void): SimulationThread {
    return new SimulationThread({ kind: 'kubelet', kubeconfigPath, stepMs }, log);
  }

  private constructor(workerData: SimulationWorkerData, log: (m: string) => void) {
    this.worker = new Worker(new URL('./simulation-worker.js', import.meta.url), { workerData });
    this.started = new Promise((resolve, reject) => {
      this.worker.on('message', (m: { type: string; msg?: string }) => {
        if (m.type === 'started') resolve();
        else if (m.type === 'log') log(m.msg ?? '');
      });
      this.worker.on('error', reject);
    });
  }

  ready(): Promise<void> {
    return this.started;
  }

  async stop(): Promise<void> {
    const stopped = new Promise<void>((resolve) => {
      this.worker.on('message', (m: { type: string }) => m.type === 'stopped' && resolve());
      this.worker.on('exit', () => resolve());
    });
    this.worker.postMessage({ type: 'stop' });
    await Promise.race([stopped, sleep(10_000)]);
    await this.worker.terminate();
  }
}

export interface Setup {
  env: Environment;
  dir: string;
  remoteAdmin: KubeConfig;
  internalAdmin: KubeConfig;
  allowed: string[];
  denied: string[];
  readers: { remote: AuditReader; internal: AuditReader };
  setupMs: number;
  /** CPU of the environment's own processes. */
  envProcs: Array<{ name: string; sampler: ProcTreeSampler }>;
}

export async function setUp(opts: BenchOptions, log: (m: string) => void): Promise<Setup> {
  if (opts.keep) process.env['ENVTEST_KEEP'] = '1';
  const env = await startEnvironment({
    audit: true,
    tekton:
      opts.tekton === 'real'
        ? {
            stepMs: opts.executorDelayMs,
            // The benchmark runs the simulated kubelet itself, in a worker thread (see SimulationThread).
            kubelet: false,
            ...(opts.tektonApiQps ? { kubeApiQps: opts.tektonApiQps, kubeApiBurst: 2 * opts.tektonApiQps } : {}),
          }
        : undefined,
    log: opts.quiet ? undefined : (m) => log(m),
  });
  const t0 = Date.now();
  try {
    await installProject(env);
    const allowed = Array.from({ length: opts.namespaces }, (_, i) => `bench-team-${i}`);
    const denied = opts.rejectedShare > 0 ? ['bench-outside-0', 'bench-outside-1'] : [];
    await Promise.all([...allowed, ...denied].map((ns) => grantRequester(env, ns)));
    const internalAdmin = await useKeepAlive(env.internal.identities.admin.kubeConfig());
    const remoteAdmin = await useKeepAlive(env.remote.identities.admin.kubeConfig());
    await applyObjects(internalAdmin, [
      benchPipeline(),
      { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name: 'config', namespace: NS }, spec: { allowList: allowed } } as KubernetesObject,
    ]);
    if (!env.remote.auditLogPath || !env.internal.auditLogPath) throw new Error('the environment has no audit logs');
    const dir = join(env.dir, 'bench');
    mkdirSync(dir, { recursive: true });
    // The harness lists its processes in <dir>/pids: etcd, remote apiserver, internal apiserver.
    const pids = readFileSync(join(env.dir, 'pids'), 'utf8').trim().split(/\s+/).map(Number);
    const envProcs: Setup['envProcs'] = (['etcd', 'remoteApiserver', 'internalApiserver'] as const).flatMap((name, i) =>
      pids[i] ? [{ name, sampler: new ProcTreeSampler(pids[i]!, 1000, 60_000) }] : [],
    );
    const t = env.tekton;
    for (const [name, p] of [['tektonController', t?.controller], ['tektonResolvers', t?.resolvers], ['tektonWebhook', t?.webhook]] as const) {
      if (p?.pid) envProcs.push({ name, sampler: new ProcTreeSampler(p.pid, 1000, 60_000) });
    }
    return {
      env,
      dir,
      remoteAdmin,
      internalAdmin,
      allowed,
      denied,
      readers: { remote: new AuditReader('remote', env.remote.auditLogPath), internal: new AuditReader('internal', env.internal.auditLogPath) },
      setupMs: Date.now() - t0,
      envProcs,
    };
  } catch (e) {
    await env.stop();
    throw e;
  }
}

export function readAudit(s: Setup): AuditWindow {
  return { remote: s.readers.remote.readNew(), internal: s.readers.internal.readNew() };
}

export function startController(opts: BenchOptions, s: Setup, index: number): ControllerProcess {
  let command = opts.controllerCmd;
  if (opts.heapSnapshot && opts.scale !== undefined) {
    if (command !== DEFAULT_CONTROLLER_CMD) throw new Error('--heap-snapshot works with the default --controller-cmd only (add --heapsnapshot-signal=SIGUSR2 to your own)');
    mkdirSync(join(s.dir, 'heap'), { recursive: true });
    command = command.replace('{node} ', '{node} --heapsnapshot-signal=SIGUSR2 --diagnostic-dir {dir}/heap ');
  }
  return new ControllerProcess({
    command,
    readyLog: opts.readyLog,
    index,
    vars: {
      remoteKubeconfig: s.env.remote.identities.controller.kubeconfigPath,
      internalKubeconfig: s.env.internal.identities.controller.kubeconfigPath,
      namespace: NS,
      node: process.execPath,
      repo: repoRoot(),
      dir: s.dir,
    },
  });
}

/** What every measurement of one run works with. */
export interface RunContext {
  opts: BenchOptions;
  s: Setup;
  observer: Observer;
  controller: ControllerProcess;
  sampler: ProcTreeSampler;
  heapSampler: HeapSampler;
  requester: Awaited<ReturnType<typeof requesterClient>>;
  runId: string;
  log: (m: string) => void;
}
