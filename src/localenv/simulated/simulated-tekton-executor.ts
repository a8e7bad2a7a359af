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
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { statusCode } from '../../kube/client.js';
import type { LogFn } from '../progress-log.js';
import { AutoRunner, type AutoHandle, type AutoOptions } from './auto-runner.js';
import {
  API_VERSION,
  GROUP,
  isRecord,
  isTerminal,
  succeededCondition,
  VERSION,
  type ChildReference,
  type Condition,
  type FailOptions,
  type Known,
  type PipelineObject,
  type PipelineRunObject,
  type Results,
  type TektonObject,
} from './tekton-objects.js';

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

function tasksSummary(completed: number, failed: number, cancelled: number, skipped: number): string {
  // Tekton's exact wording, including the missing colon after "Cancelled".
  return `Tasks Completed: ${completed} (Failed: ${failed}, Cancelled ${cancelled}), Skipped: ${skipped}`;
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
    let refName = isRecord(ref) ? ref['name'] : undefined;
    let namespace = pr.metadata?.namespace ?? '';
    // The cluster resolver's reference (as the Go controller makes it): the Pipeline its params name, where they say.
    if (isRecord(ref) && ref['resolver'] === 'cluster' && Array.isArray(ref['params'])) {
      const p = Object.fromEntries((ref['params'] as unknown[]).filter(isRecord).map((x) => [String(x['name']), x['value']]));
      if (p['kind'] !== undefined && p['kind'] !== 'pipeline') return undefined;
      refName = p['name'];
      if (typeof p['namespace'] === 'string') namespace = p['namespace'];
    }
    if (typeof refName !== 'string') return undefined;
    try {
      return (await this.api.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
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
