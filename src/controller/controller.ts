/**
 * The imperative shell around decide(): caches of the internal cluster and of
 * each remote cluster (see remote.ts), one work queue keyed by request
 * (remote/namespace/name), workers that gather an Observation, ask decide()
 * what to do, and do it.
 */
import type { Logger } from 'pino';
import { CONFIG_NAME, INTERNAL_REQUEST_APPROVAL, INTERNAL_SERVICES_CONFIG, type InternalRequest, type InternalRequestApproval, type InternalServicesConfig } from '../api/types.js';
import { approvalTrust, type ApprovalTrust } from './trust.js';
import { isFinished, Phase, phaseOf, Reason, succeededCondition } from '../api/conditions.js';
import { describeError, isRefusedObject, statusCode, type Cluster, type ResourceClient } from '../kube/client.js';
import { Informer, type InformerObserver, type ReadinessCheck } from '../kube/informer.js';
import { Remote, splitKey, type RemoteMode, type RemoteSpec } from './remote.js';
import { DEFAULT_REMOTE, tenantOf } from '../policy/tenant.js';
import { WorkQueue, type QueueObserver } from '../kube/queue.js';
import { LABEL_REQUEST_NAMESPACE, LABEL_REQUEST_UID, OWNED_SELECTOR, outcomeOf, pastTimeout, pipelineRunName, remoteOf, requestKeyOf, requestUidOf } from '../tekton/pipelinerun.js';
import { RESOLUTION_REQUEST, startResolution, type ResolutionRequest } from '../tekton/resolve.js';
import { PIPELINE, PIPELINERUN, TASK, TASKRUN, type Pipeline, type PipelineRun, type Task, type TaskRun } from '../tekton/types.js';
import { effectiveConfig, type EffectiveConfig } from './config.js';
import { ANNOTATION_SPEC_HASH, idempotencyKeyOf, LABEL_IDEMPOTENCY_KEY, specHash, type Earlier } from './idempotency.js';
import { fairOrder, type CapacityView, type Waiting } from '../policy/capacity.js';
import { installedPipelineName } from './requested.js';
import { slimMeta, slimRequest } from './slim.js';
import { decide, endWithoutResults, type Action, type EventSpec, type Observation } from './decide.js';

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
}

export interface ControllerOptions {
  /** The remote of --remote-kubeconfig, if any (more come and go with addRemote/removeRemote). */
  remote?: Cluster;
  /** Its name (default DEFAULT_REMOTE); bare namespaces in the configuration name it unless spec.defaultRemote says otherwise. */
  remoteName?: string;
  internal: Cluster;
  /** The controller's namespace on the internal cluster. */
  namespace: string;
  log: Logger;
  workers?: number;
  resyncPeriodMs?: number;
  /** How the remote requests are followed: watch (default), or poll at an interval. */
  remoteMode?: RemoteMode;
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
  /** Informer tuning (tests use short values). */
  informer?: { watchTimeoutSeconds?: number; backoffMaxMs?: number };
}

/** Failed list/watch attempts in a row after which a remote counts as unreachable, and how soon its requests are looked at again. */
const UNREACHABLE_AFTER = 2;
const UNREACHABLE_RETRY_MS = 5_000;

/** How many times a status write is retried on a conflict, each on a fresh read. */
const CONFLICT_RETRIES = 5;

export class Controller {
  /** The remote clusters, by name. */
  readonly remotes = new Map<string, Remote>();
  readonly pipelineRuns: Informer<PipelineRun>;
  readonly pipelines: Informer<Pipeline>;
  readonly configs: Informer<InternalServicesConfig>;
  /** Our ResolutionRequests (one per reference of a request being checked). */
  readonly resolutions: Informer<ResolutionRequest>;
  /** Approvals this controller made (requests whose rule requires one). */
  readonly approvals: Informer<InternalRequestApproval>;
  private readonly approvalClient: ResourceClient<InternalRequestApproval>;
  private readonly trust: ApprovalTrust;
  /** Tasks installed in the controller's namespace (their step refs are checked too). */
  readonly tasks: Informer<Task>;
  readonly queue: WorkQueue;
  private readonly prClient: ResourceClient<PipelineRun>;
  private readonly pipelineClient: ResourceClient<Pipeline>;
  private readonly taskRunClient: ResourceClient<TaskRun>;
  private readonly resolutionClient: ResourceClient<ResolutionRequest>;
  /** request key -> names of its PipelineRuns */
  private readonly prIndex = new Map<string, Set<string>>();
  /** PipelineRuns created by us that the informer has not shown yet. */
  private readonly createdOverlay = new Map<string, { pr: PipelineRun; at: number }>();
  /** PipelineRuns deleted by us (name -> uid) that the informer still shows: not deleted twice. */
  private readonly deletedOverlay = new Map<string, { uid: string | undefined; at: number }>();
  /** Requests whose status we wrote, until the informer catches up: key -> object we wrote over and result. */
  private readonly writtenOverlay = new Map<string, { basedOn: string; obj: InternalRequest }>();
  private workers: Promise<void>[] = [];
  private started = false;
  private stopping = false;
  private readonly now: () => Date;
  private readonly log: Logger;

  constructor(private readonly opts: ControllerOptions) {
    this.log = opts.log;
    this.now = opts.now ?? (() => new Date());
    const m = opts.metrics ?? {};
    // Fair turns between remote namespaces: a flood from one does not delay another's request.
    this.queue = new WorkQueue({ observer: m.queue, baseDelayMs: 50, maxDelayMs: 5 * 60_000, tenantOf: (key) => key.slice(0, key.lastIndexOf('/')) });
    this.prClient = opts.internal.resource<PipelineRun>(PIPELINERUN);
    this.pipelineClient = opts.internal.resource<Pipeline>(PIPELINE);
    this.taskRunClient = opts.internal.resource<TaskRun>(TASKRUN);
    this.resolutionClient = opts.internal.resource<ResolutionRequest>(RESOLUTION_REQUEST);
    this.approvalClient = opts.internal.resource<InternalRequestApproval>(INTERNAL_REQUEST_APPROVAL);
    this.trust = approvalTrust(opts.internal, opts.namespace);
    const inf = { resyncPeriodMs: opts.resyncPeriodMs ?? 10 * 60_000, observer: m.informer, ...opts.informer };
    this.informerOptions = inf;

    const onPr = (pr: PipelineRun, deleted = false) => {
      const key = requestKeyOf(pr);
      const name = pr.metadata.name ?? '';
      this.createdOverlay.delete(name);
      if (deleted) this.deletedOverlay.delete(name);
      if (!key) return;
      let set = this.prIndex.get(key);
      if (deleted) {
        set?.delete(name);
        if (set && set.size === 0) this.prIndex.delete(key);
      } else {
        if (!set) this.prIndex.set(key, (set = new Set()));
        set.add(name);
      }
      this.queue.add(key);
      if (deleted || outcomeOf(pr).done) this.scheduleAdmission();
    };
    this.pipelineRuns = new Informer<PipelineRun>(`internal/pipelineruns`, this.prClient, {
      onAdd: (pr) => onPr(pr),
      onUpdate: (_o, pr) => onPr(pr),
      onDelete: (pr) => onPr(pr, true),
      onResync: () => this.sweep(),
    }, this.log, { ...inf, namespace: opts.namespace, labelSelector: OWNED_SELECTOR, transform: slimMeta });

    this.pipelines = new Informer<Pipeline>('internal/pipelines', this.pipelineClient, {}, this.log, { ...inf, namespace: opts.namespace, transform: slimMeta });
    this.tasks = new Informer<Task>('internal/tasks', opts.internal.resource<Task>(TASK), {}, this.log, { ...inf, namespace: opts.namespace, transform: slimMeta });
    const onRr = (rr: { metadata?: { annotations?: Record<string, string> } }) => {
      const key = requestKeyOf({ metadata: rr.metadata ?? {} });
      if (key) this.queue.add(key);
    };
    this.approvals = new Informer<InternalRequestApproval>('internal/internalrequestapprovals', this.approvalClient, {
      onAdd: onRr,
      onUpdate: (_o, a) => onRr(a),
      onDelete: onRr,
    }, this.log, { ...inf, namespace: opts.namespace, labelSelector: OWNED_SELECTOR, transform: slimMeta });
    this.resolutions = new Informer<ResolutionRequest>('internal/resolutionrequests', this.resolutionClient, {
      onAdd: onRr,
      onUpdate: (_o, rr) => onRr(rr),
      onDelete: onRr,
      onResync: () => this.sweep(),
    }, this.log, { ...inf, namespace: opts.namespace, labelSelector: OWNED_SELECTOR, transform: slimMeta });
    this.configs = new Informer<InternalServicesConfig>(
      'internal/internalservicesconfigs',
      opts.internal.resource<InternalServicesConfig>(INTERNAL_SERVICES_CONFIG),
      {
        onAdd: (c) => {
          this.log.info({ config: effectiveSummary(c, opts.namespace, this.defaultRemote) }, 'configuration loaded');
          this.requeueLive();
        },
        onUpdate: (old, c) => {
          this.log.info({ config: effectiveSummary(c, opts.namespace, this.defaultRemote) }, 'configuration changed');
          this.requeueLive();
          // debug switched off: the PipelineRuns it kept go now, not at the next resync.
          if (old.spec?.debug === true && c.spec?.debug !== true) this.sweep();
        },
        onDelete: () => this.log.warn('configuration deleted; new requests wait (phase WaitingForConfig) until it is back'),
      },
      this.log,
      { ...inf, namespace: opts.namespace, fieldSelector: `metadata.name=${CONFIG_NAME}` },
    );
    if (opts.remote) this.addRemote({ name: opts.remoteName ?? DEFAULT_REMOTE, cluster: opts.remote, ...(opts.remoteMode ? { mode: opts.remoteMode } : {}) });
  }

  private readonly informerOptions: { resyncPeriodMs: number; observer: InformerObserver | undefined; watchTimeoutSeconds?: number; backoffMaxMs?: number };

  /**
   * Serves one more remote (or replaces the one of that name, e.g. with a
   * rotated kubeconfig). Its requests are decided once its first full list is
   * in; until then nothing of it is decided or swept.
   */
  addRemote(spec: RemoteSpec): Remote {
    const old = this.remotes.get(spec.name);
    if (old) this.dropRemote(old, 'replaced');
    const name = spec.name;
    // Requests with an idempotency key are indexed by it; a request that
    // changes brings back the others with its key (the ones that follow it).
    const idem = (r: InternalRequest) => {
      const k = idempotencyKeyOf(r);
      return k ? `${name}/${r.metadata.namespace ?? ''}/${k}` : undefined;
    };
    const index = (r: InternalRequest, add: boolean) => {
      const k = idem(r);
      if (!k) return;
      const set = this.byIdempotencyKey.get(k) ?? new Set<string>();
      if (add) set.add(remote.keyOf(r));
      else set.delete(remote.keyOf(r));
      if (set.size) this.byIdempotencyKey.set(k, set);
      else this.byIdempotencyKey.delete(k);
    };
    const enqueueWithFollowers = (r: InternalRequest) => {
      if (this.remotes.get(name) !== remote) return; // replaced or removed meanwhile
      this.queue.add(remote.keyOf(r));
      const k = idem(r);
      if (k) for (const other of this.byIdempotencyKey.get(k) ?? []) this.queue.add(other);
    };
    const remote: Remote = new Remote(
      spec,
      {
        onAdd: (r) => {
          index(r, true);
          enqueueWithFollowers(r);
        },
        onUpdate: (o, n) => {
          if (idem(o) !== idem(n)) index(o, false);
          index(n, true);
          enqueueWithFollowers(n);
        },
        onDelete: (r) => {
          index(r, false);
          enqueueWithFollowers(r);
        },
        // Every full list (the first included): look at every request again,
        // and sweep PipelineRuns whose request is gone (only ever after a full
        // list of this remote).
        onResync: () => {
          if (this.remotes.get(name) !== remote) return;
          this.requeueLive(remote);
          this.sweep(remote);
        },
      },
      this.log,
      { ...this.informerOptions, transform: slimRequest, instance: this.opts.instance ?? 'internal-services' },
    );
    this.remotes.set(name, remote);
    this.log.info({ remote: name, server: spec.cluster.server, origin: remote.origin, mode: spec.mode?.mode ?? 'watch' }, old ? 'remote cluster replaced' : 'remote cluster added');
    if (this.started) remote.requests.start();
    return remote;
  }

  /**
   * Stops serving a remote. Its PipelineRuns are left as they are (running
   * ones finish, finished ones stay): nothing of a remote that is not listed
   * is decided, and if it comes back its requests are picked up where they were.
   */
  async removeRemote(name: string): Promise<boolean> {
    const r = this.remotes.get(name);
    if (!r) return false;
    await this.dropRemote(r, 'removed');
    return true;
  }

  private dropRemote(r: Remote, why: 'removed' | 'replaced'): Promise<void> {
    if (this.remotes.get(r.name) === r) this.remotes.delete(r.name);
    const prefix = `${r.name}/`;
    for (const k of [...this.byIdempotencyKey.keys()]) if (k.startsWith(prefix)) this.byIdempotencyKey.delete(k);
    for (const k of [...this.writtenOverlay.keys()]) if (k.startsWith(prefix)) this.writtenOverlay.delete(k);
    if (why === 'removed') this.log.info({ remote: r.name, origin: r.origin }, 'remote cluster removed; its PipelineRuns are left as they are');
    return r.stop();
  }

  /** The remote of a request key, if it is served and fully listed. */
  private listedRemote(key: string): Remote | undefined {
    const r = this.remotes.get(splitKey(key).remote);
    return r && r.requests.synced ? r : undefined;
  }

  /** The caches of the internal cluster. */
  private get internalInformers() {
    return [this.pipelineRuns, this.pipelines, this.configs, this.resolutions, this.tasks, this.approvals];
  }

  private get informers() {
    return [...[...this.remotes.values()].map((r) => r.requests), ...this.internalInformers];
  }

  /**
   * Starts the caches and waits until those of the internal cluster, and of
   * the remotes known now, have synced (a remote added later is not waited for).
   */
  async startCaches(): Promise<void> {
    if (this.started) return;
    this.started = true;
    const all = this.informers;
    for (const i of all) i.start();
    await Promise.all(all.map((i) => i.waitForSync()));
  }

  /** Starts the workers (after startCaches): from here on the controller acts. */
  startWorkers(): void {
    if (this.stopping || this.workers.length) return;
    const n = this.opts.workers ?? 4;
    this.log.info({ workers: n, remotes: [...this.remotes.keys()], requests: [...this.remotes.values()].reduce((a, r) => a + r.requests.size, 0), pipelineRuns: this.pipelineRuns.size }, 'caches synced; starting workers');
    this.sweep();
    for (let i = 0; i < n; i++) this.workers.push(this.work());
  }

  /** Starts the caches; workers start once every cache has synced. */
  async start(): Promise<void> {
    await this.startCaches();
    this.startWorkers();
  }

  /** Every required check of readiness() passes. */
  get ready(): boolean {
    return this.readiness().every((c) => c.ok || !c.required);
  }

  /** The remote bare namespaces of the configuration name unless it says otherwise: the --remote-kubeconfig one. */
  private get defaultRemote(): string | undefined {
    return this.opts.remote ? (this.opts.remoteName ?? DEFAULT_REMOTE) : undefined;
  }

  private configMemo: { obj: InternalServicesConfig | undefined; value: EffectiveConfig } | undefined;
  /** The effective configuration, computed again only when the cached object changes. */
  private config(): EffectiveConfig {
    const obj = this.configs.get(`${this.opts.namespace}/${CONFIG_NAME}`);
    if (!this.configMemo || this.configMemo.obj !== obj) this.configMemo = { obj, value: effectiveConfig(obj, this.opts.namespace, { defaultRemote: this.defaultRemote }) };
    return this.configMemo.value;
  }

  /** Whether the InternalServicesConfig "config" exists (in the cache). */
  get configPresent(): boolean {
    return this.configs.get(`${this.opts.namespace}/${CONFIG_NAME}`) !== undefined;
  }

  /** How many rules of the configuration cannot be used as written (for a gauge; /readyz names them). */
  configProblems(): number {
    return this.configPresent ? this.config().problems.length : 0;
  }

  /**
   * /readyz: the caches of the internal cluster (required); each remote's
   * (required when it is the only one: with several, one that cannot be
   * reached does not stop the others being served, and is reported); the
   * configuration (reported: without it requests wait).
   */
  readiness(): ReadinessCheck[] {
    const checks = [...[...this.remotes.values()].map((r) => r.requests.readiness(this.remotes.size === 1)), ...this.internalInformers.map((i) => i.readiness(true))];
    const present = this.configPresent;
    checks.push({
      name: 'config',
      ok: present,
      required: false,
      ...(present ? {} : { detail: `no InternalServicesConfig "${CONFIG_NAME}" in namespace ${this.opts.namespace}; new requests wait (phase WaitingForConfig)` }),
    });
    // Rules that cannot be used (a glob with no canonical form): reported, never widened.
    const problems = present ? this.config().problems : [];
    if (problems.length) checks.push({ name: 'config-rules', ok: false, required: false, detail: problems.join('; ') });
    return checks;
  }

  /** remote/namespace/idempotency key -> keys of the requests that carry it. */
  private readonly byIdempotencyKey = new Map<string, Set<string>>();

  /** Keys of the requests of a namespace that carry an idempotency key. */
  private sameKey(remote: string, namespace: string, key: string): Iterable<string> {
    return this.byIdempotencyKey.get(`${remote}/${namespace}/${key}`) ?? [];
  }

  /**
   * The other requests with this request's idempotency key, as Earlier
   * values, the ones to follow first: those that run or ran (a PipelineRun),
   * then the unfinished ones created before this one. A succeeded one is
   * read from the cluster for its results.
   */
  private async earlierOf(remote: Remote, req: InternalRequest): Promise<Earlier[]> {
    const ns = req.metadata.namespace ?? '';
    const k = idempotencyKeyOf(req)!;
    const mine = specHash(req.spec);
    const out: Array<Earlier & { rank: number; created: string }> = [];
    for (const key of this.sameKey(remote.name, ns, k)) {
      const other = this.currentRequest(key);
      if (!other || other.metadata.uid === req.metadata.uid) continue;
      const hash = other.metadata.annotations?.[ANNOTATION_SPEC_HASH] ?? specHash(other.spec);
      const c = succeededCondition(other);
      const hasRun = !!other.status?.pipelineRun || this.pipelineRunsFor(key).some((p) => requestUidOf(p) === other.metadata.uid);
      const created = other.metadata.creationTimestamp ?? '';
      const older = created < (req.metadata.creationTimestamp ?? '') || (created === req.metadata.creationTimestamp && (other.metadata.uid ?? '') < (req.metadata.uid ?? ''));
      let state: Earlier['state'];
      if (c?.status === 'True') state = 'succeeded';
      else if (c?.status === 'False') state = c.reason === Reason.Rejected ? 'rejected' : 'failed';
      else if (hasRun || older) state = 'active';
      else continue; // a later one that has not run: it follows this one, not the other way round
      const e: Earlier & { rank: number; created: string } = { name: other.metadata.name ?? '', uid: other.metadata.uid ?? '', sameSpec: hash === mine, state, rank: hasRun || state === 'succeeded' ? 0 : 1, created };
      if (state === 'succeeded' && e.sameSpec) {
        const full = await remote.client.tryGet(ns, e.name);
        if (full?.metadata.uid === e.uid) {
          e.results = { ...(full.status?.results ?? {}) };
          if (full.status?.pipelineRun) e.pipelineRun = full.status.pipelineRun;
        }
      } else if (other.status?.pipelineRun) e.pipelineRun = other.status.pipelineRun;
      out.push(e);
    }
    return out.sort((a, b) => a.rank - b.rank || (a.created < b.created ? -1 : 1)).map(({ rank: _r, created: _c, ...e }) => e);
  }

  /** Our PipelineRuns not finished (created ones the cache has not shown yet included), in all and per remote namespace. */
  private capacityView(): CapacityView {
    const runningByTenant = new Map<string, number>();
    let running = 0;
    const count = (pr: PipelineRun) => {
      if (outcomeOf(pr).done) return;
      running++;
      const t = tenantOf(remoteOf(pr), pr.metadata.labels?.[LABEL_REQUEST_NAMESPACE] ?? '');
      runningByTenant.set(t, (runningByTenant.get(t) ?? 0) + 1);
    };
    const seen = new Set<string>();
    for (const pr of this.pipelineRuns.list()) {
      const name = pr.metadata.name ?? '';
      const gone = this.deletedOverlay.get(name);
      if (gone && gone.uid === pr.metadata.uid) continue;
      seen.add(name);
      count(pr);
    }
    for (const { pr } of this.createdOverlay.values()) if (!seen.has(pr.metadata.name ?? '')) count(pr);
    const waiting: Waiting[] = [];
    for (const remote of this.remotes.values()) {
      for (const r of remote.requests.list()) {
        if (phaseOf(r) !== Phase.Queued) continue;
        waiting.push({ key: remote.keyOf(r), tenant: tenantOf(remote.name, r.metadata.namespace ?? ''), created: r.metadata.creationTimestamp ?? '' });
      }
    }
    return { running, runningByTenant, waiting, lastStartByTenant: this.lastStart };
  }

  /** A slot may have freed: the requests first in the fair order are looked at again. */
  private admitNext(): void {
    const cap = this.config().capacity;
    if (cap.maxRunning === undefined && cap.maxRunningPerNamespace === undefined) return;
    const view = this.capacityView();
    if (view.waiting.length === 0) return;
    const free = cap.maxRunning === undefined ? view.waiting.length : Math.max(0, cap.maxRunning - view.running);
    for (const key of fairOrder(view, cap).slice(0, free)) this.queue.add(key);
  }

  /** Unfinished requests without a PipelineRun, per remote, by phase ("none": not looked at yet), for a gauge. */
  waitingByPhase(): Record<string, Record<string, number>> {
    const all: Record<string, Record<string, number>> = {};
    for (const remote of this.remotes.values()) {
      const out: Record<string, number> = { none: 0, WaitingForConfig: 0, Resolving: 0, AwaitingApproval: 0, Queued: 0, Following: 0 };
      for (const r of remote.requests.list()) {
        if (isFinished(r) || r.status?.pipelineRun) continue;
        const phase = phaseOf(r) ?? 'none';
        out[phase] = (out[phase] ?? 0) + 1;
      }
      all[remote.name] = out;
    }
    return all;
  }

  /** Requests whose PipelineRun is running (for the concurrency gauge). */
  runningRequests(): number {
    let n = 0;
    for (const remote of this.remotes.values()) for (const r of remote.requests.list()) if (!isFinished(r) && r.status?.pipelineRun) n++;
    return n;
  }

  /**
   * Per remote: our unfinished PipelineRuns running more than `graceMs` past
   * their own `timeouts.pipeline` (Tekton ends a run at its timeout; one that
   * goes on means Tekton is not acting on it), for a gauge and its alert.
   */
  pipelineRunsPastTimeout(now = Date.now()): Record<string, number> {
    const out: Record<string, number> = {};
    for (const name of this.remotes.keys()) out[name] = 0;
    for (const pr of this.pipelineRuns.list()) {
      if (!pastTimeout(pr, now)) continue;
      const remote = remoteOf(pr);
      out[remote] = (out[remote] ?? 0) + 1;
    }
    return out;
  }

  /** Per remote: 1 when its requests are listed and its cluster answers. */
  remoteHealth(): Array<{ remote: string; up: boolean }> {
    return [...this.remotes.values()].map((r) => ({ remote: r.name, up: r.healthy }));
  }

  /** Milliseconds since each cache last heard from its cluster. */
  lastContact(): Array<{ informer: string; ms: number }> {
    const now = Date.now();
    return this.informers.map((i) => ({ informer: i.name, ms: i.health.lastContact ? now - i.health.lastContact : now }));
  }

  /** Stops acting at once (lost leadership): no new work; in-flight calls are abandoned by the caller exiting. */
  halt(): void {
    this.stopping = true;
    this.queue.shutdown();
  }

  /**
   * Stops taking work, lets in-flight reconciles finish (bounded by
   * graceMs), then stops the caches.
   */
  async stop(graceMs = 8_000): Promise<void> {
    this.stopping = true;
    this.queue.shutdown();
    const timedOut = await Promise.race([
      Promise.all(this.workers).then(() => false),
      new Promise<boolean>((r) => setTimeout(() => r(true), graceMs).unref()),
    ]);
    if (timedOut) this.log.warn({ graceMs }, 'in-flight work did not finish in time');
    await Promise.all([...this.internalInformers.map((i) => i.stop()), ...[...this.remotes.values()].map((r) => r.stop())]);
    this.opts.internal.close();
  }

  /** When each remote namespace last had a PipelineRun started by this instance (fair turns; not kept across restarts). */
  private readonly lastStart = new Map<string, number>();
  private admissionScheduled = false;
  /** admitNext() once per turn of the event loop, however many PipelineRuns ended in it. */
  private scheduleAdmission(): void {
    if (this.admissionScheduled) return;
    this.admissionScheduled = true;
    setImmediate(() => {
      this.admissionScheduled = false;
      if (this.pipelineRuns.synced) this.admitNext();
    });
  }

  /**
   * Every unfinished request (and, with ttlSecondsAfterFinished, the finished
   * ones): at each resync, and when the configuration changes — it decides
   * the waiting ones and may revoke running ones (onRevoke: cancel).
   */
  private requeueLive(only?: Remote): void {
    const ttl = this.config().ttlSecondsAfterFinished !== undefined;
    for (const remote of only ? [only] : this.remotes.values()) {
      if (!remote.requests.synced) continue;
      for (const r of remote.requests.list()) if (ttl || !isFinished(r)) this.queue.add(remote.keyOf(r));
    }
  }

  /**
   * Enqueues the request of every PipelineRun (and ResolutionRequest) we own,
   * of one remote or of all: the reconcile removes orphans, of a remote that is
   * served and fully listed only.
   */
  private sweep(only?: Remote): void {
    if (!this.pipelineRuns.synced) return;
    const mine = (key: string) => !only || key.startsWith(`${only.name}/`);
    for (const key of this.prIndex.keys()) if (mine(key)) this.queue.add(key);
    if (this.resolutions.synced) {
      for (const rr of this.resolutions.list()) {
        const key = requestKeyOf({ metadata: rr.metadata ?? {} });
        if (key && mine(key)) this.queue.add(key);
      }
    }
    const now = Date.now();
    for (const [name, e] of this.createdOverlay) if (now - e.at > 120_000) this.createdOverlay.delete(name);
    for (const [name, e] of this.deletedOverlay) if (now - e.at > 120_000) this.deletedOverlay.delete(name);
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      const t0 = performance.now();
      let failed = false;
      try {
        await this.reconcile(key);
        this.queue.forget(key);
      } catch (e) {
        failed = true;
        const delay = this.stopping ? 0 : this.queue.addRateLimited(key);
        const code = statusCode(e);
        const level = this.queue.retries(key) > 5 ? 'warn' : 'info';
        this.log[level]({ request: key, err: describeError(e), code, retryInMs: Math.round(delay) }, 'reconcile failed; will retry');
      } finally {
        this.queue.done(key);
        this.opts.metrics?.reconciled?.((performance.now() - t0) / 1000, failed);
      }
    }
  }

  /** The request as we last know it: our own write if the cache has not caught up. */
  private currentRequest(key: string): InternalRequest | undefined {
    const k = splitKey(key);
    const cached = this.remotes.get(k.remote)?.requests.get(k.cacheKey);
    const w = this.writtenOverlay.get(key);
    if (w) {
      if (cached && cached.metadata.uid === w.obj.metadata.uid && cached.metadata.resourceVersion === w.basedOn) return w.obj;
      this.writtenOverlay.delete(key);
    }
    return cached;
  }

  private pipelineRunsFor(key: string): PipelineRun[] {
    const out: PipelineRun[] = [];
    for (const name of this.prIndex.get(key) ?? []) {
      const pr = this.pipelineRuns.get(`${this.opts.namespace}/${name}`);
      const gone = this.deletedOverlay.get(name);
      if (pr && !(gone && gone.uid === pr.metadata.uid)) out.push(pr);
    }
    for (const { pr } of this.createdOverlay.values()) {
      if (requestKeyOf(pr) === key && !out.some((p) => p.metadata.name === pr.metadata.name)) out.push(pr);
    }
    return out;
  }

  /** Serializes the decisions that may start a run while a capacity is set, so that two workers never both take the last slot. */
  private admission: Promise<void> = Promise.resolve();

  /** Reconciles one request key. Exported for tests through the class. */
  async reconcile(key: string, fresh?: InternalRequest, attempt = 0): Promise<void> {
    const cfg = this.config();
    const capped = cfg.capacity.maxRunning !== undefined || cfg.capacity.maxRunningPerNamespace !== undefined;
    const request = fresh ?? this.currentRequest(key);
    if (!capped || !request || isFinished(request) || request.status?.pipelineRun) return this.reconcileNow(key, fresh, attempt);
    const turn = this.admission.then(() => this.reconcileNow(key, fresh, attempt));
    this.admission = turn.catch(() => {});
    return turn;
  }

  /** Decisions about requests with the same idempotency key, one at a time (two workers must not both start one). */
  private readonly keyLocks = new Map<string, Promise<void>>();

  private async reconcileNow(key: string, fresh?: InternalRequest, attempt = 0): Promise<void> {
    const req = fresh ?? this.currentRequest(key);
    const idem = req && !isFinished(req) ? idempotencyKeyOf(req) : undefined;
    if (!idem) return this.reconcileOne(key, fresh, attempt);
    const lockKey = `${splitKey(key).remote}/${req!.metadata.namespace}/${idem}`;
    const prev = this.keyLocks.get(lockKey) ?? Promise.resolve();
    const turn = prev.then(() => this.reconcileOne(key, fresh, attempt));
    const tail = turn.catch(() => {});
    this.keyLocks.set(lockKey, tail);
    try {
      return await turn;
    } finally {
      if (this.keyLocks.get(lockKey) === tail) this.keyLocks.delete(lockKey);
    }
  }

  private async reconcileOne(key: string, fresh?: InternalRequest, attempt = 0): Promise<void> {
    // A remote that is not served (removed, or not added yet) or not fully
    // listed yet: nothing of it is decided, no PipelineRun of it swept. Its
    // first full list brings every one of its keys back.
    const remote = this.listedRemote(key);
    if (!remote) return;
    // A remote that is failing (its cache cannot list or watch): its requests
    // are looked at again later rather than tying up workers with calls that
    // time out, so that the other remotes are served meanwhile.
    if (remote.requests.health.failures >= UNREACHABLE_AFTER) {
      this.queue.addAfter(key, UNREACHABLE_RETRY_MS);
      return;
    }
    const request = fresh ?? this.currentRequest(key);
    const ns = this.opts.namespace;
    const config = this.config();
    let prs = this.pipelineRunsFor(key);
    const uid = request?.metadata.uid;
    const ours = uid ? prs.find((p) => requestUidOf(p) === uid) : undefined;
    const needPipeline = request && !isFinished(request) && !ours;
    const pipelineName = installedPipelineName(request?.spec);
    let pipeline = needPipeline && pipelineName ? this.pipelines.get(`${ns}/${pipelineName}`) : undefined;
    let failedTasks: string[] | undefined;
    if (request && ours && !isFinished(request)) {
      const out = outcomeOf(ours);
      if (out.done && !out.succeeded) failedTasks = await this.failedTasksOf(ours);
    }
    const resolutions = [...this.resolutions.list()].filter((rr) => requestKeyOf({ metadata: rr.metadata ?? {} }) === key);
    const earlier = needPipeline && request && idempotencyKeyOf(request) ? await this.earlierOf(remote, request) : undefined;
    const approvals = [...this.approvals.list()].filter((a) => requestKeyOf({ metadata: a.metadata }) === key);
    const decided = approvals.find((a) => a.metadata.labels?.[LABEL_REQUEST_UID] === uid && a.status?.decision?.result === 'Approved');
    const approvalTrustNow = needPipeline && decided ? await this.trust.check(decided) : undefined;
    const tasks = needPipeline ? new Map([...this.tasks.list()].map((t) => [t.metadata.name ?? '', t as unknown as Record<string, unknown>])) : undefined;
    const observe = (): Observation => ({
      namespace: ns,
      remote: remote.name,
      request,
      pipelineRuns: prs,
      config,
      pipeline,
      now: this.now(),
      resolutions,
      approvals,
      ...(earlier ? { earlier } : {}),
      ...(needPipeline && (config.capacity.maxRunning !== undefined || config.capacity.maxRunningPerNamespace !== undefined) ? { capacity: this.capacityView() } : {}),
      ...(approvalTrustNow ? { approvalTrust: approvalTrustNow } : {}),
      ...(tasks ? { tasks } : {}),
      ...(failedTasks ? { failedTasks } : {}),
    });
    let actions = decide(observe());

    // Negative answers from a cache are checked against the cluster before
    // they become a requester-visible outcome.
    const status = actions.find((a) => a.type === 'writeStatus');
    if (status?.type === 'writeStatus' && status.code === 'REQUEST_PIPELINE_NOT_FOUND' && request && pipelineName) {
      pipeline = await this.pipelineClient.tryGet(ns, pipelineName);
      if (pipeline) actions = decide(observe());
    } else if (status?.type === 'writeStatus' && status.code === 'PIPELINERUN_MISSING' && uid) {
      const live = await this.prClient.tryGet(ns, pipelineRunName(uid));
      if (live) {
        prs = [...prs, live];
        actions = decide(observe());
      }
    }

    for (const action of actions) {
      const ok = await this.act(remote, key, request, action, attempt);
      this.opts.metrics?.acted?.(action.type, ok);
      if (!ok) return;
    }
  }

  /** Carries out one action. Returns false when the rest of the plan must not run. */
  private async act(remote: Remote, key: string, request: InternalRequest | undefined, action: Action, attempt: number): Promise<boolean> {
    const ns = this.opts.namespace;
    switch (action.type) {
      case 'createPipelineRun': {
        const pr = action.pipelineRun;
        try {
          const created = await this.prClient.create(ns, pr);
          this.createdOverlay.set(pr.metadata.name!, { pr: created, at: Date.now() });
          this.lastStart.set(tenantOf(remoteOf(pr), pr.metadata.labels?.[LABEL_REQUEST_NAMESPACE] ?? ''), Date.now());
          this.log.info({ request: key, pipelineRun: `${ns}/${pr.metadata.name}`, pipeline: pr.spec.pipelineRef?.name }, 'PipelineRun created');
        } catch (e) {
          const code = statusCode(e);
          if (code === 409) {
            // Already there: made by an earlier attempt. The API server, not a cache, decides.
            this.log.info({ request: key, pipelineRun: pr.metadata.name }, 'PipelineRun already exists');
            return true;
          }
          if (isRefusedObject(e) && request) {
            // The internal cluster refuses the PipelineRun this request produces.
            const msg = `the internal cluster refused the PipelineRun for this request: ${describeError(e)}`;
            const end = endWithoutResults(request, Reason.Rejected, msg, this.now(), 'REQUEST_INVALID');
            await this.writeStatus(remote, key, request, end.status, end.event, attempt);
            return false;
          }
          throw e;
        }
        return true;
      }
      case 'startResolution': {
        const rr = action.resolution;
        await startResolution(this.resolutionClient, rr);
        this.log.info({ request: key, resolutionRequest: `${ns}/${rr.metadata?.name}`, resolver: rr.metadata?.labels?.['resolution.tekton.dev/type'] }, 'resolution started');
        return true;
      }
      case 'deleteResolution': {
        try {
          await this.resolutionClient.delete(ns, action.resolution.metadata?.name ?? '', action.resolution.metadata?.uid);
        } catch (e) {
          const code = statusCode(e);
          if (code !== 404 && code !== 409) throw e;
        }
        this.log.debug({ request: key, resolutionRequest: action.resolution.metadata?.name, why: action.why }, 'ResolutionRequest deleted');
        return true;
      }
      case 'createApproval': {
        try {
          await this.approvalClient.create(ns, action.approval);
          this.log.info({ request: key, approval: `${ns}/${action.approval.metadata.name}`, rule: action.approval.spec.rule }, 'approval requested');
        } catch (e) {
          if (statusCode(e) !== 409) throw e;
        }
        return true;
      }
      case 'deleteApproval': {
        try {
          await this.approvalClient.delete(ns, action.approval.metadata.name ?? '', action.approval.metadata.uid);
        } catch (e) {
          const code = statusCode(e);
          if (code !== 404 && code !== 409) throw e;
        }
        this.log.debug({ request: key, approval: action.approval.metadata.name, why: action.why }, 'InternalRequestApproval deleted');
        return true;
      }
      case 'deleteRequest': {
        const r = action.request;
        try {
          await remote.client.delete(r.metadata.namespace ?? '', r.metadata.name ?? '', r.metadata.uid);
          this.log.info({ request: key, why: action.why }, 'InternalRequest deleted');
        } catch (e) {
          const code = statusCode(e);
          if (code === 404 || code === 409) return true;
          if (code === 403) {
            // The right is granted only where the administrators chose it (config/rbac/remote-ttl): say so once, do not retry for ever.
            if (!remote.ttlDenied) this.log.warn({ request: key, remote: remote.name, err: describeError(e) }, 'ttlSecondsAfterFinished is set, but the controller may not delete InternalRequests on this remote cluster; apply config/rbac/remote-ttl there');
            remote.ttlDenied = true;
            return true;
          }
          throw e;
        }
        return true;
      }
      case 'requeueAfter':
        this.queue.addAfter(key, action.ms);
        return true;
      case 'writeStatus':
        if (!request) return false;
        return this.writeStatus(remote, key, request, action.status, action.event, attempt);
      case 'cancelPipelineRun': {
        const name = action.pipelineRun.metadata.name!;
        try {
          await this.prClient.patchMerge(ns, name, { ...(action.annotations ? { metadata: { annotations: action.annotations } } : {}), spec: { status: 'Cancelled' } });
          this.log.info({ request: key, pipelineRun: `${ns}/${name}`, why: action.why }, 'PipelineRun cancelled');
        } catch (e) {
          if (statusCode(e) !== 404) throw e;
        }
        return true;
      }
      case 'deletePipelineRun': {
        const name = action.pipelineRun.metadata.name!;
        try {
          await this.prClient.delete(ns, name, action.pipelineRun.metadata.uid);
        } catch (e) {
          if (statusCode(e) !== 409) throw e; // 409: precondition failed, a newer object of that name
        }
        this.createdOverlay.delete(name);
        this.deletedOverlay.set(name, { uid: action.pipelineRun.metadata.uid, at: Date.now() });
        this.log.info({ request: key, pipelineRun: `${ns}/${name}`, why: action.why }, 'PipelineRun deleted');
        return true;
      }
    }
  }

  /**
   * PUT on the status subresource, conditional on the resourceVersion we
   * decided on. On a conflict, the request is read fresh and the whole
   * decision is made again (it may have changed meanwhile).
   */
  private async writeStatus(
    remote: Remote,
    key: string,
    request: InternalRequest,
    status: NonNullable<InternalRequest['status']>,
    event: { type: 'Normal' | 'Warning'; reason: string; message: string } | undefined,
    attempt: number,
  ): Promise<boolean> {
    if (JSON.stringify(request.status ?? {}) === JSON.stringify(status)) return true;
    const ns = request.metadata.namespace!;
    const name = request.metadata.name!;
    const body: InternalRequest = { ...request, status };
    let written: InternalRequest;
    try {
      written = await remote.client.replaceStatus(ns, name, body);
    } catch (e) {
      const code = statusCode(e);
      if (code === 404) return false; // deleted meanwhile; its delete event follows
      if (code === 409 && attempt < CONFLICT_RETRIES) {
        const fresh = await remote.client.tryGet(ns, name);
        if (!fresh) return false;
        this.log.debug({ request: key, attempt }, 'status conflict; deciding again on a fresh read');
        await this.reconcileOne(key, fresh, attempt + 1);
        return false;
      }
      if (status.results && Object.keys(status.results).length && isRefusedObject(e)) {
        // The results do not fit (the remote cluster's size limits or
        // validation): record the outcome without them rather than retry forever.
        const msg = `the results of the PipelineRun could not be stored on the request: ${describeError(e)}`;
        const end = endWithoutResults(request, Reason.Failed, msg, this.now(), 'PIPELINERUN_FAILED');
        return this.writeStatus(remote, key, request, end.status, end.event, attempt);
      }
      throw e;
    }
    this.writtenOverlay.set(key, { basedOn: request.metadata.resourceVersion ?? '', obj: written });
    const c = status.conditions?.[0];
    const phase = phaseOf({ status });
    this.log.info({ request: key, reason: c?.reason, phase, status: c?.status, pipelineRun: status.pipelineRun }, c?.message ?? 'status written');
    if (phase === Phase.Running && phaseOf(request) !== Phase.Running) {
      const created = Date.parse(request.metadata.creationTimestamp ?? '');
      this.opts.metrics?.started?.(request, Number.isFinite(created) ? Math.max(0, Date.now() - created) / 1000 : 0, remote.name);
    }
    if (c && c.status !== 'Unknown') {
      const created = Date.parse(request.metadata.creationTimestamp ?? '');
      this.opts.metrics?.finished?.(request, c.reason, c.status === 'True', Number.isFinite(created) ? (Date.now() - created) / 1000 : 0, remote.name);
    }
    if (event && eventWanted(this.opts.events ?? 'important', event)) {
      void remote.events.record(written, event.type, event.reason, event.message, this.now());
    }
    return true;
  }

  /**
   * The pipeline tasks whose TaskRuns failed, each with Tekton's message for
   * it (which step, which exit code), e.g. `sign ("step-sign" exited with
   * code 3: Error)` (best effort).
   */
  private async failedTasksOf(pr: PipelineRun): Promise<string[]> {
    const refs = (pr.status?.childReferences ?? []).filter((c) => !c.kind || c.kind === 'TaskRun');
    const failed: string[] = [];
    await Promise.all(
      refs.map(async (ref) => {
        try {
          const tr = await this.taskRunClient.tryGet(this.opts.namespace, ref.name);
          const c = tr?.status?.conditions?.find((x) => x.type === 'Succeeded');
          if (c?.status === 'False') {
            const task = ref.pipelineTaskName ?? ref.name;
            const why = (c.message ?? '').replace(/\s+/g, ' ').trim();
            failed.push(why ? `${task} (${why.length > 300 ? `${why.slice(0, 300)}…` : why})` : task);
          }
        } catch (e) {
          this.log.debug({ taskRun: ref.name, err: describeError(e) }, 'cannot read TaskRun');
        }
      }),
    );
    return failed.sort();
  }
}

function effectiveSummary(c: InternalServicesConfig, ns: string, defaultRemote: string | undefined) {
  const e = effectiveConfig(c, ns, { defaultRemote });
  return {
    allowList: [...e.allowList],
    bareNamespacesOn: e.bareRemote ?? '(no remote: spec.defaultRemote is not set and there is no --remote-kubeconfig remote)',
    debug: e.debug,
    volumeClaim: e.volumeClaim,
    allowedServiceAccounts: [...e.allowedServiceAccounts],
    sources: { git: e.sources.git.length, bundles: e.sources.bundles.length, cluster: e.sources.cluster, resolutionTimeoutMs: e.resolutionTimeoutMs },
    ...(e.problems.length ? { problems: e.problems } : {}),
  };
}

/**
 * Which Events are recorded on requests: `important` (the default) records
 * failures, rejections, approvals and notices, and leaves out routine
 * successes (Running, Succeeded), which the status already says; `all` adds
 * them; `warnings` keeps only Warning Events; `none` records nothing.
 */
export type EventsMode = 'all' | 'important' | 'warnings' | 'none';
export const EVENTS_MODES: readonly EventsMode[] = ['all', 'important', 'warnings', 'none'];

export function eventWanted(mode: EventsMode, event: EventSpec): boolean {
  switch (mode) {
    case 'all':
      return true;
    case 'important':
      return !event.success;
    case 'warnings':
      return event.type === 'Warning';
    case 'none':
      return false;
  }
}
