/**
 * A real kcp (hack/kcp: built from its Go module, cached per version) for the
 * tests and modes that need one: `kcp start` on loopback with its own root
 * directory (embedded etcd, virtual workspaces in-process), stopped and
 * started again on the same directory and ports, with static-token
 * identities (kube-apiserver's --token-auth-file, which kcp keeps).
 *
 * Workspaces, objects in them, bindings and the URL of an APIExport's virtual
 * workspace are in kcp-workspaces.ts, which takes the Kcp this file starts.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { KubeConfig } from '@kubernetes/client-node';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { ensureKcpBinary } from './binaries.js';
import { httpsGet, summarizeReadyz } from './control-plane.js';
import { freePorts, ManagedProcess, releaseDir, removeOnExit, startWatchdog, writePidFile } from './processes.js';
import type { LogFn } from '../progress-log.js';

/** The controller's user on kcp: a plain user (not a ServiceAccount name: kcp treats those specially). */
export const KCP_CONTROLLER_USERNAME = 'internal-services-controller';

export type KcpIdentityName = 'admin' | 'controller' | 'requester' | 'tenantAdmin' | 'outsider';

export interface KcpIdentity {
  name: KcpIdentityName;
  username: string;
  groups: string[];
  /** Bearer token (kcp's --token-auth-file). */
  token: string;
  /**
   * A client-node KubeConfig against `target`: a workspace path ("root:tenant-a"), or a full URL (a virtual workspace). Default "root".
   * `namespace`: its context's namespace, what clients that pass no namespace use (else "default").
   */
  kubeConfig(target?: string, opts?: { namespace?: string }): KubeConfig;
  /** Writes a kubeconfig file against `target` (see kubeConfig) and returns its path: for processes (the controller, kubectl). */
  writeKubeconfig(target?: string, opts?: { namespace?: string }): string;
}

/**
 * Who talks to kcp here. kcp adds system:authenticated to every one. Only
 * "admin" has rights of its own; the others have what RBAC in a workspace
 * grants them (config/kcp) and nothing else — not even entry into a
 * workspace, which kcp checks first (verb "access" on "/").
 */
export interface KcpIdentities {
  /**
   * user "admin", group system:kcp:admin (as kcp's own kcp-admin): everything
   * in every workspace. Not system:masters: kcp records no owner for a
   * workspace a system:masters user creates, and then cannot initialize it
   * ("LogicalCluster … had no user recorded").
   */
  admin: KcpIdentity;
  /** KCP_CONTROLLER_USERNAME: reads and writes through the APIExport's virtual workspace. */
  controller: KcpIdentity;
  /** user "requester": creates requests in a tenant workspace. */
  requester: KcpIdentity;
  /**
   * user "tenant-admin": a tenant workspace's admin where a test makes it one
   * (cluster-admin there, as kcp's ClusterRoleBinding workspace-admin makes a
   * workspace's owner), and nothing elsewhere.
   */
  tenantAdmin: KcpIdentity;
  /** user "outsider": granted nothing anywhere. */
  outsider: KcpIdentity;
}

export const SPECS: Array<{ name: KcpIdentityName; username: string; groups: string[] }> = [
  { name: 'admin', username: 'admin', groups: ['system:kcp:admin'] },
  { name: 'controller', username: KCP_CONTROLLER_USERNAME, groups: [] },
  { name: 'requester', username: 'requester', groups: [] },
  { name: 'tenantAdmin', username: 'tenant-admin', groups: [] },
  { name: 'outsider', username: 'outsider', groups: [] },
];

export interface Kcp {
  /** https://127.0.0.1:PORT — the same across stopKcp/startKcp. */
  url: string;
  /** Holds kcp's root directory (root/), the token file, kubeconfigs and the log. */
  dir: string;
  /** kcp's --root-directory: embedded etcd, serving certificate, admin.kubeconfig. */
  rootDir: string;
  /** PEM of kcp's self-signed serving certificate (trusted by every kubeconfig made here). */
  caPem: string;
  /** kcp's stdout+stderr. */
  logPath: string;
  /** With `audit: true`: kcp's JSON-lines audit log (level Metadata, one line per completed request). */
  auditLogPath?: string;
  /** e.g. "v0.28.1". */
  version: string;
  identities: KcpIdentities;
  /** The kcp process (pid, running). */
  process: ManagedProcess;
  /** Milliseconds from startKcp() until /readyz answered ok the first time (binary lookup included). */
  startupMs: number;
  /** `${url}/clusters/${path}`: where a workspace is served. */
  workspaceUrl(path: string): string;
  /** Stops the kcp process (the root directory stays). */
  stopKcp(): Promise<void>;
  /** Starts it again on the same root directory and ports; resolves once /readyz is ok. */
  startKcp(): Promise<void>;
  /** Stops kcp and, unless the directory was given or ENVTEST_KEEP=1, deletes it. Idempotent. */
  stop(): Promise<void>;
}

export interface StartKcpOptions {
  /** Use (and keep) this directory instead of a fresh temporary one; kcp's state in it is reused. */
  dir?: string;
  log?: LogFn;
  /** Give up waiting for /readyz after this long (default 180 s: kcp's first start takes ~30 s alone). */
  readyTimeoutMs?: number;
  /** Write a Metadata-level audit log (Kcp.auditLogPath), as startEnvironment({ audit: true }) does for its apiservers. */
  audit?: boolean;
}

export async function startKcp(opts: StartKcpOptions = {}): Promise<Kcp> {
  const started = Date.now();
  const log: LogFn = opts.log ?? (() => {});
  const assets = await ensureKcpBinary(opts.log);
  const keep = opts.dir !== undefined || process.env['ENVTEST_KEEP'] === '1';
  const dir = opts.dir !== undefined ? resolve(opts.dir) : mkdtempSync(join(tmpdir(), 'internal-services-kcp-'));
  const rootDir = join(dir, 'root');
  mkdirSync(rootDir, { recursive: true });
  const readyTimeoutMs = opts.readyTimeoutMs ?? 180_000;
  const pidFile = join(dir, 'pids');
  let watchdog: ChildProcess | undefined;
  let proc: ManagedProcess | undefined;

  const tokens = SPECS.map((spec) => ({ spec, token: randomBytes(24).toString('hex') }));
  const tokenFile = join(dir, 'tokens.csv');
  writeFileSync(tokenFile, tokens.map(({ spec, token }) => `${token},${spec.username},${spec.username},"${spec.groups.join(',')}"`).join('\n') + '\n', {
    mode: 0o600,
  });
  const adminToken = tokens[0]!.token;

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      await proc?.stop(keep ? 10_000 : 0);
      watchdog?.kill('SIGKILL');
      releaseDir(dir, keep, log, 'kcp');
    })());

  try {
    // kcp's own port, and embedded etcd's client and peer ports (it listens on
    // "localhost"; its defaults, 2379/2380, would clash with any other etcd).
    const [port, etcdClientPort, etcdPeerPort] = (await freePorts(3)) as [number, number, number];
    const url = `https://127.0.0.1:${port}`;
    watchdog = startWatchdog(pidFile, keep ? undefined : dir);
    if (!keep) removeOnExit(dir);
    const logPath = join(dir, 'kcp.log');
    const auditArgs: string[] = [];
    let auditLogPath: string | undefined;
    if (opts.audit) {
      auditLogPath = join(dir, 'audit.log');
      const policy = join(dir, 'audit-policy.yaml');
      writeFileSync(policy, 'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: ["RequestReceived"]\nrules:\n  - level: Metadata\n');
      auditArgs.push(`--audit-policy-file=${policy}`, `--audit-log-path=${auditLogPath}`, '--audit-log-format=json', '--audit-log-mode=blocking');
    }
    const p = new ManagedProcess(
      'kcp',
      assets.kcpBinary,
      [
        'start',
        `--root-directory=${rootDir}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${port}`,
        `--embedded-etcd-client-port=${etcdClientPort}`,
        `--embedded-etcd-peer-port=${etcdPeerPort}`,
        `--token-auth-file=${tokenFile}`,
        ...auditArgs,
      ],
      logPath,
      () => writePidFile(pidFile, [p.pid]),
    );
    proc = p;

    const kcp: Kcp = {
      url,
      dir,
      rootDir,
      caPem: '',
      logPath,
      ...(auditLogPath ? { auditLogPath } : {}),
      version: assets.kcpVersion,
      identities: {} as KcpIdentities,
      process: p,
      startupMs: 0,
      workspaceUrl: (path) => `${url}/clusters/${path}`,
      stopKcp: () => p.stop(10_000),
      startKcp: async () => {
        p.start();
        await waitReady(p, url, adminToken, readyTimeoutMs);
        kcp.caPem = readCaPem(rootDir);
      },
      stop,
    };
    await kcp.startKcp();
    kcp.startupMs = Date.now() - started;
    for (const { spec, token } of tokens) {
      (kcp.identities as unknown as Record<string, KcpIdentity>)[spec.name] = makeIdentity(kcp, spec, token);
    }
    log(`kcp: ${assets.kcpVersion} ready after ${kcp.startupMs} ms at ${url} (dir ${dir})`);
    return kcp;
  } catch (err) {
    await stop().catch(() => {});
    if (err instanceof Error && !keep) err.message += `\n(${dir} was removed; set ENVTEST_KEEP=1 or pass dir to keep its logs)`;
    throw err;
  }
}

export async function waitReady(p: ManagedProcess, url: string, token: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastProblem = 'no answer yet';
  for (;;) {
    if (!p.running) {
      throw new Error(`kcp exited during startup (${p.exitInfo ?? 'unknown'}); log ${p.logPath}, last lines:\n${p.logTail()}`);
    }
    const res = await httpsGet(`${url}/readyz`, token).catch((err: Error) => ({ status: 0, body: err.message }));
    if (res.status === 200) return;
    lastProblem = res.status === 0 ? res.body : `HTTP ${res.status}: ${summarizeReadyz(res.body)}`;
    if (Date.now() > deadline) {
      await p.stop(1000);
      throw new Error(`kcp not ready after ${timeoutMs} ms (${lastProblem}); log ${p.logPath}, last lines:\n${p.logTail()}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The serving certificate kcp generated (and reuses on restart), from the admin.kubeconfig it writes. */
function readCaPem(rootDir: string): string {
  const kc = parseYaml(readFileSync(join(rootDir, 'admin.kubeconfig'), 'utf8')) as {
    clusters?: Array<{ name: string; cluster: { 'certificate-authority-data'?: string } }>;
  };
  const data = kc.clusters?.find((c) => c.name === 'root')?.cluster['certificate-authority-data'];
  if (!data) throw new Error(`no certificate-authority-data in ${rootDir}/admin.kubeconfig`);
  return Buffer.from(data, 'base64').toString('utf8');
}

export function makeIdentity(kcp: Kcp, spec: { name: KcpIdentityName; username: string; groups: string[] }, token: string): KcpIdentity {
  const server = (target: string): string => (/^https?:\/\//.test(target) ? target : kcp.workspaceUrl(target));
  let files = 0;
  return {
    ...spec,
    groups: [...spec.groups],
    token,
    kubeConfig(target = 'root', opts = {}): KubeConfig {
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: 'kcp', server: server(target), caData: Buffer.from(kcp.caPem).toString('base64'), skipTLSVerify: false }],
        users: [{ name: spec.name, token }],
        contexts: [{ name: `kcp-${spec.name}`, cluster: 'kcp', user: spec.name, ...(opts.namespace ? { namespace: opts.namespace } : {}) }],
        currentContext: `kcp-${spec.name}`,
      });
      return kc;
    },
    writeKubeconfig(target = 'root', opts = {}): string {
      const path = join(kcp.dir, `kubeconfig-${spec.name}-${++files}.yaml`);
      writeFileSync(
        path,
        toYaml({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [{ name: 'kcp', cluster: { server: server(target), 'certificate-authority-data': Buffer.from(kcp.caPem).toString('base64') } }],
          users: [{ name: spec.name, user: { token } }],
          contexts: [{ name: `kcp-${spec.name}`, context: { cluster: 'kcp', user: spec.name, ...(opts.namespace ? { namespace: opts.namespace } : {}) } }],
          'current-context': `kcp-${spec.name}`,
        }),
        { mode: 0o600 },
      );
      return path;
    },
  };
}
