/**
 * Integration test of the test environment itself (src/localenv): real etcd
 * and kube-apiservers, real Tekton CRDs, the simulated Tekton executor.
 * Uses its own small config directory (a tiny CRD and RBAC) so it does not
 * depend on the project's manifests.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  VersionApi,
  type KubernetesObject,
} from '@kubernetes/client-node';
import {
  applyObjects,
  grantRequester,
  installProject,
  loadManifests,
  statusCode,
  startEnvironment,
  CONTROLLER_NAMESPACE,
  type Environment,
  SimulatedTektonExecutor,
  isTerminal,
  type TektonObject,
} from '../../src/localenv/index.js';

const run = promisify(execFile);

const FIXTURE_CRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.envtest.example.com
spec:
  group: envtest.example.com
  scope: Namespaced
  names: { plural: widgets, singular: widget, kind: Widget, listKind: WidgetList }
  versions:
    - name: v1alpha1
      served: true
      storage: true
      subresources: { status: {} }
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`;

const FIXTURE_REMOTE_RBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: internal-services-requester }
rules:
  - apiGroups: [envtest.example.com]
    resources: [widgets]
    verbs: [get, list, watch, create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: internal-services-remote }
rules:
  - apiGroups: [envtest.example.com]
    resources: [widgets]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: internal-services-remote }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: internal-services-remote }
subjects:
  - { kind: ServiceAccount, name: internal-services-controller, namespace: internal-services }
`;

const FIXTURE_INTERNAL_RBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: { name: internal-services-controller, namespace: internal-services }
rules:
  - apiGroups: [tekton.dev]
    resources: [pipelineruns]
    verbs: [get, list, watch, create, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: { name: internal-services-controller, namespace: internal-services }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: Role, name: internal-services-controller }
subjects:
  - { kind: ServiceAccount, name: internal-services-controller, namespace: internal-services }
`;

function writeFixtureConfig(): string {
  const dir = mkdtempSync(join(tmpdir(), 'envtest-fixture-config-'));
  mkdirSync(join(dir, 'crd', 'bases'), { recursive: true });
  mkdirSync(join(dir, 'rbac', 'remote'), { recursive: true });
  mkdirSync(join(dir, 'rbac', 'internal'), { recursive: true });
  writeFileSync(join(dir, 'crd', 'bases', 'widgets.yaml'), FIXTURE_CRD);
  // Not a Kubernetes object: loadManifests must skip it.
  writeFileSync(join(dir, 'crd', 'kustomization.yaml'), 'resources:\n  - bases/widgets.yaml\n');
  writeFileSync(join(dir, 'rbac', 'remote', 'rbac.yaml'), FIXTURE_REMOTE_RBAC);
  writeFileSync(join(dir, 'rbac', 'internal', 'rbac.yaml'), FIXTURE_INTERNAL_RBAC);
  return dir;
}

async function expectStatus(promise: Promise<unknown>, code: number): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.equal(statusCode(err), code, `expected HTTP ${code}, got ${String(err)}`);
    return true;
  });
}

async function eventually<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function condition(obj: TektonObject): Record<string, unknown> | undefined {
  const conds = obj.status?.['conditions'] as Array<Record<string, unknown>> | undefined;
  return conds?.find((c) => c['type'] === 'Succeeded');
}

const NS = 'pipelines';
const PIPELINE: KubernetesObject & Record<string, unknown> = {
  apiVersion: 'tekton.dev/v1',
  kind: 'Pipeline',
  metadata: { name: 'release', namespace: NS },
  spec: {
    params: [{ name: 'version', type: 'string' }],
    tasks: [
      { name: 'build', taskRef: { name: 'build-task' } },
      { name: 'test', runAfter: ['build'], taskRef: { name: 'test-task' } },
      { name: 'publish', runAfter: ['test'], taskRef: { name: 'publish-task' } },
    ],
    finally: [{ name: 'report', taskRef: { name: 'report-task' } }],
    results: [
      { name: 'digest', value: '$(tasks.build.results.digest)' },
      { name: 'images', type: 'array', value: '$(tasks.build.results.images[*])' },
      { name: 'meta', value: { url: '$(tasks.publish.results.url)', sha: '$(tasks.build.results.sha)' } },
    ],
  },
};

function pipelineRun(name: string, extraSpec: Record<string, unknown> = {}): KubernetesObject & Record<string, unknown> {
  return {
    apiVersion: 'tekton.dev/v1',
    kind: 'PipelineRun',
    metadata: { name, namespace: NS },
    spec: { pipelineRef: { name: 'release' }, params: [{ name: 'version', value: '1.2.3' }], ...extraSpec },
  };
}

describe('envtest environment', () => {
  let env: Environment | undefined;
  let fixtureDir: string | undefined;
  let internalAdmin: KubeConfig;
  let executor: SimulatedTektonExecutor;

  const e = (): Environment => {
    if (!env) throw new Error('environment did not start');
    return env;
  };

  before(async () => {
    env = await startEnvironment({ audit: true, log: (m) => console.log(m) });
    console.log(`envtest startup: ${env.startupMs} ms (dir ${env.dir})`);
    fixtureDir = writeFixtureConfig();
    const t0 = Date.now();
    await installProject(env, { configDir: fixtureDir, log: (m) => console.log(m) });
    console.log(`installProject: ${Date.now() - t0} ms`);
    internalAdmin = env.internal.identities.admin.kubeConfig();
    executor = new SimulatedTektonExecutor(internalAdmin, (m) => console.log(m));
  });

  after(async () => {
    await env?.stop();
    if (fixtureDir) rmSync(fixtureDir, { recursive: true, force: true });
  });

  it('serves both clusters at the pinned Kubernetes version', async () => {
    for (const plane of [e().remote, e().internal]) {
      const info = await plane.identities.admin.kubeConfig().makeApiClient(VersionApi).getCode();
      assert.equal(info.gitVersion, e().assets.kubernetesVersion, plane.name);
    }
    assert.notEqual(e().remote.url, e().internal.url);
  });

  it('writes kubeconfig files that kubectl accepts (trusting the serving cert)', async () => {
    const kubectl = join(e().assets.binDir, 'kubectl');
    const { stdout } = await run(kubectl, ['--kubeconfig', e().internal.identities.admin.kubeconfigPath, 'get', 'namespace', CONTROLLER_NAMESPACE, '-o', 'name']);
    assert.equal(stdout.trim(), `namespace/${CONTROLLER_NAMESPACE}`);
    const kc = new KubeConfig();
    kc.loadFromFile(e().remote.identities.admin.kubeconfigPath);
    assert.equal(kc.getCurrentCluster()?.skipTLSVerify ?? false, false);
    await kc.makeApiClient(CoreV1Api).readNamespace({ name: CONTROLLER_NAMESPACE });
  });

  it('applies an object whose API is served only a moment later (a CRD still being established), and gives up on one never served', async () => {
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'gadgets.late.example.com' },
      spec: {
        group: 'late.example.com',
        scope: 'Cluster',
        names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    };
    const gadget = { apiVersion: 'late.example.com/v1', kind: 'Gadget', metadata: { name: 'g1' } };
    const t0 = Date.now();
    const applying = applyObjects(internalAdmin, [gadget] as never, { servedWithinMs: 30_000 });
    await new Promise((r) => setTimeout(r, 1500));
    await applyObjects(internalAdmin, [crd] as never);
    const [stored] = await applying;
    assert.equal(stored?.metadata?.name, 'g1');
    assert.ok(Date.now() - t0 >= 1500, 'it waited for the API');
    await assert.rejects(applyObjects(internalAdmin, [{ apiVersion: 'never.example.com/v1', kind: 'Nothing', metadata: { name: 'x' } }] as never, { servedWithinMs: 1000 }), /create Nothing x failed \(HTTP 404\): 404 page not found/);
    // A group version that is served, without the kind: also waited for, then refused.
    await assert.rejects(applyObjects(internalAdmin, [{ apiVersion: 'late.example.com/v1', kind: 'Widget', metadata: { name: 'x' } }] as never, { servedWithinMs: 1000 }), /create Widget x failed: Unrecognized API version and kind: late\.example\.com\/v1 Widget/);
  });

  it('keeps the two clusters isolated', async () => {
    const remote = e().remote.identities.admin.kubeConfig().makeApiClient(CoreV1Api);
    const internal = internalAdmin.makeApiClient(CoreV1Api);
    await remote.createNamespace({ body: { metadata: { name: 'only-on-remote' } } });
    await remote.readNamespace({ name: 'only-on-remote' });
    await expectStatus(internal.readNamespace({ name: 'only-on-remote' }), 404);
  });

  it('authorizes with RBAC: outsider forbidden, admin allowed, audit log records both', async () => {
    const outsider = e().remote.identities.outsider;
    assert.ok(outsider);
    await expectStatus(outsider.kubeConfig().makeApiClient(CoreV1Api).listNamespace(), 403);
    const list = await e().remote.identities.admin.kubeConfig().makeApiClient(CoreV1Api).listNamespace();
    assert.ok(list.items.some((n) => n.metadata?.name === CONTROLLER_NAMESPACE));

    const auditPath = e().remote.auditLogPath;
    assert.ok(auditPath);
    const events = readFileSync(auditPath, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { user: { username: string }; verb: string; objectRef?: { resource?: string }; responseStatus?: { code?: number } });
    assert.ok(
      events.some((ev) => ev.user.username === 'outsider' && ev.verb === 'list' && ev.objectRef?.resource === 'namespaces' && ev.responseStatus?.code === 403),
      'audit log has the forbidden list',
    );
  });

  it('installs the config dir: CRDs on both clusters, RBAC for controller and requester', async () => {
    const remote = e().remote;
    const widgetsOf = (kc: KubeConfig, namespace?: string): Promise<unknown> => {
      const api = kc.makeApiClient(CustomObjectsApi);
      const base = { group: 'envtest.example.com', version: 'v1alpha1', plural: 'widgets' };
      return namespace ? api.listNamespacedCustomObject({ ...base, namespace }) : api.listClusterCustomObject(base);
    };
    await widgetsOf(internalAdmin); // the project CRDs are on the internal cluster too
    await widgetsOf(remote.identities.controller.kubeConfig()); // ClusterRoleBinding to the ServiceAccount user

    const requester = remote.identities.requester;
    assert.ok(requester);
    await expectStatus(widgetsOf(requester.kubeConfig(), 'team-a'), 403);
    await grantRequester(e(), 'team-a');
    await grantRequester(e(), 'team-a'); // idempotent
    await widgetsOf(requester.kubeConfig(), 'team-a');
    await expectStatus(widgetsOf(requester.kubeConfig(), 'team-b'), 403);

    const controller = e().internal.identities.controller.kubeConfig().makeApiClient(CustomObjectsApi);
    const prs = { group: 'tekton.dev', version: 'v1', plural: 'pipelineruns' };
    await controller.listNamespacedCustomObject({ ...prs, namespace: CONTROLLER_NAMESPACE });
    await expectStatus(controller.listNamespacedCustomObject({ ...prs, namespace: 'default' }), 403);

    // Re-applying the same manifests replaces rather than fails.
    await applyObjects(internalAdmin, loadManifests(join(fixtureDir ?? '', 'rbac', 'internal')));
  });

  it('accepts tekton.dev/v1 Pipelines and PipelineRuns; executor succeed path', async () => {
    await applyObjects(internalAdmin, [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }, PIPELINE, pipelineRun('ok-1')]);

    const running = await executor.markRunning(NS, 'ok-1');
    assert.deepEqual(
      { ...condition(running), lastTransitionTime: undefined },
      { type: 'Succeeded', status: 'Unknown', reason: 'Running', message: 'Tasks Completed: 0 (Failed: 0, Cancelled 0), Skipped: 0', lastTransitionTime: undefined },
    );
    assert.equal(typeof running.status?.['startTime'], 'string');

    await executor.succeed(NS, 'ok-1', {
      digest: 'sha256:abc',
      images: ['a:1', 'b:1'],
      meta: { url: 'https://example.com/x', sha: 'abc' },
    });
    const pr = await executor.getPipelineRun(NS, 'ok-1'); // read back from the server
    const cond = condition(pr);
    assert.equal(cond?.['status'], 'True');
    assert.equal(cond?.['reason'], 'Succeeded');
    assert.equal(cond?.['message'], 'Tasks Completed: 4 (Failed: 0, Cancelled 0), Skipped: 0');
    assert.equal(pr.status?.['startTime'], running.status?.['startTime']);
    assert.equal(typeof pr.status?.['completionTime'], 'string');
    assert.deepEqual(pr.status?.['results'], [
      { name: 'digest', value: 'sha256:abc' },
      { name: 'images', value: ['a:1', 'b:1'] },
      { name: 'meta', value: { url: 'https://example.com/x', sha: 'abc' } },
    ]);
    assert.deepEqual(
      pr.status?.['childReferences'],
      ['build', 'test', 'publish', 'report'].map((t) => ({ apiVersion: 'tekton.dev/v1', kind: 'TaskRun', name: `ok-1-${t}`, pipelineTaskName: t })),
    );

    const tr = (await internalAdmin.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
      group: 'tekton.dev',
      version: 'v1',
      namespace: NS,
      plural: 'taskruns',
      name: 'ok-1-build',
    })) as TektonObject;
    assert.equal(tr.metadata?.ownerReferences?.[0]?.uid, pr.metadata?.uid);
    assert.equal(tr.metadata?.labels?.['tekton.dev/pipelineRun'], 'ok-1');
    assert.deepEqual(tr.spec, { taskRef: { name: 'build-task' } });
    assert.equal(condition(tr)?.['status'], 'True');
  });

  it('executor fail path', async () => {
    await applyObjects(internalAdmin, [pipelineRun('bad-1')]);
    await executor.fail(NS, 'bad-1', { failedTasks: ['test'], succeededTasks: ['build'] });
    const pr = await executor.getPipelineRun(NS, 'bad-1');
    const cond = condition(pr);
    assert.equal(cond?.['status'], 'False');
    assert.equal(cond?.['reason'], 'Failed');
    assert.equal(cond?.['message'], 'Tasks Completed: 2 (Failed: 1, Cancelled 0), Skipped: 1');
    assert.deepEqual(
      (pr.status?.['childReferences'] as Array<{ name: string }>).map((c) => c.name),
      ['bad-1-build', 'bad-1-test'],
    );
    assert.deepEqual(pr.status?.['skippedTasks'], [{ name: 'publish', reason: 'PipelineRun was stopping' }]);
    assert.equal(pr.status?.['results'], undefined);
    const tr = (await internalAdmin.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
      group: 'tekton.dev',
      version: 'v1',
      namespace: NS,
      plural: 'taskruns',
      name: 'bad-1-test',
    })) as TektonObject;
    assert.equal(condition(tr)?.['status'], 'False');
    assert.equal(condition(tr)?.['reason'], 'Failed');

    await applyObjects(internalAdmin, [pipelineRun('bad-2')]);
    await executor.fail(NS, 'bad-2', { reason: 'PipelineRunTimeout', message: 'timed out', failedTasks: [] });
    const pr2 = await executor.getPipelineRun(NS, 'bad-2');
    assert.equal(condition(pr2)?.['reason'], 'PipelineRunTimeout');
    assert.equal(condition(pr2)?.['message'], 'timed out');
  });

  it('auto mode completes new runs deterministically and honours cancellation', async () => {
    await applyObjects(internalAdmin, [pipelineRun('before-auto')]);
    const auto = executor.startAuto({ namespace: NS, delayMs: 50 });
    try {
      await applyObjects(internalAdmin, [pipelineRun('auto-1'), pipelineRun('auto-2', { status: 'Cancelled' })]);
      const done = async (name: string): Promise<TektonObject> =>
        eventually(`${name} to finish`, async () => {
          const pr = await executor.getPipelineRun(NS, name);
          return isTerminal(pr) ? pr : undefined;
        });
      const [before1, auto1, auto2] = await Promise.all([done('before-auto'), done('auto-1'), done('auto-2')]);
      assert.equal(condition(before1)?.['reason'], 'Succeeded');
      assert.equal(condition(auto1)?.['reason'], 'Succeeded');
      const params = '{"version":"1.2.3"}';
      assert.deepEqual(auto1.status?.['results'], [
        { name: 'digest', value: `digest:${params}` },
        { name: 'images', value: [`images[0]:${params}`] },
        { name: 'meta', value: { sha: `meta.sha:${params}`, url: `meta.url:${params}` } },
      ]);
      assert.equal(condition(auto2)?.['status'], 'False');
      assert.equal(condition(auto2)?.['reason'], 'Cancelled');
      // Already-finished runs are left alone.
      const bad1 = await executor.getPipelineRun(NS, 'bad-1');
      assert.equal(condition(bad1)?.['reason'], 'Failed');
    } finally {
      await auto.stop();
    }
    assert.ok(auto.completed >= 3);
  });

  it('stops and restarts the remote apiserver on the same URL', async () => {
    const remote = e().remote;
    const url = remote.url;
    const core = remote.identities.admin.kubeConfig().makeApiClient(CoreV1Api);
    const t0 = Date.now();
    await remote.stopApiserver();
    const t1 = Date.now();
    await assert.rejects(core.readNamespace({ name: 'only-on-remote' }));
    // The internal cluster keeps working meanwhile.
    await internalAdmin.makeApiClient(CoreV1Api).readNamespace({ name: CONTROLLER_NAMESPACE });
    await remote.startApiserver();
    console.log(`remote apiserver stop ${t1 - t0} ms, restart ${Date.now() - t1} ms`);
    assert.equal(remote.url, url);
    // Same kubeconfig (token, CA) still works; data survived (it lives in etcd).
    await core.readNamespace({ name: 'only-on-remote' });
  });
});

describe('envtest with several remote clusters', () => {
  let env3: Environment | undefined;
  after(async () => {
    await env3?.stop();
  });

  it('remotes: 2 starts a second remote apiserver with its own data and identities; installProject and grantRequester serve every remote', async () => {
    env3 = await startEnvironment({ remotes: 2 });
    assert.deepEqual(env3.remotes.map((r) => r.name), ['remote', 'remote-2']);
    assert.equal(env3.remotes[0], env3.remote);
    const second = env3.remotes[1]!;
    assert.notEqual(second.url, env3.remote.url);
    await installProject(env3, { tekton: false });
    await grantRequester(env3, 'team-x', second);
    // The requester may create a request on the second remote; it is not on the first.
    const req = { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name: 'on-two', namespace: 'team-x' }, spec: { request: 'p' } };
    await second.identities.requester!.kubeConfig().makeApiClient(CustomObjectsApi).createNamespacedCustomObject({ group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalrequests', namespace: 'team-x', body: req });
    const first = env3.remote.identities.admin.kubeConfig().makeApiClient(CustomObjectsApi);
    await assert.rejects(first.getNamespacedCustomObject({ group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalrequests', namespace: 'team-x', name: 'on-two' }), (e: unknown) => statusCode(e) === 404);
    // The controller identity exists there too, with the remote RBAC.
    const list = await second.identities.controller.kubeConfig().makeApiClient(CustomObjectsApi).listClusterCustomObject({ group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalrequests' });
    assert.equal((list as { items: unknown[] }).items.length, 1);
  });
});
