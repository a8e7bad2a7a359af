/**
 * Is pathInRepo, at the commit to be resolved, a regular file of the
 * repository, reached through directories only? (src/policy/path-check.ts
 * says why.) The commit's trees are fetched into the commit checker's cache
 * (`inTrees`: no history, no file contents) and each leading part of the
 * path is listed with `git ls-tree -z <commit> -- <part>`: git walks trees
 * by name, byte for byte, and never follows a symbolic link; with
 * `--literal-pathspecs` nothing in a name is a pattern or magic. The first
 * part that is a symbolic link (mode 120000), a submodule (160000), missing,
 * or (last) not a regular file (100644, 100755) is the answer.
 *
 * Bounded: the cache's deadline and size limits; checks of one file share
 * one run; answers are kept per owner (a request's uid) so one request sees
 * one answer while it is decided. Read with `answersFor()` (no I/O), asked
 * for with `checkPath()`, which calls back when the answer is in.
 */
import type { Logger } from 'pino';
import { pathCheckKey, type PathAnswer, type PathCheck } from '../policy/path-check.js';
import type { CommitChecker } from './commit-checker.js';
import { OwnedLookups } from './owned-answers.js';

export interface PathChecksOptions {
  /** Where the trees are fetched and listed (the commit checker's cache). */
  trees: Pick<CommitChecker, 'inTrees'>;
  log: Logger;
  /** How long an answer is kept for its owner; default 10 minutes. */
  answerTtlMs?: number;
  now?: () => number;
  metrics?: { checked?(result: 'ok' | 'refused' | 'failed', seconds: number): void };
}

type Git = (args: string[]) => Promise<{ ok: true; stdout: string } | { ok: false; error: string }>;

/** One entry of `git ls-tree -z`: "<mode> SP <type> SP <object> TAB <name>". */
const ENTRY = /^([0-7]{6}) ([a-z]+) ([0-9a-f]{40,64})\t(.*)$/s;
const REGULAR = new Set(['100644', '100755']);

export class PathChecks {
  private readonly lookups: OwnedLookups<PathAnswer>;

  constructor(private readonly opts: PathChecksOptions) {
    this.lookups = new OwnedLookups<PathAnswer>({ ttlMs: opts.answerTtlMs ?? 10 * 60_000, now: opts.now ?? Date.now }, { state: 'pending' });
  }

  /** An owner's answers, by pathCheckKey(), as they stand (no I/O). */
  answersFor(owner: string): ReadonlyMap<string, PathAnswer> {
    return this.lookups.answersFor(owner);
  }

  forget(owner: string): void {
    this.lookups.forget(owner);
  }

  /** Starts the check unless it is answered or under way; `done` is called when the answer is in. */
  checkPath(owner: string, check: PathCheck, done: () => void): void {
    this.lookups.start(owner, pathCheckKey(check), () => this.check(check), (answer, seconds) => {
      const result = answer.state === 'pending' ? 'failed' : answer.state;
      this.opts.metrics?.checked?.(result, seconds);
      const msg = result === 'failed' ? 'path could not be checked' : result === 'refused' ? 'path refused' : 'path checked';
      this.opts.log[result === 'ok' ? 'info' : 'warn']({ repository: check.url, commit: check.commit, path: check.path, answer }, msg);
    }, done);
  }

  /** One check (shared with a concurrent one of the same file). Never throws. */
  check(check: PathCheck): Promise<PathAnswer> {
    return this.lookups.shared(pathCheckKey(check), () => this.run(check).catch((e: unknown): PathAnswer => ({ state: 'failed', message: (e as Error).message })));
  }

  private async run(c: PathCheck): Promise<PathAnswer> {
    const parts = c.path.split('/');
    if (c.path === '' || parts.some((s) => s === '' || s === '.' || s === '..')) return { state: 'failed', message: `${JSON.stringify(c.path)} is not a path in a repository` };
    const out = await this.opts.trees.inTrees(c.url, c.commit, (git) => walk(git, c.commit, parts));
    return out.ok ? out.value : { state: 'failed', message: out.error };
  }
}

/** Lists each leading part of the path in turn; the first that is not a directory (or, last, a regular file) is the answer. */
async function walk(git: Git, commit: string, parts: string[]): Promise<PathAnswer> {
  for (let i = 0; i < parts.length; i++) {
    const part = parts.slice(0, i + 1).join('/');
    const last = i === parts.length - 1;
    const listed = await git(['--literal-pathspecs', 'ls-tree', '-z', '--full-tree', commit, '--', part]);
    if (!listed.ok) return { state: 'failed', message: `listing ${JSON.stringify(part)} failed: ${listed.error}` };
    let mode: string | undefined;
    for (const line of listed.stdout.split('\0')) {
      const m = ENTRY.exec(line);
      if (m && m[4] === part) mode = m[1];
    }
    if (mode === undefined) return { state: 'refused', component: part, kind: 'missing', ...(last ? {} : { detail: 'no such directory at this commit' }) };
    if (mode === '120000') return { state: 'refused', component: part, kind: 'symlink' };
    if (mode === '160000') return { state: 'refused', component: part, kind: 'submodule' };
    if (mode === '040000') {
      if (last) return { state: 'refused', component: part, kind: 'not-a-file', detail: 'it is a directory' };
      continue;
    }
    if (!REGULAR.has(mode)) return { state: 'refused', component: part, kind: 'not-a-file', detail: `git mode ${mode}` };
    if (!last) return { state: 'refused', component: parts.join('/'), kind: 'missing', detail: `${JSON.stringify(part)} is a file, not a directory` };
  }
  return { state: 'ok' };
}
