/**
 * The action executor: carries out the actions decide() returned, one at a
 * time, against the internal cluster (PipelineRuns, ResolutionRequests,
 * approvals) and the request's remote cluster (deleting a finished request;
 * status writes go to the status writer). An answer of the API server that
 * means "already done" (409 on create, 404 on delete) counts as done.
 */
import type { Refusals } from './refusals.js';
import type { Logger } from 'pino';
import { INTERNAL_REQUEST_APPROVAL, type InternalRequest, type InternalRequestApproval } from '../api/types.js';
import { describeError, isRefusedObject, statusCode, type Cluster, type KubeObject, type ResourceClient } from '../kube/client.js';
import { RESOLUTION_REQUEST, type ResolutionRequest } from '../tekton/resolve.js';
import { startResolution } from '../tekton/resolution-start.js';
import { PIPELINERUN, STEPACTION, type PipelineRun } from '../tekton/tekton-types.js';
import { ANNOTATION_STEPACTION_SOURCE, type StepActionCopy } from '../tekton/stepaction-copy.js';
import { ANNOTATION_USED_AT } from './stepaction-copies.js';
import type { Action } from './actions.js';
import type { Remote } from '../remotes/remote.js';
import type { StatusTarget, StatusWriter } from './status-writer.js';
import type { CommitCheck } from '../policy/source.js';
import type { RefLookup } from '../policy/exact-ref.js';
import type { PathCheck } from '../policy/path-check.js';
import { gate, HELD_RETRY_MS } from './incumbent-gate.js';

export interface ExecutorOptions {
  internal: Cluster;
  /** The controller's namespace on the internal cluster. */
  namespace: string;
  log: Logger;
  now: () => Date;
  writer: StatusWriter;
  /** A PipelineRun we created: as sent, and the API server's copy. */
  created(sent: PipelineRun, created: PipelineRun): void;
  /** A PipelineRun we deleted. */
  deleted(pr: PipelineRun): void;
  /** A PipelineRun deleted before Tekton Results stored it. */
  prunedUnarchived?(): void;
  /** A request was Rejected by the closed-world check (REQUEST_NOT_CLOSED), once its status is written. */
  closedWorldRefused?(): void;
  /** One of them had no signature of Tekton Chains (why: timeout, failed, no-signature). */
  deletedUnsigned?(reason: string, remote: string): void;
  /** Look at a request again after this long. */
  requeueAfter(key: string, ms: number): void;
  /** What the clusters refused, for the next observation. */
  refusals: Pick<Refusals, 'runRefused' | 'deleteDenied' | 'finalizerDenied'>;
  /** Start looking for a commit in its repository for a request (owner: its uid); the key comes back with the answer. */
  checkCommit(key: string, owner: string, check: CommitCheck): void;
  /** Start looking up an exact ref for a request (owner: its uid); the key comes back with the answer. */
  lookUpRef(key: string, owner: string, lookup: RefLookup): void;
  /** Start checking a git pathInRepo at its commit for a request (owner: its uid); the key comes back with the answer. */
  checkPath(key: string, owner: string, check: PathCheck): void;
  /** Ask whether a ServiceAccount exists on the internal cluster for a request (owner: its uid); the key comes back with the answer. */
  checkServiceAccount(key: string, owner: string, name: string): void;
  /** Ask Tekton Results whether it stored a finished run; the key comes back with the answer. */
  askArchive?(key: string, pipelineRun: PipelineRun): void;
  /** Fetch the logs a requester asked for (owner: the request's uid); the key comes back with them. */
  fetchLogs?(key: string, owner: string, asked: string, pipelineRun: string, archivedLog: string | undefined): void;
  /** Why every action is held now (the Go controller is back: incumbent-gate.ts), or undefined: act. */
  held?(): string | undefined;
  /** An action was held (counted). */
  heldAction?(type: Action['type']): void;
}

export class Executor {
  readonly prClient: ResourceClient<PipelineRun>;
  private readonly stepActionClient: ResourceClient<StepActionCopy>;
  private readonly resolutionClient: ResourceClient<ResolutionRequest>;
  private readonly approvalClient: ResourceClient<InternalRequestApproval>;

  constructor(private readonly opts: ExecutorOptions) {
    this.prClient = opts.internal.resource<PipelineRun>(PIPELINERUN);
    this.stepActionClient = opts.internal.resource<StepActionCopy>(STEPACTION);
    this.resolutionClient = opts.internal.resource<ResolutionRequest>(RESOLUTION_REQUEST);
    this.approvalClient = opts.internal.resource<InternalRequestApproval>(INTERNAL_REQUEST_APPROVAL);
  }

  /** Carries out one action. Returns false when the rest of the plan must not run. */
  async act(remote: Remote, key: string, request: InternalRequest | undefined, action: Action, attempt: number): Promise<boolean> {
    const kind = remote.kindOf(key);
    if (!kind) throw new Error(`request kind of ${key} is not served on remote ${remote.name}`);
    const ns = this.opts.namespace;
    // On kcp the request's workspace path is on every line (the key names its logical cluster).
    const log = remote.workspace ? this.opts.log.child({ workspace: remote.workspace }) : this.opts.log;
    // The one gate every action passes: nothing is done while the Go controller is back.
    if (gate(this.opts.held?.(), action) === 'hold') {
      this.opts.heldAction?.(action.type);
      log.debug({ request: key, action: action.type }, 'held: the Go controller is back');
      this.opts.requeueAfter(key, HELD_RETRY_MS);
      return false;
    }
    switch (action.type) {
      case 'createPipelineRun': {
        const pr = action.pipelineRun;
        // The checked StepActions its steps refer to, first: a TaskRun that
        // started without one would fail. Their names are their content's,
        // so one already there (an earlier attempt, another request) is the same.
        for (const copy of action.stepActions ?? []) {
          try {
            await this.stepActionClient.create(ns, copy);
            log.info({ request: key, stepAction: `${ns}/${copy.metadata.name}`, source: copy.metadata.annotations[ANNOTATION_STEPACTION_SOURCE] }, 'StepAction copy created');
          } catch (e) {
            if (statusCode(e) !== 409) throw e;
            // Already there: its name is the content's, but what is stored
            // is not taken on trust. It is replaced with exactly the spec
            // checked for this decision, and marked as used, so the sweep of
            // unused copies leaves it (its delete is conditional on the
            // version it listed). A conflict is retried with the request.
            const there = await this.stepActionClient.get(ns, copy.metadata.name);
            await this.stepActionClient.replace(ns, copy.metadata.name, {
              ...copy,
              metadata: { ...there.metadata, labels: { ...there.metadata.labels, ...copy.metadata.labels }, annotations: { ...there.metadata.annotations, ...copy.metadata.annotations, [ANNOTATION_USED_AT]: this.opts.now().toISOString() } },
            });
          }
        }
        try {
          const created = await this.prClient.create(ns, pr);
          this.opts.created(pr, created);
          log.info({ request: key, pipelineRun: `${ns}/${pr.metadata.name}`, pipeline: pr.spec.pipelineRef?.name }, 'PipelineRun created');
        } catch (e) {
          const code = statusCode(e);
          if (code === 409) {
            // Already there: made by an earlier attempt. The API server, not a cache, decides.
            log.info({ request: key, pipelineRun: pr.metadata.name }, 'PipelineRun already exists');
            return true;
          }
          if (isRefusedObject(e) && request?.metadata.uid) {
            // The internal cluster refuses the PipelineRun this request
            // produces: a fact for decide(), which rejects the request.
            log.info({ request: key, pipelineRun: pr.metadata.name, err: describeError(e) }, 'the internal cluster refused the PipelineRun; deciding again');
            this.opts.refusals.runRefused(key, request.metadata.uid, describeError(e), this.opts.now().getTime());
            this.opts.requeueAfter(key, 0);
            return false;
          }
          throw e;
        }
        return true;
      }
      case 'startResolution': {
        const rr = action.resolution;
        await startResolution(this.resolutionClient, rr);
        log.info({ request: key, resolutionRequest: `${ns}/${rr.metadata?.name}`, resolver: rr.metadata?.labels?.['resolution.tekton.dev/type'] }, 'resolution started');
        return true;
      }
      case 'deleteResolution': {
        try {
          await this.resolutionClient.delete(ns, action.resolution.metadata?.name ?? '', action.resolution.metadata?.uid);
        } catch (e) {
          const code = statusCode(e);
          if (code !== 404 && code !== 409) throw e;
        }
        log.debug({ request: key, resolutionRequest: action.resolution.metadata?.name, why: action.why }, 'ResolutionRequest deleted');
        return true;
      }
      case 'createApproval': {
        try {
          await this.approvalClient.create(ns, action.approval);
          log.info({ request: key, approval: `${ns}/${action.approval.metadata.name}`, rule: action.approval.spec.rule }, 'approval requested');
        } catch (e) {
          if (statusCode(e) !== 409) throw e;
        }
        return true;
      }
      case 'deleteApproval': {
        try {
          await this.approvalClient.delete(ns, action.approval.metadata.name ?? '', action.approval.metadata.uid);
        } catch (e) {
          const code = statusCode(e);
          if (code !== 404 && code !== 409) throw e;
        }
        log.debug({ request: key, approval: action.approval.metadata.name, why: action.why }, 'InternalRequestApproval deleted');
        return true;
      }
      case 'deleteRequest': {
        const r = action.request;
        try {
          await kind.client.delete(r.metadata.namespace ?? '', r.metadata.name ?? '', r.metadata.uid);
          log.info({ request: key, why: action.why }, `${kind.kind.kind} deleted`);
        } catch (e) {
          const code = statusCode(e);
          if (code === 404 || code === 409) return true;
          if (code === 403) {
            // The right is granted only where the administrators chose it
            // (config/rbac/remote-ttl): a fact for decide(), which does not
            // ask again for a while; said once.
            if (this.opts.refusals.deleteDenied(remote.name, this.opts.now().getTime())) log.warn({ request: key, remote: remote.name, err: describeError(e) }, `ttlSecondsAfterFinished is set, but the controller may not delete ${kind.kind.resource.plural} on this remote cluster; apply config/rbac/remote-ttl there`);
            return true;
          }
          throw e;
        }
        return true;
      }
      case 'removeFinalizer': {
        const r = action.request;
        const at = r.metadata.finalizers?.indexOf(action.finalizer) ?? -1;
        if (at < 0) return true;
        try {
          // Only from the incarnation observed, and only that entry: if the
          // list changed meanwhile, the apiserver refuses the whole patch and
          // the change brings the key back.
          await kind.client.patchJson(r.metadata.namespace ?? '', r.metadata.name ?? '', [
            { op: 'test', path: '/metadata/uid', value: r.metadata.uid },
            { op: 'test', path: `/metadata/finalizers/${at}`, value: action.finalizer },
            { op: 'remove', path: `/metadata/finalizers/${at}` },
          ]);
          log.info({ request: key, finalizer: action.finalizer, why: action.why }, 'finalizer removed');
        } catch (e) {
          const code = statusCode(e);
          if (code === 404) return true;
          if (code === 409 || code === 422) {
            this.opts.requeueAfter(key, 1000);
            return true;
          }
          if (code === 403) {
            // Granted only where the administrators chose it (config/rbac/remote-incumbent):
            // a fact for decide(), which does not ask again for a while; said once.
            if (this.opts.refusals.finalizerDenied(remote.name, this.opts.now().getTime())) log.warn({ request: key, remote: remote.name, finalizer: action.finalizer, err: describeError(e) }, `requests on this remote cluster carry the previous controller's finalizer, which holds them when they are deleted, and the controller may not remove it; apply config/rbac/remote-incumbent there (docs/migrating.md)`);
            return true;
          }
          throw e;
        }
        return true;
      }
      case 'requeueAfter':
        this.opts.requeueAfter(key, action.ms);
        return true;
      case 'askArchive':
        this.opts.askArchive?.(key, action.pipelineRun);
        return true;
      case 'fetchLogs':
        if (!request?.metadata.uid) return false;
        this.opts.fetchLogs?.(key, request.metadata.uid, action.asked, action.pipelineRun, action.archivedLog);
        return true;
      case 'checkCommit':
        if (!request?.metadata.uid) return false;
        this.opts.checkCommit(key, request.metadata.uid, action.check);
        log.info({ request: key, repository: action.check.url, commit: action.check.commit, refs: action.check.refs }, 'commit check started');
        return true;
      case 'lookUpRef':
        if (!request?.metadata.uid) return false;
        this.opts.lookUpRef(key, request.metadata.uid, action.lookup);
        log.info({ request: key, repository: action.lookup.url, ref: action.lookup.ref }, 'ref lookup started');
        return true;
      case 'checkPath':
        if (!request?.metadata.uid) return false;
        this.opts.checkPath(key, request.metadata.uid, action.check);
        log.info({ request: key, repository: action.check.url, commit: action.check.commit, path: action.check.path }, 'path check started');
        return true;
      case 'checkServiceAccount':
        if (!request?.metadata.uid) return false;
        this.opts.checkServiceAccount(key, request.metadata.uid, action.name);
        return true;
      case 'writeStatus':
        if (!request) return false;
      {
        const written = await this.opts.writer.write(statusTarget(remote, kind), key, request, action.status, action.event, attempt);
        if (written && action.code === 'REQUEST_NOT_CLOSED') this.opts.closedWorldRefused?.();
        return written;
      }
      case 'relayAttestation':
        if (!request) return false;
        return this.opts.writer.relayAttestation(statusTarget(remote, kind), key, request, action.attestation, action.event);
      case 'cancelPipelineRun': {
        const name = action.pipelineRun.metadata.name!;
        // Where it is: ours in the controller's namespace, the Go controller's wherever it made it (--incumbent-namespace).
        const at = action.pipelineRun.metadata.namespace || ns;
        try {
          await this.prClient.patchMerge(at, name, { ...(action.annotations ? { metadata: { annotations: action.annotations } } : {}), spec: { status: 'Cancelled' } });
          log.info({ request: key, pipelineRun: `${at}/${name}`, why: action.why }, 'PipelineRun cancelled');
        } catch (e) {
          if (statusCode(e) !== 404) throw e;
        }
        return true;
      }
      case 'deletePipelineRun': {
        const name = action.pipelineRun.metadata.name!;
        const at = action.pipelineRun.metadata.namespace || ns;
        try {
          await this.prClient.delete(at, name, action.pipelineRun.metadata.uid);
        } catch (e) {
          if (statusCode(e) !== 409) throw e; // 409: precondition failed, a newer object of that name
        }
        this.opts.deleted(action.pipelineRun);
        if (action.unsigned) {
          this.opts.deletedUnsigned?.(action.unsigned, remote.metricsName);
          log.warn({ request: key, pipelineRun: `${at}/${name}`, why: action.why, unsigned: action.unsigned }, 'PipelineRun deleted without a signature of Tekton Chains');
          return true;
        }
        if (action.unarchived) {
          this.opts.prunedUnarchived?.();
          log.warn({ request: key, pipelineRun: `${at}/${name}`, why: action.why }, 'PipelineRun deleted before Tekton Results stored it');
        } else log.info({ request: key, pipelineRun: `${at}/${name}`, why: action.why }, 'PipelineRun deleted');
        return true;
      }
    }
  }
}

/** Where a request's status goes: its remote, through the client of its kind. */
function statusTarget(remote: Remote, kind: NonNullable<ReturnType<Remote['kindOf']>>): StatusTarget {
  // The writer names the remote only in metrics.
  if (kind.kind.builtIn) return { name: remote.metricsName, workspace: remote.workspace, client: kind.client, events: remote.events };
  // Another kind: what the writer reads back (the object written, a fresh
  // read after a conflict) is read as a request, as the cache reads it.
  const read = kind.kind.toRequest;
  const { group, version } = kind.kind.resource;
  const apiVersion = group ? `${group}/${version}` : version;
  return {
    name: remote.metricsName,
    workspace: remote.workspace,
    // Events are about the object of its own kind, not the request it is read as.
    events: { record: (obj, ...rest) => remote.events.record({ ...obj, apiVersion, kind: kind.kind.kind } as KubeObject, ...rest) },
    statusBody: kind.kind.statusBody,
    client: {
      replaceStatus: async (ns, name, body) => read(await kind.client.replaceStatus(ns, name, body)),
      patchStatusMerge: async (ns, name, patch) => read(await kind.client.patchStatusMerge(ns, name, patch)),
      tryGet: async (ns, name) => {
        const got = await kind.client.tryGet(ns, name);
        return got && read(got);
      },
    },
  };
}
