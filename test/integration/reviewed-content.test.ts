/**
 * What runs is what was reviewed (issue 35), on the REAL stack: Tekton
 * Pipelines' controller, git resolver and webhook on the internal control
 * plane (pods SIMULATED), the catalog on git daemon, the controller as its
 * CLI process, the source rule `revisions: [main], commits: {reachable: true}`.
 *
 * - a tag named "main" that points at a commit only on an unmerged branch
 *   changes nothing: `revision: main` (at the pipelineRef and as the Task's
 *   revision) runs the branch, passed on as refs/heads/main; asked for by
 *   name (refs/tags/main) it is refused before anything is resolved;
 * - a commit only on an unmerged branch, and one force-pushed away, are
 *   refused before any ResolutionRequest (at the pipelineRef) or before any
 *   PipelineRun (as a Task's revision, once the Pipeline had to be resolved);
 * - a commit on main runs, pinned, with the ref it was found on in status;
 * - from a catalog whose rule requires signatures (signed by Tekton's own
 *   code, hack/trusted/sign, with a key pair the test makes): signed content
 *   runs with the key in status; unsigned, wrongly signed and tampered
 *   content is refused before any PipelineRun, naming the resource.
 *
 * The first test is the control: asked directly, Tekton's git resolver reads
 * a bare "main" as the tag, and "refs/heads/main" as the branch. A watch on
 * ResolutionRequests and PipelineRuns, open for the whole file, records every
 * one the controller makes.
 */
import { after, before, describe, test } from 'node:test';
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import type { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { type Environment, type GitRepository } from '../../src/localenv/index.js';
import type { InternalRequestSpec } from '../../src/api/types.js';
import { createRequest, messageOf, resolveDirectly, setRunConfigAndWait, simulatedStep, startController, waitForPhase, watchMade, type ControllerProcess, type Made, tektonStack } from './helpers.js';
import { buildTools } from '../trusted-tools.js';

const TENANT = 'release-team';
const FINAL = ['Succeeded', 'Failed', 'Rejected'];
let env: Environment;
let internalAdmin: KubeConfig;
let requester: KubeConfig;
let controller: ControllerProcess;
let catalog: GitRepository;
/** Commits: on main (reviewed), only on the unmerged branch, on main and then force-pushed away. */
let reviewed: string;
let unmerged: string;
let pushedAway: string;
let mainHead: string;
/** A catalog whose rule requires signatures by RELEASE_KEY. */
let signedCatalog: GitRepository;
let keys: string;
let releasePublicKey: string;

let made: Made;

const gitRef = (url: string, revision: string, pathInRepo: string) => ({ resolver: 'git', params: [{ name: 'url', value: url }, { name: 'revision', value: revision }, { name: 'pathInRepo', value: pathInRepo }] });
const task = (name: string, marker: string) =>
  stringify({ apiVersion: 'tekton.dev/v1', kind: 'Task', metadata: { name }, spec: { params: [{ name: 'image', default: '' }], results: [{ name: 'signature' }], steps: [simulatedStep(name, { SIMULATED_RESULT_signature: `${marker}:$(params.image)` })] } });
const pipeline = (marker: string) =>
  stringify({
    apiVersion: 'tekton.dev/v1',
    kind: 'Pipeline',
    metadata: { name: 'sign-image', annotations: { marker } },
    spec: {
      params: [{ name: 'image' }, { name: 'taskGitUrl' }, { name: 'taskGitRevision' }],
      results: [{ name: 'signature', value: '$(tasks.sign.results.signature)' }],
      tasks: [{ name: 'sign', params: [{ name: 'image', value: '$(params.image)' }], taskRef: gitRef('$(params.taskGitUrl)', '$(params.taskGitRevision)', 'tasks/sign.yaml') }],
    },
  });
const files = (marker: string) => ({ 'pipelines/sign-image.yaml': pipeline(marker), 'tasks/sign.yaml': task('sign', marker) });

/** Signs a Tekton resource with Tekton's own code (hack/trusted/sign: its Checksum() and sigstore). */
function tektonSign(text: string, key: string): string {
  const tools = buildTools();
  const path = join(keys, `doc-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(path, text);
  return execFileSync(tools.sign, ['--key', key, path], { encoding: 'utf8' });
}

const request = (revision: string, taskRevision = 'main'): InternalRequestSpec => ({
  pipeline: { pipelineRef: gitRef(catalog.url, revision, 'pipelines/sign-image.yaml') },
  params: { image: 'img', taskGitUrl: catalog.url, taskGitRevision: taskRevision },
});

async function expectRefused(name: string, message: RegExp, rrAllowed = 0): Promise<void> {
  const r = await waitForPhase(requester, TENANT, name, FINAL, 90_000);
  assert.equal(r.status?.conditions?.[0]?.reason, 'Rejected', `${name}: ${messageOf(r)}`);
  assert.match(messageOf(r), message, name);
  const uid = r.metadata.uid!;
  assert.equal((made.rr.get(uid) ?? []).length, rrAllowed, `${name}: ResolutionRequests made: ${JSON.stringify((made.rr.get(uid) ?? []).map((x) => x.spec?.params))}`);
  assert.equal((made.pr.get(uid) ?? []).length, 0, `${name}: a PipelineRun was made`);
}

async function expectRan(name: string): Promise<{ results: Record<string, string>; pipeline: Record<string, unknown> }> {
  const r = await waitForPhase(requester, TENANT, name, FINAL, 120_000);
  assert.equal(r.status?.conditions?.[0]?.reason, 'Succeeded', `${name}: ${messageOf(r)}`);
  assert.equal((made.pr.get(r.metadata.uid!) ?? []).length, 1, `${name}: one PipelineRun`);
  return { results: (r.status?.results ?? {}) as Record<string, string>, pipeline: (r.status?.pipeline ?? {}) as Record<string, unknown> };
}

before(async () => {
  ({ env, internalAdmin, requester } = await tektonStack(TENANT));
  catalog = await env.tekton!.git.repository('catalog');
  reviewed = await catalog.commit(files('reviewed'), 'reviewed catalog');
  unmerged = await catalog.commit(files('unmerged'), 'not reviewed', 'feature');
  // A tag "main" at the unmerged commit: git reads a bare "main" as this tag.
  await catalog.setTag('main', unmerged);
  // A commit that was on main and was force-pushed away.
  pushedAway = await catalog.commit(files('pushed-away'), 'withdrawn');
  await catalog.setBranch('main', reviewed);
  mainHead = await catalog.commit(files('head'), 'main today');
  // The signed catalog: every param typed, so that the resource as written is
  // the resource as Tekton defaults it (docs/trusted-resources.md).
  keys = mkdtempSync(join(tmpdir(), 'reviewed-content-keys-'));
  const pair = (name: string) => {
    const kp = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const priv = join(keys, `${name}.key`);
    writeFileSync(priv, kp.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
    return { priv, pub: kp.publicKey.export({ type: 'spki', format: 'pem' }) as string };
  };
  const release = pair('release');
  const other = pair('other');
  releasePublicKey = release.pub;
  signedCatalog = await env.tekton!.git.repository('signed-catalog');
  const typedTask = (marker: string) =>
    stringify({ apiVersion: 'tekton.dev/v1', kind: 'Task', metadata: { name: 'sign' }, spec: { params: [{ name: 'image', type: 'string', default: '' }], results: [{ name: 'signature', type: 'string' }], steps: [simulatedStep('sign', { SIMULATED_RESULT_signature: `${marker}:$(params.image)` })] } });
  const typedPipeline = (task: string) =>
    stringify({
      apiVersion: 'tekton.dev/v1',
      kind: 'Pipeline',
      metadata: { name: 'signed' },
      spec: {
        params: [{ name: 'image', type: 'string' }, { name: 'taskPath', type: 'string' }],
        results: [{ name: 'signature', type: 'string', value: '$(tasks.sign.results.signature)' }],
        tasks: [{ name: 'sign', params: [{ name: 'image', value: '$(params.image)' }], taskRef: gitRef(signedCatalog.url, 'main', `$(params.taskPath)`) }],
      },
    });
  const signedTask = tektonSign(typedTask('signed'), release.priv);
  await signedCatalog.commit(
    {
      'pipelines/signed.yaml': tektonSign(typedPipeline('x'), release.priv),
      'pipelines/unsigned.yaml': typedPipeline('x'),
      'tasks/signed.yaml': signedTask,
      'tasks/unsigned.yaml': typedTask('unsigned'),
      'tasks/other-key.yaml': tektonSign(typedTask('other-key'), other.priv),
      // Changed after signing: the step's result, not the signature.
      'tasks/tampered.yaml': signedTask.replace('signed:$(params.image)', 'tampered:$(params.image)'),
    },
    'a signed catalog',
  );
  made = await watchMade(internalAdmin);
  controller = await startController(env, ['--git-cache-dir', `${env.dir}/git-cache`]);
  await setRunConfigAndWait(internalAdmin, controller, {
    allowList: [TENANT],
    sources: {
      git: [
        { urls: [catalog.url], revisions: ['main'], commits: { reachable: true }, paths: ['pipelines/**', 'tasks/**'] },
        { urls: [signedCatalog.url], revisions: ['main'], signatures: { authorities: [{ name: 'release-2026', key: { data: releasePublicKey } }] } },
      ],
      resolutionTimeout: '30s',
    },
  });
});

after(async () => {
  made?.stop();
  await controller?.kill('SIGKILL');
  await env?.stop();
  if (keys) rmSync(keys, { recursive: true, force: true });
});

describe('what runs is what was reviewed (real Tekton git resolver, git daemon; pods SIMULATED)', () => {
  test('control: asked directly, Tekton\'s git resolver reads a bare "main" as the tag, and "refs/heads/main" as the branch', async (t) => {
    const bare = await resolveDirectly(internalAdmin, 'control-bare-main', gitRef(catalog.url, 'main', 'tasks/sign.yaml').params);
    const full = await resolveDirectly(internalAdmin, 'control-refs-heads-main', gitRef(catalog.url, 'refs/heads/main', 'tasks/sign.yaml').params);
    assert.equal(bare.state, 'resolved');
    assert.equal(full.state, 'resolved');
    const commitOf = (r: typeof bare) => (r.state === 'resolved' ? r.refSource?.digest['sha1'] : undefined);
    t.diagnostic(`Tekton ${env.tekton!.version}: "main" → ${commitOf(bare)} (the tag's commit is ${unmerged}); "refs/heads/main" → ${commitOf(full)} (main is ${mainHead})`);
    assert.equal(commitOf(bare), unmerged, 'git reads a bare name as the tag first');
    assert.equal(commitOf(full), mainHead, 'the fully qualified ref names the branch');
  });

  test('a tag shadowing the allowed branch changes nothing: "main" runs the branch, pinned, at the pipelineRef and for the Task', async () => {
    await createRequest(requester, TENANT, 'shadowed-main', request('main', 'main'));
    const ran = await expectRan('shadowed-main');
    assert.equal(ran.results['signature'], 'head:img', 'the Task of main ran, not the tagged one');
    assert.equal(ran.pipeline['revision'], 'refs/heads/main');
    assert.equal(ran.pipeline['digest'], `sha1:${mainHead}`);
    const refs = ran.pipeline['references'] as Array<Record<string, unknown>>;
    assert.deepEqual(refs.map((r) => [r['ref'], r['revision'], r['digest']]), [['tasks[sign].taskRef', 'refs/heads/main', `sha1:${mainHead}`]]);
  });

  test('the tag asked for by its name is refused before anything is resolved; so is a bare name that is no allowed branch', async () => {
    await createRequest(requester, TENANT, 'tag-main', request('refs/tags/main'));
    await createRequest(requester, TENANT, 'branch-feature', request('feature'));
    await expectRefused('tag-main', /^spec\.pipeline\.pipelineRef: git ".*catalog\.git" at "refs\/tags\/main", "pipelines\/sign-image\.yaml" is not allowed by .*: sources\.git\[0\] allows branches "refs\/heads\/main", commits reachable from them, not tag "refs\/tags\/main"/);
    await expectRefused('branch-feature', /not branch "refs\/heads\/feature"/);
  });

  test('a commit only on an unmerged branch, and one force-pushed away, are refused before any ResolutionRequest', async () => {
    await createRequest(requester, TENANT, 'unmerged-commit', request(unmerged));
    await createRequest(requester, TENANT, 'pushed-away-commit', request(pushedAway));
    await expectRefused('unmerged-commit', new RegExp(`^spec\\.pipeline\\.pipelineRef: commit "${unmerged}" is not reachable from "refs/heads/main" of ".*catalog\\.git", which sources\\.git\\[0\\] allows commits from; it was looked for in the refs "refs/heads/main" as the repository shows them now`));
    await expectRefused('pushed-away-commit', new RegExp(`commit "${pushedAway}" is not reachable from "refs/heads/main"`));
  });

  test('as the Task\'s revision, an unmerged commit is refused once the Pipeline is resolved, before any PipelineRun', async () => {
    await createRequest(requester, TENANT, 'unmerged-task', request('main', unmerged));
    await expectRefused('unmerged-task', new RegExp(`^tasks\\[sign\\]\\.taskRef \\(values from param "taskGitUrl", param "taskGitRevision"\\): commit "${unmerged}" is not reachable from "refs/heads/main"`), 1);
  });

  test('a commit on main, pinned by SHA, runs that commit, with the ref it was found on', async () => {
    await createRequest(requester, TENANT, 'reviewed-commit', request(reviewed, reviewed));
    const ran = await expectRan('reviewed-commit');
    assert.equal(ran.results['signature'], 'reviewed:img');
    assert.equal(ran.pipeline['revision'], reviewed);
    assert.equal(ran.pipeline['digest'], `sha1:${reviewed}`);
    assert.equal(ran.pipeline['reachableFrom'], 'refs/heads/main');
    const refs = ran.pipeline['references'] as Array<Record<string, unknown>>;
    assert.deepEqual(refs.map((r) => [r['revision'], r['reachableFrom']]), [[reviewed, 'refs/heads/main']]);
  });

  const signedRequest = (pipelinePath: string, taskPath: string): InternalRequestSpec => ({
    pipeline: { pipelineRef: gitRef(signedCatalog.url, 'main', pipelinePath) },
    params: { image: 'img', taskPath },
  });

  test('signed content runs, with the key that verified it in status', async () => {
    await createRequest(requester, TENANT, 'signed', signedRequest('pipelines/signed.yaml', 'tasks/signed.yaml'));
    const ran = await expectRan('signed');
    assert.equal(ran.results['signature'], 'signed:img');
    assert.equal(ran.pipeline['signedBy'], 'release-2026');
    const refs = ran.pipeline['references'] as Array<Record<string, unknown>>;
    assert.deepEqual(refs.map((r) => [r['ref'], r['signedBy']]), [['tasks[sign].taskRef', 'release-2026']]);
  });

  test('unsigned, wrongly signed and tampered content is refused before any PipelineRun, naming the resource', async () => {
    await Promise.all([
      createRequest(requester, TENANT, 'unsigned-pipeline', signedRequest('pipelines/unsigned.yaml', 'tasks/signed.yaml')),
      createRequest(requester, TENANT, 'unsigned-task', signedRequest('pipelines/signed.yaml', 'tasks/unsigned.yaml')),
      createRequest(requester, TENANT, 'other-key-task', signedRequest('pipelines/signed.yaml', 'tasks/other-key.yaml')),
      createRequest(requester, TENANT, 'tampered-task', signedRequest('pipelines/signed.yaml', 'tasks/tampered.yaml')),
    ]);
    await expectRefused('unsigned-pipeline', /^spec\.pipeline\.pipelineRef: the resolved Pipeline "signed" is not signed \(no tekton\.dev\/signature annotation\), and sources\.git\[1\] requires a signature by one of the keys "release-2026"; nothing ran$/, 1);
    await expectRefused('unsigned-task', /^tasks\[sign\]\.taskRef \(values from param "taskPath"\): the resolved Task "sign" is not signed/, 2);
    await expectRefused('other-key-task', /^tasks\[sign\]\.taskRef \(values from param "taskPath"\): the resolved Task "sign" does not verify against the keys "release-2026" that sources\.git\[1\] requires/, 2);
    await expectRefused('tampered-task', /^tasks\[sign\]\.taskRef \(values from param "taskPath"\): the resolved Task "sign" does not verify against the keys "release-2026"/, 2);
    for (const name of ['unsigned-pipeline', 'unsigned-task', 'other-key-task', 'tampered-task']) {
      const r = await waitForPhase(requester, TENANT, name, FINAL);
      assert.equal(r.status?.conditions?.[0]?.reason, 'Rejected');
    }
  });
});
