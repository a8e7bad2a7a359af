/**
 * Child-process plumbing for the test control plane: spawning with output
 * captured to a log file, stopping with a grace period, and making sure
 * nothing outlives the Node process that started it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readSync, fstatSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// The harness's ports (ports.ts), from here as before.
export { ephemeralLow, freePorts, freePortsBelow, PORTS_DIR, reservePort, sweepStaleReservations } from './ports.js';

/** Every child this module started that has not exited yet (any environment). */
const liveChildren = new Set<ChildProcess>();
/** Temporary directories to delete if the process exits without stopping its environments. */
const dirsToRemoveOnExit = new Set<string>();
let exitHookInstalled = false;

/** Registers (or, with remove=false, unregisters) a directory to delete on process exit. */
export function removeOnExit(dir: string, remove = true): void {
  installExitHook();
  if (remove) dirsToRemoveOnExit.add(dir);
  else dirsToRemoveOnExit.delete(dir);
}

/** At teardown: the environment's directory removed (and no longer on the exit list), or kept and said so. */
export function releaseDir(dir: string, keep: boolean, log: (line: string) => void, what: string): void {
  if (keep) {
    log(`${what}: kept ${dir}`);
    return;
  }
  rmSync(dir, { recursive: true, force: true });
  removeOnExit(dir, false);
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // 'exit' listeners must be synchronous; a SIGKILL is the only thing we can
  // still do here. Covers normal exit and uncaught exceptions; death by a
  // signal is covered by the watchdog (see startWatchdog).
  process.on('exit', () => {
    for (const child of liveChildren) {
      try {
        child.kill('SIGKILL');
      } catch {
        // best effort
      }
    }
    for (const dir of dirsToRemoveOnExit) {
      try {
        // Retries cover files still being written by a child that is dying.
        rmSync(dir, { recursive: true, force: true, maxRetries: 3, retryDelay: 50 });
      } catch {
        // best effort
      }
    }
  });
}

/** Returns the last `maxLines` lines (at most ~16 KiB) of a file, or '' if unreadable. */
export function tailFile(path: string, maxLines = 40): string {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const size = fstatSync(fd).size;
    const len = Math.min(size, 16 * 1024);
    const buf = Buffer.alloc(len);
    readSync(fd, buf, 0, len, size - len);
    const lines = buf.toString('utf8').split('\n');
    if (lines.at(-1) === '') lines.pop();
    return lines.slice(-maxLines).join('\n');
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * One long-running binary (etcd, kube-apiserver) that can be started,
 * stopped and started again with identical arguments. Its stdout and stderr
 * are appended to `logPath` (file descriptors handed straight to the child, so
 * no output is lost or buffered in Node even if the event loop is busy).
 */
export class ManagedProcess {
  private child: ChildProcess | undefined;
  private exitPromise: Promise<void> | undefined;
  private exitDescription: string | undefined;

  constructor(
    readonly name: string,
    readonly command: string,
    readonly args: readonly string[],
    readonly logPath: string,
    private readonly onChange: () => void = () => {},
    /** The child's environment (default: this process' own). */
    private readonly env?: NodeJS.ProcessEnv,
  ) {}

  get running(): boolean {
    return this.child !== undefined && this.exitDescription === undefined;
  }

  get pid(): number | undefined {
    return this.running ? this.child?.pid : undefined;
  }

  /** How the last run ended ("exit code 1", "signal SIGKILL"), if it has. */
  get exitInfo(): string | undefined {
    return this.exitDescription;
  }

  start(): void {
    if (this.running) throw new Error(`${this.name} is already running`);
    installExitHook();
    const fd = openSync(this.logPath, 'a');
    let child: ChildProcess;
    try {
      child = spawn(this.command, this.args, { stdio: ['ignore', fd, fd], ...(this.env ? { env: this.env } : {}) });
    } finally {
      closeSync(fd); // the child holds its own copy
    }
    this.child = child;
    this.exitDescription = undefined;
    liveChildren.add(child);
    this.exitPromise = new Promise<void>((resolve) => {
      const done = (description: string): void => {
        if (this.child === child && this.exitDescription === undefined) this.exitDescription = description;
        liveChildren.delete(child);
        this.onChange();
        resolve();
      };
      child.once('exit', (code, signal) => done(signal !== null ? `signal ${signal}` : `exit code ${String(code)}`));
      child.once('error', (err) => done(`spawn error: ${err.message}`));
    });
    this.onChange();
  }

  /** Resolves when the current run ends (immediately if not running). */
  exited(): Promise<void> {
    return this.running && this.exitPromise ? this.exitPromise : Promise.resolve();
  }

  /** SIGTERM, then SIGKILL after `graceMs` (at once if 0); resolves once the process is gone. */
  async stop(graceMs = 5000): Promise<void> {
    const child = this.child;
    if (!child || !this.running || !this.exitPromise) return;
    if (graceMs <= 0) {
      child.kill('SIGKILL');
      await this.exitPromise;
      return;
    }
    child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const killed = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve();
      }, graceMs);
    });
    await Promise.race([this.exitPromise, killed]);
    clearTimeout(timer);
    await this.exitPromise;
  }

  /** The tail of this process' log, for error messages. */
  logTail(lines = 40): string {
    return tailFile(this.logPath, lines);
  }
}

/**
 * A watchdog for abnormal deaths of the Node process (SIGKILL, or a signal
 * with no handler) where no 'exit' listener runs: a small shell loop that
 * polls the parent PID and, once it is gone, SIGKILLs every PID listed in
 * `pidFile` (then deletes `removeDir`, if given). Callers keep `pidFile`
 * current via writePidFile(). It is killed
 * by stop() when the environment shuts down normally.
 */
export function startWatchdog(pidFile: string, removeDir?: string): ChildProcess {
  const script =
    'parent=$1; pidfile=$2; dir=$3; ' +
    'while kill -0 "$parent" 2>/dev/null; do sleep 1; done; ' +
    '[ -f "$pidfile" ] && kill -9 $(cat "$pidfile") 2>/dev/null; ' +
    'if [ -n "$dir" ]; then sleep 1; rm -rf -- "$dir"; fi; exit 0';
  const child = spawn('sh', ['-c', script, 'envtest-watchdog', String(process.pid), pidFile, removeDir ?? ''], {
    stdio: 'ignore',
  });
  // The watchdog must not keep the event loop alive.
  child.unref();
  return child;
}

export function writePidFile(pidFile: string, pids: Array<number | undefined>): void {
  try {
    writeFileSync(pidFile, pids.filter((p): p is number => p !== undefined).join(' ') + '\n');
  } catch {
    // the directory may already be gone during teardown
  }
}

/**
 * Polls `check` every `everyMs` until it returns true; fails at once when one
 * of `procs` exits, and after `timeoutMs` with the last thing `check` said
 * (its string, or its error) and the tail of each process' log.
 */
export async function waitUntilReady(
  what: string,
  timeoutMs: number,
  procs: readonly ManagedProcess[],
  check: () => Promise<true | string>,
  everyMs = 200,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'not checked yet';
  for (;;) {
    for (const p of procs) {
      if (!p.running) throw new Error(`${p.name} exited while waiting for ${what} (${p.exitInfo ?? '?'}); log ${p.logPath}:\n${p.logTail()}`);
    }
    try {
      const r = await check();
      if (r === true) return;
      last = r;
    } catch (e) {
      last = (e as Error).message;
    }
    if (Date.now() > deadline) {
      throw new Error(`${what}: not after ${timeoutMs} ms (${last}); logs:\n${procs.map((p) => `--- ${p.logPath}\n${p.logTail(15)}`).join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * Starts two environments at once (e.g. the internal cluster beside a kcp).
 * When one fails, the other is stopped once it has started, and the first
 * failure is thrown: nothing is left running. Promise.all would leave the
 * one that started running, unreferenced — its processes and handles keep
 * a test file's process alive for ever.
 */
export async function startTogether<A extends { stop(): Promise<void> }, B extends { stop(): Promise<void> }>(a: Promise<A>, b: Promise<B>): Promise<[A, B]> {
  const [ra, rb] = await Promise.allSettled([a, b]);
  if (ra.status === 'fulfilled' && rb.status === 'fulfilled') return [ra.value, rb.value];
  await Promise.all([ra, rb].map((r) => (r.status === 'fulfilled' ? r.value.stop().catch(() => {}) : undefined)));
  throw ra.status === 'rejected' ? ra.reason : (rb as PromiseRejectedResult).reason;
}
