/**
 * The supervised list/watch cache against a real apiserver, with real
 * network faults: a TCP relay between the cache and the apiserver that can
 * freeze its connections (a half-open connection: nothing arrives, nothing
 * closes) or cut them.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { startEnvironment, type Environment } from '../../src/envtest/environment.js';
import { ensureNamespace, installProject } from '../../src/envtest/apply.js';
import { fromKubeConfig, ResourceClient } from '../../src/kube/client.js';
import { Informer, type InformerOptions } from '../../src/kube/informer.js';
import { INTERNAL_REQUEST, type InternalRequest } from '../../src/api/types.js';
import { createRequest, waitFor } from './helpers.js';

/** Forwards TCP to a target; freeze() stops moving bytes on the connections open now; cut() destroys them. */
class Relay {
  private readonly server: net.Server;
  private readonly conns = new Set<{ a: net.Socket; b: net.Socket; frozen: boolean }>();
  port = 0;
  constructor(private readonly target: { host: string; port: number }) {
    this.server = net.createServer((a) => {
      const b = net.connect(this.target.port, this.target.host);
      const c = { a, b, frozen: false };
      this.conns.add(c);
      a.on('data', (d) => c.frozen || b.write(d));
      b.on('data', (d) => c.frozen || a.write(d));
      const end = () => {
        a.destroy();
        b.destroy();
        this.conns.delete(c);
      };
      a.on('close', end).on('error', end);
      b.on('close', end).on('error', end);
    });
  }
  listen(): Promise<void> {
    return new Promise((r) => this.server.listen(0, '127.0.0.1', () => {
      this.port = (this.server.address() as net.AddressInfo).port;
      r();
    }));
  }
  freeze(): number {
    for (const c of this.conns) c.frozen = true;
    return this.conns.size;
  }
  cut(): void {
    for (const c of this.conns) {
      c.a.destroy();
      c.b.destroy();
    }
  }
  close(): Promise<void> {
    this.cut();
    return new Promise((r) => this.server.close(() => r()));
  }
}

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

async function informerViaRelay(opts: InformerOptions<InternalRequest>) {
  const kc = new KubeConfig();
  kc.loadFromFile(env.remote.identities.admin.kubeconfigPath);
  const cluster = kc.getCurrentCluster()!;
  // Same certificate (it is issued for 127.0.0.1), another port.
  kc.clusters = kc.clusters.map((c) => (c.name === cluster.name ? { ...c, server: `https://127.0.0.1:${relay.port}` } : c));
  const remote = await fromKubeConfig('remote', kc);
  const events: string[] = [];
  let resyncs = 0;
  const inf = new Informer<InternalRequest>('relay/internalrequests', remote.resource<InternalRequest>(INTERNAL_REQUEST), {
    onAdd: (o) => events.push(`add:${o.metadata.name}`),
    onDelete: (o) => events.push(`delete:${o.metadata.name}`),
    onResync: () => resyncs++,
  }, log, { namespace: 'relay', backoffInitialMs: 100, backoffMaxMs: 1000, ...opts });
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
  const inf = new Informer<InternalRequest>('gone/internalrequests', client, { onResync: () => resyncs++ }, log, { namespace: 'relay' });
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
