/**
 * The path checks (src/git/path-checks.ts) against real repositories served
 * by `git daemon` on loopback: a regular file, at any depth, is ok; a
 * symbolic link (the file itself, or a directory on the way, at any depth)
 * and a submodule are refused, naming the component; a path that is not
 * there, a directory, or a file used as a directory are refused saying so.
 * The control: git's own checkout of the same commit, read through the file
 * system as Tekton's git resolver reads it, gives the content of the file
 * the link points at, not a file of the allowed path.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { CommitChecker } from '../../src/git/commit-checker.js';
import { PathChecks } from '../../src/git/path-checks.js';
import type { PathAnswer } from '../../src/policy/path-check.js';
import { commitEntries } from './git-trees.js';
import { servedRepository } from './served-repository.js';

const log = pino({ level: 'silent' });
const SECRET = 'kind: Pipeline # the one no rule allows\n';

test('path checks: regular files at any depth are ok; symbolic links and submodules at any depth, missing paths and directories are refused, naming the component', async (t) => {
  const { dir, repo } = await servedRepository(t, 'path-checks');
  const base = await repo.commit({ 'README.md': 'catalog' }, 'init');
  const commit = commitEntries(repo.dir, [
    { path: 'tasks/a.yaml', mode: '100644', content: 'kind: Task\n' },
    { path: 'tasks/run.sh', mode: '100755', content: '#!/bin/sh\n' },
    { path: 'tasks/deep/er/still/x.yaml', mode: '100644', content: 'kind: Task\n' },
    { path: 'tasks/[a].yaml', mode: '100644', content: 'kind: Task\n' },
    { path: 'secret/other.yaml', mode: '100644', content: SECRET },
    // The file is a link out of the allowed path.
    { path: 'tasks/link.yaml', mode: '120000', content: '../secret/other.yaml' },
    // A directory on the way is a link, at the top and deeper down.
    { path: 'tasks/linked', mode: '120000', content: '../secret' },
    { path: 'tasks/deep/er/dir', mode: '120000', content: '../../../secret' },
    { path: 'top', mode: '120000', content: 'secret' },
    // Submodules: as a directory on the way, and as the file itself.
    { path: 'tasks/sub', mode: '160000', commit: base },
    { path: 'tasks/deep/mod.yaml', mode: '160000', commit: base },
  ], 'links and submodules');

  // The control: checked out by git and read through the file system, as the resolver does, each link reads the secret.
  const work = join(dir, 'checkout');
  execFileSync('git', ['clone', '--quiet', repo.dir, work], { stdio: 'ignore', env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' } });
  execFileSync('git', ['checkout', '--quiet', commit], { cwd: work, stdio: 'ignore' });
  for (const p of ['tasks/link.yaml', 'tasks/linked/other.yaml', 'tasks/deep/er/dir/other.yaml', 'top/other.yaml']) assert.equal(readFileSync(join(work, p), 'utf8'), SECRET, `control: ${p} reads the secret`);

  const fetched: boolean[] = [];
  const checker = new CommitChecker({ dir: join(dir, 'cache'), log, timeoutMs: 20_000, metrics: { fetched: (ok) => void fetched.push(ok) } });
  const checks = new PathChecks({ trees: checker, log });
  const at = (path: string, c = commit) => checks.check({ url: repo.url, commit: c, path });
  const expect: Array<[string, PathAnswer]> = [
    ['tasks/a.yaml', { state: 'ok' }],
    ['tasks/run.sh', { state: 'ok' }],
    ['tasks/deep/er/still/x.yaml', { state: 'ok' }],
    ['tasks/[a].yaml', { state: 'ok' }],
    ['tasks/link.yaml', { state: 'refused', component: 'tasks/link.yaml', kind: 'symlink' }],
    ['tasks/linked/other.yaml', { state: 'refused', component: 'tasks/linked', kind: 'symlink' }],
    ['tasks/deep/er/dir/other.yaml', { state: 'refused', component: 'tasks/deep/er/dir', kind: 'symlink' }],
    ['top/other.yaml', { state: 'refused', component: 'top', kind: 'symlink' }],
    ['tasks/sub/x.yaml', { state: 'refused', component: 'tasks/sub', kind: 'submodule' }],
    ['tasks/deep/mod.yaml', { state: 'refused', component: 'tasks/deep/mod.yaml', kind: 'submodule' }],
    ['tasks/none.yaml', { state: 'refused', component: 'tasks/none.yaml', kind: 'missing' }],
    ['nope/x.yaml', { state: 'refused', component: 'nope', kind: 'missing', detail: 'no such directory at this commit' }],
    // Names are names, never patterns: "[a]" and "*" are not globs, ":(glob)" is no magic.
    ['tasks/*.yaml', { state: 'refused', component: 'tasks/*.yaml', kind: 'missing' }],
    ['tasks/[ab].yaml', { state: 'refused', component: 'tasks/[ab].yaml', kind: 'missing' }],
    [':(glob)tasks/a.yaml', { state: 'refused', component: ':(glob)tasks', kind: 'missing', detail: 'no such directory at this commit' }],
    ['tasks', { state: 'refused', component: 'tasks', kind: 'not-a-file', detail: 'it is a directory' }],
    ['tasks/deep/er', { state: 'refused', component: 'tasks/deep/er', kind: 'not-a-file', detail: 'it is a directory' }],
    ['tasks/a.yaml/x.yaml', { state: 'refused', component: 'tasks/a.yaml/x.yaml', kind: 'missing', detail: '"tasks/a.yaml" is a file, not a directory' }],
  ];
  for (const [path, answer] of expect) assert.deepEqual(await at(path), answer, path);
  // At the earlier commit none of it exists.
  assert.deepEqual(await at('tasks/a.yaml', base), { state: 'refused', component: 'tasks', kind: 'missing', detail: 'no such directory at this commit' });
  assert.deepEqual(fetched, [true, true], 'each commit is fetched once, whatever the number of paths checked at it');

  // The trees went into a store of their own, beside (not into) the clone the reachability checks walk.
  const names = readdirSync(join(dir, 'cache'));
  assert.ok(names.some((n) => n.endsWith('.trees.git')), names.join(', '));
  assert.deepEqual(await checker.check({ url: repo.url, commit: base, refs: ['refs/heads/main'], rules: ['r'] }), { state: 'reachable', ref: 'refs/heads/main' }, 'the history of the clone is whole');
  const clone = names.find((n) => n.endsWith('.trees.git'))!.replace('.trees.git', '.git');
  assert.ok(!existsSync(join(dir, 'cache', clone, 'shallow')), 'the clone is not shallow');
});

test('path checks: answers per owner, asked once, with a callback; a server that is down or a commit it does not have fails with a reason', async (t) => {
  const { dir, repo } = await servedRepository(t, 'path-checks');
  const commit = commitEntries(repo.dir, [{ path: 'tasks/link.yaml', mode: '120000', content: '/etc/passwd' }], 'a link');
  const seen: string[] = [];
  const checks = new PathChecks({ trees: new CommitChecker({ dir: join(dir, 'cache'), log, timeoutMs: 20_000 }), log, metrics: { checked: (r) => void seen.push(r) } });
  const c = { url: repo.url, commit, path: 'tasks/link.yaml' };
  assert.equal(checks.answersFor('uid-1').size, 0, 'not asked yet');
  const done = new Promise<void>((resolve) => checks.checkPath('uid-1', c, resolve));
  assert.deepEqual([...checks.answersFor('uid-1').values()], [{ state: 'pending' }]);
  checks.checkPath('uid-1', c, () => assert.fail('asked twice'));
  await done;
  assert.deepEqual([...checks.answersFor('uid-1').values()], [{ state: 'refused', component: 'tasks/link.yaml', kind: 'symlink' }]);
  assert.equal(checks.answersFor('uid-2').size, 0, 'another owner asked nothing');
  assert.deepEqual(seen, ['refused']);
  checks.forget('uid-1');
  assert.equal(checks.answersFor('uid-1').size, 0);

  const unknown = await checks.check({ ...c, commit: '1'.repeat(40) });
  assert.equal(unknown.state, 'failed');
  assert.match((unknown as { message: string }).message, new RegExp(`fetching commit 1{40} of ${repo.url.replace(/[.]/g, '\\.')} failed: `));
  const down = await checks.check({ ...c, url: 'git://127.0.0.1:1/nothing.git' });
  assert.equal(down.state, 'failed');
  assert.deepEqual(await checks.check({ ...c, commit: 'main' }), { state: 'failed', message: '"main" is not a full commit SHA' }, 'a name is never fetched');
  assert.deepEqual(await checks.check({ ...c, path: 'tasks/../x' }), { state: 'failed', message: '"tasks/../x" is not a path in a repository' });
});
