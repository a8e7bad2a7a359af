/**
 * hack/trusted's Go tools (sign, gen-shapes, decode), built from Tekton
 * Pipelines' own module: the ground truth for Tekton Trusted Resources
 * checksums and signatures, used by test/unit/trusted.test.ts and by the
 * integration tests that sign a catalog, and for how Tekton reads resolved
 * bytes (decode, used by test/unit/one-reading-property.test.ts). Built once per version of their sources into
 * ${INTERNAL_SERVICES_CACHE:-${XDG_CACHE_HOME:-~/.cache}/internal-services}/trusted/<hash>/.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, relative } from 'node:path';
import { repoRoot } from '../src/util/repo.js';

const TOOLS_DIR = join(repoRoot(), 'hack/trusted');

function goFiles(dir: string): string[] {
  const out: string[] = [];
  for (const n of readdirSync(dir).sort()) {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) out.push(...goFiles(p));
    else if (n.endsWith('.go') || n === 'go.mod' || n === 'go.sum') out.push(p);
  }
  return out;
}

/** Builds hack/trusted's sign, gen-shapes and decode once per version of their sources, and returns their paths. */
export function buildTools(): { sign: string; genShapes: string; decode: string } {
  const version = spawnSync('go', ['version'], { encoding: 'utf8' });
  if (version.error || version.status !== 0) {
    assert.fail(
      'Go is needed by test/unit/trusted.test.ts: it builds hack/trusted/sign, Tekton v1.6.6\'s own checksum and signing code, ' +
        `which these tests compare src/policy/trusted.ts against. Install Go (>= 1.25) and put \`go\` on PATH. (${version.error?.message ?? version.stderr})`,
    );
  }
  const h = createHash('sha256').update(version.stdout);
  for (const f of goFiles(TOOLS_DIR)) h.update(`${relative(TOOLS_DIR, f)}\0`).update(readFileSync(f)).update('\0');
  const cache = process.env['INTERNAL_SERVICES_CACHE'] ?? join(process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'internal-services');
  const dir = join(cache, 'trusted', h.digest('hex').slice(0, 16));
  const tools = { sign: join(dir, 'sign'), genShapes: join(dir, 'gen-shapes'), decode: join(dir, 'decode') };
  if (existsSync(tools.sign) && existsSync(tools.genShapes) && existsSync(tools.decode)) return tools;
  const tmp = `${dir}.tmp-${process.pid}`;
  mkdirSync(tmp, { recursive: true });
  const started = Date.now();
  // The flags and environment of hack/envtest/install.sh's Tekton build, and
  // the same module versions (hack/trusted/go.mod pins what
  // hack/envtest/tekton/go.mod does): the Tekton and Kubernetes packages the
  // two have in common are compiled once, by whichever comes first, and
  // taken from the Go build cache by the other.
  const build = spawnSync('go', ['build', '-trimpath', '-gcflags=all=-dwarf=false', '-ldflags=-s -w', '-o', `${tmp}/`, './sign', './gen-shapes', './decode'], {
    cwd: TOOLS_DIR,
    encoding: 'utf8',
    env: { GOGC: '400', ...process.env, GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local', CGO_ENABLED: '0' },
  });
  if (build.status !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    assert.fail(`building hack/trusted failed (go build ./sign ./gen-shapes ./decode in ${TOOLS_DIR}):\n${build.stderr}${build.error?.message ?? ''}`);
  }
  console.log(`trusted: built hack/trusted/sign, gen-shapes and decode in ${((Date.now() - started) / 1000).toFixed(1)} s, into ${dir}`);
  try {
    renameSync(tmp, dir);
  } catch {
    // Built meanwhile by another run — perhaps by an older copy of this file, without every tool.
    for (const t of Object.values(tools)) if (!existsSync(t)) renameSync(join(tmp, relative(dir, t)), t);
    rmSync(tmp, { recursive: true, force: true });
  }
  return tools;
}
