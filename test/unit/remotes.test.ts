/**
 * The remote set and the providers' interface, without a cluster: each
 * remote's cluster is a plain object whose request client answers lists
 * from an array (the remote is polled every few milliseconds), so that
 * remotes can be added, replaced and removed while their request keys flow.
 */
import { IDEMPOTENCY_INDEX, idempotencyKeyOf } from '../../src/requests/idempotency.js';
import { slimRequest } from '../../src/requests/cached-requests.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { InternalRequest } from '../../src/api/types.js';
import type { Cluster } from '../../src/kube/client.js';
import type { Remote, RemoteSpec } from '../../src/remotes/remote.js';
import { RemoteSet } from '../../src/remotes/set.js';
import { KubeconfigRemote } from '../../src/remotes/kubeconfig.js';
import type { RemoteSink } from '../../src/remotes/provider.js';
import { LABEL_IDEMPOTENCY_KEY } from '../../src/requests/idempotency.js';
import { request } from './fixtures.js';

const log = pino({ level: 'silent' });

/** A remote cluster: `requests` is what a list returns; `closed` once the remote is stopped. */
function fakeCluster(server: string, requests: InternalRequest[]) {
  const state = { requests, closed: false, lists: 0 };
  const cluster = {
    server,
    resource: () => ({
      async list(_ns: string | undefined, o: { transform?: (x: InternalRequest) => InternalRequest } = {}) {
        state.lists++;
        return { items: state.requests.map((r) => (o.transform ? o.transform(structuredClone(r)) : r)), resourceVersion: String(state.lists) };
      },
    }),
    close: () => {
      state.closed = true;
    },
  } as unknown as Cluster;
  return { cluster, state };
}

function spec(name: string, cluster: Cluster): RemoteSpec {
  return { name, cluster, mode: { mode: 'poll', pollIntervalMs: 10 }, origin: `test ${name}` };
}

function remoteSet() {
  const seen = { keys: [] as string[], resynced: [] as string[], dropped: [] as Remote[] };
  const set = new RemoteSet(
    {
      enqueue: (key) => seen.keys.push(key),
      resynced: (r) => seen.resynced.push(r.name),
      dropped: (r) => seen.dropped.push(r),
      started: () => true,
    },
    { log, instance: 'test', informer: { resyncPeriodMs: 60_000, observer: undefined }, indexes: [{ name: IDEMPOTENCY_INDEX, extract: idempotencyKeyOf, related: true }], transform: slimRequest },
  );
  return { set, seen };
}

async function until(what: string, f: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const req = (name: string, meta: Partial<InternalRequest['metadata']> = {}) => request({}, { name, uid: `uid-${name}`, ...meta });

test('a remote added while the set runs is listed, and its request keys flow; a request that comes later flows too', async () => {
  const { set, seen } = remoteSet();
  const a = fakeCluster('https://a', [req('one')]);
  try {
    const remote = set.addRemote(spec('a', a.cluster));
    assert.equal(set.get('a'), remote);
    await until('the first list', () => seen.resynced.includes('a'));
    assert.ok(seen.keys.includes('a/team-a/one'));
    assert.equal(set.served('a/team-a/one'), remote);
    assert.ok(remote.listed('a/team-a/one'), 'its kind has its full list');
    assert.equal(set.cached('a/team-a/one')?.metadata.uid, 'uid-one');
    assert.equal(set.served('b/team-a/one'), undefined, 'a remote not served');
    a.state.requests = [...a.state.requests, req('two')];
    await until('the new request', () => seen.keys.includes('a/team-a/two'));
  } finally {
    await set.stopAll();
  }
});

test('removing one remote stops it (and only it) while the other\'s keys go on flowing', async () => {
  const { set, seen } = remoteSet();
  const a = fakeCluster('https://a', [req('one')]);
  const b = fakeCluster('https://b', [req('one')]);
  try {
    const ra = set.addRemote(spec('a', a.cluster));
    set.addRemote(spec('b', b.cluster));
    await until('both listed', () => seen.resynced.includes('a') && seen.resynced.includes('b'));
    assert.equal(await set.removeRemote('a'), true);
    assert.deepEqual(seen.dropped, [ra]);
    assert.equal(a.state.closed, true, 'its connection is closed');
    assert.equal(set.get('a'), undefined);
    assert.equal(set.served('a/team-a/one'), undefined, 'nothing of a removed remote is decided');
    assert.deepEqual([...set.names()], ['b']);
    assert.equal(await set.removeRemote('a'), false, 'removing it again: nothing to do');
    // Keys still flow from b; none from a.
    a.state.requests = [...a.state.requests, req('late')];
    b.state.requests = [...b.state.requests, req('two')];
    await until('b\'s new request', () => seen.keys.includes('b/team-a/two'));
    assert.ok(!seen.keys.includes('a/team-a/late'));
    assert.equal(b.state.closed, false);
  } finally {
    await set.stopAll();
  }
});

test('replacing a remote (a rotated kubeconfig): the old one is dropped and stopped, the new one serves the same keys', async () => {
  const { set, seen } = remoteSet();
  const old = fakeCluster('https://old', [req('one')]);
  const rotated = fakeCluster('https://new', [req('one'), req('two')]);
  try {
    const first = set.addRemote(spec('a', old.cluster));
    await until('the first list', () => seen.resynced.includes('a'));
    const second = set.addRemote(spec('a', rotated.cluster));
    assert.notEqual(second, first);
    assert.equal(set.get('a'), second);
    assert.deepEqual(seen.dropped, [first]);
    await until('the old one stopped', () => old.state.closed);
    await until('the new one listed', () => set.served('a/team-a/two') === second && second.listed('a/team-a/two') !== undefined);
    assert.equal(set.size, 1);
  } finally {
    await set.stopAll();
  }
});

test('requests with the same idempotency key: a change to one brings back the others with its key', async () => {
  const { set, seen } = remoteSet();
  const labels = { [LABEL_IDEMPOTENCY_KEY]: 'k1' };
  const a = fakeCluster('https://a', [req('first', { labels }), req('second', { labels }), req('unrelated')]);
  try {
    set.addRemote(spec('a', a.cluster));
    await until('the first list', () => seen.resynced.includes('a'));
    assert.deepEqual([...set.indexedUnder(IDEMPOTENCY_INDEX, 'a', 'team-a', 'k1')].sort(), ['a/team-a/first', 'a/team-a/second']);
    seen.keys.length = 0;
    a.state.requests = a.state.requests.map((r) => (r.metadata.name === 'first' ? { ...r, metadata: { ...r.metadata, resourceVersion: '11' } } : r));
    await until('the change', () => seen.keys.includes('a/team-a/first'));
    assert.ok(seen.keys.includes('a/team-a/second'), 'the follower is looked at again');
    assert.ok(!seen.keys.includes('a/team-a/unrelated'));
    await set.removeRemote('a');
    assert.deepEqual([...set.indexedUnder(IDEMPOTENCY_INDEX, 'a', 'team-a', 'k1')], [], 'the index of a removed remote is dropped');
  } finally {
    await set.stopAll();
  }
});

test('KubeconfigRemote: one remote, added to its sink at start() before anything is awaited', async () => {
  const added: string[] = [];
  const sink: RemoteSink = {
    addRemote: (s) => added.push(s.name),
    removeRemote: async () => false,
  };
  const { cluster } = fakeCluster('https://one', []);
  const provider = new KubeconfigRemote(sink, { name: 'default', cluster });
  const started = provider.start();
  assert.deepEqual(added, ['default'], 'added synchronously');
  await started;
  assert.deepEqual(provider.readiness(), []);
  await provider.stop();
});
