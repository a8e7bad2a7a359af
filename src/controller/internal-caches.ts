/**
 * The caches of the internal cluster the controller decides on: our
 * PipelineRuns, ResolutionRequests and approvals (by label), and the
 * Pipelines and Tasks installed in the controller's namespace (slimmed);
 * and the incumbent Go controller's PipelineRuns there (by its label), so
 * that a request it started is followed, not run again (requests/incumbent.ts).
 * The InternalServicesConfig has its own (config-source.ts).
 */
import type { Logger } from 'pino';
import { INTERNAL_REQUEST_APPROVAL, type InternalRequestApproval } from '../api/types.js';
import type { Cluster } from '../kube/client.js';
import { Informer, type InformerOptions } from '../kube/informer.js';
import { OWNED_SELECTOR, requestKeyOf } from '../tekton/pipelinerun.js';
import { RESOLUTION_REQUEST, type ResolutionRequest } from '../tekton/resolve.js';
import { PIPELINE, PIPELINERUN, TASK, type Pipeline, type PipelineRun, type Task } from '../tekton/tekton-types.js';
import { slimMeta } from '../requests/cached-requests.js';
import { withoutChainsPayloads } from '../tekton/chains.js';
import { INCUMBENT_SELECTOR } from '../requests/incumbent.js';

export interface InternalCaches {
  pipelineRuns: Informer<PipelineRun>;
  pipelines: Informer<Pipeline>;
  tasks: Informer<Task>;
  approvals: Informer<InternalRequestApproval>;
  resolutions: Informer<ResolutionRequest>;
  /** The incumbent controller's PipelineRuns in the controller's namespace. */
  incumbentRuns: Informer<PipelineRun>;
  /**
   * And in its own namespace (--incumbent-namespace, where its kustomize
   * default runs it and its runs), when that is another: not waited for at
   * start (a namespace the controller may not read must not hold up the
   * rest); until it has listed, requests that may have a run there wait.
   */
  incumbentRunsThere?: Informer<PipelineRun>;
}

export interface InternalCacheHandlers {
  /** One of our PipelineRuns was added, changed or deleted. */
  pipelineRun(pr: PipelineRun, deleted: boolean): void;
  /** Look at this request key (an approval or ResolutionRequest of it changed). */
  enqueue(key: string): void;
  /** A full list of PipelineRuns or ResolutionRequests: sweep. */
  resynced(): void;
  /** One of the incumbent's PipelineRuns was added, changed or deleted. */
  incumbentRun(pr: PipelineRun): void;
}

export function internalCaches(internal: Cluster, namespace: string, log: Logger, inf: Pick<InformerOptions, 'resyncPeriodMs' | 'observer' | 'watchTimeoutSeconds' | 'backoffMaxMs'>, on: InternalCacheHandlers, incumbentNamespace?: string): InternalCaches {
  const owned = { ...inf, namespace, labelSelector: OWNED_SELECTOR, transform: slimMeta };
  const pipelineRuns = new Informer<PipelineRun>(`internal/pipelineruns`, internal.resource<PipelineRun>(PIPELINERUN), {
    onAdd: (pr) => on.pipelineRun(pr, false),
    onUpdate: (_o, pr) => on.pipelineRun(pr, false),
    onDelete: (pr) => on.pipelineRun(pr, true),
    onResync: () => on.resynced(),
  }, log, { ...owned, transform: (pr: PipelineRun) => withoutChainsPayloads(slimMeta(pr)) });
  const pipelines = new Informer<Pipeline>('internal/pipelines', internal.resource<Pipeline>(PIPELINE), {}, log, { ...inf, namespace, transform: slimMeta });
  const tasks = new Informer<Task>('internal/tasks', internal.resource<Task>(TASK), {}, log, { ...inf, namespace, transform: slimMeta });
  const onRr = (rr: { metadata?: { annotations?: Record<string, string> } }) => {
    const key = requestKeyOf({ metadata: rr.metadata ?? {} });
    if (key) on.enqueue(key);
  };
  const approvals = new Informer<InternalRequestApproval>('internal/internalrequestapprovals', internal.resource<InternalRequestApproval>(INTERNAL_REQUEST_APPROVAL), {
    onAdd: onRr,
    onUpdate: (_o, a) => onRr(a),
    onDelete: onRr,
  }, log, owned);
  const resolutions = new Informer<ResolutionRequest>('internal/resolutionrequests', internal.resource<ResolutionRequest>(RESOLUTION_REQUEST), {
    onAdd: onRr,
    onUpdate: (_o, rr) => onRr(rr),
    onDelete: onRr,
    onResync: () => on.resynced(),
  }, log, owned);
  const incumbentIn = (ns: string, name: string) => new Informer<PipelineRun>(name, internal.resource<PipelineRun>(PIPELINERUN), {
    onAdd: (pr) => on.incumbentRun(pr),
    onUpdate: (_o, pr) => on.incumbentRun(pr),
    onDelete: (pr) => on.incumbentRun(pr),
    onResync: () => on.resynced(),
  }, log, { ...inf, namespace: ns, labelSelector: INCUMBENT_SELECTOR, transform: (pr: PipelineRun) => withoutChainsPayloads(slimMeta(pr)) });
  const incumbentRuns = incumbentIn(namespace, 'internal/incumbent-pipelineruns');
  const there = incumbentNamespace && incumbentNamespace !== namespace ? { incumbentRunsThere: incumbentIn(incumbentNamespace, `internal/incumbent-pipelineruns@${incumbentNamespace}`) } : {};
  return { pipelineRuns, pipelines, tasks, approvals, resolutions, incumbentRuns, ...there };
}
