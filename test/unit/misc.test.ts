import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { crdFiles, internalRequestCrd } from '../../src/api/crd.js';
import { renderCrdYaml, repoRoot } from '../../src/api/crd-render.js';
import { apiExport, internalRequestSchema, kcpProviderFiles } from '../../src/api/kcp-export.js';
import { ErrorCodes } from '../../src/errors.js';
import { parseDuration } from '../../src/util/duration.js';
import { WorkQueue } from '../../src/kube/queue.js';
import { parseBindAddress } from '../../src/cli/health.js';
import { compareText } from '../../src/util/compare.js';

test('config/crd/bases is generated from src/api (run npm run gen:crds after changing the API)', () => {
  for (const [file, obj] of Object.entries(crdFiles)) {
    const onDisk = readFileSync(join(repoRoot(), 'config', 'crd', 'bases', file), 'utf8');
    assert.equal(onDisk, renderCrdYaml(obj), `${file} is stale`);
  }
});

test('config/kcp/provider is generated from src/api (run npm run gen:crds after changing the API)', () => {
  for (const [file, obj] of Object.entries(kcpProviderFiles)) {
    const onDisk = readFileSync(join(repoRoot(), 'config', 'kcp', 'provider', file), 'utf8');
    assert.equal(onDisk, renderCrdYaml(obj), `${file} is stale`);
  }
  // One definition: the schema kcp serves is the CRD's, and only InternalRequest is exported.
  const crdVersion = internalRequestCrd.spec.versions[0]!;
  const schema = internalRequestSchema as { metadata: { name: string }; spec: { versions: Array<{ schema: unknown }> } };
  assert.deepEqual(schema.spec.versions[0]!.schema, crdVersion.schema.openAPIV3Schema);
  assert.match(schema.metadata.name, /^h[0-9a-f]{10}\.internalrequests\.appstudio\.redhat\.com$/);
  assert.deepEqual(apiExport.spec.resources.map((r) => `${r.name}.${r.group} ${r.schema}`), [`internalrequests.appstudio.redhat.com ${schema.metadata.name}`]);
});

test('every error code is documented in docs/errors.md', () => {
  const doc = readFileSync(join(repoRoot(), 'docs', 'errors.md'), 'utf8');
  for (const code of Object.keys(ErrorCodes)) assert.ok(doc.includes(`\`${code}\``), `${code} missing from docs/errors.md`);
});

test('Go durations', () => {
  assert.equal(parseDuration('1h30m'), 5_400_000);
  assert.equal(parseDuration('1.5h'), 5_400_000);
  assert.equal(parseDuration('250ms'), 250);
  assert.equal(parseDuration('0'), 0);
  for (const bad of ['', '1', 'h', '1d', '1h 30m', '-1s', '1hh']) assert.equal(parseDuration(bad), undefined, bad);
});

test('bind addresses', () => {
  assert.deepEqual(parseBindAddress('--x', ':8080'), { port: 8080 });
  assert.deepEqual(parseBindAddress('--x', '127.0.0.1:0'), { host: '127.0.0.1', port: 0 });
  assert.deepEqual(parseBindAddress('--x', '[::1]:9'), { host: '::1', port: 9 });
  assert.equal(parseBindAddress('--x', '0'), undefined);
  assert.throws(() => parseBindAddress('--x', '8080'), /not an address/);
  assert.throws(() => parseBindAddress('--x', ':99999'), /not an address/);
});

test('work queue: deduplicated, never two workers on one key, re-queued when added during processing', async () => {
  const q = new WorkQueue();
  q.add('a');
  q.add('a');
  q.add('b');
  assert.equal(q.depth, 2);
  const k1 = await q.get();
  assert.equal(k1, 'a');
  q.add('a'); // while processing: held back
  const k2 = await q.get();
  assert.equal(k2, 'b');
  let third: string | undefined;
  const p = q.get().then((k) => (third = k));
  await new Promise((r) => setImmediate(r));
  assert.equal(third, undefined, 'a is not handed out while a worker holds it');
  q.done('a');
  await p;
  assert.equal(third, 'a');
  q.done('a');
  q.done('b');
  q.shutdown();
  assert.equal(await q.get(), undefined);
});

test('work queue: per-key exponential backoff, reset by forget', () => {
  const q = new WorkQueue({ baseDelayMs: 10, maxDelayMs: 35 });
  assert.deepEqual([q.addRateLimited('k'), q.addRateLimited('k'), q.addRateLimited('k'), q.addRateLimited('k')], [10, 20, 35, 35]);
  q.forget('k');
  assert.equal(q.addRateLimited('k'), 10);
  q.shutdown();
});

test('work queue: tenants take turns; each tenant in arrival order; a late tenant waits one round, not behind a flood', async () => {
  const q = new WorkQueue({ tenantOf: (k) => k.slice(0, k.lastIndexOf('/')) });
  for (let i = 0; i < 1000; i++) q.add(`flood/r${i}`);
  q.add('quiet/only');
  q.add('other/x1');
  q.add('other/x2');
  assert.equal(q.depth, 1003);
  assert.equal(q.tenants, 3);
  const order: string[] = [];
  for (let i = 0; i < 7; i++) {
    const k = (await q.get())!;
    order.push(k);
    q.done(k);
  }
  assert.deepEqual(order, ['flood/r0', 'quiet/only', 'other/x1', 'flood/r1', 'other/x2', 'flood/r2', 'flood/r3']);
  // a tenant arriving now gets its turn after the tenants already waiting: here, right after the next flood key
  q.add('late/y');
  assert.deepEqual([await q.get(), await q.get()], ['flood/r4', 'late/y']);
  assert.equal(q.depth, 995);
  q.shutdown();
});

test('compareText orders by code units, as sort() does, and the controller never sorts by locale', () => {
  // Names, keys and timestamps as the controller sorts them, with the cases
  // where ICU's root collation and code units disagree (case, punctuation).
  const words = ['b', 'B', 'a', 'A', 'a-b', 'a.b', 'a_b', 'a0', 'ab', '', '2026-11-29T05:00:00Z', '2026-11-29T04:59:59Z', 'Z', 'z'];
  assert.deepEqual([...words].sort(compareText), [...words].sort());
  let disagree = 0;
  for (const a of words) for (const b of words) {
    assert.equal(Math.sign(compareText(a, b)), a < b ? -1 : a > b ? 1 : 0);
    if (Math.sign(compareText(a, b)) !== Math.sign(a.localeCompare(b))) disagree++;
  }
  // The cases above are ones on which the two orders differ: the test would
  // not notice a switch back to localeCompare otherwise.
  assert.ok(disagree > 0, 'some pairs order differently by locale');
  const offenders = srcFiles(join(repoRoot(), 'src')).filter((f) => /\.localeCompare\(/.test(readFileSync(f, 'utf8')));
  assert.deepEqual(offenders, [], 'src/ sorts with compareText (src/util/compare.ts), not localeCompare');
});

function srcFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? srcFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}
