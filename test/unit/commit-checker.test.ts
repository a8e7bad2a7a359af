/**
 * The commit checker (src/git/commit-checker.ts) against a real repository
 * served by `git daemon` on loopback: a commit on an allowed branch or tag is
 * reachable, one only on an unmerged branch, in a "fork" (no ref reaches it)
 * or force-pushed away is not, and a server that is down, slow or too large
 * gives a failure with a reason. Every answer is compared with git's own
 * (`git merge-base --is-ancestor` in the served repository).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { CommitChecker } from '../../src/git/commit-checker.js';
import { servedRepository } from './served-repository.js';

const log = pino({ level: 'silent' });

function isAncestor(bare: string, commit: string, ref: string): boolean {
  try {
    execFileSync('git', ['merge-base', '--is-ancestor', commit, ref], { cwd: bare, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

test('commit checker: reachable from an allowed ref, or not, as git itself answers; never fetched by name', async (t) => {
  const { dir, repo } = await servedRepository(t, 'commit-checker');
  const c1 = await repo.commit({ 'tasks/a.yaml': 'one' }, 'one');
  const c2 = await repo.commit({ 'tasks/a.yaml': 'two' }, 'two');
  const unmerged = await repo.commit({ 'tasks/a.yaml': 'evil' }, 'evil', 'feature');
  await repo.setTag('v1.0.0', c1);
  // A tag named like the branch, at the unmerged commit: git would read "main" as this tag.
  await repo.setTag('main', unmerged);
  const fork = await repo.danglingCommit({ 'tasks/a.yaml': 'from a fork' }, 'fork', c2);

  const checker = new CommitChecker({ dir: join(dir, 'cache'), log, timeoutMs: 20_000 });
  const check = (commit: string, refs: string[]) => checker.check({ url: repo.url, commit, refs, rules: ['sources.git[0]'] });
  const MAIN = ['refs/heads/main'];

  assert.deepEqual(await check(c1, MAIN), { state: 'reachable', ref: 'refs/heads/main' });
  assert.deepEqual(await check(c2, MAIN), { state: 'reachable', ref: 'refs/heads/main' });
  assert.deepEqual(await check(unmerged, MAIN), { state: 'unreachable', refs: ['refs/heads/main'] }, 'a commit only on an unmerged branch');
  assert.deepEqual(await check(unmerged, ['refs/heads/release-*']), { state: 'unreachable', refs: [] }, 'no ref matches at all');
  assert.deepEqual(await check(fork, MAIN), { state: 'unreachable', refs: ['refs/heads/main'] }, 'a commit no ref reaches (a fork\'s)');
  assert.deepEqual(await check(unmerged, ['refs/tags/v*']), { state: 'unreachable', refs: ['refs/tags/v1.0.0'] }, 'the tag "main" is not a v* tag');
  assert.deepEqual(await check(c1, ['refs/tags/v*']), { state: 'reachable', ref: 'refs/tags/v1.0.0' });
  assert.deepEqual(await check(unmerged, ['refs/heads/**']), { state: 'reachable', ref: 'refs/heads/feature' }, 'allowed where the rule allows every branch');
  // The same answers from git itself, in the served repository.
  for (const [commit, expected] of [[c1, true], [c2, true], [unmerged, false]] as const) assert.equal(isAncestor(repo.dir, commit, 'refs/heads/main'), expected);

  // The imposter was never brought into the cache: it was looked for among what the refs reach, not asked for.
  const cache = join(dir, 'cache');
  const clone = readdirSync(cache).find((n) => n.endsWith('.git'))!;
  assert.throws(() => execFileSync('git', ['cat-file', '-e', `${fork}^{commit}`], { cwd: join(cache, clone), stdio: 'ignore', env: { ...process.env, GIT_NO_LAZY_FETCH: '1' } }), 'the fork commit is not in the cache');

  // Force-pushed away: main moves back to c1; c2 was reachable, is not any more.
  await repo.setBranch('main', c1);
  assert.equal(isAncestor(repo.dir, c2, 'refs/heads/main'), false);
  assert.deepEqual(await check(c2, MAIN), { state: 'unreachable', refs: ['refs/heads/main'] }, 'a commit force-pushed away is no longer reviewed');
});

test('commit checker: answers per owner, asked once, with a callback; a server that is down or too large fails with a reason', async (t) => {
  const { dir, repo } = await servedRepository(t, 'commit-checker');
  const c1 = await repo.commit({ 'a.yaml': 'x'.repeat(64 * 1024) }, 'one');
  const seen: Array<{ result: string }> = [];
  const checker = new CommitChecker({ dir: join(dir, 'cache'), log, timeoutMs: 20_000, metrics: { checked: (result) => void seen.push({ result }) } });
  const c = { url: repo.url, commit: c1, refs: ['refs/heads/main'], rules: ['sources.git[0]'] };
  assert.equal(checker.answer('uid-1', c), undefined, 'not asked yet');
  const done = new Promise<void>((resolve) => checker.start('uid-1', c, resolve));
  assert.deepEqual(checker.answer('uid-1', c), { state: 'pending' });
  checker.start('uid-1', c, () => assert.fail('asked twice'));
  await done;
  assert.deepEqual(checker.answer('uid-1', c), { state: 'reachable', ref: 'refs/heads/main' });
  assert.equal(checker.answer('uid-2', c), undefined, 'another request asks for itself');
  checker.forget('uid-1');
  assert.equal(checker.answer('uid-1', c), undefined);
  assert.deepEqual(seen, [{ result: 'reachable' }]);

  // Down: a port nothing listens on.
  const down = await new CommitChecker({ dir: join(dir, 'cache-down'), log, timeoutMs: 10_000 }).check({ ...c, url: 'git://127.0.0.1:9/none.git' });
  assert.equal(down.state, 'failed');
  assert.match(down.state === 'failed' ? down.message : '', /^fetching git:\/\/127\.0\.0\.1:9\/none\.git failed: /);
  // Too large: a limit below the repository's size stops the clone and leaves nothing behind.
  const small = join(dir, 'cache-small');
  const big = await new CommitChecker({ dir: small, log, timeoutMs: 10_000, maxBytes: 1024 }).check(c);
  assert.equal(big.state, 'failed');
  assert.match(big.state === 'failed' ? big.message : '', /the repository is larger than 1024 bytes, the most the controller keeps to check commits/);
  assert.deepEqual(existsSync(small) ? readdirSync(small).filter((n) => n.endsWith('.git') || n.includes('.tmp-')) : [], [], 'no partial clone is kept');
});
