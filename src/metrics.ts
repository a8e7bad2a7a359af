/**
 * Prometheus metrics. The three internal_request_attempt_* series keep the
 * names and labels of the Go controller this project replaces, so existing
 * dashboards carry over; the internal_services_* series are what an operator
 * needs to see the controller itself.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ControllerMetrics } from './controller/options.js';
import type { RequestObserver } from './kube/client.js';
import type { CommitCheckerMetrics } from './git/commit-checker.js';
import type { PathChecksOptions } from './git/path-checks.js';
import { describeRequested } from './controller/requested-run.js';

export interface Metrics {
  registry: Registry;
  controller: ControllerMetrics;
  /** Commits asked for by SHA, looked for in their repositories (src/git/commit-checker.ts). */
  commitChecks: CommitCheckerMetrics;
  /** git pathInRepo checked at its commit for symbolic links and submodules (src/git/path-checks.ts). */
  pathChecks: NonNullable<PathChecksOptions['metrics']>;
  apiObserver: RequestObserver;
  /** Set the callbacks read at scrape time. */
  bind(sources: { running(): number; lastContact(): Array<{ informer: string; ms: number }>; leader(): boolean; configPresent(): boolean; configProblems?(): number; incumbentPresent?(): number; waiting(): Record<string, Record<string, number>>; remotes(): Array<{ remote: string; up: boolean }>; pastTimeout?(): Record<string, number>; awaitingResults?(): number; deletesDenied?(): Record<string, number>; tekton?(): { version: string; advisories: Record<string, number> }; tektonComponents?(): Record<string, Record<string, number>>; tektonSettings?(): Array<{ setting: string; value: string }>; kcpShards?(): Array<{ shard: string; up: boolean; workspaces: number; waiting?: number }> }): void;
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const ATTEMPT_BUCKETS = [1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200];

/** Kubernetes verb of a request, from its method and URL (watches do not pass here). */
export function verbOf(method: string, url: string): string {
  const m = method.toUpperCase();
  if (m === 'POST') return 'create';
  if (m === 'PUT') return 'update';
  if (m === 'PATCH') return 'patch';
  if (m === 'DELETE') return 'delete';
  if (m !== 'GET') return m.toLowerCase();
  const u = new URL(url, 'https://x');
  if (u.searchParams.get('watch') === 'true') return 'watch';
  // /api/v1/... or /apis/group/version/...; then [namespaces/NS/]plural[/name[/sub]]
  const parts = u.pathname.split('/').filter(Boolean);
  let rest = parts[0] === 'api' ? parts.slice(2) : parts.slice(3);
  if (rest[0] === 'namespaces' && rest.length >= 3) rest = rest.slice(2);
  return rest.length >= 2 ? 'get' : 'list';
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const labels = ['request', 'namespace', 'reason', 'succeeded', 'remote'] as const;
  const attempts = new Counter({ name: 'internal_request_attempt_total', help: 'InternalRequests that reached a final state', labelNames: labels, registers: [registry] });
  const attemptDuration = new Histogram({
    name: 'internal_request_attempt_duration_seconds',
    help: 'Time from the creation of an InternalRequest to its final state',
    labelNames: labels,
    buckets: ATTEMPT_BUCKETS,
    registers: [registry],
  });
  const runningLabels = ['request', 'namespace', 'remote'] as const;
  const timeToRunning = new Histogram({
    name: 'internal_request_time_to_running_seconds',
    help: 'Time from the creation of an InternalRequest to its PipelineRun being created (status Running written), approvals and queueing included',
    labelNames: runningLabels,
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600],
    registers: [registry],
  });
  const deletedUnsigned = new Counter({
    name: 'internal_services_pipelineruns_deleted_unsigned_total',
    help: 'With Tekton Chains (spec.chains.enabled): PipelineRuns removed without a signature, by why — timeout (none within spec.chains.signedTimeout: is Chains running?), failed (Chains gave up), no-signature (Chains marked the run signed but stored no signature: its signer or format is misconfigured)',
    labelNames: ['reason', 'remote'],
    registers: [registry],
  });
  let sources: Parameters<Metrics['bind']>[0] | undefined;
  new Gauge({
    name: 'internal_services_pipelineruns_past_timeout',
    help: "Our unfinished PipelineRuns, per remote, running more than 5 minutes past their own timeouts.pipeline: Tekton should have ended them (is its controller running?)",
    labelNames: ['remote'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [remote, n] of Object.entries(sources?.pastTimeout?.() ?? {})) this.set({ remote }, n);
    },
  });
  new Gauge({
    name: 'internal_request_attempt_concurrent_requests',
    help: 'InternalRequests whose PipelineRun is running',
    registers: [registry],
    collect() {
      this.set(sources?.running() ?? 0);
    },
  });
  const depth = new Gauge({ name: 'internal_services_workqueue_depth', help: 'Requests waiting in the work queue', registers: [registry] });
  const adds = new Counter({ name: 'internal_services_workqueue_adds_total', help: 'Keys added to the work queue', registers: [registry] });
  const retries = new Counter({ name: 'internal_services_workqueue_retries_total', help: 'Keys re-queued with backoff after an error', registers: [registry] });
  const queueLatency = new Histogram({ name: 'internal_services_workqueue_queue_duration_seconds', help: 'Time a key waits in the queue', buckets: LATENCY_BUCKETS, registers: [registry] });
  const workDuration = new Histogram({ name: 'internal_services_reconcile_duration_seconds', help: 'Time of one reconcile', buckets: LATENCY_BUCKETS, registers: [registry] });
  const reconciles = new Counter({ name: 'internal_services_reconcile_total', help: 'Reconciles by result', labelNames: ['result'], registers: [registry] });
  const reconcileErrors = new Counter({ name: 'internal_services_reconcile_errors_total', help: 'Reconciles that failed and will be retried', registers: [registry] });
  const actions = new Counter({ name: 'internal_services_actions_total', help: 'Actions carried out, by type and outcome', labelNames: ['action', 'ok'], registers: [registry] });
  const watchEvents = new Counter({ name: 'internal_services_watch_events_total', help: 'Watch events received', labelNames: ['informer', 'type'], registers: [registry] });
  const reconnects = new Counter({ name: 'internal_services_watch_reconnects_total', help: 'Watch restarts: relist (periodic or 410) or error', labelNames: ['informer', 'reason'], registers: [registry] });
  new Gauge({
    name: 'internal_services_watch_last_contact_age_seconds',
    help: 'Seconds since an informer last heard from its cluster (list, event or bookmark)',
    labelNames: ['informer'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { informer, ms } of sources?.lastContact() ?? []) this.set({ informer }, ms / 1000);
    },
  });
  const apiRequests = new Counter({ name: 'internal_services_api_requests_total', help: 'Kubernetes API requests by cluster (remote or internal), remote name, verb and status code', labelNames: ['cluster', 'remote', 'verb', 'code'], registers: [registry] });
  const apiLatency = new Histogram({ name: 'internal_services_api_request_duration_seconds', help: 'Kubernetes API request latency', labelNames: ['cluster', 'remote', 'verb'], buckets: LATENCY_BUCKETS, registers: [registry] });
  new Gauge({
    name: 'internal_services_remote_up',
    help: 'Per remote cluster: 1 while its requests are listed and it answers, 0 while it cannot be reached (the others are served meanwhile)',
    labelNames: ['remote'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { remote, up } of sources?.remotes() ?? []) this.set({ remote }, up ? 1 : 0);
    },
  });
  new Gauge({
    name: 'internal_services_kcp_shard_up',
    help: 'Per kcp shard of the APIExport (its virtual workspace host:port): 1 while its caches are listed and connected, 0 while it cannot be reached (the other shards are served meanwhile)',
    labelNames: ['shard'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { shard, up } of sources?.kcpShards?.() ?? []) this.set({ shard }, up ? 1 : 0);
    },
  });
  new Gauge({
    name: 'internal_services_kcp_workspaces',
    help: 'Per kcp shard: workspaces served from it (bound to the export, binding ready)',
    labelNames: ['shard'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { shard, workspaces } of sources?.kcpShards?.() ?? []) this.set({ shard }, workspaces);
    },
  });
  new Gauge({
    name: 'internal_services_kcp_workspaces_waiting',
    help: 'Per kcp shard: workspaces served from it whose requests wait because their path cannot be read yet (a workspace parent cannot be read; phase WaitingForWorkspace), or is being read for the first time; nothing of them is decided meanwhile',
    labelNames: ['shard'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { shard, waiting } of sources?.kcpShards?.() ?? []) this.set({ shard }, waiting ?? 0);
    },
  });
  new Gauge({
    name: 'internal_services_requests_waiting',
    help: 'Unfinished requests that have no PipelineRun yet, by phase (the reason of their Progressing condition: WaitingForWorkspace, WaitingForConfig, Resolving, AwaitingApproval, Queued, Following, or none: not looked at yet)',
    labelNames: ['remote', 'phase'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [remote, byPhase] of Object.entries(sources?.waiting() ?? {})) for (const [phase, n] of Object.entries(byPhase)) this.set({ remote, phase }, n);
    },
  });
  new Gauge({
    name: 'internal_services_config_present',
    help: '1 while the InternalServicesConfig "config" exists; 0: new requests wait (phase WaitingForConfig)',
    registers: [registry],
    collect() {
      this.set(sources?.configPresent() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'internal_services_incumbent_present',
    help: '1 while the Go controller this one replaces may run on the internal cluster (its Deployment has replicas, or its leader-election Lease is held, or they cannot be read): no request is acted on; 0 once it is gone (always 0 with --no-incumbent-check)',
    registers: [registry],
    collect() {
      this.set(sources?.incumbentPresent?.() ?? 0);
    },
  });
  new Gauge({
    name: 'internal_services_config_problems',
    help: 'Rules of the InternalServicesConfig "config" that cannot be used as written (e.g. a source glob with a "." or ".." segment, or a "**" inside a segment); each is refused, never widened, and named on /readyz (check config-rules) and in the configuration log',
    registers: [registry],
    collect() {
      this.set(sources?.configProblems?.() ?? 0);
    },
  });
  new Gauge({
    name: 'internal_services_pipelineruns_awaiting_results',
    help: 'Finished PipelineRuns kept because Tekton Results has not stored them (the run and its logs) yet; pruning waits for it, at most resultsStoreTimeout',
    registers: [registry],
    collect() {
      this.set(sources?.awaitingResults?.() ?? 0);
    },
  });
  const closedWorldRefusals = new Counter({
    name: 'internal_services_closed_world_refusals_total',
    help: 'Requests Rejected (REQUEST_NOT_CLOSED) because the PipelineRun built for them failed the closed-world check just before the create: it would have asked Tekton to resolve something the controller did not check. Any increase is a gap in the controller\'s own walk',
    registers: [registry],
  });
  closedWorldRefusals.inc(0);
  const prunedUnarchived = new Counter({
    name: 'internal_services_pipelineruns_pruned_unarchived_total',
    help: 'Finished PipelineRuns deleted before Tekton Results had stored them, because resultsStoreTimeout ran out (their records or logs may be missing from Results)',
    registers: [registry],
  });
  new Gauge({
    name: 'internal_services_remote_deletes_denied',
    help: '1 while a remote cluster refuses the deletes of finished requests that ttlSecondsAfterFinished asks for (the controller lacks config/rbac/remote-ttl there; it asks again every 10 minutes), else 0',
    labelNames: ['remote'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [remote, v] of Object.entries(sources?.deletesDenied?.() ?? {})) this.set({ remote }, v);
    },
  });
  new Gauge({
    name: 'internal_services_leader',
    help: '1 while this instance is the leader (or runs without leader election)',
    registers: [registry],
    collect() {
      this.set(sources?.leader() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'internal_services_tekton_info',
    help: 'Always 1, labelled with the Tekton Pipelines version of the internal cluster (data.version of its pipelines-info ConfigMap; "unknown" when it cannot be read)',
    labelNames: ['version'],
    registers: [registry],
    collect() {
      this.reset();
      const t = sources?.tekton?.();
      if (t) this.set({ version: t.version }, 1);
    },
  });
  new Gauge({
    name: 'internal_services_tekton_advisories',
    help: 'Per published advisory of Tekton Pipelines in the git resolver this controller relies on (src/tekton/advisories.ts): 1 when it applies to the internal cluster\'s Tekton version, else 0; advisory="unknown-version" is 1 while the version cannot be told (none can be ruled out)',
    labelNames: ['advisory'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [advisory, n] of Object.entries(sources?.tekton?.().advisories ?? {})) this.set({ advisory }, n);
    },
  });
  new Gauge({
    name: 'internal_services_tekton_component_status',
    help: 'Per Tekton component of the internal cluster (pipelines, results, chains: the version in its info ConfigMap, read at start and every --tekton-version-interval, 1 minute by default), 1 for why it is reported as it is and 0 for its other reasons: ok (supported; Pipelines: no known advisory), not_installed (no info ConfigMap; Results and Chains), too_old (below the supported range), newer_than_tested (a later line than tested; advisory), advisory (Pipelines: a known advisory), unknown (the version cannot be told)',
    labelNames: ['component', 'reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [component, reasons] of Object.entries(sources?.tektonComponents?.() ?? {})) for (const [reason, n] of Object.entries(reasons)) this.set({ component, reason }, n);
    },
  });

  new Gauge({
    name: 'internal_services_tekton_setting',
    help: 'Tekton settings that change what a reference means, read at start and every --tekton-version-interval: 1 for the value in force of each setting. setting="default-resolver-type" (ConfigMap config-defaults of Tekton\'s namespace): unset, the resolver a reference with neither name nor resolver is given (git, hub, bundles, cluster, http, other), or unknown; setting="enable-git-resolver" (and hub, bundles, cluster, http; ConfigMap resolvers-feature-flags of the resolvers\' namespace): true, false or unknown',
    labelNames: ['setting', 'value'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { setting, value } of sources?.tektonSettings?.() ?? []) this.set({ setting, value }, 1);
    },
  });

  const commitChecks = new Counter({
    name: 'internal_services_source_commit_checks_total',
    help: 'Commits asked for by SHA, looked for in their repository from the refs a source rule allows, by result: reachable, unreachable (refused), failed (the source could not be checked; the request is refused)',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const commitCheckSeconds = new Histogram({ name: 'internal_services_source_commit_check_duration_seconds', help: 'Time to answer one commit check, fetch included', buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120], registers: [registry] });
  const sourceFetches = new Counter({ name: 'internal_services_source_fetches_total', help: 'Clones and fetches of the repositories commits are checked in, by result', labelNames: ['ok'] as const, registers: [registry] });
  for (const result of ['reachable', 'unreachable', 'failed']) commitChecks.inc({ result }, 0);
  const pathChecks = new Counter({
    name: 'internal_services_source_path_checks_total',
    help: 'git pathInRepo checked in the repository at the commit to be resolved, by result: ok (a regular file reached through directories), refused (a symbolic link or submodule at some depth, missing, or not a file; the request is refused), failed (the repository could not be asked; the request is refused)',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const pathCheckSeconds = new Histogram({ name: 'internal_services_source_path_check_duration_seconds', help: 'Time to answer one path check, fetch of the commit\'s trees included', buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120], registers: [registry] });
  for (const result of ['ok', 'refused', 'failed']) pathChecks.inc({ result }, 0);

  return {
    registry,
    commitChecks: {
      checked(result, seconds) {
        commitChecks.inc({ result });
        commitCheckSeconds.observe(seconds);
      },
      fetched(ok) {
        sourceFetches.inc({ ok: String(ok) });
      },
    },
    pathChecks: {
      checked(result, seconds) {
        pathChecks.inc({ result });
        pathCheckSeconds.observe(seconds);
      },
    },
    bind(s) {
      sources = s;
    },
    apiObserver(cluster, method, url, code, seconds, remote) {
      const verb = verbOf(method, url);
      apiRequests.inc({ cluster, remote: remote ?? '', verb, code: String(code) });
      apiLatency.observe({ cluster, remote: remote ?? '', verb }, seconds);
    },
    controller: {
      queue: {
        added(d) {
          adds.inc();
          depth.set(d);
        },
        taken(wait, d) {
          queueLatency.observe(wait);
          depth.set(d);
        },
        retried() {
          retries.inc();
        },
      },
      informer: {
        event(informer, type) {
          watchEvents.inc({ informer, type });
        },
        reconnect(informer, reason) {
          reconnects.inc({ informer, reason });
        },
      },
      reconciled(seconds, error) {
        workDuration.observe(seconds);
        reconciles.inc({ result: error ? 'error' : 'ok' });
        if (error) reconcileErrors.inc();
      },
      acted(action, ok) {
        actions.inc({ action, ok: String(ok) });
      },
      prunedUnarchived() {
        prunedUnarchived.inc();
      },
      closedWorldRefused() {
        closedWorldRefusals.inc();
      },
      started(req, seconds, remote) {
        timeToRunning.observe({ request: describeRequested(req.spec), namespace: req.metadata.namespace ?? '', remote }, seconds);
      },
      deletedUnsigned(reason, remote) {
        deletedUnsigned.inc({ reason, remote });
      },
      finished(req, reason, succeeded, seconds, remote) {
        const l = { request: describeRequested(req.spec), namespace: req.metadata.namespace ?? '', reason, succeeded: String(succeeded), remote };
        attempts.inc(l);
        attemptDuration.observe(l, seconds);
      },
    },
  };
}
