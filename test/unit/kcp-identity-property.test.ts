/**
 * On kcp a request's identity is (logical cluster, namespace, name): a
 * shard's wildcard watch (`<url>/clusters/*`) shows every workspace of the
 * shard, and two workspaces may each hold `team/collide` — and every
 * workspace's binding of the export has the export's name. (issue 43)
 *
 * The property drives the REAL InformerStore, keyed as the shard keys it
 * (kcpKeyOf), with the REAL routing of a KcpShard into its per-workspace
 * Shares and into its provider's binding events, through random
 * interleavings of add, update, delete, relist (a full list at once, or one
 * object at a time as pages and streamed lists fill) and reconnect (a watch
 * that broke, events missed, then a relist), across three logical clusters
 * that reuse the same namespaces and names on one shard. The model is a Map
 * keyed by cluster|namespace/name. After every step the store's contents,
 * each Share's contents, the clusters the shard calls bound, and the exact
 * handler calls (onAdd/onUpdate/onDelete/onResync on which workspace's Share,
 * with which workspace's object; binding/unbound for which workspace) must be
 * the model's. It counts the collisions it exercised (an event for a
 * namespace/name that ≥2 clusters hold at that moment) and fails if there
 * were none of a kind.
 *
 * The same property with the namespace/name key (the default, right for one
 * cluster) must fail; a deterministic test keeps the bad interleaving. The
 * early lane and the informer's early-lane bookkeeping key the same way.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import pino from 'pino';
import { KubeConfig } from '@kubernetes/client-node';
import type { InternalRequest } from '../../src/api/types.js';
import type { KubeObject, ResourceClient } from '../../src/kube/client.js';
import { InformerStore, keyOf, type KeyFunction } from '../../src/kube/informer-store.js';
import { EarlyLane } from '../../src/kube/informer-early.js';
import { Informer } from '../../src/kube/informer.js';
import { KCP_CLUSTER_ANNOTATION, KcpShard, kcpKeyOf, type Share, type ShardEvents, type SlimBinding } from '../../src/remotes/kcp-shard.js';
import { INTERNAL_REQUEST_KIND } from '../../src/requests/request-kind.js';
import { slimRequest } from '../../src/requests/cached-requests.js';

const numRuns = Number(process.env['FC_NUM_RUNS'] ?? 400);
const seed = process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : undefined;
const log = pino({ level: process.env['TEST_LOG'] ?? 'silent' });
const KIND = INTERNAL_REQUEST_KIND;
const EXPORT = 'appstudio.redhat.com';
/** Logical cluster names as kcp makes them. */
const CLUSTERS = ['2ye1ioskk7w06ecj', '1d3b9kw0pv5i0a7x', '3fwv9q1n2u8rkz0e'] as const;
/** Namespaces and names every cluster reuses. */
const PLACES = [
  ['team', 'collide'],
  ['team', 'x'],
  ['other', 'collide'],
] as const;

// ---------------------------------------------------------------- objects as the virtual workspace shows them

function request(cluster: string, ns: string, name: string, uid: string, rv: number): InternalRequest {
  return {
    apiVersion: 'appstudio.redhat.com/v1alpha1',
    kind: 'InternalRequest',
    metadata: { name, namespace: ns, uid, resourceVersion: String(rv), annotations: { [KCP_CLUSTER_ANNOTATION]: cluster } },
    spec: { request: 'sign' },
  };
}

function binding(cluster: string, uid: string, rv: number, ready: boolean): SlimBinding {
  return { metadata: { name: EXPORT, uid, resourceVersion: String(rv), annotations: { [KCP_CLUSTER_ANNOTATION]: cluster } }, status: { phase: ready ? 'Bound' : 'Binding' } };
}

const clusterOf = (o: KubeObject): string => o.metadata?.annotations?.[KCP_CLUSTER_ANNOTATION] ?? '?';
/** An object as the calls show it: its cluster (annotation), namespace/name, uid and resourceVersion. */
const desc = (o: KubeObject): string => `${clusterOf(o)} ${keyOf(o)} ${o.metadata?.uid}@${o.metadata?.resourceVersion}`;

/** What the informer's watch loop hands the store: a fresh object, transformed as the shard transforms requests. */
const fresh = <T extends KubeObject>(o: T): T => structuredClone(o);
const transformRequest = (r: InternalRequest): InternalRequest => slimRequest(r);

// ---------------------------------------------------------------- the real store and the real shard routing

interface Harness {
  shard: KcpShard;
  requests: InformerStore<InternalRequest>;
  bindings: InformerStore<SlimBinding>;
  shares: Map<string, Share>;
  /** Every handler call, in order, as `add|update|delete|resync <share's cluster> …` and `binding|unbound <cluster> …`. */
  calls: string[];
  errors: unknown[];
}

/** A KcpShard (not started: no connection) whose routing feeds stores keyed by `key`; every cluster's share is served (its handlers record). */
function harness(key: KeyFunction): Harness {
  const calls: string[] = [];
  const errors: unknown[] = [];
  const events: ShardEvents = {
    binding: (_s, cluster, ready) => calls.push(`binding ${cluster} ${ready}`),
    unbound: (_s, cluster) => calls.push(`unbound ${cluster}`),
  };
  const shard = new KcpShard(`https://shard-1.kcp.test:6443/services/apiexport/provider/${EXPORT}`, events, {
    exportName: EXPORT,
    kinds: [KIND],
    log,
    kubeconfigAt: () => {
      throw new Error('no connection in this test');
    },
  });
  const all = { name: `kcp/${EXPORT}/shard-1/internalrequests`, synced: true };
  const shares = new Map<string, Share>();
  shard.caches.set(KIND.kind, { all: all as never, shares });
  for (const cluster of CLUSTERS) {
    shard.share(KIND.kind, cluster).handlers = {
      onAdd: (r) => calls.push(`add ${cluster} ${desc(r)}`),
      onUpdate: (o, n) => calls.push(`update ${cluster} ${desc(o)} -> ${desc(n)}`),
      onDelete: (r) => calls.push(`delete ${cluster} ${desc(r)}`),
      onResync: () => calls.push(`resync ${cluster}`),
    };
  }
  const requests = new InformerStore<InternalRequest>(shard.requestHandlers(KIND, shares), (e) => errors.push(e), key);
  const bindings = new InformerStore<SlimBinding>(shard.bindingHandlers(), (e) => errors.push(e), key);
  return { shard, requests, bindings, shares, calls, errors };
}

// ---------------------------------------------------------------- the model

type Target = 'requests' | 'bindings';
type Cmd =
  | { t: 'put'; target: Target; c: number; p: number; ready: boolean }
  | { t: 'delete'; target: Target; c: number; p: number }
  | { t: 'drop'; target: Target }
  | { t: 'relist'; target: Target; how: 'replace' | 'pages'; shuffle: number };

const cmdArb: fc.Arbitrary<Cmd> = (() => {
  const target = fc.constantFrom<Target>('requests', 'requests', 'requests', 'bindings');
  const c = fc.nat(CLUSTERS.length - 1);
  const p = fc.nat(PLACES.length - 1);
  return fc.oneof(
    { weight: 6, arbitrary: fc.record({ t: fc.constant('put' as const), target, c, p, ready: fc.boolean() }) },
    { weight: 3, arbitrary: fc.record({ t: fc.constant('delete' as const), target, c, p }) },
    { weight: 2, arbitrary: fc.record({ t: fc.constant('drop' as const), target }) },
    { weight: 2, arbitrary: fc.record({ t: fc.constant('relist' as const), target, how: fc.constantFrom('replace' as const, 'pages' as const), shuffle: fc.nat() }) },
  );
})();

/** A run: up to 80 steps, lengths spread over the whole range (long runs build the collisions up). */
const commandsArb = fc.array(cmdArb, { minLength: 1, maxLength: 80, size: 'max' });

/** Counts of what a run exercised. */
interface Counts {
  steps: number;
  /** Events (watch events delivered, objects a relist changed or deleted) for a namespace/name that ≥2 clusters held at that moment. */
  collisions: { add: number; update: number; delete: number; relistChange: number; relistDelete: number; bindingDelete: number };
  deliveredEvents: number;
  missedEvents: number;
  relists: number;
  /** Relists after a broken watch that missed at least one event. */
  reconnects: number;
}

function newCounts(): Counts {
  return { steps: 0, collisions: { add: 0, update: 0, delete: 0, relistChange: 0, relistDelete: 0, bindingDelete: 0 }, deliveredEvents: 0, missedEvents: 0, relists: 0, reconnects: 0 };
}

function addCounts(a: Counts, b: Counts): void {
  a.steps += b.steps;
  a.deliveredEvents += b.deliveredEvents;
  a.missedEvents += b.missedEvents;
  a.relists += b.relists;
  a.reconnects += b.reconnects;
  for (const k of Object.keys(a.collisions) as Array<keyof Counts['collisions']>) a.collisions[k] += b.collisions[k];
}

/** A deterministic shuffle (the list's order is the server's business). */
function shuffled<T>(xs: T[], seed: number): T[] {
  const out = [...xs];
  let s = seed >>> 0 || 1;
  for (let i = out.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** One resource's side: what the server has, what the store should hold (in Map order, as the store keeps it), the watch's state. */
class Side<T extends KubeObject> {
  /** true identity (cluster|namespace/name) → the object on the server. */
  readonly server = new Map<string, T>();
  /** true identity → the object the store should hold. */
  readonly view = new Map<string, T>();
  up = true;
  missed = 0;

  static id(o: KubeObject): string {
    return `${clusterOf(o)}|${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
  }

  /** Clusters that hold the namespace/name of o in the view (the store). */
  holders(o: KubeObject): Set<string> {
    const out = new Set<string>();
    for (const v of this.view.values()) if (keyOf(v) === keyOf(o)) out.add(clusterOf(v));
    return out;
  }

  collides(o: KubeObject): boolean {
    const h = this.holders(o);
    h.add(clusterOf(o));
    return h.size >= 2;
  }
}

/** Runs the commands against the harness and the model; throws (assert) at the first step where they differ. */
function run(cmds: Cmd[], key: KeyFunction): Counts {
  const h = harness(key);
  const counts = newCounts();
  const sides = { requests: new Side<InternalRequest>(), bindings: new Side<SlimBinding>() };
  let rv = 100; // one etcd per shard: one revision sequence for every workspace's objects
  let uids = 0;

  /** The calls a request store's handlers make through the shard, for one object. */
  const reqCall = {
    added: (r: InternalRequest) => `add ${clusterOf(r)} ${desc(r)}`,
    updated: (o: InternalRequest, n: InternalRequest) => `update ${clusterOf(n)} ${desc(o)} -> ${desc(n)}`,
    deleted: (r: InternalRequest) => `delete ${clusterOf(r)} ${desc(r)}`,
  };
  const bindingCall = {
    added: (b: SlimBinding) => `binding ${clusterOf(b)} ${b.status?.phase === 'Bound'}`,
    updated: (_o: SlimBinding, n: SlimBinding) => `binding ${clusterOf(n)} ${n.status?.phase === 'Bound'}`,
    // One binding of the export per workspace here: its delete unbinds the workspace.
    deleted: (b: SlimBinding) => `unbound ${clusterOf(b)}`,
  };

  for (const [i, cmd] of cmds.entries()) {
    counts.steps++;
    h.calls.length = 0;
    const expected: string[] = [];
    const side: Side<KubeObject> = sides[cmd.target] as Side<KubeObject>;
    const store = (cmd.target === 'requests' ? h.requests : h.bindings) as InformerStore<KubeObject>;
    const call = (cmd.target === 'requests' ? reqCall : bindingCall) as { added(o: KubeObject): string; updated(o: KubeObject, n: KubeObject): string; deleted(o: KubeObject): string };
    const transform = cmd.target === 'requests' ? (transformRequest as unknown as (o: KubeObject) => KubeObject) : undefined;

    /** A watch event the store gets (when the watch is up), and what the model expects of it. */
    const deliver = (type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObject) => {
      if (!side.up) {
        side.missed++;
        counts.missedEvents++;
        return;
      }
      counts.deliveredEvents++;
      const id = Side.id(obj);
      const collides = side.collides(obj);
      const old = side.view.get(id);
      if (type === 'DELETED') {
        if (collides) {
          counts.collisions.delete++;
          if (cmd.target === 'bindings') counts.collisions.bindingDelete++;
        }
        side.view.delete(id);
        expected.push(call.deleted(old ?? obj));
      } else {
        if (collides) old ? counts.collisions.update++ : counts.collisions.add++;
        side.view.set(id, obj);
        if (!old) expected.push(call.added(obj));
        else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) expected.push(call.updated(old, obj));
      }
      store.apply(type, fresh(obj), transform);
    };

    if (cmd.t === 'put' || cmd.t === 'delete') {
      const cluster = CLUSTERS[cmd.c]!;
      const [ns, name] = cmd.target === 'requests' ? PLACES[cmd.p]! : (['', EXPORT] as const);
      const id = `${cluster}|${ns}/${name}`;
      const was = side.server.get(id);
      if (cmd.t === 'put') {
        const uid = was?.metadata?.uid ?? `uid-${++uids}`;
        const obj = cmd.target === 'requests' ? request(cluster, ns, name, uid, ++rv) : binding(cluster, uid, ++rv, cmd.ready);
        side.server.set(id, obj);
        deliver(was ? 'MODIFIED' : 'ADDED', obj);
      } else if (was) {
        side.server.delete(id);
        // A DELETED event carries the object at its deletion's revision.
        const gone = structuredClone(was);
        gone.metadata!.resourceVersion = String(++rv);
        deliver('DELETED', gone);
      }
    } else if (cmd.t === 'drop') {
      side.up = false;
    } else {
      counts.relists++;
      if (side.missed > 0) counts.reconnects++;
      side.up = true;
      side.missed = 0;
      const listed = shuffled([...side.server.values()], cmd.shuffle);
      // The model of a full list: adds, updates (resourceVersion changed), then deletes what it lacked, in the store's order.
      const unseen = new Set(side.view.keys());
      for (const obj of listed) {
        const id = Side.id(obj);
        unseen.delete(id);
        const old = side.view.get(id);
        if (old && old.metadata?.resourceVersion === obj.metadata?.resourceVersion) continue;
        if (side.collides(obj)) counts.collisions.relistChange++;
        side.view.set(id, obj);
        expected.push(old ? call.updated(old, obj) : call.added(obj));
      }
      for (const id of unseen) {
        const old = side.view.get(id)!;
        if (side.collides(old)) counts.collisions.relistDelete++;
        side.view.delete(id);
        expected.push(call.deleted(old));
      }
      if (cmd.target === 'requests') for (const c of CLUSTERS) expected.push(`resync ${c}`);
      // The store, as the informer fills it.
      if (cmd.how === 'replace') store.replace(listed.map(fresh).map((o) => (transform ? transform(o) : o)));
      else {
        const fill = store.beginFill();
        for (const obj of listed) store.filled(fill, fresh(obj), transform);
        store.endFill(fill);
      }
      store.resynced();
    }

    const at = `step ${i} ${JSON.stringify(cmd)}`;
    assert.deepEqual(h.errors, [], `${at}: no handler threw`);
    assert.deepEqual(h.calls, expected, `${at}: the handler calls`);
    // The store holds each cluster's own objects.
    for (const t of ['requests', 'bindings'] as const) {
      const s = t === 'requests' ? h.requests : h.bindings;
      assert.deepEqual([...(s.values() as IterableIterator<KubeObject>)].map(desc).sort(), [...sides[t].view.values()].map(desc).sort(), `${at}: the ${t} store's contents`);
    }
    // Each workspace's share holds that workspace's requests, by namespace/name.
    for (const c of CLUSTERS) {
      const share = h.shares.get(c)!;
      const got = [...share.items].map(([k, r]) => `${k} ${desc(r)}`).sort();
      const want = [...sides.requests.view.values()].filter((r) => clusterOf(r) === c).map((r) => `${keyOf(r)} ${desc(r)}`).sort();
      assert.deepEqual(got, want, `${at}: the share of ${c}`);
    }
    // The workspaces the shard calls bound (ready) are those whose binding the store holds as Bound.
    const ready = [...sides.bindings.view.values()].filter((b) => b.status?.phase === 'Bound').map(clusterOf).sort();
    assert.deepEqual(h.shard.readyClusters().sort(), ready, `${at}: the ready workspaces`);
  }
  return counts;
}

function summary(c: Counts): string {
  const k = c.collisions;
  return (
    `${c.steps} steps, ${c.deliveredEvents} watch events delivered, ${c.missedEvents} missed, ${c.relists} relists (${c.reconnects} reconnects after missed events); ` +
    `collisions (the namespace/name held by ≥2 clusters at the event): add ${k.add}, update ${k.update}, delete ${k.delete} (of bindings ${k.bindingDelete}), relist change ${k.relistChange}, relist delete ${k.relistDelete}`
  );
}

describe('kcp identity: (logical cluster, namespace, name)', () => {
  test('kcpKeyOf is kcp\'s cluster|namespace/name (cluster|/name when cluster-scoped; the empty cluster without the annotation)', () => {
    assert.equal(kcpKeyOf(request('2ye1ioskk7w06ecj', 'team', 'collide', 'u', 1)), '2ye1ioskk7w06ecj|team/collide');
    assert.equal(kcpKeyOf(binding('2ye1ioskk7w06ecj', 'u', 1, true)), `2ye1ioskk7w06ecj|/${EXPORT}`);
    assert.equal(kcpKeyOf({ metadata: { name: 'collide', namespace: 'team' } }), '|team/collide');
    assert.notEqual(kcpKeyOf(request('a', 'team', 'collide', 'u', 1)), kcpKeyOf(request('b', 'team', 'collide', 'u', 1)));
    // Stable under the shard's transform (a finished request's record keeps the annotation).
    const finished = request('a', 'team', 'collide', 'u', 1);
    finished.status = { conditions: [{ type: 'Succeeded', status: 'True', reason: 'Succeeded', lastTransitionTime: '2026-11-26T00:00:00Z' }], completionTime: '2026-11-26T00:00:00Z' } as never;
    assert.equal(kcpKeyOf(slimRequest(structuredClone(finished))), kcpKeyOf(finished));
    // Elsewhere (one cluster) the store keys by namespace/name, as before.
    assert.equal(new InformerStore({}, () => undefined).keyOf, keyOf);
    assert.equal(new InformerStore({}, () => undefined, kcpKeyOf).keyOf, kcpKeyOf);
  });

  test('property: the real store and the shard\'s routing match a model keyed by cluster|namespace/name, through add, update, delete, relist and reconnect', () => {
    const total = newCounts();
    fc.assert(
      fc.property(commandsArb, (cmds) => {
        addCounts(total, run(cmds, kcpKeyOf));
      }),
      { numRuns, ...(seed !== undefined ? { seed } : {}) },
    );
    console.log(`property kcp identity (${numRuns} runs): ${summary(total)}`);
    const k = total.collisions;
    assert.ok(k.add > 0 && k.update > 0 && k.delete > 0 && k.bindingDelete > 0 && k.relistChange > 0 && k.relistDelete > 0, `every kind of collision exercised: ${summary(total)}`);
    assert.ok(total.reconnects > 0, 'reconnects after missed events exercised');
  });

  test('the same property with the namespace/name key (one cluster\'s) fails: the model catches the bug', () => {
    const details = fc.check(
      fc.property(commandsArb, (cmds) => {
        run(cmds, keyOf);
      }),
      { numRuns, ...(seed !== undefined ? { seed } : {}) },
    );
    assert.equal(details.failed, true, 'namespace/name keys pass a model of per-cluster identity');
    const why = details.errorInstance instanceof Error ? details.errorInstance.message.split('\n')[0] : String(details.errorInstance);
    console.log(`property kcp identity with the namespace/name key: fails after ${details.numRuns} run(s); shrunk to ${JSON.stringify(details.counterexample?.[0])}: ${why}`);
  });

  test('the bad interleaving: A and B on one shard each create team/collide, A deletes it — A\'s share gets A\'s delete, B keeps its request', () => {
    const [A, B] = [CLUSTERS[0], CLUSTERS[1]];
    const steps = (h: Harness) => {
      h.requests.apply('ADDED', request(A, 'team', 'collide', 'uid-a', 101));
      h.requests.apply('ADDED', request(B, 'team', 'collide', 'uid-b', 102));
      h.calls.length = 0;
      h.requests.apply('DELETED', request(A, 'team', 'collide', 'uid-a', 103));
    };
    const good = harness(kcpKeyOf);
    steps(good);
    assert.deepEqual(good.calls, [`delete ${A} ${A} team/collide uid-a@101`]);
    assert.deepEqual([...good.shares.get(A)!.items.keys()], []);
    assert.equal(good.shares.get(B)!.items.get('team/collide')?.metadata.uid, 'uid-b');
    assert.deepEqual([...good.requests.values()].map(desc), [`${B} team/collide uid-b@102`]);

    // namespace/name: B's ADDED replaced A's entry (an "update" from A's object to B's, on B's share), and A's
    // DELETED hands B's stored copy to B's share: B's request looks deleted, A's is never deleted.
    const bad = harness(keyOf);
    steps(bad);
    assert.deepEqual(bad.calls, [`delete ${B} ${B} team/collide uid-b@102`]);
    assert.equal(bad.shares.get(A)!.items.get('team/collide')?.metadata.uid, 'uid-a', 'A\'s request stays, its run is never cancelled');
    assert.equal(bad.shares.get(B)!.items.size, 0);
  });

  test('the bindings: every workspace\'s binding has the export\'s name; A unbinding unbinds A, not B', () => {
    const [A, B] = [CLUSTERS[0], CLUSTERS[1]];
    const steps = (h: Harness) => {
      h.bindings.apply('ADDED', binding(A, 'ba', 101, true));
      h.bindings.apply('ADDED', binding(B, 'bb', 102, true));
      h.calls.length = 0;
      h.bindings.apply('DELETED', binding(A, 'ba', 103, true));
    };
    const good = harness(kcpKeyOf);
    steps(good);
    assert.deepEqual(good.calls, [`unbound ${A}`]);
    assert.deepEqual(good.shard.readyClusters(), [B]);
    const bad = harness(keyOf);
    steps(bad);
    assert.deepEqual(bad.calls, [`unbound ${B}`], 'with namespace/name keys the other workspace is unbound');
    assert.deepEqual(bad.shard.readyClusters(), [A]);
  });

  test('a relist after missed events (reconnect) deletes the one workspace\'s request that went, not the other\'s', () => {
    const [A, B] = [CLUSTERS[0], CLUSTERS[1]];
    const h = harness(kcpKeyOf);
    h.requests.replace([request(A, 'team', 'collide', 'uid-a', 101), request(B, 'team', 'collide', 'uid-b', 102)]);
    h.calls.length = 0;
    // A's delete was missed (the watch broke); the relist lacks it.
    const fill = h.requests.beginFill();
    h.requests.filled(fill, request(B, 'team', 'collide', 'uid-b', 102));
    h.requests.endFill(fill);
    assert.deepEqual(h.calls, [`delete ${A} ${A} team/collide uid-a@101`]);
    assert.equal(h.shares.get(B)!.items.get('team/collide')?.metadata.uid, 'uid-b');
  });

  test('a started shard keys its wildcard caches (every request kind and the APIBindings) by kcpKeyOf', async () => {
    const events: ShardEvents = { binding: () => undefined, unbound: () => undefined };
    const kubeconfigAt = (server: string) => {
      const kc = new KubeConfig();
      kc.loadFromOptions({ clusters: [{ name: 'c', server, skipTLSVerify: true }], users: [{ name: 'u', token: 't' }], contexts: [{ name: 'c', cluster: 'c', user: 'u' }], currentContext: 'c' });
      return kc;
    };
    // Nothing listens there: the caches retry quietly until stopped.
    const shard = new KcpShard(`https://127.0.0.1:9/services/apiexport/provider/${EXPORT}`, events, { exportName: EXPORT, kinds: [KIND], log, kubeconfigAt, informer: { backoffMaxMs: 50 } });
    await shard.start();
    try {
      const keyOfInformer = (i: unknown) => (i as { keyOf: KeyFunction }).keyOf;
      assert.equal(keyOfInformer(shard.caches.get(KIND.kind)!.all), kcpKeyOf);
      assert.equal(keyOfInformer((shard as unknown as { bindings: unknown }).bindings), kcpKeyOf);
    } finally {
      await shard.stop();
    }
  });
});

// ---------------------------------------------------------------- the early lane and the informer's bookkeeping of it

type WatchCallback = (type: string, obj: never) => void;

/** A ResourceClient without a server: lists give `listed` (per field selector), watches hand their callbacks to the test. */
function fakeClient<T extends KubeObject>(listed: (fieldSelector: string | undefined) => T[]) {
  const watches: Array<{ params: Record<string, unknown>; onEvent: WatchCallback }> = [];
  const client = {
    path: () => '/apis/appstudio.redhat.com/v1alpha1/internalrequests',
    list: async (_ns: string | undefined, opts: { fieldSelector?: string; each?: (o: T) => void }) => {
      const items = listed(opts.fieldSelector).map(fresh);
      if (opts.each) items.forEach((o) => opts.each!(o));
      return { items: opts.each ? [] : items, resourceVersion: '200' };
    },
    cluster: {
      name: 'remote',
      remote: 'kcp',
      watch: async (_path: string, params: Record<string, unknown>, onEvent: WatchCallback, onDone: (err?: unknown) => void) => {
        const ac = new AbortController();
        ac.signal.addEventListener('abort', () => onDone());
        watches.push({ params, onEvent });
        return ac;
      },
    },
  };
  return { client: client as unknown as ResourceClient<T>, watches };
}

async function until<T>(what: string, f: () => T | undefined | false, ms = 2_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

describe('the early lane keys by the informer\'s key function', () => {
  const [A, B] = [CLUSTERS[0], CLUSTERS[1]];

  for (const [name, key, leftUid] of [
    ['cluster|namespace/name: A\'s delete hands over A\'s copy', kcpKeyOf, 'uid-a'],
    ['namespace/name (one cluster\'s key): A\'s delete would hand over B\'s copy', keyOf, 'uid-b'],
  ] as const) {
    test(name, async () => {
      const { client, watches } = fakeClient<InternalRequest>(() => [request(A, 'team', 'collide', 'uid-a', 150), request(B, 'team', 'collide', 'uid-b', 151)]);
      const left: InternalRequest[] = [];
      const lane = new EarlyLane<InternalRequest>('t/early', client, { fieldSelector: 'status.completionTime=', keyOf: key }, { seen: () => undefined, left: (o) => left.push(o) }, log);
      lane.start();
      try {
        const w = await until('the lane\'s watch', () => watches[0]);
        if (key === kcpKeyOf) {
          assert.equal(lane.size, 2);
          assert.equal(lane.get(kcpKeyOf(request(A, 'team', 'collide', '', 0)))?.metadata.uid, 'uid-a');
          assert.equal(lane.get(kcpKeyOf(request(B, 'team', 'collide', '', 0)))?.metadata.uid, 'uid-b');
        } else assert.equal(lane.size, 1);
        w.onEvent('DELETED', request(A, 'team', 'collide', 'uid-a', 160) as never);
        assert.deepEqual(left.map((o) => o.metadata.uid), [leftUid]);
      } finally {
        lane.stop();
      }
    });
  }

  test('an informer whose lane showed A\'s team/collide ahead of its list still stores B\'s team/collide from the list', async () => {
    for (const [key, bStored] of [
      [kcpKeyOf, true],
      [keyOf, false],
    ] as const) {
      // The lane lists A's request at revision 170; the full list (an older snapshot) has A's at 120 and B's at 130.
      const { client, watches } = fakeClient<InternalRequest>((fs) => (fs ? [request(A, 'team', 'collide', 'uid-a', 170)] : []));
      const added: string[] = [];
      const inf = new Informer<InternalRequest>('kcp/t/internalrequests', client, { onAdd: (r) => added.push(desc(r)) }, log, { earlySelector: 'status.completionTime=', keyOf: key });
      inf.start();
      try {
        await until('the lane and the streamed list', () => watches.some((w) => w.params['sendInitialEvents']) && added.length > 0);
        const list = watches.find((w) => w.params['sendInitialEvents'])!;
        list.onEvent('ADDED', request(A, 'team', 'collide', 'uid-a', 120) as never);
        list.onEvent('ADDED', request(B, 'team', 'collide', 'uid-b', 130) as never);
        list.onEvent('BOOKMARK', { metadata: { resourceVersion: '180', annotations: { 'k8s.io/initial-events-end': 'true' } } } as never);
        assert.ok(inf.synced);
        const bKey = key(request(B, 'team', 'collide', '', 0));
        if (bStored) {
          assert.deepEqual(added, [`${A} team/collide uid-a@170`, `${B} team/collide uid-b@130`]);
          assert.equal(inf.get(bKey)?.metadata.uid, 'uid-b');
          assert.equal(inf.get(key(request(A, 'team', 'collide', '', 0))), undefined, 'A\'s older copy waits for the watch to reach the lane\'s revision');
        } else {
          assert.deepEqual(added, [`${A} team/collide uid-a@170`], 'namespace/name: B\'s request is taken for A\'s older copy and not stored');
        }
      } finally {
        await inf.stop();
      }
    }
  });
});
