/**
 * `npm run test:matrix`: runs the real-stack integration tests that exercise
 * Tekton against each listed combination CI does not cover (test/matrix/
 * matrix.ts), one after another, after the CI combination as the reference,
 * and prints the table docs/compatibility.md carries.
 *
 * Per combination: hack/envtest/install.sh with TEKTON_VERSION set finds or
 * builds that Tekton (its own wrapper module, cached per version), then each
 * test file runs in its own `node --test` process with the same
 * TEKTON_VERSION (the harness asks install.sh for its binaries), under the
 * combination's Node.js. TAP and output of every file go to
 * dist/matrix/<time>/<combination>/; the report is printed and written
 * there as report.md. Exit status 1 when a test failed or a selected
 * combination could not run, 2 for bad arguments.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { delimiter, dirname, join, relative } from 'node:path';
import { createInterface } from 'node:readline';
import { repoRoot } from '../../src/util/repo.js';
import {
  combinations,
  exitCode,
  failureList,
  fileTable,
  formatDuration,
  listTable,
  LEFT_OUT,
  parseArgs,
  parseTap,
  select,
  summaryTable,
  tektonTestFiles,
  USAGE,
  type ComboResult,
  type Combination,
  type FileResult,
  type MatrixArgs,
} from './matrix.js';

const ROOT = repoRoot();
/** A test file that runs longer than this is stopped (its whole process group) and counted as failed. */
const FILE_TIMEOUT_MS = 45 * 60_000;

/** The test files that start real Tekton (test/integration), less those LEFT_OUT. */
function defaultFiles(): string[] {
  const dir = join(ROOT, 'test', 'integration');
  const sources = readdirSync(dir)
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => ({ name: f.slice(0, -'.test.ts'.length), text: readFileSync(join(dir, f), 'utf8') }));
  return tektonTestFiles(sources);
}

function pinned(): { kubernetes: string; tekton: string } {
  const text = readFileSync(join(ROOT, 'hack', 'envtest', 'versions.env'), 'utf8');
  const get = (k: string): string => {
    const v = new RegExp(`^${k}=(\\S+)$`, 'm').exec(text)?.[1];
    if (!v) throw new Error(`hack/envtest/versions.env has no ${k}`);
    return v;
  };
  return { kubernetes: get('KUBERNETES_VERSION'), tekton: get('TEKTON_VERSION') };
}

const currentMajor = process.versions.node.split('.')[0]!;

/** The environment of install.sh and the tests: TEKTON_ASSETS would override TEKTON_VERSION (install.sh uses what it names), so it is left out. */
function envFor(c: Combination, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const { TEKTON_ASSETS: _ignored, ...rest } = process.env;
  return { ...rest, ...extra, TEKTON_VERSION: c.tekton };
}

/** The Node.js binary of a combination, or why there is none: MATRIX_NODE_<major>, then node<major> on PATH; never installed. */
function nodeFor(c: Combination): { path: string } | { missing: string } {
  if (c.node === undefined || c.node === currentMajor) return { path: process.execPath };
  const fromEnv = process.env[`MATRIX_NODE_${c.node}`];
  if (fromEnv) return existsSync(fromEnv) ? { path: fromEnv } : { missing: `MATRIX_NODE_${c.node}=${fromEnv} does not exist` };
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    const p = join(dir, `node${c.node}`);
    if (dir && existsSync(p)) return { path: p };
  }
  return { missing: `no Node.js ${c.node} on this machine (MATRIX_NODE_${c.node} or node${c.node} on PATH)` };
}

function nodeVersionOf(path: string): string | undefined {
  const r = spawnSync(path, ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

function git(args: string[]): string {
  const r = spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : '';
}

/** What hack/envtest/install.sh reported, and the module version the Tekton controller binary was built from. */
interface Prepared {
  tektonBinDir: string;
  /** e.g. "github.com/tektoncd/pipeline v1.15.0, k8s.io/client-go v0.35.7" (go version -m), or why it could not be read. */
  built: string;
}

/** Runs install.sh for a Tekton version; its progress lines go to stderr, prefixed. Resolves with what it made, or a string: why it failed. */
function prepare(c: Combination, log: string): Promise<Prepared | string> {
  return new Promise((resolve) => {
    const out = createWriteStream(log);
    const child = spawn('bash', [join(ROOT, 'hack', 'envtest', 'install.sh')], { cwd: ROOT, env: envFor(c), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      out.write(d);
    });
    let last = '';
    createInterface({ input: child.stderr }).on('line', (line) => {
      last = line;
      out.write(`${line}\n`);
      process.stderr.write(`  ${c.name}: ${line}\n`);
    });
    child.on('error', (err) => resolve(`cannot run install.sh: ${err.message}`));
    child.on('close', (code) => {
      out.end();
      if (code !== 0) return resolve(`hack/envtest/install.sh failed (exit ${String(code)}): ${last}`);
      const json = stdout.split('\n').reverse().find((l) => l.startsWith('{'));
      const assets = json ? (JSON.parse(json) as { tektonBinDir?: string; tektonVersion?: string }) : {};
      if (!assets.tektonBinDir || assets.tektonVersion !== c.tekton) return resolve(`hack/envtest/install.sh reported Tekton ${String(assets.tektonVersion)}, not ${c.tekton}`);
      resolve({ tektonBinDir: assets.tektonBinDir, built: builtFrom(join(assets.tektonBinDir, 'controller')) });
    });
  });
}

/** The module versions a Go binary was built from (go version -m): Tekton's and client-go's. */
function builtFrom(binary: string): string {
  const r = spawnSync('go', ['version', '-m', binary], { encoding: 'utf8' });
  if (r.status !== 0) return `not read (go version -m: ${(r.stderr || r.error?.message || '').trim().split('\n')[0]})`;
  const mod = (path: string): string | undefined => new RegExp(`^\\s+(?:mod|dep)\\s+${path.replace(/\./g, '\\.')}\\s+(\\S+)`, 'm').exec(r.stdout)?.[1];
  return ['github.com/tektoncd/pipeline', 'k8s.io/client-go'].map((p) => `${p} ${mod(p) ?? '?'}`).join(', ');
}

let running: ReturnType<typeof spawn> | undefined;

/** Runs one test file in its own node --test process group; TAP to DIR/FILE.tap, its output to DIR/FILE.log. */
function runFile(c: Combination, node: string, file: string, dir: string): Promise<FileResult> {
  const tap = join(dir, `${file}.tap`);
  const log = join(dir, `${file}.log`);
  const started = Date.now();
  return new Promise((resolve) => {
    const out = createWriteStream(log);
    const child = spawn(
      node,
      ['--test', '--test-concurrency=1', '--test-reporter=tap', `--test-reporter-destination=${tap}`, join('dist', 'test', 'integration', `${file}.test.js`)],
      {
        cwd: ROOT,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: envFor(c, { PATH: `${dirname(node)}${delimiter}${process.env['PATH'] ?? ''}` }),
      },
    );
    running = child;
    child.stdout.pipe(out, { end: false });
    child.stderr.pipe(out, { end: false });
    const timer = setTimeout(() => {
      out.write(`\n[matrix] stopped after ${formatDuration(FILE_TIMEOUT_MS)}\n`);
      killGroup(child);
    }, FILE_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      running = undefined;
      out.end();
      const text = existsSync(tap) ? readFileSync(tap, 'utf8') : '';
      resolve({ file, summary: parseTap(text), exitCode: code, durationMs: Date.now() - started, log: relative(ROOT, log) });
    });
  });
}

function killGroup(child: ReturnType<typeof spawn>): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    /* already gone */
  }
}

function fail(message: string): never {
  process.stderr.write(`test:matrix: ${message}\n`);
  process.exit(2);
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  let args: MatrixArgs;
  try {
    args = parseArgs(argv);
  } catch (err) {
    fail((err as Error).message);
  }
  if (args.help) {
    process.stdout.write(USAGE);
    return;
  }
  const versions = pinned();
  const all = combinations(versions.tekton);
  let selected: Combination[];
  try {
    selected = select(all, args, currentMajor);
  } catch (err) {
    fail((err as Error).message);
  }
  const missing = (c: Combination): string | undefined => {
    const n = nodeFor(c);
    return 'missing' in n ? n.missing : undefined;
  };
  const files = args.files ?? defaultFiles();
  if (args.list) {
    process.stdout.write(
      `${listTable(all, selected, missing)}\n\nTest files (test/integration): ${files.map((f) => `${f}.test.ts`).join(', ')}\n` +
        (args.files ? '' : `Left out: ${Object.entries(LEFT_OUT).map(([f, why]) => `${f}.test.ts (${why})`).join('; ')}\n`),
    );
    return;
  }
  for (const f of files) {
    if (!existsSync(join(ROOT, 'dist', 'test', 'integration', `${f}.test.js`))) fail(`dist/test/integration/${f}.test.js does not exist (npm run build; --files names test/integration/NAME.test.ts)`);
  }

  const started = new Date();
  const stamp = started.toISOString().replace(/[:.]/g, '-');
  const outDir = join(ROOT, 'dist', 'matrix', stamp);
  mkdirSync(outDir, { recursive: true });
  const command = `npm run test:matrix${argv.length ? ` -- ${argv.join(' ')}` : ''}`;
  process.on('SIGINT', () => {
    if (running) killGroup(running);
    process.exit(130);
  });
  if (process.env['TEKTON_ASSETS']) process.stderr.write(`test:matrix: TEKTON_ASSETS is ignored: each combination's Tekton comes from hack/envtest/install.sh (TEKTON_VERSION)\n`);
  process.stderr.write(`test:matrix: ${selected.map((c) => c.name).join(', ')}; ${files.length} files each; logs in ${relative(ROOT, outDir)}\n`);

  // What the tests run from: the commit, and whether tracked files differed from it when the run started.
  const commit = git(['rev-parse', '--short', 'HEAD']) || '?';
  const dirty = git(['status', '--porcelain', '--untracked-files=no']) !== '';
  const results: ComboResult[] = [];
  const built = new Map<Combination, string>();
  for (const c of selected) {
    const dir = join(outDir, c.name.replace(/[^A-Za-z0-9.=-]/g, '_'));
    mkdirSync(dir, { recursive: true });
    const node = nodeFor(c);
    if ('missing' in node) {
      results.push({ combination: c, nodeVersion: undefined, notRun: { reason: node.missing, runtimeMissing: true }, prepareMs: 0, files: [] });
      process.stderr.write(`test:matrix: ${c.name}: not run: ${node.missing}\n`);
      continue;
    }
    const t0 = Date.now();
    const prepared = await prepare(c, join(dir, 'install.log'));
    const prepareMs = Date.now() - t0;
    const nodeVersion = nodeVersionOf(node.path);
    if (typeof prepared === 'string') {
      results.push({ combination: c, nodeVersion, notRun: { reason: prepared, runtimeMissing: false }, prepareMs, files: [] });
      process.stderr.write(`test:matrix: ${c.name}: not run: ${prepared}\n`);
      continue;
    }
    built.set(c, prepared.built);
    process.stderr.write(`test:matrix: ${c.name}: binaries ready after ${formatDuration(prepareMs)} (Tekton controller built from ${prepared.built}); Node.js ${nodeVersion ?? '?'}\n`);
    const result: ComboResult = { combination: c, nodeVersion, notRun: undefined, prepareMs, files: [] };
    results.push(result);
    for (const f of files) {
      process.stderr.write(`test:matrix: ${c.name}: ${f}.test.ts …\n`);
      const r = await runFile(c, node.path, f, dir);
      result.files.push(r);
      const s = r.summary;
      process.stderr.write(`test:matrix: ${c.name}: ${f}.test.ts: ${s.pass}/${s.tests} passed, ${s.fail} failed${s.cancelled ? `, ${s.cancelled} cancelled` : ''}, exit ${String(r.exitCode)}, ${formatDuration(r.durationMs)}\n`);
    }
  }


  const failures = failureList(results);
  const report = [
    `- Date: ${started.toISOString().slice(0, 10)} (${started.toISOString().slice(11, 16)} UTC), ${formatDuration(Date.now() - started.getTime())} in all`,
    `- Command: \`${command}\``,
    `- Commit: ${commit}${dirty ? ' (with uncommitted changes at the start)' : ''}; ${availableParallelism()} cores; etcd and kube-apiserver as pinned in hack/envtest/versions.env`,
    '',
    summaryTable(results, versions.kubernetes),
    '',
    fileTable(results),
    '',
    ...results
      .filter((r) => r.notRun === undefined)
      .map((r) => `${r.combination.name}: binaries ready after ${formatDuration(r.prepareMs)} (hack/envtest/install.sh); its Tekton controller was built from ${built.get(r.combination) ?? '?'} (go version -m).`),
    ...(failures.length ? ['', 'Failed:', ...failures.map((f) => `- ${f}`)] : []),
    '',
  ].join('\n');
  writeFileSync(join(outDir, 'report.md'), report);
  process.stdout.write(`\n${report}\nReport: ${relative(ROOT, join(outDir, 'report.md'))}\n`);
  process.exitCode = exitCode(results, args.only.length > 0);
}

await main();
