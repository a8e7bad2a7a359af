/**
 * A git server on loopback for Tekton's git resolver: `git daemon` serving
 * bare repositories under one directory as git://127.0.0.1:PORT/<name>.git.
 * (The resolver refuses file:// URLs; git:// over loopback is the simplest
 * transport it accepts.) Tests write into a repository through a work tree
 * of their own and push to the bare repository on disk, so commits and
 * branch moves are visible to the resolver at once.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { freePorts, ManagedProcess, waitUntilReady } from './processes.js';

const run = promisify(execFile);

/** Fixed identity and no user or system config, so commits are reproducible here. */
const GIT_ENV = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'envtest',
  GIT_AUTHOR_EMAIL: 'envtest@example.invalid',
  GIT_COMMITTER_NAME: 'envtest',
  GIT_COMMITTER_EMAIL: 'envtest@example.invalid',
};

async function git(cwd: string, ...args: string[]): Promise<string> {
  try {
    const { stdout } = await run('git', args, { cwd, env: GIT_ENV, maxBuffer: 16 * 1024 * 1024 });
    return stdout.trim();
  } catch (e) {
    const err = e as Error & { stderr?: string };
    throw new Error(`git ${args.join(' ')} (in ${cwd}) failed: ${err.stderr?.trim() || err.message}`);
  }
}

export interface GitRepository {
  name: string;
  /** git://127.0.0.1:PORT/<name>.git — what a git resolver's `url` param takes. */
  url: string;
  /**
   * Writes files (path → content; null deletes) on `branch` (created from
   * the current default branch if new), commits and publishes; returns the
   * commit's sha.
   */
  commit(files: Record<string, string | null>, message: string, branch?: string): Promise<string>;
  /** Points `branch` (created if needed) at `revision` (a sha, tag or branch) and publishes it: a force-push when it moves back. */
  setBranch(branch: string, revision: string): Promise<void>;
  /** Points the lightweight tag `tag` (created if needed) at `revision` (a sha, tag or branch) and publishes it. */
  setTag(tag: string, revision: string): Promise<void>;
  /**
   * Makes a commit on top of `parent` (a sha) that no branch or tag points
   * to, as a commit pushed to a fork is to its parent repository on GitHub:
   * the server hands it out by SHA, but no ref of the repository reaches it.
   */
  danglingCommit(files: Record<string, string>, message: string, parent: string): Promise<string>;
  /** The bare repository on disk (git's own answers in tests). */
  dir: string;
}

export interface GitServer {
  /** git://127.0.0.1:PORT */
  baseUrl: string;
  process: ManagedProcess;
  /** Creates an empty repository (default branch "main"), or returns the existing one. */
  repository(name: string): Promise<GitRepository>;
  stop(): Promise<void>;
}

/**
 * Starts `git daemon` serving `<dir>/repos`; work trees live in `<dir>/work`.
 * Resolves once the daemon answers.
 */
export async function startGitServer(dir: string, onChange: () => void = () => {}): Promise<GitServer> {
  const reposDir = join(dir, 'repos');
  const workDir = join(dir, 'work');
  mkdirSync(reposDir, { recursive: true });
  mkdirSync(workDir, { recursive: true });
  const [port] = (await freePorts(1)) as [number];
  const daemon = new ManagedProcess(
    'git daemon',
    'git',
    ['daemon', `--base-path=${reposDir}`, '--export-all', '--reuseaddr', '--listen=127.0.0.1', `--port=${port}`, '--informative-errors', reposDir],
    join(dir, 'git-daemon.log'),
    onChange,
  );
  daemon.start();
  const baseUrl = `git://127.0.0.1:${port}`;
  // Ready once ls-remote of an existing repository answers.
  const probe = join(reposDir, '.probe.git');
  if (!existsSync(probe)) await git(reposDir, 'init', '--bare', '--quiet', probe);
  await waitUntilReady(`git daemon answering on ${baseUrl}`, 15_000, [daemon], async () => {
    await git(dir, 'ls-remote', `${baseUrl}/.probe.git`);
    return true;
  }, 100);
  const repos = new Map<string, Promise<GitRepository>>();
  return {
    baseUrl,
    process: daemon,
    repository(name: string): Promise<GitRepository> {
      if (!/^[a-z0-9][a-z0-9._-]*$/.test(name)) return Promise.reject(new Error(`bad repository name ${JSON.stringify(name)}`));
      let repo = repos.get(name);
      if (!repo) {
        repo = openRepository(name, join(reposDir, `${name}.git`), mkdtempSync(join(workDir, `${name}-`)), `${baseUrl}/${name}.git`);
        repos.set(name, repo);
      }
      return repo;
    },
    stop: () => daemon.stop(2000),
  };
}

async function openRepository(name: string, bare: string, work: string, url: string): Promise<GitRepository> {
  if (!existsSync(bare)) await git(dirname(bare), 'init', '--bare', '--quiet', '--initial-branch=main', bare);
  await git(work, 'init', '--quiet', '--initial-branch=main');
  await git(work, 'remote', 'add', 'origin', bare);
  let queue: Promise<unknown> = Promise.resolve();
  // One operation at a time on the work tree.
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = queue.then(fn, fn);
    queue = next.catch(() => {});
    return next;
  };
  const hasCommits = async (): Promise<boolean> => (await git(bare, 'for-each-ref', '--count=1', 'refs/heads')).length > 0;
  return {
    name,
    url,
    commit: (files, message, branch = 'main') =>
      serial(async () => {
        if (await hasCommits()) {
          await git(work, 'fetch', '--quiet', 'origin');
          const remoteHas = (await git(work, 'ls-remote', '--heads', 'origin', branch)).length > 0;
          await git(work, 'checkout', '--quiet', '-B', branch, remoteHas ? `origin/${branch}` : 'origin/main');
        } else {
          await git(work, 'checkout', '--quiet', '-B', branch);
        }
        for (const [path, content] of Object.entries(files)) {
          const full = join(work, path);
          if (content === null) rmSync(full, { force: true });
          else {
            mkdirSync(dirname(full), { recursive: true });
            writeFileSync(full, content);
          }
        }
        await git(work, 'add', '--all');
        await git(work, 'commit', '--quiet', '--allow-empty', '-m', message);
        await git(work, 'push', '--quiet', '--force', 'origin', `HEAD:refs/heads/${branch}`);
        return git(work, 'rev-parse', 'HEAD');
      }),
    setBranch: (branch, revision) =>
      serial(async () => {
        const sha = await git(bare, 'rev-parse', '--verify', `${revision}^{commit}`);
        await git(bare, 'update-ref', `refs/heads/${branch}`, sha);
      }),
    setTag: (tag, revision) =>
      serial(async () => {
        const sha = await git(bare, 'rev-parse', '--verify', `${revision}^{commit}`);
        await git(bare, 'update-ref', `refs/tags/${tag}`, sha);
      }),
    danglingCommit: (files, message, parent) =>
      serial(async () => {
        const tmp = `refs/tmp/dangling-${process.pid}`;
        await git(work, 'fetch', '--quiet', 'origin');
        await git(work, 'checkout', '--quiet', '--detach', parent);
        for (const [path, content] of Object.entries(files)) {
          const full = join(work, path);
          mkdirSync(dirname(full), { recursive: true });
          writeFileSync(full, content);
        }
        await git(work, 'add', '--all');
        await git(work, 'commit', '--quiet', '--allow-empty', '-m', message);
        const sha = await git(work, 'rev-parse', 'HEAD');
        // Pushed through a temporary ref, which is then removed: the objects stay, no ref reaches them.
        await git(work, 'push', '--quiet', 'origin', `HEAD:${tmp}`);
        await git(bare, 'update-ref', '-d', tmp);
        return sha;
      }),
    dir: bare,
  };
}
