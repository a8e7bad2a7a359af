/**
 * The harness's process helpers that decide whether a test run can finish:
 * ports are handed out once per process, and a joint start that fails
 * leaves nothing running (a started environment left unreferenced keeps
 * its test file's process alive for ever: the cold CI of 2026-11-29 hung
 * for 16 minutes on one).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { freePorts, PORTS_DIR, reservePort, startTogether, sweepStaleReservations } from '../../src/localenv/real/processes.js';

const processesModule = fileURLToPath(new URL('../../src/localenv/real/processes.js', import.meta.url));

/** A second harness process: it takes `n` ports, prints them, and lives until killed (or told to exit on stdin). */
async function otherHarness(n: number) {
  const child = spawn(
    process.execPath,
    ['--input-type=module', '-e', `const { freePorts } = await import(${JSON.stringify(processesModule)}); console.log(JSON.stringify(await freePorts(${n}))); process.stdin.on('data', () => process.exit(0));`],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const first = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the other harness exited (${code}) before printing its ports`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, ports: JSON.parse(first) as number[], exited };
}

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

test('a port another live harness process holds is not handed out here; its reservations go when it exits, and are taken over when it was killed', async () => {
  const other = await otherHarness(400);
  try {
    assert.equal(new Set(other.ports).size, 400);
    for (const p of other.ports) assert.equal(readFileSync(join(PORTS_DIR, String(p)), 'utf8'), String(other.child.pid), `port ${p} reserved by the other process`);
    // Neither freePorts here nor a direct reservation gets one of them.
    const theirs = new Set(other.ports);
    let mine = 0;
    for (let i = 0; i < 20; i++) {
      for (const p of await freePorts(50)) {
        assert.ok(!theirs.has(p), `port ${p} handed out by both processes`);
        mine++;
      }
    }
    assert.equal(mine, 1000);
    let refused = 0;
    for (const p of other.ports.slice(0, 50)) if (!reservePort(p)) refused++;
    assert.equal(refused, 50);
  } finally {
    other.child.kill('SIGKILL');
    await other.exited;
  }
  // Killed: its files stay, but the ports can be reserved here now.
  const stale = other.ports.filter((p) => existsSync(join(PORTS_DIR, String(p))));
  assert.ok(stale.length > 300, `a killed process leaves its reservations (${stale.length})`);
  const dir = mkdtempSync(join(tmpdir(), 'ports-test-'));
  try {
    writeFileSync(join(dir, '12345'), String(other.child.pid));
    assert.equal(reservePort(12345, dir), true, 'a dead process\'s reservation is taken over');
    assert.equal(readFileSync(join(dir, '12345'), 'utf8'), String(process.pid));
    assert.equal(reservePort(12345, dir), false, 'not twice');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // The stale ones are swept: a dead process's go, a live one's and other files stay.
  const sweep = mkdtempSync(join(tmpdir(), 'ports-test-'));
  try {
    for (const p of [20001, 20002, 20003]) writeFileSync(join(sweep, String(p)), String(other.child.pid));
    writeFileSync(join(sweep, '20004'), String(process.pid));
    writeFileSync(join(sweep, '20005'), 'not a pid');
    writeFileSync(join(sweep, 'README'), String(other.child.pid));
    assert.equal(sweepStaleReservations(sweep), 4);
    assert.deepEqual(readdirSync(sweep).sort(), ['20004', 'README']);
    assert.equal(sweepStaleReservations(sweep), 0);
    // A process's first reservation in a directory sweeps it.
    writeFileSync(join(sweep, '20006'), String(other.child.pid));
    assert.equal(reservePort(20007, sweep), true);
    assert.deepEqual(readdirSync(sweep).sort(), ['20004', '20007', 'README']);
  } finally {
    rmSync(sweep, { recursive: true, force: true });
  }
  // One that exits removes its own reservations.
  const polite = await otherHarness(30);
  polite.child.stdin!.write('bye\n');
  await polite.exited;
  assert.deepEqual(polite.ports.filter((p) => existsSync(join(PORTS_DIR, String(p)))), []);
});
