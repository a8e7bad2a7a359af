/** Reading a ResolutionRequest as a value (src/tekton/resolve.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { outcomeOfResolution, resolutionRequest, type ResolutionRequest } from '../../src/tekton/resolve.js';

const created = '2026-11-23T10:00:00Z';
const at = (s: number) => new Date(Date.parse(created) + s * 1000);
const rr = (status?: ResolutionRequest['status']): ResolutionRequest => ({
  ...resolutionRequest('ns', 'r1', 'git', [{ name: 'url', value: 'git://h/r.git' }]),
  metadata: { name: 'r1', namespace: 'ns', creationTimestamp: created, labels: { 'resolution.tekton.dev/type': 'git' } },
  ...(status ? { status } : {}),
});

test('the ResolutionRequest carries the resolver as the label Tekton selects on, and the params', () => {
  const r = resolutionRequest('ns', 'r1', 'git', [{ name: 'url', value: 'u' }, { name: 'revision', value: 'main' }], { a: 'b' });
  assert.equal(r.metadata?.labels?.['resolution.tekton.dev/type'], 'git');
  assert.equal(r.metadata?.labels?.['a'], 'b');
  assert.deepEqual(r.spec?.params, [{ name: 'url', value: 'u' }, { name: 'revision', value: 'main' }]);
});

test('resolved: the decoded file and where it came from', () => {
  const o = outcomeOfResolution(
    rr({ data: Buffer.from('kind: Pipeline\n').toString('base64'), refSource: { uri: 'git+git://h/r.git', digest: { sha1: 'abc' }, entryPoint: 'p.yaml' }, conditions: [{ type: 'Succeeded', status: 'True' }] }),
    at(1),
    30_000,
  );
  assert.deepEqual(o, { state: 'resolved', content: Buffer.from('kind: Pipeline\n'), refSource: { uri: 'git+git://h/r.git', digest: { sha1: 'abc' }, entryPoint: 'p.yaml' } }, 'the bytes as sent: decoding them is one-reading.ts\'s');
  // Bytes that are not UTF-8 stay as they are (not replaced by U+FFFD before anything reads them).
  const raw = outcomeOfResolution(rr({ data: Buffer.from([0x6b, 0x3a, 0x20, 0xff, 0x0a]).toString('base64'), conditions: [{ type: 'Succeeded', status: 'True' }] }), at(1), 30_000);
  assert.deepEqual(raw.state === 'resolved' && [...raw.content], [0x6b, 0x3a, 0x20, 0xff, 0x0a]);
});

test("failed: the resolver's reason and message", () => {
  const o = outcomeOfResolution(rr({ conditions: [{ type: 'Succeeded', status: 'False', reason: 'ResolutionFailed', message: 'error opening file "x"' }] }), at(1), 30_000);
  assert.deepEqual(o, { state: 'failed', reason: 'ResolutionFailed', message: 'error opening file "x"' });
});

test('no answer: pending until our own deadline, then failed saying so', () => {
  assert.deepEqual(outcomeOfResolution(rr(), at(10), 30_000), { state: 'pending', waitedMs: 10_000 });
  const late = outcomeOfResolution(rr({ conditions: [{ type: 'Succeeded', status: 'Unknown' }] }), at(31), 30_000);
  assert.equal(late.state, 'failed');
  assert.ok(late.state === 'failed');
  assert.equal(late.reason, 'ResolutionTimedOut');
  assert.match(late.message, /the "git" resolver did not answer within 30 s \(ResolutionRequest ns\/r1\)/);
});
