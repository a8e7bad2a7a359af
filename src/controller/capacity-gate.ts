/**
 * The admission scheduler: how many of our PipelineRuns run (in all and per
 * remote namespace), which queued requests come next when a slot frees, and
 * one-at-a-time decisions while a capacity is set. The fair order itself is
 * the pure fairOrder() of src/policy/capacity.ts.
 */
import { Phase, phaseOf } from '../api/conditions.js';
import type { InternalRequest } from '../api/types.js';
import { fairOrder, type CapacityView, type Waiting } from '../policy/capacity.js';
import { tenantOf } from '../policy/tenant.js';
import { LABEL_REQUEST_NAMESPACE, runOutcomeOf, remoteOf } from '../tekton/pipelinerun.js';
import type { PipelineRun } from '../tekton/tekton-types.js';
import type { EffectiveConfig } from './config.js';

/** What admission reads: our PipelineRuns, the remotes' cached requests, the capacity of the configuration. */
export interface AdmissionSources {
  /** Every PipelineRun of ours we know of (created ones the cache has not shown included). */
  pipelineRuns(): Iterable<PipelineRun>;
  /** Whether the PipelineRun cache has its first full list. */
  pipelineRunsSynced(): boolean;
  /** The remotes served, each with every cached request (of every kind) and its key. */
  remotes(): Iterable<{ readonly name: string; entries(): Iterable<[string, InternalRequest]> }>;
  capacity(): EffectiveConfig['capacity'];
  /** Looks at a request again. */
  enqueue(key: string): void;
}

export class CapacityGate {
  /** When each remote namespace last had a PipelineRun started by this instance (fair turns; not kept across restarts). */
  private readonly lastStart = new Map<string, number>();
  private scheduled = false;
  /** Serializes the decisions that may start a run while a capacity is set, so that two workers never both take the last slot. */
  private gate: Promise<void> = Promise.resolve();

  constructor(private readonly src: AdmissionSources) {}

  /** Whether a capacity is set at all. */
  get capped(): boolean {
    const cap = this.src.capacity();
    return cap.maxRunning !== undefined || cap.maxRunningPerNamespace !== undefined;
  }

  /** A PipelineRun was started for this remote namespace by this instance. */
  started(pr: PipelineRun): void {
    this.lastStart.set(tenantOf(remoteOf(pr), pr.metadata.labels?.[LABEL_REQUEST_NAMESPACE] ?? ''), Date.now());
  }

  /** Forgets a remote's fair-turn state (it is no longer served). */
  forgetRemote(remote: string): void {
    const prefix = tenantOf(remote, '');
    for (const k of [...this.lastStart.keys()]) if (k.startsWith(prefix)) this.lastStart.delete(k);
  }

  /** Remote namespaces with fair-turn state (tests, debugging). */
  get remembered(): number {
    return this.lastStart.size;
  }

  /** Runs one decision that may start a run after the ones before it. */
  serialize<T>(fn: () => Promise<T>): Promise<T> {
    const turn = this.gate.then(fn);
    this.gate = turn.then(() => undefined, () => undefined);
    return turn;
  }

  /** Our PipelineRuns not finished (created ones the cache has not shown yet included), in all and per remote namespace. */
  view(): CapacityView {
    const runningByTenant = new Map<string, number>();
    let running = 0;
    for (const pr of this.src.pipelineRuns()) {
      if (runOutcomeOf(pr).done) continue;
      running++;
      const t = tenantOf(remoteOf(pr), pr.metadata.labels?.[LABEL_REQUEST_NAMESPACE] ?? '');
      runningByTenant.set(t, (runningByTenant.get(t) ?? 0) + 1);
    }
    const waiting: Waiting[] = [];
    for (const remote of this.src.remotes()) {
      for (const [key, r] of remote.entries()) {
        if (phaseOf(r) !== Phase.Queued) continue;
        waiting.push({ key, tenant: tenantOf(remote.name, r.metadata.namespace ?? ''), created: r.metadata.creationTimestamp ?? '' });
      }
    }
    // A copy: the observation is a value, not a window on the gate's state.
    return { running, runningByTenant, waiting, lastStartByTenant: new Map(this.lastStart) };
  }

  /** A slot may have freed: the requests first in the fair order are looked at again. */
  admitNext(): void {
    const cap = this.src.capacity();
    if (cap.maxRunning === undefined && cap.maxRunningPerNamespace === undefined) return;
    const view = this.view();
    if (view.waiting.length === 0) return;
    const free = cap.maxRunning === undefined ? view.waiting.length : Math.max(0, cap.maxRunning - view.running);
    for (const key of fairOrder(view, cap).slice(0, free)) this.src.enqueue(key);
  }

  /** admitNext() once per turn of the event loop, however many PipelineRuns ended in it. */
  schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (this.src.pipelineRunsSynced()) this.admitNext();
    });
  }
}
