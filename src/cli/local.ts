/**
 * `internal-services local [--keep]`: the whole story on this machine, with
 * nothing installed. Brings up the two embedded control planes of the local
 * environment (src/localenv) with real Tekton (its controller, resolvers and
 * webhook, built from its Go module) on the internal one, installs the CRDs,
 * the RBAC, the sample Pipeline and `config` from config/samples, starts the
 * controller as its real command-line process under its own RBAC identities,
 * and submits sample requests as an ordinary requester.
 *
 * The pods run on the machine's real node (kubelet, containerd, runc) when
 * one can start here: the samples' `script:` steps compute their results
 * from the params in the node's busybox image, and the demo checks them
 * against the same computation. Where no real node can start, a simulated
 * kubelet plays the pods (local-pods.ts) and the demo says so in its first
 * lines and beside every run.
 *
 * Exits 0 only when every sample request ended as expected. With --keep
 * everything stays up for a look around until Ctrl-C.
 */
import type { ChildProcess } from 'node:child_process';
import { join, relative } from 'node:path';
import { Command } from 'commander';
import { CustomObjectsApi, Watch, type KubeConfig } from '@kubernetes/client-node';
import {
  CONTROLLER_NAMESPACE,
  startEnvironment,
  type Environment,
  applyObjects,
  grantRequester,
  installProject,
  statusMessage,
  freePorts,
  startWatchdog,
  writePidFile,
} from '../localenv/index.js';
import { CONFIG_NAME, type InternalRequest } from '../api/types.js';
import { followSamples, startControllerProcess, stopControllerProcess, stopOnSignals, trackSamples, waitForReady, type ControllerChild } from './local-processes.js';
import { APPROVAL_NAMESPACE, APPROVAL_RULE, approverRbac, catalogFiles, demoConfig, FAIL_PARAM, RequesterView, scenarios as sampleScenarios, UNLISTED_NAMESPACE, type Scenario } from './local-samples.js';

const IR = { group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalrequests' } as const;
import { runLocalKcp } from './local-kcp.js';
import { runLocalResults } from './local-results.js';
import { followTyped, installTypedSample, submitTyped, TYPED_SAMPLE, TYPED_SAMPLE_NAME } from './local-typed.js';
import { SAMPLE_CONFIG, SAMPLE_PIPELINE, SAMPLE_REQUEST, sample, samplePath, sampleRequestSpec } from './local-files.js';
import { choosePods, environmentOptions, forPods, podsLabel, resultProblem, signResults, typedSignResults, type Pods } from './local-pods.js';
const REQUESTS_TIMEOUT_MS = 90_000;
/** Real pods take seconds each (a sandbox, Tekton's init containers, the steps) on a busy machine. */
const REAL_REQUESTS_TIMEOUT_MS = 240_000;

export interface LocalFlags {
  keep?: boolean;
  kcp?: boolean;
  results?: boolean;
  /** Use the simulated kubelet even where a real node could start. */
  simulatedPods?: boolean;
}

export function localCommand(): Command {
  return new Command('local')
    .description(
      'Try it on this machine: two embedded control planes, real Tekton with its pods on a real node (simulated where none can start), the controller, and sample requests',
    )
    .option('--simulated-pods', 'run the pods on the simulated kubelet even where a real node could start')
    .option('--keep', 'leave everything running afterwards (Ctrl-C stops it) and print how to look around')
    .option('--kcp', 'the remote side is a real kcp: workspaces that bind the request API, served through one kubeconfig (builds kcp on first use)')
    .option('--results', 'with real Tekton Results (API, watcher, PostgreSQL): a run is archived, pruned, and its logs read back from Results (builds Results on first use)')
    .action(async (flags: LocalFlags) => {
      if (flags.kcp && flags.results) throw new Error('--kcp and --results are separate tours; give one');
      await (flags.kcp ? runLocalKcp(flags) : flags.results ? runLocalResults(flags) : runLocal(flags));
    });
}

interface Verdict {
  ok: boolean;
  problems: string[];
}

const started = Date.now();
const out = (line = ''): void => {
  process.stdout.write(`${line}\n`);
};
const progress = (msg: string): void => {
  out(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${msg}`);
};

/** Prints each TaskRun's progress in the controller's namespace, as Tekton reports it. */
async function watchTaskRuns(kc: KubeConfig, where: string): Promise<AbortController> {
  const shown = new Map<string, string>();
  return new Watch(kc).watch(
    `/apis/tekton.dev/v1/namespaces/${CONTROLLER_NAMESPACE}/taskruns`,
    {},
    (_type, tr: { metadata?: { name?: string }; status?: { podName?: string; conditions?: Array<{ reason?: string; message?: string }>; results?: Array<{ name: string; value: unknown }>; steps?: Array<{ name?: string; terminated?: { exitCode?: number } }> } }) => {
      const name = tr.metadata?.name ?? '?';
      const c = tr.status?.conditions?.[0];
      if (!c?.reason) return;
      const results = (tr.status?.results ?? []).map((r) => `${r.name}=${typeof r.value === 'string' ? r.value : JSON.stringify(r.value)}`).join(', ');
      const exits = (tr.status?.steps ?? []).filter((st) => st.terminated).map((st) => `${st.name ?? '?'} exit ${st.terminated!.exitCode ?? '?'}`).join(', ');
      const line = `${c.reason}${c.message ? `: ${c.message}` : ''}${exits ? ` — steps: ${exits}` : ''}${results ? ` — results: ${results}` : ''}`;
      if (shown.get(name) === line) return;
      shown.set(name, line);
      progress(`  Tekton: TaskRun ${name} (pod ${tr.status?.podName || '-'}, ${where}): ${line}`);
    },
    () => {},
  );
}

function conditionOf(r: InternalRequest | undefined): { status?: string; reason?: string; message?: string } {
  return r?.status?.conditions?.[0] ?? {};
}

function isFinal(r: InternalRequest | undefined): boolean {
  const c = conditionOf(r);
  return c.status === 'True' || (c.status === 'False' && c.reason !== 'Running');
}

function judge(s: Scenario, r: InternalRequest | undefined, view: RequesterView, declaredResults: string[], image: string, pods: Pods, timeoutMs: number): Verdict {
  const problems: string[] = [];
  if (r && isFinal(r) && !view.consistentWith(s.expect)) problems.push(`a waiting requester would have read it as: ${view.summary()}`);
  const c = conditionOf(r);
  if (!r) problems.push('the request could not be read');
  else if (!isFinal(r)) problems.push(`did not finish in ${timeoutMs / 1000} s (last: ${c.reason ?? 'no condition yet'})`);
  else {
    if (c.status !== s.expect.status || c.reason !== s.expect.reason) {
      problems.push(`expected ${s.expect.reason} (${s.expect.status}), got ${c.reason ?? '?'} (${c.status ?? '?'})`);
    }
    if (!s.expect.message.test(c.message ?? '')) problems.push(`message does not match ${String(s.expect.message)}`);
    if (s.expect.results) {
      const results = r.status?.results ?? {};
      for (const name of s.spec.request ? declaredResults : ['signature']) {
        const problem = resultProblem(pods, name, results[name], image, signResults(image));
        if (problem) problems.push(problem);
      }
    }
  }
  return { ok: problems.length === 0, problems };
}

export async function runLocal(flags: LocalFlags): Promise<void> {
  const keep = flags.keep === true;
  let env: Environment | undefined;
  let taskRunWatch: AbortController | undefined;
  let requestWatch: AbortController | undefined;
  let controller: ControllerChild | undefined;
  let watchdog: ChildProcess | undefined;
  let cleaning: Promise<void> | undefined;

  const cleanup = (): Promise<void> =>
    (cleaning ??= (async () => {
      if (controller) await stopControllerProcess(controller).catch(() => {});
      taskRunWatch?.abort();
      requestWatch?.abort();
      await env?.stop().catch(() => {});
      watchdog?.kill('SIGKILL');
    })());

  const signals = stopOnSignals(cleanup);

  try {
    // The samples are read first, so a broken one fails before anything starts.
    const pods = choosePods(flags.simulatedPods === true);
    const where = podsLabel(pods);
    const timeoutMs = pods.real ? REAL_REQUESTS_TIMEOUT_MS : REQUESTS_TIMEOUT_MS;
    const samplePipeline = sample(SAMPLE_PIPELINE);
    samplePipeline.metadata = { ...samplePipeline.metadata, namespace: CONTROLLER_NAMESPACE };
    const config = { ...sample(SAMPLE_CONFIG) };
    config.metadata = { ...config.metadata, namespace: CONTROLLER_NAMESPACE };
    if (config.metadata?.name !== CONFIG_NAME) throw new Error(`config/samples/${SAMPLE_CONFIG} must be named "${CONFIG_NAME}"`);
    const base = sampleRequestSpec();
    const allowList = ((config['spec'] as { allowList?: string[] } | undefined)?.allowList ?? []).filter(Boolean);
    const allowed = allowList[0];
    if (!allowed || allowList.includes(UNLISTED_NAMESPACE)) {
      throw new Error(`config/samples/${SAMPLE_CONFIG} must allow at least one namespace, and not "${UNLISTED_NAMESPACE}"`);
    }
    const pipelineName = samplePipeline.metadata?.name ?? '';
    const declaredResults = ((samplePipeline['spec'] as { results?: Array<{ name: string }> } | undefined)?.results ?? []).map((r) => r.name);

    out('internal-services local: two embedded Kubernetes control planes, real Tekton, the controller, and sample requests.');
    if (pods.real) {
      out('Tekton is real (its controller, resolvers and webhook), and so are its pods: they run on a real node (kubelet,');
      out("containerd, runc), each sample step a shell script in the node's busybox image that computes its results from");
      out(`the params (${FAIL_PARAM}=true makes it exit 1); the results shown are what Tekton read from the containers.`);
    } else {
      out(`Tekton is real (its controller, resolvers and webhook); only its pods are SIMULATED (no real node: ${pods.reason}):`);
      out('a simulated kubelet reports each step container as finished, running no script; it reports results derived from');
      out(`the params (SIMULATED_* env added to the sample steps for it; ${FAIL_PARAM}=true makes it exit 1).`);
    }
    out();

    // --- control planes ---
    progress('starting the control planes (etcd + a "remote" and an "internal" kube-apiserver) and Tekton');
    progress('  the first run builds kube-apiserver, etcd, kubectl and Tekton from Go modules (~12 min on 2 cores), then they are cached');
    if (pods.real) progress('  and a real node for the internal cluster (the first run builds kubelet, scheduler, controller manager and images)');
    env = await startEnvironment({ ...environmentOptions(pods), log: (m) => progress(`  ${m}`) });
    const tekton = env.tekton!;
    progress(`control planes ready: remote ${env.remote.url}, internal ${env.internal.url}`);
    if (env.node) progress(`real node ${env.node.name} (${env.node.ip}) Ready after ${env.node.startupMs} ms; step image ${env.node.shellImage}`);
    progress(`Tekton ${tekton.version} ready: controller, resolvers${tekton.webhook ? ', webhook' : ''} (logs: ${join(env.dir, 'tekton-*.log')}); ${where}`);
    const ready = (m: Parameters<typeof forPods>[0]) => forPods(m, pods, env);
    const pipeline = ready(samplePipeline);

    // --- project, samples, requesters ---
    await installProject(env);
    const internalAdmin = env.internal.identities.admin.kubeConfig();
    const catalog = await tekton.git.repository('release-catalog');
    await catalog.commit(catalogFiles(ready), 'the release catalog (sample)');
    progress(`git catalog ${catalog.url} (git daemon on loopback): Pipeline and Task for the spec.pipeline samples`);
    await applyObjects(internalAdmin, [pipeline, demoConfig(config, catalog.url, pipelineName), ...approverRbac(CONTROLLER_NAMESPACE)]);
    progress('installed: CRDs (InternalRequest, InternalServicesConfig), RBAC of both clusters,');
    progress(`  Pipeline ${CONTROLLER_NAMESPACE}/${pipelineName} and InternalServicesConfig ${CONTROLLER_NAMESPACE}/${CONFIG_NAME} (allowList: ${allowList.join(', ')}) from config/samples/;`);
    progress(`  for the demo the config also allows the local catalog (sources.git) and serves ${APPROVAL_NAMESPACE} under rule "${APPROVAL_RULE}", which requires an approval`);
    for (const ns of [allowed, APPROVAL_NAMESPACE, UNLISTED_NAMESPACE]) await grantRequester(env, ns);
    const requesterId = env.remote.identities.requester;
    const approverId = env.internal.identities.approver;
    if (!requesterId || !approverId) throw new Error('the environment has no requester or approver identity');
    progress(`remote namespaces ${allowed}, ${APPROVAL_NAMESPACE} and ${UNLISTED_NAMESPACE} created; user "${requesterId.username}" granted the internal-services-requester ClusterRole in each`);
    progress(`user "${approverId.username}" (group release-managers) may approve under rule "${APPROVAL_RULE}" on the internal cluster`);

    const typed = await installTypedSample(env, allowed, requesterId.username, ready);
    progress(`a service's own kind: ${typed.kind} (${typed.resource.plural}.${typed.resource.group}), RequestDefinition and Pipeline from config/samples/kinds/signing;`);
    progress(`  its CRD and RBAC rendered from them (internal-services kinds render) and applied on the remote cluster; "${requesterId.username}" may create ${typed.resource.plural} in ${allowed}`);

    // --- what Tekton does, as it happens ---
    taskRunWatch = await watchTaskRuns(internalAdmin, where);

    // --- the controller, as its real CLI process ---
    const [healthPort, metricsPort] = (await freePorts(2)) as [number, number];
    controller = startControllerProcess(env, healthPort, metricsPort);
    const pidFile = join(env.dir, 'local-pids');
    writePidFile(pidFile, [controller.proc.pid]);
    // If this process is killed outright, the watchdog still kills the controller.
    watchdog = startWatchdog(pidFile);
    progress(`controller started (pid ${controller.proc.pid ?? '?'}) under its own RBAC identities:`);
    progress(`  node ${relative(process.cwd(), controller.args[0] ?? '') || controller.args[0]} ${controller.args.slice(1).join(' ')}`);
    progress(`  its log: ${controller.logPath}`);
    await waitForReady(controller);
    progress('controller ready (/readyz ok)');

    // --- sample requests ---
    const image = base.params?.['image'] ?? '';
    const scenarios: Scenario[] = sampleScenarios({ pipelineName, base, allowed, catalogUrl: catalog.url });
    const requester: KubeConfig = requesterId.kubeConfig();
    const requesterApi = requester.makeApiClient(CustomObjectsApi);
    const tracker = await trackSamples(env.remote.identities.admin.kubeConfig(), scenarios, progress);
    requestWatch = tracker.watch;
    for (const s of scenarios) {
      try {
        await requesterApi.createNamespacedCustomObject({
          ...IR,
          namespace: s.namespace,
          body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name: s.name, namespace: s.namespace }, spec: s.spec },
        });
      } catch (err) {
        const detail = statusMessage((err as { body?: unknown }).body) ?? (err as Error).message;
        throw new Error(`creating InternalRequest ${s.namespace}/${s.name} as "${requesterId.username}" failed: ${detail}`);
      }
      progress(`submitted ${s.namespace}/${s.name} as "${requesterId.username}" (${s.story})`);
    }

    const refusal = await submitTyped(typed, requester, allowed);
    progress(`submitted ${typed.kind} ${allowed}/${TYPED_SAMPLE_NAME} as "${requesterId.username}" (typed fields: image, tags, signer)`);
    progress(`a malformed ${typed.kind} was refused by the remote apiserver before the controller could see it: ${refusal}`);

    // --- every status of every sample, as a requester would read it, until each is final ---
    const done = await followSamples(env, scenarios, tracker, approverId.kubeconfigPath, controller, progress, timeoutMs);
    const latest = tracker.latest;
    const typedDone = await followTyped(typed, requester, allowed, timeoutMs);

    // --- outcome ---
    out();
    out(`Outcome of the sample requests (as the requester sees them on the remote cluster; ${where}):`);
    let good = 0;
    for (const s of scenarios) {
      const key = `${s.namespace}/${s.name}`;
      const r = latest.get(key);
      const c = conditionOf(r);
      const view = tracker.views.get(key)!;
      const v = judge(s, r, view, declaredResults, image, pods, timeoutMs);
      if (v.ok) good++;
      out();
      out(`  ${v.ok ? '[ok]        ' : '[UNEXPECTED]'} InternalRequest ${key} — ${s.story}`);
      out(`      condition: Succeeded=${c.status ?? '?'}, reason ${c.reason ?? '?'}`);
      out(`      message:   ${c.message ?? ''}`);
      out(`      a waiting requester read: ${view.summary() || '(nothing)'}`);
      const results = Object.entries(r?.status?.results ?? {});
      if (results.length === 0) out('      results:   (none)');
      else {
        out(`      results:   (from the TaskRun, through Tekton; ${pods.real ? "computed by the step's script on the real node" : `values come from the SIMULATED pod, derived from the params; ${where}`})`);
        for (const [k, val] of results) out(`                 ${k} = ${val}`);
      }
      for (const p of v.problems) out(`      expected otherwise: ${p}`);
    }
    const tc = typedDone?.status?.conditions?.[0];
    const typedResults = Object.entries(typedDone?.status?.results ?? {});
    const typedWant = typedSignResults({ image: TYPED_SAMPLE.image, tags: TYPED_SAMPLE.tags, ...TYPED_SAMPLE.signer });
    const typedProblems = ['signature', 'signed-by'].flatMap((k) => resultProblem(pods, k, typedDone?.status?.results?.[k], TYPED_SAMPLE.image, typedWant) ?? []);
    const typedOk = tc?.reason === 'Succeeded' && typedProblems.length === 0 && !typedResults.some(([k]) => k === 'log');
    if (typedOk) good++;
    out();
    out(`  ${typedOk ? '[ok]        ' : '[UNEXPECTED]'} ${typed.kind} ${allowed}/${TYPED_SAMPLE_NAME} — a service's own kind: typed fields, its own Pipeline, the same status contract`);
    out(`      its fields (kubectl explain ${typed.resource.plural}.spec):`);
    for (const f of typed.fields) out(`                 ${f.name.padEnd(7)} ${f.type.padEnd(28)} ${f.required ? 'required' : 'optional'}  ${f.description}`);
    out(`      condition: Succeeded=${tc?.status ?? '?'}, reason ${tc?.reason ?? '?'}`);
    out(`      message:   ${tc?.message ?? ''}`);
    out(`      results:   (the ones its RequestDefinition names; "log" stays internal; ${pods.real ? 'computed by the script on the real node' : where})`);
    for (const [k, val] of typedResults) out(`                 ${k} = ${val}`);
    for (const p of typedProblems) out(`      expected otherwise: ${p}`);
    out();
    out('("a waiting requester" is the release tooling\'s loop: it reads only conditions[0].reason; empty or Running = wait,');
    out(' Succeeded = success, anything else = failure. Where a request stands is in its Progressing condition; see docs/api.md.)');
    if (!done) out('Not every request finished in time.');
    const total = scenarios.length + 1;
    const allGood = good === total;
    out(allGood ? `All ${total} requests ended as expected.` : `${total - good} of ${total} requests did NOT end as expected (controller log: ${controller.logPath}).`);

    if (keep) {
      const remoteAdminKc = env.remote.identities.admin.kubeconfigPath;
      const internalAdminKc = env.internal.identities.admin.kubeconfigPath;
      const requesterKc = requesterId.kubeconfigPath;
      const requestSample = relative(process.cwd(), samplePath(SAMPLE_REQUEST)) || samplePath(SAMPLE_REQUEST);
      out();
      out('Everything keeps running (--keep).');
      out();
      out('Paste into another shell (kubectl here is the one the harness built):');
      out(`  export PATH="${env.assets.binDir}:$PATH"`);
      out(`  export REMOTE=${remoteAdminKc}        # remote cluster, admin`);
      out(`  export REQUESTER=${requesterKc}   # remote cluster, user "${requesterId.username}" (may create/read requests in ${allowed} and ${UNLISTED_NAMESPACE})`);
      out(`  export INTERNAL=${internalAdminKc}    # internal cluster, admin`);
      out();
      out('Look around:');
      out('  kubectl --kubeconfig $REMOTE get internalrequests -A');
      out(`  kubectl --kubeconfig $REMOTE get ${typed.resource.plural} -A -o wide; kubectl --kubeconfig $REMOTE explain ${typed.resource.plural}.spec`);
      out(`  kubectl --kubeconfig $INTERNAL -n ${CONTROLLER_NAMESPACE} get requestdefinitions`);
      out(`  kubectl --kubeconfig $REMOTE -n ${allowed} get events`);
      out(`  kubectl --kubeconfig $INTERNAL -n ${CONTROLLER_NAMESPACE} get pipelines,pipelineruns,internalservicesconfigs`);
      out(`  kubectl --kubeconfig $INTERNAL -n ${CONTROLLER_NAMESPACE} get taskruns,pods        # TaskRuns stay: no garbage collector here`);
      out(`  kubectl --kubeconfig $INTERNAL -n ${CONTROLLER_NAMESPACE} get pod <name> -o yaml   # the status the ${pods.real ? 'kubelet' : 'SIMULATED kubelet'} wrote`);
      if (pods.real) out(`  kubectl --kubeconfig $INTERNAL -n ${CONTROLLER_NAMESPACE} logs <pod> --all-containers   # the steps' real output`);
      out(`  kubectl --kubeconfig $INTERNAL -n ${CONTROLLER_NAMESPACE} get taskrun <name> -o jsonpath='{.status.results}'`);
      out(`  tail -f ${join(env.dir, 'tekton-controller.log')}`);
      out(`  curl -s http://127.0.0.1:${controller.healthPort}/readyz; curl -s http://127.0.0.1:${controller.metricsPort}/metrics`);
      out(`  tail -f ${controller.logPath}`);
      out();
      out('Create a request by hand, as the requester, and follow it:');
      out(`  kubectl --kubeconfig $REQUESTER -n ${allowed} create -f ${requestSample}`);
      out(`  kubectl --kubeconfig $REQUESTER -n ${allowed} get internalrequests -w        # Reason: the requester's contract; Phase: where it stands`);
      out(`  kubectl --kubeconfig $REQUESTER -n ${allowed} wait --for=condition=Succeeded internalrequest/<name>`);
      out(`  kubectl --kubeconfig $REQUESTER -n ${allowed} get internalrequest <name> -o jsonpath='{.status.results}'`);
      out('Keep PipelineRuns after they finish (to look at them): set spec.debug: true in the config.');
      out('Serve another namespace (add it to spec.allowList):');
      out(`  kubectl --kubeconfig $INTERNAL -n ${CONTROLLER_NAMESPACE} edit internalservicesconfig ${CONFIG_NAME}`);
      out();
      out('Ctrl-C stops every process started here.');
      await signals.stopped();
      out();
      out('stopping everything…');
    }
    if (!allGood) throw new Error(`${total - good} sample request(s) did not end as expected`);
  } finally {
    await cleanup();
    // Nothing else should hold the event loop, but never linger after the work is done.
    setTimeout(() => process.exit(process.exitCode ?? 0), 3000).unref();
  }
}
