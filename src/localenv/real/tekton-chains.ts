/**
 * Real Tekton Chains (github.com/tektoncd/chains, the version of
 * hack/platform/versions.env) next to real Tekton on the internal control
 * plane: its controller built by hack/platform/install.sh, run as a plain
 * process under its own identity with the RBAC of the module's own manifests
 * (config/100-rolebinding.yaml), its ConfigMaps in namespace tekton-chains,
 * and a signing Secret `signing-secrets` holding an ECDSA P-256 key
 * (`x509.pem`, PKCS#8, unencrypted: what pkg/chains/signing/x509 accepts).
 *
 * Chains reads its key from files under a fixed path, /etc/signing-secrets
 * (pkg/reconciler/*: `SecretPath`, a constant), where a Pod mounts the Secret
 * as a volume. Here the process gets the same: it runs in a private mount
 * namespace (unshare; as a non-root user, in a user namespace too) in which
 * a directory holding the Secret's data, as read back from the API server,
 * is bind-mounted at /etc/signing-secrets — over a private overlay of /etc
 * when the host has no such directory, so the host is never changed.
 *
 * Configured for signing PipelineRuns: format in-toto (the SLSA v0.2
 * provenance of the run, in a DSSE envelope), storage `tekton` (payload and
 * envelope as annotations on the run itself), signer x509, no transparency
 * log, no OCI artifacts. Nothing reaches the network.
 *
 * Written for the version of hack/platform/versions.env (v0.28.1; first for
 * v0.22.0). Between the two the manifests this reads (RBAC, config-*) and the
 * controller's flags and environment stayed the same; Chains now writes its
 * annotations (chains.tekton.dev/*) and its finalizers with server-side apply
 * (field managers tekton-chains-controller and
 * tekton-chains-controller/finalizers; since v0.27), its TaskRun finalizer is
 * chains.tekton.dev/taskrun (was chains.tekton.dev; since v0.26), and its metrics go
 * through knative's OpenTelemetry layer (config-observability's
 * metrics-protocol, which the module's own ConfigMap sets to prometheus).
 */
import { execFile } from 'node:child_process';
import { generateKeyPairSync, createPrivateKey, createPublicKey } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CoordinationV1Api, CoreV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { platformVersion, repoRoot, runInstallScript } from './binaries.js';
import { applyObjects, ensureNamespace, loadManifests } from './manifests.js';
import { freePortsBelow, ManagedProcess, waitUntilReady } from './processes.js';
import type { TektonHost } from './tekton.js';

export const CHAINS_NAMESPACE = 'tekton-chains';
export const CHAINS_SERVICE_ACCOUNT = 'tekton-chains-controller';
/** The ServiceAccount of the module's manifests, whose RBAC the process runs under. */
export const CHAINS_IDENTITY = `system:serviceaccount:${CHAINS_NAMESPACE}:${CHAINS_SERVICE_ACCOUNT}`;
/** Where Chains reads its signing key (a constant of its source). */
export const CHAINS_SECRET_PATH = '/etc/signing-secrets';

export interface ChainsOptions {
  /**
   * The key Chains signs with: PEM, PKCS#8, unencrypted, ECDSA P-256
   * ("-----BEGIN PRIVATE KEY-----"). Default: a fresh one.
   */
  privateKeyPem?: string;
  /** artifacts.pipelinerun.format (and taskrun): in-toto (default) or slsa/v1, one payloader (v0.22 and v0.28 alike). */
  format?: 'in-toto' | 'slsa/v1';
  /** More chains-config entries (override the defaults above). */
  config?: Record<string, string>;
  /** Give up waiting for Chains after this long (default 120 s). */
  readyTimeoutMs?: number;
}

export interface ChainsPlatform {
  version: string;
  controller: ManagedProcess;
  /** The public half of the signing key, PEM (SPKI). */
  publicKeyPem: string;
  /** The chains-config data Chains runs with. */
  config: Record<string, string>;
  /** Milliseconds from the start of startChains until Chains held its leases (binary lookup included). */
  startupMs: number;
  /** Of that, the binary lookup (hack/platform/install.sh: a cache hit, or a build). */
  installMs: number;
  /** The module's manifests (config/ of github.com/tektoncd/chains). */
  configDir: string;
  stop(): Promise<void>;
}

/** The version pinned in hack/platform/versions.env. */
export function chainsVersion(): string {
  return platformVersion('chains');
}

/** hack/platform/install.sh chains: the cached binary, built on first use. */
export async function ensureChainsBinary(log?: (line: string) => void): Promise<string> {
  const out = await runInstallScript(join(repoRoot(), 'hack', 'platform', 'install.sh'), log, (v) => {
    const p = (v as Record<string, unknown> | null)?.['chains-controller'];
    if (typeof p !== 'string' || !p) throw new Error('field chains-controller missing');
    return p;
  }, ['chains']);
  return out;
}

/**
 * The config/ directory of the Chains module, from the Go module cache
 * (downloaded there by the build; `go mod download` fetches it otherwise).
 */
export async function chainsConfigDir(version: string): Promise<string> {
  const wrapper = join(repoRoot(), 'hack', 'platform', 'tekton');
  const env = { ...process.env, GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local', GONOSUMDB: process.env['GONOSUMDB'] ?? 'github.com,gocloud.dev,k8s.io,sigs.k8s.io,knative.dev' };
  const run = promisify(execFile);
  const { stdout: cache } = await run('go', ['env', 'GOMODCACHE'], { cwd: wrapper, env });
  const dir = join(cache.trim(), 'github.com', 'tektoncd', `chains@${version}`, 'config');
  if (existsSync(join(dir, '100-rolebinding.yaml'))) return dir;
  const { stdout } = await run('go', ['mod', 'download', '-json', `github.com/tektoncd/chains@${version}`], { cwd: wrapper, env });
  const got = (JSON.parse(stdout) as { Dir?: string }).Dir;
  if (!got || !existsSync(join(got, 'config', '100-rolebinding.yaml'))) throw new Error(`the Go module github.com/tektoncd/chains@${version} has no config/100-rolebinding.yaml`);
  return join(got, 'config');
}

/** A fresh ECDSA P-256 key pair as Chains' x509 signer takes it (PKCS#8 PEM) and a verifier uses it (SPKI PEM). */
export function chainsSigningKey(): { privateKeyPem: string; publicKeyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', {
    namedCurve: 'prime256v1',
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  return { privateKeyPem: privateKey, publicKeyPem: publicKey };
}

/** The chains-config data: PipelineRuns (and their TaskRuns) signed into annotations on themselves, nothing sent anywhere. */
export function chainsConfigData(opts: Pick<ChainsOptions, 'format' | 'config'> = {}): Record<string, string> {
  const format = opts.format ?? 'in-toto';
  return {
    'artifacts.pipelinerun.format': format,
    'artifacts.pipelinerun.storage': 'tekton',
    'artifacts.pipelinerun.signer': 'x509',
    // Chains signs a PipelineRun only after each of its TaskRuns is marked
    // reconciled; those are signed the same way (its default).
    'artifacts.taskrun.format': format,
    'artifacts.taskrun.storage': 'tekton',
    'artifacts.taskrun.signer': 'x509',
    // No image signatures (they would be pushed to a registry).
    'artifacts.oci.storage': '',
    'transparency.enabled': 'false',
    ...opts.config,
  };
}

/**
 * The command that starts the controller with the signing directory mounted
 * at CHAINS_SECRET_PATH in a private mount namespace: `sh` sets the mounts
 * up and then execs the controller (so the process' pid is the controller's).
 */
function mountedCommand(secrets: string, overlay: string, binary: string, args: string[]): { command: string; args: string[] } {
  const script = [
    'set -eu',
    's=$1; u=$2; w=$3; shift 3',
    `if [ ! -d ${CHAINS_SECRET_PATH} ]; then`,
    '  mount -t overlay overlay -o "lowerdir=/etc,upperdir=$u,workdir=$w" /etc',
    `  mkdir ${CHAINS_SECRET_PATH}`,
    'fi',
    `mount --bind "$s" ${CHAINS_SECRET_PATH}`,
    'exec "$@"',
  ].join('\n');
  const root = process.getuid?.() === 0;
  const ns = root ? ['--mount', '--propagation', 'private'] : ['--user', '--map-root-user', '--mount', '--propagation', 'private'];
  return { command: 'unshare', args: [...ns, 'sh', '-c', script, 'chains-mount', secrets, join(overlay, 'upper'), join(overlay, 'work'), binary, ...args] };
}

export async function startChains(host: Omit<TektonHost, 'assets'>, opts: ChainsOptions = {}): Promise<ChainsPlatform> {
  const started = Date.now();
  const { admin, log } = host;
  const version = chainsVersion();
  const binary = await ensureChainsBinary(log);
  const installMs = Date.now() - started;
  const configDir = await chainsConfigDir(version);
  const readyTimeoutMs = opts.readyTimeoutMs ?? 120_000;
  const [profiling, metrics] = (await freePortsBelow(2)) as [number, number];

  // --- key ---
  let privateKeyPem = opts.privateKeyPem;
  if (!privateKeyPem) privateKeyPem = chainsSigningKey().privateKeyPem;
  const key = createPrivateKey(privateKeyPem);
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1' || !privateKeyPem.includes('-----BEGIN PRIVATE KEY-----')) {
    throw new Error('Chains signs with an ECDSA P-256 key in PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----"); pkg/chains/signing/x509 accepts nothing else');
  }
  const publicKeyPem = createPublicKey(key).export({ type: 'spki', format: 'pem' }).toString();

  // --- manifests: the module's RBAC and ConfigMaps, our chains-config and Secret ---
  const rbacKinds = ['ServiceAccount', 'ClusterRole', 'Role', 'ClusterRoleBinding', 'RoleBinding'];
  const rbac = loadManifests(join(configDir, '100-rolebinding.yaml')).filter((o) => rbacKinds.includes(o.kind ?? ''));
  // chains-info says "devel" in the module; a release writes its tag there (release/publish.yaml), and so is it here.
  const configMaps = ['config-logging.yaml', 'config-leader-election.yaml', 'config-observability.yaml', 'config-info.yaml']
    .flatMap((f) => loadManifests(join(configDir, f)).filter((o) => o.kind === 'ConfigMap'))
    .map((cm) => (cm.metadata?.name === 'chains-info' ? ({ ...cm, data: { ...((cm['data'] as Record<string, string> | undefined) ?? {}), version } } as typeof cm) : cm));
  const config = chainsConfigData(opts);
  await ensureNamespace(admin, CHAINS_NAMESPACE);
  await applyObjects(admin, [
    ...rbac,
    ...configMaps,
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'chains-config', namespace: CHAINS_NAMESPACE }, data: config } as KubernetesObject,
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'signing-secrets', namespace: CHAINS_NAMESPACE },
      type: 'Opaque',
      data: { 'x509.pem': Buffer.from(privateKeyPem).toString('base64') },
    } as KubernetesObject,
  ]);

  // --- the Secret as a volume: its data, read back from the API server, as files ---
  const secretsDir = join(host.dir, 'chains', 'signing-secrets');
  const overlay = join(host.dir, 'chains', 'etc-overlay');
  for (const d of [secretsDir, join(overlay, 'upper'), join(overlay, 'work')]) mkdirSync(d, { recursive: true, mode: 0o700 });
  const secret = await admin.makeApiClient(CoreV1Api).readNamespacedSecret({ name: 'signing-secrets', namespace: CHAINS_NAMESPACE });
  for (const [name, b64] of Object.entries(secret.data ?? {})) writeFileSync(join(secretsDir, name), Buffer.from(b64, 'base64'), { mode: 0o600 });
  log(`chains: installed ${rbac.length} RBAC objects and ${configMaps.length + 1} ConfigMaps from ${configDir}, Secret ${CHAINS_NAMESPACE}/signing-secrets (x509.pem, ECDSA P-256)`);

  const { KUBECONFIG: _k, ...rest } = process.env;
  const cmd = mountedCommand(secretsDir, overlay, binary, ['-kubeconfig', host.kubeconfigFor(CHAINS_IDENTITY)]);
  const controller = new ManagedProcess('tekton chains', cmd.command, cmd.args, join(host.dir, 'tekton-chains.log'), host.onChange, {
    ...rest,
    SYSTEM_NAMESPACE: CHAINS_NAMESPACE,
    METRICS_DOMAIN: 'tekton.dev/chains',
    CONFIG_LOGGING_NAME: 'config-logging',
    CONFIG_OBSERVABILITY_NAME: 'tekton-chains-config-observability',
    CONFIG_LEADERELECTION_NAME: 'tekton-chains-config-leader-election',
    KUBERNETES_MIN_VERSION: 'v1.28.0',
    PROFILING_PORT: String(profiling),
    METRICS_PROMETHEUS_PORT: String(metrics),
    // knative's OpenTelemetry Prometheus server (Chains v0.28) binds all interfaces unless told.
    METRICS_PROMETHEUS_HOST: '127.0.0.1',
  });
  host.adopt(controller);
  controller.start();
  const stop = (): Promise<void> => controller.stop(2000);
  try {
    // Ready when both reconcilers (TaskRuns, PipelineRuns) hold their leases.
    await waitUntilReady('Tekton Chains holding its leases', readyTimeoutMs, [controller], async () => {
      const leases = await admin.makeApiClient(CoordinationV1Api).listNamespacedLease({ namespace: CHAINS_NAMESPACE });
      const held = leases.items.filter((l) => l.spec?.holderIdentity).map((l) => l.metadata?.name ?? '');
      const missing = ['.pipelinerun.', '.taskrun.'].filter((part) => !held.some((n) => n.includes(part)));
      return missing.length === 0 ? true : `no lease held yet for *${missing.join('*, *')}* (held: ${held.join(', ') || 'none'})`;
    });
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
  const startupMs = Date.now() - started;
  log(`chains: ${version} controller ready after ${startupMs} ms (binary lookup ${installMs} ms); signs PipelineRuns as ${config['artifacts.pipelinerun.format']}, storage tekton, x509 key`);
  return { version, controller, publicKeyPem, config, startupMs, installMs, configDir, stop };
}
