/**
 * kcp as tenants and approvers write it (issue 54), on a REAL sharded kcp
 * (two shards, cache server, front-proxy) with the controller as its own
 * non-admin identity and REAL Tekton (pods simulated):
 *
 * - a workspace two levels down (root:org:team, on shard-1, the shard that
 *   is not the root) whose parent was never given with
 *   --kcp-workspace-parent: the controller learns its path by walking the
 *   tree (root:org grants it the reader role), and decides it under that
 *   path — a rule and an allowList glob over workspace paths;
 * - an approver approves and denies its requests by path with the kubectl
 *   plugin, on the internal cluster; a bare NAMESPACE/NAME is answered with
 *   the path to write;
 * - a requester names the request by path (and by logical cluster) from a
 *   kubeconfig of another workspace: get, wait, logs, cancel;
 * - a workspace under a parent the controller may not read waits
 *   (WaitingForWorkspace), the message saying what to grant and which flag
 *   to set, until the grant is there; never Rejected under its logical
 *   cluster.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import {
  applyObjects, bindExport, createWorkspace, ensureNamespace, grantKcpRequester, grantWorkspaceReader, installKcpProvider, installProject, startEnvironment, startShardedKcp,
  SHARD_LABEL, KCP_PROVIDER_PATH,
  type Environment, type KcpWorkspace, type ShardedKcp,
  startTogether,
} from '../../src/localenv/index.js';
import type { InternalRequest, InternalRequestApproval } from '../../src/api/types.js';
import { IR, NS, runKcpController, runPlugin, setRunConfig, simulatedStep, testPipeline, waitFor, type ControllerProcess } from './helpers.js';

const FINAL = ['Succeeded', 'Failed', 'Rejected'];
const APPROVALS = { group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalrequestapprovals' };
let env: Environment;
let kcp: ShardedKcp;
let internalAdmin: KubeConfig;
let controller: ControllerProcess;
/** root:org:team, on shard-1. */
let team: KcpWorkspace;
/** root:closed:kid, under a parent the controller may not read. */
let kid: KcpWorkspace;
let closed: KcpWorkspace;

const api = (ws: KcpWorkspace) => kcp.identities.requester.kubeConfig(ws.path).makeApiClient(CustomObjectsApi);
const create = (ws: KcpWorkspace, namespace: string, name: string) =>
  api(ws).createNamespacedCustomObject({ ...IR, namespace, body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name, namespace }, spec: { request: 'echo', params: { text: name } } } }) as Promise<InternalRequest>;
const get = (ws: KcpWorkspace, namespace: string, name: string) => api(ws).getNamespacedCustomObject({ ...IR, namespace, name }) as Promise<InternalRequest>;
const progressing = (r: InternalRequest) => r.status?.conditions?.find((c) => c.type === 'Progressing');
const phaseIs = (ws: KcpWorkspace, namespace: string, name: string, phase: string, timeoutMs = 60_000) =>
  waitFor(`${ws.path} ${namespace}/${name} ${phase}`, async () => {
    const r = await get(ws, namespace, name);
    return progressing(r)?.reason === phase ? r : undefined;
  }, timeoutMs);
const finished = (ws: KcpWorkspace, namespace: string, name: string, timeoutMs = 90_000) =>
  waitFor(`${ws.path} ${namespace}/${name} finished`, async () => {
    const r = await get(ws, namespace, name);
    return FINAL.includes(r.status?.conditions?.[0]?.reason ?? '') ? r : undefined;
  }, timeoutMs);
const asApprover = (args: string[]) => runPlugin(args, env.internal.identities.approver!.kubeconfigPath);

before(async () => {
  [env, kcp] = await startTogether(startEnvironment({ tekton: true }), startShardedKcp({ shards: 2 }));
  await installProject(env);
  internalAdmin = env.internal.identities.admin.kubeConfig();
  const rbac = 'rbac.authorization.k8s.io';
  await applyObjects(internalAdmin, [
    testPipeline('echo', { params: [{ name: 'text', default: '' }], results: [{ name: 'out', value: '$(tasks.t.results.out)' }], tasks: [{ name: 't', params: [{ name: 'text', value: '$(params.text)' }], taskSpec: { params: [{ name: 'text' }], results: [{ name: 'out' }], steps: [simulatedStep('s', { SIMULATED_RESULT_out: '$(params.text)' })] } }] }),
    { apiVersion: `${rbac}/v1`, kind: 'RoleBinding', metadata: { name: 'approvers', namespace: NS }, roleRef: { apiGroup: rbac, kind: 'ClusterRole', name: 'internal-services-approver' }, subjects: [{ apiGroup: rbac, kind: 'Group', name: 'release-managers' }] },
    { apiVersion: `${rbac}/v1`, kind: 'Role', metadata: { name: 'approve-signing', namespace: NS }, rules: [{ apiGroups: ['appstudio.redhat.com'], resources: ['rules'], resourceNames: ['signing'], verbs: ['approve'] }] },
    { apiVersion: `${rbac}/v1`, kind: 'RoleBinding', metadata: { name: 'approve-signing', namespace: NS }, roleRef: { apiGroup: rbac, kind: 'Role', name: 'approve-signing' }, subjects: [{ apiGroup: rbac, kind: 'Group', name: 'release-managers' }] },
  ] as never);
  // Globs over workspace paths, in a rule and in the allowList alike (the API server accepts both).
  await setRunConfig(internalAdmin, {
    allowList: ['root:org:*/open', 'root:closed:*/open'],
    rules: [{ name: 'signing', namespaces: ['root:org:*/team'], pipelines: ['echo'], requireApproval: true, approvalTimeout: '1h' }],
  });
  await createWorkspace(kcp, KCP_PROVIDER_PATH, 90_000, { label: SHARD_LABEL, value: 'root' });
  await installKcpProvider(kcp);
  const org = await createWorkspace(kcp, 'root:org', 90_000, { label: SHARD_LABEL, value: 'root' });
  closed = await createWorkspace(kcp, 'root:closed', 90_000, { label: SHARD_LABEL, value: 'root' });
  // The controller may read root:org's Workspaces (config/kcp/parent), not root:closed's (yet).
  await grantWorkspaceReader(kcp, org.path);
  team = await createWorkspace(kcp, 'root:org:team', 90_000, { label: SHARD_LABEL, value: 'shard-1' });
  kid = await createWorkspace(kcp, 'root:closed:kid', 90_000, { label: SHARD_LABEL, value: 'shard-1' });
  for (const ws of [team, kid]) {
    await bindExport(kcp, ws.path);
    for (const ns of ['team', 'open']) await ensureNamespace(kcp.identities.admin.kubeConfig(ws.path), ns);
    await grantKcpRequester(kcp, ws.path);
  }
  // No --kcp-workspace-parent: root only, as the demo runs it.
  controller = runKcpController(env, kcp, ['--metrics-bind-address', '0', '--kcp-refresh-interval', '2s']);
  await controller.waitForLog((l) => l.msg === 'caches synced', 120_000);
}, { timeout: 900_000 });

after(async () => {
  await controller?.kill('SIGKILL');
  await Promise.all([kcp?.stop(), env?.stop()]);
});

describe('kcp: workspaces named by path, at any depth, by approvers and requesters (real sharded kcp; real Tekton, pods simulated)', () => {
  test('kcp v0.30 facts: the workspace is on shard-1; its LogicalCluster carries kcp.io/path (the tenant admin\'s to rewrite, so not trusted); the controller cannot read LogicalClusters through the export without a claim', async () => {
    const lc = (await kcp.identities.admin.kubeConfig(team.path).makeApiClient(CustomObjectsApi).getClusterCustomObject({ group: 'core.kcp.io', version: 'v1alpha1', plural: 'logicalclusters', name: 'cluster' })) as { metadata: { annotations?: Record<string, string> } };
    assert.equal(lc.metadata.annotations?.['kcp.io/path'], 'root:org:team');
    const slice = (await kcp.identities.admin.kubeConfig(KCP_PROVIDER_PATH).makeApiClient(CustomObjectsApi).getClusterCustomObject({ group: 'apis.kcp.io', version: 'v1alpha1', plural: 'apiexportendpointslices', name: 'appstudio.redhat.com' })) as { status?: { endpoints?: Array<{ url: string }> } };
    const urls = (slice.status?.endpoints ?? []).map((e) => e.url);
    assert.equal(urls.length, 1, `one shard has bound workspaces: ${urls.join(', ')}`);
    const vw = kcp.identities.controller.kubeConfig(`${urls[0]!}/clusters/${team.cluster}`).makeApiClient(CustomObjectsApi);
    await assert.rejects(vw.getClusterCustomObject({ group: 'core.kcp.io', version: 'v1alpha1', plural: 'logicalclusters', name: 'cluster' }), (e: unknown) => (e as { code?: number }).code === 403);
  });

  test('a workspace two levels down, its parent never given: learnt by walking the tree; its request waits for approval, the message naming it by path; the approval records the path', async () => {
    const learnt = await controller.waitForLog((l) => l.msg === 'kcp: a workspace found by walking the tree can be read; its Workspaces are read on every refresh from now on' && l.workspace === 'root:org', 60_000);
    assert.ok(learnt);
    await create(team, 'team', 'signme');
    const w = await phaseIs(team, 'team', 'signme', 'AwaitingApproval');
    assert.equal(w.status?.conditions?.[0]?.reason, 'Running');
    assert.match(progressing(w)?.message ?? '', /runs "kubectl internalrequest approve root:org:team\/team\/signme"/);
    const approvals = (await internalAdmin.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({ ...APPROVALS, namespace: NS })) as { items: InternalRequestApproval[] };
    const a = approvals.items.find((x) => x.spec.request.name === 'signme');
    assert.deepEqual([a?.spec.request.workspace, a?.spec.request.remote], ['root:org:team', team.cluster]);
  });

  test('approve by path (a bare NAMESPACE/NAME is answered with the path to write): it runs and succeeds; the requester asks for its logs by path', async () => {
    const bare = await asApprover(['approve', 'team/signme']);
    assert.equal(bare.code, 2, bare.stderr);
    assert.match(bare.stderr, /CLI_REQUEST_NOT_FOUND/);
    assert.match(bare.stderr, new RegExp(`waiting for approval under that namespace and name: root:org:team/team/signme \\(logical cluster ${team.cluster}\\)`));
    const wrongPath = await asApprover(['approve', 'root:org/team/signme']);
    assert.match(wrongPath.stderr, /CLI_REQUEST_NOT_FOUND/);
    const ok = await asApprover(['approve', 'root:org:team/team/signme', '-m', 'by path']);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout.trim(), `internalrequest root:org:team/team/signme (logical cluster ${team.cluster}) approved by release-manager (rule signing)`);
    const done = await finished(team, 'team', 'signme');
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', JSON.stringify(done.status));
    assert.deepEqual(done.status?.results, { out: 'signme' });
    // The controller's own lines carry the path beside the key (which names the logical cluster).
    await waitFor('the log line of the outcome', async () => controller.lines.some((l) => l.request === `${team.cluster}/team/signme` && l.workspace === 'root:org:team' && l.reason === 'Succeeded'), 10_000);
    assert.ok(controller.lines.some((l) => l.msg === 'PipelineRun created' && l.request === `${team.cluster}/team/signme` && l.workspace === 'root:org:team'));
    // The requester asks for its logs by path, from a kubeconfig of another workspace: the controller answers (pods are simulated: whatever the run left).
    const logs = await runPlugin(['logs', 'root:org:team/team/signme', '--timeout', '60'], kcp.identities.requester.writeKubeconfig('root'));
    assert.notEqual(logs.code, 124, logs.stderr);
    assert.match(logs.stderr, /asked the controller for the logs of internalrequest root:org:team\/team\/signme/);
    assert.match(logs.stderr, /^logs from /m);
  });

  test('deny by path: Rejected with the approver\'s message', async () => {
    await create(team, 'team', 'denyme');
    await phaseIs(team, 'team', 'denyme', 'AwaitingApproval');
    const no = await asApprover(['deny', 'root:org:team/team/denyme', '-m', 'not this one']);
    assert.equal(no.code, 0, no.stderr);
    assert.match(no.stdout, /^internalrequest root:org:team\/team\/denyme \(logical cluster \S+\) denied by release-manager/);
    const done = await finished(team, 'team', 'denyme');
    assert.equal(done.status?.conditions?.[0]?.reason, 'Rejected');
    assert.match(done.status?.conditions?.[0]?.message ?? '', /not this one/);
  });

  test('an allowList glob over workspace paths serves the nested workspace\'s namespace; a requester names its requests by path and by logical cluster from another workspace\'s kubeconfig: get, wait, cancel', async () => {
    await create(team, 'open', 'plain');
    // A kubeconfig of root (the requester has no access there): the name points the plugin at the workspace.
    const kubeconfig = kcp.identities.requester.writeKubeconfig('root');
    const waited = await runPlugin(['wait', 'root:org:team/open/plain', '--timeout', '90s'], kubeconfig);
    assert.equal(waited.code, 0, waited.stderr);
    assert.deepEqual(JSON.parse(waited.stdout), { out: 'plain' });
    assert.match(waited.stderr, /internalrequest root:org:team\/open\/plain: Succeeded/);
    const byCluster = await runPlugin(['get', `${team.cluster}/open/plain`, '-o', 'json'], kubeconfig);
    assert.equal(byCluster.code, 0, byCluster.stderr);
    assert.equal((JSON.parse(byCluster.stdout) as InternalRequest).metadata.name, 'plain');
    // A workspace the requester has no access to: refused, saying what a requester needs there.
    const refused = await runPlugin(['get', 'root:org/open/plain'], kubeconfig);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /requester_role\.yaml/);
    const cancelled = await runPlugin(['cancel', 'root:org:team/open/plain'], kubeconfig);
    assert.equal(cancelled.code, 0, cancelled.stderr);
    assert.match(cancelled.stdout, /internalrequest root:org:team\/open\/plain cancelled \(deleted\)/);
  });

  test('a workspace under a parent the controller may not read waits (WaitingForWorkspace), the message naming the grant and the flag; granted, decided under its path; never Rejected under its logical cluster', async () => {
    await create(kid, 'open', 'waits');
    const w = await phaseIs(kid, 'open', 'waits', 'WaitingForWorkspace');
    assert.equal(w.status?.conditions?.[0]?.reason, 'Running', 'conditions[0]: the requester waits');
    const msg = progressing(w)?.message ?? '';
    assert.match(msg, /cannot read the Workspaces of root:closed \(forbidden\)/);
    assert.match(msg, /config\/kcp\/parent\/workspace_reader\.yaml/);
    assert.match(msg, /--kcp-workspace-parent/);
    assert.match(msg, /never under its logical cluster name/);
    await grantWorkspaceReader(kcp, closed.path);
    await controller.waitForLog((l) => l.msg === 'kcp: the path of a held workspace is known now; its requests are decided' && l.workspace === 'root:closed:kid', 60_000);
    const done = await finished(kid, 'open', 'waits');
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', JSON.stringify(done.status));
    assert.ok(!controller.lines.some((l) => String(l.request ?? '').startsWith(`${kid.cluster}/`) && l.reason === 'Rejected'), 'nothing Rejected for it');
  });
});
