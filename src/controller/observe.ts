/**
 * The observation step of the reconcile: everything decide() reads about one
 * request key, gathered before it decides — the request, our PipelineRuns,
 * the installed Pipeline and Tasks, ResolutionRequests, approvals, and what
 * the controller found out (idempotency, the approver's trust, failed tasks,
 * Tekton Results' verdicts, fetched logs, commit checks, Tekton's version)
 * — with the time as a value. Its reads of other clusters are the ones the
 * observation cannot do without (failed tasks, earlier requests of an
 * idempotency key, the approver's rights); what takes longer (resolutions,
 * commit checks, Results, logs) is only read here as it stands, and started
 * by the executor when decide() says it is needed.
 */
import { holdsIncumbentFinalizer, incumbentRequestOf } from '../requests/incumbent.js';
import type { Refusals } from './refusals.js';
import type { Logger } from 'pino';
import type { InternalRequest, InternalRequestApproval } from '../api/types.js';
import { isFinished } from '../api/conditions.js';
import type { ResourceClient } from '../kube/client.js';
import type { Informer } from '../kube/informer.js';
import { LABEL_REQUEST_UID, runOutcomeOf, requestKeyOf, requestUidOf } from '../tekton/pipelinerun.js';
import type { ResolutionRequest } from '../tekton/resolve.js';
import type { Pipeline, PipelineRun, Task, TaskRun } from '../tekton/tekton-types.js';
import type { CommitChecker } from '../git/commit-checker.js';
import type { RefLookups } from '../git/ref-lookups.js';
import type { PathChecks } from '../git/path-checks.js';
import type { EffectiveConfig } from './config.js';
import type { CapacityView } from '../policy/capacity.js';
import type { Observation } from './observation.js';
import { splitKey, type Remote } from '../remotes/remote.js';
import type { RunIndex } from './run-index.js';
import type { ApprovalTrust } from './trust.js';
import type { LiveReads, Seen } from './live-reads.js';
import { ANNOTATION_LOGS, type ResultsArchive } from './results-archive.js';
import type { LogRelay } from './run-logs.js';
import { decidableWhileListing } from './listing.js';
import { failedTasksOf } from './failed-tasks.js';
import { earlierOf } from './idempotency-lookups.js';
import { idempotencyKeyOf } from '../requests/idempotency.js';
import { installedPipelineName, requestedServiceAccount } from './requested-run.js';
import type { ServiceAccountChecks } from './service-accounts.js';
import { resolverRefusal, type TektonVersionState } from './tekton-version.js';

/** What the observation step reads: the controller's caches and the parts that know things. */
export interface ObserveSources {
  namespace: string;
  config(): EffectiveConfig;
  now(): Date;
  log: Logger;
  runs: Pick<RunIndex, 'forRequest'>;
  pipelines: Pick<Informer<Pipeline>, 'get'>;
  tasks: Pick<Informer<Task>, 'list'>;
  resolutions: Pick<Informer<ResolutionRequest>, 'list'>;
  approvals: Pick<Informer<InternalRequestApproval>, 'list'>;
  taskRuns: ResourceClient<TaskRun>;
  trust: ApprovalTrust;
  /** Where the requests that share an idempotency key are found (idempotency-lookups.ts). */
  sameKeyRequests: Parameters<typeof earlierOf>[0];
  capacity(): CapacityView;
  archive?: Pick<ResultsArchive, 'known'>;
  logs: Pick<LogRelay, 'known'>;
  commits: Pick<CommitChecker, 'answersFor'>;
  refs: Pick<RefLookups, 'answersFor'>;
  /** What the repositories said of the files git references read (path-checks.ts). */
  paths: Pick<PathChecks, 'answersFor'>;
  /** What is known of the ServiceAccounts requests name (service-accounts.ts). */
  serviceAccounts: Pick<ServiceAccountChecks, 'known'>;
  tektonVersion?: () => TektonVersionState;
  refuseResolversOnAdvisory: boolean;
  /** --drain: new requests are left for the Go controller (a rollback: docs/migrating.md). */
  drain?: boolean;
  refusals: Pick<Refusals, 'of' | 'deletesDeniedOn' | 'finalizersDeniedOn'>;
  /** The incumbent Go controller's runs, on the remote it served (requests/incumbent.ts). */
  incumbent?: { remote: string; runs(): Iterable<PipelineRun>; /** Why its runs cannot all be looked at now (its namespace cannot be listed), or undefined. */ unreadable?(): string | undefined };
}

/**
 * Everything decide() reads about one key, gathered first: the request,
 * our PipelineRuns, the Pipeline, resolutions, approvals and what the
 * controller found out (idempotency, trust, failed tasks, Results, logs,
 * commit checks, Tekton's version). Undefined when nothing may be decided
 * yet (the kind's first list is not in).
 */
/**
 * What one reconcile already asked of the clusters while observing (the
 * failed TaskRuns of a run, the earlier requests of an idempotency key, an
 * approval's trust), by what it asked about: the loop observes again after
 * each live read, and asks nothing twice.
 */
export type ObserveMemo = Map<string, Promise<unknown>>;

function once<T>(memo: ObserveMemo, key: string, ask: () => Promise<T>): Promise<T> {
  let p = memo.get(key) as Promise<T> | undefined;
  if (!p) memo.set(key, (p = ask()));
  return p;
}

export async function observe(src: ObserveSources, key: string, remote: Remote, kind: NonNullable<ReturnType<Remote['kindOf']>>, request: InternalRequest | undefined, reads: LiveReads, memo: ObserveMemo = new Map()): Promise<Seen | undefined> {
  const ns = src.namespace;
  const config = src.config();
  // Before the kind's full list is in, only what needs no history is decided
  // (listing.ts); the full list's arrival brings every key back.
  if (!kind.requests.synced && !decidableWhileListing(request, config)) return undefined;
  const uid = request?.metadata.uid;
  let prs = src.runs.forRequest(key);
  if (reads.pipelineRun && uid && !prs.some((p) => p.metadata.uid === reads.pipelineRun!.metadata.uid)) prs = [...prs, reads.pipelineRun];
  const ours = uid ? prs.find((p) => requestUidOf(p) === uid) : undefined;
  const needPipeline = request && !isFinished(request) && !ours;
  const pipelineName = installedPipelineName(request?.spec);
  const pipeline = needPipeline && pipelineName ? (src.pipelines.get(`${ns}/${pipelineName}`) ?? reads.pipeline ?? undefined) : undefined;
  let failedTasks: string[] | undefined;
  if (request && ours && !isFinished(request)) {
    const out = runOutcomeOf(ours);
    if (out.done && !out.succeeded) failedTasks = await once(memo, `failedTasks/${ours.metadata.uid}/${ours.metadata.resourceVersion}`, () => failedTasksOf(src.taskRuns, ours.metadata.namespace ?? ns, ours, src.log));
  }
  const resolutions = [...src.resolutions.list()].filter((rr) => requestKeyOf({ metadata: rr.metadata ?? {} }) === key);
  const earlier = needPipeline && request && idempotencyKeyOf(request) ? await once(memo, `earlier/${uid}/${request.metadata.resourceVersion}`, () => earlierOf(src.sameKeyRequests, { name: remote.name, client: kind.client, kind: kind.kind }, request)) : undefined;
  const approvals = [...src.approvals.list()].filter((a) => requestKeyOf({ metadata: a.metadata }) === key);
  const decided = approvals.find((a) => a.metadata.labels?.[LABEL_REQUEST_UID] === uid && a.status?.decision?.result === 'Approved');
  const approvalTrustNow = needPipeline && decided ? await once(memo, `trust/${decided.metadata.uid}/${decided.metadata.resourceVersion}`, () => src.trust.check(decided)) : undefined;
  const tasks = needPipeline ? new Map([...src.tasks.list()].map((t) => [t.metadata.name ?? '', t as unknown as Record<string, unknown>])) : undefined;
  // What Tekton Results, the log relay and the commit checker know now
  // (reads, no I/O; what is missing is a need decide() returns, and the
  // executor starts it).
  const archive = src.archive ? new Map(prs.flatMap((pr) => { const v = src.archive!.known(pr); return v ? [[pr.metadata.uid ?? '', v] as const] : []; })) : undefined;
  const asked = request?.metadata.annotations?.[ANNOTATION_LOGS];
  const logs = request && uid && asked ? src.logs.known(uid, asked) : undefined;
  const saName = needPipeline ? requestedServiceAccount(request) : undefined;
  const saAnswer = saName && uid ? src.serviceAccounts.known(saName, uid) : undefined;
  const tekton = src.tektonVersion?.();
  const refused = needPipeline && tekton ? resolverRefusal(tekton, { refuseResolversOnAdvisory: src.refuseResolversOnAdvisory }) : undefined;
  const now = src.now();
  const clustersRefused = src.refusals.of(key, uid);
  const k = splitKey(key);
  const incumbentServed = src.incumbent && remote.name === src.incumbent.remote && !k.kind;
  const incumbentRuns = incumbentServed
    ? [...src.incumbent!.runs()].filter((pr) => { const r = incumbentRequestOf(pr); return r?.namespace === k.namespace && r.name === k.name; })
    : [];
  const incumbentUnreadable = incumbentServed ? src.incumbent!.unreadable?.() : undefined;
  const observation: Observation = {
    namespace: ns,
    remote: remote.name,
    ...(kind.kind.builtIn ? {} : { kind: kind.kind }),
    ...(remote.workspace ? { workspace: remote.workspace } : {}),
    ...(remote.held ? { held: remote.held } : {}),
    request,
    pipelineRuns: prs,
    config,
    pipeline,
    now,
    resolutions,
    approvals,
    ...(earlier ? { earlier } : {}),
    ...(needPipeline && (config.capacity.maxRunning !== undefined || config.capacity.maxRunningPerNamespace !== undefined) ? { capacity: src.capacity() } : {}),
    ...(approvalTrustNow ? { approvalTrust: approvalTrustNow } : {}),
    ...(tasks ? { tasks } : {}),
    ...(needPipeline ? { installedPipelines: { get: (name: string) => src.pipelines.get(`${ns}/${name}`) } } : {}),
    ...(failedTasks ? { failedTasks } : {}),
    ...(archive ? { archive } : {}),
    ...(logs !== undefined ? { logs } : {}),
    ...(uid ? { commits: src.commits.answersFor(uid), refs: src.refs.answersFor(uid), paths: src.paths.answersFor(uid) } : {}),
    ...(refused ? { resolversRefused: refused } : {}),
    ...(clustersRefused ? { refused: clustersRefused } : {}),
    ...(incumbentRuns.length ? { incumbentRuns } : {}),
    ...(incumbentUnreadable ? { incumbentUnreadable } : {}),
    ...(src.drain ? { draining: true as const } : {}),
    ...(saName && saAnswer ? { serviceAccount: { name: saName, answer: saAnswer } } : {}),
    ...(request && isFinished(request) && src.refusals.deletesDeniedOn(remote.name, now.getTime()) ? { deletesDenied: true as const } : {}),
    ...(request && holdsIncumbentFinalizer(request) && src.refusals.finalizersDeniedOn(remote.name, now.getTime()) ? { finalizersDenied: true as const } : {}),
  };
  return { observation, ...(uid ? { uid } : {}), ...(pipelineName ? { pipelineName } : {}) };
}
