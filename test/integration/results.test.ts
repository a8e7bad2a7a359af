/**
 * Tekton Results, real: its API server and watcher (github.com/tektoncd/results
 * at the version of hack/platform/versions.env, v0.20.0) with PostgreSQL from
 * Debian's packages, on the
 * internal control plane with real Tekton; pods are SIMULATED (no kubelet:
 * the simulated kubelet plays the containers and a simulated node serves
 * their logs through the apiserver). The controller runs as its CLI process
 * with --results-url, under its own RBAC; Results authorizes every caller
 * with TokenReviews and SubjectAccessReviews against the internal apiserver.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { get } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { startEnvironment, type Environment, applyObjects, grantRequester, installProject } from '../../src/localenv/index.js';
import { ResultsApi } from '../../src/controller/results-client.js';
import { createRequest, NS, pipelineRunsFor, releaseRun, simulatedStep, startController, testPipeline, waitFor, waitForPhase, setRunConfig, type ControllerProcess } from './helpers.js';
import { expectCode, startCli } from './cli-run.js';
import { freePorts } from '../../src/localenv/real/processes.js';

const TENANT = 'tenant-logs';
let env: Environment;
let internalAdmin: KubeConfig;
let requester: KubeConfig;
let controller: ControllerProcess | undefined;
let metricsPort = 0;

const step = simulatedStep;
const PIPELINES = [
  testPipeline('logged', {
    tasks: [
      { name: 'build', taskSpec: { steps: [step('compile', { SIMULATED_LOG: 'compiling module a\ncompiling module b' })] } },
      { name: 'sign', runAfter: ['build'], taskSpec: { steps: [step('sign', { SIMULATED_LOG: 'signing with the internal key', SIMULATED_EXIT_CODE: '3' })] } },
    ],
  }),
  testPipeline('gated', {
    tasks: [{ name: 'wait', taskSpec: { steps: [step('wait', { SIMULATED_DURATION: 'gate', SIMULATED_LOG: 'waiting for the test to release me' })] } }],
  }),
];

const results = (): NonNullable<Environment['results']> => env.results!;
/** The Results API as a given identity sees it (its bearer token, the API's CA). */
const resultsAs = (token: string): ResultsApi => new ResultsApi({ url: results().url, ca: results().caPem, headers: async () => ({ Authorization: `Bearer ${token}` }) });
const cliAs = (kubeconfig: string, args: string[]) => startCli(['request', ...args, '--kubeconfig', kubeconfig]).done;

async function metric(name: string): Promise<number> {
  const text = await new Promise<string>((resolve, reject) => {
    get(`http://127.0.0.1:${metricsPort}/metrics`, (res) => {
      let b = '';
      res.on('data', (c: Buffer) => (b += c.toString()));
      res.on('end', () => resolve(b));
    }).on('error', reject);
  });
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : NaN;
}

before(async () => {
  env = await startEnvironment({ tekton: true, results: true, log: (m) => process.stderr.write(`${m}\n`) });
  process.stderr.write(`Tekton Results ${results().version} (API TLS ${results().tlsMinVersion} and up) ready after ${results().startupMs} ms; Tekton ${env.tekton!.version}, pods SIMULATED\n`);
  await installProject(env);
  internalAdmin = env.internal.identities.admin.kubeConfig();
  requester = env.remote.identities.requester!.kubeConfig();
  await grantRequester(env, TENANT);
  await applyObjects(internalAdmin, PIPELINES as never);
  await setRunConfig(internalAdmin, { allowList: [TENANT], resultsStoreTimeout: '10m' });
  [metricsPort] = (await freePorts(1)) as [number];
  controller = await startController(env, ['--results-url', results().url, '--results-ca-file', results().caFile, '--metrics-bind-address', `127.0.0.1:${metricsPort}`]);
});

after(async () => {
  await controller?.kill('SIGKILL');
  await env?.stop();
});

describe('Tekton Results (pods simulated)', () => {
  test('a finished run is pruned only once Results holds it and its logs; the request names its record; logs come back from Results after pruning', async () => {
    const r = await createRequest(requester, TENANT, 'logged', { request: 'logged' });
    const done = await waitForPhase(requester, TENANT, 'logged', ['Succeeded', 'Failed', 'Rejected'], 90_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Failed', 'the sign step exits 3');
    const pr = `ir-${r.metadata.uid}`;
    // Pruned, and only after Results has the run finished and its logs stored.
    await waitFor('the PipelineRun to be pruned', async () => (await pipelineRunsFor(internalAdmin, r.metadata.uid!)).length === 0, 120_000, 250);
    const pruned = await controller!.waitForLog((l) => l.msg === 'PipelineRun deleted' && String(l.pipelineRun).endsWith(pr));
    assert.match(String(pruned.why), /Tekton Results holds it as internal-services\/results\/[0-9a-f-]+\/records\/[0-9a-f-]+/);
    const named = await waitFor('status.archive', async () => {
      const got = (await requester.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({ group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalrequests', namespace: TENANT, name: 'logged' }).catch(() => undefined)) as { status?: { archive?: { record?: string; log?: string } } } | undefined;
      return got?.status?.archive?.log ? got.status.archive : undefined;
    });
    assert.match(named.record ?? '', /^internal-services\/results\/[0-9a-f-]+\/records\/[0-9a-f-]+$/);
    assert.match(named.log ?? '', /^internal-services\/results\/[0-9a-f-]+\/logs\/[0-9a-f-]+$/);
    const controllerResults = resultsAs(env.internal.identities.controller.token);
    const stored = await controllerResults.record(named.record!);
    assert.equal((stored['metadata'] as { name?: string }).name, pr);
    assert.equal(((stored['status'] as { conditions?: Array<{ reason?: string }> }).conditions ?? [])[0]?.reason, 'Failed');
    const archivedLogs = await controllerResults.log(named.log!);
    assert.match(archivedLogs, /compiling module b/);
    assert.match(archivedLogs, /signing with the internal key/);
    assert.match(archivedLogs, /pods are simulated/);

    // The requester asks from the remote side: the controller answers from Results.
    const asked = await cliAs(env.remote.identities.requester!.kubeconfigPath, ['logs', `${TENANT}/logged`, '--timeout', '60']);
    expectCode(asked, 0, 'logs from Results');
    assert.match(asked.stderr, /logs from Tekton Results \(the PipelineRun was pruned\)/);
    assert.match(asked.stdout, /\[build : compile\] compiling module a/);
    assert.match(asked.stdout, /\[sign : sign\] signing with the internal key/);
    assert.match(asked.stdout, /exit code 3/);
    process.stderr.write(`--- logs of pruned request ${TENANT}/logged, from Tekton Results (pods simulated) ---\n${asked.stdout}---\n`);
    // Who cannot read the request cannot ask for its logs, nor read them.
    const outsider = await cliAs(env.remote.identities.outsider!.kubeconfigPath, ['logs', `${TENANT}/logged`, '--timeout', '5']);
    assert.notEqual(outsider.code, 0);
    assert.match(outsider.stderr, /forbidden|Forbidden|not allowed/);
  });

  test('Results authorizes callers itself: an identity without rights on results.tekton.dev is refused', async () => {
    const list = await requester.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({ group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalrequests', namespace: TENANT }) as { items: Array<{ status?: { archive?: { record?: string } } }> };
    const record = list.items.find((i) => i.status?.archive?.record)?.status?.archive?.record;
    assert.ok(record, 'a request names its record');
    await assert.rejects(resultsAs(env.internal.identities.bystander!.token).record(record), /answered 403|PermissionDenied|permission/i);
    await assert.rejects(resultsAs('not-a-token').record(record), /answered 401|Unauthenticated|unauthenticated/i);
  });

  test('the API serves only the TLS versions its TLS_MIN_VERSION allows; the controller\'s client speaks TLS 1.3', async () => {
    assert.equal(results().tlsMinVersion, '1.3');
    const handshake = (maxVersion: 'TLSv1.2' | 'TLSv1.3') =>
      new Promise<string>((resolve, reject) => {
        const req = httpsRequest(`${results().url}/healthz`, { ca: results().caPem, maxVersion, timeout: 5000 }, (res) => {
          res.resume();
          resolve(`${res.statusCode} over ${(res.socket as TLSSocket).getProtocol()}`);
        });
        req.on('timeout', () => req.destroy(new Error('timed out')));
        req.on('error', reject);
        req.end();
      });
    assert.equal(await handshake('TLSv1.3'), '200 over TLSv1.3');
    await assert.rejects(handshake('TLSv1.2'), /protocol version|alert|handshake/i, 'a client that stops at TLS 1.2 is refused');
    // The controller's own client (ResultsApi) got its verdicts over the same port: the pruning test above.
    const list = await resultsAs(env.internal.identities.controller.token).get(`/apis/results.tekton.dev/v1alpha2/parents/${NS}/results`);
    assert.ok(((JSON.parse(list) as { results?: unknown[] }).results ?? []).length >= 1, 'the controller lists the results of its namespace');
  });

  test('logs of a running request come from the live PipelineRun', async () => {
    const r = await createRequest(requester, TENANT, 'gated', { request: 'gated' });
    await waitForPhase(requester, TENANT, 'gated', ['Running'], 60_000);
    const pr = `ir-${r.metadata.uid}`;
    await waitFor('the step to run', async () => {
      const prs = await pipelineRunsFor(internalAdmin, r.metadata.uid!);
      return (prs[0]?.status?.childReferences ?? []).length > 0;
    }, 30_000);
    const asked = await cliAs(env.remote.identities.requester!.kubeconfigPath, ['logs', `${TENANT}/gated`, '--timeout', '60']);
    expectCode(asked, 0, 'live logs');
    assert.match(asked.stderr, /logs from the live PipelineRun/);
    assert.match(asked.stdout, /\[wait : wait\] .*pods are simulated/);
    assert.match(asked.stdout, /waiting for the test to release me/);
    await releaseRun(env, pr);
    await waitForPhase(requester, TENANT, 'gated', ['Succeeded'], 60_000);
  });

  test('Results down: a finished run waits (metric), nothing is deleted unstored; once Results is back it is stored, then pruned', async () => {
    await results().stopApi();
    try {
      const r = await createRequest(requester, TENANT, 'while-down', { request: 'gated' });
      await waitForPhase(requester, TENANT, 'while-down', ['Running'], 60_000);
      await releaseRun(env, `ir-${r.metadata.uid}`);
      await waitForPhase(requester, TENANT, 'while-down', ['Succeeded'], 60_000);
      await waitFor('the awaiting-results gauge', async () => (await metric('internal_services_pipelineruns_awaiting_results')) >= 1, 30_000, 500);
      await new Promise((res) => setTimeout(res, 5000));
      assert.equal((await pipelineRunsFor(internalAdmin, r.metadata.uid!)).length, 1, 'kept while Results is down');
      await results().startApi();
      await waitFor('the PipelineRun to be pruned after Results stored it', async () => (await pipelineRunsFor(internalAdmin, r.metadata.uid!)).length === 0, 120_000, 500);
      assert.equal(await metric('internal_services_pipelineruns_pruned_unarchived_total'), 0, 'nothing was deleted unstored');
    } finally {
      if (!results().api.running) await results().startApi();
    }
  });
});
