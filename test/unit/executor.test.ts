/**
 * The action executor on its own: a plain object stands for the internal
 * cluster (resource(ref) gives a recording client per resource), another for
 * the remote (its name, Event recorder, the cache of each request kind it
 * serves), and a real StatusWriter writes statuses through it, so
 * that what each action sends, and which answers of the API server count as
 * done, are exercised without a cluster.
 */
import { DELETES_DENIED_MS, Refusals } from '../../src/controller/refusals.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { splitRequestKey } from '../../src/api/request-key.js';
import type { InternalRequest, InternalRequestApproval } from '../../src/api/types.js';
import type { Action } from '../../src/controller/decide.js';
import { Executor } from '../../src/controller/executor.js';
import type { Remote } from '../../src/remotes/remote.js';
import { INTERNAL_REQUEST_KIND, type RequestKind } from '../../src/requests/request-kind.js';
import { StatusWriter } from '../../src/controller/status-writer.js';
import type { Cluster, KubeObject, ResourceRef } from '../../src/kube/client.js';
import type { ResolutionRequest } from '../../src/tekton/resolve.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';
import { ANNOTATION_STEPACTION_SOURCE, LABEL_STEPACTION_COPY, type StepActionCopy } from '../../src/tekton/stepaction-copy.js';
import { ANNOTATION_USED_AT } from '../../src/controller/stepaction-copies.js';
import { NOW, NS, pipelineRun, request } from './fixtures.js';

const KEY = 'prod/team-a/req';
const SIGNING_KEY = 'prod/team-a/req/SigningRequest';

type Op = 'create' | 'get' | 'tryGet' | 'delete' | 'patchMerge' | 'replace' | 'replaceStatus';
type Failure = { code: number; message?: string };

/**
 * A ResourceClient as the executor and the writer use it: each call is
 * recorded; `fail[op]` holds the errors the next calls of that op throw (as
 * the client library does: an error with the HTTP code); `objects` answers
 * get/tryGet by name.
 */
function fakeClient(plural: string) {
  const calls: Array<{ op: Op; args: unknown[] }> = [];
  const fail: Partial<Record<Op, Failure[]>> = {};
  const objects = new Map<string, KubeObject>();
  let rv = 100;
  const step = (op: Op, args: unknown[]) => {
    calls.push({ op, args: structuredClone(args) });
    const f = fail[op]?.shift();
    if (f) throw Object.assign(new Error(f.message ?? `HTTP ${f.code}`), { code: f.code });
  };
  return {
    plural,
    calls,
    fail,
    objects,
    ops: () => calls.map((c) => c.op),
    async create(ns: string, body: KubeObject) {
      step('create', [ns, body]);
      return { ...body, metadata: { ...body.metadata, uid: `server-${body.metadata?.name}`, resourceVersion: String(++rv) } };
    },
    async get(ns: string, name: string) {
      step('get', [ns, name]);
      const o = objects.get(name);
      if (!o) throw Object.assign(new Error('HTTP 404'), { code: 404 });
      return o;
    },
    async tryGet(ns: string, name: string) {
      step('tryGet', [ns, name]);
      return objects.get(name);
    },
    async delete(ns: string, name: string, uid?: string) {
      step('delete', [ns, name, uid]);
    },
    async patchMerge(ns: string, name: string, patch: object) {
      step('patchMerge', [ns, name, patch]);
      return {};
    },
    async replace(ns: string, name: string, body: KubeObject) {
      step('replace', [ns, name, body]);
      return { ...body, metadata: { ...body.metadata, resourceVersion: String(++rv) } };
    },
    async replaceStatus(ns: string, name: string, body: KubeObject) {
      step('replaceStatus', [ns, name, body]);
      return { ...body, metadata: { ...body.metadata, resourceVersion: String(++rv) } };
    },
  };
}
type FakeClient = ReturnType<typeof fakeClient>;

/** A second request kind: its objects keep the image at spec.image; reading one marks it, so that what went through toRequest shows. */
const signing: RequestKind = {
  kind: 'SigningRequest',
  resource: { group: 'signing.example.com', version: 'v1alpha1', plural: 'signingrequests' },
  builtIn: false,
  toRequest: (obj) => {
    const o = obj as KubeObject & { spec?: { image?: string }; status?: InternalRequest['status'] };
    return {
      apiVersion: 'appstudio.redhat.com/v1alpha1',
      kind: 'InternalRequest',
      metadata: { ...o.metadata, annotations: { ...o.metadata?.annotations, 'read-as': 'SigningRequest' } },
      spec: { request: 'sign', params: { image: o.spec?.image ?? '' } },
      ...(o.status ? { status: o.status } : {}),
    };
  },
  checkShape: () => undefined,
  statusBody: (req, status) => ({ apiVersion: 'signing.example.com/v1alpha1', kind: 'SigningRequest', metadata: req.metadata, status }) as never,
};

function setup(opts: { held?: () => string | undefined } = {}) {
  const clients = new Map<string, FakeClient>();
  const asked: string[] = [];
  const internal = {
    resource(ref: ResourceRef) {
      asked.push(ref.plural);
      if (!clients.has(ref.plural)) clients.set(ref.plural, fakeClient(ref.plural));
      return clients.get(ref.plural)!;
    },
  };
  const client = (plural: string) => clients.get(plural) ?? internal.resource({ group: 'x', version: 'v1', plural });

  const lines: Array<{ level: number; msg: string; [k: string]: unknown }> = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s)) });

  // The remote: one cache per kind (the built-in first, as Remote has it).
  const irClient = fakeClient('internalrequests');
  const srClient = fakeClient('signingrequests');
  const events: Array<{ obj: InternalRequest; type: string; reason: string }> = [];
  const kinds = new Map([
    ['InternalRequest', { kind: INTERNAL_REQUEST_KIND, client: irClient, requests: {} }],
    ['SigningRequest', { kind: signing, client: srClient, requests: {} }],
  ]);
  const remote = {
    name: 'prod',
    client: irClient,
    events: {
      async record(obj: InternalRequest, type: string, reason: string) {
        events.push({ obj, type, reason });
      },
    },
    kindOf: (key: string) => kinds.get(splitRequestKey(key).kind ?? 'InternalRequest'),
  };

  const seen = { created: [] as Array<[PipelineRun, PipelineRun]>, deleted: [] as PipelineRun[], requeued: [] as Array<[string, number]>, checks: [] as Array<[string, string, string]>, requeuedNow: [] as string[] };
  const refusals = new Refusals();
  const writer = new StatusWriter({ log, now: () => NOW, events: 'all', requeue: (key) => void seen.requeuedNow.push(key), refusals });
  const executor = new Executor({
    internal: internal as unknown as Cluster,
    namespace: NS,
    log,
    now: () => NOW,
    writer,
    created: (sent, created) => void seen.created.push([sent, created]),
    deleted: (pr) => void seen.deleted.push(pr),
    requeueAfter: (key, ms) => void seen.requeued.push([key, ms]),
    checkCommit: (key, owner, check) => void seen.checks.push([key, owner, check.commit]),
    lookUpRef: (key, owner, lookup) => void seen.checks.push([key, owner, lookup.ref]),
    checkPath: (key, owner, check) => void seen.checks.push([key, owner, check.path]),
    checkServiceAccount: (key, owner, name) => void seen.checks.push([key, owner, name]),
    refusals,
    ...(opts.held ? { held: opts.held } : {}),
  });
  const act = (key: string, req: InternalRequest | undefined, action: Action, attempt = 0) => executor.act(remote as unknown as Remote, key, req, action, attempt);
  const warnings = () => lines.filter((l) => l.level === 40);
  return { executor, act, asked, client, irClient, srClient, remote, events, seen, writer, lines, warnings, refusals };
}

const running: NonNullable<InternalRequest['status']> = { conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running', message: 'running', lastTransitionTime: NOW.toISOString() }], pipelineRun: `${NS}/ir-u-1` };

test('the executor takes its clients from the internal cluster: PipelineRuns, StepAction copies, ResolutionRequests, approvals', () => {
  const { asked, executor, client } = setup();
  assert.deepEqual(asked.sort(), ['internalrequestapprovals', 'pipelineruns', 'resolutionrequests', 'stepactions']);
  assert.equal(executor.prClient, client('pipelineruns') as never);
});

test('createPipelineRun: created in the controller\'s namespace, and the API server\'s copy handed to created()', async () => {
  const { act, client, seen } = setup();
  const pr = pipelineRun('u-1');
  assert.equal(await act(KEY, request(), { type: 'createPipelineRun', pipelineRun: pr }), true);
  const prs = client('pipelineruns');
  assert.deepEqual(prs.calls, [{ op: 'create', args: [NS, pr] }]);
  assert.equal(seen.created.length, 1);
  const [sent, created] = seen.created[0]!;
  assert.equal(sent, pr, 'as sent');
  assert.equal(created.metadata.uid, `server-${pr.metadata.name}`, 'as the API server returned it');
});

test('createPipelineRun with StepAction copies: the copies first; one already there is replaced with exactly the spec checked and marked as used; a failure stops before the PipelineRun', async () => {
  const { act, client } = setup();
  const pr = pipelineRun('u-1');
  const copy = (name: string): StepActionCopy => ({ apiVersion: 'tekton.dev/v1beta1', kind: 'StepAction', metadata: { name, namespace: NS, labels: { [LABEL_STEPACTION_COPY]: 'true' }, annotations: { [ANNOTATION_STEPACTION_SOURCE]: '{}' } }, spec: { image: name } });
  const sas = client('stepactions');
  sas.fail.create = [{ code: 409 }];
  // What is stored under the name was changed since it was made: an extra script.
  sas.objects.set('is-stepaction-a', { apiVersion: 'tekton.dev/v1beta1', kind: 'StepAction', metadata: { name: 'is-stepaction-a', namespace: NS, resourceVersion: '7', labels: { [LABEL_STEPACTION_COPY]: 'true' }, annotations: { other: 'kept' } }, spec: { image: 'is-stepaction-a', script: 'curl evil' } } as KubeObject);
  assert.equal(await act(KEY, request(), { type: 'createPipelineRun', pipelineRun: pr, stepActions: [copy('is-stepaction-a'), copy('is-stepaction-b')] }), true);
  assert.deepEqual(sas.ops(), ['create', 'get', 'replace', 'create']);
  const replaced = sas.calls[2]!.args[2] as StepActionCopy & { metadata: { resourceVersion?: string } };
  assert.deepEqual(replaced.spec, { image: 'is-stepaction-a' }, 'exactly the spec checked, nothing of what was stored');
  assert.equal(replaced.metadata.resourceVersion, '7', 'in the version read: a change meanwhile is a conflict, retried');
  assert.deepEqual(replaced.metadata.annotations, { other: 'kept', [ANNOTATION_STEPACTION_SOURCE]: '{}', [ANNOTATION_USED_AT]: NOW.toISOString() });
  assert.deepEqual(client('pipelineruns').ops(), ['create'], 'then the PipelineRun');
  sas.fail.create = [{ code: 403, message: 'forbidden' }];
  await assert.rejects(act(KEY, request(), { type: 'createPipelineRun', pipelineRun: pr, stepActions: [copy('is-stepaction-c')] }), /forbidden/);
  assert.deepEqual(client('pipelineruns').ops(), ['create'], 'no PipelineRun whose step would find nothing');
});

test('createPipelineRun: 409 (made by an earlier attempt) counts as done; any other error goes to the work queue', async () => {
  const { act, client, seen } = setup();
  const prs = client('pipelineruns');
  prs.fail.create = [{ code: 409 }, { code: 500, message: 'etcd leader changed' }];
  assert.equal(await act(KEY, request(), { type: 'createPipelineRun', pipelineRun: pipelineRun('u-1') }), true);
  assert.deepEqual(seen.created, [], 'not ours to index: the cache shows the one that exists');
  await assert.rejects(act(KEY, request(), { type: 'createPipelineRun', pipelineRun: pipelineRun('u-1') }), /etcd leader changed/);
  assert.deepEqual(seen.created, []);
});

test('createPipelineRun refused by the internal cluster (422): nothing is written here; the refusal is recorded for decide(), the plan stops and the key comes back', async () => {
  const { act, client, irClient, srClient, seen, refusals } = setup();
  client('pipelineruns').fail.create = [{ code: 422, message: 'spec.params: Invalid value' }, { code: 422 }];
  const req = request();
  assert.equal(await act(KEY, req, { type: 'createPipelineRun', pipelineRun: pipelineRun('u-1') }), false);
  assert.deepEqual(seen.created, []);
  assert.deepEqual([irClient.ops(), srClient.ops()], [[], []], 'no status write from the executor');
  assert.deepEqual(seen.requeued, [[KEY, 0]]);
  assert.match(refusals.of(KEY, req.metadata.uid)?.run ?? '', /spec\.params: Invalid value/);
  // Without the request (deleted meanwhile) there is nothing to reject: the error stands.
  await assert.rejects(act(KEY, undefined, { type: 'createPipelineRun', pipelineRun: pipelineRun('u-1') }), /HTTP 422/);
});

test('deletePipelineRun: deleted with its uid as precondition, and handed to deleted(); 409 (a newer object of that name) counts as done', async () => {
  const { act, client, seen } = setup();
  const prs = client('pipelineruns');
  const pr = pipelineRun('u-1');
  assert.equal(await act(KEY, request(), { type: 'deletePipelineRun', pipelineRun: pr, why: 'finished' }), true);
  assert.deepEqual(prs.calls, [{ op: 'delete', args: [NS, pr.metadata.name, pr.metadata.uid] }]);
  assert.deepEqual(seen.deleted, [pr]);
  prs.fail.delete = [{ code: 409 }, { code: 503 }];
  assert.equal(await act(KEY, request(), { type: 'deletePipelineRun', pipelineRun: pr, why: 'finished' }), true);
  assert.equal(seen.deleted.length, 2);
  await assert.rejects(act(KEY, request(), { type: 'deletePipelineRun', pipelineRun: pr, why: 'finished' }), /HTTP 503/);
  assert.equal(seen.deleted.length, 2, 'not deleted: not handed on');
});

test('cancelPipelineRun: a merge patch of spec.status (and the annotations asked for); 404 counts as done', async () => {
  const { act, client } = setup();
  const prs = client('pipelineruns');
  const pr = pipelineRun('u-1');
  assert.equal(await act(KEY, undefined, { type: 'cancelPipelineRun', pipelineRun: pr, why: 'its InternalRequest was deleted' }), true);
  assert.equal(await act(KEY, undefined, { type: 'cancelPipelineRun', pipelineRun: pr, why: 'revoked', annotations: { revoked: 'rule gone' } }), true);
  assert.deepEqual(prs.calls, [
    { op: 'patchMerge', args: [NS, pr.metadata.name, { spec: { status: 'Cancelled' } }] },
    { op: 'patchMerge', args: [NS, pr.metadata.name, { metadata: { annotations: { revoked: 'rule gone' } }, spec: { status: 'Cancelled' } }] },
  ]);
  prs.fail.patchMerge = [{ code: 404 }, { code: 500 }];
  assert.equal(await act(KEY, undefined, { type: 'cancelPipelineRun', pipelineRun: pr, why: 'x' }), true);
  await assert.rejects(act(KEY, undefined, { type: 'cancelPipelineRun', pipelineRun: pr, why: 'x' }), /HTTP 500/);
});

test('deleteResolution, deleteApproval: 404 and 409 count as done; createApproval: 409 counts as done', async () => {
  const { act, client } = setup();
  const rr: ResolutionRequest = { metadata: { name: 'rr-1', namespace: NS, uid: 'rr-uid' } };
  const approval = { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequestApproval', metadata: { name: 'ap-1', namespace: NS, uid: 'ap-uid' }, spec: { rule: 'prod' } } as unknown as InternalRequestApproval;
  const rrs = client('resolutionrequests');
  const aps = client('internalrequestapprovals');
  rrs.fail.delete = [{ code: 404 }, { code: 409 }, { code: 500 }];
  aps.fail.delete = [{ code: 404 }, { code: 409 }, { code: 500 }];
  aps.fail.create = [{ code: 409 }, { code: 500 }];
  for (let i = 0; i < 2; i++) {
    assert.equal(await act(KEY, request(), { type: 'deleteResolution', resolution: rr, why: 'resolved' }), true);
    assert.equal(await act(KEY, request(), { type: 'deleteApproval', approval, why: 'request gone' }), true);
  }
  await assert.rejects(act(KEY, request(), { type: 'deleteResolution', resolution: rr, why: 'resolved' }), /HTTP 500/);
  await assert.rejects(act(KEY, request(), { type: 'deleteApproval', approval, why: 'request gone' }), /HTTP 500/);
  assert.deepEqual(rrs.calls[0], { op: 'delete', args: [NS, 'rr-1', 'rr-uid'] });
  assert.deepEqual(aps.calls[0], { op: 'delete', args: [NS, 'ap-1', 'ap-uid'] });
  assert.equal(await act(KEY, request(), { type: 'createApproval', approval }), true);
  await assert.rejects(act(KEY, request(), { type: 'createApproval', approval }), /HTTP 500/);
  assert.deepEqual(aps.calls.filter((c) => c.op === 'create')[0], { op: 'create', args: [NS, approval] });
});

test('deleteRequest: through the client of the request\'s kind, with its uid; 404 and 409 count as done', async () => {
  const { act, irClient, srClient, warnings, refusals } = setup();
  const req = request({}, { namespace: 'team-a', name: 'req', uid: 'u-1' });
  assert.equal(await act(KEY, req, { type: 'deleteRequest', request: req, why: 'ttlSecondsAfterFinished' }), true);
  assert.equal(await act(SIGNING_KEY, req, { type: 'deleteRequest', request: req, why: 'ttlSecondsAfterFinished' }), true);
  assert.deepEqual(irClient.calls, [{ op: 'delete', args: ['team-a', 'req', 'u-1'] }]);
  assert.deepEqual(srClient.calls, [{ op: 'delete', args: ['team-a', 'req', 'u-1'] }]);
  irClient.fail.delete = [{ code: 404 }, { code: 409 }, { code: 500 }];
  assert.equal(await act(KEY, req, { type: 'deleteRequest', request: req, why: 'ttl' }), true);
  assert.equal(await act(KEY, req, { type: 'deleteRequest', request: req, why: 'ttl' }), true);
  await assert.rejects(act(KEY, req, { type: 'deleteRequest', request: req, why: 'ttl' }), /HTTP 500/);
  assert.equal(refusals.deletesDeniedOn('prod', NOW.getTime()), false);
  assert.deepEqual(warnings(), []);
});

test('deleteRequest refused (403): said once per remote, recorded for decide() (which does not ask again for a while)', async () => {
  const { act, srClient, warnings, refusals } = setup();
  const req = request();
  srClient.fail.delete = [{ code: 403, message: 'forbidden' }, { code: 403, message: 'forbidden' }];
  assert.equal(refusals.deletesDeniedOn('prod', NOW.getTime()), false);
  assert.equal(await act(SIGNING_KEY, req, { type: 'deleteRequest', request: req, why: 'ttl' }), true);
  assert.equal(refusals.deletesDeniedOn('prod', NOW.getTime()), true);
  assert.equal(refusals.deletesDeniedOn('prod', NOW.getTime() + DELETES_DENIED_MS), false, 'asked again after a while');
  assert.equal(warnings().length, 1);
  assert.match(warnings()[0]!.msg, /may not delete signingrequests on this remote cluster; apply config\/rbac\/remote-ttl there/);
  assert.equal(warnings()[0]!['remote'], 'prod');
  assert.equal(await act(SIGNING_KEY, req, { type: 'deleteRequest', request: req, why: 'ttl' }), true);
  assert.equal(warnings().length, 1, 'the second refusal is not logged again');
});

test('writeStatus of the built-in kind: the request with its new status, through the remote\'s InternalRequest client', async () => {
  const { act, irClient, srClient, events, writer } = setup();
  const req = request();
  assert.equal(await act(KEY, req, { type: 'writeStatus', status: running, event: { type: 'Normal', reason: 'Running', message: 'running' } }), true);
  assert.deepEqual(srClient.calls, []);
  assert.deepEqual(irClient.calls, [{ op: 'replaceStatus', args: ['team-a', 'req', { ...req, status: running }] }]);
  assert.deepEqual(events.map((e) => e.reason), ['Running']);
  assert.deepEqual(writer.current(KEY, req)?.status, running);
});

test("writeStatus of another kind: the kind's status body through its client, and what comes back read through its toRequest", async () => {
  const { act, irClient, srClient, events, writer } = setup();
  const req = request({}, { name: 'req', namespace: 'team-a', uid: 'u-1', resourceVersion: '10' });
  assert.equal(await act(SIGNING_KEY, req, { type: 'writeStatus', status: running, event: { type: 'Normal', reason: 'Running', message: 'running' } }), true);
  assert.deepEqual(irClient.calls, [], 'not the first kind\'s client');
  assert.deepEqual(srClient.calls, [{ op: 'replaceStatus', args: ['team-a', 'req', signing.statusBody(req, running)] }]);
  const written = writer.current(SIGNING_KEY, req);
  assert.equal(written?.metadata.annotations?.['read-as'], 'SigningRequest', 'the written object, read as a request by the kind');
  assert.deepEqual(written?.status, running);
  assert.equal(events[0]?.obj.metadata.annotations?.['read-as'], 'SigningRequest', 'the Event is recorded on the object read back');
  assert.deepEqual([events[0]?.obj.apiVersion, events[0]?.obj.kind], ['signing.example.com/v1alpha1', 'SigningRequest'], 'about the object of its own kind');

  // A conflict: the fresh read goes through the kind's client and toRequest too.
  const other = setup();
  other.srClient.fail.replaceStatus = [{ code: 409 }];
  other.srClient.objects.set('req', { apiVersion: 'signing.example.com/v1alpha1', kind: 'SigningRequest', metadata: { name: 'req', namespace: 'team-a', uid: 'u-1', resourceVersion: '12' }, spec: { image: 'quay.io/fresh' } } as KubeObject);
  assert.equal(await other.act(SIGNING_KEY, req, { type: 'writeStatus', status: running }, 1), false);
  assert.deepEqual(other.srClient.ops(), ['replaceStatus', 'tryGet']);
  assert.deepEqual(other.seen.requeuedNow, [SIGNING_KEY]);
  const c = other.writer.conflicted(SIGNING_KEY)!;
  assert.deepEqual([c.attempt, c.request.spec.params?.['image'], c.request.metadata.annotations?.['read-as']], [2, 'quay.io/fresh', 'SigningRequest']);
});

test('writeStatus without a request (deleted meanwhile): nothing is written, the plan stops', async () => {
  const { act, irClient } = setup();
  assert.equal(await act(KEY, undefined, { type: 'writeStatus', status: running }), false);
  assert.deepEqual(irClient.calls, []);
});

test('a key of a kind the remote does not serve: a clear error, and nothing is done', async () => {
  const { act, client, seen } = setup();
  await assert.rejects(act('prod/team-a/req/OtherRequest', request(), { type: 'requeueAfter', ms: 1000 }), {
    message: 'request kind of prod/team-a/req/OtherRequest is not served on remote prod',
  });
  await assert.rejects(act('prod/team-a/req/OtherRequest', request(), { type: 'createPipelineRun', pipelineRun: pipelineRun('u-1') }), /not served on remote prod/);
  assert.deepEqual(client('pipelineruns').calls, []);
  assert.deepEqual(seen.requeued, []);
});

test('requeueAfter: handed back to the work queue with its delay', async () => {
  const { act, seen } = setup();
  assert.equal(await act(SIGNING_KEY, request(), { type: 'requeueAfter', ms: 30_000 }), true);
  assert.deepEqual(seen.requeued, [[SIGNING_KEY, 30_000]]);
});

test('held (the Go controller is back): no create, cancel, delete, status write or finalizer removal reaches a cluster; the key is looked at again; released: acted on', async () => {
  let held: string | undefined = 'the Go controller\'s Deployment internal-services-system/internal-services-controller-manager has 1 replica(s) asked for';
  const { act, client, irClient, seen } = setup({ held: () => held });
  const req = request({}, { finalizers: ['internal-services.appstudio.openshift.io/pipelinerun-cleanup'] });
  const goRun = { ...pipelineRun('u-1'), metadata: { name: 'internalrequest-abcde', namespace: 'internal-services-system', uid: 'go-1', labels: { 'internal-services.appstudio.openshift.io/name': 'req', 'internal-services.appstudio.openshift.io/namespace': 'team-a' } } } as PipelineRun;
  const plan: Action[] = [
    { type: 'createPipelineRun', pipelineRun: pipelineRun('u-1') },
    { type: 'cancelPipelineRun', pipelineRun: goRun, why: 'its InternalRequest was deleted' },
    { type: 'deletePipelineRun', pipelineRun: goRun, why: 'its InternalRequest was deleted' },
    { type: 'writeStatus', status: running },
    { type: 'removeFinalizer', request: req, finalizer: 'internal-services.appstudio.openshift.io/pipelinerun-cleanup', why: 'finished' },
    { type: 'deleteRequest', request: req, why: 'ttl' },
  ];
  for (const a of plan) assert.equal(await act(KEY, req, a), false, `${a.type} held: the rest of the plan does not run`);
  assert.deepEqual(client('pipelineruns').calls, [], 'nothing sent to the internal cluster');
  assert.deepEqual(irClient.calls, [], 'nothing sent to the remote');
  assert.deepEqual([seen.created, seen.deleted], [[], []]);
  assert.deepEqual(seen.requeued, plan.map(() => [KEY, 5_000]), 'each time the key comes back');
  assert.equal(await act(KEY, req, { type: 'requeueAfter', ms: 10 }), true, 'a requeue passes');

  held = undefined;
  assert.equal(await act(KEY, req, plan[1]!), true);
  assert.equal(await act(KEY, req, plan[2]!), true);
  assert.deepEqual(client('pipelineruns').calls.map((c) => [c.op, c.args[0], c.args[1]]), [['patchMerge', 'internal-services-system', 'internalrequest-abcde'], ['delete', 'internal-services-system', 'internalrequest-abcde']], 'the Go controller\'s run, cancelled and deleted where it is');
});
