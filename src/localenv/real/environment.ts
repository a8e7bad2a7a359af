/**
 * A throwaway pair of real Kubernetes control planes for tests, demos and
 * benchmarks: one etcd and two kube-apiservers ("remote" and "internal")
 * that share it under different key prefixes, so the clusters are fully
 * isolated from each other while costing a single etcd.
 *
 * By default there is no controller-manager, scheduler or kubelet: objects
 * are stored and served (CRDs, RBAC, admission, watches all work), but
 * nothing acts on them — e.g. no garbage collection, no default
 * ServiceAccounts, no Pods run. With `node`, the internal cluster gets a real
 * node (real-node.ts): all three, with containerd, and pods run.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { ensureBinaries, type EnvtestAssets } from './binaries.js';
import type { LogFn } from '../progress-log.js';
import { freePorts, ManagedProcess, releaseDir, removeOnExit, startWatchdog, writePidFile } from './processes.js';
import { startResults, type ResultsOptions, type ResultsPlatform } from './tekton-results.js';
import { startTekton, type TektonHost, type TektonOptions, type TektonPlatform } from './tekton.js';
import { startChains, type ChainsOptions, type ChainsPlatform } from './tekton-chains.js';
import { auditPolicy, suiteAuditLogPath } from './audit-policy.js';
import { ApiserverPlane, waitForEtcd, type ControlPlane, type PlaneName } from './control-plane.js';
import type { Identity } from './identities.js';
import { startRegistry, type Registry } from './registry.js';
import { prepareNode, startNode, type PreparedNode, type RealNode } from './real-node.js';

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
  /** Real Tekton Results (API, watcher, PostgreSQL) on the internal cluster, when started with `results`. */
  results?: ResultsPlatform;
  /** A real OCI registry on loopback (plain HTTP), when started with `registry`. See registry.ts. */
  registry?: Registry;
  /** Real Tekton Chains next to it, when started with `chains`. */
  chains?: ChainsPlatform;
  /** The real node of the internal cluster (kubelet, containerd, scheduler, controller manager), when started with `node`. */
  node?: RealNode;
  /** Stops every process and, unless the directory was given or ENVTEST_KEEP=1, deletes it. Idempotent. */
  stop(): Promise<void>;
}

export interface StartEnvironmentOptions {
  /** Use (and keep) this directory instead of a fresh temporary one. Existing state in it is reused. */
  dir?: string;
  /** How many remote clusters (default 1): each its own kube-apiserver with its own etcd prefix and the remote identities. */
  remotes?: number;
  /**
   * Write a Metadata-level audit log per apiserver (see ControlPlane.auditLogPath).
   * Independently, with INTERNAL_SERVICES_AUDIT_DIR set the internal apiserver
   * logs Tekton's writes into that directory, for the suite's closed-world check
   * (audit-policy.ts).
   */
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
  /**
   * Also run real Tekton Results (API server, watcher, PostgreSQL) on the
   * internal cluster; implies `tekton`, with the pods' logs served.
   */
  results?: boolean | ResultsOptions;
  /** Also run a real OCI registry (distribution) on 127.0.0.1, e.g. for Tekton's bundles resolver. */
  registry?: boolean;
  /** Also run real Tekton Chains, signing PipelineRuns (needs `tekton`). See tekton-chains.ts. */
  chains?: boolean | ChainsOptions;
  /**
   * Attach a real node to the internal cluster (real-node.ts): Tekton's pods run
   * for real, with its own helper images, instead of on the simulated
   * kubelet. Needs root and Debian's containerd, runc and CNI plugins
   * (realNodeUnavailable() says what is missing); one per machine.
   */
  node?: boolean;
  /** More kube-apiserver flags per cluster, e.g. `{ 'remote-2': ['--feature-gates=WatchList=false'] }` for a server without streamed lists. */
  apiserverFlags?: Partial<Record<PlaneName, readonly string[]>>;
}

export async function startEnvironment(opts: StartEnvironmentOptions = {}): Promise<Environment> {
  const started = Date.now();
  const log: LogFn = opts.log ?? (() => {});
  const assets = await ensureBinaries(opts.log, { tekton: Boolean(opts.tekton || opts.results) });
  const keep = opts.dir !== undefined || process.env['ENVTEST_KEEP'] === '1';
  const dir = opts.dir !== undefined ? resolve(opts.dir) : mkdtempSync(join(tmpdir(), 'internal-services-envtest-'));
  mkdirSync(dir, { recursive: true });
  const readyTimeoutMs = opts.readyTimeoutMs ?? 60_000;

  const processes: ManagedProcess[] = [];
  /** Processes started on top of the control planes (Tekton, git daemon, registry), for the pid file; Tekton stops its own. */
  const adopted: ManagedProcess[] = [];
  let tekton: TektonPlatform | undefined;
  let results: ResultsPlatform | undefined;
  let registry: Registry | undefined;
  let chains: ChainsPlatform | undefined;
  let prepared: PreparedNode | undefined;
  let node: RealNode | undefined;
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
    await results?.stop().catch(() => {});
    await chains?.stop().catch(() => {});
    await tekton?.stop().catch(() => {});
    await registry?.stop().catch(() => {});
    // The node before the apiservers (its pods are deleted through them), etcd last.
    await node?.stop().catch(() => {});
    prepared?.release();
    const [etcdProc, ...apiservers] = processes;
    await Promise.all(apiservers.map((p) => p.stop(graceMs)));
    await etcdProc?.stop(graceMs);
    watchdog?.kill('SIGKILL');
    releaseDir(dir, keep, log, 'envtest');
  };

  try {
    const extraRemotes = Math.max(0, (opts.remotes ?? 1) - 1);
    const ports = await freePorts(4 + extraRemotes);
    const [etcdClientPort, etcdPeerPort, remotePort, internalPort] = ports as [number, number, number, number];
    watchdog = startWatchdog(pidFile, keep ? undefined : dir);
    if (!keep) removeOnExit(dir);

    // The machine's node first: it may wait for another run's, and the apiserver needs its CA.
    if (opts.node) prepared = await prepareNode(dir, log, opts.log);

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
    const suiteLog = suiteAuditLogPath();
    // The remotes' policy, and the internal plane's (which may also record
    // Tekton's writes for the closed-world check of the suite).
    const policyFile = (plane: 'remote' | 'internal'): string | undefined => {
      const text = auditPolicy({ metadata: Boolean(opts.audit), tektonWrites: plane === 'internal' && suiteLog !== undefined });
      if (text === undefined) return undefined;
      const file = join(dir, `audit-policy-${plane}.yaml`);
      writeFileSync(file, text);
      return file;
    };
    const policies = { remote: policyFile('remote'), internal: policyFile('internal') };

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
        auditPolicy: name === 'internal' ? policies.internal : policies.remote,
        auditLogPath: name === 'internal' ? suiteLog : undefined,
        readyTimeoutMs,
        onChange: refreshPids,
        extraArgs: opts.apiserverFlags?.[name],
        nodeFlags: name === 'internal' ? prepared?.apiserverFlags : undefined,
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
    if (prepared) {
      const internal = planes[1];
      node = await startNode({
        dir,
        admin: internal.identities.admin.kubeConfig(),
        apiserverUrl: internal.url,
        apiserverCaPem: internal.caPem,
        saKey,
        adopt: (p) => {
          adopted.push(p);
          refreshPids();
        },
        onChange: refreshPids,
        log,
        readyTimeoutMs,
      }, prepared);
    }
    if (opts.chains && !opts.tekton) throw new Error('chains needs tekton: start the environment with { tekton: true, chains: … }');
    if (opts.tekton || opts.results) {
      const internal = planes[1];
      const host: TektonHost = {
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
      };
      const onNode = node ? { kubelet: false, images: node.tektonImages } : {};
      tekton = await startTekton(host, { ...(typeof opts.tekton === 'object' ? opts.tekton : {}), ...(opts.results && !node ? { logs: true } : {}), ...onNode });
      if (opts.chains) chains = await startChains(host, opts.chains === true ? {} : opts.chains);
      if (opts.results) {
        results = await startResults({
          ...host,
          apiserverUrl: internal.url,
          apiserverCaPem: internal.caPem,
          apiIdentity: internal.identities.resultsApi!,
          watcherIdentity: internal.identities.resultsWatcher!,
        }, opts.results === true ? {} : opts.results);
      }
    }
    if (opts.registry) {
      // opts.log as given: without one, a first build's progress goes to stderr (as for the other binaries).
      registry = await startRegistry(join(dir, 'registry'), { onChange: refreshPids, ...(opts.log ? { log: opts.log } : {}) });
      adopted.push(registry.process);
      refreshPids();
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
      ...(results ? { results } : {}),
      ...(registry ? { registry } : {}),
      ...(chains ? { chains } : {}),
      ...(node ? { node } : {}),
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
