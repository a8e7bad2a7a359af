/**
 * spec.pipeline through Tekton's bundles resolver, end to end against a REAL
 * OCI registry: distribution v3.1.2 serving plain HTTP on 127.0.0.1
 * (env.registry), bundles pushed to it through its v2 API
 * (src/localenv/real/oci.ts), the real Tekton bundles resolver reading them
 * (for the controller's ResolutionRequests and for the TaskRuns Tekton
 * makes), real Tekton running the PipelineRuns; only the TaskRun pods are
 * simulated (SimulatedKubelet). The controller runs as its CLI process.
 *
 * The bundle is shaped like a release catalog's: the Pipeline `release` and
 * its Tasks `prepare` and `sign` in one image; the Pipeline references its
 * Tasks through the bundles resolver at $(params.taskBundle), which the
 * request chooses (a tag, or a digest where the rule wants digests).
 */
import { after, before, describe, test, type TestContext } from 'node:test';
import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { parse as parseYaml } from 'yaml';
import { startEnvironment, type Environment, ensureNamespace, grantRequester, installProject, type BundleResource, type PushedBundle, type Registry } from '../../src/localenv/index.js';
import { RESOLUTION_REQUEST, resolutionRequest } from '../../src/tekton/resolve.js';
import { ANNOTATION_SOURCES } from '../../src/tekton/pipelinerun.js';
import type { InternalRequestSpec } from '../../src/api/types.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';
import { createRequest, NS, onlyPipelineRunOf, releaseRun, messageOf, setRunConfigAndWait, simulatedStep, startController, waitFor, waitForPhase, type ControllerProcess } from './helpers.js';

const TENANT = 'release-team';
const FINAL = ['Succeeded', 'Failed', 'Rejected'];
/** Allowed by tag or digest. */
const RELEASE = 'catalog/release';
/** Allowed only by digest. */
const PINNED = 'catalog/pinned';
/** Not allowed at all. */
const ELSEWHERE = 'elsewhere/release';

let env: Environment;
let registry: Registry;
let internalAdmin: KubeConfig;
let requester: KubeConfig;
let controller: ControllerProcess;
let v1: PushedBundle;
let pinned: PushedBundle;
let elsewhere: PushedBundle;

const bundlesRef = (bundle: string, name: string, kind: string) => ({
  resolver: 'bundles',
  params: [{ name: 'bundle', value: bundle }, { name: 'name', value: name }, { name: 'kind', value: kind }],
});

/** The catalog's bundle; `label` tells versions apart (the Pipeline's description, the signature's prefix). */
function catalog(label: string): BundleResource[] {
  return [
    {
      apiVersion: 'tekton.dev/v1',
      kind: 'Pipeline',
      metadata: { name: 'release' },
      spec: {
        description: `release pipeline ${label}`,
        params: [{ name: 'image' }, { name: 'taskBundle' }, { name: 'hold', default: '' }],
        results: [{ name: 'signature', value: '$(tasks.sign.results.signature)' }],
        tasks: [
          { name: 'prepare', params: [{ name: 'hold', value: '$(params.hold)' }], taskRef: bundlesRef('$(params.taskBundle)', 'prepare', 'task') },
          {
            name: 'sign',
            runAfter: ['prepare'],
            params: [{ name: 'image', value: '$(params.image)' }, { name: 'hold', value: '$(params.hold)' }],
            taskRef: bundlesRef('$(params.taskBundle)', 'sign', 'task'),
          },
        ],
      },
    },
    {
      apiVersion: 'tekton.dev/v1',
      kind: 'Task',
      metadata: { name: 'prepare' },
      // SIMULATED_DURATION: "" runs the default time, "gate" until the test releases the pod.
      spec: { params: [{ name: 'hold', default: '' }], steps: [simulatedStep('prepare', { SIMULATED_DURATION: '$(params.hold)' })] },
    },
    {
      apiVersion: 'tekton.dev/v1',
      kind: 'Task',
      metadata: { name: 'sign' },
      spec: {
        params: [{ name: 'image' }, { name: 'hold', default: '' }],
        results: [{ name: 'signature' }],
        steps: [simulatedStep('sign', { SIMULATED_RESULT_signature: `${label}:$(params.image)`, SIMULATED_DURATION: '$(params.hold)' })],
      },
    },
  ];
}

/** A request for the Pipeline `release` of `bundle`, its Tasks from `taskBundle`. */
const byBundle = (bundle: string, taskBundle: string, params: Record<string, string> = {}): InternalRequestSpec => ({
  pipeline: { pipelineRef: bundlesRef(bundle, 'release', 'pipeline') },
  params: { image: 'quay.io/org/app@sha256:abc', taskBundle, ...params },
});


/** The pipeline tasks of a PipelineRun's embedded spec, by task name: their taskRef (none: the Task runs embedded) and taskSpec as JSON text. */
function tasksOf(pr: PipelineRun): Record<string, { taskRef: unknown; spec: string }> {
  const tasks = (pr.spec.pipelineSpec?.['tasks'] ?? []) as Array<{ name: string; taskRef?: unknown; taskSpec?: unknown }>;
  return Object.fromEntries(tasks.map((t) => [t.name, { taskRef: t.taskRef, spec: JSON.stringify(t.taskSpec ?? null) }]));
}

interface TaskRunView {
  spec: { taskRef?: unknown; taskSpec?: unknown };
  status?: { conditions?: Array<{ reason?: string }> };
}

/** The TaskRun of pipeline task `task` of a PipelineRun, once Tekton made it. */
async function taskRunOf(prName: string, task: string, timeoutMs = 60_000): Promise<TaskRunView> {
  const custom = internalAdmin.makeApiClient(CustomObjectsApi);
  return waitFor(`TaskRun ${task} of ${prName}`, async () => {
    const l = (await custom.listNamespacedCustomObject({ group: 'tekton.dev', version: 'v1', plural: 'taskruns', namespace: NS, labelSelector: `tekton.dev/pipelineRun=${prName},tekton.dev/pipelineTask=${task}` })) as { items: TaskRunView[] };
    return l.items[0];
  }, timeoutMs);
}

/** The Task a TaskRun runs was the one read at `label`'s digest: embedded, with that version's marker, nothing for Tekton to fetch. */
function runsEmbedded(tr: TaskRunView, label: string, other: string): void {
  assert.equal(tr.spec.taskRef, undefined, 'no reference for Tekton to fetch again');
  const text = JSON.stringify(tr.spec.taskSpec);
  // (Tekton substitutes the params into the TaskRun's copy: the marker prefix tells the versions apart.)
  assert.ok(text.includes(`"${label}:`) && !text.includes(`"${other}:`), `the Task as checked at ${label}: ${text}`);
}

async function pipelineRun(name: string): Promise<PipelineRun & { status?: { pipelineSpec?: Record<string, unknown> } }> {
  return (await internalAdmin.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({ group: 'tekton.dev', version: 'v1', plural: 'pipelineruns', namespace: NS, name })) as never;
}

/** The registry's log (its access log included: one line per HTTP request). */
const registryLog = (): string => readFileSync(registry.process.logPath, 'utf8');

/** Access-log lines of manifest reads (GET or HEAD) from `repository`. */
const fetchesOf = (repository: string): string[] => registryLog().split('\n').filter((l) => l.includes(`"GET /v2/${repository}/manifests/`) || l.includes(`"HEAD /v2/${repository}/manifests/`));

const hex = (digest: string): string => digest.replace(/^sha256:/, '');

/** Says, in the test's output, what ran and that its pods were simulated. */
function shows(t: TestContext, what: string): void {
  t.diagnostic(`${what} (real Tekton and real registry; pods SIMULATED, no kubelet)`);
}

before(async () => {
  env = await startEnvironment({ tekton: true, registry: true });
  registry = env.registry!;
  await installProject(env);
  internalAdmin = env.internal.identities.admin.kubeConfig();
  requester = env.remote.identities.requester!.kubeConfig();
  await grantRequester(env, TENANT);
  v1 = await registry.pushBundle(RELEASE, 'v1', catalog('v1'));
  pinned = await registry.pushBundle(PINNED, 'v1', catalog('pinned'));
  elsewhere = await registry.pushBundle(ELSEWHERE, 'v1', catalog('elsewhere'));
  await setRunConfigAndWait(internalAdmin, undefined, {
    allowList: [TENANT],
    sources: {
      bundles: [
        { repositories: [`${registry.host}/${RELEASE}`] },
        { repositories: [`${registry.host}/${PINNED}`], digestOnly: true },
      ],
      resolutionTimeout: '30s',
    },
  });
  controller = await startController(env);
});

after(async () => {
  await controller?.kill('SIGKILL');
  await env?.stop();
});

describe('spec.pipeline with the bundles resolver and a real OCI registry, real Tekton (pods simulated)', () => {
  test('the real bundles resolver reads a pushed bundle over plain HTTP on loopback, with no credentials and no ServiceAccount in the namespace', async (t) => {
    t.diagnostic(`registry: distribution ${registry.version} at http://${registry.host}, ready ${registry.startupMs} ms after it was asked for`);
    // A namespace with nothing in it (no "default" ServiceAccount: this
    // apiserver has no controller that would make one): the resolver's
    // keychain looks the account up, finds none, and goes on without credentials.
    await ensureNamespace(internalAdmin, 'bundles-probe');
    const custom = internalAdmin.makeApiClient(CustomObjectsApi);
    await custom.createNamespacedCustomObject({ ...RESOLUTION_REQUEST, namespace: 'bundles-probe', body: resolutionRequest('bundles-probe', 'probe', 'bundles', [{ name: 'bundle', value: v1.tagRef }, { name: 'name', value: 'sign' }, { name: 'kind', value: 'task' }]) });
    const rr = await waitFor('the ResolutionRequest to be answered', async () => {
      const r = (await custom.getNamespacedCustomObject({ ...RESOLUTION_REQUEST, namespace: 'bundles-probe', name: 'probe' })) as { status?: { data?: string; refSource?: { uri?: string; digest?: Record<string, string>; entryPoint?: string }; conditions?: Array<{ status?: string; message?: string }> } };
      return r.status?.conditions?.some((c) => c.status === 'True' || c.status === 'False') ? r : undefined;
    }, 30_000);
    assert.equal(rr.status?.conditions?.[0]?.status, 'True', rr.status?.conditions?.[0]?.message);
    assert.deepEqual(rr.status?.refSource, { uri: v1.repository, digest: { sha256: hex(v1.digest) }, entryPoint: 'sign' });
    const task = parseYaml(Buffer.from(rr.status?.data ?? '', 'base64').toString('utf8')) as BundleResource;
    assert.deepEqual(task, catalog('v1')[2]);
    // Over plain HTTP, from Tekton's resolver (go-containerregistry), by the tag.
    assert.match(registryLog(), /"GET \/v2\/catalog\/release\/manifests\/v1 HTTP\/1\.1" 200 .*go-containerregistry/);
  });

  test('by tag, under a rule without digestOnly: resolved, pinned to the digest the registry holds, run; what ran is recorded', async (t) => {
    const created = await createRequest(requester, TENANT, 'by-tag', byBundle(v1.tagRef, v1.tagRef));
    const pr = await onlyPipelineRunOf(internalAdmin, created.metadata.uid!);
    assert.equal(pr.spec.pipelineRef, undefined, 'the checked Pipeline runs embedded');
    assert.equal(pr.spec.pipelineSpec?.['description'], 'release pipeline v1');
    const tasks = tasksOf(pr);
    for (const task of ['prepare', 'sign']) assert.equal(tasks[task]?.taskRef, undefined, `tasks[${task}] runs embedded, as read at the digest that was pushed`);
    assert.ok(tasks['sign']?.spec.includes('v1:$(params.image)'), tasks['sign']?.spec);
    const sources = JSON.parse(pr.metadata.annotations?.[ANNOTATION_SOURCES] ?? '[]') as Array<{ ref: string; digest?: string }>;
    assert.deepEqual(sources.map((s) => [s.ref, s.digest]), [
      ['spec.pipeline.pipelineRef', v1.digest],
      ['tasks[prepare].taskRef', v1.digest],
      ['tasks[sign].taskRef', v1.digest],
    ]);
    const done = await waitForPhase(requester, TENANT, 'by-tag', FINAL, 90_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    assert.deepEqual(done.status?.results, { signature: 'v1:quay.io/org/app@sha256:abc' });
    const task = (name: string) => ({ ref: `tasks[${name}].taskRef`, resolver: 'bundles', source: v1.repository, path: name, revision: v1.tagRef, digest: v1.digest });
    assert.deepEqual(done.status?.pipeline, {
      resolver: 'bundles',
      source: v1.repository,
      path: 'release',
      revision: v1.tagRef,
      digest: v1.digest,
      references: [task('prepare'), task('sign')],
    });
    // Tekton fetched nothing from the registry again: the TaskRun runs the Task read at the digest.
    runsEmbedded(await taskRunOf(pr.metadata.name!, 'sign'), 'v1', 'v2');
    shows(t, `ran ${pr.metadata.name} from ${v1.tagRef}, pinned to ${v1.digest}`);
  });

  test('digestOnly: a tag reference is Rejected saying how to refer to it; a digest reference runs', async (t) => {
    await Promise.all([
      createRequest(requester, TENANT, 'pinned-by-tag', byBundle(pinned.tagRef, pinned.digestRef)),
      createRequest(requester, TENANT, 'pinned-task-by-tag', byBundle(pinned.digestRef, pinned.tagRef)),
    ]);
    const byTag = await waitForPhase(requester, TENANT, 'pinned-by-tag', FINAL, 60_000);
    assert.equal(byTag.status?.conditions?.[0]?.reason, 'Rejected');
    const repo = pinned.repository.replace(/[./]/g, (c) => `\\${c}`);
    assert.match(
      messageOf(byTag),
      new RegExp(
        `^spec\\.pipeline\\.pipelineRef: bundle "${repo}:v1" is not pinned by digest, and InternalServicesConfig internal-services/config allows "${repo}" only by digest \\(sources\\.bundles\\[1\\]\\): ` +
          `refer to it as "${repo}@sha256:…", with the digest of the manifest its tag "v1" names now \\(a tag can be moved, a digest cannot\\)`,
      ),
    );
    assert.equal(byTag.status?.pipelineRun, undefined, 'nothing ran');
    const taskByTag = await waitForPhase(requester, TENANT, 'pinned-task-by-tag', FINAL, 60_000);
    assert.equal(taskByTag.status?.conditions?.[0]?.reason, 'Rejected');
    assert.match(messageOf(taskByTag), new RegExp(`^tasks\\[prepare\\]\\.taskRef \\(values from param "taskBundle"\\): bundle "${repo}:v1" is not pinned by digest`));

    const created = await createRequest(requester, TENANT, 'pinned-by-digest', byBundle(pinned.digestRef, pinned.digestRef));
    const pr = await onlyPipelineRunOf(internalAdmin, created.metadata.uid!);
    assert.equal(tasksOf(pr)['sign']?.taskRef, undefined, 'embedded');
    const done = await waitForPhase(requester, TENANT, 'pinned-by-digest', FINAL, 90_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    assert.deepEqual(done.status?.results, { signature: 'pinned:quay.io/org/app@sha256:abc' });
    assert.equal(done.status?.pipeline?.revision, pinned.digestRef);
    assert.equal(done.status?.pipeline?.digest, pinned.digest);
    shows(t, `ran ${pr.metadata.name} from ${pinned.digestRef}; the tag reference was Rejected`);
  });

  test('the tag moved after the check: the run keeps the digest that was checked; a new request by the tag gets the new one', async (t) => {
    const created = await createRequest(requester, TENANT, 'moving', byBundle(v1.tagRef, v1.tagRef, { hold: 'gate' }));
    const pr = await onlyPipelineRunOf(internalAdmin, created.metadata.uid!);
    const prName = pr.metadata.name!;
    assert.ok(tasksOf(pr)['sign']?.spec.includes('v1:$(params.image)'));
    // While `prepare` runs (gated), v1 is re-pointed at a different Pipeline and Tasks.
    await waitForPhase(requester, TENANT, 'moving', ['Running'], 30_000);
    const v2 = await registry.pushBundle(RELEASE, 'v1', catalog('v2'));
    assert.notEqual(v2.digest, v1.digest);
    assert.equal(await registry.digestOf(RELEASE, 'v1'), v2.digest, 'the tag moved');

    // A new request by the same tag: checked and pinned at the new digest.
    const later = await createRequest(requester, TENANT, 'after-move', byBundle(v1.tagRef, v1.tagRef));
    const laterPr = await onlyPipelineRunOf(internalAdmin, later.metadata.uid!);
    assert.equal(laterPr.spec.pipelineSpec?.['description'], 'release pipeline v2');
    assert.ok(tasksOf(laterPr)['sign']?.spec.includes('v2:$(params.image)'), 'the new request reads the new digest');
    const laterDone = await waitForPhase(requester, TENANT, 'after-move', FINAL, 90_000);
    assert.equal(laterDone.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(laterDone));
    assert.deepEqual(laterDone.status?.results, { signature: 'v2:quay.io/org/app@sha256:abc' });
    assert.equal(laterDone.status?.pipeline?.digest, v2.digest);

    // The first run goes on; its `sign` TaskRun is made only now, after the
    // move, and runs the Task as it was checked at the old digest.
    await releaseRun(env, prName, 60_000);
    runsEmbedded(await taskRunOf(prName, 'sign'), 'v1', 'v2');
    // While `sign` is gated the PipelineRun is still there (finished ones are deleted): what Tekton runs is the old Pipeline.
    const running = await pipelineRun(prName);
    assert.equal(running.status?.pipelineSpec?.['description'], 'release pipeline v1', 'Tekton runs the old Pipeline');
    assert.ok(tasksOf(running)['sign']?.spec.includes('v1:$(params.image)'));
    await releaseRun(env, prName, 60_000);
    const done = await waitForPhase(requester, TENANT, 'moving', FINAL, 60_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    assert.deepEqual(done.status?.results, { signature: 'v1:quay.io/org/app@sha256:abc' }, 'the old Task ran');
    assert.equal(done.status?.pipeline?.digest, v1.digest);
    shows(t, `${prName} ran ${v1.digest} although the tag moved to ${v2.digest} during the run; ${laterPr.metadata.name} ran ${v2.digest}`);
    // Back to v1, for anything that runs after this test.
    await registry.tag(RELEASE, 'v1', v1.digest);
  });

  test('a repository the policy does not allow is Rejected, for the Pipeline and for a Task, before anything is fetched', async () => {
    const host = registry.host.replace(/\./g, '\\.');
    const allowed = `allowed: "${host}/catalog/release", "${host}/catalog/pinned"`;
    await Promise.all([
      createRequest(requester, TENANT, 'elsewhere-pipeline', byBundle(elsewhere.tagRef, v1.tagRef)),
      createRequest(requester, TENANT, 'elsewhere-task', byBundle(v1.tagRef, elsewhere.digestRef)),
    ]);
    const fetchedBefore = fetchesOf(ELSEWHERE);
    const p = await waitForPhase(requester, TENANT, 'elsewhere-pipeline', FINAL, 60_000);
    assert.equal(p.status?.conditions?.[0]?.reason, 'Rejected');
    assert.match(messageOf(p), new RegExp(`^spec\\.pipeline\\.pipelineRef: bundle repository "${host}/elsewhere/release" is not allowed by InternalServicesConfig internal-services/config; ${allowed}$`));
    assert.equal(p.status?.pipeline, undefined, 'nothing was resolved');
    const tr = await waitForPhase(requester, TENANT, 'elsewhere-task', FINAL, 60_000);
    assert.equal(tr.status?.conditions?.[0]?.reason, 'Rejected');
    assert.match(messageOf(tr), new RegExp(`^tasks\\[prepare\\]\\.taskRef \\(values from param "taskBundle"\\): bundle repository "${host}/elsewhere/release" is not allowed .*; ${allowed}$`));
    for (const r of [p, tr]) assert.equal(r.status?.pipelineRun, undefined, 'nothing ran');
    assert.deepEqual(fetchesOf(ELSEWHERE), fetchedBefore, 'nothing was read from the repository that is not allowed');
    assert.deepEqual(fetchedBefore, [], 'pushing it read no manifest either');
  });
});
