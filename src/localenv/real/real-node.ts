/**
 * A real node for the internal cluster: containerd, runc and the CNI plugins
 * from Debian; the kubelet, kube-scheduler and kube-controller-manager built
 * from the harness's Kubernetes module (hack/node/install.sh), so that
 * Tekton's TaskRun pods run for real: Tekton's own entrypoint, nop and
 * workingdirinit images, a pause image as the sandbox, a busybox shell image
 * for `script:` steps — nothing pulled, everything imported into containerd.
 *
 * In two steps around the internal apiserver's start: prepareNode() takes the
 * machine's one node (node-host.ts), makes the certificates and says the
 * apiserver's flags; startNode() starts the rest once the apiserver answers
 * and waits for the Node to be Ready. stop() deletes the pods, stops the
 * kubelet, containerd, the scheduler and the controller manager, then undoes
 * everything on the host (node-host.ts); the apiservers and etcd stop after.
 */
import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { ensureNodeAssets, type NodeAssets } from './binaries.js';
import type { LogFn } from '../progress-log.js';
import { freePortsBelow, ManagedProcess, waitUntilReady } from './processes.js';
import { acquireHost, cleanupHost, isDir, writeState, type NodeHostState } from './node-host.js';
import {
  apiserverNodeFlags, containerdPaths, makeNodePki, NODE_BRIDGE, NODE_IP, NODE_NAME, NODE_SUBNET,
  writeCniConfig, writeContainerdConfig, writeKubeconfig, writeKubeletConfig, type NodePki,
} from './node-config.js';

const run = promisify(execFile);
const CNI_BIN_DIR = '/usr/lib/cni';
/** The controllers pods need: tokens, kube-root-ca.crt, garbage collection, namespaces, node health. */
const KCM_CONTROLLERS = ['serviceaccount-token', 'serviceaccount', 'root-ca-certificate-publisher', 'garbage-collector', 'namespace', 'node-lifecycle', 'ttl', 'pod-garbage-collector'].map((c) => `${c}-controller`);

/**
 * Why a real node cannot start on this machine (not root, Debian parts
 * missing), or undefined when it can.
 */
export function realNodeUnavailable(): string | undefined {
  if (process.platform !== 'linux') return `a real node needs Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'a real node needs root (containerd, runc, mounts, cgroups, a bridge)';
  const missing: string[] = [];
  const exe = (p: string): boolean => {
    try {
      accessSync(p, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  const onPath = (name: string): boolean => (process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin').split(':').concat(['/usr/sbin', '/sbin']).some((d) => exe(join(d, name)));
  for (const [name, pkg] of [['containerd', 'containerd'], ['ctr', 'containerd'], ['runc', 'runc'], ['ip', 'iproute2'], ['umount', 'mount'], ['openssl', 'openssl'], ['buildah', 'buildah']] as const) {
    if (!onPath(name)) missing.push(`${name} (Debian package ${pkg})`);
  }
  for (const plugin of ['bridge', 'host-local', 'loopback']) if (!exe(join(CNI_BIN_DIR, plugin))) missing.push(`${CNI_BIN_DIR}/${plugin} (containernetworking-plugins)`);
  if (!exe(process.env['BUSYBOX_STATIC'] ?? '/bin/busybox')) missing.push('/bin/busybox (busybox-static)');
  if (!isDir('/sys/fs/cgroup')) missing.push('/sys/fs/cgroup');
  return missing.length > 0 ? `a real node needs ${missing.join(', ')}` : undefined;
}

export interface PreparedNode {
  assets: NodeAssets;
  pki: NodePki;
  /** Flags for the internal kube-apiserver (see control-plane.ts). */
  apiserverFlags: string[];
  /** The node's scratch directory (containerd's root and state, the kubelet's root). */
  dir: string;
  state: NodeHostState;
  /** Undoes what was done so far, for when startNode is never reached. */
  release(): void;
}

/** Takes the machine's node (waiting for another run's), builds what is missing, makes the certificates in `envDir`. */
export async function prepareNode(envDir: string, log: LogFn, buildLog?: LogFn): Promise<PreparedNode> {
  const why = realNodeUnavailable();
  if (why) throw new Error(why);
  const assets = await ensureNodeAssets(buildLog);
  const dir = mkdtempSync(join(tmpdir(), 'internal-services-node-'));
  const state = await acquireHost(dir, NODE_BRIDGE, log);
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    cleanupHost(state, log);
  };
  // A process ending without stop() (an uncaught error) still leaves the host clean;
  // a killed one leaves it to the next start (node-host.ts).
  process.once('exit', release);
  try {
    const pki = makeNodePki(join(envDir, 'node-pki'));
    return { assets, pki, apiserverFlags: apiserverNodeFlags(pki), dir, state, release };
  } catch (e) {
    release();
    throw e;
  }
}

export interface RealNode {
  name: string;
  ip: string;
  dir: string;
  assets: NodeAssets;
  /** The images Tekton's controller is given (-entrypoint-image …, -shell-image). */
  tektonImages: { entrypoint: string; nop: string; workingdirinit: string; shell: string };
  /** The image for `script:` steps: busybox, with sh and the usual tools in /bin. */
  shellImage: string;
  kubelet: ManagedProcess;
  containerd: ManagedProcess;
  scheduler: ManagedProcess;
  controllerManager: ManagedProcess;
  /** Milliseconds from startNode until the Node was Ready. */
  startupMs: number;
  /** Runs `ctr` against the node's containerd (namespace k8s.io); resolves with its stdout. */
  ctr(args: string[]): Promise<string>;
  /** The ids of the containers containerd runs (all of them, sandboxes included). */
  runningContainers(): Promise<string[]>;
  stop(): Promise<void>;
}

export interface NodeHost {
  /** The environment's directory: the processes' logs go there. */
  dir: string;
  admin: KubeConfig;
  apiserverUrl: string;
  apiserverCaPem: string;
  /** The service-account signing key (the controller manager's token controller). */
  saKey: string;
  adopt(p: ManagedProcess): void;
  onChange(): void;
  log: LogFn;
  readyTimeoutMs?: number;
}

export async function startNode(host: NodeHost, prep: PreparedNode): Promise<RealNode> {
  const started = Date.now();
  const { log } = host;
  const { dir, pki, assets, state } = prep;
  const timeoutMs = host.readyTimeoutMs ?? 120_000;
  const processes: ManagedProcess[] = [];
  const recordPids = (): void => {
    state.pids = processes.map((p) => p.pid).filter((p): p is number => p !== undefined);
    writeState(state);
    host.onChange();
  };
  const spawnPart = (name: string, cmd: string, args: string[]): ManagedProcess => {
    const p = new ManagedProcess(name, cmd, args, join(host.dir, `node-${name}.log`), recordPids);
    processes.push(p);
    host.adopt(p);
    p.start();
    return p;
  };
  const paths = containerdPaths(dir);
  const ctr = async (args: string[]): Promise<string> => (await run('ctr', ['--address', paths.socket, '--namespace', 'k8s.io', ...args], { maxBuffer: 16 << 20 })).stdout;
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => (stopping ??= (async () => {
    // Bounded: an apiserver that no longer answers must not hold the teardown.
    const bound = new Promise<void>((r) => setTimeout(r, 25_000).unref());
    await Promise.race([deletePods(host.admin, log).catch((e: unknown) => log(`node: deleting the pods: ${String(e)}`)), bound]);
    const [containerd, scheduler, controllerManager, kubelet] = processes;
    await kubelet?.stop(5000);
    await containerd?.stop(5000);
    await scheduler?.stop(2000);
    await controllerManager?.stop(2000);
    prep.release();
  })());

  try {
    // --- the network: a bridge whose address is the node's IP ---
    await run('ip', ['link', 'add', 'name', NODE_BRIDGE, 'type', 'bridge']);
    await run('ip', ['addr', 'add', `${NODE_IP}/${NODE_SUBNET.split('/')[1]}`, 'dev', NODE_BRIDGE]);
    await run('ip', ['link', 'set', NODE_BRIDGE, 'up']);

    // --- containerd, and the images it needs ---
    const config = writeContainerdConfig(dir, paths, assets.images.pause, CNI_BIN_DIR);
    writeCniConfig(dir, paths);
    const containerd = spawnPart('containerd', 'containerd', ['--config', config, '--log-level', 'warn']);
    await waitUntilReady('containerd answering on its socket', timeoutMs, [containerd], async () => {
      if (!existsSync(paths.socket)) return 'no socket yet';
      await ctr(['version']);
      return true;
    });
    for (const name of ['pause', 'entrypoint', 'nop', 'workingdirinit', 'shell'] as const) {
      await ctr(['images', 'import', join(assets.imageDir, `${name}.oci.tar`)]);
    }
    // Each also by digest (repo@sha256:…), as a pulled image is: the kubelet then reports that as the
    // container's imageID (Tekton copies it into the TaskRun; Chains refuses a bare sha256: id).
    const listed = new Map((await ctr(['images', 'ls'])).split('\n').slice(1).map((l) => l.trim().split(/\s+/)).filter((f) => f.length > 2).map((f) => [f[0]!, f[2]!]));
    const absent = Object.values(assets.images).filter((ref) => !listed.has(ref));
    if (absent.length > 0) throw new Error(`images not in containerd after import: ${absent.join(', ')} (it has: ${[...listed.keys()].join(', ')})`);
    for (const ref of Object.values(assets.images)) {
      const byDigest = `${ref.slice(0, ref.lastIndexOf(':'))}@${listed.get(ref)!}`;
      if (!listed.has(byDigest)) await ctr(['images', 'tag', ref, byDigest]);
    }

    // --- scheduler and controller manager ---
    const caFile = join(pki.dir, 'apiserver-ca.crt');
    writeFileSync(caFile, host.apiserverCaPem);
    const kc = (file: string, id: typeof pki.kubelet, user: string): string => writeKubeconfig(join(pki.dir, file), host.apiserverUrl, caFile, id, user);
    const scheduler = spawnPart('kube-scheduler', join(assets.nodeBinDir, 'kube-scheduler'), [
      `--kubeconfig=${kc('scheduler.kubeconfig', pki.scheduler, 'system:kube-scheduler')}`,
      '--leader-elect=false',
      '--secure-port=0',
      '--v=1',
    ]);
    const controllerManager = spawnPart('kube-controller-manager', join(assets.nodeBinDir, 'kube-controller-manager'), [
      `--kubeconfig=${kc('controller-manager.kubeconfig', pki.controllerManager, 'system:kube-controller-manager')}`,
      `--controllers=${KCM_CONTROLLERS.join(',')}`,
      `--service-account-private-key-file=${host.saKey}`,
      `--root-ca-file=${caFile}`,
      '--use-service-account-credentials',
      '--leader-elect=false',
      '--secure-port=0',
      '--v=1',
    ]);

    // --- the kubelet ---
    const [kubeletPort, healthzPort] = (await freePortsBelow(2)) as [number, number];
    const kubeletKubeconfig = kc('kubelet.kubeconfig', pki.kubelet, `system:node:${NODE_NAME}`);
    const files = writeKubeletConfig(dir, pki, paths, { kubelet: kubeletPort, healthz: healthzPort }, kubeletKubeconfig);
    const kubelet = spawnPart('kubelet', join(assets.nodeBinDir, 'kubelet'), [
      `--config=${files.config}`,
      `--kubeconfig=${files.kubeconfig}`,
      `--root-dir=${files.rootDir}`,
      `--hostname-override=${NODE_NAME}`,
      `--node-ip=${NODE_IP}`,
      '--v=1',
    ]);
    const core = host.admin.makeApiClient(CoreV1Api);
    await waitUntilReady(`Node ${NODE_NAME} Ready`, timeoutMs, [containerd, scheduler, controllerManager, kubelet], async () => {
      const node = await core.readNode({ name: NODE_NAME });
      const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
      return ready?.status === 'True' ? true : `Ready is ${ready?.status ?? 'absent'} (${ready?.message ?? ''})`;
    }, 250);
    // Pods need their ServiceAccount: the controller manager makes "default" in each namespace.
    await waitUntilReady('the controller manager making ServiceAccounts', timeoutMs, [controllerManager], async () => {
      await core.readNamespacedServiceAccount({ namespace: 'default', name: 'default' });
      return true;
    }, 250);
    const startupMs = Date.now() - started;
    log(`node: ${NODE_NAME} Ready after ${startupMs} ms (kubelet ${assets.kubernetesVersion}, containerd and runc from Debian, IP ${NODE_IP} on ${NODE_BRIDGE}; scratch ${dir})`);
    const { pause: _pause, ...tektonImages } = assets.images;
    return {
      name: NODE_NAME,
      ip: NODE_IP,
      dir,
      assets,
      tektonImages,
      shellImage: assets.images.shell,
      kubelet,
      containerd,
      scheduler,
      controllerManager,
      startupMs,
      ctr,
      runningContainers: async () => (await ctr(['tasks', 'ls', '-q'])).split('\n').filter((l) => l.trim() !== ''),
      stop,
    };
  } catch (e) {
    await stop().catch(() => {});
    throw e;
  }
}

/** Deletes every pod (a short grace period) and waits, briefly, until the kubelet has confirmed each. */
async function deletePods(admin: KubeConfig, log: LogFn): Promise<void> {
  const core = admin.makeApiClient(CoreV1Api);
  const pods = (await core.listPodForAllNamespaces()).items;
  await Promise.all(pods.map((p) => core.deleteNamespacedPod({ namespace: p.metadata!.namespace!, name: p.metadata!.name!, gracePeriodSeconds: 1 }).catch(() => undefined)));
  const deadline = Date.now() + 15_000;
  for (;;) {
    const left = (await core.listPodForAllNamespaces()).items.length;
    if (left === 0) return;
    if (Date.now() > deadline) {
      log(`node: ${left} pods not gone after 15 s; their containers are killed with the node`);
      return;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}
