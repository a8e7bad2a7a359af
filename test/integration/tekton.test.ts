/**
 * The request flow on REAL Tekton: the pipelines controller, the remote
 * resolvers and the admission webhook of github.com/tektoncd/pipeline run
 * against the internal control plane; only the TaskRun pods are simulated
 * (SimulatedKubelet: no kubelet here). The controller runs as its real CLI
 * process under its own RBAC.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { CoreV1Api, CustomObjectsApi, Watch, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import {
  startEnvironment,
  type Environment,
  applyObjects,
  ensureNamespace,
  ensureServiceAccount,
  grantRequester,
  installProject,
} from '../../src/localenv/index.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';
import { outcomeOfResolution, resolutionRequest, RESOLUTION_REQUEST, type Resolution, type ResolutionRequest } from '../../src/tekton/resolve.js';
import { startResolution } from '../../src/tekton/resolution-start.js';
import { fromKubeConfig } from '../../src/kube/client.js';
import {
  api, createRequest, IR, NS, pipelineRunsFor, releaseRun, simulatedStep, startController, testPipeline, waitFor, waitForPhase, type ControllerProcess,
  onlyPipelineRunOf, setRunConfig,
} from './helpers.js';

const TENANT = 'tenant-a';
let env: Environment;
let internalAdmin: KubeConfig;
let requester: KubeConfig;
let controller: ControllerProcess | undefined;

const step = simulatedStep;
const pipeline = testPipeline;

const PIPELINES = [
  // String, array and object results; array and object params.
  pipeline('results', {
    params: [
      { name: 'image', type: 'string' },
      { name: 'tags', type: 'array', default: [] },
      { name: 'meta', type: 'object', properties: { team: { type: 'string' } }, default: { team: 'none' } },
      { name: 'note', type: 'string', default: '' },
    ],
    results: [
      { name: 'signature', value: '$(tasks.sign.results.signature)' },
      { name: 'tags', type: 'array', value: '$(tasks.sign.results.tags[*])' },
      { name: 'info', type: 'object', value: '$(tasks.sign.results.info[*])' },
      { name: 'note', value: '$(tasks.sign.results.note)' },
    ],
    tasks: [
      {
        name: 'sign',
        params: [
          { name: 'image', value: '$(params.image)' },
          { name: 'tags', value: ['$(params.tags[*])'] },
          { name: 'team', value: '$(params.meta.team)' },
          { name: 'note', value: '$(params.note)' },
        ],
        taskSpec: {
          params: [{ name: 'image' }, { name: 'tags', type: 'array' }, { name: 'team' }, { name: 'note' }],
          results: [
            { name: 'signature' },
            { name: 'tags', type: 'array' },
            { name: 'info', type: 'object', properties: { team: { type: 'string' }, image: { type: 'string' } } },
            { name: 'note' },
          ],
          steps: [
            step(
              'sign',
              {
                SIMULATED_RESULT_signature: 'sig:$(params.image)',
                SIMULATED_RESULT_tags: '["signed","$(params.team)"]',
                SIMULATED_RESULT_info: '{"team":"$(params.team)","image":"$(params.image)"}',
                SIMULATED_RESULT_note: '$(params.note)',
              },
              { command: ['sign'], args: ['$(params.tags[*])'] },
            ),
          ],
        },
      },
    ],
  }),
  // Two tasks; the second one's step exits 3.
  pipeline('fails', {
    tasks: [
      { name: 'build', taskSpec: { steps: [step('build', {})] } },
      { name: 'sign', runAfter: ['build'], taskSpec: { steps: [step('sign', { SIMULATED_EXIT_CODE: '3' }), step('after', {})] } },
    ],
  }),
  // A step that never ends (until Tekton deletes its pod).
  pipeline('hangs', { tasks: [{ name: 'wait', taskSpec: { steps: [step('wait', { SIMULATED_DURATION: 'never' })] } }] }),
  // The volumeClaim workspace.
  pipeline('uses-workspace', {
    workspaces: [{ name: 'workspace' }],
    tasks: [{ name: 'write', workspaces: [{ name: 'out', workspace: 'workspace' }], taskSpec: { workspaces: [{ name: 'out' }], steps: [step('write', {})] } }],
  }),
  // A step that runs for 10 minutes.
  pipeline('slow', { tasks: [{ name: 't', taskSpec: { steps: [step('s', { SIMULATED_DURATION: '10m' })] } }] }),
  // A step that ends when the test says so.
  pipeline('gated', {
    results: [{ name: 'out', value: '$(tasks.t.results.out)' }],
    tasks: [{ name: 't', taskSpec: { results: [{ name: 'out' }], steps: [step('s', { SIMULATED_DURATION: 'gate', SIMULATED_RESULT_out: 'released' })] } }],
  }),
  // Fails on every attempt; Tekton tries twice.
  pipeline('flaky', {
    tasks: [{ name: 'try', retries: 1, taskSpec: { steps: [step('try', { SIMULATED_EXIT_CODE: '1' })] } }],
  }),
];

const setConfig = (spec: Record<string, unknown>): Promise<void> => setRunConfig(internalAdmin, spec);
const theOnlyPipelineRun = (uid: string): Promise<PipelineRun> => onlyPipelineRunOf(internalAdmin, uid);

async function podsOf(pipelineRun: string): Promise<V1Pod[]> {
  const core = internalAdmin.makeApiClient(CoreV1Api);
  return (await core.listNamespacedPod({ namespace: NS, labelSelector: `tekton.dev/pipelineRun=${pipelineRun}` })).items;
}

async function taskRunsOf(pipelineRun: string): Promise<Array<{ metadata: { name: string }; status?: { conditions?: Array<{ reason?: string; message?: string }>; retriesStatus?: unknown[] } }>> {
  const l = (await internalAdmin.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({ group: 'tekton.dev', version: 'v1', plural: 'taskruns', namespace: NS, labelSelector: `tekton.dev/pipelineRun=${pipelineRun}` })) as { items: never[] };
  return l.items;
}

before(async () => {
  env = await startEnvironment({ tekton: true });
  await installProject(env);
  internalAdmin = env.internal.identities.admin.kubeConfig();
  requester = env.remote.identities.requester!.kubeConfig();
  await grantRequester(env, TENANT);
  await ensureServiceAccount(internalAdmin, NS, 'signer');
  await applyObjects(internalAdmin, PIPELINES as never);
  await setConfig({ allowList: [TENANT], allowedServiceAccounts: ['signer'], volumeClaim: { name: 'workspace', size: '2Gi' } });
  controller = await startController(env);
});

after(async () => {
  await controller?.kill('SIGKILL');
  await env?.stop();
});

describe('real Tekton (pods simulated)', () => {
  test('string, array and object results reach the request; array and object params reach the pod', async () => {
    const r = await createRequest(requester, TENANT, 'results', {
      request: 'results',
      params: { image: 'quay.io/org/app@sha256:abc', tags: '["latest","v1.2"]', meta: '{"team":"blue"}' },
    });
    const done = await waitForPhase(requester, TENANT, 'results', ['Succeeded', 'Failed', 'Rejected'], 60_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', done.status?.conditions?.[0]?.message);
    assert.deepEqual(done.status?.results, {
      signature: 'sig:quay.io/org/app@sha256:abc',
      tags: '["signed","blue"]',
      info: JSON.stringify({ image: 'quay.io/org/app@sha256:abc', team: 'blue' }),
      note: '',
    });
    assert.match(done.status?.pipelineRun ?? '', new RegExp(`^${NS}/ir-${r.metadata.uid}$`));
  });

  test('the array param is expanded by Tekton into the step container args', async () => {
    const r = await createRequest(requester, TENANT, 'args', { request: 'results', params: { image: 'i', tags: '["a","b c"]' } });
    const pr = await theOnlyPipelineRun(r.metadata.uid!);
    const pods = await waitFor('the TaskRun pod', async () => (await podsOf(pr.metadata.name!))[0]);
    const stepContainer = pods.spec!.containers.find((c) => c.name === 'step-sign')!;
    // Tekton's entrypoint wraps the command: "-entrypoint sign -- a 'b c'" ends the args.
    assert.deepEqual(stepContainer.args?.slice(-5), ['-entrypoint', 'sign', '--', 'a', 'b c']);
    await waitForPhase(requester, TENANT, 'args', ['Succeeded'], 60_000);
  });

  test('a failing step: Failed with Tekton reason, message and the failed task', async () => {
    await createRequest(requester, TENANT, 'fails', { request: 'fails' });
    const done = await waitForPhase(requester, TENANT, 'fails', ['Succeeded', 'Failed', 'Rejected'], 60_000);
    const c = done.status?.conditions?.[0];
    assert.equal(c?.reason, 'Failed');
    assert.match(c?.message ?? '', /failed: Failed: Tasks Completed: 2 \(Failed: 1, Cancelled 0\), Skipped: 0; failed tasks: sign \("step-sign" exited with code 3: Error\)$/);
  });

  test('spec.timeouts.pipeline on a step that never ends: Failed with Tekton PipelineRunTimeout', async () => {
    const r = await createRequest(requester, TENANT, 'times-out', { request: 'hangs', timeouts: { pipeline: '3s' } });
    const pr = await theOnlyPipelineRun(r.metadata.uid!);
    assert.equal((pr.spec as { timeouts?: { pipeline?: string } }).timeouts?.pipeline, '3s');
    const done = await waitForPhase(requester, TENANT, 'times-out', ['Succeeded', 'Failed', 'Rejected'], 60_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Failed');
    assert.match(done.status?.conditions?.[0]?.message ?? '', /failed: PipelineRunTimeout: PipelineRun "ir-[0-9a-f-]+" failed to finish within "3s"/);
  });

  test('request deleted mid-run: Tekton reports the PipelineRun Cancelled, then it is removed', async () => {
    const r = await createRequest(requester, TENANT, 'deleted', { request: 'hangs' });
    const pr = await theOnlyPipelineRun(r.metadata.uid!);
    const name = pr.metadata.name!;
    await waitFor('the TaskRun pod running', async () => (await podsOf(name)).find((p) => p.status?.phase === 'Running'), 30_000);
    // Record every condition Tekton writes on the PipelineRun from now on.
    const seen: string[] = [];
    const watch = await new Watch(internalAdmin).watch(`/apis/tekton.dev/v1/namespaces/${NS}/pipelineruns`, { fieldSelector: `metadata.name=${name}` }, (type, obj: PipelineRun) => {
      const c = obj.status?.conditions?.find((x) => x.type === 'Succeeded');
      seen.push(`${type}:${c?.status ?? ''}/${c?.reason ?? ''}`);
    }, () => {});
    try {
      await api(requester).deleteNamespacedCustomObject({ ...IR, namespace: TENANT, name: 'deleted' });
      await waitFor('the PipelineRun to be removed', async () => (await pipelineRunsFor(internalAdmin, r.metadata.uid!)).length === 0, 60_000);
      // A list can show it gone before the watch delivers its DELETED (seen on a loaded machine): the watch is read to its end.
      await waitFor('the DELETED event on the watch', async () => seen.some((s) => s.startsWith('DELETED:')), 30_000).catch(() => undefined);
    } finally {
      watch.abort();
    }
    assert.ok(seen.some((s) => s === 'MODIFIED:False/Cancelled'), `Tekton never reported Cancelled: ${seen.join(' ')}`);
    assert.equal(seen.at(-1)?.split(':')[0], 'DELETED');
    // Tekton cancels the TaskRun on its own schedule (it may still be
    // catching up after the PipelineRun, which it reported first, is gone).
    const reason = async () => (await taskRunsOf(name))[0]?.status?.conditions?.[0]?.reason;
    await waitFor('the TaskRun cancelled', async () => (await reason()) === 'TaskRunCancelled', 30_000).catch(async () => {
      assert.equal(await reason(), 'TaskRunCancelled');
    });
  });

  test('the volumeClaim workspace: Tekton creates the PVC from our template', async () => {
    const r = await createRequest(requester, TENANT, 'workspace', { request: 'uses-workspace' });
    const pr = await theOnlyPipelineRun(r.metadata.uid!);
    const core = internalAdmin.makeApiClient(CoreV1Api);
    const pvc = await waitFor('the PVC', async () => (await core.listNamespacedPersistentVolumeClaim({ namespace: NS })).items.find((p) => p.metadata?.ownerReferences?.some((o) => o.uid === pr.metadata.uid)), 30_000);
    assert.equal(pvc.spec?.resources?.requests?.['storage'], '2Gi');
    assert.deepEqual(pvc.spec?.accessModes, ['ReadWriteOnce']);
    const pod = await waitFor('the TaskRun pod', async () => (await podsOf(pr.metadata.name!))[0]);
    assert.ok(pod.spec?.volumes?.some((v) => v.persistentVolumeClaim?.claimName === pvc.metadata?.name), 'the pod mounts the PVC');
    await waitForPhase(requester, TENANT, 'workspace', ['Succeeded'], 60_000);
  });

  test('spec.serviceAccount reaches the TaskRun pod', async () => {
    const r = await createRequest(requester, TENANT, 'with-sa', { request: 'results', params: { image: 'i' }, serviceAccount: 'signer' });
    const pr = await theOnlyPipelineRun(r.metadata.uid!);
    const pod = await waitFor('the TaskRun pod', async () => (await podsOf(pr.metadata.name!))[0]);
    assert.equal(pod.spec?.serviceAccountName, 'signer');
    await waitForPhase(requester, TENANT, 'with-sa', ['Succeeded'], 60_000);
  });

  test('a param value holding $(params.x) or $(context.pipelineRun.name): what Tekton does with it', async () => {
    const note = 'img=$(params.image) run=$(context.pipelineRun.name)';
    const r = await createRequest(requester, TENANT, 'injection', { request: 'results', params: { image: 'quay.io/x', note } });
    const done = await waitForPhase(requester, TENANT, 'injection', ['Succeeded', 'Failed', 'Rejected'], 60_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded');
    // Recorded in docs/errors.md: Tekton substitutes $(params.…) and
    // $(context.…) found inside a param value it has already substituted.
    assert.equal(done.status?.results?.['note'], `img=quay.io/x run=ir-${r.metadata.uid}`);
  });

  test('a PipelineRun the Tekton webhook refuses: the request is Rejected with its message', async () => {
    assert.ok(env.tekton?.webhook, 'the webhook runs in this environment');
    await createRequest(requester, TENANT, 'refused', { request: 'results', params: { image: 'i' }, timeouts: { tasks: '2h' } });
    const done = await waitForPhase(requester, TENANT, 'refused', ['Succeeded', 'Failed', 'Rejected'], 30_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Rejected');
    assert.match(done.status?.conditions?.[0]?.message ?? '', /the internal cluster refused the PipelineRun for this request: .*admission webhook "validation\.webhook\.pipeline\.tekton\.dev" denied the request: validation failed: invalid value: 2h0m0s should be <= pipeline duration: spec\.timeouts\.tasks/);
  });

  test('a gated step runs until the test releases its pod', async () => {
    const r = await createRequest(requester, TENANT, 'gated', { request: 'gated' });
    const pr = await theOnlyPipelineRun(r.metadata.uid!);
    await waitFor('the pod running', async () => (await podsOf(pr.metadata.name!)).find((p) => p.status?.phase === 'Running'), 30_000);
    await new Promise((res) => setTimeout(res, 1500));
    assert.equal((await waitForPhase(requester, TENANT, 'gated', ['Running'])).status?.conditions?.[0]?.reason, 'Running');
    await releaseRun(env, pr.metadata.name!);
    const done = await waitForPhase(requester, TENANT, 'gated', ['Succeeded', 'Failed'], 30_000);
    assert.deepEqual(done.status?.results, { out: 'released' });
  });

  test('retries: Tekton runs a failed task again in a new pod and reports both attempts', async () => {
    const r = await createRequest(requester, TENANT, 'flaky', { request: 'flaky' });
    const done = await waitForPhase(requester, TENANT, 'flaky', ['Succeeded', 'Failed', 'Rejected'], 60_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Failed');
    const pr = `ir-${r.metadata.uid}`;
    const trs = await taskRunsOf(pr);
    assert.equal(trs.length, 1);
    assert.equal(trs[0]?.status?.retriesStatus?.length, 1, 'one retry recorded');
    assert.equal((await podsOf(pr)).length, 2, 'one pod per attempt');
  });
});

describe('remote resolution with the git resolver (pods simulated)', () => {
  test('a Pipeline is resolved from the loopback git repository, pinned to the commit', async () => {
    const git = env.tekton!.git;
    const repo = await git.repository('catalog');
    const pipelineYaml = (result: string): string => `apiVersion: tekton.dev/v1
kind: Pipeline
metadata:
  name: from-git
spec:
  results:
    - name: answer
      value: $(tasks.t.results.answer)
  tasks:
    - name: t
      taskSpec:
        results:
          - name: answer
        steps:
          - name: s
            image: registry.invalid/tools:1
            command: ["/bin/true"]
            env:
              - name: SIMULATED_RESULT_answer
                value: "${result}"
`;
    const first = await repo.commit({ 'pipelines/from-git.yaml': pipelineYaml('one') }, 'first');
    const ns = 'resolution';
    await ensureNamespace(internalAdmin, ns);
    await ensureServiceAccount(internalAdmin, ns, 'default');
    const custom = internalAdmin.makeApiClient(CustomObjectsApi);
    const run = async (name: string, revision: string, path = 'pipelines/from-git.yaml'): Promise<PipelineRun> => {
      await custom.createNamespacedCustomObject({
        group: 'tekton.dev', version: 'v1', plural: 'pipelineruns', namespace: ns,
        body: {
          apiVersion: 'tekton.dev/v1', kind: 'PipelineRun', metadata: { name },
          spec: { pipelineRef: { resolver: 'git', params: [{ name: 'url', value: repo.url }, { name: 'revision', value: revision }, { name: 'pathInRepo', value: path }] } },
        },
      });
      return waitFor(`${name} to finish`, async () => {
        const pr = (await custom.getNamespacedCustomObject({ group: 'tekton.dev', version: 'v1', plural: 'pipelineruns', namespace: ns, name })) as PipelineRun;
        const c = pr.status?.conditions?.[0];
        return c && c.status !== 'Unknown' ? pr : undefined;
      }, 60_000);
    };
    const a = await run('from-main', 'main');
    assert.equal(a.status?.conditions?.[0]?.reason, 'Succeeded', a.status?.conditions?.[0]?.message);
    assert.deepEqual(a.status?.results, [{ name: 'answer', value: 'one' }]);
    const prov = (a.status as { provenance?: { refSource?: { uri?: string; digest?: Record<string, string>; entryPoint?: string } } }).provenance?.refSource;
    assert.equal(prov?.digest?.['sha1'], first);
    assert.equal(prov?.uri, `git+${repo.url}`);
    assert.equal(prov?.entryPoint, 'pipelines/from-git.yaml');

    // The branch moves: a new run resolves the new commit; the old sha still resolves the old content.
    const second = await repo.commit({ 'pipelines/from-git.yaml': pipelineYaml('two') }, 'second');
    const b = await run('from-main-again', 'main');
    assert.deepEqual(b.status?.results, [{ name: 'answer', value: 'two' }]);
    assert.equal((b.status as { provenance?: { refSource?: { digest?: Record<string, string> } } }).provenance?.refSource?.digest?.['sha1'], second);
    const c = await run('from-sha', first);
    assert.deepEqual(c.status?.results, [{ name: 'answer', value: 'one' }]);
    // The branch moved back (not a new commit): resolved at the commit it now points to.
    await repo.setBranch('main', first);
    const d = await run('from-main-moved-back', 'main');
    assert.deepEqual(d.status?.results, [{ name: 'answer', value: 'one' }]);
    assert.equal((d.status as { provenance?: { refSource?: { digest?: Record<string, string> } } }).provenance?.refSource?.digest?.['sha1'], first);

    // A path that is not in the repository: the resolution fails, and Tekton says so at once.
    const missing = await run('missing-path', 'main', 'pipelines/nope.yaml');
    assert.equal(missing.status?.conditions?.[0]?.reason, 'CouldntGetPipeline');
    assert.match(missing.status?.conditions?.[0]?.message ?? '', /error opening file "pipelines\/nope\.yaml"/);
  });
});

describe("resolving through Tekton's ResolutionRequest (src/tekton/resolve.ts), real git resolver", () => {
  test('a file at a branch: its text and commit; a missing path and an unreachable repository: failed with the resolver\'s message', async () => {
    const repo = await env.tekton!.git.repository('resolve-me');
    const sha = await repo.commit({ 'pipelines/p.yaml': 'apiVersion: tekton.dev/v1\nkind: Pipeline\nmetadata:\n  name: p\n' }, 'p');
    const cluster = await fromKubeConfig('internal', internalAdmin);
    const client = cluster.resource<ResolutionRequest>(RESOLUTION_REQUEST);
    const resolve = async (name: string, url: string, path: string): Promise<Resolution> => {
      const created = await startResolution(client, resolutionRequest(NS, name, 'git', [{ name: 'url', value: url }, { name: 'revision', value: 'main' }, { name: 'pathInRepo', value: path }]));
      // Starting again (a retry) finds the same object.
      assert.equal((await startResolution(client, resolutionRequest(NS, name, 'git', []))).metadata?.uid, created.metadata?.uid);
      return waitFor(`resolution ${name}`, async () => {
        const o = outcomeOfResolution(await client.get(NS, name), new Date(), 30_000);
        return o.state === 'pending' ? undefined : o;
      }, 40_000, 200);
    };
    const ok = await resolve('rr-ok', repo.url, 'pipelines/p.yaml');
    assert.equal(ok.state, 'resolved');
    assert.ok(ok.state === 'resolved');
    assert.match(Buffer.from(ok.content).toString('utf8'), /^apiVersion: tekton.dev\/v1\nkind: Pipeline\n/);
    assert.deepEqual(ok.refSource, { uri: `git+${repo.url}`, digest: { sha1: sha }, entryPoint: 'pipelines/p.yaml' });

    const missing = await resolve('rr-missing', repo.url, 'pipelines/nope.yaml');
    assert.equal(missing.state, 'failed');
    assert.ok(missing.state === 'failed');
    assert.match(missing.message, /error opening file "pipelines\/nope\.yaml"/);

    const unreachable = await resolve('rr-unreachable', 'git://127.0.0.1:1/nothing.git', 'p.yaml');
    assert.equal(unreachable.state, 'failed');
    assert.ok(unreachable.state === 'failed');
    assert.equal(unreachable.reason, 'ResolutionFailed');
    assert.match(unreachable.message, /git clone error: .*unable to connect to 127\.0\.0\.1/s);
  });
});

describe('the Tekton platform of the harness', () => {
  test('its processes log into the environment directory and stop with it', async () => {
    const t = env.tekton!;
    assert.ok(t.startupMs > 0 && t.startupMs < 120_000, `startup ${t.startupMs} ms`);
    console.log(`# Tekton ${t.version} (controller, resolvers, webhook; pods SIMULATED) ready ${t.startupMs} ms after the control planes`);
    const procs = [t.controller, t.resolvers, t.webhook!, t.git.process];
    for (const p of procs) {
      assert.ok(p.running, `${p.name} running`);
      assert.ok(p.logPath.startsWith(env.dir), `${p.name} logs into ${env.dir}`);
    }
    // Each Tekton process runs as the ServiceAccount of the module's manifests, under its RBAC.
    assert.match(t.controller.args.join(' '), /-kubeconfig \S+kubeconfig-tektonController\.yaml/);
    assert.match(t.resolvers.args.join(' '), /-kubeconfig \S+kubeconfig-tektonResolvers\.yaml/);
    // Every port the harness gives Tekton is one it accepts (knative refuses metrics ports above 32767).
    for (const p of [t.controller, t.resolvers, t.webhook!]) {
      assert.doesNotMatch(readFileSync(p.logPath, 'utf8'), /could not be parsed as a port number/, p.name);
    }
    const pids = procs.map((p) => p.pid!);
    // A step in the middle of a long simulated run must not hold up the teardown.
    const r = await createRequest(requester, TENANT, 'long', { request: 'slow' });
    const pr = await theOnlyPipelineRun(r.metadata.uid!);
    await waitFor('the pod running', async () => (await podsOf(pr.metadata.name!)).find((p) => p.status?.phase === 'Running'), 30_000);
    await controller?.kill('SIGKILL');
    controller = undefined;
    const t0 = Date.now();
    await env.stop();
    assert.ok(Date.now() - t0 < 4000, `teardown took ${Date.now() - t0} ms`);
    const alive = (pid: number): boolean => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    assert.deepEqual(pids.filter(alive), [], 'no Tekton or git process outlives the environment');
  });
});
