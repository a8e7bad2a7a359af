/**
 * A real sharded kcp on loopback, for the tests and modes that need one: the
 * binaries of kcp's own module (hack/kcp: kcp, kcp-front-proxy,
 * cache-server), wired the way kcp's sharded-test-server wires them, but each
 * process started and stopped here on its own (free ports; a shard can be
 * stopped and started again while the others serve):
 *
 *   cache server ── holds what the shards share (APIExports, workspace types)
 *   root shard   ── kcp `--shard-name=root` (the root workspace lives here)
 *   shard-1…     ── kcp `--shard-name=shard-N --root-shard-kubeconfig-file=…`
 *   front-proxy  ── routes `/clusters/<workspace>` to the shard that holds it
 *
 * Every shard serves its own virtual workspaces (an APIExportEndpointSlice
 * lists one URL per shard). Certificates are made with openssl: a client CA
 * (the shards' and the proxy's client certificates), a request-header CA (the
 * proxy's identity towards the shards) and a serving CA (every server's
 * certificate; the only CA a kubeconfig here trusts). People authenticate with
 * static tokens (kcp's --token-auth-file, given to every shard and the proxy),
 * as with the single kcp (kcp-server.ts), so the returned object is a Kcp whose url
 * is the front-proxy's: kcp-workspaces.ts works on it unchanged.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { ensureKcpBinary } from './binaries.js';
import { httpsGet, summarizeReadyz } from './control-plane.js';
import { freePorts, ManagedProcess, releaseDir, removeOnExit, startWatchdog, waitUntilReady, writePidFile } from './processes.js';
import { makeCa, makeLeaf, openssl } from './pki.js';
import { makeIdentity, SPECS, type Kcp, type KcpIdentities, type KcpIdentity, type StartKcpOptions } from './kcp-server.js';
import type { LogFn } from '../progress-log.js';

/** The label put on every Shard object: its name, so that a Workspace can be placed with `spec.location.selector`. */
export const SHARD_LABEL = 'internal-services.test/shard';

export interface KcpShardProcess {
  /** "root", "shard-1", … (the Shard object's name). */
  name: string;
  /** https://127.0.0.1:PORT: the shard itself (its virtual workspaces are under /services/). */
  url: string;
  process: ManagedProcess;
  /** Stops the shard's process (its directory stays). */
  stop(graceMs?: number): Promise<void>;
  /** Starts it again on the same directory and ports; resolves once /readyz is ok. */
  start(): Promise<void>;
}

export interface ShardedKcp extends Kcp {
  /** The front-proxy: where people and the controller's provider kubeconfig go. */
  frontProxy: ManagedProcess;
  cacheServer: ManagedProcess;
  shards: KcpShardProcess[];
  /** The shard names, root first. */
  shardNames: string[];
  /** With `audit: true`: each shard's JSON-lines audit log (level Metadata), root first. */
  auditLogPaths: string[];
}

/** As startKcp's; with `audit`, each shard writes its own log (ShardedKcp.auditLogPaths). */
export interface StartShardedKcpOptions extends StartKcpOptions {
  /** Shards, the root one included (default 2). */
  shards?: number;
}

export async function startShardedKcp(opts: StartShardedKcpOptions = {}): Promise<ShardedKcp> {
  const started = Date.now();
  const log: LogFn = opts.log ?? (() => {});
  const count = opts.shards ?? 2;
  if (count < 1) throw new Error('a sharded kcp needs at least its root shard');
  const assets = await ensureKcpBinary(opts.log);
  const bin = (name: string): string => join(assets.kcpBinDir, name);
  for (const name of ['kcp', 'kcp-front-proxy', 'cache-server']) if (!existsSync(bin(name))) throw new Error(`${bin(name)} is missing: hack/kcp/install.sh builds it`);
  const keep = opts.dir !== undefined || process.env['ENVTEST_KEEP'] === '1';
  const dir = opts.dir !== undefined ? resolve(opts.dir) : mkdtempSync(join(tmpdir(), 'internal-services-kcp-sharded-'));
  mkdirSync(dir, { recursive: true });
  const readyTimeoutMs = opts.readyTimeoutMs ?? 240_000;
  const pki = join(dir, 'pki');
  mkdirSync(pki, { recursive: true });
  const pidFile = join(dir, 'pids');
  const procs: ManagedProcess[] = [];
  const writePids = (): void => writePidFile(pidFile, procs.map((p) => p.pid));
  let watchdog: ChildProcess | undefined;

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      // The proxy first, then the shards (the root last), then the cache.
      for (const p of [...procs].reverse()) await p.stop(keep ? 10_000 : 0).catch(() => {});
      watchdog?.kill('SIGKILL');
      releaseDir(dir, keep, log, 'kcp (sharded)');
    })());

  try {
    watchdog = startWatchdog(pidFile, keep ? undefined : dir);
    if (!keep) removeOnExit(dir);

    // Identities: the same static tokens on every shard and on the proxy.
    const tokens = SPECS.map((spec) => ({ spec, token: randomBytes(24).toString('hex') }));
    const tokenFile = join(dir, 'tokens.csv');
    writeFileSync(tokenFile, tokens.map(({ spec, token }) => `${token},${spec.username},${spec.username},"${spec.groups.join(',')}"`).join('\n') + '\n', { mode: 0o600 });
    const adminToken = tokens[0]!.token;

    // Certificates.
    const servingCa = makeCa(pki, 'serving-ca', 'kcp-serving-ca');
    const clientCa = makeCa(pki, 'client-ca', 'kcp-client-ca');
    const requestHeaderCa = makeCa(pki, 'requestheader-ca', 'kcp-front-proxy-requestheader-ca');
    const saKey = join(pki, 'service-account.key');
    const saPub = join(pki, 'service-account.pub');
    openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', saKey]);
    openssl(['pkey', '-in', saKey, '-pubout', '-out', saPub]);
    const proxyHeader = makeLeaf(pki, requestHeaderCa, 'requestheader', { cn: 'kcp-front-proxy' });
    const shardAdmin = makeLeaf(pki, clientCa, 'shard-admin', { cn: 'shard-admin', orgs: ['system:masters'] });
    const lcAdmin = makeLeaf(pki, clientCa, 'logical-cluster-admin', { cn: 'logical-cluster-admin', orgs: ['system:kcp:logical-cluster-admin'] });
    const extLcAdmin = makeLeaf(pki, clientCa, 'external-logical-cluster-admin', { cn: 'external-logical-cluster-admin', orgs: ['system:kcp:external-logical-cluster-admin'] });

    const [proxyPort, cachePort, cacheEtcd, cachePeer, ...shardPorts] = (await freePorts(4 + 3 * count)) as number[];
    const proxyUrl = `https://127.0.0.1:${proxyPort}`;
    const shardUrl = (i: number): string => `https://127.0.0.1:${shardPorts[3 * i]}`;
    const servingCaPem = readFileSync(servingCa.cert, 'utf8');
    const kubeconfigFile = (path: string, server: string | undefined, user: Record<string, string>): string => {
      writeFileSync(
        path,
        toYaml({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [{ name: 'base', cluster: { ...(server ? { server } : {}), 'certificate-authority': servingCa.cert } }],
          users: [{ name: 'user', user }],
          contexts: [{ name: 'base', context: { cluster: 'base', user: 'user' } }],
          'current-context': 'base',
        }),
        { mode: 0o600 },
      );
      return path;
    };
    const lcAdminKc = kubeconfigFile(join(pki, 'logical-cluster-admin.kubeconfig'), shardUrl(0), { 'client-certificate': lcAdmin.cert, 'client-key': lcAdmin.key });
    const extLcAdminKc = kubeconfigFile(join(pki, 'external-logical-cluster-admin.kubeconfig'), proxyUrl, { 'client-certificate': extLcAdmin.cert, 'client-key': extLcAdmin.key });

    // The cache server (its own self-signed certificate; no authentication).
    const cacheDir = join(dir, 'cache');
    const cache = new ManagedProcess(
      'kcp cache-server',
      bin('cache-server'),
      [`--root-directory=${cacheDir}`, '--bind-address=127.0.0.1', `--embedded-etcd-client-port=${cacheEtcd}`, `--embedded-etcd-peer-port=${cachePeer}`, `--secure-port=${cachePort}`],
      join(dir, 'cache-server.log'),
      writePids,
    );
    procs.push(cache);
    cache.start();
    const cacheKc = join(pki, 'cache.kubeconfig');
    await waitUntilReady('the kcp cache server answers /readyz', readyTimeoutMs, [cache], async () => {
      const crt = join(cacheDir, 'apiserver.crt');
      if (!existsSync(crt)) return 'no serving certificate yet';
      if (!existsSync(cacheKc)) {
        writeFileSync(cacheKc, toYaml({
          apiVersion: 'v1', kind: 'Config',
          clusters: [{ name: 'cache', cluster: { server: `https://localhost:${cachePort}`, 'certificate-authority-data': Buffer.from(readFileSync(crt)).toString('base64') } }],
          users: [{ name: 'cache', user: {} }],
          contexts: [{ name: 'cache', context: { cluster: 'cache', user: 'cache' } }],
          'current-context': 'cache',
        }));
      }
      const r = await insecureReadyz(`https://127.0.0.1:${cachePort}`);
      return r === true ? true : r;
    });

    // The shards.
    const names = Array.from({ length: count }, (_, i) => (i === 0 ? 'root' : `shard-${i}`));
    const shards: KcpShardProcess[] = [];
    const auditLogPaths: string[] = [];
    const auditPolicy = join(pki, 'audit-policy.yaml');
    if (opts.audit) writeFileSync(auditPolicy, 'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: ["RequestReceived"]\nrules:\n  - level: Metadata\n');
    for (let i = 0; i < count; i++) {
      const name = names[i]!;
      const shardDir = join(dir, name);
      mkdirSync(shardDir, { recursive: true });
      const serving = makeLeaf(pki, servingCa, `${name}-serving`, { cn: name, hosts: true });
      const client = makeLeaf(pki, clientCa, `${name}-client`, { cn: `kcp-shard-${i}`, orgs: ['system:masters'] });
      const [port, etcd, peer] = [shardPorts[3 * i]!, shardPorts[3 * i + 1]!, shardPorts[3 * i + 2]!];
      const args = [
        'start',
        `--root-directory=${shardDir}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${port}`,
        `--embedded-etcd-client-port=${etcd}`,
        `--embedded-etcd-peer-port=${peer}`,
        `--token-auth-file=${tokenFile}`,
        `--client-ca-file=${clientCa.cert}`,
        `--requestheader-client-ca-file=${requestHeaderCa.cert}`,
        '--requestheader-username-headers=X-Remote-User',
        '--requestheader-group-headers=X-Remote-Group',
        '--requestheader-extra-headers-prefix=X-Remote-Extra-',
        `--service-account-key-file=${saPub}`,
        `--service-account-private-key-file=${saKey}`,
        `--service-account-signing-key-file=${saKey}`,
        '--service-account-lookup=false',
        `--shard-external-url=${proxyUrl}`,
        `--tls-cert-file=${serving.cert}`,
        `--tls-private-key-file=${serving.key}`,
        `--logical-cluster-admin-kubeconfig=${lcAdminKc}`,
        `--external-logical-cluster-admin-kubeconfig=${extLcAdminKc}`,
        `--shard-client-cert-file=${client.cert}`,
        `--shard-client-key-file=${client.key}`,
        `--shard-virtual-workspace-ca-file=${servingCa.cert}`,
        `--cache-kubeconfig=${cacheKc}`,
        ...(i > 0 ? [`--shard-name=${name}`, `--root-shard-kubeconfig-file=${join(dir, 'root', 'admin.kubeconfig')}`] : []),
      ];
      if (opts.audit) {
        const path = join(dir, `${name}-audit.log`);
        auditLogPaths.push(path);
        args.push(`--audit-policy-file=${auditPolicy}`, `--audit-log-path=${path}`, '--audit-log-format=json', '--audit-log-mode=blocking');
      }
      const p = new ManagedProcess(`kcp shard ${name}`, bin('kcp'), args, join(dir, `${name}.log`), writePids);
      procs.push(p);
      const url = shardUrl(i);
      const shard: KcpShardProcess = {
        name,
        url,
        process: p,
        stop: (graceMs = 10_000) => p.stop(graceMs),
        start: async () => {
          p.start();
          await waitUntilReady(`kcp shard ${name} answers /readyz`, readyTimeoutMs, [p], async () => readyz(url, adminToken));
        },
      };
      shards.push(shard);
      p.start();
      // A further shard registers with the root shard through the kubeconfig the root writes.
      if (i === 0) await waitUntilReady('the root shard writes its admin.kubeconfig', readyTimeoutMs, [p], async () => existsSync(join(shardDir, 'admin.kubeconfig')) || 'not yet');
    }
    for (const s of shards) await waitUntilReady(`kcp shard ${s.name} answers /readyz`, readyTimeoutMs, [s.process], async () => readyz(s.url, adminToken));

    // The front-proxy: the root shard's kubeconfig (context shard-base), every shard reached as system:masters.
    const proxyDir = join(dir, 'front-proxy');
    mkdirSync(proxyDir, { recursive: true });
    const rootKc = join(pki, 'root.kubeconfig');
    writeFileSync(rootKc, toYaml(minify(parseYaml(readFileSync(join(dir, 'root', 'admin.kubeconfig'), 'utf8')) as KubeconfigYaml, 'shard-base')), { mode: 0o600 });
    const shardsKc = kubeconfigFile(join(pki, 'shards.kubeconfig'), undefined, { 'client-certificate': shardAdmin.cert, 'client-key': shardAdmin.key });
    const mapping = join(proxyDir, 'mapping.yaml');
    const route = (path: string) => ({ path, backend: shardUrl(0).replace('127.0.0.1', 'localhost'), backend_server_ca: servingCa.cert, proxy_client_cert: proxyHeader.cert, proxy_client_key: proxyHeader.key });
    writeFileSync(mapping, toYaml([route('/services/'), route('/clusters/')]));
    const proxyServing = makeLeaf(pki, servingCa, 'front-proxy-serving', { cn: 'kcp-front-proxy', hosts: true });
    const proxy = new ManagedProcess(
      'kcp-front-proxy',
      bin('kcp-front-proxy'),
      [
        '--bind-address=127.0.0.1',
        `--secure-port=${proxyPort}`,
        `--mapping-file=${mapping}`,
        `--root-directory=${proxyDir}`,
        `--root-kubeconfig=${rootKc}`,
        `--shards-kubeconfig=${shardsKc}`,
        `--client-ca-file=${clientCa.cert}`,
        `--token-auth-file=${tokenFile}`,
        `--tls-cert-file=${proxyServing.cert}`,
        `--tls-private-key-file=${proxyServing.key}`,
      ],
      join(dir, 'front-proxy.log'),
      writePids,
    );
    procs.push(proxy);
    proxy.start();
    await waitUntilReady('the kcp front-proxy answers /readyz', readyTimeoutMs, [proxy], async () => readyz(proxyUrl, adminToken));

    const kcp: ShardedKcp = {
      url: proxyUrl,
      dir,
      rootDir: join(dir, 'root'),
      caPem: servingCaPem,
      logPath: join(dir, 'front-proxy.log'),
      version: assets.kcpVersion,
      identities: {} as KcpIdentities,
      process: proxy,
      startupMs: 0,
      workspaceUrl: (path) => `${proxyUrl}/clusters/${path}`,
      stopKcp: async () => {
        for (const p of [...procs].reverse()) await p.stop(10_000);
      },
      startKcp: async () => {
        for (const p of procs) if (!p.running) p.start();
        for (const s of shards) await waitUntilReady(`kcp shard ${s.name} answers /readyz`, readyTimeoutMs, [s.process], async () => readyz(s.url, adminToken));
        await waitUntilReady('the kcp front-proxy answers /readyz', readyTimeoutMs, [proxy], async () => readyz(proxyUrl, adminToken));
      },
      stop,
      frontProxy: proxy,
      cacheServer: cache,
      shards,
      shardNames: names,
      auditLogPaths,
    };
    for (const { spec, token } of tokens) (kcp.identities as unknown as Record<string, KcpIdentity>)[spec.name] = makeIdentity(kcp, spec, token);

    // Each Shard object carries its name as a label, for placing workspaces.
    const admin = kcp.identities.admin.kubeConfig('root').makeApiClient(CustomObjectsApi);
    for (const name of names) {
      await waitUntilReady(`Shard ${name} registered in root`, readyTimeoutMs, [proxy, ...shards.map((s) => s.process)], async () => {
        await admin.patchClusterCustomObject(
          { group: 'core.kcp.io', version: 'v1alpha1', plural: 'shards', name, body: { metadata: { labels: { [SHARD_LABEL]: name } } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
        return true;
      });
    }
    kcp.startupMs = Date.now() - started;
    log(`kcp (sharded): ${assets.kcpVersion}, ${count} shards, ready after ${kcp.startupMs} ms; front-proxy ${proxyUrl} (dir ${dir})`);
    return kcp;
  } catch (err) {
    await stop().catch(() => {});
    if (err instanceof Error && !keep) err.message += `\n(${dir} was removed; set ENVTEST_KEEP=1 or pass dir to keep its logs)`;
    throw err;
  }
}

/**
 * Which shard holds a workspace, from what kcp recorded when it scheduled it:
 * the Workspace's `internal.tenancy.kcp.io/shard` annotation, the first 8
 * base-36 digits of the SHA-224 of the shard's name.
 */
export async function shardOfWorkspace(kcp: ShardedKcp, path: string): Promise<string | undefined> {
  const i = path.lastIndexOf(':');
  const api = kcp.identities.admin.kubeConfig(path.slice(0, i)).makeApiClient(CustomObjectsApi);
  const ws = (await api.getClusterCustomObject({ group: 'tenancy.kcp.io', version: 'v1alpha1', plural: 'workspaces', name: path.slice(i + 1) })) as { metadata?: { annotations?: Record<string, string> } };
  const hash = ws.metadata?.annotations?.['internal.tenancy.kcp.io/shard'];
  return kcp.shardNames.find((n) => shardNameHash(n) === hash);
}

export function shardNameHash(name: string): string {
  return BigInt(`0x${createHash('sha224').update(name).digest('hex')}`).toString(36).slice(0, 8);
}

async function readyz(url: string, token: string): Promise<true | string> {
  const r = await httpsGet(`${url}/readyz`, token).catch((e: Error) => ({ status: 0, body: e.message }));
  if (r.status === 200) return true;
  return r.status === 0 ? r.body : `HTTP ${r.status}: ${summarizeReadyz(r.body)}`;
}

async function insecureReadyz(url: string): Promise<true | string> {
  return readyz(url, '');
}

interface KubeconfigYaml {
  clusters?: Array<{ name: string }>;
  users?: Array<{ name: string }>;
  contexts?: Array<{ name: string; context: { cluster: string; user: string } }>;
  'current-context'?: string;
}

/** One context of a kubeconfig, with only its cluster and user. */
function minify(kc: KubeconfigYaml, context: string): KubeconfigYaml {
  const ctx = kc.contexts?.find((c) => c.name === context);
  if (!ctx) throw new Error(`the root shard's admin.kubeconfig has no context ${context}`);
  return {
    ...kc,
    clusters: (kc.clusters ?? []).filter((c) => c.name === ctx.context.cluster),
    users: (kc.users ?? []).filter((u) => u.name === ctx.context.user),
    contexts: [ctx],
    'current-context': context,
  };
}
