/**
 * The life of a request, as one pure function: given what the two clusters
 * show, what to do next. No I/O, no clock (the time is an input), so every rule
 * is covered by a table of cases in test/unit/decide.test.ts. The numbered
 * steps follow the request flow of the design (seed 000/001).
 *
 * The workflow stays in one file, read in order; its parts live beside it,
 * as cert-manager splits its state machine: the vocabulary (observation.ts),
 * every status it writes (status-report.ts), the ResolutionRequests and
 * commit checks (resolutions.ts), the approval gate (approval-gate.ts), and
 * what a finished request's run still owes (retention.ts: Chains, Results,
 * logs). Every rule it applies is a pure function of src/policy or src/tekton.
 */
import { isFinished, Phase, phaseOf, Reason, showsPhase, succeededCondition } from '../api/conditions.js';
import { type InternalRequest, type InternalRequestStatus } from '../api/types.js';
import { ANNOTATION_ON_REVOKE, ANNOTATION_REVOKED, ANNOTATION_WORKSPACE, buildPipelineRun, runOutcomeOf, pipelineRunName, pipelineStatusOf, requestUidOf } from '../tekton/pipelinerun.js';
import { checkGraph, followReference } from '../tekton/graph.js';
import type { Provenance } from '../tekton/graph-model.js';
import { closedWorldViolations, describeViolations } from '../tekton/closed-world.js';
import { STEPACTION_COPY_PREFIX } from '../tekton/stepaction-copy.js';
import { checkParams } from '../tekton/params.js';
import type { Pipeline, PipelineRun } from '../tekton/tekton-types.js';
import { checkParamConstraints, grantFor, isServed, notServedMessage } from '../policy/grant.js';
import { atExpiry, revocationOf } from './grant-over-time.js';
import { DEFAULT_REMOTE, tenantOf } from '../policy/tenant.js';
import { admit } from '../policy/capacity.js';
import { followOf, idempotencyKeyOf } from '../requests/idempotency.js';
import { hasSources } from '../policy/source.js';
import { checkParamSizes, effectiveTimeouts } from '../policy/limits.js';
import { describeRequested, requestedOf } from './requested-run.js';
import { INTERNAL_REQUEST_KIND, kindLabel, type RequestKind } from '../requests/request-kind.js';
import { requestKey } from '../api/request-key.js';

export { checkShape } from '../requests/request-shape.js';
export type { Action, EventSpec } from './actions.js';
export type { Observation } from './observation.js';
import type { Action } from './actions.js';
import { policyTenant, type Observation } from './observation.js';
import { finish, reject, running, runningMessage, waiting } from './status-report.js';
import { graphContext, Resolutions } from './resolutions.js';
import { holdsIncumbentFinalizer, INCUMBENT_FINALIZER, incumbentRequestOf, incumbentRunOf, mayHaveIncumbentRun } from '../requests/incumbent.js';
import { approvalGate, deleteApproval } from './approval-gate.js';
import { archiveOf, logsAnswer, relayChains, removeDone } from './retention.js';

export function decide(o: Observation): Action[] {
  const actions: Action[] = [];
  const req = o.request && !o.request.metadata.deletionTimestamp ? o.request : undefined;
  const uid = req?.metadata.uid;
  const gone = `its ${kindOf(o).kind} was deleted`;

  // The incumbent Go controller's run of this request (requests/incumbent.ts)
  // is followed to its end as if it were ours: no second run is made.
  const incumbentRuns = (o.incumbentRuns ?? []).filter((pr) => incumbentRequestOf(pr));
  const incumbent = req ? incumbentRunOf(req, incumbentRuns) : {};

  // PipelineRuns whose request is gone (deleted, or re-created under the same
  // name with a new uid; the incumbent's runs of an earlier request of the
  // name): stop them, and once Tekton reports them stopped (cancellation
  // runs finally tasks and ends the pods), remove them unless debugging.
  // Tekton's update of the run brings the key back here.
  for (const pr of [...o.pipelineRuns, ...incumbentRuns]) {
    if (uid && requestUidOf(pr) === uid) continue;
    if (pr === incumbent.run || incumbent.ambiguous?.includes(pr)) continue;
    const out = runOutcomeOf(pr);
    if (!out.done) {
      if (!out.cancelled) actions.push({ type: 'cancelPipelineRun', pipelineRun: pr, why: gone });
      continue;
    }
    if (!o.config.debug) actions.push(...removeDone(o, pr, gone));
  }
  for (const rr of o.resolutions ?? []) {
    if (!uid || requestUidOf(rr) !== uid) actions.push({ type: 'deleteResolution', resolution: rr, why: gone });
  }
  for (const a of o.approvals ?? []) {
    if (!uid || requestUidOf(a) !== uid) actions.push(deleteApproval(a, gone));
  }
  // The incumbent Go controller's finalizer holds a deleted request until its
  // run is stopped (requests/incumbent.ts): released once every run of the
  // request is done or asked to stop, as the incumbent itself does.
  const dying = o.request?.metadata.deletionTimestamp ? o.request : undefined;
  if (dying && !actions.some((a) => a.type === 'cancelPipelineRun')) actions.push(...releaseIncumbent(o, dying, 'the request is being deleted and nothing of it runs any more'));
  if (!req || !uid) return actions;

  const ours = o.pipelineRuns.find((pr) => requestUidOf(pr) === uid && pr.metadata.name === pipelineRunName(uid)) ?? incumbent.run;
  const generation = req.metadata.generation;

  // 1. A finished request is left alone; only our own leftover PipelineRun is
  //    cleaned up (e.g. after a restart between the status write and the delete).
  if (isFinished(req)) {
    actions.push(...releaseIncumbent(o, req, 'the request is finished'));
    const answer = logsAnswer(o, req);
    if (answer) return [...actions, ...answer];
    // With Tekton Chains, what it signed is relayed first; the run stays until then.
    const chains = ours && runOutcomeOf(ours).done ? relayChains(o, req, ours, actions) : undefined;
    if (ours && runOutcomeOf(ours).done && !o.config.debug && chains !== 'hold') {
      // The request names its Results record before the run goes (one more
      // status write, only when Results follows the run and the record was
      // not known when the outcome was written).
      const rec = archiveOf(ours);
      if (rec && (req.status?.archive?.record !== rec.record || req.status?.archive?.log !== rec.log)) {
        return [...actions, { type: 'writeStatus', status: { ...req.status, archive: rec } }];
      }
      const del = removeDone(o, ours, chains ? `the request is finished; ${chains.why}` : 'the request is finished');
      actions.push(...del.map((d): Action => (chains && d.type === 'deletePipelineRun' ? { ...d, unsigned: chains.reason } : d)));
    }
    actions.push(...new Resolutions(o, uid).cleanup(), ...(o.approvals ?? []).map((a) => deleteApproval(a, 'the request is finished')));
    // Finished requests go after ttlSecondsAfterFinished, when set (in debug
    // mode not while the PipelineRun kept for it exists; otherwise a leftover
    // PipelineRun is removed as an orphan afterwards).
    const ttl = o.config.ttlSecondsAfterFinished;
    const finishedAt = Date.parse(succeededCondition(req)?.lastTransitionTime ?? '');
    // A remote that refused such a delete lately is not asked again yet (its administrators grant it: config/rbac/remote-ttl).
    if (ttl !== undefined && Number.isFinite(finishedAt) && !(ours && o.config.debug) && !o.deletesDenied) {
      const left = finishedAt + ttl * 1000 - o.now.getTime();
      actions.push(left <= 0 ? { type: 'deleteRequest', request: req, why: `finished more than ttlSecondsAfterFinished (${ttl} s) ago` } : { type: 'requeueAfter', ms: left + 100 });
    }
    return actions;
  }

  if (!ours) {
    // The incumbent's runs cannot all be looked at (its namespace cannot be listed) and it
    // may have made one for this request: nothing is declared missing or made until they can.
    if (o.incumbentUnreadable && mayHaveIncumbentRun(req)) {
      if (showsPhase(req, Phase.Following, o.incumbentUnreadable)) return actions;
      return [...actions, waiting(req, o, Phase.Following, o.incumbentUnreadable, {}, { type: 'Warning', reason: Phase.Following, message: o.incumbentUnreadable })];
    }
    // The request was marked Running but its PipelineRun is gone: someone
    // deleted it. It cannot be re-run (that would run the work twice).
    if (req.status?.pipelineRun) {
      actions.push(finish(req, o, Reason.Failed, `PipelineRun ${req.status.pipelineRun} was deleted before it finished; create a new ${kindOf(o).kind} to try again`, { code: 'PIPELINERUN_MISSING' }));
      actions.push(...new Resolutions(o, uid).cleanup());
      return actions;
    }
    // The internal cluster refused the PipelineRun this request produced
    // (its admission, a quota, a field it will not store): asking again
    // would be refused again.
    if (o.refused?.run !== undefined) {
      actions.push(reject(req, o, `the internal cluster refused the PipelineRun for this request: ${o.refused.run}`, 'REQUEST_INVALID'));
      actions.push(...new Resolutions(o, uid).cleanup());
      return actions;
    }
    // The incumbent made more than one run for this request before it wrote
    // which (the runs carry no uid): none is followed and none is made; a
    // person deletes the ones that are not this request's.
    if (incumbent.ambiguous) {
      const names = incumbent.ambiguous.map((pr) => `${pr.metadata.namespace ?? o.namespace}/${pr.metadata.name}`).sort().join(', ');
      const msg = `the previous controller made ${incumbent.ambiguous.length} PipelineRuns for this request (${names}) and did not record which is its own; delete the ones that are not, and the other is followed to its end`;
      if (showsPhase(req, Phase.Following, msg)) return actions;
      return [...actions, waiting(req, o, Phase.Following, msg, {}, { type: 'Warning', reason: Phase.Following, message: msg })];
    }
    // Draining before a rollback (--drain, docs/migrating.md): a request no
    // controller has written to is left for the Go controller, which takes
    // it as new; everything started here goes on to its end here.
    if (o.draining && phaseOf(req) === undefined) return actions;
    // 2. A remote whose rules cannot be known yet (a kcp workspace whose
    //    path cannot be read): its requests wait, pending, saying why;
    //    nothing is decided under a guessed name (observation.ts held).
    if (o.held) {
      if (showsPhase(req, Phase.WaitingForWorkspace, o.held)) return actions;
      return [...actions, waiting(req, o, Phase.WaitingForWorkspace, o.held, {}, { type: 'Warning', reason: Phase.WaitingForWorkspace, message: o.held })];
    }
    //    Without a configuration nothing is decided: a missing `config`
    //    (deleted and re-applied, not created yet) must not turn away every
    //    request that arrives meanwhile. The configuration's arrival brings
    //    every waiting request back here.
    if (!o.config.present) {
      const msg = `waiting for the internal cluster's configuration: there is no InternalServicesConfig "config" in namespace ${JSON.stringify(o.namespace)}; the request is decided once its administrators create it`;
      if (showsPhase(req, Phase.WaitingForConfig, msg)) return actions;
      return [...actions, waiting(req, o, Phase.WaitingForConfig, msg, {}, { type: 'Warning', reason: Phase.WaitingForConfig, message: msg })];
    }
    // 3. Only allowed namespaces are served.
    const ns = req.metadata.namespace ?? '';
    const tenant = tenantOf(o.remote ?? DEFAULT_REMOTE, ns);
    // What the configuration's rules are matched against: the workspace path of a kcp remote, else the same.
    const ruled = policyTenant(o, ns);
    // The API server validates requests against the CRD schema; objects stored
    // before it (or under an older schema) are checked again here, so that a
    // malformed one is rejected with a reason instead of failing every retry.
    const served = isServed(o.config, ruled);
    const malformed = kindOf(o).checkShape(req);
    if (malformed && served) return [...actions, reject(req, o, malformed, 'REQUEST_INVALID')];
    if (!served) {
      return [...actions, reject(req, o, notServedMessage(o.config, ruled, { listServed: o.workspace !== undefined }), 'REQUEST_NAMESPACE_NOT_ALLOWED')];
    }
    // Idempotent retries: the same work asked for again follows the earlier request.
    const idem = idempotencyKeyOf(req);
    const follow = followOf(idem, o.earlier ?? []);
    if (follow.kind === 'refuse') return [...actions, reject(req, o, follow.message, 'REQUEST_IDEMPOTENCY_CONFLICT')];
    if (follow.kind === 'copy') {
      const e = follow.earlier;
      const msg = `request ${JSON.stringify(e.name)} with the same idempotency key ${JSON.stringify(idem)} and spec already succeeded${e.pipelineRun ? ` (PipelineRun ${e.pipelineRun})` : ''}: its results are copied, nothing ran again`;
      return [...actions, finish(req, o, Reason.Succeeded, msg, { results: e.results, extra: { followed: { name: e.name, uid: e.uid } } })];
    }
    if (follow.kind === 'follow') {
      const e = follow.earlier;
      const msg = `following request ${JSON.stringify(e.name)}, which has the same idempotency key ${JSON.stringify(idem)} and spec${e.pipelineRun ? ` (PipelineRun ${e.pipelineRun})` : ''}: this request ends as it ends, and nothing runs twice`;
      if (showsPhase(req, Phase.Following, msg) && req.status?.followed?.uid === e.uid) return actions;
      return [...actions, waiting(req, o, Phase.Following, msg, { followed: { name: e.name, uid: e.uid } }, { type: 'Normal', reason: Phase.Following, message: msg })];
    }
    // 4. What to run, and which rule grants it (the allowList, or the first
    //    per-namespace rule that grants this Pipeline): its settings apply.
    const what = requestedOf(req.spec);
    if (what.kind === 'invalid') return [...actions, reject(req, o, what.message, 'REQUEST_INVALID')];
    const verdict = grantFor(o.config, ruled, what.kind === 'installed' ? { kind: 'installed', pipeline: what.pipeline } : { kind: 'resolver', resolver: what.resolver }, { now: o.now.getTime() });
    if (!verdict.ok) return [...actions, reject(req, o, verdict.message, verdict.code)];
    const grant = verdict.grant;
    const by = grant.rule === 'allowList' ? o.config.source : `${grant.rule} of ${o.config.source}`;
    const sa = what.serviceAccount;
    if (sa && !grant.serviceAccounts.has(sa)) {
      const allowed = [...grant.serviceAccounts].sort();
      const msg = allowed.length
        ? `serviceAccount "${sa}" is not allowed by ${by}; allowed: ${allowed.map((x) => JSON.stringify(x)).join(', ')}`
        : `serviceAccount "${sa}" is not allowed: ${by} allows no service accounts; omit spec.serviceAccount`;
      return [...actions, reject(req, o, msg, 'REQUEST_SERVICE_ACCOUNT_NOT_ALLOWED')];
    }
    // Limits: param sizes and constraints, and the timeouts the run gets.
    const sizes = checkParamSizes(what.params, grant.limits, by);
    if (!sizes.ok) return [...actions, reject(req, o, sizes.message, 'REQUEST_LIMIT_EXCEEDED')];
    const constraints = checkParamConstraints(what.params, grant, o.config.source);
    if (!constraints.ok) return [...actions, reject(req, o, constraints.message, 'REQUEST_PARAMS_INVALID')];
    const timeouts = effectiveTimeouts(what.timeouts, grant.timeouts, by);
    if (!timeouts.ok) return [...actions, reject(req, o, timeouts.message, 'REQUEST_LIMIT_EXCEEDED')];
    what.timeouts = timeouts.value;
    const resolutions = new Resolutions(o, uid);
    let pipeline: { spec: Record<string, unknown>; name: string; origin: 'installed' | 'resolved'; declared: Pipeline };
    const provenance: Provenance[] = [];
    if (what.kind === 'resolver') {
      if (!hasSources(grant.sources)) {
        return [
          ...actions,
          reject(
            req,
            o,
            `spec.pipeline.pipelineRef asks for the ${JSON.stringify(what.resolver)} resolver, but remote resolution is not enabled on this internal cluster: ` +
              `${o.config.source} has no source policy (allowedGitResolverURLs or sources), so only Pipelines installed in namespace "${o.namespace}" can run. ` +
              `Name one with spec.pipeline.pipelineRef.name (or spec.request), or ask the administrators of the internal cluster to allow this source (docs/security.md)`,
            'REQUEST_SOURCE_NOT_ALLOWED',
          ),
          ...resolutions.cleanup(),
        ];
      }
      // The pipelineRef as sent: Tekton would substitute nothing in it, and neither do we.
      const ref = { resolver: what.resolver, params: what.resolverParams };
      const v = followReference(graphContext(o, req, resolutions, grant.sources), 'spec.pipeline.pipelineRef', ref, [], ['Pipeline']);
      if (v.kind === 'refused') return [...actions, reject(req, o, v.message, v.code), ...resolutions.cleanup()];
      if (v.kind === 'check') return [...actions, ...resolutions.wait(req, [], `checking that commit ${v.check.commit} is reachable from an allowed ref of ${v.check.url}`, { checks: [v.check] })];
      if (v.kind === 'lookup') return [...actions, ...resolutions.wait(req, [], `looking up ${v.lookup.ref} in ${v.lookup.url}`, { lookups: [v.lookup] })];
      if (v.kind === 'pathCheck') return [...actions, ...resolutions.wait(req, [], `checking that ${v.check.path} is a file of ${v.check.url} at commit ${v.check.commit}, through no symbolic link or submodule`, { paths: [v.check] })];
      if (v.kind !== 'resolved') return [...actions, ...resolutions.wait(req, v.kind === 'need' ? [v.ref] : [], `resolving the Pipeline (${describeRequested(req.spec)})`)];
      provenance.push(v.provenance);
      const md = v.obj['metadata'] as { name?: unknown } | undefined;
      const name = typeof md?.name === 'string' ? md.name : describeRequested(req.spec);
      pipeline = { spec: v.obj['spec'] as Record<string, unknown>, name, origin: 'resolved', declared: v.obj as unknown as Pipeline };
    } else {
      if (!o.pipeline) {
        return [...actions, reject(req, o, `no Pipeline named "${what.pipeline}" in namespace "${o.namespace}" of the internal cluster; only Pipelines installed there can be requested`, 'REQUEST_PIPELINE_NOT_FOUND')];
      }
      pipeline = { spec: (o.pipeline.spec ?? {}) as Record<string, unknown>, name: what.pipeline, origin: 'installed', declared: o.pipeline };
    }
    // 5. Params must match the Pipeline.
    const params = checkParams(pipeline.name, pipeline.declared, what.params);
    if (!params.ok) return [...actions, reject(req, o, params.message, 'REQUEST_PARAMS_INVALID'), ...resolutions.cleanup()];
    const graph = checkGraph({
      ...graphContext(o, req, resolutions, grant.sources),
      spec: pipeline.spec,
      origin: pipeline.origin,
      params: params.params,
      pipelineRunName: pipelineRunName(uid),
      pipelineName: pipeline.name,
      installedTask: (name) => o.tasks?.get(name),
    });
    if (graph.state === 'rejected') return [...actions, reject(req, o, graph.message, graph.code), ...resolutions.cleanup()];
    if (graph.state === 'pending') return [...actions, ...resolutions.wait(req, graph.need, `resolving the Tasks of Pipeline "${pipeline.name}"`, { checks: graph.checks, lookups: graph.lookups, paths: graph.pathChecks })];
    provenance.push(...graph.provenance);
    // The ServiceAccount it names must exist, or its pods would be refused
    // once it runs: asked of the internal cluster (a need), before an
    // approver is asked or anything is made.
    if (sa) {
      const known = o.serviceAccount?.name === sa ? o.serviceAccount.answer : undefined;
      if (known === undefined) return [...actions, { type: 'checkServiceAccount', name: sa }];
      if (known === 'missing') {
        return [
          ...actions,
          reject(req, o, `serviceAccount "${sa}" is allowed by ${by}, but there is no ServiceAccount "${sa}" in namespace "${o.namespace}" of the internal cluster; ask its administrators to create it, then send the request again`, 'REQUEST_SERVICE_ACCOUNT_NOT_FOUND'),
          ...resolutions.cleanup(),
        ];
      }
    }
    // 6. Exactly one PipelineRun (its name is derived from the request's uid),
    //    running what was checked.
    const pr = buildPipelineRun(req, what.kind === 'installed' ? what : { ...what, pipeline: pipeline.name }, pipeline.declared, {
      namespace: o.namespace,
      remote: o.remote ?? DEFAULT_REMOTE,
      kind: kindLabel(o.kind),
      volumeClaim: o.config.volumeClaim,
      params: params.params,
      ...(graph.spec ? { pipelineSpec: graph.spec } : {}),
      provenance,
      ...(grant.onRevoke === 'cancel' || o.workspace
        ? { annotations: { ...(grant.onRevoke === 'cancel' ? { [ANNOTATION_ON_REVOKE]: 'cancel' } : {}), ...(o.workspace ? { [ANNOTATION_WORKSPACE]: o.workspace } : {}) } }
        : {}),
    });
    // 7. A rule may require approval first (seed 004): the decision is made
    //    on the internal cluster, by a user the API server vouches for.
    let approvalRecord: InternalRequestStatus['approval'] | undefined;
    const approvals = (o.approvals ?? []).filter((a) => requestUidOf(a) === uid);
    if (grant.approval.required) {
      const gate = approvalGate(o, req, grant, pr, what, approvals[0]);
      if (gate.state === 'waiting') return [...actions, ...gate.actions, ...atExpiry(o, grant)];
      if (gate.state === 'ended') return [...actions, ...gate.actions, ...resolutions.cleanup(), ...approvals.map((a) => deleteApproval(a, 'the request was decided'))];
      approvalRecord = gate.record;
    }
    // 8. Capacity: beyond the maximum, wait in fair order between namespaces.
    const admission = admit({ key: requestKey({ remote: o.remote ?? DEFAULT_REMOTE, namespace: ns, name: req.metadata.name ?? '', kind: kindLabel(o.kind) }), tenant, created: req.metadata.creationTimestamp ?? '' }, o.capacity ?? { running: 0, runningByTenant: new Map(), waiting: [] }, o.config.capacity);
    if (!admission.admitted) {
      const message = `waiting for a free slot on the internal cluster: ${admission.why}; position ${admission.position} of ${admission.waiting} waiting (namespaces take turns)`;
      if (showsPhase(req, Phase.Queued, message) && (!approvalRecord || req.status?.approval?.result === approvalRecord.result)) return [...actions, ...atExpiry(o, grant)];
      return [...actions, waiting(req, o, Phase.Queued, message, approvalRecord ? { approval: approvalRecord } : {}), ...atExpiry(o, grant)];
    }
    // The closed world, asserted on the final object by a check that shares
    // no code with the walk that built it: fails closed.
    const violations = closedWorldViolations(pr, {
      installedPipeline: (name) => (what.kind === 'installed' && name === what.pipeline ? (o.pipeline as unknown as Record<string, unknown> | undefined) : undefined),
      installedTask: (name) => o.tasks?.get(name),
      copies: new Set(graph.stepActions.map((c) => c.metadata.name)),
      copyPrefix: STEPACTION_COPY_PREFIX,
    });
    if (violations.length) {
      return [
        ...actions,
        reject(req, o, `the PipelineRun built for this request would leave Tekton something to resolve that was not checked, so nothing was created: ${describeViolations(violations)}. This is a gap in the controller's own checks; please report it`, 'REQUEST_NOT_CLOSED'),
        ...resolutions.cleanup(),
      ];
    }
    actions.push({ type: 'createPipelineRun', pipelineRun: pr, ...(graph.stepActions.length ? { stepActions: graph.stepActions } : {}) });
    // 9. Marked Running; the resolutions (and the approval) are no longer needed.
    actions.push(running(req, o, `${o.namespace}/${pr.metadata.name}`, pr, { approval: approvalRecord, grant }));
    actions.push(...resolutions.cleanup(), ...approvals.map((a) => deleteApproval(a, 'the request runs')));
    return actions;
  }

  const ref = `${ours.metadata.namespace ?? o.namespace}/${ours.metadata.name}`;
  const out = runOutcomeOf(ours);
  if (!out.done) {
    // The configuration changed under a running request, and the rule that
    // granted it asked for running requests to be stopped then.
    const revocation = !out.cancelled ? revocationOf(o, req, ours) : {};
    const revoked = revocation.revoked;
    if (revoked) actions.push({ type: 'cancelPipelineRun', pipelineRun: ours, why: revoked, annotations: { [ANNOTATION_REVOKED]: revoked } });
    if (revocation.grant) actions.push(...atExpiry(o, revocation.grant));
    if (!showsPhase(req, Phase.Running, runningMessage(ref)) || req.status?.pipelineRun !== ref || req.status?.observedGeneration !== generation) {
      actions.push(running(req, o, ref, ours));
    } else {
      const answer = logsAnswer(o, req);
      if (answer) actions.push(...answer);
    }
    actions.push(...new Resolutions(o, uid).cleanup());
    return actions;
  }

  // 8. The PipelineRun finished: outcome and results go back to the request.
  // Written whether or not the Running status was (the run may have ended
  // while the controller was down): status.pipelineRun and status.pipeline
  // always say which PipelineRun ran what.
  const rec = archiveOf(ours);
  const ran: InternalRequestStatus = { pipelineRun: ref, ...(pipelineStatusOf(ours) ? { pipeline: pipelineStatusOf(ours) } : {}), ...(rec ? { archive: rec } : {}) };
  if (o.refused?.results !== undefined) {
    // The remote cluster refused the results (its size limits, its
    // validation): the outcome is written without them rather than retried
    // for ever.
    actions.push(finish(req, o, Reason.Failed, `the results of the PipelineRun could not be stored on the request: ${o.refused.results}`, { code: 'PIPELINERUN_FAILED', startTime: out.startTime, completionTime: out.completionTime, extra: ran }));
  } else if (out.succeeded) {
    actions.push(finish(req, o, Reason.Succeeded, `PipelineRun ${ref} succeeded`, { results: out.results, startTime: out.startTime, completionTime: out.completionTime, extra: ran }));
  } else {
    const failed = o.failedTasks?.length ? `; failed tasks: ${[...o.failedTasks].sort().join(', ')}` : '';
    const revoked = ours.metadata.annotations?.[ANNOTATION_REVOKED];
    const why = revoked ? `cancelled because the configuration no longer allows it: ${revoked}` : [out.reason, out.message].filter(Boolean).join(': ');
    actions.push(
      finish(req, o, Reason.Failed, `PipelineRun ${ref} failed: ${why || 'no reason given'}${failed}`, { results: out.results, code: 'PIPELINERUN_FAILED', startTime: out.startTime, completionTime: out.completionTime, extra: ran }),
    );
  }
  // 9. Then the PipelineRun is removed, unless debugging (with Tekton Chains:
  //    once the request is finished, after the relay in 1.).
  if (!o.config.debug && !o.config.chains.enabled) actions.push(...removeDone(o, ours, 'it finished and its outcome was recorded'));
  return actions;
}

/**
 * The removal of the incumbent's finalizer from a request it saw (an
 * InternalRequest: it served no other kind), unless the remote refused one
 * lately (config/rbac/remote-incumbent not applied there).
 */
function releaseIncumbent(o: Observation, r: InternalRequest, why: string): Action[] {
  if (o.kind || o.finalizersDenied || !holdsIncumbentFinalizer(r)) return [];
  return [{ type: 'removeFinalizer', request: r, finalizer: INCUMBENT_FINALIZER, why: `the previous controller's finalizer: ${why}` }];
}

/** The request's kind: the built-in InternalRequest unless the observation names another. */
function kindOf(o: Observation): Pick<RequestKind, 'kind' | 'builtIn' | 'checkShape'> {
  return o.kind ?? INTERNAL_REQUEST_KIND;
}
