/**
 * One reading (issue 42), on the REAL stack: Tekton Pipelines' controller,
 * git resolver and webhook on the internal control plane (pods SIMULATED),
 * catalogs on git daemon, the controller as its CLI process under its RBAC.
 *
 * - A Task and a StepAction resolved from git run as the controller checked
 *   them: the Task embedded in the PipelineRun, the StepAction as a copy in
 *   the controller's namespace named by its content, listed in
 *   status.pipeline.references; Tekton resolves nothing again. Unused copies
 *   are swept (the sweep run against the real API server).
 * - Hidden content, in a Task, a Task signed over what JS reads and a
 *   StepAction each: a "comment" carrying keys only Go's YAML reader sees (a
 *   lone CR, U+0085, U+2028, U+2029 ends a line for it) and YAML 1.1 scalars
 *   the two readers read differently (12:30:00, 0o17) are refused, naming
 *   the line, before any PipelineRun. The control: the same signed Task
 *   without the hidden part runs, verified.
 * - A ref means exactly that ref: under glob rules, a tag literally named
 *   refs/heads/release-2 (no such branch) and a branch named refs/tags/v9 (no
 *   such tag) never stand in — at the pipelineRef and as the Task's
 *   revision. The control shows Tekton's own git resolver taking the tag.
 * - One repository, one identity: a rule for ".../x.git" does not allow
 *   ".../x".
 */
import { after, before, describe, test } from 'node:test';
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import pino from 'pino';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import { type Environment, type GitRepository } from '../../src/localenv/index.js';
import type { InternalRequestSpec } from '../../src/api/types.js';
import { connect } from '../../src/kube/client.js';
import { LABEL_STEPACTION_COPY, stepActionCopyName, type StepActionCopy } from '../../src/tekton/stepaction-copy.js';
import { STEPACTION, type PipelineRun } from '../../src/tekton/tekton-types.js';
import { sweepStepActionCopies } from '../../src/controller/stepaction-copies.js';
import { createRequest, messageOf, NS, resolveDirectly, setRunConfigAndWait, simulatedStep, startController, waitFor, waitForPhase, watchMade, type ControllerProcess, type Made, tektonStack } from './helpers.js';
import { buildTools } from '../trusted-tools.js';

const TENANT = 'release-team';
const FINAL = ['Succeeded', 'Failed', 'Rejected'];
let env: Environment;
let internalAdmin: KubeConfig;
let requester: KubeConfig;
let controller: ControllerProcess;
let catalog: GitRepository;
let keys: string;
let made: Made;
/** The commit of the tag literally named refs/heads/release-2, and of main. */
let taggedLikeBranch: string;
let mainHead: string;

const gitRef = (url: string, revision: string, pathInRepo: string) => ({ resolver: 'git', params: [{ name: 'url', value: url }, { name: 'revision', value: revision }, { name: 'pathInRepo', value: pathInRepo }] });

/** The line breaks Go's YAML reader honours and JS's does not (in comments and scalars alike). */
const BREAKS: Array<[string, string]> = [
  ['cr', '\r'],
  ['nel', '\u0085'],
  ['ls', '\u2028'],
  ['ps', '\u2029'],
];

const taskObj = (marker: string, steps?: unknown[], params: unknown[] = []): Record<string, unknown> => ({
  apiVersion: 'tekton.dev/v1',
  kind: 'Task',
  metadata: { name: 'sign' },
  spec: { params: [{ name: 'image', type: 'string', default: '' }, ...params], results: [{ name: 'signature', type: 'string' }], steps: steps ?? [simulatedStep('sign', { SIMULATED_RESULT_signature: `${marker}:$(params.image)` })] },
});
const task = (marker: string, steps?: unknown[], params: unknown[] = []) => stringify(taskObj(marker, steps, params));

/**
 * After the Task's text (which ends with its steps), one more physical line:
 * a comment to JS's YAML reader; to Go's, `br` ends the comment and the rest
 * is a second step at the steps' indentation that changes the result.
 */
const hideStep = (text: string, br: string) =>
  `${text.trimEnd()}\n    # reviewed${br}    - name: hidden${br}      image: registry.invalid/tools:1${br}      command: [/bin/true]${br}      env: [{name: SIMULATED_RESULT_signature, value: hidden}]\n`;
const hiddenStepTask = (br: string) => hideStep(task('reviewed'), br);
/** YAML 1.1 scalars read differently: to JS 45000 and "0o17", to Go "12:30:00" and 15. */
const SCALARS: Array<[string, string]> = [
  ['sexagesimal', '12:30:00'],
  ['octal', '0o17'],
];
/** The first `default:` of a text (the image param's) written as `plain`. */
const withDefault = (text: string, plain: string) => text.replace(/default: .*/, `default: ${plain}`);

const stepAction = (marker: string, params?: unknown[]) =>
  stringify({ apiVersion: 'tekton.dev/v1beta1', kind: 'StepAction', metadata: { name: 'sign-step' }, spec: { ...(params ? { params } : {}), image: 'registry.invalid/tools:1', command: ['/bin/true'], env: [{ name: 'SIMULATED_RESULT_signature', value: `${marker}:step` }] } });
const withStepRef = (path: string) => task('unused', [{ name: 'sign', ref: gitRef('$(params.url)', 'main', path) }], [{ name: 'url', type: 'string' }]);

const pipeline = () =>
  stringify({
    apiVersion: 'tekton.dev/v1',
    kind: 'Pipeline',
    metadata: { name: 'sign-image' },
    spec: {
      params: [{ name: 'image' }, { name: 'taskGitUrl' }, { name: 'taskGitRevision' }, { name: 'taskPath', default: 'tasks/plain.yaml' }],
      results: [{ name: 'signature', value: '$(tasks.sign.results.signature)' }],
      tasks: [{ name: 'sign', params: [{ name: 'image', value: '$(params.image)' }, { name: 'url', value: '$(params.taskGitUrl)' }], taskRef: gitRef('$(params.taskGitUrl)', '$(params.taskGitRevision)', '$(params.taskPath)') }],
    },
  });

const request = (opts: { revision?: string; taskRevision?: string; taskPath?: string; url?: string } = {}): InternalRequestSpec => ({
  pipeline: { pipelineRef: gitRef(opts.url ?? catalog.url, opts.revision ?? 'main', 'pipelines/sign-image.yaml') },
  params: { image: 'img', taskGitUrl: catalog.url, taskGitRevision: opts.taskRevision ?? 'main', ...(opts.taskPath ? { taskPath: opts.taskPath } : {}) },
});

/**
 * The signature Tekton's own code (hack/trusted/sign) makes for a Task, on
 * the Task written by JS's YAML writer: the visible Task is what was signed.
 */
function signedText(obj: Record<string, unknown>, key: string): string {
  const path = join(keys, `doc-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(path, stringify(obj));
  const signed = parse(execFileSync(buildTools().sign, ['--key', key, path], { encoding: 'utf8' })) as { metadata: { annotations: Record<string, string> } };
  const md = obj['metadata'] as Record<string, unknown>;
  return stringify({ ...obj, metadata: { ...md, annotations: { 'tekton.dev/signature': signed.metadata.annotations['tekton.dev/signature'] } } });
}

async function expectRefused(name: string, message: RegExp): Promise<void> {
  const r = await waitForPhase(requester, TENANT, name, FINAL, 90_000);
  assert.equal(r.status?.conditions?.[0]?.reason, 'Rejected', `${name}: ${messageOf(r)}`);
  assert.match(messageOf(r), message, name);
  assert.equal((made.pr.get(r.metadata.uid!) ?? []).length, 0, `${name}: a PipelineRun was made`);
}

before(async () => {
  ({ env, internalAdmin, requester } = await tektonStack(TENANT));
  keys = mkdtempSync(join(tmpdir(), 'one-reading-keys-'));
  const kp = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const priv = join(keys, 'release.key');
  writeFileSync(priv, kp.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
  catalog = await env.tekton!.git.repository('one-reading');
  const files: Record<string, string> = {
    'pipelines/sign-image.yaml': pipeline(),
    'tasks/plain.yaml': task('reviewed'),
    'tasks/with-step.yaml': withStepRef('stepactions/sign-step.yaml'),
    'signed/plain.yaml': signedText(taskObj('signed'), priv),
    'stepactions/sign-step.yaml': stepAction('reviewed'),
  };
  // Every form of hidden content, in a Task, a Task signed over what JS reads
  // (so the signature verifies over the reviewed reading), and a StepAction.
  for (const [form, br] of BREAKS) {
    files[`tasks/hidden-${form}.yaml`] = hiddenStepTask(br);
    // A step only Go reads after the break.
    files[`signed/hidden-${form}.yaml`] = hideStep(signedText(taskObj('reviewed'), priv), br);
    // To Go, after the break the spec's env is given again: the last one counts.
    files[`stepactions/hidden-${form}.yaml`] = `${stepAction('reviewed').trimEnd()}\n  # reviewed${br}  env: [{name: SIMULATED_RESULT_signature, value: hidden}]\n`;
  }
  for (const [form, plain] of SCALARS) {
    files[`tasks/hidden-${form}.yaml`] = withDefault(task('reviewed'), plain);
    const jsReads = parse(`v: ${plain}`, { version: '1.1' }) as { v: unknown };
    const signedObj = taskObj('reviewed');
    ((signedObj['spec'] as { params: Array<{ default: unknown }> }).params[0]!).default = jsReads.v;
    files[`signed/hidden-${form}.yaml`] = withDefault(signedText(signedObj, priv), plain);
    files[`stepactions/hidden-${form}.yaml`] = withDefault(stepAction('reviewed', [{ name: 'x', type: 'string', default: '' }]), plain);
  }
  for (const [form] of [...BREAKS, ...SCALARS]) files[`tasks/with-step-hidden-${form}.yaml`] = withStepRef(`stepactions/hidden-${form}.yaml`);
  mainHead = await catalog.commit(files, 'the catalog');
  // Not reviewed: content on another branch, a tag literally named like a
  // branch the rules allow, a branch named like an allowed tag.
  const unreviewed = await catalog.commit({ 'pipelines/sign-image.yaml': pipeline(), 'tasks/plain.yaml': task('unreviewed') }, 'not reviewed', 'scratch');
  await catalog.setTag('refs/heads/release-2', unreviewed);
  await catalog.setBranch('refs/tags/v9', unreviewed);
  taggedLikeBranch = unreviewed;
  made = await watchMade(internalAdmin);
  controller = await startController(env, ['--git-cache-dir', `${env.dir}/git-cache`]);
  await setRunConfigAndWait(internalAdmin, controller, {
    allowList: [TENANT],
    sources: {
      git: [
        { urls: [catalog.url], revisions: ['main', 'release-*', 'refs/tags/v*'], paths: ['pipelines/**', 'tasks/**', 'stepactions/**'] },
        { urls: [catalog.url], revisions: ['main'], paths: ['signed/**'], signatures: { authorities: [{ name: 'release-2026', key: { data: kp.publicKey.export({ type: 'spki', format: 'pem' }) as string } }] } },
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

describe('one reading: what the controller checked is what Tekton runs (real Tekton, git daemon; pods SIMULATED)', () => {
  test('a resolved Task runs embedded as checked; its StepAction as a content-addressed copy, listed in the references', async () => {
    const created = await createRequest(requester, TENANT, 'with-step', request({ taskPath: 'tasks/with-step.yaml' }));
    const r = await waitForPhase(requester, TENANT, 'with-step', FINAL, 120_000);
    assert.equal(r.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(r));
    assert.deepEqual(r.status?.results, { signature: 'reviewed:step' }, 'the StepAction as checked ran');
    const refs = (r.status?.pipeline?.references ?? []).map((x) => [x.ref, x.path, x.revision, x.digest]);
    assert.deepEqual(refs, [
      ['tasks[sign].taskRef', 'tasks/with-step.yaml', 'refs/heads/main', `sha1:${mainHead}`],
      ['tasks[sign].steps[sign].ref', 'stepactions/sign-step.yaml', 'refs/heads/main', `sha1:${mainHead}`],
    ]);
    const pr = (made.pr.get(created.metadata.uid!) ?? [])[0] as PipelineRun | undefined;
    assert.ok(pr, 'one PipelineRun');
    const t0 = (pr.spec.pipelineSpec?.['tasks'] as Array<{ taskRef?: unknown; taskSpec?: { steps?: Array<{ ref?: unknown }> } }>)[0];
    assert.equal(t0?.taskRef, undefined, 'the Task is embedded');
    const copyName = stepActionCopyName({ image: 'registry.invalid/tools:1', command: ['/bin/true'], env: [{ name: 'SIMULATED_RESULT_signature', value: 'reviewed:step' }] });
    assert.deepEqual(t0?.taskSpec?.steps?.[0]?.ref, { name: copyName }, 'the step names the copy, not a source to resolve');
    const custom = internalAdmin.makeApiClient(CustomObjectsApi);
    const copy = (await custom.getNamespacedCustomObject({ ...STEPACTION, namespace: NS, name: copyName })) as StepActionCopy;
    assert.equal(copy.metadata.labels[LABEL_STEPACTION_COPY], 'true');
    assert.match(copy.metadata.annotations['internal-services.dev/checked-source'] ?? '', /stepactions\/sign-step\.yaml/);
    // The sweep, against the real API server: kept while a run refers to it, removed once none does and the grace is over.
    const cluster = await connect('internal', { kubeconfig: env.internal.identities.controller.kubeconfigPath });
    const client = cluster.resource<StepActionCopy>(STEPACTION);
    const later = Date.now() + 60 * 60_000;
    assert.equal(await sweepStepActionCopies(client, NS, [pr], later, pino({ level: 'silent' })), 0, 'referenced: kept');
    assert.equal(await sweepStepActionCopies(client, NS, [], Date.now(), pino({ level: 'silent' })), 0, 'within the grace period: kept');
    assert.equal(await sweepStepActionCopies(client, NS, [], later, pino({ level: 'silent' })), 1, 'unreferenced and old: removed');
    await waitFor('the copy to be gone', async () => (await client.tryGet(NS, copyName)) === undefined, 20_000);
  });

  test('hidden content behind a line break only Go reads, or in a YAML 1.1 scalar, is refused before any PipelineRun, naming the line', async () => {
    const cases: Array<[string, InternalRequestSpec]> = [...BREAKS, ...SCALARS].flatMap(([form]): Array<[string, InternalRequestSpec]> => [
      [`task-${form}`, request({ taskPath: `tasks/hidden-${form}.yaml` })],
      [`signed-${form}`, request({ taskPath: `signed/hidden-${form}.yaml` })],
      [`stepaction-${form}`, request({ taskPath: `tasks/with-step-hidden-${form}.yaml` })],
    ]);
    assert.equal(cases.length, 18);
    await Promise.all(cases.map(([name, spec]) => createRequest(requester, TENANT, name, spec)));
    for (const [name] of cases) {
      const where = name.startsWith('stepaction-') ? /^tasks\[sign\]\.steps\[sign\]\.ref/ : /^tasks\[sign\]\.taskRef/;
      await expectRefused(name, where);
      const r = await waitForPhase(requester, TENANT, name, FINAL);
      assert.match(messageOf(r), /line \d+/, `${name}: the message names the line: ${messageOf(r)}`);
      assert.equal(r.status?.conditions?.[0]?.reason, 'Rejected');
    }
  });

  test('control: a Task signed over what the controller reads runs, verified with the rule\'s key', async () => {
    await createRequest(requester, TENANT, 'signed-plain', request({ taskPath: 'signed/plain.yaml' }));
    const r = await waitForPhase(requester, TENANT, 'signed-plain', FINAL, 120_000);
    assert.equal(r.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(r));
    assert.deepEqual(r.status?.results, { signature: 'signed:img' });
    assert.deepEqual((r.status?.pipeline?.references ?? []).map((x) => [x.ref, x.signedBy]), [['tasks[sign].taskRef', 'release-2026']]);
  });

  test('control: asked directly, Tekton\'s git resolver takes the tag literally named refs/heads/release-2 for the absent branch', async (t) => {
    const direct = await resolveDirectly(internalAdmin, 'control-guessed-ref', gitRef(catalog.url, 'refs/heads/release-2', 'tasks/plain.yaml').params);
    const commit = direct.state === 'resolved' ? direct.refSource?.digest['sha1'] : undefined;
    t.diagnostic(`Tekton ${env.tekton!.version}: "refs/heads/release-2" → ${commit ?? direct.state} (the tag refs/tags/refs/heads/release-2 is ${taggedLikeBranch})`);
    assert.equal(commit, taggedLikeBranch, "git's guessing: the tag stands in for the absent branch");
  });

  test('a ref means exactly that ref: a name the glob allows that is no such branch or tag is refused, at the pipelineRef and as the Task\'s revision', async () => {
    await Promise.all([
      createRequest(requester, TENANT, 'absent-branch', request({ revision: 'release-2' })),
      createRequest(requester, TENANT, 'absent-branch-qualified', request({ revision: 'refs/heads/release-2' })),
      createRequest(requester, TENANT, 'absent-tag', request({ revision: 'refs/tags/v9' })),
      createRequest(requester, TENANT, 'absent-task-branch', request({ taskRevision: 'release-2' })),
    ]);
    const like = /has no branch "refs\/heads\/release-2" .*The repository has "refs\/tags\/refs\/heads\/release-2", named like it: only the exact ref counts/;
    await expectRefused('absent-branch', new RegExp(`^spec\\.pipeline\\.pipelineRef: ".*" ${like.source}`));
    await expectRefused('absent-branch-qualified', like);
    await expectRefused('absent-tag', /has no tag "refs\/tags\/v9" .*"refs\/heads\/refs\/tags\/v9"/);
    await expectRefused('absent-task-branch', new RegExp(`^tasks\\[sign\\]\\.taskRef \\(values from param "taskGitUrl", param "taskGitRevision", the default of param "taskPath"\\): ".*" ${like.source}`));
    // Nothing of the unreviewed commit was even resolved.
    for (const name of ['absent-branch', 'absent-branch-qualified', 'absent-tag']) {
      const r = await waitForPhase(requester, TENANT, name, FINAL);
      assert.deepEqual(made.rr.get(r.metadata.uid!) ?? [], [], `${name}: no ResolutionRequest`);
    }
  });

  test('one repository, one identity: a rule for ".../one-reading.git" does not allow ".../one-reading"', async () => {
    await createRequest(requester, TENANT, 'other-spelling', request({ url: catalog.url.replace(/\.git$/, '') }));
    await expectRefused('other-spelling', /is not allowed by .*"x" and "x\.git" as two repositories|can be another repository/);
  });
});
