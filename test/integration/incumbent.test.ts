/**
 * A switch from the incumbent Go controller (konflux-ci/internal-services,
 * issue 45, first step): requests it left in flight are followed to their
 * end, none run twice. Real kube-apiservers and real Tekton (pods
 * simulated); the incumbent itself cannot be run in CI, so its writes come
 * from a STAND-IN that makes exactly what its source (HEAD ac3f07f) makes:
 *
 * - the PipelineRun: tekton/pipeline_run.go NewInternalRequestPipelineRun,
 *   WithInternalRequest, WithOwner, WithPipelineRef — `generateName:
 *   internalrequest-` in its namespace, the request's labels plus
 *   `internal-services.appstudio.openshift.io/name` and `…/namespace` and
 *   `pipelines.appstudio.openshift.io/type: release`, operator-lib's owner
 *   annotations, the request's params, its pipelineRef with, for the
 *   cluster resolver, `namespace` set to the request's namespace;
 * - the request: its finalizer (adapter.go EnsureFinalizerIsAdded), then
 *   `Succeeded` False/Running (MarkRunning), then `status.pipelineRun`
 *   (registerInternalRequestPipelineRunStatus), each a separate write.
 *
 * Cases: a request it is running; one whose run ended while both
 * controllers were down; one in the window between its create and its
 * status patch; its finalizer on finished requests (refused without the
 * opt-in right, released with it) and on a request deleted while its run
 * goes (the run cancelled first, then the deletion completes). Counted: PipelineRuns per request across both naming
 * schemes, and the controller's PipelineRun creates in the internal
 * apiserver's audit log.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AppsV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { applyObjects, ensureNamespace, ensureServiceAccount, installProject, loadManifests, startEnvironment, type Environment } from '../../src/localenv/index.js';
import { repoRoot } from '../../src/util/repo.js';
import type { InternalRequest } from '../../src/api/types.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';
import { INCUMBENT_FINALIZER } from '../../src/requests/incumbent.js';
import { INCUMBENT_LABEL_NAME, INCUMBENT_LABEL_NAMESPACE } from '../../src/tekton/pipelinerun.js';
import { AuditReader, type AuditEvent } from '../../bench/audit.js';
import { holdPipeline, IncumbentStandIn, RealIncumbent } from './incumbent-stand-in.js';
import { CLI, IR, NS, PR, listPipelineRuns, releaseRun, setRunConfig, startController, waitFinished, waitFor, type ControllerProcess } from './helpers.js';

/** The remote namespace of the requests: the incumbent passes it to the cluster resolver as the Pipeline's namespace, so it is the controller's. */
const TENANT = NS;
let env: Environment;
let internalAdmin: KubeConfig;
let remoteAdmin: KubeConfig;
let audit: AuditReader;
let controller: ControllerProcess | undefined;
const seenEvents: AuditEvent[] = [];

const remote = () => remoteAdmin.makeApiClient(CustomObjectsApi);
const internal = () => internalAdmin.makeApiClient(CustomObjectsApi);
const get = (name: string) => remote().getNamespacedCustomObject({ ...IR, namespace: TENANT, name }) as Promise<InternalRequest>;
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** The request a release pipeline sends today (spec.pipeline.pipelineRef), created by the requester's side. */
async function requestOf(name: string, extraRef: Array<{ name: string; value: string }> = [], withKind = true): Promise<InternalRequest> {
  return (await remote().createNamespacedCustomObject({
    ...IR,
    namespace: TENANT,
    body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name, namespace: TENANT, labels: { release: name } }, spec: { pipeline: { pipelineRef: { resolver: 'cluster', params: [...(withKind ? [{ name: 'kind', value: 'pipeline' }] : []), { name: 'name', value: 'hold' }, ...extraRef] } }, params: { image: name } } },
  })) as InternalRequest;
}

/** STAND-IN for the incumbent's createInternalRequestPipelineRun (tekton/pipeline_run.go). */
async function incumbentCreatesRun(req: InternalRequest): Promise<PipelineRun> {
  const ref = req.spec.pipeline!.pipelineRef as { resolver: string; params: Array<{ name: string; value: string }> };
  return (await internal().createNamespacedCustomObject({
    ...PR,
    namespace: NS,
    body: {
      apiVersion: 'tekton.dev/v1',
      kind: 'PipelineRun',
      metadata: {
        generateName: 'internalrequest-',
        namespace: NS,
        labels: { ...req.metadata.labels, [INCUMBENT_LABEL_NAME]: req.metadata.name, [INCUMBENT_LABEL_NAMESPACE]: req.metadata.namespace, 'pipelines.appstudio.openshift.io/type': 'release' },
        annotations: { 'operator-sdk/primary-resource': `${req.metadata.namespace}/${req.metadata.name}`, 'operator-sdk/primary-resource-type': 'InternalRequest.appstudio.redhat.com' },
      },
      spec: {
        params: Object.entries(req.spec.params ?? {}).map(([name, value]) => ({ name, value })),
        pipelineRef: { resolver: ref.resolver, params: [...ref.params, { name: 'namespace', value: req.metadata.namespace }] },
        taskRunTemplate: {},
      },
    },
  })) as PipelineRun;
}

/** STAND-IN for EnsureFinalizerIsAdded (a merge patch of the request). */
const incumbentAddsFinalizer = (name: string) => remote().patchNamespacedCustomObject({ ...IR, namespace: TENANT, name, body: { metadata: { finalizers: [INCUMBENT_FINALIZER] } } }, merge);
/** STAND-IN for MarkRunning's status patch, and then registerInternalRequestPipelineRunStatus's (status.pipelineRun). */
async function incumbentMarksRunning(name: string, run?: PipelineRun): Promise<void> {
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  await remote().patchNamespacedCustomObjectStatus({ ...IR, namespace: TENANT, name, body: { status: { startTime: now, conditions: [{ type: 'Succeeded', status: 'False', reason: 'Running', message: '', lastTransitionTime: now }] } } }, merge);
  if (run) await remote().patchNamespacedCustomObjectStatus({ ...IR, namespace: TENANT, name, body: { status: { pipelineRun: `${NS}/${run.metadata.name}` } } }, merge);
}

/** The runs of a request under both naming schemes: ours (`ir-<uid>`, labelled with its uid) and the incumbent's (its two labels). */
async function runsOf(req: InternalRequest): Promise<string[]> {
  const all = await listPipelineRuns(internalAdmin);
  return all
    .filter((pr) => pr.metadata.labels?.['internal-services.appstudio.redhat.com/request-uid'] === req.metadata.uid || (pr.metadata.labels?.[INCUMBENT_LABEL_NAME] === req.metadata.name && pr.metadata.labels?.[INCUMBENT_LABEL_NAMESPACE] === req.metadata.namespace))
    .map((pr) => pr.metadata.name!);
}

/** PipelineRun creates by the controller's identity so far (audit log). */
/** PipelineRuns created on the internal cluster (audit log), by this controller or by anyone else (the Go controller, real or its stand-in). */
function runCreates(): { controller: number; others: number } {
  seenEvents.push(...audit.readNew());
  const creates = seenEvents.filter((e) => e.objectRef?.resource === 'pipelineruns' && !e.objectRef.subresource && e.verb === 'create' && (e.responseStatus?.code ?? 0) < 300);
  const controller = creates.filter((e) => e.user?.username === env.internal.identities.controller.username).length;
  return { controller, others: creates.length - controller };
}

function controllerCreates(): number {
  return runCreates().controller;
}

const finished = (name: string): Promise<InternalRequest> => waitFinished(remoteAdmin, TENANT, name);

before(async () => {
  env = await startEnvironment({ tekton: true, audit: true });
  await installProject(env);
  internalAdmin = env.internal.identities.admin.kubeConfig();
  remoteAdmin = env.remote.identities.admin.kubeConfig();
  audit = new AuditReader('internal', env.internal.auditLogPath!);
  await ensureNamespace(remoteAdmin, TENANT);
  // Gated: a run ends when the test releases it.
  await applyObjects(internalAdmin, [holdPipeline()] as never);
  await setRunConfig(internalAdmin, { allowList: [TENANT], sources: { cluster: true } });
}, { timeout: 600_000 });

after(async () => {
  await controller?.kill('SIGKILL');
  await env?.stop();
});

describe('switching from the incumbent Go controller (its writes from a stand-in of its source, real Tekton, pods simulated)', () => {
  test('requests it left in flight are followed to the end: one PipelineRun each, none made here', { timeout: 300_000 }, async () => {
    // Before the switch, the incumbent runs: (a) a request it is running, (b) one whose run will end
    // while no controller runs, (c) one in the window between its create and its status patch.
    // By hand with INCUMBENT_BIN, (a) and (b) are the real Go controller's (their requests without `kind`: it appends it).
    const bin = process.env['INCUMBENT_BIN'];
    let a: InternalRequest, b: InternalRequest, runA: PipelineRun, runB: PipelineRun;
    if (bin) {
      await setRunConfig(internalAdmin, { allowList: [TENANT], sources: { cluster: true }, volumeClaim: { name: 'workspace', size: '1Gi' } });
      const go = new RealIncumbent(bin, { remoteKubeconfig: env.remote.identities.admin.kubeconfigPath, internalKubeconfig: env.internal.identities.admin.kubeconfigPath, namespace: NS });
      await go.start();
      a = await requestOf('go-running', [], false);
      b = await requestOf('go-ended', [], false);
      // Waited for as it writes them: its run (found by its two labels) and its finalizer; status.pipelineRun may come later, or not at all.
      const [ra, rb] = await Promise.all(['go-running', 'go-ended'].map((n) => waitFor(`the Go controller runs ${n}`, async () => {
        const r = await get(n);
        const run = (await listPipelineRuns(internalAdmin)).find((pr) => pr.metadata.labels?.[INCUMBENT_LABEL_NAME] === n && pr.metadata.labels?.[INCUMBENT_LABEL_NAMESPACE] === TENANT);
        return r.metadata.finalizers?.includes(INCUMBENT_FINALIZER) && run ? run : undefined;
      }, 60_000, 250)));
      await go.stop();
      console.log(`--- the Go controller (REAL, ${bin}) before the switch ---\n${go.log.join('\n')}\n---`);
      assert.deepEqual(go.errors, []);
      [runA, runB] = [ra!, rb!];
      await new Promise((r) => setTimeout(r, 1_000)); // it has stopped
    } else {
      a = await requestOf('go-running');
      runA = await incumbentCreatesRun(a);
      await incumbentAddsFinalizer('go-running');
      await incumbentMarksRunning('go-running', runA);
      b = await requestOf('go-ended');
      runB = await incumbentCreatesRun(b);
      await incumbentAddsFinalizer('go-ended');
      await incumbentMarksRunning('go-ended', runB);
    }
    const c = await requestOf('go-window');
    const runC = await incumbentCreatesRun(c);
    await incumbentAddsFinalizer('go-window');
    // The incumbent is stopped here. (b)'s run ends while no controller runs.
    await releaseRun(env, runB.metadata.name!);
    await waitFor('the ended run done', async () => {
      const pr = (await internal().getNamespacedCustomObject({ ...PR, namespace: NS, name: runB.metadata.name! })) as PipelineRun;
      return pr.status?.conditions?.some((x) => x.type === 'Succeeded' && x.status !== 'Unknown');
    }, 60_000, 250);

    controller = await startController(env);
    // (b): its outcome and results are written back, in this controller's shape.
    const doneB = await finished('go-ended');
    assert.equal(doneB.status?.conditions?.[0]?.reason, 'Succeeded', doneB.status?.conditions?.[0]?.message);
    assert.deepEqual(doneB.status?.results, { image: 'go-ended' });
    assert.equal(doneB.status?.pipelineRun, `${NS}/${runB.metadata.name}`);
    // (a) and (c): followed, Running in this controller's shape (Unknown/Running), naming the incumbent's run.
    for (const [name, run] of [['go-running', runA], ['go-window', runC]] as const) {
      const r = await waitFor(`${name} followed`, async () => {
        const x = await get(name);
        return x.status?.conditions?.[0]?.status === 'Unknown' && x.status.pipelineRun ? x : undefined;
      }, 60_000, 250);
      assert.deepEqual([r.status?.conditions?.[0]?.reason, r.status?.pipelineRun], ['Running', `${NS}/${run.metadata.name}`]);
    }
    for (const run of [runA, runC]) await releaseRun(env, run.metadata.name!);
    for (const name of ['go-running', 'go-window']) {
      const r = await finished(name);
      assert.equal(r.status?.conditions?.[0]?.reason, 'Succeeded', r.status?.conditions?.[0]?.message);
      assert.deepEqual(r.status?.results, { image: name });
    }
    // One PipelineRun per request across both naming schemes, the incumbent's, removed once the outcome is written (debug off).
    for (const req of [a, b, c]) await waitFor(`${req.metadata.name}'s run removed`, async () => (await runsOf(req)).length === 0, 60_000, 500);
    const { controller: creates, others } = runCreates();
    console.log(`incumbent handover: 3 requests, ${others} PipelineRuns made by the incumbent, ${creates} made by this controller (counted in the audit log)`);
    assert.equal(creates, 0, 'no PipelineRun created by this controller');
    assert.equal(others, 3, 'one PipelineRun per request, the incumbent\'s');
  });

  test('its finalizer: refused without the opt-in right (said once), released with it from finished requests, and from a deleted one after its run is cancelled', { timeout: 300_000 }, async () => {
    assert.ok(controller, 'runs after the handover test');
    const names = ['go-running', 'go-ended', 'go-window'];
    // Without config/rbac/remote-incumbent the remote refuses the patch: the finalizers stay, and the log says what to apply, once.
    await controller.waitForLog((l) => String(l['msg']).includes('config/rbac/remote-incumbent'), 30_000);
    for (const n of names) assert.deepEqual((await get(n)).metadata.finalizers, [INCUMBENT_FINALIZER], `${n} keeps it without the right`);
    assert.equal(controller.lines.filter((l) => String(l['msg']).includes('config/rbac/remote-incumbent')).length, 1, 'said once');

    // A request the incumbent finished long ago (MarkSucceeded: True/Succeeded), and one it is running when the switch happens:
    // the Go controller's history, written while this controller is stopped (as it is before a switch). Written while it ran,
    // a new request would be this controller's to run before the stand-in's writes reach it: with the installed Pipeline
    // read from its cache (no ResolutionRequest to wait for), it is decided within milliseconds.
    await controller.kill('SIGTERM');
    await requestOf('go-old');
    await incumbentAddsFinalizer('go-old');
    const t = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    await remote().patchNamespacedCustomObjectStatus({ ...IR, namespace: TENANT, name: 'go-old', body: { status: { startTime: t, completionTime: t, conditions: [{ type: 'Succeeded', status: 'True', reason: 'Succeeded', message: '', lastTransitionTime: t }] } } }, merge);
    const d = await requestOf('go-deleted');
    const runD = await incumbentCreatesRun(d);
    await incumbentAddsFinalizer('go-deleted');
    await incumbentMarksRunning('go-deleted', runD);

    // The administrators apply the opt-in right; the controller is started again (or asks again 10 minutes after the refusal).
    await applyObjects(remoteAdmin, loadManifests(join(repoRoot(), 'config', 'rbac', 'remote-incumbent')) as never);
    controller = await startController(env);
    for (const n of [...names, 'go-old']) {
      await waitFor(`${n} released`, async () => !(await get(n)).metadata.finalizers?.length, 60_000, 250);
    }
    assert.equal((await get('go-old')).status?.conditions?.[0]?.reason, 'Succeeded', 'the incumbent\'s outcome stands');
    await waitFor('go-deleted followed', async () => (await get('go-deleted')).status?.conditions?.[0]?.status === 'Unknown', 60_000, 250);

    // The requester deletes the running request: its run is cancelled, then the finalizer goes and the deletion completes.
    const started = Date.now();
    await remote().deleteNamespacedCustomObject({ ...IR, namespace: TENANT, name: 'go-deleted' });
    await waitFor('go-deleted gone', async () => {
      try {
        await get('go-deleted');
        return false;
      } catch (e) {
        return (e as { code?: number }).code === 404;
      }
    }, 60_000, 250);
    const goneAfter = Date.now() - started;
    const cancelled = (await listPipelineRuns(internalAdmin)).find((pr) => pr.metadata.name === runD.metadata.name);
    assert.ok(!cancelled || cancelled.spec.status === 'Cancelled', 'the run was asked to stop before the request went');
    await waitFor('go-deleted\'s run removed', async () => (await runsOf(d)).length === 0, 60_000, 500);
    // The deletion of a request the incumbent finished: at once, nothing holds it.
    await remote().deleteNamespacedCustomObject({ ...IR, namespace: TENANT, name: 'go-old' });
    await waitFor('go-old gone', async () => get('go-old').then(() => false, (e: { code?: number }) => e.code === 404), 10_000, 100);
    const creates = controllerCreates();
    console.log(`incumbent finalizer: refused once without config/rbac/remote-incumbent; with it released from 4 finished requests; a deleted running request went after ${goneAfter} ms, its run cancelled first; ${creates} PipelineRuns made by this controller`);
    assert.equal(creates, 0);
  });

  test('never two controllers at once: while the Go controller\'s Deployment has replicas or its Lease is held, nothing is served and /readyz says what to scale down; once both show it gone, requests run', { timeout: 300_000 }, async () => {
    await controller?.kill('SIGTERM');
    controller = undefined;
    // STAND-IN for the incumbent's installation (its config/default and main.go names): a Deployment with a replica, its leader's Lease freshly renewed.
    const INC_NS = 'internal-services-system';
    const micro = () => new Date().toISOString().replace(/Z$/, '000Z');
    await ensureNamespace(internalAdmin, INC_NS);
    await applyObjects(internalAdmin, [
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'internal-services-controller-manager', namespace: INC_NS }, spec: { replicas: 1, selector: { matchLabels: { 'control-plane': 'controller-manager' } }, template: { metadata: { labels: { 'control-plane': 'controller-manager' } }, spec: { containers: [{ name: 'manager', image: 'quay.io/konflux-ci/internal-services:stand-in' }] } } } },
      { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'b548bb9d.redhat.com', namespace: INC_NS }, spec: { holderIdentity: 'internal-services-controller-manager-6b9f7_1c2d', leaseDurationSeconds: 15, renewTime: micro(), acquireTime: micro() } },
    ] as never);
    // Not waited for until its workers run: they wait for the check.
    controller = await startController(env, [], { workers: false });
    const refused = await controller.waitForLog((l) => String(l['msg']).startsWith('not serving while the Go controller may run'), 30_000);
    assert.match(String(refused['msg']), /has 1 replica\(s\) asked for.*scale deployment internal-services-controller-manager --replicas=0/);
    assert.match(String(refused['msg']), /is held by "internal-services-controller-manager-6b9f7_1c2d"/);
    const readyz = await fetch(`http://127.0.0.1:${controller.healthPort}/readyz?verbose`);
    const body = await readyz.text();
    assert.equal(readyz.status, 503, body);
    assert.match(body, /\[-\]incumbent/);
    // A request arriving meanwhile is not touched (the incumbent would be the one to serve it).
    // (This controller asks a cluster-resolver reference to name its namespace; the incumbent added it itself.)
    const e = await requestOf('after-switch', [{ name: 'namespace', value: NS }]);
    await new Promise((r) => setTimeout(r, 3_000));
    assert.equal((await get('after-switch')).status?.conditions, undefined, 'not served while the incumbent may run');
    assert.deepEqual(await runsOf(e), []);

    // The operator scales the incumbent to 0; its leader's lease runs out (15 s after its last renewal).
    await internalAdmin.makeApiClient(AppsV1Api).patchNamespacedDeployment({ namespace: INC_NS, name: 'internal-services-controller-manager', body: { spec: { replicas: 0 } } }, merge);
    const cleared = await controller.waitForLog((l) => String(l['msg']).startsWith('the Go controller does not run'), 60_000);
    assert.match(String(cleared['msg']), /scaled to 0, Lease internal-services-system\/b548bb9d\.redhat\.com not held/);
    const run = await waitFor('after-switch runs', async () => (await runsOf(e))[0], 30_000, 250).catch((err: unknown) => {
      throw new Error(`${String(err)}; the controller said:\n${controller?.lines.slice(-15).map((l) => JSON.stringify(l)).join('\n')}`);
    });
    await releaseRun(env, run);
    const done = await finished('after-switch');
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', done.status?.conditions?.[0]?.message);
    const ready = await fetch(`http://127.0.0.1:${controller.healthPort}/readyz?verbose`).then((r) => r.text());
    assert.match(ready, /\[\+\]incumbent ok/);
    console.log(`incumbent preflight: refused while its Deployment had 1 replica and its Lease was held; served ${Date.parse(String(cleared['time'])) - Date.parse(String(refused['time']))} ms after the first refusal, once scaled to 0 and the lease ran out; 1 request, 1 PipelineRun`);
  });

  test('migrate check: which requests this controller would refuse and why, and the configuration it needs; it changes nothing', { timeout: 120_000 }, async () => {
    // No controller runs: the requests below stay as sent.
    await controller?.kill('SIGTERM');
    controller = undefined;
    // The Go controller's configuration, in its namespace: any git URL (an empty allowedGitResolverURLs), its allowList.
    await ensureNamespace(internalAdmin, 'internal-services-system');
    await applyObjects(internalAdmin, [{ apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name: 'config', namespace: 'internal-services-system' }, spec: { allowList: [TENANT], allowedGitResolverURLs: [] } }] as never);
    // Requests sent yesterday: one from a git repository (any was fine there), one naming a service account, one from a namespace the Go controller did not serve either.
    const git = { resolver: 'git', params: [{ name: 'url', value: 'https://github.com/example/release-catalog.git' }, { name: 'revision', value: 'main' }, { name: 'pathInRepo', value: 'pipelines/hold.yaml' }] };
    await remote().createNamespacedCustomObject({ ...IR, namespace: TENANT, body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name: 'from-git', namespace: TENANT }, spec: { pipeline: { pipelineRef: git }, params: { image: 'x' } } } });
    await remote().createNamespacedCustomObject({ ...IR, namespace: TENANT, body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name: 'with-sa', namespace: TENANT }, spec: { request: 'hold', params: { image: 'x' }, serviceAccount: 'releaser' } } });
    // The service account it names exists on the internal cluster (migrate check lists them: a missing one would stay refused).
    await ensureServiceAccount(internalAdmin, NS, 'releaser');
    await ensureNamespace(remoteAdmin, 'team-unlisted');
    await remote().createNamespacedCustomObject({ ...IR, namespace: 'team-unlisted', body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name: 'elsewhere', namespace: 'team-unlisted' }, spec: { request: 'hold', params: { image: 'x' } } } });
    const versions = async () => JSON.stringify([
      ...((await remote().listClusterCustomObject({ ...IR })) as { items: InternalRequest[] }).items.map((r) => `${r.metadata.namespace}/${r.metadata.name}@${r.metadata.resourceVersion}`).sort(),
      ...((await internal().listClusterCustomObject({ group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalservicesconfigs' })) as { items: InternalRequest[] }).items.map((c) => `${c.metadata.namespace}/${c.metadata.name}@${c.metadata.resourceVersion}`),
    ]);
    const before = await versions();
    const run = await promisify(execFile)(process.execPath, [CLI, 'migrate', 'check', '--kubeconfig', env.internal.identities.admin.kubeconfigPath, '--remote-kubeconfig', env.remote.identities.admin.kubeconfigPath, '--namespace', NS]).catch((e: { stdout?: string; stderr?: string; message: string }) => assert.fail(`migrate check failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`));
    const text = run.stdout;
    console.log(`--- migrate check (real apiservers; pods SIMULATED elsewhere in this file) ---\n${text}---`);
    assert.match(text, /the Go controller's configuration: internal-services-system\/config/);
    assert.match(text, /this controller's configuration: internal-services\/config; requests judged under it/);
    assert.match(text, new RegExp(`${TENANT}/from-git  \\(Go: new\\)\\n    here: +REFUSED \\(REQUEST_SOURCE_NOT_ALLOWED\\): .*the git resolver is not allowed.*\\n    with the proposal: runs: its reference passes`));
    assert.match(text, new RegExp(`${TENANT}/with-sa .*\\n    here: +REFUSED \\(REQUEST_SERVICE_ACCOUNT_NOT_ALLOWED\\).*\\n    with the proposal: runs\\n`));
    assert.match(text, /team-unlisted\/elsewhere .*\n    here: +REFUSED \(REQUEST_NAMESPACE_NOT_ALLOWED\)/);
    assert.match(text, /allowedGitResolverURLs:\n\s+- https:\/\/github\.com\/example\/release-catalog\.git/);
    assert.match(text, /allowedServiceAccounts:\n\s+- releaser/);
    assert.doesNotMatch(text, /allowList:[^]*team-unlisted/, 'the Go controller did not serve it either');
    assert.equal(await versions(), before, 'nothing changed');
  });

  test('the way back: --drain finishes what the Go controller cannot continue, migrate rollback refuses until then and hands the rest over; one PipelineRun per request across both naming schemes', { timeout: 420_000 }, async () => {
    await controller?.kill('SIGTERM');
    controller = undefined;
    const APPROVALS_NS = 'approvals';
    await ensureNamespace(remoteAdmin, APPROVALS_NS);
    await setRunConfig(internalAdmin, {
      allowList: [TENANT],
      sources: { cluster: true },
      capacity: { maxRunning: 3 },
      rules: [{ name: 'gate', namespaces: [APPROVALS_NS], pipelines: ['hold'], requireApproval: true, approvalTimeout: '45s' }],
    });
    // STAND-IN for this controller's own installation (a Deployment with a replica): the rollback must see it stopped.
    await applyObjects(internalAdmin, [
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'internal-services-controller', namespace: NS }, spec: { replicas: 1, selector: { matchLabels: { app: 'internal-services' } }, template: { metadata: { labels: { app: 'internal-services' } }, spec: { containers: [{ name: 'manager', image: 'internal-services:stand-in' }] } } } },
    ] as never);
    const created = (name: string, ns = TENANT, spec: Record<string, unknown>, labels: Record<string, string> = {}) =>
      remote().createNamespacedCustomObject({ ...IR, namespace: ns, body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name, namespace: ns, labels: { release: name, ...labels } }, spec } }) as Promise<InternalRequest>;
    const installed = (image: string) => ({ request: 'hold', params: { image } });
    const phaseIs = (name: string, phase: string, ns = TENANT) => waitFor(`${ns}/${name} ${phase}`, async () => {
      const r = (await remote().getNamespacedCustomObject({ ...IR, namespace: ns, name })) as InternalRequest;
      return r.status?.conditions?.[1]?.reason === phase ? r : undefined;
    }, 60_000, 250);
    const KEY = 'internal-services.appstudio.redhat.com/idempotency-key';
    seenEvents.push(...audit.readNew());
    const mark = seenEvents.length;

    // This controller serves: three run (the capacity), one queued behind them, one following another's run, one awaiting approval.
    controller = await startController(env);
    const run1 = await requestOf('back-running', [{ name: 'namespace', value: NS }]);
    const run2 = await requestOf('back-ends-while-down', [{ name: 'namespace', value: NS }]);
    const inst = await created('back-installed', TENANT, installed('back-installed'), { [KEY]: 'k1' });
    for (const n of ['back-running', 'back-ends-while-down', 'back-installed']) await phaseIs(n, 'Running');
    const queued = await requestOf('back-queued', [{ name: 'namespace', value: NS }]);
    await phaseIs('back-queued', 'Queued');
    const follower = await created('back-follows', TENANT, installed('back-installed'), { [KEY]: 'k1' });
    await phaseIs('back-follows', 'Following');
    const gated = await created('back-approval', APPROVALS_NS, installed('back-approval'));
    await phaseIs('back-approval', 'AwaitingApproval', APPROVALS_NS);

    // Draining: restarted with --drain; a request that arrives now is left for the Go controller.
    await controller.kill('SIGTERM');
    controller = await startController(env, ['--drain']);
    const fresh = await remote().createNamespacedCustomObject({ ...IR, namespace: TENANT, body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name: 'back-new', namespace: TENANT, labels: { release: 'back-new' } }, spec: { pipeline: { pipelineRef: { resolver: 'cluster', params: [{ name: 'name', value: 'hold' }] } }, params: { image: 'back-new' } } } }) as InternalRequest;
    // One arrives in this controller's shape (the cluster resolver's namespace given): the Go controller would append it again and hang.
    await remote().createNamespacedCustomObject({ ...IR, namespace: TENANT, body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name: 'back-new-ns', namespace: TENANT }, spec: { pipeline: { pipelineRef: { resolver: 'cluster', params: [{ name: 'name', value: 'hold' }, { name: 'namespace', value: NS }] } }, params: { image: 'back-new-ns' } } } });
    const rollback = (dry: boolean) => promisify(execFile)(process.execPath, [CLI, 'migrate', 'rollback', '--kubeconfig', env.internal.identities.admin.kubeconfigPath, '--remote-kubeconfig', env.remote.identities.admin.kubeconfigPath, '--namespace', NS, ...(dry ? ['--dry-run'] : [])])
      .then((r) => ({ code: 0, out: r.stdout }), (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? -1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` }));
    const refused = await rollback(false);
    console.log(`--- migrate rollback while draining (real apiservers; pods SIMULATED) ---\n${refused.out}---`);
    assert.equal(refused.code, 1, refused.out);
    assert.match(refused.out, /REFUSED: this controller may still run and 5 request\(s\) block it; nothing was written/);
    assert.match(refused.out, /\/back-new-ns .*\n    BLOCKS: new, in a shape the Go controller cannot run: its cluster-resolver pipelineRef gives "namespace", which the Go controller appends again[^\n]*; let this controller run it to its end first[^\n]*without the namespace and kind params/);
    assert.match(refused.out, /this controller's Deployment internal-services\/internal-services-controller has 1 replica/);
    for (const [n, why] of [['back-installed', /spec\.request/], ['back-queued', /queued/], ['back-follows', /same work again/], ['back-approval', /without the approval/]] as const) {
      assert.match(refused.out, new RegExp(`/${n} .*\\n    BLOCKS: [^\\n]*${why.source}`), n);
    }
    assert.match(refused.out, /\/back-new  \(here: new\)\n    take:/);
    assert.equal((await get('back-new')).status?.conditions, undefined, 'left for the Go controller');

    // The drain: the spec.request run ends here, its follower with it, the queued request gets the slot; the approval runs out.
    await releaseRun(env, (await runsOf(inst))[0]!);
    for (const n of ['back-installed', 'back-follows']) assert.equal((await finished(n)).status?.conditions?.[0]?.reason, 'Succeeded');
    await phaseIs('back-queued', 'Running');
    const timedOut = await waitFor('the approval to run out', async () => {
      const r = (await remote().getNamespacedCustomObject({ ...IR, namespace: APPROVALS_NS, name: 'back-approval' })) as InternalRequest;
      const reason = r.status?.conditions?.[0]?.reason;
      return reason && reason !== 'Running' ? r : undefined;
    }, 90_000, 500);
    assert.notEqual(timedOut.status?.conditions?.[0]?.reason, 'Succeeded');
    assert.equal((await get('back-new')).status?.conditions, undefined, 'still left for the Go controller');

    // Stop this controller (its Deployment to 0); one run ends while neither controller runs.
    await controller.kill('SIGTERM');
    controller = undefined;
    await internalAdmin.makeApiClient(AppsV1Api).patchNamespacedDeployment({ namespace: NS, name: 'internal-services-controller', body: { spec: { replicas: 0 } } }, merge);
    const run2Name = (await runsOf(run2))[0]!;
    await releaseRun(env, run2Name);
    await waitFor('the run that ends while both are down', async () => {
      const pr = (await internal().getNamespacedCustomObject({ ...PR, namespace: NS, name: run2Name })) as PipelineRun;
      return pr.status?.conditions?.some((x) => x.type === 'Succeeded' && x.status !== 'Unknown');
    }, 60_000, 250);

    // Its requester sends it again in the Go controller's shape (back-new is that shape); the old one is withdrawn.
    const blocked = await rollback(true);
    assert.match(blocked.out, /\/back-new-ns .*\n    BLOCKS: new, in a shape/);
    await remote().deleteNamespacedCustomObject({ ...IR, namespace: TENANT, name: 'back-new-ns' });
    const handed = await rollback(false);
    console.log(`--- migrate rollback (real apiservers; pods SIMULATED) ---\n${handed.out}---`);
    assert.equal(handed.code, 0, handed.out);
    assert.match(handed.out, /unfinished requests: 4 \(the Go controller takes 1 as they are; 0 released; 3 handed over; 0 blocking\)/);
    for (const req of [run1, run2, queued]) {
      const [name] = await runsOf(req);
      const pr = (await internal().getNamespacedCustomObject({ ...PR, namespace: NS, name: name! })) as PipelineRun;
      assert.equal(pr.metadata.labels?.['pipelines.appstudio.openshift.io/type'], 'release');
      assert.equal(pr.metadata.annotations?.['operator-sdk/primary-resource'], `${TENANT}/${req.metadata.name}`);
      const r = await get(req.metadata.name!);
      assert.ok(r.status?.startTime, 'a startTime for the Go controller');
      assert.deepEqual([r.status?.conditions?.[0]?.status, r.status?.conditions?.[0]?.reason], ['Unknown', 'Running'], 'the requester still waits');
    }
    const again = await rollback(false);
    assert.equal(again.code, 0, again.out);
    assert.doesNotMatch(again.out, /written:/, 'a second rollback writes nothing');

    // The Go controller starts: a STAND-IN of its reconcile loop (incumbent-stand-in.ts), or, by hand
    // with INCUMBENT_BIN=$(hack/incumbent/build.sh), the real one (its SERVICE_NAMESPACE this
    // controller's, where its configuration is read: the allowList above, and the volumeClaim it needs).
    const bin = process.env['INCUMBENT_BIN'];
    if (bin) await setRunConfig(internalAdmin, { allowList: [TENANT], sources: { cluster: true }, volumeClaim: { name: 'workspace', size: '1Gi' } });
    const go = bin
      ? new RealIncumbent(bin, { remoteKubeconfig: env.remote.identities.admin.kubeconfigPath, internalKubeconfig: env.internal.identities.admin.kubeconfigPath, namespace: NS })
      : new IncumbentStandIn({ remote: remoteAdmin, internal: internalAdmin, namespace: NS, config: { allowList: [TENANT] } });
    const who = bin ? `REAL, ${bin}` : 'STAND-IN';
    await go.start();
    try {
      assert.equal((await finished('back-ends-while-down')).status?.conditions?.[0]?.reason, 'Succeeded');
      const goRun = await waitFor('the Go controller\'s run of back-new', async () => (await runsOf(fresh))[0], 30_000, 250);
      for (const req of [run1, queued]) await releaseRun(env, (await runsOf(req))[0]!);
      await releaseRun(env, goRun);
      for (const req of [run1, run2, queued, fresh]) {
        const r = await finished(req.metadata.name!);
        assert.equal(r.status?.conditions?.[0]?.reason, 'Succeeded', `${req.metadata.name}: ${r.status?.conditions?.[0]?.message}`);
        assert.deepEqual(r.status?.results, { image: req.metadata.name });
      }
      for (const req of [run1, run2, queued, fresh]) await waitFor(`${req.metadata.name}'s run removed`, async () => (await runsOf(req)).length === 0, 60_000, 500);
    } finally {
      await go.stop();
      console.log(`--- the Go controller (${who}) ---\n${go.log.join('\n')}${go.errors.length ? `\nerrors:\n${go.errors.join('\n')}` : ''}\n---`);
    }
    assert.deepEqual(go.errors, [], 'the Go controller met nothing it would crash or loop on');
    assert.equal(go.created.length, 1, `the Go controller made one run (for the request that arrived during the drain): ${go.created.join(', ')}`);
    // PipelineRuns per request, across both naming schemes, from the internal apiserver's audit log.
    seenEvents.push(...audit.readNew());
    // Ours are named after the request's uid; the Go controller's (generateName) are its identity's creates (the stand-in's: admin) since this test began, all for back-new.
    const creates = seenEvents.slice(mark).filter((e) => e.objectRef?.resource === 'pipelineruns' && !e.objectRef.subresource && e.verb === 'create' && (e.responseStatus?.code ?? 0) < 300);
    const ourNames = new Map([run1, run2, inst, queued, follower, gated, fresh].map((r) => [`ir-${r.metadata.uid}`, r.metadata.name!]));
    const perRequest = new Map<string, number>();
    for (const e of creates) {
      const byUs = e.user?.username === env.internal.identities.controller.username;
      const name = byUs ? (ourNames.get(e.objectRef?.name ?? '') ?? `unknown run ${e.objectRef?.name}`) : e.user?.username === env.internal.identities.admin.username ? 'back-new' : undefined;
      if (name) perRequest.set(name, (perRequest.get(name) ?? 0) + 1);
    }
    console.log(`rollback handover: PipelineRuns created per request: ${[...perRequest].map(([k, v]) => `${k}=${v}`).join(', ')}`);
    assert.deepEqual(Object.fromEntries(perRequest), { 'back-running': 1, 'back-ends-while-down': 1, 'back-installed': 1, 'back-queued': 1, 'back-new': 1 });
  });
});
