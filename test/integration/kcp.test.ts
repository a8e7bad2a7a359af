/**
 * The request API on a REAL kcp (hack/kcp, src/localenv/real/kcp-server.ts): the
 * provider workspace root:internal-services holds config/kcp/provider; of
 * three tenant workspaces, two bind the export (tenant-a accepting the
 * Events claim, tenant-b not) and one does not. The controller's identity
 * (no admin rights; only config/kcp/provider's RBAC) works through the
 * export's virtual workspace; the requester's in a tenant workspace. It
 * maps workspace paths to logical clusters through the parents' Workspaces
 * (root, and root:org with config/kcp/parent), as tenant-c's admin shows
 * that the workspace's own LogicalCluster can claim any path.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import {
  applyInWorkspace,
  bindExport,
  createWorkspace,
  ensureNamespace,
  exportVirtualWorkspaceUrl,
  grantKcpRequester,
  grantWorkspaceReader,
  installKcpProvider,
  startKcp,
  statusCode,
  KCP_CONTROLLER_USERNAME,
  type Kcp,
  type KcpIdentity,
  type KcpWorkspace,
} from '../../src/localenv/index.js';
import { IR, waitFor } from './helpers.js';

const NS = 'team';
const CLUSTER_ANNOTATION = 'kcp.io/cluster';
const PATH_ANNOTATION = 'kcp.io/path';
const WS = { group: 'tenancy.kcp.io', version: 'v1alpha1', plural: 'workspaces' };
const LC = { group: 'core.kcp.io', version: 'v1alpha1', plural: 'logicalclusters' };
const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
type Req = { metadata: { name: string; namespace: string; resourceVersion: string; annotations?: Record<string, string> }; status?: Record<string, unknown> };

let kcp: Kcp;
let tenantA: KcpWorkspace;
let tenantB: KcpWorkspace;
let tenantC: KcpWorkspace;
let vw: string;

const custom = (kc: KubeConfig) => kc.makeApiClient(CustomObjectsApi);
/** The controller, through the virtual workspace: every bound workspace ("*") or one logical cluster. */
const controllerVw = (cluster = '*') => custom(kcp.identities.controller.kubeConfig(`${vw}/clusters/${cluster}`));
const admin = (ws: KcpWorkspace) => custom(kcp.identities.admin.kubeConfig(ws.path));
const requester = (ws: KcpWorkspace) => custom(kcp.identities.requester.kubeConfig(ws.path));

const request = (name: string) => ({
  apiVersion: 'appstudio.redhat.com/v1alpha1',
  kind: 'InternalRequest',
  metadata: { name, namespace: NS },
  spec: { request: 'sign-image', params: { image: 'quay.io/example/app:1' } },
});
const create = (ws: KcpWorkspace, name: string) => requester(ws).createNamespacedCustomObject({ ...IR, namespace: NS, body: request(name) });
const IR_PATH = '/apis/appstudio.redhat.com/v1alpha1/internalrequests';
const keyOf = (r: Req): string => `${r.metadata?.annotations?.[CLUSTER_ANNOTATION] ?? '?'}/${r.metadata?.namespace}/${r.metadata?.name}`;
/** "<cluster>/<namespace>/<name>" of every request the controller lists through the virtual workspace. */
const listed = async (): Promise<string[]> => ((await controllerVw().listClusterCustomObject(IR)) as { items: Req[] }).items.map(keyOf).sort();
const codeOf = async (p: Promise<unknown>): Promise<number | undefined> => p.then(() => 200, (e: unknown) => statusCode(e));
const rssMiB = (pid: number | undefined): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

before(async () => {
  kcp = await startKcp({ log: (m) => process.stderr.write(`${m}\n`) });
  await installKcpProvider(kcp);
  [tenantA, tenantB, tenantC] = await Promise.all([createWorkspace(kcp, 'root:tenant-a'), createWorkspace(kcp, 'root:tenant-b'), createWorkspace(kcp, 'root:tenant-c')]);
  await Promise.all([bindExport(kcp, tenantA.path), bindExport(kcp, tenantB.path, { acceptEvents: false })]);
  for (const ws of [tenantA, tenantB, tenantC]) {
    await ensureNamespace(kcp.identities.admin.kubeConfig(ws.path), NS);
    await grantKcpRequester(kcp, ws.path);
  }
  vw = await exportVirtualWorkspaceUrl(kcp, undefined, undefined, kcp.identities.controller);
  process.stderr.write(`kcp: startup ${kcp.startupMs} ms, RSS ${rssMiB(kcp.process.pid).toFixed(0)} MiB after setup; virtual workspace ${vw}\n`);
}, { timeout: 600_000 });

after(async () => {
  await kcp?.stop();
});

test('the export is served only where it is bound; the requester creates requests there', async () => {
  assert.match(vw, /^https:\/\/127\.0\.0\.1:\d+\/services\/apiexport\/[^/]+\/appstudio\.redhat\.com$/);
  await create(tenantA, 'build-1');
  await create(tenantB, 'build-1'); // same namespace and name, another workspace
  await create(tenantA, 'only-a');
  assert.equal(await codeOf(create(tenantC, 'build-1')), 404, 'tenant-c binds nothing: no such resource');
  assert.equal(await codeOf(custom(kcp.identities.outsider.kubeConfig(tenantA.path)).createNamespacedCustomObject({ ...IR, namespace: NS, body: request('x') })), 403);
});

test('the controller lists through the wildcard URL exactly the bound workspaces\' requests, each with kcp.io/cluster', async () => {
  assert.deepEqual(await listed(), [`${tenantA.cluster}/${NS}/build-1`, `${tenantA.cluster}/${NS}/only-a`, `${tenantB.cluster}/${NS}/build-1`].sort());
  // One logical cluster at a time, too.
  const one = (await controllerVw(tenantB.cluster).listNamespacedCustomObject({ ...IR, namespace: NS })) as { items: Req[] };
  assert.deepEqual(one.items.map((r) => r.metadata.name), ['build-1']);
  // Logical cluster names only: a workspace path is refused, and so is a namespaced list across clusters.
  assert.equal(await codeOf(controllerVw(tenantB.path).listNamespacedCustomObject({ ...IR, namespace: NS })), 403);
  assert.equal(await codeOf(controllerVw().listNamespacedCustomObject({ ...IR, namespace: NS })), 400);
  // Its rights are the export's content, nothing else: not the tenant workspace itself, not delete.
  assert.equal(await codeOf(custom(kcp.identities.controller.kubeConfig(tenantA.path)).listNamespacedCustomObject({ ...IR, namespace: NS })), 403);
  assert.equal(await codeOf(controllerVw(tenantA.cluster).deleteNamespacedCustomObject({ ...IR, namespace: NS, name: 'only-a' })), 403);
  // Nobody else gets into the virtual workspace.
  assert.equal(await codeOf(custom(kcp.identities.requester.kubeConfig(`${vw}/clusters/*`)).listClusterCustomObject(IR)), 403);
});

test('status written through the virtual workspace lands in that workspace only', async () => {
  const api = controllerVw(tenantA.cluster);
  const current = (await api.getNamespacedCustomObject({ ...IR, namespace: NS, name: 'build-1' })) as Req;
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const status = { conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running', message: 'from kcp', lastTransitionTime: now }] };
  await api.replaceNamespacedCustomObjectStatus({ ...IR, namespace: NS, name: 'build-1', body: { ...current, status } });
  const inA = (await admin(tenantA).getNamespacedCustomObject({ ...IR, namespace: NS, name: 'build-1' })) as Req;
  const inB = (await admin(tenantB).getNamespacedCustomObject({ ...IR, namespace: NS, name: 'build-1' })) as Req;
  assert.deepEqual(inA.status, status);
  assert.equal(inB.status, undefined);
  // The requester reads it, and cannot write status (403), in its own workspace.
  const mine = (await requester(tenantA).getNamespacedCustomObject({ ...IR, namespace: NS, name: 'build-1' })) as Req;
  const forged = { ...mine, status: { conditions: [{ ...status.conditions[0], status: 'True', reason: 'Succeeded' }] } };
  assert.equal(await codeOf(requester(tenantA).replaceNamespacedCustomObjectStatus({ ...IR, namespace: NS, name: 'build-1', body: forged })), 403);
});

test('a watch through the virtual workspace sees a new request, from the list\'s resourceVersion on', async () => {
  const list = (await controllerVw().listClusterCustomObject(IR)) as { metadata: { resourceVersion: string }; items: Req[] };
  const rv = list.metadata.resourceVersion;
  // One etcd per shard: every workspace's objects share one revision sequence.
  for (const r of list.items) assert.ok(BigInt(r.metadata.resourceVersion) <= BigInt(rv), `${r.metadata.resourceVersion} <= ${rv}`);
  const seen: Array<{ type: string; key: string }> = [];
  const watch = await new Watch(kcp.identities.controller.kubeConfig(`${vw}/clusters/*`)).watch(
    '/apis/appstudio.redhat.com/v1alpha1/internalrequests',
    { resourceVersion: rv, allowWatchBookmarks: true },
    (type: string, obj: Req) => seen.push({ type, key: `${obj.metadata?.annotations?.[CLUSTER_ANNOTATION] ?? '?'}/${obj.metadata?.name}` }),
    () => {},
  );
  try {
    await create(tenantB, 'build-2');
    await waitFor('ADDED of build-2', async () => seen.some((e) => e.type === 'ADDED' && e.key === `${tenantB.cluster}/build-2`), 20_000);
    // Nothing from before the list's resourceVersion is replayed.
    assert.deepEqual(seen.filter((e) => e.type !== 'BOOKMARK').map((e) => e.key), [`${tenantB.cluster}/build-2`]);
  } finally {
    watch.abort();
  }
});

test('sendInitialEvents through the virtual workspace: every request ADDED, then a BOOKMARK that ends them', async () => {
  const seen: Array<{ type: string; key: string; end?: string }> = [];
  const watch = await new Watch(kcp.identities.controller.kubeConfig(`${vw}/clusters/*`)).watch(
    IR_PATH,
    { sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: true },
    (type: string, obj: Req) => seen.push({ type, key: keyOf(obj), end: obj.metadata?.annotations?.['k8s.io/initial-events-end'] }),
    () => {},
  );
  try {
    await waitFor('the BOOKMARK ending the initial events', async () => seen.some((e) => e.type === 'BOOKMARK' && e.end === 'true'), 20_000);
    const end = seen.findIndex((e) => e.type === 'BOOKMARK' && e.end === 'true');
    assert.ok(seen.slice(0, end).every((e) => e.type === 'ADDED'));
    assert.deepEqual(seen.slice(0, end).map((e) => e.key).sort(), await listed());
  } finally {
    watch.abort();
  }
});

test('Events through the virtual workspace: where the binding accepted the claim, and nowhere else', async () => {
  const event = (name: string) => ({
    metadata: { name, namespace: NS },
    involvedObject: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', name: 'build-1', namespace: NS },
    reason: 'Started',
    message: 'from the controller',
    type: 'Normal',
  });
  const core = (cluster: string) => kcp.identities.controller.kubeConfig(`${vw}/clusters/${cluster}`).makeApiClient(CoreV1Api);
  // Unlike a kube-apiserver, the virtual workspace needs apiVersion and kind in the body.
  assert.equal(await codeOf(core(tenantA.cluster).createNamespacedEvent({ namespace: NS, body: event('build-1.bare') })), 400);
  await core(tenantA.cluster).createNamespacedEvent({ namespace: NS, body: { apiVersion: 'v1', kind: 'Event', ...event('build-1.a') } });
  const stored = await kcp.identities.admin.kubeConfig(tenantA.path).makeApiClient(CoreV1Api).readNamespacedEvent({ namespace: NS, name: 'build-1.a' });
  assert.equal(stored.reason, 'Started');
  assert.equal(
    await codeOf(core(tenantB.cluster).createNamespacedEvent({ namespace: NS, body: { apiVersion: 'v1', kind: 'Event', ...event('build-1.b') } })),
    403,
    'tenant-b did not accept the claim',
  );
});

test('a workspace path names a logical cluster through its parent\'s Workspace; the tenant\'s own LogicalCluster can claim any path', async () => {
  const controller = kcp.identities.controller;
  /** What the controller does with a path from tenant policy: the Workspace `name` in `parent` says which logical cluster it is. */
  const clusterOf = async (path: string): Promise<string> => {
    const i = path.lastIndexOf(':');
    const ws = (await custom(controller.kubeConfig(path.slice(0, i))).getClusterCustomObject({ ...WS, name: path.slice(i + 1) })) as { spec?: { cluster?: string } };
    return ws.spec?.cluster ?? '';
  };
  // In root every authenticated user may read Workspaces (kcp's bootstrap policy).
  assert.equal(await clusterOf(tenantA.path), tenantA.cluster);
  assert.equal(await clusterOf(tenantB.path), tenantB.cluster);
  // Below another parent only with config/kcp/parent there, and never across every cluster at once.
  const org = await createWorkspace(kcp, 'root:org');
  const teamD = await createWorkspace(kcp, 'root:org:team-d');
  assert.equal(await codeOf(clusterOf(teamD.path)), 403);
  await grantWorkspaceReader(kcp, org.path);
  await waitFor('the controller reads the Workspaces of root:org', async () => (await clusterOf(teamD.path).catch(() => '')) === teamD.cluster, 20_000, 250);
  assert.equal(await codeOf(custom(controller.kubeConfig('*')).listClusterCustomObject(WS)), 403);

  // Why not the kcp.io/path of the workspace's LogicalCluster: its admin (kcp makes a workspace's owner
  // cluster-admin in it) can set it to any path, and kcp then stamps that path on objects too.
  const tenantAdmin = kcp.identities.tenantAdmin;
  await applyInWorkspace(kcp, tenantC.path, [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'workspace-admin-tenant-admin' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: tenantAdmin.username }],
    } as KubernetesObject,
  ]);
  const lc = (as: KcpIdentity) => custom(as.kubeConfig(tenantC.path));
  const pathOfC = async () => ((await lc(kcp.identities.admin).getClusterCustomObject({ ...LC, name: 'cluster' })) as Req).metadata.annotations?.[PATH_ANNOTATION];
  assert.equal(await pathOfC(), tenantC.path);
  const setPath = (as: KcpIdentity, path: string) => lc(as).patchClusterCustomObject({ ...LC, name: 'cluster', body: { metadata: { annotations: { [PATH_ANNOTATION]: path } } } }, MERGE);
  await waitFor('tenant-admin rewrites kcp.io/path of its LogicalCluster', async () => (await codeOf(setPath(tenantAdmin, tenantA.path))) === 200, 20_000, 250);
  assert.equal(await pathOfC(), tenantA.path, 'the LogicalCluster now claims to be root:tenant-a');
  // kcp's own stamp of kcp.io/path on an object (whatever value it is given) takes the forged one.
  const cm = await tenantAdmin
    .kubeConfig(tenantC.path)
    .makeApiClient(CoreV1Api)
    .createNamespacedConfigMap({ namespace: NS, body: { metadata: { name: 'stamped', annotations: { [PATH_ANNOTATION]: 'anything' } } } });
  assert.equal(cm.metadata?.annotations?.[PATH_ANNOTATION], tenantA.path);
  // The parent's Workspace is out of its reach, and its spec.cluster is kcp's alone.
  assert.equal(await clusterOf(tenantC.path), tenantC.cluster);
  const wsC = custom(tenantAdmin.kubeConfig('root'));
  assert.equal(await codeOf(wsC.patchClusterCustomObject({ ...WS, name: 'tenant-c', body: { metadata: { labels: { x: 'y' } } } }, MERGE)), 403);
  const moved = custom(kcp.identities.admin.kubeConfig('root')).patchClusterCustomObject({ ...WS, name: 'tenant-c', body: { spec: { cluster: tenantA.cluster } } }, MERGE);
  assert.equal(await codeOf(moved), 422, 'spec.cluster is immutable');
  await setPath(kcp.identities.admin, tenantC.path);
});

test('deleting an APIBinding deletes its workspace\'s requests: a watch sees them DELETED, the list loses them', async () => {
  const list = (await controllerVw().listClusterCustomObject(IR)) as { metadata: { resourceVersion: string } };
  const deleted: string[] = [];
  const watch = await new Watch(kcp.identities.controller.kubeConfig(`${vw}/clusters/*`)).watch(
    '/apis/appstudio.redhat.com/v1alpha1/internalrequests',
    { resourceVersion: list.metadata.resourceVersion },
    (type: string, obj: Req) => {
      if (type === 'DELETED') deleted.push(`${obj.metadata.annotations?.[CLUSTER_ANNOTATION] ?? '?'}/${obj.metadata.name}`);
    },
    () => {},
  );
  await custom(kcp.identities.admin.kubeConfig(tenantB.path)).deleteClusterCustomObject({ group: 'apis.kcp.io', version: 'v1alpha2', plural: 'apibindings', name: 'appstudio.redhat.com' });
  await waitFor('tenant-b gone from the list', async () => !(await listed()).some((k) => k.startsWith(`${tenantB.cluster}/`)), 60_000, 500);
  assert.deepEqual(await listed(), [`${tenantA.cluster}/${NS}/build-1`, `${tenantA.cluster}/${NS}/only-a`].sort());
  assert.equal(await codeOf(controllerVw(tenantB.cluster).listNamespacedCustomObject({ ...IR, namespace: NS })), 403, 'no binding: refused, not empty');
  await waitFor('DELETED events of tenant-b', async () => deleted.length === 2, 20_000);
  watch.abort();
  assert.deepEqual(deleted.sort(), [`${tenantB.cluster}/build-1`, `${tenantB.cluster}/build-2`]);
  // Gone in the workspace too (kcp deletes a binding's objects with it); binding again brings none back.
  await waitFor('the API gone from tenant-b', async () => (await codeOf(admin(tenantB).listNamespacedCustomObject({ ...IR, namespace: NS }))) === 404, 30_000, 250);
  await bindExport(kcp, tenantB.path, { acceptEvents: false });
  assert.deepEqual(((await admin(tenantB).listNamespacedCustomObject({ ...IR, namespace: NS })) as { items: Req[] }).items, []);
});

test('kcp restarted on the same root directory keeps its workspaces and objects; an open watch ends, and one from before gets 410', async () => {
  const caBefore = kcp.caPem;
  const before = ((await controllerVw().listClusterCustomObject(IR)) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
  const watchFrom = async (rv: string) => {
    const w = { events: [] as Array<{ type: string; code?: number }>, ended: undefined as { err: unknown } | undefined };
    await new Watch(kcp.identities.controller.kubeConfig(`${vw}/clusters/*`)).watch(
      IR_PATH,
      { resourceVersion: rv, allowWatchBookmarks: true },
      (type: string, obj: { code?: number }) => w.events.push({ type, code: obj.code }),
      (err: unknown) => (w.ended = { err }),
    );
    return w;
  };
  const open = await watchFrom(before);
  const stopped = Date.now();
  await kcp.stopKcp();
  // Stopped (SIGTERM), kcp ends the watch: an ERROR event (500, "unable to decode an event from the
  // watch stream: context canceled"), then the stream closes cleanly. (Killed, it would close with an error.)
  await waitFor('the open watch to end', async () => open.ended !== undefined, 15_000);
  assert.equal(open.ended?.err ?? null, null);
  assert.ok(open.events.every((e) => e.type === 'ERROR' && e.code === 500), JSON.stringify(open.events));
  const restarted = Date.now();
  await kcp.startKcp();
  process.stderr.write(`kcp: stopped in ${restarted - stopped} ms, ready again after ${Date.now() - restarted} ms; the open watch saw ${JSON.stringify(open.events)}\n`);
  assert.equal(kcp.caPem, caBefore, 'the serving certificate is reused: kubeconfigs stay valid');
  const r = (await requester(tenantA).getNamespacedCustomObject({ ...IR, namespace: NS, name: 'build-1' })) as Req;
  assert.equal((r.status?.['conditions'] as Array<{ message: string }>)[0]?.message, 'from kcp');
  assert.equal(KCP_CONTROLLER_USERNAME, kcp.identities.controller.username);
  // The virtual workspace serves again (after the restart, caches refill).
  await waitFor('the virtual workspace after the restart', async () => (await listed()).length === 2, 60_000, 500);
  // A watch from a resourceVersion of before the restart: ERROR 410 (Expired, "too old resource version"),
  // then the end. An informer must list again.
  const stale = await watchFrom(before);
  await waitFor('the stale watch to end', async () => stale.ended !== undefined, 15_000);
  assert.deepEqual(stale.events, [{ type: 'ERROR', code: 410 }]);
});
