/**
 * The imperative shell around decide(), and the coordinator of its parts:
 * caches of the internal cluster and of each remote cluster (the remotes
 * come and go through the providers of src/remotes/), one work queue keyed by request
 * (remote/namespace/name), workers that gather an Observation, ask decide()
 * what to do, and hand the actions to the executor (executor.ts), whose
 * status writes go to the status writer (status-writer.ts). Capacity and
 * fair admission are in capacity-gate.ts, idempotency look-ups in idempotency-lookups.ts,
 * our PipelineRuns and our own writes not yet in the cache in run-index.ts,
 * and the read-only views for metrics and /readyz in health-views.ts.
 *
 * Over 400 lines: the constructor wires the parts together (the
 * RequestDefinitions among them), the public methods (metrics, health,
 * lifecycle, setKinds) are one-line delegations kept so that
 * src/cli/controller.ts and the tests need no change, and reconcileOne
 * gathers the observation in one readable piece.
 */
import type { Logger } from 'pino';
import type { InternalRequest, InternalRequestApproval, InternalServicesConfig } from '../api/types.js';
import { approvalTrust, type ApprovalTrust } from './trust.js';
import { isFinished } from '../api/conditions.js';
import { describeError, statusCode, type ResourceClient } from '../kube/client.js';
import type { Informer, ReadinessCheck } from '../kube/informer.js';
import { splitKey, type Remote, type RemoteSpec } from '../remotes/remote.js';
import { checkKinds, INTERNAL_REQUEST_KIND, type RequestKind } from '../requests/request-kind.js';
import { tenantOfKey } from '../api/request-key.js';
import { WorkQueue } from '../kube/queue.js';
import { pipelineRunName, requestKeyOf } from '../tekton/pipelinerun.js';
import type { ResolutionRequest } from '../tekton/resolve.js';
import { PIPELINE, PIPELINERUN, STEPACTION, TASKRUN, type Pipeline, type PipelineRun, type Task, type TaskRun } from '../tekton/types.js';
import type { StepActionCopy } from '../tekton/stepaction-copy.js';
import { sweepStepActionCopies } from './stepaction-copies.js';
import type { EffectiveConfig } from './config.js';
import { ConfigSource } from './config-source.js';
import { idempotencyKeyOf } from '../requests/idempotency.js';
import { internalCaches } from './internal-caches.js';
import { decide } from './decide.js';
import { StatusWriter } from './status-writer.js';
import { Executor } from './executor.js';
import { CapacityGate } from './capacity-gate.js';
import { RunIndex } from './run-index.js';
import { RemoteSet } from '../remotes/set.js';
import { KeyLocks } from './idempotency-lookups.js';
import { RequestDefinitions } from './definitions.js';
import * as views from './health-views.js';
import { ANNOTATION_LOGS, fetchRunLogs, LogRelay, ResultsArchive } from './results-archive.js';
import { confirmingRead, worthALook } from './listing.js';

export { EVENTS_MODES, eventWanted, type EventsMode } from './status-writer.js';
export type { ControllerMetrics, ControllerOptions } from './options.js';
import type { ControllerOptions } from './options.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CommitChecker } from '../git/commit-checker.js';
import { RefLookups } from '../git/ref-lookups.js';
import { liveReadFor, type LiveReads, type Seen } from './live-reads.js';
import { observe, type ObserveSources } from './observe.js';

/** A requester's ask for the logs (the internal-services.dev/logs annotation) not answered yet. */
function logsAsked(req: InternalRequest): boolean {
  const asked = req.metadata.annotations?.[ANNOTATION_LOGS];
  return asked !== undefined && asked !== '' && req.status?.logs?.request !== asked;
}

/** Failed list/watch attempts in a row after which a remote counts as unreachable, and how soon its requests are looked at again. */
const UNREACHABLE_AFTER = 2;
const UNREACHABLE_RETRY_MS = 5_000;

export class Controller {
  /** The remote clusters, by name, with add/replace/remove (the sink of the remote providers). */
  readonly remotes: RemoteSet;
  readonly pipelineRuns: Informer<PipelineRun>;
  private sweepingCopies = false;
  readonly pipelines: Informer<Pipeline>;
  readonly configs: Informer<InternalServicesConfig>;
  /** Our ResolutionRequests (one per reference of a request being checked). */
  readonly resolutions: Informer<ResolutionRequest>;
  /** Approvals this controller made (requests whose rule requires one). */
  readonly approvals: Informer<InternalRequestApproval>;
  private readonly trust: ApprovalTrust;
  /** Tasks installed in the controller's namespace (their step refs are checked too). */
  readonly tasks: Informer<Task>;
  readonly queue: WorkQueue;
  private readonly pipelineClient: ResourceClient<Pipeline>;
  private readonly taskRunClient: ResourceClient<TaskRun>;
  /** Our PipelineRuns by request, with what we created or deleted that the cache has not shown yet. */
  private readonly runs: RunIndex;
  private readonly writer: StatusWriter;
  private readonly executor: Executor;
  private readonly admission: CapacityGate;
  private readonly keyLocks = new KeyLocks();
  private readonly configSource: ConfigSource;
  /** The RequestDefinitions, turned into the typed kinds served (unless opts.definitions is false). */
  readonly definitions: RequestDefinitions | undefined;
  private workers: Promise<void>[] = [];
  private started = false;
  private stopping = false;
  private readonly now: () => Date;
  private readonly log: Logger;
  /** Tekton Results, when followed (--results-url), and the relay of logs to requesters. */
  private readonly archive: ResultsArchive | undefined;
  private readonly logRelay: LogRelay;
  /** Whether a commit asked for by SHA is reachable from the refs a source rule allows (src/git/commit-checker.ts). */
  private readonly commitChecker: CommitChecker;
  /** The commit an exact branch or tag points at (src/git/ref-lookups.ts). */
  private readonly refLookups: RefLookups;

  constructor(private readonly opts: ControllerOptions) {
    this.log = opts.log;
    this.now = opts.now ?? (() => new Date());
    const m = opts.metrics ?? {};
    // Fair turns between remote namespaces: a flood from one does not delay another's request.
    this.queue = new WorkQueue({ observer: m.queue, baseDelayMs: 50, maxDelayMs: 5 * 60_000, tenantOf: tenantOfKey });
    this.pipelineClient = opts.internal.resource<Pipeline>(PIPELINE);
    this.taskRunClient = opts.internal.resource<TaskRun>(TASKRUN);
    this.trust = approvalTrust(opts.internal, opts.namespace);
    this.archive = opts.results ? new ResultsArchive(opts.results, this.log) : undefined;
    this.commitChecker = opts.commitChecker ?? new CommitChecker({ dir: join(tmpdir(), `internal-services-git-${process.pid}`), log: this.log.child({ component: 'commit-checker' }) });
    this.refLookups = opts.refLookups ?? new RefLookups({ log: this.log.child({ component: 'ref-lookups' }) });
    const pipelineRunReader = opts.internal.resource<PipelineRun>(PIPELINERUN);
    this.logRelay = new LogRelay((pipelineRun, archivedLog) =>
      fetchRunLogs({ namespace: opts.namespace, core: opts.internal.core, taskRuns: this.taskRunClient, pipelineRuns: pipelineRunReader, results: opts.results }, pipelineRun, archivedLog),
    );
    const kinds = opts.kinds ?? [INTERNAL_REQUEST_KIND];
    checkKinds(kinds);
    const inf = { resyncPeriodMs: opts.resyncPeriodMs ?? 10 * 60_000, observer: m.informer, ...opts.informer };

    this.writer = new StatusWriter({ log: this.log, now: this.now, metrics: opts.metrics, events: opts.events, requeue: (key) => this.queue.add(key) });
    this.admission = new CapacityGate({
      pipelineRuns: () => this.runs.all(),
      pipelineRunsSynced: () => this.pipelineRuns.synced,
      remotes: () => this.remotes.values(),
      capacity: () => this.config().capacity,
      enqueue: (key) => this.queue.add(key),
    });
    this.executor = new Executor({
      internal: opts.internal,
      namespace: opts.namespace,
      log: this.log,
      now: this.now,
      writer: this.writer,
      created: (sent, created) => {
        this.runs.created(sent, created);
        this.admission.started(sent);
      },
      deleted: (pr) => this.runs.deleted(pr),
      prunedUnarchived: () => m.prunedUnarchived?.(),
      deletedUnsigned: (reason, remote) => m.deletedUnsigned?.(reason, remote),
      requeueAfter: (key, ms) => this.queue.addAfter(key, ms),
      checkCommit: (key, owner, check) => this.commitChecker.start(owner, check, () => this.queue.add(key)),
      lookUpRef: (key, owner, lookup) => this.refLookups.lookUpRef(owner, lookup, () => this.queue.add(key)),
      askArchive: (key, pr) => this.archive?.ask(pr, () => this.queue.add(key)),
      fetchLogs: (key, owner, asked, pipelineRun, archivedLog) => this.logRelay.start(owner, asked, pipelineRun, archivedLog, () => this.queue.add(key)),
    });
    this.remotes = new RemoteSet(
      {
        enqueue: (key) => this.queue.add(key),
        worthALook: (req) => worthALook(req, this.config(), logsAsked),
        resynced: (remote) => {
          this.requeueLive(remote);
          this.sweep(remote);
        },
        dropped: (remote) => this.forgetRemote(remote.name),
        started: () => this.started,
      },
      { log: this.log, instance: opts.instance ?? 'internal-services', informer: inf, kinds },
    );

    const caches = internalCaches(opts.internal, opts.namespace, this.log, inf, {
      pipelineRun: (pr, deleted) => {
        const { key, freed } = this.runs.observed(pr, deleted);
        if (!key) return;
        this.queue.add(key);
        if (freed) this.admission.schedule();
      },
      enqueue: (key) => this.queue.add(key),
      resynced: () => this.sweep(),
    });
    ({ pipelineRuns: this.pipelineRuns, pipelines: this.pipelines, tasks: this.tasks, approvals: this.approvals, resolutions: this.resolutions } = caches);
    this.runs = new RunIndex(this.pipelineRuns, opts.namespace);
    this.configSource = new ConfigSource({
      internal: opts.internal,
      namespace: opts.namespace,
      log: this.log,
      defaultRemote: opts.remoteName,
      informer: inf,
      changed: () => this.requeueLive(),
      debugOff: () => this.sweep(),
    });
    this.configs = this.configSource.informer;
    if (opts.definitions !== false) {
      this.definitions = new RequestDefinitions({
        internal: opts.internal,
        namespace: opts.namespace,
        log: this.log.child({ component: 'request-definitions' }),
        informer: inf,
        builtIn: kinds,
        apply: (all) => this.setKinds(all),
        failing: (kind) => views.failingKind(this.remotes.values(), kind.kind),
        now: this.now,
      });
    }
  }

  /**
   * Serves one more remote (or replaces the one of that name, e.g. with a
   * rotated kubeconfig). Its requests are decided once its first full list is
   * in; until then nothing of it is decided or swept.
   */
  addRemote(spec: RemoteSpec): Remote {
    return this.remotes.addRemote(spec);
  }

  /** Stops serving a remote; its PipelineRuns are left as they are. */
  removeRemote(name: string): Promise<boolean> {
    return this.remotes.removeRemote(name);
  }

  /** Serves these request kinds from now on, on every remote (see RemoteSet.setKinds); the RequestDefinitions call it. */
  setKinds(kinds: readonly RequestKind[]): Promise<void> {
    checkKinds(kinds);
    return this.remotes.setKinds(kinds);
  }

  /** The caches of the internal cluster. */
  private get internalInformers() {
    return [this.pipelineRuns, this.pipelines, this.configs, this.resolutions, this.tasks, this.approvals];
  }

  private get informers() {
    return [...[...this.remotes.values()].flatMap((r) => r.informers()), ...this.internalInformers];
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
    if (this.stopping || this.workers.length) return;
    const n = this.opts.workers ?? 4;
    const listing = [...this.remotes.values()].filter((r) => !r.requests.synced);
    const synced = () =>
      this.log.info({ workers: n, remotes: [...this.remotes.names()], requests: [...this.remotes.values()].reduce((a, r) => a + r.size, 0), pipelineRuns: this.pipelineRuns.size }, 'caches synced');
    if (listing.length) {
      this.log.info({ workers: n, listing: listing.map((r) => r.name), requests: listing.reduce((a, r) => a + r.size, 0) }, 'starting workers; requests are decided as they are listed');
      void this.remotesSynced().then(() => {
        if (!this.stopping) synced();
      });
    } else synced();
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

  /** The effective configuration (see config-source.ts). */
  private config(): EffectiveConfig {
    return this.configSource.current();
  }

  /** Whether the InternalServicesConfig "config" exists (in the cache). */
  get configPresent(): boolean {
    return this.configSource.present;
  }

  /** Finished PipelineRuns kept because Tekton Results has not stored them yet (0 without Results). */
  awaitingResults(): number {
    return this.archive?.waiting() ?? 0;
  }

  /** How many rules of the configuration cannot be used as written (for a gauge; /readyz names them). */
  configProblems(): number {
    return this.configSource.problems().length;
  }

  /** /readyz: see views.readiness. */
  readiness(): ReadinessCheck[] {
    const checks = views.readiness([...this.remotes.values()], this.internalInformers, { namespace: this.opts.namespace, present: this.configPresent, problems: this.configSource.problems() });
    return this.definitions ? [...checks, this.definitions.readiness()] : checks;
  }

  /** Unfinished requests without a PipelineRun, per remote, by phase ("none": not looked at yet), for a gauge. */
  waitingByPhase(): Record<string, Record<string, number>> {
    return views.waitingByPhase(this.remotes.values());
  }

  /** Requests whose PipelineRun is running (for the concurrency gauge). */
  runningRequests(): number {
    return views.runningRequests(this.remotes.values());
  }

  /** Per remote: our unfinished PipelineRuns running past their own timeout (see views.pipelineRunsPastTimeout). */
  pipelineRunsPastTimeout(now = Date.now()): Record<string, number> {
    return views.pipelineRunsPastTimeout(this.remotes.names(), this.pipelineRuns.list(), now, (r) => this.remotes.get(r)?.metricsName ?? r);
  }

  /** A remote is no longer served: what was kept for it (status bookkeeping, retry counts, fair turns) goes too. */
  private forgetRemote(name: string): void {
    this.writer.forgetRemote(name);
    this.queue.forgetPrefix(`${name}/`);
    this.admission.forgetRemote(name);
  }

  /** Per remote: 1 when its requests are listed and its cluster answers. */
  remoteHealth(): Array<{ remote: string; up: boolean }> {
    return views.remoteHealth(this.remotes.values());
  }

  /** Milliseconds since each cache last heard from its cluster. */
  lastContact(): Array<{ informer: string; ms: number }> {
    return views.lastContact(this.informers);
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
    await Promise.all([...this.internalInformers.map((i) => i.stop()), this.remotes.stopAll(), this.definitions?.stop()]);
    this.opts.internal.close();
  }

  /**
   * Every unfinished request (and, with ttlSecondsAfterFinished, the finished
   * ones): at each resync, and when the configuration changes — it decides
   * the waiting ones and may revoke running ones (onRevoke: cancel).
   */
  private requeueLive(only?: Remote): void {
    const ttl = this.config().ttlSecondsAfterFinished !== undefined;
    for (const remote of only ? [only] : this.remotes.values()) {
      for (const [key, r] of remote.entries(true)) if (ttl || !isFinished(r)) this.queue.add(key);
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
    for (const key of this.runs.requestKeys()) if (mine(key)) this.queue.add(key);
    if (this.resolutions.synced) {
      for (const rr of this.resolutions.list()) {
        const key = requestKeyOf({ metadata: rr.metadata ?? {} });
        if (key && mine(key)) this.queue.add(key);
      }
    }
    this.runs.expire();
    this.writer.expire();
    if (!only && !this.sweepingCopies) {
      this.sweepingCopies = true;
      sweepStepActionCopies(this.opts.internal.resource<StepActionCopy>(STEPACTION), this.opts.namespace, this.pipelineRuns.list(), this.opts.now?.().getTime() ?? Date.now(), this.log)
        .catch((e: unknown) => this.log.warn({ err: describeError(e) }, 'could not list the StepAction copies to remove unused ones'))
        .finally(() => (this.sweepingCopies = false));
    }
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
    return this.writer.current(key, this.remotes.cached(key));
  }

  /**
   * Reconciles one request key (what the workers call). `observed`: a copy
   * of the request to decide on instead of the cache's, as if read fresh
   * (tests use it to decide on a stale copy).
   */
  async reconcile(key: string, observed?: InternalRequest): Promise<void> {
    const request = observed ?? this.currentRequest(key);
    if (!this.admission.capped || !request || isFinished(request) || request.status?.pipelineRun) return this.reconcileNow(key, observed);
    return this.admission.serialize(() => this.reconcileNow(key, observed));
  }

  /** Decisions about requests with the same idempotency key, one at a time (two workers must not both start one). */
  private async reconcileNow(key: string, observed?: InternalRequest): Promise<void> {
    const req = observed ?? this.currentRequest(key);
    const idem = req && !isFinished(req) ? idempotencyKeyOf(req) : undefined;
    if (!idem) return this.reconcileOne(key, observed);
    const k = splitKey(key);
    return this.keyLocks.run(`${k.remote}/${req!.metadata.namespace}/${idem}${k.kind ? `/${k.kind}` : ''}`, () => this.reconcileOne(key, observed));
  }

  /**
   * Observe, decide(), act: one request key, in that order. Some answers of
   * a cache are confirmed against the cluster before they are acted on
   * (reads, below); each is made at most once, and then the key is observed
   * and decided again in the same loop. Nothing here is entered twice: a
   * conflicting status write requeues the key (status-writer.ts), a need
   * (a resolution, a commit check, Results, logs) is started by the
   * executor and brings the key back when it is in.
   */
  private async reconcileOne(key: string, observed?: InternalRequest): Promise<void> {
    // A remote that is not served (removed, or not added yet): nothing of it
    // is decided, no PipelineRun of it swept.
    const remote = this.remotes.served(key);
    if (!remote) return;
    // A kind that is not served (any more): its requests and what was made
    // for them are left as they are, like those of a remote not served.
    const kind = remote.kindOf(key);
    if (!kind) return;
    // A remote that is failing (the kind's cache cannot list or watch): its requests
    // are looked at again later rather than tying up workers with calls that
    // time out, so that the other remotes are served meanwhile.
    if (kind.requests.health.failures >= UNREACHABLE_AFTER) {
      this.queue.addAfter(key, UNREACHABLE_RETRY_MS);
      return;
    }
    const conflicted = this.writer.conflicted(key);
    const attempt = conflicted?.attempt ?? 0;
    const reads: LiveReads = { request: conflicted || observed ? 'read' : undefined };
    let request = observed ?? this.currentRequest(key);
    for (;;) {
      const seen = await this.observe(key, remote, kind, request, reads);
      if (!seen) return;
      const actions = decide(seen.observation);
      const read = liveReadFor(actions, seen, reads, kind.kind.builtIn);
      if (read === 'request' || read === 'confirm') {
        // A typed kind's request is decided again on a fresh read before
        // its spec is acted on (a run, an approval, an outcome): a watch
        // opened under an older CRD of the kind serves its objects pruned by
        // the older schema; a read is served under the CRD of now. A
        // finished request is cached in brief (cached-requests.ts): a status write for
        // it starts from a fresh read. And a negative answer of the cache is
        // confirmed before it removes what was made for a request the cache
        // does not show (it may be behind: listing.ts).
        const k = splitKey(key);
        const got = read === 'request' ? await kind.client.tryGet(k.namespace, k.name) : await confirmingRead(kind.client, this.log, key, k.namespace, k.name);
        reads.request = 'read';
        if (read === 'request' && (!got || got.metadata.uid !== request?.metadata.uid)) return; // gone or replaced: its delete event brings the key back
        if (got && got.metadata.uid !== request?.metadata.uid) {
          request = kind.kind.toRequest(got as never);
          continue;
        }
        if (read === 'request') {
          request = kind.kind.toRequest(got as never);
          continue;
        }
      } else if (read === 'pipeline') {
        reads.pipeline = (await this.pipelineClient.tryGet(this.opts.namespace, seen.pipelineName!)) ?? null;
        if (reads.pipeline) continue;
      } else if (read === 'pipelineRun') {
        reads.pipelineRun = (await this.executor.prClient.tryGet(this.opts.namespace, pipelineRunName(seen.uid!))) ?? null;
        if (reads.pipelineRun) continue;
      }
      for (const action of actions) {
        const ok = await this.executor.act(remote, key, request, action, attempt);
        this.opts.metrics?.acted?.(action.type, ok);
        if (!ok) return;
      }
      return;
    }
  }

  /** What the observation step reads (observe.ts): made once, on the first reconcile (the caches exist by then). */
  private observeSources: ObserveSources | undefined;

  private observe(key: string, remote: Remote, kind: NonNullable<ReturnType<Remote['kindOf']>>, request: InternalRequest | undefined, reads: LiveReads): Promise<Seen | undefined> {
    this.observeSources ??= {
      namespace: this.opts.namespace,
      config: () => this.config(),
      now: this.now,
      log: this.log,
      runs: this.runs,
      pipelines: this.pipelines,
      tasks: this.tasks,
      resolutions: this.resolutions,
      approvals: this.approvals,
      taskRuns: this.taskRunClient,
      trust: this.trust,
      followers: this.followerSources,
      capacity: () => this.admission.view(),
      ...(this.archive ? { archive: this.archive } : {}),
      logs: this.logRelay,
      commits: this.commitChecker,
      refs: this.refLookups,
      ...(this.opts.tektonVersion ? { tektonVersion: this.opts.tektonVersion } : {}),
      refuseResolversOnAdvisory: this.opts.refuseResolversOnAdvisory === true,
    };
    return observe(this.observeSources, key, remote, kind, request, reads);
  }

  private readonly followerSources = {
    sameKey: (remote: string, namespace: string, key: string, kind?: RequestKind) => this.remotes.sameKey(remote, namespace, key, kind),
    currentRequest: (key: string) => this.currentRequest(key),
    pipelineRunsFor: (key: string) => this.runs.forRequest(key),
  };
}
