/** The per-file reporter (test/reporters/): durations, and failures repeated at the end of the log. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const reporters = resolve(import.meta.dirname, '../reporters');

test('a failed test is named again, with its error, after the durations table of several runs', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'reporter-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const passing = join(dir, 'passing.test.mjs');
  const failing = join(dir, 'failing.test.mjs');
  writeFileSync(passing, "import { test } from 'node:test';\ntest('fine', () => {});\n");
  writeFileSync(
    failing,
    "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\n" +
      "test('also fine', () => {});\ntest('the shard never answered', () => { assert.equal(1, 2, 'kcp exited with code 3: port in use'); });\n",
  );
  const durations = join(dir, 'durations.jsonl');
  // Without the parent runner's NODE_TEST_CONTEXT: the child would report to it instead of running its reporters.
  const { NODE_TEST_CONTEXT: _parent, ...inherited } = process.env;
  const env = { ...inherited, TEST_DURATIONS_FILE: durations };
  for (const file of [passing, failing]) {
    spawnSync(process.execPath, ['--test', `--test-reporter=${join(reporters, 'file-durations.js')}`, '--test-reporter-destination=stderr', file], { env, cwd: dir });
  }
  const lines = readFileSync(durations, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.equal(lines.filter((l) => 'seconds' in l).length, 2);
  assert.equal(lines.filter((l) => 'failure' in l).length, 1);

  const printed = execFileSync(process.execPath, [join(reporters, 'print-durations.js'), durations], { cwd: dir, encoding: 'utf8' });
  const [table, failures] = printed.split('Failed tests (1), repeated from above:');
  assert.match(table ?? '', /failing\.test\.mjs\s+\S+\s+1\s+1/);
  assert.match(table ?? '', /passing\.test\.mjs\s+\S+\s+1\s+0/);
  assert.ok(failures, printed);
  assert.match(failures, /✖ failing\.test\.mjs: the shard never answered/);
  assert.match(failures, /kcp exited with code 3: port in use/);
  assert.doesNotMatch(failures, /also fine/);
});

test('a run with no failure prints no failure list', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'reporter-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const durations = join(dir, 'durations.jsonl');
  writeFileSync(durations, `${JSON.stringify({ file: 'a.test.js', seconds: 1, passed: 2, failed: 0 })}\n`);
  const printed = execFileSync(process.execPath, [join(reporters, 'print-durations.js'), durations], { encoding: 'utf8' });
  assert.match(printed, /a\.test\.js/);
  assert.doesNotMatch(printed, /Failed tests/);
});
