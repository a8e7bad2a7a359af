/**
 * `paths` holds for the file that is read (issue 51, class 4), on the REAL
 * stack: Tekton Pipelines' controller, git resolver and webhook on the
 * internal control plane, the catalog served by git daemon on loopback, the
 * controller as its CLI process. The rule allows `pipelines/internal/**`
 * and `tasks/**`; the catalog commits, under those paths, a symbolic link to
 * a Pipeline outside them and a directory that is a link to another folder.
 *
 * The first test is the control: asked directly, Tekton's git resolver
 * follows the link and returns the Pipeline outside the allowed paths,
 * reporting the link's path. So a request for the link that is Rejected
 * with no ResolutionRequest ever made for it (a watch records every one the
 * controller makes) ran nothing of it. The same rule with a regular file
 * runs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { type Environment, type GitRepository } from '../../src/localenv/index.js';
import { commitEntries } from '../unit/git-trees.js';
import { createRequest, messageOf, resolveDirectly, sample, scrape, setRunConfigAndWait, simulatedStep, startController, waitForPhase, watchMade, type ControllerProcess, type Made, tektonStack } from './helpers.js';

const TENANT = 'release-team';
const FINAL = ['Succeeded', 'Failed', 'Rejected'];
const TOKEN = `outside-the-rule-${process.pid}-${Date.now()}`;
let env: Environment;
let internalAdmin: KubeConfig;
let requester: KubeConfig;
let controller: ControllerProcess;
let metricsPort: number;
let catalog: GitRepository;
let head: string;
let made: Made;

const gitRef = (url: string, revision: string, pathInRepo: string) => ({ resolver: 'git', params: [{ name: 'url', value: url }, { name: 'revision', value: revision }, { name: 'pathInRepo', value: pathInRepo }] });
const pipeline = (name: string, spec: Record<string, unknown>) => stringify({ apiVersion: 'tekton.dev/v1', kind: 'Pipeline', metadata: { name }, spec });
const task = (name: string) => stringify({ apiVersion: 'tekton.dev/v1', kind: 'Task', metadata: { name }, spec: { steps: [simulatedStep(name)] } });
/** A Pipeline whose one Task comes from the catalog at `path`. */
const withTask = (name: string, path: string) => pipeline(name, { params: [{ name: 'taskGitUrl' }], tasks: [{ name: 't', taskRef: gitRef('$(params.taskGitUrl)', 'main', path) }] });

before(async () => {
  ({ env, internalAdmin, requester } = await tektonStack(TENANT));
  catalog = await env.tekton!.git.repository('catalog');
  await catalog.commit(
    {
      'pipelines/internal/ok/ok.yaml': withTask('ok', 'tasks/ok/ok.yaml'),
      'pipelines/internal/via-linked-dir.yaml': withTask('via-linked-dir', 'tasks/linked/other.yaml'),
      'tasks/ok/ok.yaml': task('ok'),
      // Outside every path the rule allows.
      'secret/other.yaml': pipeline('other', { description: TOKEN, tasks: [{ name: 'o', taskSpec: { steps: [simulatedStep('o')] } }] }),
      'secret-tasks/other.yaml': task('other'),
    },
    'the catalog',
  );
  head = commitEntries(
    catalog.dir,
    [
      { path: 'pipelines/internal/link.yaml', mode: '120000', content: '../../secret/other.yaml' },
      { path: 'tasks/linked', mode: '120000', content: '../secret-tasks' },
    ],
    'links under the allowed paths',
  );
  made = await watchMade(internalAdmin);
  controller = await startController(env, ['--metrics-bind-address', '127.0.0.1:0']);
  metricsPort = Number(String((await controller.waitForLog((l) => l.msg === 'serving metrics')).address).split(':').pop());
  await setRunConfigAndWait(internalAdmin, controller, {
    allowList: [TENANT],
    sources: { git: [{ urls: [catalog.url], revisions: ['main'], paths: ['pipelines/internal/**', 'tasks/**'] }], resolutionTimeout: '20s' },
  });
});

after(async () => {
  made?.stop();
  await controller?.kill('SIGKILL');
  await env?.stop();
});

/** A request that must be Rejected before its link is resolved (`rr` ResolutionRequests allowed: what came before it). */
async function expectRefused(name: string, message: RegExp, rr = 0): Promise<void> {
  const r = await waitForPhase(requester, TENANT, name, FINAL, 90_000);
  assert.equal(r.status?.conditions?.[0]?.reason, 'Rejected', `${name}: ${messageOf(r)}`);
  assert.match(messageOf(r), message, name);
  assert.equal(r.status?.pipelineRun, undefined, `${name}: nothing ran`);
  const uid = r.metadata.uid!;
  assert.equal((made.rr.get(uid) ?? []).length, rr, `${name}: ResolutionRequests made: ${JSON.stringify((made.rr.get(uid) ?? []).map((x) => x.spec?.params))}`);
  assert.equal((made.pr.get(uid) ?? []).length, 0, `${name}: a PipelineRun was made`);
}

describe('paths hold for the file read: symbolic links under allowed paths (real Tekton, git daemon)', () => {
  test('control: asked directly, Tekton\'s git resolver follows a link under an allowed path and returns the Pipeline outside it', async (t) => {
    const read = await resolveDirectly(internalAdmin, 'control-link', gitRef(catalog.url, head, 'pipelines/internal/link.yaml').params);
    t.diagnostic(`the link, asked directly: ${read.state === 'resolved' ? `resolved, entryPoint ${JSON.stringify(read.refSource?.entryPoint)}` : `refused: ${read.state === 'failed' ? read.message : read.state}`}`);
    assert.equal(read.state, 'resolved', 'the resolver reads through the link (were it to refuse links itself, this class would be closed by Tekton too)');
    assert.match(Buffer.from(read.state === 'resolved' ? read.content : '').toString('utf8'), new RegExp(TOKEN), 'what it read is the Pipeline outside the allowed paths');
  });

  test('a pipelineRef to a link under an allowed path is Rejected, naming the link; nothing is resolved or run', async () => {
    await createRequest(requester, TENANT, 'link-pipeline', { pipeline: { pipelineRef: gitRef(catalog.url, 'main', 'pipelines/internal/link.yaml') } });
    await expectRefused(
      'link-pipeline',
      new RegExp(`^spec\\.pipeline\\.pipelineRef: "pipelines/internal/link\\.yaml" at commit ${head} of "${catalog.url.replace(/[.]/g, '\\.')}": "pipelines/internal/link\\.yaml" is a symbolic link \\(git mode 120000\\).*paths would hold for the name, not for the file read`),
    );
  });

  test('a Task under a directory that is a link is Rejected after its Pipeline resolves, before the Task would', async () => {
    await createRequest(requester, TENANT, 'link-dir-task', { pipeline: { pipelineRef: gitRef(catalog.url, 'main', 'pipelines/internal/via-linked-dir.yaml') }, params: { taskGitUrl: catalog.url } });
    await expectRefused('link-dir-task', /^tasks\[t\]\.taskRef \(values from param "taskGitUrl"\): "tasks\/linked\/other\.yaml" at commit [0-9a-f]{40} of .*: "tasks\/linked" is a symbolic link/, 1);
  });

  test('the same rule with regular files runs, recording the file it read; the checks are counted', async () => {
    const created = await createRequest(requester, TENANT, 'regular', { pipeline: { pipelineRef: gitRef(catalog.url, 'main', 'pipelines/internal/ok/ok.yaml') }, params: { taskGitUrl: catalog.url } });
    const done = await waitForPhase(requester, TENANT, 'regular', FINAL, 120_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    assert.equal((made.pr.get(created.metadata.uid!) ?? []).length, 1, 'one PipelineRun');
    assert.equal(done.status?.pipeline?.path, 'pipelines/internal/ok/ok.yaml');
    assert.equal(done.status?.pipeline?.digest, `sha1:${head}`);
    assert.equal(done.status?.pipeline?.references?.[0]?.path, 'tasks/ok/ok.yaml');
    const text = await scrape(metricsPort);
    assert.ok((sample(text, 'internal_services_source_path_checks_total', { result: 'refused' }) ?? 0) >= 2, 'the two links counted as refused');
    assert.ok((sample(text, 'internal_services_source_path_checks_total', { result: 'ok' }) ?? 0) >= 3, 'the regular files counted as ok');
  });
});
