/**
 * The controller started on a REAL kcp before any workspace binds the export:
 * the export has no virtual workspace yet (its APIExportEndpointSlice lists
 * no endpoint). The controller still becomes ready (serving its other
 * remotes, of which here there are none), says what it waits for in its log
 * and on /readyz, and serves the first workspace that binds, without a
 * restart. Then a second URL in the endpoint slice that shows the same
 * workspaces (what a misbehaving slice could list) serves nothing twice.
 * Last, a workspace under a parent the controller cannot read: its requests
 * wait, never decided under its logical cluster name, until the parent can
 * be read.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import {
  FaultProxy, bindExport, createWorkspace, ensureNamespace, grantKcpRequester, grantWorkspaceReader, installKcpProvider, installProject, startEnvironment, startKcp,
  KCP_PROVIDER_PATH,
  type Environment, type Kcp,
  startTogether,
} from '../../src/localenv/index.js';
import type { InternalRequest } from '../../src/api/types.js';
import { IR, runKcpController, sample, scrape, setRunConfig, waitFor, type ControllerProcess } from './helpers.js';

let env: Environment;
let kcp: Kcp;
let controller: ControllerProcess;
let relay: FaultProxy | undefined;
let healthPort = 0;

before(async () => {
  // No Tekton: the request below is decided (Rejected) without running anything.
  [env, kcp] = await startTogether(startEnvironment({}), startKcp());
  await installProject(env);
  await setRunConfig(env.internal.identities.admin.kubeConfig(), { allowList: ['root:someone-else/team'] });
  await installKcpProvider(kcp);
}, { timeout: 600_000 });

after(async () => {
  await controller?.kill('SIGKILL');
  await relay?.close();
  await Promise.all([kcp?.stop(), env?.stop()]);
});

test('no workspace binds the export yet: the controller is ready and waits; the first workspace that binds is served without a restart', { timeout: 240_000 }, async () => {
  controller = runKcpController(env, kcp, ['--metrics-bind-address', '0', '--kcp-refresh-interval', '2s']);
  const waiting = await controller.waitForLog((l) => l.msg === 'kcp: the endpoint slice lists no virtual workspace URL yet; served as soon as it does', 60_000);
  assert.match(String(waiting.why), /lists no endpoint/);
  const serving = await controller.waitForLog((l) => l.msg === 'serving health probes');
  const port = Number(String(serving.address).split(':').pop());
  healthPort = port;
  await controller.waitForLog((l) => l.msg === 'caches synced', 60_000);
  const readyz = await waitFor('/readyz answers 200', async () => {
    const r = await fetch(`http://127.0.0.1:${port}/readyz?verbose`);
    return r.status === 200 ? r.text() : undefined;
  });
  assert.match(readyz, /kcp\/appstudio\.redhat\.com.*no virtual workspace URL/, 'readiness says what it waits for');

  // A workspace binds the export: it is served.
  const ws = await createWorkspace(kcp, 'root:late');
  await bindExport(kcp, ws.path);
  await ensureNamespace(kcp.identities.admin.kubeConfig(ws.path), 'team');
  await grantKcpRequester(kcp, ws.path);
  await controller.waitForLog((l) => l.msg === 'kcp: serving the workspaces of a shard that bind the export', 60_000);
  const api = kcp.identities.requester.kubeConfig(ws.path).makeApiClient(CustomObjectsApi);
  await api.createNamespacedCustomObject({ ...IR, namespace: 'team', body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name: 'first', namespace: 'team' }, spec: { request: 'sign-image' } } });
  const done = await waitFor('the request decided', async () => {
    const r = (await api.getNamespacedCustomObject({ ...IR, namespace: 'team', name: 'first' })) as InternalRequest;
    return r.status?.conditions?.[0]?.reason === 'Rejected' ? r : undefined;
  }, 60_000);
  assert.match(done.status?.conditions?.[0]?.message ?? '', /namespace "team" on remote "root:late" is not on the allowList/);
});

test('a second URL in the endpoint slice shows the same workspaces (a relay to the same virtual workspace): served once, from the first; that URL going down holds up nothing', { timeout: 180_000 }, async () => {
  const admin = kcp.identities.admin.kubeConfig(KCP_PROVIDER_PATH).makeApiClient(CustomObjectsApi);
  const ref = { group: 'apis.kcp.io', version: 'v1alpha1', plural: 'apiexportendpointslices', name: 'appstudio.redhat.com' };
  const slice = (await admin.getClusterCustomObject(ref)) as { status?: { endpoints?: Array<{ url: string }> } };
  const old = slice.status!.endpoints![0]!.url;
  // The same virtual workspace behind another port (a TCP relay, so kcp's own certificate still serves).
  const kcpUrl = new URL(old);
  relay = new FaultProxy({ host: kcpUrl.hostname, port: Number(kcpUrl.port) });
  await relay.listen();
  const second = old.replace(`:${kcpUrl.port}/`, `:${relay.port}/`);
  assert.notEqual(second, old);
  // kcp keeps its own endpoint in the slice (it writes it back), so the slice lists both.
  await admin.patchClusterCustomObjectStatus({ ...ref, body: { status: { endpoints: [{ url: old }, { url: second }] } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  await controller.waitForLog((l) => l.msg === 'kcp: serving the workspaces of a shard that bind the export' && l.url === second, 30_000);
  const twice = await controller.waitForLog((l) => l.msg === 'kcp: a workspace is bound on two shards; served from the first until it drops it', 30_000);
  assert.equal(twice.alsoOn, `127.0.0.1:${relay.port}`);
  // The relay goes down: the first URL serves on; a new request is decided once.
  await relay.close();
  relay = undefined;
  await controller.waitForLog((l) => l.msg === 'kcp: shard not serving; its workspaces wait, the other shards are served' && l.url === second, 60_000);
  const api = kcp.identities.requester.kubeConfig('root:late').makeApiClient(CustomObjectsApi);
  await api.createNamespacedCustomObject({ ...IR, namespace: 'team', body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name: 'second-url', namespace: 'team' }, spec: { request: 'sign-image' } } });
  const done = await waitFor('the request decided', async () => {
    const r = (await api.getNamespacedCustomObject({ ...IR, namespace: 'team', name: 'second-url' })) as InternalRequest;
    return r.status?.conditions?.[0]?.reason === 'Rejected' ? r : undefined;
  }, 60_000);
  assert.match(done.status?.conditions?.[0]?.message ?? '', /on remote "root:late"/);
  const cluster = done.metadata.annotations?.['kcp.io/cluster'];
  const added = controller.lines.filter((l) => l.msg === 'remote cluster added' && l.remote === cluster);
  assert.equal(added.length, 1, `served once: ${JSON.stringify(added)}`);
  assert.ok(String(added[0]!.server).startsWith(old), 'through the first URL');
  // The status is visible before the controller's line about it reaches this process (its stdout): wait for the line, then count.
  const decidedLines = () => controller.lines.filter((l) => l.request === `${cluster}/team/second-url` && l.reason === 'Rejected');
  await waitFor('the decision in the log', async () => decidedLines().length > 0, 10_000);
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(decidedLines().length, 1, 'decided once');

  // The second URL leaves the slice: that "shard" is forgotten (its readiness line goes), the workspace stays served from the first.
  await admin.patchClusterCustomObjectStatus({ ...ref, body: { status: { endpoints: [{ url: old }] } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  const removed = await controller.waitForLog((l) => l.msg === 'kcp: shard endpoint removed from the endpoint slice; its workspaces are handed over or served for the unbind grace, then forgotten', 30_000);
  assert.equal(removed.url, second);
  const readyz = await (await fetch(`http://127.0.0.1:${healthPort}/readyz?verbose`)).text();
  assert.doesNotMatch(readyz, new RegExp(`shard/127\\.0\\.0\\.1:${new URL(second).port} `), readyz);
  assert.ok(!controller.lines.some((l) => l.msg === 'kcp: workspace forgotten' && l.cluster === cluster), 'the workspace, served from the first URL, is not forgotten');
});

test('a workspace under a parent the controller cannot read (403): its requests wait, pending (WaitingForWorkspace), never Rejected; /readyz and the metrics say so; once the parent is readable, decided under its path', { timeout: 300_000 }, async () => {
  await controller.kill('SIGKILL');
  // root:org without config/kcp/parent: the controller's identity cannot list its Workspaces.
  const org = await createWorkspace(kcp, 'root:org');
  const ws = await createWorkspace(kcp, 'root:org:held');
  await bindExport(kcp, ws.path);
  await ensureNamespace(kcp.identities.admin.kubeConfig(ws.path), 'team');
  await grantKcpRequester(kcp, ws.path);
  controller = runKcpController(env, kcp, ['--metrics-bind-address', '127.0.0.1:0', '--kcp-refresh-interval', '2s', '--kcp-workspace-parent', 'root', 'root:org']);
  const metrics = Number(String((await controller.waitForLog((l) => l.msg === 'serving metrics', 60_000)).address).split(':').pop());
  const health = Number(String((await controller.waitForLog((l) => l.msg === 'serving health probes', 60_000)).address).split(':').pop());
  const heldLine = await controller.waitForLog((l) => l.msg === 'kcp: a workspace whose path cannot be read yet; served held: its requests wait, nothing of it is decided until its path is known' && l.cluster === ws.cluster, 90_000);
  assert.match(String(heldLine.why), /cannot list the Workspaces of root:org: HTTP 403/);
  const api = kcp.identities.requester.kubeConfig(ws.path).makeApiClient(CustomObjectsApi);
  await api.createNamespacedCustomObject({ ...IR, namespace: 'team', body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name: 'waits', namespace: 'team' }, spec: { request: 'sign-image' } } });
  const get = async () => (await api.getNamespacedCustomObject({ ...IR, namespace: 'team', name: 'waits' })) as InternalRequest;
  const waiting = await waitFor('the request waits (WaitingForWorkspace)', async () => {
    const r = await get();
    return r.status?.conditions?.find((c) => c.type === 'Progressing')?.reason === 'WaitingForWorkspace' ? r : undefined;
  }, 60_000);
  const [succeeded, progressing] = waiting.status!.conditions!;
  assert.deepEqual([succeeded?.type, succeeded?.status, succeeded?.reason], ['Succeeded', 'Unknown', 'Running'], 'conditions[0]: the requester waits');
  assert.match(progressing?.message ?? '', /waiting for this workspace's path: the controller cannot read the Workspaces of root:org \(forbidden\)/);
  // Shown on /readyz and in the metrics.
  const readyz = await (await fetch(`http://127.0.0.1:${health}/readyz?verbose`)).text();
  assert.match(readyz, /kcp\/appstudio\.redhat\.com\/workspace-paths.*1 workspace\(s\) wait for their path/, readyz);
  const text = await scrape(metrics);
  assert.equal(sample(text, 'internal_services_kcp_workspaces_waiting'), 1);
  assert.equal(sample(text, 'internal_services_requests_waiting', { remote: 'kcp', phase: 'WaitingForWorkspace' }), 1);
  // Read again with backoff, and still waiting: never decided under its logical cluster name.
  const reads = () => controller.lines.filter((l) => l.msg === 'kcp: workspace paths; read again with backoff').length;
  const before = reads();
  await waitFor('two more reads of the parents', async () => reads() >= before + 2, 30_000, 250);
  const still = await get();
  assert.equal(still.status?.conditions?.[0]?.reason, 'Running');
  assert.ok(!controller.lines.some((l) => String(l.request ?? '').startsWith(`${ws.cluster}/`) && l.reason === 'Rejected'), 'nothing Rejected for it');

  // The parent made readable (config/kcp/parent applied there): decided, under its path.
  await grantWorkspaceReader(kcp, org.path);
  await controller.waitForLog((l) => l.msg === 'kcp: the path of a held workspace is known now; its requests are decided' && l.workspace === 'root:org:held', 60_000);
  const done = await waitFor('the request decided', async () => {
    const r = await get();
    return r.status?.conditions?.[0]?.reason === 'Rejected' ? r : undefined;
  }, 60_000);
  assert.match(done.status?.conditions?.[0]?.message ?? '', /root:org:held/, 'decided under its path (not on the allowList)');
  const after = await (await fetch(`http://127.0.0.1:${health}/readyz?verbose`)).text();
  assert.doesNotMatch(after, /wait for their path/);
});
