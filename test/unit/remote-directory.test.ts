/**
 * Remotes from a directory of kubeconfig files (src/remotes/directory.ts),
 * on the real filesystem, laid out and updated as the kubelet does for a
 * mounted Secret: the files are symlinks into `..data`, itself a symlink to
 * a timestamped directory that an update replaces in one rename. The sink
 * records what the provider asks of the controller.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { readKubeconfigDir, RemoteDirectory, remoteNameOfFile } from '../../src/remotes/directory.js';
import type { RemoteSink } from '../../src/remotes/provider.js';
import type { RemoteSpec } from '../../src/remotes/remote.js';
import { kubeletVolume } from '../kubelet-volume.js';

const kubeconfig = (server: string, token = 't') => `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "${server}" } }]
users: [{ name: u, user: { token: "${token}" } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`;

class RecordingSink implements RemoteSink {
  readonly events: string[] = [];
  readonly served = new Map<string, RemoteSpec>();
  addRemote(spec: RemoteSpec): unknown {
    this.events.push(`${this.served.has(spec.name) ? 'replace' : 'add'} ${spec.name} ${spec.cluster.server}`);
    this.served.set(spec.name, spec);
    return undefined;
  }
  removeRemote(name: string): Promise<boolean> {
    this.events.push(`remove ${name}`);
    return Promise.resolve(this.served.delete(name));
  }
}

const log = pino({ level: 'silent' });

test('file names: the remote is the file name, less a .kubeconfig suffix; other names say what to write', () => {
  assert.deepEqual(remoteNameOfFile('prod'), { name: 'prod' });
  assert.deepEqual(remoteNameOfFile('prod.kubeconfig'), { name: 'prod' });
  for (const bad of ['Prod', 'prod.yaml', 'a_b', 'x'.repeat(64)]) {
    const r = remoteNameOfFile(bad);
    assert.ok('error' in r, bad);
    assert.match(r.error, /is not a DNS label .* name the file after the remote, e\.g\. prod or prod\.kubeconfig/);
  }
});

test('a directory as the kubelet mounts it: files added, changed, broken, removed; one remote per file, the kubelet\'s bookkeeping skipped', async () => {
  const k = kubeletVolume('remote-dir-');
  k.update({ prod: kubeconfig('https://prod.example:6443'), 'staging.kubeconfig': kubeconfig('https://staging.example:6443') });
  assert.deepEqual((await readKubeconfigDir(k.dir)).map((e) => [e.file, e.name, e.ok]), [['prod', 'prod', true], ['staging.kubeconfig', 'staging', true]]);
  const sink = new RecordingSink();
  const p = new RemoteDirectory(sink, { dir: k.dir, intervalMs: 3600_000, mode: { mode: 'watch' }, log, reserved: new Set(['default']) });
  await p.start();
  try {
    assert.deepEqual(sink.events.sort(), ['add prod https://prod.example:6443', 'add staging https://staging.example:6443']);
    assert.equal(sink.served.get('prod')?.origin, `file ${join(k.dir, 'prod')}`);
    assert.deepEqual(p.readiness(), [{ name: 'remote-kubeconfig-dir', ok: true, required: false }]);

    // Read again, unchanged: nothing asked.
    sink.events.length = 0;
    await p.scanNow();
    assert.deepEqual(sink.events, []);

    // A rotated token: that remote's connection is replaced, the other left alone.
    k.update({ prod: kubeconfig('https://prod.example:6443', 'rotated'), 'staging.kubeconfig': kubeconfig('https://staging.example:6443') });
    await p.scanNow();
    assert.deepEqual(sink.events, ['replace prod https://prod.example:6443']);

    // Broken: reported, the remote keeps its last good connection.
    sink.events.length = 0;
    k.update({ prod: 'not: [a kubeconfig', 'staging.kubeconfig': kubeconfig('https://staging.example:6443'), default: kubeconfig('https://taken.example'), 'Bad_Name': kubeconfig('https://x.example') });
    await p.scanNow();
    assert.deepEqual(sink.events, []);
    const checks = p.readiness();
    assert.deepEqual(checks.map((c) => [c.name, c.ok]), [['remote-kubeconfig-dir', true], ['remote-kubeconfig-dir/Bad_Name', false], ['remote-kubeconfig-dir/default', false], ['remote-kubeconfig-dir/prod', false]]);
    assert.match(checks.find((c) => c.name.endsWith('/prod'))!.detail!, /^file "prod" is not a kubeconfig/);
    assert.match(checks.find((c) => c.name.endsWith('/default'))!.detail!, /remote name "default" is taken by --remote-kubeconfig/);
    assert.ok(sink.served.has('prod'), 'still served');

    // Removed: that remote is no longer served; a new one is.
    k.update({ 'staging.kubeconfig': kubeconfig('https://staging.example:6443'), dev: kubeconfig('https://dev.example:6443') });
    await p.scanNow();
    assert.deepEqual(sink.events.sort(), ['add dev https://dev.example:6443', 'remove prod']);
    assert.deepEqual([...sink.served.keys()].sort(), ['dev', 'staging']);

    // Two files for one remote: the first by name serves it, the other is reported.
    sink.events.length = 0;
    k.update({ 'staging.kubeconfig': kubeconfig('https://staging.example:6443'), staging: kubeconfig('https://other.example'), dev: kubeconfig('https://dev.example:6443') });
    await p.scanNow();
    assert.deepEqual(sink.events, ['replace staging https://other.example']);
    assert.match(p.readiness().find((c) => c.name.endsWith('/staging.kubeconfig'))!.detail!, /remote "staging" is served from file "staging"; this one is not used/);

    // The directory itself gone: reported; what it served keeps running.
    sink.events.length = 0;
    rmSync(k.dir, { recursive: true });
    await p.scanNow();
    assert.deepEqual(sink.events, []);
    assert.match(p.readiness()[0]!.detail ?? '', /cannot be read: .*ENOENT.*; the remotes it served keep their connections/);
  } finally {
    await p.stop();
    k.remove();
  }
});

test('the directory is read again on its own every interval', async () => {
  const k = kubeletVolume('remote-dir-');
  k.update({ prod: kubeconfig('https://prod.example:6443') });
  const sink = new RecordingSink();
  const p = new RemoteDirectory(sink, { dir: k.dir, intervalMs: 50, mode: { mode: 'poll', pollIntervalMs: 5000 }, log });
  await p.start();
  try {
    assert.equal(sink.served.get('prod')?.mode?.mode, 'poll');
    k.update({ dev: kubeconfig('https://dev.example:6443') });
    const until = Date.now() + 5000;
    while (sink.served.has('prod') && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual([...sink.served.keys()], ['dev']);
  } finally {
    await p.stop();
    k.remove();
  }
});
