/**
 * `internal-services local --results [--keep]`: the platform's archive, on
 * this machine. The internal cluster runs real Tekton, its pods on the real
 * node where one can start (the step's script writes the log lines), else
 * SIMULATED (a simulated node serves their logs; local-pods.ts), and real
 * Tekton Results (API server and
 * watcher built from their Go module, PostgreSQL from Debian's packages);
 * the controller runs with --results-url.
 *
 * One sample request runs; its PipelineRun is pruned only once Results holds
 * it and its logs; the request names its Results record; then the requester
 * asks for the logs from the remote side (the `logs` verb's annotation) and
 * the controller answers from Results. Exits 0 only when all of that happened.
 */
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { applyObjects, freePorts, grantRequester, installProject, startEnvironment, CONTROLLER_NAMESPACE, type Environment } from '../localenv/index.js';
import { CONFIG_NAME, type InternalRequest } from '../api/types.js';
import { requesterLoop } from '../api/readers.js';
import { SAMPLE_CONFIG, SAMPLE_PIPELINE, sample, sampleRequestSpec } from './local-files.js';
import { choosePods, environmentOptions, forPods, podsLabel } from './local-pods.js';
import { keepRunning, startControllerProcess, stopControllerProcess, stopOnSignals, waitForReady, type ControllerChild } from './local-processes.js';
import { ANNOTATION_LOGS } from '../controller/results-archive.js';

const IR = { group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalrequests' } as const;
const REQUEST = 'archived-release-1';
const TIMEOUT_MS = 180_000;

const started = Date.now();
const out = (line = ''): void => void process.stdout.write(`${line}\n`);
const progress = (msg: string): void => out(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${msg}`);

async function until<T>(what: string, f: () => Promise<T | undefined>, deadline: number): Promise<T> {
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

export async function runLocalResults(flags: { keep?: boolean; simulatedPods?: boolean }): Promise<void> {
  let env: Environment | undefined;
  let controller: ControllerChild | undefined;
  let cleaning: Promise<void> | undefined;
  const cleanup = (): Promise<void> =>
    (cleaning ??= (async () => {
      if (controller) await stopControllerProcess(controller).catch(() => {});
      await env?.stop().catch(() => {});
    })());
  const signals = stopOnSignals(cleanup);
  try {
    const pods = choosePods(flags.simulatedPods === true);
    const where = podsLabel(pods);
    const samplePipeline = sample(SAMPLE_PIPELINE);
    samplePipeline.metadata = { ...samplePipeline.metadata, namespace: CONTROLLER_NAMESPACE };
    const config = structuredClone(sample(SAMPLE_CONFIG));
    config.metadata = { ...config.metadata, namespace: CONTROLLER_NAMESPACE };
    if (config.metadata?.name !== CONFIG_NAME) throw new Error(`config/samples/${SAMPLE_CONFIG} must be named "${CONFIG_NAME}"`);
    const allowed = ((config['spec'] as { allowList?: string[] }).allowList ?? [])[0];
    if (!allowed) throw new Error(`config/samples/${SAMPLE_CONFIG} must allow at least one namespace`);

    out(`internal-services local --results: the internal cluster with real Tekton (${where}${pods.real ? '' : '; a simulated node serves their logs'})`);
    out('and real Tekton Results (API server, watcher, PostgreSQL), and the controller pruning');
    out('runs only once Results holds them; then the requester reads the logs of the pruned run from the remote side.');
    out();
    progress('starting the control planes, Tekton and Tekton Results (the first run builds Results from its Go module, 3 to 6 min on 2 cores, then it is cached)');
    env = await startEnvironment({ ...environmentOptions(pods), results: true, log: (m) => progress(`  ${m}`) });
    const pipeline = forPods(samplePipeline, pods, env);
    const results = env.results!;
    progress(`Tekton Results ${results.version} ready at ${results.url} (PostgreSQL on 127.0.0.1:${results.postgres.port}; logs stored as files under ${env.dir}/results/logs)`);
    await installProject(env);
    await applyObjects(env.internal.identities.admin.kubeConfig(), [pipeline, config]);
    await grantRequester(env, allowed);
    const [healthPort, metricsPort] = (await freePorts(2)) as [number, number];
    controller = startControllerProcess(env, healthPort, metricsPort, ['--remote-kubeconfig', env.remote.identities.controller.kubeconfigPath, '--results-url', results.url, '--results-ca-file', results.caFile]);
    progress(`controller started with --results-url ${results.url}; log ${controller.logPath}`);
    await waitForReady(controller);

    const api = env.remote.identities.requester!.kubeConfig().makeApiClient(CustomObjectsApi);
    const get = async (): Promise<InternalRequest> => (await api.getNamespacedCustomObject({ ...IR, namespace: allowed, name: REQUEST })) as InternalRequest;
    const created = (await api.createNamespacedCustomObject({ ...IR, namespace: allowed, body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name: REQUEST, namespace: allowed }, spec: sampleRequestSpec() } })) as InternalRequest;
    progress(`submitted ${allowed}/${REQUEST}`);
    const deadline = Date.now() + TIMEOUT_MS;
    const done = await until('the request to finish', async () => {
      const r = await get();
      return requesterLoop(r) !== 'wait' ? r : undefined;
    }, deadline);
    progress(`${allowed}/${REQUEST}: ${done.status?.conditions?.[0]?.reason}: ${done.status?.conditions?.[0]?.message}`);
    const internal = env.internal.identities.admin.kubeConfig().makeApiClient(CustomObjectsApi);
    const prName = `ir-${created.metadata.uid}`;
    await until('the PipelineRun to be pruned', async () => {
      try {
        await internal.getNamespacedCustomObject({ group: 'tekton.dev', version: 'v1', plural: 'pipelineruns', namespace: CONTROLLER_NAMESPACE, name: prName });
        return undefined;
      } catch {
        return true;
      }
    }, deadline);
    const archived = await until('status.archive', async () => {
      const a = (await get()).status?.archive;
      return a?.log ? a : undefined;
    }, deadline);
    progress(`PipelineRun ${CONTROLLER_NAMESPACE}/${prName} pruned after Tekton Results stored it; the request names record ${archived.record}`);

    const ask = `local-${Date.now()}`;
    await api.patchNamespacedCustomObject({ ...IR, namespace: allowed, name: REQUEST, body: { metadata: { annotations: { [ANNOTATION_LOGS]: ask } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    progress(`the requester asks for the logs (annotation ${ANNOTATION_LOGS}=${ask}; kubectl internalrequest logs ${allowed}/${REQUEST} does the same)`);
    const logs = await until('the logs in status.logs', async () => {
      const l = (await get()).status?.logs;
      return l?.request === ask ? l : undefined;
    }, deadline);
    out();
    out(`Logs of ${allowed}/${REQUEST}, read by the requester on the remote side; source: ${logs.source} (${where}):`);
    out((logs.text ?? '').replace(/\n$/, '').split('\n').map((l) => `  ${l}`).join('\n'));
    out();
    // The step's own output on the real node; the simulated node's stand-in lines otherwise.
    const ok = logs.source === 'TektonResults' && (logs.text ?? '').includes(pods.real ? `signing ${String(sampleRequestSpec().params?.['image'])}` : '[simulated]');
    out(ok ? 'The run was archived, pruned, and its logs came back from Tekton Results.' : `UNEXPECTED: the logs did not come from Tekton Results (controller log: ${controller.logPath}).`);
    if (flags.keep) {
      await keepRunning(signals, [
        `export PATH="${env.assets.binDir}:$PATH"`,
        `export REMOTE=${env.remote.identities.requester!.kubeconfigPath} INTERNAL=${env.internal.identities.admin.kubeconfigPath}`,
        `node dist/bundle/kubectl-internalrequest.mjs logs ${allowed}/${REQUEST} --kubeconfig $REMOTE`,
        `curl --cacert ${results.caFile} -H "Authorization: Bearer ${env.internal.identities.controller.token}" ${results.url}/apis/results.tekton.dev/v1alpha2/parents/${archived.log ?? archived.record}`,
      ], out);
    }
    await cleanup();
    if (!ok) process.exitCode = 1;
  } catch (e) {
    await cleanup();
    throw e;
  }
}
