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
 * combination's Node.js: MATRIX_NODE_<major>, node<major> on PATH, or else
 * the newest release of the major fetched with npm into the cache
 * (node-runtime.ts); a preload (record-node.ts) records which Node.js each
 * process of a test file ran, for the report. TAP and output of every file go to
 * dist/matrix/<time>/<combination>/; the report is printed and written
 * there as report.md. Exit status 1 when a test failed or a selected
 * combination could not run, 2 for bad arguments.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, homedir } from 'node:os';
import { delimiter, dirname, join, relative } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { repoRoot } from '../../src/util/repo.js';
import {
  cacheRoot,
  combinations,
  exitCode,
  failureList,
  fileTable,
  formatDuration,
  listTable,
  leftOutFiles,
  newestOfMajor,
  NODE_PACKAGE,
  nodeCacheDir,
  parseArgs,
  parseTap,
  select,
  summarizeNodeProcesses,
  summaryTable,
  tektonTestFiles,
  USAGE,
  type ComboResult,
  type Combination,
  type FileResult,
  type MatrixArgs,
} from './matrix.js';
import { obtainNode } from './node-runtime.js';

const ROOT = repoRoot();
/** A test file that runs longer than this is stopped (its whole process group) and counted as failed. */
const FILE_TIMEOUT_MS = 45 * 60_000;

/** The integration test files' sources (test/integration/*.test.ts). */
function integrationSources(): Array<{ name: string; text: string }> {
  const dir = join(ROOT, 'test', 'integration');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => ({ name: f.slice(0, -'.test.ts'.length), text: readFileSync(join(dir, f), 'utf8') }));
}

/** The test files that start real Tekton (test/integration), less those LEFT_OUT and those that start kcp. */
function defaultFiles(): string[] {
  return tektonTestFiles(integrationSources());
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

const CACHE = cacheRoot(process.env, homedir());

/**
 * The Node.js binary a combination names on this machine: the running one,
 * MATRIX_NODE_<major>, or node<major> on PATH; undefined when there is none
 * (the run then fetches it: obtainNode).
 */
function localNode(c: Combination): { path: string; source: string } | { missing: string } | undefined {
  if (c.node === undefined || c.node === currentMajor) return { path: process.execPath, source: `the Node.js running the matrix (${process.execPath})` };
  const fromEnv = process.env[`MATRIX_NODE_${c.node}`];
  if (fromEnv) return existsSync(fromEnv) ? { path: fromEnv, source: `MATRIX_NODE_${c.node}=${fromEnv}` } : { missing: `MATRIX_NODE_${c.node}=${fromEnv} does not exist` };
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    const p = join(dir, `node${c.node}`);
    if (dir && existsSync(p)) return { path: p, source: `node${c.node} on PATH (${p})` };
  }
  return undefined;
}

/** The Node.js of a combination: as localNode, else the newest of its major fetched with npm into the cache (or found there). */
function nodeFor(c: Combination): { path: string; source: string } | { missing: string } {
  const local = localNode(c);
  if (local !== undefined) return local;
  const got = obtainNode(c.node!, { root: CACHE, log: (line) => process.stderr.write(`test:matrix: ${c.name}: ${line}\n`) });
  return 'missing' in got ? got : { path: got.path, source: got.source };
}

/** For --list: where a combination's Node.js would come from, without fetching anything. */
function nodePlan(c: Combination): string {
  const local = localNode(c);
  if (local !== undefined) return 'missing' in local ? local.missing : local.source;
  const dir = join(CACHE, 'node');
  const have = newestOfMajor(existsSync(dir) ? readdirSync(dir) : [], c.node!);
  return `the newest ${NODE_PACKAGE}@${c.node}.x, fetched with npm into ${join(CACHE, 'node')}${have ? ` (v${have} cached: ${nodeCacheDir(CACHE, have)})` : ''}`;
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
  /** e.g. "github.com/tektoncd/pipeline v1.15.1, k8s.io/client-go v0.35.7" (go version -m), or why it could not be read. */
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
  const preload = pathToFileURL(join(ROOT, 'dist', 'test', 'matrix', 'record-node.js')).href;
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
        // The combination's node first on PATH, and every Node.js process of the file records its version (record-node.ts).
        env: envFor(c, {
          PATH: `${dirname(node)}${delimiter}${process.env['PATH'] ?? ''}`,
          NODE_OPTIONS: `${process.env['NODE_OPTIONS'] ?? ''} --import=${preload}`.trim(),
          MATRIX_NODE_RECORD: join(dir, 'node-processes.txt'),
        }),
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

/** Where a combination's TAP, logs and records go. */
function comboDir(outDir: string, c: Combination): string {
  return join(outDir, c.name.replace(/[^A-Za-z0-9.=-]/g, '_'));
}

/** What the preload recorded for a combination: how many Node.js processes ran which version. */
function nodeProcesses(outDir: string, c: Combination): string {
  const record = join(comboDir(outDir, c), 'node-processes.txt');
  const seen = summarizeNodeProcesses(existsSync(record) ? readFileSync(record, 'utf8') : '');
  if (seen.length === 0) return 'no Node.js process recorded';
  const total = seen.reduce((n, s) => n + s.count, 0);
  return `the test files' Node.js processes (${total}): ${seen.map((s) => `${s.count} ${s.version} (${s.execPath})`).join(', ')}`;
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
    const n = localNode(c);
    return n !== undefined && 'missing' in n ? n.missing : undefined;
  };
  const files = args.files ?? defaultFiles();
  if (args.list) {
    process.stdout.write(
      `${listTable(all, selected, missing)}\n\n${all.filter((c) => c.node !== undefined).map((c) => `${c.name}: Node.js from ${nodePlan(c)}\n`).join('')}Test files (test/integration): ${files.map((f) => `${f}.test.ts`).join(', ')}\n` +
        (args.files ? '' : `Left out: ${leftOutFiles(integrationSources()).map((f) => `${f.name}.test.ts (${f.why})`).join('; ')}\n`),
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
  const nodeSource = new Map<Combination, string>();
  for (const c of selected) {
    const dir = comboDir(outDir, c);
    mkdirSync(dir, { recursive: true });
    const node = nodeFor(c);
    if (!('missing' in node)) nodeSource.set(c, node.source);
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
    '',
    ...results
      .filter((r) => r.notRun === undefined)
      .map((r) => `${r.combination.name}: Node.js ${r.nodeVersion ?? '?'} from ${nodeSource.get(r.combination) ?? '?'}; ${nodeProcesses(outDir, r.combination)}.`),
    ...(failures.length ? ['', 'Failed:', ...failures.map((f) => `- ${f}`)] : []),
    '',
  ].join('\n');
  writeFileSync(join(outDir, 'report.md'), report);
  process.stdout.write(`\n${report}\nReport: ${relative(ROOT, join(outDir, 'report.md'))}\n`);
  process.exitCode = exitCode(results, args.only.length > 0);
}

await main();
