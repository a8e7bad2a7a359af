/**
 * The harness's process helpers that decide whether a test run can finish:
 * ports are handed out once per process, and a joint start that fails
 * leaves nothing running (a started environment left unreferenced keeps
 * its test file's process alive for ever: the cold CI of 2026-11-29 hung
 * for 16 minutes on one).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { freePorts, startTogether } from '../../src/localenv/real/processes.js';

test('freePorts never hands out a port twice in one process, and each one is free when handed out', async () => {
  const seen = new Set<number>();
  for (let i = 0; i < 40; i++) {
    for (const p of await freePorts(25)) {
      assert.ok(!seen.has(p), `port ${p} handed out twice`);
      seen.add(p);
    }
  }
  assert.equal(seen.size, 1000);
  // Free: each can be listened on (a sample, to keep the test short).
  for (const p of [...seen].slice(0, 20)) {
    const srv = createServer();
    await new Promise<void>((resolve, reject) => srv.once('error', reject).listen(p, '127.0.0.1', () => resolve()));
    await new Promise<void>((resolve) => srv.close(() => resolve()));
  }
});

test('startTogether: both started; one failing stops the other and throws its error; both failing throws the first', async () => {
  const started = (name: string, log: string[]) => Promise.resolve({ name, stop: async () => void log.push(`stopped ${name}`) });
  const failing = (msg: string, ms = 0) => new Promise<never>((_, reject) => setTimeout(() => reject(new Error(msg)), ms));
  const log: string[] = [];
  const [a, b] = await startTogether(started('env', log), started('kcp', log));
  assert.deepEqual([a.name, b.name, log], ['env', 'kcp', []]);
  // The kcp fails first, the environment starts after: it is stopped, not left running.
  const slowEnv = new Promise<{ name: string; stop: () => Promise<void> }>((resolve) => setTimeout(() => resolve({ name: 'env', stop: async () => void log.push('stopped env') }), 30));
  await assert.rejects(startTogether(slowEnv, failing('cache-server exited')), /cache-server exited/);
  assert.deepEqual(log, ['stopped env']);
  log.length = 0;
  await assert.rejects(startTogether(failing('etcd did not start'), started('kcp', log)), /etcd did not start/);
  assert.deepEqual(log, ['stopped kcp']);
  log.length = 0;
  await assert.rejects(startTogether(failing('first', 10), failing('second')), /first/);
  // A stop that fails does not hide the start's error.
  const badStop = Promise.resolve({ stop: () => Promise.reject(new Error('stop failed')) });
  await assert.rejects(startTogether(badStop, failing('kcp failed')), /kcp failed/);
  assert.deepEqual(log, []);
});
