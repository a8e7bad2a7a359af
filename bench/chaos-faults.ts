/**
 * The chaos run's faults: when each happens (a schedule from the seed), and
 * injecting them — kill -9 of the leader, of the standby, of both; the remote
 * or the internal apiserver stopped for a while; the controller's connections
 * reset, black-holed, slowed; etcd compacted; the configuration changed and
 * restored; a running request deleted and created again under its name.
 */
import type { InternalRequest } from '../src/api/types.js';
import type { Environment, FaultProxy } from '../src/localenv/index.js';
import type { ResourceClient } from '../src/kube/client.js';
import type { Replica, Takeovers } from './chaos-replicas.js';
import type { ChaosOptions, FaultKind, FaultRecord, RecreatedRequest } from './chaos-types.js';
import type { RequestRecord } from './observer.js';
import { sleep } from './stats.js';
import { createUntilDone, requestBody } from './workload.js';

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

/** etcd's current revision, then a compaction to it: every watch from an older resourceVersion gets 410 Gone. */
async function compactEtcd(etcdUrl: string): Promise<number> {
  const range = (await (await fetch(`${etcdUrl}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: Buffer.from('/').toString('base64') }) })).json()) as { header?: { revision?: string } };
  const revision = Number(range.header?.revision ?? 0);
  const res = await fetch(`${etcdUrl}/v3/kv/compaction`, { method: 'POST', body: JSON.stringify({ revision, physical: true }) });
  if (!res.ok) throw new Error(`etcd compaction: HTTP ${res.status} ${await res.text()}`);
  return revision;
}

/** What the faults act on. */
export interface FaultTargets {
  env: Environment;
  replicas: Replica[];
  takeovers: Takeovers;
  /** The controller's connections to the remote and the internal apiserver go through these. */
  proxies: { remote: FaultProxy; internal: FaultProxy };
  applyConfig: (spec: Record<string, unknown>) => Promise<unknown>;
  /** The configuration's spec as the run set it up. */
  configSpec: Record<string, unknown>;
  requester: ResourceClient<InternalRequest>;
  /** The chaos pass's requests, as they are sent (delete-recreate picks an unfinished one). */
  recs: RequestRecord[];
  /** Keys of the requests the run deleted. */
  deletedByRun: Set<string>;
  recreated: RecreatedRequest[];
}

/** Injects one fault (waiting out its duration, if it has one); returns what was done. */
export async function inject(f: { kind: FaultKind; at: number; ms: number }, t: FaultTargets): Promise<string> {
  const leader = t.replicas.find((r) => r.isLeader);
  const standby = t.replicas.find((r) => r !== leader && r.proc?.running);
  switch (f.kind) {
    case 'kill-leader':
      if (!leader) return 'no leader at that moment: nothing killed';
      t.takeovers.lost(f.kind);
      leader.kill();
      return `killed replica ${leader.index} (leader)`;
    case 'kill-standby':
      if (!standby) return 'no standby at that moment';
      standby.kill();
      return `killed replica ${standby.index} (standby)`;
    case 'kill-both':
      t.takeovers.lost(f.kind);
      t.replicas.forEach((r) => r.kill());
      return 'killed both replicas';
    case 'remote-down':
      await t.env.remote.stopApiserver();
      await sleep(f.ms);
      await t.env.remote.startApiserver();
      return `remote apiserver down ${f.ms} ms`;
    case 'internal-down':
      await t.env.internal.stopApiserver();
      await sleep(f.ms);
      await t.env.internal.startApiserver();
      return `internal apiserver down ${f.ms} ms`;
    case 'reset':
      t.proxies.remote.cut();
      t.proxies.internal.cut();
      return 'every controller connection reset';
    case 'blackhole':
      t.proxies.remote.blackhole(true);
      t.proxies.internal.blackhole(true);
      await sleep(f.ms);
      t.proxies.remote.blackhole(false);
      t.proxies.internal.blackhole(false);
      return `controller connections black-holed ${f.ms} ms`;
    case 'latency':
      t.proxies.remote.latencyMs = t.proxies.internal.latencyMs = 300;
      await sleep(f.ms);
      t.proxies.remote.latencyMs = t.proxies.internal.latencyMs = 0;
      return `300 ms added to every chunk for ${f.ms} ms`;
    case 'compact': {
      // The apiserver's watch cache would serve resumed watches from
      // memory; restarted after the compaction, it starts at etcd's
      // current revision, so a watch resumed from before gets 410 Gone.
      const rev = await compactEtcd(t.env.etcdUrl);
      await t.env.remote.stopApiserver();
      await t.env.remote.startApiserver();
      return `etcd compacted at revision ${rev}, remote apiserver restarted (watches resumed from before get 410 Gone)`;
    }
    case 'config-flip':
      await t.applyConfig({ ...t.configSpec, capacity: { maxRunning: 1 } });
      await sleep(f.ms);
      await t.applyConfig(t.configSpec);
      return `config changed (capacity.maxRunning 1) for ${f.ms} ms, then restored`;
    case 'delete-recreate': {
      const victim = t.recs.find((r) => r.allowed && r.uid && r.terminalAt === undefined && !t.deletedByRun.has(r.key));
      if (!victim) return 'no unfinished request to delete';
      t.deletedByRun.add(victim.key);
      await t.requester.delete(victim.namespace, victim.name, victim.uid);
      const fresh = await createUntilDone(t.requester, requestBody(victim.namespace, victim.name, 99_999), Date.now() + 60_000);
      if (fresh?.metadata.uid) t.recreated.push({ namespace: victim.namespace, name: victim.name, uid: fresh.metadata.uid, oldUid: victim.uid! });
      return `deleted ${victim.key} (uid ${victim.uid}) and created it again`;
    }
  }
}

/**
 * The faults of the plan, one after the other, each at its time but not
 * before `gapSeconds` after the previous one ended; each is recorded in
 * `faults` as it ends (a fault that fails also in `problems`).
 */
export async function runFaults(
  plan: Array<{ kind: FaultKind; at: number; ms: number }>,
  targets: FaultTargets,
  o: { tStart: number; gapSeconds: number; faults: FaultRecord[]; problems: string[]; log: ChaosOptions['log'] },
): Promise<void> {
  const { tStart, gapSeconds, faults, problems, log } = o;
  let lastEnd = -Infinity;
  for (const f of plan) {
    const wait = Math.max(tStart + f.at, lastEnd + gapSeconds * 1000) - performance.now();
    if (wait > 0) await sleep(wait);
    const at = performance.now() - tStart;
    let detail: string;
    try {
      detail = await inject(f, targets);
    } catch (e) {
      detail = `fault failed: ${String(e)}`;
      problems.push(`${f.kind}: ${detail}`);
    }
    lastEnd = performance.now();
    const endedAt = lastEnd - tStart;
    faults.push({ kind: f.kind, at: Math.round(at), endedAt: Math.round(endedAt), detail, recoveryMs: null });
    log(`  ${(at / 1000).toFixed(1)}s ${f.kind}: ${detail}`);
  }
}
