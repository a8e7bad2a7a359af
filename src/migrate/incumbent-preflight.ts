/**
 * Never two controllers at once (docs/migrating.md): before this controller
 * serves, the Go controller it replaces (konflux-ci/internal-services) must
 * be gone from the internal cluster. The two elect their leaders with
 * different Leases, so nothing else would stop both from running every new
 * request.
 *
 * What is read, on the internal cluster (defaults from the incumbent's own
 * manifests at ac3f07f: config/default's namespace and name prefix,
 * config/manager/manager.yaml, main.go's --leader-election-id):
 *
 * - its Deployment `internal-services-controller-manager` in
 *   `internal-services-system`: any replica asked for or running refuses;
 * - its leader-election Lease `b548bb9d.redhat.com` in the same namespace
 *   (controller-runtime keeps it in the pod's namespace): a holder whose
 *   lease has not run out refuses (it stays held up to leaseDurationSeconds
 *   after the pod went, unless released).
 *
 * Neither found: clear. Either unreadable (403): not clear, since nothing
 * can be said; the message names the right to grant, or the flag to turn the
 * check off where no incumbent was ever installed.
 */
import { AppsV1Api, CoordinationV1Api, type KubeConfig, type V1Deployment, type V1Lease } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { describeError, statusCode } from '../kube/client.js';
import type { ReadinessCheck } from '../kube/informer-health.js';

export const INCUMBENT_NAMESPACE = 'internal-services-system';
export const INCUMBENT_DEPLOYMENT = 'internal-services-controller-manager';
export const INCUMBENT_LEASE = 'b548bb9d.redhat.com';

export interface IncumbentRefs {
  namespace: string;
  deployment: string;
  lease: string;
}

/** What was read: the object, `null` when not found, or the reason it could not be read. */
export type Read<T> = T | null | { error: string; forbidden: boolean };

export interface IncumbentVerdict {
  clear: boolean;
  /** What was found, as an operator reads it (and what to do when not clear). */
  message: string;
}

function failed<T>(r: Read<T>): r is { error: string; forbidden: boolean } {
  return r !== null && typeof r === 'object' && 'error' in r && 'forbidden' in r;
}

/** Whose Deployment and Lease are read, as the messages name it. */
export interface Subject {
  /** e.g. "the Go controller" */
  name: string;
  /** What is refused while it may run, and why. */
  refusal: string;
  /** What to do when its objects cannot be read. */
  unreadable: string;
}

/** The preflight's subject: the Go controller, before this one serves. */
export const GO_CONTROLLER: Subject = {
  name: 'the Go controller',
  refusal: 'not serving while the Go controller may run (two controllers would each run every new request)',
  unreadable: 'grant get on it (config/rbac/internal/cluster_role.yaml), or start with --no-incumbent-check only if no Go controller was ever installed on this cluster',
};

/** The verdict on what was read; pure (the time is an input). */
export function incumbentVerdict(refs: IncumbentRefs, deployment: Read<V1Deployment>, lease: Read<V1Lease>, now: Date, who: Subject = GO_CONTROLLER): IncumbentVerdict {
  const dep = `Deployment ${refs.namespace}/${refs.deployment}`;
  const lz = `Lease ${refs.namespace}/${refs.lease}`;
  const problems: string[] = [];
  if (failed(deployment)) {
    problems.push(deployment.forbidden
      ? `cannot tell whether ${who.name} runs: reading its ${dep} was refused (${deployment.error}); ${who.unreadable}`
      : `cannot tell whether ${who.name} runs: reading its ${dep} failed (${deployment.error})`);
  } else if (deployment) {
    const asked = deployment.spec?.replicas ?? 1;
    const running = deployment.status?.replicas ?? 0;
    const ready = deployment.status?.readyReplicas ?? 0;
    if (asked > 0 || running > 0 || ready > 0) {
      problems.push(`${who.name}'s ${dep} has ${asked} replica(s) asked for, ${running} running, ${ready} ready: scale it down (kubectl -n ${refs.namespace} scale deployment ${refs.deployment} --replicas=0) and wait until its pods are gone`);
    }
  }
  if (failed(lease)) {
    problems.push(lease.forbidden
      ? `cannot tell whether ${who.name} leads: reading its ${lz} was refused (${lease.error}); ${who.unreadable}`
      : `cannot tell whether ${who.name} leads: reading its ${lz} failed (${lease.error})`);
  } else if (lease?.spec?.holderIdentity) {
    const t: unknown = lease.spec.renewTime ?? lease.spec.acquireTime;
    const renewed = t instanceof Date ? t.getTime() : Date.parse(String(t ?? ''));
    const until = renewed + (lease.spec.leaseDurationSeconds ?? 15) * 1000;
    if (!Number.isFinite(renewed) || until > now.getTime()) {
      const left = Number.isFinite(renewed) ? `, held until ${new Date(until).toISOString()} unless renewed` : '';
      problems.push(`${who.name}'s ${lz} is held by ${JSON.stringify(lease.spec.holderIdentity)}${left}: its leader still acts; stop it (scale ${dep} to 0)`);
    }
  }
  if (problems.length) return { clear: false, message: `${who.refusal}: ${problems.join('; ')}` };
  const seen = [deployment ? `${dep} scaled to 0` : `no ${dep}`, lease ? `${lz} not held` : `no ${lz}`];
  return { clear: true, message: `${who.name} does not run: ${seen.join(', ')}` };
}

async function read<T>(get: () => Promise<T>): Promise<Read<T>> {
  try {
    return await get();
  } catch (e) {
    const code = statusCode(e);
    if (code === 404) return null;
    return { error: describeError(e), forbidden: code === 403 };
  }
}

/** Reads the incumbent's (or another subject's) Deployment and Lease on the internal cluster, and gives the verdict. */
export async function checkIncumbent(kc: KubeConfig, refs: IncumbentRefs, now: () => Date = () => new Date(), who: Subject = GO_CONTROLLER): Promise<IncumbentVerdict> {
  const apps = kc.makeApiClient(AppsV1Api);
  const coordination = kc.makeApiClient(CoordinationV1Api);
  const [deployment, lease] = await Promise.all([
    read(() => apps.readNamespacedDeployment({ namespace: refs.namespace, name: refs.deployment })),
    read(() => coordination.readNamespacedLease({ namespace: refs.namespace, name: refs.lease })),
  ]);
  return incumbentVerdict(refs, deployment, lease, now(), who);
}

/** What a new verdict means for a controller that serves: hold every action, take them up again, or nothing changes. Pure. */
export type Transition = 'pause' | 'resume' | undefined;
export function transitionOf(paused: boolean, v: Pick<IncumbentVerdict, 'clear'>): Transition {
  if (!v.clear && !paused) return 'pause';
  if (v.clear && paused) return 'resume';
  return undefined;
}

/** What the controller does when the incumbent comes back while it serves, and when it is gone again. */
export interface ServingHooks {
  pause(message: string): void;
  resume(message: string): void;
}

/** Something that wakes the check at once when the incumbent's objects change (incumbent-watch.ts: watches of the two by name). */
export interface Triggers {
  start(wake: () => void): void;
  stop(): Promise<void> | void;
}

/**
 * The check as the controller runs it, before and while it serves ("never
 * both, all the time"): before, it checks until the incumbent is gone
 * (every `everyMs`), saying why it waits when that changes; then it goes on
 * checking for as long as the controller runs (every `servingEveryMs`, and at
 * once when the watches show a change of the Deployment or the Lease), and
 * tells the controller to hold every action while the incumbent is back.
 * While it is not gone, the readiness line `incumbent` fails with the same
 * message, naming what came back.
 */
export class IncumbentPreflight {
  private last: IncumbentVerdict | undefined;
  private stopped = false;
  private wake: (() => void) | undefined;
  private watching = false;

  constructor(
    private readonly kc: KubeConfig,
    private readonly refs: IncumbentRefs,
    private readonly log: Logger,
    private readonly everyMs = 5_000,
    private readonly triggers?: Triggers,
    /**
     * While serving, the watches wake the check at once on any change; this
     * period is the backstop (a watch that is refused or behind, a Lease
     * that runs out, which no event announces): one GET of each object per
     * period, 10 s by default.
     */
    private readonly servingEveryMs = 10_000,
  ) {}

  private startTriggers(): void {
    if (this.watching || !this.triggers) return;
    this.watching = true;
    this.triggers.start(() => this.wake?.());
  }

  private async check(): Promise<IncumbentVerdict> {
    const v = await checkIncumbent(this.kc, this.refs);
    this.last = v;
    return v;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      this.wake = resolve;
      setTimeout(resolve, ms).unref();
    });
  }

  /** Resolves true once the incumbent is gone, false if stopped first. */
  async waitUntilClear(): Promise<boolean> {
    this.startTriggers();
    let said: string | undefined;
    for (;;) {
      if (this.stopped) return false;
      const v = await this.check();
      if (v.message !== said) {
        if (v.clear) this.log.info({ incumbent: this.refs }, v.message);
        else this.log.error({ incumbent: this.refs }, v.message);
        said = v.message;
      }
      if (v.clear) return true;
      await this.sleep(this.everyMs);
    }
  }

  /**
   * While the controller serves (after waitUntilClear): checks again and
   * again; the incumbent back (or no longer readable) pauses the
   * controller at once, gone again resumes it. Returns when stopped.
   */
  async follow(hooks: ServingHooks): Promise<void> {
    this.startTriggers();
    let paused = this.last !== undefined && !this.last.clear;
    let said = this.last?.message;
    while (!this.stopped) {
      await this.sleep(this.servingEveryMs);
      if (this.stopped) return;
      const v = await this.check();
      const t = transitionOf(paused, v);
      if (t === 'pause') {
        paused = true;
        this.log.error({ incumbent: this.refs }, `pausing: the Go controller is back while this controller serves; no request is acted on (no PipelineRun created, cancelled or deleted, no status written) until it is gone again: ${v.message}`);
        hooks.pause(v.message);
      } else if (t === 'resume') {
        paused = false;
        this.log.info({ incumbent: this.refs }, `resuming: ${v.message}`);
        hooks.resume(v.message);
      } else if (paused && v.message !== said) this.log.error({ incumbent: this.refs }, `still paused: ${v.message}`);
      said = v.message;
    }
  }

  /** 1 while the incumbent is present (or cannot be told gone), 0 once it is gone; for the gauge. */
  present(): number {
    return this.last && this.last.clear ? 0 : 1;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.triggers?.stop();
  }

  readiness(): ReadinessCheck[] {
    const v = this.last;
    return [{ name: 'incumbent', ok: v?.clear === true, required: true, detail: v?.message ?? 'checking whether the Go controller runs' }];
  }
}
