/**
 * SimulatedTektonExecutor: stands in for Tekton's own controller, which
 * cannot run in this environment (there is no kubelet, so no Pods, so no
 * TaskRun would ever execute). It writes PipelineRun and TaskRun status the
 * way Tekton does — through the status subresource, with the same condition
 * type/reasons/messages, results and childReferences — so the controller
 * under test sees what it would see on a real cluster. It never decides
 * anything by itself except in auto mode (startAuto), where an outcome
 * function (or a deterministic default) chooses the result.
 */
import { createHash } from 'node:crypto';
import { CustomObjectsApi, Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { statusCode } from '../../kube/client.js';
import type { LogFn } from '../log.js';

const GROUP = 'tekton.dev';
const VERSION = 'v1';
const API_VERSION = `${GROUP}/${VERSION}`;

/** A tekton.dev/v1 object as stored (spec/status kept loose on purpose). */
export interface TektonObject extends KubernetesObject {
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}
export type PipelineRunObject = TektonObject;
export type PipelineObject = TektonObject;

/** A Tekton result value: string, array of strings, or object of strings. */
export type ResultValue = string | string[] | Record<string, string>;
export type Results = Record<string, ResultValue>;

export interface FailOptions {
  /** PipelineRun condition reason (default "Failed"). */
  reason?: string;
  /** PipelineRun condition message (default Tekton's "Tasks Completed: …" summary). */
  message?: string;
  /** Pipeline task names whose TaskRuns failed. */
  failedTasks: string[];
  /** Pipeline task names whose TaskRuns succeeded before the failure. */
  succeededTasks?: string[];
}

export type Outcome = { succeeded: true; results?: Results } | ({ succeeded: false } & Partial<FailOptions>);

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
  outcome?: (pr: PipelineRunObject, pipeline: PipelineObject | undefined) => Outcome | Promise<Outcome>;
}

export interface AutoHandle {
  /** Stops watching, cancels pending completions, waits for writes in flight. */
  stop(): Promise<void>;
  /** Number of PipelineRuns brought to a final status so far. */
  readonly completed: number;
}

interface Condition {
  type: 'Succeeded';
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
}

/** An entry of PipelineRun status.childReferences. */
export interface ChildReference {
  apiVersion: string;
  kind: 'TaskRun';
  name: string;
  pipelineTaskName: string;
}

interface PipelineTask {
  name: string;
  memberOf: 'tasks' | 'finally';
  taskRef?: unknown;
  taskSpec?: unknown;
}

/**
 * A TaskRun's taskSpec from a pipeline task's embedded one, which may also
 * carry metadata (and, for custom tasks, apiVersion/kind/spec) that a
 * TaskSpec does not have; Tekton's webhook refuses those fields.
 */
function taskSpecOf(embedded: unknown): unknown {
  if (!isRecord(embedded)) return embedded;
  const { metadata: _m, apiVersion: _a, kind: _k, spec: _s, ...taskSpec } = embedded;
  return taskSpec;
}

/** Kubernetes' metav1.Time format: RFC 3339, seconds precision. */
function now(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function succeededCondition(obj: TektonObject): Partial<Condition> | undefined {
  const conds = obj.status?.['conditions'];
  if (!Array.isArray(conds)) return undefined;
  return (conds as unknown[]).find(
    (c): c is Partial<Condition> => isRecord(c) && c['type'] === 'Succeeded',
  );
}

/** True once the run has a final Succeeded condition (True or False). */
export function isTerminal(obj: TektonObject): boolean {
  const s = succeededCondition(obj)?.status;
  return s === 'True' || s === 'False';
}

function tasksSummary(completed: number, failed: number, cancelled: number, skipped: number): string {
  // Tekton's exact wording, including the missing colon after "Cancelled".
  return `Tasks Completed: ${completed} (Failed: ${failed}, Cancelled ${cancelled}), Skipped: ${skipped}`;
}

const CANCEL_STATUSES = new Set(['Cancelled', 'CancelledRunFinally', 'StoppedRunFinally']);

/** Objects the caller already holds, so the executor need not read them again. */
export interface Known {
  pr?: PipelineRunObject;
  /** The run's Pipeline (undefined: none); absent key: look it up. */
  pipeline?: PipelineObject | undefined;
}

export class SimulatedTektonExecutor {
  private readonly api: CustomObjectsApi;

  /** @param kc an admin KubeConfig of the internal cluster. */
  constructor(
    private readonly kc: KubeConfig,
    private readonly log: LogFn = () => {},
  ) {
    this.api = kc.makeApiClient(CustomObjectsApi);
  }

  async getPipelineRun(namespace: string, name: string): Promise<PipelineRunObject> {
    return (await this.api.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: 'pipelineruns',
      name,
    })) as PipelineRunObject;
  }

  /** Succeeded=Unknown/Running and startTime, as Tekton writes when it starts a run. */
  async markRunning(namespace: string, name: string): Promise<PipelineRunObject> {
    // Never regress a run that already finished (e.g. completed concurrently).
    return this.writeStatus('pipelineruns', namespace, name, (status) =>
      isTerminal({ status })
        ? undefined
        : {
            ...status,
            conditions: [this.condition(status, 'Unknown', 'Running', tasksSummary(0, 0, 0, 0))],
            startTime: status['startTime'] ?? now(),
          },
    );
  }

  /**
   * Completes the run successfully: one succeeded TaskRun per pipeline task
   * (tasks and finally), their childReferences, the given results, and
   * Succeeded=True/Succeeded.
   */
  async succeed(namespace: string, name: string, results: Results = {}, known: Known = {}): Promise<PipelineRunObject> {
    const pr = known.pr ?? (await this.getPipelineRun(namespace, name));
    const tasks = await this.pipelineTasks(pr, known);
    const children: ChildReference[] = [];
    for (const task of tasks) children.push(await this.ensureTaskRun(pr, task, true));
    return this.writeStatus('pipelineruns', namespace, name, (status) => ({
      ...status,
      conditions: [this.condition(status, 'True', 'Succeeded', tasksSummary(tasks.length, 0, 0, 0))],
      startTime: status['startTime'] ?? now(),
      completionTime: now(),
      results: Object.entries(results).map(([resultName, value]) => ({ name: resultName, value })),
      childReferences: children,
    }), known.pr);
  }

  /**
   * Completes the run as failed: TaskRuns for the failed (Succeeded=False/
   * Failed) and succeeded tasks, the remaining regular tasks reported as
   * skipped, and Succeeded=False with `reason` (default "Failed").
   */
  async fail(namespace: string, name: string, opts: FailOptions, known: Known = {}): Promise<PipelineRunObject> {
    const pr = known.pr ?? (await this.getPipelineRun(namespace, name));
    const tasks = await this.pipelineTasks(pr, known);
    const byName = new Map(tasks.map((t) => [t.name, t]));
    const taskFor = (n: string): PipelineTask => byName.get(n) ?? { name: n, memberOf: 'tasks' };
    const succeeded = opts.succeededTasks ?? [];
    const children: ChildReference[] = [];
    for (const n of succeeded) children.push(await this.ensureTaskRun(pr, taskFor(n), true));
    for (const n of opts.failedTasks) children.push(await this.ensureTaskRun(pr, taskFor(n), false));
    const ran = new Set([...succeeded, ...opts.failedTasks]);
    // After a failure Tekton starts no further regular tasks; it lists them
    // as skipped with this reason.
    const skipped = tasks.filter((t) => t.memberOf === 'tasks' && !ran.has(t.name));
    const message =
      opts.message ?? tasksSummary(succeeded.length + opts.failedTasks.length, opts.failedTasks.length, 0, skipped.length);
    return this.writeStatus('pipelineruns', namespace, name, (status) => ({
      ...status,
      conditions: [this.condition(status, 'False', opts.reason ?? 'Failed', message)],
      startTime: status['startTime'] ?? now(),
      completionTime: now(),
      childReferences: children,
      ...(skipped.length > 0
        ? { skippedTasks: skipped.map((t) => ({ name: t.name, reason: 'PipelineRun was stopping' })) }
        : {}),
    }), known.pr);
  }

  /** What Tekton writes once a run's spec.status asks for cancellation. */
  async markCancelled(namespace: string, name: string): Promise<PipelineRunObject> {
    return this.writeStatus('pipelineruns', namespace, name, (status) => ({
      ...status,
      conditions: [this.condition(status, 'False', 'Cancelled', `PipelineRun "${name}" was cancelled`)],
      startTime: status['startTime'] ?? now(),
      completionTime: now(),
    }));
  }

  /**
   * Watches PipelineRuns in a namespace and completes each new one (see
   * AutoOptions). Runs already final are left alone; runs whose spec.status
   * is Cancelled get the Cancelled status; PipelineRunPending runs wait.
   */
  startAuto(opts: AutoOptions): AutoHandle {
    const runner = new AutoRunner(this, this.kc, opts, this.log);
    runner.start();
    return runner;
  }

  /** The referenced Pipeline, a synthetic one for an inline pipelineSpec, or undefined. */
  async resolvePipeline(pr: PipelineRunObject): Promise<PipelineObject | undefined> {
    const spec = pr.spec ?? {};
    const inline = spec['pipelineSpec'];
    if (isRecord(inline)) {
      return { apiVersion: API_VERSION, kind: 'Pipeline', metadata: { name: pr.metadata?.name ?? '' }, spec: inline };
    }
    const ref = spec['pipelineRef'];
    const refName = isRecord(ref) ? ref['name'] : undefined;
    if (typeof refName !== 'string') return undefined;
    try {
      return (await this.api.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: pr.metadata?.namespace ?? '',
        plural: 'pipelines',
        name: refName,
      })) as PipelineObject;
    } catch (err) {
      if (statusCode(err) === 404) return undefined;
      throw err;
    }
  }

  private async pipelineTasks(pr: PipelineRunObject, known: Known = {}): Promise<PipelineTask[]> {
    const pipeline = 'pipeline' in known ? known.pipeline : await this.resolvePipeline(pr);
    const out: PipelineTask[] = [];
    for (const memberOf of ['tasks', 'finally'] as const) {
      const list = pipeline?.spec?.[memberOf];
      if (!Array.isArray(list)) continue;
      for (const t of list as unknown[]) {
        if (isRecord(t) && typeof t['name'] === 'string') {
          out.push({ name: t['name'], memberOf, taskRef: t['taskRef'], taskSpec: t['taskSpec'] });
        }
      }
    }
    return out;
  }

  /** Creates TaskRun "<pr>-<task>" (owned by the run) if needed and gives it a final status. */
  private async ensureTaskRun(
    pr: PipelineRunObject,
    task: PipelineTask,
    succeeded: boolean,
  ): Promise<ChildReference> {
    const namespace = pr.metadata?.namespace ?? '';
    const prName = pr.metadata?.name ?? '';
    const name = `${prName}-${task.name}`;
    const pipelineRef = pr.spec?.['pipelineRef'];
    const labels: Record<string, string> = {
      'tekton.dev/pipelineRun': prName,
      'tekton.dev/pipelineTask': task.name,
      'tekton.dev/memberOf': task.memberOf,
    };
    if (isRecord(pipelineRef) && typeof pipelineRef['name'] === 'string') labels['tekton.dev/pipeline'] = pipelineRef['name'];
    const body: TektonObject = {
      apiVersion: API_VERSION,
      kind: 'TaskRun',
      metadata: {
        name,
        namespace,
        labels,
        ownerReferences: [
          {
            apiVersion: API_VERSION,
            kind: 'PipelineRun',
            name: prName,
            uid: pr.metadata?.uid ?? '',
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: task.taskSpec !== undefined ? { taskSpec: taskSpecOf(task.taskSpec) } : task.taskRef !== undefined ? { taskRef: task.taskRef } : {},
    };
    let created: TektonObject | undefined;
    try {
      created = (await this.api.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: 'taskruns', body })) as TektonObject;
    } catch (err) {
      if (statusCode(err) !== 409) throw err; // already there (e.g. a retry): just update its status
    }
    await this.writeStatus('taskruns', namespace, name, (status) => ({
      ...status,
      podName: `${name}-pod`,
      conditions: [
        this.condition(
          status,
          succeeded ? 'True' : 'False',
          succeeded ? 'Succeeded' : 'Failed',
          succeeded ? 'All Steps have completed executing' : `"step-${task.name}" exited with code 1`,
        ),
      ],
      startTime: status['startTime'] ?? now(),
      completionTime: now(),
    }), created);
    return { apiVersion: API_VERSION, kind: 'TaskRun', name, pipelineTaskName: task.name };
  }

  /** Keeps lastTransitionTime when the condition status does not change, like knative's condition manager. */
  private condition(status: Record<string, unknown>, s: Condition['status'], reason: string, message: string): Condition {
    const prev = succeededCondition({ status });
    const lastTransitionTime = prev?.status === s && typeof prev.lastTransitionTime === 'string' ? prev.lastTransitionTime : now();
    return { type: 'Succeeded', status: s, reason, message, lastTransitionTime };
  }

  /**
   * Read-modify-write of the status subresource. The replace carries the
   * resourceVersion just read, so a concurrent writer causes a 409 and we
   * retry on a fresh copy instead of overwriting its change.
   */
  private async writeStatus(
    plural: 'pipelineruns' | 'taskruns',
    namespace: string,
    name: string,
    /** Returns the new status, or undefined to leave the object as it is. */
    mutate: (status: Record<string, unknown>) => Record<string, unknown> | undefined,
    /** The object as last seen (e.g. from a watch event), to skip the first read; a stale one costs a 409 and a read. */
    known?: TektonObject,
  ): Promise<TektonObject> {
    for (let attempt = 0; ; attempt++) {
      const current =
        attempt === 0 && known
          ? known
          : ((await this.api.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural, name })) as TektonObject);
      const status = mutate(isRecord(current.status) ? current.status : {});
      if (status === undefined) return current;
      const body: TektonObject = { ...current, status };
      try {
        return (await this.api.replaceNamespacedCustomObjectStatus({
          group: GROUP,
          version: VERSION,
          namespace,
          plural,
          name,
          body,
        })) as TektonObject;
      } catch (err) {
        if (statusCode(err) === 409 && attempt < 10) {
          this.log(`executor: conflict writing ${plural}/${namespace}/${name} status, retrying`);
          continue;
        }
        throw err;
      }
    }
  }
}

/** PipelineRun spec.params as a name → value object with sorted keys. */
function sortedParams(pr: PipelineRunObject): Record<string, unknown> {
  const params = pr.spec?.['params'];
  const entries: Array<[string, unknown]> = [];
  if (Array.isArray(params)) {
    for (const p of params as unknown[]) {
      if (isRecord(p) && typeof p['name'] === 'string') entries.push([p['name'], p['value']]);
    }
  }
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(entries);
}

const MAX_DERIVED_PARAMS = 200;

/**
 * `<label>:<JSON of the sorted params>`. Past 200 characters the JSON is cut
 * and a short hash of the whole JSON appended, so values stay small (Tekton
 * results are size-limited) yet different params still give different values.
 */
function derive(label: string, paramsJson: string): string {
  if (paramsJson.length <= MAX_DERIVED_PARAMS) return `${label}:${paramsJson}`;
  const hash = createHash('sha256').update(paramsJson).digest('hex').slice(0, 12);
  return `${label}:${paramsJson.slice(0, MAX_DERIVED_PARAMS)}…${hash}`;
}

/**
 * The default auto-mode results: every result the Pipeline declares in
 * spec.results, with a value derived only from the run's params. The shape
 * follows the declaration: `type` if given, otherwise the shape of its
 * `value` (string, array, or object whose keys become the object's keys).
 */
export function deterministicResults(pr: PipelineRunObject, pipeline: PipelineObject | undefined): Results {
  const json = JSON.stringify(sortedParams(pr));
  const declared = pipeline?.spec?.['results'];
  const out: Results = {};
  if (!Array.isArray(declared)) return out;
  for (const r of declared as unknown[]) {
    if (!isRecord(r) || typeof r['name'] !== 'string') continue;
    const name = r['name'];
    const value = r['value'];
    const type = typeof r['type'] === 'string' ? r['type'] : Array.isArray(value) ? 'array' : isRecord(value) ? 'object' : 'string';
    if (type === 'array') {
      out[name] = [derive(`${name}[0]`, json)];
    } else if (type === 'object') {
      const keys = isRecord(value) ? Object.keys(value).sort() : isRecord(r['properties']) ? Object.keys(r['properties']).sort() : ['value'];
      out[name] = Object.fromEntries(keys.map((k) => [k, derive(`${name}.${k}`, json)]));
    } else {
      out[name] = derive(name, json);
    }
  }
  return out;
}

class AutoRunner implements AutoHandle {
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
    private readonly exec: SimulatedTektonExecutor,
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
    const key = isRecord(ref) && typeof ref['name'] === 'string' ? ref['name'] : undefined;
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
    const outcome: Outcome = this.opts.outcome
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
