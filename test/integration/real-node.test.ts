/**
 * Tekton's pods run for real (issue 53): the internal cluster has a real node
 * (src/localenv/real/real-node.ts: kubelet, kube-scheduler and
 * kube-controller-manager built from the harness's Kubernetes module;
 * containerd, runc and the CNI plugins from Debian) and Tekton runs its own
 * entrypoint, nop and workingdirinit images on it; `script:` steps run in a
 * busybox image. Nothing here is simulated: a result is what a shell
 * computed and Tekton's entrypoint wrote into the termination message, a
 * failure is a process' exit code, a timeout and a cancellation stop real
 * containers, the token is the one the kubelet projected.
 *
 * It needs root and Debian's containerd, runc, containernetworking-plugins
 * and busybox-static (.ci/run installs them). Without them it is skipped,
 * loudly — except in CI (CI=true), where it fails instead.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { applyObjects, grantRequester, installProject, realNodeUnavailable, startEnvironment, type Environment } from '../../src/localenv/index.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { onRealNode } from '../../src/cli/local-pods.js';
import { repoRoot } from '../../src/util/repo.js';
import { api, createRequest, IR, messageOf, NS, runPlugin, setRunConfig, startController, testPipeline, waitFor, waitForPhase, type ControllerProcess } from './helpers.js';

const TENANT = 'team-real';
const unavailable = realNodeUnavailable();
if (unavailable) {
  const line = `real-node.test: ${process.env['CI'] === 'true' ? 'FAILING (CI must run it)' : 'SKIPPED'}: ${unavailable}`;
  process.stderr.write(`\n${'!'.repeat(line.length)}\n${line}\n${'!'.repeat(line.length)}\n\n`);
}

let env: Environment;
let internalAdmin: KubeConfig;
let requester: KubeConfig;
let controller: ControllerProcess | undefined;

/**
 * A Pipeline of one Task whose steps are shell scripts in the node's busybox
 * image; `results` are the Task's, passed up. With `lingerS`, a finally task
 * sleeps that long: the run, and the pod of a failed task, stay that long.
 */
function scriptPipeline(name: string, opts: { params?: string[]; results?: string[]; steps: Array<{ name: string; script: string }>; lingerS?: number }): Record<string, unknown> {
  const params = opts.params ?? [];
  const results = opts.results ?? [];
  return testPipeline(name, {
    params: params.map((p) => ({ name: p, type: 'string' })),
    results: results.map((r) => ({ name: r, value: `$(tasks.run.results.${r})` })),
    tasks: [
      {
        name: 'run',
        params: params.map((p) => ({ name: p, value: `$(params.${p})` })),
        taskSpec: {
          params: params.map((p) => ({ name: p, type: 'string' })),
          results: results.map((r) => ({ name: r, type: 'string' })),
          steps: opts.steps.map((s) => ({
            name: s.name,
            image: env.node!.shellImage,
            // Params reach the script through the environment, never spliced into its text.
            env: params.map((p) => ({ name: p.toUpperCase(), value: `$(params.${p})` })),
            script: `#!/bin/sh\nset -eu\n${s.script}\n`,
          })),
        },
      },
    ],
    ...(opts.lingerS ? { finally: [{ name: 'linger', taskSpec: { steps: [{ name: 'sleep', image: env.node!.shellImage, script: `#!/bin/sh\nsleep ${opts.lingerS}\n` }] } }] } : {}),
  });
}

/** The pods of a request's PipelineRun (named ir-<uid> by the controller). */
async function podsOf(uid: string): Promise<string[]> {
  const core = internalAdmin.makeApiClient(CoreV1Api);
  return (await core.listNamespacedPod({ namespace: NS, labelSelector: `tekton.dev/pipelineRun=ir-${uid}` })).items.map((p) => p.metadata!.name!);
}

/** Containers containerd is running (tasks in state RUNNING). */
async function runningTasks(): Promise<string[]> {
  return (await env.node!.ctr(['tasks', 'ls']))
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f[2] === 'RUNNING')
    .map((f) => f[0]!);
}

/** Waits until a step of the request runs in a container; returns its id and pod. */
async function runningStep(uid: string, step: string): Promise<{ id: string; pod: string }> {
  const core = internalAdmin.makeApiClient(CoreV1Api);
  return waitFor(`step ${step} of ${uid} running`, async () => {
    for (const name of await podsOf(uid)) {
      const pod = await core.readNamespacedPod({ namespace: NS, name });
      const c = pod.status?.containerStatuses?.find((s) => s.name === `step-${step}`);
      if (c?.state?.running && c.containerID) return { id: c.containerID.replace(/^containerd:\/\//, ''), pod: name };
    }
    return undefined;
  }, 90_000, 250);
}

before(async () => {
  if (unavailable) {
    if (process.env['CI'] === 'true') throw new Error(`CI must run the real node: ${unavailable}`);
    return;
  }
  env = await startEnvironment({ tekton: true, node: true, log: (m) => process.stderr.write(`${m}\n`) });
  process.stderr.write(`real node Ready after ${env.node!.startupMs} ms; Tekton ${env.tekton!.version} with its own helper images: ${JSON.stringify(env.node!.tektonImages)}\n`);
  internalAdmin = env.internal.identities.admin.kubeConfig();
  requester = env.remote.identities.requester!.kubeConfig();
  await installProject(env);
  await grantRequester(env, TENANT);
  await applyObjects(internalAdmin, [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'signer', namespace: NS } },
    scriptPipeline('digest', { params: ['image'], results: ['digest'], steps: [{ name: 'digest', script: 'echo "computing the digest of $IMAGE"\nprintf %s "$IMAGE" | sha256sum | cut -d" " -f1 | tr -d "\\n" > "$(results.digest.path)"' }] }),
    scriptPipeline('fail', { steps: [{ name: 'check', script: 'echo "the check finds a problem" >&2\nexit 3' }] }),
    scriptPipeline('big', { results: ['out'], steps: [{ name: 'produce', script: 'head -c 5000 /dev/zero | tr "\\0" x > "$(results.out.path)"' }], lingerS: 6 }),
    scriptPipeline('slow', { steps: [{ name: 'prepare', script: 'echo "prepared the release of $(date +%Y)"; echo "line two of the real log"' }, { name: 'wait', script: 'echo waiting; sleep 300' }] }),
    // The ticketing sample's Pipeline as shipped, its step in the node's shell image.
    { ...onRealNode(parseYaml(readFileSync(join(repoRoot(), 'config', 'samples', 'kinds', 'ticketing', 'pipeline.yaml'), 'utf8')) as Record<string, unknown>, env.node!.shellImage), metadata: { name: 'open-ticket', namespace: NS } },
    scriptPipeline('whoami', { results: ['claims'], steps: [{ name: 'token', script: 'cut -d. -f2 /var/run/secrets/kubernetes.io/serviceaccount/token | tr -d "\\n" > "$(results.claims.path)"' }] }),
  ] as never);
  await setRunConfig(internalAdmin, { allowList: [TENANT], allowedServiceAccounts: ['signer'] });
  controller = await startController(env);
});

after(async () => {
  await controller?.kill('SIGKILL');
  await env?.stop();
});

describe('Tekton on the real node', { skip: unavailable !== undefined && process.env['CI'] !== 'true' ? `no real node: ${unavailable}` : false }, () => {
  test("the node: a kubelet of the apiserver's own version on containerd, Ready", async () => {
    const node = await internalAdmin.makeApiClient(CoreV1Api).readNode({ name: env.node!.name });
    const info = node.status?.nodeInfo;
    process.stderr.write(`node ${env.node!.name}: kubelet ${info?.kubeletVersion}, ${info?.containerRuntimeVersion}, kernel ${info?.kernelVersion}, ${info?.osImage}\n`);
    assert.equal(info?.kubeletVersion, env.assets.kubernetesVersion);
    assert.match(info?.containerRuntimeVersion ?? '', /^containerd:\/\//);
    assert.equal(node.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
    assert.deepEqual(node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address, env.node!.ip);
  });

  test('a result computed by a script step from the params comes back to the requester', async () => {
    const image = `quay.io/org/app@sha256:${createHash('sha256').update(String(Date.now())).digest('hex')}`;
    await createRequest(requester, TENANT, 'digest-1', { request: 'digest', params: { image } });
    const done = await waitForPhase(requester, TENANT, 'digest-1', ['Succeeded', 'Failed', 'Rejected'], 120_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    assert.deepEqual(done.status?.results, { digest: createHash('sha256').update(image).digest('hex') });
  });

  test("the ticketing sample's script derives the ticket's key from the params", async () => {
    const summary = `disk full on builder ${Date.now()}`;
    await createRequest(requester, TENANT, 'ticket-1', { request: 'open-ticket', params: { summary, 'ticket-priority': 'high' } });
    const done = await waitForPhase(requester, TENANT, 'ticket-1', ['Succeeded', 'Failed', 'Rejected'], 120_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    const key = `release-engineering-${createHash('sha256').update(summary).digest('hex').slice(0, 8)}`;
    assert.deepEqual(done.status?.results, { ticket: key, url: `https://tracker.example/browse/${key}` });
  });

  test('a step that exits 3: the request fails with the step and its exit code', async () => {
    await createRequest(requester, TENANT, 'fail-1', { request: 'fail' });
    const done = await waitForPhase(requester, TENANT, 'fail-1', ['Succeeded', 'Failed', 'Rejected'], 120_000);
    process.stderr.write(`failed request's condition: ${JSON.stringify(done.status?.conditions?.[0])}\n`);
    assert.equal(done.status?.conditions?.[0]?.status, 'False');
    assert.match(messageOf(done), /"step-check" exited with code 3/);
  });

  test("a result over Tekton's limit (the 4096-byte termination message): the step fails, the requester is told which and gets no result", async () => {
    const r = await createRequest(requester, TENANT, 'big-1', { request: 'big' });
    // What the node saw, read while the finally task lingers (before the run is pruned): the step's own log and state.
    const core = internalAdmin.makeApiClient(CoreV1Api);
    const seen = await waitFor('the step to end', async () => {
      for (const name of (await podsOf(r.metadata.uid!))) {
        const pod = await core.readNamespacedPod({ namespace: NS, name });
        const c = pod.status?.containerStatuses?.find((s) => s.name === 'step-produce');
        if (c?.state?.terminated) return { exitCode: c.state.terminated.exitCode, log: await core.readNamespacedPodLog({ namespace: NS, name, container: 'step-produce' }) };
      }
      return undefined;
    }, 120_000, 200);
    process.stderr.write(`oversized result: the step ended with ${seen.exitCode}, its log:\n${seen.log}\n`);
    assert.match(seen.log, /above max allowed size 4096/);
    const done = await waitForPhase(requester, TENANT, 'big-1', ['Succeeded', 'Failed', 'Rejected'], 120_000);
    process.stderr.write(`oversized result's condition: ${JSON.stringify(done.status?.conditions?.[0])}\n`);
    assert.equal(done.status?.conditions?.[0]?.status, 'False');
    assert.match(messageOf(done), new RegExp(`"step-produce" exited with code ${seen.exitCode}`));
    // The reason is only in the step's log: the message names the result and the limit, and where to look.
    assert.match(messageOf(done), /results out not written; if step-produce wrote them, together they were over Tekton's 4096-byte limit/);
    assert.equal(done.status?.results?.['out'], undefined);
  });

  test('the pod gets the token of the ServiceAccount the request names', async () => {
    const claims = async (name: string, serviceAccount?: string): Promise<Record<string, unknown>> => {
      await createRequest(requester, TENANT, name, { request: 'whoami', ...(serviceAccount ? { serviceAccount } : {}) });
      const done = await waitForPhase(requester, TENANT, name, ['Succeeded', 'Failed', 'Rejected'], 120_000);
      assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
      return JSON.parse(Buffer.from(String(done.status?.results?.['claims']), 'base64url').toString('utf8')) as Record<string, unknown>;
    };
    const signer = await claims('whoami-signer', 'signer');
    assert.equal(signer['sub'], `system:serviceaccount:${NS}:signer`);
    // Bound to the run's pod (ir-<request uid>-run-pod), as the kubelet asked for it.
    assert.match(String((signer['kubernetes.io'] as { pod?: { name?: string } }).pod?.name), /^ir-[0-9a-f-]{36}-run-pod$/);
    const plain = await claims('whoami-default');
    assert.equal(plain['sub'], `system:serviceaccount:${NS}:default`);
  });

  test('kubectl internalrequest logs shows the steps\' real output; deleting the request stops its containers', async () => {
    const r = await createRequest(requester, TENANT, 'slow-1', { request: 'slow' });
    const step = await runningStep(r.metadata.uid!, 'wait');
    assert.ok((await runningTasks()).includes(step.id), 'the step runs in containerd');
    // A step's container runs from the pod's start: Tekton's entrypoint in it waits for the step before (the first step for
    // the pod's ready annotation, through the downward API) before running the script, so a running container may have
    // printed nothing yet. Asked again (a new ask each time, as a requester would) until the steps' lines are there.
    let asks = 0;
    const asked = await waitFor('the steps\' output in the logs', async () => {
      asks++;
      const x = await runPlugin(['logs', `${TENANT}/slow-1`, '--timeout', '60'], env.remote.identities.requester!.kubeconfigPath);
      assert.equal(x.code, 0, x.stderr);
      return /line two of the real log/.test(x.stdout) && /waiting/.test(x.stdout) ? x : undefined;
    }, 60_000, 1_000);
    process.stderr.write(`logs asked ${asks} time(s)\n`);
    process.stderr.write(`--- kubectl internalrequest logs ${TENANT}/slow-1 (real pods) ---\n${asked.stdout}---\n`);
    assert.match(asked.stdout, new RegExp(`prepared the release of ${new Date().getUTCFullYear()}`));
    assert.match(asked.stdout, /line two of the real log/);
    assert.match(asked.stdout, /waiting/);

    await api(requester).deleteNamespacedCustomObject({ ...IR, namespace: TENANT, name: 'slow-1' });
    const core = internalAdmin.makeApiClient(CoreV1Api);
    await waitFor('the step container to stop', async () => !(await runningTasks()).includes(step.id), 60_000, 250);
    await waitFor('the pod to be gone', async () => (await core.listNamespacedPod({ namespace: NS })).items.every((p) => p.metadata?.name !== step.pod), 60_000, 250);
  });

  test('a timeout stops the running container', async () => {
    const r = await createRequest(requester, TENANT, 'slow-timeout', { request: 'slow', timeouts: { pipeline: '15s' } });
    const step = await runningStep(r.metadata.uid!, 'wait');
    const done = await waitForPhase(requester, TENANT, 'slow-timeout', ['Succeeded', 'Failed', 'Rejected'], 120_000);
    process.stderr.write(`timed-out request's condition: ${JSON.stringify(done.status?.conditions?.[0])}\n`);
    assert.equal(done.status?.conditions?.[0]?.status, 'False');
    assert.match(messageOf(done), /timed out|timeout/i);
    await waitFor('the step container to stop', async () => !(await runningTasks()).includes(step.id), 60_000, 250);
  });
});
