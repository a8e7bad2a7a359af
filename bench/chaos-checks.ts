/**
 * The chaos run's checks, from the audit logs and the clusters (not the
 * controller's word): every request final with the expected outcome (or
 * deleted by the run), exactly one successful PipelineRun create per allowed
 * request, none for a rejected one, no PipelineRun left behind; and how long
 * the controller took to recover after each fault.
 */
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { InternalRequest } from '../src/api/types.js';
import { CONTROLLER_NAMESPACE } from '../src/localenv/index.js';
import type { ResourceClient } from '../src/kube/client.js';
import type { AuditEvent } from './audit.js';
import type { FaultRecord, RecreatedRequest } from './chaos-types.js';
import { createdAt, type RequestRecord } from './observer.js';
import { expectedResults } from './pipeline.js';
import { distribution, sleep, type Distribution } from './stats.js';

export type LeftPipelineRun = { metadata?: { name?: string; labels?: Record<string, string> } };

/** The requests the run re-created, polled until final (at most `settleSeconds`): each must have Succeeded. */
export async function waitRecreated(requester: ResourceClient<InternalRequest>, recreated: RecreatedRequest[], settleSeconds: number, problems: string[]): Promise<void> {
  const deadline = Date.now() + settleSeconds * 1000;
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
}

/** The PipelineRuns in the controller's namespace, once there are none or after 30 s (they are deleted after the outcome is written). */
export async function pipelineRunsLeft(internalAdmin: KubeConfig): Promise<LeftPipelineRun[]> {
  const prDeadline = Date.now() + 30_000;
  const prApi = internalAdmin.makeApiClient(CustomObjectsApi);
  let leftPrs: LeftPipelineRun[] = [];
  for (;;) {
    const l = (await prApi.listNamespacedCustomObject({ group: 'tekton.dev', version: 'v1', namespace: CONTROLLER_NAMESPACE, plural: 'pipelineruns' })) as { items: typeof leftPrs };
    leftPrs = l.items;
    if (leftPrs.length === 0 || Date.now() > prDeadline) break;
    await sleep(1000);
  }
  return leftPrs;
}

/**
 * Exactly once, nothing lost: each request the run did not delete is final
 * with its expected outcome (Succeeded with the expected results, or
 * Rejected), with one successful PipelineRun create by the controller if
 * allowed and none if not (the internal audit log); each re-created request
 * with one; no PipelineRun left. What fails goes to `problems`.
 */
export function checkRequests(
  recs: RequestRecord[],
  o: {
    internalEvents: AuditEvent[];
    mine: (e: AuditEvent) => boolean;
    deletedByRun: Set<string>;
    recreated: RecreatedRequest[];
    leftPrs: LeftPipelineRun[];
    problems: string[];
    /** The run stopped the internal apiserver (internal-down): a create in flight then can be stored without its answer in the log. */
    internalStopped?: boolean;
    /** What is not a problem but is said: a run whose create's answer the log lacks, seen once by the observer. */
    notes?: string[];
  },
): { succeeded: number; rejectedSeen: number } {
  const { internalEvents, mine, deletedByRun, recreated, leftPrs, problems } = o;
  const creates = new Map<string, number>();
  /** Creates answered 409 (the object was there already): evidence of a create whose own answer the log lacks. */
  const conflicts = new Map<string, number>();
  /** PipelineRuns someone other than the controller created. */
  const foreign = new Set<string>();
  for (const e of internalEvents) {
    if (e.verb !== 'create' || e.objectRef?.resource !== 'pipelineruns') continue;
    const n = e.objectRef?.name ?? '';
    if (!mine(e)) {
      if (e.responseStatus?.code === 201) foreign.add(n);
      continue;
    }
    if (e.responseStatus?.code === 201) creates.set(n, (creates.get(n) ?? 0) + 1);
    else if (e.responseStatus?.code === 409) conflicts.set(n, (conflicts.get(n) ?? 0) + 1);
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
      const c = conflicts.get(`ir-${r.uid}`) ?? 0;
      if (n === 0 && o.internalStopped && r.prUids.size === 1 && !foreign.has(`ir-${r.uid}`)) {
        // The internal apiserver was stopped during the run: a create in
        // flight then is stored but its answer never logged, and a retry
        // finds it (409) or the informer does (no retry at all). The
        // observer saw exactly one PipelineRun for the request (its name is
        // the request's uid, so a second one would have had to replace it):
        // one run, said, not a problem (unless someone else created it).
        o.notes?.push(`${r.key}: its PipelineRun was seen once, its create's answer is not in the audit log (the internal apiserver stopped mid-request${c ? `; ${c} retry(ies) answered 409 AlreadyExists` : ''})`);
      } else if (n !== 1) {
        // With none logged as answered but a retry answered 409, and no
        // stop of the apiserver to explain it, or not exactly one
        // PipelineRun seen: a problem to look at.
        problems.push(`${r.key}: ${n} successful PipelineRun creates${n === 0 && c ? ` (${c} create(s) answered 409 AlreadyExists: the run was there, made by a create the audit log holds no answer for)` : ''}${n === 0 ? `; PipelineRuns seen: ${r.prUids.size}` : ''}`);
      }
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
  return { succeeded, rejectedSeen };
}

/**
 * Sets each fault's recoveryMs (its end → the controller's first successful
 * status write after it, from the remote audit log) and waiting (the
 * requests waiting at its end, and how long until they progressed); returns
 * the recovery times by fault kind.
 */
export function measureRecovery(faults: FaultRecord[], o: { remoteEvents: AuditEvent[]; mine: (e: AuditEvent) => boolean; tStart: number; live: RequestRecord[] }): Record<string, Distribution> {
  const { remoteEvents, mine, tStart, live } = o;
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
  return recoveryByKind;
}
