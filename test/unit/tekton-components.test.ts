/**
 * Tekton Results and Chains against their supported ranges
 * (src/tekton/components.ts): the verdict on every kind of version (in
 * range, too old, newer than tested, not a release), the states a read
 * leaves (absent, garbled, unreadable, a failed re-read), the messages, the
 * Event reasons and the gauge's bounded labels.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../../src/util/repo.js';
import {
  CHAINS,
  COMPONENT_REASONS,
  componentAfterRead,
  componentEventReason,
  componentFromConfigMap,
  componentMessage,
  componentOk,
  componentPending,
  componentReportKey,
  RANGED_COMPONENTS,
  rangeVerdict,
  reasonGauge,
  RESULTS,
  shownVersion,
  type ComponentState,
} from '../../src/tekton/components.js';

const RSRC = 'tekton-pipelines/tekton-results-info';
const CSRC = 'tekton-chains/chains-info';
const cm = (version?: string): { data: Record<string, string> } => ({ data: version === undefined ? {} : { version } });

test('the ranges: Results v0.15.0 through v0.20.x, Chains v0.22.0 through v0.29.x; the versions the harness pins (what CI runs) are inside them', () => {
  assert.deepEqual([RESULTS.supportedFrom, RESULTS.supportedThrough, CHAINS.supportedFrom, CHAINS.supportedThrough], ['v0.15.0', '0.20', 'v0.22.0', '0.29']);
  const env = readFileSync(join(repoRoot(), 'hack', 'platform', 'versions.env'), 'utf8');
  assert.equal(rangeVerdict(RESULTS, /^RESULTS_VERSION=(\S+)$/m.exec(env)![1]!), 'ok', 'the Results CI runs is supported');
  assert.equal(rangeVerdict(CHAINS, /^CHAINS_VERSION=(\S+)$/m.exec(env)![1]!), 'ok', 'the Chains CI runs is supported');
  assert.deepEqual(RANGED_COMPONENTS.map((c) => [c.id, c.configMap, c.releaseNamespace, c.infoRole]), [
    ['results', 'tekton-results-info', 'tekton-pipelines', 'tekton-results-info'],
    ['chains', 'chains-info', 'tekton-chains', 'tekton-chains-info'],
  ]);
});

test('the verdict on a version, at every boundary', () => {
  const cases: Array<[typeof RESULTS, string, ReturnType<typeof rangeVerdict>]> = [
    // Results
    [RESULTS, 'v0.14.9', 'too_old'],
    [RESULTS, 'v0.15.0-rc.1', 'too_old'],
    [RESULTS, 'v0.1.0', 'too_old'],
    [RESULTS, 'v0.15.0', 'ok'],
    [RESULTS, '0.15.0', 'ok'],
    [RESULTS, 'v0.15.3+build.1', 'ok'],
    [RESULTS, 'v0.17.2', 'ok'],
    [RESULTS, 'v0.20.0', 'ok'],
    [RESULTS, 'v0.20.9', 'ok'],
    [RESULTS, 'v0.21.0-rc.1', 'newer_than_tested'],
    [RESULTS, 'v0.21.0', 'newer_than_tested'],
    [RESULTS, 'v0.100.0', 'newer_than_tested'],
    [RESULTS, 'v1.0.0', 'newer_than_tested'],
    [RESULTS, 'devel', 'unknown'],
    [RESULTS, 'v0.20', 'unknown'],
    [RESULTS, 'latest', 'unknown'],
    [RESULTS, '', 'unknown'],
    // Chains
    [CHAINS, 'v0.21.3', 'too_old'],
    [CHAINS, 'v0.22.0-rc.2', 'too_old'],
    [CHAINS, 'v0.22.0', 'ok'],
    [CHAINS, 'v0.28.1', 'ok'],
    [CHAINS, 'v0.29.1', 'ok'],
    [CHAINS, 'v0.29.99', 'ok'],
    [CHAINS, 'v0.30.0', 'newer_than_tested'],
    [CHAINS, 'v1.0.0', 'newer_than_tested'],
    [CHAINS, 'v0.29.1; rm -rf /', 'unknown'],
  ];
  for (const [c, v, want] of cases) assert.equal(rangeVerdict(c, v), want, `${c.name} ${JSON.stringify(v)}`);
});

test('the state a ConfigMap says: in range, too old, newer than tested, garbled, no data.version, absent', () => {
  assert.deepEqual(componentFromConfigMap(RESULTS, RSRC, cm('v0.20.0')), { component: 'results', source: RSRC, version: 'v0.20.0', reason: 'ok', settled: true });
  assert.deepEqual(componentFromConfigMap(CHAINS, CSRC, cm(' v0.22.0\n')), { component: 'chains', source: CSRC, version: 'v0.22.0', reason: 'ok', settled: true });
  assert.equal(componentFromConfigMap(RESULTS, RSRC, cm('v0.14.0')).reason, 'too_old');
  assert.equal(componentFromConfigMap(CHAINS, CSRC, cm('v0.30.1')).reason, 'newer_than_tested');
  assert.equal(componentFromConfigMap(CHAINS, CSRC, cm('v0.30.1')).problem, undefined);
  const devel = componentFromConfigMap(CHAINS, CSRC, cm('devel'));
  assert.equal(devel.reason, 'unknown');
  assert.equal(devel.version, 'devel', 'the value read is kept as read');
  assert.match(devel.problem!, /^ConfigMap tekton-chains\/chains-info says version "devel", which is not a release version like v0\.22\.0/);
  const garbled = componentFromConfigMap(RESULTS, RSRC, cm('v0.2\u0000"\n<x>'));
  assert.equal(garbled.version, 'v0.2\u0000"\n<x>');
  assert.match(garbled.problem!, /says version "v0\.2\\u0000\\"\\n<x>"/, 'control characters and quotes are shown escaped');
  const empty = componentFromConfigMap(RESULTS, RSRC, cm());
  assert.deepEqual([empty.reason, empty.version, empty.problem], ['unknown', undefined, `ConfigMap ${RSRC} has no data.version`]);
  assert.equal(componentFromConfigMap(RESULTS, RSRC, cm('  ')).reason, 'unknown');
  assert.equal(componentFromConfigMap(RESULTS, RSRC, {}).reason, 'unknown');
  const absent = componentFromConfigMap(CHAINS, CSRC, undefined);
  assert.deepEqual(absent, { component: 'chains', source: CSRC, version: undefined, reason: 'not_installed', settled: true });
  const pending = componentPending(RESULTS, RSRC);
  assert.deepEqual([pending.reason, pending.settled, pending.problem], ['unknown', false, 'not read yet']);
});

test('after a read: 404 is not installed; a failed first read is unknown; a failed re-read keeps what was read, and says why', () => {
  const ok = componentAfterRead(RESULTS, undefined, RSRC, { configMap: cm('v0.18.0') });
  assert.equal(ok.reason, 'ok');
  const blip = componentAfterRead(RESULTS, ok, RSRC, { error: 'HTTP 503: etcdserver: leader changed', code: 503 });
  assert.deepEqual([blip.reason, blip.version], ['ok', 'v0.18.0']);
  assert.match(blip.problem!, /^ConfigMap tekton-pipelines\/tekton-results-info cannot be read: HTTP 503: etcdserver: leader changed; what was read before is kept$/);
  assert.equal(componentReportKey(blip), componentReportKey(ok), 'a kept verdict is no change to report');
  const back = componentAfterRead(RESULTS, blip, RSRC, { configMap: cm('v0.18.0') });
  assert.equal(back.problem, undefined);
  const gone = componentAfterRead(RESULTS, ok, RSRC, { error: 'HTTP 404', code: 404 });
  assert.deepEqual([gone.reason, gone.version], ['not_installed', undefined]);
  const forbidden = componentAfterRead(CHAINS, componentPending(CHAINS, CSRC), CSRC, { error: 'HTTP 403: configmaps "chains-info" is forbidden', code: 403 });
  assert.deepEqual([forbidden.reason, forbidden.settled], ['unknown', true]);
  assert.match(forbidden.problem!, /cannot be read: HTTP 403: configmaps "chains-info" is forbidden$/);
  const network = componentAfterRead(CHAINS, undefined, CSRC, { error: 'connect ECONNREFUSED' });
  assert.equal(network.reason, 'unknown');
  // Not installed, then a passing error: still not installed (with why the re-read failed).
  const stillAbsent = componentAfterRead(CHAINS, componentFromConfigMap(CHAINS, CSRC, undefined), CSRC, { error: 'timeout' });
  assert.equal(stillAbsent.reason, 'not_installed');
  assert.match(stillAbsent.problem!, /timeout; what was read before is kept/);
  // Too old stays too old through a failed re-read (nothing is lost).
  const old = componentAfterRead(CHAINS, componentFromConfigMap(CHAINS, CSRC, cm('v0.20.0')), CSRC, { error: 'timeout' });
  assert.deepEqual([old.reason, old.version], ['too_old', 'v0.20.0']);
  // Unknown stays unknown; the new reason for it replaces the old.
  const unk = componentAfterRead(CHAINS, componentFromConfigMap(CHAINS, CSRC, cm('devel')), CSRC, { error: 'timeout' });
  assert.equal(unk.reason, 'unknown');
  assert.match(unk.problem!, /cannot be read: timeout$/);
});

test('messages name the component, the version, where it was read, and why', () => {
  const msg = (c: typeof RESULTS, s: ComponentState) => componentMessage(c, s);
  assert.equal(msg(RESULTS, componentFromConfigMap(RESULTS, RSRC, cm('v0.20.0'))), `Tekton Results v0.20.0 (ConfigMap ${RSRC}): supported (v0.15.0 through v0.20.x)`);
  assert.equal(msg(CHAINS, componentFromConfigMap(CHAINS, CSRC, undefined)), `Tekton Chains is not installed (there is no ConfigMap ${CSRC})`);
  const old = msg(CHAINS, componentFromConfigMap(CHAINS, CSRC, cm('v0.21.0')));
  assert.match(old, /^Tekton Chains v0\.21\.0 \(ConfigMap tekton-chains\/chains-info\) is older than supported: the supported range is v0\.22\.0 through v0\.29\.x, and with spec\.chains\.enabled/);
  assert.match(old, /Upgrade Tekton Chains to v0\.22\.0 or later; see docs\/deploying\.md, "Supported Tekton versions"$/);
  const newer = msg(RESULTS, componentFromConfigMap(RESULTS, RSRC, cm('v0.21.0')));
  assert.match(newer, /^Tekton Results v0\.21\.0 \(ConfigMap tekton-pipelines\/tekton-results-info\) is newer than tested: the supported range is v0\.15\.0 through v0\.20\.x\. It is expected to work/);
  const unk = msg(RESULTS, componentFromConfigMap(RESULTS, RSRC, cm('devel')));
  assert.match(unk, /^The Tekton Results version cannot be told: ConfigMap tekton-pipelines\/tekton-results-info says version "devel"/);
  assert.match(unk, /the release's Role tekton-results-info lets every authenticated user get it/);
  const kept = msg(RESULTS, componentAfterRead(RESULTS, componentFromConfigMap(RESULTS, RSRC, cm('v0.19.0')), RSRC, { error: 'timeout' }));
  assert.match(kept, /^Tekton Results v0\.19\.0 .*supported .*\(ConfigMap tekton-pipelines\/tekton-results-info cannot be read: timeout; what was read before is kept\)$/);
  // A garbled or huge version never breaks a line, and says how long it was.
  const huge = msg(CHAINS, componentFromConfigMap(CHAINS, CSRC, cm(`${'x'.repeat(500)}\n`)));
  assert.ok(!huge.includes('\n'));
  assert.match(huge, /x{64}… \(500 characters\)/);
  assert.equal(shownVersion('v0.1\n'), 'v0.1\\n');
});

test('readiness passes in range, not installed and newer than tested; it fails too old, unknown, and before the first read', () => {
  const ok = (c: typeof RESULTS, v: string | undefined) => componentOk(componentFromConfigMap(c, RSRC, v === undefined ? undefined : cm(v)));
  assert.equal(ok(RESULTS, 'v0.15.0'), true);
  assert.equal(ok(RESULTS, undefined), true);
  assert.equal(ok(RESULTS, 'v0.21.0'), true);
  assert.equal(ok(RESULTS, 'v0.14.0'), false);
  assert.equal(ok(CHAINS, 'devel'), false);
  assert.equal(componentOk(componentPending(CHAINS, CSRC)), false);
});

test('a Warning Event for everything outside the range, none in range or when not installed', () => {
  const reason = (c: typeof RESULTS, v: string | undefined) => componentEventReason(componentFromConfigMap(c, CSRC, v === undefined ? undefined : cm(v)));
  assert.equal(reason(CHAINS, 'v0.22.0'), undefined);
  assert.equal(reason(CHAINS, undefined), undefined);
  assert.equal(reason(CHAINS, 'v0.21.0'), 'TektonComponentUnsupported');
  assert.equal(reason(CHAINS, 'v0.30.0'), 'TektonComponentNewerThanTested');
  assert.equal(reason(CHAINS, 'devel'), 'TektonComponentVersionUnknown');
});

test('the gauge: one series per reason a component can have, 1 for its reason', () => {
  assert.deepEqual(reasonGauge('results', 'too_old'), { ok: 0, not_installed: 0, too_old: 1, newer_than_tested: 0, unknown: 0 });
  assert.deepEqual(reasonGauge('chains', 'not_installed'), { ok: 0, not_installed: 1, too_old: 0, newer_than_tested: 0, unknown: 0 });
  assert.deepEqual(reasonGauge('pipelines', 'advisory'), { ok: 0, advisory: 1, unknown: 0 });
  // Bounded: whatever is read, the labels are these.
  const labels = new Set(Object.values(COMPONENT_REASONS).flat());
  assert.deepEqual([...labels].sort(), ['advisory', 'newer_than_tested', 'not_installed', 'ok', 'too_old', 'unknown']);
  for (const v of ['v0.0.1', 'v9.9.9', 'devel', 'x'.repeat(300), '']) {
    const s = componentFromConfigMap(RESULTS, RSRC, cm(v));
    assert.ok(COMPONENT_REASONS.results.includes(s.reason), v);
  }
});
