/**
 * SimulatedKubelet: plays the kubelet for Tekton's TaskRun pods, because the
 * test control plane has no nodes. It is the only simulated part of the
 * Tekton platform: the real Tekton controller creates the pods, reads what
 * this writes into their status, and does everything else itself (TaskRun
 * and PipelineRun status, results, failure reasons, timeouts, cancellation,
 * retries).
 *
 * What it writes is what a kubelet would write for a pod whose containers
 * ran Tekton's entrypoint: every init container terminated with exit code 0;
 * then the step containers one after another, each terminated with an exit
 * code and a termination message in the entrypoint's format (a JSON array of
 * {key, value, type}: the step's start time, its results, and "Skipped" for
 * steps after a failed one); finally the pod's phase.
 *
 * A step says how its simulated run goes through environment variables, so
 * the values pass through Tekton's own substitution of params first:
 *   SIMULATED_RESULT_<name>  the value the step writes to result <name>
 *                            (arrays and objects as JSON text, as a real
 *                            step writes them into $(results.<name>.path))
 *   SIMULATED_EXIT_CODE      the step's exit code (default 0)
 *   SIMULATED_FAIL           "true": exit code 1 (for $(params.x) switches)
 *   SIMULATED_DURATION       how long the step runs (Go duration: "250ms", "2s", "1m"),
 *                            "never" (the pod keeps running until Tekton
 *                            deletes it: timeouts, cancellation), or "gate":
 *                            until the pod carries the annotation
 *                            RELEASE_ANNOTATION (a test's way of saying
 *                            "finish now", see releasePods)
 * A step without them succeeds at once with no results.
 *
 * Just over 400 lines: it is one concern (a pod's life as a kubelet reports
 * it); the parts of a kubelet it does not play live beside it (node.ts
 * serves logs).
 */
import { createHash } from 'node:crypto';
import { CoreV1Api, PatchStrategy, setHeaderOptions, Watch, type KubeConfig, type V1ContainerStatus, type V1Pod } from '@kubernetes/client-node';
import { statusCode } from '../../kube/client.js';
import { rfc3339 } from '../../api/conditions.js';
import { parseDuration } from '../../util/duration.js';
import type { LogFn } from '../progress-log.js';

/** Tekton labels every pod it creates for a TaskRun with this. */
export const TEKTON_POD_SELECTOR = 'app.kubernetes.io/managed-by=tekton-pipelines';
export const RESULT_ENV_PREFIX = 'SIMULATED_RESULT_';
/** A step with SIMULATED_DURATION=gate ends once its pod has this annotation. */
export const RELEASE_ANNOTATION = 'simulated-kubelet.internal-services.test/release';
/** A kubelet keeps at most this much of a container's termination message. */
const MAX_TERMINATION_MESSAGE_BYTES = 4096;
/** Tekton's result types in a termination message. */
const TASK_RESULT = 1;
const INTERNAL_RESULT = 3;

/** What binds a pod to a node before it runs (SimulatedNode, node.ts). */
export interface PodBinder {
  /** False when the pod is gone. */
  bind(pod: V1Pod): Promise<boolean>;
}

/**
 * The imageID a kubelet reports for a container: the image's repository and
 * the digest it was pulled at. Nothing is pulled here, so the digest is made
 * up — the sha256 of the reference as written — unless the reference pins one.
 * Tekton copies it into each step's state; Tekton Chains records it as a
 * material of the run (and refuses to attest a step without one).
 */
export function simulatedImageID(image: string): string {
  if (!image) return '';
  const at = image.indexOf('@');
  if (at >= 0) return image;
  const slash = image.lastIndexOf('/');
  const colon = image.lastIndexOf(':');
  const repository = colon > slash ? image.slice(0, colon) : image;
  return `${repository}@sha256:${createHash('sha256').update(image).digest('hex')}`;
}

export interface SimulatedKubeletOptions {
  /** Default time each step runs when it does not say (default 100 ms). */
  stepMs?: number;
  /**
   * Bind each pod to this node before running it, so that its logs can be
   * read through the apiserver (see node.ts). Without it pods stay unbound
   * and pods/log answers that the pod has no node.
   */
  node?: PodBinder;
  log?: LogFn;
}

export interface StepPlan {
  container: string;
  exitCode: number;
  /** undefined: never completes; 'gate': until the pod is released. */
  durationMs: number | undefined | 'gate';
  results: Array<{ name: string; value: string }>;
}

/** How a step container will run, read from its env (see the module comment). */
export function planStep(container: { name: string; env?: Array<{ name: string; value?: string }> }, defaultMs: number): StepPlan {
  const env = new Map((container.env ?? []).map((e) => [e.name, e.value ?? '']));
  let exitCode = 0;
  const code = env.get('SIMULATED_EXIT_CODE');
  if (code !== undefined && code.trim() !== '') {
    exitCode = Number.parseInt(code, 10);
    if (!Number.isInteger(exitCode) || exitCode < 0 || exitCode > 255) exitCode = 1;
  }
  if (env.get('SIMULATED_FAIL')?.trim() === 'true' && exitCode === 0) exitCode = 1;
  const duration = env.get('SIMULATED_DURATION')?.trim();
  const durationMs =
    duration === undefined || duration === '' ? defaultMs : duration === 'never' ? undefined : duration === 'gate' ? 'gate' : (parseDuration(duration) ?? 0);
  const results: StepPlan['results'] = [];
  for (const [name, value] of env) {
    if (name.startsWith(RESULT_ENV_PREFIX) && name.length > RESULT_ENV_PREFIX.length) {
      results.push({ name: name.slice(RESULT_ENV_PREFIX.length), value });
    }
  }
  return { container: container.name, exitCode, durationMs, results };
}

/** The termination message Tekton's entrypoint leaves for a step. */
export function terminationMessage(startedAt: string, plan: StepPlan, skipped: boolean): string {
  const entries: Array<{ key: string; value: string; type: number }> = [{ key: 'StartedAt', value: startedAt, type: INTERNAL_RESULT }];
  if (skipped) entries.push({ key: 'Reason', value: 'Skipped', type: INTERNAL_RESULT });
  else for (const r of plan.results) entries.push({ key: r.name, value: r.value, type: TASK_RESULT });
  return JSON.stringify(entries);
}

const now = (): string => rfc3339(new Date());

interface PodRun {
  uid: string;
  namespace: string;
  name: string;
  /** Pending sleeps: clearing one must also settle its promise. */
  timers: Map<NodeJS.Timeout, () => void>;
  done: boolean;
  released: boolean;
  /** Called when the pod gets the release annotation. */
  onRelease?: () => void;
}

export class SimulatedKubelet {
  private readonly api: CoreV1Api;
  private readonly watch: Watch;
  private readonly runs = new Map<string, PodRun>();
  private readonly stepMs: number;
  private readonly log: LogFn;
  private readonly node: PodBinder | undefined;
  private abort: AbortController | undefined;
  private stopped = false;
  private loop: Promise<void> | undefined;
  private inFlight = new Set<Promise<void>>();
  /** Pods brought to Succeeded or Failed. */
  completed = 0;

  /** @param kc a KubeConfig allowed to watch pods and write pods/status in all namespaces. */
  constructor(kc: KubeConfig, opts: SimulatedKubeletOptions = {}) {
    this.api = kc.makeApiClient(CoreV1Api);
    this.watch = new Watch(kc);
    this.stepMs = opts.stepMs ?? 100;
    this.log = opts.log ?? (() => {});
    this.node = opts.node;
  }

  start(): void {
    this.loop ??= this.run();
  }

  /**
   * Lets the gated steps (SIMULATED_DURATION=gate) of the pods matching
   * `labelSelector` in `namespace` finish, by annotating the pods; returns
   * how many pods with gated steps were annotated (pods without one, or
   * already released, do not count).
   */
  async releasePods(namespace: string, labelSelector: string): Promise<number> {
    const pods = await this.api.listNamespacedPod({ namespace, labelSelector });
    let n = 0;
    for (const p of pods.items) {
      if (p.metadata?.annotations?.[RELEASE_ANNOTATION] !== undefined) continue;
      if (!(p.spec?.containers ?? []).some((c) => planStep(c, 0).durationMs === 'gate')) continue;
      try {
        await this.api.patchNamespacedPod(
          { namespace, name: p.metadata!.name!, body: { metadata: { annotations: { [RELEASE_ANNOTATION]: 'true' } } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
        n++;
      } catch (e) {
        if (statusCode(e) !== 404) throw e;
      }
    }
    return n;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort?.abort();
    for (const r of this.runs.values()) this.interrupt(r);
    await this.loop;
    await Promise.allSettled([...this.inFlight]);
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        const list = await this.api.listPodForAllNamespaces({ labelSelector: TEKTON_POD_SELECTOR });
        for (const pod of list.items) this.observe(pod);
        await this.watchFrom(list.metadata?.resourceVersion ?? '');
      } catch (e) {
        if (!this.stopped) this.log(`simulated kubelet: watch failed (${(e as Error).message}); relisting`);
      }
      if (!this.stopped) await new Promise((r) => setTimeout(r, 500));
    }
  }

  private watchFrom(resourceVersion: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.watch
        .watch(
          '/api/v1/pods',
          { labelSelector: TEKTON_POD_SELECTOR, resourceVersion, allowWatchBookmarks: true },
          (type, obj: V1Pod) => {
            if (type === 'ADDED' || type === 'MODIFIED') this.observe(obj);
            else if (type === 'DELETED') this.forget(obj);
          },
          (err) => (err && !this.stopped ? reject(err as Error) : resolve()),
        )
        .then((ctl) => {
          this.abort = ctl;
          if (this.stopped) ctl.abort();
        }, reject);
    });
  }

  private forget(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    const r = this.runs.get(uid);
    if (!r) return;
    r.done = true;
    this.interrupt(r);
    this.runs.delete(uid);
  }

  private observe(pod: V1Pod): void {
    const uid = pod.metadata?.uid;
    if (!uid) return;
    const known = this.runs.get(uid);
    if (known) {
      if (!known.released && pod.metadata?.annotations?.[RELEASE_ANNOTATION] !== undefined) {
        known.released = true;
        known.onRelease?.();
      }
      return;
    }
    if (pod.metadata?.deletionTimestamp) return;
    const phase = pod.status?.phase;
    if (phase === 'Succeeded' || phase === 'Failed') return;
    const r: PodRun = {
      uid,
      namespace: pod.metadata?.namespace ?? '',
      name: pod.metadata?.name ?? '',
      timers: new Map(),
      done: false,
      released: pod.metadata?.annotations?.[RELEASE_ANNOTATION] !== undefined,
    };
    this.runs.set(uid, r);
    this.track(this.simulate(pod, r));
  }

  private track(p: Promise<void>): void {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  private sleep(r: PodRun, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      if (r.done || this.stopped) return resolve(false);
      const t = setTimeout(() => {
        r.timers.delete(t);
        resolve(!r.done && !this.stopped);
      }, ms);
      r.timers.set(t, () => resolve(false));
    });
  }

  /** Ends a run's waits (sleeps and gate) at once. */
  private interrupt(r: PodRun): void {
    for (const [t, cancel] of r.timers) {
      clearTimeout(t);
      cancel();
    }
    r.timers.clear();
    r.onRelease?.();
  }

  private async simulate(pod: V1Pod, r: PodRun): Promise<void> {
    const started = now();
    const spec = pod.spec;
    if (!spec) return;
    const initStatuses: V1ContainerStatus[] = (spec.initContainers ?? []).map((c) => ({
      name: c.name,
      image: c.image ?? '',
      imageID: simulatedImageID(c.image ?? ''),
      ready: false,
      restartCount: 0,
      started: false,
      state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: new Date(started), finishedAt: new Date(started) } },
    }));
    const steps = spec.containers.filter((c) => c.name.startsWith('step-')).map((c) => planStep(c, this.stepMs));
    const statuses = new Map<string, V1ContainerStatus>(
      spec.containers.map((c) => [
        c.name,
        {
          name: c.name,
          image: c.image ?? '',
          imageID: simulatedImageID(c.image ?? ''),
          ready: true,
          restartCount: 0,
          started: true,
          state: { running: { startedAt: new Date(started) } },
        },
      ]),
    );
    const write = async (phase: string): Promise<boolean> => {
      const containerStatuses = spec.containers.map((c) => statuses.get(c.name)!);
      const ready = phase === 'Running' ? 'True' : 'False';
      // A merge patch of the status alone, as a kubelet sends: nothing else of
      // the pod (Tekton's annotations, a test's release mark) is touched.
      const body = {
        status: {
          phase,
          startTime: new Date(started),
          conditions: [
            { type: 'PodScheduled', status: 'True', lastTransitionTime: new Date(started) },
            { type: 'Initialized', status: 'True', lastTransitionTime: new Date(started) },
            { type: 'ContainersReady', status: ready, lastTransitionTime: new Date() },
            { type: 'Ready', status: ready, lastTransitionTime: new Date() },
          ],
          initContainerStatuses: initStatuses,
          containerStatuses,
        },
      };
      try {
        await this.api.patchNamespacedPodStatus({ name: r.name, namespace: r.namespace, body }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
        return true;
      } catch (e) {
        const code = statusCode(e);
        if (code === 404 || code === 409 || code === 422) {
          // Gone (Tekton deleted it: cancelled, timed out) or being deleted.
          if (code !== 404) this.log(`simulated kubelet: pod ${r.namespace}/${r.name}: status write refused (${code})`);
          r.done = true;
          return false;
        }
        throw e;
      }
    };
    try {
      if (this.node && !(await this.node.bind(pod))) return;
      if (!(await write('Running'))) return;
      let failed = false;
      for (const step of steps) {
        const stepStart = now();
        if (!failed) {
          if (step.durationMs === undefined) {
            this.log(`simulated kubelet: pod ${r.namespace}/${r.name}: ${step.container} runs until the pod is deleted`);
            return;
          }
          if (step.durationMs === 'gate') {
            if (!r.released && !r.done && !this.stopped) await new Promise<void>((resolve) => (r.onRelease = resolve));
            if (r.done || this.stopped) return;
          } else if (!(await this.sleep(r, step.durationMs))) return;
        }
        let exitCode = failed ? 1 : step.exitCode;
        let message = terminationMessage(stepStart, step, failed);
        if (Buffer.byteLength(message) > MAX_TERMINATION_MESSAGE_BYTES) {
          // What Tekton's entrypoint does when the results do not fit.
          exitCode = 1;
          message = JSON.stringify([{ key: 'StartedAt', value: stepStart, type: INTERNAL_RESULT }]);
        }
        statuses.set(step.container, {
          ...statuses.get(step.container)!,
          ready: false,
          started: false,
          state: {
            terminated: {
              exitCode,
              reason: exitCode === 0 ? 'Completed' : 'Error',
              message,
              startedAt: new Date(stepStart),
              finishedAt: new Date(),
            },
          },
        });
        if (exitCode !== 0) failed = true;
        if (!(await write('Running'))) return;
      }
      // Sidecars (if any) stop once the steps are done.
      for (const [name, s] of statuses) {
        if (s.state?.running) {
          statuses.set(name, { ...s, ready: false, started: false, state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: new Date(started), finishedAt: new Date() } } });
        }
      }
      if (await write(failed ? 'Failed' : 'Succeeded')) {
        this.completed++;
        this.log(`simulated kubelet: pod ${r.namespace}/${r.name} ${failed ? 'Failed' : 'Succeeded'}`);
      }
    } catch (e) {
      if (!this.stopped) this.log(`simulated kubelet: pod ${r.namespace}/${r.name}: ${(e as Error).message}`);
    } finally {
      r.done = true;
    }
  }
}
