/**
 * Is this commit one that was reviewed? The source policy allows a full
 * commit SHA under `commits: {reachable: true}` only when the commit is
 * reachable from a branch or tag the rule names. A git server hands out any
 * object it has by SHA (on GitHub, a commit pushed to any fork of the
 * repository), so the name alone says nothing: the controller asks the
 * repository itself, from the internal side, before anything is resolved.
 *
 * How: one cached bare clone per repository URL under `dir`, partial
 * (`--filter=tree:0`: commits only, which is all that ancestry needs), fetched
 * again (all branches and tags, forced and pruned) before each check unless a
 * fetch started after the check was asked for is already done. The commit is
 * then looked for among the commits reachable from the refs that match the
 * rule's globs (`git rev-list`), never by asking git for the object by name:
 * in a partial clone that would make git fetch it from the server, imposter
 * or not. A commit that was on an allowed branch and was force-pushed away is
 * no longer reachable after the next fetch, and is refused from then on.
 *
 * One repository, one clone: clones are keyed by the repository's identity
 * (gitRepositoryIdentity, src/policy/canonical.ts): `x` and `x.git` get two
 * clones, as a git server may serve them as two repositories, except on the
 * hosts that serve both spellings as one (github.com, gitlab.com).
 *
 * Bounded: each git command has a deadline, a clone or fetch is stopped (and
 * the clone removed) when the repository grows past `maxBytes`, all clones
 * together stay under `maxTotalBytes` (the least recently used clones not in
 * use are removed to make room; when that is not enough the check fails,
 * saying so), concurrent checks of one repository share one fetch, and
 * answers are kept per owner (a request's uid) for `answerTtlMs` so one
 * request sees one answer while it is decided. An answer is read with
 * `answer()` (no I/O) and asked for with `start()`, which calls back when it
 * is in. The cache folder belongs to one controller process: clones found
 * there at start count against the total, left-over temporary clones are
 * removed.
 *
 * The path checks (path-checks.ts) use the same cache, limits and runner:
 * beside a repository's clone, a store of the trees of the commits asked
 * for (`inTrees`).
 *
 * Over ~400 lines on purpose: the cache, its limits and the git runner are
 * one piece (the limits are enforced while git runs).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { canonicalGitUrl, gitRepositoryIdentity } from '../policy/canonical.js';
import { compileGlob, matchGlob, type Glob } from '../policy/glob.js';
import { OwnedAnswers } from './owned-answers.js';
import { gitEnvironment, GIT_SAFE_ARGS } from './git-env.js';
import { checkKey, type CommitAnswer, type CommitCheck } from '../policy/source.js';

export type { CommitAnswer };


export interface CommitCheckerMetrics {
  checked?(result: 'reachable' | 'unreachable' | 'failed', seconds: number): void;
  fetched?(ok: boolean, seconds: number): void;
  /** A clone not in use was removed to keep the cache under maxTotalBytes (its size). */
  evicted?(bytes: number): void;
  /** What all clones take now, after each change. */
  cacheBytes?(bytes: number): void;
}

export interface CommitCheckerOptions {
  /** Where the cached clones live (created if missing). */
  dir: string;
  log: Logger;
  /** Deadline of one git command (clone, fetch, rev-list); default 60 s. */
  timeoutMs?: number;
  /** A clone larger than this is stopped and removed; default 512 MiB. */
  maxBytes?: number;
  /** All clones together; least recently used clones not in use are removed to stay under it; default 1 GiB. */
  maxTotalBytes?: number;
  /** How long an answer is kept for its owner; default 10 minutes. */
  answerTtlMs?: number;
  /** The git executable; default "git" on PATH. */
  git?: string;
  metrics?: CommitCheckerMetrics;
  now?: () => number;
}

/** One clone: one repository (gitRepositoryIdentity). */
interface Repo {
  /** Its folder under `dir`: the hash of the repository's identity, ".git". */
  name: string;
  /** The URL it was last fetched from (for logs); undefined for a clone found at start. */
  url: string | undefined;
  /** Serializes the work on one clone. */
  chain: Promise<void>;
  /** When the last successful fetch (or clone) started. */
  fetchedFrom: number;
  /** Bytes its clone takes, as last measured (0: none). */
  bytes: number;
  /** When a check last used it: idle clones are removed least recently used first. */
  usedAt: number;
  /** Checks queued or running on it: a clone in use is never removed to make room. */
  users: number;
}

export const DEFAULT_MAX_BYTES = 512 * 1024 * 1024;
export const DEFAULT_MAX_TOTAL_BYTES = 1024 * 1024 * 1024;

export class CommitChecker {
  /** Answers by owner (a request's uid), then by checkKey(). */
  private readonly answers: OwnedAnswers<CommitAnswer>;
  /** Clones by folder name. */
  private readonly repos = new Map<string, Repo>();
  private scanned = false;
  private readonly timeoutMs: number;
  private readonly maxBytes: number;
  private readonly maxTotalBytes: number;
  private readonly git: string;
  private readonly now: () => number;

  constructor(private readonly opts: CommitCheckerOptions) {
    this.timeoutMs = opts.timeoutMs ?? 60_000;
    this.maxTotalBytes = opts.maxTotalBytes ?? DEFAULT_MAX_TOTAL_BYTES;
    // One clone can never be larger than all of them together.
    this.maxBytes = Math.min(opts.maxBytes ?? DEFAULT_MAX_BYTES, this.maxTotalBytes);
    this.git = opts.git ?? 'git';
    this.now = opts.now ?? Date.now;
    this.answers = new OwnedAnswers<CommitAnswer>({ ttlMs: opts.answerTtlMs ?? 10 * 60_000, max: 10_000, now: this.now });
  }

  /** What all clones take, as last measured (for tests and the metrics). */
  get cacheBytes(): number {
    let total = 0;
    for (const r of this.repos.values()) total += r.bytes;
    return total;
  }

  /** The answer for an owner's check, if one was asked for: no I/O. */
  answer(owner: string, check: CommitCheck): CommitAnswer | undefined {
    return this.answers.get(owner, checkKey(check));
  }

  /** Starts the check unless it is answered or under way; `done` is called when the answer is in. */
  start(owner: string, check: CommitCheck, done: () => void): void {
    if (this.answer(owner, check)) return;
    const k = checkKey(check);
    const asked = this.now();
    this.answers.set(owner, k, { state: 'pending' });
    const t0 = process.hrtime.bigint();
    void this.check(check, asked).then((answer) => {
      this.answers.set(owner, k, answer);
      const secs = Number(process.hrtime.bigint() - t0) / 1e9;
      this.opts.metrics?.checked?.(answer.state === 'pending' ? 'failed' : answer.state, secs);
      const level = answer.state === 'failed' ? 'warn' : 'info';
      this.opts.log[level]({ repository: check.url, commit: check.commit, refs: check.refs, answer }, answer.state === 'failed' ? 'commit could not be checked' : 'commit checked');
      try {
        done();
      } catch {
        // The callback only enqueues a key.
      }
    });
  }

  /**
   * An owner's answers, by checkKey(), as they stand (no I/O): what the
   * observation carries. Read for every reconcile, so it costs nothing for
   * the many requests that ask for no commit.
   */
  answersFor(owner: string): ReadonlyMap<string, CommitAnswer> {
    return this.answers.forOwner(owner);
  }

  /** Drops an owner's answers (its request is decided or gone). */
  forget(owner: string): void {
    this.answers.forget(owner);
  }

  /** Answers held (for tests and the metrics of the size). */
  get size(): number {
    return this.answers.size;
  }

  /** One check, in the repository's turn. Never throws. */
  async check(check: CommitCheck, asked = this.now()): Promise<CommitAnswer> {
    const globs: Glob[] = [];
    for (const p of check.refs) {
      const g = compileGlob(p, true);
      if (!g.ok) return { state: 'failed', message: `the ref pattern ${JSON.stringify(p)} cannot be used: ${g.why}` };
      globs.push(g.glob);
    }
    const r = this.repoFor(check.url);
    r.users++;
    let out: CommitAnswer = { state: 'failed', message: 'not checked' };
    const turn = r.chain.then(async () => {
      out = await this.inTurn(r, check, globs, asked);
    });
    r.chain = turn.catch(() => undefined);
    await turn.catch((e: unknown) => {
      out = { state: 'failed', message: (e as Error).message };
    });
    r.users--;
    r.usedAt = this.now();
    return out;
  }

  /**
   * The clone of the repository a URL names: one per repository identity, so
   * `x` and `x.git` share a clone only where the host serves them as one.
   */
  private repoFor(url: string, suffix = '.git'): Repo {
    this.scan();
    const c = canonicalGitUrl(url);
    const identity = c.ok ? gitRepositoryIdentity(c.value) : url;
    const name = `${createHash('sha256').update(identity).digest('hex').slice(0, 32)}${suffix}`;
    let repo = this.repos.get(name);
    if (!repo) {
      repo = { name, url, chain: Promise.resolve(), fetchedFrom: -Infinity, bytes: 0, usedAt: this.now(), users: 0 };
      this.repos.set(name, repo);
    }
    repo.url = url;
    return repo;
  }

  /** Once: the clones already in the folder count against the total (oldest first to go); left-over temporary clones are removed. */
  private scan(): void {
    if (this.scanned) return;
    this.scanned = true;
    let names: string[];
    try {
      names = readdirSync(this.opts.dir);
    } catch {
      return;
    }
    for (const n of names) {
      const p = join(this.opts.dir, n);
      if (n.includes('.git.tmp-')) {
        rmSync(p, { recursive: true, force: true });
        continue;
      }
      if (!n.endsWith('.git') || this.repos.has(n)) continue;
      let usedAt: number;
      try {
        const st = statSync(p);
        if (!st.isDirectory()) continue;
        usedAt = st.mtimeMs;
      } catch {
        continue;
      }
      this.repos.set(n, { name: n, url: undefined, chain: Promise.resolve(), fetchedFrom: -Infinity, bytes: dirSize(p), usedAt, users: 0 });
    }
    this.reportBytes();
  }

  /**
   * Makes room for `bytes` in `keep`'s clone: removes the least recently
   * used clones that no check is using until all clones together, with
   * `keep` at `bytes`, fit under maxTotalBytes. True when they fit.
   */
  private makeRoom(keep: Repo, bytes: number): boolean {
    let others = this.cacheBytes - keep.bytes;
    if (others + bytes <= this.maxTotalBytes) return true;
    const idle = [...this.repos.values()].filter((r) => r !== keep && r.users === 0 && r.bytes > 0).sort((a, b) => a.usedAt - b.usedAt);
    for (const r of idle) {
      if (others + bytes <= this.maxTotalBytes) break;
      rmSync(join(this.opts.dir, r.name), { recursive: true, force: true });
      this.repos.delete(r.name);
      others -= r.bytes;
      this.opts.metrics?.evicted?.(r.bytes);
      this.opts.log.info({ repository: r.url, bytes: r.bytes, limit: this.maxTotalBytes }, 'clone removed from the commit-check cache to make room (--source-check-cache-size)');
    }
    this.reportBytes();
    return others + bytes <= this.maxTotalBytes;
  }

  private reportBytes(): void {
    this.opts.metrics?.cacheBytes?.(this.cacheBytes);
  }

  private cacheFullMessage(keep: Repo, bytes: number): string {
    const inUse = [...this.repos.values()].filter((r) => r !== keep && r.bytes > 0);
    const others = inUse.reduce((n, r) => n + r.bytes, 0);
    return (
      `the commit-check cache is full: this repository's clone (${size(bytes)}) and the clones of ${inUse.length} other repositor${inUse.length === 1 ? 'y' : 'ies'} being checked now (${size(others)}) ` +
      `would take more than ${size(this.maxTotalBytes)}, the most the controller keeps for all repositories (--source-check-cache-size); ask again once those checks are done`
    );
  }

  private async inTurn(repo: Repo, check: CommitCheck, globs: Glob[], asked: number): Promise<CommitAnswer> {
    const dir = join(this.opts.dir, repo.name);
    if (repo.fetchedFrom < asked || !existsSync(dir)) {
      let err: string | undefined;
      for (let attempt = 0; attempt < 2; attempt++) {
        err = await this.update(repo, dir, check.url);
        if (err === undefined) break;
        if (attempt === 0) await new Promise((r) => setTimeout(r, 1000));
      }
      if (err !== undefined) return { state: 'failed', message: err };
    }
    const listed = await this.run(['for-each-ref', '--format=%(refname)', 'refs/heads', 'refs/tags'], dir);
    if (!listed.ok) return { state: 'failed', message: `listing the refs of ${check.url} failed: ${listed.error}` };
    const refs = listed.stdout
      .split('\n')
      .filter((r) => r !== '' && globs.some((g) => matchGlob(g, r)))
      .sort();
    if (refs.length === 0) return { state: 'unreachable', refs: [] };
    // Every commit reachable from those refs, and nothing else: the commit is
    // never asked for by name (in a partial clone git would fetch it).
    const found = await this.run(['rev-list', ...refs, '--'], dir, check.commit);
    if (!found.ok) return { state: 'failed', message: `walking the history of ${check.url} failed: ${found.error}` };
    if (!found.found) return { state: 'unreachable', refs };
    for (const ref of refs) {
      const anc = await this.run(['merge-base', '--is-ancestor', check.commit, ref], dir);
      if (anc.ok) return { state: 'reachable', ref };
    }
    // Found in the union but in no single ref: cannot happen; refuse rather than guess.
    return { state: 'unreachable', refs };
  }

  /** Clones (first time) or fetches every branch and tag; undefined when done, else why not. */
  private async update(repo: Repo, dir: string, url: string): Promise<string | undefined> {
    mkdirSync(this.opts.dir, { recursive: true });
    const started = this.now();
    const t0 = process.hrtime.bigint();
    // Room first (the limit may have been lowered, or clones found at start):
    // what git then adds is watched while it runs.
    this.makeRoom(repo, repo.bytes);
    let res: RunResult;
    if (!existsSync(dir)) {
      const tmp = `${dir}.tmp-${process.pid}`;
      rmSync(tmp, { recursive: true, force: true });
      res = await this.run(['clone', '--bare', '--quiet', '--no-tags', '--filter=tree:0', '--', url, tmp], this.opts.dir, undefined, { dir: tmp, repo });
      if (res.ok) {
        const cfg = await this.run(['config', 'remote.origin.fetch', '+refs/heads/*:refs/heads/*'], tmp);
        res = cfg.ok ? await this.fetch(tmp, repo) : cfg;
      }
      if (res.ok) renameSync(tmp, dir);
      else rmSync(tmp, { recursive: true, force: true });
    } else {
      res = await this.fetch(dir, repo);
      // Stopped for a limit: what it had fetched so far goes too.
      if (!res.ok && res.limit) rmSync(dir, { recursive: true, force: true });
    }
    res = this.settle(repo, dir, res, t0);
    if (!res.ok) {
      repo.fetchedFrom = -Infinity;
      return `fetching ${url} failed: ${res.error}`;
    }
    repo.fetchedFrom = started;
    return undefined;
  }

  private tooLargeMessage(): string {
    const flag = this.maxBytes < (this.opts.maxBytes ?? DEFAULT_MAX_BYTES) ? '--source-check-cache-size' : '--source-check-max-size';
    return `the repository is larger than ${size(this.maxBytes)}, the most the controller keeps to check commits (${flag})`;
  }

  /** After a clone or fetch: the limits hold (it may have finished between two looks of the watch), the size is measured. */
  private settle(repo: Repo, dir: string, res: RunResult, t0: bigint): RunResult {
    if (res.ok) {
      const bytes = dirSize(dir);
      if (bytes > this.maxBytes) {
        rmSync(dir, { recursive: true, force: true });
        res = { ok: false, error: this.tooLargeMessage(), limit: 'repository' };
      } else if (!this.makeRoom(repo, bytes)) {
        rmSync(dir, { recursive: true, force: true });
        res = { ok: false, error: this.cacheFullMessage(repo, bytes), limit: 'cache' };
      }
    }
    repo.bytes = existsSync(dir) ? dirSize(dir) : 0;
    this.reportBytes();
    this.opts.metrics?.fetched?.(res.ok, Number(process.hrtime.bigint() - t0) / 1e9);
    return res;
  }

  /**
   * For the path checks (src/git/path-checks.ts): runs `use` on a store of
   * the trees of `commit` (`git fetch --depth=1 --filter=blob:none`: no
   * history, no file contents), one per repository beside its clone (never
   * in the clone: a shallow fetch there would cut the history the
   * reachability checks walk), in the repository's turn, under the same
   * deadline and size limits. A commit is fetched once (kept under
   * refs/c/<commit>); a store past half of --source-check-max-size starts
   * again. `git` runs git in the store. Never throws.
   */
  async inTrees<T>(url: string, commit: string, use: (git: (args: string[]) => Promise<{ ok: true; stdout: string } | { ok: false; error: string }>) => Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: string }> {
    const r = this.repoFor(url, '.trees.git');
    const dir = join(this.opts.dir, r.name);
    r.users++;
    let out: { ok: true; value: T } | { ok: false; error: string } = { ok: false, error: 'not checked' };
    const turn = r.chain.then(async () => {
      const err = await this.fetchTrees(r, dir, url, commit);
      if (err !== undefined) out = { ok: false, error: err };
      else out = { ok: true, value: await use(async (args) => this.run(args, dir)) };
    });
    r.chain = turn.catch(() => undefined);
    await turn.catch((e: unknown) => {
      out = { ok: false, error: (e as Error).message };
    });
    r.users--;
    r.usedAt = this.now();
    return out;
  }

  /** Brings `commit`'s trees into the store; undefined when they are there, else why not. */
  private async fetchTrees(repo: Repo, dir: string, url: string, commit: string): Promise<string | undefined> {
    if (!/^([0-9a-f]{40}|[0-9a-f]{64})$/.test(commit)) return `${JSON.stringify(commit)} is not a full commit SHA`;
    const keep = `refs/c/${commit}`;
    if (existsSync(dir)) {
      const has = await this.run(['for-each-ref', '--format=%(objectname)', keep], dir);
      if (has.ok && has.stdout.trim() !== '') return undefined;
      if (repo.bytes > this.maxBytes / 2) rmSync(dir, { recursive: true, force: true });
    }
    mkdirSync(this.opts.dir, { recursive: true });
    const t0 = process.hrtime.bigint();
    this.makeRoom(repo, repo.bytes);
    if (!existsSync(dir)) {
      const tmp = `${dir}.tmp-${process.pid}`;
      rmSync(tmp, { recursive: true, force: true });
      const made = await this.run(['init', '--bare', '--quiet', tmp], this.opts.dir);
      if (!made.ok) return `making the tree store failed: ${made.error}`;
      renameSync(tmp, dir);
    }
    const cfg = await this.run(['config', 'remote.origin.url', url], dir);
    let res: RunResult = cfg.ok
      ? await this.run(['fetch', '--quiet', '--no-tags', '--no-write-fetch-head', '--recurse-submodules=no', '--depth=1', '--filter=blob:none', 'origin', `+${commit}:${keep}`], dir, undefined, { dir, repo })
      : cfg;
    if (!res.ok && res.limit) rmSync(dir, { recursive: true, force: true });
    res = this.settle(repo, dir, res, t0);
    return res.ok ? undefined : `fetching commit ${commit} of ${url} failed: ${res.error}`;
  }

  private fetch(dir: string, repo: Repo): Promise<RunResult> {
    return this.run(['fetch', '--quiet', '--force', '--prune', '--prune-tags', '--no-tags', 'origin', '+refs/heads/*:refs/heads/*', '+refs/tags/*:refs/tags/*'], dir, undefined, { dir, repo });
  }

  /**
   * Runs git with no user or system configuration, no prompts and only the
   * network transports a canonical URL can name; stopped at the deadline, or
   * when the clone `watch.dir` grows past maxBytes, or past what the cache
   * has room for once idle clones are removed (maxTotalBytes). With
   * `lookFor`, stdout is scanned for that line instead of kept (rev-list's
   * output can be long).
   */
  private run(args: string[], cwd: string, lookFor?: string, watch?: { dir: string; repo: Repo }): Promise<RunResult> {
    return new Promise((resolve) => {
      const env = gitEnvironment(this.opts.dir);
      const child = spawn(this.git, [...GIT_SAFE_ARGS, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      let rest = '';
      let found = false;
      let why: string | undefined;
      let limit: 'repository' | 'cache' | undefined;
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        if (lookFor === undefined) {
          if (stdout.length < 16 * 1024 * 1024) stdout += d;
          return;
        }
        const lines = (rest + d).split('\n');
        rest = lines.pop() ?? '';
        if (!found && lines.includes(lookFor)) {
          found = true;
          child.kill('SIGKILL');
        }
      });
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        if (stderr.length < 4096) stderr += d;
      });
      const deadline = setTimeout(() => {
        why = `git ${args[0]} did not finish within ${Math.round(this.timeoutMs / 1000)} s`;
        child.kill('SIGKILL');
      }, this.timeoutMs);
      const sizer = watch
        ? setInterval(() => {
            if (limit) return;
            const bytes = dirSize(watch.dir);
            if (bytes > this.maxBytes) {
              why = this.tooLargeMessage();
              limit = 'repository';
            } else if (!this.makeRoom(watch.repo, bytes)) {
              why = this.cacheFullMessage(watch.repo, bytes);
              limit = 'cache';
            }
            if (limit) child.kill('SIGKILL');
          }, 500)
        : undefined;
      child.on('error', (e) => {
        why = `git could not be started (${e.message}); the controller needs git to check commits`;
      });
      child.on('close', (code) => {
        clearTimeout(deadline);
        if (sizer) clearInterval(sizer);
        if (lookFor !== undefined && !found && rest === lookFor) found = true;
        if (found) return resolve({ ok: true, stdout: '', found: true });
        if (why) return resolve({ ok: false, error: why, ...(limit ? { limit } : {}) });
        if (code !== 0) return resolve({ ok: false, error: stderr.trim().split('\n').slice(-3).join(' ') || `git ${args[0]} exited with ${code}` });
        resolve({ ok: true, stdout, found: false });
      });
    });
  }
}

/** limit: stopped for the size of the repository or of the cache. */
type RunResult = { ok: true; stdout: string; found: boolean } | { ok: false; error: string; limit?: 'repository' | 'cache' };

/** Bytes for messages: "1024 bytes", "512 MiB", "4 GiB". */
function size(bytes: number): string {
  if (bytes >= 1024 ** 3 && bytes % 1024 ** 3 === 0) return `${bytes / 1024 ** 3} GiB`;
  if (bytes >= 1024 * 1024) return `${Math.round(bytes / 1024 / 1024)} MiB`;
  if (bytes >= 1024 * 16) return `${Math.round(bytes / 1024)} KiB`;
  return `${bytes} bytes`;
}

function dirSize(dir: string): number {
  let total = 0;
  const walk = (d: string) => {
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const n of names) {
      const p = join(d, n);
      try {
        const s = statSync(p);
        if (s.isDirectory()) walk(p);
        else total += s.size;
      } catch {
        // Removed meanwhile (git renames its temporary files).
      }
    }
  };
  walk(dir);
  return total;
}
