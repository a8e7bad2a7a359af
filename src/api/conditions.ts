/**
 * The conditions of an InternalRequest.
 *
 * The requester's contract (docs/api.md, "The status contract") is entry 0:
 * the `Succeeded` condition. Requesters in the wild read only its reason:
 * empty or `Running` means wait, `Succeeded` means success, anything else
 * means the request ended in failure. So while a request is unfinished that
 * condition is `Unknown`/`Running`, whatever it waits for; finished it is
 * `True`/`Succeeded`, `False`/`Failed` or `False`/`Rejected`, and it never
 * changes again.
 *
 * Where an unfinished request stands (its phase: waiting for the
 * configuration, resolving, awaiting approval, queued, following, running)
 * is the reason of the second condition, `Progressing`, and the message of
 * both. Every write goes through `inProgress` or `finished` below, which put
 * the two in that order and keep any other condition type after them.
 */
import type { Condition, InternalRequest } from './types.js';

export const SUCCEEDED = 'Succeeded';
export const PROGRESSING = 'Progressing';

/** Reasons of the Succeeded condition: the only values conditions[0].reason ever takes. */
export const Reason = {
  /** Unfinished, whatever the phase (status Unknown). */
  Running: 'Running',
  Succeeded: 'Succeeded',
  Failed: 'Failed',
  Rejected: 'Rejected',
} as const;
export type Reason = (typeof Reason)[keyof typeof Reason];

/** Terminal reasons: status True means Succeeded, False one of the others. */
export type TerminalReason = typeof Reason.Succeeded | typeof Reason.Failed | typeof Reason.Rejected;

/**
 * Phases of a request: the reason of its Progressing condition (status True
 * while unfinished; False once finished, with the outcome as its reason).
 */
export const Phase = {
  /** The internal cluster has no InternalServicesConfig yet; nothing is decided until it has. */
  WaitingForConfig: 'WaitingForConfig',
  /** kcp: the workspace's path (which the rules name) cannot be read yet; nothing is decided under another name until it is. */
  WaitingForWorkspace: 'WaitingForWorkspace',
  /** The Pipeline and its references are being resolved and checked; nothing runs yet. */
  Resolving: 'Resolving',
  /** Allowed and checked; a rule requires an approver's decision, made on the internal cluster. */
  AwaitingApproval: 'AwaitingApproval',
  /** Allowed and checked; waiting for a free slot on the internal cluster (capacity), at a position. */
  Queued: 'Queued',
  /** An earlier request with the same idempotency key and spec runs; this one ends as it ends. */
  Following: 'Following',
  /** Its PipelineRun runs. */
  Running: 'Running',
} as const;
export type Phase = (typeof Phase)[keyof typeof Phase];
/** Every in-progress phase, in the order a request may pass them. */
export const PHASES: readonly Phase[] = [Phase.WaitingForWorkspace, Phase.WaitingForConfig, Phase.Following, Phase.Resolving, Phase.AwaitingApproval, Phase.Queued, Phase.Running];

/**
 * In-progress reasons that earlier versions wrote into the Succeeded
 * condition itself, and the phase each means. A request still showing one is
 * rewritten to the current shape on its next reconcile.
 */
export const LEGACY_REASONS: Readonly<Record<string, Phase>> = {
  Pending: Phase.WaitingForConfig,
  Resolving: Phase.Resolving,
  AwaitingApproval: Phase.AwaitingApproval,
  Queued: Phase.Queued,
  Following: Phase.Following,
};

export function succeededCondition(req: Pick<InternalRequest, 'status'>): Condition | undefined {
  return req.status?.conditions?.find((c) => c.type === SUCCEEDED);
}

export function progressingCondition(req: Pick<InternalRequest, 'status'>): Condition | undefined {
  return req.status?.conditions?.find((c) => c.type === PROGRESSING);
}

/** Marks objects known to be finished requests (the cache's compact records): isFinished need not look at their status. */
export const FINISHED: unique symbol = Symbol('internal-services.finished');

/**
 * True once the request has its final outcome: Succeeded True, or False
 * with a reason other than Running. False/Running is in progress: what the
 * incumbent Go controller writes while a run goes (its own HasCompleted
 * reads it so, and a requester reads only the reason: Running = wait).
 */
export function isFinished(req: Pick<InternalRequest, 'status'>): boolean {
  if ((req as { [FINISHED]?: true })[FINISHED] === true) return true;
  const c = succeededCondition(req);
  return c !== undefined && (c.status === 'True' || (c.status === 'False' && c.reason !== Reason.Running));
}

/**
 * Where a request stands: its phase while unfinished (read from Progressing,
 * or from an earlier version's Succeeded reason), its outcome once finished,
 * or undefined when the controller has not written a status yet.
 */
export function phaseOf(req: Pick<InternalRequest, 'status'>): Phase | TerminalReason | undefined {
  const s = succeededCondition(req);
  if (s?.status === 'True') return Reason.Succeeded;
  if (s?.status === 'False' && s.reason !== Reason.Running) return s.reason === Reason.Rejected ? Reason.Rejected : Reason.Failed;
  if (!s) return undefined;
  const p = progressingCondition(req);
  if (p?.status === 'True' && (PHASES as readonly string[]).includes(p.reason)) return p.reason as Phase;
  return LEGACY_REASONS[s.reason] ?? Phase.Running;
}

/** The message that goes with the phase (the Progressing condition's, else the Succeeded one's). */
export function phaseMessageOf(req: Pick<InternalRequest, 'status'>): string {
  const p = progressingCondition(req);
  return (!isFinished(req) && p?.status === 'True' ? p.message : succeededCondition(req)?.message) ?? '';
}

/**
 * True when the request already shows this phase with this message, in the
 * contract's shape: Succeeded Unknown/Running first, Progressing True/phase
 * second. Anything else (an earlier version's reason, another order, another
 * message, another observedGeneration) needs a write.
 */
export function showsPhase(req: Pick<InternalRequest, 'status' | 'metadata'>, phase: Phase, message: string): boolean {
  const [s, p] = req.status?.conditions ?? [];
  const generation = req.metadata.generation;
  return (
    s?.type === SUCCEEDED && s.status === 'Unknown' && s.reason === Reason.Running && s.message === message && s.observedGeneration === generation &&
    p?.type === PROGRESSING && p.status === 'True' && p.reason === phase && p.message === message && p.observedGeneration === generation
  );
}

interface Written {
  message: string;
  observedGeneration?: number | undefined;
}

/** The conditions of an unfinished request in `phase`: Succeeded Unknown/Running and Progressing True/phase, both with the message. */
export function inProgress(existing: Condition[] | undefined, phase: Phase, w: Written, now: Date): Condition[] {
  return ordered(existing, { status: 'Unknown', reason: Reason.Running, ...w }, { status: 'True', reason: phase, ...w }, now);
}

/** The conditions of a finished request: Succeeded with its outcome, and Progressing False with the same reason. */
export function finished(existing: Condition[] | undefined, outcome: TerminalReason, w: Written, now: Date): Condition[] {
  const status = outcome === Reason.Succeeded ? 'True' : 'False';
  return ordered(existing, { status, reason: outcome, ...w }, { status: 'False', reason: outcome, ...w }, now);
}

type Next = Omit<Condition, 'type' | 'lastTransitionTime' | 'observedGeneration'> & { observedGeneration?: number | undefined };

/**
 * Succeeded first, Progressing second, every other type after them in the
 * order it had. Succeeded's transition time moves only when its status does
 * (API conventions; it dates the outcome, which ttlSecondsAfterFinished reads);
 * Progressing's moves with its status or reason, so it dates the phase.
 */
function ordered(existing: Condition[] | undefined, succeeded: Next, progressing: Next, now: Date): Condition[] {
  const prevS = existing?.find((c) => c.type === SUCCEEDED);
  const prevP = existing?.find((c) => c.type === PROGRESSING);
  const at = rfc3339(now);
  return [
    make(SUCCEEDED, succeeded, prevS && prevS.status === succeeded.status ? prevS.lastTransitionTime : at),
    make(PROGRESSING, progressing, prevP && prevP.status === progressing.status && prevP.reason === progressing.reason ? prevP.lastTransitionTime : at),
    ...(existing ?? []).filter((c) => c.type !== SUCCEEDED && c.type !== PROGRESSING),
  ];
}

function make(type: string, n: Next, lastTransitionTime: string): Condition {
  return {
    type,
    status: n.status,
    reason: n.reason,
    message: n.message,
    lastTransitionTime,
    ...(n.observedGeneration !== undefined ? { observedGeneration: n.observedGeneration } : {}),
  };
}

/** RFC 3339 with second precision, as metav1.Time serialises. */
export function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
