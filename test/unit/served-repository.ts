/** A repository served by a real `git daemon` on loopback for one test, removed after it (with the daemon and its folder). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { startGitServer, type GitRepository, type GitServer } from '../../src/localenv/real/git.js';

export async function servedRepository(t: TestContext, prefix: string): Promise<{ dir: string; repo: GitRepository }> {
  const { dir, server } = await gitServer(t, prefix);
  return { dir, repo: await server.repository('catalog') };
}

/** A git daemon for one test, with its folder (repositories under `repos`); removed after it. */
export async function gitServer(t: TestContext, prefix: string): Promise<{ dir: string; server: GitServer; repos: string }> {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  const server = await startGitServer(join(dir, 'git')).catch((e: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  });
  t.after(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir, server, repos: join(dir, 'git', 'repos') };
}
