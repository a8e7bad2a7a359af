/**
 * The request-kind seam on the real control planes and REAL Tekton (pods
 * simulated): a second kind, defined here by a small RequestKind (a
 * `SigningRequest` whose `spec.image` is the `sign` Pipeline's param), is
 * served by the same controller and the same request path as InternalRequest:
 * the same admission, PipelineRuns, status contract and results, keys of its
 * own (one name in one namespace for two kinds), and nothing done for a kind
 * that is not served.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { applyObjects, grantRequester, installProject, startEnvironment, type Environment } from '../../src/localenv/index.js';
import type { InternalRequest, InternalRequestStatus } from '../../src/api/types.js';
import { Controller } from '../../src/controller/controller.js';
import { KubeconfigRemote } from '../../src/remotes/kubeconfig.js';
import { INTERNAL_REQUEST_KIND, type RequestKind } from '../../src/requests/request-kind.js';
import { connect, type KubeObject } from '../../src/kube/client.js';
import { ANNOTATION_REQUEST_KIND, LABEL_IDEMPOTENCY_KEY } from '../../src/tekton/pipelinerun.js';
import { api, createRequest, NS, pipelineRunsFor, setRunConfig, simulatedStep, testPipeline, waitFor, waitForPhase } from './helpers.js';

const SR = { group: 'signing.example.com', version: 'v1alpha1', plural: 'signingrequests' };
const FINAL = ['Succeeded', 'Failed', 'Rejected'];

/** The remote side's CRD of the test kind: the status is left open, as the generated CRDs of typed kinds will describe it. */
const signingCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `${SR.plural}.${SR.group}` },
  spec: {
    group: SR.group,
    scope: 'Namespaced',
    names: { kind: 'SigningRequest', plural: SR.plural, singular: 'signingrequest', listKind: 'SigningRequestList' },
    versions: [
      {
        name: SR.version,
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', properties: { image: { type: 'string' }, note: { type: 'string' } } },
              status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        },
      },
    ],
  },
};

/** A SigningRequest read as an InternalRequest for the installed Pipeline `sign`: its fields are the params. */
const signingKind: RequestKind = {
  kind: 'SigningRequest',
  resource: SR,
  builtIn: false,
  toRequest(obj: KubeObject): InternalRequest {
    const o = obj as unknown as { metadata: InternalRequest['metadata']; spec?: Record<string, unknown>; status?: InternalRequestStatus };
    const params: Record<string, string> = {};
    for (const f of ['image', 'note']) if (typeof o.spec?.[f] === 'string') params[f] = o.spec[f] as string;
    return { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: o.metadata, spec: { request: 'sign', params }, ...(o.status ? { status: o.status } : {}) };
  },
  checkShape(req: InternalRequest): string | undefined {
    return req.spec.params?.['image'] ? undefined : 'spec.image is required: the image to sign, e.g. quay.io/org/app@sha256:…';
  },
  statusBody(req: InternalRequest, status: InternalRequestStatus): KubeObject {
    return { apiVersion: `${SR.group}/${SR.version}`, kind: 'SigningRequest', metadata: req.metadata, status } as unknown as KubeObject;
  },
};

let env: Environment;
let remoteAdmin: KubeConfig;
let internalAdmin: KubeConfig;
let requester: KubeConfig;

async function createSigning(namespace: string, name: string, spec: Record<string, unknown>, labels?: Record<string, string>): Promise<KubeObject> {
  const body = { apiVersion: `${SR.group}/${SR.version}`, kind: 'SigningRequest', metadata: { name, namespace, ...(labels ? { labels } : {}) }, spec };
  return (await api(requester).createNamespacedCustomObject({ ...SR, namespace, body })) as KubeObject;
}

async function getSigning(namespace: string, name: string): Promise<InternalRequest> {
  return (await api(requester).getNamespacedCustomObject({ ...SR, namespace, name })) as InternalRequest;
}

const reason = (r: { status?: InternalRequestStatus }) => r.status?.conditions?.[0]?.reason;
const waitForSigning = (namespace: string, name: string, timeoutMs = 60_000) =>
  waitFor(`SigningRequest ${namespace}/${name} finished`, async () => {
    const r = await getSigning(namespace, name);
    return FINAL.includes(reason(r) ?? '') ? r : undefined;
  }, timeoutMs);

async function startControllerWith(kinds: RequestKind[]): Promise<Controller> {
  const ctl = new Controller({
    remoteName: 'default',
    internal: await connect('internal', { kubeconfig: env.internal.identities.controller.kubeconfigPath }),
    namespace: NS,
    log: pino({ level: 'silent' }),
    kinds,
  });
  await new KubeconfigRemote(ctl.remotes, { name: 'default', cluster: await connect('remote', { kubeconfig: env.remote.identities.controller.kubeconfigPath }) }).start();
  await ctl.start();
  return ctl;
}

before(async () => {
  env = await startEnvironment({ tekton: true });
  await installProject(env);
  remoteAdmin = env.remote.identities.admin.kubeConfig();
  internalAdmin = env.internal.identities.admin.kubeConfig();
  requester = env.remote.identities.requester!.kubeConfig();
  for (const ns of ['team-a', 'outside']) await grantRequester(env, ns);
  const controllerUser = env.remote.identities.controller.username;
  const requesterUser = env.remote.identities.requester?.username ?? 'requester';
  await applyObjects(remoteAdmin, [
    signingCrd,
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'signingrequests-controller' }, rules: [{ apiGroups: [SR.group], resources: [SR.plural], verbs: ['get', 'list', 'watch'] }, { apiGroups: [SR.group], resources: [`${SR.plural}/status`], verbs: ['get', 'update', 'patch'] }] },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'signingrequests-controller' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'signingrequests-controller' }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: controllerUser }] },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'signingrequests-requester' }, rules: [{ apiGroups: [SR.group], resources: [SR.plural], verbs: ['create', 'get', 'list', 'watch'] }] },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'signingrequests-requester' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'signingrequests-requester' }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: requesterUser }] },
  ] as never);
  await waitFor('the SigningRequest API served', async () => {
    try {
      await api(requester).listNamespacedCustomObject({ ...SR, namespace: 'team-a' });
      return true;
    } catch {
      return undefined;
    }
  });
  await applyObjects(internalAdmin, [
    testPipeline('sign', {
      params: [{ name: 'image', type: 'string' }, { name: 'note', type: 'string', default: '' }],
      results: [{ name: 'signed', value: '$(tasks.t.results.signed)' }],
      tasks: [{ name: 't', params: [{ name: 'image', value: '$(params.image)' }], taskSpec: { params: [{ name: 'image' }], results: [{ name: 'signed' }], steps: [simulatedStep('s', { SIMULATED_RESULT_signed: 'signed $(params.image)' })] } }],
    }),
  ] as never);
  await setRunConfig(internalAdmin, { allowList: ['team-a'] });
});

after(async () => {
  await env?.stop();
});

describe('request kinds (real Tekton, pods simulated)', () => {
  test('a second kind runs through the same path: its Pipeline with its fields as params, its results and the status contract written on its own resource', async () => {
    const ctl = await startControllerWith([INTERNAL_REQUEST_KIND, signingKind]);
    try {
      const sr = await createSigning('team-a', 'sign-1', { image: 'quay.io/org/app:1', note: 'release 1' });
      const done = await waitForSigning('team-a', 'sign-1');
      assert.equal(reason(done), 'Succeeded', done.status?.conditions?.[0]?.message);
      assert.deepEqual(done.status?.conditions?.map((c) => c.type), ['Succeeded', 'Progressing'], 'the same status contract as InternalRequest');
      assert.deepEqual(done.status?.results, { signed: 'signed quay.io/org/app:1' });
      assert.match(done.status?.pipelineRun ?? '', new RegExp(`^${NS}/ir-`));
      // A finished run is removed, as for InternalRequest.
      await waitFor('the PipelineRun removed', async () => (await pipelineRunsFor(internalAdmin, sr.metadata!.uid!)).length === 0);
    } finally {
      await ctl.stop(1000);
    }
  });

  test('one name in one namespace for two kinds, with one idempotency key: two requests, two runs, neither follows the other', async () => {
    const ctl = await startControllerWith([INTERNAL_REQUEST_KIND, signingKind]);
    try {
      const labels = { [LABEL_IDEMPOTENCY_KEY]: 'release-7' };
      const ir = await createRequest(requester, 'team-a', 'twin', { request: 'sign', params: { image: 'quay.io/org/ir:7' } }, labels);
      const sr = await createSigning('team-a', 'twin', { image: 'quay.io/org/sr:7' }, labels);
      // Both runs exist at once while they run, each tied to its own request (the kind on the SigningRequest's alone).
      const seen = new Map<string, string | undefined>();
      await waitFor('both PipelineRuns seen', async () => {
        for (const [uid] of [[ir.metadata.uid!], [sr.metadata!.uid!]]) {
          const [pr] = await pipelineRunsFor(internalAdmin, uid!);
          if (pr && !seen.has(uid!)) seen.set(uid!, pr.metadata.annotations?.[ANNOTATION_REQUEST_KIND]);
        }
        return seen.size === 2;
      }, 60_000, 50);
      assert.equal(seen.get(ir.metadata.uid!), undefined, 'an InternalRequest run carries no kind, as before kinds existed');
      assert.equal(seen.get(sr.metadata!.uid!), 'SigningRequest');
      const a = await waitForPhase(requester, 'team-a', 'twin', FINAL, 60_000);
      const b = await waitForSigning('team-a', 'twin');
      assert.equal(reason(a), 'Succeeded');
      assert.equal(reason(b), 'Succeeded');
      assert.deepEqual(a.status?.results, { signed: 'signed quay.io/org/ir:7' });
      assert.deepEqual(b.status?.results, { signed: 'signed quay.io/org/sr:7' });
      assert.equal(a.status?.followed, undefined);
      assert.equal(b.status?.followed, undefined);
    } finally {
      await ctl.stop(1000);
    }
  });

  test("the same admission: a namespace not allowed is rejected, and the kind's own shape check names its field", async () => {
    const ctl = await startControllerWith([INTERNAL_REQUEST_KIND, signingKind]);
    try {
      await createSigning('outside', 'not-allowed', { image: 'quay.io/org/app:1' });
      await createSigning('team-a', 'no-image', { note: 'forgot the image' });
      const outside = await waitForSigning('outside', 'not-allowed');
      assert.equal(reason(outside), 'Rejected');
      assert.match(outside.status?.conditions?.[0]?.message ?? '', /outside/);
      const shape = await waitForSigning('team-a', 'no-image');
      assert.equal(reason(shape), 'Rejected');
      assert.match(shape.status?.conditions?.[0]?.message ?? '', /^spec\.image is required/);
      // The rejection's Event is about the SigningRequest itself.
      const ev = await waitFor('the Rejected Event', async () => {
        const list = await remoteAdmin.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace: 'team-a' });
        return list.items.find((e) => e.involvedObject.name === 'no-image' && e.reason === 'Rejected');
      });
      assert.deepEqual([ev.involvedObject.apiVersion, ev.involvedObject.kind, ev.involvedObject.uid], [`${SR.group}/${SR.version}`, 'SigningRequest', shape.metadata.uid]);
    } finally {
      await ctl.stop(1000);
    }
  });

  test('a kind that is not served is left alone: no status, no run, while InternalRequests are served', async () => {
    const ctl = await startControllerWith([INTERNAL_REQUEST_KIND]);
    try {
      const sr = await createSigning('team-a', 'unserved', { image: 'quay.io/org/app:2' });
      await createRequest(requester, 'team-a', 'served', { request: 'sign', params: { image: 'quay.io/org/app:2' } });
      assert.equal(reason(await waitForPhase(requester, 'team-a', 'served', FINAL, 60_000)), 'Succeeded');
      const got = await getSigning('team-a', 'unserved');
      assert.equal(got.status, undefined, 'nothing was written on it');
      assert.equal((await pipelineRunsFor(internalAdmin, sr.metadata!.uid!)).length, 0);
    } finally {
      await ctl.stop(1000);
    }
    // Served again: it is picked up where it was.
    const again = await startControllerWith([INTERNAL_REQUEST_KIND, signingKind]);
    try {
      assert.equal(reason(await waitForSigning('team-a', 'unserved')), 'Succeeded');
    } finally {
      await again.stop(1000);
    }
  });
});
