/**
 * The way back to the Go controller (konflux-ci/internal-services, read at
 * ac3f07f; docs/migrating.md, "Rolling back"): the plan, pure. Given the
 * requests on the remote, the PipelineRuns in this controller's namespace
 * and the Go controller's configuration, what becomes of each unfinished
 * request when the Go controller takes over, and whether that can be done
 * now without a run lost or doubled.
 *
 * What the Go controller does with a request it finds (adapter.go):
 * anything whose `Succeeded` condition is not final it takes for its own; it
 * looks the request's run up by two labels (its name and namespace) among
 * the PipelineRuns labelled `pipelines.appstudio.openshift.io/type: release`
 * (its cache, main.go), adopts the one it finds and otherwise creates one at
 * once; it reacts to a run's end only when the run's `operator-sdk/*`
 * annotations name the request (tekton/predicates.go); and its
 * MarkSucceeded/MarkFailed read `status.startTime` without a nil check
 * (metrics/internalrequest.go: a panic outside the reconciler, the process
 * dies). So:
 *
 * - no status yet: new to it as to us; it takes it (nothing to do);
 * - not started here (waiting for the configuration or a workspace, or
 *   resolving; no run): released, its status cleared, so it is new to the
 *   Go controller, which decides it under its own rules;
 * - running here (our run, a `spec.pipeline` request the Go controller's
 *   configuration allows): handed over: the run gets the Go controller's
 *   labels and annotations (it keeps ours: coming back finds it by its uid
 *   again) and the request its `startTime`, so it is adopted, not run again;
 * - following a run the Go controller made (the switch's first days): the
 *   run still carries its labels; it is its own again;
 * - anything the Go controller cannot continue blocks the rollback until it
 *   has ended here (the controller with --drain finishes it, taking nothing
 *   new): awaiting approval or queued (it would run them at once, without
 *   the approval or the capacity), following an earlier request's run (it
 *   would run the work a second time), a `spec.request` request (it
 *   dereferences a nil spec.pipeline and retries for ever), one its
 *   configuration would reject (its run would go on with nobody to write
 *   its outcome), one being deleted, and a run another PipelineRun already
 *   answers for under its labels (it would adopt whichever it lists first).
 */
import { isFinished, Phase, phaseOf, PROGRESSING, rfc3339 } from '../api/conditions.js';
import type { Condition, InternalRequest } from '../api/types.js';
import { incumbentRequestOf, incumbentRunOf } from '../requests/incumbent.js';
import { INCUMBENT_LABEL_NAME, INCUMBENT_LABEL_NAMESPACE, pipelineRunName, requestUidOf, runOutcomeOf } from '../tekton/pipelinerun.js';
import type { PipelineRun } from '../tekton/tekton-types.js';
import { incumbentAllows, type IncumbentConfigSpec } from './migrate-check.js';

/** The label of the Go controller's PipelineRun cache (main.go): a run without it is invisible to it. */
export const INCUMBENT_TYPE_LABEL = 'pipelines.appstudio.openshift.io/type';
/** operator-lib's owner annotations, which the Go controller's PipelineRun predicate reads to find the request of a run that ended. */
export const INCUMBENT_OWNER_ANNOTATION = 'operator-sdk/primary-resource';
export const INCUMBENT_OWNER_TYPE_ANNOTATION = 'operator-sdk/primary-resource-type';
export const INCUMBENT_OWNER_TYPE = 'InternalRequest.appstudio.redhat.com';

/** The message of a request handed over, in its Succeeded condition (conditions[0], which stays Unknown/Running: the requester waits). */
export const HANDED_OVER = 'handed over to the Go controller (rollback): it follows this PipelineRun and writes the outcome';

export interface RollbackInput {
  /** This controller's namespace on the internal cluster (its runs are there). */
  namespace: string;
  /** The InternalRequests on the remote the Go controller serves. */
  requests: InternalRequest[];
  /** Every PipelineRun in `namespace`: ours and any the Go controller left. */
  runs: PipelineRun[];
  /** The Go controller's configuration (its InternalServicesConfig spec); undefined: it has none and rejects every request. */
  incumbent: IncumbentConfigSpec | undefined;
  /** Where the Go controller's configuration was looked for, for messages. */
  incumbentConfig: string;
  now: Date;
}

export type RollbackStep =
  /** Nothing to write: the Go controller takes it as it is. */
  | { kind: 'take'; why: string }
  /** Clear its status: new to the Go controller. */
  | { kind: 'release'; why: string; request: InternalRequest }
  /** Label the run for the Go controller and give the request the startTime it needs. */
  | { kind: 'handOver'; why: string; request: InternalRequest; run: PipelineRun; labels: Record<string, string>; annotations: Record<string, string>; status: InternalRequest['status'] }
  /** Cannot be continued by the Go controller: the rollback waits until it ended here. */
  | { kind: 'blocked'; why: string; todo: string };

export interface RollbackRow {
  request: string;
  /** Where it stands here: its phase, "new", or "being deleted". */
  here: string;
  run?: string;
  step: RollbackStep;
}

export interface RollbackPlan {
  rows: RollbackRow[];
  counts: { unfinished: number; take: number; release: number; handOver: number; blocked: number };
  /** True when nothing blocks: the writes may be made and the Go controller started. */
  ready: boolean;
}

const label = (req: InternalRequest) => `${req.metadata.namespace}/${req.metadata.name}`;

/** The Go controller's labels and annotations for a request's run (tekton/pipeline_run.go, operator-lib's SetOwnerAnnotations). */
export function incumbentMarks(req: InternalRequest): { labels: Record<string, string>; annotations: Record<string, string> } {
  return {
    labels: { [INCUMBENT_LABEL_NAME]: req.metadata.name ?? '', [INCUMBENT_LABEL_NAMESPACE]: req.metadata.namespace ?? '', [INCUMBENT_TYPE_LABEL]: 'release' },
    annotations: { [INCUMBENT_OWNER_ANNOTATION]: label(req), [INCUMBENT_OWNER_TYPE_ANNOTATION]: INCUMBENT_OWNER_TYPE },
  };
}

/** Whether the run already carries everything the Go controller looks for. */
function marked(run: PipelineRun, want: { labels: Record<string, string>; annotations: Record<string, string> }): boolean {
  return Object.entries(want.labels).every(([k, v]) => run.metadata.labels?.[k] === v) && Object.entries(want.annotations).every(([k, v]) => run.metadata.annotations?.[k] === v);
}

/** The request's status once handed over: startTime present, the Progressing message saying who follows it now. */
/**
 * The Go controller writes only its `Succeeded` condition (by type): a
 * `Progressing` condition left on a handed-over request would stay
 * True/Running after the Go controller wrote its outcome. So it goes, and
 * who follows the request now is said in the `Succeeded` condition's
 * message (still Unknown/Running: the requester waits), which the Go
 * controller overwrites when it ends.
 */
function handedOverStatus(req: InternalRequest, now: Date): InternalRequest['status'] {
  const conditions = (req.status?.conditions ?? []).filter((c) => c.type !== PROGRESSING).map((c): Condition => (c.type === 'Succeeded' && c.status === 'Unknown' ? { ...c, message: HANDED_OVER } : c));
  return { ...req.status, conditions, startTime: req.status?.startTime ?? rfc3339(now) };
}

/** What to do about a request the Go controller would take as new but cannot run. */
const SHAPE_TODO =
  'let this controller run it to its end first (without --drain; then drain and run the rollback again), or have its requester send it again without the namespace and kind params (the Go controller adds them, and this controller accepts that shape too)';

/** Why the Go controller, taking this request as new, could not run it; undefined when it can. */
export function goCannotRun(req: InternalRequest): string | undefined {
  const ref = req.spec.pipeline?.pipelineRef;
  if (ref?.resolver !== 'cluster') return undefined;
  const given = (ref.params ?? []).map((p) => p.name).filter((n) => n === 'namespace' || n === 'kind');
  if (!given.length) return undefined;
  return `its cluster-resolver pipelineRef gives ${given.map((n) => JSON.stringify(n)).join(' and ')}, which the Go controller appends again; Tekton refuses the duplicate params and the Go controller retries for ever`;
}

function stepFor(input: RollbackInput, req: InternalRequest): { step: RollbackStep; run?: string } {
  const drain = 'run this controller with --drain until it has ended here (it takes nothing new meanwhile), then run the rollback again';
  if (req.metadata.deletionTimestamp) return { step: { kind: 'blocked', why: 'being deleted: its run is being stopped here', todo: drain } };
  const uid = req.metadata.uid ?? '';
  const ours = input.runs.find((pr) => requestUidOf(pr) === uid && pr.metadata.name === pipelineRunName(uid));
  const goRuns = input.runs.filter((pr) => incumbentRequestOf(pr) !== undefined);
  const goRun = ours ? undefined : incumbentRunOf(req, goRuns);
  const phase = phaseOf(req);
  // The Go controller appends namespace and kind to a cluster-resolver
  // reference itself: one that has them already (the shape this controller
  // asks for) would be given each twice; Tekton refuses the duplicate params
  // and the Go controller retries for ever, its finalizer on, no status.
  const unrunnable = goCannotRun(req);
  if (phase === undefined && !ours) {
    if (unrunnable) return { step: { kind: 'blocked', why: `new, in a shape the Go controller cannot run: ${unrunnable}`, todo: SHAPE_TODO } };
    return { step: { kind: 'take', why: 'new: no controller has written to it; the Go controller takes it' } };
  }
  if (goRun?.ambiguous) return { step: { kind: 'blocked', why: `the Go controller made ${goRun.ambiguous.length} PipelineRuns for it and recorded none`, todo: 'delete the ones that are not its own (docs/migrating.md)' } };
  if (goRun?.run) {
    const name = `${goRun.run.metadata.namespace}/${goRun.run.metadata.name}`;
    return { run: name, step: { kind: 'take', why: `its run ${name} is the Go controller's own (followed here since the switch): it follows it again` } };
  }
  if (!ours) {
    if (phase === Phase.WaitingForConfig || phase === Phase.WaitingForWorkspace || phase === Phase.Resolving || (phase === Phase.Running && !req.status?.pipelineRun)) {
      if (unrunnable) return { step: { kind: 'blocked', why: `${phase}, in a shape the Go controller cannot run: ${unrunnable}`, todo: SHAPE_TODO } };
      return { step: { kind: 'release', why: `${phase}: nothing of it ran here; its status is cleared and the Go controller decides it as a new request`, request: req } };
    }
    if (phase === Phase.AwaitingApproval) return { step: { kind: 'blocked', why: 'awaiting approval: the Go controller would run it at once, without the approval', todo: `approve or deny it, or wait for its approvers; ${drain}` } };
    if (phase === Phase.Queued) return { step: { kind: 'blocked', why: 'queued for capacity: the Go controller would run it at once', todo: drain } };
    if (phase === Phase.Following) return { step: { kind: 'blocked', why: 'following an earlier request with its idempotency key: the Go controller would run the same work again', todo: drain } };
    return { step: { kind: 'blocked', why: `its PipelineRun ${req.status?.pipelineRun ?? ''} is gone: this controller writes its outcome`, todo: drain } };
  }
  const name = `${ours.metadata.namespace}/${ours.metadata.name}`;
  if (req.spec.request !== undefined || !req.spec.pipeline) {
    return { run: name, step: { kind: 'blocked', why: 'a spec.request request: the Go controller reads only spec.pipeline (it would dereference a nil spec.pipeline and retry for ever)', todo: drain } };
  }
  if (!incumbentAllows(input.incumbent, req)) {
    const what = input.incumbent ? `its configuration ${input.incumbentConfig} does not allow it (its allowList, or its allowedGitResolverURLs for a git reference)` : `it has no configuration (${input.incumbentConfig} not found) and rejects every request`;
    return { run: name, step: { kind: 'blocked', why: `the Go controller would reject it and leave its run going: ${what}`, todo: `allow it there, or ${drain}` } };
  }
  const want = incumbentMarks(req);
  const others = input.runs.filter((pr) => pr !== ours && pr.metadata.labels?.[INCUMBENT_LABEL_NAME] === req.metadata.name && pr.metadata.labels?.[INCUMBENT_LABEL_NAMESPACE] === req.metadata.namespace);
  if (others.length) {
    const list = others.map((pr) => `${pr.metadata.namespace}/${pr.metadata.name}`).sort().join(', ');
    return { run: name, step: { kind: 'blocked', why: `other PipelineRuns carry the Go controller's labels for this request (${list}): it would adopt whichever it lists first`, todo: `delete ${list} (an earlier request's of the same name), or ${drain}` } };
  }
  const done = runOutcomeOf(ours).done;
  const status = handedOverStatus(req, input.now);
  const why = marked(ours, want) && req.status?.startTime && JSON.stringify(status) === JSON.stringify(req.status)
    ? `handed over already: ${name} carries the Go controller's labels`
    : `handed over: ${name} gets the Go controller's labels and annotations${req.status?.startTime ? '' : ', the request a startTime'}; the Go controller adopts it${done ? ' and writes its outcome at once (it has ended)' : ' and writes its outcome when it ends'}`;
  return { run: name, step: { kind: 'handOver', why, request: req, run: ours, ...want, status } };
}

export function planRollback(input: RollbackInput): RollbackPlan {
  const rows: RollbackRow[] = [];
  for (const req of input.requests) {
    if (isFinished(req)) continue;
    const here = req.metadata.deletionTimestamp ? 'being deleted' : (phaseOf(req) ?? 'new');
    const { step, run } = stepFor(input, req);
    rows.push({ request: label(req), here, ...(run ? { run } : {}), step });
  }
  const count = (k: RollbackStep['kind']) => rows.filter((r) => r.step.kind === k).length;
  const counts = { unfinished: rows.length, take: count('take'), release: count('release'), handOver: count('handOver'), blocked: count('blocked') };
  return { rows, counts, ready: counts.blocked === 0 };
}

/** Whether a hand-over still needs writes (a rollback run again writes nothing twice). */
export function handOverWrites(step: Extract<RollbackStep, { kind: 'handOver' }>): { run: boolean; status: boolean } {
  return { run: !marked(step.run, step), status: JSON.stringify(step.status) !== JSON.stringify(step.request.status) };
}
