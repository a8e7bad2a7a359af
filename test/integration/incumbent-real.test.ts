/**
 * The switch against the REAL Go controller (konflux-ci/internal-services,
 * built from its source by hack/incumbent/build.sh), each side in its
 * default namespace: the Go controller, its Lease and its runs in
 * internal-services-system (its kustomize default), this controller in
 * internal-services. Real kube-apiservers and real Tekton; pods simulated.
 *
 * The Go controller's source is not served by the module proxy, so a fresh
 * machine cannot build it: this file runs only with INCUMBENT_BIN set
 * (docs/migrating.md, "Tested"), and says so when it is not.
 *
 * - the way in: requests the Go controller started (running; ended while
 *   neither controller ran; deleted while neither ran), the Go controller
 *   killed mid-flight (its Lease still held): this controller waits for
 *   the Lease to run out, then follows each where its run is to its true
 *   outcome; one PipelineRun per request, counted from a watch.
 * - the Go controller back while this one serves (its process started
 *   again, taking its Lease): nothing is created, cancelled or deleted here
 *   while it runs (the internal apiserver's audit log, this controller's
 *   identity), /readyz fails naming the Lease; stopped, this controller
 *   resumes and follows what the Go controller started meanwhile.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { CustomObjectsApi, Watch, type KubeConfig } from '@kubernetes/client-node';
import { applyObjects, ensureNamespace, ensureServiceAccount, installProject, loadManifests, startEnvironment, type Environment } from '../../src/localenv/index.js';
import { repoRoot } from '../../src/util/repo.js';
import type { InternalRequest } from '../../src/api/types.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';
import { INCUMBENT_LABEL_NAME, INCUMBENT_LABEL_NAMESPACE } from '../../src/tekton/pipelinerun.js';
import { AuditReader, type AuditEvent } from '../../bench/audit.js';
import { holdPipeline, RealIncumbent } from './incumbent-stand-in.js';
import { IR, NS, setRunConfig, startController, waitFinished, waitFor, type ControllerProcess } from './helpers.js';

const BIN = process.env['INCUMBENT_BIN'];
const TENANT = NS;
const INC_NS = 'internal-services-system';
let env: Environment;
let internalAdmin: KubeConfig;
let remoteAdmin: KubeConfig;
let audit: AuditReader;
let controller: ControllerProcess | undefined;
let go: RealIncumbent | undefined;
const events: AuditEvent[] = [];
/** Every PipelineRun ever seen on the internal cluster: namespace/name → the request it is for (ours by uid label, the Go's by its two labels). */
const runs = new Map<string, string>();
let stopWatch: (() => void) | undefined;

const remote = () => remoteAdmin.makeApiClient(CustomObjectsApi);
const get = (name: string) => remote().getNamespacedCustomObject({ ...IR, namespace: TENANT, name }) as Promise<InternalRequest>;
const exists = (name: string) => get(name).then(() => true, (e: { code?: number }) => (e.code === 404 ? false : Promise.reject(e)));
const goRunOf = (name: string) => [...runs].find(([id, req]) => req === name && id.startsWith(`${INC_NS}/`))?.[0];
const perRequest = (names: string[]) => Object.fromEntries(names.map((n) => [n, [...runs.values()].filter((r) => r === n).length]));

/** A request as the Go controller's requesters write it: the cluster resolver by name alone (it appends namespace and kind). */
async function requestOf(name: string): Promise<InternalRequest> {
  return (await remote().createNamespacedCustomObject({
    ...IR,
    namespace: TENANT,
    body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name, namespace: TENANT }, spec: { pipeline: { pipelineRef: { resolver: 'cluster', params: [{ name: 'name', value: 'hold' }] } }, params: { image: name } } },
  })) as InternalRequest;
}

const finished = (name: string): Promise<InternalRequest> => waitFinished(remoteAdmin, TENANT, name);

async function release(id: string): Promise<void> {
  const [ns, name] = id.split('/');
  await waitFor(`a pod of ${id} to release`, async () => (await env.tekton!.kubelet!.releasePods(ns!, `tekton.dev/pipelineRun=${name}`)) > 0, 30_000);
}

/** This controller's writes to PipelineRuns since `mark` (audit log): creates, patches (a cancel), deletes. */
function ourRunWrites(mark: number): string[] {
  events.push(...audit.readNew());
  return events.slice(mark)
    .filter((e) => e.objectRef?.resource === 'pipelineruns' && ['create', 'patch', 'update', 'delete'].includes(e.verb ?? '') && e.user?.username === env.internal.identities.controller.username)
    .map((e) => `${e.verb} ${e.objectRef?.namespace}/${e.objectRef?.name ?? ''}`);
}

const startGo = async () => {
  go = new RealIncumbent(BIN!, { remoteKubeconfig: env.remote.identities.admin.kubeconfigPath, internalKubeconfig: env.internal.identities.admin.kubeconfigPath, namespace: INC_NS, leaderElection: true });
  await go.start();
};

before(async () => {
  if (!BIN) return;
  env = await startEnvironment({ tekton: true, audit: true });
  await installProject(env);
  internalAdmin = env.internal.identities.admin.kubeConfig();
  remoteAdmin = env.remote.identities.admin.kubeConfig();
  audit = new AuditReader('internal', env.internal.auditLogPath!);
  await ensureNamespace(remoteAdmin, TENANT);
  await ensureNamespace(internalAdmin, INC_NS);
  await ensureServiceAccount(internalAdmin, INC_NS, 'default');
  await applyObjects(internalAdmin, [holdPipeline()] as never);
  // This controller's configuration, and the Go controller's in its own namespace (its allowList, and the volumeClaim it requires).
  await setRunConfig(internalAdmin, { allowList: [TENANT], sources: { cluster: true } });
  await applyObjects(internalAdmin, [{ apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name: 'config', namespace: INC_NS }, spec: { allowList: [TENANT], volumeClaim: { name: 'workspace', size: '1Gi' } } }] as never);
  // The migration roles: the Go controller's runs in its namespace, its finalizer on the remote.
  await applyObjects(internalAdmin, loadManifests(join(repoRoot(), 'config', 'rbac', 'internal-incumbent')) as never);
  await applyObjects(remoteAdmin, loadManifests(join(repoRoot(), 'config', 'rbac', 'remote-incumbent')) as never);
  const w = await new Watch(internalAdmin).watch('/apis/tekton.dev/v1/pipelineruns', {}, (type: string, pr: PipelineRun) => {
    if (type !== 'ADDED') return;
    const l = pr.metadata.labels ?? {};
    const uid = l['internal-services.appstudio.redhat.com/request-uid'];
    runs.set(`${pr.metadata.namespace}/${pr.metadata.name}`, l[INCUMBENT_LABEL_NAME] && l[INCUMBENT_LABEL_NAMESPACE] === TENANT ? l[INCUMBENT_LABEL_NAME] : uid ? `uid:${uid}` : '?');
  }, () => undefined);
  stopWatch = () => w.abort();
}, { timeout: 600_000 });

after(async () => {
  stopWatch?.();
  await go?.stop('SIGKILL');
  await controller?.kill('SIGKILL');
  await env?.stop();
});

describe('switching from the REAL Go controller, each side in its default namespace (real Tekton, pods simulated)', { skip: BIN ? false : 'INCUMBENT_BIN is not set: the Go controller\'s source is not on the module proxy; build it with hack/incumbent/build.sh (docs/migrating.md)' }, () => {
  test('the way in: what it started is followed where its runs are, to the true outcome; one PipelineRun each', { timeout: 300_000 }, async () => {
    await startGo();
    const names = ['in-running', 'in-ended', 'in-deleted'];
    for (const n of names) await requestOf(n);
    // Waited for as the Go controller writes them: its run (by its labels) and its finalizer; status.pipelineRun may come later or not at all.
    for (const n of names) await waitFor(`the Go controller runs ${n}`, async () => goRunOf(n) !== undefined && ((await get(n)).metadata.finalizers?.length ?? 0) > 0, 60_000, 250);
    await go!.stop('SIGKILL'); // its pod killed: the Lease stays held until it runs out
    assert.deepEqual(go!.errors, []);
    console.log(`--- the Go controller (REAL, ${BIN}) before the switch ---\n${go!.log.join('\n')}\n---`);
    // While neither runs: one run ends, one request is deleted (the Go controller's finalizer holds it).
    await release(goRunOf('in-ended')!);
    await remote().deleteNamespacedCustomObject({ ...IR, namespace: TENANT, name: 'in-deleted' });

    const mark = (events.push(...audit.readNew()), events.length);
    controller = await startController(env);
    assert.equal((await finished('in-ended')).status?.conditions?.[0]?.reason, 'Succeeded');
    assert.deepEqual((await get('in-ended')).status?.results, { image: 'in-ended' });
    await waitFor('in-deleted gone, its run cancelled first', async () => !(await exists('in-deleted')), 60_000, 250);
    const running = await waitFor('in-running followed', async () => { const x = await get('in-running'); return x.status?.conditions?.[0]?.status === 'Unknown' && x.status.pipelineRun ? x : undefined; }, 60_000, 250);
    assert.equal(running.status?.pipelineRun, goRunOf('in-running'), 'followed where its run is');
    await release(goRunOf('in-running')!);
    const done = await finished('in-running');
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', done.status?.conditions?.[0]?.message);
    assert.deepEqual(done.status?.results, { image: 'in-running' });
    const writes = ourRunWrites(mark);
    const counts = perRequest(names);
    console.log(`real Go, default namespaces, the way in: PipelineRuns per request ${JSON.stringify(counts)}; this controller's writes to PipelineRuns: ${writes.join(', ')}`);
    assert.deepEqual(counts, { 'in-running': 1, 'in-ended': 1, 'in-deleted': 1 });
    assert.equal(writes.filter((w) => w.startsWith('create')).length, 0, 'none created here');
    assert.ok(writes.some((w) => w === `patch ${goRunOf('in-deleted')}`), `the deleted request's run cancelled where it is: ${writes.join(', ')}`);
  });

  test('the Go controller back while this one serves: nothing created, cancelled or deleted here while it runs; /readyz names its Lease; then everything goes on', { timeout: 300_000 }, async () => {
    assert.ok(controller);
    const ours = await requestOf('back-ours');
    const ourRun = await waitFor('back-ours runs here', async () => (await get('back-ours')).status?.pipelineRun, 30_000, 250);
    assert.equal(ourRun, `${NS}/ir-${ours.metadata.uid}`);
    const mark = (events.push(...audit.readNew()), events.length);
    await startGo(); // a GitOps resync brings its Deployment back: its pod takes the Lease
    const paused = await controller.waitForLog((l) => String(l['msg']).startsWith('pausing: the Go controller is back'), 30_000);
    const ready = await fetch(`http://127.0.0.1:${controller.healthPort}/readyz?verbose`);
    const body = await ready.text();
    assert.equal(ready.status, 503, body);
    assert.match(body, /\[-\]incumbent failed: .*internal-services-system\/b548bb9d\.redhat\.com.*is held by/);
    // While it runs: a new request arrives (the Go controller takes it), and this controller's run ends.
    await requestOf('back-while');
    await waitFor('the Go controller runs back-while', async () => goRunOf('back-while') !== undefined, 60_000, 250);
    await release(ourRun);
    await new Promise((r) => setTimeout(r, 8_000));
    const during = ourRunWrites(mark);
    console.log(`real Go back while serving: this controller's writes to PipelineRuns while it ran: [${during.join(', ')}]`);
    assert.deepEqual(during, [], 'no create, cancel or delete here while the Go controller runs');
    await go!.stop('SIGTERM');
    const resumed = await controller.waitForLog((l) => String(l['msg']).startsWith('resuming: the Go controller does not run'), 60_000);
    console.log(`held ${Date.parse(String(resumed['time'])) - Date.parse(String(paused['time']))} ms; the Go controller's log:\n${go!.log.join('\n')}`);
    assert.deepEqual(go!.errors, []);
    // Resumed: both end with their true outcome (every gated pod released from here on); back-while's run is the Go controller's, followed where it is.
    const resumedAt = (events.push(...audit.readNew()), events.length);
    const releaseAll = async () => { for (const ns of [NS, INC_NS]) await env.tekton!.kubelet!.releasePods(ns, 'tekton.dev/pipelineRun'); };
    for (const n of ['back-ours', 'back-while']) {
      const r = await waitFor(`${n} finished`, async () => { await releaseAll(); const x = await get(n); const reason = x.status?.conditions?.[0]?.reason; return reason && reason !== 'Running' ? x : undefined; }, 90_000, 500);
      assert.equal(r.status?.conditions?.[0]?.reason, 'Succeeded', `${n}: ${r.status?.conditions?.[0]?.message}`);
      assert.deepEqual(r.status?.results, { image: n });
    }
    const after = ourRunWrites(resumedAt);
    // back-ours's own run is this controller's (made before the Go controller came back); the Go controller, up, made one more
    // for it (it finds its runs by its labels only): the Go controller's doing, reported, not this controller's.
    const counts: Record<string, number> = { 'back-ours (here)': [...runs.values()].filter((v) => v === `uid:${ours.metadata.uid}`).length, 'back-ours (the Go controller\'s)': perRequest(['back-ours'])['back-ours']!, ...perRequest(['back-while']) };
    console.log(`real Go back while serving: PipelineRuns per request ${JSON.stringify(counts)} (runs: ${JSON.stringify([...runs].filter(([, v]) => v === 'back-while' || v === 'back-ours' || v === `uid:${ours.metadata.uid}`))}); this controller's writes after it went: [${after.join(', ')}]`);
    assert.equal(after.filter((w) => w.startsWith('create')).length, 0, 'nothing created here for what the Go controller started');
    assert.equal(counts['back-while'], 1, 'back-while: the Go controller\'s run only');
    assert.equal(counts['back-ours (here)'], 1, 'back-ours: one run made here, before the Go controller came back');
  });
});
