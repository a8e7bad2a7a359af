/**
 * spec.pipeline with remote resolution, end to end on REAL Tekton: the
 * pipelines controller, the git resolver and the webhook of
 * github.com/tektoncd/pipeline run against the internal control plane, the
 * catalog is a git repository served on loopback (git daemon); only the
 * TaskRun pods are simulated (SimulatedKubelet). The controller runs as its
 * CLI process under its own RBAC.
 *
 * The catalog is shaped like the real release catalog: its Pipelines
 * reference their Tasks through the git resolver at $(params.taskGitUrl) and
 * $(params.taskGitRevision), which the request chooses.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { type Environment, applyObjects, type GitRepository } from '../../src/localenv/index.js';
import { RESOLUTION_REQUEST } from '../../src/tekton/resolve.js';
import { OWNED_SELECTOR } from '../../src/tekton/pipelinerun.js';
import type { InternalRequestSpec } from '../../src/api/types.js';
import { repoRoot } from '../../src/util/repo.js';
import { createRequest, NS, onlyPipelineRunOf, releaseRun, messageOf, setRunConfigAndWait, simulatedStep, startController, testPipeline, waitFor, waitForPhase, type ControllerProcess, tektonStack } from './helpers.js';

const TENANT = 'release-team';
let env: Environment;
let internalAdmin: KubeConfig;
let requester: KubeConfig;
let controller: ControllerProcess;
let catalog: GitRepository;
let other: GitRepository;
let catalogHead: string;

const FINAL = ['Succeeded', 'Failed', 'Rejected'];

const gitRef = (url: string, revision: string, pathInRepo: string) => ({ resolver: 'git', params: [{ name: 'url', value: url }, { name: 'revision', value: revision }, { name: 'pathInRepo', value: pathInRepo }] });
const fromTaskParams = (path: string) => gitRef('$(params.taskGitUrl)', '$(params.taskGitRevision)', path);

function task(name: string, vars: Record<string, string>, results: string[] = []): string {
  return stringify({
    apiVersion: 'tekton.dev/v1',
    kind: 'Task',
    metadata: { name },
    spec: { params: [{ name: 'image', default: '' }], results: results.map((r) => ({ name: r })), steps: [simulatedStep(name, vars)] },
  });
}

/** The catalog's internal Pipeline: sign, then notify in finally; both Tasks from git at the request's taskGitUrl/taskGitRevision. */
const signPipelineSpec = {
  params: [{ name: 'image' }, { name: 'taskGitUrl' }, { name: 'taskGitRevision' }],
  results: [{ name: 'signature', value: '$(tasks.sign.results.signature)' }],
  tasks: [{ name: 'sign', params: [{ name: 'image', value: '$(params.image)' }], taskRef: fromTaskParams('tasks/internal/sign/sign.yaml') }],
  finally: [{ name: 'notify', taskRef: fromTaskParams('tasks/internal/notify/notify.yaml') }],
};
const pipelineFile = (name: string, spec: Record<string, unknown>) => stringify({ apiVersion: 'tekton.dev/v1', kind: 'Pipeline', metadata: { name }, spec });

async function resolutionRequestsLeft(): Promise<number> {
  const l = (await internalAdmin.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({ ...RESOLUTION_REQUEST, namespace: NS, labelSelector: OWNED_SELECTOR })) as { items: unknown[] };
  return l.items.length;
}

/** Applies the config and waits until the controller has read it. */
const configure = (spec: Record<string, unknown>): Promise<void> => setRunConfigAndWait(internalAdmin, controller, spec);


before(async () => {
  ({ env, internalAdmin, requester } = await tektonStack(TENANT));
  catalog = await env.tekton!.git.repository('catalog');
  other = await env.tekton!.git.repository('other');
  catalogHead = await catalog.commit(
    {
      'pipelines/internal/sign/sign.yaml': pipelineFile('sign', signPipelineSpec),
      'pipelines/internal/nested/nested.yaml': pipelineFile('nested', {
        tasks: [{ name: 'elsewhere', taskRef: gitRef(other.url, 'main', 'tasks/sign.yaml') }],
      }),
      'pipelines/internal/moving/moving.yaml': pipelineFile('moving', {
        params: [{ name: 'taskGitUrl' }, { name: 'taskGitRevision' }],
        results: [{ name: 'version', value: '$(tasks.second.results.version)' }],
        tasks: [
          { name: 'first', taskRef: fromTaskParams('tasks/internal/first/first.yaml') },
          { name: 'second', runAfter: ['first'], taskRef: fromTaskParams('tasks/internal/second/second.yaml') },
        ],
      }),
      'tasks/internal/sign/sign.yaml': task('sign', { SIMULATED_RESULT_signature: 'sig:$(params.image)' }, ['signature']),
      'tasks/internal/notify/notify.yaml': task('notify', {}),
      'tasks/internal/first/first.yaml': task('first', { SIMULATED_DURATION: 'gate' }),
      'tasks/internal/second/second.yaml': task('second', { SIMULATED_DURATION: 'gate', SIMULATED_RESULT_version: 'checked' }, ['version']),
      'secret/pipeline.yaml': pipelineFile('sign', signPipelineSpec),
    },
    'the catalog',
  );
  await other.commit({ 'tasks/sign.yaml': task('sign', { SIMULATED_RESULT_signature: 'not-ours' }, ['signature']) }, 'elsewhere');
  // The 2024 shape: the same Pipeline installed in the controller's namespace.
  await applyObjects(internalAdmin, [
    testPipeline('sign-installed', signPipelineSpec),
    testPipeline('plain', { params: [{ name: 'image' }], results: [{ name: 'out', value: '$(tasks.t.results.out)' }], tasks: [{ name: 't', taskSpec: { results: [{ name: 'out' }], steps: [simulatedStep('s', { SIMULATED_RESULT_out: 'plain:$(params.image)' })] } }] }),
  ] as never);
  await configure({ allowList: [TENANT] });
  controller = await startController(env);
});

after(async () => {
  await controller?.kill('SIGKILL');
  await env?.stop();
});

const todays = (over: Partial<Record<'revision' | 'pathInRepo' | 'url', string>> = {}, params: Record<string, string> = {}): InternalRequestSpec => ({
  pipeline: { pipelineRef: gitRef(over.url ?? catalog.url, over.revision ?? 'main', over.pathInRepo ?? 'pipelines/internal/sign/sign.yaml') },
  params: { image: 'quay.io/org/app@sha256:abc', taskGitUrl: catalog.url, taskGitRevision: 'main', ...params },
  timeouts: { pipeline: '1h0m0s', tasks: '0h55m0s', finally: '0h5m0s' },
});

describe('spec.pipeline with the git resolver, real Tekton (pods simulated)', () => {
  test('no source policy: Rejected, saying only installed Pipelines run and how to allow the source', async () => {
    await createRequest(requester, TENANT, 'no-policy', todays());
    const r = await waitForPhase(requester, TENANT, 'no-policy', FINAL, 30_000);
    assert.equal(r.status?.conditions?.[0]?.reason, 'Rejected');
    assert.match(messageOf(r), /remote resolution is not enabled on this internal cluster: InternalServicesConfig internal-services\/config has no source policy \(allowedGitResolverURLs or sources\).*ask the administrators of the internal cluster to allow this source/);
    // From here on: the catalog is allowed at main or any commit, for Pipelines and Tasks only.
    await configure({
      allowList: [TENANT],
      allowedGitResolverURLs: ['git://127.0.0.1:1/nothing.git'],
      sources: { git: [{ urls: [catalog.url], revisions: ['main'], commits: { reachable: true }, paths: ['pipelines/**', 'tasks/**'] }], cluster: true, resolutionTimeout: '20s' },
    });
  });

  test("today's payload: resolved, every Task reference checked and embedded, run, results back; what ran is recorded", async () => {
    const created = await createRequest(requester, TENANT, 'todays', todays(), {
      'internal-services.appstudio.openshift.io/pipeline-name': 'sign',
    });
    const pr = await onlyPipelineRunOf(internalAdmin, created.metadata.uid!);
    assert.equal(pr.spec.pipelineRef, undefined, 'the checked Pipeline runs embedded');
    const tasks = pr.spec.pipelineSpec?.['tasks'] as Array<{ taskRef?: unknown; taskSpec?: { steps?: Array<{ name?: string }> } }>;
    assert.equal(tasks[0]?.taskRef, undefined, 'no reference left for Tekton to resolve and read again');
    assert.deepEqual(tasks[0]?.taskSpec?.steps?.map((x) => x.name), ['sign'], 'the Task checked (at the commit main pointed at) runs embedded');
    const done = await waitForPhase(requester, TENANT, 'todays', FINAL, 90_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    assert.deepEqual(done.status?.results, { signature: 'sig:quay.io/org/app@sha256:abc' });
    const src = `git+${catalog.url}`;
    assert.deepEqual(done.status?.pipeline, {
      resolver: 'git',
      source: src,
      path: 'pipelines/internal/sign/sign.yaml',
      revision: 'refs/heads/main',
      digest: `sha1:${catalogHead}`,
      references: [
        { ref: 'tasks[sign].taskRef', resolver: 'git', source: src, path: 'tasks/internal/sign/sign.yaml', revision: 'refs/heads/main', digest: `sha1:${catalogHead}` },
        { ref: 'finally[notify].taskRef', resolver: 'git', source: src, path: 'tasks/internal/notify/notify.yaml', revision: 'refs/heads/main', digest: `sha1:${catalogHead}` },
      ],
    });
    await waitFor('the ResolutionRequests to be removed', async () => (await resolutionRequestsLeft()) === 0, 20_000);
  });

  test('the 2024 payload (spec.request) runs the installed Pipeline; its Task references built from the request params are checked and embedded too', async () => {
    await createRequest(requester, TENANT, 'plain-2024', { request: 'plain', params: { image: 'x' } });
    const created = await createRequest(requester, TENANT, 'installed-2024', { request: 'sign-installed', params: { image: 'img', taskGitUrl: catalog.url, taskGitRevision: 'main' } });
    const pr = await onlyPipelineRunOf(internalAdmin, created.metadata.uid!);
    const t0 = (pr.spec.pipelineSpec?.['tasks'] as Array<{ taskRef?: unknown; taskSpec?: unknown }>)[0];
    assert.equal(t0?.taskRef, undefined);
    assert.ok(t0?.taskSpec, 'the Task checked runs embedded');
    const [plain, installed] = await Promise.all([waitForPhase(requester, TENANT, 'plain-2024', FINAL, 90_000), waitForPhase(requester, TENANT, 'installed-2024', FINAL, 90_000)]);
    assert.equal(plain.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(plain));
    assert.deepEqual(plain.status?.results, { out: 'plain:x' });
    assert.equal(plain.status?.pipeline, undefined, 'an installed Pipeline with nothing to resolve runs by name');
    assert.equal(installed.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(installed));
    assert.deepEqual(installed.status?.results, { signature: 'sig:img' });
    assert.equal(installed.status?.pipeline?.references?.length, 2);
  });

  test('the cluster resolver, for a Pipeline of the controller\'s namespace: resolved, recorded with its digest, run', async () => {
    await createRequest(requester, TENANT, 'by-cluster', {
      pipeline: { pipelineRef: { resolver: 'cluster', params: [{ name: 'kind', value: 'pipeline' }, { name: 'name', value: 'plain' }, { name: 'namespace', value: NS }] } },
      params: { image: 'c' },
    });
    const done = await waitForPhase(requester, TENANT, 'by-cluster', FINAL, 60_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    assert.deepEqual(done.status?.results, { out: 'plain:c' });
    assert.equal(done.status?.pipeline?.resolver, 'cluster');
    assert.match(done.status?.pipeline?.source ?? '', /^\/apis\/tekton.dev\/v1\/namespaces\/internal-services\/pipeline\/plain@/);
    assert.match(done.status?.pipeline?.digest ?? '', /^sha256:[0-9a-f]{64}$/);
    // As the Go controller's requesters write it (name only; it added namespace and kind itself): the same Pipeline, the same record.
    await createRequest(requester, TENANT, 'by-cluster-go-shape', { pipeline: { pipelineRef: { resolver: 'cluster', params: [{ name: 'name', value: 'plain' }] } }, params: { image: 'g' } });
    const go = await waitForPhase(requester, TENANT, 'by-cluster-go-shape', FINAL, 60_000);
    assert.equal(go.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(go));
    assert.deepEqual(go.status?.results, { out: 'plain:g' });
    assert.equal(go.status?.pipeline?.source, done.status?.pipeline?.source);
  });

  test("the requester CLI's git shape completes and prints the results", async () => {
    const entry = join(repoRoot(), 'dist', 'src', 'cli', 'kubectl-internalrequest.js');
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [entry, 'create', '--git-url', catalog.url, '--git-revision', 'main', '--path', 'pipelines/internal/sign/sign.yaml', 'image=from-cli', `taskGitUrl=${catalog.url}`, 'taskGitRevision=main', '-n', TENANT, '--timeout', '90s'],
      { env: { ...process.env, KUBECONFIG: env.remote.identities.requester!.kubeconfigPath } },
    );
    assert.deepEqual(JSON.parse(stdout), { signature: 'sig:from-cli' });
  });

  test('what the policy does not allow is Rejected, naming the reference, the params its values came from and the rule', async () => {
    const cases: Array<[string, InternalRequestSpec, RegExp]> = [
      [
        'task-url',
        todays({}, { taskGitUrl: other.url }),
        new RegExp(`^tasks\\[sign\\]\\.taskRef \\(values from param "taskGitUrl", param "taskGitRevision"\\): git url "${other.url}" is not allowed by InternalServicesConfig internal-services/config; allowed: .*"${catalog.url}" \\(sources\\.git\\[0\\]\\)`),
      ],
      ['task-revision', todays({}, { taskGitRevision: 'feature' }), /^tasks\[sign\]\.taskRef \(values from param "taskGitUrl", param "taskGitRevision"\): git ".*" at "refs\/heads\/feature", "tasks\/internal\/sign\/sign\.yaml" is not allowed .*: sources\.git\[0\] allows branches "refs\/heads\/main", commits reachable from them, not branch "refs\/heads\/feature"/],
      ['pipeline-path', todays({ pathInRepo: 'secret/pipeline.yaml' }), /^spec\.pipeline\.pipelineRef: git ".*" at "refs\/heads\/main", "secret\/pipeline\.yaml" is not allowed .*sources\.git\[0\] allows paths "pipelines\/\*\*", "tasks\/\*\*", not "secret\/pipeline\.yaml"/],
      ['resolver', { pipeline: { pipelineRef: { resolver: 'hub', params: [{ name: 'name', value: 'git-clone' }] } } }, /^spec\.pipeline\.pipelineRef: the "hub" resolver is not allowed by InternalServicesConfig internal-services\/config; only git, bundles, http and cluster can be allowed/],
      ['http-unruled', { pipeline: { pipelineRef: { resolver: 'http', params: [{ name: 'url', value: 'https://example.com/p.yaml' }] } } }, /^spec\.pipeline\.pipelineRef: the http resolver is not allowed for namespace "[^"]+" on remote "[^"]+" by InternalServicesConfig internal-services\/config \(no sources\.http rule applies\)/],
      ['cluster-elsewhere', { pipeline: { pipelineRef: { resolver: 'cluster', params: [{ name: 'kind', value: 'pipeline' }, { name: 'name', value: 'plain' }, { name: 'namespace', value: 'default' }] } }, params: { image: 'x' } }, /^spec\.pipeline\.pipelineRef: the cluster resolver may only read namespace "internal-services", not "default"/],
      ['nested-source', { pipeline: { pipelineRef: gitRef(catalog.url, 'main', 'pipelines/internal/nested/nested.yaml') } }, new RegExp(`^tasks\\[elsewhere\\]\\.taskRef: git url "${other.url}" is not allowed`)],
    ];
    await Promise.all(cases.map(([name, spec]) => createRequest(requester, TENANT, `refused-${name}`, spec)));
    for (const [name, , message] of cases) {
      const r = await waitForPhase(requester, TENANT, `refused-${name}`, FINAL, 60_000);
      assert.equal(r.status?.conditions?.[0]?.reason, 'Rejected', `${name}: ${messageOf(r)}`);
      assert.match(messageOf(r), message, name);
      assert.equal(r.status?.pipelineRun, undefined, `${name}: nothing ran`);
    }
  });

  test('a branch moved between the check and the run: the run uses the commit that was checked', async () => {
    const created = await createRequest(requester, TENANT, 'moving', {
      pipeline: { pipelineRef: gitRef(catalog.url, 'main', 'pipelines/internal/moving/moving.yaml') },
      params: { taskGitUrl: catalog.url, taskGitRevision: 'main' },
    });
    const pr = await onlyPipelineRunOf(internalAdmin, created.metadata.uid!);
    const prName = pr.metadata.name!;
    // While the first task runs, main moves on: a new version of the second Task.
    await waitForPhase(requester, TENANT, 'moving', ['Running'], 30_000);
    const moved = await catalog.commit({ 'tasks/internal/second/second.yaml': task('second', { SIMULATED_DURATION: 'gate', SIMULATED_RESULT_version: 'moved' }, ['version']) }, 'moves main');
    assert.notEqual(moved, catalogHead);
    await releaseRun(env, prName, 60_000);
    // The second TaskRun is made after the move: it runs the Task as it was checked, embedded; Tekton resolves nothing.
    const custom = internalAdmin.makeApiClient(CustomObjectsApi);
    const tr = await waitFor('the second TaskRun', async () => {
      const l = (await custom.listNamespacedCustomObject({ group: 'tekton.dev', version: 'v1', plural: 'taskruns', namespace: NS, labelSelector: `tekton.dev/pipelineRun=${prName},tekton.dev/pipelineTask=second` })) as {
        items: Array<{ spec: { taskRef?: unknown; taskSpec?: unknown } }>;
      };
      return l.items[0];
    }, 60_000);
    assert.equal(tr.spec.taskRef, undefined, 'no reference to resolve at the moved branch');
    const ran = JSON.stringify(tr.spec.taskSpec);
    assert.ok(ran.includes('"checked"') && !ran.includes('"moved"'), `the TaskRun runs the Task as checked: ${ran}`);
    await releaseRun(env, prName, 60_000);
    const done = await waitForPhase(requester, TENANT, 'moving', FINAL, 60_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    assert.deepEqual(done.status?.results, { version: 'checked' });
  });

  test('a reference that cannot be resolved (no such path, unreachable repository): Rejected with the path check\'s (or the ref lookup\'s) message within the deadline', async () => {
    const t0 = Date.now();
    await Promise.all([
      createRequest(requester, TENANT, 'missing-path', todays({ pathInRepo: 'pipelines/internal/nope/nope.yaml' })),
      createRequest(requester, TENANT, 'unreachable', todays({ url: 'git://127.0.0.1:1/nothing.git' })),
    ]);
    const [missing, unreachable] = await Promise.all([waitForPhase(requester, TENANT, 'missing-path', FINAL, 40_000), waitForPhase(requester, TENANT, 'unreachable', FINAL, 40_000)]);
    const elapsed = Date.now() - t0;
    assert.equal(missing.status?.conditions?.[0]?.reason, 'Rejected');
    // The path is checked in the repository at the commit before anything is resolved: there is no such directory.
    assert.match(messageOf(missing), /^spec\.pipeline\.pipelineRef: "pipelines\/internal\/nope\/nope\.yaml" at commit [0-9a-f]{40} of "git:\/\/.*": the repository has no "pipelines\/internal\/nope" there \(no such directory at this commit\); the file must be at that path at that commit\. Nothing was resolved or run$/);
    assert.equal(unreachable.status?.conditions?.[0]?.reason, 'Rejected');
    // The exact ref is looked up before anything is resolved: the repository's answer (none) is the message.
    assert.match(messageOf(unreachable), /^spec\.pipeline\.pipelineRef: "refs\/heads\/main" could not be looked up in "git:\/\/127\.0\.0\.1:1\/nothing\.git": git ls-remote failed: .*(refused|unable to connect).*; nothing was resolved or run$/s);
    assert.ok(elapsed < 20_000 + 10_000, `both answered within the 20 s deadline (took ${elapsed} ms)`);
    await waitFor('the ResolutionRequests to be removed', async () => (await resolutionRequestsLeft()) === 0, 20_000);
  });
});
