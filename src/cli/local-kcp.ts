/**
 * `internal-services local --kcp [--keep]`: the story on kcp, on this
 * machine. A real kcp (built from its Go module, cached) publishes the
 * request API from the provider workspace root:internal-services; three
 * tenant workspaces bind it and each has namespace "team"; the internal
 * cluster (a real kube-apiserver with real Tekton; pods SIMULATED) runs the
 * sample Pipeline; the controller serves every bound workspace through ONE
 * kubeconfig (the provider workspace's, as its own non-admin identity).
 *
 * The same request (one namespace, one name) is created in each workspace:
 * two are on the allowList by workspace path and run, each with its own
 * params and results written back into its own workspace; the third is
 * Rejected with a message naming its path. Exits 0 only when all three ended
 * so.
 */
import { CustomObjectsApi } from '@kubernetes/client-node';
import {
  applyObjects, bindExport, createWorkspace, ensureNamespace, freePorts, grantKcpRequester, installKcpProvider, installProject, startEnvironment, startShardedKcp, shardOfWorkspace, SHARD_LABEL,
  CONTROLLER_NAMESPACE, KCP_PROVIDER_PATH,
  type Environment, type ShardedKcp, type KcpWorkspace,
} from '../localenv/index.js';
import { CONFIG_NAME, type InternalRequest } from '../api/types.js';
import { phaseOf } from '../api/conditions.js';
import { requesterLoop } from '../api/readers.js';
import { SAMPLE_CONFIG, SAMPLE_PIPELINE, sample, sampleRequestSpec, withSimulatedSteps } from './local-files.js';
import { keepRunning, startControllerProcess, stopControllerProcess, stopOnSignals, waitForReady, type ControllerChild } from './local-processes.js';

const IR = { group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalrequests' } as const;
const NAMESPACE = 'team';
const REQUEST = 'sign-release-1';
const TIMEOUT_MS = 120_000;
/** The tenants: the first two are allowed by path, the third binds the API but is not on the allowList. */
const TENANTS = [
  { path: 'root:team-a', allowed: true, shard: 'root' },
  { path: 'root:team-b', allowed: true, shard: 'shard-1' },
  { path: 'root:team-c', allowed: false, shard: 'shard-1' },
] as const;

const started = Date.now();
const out = (line = ''): void => void process.stdout.write(`${line}\n`);
const progress = (msg: string): void => out(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${msg}`);

export async function runLocalKcp(flags: { keep?: boolean }): Promise<void> {
  let env: Environment | undefined;
  let kcp: ShardedKcp | undefined;
  let controller: ControllerChild | undefined;
  let cleaning: Promise<void> | undefined;
  const cleanup = (): Promise<void> =>
    (cleaning ??= (async () => {
      if (controller) await stopControllerProcess(controller).catch(() => {});
      await Promise.all([env?.stop().catch(() => {}), kcp?.stop().catch(() => {})]);
    })());
  const signals = stopOnSignals(cleanup);

  try {
    const pipeline = withSimulatedSteps(sample(SAMPLE_PIPELINE));
    pipeline.metadata = { ...pipeline.metadata, namespace: CONTROLLER_NAMESPACE };
    const config = structuredClone(sample(SAMPLE_CONFIG));
    config.metadata = { ...config.metadata, namespace: CONTROLLER_NAMESPACE };
    if (config.metadata?.name !== CONFIG_NAME) throw new Error(`config/samples/${SAMPLE_CONFIG} must be named "${CONFIG_NAME}"`);
    // The sample configuration, serving namespace "team" of the allowed workspaces, by path.
    config['spec'] = { ...(config['spec'] as object), allowList: TENANTS.filter((t) => t.allowed).map((t) => `${t.path}/${NAMESPACE}`) };
    const base = sampleRequestSpec();

    out('internal-services local --kcp: a real sharded kcp (two shards, its cache server and front-proxy) whose workspaces, on both');
    out('shards, bind the request API; the internal cluster with real Tekton (only its pods are SIMULATED); and the controller serving');
    out('every workspace on every shard through one kubeconfig.');
    out();
    progress('starting a sharded kcp, and the internal control plane with Tekton (the first run builds them from Go modules, then they are cached)');
    [env, kcp] = await Promise.all([startEnvironment({ tekton: { stepMs: 500 }, log: (m) => progress(`  ${m}`) }), startShardedKcp({ shards: 2, log: (m) => progress(`  ${m}`) })]);
    progress(`kcp ${kcp.version} ready (after ${(kcp.startupMs / 1000).toFixed(0)} s): front-proxy ${kcp.url}; shards ${kcp.shards.map((s) => `${s.name} ${s.url}`).join(', ')}; internal cluster ${env.internal.url}`);
    await installProject(env);
    const internalAdmin = env.internal.identities.admin.kubeConfig();
    await applyObjects(internalAdmin, [pipeline, config]);
    progress(`internal cluster: Pipeline ${CONTROLLER_NAMESPACE}/${pipeline.metadata?.name ?? ''}; config allowList ${JSON.stringify((config['spec'] as { allowList: string[] }).allowList)}`);

    await createWorkspace(kcp, KCP_PROVIDER_PATH, 90_000, { label: SHARD_LABEL, value: 'root' });
    await installKcpProvider(kcp);
    progress(`kcp: provider workspace ${KCP_PROVIDER_PATH} holds the APIExport (config/kcp/provider)`);
    const workspaces: KcpWorkspace[] = [];
    for (const t of TENANTS) {
      const ws = await createWorkspace(kcp, t.path, 90_000, { label: SHARD_LABEL, value: t.shard });
      await bindExport(kcp, ws.path);
      await ensureNamespace(kcp.identities.admin.kubeConfig(ws.path), NAMESPACE);
      await grantKcpRequester(kcp, ws.path);
      workspaces.push(ws);
      progress(`kcp: workspace ${ws.path} on shard ${(await shardOfWorkspace(kcp, ws.path)) ?? '?'} binds the export; user "${kcp.identities.requester.username}" may create requests in namespace ${NAMESPACE}`);
    }

    const [healthPort, metricsPort] = (await freePorts(2)) as [number, number];
    const kcpKubeconfig = kcp.identities.controller.writeKubeconfig(KCP_PROVIDER_PATH);
    controller = startControllerProcess(env, healthPort, metricsPort, ['--kcp-kubeconfig', kcpKubeconfig]);
    progress(`controller started with --kcp-kubeconfig ${kcpKubeconfig} (the provider workspace, as user "${kcp.identities.controller.username}"); log ${controller.logPath}`);
    await waitForReady(controller);
    progress('controller ready (/readyz ok)');
    // One virtual workspace per shard, each served: the controller's own readiness lines say so.
    for (let i = 0; i < 60; i++) {
      const lines = (await (await fetch(`http://127.0.0.1:${healthPort}/readyz?verbose`)).text()).split('\n').filter((l) => l.includes('/shard/'));
      if (lines.length >= kcp.shards.length && lines.every((l) => l.startsWith('[+]'))) {
        for (const l of lines) progress(`  controller /readyz: ${l}`);
        break;
      }
      await new Promise((r) => setTimeout(r, 500));
    }

    // Each workspace's own image: the sample's, its repository named after the workspace.
    const image = (i: number) => (base.params?.['image'] ?? 'quay.io/example/app:1').replace(/^([^@:]+)/, `$1-${TENANTS[i]!.path.split(':').pop()}`);
    for (const [i, ws] of workspaces.entries()) {
      const api = kcp.identities.requester.kubeConfig(ws.path).makeApiClient(CustomObjectsApi);
      await api.createNamespacedCustomObject({ ...IR, namespace: NAMESPACE, body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name: REQUEST, namespace: NAMESPACE }, spec: { ...base, params: { ...base.params, image: image(i) } } } });
      progress(`submitted ${ws.path} ${NAMESPACE}/${REQUEST} (image ${image(i)})`);
    }

    // Every workspace's request, as its requester reads it, until each is final.
    const latest = new Map<string, InternalRequest>();
    const shown = new Map<string, string>();
    const deadline = Date.now() + TIMEOUT_MS;
    while (Date.now() < deadline) {
      for (const ws of workspaces) {
        const r = (await kcp.identities.requester.kubeConfig(ws.path).makeApiClient(CustomObjectsApi).getNamespacedCustomObject({ ...IR, namespace: NAMESPACE, name: REQUEST })) as InternalRequest;
        latest.set(ws.path, r);
        const line = `${r.status?.conditions?.[0]?.reason ?? '-'} / ${phaseOf(r) ?? '-'}`;
        if (shown.get(ws.path) !== line) progress(`  ${ws.path}: ${line}`);
        shown.set(ws.path, line);
      }
      if ([...latest.values()].every((r) => requesterLoop(r) !== 'wait')) break;
      await new Promise((r) => setTimeout(r, 500));
    }

    out();
    out('Outcome, as each workspace\'s requester sees it:');
    let good = 0;
    for (const [i, t] of TENANTS.entries()) {
      const r = latest.get(t.path);
      const c = r?.status?.conditions?.[0];
      const ok = t.allowed
        ? c?.reason === 'Succeeded' && Object.values(r?.status?.results ?? {}).some((v) => v.includes(image(i)))
        : c?.reason === 'Rejected' && (c.message ?? '').includes(`"${t.path}"`);
      if (ok) good++;
      out();
      out(`  ${ok ? '[ok]        ' : '[UNEXPECTED]'} ${t.path} (shard ${t.shard}) ${NAMESPACE}/${REQUEST} — ${t.allowed ? 'allowed by path: runs, results back in this workspace' : 'binds the API but is not on the allowList: Rejected, naming the workspace'}`);
      out(`      condition: Succeeded=${c?.status ?? '?'}, reason ${c?.reason ?? '?'}`);
      out(`      message:   ${c?.message ?? ''}`);
      for (const [k, v] of Object.entries(r?.status?.results ?? {})) out(`      result:    ${k} = ${v}`);
    }
    out();
    const allGood = good === TENANTS.length;
    out(allGood ? `All ${TENANTS.length} requests ended as expected.` : `${TENANTS.length - good} of ${TENANTS.length} did NOT end as expected (controller log: ${controller.logPath}).`);

    if (flags.keep) {
      await keepRunning(signals, [
        `export PATH="${env.assets.binDir}:$PATH"`,
        `export KCP_ADMIN=${kcp.identities.admin.writeKubeconfig('root')}`,
        `export REQUESTER_A=${kcp.identities.requester.writeKubeconfig('root:team-a')}`,
        `export INTERNAL=${env.internal.identities.admin.kubeconfigPath}`,
        `kubectl --kubeconfig $REQUESTER_A -n ${NAMESPACE} get internalrequests`,
        `kubectl --kubeconfig $KCP_ADMIN get workspaces`,
        `kubectl --kubeconfig $INTERNAL -n ${CONTROLLER_NAMESPACE} get pipelineruns,taskruns`,
        `tail -f ${controller.logPath} ${kcp.logPath}`,
      ], out);
    }
    await cleanup();
    if (!allGood) process.exitCode = 1;
  } catch (e) {
    await cleanup();
    throw e;
  }
}
