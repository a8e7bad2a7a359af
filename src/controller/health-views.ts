/**
 * Read-only views of the controller's caches, for metrics (gauges) and
 * health (/readyz). Functions of what they are given: they change nothing
 * and call no cluster.
 */
import { isFinished, phaseOf } from '../api/conditions.js';
import { CONFIG_NAME, type InternalRequest } from '../api/types.js';
import type { ReadinessCheck } from '../kube/informer.js';
import { pastTimeout, remoteOf } from '../tekton/pipelinerun.js';
import type { PipelineRun } from '../tekton/tekton-types.js';
import { compareText } from '../util/compare.js';

/** What a view needs of a remote. */
export interface RemoteView {
  readonly name: string;
  /** Its name in metric labels: remotes sharing one are counted together. */
  readonly metricsName?: string;
  readonly healthy: boolean;
  /** Every cached request (of every kind) with its key. */
  entries(): Iterable<[string, InternalRequest]>;
  /** Every cached request (of every kind), without keys (gauges: a scrape reads every request of a long history). */
  cachedRequests(): Iterable<InternalRequest>;
  /** One check per kind's cache. */
  readiness(required: boolean): ReadinessCheck[];
}

/** What a view needs of a cache. */
export interface CacheView {
  readonly name: string;
  readonly health: { lastContact?: number | undefined };
  readiness(required: boolean): ReadinessCheck;
}

/** Unfinished requests without a PipelineRun, per remote, by phase ("none": not looked at yet), for a gauge. */
export function waitingByPhase(remotes: Iterable<RemoteView>): Record<string, Record<string, number>> {
  const all: Record<string, Record<string, number>> = {};
  for (const remote of remotes) {
    const out: Record<string, number> = { none: 0, WaitingForConfig: 0, WaitingForWorkspace: 0, Resolving: 0, AwaitingApproval: 0, Queued: 0, Following: 0 };
    for (const r of remote.cachedRequests()) {
      if (isFinished(r) || r.status?.pipelineRun) continue;
      const phase = phaseOf(r) ?? 'none';
      out[phase] = (out[phase] ?? 0) + 1;
    }
    const label = remote.metricsName ?? remote.name;
    const sum = all[label];
    if (sum) for (const [k, v] of Object.entries(out)) sum[k] = (sum[k] ?? 0) + v;
    else all[label] = out;
  }
  return all;
}

/** Requests whose PipelineRun is running (for the concurrency gauge). */
export function runningRequests(remotes: Iterable<RemoteView>): number {
  let n = 0;
  for (const remote of remotes) for (const r of remote.cachedRequests()) if (!isFinished(r) && r.status?.pipelineRun) n++;
  return n;
}

/**
 * Per remote: our unfinished PipelineRuns running more than `graceMs` past
 * their own `timeouts.pipeline` (Tekton ends a run at its timeout; one that
 * goes on means Tekton is not acting on it), for a gauge and its alert.
 */
export function pipelineRunsPastTimeout(remoteNames: Iterable<string>, pipelineRuns: Iterable<PipelineRun>, now: number, labelOf: (remote: string) => string = (r) => r): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of remoteNames) out[labelOf(name)] = 0;
  for (const pr of pipelineRuns) {
    if (!pastTimeout(pr, now)) continue;
    const remote = labelOf(remoteOf(pr));
    out[remote] = (out[remote] ?? 0) + 1;
  }
  return out;
}

/** Per remote (per metricsName: up when every remote of it is): 1 when its requests are listed and its cluster answers. */
export function remoteHealth(remotes: Iterable<RemoteView>): Array<{ remote: string; up: boolean }> {
  const up = new Map<string, boolean>();
  for (const r of remotes) {
    const label = r.metricsName ?? r.name;
    up.set(label, (up.get(label) ?? true) && r.healthy);
  }
  return [...up].map(([remote, ok]) => ({ remote, up: ok }));
}

/** Milliseconds since each cache last heard from its cluster. */
export function lastContact(caches: Iterable<CacheView>, now = Date.now()): Array<{ informer: string; ms: number }> {
  // Caches of one name (a provider's shares of one watch) are one line.
  const byName = new Map<string, number>();
  for (const i of caches) if (!byName.has(i.name)) byName.set(i.name, i.health.lastContact ? now - i.health.lastContact : now);
  return [...byName].map(([informer, ms]) => ({ informer, ms }));
}

/**
 * /readyz: the caches of the internal cluster (required); each remote's
 * (required when it is the only one: with several, one that cannot be
 * reached does not stop the others being served, and is reported); the
 * configuration (reported: without it requests wait), and the rules of it
 * that cannot be used (reported, never widened).
 */
export function readiness(remotes: readonly RemoteView[], internal: Iterable<CacheView>, config: { namespace: string; present: boolean; problems: readonly string[] }): ReadinessCheck[] {
  // A provider's shares of one cache have its name: one line for all of them.
  const seen = new Set<string>();
  const checks = [...remotes.flatMap((r) => r.readiness(remotes.length === 1)), ...[...internal].map((i) => i.readiness(true))].filter((c) => !seen.has(c.name) && !!seen.add(c.name));
  checks.push({
    name: 'config',
    ok: config.present,
    required: false,
    ...(config.present ? {} : { detail: `no InternalServicesConfig "${CONFIG_NAME}" in namespace ${config.namespace}; new requests wait (phase WaitingForConfig)` }),
  });
  if (config.problems.length) checks.push({ name: 'config-rules', ok: false, required: false, detail: config.problems.join('; ') });
  return checks;
}

/** The remotes whose cache of a kind cannot list it now, and why (for a RequestDefinition's status). */
export function failingKind(remotes: Iterable<{ name: string; kinds: ReadonlyMap<string, { requests: { readiness(required: boolean): ReadinessCheck; health: { failures: number } } }> }>, kind: string): Array<{ remote: string; why: string }> {
  const out: Array<{ remote: string; why: string }> = [];
  for (const r of remotes) {
    const c = r.kinds.get(kind);
    if (!c || c.requests.health.failures === 0) continue;
    const check = c.requests.readiness(false);
    out.push({ remote: r.name, why: check.detail ?? 'its list fails' });
  }
  return out.sort((a, b) => compareText(a.remote, b.remote));
}

/** Where the views read from: the manager's caches, live. */
export interface ViewSources {
  namespace: string;
  remotes(): Iterable<RemoteView & { kinds: ReadonlyMap<string, { requests: { readiness(required: boolean): ReadinessCheck; health: { failures: number } } }> }>;
  /** The remotes' names and their metric label. */
  remoteNames(): Iterable<string>;
  metricsNameOf(remote: string): string;
  /** The caches of the internal cluster. */
  internal(): CacheView[];
  /** Every cache, the remotes' included. */
  caches(): Iterable<CacheView>;
  pipelineRuns(): Iterable<PipelineRun>;
  config(): { present: boolean; problems: readonly string[] };
  /** Finished PipelineRuns kept until Tekton Results stores them. */
  awaitingResults(): number;
  /** More readiness lines (the RequestDefinitions'). */
  extraReadiness(): ReadinessCheck[];
  /** The remotes that refused a delete of a finished request lately (refusals.ts). */
  deletesDenied(now: number): Iterable<string>;
}

/**
 * The views above over the manager's live caches: what /readyz and the
 * gauges read (src/cli/controller-command.ts binds them to src/metrics.ts).
 */
export class HealthViews {
  constructor(private readonly s: ViewSources) {}

  /** /readyz: see readiness(). */
  readiness(): ReadinessCheck[] {
    const c = this.s.config();
    return [...readiness([...this.s.remotes()], this.s.internal(), { namespace: this.s.namespace, present: c.present, problems: c.problems }), ...this.s.extraReadiness()];
  }

  /** Every required check of readiness() passes. */
  get ready(): boolean {
    return this.readiness().every((c) => c.ok || !c.required);
  }

  get configPresent(): boolean {
    return this.s.config().present;
  }

  /** How many rules of the configuration cannot be used as written (for a gauge; /readyz names them). */
  configProblems(): number {
    return this.s.config().problems.length;
  }

  waitingByPhase(): Record<string, Record<string, number>> {
    return waitingByPhase(this.s.remotes());
  }

  runningRequests(): number {
    return runningRequests(this.s.remotes());
  }

  pipelineRunsPastTimeout(now = Date.now()): Record<string, number> {
    return pipelineRunsPastTimeout(this.s.remoteNames(), this.s.pipelineRuns(), now, (r) => this.s.metricsNameOf(r));
  }

  remoteHealth(): Array<{ remote: string; up: boolean }> {
    return remoteHealth(this.s.remotes());
  }

  lastContact(): Array<{ informer: string; ms: number }> {
    return lastContact(this.s.caches());
  }

  awaitingResults(): number {
    return this.s.awaitingResults();
  }

  /**
   * Per remote (by its metric label): 1 while it refuses the deletes that
   * ttlSecondsAfterFinished asks for (config/rbac/remote-ttl not applied
   * there), else 0.
   */
  deletesDenied(now = Date.now()): Record<string, number> {
    const out: Record<string, number> = {};
    for (const r of this.s.remoteNames()) out[this.s.metricsNameOf(r)] ??= 0;
    for (const r of this.s.deletesDenied(now)) out[this.s.metricsNameOf(r)] = 1;
    return out;
  }

  /** The remotes whose cache of a kind cannot list it now (a RequestDefinition's status). */
  failingKind(kind: string): Array<{ remote: string; why: string }> {
    return failingKind(this.s.remotes(), kind);
  }
}
