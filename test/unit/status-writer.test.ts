/**
 * The status writer on its own: a plain object stands for the remote (its
 * name, a client with replaceStatus/tryGet, an Event recorder), so that
 * compare-before-write, conflict handling, the results-too-large fallback
 * and what follows a write are exercised without a cluster.
 */
import { Refusals } from '../../src/controller/refusals.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { InternalRequest } from '../../src/api/types.js';
import { CONFLICT_RETRIES, StatusWriter, type EventsMode, type StatusTarget } from '../../src/controller/status-writer.js';
import { request } from './fixtures.js';
import { FinishedRequest } from '../../src/requests/cached-requests.js';

const log = pino({ level: 'silent' });
const NOW = new Date('2026-11-22T10:00:00Z');
const KEY = 'default/team-a/req';

type Status = NonNullable<InternalRequest['status']>;
const running: Status = { conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running', message: 'running', lastTransitionTime: NOW.toISOString() }], pipelineRun: 'internal-services/run-u-1' };
const succeeded: Status = { conditions: [{ type: 'Succeeded', status: 'True', reason: 'Succeeded', message: 'done', lastTransitionTime: NOW.toISOString() }], pipelineRun: 'internal-services/run-u-1', results: { digest: 'sha256:abc' } };

/** A remote as the writer sees it; `answers` are consumed one per replaceStatus (an Error is thrown). */
function fakeRemote(answers: Array<'ok' | { code: number; message?: string }> = [], fresh?: InternalRequest) {
  const calls = { replaceStatus: [] as InternalRequest[], tryGet: 0, events: [] as Array<{ type: string; reason: string }> };
  let rv = 10;
  const target: StatusTarget = {
    name: 'default',
    client: {
      async replaceStatus(_ns, _name, body) {
        calls.replaceStatus.push(structuredClone(body));
        const a = answers.shift() ?? 'ok';
        if (a !== 'ok') throw Object.assign(new Error(a.message ?? `HTTP ${a.code}`), { code: a.code });
        return { ...body, metadata: { ...body.metadata, resourceVersion: String(++rv) } };
      },
      async tryGet() {
        calls.tryGet++;
        return fresh;
      },
    },
    events: {
      async record(_obj, type, reason) {
        calls.events.push({ type, reason });
      },
    },
  };
  return { target, calls };
}

function writer(opts: { events?: EventsMode; requeued?: string[]; metrics?: { started: string[]; finished: string[] }; refusals?: Refusals } = {}) {
  return new StatusWriter({
    refusals: opts.refusals ?? new Refusals(),
    log,
    now: () => NOW,
    events: opts.events,
    metrics: {
      started: (_r, _s, remote) => opts.metrics?.started.push(remote),
      finished: (_r, reason, _ok, _s, remote) => opts.metrics?.finished.push(`${remote}:${reason}`),
    },
    requeue: (key) => void opts.requeued?.push(key),
  });
}

test('compare before write: a status equal to the request\'s is not written', async () => {
  const { target, calls } = fakeRemote();
  const req = request({}, {}, structuredClone(running));
  assert.equal(await writer().write(target, KEY, req, structuredClone(running), undefined, 0), true);
  assert.equal(calls.replaceStatus.length, 0);
});

test('a write sends the request with the new status, and the written object is what current() returns until the cache catches up', async () => {
  const { target, calls } = fakeRemote();
  const metrics = { started: [] as string[], finished: [] as string[] };
  const w = writer({ metrics });
  const req = request();
  assert.equal(await w.write(target, KEY, req, running, undefined, 0), true);
  assert.equal(calls.replaceStatus.length, 1);
  assert.deepEqual(calls.replaceStatus[0]!.status, running);
  assert.equal(calls.replaceStatus[0]!.metadata.resourceVersion, '10', 'conditional on the resourceVersion decided on');
  assert.deepEqual(metrics.started, ['default'], 'Running for the first time');
  assert.deepEqual(metrics.finished, []);
  // The cache still shows the object the write was based on: our write wins.
  const seen = w.current(KEY, req);
  assert.equal(seen?.metadata.resourceVersion, '11');
  assert.deepEqual(seen?.status, running);
  // The cache has caught up (another resourceVersion): the cache wins, and the write is forgotten.
  const caught = request({}, { resourceVersion: '11' }, running);
  assert.equal(w.current(KEY, caught), caught);
  assert.equal(w.current(KEY, req), req);
});

test('what is remembered of a write is what the cache would keep: no managedFields, and a finished request as its small record', async () => {
  const { target } = fakeRemote();
  const w = writer();
  const managed = [{ manager: 'kubectl', operation: 'Update', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': {} } }];
  const req = request({}, { managedFields: managed } as never);
  assert.equal(await w.write(target, KEY, req, running, undefined, 0), true);
  const seen = w.current(KEY, req);
  assert.deepEqual(seen?.status, running);
  assert.equal((seen?.metadata as { managedFields?: unknown }).managedFields, undefined, 'managedFields are not kept');
  const done = { ...succeeded, completionTime: NOW.toISOString() };
  assert.equal(await w.write(target, KEY, seen!, done, undefined, 0), true);
  const finished = w.current(KEY, req);
  assert.ok(finished instanceof FinishedRequest, 'a finished request is remembered as a FinishedRequest record');
  assert.equal(finished.status?.conditions?.[0]?.reason, 'Succeeded');
  assert.equal(finished.metadata.resourceVersion, '12');
});

test('current(): a request of another uid under the same key is not shadowed by an earlier write', async () => {
  const { target } = fakeRemote();
  const w = writer();
  await w.write(target, KEY, request(), running, undefined, 0);
  const other = request({}, { uid: 'u-2' });
  assert.equal(w.current(KEY, other), other);
});

test('forgetRemote() drops the writes to that remote only', async () => {
  const { target } = fakeRemote();
  const w = writer();
  const req = request();
  await w.write(target, KEY, req, running, undefined, 0);
  await w.write(target, 'other/team-a/req', req, running, undefined, 0);
  w.forgetRemote('default');
  assert.equal(w.current(KEY, req), req);
  assert.notEqual(w.current('other/team-a/req', req), req);
});

test('a conflict (409) reads the request fresh, keeps it for the next reconcile and requeues the key; the plan stops', async () => {
  const fresh = request({}, { resourceVersion: '12', labels: { touched: 'yes' } });
  const { target, calls } = fakeRemote([{ code: 409 }], fresh);
  const requeued: string[] = [];
  const w = writer({ requeued });
  assert.equal(await w.write(target, KEY, request(), running, undefined, 2), false);
  assert.equal(calls.tryGet, 1);
  assert.deepEqual(requeued, [KEY], 'the key is looked at again, not decided from inside the write');
  assert.deepEqual(w.conflicted(KEY), { request: fresh, attempt: 3 });
  // The next reconcile sees the fresh read, until the cache shows as new a copy.
  assert.equal(w.current(KEY, request({}, { resourceVersion: '11' })), fresh);
  const newer = request({}, { resourceVersion: '13' });
  assert.equal(w.current(KEY, newer), newer);
  assert.equal(w.conflicted(KEY), undefined, 'a newer copy in the cache ends it');
  // A write that goes through ends it too.
  const again = fakeRemote([{ code: 409 }], fresh);
  const w2 = writer();
  await w2.write(again.target, KEY, request(), running, undefined, 0);
  assert.ok(w2.conflicted(KEY));
  await w2.write(fakeRemote().target, KEY, fresh, running, undefined, 1);
  assert.equal(w2.conflicted(KEY), undefined);
});

test('a conflict on a request deleted meanwhile, a 404, and a conflict past the retries', async () => {
  {
    const { target } = fakeRemote([{ code: 409 }], undefined);
    const requeued: string[] = [];
    const w = writer({ requeued });
    assert.equal(await w.write(target, KEY, request(), running, undefined, 0), false);
    assert.deepEqual([requeued, w.conflicted(KEY)], [[], undefined], 'gone: nothing to decide (its delete event brings the key back)');
  }
  {
    const { target } = fakeRemote([{ code: 404 }]);
    assert.equal(await writer().write(target, KEY, request(), running, undefined, 0), false);
  }
  {
    const { target, calls } = fakeRemote([{ code: 409 }], request());
    await assert.rejects(writer().write(target, KEY, request(), running, undefined, CONFLICT_RETRIES), /409/);
    assert.equal(calls.tryGet, 0);
  }
});

test('results the remote refuses (too large): nothing more is written here; the refusal is recorded for decide() and the key comes back', async () => {
  const { target, calls } = fakeRemote([{ code: 413, message: 'request entity too large' }]);
  const metrics = { started: [] as string[], finished: [] as string[] };
  const refusals = new Refusals();
  const requeued: string[] = [];
  const req = request({}, {}, running);
  assert.equal(await writer({ metrics, refusals, requeued }).write(target, KEY, req, succeeded, undefined, 0), false, 'the rest of the plan does not run');
  assert.equal(calls.replaceStatus.length, 1, 'one write, refused');
  assert.deepEqual(requeued, [KEY]);
  assert.match(refusals.of(KEY, req.metadata.uid)?.results ?? '', /too large/);
  assert.equal(refusals.of(KEY, 'another-uid'), undefined, 'a request of the same name with another uid starts clean');
  assert.deepEqual(metrics.finished, [], 'nothing finished yet');
  // A refusal of a status without results to drop is an ordinary error.
  const { target: t2 } = fakeRemote([{ code: 413, message: 'request entity too large' }]);
  await assert.rejects(writer().write(t2, KEY, request(), running, undefined, 0), /too large/);
});

test('any other refusal is not retried here: it goes to the work queue', async () => {
  const { target } = fakeRemote([{ code: 422 }]);
  await assert.rejects(writer().write(target, KEY, request(), running, undefined, 0), /422/);
});

test('Events after a write follow the events mode', async () => {
  const success = { type: 'Normal' as const, reason: 'Succeeded', message: 'done', success: true as const };
  const warning = { type: 'Warning' as const, reason: 'Failed', message: 'failed' };
  const cases: Array<[EventsMode | undefined, typeof success | typeof warning, number]> = [
    [undefined, success, 0],
    [undefined, warning, 1],
    ['all', success, 1],
    ['warnings', warning, 1],
    ['none', warning, 0],
  ];
  for (const [mode, event, n] of cases) {
    const { target, calls } = fakeRemote();
    await writer({ events: mode }).write(target, KEY, request(), running, event, 0);
    assert.equal(calls.events.length, n, `${mode ?? '(default)'} ${event.reason}`);
  }
});

test('an older copy than the one we wrote over (a long list arriving behind the early lane) does not hide our write; a cache showing nothing keeps it remembered; a newer copy ends it', async () => {
  const { target } = fakeRemote();
  const w = writer();
  const req = request();
  req.metadata.resourceVersion = '10';
  assert.equal(await w.write(target, KEY, req, structuredClone(succeeded), undefined, 0), true);
  const older = request();
  older.metadata.resourceVersion = '7';
  assert.equal(w.current(KEY, older)?.status?.conditions?.[0]?.reason, 'Succeeded', 'the older copy is behind our write');
  assert.equal(w.current(KEY, undefined), undefined, 'nothing cached: nothing to show');
  assert.equal(w.current(KEY, older)?.status?.conditions?.[0]?.reason, 'Succeeded', 'and our write is still remembered');
  const newer = request({}, {}, structuredClone(succeeded));
  newer.metadata.resourceVersion = '11';
  assert.equal(w.current(KEY, newer), newer, 'the cache caught up');
  assert.equal(w.current(KEY, older), older, 'and our write is forgotten');
  // Remembered writes expire.
  assert.equal(await w.write(target, KEY, req, structuredClone(running), undefined, 0), true);
  w.expire(Date.now() + 11 * 60_000);
  assert.equal(w.current(KEY, older), older);
});
