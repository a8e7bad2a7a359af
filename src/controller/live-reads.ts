/**
 * When an answer of a cache must be confirmed against the cluster before it
 * is acted on: the one place the reconcile asks (controller.ts), a pure
 * function of what decide() returned and what was already read. Each read is
 * made at most once per reconcile, then the key is observed and decided again
 * in the same loop (never by re-entering it).
 *
 * - 'request': the request, read fresh, before a typed kind's spec is acted
 *   on (a watch opened under an older CRD of the kind serves objects pruned
 *   by that schema) or before a status write of a finished request, which
 *   the cache keeps in brief (cached-requests.ts);
 * - 'confirm': a negative answer of the cache (no such request) before it
 *   removes what was made for it (listing.ts, removesForAnother);
 * - 'pipeline': the installed Pipeline before "no Pipeline named …" becomes
 *   a requester-visible Rejected (the Pipelines cache may be behind);
 * - 'pipelineRun': our PipelineRun before "it disappeared" ends a running
 *   request as Failed.
 */
import type { Pipeline, PipelineRun } from '../tekton/tekton-types.js';
import type { Action } from './actions.js';
import type { Observation } from './observation.js';
import { removesForAnother } from './listing.js';
import { FinishedRequest } from '../requests/cached-requests.js';

/** What was read from the cluster in this reconcile (null: read, and not there). */
export interface LiveReads {
  request?: 'read' | undefined;
  pipeline?: Pipeline | null;
  pipelineRun?: PipelineRun | null;
}

/** An observation, with what the reads need of it. */
export interface Seen {
  observation: Observation;
  uid?: string;
  /** The installed Pipeline the request names, if any. */
  pipelineName?: string;
}

export type LiveRead = 'request' | 'confirm' | 'pipeline' | 'pipelineRun';

/** Whether a plan acts on the request's spec: runs it, asks an approver about it, or ends it. */
export function actsOnSpec(actions: readonly Action[]): boolean {
  return actions.some((a) => a.type === 'createPipelineRun' || a.type === 'createApproval' || (a.type === 'writeStatus' && a.status.conditions?.[0]?.status !== 'Unknown'));
}

/** The read to make before acting on `actions`, or undefined: act. */
export function liveReadFor(actions: readonly Action[], seen: Seen, reads: LiveReads, builtIn: boolean): LiveRead | undefined {
  const req = seen.observation.request;
  if (!reads.request) {
    const brief = req instanceof FinishedRequest && actions.some((a) => a.type === 'writeStatus');
    if (req && ((!builtIn && actsOnSpec(actions)) || brief)) return 'request';
    if (removesForAnother(actions, seen.uid)) return 'confirm';
  }
  const status = actions.find((a) => a.type === 'writeStatus');
  if (status?.type !== 'writeStatus') return undefined;
  if (status.code === 'REQUEST_PIPELINE_NOT_FOUND' && req && seen.pipelineName && reads.pipeline === undefined) return 'pipeline';
  if (status.code === 'PIPELINERUN_MISSING' && seen.uid && reads.pipelineRun === undefined) return 'pipelineRun';
  return undefined;
}
