/**
 * The benchmarks measure the controller as it ships: the Node.js flags of the
 * image's ENTRYPOINT, the kustomize Deployment's and the chart's command, and
 * the benchmark's controller command are one list (bench/controller-process.ts
 * RUNTIME_NODE_FLAGS), and all set MALLOC_ARENA_MAX=2.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { repoRoot } from '../../src/util/repo.js';
import { COMPILE_CACHE_DIR, DEFAULT_CONTROLLER_CMD, primeCompileCache, RUNTIME_NODE_FLAGS } from '../../bench/controller-process.js';

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

  assert.ok(DEFAULT_CONTROLLER_CMD.startsWith(`exec env MALLOC_ARENA_MAX=2 NODE_COMPILE_CACHE=${COMPILE_CACHE_DIR} {node} ${RUNTIME_NODE_FLAGS.join(' ')} {repo}/dist/bundle/internal-services.mjs controller `), DEFAULT_CONTROLLER_CMD);

  // The image's compile cache is made with the ENTRYPOINT's flags, for the bundle the ENTRYPOINT runs.
  const cacheDir = /^ENV NODE_COMPILE_CACHE=(\S+)$/m.exec(docker)?.[1];
  assert.ok(cacheDir?.startsWith('/app/'), 'the image sets NODE_COMPILE_CACHE under /app');
  assert.match(docker, new RegExp(`^RUN ${EXPECTED.join(' ').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} --help >/dev/null`, 'm'), 'the image primes its compile cache with the ENTRYPOINT\'s command');
  assert.match(docker, new RegExp(`chmod -R a\\+rX,go-w ${cacheDir!.replace(/\./g, '\\.')}`), 'the cache is readable by the image\'s user');
  // Node.js keeps a cache per user id: it is made as the user the image runs as.
  const lines = docker.split('\n');
  const priming = lines.findIndex((l) => l.startsWith(`RUN ${EXPECTED.join(' ')} --help`));
  const users = lines.map((l, i) => [i, /^USER (\S+)$/.exec(l)?.[1]] as const).filter(([, u]) => u !== undefined);
  const userAt = (line: number) => users.filter(([i]) => i < line).at(-1)?.[1];
  assert.equal(userAt(priming), users.at(-1)?.[1], 'the cache is made as the image\'s USER');
  assert.equal(users.at(-1)?.[1], '1000:1000');
});

test('the benchmark makes its controllers\' compile cache as the image build does, once', () => {
  const dir = mkdtempSync(join(tmpdir(), 'compile-cache-test-'));
  try {
    const vars = { node: process.execPath, repo: ROOT };
    assert.equal(primeCompileCache('exec env MALLOC_ARENA_MAX=2 node x.mjs controller', vars), undefined, 'a command without the variable: nothing');
    const cache = join(dir, 'with space', 'cache');
    const cmd = `exec env MALLOC_ARENA_MAX=2 NODE_COMPILE_CACHE='${cache}' node x.mjs controller`;
    assert.equal(primeCompileCache(cmd, vars), cache, 'a quoted directory is read whole');
    // Node.js 22.1 and later write it; older lines ignore the variable.
    const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
    const writes = major > 22 || (major === 22 && minor >= 1);
    assert.equal(existsSync(cache), writes, `Node.js ${process.version} ${writes ? 'writes' : 'does not write'} the cache`);
    if (writes) {
      const entries = readdirSync(cache, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
      assert.ok(entries.length >= 1, 'the bundle\'s entry is there');
      // Once there, it is not made again.
      const before = statSync(join(entries[0]!.parentPath, entries[0]!.name)).mtimeMs;
      primeCompileCache(cmd, vars);
      assert.equal(statSync(join(entries[0]!.parentPath, entries[0]!.name)).mtimeMs, before);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
