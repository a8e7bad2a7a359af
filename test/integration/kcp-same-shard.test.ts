/**
 * Two workspaces on the SAME kcp shard with one request name (issue 43):
 * each workspace's `team/collide` is its own request — identity is (logical
 * cluster, namespace, name) — although the shard's one wildcard watch shows
 * both. The controller (its real command-line process, through the
 * provider workspace's kubeconfig and the front-proxy, as in
 * kcp-controller.test.ts) serves a REAL sharded kcp (two shards, cache
 * server, front-proxy), and runs on the internal cluster's REAL Tekton
 * (pods simulated, the runs held open until released).
 *
 * On each shard (shard-1, then root), in both event orders: the workspace
 * whose request event the shard's cache stored FIRST deletes its request,
 * after the other workspace's request was changed LAST (a label), which is
 * when a cache keyed by namespace/name alone hands the other workspace's
 * copy to the delete. Its run, and only its run, is cancelled (once) and
 * removed; the other runs on, is released, succeeds, and its outcome is
 * written into its own workspace. Counted by the internal apiserver's audit
 * log: each PipelineRun created once; the deleted request's run patched
 * (cancelled) once by the controller, the other's never.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import {
  applyObjects, bindExport, createWorkspace, ensureNamespace, grantKcpRequester, installKcpProvider, installProject, startEnvironment, startShardedKcp,
  shardOfWorkspace, SHARD_LABEL, KCP_PROVIDER_PATH,
  type Environment, type KcpWorkspace, type ShardedKcp,
  startTogether,
} from '../../src/localenv/index.js';
import type { InternalRequest } from '../../src/api/types.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';
import { AuditReader, type AuditEvent } from '../../bench/audit.js';
import { LABEL_REQUEST_REMOTE } from '../../src/tekton/pipelinerun.js';
import { IR, NS, onlyPipelineRunOf, pipelineRunsFor, releaseRun, runKcpController, setRunConfig, simulatedStep, testPipeline, waitFor, type ControllerProcess } from './helpers.js';

const TEAM = 'team';
const NAME = 'collide';
let env: Environment;
let kcp: ShardedKcp;
let internalAdmin: KubeConfig;
let controller: ControllerProcess;
let audit: AuditReader;
/** Every audit event of the internal apiserver read so far. */
const seen: AuditEvent[] = [];
/** Two workspaces on each shard. */
const on: Record<'shard-1' | 'root', [KcpWorkspace, KcpWorkspace]> = {} as never;

const requester = (ws: KcpWorkspace) => kcp.identities.requester.kubeConfig(ws.path).makeApiClient(CustomObjectsApi);
const get = (ws: KcpWorkspace) => requester(ws).getNamespacedCustomObject({ ...IR, namespace: TEAM, name: NAME }) as Promise<InternalRequest>;
const phaseOf = async (ws: KcpWorkspace) => (await get(ws)).status?.conditions?.find((x) => x.type === 'Progressing')?.reason;
const create = (ws: KcpWorkspace) =>
  requester(ws).createNamespacedCustomObject({ ...IR, namespace: TEAM, body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name: NAME, namespace: TEAM }, spec: { request: 'hold' } } }) as Promise<InternalRequest>;
const remove = (ws: KcpWorkspace) => requester(ws).deleteNamespacedCustomObject({ ...IR, namespace: TEAM, name: NAME });
/** A change to the request that the controller has nothing to do about: its watch event becomes the shard's latest for team/collide. */
const touch = (ws: KcpWorkspace, n: number) =>
  requester(ws).patchNamespacedCustomObject({ ...IR, namespace: TEAM, name: NAME, body: { metadata: { labels: { touched: String(n) } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
const gone = async (ws: KcpWorkspace) => {
  try {
    await get(ws);
    return false;
  } catch (err) {
    return (err as { code?: number }).code === 404;
  }
};

/** The controller's requests to the internal apiserver about one PipelineRun, by verb (creates that succeeded). */
function prWrites(name: string): { create: number; patch: number; delete: number } {
  seen.push(...audit.readNew());
  const mine = seen.filter((e) => e.user?.username === env.internal.identities.controller.username && e.objectRef?.resource === 'pipelineruns' && !e.objectRef.subresource && e.objectRef.name === name);
  const count = (verb: string) => mine.filter((e) => e.verb === verb && (e.responseStatus?.code ?? 0) < 300).length;
  return { create: count('create'), patch: count('patch'), delete: count('delete') };
}

before(async () => {
  [env, kcp] = await startTogether(startEnvironment({ tekton: true, audit: true }), startShardedKcp({ shards: 2 }));
  await installProject(env);
  internalAdmin = env.internal.identities.admin.kubeConfig();
  audit = new AuditReader('internal', env.internal.auditLogPath!);
  // Gated: a run ends when the test releases it (or it is cancelled).
  await applyObjects(internalAdmin, [testPipeline('hold', { tasks: [{ name: 't', taskSpec: { steps: [simulatedStep('s', { SIMULATED_DURATION: 'gate' })] } }] })] as never);
  const paths = ['root:same-a', 'root:same-b', 'root:same-c', 'root:same-d'];
  await setRunConfig(internalAdmin, { allowList: paths.map((p) => `${p}/${TEAM}`) });
  await createWorkspace(kcp, KCP_PROVIDER_PATH, 90_000, { label: SHARD_LABEL, value: 'root' });
  await installKcpProvider(kcp);
  const place: Array<[string, string]> = [[paths[0]!, 'shard-1'], [paths[1]!, 'shard-1'], [paths[2]!, 'root'], [paths[3]!, 'root']];
  const [a, b, c, d] = (await Promise.all(place.map(([p, shard]) => createWorkspace(kcp, p, 90_000, { label: SHARD_LABEL, value: shard })))) as [KcpWorkspace, KcpWorkspace, KcpWorkspace, KcpWorkspace];
  for (const ws of [a, b, c, d]) {
    await bindExport(kcp, ws.path);
    await ensureNamespace(kcp.identities.admin.kubeConfig(ws.path), TEAM);
    await grantKcpRequester(kcp, ws.path);
  }
  on['shard-1'] = [a, b];
  on.root = [c, d];
  controller = runKcpController(env, kcp, ['--metrics-bind-address', '0', '--kcp-refresh-interval', '2s']);
  await controller.waitForLog((l) => l.msg === 'caches synced', 90_000);
}, { timeout: 900_000 });

after(async () => {
  await controller?.kill('SIGKILL');
  await Promise.all([kcp?.stop(), env?.stop()]);
});

/**
 * One round: `first` creates team/collide, then `second` does; both run.
 * `second`'s request is changed last; `first` deletes its request. Then
 * `second`'s run is released, and its request deleted (for the next round).
 */
async function round(first: KcpWorkspace, second: KcpWorkspace): Promise<void> {
  const mark = controller.lines.length;
  const rFirst = await create(first);
  const rSecond = await create(second);
  assert.notEqual(rFirst.metadata.uid, rSecond.metadata.uid);
  assert.deepEqual([rFirst, rSecond].map((r) => r.metadata.annotations?.['kcp.io/cluster']), [first.cluster, second.cluster]);
  // Both run, each its own PipelineRun, labelled with its own workspace.
  const [pFirst, pSecond] = (await Promise.all([onlyPipelineRunOf(internalAdmin, rFirst.metadata.uid!), onlyPipelineRunOf(internalAdmin, rSecond.metadata.uid!)])) as [PipelineRun, PipelineRun];
  assert.notEqual(pFirst.metadata.name, pSecond.metadata.name);
  assert.equal(pFirst.metadata.labels?.[LABEL_REQUEST_REMOTE], first.cluster);
  assert.equal(pSecond.metadata.labels?.[LABEL_REQUEST_REMOTE], second.cluster);
  await waitFor('both Running', async () => (await phaseOf(first)) === 'Running' && (await phaseOf(second)) === 'Running', 60_000, 250);
  // The second's request is the shard's latest event for team/collide: once the controller's status writes
  // have settled, a change to it (one etcd per shard: resourceVersions of both workspaces compare).
  await waitFor('the order: the second\'s request changed last', async () => {
    const before = await Promise.all([get(first), get(second)]);
    await new Promise((r) => setTimeout(r, 1_500));
    const settled = await Promise.all([get(first), get(second)]);
    if (settled.some((r, i) => r.metadata.resourceVersion !== before[i]!.metadata.resourceVersion)) return undefined;
    await touch(second, Date.now());
    await new Promise((r) => setTimeout(r, 1_000));
    const [f, s] = await Promise.all([get(first), get(second)]);
    return BigInt(f.metadata.resourceVersion!) < BigInt(s.metadata.resourceVersion!) && f.metadata.resourceVersion === settled[0]!.metadata.resourceVersion;
  }, 60_000, 0);

  // The first deletes its request: its run is cancelled and removed; the second's runs on.
  await remove(first);
  await waitFor(`${first.path}'s PipelineRun gone`, async () => (await pipelineRunsFor(internalAdmin, rFirst.metadata.uid!)).length === 0, 90_000, 500);
  const still = await pipelineRunsFor(internalAdmin, rSecond.metadata.uid!);
  assert.equal(still.length, 1, `${second.path}'s PipelineRun is there`);
  assert.notEqual(still[0]!.spec.status, 'Cancelled', `${second.path}'s PipelineRun is not cancelled`);
  assert.equal(await phaseOf(second), 'Running');
  const cancelled = controller.lines.slice(mark).filter((l) => l.msg === 'PipelineRun cancelled');
  assert.deepEqual(cancelled.map((l) => [l.request, l.pipelineRun]), [[`${first.cluster}/${TEAM}/${NAME}`, `${NS}/${pFirst.metadata.name}`]], 'one cancel, of the deleted request\'s run');

  // The second's run ends: its outcome is written into its own workspace.
  await releaseRun(env, pSecond.metadata.name!);
  const done = await waitFor(`${second.path} finished`, async () => {
    const r = await get(second);
    return r.status?.conditions?.[0]?.reason && r.status.conditions[0].reason !== 'Running' ? r : undefined;
  }, 90_000, 250);
  assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', done.status?.conditions?.[0]?.message);
  assert.equal(done.metadata.uid, rSecond.metadata.uid);
  assert.equal(done.status?.pipelineRun, `${NS}/${pSecond.metadata.name}`);
  assert.ok(await gone(first), `${first.path}'s request stays deleted`);
  // Finished, its run is removed (debug is off).
  await waitFor(`${second.path}'s finished PipelineRun removed`, async () => (await pipelineRunsFor(internalAdmin, rSecond.metadata.uid!)).length === 0, 60_000, 500);

  // The internal apiserver's audit log: each run created once; only the deleted request's run cancelled, once.
  const wFirst = prWrites(pFirst.metadata.name!);
  const wSecond = prWrites(pSecond.metadata.name!);
  console.log(`same shard, ${first.path} deletes first: audit ${pFirst.metadata.name} ${JSON.stringify(wFirst)}, ${pSecond.metadata.name} ${JSON.stringify(wSecond)}`);
  assert.deepEqual(wFirst, { create: 1, patch: 1, delete: 1 }, `${first.path}'s run: created once, cancelled (patched) once, removed once`);
  assert.deepEqual(wSecond, { create: 1, patch: 0, delete: 1 }, `${second.path}'s run: created once, never cancelled, removed once when finished`);

  // For the next round: the second's request goes too.
  await remove(second);
  await waitFor(`${second.path}'s request gone`, () => gone(second), 30_000, 250);
}

describe('two workspaces on one kcp shard, one request name: each request is its own (real sharded kcp, real Tekton)', () => {
  for (const shard of ['shard-1', 'root'] as const) {
    test(`on ${shard}: both run; the one deleted first is the only one cancelled, in both event orders`, { timeout: 600_000 }, async () => {
      const [x, y] = on[shard];
      assert.deepEqual(await Promise.all([x, y].map((w) => shardOfWorkspace(kcp, w.path))), [shard, shard]);
      assert.notEqual(x.cluster, y.cluster);
      // x created first, deletes first (y's event the latest); then the other way round.
      await round(x, y);
      await round(y, x);
    });
  }
});
