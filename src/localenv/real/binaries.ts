/**
 * Locates (and on first use builds) the binaries of the test control plane by
 * running hack/envtest/install.sh, which prints one JSON line describing them;
 * and kcp's, with hack/kcp/install.sh, only for what needs kcp.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { repoRoot } from '../../util/repo.js';
import type { LogFn } from '../progress-log.js';

export interface EnvtestAssets {
  /** Directory holding kube-apiserver, etcd and kubectl. */
  binDir: string;
  /** Directory holding the Tekton CRD manifests (300-*.yaml). */
  tektonCrdDir: string;
  /** Directory holding Tekton's controller, resolvers and webhook binaries. */
  tektonBinDir: string;
  /** The config/ directory of the github.com/tektoncd/pipeline module (its own manifests). */
  tektonConfigDir: string;
  /** e.g. "v1.35.4" — what the apiserver reports as gitVersion. */
  kubernetesVersion: string;
  etcdVersion: string;
  tektonVersion: string;
}

export { repoRoot };

/** The install with Tekton's binaries, and the one without (tekton: false). */
const pending: { full?: Promise<EnvtestAssets> | undefined; kube?: Promise<EnvtestAssets> | undefined } = {};

export interface EnsureBinariesOptions {
  /**
   * Whether Tekton's binaries are needed (default: yes). Without them the
   * control plane is ready as soon as it is built, while Tekton may still be
   * building (hack/test.sh builds the two one after the other); Tekton's
   * manifests (its CRDs) are there either way.
   */
  tekton?: boolean;
}

/**
 * Runs hack/envtest/install.sh once per process (later calls share the
 * result) and returns the assets it reports. The script's progress messages
 * (stderr) go to `log`, or to process.stderr when no logger is given.
 */
export function ensureBinaries(log?: LogFn, opts: EnsureBinariesOptions = {}): Promise<EnvtestAssets> {
  const which = opts.tekton === false ? 'kube' : 'full';
  if (which === 'kube' && pending.full) return pending.full;
  let p = pending[which];
  if (p === undefined) {
    p = runInstallScript(join(repoRoot(), 'hack', 'envtest', 'install.sh'), log, parseAssets, which === 'kube' ? ['--no-tekton-binaries'] : []);
    pending[which] = p;
    // A failed attempt must not poison later calls (e.g. Go was missing and got installed).
    p.catch(() => {
      if (pending[which] === p) pending[which] = undefined;
    });
  }
  return p;
}

export interface KcpAssets {
  /** The kcp binary (hack/kcp/install.sh: KCP_ASSETS, the per-version cache, or built). */
  kcpBinary: string;
  /** The directory of kcp, kcp-front-proxy and cache-server (what a sharded kcp runs: kcp-sharded.ts). */
  kcpBinDir: string;
  /** e.g. "v0.28.1" (hack/kcp/version.env). */
  kcpVersion: string;
}

let pendingKcp: Promise<KcpAssets> | undefined;

/** Runs hack/kcp/install.sh once per process (later calls share the result); the first run may build kcp. */
export function ensureKcpBinary(log?: LogFn): Promise<KcpAssets> {
  if (pendingKcp === undefined) {
    pendingKcp = runInstallScript(join(repoRoot(), 'hack', 'kcp', 'install.sh'), log, (value) => {
      const rec = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
      const { kcpBinary, kcpBinDir, kcpVersion } = rec;
      if (typeof kcpBinary !== 'string' || typeof kcpBinDir !== 'string' || typeof kcpVersion !== 'string') throw new Error('fields kcpBinary, kcpBinDir, kcpVersion missing');
      return { kcpBinary, kcpBinDir, kcpVersion };
    });
    pendingKcp.catch(() => {
      pendingKcp = undefined;
    });
  }
  return pendingKcp;
}

/** A version pinned in hack/platform/versions.env: RESULTS_VERSION, CHAINS_VERSION or REGISTRY_VERSION. */
export function platformVersion(component: 'results' | 'chains' | 'registry'): string {
  const key = `${component.toUpperCase()}_VERSION`;
  const text = readFileSync(join(repoRoot(), 'hack', 'platform', 'versions.env'), 'utf8');
  const m = new RegExp(`^${key}=(\\S+)$`, 'm').exec(text);
  if (!m) throw new Error(`hack/platform/versions.env has no ${key}`);
  return m[1]!;
}

/** The platform services' binaries (hack/platform/install.sh), by name: results-api, results-watcher, chains-controller, registry. */
export type PlatformBinaries = Record<string, string>;
const pendingPlatform = new Map<string, Promise<PlatformBinaries>>();

/**
 * Runs hack/platform/install.sh for the named components (results, chains,
 * registry) once per process each; the first run of a component builds it
 * from its Go module (a minute or two) and caches it.
 */
export function ensurePlatformBinaries(component: 'results' | 'chains' | 'registry', log?: LogFn): Promise<PlatformBinaries> {
  let p = pendingPlatform.get(component);
  if (p === undefined) {
    p = runInstallScript(
      join(repoRoot(), 'hack', 'platform', 'install.sh'),
      log,
      (value) => {
        const rec = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
        const out: PlatformBinaries = {};
        for (const [k, v] of Object.entries(rec)) if (typeof v === 'string') out[k] = v;
        if (Object.keys(out).length === 0) throw new Error('no binaries named');
        return out;
      },
      [component],
    );
    pendingPlatform.set(component, p);
    p.catch(() => pendingPlatform.delete(component));
  }
  return p;
}

/** Runs an install script (with `args`); its stderr is progress (to `log`), the last JSON line of its stdout is parsed. */
export function runInstallScript<T>(script: string, log: LogFn | undefined, parse: (value: unknown) => T, args: readonly string[] = []): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    const stderrTail: string[] = [];
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      stdout += chunk;
    });
    createInterface({ input: child.stderr }).on('line', (line) => {
      stderrTail.push(line);
      if (stderrTail.length > 40) stderrTail.shift();
      if (log) log(line);
      else process.stderr.write(line + '\n');
    });
    child.on('error', (err) => reject(new Error(`cannot run ${script}: ${err.message}`)));
    child.on('close', (code, signal) => {
      if (code !== 0) {
        reject(
          new Error(
            `${script} failed (${signal ?? `exit code ${String(code)}`}); last output:\n${stderrTail.join('\n')}`,
          ),
        );
        return;
      }
      const line = stdout
        .split('\n')
        .map((l) => l.trim())
        .reverse()
        .find((l) => l.startsWith('{'));
      if (line === undefined) {
        reject(new Error(`${script} printed no JSON line; stdout was: ${JSON.stringify(stdout)}`));
        return;
      }
      try {
        resolve(parse(JSON.parse(line) as unknown));
      } catch (err) {
        reject(new Error(`${script} printed unexpected output ${line}: ${(err as Error).message}`));
      }
    });
  });
}

function parseAssets(value: unknown): EnvtestAssets {
  if (typeof value !== 'object' || value === null) throw new Error('not an object');
  const rec = value as Record<string, unknown>;
  const str = (key: keyof EnvtestAssets): string => {
    const v = rec[key];
    if (typeof v !== 'string' || v === '') throw new Error(`field ${key} missing`);
    return v;
  };
  return {
    binDir: str('binDir'),
    tektonCrdDir: str('tektonCrdDir'),
    tektonBinDir: str('tektonBinDir'),
    tektonConfigDir: str('tektonConfigDir'),
    kubernetesVersion: str('kubernetesVersion'),
    etcdVersion: str('etcdVersion'),
    tektonVersion: str('tektonVersion'),
  };
}

/** What hack/node/install.sh makes for the real node (real-node.ts). */
export interface NodeAssets {
  /** kubelet, kube-scheduler, kube-controller-manager (the harness's Kubernetes version). */
  nodeBinDir: string;
  kubernetesVersion: string;
  tektonVersion: string;
  /** The OCI archives, `<name>.oci.tar`. */
  imageDir: string;
  /** Image references, as imported into the node's containerd. */
  images: { pause: string; entrypoint: string; nop: string; workingdirinit: string; shell: string };
}

let pendingNode: Promise<NodeAssets> | undefined;

/** Runs hack/node/install.sh once per process (later calls share the result); the first run builds (minutes). */
export function ensureNodeAssets(log?: LogFn): Promise<NodeAssets> {
  if (pendingNode === undefined) {
    pendingNode = runInstallScript(join(repoRoot(), 'hack', 'node', 'install.sh'), log, (value) => {
      const rec = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
      const images = (rec['images'] ?? {}) as Record<string, unknown>;
      const names = ['pause', 'entrypoint', 'nop', 'workingdirinit', 'shell'] as const;
      for (const k of ['nodeBinDir', 'kubernetesVersion', 'tektonVersion', 'imageDir']) if (typeof rec[k] !== 'string') throw new Error(`field ${k} missing`);
      for (const n of names) if (typeof images[n] !== 'string') throw new Error(`image ${n} missing`);
      return { ...(rec as unknown as Omit<NodeAssets, 'images'>), images: images as NodeAssets['images'] };
    });
    pendingNode.catch(() => {
      pendingNode = undefined;
    });
  }
  return pendingNode;
}
