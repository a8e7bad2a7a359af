/**
 * The keys the manager puts in the work queue by itself, not because an
 * object changed: every unfinished request at each resync and when the
 * configuration changes (decide() may revoke what runs), the request of
 * every PipelineRun and ResolutionRequest we own (the reconcile removes
 * orphans), and the StepAction copies no run refers to any more. Also what
 * is forgotten when a remote stops being served.
 */
import type { Logger } from 'pino';
import { isFinished } from '../api/conditions.js';
import { describeError, type Cluster } from '../kube/client.js';
import type { Informer } from '../kube/informer.js';
import type { WorkQueue } from '../kube/queue.js';
import type { Remote } from '../remotes/remote.js';
import { requestKeyOf } from '../tekton/pipelinerun.js';
import type { ResolutionRequest } from '../tekton/resolve.js';
import type { StepActionCopy } from '../tekton/stepaction-copy.js';
import { STEPACTION, type PipelineRun } from '../tekton/tekton-types.js';
import type { CapacityGate } from './capacity-gate.js';
import type { EffectiveConfig } from './config.js';
import type { Refusals } from './refusals.js';
import type { RunIndex } from './run-index.js';
import type { StatusWriter } from './status-writer.js';
import { sweepStepActionCopies } from './stepaction-copies.js';

export interface HousekeepingDeps {
  internal: Cluster;
  namespace: string;
  log: Logger;
  now: () => Date;
  queue: Pick<WorkQueue, 'add' | 'forgetPrefix'>;
  remotes: () => Iterable<Remote>;
  runs: Pick<RunIndex, 'requestKeys' | 'expire'>;
  pipelineRuns: Pick<Informer<PipelineRun>, 'synced' | 'list'>;
  resolutions: Pick<Informer<ResolutionRequest>, 'synced' | 'list'>;
  writer: Pick<StatusWriter, 'expire' | 'forgetRemote'>;
  capacity: Pick<CapacityGate, 'forgetRemote'>;
  refusals: Pick<Refusals, 'forgetRemote' | 'expire'>;
  config: () => EffectiveConfig;
  /** While true (the Go controller is back), the sweep removes nothing itself (the StepAction copies stay). */
  held?: () => boolean;
  /** More request keys a sweep looks at (the incumbent's runs). */
  otherKeys?: () => Iterable<string>;
}

export class Housekeeping {
  private sweepingCopies = false;

  constructor(private readonly d: HousekeepingDeps) {}

  /**
   * Every unfinished request (and, with ttlSecondsAfterFinished, the finished
   * ones), of one remote or of all: at each resync, and when the
   * configuration changes — it decides the waiting ones and may revoke
   * running ones (onRevoke: cancel).
   */
  requeueLive(only?: Remote): void {
    const ttl = this.d.config().ttlSecondsAfterFinished !== undefined;
    for (const remote of only ? [only] : this.d.remotes()) {
      for (const [key, r] of remote.entries(true)) if (ttl || !isFinished(r)) this.d.queue.add(key);
    }
  }

  /**
   * Enqueues the request of every PipelineRun (and ResolutionRequest) we own,
   * of one remote or of all: the reconcile removes orphans, of a remote that is
   * served and fully listed only. A sweep of all also removes the StepAction
   * copies no run refers to (stepaction-copies.ts).
   */
  sweep(only?: Remote): void {
    if (!this.d.pipelineRuns.synced) return;
    const mine = (key: string) => !only || key.startsWith(`${only.name}/`);
    for (const key of this.d.runs.requestKeys()) if (mine(key)) this.d.queue.add(key);
    for (const key of this.d.otherKeys?.() ?? []) if (mine(key)) this.d.queue.add(key);
    if (this.d.resolutions.synced) {
      for (const rr of this.d.resolutions.list()) {
        const key = requestKeyOf({ metadata: rr.metadata ?? {} });
        if (key && mine(key)) this.d.queue.add(key);
      }
    }
    this.d.runs.expire();
    this.d.writer.expire();
    this.d.refusals.expire(this.d.now().getTime());
    if (!only && !this.sweepingCopies && !this.d.held?.()) {
      this.sweepingCopies = true;
      sweepStepActionCopies(this.d.internal.resource<StepActionCopy>(STEPACTION), this.d.namespace, this.d.pipelineRuns.list(), this.d.now().getTime(), this.d.log)
        .catch((e: unknown) => this.d.log.warn({ err: describeError(e) }, 'could not list the StepAction copies to remove unused ones'))
        .finally(() => (this.sweepingCopies = false));
    }
  }

  /** A remote is no longer served: what was kept for it (status bookkeeping, retry counts, fair turns) goes too. */
  forgetRemote(name: string): void {
    this.d.writer.forgetRemote(name);
    this.d.queue.forgetPrefix(`${name}/`);
    this.d.capacity.forgetRemote(name);
    this.d.refusals.forgetRemote(name);
  }
}
