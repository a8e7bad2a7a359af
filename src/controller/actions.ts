/**
 * What decide() returns: the actions it asks the shell for (run, write,
 * cancel, delete, and the needs it starts: a resolution, a commit check, a
 * ref look-up, Results, logs), carried out by executor.ts, and the Event a
 * status write records. What decide() reads is observation.ts.
 */
import type { InternalRequest, InternalRequestApproval, InternalRequestStatus } from '../api/types.js';
import type { ErrorCode } from '../errors.js';
import type { RefLookup } from '../policy/exact-ref.js';
import type { PathCheck } from '../policy/path-check.js';
import type { CommitCheck } from '../policy/source.js';
import type { Attestation } from '../tekton/chains.js';
import type { ResolutionRequest } from '../tekton/resolve.js';
import type { StepActionCopy } from '../tekton/stepaction-copy.js';
import type { PipelineRun } from '../tekton/tekton-types.js';
import type { UnsignedReason } from './attestation.js';

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
  /** stepActions: the copies of checked StepActions its steps refer to, created first (graph.ts). */
  | { type: 'createPipelineRun'; pipelineRun: PipelineRun; stepActions?: StepActionCopy[] }
  | { type: 'writeStatus'; status: InternalRequestStatus; event?: EventSpec; code?: ErrorCode }
  | { type: 'cancelPipelineRun'; pipelineRun: PipelineRun; why: string; annotations?: Record<string, string> }
  | { type: 'deletePipelineRun'; pipelineRun: PipelineRun; why: string; unsigned?: UnsignedReason; /** Deleted before Tekton Results stored it (its bound ran out). */ unarchived?: true }
  /** Tekton Chains: add what it signed for the request's PipelineRun (or why nothing) to its status (attestation.ts). */
  | { type: 'relayAttestation'; attestation: Attestation; event: EventSpec }
  | { type: 'startResolution'; resolution: ResolutionRequest }
  /** Look for a commit in its repository (from the refs the rule allows); the key is looked at again when the answer is in. */
  | { type: 'checkCommit'; check: CommitCheck }
  /** Look up an exact ref in its repository (the commit it points at); the key is looked at again when the answer is in. */
  | { type: 'lookUpRef'; lookup: RefLookup }
  /** Check in its repository that a git pathInRepo is a regular file at the commit, through no symbolic link or submodule; the key is looked at again when the answer is in. */
  | { type: 'checkPath'; check: PathCheck }
  /** Ask whether the ServiceAccount the request names exists on the internal cluster; the key is looked at again when the answer is in. */
  | { type: 'checkServiceAccount'; name: string }
  | { type: 'createApproval'; approval: InternalRequestApproval }
  | { type: 'deleteApproval'; approval: InternalRequestApproval; why: string }
  | { type: 'deleteResolution'; resolution: ResolutionRequest; why: string }
  /**
   * Remove another controller's finalizer from the request on the remote
   * cluster (the incumbent's: requests/incumbent.ts), only from the version
   * observed and only that entry (a JSON patch that tests it first).
   */
  | { type: 'removeFinalizer'; request: InternalRequest; finalizer: string; why: string }
  /** Delete the (finished) request on the remote cluster: ttlSecondsAfterFinished. */
  | { type: 'deleteRequest'; request: InternalRequest; why: string }
  /** Ask Tekton Results (again) whether it stored this finished run; the key comes back with the answer. */
  | { type: 'askArchive'; pipelineRun: PipelineRun }
  /** Fetch the logs a requester asked for (the value of the annotation); the key comes back with them. */
  | { type: 'fetchLogs'; asked: string; pipelineRun: string; archivedLog?: string }
  /** Look at the request again after this long (a resolution's deadline), whatever else happens. */
  | { type: 'requeueAfter'; ms: number };
