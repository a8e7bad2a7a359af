/**
 * `--kcp --workspaces N`: the remote side of the benchmark is a real kcp
 * (src/localenv/real/kcp.ts) instead of a plain kube-apiserver. The provider
 * workspace publishes the request API; N tenant workspaces under root bind
 * it, each with the allowed namespace and a namespace that is not on the
 * allowList, and the requester may create requests in both. The controller
 * serves them all with `--kcp-kubeconfig` (the provider workspace, as its own
 * non-admin identity), through one wildcard watch of the export's virtual
 * workspace.
 *
 * The observer watches that virtual workspace's wildcard too, but as kcp's
 * admin (system:kcp:admin): a wildcard list of a bound resource on the shard
 * itself (`/clusters/*`) is forbidden even to the admin.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import {
  bindExport, createWorkspace, ensureNamespace, exportVirtualWorkspaceUrl, grantKcpRequester, installKcpProvider, startKcp, KCP_CONTROLLER_USERNAME, KCP_PROVIDER_PATH,
  type Kcp,
} from '../src/localenv/index.js';
import type { InternalRequest } from '../src/api/types.js';
import type { ResourceClient } from '../src/kube/client.js';
import { useKeepAlive } from './keepalive.js';
import { ProcTreeSampler } from './procstat.js';
import { requesterClient } from './workload.js';

/** The allowed namespace of every tenant workspace, and one the allowList does not name. */
export const KCP_NAMESPACE = 'bench';
export const KCP_DENIED_NAMESPACE = 'bench-outside';
/** Workspaces made at once while setting up. */
export const KCP_SETUP_BATCH = 10;

export interface KcpSetup {
  kcp: Kcp;
  /** The tenant workspaces' paths: root:bench-000 … */
  paths: string[];
  /** "<path>/<namespace>": the allowList's entries, and the targets requests are spread over. */
  allowed: string[];
  denied: string[];
  /** The controller's kubeconfig: the provider workspace, as KCP_CONTROLLER_USERNAME. */
  controllerKubeconfig: string;
  /** The export's virtual workspace wildcard (…/clusters/*), as kcp's admin: for the observer. */
  observerAdmin: KubeConfig;
  /** The requester's client of each workspace. */
  requesters: Map<string, ResourceClient<InternalRequest>>;
  /** kcp's process tree, sampled every second (RSS peaks per pass). */
  sampler: ProcTreeSampler;
  /** How long the workspaces took: create (Ready), bind (Bound), namespaces and grants; ms. */
  workspacesMs: { create: number; bind: number; namespacesAndGrants: number; total: number };
}

export function workspacePaths(n: number): string[] {
  const width = Math.max(3, String(n - 1).length);
  return Array.from({ length: n }, (_, i) => `root:bench-${String(i).padStart(width, '0')}`);
}

/** Runs f over items, `batch` at a time, logging progress after each batch. */
async function inBatches<T>(what: string, items: T[], f: (x: T) => Promise<void>, log: (m: string) => void): Promise<number> {
  const t0 = Date.now();
  for (let i = 0; i < items.length; i += KCP_SETUP_BATCH) {
    await Promise.all(items.slice(i, i + KCP_SETUP_BATCH).map(f));
    const done = Math.min(items.length, i + KCP_SETUP_BATCH);
    if (done === items.length || done % (KCP_SETUP_BATCH * 2) === 0) log(`kcp: ${what} ${done}/${items.length} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  }
  return Date.now() - t0;
}

export function startBenchKcp(log: (m: string) => void): Promise<Kcp> {
  return startKcp({ audit: true, log });
}

/** The provider workspace and N tenant workspaces, in parallel batches. */
export async function setUpKcpWorkspaces(kcp: Kcp, workspaces: number, withDenied: boolean, log: (m: string) => void): Promise<KcpSetup> {
  const t0 = Date.now();
  await installKcpProvider(kcp);
  log(`kcp: provider workspace ${KCP_PROVIDER_PATH} publishes the request API (${Date.now() - t0} ms)`);
  const paths = workspacePaths(workspaces);
  const create = await inBatches('workspaces created (Ready)', paths, async (p) => void (await createWorkspace(kcp, p, 180_000)), log);
  const bind = await inBatches('workspaces bound', paths, (p) => bindExport(kcp, p, { timeoutMs: 180_000 }), log);
  const namespaces = [KCP_NAMESPACE, ...(withDenied ? [KCP_DENIED_NAMESPACE] : [])];
  const grants = await inBatches(
    'namespaces and requester grants',
    paths,
    async (p) => {
      const admin = kcp.identities.admin.kubeConfig(p);
      for (const ns of namespaces) await ensureNamespace(admin, ns);
      await grantKcpRequester(kcp, p);
    },
    log,
  );
  const requesters = new Map<string, ResourceClient<InternalRequest>>();
  for (const p of paths) requesters.set(p, await requesterClient(kcp.identities.requester.kubeConfig(p)));
  const vw = await exportVirtualWorkspaceUrl(kcp);
  const sampler = new ProcTreeSampler(kcp.process.pid ?? -1, 1000, 10_000);
  sampler.start();
  const total = Date.now() - t0;
  log(`kcp: ${workspaces} workspaces ready in ${(total / 1000).toFixed(1)} s (create ${(create / 1000).toFixed(1)} s, bind ${(bind / 1000).toFixed(1)} s, namespaces+grants ${(grants / 1000).toFixed(1)} s)`);
  return {
    kcp,
    paths,
    allowed: paths.map((p) => `${p}/${KCP_NAMESPACE}`),
    denied: withDenied ? paths.map((p) => `${p}/${KCP_DENIED_NAMESPACE}`) : [],
    controllerKubeconfig: kcp.identities.controller.writeKubeconfig(KCP_PROVIDER_PATH),
    observerAdmin: await useKeepAlive(kcp.identities.admin.kubeConfig(`${vw}/clusters/*`)),
    requesters,
    sampler,
    workspacesMs: { create, bind, namespacesAndGrants: grants, total },
  };
}

/** kcp's audit log names the controller KCP_CONTROLLER_USERNAME: the figures count it as the controller. */
export function asControllerUser<T extends { user?: { username?: string } }>(events: T[], controllerUser: string): T[] {
  for (const e of events) if (e.user?.username === KCP_CONTROLLER_USERNAME && e.user) e.user.username = controllerUser;
  return events;
}

/** `{workspace}/{namespace}` → its parts; a plain namespace has no workspace. */
export function splitTarget(target: string): { workspace: string | undefined; namespace: string } {
  const i = target.lastIndexOf('/');
  return i < 0 ? { workspace: undefined, namespace: target } : { workspace: target.slice(0, i), namespace: target.slice(i + 1) };
}
