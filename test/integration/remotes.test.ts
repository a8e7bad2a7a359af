/**
 * Several remote clusters on REAL control planes (three kube-apiservers:
 * internal, "remote" and "remote-2") with REAL Tekton (pods simulated). The
 * controller serves "remote" from --remote-kubeconfig (remote name "default")
 * and a second remote, "staging", from a kubeconfig Secret it may read by name
 * only, which is created, deleted and created again while it runs; the
 * staging apiserver is stopped while the default remote keeps being served.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { startEnvironment, type ControlPlane, type Environment, applyObjects, grantRequester, installProject } from '../../src/localenv/index.js';
import { repoRoot } from '../../src/util/repo.js';
import { LABEL_REQUEST_REMOTE } from '../../src/tekton/pipelinerun.js';
import {
  createRequest, getRequest, httpStatus, messageOf, NS, runCli, onlyPipelineRunOf, pipelineRunsFor, releaseRun, sample, scrape, setRunConfig, simulatedStep, startController, testPipeline, waitFor, waitForPhase,
  type ControllerProcess,
} from './helpers.js';
import { kubeletVolume } from '../kubelet-volume.js';

const SECRET = 'internal-services-remote-staging';
const FINAL = ['Succeeded', 'Failed', 'Rejected'];
let env: Environment;
let staging: ControlPlane;
let internalAdmin: KubeConfig;
let requester: KubeConfig;
let stagingRequester: KubeConfig;
let controller: ControllerProcess;
let metricsPort: number;

const core = (kc: KubeConfig) => kc.makeApiClient(CoreV1Api);

/** The kubeconfig Secret of the staging remote (the controller identity of remote-2). */
async function createStagingSecret(): Promise<void> {
  const kubeconfig = readFileSync(staging.identities.controller.kubeconfigPath, 'utf8');
  await core(internalAdmin).createNamespacedSecret({
    namespace: NS,
    body: {
      metadata: { name: SECRET, namespace: NS, annotations: { 'internal-services.appstudio.redhat.com/remote-name': 'staging' } },
      stringData: { kubeconfig },
    },
  });
}

async function deleteStagingSecret(): Promise<void> {
  await core(internalAdmin).deleteNamespacedSecret({ namespace: NS, name: SECRET });
}

async function readyz(): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${controller.healthPort}/readyz?verbose`);
  return { status: res.status, text: await res.text() };
}

before(async () => {
  env = await startEnvironment({ tekton: true, remotes: 2 });
  staging = env.remotes[1]!;
  await installProject(env);
  internalAdmin = env.internal.identities.admin.kubeConfig();
  requester = env.remote.identities.requester!.kubeConfig();
  stagingRequester = staging.identities.requester!.kubeConfig();
  for (const ns of ['team-a', 'team-b']) {
    await grantRequester(env, ns);
    await grantRequester(env, ns, staging);
  }
  // The shipped Role, for the one Secret this test uses.
  const docs = parseAllDocuments(readFileSync(join(repoRoot(), 'config', 'rbac', 'remote-secrets', 'role.yaml'), 'utf8')).map((d) => d.toJS() as Record<string, unknown>);
  const role = docs.find((d) => d['kind'] === 'Role') as { rules: Array<{ resourceNames: string[] }> };
  role.rules[0]!.resourceNames = [SECRET];
  await applyObjects(internalAdmin, docs as never);
  // Another Secret in the namespace, which the controller must not be able to read.
  await core(internalAdmin).createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'signing-key', namespace: NS }, stringData: { key: 'private' } } });
  await applyObjects(internalAdmin, [
    testPipeline('echo', { params: [{ name: 'text', default: '' }], results: [{ name: 'out', value: '$(tasks.t.results.out)' }], tasks: [{ name: 't', params: [{ name: 'text', value: '$(params.text)' }], taskSpec: { params: [{ name: 'text' }], results: [{ name: 'out' }], steps: [simulatedStep('s', { SIMULATED_RESULT_out: '$(params.text)' })] } }] }),
    testPipeline('gated', { params: [{ name: 'text', default: '' }], results: [{ name: 'out', value: '$(tasks.t.results.out)' }], tasks: [{ name: 't', params: [{ name: 'text', value: '$(params.text)' }], taskSpec: { params: [{ name: 'text' }], results: [{ name: 'out' }], steps: [simulatedStep('s', { SIMULATED_DURATION: 'gate', SIMULATED_RESULT_out: '$(params.text)' })] } }] }),
  ] as never);
  // team-a bare: the default remote only; team-b on staging only.
  await setRunConfig(internalAdmin, { allowList: ['team-a', 'staging/team-b'] });
  controller = await startController(env, ['--remote-secret', SECRET, '--metrics-bind-address', '127.0.0.1:0', '--resync-period', '5s']);
  metricsPort = Number(String((await controller.waitForLog((l) => l.msg === 'serving metrics')).address).split(':').pop());
});

after(async () => {
  await controller?.kill('SIGKILL');
  await env?.stop();
});

describe('several remote clusters (real Tekton, pods simulated)', () => {
  test('RBAC: the controller may read its remote Secret by name, and no other Secret', async () => {
    const ctl = core(env.internal.identities.controller.kubeConfig());
    await assert.rejects(ctl.readNamespacedSecret({ namespace: NS, name: 'signing-key' }), (e: { code?: number }) => e.code === 403);
    await assert.rejects(ctl.listNamespacedSecret({ namespace: NS }), (e: { code?: number }) => e.code === 403, 'no list of all Secrets');
    // Reading it by name works once it exists (404 before: allowed, not there).
    await assert.rejects(ctl.readNamespacedSecret({ namespace: NS, name: SECRET }), (e: { code?: number }) => e.code === 404);
  });

  test('a remote added while running is served; its PipelineRuns carry its name; bare namespaces stay on the default remote', async () => {
    const early = await createRequest(stagingRequester, 'team-b', 'early', { request: 'echo', params: { text: 'staging-1' } });
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal((await getRequest(stagingRequester, 'team-b', 'early')).status, undefined, 'not served before its Secret exists');
    const seen = controller.lines.length;
    await createStagingSecret();
    await controller.waitForLog((l) => l.msg === 'remote cluster added' && l.remote === 'staging');
    assert.equal(controller.lines.slice(seen).filter((l) => l.msg === 'remote cluster added').length, 1);
    const done = await waitForPhase(stagingRequester, 'team-b', 'early', FINAL, 60_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    assert.deepEqual(done.status?.results, { out: 'staging-1' });
    assert.equal(done.metadata.uid, early.metadata.uid);

    // A running one: its PipelineRun names the remote.
    const held = await createRequest(stagingRequester, 'team-b', 'held', { request: 'gated', params: { text: 'labelled' } });
    const pr = await onlyPipelineRunOf(internalAdmin, held.metadata.uid!);
    assert.equal(pr.metadata.labels?.[LABEL_REQUEST_REMOTE], 'staging');
    await releaseRun(env, pr.metadata.name!);
    assert.equal((await waitForPhase(stagingRequester, 'team-b', 'held', FINAL, 60_000)).status?.conditions?.[0]?.reason, 'Succeeded');

    // team-a is on the allowList bare: the default remote's, not staging's.
    await createRequest(stagingRequester, 'team-a', 'bare', { request: 'echo' });
    const bare = await waitForPhase(stagingRequester, 'team-a', 'bare', FINAL);
    assert.equal(bare.status?.conditions?.[0]?.reason, 'Rejected');
    assert.match(messageOf(bare), /^namespace "team-a" on remote "staging" is not on the allowList of InternalServicesConfig internal-services\/config; the entry "team-a" names a namespace without a remote, which means remote "default" only; write "staging\/team-a" \(or "\*\/team-a"\) to grant it here/);
    // and team-b, staging's, is not served on the default remote
    await createRequest(requester, 'team-b', 'wrong-remote', { request: 'echo' });
    assert.match(messageOf(await waitForPhase(requester, 'team-b', 'wrong-remote', FINAL)), /^namespace "team-b" on remote "default" is not on the allowList/);
    // The same name and namespace on both remotes are two requests.
    await createRequest(requester, 'team-a', 'twin', { request: 'echo', params: { text: 'default-twin' } });
    await setRunConfig(internalAdmin, { allowList: ['team-a', 'staging/team-b', 'staging/team-a'] });
    await controller.waitForLog((l) => l.msg === 'configuration changed');
    await createRequest(stagingRequester, 'team-a', 'twin', { request: 'echo', params: { text: 'staging-twin' } });
    assert.deepEqual((await waitForPhase(requester, 'team-a', 'twin', FINAL, 60_000)).status?.results, { out: 'default-twin' });
    assert.deepEqual((await waitForPhase(stagingRequester, 'team-a', 'twin', FINAL, 60_000)).status?.results, { out: 'staging-twin' });
    const m = await scrape(metricsPort);
    assert.equal(sample(m, 'internal_services_remote_up', { remote: 'staging' }), 1);
    assert.equal(sample(m, 'internal_services_remote_up', { remote: 'default' }), 1);
    assert.equal(sample(m, 'internal_request_attempt_total', { request: 'echo', namespace: 'team-b', remote: 'staging', reason: 'Succeeded' }), 1, 'early');
    assert.equal(sample(m, 'internal_request_attempt_total', { request: 'echo', namespace: 'team-a', remote: 'staging', reason: 'Succeeded' }), 1, "staging's twin");
    assert.equal(sample(m, 'internal_request_attempt_total', { request: 'echo', namespace: 'team-a', remote: 'default', reason: 'Succeeded' }), 1, "default's twin");
  });

  test('one remote down: the other is served meanwhile, /readyz stays ready and says which; nothing of the down one is lost', async () => {
    const held = await createRequest(stagingRequester, 'team-b', 'across-outage', { request: 'gated', params: { text: 'kept' } });
    const pr = await onlyPipelineRunOf(internalAdmin, held.metadata.uid!);
    await waitForPhase(stagingRequester, 'team-b', 'across-outage', ['Running']);
    await staging.stopApiserver();
    try {
      await waitFor('staging to be reported down', async () => {
        const r = await readyz();
        return r.status === 200 && /\[-\]remote\/staging\/internalrequests failed/.test(r.text) && /\[\+\]remote\/default\/internalrequests ok/.test(r.text);
      }, 30_000);
      assert.equal(sample(await scrape(metricsPort), 'internal_services_remote_up', { remote: 'staging' }), 0);
      // The default remote is served as usual.
      const t0 = Date.now();
      await createRequest(requester, 'team-a', 'meanwhile', { request: 'echo', params: { text: 'not-slowed' } });
      const meanwhile = await waitForPhase(requester, 'team-a', 'meanwhile', FINAL, 30_000);
      assert.equal(meanwhile.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(meanwhile));
      const took = Date.now() - t0;
      // The staging run ends while its cluster cannot be told.
      await releaseRun(env, pr.metadata.name!);
      await new Promise((r) => setTimeout(r, 1000));
      assert.equal((await pipelineRunsFor(internalAdmin, held.metadata.uid!)).length, 1, 'its PipelineRun is kept until the outcome is written');
      console.log(`# default remote request done in ${took} ms while staging was down`);
    } finally {
      await staging.startApiserver();
    }
    const done = await waitForPhase(stagingRequester, 'team-b', 'across-outage', FINAL, 60_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    assert.deepEqual(done.status?.results, { out: 'kept' });
    await waitFor('the PipelineRun deleted', async () => (await pipelineRunsFor(internalAdmin, held.metadata.uid!)).length === 0, 30_000);
    assert.equal((await readyz()).status, 200);
  });

  test('a remote removed while running: its runs are left alone (no orphan sweep), its requests wait; added back, it goes on where it was', async () => {
    const held = await createRequest(stagingRequester, 'team-b', 'across-removal', { request: 'gated', params: { text: 'resumed' } });
    const pr = await onlyPipelineRunOf(internalAdmin, held.metadata.uid!);
    await waitForPhase(stagingRequester, 'team-b', 'across-removal', ['Running']);
    await deleteStagingSecret();
    await controller.waitForLog((l) => String(l.msg).startsWith('remote cluster removed') && l.remote === 'staging');
    await waitFor('/readyz without staging', async () => !/remote\/staging/.test((await readyz()).text));
    await releaseRun(env, pr.metadata.name!);
    await createRequest(stagingRequester, 'team-b', 'while-removed', { request: 'echo', params: { text: 'later' } });
    // Several resyncs (5 s) pass: the finished PipelineRun of a remote not served is not swept, nothing is written there.
    await new Promise((r) => setTimeout(r, 11_000));
    assert.equal((await pipelineRunsFor(internalAdmin, held.metadata.uid!)).length, 1);
    assert.equal((await getRequest(stagingRequester, 'team-b', 'across-removal')).status?.conditions?.[0]?.reason, 'Running');
    assert.equal((await getRequest(stagingRequester, 'team-b', 'while-removed')).status, undefined);
    // The default remote is still served.
    await createRequest(requester, 'team-a', 'during-removal', { request: 'echo', params: { text: 'x' } });
    assert.equal((await waitForPhase(requester, 'team-a', 'during-removal', FINAL, 30_000)).status?.conditions?.[0]?.reason, 'Succeeded');

    await createStagingSecret();
    const resumed = await waitForPhase(stagingRequester, 'team-b', 'across-removal', FINAL, 60_000);
    assert.equal(resumed.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(resumed));
    assert.deepEqual(resumed.status?.results, { out: 'resumed' });
    const later = await waitForPhase(stagingRequester, 'team-b', 'while-removed', FINAL, 60_000);
    assert.deepEqual(later.status?.results, { out: 'later' });
    assert.equal((await pipelineRunsFor(internalAdmin, resumed.metadata.uid!)).length, 0);
  });

  test('a Secret that cannot be used is reported and changes nothing; the remote keeps its last good connection', async () => {
    const seen = controller.lines.length;
    await core(internalAdmin).replaceNamespacedSecret({
      namespace: NS,
      name: SECRET,
      body: { metadata: { name: SECRET, namespace: NS, annotations: { 'internal-services.appstudio.redhat.com/remote-name': 'staging' } }, stringData: { kubeconfig: 'not: [a kubeconfig' } },
    });
    const err = await controller.waitForLog((l) => String(l.msg).startsWith('remote Secret cannot be used'));
    assert.match(String(err.problem), /^Secret internal-services\/internal-services-remote-staging: data\.kubeconfig is not a kubeconfig/);
    assert.equal(controller.lines.slice(seen).filter((l) => String(l.msg).startsWith('remote cluster removed')).length, 0);
    await waitFor('/readyz reports the Secret', async () => {
      const r = await readyz();
      return r.status === 200 && /\[-\]secret\/internal-services\/internal-services-remote-staging failed: Secret .* is not a kubeconfig/.test(r.text);
    });
    await createRequest(stagingRequester, 'team-b', 'after-bad-secret', { request: 'echo', params: { text: 'still' } });
    assert.deepEqual((await waitForPhase(stagingRequester, 'team-b', 'after-bad-secret', FINAL, 60_000)).status?.results, { out: 'still' });
    assert.equal(await httpStatus(`http://127.0.0.1:${controller.healthPort}/readyz`), 200);
  });
});

describe('remotes found by label, in a namespace of their own', () => {
  test('no --remote-kubeconfig: Secrets with the label are the remotes; a changed Secret replaces its connection (here: poll mode for one remote)', async () => {
    await controller.kill('SIGKILL');
    const REMOTES_NS = 'internal-services-remotes';
    const admin = core(internalAdmin);
    await admin.createNamespace({ body: { metadata: { name: REMOTES_NS } } });
    await applyObjects(internalAdmin, [
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'remote-kubeconfigs', namespace: REMOTES_NS }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch'] }] },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'remote-kubeconfigs', namespace: REMOTES_NS },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'remote-kubeconfigs' },
        subjects: [{ kind: 'User', name: env.internal.identities.controller.username }],
      },
    ] as never);
    const LABEL = { 'internal-services.appstudio.redhat.com/remote': 'true' };
    const secret = (name: string, plane: ControlPlane, annotations: Record<string, string> = {}, labels: Record<string, string> = LABEL) => ({
      metadata: { name, namespace: REMOTES_NS, labels, annotations },
      stringData: { kubeconfig: readFileSync(plane.identities.controller.kubeconfigPath, 'utf8') },
    });
    await admin.createNamespacedSecret({ namespace: REMOTES_NS, body: secret('prod', env.remote) });
    await admin.createNamespacedSecret({ namespace: REMOTES_NS, body: secret('staging', staging) });
    await admin.createNamespacedSecret({ namespace: REMOTES_NS, body: secret('unlabelled', staging, { 'internal-services.appstudio.redhat.com/remote-name': 'other' }, {}) });
    // Bare entries name no remote now, unless the configuration says which.
    await setRunConfig(internalAdmin, { allowList: ['team-a', 'staging/team-b'], defaultRemote: 'prod' });
    const c = runCliController(['--remote-secrets-selector', 'internal-services.appstudio.redhat.com/remote=true', '--remote-secrets-namespace', REMOTES_NS]);
    try {
      await c.waitForLog((l) => l.msg === 'caches synced');
      const added = () => c.lines.filter((l) => l.msg === 'remote cluster added').map((l) => String(l.remote)).sort();
      await waitFor('both remotes added', async () => added().length === 2 && added());
      assert.deepEqual(added(), ['prod', 'staging'], 'the unlabelled Secret is not a remote');
      await createRequest(requester, 'team-a', 'by-label', { request: 'echo', params: { text: 'prod' } });
      await createRequest(stagingRequester, 'team-b', 'by-label', { request: 'echo', params: { text: 'staging' } });
      assert.deepEqual((await waitForPhase(requester, 'team-a', 'by-label', FINAL, 60_000)).status?.results, { out: 'prod' });
      assert.deepEqual((await waitForPhase(stagingRequester, 'team-b', 'by-label', FINAL, 60_000)).status?.results, { out: 'staging' });

      // Staging's Secret changes: polled every 2 s from now on.
      await admin.replaceNamespacedSecret({
        namespace: REMOTES_NS,
        name: 'staging',
        body: secret('staging', staging, { 'internal-services.appstudio.redhat.com/remote-mode': 'poll', 'internal-services.appstudio.redhat.com/poll-interval': '2s' }),
      });
      const replaced = await c.waitForLog((l) => l.msg === 'remote cluster replaced' && l.remote === 'staging');
      assert.equal(replaced.mode, 'poll');
      await createRequest(stagingRequester, 'team-b', 'polled', { request: 'echo', params: { text: 'polled' } });
      assert.deepEqual((await waitForPhase(stagingRequester, 'team-b', 'polled', FINAL, 60_000)).status?.results, { out: 'polled' });
      assert.ok(c.lines.some((l) => l.msg === 'cache started' && l.informer === 'remote/staging/internalrequests' && l.mode === 'poll' && l.pollIntervalMs === 2000), 'the new cache polls');
    } finally {
      await c.kill('SIGKILL');
    }
  });
});

describe('remotes from a directory of kubeconfig files (Secrets mounted as a volume)', () => {
  test('one remote per file, as the kubelet lays them out: served, a file removed stops its remote, a broken one keeps its last good connection', async () => {
    await controller.kill('SIGKILL');
    // The kubelet's layout: files are symlinks into ..data, swapped in one rename.
    const volume = kubeletVolume('remote-kubeconfigs-');
    const mount = (files: Record<string, string>) => volume.update(files);
    const dir = volume.dir;
    const prodKc = readFileSync(env.remote.identities.controller.kubeconfigPath, 'utf8');
    const stagingKc = readFileSync(staging.identities.controller.kubeconfigPath, 'utf8');
    mount({ prod: prodKc, 'staging.kubeconfig': stagingKc });
    await setRunConfig(internalAdmin, { allowList: ['team-a', 'staging/team-b'], defaultRemote: 'prod' });
    const c = runCliController(['--remote-kubeconfig-dir', dir, '--remote-kubeconfig-dir-interval', '1s']);
    try {
      await c.waitForLog((l) => l.msg === 'caches synced');
      const added = () => c.lines.filter((l) => l.msg === 'remote cluster added').map((l) => `${String(l.remote)} ${String(l.origin)}`).sort();
      await waitFor('both remotes added', async () => added().length === 2 && added());
      assert.deepEqual(added(), [`prod file ${join(dir, 'prod')}`, `staging file ${join(dir, 'staging.kubeconfig')}`]);
      await createRequest(requester, 'team-a', 'from-dir', { request: 'echo', params: { text: 'prod-dir' } });
      await createRequest(stagingRequester, 'team-b', 'from-dir', { request: 'echo', params: { text: 'staging-dir' } });
      assert.deepEqual((await waitForPhase(requester, 'team-a', 'from-dir', FINAL, 60_000)).status?.results, { out: 'prod-dir' });
      assert.deepEqual((await waitForPhase(stagingRequester, 'team-b', 'from-dir', FINAL, 60_000)).status?.results, { out: 'staging-dir' });

      // staging's file goes (its Secret left the projected volume): no longer served.
      mount({ prod: prodKc });
      await c.waitForLog((l) => l.msg === 'remote cluster removed; its PipelineRuns are left as they are' && l.remote === 'staging');
      await createRequest(stagingRequester, 'team-b', 'after-removal', { request: 'echo' });
      await new Promise((r) => setTimeout(r, 3000));
      assert.equal((await getRequest(stagingRequester, 'team-b', 'after-removal')).status, undefined, 'a removed remote is not served');

      // prod's file is broken: reported once, and prod keeps being served.
      mount({ prod: 'not: [a kubeconfig' });
      const bad = await c.waitForLog((l) => l.msg === 'remote kubeconfig file cannot be used; a remote already served from it keeps its connection');
      assert.match(String(bad.problem), /^file "prod" is not a kubeconfig/);
      await createRequest(requester, 'team-a', 'after-broken', { request: 'echo', params: { text: 'kept' } });
      assert.deepEqual((await waitForPhase(requester, 'team-a', 'after-broken', FINAL, 60_000)).status?.results, { out: 'kept' });
      assert.equal(c.lines.filter((l) => l.msg === 'remote cluster removed; its PipelineRuns are left as they are' && l.remote === 'prod').length, 0);
      assert.equal(c.lines.filter((l) => l.msg === 'remote kubeconfig file cannot be used; a remote already served from it keeps its connection').length, 1, 'said once, not every second');

      // Fixed, and staging back: staging's waiting request is served.
      mount({ prod: prodKc, staging: stagingKc });
      assert.equal((await waitForPhase(stagingRequester, 'team-b', 'after-removal', FINAL, 60_000)).status?.conditions?.[0]?.reason, 'Succeeded');
    } finally {
      await c.kill('SIGKILL');
      volume.remove();
    }
  });
});

/** The controller CLI with only the internal cluster given (remotes from Secrets). */
function runCliController(extra: string[]): ControllerProcess {
  return runCli(['controller', '--kubeconfig', env.internal.identities.controller.kubeconfigPath, '--namespace', NS, '--metrics-bind-address', '0', '--health-probe-bind-address', '0', '--log-level', 'debug', ...extra]);
}
