/**
 * The requester's CLI with --kind, as real processes against real control
 * planes: the sample SigningRequest kind (config/samples/kinds/signing/remote:
 * its generated CRD and RBAC) installed on the remote apiserver, found through
 * API discovery under each of its names. No controller runs: the status a
 * controller would write is written here, as the remote admin, through the
 * status subresource, so what is checked is the CLI alone (create, wait, get,
 * list, cancel), plus approve/deny --kind against the internal apiserver with
 * its real RBAC and approval admission policy, on approvals written here too.
 * The controller's side of typed kinds is tested in request-kinds.test.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { repoRoot } from '../../src/api/crd-render.js';
import { applyManifests, applyObjects, grantRequester, installProject, loadManifests, startEnvironment, type Environment } from '../../src/localenv/index.js';
import type { InternalRequestApproval, InternalRequestStatus } from '../../src/api/types.js';
import { api, NS } from './helpers.js';
import { expectCode, startCli, type Run, type Running } from './cli-run.js';

const SR = { group: 'signing.example.com', version: 'v1alpha1', plural: 'signingrequests' };
const APPROVALS = { group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalrequestapprovals' };
const SAMPLE = join(repoRoot(), 'config', 'samples', 'kinds', 'signing');
const NAMESPACE = 'sig-a';
const IMAGE = `quay.io/org/app@sha256:${'a'.repeat(64)}`;
const rbac = 'rbac.authorization.k8s.io';

let env: Environment | undefined;
let tmp: string;
let remoteAdmin: KubeConfig;
let internalAdmin: KubeConfig;


/** `internal-services request ARGS` as `kubeconfig`'s user (default: the remote requester). */
function start(args: string[], kubeconfig = env!.remote.identities.requester!.kubeconfigPath, stdin?: string): Running {
  return startCli(['request', ...args], { env: { HOME: tmp, KUBECONFIG: kubeconfig }, killAfterMs: 60_000, ...(stdin !== undefined ? { stdin } : {}) });
}
const request = (args: string[], kubeconfig?: string, stdin?: string): Promise<Run> => start(args, kubeconfig, stdin).done;


interface SigningRequest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; uid: string; labels?: Record<string, string>; resourceVersion?: string };
  spec: Record<string, unknown>;
  status?: InternalRequestStatus;
}

const getSigning = async (name: string): Promise<SigningRequest> => (await api(remoteAdmin).getNamespacedCustomObject({ ...SR, namespace: NAMESPACE, name })) as SigningRequest;

/** Writes the status a controller would, as the remote admin, through the status subresource. */
async function writeStatus(name: string, status: InternalRequestStatus): Promise<void> {
  const current = await getSigning(name);
  await api(remoteAdmin).replaceNamespacedCustomObjectStatus({ ...SR, namespace: NAMESPACE, name, body: { ...current, status } });
}

const at = '2026-01-01T00:00:00Z';
const running = (pr: string): InternalRequestStatus => ({
  conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running', message: `PipelineRun ${pr} is running`, lastTransitionTime: at }],
  pipelineRun: pr,
});
const finished = (pr: string, ok: boolean, results?: Record<string, string>): InternalRequestStatus => ({
  conditions: [{ type: 'Succeeded', status: ok ? 'True' : 'False', reason: ok ? 'Succeeded' : 'Failed', message: `PipelineRun ${pr} ${ok ? 'succeeded' : 'failed'}`, lastTransitionTime: at }],
  pipelineRun: pr,
  ...(results ? { results } : {}),
});

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'cli-kinds-test-'));
  env = await startEnvironment();
  await installProject(env);
  remoteAdmin = env.remote.identities.admin.kubeConfig();
  internalAdmin = env.internal.identities.admin.kubeConfig();
  await grantRequester(env, NAMESPACE);
  // The kind's remote side, as `internal-services kinds render --rbac` prints it, and its requester role bound in the namespace.
  await applyManifests(remoteAdmin, [...loadManifests(join(SAMPLE, 'remote', 'crd.yaml')), ...loadManifests(join(SAMPLE, 'remote', 'rbac.yaml'))]);
  const requesterRole = 'internal-services-signingrequests.signing.example.com-requester';
  await applyObjects(remoteAdmin, [
    { apiVersion: `${rbac}/v1`, kind: 'RoleBinding', metadata: { name: 'signing-requester', namespace: NAMESPACE }, roleRef: { apiGroup: rbac, kind: 'ClusterRole', name: requesterRole }, subjects: [{ apiGroup: rbac, kind: 'User', name: env.remote.identities.requester!.username }] },
  ] as never);
  // Approvers on the internal side, as approval.test.ts grants them: release-managers may approve under rule "signing".
  await applyObjects(internalAdmin, [
    { apiVersion: `${rbac}/v1`, kind: 'RoleBinding', metadata: { name: 'approvers', namespace: NS }, roleRef: { apiGroup: rbac, kind: 'ClusterRole', name: 'internal-services-approver' }, subjects: [{ apiGroup: rbac, kind: 'Group', name: 'release-managers' }] },
    { apiVersion: `${rbac}/v1`, kind: 'Role', metadata: { name: 'approve-signing', namespace: NS }, rules: [{ apiGroups: ['appstudio.redhat.com'], resources: ['rules'], resourceNames: ['signing'], verbs: ['approve'] }] },
    { apiVersion: `${rbac}/v1`, kind: 'RoleBinding', metadata: { name: 'approve-signing', namespace: NS }, roleRef: { apiGroup: rbac, kind: 'Role', name: 'approve-signing' }, subjects: [{ apiGroup: rbac, kind: 'Group', name: 'release-managers' }] },
  ] as never);
});

after(async () => {
  await env?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('create, wait, get, list, cancel --kind (the sample SigningRequest on a real apiserver; statuses written by hand)', () => {
  test('create --kind PLURAL.GROUP --field …: the object is the typed request asked for; --no-wait prints its name', async () => {
    const r = await request([
      'create', '--kind', 'signingrequests.signing.example.com', '-n', NAMESPACE, '--no-wait',
      '--field', `image=${IMAGE}`, '--field', 'tags=["v1","latest"]', '--field', 'signer={"keyRef":"k1","identity":"release-bot"}',
      '-l', 'release=r1', '--idempotency-key', 'run-1.sign',
    ]);
    expectCode(r, 0, 'create --kind');
    assert.match(r.stdout, /^signingrequest-[a-z0-9]{5}\n$/);
    const name = r.stdout.trim();
    assert.equal(r.stderr, `signingrequest ${NAMESPACE}/${name} created\n`);
    const stored = await getSigning(name);
    assert.equal(stored.apiVersion, 'signing.example.com/v1alpha1');
    assert.equal(stored.kind, 'SigningRequest');
    assert.deepEqual(stored.metadata.labels, { release: 'r1', 'internal-services.appstudio.redhat.com/idempotency-key': 'run-1.sign' });
    assert.deepEqual(stored.spec, { image: IMAGE, tags: ['v1', 'latest'], signer: { keyRef: 'k1', identity: 'release-bot' } });
  });

  test('create --kind (the short name) waits; progress names the kind; the status written through the subresource ends it with the results', async () => {
    const specFile = join(tmp, 'spec.yaml');
    writeFileSync(specFile, `image: ${IMAGE}\nsigner: {keyRef: k2, identity: me}\nnote: from the file\n`);
    const c = start(['create', '--kind', 'sigreq', '--spec-file', specFile, '--field', 'note=from the flag', '--name', 'waited', '-l', 'release=r1', '-n', NAMESPACE]);
    await c.waitForStderr(/signingrequest sig-a\/waited created\n/);
    assert.deepEqual((await getSigning('waited')).spec, { image: IMAGE, signer: { keyRef: 'k2', identity: 'me' }, note: 'from the flag' });
    await writeStatus('waited', running('internal-services/ir-1'));
    await c.waitForStderr(/signingrequest sig-a\/waited: Running, PipelineRun internal-services\/ir-1/);
    await writeStatus('waited', finished('internal-services/ir-1', true, { signature: 'c2ln', 'signed-by': 'me with k2' }));
    const r = await c.done;
    expectCode(r, 0, 'create --kind sigreq (waiting)');
    assert.equal(r.stdout, '{\n  "signature": "c2ln",\n  "signed-by": "me with k2"\n}\n');
    assert.deepEqual(r.stderr.trimEnd().split('\n'), [
      'signingrequest sig-a/waited created',
      'signingrequest sig-a/waited: Running, PipelineRun internal-services/ir-1 (PipelineRun internal-services/ir-1 is running)',
      'signingrequest sig-a/waited: Succeeded: PipelineRun internal-services/ir-1 succeeded',
    ]);
  });

  test('wait --kind (the Kind): returns when the final status is written; Failed exits 21; the spec from stdin', async () => {
    const c = await request(['create', '--kind', 'SigningRequest', '--spec-file', '-', '--name', 'to-fail', '--no-wait', '-n', NAMESPACE], undefined, JSON.stringify({ image: IMAGE, signer: { keyRef: 'k', identity: 'i' } }));
    expectCode(c, 0, 'create --spec-file -');
    const w = start(['wait', 'to-fail', '--kind', 'SigningRequest', '-n', NAMESPACE]);
    await w.waitForStderr(/signingrequest sig-a\/to-fail: waiting for the controller to pick it up/);
    await writeStatus('to-fail', finished('internal-services/ir-2', false));
    const r = await w.done;
    expectCode(r, 21, 'wait on a Failed SigningRequest');
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /signingrequest sig-a\/to-fail: Failed: PipelineRun internal-services\/ir-2 failed\n$/);
    // already finished: the same outcome at once, with -o value=KEY on a succeeded one
    const again = await request(['wait', 'waited', '--kind', 'signingrequests.v1alpha1.signing.example.com', '-n', NAMESPACE, '-o', 'value=signed-by']);
    expectCode(again, 0, 'wait on a finished SigningRequest');
    assert.equal(again.stdout, 'me with k2\n');
  });

  test('get and list --kind: the kind\'s requests only, without the PIPELINE column; -o json is the object; InternalRequests are apart', async () => {
    // an InternalRequest of the same name as a SigningRequest: each verb sees its own kind
    expectCode(await request(['create', 'echo', 'image=x', '--name', 'waited', '--no-wait', '-n', NAMESPACE]), 0, 'create an InternalRequest');
    const table = await request(['list', '--kind', 'sigreq', '-l', 'release=r1', '-n', NAMESPACE]);
    expectCode(table, 0, 'list --kind');
    const rows = table.stdout.trimEnd().split('\n');
    assert.match(rows[0]!, /^NAME +STATUS +AGE +MESSAGE$/);
    const [first] = (await listSigning('release=r1')).filter((n) => n !== 'waited');
    assert.match(first ?? '', /^signingrequest-/);
    assert.deepEqual(rows.slice(1).map((l) => l.split(/ +/).slice(0, 2)), [[first, 'Pending'], ['waited', 'Succeeded']]);
    const failed = await request(['list', '--kind', 'SigningRequest', '--phase', 'Failed', '-n', NAMESPACE]);
    expectCode(failed, 0, 'list --phase Failed');
    assert.deepEqual(failed.stdout.trimEnd().split('\n').slice(1).map((l) => l.split(/ +/)[0]), ['to-fail']);
    const got = await request(['get', 'waited', '--kind', 'signingrequests.signing.example.com', '-n', NAMESPACE, '-o', 'json']);
    expectCode(got, 0, 'get -o json');
    const obj = JSON.parse(got.stdout) as SigningRequest;
    assert.equal(obj.kind, 'SigningRequest');
    assert.deepEqual(obj.status?.results, { signature: 'c2ln', 'signed-by': 'me with k2' });
    const ir = await request(['get', 'waited', '-n', NAMESPACE]);
    expectCode(ir, 0, 'get (InternalRequest)');
    assert.match(ir.stdout, /^NAME +PIPELINE +STATUS +AGE +MESSAGE\nwaited +echo +Pending /);
    const none = await request(['get', 'nope', '--kind', 'sigreq', '-n', NAMESPACE]);
    expectCode(none, 2, 'get a missing SigningRequest');
    assert.match(none.stderr, /^error: no SigningRequest "nope" in namespace "sig-a" \[CLI_REQUEST_NOT_FOUND\]\n$/);
    const empty = await request(['list', '--kind', 'sigreq', '-n', 'default'], env!.remote.identities.admin.kubeconfigPath);
    expectCode(empty, 0, 'list in an empty namespace');
    assert.equal(empty.stderr, 'No SigningRequests found in namespace "default".\n');
  });

  test('cancel --kind deletes the request of that kind only', async () => {
    const r = await request(['cancel', 'waited', '--kind', 'sigreq', '-n', NAMESPACE]);
    expectCode(r, 0, 'cancel --kind');
    assert.equal(r.stdout, 'signingrequest sig-a/waited cancelled (deleted)\n');
    await assert.rejects(getSigning('waited'), /HTTP-Code: 404|404/);
    expectCode(await request(['get', 'waited', '-n', NAMESPACE]), 0, 'the InternalRequest of that name is still there');
    const again = await request(['cancel', 'waited', '--kind', 'sigreq', '-n', NAMESPACE]);
    expectCode(again, 2, 'cancel a missing SigningRequest');
    assert.match(again.stderr, /error: no SigningRequest "waited" in namespace "sig-a" \[CLI_REQUEST_NOT_FOUND\]/);
  });

  test('bad input: exit 2 with one clear line; nothing is created', async () => {
    const before = await listSigning();
    const cases: Array<[string, string[], RegExp]> = [
      ['no such kind', ['create', '--kind', 'buildrequests', '--field', 'x=y'], /^error: --kind buildrequests names none of the resources of cluster "remote" \(https:\/\/127\.0\.0\.1:\d+\), context "remote-requester"; request kinds there: internalrequests\.appstudio\.redhat\.com, signingrequests\.signing\.example\.com \[CLI_KIND_UNKNOWN\]$/],
      ['no such group', ['get', '--kind', 'signingrequests.nope.example.com'], /serves no API group nope\.example\.com; is the kind installed there\? .*\[CLI_KIND_UNKNOWN\]$/],
      ['not a request kind', ['list', '--kind', 'rolebindings'], /--kind rolebindings names rolebindings\.rbac\.authorization\.k8s\.io, which has no status subresource: it is not a request kind .*\[CLI_KIND_UNKNOWN\]$/],
      ['a param with a typed kind', ['create', '--kind', 'sigreq', '-p', 'image=x'], /^error: -p\/--param is for InternalRequests only: the RequestDefinition of --kind sigreq sets the Pipeline, its service account and timeouts; give the spec with --field NAME=VALUE or --spec-file FILE \[CLI_USAGE\]$/],
      ['a Pipeline with a typed kind', ['create', 'sign-artifact', '--kind', 'sigreq', '--pipeline-timeout', '1h'], /^error: argument "sign-artifact", --pipeline-timeout are for InternalRequests only: .*\[CLI_USAGE\]$/],
      ['a field without a typed kind', ['create', 'echo', '--field', 'image=x'], /^error: --field and --spec-file give the spec of a typed kind: add --kind KIND .*\[CLI_USAGE\]$/],
      ['malformed field', ['create', '--kind', 'sigreq', '--field', 'tags=[v1]'], /^error: --field tags: a value starting with \[ is read as JSON, and this is not JSON .*\[CLI_FIELD_INVALID\]$/],
      ['the CRD refuses the spec', ['create', '--kind', 'sigreq', '--field', 'image=quay.io/org/app:latest', '--field', 'signer={"keyRef":"k","identity":"i"}'], /^error: the API server refused to create a SigningRequest in namespace "sig-a": HTTP 422: .*spec\.image.*should match.*\[CLI_REQUEST_REFUSED\]$/],
      ['a required field missing', ['create', '--kind', 'sigreq', '--field', `image=${IMAGE}`], /^error: the API server refused to create a SigningRequest .*spec\.signer: Required value.*\[CLI_REQUEST_REFUSED\]$/],
    ];
    const runs = await Promise.all(cases.map(([, args]) => request([...args, '-n', NAMESPACE])));
    runs.forEach((r, i) => {
      const [what, , re] = cases[i]!;
      expectCode(r, 2, what);
      assert.equal(r.stdout, '', what);
      assert.match(r.stderr.trimEnd(), re, what);
      assert.equal(r.stderr.trimEnd().split('\n').length, 1, `${what}: one line on stderr`);
    });
    assert.deepEqual(await listSigning(), before, 'bad input creates nothing');
  });
});

describe('approve/deny --kind (real RBAC and approval admission policy on the internal apiserver; approvals written by hand)', () => {
  /** An undecided approval, as the controller writes it, for sig-a/NAME of `kind` (none: an InternalRequest). */
  const approval = (suffix: string, name: string, kind?: string): InternalRequestApproval => ({
    apiVersion: 'appstudio.redhat.com/v1alpha1',
    kind: 'InternalRequestApproval',
    metadata: { name: `ir-${suffix}`, namespace: NS, labels: { 'internal-services.appstudio.redhat.com/request-namespace': NAMESPACE } },
    spec: { request: { namespace: NAMESPACE, name, uid: `uid-${suffix}`, ...(kind ? { kind } : {}) }, rule: 'signing', pipeline: 'sign-artifact', expiresAt: '2099-01-01T00:00:00Z' },
  });
  const decisionOf = async (suffix: string) =>
    ((await api(internalAdmin).getNamespacedCustomObject({ ...APPROVALS, namespace: NS, name: `ir-${suffix}` })) as InternalRequestApproval).status?.decision;
  const asApprover = (args: string[]) => request(args, env!.internal.identities.approver!.kubeconfigPath);

  before(async () => {
    for (const a of [approval('same-ir', 'same'), approval('same-sr', 'same', 'SigningRequest'), approval('only-ir', 'only-ir'), approval('short', 'short', 'SigningRequest')]) {
      await api(internalAdmin).createNamespacedCustomObject({ ...APPROVALS, namespace: NS, body: a });
    }
  });

  test('--kind picks the approval of that kind when two kinds share a name; without it, the InternalRequest\'s', async () => {
    const ok = await asApprover(['approve', 'sig-a/same', '--kind', 'SigningRequest', '-m', 'ok']);
    expectCode(ok, 0, 'approve --kind SigningRequest');
    assert.equal(ok.stdout, 'signingrequest sig-a/same approved by release-manager (rule signing)\n');
    assert.equal((await decisionOf('same-sr'))?.result, 'Approved');
    assert.equal(await decisionOf('same-ir'), undefined);
    const no = await asApprover(['deny', 'same', '-n', NAMESPACE, '-m', 'not now']);
    expectCode(no, 0, 'deny (InternalRequest)');
    assert.equal(no.stdout, 'internalrequest sig-a/same denied by release-manager (rule signing)\n');
    assert.equal((await decisionOf('same-ir'))?.result, 'Denied');
  });

  test('the wrong kind is not found, saying which kind is waiting; a name other than a Kind needs the RequestDefinitions', async () => {
    const wrong = await asApprover(['approve', 'sig-a/only-ir', '--kind', 'SigningRequest']);
    expectCode(wrong, 2, 'approve --kind SigningRequest of an InternalRequest');
    assert.match(wrong.stderr, /^error: no SigningRequest sig-a\/only-ir is waiting for approval \(no undecided InternalRequestApproval for it in namespace "internal-services" of .*\); there is one for the InternalRequest of that name: leave --kind out \[CLI_REQUEST_NOT_FOUND\]\n$/);
    // approvers may not read RequestDefinitions: the Kind itself is needed
    const short = await asApprover(['approve', 'sig-a/short', '--kind', 'sigreq']);
    expectCode(short, 2, 'approve --kind sigreq as an approver');
    assert.match(short.stderr, /^error: cannot read the RequestDefinitions in namespace "internal-services" of .* to find which kind --kind sigreq is \(HTTP 403: .*\); give the Kind itself, as the waiting request's message shows it \(e\.g\. --kind SigningRequest\) \[CLI_KIND_UNKNOWN\]\n$/);
    // who may read them (here the admin, with the sample definition) names the kind any way its definition does
    await applyManifests(internalAdmin, loadManifests(join(SAMPLE, 'definition.yaml')).map((d) => ({ ...d, metadata: { ...d.metadata, namespace: NS } })));
    const unknown = await request(['approve', 'sig-a/short', '--kind', 'buildrequests'], env!.internal.identities.admin.kubeconfigPath);
    expectCode(unknown, 2, 'approve --kind buildrequests');
    assert.match(unknown.stderr, /--kind buildrequests names none of the RequestDefinitions in namespace "internal-services" of .*; request kinds there: signingrequests\.signing\.example\.com \[CLI_KIND_UNKNOWN\]/);
    const admin = await request(['approve', 'sig-a/short', '--kind', 'sigreq', '-m', 'as admin'], env!.internal.identities.admin.kubeconfigPath);
    expectCode(admin, 0, 'approve --kind sigreq as the admin');
    assert.match(admin.stdout, /^signingrequest sig-a\/short approved by /);
    assert.equal((await decisionOf('short'))?.result, 'Approved');
  });
});

async function listSigning(selector?: string): Promise<string[]> {
  const l = (await api(remoteAdmin).listNamespacedCustomObject({ ...SR, namespace: NAMESPACE, ...(selector ? { labelSelector: selector } : {}) })) as { items: SigningRequest[] };
  return l.items.map((i) => i.metadata.name).sort();
}
