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
 * PipelineRun left of a rejected or deleted request; nothing stuck; with
 * --history, no write to and no PipelineRun for any finished request of the
 * history, which exists before the controllers start (so every restart
 * lists it again).
 *
 * This file is the driver; the parts are chaos-replicas.ts (the two
 * controller processes and their fault proxies), chaos-faults.ts (the
 * schedule and the faults), chaos-checks.ts (what was lost, exactly once,
 * recovery), chaos-history.ts (--history: finished requests every start
 * lists, left alone), chaos-report.ts (the summary) and chaos-types.ts; the
 * soak is soak.ts.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { INTERNAL_REQUEST, type InternalRequest } from '../src/api/types.js';
import { applyObjects, grantRequester, installProject, CONTROLLER_NAMESPACE, startEnvironment, type Environment, SimulatedTektonExecutor, FaultProxy } from '../src/localenv/index.js';
import { fromKubeConfig } from '../src/kube/client.js';
import { AuditReader, type AuditEvent } from './audit.js';
import { checkRequests, measureRecovery, pipelineRunsLeft, waitRecreated } from './chaos-checks.js';
import { checkHistory, createHistory } from './chaos-history.js';
import { runFaults, schedule } from './chaos-faults.js';
import { countLines, hostPort, Replica, startReplicas, Takeovers, waitRecovered } from './chaos-replicas.js';
import type { ChaosOptions, ChaosResult, FaultRecord, HistoryResult, RecreatedRequest } from './chaos-types.js';
import { Observer, createdAt, type RequestRecord } from './observer.js';
import { benchPipeline } from './pipeline.js';
import { distribution, round, sleep, type Distribution } from './stats.js';
import { createUntilDone, requestBody } from './workload.js';

export async function runChaos(opts: ChaosOptions): Promise<ChaosResult> {
  const log = opts.log;
  const t0All = Date.now();
  const real = opts.tekton === 'real';
  const env: Environment = await startEnvironment({ audit: true, log: () => {}, ...(real ? { tekton: { stepMs: opts.stepMs } } : {}) });
  const problems: string[] = [];
  const replicas: Replica[] = [];
  const takeovers = new Takeovers();
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
      applyObjects(internalAdmin, [{ apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name: 'config', namespace: CONTROLLER_NAMESPACE }, spec } as KubernetesObject]);
    await applyObjects(internalAdmin, [benchPipeline()]);
    await applyConfig(configSpec);
    if (!real) executor = new SimulatedTektonExecutor(internalAdmin, (m) => log(`executor: ${m}`)).startAuto({ namespace: CONTROLLER_NAMESPACE, delayMs: opts.stepMs });

    // The history first: the replicas' first lists, and every restart's, hold it.
    const history = opts.history ? await createHistory(remoteAdmin, allowed, opts.history, log) : undefined;
    // From here on the audit logs are read (what came before is the setup and the history).
    const remoteAudit = new AuditReader('remote', env.remote.auditLogPath!);
    const internalAudit = new AuditReader('internal', env.internal.auditLogPath!);
    remoteAudit.passOver();
    internalAudit.passOver();

    const dir = join(env.dir, 'chaos');
    mkdirSync(dir, { recursive: true });
    const remoteProxy = new FaultProxy(hostPort(env.remote.url));
    const internalProxy = new FaultProxy(hostPort(env.internal.url));
    proxies.push(remoteProxy, internalProxy);
    await Promise.all(proxies.map((p) => p.listen()));
    await startReplicas(env, dir, { remote: remoteProxy, internal: internalProxy }, replicas, takeovers);

    observer = new Observer(remoteAdmin, internalAdmin, CONTROLLER_NAMESPACE);
    await observer.start();
    const requester = (await fromKubeConfig('remote', env.remote.identities.requester!.kubeConfig())).resource<InternalRequest>(INTERNAL_REQUEST);

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
    const recreated: RecreatedRequest[] = [];
    const recsChaos: RequestRecord[] = [];

    const faultLoop = runFaults(
      plan,
      { env, replicas, takeovers, proxies: { remote: remoteProxy, internal: internalProxy }, applyConfig, configSpec, requester, recs: recsChaos, deletedByRun, recreated },
      { tStart, gapSeconds: opts.gapSeconds, faults, problems, log },
    );
    const recs = await submit(1, opts.requests, recsChaos);
    await faultLoop;
    log(`all ${recs.length} requests created, ${faults.length} faults done; waiting for the requests to finish`);
    const live = recs.filter((r) => !deletedByRun.has(r.key));
    await waitTerminal(live, opts.settleSeconds * 1000);
    await waitRecreated(requester, recreated, opts.settleSeconds, problems);
    // The replicas back after the last fault (a late kill's restarts measured too).
    const notRecovered = await waitRecovered(replicas, opts.settleSeconds * 1000);
    if (notRecovered) problems.push(`not recovered ${opts.settleSeconds} s after the last fault: ${notRecovered}`);
    const leftPrs = await pipelineRunsLeft(internalAdmin);

    // --- checks ---
    const remoteEvents = remoteAudit.readNew();
    const internalEvents = internalAudit.readNew();
    const controllerUser = env.internal.identities.controller.username;
    const mine = (e: AuditEvent) => e.user?.username === controllerUser || e.user?.username === env.remote.identities.controller.username;
    const notes: string[] = [];
    const internalStopped = faults.some((f) => f.kind === 'internal-down');
    const { succeeded, rejectedSeen } = checkRequests(recs, { internalEvents, mine, deletedByRun, recreated, leftPrs, problems, internalStopped, notes });
    const recoveryByKind = measureRecovery(faults, { remoteEvents, mine, tStart, live });
    const relists410 = replicas.reduce((a, r) => a + countLines(dir, r.index, /"watch expired \(410 Gone\); relisting"/), 0);
    const historyResult: HistoryResult | null = history ? await checkHistory(history, { remoteAdmin, remoteEvents, internalEvents, mine, problems }) : null;
    // Every process started again after it died (generation > 0): how long until it led, and until its caches synced.
    const restarted = replicas.flatMap((r) => r.starts).filter((p) => p.generation > 0);
    const syncedCounts = restarted.map((p) => p.syncedRequests).filter((x): x is number => x !== null);

    const result: ChaosResult = {
      seed: opts.seed,
      tekton: real ? 'real' : 'simulated',
      requests: recs.length,
      faults,
      recoveryByKind,
      failover: { kills: faults.filter((f) => f.kind === 'kill-leader' || f.kind === 'kill-both').length, takeoverMs: distribution(takeovers.all.map((t) => t.ms), 0),
        standbyTakeoverMs: distribution(takeovers.all.filter((t) => t.kind === 'kill-leader').map((t) => t.ms), 0),
        afterKillBothMs: distribution(takeovers.all.filter((t) => t.kind === 'kill-both').map((t) => t.ms), 0),
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
      history: historyResult,
      restartSync: {
        restarts: restarted.length,
        readyMs: distribution(restarted.map((p) => p.readyMs).filter((x): x is number => x !== null), 0),
        notReady: restarted.filter((p) => p.readyMs === null).length,
        leaderMs: distribution(restarted.map((p) => p.leaderMs).filter((x): x is number => x !== null), 0),
        syncedMs: distribution(restarted.map((p) => p.syncedMs).filter((x): x is number => x !== null), 0),
        notSynced: restarted.filter((p) => p.syncedMs === null).length,
        minRequestsAtSync: syncedCounts.length ? Math.min(...syncedCounts) : null,
      },
      processes: replicas.flatMap((r) => r.starts),
      problems,
      notes,
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
