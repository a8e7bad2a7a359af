/**
 * The approval gate on the real control planes, real RBAC and the real
 * ValidatingAdmissionPolicy of config/rbac/internal (the API server checks who
 * decides), with REAL Tekton running what is approved (pods simulated).
 * Approvals are made on the internal cluster by the identity "release-manager"
 * (group release-managers), which is granted the verb "approve" on the rule
 * "signing"; "bystander" may write approval status but not approve.
 */
import { phaseOf } from '../../src/api/conditions.js';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { startEnvironment, type Environment, applyObjects, grantRequester, installProject } from '../../src/localenv/index.js';
import type { InternalRequestApproval } from '../../src/api/types.js';
import {
  api, createRequest, getRequest, messageOf, NS, pipelineRunsFor, setRunConfig, simulatedStep, startController, testPipeline, waitFor, waitForPhase, runPlugin, type ControllerProcess,
} from './helpers.js';

const FINAL = ['Succeeded', 'Failed', 'Rejected'];
const APPROVALS = { group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalrequestapprovals' };
let env: Environment;
let internalAdmin: KubeConfig;
let requester: KubeConfig;
let controller: ControllerProcess;


/** Runs the kubectl plugin; resolves with its exit code and output whatever the code. */
const plugin = runPlugin;
const asApprover = (args: string[]) => plugin(args, env.internal.identities.approver!.kubeconfigPath);
const asBystander = (args: string[]) => plugin(args, env.internal.identities.bystander!.kubeconfigPath);

async function approvalOf(uid: string): Promise<InternalRequestApproval> {
  return waitFor(`the approval of ${uid}`, async () => {
    const l = (await api(internalAdmin).listNamespacedCustomObject({ ...APPROVALS, namespace: NS })) as { items: InternalRequestApproval[] };
    return l.items.find((a) => a.spec.request.uid === uid);
  });
}

/** Writes a decision straight into an approval's status as `kc`; resolves with the API server's refusal, or undefined. */
async function writeDecision(kc: KubeConfig, a: InternalRequestApproval, decision: Record<string, unknown>): Promise<string | undefined> {
  try {
    await api(kc).replaceNamespacedCustomObjectStatus({ ...APPROVALS, namespace: NS, name: a.metadata.name!, body: { ...a, status: { decision } } });
    return undefined;
  } catch (e) {
    const body = (e as { body?: unknown }).body;
    return typeof body === 'string' ? ((JSON.parse(body) as { message?: string }).message ?? body) : String(e);
  }
}

before(async () => {
  env = await startEnvironment({ tekton: true });
  await installProject(env);
  internalAdmin = env.internal.identities.admin.kubeConfig();
  requester = env.remote.identities.requester!.kubeConfig();
  for (const ns of ['managed-x', 'managed-y']) await grantRequester(env, ns);
  const rbac = 'rbac.authorization.k8s.io';
  await applyObjects(internalAdmin, [
    testPipeline('echo', { params: [{ name: 'text', default: '' }], results: [{ name: 'out', value: '$(tasks.t.results.out)' }], tasks: [{ name: 't', params: [{ name: 'text', value: '$(params.text)' }], taskSpec: { params: [{ name: 'text' }], results: [{ name: 'out' }], steps: [simulatedStep('s', { SIMULATED_RESULT_out: '$(params.text)' })] } }] }),
    // Both may see approvals and write their status; only release managers may approve under "signing".
    { apiVersion: `${rbac}/v1`, kind: 'RoleBinding', metadata: { name: 'approvers', namespace: NS }, roleRef: { apiGroup: rbac, kind: 'ClusterRole', name: 'internal-services-approver' }, subjects: [{ apiGroup: rbac, kind: 'Group', name: 'release-managers' }, { apiGroup: rbac, kind: 'User', name: 'bystander' }] },
    { apiVersion: `${rbac}/v1`, kind: 'Role', metadata: { name: 'approve-signing', namespace: NS }, rules: [{ apiGroups: ['appstudio.redhat.com'], resources: ['rules'], resourceNames: ['signing', 'quick'], verbs: ['approve'] }] },
    { apiVersion: `${rbac}/v1`, kind: 'RoleBinding', metadata: { name: 'approve-signing', namespace: NS }, roleRef: { apiGroup: rbac, kind: 'Role', name: 'approve-signing' }, subjects: [{ apiGroup: rbac, kind: 'Group', name: 'release-managers' }] },
  ] as never);
  await setRunConfig(internalAdmin, {
    rules: [
      { name: 'signing', namespaces: ['managed-x'], pipelines: ['echo'], requireApproval: true, approvalTimeout: '1h' },
      { name: 'quick', namespaces: ['managed-y'], pipelines: ['echo'], requireApproval: true, approvalTimeout: '4s' },
    ],
  });
  controller = await startController(env);
});

after(async () => {
  await controller?.kill('SIGKILL');
  await env?.stop();
});

describe('the approval gate (real RBAC and admission policy; real Tekton, pods simulated)', () => {
  test('a request under a rule that requires approval waits, saying who may approve and how; nothing runs', async () => {
    const r = await createRequest(requester, 'managed-x', 'waits', { request: 'echo', params: { text: 'w' } });
    const w = await waitForPhase(requester, 'managed-x', 'waits', ['AwaitingApproval'], 30_000);
    assert.equal(w.status?.conditions?.[0]?.status, 'Unknown');
    assert.match(messageOf(w), /verb "approve" on rules\.appstudio\.redhat\.com "signing" in namespace "internal-services" of the internal cluster\) runs "kubectl internalrequest approve managed-x\/waits"/);
    const a = await approvalOf(r.metadata.uid!);
    assert.equal(a.spec.rule, 'signing');
    assert.deepEqual(a.spec.params, { text: 'w' });
    assert.deepEqual(await pipelineRunsFor(internalAdmin, r.metadata.uid!), []);
    const listed = await plugin(['list', '--awaiting-approval', '-n', 'managed-x'], env.remote.identities.requester!.kubeconfigPath);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /waits\s+echo\s+AwaitingApproval/);
  });

  test('who may not approve is refused by the API server, not just ignored; the request keeps waiting', async () => {
    const r = await getRequest(requester, 'managed-x', 'waits');
    const a = await approvalOf(r.metadata.uid!);
    // a user without the verb, through the CLI
    const cli = await asBystander(['approve', 'managed-x/waits']);
    assert.notEqual(cli.code, 0);
    assert.match(cli.stderr, /bystander may not approve or deny requests under rule signing: that needs the verb approve on rules\.appstudio\.redhat\.com named signing in namespace internal-services/);
    // the same user typing an approver's name
    const forgedName = await writeDecision(env.internal.identities.bystander!.kubeConfig(), a, { result: 'Approved', by: 'release-manager', groups: ['release-managers', 'system:authenticated'] });
    assert.match(forgedName ?? 'accepted', /status\.decision\.by must be your own user name \(bystander\), not release-manager/);
    // an approver claiming other groups
    const forgedGroups = await writeDecision(env.internal.identities.approver!.kubeConfig(), a, { result: 'Approved', by: 'release-manager', groups: ['system:masters'] });
    assert.match(forgedGroups ?? 'accepted', /status\.decision\.groups must be your own groups/);
    // the requester cannot make or decide approvals at all: it has no access to the internal cluster, and on the remote one the approvals are not its to write
    const remoteTry = await plugin(['approve', 'managed-x/waits'], env.remote.identities.requester!.kubeconfigPath);
    assert.notEqual(remoteTry.code, 0);
    // an "approved" label written on the request by other means (here: the remote cluster's admin) means nothing
    await api(env.remote.identities.admin.kubeConfig()).patchNamespacedCustomObject({ group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalrequests', namespace: 'managed-x', name: 'waits', body: [{ op: 'add', path: '/metadata/labels', value: { approved: 'true' } }] });
    await new Promise((res) => setTimeout(res, 1500));
    assert.equal(phaseOf(await getRequest(requester, 'managed-x', 'waits')), 'AwaitingApproval');
    assert.deepEqual(await pipelineRunsFor(internalAdmin, r.metadata.uid!), []);
  });

  test('an approver approves: the run starts and completes; who, when and the message are on the request and in an Event', async () => {
    const ok = await asApprover(['approve', 'managed-x/waits', '-m', 'release 1.2, ticket REL-7']);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /internalrequest managed-x\/waits approved by release-manager \(rule signing\)/);
    const done = await waitForPhase(requester, 'managed-x', 'waits', FINAL, 60_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    assert.deepEqual(done.status?.results, { out: 'w' });
    assert.equal(done.status?.approval?.result, 'Approved');
    assert.equal(done.status?.approval?.by, 'release-manager');
    assert.equal(done.status?.approval?.message, 'release 1.2, ticket REL-7');
    assert.match(done.status?.approval?.at ?? '', /^\d{4}-\d\d-\d\dT/);
    const events = await env.remote.identities.admin.kubeConfig().makeApiClient(CoreV1Api).listNamespacedEvent({ namespace: 'managed-x' });
    assert.ok(events.items.some((e) => e.involvedObject.name === 'waits' && /approved by "release-manager" under rule "signing": release 1\.2, ticket REL-7/.test(e.message ?? '')), 'an Event names the approver');
  });

  test('denied: Rejected with the approver\'s message; expired: Rejected after approvalTimeout', async () => {
    const r = await createRequest(requester, 'managed-x', 'to-deny', { request: 'echo' });
    await createRequest(requester, 'managed-y', 'to-expire', { request: 'echo' });
    await approvalOf(r.metadata.uid!);
    const no = await asApprover(['deny', 'to-deny', '-n', 'managed-x', '-m', 'not during the freeze']);
    assert.equal(no.code, 0, no.stderr);
    const denied = await waitForPhase(requester, 'managed-x', 'to-deny', FINAL, 30_000);
    assert.equal(denied.status?.conditions?.[0]?.reason, 'Rejected');
    assert.match(messageOf(denied), /^denied by "release-manager" under rules\[0\] \("signing"\) of InternalServicesConfig internal-services\/config: not during the freeze$/);
    assert.equal(denied.status?.approval?.result, 'Denied');
    const expired = await waitForPhase(requester, 'managed-y', 'to-expire', FINAL, 30_000);
    assert.equal(expired.status?.conditions?.[0]?.reason, 'Rejected');
    assert.match(messageOf(expired), /^not approved within 4s \(by .*\), as rules\[1\] \("quick"\)/);
    assert.equal(expired.status?.approval?.result, 'Expired');
  });

  test('a decision written while the admission policy is not in force is not trusted: nothing runs', async () => {
    const r = await createRequest(requester, 'managed-x', 'forged', { request: 'echo' });
    const a = await approvalOf(r.metadata.uid!);
    const admission = api(internalAdmin);
    const binding = await admission.getClusterCustomObject({ group: 'admissionregistration.k8s.io', version: 'v1', plural: 'validatingadmissionpolicybindings', name: 'internal-services-approvals' });
    await admission.deleteClusterCustomObject({ group: 'admissionregistration.k8s.io', version: 'v1', plural: 'validatingadmissionpolicybindings', name: 'internal-services-approvals' });
    try {
      // Without the policy, the bystander can type the approver's name and groups.
      const written = await waitFor('the forged decision to be accepted by the API server (policy gone)', async () =>
        (await writeDecision(env.internal.identities.bystander!.kubeConfig(), a, { result: 'Approved', by: 'release-manager', groups: ['release-managers', 'system:authenticated'] })) === undefined, 20_000);
      assert.ok(written);
      const w = await waitFor('the controller to refuse it', async () => {
        const x = await getRequest(requester, 'managed-x', 'forged');
        return /not accepted: the admission policy that checks approvers/.test(messageOf(x)) ? x : undefined;
      }, 30_000);
      assert.equal(phaseOf(w), 'AwaitingApproval');
      assert.deepEqual(await pipelineRunsFor(internalAdmin, r.metadata.uid!), []);
    } finally {
      const { metadata, ...rest } = binding as { metadata: { name: string } };
      await admission.createClusterCustomObject({ group: 'admissionregistration.k8s.io', version: 'v1', plural: 'validatingadmissionpolicybindings', body: { ...rest, metadata: { name: metadata.name } } });
    }
  });

  test('an approval made while the controller is down is acted on after its restart', async () => {
    const r = await createRequest(requester, 'managed-x', 'across-restart', { request: 'echo', params: { text: 'later' } });
    await waitForPhase(requester, 'managed-x', 'across-restart', ['AwaitingApproval'], 30_000);
    await controller.kill('SIGKILL');
    const ok = await asApprover(['approve', 'managed-x/across-restart']);
    assert.equal(ok.code, 0, ok.stderr);
    controller = await startController(env);
    const done = await waitForPhase(requester, 'managed-x', 'across-restart', FINAL, 60_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    assert.equal(done.status?.approval?.by, 'release-manager');
    assert.equal((await pipelineRunsFor(internalAdmin, r.metadata.uid!)).length, 0, 'the PipelineRun is removed once done');
  });
});
