/**
 * The chaos run: requests flow while faults are injected at random times
 * (from a printed seed, so a run can be replayed), then what was lost is
 * counted. The controller runs as its real process, two replicas with leader
 * election, restarted by the tool when they die (as a Deployment would);
 * each replica reaches both API servers through the tool's TCP proxies, so
 * its connections can be reset, black-holed or slowed.
 *
 * Faults: kill -9 of the leader, of the standby, of both; the remote or the
 * internal apiserver stopped for a while; the controller's connections reset,
 * black-holed, slowed; etcd compacted; the configuration changed and
 * restored; a running request deleted and created again under its name.
 *
 * Checks at the end (audit logs and the clusters, not the controller's word):
 * every request terminal with the expected outcome (or deleted by the run);
 * exactly one successful PipelineRun create per allowed request; no
 * PipelineRun left of a rejected or deleted request; nothing stuck.
 */
import { isFinished } from '../src/api/conditions.js';
import { parseHeapSpaces } from './heapstat.js';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { join } from 'node:path';
import { CustomObjectsApi, type KubernetesObject } from '@kubernetes/client-node';
import { startEnvironment, type Environment, type ControlPlane } from '../src/envtest/environment.js';
import { applyObjects, grantRequester, installProject } from '../src/envtest/apply.js';
import { FaultProxy, kubeconfigVia } from '../src/envtest/fault-proxy.js';
import { SimulatedTektonExecutor } from '../src/envtest/executor.js';
import { fromKubeConfig, statusCode, type ResourceClient } from '../src/kube/client.js';
import { INTERNAL_REQUEST, type InternalRequest } from '../src/api/types.js';
import { repoRoot } from '../src/util/repo.js';
import { ControllerProcess } from './controller-process.js';
import { AuditReader, type AuditEvent } from './audit.js';
import { Observer, createdAt, type RequestRecord } from './observer.js';
import { benchPipeline, expectedResults } from './pipeline.js';
import { requestBody } from './workload.js';
import { distribution, round, sleep, type Distribution } from './stats.js';

const NS = 'internal-services';

export const FAULT_KINDS = [
  'kill-leader',
  'kill-standby',
  'kill-both',
  'remote-down',
  'internal-down',
  'reset',
  'blackhole',
  'latency',
  'compact',
  'config-flip',
  'delete-recreate',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface ChaosOptions {
  requests: number;
  /** Requests per second. */
  rate: number;
  seed: number;
  /** Faults in all, spread over the run (kinds taken in turn from `kinds`, times at random). */
  faults: number;
  kinds: readonly FaultKind[];
  /** How long a fault with a duration lasts: from..to seconds. */
  faultSeconds: [number, number];
  /** Quiet time after each fault before the next may start (so that each recovery is measured on its own). */
  gapSeconds: number;
  /** Requests of a fault-free pass first, for the latency the faults add (0: none). */
  baseline: number;
  /** How long a simulated run (or, with real Tekton, a simulated step) takes. */
  stepMs: number;
  /** Who runs the PipelineRuns: the simulated executor (default), or real Tekton with simulated pods. */
  tekton?: 'simulated' | 'real';
  /** Give up waiting for the requests to finish after this long past the last fault. */
  settleSeconds: number;
  log: (m: string) => void;
}

export interface FaultRecord {
  kind: FaultKind;
  /** ms since the run's start. */
  at: number;
  endedAt: number;
  detail: string;
  /** ms from the fault's end to the controller's first successful status write after it (null: none seen). */
  recoveryMs: number | null;
  /** Requests waiting when the fault ended (created, not final), and the longest any of them took to progress after it (a new status seen). */
  waiting?: { count: number; maxProgressMs: number | null; notProgressed: number };
}

export interface ChaosResult {
  seed: number;
  tekton: 'simulated' | 'real';
  requests: number;
  faults: FaultRecord[];
  recoveryByKind: Record<string, Distribution>;
  /** Kill → a replica logs "became leader": by the standby after kill-leader (the lease-duration + 2 s target), and after kill-both (a process must start first). */
  failover: { kills: number; takeoverMs: Distribution; standbyTakeoverMs: Distribution; afterKillBothMs: Distribution };
  latencyMs: { baseline: Distribution | null; chaos: Distribution };
  counts: { allowed: number; rejected: number; deletedByRun: number; succeeded: number; rejectedSeen: number; restarts: number; relists410: number };
  problems: string[];
  ok: boolean;
  seconds: number;
}

/** A small seeded PRNG (mulberry32): the same seed, the same faults. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** When each fault starts (ms from the run's start) and how long it lasts: sorted, not overlapping. */
export function schedule(opts: Pick<ChaosOptions, 'faults' | 'kinds' | 'faultSeconds' | 'seed'>, runMs: number): Array<{ kind: FaultKind; at: number; ms: number }> {
  const rnd = prng(opts.seed);
  const [lo, hi] = opts.faultSeconds;
  const out = Array.from({ length: opts.faults }, (_, i) => ({ kind: opts.kinds[i % opts.kinds.length]!, at: Math.floor(rnd() * runMs), ms: Math.round((lo + rnd() * (hi - lo)) * 1000) }));
  return out.sort((a, b) => a.at - b.at);
}

class Replica {
  proc: ControllerProcess | undefined;
  generation = 0;
  restarts = 0;
  leaderAt: number | undefined;
  private stopping = false;

  constructor(
    readonly index: number,
    private readonly start: (index: number) => ControllerProcess,
    private readonly onLeader: (r: Replica) => void,
  ) {}

  launch(): void {
    const p = this.start(this.index * 1000 + this.generation++);
    this.proc = p;
    this.leaderAt = undefined;
    p.onLineSeen((line) => {
      if (line.includes('"became leader"')) {
        this.leaderAt = performance.now();
        this.onLeader(this);
      }
    });
    void p.exited.then(() => {
      if (this.stopping) return;
      this.leaderAt = undefined;
      // As a Deployment would: a new pod a moment later.
      setTimeout(() => {
        if (this.stopping) return;
        this.restarts++;
        this.launch();
      }, 1000);
    });
  }

  get isLeader(): boolean {
    return this.proc?.running === true && this.leaderAt !== undefined;
  }

  kill(): void {
    if (this.proc?.running) process.kill(-this.proc.pid, 'SIGKILL');
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.proc?.stop(3000);
  }
}

function viaProxy(plane: ControlPlane, proxy: FaultProxy, out: string): string {
  return kubeconfigVia(plane.identities.controller.kubeconfigPath, proxy.url, out);
}

/** etcd's current revision, then a compaction to it: every watch from an older resourceVersion gets 410 Gone. */
async function compactEtcd(etcdUrl: string): Promise<number> {
  const range = (await (await fetch(`${etcdUrl}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: Buffer.from('/').toString('base64') }) })).json()) as { header?: { revision?: string } };
  const revision = Number(range.header?.revision ?? 0);
  const res = await fetch(`${etcdUrl}/v3/kv/compaction`, { method: 'POST', body: JSON.stringify({ revision, physical: true }) });
  if (!res.ok) throw new Error(`etcd compaction: HTTP ${res.status} ${await res.text()}`);
  return revision;
}

async function createUntilDone(client: ResourceClient<InternalRequest>, body: InternalRequest, deadline: number): Promise<InternalRequest | undefined> {
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    try {
      return await client.create(body.metadata.namespace ?? '', body);
    } catch (e) {
      const code = statusCode(e);
      if (code === 409) return client.tryGet(body.metadata.namespace ?? '', body.metadata.name ?? '').catch(() => undefined);
      if (code !== undefined && code < 500 && code !== 429 && code !== 403) throw e;
      await sleep(Math.min(2000, 200 * (attempt + 1)));
    }
  }
  return undefined;
}

export async function runChaos(opts: ChaosOptions): Promise<ChaosResult> {
  const log = opts.log;
  const t0All = Date.now();
  const real = opts.tekton === 'real';
  const env: Environment = await startEnvironment({ audit: true, log: () => {}, ...(real ? { tekton: { stepMs: opts.stepMs } } : {}) });
  const problems: string[] = [];
  const replicas: Replica[] = [];
  let observer: Observer | undefined;
  let executor: { stop(): Promise<void> } | undefined;
  const proxies: FaultProxy[] = [];
  try {
    await installProject(env);
    const allowed = ['chaos-a', 'chaos-b'];
    const denied = ['chaos-x'];
    for (const ns of [...allowed, ...denied]) await grantRequester(env, ns);
    const internalAdmin = env.internal.identities.admin.kubeConfig();
    const remoteAdmin = env.remote.identities.admin.kubeConfig();
    const configSpec = { allowList: allowed };
    const applyConfig = (spec: Record<string, unknown>) =>
      applyObjects(internalAdmin, [{ apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name: 'config', namespace: NS }, spec } as KubernetesObject]);
    await applyObjects(internalAdmin, [benchPipeline()]);
    await applyConfig(configSpec);
    if (!real) executor = new SimulatedTektonExecutor(internalAdmin, (m) => log(`executor: ${m}`)).startAuto({ namespace: NS, delayMs: opts.stepMs });

    const dir = join(env.dir, 'chaos');
    mkdirSync(dir, { recursive: true });
    const remoteProxy = new FaultProxy(hostPort(env.remote.url));
    const internalProxy = new FaultProxy(hostPort(env.internal.url));
    proxies.push(remoteProxy, internalProxy);
    await Promise.all(proxies.map((p) => p.listen()));
    const vars = {
      remoteKubeconfig: viaProxy(env.remote, remoteProxy, join(dir, 'remote.kubeconfig')),
      internalKubeconfig: viaProxy(env.internal, internalProxy, join(dir, 'internal.kubeconfig')),
      namespace: NS,
      node: process.execPath,
      repo: repoRoot(),
      dir,
    };
    const command =
      'exec env MALLOC_ARENA_MAX=2 {node} --max-semi-space-size=4 {repo}/dist/bundle/internal-services.mjs controller --remote-kubeconfig {remoteKubeconfig} --kubeconfig {internalKubeconfig} --namespace {namespace} ' +
      '--metrics-bind-address 0 --health-probe-bind-address 0 --leader-elect --lease-duration 4s --renew-deadline 3s --retry-period 1s --resync-period 30s';
    const takeovers: Array<{ ms: number; kind: FaultKind }> = [];
    let lastLeaderLoss: { at: number; kind: FaultKind } | undefined;
    const onLeader = () => {
      if (lastLeaderLoss !== undefined) takeovers.push({ ms: performance.now() - lastLeaderLoss.at, kind: lastLeaderLoss.kind });
      lastLeaderLoss = undefined;
    };
    // Ready: caches filled, waiting for (or holding) the lease; one of them leads.
    for (let i = 0; i < 2; i++) replicas.push(new Replica(i, (index) => new ControllerProcess({ command, vars, readyLog: 'waiting to become leader', index }), onLeader));
    replicas.forEach((r) => r.launch());
    await replicas[0]!.proc!.waitReady(60_000);
    await replicas[1]!.proc!.waitReady(60_000);
    const leaderDeadline = Date.now() + 30_000;
    while (!replicas.some((r) => r.isLeader)) {
      if (Date.now() > leaderDeadline) throw new Error('no replica became leader within 30 s');
      await sleep(100);
    }

    observer = new Observer(remoteAdmin, internalAdmin, NS);
    await observer.start();
    const requester = (await fromKubeConfig('remote', env.remote.identities.requester!.kubeConfig())).resource<InternalRequest>(INTERNAL_REQUEST);
    const remoteAudit = new AuditReader('remote', env.remote.auditLogPath!);
    const internalAudit = new AuditReader('internal', env.internal.auditLogPath!);
    remoteAudit.readNew();
    internalAudit.readNew();

    // A pass without faults first: what latency is on this machine today.
    // Records are added to `recs` as they are sent (faults look at them meanwhile).
    const submit = async (pass: number, n: number, recs: RequestRecord[] = []): Promise<RequestRecord[]> => {
      const start = performance.now();
      const inflight = new Set<Promise<void>>();
      for (let i = 0; i < n; i++) {
        const wait = start + (i * 1000) / opts.rate - performance.now();
        if (wait > 0) await sleep(wait);
        const rejected = i % 10 === 9;
        const namespace = rejected ? denied[0]! : allowed[i % allowed.length]!;
        const name = `p${pass}-${String(i).padStart(5, '0')}`;
        const rec: RequestRecord = { key: `${namespace}/${name}`, namespace, name, pass, allowed: !rejected, prUids: new Set(), prNames: new Set() };
        recs.push(rec);
        observer!.track(rec);
        rec.sentAt = performance.now();
        const p = createUntilDone(requester, requestBody(namespace, name, i), Date.now() + 120_000)
          .then((created) => {
            rec.ackAt = performance.now();
            if (created?.metadata.uid) observer!.setUid(rec, created.metadata.uid);
            else rec.createError = 'not created within 120 s';
          })
          .catch((e: unknown) => {
            rec.createError = String(e);
          })
          .finally(() => inflight.delete(p));
        inflight.add(p);
      }
      await Promise.all(inflight);
      return recs;
    };
    const waitTerminal = async (recs: RequestRecord[], ms: number) => {
      const deadline = performance.now() + ms;
      while (performance.now() < deadline && recs.some((r) => r.terminalAt === undefined && !r.createError)) await observer!.changed(1000);
    };
    const latency = (recs: RequestRecord[]) => distribution(recs.filter((r) => r.terminalAt !== undefined).map((r) => r.terminalAt! - (createdAt(r) ?? r.terminalAt!)), 0);

    let baseline: Distribution | null = null;
    if (opts.baseline > 0) {
      const recs = await submit(0, opts.baseline);
      await waitTerminal(recs, 120_000);
      baseline = latency(recs);
      log(`baseline: ${opts.baseline} requests without faults, latency p50 ${baseline.p50} ms, p99 ${baseline.p99} ms`);
    }

    // The chaos pass.
    const runMs = (opts.requests / opts.rate) * 1000;
    const plan = schedule(opts, runMs);
    log(`seed ${opts.seed}: ${plan.length} faults over ${Math.round(runMs / 1000)} s: ${plan.map((f) => `${f.kind}@${(f.at / 1000).toFixed(1)}s`).join(', ')}`);
    const tStart = performance.now();
    const faults: FaultRecord[] = [];
    const deletedByRun = new Set<string>();
    const recreated: Array<{ namespace: string; name: string; uid: string; oldUid: string }> = [];
    const recsChaos: RequestRecord[] = [];

    const inject = async (f: { kind: FaultKind; at: number; ms: number }): Promise<string> => {
      const leader = replicas.find((r) => r.isLeader);
      const standby = replicas.find((r) => r !== leader && r.proc?.running);
      switch (f.kind) {
        case 'kill-leader':
          if (!leader) return 'no leader at that moment: nothing killed';
          lastLeaderLoss = { at: performance.now(), kind: f.kind };
          leader.kill();
          return `killed replica ${leader.index} (leader)`;
        case 'kill-standby':
          if (!standby) return 'no standby at that moment';
          standby.kill();
          return `killed replica ${standby.index} (standby)`;
        case 'kill-both':
          lastLeaderLoss = { at: performance.now(), kind: f.kind };
          replicas.forEach((r) => r.kill());
          return 'killed both replicas';
        case 'remote-down':
          await env.remote.stopApiserver();
          await sleep(f.ms);
          await env.remote.startApiserver();
          return `remote apiserver down ${f.ms} ms`;
        case 'internal-down':
          await env.internal.stopApiserver();
          await sleep(f.ms);
          await env.internal.startApiserver();
          return `internal apiserver down ${f.ms} ms`;
        case 'reset':
          remoteProxy.cut();
          internalProxy.cut();
          return 'every controller connection reset';
        case 'blackhole':
          remoteProxy.blackhole(true);
          internalProxy.blackhole(true);
          await sleep(f.ms);
          remoteProxy.blackhole(false);
          internalProxy.blackhole(false);
          return `controller connections black-holed ${f.ms} ms`;
        case 'latency':
          remoteProxy.latencyMs = internalProxy.latencyMs = 300;
          await sleep(f.ms);
          remoteProxy.latencyMs = internalProxy.latencyMs = 0;
          return `300 ms added to every chunk for ${f.ms} ms`;
        case 'compact': {
          // The apiserver's watch cache would serve resumed watches from
          // memory; restarted after the compaction, it starts at etcd's
          // current revision, so a watch resumed from before gets 410 Gone.
          const rev = await compactEtcd(env.etcdUrl);
          await env.remote.stopApiserver();
          await env.remote.startApiserver();
          return `etcd compacted at revision ${rev}, remote apiserver restarted (watches resumed from before get 410 Gone)`;
        }
        case 'config-flip':
          await applyConfig({ ...configSpec, capacity: { maxRunning: 1 } });
          await sleep(f.ms);
          await applyConfig(configSpec);
          return `config changed (capacity.maxRunning 1) for ${f.ms} ms, then restored`;
        case 'delete-recreate': {
          const victim = recsChaos.find((r) => r.allowed && r.uid && r.terminalAt === undefined && !deletedByRun.has(r.key));
          if (!victim) return 'no unfinished request to delete';
          deletedByRun.add(victim.key);
          await requester.delete(victim.namespace, victim.name, victim.uid);
          const fresh = await createUntilDone(requester, requestBody(victim.namespace, victim.name, 99_999), Date.now() + 60_000);
          if (fresh?.metadata.uid) recreated.push({ namespace: victim.namespace, name: victim.name, uid: fresh.metadata.uid, oldUid: victim.uid! });
          return `deleted ${victim.key} (uid ${victim.uid}) and created it again`;
        }
      }
    };

    const faultLoop = (async () => {
      let lastEnd = -Infinity;
      for (const f of plan) {
        const wait = Math.max(tStart + f.at, lastEnd + opts.gapSeconds * 1000) - performance.now();
        if (wait > 0) await sleep(wait);
        const at = performance.now() - tStart;
        let detail: string;
        try {
          detail = await inject(f);
        } catch (e) {
          detail = `fault failed: ${String(e)}`;
          problems.push(`${f.kind}: ${detail}`);
        }
        lastEnd = performance.now();
        const endedAt = lastEnd - tStart;
        faults.push({ kind: f.kind, at: Math.round(at), endedAt: Math.round(endedAt), detail, recoveryMs: null });
        log(`  ${(at / 1000).toFixed(1)}s ${f.kind}: ${detail}`);
      }
    })();
    const recs = await submit(1, opts.requests, recsChaos);
    await faultLoop;
    log(`all ${recs.length} requests created, ${faults.length} faults done; waiting for the requests to finish`);
    const live = recs.filter((r) => !deletedByRun.has(r.key));
    await waitTerminal(live, opts.settleSeconds * 1000);
    // The recreated ones: polled.
    const deadline = Date.now() + opts.settleSeconds * 1000;
    for (const r of recreated) {
      for (;;) {
        const got = await requester.tryGet(r.namespace, r.name).catch(() => undefined);
        const c = got?.status?.conditions?.find((x) => x.type === 'Succeeded');
        if (got?.metadata.uid === r.uid && c && c.status !== 'Unknown') {
          if (c.reason !== 'Succeeded') problems.push(`recreated ${r.namespace}/${r.name}: ${c.reason}: ${c.message}`);
          break;
        }
        if (Date.now() > deadline) {
          problems.push(`recreated ${r.namespace}/${r.name} not finished`);
          break;
        }
        await sleep(500);
      }
    }
    // PipelineRuns are deleted after the outcome is written: give them a moment.
    const prDeadline = Date.now() + 30_000;
    const prApi = internalAdmin.makeApiClient(CustomObjectsApi);
    let leftPrs: Array<{ metadata?: { name?: string; labels?: Record<string, string> } }> = [];
    for (;;) {
      const l = (await prApi.listNamespacedCustomObject({ group: 'tekton.dev', version: 'v1', namespace: NS, plural: 'pipelineruns' })) as { items: typeof leftPrs };
      leftPrs = l.items;
      if (leftPrs.length === 0 || Date.now() > prDeadline) break;
      await sleep(1000);
    }

    // --- checks ---
    const remoteEvents = remoteAudit.readNew();
    const internalEvents = internalAudit.readNew();
    const controllerUser = env.internal.identities.controller.username;
    const mine = (e: AuditEvent) => e.user?.username === controllerUser || e.user?.username === env.remote.identities.controller.username;
    const creates = new Map<string, number>();
    for (const e of internalEvents) {
      if (!mine(e) || e.verb !== 'create' || e.objectRef?.resource !== 'pipelineruns' || e.responseStatus?.code !== 201) continue;
      const n = e.objectRef?.name ?? '';
      creates.set(n, (creates.get(n) ?? 0) + 1);
    }
    let succeeded = 0;
    let rejectedSeen = 0;
    for (const r of recs) {
      if (deletedByRun.has(r.key)) continue;
      if (r.createError) {
        problems.push(`${r.key}: not created (${r.createError})`);
        continue;
      }
      if (r.terminalAt === undefined) {
        problems.push(`${r.key}: stuck (no final status)`);
        continue;
      }
      const n = creates.get(`ir-${r.uid}`) ?? 0;
      if (r.allowed) {
        if (r.terminalReason !== 'Succeeded') problems.push(`${r.key}: ${r.terminalReason}: ${r.terminalMessage}`);
        else succeeded++;
        const want = expectedResults(r.params ?? {});
        if (r.terminalReason === 'Succeeded' && JSON.stringify(r.results ?? {}) !== JSON.stringify(want)) problems.push(`${r.key}: results ${JSON.stringify(r.results)} instead of ${JSON.stringify(want)}`);
        if (n !== 1) problems.push(`${r.key}: ${n} successful PipelineRun creates`);
      } else {
        if (r.terminalReason !== 'Rejected') problems.push(`${r.key}: ${r.terminalReason} instead of Rejected`);
        else rejectedSeen++;
        if (n !== 0) problems.push(`${r.key}: ${n} PipelineRuns created for a rejected request`);
      }
    }
    for (const r of recreated) {
      if ((creates.get(`ir-${r.uid}`) ?? 0) !== 1) problems.push(`recreated ${r.namespace}/${r.name}: ${creates.get(`ir-${r.uid}`) ?? 0} PipelineRun creates`);
    }
    if (leftPrs.length) problems.push(`${leftPrs.length} PipelineRuns left behind: ${leftPrs.slice(0, 5).map((p) => p.metadata?.name).join(', ')}`);

    // Recovery: the first successful status write after each fault's end.
    const writes = remoteEvents
      .filter((e) => mine(e) && e.objectRef?.resource === 'internalrequests' && e.objectRef?.subresource === 'status' && (e.verb === 'update' || e.verb === 'patch') && e.responseStatus?.code === 200)
      .map((e) => Date.parse(e.stageTimestamp ?? ''))
      .filter(Number.isFinite)
      .sort((a, b) => a - b);
    const wallAtStart = Date.now() - (performance.now() - tStart);
    for (const f of faults) {
      const end = wallAtStart + f.endedAt;
      const next = writes.find((w) => w >= end);
      f.recoveryMs = next === undefined ? null : Math.max(0, next - end);
    }
    // Every request waiting when a fault ended: how long until it progressed
    // (its next status, as the observer saw it).
    for (const f of faults) {
      const end = tStart + f.endedAt;
      const waiting = live.filter((r) => {
        const c = createdAt(r);
        return c !== undefined && c < end && (r.terminalAt === undefined || r.terminalAt > end);
      });
      const progress = waiting.map((r) => [r.runningAt, r.terminalAt].filter((t): t is number => t !== undefined && t >= end).sort((a, b) => a - b)[0]).map((t) => (t === undefined ? undefined : t - end));
      const done = progress.filter((x): x is number => x !== undefined);
      f.waiting = { count: waiting.length, maxProgressMs: done.length ? Math.round(Math.max(...done)) : null, notProgressed: progress.length - done.length };
    }
    const recoveryByKind: Record<string, Distribution> = {};
    for (const k of new Set(faults.map((f) => f.kind))) recoveryByKind[k] = distribution(faults.filter((f) => f.kind === k && f.recoveryMs !== null).map((f) => f.recoveryMs!), 0);
    const relists410 = replicas.reduce((a, r) => a + countLines(dir, r.index, /"watch expired \(410 Gone\); relisting"/), 0);

    const result: ChaosResult = {
      seed: opts.seed,
      tekton: real ? 'real' : 'simulated',
      requests: recs.length,
      faults,
      recoveryByKind,
      failover: { kills: faults.filter((f) => f.kind === 'kill-leader' || f.kind === 'kill-both').length, takeoverMs: distribution(takeovers.map((t) => t.ms), 0),
        standbyTakeoverMs: distribution(takeovers.filter((t) => t.kind === 'kill-leader').map((t) => t.ms), 0),
        afterKillBothMs: distribution(takeovers.filter((t) => t.kind === 'kill-both').map((t) => t.ms), 0),
      },
      latencyMs: { baseline, chaos: latency(live) },
      counts: {
        allowed: recs.filter((r) => r.allowed).length,
        rejected: recs.filter((r) => !r.allowed).length,
        deletedByRun: deletedByRun.size,
        succeeded,
        rejectedSeen,
        restarts: replicas.reduce((a, r) => a + r.restarts, 0),
        relists410,
      },
      problems,
      ok: problems.length === 0,
      seconds: round((Date.now() - t0All) / 1000, 0),
    };
    return result;
  } finally {
    await Promise.all(replicas.map((r) => r.stop()));
    await observer?.stop();
    await executor?.stop();
    await Promise.all(proxies.map((p) => p.close()));
    await env.stop();
  }
}

function hostPort(url: string): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
}

function countLines(dir: string, replica: number, re: RegExp): number {
  let n = 0;
  for (let g = 0; g < 1000; g++) {
    let text: string;
    try {
      text = readFileSync(join(dir, `controller-${replica * 1000 + g}.log`), 'utf8');
    } catch {
      break;
    }
    for (const line of text.split('\n')) if (re.test(line)) n++;
  }
  return n;
}

export function formatChaos(r: ChaosResult): string {
  const lines: string[] = [];
  const d = (x: Distribution | null) => (x && x.count ? `p50 ${x.p50} ms, p99 ${x.p99} ms, max ${x.max} ms (n=${x.count})` : 'n/a');
  lines.push(`chaos run, seed ${r.seed}: ${r.requests} requests, ${r.faults.length} faults, ${r.seconds} s (controller: 2 replicas, real processes; ${r.tekton === 'real' ? 'real Tekton v1.6, pods simulated' : 'PipelineRuns: simulated executor, a stand-in for Tekton'})`);
  lines.push(`  outcome: ${r.ok ? 'OK' : 'PROBLEMS'}: ${r.counts.succeeded}/${r.counts.allowed - r.counts.deletedByRun} allowed Succeeded with their results, ${r.counts.rejectedSeen}/${r.counts.rejected} rejected Rejected, ${r.counts.deletedByRun} deleted and re-created by the run; controller restarts ${r.counts.restarts}`);
  lines.push(`  exactly once (audit log): ${r.problems.filter((p) => /PipelineRun creates/.test(p)).length === 0 ? 'one successful PipelineRun create per allowed request, none for rejected ones' : 'VIOLATED'}`);
  lines.push(`  latency create→final: baseline ${d(r.latencyMs.baseline)}; under faults ${d(r.latencyMs.chaos)}`);
  lines.push(`  leader takeover after a kill: ${d(r.failover.takeoverMs)}; by the standby after kill-leader: ${d(r.failover.standbyTakeoverMs)}; after kill-both (restart first): ${d(r.failover.afterKillBothMs)}`);
  lines.push(`  watch relists after 410 Gone (controller logs): ${r.counts.relists410}`);
  lines.push('  recovery (fault end → first successful status write), by kind:');
  for (const [k, v] of Object.entries(r.recoveryByKind)) {
    const w = r.faults.filter((f) => f.kind === k && f.waiting && f.waiting.count > 0);
    const worst = w.reduce((a, f) => Math.max(a, f.waiting!.maxProgressMs ?? 0), 0);
    lines.push(`    ${k.padEnd(16)} ${d(v)}${w.length ? `; requests waiting at the fault's end: ${w.reduce((a, f) => a + f.waiting!.count, 0)}, the slowest progressed ${worst} ms after it` : ''}`);
  }
  if (r.problems.length) {
    lines.push(`  problems (${r.problems.length}):`);
    for (const p of r.problems.slice(0, 40)) lines.push(`    - ${p}`);
  }
  return lines.join('\n');
}

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
      command: 'exec env MALLOC_ARENA_MAX=2 {node} --max-semi-space-size=4 {repo}/dist/bundle/internal-services.mjs controller --remote-kubeconfig {remoteKubeconfig} --kubeconfig {internalKubeconfig} --namespace {namespace} --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 0',
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
