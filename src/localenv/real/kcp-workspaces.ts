/**
 * What a test or a mode does with a running kcp (kcp-server.ts): create workspaces,
 * apply objects in one, publish the request API in a provider workspace
 * (config/kcp/provider), bind it from a tenant workspace
 * (config/kcp/tenant), grant requesters, let the controller read the
 * Workspaces of a parent workspace (config/kcp/parent), and find the URL of
 * the export's virtual workspace.
 */
import { join } from 'node:path';
import { CustomObjectsApi, type KubernetesObject } from '@kubernetes/client-node';
import { repoRoot } from './binaries.js';
import { applyObjects, loadManifests, statusCode, type Manifest } from './manifests.js';
import { waitUntilReady } from './processes.js';
import type { Kcp, KcpIdentity } from './kcp-server.js';

/** Where the harness publishes the request API (config/kcp/tenant/apibinding.yaml names it). */
export const KCP_PROVIDER_PATH = 'root:internal-services';
export const KCP_EXPORT = 'appstudio.redhat.com';

export interface KcpWorkspace {
  /** e.g. "root:tenant-a". */
  path: string;
  /** The logical cluster's name: what the virtual workspace's URLs and the kcp.io/cluster annotation use. */
  cluster: string;
}

type Obj = KubernetesObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };

const parentAndName = (path: string): [string, string] => {
  const i = path.lastIndexOf(':');
  if (i <= 0) throw new Error(`not a workspace path below root: ${path}`);
  return [path.slice(0, i), path.slice(i + 1)];
};

/**
 * Creates the workspace at `path` (its parent must exist) of type
 * `universal` and waits until it is Ready. Creating one that exists is fine.
 * `shardLabel` places it (a sharded kcp: `spec.location.selector` on the
 * Shard objects' labels, kcp-sharded.ts's SHARD_LABEL).
 */
export async function createWorkspace(kcp: Kcp, path: string, timeoutMs = 60_000, place?: { label: string; value: string }): Promise<KcpWorkspace> {
  const [parent, name] = parentAndName(path);
  const api = kcp.identities.admin.kubeConfig(parent).makeApiClient(CustomObjectsApi);
  const ref = { group: 'tenancy.kcp.io', version: 'v1alpha1', plural: 'workspaces' };
  try {
    await api.createClusterCustomObject({
      ...ref,
      body: { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'Workspace', metadata: { name }, spec: { type: { name: 'universal', path: 'root' }, ...(place ? { location: { selector: { matchLabels: { [place.label]: place.value } } } } : {}) } },
    });
  } catch (err) {
    if (statusCode(err) !== 409) throw err;
  }
  let cluster = '';
  await waitUntilReady(`workspace ${path} Ready`, timeoutMs, [kcp.process], async () => {
    const ws = (await api.getClusterCustomObject({ ...ref, name })) as Obj;
    cluster = String(ws.spec?.['cluster'] ?? '');
    const phase = String(ws.status?.['phase'] ?? '');
    return phase === 'Ready' && cluster !== '' ? true : `phase ${phase || 'none'}`;
  });
  return { path, cluster };
}

/** Create-or-replace `objects` in the workspace at `path`, as `as` (default: admin). */
export function applyInWorkspace(kcp: Kcp, path: string, objects: readonly KubernetesObject[], as: KcpIdentity = kcp.identities.admin): Promise<KubernetesObject[]> {
  return applyObjects(as.kubeConfig(path), objects);
}

/** config/kcp/<sub> (default: the repository's), as objects. */
export function kcpManifests(sub: 'provider' | 'tenant' | 'parent' | 'partitions', configDir = join(repoRoot(), 'config')): Manifest[] {
  return loadManifests(join(configDir, 'kcp', sub));
}

/**
 * Publishes the request API: creates the provider workspace (default
 * root:internal-services) and applies config/kcp/provider in it (the
 * APIResourceSchema, the APIExport, the controller's RBAC).
 */
export async function installKcpProvider(kcp: Kcp, path = KCP_PROVIDER_PATH, configDir?: string): Promise<KcpWorkspace> {
  const ws = await createWorkspace(kcp, path);
  const objects = kcpManifests('provider', configDir);
  // Schemas before the export that names them.
  const order = (o: Manifest): number => (o.kind === 'APIResourceSchema' ? 0 : o.kind === 'APIExport' ? 1 : 2);
  await applyInWorkspace(kcp, path, [...objects].sort((a, b) => order(a) - order(b)));
  return ws;
}

export interface BindOptions {
  /** The provider workspace (default KCP_PROVIDER_PATH). */
  providerPath?: string;
  /** Accept the export's Events claim (default true, as config/kcp/tenant/apibinding.yaml does). */
  acceptEvents?: boolean;
  timeoutMs?: number;
}

/** Applies config/kcp/tenant/apibinding.yaml in the workspace at `path` and waits until it is Bound. */
export async function bindExport(kcp: Kcp, path: string, opts: BindOptions = {}): Promise<void> {
  const binding = kcpManifests('tenant').find((o) => o.kind === 'APIBinding');
  if (!binding) throw new Error('no APIBinding in config/kcp/tenant');
  const spec = structuredClone(binding['spec']) as { reference: { export: { path: string } }; permissionClaims?: unknown[] };
  spec.reference.export.path = opts.providerPath ?? KCP_PROVIDER_PATH;
  if (opts.acceptEvents === false) delete spec.permissionClaims;
  // On a shard other than the provider's, the export and the right to bind it
  // arrive through the cache server: a binding made just after the export may
  // be refused for a moment ("no permission to bind to export", seen on kcp
  // v0.30.0). Tried again until the timeout.
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  for (;;) {
    try {
      await applyInWorkspace(kcp, path, [{ ...binding, spec } as KubernetesObject]);
      break;
    } catch (e) {
      if (!/no permission to bind/.test(String((e as Error).message)) || Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  await waitForBinding(kcp, path, binding.metadata?.name ?? KCP_EXPORT, opts.timeoutMs);
}

export async function waitForBinding(kcp: Kcp, path: string, name: string, timeoutMs = 60_000): Promise<void> {
  const api = kcp.identities.admin.kubeConfig(path).makeApiClient(CustomObjectsApi);
  await waitUntilReady(`APIBinding ${name} in ${path} Bound`, timeoutMs, [kcp.process], async () => {
    const b = (await api.getClusterCustomObject({ group: 'apis.kcp.io', version: 'v1alpha2', plural: 'apibindings', name })) as Obj;
    const phase = String(b.status?.['phase'] ?? '');
    return phase === 'Bound' ? true : `phase ${phase || 'none'}`;
  });
}

/**
 * Lets `username` (default: the requester identity's) use the request API in
 * the tenant workspace at `path`: the requesters' ClusterRole
 * (config/kcp/tenant/requester_role.yaml) and a ClusterRoleBinding to it.
 */
export async function grantKcpRequester(kcp: Kcp, path: string, username = kcp.identities.requester.username): Promise<void> {
  const role = kcpManifests('tenant').find((o) => o.kind === 'ClusterRole');
  if (!role) throw new Error('no ClusterRole in config/kcp/tenant');
  const roleName = role.metadata?.name ?? '';
  await applyInWorkspace(kcp, path, [
    role,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `${roleName}:${username}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleName },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: username }],
    } as KubernetesObject,
  ]);
}

/**
 * Lets the controller read the Workspaces in the workspace at `parentPath`
 * (config/kcp/parent): how it maps a tenant workspace's path to its logical
 * cluster. Not needed in root, where kcp lets every authenticated user read
 * them.
 */
export async function grantWorkspaceReader(kcp: Kcp, parentPath: string): Promise<void> {
  await applyInWorkspace(kcp, parentPath, kcpManifests('parent'));
}

/**
 * The URL of an APIExport's virtual workspace, from the provider workspace's
 * APIExportEndpointSlice of the same name (status.endpoints[0].url, e.g.
 * https://127.0.0.1:PORT/services/apiexport/<cluster>/<export>). kcp lists a
 * shard there once a workspace on it binds the export, so this waits.
 */
export async function exportVirtualWorkspaceUrl(
  kcp: Kcp,
  providerPath = KCP_PROVIDER_PATH,
  exportName = KCP_EXPORT,
  as: KcpIdentity = kcp.identities.admin,
  timeoutMs = 60_000,
): Promise<string> {
  const api = as.kubeConfig(providerPath).makeApiClient(CustomObjectsApi);
  let url = '';
  await waitUntilReady(`APIExportEndpointSlice ${exportName} in ${providerPath} has an endpoint`, timeoutMs, [kcp.process], async () => {
    const slice = (await api.getClusterCustomObject({ group: 'apis.kcp.io', version: 'v1alpha1', plural: 'apiexportendpointslices', name: exportName })) as Obj;
    const endpoints = (slice.status?.['endpoints'] ?? []) as Array<{ url?: string }>;
    url = endpoints[0]?.url ?? '';
    return url !== '' ? true : 'no endpoints yet';
  });
  return url;
}
