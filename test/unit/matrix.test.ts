/**
 * The compatibility matrix's pure parts (test/matrix/matrix.ts): its
 * arguments, which combinations a run selects, what node --test's TAP says,
 * the tables it prints and its exit status.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../../src/util/repo.js';
import {
  combinations,
  exitCode,
  failureList,
  fileTable,
  formatDuration,
  listTable,
  markdownTable,
  LEFT_OUT,
  OTHER_TEKTON,
  parseArgs,
  parseSelector,
  parseTap,
  select,
  summaryTable,
  tektonTestFiles,
  type ComboResult,
  type FileResult,
} from '../matrix/matrix.js';

const ALL = combinations('v1.6.6');
const names = (cs: ReadonlyArray<{ name: string }>) => cs.map((c) => c.name);

test('the listed combinations: the CI default first, each other Tekton, each other Node.js on the default Tekton', () => {
  assert.deepEqual(names(ALL), ['tekton=v1.6.6', 'tekton=v1.15.0', 'node=22', 'node=24']);
  assert.deepEqual(ALL.map((c) => c.ci), [true, false, false, false]);
  assert.deepEqual(ALL.map((c) => c.tekton), ['v1.6.6', 'v1.15.0', 'v1.6.6', 'v1.6.6']);
  // A default that is also listed as another version is listed once, as CI's.
  assert.deepEqual(names(combinations('v1.15.0')), ['tekton=v1.15.0', 'node=22', 'node=24']);
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
    ]),
    ['a', 'b', 'no-webhook'],
  );
  const dir = join(repoRoot(), 'test', 'integration');
  const real = tektonTestFiles(readdirSync(dir).filter((f) => f.endsWith('.test.ts')).map((f) => src(f.slice(0, -8), readFileSync(join(dir, f), 'utf8'))));
  for (const f of ['tekton', 'controller', 'tekton-version', 'remote-pipelines', 'reviewed-content', 'hostile-refs', 'bundles-registry', 'contract']) assert.ok(real.includes(f), f);
  for (const f of [...Object.keys(LEFT_OUT), 'bundle', 'envtest', 'kcp']) assert.ok(!real.includes(f), f);
});

test('arguments: flags, values inline or after, selectors, file names', () => {
  assert.deepEqual(parseArgs([]), { list: false, help: false, only: [], files: undefined, reference: true });
  assert.deepEqual(parseArgs(['--list']).list, true);
  assert.deepEqual(parseArgs(['-h']).help, true);
  assert.deepEqual(parseArgs(['--only', 'tekton=v1.15.0']).only, [{ tekton: 'v1.15.0' }]);
  assert.deepEqual(parseArgs(['--only=tekton=v1.15.0', '--only', 'node=v22.1.0']).only, [{ tekton: 'v1.15.0' }, { node: '22' }]);
  assert.deepEqual(parseArgs(['--only', 'tekton=v1.6.6,node=20']).only, [{ tekton: 'v1.6.6', node: '20' }]);
  assert.deepEqual(parseArgs(['--files', 'tekton,hostile-refs.test.ts,tekton']).files, ['tekton', 'hostile-refs']);
  assert.equal(parseArgs(['--no-reference']).reference, false);
  assert.throws(() => parseArgs(['--only']), /--only needs a value/);
  assert.throws(() => parseArgs(['--only', '--list']), /--only needs a value/);
  assert.throws(() => parseArgs(['--only', 'kcp=v0.28.1']), /unknown key "kcp"/);
  assert.throws(() => parseArgs(['--only', 'v1.15.0']), /is not KEY=VALUE/);
  assert.throws(() => parseSelector('tekton=a,tekton=b'), /given twice/);
  assert.throws(() => parseArgs(['--files', '../x']), /not a test file name/);
  assert.throws(() => parseArgs(['tekton=v1.15.0']), /unknown argument "tekton=v1\.15\.0"/);
});

test('selection: by default every combination CI does not cover, after the reference; --only picks, and refuses what matches nothing', () => {
  const none = { only: [], reference: true };
  assert.deepEqual(names(select(ALL, none, '20')), ['tekton=v1.6.6', 'tekton=v1.15.0', 'node=22', 'node=24']);
  assert.deepEqual(names(select(ALL, { ...none, reference: false }, '20')), ['tekton=v1.15.0', 'node=22', 'node=24']);
  assert.deepEqual(names(select(ALL, { only: [{ tekton: 'v1.15.0' }], reference: true }, '20')), ['tekton=v1.15.0']);
  // The default Tekton is that of three combinations; with the running Node.js (20), only the CI one.
  assert.deepEqual(names(select(ALL, { only: [{ tekton: 'v1.6.6' }], reference: false }, '20')), ['tekton=v1.6.6', 'node=22', 'node=24']);
  assert.deepEqual(names(select(ALL, { only: [{ tekton: 'v1.6.6', node: '20' }], reference: false }, '20')), ['tekton=v1.6.6']);
  // Running on Node.js 22: node=22 also matches the combinations that run the current Node.js.
  assert.deepEqual(names(select(ALL, { only: [{ node: '22' }], reference: true }, '22')), ['tekton=v1.6.6', 'tekton=v1.15.0', 'node=22']);
  assert.deepEqual(names(select(ALL, { only: [{ tekton: 'v1.15.0' }, { node: '24' }], reference: true }, '20')), ['tekton=v1.15.0', 'node=24']);
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
      '| tekton=v1.15.0     | v1.35.4    | v1.15.0          | v20.20.2 | 2     | 24/25        | 1      | 2 min 02 s | FAILED                                 |',
      '| node=22            | v1.35.4    | v1.6.6           | 22.x     | -     | -            | -      | -          | not run: no Node.js 22 on this machine |',
    ].join('\n'),
  );
});

test('the table by file, and the failures with their logs', () => {
  assert.equal(
    fileTable(RESULTS),
    [
      '| test file            | tekton=v1.6.6      | tekton=v1.15.0            |',
      '|----------------------|--------------------|---------------------------|',
      '| tekton.test.ts       | 14/14 (1 min 01 s) | 13/14 (1 min 01 s) FAILED |',
      '| hostile-refs.test.ts | 11/11 (1 min 01 s) | 11/11 (1 min 01 s)        |',
    ].join('\n'),
  );
  assert.deepEqual(failureList(RESULTS), ['tekton=v1.15.0 tekton.test.ts: tekton broke (log: dist/matrix/x/tekton.log)']);
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
    ['tekton=v1.15.0', 'v1.15.0', 'current', 'no', 'yes'],
    ['node=22', 'v1.6.6', '22', 'no', 'no: no Node.js 22 here'],
    ['node=24', 'v1.6.6', '24', 'no', 'no: no Node.js 24 here'],
  ]);
});
