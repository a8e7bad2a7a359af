/**
 * What a Controller is made with: its clusters and tuning (ControllerOptions)
 * and what it reports (ControllerMetrics).
 */
import type { CommitChecker } from '../git/commit-checker.js';
import type { RefLookups } from '../git/ref-lookups.js';
import type { PathChecks } from '../git/path-checks.js';
import type { Logger } from 'pino';
import type { InternalRequest } from '../api/types.js';
import type { Cluster } from '../kube/client.js';
import type { InformerObserver } from '../kube/informer.js';
import type { QueueObserver } from '../kube/queue.js';
import type { Action } from './actions.js';
import type { ResultsApi } from './results-client.js';
import type { RequestKind } from '../requests/request-kind.js';
import type { EventsMode } from './status-writer.js';
import type { TektonVersionState } from './tekton-version.js';

export interface ControllerMetrics {
  queue?: QueueObserver;
  informer?: InformerObserver;
  /** One reconcile of a key ended; error: it will be retried. */
  reconciled?(seconds: number, error: boolean): void;
  /** An action was carried out (or failed). */
  acted?(action: Action['type'], ok: boolean): void;
  /** A request's PipelineRun was created and its status says Running (the first time); seconds since its creation. */
  started?(req: InternalRequest, seconds: number, remote: string): void;
  /** A request reached a terminal state; seconds since its creation. */
  finished?(req: InternalRequest, reason: string, succeeded: boolean, seconds: number, remote: string): void;
  /** Number of requests whose PipelineRun is running. */
  running?(n: number): void;
  /** A finished PipelineRun was deleted before Tekton Results stored it (resultsStoreTimeout ran out). */
  prunedUnarchived?(): void;
  /** A request was Rejected by the closed-world check just before the create (REQUEST_NOT_CLOSED). */
  closedWorldRefused?(): void;
  /** With Tekton Chains: a PipelineRun was removed without a signature (timeout, failed, no-signature). */
  deletedUnsigned?(reason: string, remote: string): void;
}

export interface ControllerOptions {
  /**
   * The remote that bare namespaces of the configuration name unless
   * spec.defaultRemote says otherwise: the --remote-kubeconfig one's name.
   * Remotes themselves come from providers (src/remotes/), which the CLI
   * builds and which add them with addRemote/removeRemote.
   */
  remoteName?: string;
  /** The remote the incumbent Go controller served (default: remoteName): its in-flight runs there are followed to the end, not made again (docs/migrating.md). */
  incumbentRemote?: string;
  /**
   * The namespace the incumbent Go controller ran in and made its runs in
   * (--incumbent-namespace; its kustomize default internal-services-system):
   * its runs are followed there too, beside the controller's namespace.
   * Unset: only in the controller's namespace.
   */
  incumbentNamespace?: string;
  internal: Cluster;
  /** The controller's namespace on the internal cluster. */
  namespace: string;
  log: Logger;
  workers?: number;
  resyncPeriodMs?: number;
  /** Name of this instance in Events (e.g. the pod name). */
  instance?: string;
  now?: () => Date;
  metrics?: ControllerMetrics;
  /**
   * Which Events to record on requests: all (Running, Succeeded, Failed,
   * Rejected), warnings (Failed, Rejected) or none. Events are writes on the
   * remote cluster; busy installations may want fewer.
   */
  events?: EventsMode;
  /** The request kinds served on every remote (default: InternalRequest alone); see request-kind.ts. */
  kinds?: readonly RequestKind[];
  /**
   * Serve the typed kinds of the RequestDefinitions in the controller's
   * namespace (default true); `kinds` are then the built-in ones beside them.
   */
  definitions?: boolean;
  /**
   * Tekton Results' API (--results-url): finished PipelineRuns are pruned
   * only once it has stored them (bounded by resultsStoreTimeout), and
   * requesters' asks for logs are answered from it after pruning.
   */
  results?: ResultsApi;
  /** Looks for commits asked for by SHA in their repositories (default: one with its clones under the temporary directory). */
  commitChecker?: CommitChecker;
  /** Looks up the exact refs git references name (default: one with default settings). */
  refLookups?: RefLookups;
  /** Checks that git pathInRepo names a regular file at its commit, through no symbolic link or submodule (default: one in the commit checker's cache). */
  pathChecks?: PathChecks;
  /** Informer tuning (tests use short values). */
  informer?: { watchTimeoutSeconds?: number; backoffMaxMs?: number };
  /**
   * The internal cluster's Tekton Pipelines version and the advisories
   * against it, as last read (tekton-version.ts; --tekton-namespace). With
   * refuseResolversOnAdvisory, resolverRefusal(tektonVersion(), …) says
   * whether a request that uses a resolver is refused, and with what message.
   */
  tektonVersion?: () => TektonVersionState;
  /** --refuse-resolvers-on-advisory: refuse resolver references on a Tekton version with a known advisory, or an unknown one (default false). */
  refuseResolversOnAdvisory?: boolean;
  /**
   * --drain, before a rollback to the Go controller (docs/migrating.md): a
   * request no controller has written to is left alone (for the Go
   * controller); everything started here goes on to its end.
   */
  drain?: boolean;
}
