/** `internal-services controller`: the controller process. */
import { existsSync, readFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CommitChecker, DEFAULT_MAX_BYTES, DEFAULT_MAX_TOTAL_BYTES } from '../git/commit-checker.js';
import { PathChecks } from '../git/path-checks.js';
import { Command, Option } from 'commander';
import { connect, type Cluster } from '../kube/client.js';
import { ResultsApi } from '../controller/results-client.js';
import { Controller } from '../controller/controller.js';
import { EVENTS_MODES, type EventsMode } from '../controller/status-writer.js';
import { ConfigError } from '../errors.js';
import { createLogger } from '../log.js';
import { nodeSupport } from '../util/node-support.js';
import { randomUUID } from 'node:crypto';
import { startHealthServer, startMetricsServer, parseBindAddress } from './health.js';
import { LeaderElector } from '../kube/leader.js';
import { INCUMBENT_DEPLOYMENT, INCUMBENT_LEASE, INCUMBENT_NAMESPACE, IncumbentPreflight } from '../migrate/incumbent-preflight.js';
import { incumbentWatches } from '../migrate/incumbent-watch.js';
import { createMetrics } from '../metrics.js';
import { checkProviderFlags, readKcpKubeconfig, remoteProviders } from './remote-providers.js';
import { byteSize, duration, namespaceName, positiveInt, remoteName, secretNames, shortDuration, workspacePaths } from './flag-parsers.js';
import { loadKindModules } from './kind-modules.js';
import { INTERNAL_REQUEST_KIND } from '../requests/request-kind.js';
import { DEFAULT_REMOTE } from '../policy/tenant.js';
import { configMapReader, DEFAULT_TEKTON_NAMESPACE, TektonVersion } from '../controller/tekton-version.js';
import { CHAINS, RESULTS } from '../tekton/components.js';
import { defaultResolversNamespace, TektonSettingsFollower } from '../controller/tekton-settings.js';
import { EventRecorder } from '../kube/events.js';
import { CONFIG_NAME, INTERNAL_SERVICES_CONFIG } from '../api/types.js';

const SA_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

export interface ControllerFlags {
  remoteKubeconfig?: string;
  resultsUrl?: string;
  resultsCaFile?: string;
  resultsLogsOptional?: boolean;
  remoteName: string;
  remoteSecretsSelector?: string;
  remoteSecret?: string[];
  remoteSecretsNamespace?: string;
  remoteKubeconfigDir?: string;
  remoteKubeconfigDirInterval: number;
  kcpKubeconfig?: string;
  kcpExport: string;
  kcpEndpointSlice?: string;
  kcpWorkspaceParent?: string[];
  kcpRefreshInterval: number;
  kcpUnbindGrace: number;
  kubeconfig?: string;
  namespace?: string;
  metricsBindAddress: string;
  healthProbeBindAddress: string;
  workers: number;
  resyncPeriod: number;
  remoteMode: 'watch' | 'poll';
  pollInterval: number;
  logLevel: string;
  events: EventsMode;
  leaderElect: boolean;
  leaderElectionId: string;
  leaderElectionNamespace?: string;
  leaseDuration: number;
  renewDeadline: number;
  retryPeriod: number;
  tektonNamespace: string;
  tektonResultsNamespace?: string;
  tektonChainsNamespace: string;
  tektonResolversNamespace?: string;
  tektonVersionInterval: number;
  refuseResolversOnAdvisory: boolean;
  gitCacheDir?: string;
  requestKindModule?: string[];
  sourceCheckTimeout: number;
  sourceCheckMaxSize: number;
  sourceCheckCacheSize: number;
  incumbentCheck: boolean;
  drain: boolean;
  incumbentNamespace: string;
  incumbentDeployment: string;
  incumbentLease: string;
}

export function controllerCommand(): Command {
  return new Command('controller')
    .description('Run the controller: serve InternalRequests of the remote cluster with Pipelines of the internal cluster')
    .addOption(new Option('--remote-kubeconfig <path>', 'kubeconfig of a remote cluster (as mounted from a Secret)').env('REMOTE_KUBECONFIG'))
    .addOption(new Option('--remote-name <name>', 'name of the --remote-kubeconfig remote (bare namespaces in the configuration name it)').env('REMOTE_NAME').default(DEFAULT_REMOTE).argParser(remoteName))
    .addOption(
      new Option('--remote-secrets-selector <selector>', 'serve the remote clusters of the kubeconfig Secrets with these labels (followed live), e.g. internal-services.appstudio.redhat.com/remote=true').env(
        'REMOTE_SECRETS_SELECTOR',
      ),
    )
    .addOption(new Option('--kcp-kubeconfig <path>', 'serve every kcp workspace that binds the request API: a kubeconfig of the provider workspace (where the APIExport is); requests are read and written through the export\'s virtual workspace').env('KCP_KUBECONFIG'))
    .addOption(new Option('--kcp-export <name>', 'the APIExport of the request API in the provider workspace').env('KCP_EXPORT').default('appstudio.redhat.com'))
    .addOption(
      new Option('--kcp-endpoint-slice <name>', "the APIExportEndpointSlice to serve, in the provider workspace (default: the export's own, named as the export); a partitioned slice (spec.partition) serves only the shards its Partition selects: one controller per partition").env(
        'KCP_ENDPOINT_SLICE',
      ),
    )
    .addOption(new Option('--kcp-workspace-parent <path...>', 'kcp workspaces whose Workspaces tell each tenant\'s path, which the configuration\'s rules name (default: root); the tree below them is walked wherever the controller may read it (config/kcp/parent), so name a parent only below a workspace it may not read').env('KCP_WORKSPACE_PARENTS').argParser(workspacePaths))
    .addOption(new Option('--kcp-refresh-interval <duration>', 'how often the workspace parents are read again (the endpoint slice, one virtual workspace URL per kcp shard, is watched: shards that come and go are followed at once)').env('KCP_REFRESH_INTERVAL').default(60_000, '60s').argParser(shortDuration))
    .addOption(new Option('--kcp-unbind-grace <duration>', 'after a workspace unbinds the export (or is deleted): how long it stays served so that the deletes of its requests are acted on (their runs stopped), before it is forgotten').env('KCP_UNBIND_GRACE').default(30_000, '30s').argParser(shortDuration))
    .addOption(new Option('--remote-secret <name...>', 'serve the remote clusters of these kubeconfig Secrets (followed live; lets RBAC name exactly them)').env('REMOTE_SECRETS').argParser(secretNames))
    .addOption(new Option('--remote-secrets-namespace <name>', 'namespace of those Secrets (default: --namespace)').env('REMOTE_SECRETS_NAMESPACE'))
    .addOption(
      new Option('--remote-kubeconfig-dir <path>', 'serve one remote cluster per kubeconfig file of this directory, named by the file ("prod" or "prod.kubeconfig": remote prod), e.g. mounted Secrets; read again every --remote-kubeconfig-dir-interval').env(
        'REMOTE_KUBECONFIG_DIR',
      ),
    )
    .addOption(new Option('--remote-kubeconfig-dir-interval <duration>', 'how often --remote-kubeconfig-dir is read again (files added, changed, removed)').env('REMOTE_KUBECONFIG_DIR_INTERVAL').default(10_000, '10s').argParser(shortDuration))
    .addOption(new Option('--kubeconfig <path>', 'kubeconfig of the internal cluster (default: in-cluster config)').env('KUBECONFIG'))
    .addOption(new Option('--namespace <name>', "the controller's namespace on the internal cluster (default: the pod's)").env('POD_NAMESPACE'))
    .addOption(new Option('--metrics-bind-address <addr>', 'address of the Prometheus metrics endpoint; 0 disables').env('METRICS_BIND_ADDRESS').default(':8080'))
    .addOption(new Option('--health-probe-bind-address <addr>', 'address of /healthz and /readyz; 0 disables').env('HEALTH_PROBE_BIND_ADDRESS').default(':8081'))
    .addOption(new Option('--workers <n>', 'requests reconciled in parallel').env('WORKERS').default(4).argParser(positiveInt))
    .addOption(new Option('--resync-period <duration>', 'full relist and orphan sweep period').env('RESYNC_PERIOD').default(600_000, '10m').argParser(duration))
    .addOption(
      new Option('--remote-mode <mode>', 'how requests are followed on the remote cluster: watch, or poll (for proxies that cut long-lived connections)').env('REMOTE_MODE').default('watch').choices(['watch', 'poll']),
    )
    .addOption(new Option('--poll-interval <duration>', 'with --remote-mode poll: time between two lists of the remote requests (±20%)').env('POLL_INTERVAL').default(10_000, '10s').argParser(shortDuration))
    .addOption(
      new Option('--events <which>', 'Events recorded on requests: important (failures, rejections, approvals, notices), all (also Running and Succeeded), warnings (only Warning Events) or none')
        .env('EVENTS')
        .default('important')
        .choices([...EVENTS_MODES]),
    )
    .addOption(
      new Option('--results-url <url>', "Tekton Results' API (https): finished PipelineRuns are pruned only once it has stored them, and requesters' asks for logs are answered from it after pruning; the controller authenticates with its own internal-cluster token").env('RESULTS_URL'),
    )
    .addOption(new Option('--results-ca-file <path>', "PEM file of the CA that signed the Results API's certificate (default: the system's CAs)").env('RESULTS_CA_FILE'))
    .addOption(new Option('--results-logs-optional', 'count a run as stored once Results holds its record, without its logs (for a Results that does not store logs)').env('RESULTS_LOGS_OPTIONAL').default(false))
    .addOption(new Option('--request-kind-module <path...>', 'ES modules whose default export is a request kind written as code (or a list of them), served beside InternalRequest (docs/request-kinds.md)').env('REQUEST_KIND_MODULES'))
    .addOption(new Option('--git-cache-dir <path>', 'where the partial clones that commits asked for by SHA are checked in live (commits: {reachable: true}); default: a folder under the temporary directory').env('GIT_CACHE_DIR'))
    .addOption(new Option('--source-check-timeout <duration>', 'deadline of one git command (clone, fetch, history walk) of a commit check').env('SOURCE_CHECK_TIMEOUT').default(60_000, '60s').argParser(shortDuration))
    .addOption(new Option('--source-check-max-size <bytes>', 'largest clone kept to check commits in (bytes; a larger repository is reported and its commits refused)').env('SOURCE_CHECK_MAX_SIZE').default(DEFAULT_MAX_BYTES, '512Mi').argParser(byteSize))
    .addOption(
      new Option(
        '--source-check-cache-size <bytes>',
        'most all the clones kept to check commits in may take together, at least --source-check-max-size (bytes; the least recently used clones not in use are removed to make room, and a check that still does not fit is failed, its request refused); keep it below the size limit of the --git-cache-dir volume',
      )
        .env('SOURCE_CHECK_CACHE_SIZE')
        .default(DEFAULT_MAX_TOTAL_BYTES, '1Gi')
        .argParser(byteSize),
    )
    .addOption(new Option('--leader-elect', 'elect a leader among replicas with a Lease; only the leader acts').env('LEADER_ELECT').default(false))
    .addOption(new Option('--leader-election-id <name>', 'name of the Lease').env('LEADER_ELECTION_ID').default('internal-services-controller'))
    .addOption(new Option('--leader-election-namespace <name>', 'namespace of the Lease (default: --namespace)').env('LEADER_ELECTION_NAMESPACE'))
    .addOption(new Option('--lease-duration <duration>', 'how long a standby waits before taking over a lease that is not renewed').default(15_000, '15s').argParser(shortDuration))
    .addOption(new Option('--renew-deadline <duration>', 'how long the leader tries to renew before it stops acting').default(10_000, '10s').argParser(shortDuration))
    .addOption(new Option('--retry-period <duration>', 'interval between lease attempts').default(2_000, '2s').argParser(shortDuration))
    .addOption(new Option('--tekton-namespace <name>', "namespace of Tekton Pipelines on the internal cluster, whose ConfigMap pipelines-info says its version (checked against Tekton's advisories)").env('TEKTON_NAMESPACE').default(DEFAULT_TEKTON_NAMESPACE).argParser(namespaceName))
    .addOption(new Option('--tekton-results-namespace <name>', `namespace of Tekton Results on the internal cluster, whose ConfigMap ${RESULTS.configMap} says its version (checked against the supported range; none there: not installed); default: --tekton-namespace, where its release installs it`).env('TEKTON_RESULTS_NAMESPACE').argParser(namespaceName))
    .addOption(new Option('--tekton-chains-namespace <name>', `namespace of Tekton Chains on the internal cluster, whose ConfigMap ${CHAINS.configMap} says its version (checked against the supported range; none there: not installed)`).env('TEKTON_CHAINS_NAMESPACE').default(CHAINS.releaseNamespace).argParser(namespaceName))
    .addOption(
      new Option('--tekton-resolvers-namespace <name>', "namespace of Tekton's resolvers on the internal cluster, whose ConfigMap resolvers-feature-flags says which resolvers run (reported); default: --tekton-namespace with -resolvers appended (tekton-pipelines-resolvers), as Tekton's release installs them")
        .env('TEKTON_RESOLVERS_NAMESPACE')
        .argParser(namespaceName),
    )
    .addOption(new Option('--tekton-version-interval <duration>', 'how often the versions of Tekton Pipelines, Results and Chains, and the Tekton settings (config-defaults, resolvers-feature-flags), are read again').env('TEKTON_VERSION_INTERVAL').default(60_000, '60s').argParser(shortDuration))
    .addOption(
      new Option('--refuse-resolvers-on-advisory', 'refuse requests with resolver references while the Tekton Pipelines version has a known advisory in its resolvers, or cannot be told').env('REFUSE_RESOLVERS_ON_ADVISORY').default(false),
    )
    .addOption(new Option('--drain', 'before a rollback to the Go controller: take no new request (leave it for the Go controller), finish what started here (docs/migrating.md)').env('DRAIN').default(false))
    .addOption(new Option('--no-incumbent-check', 'serve without first checking that the Go controller this one replaces is gone (only where none was ever installed; docs/migrating.md)'))
    .addOption(new Option('--incumbent-namespace <name>', "namespace of the Go controller's Deployment and leader-election Lease on the internal cluster").env('INCUMBENT_NAMESPACE').default(INCUMBENT_NAMESPACE).argParser(namespaceName))
    .addOption(new Option('--incumbent-deployment <name>', "the Go controller's Deployment: no request is served while it has replicas").env('INCUMBENT_DEPLOYMENT').default(INCUMBENT_DEPLOYMENT))
    .addOption(new Option('--incumbent-lease <name>', "the Go controller's leader-election Lease (its --leader-election-id): no request is served while it is held").env('INCUMBENT_LEASE').default(INCUMBENT_LEASE))
    .addOption(new Option('--log-level <level>', 'log level').env('LOG_LEVEL').default('info').choices(['trace', 'debug', 'info', 'warn', 'error']))
    .action(async (flags: ControllerFlags) => {
      await runController(flags);
    });
}

/** The Results API client of --results-url: its own CA, the internal cluster's bearer token. */
function resultsApi(flags: ControllerFlags, internal: Cluster): ResultsApi {
  let url: URL;
  try {
    url = new URL(flags.resultsUrl ?? '');
  } catch {
    throw new ConfigError('CONFIG_FLAG', `--results-url ${JSON.stringify(flags.resultsUrl)} is not a URL (e.g. https://tekton-results-api-service.tekton-pipelines.svc:8080)`);
  }
  if (url.protocol !== 'https:') throw new ConfigError('CONFIG_FLAG', `--results-url must be https (the controller sends its bearer token): ${url.href}`);
  let ca: string | undefined;
  if (flags.resultsCaFile) {
    try {
      ca = readFileSync(flags.resultsCaFile, 'utf8');
    } catch (e) {
      throw new ConfigError('CONFIG_FLAG', `--results-ca-file ${flags.resultsCaFile} cannot be read: ${(e as Error).message}`);
    }
  }
  return new ResultsApi({
    url: url.href,
    ...(ca ? { ca } : {}),
    requireLogs: !flags.resultsLogsOptional,
    headers: async (): Promise<Record<string, string>> => {
      // The same credentials as for the internal apiserver (a token file is re-read as it rotates).
      const opts: { headers?: Record<string, unknown> } = {};
      await internal.kc.applyToHTTPSOptions(opts as never);
      const h = opts.headers ?? {};
      const auth = h['Authorization'] ?? h['authorization'];
      return typeof auth === 'string' ? { Authorization: auth } : {};
    },
  });
}

function resolveNamespace(flag: string | undefined): string {
  if (flag) return flag;
  if (existsSync(SA_NAMESPACE_FILE)) return readFileSync(SA_NAMESPACE_FILE, 'utf8').trim();
  throw new ConfigError('CONFIG_FLAG', '--namespace (or POD_NAMESPACE) is required when not running in a pod');
}

export async function runController(flags: ControllerFlags): Promise<void> {
  const log = createLogger({ level: flags.logLevel });
  checkProviderFlags(flags);
  const namespace = resolveNamespace(flags.namespace);
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(namespace)) throw new ConfigError('CONFIG_FLAG', `--namespace "${namespace}" is not a valid namespace name`);
  const healthAddr = parseBindAddress('--health-probe-bind-address', flags.healthProbeBindAddress);
  const metricsAddr = parseBindAddress('--metrics-bind-address', flags.metricsBindAddress);
  if (flags.leaderElect && !(flags.renewDeadline < flags.leaseDuration && flags.retryPeriod < flags.renewDeadline)) {
    throw new ConfigError('CONFIG_FLAG', '--retry-period < --renew-deadline < --lease-duration is required');
  }
  if (flags.sourceCheckCacheSize < flags.sourceCheckMaxSize) {
    throw new ConfigError('CONFIG_FLAG', `--source-check-cache-size (${flags.sourceCheckCacheSize} bytes) must be at least --source-check-max-size (${flags.sourceCheckMaxSize} bytes): the cache must hold the largest clone it keeps`);
  }
  const kcpKc = flags.kcpKubeconfig ? readKcpKubeconfig(flags.kcpKubeconfig) : undefined;
  // Request kinds written as code: loaded (and refused, naming the module) before any connection.
  const kindModules = typeof flags.requestKindModule === 'string' ? [flags.requestKindModule] : (flags.requestKindModule ?? []);
  const codeKinds = kindModules.length ? await loadKindModules(kindModules) : [];
  const metrics = createMetrics();
  const inCluster = !flags.kubeconfig && !!process.env.KUBERNETES_SERVICE_HOST;
  if (!flags.kubeconfig && !inCluster) throw new ConfigError('CONFIG_FLAG', '--kubeconfig (or KUBECONFIG) is required when not running in a pod');
  const remote = flags.remoteKubeconfig ? await connect('remote', { kubeconfig: flags.remoteKubeconfig }, { observer: metrics.apiObserver, remote: flags.remoteName }) : undefined;
  const internal = await connect('internal', { kubeconfig: flags.kubeconfig, inCluster }, { observer: metrics.apiObserver });
  const identity = `${process.env.POD_NAME ?? hostname()}_${randomUUID().slice(0, 8)}`;
  const instance = process.env.POD_NAME ?? hostname();

  // The internal cluster's Tekton Pipelines version, checked against its advisories, and those of Tekton Results and Chains against their supported ranges (read first below, before any worker starts).
  const events = new EventRecorder(internal, 'internal-services-controller', instance, log);
  // The cache of the commit checks, and of the path checks beside it.
  const commitChecker = new CommitChecker({
    dir: flags.gitCacheDir ?? join(tmpdir(), 'internal-services-git'),
    log: log.child({ component: 'commit-checker' }),
    timeoutMs: flags.sourceCheckTimeout,
    maxBytes: flags.sourceCheckMaxSize,
    maxTotalBytes: flags.sourceCheckCacheSize,
    metrics: metrics.commitChecks,
  });
  let configTarget: () => ReturnType<Controller['configs']['get']> = () => undefined;
  const tektonVersion = new TektonVersion({
    namespace: flags.tektonNamespace,
    read: configMapReader(internal),
    log,
    refuseResolversOnAdvisory: flags.refuseResolversOnAdvisory,
    refreshMs: flags.tektonVersionInterval,
    components: [
      { component: RESULTS, namespace: flags.tektonResultsNamespace ?? flags.tektonNamespace },
      { component: CHAINS, namespace: flags.tektonChainsNamespace },
    ],
    events: {
      record: (obj, type, reason, message) => events.record(obj, type, reason, message),
      // On the InternalServicesConfig "config" (the controller may write Events in its own namespace only).
      target: () => {
        const c = configTarget();
        return c ? { ...c, apiVersion: `${INTERNAL_SERVICES_CONFIG.group}/${INTERNAL_SERVICES_CONFIG.version}`, kind: INTERNAL_SERVICES_CONFIG.kind } : undefined;
      },
    },
  });

  // Tekton settings that change what a reference means (default-resolver-type, the resolvers' feature flags): reported, read at the same times.
  const tektonSettings = new TektonSettingsFollower({
    namespace: flags.tektonNamespace,
    resolversNamespace: flags.tektonResolversNamespace ?? defaultResolversNamespace(flags.tektonNamespace),
    read: configMapReader(internal),
    log,
    refreshMs: flags.tektonVersionInterval,
  });

  const controller = new Controller({
    ...(codeKinds.length ? { kinds: [INTERNAL_REQUEST_KIND, ...codeKinds] } : {}),
    ...(remote ? { remoteName: flags.remoteName } : {}),
    // The Go controller's runs are followed in its namespace too (unless none was ever installed: --no-incumbent-check).
    ...(flags.incumbentCheck ? { incumbentNamespace: flags.incumbentNamespace } : {}),
    internal,
    namespace,
    log,
    workers: flags.workers,
    resyncPeriodMs: flags.resyncPeriod,
    instance,
    metrics: metrics.controller,
    events: flags.events,
    ...(flags.resultsUrl ? { results: resultsApi(flags, internal) } : {}),
    tektonVersion: () => tektonVersion.current(),
    commitChecker,
    pathChecks: new PathChecks({ trees: commitChecker, log: log.child({ component: 'path-checks' }), metrics: metrics.pathChecks }),
    refuseResolversOnAdvisory: flags.refuseResolversOnAdvisory,
    ...(flags.drain ? { drain: true } : {}),
  });
  const node = nodeSupport(process.version);
  if (node.warning) log.warn({ node: process.version, nodeStatus: node.status }, node.warning);
  if (flags.drain) log.warn('draining before a rollback to the Go controller (--drain): requests no controller has written to are left for it; requests started here go on to their ends; `internal-services migrate rollback --dry-run` lists what still blocks the rollback');
  configTarget = () => controller.configs.get(`${namespace}/${CONFIG_NAME}`);
  const elector = flags.leaderElect
    ? new LeaderElector(internal, {
        namespace: flags.leaderElectionNamespace ?? namespace,
        name: flags.leaderElectionId,
        identity,
        leaseDurationMs: flags.leaseDuration,
        renewDeadlineMs: flags.renewDeadline,
        retryPeriodMs: flags.retryPeriod,
        log,
      })
    : undefined;
  const { providers, kubeconfigRemote, kcp } = remoteProviders(controller.remotes, flags, { remote, kcpKubeconfig: kcpKc, internal, namespace, log, metrics });
  metrics.bind({
    remotes: () => controller.views.remoteHealth(),
    running: () => controller.views.runningRequests(),
    lastContact: () => controller.views.lastContact(),
    leader: () => (elector ? elector.isLeader : true),
    configPresent: () => controller.views.configPresent,
    incumbentPresent: () => preflight?.present() ?? 0,
    configProblems: () => controller.views.configProblems(),
    waiting: () => controller.views.waitingByPhase(),
    pastTimeout: () => controller.views.pipelineRunsPastTimeout(),
    awaitingResults: () => controller.views.awaitingResults(),
    deletesDenied: () => controller.views.deletesDenied(),
    tekton: () => tektonVersion.metrics(),
    kcpShards: () => kcp?.shardViews() ?? [],
    tektonComponents: () => tektonVersion.componentStatus(),
    tektonSettings: () => tektonSettings.metrics(),
  });
  // Never two controllers at once, all the time: the Go controller this one replaces must be gone first, and stay gone (docs/migrating.md).
  const incumbentRefs = { namespace: flags.incumbentNamespace, deployment: flags.incumbentDeployment, lease: flags.incumbentLease };
  const incumbentLog = log.child({ component: 'incumbent-check' });
  const preflight = flags.incumbentCheck ? new IncumbentPreflight(internal.kc, incumbentRefs, incumbentLog, 5_000, incumbentWatches(internal, incumbentRefs, incumbentLog)) : undefined;
  const health = healthAddr ? await startHealthServer(healthAddr, () => [...controller.views.readiness(), ...providers.flatMap((p) => p.readiness()), ...tektonVersion.readinessChecks(), tektonSettings.readiness(), ...(preflight?.readiness() ?? [])], log) : undefined;
  const metricsServer = metricsAddr ? await startMetricsServer(metricsAddr, metrics.registry, log) : undefined;

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: no new work, finishing in-flight writes');
    const hard = setTimeout(() => {
      log.error('shutdown took longer than 10s; exiting');
      process.exit(1);
    }, 9_500);
    hard.unref();
    tektonVersion.stop();
    tektonSettings.stop();
    await preflight?.stop();
    await Promise.all(providers.map((p) => p.stop()));
    await controller.stop(7_000);
    await elector?.release();
    await Promise.all([health?.close(), metricsServer?.close()]);
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  log.info({ namespace, remote: remote?.server, remoteSecrets: flags.remoteSecretsSelector || flags.remoteSecret?.length ? { namespace: flags.remoteSecretsNamespace ?? namespace, selector: flags.remoteSecretsSelector, names: flags.remoteSecret } : undefined, internal: internal.server, workers: flags.workers, leaderElect: flags.leaderElect, identity, tektonNamespace: flags.tektonNamespace, tektonResultsNamespace: flags.tektonResultsNamespace ?? flags.tektonNamespace, tektonChainsNamespace: flags.tektonChainsNamespace, tektonResolversNamespace: flags.tektonResolversNamespace ?? defaultResolversNamespace(flags.tektonNamespace), refuseResolversOnAdvisory: flags.refuseResolversOnAdvisory }, 'starting');
  await kubeconfigRemote?.start();
  // Caches fill while waiting for leadership, so a standby takes over warm.
  await controller.startCaches();
  // The Tekton versions and settings are read once (one get each, in parallel, bounded by the request timeout) before any worker starts: no request is decided before Pipelines' version is known.
  await Promise.all([tektonVersion.start(), tektonSettings.start()]);
  // Remotes from the providers: each is served once listed; one that cannot be reached does not hold up the others.
  await Promise.all(providers.filter((p) => p !== kubeconfigRemote).map((p) => p.start()));
  // Every replica checks before it stands by (its /readyz says so), and the leader again once it leads.
  if (preflight && !(await preflight.waitUntilClear())) return;
  // From here on the check goes on, standby or leader: /readyz and the gauge follow the Go controller coming back and
  // going, and a standby that takes over while it is back starts held (nothing acted on until it is gone again).
  if (preflight) void preflight.follow({ pause: (why) => controller.hold(why), resume: () => controller.release() });
  if (elector) {
    const leading = await elector.acquire(() => {
      // Lost the lease: stop acting at once, and exit so the pod restarts as a standby.
      controller.halt();
      log.error('leader election lost; exiting');
      process.exit(1);
    });
    if (!leading) return;
  }
  if (elector && preflight && !(await preflight.waitUntilClear())) return;
  if (stopping) return;
  controller.startWorkers();
}
