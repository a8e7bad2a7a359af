/**
 * The run index on its own: a Map stands for the PipelineRun informer's
 * cache (get by `namespace/name`, list), so that what this instance created
 * or deleted before the cache showed it, the request keys of runs (of the
 * built-in kind and of another kind), and the expiry of what the cache never
 * confirmed are exercised without a cluster.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RunIndex } from '../../src/controller/run-index.js';
import { ANNOTATION_REQUEST_KIND, LABEL_REQUEST_REMOTE } from '../../src/tekton/pipelinerun.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';
import { done, NS, pipelineRun, runningStatus } from './fixtures.js';

/** How long the index keeps what the cache never showed (run-index.ts OVERLAY_TTL_MS). */
const TTL_MS = 120_000;
const KEY = 'default/team-a/req';

/** The informer's cache as the index reads it; `show`/`drop` change it as a watch event would (the index is told separately, by observed()). */
function fakeCache() {
  const store = new Map<string, PipelineRun>();
  return {
    get: (key: string) => store.get(key),
    list: () => store.values(),
    show(pr: PipelineRun) {
      store.set(`${pr.metadata.namespace}/${pr.metadata.name}`, pr);
    },
    drop(pr: PipelineRun) {
      store.delete(`${pr.metadata.namespace}/${pr.metadata.name}`);
    },
  };
}

function setup() {
  const cache = fakeCache();
  return { cache, index: new RunIndex(cache, NS) };
}

/** A PipelineRun of a request on `remote`, of `kind` (undefined: InternalRequest). */
function runFor(uid: string, opts: { name?: string; remote?: string; kind?: string; status?: PipelineRun['status'] } = {}): PipelineRun {
  const pr = pipelineRun(uid, opts.status, { ns: 'team-a', name: opts.name ?? 'req' });
  if (opts.remote) pr.metadata.labels = { ...pr.metadata.labels, [LABEL_REQUEST_REMOTE]: opts.remote };
  if (opts.kind) pr.metadata.annotations = { ...pr.metadata.annotations, [ANNOTATION_REQUEST_KIND]: opts.kind };
  return pr;
}

const names = (prs: Iterable<PipelineRun>) => [...prs].map((p) => p.metadata.name);

test('a run we created is seen before the cache shows it; once the cache shows it, the cache\'s copy is the one seen, once', () => {
  const { cache, index } = setup();
  const sent = runFor('u-1');
  const returned: PipelineRun = { ...structuredClone(sent), metadata: { ...structuredClone(sent.metadata), resourceVersion: '1' } };
  index.created(sent, returned);
  assert.deepEqual(index.forRequest(KEY), [returned], 'the API server\'s copy, before any watch event');
  assert.deepEqual([...index.all()], [returned]);
  assert.deepEqual([...index.requestKeys()], [], 'requestKeys() names what the cache holds only');

  // The cache has it (a later copy, Tekton started it) but observed() has not run yet: one copy, the cache's.
  const fromCache: PipelineRun = { ...structuredClone(returned), metadata: { ...structuredClone(returned.metadata), resourceVersion: '2' }, status: runningStatus() };
  cache.show(fromCache);
  assert.deepEqual([...index.all()], [fromCache]);

  assert.deepEqual(index.observed(fromCache, false), { key: KEY, freed: false });
  assert.deepEqual(index.forRequest(KEY), [fromCache]);
  assert.deepEqual([...index.all()], [fromCache]);
  assert.deepEqual([...index.requestKeys()], [KEY]);

  // The cache drops it (deleted by someone else): nothing of ours brings it back.
  cache.drop(fromCache);
  assert.deepEqual(index.observed(fromCache, true), { key: KEY, freed: true });
  assert.deepEqual(index.forRequest(KEY), []);
  assert.deepEqual([...index.all()], []);
  assert.deepEqual([...index.requestKeys()], [], 'a key with no runs left is dropped');
});

test('a run we deleted is hidden until the cache drops it; a new run of the same name (another uid) is not', () => {
  const { cache, index } = setup();
  const pr = runFor('u-1', { status: done(true) });
  const other = runFor('u-2', { name: 'other' });
  for (const p of [pr, other]) {
    cache.show(p);
    index.observed(p, false);
  }
  assert.deepEqual(names(index.forRequest(KEY)), [pr.metadata.name]);

  index.deleted(pr);
  assert.deepEqual(index.forRequest(KEY), [], 'the cache still shows it, but we deleted it');
  assert.deepEqual(names(index.all()), [other.metadata.name]);
  assert.deepEqual(names(index.forRequest('default/team-a/other')), [other.metadata.name], 'the other request\'s run is untouched');

  // The same name with another uid (the API server had a newer object; our delete was for the old one).
  const newer: PipelineRun = { ...structuredClone(pr), metadata: { ...structuredClone(pr.metadata), uid: 'pr-newer' } };
  cache.show(newer);
  assert.deepEqual(index.forRequest(KEY), [newer]);
  assert.deepEqual(new Set(index.all()), new Set([newer, other]));
  cache.show(pr);

  // The cache drops it: the index forgets both the run and our delete.
  cache.drop(pr);
  assert.deepEqual(index.observed(pr, true), { key: KEY, freed: true });
  assert.deepEqual(index.forRequest(KEY), []);
  assert.deepEqual([...index.requestKeys()], ['default/team-a/other']);
  // Were the name made again and shown, it is seen: the delete was forgotten.
  cache.show(pr);
  index.observed(pr, false);
  assert.deepEqual(index.forRequest(KEY), [pr]);
});

test('a run we created and then deleted before the cache showed it is gone at once', () => {
  const { index } = setup();
  const pr = runFor('u-1');
  index.created(pr, pr);
  index.deleted(pr);
  assert.deepEqual(index.forRequest(KEY), []);
  assert.deepEqual([...index.all()], []);
});

test('observed(): the request key of one of our runs, and whether a run slot may have freed', () => {
  const { index } = setup();
  assert.deepEqual(index.observed(runFor('u-1'), false), { key: KEY, freed: false }, 'new, not started');
  assert.deepEqual(index.observed(runFor('u-1', { status: runningStatus() }), false), { key: KEY, freed: false }, 'running');
  assert.deepEqual(index.observed(runFor('u-1', { status: done(true) }), false), { key: KEY, freed: true }, 'succeeded');
  assert.deepEqual(index.observed(runFor('u-1', { status: done(false) }), false), { key: KEY, freed: true }, 'failed');
  assert.deepEqual(index.observed(runFor('u-1', { status: runningStatus() }), true), { key: KEY, freed: true }, 'deleted while running');

  // A PipelineRun that is not ours (no request annotations): no key, no slot, not indexed.
  const foreign: PipelineRun = { apiVersion: 'tekton.dev/v1', kind: 'PipelineRun', metadata: { name: 'someone-elses', namespace: NS, uid: 'x' }, spec: {}, status: done(true) };
  assert.deepEqual(index.observed(foreign, false), { key: undefined, freed: false });
  assert.deepEqual(index.observed(foreign, true), { key: undefined, freed: false });
  assert.deepEqual([...index.requestKeys()], []);
});

test('runs of another remote and of another request kind are indexed under their own keys', () => {
  const { cache, index } = setup();
  const builtIn = runFor('u-1');
  const onProd = runFor('u-2', { remote: 'prod' });
  const signing = runFor('u-3', { remote: 'prod', kind: 'SigningRequest' });
  for (const p of [builtIn, onProd, signing]) {
    cache.show(p);
    assert.ok(index.observed(p, false).key);
  }
  assert.deepEqual([...index.requestKeys()].sort(), ['default/team-a/req', 'prod/team-a/req', 'prod/team-a/req/SigningRequest']);
  assert.deepEqual(index.forRequest('default/team-a/req'), [builtIn]);
  assert.deepEqual(index.forRequest('prod/team-a/req'), [onProd], 'an InternalRequest and a SigningRequest may share a name');
  assert.deepEqual(index.forRequest('prod/team-a/req/SigningRequest'), [signing]);

  // What we created for a request of another kind is found under that kind's key only.
  const created = runFor('u-4', { name: 'twin', remote: 'prod', kind: 'SigningRequest' });
  index.created(created, created);
  assert.deepEqual(index.forRequest('prod/team-a/twin/SigningRequest'), [created]);
  assert.deepEqual(index.forRequest('prod/team-a/twin'), []);
});

test('the index reads the cache in its own namespace only', () => {
  const { cache, index } = setup();
  const elsewhere = runFor('u-1');
  elsewhere.metadata.namespace = 'not-ours';
  cache.show(elsewhere);
  index.observed(elsewhere, false);
  assert.deepEqual(index.forRequest(KEY), [], 'forRequest looks up <controller namespace>/<name>');
});

test('expire(): what the cache never confirmed is forgotten after the overlay TTL, not before', () => {
  const { cache, index } = setup();
  const t0 = Date.now();
  const lost = runFor('u-1');
  index.created(lost, lost);
  const kept = runFor('u-2', { name: 'kept' });
  cache.show(kept);
  index.observed(kept, false);
  index.deleted(kept);

  index.expire(t0 + TTL_MS / 2);
  assert.deepEqual(index.forRequest(KEY), [lost], 'still within the TTL');
  assert.deepEqual(index.forRequest('default/team-a/kept'), [], 'still hidden within the TTL');

  index.expire(t0 + TTL_MS + 1_000);
  assert.deepEqual(index.forRequest(KEY), [], 'a created run the cache never showed');
  assert.deepEqual([...index.all()], [kept], 'a delete the cache never showed: the run is seen again');
  assert.deepEqual(index.forRequest('default/team-a/kept'), [kept]);
});

test('a burst: hundreds of runs created and not yet shown, each found under its own request only, and forgotten as the cache shows or drops them', () => {
  const { cache, index } = setup();
  const runs = Array.from({ length: 300 }, (_, i) => runFor(`u-${i}`, { name: `req-${i}`, ...(i % 3 === 0 ? { remote: 'east' } : {}) }));
  for (const pr of runs) index.created(pr, pr);
  const keyOf = (i: number) => `${i % 3 === 0 ? 'east' : 'default'}/team-a/req-${i}`;
  for (let i = 0; i < runs.length; i++) assert.deepEqual(names(index.forRequest(keyOf(i))), [`ir-u-${i}`], `request ${i}`);
  assert.equal([...index.all()].length, 300);

  // The cache shows the first half; a copy created again under the same name (a retried create) is not doubled.
  for (const pr of runs.slice(0, 150)) {
    cache.show(pr);
    index.observed(pr, false);
  }
  index.created(runs[200]!, runs[200]!);
  assert.deepEqual(names(index.forRequest(keyOf(200))), ['ir-u-200']);
  assert.deepEqual(names(index.forRequest(keyOf(10))), ['ir-u-10'], 'from the cache now');
  assert.equal([...index.all()].length, 300);

  // Deleted by us before the cache showed them: gone at once, under their keys too.
  for (const pr of runs.slice(150)) index.deleted(pr);
  for (let i = 150; i < 300; i++) assert.deepEqual(index.forRequest(keyOf(i)), [], `request ${i}`);
  assert.equal([...index.all()].length, 150);
});
