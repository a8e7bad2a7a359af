/**
 * Deciding while a remote's requests are still being listed.
 *
 * With a long history (100,000 finished requests) the first full list takes
 * seconds. The controller does not wait for it to serve what needs no
 * history: exactly-once rests on the PipelineRun's name on the internal side
 * (ir-<request uid>, whose cache is complete before any decision), not on
 * having seen every request. So, before a kind's cache has its full list, a
 * request it has shown (by the list so far, or by the early lane of
 * unfinished requests) is decided when its decision depends on nothing but
 * itself and the internal side:
 * - it is not finished and not being deleted;
 * - it carries no idempotency key (which earlier requests share the key is
 *   only known from the full list);
 * - no capacity is set (the fair order of the waiting requests is only known
 *   from the full list).
 * Everything else — those requests, removing what belongs to a request the
 * cache does not show, TTL, the orphan sweep — waits for the full list, whose
 * arrival brings every key back (onResync).
 *
 * After the full list, the cache can still be behind the cluster for a moment
 * (a request that the early lane showed and the list's watch has not shown
 * yet). Nothing is removed for a request the cache does not show (or shows
 * with another uid) before the cluster confirms it: `removesForAnother`
 * tells the controller when to read the request first.
 */
import type { Logger } from 'pino';
import { isFinished } from '../api/conditions.js';
import { describeError, statusCode, type ResourceClient } from '../kube/client.js';
import type { InternalRequest } from '../api/types.js';
import { requestUidOf } from '../tekton/pipelinerun.js';
import type { EffectiveConfig } from './config.js';
import type { Action } from './actions.js';
import { idempotencyKeyOf } from '../requests/idempotency.js';
import { ANNOTATION_LOGS } from '../requests/archive-names.js';
import { holdsIncumbentFinalizer } from '../requests/incumbent.js';

/** Whether a request may be decided before its kind's cache has the full list (see above). */
export function decidableWhileListing(req: InternalRequest | undefined, config: Pick<EffectiveConfig, 'capacity'>): boolean {
  if (!req || req.metadata.deletionTimestamp || isFinished(req)) return false;
  if (idempotencyKeyOf(req)) return false;
  return config.capacity.maxRunning === undefined && config.capacity.maxRunningPerNamespace === undefined;
}

/** Whether a plan removes (cancels, deletes) a PipelineRun, resolution or approval made for another request than `uid` (none: the cache shows no request). */
export function removesForAnother(actions: readonly Action[], uid: string | undefined): boolean {
  return actions.some((a) => {
    switch (a.type) {
      case 'cancelPipelineRun':
      case 'deletePipelineRun': {
        // A run the controller did not make (no request uid on it: the Go
        // controller's) is confirmed before it is touched, whichever request
        // it is taken for: the cache that says its request is gone may be behind.
        const owner = requestUidOf(a.pipelineRun);
        return owner === undefined || owner !== uid;
      }
      case 'deleteResolution':
        return requestUidOf(a.resolution) !== uid;
      case 'deleteApproval':
        return requestUidOf(a.approval) !== uid;
      default:
        return false;
    }
  });
}

/**
 * The request as the cluster has it, read when `removesForAnother`: what the
 * cache does not show is confirmed before anything is removed. A cluster that
 * refuses to show it (403: on kcp, its workspace no longer binds the export,
 * and kcp deletes its requests) can neither confirm nor deny, now or later:
 * the cache's answer stands (undefined), or the run of a request nobody can
 * see any more would be kept for ever.
 */
export async function confirmingRead(client: Pick<ResourceClient<InternalRequest>, 'tryGet'>, log: Logger, key: string, namespace: string, name: string, forbidden?: () => void): Promise<InternalRequest | undefined> {
  try {
    return await client.tryGet(namespace, name);
  } catch (e) {
    if (statusCode(e) !== 403) throw e;
    forbidden?.();
    log.info({ request: key, err: describeError(e) }, 'the request cannot be read to confirm that it is gone (forbidden); acting on the cache, which does not show it');
    return undefined;
  }
}

/**
 * The plan to carry out when the request could not be read to confirm
 * what the cache says (403): what the controller made for it goes as the
 * cache says, but a run it did not make (the Go controller's, which
 * carries no request uid) is never cancelled or deleted on the word of a
 * cache alone. Pure.
 */
export function withoutUnconfirmedRemovals(actions: readonly Action[]): Action[] {
  return actions.filter((a) => !((a.type === 'cancelPipelineRun' || a.type === 'deletePipelineRun') && requestUidOf(a.pipelineRun) === undefined));
}

/**
 * Whether a request newly shown by a cache needs a look at all. A finished
 * one needs one only for a pending logs ask, a TTL or the incumbent's
 * finalizer to release (and for a PipelineRun
 * of it still there, which the internal cache's sweep brings): with a long
 * history, its list does not queue 100,000 keys that would each be decided
 * to do nothing.
 */
/** A requester's ask for the logs (the internal-services.dev/logs annotation) not answered yet. */
export function logsAsked(req: InternalRequest): boolean {
  const asked = req.metadata.annotations?.[ANNOTATION_LOGS];
  return asked !== undefined && asked !== '' && req.status?.logs?.request !== asked;
}

export function worthALook(req: InternalRequest, config: Pick<EffectiveConfig, 'ttlSecondsAfterFinished'>, asked: (req: InternalRequest) => boolean = logsAsked): boolean {
  return !isFinished(req) || req.metadata.deletionTimestamp !== undefined || config.ttlSecondsAfterFinished !== undefined || asked(req) || holdsIncumbentFinalizer(req);
}
