/**
 * Real Tekton Results on the internal control plane: its API server and its
 * watcher, built from github.com/tektoncd/results (hack/platform/install.sh),
 * with PostgreSQL from Debian's packages (postgres.ts), run as processes on
 * loopback.
 *
 * - The API serves gRPC and REST on one TLS port (a self-signed certificate
 *   for 127.0.0.1), stores logs as files, and authorizes every caller as on
 *   a cluster: a TokenReview and a SubjectAccessReview (results.tekton.dev)
 *   against the internal apiserver. For those it reads the in-cluster
 *   configuration, whose token path is fixed
 *   (/var/run/secrets/kubernetes.io/serviceaccount); the harness gives the
 *   process a private mount namespace (unshare) with a tmpfs there holding
 *   its ServiceAccount token and the apiserver's CA, so nothing on the
 *   machine is touched.
 * - The watcher follows PipelineRuns and TaskRuns through a kubeconfig, sends
 *   them and their logs (read through pods/log: the simulated node serves
 *   them) to the API with its own token, and annotates the runs. It deletes
 *   nothing (completed_run_grace_period 0): the controller prunes.
 * Both run under the RBAC of Results' own manifests (config/base), bound to
 * the identities identities.ts makes.
 *
 * Written for the version of hack/platform/versions.env (v0.20.0; first for
 * v0.15.0). What v0.20 needs beyond v0.15: the watcher also follows
 * CustomRuns (v0.19; RBAC on customruns, or its informers never sync and it
 * never starts its reconcilers); knative's observability ConfigMap takes
 * metrics-protocol (OpenTelemetry, v0.19) instead of
 * metrics.backend-destination; the retention ConfigMap takes
 * defaultRetention (v0.16; maxRetention deprecated); the API takes a TLS
 * profile (v0.18: TLS_MIN_VERSION, TLS_CIPHER_SUITES, TLS_CURVE_PREFERENCES).
 * The watcher writes its annotations with server-side apply since v0.17
 * (field manager tekton-results-watcher) and its finalizer since v0.20
 * (tekton-results-watcher/finalizers).
 */
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import type { LogFn } from '../progress-log.js';
import { ensurePlatformBinaries, platformVersion } from './binaries.js';
import type { Identity } from './identities.js';
import { applyObjects, ensureNamespace } from './manifests.js';
import { startPostgres, type Postgres } from './postgres.js';
import { freePorts, freePortsBelow, ManagedProcess, waitUntilReady } from './processes.js';
import { RESULTS_IDENTITIES, RESULTS_NAMESPACE } from './results-names.js';
import { makeServingCert } from './selfsigned.js';

export { RESULTS_NAMESPACE, RESULTS_IDENTITIES };

export interface ResultsHost {
  dir: string;
  /** An admin KubeConfig of the internal cluster. */
  admin: KubeConfig;
  /** The internal apiserver (https://127.0.0.1:PORT) and the PEM that signs it. */
  apiserverUrl: string;
  apiserverCaPem: string;
  apiIdentity: Identity;
  watcherIdentity: Identity;
  adopt(p: ManagedProcess): void;
  onChange(): void;
  log: LogFn;
}

export interface ResultsPlatform {
  /** The version pinned in hack/platform/versions.env. */
  version: string;
  /** The API's minimum TLS version (TLS_MIN_VERSION). */
  tlsMinVersion: '1.2' | '1.3';
  /** https://127.0.0.1:PORT: gRPC and REST (/apis/results.tekton.dev/v1alpha2/...). */
  url: string;
  /** The API's certificate (trust it for url). */
  caPem: string;
  caFile: string;
  api: ManagedProcess;
  watcher: ManagedProcess;
  postgres: Postgres;
  startupMs: number;
  /** Stops the API (e.g. to show that pruning waits for it); start() brings it back on the same port. */
  stopApi(): Promise<void>;
  startApi(): Promise<void>;
  stop(): Promise<void>;
}

const WATCHER_RULES = [
  { apiGroups: ['results.tekton.dev'], resources: ['logs', 'results', 'records'], verbs: ['create', 'get', 'update'] },
  // customruns: the watcher follows CustomRuns too since v0.19 (its informer must sync before it starts).
  { apiGroups: ['tekton.dev'], resources: ['pipelineruns', 'taskruns', 'customruns'], verbs: ['get', 'list', 'patch', 'update', 'watch', 'delete'] },
  { apiGroups: [''], resources: ['configmaps', 'pods', 'events'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
  { apiGroups: [''], resources: ['events'], verbs: ['get', 'list', 'create', 'update', 'delete', 'patch', 'watch'] },
  { apiGroups: ['tekton.dev'], resources: ['pipelines'], verbs: ['get'] },
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'create', 'update', 'delete', 'patch', 'watch'] },
];
const API_RULES = [
  { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
  { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
];
const ZAP_CONFIG = JSON.stringify({
  level: 'info',
  development: false,
  outputPaths: ['stdout'],
  errorOutputPaths: ['stderr'],
  encoding: 'json',
  encoderConfig: { timeKey: 'time', levelKey: 'level', nameKey: 'logger', callerKey: 'caller', messageKey: 'msg', stacktraceKey: 'stacktrace', timeEncoder: 'iso8601', durationEncoder: 'string' },
});

export interface ResultsOptions {
  readyTimeoutMs?: number;
  /** The API's TLS_MIN_VERSION (1.2 or 1.3; default 1.3). */
  tlsMinVersion?: '1.2' | '1.3';
}

export async function startResults(host: ResultsHost, opts: ResultsOptions = {}): Promise<ResultsPlatform> {
  const started = Date.now();
  const { admin, log } = host;
  const readyTimeoutMs = opts.readyTimeoutMs ?? 120_000;
  const version = platformVersion('results');
  const tlsMinVersion = opts.tlsMinVersion ?? '1.3';
  const bins = await ensurePlatformBinaries('results', log);
  const apiBin = bins['results-api'];
  const watcherBin = bins['results-watcher'];
  if (!apiBin || !watcherBin) throw new Error('hack/platform/install.sh results named no results-api or results-watcher');
  const dir = join(host.dir, 'results');
  mkdirSync(join(dir, 'logs'), { recursive: true });

  // --- RBAC and the watcher's ConfigMaps (knative reads them at start) ---
  await ensureNamespace(admin, RESULTS_NAMESPACE);
  const user = (name: string) => [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name }];
  const cm = (name: string, data: Record<string, string>) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: RESULTS_NAMESPACE }, data });
  await applyObjects(admin, [
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'tekton-results-api' }, rules: API_RULES },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'tekton-results-watcher' }, rules: WATCHER_RULES },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'tekton-results-api' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'tekton-results-api' }, subjects: user(RESULTS_IDENTITIES.api) },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'tekton-results-watcher' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'tekton-results-watcher' }, subjects: user(RESULTS_IDENTITIES.watcher) },
    cm('tekton-results-config-logging', { 'zap-logger-config': ZAP_CONFIG, 'loglevel.watcher': 'info' }),
    cm('tekton-results-config-leader-election', {}),
    // knative's OpenTelemetry-based observability (since v0.19): metrics-protocol
    // replaces metrics.backend-destination; Prometheus on the port below.
    cm('tekton-results-config-observability', { 'metrics-protocol': 'prometheus', 'tracing-protocol': 'none' }),
    // The watcher's configuration manager refuses to start without it (the
    // retention agent's settings; nothing here runs that agent). Since v0.16
    // it reads defaultRetention (maxRetention is deprecated: a warning).
    cm('tekton-results-config-results-retention-policy', { runAt: '5 5 * * 0', defaultRetention: '30' }),
  ] as KubernetesObject[]);

  const postgres = await startPostgres({ logPath: join(dir, 'postgres.log'), onChange: host.onChange });
  host.adopt(postgres.process);
  const cert = makeServingCert(join(dir, 'tls'), 'tekton-results-api', [`tekton-results-api-service.${RESULTS_NAMESPACE}.svc`]);
  const [port, promPort] = (await freePorts(2)) as [number, number];
  // knative reads its ports as 16-bit signed numbers: below 32768.
  const [watcherMetrics, watcherProbes, watcherProfiling] = (await freePortsBelow(3)) as [number, number, number];
  const url = `https://127.0.0.1:${port}`;

  // --- API: settings in ./config (env-file syntax), read from its working directory ---
  const settings: Record<string, string> = {
    DB_USER: postgres.user,
    DB_PASSWORD: 'unused-trust-auth-on-loopback',
    DB_HOST: postgres.host,
    DB_PORT: String(postgres.port),
    DB_NAME: postgres.database,
    DB_SSLMODE: 'disable',
    DB_SSLROOTCERT: '',
    DB_ENABLE_AUTO_MIGRATION: 'true',
    DB_MAX_IDLE_CONNECTIONS: '5',
    DB_MAX_OPEN_CONNECTIONS: '10',
    GRPC_WORKER_POOL: '2',
    K8S_QPS: '20',
    K8S_BURST: '40',
    PROFILING: 'false',
    PROFILING_PORT: '0',
    FEATURE_GATES: "'PartialResponse=true'",
    SERVER_PORT: String(port),
    PROMETHEUS_PORT: String(promPort),
    PROMETHEUS_HISTOGRAM: 'false',
    TLS_PATH: join(dir, 'tls'),
    // Since v0.18: the TLS profile of the API (empty: Go's defaults, TLS 1.2 and
    // up). The harness asks for TLS 1.3 only, as a hardened platform may;
    // the watcher and the controller both speak it.
    TLS_MIN_VERSION: tlsMinVersion,
    TLS_CIPHER_SUITES: '',
    TLS_CURVE_PREFERENCES: '',
    AUTH_DISABLE: 'false',
    AUTH_IMPERSONATE: 'false',
    LOG_LEVEL: 'info',
    SQL_LOG_LEVEL: 'warn',
    LOGS_API: 'true',
    LOGS_TYPE: 'File',
    LOGS_BUFFER_SIZE: '32768',
    LOGS_PATH: join(dir, 'logs'),
    LOGS_TIMESTAMPS: 'false',
    CONVERTER_ENABLE: 'false',
    CONVERTER_DB_LIMIT: '50',
  };
  const workDir = join(dir, 'api');
  mkdirSync(workDir, { recursive: true });
  writeFileSync(join(workDir, 'config'), Object.entries(settings).map(([k, v]) => `${k}=${v}`).join('\n') + '\n');
  const secrets = join(dir, 'api-serviceaccount');
  mkdirSync(secrets, { recursive: true });
  writeFileSync(join(secrets, 'token'), host.apiIdentity.token, { mode: 0o600 });
  writeFileSync(join(secrets, 'ca.crt'), host.apiserverCaPem);
  const runDir = realpathSync('/var/run');
  const sa = `${runDir}/secrets/kubernetes.io/serviceaccount`;
  const script = [
    `mount -t tmpfs tmpfs '${runDir}'`,
    `mkdir -p '${sa}'`,
    `cp '${join(secrets, 'token')}' '${join(secrets, 'ca.crt')}' '${sa}/'`,
    `cd '${workDir}'`,
    `exec '${apiBin}'`,
  ].join(' && ');
  const apiserver = new URL(host.apiserverUrl);
  const root = process.getuid?.() === 0;
  const api = new ManagedProcess('results api', 'unshare', [...(root ? [] : ['--map-root-user']), '--mount', '--propagation', 'private', 'sh', '-c', script], join(dir, 'api.log'), host.onChange, {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: workDir,
    KUBERNETES_SERVICE_HOST: apiserver.hostname,
    KUBERNETES_SERVICE_PORT: apiserver.port,
  });
  host.adopt(api);
  const healthy = async (): Promise<true | string> => {
    try {
      const code = await getStatus(`${url}/healthz`, cert.certPem);
      return code === 200 ? true : `GET /healthz answered ${code}`;
    } catch (e) {
      return (e as Error).message;
    }
  };
  const startApi = async (): Promise<void> => {
    api.start();
    await waitUntilReady(`Tekton Results API at ${url}`, readyTimeoutMs, [api], healthy);
  };

  // --- watcher ---
  const watcher = new ManagedProcess(
    'results watcher',
    watcherBin,
    [
      '-api_addr', `127.0.0.1:${port}`,
      '-auth_mode', 'token',
      '-token', host.watcherIdentity.token,
      '-logs_api',
      '-disable-ha',
      '-completed_run_grace_period', '0',
      '-threadiness', '2',
    ],
    join(dir, 'watcher.log'),
    host.onChange,
    {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: dir,
      // It parses its flags before knative would add -kubeconfig; knative reads this instead.
      KUBECONFIG: host.watcherIdentity.kubeconfigPath,
      // The watcher trusts /etc/tls/tls.crt or, without it, the system's CAs; Go reads those from SSL_CERT_FILE.
      SSL_CERT_FILE: cert.certPath,
      SYSTEM_NAMESPACE: RESULTS_NAMESPACE,
      CONFIG_LOGGING_NAME: 'tekton-results-config-logging',
      CONFIG_LEADERELECTION_NAME: 'tekton-results-config-leader-election',
      CONFIG_OBSERVABILITY_NAME: 'tekton-results-config-observability',
      METRICS_DOMAIN: 'tekton.dev/results',
      METRICS_PROMETHEUS_PORT: String(watcherMetrics),
      METRICS_PROMETHEUS_HOST: '127.0.0.1',
      PROBES_PORT: String(watcherProbes),
      PROFILING_PORT: String(watcherProfiling),
      KUBERNETES_MIN_VERSION: 'v1.28.0',
    },
  );
  host.adopt(watcher);
  const stop = async (): Promise<void> => {
    await Promise.all([watcher.stop(2000), api.stop(2000)]);
    await postgres.stop();
  };
  try {
    await startApi();
    log(`results: ${version} API ready at ${url} (TLS ${tlsMinVersion} and up) after ${Date.now() - started} ms (PostgreSQL on 127.0.0.1:${postgres.port})`);
    watcher.start();
    await waitUntilReady('Tekton Results watcher running its reconcilers', readyTimeoutMs, [watcher], async () => {
      const text = readFileSync(watcher.logPath, 'utf8');
      // knative then serves its health probes on the fixed port 8080, which
      // Tekton's webhook holds already; the watcher logs that only when it
      // stops and keeps reconciling meanwhile (its reconcilers do not hang
      // on the probes), so nothing here depends on that port.
      return text.includes('Starting controllers') ? true : 'reconcilers not started yet';
    });
  } catch (e) {
    await stop().catch(() => {});
    throw e;
  }
  const startupMs = Date.now() - started;
  log(`results: watcher following PipelineRuns and TaskRuns; Tekton Results ready after ${startupMs} ms`);
  return {
    version,
    tlsMinVersion,
    url,
    caPem: cert.certPem,
    caFile: cert.certPath,
    api,
    watcher,
    postgres,
    startupMs,
    stopApi: () => api.stop(2000),
    startApi,
    stop,
  };
}

function getStatus(url: string, ca: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { ca, timeout: 3000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}
