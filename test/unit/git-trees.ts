/**
 * Commits a tree given entry by entry, with git's modes, into a bare
 * repository: symbolic links (120000, the link's target as its content) and
 * submodules (160000, a commit of another repository) as well as files,
 * which a work tree written file by file cannot make portably. The entries
 * go on top of the branch's tree, and the branch moves to the new commit.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type Entry = { path: string; mode: '100644' | '100755' | '120000'; content: string } | { path: string; mode: '160000'; commit: string };

const ENV = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'test',
  GIT_AUTHOR_EMAIL: 'test@example.invalid',
  GIT_COMMITTER_NAME: 'test',
  GIT_COMMITTER_EMAIL: 'test@example.invalid',
};

export function commitEntries(bare: string, entries: Entry[], message: string, branch = 'main'): string {
  const tmp = mkdtempSync(join(tmpdir(), 'git-trees-'));
  const env = { ...ENV, GIT_INDEX_FILE: join(tmp, 'index') };
  const git = (args: string[], input?: string) => execFileSync('git', args, { cwd: bare, env, input, encoding: 'utf8' }).trim();
  try {
    let parent: string | undefined;
    try {
      parent = git(['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`]);
    } catch {
      parent = undefined;
    }
    // On top of what the branch holds.
    if (parent) git(['read-tree', parent]);
    for (const e of entries) {
      const object = e.mode === '160000' ? e.commit : git(['hash-object', '-w', '--stdin'], e.content);
      git(['update-index', '--add', '--cacheinfo', `${e.mode},${object},${e.path}`]);
    }
    const tree = git(['write-tree']);
    const commit = git(['commit-tree', tree, ...(parent ? ['-p', parent] : []), '-m', message]);
    git(['update-ref', `refs/heads/${branch}`, commit]);
    return commit;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
