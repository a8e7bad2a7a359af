/**
 * The Go controller (konflux-ci/internal-services) after the switch, while
 * this controller serves (issue 52). Real kube-apiservers and real Tekton
 * (pods simulated); the Go controller's installation and writes are a
 * STAND-IN of what its source makes (as in incumbent.test.ts: its Deployment
 * and Lease by the names of its manifests, its PipelineRun of
 * tekton/pipeline_run.go, its finalizer and MarkRunning).
 *
 * - "never both, all the time": its Deployment scaled back up (and its
 *   Lease taken) mid-serving holds every action: counted from a watch of
 *   every PipelineRun on the internal cluster and of every request on the
 *   remote, nothing is created, cancelled, deleted or finished while it is
 *   up; /readyz fails naming it; scaled down again, everything goes on.
 * - "where the Go controller's runs are": each controller in its default
 *   namespace (this one in internal-services, the Go controller and its run
 *   in internal-services-system): without the migration role the request
 *   waits, naming the right to grant; with it, it is followed to its true
 *   outcome with exactly one PipelineRun.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { AppsV1Api, CoordinationV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, Watch, type KubeConfig } from '@kubernetes/client-node';
import { applyObjects, ensureNamespace, ensureServiceAccount, installProject, loadManifests, startEnvironment, type Environment } from '../../src/localenv/index.js';
import { repoRoot } from '../../src/util/repo.js';
import type { InternalRequest } from '../../src/api/types.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';
import { INCUMBENT_FINALIZER } from '../../src/requests/incumbent.js';
import { INCUMBENT_LABEL_NAME, INCUMBENT_LABEL_NAMESPACE } from '../../src/tekton/pipelinerun.js';
import { holdPipeline } from './incumbent-stand-in.js';
import { IR, NS, PR, releaseRun, setRunConfig, startController, waitFor, type ControllerProcess } from './helpers.js';

const TENANT = NS;
const INC_NS = 'internal-services-system';
const DEPLOYMENT = 'internal-services-controller-manager';
const LEASE = 'b548bb9d.redhat.com';
let env: Environment;
let internalAdmin: KubeConfig;
let remoteAdmin: KubeConfig;
let controller: ControllerProcess | undefined;
let standby: ControllerProcess | undefined;

const remote = () => remoteAdmin.makeApiClient(CustomObjectsApi);
const internal = () => internalAdmin.makeApiClient(CustomObjectsApi);
const get = (name: string) => remote().getNamespacedCustomObject({ ...IR, namespace: TENANT, name }) as Promise<InternalRequest>;
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const micro = (d = new Date()) => d.toISOString().replace(/Z$/, '000Z');
const readyz = async () => {
  const r = await fetch(`http://127.0.0.1:${controller!.healthPort}/readyz?verbose`);
  return { status: r.status, body: await r.text() };
};

async function requestOf(name: string, finalizers?: string[]): Promise<InternalRequest> {
  return (await remote().createNamespacedCustomObject({
    ...IR,
    namespace: TENANT,
    body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name, namespace: TENANT, ...(finalizers ? { finalizers } : {}) }, spec: { pipeline: { pipelineRef: { resolver: 'cluster', params: [{ name: 'kind', value: 'pipeline' }, { name: 'name', value: 'hold' }, { name: 'namespace', value: NS }] } }, params: { image: name } } },
  })) as InternalRequest;
}

/** Every PipelineRun of the internal cluster and its request's reason, by name, from watches: what was created, deleted, cancelled, finished since `from()`. */
async function watchAll() {
  const events: string[] = [];
  const w = new Watch(internalAdmin);
  const spec = new Map<string, string | undefined>();
  const prs = await w.watch('/apis/tekton.dev/v1/pipelineruns', {}, (type: string, pr: PipelineRun) => {
    const id = `${pr.metadata.namespace}/${pr.metadata.name}`;
    if (type === 'ADDED' && !spec.has(id)) events.push(`created ${id}`);
    if (type === 'DELETED') events.push(`deleted ${id}`);
    if (type === 'MODIFIED' && pr.spec.status === 'Cancelled' && spec.get(id) !== 'Cancelled') events.push(`cancelled ${id}`);
    spec.set(id, pr.spec.status);
  }, () => undefined);
  const reasons = new Map<string, string | undefined>();
  const reqs = await new Watch(remoteAdmin).watch(`/apis/appstudio.redhat.com/v1alpha1/namespaces/${TENANT}/internalrequests`, {}, (_type: string, r: InternalRequest) => {
    const reason = r.status?.conditions?.[0]?.reason;
    const prev = reasons.get(r.metadata.name!);
    reasons.set(r.metadata.name!, reason);
    if (prev !== reason && reason && reason !== 'Running') events.push(`finished ${r.metadata.name} ${reason}`);
  }, () => undefined);
  return { events, stop: () => { prs.abort(); reqs.abort(); } };
}

before(async () => {
  env = await startEnvironment({ tekton: true });
  await installProject(env);
  internalAdmin = env.internal.identities.admin.kubeConfig();
  remoteAdmin = env.remote.identities.admin.kubeConfig();
  await ensureNamespace(remoteAdmin, TENANT);
  await ensureNamespace(internalAdmin, INC_NS);
  await ensureServiceAccount(internalAdmin, INC_NS, 'default');
  await applyObjects(internalAdmin, [holdPipeline()] as never);
  await setRunConfig(internalAdmin, { allowList: [TENANT], sources: { cluster: true } });
  // STAND-IN for the Go controller's installation, scaled to 0 before the switch; its Lease long run out.
  await applyObjects(internalAdmin, [
    { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: DEPLOYMENT, namespace: INC_NS }, spec: { replicas: 0, selector: { matchLabels: { 'control-plane': 'controller-manager' } }, template: { metadata: { labels: { 'control-plane': 'controller-manager' } }, spec: { containers: [{ name: 'manager', image: 'quay.io/konflux-ci/internal-services:stand-in' }] } } } },
    { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: LEASE, namespace: INC_NS }, spec: { holderIdentity: 'internal-services-controller-manager-6b9f7_1c2d', leaseDurationSeconds: 15, renewTime: micro(new Date(Date.now() - 3_600_000)), acquireTime: micro(new Date(Date.now() - 7_200_000)) } },
  ] as never);
}, { timeout: 600_000 });

after(async () => {
  await standby?.kill('SIGKILL');
  await controller?.kill('SIGKILL');
  await env?.stop();
});

describe('the Go controller while this one serves (stand-in of its installation and writes; real Tekton, pods simulated)', () => {
  test('never both, all the time: its Deployment scaled back up holds every action (nothing created, cancelled, deleted or finished, counted from watches); /readyz names it; scaled down, everything goes on', { timeout: 300_000 }, async () => {
    // Two replicas, as a Deployment with leader election runs them: the standby's /readyz follows the Go controller too.
    const elect = ['--leader-elect', '--lease-duration', '4s', '--renew-deadline', '3s', '--retry-period', '500ms'];
    controller = await startController(env, elect);
    await controller.waitForLog((l) => l.msg === 'became leader');
    standby = await startController(env, elect, { workers: false });
    await standby!.waitForLog((l) => l.msg === 'waiting to become leader');
    const readyzOf = async (c: ControllerProcess) => { const r = await fetch(`http://127.0.0.1:${c.healthPort}/readyz?verbose`); return r.text(); };
    const running = await requestOf('before-back');
    const runName = await waitFor('before-back runs', async () => (await get('before-back')).status?.pipelineRun?.split('/')[1], 30_000, 250);
    const watched = await watchAll();
    try {
      // A GitOps resync puts the Go controller's Deployment back; its pod takes the Lease.
      await internalAdmin.makeApiClient(AppsV1Api).patchNamespacedDeployment({ namespace: INC_NS, name: DEPLOYMENT, body: { spec: { replicas: 1 } } }, merge);
      await internalAdmin.makeApiClient(CoordinationV1Api).patchNamespacedLease({ namespace: INC_NS, name: LEASE, body: { spec: { holderIdentity: 'internal-services-controller-manager-6b9f7_9z9z', renewTime: micro(), acquireTime: micro() } } }, merge);
      const paused = await controller.waitForLog((l) => String(l['msg']).startsWith('pausing: the Go controller is back'), 15_000);
      // Paused at the first change it saw (the Deployment); /readyz names each part as it is read.
      const r = await waitFor('/readyz names the Lease too', async () => { const x = await readyz(); return /is held by/.test(x.body) ? x : undefined; }, 10_000, 200);
      assert.equal(r.status, 503, r.body);
      assert.match(r.body, /\[-\]incumbent failed: .*Deployment internal-services-system\/internal-services-controller-manager has 1 replica\(s\) asked for/);
      assert.match(r.body, /\[-\]incumbent failed: .*is held by "internal-services-controller-manager-6b9f7_9z9z"/);
      await waitFor('the standby\'s /readyz names it too', async () => /\[-\]incumbent failed: .*has 1 replica/.test(await readyzOf(standby!)), 15_000, 200);
      const from = watched.events.length;
      // While it is up: a new request arrives, and the running request's run ends.
      const fresh = await requestOf('while-back');
      await releaseRun(env, runName);
      await waitFor('before-back\'s run ends', async () => ((await internal().getNamespacedCustomObject({ ...PR, namespace: NS, name: runName })) as PipelineRun).status?.conditions?.some((c) => c.type === 'Succeeded' && c.status === 'True'), 30_000, 250);
      await new Promise((res) => setTimeout(res, 8_000));
      const during = watched.events.slice(from);
      assert.deepEqual(during, [], 'no create, cancel, delete or finishing status write while the Go controller is up');
      assert.equal((await get('while-back')).status, undefined, 'the new request is not touched');
      assert.equal((await get('before-back')).status?.conditions?.[0]?.reason, 'Running', 'its outcome is not written while held');
      assert.ok(await internal().getNamespacedCustomObject({ ...PR, namespace: NS, name: runName }), 'its run is not deleted');

      // Scaled down again, its Lease released: the controller resumes.
      await internalAdmin.makeApiClient(AppsV1Api).patchNamespacedDeployment({ namespace: INC_NS, name: DEPLOYMENT, body: { spec: { replicas: 0 } } }, merge);
      await internalAdmin.makeApiClient(CoordinationV1Api).patchNamespacedLease({ namespace: INC_NS, name: LEASE, body: { spec: { holderIdentity: '' } } }, merge);
      const resumed = await controller.waitForLog((l) => String(l['msg']).startsWith('resuming: the Go controller does not run'), 15_000);
      assert.match((await readyz()).body, /\[\+\]incumbent ok/);
      await waitFor('the standby\'s /readyz clear again', async () => /\[\+\]incumbent ok/.test(await readyzOf(standby!)), 15_000, 200);
      assert.equal(standby!.lines.filter((l) => l.msg === 'PipelineRun created' || l.msg === 'became leader').length, 0, 'the standby did nothing');
      await standby!.kill('SIGTERM');
      const done = await waitFor('before-back finished', async () => { const x = await get('before-back'); return x.status?.conditions?.[0]?.reason === 'Succeeded' ? x : undefined; }, 30_000, 250);
      assert.deepEqual(done.status?.results, { image: 'before-back' });
      const freshRun = await waitFor('while-back runs', async () => (await get('while-back')).status?.pipelineRun?.split('/')[1], 30_000, 250);
      await releaseRun(env, freshRun);
      await waitFor('while-back finished', async () => (await get('while-back')).status?.conditions?.[0]?.reason === 'Succeeded', 30_000, 250);
      const created = watched.events.slice(from).filter((e) => e.startsWith('created ')).length;
      console.log(`incumbent back while serving: held ${Date.parse(String(resumed['time'])) - Date.parse(String(paused['time']))} ms; while up: ${during.length} PipelineRuns created, cancelled or deleted, 0 requests finished; after: ${watched.events.slice(from).join(', ')}`);
      assert.equal(created, 1, `one PipelineRun made since it came back, for while-back, after it went: ${watched.events.slice(from).join(', ')}`);
      assert.ok(watched.events.slice(from).includes(`created ${NS}/ir-${fresh.metadata.uid}`), 'the one made is while-back\'s');
      void running;
    } finally {
      watched.stop();
    }
  });

  test('where the Go controller\'s runs are: its run in internal-services-system is followed to its true outcome, one PipelineRun; without the migration role the request waits, naming it', { timeout: 300_000 }, async () => {
    assert.ok(controller);
    const watched = await watchAll();
    try {
      // STAND-IN for the Go controller before the switch, in its own namespace: its finalizer (with the request, so that
      // no reconcile sees it without), its run there, MarkRunning, status.pipelineRun.
      const req = await requestOf('go-there', [INCUMBENT_FINALIZER]);
      const run = (await internal().createNamespacedCustomObject({
        ...PR,
        namespace: INC_NS,
        body: {
          apiVersion: 'tekton.dev/v1',
          kind: 'PipelineRun',
          metadata: { generateName: 'internalrequest-', namespace: INC_NS, labels: { [INCUMBENT_LABEL_NAME]: 'go-there', [INCUMBENT_LABEL_NAMESPACE]: TENANT, 'pipelines.appstudio.openshift.io/type': 'release' } },
          spec: { params: [{ name: 'image', value: 'go-there' }], pipelineRef: { resolver: 'cluster', params: [{ name: 'kind', value: 'pipeline' }, { name: 'name', value: 'hold' }, { name: 'namespace', value: NS }] }, taskRunTemplate: {} },
        },
      })) as PipelineRun;
      const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      await remote().patchNamespacedCustomObjectStatus({ ...IR, namespace: TENANT, name: 'go-there', body: { status: { startTime: now, conditions: [{ type: 'Succeeded', status: 'False', reason: 'Running', message: '', lastTransitionTime: now }] } } }, merge);
      await remote().patchNamespacedCustomObjectStatus({ ...IR, namespace: TENANT, name: 'go-there', body: { status: { pipelineRun: `${INC_NS}/${run.metadata.name}` } } }, merge);

      // Without the migration role its namespace cannot be listed: the request waits, naming the right; it is neither Failed nor run again.
      const waiting = await waitFor('go-there waits', async () => { const x = await get('go-there'); return /cannot be listed/.test(x.status?.conditions?.[1]?.message ?? '') ? x : undefined; }, 30_000, 250);
      assert.deepEqual([waiting.status?.conditions?.[0]?.status, waiting.status?.conditions?.[0]?.reason], ['Unknown', 'Running']);
      assert.match(waiting.status?.conditions?.[1]?.message ?? '', /internal-services-system .*config\/rbac\/internal-incumbent/);

      // The migration role; the controller started again (its list of that namespace backs off meanwhile).
      await applyObjects(internalAdmin, loadManifests(join(repoRoot(), 'config', 'rbac', 'internal-incumbent')) as never);
      await controller.kill('SIGTERM');
      controller = await startController(env);
      const followed = await waitFor('go-there followed', async () => { const x = await get('go-there'); return x.status?.conditions?.[1]?.reason === 'Running' ? x : undefined; }, 30_000, 250);
      assert.equal(followed.status?.pipelineRun, `${INC_NS}/${run.metadata.name}`);
      await waitFor(`a pod of ${run.metadata.name} to release`, async () => (await env.tekton!.kubelet!.releasePods(INC_NS, `tekton.dev/pipelineRun=${run.metadata.name}`)) > 0, 30_000);
      const done = await waitFor('go-there finished', async () => { const x = await get('go-there'); const reason = x.status?.conditions?.[0]?.reason; return reason && reason !== 'Running' ? x : undefined; }, 60_000, 250);
      assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', done.status?.conditions?.[0]?.message);
      assert.deepEqual(done.status?.results, { image: 'go-there' });
      await waitFor('its run removed, where it is', async () => watched.events.includes(`deleted ${INC_NS}/${run.metadata.name}`), 30_000, 250);
      await waitFor('its finalizer released', async () => !(await get('go-there')).metadata.finalizers?.length, 30_000, 250).catch(() => undefined);
      const created = watched.events.filter((e) => e.startsWith('created '));
      console.log(`incumbent run in ${INC_NS}: ${req.metadata.name} followed to ${done.status?.conditions?.[0]?.reason}; PipelineRuns created: ${created.join(', ')}; events: ${watched.events.join(', ')}`);
      assert.deepEqual(created, [`created ${INC_NS}/${run.metadata.name}`], 'exactly one PipelineRun: the Go controller\'s');
    } finally {
      watched.stop();
    }
  });
});
