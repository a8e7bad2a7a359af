/**
 * "Never both, all the time": while the Go controller this one replaces is
 * back on the internal cluster (its Deployment scaled up, its Lease held:
 * src/migrate/incumbent-preflight.ts), this controller acts on no request.
 * The executor carries out every action decide() returns; this is the gate
 * it asks first. Pure.
 *
 * Held: every action that writes (creates, cancels, deletes, status writes,
 * finalizer removals, approvals, resolutions) and every need started for
 * the request (a commit check, a look-up, a log fetch: they bring the key
 * back to a decision that would write). Only a requeue passes. The key is
 * looked at again after HELD_RETRY_MS, and every live request when the
 * hold is lifted.
 */
import type { Action } from './actions.js';

/** How soon a held key is looked at again. */
export const HELD_RETRY_MS = 5_000;

/** Whether the action may be carried out while the controller holds its actions. */
export function passesHold(action: Action): boolean {
  switch (action.type) {
    case 'requeueAfter':
      return true;
    case 'createPipelineRun':
    case 'writeStatus':
    case 'cancelPipelineRun':
    case 'deletePipelineRun':
    case 'relayAttestation':
    case 'startResolution':
    case 'checkCommit':
    case 'lookUpRef':
    case 'checkPath':
    case 'checkServiceAccount':
    case 'createApproval':
    case 'deleteApproval':
    case 'deleteResolution':
    case 'removeFinalizer':
    case 'deleteRequest':
    case 'askArchive':
    case 'fetchLogs':
      return false;
  }
}

/** What the executor does with an action: carry it out, or hold it (and the rest of the plan) while `held` says why. */
export function gate(held: string | undefined, action: Action): 'act' | 'hold' {
  return held === undefined || passesHold(action) ? 'act' : 'hold';
}
