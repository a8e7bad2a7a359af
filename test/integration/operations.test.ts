/**
 * Operating the controller: metrics, /readyz through a remote outage, and
 * leader election between two real controller processes. The Pipelines run
 * on REAL Tekton (controller, resolvers, webhook) on the internal control
 * plane; only the TaskRun pods are simulated (SimulatedKubelet, see
 * src/localenv/simulated/kubelet.ts). Pipeline "sign" has a gated step: a run stays
 * Running until the test releases its pod (releaseRun), and then produces
 * the result signature = "sig-<image>".
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { CoordinationV1Api, CoreV1Api, V1MicroTime, type KubeConfig } from '@kubernetes/client-node';
import { startEnvironment, type Environment, applyObjects, grantRequester, installProject } from '../../src/localenv/index.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';
import {
  api, createRequest, httpStatus, NS, PR, pipelineRunsFor, releaseRun, runCli, simulatedStep, startController, testPipeline, waitFor, waitForPhase,
  type ControllerProcess, scrape, sample, Relay, kubeconfigVia,
} from './helpers.js';

let env: Environment;
let internalAdmin: KubeConfig;
let requester: KubeConfig;
const procs: ControllerProcess[] = [];

before(async () => {
  env = await startEnvironment({ tekton: true });
  await installProject(env);
  internalAdmin = env.internal.identities.admin.kubeConfig();
  requester = env.remote.identities.requester!.kubeConfig();
  await grantRequester(env, 'team-a');
  await applyObjects(internalAdmin, [
    testPipeline('sign', {
      params: [{ name: 'image' }],
      results: [{ name: 'signature', value: '$(tasks.sign.results.signature)' }],
      tasks: [
        {
          name: 'sign',
          params: [{ name: 'image', value: '$(params.image)' }],
          taskSpec: {
            params: [{ name: 'image' }],
            results: [{ name: 'signature' }],
            steps: [simulatedStep('s', { SIMULATED_DURATION: 'gate', SIMULATED_RESULT_signature: 'sig-$(params.image)' })],
          },
        },
      ],
    }),
    { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name: 'config', namespace: NS }, spec: { allowList: ['team-a'] } },
  ] as never);
});

after(async () => {
  await Promise.all(procs.map((p) => p.kill('SIGKILL')));
  await env?.stop();
});

async function completeRequest(name: string): Promise<void> {
  const r = await createRequest(requester, 'team-a', name, { request: 'sign', params: { image: name } });
  const pr = await waitFor(`PipelineRun of ${name}`, async () => (await pipelineRunsFor(internalAdmin, r.metadata.uid!))[0]);
  await waitForPhase(requester, 'team-a', name, ['Running']);
  await releaseRun(env, pr.metadata.name!);
  const done = await waitForPhase(requester, 'team-a', name, ['Succeeded'], 60_000);
  assert.deepEqual(done.status?.results, { signature: `sig-${name}` });
}

/** Waits until Tekton reports the PipelineRun finished (Succeeded condition True or False). */
async function waitForPipelineRunDone(name: string, timeoutMs = 60_000): Promise<PipelineRun> {
  return waitFor(`PipelineRun ${name} to finish`, async () => {
    const pr = (await api(internalAdmin).getNamespacedCustomObject({ ...PR, namespace: NS, name })) as PipelineRun;
    const c = pr.status?.conditions?.find((x) => x.type === 'Succeeded');
    return c && c.status !== 'Unknown' ? pr : undefined;
  }, timeoutMs);
}

test('metrics change as requests move; names of the Go controller kept', async () => {
  const c = await startController(env, ['--metrics-bind-address', '127.0.0.1:0']);
  procs.push(c);
  const port = Number(String((await c.waitForLog((l) => l.msg === 'serving metrics')).address).split(':').pop());
  const before = await scrape(port);
  assert.equal(sample(before, 'internal_request_attempt_total', { reason: 'Succeeded' }), undefined);
  assert.equal(sample(before, 'internal_request_attempt_concurrent_requests'), 0);

  const r = await createRequest(requester, 'team-a', 'metered', { request: 'sign', params: { image: 'x' } });
  const pr = await waitFor('PipelineRun', async () => (await pipelineRunsFor(internalAdmin, r.metadata.uid!))[0]);
  await waitForPhase(requester, 'team-a', 'metered', ['Running']);
  await waitFor('concurrent gauge 1', async () => sample(await scrape(port), 'internal_request_attempt_concurrent_requests') === 1);
  const running = await scrape(port);
  assert.equal(sample(running, 'internal_request_time_to_running_seconds_count', { request: 'sign', namespace: 'team-a', remote: 'default' }), 1, 'time to Running observed once');
  assert.equal(sample(running, 'internal_services_pipelineruns_past_timeout', { remote: 'default' }), 0, 'a run within its timeout');
  await releaseRun(env, pr.metadata.name!);
  await waitForPhase(requester, 'team-a', 'metered', ['Succeeded'], 60_000);
  const text = await waitFor('attempt counter', async () => {
    const t = await scrape(port);
    return sample(t, 'internal_request_attempt_total', { request: 'sign', namespace: 'team-a', reason: 'Succeeded', succeeded: 'true' }) === 1 ? t : undefined;
  });
  assert.equal(sample(text, 'internal_request_attempt_duration_seconds_count', { request: 'sign', reason: 'Succeeded' }), 1);
  assert.ok((sample(text, 'internal_services_workqueue_adds_total') ?? 0) >= 1);
  assert.ok((sample(text, 'internal_services_api_requests_total', { cluster: 'internal', verb: 'create', code: '201' }) ?? 0) >= 1, 'PipelineRun create counted');
  assert.ok((sample(text, 'internal_services_api_requests_total', { cluster: 'remote', verb: 'update', code: '200' }) ?? 0) >= 2, 'status writes counted');
  assert.ok(sample(text, 'internal_services_watch_last_contact_age_seconds', { informer: 'remote/default/internalrequests' }) !== undefined);
  assert.ok((sample(text, 'internal_services_api_requests_total', { cluster: 'remote', verb: 'list', code: '200' }) ?? 0) >= 1, 'lists counted');
  assert.equal(sample(text, 'internal_services_leader'), 1);
  assert.ok((sample(text, 'internal_services_reconcile_total', { result: 'ok' }) ?? 0) >= 2);
  await waitFor('concurrent gauge back to 0', async () => sample(await scrape(port), 'internal_request_attempt_concurrent_requests') === 0);
  await c.kill('SIGTERM');
});

test('/readyz: unready while the remote apiserver is down, ready when it is back; the pending request then completes', async () => {
  const c = await startController(env, ['--metrics-bind-address', '127.0.0.1:0']);
  procs.push(c);
  const metricsPort = Number(String((await c.waitForLog((l) => l.msg === 'serving metrics')).address).split(':').pop());
  const readyz = `http://127.0.0.1:${c.healthPort}/readyz`;
  assert.equal(await httpStatus(`http://127.0.0.1:${c.healthPort}/healthz`), 200);
  await waitFor('ready', async () => (await httpStatus(readyz)) === 200);
  const r = await createRequest(requester, 'team-a', 'through-outage', { request: 'sign', params: { image: 'during-outage' } });
  const pr = await waitFor('PipelineRun', async () => (await pipelineRunsFor(internalAdmin, r.metadata.uid!))[0]);
  await waitForPhase(requester, 'team-a', 'through-outage', ['Running']);
  await env.remote.stopApiserver();
  try {
    await waitFor('unready', async () => (await httpStatus(readyz)) === 503, 30_000);
    assert.equal(await httpStatus(`http://127.0.0.1:${c.healthPort}/healthz`), 200, 'still alive');
    // The run finishes (Tekton reports it Succeeded) while the remote is away.
    await releaseRun(env, pr.metadata.name!);
    const finished = await waitForPipelineRunDone(pr.metadata.name!);
    assert.equal(finished.status?.conditions?.find((x) => x.type === 'Succeeded')?.status, 'True');
  } finally {
    await env.remote.startApiserver();
  }
  await waitFor('ready again', async () => (await httpStatus(readyz)) === 200, 60_000);
  const done = await waitForPhase(requester, 'team-a', 'through-outage', ['Succeeded'], 60_000);
  assert.deepEqual(done.status?.results, { signature: 'sig-during-outage' });
  // The outage ended the remote watch; ended watches are counted by cluster and verb too.
  assert.ok((sample(await scrape(metricsPort), 'internal_services_api_requests_total', { cluster: 'remote', verb: 'watch' }) ?? 0) >= 1, 'watches counted');
  await c.kill('SIGTERM');
});

test('leader election: one of two replicas acts; killing it hands over within the lease duration; nothing twice', async () => {
  const args = ['--leader-elect', '--lease-duration', '4s', '--renew-deadline', '3s', '--retry-period', '500ms'];
  const start = () => {
    const p = runCli([
      'controller',
      '--remote-kubeconfig', env.remote.identities.controller.kubeconfigPath,
      '--kubeconfig', env.internal.identities.controller.kubeconfigPath,
      '--namespace', NS, '--metrics-bind-address', '0', '--health-probe-bind-address', '0', ...args,
    ]);
    procs.push(p);
    return p;
  };
  const a = start();
  const b = start();
  const leader = await Promise.any([a, b].map((p) => p.waitForLog((l) => l.msg === 'became leader', 30_000).then(() => p)));
  const standby = leader === a ? b : a;
  await standby.waitForLog((l) => l.msg === 'waiting to become leader');
  for (const n of ['le-1', 'le-2', 'le-3']) await completeRequest(n);
  assert.equal(standby.lines.filter((l) => l.msg === 'became leader').length, 0, 'only one leader');
  assert.equal(standby.lines.filter((l) => l.msg === 'PipelineRun created').length, 0, 'the standby did nothing');
  assert.equal(leader.lines.filter((l) => l.msg === 'PipelineRun created').length, 3);

  await leader.kill('SIGKILL');
  const killedAt = Date.now();
  await standby.waitForLog((l) => l.msg === 'became leader', 15_000);
  const handover = Date.now() - killedAt;
  assert.ok(handover <= 4_000 + 2_000, `took over in ${handover} ms (lease 4 s, + one retry period and process slack)`);
  await completeRequest('le-4');
  assert.equal(standby.lines.filter((l) => l.msg === 'PipelineRun created').length, 1, 'the new leader did only the new request');
  const all = [...a.lines, ...b.lines].filter((l) => l.msg === 'PipelineRun created').map((l) => l.request);
  assert.deepEqual(all.sort(), ['default/team-a/le-1', 'default/team-a/le-2', 'default/team-a/le-3', 'default/team-a/le-4']);

  // A clean shutdown hands the lease back at once.
  const c = start();
  await c.waitForLog((l) => l.msg === 'waiting to become leader');
  const t0 = Date.now();
  await standby.kill('SIGTERM');
  await c.waitForLog((l) => l.msg === 'became leader', 10_000);
  assert.ok(Date.now() - t0 < 3_000, 'released lease taken over quickly');
  await c.kill('SIGTERM');
});

test('--events: routine successes only with all; rejections by default and with warnings; nothing with none', async () => {
  const core = env.remote.identities.admin.kubeConfig().makeApiClient(CoreV1Api);
  const reasons = async (name: string) => (await core.listNamespacedEvent({ namespace: 'team-a' })).items.filter((e) => e.involvedObject.name === name).map((e) => e.reason ?? '');
  const cases: Array<{ flags: string[]; tag: string; success: string[]; rejected: boolean }> = [
    { flags: ['--events', 'all'], tag: 'all', success: ['Running', 'Succeeded'], rejected: true },
    { flags: [], tag: 'default', success: [], rejected: true },
    { flags: ['--events', 'warnings'], tag: 'warn', success: [], rejected: true },
    { flags: ['--events', 'none'], tag: 'none', success: [], rejected: false },
  ];
  for (const k of cases) {
    const c = await startController(env, k.flags);
    procs.push(c);
    try {
      await completeRequest(`ev-${k.tag}`);
      await createRequest(requester, 'team-a', `ev-${k.tag}-rejected`, { request: 'no-such-pipeline' });
      await waitForPhase(requester, 'team-a', `ev-${k.tag}-rejected`, ['Rejected']);
      if (k.rejected) {
        await waitFor(`the Rejected event (${k.tag})`, async () => (await reasons(`ev-${k.tag}-rejected`)).includes('Rejected'));
      } else {
        // Nothing to wait for: give a recorder that would write one the time to.
        await new Promise((r) => setTimeout(r, 1500));
        assert.deepEqual(await reasons(`ev-${k.tag}-rejected`), [], `${k.tag}: no Rejected event`);
      }
      if (k.success.length) await waitFor(`Running and Succeeded events (${k.tag})`, async () => (await reasons(`ev-${k.tag}`)).sort().join() === [...k.success].sort().join());
      else assert.deepEqual(await reasons(`ev-${k.tag}`), [], `${k.tag}: no Running/Succeeded events`);
    } finally {
      await c.kill('SIGTERM');
    }
  }
});

test('leader election: a leader that finds the lease taken stops acting at once and exits', async () => {
  const p = runCli([
    'controller',
    '--remote-kubeconfig', env.remote.identities.controller.kubeconfigPath,
    '--kubeconfig', env.internal.identities.controller.kubeconfigPath,
    '--namespace', NS, '--metrics-bind-address', '0', '--health-probe-bind-address', '0',
    '--leader-elect', '--leader-election-id', 'takeover-test', '--lease-duration', '4s', '--renew-deadline', '3s', '--retry-period', '500ms',
  ]);
  procs.push(p);
  await p.waitForLog((l) => l.msg === 'became leader', 30_000);
  // Another holder takes the lease (as a partitioned-away leader would find on return).
  const leases = internalAdmin.makeApiClient(CoordinationV1Api);
  const lease = await leases.readNamespacedLease({ name: 'takeover-test', namespace: NS });
  await leases.replaceNamespacedLease({
    name: 'takeover-test',
    namespace: NS,
    body: { ...lease, spec: { ...lease.spec, holderIdentity: 'intruder', leaseDurationSeconds: 3600, renewTime: new V1MicroTime() } },
  });
  const t0 = Date.now();
  assert.equal(await p.exited, 1, 'exits non-zero so the pod restarts as a standby');
  assert.ok(Date.now() - t0 < 3_000, 'within a few retry periods');
  assert.ok(p.lines.some((l) => l.msg === 'lost leadership: another instance holds the lease' && l.holder === 'intruder'));
  await leases.deleteNamespacedLease({ name: 'takeover-test', namespace: NS });
});

test('--remote-mode poll behind a proxy that cuts every connection after 400 ms: every request completes, exactly once', async () => {
  const u = new URL(env.remote.url);
  const cutter = new Relay({ host: u.hostname, port: Number(u.port) }, 400);
  await cutter.listen();
  const viaProxy = kubeconfigVia(env.remote.identities.controller.kubeconfigPath, `https://127.0.0.1:${cutter.port}`, join(env.dir, 'remote-via-cutting-proxy.yaml'));
  const c = await startController(env, ['--remote-kubeconfig', viaProxy, '--remote-mode', 'poll', '--poll-interval', '500ms']);
  procs.push(c);
  try {
    await Promise.all(['poll-1', 'poll-2', 'poll-3'].map((n) => completeRequest(n)));
    assert.ok(cutter.cuts > 0, `the proxy cut connections (${cutter.cuts})`);
  } finally {
    await c.kill('SIGKILL');
    await cutter.close();
  }
});
