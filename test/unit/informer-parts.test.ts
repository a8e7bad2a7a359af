/**
 * The pure parts of the supervised informer (src/kube/informer-store.ts,
 * src/kube/informer-health.ts): the cache and its handler calls, backoff,
 * health and readiness. The list/watch loop itself is tested against a real
 * API server in test/integration/informer.test.ts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Logger } from 'pino';
import type { KubeObject, ResourceClient } from '../../src/kube/client.js';
import { InformerStore, keyOf, type InformerHandlers } from '../../src/kube/informer-store.js';
import { backoffMs, HealthBook, jittered, readinessOf, WARN_QUIET_MS, type InformerHealth } from '../../src/kube/informer-health.js';
import { Informer, keyOf as keyOfFromInformer } from '../../src/kube/informer.js';

interface Obj extends KubeObject {
  metadata: { name: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string> };
}

const o = (name: string, rv: string, namespace = 'ns', labels?: Record<string, string>): Obj => ({ metadata: { name, namespace, resourceVersion: rv, ...(labels ? { labels } : {}) } });

/** A store whose handler calls are recorded in order, as "add ns/a@1", "update ns/a@1->2", "delete ns/a@1", "resync". */
function recording(extra: Partial<InformerHandlers<Obj>> = {}): { store: InformerStore<Obj>; calls: string[]; errors: unknown[] } {
  const calls: string[] = [];
  const errors: unknown[] = [];
  const at = (x: Obj): string => `${keyOf(x)}@${x.metadata.resourceVersion}`;
  const store = new InformerStore<Obj>(
    {
      onAdd: (x) => calls.push(`add ${at(x)}`),
      onUpdate: (a, b) => calls.push(`update ${at(a)}->${b.metadata.resourceVersion}`),
      onDelete: (x) => calls.push(`delete ${at(x)}`),
      onResync: () => calls.push('resync'),
      ...extra,
    },
    (e) => errors.push(e),
  );
  return { store, calls, errors };
}

describe('informer store', () => {
  test('keyOf is namespace/name, with empty parts for a missing namespace; informer.ts re-exports it', () => {
    assert.equal(keyOf(o('a', '1', 'team')), 'team/a');
    assert.equal(keyOf({ metadata: { name: 'cluster-wide' } }), '/cluster-wide');
    assert.equal(keyOf({}), '/');
    assert.equal(keyOfFromInformer, keyOf);
  });

  test('a full list adds new objects, updates those whose resourceVersion changed, and deletes the missing ones', () => {
    const { store, calls } = recording();
    store.replace([o('a', '1'), o('b', '1'), o('c', '1')]);
    assert.deepEqual(calls, ['add ns/a@1', 'add ns/b@1', 'add ns/c@1']);
    calls.length = 0;
    store.replace([o('a', '1'), o('b', '2'), o('d', '1')]);
    assert.deepEqual(calls, ['update ns/b@1->2', 'add ns/d@1', 'delete ns/c@1']);
    assert.equal(store.size, 3);
    assert.deepEqual([...store.values()].map(keyOf).sort(), ['ns/a', 'ns/b', 'ns/d']);
    assert.equal(store.get('ns/b')?.metadata.resourceVersion, '2');
    assert.equal(store.get('ns/c'), undefined);
  });

  test('an unchanged resourceVersion is no update, and the stored copy stays (a relist transforms only what changed)', () => {
    const { store, calls } = recording();
    store.replace([o('a', '5')]);
    const first = store.get('ns/a');
    store.replace([o('a', '5', 'ns', { fresh: 'yes' })]);
    assert.deepEqual(calls, ['add ns/a@5']);
    assert.equal(store.get('ns/a'), first);
  });

  test('a fill one object at a time: each object is served as it arrives; the end deletes what the list lacked', () => {
    const { store, calls } = recording();
    store.replace([o('a', '1'), o('b', '1'), o('c', '1')]);
    calls.length = 0;
    const transformed: string[] = [];
    const transform = (x: Obj): Obj => (transformed.push(keyOf(x)), x);
    const fill = store.beginFill();
    store.filled(fill, o('b', '2'), transform);
    assert.equal(store.get('ns/b')?.metadata.resourceVersion, '2', 'served before the fill ends');
    assert.equal(store.get('ns/c')?.metadata.resourceVersion, '1', 'not deleted before the fill ends');
    store.filled(fill, o('a', '1'), transform);
    store.filled(fill, o('d', '1'), transform);
    assert.deepEqual(calls, ['update ns/b@1->2', 'add ns/d@1']);
    assert.deepEqual(transformed, ['ns/b', 'ns/d'], 'the unchanged object is not transformed again');
    store.endFill(fill);
    assert.deepEqual(calls, ['update ns/b@1->2', 'add ns/d@1', 'delete ns/c@1']);
    assert.deepEqual([...store.values()].map(keyOf).sort(), ['ns/a', 'ns/b', 'ns/d']);
  });

  test('a first fill holds nothing beyond the cache, and an object deleted by a watch event meanwhile is not deleted twice', () => {
    const { store, calls } = recording();
    store.replace([o('a', '1'), o('b', '1')]);
    calls.length = 0;
    const fill = store.beginFill();
    assert.equal(fill.unseen.size, 2);
    store.apply('DELETED', o('a', '1'));
    store.endFill(fill);
    assert.deepEqual(calls, ['delete ns/a@1', 'delete ns/b@1']);
    assert.equal(fill.unseen.size, 0);
    assert.equal(recording().store.beginFill().unseen.size, 0);
  });

  test('onResync comes only when asked for, never from a list by itself', () => {
    const { store, calls } = recording();
    store.replace([o('a', '1')]);
    store.replace([]);
    assert.deepEqual(calls, ['add ns/a@1', 'delete ns/a@1']);
    store.resynced();
    assert.deepEqual(calls, ['add ns/a@1', 'delete ns/a@1', 'resync']);
  });

  test('watch events: ADDED and MODIFIED store the transformed object; DELETED hands over the stored copy', () => {
    const { store, calls } = recording();
    const tag = (x: Obj): Obj => ({ ...x, metadata: { ...x.metadata, labels: { slim: 'yes' } } });
    store.apply('ADDED', o('a', '1'), tag);
    store.apply('MODIFIED', o('a', '2'), tag);
    store.apply('MODIFIED', o('a', '2'), tag); // a repeat: no update
    assert.deepEqual(calls, ['add ns/a@1', 'update ns/a@1->2']);
    assert.equal(store.get('ns/a')?.metadata.labels?.['slim'], 'yes');

    const deleted: Obj[] = [];
    const s2 = recording({ onDelete: (x) => deleted.push(x) });
    s2.store.apply('ADDED', o('a', '1'), tag);
    s2.store.apply('DELETED', o('a', '3'));
    assert.equal(s2.store.size, 0);
    assert.equal(deleted.length, 1);
    assert.equal(deleted[0]!.metadata.resourceVersion, '1', 'the stored (transformed) copy, not the event object');
    assert.equal(deleted[0]!.metadata.labels?.['slim'], 'yes');
  });

  test('DELETED of an object never stored hands over the event object', () => {
    const { store, calls } = recording();
    store.apply('DELETED', o('ghost', '9'));
    assert.deepEqual(calls, ['delete ns/ghost@9']);
    assert.equal(store.size, 0);
  });

  test('without a transform the event object is stored as it came', () => {
    const { store } = recording();
    const x = o('a', '1');
    store.apply('ADDED', x);
    assert.equal(store.get('ns/a'), x);
  });

  test('unchanged: the stored copy only while the resourceVersion is the same', () => {
    const { store } = recording();
    const stored = o('a', '7');
    store.replace([stored]);
    assert.equal(store.unchanged(o('a', '7')), stored);
    assert.equal(store.unchanged(o('a', '8')), undefined);
    assert.equal(store.unchanged(o('a', '7', 'other')), undefined);
    assert.equal(store.unchanged(o('b', '7')), undefined);
  });

  test('a handler that throws is reported and the rest of the list is still applied', () => {
    const boom = new Error('boom');
    const { store, calls, errors } = recording({
      onAdd: (x) => {
        if (x.metadata.name === 'b') throw boom;
        calls.push(`add ${keyOf(x)}`);
      },
      onResync: () => {
        throw boom;
      },
    });
    store.replace([o('a', '1'), o('b', '1'), o('c', '1')]);
    store.resynced();
    assert.deepEqual(calls, ['add ns/a', 'add ns/c']);
    assert.deepEqual(errors, [boom, boom]);
    assert.equal(store.size, 3, 'the object whose handler threw is stored all the same');
  });
});

describe('informer backoff', () => {
  const lowest = (): number => 0;
  const highest = (): number => 1;

  test('doubles per failure from the initial delay, in the upper half of it', () => {
    assert.equal(backoffMs(1, 250, 5_000, lowest), 125);
    assert.equal(backoffMs(1, 250, 5_000, highest), 250);
    assert.equal(backoffMs(2, 250, 5_000, lowest), 250);
    assert.equal(backoffMs(3, 250, 5_000, highest), 1_000);
    assert.equal(backoffMs(3, 250, 5_000, () => 0.5), 750);
  });

  test('is capped at the maximum however many failures', () => {
    assert.equal(backoffMs(6, 250, 5_000, highest), 5_000);
    assert.equal(backoffMs(6, 250, 5_000, lowest), 2_500);
    assert.equal(backoffMs(1_000, 250, 5_000, highest), 5_000);
    for (let f = 1; f <= 40; f++) {
      const ms = backoffMs(f, 100, 1_000);
      assert.ok(ms >= Math.min(1_000, 100 * 2 ** (f - 1)) / 2 && ms <= 1_000, `failure ${f}: ${ms}`);
    }
  });

  test('poll intervals vary by ±20%', () => {
    const near = (actual: number, expected: number): void => assert.ok(Math.abs(actual - expected) < 1e-6, `${actual} is not ${expected}`);
    near(jittered(10_000, lowest), 8_000);
    near(jittered(10_000, highest), 12_000);
    near(jittered(10_000, () => 0.5), 10_000);
    near(jittered(500, () => 0.25), 450);
  });
});

describe('informer health', () => {
  test('starts unsynced and disconnected, with no contact yet', () => {
    assert.deepEqual(new HealthBook().health, { synced: false, connected: false, lastContact: 0, failures: 0 });
  });

  test('a failure disconnects and counts; a recovery clears both and records the contact', () => {
    const b = new HealthBook();
    b.health.connected = true;
    b.failed(3, 'watch: connection reset');
    assert.equal(b.health.connected, false);
    assert.equal(b.health.failures, 3);
    assert.equal(b.health.lastError, 'watch: connection reset');
    b.recovered(1_234);
    assert.equal(b.health.connected, true);
    assert.equal(b.health.failures, 0);
    assert.equal(b.health.lastError, undefined);
    assert.equal(b.health.lastContact, 1_234);
  });

  test('warns once per outage: the first failure of a streak, not within the quiet period of the last warning', () => {
    const b = new HealthBook();
    assert.equal(b.warns(1, 1_000), true);
    assert.equal(b.warns(2, 1_100), false, 'the same streak');
    assert.equal(b.warns(5, 1_000 + WARN_QUIET_MS + 1), false, 'still the same streak, however late');
    assert.equal(b.warns(1, 1_000 + WARN_QUIET_MS), false, 'a new streak right after the last warning is the same outage');
    assert.equal(b.warns(1, 1_000 + WARN_QUIET_MS + 1), true, 'a new streak after the quiet period');
    assert.equal(b.warns(1, 1_000 + WARN_QUIET_MS + 2), false, 'the quiet period starts again from that warning');
  });

  test('the quiet period is the one given', () => {
    const b = new HealthBook(10);
    assert.equal(b.warns(1, 0), true);
    assert.equal(b.warns(1, 10), false);
    assert.equal(b.warns(1, 11), true);
  });

  test('the /readyz line: ok only when synced without failures, and says why not', () => {
    const h = (x: Partial<InformerHealth>): InformerHealth => ({ synced: true, connected: true, lastContact: 1, failures: 0, ...x });
    assert.deepEqual(readinessOf('remote/irs', h({}), true), { name: 'remote/irs', ok: true, required: true });
    assert.deepEqual(readinessOf('remote/irs', h({ synced: false }), false), { name: 'remote/irs', ok: false, required: false, detail: 'not synced' });
    assert.deepEqual(readinessOf('remote/irs', h({ synced: false, failures: 2, lastError: 'list: 403' }), true), {
      name: 'remote/irs',
      ok: false,
      required: true,
      detail: 'not synced: list: 403',
    });
    assert.deepEqual(readinessOf('remote/irs', h({ failures: 4, lastError: 'watch: ECONNRESET' }), true), {
      name: 'remote/irs',
      ok: false,
      required: true,
      detail: '4 failed attempts in a row: watch: ECONNRESET',
    });
    assert.deepEqual(readinessOf('remote/irs', h({ failures: 1 }), true), { name: 'remote/irs', ok: false, required: true, detail: '1 failed attempts in a row' });
  });

  test('an Informer reports the health it keeps, before it ever starts', () => {
    const quiet = { debug() {}, info() {}, warn() {}, error() {} } as unknown as Logger;
    const inf = new Informer<Obj>('remote/x', {} as ResourceClient<Obj>, {}, quiet);
    assert.equal(inf.synced, false);
    assert.equal(inf.size, 0);
    assert.deepEqual(inf.readiness(true), { name: 'remote/x', ok: false, required: true, detail: 'not synced' });
    assert.deepEqual(inf.health, { synced: false, connected: false, lastContact: 0, failures: 0 });
  });
});
