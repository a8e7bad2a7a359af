/**
 * A throwaway pair of real Kubernetes control planes for tests, demos and
 * benchmarks: one etcd and two kube-apiservers ("remote" and "internal")
 * that share it under different key prefixes, so the clusters are fully
 * isolated from each other while costing a single etcd.
 *
 * There is no controller-manager, scheduler or kubelet: objects are stored
 * and served (CRDs, RBAC, admission, watches all work), but nothing acts on
 * them — e.g. no garbage collection, no default ServiceAccounts, no Pods run.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { request } from 'node:https';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify as toYaml } from 'yaml';
import { ensureBinaries, type EnvtestAssets } from './binaries.js';
import type { LogFn } from '../log.js';
import { freePorts, ManagedProcess, removeOnExit, startWatchdog, writePidFile } from './processes.js';
import { RESOLVERS_NAMESPACE, startTekton, TEKTON_IDENTITIES, TEKTON_NAMESPACE, type TektonOptions, type TektonPlatform } from './tekton.js';

export type { EnvtestAssets } from './binaries.js';

/** The namespace and ServiceAccount the controller runs as, on both clusters. */
export const CONTROLLER_NAMESPACE = 'internal-services';
export const CONTROLLER_SERVICE_ACCOUNT = 'internal-services-controller';
export const CONTROLLER_USERNAME = `system:serviceaccount:${CONTROLLER_NAMESPACE}:${CONTROLLER_SERVICE_ACCOUNT}`;

export interface Identity {
  /** Short name: "admin", "controller", "requester", "outsider". */
  name: string;
  /** The username the apiserver authenticates the token as. */
  username: string;
  groups: string[];
  /** Bearer token (static token file). */
  token: string;
  /** A kubeconfig file for this identity, usable by kubectl and by the controller. */
  kubeconfigPath: string;
  /** A fresh client-node KubeConfig for this identity. */
  kubeConfig(): KubeConfig;
}

export interface ControlPlaneIdentities {
  /** user "admin", group system:masters (cluster-admin). */
  admin: Identity;
  /** The controller's ServiceAccount user; has only what RBAC grants it. */
  controller: Identity;
  /** remote only: user "requester", group system:authenticated. */
  requester?: Identity;
  /** remote only: user "outsider", no grants at all. */
  outsider?: Identity;
  /** internal only: the ServiceAccounts of Tekton's own manifests (controller, webhook, resolvers). */
  tektonController?: Identity;
  tektonWebhook?: Identity;
  tektonResolvers?: Identity;
  /** internal only: user "release-manager" in group "release-managers" (approves requests once RBAC lets it). */
  approver?: Identity;
  /** internal only: user "bystander", group system:authenticated; nothing granted. */
  bystander?: Identity;
}

/** "remote", "internal", or a further remote cluster: "remote-2", "remote-3", … */
export type PlaneName = 'remote' | 'internal' | `remote-${number}`;

export interface ControlPlane {
  name: PlaneName;
  /** https://127.0.0.1:PORT — stays the same across stopApiserver/startApiserver. */
  url: string;
  /** PEM of the apiserver's self-signed serving certificate chain (trusted by the kubeconfigs). */
  caPem: string;
  identities: ControlPlaneIdentities;
  /** JSON-lines audit log (level Metadata, one line per completed request) when started with audit: true. */
  auditLogPath?: string;
  /** The apiserver's stdout+stderr. */
  logPath: string;
  /** Stops this cluster's apiserver (etcd and the other apiserver keep running). */
  stopApiserver(): Promise<void>;
  /** Starts it again on the same port with the same flags; resolves once /readyz is ok. */
  startApiserver(): Promise<void>;
}

export interface Environment {
  /** Holds logs, kubeconfigs, certs, etcd data. */
  dir: string;
  remote: ControlPlane;
  internal: ControlPlane;
  /** Every remote cluster: remotes[0] is `remote`, then "remote-2", … (with `remotes`). */
  remotes: ControlPlane[];
  assets: EnvtestAssets;
  /** The one etcd's client URL (plain HTTP on 127.0.0.1), e.g. for compaction. */
  etcdUrl: string;
  /** Milliseconds from startEnvironment() until both apiservers were ready (binaries lookup included). */
  startupMs: number;
  /** Real Tekton on the internal cluster (pods simulated), when started with `tekton`. */
  tekton?: TektonPlatform;
  /** Stops every process and, unless the directory was given or ENVTEST_KEEP=1, deletes it. Idempotent. */
  stop(): Promise<void>;
}

export interface StartEnvironmentOptions {
  /** Use (and keep) this directory instead of a fresh temporary one. Existing state in it is reused. */
  dir?: string;
  /** How many remote clusters (default 1): each its own kube-apiserver with its own etcd prefix and the remote identities. */
  remotes?: number;
  /** Write a Metadata-level audit log per apiserver (see ControlPlane.auditLogPath). */
  audit?: boolean;
  /** Progress messages; defaults to silence (install.sh output then goes to process.stderr). */
  log?: LogFn;
  /** Give up waiting for readiness after this long (default 60 s). */
  readyTimeoutMs?: number;
  /**
   * Also run real Tekton (controller, resolvers, webhook; pods simulated) on
   * the internal cluster, plus a git server on loopback. See tekton.ts.
   */
  tekton?: boolean | TektonOptions;
}

interface IdentitySpec {
  name: keyof ControlPlaneIdentities;
  username: string;
  groups: string[];
}

/** The groups the apiserver gives a ServiceAccount of `namespace`. */
const serviceAccountGroups = (namespace: string): string[] => ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'];
const CONTROLLER_GROUPS = serviceAccountGroups(CONTROLLER_NAMESPACE);

const IDENTITIES: Record<'remote' | 'internal', IdentitySpec[]> = {
  internal: [
    { name: 'admin', username: 'admin', groups: ['system:masters'] },
    { name: 'controller', username: CONTROLLER_USERNAME, groups: CONTROLLER_GROUPS },
    { name: 'tektonController', username: TEKTON_IDENTITIES.controller, groups: serviceAccountGroups(TEKTON_NAMESPACE) },
    { name: 'tektonWebhook', username: TEKTON_IDENTITIES.webhook, groups: serviceAccountGroups(TEKTON_NAMESPACE) },
    { name: 'tektonResolvers', username: TEKTON_IDENTITIES.resolvers, groups: serviceAccountGroups(RESOLVERS_NAMESPACE) },
    { name: 'approver', username: 'release-manager', groups: ['release-managers', 'system:authenticated'] },
    { name: 'bystander', username: 'bystander', groups: ['system:authenticated'] },
  ],
  remote: [
    { name: 'admin', username: 'admin', groups: ['system:masters'] },
    { name: 'controller', username: CONTROLLER_USERNAME, groups: CONTROLLER_GROUPS },
    { name: 'requester', username: 'requester', groups: ['system:authenticated'] },
    // No explicit groups: the apiserver still adds system:authenticated, which
    // only grants discovery-level access by default.
    { name: 'outsider', username: 'outsider', groups: [] },
  ],
};

// Metadata for every request; RequestReceived is omitted so that each
// request produces exactly one line (at ResponseComplete, or Panic), which
// makes per-identity request counts a simple line count.
const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
`;

export async function startEnvironment(opts: StartEnvironmentOptions = {}): Promise<Environment> {
  const started = Date.now();
  const log: LogFn = opts.log ?? (() => {});
  const assets = await ensureBinaries(opts.log);
  const keep = opts.dir !== undefined || process.env['ENVTEST_KEEP'] === '1';
  const dir = opts.dir !== undefined ? resolve(opts.dir) : mkdtempSync(join(tmpdir(), 'internal-services-envtest-'));
  mkdirSync(dir, { recursive: true });
  const readyTimeoutMs = opts.readyTimeoutMs ?? 60_000;

  const processes: ManagedProcess[] = [];
  /** Processes started on top of the control planes (Tekton, git daemon), for the pid file; Tekton stops them. */
  const adopted: ManagedProcess[] = [];
  let tekton: TektonPlatform | undefined;
  const pidFile = join(dir, 'pids');
  const refreshPids = (): void => writePidFile(pidFile, [...processes, ...adopted].map((p) => p.pid));
  let watchdog: ChildProcess | undefined;
  let stopping: Promise<void> | undefined;
  // Concurrent or repeated stop() calls share one teardown.
  const stopAll = (): Promise<void> => (stopping ??= teardown());

  const teardown = async (): Promise<void> => {
    // Apiservers first (they would otherwise log etcd errors while going down).
    // A graceful apiserver shutdown takes about a second; when the state is
    // thrown away anyway there is nothing to be graceful about.
    const graceMs = keep ? 3000 : 0;
    // Tekton's stop() ends every process it adopted (its own, the git daemon).
    await tekton?.stop().catch(() => {});
    const [etcdProc, ...apiservers] = processes;
    await Promise.all(apiservers.map((p) => p.stop(graceMs)));
    await etcdProc?.stop(graceMs);
    watchdog?.kill('SIGKILL');
    if (!keep) {
      rmSync(dir, { recursive: true, force: true });
      removeOnExit(dir, false);
    } else log(`envtest: kept ${dir}`);
  };

  try {
    const extraRemotes = Math.max(0, (opts.remotes ?? 1) - 1);
    const ports = await freePorts(4 + extraRemotes);
    const [etcdClientPort, etcdPeerPort, remotePort, internalPort] = ports as [number, number, number, number];
    watchdog = startWatchdog(pidFile, keep ? undefined : dir);
    if (!keep) removeOnExit(dir);

    // --- etcd ---
    mkdirSync(join(dir, 'etcd'), { recursive: true });
    const etcdUrl = `http://127.0.0.1:${etcdClientPort}`;
    const peerUrl = `http://127.0.0.1:${etcdPeerPort}`;
    const etcd = new ManagedProcess(
      'etcd',
      join(assets.binDir, 'etcd'),
      [
        '--name=envtest',
        `--data-dir=${join(dir, 'etcd', 'data')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=envtest=${peerUrl}`,
        // Test data is disposable: skipping fsync makes every write much cheaper.
        '--unsafe-no-fsync',
        '--log-level=warn',
      ],
      join(dir, 'etcd.log'),
      refreshPids,
    );
    processes.push(etcd);
    etcd.start();

    // --- shared apiserver inputs ---
    // One service-account signing key pair serves both clusters; nothing here
    // relies on tokens of one cluster being rejected by the other.
    const { publicKey, privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    const saPub = join(dir, 'sa.pub');
    const saKey = join(dir, 'sa.key');
    writeFileSync(saPub, publicKey);
    writeFileSync(saKey, privateKey, { mode: 0o600 });
    const auditPolicy = join(dir, 'audit-policy.yaml');
    if (opts.audit) writeFileSync(auditPolicy, AUDIT_POLICY);

    const names: PlaneName[] = ['remote', 'internal', ...Array.from({ length: extraRemotes }, (_, i) => `remote-${i + 2}` as PlaneName)];
    const planes = names.map((name, i) => {
      const port = name === 'remote' ? remotePort : name === 'internal' ? internalPort : ports[4 + i - 2]!;
      return new ApiserverPlane(name, {
        dir: join(dir, name),
        port,
        binDir: assets.binDir,
        etcdUrl,
        saPub,
        saKey,
        auditPolicy: opts.audit ? auditPolicy : undefined,
        readyTimeoutMs,
        onChange: refreshPids,
      });
    }) as [ApiserverPlane, ApiserverPlane, ...ApiserverPlane[]];
    processes.push(...planes.map((p) => p.process));

    await waitForEtcd(etcdUrl, etcd, readyTimeoutMs);
    log(`envtest: etcd ready after ${Date.now() - started} ms`);
    // Both apiservers boot concurrently; that is most of the startup time.
    await Promise.all(planes.map((p) => p.startApiserver()));
    for (const p of planes) p.writeIdentities();

    const startupMs = Date.now() - started;
    log(`envtest: control planes ready after ${startupMs} ms (remote ${planes[0].url}, internal ${planes[1].url}; dir ${dir})`);
    if (opts.tekton) {
      const internal = planes[1];
      tekton = await startTekton(
        {
          dir,
          assets,
          admin: internal.identities.admin.kubeConfig(),
          kubeconfigFor: (username) => {
            const id = Object.values(internal.identities).find((i: Identity | undefined) => i?.username === username);
            if (!id) throw new Error(`no identity ${username} on the internal cluster`);
            return id.kubeconfigPath;
          },
          adopt: (p) => {
            adopted.push(p);
            refreshPids();
          },
          onChange: refreshPids,
          log,
        },
        opts.tekton === true ? {} : opts.tekton,
      );
    }
    return {
      dir,
      remote: planes[0],
      internal: planes[1],
      remotes: [planes[0], ...planes.slice(2)],
      assets,
      startupMs,
      etcdUrl,
      ...(tekton ? { tekton } : {}),
      stop: stopAll,
    };
  } catch (err) {
    await stopAll().catch(() => {});
    if (err instanceof Error && !keep) {
      err.message += `\n(${dir} was removed; set ENVTEST_KEEP=1 or pass dir to keep its logs)`;
    }
    throw err;
  }
}

interface ApiserverPlaneConfig {
  dir: string;
  port: number;
  binDir: string;
  etcdUrl: string;
  saPub: string;
  saKey: string;
  auditPolicy: string | undefined;
  readyTimeoutMs: number;
  onChange: () => void;
}

class ApiserverPlane implements ControlPlane {
  readonly url: string;
  readonly logPath: string;
  readonly auditLogPath?: string;
  readonly process: ManagedProcess;
  identities!: ControlPlaneIdentities;
  caPem = '';
  private readonly tokens: Map<string, { spec: IdentitySpec; token: string }>;
  private readonly certDir: string;

  constructor(
    readonly name: PlaneName,
    private readonly cfg: ApiserverPlaneConfig,
  ) {
    mkdirSync(cfg.dir, { recursive: true });
    this.url = `https://127.0.0.1:${cfg.port}`;
    this.logPath = join(cfg.dir, 'apiserver.log');
    this.certDir = join(cfg.dir, 'certs');

    // Static tokens are the simplest authenticator that still yields a real
    // username and groups for RBAC to evaluate.
    this.tokens = new Map(
      IDENTITIES[name === 'internal' ? 'internal' : 'remote'].map((spec) => [spec.name, { spec, token: randomBytes(24).toString('hex') }]),
    );
    const tokenFile = join(cfg.dir, 'tokens.csv');
    writeFileSync(
      tokenFile,
      [...this.tokens.values()]
        .map(({ spec, token }) => `${token},${spec.username},${spec.username},"${spec.groups.join(',')}"`)
        .join('\n') + '\n',
      { mode: 0o600 },
    );

    const args = [
      `--etcd-servers=${cfg.etcdUrl}`,
      // Separate key spaces in the one etcd make two independent clusters.
      `--etcd-prefix=/${name}`,
      // Without --tls-cert-file the apiserver generates a self-signed
      // serving cert here (apiserver.crt = leaf + its CA) and reuses it on
      // restart, so kubeconfigs stay valid across stopApiserver/startApiserver.
      `--cert-dir=${this.certDir}`,
      `--secure-port=${cfg.port}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      '--service-cluster-ip-range=10.0.0.0/24',
      '--allow-privileged=true',
      '--authorization-mode=RBAC',
      `--token-auth-file=${tokenFile}`,
      // No controller-manager creates the "default" ServiceAccounts this plugin insists on.
      '--disable-admission-plugins=ServiceAccount',
      `--service-account-issuer=${this.url}/`,
      `--service-account-key-file=${cfg.saPub}`,
      `--service-account-signing-key-file=${cfg.saKey}`,
      '--profiling=false',
    ];
    if (cfg.auditPolicy !== undefined) {
      this.auditLogPath = join(cfg.dir, 'audit.log');
      args.push(
        `--audit-policy-file=${cfg.auditPolicy}`,
        `--audit-log-path=${this.auditLogPath}`,
        '--audit-log-format=json',
        // Write each event before the response is sent, so a test that has
        // seen the response can count it in the file.
        '--audit-log-mode=blocking',
      );
    }
    this.process = new ManagedProcess(
      `kube-apiserver (${name})`,
      join(cfg.binDir, 'kube-apiserver'),
      args,
      this.logPath,
      cfg.onChange,
    );
  }

  async startApiserver(): Promise<void> {
    this.process.start();
    const admin = this.tokens.get('admin');
    if (!admin) throw new Error('no admin token');
    const deadline = Date.now() + this.cfg.readyTimeoutMs;
    let lastProblem = 'no answer yet';
    for (;;) {
      if (!this.process.running) {
        throw new Error(
          `${this.process.name} exited during startup (${this.process.exitInfo ?? 'unknown'}); ` +
            `log ${this.logPath}, last lines:\n${this.process.logTail()}`,
        );
      }
      const res = await httpsGet(`${this.url}/readyz`, admin.token).catch((err: Error) => ({
        status: 0,
        body: err.message,
      }));
      if (res.status === 200) break;
      lastProblem = res.status === 0 ? res.body : `HTTP ${res.status}: ${summarizeReadyz(res.body)}`;
      if (Date.now() > deadline) {
        await this.process.stop(1000);
        throw new Error(
          `${this.process.name} not ready after ${this.cfg.readyTimeoutMs} ms (${lastProblem}); ` +
            `log ${this.logPath}, last lines:\n${this.process.logTail()}`,
        );
      }
      await sleep(100);
    }
    this.caPem = readFileSync(join(this.certDir, 'apiserver.crt'), 'utf8');
  }

  async stopApiserver(): Promise<void> {
    await this.process.stop(5000);
  }

  /** Writes one kubeconfig per identity; needs the serving cert, so runs after the first start. */
  writeIdentities(): void {
    const ids: Partial<ControlPlaneIdentities> = {};
    for (const { spec, token } of this.tokens.values()) {
      ids[spec.name] = this.makeIdentity(spec, token);
    }
    if (!ids.admin || !ids.controller) throw new Error('admin and controller identities are required');
    this.identities = ids as ControlPlaneIdentities;
  }

  private makeIdentity(spec: IdentitySpec, token: string): Identity {
    const kubeconfigPath = join(this.cfg.dir, `kubeconfig-${spec.name}.yaml`);
    const contextName = `${this.name}-${spec.name}`;
    const caData = Buffer.from(this.caPem).toString('base64');
    writeFileSync(
      kubeconfigPath,
      toYaml({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: this.name, cluster: { server: this.url, 'certificate-authority-data': caData } }],
        users: [{ name: spec.name, user: { token } }],
        contexts: [{ name: contextName, context: { cluster: this.name, user: spec.name } }],
        'current-context': contextName,
      }),
      { mode: 0o600 },
    );
    const url = this.url;
    const clusterName = this.name;
    return {
      name: spec.name,
      username: spec.username,
      groups: [...spec.groups],
      token,
      kubeconfigPath,
      kubeConfig(): KubeConfig {
        const kc = new KubeConfig();
        kc.loadFromOptions({
          clusters: [{ name: clusterName, server: url, caData, skipTLSVerify: false }],
          users: [{ name: spec.name, token }],
          contexts: [{ name: contextName, cluster: clusterName, user: spec.name }],
          currentContext: contextName,
        });
        return kc;
      },
    };
  }
}

async function waitForEtcd(url: string, etcd: ManagedProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastProblem = 'no answer yet';
  for (;;) {
    if (!etcd.running) {
      throw new Error(
        `etcd exited during startup (${etcd.exitInfo ?? 'unknown'}); log ${etcd.logPath}, last lines:\n${etcd.logTail()}`,
      );
    }
    try {
      const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
      const body = await res.text();
      if (res.ok && body.includes('"health":"true"')) return;
      lastProblem = `HTTP ${res.status}: ${body}`;
    } catch (err) {
      lastProblem = (err as Error).message;
    }
    if (Date.now() > deadline) {
      throw new Error(`etcd not healthy after ${timeoutMs} ms (${lastProblem}); last lines:\n${etcd.logTail()}`);
    }
    await sleep(50);
  }
}

/**
 * Minimal HTTPS GET used only to poll /readyz while an apiserver boots. The
 * serving cert is not known before the first start completes (the apiserver
 * generates it), so verification is skipped for this local, just-started port.
 */
function httpsGet(url: string, token: string): Promise<{ status: number; body: string }> {
  return new Promise((resolvePromise, reject) => {
    const req = request(
      url,
      { method: 'GET', headers: { Authorization: `Bearer ${token}` }, rejectUnauthorized: false, timeout: 5000 },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolvePromise({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** Only the failing checks of a verbose /readyz answer ("[-]name failed: ..."). */
function summarizeReadyz(body: string): string {
  const failing = body
    .split('\n')
    .filter((l) => l.startsWith('[-]'))
    .map((l) => l.slice(3).replace(/ failed: reason withheld$/, ''));
  return failing.length > 0 ? `failing checks: ${failing.join(', ')}` : body.slice(0, 500);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
