/**
 * The demo's pods (src/cli/local-pods.ts): how the samples are made ready for
 * the real node and for the simulated kubelet, and that the values the demo
 * checks real results against are what the samples' scripts compute — the
 * scripts run here with the machine's sh (Tekton's substitutions done by
 * hand: params through the environment, result paths to temporary files).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { catalogFiles } from '../../src/cli/local-samples.js';
import { sample, SAMPLE_PIPELINE } from '../../src/cli/local-files.js';
import { onRealNode, signResults, typedSignResults, withSimulatedSteps } from '../../src/cli/local-pods.js';
import { sampleKind } from '../../src/api/kind-samples.js';
import { parse as parseYaml } from 'yaml';

type Step = { image?: string; imagePullPolicy?: string; script?: string; args?: string[]; env?: Array<{ name: string; value: string }> };
type Spec = { params?: Array<{ name: string }>; results?: Array<{ name: string }>; steps: Step[] };
const pipelineSpec = (p: unknown): Spec => (p as { spec: { tasks: Array<{ taskSpec: Spec }> } }).spec.tasks[0]!.taskSpec;
const taskSpec = (t: unknown): Spec => (t as { spec: Spec }).spec;

/** Runs a step's script with `params` (Tekton's $(params.x) in env values and args), returns its results. */
function runScript(spec: Spec, params: Record<string, string | string[]>): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'local-pods-test-'));
  try {
    const step = spec.steps[0]!;
    const subst = (v: string): string => v.replace(/\$\(params\.([a-z-]+)\)/g, (_, n: string) => String(params[n] ?? ''));
    const env = Object.fromEntries((step.env ?? []).map((e) => [e.name, subst(e.value)]));
    const args = (step.args ?? []).flatMap((a) => {
      const m = /^\$\(params\.([a-z-]+)\[\*\]\)$/.exec(a);
      return m ? ((params[m[1]!] as string[] | undefined) ?? []) : [subst(a)];
    });
    const script = step.script!.replace(/\$\(results\.([a-z-]+)\.path\)/g, (_, n: string) => join(dir, n));
    execFileSync('sh', ['-c', script, 'step', ...args], { env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    return Object.fromEntries((spec.results ?? []).map((r) => [r.name, readFileSync(join(dir, r.name), 'utf8')]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const IMAGE = 'quay.io/example/app@sha256:4b0cbd1c3d2f1e0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a';

test('the sample Pipeline and the catalog Task compute the signature the demo expects', () => {
  assert.deepEqual(runScript(pipelineSpec(sample(SAMPLE_PIPELINE)), { image: IMAGE, 'simulate-failure': 'false' }), signResults(IMAGE));
  const task = parseYaml(catalogFiles()['tasks/sign/sign.yaml']!) as unknown;
  assert.deepEqual(runScript(taskSpec(task), { image: IMAGE }), { signature: signResults(IMAGE).signature });
  assert.throws(() => runScript(pipelineSpec(sample(SAMPLE_PIPELINE)), { image: IMAGE, 'simulate-failure': 'true' }), /status 1|code 1|Command failed/);
});

test('the SigningRequest sample computes the signature and signer the demo expects', () => {
  const p = { image: IMAGE, tags: ['v1.0', 'stable'], keyRef: 'release-key', identity: 'release-bot' };
  const got = runScript(pipelineSpec(sampleKind().pipeline), { image: p.image, tags: p.tags, 'key-ref': p.keyRef, identity: p.identity });
  const want = typedSignResults(p);
  assert.equal(got['signature'], want.signature);
  assert.equal(got['signed-by'], want['signed-by']);
});

test('no sample carries SIMULATED_* env; for the real node every step gets the shell image and is never pulled', () => {
  const samples = [sample(SAMPLE_PIPELINE), sampleKind().pipeline, sampleKind('ticketing').pipeline, parseYaml(catalogFiles()['tasks/sign/sign.yaml']!)] as Array<Record<string, unknown>>;
  for (const s of samples) {
    assert.doesNotMatch(JSON.stringify(s), /SIMULATED_/);
    const spec = s['kind'] === 'Task' ? taskSpec(s) : pipelineSpec(s);
    const ready = onRealNode(s, 'localhost/shell:1');
    for (const step of (s['kind'] === 'Task' ? taskSpec(ready) : pipelineSpec(ready)).steps) {
      assert.equal(step.image, 'localhost/shell:1');
      assert.equal(step.imagePullPolicy, 'Never');
    }
    assert.ok(spec.steps.every((st) => typeof st.script === 'string'), 'script steps');
  }
});

test('for the simulated kubelet: results derived from the string params, a failure switch, nothing for array params', () => {
  const env = (s: Spec): Record<string, string> => Object.fromEntries((s.steps.at(-1)!.env ?? []).map((e) => [e.name, e.value]));
  const plain = env(pipelineSpec(withSimulatedSteps(sample(SAMPLE_PIPELINE))));
  assert.equal(plain['SIMULATED_RESULT_signature'], 'signature:{"image":"$(params.image)"}');
  assert.equal(plain['SIMULATED_FAIL'], '$(params.simulate-failure)');
  const typed = env(pipelineSpec(withSimulatedSteps(sampleKind().pipeline as unknown as Record<string, unknown>)));
  assert.equal(typed['SIMULATED_RESULT_signed-by'], 'signed-by:{"image":"$(params.image)","key-ref":"$(params.key-ref)","identity":"$(params.identity)"}');
  const task = env(taskSpec(withSimulatedSteps(parseYaml(catalogFiles()['tasks/sign/sign.yaml']!) as Record<string, unknown>)));
  assert.equal(task['SIMULATED_RESULT_signature'], 'signature:{"image":"$(params.image)"}');
});
