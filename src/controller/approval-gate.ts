/**
 * The approval gate (seed 004): make the InternalRequestApproval, wait for a
 * decision until it expires, and accept an approval only if the controller
 * trusts it (the approver may approve under the rule now). Pure: what the
 * controller found out about the approver comes in the Observation.
 */
import { Phase, Reason, showsPhase, rfc3339 } from '../api/conditions.js';
import { type InternalRequest, type InternalRequestApproval, type InternalRequestStatus } from '../api/types.js';
import { approvalFor } from './approval.js';
import type { Grant } from '../policy/grant.js';
import { formatDuration } from '../util/duration.js';
import type { PipelineRun } from '../tekton/tekton-types.js';
import { DEFAULT_REMOTE, requestRef } from '../policy/tenant.js';
import { kindLabel } from '../requests/request-kind.js';

import type { Action } from './actions.js';
import type { Observation } from './observation.js';
import { endWithoutResults, waiting } from './status-report.js';

export function deleteApproval(approval: InternalRequestApproval, why: string): Action {
  return { type: 'deleteApproval', approval, why };
}

export type Gate =
  | { state: 'waiting'; actions: Action[] }
  | { state: 'ended'; actions: Action[] }
  | { state: 'approved'; record: NonNullable<InternalRequestStatus['approval']> };

/**
 * The approval gate: make the approval object, wait for a decision (until it
 * expires), and accept an approval only if the controller trusts it.
 */
export function approvalGate(o: Observation, req: InternalRequest, grant: Grant, pr: PipelineRun, what: { serviceAccount?: string | undefined; params: Record<string, string> }, existing: InternalRequestApproval | undefined): Gate {
  const rule = grant.approval.rule;
  const where = `${grant.rule} of ${o.config.source}`;
  const kind = kindLabel(o.kind);
  const ref = `${requestRef(o.remote ?? DEFAULT_REMOTE, req, o.workspace)}${kind ? ` --kind ${kind}` : ''}`;
  const awaiting = (note: string | undefined, expiresAt: string): Action[] => {
    const message =
      `waiting for approval under ${where}: someone allowed to approve it (verb "approve" on rules.appstudio.redhat.com ${JSON.stringify(rule)} in namespace ${JSON.stringify(o.namespace)} of the internal cluster) ` +
      `runs "kubectl internalrequest approve ${ref}" (or "deny ${ref} --message …") against the internal cluster; without a decision by ${expiresAt} the request is Rejected` +
      (note ? `. ${note}` : '');
    if (showsPhase(req, Phase.AwaitingApproval, message)) return [];
    return [waiting(req, o, Phase.AwaitingApproval, message, {}, { type: 'Normal', reason: Phase.AwaitingApproval, message })];
  };
  const until = (expiresAt: string): Action => ({ type: 'requeueAfter', ms: Math.max(1000, Date.parse(expiresAt) - o.now.getTime() + 500) });
  if (!existing) {
    const approval = approvalFor(req, o.namespace, o.remote ?? DEFAULT_REMOTE, rule, pr, what, new Date(o.now.getTime() + grant.approval.timeoutMs), kind, o.workspace);
    const expiresAt = approval.spec.expiresAt!;
    return { state: 'waiting', actions: [{ type: 'createApproval', approval }, ...awaiting(undefined, expiresAt), until(expiresAt)] };
  }
  const expiresAt = existing.spec.expiresAt ?? rfc3339(o.now);
  const d = existing.status?.decision;
  const end = (result: string, message: string, by?: string, at?: string): Gate => {
    const record = { result, rule, ...(by ? { by } : {}), at: at ?? rfc3339(o.now), ...(d?.message ? { message: d.message } : {}) };
    const w = endWithoutResults(req, Reason.Rejected, message, o.now, 'REQUEST_NOT_APPROVED');
    w.status.approval = record;
    return { state: 'ended', actions: [w] };
  };
  if (!d) {
    if (Date.parse(expiresAt) <= o.now.getTime()) {
      return end('Expired', `not approved within ${formatDuration(grant.approval.timeoutMs)} (by ${expiresAt}), as ${where} requires; create a new request to ask again`);
    }
    return { state: 'waiting', actions: [...awaiting(undefined, expiresAt), until(expiresAt)] };
  }
  if (d.result === 'Denied') {
    return end('Denied', `denied by ${JSON.stringify(d.by)} under ${where}${d.message ? `: ${d.message}` : ''}`, d.by, d.at);
  }
  const trust = o.approvalTrust;
  if (!trust || !trust.trusted) {
    const note = trust ? `An approval by ${JSON.stringify(d.by)} was not accepted: ${trust.why}` : undefined;
    return { state: 'waiting', actions: [...awaiting(note, expiresAt), until(expiresAt)] };
  }
  return { state: 'approved', record: { result: 'Approved', rule, by: d.by, at: d.at ?? rfc3339(o.now), ...(d.message ? { message: d.message } : {}) } };
}

