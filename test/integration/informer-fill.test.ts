/**
 * How a cache is filled, against real apiservers: two remote clusters, one
 * as current Kubernetes ships (streamed lists: a watch with
 * sendInitialEvents), one started with `--feature-gates=WatchList=false` (a
 * server that does not stream lists, as Kubernetes 1.33 by default). What
 * each cache asked for is read from the apiservers' own audit logs.
 *
 * The early lane: with a history of finished requests made large enough
 * that the list takes a while (each carries a 24 kB result), the unfinished
 * request — last in the list's order — reaches the handlers before the list
 * is complete; without the selectable field on the CRD the lane turns itself
 * off and the cache still fills.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { startEnvironment, type Environment, ensureNamespace, installProject, type ControlPlane } from '../../src/localenv/index.js';
import { fromKubeConfig, statusCode, type ResourceClient } from '../../src/kube/client.js';
import { Informer, type InformerOptions } from '../../src/kube/informer.js';
import { INTERNAL_REQUEST, UNFINISHED_FIELD_SELECTOR, type InternalRequest } from '../../src/api/types.js';
import { isFinished } from '../../src/api/conditions.js';
import { slimRequest } from '../../src/requests/cached-requests.js';

let env: Environment;
let streaming: ControlPlane;
let paging: ControlPlane;
const HISTORY = 600;
const logs: Array<Record<string, unknown>> = [];
const log = pino({ level: 'debug' }, { write: (s: string) => logs.push(JSON.parse(s) as Record<string, unknown>) });

async function admin(plane: ControlPlane): Promise<ResourceClient<InternalRequest>> {
  return (await fromKubeConfig('remote', plane.identities.admin.kubeConfig())).resource<InternalRequest>(INTERNAL_REQUEST);
}

/** n finished requests in namespace `history` (24 kB of results each), then one unfinished request in `zz-last`, which sorts last. */
async function populate(plane: ControlPlane, n: number): Promise<void> {
  const client = await admin(plane);
  for (const ns of ['history', 'zz-last']) await ensureNamespace(plane.identities.admin.kubeConfig(), ns);
  const big = 'x'.repeat(24_000);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < n; i = next++) {
      const name = `old-${String(i).padStart(4, '0')}`;
      const created = await client.create('history', { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name, namespace: 'history' }, spec: { request: 'p' } });
      const t = '2026-11-20T10:00:00Z';
      await client.replaceStatus('history', name, {
        ...created,
        status: { conditions: [{ type: 'Succeeded', status: 'True', reason: 'Succeeded', message: 'done', lastTransitionTime: t }], completionTime: t, results: { big } },
      });
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  await client.create('zz-last', { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name: 'waiting', namespace: 'zz-last' }, spec: { request: 'p' } });
}

before(async () => {
  env = await startEnvironment({ remotes: 2, audit: true, apiserverFlags: { 'remote-2': ['--feature-gates=WatchList=false'] } });
  await installProject(env, { tekton: false });
  streaming = env.remotes[0]!;
  paging = env.remotes[1]!;
  await Promise.all([populate(streaming, HISTORY), populate(paging, HISTORY)]);
});

after(async () => {
  await env?.stop();
});

/** The admin's requests to the apiserver of `plane` on internalrequests since `from` lines of its audit log. */
function auditOf(plane: ControlPlane, from: number): Array<{ verb: string; uri: string }> {
  const lines = readFileSync(plane.auditLogPath!, 'utf8').trim().split('\n').slice(from);
  return lines
    .map((l) => JSON.parse(l) as { verb: string; requestURI: string; user: { username: string }; objectRef?: { resource?: string } })
    .filter((e) => e.objectRef?.resource === 'internalrequests' && e.user.username === 'admin')
    .map((e) => ({ verb: e.verb, uri: e.requestURI }));
}

const auditLength = (plane: ControlPlane) => readFileSync(plane.auditLogPath!, 'utf8').trim().split('\n').length;

interface Filled {
  inf: Informer<InternalRequest>;
  /** When the unfinished request first reached onAdd: whether the cache was synced then. */
  waitingSeenSynced: boolean | undefined;
  adds: number;
}

async function fill(plane: ControlPlane, opts: InformerOptions<InternalRequest>): Promise<Filled> {
  const out: Filled = { inf: undefined as unknown as Filled['inf'], waitingSeenSynced: undefined, adds: 0 };
  const inf = new Informer<InternalRequest>(`${plane.name}/internalrequests`, await admin(plane), {
    onAdd: (r) => {
      out.adds++;
      if (!isFinished(r) && out.waitingSeenSynced === undefined) out.waitingSeenSynced = inf.synced;
    },
  }, log, { transform: slimRequest, ...opts });
  out.inf = inf;
  inf.start();
  await inf.waitForSync();
  return out;
}

test('a current apiserver: the cache is filled by one streamed list (no list request), and the watch goes on from it', async (t) => {
  const from = auditLength(streaming);
  const f = await fill(streaming, {});
  t.after(() => f.inf.stop());
  assert.equal(f.inf.size, HISTORY + 1);
  const calls = auditOf(streaming, from);
  assert.ok(calls.some((c) => c.verb === 'watch' && c.uri.includes('sendInitialEvents=true')), `a streamed list: ${JSON.stringify(calls)}`);
  assert.ok(!calls.some((c) => c.verb === 'list'), `no paged list: ${JSON.stringify(calls)}`);
  assert.ok(!logs.some((l) => l.informer === f.inf.name && l.msg === 'the server does not stream lists (sendInitialEvents); listing in pages'));
  // The same connection goes on as the watch: a change arrives.
  const client = await admin(streaming);
  await client.create('zz-last', { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name: 'later', namespace: 'zz-last' }, spec: { request: 'p' } });
  const end = Date.now() + 10_000;
  while (!f.inf.get('zz-last/later') && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
  assert.ok(f.inf.get('zz-last/later'), 'a request created after the list arrives through the watch');
  assert.equal(auditOf(streaming, from).filter((c) => c.verb === 'watch').length, 1, 'on the one watch that streamed the list');
});

test('an apiserver without streamed lists (WatchList=false): one log line, then the cache is listed in pages, and fills', async (t) => {
  const from = auditLength(paging);
  const f = await fill(paging, {});
  t.after(() => f.inf.stop());
  assert.equal(f.inf.size, HISTORY + 1);
  assert.equal(logs.filter((l) => l.informer === f.inf.name && l.msg === 'the server does not stream lists (sendInitialEvents); listing in pages').length, 1);
  const calls = auditOf(paging, from);
  assert.ok(calls.some((c) => c.verb === 'list' && c.uri.includes('limit=500')), `a paged list: ${JSON.stringify(calls)}`);
});

test('the early lane: the unfinished request reaches the handlers before the list is complete; on both servers', async (t) => {
  for (const plane of [streaming, paging]) {
    const from = auditLength(plane);
    const f = await fill(plane, { earlySelector: UNFINISHED_FIELD_SELECTOR });
    t.after(() => f.inf.stop());
    assert.equal(f.waitingSeenSynced, false, `${plane.name}: zz-last/waiting was handed over while the list was still in progress`);
    assert.equal(f.inf.size, (await (await admin(plane)).list(undefined)).items.length);
    assert.ok(f.inf.get('zz-last/waiting'));
    const lane = auditOf(plane, from).filter((c) => c.uri.includes('fieldSelector=status.completionTime'));
    assert.ok(lane.some((c) => c.verb === 'list'), `${plane.name}: the lane lists by the selectable field: ${JSON.stringify(lane)}`);
    assert.ok(f.adds >= HISTORY + 1);
  }
});

test('the early lane without the selectable field on the CRD: it turns itself off with one line; the cache fills as without it', async (t) => {
  const api = (await fromKubeConfig('remote', paging.identities.admin.kubeConfig())).custom;
  const ref = { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', name: 'internalrequests.appstudio.redhat.com' };
  const body = (await api.getClusterCustomObject(ref)) as { spec: { versions: Array<Record<string, unknown>> } };
  for (const v of body.spec.versions) delete v['selectableFields'];
  await api.replaceClusterCustomObject({ ...ref, body });
  // The apiserver serves the new CRD after it re-initializes its storage of the kind.
  const client = await admin(paging);
  const end = Date.now() + 30_000;
  for (;;) {
    try {
      await client.list('zz-last', { fieldSelector: UNFINISHED_FIELD_SELECTOR });
    } catch (e) {
      if (statusCode(e) === 400) break;
    }
    if (Date.now() > end) throw new Error('the CRD without selectableFields is not served');
    await new Promise((r) => setTimeout(r, 200));
  }
  const f = await fill(paging, { earlySelector: UNFINISHED_FIELD_SELECTOR });
  t.after(() => f.inf.stop());
  assert.equal(f.inf.size, (await client.list(undefined)).items.length);
  const off = logs.filter((l) => l.informer === `${f.inf.name}/early` && typeof l.msg === 'string' && (l.msg as string).startsWith('the server cannot select these objects by field'));
  assert.equal(off.length, 1, 'one line says the lane is off');
});
