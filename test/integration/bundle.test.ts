/**
 * The bundled runtime (dist/bundle, esbuild) is what the image, `npm start`
 * and the benchmark run: it must serve a request end to end as the plain
 * build does, on the real control planes (PipelineRuns completed by the
 * simulated executor, a stand-in for Tekton: this test is about the process).
 * A bundle that drops something needed at run time fails here. Also prints
 * the resident memory of both builds once ready (figures for the docs, not
 * assertions).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  startEnvironment,
  type Environment,
  applyObjects,
  grantRequester,
  installProject,
  SimulatedTektonExecutor,
} from '../../src/localenv/index.js';
import { repoRoot } from '../../src/util/repo.js';
import { createRequest, messageOf, NS, runCli, setRunConfig, testPipeline, waitForPhase, type ControllerProcess } from './helpers.js';

let env: Environment;
let requester: KubeConfig;
let executor: { stop(): Promise<void> };

before(async () => {
  env = await startEnvironment({});
  await installProject(env);
  await grantRequester(env, 'team-a');
  const internalAdmin = env.internal.identities.admin.kubeConfig();
  requester = env.remote.identities.requester!.kubeConfig();
  await applyObjects(internalAdmin, [testPipeline('echo', { params: [{ name: 'text', default: '' }], results: [{ name: 'out', value: '$(tasks.t.results.out)' }], tasks: [{ name: 't', taskSpec: { results: [{ name: 'out' }], steps: [{ name: 's', image: 'x', command: ['x'] }] } }] })] as never);
  await setRunConfig(internalAdmin, { allowList: ['team-a'] });
  executor = new SimulatedTektonExecutor(internalAdmin).startAuto({ namespace: NS, delayMs: 0, outcome: (pr) => ({ succeeded: true, results: { out: String((pr.spec?.['params'] as Array<{ value: string }> | undefined)?.[0]?.value ?? '') } }) });
});

after(async () => {
  await executor?.stop();
  await env?.stop();
});

function start(script: string): ControllerProcess {
  return runCli(
    ['controller', '--remote-kubeconfig', env.remote.identities.controller.kubeconfigPath, '--kubeconfig', env.internal.identities.controller.kubeconfigPath, '--namespace', NS, '--metrics-bind-address', '0', '--health-probe-bind-address', '0'],
    {},
    script,
  );
}

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

for (const [build, script] of [
  ['bundle', join(repoRoot(), 'dist', 'bundle', 'internal-services.mjs')],
  ['plain', join(repoRoot(), 'dist', 'src', 'cli', 'main.js')],
] as const) {
  test(`the ${build} build serves a request end to end`, async () => {
    const c = start(script);
    try {
      const t0 = Date.now();
      await c.waitForLog((l) => l.msg === 'caches synced', 30_000);
      const readyMs = Date.now() - t0;
      await new Promise((r) => setTimeout(r, 1000));
      console.log(`# ${build}: ready in ${readyMs} ms, RSS ${rssMb(c.proc.pid!).toFixed(1)} MB`);
      await createRequest(requester, 'team-a', `via-${build}`, { request: 'echo', params: { text: build } });
      const done = await waitForPhase(requester, 'team-a', `via-${build}`, ['Succeeded', 'Failed', 'Rejected'], 30_000);
      assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
      assert.deepEqual(done.status?.results, { out: build });
    } finally {
      await c.kill('SIGTERM');
    }
  });
}
