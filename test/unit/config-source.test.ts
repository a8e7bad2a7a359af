/**
 * The configuration source on its own: a plain object stands for the
 * internal cluster and the one client its informer uses (a streamed list,
 * and the watch it goes on as, whose events the test sends), so that what the controller is told when the
 * InternalServicesConfig "config" comes, changes and goes, and the effective
 * configuration made from it (computed once per object), are exercised
 * without a cluster. The informer itself against real API servers:
 * test/integration/informer.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { CONFIG_NAME, type InternalServicesConfig } from '../../src/api/types.js';
import { ConfigSource } from '../../src/controller/config-source.js';
import type { Cluster, ResourceRef } from '../../src/kube/client.js';
import { NS } from './fixtures.js';

type Spec = Record<string, unknown>;
let rv = 1;
function configObject(spec: Spec, name = CONFIG_NAME): InternalServicesConfig {
  return { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name, namespace: NS, uid: 'cfg-uid', resourceVersion: String(++rv) }, spec } as InternalServicesConfig;
}

/**
 * The internal cluster as the informer of the configuration uses it: list()
 * answers `items`; watch() hands the test the event callback (`send`).
 */
function fakeInternal(items: InternalServicesConfig[]) {
  const refs: ResourceRef[] = [];
  const lists: Array<{ namespace: string | undefined; fieldSelector: string | undefined; labelSelector: string | undefined }> = [];
  const watches: Array<{ path: string; fieldSelector: unknown; streamed: boolean }> = [];
  let onEvent: ((type: string, obj: unknown) => void) | undefined;
  let watching!: () => void;
  const watched = new Promise<void>((r) => (watching = r));
  const client = {
    path: (ns?: string) => `/apis/appstudio.redhat.com/v1alpha1/namespaces/${ns}/internalservicesconfigs`,
    async list(namespace: string | undefined, opts: { fieldSelector?: string; labelSelector?: string } = {}) {
      lists.push({ namespace, fieldSelector: opts.fieldSelector, labelSelector: opts.labelSelector });
      return { items: structuredClone(items), resourceVersion: String(rv) };
    },
    cluster: {
      name: 'internal',
      observer: undefined,
      remote: undefined,
      async watch(path: string, params: Record<string, unknown>, cb: (type: string, obj: unknown) => void, done: (err?: unknown) => void) {
        const streamed = params['sendInitialEvents'] === true;
        watches.push({ path, fieldSelector: params['fieldSelector'], streamed });
        onEvent = cb;
        const abort = new AbortController();
        abort.signal.addEventListener('abort', () => done());
        // A streamed list, as a current apiserver sends it: every object, then the bookmark that ends them.
        if (streamed) {
          queueMicrotask(() => {
            for (const item of structuredClone(items)) cb('ADDED', item);
            cb('BOOKMARK', { metadata: { resourceVersion: String(rv), annotations: { 'k8s.io/initial-events-end': 'true' } } });
            watching();
          });
        } else watching();
        return abort;
      },
    },
  };
  const internal = {
    resource(ref: ResourceRef) {
      refs.push(ref);
      return client;
    },
  } as unknown as Cluster;
  return {
    internal,
    refs,
    lists,
    watches,
    /** Resolves once the informer watches (its first list streamed). */
    watching: () => watched,
    send(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: InternalServicesConfig) {
      assert.ok(onEvent, 'the informer is watching');
      onEvent(type, structuredClone(obj));
    },
  };
}

function setup(items: InternalServicesConfig[], { defaultRemote }: { defaultRemote: string | undefined } = { defaultRemote: 'prod' }) {
  const cluster = fakeInternal(items);
  const lines: Array<{ level: number; msg: string; config?: Record<string, unknown> }> = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  const calls = { changed: 0, debugOff: 0 };
  const source = new ConfigSource({
    internal: cluster.internal,
    namespace: NS,
    log,
    defaultRemote,
    informer: { resyncPeriodMs: 60_000, backoffInitialMs: 1, backoffMaxMs: 1 },
    changed: () => void calls.changed++,
    debugOff: () => void calls.debugOff++,
  });
  return { cluster, source, lines, calls };
}

/** Starts the informer and waits for its first list and its watch. */
async function started(s: ReturnType<typeof setup>) {
  s.source.informer.start();
  await s.source.informer.waitForSync();
  await s.cluster.watching();
}

test('no configuration: the defaults, not present, no problems, and the controller is not told anything', async (t) => {
  const s = setup([]);
  // Before the first list, too.
  assert.equal(s.source.present, false);
  assert.equal(s.source.current().present, false);
  await started(s);
  t.after(() => s.source.informer.stop());
  const c = s.source.current();
  assert.equal(c.present, false);
  assert.match(c.source, /^defaults \(no InternalServicesConfig "config" in namespace internal-services\)$/);
  assert.deepEqual(c.allowList, []);
  assert.equal(s.source.current(), c, 'computed once');
  assert.deepEqual(s.source.problems(), []);
  assert.deepEqual(s.calls, { changed: 0, debugOff: 0 });
});

test('the informer follows the one object "config" of the controller\'s namespace', async (t) => {
  const s = setup([]);
  await started(s);
  t.after(() => s.source.informer.stop());
  assert.deepEqual(s.cluster.refs.map((r) => `${r.plural}.${r.group}`), ['internalservicesconfigs.appstudio.redhat.com']);
  assert.deepEqual(s.cluster.lists, [], 'listed by a streamed list');
  assert.deepEqual(s.cluster.watches, [{ path: `/apis/appstudio.redhat.com/v1alpha1/namespaces/${NS}/internalservicesconfigs`, fieldSelector: 'metadata.name=config', streamed: true }]);
  assert.equal(s.source.informer.name, 'internal/internalservicesconfigs');
});

test('loaded: changed() once, logged with a summary, and the effective configuration from it, computed once per object', async (t) => {
  const s = setup([configObject({ allowList: ['team-a', 'staging/team-b'], debug: true })]);
  await started(s);
  t.after(() => s.source.informer.stop());
  assert.deepEqual(s.calls, { changed: 1, debugOff: 0 });
  assert.equal(s.source.present, true);
  const c = s.source.current();
  assert.equal(c.present, true);
  assert.equal(c.source, `InternalServicesConfig ${NS}/config`);
  assert.deepEqual(c.allowList, ['prod/team-a', 'staging/team-b'], 'bare entries name the default remote');
  assert.equal(c.debug, true);
  assert.equal(s.source.current(), c, 'the same object while the cached one is the same');
  const loaded = s.lines.find((l) => l.msg === 'configuration loaded');
  assert.deepEqual(loaded?.config?.['allowList'], ['prod/team-a', 'staging/team-b']);
  assert.equal(loaded?.config?.['bareNamespacesOn'], 'prod');
});

test('changed: changed() each time, debugOff() only when spec.debug goes from true to something else; the new configuration is used at once', async (t) => {
  const s = setup([configObject({ allowList: ['team-a'], debug: true })]);
  await started(s);
  t.after(() => s.source.informer.stop());
  const first = s.source.current();

  s.cluster.send('MODIFIED', configObject({ allowList: ['team-a', 'team-c'], debug: true }));
  assert.deepEqual(s.calls, { changed: 2, debugOff: 0 }, 'debug stays on');
  const second = s.source.current();
  assert.notEqual(second, first);
  assert.deepEqual(second.allowList, ['prod/team-a', 'prod/team-c']);
  assert.ok(s.lines.some((l) => l.msg === 'configuration changed'));

  s.cluster.send('MODIFIED', configObject({ allowList: ['team-a'] }));
  assert.deepEqual(s.calls, { changed: 3, debugOff: 1 }, 'debug switched off (field removed)');
  assert.equal(s.source.current().debug, false);

  s.cluster.send('MODIFIED', configObject({ allowList: ['team-a'], debug: true }));
  assert.deepEqual(s.calls, { changed: 4, debugOff: 1 }, 'switched on: nothing to sweep');
  s.cluster.send('MODIFIED', configObject({ allowList: ['team-a'], debug: false }));
  assert.deepEqual(s.calls, { changed: 5, debugOff: 2 }, 'switched off (false)');
});

test('deleted: back to the defaults (new requests wait), a warning, no problems', async (t) => {
  const cfg = configObject({ allowList: ['team-a'], sources: { bundles: [{ repositories: ['quay.io/org/x:v1'] }] } });
  const s = setup([cfg]);
  await started(s);
  t.after(() => s.source.informer.stop());
  assert.equal(s.source.problems().length, 1);
  const before = s.calls.changed;
  s.cluster.send('DELETED', cfg);
  assert.equal(s.source.present, false);
  assert.equal(s.source.current().present, false);
  assert.deepEqual(s.source.current().allowList, []);
  assert.deepEqual(s.source.problems(), []);
  assert.ok(s.lines.some((l) => l.level === 40 && /configuration deleted; new requests wait/.test(l.msg)));
  assert.equal(s.calls.changed, before, 'a missing configuration revokes nothing (decide() step 2): live requests are not decided again; new ones wait');
});

test('problems: the rules that cannot be used as written, from the cached configuration, and in the log line', async (t) => {
  const s = setup([configObject({ allowList: ['team-a'], sources: { bundles: [{ repositories: ['quay.io/org/x:v1'] }] } })]);
  await started(s);
  t.after(() => s.source.informer.stop());
  const problems = s.source.problems();
  assert.equal(problems.length, 1);
  assert.match(problems[0]!, /^sources\.bundles\[0\] of InternalServicesConfig internal-services\/config is unusable and grants nothing: repositories\[0\] "quay\.io\/org\/x:v1" has a tag/);
  assert.deepEqual((s.lines.find((l) => l.msg === 'configuration loaded')?.config?.['problems']), [...problems]);
  s.cluster.send('MODIFIED', configObject({ allowList: ['team-a'], sources: { bundles: [{ repositories: ['quay.io/org/x'] }] } }));
  assert.deepEqual(s.source.problems(), []);
});

test('the default remote: bare entries name it; without one they name nothing; spec.defaultRemote overrides', async (t) => {
  const none = setup([configObject({ allowList: ['team-a', 'prod/team-b'] })], { defaultRemote: undefined });
  await started(none);
  t.after(() => none.source.informer.stop());
  assert.deepEqual(none.source.current().allowList, ['prod/team-b']);
  assert.match(String(none.lines.find((l) => l.msg === 'configuration loaded')?.config?.['bareNamespacesOn']), /^\(no remote/);

  const spec = setup([configObject({ allowList: ['team-a'], defaultRemote: 'edge' })], { defaultRemote: 'prod' });
  await started(spec);
  t.after(() => spec.source.informer.stop());
  assert.deepEqual(spec.source.current().allowList, ['edge/team-a']);
});
