/**
 * src/util/node-support.ts: which Node.js lines run this project, and the
 * warning on a line past its end of life (printed by `internal-services` on
 * a terminal or with INTERNAL_SERVICES_NODE_WARNING=on, logged by the
 * controller at start-up, printed by `npm test`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { IMAGE_NODE_MAJOR, NODE_END_OF_LIFE, nodeSupport } from '../../src/util/node-support.js';
import { repoRoot } from '../../src/util/repo.js';

const day = (d: string): Date => new Date(`${d}T12:00:00Z`);

test('node-support: an LTS line is supported until its end of life, then warned about', () => {
  assert.deepEqual(nodeSupport('v20.20.2', day('2026-04-29')), { major: 20, status: 'supported' });
  const ended = nodeSupport('v20.20.2', day('2026-04-30'));
  assert.equal(ended.status, 'ended');
  assert.match(ended.warning!, /^Node\.js 20 reached its end of life on 2026-04-30 and gets no security fixes: this still runs on it \(engines >= 20\.18\), but run a supported line \(the image runs Node\.js 26\)$/);
  assert.equal(nodeSupport('v22.23.3', day('2026-11-29')).status, 'supported');
  assert.equal(nodeSupport('v24.22.3', day('2026-11-29')).status, 'supported');
  assert.equal(nodeSupport('v26.12.1', day('2026-11-29')).status, 'supported');
  assert.equal(nodeSupport('v22.23.3', day('2027-05-01')).status, 'ended');
});

test('node-support: older than engines, odd lines and newer even lines', () => {
  for (const v of ['v18.20.0', 'v20.17.0', 'garbage']) {
    const s = nodeSupport(v, day('2026-01-01'));
    assert.equal(s.status, 'old', v);
    assert.match(s.warning!, /older than this project supports \(>= 20\.18/);
  }
  assert.equal(nodeSupport('v20.18.0', day('2026-01-01')).status, 'supported');
  const odd = nodeSupport('v25.1.0', day('2026-01-01'));
  assert.equal(odd.status, 'current');
  assert.match(odd.warning!, /not a long-term-support line/);
  assert.deepEqual(nodeSupport('v28.0.0', day('2028-06-01')), { major: 28, status: 'current' }, 'a newer even line: no warning');
});

test('node-support: the image runs the line the table and the Dockerfile name', () => {
  assert.ok(NODE_END_OF_LIFE[IMAGE_NODE_MAJOR], 'the image\'s line has an end of life in the table');
  const dockerfile = readFileSync(join(repoRoot(), 'Dockerfile'), 'utf8');
  assert.match(dockerfile, new RegExp(`^ARG BASE_IMAGE=docker\\.io/library/node:${IMAGE_NODE_MAJOR}-`, 'm'));
  const versions = readFileSync(join(repoRoot(), 'hack/image/versions.env'), 'utf8');
  assert.match(versions, new RegExp(`^NODE_VERSION=${IMAGE_NODE_MAJOR}\\.`, 'm'), 'the CI stand-in base has the same line');
});

test('node-support: internal-services prints the warning when asked, and only then', () => {
  const main = join(repoRoot(), 'dist', 'bundle', 'internal-services.mjs');
  const expected = nodeSupport(process.version).warning;
  const on = spawnSync(process.execPath, [main, '--help'], { encoding: 'utf8', env: { ...process.env, INTERNAL_SERVICES_NODE_WARNING: 'on' } });
  assert.equal(on.status, 0, on.stderr);
  assert.equal(on.stderr, expected ? `warning: ${expected}\n` : '', `on ${process.version}`);
  const piped = spawnSync(process.execPath, [main, '--help'], { encoding: 'utf8', env: { ...process.env, INTERNAL_SERVICES_NODE_WARNING: '' } });
  assert.equal(piped.stderr, '', 'stderr that is not a terminal gets no warning unless asked');
  assert.match(piped.stdout, /^Usage: internal-services/m);
});

test('node-support: DEP0169 (url.parse, from client-node 1.x\'s node-fetch) is not printed; this project never calls url.parse', () => {
  const src = join(repoRoot(), 'src');
  const files = (dir: string): string[] => readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? files(join(dir, n)) : n.endsWith('.ts') ? [join(dir, n)] : []));
  const callers = files(src).filter((f) => !f.endsWith('quiet-url-parse.ts')).filter((f) => /\burl\.parse\(|\bparse as urlParse\b|from 'node:url'.*\bparse\b/.test(readFileSync(f, 'utf8')));
  assert.deepEqual(callers, [], 'src/ calls url.parse: the quiet-url-parse filter would hide its warning');
  // An API call through client-node 1.x (to a closed port): on Node.js 24 and later this is where
  // node-fetch calls url.parse and Node.js warns; on 20 and 22 there is no warning to drop.
  const dir = join(repoRoot(), 'dist', 'bundle');
  const kc = join(repoRoot(), 'dist', 'node-support-test-kubeconfig.yaml');
  writeFileSync(kc, 'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:9"}}]\nusers: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u, namespace: default}}]\ncurrent-context: c\n');
  try {
    const r = spawnSync(process.execPath, [join(dir, 'kubectl-internalrequest.mjs'), 'get', 'x', '--kubeconfig', kc], { encoding: 'utf8', env: { ...process.env, INTERNAL_SERVICES_NODE_WARNING: 'off' } });
    assert.match(r.stderr, /cannot reach cluster "c"/, 'the call was made');
    assert.doesNotMatch(r.stderr, /DEP0169|url\.parse/, `on ${process.version}`);
  } finally {
    rmSync(kc, { force: true });
  }
});
