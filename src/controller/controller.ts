/**
 * The manager: it makes the parts and wires them (the caches of the
 * internal cluster and of each remote — the remotes come and go through the
 * providers of src/remotes/ —, the status writer, the executor, the capacity
 * gate, the RequestDefinitions), runs the work queue's workers over the
 * Reconciler (reconciler.ts: observe → decide() → live reads → act for one
 * key), keeps the housekeeping that enqueues keys (every resync, a changed
 * configuration, the sweep of what we made), and owns the life cycle
 * (start, halt, stop). What /readyz and the gauges read is `views`
 * (health-views.ts).
 */
import type { Logger } from 'pino';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { InternalRequestApproval, InternalServicesConfig } from '../api/types.js';
import { tenantOfKey } from '../api/request-key.js';
import { CommitChecker } from '../git/commit-checker.js';
import { RefLookups } from '../git/ref-lookups.js';
import { PathChecks } from '../git/path-checks.js';
import { ServiceAccountChecks, serviceAccountReader } from './service-accounts.js';
import type { Informer } from '../kube/informer.js';
import { WorkQueue } from '../kube/queue.js';
import { RemoteSet } from '../remotes/set.js';
import { checkKinds, INTERNAL_REQUEST_KIND, type RequestKind } from '../requests/request-kind.js';
import { IDEMPOTENCY_INDEX, idempotencyKeyOf } from '../requests/idempotency.js';
import { slimRequest } from '../requests/cached-requests.js';
import { incumbentKeyOf } from '../requests/incumbent.js';
import type { ResolutionRequest } from '../tekton/resolve.js';
import { PIPELINE, PIPELINERUN, TASKRUN, type Pipeline, type PipelineRun, type Task, type TaskRun } from '../tekton/tekton-types.js';
import { CapacityGate } from './capacity-gate.js';
import type { EffectiveConfig } from './config.js';
import { ConfigSource } from './config-source.js';
import { RequestDefinitions } from './definitions.js';
import { Executor } from './executor.js';
import { HealthViews } from './health-views.js';
import { Housekeeping } from './housekeeping.js';
import { internalCaches, type InternalCaches } from './internal-caches.js';
import { worthALook } from './listing.js';
import type { ControllerOptions } from './options.js';
import { Reconciler } from './reconciler.js';
import { ResultsArchive } from './results-archive.js';
import { fetchRunLogs, LogRelay } from './run-logs.js';
import { Refusals } from './refusals.js';
import { RunIndex } from './run-index.js';
import { StatusWriter } from './status-writer.js';
import { approvalTrust } from './trust.js';
import { Workers } from './workers.js';

export class Controller {
  /** The remote clusters, by name (the sink of the remote providers: addRemote, removeRemote). */
  readonly remotes: RemoteSet;
  /** The internal cluster's caches (internal-caches.ts): our PipelineRuns, Pipelines, Tasks, approvals, ResolutionRequests, the incumbent's runs. */
  readonly caches: InternalCaches;
  readonly configs: Informer<InternalServicesConfig>;
  readonly queue: WorkQueue;
  /** One key at a time: observe, decide, act (reconciler.ts). */
  readonly reconciler: Reconciler;
  /** What /readyz and the gauges read. */
  readonly views: HealthViews;
  /** The RequestDefinitions, turned into the typed kinds served (unless opts.definitions is false). */
  readonly definitions: RequestDefinitions | undefined;
  /** Our PipelineRuns by request, with what we created or deleted that the cache has not shown yet. */
  private readonly runs: RunIndex;
  private readonly writer: StatusWriter;
  private readonly capacity: CapacityGate;
  private readonly configSource: ConfigSource;
  private readonly workers: Workers;
  private readonly housekeeping: Housekeeping;
  private started = false;
  /** Why every action is held (the Go controller is back: incumbent-gate.ts), or undefined. */
  private heldBecause: string | undefined;
  private readonly log: Logger;

  constructor(private readonly opts: ControllerOptions) {
    const log = (this.log = opts.log);
    const now = opts.now ?? (() => new Date());
    const m = opts.metrics ?? {};
    const enqueue = (key: string) => this.queue.add(key);
    // Fair turns between remote namespaces: a flood from one does not delay another's request.
    this.queue = new WorkQueue({ observer: m.queue, baseDelayMs: 50, maxDelayMs: 5 * 60_000, tenantOf: tenantOfKey });
    const taskRuns = opts.internal.resource<TaskRun>(TASKRUN);
    const archive = opts.results ? new ResultsArchive(opts.results, log) : undefined;
    const commits = opts.commitChecker ?? new CommitChecker({ dir: join(tmpdir(), `internal-services-git-${process.pid}`), log: log.child({ component: 'commit-checker' }) });
    const refs = opts.refLookups ?? new RefLookups({ log: log.child({ component: 'ref-lookups' }) });
    const paths = opts.pathChecks ?? new PathChecks({ trees: commits, log: log.child({ component: 'path-checks' }) });
    const serviceAccounts = new ServiceAccountChecks({ get: serviceAccountReader(opts.internal, opts.namespace), now: () => now().getTime(), log });
    const pipelineRunReader = opts.internal.resource<PipelineRun>(PIPELINERUN);
    const logRelay = new LogRelay((pipelineRun, archivedLog) =>
      fetchRunLogs({ namespace: opts.namespace, core: opts.internal.core, taskRuns, pipelineRuns: pipelineRunReader, results: opts.results }, pipelineRun, archivedLog),
    );
    const kinds = opts.kinds ?? [INTERNAL_REQUEST_KIND];
    checkKinds(kinds);
    const inf = { resyncPeriodMs: opts.resyncPeriodMs ?? 10 * 60_000, observer: m.informer, ...opts.informer };

    const refusals = new Refusals();
    this.writer = new StatusWriter({ log, now, metrics: opts.metrics, events: opts.events, requeue: enqueue, refusals });
    this.capacity = new CapacityGate({ pipelineRuns: () => this.runs.all(), pipelineRunsSynced: () => this.caches.pipelineRuns.synced, remotes: () => this.remotes.values(), capacity: () => this.config().capacity, enqueue });
    const executor = new Executor({
      internal: opts.internal,
      namespace: opts.namespace,
      log,
      now,
      writer: this.writer,
      created: (sent, created) => {
        this.runs.created(sent, created);
        this.capacity.started(sent);
      },
      deleted: (pr) => this.runs.deleted(pr),
      prunedUnarchived: () => m.prunedUnarchived?.(),
      closedWorldRefused: () => m.closedWorldRefused?.(),
      deletedUnsigned: (reason, remote) => m.deletedUnsigned?.(reason, remote),
      requeueAfter: (key, ms) => this.queue.addAfter(key, ms),
      refusals,
      checkCommit: (key, owner, check) => commits.start(owner, check, () => enqueue(key)),
      lookUpRef: (key, owner, lookup) => refs.lookUpRef(owner, lookup, () => enqueue(key)),
      checkPath: (key, owner, check) => paths.checkPath(owner, check, () => enqueue(key)),
      checkServiceAccount: (key, owner, name) => serviceAccounts.check(name, owner, () => enqueue(key)),
      askArchive: (key, pr) => archive?.ask(pr, () => enqueue(key)),
      fetchLogs: (key, owner, asked, pipelineRun, archivedLog) => logRelay.start(owner, asked, pipelineRun, archivedLog, () => enqueue(key)),
      held: () => this.heldBecause,
    });
    this.remotes = new RemoteSet(
      {
        enqueue,
        worthALook: (req) => worthALook(req, this.config()),
        resynced: (remote) => {
          this.housekeeping.requeueLive(remote);
          this.housekeeping.sweep(remote);
        },
        dropped: (remote) => this.housekeeping.forgetRemote(remote.name),
        started: () => this.started,
      },
      // Requests that carry an idempotency key follow each other: a change to one brings the others back.
      { log, instance: opts.instance ?? 'internal-services', informer: inf, kinds, indexes: [{ name: IDEMPOTENCY_INDEX, extract: idempotencyKeyOf, related: true }], transform: slimRequest },
    );
    // The remote the incumbent Go controller served: its runs there are followed, not made again (requests/incumbent.ts).
    const incumbentRemote = opts.incumbentRemote ?? opts.remoteName;
    const incumbentKey = (pr: PipelineRun) => (incumbentRemote ? incumbentKeyOf(incumbentRemote, pr) : undefined);
    // Its runs in the controller's namespace and in its own (--incumbent-namespace).
    const incumbentRuns = () => [...this.caches.incumbentRuns.list(), ...(this.caches.incumbentRunsThere?.list() ?? [])];
    const incumbentUnreadable = () => {
      const there = this.caches.incumbentRunsThere;
      if (!there || there.synced) return undefined;
      const ns = opts.incumbentNamespace;
      return `the previous (Go) controller's PipelineRuns in namespace ${ns} cannot be listed, and this request may have its run there: nothing is decided for it until they can be (grant the controller get, list, watch, patch and delete on pipelineruns in ${ns}: kubectl apply -f config/rbac/internal-incumbent, or the chart's incumbent.check; or set --incumbent-namespace to where the Go controller ran)`;
    };
    this.caches = internalCaches(opts.internal, opts.namespace, log, inf, {
      pipelineRun: (pr, deleted) => {
        const { key, freed } = this.runs.observed(pr, deleted);
        if (!key) return;
        enqueue(key);
        if (freed) this.capacity.schedule();
      },
      enqueue,
      resynced: () => this.housekeeping.sweep(),
      incumbentRun: (pr) => {
        const key = incumbentKey(pr);
        if (key) enqueue(key);
      },
    }, opts.incumbentNamespace);
    this.runs = new RunIndex(this.caches.pipelineRuns, opts.namespace);
    this.configSource = new ConfigSource({ internal: opts.internal, namespace: opts.namespace, log, defaultRemote: opts.remoteName, informer: inf, changed: () => this.housekeeping.requeueLive(), debugOff: () => this.housekeeping.sweep() });
    this.configs = this.configSource.informer;
    this.housekeeping = new Housekeeping({ internal: opts.internal, namespace: opts.namespace, log, now, queue: this.queue, remotes: () => this.remotes.values(), runs: this.runs, pipelineRuns: this.caches.pipelineRuns, resolutions: this.caches.resolutions, writer: this.writer, capacity: this.capacity, refusals, config: () => this.config(), held: () => this.heldBecause !== undefined, otherKeys: () => incumbentRuns().flatMap((pr) => incumbentKey(pr) ?? []) });
    this.views = new HealthViews({
      namespace: opts.namespace,
      remotes: () => this.remotes.values(),
      remoteNames: () => this.remotes.names(),
      metricsNameOf: (r) => this.remotes.get(r)?.metricsName ?? r,
      internal: () => this.internalInformers,
      caches: () => [...[...this.remotes.values()].flatMap((r) => r.informers()), ...this.internalInformers],
      pipelineRuns: () => this.caches.pipelineRuns.list(),
      config: () => ({ present: this.configSource.present, problems: this.configSource.problems() }),
      awaitingResults: () => archive?.waiting() ?? 0,
      extraReadiness: () => (this.definitions ? [this.definitions.readiness()] : []),
      deletesDenied: (now) => refusals.deletesDeniedRemotes(now),
    });
    if (opts.definitions !== false) {
      this.definitions = new RequestDefinitions({
        internal: opts.internal,
        namespace: opts.namespace,
        log: log.child({ component: 'request-definitions' }),
        informer: inf,
        builtIn: kinds,
        apply: (all) => this.remotes.setKinds(all),
        failing: (kind) => this.views.failingKind(kind.kind),
        now,
      });
    }
    const currentRequest = (key: string) => this.reconciler.current(key);
    this.reconciler = new Reconciler({
      namespace: opts.namespace,
      log,
      remotes: this.remotes,
      writer: this.writer,
      executor,
      capacity: this.capacity,
      pipelineClient: opts.internal.resource<Pipeline>(PIPELINE),
      acted: m.acted,
      sources: {
        namespace: opts.namespace,
        config: () => this.config(),
        now,
        log,
        runs: this.runs,
        pipelines: this.caches.pipelines,
        tasks: this.caches.tasks,
        resolutions: this.caches.resolutions,
        approvals: this.caches.approvals,
        taskRuns,
        trust: approvalTrust(opts.internal, opts.namespace),
        sameKeyRequests: {
          sameKey: (remote: string, namespace: string, key: string, kind?: RequestKind) => this.remotes.indexedUnder(IDEMPOTENCY_INDEX, remote, namespace, key, kind),
          currentRequest,
          pipelineRunsFor: (key: string) => this.runs.forRequest(key),
        },
        capacity: () => this.capacity.view(),
        ...(archive ? { archive } : {}),
        logs: logRelay,
        commits,
        refs,
        paths,
        serviceAccounts,
        ...(opts.tektonVersion ? { tektonVersion: opts.tektonVersion } : {}),
        refuseResolversOnAdvisory: opts.refuseResolversOnAdvisory === true,
        ...(opts.drain ? { drain: true } : {}),
        refusals,
        ...(incumbentRemote ? { incumbent: { remote: incumbentRemote, runs: incumbentRuns, unreadable: incumbentUnreadable } } : {}),
      },
    });
    this.workers = new Workers(this.queue, this.reconciler, log, m.reconciled);
  }

  /** The caches of the internal cluster. */
  private get internalInformers() {
    const c = this.caches;
    return [c.pipelineRuns, c.pipelines, this.configs, c.resolutions, c.tasks, c.approvals, c.incumbentRuns];
  }

  /**
   * Starts the caches and waits until those of the internal cluster have
   * synced. The remotes' requests go on being listed: they are decided as
   * they arrive, as far as listing.ts allows (remotesSynced() waits for them).
   */
  async startCaches(): Promise<void> {
    if (this.started) return;
    this.started = true;
    // The defined kinds first, so that the remotes list them from the start.
    await this.definitions?.start();
    // Remotes are started as remotes (a kind defined later starts with them).
    for (const r of this.remotes.values()) r.start();
    for (const i of this.internalInformers) i.start();
    // Not waited for: until it lists, the requests that may have a run there wait (decide.ts).
    this.caches.incumbentRunsThere?.start();
    await Promise.all(this.internalInformers.map((i) => i.waitForSync()));
  }

  /**
   * Resolves once each remote known now has the full list of its built-in
   * kind (a remote added later is not waited for; a typed kind whose CRD is
   * missing on a remote must not hold the rest up).
   */
  async remotesSynced(): Promise<void> {
    await Promise.all([...this.remotes.values()].map((r) => r.requests.waitForSync()));
  }

  /**
   * Starts the workers (after startCaches): from here on the controller acts.
   * Logs "caches synced" once the remotes known now are listed too.
   */
  startWorkers(): void {
    if (this.workers.started || this.workers.halted) return;
    const n = this.opts.workers ?? 4;
    const listing = [...this.remotes.values()].filter((r) => !r.requests.synced);
    const synced = () =>
      this.log.info({ workers: n, remotes: [...this.remotes.names()], requests: [...this.remotes.values()].reduce((a, r) => a + r.size, 0), pipelineRuns: this.caches.pipelineRuns.size }, 'caches synced');
    if (listing.length) {
      this.log.info({ workers: n, listing: listing.map((r) => r.name), requests: listing.reduce((a, r) => a + r.size, 0) }, 'starting workers; requests are decided as they are listed');
      void this.remotesSynced().then(() => {
        if (!this.workers.halted) synced();
      });
    } else synced();
    this.housekeeping.sweep();
    this.workers.start(n);
  }

  /** Starts the caches; workers start once every cache has synced. */
  async start(): Promise<void> {
    await this.startCaches();
    this.startWorkers();
  }

  /**
   * Holds every action at once (the Go controller is back while this one
   * serves: docs/migrating.md): the executor carries out none, and its keys
   * are looked at again until release().
   */
  hold(reason: string): void {
    this.heldBecause = reason;
  }

  /** Acts again (the Go controller is gone again): every live request and everything we made is looked at. */
  release(): void {
    if (this.heldBecause === undefined) return;
    this.heldBecause = undefined;
    // A standby (no workers yet) has nothing to look at again: its first worker looks at everything.
    if (!this.workers.started) return;
    this.housekeeping.requeueLive();
    this.housekeeping.sweep();
  }

  /** Stops acting at once (lost leadership): no new work; in-flight calls are abandoned by the caller exiting. */
  halt(): void {
    this.workers.halt();
  }

  /**
   * Stops taking work, lets in-flight reconciles finish (bounded by
   * graceMs), then stops the caches.
   */
  async stop(graceMs = 8_000): Promise<void> {
    if (!(await this.workers.drain(graceMs))) this.log.warn({ graceMs }, 'in-flight work did not finish in time');
    await Promise.all([...this.internalInformers.map((i) => i.stop()), this.caches.incumbentRunsThere?.stop(), this.remotes.stopAll(), this.definitions?.stop()]);
    this.opts.internal.close();
  }

  /** The effective configuration (see config-source.ts). */
  private config(): EffectiveConfig {
    return this.configSource.current();
  }
}
