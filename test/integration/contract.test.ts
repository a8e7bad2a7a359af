/**
 * The requester's contract (issue 21), on the real stack: two control planes,
 * REAL Tekton (controller, git resolver, webhook; only pods are simulated),
 * the git daemon, the controller as its CLI process.
 *
 * Requests of both shapes (spec.request, spec.pipeline by name and by git)
 * are driven through every in-progress phase — no configuration yet, git
 * resolution with nested Task references, capacity full then freed, an
 * approval then approved, an idempotent follower — and to each outcome. A
 * watch on the remote cluster records EVERY status the requests take (not a
 * poll). At each one, the three readings of src/api/readers.ts (the release
 * tooling's loop, the Go API, kubectl wait / kstatus) must agree, conditions[0]
 * must be the Succeeded condition with a reason of the contract, and a
 * finished request must never become unfinished again.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { CustomObjectsApi, Watch, type KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { startEnvironment, type Environment, applyObjects, grantRequester, installProject, type GitRepository } from '../../src/localenv/index.js';
import type { InternalRequest, InternalRequestSpec } from '../../src/api/types.js';
import { Phase, PHASES, phaseOf } from '../../src/api/conditions.js';
import { readAll, requesterLoop } from '../../src/api/readers.js';
import { createRequest, getRequest, NS, onlyPipelineRunOf, releaseRun, setRunConfig, setRunConfigAndWait, simulatedStep, startController, testPipeline, waitFor, waitForPhase, runPlugin, type ControllerProcess } from './helpers.js';

const execFileP = promisify(execFile);
const FINAL = ['Succeeded', 'Failed', 'Rejected'];
const CONTRACT_REASONS = ['Running', 'Succeeded', 'Failed', 'Rejected'];
const KEY = 'internal-services.appstudio.redhat.com/idempotency-key';
const TENANT = 'release-team';
const MANAGED = 'managed-team';

let env: Environment;
let internalAdmin: KubeConfig;
let requester: KubeConfig;
let controller: ControllerProcess;
let catalog: GitRepository;

/** Every version of every request the watch delivered, in order, by namespace/name. */
const seen = new Map<string, InternalRequest[]>();
let watch: AbortController | undefined;
let watchEnded: string | undefined;

const gitRef = (url: string, revision: string, pathInRepo: string) => ({ resolver: 'git', params: [{ name: 'url', value: url }, { name: 'revision', value: revision }, { name: 'pathInRepo', value: pathInRepo }] });
const fromTaskParams = (path: string) => gitRef('$(params.taskGitUrl)', '$(params.taskGitRevision)', path);
const yamlOf = (kind: string, name: string, spec: Record<string, unknown>) => stringify({ apiVersion: 'tekton.dev/v1', kind, metadata: { name }, spec });

/** Starts a watch of all InternalRequests on the remote cluster that records every status; resumes from the last resourceVersion if the connection ends. */
async function recordEveryStatus(kc: KubeConfig): Promise<void> {
  let rv: string | undefined;
  const start = async (): Promise<void> => {
    watch = await new Watch(kc).watch(
      '/apis/appstudio.redhat.com/v1alpha1/internalrequests',
      rv ? { resourceVersion: rv, allowWatchBookmarks: false } : {},
      (type, obj: InternalRequest) => {
        if (type !== 'ADDED' && type !== 'MODIFIED') return;
        rv = obj.metadata.resourceVersion;
        const key = `${obj.metadata.namespace}/${obj.metadata.name}`;
        const list = seen.get(key) ?? [];
        list.push(obj);
        seen.set(key, list);
      },
      (err) => {
        if (watch?.signal.aborted) return;
        // Resume where it stopped: the apiserver replays what came after rv.
        if (err) watchEnded = String(err);
        void start();
      },
    );
  };
  await start();
}

const plugin = runPlugin;

/** kubectl wait as a requester would run it, with the kubectl the harness built. */
function kubectlWait(ns: string, name: string, condition: string, timeout = '120s'): Promise<{ code: number; out: string }> {
  const kubectl = join(env.assets.binDir, 'kubectl');
  return execFileP(kubectl, ['--kubeconfig', env.remote.identities.requester!.kubeconfigPath, '-n', ns, 'wait', `--for=condition=${condition}`, `internalrequest/${name}`, `--timeout=${timeout}`]).then(
    (r) => ({ code: 0, out: r.stdout + r.stderr }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? -1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` }),
  );
}

const phasesOf = (key: string): string[] => {
  const out: string[] = [];
  for (const r of seen.get(key) ?? []) {
    const p = phaseOf(r) ?? '(none)';
    if (out[out.length - 1] !== p) out.push(p);
  }
  return out;
};

before(async () => {
  env = await startEnvironment({ tekton: true });
  await installProject(env);
  internalAdmin = env.internal.identities.admin.kubeConfig();
  requester = env.remote.identities.requester!.kubeConfig();
  for (const ns of [TENANT, MANAGED]) await grantRequester(env, ns);
  catalog = await env.tekton!.git.repository('catalog');
  const task = (name: string, vars: Record<string, string>, results: string[] = []) =>
    yamlOf('Task', name, { params: [{ name: 'image', default: '' }], results: results.map((r) => ({ name: r })), steps: [simulatedStep(name, vars)] });
  await catalog.commit(
    {
      // Today's catalog shape: the Pipeline's Tasks come from git at the request's taskGitUrl/taskGitRevision.
      'pipelines/internal/sign/sign.yaml': yamlOf('Pipeline', 'sign', {
        params: [{ name: 'image' }, { name: 'taskGitUrl' }, { name: 'taskGitRevision' }],
        results: [{ name: 'signature', value: '$(tasks.sign.results.signature)' }],
        tasks: [{ name: 'sign', params: [{ name: 'image', value: '$(params.image)' }], taskRef: fromTaskParams('tasks/internal/sign/sign.yaml') }],
        finally: [{ name: 'notify', taskRef: fromTaskParams('tasks/internal/notify/notify.yaml') }],
      }),
      'tasks/internal/sign/sign.yaml': task('sign', { SIMULATED_DURATION: 'gate', SIMULATED_RESULT_signature: 'sig:$(params.image)' }, ['signature']),
      'tasks/internal/notify/notify.yaml': task('notify', {}),
    },
    'the catalog',
  );
  const rbac = 'rbac.authorization.k8s.io';
  await applyObjects(internalAdmin, [
    testPipeline('gated', { params: [{ name: 'text', default: '' }], results: [{ name: 'out', value: '$(tasks.t.results.out)' }], tasks: [{ name: 't', params: [{ name: 'text', value: '$(params.text)' }], taskSpec: { params: [{ name: 'text' }], results: [{ name: 'out' }], steps: [simulatedStep('s', { SIMULATED_DURATION: 'gate', SIMULATED_RESULT_out: 'out:$(params.text)' })] } }] }),
    testPipeline('fails', { tasks: [{ name: 't', taskSpec: { steps: [simulatedStep('s', { SIMULATED_DURATION: 'gate', SIMULATED_FAIL: 'true' })] } }] }),
    { apiVersion: `${rbac}/v1`, kind: 'RoleBinding', metadata: { name: 'approvers', namespace: NS }, roleRef: { apiGroup: rbac, kind: 'ClusterRole', name: 'internal-services-approver' }, subjects: [{ apiGroup: rbac, kind: 'Group', name: 'release-managers' }] },
    { apiVersion: `${rbac}/v1`, kind: 'Role', metadata: { name: 'approve-managed', namespace: NS }, rules: [{ apiGroups: ['appstudio.redhat.com'], resources: ['rules'], resourceNames: ['managed'], verbs: ['approve'] }] },
    { apiVersion: `${rbac}/v1`, kind: 'RoleBinding', metadata: { name: 'approve-managed', namespace: NS }, roleRef: { apiGroup: rbac, kind: 'Role', name: 'approve-managed' }, subjects: [{ apiGroup: rbac, kind: 'Group', name: 'release-managers' }] },
  ] as never);
  await recordEveryStatus(env.remote.identities.admin.kubeConfig());
  // No InternalServicesConfig yet: requests wait for it.
  controller = await startController(env);
});

after(async () => {
  watch?.abort();
  await controller?.kill('SIGKILL');
  await env?.stop();
});

describe("the requester's contract: conditions[0] (real Tekton, pods simulated)", () => {
  const gitSpec = (): InternalRequestSpec => ({
    pipeline: { pipelineRef: gitRef(catalog.url, 'main', 'pipelines/internal/sign/sign.yaml') },
    params: { image: 'quay.io/org/app@sha256:abc', taskGitUrl: catalog.url, taskGitRevision: 'main' },
  });
  const names = {
    installed: `${TENANT}/installed`, // spec.request, waits for the config, runs first
    git: `${TENANT}/git`, // spec.pipeline by git: waits for the config, resolves, queues
    follower: `${TENANT}/follower`, // same idempotency key and spec as installed: follows it
    approval: `${MANAGED}/approval`, // spec.pipeline by name under a rule that requires approval, then queues
    fails: `${TENANT}/fails`, // runs and fails
    refused: `${TENANT}/refused`, // a git source the policy does not allow: Rejected
  };

  test('every phase, both shapes, each outcome; every watched status read alike by the three requesters', async (t) => {
    // 1. No configuration: both shapes wait, shown as Running to requesters.
    const installed = await createRequest(requester, TENANT, 'installed', { request: 'gated', params: { text: 'a' } }, { [KEY]: 'release-1' });
    await createRequest(requester, TENANT, 'git', gitSpec());
    await waitForPhase(requester, TENANT, 'installed', ['WaitingForConfig'], 30_000);
    const git0 = await waitForPhase(requester, TENANT, 'git', ['WaitingForConfig'], 30_000);
    assert.equal(requesterLoop(git0), 'wait');

    // 2. The configuration arrives: one slot; the git catalog allowed; approval for the managed namespace.
    await setRunConfigAndWait(internalAdmin, controller, {
      allowList: [TENANT],
      sources: { git: [{ urls: [catalog.url], revisions: ['main'], commits: { reachable: true }, paths: ['pipelines/**', 'tasks/**'] }], resolutionTimeout: '30s' },
      capacity: { maxRunning: 1 },
      rules: [{ name: 'managed', namespaces: [MANAGED], pipelines: ['gated'], requireApproval: true, approvalTimeout: '1h' }],
    });
    // installed takes the slot; git resolves its Pipeline and nested Tasks, then queues behind it.
    const installedRun = await onlyPipelineRunOf(internalAdmin, installed.metadata.uid!);
    await waitForPhase(requester, TENANT, 'installed', ['Running'], 30_000);
    await waitForPhase(requester, TENANT, 'git', ['Queued'], 60_000);

    // 3. The same key and spec again: follows the first.
    await createRequest(requester, TENANT, 'follower', { request: 'gated', params: { text: 'a' } }, { [KEY]: 'release-1' });
    await waitForPhase(requester, TENANT, 'follower', ['Following'], 30_000);

    // 4. Approval: waits for a decision, then for a slot.
    await createRequest(requester, MANAGED, 'approval', { pipeline: { pipelineRef: { name: 'gated' } }, params: { text: 'm' } });
    await waitForPhase(requester, MANAGED, 'approval', ['AwaitingApproval'], 30_000);
    const listed = await plugin(['list', '--phase', 'AwaitingApproval', '-n', MANAGED], env.remote.identities.requester!.kubeconfigPath);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /approval\s+gated\s+AwaitingApproval/);
    const approved = await plugin(['approve', `${MANAGED}/approval`, '-m', 'contract test'], env.internal.identities.approver!.kubeconfigPath);
    assert.equal(approved.code, 0, approved.stderr);
    await waitForPhase(requester, MANAGED, 'approval', ['Queued'], 30_000);

    // 5. A run that fails, and a source the policy refuses.
    await createRequest(requester, TENANT, 'fails', { request: 'fails' });
    await createRequest(requester, TENANT, 'refused', { pipeline: { pipelineRef: gitRef('git://127.0.0.1:1/elsewhere.git', 'main', 'pipelines/x.yaml') } });
    await waitForPhase(requester, TENANT, 'refused', FINAL, 30_000);

    // A requester's own habits, as real processes: kubectl wait on the condition.
    const waitSucceeded = kubectlWait(TENANT, 'installed', 'Succeeded');
    const waitFailed = kubectlWait(TENANT, 'fails', 'Succeeded=False', '180s');

    // 6. Free the slot, run by run, until everything has finished.
    await releaseRun(env, installedRun.metadata.name!);
    const order: string[] = [];
    for (let i = 0; i < 3; i++) {
      const running = await waitFor('the next request to run', async () => {
        for (const key of [names.git, names.approval, names.fails]) {
          if (order.includes(key)) continue;
          const [ns, name] = key.split('/') as [string, string];
          const r = await getRequest(requester, ns, name);
          if (phaseOf(r) === 'Running') return { key, r };
        }
        return undefined;
      }, 60_000);
      order.push(running.key);
      const [ns, name] = running.key.split('/') as [string, string];
      await releaseRun(env, running.r.status!.pipelineRun!.split('/')[1]!, 30_000);
      await waitForPhase(requester, ns, name, FINAL, 60_000);
    }
    for (const key of Object.values(names)) {
      const [ns, name] = key.split('/') as [string, string];
      await waitForPhase(requester, ns, name, FINAL, 60_000);
    }
    assert.deepEqual((await waitSucceeded).code, 0, `kubectl wait --for=condition=Succeeded: ${(await waitSucceeded).out}`);
    assert.deepEqual((await waitFailed).code, 0, `kubectl wait --for=condition=Succeeded=False: ${(await waitFailed).out}`);
    // Let the watch deliver the last writes.
    await new Promise((r) => setTimeout(r, 1000));

    // What each went through, as the watch saw it.
    const expectPath: Record<string, string[]> = {
      [names.installed]: ['WaitingForConfig', 'Running', 'Succeeded'],
      [names.git]: ['WaitingForConfig', 'Resolving', 'Queued', 'Running', 'Succeeded'],
      [names.follower]: ['Following', 'Succeeded'],
      [names.approval]: ['AwaitingApproval', 'Queued', 'Running', 'Succeeded'],
      [names.fails]: ['Queued', 'Running', 'Failed'],
      [names.refused]: ['Rejected'],
    };
    for (const [key, want] of Object.entries(expectPath)) {
      const got = phasesOf(key).filter((p) => p !== '(none)');
      let at = 0;
      for (const p of got) if (p === want[at]) at++;
      assert.equal(at, want.length, `${key}: phases ${JSON.stringify(got)} should pass through ${JSON.stringify(want)}, in that order`);
    }
    const allPhases = new Set(Object.keys(expectPath).flatMap(phasesOf));
    // WaitingForWorkspace is kcp's alone (a workspace whose path cannot be read): shown in kcp-late-binding.test.ts.
    for (const p of PHASES) if (p !== Phase.WaitingForWorkspace) assert.ok(allPhases.has(p), `phase ${p} was shown at least once`);

    // The contract at every status the watch delivered.
    let statuses = 0;
    for (const [key, versions] of seen) {
      let finishedAs: string | undefined;
      for (const r of versions) {
        statuses++;
        const where = `${key} at resourceVersion ${r.metadata.resourceVersion} (${JSON.stringify(r.status?.conditions ?? [])})`;
        const reading = readAll(r);
        assert.ok(reading.agree, `${where}: the requesters disagree: ${JSON.stringify(reading)}`);
        const conditions = r.status?.conditions ?? [];
        if (conditions.length) {
          assert.equal(conditions[0]!.type, 'Succeeded', `${where}: conditions[0] is the Succeeded condition`);
          assert.ok(CONTRACT_REASONS.includes(conditions[0]!.reason), `${where}: conditions[0].reason is one of the contract's`);
          if (conditions[0]!.status === 'Unknown') assert.equal(conditions[0]!.reason, 'Running', `${where}: unfinished is Running`);
          if (conditions.length > 1) assert.equal(conditions[1]!.type, 'Progressing', `${where}: Progressing is second`);
        }
        if (finishedAs !== undefined) assert.equal(reading.requester, finishedAs, `${where}: a finished request never changes its outcome or becomes unfinished`);
        else if (reading.requester !== 'wait') finishedAs = reading.requester;
      }
    }
    t.diagnostic(`the watch saw ${statuses} statuses of ${seen.size} requests; all three readers agreed at each`);
    for (const key of Object.keys(expectPath)) t.diagnostic(`${key}: ${phasesOf(key).join(' -> ')}`);
    const phasesRequired = Object.values(expectPath).flat().length;
    assert.ok(statuses >= phasesRequired, `the watch saw ${statuses} statuses, fewer than the ${phasesRequired} phases the requests passed through`);
    assert.equal(watchEnded, undefined, 'the watch was not interrupted (or resumed without loss)');
    assert.equal(phaseOf(await getRequest(requester, TENANT, 'refused')), 'Rejected');
    assert.equal(phaseOf(await getRequest(requester, TENANT, 'fails')), 'Failed');
  });

  test("a request in an earlier version's shape (an in-progress reason in conditions[0]) is rewritten by the next reconcile", async () => {
    // Capacity full again so the request stays unfinished: the earlier version would have shown it as Queued in conditions[0].
    const hold = await createRequest(requester, TENANT, 'holder', { request: 'gated', params: { text: 'h' } });
    const holdRun = await onlyPipelineRunOf(internalAdmin, hold.metadata.uid!);
    await createRequest(requester, TENANT, 'legacy', { request: 'gated', params: { text: 'l' } });
    await waitForPhase(requester, TENANT, 'legacy', ['Queued'], 30_000);
    // Stop the controller, write the earlier version's shape as it would have, start it again.
    await controller.kill('SIGKILL');
    const remoteAdmin = env.remote.identities.admin.kubeConfig();
    const queued = await getRequest(remoteAdmin, TENANT, 'legacy');
    const legacy = { ...queued, status: { ...queued.status, conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Queued', message: 'waiting for a free slot (written by an earlier version)', lastTransitionTime: queued.status!.conditions![0]!.lastTransitionTime }] } } as InternalRequest;
    await remoteAdmin.makeApiClient(CustomObjectsApi).replaceNamespacedCustomObjectStatus({ group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalrequests', namespace: TENANT, name: 'legacy', body: legacy });
    assert.equal(requesterLoop(await getRequest(requester, TENANT, 'legacy')), 'failed', "the earlier shape is what broke requesters");
    controller = await startController(env);
    const fixed = await waitFor('the request rewritten to the contract', async () => {
      const r = await getRequest(requester, TENANT, 'legacy');
      const [s, p] = r.status?.conditions ?? [];
      return s?.reason === 'Running' && p?.type === 'Progressing' && p.reason === 'Queued' ? r : undefined;
    }, 30_000);
    assert.equal(requesterLoop(fixed), 'wait');
    await releaseRun(env, holdRun.metadata.name!);
    await waitForPhase(requester, TENANT, 'holder', FINAL, 60_000);
    const next = await waitForPhase(requester, TENANT, 'legacy', ['Running'], 60_000);
    await releaseRun(env, next.status!.pipelineRun!.split('/')[1]!);
    assert.equal(phaseOf(await waitForPhase(requester, TENANT, 'legacy', FINAL, 60_000)), 'Succeeded');
    await setRunConfig(internalAdmin, { allowList: [TENANT] });
  });
});
