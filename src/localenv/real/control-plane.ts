/**
 * One kube-apiserver of the local environment (ApiserverPlane): its flags,
 * static tokens and kubeconfigs, start/stop/restart on a fixed port and the
 * wait for /readyz; and the wait for the etcd they share to be healthy.
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:https';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify as toYaml } from 'yaml';
import { ManagedProcess } from './processes.js';
import { auditFlags } from './audit-policy.js';
import { IDENTITIES, type ControlPlaneIdentities, type Identity, type IdentitySpec } from './identities.js';

/** "remote", "internal", or a further remote cluster: "remote-2", "remote-3", … */
export type PlaneName = 'remote' | 'internal' | `remote-${number}`;

export interface ControlPlane {
  name: PlaneName;
  /** https://127.0.0.1:PORT — stays the same across stopApiserver/startApiserver. */
  url: string;
  /** PEM of the apiserver's self-signed serving certificate chain (trusted by the kubeconfigs). */
  caPem: string;
  identities: ControlPlaneIdentities;
  /**
   * JSON-lines audit log, when there is one (audit-policy.ts): with audit: true,
   * level Metadata, one line per completed request; on the internal plane with
   * INTERNAL_SERVICES_AUDIT_DIR set, in that directory, with the bodies of
   * Tekton's writes (and, without audit: true, nothing else).
   */
  auditLogPath?: string;
  /** The apiserver's stdout+stderr. */
  logPath: string;
  /** Stops this cluster's apiserver (etcd and the other apiserver keep running). */
  stopApiserver(): Promise<void>;
  /** Starts it again on the same port with the same flags; resolves once /readyz is ok. */
  startApiserver(): Promise<void>;
}

export interface ApiserverPlaneConfig {
  dir: string;
  port: number;
  binDir: string;
  etcdUrl: string;
  saPub: string;
  saKey: string;
  auditPolicy: string | undefined;
  /** Where the audit log goes (default: audit.log in `dir`). */
  auditLogPath?: string | undefined;
  readyTimeoutMs: number;
  onChange: () => void;
  /** More kube-apiserver flags (e.g. feature gates, to play an older server). */
  extraArgs?: readonly string[] | undefined;
  /**
   * A real node attaches to this cluster (real-node.ts): its flags (client CA,
   * the kubelet's API), and Node authorization, the NodeRestriction and
   * ServiceAccount admission plugins (a controller manager makes the
   * ServiceAccounts and their tokens).
   */
  nodeFlags?: readonly string[] | undefined;
}

export class ApiserverPlane implements ControlPlane {
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
      cfg.nodeFlags ? '--authorization-mode=Node,RBAC' : '--authorization-mode=RBAC',
      `--token-auth-file=${tokenFile}`,
      // Without a node, no controller-manager creates the "default" ServiceAccounts this plugin insists on.
      ...(cfg.nodeFlags ? ['--enable-admission-plugins=NodeRestriction', ...cfg.nodeFlags] : ['--disable-admission-plugins=ServiceAccount']),
      `--service-account-issuer=${this.url}/`,
      `--service-account-key-file=${cfg.saPub}`,
      `--service-account-signing-key-file=${cfg.saKey}`,
      '--profiling=false',
    ];
    if (cfg.auditPolicy !== undefined) {
      // A restart appends to the same file.
      this.auditLogPath = cfg.auditLogPath ?? join(cfg.dir, 'audit.log');
      args.push(...auditFlags(cfg.auditPolicy, this.auditLogPath));
    }
    args.push(...(cfg.extraArgs ?? []));
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

export async function waitForEtcd(url: string, etcd: ManagedProcess, timeoutMs: number): Promise<void> {
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
export function httpsGet(url: string, token: string): Promise<{ status: number; body: string }> {
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
export function summarizeReadyz(body: string): string {
  const failing = body
    .split('\n')
    .filter((l) => l.startsWith('[-]'))
    .map((l) => l.slice(3).replace(/ failed: reason withheld$/, ''));
  return failing.length > 0 ? `failing checks: ${failing.join(', ')}` : body.slice(0, 500);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
