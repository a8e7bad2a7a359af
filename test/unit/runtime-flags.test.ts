/**
 * The benchmarks measure the controller as it ships: the Node.js flags of the
 * image's ENTRYPOINT, the kustomize Deployment's and the chart's command, and
 * the benchmark's controller command are one list (bench/controller-process.ts
 * RUNTIME_NODE_FLAGS), and all set MALLOC_ARENA_MAX=2.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { repoRoot } from '../../src/util/repo.js';
import { DEFAULT_CONTROLLER_CMD, RUNTIME_NODE_FLAGS } from '../../bench/controller-process.js';

const ROOT = repoRoot();
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');
const EXPECTED = ['node', ...RUNTIME_NODE_FLAGS, 'dist/bundle/internal-services.mjs'];

test('the image, the Deployment, the chart and the benchmark run the controller with the same Node.js flags', () => {
  const docker = read('Dockerfile');
  const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(docker)?.[1];
  assert.ok(entrypoint, 'the Dockerfile has an exec-form ENTRYPOINT');
  assert.deepEqual(JSON.parse(entrypoint), EXPECTED, 'Dockerfile ENTRYPOINT');
  assert.match(docker, /^ENV .*\bMALLOC_ARENA_MAX=2\b/m, 'the image sets MALLOC_ARENA_MAX=2');

  const manager = parse(read('config/manager/manager.yaml')) as { spec: { template: { spec: { containers: Array<{ command: string[]; env: Array<{ name: string; value?: string }> }> } } } };
  const [c] = manager.spec.template.spec.containers;
  assert.deepEqual(c!.command, EXPECTED, 'config/manager/manager.yaml');
  assert.equal(c!.env.find((e) => e.name === 'MALLOC_ARENA_MAX')?.value, '2');

  // The chart's template is not YAML until rendered; its command line is literal.
  const chart = read('charts/internal-services/templates/deployment.yaml');
  const line = /^\s*command: (\[.*\])$/m.exec(chart)?.[1];
  assert.ok(line, 'the chart has a one-line command');
  assert.deepEqual(parse(line) as string[], EXPECTED, 'charts/internal-services/templates/deployment.yaml');
  assert.match(chart, /name: MALLOC_ARENA_MAX\s+value: "2"/);

  assert.ok(DEFAULT_CONTROLLER_CMD.startsWith(`exec env MALLOC_ARENA_MAX=2 {node} ${RUNTIME_NODE_FLAGS.join(' ')} {repo}/dist/bundle/internal-services.mjs controller `), DEFAULT_CONTROLLER_CMD);
});
