/**
 * The closed world on the REAL stack (issue 51): Tekton Pipelines v1.6's
 * controller, its git and cluster resolvers and its webhook on the internal
 * control plane, the catalog on git daemon, the controller as its CLI
 * process (pods SIMULATED). Every case runs twice: with Tekton's
 * config-defaults setting `default-resolver-type` unset and set to `git`
 * (the control shows the webhook filling a resolver into a reference with no
 * name while it is set), with `sources.cluster` on.
 *
 * - A step ref with neither name nor resolver is Rejected, naming it.
 * - The administrators' installed Pipeline with a literal remote taskRef
 *   (`revision: main`, while a tag named `main` points at other content) runs
 *   the Task at the commit of the branch, embedded, listed in the status; an
 *   installed Task whose step ref takes its revision from a request param is
 *   checked like a requester's; an installed Pipeline's literal reference to
 *   an unlisted source is Rejected, telling the administrator what to write.
 * - The controller's StepAction copy, reached through the cluster resolver,
 *   is Rejected, although the rule allows the cluster resolver.
 * - A resolved Task that is a custom task is Rejected.
 * - A StepAction from git runs as the copy, listed in the references.
 * Every PipelineRun the controller made in the file is checked with the
 * closed-world check (src/tekton/closed-world.ts) as Tekton got it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import { applyObjects, type Environment, type GitRepository } from '../../src/localenv/index.js';
import { stepActionCopyName, STEPACTION_COPY_PREFIX } from '../../src/tekton/stepaction-copy.js';
import { closedWorldViolations } from '../../src/tekton/closed-world.js';
import type { InternalRequestSpec } from '../../src/api/types.js';
import { createRequest, messageOf, NS, setRunConfigAndWait, simulatedStep, startController, testPipeline, waitFor, waitForPhase, watchMade, type ControllerProcess, type Made, tektonStack } from './helpers.js';

const TENANT = 'release-team';
const FINAL = ['Succeeded', 'Failed', 'Rejected'];
const TEKTON_NS = 'tekton-pipelines';
let env: Environment;
let internalAdmin: KubeConfig;
let requester: KubeConfig;
let controller: ControllerProcess;
let catalog: GitRepository;
let other: GitRepository;
let head: string;
let made: Made;
let copyName: string;

const gitRef = (url: string, revision: string, pathInRepo: string) => ({ resolver: 'git', params: [{ name: 'url', value: url }, { name: 'revision', value: revision }, { name: 'pathInRepo', value: pathInRepo }] });
const taskYaml = (spec: Record<string, unknown>) => stringify({ apiVersion: 'tekton.dev/v1', kind: 'Task', metadata: { name: 't' }, spec });
const pipelineYaml = (taskPath: string) =>
  stringify({ apiVersion: 'tekton.dev/v1', kind: 'Pipeline', metadata: { name: 'p' }, spec: { results: [{ name: 'signature', value: '$(tasks.sign.results.signature)' }], tasks: [{ name: 'sign', taskRef: gitRef(catalog.url, 'main', taskPath) }] } });
const signTask = (marker: string) => taskYaml({ results: [{ name: 'signature' }], steps: [simulatedStep('sign', { SIMULATED_RESULT_signature: marker })] });
const saSpec = { image: 'registry.invalid/tools:1', command: ['/bin/true'], env: [{ name: 'SIMULATED_RESULT_signature', value: 'reviewed:step' }] };
const todays = (pipelinePath: string): InternalRequestSpec => ({ pipeline: { pipelineRef: gitRef(catalog.url, 'main', pipelinePath) } });

async function setDefaultResolverType(value: string | undefined): Promise<void> {
  const core = internalAdmin.makeApiClient(CoreV1Api);
  const cm = await core.readNamespacedConfigMap({ name: 'config-defaults', namespace: TEKTON_NS });
  const data = { ...(cm.data ?? {}) };
  if (value === undefined) delete data['default-resolver-type'];
  else data['default-resolver-type'] = value;
  await core.replaceNamespacedConfigMap({ name: 'config-defaults', namespace: TEKTON_NS, body: { ...cm, data } });
}

/** What Tekton's webhook makes of a Pipeline with a taskRef that has no name (a dry run): the resolver it fills in, or its refusal. */
async function webhookDefault(): Promise<string> {
  const custom = internalAdmin.makeApiClient(CustomObjectsApi);
  try {
    const out = (await custom.createNamespacedCustomObject({
      group: 'tekton.dev',
      version: 'v1',
      plural: 'pipelines',
      namespace: NS,
      dryRun: 'All',
      body: testPipeline(`probe-${Date.now()}`, { tasks: [{ name: 't', taskRef: { params: [{ name: 'url', value: catalog.url }, { name: 'revision', value: 'main' }, { name: 'pathInRepo', value: 'tasks/sign.yaml' }] } }] }),
    })) as { spec: { tasks: Array<{ taskRef: { resolver?: string } }> } };
    return `resolver ${JSON.stringify(out.spec.tasks[0]?.taskRef.resolver ?? null)}`;
  } catch (e) {
    return `refused: ${String((e as { body?: unknown }).body ?? e).slice(0, 200)}`;
  }
}

before(async () => {
  ({ env, internalAdmin, requester } = await tektonStack(TENANT));
  catalog = await env.tekton!.git.repository('closed-catalog');
  other = await env.tekton!.git.repository('closed-other');
  copyName = stepActionCopyName(structuredClone(saSpec));
  head = await catalog.commit(
    {
      'tasks/sign.yaml': signTask('reviewed'),
      'stepactions/sa.yaml': stringify({ apiVersion: 'tekton.dev/v1beta1', kind: 'StepAction', metadata: { name: 'sa' }, spec: saSpec }),
      'tasks/with-sa.yaml': taskYaml({ results: [{ name: 'signature' }], steps: [{ name: 'sign', ref: gitRef(catalog.url, 'main', 'stepactions/sa.yaml') }] }),
      'tasks/noname.yaml': taskYaml({ steps: [{ name: 'sign', ref: { params: gitRef(catalog.url, 'unreviewed', 'stepactions/sa.yaml').params } }] }),
      'tasks/cluster-copy.yaml': taskYaml({ results: [{ name: 'signature' }], steps: [{ name: 'sign', ref: { resolver: 'cluster', params: [{ name: 'kind', value: 'stepaction' }, { name: 'name', value: copyName }, { name: 'namespace', value: NS }] } }] }),
      'tasks/custom.yaml': taskYaml({ apiVersion: 'example.dev/v1', kind: 'Approval', spec: { approvers: ['x'] } }),
      'pipelines/with-sa.yaml': pipelineYaml('tasks/with-sa.yaml'),
      'pipelines/noname.yaml': pipelineYaml('tasks/noname.yaml'),
      'pipelines/cluster-copy.yaml': pipelineYaml('tasks/cluster-copy.yaml'),
      'pipelines/custom.yaml': pipelineYaml('tasks/custom.yaml'),
    },
    'the reviewed catalog',
  );
  // Content nobody reviewed, on its own branch; then a tag literally named "main" points at it.
  const unreviewed = await catalog.commit({ 'tasks/sign.yaml': signTask('unreviewed'), 'stepactions/sa.yaml': stringify({ apiVersion: 'tekton.dev/v1beta1', kind: 'StepAction', metadata: { name: 'sa' }, spec: { ...saSpec, env: [{ name: 'SIMULATED_RESULT_signature', value: 'unreviewed:step' }] } }) }, 'unreviewed', 'unreviewed');
  await catalog.setTag('main', unreviewed);
  await other.commit({ 'tasks/sign.yaml': signTask('other') }, 'other');
  await applyObjects(internalAdmin, [
    testPipeline('admin-literal', { results: [{ name: 'signature', value: '$(tasks.sign.results.signature)' }], tasks: [{ name: 'sign', taskRef: gitRef(catalog.url, 'main', 'tasks/sign.yaml') }] }),
    testPipeline('admin-unlisted', { tasks: [{ name: 'sign', taskRef: gitRef(other.url, 'main', 'tasks/sign.yaml') }] }),
    testPipeline('admin-forward', { params: [{ name: 'rev' }], results: [{ name: 'signature', value: '$(tasks.sign.results.signature)' }], tasks: [{ name: 'sign', params: [{ name: 'rev', value: '$(params.rev)' }], taskRef: { name: 'admin-forward' } }] }),
    { apiVersion: 'tekton.dev/v1', kind: 'Task', metadata: { name: 'admin-forward', namespace: NS }, spec: { params: [{ name: 'rev' }], results: [{ name: 'signature' }], steps: [{ name: 'sign', ref: gitRef(catalog.url, '$(params.rev)', 'stepactions/sa.yaml') }] } },
  ] as never);
  made = await watchMade(internalAdmin);
  controller = await startController(env);
  await setRunConfigAndWait(internalAdmin, controller, {
    allowList: [TENANT],
    sources: { git: [{ urls: [catalog.url], revisions: ['main'], paths: ['pipelines/**', 'tasks/**', 'stepactions/**'] }], cluster: true, resolutionTimeout: '30s' },
  });
});

after(async () => {
  made?.stop();
  await controller?.kill('SIGKILL');
  await env?.stop();
});

async function outcome(name: string): Promise<{ reason: string; message: string; status: NonNullable<Awaited<ReturnType<typeof waitForPhase>>['status']>; uid: string }> {
  const r = await waitForPhase(requester, TENANT, name, FINAL, 90_000);
  return { reason: r.status?.conditions?.[0]?.reason ?? '', message: messageOf(r), status: r.status ?? {}, uid: r.metadata.uid! };
}

async function expectRejected(name: string, message: RegExp): Promise<void> {
  const o = await outcome(name);
  assert.equal(o.reason, 'Rejected', `${name}: ${o.message}`);
  assert.match(o.message, message, name);
  assert.equal((made.pr.get(o.uid) ?? []).length, 0, `${name}: no PipelineRun`);
}

for (const setting of [undefined, 'git'] as const) {
  const s = setting ?? 'unset';
  describe(`closed world with default-resolver-type ${s} and sources.cluster on (real Tekton, git daemon; pods SIMULATED)`, () => {
    test(`control: Tekton's webhook ${setting ? 'fills in the resolver of' : 'does not default'} a reference with no name`, async (t) => {
      await setDefaultResolverType(setting);
      const seen = await waitFor(
        'the webhook to take the setting',
        async () => {
          const d = await webhookDefault();
          return (setting ? d === `resolver "${setting}"` : d !== 'resolver "git"') ? d : undefined;
        },
        60_000,
        1000,
      );
      t.diagnostic(`webhook, a taskRef with no name: ${seen}`);
    });

    test('a step ref with neither name nor resolver is Rejected, naming it', async () => {
      await createRequest(requester, TENANT, `noname-${s}`, todays('pipelines/noname.yaml'));
      await expectRejected(`noname-${s}`, /tasks\[sign\]\.steps\[sign\]\.ref has neither a name nor a resolver: Tekton would fill in the resolver its config-defaults name \(default-resolver-type\)/);
    });

    test('a StepAction from git runs as the copy of what was checked, listed in the references', async () => {
      await createRequest(requester, TENANT, `with-sa-${s}`, todays('pipelines/with-sa.yaml'));
      const o = await outcome(`with-sa-${s}`);
      assert.equal(o.reason, 'Succeeded', o.message);
      assert.deepEqual(o.status.results, { signature: 'reviewed:step' });
      const refs = o.status.pipeline?.references?.map((r) => [r.ref, r.revision, r.digest]);
      assert.deepEqual(refs, [
        ['tasks[sign].taskRef', 'refs/heads/main', `sha1:${head}`],
        ['tasks[sign].steps[sign].ref', 'refs/heads/main', `sha1:${head}`],
      ]);
      const pr = made.pr.get(o.uid)![0]!;
      const steps = (pr.spec.pipelineSpec?.['tasks'] as Array<{ taskSpec: { steps: Array<{ ref?: unknown }> } }>)[0]!.taskSpec.steps;
      assert.deepEqual(steps[0]!.ref, { name: copyName });
    });

    test("the controller's StepAction copy, reached through the cluster resolver, is Rejected", async () => {
      await createRequest(requester, TENANT, `cluster-copy-${s}`, todays('pipelines/cluster-copy.yaml'));
      await expectRejected(`cluster-copy-${s}`, new RegExp(`tasks\\[sign\\]\\.steps\\[sign\\]\\.ref: "${copyName}" is a copy the controller made of a StepAction it checked for another decision; copies are never reached through a resolver`));
    });

    test('a resolved Task that is a custom task is Rejected', async () => {
      await createRequest(requester, TENANT, `custom-${s}`, todays('pipelines/custom.yaml'));
      await expectRejected(`custom-${s}`, /tasks\[sign\]\.taskRef is a custom task \("Approval"\)/);
    });

    test("the administrators' literal reference runs at the branch's commit (not the tag named like it), embedded and listed", async () => {
      await createRequest(requester, TENANT, `admin-literal-${s}`, { request: 'admin-literal' });
      const o = await outcome(`admin-literal-${s}`);
      assert.equal(o.reason, 'Succeeded', o.message);
      assert.deepEqual(o.status.results, { signature: 'reviewed' }, 'the branch main, never the tag named main');
      assert.deepEqual(o.status.pipeline?.references?.map((r) => [r.ref, r.path, r.revision, r.digest]), [['tasks[sign].taskRef', 'tasks/sign.yaml', 'refs/heads/main', `sha1:${head}`]]);
      const pr = made.pr.get(o.uid)![0]!;
      assert.equal(pr.spec.pipelineRef, undefined, 'the installed Pipeline runs embedded once its reference was pinned');
    });

    test("an installed Task's step ref built from a request param is checked like a requester's; an installed Pipeline's unlisted literal source is Rejected, saying what to write", async () => {
      await createRequest(requester, TENANT, `admin-forward-bad-${s}`, { request: 'admin-forward', params: { rev: 'unreviewed' } });
      await createRequest(requester, TENANT, `admin-forward-${s}`, { request: 'admin-forward', params: { rev: 'main' } });
      await createRequest(requester, TENANT, `admin-unlisted-${s}`, { request: 'admin-unlisted' });
      await expectRejected(`admin-forward-bad-${s}`, /tasks\[sign\]\.steps\[sign\]\.ref \(values from task "sign" param "rev" ← param "rev"\): .*not branch "refs\/heads\/unreviewed"/);
      const ok = await outcome(`admin-forward-${s}`);
      assert.equal(ok.reason, 'Succeeded', ok.message);
      assert.deepEqual(ok.status.results, { signature: 'reviewed:step' });
      assert.deepEqual(ok.status.pipeline?.references?.map((r) => r.ref), ['tasks[sign].steps[sign].ref']);
      await expectRejected(`admin-unlisted-${s}`, /tasks\[sign\]\.taskRef: git url ".*closed-other.*" is not allowed.*a reference written in the installed Pipeline "admin-unlisted".*allow the source with a rule in sources of the InternalServicesConfig/);
    });
  });
}

test('every PipelineRun the controller made in this file passes the closed-world check as Tekton got it', async () => {
  const custom = internalAdmin.makeApiClient(CustomObjectsApi);
  const installed = async (plural: string, name: string) => {
    try {
      return (await custom.getNamespacedCustomObject({ group: 'tekton.dev', version: 'v1', plural, namespace: NS, name })) as Record<string, unknown>;
    } catch {
      return undefined;
    }
  };
  const prs = [...made.pr.values()].flat();
  assert.ok(prs.length >= 6, `PipelineRuns seen: ${prs.length}`);
  for (const pr of prs) {
    const copies = new Set<string>();
    JSON.stringify(pr.spec, (k, v: unknown) => {
      if (k === 'name' && typeof v === 'string' && v.startsWith(STEPACTION_COPY_PREFIX)) copies.add(v);
      return v;
    });
    // Copies are made before the run for its decision: each named one was made by the controller (it exists or existed).
    for (const c of copies) assert.equal(c, copyName);
    const pipelines = new Map<string, Record<string, unknown> | undefined>();
    const tasks = new Map<string, Record<string, unknown> | undefined>();
    const ref = (pr.spec.pipelineRef as { name?: string } | undefined)?.name;
    if (ref) pipelines.set(ref, await installed('pipelines', ref));
    for (const t of ['admin-forward']) tasks.set(t, await installed('tasks', t));
    const vs = closedWorldViolations(parse(JSON.stringify(pr)) as { spec: unknown }, { installedPipeline: (n) => pipelines.get(n), installedTask: (n) => tasks.get(n), copies, copyPrefix: STEPACTION_COPY_PREFIX });
    assert.deepEqual(vs, [], `${pr.metadata.name}, as stored: ${JSON.stringify(pr.spec)}`);
  }
});
