/**
 * A STAND-IN for the incumbent Go controller's reconcile loop
 * (konflux-ci/internal-services at ac3f07f), for the way back (issue 45):
 * the Go controller cannot be built and run in CI, so this reproduces what
 * its source does with the requests it finds, step by step, on the real
 * apiservers. What it follows:
 *
 * - what triggers a reconcile (controllers/internalrequest/controller.go):
 *   every request once when it starts (its informer's initial list), a
 *   request that appears (create), and a PipelineRun of its cache (labelled
 *   `pipelines.appstudio.openshift.io/type: release`, main.go) that goes
 *   from not done to done, for the request its `operator-sdk/primary-resource`
 *   annotation names when `operator-sdk/primary-resource-type` says
 *   InternalRequest (tekton/predicates.go, tekton/utils.go);
 * - the reconcile (adapter.go), in its order: EnsureFinalizerIsAdded (merge
 *   patch), EnsureRequestINotCompleted (HasCompleted: True, or False with a
 *   reason other than Running), EnsureConfigIsLoaded, EnsureRequestIsAllowed
 *   (allowList; MarkRejected), EnsurePipelineRunIsCreated (the run found by
 *   its two labels through the cache, Limit 1; none: created; none or not
 *   IsRunning: MarkRunning, which sets startTime only when not IsRunning),
 *   EnsureStatusIsTracked (status.pipelineRun; the run done: MarkSucceeded
 *   with its string results, or MarkFailed with its message), and
 *   EnsurePipelineRunIsDeleted (unless debug);
 * - MarkSucceeded/MarkFailed hand `status.startTime` to a metrics goroutine
 *   that dereferences it (metrics/internalrequest.go): a request finishing
 *   without one crashes the real process; here it is an error the test sees.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import type { Condition, InternalRequest } from '../../src/api/types.js';
import { INCUMBENT_FINALIZER } from '../../src/requests/incumbent.js';
import { INCUMBENT_LABEL_NAME, INCUMBENT_LABEL_NAMESPACE } from '../../src/tekton/pipelinerun.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';
import { IR, PR, simulatedStep, testPipeline } from './helpers.js';

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const TYPE_LABEL = 'pipelines.appstudio.openshift.io/type';

function succeeded(r: InternalRequest): Condition | undefined {
  return r.status?.conditions?.find((c) => c.type === 'Succeeded');
}
/** api/v1alpha1/internalrequest_types.go */
const hasCompleted = (r: InternalRequest) => { const c = succeeded(r); return c !== undefined && (c.status === 'True' || (c.status === 'False' && c.reason !== 'Running')); };
const isRunning = (r: InternalRequest) => { const c = succeeded(r); return c !== undefined && c.status !== 'True' && c.reason === 'Running'; };
const runDone = (pr: PipelineRun) => pr.status?.conditions?.some((c) => c.type === 'Succeeded' && c.status !== 'Unknown') === true;

/** operator-toolkit's SetCondition: meta.SetStatusCondition on the Succeeded type (lastTransitionTime moves only when the status does), the other conditions kept. */
function setSucceeded(conditions: Condition[] | undefined, status: 'True' | 'False', reason: string, message = ''): Condition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === 'Succeeded');
  const old = i >= 0 ? list[i] : undefined;
  const c: Condition = { ...(old ?? {}), type: 'Succeeded', status, reason, message, lastTransitionTime: old && old.status === status ? old.lastTransitionTime : now() };
  if (i >= 0) list[i] = c;
  else list.push(c);
  return list;
}

export interface StandInOptions {
  remote: KubeConfig;
  internal: KubeConfig;
  /** Its SERVICE_NAMESPACE: where it creates runs. */
  namespace: string;
  /** Its InternalServicesConfig spec. */
  config: { allowList: string[]; debug?: boolean };
}

export class IncumbentStandIn {
  /** What it did, one line each (the test prints them). */
  readonly log: string[] = [];
  /** Names of the PipelineRuns it created. */
  readonly created: string[] = [];
  /** A step the real controller would have crashed or failed on. */
  readonly errors: string[] = [];
  private seen = new Set<string>();
  private done = new Map<string, boolean>();
  private timer: NodeJS.Timeout | undefined;
  private busy = false;

  constructor(private readonly o: StandInOptions) {}

  private get remote() { return this.o.remote.makeApiClient(CustomObjectsApi); }
  private get internal() { return this.o.internal.makeApiClient(CustomObjectsApi); }

  /** Starts: every request once (the initial list), then create events and runs that end, polled every 300 ms. */
  async start(): Promise<void> {
    const runs = await this.cachedRuns();
    for (const pr of runs) this.done.set(pr.metadata.uid ?? '', runDone(pr));
    for (const r of await this.requests()) {
      this.seen.add(`${r.metadata.namespace}/${r.metadata.name}`);
      await this.reconcile(r.metadata.namespace!, r.metadata.name!);
    }
    const tick = async () => {
      if (this.busy) return;
      this.busy = true;
      try {
        for (const r of await this.requests()) {
          const k = `${r.metadata.namespace}/${r.metadata.name}`;
          if (!this.seen.has(k)) {
            this.seen.add(k);
            await this.reconcile(r.metadata.namespace!, r.metadata.name!);
          }
        }
        for (const pr of await this.cachedRuns()) {
          const uid = pr.metadata.uid ?? '';
          const was = this.done.get(uid);
          const is = runDone(pr);
          this.done.set(uid, is);
          const owner = pr.metadata.annotations?.['operator-sdk/primary-resource'];
          const type = pr.metadata.annotations?.['operator-sdk/primary-resource-type'] ?? '';
          if (was === false && is && owner && type.includes('InternalRequest')) {
            const [ns, name] = owner.split('/');
            await this.reconcile(ns!, name!);
          }
        }
      } catch (e) {
        this.errors.push(`tick: ${String(e)}`);
      } finally {
        this.busy = false;
      }
    };
    this.timer = setInterval(() => void tick(), 300);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private async requests(): Promise<InternalRequest[]> {
    return ((await this.remote.listClusterCustomObject({ ...IR })) as { items: InternalRequest[] }).items;
  }

  /** Its cache: PipelineRuns of every namespace labelled type=release (main.go). */
  private async cachedRuns(): Promise<PipelineRun[]> {
    return ((await this.internal.listClusterCustomObject({ ...PR, labelSelector: `${TYPE_LABEL}=release` })) as { items: PipelineRun[] }).items;
  }

  private async patchStatus(r: InternalRequest, status: Record<string, unknown>): Promise<InternalRequest> {
    return (await this.remote.patchNamespacedCustomObjectStatus({ ...IR, namespace: r.metadata.namespace!, name: r.metadata.name!, body: { status } }, merge)) as InternalRequest;
  }

  async reconcile(ns: string, name: string): Promise<void> {
    const key = `${ns}/${name}`;
    let r: InternalRequest;
    try {
      r = (await this.remote.getNamespacedCustomObject({ ...IR, namespace: ns, name })) as InternalRequest;
    } catch {
      return; // deleted: deletes are ignored
    }
    if (r.metadata.deletionTimestamp) return; // not exercised here
    // EnsureFinalizerIsAdded
    if (!r.metadata.finalizers?.includes(INCUMBENT_FINALIZER)) {
      r = (await this.remote.patchNamespacedCustomObject({ ...IR, namespace: ns, name, body: { metadata: { finalizers: [...(r.metadata.finalizers ?? []), INCUMBENT_FINALIZER] } } }, merge)) as InternalRequest;
    }
    // EnsureRequestINotCompleted
    if (hasCompleted(r)) return;
    // EnsureRequestIsAllowed (the git URL check reads spec.pipeline.pipelineRef: a spec.request request panics there)
    if (!this.o.config.allowList.includes(ns)) {
      await this.patchStatus(r, { conditions: setSucceeded(r.status?.conditions, 'False', 'Rejected', `the internal request namespace (${ns}) is not in the allow list`) });
      this.log.push(`${key}: Rejected`);
      return;
    }
    if (!r.spec.pipeline) {
      this.errors.push(`${key}: nil pointer dereference in ensureGitResolverURLIsAllowed (a spec.request request); it retries for ever`);
      return;
    }
    // EnsurePipelineRunIsCreated: the run by its two labels, through the cache (Limit 1).
    const mine = (await this.cachedRuns()).filter((pr) => pr.metadata.labels?.[INCUMBENT_LABEL_NAME] === name && pr.metadata.labels?.[INCUMBENT_LABEL_NAMESPACE] === ns);
    let run = mine[0];
    if (!run || !isRunning(r)) {
      if (!run) {
        run = await this.createRun(r);
        this.created.push(run.metadata.name!);
        this.done.set(run.metadata.uid ?? '', false); // its informer sees the create before any update
        this.log.push(`${key}: created PipelineRun ${run.metadata.name}`);
      } else {
        this.log.push(`${key}: adopted PipelineRun ${run.metadata.name}`);
      }
      // MarkRunning
      r = await this.patchStatus(r, { ...(isRunning(r) ? {} : { startTime: now() }), conditions: setSucceeded(r.status?.conditions, 'False', 'Running') });
    } else {
      this.log.push(`${key}: found its PipelineRun ${run.metadata.name} (running)`);
    }
    // EnsureStatusIsTracked
    r = await this.patchStatus(r, { pipelineRun: `${run.metadata.namespace}/${run.metadata.name}` });
    if (runDone(run)) {
      if (!r.status?.startTime) {
        this.errors.push(`${key}: the metrics goroutine of MarkSucceeded/MarkFailed dereferences a nil status.startTime: the real controller crashes here`);
        return;
      }
      const c = run.status?.conditions?.find((x) => x.type === 'Succeeded');
      if (c?.status === 'True') {
        const results = Object.fromEntries((run.status?.results ?? []).filter((x) => typeof x.value === 'string').map((x) => [x.name, x.value as string]));
        r = await this.patchStatus(r, { results, completionTime: now(), conditions: setSucceeded(r.status?.conditions, 'True', 'Succeeded') });
      } else {
        r = await this.patchStatus(r, { completionTime: now(), conditions: setSucceeded(r.status?.conditions, 'False', 'Failed', c?.message ?? '') });
      }
      this.log.push(`${key}: ${c?.status === 'True' ? 'Succeeded' : 'Failed'} from PipelineRun ${run.metadata.name}`);
      // EnsurePipelineRunIsDeleted
      if (!this.o.config.debug) await this.internal.deleteNamespacedCustomObject({ ...PR, namespace: run.metadata.namespace!, name: run.metadata.name! });
    }
  }

  /** tekton/pipeline_run.go: generateName internalrequest-, the request's labels and its own, the owner annotations, params, the pipelineRef (namespace added for the cluster resolver). */
  private async createRun(r: InternalRequest): Promise<PipelineRun> {
    const ref = r.spec.pipeline!.pipelineRef as { resolver: string; params: Array<{ name: string; value: string }> };
    // Appended for the cluster resolver even when the request names them (pipeline_run.go :150-167).
    const params = ref.resolver === 'cluster' ? [...ref.params, { name: 'namespace', value: r.metadata.namespace! }, { name: 'kind', value: 'pipeline' }] : ref.params;
    return (await this.internal.createNamespacedCustomObject({
      ...PR,
      namespace: this.o.namespace,
      body: {
        apiVersion: 'tekton.dev/v1',
        kind: 'PipelineRun',
        metadata: {
          generateName: 'internalrequest-',
          namespace: this.o.namespace,
          labels: { ...r.metadata.labels, [INCUMBENT_LABEL_NAME]: r.metadata.name, [INCUMBENT_LABEL_NAMESPACE]: r.metadata.namespace, [TYPE_LABEL]: 'release' },
          annotations: { 'operator-sdk/primary-resource': `${r.metadata.namespace}/${r.metadata.name}`, 'operator-sdk/primary-resource-type': 'InternalRequest.appstudio.redhat.com' },
        },
        spec: { params: Object.entries(r.spec.params ?? {}).map(([name, value]) => ({ name, value })), pipelineRef: { resolver: ref.resolver, params }, taskRunTemplate: {} },
      },
    })) as PipelineRun;
  }
}

/**
 * The REAL Go controller, for the run by hand (not in CI: it is built from
 * its source by hack/incumbent/build.sh; INCUMBENT_BIN names the binary).
 * Same surface as the stand-in: what it did (its log lines about runs), the
 * runs it created, and what went wrong (a panic, an exit).
 */
export class RealIncumbent {
  readonly log: string[] = [];
  readonly created: string[] = [];
  readonly errors: string[] = [];
  private proc: ChildProcess | undefined;

  /**
   * With `leaderElection`, it takes its Lease (b548bb9d.redhat.com) as its
   * Deployment does: controller-runtime reads the Lease's namespace from the
   * in-cluster namespace file only, so the process gets a private mount
   * namespace (unshare) with a tmpfs on /run holding that file (the
   * namespace given), and nothing on the machine is touched.
   */
  constructor(private readonly bin: string, private readonly o: { remoteKubeconfig: string; internalKubeconfig: string; namespace: string; leaderElection?: boolean }) {}

  async start(): Promise<void> {
    const args = [
      `--kubeconfig=${this.o.internalKubeconfig}`,
      `--remote-cluster-config-file=${this.o.remoteKubeconfig}`,
      '--metrics-bind-address=0',
      '--health-probe-bind-address=0',
      `--leader-elect=${this.o.leaderElection === true}`,
    ];
    const env = { ...process.env, SERVICE_NAMESPACE: this.o.namespace, KUBECONFIG: '' };
    let proc: ChildProcess;
    if (this.o.leaderElection) {
      const run = realpathSync('/var/run');
      const sa = `${run}/secrets/kubernetes.io/serviceaccount`;
      const q = (x: string) => `'${x.replace(/'/g, `'\\''`)}'`;
      const script = [`mount -t tmpfs tmpfs ${q(run)}`, `mkdir -p ${q(sa)}`, `printf %s ${q(this.o.namespace)} > ${q(`${sa}/namespace`)}`, `exec ${[this.bin, ...args].map(q).join(' ')}`].join(' && ');
      proc = spawn('unshare', [...(process.getuid?.() === 0 ? [] : ['--map-root-user']), '--mount', '--propagation', 'private', 'sh', '-c', script], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    } else {
      proc = spawn(this.bin, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    }
    this.proc = proc;
    let started!: () => void;
    const ready = new Promise<void>((r) => (started = r));
    const take = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) {
        if (!line.trim()) continue;
        if (/Starting workers/.test(line)) started();
        if (/successfully acquired lease/.test(line)) this.log.push(line.replace(/^\S+\s+/, ''));
        const made = /Created PipelineRun to handle request.*"PipelineRun\.Name": "([^"]+)"/.exec(line);
        if (made) this.created.push(made[1]!);
        if (/panic|nil pointer/i.test(line)) this.errors.push(line);
        if (/PipelineRun|Finalizer|Reconcil|ERROR/.test(line)) this.log.push(line.replace(/^\S+\s+/, ''));
      }
    };
    proc.stdout!.on('data', take);
    proc.stderr!.on('data', take);
    proc.on('exit', (code, signal) => {
      if (this.proc === proc) this.errors.push(`the Go controller exited (${code ?? signal})`);
    });
    await Promise.race([ready, new Promise((_, reject) => setTimeout(() => reject(new Error(`the Go controller did not start workers in 60 s:\n${this.log.join('\n')}`)), 60_000))]);
  }

  /** SIGTERM (its Deployment scaled down) or SIGKILL (its pod killed: its Lease stays held until it runs out). Resolves when it has exited. */
  async stop(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    const p = this.proc;
    this.proc = undefined;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const gone = new Promise<void>((r) => p.once('exit', () => r()));
    p.kill(signal);
    await gone;
  }
}

/** The Pipeline `hold` every incumbent test runs: its run ends when the test releases its pod (gated), with the result `image` = its param. */
export function holdPipeline(): ReturnType<typeof testPipeline> {
  return testPipeline('hold', {
    params: [{ name: 'image', type: 'string' }],
    tasks: [{ name: 't', params: [{ name: 'image', value: '$(params.image)' }], taskSpec: { params: [{ name: 'image', type: 'string' }], results: [{ name: 'image' }], steps: [simulatedStep('s', { SIMULATED_DURATION: 'gate', SIMULATED_RESULT_image: '$(params.image)' })] } }],
    results: [{ name: 'image', value: '$(tasks.t.results.image)' }],
  });
}
