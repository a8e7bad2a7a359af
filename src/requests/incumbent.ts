/**
 * What the incumbent controller (konflux-ci/internal-services, Go,
 * controller-runtime; read at ac3f07f) writes, so that a switch from it
 * loses and doubles nothing (docs/migrating.md):
 *
 * - a request in progress is `Succeeded` = `False`, reason `Running`
 *   (`MarkRunning`, api/v1alpha1/internalrequest_types.go); its own
 *   `HasCompleted` counts False as finished only with another reason;
 * - its PipelineRun (`tekton/pipeline_run.go`) is made with
 *   `generateName: internalrequest-` in its namespace, labelled
 *   `internal-services.appstudio.openshift.io/name` and `…/namespace` with
 *   the request's name and namespace (and
 *   `pipelines.appstudio.openshift.io/type: release`); it records no uid of
 *   the request; `status.pipelineRun` (`namespace/name`) is written after
 *   the run is made, in a second status patch;
 * - every request it reconciles gets the finalizer
 *   `internal-services.appstudio.openshift.io/pipelinerun-cleanup`.
 *
 * Pure: which of the incumbent's runs belongs to a request.
 */
import type { InternalRequest } from '../api/types.js';
import { requestKey } from '../api/request-key.js';
import type { PipelineRun } from '../tekton/tekton-types.js';
import { INCUMBENT_LABEL_NAME, INCUMBENT_LABEL_NAMESPACE, LABEL_REQUEST_UID, pipelineRunName } from '../tekton/pipelinerun.js';

export const INCUMBENT_FINALIZER = 'internal-services.appstudio.openshift.io/pipelinerun-cleanup';
/** Whether the incumbent's finalizer is on the request (it stays until a controller removes it: the request cannot go before). */
export function holdsIncumbentFinalizer(req: Pick<InternalRequest, 'metadata'>): boolean {
  return req.metadata.finalizers?.includes(INCUMBENT_FINALIZER) === true;
}

/**
 * Whether the incumbent may have made a run for this request: it holds its
 * finalizer (the incumbent adds it first, before it makes a run:
 * adapter.go EnsureFinalizerIsAdded), it shows the incumbent's Running
 * (False/Running), or it names a run that is not ours. A request with none
 * of these was never reached by the incumbent's reconcile.
 */
export function mayHaveIncumbentRun(req: Pick<InternalRequest, 'metadata' | 'status'>): boolean {
  if (holdsIncumbentFinalizer(req)) return true;
  const c = req.status?.conditions?.[0];
  if (c?.type === 'Succeeded' && c.status === 'False' && c.reason === 'Running') return true;
  const named = req.status?.pipelineRun;
  return named !== undefined && named !== '' && !named.endsWith(`/${pipelineRunName(req.metadata.uid ?? '')}`);
}

/** The incumbent's runs, as a label selector (any value). */
export const INCUMBENT_SELECTOR = INCUMBENT_LABEL_NAME;

/**
 * The request (namespace, name) an incumbent run was made for; undefined
 * when it is not one. A run of this controller's (it carries the request
 * uid label) is never the incumbent's, whatever else it is labelled with.
 */
export function incumbentRequestOf(pr: Pick<PipelineRun, 'metadata'>): { namespace: string; name: string } | undefined {
  const l = pr.metadata.labels ?? {};
  if (l[LABEL_REQUEST_UID] !== undefined) return undefined;
  const name = l[INCUMBENT_LABEL_NAME];
  const namespace = l[INCUMBENT_LABEL_NAMESPACE];
  return name && namespace ? { namespace, name } : undefined;
}

/** The work-queue key of the request an incumbent run was made for, on the remote the incumbent served. */
export function incumbentKeyOf(remote: string, pr: Pick<PipelineRun, 'metadata'>): string | undefined {
  const r = incumbentRequestOf(pr);
  return r ? requestKey({ remote, namespace: r.namespace, name: r.name }) : undefined;
}

/**
 * The incumbent's run of this request, among its runs labelled with the
 * request's namespace and name. The incumbent records no uid, so a run is
 * this request's only when what it does record agrees:
 *
 * - the request names it (`status.pipelineRun`, `namespace/name`): that run;
 * - the request names none yet (the window between the incumbent's create
 *   and its status patch): the one run made after the request was created
 *   (an earlier request of the same name, deleted and made again, left
 *   older runs); two or more such runs: none (a person must look), and the
 *   caller does not start a run of its own either (`ambiguous`).
 */
export function incumbentRunOf(
  request: Pick<InternalRequest, 'metadata' | 'status'>,
  runs: readonly PipelineRun[],
): { run?: PipelineRun; ambiguous?: PipelineRun[] } {
  const mine = runs.filter((pr) => {
    const r = incumbentRequestOf(pr);
    return r !== undefined && r.name === request.metadata.name && r.namespace === request.metadata.namespace;
  });
  if (!mine.length) return {};
  const named = request.status?.pipelineRun;
  if (named) {
    const run = mine.find((pr) => `${pr.metadata.namespace}/${pr.metadata.name}` === named);
    return run ? { run } : {};
  }
  const created = Date.parse(request.metadata.creationTimestamp ?? '');
  const after = mine.filter((pr) => {
    const t = Date.parse(pr.metadata.creationTimestamp ?? '');
    return Number.isFinite(t) && Number.isFinite(created) && t >= Math.floor(created / 1000) * 1000;
  });
  if (after.length === 1) return { run: after[0]! };
  return after.length > 1 ? { ambiguous: after } : {};
}
