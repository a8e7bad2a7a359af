/**
 * Exact refs, looked up in the repository itself (src/policy/exact-ref.ts
 * says why): `git ls-remote -- <url> <ref> <ref>^{}` from the internal side,
 * and only the lines whose name is exactly the ref (or its peeled `^{}`
 * line: a tag's commit) are taken. Names that merely end like it (a tag
 * named `refs/heads/x`, a branch named `refs/tags/v1`) are reported as
 * similar, never used. git's own rules for guessing a ref are never applied.
 *
 * Bounded: each lookup has a deadline and its output a size limit; lookups
 * of one ref share one run; answers are kept per owner (a request's uid) so
 * one request sees one answer while it is decided. Read with `answersFor()`
 * (no I/O), asked for with `lookUpRef()`, which calls back when it is in.
 */
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import type { Logger } from 'pino';
import { isFullSha } from '../policy/canonical.js';
import { refLookupKey, type RefAnswer, type RefLookup } from '../policy/exact-ref.js';
import { OwnedLookups } from './owned-answers.js';
import { gitEnvironment, GIT_SAFE_ARGS } from './git-env.js';

export interface RefLookupsOptions {
  log: Logger;
  /** Deadline of one ls-remote; default 60 s. */
  timeoutMs?: number;
  /** How long an answer is kept for its owner; default 10 minutes. */
  answerTtlMs?: number;
  /** The git executable; default "git" on PATH. */
  git?: string;
  now?: () => number;
  metrics?: { lookedUp?(result: 'found' | 'absent' | 'failed', seconds: number): void };
}

const MAX_OUTPUT = 1024 * 1024;

export class RefLookups {
  private readonly lookups: OwnedLookups<RefAnswer>;
  private readonly timeoutMs: number;

  constructor(private readonly opts: RefLookupsOptions) {
    this.timeoutMs = opts.timeoutMs ?? 60_000;
    this.lookups = new OwnedLookups<RefAnswer>({ ttlMs: opts.answerTtlMs ?? 10 * 60_000, now: opts.now ?? Date.now }, { state: 'pending' });
  }

  /** An owner's answers, by refLookupKey(), as they stand (no I/O). */
  answersFor(owner: string): ReadonlyMap<string, RefAnswer> {
    return this.lookups.answersFor(owner);
  }

  forget(owner: string): void {
    this.lookups.forget(owner);
  }

  /** Starts the lookup unless it is answered or under way; `done` is called when the answer is in. */
  lookUpRef(owner: string, lookup: RefLookup, done: () => void): void {
    this.lookups.start(owner, refLookupKey(lookup), () => this.lookUp(lookup), (answer, seconds) => {
      const result = answer.state === 'pending' ? 'failed' : answer.state;
      this.opts.metrics?.lookedUp?.(result, seconds);
      this.opts.log[result === 'failed' ? 'warn' : 'info']({ repository: lookup.url, ref: lookup.ref, answer }, result === 'failed' ? 'ref could not be looked up' : 'ref looked up');
    }, done);
  }

  /** One lookup (shared with a concurrent one of the same ref). Never throws. */
  lookUp(lookup: RefLookup): Promise<RefAnswer> {
    return this.lookups.shared(refLookupKey(lookup), () => this.run(lookup));
  }

  private async run(l: RefLookup): Promise<RefAnswer> {
    if (!/^refs\/(heads|tags)\/./.test(l.ref) || /[\s\0]/.test(l.ref) || l.ref.startsWith('-')) return { state: 'failed', message: `${JSON.stringify(l.ref)} is not a fully qualified branch or tag` };
    const out = await this.git(['ls-remote', '--', l.url, l.ref, `${l.ref}^{}`]);
    if ('error' in out) return { state: 'failed', message: out.error };
    let direct: string | undefined;
    let peeled: string | undefined;
    const similar: string[] = [];
    for (const line of out.stdout.split('\n')) {
      const tab = line.indexOf('\t');
      if (tab < 0) continue;
      const sha = line.slice(0, tab).toLowerCase();
      const name = line.slice(tab + 1);
      if (!isFullSha(sha)) continue;
      if (name === l.ref) direct = sha;
      else if (name === `${l.ref}^{}`) peeled = sha;
      else if (!name.endsWith('^{}')) similar.push(name);
    }
    const commit = peeled ?? direct;
    if (commit === undefined) return { state: 'absent', similar: similar.sort() };
    return { state: 'found', commit };
  }

  /** git with no user or system configuration, no prompts, only the transports a canonical URL can name; stopped at the deadline. */
  private git(args: string[]): Promise<{ stdout: string } | { error: string }> {
    return new Promise((resolve) => {
      const env = gitEnvironment(tmpdir());
      const child = spawn(this.opts.git ?? 'git', [...GIT_SAFE_ARGS, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      let why: string | undefined;
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        stdout += d;
        if (stdout.length > MAX_OUTPUT) {
          why = `git ls-remote printed more than ${MAX_OUTPUT} bytes`;
          child.kill('SIGKILL');
        }
      });
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        if (stderr.length < 4096) stderr += d;
      });
      const deadline = setTimeout(() => {
        why = `git ls-remote did not finish within ${Math.round(this.timeoutMs / 1000)} s`;
        child.kill('SIGKILL');
      }, this.timeoutMs);
      child.on('error', (e) => {
        why = `git could not be started (${e.message}); the controller needs git to look up refs`;
      });
      child.on('close', (code) => {
        clearTimeout(deadline);
        if (why) resolve({ error: why });
        else if (code !== 0) resolve({ error: `git ls-remote failed: ${stderr.trim().split('\n').slice(-2).join(' ') || `exit code ${code}`}` });
        else resolve({ stdout });
      });
    });
  }
}
