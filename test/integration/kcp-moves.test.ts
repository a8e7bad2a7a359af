/**
 * The kcp provider (src/remotes/kcp.ts) against a REAL sharded kcp (two
 * shards, cache server, front-proxy: src/localenv/real/kcp-sharded.ts), run
 * in this process with a sink that records what reaches the controller:
 * which shard each workspace is served from, and every add and delete.
 *
 * 1. A workspace that moves between shards. kcp v0.30.0 cannot migrate a
 *    logical cluster (migration is behind a feature gate on kcp main), so
 *    the move is STAGED, and only this part: the destination is another
 *    real workspace on the other shard (its own logical cluster), which
 *    the test's shard wrapper presents under the origin's logical cluster
 *    name (bindings, shares and connection; its requests are copies, with
 *    their own uids). Everything else is real and in the order a
 *    migration makes it: the destination's binding is ready and its
 *    objects are there first, then the origin drops the workspace — kcp
 *    deletes its objects (real DELETED events on the origin's watch), then
 *    its binding, then (its last binding gone) the origin's URL from the
 *    endpoint slice. The provider hands the workspace over and delivers no
 *    delete.
 * 2. The last binding on a shard goes (real, nothing staged): kcp deletes
 *    the requests, the binding, and drops the shard's URL from the slice;
 *    the deletes are delivered, the workspace stays served for the unbind
 *    grace, then is forgotten and the shard stopped.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { CustomObjectsApi } from '@kubernetes/client-node';
import {
  bindExport, createWorkspace, ensureNamespace, installKcpProvider, startShardedKcp,
  SHARD_LABEL, KCP_PROVIDER_PATH,
  type KcpWorkspace, type ShardedKcp,
} from '../../src/localenv/index.js';
import { KcpRemotes, type ProviderShard } from '../../src/remotes/kcp.js';
import { KcpShard, type KcpShardOptions, type ShardEvents } from '../../src/remotes/kcp-shard.js';
import type { RemoteSink } from '../../src/remotes/provider.js';
import type { RemoteSpec } from '../../src/remotes/remote.js';
import type { InformerHandlers } from '../../src/kube/informer.js';
import type { InternalRequest } from '../../src/api/types.js';
import { INTERNAL_REQUEST_KIND } from '../../src/requests/request-kind.js';
import { IR, waitFor } from './helpers.js';

const TEAM = 'team';
const GRACE_MS = 4_000;
let kcp: ShardedKcp;
/** On the root shard: where the workspace is first. */
let origin: KcpWorkspace;
/** On shard-1: where it moves (staged: presented under origin's logical cluster). */
let dest: KcpWorkspace;
let provider: KcpRemotes;
const lines: Array<Record<string, unknown> & { msg: string }> = [];

/** Records what reaches the controller. */
class Sink implements RemoteSink {
  readonly remotes = new Map<string, RemoteSpec>();
  readonly events: string[] = [];
  /** A remote of the same name replaces the one before: one name is served from one shard at a time. */
  addRemote(spec: RemoteSpec): unknown {
    this.remotes.set(spec.name, spec);
    const live = () => this.remotes.get(spec.name) === spec;
    const h: InformerHandlers<InternalRequest> = {
      onAdd: (r) => live() && this.events.push(`add ${spec.name} ${r.metadata.namespace}/${r.metadata.name} ${r.metadata.uid}`),
      onUpdate: () => undefined,
      onDelete: (r) => live() && this.events.push(`delete ${spec.name} ${r.metadata.namespace}/${r.metadata.name} ${r.metadata.uid}`),
      onResync: () => undefined,
    };
    this.events.push(`served ${spec.name} ${spec.cluster.server}`);
    spec.cache!(INTERNAL_REQUEST_KIND, h);
    return spec;
  }
  async removeRemote(name: string): Promise<boolean> {
    const had = this.remotes.delete(name);
    if (had) this.events.push(`removed ${name}`);
    return had;
  }
}
const sink = new Sink();

/**
 * THE STAGED PART: a real shard (KcpShard on shard-1's URL) whose logical
 * cluster `from` is presented to the provider as `as` — its bindings, its
 * share of the requests and its connection. Nothing else is changed.
 */
function presentedAs(url: string, events: ShardEvents, opts: KcpShardOptions, from: string, as: string): ProviderShard {
  const out = (c: string) => (c === from ? as : c);
  const into = (c: string) => (c === as ? from : c);
  let wrapper: ProviderShard;
  const shard = new KcpShard(url, { binding: (_s, c, ready) => events.binding(wrapper as never, out(c), ready), unbound: (_s, c) => events.unbound(wrapper as never, out(c)) }, opts);
  wrapper = {
    name: shard.name,
    url: shard.url,
    start: () => shard.start(),
    stop: () => shard.stop(),
    synced: () => shard.synced(),
    get isSynced() {
      return shard.isSynced;
    },
    state: () => shard.state(),
    noteState: (now?: number) => shard.noteState(now),
    readiness: () => shard.readiness(),
    readyClusters: () => shard.readyClusters().map(out),
    isReady: (c: string) => shard.isReady(into(c)),
    share: (kind: string, c: string) => shard.share(kind, into(c)),
    dropShares: (c: string) => shard.dropShares(into(c)),
    connection: (c: string) => shard.connection(into(c)),
  };
  return wrapper;
}

const admin = (ws: KcpWorkspace) => kcp.identities.admin.kubeConfig(ws.path).makeApiClient(CustomObjectsApi);
const create = (ws: KcpWorkspace, name: string) =>
  admin(ws).createNamespacedCustomObject({ ...IR, namespace: TEAM, body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name, namespace: TEAM }, spec: { request: 'sign-image' } } }) as Promise<InternalRequest>;
const unbind = (ws: KcpWorkspace) => admin(ws).deleteClusterCustomObject({ group: 'apis.kcp.io', version: 'v1alpha2', plural: 'apibindings', name: 'appstudio.redhat.com' });
const sliceUrls = async () => {
  const slice = (await kcp.identities.admin.kubeConfig(KCP_PROVIDER_PATH).makeApiClient(CustomObjectsApi).getClusterCustomObject({ group: 'apis.kcp.io', version: 'v1alpha1', plural: 'apiexportendpointslices', name: 'appstudio.redhat.com' })) as { status?: { endpoints?: Array<{ url: string }> } };
  return (slice.status?.endpoints ?? []).map((e) => e.url);
};
const logged = (msg: string, match: (l: Record<string, unknown>) => boolean = () => true, ms = 60_000) => waitFor(msg, async () => lines.find((l) => l.msg === msg && match(l)), ms, 100);
const shardHost = (name: string) => new URL(kcp.shards.find((s) => s.name === name)!.url).host;

before(async () => {
  kcp = await startShardedKcp({ shards: 2 });
  await createWorkspace(kcp, KCP_PROVIDER_PATH, 90_000, { label: SHARD_LABEL, value: 'root' });
  await installKcpProvider(kcp);
  [origin, dest] = await Promise.all([
    createWorkspace(kcp, 'root:origin', 90_000, { label: SHARD_LABEL, value: 'root' }),
    createWorkspace(kcp, 'root:dest', 90_000, { label: SHARD_LABEL, value: 'shard-1' }),
  ]);
  await bindExport(kcp, origin.path);
  await ensureNamespace(kcp.identities.admin.kubeConfig(origin.path), TEAM);
  const out = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l));
      done();
    },
  });
  const shard1 = kcp.shards.find((s) => s.name === 'shard-1')!;
  provider = new KcpRemotes(sink, {
    kubeconfig: kcp.identities.controller.kubeConfig(KCP_PROVIDER_PATH),
    exportName: 'appstudio.redhat.com',
    log: pino({ level: 'debug' }, out),
    sliceRefreshMs: 1_000,
    pathRefreshMs: 5_000,
    unbindGraceMs: GRACE_MS,
    shardFactory: (url, events, opts) => (new URL(url).host === new URL(shard1.url).host ? presentedAs(url, events, opts, dest.cluster, origin.cluster) : new KcpShard(url, events, opts)),
  });
  await provider.start();
}, { timeout: 900_000 });

after(async () => {
  await provider?.stop();
  await kcp?.stop();
});

test('a workspace that moves to another shard (destination staged, see the top): served from the origin until it drops it, then handed over; no delete delivered, served from one shard at a time', { timeout: 300_000 }, async () => {
  const lc = origin.cluster;
  await create(origin, 'one');
  await create(origin, 'two');
  await waitFor('the origin\'s requests served', async () => sink.events.filter((e) => e.startsWith(`add ${lc} ${TEAM}/`)).length === 2, 60_000);
  assert.ok(sink.remotes.get(lc)!.cluster.server.startsWith(kcp.shards[0]!.url), 'served from the root shard');

  // The destination first: its binding ready and the objects there.
  await bindExport(kcp, dest.path);
  await ensureNamespace(kcp.identities.admin.kubeConfig(dest.path), TEAM);
  await waitFor('create through the bound API', async () => !!(await create(dest, 'one')), 60_000, 1_000);
  await create(dest, 'two');
  const twice = await logged('kcp: a workspace is bound on two shards; served from the first until it drops it', (l) => l.cluster === lc);
  assert.equal(twice.alsoOn, shardHost('shard-1'));
  assert.ok(sink.remotes.get(lc)!.cluster.server.startsWith(kcp.shards[0]!.url), 'still served from the origin while it has it');

  // The origin drops it: deleting its binding makes kcp delete its objects there (real DELETED events), then the binding.
  const mark = sink.events.length;
  await unbind(origin);
  const moved = await logged('kcp: a workspace is served from another shard now (handed over; no delete delivered for it)', (l) => l.cluster === lc);
  assert.equal(moved.to, shardHost('shard-1'));
  await waitFor('the destination\'s requests', async () => sink.events.slice(mark).filter((e) => e.startsWith(`add ${lc} ${TEAM}/`)).length === 2, 30_000);
  const destUrl = (await sliceUrls()).find((u) => new URL(u).host === shardHost('shard-1'));
  assert.equal(sink.remotes.get(lc)!.cluster.server, `${destUrl!.replace(/\/+$/, '')}/clusters/${dest.cluster}`, 'served from the destination, through its own logical cluster (staged)');
  // The origin's URL leaves the slice (its last binding went): nothing changes for the workspace.
  await waitFor('root\'s URL gone from the slice', async () => !(await sliceUrls()).some((u) => u.startsWith(kcp.shards[0]!.url)), 60_000, 500);
  await logged('kcp: shard endpoint removed from the endpoint slice; its workspaces are handed over or served for the unbind grace, then forgotten', (l) => l.shard === shardHost('root'));
  await new Promise((r) => setTimeout(r, GRACE_MS + 1_000));
  assert.deepEqual(sink.events.filter((e) => e.startsWith('delete ')), [], 'no delete delivered');
  assert.ok(!sink.events.includes(`removed ${lc}`), 'not forgotten');
  assert.ok(sink.remotes.get(lc)!.cluster.server.endsWith(`/clusters/${dest.cluster}`), 'served from the destination');
  assert.deepEqual(provider.clusters(), [lc]);
});

test('the last binding on a shard goes (real): the deletes are delivered, kcp drops the URL, the workspace stays served for the unbind grace, then is forgotten and the shard stopped', { timeout: 300_000 }, async () => {
  const lc = origin.cluster; // dest, presented as origin's cluster since the move
  await create(dest, 'three');
  await waitFor('served', async () => sink.events.some((e) => e.startsWith(`add ${lc} ${TEAM}/three`)), 30_000);
  const mark = sink.events.length;
  await unbind(dest);
  await waitFor('shard-1\'s URL gone from the slice (kcp drops a shard without bindings)', async () => (await sliceUrls()).length === 0, 60_000, 500);
  const removed = await logged('kcp: shard endpoint removed from the endpoint slice; its workspaces are handed over or served for the unbind grace, then forgotten', (l) => l.shard === shardHost('shard-1'));
  const deletes = sink.events.slice(mark).filter((e) => e.startsWith('delete '));
  assert.deepEqual(deletes.map((e) => e.split(' ')[2]).sort(), [`${TEAM}/one`, `${TEAM}/three`, `${TEAM}/two`], 'each request\'s delete delivered once');
  const forgotten = await logged('kcp: workspace forgotten', (l) => l.cluster === lc, 30_000);
  assert.ok(Number(forgotten.time) - Number(removed.time) > 0, 'forgotten after the URL left');
  const unboundAt = Number(lines.find((l) => l.msg === 'kcp: a workspace unbound the export (or was deleted); its requests are gone, it is forgotten after the grace period' && l.cluster === lc)?.time ?? removed.time);
  assert.ok(Number(forgotten.time) - Math.min(unboundAt, Number(removed.time)) >= GRACE_MS - 200, 'through the unbind grace, not at once');
  assert.ok(sink.events.includes(`removed ${lc}`));
  await waitFor('shard-1 stopped (no readiness line)', async () => !provider.readiness().some((c) => c.name.endsWith(`/shard/${shardHost('shard-1')}`)), 30_000);
  assert.deepEqual(provider.clusters(), []);
});
