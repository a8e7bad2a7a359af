/**
 * The idempotency look-ups on their own: plain objects stand for the
 * controller's sources (the requests of a key, our PipelineRuns) and for the
 * remote's client, so that which other requests become Earlier values, in
 * which order, and what is read fresh for a succeeded one are exercised
 * without a cluster; and the per-key locks that keep two workers from both
 * starting a run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { InternalRequest } from '../../src/api/types.js';
import { earlierOf, KeyLocks, type SameKeyRequests } from '../../src/controller/idempotency-lookups.js';
import { ANNOTATION_SPEC_HASH, LABEL_IDEMPOTENCY_KEY, specHash, type Earlier } from '../../src/requests/idempotency.js';
import { INTERNAL_REQUEST_KIND, type RequestKind } from '../../src/requests/request-kind.js';
import type { KubeObject } from '../../src/kube/client.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';
import { NS, pipelineRun, request } from './fixtures.js';

const IDEM = 'pr-123-sign';
const T0 = '2026-11-22T09:00:00Z';
const MINE = '2026-11-22T09:30:00Z';
const LATER = '2026-11-22T09:45:00Z';

type Status = NonNullable<InternalRequest['status']>;
const cond = (status: 'True' | 'False' | 'Unknown', reason: string): Status['conditions'] => [{ type: 'Succeeded', status, reason, message: reason, lastTransitionTime: T0 }];
const SUCCEEDED: Status = { conditions: cond('True', 'Succeeded'), pipelineRun: `${NS}/ir-done` };
const FAILED: Status = { conditions: cond('False', 'Failed'), pipelineRun: `${NS}/ir-failed` };
const REJECTED: Status = { conditions: cond('False', 'Rejected') };
const RUNNING: Status = { conditions: cond('Unknown', 'Running'), pipelineRun: `${NS}/ir-running` };

/** A request with the idempotency key, in team-a. */
function keyed(name: string, created: string, status?: Status, spec: Partial<InternalRequest['spec']> = {}): InternalRequest {
  return request(spec, { name, uid: `uid-${name}`, creationTimestamp: created, labels: { [LABEL_IDEMPOTENCY_KEY]: IDEM } }, status);
}

/** The controller's sources over a list of requests (keys `default/team-a/<name>`) and runs by key. */
function sources(others: InternalRequest[], runs: Record<string, PipelineRun[]> = {}) {
  const byKey = new Map(others.map((r) => [`default/team-a/${r.metadata.name}`, r]));
  const asked: Array<{ remote: string; namespace: string; key: string; kind: string | undefined }> = [];
  const src: SameKeyRequests = {
    sameKey(remote, namespace, key, kind) {
      asked.push({ remote, namespace, key, kind: kind?.kind });
      return byKey.keys();
    },
    currentRequest: (key) => byKey.get(key),
    pipelineRunsFor: (key) => runs[key] ?? [],
  };
  return { src, asked };
}

/** The remote's client: tryGet answers from `fresh` by name and counts the reads. */
function remoteOf(fresh: Record<string, unknown> = {}, kind?: RequestKind) {
  const reads: string[] = [];
  return {
    reads,
    remote: {
      name: 'default',
      client: {
        async tryGet(ns: string, name: string) {
          reads.push(`${ns}/${name}`);
          return fresh[name] as InternalRequest | undefined;
        },
      },
      ...(kind ? { kind } : {}),
    },
  };
}

test('earlierOf: each state, those that ran first, then older unfinished ones; a later one that has not run is skipped', async () => {
  const mine = keyed('mine', MINE);
  const others = [
    mine, // itself: never its own earlier
    keyed('older-waiting', T0),
    keyed('later-waiting', LATER),
    keyed('later-running', LATER, RUNNING),
    keyed('failed', '2026-11-22T09:10:00Z', FAILED),
    keyed('rejected', '2026-11-22T09:05:00Z', REJECTED),
    keyed('later-with-run', '2026-11-22T09:50:00Z'),
  ];
  // later-with-run has no status yet, but we have its PipelineRun (and one of an older incarnation, another uid).
  const runs = { 'default/team-a/later-with-run': [pipelineRun('uid-later-with-run'), pipelineRun('uid-gone')], 'default/team-a/later-waiting': [pipelineRun('uid-gone')] };
  const { src, asked } = sources(others, runs);
  const { remote, reads } = remoteOf();
  const out = await earlierOf(src, remote, mine);
  assert.deepEqual(asked, [{ remote: 'default', namespace: 'team-a', key: IDEM, kind: undefined }]);
  assert.deepEqual(out, [
    // ran (a PipelineRun, in the status or in our index), oldest first
    { name: 'failed', uid: 'uid-failed', sameSpec: true, state: 'failed', pipelineRun: `${NS}/ir-failed` },
    { name: 'later-running', uid: 'uid-later-running', sameSpec: true, state: 'active', pipelineRun: `${NS}/ir-running` },
    { name: 'later-with-run', uid: 'uid-later-with-run', sameSpec: true, state: 'active' },
    // did not run, created before this one
    { name: 'older-waiting', uid: 'uid-older-waiting', sameSpec: true, state: 'active' },
    { name: 'rejected', uid: 'uid-rejected', sameSpec: true, state: 'rejected' },
  ] satisfies Earlier[]);
  assert.deepEqual(reads, [], 'nothing succeeded: nothing read from the cluster');
});

test('earlierOf: created at the same second, the lower uid is the older one', async () => {
  const mine = request({}, { name: 'mine', uid: 'b', creationTimestamp: MINE, labels: { [LABEL_IDEMPOTENCY_KEY]: IDEM } });
  const before = request({}, { name: 'before', uid: 'a', creationTimestamp: MINE, labels: { [LABEL_IDEMPOTENCY_KEY]: IDEM } });
  const after = request({}, { name: 'after', uid: 'c', creationTimestamp: MINE, labels: { [LABEL_IDEMPOTENCY_KEY]: IDEM } });
  const { src } = sources([before, after]);
  assert.deepEqual((await earlierOf(src, remoteOf().remote, mine)).map((e) => e.name), ['before']);
});

test('earlierOf: sameSpec from the spec, or from the spec hash kept on a slim cached copy', async () => {
  const mine = keyed('mine', MINE, undefined, { params: { image: 'quay.io/x' } });
  const otherSpec = keyed('other-spec', T0, undefined, { params: { image: 'quay.io/y' } });
  // A finished request's slim copy drops the spec and keeps its hash.
  const slim = keyed('slim', T0, FAILED);
  slim.spec = {} as InternalRequest['spec'];
  slim.metadata.annotations = { [ANNOTATION_SPEC_HASH]: specHash(mine.spec) };
  const slimOther = keyed('slim-other', T0, FAILED);
  slimOther.metadata.annotations = { [ANNOTATION_SPEC_HASH]: 'not-the-hash' };
  const { src } = sources([otherSpec, slim, slimOther]);
  const out = await earlierOf(src, remoteOf().remote, mine);
  assert.deepEqual(Object.fromEntries(out.map((e) => [e.name, e.sameSpec])), { 'other-spec': false, slim: true, 'slim-other': false });
});

test('earlierOf: a succeeded one with the same spec is read fresh for its results; a re-created one (another uid) is not used', async () => {
  const mine = keyed('mine', MINE);
  // The cache's copies are slim: no results.
  const done = keyed('done', T0, SUCCEEDED);
  const recreated = keyed('recreated', T0, SUCCEEDED);
  const deleted = keyed('deleted', T0, SUCCEEDED);
  const differs = keyed('differs', T0, SUCCEEDED, { params: { image: 'quay.io/other' } });
  const fresh = {
    done: keyed('done', T0, { ...SUCCEEDED, results: { digest: 'sha256:abc' }, pipelineRun: `${NS}/ir-done-fresh` }),
    recreated: { ...keyed('recreated', T0, { ...SUCCEEDED, results: { digest: 'sha256:not-this' } }), metadata: { name: 'recreated', namespace: 'team-a', uid: 'uid-new' } },
    differs: keyed('differs', T0, { ...SUCCEEDED, results: { digest: 'sha256:never-read' } }),
  };
  const { src } = sources([done, recreated, deleted, differs]);
  const { remote, reads } = remoteOf(fresh);
  const out = await earlierOf(src, remote, mine);
  const byName = Object.fromEntries(out.map((e) => [e.name, e]));
  assert.deepEqual(byName['done'], { name: 'done', uid: 'uid-done', sameSpec: true, state: 'succeeded', results: { digest: 'sha256:abc' }, pipelineRun: `${NS}/ir-done-fresh` });
  assert.deepEqual(byName['recreated'], { name: 'recreated', uid: 'uid-recreated', sameSpec: true, state: 'succeeded' }, 'the fresh read is another request: neither its results nor its run');
  assert.deepEqual(byName['deleted'], { name: 'deleted', uid: 'uid-deleted', sameSpec: true, state: 'succeeded' }, 'gone meanwhile: no results');
  assert.deepEqual(byName['differs'], { name: 'differs', uid: 'uid-differs', sameSpec: false, state: 'succeeded', pipelineRun: SUCCEEDED.pipelineRun }, 'another spec: not read, its run from the cache');
  assert.deepEqual(reads.sort(), ['team-a/deleted', 'team-a/done', 'team-a/recreated'], 'only succeeded same-spec ones are read');
  // The results are a copy: deciding with them cannot change the object read.
  byName['done']!.results!['digest'] = 'changed';
  assert.equal(fresh.done.status?.results?.['digest'], 'sha256:abc');
});

test("earlierOf: with a request kind other than the built-in one, the fresh read is read through the kind's toRequest", async () => {
  // A SigningRequest keeps its outcome in status.signature; the kind maps it to the request path's results.
  const signing: RequestKind = {
    kind: 'SigningRequest',
    resource: { group: 'signing.example.com', version: 'v1alpha1', plural: 'signingrequests' },
    builtIn: false,
    toRequest(obj: KubeObject) {
      const o = obj as KubeObject & { spec?: { image?: string }; status?: Status & { signature?: string } };
      const { signature, ...status } = o.status ?? {};
      return {
        apiVersion: 'appstudio.redhat.com/v1alpha1',
        kind: 'InternalRequest',
        metadata: o.metadata as InternalRequest['metadata'],
        spec: { request: 'sign', params: { image: o.spec?.image ?? '' } },
        status: { ...status, ...(signature ? { results: { signature } } : {}) },
      };
    },
    checkShape: () => undefined,
    statusBody: (req, status) => ({ ...req, status }) as never,
  };
  const mine = keyed('mine', MINE);
  const done = keyed('done', T0, SUCCEEDED);
  const raw = { apiVersion: 'signing.example.com/v1alpha1', kind: 'SigningRequest', metadata: { name: 'done', namespace: 'team-a', uid: 'uid-done' }, spec: { image: 'quay.io/x' }, status: { ...SUCCEEDED, signature: 'sig-1' } };
  const { src, asked } = sources([done]);
  const { remote } = remoteOf({ done: raw }, signing);
  const out = await earlierOf(src, remote, mine);
  assert.deepEqual(asked.map((a) => a.kind), ['SigningRequest'], 'the look-up is for requests of the same kind');
  assert.deepEqual(out, [{ name: 'done', uid: 'uid-done', sameSpec: true, state: 'succeeded', results: { signature: 'sig-1' }, pipelineRun: SUCCEEDED.pipelineRun }]);

  // The built-in kind reads the object as it is (toRequest is the identity, and not needed).
  const plain = keyed('done', T0, { ...SUCCEEDED, results: { digest: 'sha256:abc' } });
  const builtIn = await earlierOf(sources([done]).src, remoteOf({ done: plain }, INTERNAL_REQUEST_KIND).remote, mine);
  assert.deepEqual(builtIn[0]?.results, { digest: 'sha256:abc' });
});

/** A promise and its resolve, to hold a turn open. */
function gate() {
  let open!: () => void;
  const p = new Promise<void>((r) => (open = r));
  return { p, open };
}
const tick = () => new Promise((r) => setImmediate(r));

test('KeyLocks: one turn at a time per lock key, in the order asked', async () => {
  const locks = new KeyLocks();
  const order: string[] = [];
  const g = gate();
  const first = locks.run('k', async () => {
    order.push('first starts');
    await g.p;
    order.push('first ends');
  });
  const second = locks.run('k', async () => {
    order.push('second');
  });
  const third = locks.run('k', async () => {
    order.push('third');
  });
  await tick();
  assert.deepEqual(order, ['first starts'], 'the second waits for the first');
  g.open();
  await Promise.all([first, second, third]);
  assert.deepEqual(order, ['first starts', 'first ends', 'second', 'third']);
});

test('KeyLocks: different lock keys do not wait for each other', async () => {
  const locks = new KeyLocks();
  const g = gate();
  let aDone = false;
  const a = locks.run('a', async () => {
    await g.p;
    aDone = true;
  });
  let bRan = false;
  await locks.run('b', async () => {
    bRan = true;
  });
  assert.equal(bRan, true);
  assert.equal(aDone, false, 'b finished while a was still holding its lock');
  g.open();
  await a;
});

test('KeyLocks: an error in one turn goes to its caller and does not block the next turn', async () => {
  const locks = new KeyLocks();
  const g = gate();
  const failing = locks.run('k', async () => {
    await g.p;
    throw new Error('boom');
  });
  let next = false;
  const after = locks.run('k', async () => {
    next = true;
  });
  await tick();
  assert.equal(next, false);
  g.open();
  await assert.rejects(failing, /boom/);
  await after;
  assert.equal(next, true);
  // And the key is free again afterwards.
  let again = false;
  await locks.run('k', async () => {
    again = true;
  });
  assert.equal(again, true);
  assert.equal((locks as unknown as { tails: Map<string, unknown> }).tails.size, 0, 'no lock key is kept once its turns are over');
});
