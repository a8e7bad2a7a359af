/**
 * PostgreSQL from the machine's Debian packages (package `postgresql`), for
 * Tekton Results: its own data directory and a free port on 127.0.0.1, trust
 * authentication (nothing but loopback reaches it), thrown away at the end.
 *
 * Debian keeps the server binaries under /usr/lib/postgresql/<major>/bin
 * (outside PATH). initdb and postgres refuse to run as root; as root they run
 * as the `postgres` user the package creates (setpriv, which execs, so the
 * harness signals the server itself), with a data directory that user owns.
 */
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts, ManagedProcess, waitUntilReady } from './processes.js';

export interface Postgres {
  host: string;
  port: number;
  user: string;
  database: string;
  process: ManagedProcess;
  /** Stops the server and removes its data directory. */
  stop(): Promise<void>;
}

/** The newest installed server's bin directory, or an error saying what to install. */
export function postgresBinDir(): string {
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root) ? readdirSync(root).filter((d) => /^\d+$/.test(d) && existsSync(join(root, d, 'bin', 'postgres'))) : [];
  majors.sort((a, b) => Number(b) - Number(a));
  if (!majors[0]) throw new Error('PostgreSQL is needed for Tekton Results (Debian: apt-get install postgresql); no server found under /usr/lib/postgresql/*/bin');
  return join(root, majors[0], 'bin');
}

export async function startPostgres(opts: { logPath: string; onChange?: () => void; user?: string; database?: string; readyTimeoutMs?: number }): Promise<Postgres> {
  const bin = postgresBinDir();
  const user = opts.user ?? 'results';
  const database = opts.database ?? 'tekton-results';
  const root = process.getuid?.() === 0;
  // A directory of its own: the harness's directory is private to root.
  const dataDir = mkdtempSync(join(tmpdir(), 'internal-services-pg-'));
  let uid: number | undefined;
  let gid: number | undefined;
  if (root) {
    uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dataDir, uid, gid);
  }
  const as = (cmd: string, args: string[]): [string, string[]] => (root ? ['setpriv', [`--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--', cmd, ...args]] : [cmd, args]);
  const pgdata = join(dataDir, 'data');
  try {
    const [c, a] = as(join(bin, 'initdb'), ['-D', pgdata, '-U', user, '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
    execFileSync(c, a, { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    rmSync(dataDir, { recursive: true, force: true });
    throw new Error(`initdb failed: ${(e as { stderr?: Buffer }).stderr?.toString().trim() ?? String(e)}`);
  }
  const [port] = (await freePorts(1)) as [number];
  const [cmd, args] = as(join(bin, 'postgres'), ['-D', pgdata, '-c', 'listen_addresses=127.0.0.1', '-p', String(port), '-k', dataDir, '-c', 'fsync=off', '-c', 'max_connections=50']);
  const proc = new ManagedProcess('postgres', cmd, args, opts.logPath, opts.onChange);
  proc.start();
  const stop = async (): Promise<void> => {
    await proc.stop(3000);
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await waitUntilReady(`PostgreSQL on 127.0.0.1:${port}`, opts.readyTimeoutMs ?? 30_000, [proc], async () => ((await accepts(port)) ? true : 'not accepting connections yet'));
    // The server takes connections a moment before it takes logins; createdb retries over that.
    const [c, a] = as(join(bin, 'createdb'), ['-h', '127.0.0.1', '-p', String(port), '-U', user, database]);
    await waitUntilReady(`database ${database}`, 15_000, [proc], async () => {
      try {
        execFileSync(c, a, { stdio: ['ignore', 'ignore', 'pipe'] });
        return true;
      } catch (e) {
        const msg = (e as { stderr?: Buffer }).stderr?.toString().trim() ?? String(e);
        if (msg.includes('already exists')) return true;
        return msg;
      }
    });
  } catch (e) {
    await stop();
    throw e;
  }
  return { host: '127.0.0.1', port, user, database, process: proc, stop };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}
