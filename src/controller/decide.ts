/**
 * The life of a request, as one pure function: given what the two clusters
 * show, what to do next. No I/O, no clock (the time is an input), so every rule
 * is covered by a table of cases in test/unit/decide.test.ts. The numbered
 * steps follow the request flow of the design (seed 000/001).
 *
 * Longer than 400 lines on purpose: it is the one place where the whole
 * workflow can be read in order, step by step, and every helper it calls is
 * already a pure function elsewhere (src/policy, src/tekton). Splitting the
 * steps across files would hide their order, which is the point of the file.
 */
import { finished, inProgress, isFinished, Phase, Reason, showsPhase, succeededCondition, rfc3339, type Outcome } from '../api/conditions.js';
import { type InternalRequest, type InternalRequestApproval, type InternalRequestStatus } from '../api/types.js';
import { approvalFor } from './approval.js';
import type { Grant } from '../policy/grant.js';
import { formatDuration } from '../util/duration.js';
import type { ErrorCode } from '../errors.js';
import { ANNOTATION_LOGS, ANNOTATION_RESULTS_LOG, ANNOTATION_RESULTS_RECORD, ANNOTATION_RESULTS_STORED, type ArchiveVerdict, type FetchedLogs } from './results-archive.js';
import { ANNOTATION_ON_REVOKE, ANNOTATION_REVOKED, ANNOTATION_WORKSPACE, buildPipelineRun, outcomeOf, pipelineRunName, pipelineStatusOf, requestUidOf, resolutionFor } from '../tekton/pipelinerun.js';
import { checkGraph, followReference, type GraphInput, type Provenance, type RemoteRef } from '../tekton/graph.js';
import { outcomeOfResolution, type Resolution, type ResolutionRequest } from '../tekton/resolve.js';
import { checkParams } from '../tekton/params.js';
import type { Pipeline, PipelineRun } from '../tekton/types.js';
import type { EffectiveConfig } from './config.js';
import { checkParamConstraints, grantFor, isServed, notServedMessage } from '../policy/grant.js';
import { DEFAULT_REMOTE, requestRef, tenantOf } from '../policy/tenant.js';
import { admit, type CapacityView } from '../policy/capacity.js';
import { followOf, idempotencyKeyOf, type Earlier } from './idempotency.js';
import { hasSources, type CommitAnswer, type CommitCheck, type SourcePolicy } from '../policy/source.js';
import { checkParamSizes, effectiveTimeouts } from '../policy/limits.js';
import { describeRequested, requestedOf } from './requested.js';
import { INTERNAL_REQUEST_KIND, kindLabel, type RequestKind } from './request-kind.js';
import { requestKey } from '../api/request-key.js';
import { chainsStep, type UnsignedReason } from './attestation.js';
import type { Attestation } from '../tekton/chains.js';

export { checkShape } from './request-shape.js';

export interface Observation {
  /** The controller's namespace on the internal cluster. */
  namespace: string;
  /** The remote cluster the request is on (default: DEFAULT_REMOTE). */
  remote?: string;
  /**
   * For a remote that is a kcp workspace: its path (`root:org:team`), which
   * the configuration's rules name; the remote's own name is its logical
   * cluster. Rules see the path, identity (keys, capacity, fair turns) the name.
   */
  workspace?: string;
  /** The request's kind (default: the built-in InternalRequest); see request-kind.ts. */
  kind?: Pick<RequestKind, 'kind' | 'builtIn' | 'checkShape'>;
  /** The request; undefined when it no longer exists on the remote cluster. */
  request: InternalRequest | undefined;
  /** PipelineRuns labelled as made for this request key (any uid). */
  pipelineRuns: PipelineRun[];
  config: EffectiveConfig;
  /** The installed Pipeline the request names (spec.request or spec.pipeline.pipelineRef.name) in the controller's namespace; undefined: not found or none named. */
  pipeline: Pipeline | undefined;
  /** ResolutionRequests made for this request key (any uid). */
  resolutions?: ResolutionRequest[];
  /** InternalRequestApprovals made for this request key (any uid). */
  approvals?: InternalRequestApproval[];
  /**
   * For an approval that holds a decision: whether the controller trusts it
   * (the admission policy that checks approvers is in force, and the approver
   * may approve under the rule now), as the controller found out.
   */
  approvalTrust?: { trusted: true } | { trusted: false; why: string };
  /** For a request with an idempotency key: the other requests with that key (see idempotency.ts). */
  earlier?: Earlier[];
  /** Running PipelineRuns and waiting requests, when the configuration sets a capacity. */
  capacity?: CapacityView;
  /** Tasks installed in the controller's namespace, by name. */
  tasks?: ReadonlyMap<string, Record<string, unknown>>;
  /** For a failed PipelineRun: the pipeline tasks whose TaskRuns failed, each possibly followed by Tekton's message in parentheses. */
  failedTasks?: string[];
  /**
   * When the controller follows Tekton Results (--results-url): whether
   * Results has stored a finished PipelineRun (see results-archive.ts).
   * Pruning waits for it, bounded by resultsStoreTimeout.
   */
  archive?: (pr: PipelineRun) => ArchiveVerdict;
  /**
   * For a request whose internal-services.dev/logs annotation has not been
   * answered yet: the run's logs, or undefined while they are being fetched.
   */
  logs?: (req: InternalRequest) => FetchedLogs | undefined;
  /**
   * What the repository said of a commit this request asks for by SHA (see
   * src/git/commit-checker.ts); undefined: not asked yet. A read, no I/O.
   */
  commits?: (check: CommitCheck) => CommitAnswer | undefined;
  /**
   * Set when resolver references must be refused (--refuse-resolvers-on-advisory
   * and a Tekton version with a known advisory, see tekton-version.ts): why.
   */
  resolversRefused?: string;
  now: Date;
}

export interface EventSpec {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  /**
   * A routine success (Running without an approval, Succeeded): the status
   * already says it, so it is recorded only with `--events all`. Failures,
   * rejections, approvals and the other notices are recorded by default.
   */
  success?: true;
}

export type Action =
  | { type: 'createPipelineRun'; pipelineRun: PipelineRun }
  | { type: 'writeStatus'; status: InternalRequestStatus; event?: EventSpec; code?: ErrorCode }
  | { type: 'cancelPipelineRun'; pipelineRun: PipelineRun; why: string; annotations?: Record<string, string> }
  | { type: 'deletePipelineRun'; pipelineRun: PipelineRun; why: string; unsigned?: UnsignedReason; /** Deleted before Tekton Results stored it (its bound ran out). */ unarchived?: true }
  /** Tekton Chains: add what it signed for the request's PipelineRun (or why nothing) to its status (attestation.ts). */
  | { type: 'relayAttestation'; attestation: Attestation; event: EventSpec }
  | { type: 'startResolution'; resolution: ResolutionRequest }
  /** Look for a commit in its repository (from the refs the rule allows); the key is looked at again when the answer is in. */
  | { type: 'checkCommit'; check: CommitCheck }
  | { type: 'createApproval'; approval: InternalRequestApproval }
  | { type: 'deleteApproval'; approval: InternalRequestApproval; why: string }
  | { type: 'deleteResolution'; resolution: ResolutionRequest; why: string }
  /** Delete the (finished) request on the remote cluster: ttlSecondsAfterFinished. */
  | { type: 'deleteRequest'; request: InternalRequest; why: string }
  /** Look at the request again after this long (a resolution's deadline), whatever else happens. */
  | { type: 'requeueAfter'; ms: number };

export function decide(o: Observation): Action[] {
  const actions: Action[] = [];
  const req = o.request && !o.request.metadata.deletionTimestamp ? o.request : undefined;
  const uid = req?.metadata.uid;
  const gone = `its ${kindOf(o).kind} was deleted`;

  // PipelineRuns whose request is gone (deleted, or re-created under the same
  // name with a new uid): stop them, and once Tekton reports them stopped
  // (cancellation runs finally tasks and ends the pods), remove them unless
  // debugging. Tekton's update of the run brings the key back here.
  for (const pr of o.pipelineRuns) {
    if (uid && requestUidOf(pr) === uid) continue;
    const out = outcomeOf(pr);
    if (!out.done) {
      if (!out.cancelled) actions.push({ type: 'cancelPipelineRun', pipelineRun: pr, why: gone });
      continue;
    }
    if (!o.config.debug) actions.push(removeDone(o, pr, gone));
  }
  for (const rr of o.resolutions ?? []) {
    if (!uid || requestUidOf(rr) !== uid) actions.push({ type: 'deleteResolution', resolution: rr, why: gone });
  }
  for (const a of o.approvals ?? []) {
    if (!uid || requestUidOf(a) !== uid) actions.push(deleteApproval(a, gone));
  }
  if (!req || !uid) return actions;

  const ours = o.pipelineRuns.find((pr) => requestUidOf(pr) === uid && pr.metadata.name === pipelineRunName(uid));
  const generation = req.metadata.generation;

  // 1. A finished request is left alone; only our own leftover PipelineRun is
  //    cleaned up (e.g. after a restart between the status write and the delete).
  if (isFinished(req)) {
    const answer = logsAnswer(o, req);
    if (answer) return [...actions, answer];
    // With Tekton Chains, what it signed is relayed first; the run stays until then.
    const chains = ours && outcomeOf(ours).done ? relayChains(o, req, ours, actions) : undefined;
    if (ours && outcomeOf(ours).done && !o.config.debug && chains !== 'hold') {
      // The request names its Results record before the run goes (one more
      // status write, only when Results follows the run and the record was
      // not known when the outcome was written).
      const rec = archiveOf(ours);
      if (rec && (req.status?.archive?.record !== rec.record || req.status?.archive?.log !== rec.log)) {
        return [...actions, { type: 'writeStatus', status: { ...req.status, archive: rec } }];
      }
      const del = removeDone(o, ours, chains ? `the request is finished; ${chains.why}` : 'the request is finished');
      actions.push(chains && del.type === 'deletePipelineRun' ? { ...del, unsigned: chains.reason } : del);
    }
    actions.push(...new Resolutions(o, uid).cleanup(), ...(o.approvals ?? []).map((a) => deleteApproval(a, 'the request is finished')));
    // Finished requests go after ttlSecondsAfterFinished, when set (in debug
    // mode not while the PipelineRun kept for it exists; otherwise a leftover
    // PipelineRun is removed as an orphan afterwards).
    const ttl = o.config.ttlSecondsAfterFinished;
    const finishedAt = Date.parse(succeededCondition(req)?.lastTransitionTime ?? '');
    if (ttl !== undefined && Number.isFinite(finishedAt) && !(ours && o.config.debug)) {
      const left = finishedAt + ttl * 1000 - o.now.getTime();
      actions.push(left <= 0 ? { type: 'deleteRequest', request: req, why: `finished more than ttlSecondsAfterFinished (${ttl} s) ago` } : { type: 'requeueAfter', ms: left + 100 });
    }
    return actions;
  }

  if (!ours) {
    // The request was marked Running but its PipelineRun is gone: someone
    // deleted it. It cannot be re-run (that would run the work twice).
    if (req.status?.pipelineRun) {
      actions.push(finish(req, o, Reason.Failed, `PipelineRun ${req.status.pipelineRun} was deleted before it finished; create a new ${kindOf(o).kind} to try again`, {}, 'PIPELINERUN_MISSING'));
      actions.push(...new Resolutions(o, uid).cleanup());
      return actions;
    }
    // 2. Without a configuration nothing is decided: a missing `config`
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
      return [...actions, reject(req, o, notServedMessage(o.config, ruled), 'REQUEST_NAMESPACE_NOT_ALLOWED')];
    }
    // Idempotent retries: the same work asked for again follows the earlier request.
    const idem = idempotencyKeyOf(req);
    const follow = followOf(idem, o.earlier ?? []);
    if (follow.kind === 'refuse') return [...actions, reject(req, o, follow.message, 'REQUEST_IDEMPOTENCY_CONFLICT')];
    if (follow.kind === 'copy') {
      const e = follow.earlier;
      const msg = `request ${JSON.stringify(e.name)} with the same idempotency key ${JSON.stringify(idem)} and spec already succeeded${e.pipelineRun ? ` (PipelineRun ${e.pipelineRun})` : ''}: its results are copied, nothing ran again`;
      return [...actions, finish(req, o, Reason.Succeeded, msg, e.results ?? {}, undefined, undefined, undefined, { followed: { name: e.name, uid: e.uid } })];
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
    const verdict = grantFor(o.config, ruled, what.kind === 'installed' ? { kind: 'installed', pipeline: what.pipeline } : { kind: 'resolver', resolver: what.resolver });
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
      if (v.kind === 'check') return [...actions, ...resolutions.wait(req, [], `checking that commit ${v.check.commit} is reachable from an allowed ref of ${v.check.url}`, [v.check])];
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
    if (graph.state === 'pending') return [...actions, ...resolutions.wait(req, graph.need, `resolving the Tasks of Pipeline "${pipeline.name}"`, graph.checks)];
    provenance.push(...graph.provenance);
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
      if (gate.state === 'waiting') return [...actions, ...gate.actions];
      if (gate.state === 'ended') return [...actions, ...gate.actions, ...resolutions.cleanup(), ...approvals.map((a) => deleteApproval(a, 'the request was decided'))];
      approvalRecord = gate.record;
    }
    // 8. Capacity: beyond the maximum, wait in fair order between namespaces.
    const admission = admit({ key: requestKey({ remote: o.remote ?? DEFAULT_REMOTE, namespace: ns, name: req.metadata.name ?? '', kind: kindLabel(o.kind) }), tenant, created: req.metadata.creationTimestamp ?? '' }, o.capacity ?? { running: 0, runningByTenant: new Map(), waiting: [] }, o.config.capacity);
    if (!admission.admitted) {
      const message = `waiting for a free slot on the internal cluster: ${admission.why}; position ${admission.position} of ${admission.waiting} waiting (namespaces take turns)`;
      if (showsPhase(req, Phase.Queued, message) && (!approvalRecord || req.status?.approval?.result === approvalRecord.result)) return actions;
      return [...actions, waiting(req, o, Phase.Queued, message, approvalRecord ? { approval: approvalRecord } : {})];
    }
    actions.push({ type: 'createPipelineRun', pipelineRun: pr });
    // 9. Marked Running; the resolutions (and the approval) are no longer needed.
    actions.push(running(req, o, `${o.namespace}/${pr.metadata.name}`, pr, approvalRecord));
    actions.push(...resolutions.cleanup(), ...approvals.map((a) => deleteApproval(a, 'the request runs')));
    return actions;
  }

  const ref = `${o.namespace}/${ours.metadata.name}`;
  const out = outcomeOf(ours);
  if (!out.done) {
    // The configuration changed under a running request, and the rule that
    // granted it asked for running requests to be stopped then.
    const revoked = !out.cancelled ? revocationOf(o, req, ours) : undefined;
    if (revoked) actions.push({ type: 'cancelPipelineRun', pipelineRun: ours, why: revoked, annotations: { [ANNOTATION_REVOKED]: revoked } });
    if (!showsPhase(req, Phase.Running, runningMessage(ref)) || req.status?.pipelineRun !== ref || req.status?.observedGeneration !== generation) {
      actions.push(running(req, o, ref, ours));
    } else {
      const answer = logsAnswer(o, req);
      if (answer) actions.push(answer);
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
  if (out.succeeded) {
    actions.push(finish(req, o, Reason.Succeeded, `PipelineRun ${ref} succeeded`, out.results, undefined, out.startTime, out.completionTime, ran));
  } else {
    const failed = o.failedTasks?.length ? `; failed tasks: ${[...o.failedTasks].sort().join(', ')}` : '';
    const revoked = ours.metadata.annotations?.[ANNOTATION_REVOKED];
    const why = revoked ? `cancelled because the configuration no longer allows it: ${revoked}` : [out.reason, out.message].filter(Boolean).join(': ');
    actions.push(
      finish(req, o, Reason.Failed, `PipelineRun ${ref} failed: ${why || 'no reason given'}${failed}`, out.results, 'PIPELINERUN_FAILED', out.startTime, out.completionTime, ran),
    );
  }
  // 9. Then the PipelineRun is removed, unless debugging (with Tekton Chains:
  //    once the request is finished, after the relay in 1.).
  if (!o.config.debug && !o.config.chains.enabled) actions.push(removeDone(o, ours, 'it finished and its outcome was recorded'));
  return actions;
}

/** The tenant the configuration's rules see: `workspace-path/namespace` for a kcp workspace, `remote/namespace` otherwise. */
function policyTenant(o: Observation, namespace: string): string {
  return tenantOf(o.workspace ?? o.remote ?? DEFAULT_REMOTE, namespace);
}

/** The request's kind: the built-in InternalRequest unless the observation names another. */
function kindOf(o: Observation): Pick<RequestKind, 'kind' | 'builtIn' | 'checkShape'> {
  return o.kind ?? INTERNAL_REQUEST_KIND;
}

function running(req: InternalRequest, o: Observation, ref: string, pr: PipelineRun, approval?: InternalRequestStatus['approval']): Action {
  const pipeline = pipelineStatusOf(pr);
  const { followed: _stale, ...previous } = req.status ?? {}; // it followed a request that then failed: it runs itself now
  const status: InternalRequestStatus = {
    ...previous,
    ...(approval ? { approval } : {}),
    ...(pipeline ? { pipeline } : {}),
    conditions: inProgress(req.status?.conditions, Phase.Running, { message: runningMessage(ref), ...gen(req) }, o.now),
    startTime: req.status?.startTime ?? rfc3339(o.now),
    pipelineRun: ref,
    ...gen(req),
  };
  const approvedBy = approval?.by ? `, approved by ${JSON.stringify(approval.by)} under rule ${JSON.stringify(approval.rule ?? '')}${approval.message ? `: ${approval.message}` : ''}` : '';
  return { type: 'writeStatus', status, event: { type: 'Normal', reason: Reason.Running, message: `PipelineRun ${ref} created on the internal cluster${approvedBy}`, ...(approvedBy ? {} : { success: true as const }) } };
}

function runningMessage(ref: string): string {
  return `PipelineRun ${ref} is running`;
}

/**
 * An unfinished request waits in `phase`: Succeeded stays Unknown/Running
 * (the requester's contract), the phase and its message go into Progressing
 * and into both messages.
 */
function waiting(req: InternalRequest, o: Observation, phase: Phase, message: string, extra: InternalRequestStatus, event?: EventSpec): Action & { type: 'writeStatus' } {
  const status: InternalRequestStatus = { ...req.status, ...extra, conditions: inProgress(req.status?.conditions, phase, { message, ...gen(req) }, o.now), ...gen(req) };
  return { type: 'writeStatus', status, ...(event ? { event } : {}) };
}

function reject(req: InternalRequest, o: Observation, message: string, code: ErrorCode): Action {
  return endWithoutResults(req, Reason.Rejected, message, o.now, code);
}

/**
 * The request ends unsuccessfully (Rejected, or Failed), with no results:
 * also used by the controller when the clusters refuse what decide() planned
 * (a PipelineRun the internal cluster will not store, results the remote one
 * will not).
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

function finish(
  req: InternalRequest,
  o: Observation,
  reason: Outcome,
  message: string,
  results: Record<string, string>,
  code?: ErrorCode,
  startTime?: string,
  completionTime?: string,
  extra: InternalRequestStatus = {},
): Action {
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

function gen(req: InternalRequest): { observedGeneration?: number } {
  return req.metadata.generation !== undefined ? { observedGeneration: req.metadata.generation } : {};
}

/**
 * The ResolutionRequests of one request (by uid): what each reference's
 * resolution says, and the actions to start the missing ones, wait for the
 * pending ones, or remove them all once the decision is made.
 */
class Resolutions {
  private readonly mine: ResolutionRequest[];
  constructor(
    private readonly o: Observation,
    uid: string,
  ) {
    this.mine = (o.resolutions ?? []).filter((rr) => requestUidOf(rr) === uid);
  }

  lookup(ref: RemoteRef, req: InternalRequest): Resolution | undefined {
    const want = resolutionFor(req, ref, this.o.namespace, this.o.remote ?? DEFAULT_REMOTE, kindLabel(this.o.kind));
    const rr = this.mine.find((x) => x.metadata?.name === want.metadata?.name);
    return rr ? outcomeOfResolution(rr, this.o.now, this.o.config.resolutionTimeoutMs) : undefined;
  }

  /** Start what is missing (resolutions, commit checks), show the request as Resolving, and look again by the deadline. */
  wait(req: InternalRequest, need: RemoteRef[], what: string, checks: CommitCheck[] = []): Action[] {
    const actions: Action[] = need.map((ref) => ({ type: 'startResolution', resolution: resolutionFor(req, ref, this.o.namespace, this.o.remote ?? DEFAULT_REMOTE, kindLabel(this.o.kind)) }));
    actions.push(...checks.map((check): Action => ({ type: 'checkCommit', check })));
    const timeout = this.o.config.resolutionTimeoutMs;
    let ms = timeout;
    for (const rr of this.mine) {
      const r = outcomeOfResolution(rr, this.o.now, timeout);
      if (r.state === 'pending') ms = Math.min(ms, timeout - r.waitedMs);
    }
    const message = `${what}; nothing runs until every reference is checked`;
    if (!showsPhase(req, Phase.Resolving, message)) actions.push(waiting(req, this.o, Phase.Resolving, message, {}));
    actions.push({ type: 'requeueAfter', ms: Math.max(250, ms) + 250 });
    return actions;
  }

  cleanup(): Action[] {
    return this.mine.map((rr) => ({ type: 'deleteResolution', resolution: rr, why: 'the request no longer needs it' }));
  }
}

function graphContext(o: Observation, req: InternalRequest, r: Resolutions, policy: SourcePolicy): Pick<GraphInput, 'policy' | 'namespace' | 'controllerNamespace' | 'lookup' | 'commits' | 'resolversRefused'> {
  return {
    policy,
    namespace: policyTenant(o, req.metadata.namespace ?? ''),
    controllerNamespace: o.namespace,
    lookup: (ref) => r.lookup(ref, req),
    ...(o.commits ? { commits: o.commits } : {}),
    ...(o.resolversRefused ? { resolversRefused: o.resolversRefused } : {}),
  };
}

/**
 * Why a running request is no longer allowed, when the rule that granted it
 * said onRevoke: cancel (recorded on its PipelineRun); undefined otherwise.
 * Only who may run what is looked at again (namespace and Pipeline), not the
 * limits the request was checked with; a missing configuration revokes nothing.
 */
function revocationOf(o: Observation, req: InternalRequest, pr: PipelineRun): string | undefined {
  if (pr.metadata.annotations?.[ANNOTATION_ON_REVOKE] !== 'cancel' || !o.config.present) return undefined;
  const what = requestedOf(req.spec);
  if (what.kind === 'invalid') return undefined;
  const v = grantFor(o.config, policyTenant(o, req.metadata.namespace ?? ''), what.kind === 'installed' ? { kind: 'installed', pipeline: what.pipeline } : { kind: 'resolver', resolver: what.resolver });
  return v.ok ? undefined : v.message;
}

function deleteApproval(approval: InternalRequestApproval, why: string): Action {
  return { type: 'deleteApproval', approval, why };
}

type Gate =
  | { state: 'waiting'; actions: Action[] }
  | { state: 'ended'; actions: Action[] }
  | { state: 'approved'; record: NonNullable<InternalRequestStatus['approval']> };

/**
 * The approval gate: make the approval object, wait for a decision (until it
 * expires), and accept an approval only if the controller trusts it.
 */
function approvalGate(o: Observation, req: InternalRequest, grant: Grant, pr: PipelineRun, what: { serviceAccount?: string | undefined; params: Record<string, string> }, existing: InternalRequestApproval | undefined): Gate {
  const rule = grant.approval.rule;
  const where = `${grant.rule} of ${o.config.source}`;
  const kind = kindLabel(o.kind);
  const ref = `${requestRef(o.remote ?? DEFAULT_REMOTE, req)}${kind ? ` --kind ${kind}` : ''}`;
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
    const approval = approvalFor(req, o.namespace, o.remote ?? DEFAULT_REMOTE, rule, pr, what, new Date(o.now.getTime() + grant.approval.timeoutMs), kind);
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

/**
 * Tekton Chains' part for a finished request's done run (see attestation.ts):
 * adds the relay or the wait to `actions`; says whether the run must stay
 * ('hold'), may go unsigned (why), or may go (undefined).
 */
function relayChains(o: Observation, req: InternalRequest, pr: PipelineRun, actions: Action[]): 'hold' | { reason: UnsignedReason; why: string } | undefined {
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
function archiveOf(pr: PipelineRun): { record: string; log?: string } | undefined {
  const a = pr.metadata.annotations ?? {};
  const record = a[ANNOTATION_RESULTS_RECORD];
  if (!record) return undefined;
  const log = a[ANNOTATION_RESULTS_LOG];
  return { record, ...(log ? { log } : {}) };
}

/**
 * The answer to a requester's ask for the logs (a new value of the
 * internal-services.dev/logs annotation): status.logs, once fetched.
 */
function logsAnswer(o: Observation, req: InternalRequest): Action | undefined {
  const asked = req.metadata.annotations?.[ANNOTATION_LOGS];
  if (!asked || !o.logs || req.status?.logs?.request === asked) return undefined;
  const got = o.logs(req);
  if (!got) return { type: 'requeueAfter', ms: 500 };
  return { type: 'writeStatus', status: { ...req.status, logs: { request: asked, source: got.source, at: rfc3339(o.now), truncated: got.truncated, text: got.text } } };
}

/**
 * Deletes a finished PipelineRun, unless Tekton Results follows it and has
 * not stored it yet: then it waits (bounded by resultsStoreTimeout from the
 * run's completion; after that it is deleted anyway, and the log and the
 * metric internal_services_pipelineruns_pruned_unarchived_total say so).
 * Results follows a run when the controller was given its API
 * (o.archive: asked there) or the watcher annotated the run.
 */
function removeDone(o: Observation, pr: PipelineRun, why: string): Action {
  const a = pr.metadata.annotations ?? {};
  const following = o.archive !== undefined || RESULTS_SEEN.some((k) => k in a);
  if (!following || a[ANNOTATION_RESULTS_STORED] === 'true') return { type: 'deletePipelineRun', pipelineRun: pr, why };
  const verdict = o.archive?.(pr);
  if (verdict?.stored) return { type: 'deletePipelineRun', pipelineRun: pr, why: `${why}; Tekton Results holds it as ${verdict.record}` };
  const done = Date.parse(pr.status?.completionTime ?? '') || o.now.getTime();
  const left = done + o.config.resultsStoreTimeoutMs - o.now.getTime();
  if (left > 0) return { type: 'requeueAfter', ms: Math.min(left, o.archive ? 1500 : 30_000) + 100 };
  const reason = verdict ? `: ${verdict.why}` : '';
  return { type: 'deletePipelineRun', pipelineRun: pr, unarchived: true, why: `${why}; Tekton Results had not stored it within ${formatDuration(o.config.resultsStoreTimeoutMs)}${reason}` };
}
