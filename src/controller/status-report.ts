/**
 * The request's status, built in one place: every status decide() writes
 * goes through these builders (what a cluster refused of a plan comes back
 * to decide() as an observation: refusals.ts), so conditions[0] — the
 * requester's contract: Unknown/Running until a terminal reason — and the
 * Progressing condition are set the same way everywhere (the role of
 * cert-manager's reporter). Pure: the time is an argument.
 */
import { finished, inProgress, Phase, Reason, rfc3339, type TerminalReason } from '../api/conditions.js';
import { type InternalRequest, type InternalRequestStatus } from '../api/types.js';
import type { ErrorCode } from '../errors.js';
import type { Grant } from '../policy/grant.js';
import { pipelineStatusOf } from '../tekton/pipelinerun.js';
import type { PipelineRun } from '../tekton/tekton-types.js';

import type { Action, EventSpec } from './actions.js';
import type { Observation } from './observation.js';

/** What running() writes besides the run: set when the PipelineRun is created, kept after. */
export interface RunningExtra {
  approval?: InternalRequestStatus['approval'] | undefined;
  /** The rule (or allowList) that granted the run, and its expiry. */
  grant?: Pick<Grant, 'rule' | 'expiry'> | undefined;
}

export function running(req: InternalRequest, o: Observation, ref: string, pr: PipelineRun, extra: RunningExtra = {}): Action {
  const { approval, grant } = extra;
  const pipeline = pipelineStatusOf(pr);
  const { followed: _stale, ...previous } = req.status ?? {}; // it followed a request that then failed: it runs itself now
  const status: InternalRequestStatus = {
    ...previous,
    ...(approval ? { approval } : {}),
    ...(grant ? { grant: { rule: grant.rule, ...(grant.expiry ? { expires: grant.expiry.expires } : {}) } } : {}),
    ...(pipeline ? { pipeline } : {}),
    conditions: inProgress(req.status?.conditions, Phase.Running, { message: runningMessage(ref), ...gen(req) }, o.now),
    startTime: req.status?.startTime ?? rfc3339(o.now),
    pipelineRun: ref,
    ...gen(req),
  };
  const approvedBy = approval?.by ? `, approved by ${JSON.stringify(approval.by)} under rule ${JSON.stringify(approval.rule ?? '')}${approval.message ? `: ${approval.message}` : ''}` : '';
  return { type: 'writeStatus', status, event: { type: 'Normal', reason: Reason.Running, message: `PipelineRun ${ref} created on the internal cluster${approvedBy}`, ...(approvedBy ? {} : { success: true as const }) } };
}

export function runningMessage(ref: string): string {
  return `PipelineRun ${ref} is running`;
}

/**
 * An unfinished request waits in `phase`: Succeeded stays Unknown/Running
 * (the requester's contract), the phase and its message go into Progressing
 * and into both messages.
 */
export function waiting(req: InternalRequest, o: Observation, phase: Phase, message: string, extra: InternalRequestStatus, event?: EventSpec): Action & { type: 'writeStatus' } {
  const status: InternalRequestStatus = { ...req.status, ...extra, conditions: inProgress(req.status?.conditions, phase, { message, ...gen(req) }, o.now), ...gen(req) };
  return { type: 'writeStatus', status, ...(event ? { event } : {}) };
}

export function reject(req: InternalRequest, o: Observation, message: string, code: ErrorCode): Action {
  return endWithoutResults(req, Reason.Rejected, message, o.now, code);
}

/**
 * The request ends unsuccessfully (Rejected, or Failed), with no results.
 */
export function endWithoutResults(req: InternalRequest, reason: typeof Reason.Failed | typeof Reason.Rejected, message: string, now: Date, code: ErrorCode): Action & { type: 'writeStatus' } {
  const status: InternalRequestStatus = {
    ...req.status,
    conditions: finished(req.status?.conditions, reason, { message, ...gen(req) }, now),
    completionTime: rfc3339(now),
    ...gen(req),
  };
  delete status.results;
  return { type: 'writeStatus', status, event: { type: 'Warning', reason, message }, code };
}

/** What a finished request's status carries besides its outcome. */
export interface Outcome {
  /** The results to give back (none: the status has none). */
  results?: Record<string, string> | undefined;
  /** The error code of a failure, in the status and the Event. */
  code?: ErrorCode | undefined;
  /** When the run started and ended (default: as recorded, else now). */
  startTime?: string | undefined;
  completionTime?: string | undefined;
  /** More status fields (which run ran what, which request was followed). */
  extra?: InternalRequestStatus;
}

export function finish(req: InternalRequest, o: Observation, reason: TerminalReason, message: string, outcome: Outcome = {}): Action {
  const { results = {}, code, startTime, completionTime, extra = {} } = outcome;
  const s: InternalRequestStatus = {
    ...req.status,
    ...extra,
    conditions: finished(req.status?.conditions, reason, { message, ...gen(req) }, o.now),
    startTime: req.status?.startTime ?? startTime ?? rfc3339(o.now),
    completionTime: completionTime ?? rfc3339(o.now),
    ...gen(req),
  };
  if (Object.keys(results).length) s.results = results;
  return { type: 'writeStatus', status: s, event: reason === Reason.Succeeded ? { type: 'Normal', reason, message, success: true } : { type: 'Warning', reason, message }, ...(code ? { code } : {}) };
}

export function gen(req: InternalRequest): { observedGeneration?: number } {
  return req.metadata.generation !== undefined ? { observedGeneration: req.metadata.generation } : {};
}

