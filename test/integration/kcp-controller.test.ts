/**
 * The controller serving a REAL sharded kcp through ONE kubeconfig: the
 * provider workspace's, through kcp's front-proxy, as the controller's own
 * non-admin identity (config/kcp/provider RBAC), with `--kcp-kubeconfig`.
 * kcp runs two shards (root and shard-1), its cache server and its
 * front-proxy (src/localenv/real/kcp-sharded.ts); the tenant workspaces are
 * placed on both shards explicitly. Requests run on the internal cluster's
 * REAL Tekton (pods simulated), and their outcome is written back into the
 * workspace they came from, whichever shard holds it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import {
  applyObjects, bindExport, createWorkspace, ensureNamespace, grantKcpRequester, installKcpProvider, installProject, startEnvironment, startShardedKcp,
  shardOfWorkspace, SHARD_LABEL, KCP_PROVIDER_PATH,
  type Environment, type GitRepository, type KcpWorkspace, type ShardedKcp,
  startTogether,
} from '../../src/localenv/index.js';
import type { InternalRequest } from '../../src/api/types.js';
import { AuditReader } from '../../bench/audit.js';
import { ANNOTATION_WORKSPACE, LABEL_REQUEST_REMOTE } from '../../src/tekton/pipelinerun.js';
import { IR, NS, onlyPipelineRunOf, pipelineRunsFor, releaseRun, runKcpController, runPlugin, sample, scrape, setRunConfig, simulatedStep, testPipeline, waitFor, type ControllerProcess } from './helpers.js';

const TEAM = 'team';
const FINAL = ['Succeeded', 'Failed', 'Rejected'];
let env: Environment;
let kcp: ShardedKcp;
let internalAdmin: KubeConfig;
let catalog: GitRepository;
/** On the root shard. */
let a: KcpWorkspace;
/** On shard-1. */
let b: KcpWorkspace;
/** On shard-1; it unbinds, binds again, then is deleted, in the test that says so. */
let c: KcpWorkspace;
/** On the root shard: bound, but not on the allowList. */
let d: KcpWorkspace;
/** On shard-1: not bound. */
let e: KcpWorkspace;
let controller: ControllerProcess;
let metricsPort: number;
let healthPort: number;
/** The logical clusters of a and b, as the first test found them. */
const clusters: string[] = [];

const requester = (ws: KcpWorkspace) => kcp.identities.requester.kubeConfig(ws.path).makeApiClient(CustomObjectsApi);
const create = (ws: KcpWorkspace, name: string, namespace: string, image: string, pipeline = 'sign-image', labels?: Record<string, string>) =>
  requester(ws).createNamespacedCustomObject({ ...IR, namespace, body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name, namespace, ...(labels ? { labels } : {}) }, spec: { request: pipeline, ...(pipeline === 'sign-image' ? { params: { image } } : {}) } } }) as Promise<InternalRequest>;
const phaseOf = async (ws: KcpWorkspace, name: string) => (await get(ws, name)).status?.conditions?.find((x) => x.type === 'Progressing')?.reason;
const get = (ws: KcpWorkspace, name: string, namespace = TEAM) => requester(ws).getNamespacedCustomObject({ ...IR, namespace, name }) as Promise<InternalRequest>;
const finished = (ws: KcpWorkspace, name: string, namespace = TEAM, timeoutMs = 90_000) =>
  waitFor(`${ws.path} ${namespace}/${name} finished`, async () => {
    const r = await get(ws, name, namespace);
    return FINAL.includes(r.status?.conditions?.[0]?.reason ?? '') ? r : undefined;
  }, timeoutMs);
const readyz = async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz?verbose`)).text();
const shardHost = (name: string) => new URL(kcp.shards.find((s) => s.name === name)!.url).host;

const gitRef = (url: string, revision: string, pathInRepo: string) => ({ resolver: 'git', params: [{ name: 'url', value: url }, { name: 'revision', value: revision }, { name: 'pathInRepo', value: pathInRepo }] });

before(async () => {
  [env, kcp] = await startTogether(startEnvironment({ tekton: true, audit: true }), startShardedKcp({ shards: 2 }));
  await installProject(env);
  internalAdmin = env.internal.identities.admin.kubeConfig();
  // Today's shape, as release tooling sends it: a git-resolved Pipeline whose Task comes from $(params.taskGitUrl).
  catalog = await env.tekton!.git.repository('catalog');
  await catalog.commit(
    {
      'pipelines/sign.yaml': stringify({
        apiVersion: 'tekton.dev/v1',
        kind: 'Pipeline',
        metadata: { name: 'sign' },
        spec: {
          params: [{ name: 'image' }, { name: 'taskGitUrl' }, { name: 'taskGitRevision' }],
          results: [{ name: 'signature', value: '$(tasks.sign.results.signature)' }],
          tasks: [{ name: 'sign', params: [{ name: 'image', value: '$(params.image)' }], taskRef: gitRef('$(params.taskGitUrl)', '$(params.taskGitRevision)', 'tasks/sign.yaml') }],
        },
      }),
      'tasks/sign.yaml': stringify({ apiVersion: 'tekton.dev/v1', kind: 'Task', metadata: { name: 'sign' }, spec: { params: [{ name: 'image' }], results: [{ name: 'signature' }], steps: [simulatedStep('sign', { SIMULATED_RESULT_signature: 'signed:$(params.image)' })] } }),
    },
    'the catalog',
  );
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
  await setRunConfig(internalAdmin, {
    allowList: ['root:team-a', 'root:team-b', 'root:team-c'].map((p) => `${p}/${TEAM}`),
    sources: { git: [{ urls: [catalog.url], revisions: ['main'], commits: { reachable: true }, paths: ['pipelines/**', 'tasks/**'] }], resolutionTimeout: '30s' },
  });
  // The provider workspace on the root shard; the tenants placed on both.
  await createWorkspace(kcp, KCP_PROVIDER_PATH, 90_000, { label: SHARD_LABEL, value: 'root' });
  await installKcpProvider(kcp);
  const place: Array<[string, string]> = [['a', 'root'], ['b', 'shard-1'], ['c', 'shard-1'], ['d', 'root'], ['e', 'shard-1']];
  [a, b, c, d, e] = (await Promise.all(place.map(([x, shard]) => createWorkspace(kcp, `root:team-${x}`, 90_000, { label: SHARD_LABEL, value: shard })))) as [KcpWorkspace, KcpWorkspace, KcpWorkspace, KcpWorkspace, KcpWorkspace];
  for (const ws of [a, b, c, d, e]) {
    if (ws !== e) await bindExport(kcp, ws.path);
    for (const ns of [TEAM, 'other']) await ensureNamespace(kcp.identities.admin.kubeConfig(ws.path), ns);
    await grantKcpRequester(kcp, ws.path);
  }
  controller = runKcpController(env, kcp, ['--metrics-bind-address', '127.0.0.1:0', '--kcp-refresh-interval', '2s', '--kcp-unbind-grace', '3s']);
  await controller.waitForLog((l) => l.msg === 'caches synced', 90_000);
  metricsPort = Number(String((await controller.waitForLog((l) => l.msg === 'serving metrics')).address).split(':').pop());
  healthPort = Number(String((await controller.waitForLog((l) => l.msg === 'serving health probes')).address).split(':').pop());
}, { timeout: 900_000 });

after(async () => {
  await controller?.kill('SIGKILL');
  await Promise.all([kcp?.stop(), env?.stop()]);
});

describe('the controller on a sharded kcp (real kcp: two shards, cache server, front-proxy; real Tekton, pods simulated)', () => {
  test('the workspaces are on both shards, and the export lists one virtual workspace per shard: the controller serves both', async () => {
    assert.deepEqual(await Promise.all([a, b, c, d, e].map((w) => shardOfWorkspace(kcp, w.path))), ['root', 'shard-1', 'shard-1', 'root', 'shard-1']);
    const serving = await waitFor('both shards served', async () => {
      const l = controller.lines.filter((x) => x.msg === 'kcp: serving the workspaces of a shard that bind the export');
      return l.length >= 2 ? l : undefined;
    }, 60_000);
    assert.deepEqual(new Set(serving.map((l) => l.shard)), new Set([shardHost('root'), shardHost('shard-1')]));
  });

  test('one namespace and name in a workspace on each shard: two requests, two runs, each outcome written into its own workspace', async () => {
    // The same idempotency key too: idempotency is per workspace, so neither follows the other.
    const key = { 'internal-services.appstudio.redhat.com/idempotency-key': 'release-1' };
    await create(a, 'build-1', TEAM, 'quay.io/org/a:1', 'sign-image', key);
    await create(b, 'build-1', TEAM, 'quay.io/org/b:1', 'sign-image', key);
    const [da, db] = await Promise.all([finished(a, 'build-1'), finished(b, 'build-1')]);
    assert.equal(da.status?.conditions?.[0]?.reason, 'Succeeded', da.status?.conditions?.[0]?.message);
    assert.equal(db.status?.conditions?.[0]?.reason, 'Succeeded', db.status?.conditions?.[0]?.message);
    assert.deepEqual(da.status?.results, { signed: 'signed quay.io/org/a:1' });
    assert.deepEqual(db.status?.results, { signed: 'signed quay.io/org/b:1' });
    assert.notEqual(da.status?.pipelineRun, db.status?.pipelineRun);
    const clusterA = da.metadata.annotations?.['kcp.io/cluster'];
    const clusterB = db.metadata.annotations?.['kcp.io/cluster'];
    assert.ok(clusterA && clusterB && clusterA !== clusterB, `two logical clusters (${clusterA}, ${clusterB})`);
    const added = controller.lines.filter((l) => l.msg === 'remote cluster added');
    const line = (id: string) => added.find((l) => l.remote === id);
    assert.deepEqual([clusterA, clusterB].map((id) => line(id)?.workspace), ['root:team-a', 'root:team-b'], `both served, logged with their paths: ${JSON.stringify(added)}`);
    // Each from its own shard's virtual workspace.
    assert.ok(String(line(clusterA)?.server).startsWith(kcp.shards[0]!.url), `team-a through the root shard: ${String(line(clusterA)?.server)}`);
    assert.ok(String(line(clusterB)?.server).startsWith(kcp.shards[1]!.url), `team-b through shard-1: ${String(line(clusterB)?.server)}`);
    clusters.push(clusterA, clusterB);
  });

  test('a namespace the configuration does not allow is Rejected, with a message naming its workspace by path', async () => {
    await create(b, 'outside', 'other', 'quay.io/org/b:2');
    const done = await finished(b, 'outside', 'other');
    assert.equal(done.status?.conditions?.[0]?.reason, 'Rejected');
    assert.match(done.status?.conditions?.[0]?.message ?? '', /namespace "other" on remote "root:team-b"/);
    await assert.rejects(get(a, 'outside', 'other'), (err: { code?: number }) => err.code === 404);
  });

  test('a workspace that binds the export but is not on the allowList is Rejected, named by its path, its Event in its workspace; one that does not bind it has no such API', async () => {
    await create(d, 'not-allowed', TEAM, 'quay.io/org/d:1');
    const done = await finished(d, 'not-allowed');
    assert.equal(done.status?.conditions?.[0]?.reason, 'Rejected');
    assert.match(done.status?.conditions?.[0]?.message ?? '', /namespace "team" on remote "root:team-d" is not on the allowList/);
    const ev = await waitFor('the Rejected Event in root:team-d', async () => {
      const list = await kcp.identities.admin.kubeConfig(d.path).makeApiClient(CoreV1Api).listNamespacedEvent({ namespace: TEAM });
      return list.items.find((x) => x.involvedObject.name === 'not-allowed' && x.reason === 'Rejected');
    });
    assert.equal(ev.type, 'Warning');
    await assert.rejects(create(e, 'no-api', TEAM, 'quay.io/org/e:1'), (err: { code?: number }) => err.code === 404);
  });

  test('metric labels stay bounded: workspaces are counted under "kcp", shards by host:port; /readyz has a line per shard', async () => {
    assert.equal(clusters.length, 2, 'an earlier test found the workspaces');
    const text = await waitFor('the finished requests counted', async () => {
      const t = await scrape(metricsPort);
      return (sample(t, 'internal_request_attempt_total', { remote: 'kcp', reason: 'Succeeded' }) ?? 0) >= 2 ? t : undefined;
    });
    for (const cl of clusters) assert.ok(!text.includes(cl), `no series names workspace ${cl}`);
    assert.equal(sample(text, 'internal_services_remote_up', { remote: 'kcp' }), 1);
    for (const s of ['root', 'shard-1']) assert.equal(sample(text, 'internal_services_kcp_shard_up', { shard: shardHost(s) }), 1, `shard ${s} up`);
    // Bound: a and d on the root shard, b and c on shard-1 (e does not bind).
    assert.equal(sample(text, 'internal_services_kcp_workspaces', { shard: shardHost('root') }), 2);
    assert.equal(sample(text, 'internal_services_kcp_workspaces', { shard: shardHost('shard-1') }), 2);
    const r = await readyz();
    for (const s of ['root', 'shard-1']) assert.match(r, new RegExp(`\\[\\+\\]kcp/appstudio\\.redhat\\.com/shard/${shardHost(s).replace(/\./g, '\\.')} ok`), r);
  });

  test('requesters inside a workspace, through the front-proxy: the kubectl plugin, kubectl get/wait, and the release tooling\'s git request waiting on conditions[0].reason', async () => {
    const kubeconfig = kcp.identities.requester.writeKubeconfig(b.path);
    assert.match(kcp.workspaceUrl(b.path), /^https:\/\/127\.0\.0\.1:\d+\/clusters\/root:team-b$/);
    // The plugin: create, wait, print results.
    const made = await runPlugin(['create', 'sign-image', 'image=quay.io/org/b:plugin', '-n', TEAM, '--name', 'by-plugin'], kubeconfig);
    assert.equal(made.code, 0, made.stderr);
    assert.deepEqual(JSON.parse(made.stdout), { signed: 'signed quay.io/org/b:plugin' }, made.stdout);
    // kubectl: the release tooling's create-and-wait flow, a spec.pipeline git request with taskGitUrl.
    const kubectl = join(env.assets.binDir, 'kubectl');
    const run = (args: string[]) => promisify(execFile)(kubectl, ['--kubeconfig', kubeconfig, ...args]);
    const manifest = join(kcp.dir, 'release-request.yaml');
    writeFileSync(manifest, stringify({
      apiVersion: 'appstudio.redhat.com/v1alpha1',
      kind: 'InternalRequest',
      metadata: { name: 'release-sign', namespace: TEAM },
      spec: { pipeline: { pipelineRef: gitRef(catalog.url, 'main', 'pipelines/sign.yaml') }, params: { image: 'quay.io/org/b@sha256:1', taskGitUrl: catalog.url, taskGitRevision: 'main' } },
    }));
    await run(['create', '-f', manifest]);
    await run(['wait', '--for=jsonpath={.status.conditions[0].reason}=Succeeded', '-n', TEAM, 'internalrequest/release-sign', '--timeout=120s']);
    const { stdout } = await run(['get', '-n', TEAM, 'internalrequest', 'release-sign', '-o', 'jsonpath={.status.results.signature}']);
    assert.equal(stdout, 'signed:quay.io/org/b@sha256:1');
    const listed = await run(['get', '-n', TEAM, 'internalrequests']);
    assert.match(listed.stdout, /release-sign/);
  });

  test('one shard stopped mid-run: the other shard\'s workspaces are served meanwhile; started again, nothing lost and one PipelineRun per request', async () => {
    const onB = await create(b, 'across-shard-stop', TEAM, '', 'hold');
    const pr = await onlyPipelineRunOf(internalAdmin, onB.metadata.uid!);
    assert.equal(pr.metadata.labels?.[LABEL_REQUEST_REMOTE], clusters[1]);
    assert.equal(pr.metadata.annotations?.[ANNOTATION_WORKSPACE], 'root:team-b');
    await waitFor('Running', async () => (await phaseOf(b, 'across-shard-stop')) === 'Running', 60_000);
    const shard1 = kcp.shards[1]!;
    await shard1.stop();
    const down = await controller.waitForLog((l) => l.msg === 'kcp: shard not serving; its workspaces wait, the other shards are served' && l.shard === shardHost('shard-1'), 90_000);
    assert.ok(down.why, 'says why');
    // Meanwhile the root shard's workspaces are served.
    await create(a, 'while-shard-1-down', TEAM, 'quay.io/org/a:3');
    const meanwhile = await finished(a, 'while-shard-1-down');
    assert.equal(meanwhile.status?.conditions?.[0]?.reason, 'Succeeded', meanwhile.status?.conditions?.[0]?.message);
    const text = await scrape(metricsPort);
    assert.equal(sample(text, 'internal_services_kcp_shard_up', { shard: shardHost('shard-1') }), 0);
    assert.equal(sample(text, 'internal_services_kcp_shard_up', { shard: shardHost('root') }), 1);
    assert.match(await readyz(), new RegExp(`\\[-\\]kcp/appstudio\\.redhat\\.com/shard/${shardHost('shard-1').replace(/\./g, '\\.')} `));
    // The run ends while its shard is down; the shard comes back.
    await releaseRun(env, pr.metadata.name!);
    await shard1.start();
    await controller.waitForLog((l) => l.msg === 'kcp: shard serving again' && l.shard === shardHost('shard-1'), 90_000);
    const done = await finished(b, 'across-shard-stop', TEAM, 120_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', done.status?.conditions?.[0]?.message);
    assert.equal(done.status?.pipelineRun, `${NS}/${pr.metadata.name}`, 'the run it started before the stop');
    // Exactly one PipelineRun was ever made for each, by the internal apiserver's audit log (the chaos tool's evidence) and by the controller's log.
    const audit = new AuditReader('internal', env.internal.auditLogPath!).readNew();
    for (const r of [done, meanwhile]) {
      const name = r.status!.pipelineRun!.split('/')[1];
      const created = audit.filter((e) => e.verb === 'create' && e.objectRef?.resource === 'pipelineruns' && e.objectRef?.name === name && e.responseStatus?.code === 201);
      assert.equal(created.length, 1, `${r.metadata.name}: one PipelineRun created, by the audit log`);
      const logged = controller.lines.filter((l) => l.msg === 'PipelineRun created' && l.pipelineRun === r.status?.pipelineRun);
      assert.equal(logged.length, 1, `${r.metadata.name}: one create in the controller's log`);
    }
  });

  test('a workspace that unbinds the export: its run is stopped and the workspace forgotten without a restart; bound again, it is served again; deleted, it is forgotten', async () => {
    const r = await create(c, 'unbound-later', TEAM, '', 'hold');
    const lc = r.metadata.annotations?.['kcp.io/cluster'] ?? (await get(c, 'unbound-later')).metadata.annotations?.['kcp.io/cluster'];
    await onlyPipelineRunOf(internalAdmin, r.metadata.uid!);
    await waitFor('Running', async () => (await phaseOf(c, 'unbound-later')) === 'Running', 60_000);
    const before = controller.lines.length;
    await kcp.identities.admin.kubeConfig(c.path).makeApiClient(CustomObjectsApi).deleteClusterCustomObject({ group: 'apis.kcp.io', version: 'v1alpha2', plural: 'apibindings', name: 'appstudio.redhat.com' });
    // Nothing runs for it any more: its PipelineRun is cancelled and removed.
    await waitFor('its PipelineRun gone', async () => (await pipelineRunsFor(internalAdmin, r.metadata.uid!)).length === 0, 90_000, 500);
    assert.ok(controller.lines.some((l) => l.msg === 'PipelineRun cancelled' && String(l.request).startsWith(`${lc}/`)), 'cancelled as the run of a deleted request');
    // Forgotten: the remote removed, the shard's count down, without a restart.
    await controller.waitForLog((l) => l.msg === 'kcp: workspace forgotten' && l.cluster === lc, 30_000);
    assert.ok(controller.lines.slice(before).some((l) => String(l.msg).startsWith('remote cluster removed') && l.remote === lc), 'its remote removed');
    const counted = async (n: number) => (sample(await scrape(metricsPort), 'internal_services_kcp_workspaces', { shard: shardHost('shard-1') }) === n ? true : undefined);
    await waitFor('shard-1 serves one workspace (b)', () => counted(1), 20_000);
    // The other workspaces are still served.
    await create(b, 'after-unbind', TEAM, 'quay.io/org/b:2');
    assert.equal((await finished(b, 'after-unbind')).status?.conditions?.[0]?.reason, 'Succeeded');

    // Bound again: served again.
    await bindExport(kcp, c.path);
    await waitFor('shard-1 serves two workspaces again', () => counted(2), 60_000);
    await waitFor('the API back in root:team-c', async () => {
      await create(c, 'rebound', TEAM, 'quay.io/org/c:1');
      return true;
    }, 60_000, 1000);
    assert.equal((await finished(c, 'rebound')).status?.conditions?.[0]?.reason, 'Succeeded');

    // Deleted: forgotten.
    const mark = controller.lines.length;
    await kcp.identities.admin.kubeConfig('root').makeApiClient(CustomObjectsApi).deleteClusterCustomObject({ group: 'tenancy.kcp.io', version: 'v1alpha1', plural: 'workspaces', name: 'team-c' });
    await waitFor('root:team-c forgotten after its deletion', async () => controller.lines.slice(mark).find((l) => l.msg === 'kcp: workspace forgotten' && l.cluster === lc), 120_000, 500);
    await waitFor('shard-1 serves one workspace', () => counted(1), 20_000);
  });

  test('the last binding on a shard goes: kcp drops the shard\'s URL from the slice; the workspace goes through the unbind grace (its run stopped, not orphaned), then is forgotten and the shard let go', async () => {
    // shard-1 holds b (bound), e (not bound); c was deleted above: unbinding b leaves shard-1 no binding.
    const r = await create(b, 'last-on-shard', TEAM, '', 'hold');
    await onlyPipelineRunOf(internalAdmin, r.metadata.uid!);
    await waitFor('Running', async () => (await phaseOf(b, 'last-on-shard')) === 'Running', 60_000);
    const mark = controller.lines.length;
    await kcp.identities.admin.kubeConfig(b.path).makeApiClient(CustomObjectsApi).deleteClusterCustomObject({ group: 'apis.kcp.io', version: 'v1alpha2', plural: 'apibindings', name: 'appstudio.redhat.com' });
    const removed = await controller.waitForLog((l) => l.msg === 'kcp: shard endpoint removed from the endpoint slice; its workspaces are handed over or served for the unbind grace, then forgotten' && l.shard === shardHost('shard-1'), 90_000);
    // The run of the deleted request is stopped, whichever the controller saw first (the deletes or the URL leaving).
    await waitFor('its PipelineRun gone', async () => (await pipelineRunsFor(internalAdmin, r.metadata.uid!)).length === 0, 90_000, 500);
    assert.ok(controller.lines.slice(mark).some((l) => l.msg === 'PipelineRun cancelled' && String(l.request).startsWith(`${clusters[1]}/`)), 'cancelled as the run of a deleted request');
    const forgotten = await controller.waitForLog((l) => l.msg === 'kcp: workspace forgotten' && l.cluster === clusters[1], 30_000);
    const unbound = controller.lines.slice(mark).find((l) => l.msg === 'kcp: a workspace unbound the export (or was deleted); its requests are gone, it is forgotten after the grace period' && l.cluster === clusters[1]);
    const at = (l: { time?: unknown }) => Date.parse(String(l.time));
    const from = Math.min(at(removed), at(unbound ?? removed));
    assert.ok(at(forgotten) - from >= 2_800, `forgotten after the unbind grace (3 s), not at once: ${at(forgotten) - from} ms`);
    await waitFor('shard-1 let go: no readiness line, no metric series', async () => !(await readyz()).includes(`/shard/${shardHost('shard-1')} `) && sample(await scrape(metricsPort), 'internal_services_kcp_shard_up', { shard: shardHost('shard-1') }) === undefined, 30_000, 500);
    // The root shard's workspaces are served on.
    await create(a, 'after-shard-1-left', TEAM, 'quay.io/org/a:9');
    assert.equal((await finished(a, 'after-shard-1-left')).status?.conditions?.[0]?.reason, 'Succeeded');
  });
});
