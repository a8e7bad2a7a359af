/**
 * The request flow on two real control planes (kube-apiserver + etcd), with
 * the controller running as its real CLI process under the project's RBAC,
 * and REAL Tekton (controller, resolvers, webhook) running the PipelineRuns;
 * only the TaskRun pods are simulated (src/localenv/simulated/kubelet.ts). Steps that
 * must wait for the test use SIMULATED_DURATION=gate and releaseRun().
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CoreV1Api, Watch, type KubeConfig } from '@kubernetes/client-node';
import {
  startEnvironment,
  type Environment,
  applyObjects,
  ensureServiceAccount,
  grantRequester,
  installProject,
  SimulatedTektonExecutor,
} from '../../src/localenv/index.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';
import type { InternalRequestSpec } from '../../src/api/types.js';
import { TODAYS_PAYLOAD } from '../unit/fixtures.js';
import { pino } from 'pino';
import { Controller } from '../../src/controller/controller.js';
import { KubeconfigRemote } from '../../src/remotes/kubeconfig.js';
import { connect } from '../../src/kube/client.js';
import {
  api, createRequest, getRequest, IR, NS, pipelineRunsFor, reasonOf, releaseRun, simulatedStep, startController, testPipeline, waitFor, waitForPhase, type ControllerProcess,
  onlyPipelineRunOf, setRunConfig, setRunConfigAndWait,
} from './helpers.js';

const ALLOWED = ['team-a', 'team-b', 'team-c'];
let env: Environment;
let remoteAdmin: KubeConfig;
let internalAdmin: KubeConfig;
let requester: KubeConfig;
let controller: ControllerProcess | undefined;

const pipelines = [
  // Gated: each run ends when the test calls releaseRun().
  testPipeline('sign', {
    params: [{ name: 'image', type: 'string' }, { name: 'note', type: 'string', default: '' }, { name: 'tags', type: 'array', default: [] }],
    workspaces: [{ name: 'workspace' }],
    results: [
      { name: 'signature', value: '$(tasks.sign.results.signature)' },
      { name: 'list', type: 'array', value: '$(tasks.sign.results.list[*])' },
      { name: 'obj', type: 'object', value: '$(tasks.sign.results.obj[*])' },
    ],
    tasks: [
      {
        name: 'sign',
        workspaces: [{ name: 'out', workspace: 'workspace' }],
        taskSpec: {
          workspaces: [{ name: 'out' }],
          results: [{ name: 'signature' }, { name: 'list', type: 'array' }, { name: 'obj', type: 'object', properties: { k: { type: 'string' } } }],
          steps: [simulatedStep('sign', { SIMULATED_DURATION: 'gate', SIMULATED_RESULT_signature: 'sig-ü', SIMULATED_RESULT_list: '["a","b"]', SIMULATED_RESULT_obj: '{"k":"v"}' })],
        },
      },
    ],
  }),
  // `fail: "true"` fails the sign task; `hold` is how long its step runs ("gate", "never", "1s").
  testPipeline('build-and-sign', {
    params: [{ name: 'fail', type: 'string', default: 'false' }, { name: 'hold', type: 'string', default: '100ms' }],
    tasks: [
      { name: 'build', taskSpec: { steps: [simulatedStep('b')] } },
      {
        name: 'sign',
        runAfter: ['build'],
        params: [{ name: 'fail', value: '$(params.fail)' }, { name: 'hold', value: '$(params.hold)' }],
        taskSpec: { params: [{ name: 'fail' }, { name: 'hold' }], steps: [simulatedStep('s', { SIMULATED_FAIL: '$(params.fail)', SIMULATED_DURATION: '$(params.hold)' })] },
      },
    ],
  }),
];

const setConfig = (spec: Record<string, unknown>): Promise<void> => setRunConfig(internalAdmin, spec);
const theOnlyPipelineRun = (uid: string): Promise<PipelineRun> => onlyPipelineRunOf(internalAdmin, uid);

async function events(namespace: string, name: string): Promise<string[]> {
  const core = remoteAdmin.makeApiClient(CoreV1Api);
  const list = await core.listNamespacedEvent({ namespace });
  return list.items.filter((e) => e.involvedObject.name === name).map((e) => `${e.type}/${e.reason}`).sort();
}

before(async () => {
  env = await startEnvironment({ tekton: true });
  await installProject(env);
  remoteAdmin = env.remote.identities.admin.kubeConfig();
  internalAdmin = env.internal.identities.admin.kubeConfig();
  requester = env.remote.identities.requester!.kubeConfig();
  for (const ns of [...ALLOWED, 'outside']) await grantRequester(env, ns);
  await applyObjects(internalAdmin, pipelines as never);
  await setConfig({ allowList: ALLOWED, allowedServiceAccounts: ['signer'] });
  await ensureServiceAccount(internalAdmin, NS, 'signer');
});

after(async () => {
  await controller?.kill('SIGKILL');
  await env?.stop();
});

describe('the API, enforced by the real apiserver', () => {
  test('InternalServicesConfig: defaults filled in, invalid values refused', async () => {
    await applyObjects(internalAdmin, [{ apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name: 'defaults', namespace: NS }, spec: {} } as never]);
    const got = (await api(internalAdmin).getNamespacedCustomObject({ group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalservicesconfigs', namespace: NS, name: 'defaults' })) as { spec: Record<string, unknown> };
    assert.deepEqual(got.spec, {
      debug: false,
      volumeClaim: { name: 'workspace', size: '1Gi' },
      limits: { maxParamValueBytes: 262144, maxParamsBytes: 524288 },
      timeouts: { allowNoTimeout: false, maximum: '24h' },
    });
    const bad = [
      { limits: { maxParamsBytes: 2_000_000 } },
      { timeouts: { maximum: 'forever' } },
      { rules: [{ namespaces: ['a'], params: { patterns: [{ name: 'x', pattern: '(' }] } }] },
      { rules: [{ namespaces: ['a'], onRevoke: 'later' }] },
      { rules: [{ pipelines: ['x'] }] },
      { volumeClaim: { size: 'lots' } },
      { allowList: ['Not_A_Namespace'] },
      { allowedServiceAccounts: ['UPPER'] },
      { debug: 'yes' },
    ];
    for (const spec of bad) {
      await assert.rejects(
        api(internalAdmin).createNamespacedCustomObject({ group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalservicesconfigs', namespace: NS, body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { generateName: 'bad-' }, spec } }),
        (e: { code?: number }) => e.code === 422,
        JSON.stringify(spec),
      );
    }
  });

  test('InternalRequest: invalid specs refused; spec immutable', async () => {
    const bad: unknown[] = [{}, { request: 'Bad Name' }, { request: 'p', timeouts: { pipeline: '1 hour' } }, { request: 'p', serviceAccount: 'Not-OK' }, { request: 'p', params: { a: 1 } }];
    for (const spec of bad) {
      await assert.rejects(
        api(requester).createNamespacedCustomObject({ ...IR, namespace: 'outside', body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { generateName: 'bad-' }, spec } }),
        (e: { code?: number }) => e.code === 422,
        JSON.stringify(spec),
      );
    }
    // Exactly one of spec.request or spec.pipeline; a pipelineRef names a Pipeline or a resolver, not both.
    const refused = async (spec: unknown, message: RegExp): Promise<void> => {
      await assert.rejects(
        api(requester).createNamespacedCustomObject({ ...IR, namespace: 'outside', body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { generateName: 'bad-' }, spec } }),
        (e: { code?: number; body?: string }) => e.code === 422 && message.test(String(e.body)),
        JSON.stringify(spec),
      );
    };
    const either = /give exactly one of spec.request \(the name of a Pipeline installed in the controller's namespace\) or spec.pipeline \(a pipelineRef\)/;
    await refused({ params: { a: 'b' } }, either);
    await refused({ request: 'sign', pipeline: { pipelineRef: { name: 'sign' } } }, either);
    await refused({ pipeline: { pipelineRef: { name: 'sign', resolver: 'git' } } }, /pipelineRef needs exactly one of name .* or resolver/);
    await refused({ pipeline: { pipelineRef: {} } }, /pipelineRef needs exactly one of name .* or resolver/);
    await refused({ pipeline: { pipelineRef: { name: 'sign', params: [{ name: 'url', value: 'u' }] } } }, /pipelineRef.params are the resolver's params: they need pipelineRef.resolver/);
    // Today's payload is stored as sent.
    const today = (await api(requester).createNamespacedCustomObject({ ...IR, namespace: 'outside', body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name: 'todays-shape' }, spec: TODAYS_PAYLOAD } })) as { spec: unknown };
    assert.deepEqual(today.spec, TODAYS_PAYLOAD);

    const r = await createRequest(requester, 'outside', 'immutable', { request: 'sign', params: { image: 'a' } });
    await assert.rejects(
      api(remoteAdmin).replaceNamespacedCustomObject({ ...IR, namespace: 'outside', name: 'immutable', body: { ...r, spec: { request: 'other' } } }),
      (e: { code?: number; body?: string }) => e.code === 422 && String(e.body).includes('spec is immutable'),
    );
  });

  test('a requester cannot fake its own success; an outsider cannot request at all', async () => {
    const r = await createRequest(requester, 'outside', 'faker', { request: 'sign', params: { image: 'a' } });
    await assert.rejects(
      api(requester).replaceNamespacedCustomObjectStatus({ ...IR, namespace: 'outside', name: 'faker', body: { ...r, status: { conditions: [{ type: 'Succeeded', status: 'True', reason: 'Succeeded', message: 'fake', lastTransitionTime: '2026-01-01T00:00:00Z' }] } } }),
      (e: { code?: number }) => e.code === 403,
    );
    // status sent with create or update of the main resource is dropped by the apiserver
    const withStatus = (await api(requester).createNamespacedCustomObject({ ...IR, namespace: 'outside', body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name: 'faker2' }, spec: { request: 'sign' }, status: { results: { signature: 'forged' } } } })) as { status?: unknown };
    assert.equal(withStatus.status, undefined);
    await assert.rejects(createRequest(env.remote.identities.outsider!.kubeConfig(), 'team-a', 'x', { request: 'sign' }), (e: { code?: number }) => e.code === 403);
    // and a requester is limited to the namespaces it was granted
    await grantRequester(env, 'not-granted').catch(() => undefined);
    await assert.rejects(createRequest(requester, 'default', 'x', { request: 'sign' }), (e: { code?: number }) => e.code === 403);
  });
});

describe('the request flow (real Tekton, pods simulated)', () => {
  before(async () => {
    controller = await startController(env);
  });

  test('allowed request: one PipelineRun with params, timeouts, service account, workspace; Running; results back; PipelineRun removed', async () => {
    const r = await createRequest(requester, 'team-a', 'sign-1', {
      request: 'sign',
      params: { image: 'quay.io/org/app@sha256:abc', tags: '["v1","latest"]' },
      timeouts: { pipeline: '1h', tasks: '45m', finally: '15m' },
      serviceAccount: 'signer',
    });
    const pr = await theOnlyPipelineRun(r.metadata.uid!);
    assert.equal(pr.metadata.name, `ir-${r.metadata.uid}`);
    assert.deepEqual(pr.spec.pipelineRef, { name: 'sign' });
    assert.deepEqual(pr.spec.params, [{ name: 'image', value: 'quay.io/org/app@sha256:abc' }, { name: 'tags', value: ['v1', 'latest'] }]);
    // As stored: Tekton's webhook writes durations in Go's canonical form.
    assert.deepEqual(pr.spec.timeouts, { pipeline: '1h0m0s', tasks: '45m0s', finally: '15m0s' });
    assert.deepEqual(pr.spec.taskRunTemplate, { serviceAccountName: 'signer' });
    assert.equal(pr.spec.workspaces?.length, 1);
    assert.equal(pr.spec.workspaces?.[0]?.name, 'workspace');
    assert.deepEqual((pr.spec.workspaces?.[0]?.volumeClaimTemplate as { spec?: unknown } | undefined)?.spec, { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } });
    assert.equal(pr.metadata.annotations?.['internal-services.appstudio.redhat.com/request-name'], 'sign-1');
    assert.equal(pr.metadata.labels?.['internal-services.appstudio.redhat.com/request-namespace'], 'team-a');

    const running = await waitForPhase(requester, 'team-a', 'sign-1', ['Running']);
    assert.equal(running.status?.conditions?.[0]?.status, 'Unknown');
    assert.equal(running.status?.pipelineRun, `${NS}/${pr.metadata.name}`);
    assert.ok(running.status?.startTime);

    await releaseRun(env, pr.metadata.name!);
    const done = await waitForPhase(requester, 'team-a', 'sign-1', ['Succeeded'], 30_000);
    assert.equal(done.status?.conditions?.[0]?.status, 'True');
    assert.deepEqual(done.status?.results, { signature: 'sig-ü', list: '["a","b"]', obj: '{"k":"v"}' });
    assert.ok(done.status?.completionTime);
    await waitFor('the PipelineRun to be deleted', async () => (await pipelineRunsFor(internalAdmin, r.metadata.uid!)).length === 0);
    // Routine successes are not Events by default (--events all adds them; test/integration/operations.test.ts).
    assert.deepEqual((await events('team-a', 'sign-1')).filter((e) => e.startsWith('Normal/')), []);
  });

  test('rejections: namespace not allowed, no such Pipeline, params, service account — each with a message, no PipelineRun', async () => {
    const cases: Array<{ ns: string; name: string; spec: InternalRequestSpec; msg: RegExp }> = [
      { ns: 'outside', name: 'not-allowed', spec: { request: 'sign', params: { image: 'x' } }, msg: /namespace "outside" on remote "default" is not on the allowList of InternalServicesConfig internal-services\/config/ },
      { ns: 'team-a', name: 'no-pipeline', spec: { request: 'does-not-exist' }, msg: /no Pipeline named "does-not-exist" in namespace "internal-services"/ },
      { ns: 'team-a', name: 'bad-params', spec: { request: 'sign', params: { nope: '1' } }, msg: /missing required params: "image"; undeclared params: "nope"/ },
      { ns: 'team-a', name: 'bad-sa', spec: { request: 'sign', params: { image: 'x' }, serviceAccount: 'root' }, msg: /serviceAccount "root" is not allowed .* allowed: "signer"/ },
    ];
    for (const c of cases) {
      const r = await createRequest(requester, c.ns, c.name, c.spec);
      const got = await waitForPhase(requester, c.ns, c.name, ['Rejected', 'Running']);
      assert.equal(reasonOf(got), 'Rejected', c.name);
      assert.equal(got.status?.conditions?.[0]?.status, 'False', c.name);
      assert.match(got.status?.conditions?.[0]?.message ?? '', c.msg, c.name);
      assert.equal((await pipelineRunsFor(internalAdmin, r.metadata.uid!)).length, 0, c.name);
      await waitFor(`Rejected event of ${c.name}`, async () => (await events(c.ns, c.name)).includes('Warning/Rejected'));
    }
  });

  test('an allowed service account with no ServiceAccount on the internal cluster: Rejected before anything runs, naming it; once created, the next request runs', async () => {
    await setRunConfigAndWait(internalAdmin, controller, { allowList: ALLOWED, allowedServiceAccounts: ['signer', 'ghost'] });
    const r = await createRequest(requester, 'team-a', 'ghost-sa', { request: 'sign', params: { image: 'x' }, serviceAccount: 'ghost' });
    const got = await waitForPhase(requester, 'team-a', 'ghost-sa', ['Rejected', 'Running', 'Succeeded']);
    assert.equal(reasonOf(got), 'Rejected');
    assert.equal(
      got.status?.conditions?.[0]?.message,
      'serviceAccount "ghost" is allowed by InternalServicesConfig internal-services/config, but there is no ServiceAccount "ghost" in namespace "internal-services" of the internal cluster; ask its administrators to create it, then send the request again',
    );
    assert.equal((await pipelineRunsFor(internalAdmin, r.metadata.uid!)).length, 0, 'nothing made');
    await ensureServiceAccount(internalAdmin, NS, 'ghost');
    const r2 = await createRequest(requester, 'team-a', 'ghost-sa-2', { request: 'sign', params: { image: 'x' }, serviceAccount: 'ghost' });
    const pr = await onlyPipelineRunOf(internalAdmin, r2.metadata.uid!);
    assert.equal(pr.spec.taskRunTemplate?.serviceAccountName, 'ghost');
    await releaseRun(env, pr.metadata.name!);
    const ran = await waitForPhase(requester, 'team-a', 'ghost-sa-2', ['Rejected', 'Succeeded', 'Failed'], 60_000);
    assert.equal(reasonOf(ran), 'Succeeded', ran.status?.conditions?.[0]?.message);
    await setRunConfigAndWait(internalAdmin, controller, { allowList: ALLOWED, allowedServiceAccounts: ['signer'] });
  });

  test("today's payload (spec.pipeline with the git resolver) and no source policy: Rejected, saying how to proceed; no PipelineRun", async () => {
    const r = await createRequest(requester, 'team-a', 'todays', TODAYS_PAYLOAD as never, { 'internal-services.appstudio.openshift.io/pipeline-name': 'sign' });
    const got = await waitForPhase(requester, 'team-a', 'todays', ['Rejected', 'Running']);
    assert.equal(reasonOf(got), 'Rejected');
    assert.match(got.status?.conditions?.[0]?.message ?? '', /asks for the "git" resolver, but remote resolution is not enabled on this internal cluster: .* only Pipelines installed in namespace "internal-services" can run\. Name one with spec\.pipeline\.pipelineRef\.name \(or spec\.request\), or ask the administrators/);
    assert.equal((await pipelineRunsFor(internalAdmin, r.metadata.uid!)).length, 0);
  });

  test('spec.pipeline.taskRunSpecs (in the production schema) is stored, then refused with a message, never silently ignored', async () => {
    await createRequest(requester, 'team-a', 'task-run-specs', { pipeline: { pipelineRef: { name: 'build-and-sign' }, taskRunSpecs: [{ pipelineTaskName: 'sign', serviceAccountName: 'root' }] } } as never);
    const got = await waitForPhase(requester, 'team-a', 'task-run-specs', ['Rejected', 'Running']);
    assert.equal(reasonOf(got), 'Rejected');
    assert.match(got.status?.conditions?.[0]?.message ?? '', /spec\.pipeline\.taskRunSpecs is not supported here/);
  });

  test('spec.pipeline.pipelineRef.name runs the installed Pipeline, with serviceAccountName, timeouts and params from spec.pipeline', async () => {
    const r = await createRequest(requester, 'team-b', 'by-ref', {
      pipeline: { pipelineRef: { name: 'build-and-sign' }, serviceAccountName: 'signer', timeouts: { pipeline: '30m' }, params: [{ name: 'hold', value: '200ms' }] },
    } as never);
    const pr = await theOnlyPipelineRun(r.metadata.uid!);
    assert.deepEqual(pr.spec.pipelineRef, { name: 'build-and-sign' });
    assert.deepEqual(pr.spec.params, [{ name: 'hold', value: '200ms' }]);
    assert.deepEqual(pr.spec.taskRunTemplate, { serviceAccountName: 'signer' });
    assert.equal((pr.spec.timeouts as { pipeline?: string } | undefined)?.pipeline, '30m0s');
    const done = await waitForPhase(requester, 'team-b', 'by-ref', ['Succeeded', 'Failed', 'Rejected'], 30_000);
    assert.equal(reasonOf(done), 'Succeeded', done.status?.conditions?.[0]?.message);
  });

  test('a Pipeline created after the cache started is found (a miss is checked against the cluster)', async () => {
    await applyObjects(internalAdmin, [{ ...pipelines[1]!, metadata: { name: 'late', namespace: NS } } as never]);
    const r = await createRequest(requester, 'team-b', 'late', { request: 'late', params: { hold: 'never' } });
    await theOnlyPipelineRun(r.metadata.uid!);
    await waitForPhase(requester, 'team-b', 'late', ['Running']);
  });

  test('failed PipelineRun: Failed with its reason, message and failed task names', async () => {
    const r = await createRequest(requester, 'team-b', 'fails', { request: 'build-and-sign', params: { fail: 'true' } });
    const got = await waitForPhase(requester, 'team-b', 'fails', ['Failed'], 30_000);
    assert.equal(got.status?.conditions?.[0]?.status, 'False');
    assert.match(got.status?.conditions?.[0]?.message ?? '', /PipelineRun internal-services\/ir-.* failed: Failed: Tasks Completed: 2 \(Failed: 1, Cancelled 0\), Skipped: 0; failed tasks: sign \("step-s" exited with code 1: Error\)$/);
    await waitFor('the PipelineRun to be deleted', async () => (await pipelineRunsFor(internalAdmin, r.metadata.uid!)).length === 0);
    await waitFor('Failed event', async () => (await events('team-b', 'fails')).includes('Warning/Failed'));
  });

  test('a 253-character name, unicode and 100 KiB param values', async () => {
    const name = `n${'x'.repeat(251)}z`;
    assert.equal(name.length, 253);
    const big = `ünïcødé ✓ 🚀 ${'0123456789abcdef'.repeat(6400)}`; // > 100 KiB
    assert.ok(Buffer.byteLength(big) > 100 * 1024);
    const r = await createRequest(requester, 'team-c', name, { request: 'sign', params: { image: big, note: '日本語' } });
    const pr = await theOnlyPipelineRun(r.metadata.uid!);
    assert.deepEqual(pr.spec.params, [{ name: 'image', value: big }, { name: 'note', value: '日本語' }]);
    assert.equal(pr.metadata.annotations?.['internal-services.appstudio.redhat.com/request-name'], name);
    await waitForPhase(requester, 'team-c', name, ['Running']);
    await releaseRun(env, pr.metadata.name!);
    const done = await waitForPhase(requester, 'team-c', name, ['Succeeded'], 30_000);
    assert.deepEqual(done.status?.results, { signature: 'sig-ü', list: '["a","b"]', obj: '{"k":"v"}' });
  });

  test('debug keeps PipelineRuns', async () => {
    await setConfig({ allowList: ALLOWED, allowedServiceAccounts: ['signer'], debug: true });
    try {
      const r = await createRequest(requester, 'team-a', 'debugged', { request: 'build-and-sign', params: { hold: 'gate' } });
      const pr = await theOnlyPipelineRun(r.metadata.uid!);
      await waitForPhase(requester, 'team-a', 'debugged', ['Running']);
      await releaseRun(env, pr.metadata.name!);
      await waitForPhase(requester, 'team-a', 'debugged', ['Succeeded'], 30_000);
      // give the controller every chance to (wrongly) delete it
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal((await pipelineRunsFor(internalAdmin, r.metadata.uid!)).length, 1);
    } finally {
      await setConfig({ allowList: ALLOWED, allowedServiceAccounts: ['signer'] });
    }
  });

  test('request deleted while its PipelineRun runs: the PipelineRun is cancelled, Tekton stops it, then it is removed', async () => {
    const r = await createRequest(requester, 'team-a', 'deleted-mid-run', { request: 'build-and-sign', params: { hold: 'never' } });
    const pr = await theOnlyPipelineRun(r.metadata.uid!);
    await waitForPhase(requester, 'team-a', 'deleted-mid-run', ['Running']);
    // Watch the PipelineRun to see the cancellation that precedes its removal.
    const seen: string[] = [];
    const gone = new Promise<void>((resolve, reject) => {
      void new Watch(internalAdmin).watch(
        `/apis/tekton.dev/v1/namespaces/${NS}/pipelineruns`,
        { fieldSelector: `metadata.name=${pr.metadata.name}`, resourceVersion: pr.metadata.resourceVersion },
        (type, obj: PipelineRun) => {
          const c = obj.status?.conditions?.find((x) => x.type === 'Succeeded');
          seen.push(`${type}:${obj.spec?.status ?? ''}:${c?.reason ?? ''}`);
          if (type === 'DELETED') resolve();
        },
        (err) => (err ? reject(err) : undefined),
      );
    });
    await api(requester).deleteNamespacedCustomObject({ ...IR, namespace: 'team-a', name: 'deleted-mid-run' });
    await Promise.race([gone, new Promise((_, rej) => setTimeout(() => rej(new Error(`not deleted; saw ${seen.join(',')}`)), 20_000))]);
    assert.ok(seen.some((x) => x.startsWith('MODIFIED:Cancelled:')), `cancelled before deletion; saw ${seen.join(',')}`);
    assert.ok(seen.includes('MODIFIED:Cancelled:Cancelled'), `Tekton reported it Cancelled before it was removed; saw ${seen.join(',')}`);
  });

  test('SIGTERM: stops taking work and exits 0 within 10 s', async () => {
    const t0 = Date.now();
    const code = await controller!.kill('SIGTERM');
    assert.equal(code, 0);
    assert.ok(Date.now() - t0 < 10_000);
    controller = undefined;
  });
});

describe('restarts: nothing lost, nothing duplicated (real Tekton, pods simulated)', () => {
  test('killed between PipelineRun creation and the status write: after a restart, one PipelineRun and the request completes', async () => {
    // Take away the controller's right to write request status on the remote
    // cluster: it creates the PipelineRun, then its status write fails (403).
    const rbac = await import('@kubernetes/client-node');
    const rb = remoteAdmin.makeApiClient(rbac.RbacAuthorizationV1Api);
    const role = await rb.readClusterRole({ name: 'internal-services-remote' });
    const saved = structuredClone(role.rules ?? []);
    await rb.replaceClusterRole({ name: 'internal-services-remote', body: { ...role, rules: saved.filter((r) => !(r.resources ?? []).includes('internalrequests/status')) } });
    let c = await startController(env);
    try {
      const r = await createRequest(requester, 'team-b', 'crash', { request: 'build-and-sign', params: { hold: 'gate' } });
      await theOnlyPipelineRun(r.metadata.uid!);
      await c.waitForLog((l) => l.msg === 'reconcile failed; will retry' && l.request === 'default/team-b/crash' && l.code === 403);
      await c.kill('SIGKILL');
      assert.equal(reasonOf(await getRequest(requester, 'team-b', 'crash')), undefined, 'no status was written');
      const fresh = await rb.readClusterRole({ name: 'internal-services-remote' });
      await rb.replaceClusterRole({ name: 'internal-services-remote', body: { ...fresh, rules: saved } });
      c = await startController(env);
      await waitForPhase(requester, 'team-b', 'crash', ['Running']);
      const prs = await pipelineRunsFor(internalAdmin, r.metadata.uid!);
      assert.equal(prs.length, 1);
      await releaseRun(env, prs[0]!.metadata.name!);
      await waitForPhase(requester, 'team-b', 'crash', ['Succeeded'], 30_000);
      assert.equal(c.lines.filter((l) => l.msg === 'PipelineRun created' && l.request === 'default/team-b/crash').length, 0, 'the restarted controller created no second PipelineRun');
    } finally {
      const fresh = await rb.readClusterRole({ name: 'internal-services-remote' });
      await rb.replaceClusterRole({ name: 'internal-services-remote', body: { ...fresh, rules: saved } });
      await c.kill('SIGKILL');
    }
  });

  test('request deleted while the controller is down: the orphan is swept after a restart', async () => {
    let c = await startController(env);
    const r = await createRequest(requester, 'team-c', 'orphaned', { request: 'build-and-sign', params: { hold: 'never' } });
    const pr = await theOnlyPipelineRun(r.metadata.uid!);
    await waitForPhase(requester, 'team-c', 'orphaned', ['Running']);
    await c.kill('SIGKILL');
    await api(requester).deleteNamespacedCustomObject({ ...IR, namespace: 'team-c', name: 'orphaned' });
    assert.equal((await pipelineRunsFor(internalAdmin, r.metadata.uid!)).length, 1, 'still there while the controller is down');
    c = await startController(env);
    try {
      await waitFor('the orphan to be removed', async () => (await pipelineRunsFor(internalAdmin, r.metadata.uid!)).length === 0, 30_000);
      await c.waitForLog((l) => l.msg === 'PipelineRun cancelled' && l.pipelineRun === `${NS}/${pr.metadata.name}`);
    } finally {
      await c.kill('SIGKILL');
    }
  });

  test('remote apiserver unreachable: retries with backoff, logged once, recovers by itself', async () => {
    const c = await startController(env, ['--resync-period', '1h']);
    try {
      await env.remote.stopApiserver();
      await c.waitForLog((l) => l.msg === 'cannot reach the cluster; retrying with backoff' && l.informer === 'remote/default/internalrequests', 20_000);
      await new Promise((r) => setTimeout(r, 3000));
      await env.remote.startApiserver();
      await c.waitForLog((l) => l.msg === 'connection recovered' && l.informer === 'remote/default/internalrequests', 40_000);
      const warnings = c.lines.filter((l) => l.msg === 'cannot reach the cluster; retrying with backoff' && l.informer === 'remote/default/internalrequests');
      assert.equal(warnings.length, 1, 'one warning for the whole outage');
      const r = await createRequest(requester, 'team-a', 'after-outage', { request: 'build-and-sign' });
      await theOnlyPipelineRun(r.metadata.uid!);
      await waitForPhase(requester, 'team-a', 'after-outage', ['Succeeded'], 30_000);
    } finally {
      await c.kill('SIGKILL');
    }
  });
});

describe('status writes', () => {
  test('a write based on a stale object conflicts (409) and is decided again on a fresh read', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const log = pino({ level: 'debug' }, { write: (s: string) => lines.push(JSON.parse(s) as Record<string, unknown>) });
    const ctl = new Controller({
      remoteName: 'default',
      internal: await connect('internal', { kubeconfig: env.internal.identities.controller.kubeconfigPath }),
      namespace: NS,
      log,
    });
    await new KubeconfigRemote(ctl.remotes, { name: 'default', cluster: await connect('remote', { kubeconfig: env.remote.identities.controller.kubeconfigPath }) }).start();
    try {
      await ctl.startCaches(); // caches only: no workers, this test drives reconcile itself
      const r = await createRequest(requester, 'team-a', 'conflicted', { request: 'sign', params: { image: 'x' } });
      const stale = await waitFor('the request in the cache', async () => ctl.remotes.get('default')?.requests.get('team-a/conflicted'));
      // Someone else changes the object (labels are not part of the immutable spec): the copy above is now stale.
      await api(remoteAdmin).replaceNamespacedCustomObject({ ...IR, namespace: 'team-a', name: 'conflicted', body: { ...r, metadata: { ...r.metadata, labels: { touched: 'yes' } } } });
      await ctl.reconciler.reconcile('default/team-a/conflicted', structuredClone(stale));
      assert.ok(lines.some((l) => l.msg === 'status conflict; deciding again on a fresh read' && l.request === 'default/team-a/conflicted'), 'the conflict happened');
      assert.equal(reasonOf(await getRequest(requester, 'team-a', 'conflicted')), undefined, 'nothing decided from inside the write');
      // The key was requeued (no workers run here): its next reconcile decides on the fresh read.
      await ctl.reconciler.reconcile('default/team-a/conflicted');
      const got = await getRequest(requester, 'team-a', 'conflicted');
      assert.equal(reasonOf(got), 'Running');
      assert.equal(got.metadata.labels?.touched, 'yes', 'the other change is kept');
      assert.equal((await pipelineRunsFor(internalAdmin, r.metadata.uid!)).length, 1);
    } finally {
      await ctl.stop(1000);
    }
  });
});

// Last in the file: it stops the Tekton controller.
describe('results that do not fit', () => {
  test('results too large for the remote cluster: Failed with the reason, not retried forever (SIMULATED executor: real Tekton reads results from 4 KiB termination messages, so it cannot produce 1 MB of them without a kubelet)', async () => {
    const c = await startController(env);
    try {
      const r = await createRequest(requester, 'team-a', 'huge-results', { request: 'build-and-sign', params: { hold: 'never' } });
      const pr = await theOnlyPipelineRun(r.metadata.uid!);
      await waitForPhase(requester, 'team-a', 'huge-results', ['Running']);
      // From here on the simulated executor, not Tekton, writes this run's status.
      await env.tekton!.controller.stop(2000);
      const executor = new SimulatedTektonExecutor(internalAdmin);
      // Fits in the PipelineRun as an array, but as JSON text inside the
      // request every quote is escaped again: past etcd's object size limit.
      await executor.succeed(NS, pr.metadata.name!, { quotes: ['"'.repeat(500_000)] });
      const got = await waitForPhase(requester, 'team-a', 'huge-results', ['Failed', 'Succeeded'], 30_000);
      assert.equal(reasonOf(got), 'Failed');
      assert.match(got.status?.conditions?.[0]?.message ?? '', /the results of the PipelineRun could not be stored on the request: .*too large/);
      assert.equal(got.status?.results, undefined);
      await waitFor('the PipelineRun removed', async () => (await pipelineRunsFor(internalAdmin, r.metadata.uid!)).length === 0);
    } finally {
      await c.kill('SIGKILL');
    }
  });
});
