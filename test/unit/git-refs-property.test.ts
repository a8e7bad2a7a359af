/**
 * The ref and commit rules checked against git's own reading (fast-check),
 * on a real repository served by `git daemon`: branches, tags named like
 * branches, an unmerged branch, a commit no ref reaches.
 *
 * - whatever revision the policy allows, fetched the way Tekton's git resolver
 *   fetches it (`git fetch origin --depth=1 -- <revision>`, then FETCH_HEAD),
 *   is the commit of the very branch or tag the rule allows — never the tag
 *   that git would have picked for a bare name;
 * - a commit sent to be checked is found reachable exactly when git says it
 *   is an ancestor of one of the refs matching the rule
 *   (`git merge-base --is-ancestor`).
 *
 * Counts allowed and refused cases and fails if either side is rare.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import fc from 'fast-check';
import pino from 'pino';
import { checkSource, type GitRule } from '../../src/policy/source.js';
import { compileGlob, matchGlob } from '../../src/policy/glob.js';
import { CommitChecker } from '../../src/git/commit-checker.js';
import { servedRepository } from './served-repository.js';

const numRuns = Math.min(Number(process.env['FC_NUM_RUNS'] ?? 1000), 150);
const seed = process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : undefined;
const ctx = { tenant: 'default/team-a', controllerNamespace: 'internal-services' };
const SRC = 'InternalServicesConfig internal-services/config';
const ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0' };
const git = (cwd: string, ...args: string[]): string => execFileSync('git', args, { cwd, env: ENV, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

test('refs and commits: what the policy allows is what git fetches, and reachability is git\'s own answer', async (t) => {
  const { dir, repo } = await servedRepository(t, 'git-refs-property');
  const c: string[] = [];
  c.push(await repo.commit({ 'a.yaml': '1' }, 'c0'));
  c.push(await repo.commit({ 'a.yaml': '2' }, 'c1'));
  c.push(await repo.commit({ 'a.yaml': '3' }, 'c2', 'release-1'));
  c.push(await repo.commit({ 'a.yaml': '4' }, 'c3', 'feature'));
  c.push(await repo.commit({ 'a.yaml': '5' }, 'c4', 'feature'));
  c.push(await repo.danglingCommit({ 'a.yaml': 'fork' }, 'c5', c[1]!));
  // Tags: releases, and tags named like branches that point elsewhere.
  await repo.setTag('v1.0', c[0]!);
  await repo.setTag('v2.0', c[2]!);
  await repo.setTag('main', c[4]!);
  await repo.setTag('release-1', c[3]!);
  await repo.setTag('feature', c[0]!);
  const tipOf = (ref: string) => git(repo.dir, 'rev-parse', '--verify', `${ref}^{commit}`);
  // A work repository that fetches the way the resolver does.
  const work = join(dir, 'resolver');
  git(dir, 'init', '--quiet', work);
  git(work, 'remote', 'add', 'origin', repo.url);
  const resolverFetch = (revision: string): string => {
    git(work, 'fetch', '--quiet', 'origin', '--depth=1', '--', revision);
    return git(work, 'rev-parse', 'FETCH_HEAD');
  };
  const refs = git(repo.dir, 'for-each-ref', '--format=%(refname)', 'refs/heads', 'refs/tags').split('\n');
  const checker = new CommitChecker({ dir: join(dir, 'cache'), log: pino({ level: 'silent' }), timeoutMs: 20_000 });

  const NAMES = ['main', 'release-1', 'feature', 'v1.0', 'v2.0', 'nope'];
  const revision = fc.oneof(
    fc.constantFrom(...NAMES),
    fc.constantFrom(...NAMES).map((n) => `refs/heads/${n}`),
    fc.constantFrom(...NAMES).map((n) => `refs/tags/${n}`),
    fc.nat(c.length - 1).map((i) => c[i]!),
    fc.nat(c.length - 1).map((i) => c[i]!),
    fc.nat(c.length - 1).map((i) => c[i]!),
  );
  const PATTERNS = ['main', 'release-*', 'refs/heads/feature', 'refs/tags/v*', 'refs/tags/main', '**', 'refs/tags/**'];
  const rule = fc.record({
    revisions: fc.uniqueArray(fc.constantFrom(...PATTERNS), { minLength: 1, maxLength: 3 }),
    commits: fc.constantFrom(undefined, { reachable: true }, { reachable: true }, { shas: [c[5]!] }),
  });
  let allowed = 0;
  let refused = 0;
  let checked = 0;
  await fc.assert(
    fc.asyncProperty(revision, rule, async (rev, r) => {
      const g: GitRule = { urls: [repo.url], revisions: r.revisions, ...(r.commits ? { commits: r.commits } : {}) };
      const v = checkSource({ source: SRC, git: [g], bundles: [], cluster: false }, { resolver: 'git', params: { url: repo.url, revision: rev, pathInRepo: 'a.yaml' } }, ctx);
      if (!v.allowed) {
        refused++;
        return;
      }
      const passed = v.params.find((p) => p.name === 'revision')!.value;
      if (v.commitCheck) {
        checked++;
        const answer = await checker.check(v.commitCheck);
        const globs = v.commitCheck.refs.map((p) => compileGlob(p, true)).flatMap((x) => (x.ok ? [x.glob] : []));
        const candidates = refs.filter((ref) => globs.some((gl) => matchGlob(gl, ref)));
        const gitSays = candidates.some((ref) => {
          try {
            execFileSync('git', ['merge-base', '--is-ancestor', passed, ref], { cwd: repo.dir, env: ENV, stdio: 'ignore' });
            return true;
          } catch {
            return false;
          }
        });
        assert.equal(answer.state, gitSays ? 'reachable' : 'unreachable', `${passed} from ${JSON.stringify(v.commitCheck.refs)}: git says ${gitSays}, the checker ${JSON.stringify(answer)}`);
        if (gitSays) allowed++;
        else refused++;
        return;
      }
      allowed++;
      if (/^[0-9a-f]{40}$/.test(passed)) {
        assert.equal(passed, c[5], 'only the listed commit passes unchecked');
        return;
      }
      const m = /^refs\/(heads|tags)\/(.+)$/.exec(passed);
      assert.ok(m, `${rev} passed on as ${passed}, not fully qualified`);
      if (!rev.startsWith('refs/')) assert.equal(m[1], 'heads', `the bare name ${rev} became ${passed}`);
      if (!refs.includes(passed)) return; // allowed by name but absent: the resolver fails, nothing runs
      const fetched = resolverFetch(passed);
      assert.equal(fetched, tipOf(passed), `fetching ${passed} as the resolver does gives another commit`);
      // Where git would have read the bare name as a tag, what runs is still the branch.
      if (!rev.startsWith('refs/') && refs.includes(`refs/tags/${rev}`) && tipOf(`refs/tags/${rev}`) !== tipOf(passed)) {
        assert.equal(resolverFetch(rev), tipOf(`refs/tags/${rev}`), 'git itself prefers the tag for a bare name');
        assert.notEqual(fetched, tipOf(`refs/tags/${rev}`));
      }
    }),
    { numRuns, ...(seed !== undefined ? { seed } : {}) },
  );
  console.log(`property git refs: ${allowed} allowed (${checked} by a reachability check), ${refused} refused of ${allowed + refused} cases`);
  const floor = Math.max(1, Math.floor(numRuns * 0.05));
  assert.ok(allowed >= floor && refused >= floor, `too few of one side: ${allowed} allowed, ${refused} refused (floor ${floor})`);
  assert.ok(checked >= floor, `too few reachability checks: ${checked} (floor ${floor})`);
});
