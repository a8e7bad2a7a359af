/**
 * What decide() reads: the Observation of one request key, gathered by
 * observe.ts before any decision (the request, our runs, the configuration,
 * what the controller found out, the time). What decide() returns is
 * actions.ts.
 */
import type { RequestRefusals } from './refusals.js';
import type { InternalRequest, InternalRequestApproval } from '../api/types.js';
import { type ArchiveVerdict, type FetchedLogs } from '../requests/archive-names.js';
import { type ResolutionRequest } from '../tekton/resolve.js';
import type { Pipeline, PipelineRun } from '../tekton/tekton-types.js';
import type { EffectiveConfig } from './config.js';
import { DEFAULT_REMOTE, tenantOf } from '../policy/tenant.js';
import { type CapacityView } from '../policy/capacity.js';
import { type Earlier } from '../requests/idempotency.js';
import type { CommitAnswer } from '../policy/source.js';
import type { RefAnswer } from '../policy/exact-ref.js';
import type { PathAnswer } from '../policy/path-check.js';
import { type RequestKind } from '../requests/request-kind.js';


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
  /**
   * Set while the remote's requests may not be decided, with why (a kcp
   * workspace whose path cannot be read yet: its rules cannot be known, and
   * nothing is decided under a guessed name). Unfinished requests wait
   * (phase WaitingForWorkspace, this message); deletes are acted on and
   * running requests followed, but no rule is applied.
   */
  held?: string;
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
  /**
   * Pipelines installed in the controller's namespace, by name (the cache):
   * what a cluster-resolver reference to that namespace reads, answered
   * without a ResolutionRequest (local-resolution.ts).
   */
  installedPipelines?: { get(name: string): Pipeline | undefined };
  /** For a failed PipelineRun: the pipeline tasks whose TaskRuns failed, each possibly followed by Tekton's message in parentheses. */
  failedTasks?: string[];
  /**
   * When the controller follows Tekton Results (--results-url): what it knows
   * of whether Results has stored each finished PipelineRun, by the run's
   * uid (absent: not asked yet). Pruning waits for it, bounded by
   * resultsStoreTimeout; an unknown or stale verdict is a need (askArchive).
   */
  archive?: ReadonlyMap<string, ArchiveVerdict>;
  /**
   * For a request whose internal-services.dev/logs annotation has not been
   * answered yet: the run's logs once fetched, 'fetching' while they are;
   * undefined: not asked yet (a need: fetchLogs).
   */
  logs?: FetchedLogs | 'fetching';
  /**
   * What the repositories said of the commits this request asks for by SHA,
   * by checkKey() (src/policy/source.ts; asked by src/git/commit-checker.ts);
   * a check not in it was not asked yet.
   */
  commits?: ReadonlyMap<string, CommitAnswer>;
  /**
   * What the repositories said of the exact refs this request's references
   * name (the commit each points at), by refLookupKey() (src/policy/exact-ref.ts;
   * asked by src/git/commit-checker.ts).
   */
  refs?: ReadonlyMap<string, RefAnswer>;
  /**
   * What the repositories said of the git pathInRepo of this request's
   * references at their commits (a regular file, through no symbolic link or
   * submodule), by pathCheckKey() (src/policy/path-check.ts; asked by
   * src/git/path-checks.ts). Set by the controller for every request: where
   * it is absent (unit tests of other rules) paths are not checked.
   */
  paths?: ReadonlyMap<string, PathAnswer>;
  /**
   * Set when resolver references must be refused (--refuse-resolvers-on-advisory
   * and a Tekton version with a known advisory, see tekton-version.ts): why.
   */
  resolversRefused?: string;
  /**
   * What the clusters refused of this request's last plan (refusals.ts):
   * the PipelineRun (internal cluster), the results (remote cluster).
   */
  refused?: RequestRefusals;
  /**
   * The incumbent Go controller's PipelineRuns labelled with this request's
   * namespace and name (on the remote it served): which is this request's
   * is decided by incumbentRunOf() (requests/incumbent.ts); the others
   * belong to an earlier request of that name, which is gone.
   */
  incumbentRuns?: PipelineRun[];
  /**
   * The incumbent's runs cannot all be looked at (its namespace cannot be
   * listed): why, and what to grant. A request with no run of ours then
   * waits: none is declared missing, none is made.
   */
  incumbentUnreadable?: string;
  /** The remote refused a delete of a finished request lately (ttlSecondsAfterFinished): none is planned for a while. */
  deletesDenied?: true;
  /**
   * Draining before a rollback to the Go controller (--drain): a request no
   * controller has written to is left for it; what started here goes on.
   */
  draining?: true;
  /** The remote refused the removal of the incumbent's finalizer lately (config/rbac/remote-incumbent not applied): none is planned for a while. */
  finalizersDenied?: true;
  /**
   * Whether the ServiceAccount the request names exists in the controller's
   * namespace on the internal cluster (service-accounts.ts); absent: not
   * asked yet (or no answer fresh enough).
   */
  serviceAccount?: { name: string; answer: ServiceAccountAnswer };
  now: Date;
}

/** What the internal cluster said of a ServiceAccount: `unknown` when it could not tell (decide() then goes on as without the check). */
export type ServiceAccountAnswer = 'present' | 'missing' | 'unknown';

/** The tenant the configuration's rules see: the workspace path on kcp, else the remote, and the namespace. */
export function policyTenant(o: Observation, namespace: string): string {
  return tenantOf(o.workspace ?? o.remote ?? DEFAULT_REMOTE, namespace);
}

