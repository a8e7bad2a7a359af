/**
 * The supervised list/watch cache against a real apiserver, with real
 * network faults: a TCP relay between the cache and the apiserver that can
 * freeze its connections (a half-open connection: nothing arrives, nothing
 * closes) or cut them.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { startEnvironment, type Environment, ensureNamespace, installProject } from '../../src/localenv/index.js';
import { fromKubeConfig, ResourceClient } from '../../src/kube/client.js';
import { Informer, type InformerOptions } from '../../src/kube/informer.js';
import { INTERNAL_REQUEST, type InternalRequest } from '../../src/api/types.js';
import { createRequest, Relay, waitFor } from './helpers.js';


let env: Environment;
let relay: Relay;
const logs: Array<Record<string, unknown>> = [];
const log = pino({ level: 'debug' }, { write: (s: string) => logs.push(JSON.parse(s) as Record<string, unknown>) });

before(async () => {
  env = await startEnvironment();
  await installProject(env, { tekton: false });
  await ensureNamespace(env.remote.identities.admin.kubeConfig(), 'relay');
  const u = new URL(env.remote.url);
  relay = new Relay({ host: u.hostname, port: Number(u.port) });
  await relay.listen();
});

after(async () => {
  await relay?.close();
  await env?.stop();
});

async function informerViaRelay(opts: InformerOptions<InternalRequest>, via: Relay = relay, namespace = 'relay') {
  const kc = new KubeConfig();
  kc.loadFromFile(env.remote.identities.admin.kubeconfigPath);
  const cluster = kc.getCurrentCluster()!;
  // Same certificate (it is issued for 127.0.0.1), another port.
  kc.clusters = kc.clusters.map((c) => (c.name === cluster.name ? { ...c, server: `https://127.0.0.1:${via.port}` } : c));
  const remote = await fromKubeConfig('remote', kc);
  const events: string[] = [];
  let resyncs = 0;
  const inf = new Informer<InternalRequest>('relay/internalrequests', remote.resource<InternalRequest>(INTERNAL_REQUEST), {
    onAdd: (o) => events.push(`add:${o.metadata.name}`),
    onUpdate: (_o, n) => events.push(`update:${n.metadata.name}`),
    onDelete: (o) => events.push(`delete:${o.metadata.name}`),
    onResync: () => resyncs++,
  }, log, { namespace, backoffInitialMs: 100, backoffMaxMs: 1000, ...opts });
  inf.start();
  await inf.waitForSync();
  return { inf, events, resyncs: () => resyncs, remote };
}

test('a watch that goes silent (half-open connection) is abandoned after the inactivity limit, and the cache catches up', async () => {
  const { inf, remote } = await informerViaRelay({ inactivityMs: 1500, watchTimeoutSeconds: 120 });
  try {
    const admin = env.remote.identities.admin.kubeConfig();
    await createRequest(admin, 'relay', 'before-freeze', { request: 'p' });
    await waitFor('the first object', async () => inf.get('relay/before-freeze'));
    assert.ok(relay.freeze() >= 1, 'a connection was frozen');
    await createRequest(admin, 'relay', 'during-freeze', { request: 'p' });
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(inf.get('relay/during-freeze'), undefined, 'nothing arrives through a frozen connection');
    await waitFor('the object created during the freeze', async () => inf.get('relay/during-freeze'), 10_000);
    assert.ok(logs.some((l) => l.msg === 'watch silent for too long; reconnecting'));
  } finally {
    await inf.stop();
    remote.close();
  }
});

test('cut connections: reconnects; a deletion made while disconnected is not lost; the resync period relists', async () => {
  const { inf, events, resyncs, remote } = await informerViaRelay({ resyncPeriodMs: 1500 });
  try {
    const admin = env.remote.identities.admin.kubeConfig();
    await createRequest(admin, 'relay', 'to-delete', { request: 'p' });
    await waitFor('object', async () => inf.get('relay/to-delete'));
    relay.freeze(); // the deletion below must not arrive over the watch
    const { CustomObjectsApi } = await import('@kubernetes/client-node');
    await admin.makeApiClient(CustomObjectsApi).deleteNamespacedCustomObject({ group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalrequests', namespace: 'relay', name: 'to-delete' });
    relay.cut();
    await waitFor('the deletion made while disconnected', async () => events.includes('delete:to-delete') && inf.get('relay/to-delete') === undefined, 10_000);
    const r0 = resyncs();
    await waitFor('periodic relists', async () => resyncs() >= r0 + 2, 10_000);
    assert.equal(inf.health.failures, 0);
    assert.ok(inf.synced);
  } finally {
    await inf.stop();
    remote.close();
  }
});

test('410 Gone: a watch from a resourceVersion the apiserver no longer has leads to a full relist', async () => {
  // The first list reports resourceVersion "1", long gone on the real
  // apiserver (as after compaction): the real watch answers 410 Gone.
  class ExpiredOnce extends ResourceClient<InternalRequest> {
    lists = 0;
    override async list(ns: string | undefined, o: Parameters<ResourceClient<InternalRequest>['list']>[1]) {
      const r = await super.list(ns, o);
      return this.lists++ === 0 ? { ...r, resourceVersion: '1' } : r;
    }
  }
  const remote = await fromKubeConfig('remote', env.remote.identities.admin.kubeConfig());
  const client = new ExpiredOnce(remote, INTERNAL_REQUEST);
  let resyncs = 0;
  // Filled in pages: a streamed list has no resourceVersion of its own to expire.
  const inf = new Informer<InternalRequest>('gone/internalrequests', client, { onResync: () => resyncs++ }, log, { namespace: 'relay', fill: 'pages' });
  try {
    inf.start();
    await inf.waitForSync();
    await waitFor('a second list after 410', async () => client.lists >= 2 && resyncs >= 2, 10_000);
    await createRequest(env.remote.identities.admin.kubeConfig(), 'relay', 'after-gone', { request: 'p' });
    await waitFor('the watch working after the relist', async () => inf.get('relay/after-gone'), 10_000);
    assert.equal(client.lists, 2, 'one relist, then the watch holds');
    assert.equal(inf.health.failures, 0);
  } finally {
    await inf.stop();
    remote.close();
  }
});

test('poll mode behind a proxy that cuts every connection after 1 s: the cache follows adds, updates and deletes, and only changed objects are processed', async () => {
  const u = new URL(env.remote.url);
  const cutter = new Relay({ host: u.hostname, port: Number(u.port) }, 1000);
  await cutter.listen();
  const admin = env.remote.identities.admin.kubeConfig();
  await ensureNamespace(admin, 'poll');
  for (let i = 0; i < 40; i++) await createRequest(admin, 'poll', `p-${i}`, { request: 'p' });
  let transformed = 0;
  let polls = 0;
  const { inf, events, resyncs, remote } = await informerViaRelay(
    {
      mode: 'poll',
      pollIntervalMs: 200,
      resyncPeriodMs: 60_000,
      transform: (o) => {
        transformed++;
        return o;
      },
      observer: { event: (_n, type) => type === 'POLL' && polls++ },
    },
    cutter,
    'poll',
  );
  try {
    assert.equal(inf.size, 40);
    assert.equal(transformed, 40);
    const p0 = polls;
    await waitFor('five more polls', async () => polls >= p0 + 5, 20_000);
    assert.equal(transformed, 40, 'unchanged objects are not processed again');
    assert.deepEqual(events.filter((e) => !e.startsWith('add:')), [], 'no events for unchanged objects');
    assert.equal(resyncs(), 1, 'onResync only at the resync period');
    const { CustomObjectsApi } = await import('@kubernetes/client-node');
    const api = admin.makeApiClient(CustomObjectsApi);
    const ir = { group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalrequests', namespace: 'poll' };
    await api.patchNamespacedCustomObject({ ...ir, name: 'p-3', body: [{ op: 'add', path: '/metadata/labels', value: { touched: 'yes' } }] });
    await api.deleteNamespacedCustomObject({ ...ir, name: 'p-4' });
    await createRequest(admin, 'poll', 'p-new', { request: 'p' });
    await waitFor('the three changes', async () => events.includes('update:p-3') && events.includes('delete:p-4') && events.includes('add:p-new'), 20_000);
    assert.equal(inf.get('poll/p-3')?.metadata.labels?.['touched'], 'yes');
    assert.equal(transformed, 42, 'exactly the changed and the new object were processed');
    assert.ok(cutter.cuts > 0, `the proxy cut connections (${cutter.cuts})`);
    await waitFor('a healthy informer', async () => inf.health.failures === 0, 10_000);
  } finally {
    await inf.stop();
    remote.close();
    await cutter.close();
  }
});
