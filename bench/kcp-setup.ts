/**
 * `--kcp --workspaces N`: the remote side of the benchmark is a real kcp
 * (src/localenv/real/kcp-server.ts) instead of a plain kube-apiserver. The provider
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
 *
 * `--shards N`: a sharded kcp (src/localenv/real/kcp-sharded.ts) of N shards;
 * workspace i is placed on shard i mod N, the provider workspace on the root
 * shard. The observer watches every shard's virtual workspace; each shard's
 * process is sampled on its own (CPU, RSS).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { CustomObjectsApi } from '@kubernetes/client-node';
import {
  bindExport, createWorkspace, ensureNamespace, exportVirtualWorkspaceUrl, grantKcpRequester, installKcpProvider, startKcp, startShardedKcp, KCP_CONTROLLER_USERNAME, KCP_PROVIDER_PATH, KCP_EXPORT, SHARD_LABEL,
  type Kcp, type ShardedKcp,
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
  /** The export's virtual workspace wildcard (…/clusters/*) of every shard, as kcp's admin: for the observer. */
  observerAdmin: KubeConfig[];
  /** The requester's client of each workspace. */
  requesters: Map<string, ResourceClient<InternalRequest>>;
  /** kcp's process tree (sharded: the root shard's), sampled every second (RSS peaks per pass). */
  sampler: ProcTreeSampler;
  /** Sharded: every shard's process, sampled every second, root first; and the workspaces placed on each. */
  shards?: Array<{ name: string; sampler: ProcTreeSampler; workspaces: number }>;
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

export function startBenchKcp(log: (m: string) => void, shards?: number): Promise<Kcp> {
  return shards === undefined ? startKcp({ audit: true, log }) : startShardedKcp({ shards, audit: true, log });
}

function isSharded(kcp: Kcp): kcp is ShardedKcp {
  return Array.isArray((kcp as Partial<ShardedKcp>).shards);
}

/** Waits until the export's endpoint slice lists `n` URLs (one per shard with a bound workspace). */
async function sliceUrls(kcp: Kcp, n: number, timeoutMs = 120_000): Promise<string[]> {
  const api = kcp.identities.admin.kubeConfig(KCP_PROVIDER_PATH).makeApiClient(CustomObjectsApi);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const slice = (await api.getClusterCustomObject({ group: 'apis.kcp.io', version: 'v1alpha1', plural: 'apiexportendpointslices', name: KCP_EXPORT })) as { status?: { endpoints?: Array<{ url: string }> } };
    const urls = (slice.status?.endpoints ?? []).map((e) => e.url);
    if (urls.length >= n) return urls;
    if (Date.now() > deadline) throw new Error(`the endpoint slice lists ${urls.length} of ${n} shard URLs after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The provider workspace and N tenant workspaces, in parallel batches. */
export async function setUpKcpWorkspaces(kcp: Kcp, workspaces: number, withDenied: boolean, log: (m: string) => void): Promise<KcpSetup> {
  const t0 = Date.now();
  const sharded = isSharded(kcp) ? kcp : undefined;
  if (sharded) await createWorkspace(kcp, KCP_PROVIDER_PATH, 180_000, { label: SHARD_LABEL, value: 'root' });
  await installKcpProvider(kcp);
  log(`kcp: provider workspace ${KCP_PROVIDER_PATH} publishes the request API (${Date.now() - t0} ms)`);
  const paths = workspacePaths(workspaces);
  const shardOf = (p: string) => (sharded ? sharded.shardNames[paths.indexOf(p) % sharded.shardNames.length]! : undefined);
  const create = await inBatches('workspaces created (Ready)', paths, async (p) => {
    const shard = shardOf(p);
    await createWorkspace(kcp, p, 180_000, shard ? { label: SHARD_LABEL, value: shard } : undefined);
  }, log);
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
  const vws = sharded ? await sliceUrls(kcp, Math.min(sharded.shards.length, workspaces)) : [await exportVirtualWorkspaceUrl(kcp)];
  const sampler = new ProcTreeSampler((sharded ? sharded.shards[0]!.process.pid : kcp.process.pid) ?? -1, 1000, 10_000);
  sampler.start();
  const shards = sharded?.shards.map((s) => {
    const x = new ProcTreeSampler(s.process.pid ?? -1, 1000, 10_000);
    x.start();
    return { name: s.name, sampler: x, workspaces: paths.filter((p) => shardOf(p) === s.name).length };
  });
  const total = Date.now() - t0;
  log(`kcp: ${workspaces} workspaces ready in ${(total / 1000).toFixed(1)} s (create ${(create / 1000).toFixed(1)} s, bind ${(bind / 1000).toFixed(1)} s, namespaces+grants ${(grants / 1000).toFixed(1)} s)`);
  return {
    kcp,
    paths,
    allowed: paths.map((p) => `${p}/${KCP_NAMESPACE}`),
    denied: withDenied ? paths.map((p) => `${p}/${KCP_DENIED_NAMESPACE}`) : [],
    controllerKubeconfig: kcp.identities.controller.writeKubeconfig(KCP_PROVIDER_PATH),
    observerAdmin: await Promise.all(vws.map((vw) => useKeepAlive(kcp.identities.admin.kubeConfig(`${vw}/clusters/*`)))),
    requesters,
    sampler,
    ...(shards ? { shards } : {}),
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
