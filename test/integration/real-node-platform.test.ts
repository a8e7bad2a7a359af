/**
 * The platform on the real node (issue 53): real Tekton Chains signs a
 * PipelineRun whose TaskRun really ran (kubelet, containerd, Tekton's own
 * entrypoint: src/localenv/real/real-node.ts), and real Tekton Results
 * archives its real logs, which the requester reads with `kubectl
 * internalrequest logs` after the controller pruned the run.
 *
 * Needs what real-node.test.ts needs (root, Debian's containerd, runc,
 * containernetworking-plugins, busybox-static) and the platform's build
 * (hack/platform/install.sh): it runs in hack/test.sh's platform group.
 * Skipped with a loud reason where no node can start; failing instead in CI.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { applyObjects, grantRequester, installProject, realNodeUnavailable, startEnvironment, type Environment } from '../../src/localenv/index.js';
import type { InternalRequest } from '../../src/api/types.js';
import { startCli, expectCode } from './cli-run.js';
import { createRequest, getRequest, messageOf, pipelineRunsFor, runPlugin, setRunConfig, startController, testPipeline, waitFor, waitForPhase, type ControllerProcess } from './helpers.js';

const TENANT = 'team-real-platform';
const unavailable = realNodeUnavailable();
if (unavailable) {
  const line = `real-node-platform.test: ${process.env['CI'] === 'true' ? 'FAILING (CI must run it)' : 'SKIPPED'}: ${unavailable}`;
  process.stderr.write(`\n${'!'.repeat(line.length)}\n${line}\n${'!'.repeat(line.length)}\n\n`);
}

let env: Environment;
let internalAdmin: KubeConfig;
let requester: KubeConfig;
let controller: ControllerProcess | undefined;
let publicKeyFile: string;

before(async () => {
  if (unavailable) {
    if (process.env['CI'] === 'true') throw new Error(`CI must run the real node: ${unavailable}`);
    return;
  }
  const key = generateKeyPairSync('ec', { namedCurve: 'prime256v1', privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
  env = await startEnvironment({ tekton: true, node: true, results: true, chains: { privateKeyPem: key.privateKey }, log: (m) => process.stderr.write(`${m}\n`) });
  process.stderr.write(`real node Ready after ${env.node!.startupMs} ms; Tekton ${env.tekton!.version}, Results ${env.results!.version}, Chains ${env.chains!.version}\n`);
  publicKeyFile = join(env.dir, 'chains.pub');
  writeFileSync(publicKeyFile, key.publicKey);
  internalAdmin = env.internal.identities.admin.kubeConfig();
  requester = env.remote.identities.requester!.kubeConfig();
  await installProject(env);
  await grantRequester(env, TENANT);
  await applyObjects(internalAdmin, [
    testPipeline('digest', {
      params: [{ name: 'image', type: 'string' }],
      results: [{ name: 'digest', value: '$(tasks.digest.results.digest)' }],
      tasks: [
        {
          name: 'digest',
          params: [{ name: 'image', value: '$(params.image)' }],
          taskSpec: {
            params: [{ name: 'image', type: 'string' }],
            results: [{ name: 'digest', type: 'string' }],
            steps: [
              {
                name: 'digest',
                image: env.node!.shellImage,
                env: [{ name: 'IMAGE', value: '$(params.image)' }],
                script: '#!/bin/sh\nset -eu\necho "computing the digest of $IMAGE on $(hostname)"\nprintf %s "$IMAGE" | sha256sum | cut -d" " -f1 | tr -d "\\n" > "$(results.digest.path)"\n',
              },
            ],
          },
        },
      ],
    }),
  ] as never);
  await setRunConfig(internalAdmin, { allowList: [TENANT], chains: { enabled: true }, resultsStoreTimeout: '10m' });
  controller = await startController(env, ['--results-url', env.results!.url, '--results-ca-file', env.results!.caFile]);
});

after(async () => {
  await controller?.kill('SIGKILL');
  await env?.stop();
});

describe('Tekton Chains and Results on the real node', { skip: unavailable !== undefined && process.env['CI'] !== 'true' ? `no real node: ${unavailable}` : false }, () => {
  test('Chains signs a run that really ran; after pruning, its real logs come back from Tekton Results', async () => {
    const image = `quay.io/org/app@sha256:${createHash('sha256').update(`platform-${Date.now()}`).digest('hex')}`;
    const expected = createHash('sha256').update(image).digest('hex');
    const r = await createRequest(requester, TENANT, 'signed-real', { request: 'digest', params: { image } });
    const done = await waitForPhase(requester, TENANT, 'signed-real', ['Succeeded', 'Failed', 'Rejected'], 120_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    assert.deepEqual(done.status?.results, { digest: expected });

    // The attestation Chains made, relayed into the request; the requester verifies it.
    const signed = await waitFor('status.attestation', async () => {
      const got: InternalRequest = await getRequest(requester, TENANT, 'signed-real');
      return got.status?.attestation ? got : undefined;
    }, 120_000, 250);
    const a = signed.status!.attestation!;
    assert.equal(a.state, 'Signed', a.message);
    const envelope = JSON.parse(Buffer.from(a.envelope!, 'base64').toString('utf8')) as { payload: string };
    const statement = Buffer.from(envelope.payload, 'base64').toString('utf8');
    // What the provenance records is what ran on the node: the result the script computed, and the step's
    // image as containerd resolved it (the kubelet's imageID: a digest no simulated pod has).
    assert.ok(statement.includes(expected), 'the provenance records the computed result');
    const shellRepo = env.node!.shellImage.split(':')[0]!;
    assert.match(statement, new RegExp(`${shellRepo.replace(/[./]/g, '\\$&')}@sha256:[0-9a-f]{64}`), 'the provenance names the step image by the digest the node ran');
    const verified = await startCli(['request', 'verify', `${TENANT}/signed-real`, '--key', publicKeyFile, '--kubeconfig', env.remote.identities.requester!.kubeconfigPath]).done;
    expectCode(verified, 0, 'verify');

    // Pruned once Results holds it; then the logs come from Results.
    await waitFor('the PipelineRun to be pruned', async () => (await pipelineRunsFor(internalAdmin, r.metadata.uid!)).length === 0, 180_000, 500);
    const asked = await runPlugin(['logs', `${TENANT}/signed-real`, '--timeout', '60'], env.remote.identities.requester!.kubeconfigPath);
    assert.equal(asked.code, 0, asked.stderr);
    process.stderr.write(`--- kubectl internalrequest logs ${TENANT}/signed-real, from Tekton Results (real pod) ---\n${asked.stdout}---\n`);
    assert.match(asked.stderr, /logs from Tekton Results \(the PipelineRun was pruned\)/);
    // The pod's host name is its own (the pod's), not this machine's: the line was printed in the pod.
    assert.match(asked.stdout, new RegExp(`\\[digest : digest\\] computing the digest of ${image.replace(/[.@/]/g, '\\$&')} on ir-[0-9a-f-]{36}-digest-pod`));
  });
});
