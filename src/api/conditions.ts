/** The Succeeded condition of an InternalRequest, the requester's contract. */
import type { Condition, InternalRequest } from './types.js';

export const SUCCEEDED = 'Succeeded';

export const Reason = {
  /** Not decided yet: the controller waits for something outside the request (its configuration). */
  Pending: 'Pending',
  /** An earlier request with the same idempotency key and spec runs; this one ends as it ends. */
  Following: 'Following',
  /** Allowed and checked; waiting for a free slot on the internal cluster (capacity). */
  Queued: 'Queued',
  /** Allowed, checked, and waiting for an approver's decision (a rule requires approval). */
  AwaitingApproval: 'AwaitingApproval',
  /** The Pipeline and its references are being resolved and checked; nothing runs yet. */
  Resolving: 'Resolving',
  Running: 'Running',
  Succeeded: 'Succeeded',
  Failed: 'Failed',
  Rejected: 'Rejected',
} as const;
export type Reason = (typeof Reason)[keyof typeof Reason];

export function succeededCondition(req: Pick<InternalRequest, 'status'>): Condition | undefined {
  return req.status?.conditions?.find((c) => c.type === SUCCEEDED);
}

/** Marks objects known to be finished requests (the cache's compact records): isFinished need not look at their status. */
export const FINISHED: unique symbol = Symbol('internal-services.finished');

/** True once the request has its final outcome (Succeeded True or False). */
export function isFinished(req: Pick<InternalRequest, 'status'>): boolean {
  if ((req as { [FINISHED]?: true })[FINISHED] === true) return true;
  const c = succeededCondition(req);
  return c !== undefined && c.status !== 'Unknown';
}

/**
 * Returns the conditions with `next` as entry 0 (the Succeeded condition is
 * always first), keeping other condition types as they were. The transition
 * time only moves when the status changes, per API conventions.
 */
export function withSucceeded(existing: Condition[] | undefined, next: Omit<Condition, 'type' | 'lastTransitionTime'>, now: Date): Condition[] {
  const prev = existing?.find((c) => c.type === SUCCEEDED);
  const cond: Condition = {
    type: SUCCEEDED,
    status: next.status,
    reason: next.reason,
    message: next.message,
    lastTransitionTime: prev && prev.status === next.status ? prev.lastTransitionTime : rfc3339(now),
    ...(next.observedGeneration !== undefined ? { observedGeneration: next.observedGeneration } : {}),
  };
  return [cond, ...(existing ?? []).filter((c) => c.type !== SUCCEEDED)];
}

/** RFC 3339 with second precision, as metav1.Time serialises. */
export function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
