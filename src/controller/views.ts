/**
 * Read-only views of the controller's caches, for metrics (gauges) and
 * health (/readyz). Functions of what they are given: they change nothing
 * and call no cluster.
 */
import { isFinished, phaseOf } from '../api/conditions.js';
import { CONFIG_NAME, type InternalRequest } from '../api/types.js';
import type { ReadinessCheck } from '../kube/informer.js';
import { pastTimeout, remoteOf } from '../tekton/pipelinerun.js';
import type { PipelineRun } from '../tekton/types.js';

/** What a view needs of a remote. */
export interface RemoteView {
  readonly name: string;
  readonly healthy: boolean;
  /** Every cached request (of every kind) with its key. */
  entries(): Iterable<[string, InternalRequest]>;
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
    const out: Record<string, number> = { none: 0, WaitingForConfig: 0, Resolving: 0, AwaitingApproval: 0, Queued: 0, Following: 0 };
    for (const [, r] of remote.entries()) {
      if (isFinished(r) || r.status?.pipelineRun) continue;
      const phase = phaseOf(r) ?? 'none';
      out[phase] = (out[phase] ?? 0) + 1;
    }
    all[remote.name] = out;
  }
  return all;
}

/** Requests whose PipelineRun is running (for the concurrency gauge). */
export function runningRequests(remotes: Iterable<RemoteView>): number {
  let n = 0;
  for (const remote of remotes) for (const [, r] of remote.entries()) if (!isFinished(r) && r.status?.pipelineRun) n++;
  return n;
}

/**
 * Per remote: our unfinished PipelineRuns running more than `graceMs` past
 * their own `timeouts.pipeline` (Tekton ends a run at its timeout; one that
 * goes on means Tekton is not acting on it), for a gauge and its alert.
 */
export function pipelineRunsPastTimeout(remoteNames: Iterable<string>, pipelineRuns: Iterable<PipelineRun>, now: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of remoteNames) out[name] = 0;
  for (const pr of pipelineRuns) {
    if (!pastTimeout(pr, now)) continue;
    const remote = remoteOf(pr);
    out[remote] = (out[remote] ?? 0) + 1;
  }
  return out;
}

/** Per remote: 1 when its requests are listed and its cluster answers. */
export function remoteHealth(remotes: Iterable<RemoteView>): Array<{ remote: string; up: boolean }> {
  return [...remotes].map((r) => ({ remote: r.name, up: r.healthy }));
}

/** Milliseconds since each cache last heard from its cluster. */
export function lastContact(caches: Iterable<CacheView>, now = Date.now()): Array<{ informer: string; ms: number }> {
  return [...caches].map((i) => ({ informer: i.name, ms: i.health.lastContact ? now - i.health.lastContact : now }));
}

/**
 * /readyz: the caches of the internal cluster (required); each remote's
 * (required when it is the only one: with several, one that cannot be
 * reached does not stop the others being served, and is reported); the
 * configuration (reported: without it requests wait), and the rules of it
 * that cannot be used (reported, never widened).
 */
export function readiness(remotes: readonly RemoteView[], internal: Iterable<CacheView>, config: { namespace: string; present: boolean; problems: readonly string[] }): ReadinessCheck[] {
  const checks = [...remotes.flatMap((r) => r.readiness(remotes.length === 1)), ...[...internal].map((i) => i.readiness(true))];
  checks.push({
    name: 'config',
    ok: config.present,
    required: false,
    ...(config.present ? {} : { detail: `no InternalServicesConfig "${CONFIG_NAME}" in namespace ${config.namespace}; new requests wait (phase WaitingForConfig)` }),
  });
  if (config.problems.length) checks.push({ name: 'config-rules', ok: false, required: false, detail: config.problems.join('; ') });
  return checks;
}
