/**
 * Real Tekton Pipelines on the internal control plane: its controller, its
 * remote resolvers and its admission webhook, built from the
 * github.com/tektoncd/pipeline module (hack/envtest/install.sh) and run as
 * processes with the module's own manifests: the 8 CRDs, the config-*
 * ConfigMaps, the resolvers' ConfigMaps, and the module's RBAC bound to the
 * identities the processes authenticate as.
 *
 * Only the kubelet is simulated (SimulatedKubelet): there are no nodes, so
 * something must play the part of the containers of Tekton's TaskRun pods.
 *
 * The webhook is reached the way an apiserver reaches any webhook Service,
 * with one substitution: the Service `tekton-pipelines-webhook` is of type
 * ExternalName pointing at localhost, and the webhook configurations name the
 * webhook's port, so the apiserver dials https://localhost:PORT and checks the
 * certificate the webhook made for tekton-pipelines-webhook.tekton-pipelines.svc
 * (the name the apiserver expects for a Service reference).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  AdmissionregistrationV1Api,
  CoordinationV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import type { EnvtestAssets } from './binaries.js';
import type { LogFn } from '../progress-log.js';
import { applyManifests, applyObjects, ensureNamespace, loadManifests, statusMessage, type Manifest } from './manifests.js';
import { freePortsBelow, ManagedProcess, waitUntilReady } from './processes.js';
import { SimulatedKubelet } from '../simulated/kubelet.js';
import { SimulatedNode } from '../simulated/node.js';
import { makeServingCert } from './selfsigned.js';
import { startGitServer, type GitServer } from './git.js';

export const TEKTON_NAMESPACE = 'tekton-pipelines';
/** The ConfigMap that says Tekton's version (data.version), which the controller checks against Tekton's advisories. */
export const PIPELINES_INFO = 'pipelines-info';
export const RESOLVERS_NAMESPACE = 'tekton-pipelines-resolvers';
export const WEBHOOK_SERVICE = 'tekton-pipelines-webhook';

/** The ServiceAccounts of the module's manifests, whose RBAC the processes run under. */
export const TEKTON_IDENTITIES = {
  controller: `system:serviceaccount:${TEKTON_NAMESPACE}:tekton-pipelines-controller`,
  webhook: `system:serviceaccount:${TEKTON_NAMESPACE}:tekton-pipelines-webhook`,
  resolvers: `system:serviceaccount:${RESOLVERS_NAMESPACE}:tekton-pipelines-resolvers`,
} as const;

/**
 * Images named in pods Tekton creates. With the simulated kubelet they are
 * never pulled (no container runs); on the real node (real-node.ts) its own
 * builds of Tekton's helpers and a busybox shell, imported into containerd.
 */
const imageFlags = (images: TektonImages | undefined): string[] => [
  '-entrypoint-image', images?.entrypoint ?? 'tekton.invalid/not-pulled/entrypoint:v0',
  '-nop-image', images?.nop ?? 'tekton.invalid/not-pulled/nop:v0',
  '-sidecarlogresults-image', 'tekton.invalid/not-pulled/sidecarlogresults:v0',
  '-workingdirinit-image', images?.workingdirinit ?? 'tekton.invalid/not-pulled/workingdirinit:v0',
  '-shell-image', images?.shell ?? 'tekton.invalid/not-pulled/shell:v0',
  '-shell-image-win', 'tekton.invalid/not-pulled/shell-win:v0',
];

/** Tekton's helper images on a real node (RealNode.tektonImages). */
export interface TektonImages {
  entrypoint: string;
  nop: string;
  workingdirinit: string;
  shell: string;
}

export interface TektonOptions {
  /** Start the admission webhook (default true). */
  webhook?: boolean;
  /** Default time a simulated step runs (see SimulatedKubelet). */
  stepMs?: number;
  /**
   * Run the simulated kubelet in this process (default true). A caller that
   * runs its own (the benchmark, in a worker thread) turns it off.
   */
  kubelet?: boolean;
  /** Give up waiting for Tekton after this long (default 120 s). */
  readyTimeoutMs?: number;
  /**
   * The Tekton controller's client rate limit (its -kube-api-qps and
   * -kube-api-burst flags, which it doubles). Default: Tekton's own, 5 and
   * 10 before doubling twice, i.e. 20 requests/s, bursts of 40.
   */
  kubeApiQps?: number;
  kubeApiBurst?: number;
  /**
   * Serve the simulated pods' logs through the apiserver (pods/log): a
   * simulated Node with a log endpoint, each pod bound to it (see
   * simulated/node.ts). Default false; Tekton Results needs it.
   */
  logs?: boolean;
  /** The real node's images for Tekton's helpers (then pods run for real; use with kubelet: false). */
  images?: TektonImages;
}

export interface TektonPlatform {
  version: string;
  controller: ManagedProcess;
  resolvers: ManagedProcess;
  /** undefined when started without the webhook. */
  webhook: ManagedProcess | undefined;
  /** The simulated kubelet (the one simulated part); undefined when started with kubelet: false. */
  kubelet: SimulatedKubelet | undefined;
  /** The simulated node serving the pods' logs, when started with logs: true. */
  node: SimulatedNode | undefined;
  /** git daemon on loopback, for the git resolver. */
  git: GitServer;
  /** Milliseconds from the start of startTekton until everything was ready. */
  startupMs: number;
  /** The module's manifests (config/ of github.com/tektoncd/pipeline). */
  configDir: string;
  stop(): Promise<void>;
}

/** Everything startTekton needs from the environment that starts it. */
export interface TektonHost {
  dir: string;
  assets: EnvtestAssets;
  /** An admin KubeConfig of the internal cluster (installs manifests). */
  admin: KubeConfig;
  /** Writes a kubeconfig for a user of the internal cluster; returns its path. */
  kubeconfigFor(username: string): string;
  /** Registers a process with the environment (pid file, teardown order). */
  adopt(p: ManagedProcess): void;
  /** To be called whenever an adopted process starts or exits (keeps the pid file current). */
  onChange(): void;
  log: LogFn;
}

export async function startTekton(host: TektonHost, opts: TektonOptions = {}): Promise<TektonPlatform> {
  const started = Date.now();
  const { assets, admin, log } = host;
  const configDir = assets.tektonConfigDir;
  const withWebhook = opts.webhook ?? true;
  const readyTimeoutMs = opts.readyTimeoutMs ?? 120_000;
  const [ctlProbe, ctlProf, ctlMetrics, resProbe, resProf, resMetrics, whProbe, whProf, whMetrics, whPort] = (await freePortsBelow(10)) as number[] as [
    number, number, number, number, number, number, number, number, number, number,
  ];

  // --- manifests ---
  const pick = (file: string, kinds?: string[]): Manifest[] =>
    loadManifests(join(configDir, file)).filter((o) => !kinds || kinds.includes(o.kind ?? ''));
  const filesMatching = (sub: string, re: RegExp): string[] =>
    readdirSync(join(configDir, sub))
      .filter((f) => re.test(f))
      .sort()
      .map((f) => join(sub, f));
  const crds = loadManifests(join(configDir, '300-crds'));
  if (withWebhook) {
    // Conversion webhooks are called at the webhook's port (see the module comment).
    for (const crd of crds) {
      const svc = (crd as { spec?: { conversion?: { webhook?: { clientConfig?: { service?: { port?: number } } } } } }).spec?.conversion?.webhook?.clientConfig?.service;
      if (svc) svc.port = whPort;
    }
  }
  const rbacKinds = ['ServiceAccount', 'ClusterRole', 'Role', 'ClusterRoleBinding', 'RoleBinding'];
  const rbac = [
    ...filesMatching('.', /^20[01]-.*\.yaml$/).flatMap((f) => pick(f, rbacKinds)),
    ...filesMatching('.', /^clusterrole-aggregate-.*\.yaml$/).flatMap((f) => pick(f, rbacKinds)),
    ...filesMatching('resolvers', /^20[01]-.*\.yaml$/).flatMap((f) => pick(f, rbacKinds)),
  ];
  const configMaps = [
    ...filesMatching('.', /^config-.*\.yaml$/).flatMap((f) => pick(f, ['ConfigMap'])),
    ...filesMatching('resolvers', /\.yaml$/).flatMap((f) => pick(f, ['ConfigMap'])),
  ].map((cm) => (cm.metadata?.name === PIPELINES_INFO ? stampVersion(cm, assets.tektonVersion) : cm));
  await ensureNamespace(admin, TEKTON_NAMESPACE);
  await ensureNamespace(admin, RESOLVERS_NAMESPACE);
  await applyManifests(admin, crds);
  await applyObjects(admin, rbac);
  await applyObjects(admin, configMaps);
  log(`tekton: installed ${crds.length} CRDs, ${configMaps.length} ConfigMaps, ${rbac.length} RBAC objects from ${configDir}`);

  const processes: ManagedProcess[] = [];
  let kubelet: SimulatedKubelet | undefined;
  let node: SimulatedNode | undefined;
  let git: GitServer | undefined;
  const stop = async (): Promise<void> => {
    // The kubelet ends its waits at once; the deadline is only a guard, so
    // that a teardown can never hang on it.
    if (kubelet) await Promise.race([kubelet.stop(), new Promise((r) => setTimeout(r, 5000).unref())]);
    await node?.stop();
    await Promise.all(processes.map((p) => p.stop(2000)));
    await git?.stop();
  };
  try {
    const baseEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => {
      // Nothing of the caller's environment that could point these processes elsewhere.
      const { KUBECONFIG: _k, ...rest } = process.env;
      return { ...rest, KUBERNETES_MIN_VERSION: 'v1.28.0', CONFIG_LOGGING_NAME: 'config-logging', CONFIG_OBSERVABILITY_NAME: 'config-observability', CONFIG_FEATURE_FLAGS_NAME: 'feature-flags', ...extra };
    };
    const spawnTekton = (name: string, bin: string, user: string, args: string[], env: NodeJS.ProcessEnv): ManagedProcess => {
      const p = new ManagedProcess(`tekton ${name}`, join(assets.tektonBinDir, bin), ['-kubeconfig', host.kubeconfigFor(user), ...args], join(host.dir, `tekton-${name}.log`), host.onChange, env);
      processes.push(p);
      host.adopt(p);
      p.start();
      return p;
    };

    // --- webhook first: with failurePolicy Fail, nothing of Tekton's can be written until it answers ---
    let webhook: ManagedProcess | undefined;
    if (withWebhook) {
      const webhookObjects = pick('500-webhooks.yaml');
      for (const o of webhookObjects) {
        for (const wh of ((o as { webhooks?: Array<{ clientConfig?: { service?: { port?: number } } }> }).webhooks ?? [])) {
          if (wh.clientConfig?.service) wh.clientConfig.service.port = whPort;
        }
      }
      await applyObjects(admin, [
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: WEBHOOK_SERVICE, namespace: TEKTON_NAMESPACE, labels: { 'app.kubernetes.io/part-of': 'tekton-pipelines' } },
          spec: { type: 'ExternalName', externalName: 'localhost', ports: [{ name: 'https-webhook', port: whPort }] },
        } as KubernetesObject,
        ...webhookObjects,
      ]);
      webhook = spawnTekton(
        'webhook',
        'webhook',
        TEKTON_IDENTITIES.webhook,
        [],
        baseEnv({
          SYSTEM_NAMESPACE: TEKTON_NAMESPACE,
          CONFIG_LEADERELECTION_NAME: 'config-leader-election-webhook',
          PROBES_PORT: String(whProbe),
          PROFILING_PORT: String(whProf),
          METRICS_PROMETHEUS_PORT: String(whMetrics),
          WEBHOOK_PORT: String(whPort),
          WEBHOOK_ADMISSION_CONTROLLER_NAME: 'webhook.pipeline.tekton.dev',
          WEBHOOK_SERVICE_NAME: WEBHOOK_SERVICE,
          WEBHOOK_SECRET_NAME: 'webhook-certs',
          METRICS_DOMAIN: 'tekton.dev/pipeline',
        }),
      );
      await waitUntilReady(`Tekton webhook answering admission requests`, readyTimeoutMs, [webhook], () => webhookAnswers(admin));
      log(`tekton: webhook ready after ${Date.now() - started} ms (https://localhost:${whPort}, via Service ${TEKTON_NAMESPACE}/${WEBHOOK_SERVICE})`);
    }

    const controller = spawnTekton(
      'controller',
      'controller',
      TEKTON_IDENTITIES.controller,
      [
        ...imageFlags(opts.images),
        ...(opts.kubeApiQps ? ['-kube-api-qps', String(opts.kubeApiQps)] : []),
        ...(opts.kubeApiBurst ? ['-kube-api-burst', String(opts.kubeApiBurst)] : []),
      ],
      baseEnv({
        SYSTEM_NAMESPACE: TEKTON_NAMESPACE,
        CONFIG_DEFAULTS_NAME: 'config-defaults',
        CONFIG_LEADERELECTION_NAME: 'config-leader-election-controller',
        CONFIG_SPIRE: 'config-spire',
        METRICS_DOMAIN: 'tekton.dev/pipeline',
        PROBES_PORT: String(ctlProbe),
        PROFILING_PORT: String(ctlProf),
        METRICS_PROMETHEUS_PORT: String(ctlMetrics),
      }),
    );
    const resolvers = spawnTekton(
      'resolvers',
      'resolvers',
      TEKTON_IDENTITIES.resolvers,
      [],
      baseEnv({
        SYSTEM_NAMESPACE: RESOLVERS_NAMESPACE,
        CONFIG_LEADERELECTION_NAME: 'config-leader-election-resolvers',
        METRICS_DOMAIN: 'tekton.dev/resolution',
        PROBES_PORT: String(resProbe),
        PROFILING_PORT: String(resProf),
        METRICS_PROMETHEUS_PORT: String(resMetrics),
        TEKTON_HUB_API: '',
        ARTIFACT_HUB_API: 'https://artifacthub.invalid/',
      }),
    );
    if (opts.logs) {
      const cert = makeServingCert(join(host.dir, 'simulated-node'), 'simulated-node');
      node = new SimulatedNode(admin, { keyPem: cert.keyPem, certPem: cert.certPem, log });
      await node.start();
    }
    if (opts.kubelet ?? true) {
      kubelet = new SimulatedKubelet(admin, { stepMs: opts.stepMs, log, ...(node ? { node } : {}) });
      kubelet.start();
    }
    git = await startGitServer(join(host.dir, 'git'), host.onChange);
    host.adopt(git.process);

    // Ready when each reconciler holds its lease: from then on a new object is acted on at once.
    await waitUntilReady('Tekton controller and resolvers holding their leases', readyTimeoutMs, [controller, resolvers], async () => {
      const leases = await leaseHolders(admin);
      const need = [
        [TEKTON_NAMESPACE, 'pipelinerun.reconciler'],
        [TEKTON_NAMESPACE, 'taskrun.reconciler'],
        [RESOLVERS_NAMESPACE, 'tektonresolverframework.git'],
      ];
      const missing = need.filter(([ns, part]) => !leases.some((l) => l.namespace === ns && l.name.includes(part!)));
      return missing.length === 0 ? true : `no lease held yet for ${missing.map(([ns, p]) => `${ns}/*${p}*`).join(', ')}`;
    });
    const startupMs = Date.now() - started;
    log(`tekton: ${assets.tektonVersion} controller, resolvers${webhook ? ', webhook' : ''} ready after ${startupMs} ms; ${kubelet ? 'pods are SIMULATED (no kubelet)' : opts.images ? 'pods run on the real node' : 'no kubelet'}`);
    return { version: assets.tektonVersion, controller, resolvers, webhook, kubelet, node, git, startupMs, configDir, stop };
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
}

/**
 * pipelines-info as a release ships it: the module's config-info.yaml says
 * "devel" (what a build from source is), and Tekton's release process writes
 * the release's version there. These binaries are built from that release's
 * module, so its version is stamped the same way.
 */
function stampVersion(cm: Manifest, version: string): Manifest {
  const data = (cm as { data?: Record<string, string> }).data ?? {};
  return { ...cm, data: { ...data, version } } as Manifest;
}

async function leaseHolders(kc: KubeConfig): Promise<Array<{ namespace: string; name: string }>> {
  const api = kc.makeApiClient(CoordinationV1Api);
  const out: Array<{ namespace: string; name: string }> = [];
  for (const ns of [TEKTON_NAMESPACE, RESOLVERS_NAMESPACE]) {
    const list = await api.listNamespacedLease({ namespace: ns });
    for (const l of list.items) {
      if (l.spec?.holderIdentity) out.push({ namespace: ns, name: l.metadata?.name ?? '' });
    }
  }
  return out;
}

/**
 * True once the webhook has filled in its configurations' CA bundles and a
 * server-side dry run of an invalid Task is refused by it (so the apiserver
 * really reaches it); otherwise a description of what is missing.
 */
async function webhookAnswers(kc: KubeConfig): Promise<true | string> {
  const adm = kc.makeApiClient(AdmissionregistrationV1Api);
  const validating = await adm.readValidatingWebhookConfiguration({ name: 'validation.webhook.pipeline.tekton.dev' });
  const mutating = await adm.readMutatingWebhookConfiguration({ name: 'webhook.pipeline.tekton.dev' });
  const ca = [...(validating.webhooks ?? []), ...(mutating.webhooks ?? [])].every((w) => (w.clientConfig.caBundle ?? '').length > 0);
  const rules = (validating.webhooks ?? []).every((w) => (w.rules ?? []).length > 0);
  if (!ca || !rules) return 'webhook configurations not yet reconciled (caBundle, rules)';
  const custom = kc.makeApiClient(CustomObjectsApi);
  try {
    await custom.createNamespacedCustomObject({
      group: 'tekton.dev',
      version: 'v1',
      namespace: TEKTON_NAMESPACE,
      plural: 'tasks',
      dryRun: 'All',
      body: { apiVersion: 'tekton.dev/v1', kind: 'Task', metadata: { name: 'webhook-probe' }, spec: { steps: [] } },
    });
    return 'a Task without steps was accepted: the webhook is not validating yet';
  } catch (e) {
    const msg = statusMessage((e as { body?: unknown }).body) ?? (e as Error).message;
    if (msg.includes('admission webhook') && msg.includes('denied the request')) return true;
    return `webhook not answering yet: ${msg.slice(0, 300)}`;
  }
}
