/**
 * Ports for the harness's servers: handed out once per process, below the
 * kernel's ephemeral range, and reserved across the machine (one file per
 * port holding the owner's PID) so that test files running side by side
 * never share one.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Reserves `count` distinct free TCP ports for the harness' servers. They
 * are taken below the kernel's ephemeral range (ip_local_port_range), where
 * the kernel never hands a port to an outgoing connection: between this
 * call and the server's bind, the clients of the servers already running
 * (hundreds of connections during a test) could otherwise take one (seen:
 * a kcp shard's etcd peer port, "bind: address already in use"). All
 * listeners are held open until every port is known, so the ports differ;
 * another harness picking the same port in that window stays possible but
 * is 1 in ~20,000 per port.
 */
export async function freePorts(count: number): Promise<number[]> {
  return freePortsBelow(count, ephemeralLow());
}

/** The lowest port the kernel gives outgoing connections (32768 where unknown). */
export function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 12000 ? Math.min(low, 32768) : 32768;
  } catch {
    return 32768;
  }
}

/**
 * `count` distinct ports in [from, limit), each free on all interfaces (for
 * programs that listen on ":PORT"), picked at random. The default limit
 * also suits programs that cannot take a port above 32767 (knative reads
 * METRICS_PROMETHEUS_PORT as a signed 16-bit number).
 *
 * A port is free only until its program listens on it. So a port handed
 * out is never handed out again: not by this process (a test file or a
 * local environment uses a few hundred of the ~22,000, and one given back
 * to the kernel may still be on its way to its program; two environments
 * may start at once, e.g. the internal cluster beside a sharded kcp), and
 * not by any other process of the machine while this one lives (test files
 * that run at the same time): each port is reserved by a file in
 * PORTS_DIR holding the reserving process's PID, removed when it exits, and
 * taken over once that process is gone (killed before its exit handler).
 */
const handedOut = new Set<number>();

/** Where the machine's harnesses reserve the ports they hand out (one file per port). */
export const PORTS_DIR = join(tmpdir(), 'internal-services-ports');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists, under another user.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The files of `dir` that this process wrote, removed when it exits. */
const reservations = new Set<string>();
function removeReservations(): void {
  for (const file of reservations) {
    try {
      if (readFileSync(file, 'utf8').trim() === String(process.pid)) rmSync(file, { force: true });
    } catch {
      // Gone already.
    }
  }
}

/**
 * Removes the reservations of `dir` whose process is gone (killed before its
 * exit handler ran: a signal, a test runner's timeout), so that the directory
 * does not grow run after run. Returns how many it removed.
 */
export function sweepStaleReservations(dir = PORTS_DIR): number {
  let removed = 0;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const file = join(dir, name);
    if (heldByLive(file) !== false) continue;
    rmSync(file, { force: true });
    removed++;
  }
  return removed;
}

/**
 * Whether a reservation file names this process or another live one: false
 * when its process is gone (or it names none), undefined when the file is
 * gone itself.
 */
function heldByLive(file: string): boolean | undefined {
  let holder: number;
  try {
    holder = Number(readFileSync(file, 'utf8').trim());
  } catch {
    return undefined;
  }
  return Number.isInteger(holder) && holder > 0 && (holder === process.pid || alive(holder));
}

/** The directories this process has swept once (sweepStaleReservations). */
const swept = new Set<string>();

/**
 * Reserves `port` for this process across the machine: false while another
 * live process holds it. Where the directory cannot be written, only this
 * process's own set guards it (true). The first reservation of a process in
 * a directory removes the stale ones there first.
 */
export function reservePort(port: number, dir = PORTS_DIR): boolean {
  if (!swept.has(dir)) {
    swept.add(dir);
    sweepStaleReservations(dir);
  }
  const file = join(dir, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      mkdirSync(dir, { recursive: true });
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      if (!reservations.size) process.once('exit', removeReservations);
      reservations.add(file);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') return true;
      const held = heldByLive(file);
      if (held) return false;
      // Its process is gone, the reservation is stale (or it was removed meanwhile): try again.
      if (held === false) rmSync(file, { force: true });
    }
  }
  return false;
}

export async function freePortsBelow(count: number, limit = 32768, from = 10000): Promise<number[]> {
  const held: import('node:net').Server[] = [];
  const ports: number[] = [];
  try {
    for (let attempts = 0; ports.length < count; attempts++) {
      if (attempts > 1000) throw new Error(`no ${count} free ports found between ${from} and ${limit}`);
      const candidate = from + Math.floor(Math.random() * (limit - from));
      if (ports.includes(candidate) || handedOut.has(candidate)) continue;
      const srv = createServer();
      const ok = await new Promise<boolean>((resolve) => {
        srv.once('error', () => resolve(false));
        srv.listen(candidate, () => resolve(true));
      });
      if (ok) held.push(srv);
      if (ok && reservePort(candidate)) ports.push(candidate);
    }
    for (const p of ports) handedOut.add(p);
    return ports;
  } finally {
    await Promise.all(held.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }
}
