/**
 * A ref means exactly that ref (src/policy/exact-ref.ts), against git's own
 * reading (fast-check), on a real repository served by `git daemon` whose
 * refs are chosen to make git guess: tags literally named like branches
 * (`refs/tags/refs/heads/<name>`), branches named like tags
 * (`refs/heads/refs/tags/<name>`), annotated and lightweight tags, tags and
 * branches of the same short name.
 *
 * For every revision a glob rule allows:
 * - the controller's lookup (src/git/ref-lookups.ts, `git ls-remote` read by
 *   exact name) answers the commit of exactly that ref, or "absent" — the
 *   truth being the server's own `for-each-ref` compared as whole strings;
 * - git's own fetch of the same name, as Tekton's git resolver runs it
 *   (`git fetch origin --depth=1 -- <revision>`), is run too: where the exact
 *   ref is absent and git still fetched something (its guessing), the
 *   controller's answer is "absent" (counted: the property fails if that
 *   case never happened, so the danger it guards against is exercised).
 *
 * Counts found, absent and guessed-by-git cases and fails if one never happened.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import fc from 'fast-check';
import pino from 'pino';
import { checkSource, type GitRule } from '../../src/policy/source.js';
import { RefLookups } from '../../src/git/ref-lookups.js';
import { refVerdict } from '../../src/policy/exact-ref.js';
import { servedRepository } from './served-repository.js';

const numRuns = Math.min(Number(process.env['FC_NUM_RUNS'] ?? 1000), 120);
const seed = process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : undefined;
const ctx = { tenant: 'default/team-a', controllerNamespace: 'internal-services' };
const SRC = 'InternalServicesConfig internal-services/config';
const ENV = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0' };
const git = (cwd: string, ...args: string[]): string => execFileSync('git', args, { cwd, env: ENV, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

test('exact refs: the controller looks up exactly the ref a rule allows; what git would guess for an absent one never stands in', async (t) => {
  const { dir, repo } = await servedRepository(t, 'exact-ref-property');
  const c: string[] = [];
  c.push(await repo.commit({ 'a.yaml': '1' }, 'c0'));
  c.push(await repo.commit({ 'a.yaml': '2' }, 'c1'));
  c.push(await repo.commit({ 'a.yaml': '3' }, 'c2', 'release-1'));
  c.push(await repo.commit({ 'a.yaml': '4' }, 'c3', 'unreviewed'));
  // Named to make git guess: a tag "refs/heads/release-2" (no such branch),
  // a branch "refs/tags/v9" (no such tag), a tag and a branch "release-1".
  await repo.setTag('refs/heads/release-2', c[3]!);
  await repo.setTag('refs/heads/main', c[3]!);
  await repo.setBranch('refs/tags/v9', c[3]!);
  await repo.setBranch('refs/tags/v1.0', c[3]!);
  await repo.setTag('release-1', c[3]!);
  await repo.setTag('v1.0', c[0]!);
  git(repo.dir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'tag', '-a', '-m', 'annotated', 'v2.0', c[2]!);
  // What the server has, by exact name: ref → commit (tags peeled).
  const truth = new Map<string, string>();
  for (const line of git(repo.dir, 'for-each-ref', '--format=%(refname) %(objectname) %(*objectname)', 'refs/heads', 'refs/tags').split('\n')) {
    const [name, obj, peeled] = line.split(' ');
    truth.set(name!, peeled || obj!);
  }
  const work = join(dir, 'resolver');
  git(dir, 'init', '--quiet', work);
  git(work, 'remote', 'add', 'origin', repo.url);
  /** Tekton's git resolver's fetch: the commit git picks for the name, or undefined when git finds nothing. */
  const resolverFetch = (revision: string): string | undefined => {
    try {
      git(work, 'fetch', '--quiet', 'origin', '--depth=1', '--', revision);
      return git(work, 'rev-parse', 'FETCH_HEAD^{commit}');
    } catch {
      return undefined;
    }
  };
  const lookups = new RefLookups({ log: pino({ level: 'silent' }), timeoutMs: 20_000 });

  const NAMES = ['main', 'release-1', 'release-2', 'release-9', 'v1.0', 'v2.0', 'v9', 'unreviewed'];
  const revision = fc.oneof(
    // The names git guesses about, often: absent as written, present under a longer name.
    fc.constantFrom('release-2', 'refs/heads/release-2', 'refs/tags/v9', 'refs/tags/refs/heads/main'),
    fc.constantFrom(...NAMES),
    fc.constantFrom(...NAMES).map((n) => `refs/heads/${n}`),
    fc.constantFrom(...NAMES).map((n) => `refs/tags/${n}`),
  );
  const PATTERNS = ['main', 'release-*', 'refs/tags/v*', 'refs/heads/**', 'refs/tags/**', '**'];
  const rule = fc.uniqueArray(fc.constantFrom(...PATTERNS), { minLength: 1, maxLength: 3 });
  let found = 0;
  let absent = 0;
  let guessed = 0;
  let refused = 0;
  await fc.assert(
    fc.asyncProperty(revision, rule, async (rev, revisions) => {
      const g: GitRule = { urls: [repo.url], revisions };
      const v = checkSource({ source: SRC, git: [g], bundles: [], cluster: false }, { resolver: 'git', params: { url: repo.url, revision: rev, pathInRepo: 'a.yaml' } }, ctx);
      if (!v.allowed) {
        refused++;
        return;
      }
      const ref = v.params.find((p) => p.name === 'revision')!.value;
      assert.match(ref, /^refs\/(heads|tags)\//, `${rev} passed on as ${ref}, not fully qualified`);
      const url = v.params.find((p) => p.name === 'url')!.value;
      const answer = await lookups.lookUp({ url, ref });
      const exact = truth.get(ref);
      const verdict = refVerdict({ url, ref }, answer, 'spec.pipeline.pipelineRef');
      if (exact !== undefined) {
        found++;
        assert.deepEqual(answer, { state: 'found', commit: exact }, `${ref}: the exact ref's commit`);
        assert.deepEqual(verdict, { kind: 'found', commit: exact });
        return;
      }
      absent++;
      assert.equal(answer.state, 'absent', `${ref} does not exist, the lookup says ${JSON.stringify(answer)}`);
      assert.equal(verdict.kind, 'refused');
      assert.match(verdict.kind === 'refused' ? verdict.message : '', /has no (branch|tag) .* the controller looks up exactly the ref the rule allows/);
      const gitPicked = resolverFetch(ref);
      if (gitPicked !== undefined) {
        // git found something under a name that does not exist: its guess.
        guessed++;
        const similar = [...truth.keys()].filter((n) => n !== ref && n.endsWith(`/${ref}`));
        assert.ok(similar.length > 0, `git fetched ${gitPicked} for the absent ${ref} from no ref named like it`);
        assert.deepEqual(answer.state === 'absent' && answer.similar, similar.sort(), 'the refs named like it are named in the message');
        assert.match(verdict.kind === 'refused' ? verdict.message : '', /only the exact ref counts/);
      }
    }),
    { numRuns, ...(seed !== undefined ? { seed } : {}) },
  );
  console.log(`property exact refs: ${found} found, ${absent} absent (${guessed} of them fetched anyway by git's guessing), ${refused} refused by the rule, of ${found + absent + refused} cases`);
  assert.ok(found > 0 && absent > 0 && refused > 0, `a side never happened: ${found} found, ${absent} absent, ${refused} refused`);
  assert.ok(guessed > 0, 'no case where git would have guessed: the danger was not exercised');
});

test('exact refs: an unreachable repository is a failed lookup with git\'s message, not an absent ref', async () => {
  const lookups = new RefLookups({ log: pino({ level: 'silent' }), timeoutMs: 10_000 });
  const a = await lookups.lookUp({ url: 'git://127.0.0.1:1/nothing.git', ref: 'refs/heads/main' });
  assert.equal(a.state, 'failed');
  assert.match(a.state === 'failed' ? a.message : '', /git ls-remote failed: .*(refused|unable to connect)/i);
  assert.deepEqual(await lookups.lookUp({ url: 'git://127.0.0.1:1/x.git', ref: 'main' }), { state: 'failed', message: '"main" is not a fully qualified branch or tag' });
});
