/** `internal-services local` as a user runs it, for local*.test.ts. */
import { spawn } from 'node:child_process';
import { CLI } from './helpers.js';

/** Runs `internal-services local ARGS` to its end (SIGINT after killAfterMs); its exit code and output. */
export async function runLocalTour(args: string[], killAfterMs: number): Promise<{ code: number | string; stdout: string; output: string }> {
  const proc = spawn(process.execPath, [CLI, 'local', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => proc.kill('SIGINT'), killAfterMs);
  const code = await new Promise<number | string>((resolve) => proc.on('exit', (c, s) => resolve(c ?? s ?? -1)));
  clearTimeout(timer);
  return { code, stdout, output: `--- stdout ---\n${stdout}\n--- stderr ---\n${stderr}` };
}
