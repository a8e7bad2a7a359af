/**
 * The controller serving a REAL kcp's workspaces through ONE kubeconfig: the
 * provider workspace's, as the controller's own non-admin identity
 * (config/kcp/provider RBAC), with `--kcp-kubeconfig`. Requests from two
 * workspaces that bind the export (the same namespace and name in both) run
 * on the internal cluster's REAL Tekton (pods simulated), each with its own
 * params, and their outcome is written back into the workspace it came from.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import {
  applyObjects, bindExport, createWorkspace, ensureNamespace, grantKcpRequester, installKcpProvider, installProject, startEnvironment, startKcp,
  type Environment, type Kcp, type KcpWorkspace,
} from '../../src/localenv/index.js';
import type { InternalRequest } from '../../src/api/types.js';
import { ANNOTATION_WORKSPACE, LABEL_REQUEST_REMOTE } from '../../src/tekton/pipelinerun.js';
import { IR, NS, onlyPipelineRunOf, pipelineRunsFor, releaseRun, runKcpController, sample, scrape, setRunConfig, simulatedStep, testPipeline, waitFor, type ControllerProcess } from './helpers.js';

const TEAM = 'team';
const FINAL = ['Succeeded', 'Failed', 'Rejected'];
let env: Environment;
let kcp: Kcp;
let internalAdmin: KubeConfig;
let a: KcpWorkspace;
let b: KcpWorkspace;
/** Bound too; it unbinds in the test that says so. */
let c: KcpWorkspace;
/** Bound, but not on the allowList. */
let d: KcpWorkspace;
/** Not bound. */
let e: KcpWorkspace;
let controller: ControllerProcess;
let metricsPort: number;
/** The logical clusters of the workspaces, as the first test found them. */
const clusters: string[] = [];

const requester = (ws: KcpWorkspace) => kcp.identities.requester.kubeConfig(ws.path).makeApiClient(CustomObjectsApi);
const create = (ws: KcpWorkspace, name: string, namespace: string, image: string, pipeline = 'sign-image', labels?: Record<string, string>) =>
  requester(ws).createNamespacedCustomObject({ ...IR, namespace, body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name, namespace, ...(labels ? { labels } : {}) }, spec: { request: pipeline, ...(pipeline === 'sign-image' ? { params: { image } } : {}) } } }) as Promise<InternalRequest>;
const phaseOf = async (ws: KcpWorkspace, name: string) => (await get(ws, name)).status?.conditions?.find((x) => x.type === 'Progressing')?.reason;
const get = (ws: KcpWorkspace, name: string, namespace = TEAM) => requester(ws).getNamespacedCustomObject({ ...IR, namespace, name }) as Promise<InternalRequest>;
const finished = (ws: KcpWorkspace, name: string, namespace = TEAM) =>
  waitFor(`${ws.path} ${namespace}/${name} finished`, async () => {
    const r = await get(ws, name, namespace);
    return FINAL.includes(r.status?.conditions?.[0]?.reason ?? '') ? r : undefined;
  }, 90_000);

before(async () => {
  [env, kcp] = await Promise.all([startEnvironment({ tekton: true }), startKcp()]);
  await installProject(env);
  internalAdmin = env.internal.identities.admin.kubeConfig();
  await applyObjects(internalAdmin, [
    // Gated: its run ends when the test calls releaseRun().
    testPipeline('hold', { tasks: [{ name: 't', taskSpec: { steps: [simulatedStep('s', { SIMULATED_DURATION: 'gate' })] } }] }),
    testPipeline('sign-image', {
      params: [{ name: 'image', type: 'string' }],
      results: [{ name: 'signed', value: '$(tasks.t.results.signed)' }],
      tasks: [{ name: 't', params: [{ name: 'image', value: '$(params.image)' }], taskSpec: { params: [{ name: 'image' }], results: [{ name: 'signed' }], steps: [simulatedStep('s', { SIMULATED_RESULT_signed: 'signed $(params.image)' })] } }],
    }),
  ] as never);
  // Namespace "team" of each workspace, named by its path (resolved through the parent, root).
  await setRunConfig(internalAdmin, { allowList: ['root:team-a', 'root:team-b', 'root:team-c'].map((p) => `${p}/${TEAM}`) });
  await installKcpProvider(kcp);
  [a, b, c, d, e] = (await Promise.all(['a', 'b', 'c', 'd', 'e'].map((x) => createWorkspace(kcp, `root:team-${x}`)))) as [KcpWorkspace, KcpWorkspace, KcpWorkspace, KcpWorkspace, KcpWorkspace];
  for (const ws of [a, b, c, d, e]) {
    if (ws !== e) await bindExport(kcp, ws.path);
    for (const ns of [TEAM, 'other']) await ensureNamespace(kcp.identities.admin.kubeConfig(ws.path), ns);
    await grantKcpRequester(kcp, ws.path);
  }
  controller = runKcpController(env, kcp, ['--metrics-bind-address', '127.0.0.1:0']);
  await controller.waitForLog((l) => l.msg === 'caches synced', 60_000);
  await controller.waitForLog((l) => l.msg === 'kcp: serving the workspaces that bind the export', 60_000);
  metricsPort = Number(String((await controller.waitForLog((l) => l.msg === 'serving metrics')).address).split(':').pop());
}, { timeout: 900_000 });

after(async () => {
  await controller?.kill('SIGKILL');
  await Promise.all([kcp?.stop(), env?.stop()]);
});

describe('the controller on kcp (real kcp, real Tekton, pods simulated)', () => {
  test('one namespace and name in two workspaces: two requests, two runs, each outcome written into its own workspace', async () => {
    // The same idempotency key too: idempotency is per workspace, so neither follows the other.
    const key = { 'internal-services.appstudio.redhat.com/idempotency-key': 'release-1' };
    const ra = await create(a, 'build-1', TEAM, 'quay.io/org/a:1', 'sign-image', key);
    const rb = await create(b, 'build-1', TEAM, 'quay.io/org/b:1', 'sign-image', key);
    const [da, db] = await Promise.all([finished(a, 'build-1'), finished(b, 'build-1')]);
    assert.equal(da.status?.conditions?.[0]?.reason, 'Succeeded', da.status?.conditions?.[0]?.message);
    assert.equal(db.status?.conditions?.[0]?.reason, 'Succeeded', db.status?.conditions?.[0]?.message);
    assert.deepEqual(da.status?.results, { signed: 'signed quay.io/org/a:1' });
    assert.deepEqual(db.status?.results, { signed: 'signed quay.io/org/b:1' });
    assert.notEqual(da.status?.pipelineRun, db.status?.pipelineRun);
    assert.equal(da.status?.followed, undefined);
    assert.equal(db.status?.followed, undefined);
    // Each workspace is its own remote: its logical cluster names it on the run and in the log.
    const clusterA = ra.metadata.annotations?.['kcp.io/cluster'] ?? (await get(a, 'build-1')).metadata.annotations?.['kcp.io/cluster'];
    const clusterB = rb.metadata.annotations?.['kcp.io/cluster'] ?? (await get(b, 'build-1')).metadata.annotations?.['kcp.io/cluster'];
    assert.ok(clusterA && clusterB && clusterA !== clusterB, `two logical clusters (${clusterA}, ${clusterB})`);
    const added = controller.lines.filter((l) => l.msg === 'remote cluster added');
    assert.deepEqual(
      [clusterA, clusterB].map((id) => added.find((l) => l.remote === id)?.workspace),
      ['root:team-a', 'root:team-b'],
      `both workspaces served as remotes, logged with their paths: ${JSON.stringify(added)}`,
    );
    clusters.push(clusterA!, clusterB!);
  });

  test('a namespace the configuration does not allow is Rejected, with a message naming its workspace by path', async () => {
    await create(a, 'outside', 'other', 'quay.io/org/a:2');
    const done = await finished(a, 'outside', 'other');
    assert.equal(done.status?.conditions?.[0]?.reason, 'Rejected');
    assert.match(done.status?.conditions?.[0]?.message ?? '', /namespace "other" on remote "root:team-a"/);
    // The other workspace saw nothing of it.
    await assert.rejects(get(b, 'outside', 'other'), (err: { code?: number }) => err.code === 404);
  });

  test('a workspace that binds the export but is not on the allowList is Rejected, named by its path; one that does not bind it has no such API', async () => {
    await create(d, 'not-allowed', TEAM, 'quay.io/org/d:1');
    const done = await finished(d, 'not-allowed');
    assert.equal(done.status?.conditions?.[0]?.reason, 'Rejected');
    assert.match(done.status?.conditions?.[0]?.message ?? '', /namespace "team" on remote "root:team-d" is not on the allowList/);
    // Its Event is recorded in its own workspace, through the virtual workspace (the binding accepted the Events claim).
    const ev = await waitFor('the Rejected Event in root:team-d', async () => {
      const list = await kcp.identities.admin.kubeConfig(d.path).makeApiClient(CoreV1Api).listNamespacedEvent({ namespace: TEAM });
      return list.items.find((x) => x.involvedObject.name === 'not-allowed' && x.reason === 'Rejected');
    });
    assert.equal(ev.type, 'Warning');
    await assert.rejects(create(e, 'no-api', TEAM, 'quay.io/org/e:1'), (err: { code?: number }) => err.code === 404);
  });

  test('metric labels stay bounded: every workspace is counted under the provider ("kcp"), no label names a workspace', async () => {
    assert.equal(clusters.length, 2, 'the first test found the workspaces');
    const text = await waitFor('the finished requests counted', async () => {
      const t = await scrape(metricsPort);
      return (sample(t, 'internal_request_attempt_total', { remote: 'kcp', reason: 'Succeeded' }) ?? 0) >= 2 ? t : undefined;
    });
    for (const c of clusters) assert.ok(!text.includes(c), `no series names workspace ${c}`);
    assert.equal(sample(text, 'internal_services_remote_up', { remote: 'kcp' }), 1);
    assert.ok(/internal_services_api_requests_total\{[^}]*remote="kcp"/.test(text), 'API calls through the virtual workspace are counted under "kcp"');
  });

  test('kcp restarted while a request runs: nothing lost, one PipelineRun, the outcome written after kcp is back', async () => {
    const r = await create(a, 'across-restart', TEAM, '', 'hold');
    const pr = await onlyPipelineRunOf(internalAdmin, r.metadata.uid!);
    // The run names its workspace: the logical cluster in the remote label, the path in an annotation.
    assert.equal(pr.metadata.labels?.[LABEL_REQUEST_REMOTE], r.metadata.annotations?.['kcp.io/cluster']);
    assert.equal(pr.metadata.annotations?.[ANNOTATION_WORKSPACE], 'root:team-a');
    await waitFor('Running', async () => (await phaseOf(a, 'across-restart')) === 'Running', 60_000);
    await kcp.stopKcp();
    await releaseRun(env, pr.metadata.name!); // the run ends while kcp is down
    await kcp.startKcp();
    const done = await finished(a, 'across-restart');
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', done.status?.conditions?.[0]?.message);
    assert.equal(done.status?.pipelineRun, `${NS}/${pr.metadata.name}`, 'the run it started before the restart');
    // Exactly one PipelineRun was ever made for it: the audit of creates is the controller's log.
    const creates = controller.lines.filter((l) => l.msg === 'PipelineRun created' && l.pipelineRun === `${NS}/${pr.metadata.name}`);
    assert.equal(creates.length, 1);
  });

  test('a workspace that unbinds the export stops being served: kcp deletes its requests, and what ran for them is stopped', async () => {
    const r = await create(c, 'unbound-later', TEAM, '', 'hold');
    await onlyPipelineRunOf(internalAdmin, r.metadata.uid!);
    await waitFor('Running', async () => (await phaseOf(c, 'unbound-later')) === 'Running', 60_000);
    await kcp.identities.admin.kubeConfig(c.path).makeApiClient(CustomObjectsApi).deleteClusterCustomObject({ group: 'apis.kcp.io', version: 'v1alpha2', plural: 'apibindings', name: 'appstudio.redhat.com' });
    // Nothing runs for it any more: its PipelineRun is cancelled and removed.
    await waitFor('its PipelineRun gone', async () => (await pipelineRunsFor(internalAdmin, r.metadata.uid!)).length === 0, 90_000, 500);
    assert.ok(controller.lines.some((l) => l.msg === 'PipelineRun cancelled' && String(l.request).startsWith(`${r.metadata.annotations?.['kcp.io/cluster'] ?? ''}/`)), 'cancelled as the run of a deleted request');
    // The other workspaces are still served.
    await create(b, 'after-unbind', TEAM, 'quay.io/org/b:2');
    assert.equal((await finished(b, 'after-unbind')).status?.conditions?.[0]?.reason, 'Succeeded');
  });
});
