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
import { CONTROLLER_NAMESPACE, KCP_CONTROLLER_USERNAME, startEnvironment, type Environment, applyObjects, ensureNamespace, grantRequester, installProject } from '../src/localenv/index.js';
import type { AuditWindow } from './analyze.js';
import type { Kcp, ShardedKcp } from '../src/localenv/index.js';
import { AuditReader, AuditReaders } from './audit.js';
import { ControllerProcess } from './controller-process.js';
import type { HeapSummary } from './heap-summary.js';
import type { HeapSampler } from './heapstat.js';
import { asControllerUser, KCP_SETUP_BATCH, setUpKcpWorkspaces, startBenchKcp, type KcpSetup } from './kcp-setup.js';
import { useKeepAlive } from './keepalive.js';
import type { Observer } from './observer.js';
import { benchPipeline } from './pipeline.js';
import { ProcTreeSampler } from './procstat.js';
import type { SimulationWorkerData } from './simulation-worker.js';
import { installIncumbent } from './incumbent.js';
import { sleep } from './stats.js';
import type { BenchOptions } from './types.js';
import type { Requester } from './workload.js';

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
  /** Where the observer watches requests: remoteAdmin, or with --kcp every shard's virtual workspace. */
  remoteObserved: KubeConfig[];
  internalAdmin: KubeConfig;
  allowed: string[];
  denied: string[];
  readers: { remote: Pick<AuditReader, 'readNew' | 'passOver'>; internal: AuditReader };
  setupMs: number;
  /** CPU of the environment's own processes. */
  envProcs: Array<{ name: string; sampler: ProcTreeSampler }>;
  /** With --kcp: the kcp and its workspaces (the remote side; the plain remote apiserver then idles). */
  kcp?: KcpSetup;
  /** The controller's username on the remote side's audit log, when it is not opts.controllerUser (kcp). */
  remoteControllerUser?: { from: string; to: string };
  /** Stops the environment (and kcp). */
  stop(): Promise<void>;
}

export async function setUp(opts: BenchOptions, log: (m: string) => void): Promise<Setup> {
  if (opts.keep) process.env['ENVTEST_KEEP'] = '1';
  let kcp: Kcp | undefined;
  const kcpStarting = opts.kcp ? startBenchKcp(log, opts.kcp.shards).then((k) => (kcp = k)) : undefined;
  const envStarting = startEnvironment({
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
  const started = await Promise.allSettled([envStarting, kcpStarting]);
  if (started.some((x) => x.status === 'rejected')) {
    await Promise.allSettled([kcp?.stop(), started[0].status === 'fulfilled' ? started[0].value.stop() : undefined]);
    throw (started.find((x) => x.status === 'rejected') as PromiseRejectedResult).reason;
  }
  const env = (started[0] as PromiseFulfilledResult<Environment>).value;
  const stop = async () => void (await Promise.allSettled([env.stop(), kcp?.stop()]));
  const t0 = Date.now();
  try {
    await installProject(env);
    let allowed = Array.from({ length: opts.namespaces }, (_, i) => `bench-team-${i}`);
    let denied = opts.rejectedShare > 0 ? ['bench-outside-0', 'bench-outside-1'] : [];
    let k: KcpSetup | undefined;
    if (kcp && opts.kcp) {
      log(`kcp ${kcp.version} ready after ${kcp.startupMs} ms; ${opts.kcp.workspaces} tenant workspaces next, ${KCP_SETUP_BATCH} at a time`);
      k = await setUpKcpWorkspaces(kcp, opts.kcp.workspaces, opts.rejectedShare > 0, log);
      ({ allowed, denied } = k);
    } else await Promise.all([...allowed, ...denied].map((ns) => grantRequester(env, ns)));
    const internalAdmin = await useKeepAlive(env.internal.identities.admin.kubeConfig());
    const remoteObserved = k ? k.observerAdmin : [await useKeepAlive(env.remote.identities.admin.kubeConfig())];
    const remoteAdmin = remoteObserved[0]!;
    if (opts.incumbentSource) await installIncumbent(env, opts.incumbentSource, log);
    // The Go controller points the cluster resolver at the request's namespace: where it runs, the Pipeline is
    // installed under each tenant's namespace name on the internal cluster too (this controller reads its own namespace's).
    if (opts.requestShape === 'pipeline') {
      for (const ns of allowed) {
        await ensureNamespace(internalAdmin, ns);
        await applyObjects(internalAdmin, [{ ...benchPipeline(), metadata: { ...benchPipeline().metadata, namespace: ns } }]);
      }
    }
    // The same configuration for every controller: the cluster resolver allowed (the `pipeline` request shape), and
    // the workspace claim the Go controller adds to every run it makes (this controller adds it only where a Pipeline asks).
    const pipelineShape = opts.requestShape === 'pipeline';
    await applyObjects(internalAdmin, [
      benchPipeline(),
      { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name: 'config', namespace: NS }, spec: { allowList: allowed, ...(pipelineShape ? { sources: { cluster: true }, volumeClaim: { name: 'workspace', size: '1Gi' } } : {}) } } as KubernetesObject,
    ]);
    const shardAudits = (kcp as Partial<ShardedKcp> | undefined)?.auditLogPaths;
    const remoteAudit = k ? (shardAudits ? shardAudits.join(',') : kcp?.auditLogPath) : env.remote.auditLogPath;
    if (!remoteAudit || !env.internal.auditLogPath) throw new Error('the environment has no audit logs');
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
    const sharded = kcp as Partial<ShardedKcp> | undefined;
    if (sharded?.shards) {
      // Each process of the sharded kcp on its own; cpuBreakdown() sums them as "kcp".
      for (const sh of sharded.shards) if (sh.process.pid) envProcs.push({ name: `kcp:${sh.name}`, sampler: new ProcTreeSampler(sh.process.pid, 1000, 60_000) });
      for (const [name, p] of [['kcp:front-proxy', sharded.frontProxy], ['kcp:cache-server', sharded.cacheServer]] as const) if (p?.pid) envProcs.push({ name, sampler: new ProcTreeSampler(p.pid, 1000, 60_000) });
    } else if (kcp?.process.pid) envProcs.push({ name: 'kcp', sampler: new ProcTreeSampler(kcp.process.pid, 1000, 60_000) });
    return {
      env,
      dir,
      remoteAdmin,
      remoteObserved,
      internalAdmin,
      allowed,
      denied,
      readers: { remote: shardAudits && k ? new AuditReaders('remote', shardAudits) : new AuditReader('remote', remoteAudit), internal: new AuditReader('internal', env.internal.auditLogPath) },
      setupMs: Date.now() - t0,
      envProcs,
      ...(k ? { kcp: k, remoteControllerUser: { from: KCP_CONTROLLER_USERNAME, to: opts.controllerUser } } : {}),
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

export function readAudit(s: Setup): AuditWindow {
  const remote = s.readers.remote.readNew();
  return { remote: s.remoteControllerUser ? asControllerUser(remote, s.remoteControllerUser.to) : remote, internal: s.readers.internal.readNew() };
}

export function startController(opts: BenchOptions, s: Setup, index: number): ControllerProcess {
  let command = opts.controllerCmd;
  if (opts.heapSnapshot) {
    if (!command.includes('{node} ')) throw new Error('--heap-snapshot needs a Node.js controller started as "{node} …" in --controller-cmd');
    mkdirSync(join(s.dir, 'heap'), { recursive: true });
    command = command.replace('{node} ', '{node} --heapsnapshot-signal=SIGUSR2 --diagnostic-dir {dir}/heap ');
  }
  let remoteKubeconfig = s.env.remote.identities.controller.kubeconfigPath;
  if (s.kcp) {
    // The same controller, serving kcp's workspaces instead of one remote cluster.
    if (!/--remote-kubeconfig[ =]\{remoteKubeconfig\}/.test(command)) throw new Error('--kcp needs "--remote-kubeconfig {remoteKubeconfig}" in --controller-cmd (it becomes --kcp-kubeconfig)');
    command = command.replace(/--remote-kubeconfig([ =])\{remoteKubeconfig\}/, '--kcp-kubeconfig$1{remoteKubeconfig}');
    remoteKubeconfig = s.kcp.controllerKubeconfig;
  }
  return new ControllerProcess({
    command,
    readyLog: opts.readyLog,
    index,
    memoryLimitMiB: opts.memoryLimitMiB,
    ...(s.kcp ? { kcp: true } : {}),
    vars: {
      remoteKubeconfig,
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
  /** The requester's client: one, or (kcp) one per workspace. */
  requester: Requester;
  runId: string;
  log: (m: string) => void;
  /** With --heap-snapshot: the controller's live heap once ready, before any request (the floor). */
  floorHeap?: HeapSummary;
}
