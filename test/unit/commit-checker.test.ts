/**
 * The commit checker (src/git/commit-checker.ts) against a real repository
 * served by `git daemon` on loopback: a commit on an allowed branch or tag is
 * reachable, one only on an unmerged branch, in a "fork" (no ref reaches it)
 * or force-pushed away is not, and a server that is down, slow or too large
 * gives a failure with a reason. Every answer is compared with git's own
 * (`git merge-base --is-ancestor` in the served repository). One clone per
 * repository: `x` and `x.git`, two repositories to git daemon, get two. All
 * clones together stay under the cache's limit: the least recently used idle
 * clones go first, and a check that still does not fit fails, saying why.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { createServer, connect, type Socket } from 'node:net';
import { join } from 'node:path';
import pino from 'pino';
import { CommitChecker } from '../../src/git/commit-checker.js';
import { gitServer, servedRepository } from './served-repository.js';

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


/** The folder the checker keeps the clone of a (non-aliased) URL in. */
const cloneOf = (cache: string, url: string) => join(cache, `${createHash('sha256').update(url).digest('hex').slice(0, 32)}.git`);
const clones = (cache: string) => (existsSync(cache) ? readdirSync(cache).filter((n) => n.endsWith('.git')).sort() : []);

test('commit checker: "x" and "x.git" are two repositories to git daemon, and get two clones; neither answers for the other', async (t) => {
  const { dir, server, repos } = await gitServer(t, 'commit-checker-dotgit');
  const withGit = await server.repository('catalog'); // repos/catalog.git
  const reviewed = await withGit.commit({ 'tasks/a.yaml': 'reviewed' }, 'reviewed');
  const other = await server.repository('elsewhere');
  const unreviewed = await other.commit({ 'tasks/a.yaml': 'unreviewed' }, 'unreviewed');
  // A second repository named "catalog", without ".git": git daemon serves it for ".../catalog".
  execFileSync('git', ['clone', '--bare', '--quiet', other.dir, join(repos, 'catalog')], { stdio: 'ignore' });
  const bare = `${server.baseUrl}/catalog`;
  const dotGit = `${server.baseUrl}/catalog.git`;
  assert.equal(execFileSync('git', ['ls-remote', bare, 'refs/heads/main'], { encoding: 'utf8' }).split('\t')[0], unreviewed, 'git daemon serves ".../catalog" from the repository "catalog"');
  assert.equal(execFileSync('git', ['ls-remote', dotGit, 'refs/heads/main'], { encoding: 'utf8' }).split('\t')[0], reviewed);

  const cache = join(dir, 'cache');
  const checker = new CommitChecker({ dir: cache, log, timeoutMs: 20_000 });
  const check = (url: string, commit: string) => checker.check({ url, commit, refs: ['refs/heads/main'], rules: ['sources.git[0]'] });
  assert.deepEqual(await check(dotGit, reviewed), { state: 'reachable', ref: 'refs/heads/main' });
  assert.deepEqual(await check(bare, reviewed), { state: 'unreachable', refs: ['refs/heads/main'] }, '".../catalog" is another repository: the commit of "catalog.git" is not on its main');
  assert.deepEqual(await check(bare, unreviewed), { state: 'reachable', ref: 'refs/heads/main' });
  assert.deepEqual(await check(dotGit, unreviewed), { state: 'unreachable', refs: ['refs/heads/main'] }, 'and the reverse');
  assert.deepEqual(clones(cache), [cloneOf(cache, bare), cloneOf(cache, dotGit)].map((p) => p.slice(cache.length + 1)).sort(), 'one clone each, under its own name');
});

test('commit checker: all clones stay under the cache limit; the least recently used idle clone goes first', async (t) => {
  const { dir, server } = await gitServer(t, 'commit-checker-total');
  const repos = await Promise.all(['one', 'two', 'three'].map((n) => server.repository(n)));
  const heads: string[] = [];
  for (const r of repos) heads.push(await r.commit({ 'a.yaml': r.name }, r.name));
  const ask = (c: CommitChecker, i: number) => c.check({ url: repos[i]!.url, commit: heads[i]!, refs: ['refs/heads/main'], rules: ['sources.git[0]'] });

  // What each clone takes, measured by a checker without a tight limit.
  const sizes: number[] = [];
  const measure = new CommitChecker({ dir: join(dir, 'measure'), log, timeoutMs: 20_000 });
  for (const i of [0, 1, 2]) {
    const before = measure.cacheBytes;
    assert.deepEqual(await ask(measure, i), { state: 'reachable', ref: 'refs/heads/main' });
    sizes.push(measure.cacheBytes - before);
  }
  assert.ok(sizes.every((n) => n > 0), JSON.stringify(sizes));
  // Room for two clones, not three.
  const total = sizes[0]! + sizes[1]! + sizes[2]! - Math.floor(Math.min(...sizes) / 2);

  const cache = join(dir, 'cache');
  const evicted: number[] = [];
  const reported: number[] = [];
  const checker = new CommitChecker({ dir: cache, log, timeoutMs: 20_000, maxTotalBytes: total, metrics: { evicted: (b) => void evicted.push(b), cacheBytes: (b) => void reported.push(b) } });
  assert.deepEqual(await ask(checker, 0), { state: 'reachable', ref: 'refs/heads/main' });
  assert.deepEqual(await ask(checker, 1), { state: 'reachable', ref: 'refs/heads/main' });
  assert.deepEqual(await ask(checker, 0), { state: 'reachable', ref: 'refs/heads/main' }, 'one is used again: two is now the least recently used');
  assert.deepEqual(evicted, []);
  assert.deepEqual(await ask(checker, 2), { state: 'reachable', ref: 'refs/heads/main' }, 'three fits once two is removed');
  assert.equal(evicted.length, 1);
  assert.deepEqual(clones(cache), [cloneOf(cache, repos[0]!.url), cloneOf(cache, repos[2]!.url)].map((p) => p.slice(cache.length + 1)).sort(), 'two, the least recently used, was removed');
  assert.ok(checker.cacheBytes <= total, `${checker.cacheBytes} > ${total}`);
  assert.ok(reported.length > 0 && reported.every((b) => b <= total), `reported ${JSON.stringify(reported)}, limit ${total}`);
  // Two comes back (cloned again), and one, now the least recently used, makes room.
  assert.deepEqual(await ask(checker, 1), { state: 'reachable', ref: 'refs/heads/main' });
  assert.deepEqual(clones(cache), [cloneOf(cache, repos[1]!.url), cloneOf(cache, repos[2]!.url)].map((p) => p.slice(cache.length + 1)).sort());

  // A new checker on the same folder counts what is there (and removes left-over temporary clones).
  const restarted = new CommitChecker({ dir: cache, log, timeoutMs: 20_000, maxTotalBytes: total });
  execFileSync('git', ['init', '--bare', '--quiet', join(cache, 'left-over.git.tmp-1')]);
  assert.deepEqual(await ask(restarted, 0), { state: 'reachable', ref: 'refs/heads/main' });
  assert.ok(restarted.cacheBytes <= total, `${restarted.cacheBytes} > ${total}: the clones found at start were counted`);
  assert.equal(clones(cache).length, 2);
  assert.ok(!readdirSync(cache).some((n) => n.includes('.tmp-')), 'no temporary clone left over');
});

test('commit checker: when the clones in use leave no room, the check fails with why, and nothing is kept over the limit', async (t) => {
  const { dir, server } = await gitServer(t, 'commit-checker-full');
  const one = await server.repository('one');
  const two = await server.repository('two');
  const c1 = await one.commit({ 'a.yaml': 'one' }, 'one');
  const c2 = await two.commit({ 'a.yaml': 'two' }, 'two');
  // A proxy to the daemon that can be made to hang: a fetch through it keeps its clone in use.
  const daemonPort = Number(new URL(server.baseUrl.replace('git://', 'http://')).port);
  let hang = false;
  const held: Socket[] = [];
  const proxy = createServer((s) => {
    if (hang) {
      held.push(s);
      return;
    }
    const up = connect(daemonPort, '127.0.0.1');
    s.pipe(up).pipe(s);
    s.on('error', () => up.destroy());
    up.on('error', () => s.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const s of held) s.destroy();
    proxy.close();
  });
  const proxied = `git://127.0.0.1:${(proxy.address() as { port: number }).port}/one.git`;

  const measure = new CommitChecker({ dir: join(dir, 'measure'), log, timeoutMs: 20_000 });
  await measure.check({ url: proxied, commit: c1, refs: ['refs/heads/main'], rules: ['r'] });
  const s1 = measure.cacheBytes;
  await measure.check({ url: two.url, commit: c2, refs: ['refs/heads/main'], rules: ['r'] });
  const s2 = measure.cacheBytes - s1;
  const total = s1 + Math.floor(s2 / 2);

  const cache = join(dir, 'cache');
  const checker = new CommitChecker({ dir: cache, log, timeoutMs: 4_000, maxTotalBytes: total });
  assert.deepEqual(await checker.check({ url: proxied, commit: c1, refs: ['refs/heads/main'], rules: ['r'] }), { state: 'reachable', ref: 'refs/heads/main' });
  // One is fetched again, through the hanging proxy: its clone is in use until the fetch gives up.
  hang = true;
  const busy = checker.check({ url: proxied, commit: c1, refs: ['refs/heads/main'], rules: ['r'] });
  await new Promise((r) => setTimeout(r, 300));
  const full = await checker.check({ url: two.url, commit: c2, refs: ['refs/heads/main'], rules: ['r'] });
  assert.equal(full.state, 'failed');
  assert.match(
    full.state === 'failed' ? full.message : '',
    /^fetching git:\/\/127\.0\.0\.1:\d+\/two\.git failed: the commit-check cache is full: this repository's clone \(.+\) and the clones of 1 other repository being checked now \(.+\) would take more than .+, the most the controller keeps for all repositories \(--source-check-cache-size\); ask again once those checks are done$/,
  );
  assert.ok(existsSync(cloneOf(cache, proxied)), 'the clone in use was not removed');
  assert.ok(!existsSync(cloneOf(cache, two.url)), 'the clone that did not fit was not kept');
  assert.ok(checker.cacheBytes <= total);
  // Once the busy check is over (its fetch cut, then retried), two fits by removing one.
  for (const s of held) s.destroy();
  hang = false;
  await busy;
  assert.deepEqual(await checker.check({ url: two.url, commit: c2, refs: ['refs/heads/main'], rules: ['r'] }), { state: 'reachable', ref: 'refs/heads/main' });
  assert.deepEqual(clones(cache), [cloneOf(cache, two.url).slice(cache.length + 1)]);
});
