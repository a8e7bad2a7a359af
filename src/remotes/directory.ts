/**
 * Remote clusters from a directory of kubeconfig files
 * (--remote-kubeconfig-dir), followed while the controller runs: typically
 * one or more Secrets mounted as a volume (a projected volume gathers
 * several), so that the controller needs no right to read Secrets through
 * the API. One file, one remote, named by the file (a `.kubeconfig` suffix
 * is dropped): `prod` or `prod.kubeconfig` serve remote "prod".
 *
 * The directory is read again every interval. The kubelet updates a mounted
 * Secret by swapping a symlink (`..data`), so a scan sees either the old
 * files or the new ones, never half of each; names starting with "." are
 * its bookkeeping and are skipped. A file added is a remote served, a file
 * changed replaces its connection, a file removed stops serving its remote.
 * A file that cannot be used is reported (log, /readyz detail) and changes
 * nothing: a remote already served from it keeps its last good connection,
 * as with Secrets (secrets.ts).
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { fromKubeConfig, type RequestObserver } from '../kube/client.js';
import type { ReadinessCheck } from '../kube/informer.js';
import { REMOTE_NAME_PATTERN } from '../policy/tenant.js';
import { parseRemoteKubeconfig } from './kubeconfig.js';
import type { RemoteProvider, RemoteSink } from './provider.js';
import type { RemoteMode } from './remote.js';

/** The largest file read as a kubeconfig (a kubeconfig with its certificates is a few KiB). */
export const MAX_KUBECONFIG_BYTES = 1024 * 1024;
const SUFFIX = '.kubeconfig';

export interface RemoteDirectoryOptions {
  dir: string;
  /** Time between two reads of the directory. */
  intervalMs: number;
  /** Remote names not to take (e.g. the --remote-kubeconfig remote's). */
  reserved?: ReadonlySet<string>;
  /** How the requests of every remote of the directory are followed. */
  mode: RemoteMode;
  log: Logger;
  apiObserver?: RequestObserver | undefined;
}

/** One file of the directory, as read: the remote it serves, or why it cannot be used. */
export type DirectoryEntry = { file: string; name: string } & ({ ok: true; kubeconfig: KubeConfig; fingerprint: string } | { ok: false; error: string });

/** The remote a file name serves, or undefined for a name that is not one (with why). */
export function remoteNameOfFile(file: string): { name: string } | { error: string } {
  const name = file.endsWith(SUFFIX) ? file.slice(0, -SUFFIX.length) : file;
  if (!REMOTE_NAME_PATTERN.test(name)) {
    return { error: `file ${JSON.stringify(file)}: remote name ${JSON.stringify(name)} is not a DNS label (lower-case letters, digits and "-", at most 63): name the file after the remote, e.g. prod or prod${SUFFIX}` };
  }
  return { name };
}

/** Reads the directory: one entry per file that is not bookkeeping ("." first). Throws when the directory itself cannot be read. */
export async function readKubeconfigDir(dir: string): Promise<DirectoryEntry[]> {
  const files = (await readdir(dir)).filter((f) => !f.startsWith('.')).sort();
  const out: DirectoryEntry[] = [];
  for (const file of files) {
    const named = remoteNameOfFile(file);
    const name = 'name' in named ? named.name : file;
    const path = join(dir, file);
    try {
      const st = await stat(path); // follows the kubelet's symlinks
      if (!st.isFile()) continue;
      if ('error' in named) {
        out.push({ file, name, ok: false, error: named.error });
        continue;
      }
      if (st.size > MAX_KUBECONFIG_BYTES) {
        out.push({ file, name, ok: false, error: `file ${JSON.stringify(file)} is ${st.size} bytes, more than the ${MAX_KUBECONFIG_BYTES} a kubeconfig may have` });
        continue;
      }
      const text = await readFile(path, 'utf8');
      const parsed = parseRemoteKubeconfig(text, `file ${JSON.stringify(file)}`);
      if (!parsed.ok) out.push({ file, name, ok: false, error: parsed.error });
      else out.push({ file, name, ok: true, kubeconfig: parsed.kubeconfig, fingerprint: createHash('sha256').update(text).digest('hex') });
    } catch (e) {
      // Removed between the listing and the read (a kubelet swap): the next scan sees the new state.
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
      out.push({ file, name, ok: false, error: `file ${JSON.stringify(file)} cannot be read: ${(e as Error).message}` });
    }
  }
  return out;
}

export class RemoteDirectory implements RemoteProvider {
  /** Remote name -> the file that serves it and its fingerprint. */
  private readonly serving = new Map<string, { file: string; fingerprint: string }>();
  /** The last scan: file -> its problem (files that can be used have none). */
  private problems = new Map<string, string>();
  /** Why the directory itself could not be read at the last scan. */
  private dirError: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private scanning: Promise<void> = Promise.resolve();

  constructor(
    private readonly sink: RemoteSink,
    private readonly opts: RemoteDirectoryOptions,
  ) {}

  /** Reads the directory once and serves what it holds; then reads it again every interval. */
  async start(): Promise<void> {
    await this.scanNow();
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.scanning;
  }

  /** Reads the directory now and applies what changed (tests; the timer calls it too). */
  scanNow(): Promise<void> {
    this.scanning = this.scanning.then(() => this.scan()).catch((e: unknown) => this.opts.log.error({ dir: this.opts.dir, err: String(e) }, 'remote kubeconfig directory not applied'));
    return this.scanning;
  }

  /** /readyz: the directory (advisory: the remotes it serves keep running when it cannot be read) and each file that cannot be used. */
  readiness(): ReadinessCheck[] {
    const out: ReadinessCheck[] = [{ name: `remote-kubeconfig-dir`, ok: this.dirError === undefined, required: false, ...(this.dirError ? { detail: this.dirError } : {}) }];
    for (const [file, problem] of [...this.problems].sort()) out.push({ name: `remote-kubeconfig-dir/${file}`, ok: false, required: false, detail: problem });
    return out;
  }

  private schedule(): void {
    if (this.stopped) return;
    // From the end of one scan to the start of the next: scans never overlap.
    this.timer = setTimeout(() => void this.scanNow().then(() => this.schedule()), this.opts.intervalMs);
    this.timer.unref();
  }

  private async scan(): Promise<void> {
    let entries: DirectoryEntry[];
    try {
      entries = await readKubeconfigDir(this.opts.dir);
    } catch (e) {
      const why = `directory ${this.opts.dir} cannot be read: ${(e as Error).message}; the remotes it served keep their connections`;
      if (why !== this.dirError) this.opts.log.error({ dir: this.opts.dir, problem: why }, 'remote kubeconfig directory cannot be read');
      this.dirError = why;
      return;
    }
    this.dirError = undefined;
    const problems = new Map<string, string>();
    for (const e of entries) {
      if (e.ok) continue;
      problems.set(e.file, e.error);
      if (this.problems.get(e.file) !== e.error) this.opts.log.error({ dir: this.opts.dir, file: e.file, problem: e.error }, 'remote kubeconfig file cannot be used; a remote already served from it keeps its connection');
    }
    // The first file (by name) that names a remote and can be used serves it.
    const want = new Map<string, Extract<DirectoryEntry, { ok: true }>>();
    for (const e of entries) {
      if (!e.ok) continue;
      if (want.has(e.name)) {
        problems.set(e.file, `remote ${JSON.stringify(e.name)} is served from file ${JSON.stringify(want.get(e.name)!.file)}; this one is not used`);
        continue;
      }
      if (this.opts.reserved?.has(e.name)) {
        const why = `remote name ${JSON.stringify(e.name)} is taken by --remote-kubeconfig (--remote-name); rename the file`;
        if (this.problems.get(e.file) !== why) this.opts.log.error({ dir: this.opts.dir, file: e.file, remote: e.name }, 'remote name is taken by --remote-kubeconfig (--remote-name); the file is not used');
        problems.set(e.file, why);
        continue;
      }
      want.set(e.name, e);
    }
    this.problems = problems;
    // Removed: no file names it any more. A file still there but broken keeps its last good connection.
    const present = new Set(entries.map((e) => e.name));
    for (const [name] of [...this.serving]) {
      if (want.has(name) || present.has(name)) continue;
      this.serving.delete(name);
      await this.sink.removeRemote(name);
    }
    for (const [name, e] of want) {
      const current = this.serving.get(name);
      if (current && current.fingerprint === e.fingerprint && current.file === e.file) continue;
      const cluster = await fromKubeConfig('remote', e.kubeconfig, { observer: this.opts.apiObserver, remote: name });
      this.serving.set(name, { file: e.file, fingerprint: e.fingerprint });
      this.sink.addRemote({ name, cluster, mode: this.opts.mode, origin: `file ${join(this.opts.dir, e.file)}` });
    }
  }
}
