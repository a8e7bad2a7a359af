/**
 * A grant over time, for decide(): whether the rule that granted a running
 * request still does (onRevoke: cancel), and the look at a request its
 * temporary grant (rules[].expires) asks for at the instant it ends. Pure.
 */
import type { InternalRequest } from '../api/types.js';
import { grantFor, type Grant } from '../policy/grant.js';
import { ANNOTATION_ON_REVOKE } from '../tekton/pipelinerun.js';
import type { PipelineRun } from '../tekton/tekton-types.js';
import type { Action } from './actions.js';
import { policyTenant, type Observation } from './observation.js';
import { requestedOf } from './requested-run.js';

/**
 * Why a running request is no longer allowed, when the rule that granted it
 * said onRevoke: cancel (recorded on its PipelineRun); undefined otherwise.
 * Only who may run what is looked at again (namespace and Pipeline), not the
 * limits the request was checked with; a missing configuration revokes nothing.
 */
export function revocationOf(o: Observation, req: InternalRequest, pr: PipelineRun): { revoked?: string; grant?: Grant } {
  if (pr.metadata.annotations?.[ANNOTATION_ON_REVOKE] !== 'cancel' || !o.config.present || o.held) return {};
  const what = requestedOf(req.spec);
  if (what.kind === 'invalid') return {};
  const v = grantFor(o.config, policyTenant(o, req.metadata.namespace ?? ''), what.kind === 'installed' ? { kind: 'installed', pipeline: what.pipeline } : { kind: 'resolver', resolver: what.resolver }, { listServed: o.workspace !== undefined, now: o.now.getTime() });
  return v.ok ? { grant: v.grant } : { revoked: v.message };
}

/** The longest wait asked for at once (a timer further out would overflow; a look every 6 h is free). */
const MAX_EXPIRY_WAIT_MS = 6 * 3600_000;

/**
 * A look at the request when its grant expires, for a request that waits
 * (for an approval, for a slot) or runs with onRevoke: cancel: it is then
 * Rejected, or its run cancelled, on time rather than at the next event.
 */
export function atExpiry(o: Observation, grant: Grant): Action[] {
  if (!grant.expiry) return [];
  const left = grant.expiry.atMs - o.now.getTime();
  return [{ type: 'requeueAfter', ms: Math.min(Math.max(left, 0) + 500, MAX_EXPIRY_WAIT_MS) }];
}

