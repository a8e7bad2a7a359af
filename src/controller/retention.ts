/**
 * What happens to a finished request's PipelineRun and what it owes the
 * requester afterwards: Tekton Chains' attestation relayed (and the run kept
 * until signed), Tekton Results' archive (the run kept until stored), the
 * logs a requester asked for. Pure: what Chains, Results and the logs say
 * comes in the Observation.
 */
import { rfc3339 } from '../api/conditions.js';
import { type InternalRequest } from '../api/types.js';
import { formatDuration } from '../util/duration.js';
import { ANNOTATION_LOGS, ANNOTATION_RESULTS_LOG, ANNOTATION_RESULTS_RECORD, ANNOTATION_RESULTS_STORED } from '../requests/archive-names.js';
import type { PipelineRun } from '../tekton/tekton-types.js';
import { chainsStep, type UnsignedReason } from './attestation.js';

import type { Action } from './actions.js';
import type { Observation } from './observation.js';
import { pipelineRunName } from '../tekton/pipelinerun.js';

/**
 * Tekton Chains' part for a finished request's done run (see attestation.ts):
 * adds the relay or the wait to `actions`; says whether the run must stay
 * ('hold'), may go unsigned (why), or may go (undefined).
 */
export function relayChains(o: Observation, req: InternalRequest, pr: PipelineRun, actions: Action[]): 'hold' | { reason: UnsignedReason; why: string } | undefined {
  const step = chainsStep(o.config, req, pr, o.now);
  if (!step) return undefined;
  if (step.relay) actions.push({ type: 'relayAttestation', attestation: step.relay.attestation, event: step.relay.event });
  if (step.requeueMs !== undefined) actions.push({ type: 'requeueAfter', ms: step.requeueMs });
  if (!step.removable) return 'hold';
  return step.unsigned;
}

/** Tekton Results marks a run it has seen with these, and (with its logs API off) `stored: "true"` once it holds it. */
const RESULTS_SEEN = [ANNOTATION_RESULTS_RECORD, 'results.tekton.dev/result'];

/** The Results record (and log record) a run carries, when Results follows it. */
export function archiveOf(pr: PipelineRun): { record: string; log?: string } | undefined {
  const a = pr.metadata.annotations ?? {};
  const record = a[ANNOTATION_RESULTS_RECORD];
  if (!record) return undefined;
  const log = a[ANNOTATION_RESULTS_LOG];
  return { record, ...(log ? { log } : {}) };
}

/**
 * The answer to a requester's ask for the logs (a new value of the
 * internal-services.dev/logs annotation): status.logs, once fetched; until
 * then the need to fetch them, and a look again shortly.
 */
export function logsAnswer(o: Observation, req: InternalRequest): Action[] | undefined {
  const asked = req.metadata.annotations?.[ANNOTATION_LOGS];
  if (!asked || req.status?.logs?.request === asked) return undefined;
  const got = o.logs;
  if (got === undefined) {
    const pipelineRun = req.status?.pipelineRun ?? `${o.namespace}/${pipelineRunName(req.metadata.uid ?? '')}`;
    const archivedLog = req.status?.archive?.log;
    return [{ type: 'fetchLogs', asked, pipelineRun, ...(archivedLog ? { archivedLog } : {}) }, { type: 'requeueAfter', ms: 500 }];
  }
  if (got === 'fetching') return [{ type: 'requeueAfter', ms: 500 }];
  return [{ type: 'writeStatus', status: { ...req.status, logs: { request: asked, source: got.source, at: rfc3339(o.now), truncated: got.truncated, text: got.text } } }];
}

/**
 * Deletes a finished PipelineRun, unless Tekton Results follows it and has
 * not stored it yet: then it waits (bounded by resultsStoreTimeout from the
 * run's completion; after that it is deleted anyway, and the log and the
 * metric internal_services_pipelineruns_pruned_unarchived_total say so).
 * Results follows a run when the controller was given its API (o.archive:
 * asked there; a run not known to be stored is a need, askArchive) or the
 * watcher annotated the run.
 */
export function removeDone(o: Observation, pr: PipelineRun, why: string): Action[] {
  const a = pr.metadata.annotations ?? {};
  const following = o.archive !== undefined || RESULTS_SEEN.some((k) => k in a);
  if (!following || a[ANNOTATION_RESULTS_STORED] === 'true') return [{ type: 'deletePipelineRun', pipelineRun: pr, why }];
  const verdict = o.archive?.get(pr.metadata.uid ?? '');
  if (verdict?.stored) return [{ type: 'deletePipelineRun', pipelineRun: pr, why: `${why}; Tekton Results holds it as ${verdict.record}` }];
  const done = Date.parse(pr.status?.completionTime ?? '') || o.now.getTime();
  const left = done + o.config.resultsStoreTimeoutMs - o.now.getTime();
  if (left > 0) {
    const ask: Action[] = o.archive ? [{ type: 'askArchive', pipelineRun: pr }] : [];
    return [...ask, { type: 'requeueAfter', ms: Math.min(left, o.archive ? 1500 : 30_000) + 100 }];
  }
  const reason = verdict ? `: ${verdict.why}` : '';
  return [{ type: 'deletePipelineRun', pipelineRun: pr, unarchived: true, why: `${why}; Tekton Results had not stored it within ${formatDuration(o.config.resultsStoreTimeoutMs)}${reason}` }];
}
