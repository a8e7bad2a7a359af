/**
 * `internal-services local --kcp [--keep]`: the story on kcp, on this
 * machine, as tenants meet it. A real sharded kcp (built from its Go module,
 * cached) publishes the request API from the provider workspace
 * root:internal-services; three tenant workspaces on two shards bind it and
 * each has namespace "team"; the internal cluster (a real kube-apiserver
 * with real Tekton, its pods on a real node where one can start, else
 * SIMULATED: local-pods.ts) runs the sample Pipeline, and Tekton's
 * git resolver reads a git catalog served on loopback (the one the plain
 * demo serves); the controller serves every bound workspace through ONE
 * kubeconfig (the provider workspace's, as its own non-admin identity).
 *
 * Five requests:
 *  - the same request (one namespace, one name, the original spec.request
 *    shape) in each workspace: two are on the allowList by workspace path
 *    and run, each with its own params and results written back into its
 *    own workspace; the third is Rejected with a message naming its path;
 *  - in root:team-a, today's shape (spec.pipeline.pipelineRef with the git
 *    resolver, its Task from $(params.taskGitUrl)), created as the release
 *    tooling creates it: `kubectl create -f` of a file without a namespace,
 *    with the requester's kubeconfig, whose context names the allowed
 *    namespace: checked, pinned and run;
 *  - the same file with a kubeconfig whose context names no namespace: it
 *    lands in "default" and is Rejected, naming the allowList entry that
 *    would serve it (root:team-a/default) and the namespace the workspace
 *    is served in.
 * Exits 0 only when all five ended so.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { CustomObjectsApi } from '@kubernetes/client-node';
import {
  applyObjects, bindExport, createWorkspace, ensureNamespace, freePorts, grantKcpRequester, installKcpProvider, installProject, startEnvironment, startShardedKcp, shardOfWorkspace, SHARD_LABEL,
  CONTROLLER_NAMESPACE, KCP_PROVIDER_PATH,
  type Environment, type ShardedKcp, type KcpWorkspace,
  startTogether,
} from '../localenv/index.js';
import { CONFIG_NAME, type InternalRequest } from '../api/types.js';
import { phaseOf } from '../api/conditions.js';
import { requesterLoop } from '../api/readers.js';
import { SAMPLE_CONFIG, SAMPLE_PIPELINE, sample, sampleRequestSpec } from './local-files.js';
import { choosePods, environmentOptions, forPods, podsLabel, resultProblem, signResults } from './local-pods.js';
import { CATALOG_PIPELINE, catalogFiles, catalogSourceRule, todaysSpec, withCatalogSource } from './local-samples.js';
import { keepRunning, pluginScript, startControllerProcess, stopControllerProcess, stopOnSignals, waitForReady, type ControllerChild } from './local-processes.js';

const IR = { group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalrequests' } as const;
const NAMESPACE = 'team';
const REQUEST = 'sign-release-1';
/** The namespace a client that passes none creates in when its kubeconfig's context names none. */
const NO_NAMESPACE = 'default';
const TIMEOUT_MS = 120_000;
const execFileP = promisify(execFile);
/** The tenants: the first two are allowed by path, the third binds the API but is not on the allowList. */
const TENANTS = [
  { path: 'root:team-a', allowed: true, shard: 'root' },
  { path: 'root:team-b', allowed: true, shard: 'shard-1' },
  { path: 'root:team-c', allowed: false, shard: 'shard-1' },
] as const;
type Tenant = (typeof TENANTS)[number];

/** One request of the tour, where it is and what it must end as. */
interface Case {
  tenant: Tenant;
  namespace: string;
  name: string;
  story: string;
  /** How it was created, when not through the API directly. */
  created?: string;
  /** Why it did not end as it must; undefined when it did. */
  problem(r: InternalRequest | undefined): string | undefined;
}

/** status.pipeline, as far as the tour shows it. */
type Pinned = { resolver?: string; source?: string; path?: string; revision?: string; digest?: string };

const started = Date.now();
const out = (line = ''): void => void process.stdout.write(`${line}\n`);
const progress = (msg: string): void => out(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${msg}`);

export async function runLocalKcp(flags: { keep?: boolean; simulatedPods?: boolean }): Promise<void> {
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
    const pods = choosePods(flags.simulatedPods === true);
    const where = podsLabel(pods);
    const samplePipeline = sample(SAMPLE_PIPELINE);
    samplePipeline.metadata = { ...samplePipeline.metadata, namespace: CONTROLLER_NAMESPACE };
    const sampleConfig = structuredClone(sample(SAMPLE_CONFIG));
    sampleConfig.metadata = { ...sampleConfig.metadata, namespace: CONTROLLER_NAMESPACE };
    if (sampleConfig.metadata?.name !== CONFIG_NAME) throw new Error(`config/samples/${SAMPLE_CONFIG} must be named "${CONFIG_NAME}"`);
    // The sample configuration, serving namespace "team" of the allowed workspaces, by path.
    const allowList = TENANTS.filter((t) => t.allowed).map((t) => `${t.path}/${NAMESPACE}`);
    sampleConfig['spec'] = { ...(sampleConfig['spec'] as object), allowList };
    const base = sampleRequestSpec();

    out('internal-services local --kcp: a real sharded kcp (two shards, its cache server and front-proxy) whose workspaces, on both');
    out(`shards, bind the request API; the internal cluster with real Tekton (${where}) and a git catalog for`);
    out("today's request shape; and the controller serving every workspace on every shard through one kubeconfig.");
    out(pods.real ? "The sample steps are shell scripts that compute their results from the params, in the real node's busybox image." : 'The simulated kubelet runs no script: it reports results derived from the params (SIMULATED_* env on the steps).');
    out();
    progress('starting a sharded kcp, and the internal control plane with Tekton (the first run builds them from Go modules, then they are cached)');
    [env, kcp] = await startTogether(startEnvironment({ ...environmentOptions(pods), log: (m) => progress(`  ${m}`) }), startShardedKcp({ shards: 2, log: (m) => progress(`  ${m}`) }));
    progress(`kcp ${kcp.version} ready (after ${(kcp.startupMs / 1000).toFixed(0)} s): front-proxy ${kcp.url}; shards ${kcp.shards.map((s) => `${s.name} ${s.url}`).join(', ')}; internal cluster ${env.internal.url}`);
    if (env.node) progress(`real node ${env.node.name} Ready after ${env.node.startupMs} ms; step image ${env.node.shellImage}`);
    const ready = (m: Parameters<typeof forPods>[0]) => forPods(m, pods, env);
    const pipeline = ready(samplePipeline);
    await installProject(env);
    const internalAdmin = env.internal.identities.admin.kubeConfig();
    // The git catalog today's requests resolve from (git daemon on loopback, as in the plain demo), allowed by the config.
    const catalog = await env.tekton!.git.repository('release-catalog');
    await catalog.commit(catalogFiles(ready), 'the release catalog (sample)');
    const config = withCatalogSource(sampleConfig, catalog.url);
    await applyObjects(internalAdmin, [pipeline, config]);
    progress(`git catalog ${catalog.url} (git daemon on loopback): the Pipeline and Task of today's request shape`);
    progress(`internal cluster: Pipeline ${CONTROLLER_NAMESPACE}/${pipeline.metadata?.name ?? ''}; config allowList ${JSON.stringify(allowList)}; sources.git also allows ${JSON.stringify(catalogSourceRule(catalog.url))}`);

    await createWorkspace(kcp, KCP_PROVIDER_PATH, 90_000, { label: SHARD_LABEL, value: 'root' });
    await installKcpProvider(kcp);
    progress(`kcp: provider workspace ${KCP_PROVIDER_PATH} holds the APIExport (config/kcp/provider)`);
    const workspaces: KcpWorkspace[] = [];
    for (const t of TENANTS) {
      const ws = await createWorkspace(kcp, t.path, 90_000, { label: SHARD_LABEL, value: t.shard });
      await bindExport(kcp, ws.path);
      const admin = kcp.identities.admin.kubeConfig(ws.path);
      await ensureNamespace(admin, NAMESPACE);
      await ensureNamespace(admin, NO_NAMESPACE);
      await grantKcpRequester(kcp, ws.path);
      workspaces.push(ws);
      progress(`kcp: workspace ${ws.path} on shard ${(await shardOfWorkspace(kcp, ws.path)) ?? '?'} binds the export; user "${kcp.identities.requester.username}" may create requests there (config/kcp/tenant/requester_role.yaml)`);
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
    const image = (t: Tenant) => (base.params?.['image'] ?? 'quay.io/example/app:1').replace(/^([^@:]+)/, `$1-${t.path.split(':').pop()}`);
    const cases: Case[] = [];
    for (const t of TENANTS) {
      const api = kcp.identities.requester.kubeConfig(t.path).makeApiClient(CustomObjectsApi);
      await api.createNamespacedCustomObject({ ...IR, namespace: NAMESPACE, body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name: REQUEST, namespace: NAMESPACE }, spec: { ...base, params: { ...base.params, image: image(t) } } } });
      progress(`submitted ${t.path} ${NAMESPACE}/${REQUEST} (spec.request, image ${image(t)})`);
      cases.push({
        tenant: t,
        namespace: NAMESPACE,
        name: REQUEST,
        story: t.allowed ? 'allowed by path: runs, results back in this workspace' : 'binds the API but is not on the allowList: Rejected, naming the workspace',
        problem: (r) => {
          const c = r?.status?.conditions?.[0];
          if (t.allowed) return c?.reason !== 'Succeeded' ? 'expected Succeeded' : resultProblem(pods, 'signature', r?.status?.results?.['signature'], image(t), signResults(image(t)));
          return c?.reason === 'Rejected' && (c.message ?? '').includes(`"${t.path}"`) ? undefined : 'expected Rejected naming the workspace';
        },
      });
    }

    // A tenant in root:team-a with today's release tooling: a request file without a namespace, `kubectl create -f` through the front-proxy.
    const home = TENANTS[0];
    const requesterKubeconfig = kcp.identities.requester.writeKubeconfig(home.path, { namespace: NAMESPACE });
    const plainKubeconfig = kcp.identities.requester.writeKubeconfig(home.path);
    const requestFile = join(kcp.dir, 'git-request.yaml');
    writeFileSync(
      requestFile,
      [
        "# Today's request shape: the Pipeline from the git catalog through Tekton's git resolver, its",
        '# Task from the same catalog ($(params.taskGitUrl) at $(params.taskGitRevision)). No namespace:',
        "# the kubeconfig's context names it, as the release tooling's clients expect (they pass no -n).",
        `#   kubectl --kubeconfig ${requesterKubeconfig} create -f ${requestFile}`,
        stringify({ apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { generateName: 'sign-image-' }, spec: todaysSpec(catalog.url, image(home)) }),
      ].join('\n'),
    );
    const kubectl = join(env.assets.binDir, 'kubectl');
    const kubectlCreate = async (kubeconfig: string): Promise<{ namespace: string; name: string }> => {
      const args = ['--kubeconfig', kubeconfig, '--cache-dir', join(kcp!.dir, 'kubectl-cache'), 'create', '-f', requestFile, '-o', 'jsonpath={.metadata.namespace}/{.metadata.name}'];
      const { stdout } = await execFileP(kubectl, args).catch((e: Error & { stderr?: string }) => {
        throw new Error(`kubectl ${args.join(' ')} failed: ${e.stderr?.trim() || e.message}`);
      });
      const [namespace = '', name = ''] = stdout.trim().split('/');
      return { namespace, name };
    };
    const todays = await kubectlCreate(requesterKubeconfig);
    progress(`submitted ${home.path} ${todays.namespace}/${todays.name} (today's shape, git resolver): kubectl create -f ${requestFile}, no -n; the kubeconfig's context names namespace "${NAMESPACE}"`);
    cases.push({
      tenant: home,
      ...todays,
      story: "today's shape, spec.pipeline.pipelineRef with the git resolver from the catalog, its Task from $(params.taskGitUrl): checked, pinned, runs",
      created: `kubectl create -f ${requestFile} (no -n) with ${requesterKubeconfig} (its context: namespace "${NAMESPACE}")`,
      problem: (r) => {
        const c = r?.status?.conditions?.[0];
        const pinned = (r?.status as { pipeline?: Pinned } | undefined)?.pipeline;
        if (todays.namespace !== NAMESPACE) return `created in namespace "${todays.namespace}", not the context's "${NAMESPACE}"`;
        if (c?.reason !== 'Succeeded') return 'expected Succeeded';
        const wrong = resultProblem(pods, 'signature', r?.status?.results?.['signature'], image(home), signResults(image(home)));
        if (wrong) return wrong;
        if (pinned?.resolver !== 'git' || pinned.path !== CATALOG_PIPELINE || !pinned.digest) return 'expected status.pipeline to name the git source and the commit it ran at';
        return undefined;
      },
    });
    const stray = await kubectlCreate(plainKubeconfig);
    progress(`submitted ${home.path} ${stray.namespace}/${stray.name} (the same file, with a kubeconfig whose context names no namespace)`);
    cases.push({
      tenant: home,
      ...stray,
      story: 'the same file with a kubeconfig that names no namespace: created in "default", Rejected, naming the entry that would serve it and the namespace to use',
      created: `kubectl create -f ${requestFile} (no -n) with ${plainKubeconfig} (its context names no namespace)`,
      problem: (r) => {
        const m = r?.status?.conditions?.[0]?.reason === 'Rejected' ? (r.status?.conditions?.[0]?.message ?? '') : '';
        if (stray.namespace !== NO_NAMESPACE) return `created in namespace "${stray.namespace}", not "${NO_NAMESPACE}"`;
        return m.includes(`"${home.path}/${NO_NAMESPACE}"`) && m.includes(`"${NAMESPACE}"`) ? undefined : `expected Rejected naming the entry "${home.path}/${NO_NAMESPACE}" and the namespace "${NAMESPACE}"`;
      },
    });

    // Every request, as its requester reads it, until each is final.
    const latest = new Map<Case, InternalRequest>();
    const shown = new Map<Case, string>();
    const deadline = Date.now() + (pods.real ? 2 * TIMEOUT_MS : TIMEOUT_MS);
    while (Date.now() < deadline) {
      for (const c of cases) {
        if (latest.has(c) && requesterLoop(latest.get(c)!) !== 'wait') continue;
        const r = (await kcp.identities.requester.kubeConfig(c.tenant.path).makeApiClient(CustomObjectsApi).getNamespacedCustomObject({ ...IR, namespace: c.namespace, name: c.name })) as InternalRequest;
        latest.set(c, r);
        const line = `${r.status?.conditions?.[0]?.reason ?? '-'} / ${phaseOf(r) ?? '-'}`;
        if (shown.get(c) !== line) progress(`  ${c.tenant.path} ${c.namespace}/${c.name}: ${line}`);
        shown.set(c, line);
      }
      if (cases.every((c) => latest.has(c) && requesterLoop(latest.get(c)!) !== 'wait')) break;
      await new Promise((r) => setTimeout(r, 500));
    }

    out();
    out(`Outcome, as each workspace's requester sees it (${where}):`);
    let good = 0;
    for (const k of cases) {
      const r = latest.get(k);
      const c = r?.status?.conditions?.[0];
      const problem = k.problem(r);
      if (!problem) good++;
      out();
      out(`  ${!problem ? '[ok]        ' : '[UNEXPECTED]'} ${k.tenant.path} (shard ${k.tenant.shard}) ${k.namespace}/${k.name} — ${k.story}`);
      if (k.created) out(`      created:   ${k.created}`);
      out(`      condition: Succeeded=${c?.status ?? '?'}, reason ${c?.reason ?? '?'}`);
      out(`      message:   ${c?.message ?? ''}`);
      const pinned = (r?.status as { pipeline?: Pinned } | undefined)?.pipeline;
      if (pinned) out(`      pipeline:  ${pinned.resolver ?? '?'} ${pinned.source ?? '?'} ${pinned.path ?? ''} revision ${pinned.revision ?? '?'}, ran at ${pinned.digest ?? '?'}`);
      for (const [key, v] of Object.entries(r?.status?.results ?? {})) out(`      result:    ${key} = ${v}`);
      if (problem) out(`      expected otherwise: ${problem}`);
    }
    out();
    const allGood = good === cases.length;
    out(allGood ? `All ${cases.length} requests ended as expected.` : `${cases.length - good} of ${cases.length} did NOT end as expected (controller log: ${controller.logPath}).`);

    if (flags.keep) {
      const plugin = `node ${pluginScript()}`;
      await keepRunning(signals, [
        `export PATH="${env.assets.binDir}:$PATH"`,
        `export KCP_ADMIN=${kcp.identities.admin.writeKubeconfig('root')}`,
        `export REQUESTER_A=${requesterKubeconfig}   # user "${kcp.identities.requester.username}" in ${home.path} through the front-proxy; its context's namespace is "${NAMESPACE}"`,
        `export INTERNAL=${env.internal.identities.admin.kubeconfigPath}`,
        '# as a tenant in root:team-a (no -n anywhere: the context names the namespace; KUBECONFIG=$REQUESTER_A for clients that read it):',
        `kubectl --kubeconfig $REQUESTER_A get internalrequests`,
        `kubectl --kubeconfig $REQUESTER_A create -f ${requestFile}   # today's shape; prints the name`,
        `kubectl --kubeconfig $REQUESTER_A wait --for=jsonpath='{.status.conditions[0].reason}'=Succeeded internalrequest/NAME --timeout=5m`,
        `kubectl --kubeconfig $REQUESTER_A get internalrequest NAME -o jsonpath='{.status.results}'`,
        `KUBECONFIG=$REQUESTER_A ${plugin} create --git-url ${catalog.url} --git-revision main --path ${CATALOG_PIPELINE} image=${image(home)} taskGitUrl=${catalog.url} taskGitRevision=main`,
        '# the internal side:',
        `kubectl --kubeconfig $KCP_ADMIN get workspaces`,
        `kubectl --kubeconfig $INTERNAL -n ${CONTROLLER_NAMESPACE} get pipelineruns,taskruns`,
        `kubectl --kubeconfig $INTERNAL -n ${CONTROLLER_NAMESPACE} edit internalservicesconfig ${CONFIG_NAME}   # allowList entries are "workspace-path/namespace"`,
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
