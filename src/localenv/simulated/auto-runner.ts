/**
 * The simulated executor's auto mode (SimulatedTektonExecutor.startAuto):
 * lists and watches the PipelineRuns of a namespace and brings each new one
 * to a final status — Running first when there is a delay, Cancelled when
 * its spec asks for it, otherwise the outcome the caller's function (or
 * deterministicResults) chooses — retrying as Tekton's reconciler would.
 */
import { CustomObjectsApi, Watch, type KubeConfig } from '@kubernetes/client-node';
import { statusCode } from '../../kube/client.js';
import type { LogFn } from '../progress-log.js';
import { deterministicResults } from './derived-results.js';
import {
  GROUP,
  isRecord,
  isTerminal,
  VERSION,
  type FailOptions,
  type Known,
  type SimulatedOutcome,
  type PipelineObject,
  type PipelineRunObject,
  type Results,
} from './tekton-objects.js';

export interface AutoOptions {
  namespace: string;
  /**
   * Time between noticing a PipelineRun and completing it. When > 0 the run
   * is first marked Running (as Tekton does right away); with 0 it goes
   * straight to its final status (fewest writes, for benchmarks).
   */
  delayMs?: number;
  /**
   * Decides how a run ends. `pipeline` is the referenced Pipeline
   * (spec.pipelineRef.name in the same namespace), or a synthetic Pipeline
   * wrapping spec.pipelineSpec, or undefined if neither resolves.
   * Default: succeed with deterministicResults().
   */
  outcome?: (pr: PipelineRunObject, pipeline: PipelineObject | undefined) => SimulatedOutcome | Promise<SimulatedOutcome>;
}

export interface AutoHandle {
  /** Stops watching, cancels pending completions, waits for writes in flight. */
  stop(): Promise<void>;
  /** Number of PipelineRuns brought to a final status so far. */
  readonly completed: number;
}

const CANCEL_STATUSES = new Set(['Cancelled', 'CancelledRunFinally', 'StoppedRunFinally']);

/**
 * The status writes the runner makes: SimulatedTektonExecutor's (which
 * starts the runner; an interface so that the two files do not import each
 * other).
 */
export interface RunWriter {
  markRunning(namespace: string, name: string): Promise<PipelineRunObject>;
  markCancelled(namespace: string, name: string): Promise<PipelineRunObject>;
  succeed(namespace: string, name: string, results?: Results, known?: Known): Promise<PipelineRunObject>;
  fail(namespace: string, name: string, opts: FailOptions, known?: Known): Promise<PipelineRunObject>;
  resolvePipeline(pr: PipelineRunObject): Promise<PipelineObject | undefined>;
}

export class AutoRunner implements AutoHandle {
  completed = 0;
  private stopped = false;
  private watchAbort: AbortController | undefined;
  private wakeUp: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly cancelTimer = new Map<string, () => void>();
  /** UIDs already scheduled or finished (so MODIFIED events don't restart them). */
  private readonly seen = new Set<string>();
  private readonly cancelling = new Set<string>();
  private readonly inflight = new Set<Promise<void>>();
  private readonly api: CustomObjectsApi;
  private readonly delayMs: number;

  constructor(
    private readonly exec: RunWriter,
    private readonly kc: KubeConfig,
    private readonly opts: AutoOptions,
    private readonly log: LogFn,
  ) {
    this.api = kc.makeApiClient(CustomObjectsApi);
    this.delayMs = opts.delayMs ?? 0;
  }

  start(): void {
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.watchAbort?.abort();
    this.wakeUp?.();
    for (const uid of [...this.timers.keys()]) this.clearTimer(uid);
    await this.loop;
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  /** List, then watch from the list's resourceVersion; on any end of the watch, start over. */
  private async run(): Promise<void> {
    let backoff = 100;
    while (!this.stopped) {
      try {
        const list = (await this.api.listNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace: this.opts.namespace,
          plural: 'pipelineruns',
        })) as { items?: PipelineRunObject[]; metadata?: { resourceVersion?: string } };
        for (const pr of list.items ?? []) this.onEvent('ADDED', pr);
        await this.watch(list.metadata?.resourceVersion);
        backoff = 100;
      } catch (err) {
        if (this.stopped) break;
        this.log(`executor: list/watch of pipelineruns in ${this.opts.namespace} failed: ${(err as Error).message}`);
        backoff = Math.min(backoff * 2, 2000);
      }
      if (!this.stopped) await this.sleep(backoff);
    }
  }

  private watch(resourceVersion: string | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const path = `/apis/${GROUP}/${VERSION}/namespaces/${this.opts.namespace}/pipelineruns`;
      new Watch(this.kc)
        .watch(
          path,
          { resourceVersion, allowWatchBookmarks: true },
          (type: string, obj: unknown) => {
            if (type === 'ERROR') {
              // Typically 410 Gone (resourceVersion too old): re-list.
              this.watchAbort?.abort();
              return;
            }
            if (type === 'BOOKMARK' || !isRecord(obj)) return;
            this.onEvent(type, obj as PipelineRunObject);
          },
          (err: unknown) => {
            if (err && !this.stopped && !(err instanceof Error && err.name === 'AbortError')) reject(err as Error);
            else resolve();
          },
        )
        .then((ctrl) => {
          this.watchAbort = ctrl;
          if (this.stopped) ctrl.abort();
        }, reject);
    });
  }

  private onEvent(type: string, pr: PipelineRunObject): void {
    if (this.stopped) return;
    const uid = pr.metadata?.uid ?? '';
    if (type === 'DELETED') {
      this.clearTimer(uid);
      return;
    }
    if (isTerminal(pr)) {
      this.seen.add(uid);
      return;
    }
    const specStatus = pr.spec?.['status'];
    if (typeof specStatus === 'string' && CANCEL_STATUSES.has(specStatus)) {
      if (this.cancelling.has(uid)) return;
      this.cancelling.add(uid);
      this.seen.add(uid);
      this.clearTimer(uid);
      this.track(pr, async (ns, name) => {
        await this.exec.markCancelled(ns, name);
        this.completed++;
      });
      return;
    }
    if (specStatus === 'PipelineRunPending' || this.seen.has(uid)) return;
    this.seen.add(uid);
    if (this.delayMs <= 0) {
      this.track(pr, (ns, name) => this.complete(ns, name, pr));
      return;
    }
    this.track(pr, async (ns, name) => {
      const running = await this.exec.markRunning(ns, name);
      if (await this.delay(uid)) await this.complete(ns, name, running);
    });
  }

  /** Waits delayMs; resolves false if cancelled meanwhile (run cancelled or deleted, or runner stopped). */
  private delay(uid: string): Promise<boolean> {
    return new Promise((resolve) => {
      if (this.stopped) return resolve(false);
      const t = setTimeout(() => {
        this.timers.delete(uid);
        this.cancelTimer.delete(uid);
        resolve(true);
      }, this.delayMs);
      this.timers.set(uid, t);
      this.cancelTimer.set(uid, () => resolve(false));
    });
  }

  private clearTimer(uid: string): void {
    clearTimeout(this.timers.get(uid));
    this.timers.delete(uid);
    this.cancelTimer.get(uid)?.();
    this.cancelTimer.delete(uid);
  }

  /** Pipelines by name, read at most once a second: Tekton, too, reads them from a cache. */
  private readonly pipelines = new Map<string, { at: number; pipeline: Promise<PipelineObject | undefined> }>();

  private pipelineOf(pr: PipelineRunObject): Promise<PipelineObject | undefined> {
    const ref = pr.spec?.['pipelineRef'];
    const key = isRecord(ref) ? (typeof ref['name'] === 'string' ? ref['name'] : ref['resolver'] === 'cluster' ? `cluster:${JSON.stringify(ref['params'])}` : undefined) : undefined;
    if (!key) return this.exec.resolvePipeline(pr);
    const hit = this.pipelines.get(key);
    if (hit && Date.now() - hit.at < 1000) return hit.pipeline;
    const pipeline = this.exec.resolvePipeline(pr);
    this.pipelines.set(key, { at: Date.now(), pipeline });
    pipeline.catch(() => this.pipelines.delete(key));
    return pipeline;
  }

  /** Completes a run, starting from the object as last seen (a stale one costs one conflict and a read). */
  private async complete(namespace: string, name: string, seen: PipelineRunObject): Promise<void> {
    const pr = seen;
    if (isTerminal(pr) || this.cancelling.has(pr.metadata?.uid ?? '')) return;
    const pipeline = await this.pipelineOf(pr);
    const outcome: SimulatedOutcome = this.opts.outcome
      ? await this.opts.outcome(pr, pipeline)
      : { succeeded: true, results: deterministicResults(pr, pipeline) };
    if (this.stopped) return;
    const known: Known = { pr, pipeline };
    if (outcome.succeeded) await this.exec.succeed(namespace, name, outcome.results ?? {}, known);
    else await this.exec.fail(namespace, name, { ...outcome, failedTasks: outcome.failedTasks ?? [] }, known);
    this.completed++;
  }

  /** Runs a write for one PipelineRun in the background; errors are logged (a deleted run is not an error). */
  private track(pr: PipelineRunObject, fn: (namespace: string, name: string) => Promise<void>): void {
    const ns = pr.metadata?.namespace ?? this.opts.namespace;
    const name = pr.metadata?.name ?? '';
    const p = fn(ns, name)
      .catch((err: unknown) => {
        if (statusCode(err) === 404) return;
        this.log(`executor: PipelineRun ${ns}/${name}: ${(err as Error).message}; retrying in 1 s`);
        // As Tekton's reconciler would: try again (the cluster may have been unreachable).
        const uid = pr.metadata?.uid ?? '';
        this.seen.delete(uid);
        this.cancelling.delete(uid);
        setTimeout(() => this.onEvent('MODIFIED', pr), 1000).unref();
      })
      .finally(() => this.inflight.delete(p));
    this.inflight.add(p);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.wakeUp = undefined;
        resolve();
      }, ms);
      this.wakeUp = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }
}
