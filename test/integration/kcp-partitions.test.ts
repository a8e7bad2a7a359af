/**
 * Partitions (issue 43, item 5): one controller per group of shards, the
 * kcp way. A REAL sharded kcp (root shard, shard-1, cache server,
 * front-proxy) gets config/kcp/partitions as shipped: a Partition per
 * shard (selecting kcp's own `name` label of each Shard) and an
 * APIExportEndpointSlice per Partition. TWO controller processes (the real
 * command line, the controller's non-admin identity) are each given one
 * slice (`--kcp-endpoint-slice`); both run on the internal cluster's REAL
 * Tekton (pods simulated) in one namespace.
 *
 * What is checked: kcp lists in each slice only its shard's URL; each
 * controller serves exactly the workspaces on its shard (nothing served
 * twice, nothing unserved: the union is every bound workspace); a request
 * in every workspace runs once, created by the controller of its shard
 * alone (its log lines; the internal apiserver's audit log counts one
 * create per run), and its outcome is written into its workspace; a
 * workspace bound later is taken up by its shard's controller only, through
 * the watch of the slice.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import {
  applyObjects, bindExport, createWorkspace, ensureNamespace, grantKcpRequester, grantWorkspaceReader, installKcpProvider, installProject, kcpManifests, startEnvironment, startShardedKcp,
  shardOfWorkspace, SHARD_LABEL, KCP_PROVIDER_PATH,
  type Environment, type KcpWorkspace, type ShardedKcp,
  startTogether,
} from '../../src/localenv/index.js';
import type { InternalRequest } from '../../src/api/types.js';
import { AuditReader, type AuditEvent } from '../../bench/audit.js';
import { IR, NS, runKcpController, setRunConfig, simulatedStep, testPipeline, waitFor, type ControllerProcess } from './helpers.js';

const TEAM = 'team';
const SHARDS = ['root', 'shard-1'] as const;
type ShardName = (typeof SHARDS)[number];
const SLICE: Record<ShardName, string> = { root: 'appstudio.redhat.com-root', 'shard-1': 'appstudio.redhat.com-shard-1' };

let env: Environment;
let kcp: ShardedKcp;
let internalAdmin: KubeConfig;
let audit: AuditReader;
const seen: AuditEvent[] = [];
const controllers = {} as Record<ShardName, ControllerProcess>;
/** Tenant workspaces by the shard they are on. */
const tenants: Record<ShardName, KcpWorkspace[]> = { root: [], 'shard-1': [] };

const requester = (ws: KcpWorkspace) => kcp.identities.requester.kubeConfig(ws.path).makeApiClient(CustomObjectsApi);
const get = (ws: KcpWorkspace, name: string) => requester(ws).getNamespacedCustomObject({ ...IR, namespace: TEAM, name }) as Promise<InternalRequest>;
const create = (ws: KcpWorkspace, name: string) =>
  requester(ws).createNamespacedCustomObject({ ...IR, namespace: TEAM, body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name, namespace: TEAM }, spec: { request: 'quick' } } }) as Promise<InternalRequest>;

/** The logical clusters a controller serves now, from its log ('remote cluster added' / 'removed'). */
function servedBy(c: ControllerProcess): Set<string> {
  const s = new Set<string>();
  for (const l of c.lines) {
    if (l.msg === 'remote cluster added') s.add(String(l.remote));
    if (typeof l.msg === 'string' && l.msg.startsWith('remote cluster removed')) s.delete(String(l.remote));
  }
  return s;
}

/** The requests a controller created a PipelineRun for (its log). */
const createdBy = (c: ControllerProcess) => c.lines.filter((l) => l.msg === 'PipelineRun created').map((l) => String(l.request));

async function tenant(path: string, shard: ShardName): Promise<KcpWorkspace> {
  const ws = await createWorkspace(kcp, path, 90_000, { label: SHARD_LABEL, value: shard });
  await bindExport(kcp, ws.path);
  await ensureNamespace(kcp.identities.admin.kubeConfig(ws.path), TEAM);
  await grantKcpRequester(kcp, ws.path);
  return ws;
}

before(async () => {
  [env, kcp] = await startTogether(startEnvironment({ tekton: true, audit: true }), startShardedKcp({ shards: 2 }));
  await installProject(env);
  internalAdmin = env.internal.identities.admin.kubeConfig();
  audit = new AuditReader('internal', env.internal.auditLogPath!);
  await applyObjects(internalAdmin, [testPipeline('quick', { tasks: [{ name: 't', taskSpec: { steps: [simulatedStep('s')] } }] })] as never);
  const paths = ['root:part-a', 'root:part-b', 'root:part-c', 'root:part-d', 'root:part-late', 'root:part-org:held'];
  await setRunConfig(internalAdmin, { allowList: paths.map((p) => `${p}/${TEAM}`) });
  await createWorkspace(kcp, KCP_PROVIDER_PATH, 90_000, { label: SHARD_LABEL, value: 'root' });
  await installKcpProvider(kcp);
  // The Partitions, their slices and the RBAC to read them, as shipped.
  await applyObjects(kcp.identities.admin.kubeConfig(KCP_PROVIDER_PATH), kcpManifests('partitions') as never);
  tenants.root.push(await tenant(paths[0]!, 'root'), await tenant(paths[1]!, 'root'));
  tenants['shard-1'].push(await tenant(paths[2]!, 'shard-1'), await tenant(paths[3]!, 'shard-1'));
  for (const shard of SHARDS) {
    controllers[shard] = runKcpController(env, kcp, ['--metrics-bind-address', '0', '--kcp-endpoint-slice', SLICE[shard], '--kcp-refresh-interval', '2s']);
  }
  await Promise.all(SHARDS.map((s) => controllers[s].waitForLog((l) => l.msg === 'caches synced', 90_000)));
}, { timeout: 900_000 });

after(async () => {
  await Promise.all(SHARDS.map((s) => controllers[s]?.kill('SIGKILL')));
  await Promise.all([kcp?.stop(), env?.stop()]);
});

describe('partitions: two controllers, each given a partition\'s slice, serve disjoint workspaces (real sharded kcp, real Tekton)', () => {
  test('kcp lists each shard\'s URL in its partition\'s slice only; each controller serves the workspaces of its shard, nothing twice, nothing left out', { timeout: 300_000 }, async () => {
    const api = kcp.identities.admin.kubeConfig(KCP_PROVIDER_PATH).makeApiClient(CustomObjectsApi);
    const urls: Record<string, string[]> = {};
    for (const shard of SHARDS) {
      const slice = (await waitFor(`slice ${SLICE[shard]} lists one URL`, async () => {
        const s = (await api.getClusterCustomObject({ group: 'apis.kcp.io', version: 'v1alpha1', plural: 'apiexportendpointslices', name: SLICE[shard] })) as { status?: { endpoints?: Array<{ url: string }>; shardSelector?: string } };
        return s.status?.endpoints?.length === 1 ? s : undefined;
      }, 90_000, 500));
      urls[shard] = slice.status!.endpoints!.map((e) => e.url);
      assert.equal(slice.status?.shardSelector, `name=${shard}`);
    }
    assert.notDeepEqual(urls.root, urls['shard-1'], 'one URL per shard');
    for (const shard of SHARDS) {
      const placed = await Promise.all(tenants[shard].map((w) => shardOfWorkspace(kcp, w.path)));
      assert.deepEqual(placed, tenants[shard].map(() => shard));
    }
    const want = (shard: ShardName) => new Set(tenants[shard].map((w) => w.cluster));
    await waitFor('each controller serves its shard\'s workspaces', async () => SHARDS.every((s) => eq(servedBy(controllers[s]), want(s))), 90_000, 250);
    const [r, s1] = [servedBy(controllers.root), servedBy(controllers['shard-1'])];
    console.log(`partition root serves ${[...r].join(', ')}; partition shard-1 serves ${[...s1].join(', ')}`);
    assert.deepEqual([...r].filter((c) => s1.has(c)), [], 'no workspace served twice');
    assert.ok(eq(new Set([...r, ...s1]), new Set(SHARDS.flatMap((s) => [...want(s)]))), 'every bound workspace served');
    // Each controller follows its own slice, and nothing of the other's.
    for (const shard of SHARDS) {
      const lines = controllers[shard].lines.filter((l) => l.msg === 'kcp: serving the workspaces of a shard that bind the export');
      assert.deepEqual(lines.map((l) => String(l.url).replace(/\/+$/, '')), urls[shard]!.map((u) => u.replace(/\/+$/, '')), `the ${shard} controller serves its shard's URL only`);
      assert.ok(controllers[shard].lines.some((l) => l.msg === 'kcp: the endpoint slice is partitioned: only the shards its partition selects are served here' && l.partition === shard));
    }
  });

  test('a request in each workspace runs once, made by its shard\'s controller alone; the outcome is written into its workspace', { timeout: 300_000 }, async () => {
    const all = SHARDS.flatMap((s) => tenants[s].map((w) => ({ w, shard: s })));
    const made = await Promise.all(all.map(({ w }) => create(w, 'one')));
    const done = await Promise.all(all.map(({ w }) => waitFor(`${w.path} team/one finished`, async () => {
      const r = await get(w, 'one');
      const reason = r.status?.conditions?.[0]?.reason;
      return reason && reason !== 'Running' ? r : undefined;
    }, 120_000, 500)));
    for (const [i, r] of done.entries()) {
      assert.equal(r.status?.conditions?.[0]?.reason, 'Succeeded', `${all[i]!.w.path}: ${r.status?.conditions?.[0]?.message}`);
      assert.equal(r.metadata.uid, made[i]!.metadata.uid);
    }
    for (const { w, shard } of all) {
      const key = `${w.cluster}/${TEAM}/one`;
      const other = shard === 'root' ? 'shard-1' : 'root';
      assert.deepEqual(createdBy(controllers[shard]).filter((k) => k === key), [key], `${w.path}: its run created by the ${shard} controller once`);
      assert.deepEqual(createdBy(controllers[other]).filter((k) => k === key), [], `${w.path}: nothing made by the other controller`);
    }
    // The internal apiserver's audit log: one create per run, four runs.
    seen.push(...audit.readNew());
    const creates = seen.filter((e) => e.objectRef?.resource === 'pipelineruns' && !e.objectRef.subresource && e.verb === 'create' && (e.responseStatus?.code ?? 0) < 300 && e.user?.username === env.internal.identities.controller.username);
    const names = creates.map((e) => e.objectRef?.name ?? "(generated)");
    console.log(`audit: ${creates.length} PipelineRun creates for ${all.length} requests (${names.join(', ')})`);
    assert.equal(creates.length, all.length, 'one PipelineRun created per request, across both controllers');
  });

  test('a workspace bound later on shard-1 is taken up by the shard-1 controller only (the slice is watched)', { timeout: 300_000 }, async () => {
    const late = await tenant('root:part-late', 'shard-1');
    await waitFor('served by the shard-1 controller', async () => servedBy(controllers['shard-1']).has(late.cluster), 90_000, 250);
    await create(late, 'late');
    const r = await waitFor('late request finished', async () => {
      const x = await get(late, 'late');
      const reason = x.status?.conditions?.[0]?.reason;
      return reason && reason !== 'Running' ? x : undefined;
    }, 120_000, 500);
    assert.equal(r.status?.conditions?.[0]?.reason, 'Succeeded');
    assert.ok(!servedBy(controllers.root).has(late.cluster), 'not served by the root controller');
  });
});

describe('a partition whose workspace\'s path cannot be read (real sharded kcp)', () => {
  test('its requests wait (WaitingForWorkspace), never Rejected; once the parent is readable, decided under the path and run', { timeout: 300_000 }, async () => {
    // root:part-org without config/kcp/parent: its Workspaces cannot be listed by the controller's identity.
    await createWorkspace(kcp, 'root:part-org', 90_000, { label: SHARD_LABEL, value: 'root' });
    const held = await tenant('root:part-org:held', 'shard-1');
    await controllers['shard-1'].kill('SIGKILL');
    controllers['shard-1'] = runKcpController(env, kcp, ['--metrics-bind-address', '0', '--kcp-endpoint-slice', SLICE['shard-1'], '--kcp-refresh-interval', '2s', '--kcp-workspace-parent', 'root', 'root:part-org']);
    await controllers['shard-1'].waitForLog((l) => l.msg === 'kcp: a workspace whose path cannot be read yet; served held: its requests wait, nothing of it is decided until its path is known' && l.cluster === held.cluster, 120_000);
    await create(held, 'waits');
    const waiting = await waitFor('the request waits', async () => {
      const r = await get(held, 'waits');
      return r.status?.conditions?.find((c) => c.type === 'Progressing')?.reason === 'WaitingForWorkspace' ? r : undefined;
    }, 60_000, 250);
    assert.deepEqual([waiting.status?.conditions?.[0]?.status, waiting.status?.conditions?.[0]?.reason], ['Unknown', 'Running'], 'the requester waits; nothing is Rejected under a guessed name');
    assert.ok(!servedBy(controllers.root).has(held.cluster), 'the other partition does not serve it');
    await grantWorkspaceReader(kcp, 'root:part-org');
    const done = await waitFor('decided under its path and run', async () => {
      const r = await get(held, 'waits');
      const reason = r.status?.conditions?.[0]?.reason;
      return reason && reason !== 'Running' ? r : undefined;
    }, 120_000, 500);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', done.status?.conditions?.[0]?.message);
  });
});

function eq(a: Set<string>, b: Set<string>): boolean {
  return a.size === b.size && [...a].every((x) => b.has(x));
}
