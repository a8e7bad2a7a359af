/**
 * The requester CLI as a real process, for the CLI tests: its stdout and
 * stderr collected, its exit code, and a wait for a line on stderr.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { CLI } from './helpers.js';

export interface Run {
  code: number | string;
  stdout: string;
  stderr: string;
}

export interface Running {
  done: Promise<Run>;
  waitForStderr(re: RegExp, timeoutMs?: number): Promise<void>;
}

export interface StartOptions {
  /** Its environment, over this process's. */
  env?: NodeJS.ProcessEnv;
  /** The program (default: `node` with the CLI's main.js first in argv). */
  bin?: string;
  /** Written to its stdin (default: none). */
  stdin?: string;
  /** Killed after this long (default 90 s). */
  killAfterMs?: number;
}

/** Runs `bin argv` (default: `node main.js argv`) and collects its output. */
export function startCli(argv: string[], opts: StartOptions = {}): Running {
  const proc = spawn(opts.bin ?? process.execPath, opts.bin ? argv : [CLI, ...argv], {
    env: { ...process.env, ...opts.env },
    stdio: [opts.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (opts.stdin !== undefined) proc.stdin!.end(opts.stdin);
  let out = '';
  let err = '';
  const waiters: Array<() => void> = [];
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
    waiters.splice(0).forEach((w) => w());
  });
  const killer = setTimeout(() => proc.kill('SIGKILL'), opts.killAfterMs ?? 90_000);
  const done = new Promise<Run>((resolve) =>
    proc.on('close', (code, sig) => {
      clearTimeout(killer);
      waiters.splice(0).forEach((w) => w());
      resolve({ code: code ?? sig ?? -1, stdout: out, stderr: err });
    }),
  );
  return {
    done,
    async waitForStderr(re, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (!re.test(err)) {
        if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`stderr never matched ${re}; stderr:\n${err}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 200);
        });
      }
    },
  };
}

export function expectCode(r: Run, code: number, what: string): void {
  assert.equal(r.code, code, `${what}: exit ${String(r.code)}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
}
