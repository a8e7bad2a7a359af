/**
 * The kcp provider's decisions (src/remotes/kcp.ts), with shards made by
 * the test (what each shard sees is driven by hand, as kcp would change it)
 * and a real HTTP server for what the provider reads itself (the endpoint
 * slice, the parents' Workspaces), through the project's client:
 *
 * - moves and removals: a workspace is served from one shard at a time and
 *   handed over when that shard drops it while another has it ready; no
 *   delete is delivered while another shard holds it; a URL that leaves the
 *   slice sends its workspaces through the unbind grace;
 * - a workspace whose path cannot be read is served held (its requests wait
 *   in phase WaitingForWorkspace, never Rejected), shown on /readyz and in
 *   the metrics, and the parents are read again with backoff;
 * - every call is bounded by the request timeout; slice reads never
 *   overlap; a shard whose start fails is started again with backoff and is
 *   down meanwhile.
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { KubeConfig } from '@kubernetes/client-node';
import { KcpRemotes, type ProviderShard } from '../../src/remotes/kcp.js';
import { Share, type ShardEvents } from '../../src/remotes/kcp-shard.js';
import type { RemoteSink } from '../../src/remotes/provider.js';
import type { RemoteSpec, RequestCache } from '../../src/remotes/remote.js';
import { Cluster } from '../../src/kube/client.js';
import type { InformerHandlers, ReadinessCheck } from '../../src/kube/informer.js';
import type { InternalRequest } from '../../src/api/types.js';
import { INTERNAL_REQUEST_KIND } from '../../src/requests/request-kind.js';
import { decide, type Action } from '../../src/controller/decide.js';
import { ANNOTATION_ON_REVOKE } from '../../src/tekton/pipelinerun.js';
import { assertPhase, config, observation, pipelineRun, request, runningStatus } from './fixtures.js';

const KIND = INTERNAL_REQUEST_KIND.kind;
const EXPORT = 'appstudio.redhat.com';
const log = pino({ level: process.env['TEST_LOG'] ?? 'silent' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, f: () => T | undefined | false, ms = 3_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

function req(cluster: string, name: string, ns = 'team'): InternalRequest {
  return { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name, namespace: ns, uid: `${cluster}-${name}`, resourceVersion: '1', annotations: { 'kcp.io/cluster': cluster } }, spec: { request: 'sign' } };
}

// ---------------------------------------------------------------- a shard driven by the test

/** A shard whose bindings and objects the test sets, as kcp would show them through that shard's virtual workspace. */
class FakeShard implements ProviderShard {
  readonly name: string;
  up = true;
  starts = 0;
  stopped = false;
  private readonly bound = new Map<string, boolean>();
  private readonly shares = new Map<string, Share>();
  private readonly all = {
    name: '',
    synced: true,
    health: { failures: 0, synced: true, connected: true },
    readiness: (): ReadinessCheck => ({ name: `kcp/${EXPORT}/${this.name}/internalrequests`, ok: true, required: false }),
    waitForSync: () => Promise.resolve(),
  };

  constructor(
    readonly url: string,
    private readonly events: ShardEvents,
    private readonly fail?: () => 'throw' | 'hang' | undefined,
  ) {
    this.name = new URL(url).host;
  }

  start(): Promise<void> {
    this.starts++;
    const f = this.fail?.();
    if (f === 'throw') return Promise.reject(new Error('exec plugin "kcp-token" failed: exit status 1'));
    if (f === 'hang') return new Promise(() => undefined);
    return Promise.resolve();
  }
  async stop(): Promise<void> {
    this.stopped = true;
  }
  synced(): Promise<void> {
    return Promise.resolve();
  }
  get isSynced(): boolean {
    return true;
  }
  state(): { up: boolean; why?: string } {
    return this.up ? { up: true } : { up: false, why: 'connect ECONNREFUSED' };
  }
  noteState(): boolean {
    return this.up;
  }
  readiness(): ReadinessCheck {
    return { name: `kcp/${EXPORT}/shard/${this.name}`, ok: this.up, required: false };
  }
  readyClusters(): string[] {
    return [...this.bound].filter(([, r]) => r).map(([c]) => c);
  }
  isReady(cluster: string): boolean {
    return this.bound.get(cluster) === true;
  }
  share(_kind: string, cluster: string): Share {
    let s = this.shares.get(cluster);
    if (!s) this.shares.set(cluster, (s = new Share(`kcp/${EXPORT}/${this.name}/internalrequests`, this.all as never)));
    return s;
  }
  dropShares(cluster: string): Share[] {
    const s = this.shares.get(cluster);
    this.shares.delete(cluster);
    return s ? [s] : [];
  }
  connection(cluster: string): Cluster {
    const kc = new KubeConfig();
    kc.loadFromOptions({ clusters: [{ name: 'c', server: `${this.url}/clusters/${cluster}` }], users: [{ name: 'u', token: 't' }], contexts: [{ name: 'c', cluster: 'c', user: 'u' }], currentContext: 'c' });
    return new Cluster('remote', kc, undefined);
  }

  // What kcp does, as the shard's watches show it.
  bind(cluster: string, ready = true): void {
    this.bound.set(cluster, ready);
    this.events.binding(this as never, cluster, ready);
  }
  unbind(cluster: string): void {
    this.bound.delete(cluster);
    this.events.unbound(this as never, cluster);
  }
  put(r: InternalRequest): void {
    const s = this.share(KIND, r.metadata.annotations!['kcp.io/cluster']!);
    const key = `${r.metadata.namespace}/${r.metadata.name}`;
    const old = s.items.get(key);
    s.items.set(key, r);
    if (old) s.handlers.onUpdate?.(old, r);
    else s.handlers.onAdd?.(r);
  }
  /** A DELETED event (kcp deleting the object here); an object of a cluster with no share here goes nowhere, as on a real shard. */
  del(cluster: string, name: string, ns = 'team'): void {
    const s = this.shares.get(cluster);
    const r = s?.items.get(`${ns}/${name}`);
    if (!s || !r) return;
    s.items.delete(`${ns}/${name}`);
    s.handlers.onDelete?.(r);
  }
}

// ---------------------------------------------------------------- the controller, as a sink that records

interface Served {
  spec: RemoteSpec;
  caches: Map<string, RequestCache>;
}

class Sink implements RemoteSink {
  readonly remotes = new Map<string, Served>();
  /** What reached the controller, in order: `add|update|delete remote ns/name`, `resync remote`, `served remote server`, `removed remote`. */
  readonly events: string[] = [];

  addRemote(spec: RemoteSpec): unknown {
    const entry: Served = { spec, caches: new Map() };
    const live = () => this.remotes.get(spec.name) === entry;
    const key = (r: InternalRequest) => `${spec.name} ${r.metadata.namespace}/${r.metadata.name}`;
    const handlers: InformerHandlers<InternalRequest> = {
      onAdd: (r) => live() && this.events.push(`add ${key(r)}`),
      onUpdate: (_o, r) => live() && this.events.push(`update ${key(r)}`),
      onDelete: (r) => live() && this.events.push(`delete ${key(r)}`),
      onResync: () => live() && this.events.push(`resync ${spec.name}`),
    };
    this.remotes.set(spec.name, entry);
    this.events.push(`served ${spec.name} ${spec.cluster.server}`);
    for (const kind of [INTERNAL_REQUEST_KIND]) if (!spec.kinds || spec.kinds(kind)) entry.caches.set(kind.kind, spec.cache!(kind, handlers));
    return entry;
  }
  async removeRemote(name: string): Promise<boolean> {
    const had = this.remotes.delete(name);
    if (had) this.events.push(`removed ${name}`);
    return had;
  }
  deletes(): string[] {
    return this.events.filter((e) => e.startsWith('delete '));
  }
  server(name: string): string | undefined {
    return this.remotes.get(name)?.spec.cluster.server;
  }
}

// ---------------------------------------------------------------- kcp's own API, for what the provider reads itself

type Answer = { items: Array<{ metadata: { name: string }; spec: { cluster: string } }> } | 403 | 'hang';

/** The provider workspace's APIExportEndpointSlices, listed and watched as kcp serves them (one object per name; fieldSelector metadata.name). */
const kcpApi = {
  urls: [] as string[],
  slice: 'ok' as 'ok' | 'hang' | 403,
  /** The slice's spec, as kcp holds it. */
  sliceSpec: { export: { name: EXPORT } } as { export: { name: string }; partition?: string },
  sliceConditions: [] as Array<{ type: string; status: string; reason?: string; message?: string }>,
  sliceExists: true,
  /** The slice's name (the export's own by default). */
  sliceName: EXPORT,
  rv: 1,
  watches: new Set<http.ServerResponse>(),
  sliceReads: 0,
  sliceInFlight: 0,
  sliceMaxInFlight: 0,
  parents: new Map<string, Answer>(),
  pathReads: [] as Array<{ parent: string; at: number }>,
  reset(): void {
    this.urls = [];
    this.slice = 'ok';
    this.sliceSpec = { export: { name: EXPORT } };
    this.sliceConditions = [];
    this.sliceExists = true;
    this.sliceName = EXPORT;
    for (const w of this.watches) w.end();
    this.watches.clear();
    this.parents = new Map([['root', { items: [] }]]);
    this.sliceReads = 0;
    this.sliceInFlight = 0;
    this.sliceMaxInFlight = 0;
    this.pathReads = [];
  },
  object(name: string) {
    return { apiVersion: 'apis.kcp.io/v1alpha1', kind: 'APIExportEndpointSlice', metadata: { name, resourceVersion: String(this.rv) }, spec: this.sliceSpec, status: { endpoints: this.urls.map((u) => ({ url: u })), conditions: this.sliceConditions } };
  },
  /** kcp changes the slice: every open watch is told. */
  change(f: () => void): void {
    const existed = this.sliceExists;
    f();
    this.rv++;
    const type = !this.sliceExists ? 'DELETED' : existed ? 'MODIFIED' : 'ADDED';
    if (!existed && !this.sliceExists) return;
    for (const w of this.watches) w.write(`${JSON.stringify({ type, object: this.object(this.sliceName) })}\n`);
  },
  setUrls(urls: string[]): void {
    this.change(() => (this.urls = urls));
  },
};
let server: http.Server;
let base = '';

before(async () => {
  server = http.createServer((rq, rs) => {
    const send = (code: number, body: unknown) => {
      rs.writeHead(code, { 'content-type': 'application/json' });
      rs.end(JSON.stringify(body));
    };
    const forbidden = (what: string) => send(403, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403, message: `${what} is forbidden: User "controller" cannot list resource "workspaces"` });
    const url = rq.url ?? '';
    if (url.startsWith('/clusters/provider/apis/apis.kcp.io/v1alpha1/apiexportendpointslices?')) {
      const q = new URL(url, 'http://x').searchParams;
      const name = /^metadata\.name=(.+)$/.exec(q.get('fieldSelector') ?? '')?.[1];
      if (!name) return send(403, { kind: 'Status', code: 403, reason: 'Forbidden', message: 'the role names the slice: list with fieldSelector=metadata.name' });
      const mine = name === kcpApi.sliceName && kcpApi.sliceExists;
      if (q.get('watch') === 'true') {
        if (kcpApi.slice !== 'ok') return send(kcpApi.slice === 403 ? 403 : 500, { kind: 'Status', code: 500 });
        rs.writeHead(200, { 'content-type': 'application/json' });
        if (name !== kcpApi.sliceName) return; // never changes
        kcpApi.watches.add(rs);
        rs.on('close', () => kcpApi.watches.delete(rs));
        if (Number(q.get('resourceVersion') ?? 0) < kcpApi.rv && mine) rs.write(`${JSON.stringify({ type: 'MODIFIED', object: kcpApi.object(name) })}\n`);
        return;
      }
      kcpApi.sliceReads++;
      kcpApi.sliceInFlight++;
      kcpApi.sliceMaxInFlight = Math.max(kcpApi.sliceMaxInFlight, kcpApi.sliceInFlight);
      rs.on('close', () => kcpApi.sliceInFlight--);
      if (kcpApi.slice === 'hang') return;
      if (kcpApi.slice === 403) return forbidden('apiexportendpointslices');
      return send(200, { apiVersion: 'apis.kcp.io/v1alpha1', kind: 'APIExportEndpointSliceList', metadata: { resourceVersion: String(kcpApi.rv) }, items: mine ? [kcpApi.object(name)] : [] });
    }
    const m = /^\/clusters\/([^/]+)\/apis\/tenancy\.kcp\.io\/v1alpha1\/workspaces/.exec(url);
    if (m) {
      const parent = decodeURIComponent(m[1]!);
      kcpApi.pathReads.push({ parent, at: Date.now() });
      const a = kcpApi.parents.get(parent) ?? 403;
      if (a === 'hang') return;
      if (a === 403) return forbidden('workspaces.tenancy.kcp.io');
      return send(200, { apiVersion: 'tenancy.kcp.io/v1alpha1', kind: 'WorkspaceList', metadata: { resourceVersion: '1' }, items: a.items });
    }
    send(404, { kind: 'Status', code: 404 });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => {
  for (const w of kcpApi.watches) w.end();
  server.closeAllConnections();
  server.close();
});

const A = 'https://shard-a.kcp.test:6443/services/apiexport/prov/appstudio.redhat.com';
const B = 'https://shard-b.kcp.test:6443/services/apiexport/prov/appstudio.redhat.com';
const C = 'https://shard-c.kcp.test:6443/services/apiexport/prov/appstudio.redhat.com';

interface Setup {
  kcp: KcpRemotes;
  sink: Sink;
  shards: Map<string, FakeShard>;
  made: FakeShard[];
  shard(url: string): FakeShard;
}

const running: KcpRemotes[] = [];

async function setup(o: { urls?: string[]; slice?: string; grace?: number; timeout?: number; sliceEvery?: number; pathEvery?: number; parents?: string[]; failStart?: (url: string, attempt: number) => 'throw' | 'hang' | undefined; backoff?: { baseMs?: number; maxMs?: number }; start?: boolean } = {}): Promise<Setup> {
  kcpApi.urls = o.urls ?? [A, B];
  const kc = new KubeConfig();
  kc.loadFromOptions({ clusters: [{ name: 'p', server: `${base}/clusters/provider`, skipTLSVerify: true }], users: [{ name: 'u', token: 't' }], contexts: [{ name: 'c', cluster: 'p', user: 'u' }], currentContext: 'c' });
  const sink = new Sink();
  const shards = new Map<string, FakeShard>();
  const made: FakeShard[] = [];
  const attempts = new Map<string, number>();
  const kcp = new KcpRemotes(sink, {
    kubeconfig: kc,
    exportName: EXPORT,
    log,
    unbindGraceMs: o.grace ?? 150,
    requestTimeoutMs: o.timeout ?? 1_000,
    sliceRefreshMs: o.sliceEvery ?? 60_000,
    informer: { backoffMaxMs: 100 },
    ...(o.slice ? { endpointSlice: o.slice } : {}),
    pathRefreshMs: o.pathEvery ?? 60_000,
    shardStartWaitMs: 100,
    backoff: o.backoff ?? { baseMs: 40, maxMs: 400 },
    ...(o.parents ? { workspaceParents: o.parents } : {}),
    shardFactory: (url, events) => {
      const n = (attempts.get(url) ?? 0) + 1;
      attempts.set(url, n);
      const s = new FakeShard(url, events, o.failStart ? () => o.failStart!(url, n) : undefined);
      shards.set(url, s);
      made.push(s);
      return s;
    },
  });
  running.push(kcp);
  if (o.start !== false) await kcp.start();
  return { kcp, sink, shards, made, shard: (url) => shards.get(url)! };
}

beforeEach(async () => {
  await Promise.all(running.splice(0).map((k) => k.stop()));
  kcpApi.reset();
});
after(async () => {
  await Promise.all(running.splice(0).map((k) => k.stop()));
});

const check = (kcp: KcpRemotes, name: string) => kcp.readiness().find((c) => c.name === name);

// ---------------------------------------------------------------- item 2: moves and removals

describe('moves: a workspace is served from one shard at a time, handed over when that shard drops it', () => {
  test('the destination\'s binding arrives first: the workspace stays on the origin, then is handed over when the origin unbinds; no delete is delivered', async () => {
    const { kcp, sink, shard } = await setup();
    kcpApi.parents.set('root', { items: [{ metadata: { name: 'team-a' }, spec: { cluster: 'lc1' } }] });
    const [a, b] = [shard(A), shard(B)];
    a.put(req('lc1', 'one'));
    a.bind('lc1');
    await until('served from a', () => sink.server('lc1'));
    assert.equal(sink.server('lc1'), `${A}/clusters/lc1`);
    assert.ok(sink.events.includes('add lc1 team/one'));
    // kcp moves it: the destination has the objects and a ready binding first.
    b.put(req('lc1', 'one'));
    b.put(req('lc1', 'two'));
    b.bind('lc1');
    assert.equal(sink.server('lc1'), `${A}/clusters/lc1`, 'still served from the origin while it has it ready');
    // The origin drops it: kcp deletes its objects there, then its binding.
    const mark = sink.events.length;
    a.del('lc1', 'one');
    a.unbind('lc1');
    assert.equal(sink.server('lc1'), `${B}/clusters/lc1`, 'served from the destination');
    assert.deepEqual(sink.deletes(), [], 'no delete delivered');
    const after = sink.events.slice(mark);
    assert.deepEqual(after.filter((e) => e.startsWith('served') || e.startsWith('add')), [`served lc1 ${B}/clusters/lc1`, 'add lc1 team/one', 'add lc1 team/two'], 'the destination\'s requests, as they are there');
    assert.ok(after.includes('resync lc1'), 'looked at again as a whole (a full list)');
    // The origin's later events for it go nowhere; the destination's do.
    a.put(req('lc1', 'stale'));
    a.del('lc1', 'stale');
    b.del('lc1', 'two');
    assert.deepEqual(sink.deletes(), ['delete lc1 team/two'], 'a delete on the shard serving it is delivered');
    assert.deepEqual(kcp.clusters(), ['lc1']);
    const views = Object.fromEntries(kcp.shardViews().map((v) => [v.shard, v.workspaces]));
    assert.deepEqual(views, { 'shard-a.kcp.test:6443': 0, 'shard-b.kcp.test:6443': 1 });
  });

  test('the origin purges (deletes its objects) before its binding goes: the first delete hands it over, none is delivered', async () => {
    const { sink, shard } = await setup();
    const [a, b] = [shard(A), shard(B)];
    for (const n of ['x', 'y', 'z']) a.put(req('lc2', n));
    a.bind('lc2');
    await until('served', () => sink.server('lc2'));
    for (const n of ['x', 'y', 'z']) b.put(req('lc2', n));
    b.bind('lc2');
    for (const n of ['x', 'y', 'z']) a.del('lc2', n);
    assert.deepEqual(sink.deletes(), []);
    assert.equal(sink.server('lc2'), `${B}/clusters/lc2`);
    a.unbind('lc2');
    assert.equal(sink.server('lc2'), `${B}/clusters/lc2`, 'the origin\'s unbind changes nothing more');
    assert.deepEqual(sink.deletes(), []);
  });

  test('the origin\'s binding turns not ready while the destination\'s is ready: handed over', async () => {
    const { sink, shard } = await setup();
    const [a, b] = [shard(A), shard(B)];
    a.bind('lc3');
    await until('served', () => sink.server('lc3'));
    a.bind('lc3', false);
    assert.equal(sink.server('lc3'), `${A}/clusters/lc3`, 'no other shard has it: served on (a binding not ready changes nothing by itself)');
    b.bind('lc3');
    assert.equal(sink.server('lc3'), `${B}/clusters/lc3`, 'taken over: its shard does not have it ready');
  });

  test('the destination\'s binding arrives after the origin unbound, within the grace: taken over, not forgotten; after the grace, a workspace bound elsewhere is taken up', async () => {
    const { kcp, sink, shard } = await setup({ grace: 200 });
    const [a, b] = [shard(A), shard(B)];
    a.put(req('lc4', 'r'));
    a.bind('lc4');
    await until('served', () => sink.server('lc4'));
    a.unbind('lc4');
    assert.deepEqual(sink.deletes(), ['delete lc4 team/r'], 'no other shard has it: what is left is delivered as deleted (kcp deleted it)');
    b.put(req('lc4', 'r'));
    b.bind('lc4');
    assert.equal(sink.server('lc4'), `${B}/clusters/lc4`);
    await sleep(300);
    assert.deepEqual(kcp.clusters(), ['lc4'], 'not forgotten after the grace');
    assert.ok(!sink.events.includes('removed lc4'));

    // Unbound with no other shard: forgotten after the grace; bound again later: served again.
    b.unbind('lc4');
    await until('forgotten', () => sink.events.includes('removed lc4'));
    a.bind('lc4');
    await until('served again from a', () => sink.server('lc4') === `${A}/clusters/lc4`);
  });

  test('a delete on the origin while no other shard has it is delivered (an ordinary delete)', async () => {
    const { sink, shard } = await setup();
    const a = shard(A);
    a.put(req('lc5', 'r'));
    a.bind('lc5');
    await until('served', () => sink.server('lc5'));
    a.del('lc5', 'r');
    assert.deepEqual(sink.deletes(), ['delete lc5 team/r']);
  });

  test('handed over and back (two URLs that show one shard): the shard it left keeps what it shows, and serves it whole when it is handed back', async () => {
    const { sink, shard } = await setup();
    const [a, b] = [shard(A), shard(B)];
    for (const s of [a, b]) for (const n of ['r1', 'r2']) s.put(req('lc8', n));
    a.bind('lc8');
    await until('served', () => sink.server('lc8'));
    b.bind('lc8');
    // The tenant deletes r1: the first URL's watch shows it first.
    a.del('lc8', 'r1');
    assert.equal(sink.server('lc8'), `${B}/clusters/lc8`, 'handed over on a delete while another has it ready');
    assert.deepEqual(sink.deletes(), []);
    b.del('lc8', 'r1');
    assert.deepEqual(sink.deletes(), ['delete lc8 team/r1'], 'delivered by the one serving it');
    a.put(req('lc8', 'r3'));
    const mark = sink.events.length;
    b.unbind('lc8');
    assert.equal(sink.server('lc8'), `${A}/clusters/lc8`, 'back to the first, which still has it');
    assert.deepEqual(sink.events.slice(mark).filter((e) => e.startsWith('add')).sort(), ['add lc8 team/r2', 'add lc8 team/r3'], 'what it shows, including what changed while it did not serve it');
    assert.deepEqual(sink.deletes(), ['delete lc8 team/r1']);
  });

  test('two shards have it ready and the one serving it is down: it stays there (a shard that is down drops nothing); deletes there hand it to the other', async () => {
    const { sink, shard } = await setup();
    const [a, b] = [shard(A), shard(B)];
    a.put(req('lc6', 'r'));
    a.bind('lc6');
    await until('served', () => sink.server('lc6'));
    b.put(req('lc6', 'r'));
    b.bind('lc6');
    a.up = false;
    assert.equal(sink.server('lc6'), `${A}/clusters/lc6`);
    a.up = true;
    b.up = false;
    a.del('lc6', 'r');
    assert.deepEqual(sink.deletes(), [], 'held back: another shard holds it (down now, its requests wait there)');
    assert.equal(sink.server('lc6'), `${B}/clusters/lc6`);
  });
});

describe('removals: a URL that leaves the slice sends its workspaces through the unbind grace', () => {
  test('its workspaces stay served for the grace (their deletes are acted on), then are forgotten and the shard stopped; the other shard is untouched', async () => {
    const { kcp, sink, shard } = await setup({ grace: 250 });
    const [a, b] = [shard(A), shard(B)];
    a.put(req('on-a', 'r'));
    a.bind('on-a');
    b.bind('on-b');
    await until('both served', () => sink.server('on-a') && sink.server('on-b'));
    // kcp: the last binding on shard b goes; it deletes the requests, the binding, then drops b's URL.
    b.put(req('on-b', 'r'));
    kcpApi.setUrls([A]);
    await until('b retired', () => kcp.readiness().every((c) => !c.name.endsWith('shard-b.kcp.test:6443')));
    assert.ok(kcp.clusters().includes('on-b'), 'still served during the grace');
    b.del('on-b', 'r');
    assert.deepEqual(sink.deletes(), ['delete on-b team/r'], 'a delete arriving during the grace is delivered');
    assert.ok(!sink.events.includes('removed on-b'));
    await until('forgotten after the grace', () => sink.events.includes('removed on-b'), 2_000);
    assert.ok(b.stopped, 'the shard is stopped');
    assert.deepEqual(kcp.clusters(), ['on-a']);
    assert.ok(!a.stopped);
  });

  test('a URL that comes back within the grace is served on: nothing forgotten', async () => {
    const { kcp, sink, shard } = await setup({ grace: 1_000 });
    const b = shard(B);
    b.bind('on-b');
    await until('served', () => sink.server('on-b'));
    kcpApi.setUrls([A]);
    await until('b retired', () => !kcp.readiness().some((c) => c.name.endsWith('shard-b.kcp.test:6443')));
    kcpApi.setUrls([A, B]);
    await until('b back', () => kcp.readiness().some((c) => c.name.endsWith('shard-b.kcp.test:6443')));
    await sleep(1_100);
    assert.ok(!sink.events.includes('removed on-b'));
    assert.ok(!b.stopped);
    assert.equal(sink.server('on-b'), `${B}/clusters/on-b`);
  });

  test('a URL that leaves while another shard has its workspace ready: handed over at once', async () => {
    const { sink, shard } = await setup({ grace: 5_000 });
    const [a, b] = [shard(A), shard(B)];
    a.bind('lc7');
    await until('served', () => sink.server('lc7'));
    b.bind('lc7');
    kcpApi.setUrls([B]);
    await until('handed over', () => sink.server('lc7') === `${B}/clusters/lc7`);
    assert.deepEqual(sink.deletes(), []);
  });
});

// ---------------------------------------------------------------- item 3: never decide under a guessed name

describe('a workspace whose path cannot be read is served held: nothing of it is decided until its path is known', () => {
  test('a parent refused (403): held, shown on /readyz and in the metrics, read again with backoff; once readable, decided under its path', async () => {
    kcpApi.parents.set('root', 403);
    const { kcp, sink, shard } = await setup();
    const a = shard(A);
    a.put(req('lc-new', 'r'));
    a.bind('lc-new');
    const served = await until('served held', () => sink.remotes.get('lc-new'));
    const why = served.spec.held?.();
    assert.ok(why, 'held');
    assert.match(why!, /cannot read the Workspaces of root \(forbidden\)/);
    assert.match(why!, /never under its logical cluster name/);
    assert.equal(served.spec.workspace?.(), undefined);
    const line = check(kcp, `kcp/${EXPORT}/workspace-paths`)!;
    assert.equal(line.ok, false);
    assert.match(line.detail!, /cannot list the Workspaces of root: HTTP 403/);
    assert.match(line.detail!, /1 workspace\(s\) wait for their path, their requests not decided: lc-new/);
    assert.match(line.detail!, /lc-new \(the controller cannot read the Workspaces of root \(forbidden\).*config\/kcp\/parent\/workspace_reader\.yaml/, 'and why, with what would let it be decided');
    assert.equal(kcp.shardViews().find((v) => v.shard === 'shard-a.kcp.test:6443')!.waiting, 1);
    // Read again with backoff (40, 80, 160 ms, … up to 400 ms).
    await until('three more reads', () => kcpApi.pathReads.length >= 5, 3_000);
    const gaps = kcpApi.pathReads.slice(1, 5).map((r, i) => r.at - kcpApi.pathReads[i]!.at);
    assert.ok(gaps[2]! > gaps[0]!, `backs off: ${gaps.join(', ')} ms`);
    assert.equal(served.spec.held?.(), why, 'the same words on every retry (the request\'s status is not rewritten each time)');
    // The parent readable (the reader grant applied): its path is known, its requests are looked at again.
    const mark = sink.events.length;
    kcpApi.parents.set('root', { items: [{ metadata: { name: 'team-new' }, spec: { cluster: 'lc-new' } }] });
    await until('held lifted', () => !served.spec.held?.(), 3_000);
    assert.equal(served.spec.workspace?.(), 'root:team-new');
    assert.ok(sink.events.slice(mark).includes('resync lc-new'), 'every request looked at again');
    assert.equal(check(kcp, `kcp/${EXPORT}/workspace-paths`)!.ok, true);
    assert.equal(kcp.shardViews().find((v) => v.shard === 'shard-a.kcp.test:6443')!.waiting, 0);
  });

  test('a parent that does not answer: the read times out (the client\'s timeout), the workspace is held', async () => {
    kcpApi.parents.set('root', 'hang');
    const { kcp, sink, shard } = await setup({ timeout: 200 });
    shard(A).bind('lc-slow');
    const served = await until('served held', () => sink.remotes.get('lc-slow'), 3_000);
    assert.match(served.spec.held?.() ?? '', /root \(no answer\)/);
    assert.ok(kcp.heldClusters().has('lc-slow'));
  });

  test('one of two parents refused: a workspace the readable one lists is served under its path; one it does not list is held', async () => {
    kcpApi.parents.set('root', { items: [{ metadata: { name: 'team-a' }, spec: { cluster: 'lc-known' } }] });
    kcpApi.parents.set('root:org', 403);
    const { sink, shard } = await setup({ parents: ['root', 'root:org'] });
    shard(A).bind('lc-known');
    shard(A).bind('lc-unknown');
    const known = await until('known served', () => sink.remotes.get('lc-known'));
    const unknown = await until('unknown served', () => sink.remotes.get('lc-unknown'));
    assert.equal(known.spec.held?.(), undefined);
    assert.equal(known.spec.workspace?.(), 'root:team-a');
    assert.match(unknown.spec.held?.() ?? '', /root:org \(forbidden\)/);
  });

  test('no workspace read lists it: held (never decided under its logical cluster name), the message says what to grant and which flag to set', async () => {
    const { kcp, sink, shard } = await setup();
    shard(A).bind('lc-elsewhere');
    const s = await until('served held', () => sink.remotes.get('lc-elsewhere'));
    assert.equal(s.spec.workspace?.(), undefined);
    const why = s.spec.held?.() ?? '';
    assert.match(why, /no workspace the controller can read lists it \(read: root\)/);
    assert.match(why, /never under its logical cluster name/);
    assert.match(why, /config\/kcp\/parent\/workspace_reader\.yaml/);
    assert.match(why, /--kcp-workspace-parent/);
    assert.ok(kcp.heldClusters().has('lc-elsewhere'));
  });

  test('a workspace two levels down, under a parent that was not given: learnt by walking the tree (the readable parent is read from then on); one under an unreadable workspace waits, the message naming it', async () => {
    kcpApi.parents.set('root', { items: [{ metadata: { name: 'org' }, spec: { cluster: 'lc-org' } }, { metadata: { name: 'team-a' }, spec: { cluster: 'lc-a' } }, { metadata: { name: 'Bad:Name' }, spec: { cluster: 'lc-bad' } }] });
    kcpApi.parents.set('root:org', { items: [{ metadata: { name: 'team' }, spec: { cluster: 'lc-deep' } }] });
    // root:team-a is a tenant: the controller may not read it (403).
    const { kcp, sink, shard } = await setup({ pathEvery: 50 });
    shard(A).bind('lc-deep');
    shard(A).bind('lc-hidden');
    const deep = await until('deep served', () => sink.remotes.get('lc-deep'));
    assert.equal(deep.spec.held?.(), undefined);
    assert.equal(deep.spec.workspace?.(), 'root:org:team');
    const hidden = await until('hidden served', () => sink.remotes.get('lc-hidden'));
    const why = hidden.spec.held?.() ?? '';
    assert.match(why, /cannot read the Workspaces of root:org:team \(forbidden\), root:team-a \(forbidden\)/);
    assert.doesNotMatch(why, /Bad:Name/, 'a name that is no workspace name is not walked into');
    assert.ok(!kcpApi.pathReads.some((r) => r.parent.includes('Bad')));
    // Once under root:team-a (its admin applied the reader grant there), decided under its path.
    kcpApi.parents.set('root:team-a', { items: [{ metadata: { name: 'kid' }, spec: { cluster: 'lc-hidden' } }] });
    await until('hidden known', () => hidden.spec.workspace?.() === 'root:team-a:kid', 3_000);
    // (The path is known during the read; the hold is lifted once the read is over.)
    await until('hold lifted', () => hidden.spec.held?.() === undefined, 3_000);
    assert.equal(check(kcp, `kcp/${EXPORT}/workspace-paths`)!.ok, true);
    // Nothing unknown any more: only the given and learnt parents are read, not every tenant.
    // (A refresh under way when it became known may still walk: the last one counts.)
    const mark = kcpApi.pathReads.length;
    await until('two more refreshes', () => kcpApi.pathReads.length >= mark + 8, 3_000);
    const read = new Set(kcpApi.pathReads.slice(-3).map((r) => r.parent));
    assert.deepEqual([...read].sort(), ['root', 'root:org', 'root:team-a']);
  });

  test('while a workspace is held, a workspace that refused the walk is asked again with backoff (at most every 8 refreshes), not on every refresh; still named in the message', async () => {
    kcpApi.parents.set('root', { items: [{ metadata: { name: 'tenant' }, spec: { cluster: 'lc-tenant' } }] });
    const { sink, shard } = await setup({ pathEvery: 20 });
    shard(A).bind('lc-nowhere');
    const held = await until('served held', () => sink.remotes.get('lc-nowhere'));
    await new Promise((r) => setTimeout(r, 1_000));
    const reads = (p: string) => kcpApi.pathReads.filter((r) => r.parent === p).length;
    assert.ok(reads('root') >= 25, `root read on every refresh: ${reads('root')}`);
    assert.ok(reads('root:tenant') <= 12, `the tenant asked with backoff: ${reads('root:tenant')} times in ${reads('root')} refreshes`);
    assert.match(held.spec.held?.() ?? '', /cannot read the Workspaces of root:tenant \(forbidden\)/);
  });

  test('decide(): a request of a held remote waits, pending (phase WaitingForWorkspace, saying why), and is never Rejected; written once', () => {
    const held = 'waiting for this workspace\'s path: the controller cannot read the Workspaces of root (forbidden), …';
    // Its namespace is not allowed under any name: still not Rejected.
    const o = observation({ remote: 'lc-new', held, config: config({ allowList: ['root:someone-else/team'] }), request: request({}, { namespace: 'team' }) });
    const a = decide(o);
    assert.deepEqual(a.map((x) => x.type), ['writeStatus']);
    const w = a[0] as Action & { type: 'writeStatus' };
    assertPhase(w.status, 'WaitingForWorkspace');
    assert.equal(w.status.conditions?.[0]?.reason, 'Running', 'conditions[0] stays Running: the requester waits');
    assert.equal(w.status.conditions?.[1]?.message, held);
    assert.equal(w.code, undefined);
    assert.equal(w.event?.reason, 'WaitingForWorkspace');
    assert.deepEqual(decide({ ...o, request: request({}, { namespace: 'team' }, w.status) }), [], 'nothing to write again');
    // Its path known: decided (here Rejected, under its path).
    const now = decide({ ...o, held: undefined, workspace: 'root:team-new', request: request({}, { namespace: 'team' }, w.status) });
    assert.equal((now.find((x) => x.type === 'writeStatus') as Action & { type: 'writeStatus' }).status.conditions?.[0]?.reason, 'Rejected');
  });

  test('decide(): a running request of a held remote is followed, and not cancelled as revoked under a guessed name', () => {
    const pr = pipelineRun('u-1', runningStatus());
    pr.metadata.annotations = { ...pr.metadata.annotations, [ANNOTATION_ON_REVOKE]: 'cancel' };
    const req = request({}, {}, { pipelineRun: `internal-services/${pr.metadata.name}`, startTime: '2026-11-22T09:00:00Z' });
    const o = observation({ remote: 'lc-new', request: req, pipelineRuns: [pr], config: config({ allowList: ['root:team-new/team-a'] }) });
    assert.ok(decide(o).some((x) => x.type === 'cancelPipelineRun'), 'under its logical cluster name the rule does not match: it would be revoked');
    assert.ok(!decide({ ...o, held: 'waiting for this workspace\'s path' }).some((x) => x.type === 'cancelPipelineRun'), 'held: not revoked');
  });
});

// ---------------------------------------------------------------- item 4: bounded and self-healing

// ---------------------------------------------------------------- item 5: the slice watched, named on its own, partitioned

describe('the endpoint slice is watched, named on its own, and may be partitioned', () => {
  test('a URL kcp adds or removes is followed through the watch: no timed read (the look-again timer is a minute here)', async () => {
    const { kcp, sink, shards, shard } = await setup({ urls: [A] });
    const listed = kcpApi.sliceReads;
    kcpApi.setUrls([A, B]);
    await until('b served', () => shards.has(B), 1_000);
    shard(B).bind('on-b');
    await until('its workspace served', () => sink.server('on-b'));
    kcpApi.setUrls([A, C]);
    await until('c served, b retired', () => shards.has(C) && !kcp.readiness().some((c) => c.name.endsWith('shard-b.kcp.test:6443')), 1_000);
    assert.equal(kcpApi.sliceReads, listed, 'no list after the first: every change came through the watch');
  });

  test('--kcp-endpoint-slice: another slice of the export (a partition\'s) is served, the export\'s own is not read', async () => {
    kcpApi.sliceName = 'appstudio-shard-b';
    kcpApi.sliceSpec = { export: { name: EXPORT }, partition: 'shard-b' };
    const { kcp, shards } = await setup({ urls: [B], slice: 'appstudio-shard-b' });
    assert.deepEqual([...shards.keys()], [B]);
    assert.equal(check(kcp, `kcp/${EXPORT}`)!.ok, true);
  });

  test('a slice that names another export serves nothing and says which export it is of', async () => {
    kcpApi.sliceSpec = { export: { name: 'other.example.com' } };
    const { kcp, shards } = await setup({ urls: [A] });
    assert.equal(shards.size, 0);
    assert.match(check(kcp, `kcp/${EXPORT}`)!.detail!, /is of APIExport other\.example\.com, not appstudio\.redhat\.com: nothing of it is served/);
  });

  test('a slice whose Partition is missing: kcp empties it; the readiness line gives kcp\'s condition; served once the Partition exists', async () => {
    kcpApi.sliceSpec = { export: { name: EXPORT }, partition: 'shard-b' };
    kcpApi.sliceConditions = [{ type: 'PartitionValid', status: 'False', reason: 'PartitionInvalidReference', message: 'partitions.topology.kcp.io "shard-b" not found' }];
    const { kcp, shards } = await setup({ urls: [] });
    assert.equal(shards.size, 0);
    assert.match(check(kcp, `kcp/${EXPORT}`)!.detail!, /lists no endpoint: PartitionValid PartitionInvalidReference \(partitions\.topology\.kcp\.io "shard-b" not found\)/);
    kcpApi.change(() => {
      kcpApi.sliceConditions = [{ type: 'PartitionValid', status: 'True' }];
      kcpApi.urls = [B];
    });
    await until('served', () => shards.has(B) && check(kcp, `kcp/${EXPORT}`)!.ok, 1_000);
  });

  test('a slice that does not exist: nothing served, the line says so; created later, served at once', async () => {
    kcpApi.sliceExists = false;
    const { kcp, shards } = await setup({ urls: [A] });
    assert.equal(shards.size, 0);
    assert.match(check(kcp, `kcp/${EXPORT}`)!.detail!, /APIExportEndpointSlice appstudio\.redhat\.com does not exist in the provider workspace/);
    kcpApi.change(() => (kcpApi.sliceExists = true));
    await until('served', () => shards.has(A), 1_000);
  });
});

describe('bounded and self-healing', () => {
  test('a slice list that never answers times out (the client\'s timeout); it is listed again with backoff, never two at once; once answered, served', async () => {
    kcpApi.slice = 'hang';
    const { kcp, shards } = await setup({ timeout: 150 });
    assert.equal(shards.size, 0, 'start() went on without the slice');
    const line = check(kcp, `kcp/${EXPORT}`)!;
    assert.equal(line.ok, false);
    assert.match(line.detail!, /cannot read APIExportEndpointSlice appstudio\.redhat\.com: .*(timeout|aborted|no answer|not listed yet)/i);
    const before = kcpApi.sliceReads;
    await sleep(900);
    const reads = kcpApi.sliceReads - before;
    assert.ok(reads >= 2 && reads <= 8, `listed again after each timeout and backoff (~150-250 ms), not in a loop: ${reads}`);
    assert.equal(kcpApi.sliceMaxInFlight, 1, 'never two lists at once');
    kcpApi.slice = 'ok';
    await until('served', () => shards.size === 2 && check(kcp, `kcp/${EXPORT}`)!.ok, 3_000);
  });

  test('the slice refused at start (403): start() goes on, says why, and serves it once allowed', async () => {
    kcpApi.slice = 403;
    const { kcp, shards } = await setup();
    assert.equal(shards.size, 0);
    assert.match(check(kcp, `kcp/${EXPORT}`)!.detail!, /cannot read APIExportEndpointSlice appstudio\.redhat\.com: .*403/);
    kcpApi.slice = 'ok';
    await until('shards served', () => shards.size === 2, 3_000);
  });

  test('a shard whose start fails (its credential plugin fails) is down, says why, and is started again with backoff until it starts', async () => {
    let failing = true;
    const { kcp, sink, made, shard } = await setup({ failStart: (url) => (url === B && failing ? 'throw' : undefined), backoff: { baseMs: 50, maxMs: 200 } });
    const line = () => check(kcp, `kcp/${EXPORT}/shard/shard-b.kcp.test:6443`)!;
    assert.equal(line().ok, false);
    assert.match(line().detail!, /cannot be started \(1 attempt\(s\), next in \d+ s\): exec plugin "kcp-token" failed/);
    assert.deepEqual(kcp.shardViews().map((v) => [v.shard, v.up]), [['shard-a.kcp.test:6443', true], ['shard-b.kcp.test:6443', false]]);
    // The other shard is served meanwhile.
    shard(A).bind('lc-a');
    await until('a served', () => sink.server('lc-a'));
    await until('started again, more than twice', () => made.filter((s) => s.url === B).length >= 3, 2_000);
    assert.ok(made.filter((s) => s.url === B).slice(0, -1).every((s) => s.stopped), 'each failed attempt is stopped');
    failing = false;
    await until('started', () => line().ok, 2_000);
    shard(B).bind('lc-b');
    await until('b served', () => sink.server('lc-b'));
  });

  test('a shard whose start hangs is given up after the timeout and started again', async () => {
    let n = 0;
    const { kcp, made } = await setup({ timeout: 100, failStart: (url) => (url === B && ++n <= 2 ? 'hang' : undefined), backoff: { baseMs: 20, maxMs: 50 } });
    await until('started at the third attempt', () => made.filter((s) => s.url === B).length === 3 && check(kcp, `kcp/${EXPORT}/shard/shard-b.kcp.test:6443`)!.ok, 3_000);
  });

  test('stop() ends every timer: nothing is read after it', async () => {
    const { kcp } = await setup({ sliceEvery: 20, pathEvery: 20 });
    await kcp.stop();
    const [s, p] = [kcpApi.sliceReads, kcpApi.pathReads.length];
    await sleep(150);
    assert.deepEqual([kcpApi.sliceReads, kcpApi.pathReads.length], [s, p]);
  });
});
