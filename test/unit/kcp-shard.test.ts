/**
 * The pure parts of the kcp provider's shards (src/remotes/kcp-shard.ts) and
 * of the sharded kcp harness: when a binding counts as ready, a shard's name
 * in metrics and logs, and which shard kcp recorded for a workspace.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bindingReady, shardName } from '../../src/remotes/kcp-shard.js';
import { shardNameHash } from '../../src/localenv/real/kcp-sharded.js';

test('a binding is ready when kcp says Bound, its Ready condition (if any) is True, and it is not being deleted', () => {
  const cases: Array<[string, Parameters<typeof bindingReady>[0], boolean]> = [
    ['bound, no conditions yet', { metadata: { name: 'x' }, status: { phase: 'Bound' } }, true],
    ['bound and Ready', { metadata: { name: 'x' }, status: { phase: 'Bound', conditions: [{ type: 'Ready', status: 'True' }] } }, true],
    ['bound but Ready False (e.g. a schema went missing)', { metadata: { name: 'x' }, status: { phase: 'Bound', conditions: [{ type: 'Ready', status: 'False' }] } }, false],
    ['still binding', { metadata: { name: 'x' }, status: { phase: 'Binding' } }, false],
    ['no status yet', { metadata: { name: 'x' } }, false],
    ['being deleted (kcp deletes its objects first)', { metadata: { name: 'x', deletionTimestamp: '2026-11-26T00:00:00Z' }, status: { phase: 'Bound' } }, false],
  ];
  for (const [what, b, want] of cases) assert.equal(bindingReady(b), want, what);
});

test('a shard is named by its virtual workspace URL\'s host and port: as many label values as the kcp has shards', () => {
  assert.equal(shardName('https://10.0.0.7:6443/services/apiexport/abc/appstudio.redhat.com'), '10.0.0.7:6443');
  assert.equal(shardName('https://shard-1.kcp.example.com/services/apiexport/abc/x'), 'shard-1.kcp.example.com');
  // Two exports' URLs on one shard are one shard.
  assert.equal(shardName('https://h:1/services/apiexport/a/x'), shardName('https://h:1/services/apiexport/b/y'));
  assert.equal(shardName('not a url'), 'not a url');
});

test('the shard kcp scheduled a workspace on: the first 8 base-36 digits of SHA-224 of its name, as kcp writes it', () => {
  // "1pfxsevk" is the value kcp's own scheduling tests give the root shard.
  assert.equal(shardNameHash('root'), '1pfxsevk');
  assert.notEqual(shardNameHash('shard-1'), shardNameHash('root'));
  assert.match(shardNameHash('shard-1'), /^[0-9a-z]{8}$/);
});
