/**
 * `internal-services local [--keep]`: the whole story on this machine, with
 * nothing installed. Brings up the two embedded control planes of the test
 * harness (src/envtest) with real Tekton (its controller, resolvers and
 * webhook, built from its Go module) on the internal one, installs the CRDs,
 * the RBAC, the sample Pipeline and `config` from config/samples, starts the
 * controller as its real command-line process under its own RBAC identities,
 * and submits sample requests as an ordinary requester.
 *
 * Only the pods are SIMULATED (there is no kubelet): a simulated kubelet
 * plays the TaskRun pods' containers. The sample Pipeline's step gets
 * SIMULATED_* env saying what its container reports (its results, derived
 * from the params by Tekton's own substitution, or a failure when
 * simulate-failure is "true"); Tekton does everything else.
 *
 * Exits 0 only when every sample request ended as expected. With --keep
 * everything stays up for a look around until Ctrl-C.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { parse as parseYaml } from 'yaml';
import { CustomObjectsApi, Watch, type KubeConfig } from '@kubernetes/client-node';
import { CONTROLLER_NAMESPACE, startEnvironment, type Environment } from '../envtest/environment.js';
import { applyObjects, grantRequester, installProject, loadManifests, statusMessage, type Manifest } from '../envtest/apply.js';
import { repoRoot } from '../envtest/binaries.js';
import { freePorts, startWatchdog, tailFile, writePidFile } from '../envtest/processes.js';
import { CONFIG_NAME, type InternalRequest, type InternalRequestSpec } from '../api/types.js';

const IR = { group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalrequests' } as const;
const SAMPLE_PIPELINE = 'tekton_v1_pipeline_sign-image.yaml';
const SAMPLE_CONFIG = 'appstudio_v1alpha1_internalservicesconfig.yaml';
const SAMPLE_REQUEST = 'appstudio_v1alpha1_internalrequest.yaml';
/** A remote namespace the requester may use but that is not on the sample allowList. */
const UNLISTED_NAMESPACE = 'unlisted-tenant';
/** The sample Pipeline's param that makes the run fail. */
const FAIL_PARAM = 'simulate-failure';
/** How long each simulated step "runs". */
const STEP_DURATION = '1500ms';
const CONTROLLER_READY_TIMEOUT_MS = 60_000;
const REQUESTS_TIMEOUT_MS = 60_000;

export interface LocalFlags {
  keep?: boolean;
}

export function localCommand(): Command {
  return new Command('local')
    .description(
      'Try it on this machine: two embedded control planes, real Tekton (pods SIMULATED), the controller, and sample requests',
    )
    .option('--keep', 'leave everything running afterwards (Ctrl-C stops it) and print how to look around')
    .action(async (flags: LocalFlags) => {
      await runLocal(flags);
    });
}

interface Scenario {
  namespace: string;
  name: string;
  /** What it shows, for the output. */
  story: string;
  spec: InternalRequestSpec;
  expect: { status: 'True' | 'False'; reason: 'Succeeded' | 'Rejected' | 'Failed'; message: RegExp; results?: boolean };
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

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * The sample Pipeline with SIMULATED_* env added to each step of its inline
 * Tasks: what the simulated kubelet reports for the step's container. Each
 * declared Task result gets a value derived from the Task's params (Tekton
 * substitutes them), and the step fails when the Task has the
 * simulate-failure param set to "true".
 */
function withSimulatedSteps(pipeline: Manifest): Manifest {
  const copy = structuredClone(pipeline);
  const tasks = ((copy['spec'] as { tasks?: unknown[] } | undefined)?.tasks ?? []) as Array<{
    taskSpec?: { params?: Array<{ name: string }>; results?: Array<{ name: string }>; steps?: Array<{ env?: Array<{ name: string; value: string }> }> };
  }>;
  for (const t of tasks) {
    const spec = t.taskSpec;
    if (!spec?.steps?.length) continue;
    const params = (spec.params ?? []).map((p) => p.name);
    const derived = params.filter((p) => p !== FAIL_PARAM).map((p) => `"${p}":"$(params.${p})"`).join(',');
    const env: Array<{ name: string; value: string }> = [{ name: 'SIMULATED_DURATION', value: STEP_DURATION }];
    if (params.includes(FAIL_PARAM)) env.push({ name: 'SIMULATED_FAIL', value: `$(params.${FAIL_PARAM})` });
    for (const r of spec.results ?? []) env.push({ name: `SIMULATED_RESULT_${r.name}`, value: `${r.name}:{${derived}}` });
    // The last step produces the results; earlier ones just run.
    const last = spec.steps[spec.steps.length - 1]!;
    last.env = [...(last.env ?? []), ...env];
  }
  return copy;
}

/** Prints each TaskRun's progress in the controller's namespace, as Tekton reports it. */
async function watchTaskRuns(kc: KubeConfig): Promise<AbortController> {
  const shown = new Map<string, string>();
  return new Watch(kc).watch(
    `/apis/tekton.dev/v1/namespaces/${CONTROLLER_NAMESPACE}/taskruns`,
    {},
    (_type, tr: { metadata?: { name?: string }; status?: { podName?: string; conditions?: Array<{ reason?: string; message?: string }>; results?: Array<{ name: string; value: unknown }> } }) => {
      const name = tr.metadata?.name ?? '?';
      const c = tr.status?.conditions?.[0];
      if (!c?.reason) return;
      const results = (tr.status?.results ?? []).map((r) => `${r.name}=${typeof r.value === 'string' ? r.value : JSON.stringify(r.value)}`).join(', ');
      const line = `${c.reason}${c.message ? `: ${c.message}` : ''}${results ? ` — results: ${results}` : ''}`;
      if (shown.get(name) === line) return;
      shown.set(name, line);
      progress(`  Tekton: TaskRun ${name} (pod ${tr.status?.podName || '-'}, SIMULATED): ${line}`);
    },
    () => {},
  );
}

function samplePath(file: string): string {
  return join(repoRoot(), 'config', 'samples', file);
}

function sample(file: string): Manifest {
  const path = samplePath(file);
  const [obj, ...rest] = loadManifests(path);
  if (!obj || rest.length > 0) throw new Error(`${path}: expected exactly one object`);
  return obj;
}

/** The sample request's spec (the sample has generateName, which loadManifests does not take). */
function sampleRequestSpec(): InternalRequestSpec {
  const path = samplePath(SAMPLE_REQUEST);
  const obj = parseYaml(readFileSync(path, 'utf8')) as { kind?: string; spec?: InternalRequestSpec } | null;
  if (obj?.kind !== 'InternalRequest' || typeof obj.spec?.params?.['image'] !== 'string') {
    throw new Error(`${path}: expected an InternalRequest with spec.params.image`);
  }
  return obj.spec;
}

/** A running controller process (the real CLI). */
interface ControllerChild {
  proc: ChildProcess;
  logPath: string;
  exited: Promise<string>;
  healthPort: number;
  metricsPort: number;
  args: string[];
}

function startControllerProcess(env: Environment, healthPort: number, metricsPort: number): ControllerChild {
  // The script this process runs (the plain build or the bundle), so the child runs the same.
  const cli = process.argv[1] && /(main\.js|internal-services\.mjs)$/.test(process.argv[1]) ? process.argv[1] : fileURLToPath(new URL('./main.js', import.meta.url));
  const logPath = join(env.dir, 'controller.log');
  const args = [
    cli,
    'controller',
    '--remote-kubeconfig', env.remote.identities.controller.kubeconfigPath,
    '--kubeconfig', env.internal.identities.controller.kubeconfigPath,
    '--namespace', CONTROLLER_NAMESPACE,
    '--metrics-bind-address', `127.0.0.1:${metricsPort}`,
    '--health-probe-bind-address', `127.0.0.1:${healthPort}`,
  ];
  const fd = openSync(logPath, 'a');
  let proc: ChildProcess;
  try {
    proc = spawn(process.execPath, args, { stdio: ['ignore', fd, fd] });
  } finally {
    closeSync(fd);
  }
  const exited = new Promise<string>((resolve) => {
    proc.once('exit', (code, signal) => resolve(signal !== null ? `signal ${signal}` : `exit code ${String(code)}`));
    proc.once('error', (err) => resolve(`spawn error: ${err.message}`));
  });
  return { proc, logPath, exited, healthPort, metricsPort, args };
}

async function stopControllerProcess(c: ControllerChild): Promise<void> {
  if (c.proc.exitCode !== null || c.proc.signalCode !== null) return;
  c.proc.kill('SIGTERM');
  // The controller finishes in-flight writes within 10 s of SIGTERM.
  const killed = sleep(12_000).then(() => {
    c.proc.kill('SIGKILL');
  });
  await Promise.race([c.exited, killed]);
  await c.exited;
}

async function waitForReady(c: ControllerChild): Promise<void> {
  const deadline = Date.now() + CONTROLLER_READY_TIMEOUT_MS;
  let exitedHow: string | undefined;
  void c.exited.then((how) => (exitedHow = how));
  for (;;) {
    if (exitedHow !== undefined) {
      throw new Error(`the controller exited (${exitedHow}) before it was ready; last lines of ${c.logPath}:\n${tailFile(c.logPath, 30)}`);
    }
    const status = await fetch(`http://127.0.0.1:${c.healthPort}/readyz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    if (Date.now() > deadline) {
      throw new Error(
        `the controller was not ready after ${CONTROLLER_READY_TIMEOUT_MS / 1000} s (/readyz: ${status || 'no answer'}); last lines of ${c.logPath}:\n${tailFile(c.logPath, 30)}`,
      );
    }
    await sleep(250);
  }
}

function conditionOf(r: InternalRequest | undefined): { status?: string; reason?: string; message?: string } {
  return r?.status?.conditions?.[0] ?? {};
}

function isFinal(r: InternalRequest | undefined): boolean {
  const c = conditionOf(r);
  return c.status === 'True' || c.status === 'False';
}

function judge(s: Scenario, r: InternalRequest | undefined, declaredResults: string[], image: string): Verdict {
  const problems: string[] = [];
  const c = conditionOf(r);
  if (!r) problems.push('the request could not be read');
  else if (!isFinal(r)) problems.push(`did not finish in ${REQUESTS_TIMEOUT_MS / 1000} s (last: ${c.reason ?? 'no condition yet'})`);
  else {
    if (c.status !== s.expect.status || c.reason !== s.expect.reason) {
      problems.push(`expected ${s.expect.reason} (${s.expect.status}), got ${c.reason ?? '?'} (${c.status ?? '?'})`);
    }
    if (!s.expect.message.test(c.message ?? '')) problems.push(`message does not match ${String(s.expect.message)}`);
    if (s.expect.results) {
      const results = r.status?.results ?? {};
      for (const name of declaredResults) {
        const v = results[name];
        if (v === undefined) problems.push(`result "${name}" missing`);
        else if (!v.includes(image)) problems.push(`result "${name}" is not derived from the params`);
      }
    }
  }
  return { ok: problems.length === 0, problems };
}

export async function runLocal(flags: LocalFlags): Promise<void> {
  const keep = flags.keep === true;
  let env: Environment | undefined;
  let taskRunWatch: AbortController | undefined;
  let controller: ControllerChild | undefined;
  let watchdog: ChildProcess | undefined;
  let cleaning: Promise<void> | undefined;

  const cleanup = (): Promise<void> =>
    (cleaning ??= (async () => {
      if (controller) await stopControllerProcess(controller).catch(() => {});
      taskRunWatch?.abort();
      await env?.stop().catch(() => {});
      watchdog?.kill('SIGKILL');
    })());

  // Ctrl-C (or SIGTERM) at any point stops every process started here.
  // While --keep waits, onStop ends the wait (and the normal teardown runs);
  // before that, a signal tears everything down and exits at once.
  let onStop: (() => void) | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (onStop) return onStop();
    process.stderr.write(`\n${signal}: stopping everything\n`);
    void cleanup().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    // The samples are read first, so a broken one fails before anything starts.
    const pipeline = withSimulatedSteps(sample(SAMPLE_PIPELINE));
    pipeline.metadata = { ...pipeline.metadata, namespace: CONTROLLER_NAMESPACE };
    const config = { ...sample(SAMPLE_CONFIG) };
    config.metadata = { ...config.metadata, namespace: CONTROLLER_NAMESPACE };
    if (config.metadata?.name !== CONFIG_NAME) throw new Error(`config/samples/${SAMPLE_CONFIG} must be named "${CONFIG_NAME}"`);
    const base = sampleRequestSpec();
    const allowList = ((config['spec'] as { allowList?: string[] } | undefined)?.allowList ?? []).filter(Boolean);
    const allowed = allowList[0];
    if (!allowed || allowList.includes(UNLISTED_NAMESPACE)) {
      throw new Error(`config/samples/${SAMPLE_CONFIG} must allow at least one namespace, and not "${UNLISTED_NAMESPACE}"`);
    }
    const pipelineName = pipeline.metadata?.name ?? '';
    const declaredResults = ((pipeline['spec'] as { results?: Array<{ name: string }> } | undefined)?.results ?? []).map((r) => r.name);

    out('internal-services local: two embedded Kubernetes control planes, real Tekton, the controller, and sample requests.');
    out('Tekton is real (its controller, resolvers and webhook); only its pods are SIMULATED: there is no kubelet,');
    out('so a simulated kubelet reports each step container as finished, with results derived from the params');
    out(`(the sample step gets SIMULATED_* env saying so; ${FAIL_PARAM}=true makes it exit 1).`);
    out();

    // --- control planes ---
    progress('starting the control planes (etcd + a "remote" and an "internal" kube-apiserver) and Tekton');
    progress('  the first run builds kube-apiserver, etcd, kubectl and Tekton from Go modules (~12 min on 2 cores), then they are cached');
    env = await startEnvironment({ tekton: { stepMs: 500 }, log: (m) => progress(`  ${m}`) });
    const tekton = env.tekton!;
    progress(`control planes ready: remote ${env.remote.url}, internal ${env.internal.url}`);
    progress(`Tekton ${tekton.version} ready: controller, resolvers${tekton.webhook ? ', webhook' : ''} (logs: ${join(env.dir, 'tekton-*.log')}); pods SIMULATED`);

    // --- project, samples, requesters ---
    await installProject(env);
    const internalAdmin = env.internal.identities.admin.kubeConfig();
    await applyObjects(internalAdmin, [pipeline, config]);
    progress('installed: CRDs (InternalRequest, InternalServicesConfig), RBAC of both clusters,');
    progress(`  Pipeline ${CONTROLLER_NAMESPACE}/${pipelineName} and InternalServicesConfig ${CONTROLLER_NAMESPACE}/${CONFIG_NAME} (allowList: ${allowList.join(', ')}) from config/samples/`);
    for (const ns of [allowed, UNLISTED_NAMESPACE]) await grantRequester(env, ns);
    const requesterId = env.remote.identities.requester;
    if (!requesterId) throw new Error('the environment has no requester identity');
    progress(`remote namespaces ${allowed} and ${UNLISTED_NAMESPACE} created; user "${requesterId.username}" granted the internal-services-requester ClusterRole in both`);

    // --- what Tekton does, as it happens ---
    taskRunWatch = await watchTaskRuns(internalAdmin);

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
    const scenarios: Scenario[] = [
      {
        namespace: allowed,
        name: 'sign-allowed',
        story: 'allowed namespace, existing Pipeline: succeeds with results',
        spec: { ...base, request: pipelineName },
        expect: { status: 'True', reason: 'Succeeded', message: /succeeded/, results: true },
      },
      {
        namespace: UNLISTED_NAMESPACE,
        name: 'sign-not-allowed',
        story: 'namespace not on the allowList: rejected',
        spec: { ...base, request: pipelineName },
        expect: { status: 'False', reason: 'Rejected', message: /not on the allowList/ },
      },
      {
        namespace: allowed,
        name: 'missing-pipeline',
        story: 'names a Pipeline that does not exist: rejected',
        spec: { ...base, request: 'no-such-pipeline' },
        expect: { status: 'False', reason: 'Rejected', message: /no Pipeline named "no-such-pipeline"/ },
      },
      {
        namespace: allowed,
        name: 'sign-fails',
        story: `the PipelineRun fails (${FAIL_PARAM}=true): failed`,
        spec: { ...base, request: pipelineName, params: { ...base.params, [FAIL_PARAM]: 'true' } },
        expect: { status: 'False', reason: 'Failed', message: /failed/ },
      },
    ];
    const requester: KubeConfig = requesterId.kubeConfig();
    const requesterApi = requester.makeApiClient(CustomObjectsApi);
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

    // --- progress until every request is final ---
    const remoteAdmin = env.remote.identities.admin.kubeConfig().makeApiClient(CustomObjectsApi);
    const latest = new Map<string, InternalRequest>();
    const shown = new Map<string, string>();
    const deadline = Date.now() + REQUESTS_TIMEOUT_MS;
    let controllerExit: string | undefined;
    void controller.exited.then((how) => (controllerExit = how));
    for (;;) {
      for (const s of scenarios) {
        const key = `${s.namespace}/${s.name}`;
        if (isFinal(latest.get(key))) continue;
        try {
          const r = (await remoteAdmin.getNamespacedCustomObject({ ...IR, namespace: s.namespace, name: s.name })) as InternalRequest;
          latest.set(key, r);
          const c = conditionOf(r);
          const line = c.reason ? `${c.reason}: ${c.message ?? ''}` : 'waiting for the controller';
          if (shown.get(key) !== line) {
            shown.set(key, line);
            progress(`${key}: ${line}`);
          }
        } catch (err) {
          progress(`${key}: cannot read it: ${(err as Error).message}`);
        }
      }
      if (scenarios.every((s) => isFinal(latest.get(`${s.namespace}/${s.name}`)))) break;
      if (controllerExit !== undefined) {
        progress(`the controller exited (${controllerExit}); last lines of ${controller.logPath}:\n${tailFile(controller.logPath, 30)}`);
        break;
      }
      if (Date.now() > deadline) break;
      await sleep(500);
    }

    // --- outcome ---
    out();
    out('Outcome of the sample requests (as the requester sees them on the remote cluster):');
    let good = 0;
    for (const s of scenarios) {
      const key = `${s.namespace}/${s.name}`;
      const r = latest.get(key);
      const c = conditionOf(r);
      const v = judge(s, r, declaredResults, image);
      if (v.ok) good++;
      out();
      out(`  ${v.ok ? '[ok]        ' : '[UNEXPECTED]'} InternalRequest ${key} — ${s.story}`);
      out(`      condition: Succeeded=${c.status ?? '?'}, reason ${c.reason ?? '?'}`);
      out(`      message:   ${c.message ?? ''}`);
      const results = Object.entries(r?.status?.results ?? {});
      if (results.length === 0) out('      results:   (none)');
      else {
        out('      results:   (from the TaskRun, through Tekton; values come from the SIMULATED pod, derived from the params)');
        for (const [k, val] of results) out(`                 ${k} = ${val}`);
      }
      for (const p of v.problems) out(`      expected otherwise: ${p}`);
    }
    out();
    const allGood = good === scenarios.length;
    out(allGood ? `All ${scenarios.length} requests ended as expected.` : `${scenarios.length - good} of ${scenarios.length} requests did NOT end as expected (controller log: ${controller.logPath}).`);

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
      out(`  kubectl --kubeconfig $REMOTE -n ${allowed} get events`);
      out(`  kubectl --kubeconfig $INTERNAL -n ${CONTROLLER_NAMESPACE} get pipelines,pipelineruns,internalservicesconfigs`);
      out(`  kubectl --kubeconfig $INTERNAL -n ${CONTROLLER_NAMESPACE} get taskruns,pods        # TaskRuns stay: no garbage collector here`);
      out(`  kubectl --kubeconfig $INTERNAL -n ${CONTROLLER_NAMESPACE} get pod <name> -o yaml   # the status the SIMULATED kubelet wrote`);
      out(`  kubectl --kubeconfig $INTERNAL -n ${CONTROLLER_NAMESPACE} get taskrun <name> -o jsonpath='{.status.results}'`);
      out(`  tail -f ${join(env.dir, 'tekton-controller.log')}`);
      out(`  curl -s http://127.0.0.1:${controller.healthPort}/readyz; curl -s http://127.0.0.1:${controller.metricsPort}/metrics`);
      out(`  tail -f ${controller.logPath}`);
      out();
      out('Create a request by hand, as the requester, and follow it:');
      out(`  kubectl --kubeconfig $REQUESTER -n ${allowed} create -f ${requestSample}`);
      out(`  kubectl --kubeconfig $REQUESTER -n ${allowed} get internalrequests -w`);
      out(`  kubectl --kubeconfig $REQUESTER -n ${allowed} get internalrequest <name> -o jsonpath='{.status.results}'`);
      out('Keep PipelineRuns after they finish (to look at them): set spec.debug: true in the config.');
      out('Serve another namespace (add it to spec.allowList):');
      out(`  kubectl --kubeconfig $INTERNAL -n ${CONTROLLER_NAMESPACE} edit internalservicesconfig ${CONFIG_NAME}`);
      out();
      out('Ctrl-C stops every process started here.');
      await new Promise<void>((resolve) => {
        onStop = resolve;
      });
      out();
      out('stopping everything…');
    }
    if (!allGood) throw new Error(`${scenarios.length - good} sample request(s) did not end as expected`);
  } finally {
    await cleanup();
    // Nothing else should hold the event loop, but never linger after the work is done.
    setTimeout(() => process.exit(process.exitCode ?? 0), 3000).unref();
  }
}
