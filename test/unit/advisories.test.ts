/**
 * The advisories of Tekton Pipelines against a version (src/tekton/advisories.ts):
 * every boundary of the table, versions that are not releases, and the
 * administrators' advice.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../../src/util/repo.js';
import {
  ADVISORIES,
  advisoriesFor,
  compareTektonVersions,
  parseTektonVersion,
  SUPPORTED_FROM,
  TESTED_VERSION,
  UNKNOWN_VERSION,
  upgradeAdvice,
} from '../../src/tekton/advisories.js';

const PATH = 'GHSA-j5q5-j9gm-2w5c'; // CVE-2026-33211, pathInRepo
const REV = 'GHSA-94jr-7pqp-xhcq'; // CVE-2026-40938, revision
const TOKEN = 'GHSA-wjxp-xrpv-xpff'; // CVE-2026-40161, serverURL
const HTTP = 'GHSA-m2cx-gpqf-qf74'; // CVE-2026-40924, the http resolver's unbounded body

const ids = (v: string) => advisoriesFor(v).map((a) => a.id);

test('the table: three advisories of the git resolver and one of the http resolver, each with its CVE and a fix from a later line on', () => {
  assert.deepEqual(
    ADVISORIES.map((a) => [a.id, a.cve, a.severity]),
    [
      [PATH, 'CVE-2026-33211', 'critical'],
      [REV, 'CVE-2026-40938', 'high'],
      [TOKEN, 'CVE-2026-40161', 'high'],
      [HTTP, 'CVE-2026-40924', 'unknown'],
    ],
  );
  for (const a of ADVISORIES) {
    assert.equal(a.kind, 'advisory');
    assert.match(a.component, /^(git|http) resolver/);
    assert.ok(a.reliance && a.evidence && a.summary);
    assert.equal(a.url, `https://github.com/tektoncd/pipeline/security/advisories/${a.id}`);
    assert.ok(parseTektonVersion(a.fixedFrom));
    for (const [line, fix] of Object.entries(a.lines)) {
      if (fix.state === 'fixed') assert.ok(fix.in.startsWith(`v${line}.`), `${a.id}: ${fix.in} is on line ${line}`);
      if (fix.state === 'unknown') assert.ok(fix.lacking.startsWith(`v${line}.`), `${a.id}: ${fix.lacking} is on line ${line}`);
    }
  }
});

test('every boundary of the table', () => {
  const cases: Array<[string, string[]]> = [
    // 0.x: go-git's in-memory checkout (no path traversal, no git command line); the token went to any serverURL; the http body had no limit.
    ['v0.50.0', [TOKEN, HTTP]],
    ['v0.70.0', [TOKEN, HTTP]],
    // 1.0 line: pathInRepo fixed in 1.0.1, revision in 1.0.2; the token fix is not established there.
    ['v1.0.0', [PATH, REV, TOKEN, HTTP]],
    ['v1.0.1', [REV, TOKEN, HTTP]],
    ['v1.0.2', [TOKEN, HTTP]],
    ['v1.0.9', [TOKEN, HTTP]],
    // Lines without a backport: affected until a later line.
    ['v1.1.0', [PATH, REV, TOKEN, HTTP]],
    ['v1.2.3', [PATH, REV, TOKEN, HTTP]],
    // 1.3 line: 1.3.3 pathInRepo, 1.3.4 the other two.
    ['v1.3.2', [PATH, REV, TOKEN, HTTP]],
    ['v1.3.3', [REV, TOKEN, HTTP]],
    ['v1.3.4', []],
    ['v1.4.0', [PATH, REV, TOKEN, HTTP]],
    ['v1.5.9', [PATH, REV, TOKEN, HTTP]],
    // 1.6 line (the tested one): 1.6.0 all, 1.6.1 two, 1.6.2 and later none.
    ['v1.6.0', [PATH, REV, TOKEN, HTTP]],
    ['v1.6.1', [REV, TOKEN, HTTP]],
    ['v1.6.2', []],
    ['v1.6.5', []],
    ['v1.6.6', []],
    ['v1.7.0', [PATH, REV, TOKEN, HTTP]],
    ['v1.8.1', [PATH, REV, TOKEN, HTTP]],
    // 1.9 line: 1.9.2 pathInRepo, 1.9.3 revision; the token and http fixes there are not established: counted as affected.
    ['v1.9.1', [PATH, REV, TOKEN, HTTP]],
    ['v1.9.2', [REV, TOKEN, HTTP]],
    ['v1.9.3', [TOKEN, HTTP]],
    ['v1.9.7', [TOKEN, HTTP]],
    // 1.10 line: no fix for the revision injection at all.
    ['v1.10.0', [PATH, REV, TOKEN, HTTP]],
    ['v1.10.1', [PATH, REV, TOKEN, HTTP]],
    ['v1.10.2', [REV, TOKEN, HTTP]],
    ['v1.10.9', [REV, TOKEN, HTTP]],
    // 1.11.0 has the pathInRepo fix from the start; 1.11.1 the rest.
    ['v1.11.0', [REV, TOKEN, HTTP]],
    ['v1.11.1', []],
    ['v1.12.0', []],
    ['v1.15.0', []],
    ['v2.0.0', []],
  ];
  for (const [v, want] of cases) assert.deepEqual(ids(v), want, v);
});

test('pre-releases sort below their release; the "v" and build metadata are optional', () => {
  assert.deepEqual(ids('v1.6.2-rc.1'), [REV, TOKEN, HTTP]);
  assert.deepEqual(ids('v1.12.0-rc.1'), [REV, TOKEN, HTTP]);
  assert.deepEqual(ids('1.6.6'), []);
  assert.deepEqual(ids(' v1.6.6\n'), []);
  assert.deepEqual(ids('v1.6.6+build.7'), []);
  assert.deepEqual(ids('v1.6.1+build.7'), [REV, TOKEN, HTTP]);
  const p = (s: string) => parseTektonVersion(s)!;
  assert.ok(compareTektonVersions(p('v1.6.2-rc.1'), p('v1.6.2')) < 0);
  assert.ok(compareTektonVersions(p('v1.6.2-rc.1'), p('v1.6.1')) > 0);
  assert.ok(compareTektonVersions(p('v1.10.0'), p('v1.9.9')) > 0, 'numeric, not textual');
  assert.equal(compareTektonVersions(p('v1.6.6'), p('1.6.6+x')), 0);
});

test('what is not a release version gets its own answer, never "none"', () => {
  for (const v of ['devel', '', '   ', 'v1.6', '1', 'v1.6.6.1', 'latest', 'v1.06.6', 'v-1.6.6', 'v1.6.6 garbage', 'x'.repeat(10_000), '1.6.6-', 'v1.6.6-rc.1/../x']) {
    const got = advisoriesFor(v);
    assert.deepEqual(got, [UNKNOWN_VERSION], JSON.stringify(v.slice(0, 40)));
    assert.equal(got[0]!.kind, 'unknown-version');
  }
  assert.equal(parseTektonVersion('devel'), undefined);
  assert.match(UNKNOWN_VERSION.summary, /GHSA-j5q5-j9gm-2w5c, GHSA-94jr-7pqp-xhcq, GHSA-wjxp-xrpv-xpff/);
});

test('the tested version is the harness\'s (hack/envtest/versions.env) and has no known advisory', () => {
  const env = readFileSync(join(repoRoot(), 'hack', 'envtest', 'versions.env'), 'utf8');
  assert.equal(/^TEKTON_VERSION=(\S+)$/m.exec(env)?.[1], TESTED_VERSION);
  assert.deepEqual(advisoriesFor(TESTED_VERSION), []);
  assert.deepEqual(advisoriesFor(SUPPORTED_FROM), []);
  // The supported range starts there: the release before it on the line is not clean.
  assert.notDeepEqual(advisoriesFor('v1.6.1'), []);
});

test('the advice: the first release of the same line with every fix, else the first later one', () => {
  assert.equal(upgradeAdvice('v1.6.6'), undefined);
  assert.equal(upgradeAdvice('v1.6.0'), 'upgrade Tekton Pipelines to v1.6.2 or later of the 1.6 line');
  assert.equal(upgradeAdvice('v1.6.1'), 'upgrade Tekton Pipelines to v1.6.2 or later of the 1.6 line');
  assert.equal(upgradeAdvice('v1.3.0'), 'upgrade Tekton Pipelines to v1.3.4 or later of the 1.3 line');
  assert.equal(upgradeAdvice('v1.10.2'), `upgrade Tekton Pipelines to v1.11.1 or later: the 1.10 line has no release with every fix known here (whether a 1.10 release after v1.10.2 fixes ${TOKEN} or ${HTTP} is not known here)`);
  assert.equal(upgradeAdvice('v1.9.3'), `upgrade Tekton Pipelines to v1.11.1 or later: the 1.9 line has no release with every fix known here (whether a 1.9 release after v1.9.2 fixes ${TOKEN} or ${HTTP} is not known here)`);
  assert.equal(upgradeAdvice('v1.11.0'), 'upgrade Tekton Pipelines to v1.11.1 or later of the 1.11 line');
  assert.equal(upgradeAdvice('v1.7.0'), 'upgrade Tekton Pipelines to v1.11.1 or later: the 1.7 line has no release with every fix known here');
  assert.equal(upgradeAdvice('v1.12.0-rc.1'), 'upgrade Tekton Pipelines to v1.12.0 or later of the 1.12 line');
  // 0.x: nothing there is fixed; the advice does not go below the supported range.
  assert.equal(upgradeAdvice('v0.70.0'), 'upgrade Tekton Pipelines to v1.6.2 or later: the 0.70 line has no release with every fix known here');
  assert.equal(upgradeAdvice('devel'), 'run a release of Tekton Pipelines with every fix (v1.6.2 or later of the 1.6 line, or v1.12.0 or later) whose pipelines-info ConfigMap says its version (data.version)');
});
