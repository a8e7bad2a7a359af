/**
 * The internal cluster's Tekton version (src/controller/tekton-version.ts):
 * the state a pipelines-info ConfigMap says, what a failed re-read keeps,
 * the messages, the refusal of resolver references, the gauges, and the
 * follower's reporting (a log line and one Warning Event per change, never a
 * crash), and the same follower reading Tekton Results and Chains too.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import {
  advisoryGauge,
  advisoryMessage,
  pendingState,
  pipelinesReason,
  resolverRefusal,
  stateAfterRead,
  stateFromConfigMap,
  TektonVersion,
  versionLabel,
  versionReadiness,
  type ConfigMapLike,
} from '../../src/controller/tekton-version.js';
import { UNKNOWN_VERSION } from '../../src/tekton/advisories.js';
import { CHAINS, RESULTS } from '../../src/tekton/components.js';
import type { KubeObject } from '../../src/kube/client.js';

const SRC = 'tekton-pipelines/pipelines-info';
const cm = (version?: string): ConfigMapLike => ({ metadata: { name: 'pipelines-info', namespace: 'tekton-pipelines' }, data: version === undefined ? {} : { version } });
const REFUSE = { refuseResolversOnAdvisory: true };
const ALLOW = { refuseResolversOnAdvisory: false };

test('the state a ConfigMap says: a release (clean or with advisories), "devel", no data.version, no ConfigMap', () => {
  const clean = stateFromConfigMap(SRC, cm('v1.6.6'));
  assert.deepEqual(clean, { version: 'v1.6.6', advisories: [], source: SRC, settled: true });
  const old = stateFromConfigMap(SRC, cm(' v1.6.1\n'));
  assert.equal(old.version, 'v1.6.1');
  assert.deepEqual(old.advisories.map((a) => a.id), ['GHSA-94jr-7pqp-xhcq', 'GHSA-wjxp-xrpv-xpff', 'GHSA-m2cx-gpqf-qf74']);
  assert.equal(old.problem, undefined);
  const devel = stateFromConfigMap(SRC, cm('devel'));
  assert.equal(devel.version, 'devel');
  assert.deepEqual(devel.advisories, [UNKNOWN_VERSION]);
  assert.match(devel.problem!, /says version "devel", which is not a release version/);
  const empty = stateFromConfigMap(SRC, cm());
  assert.equal(empty.version, undefined);
  assert.deepEqual(empty.advisories, [UNKNOWN_VERSION]);
  assert.equal(empty.problem, `ConfigMap ${SRC} has no data.version`);
  const blank = stateFromConfigMap(SRC, cm('   '));
  assert.equal(blank.version, undefined);
  const none = stateFromConfigMap(SRC, undefined);
  assert.equal(none.problem, `there is no ConfigMap ${SRC}`);
  assert.deepEqual(none.advisories, [UNKNOWN_VERSION]);
  const noData = stateFromConfigMap(SRC, { metadata: {} });
  assert.deepEqual(noData.advisories, [UNKNOWN_VERSION]);
  const pending = pendingState(SRC);
  assert.equal(pending.settled, false);
  assert.deepEqual(pending.advisories, [UNKNOWN_VERSION]);
});

test('after a read: a failed re-read keeps the version read before; a 404 or a failed first read makes it unknown', () => {
  const good = stateAfterRead(undefined, SRC, { configMap: cm('v1.6.6') });
  assert.equal(good.version, 'v1.6.6');
  const blip = stateAfterRead(good, SRC, { error: 'HTTP 503: etcdserver: leader changed', code: 503 });
  assert.equal(blip.version, 'v1.6.6');
  assert.deepEqual(blip.advisories, []);
  assert.match(blip.problem!, /cannot be read: HTTP 503: etcdserver: leader changed; the version read before is kept/);
  const back = stateAfterRead(blip, SRC, { configMap: cm('v1.6.6') });
  assert.equal(back.problem, undefined);
  const gone = stateAfterRead(good, SRC, { error: 'HTTP 404', code: 404 });
  assert.equal(gone.version, undefined);
  assert.deepEqual(gone.advisories, [UNKNOWN_VERSION]);
  const forbidden = stateAfterRead(pendingState(SRC), SRC, { error: 'HTTP 403: configmaps "pipelines-info" is forbidden', code: 403 });
  assert.equal(forbidden.version, undefined);
  assert.equal(forbidden.settled, true);
  assert.match(forbidden.problem!, /forbidden/);
  const network = stateAfterRead(undefined, SRC, { error: 'connect ECONNREFUSED' });
  assert.deepEqual(network.advisories, [UNKNOWN_VERSION]);
  // An unknown version stays unknown on a failed re-read (there is nothing to keep).
  assert.deepEqual(stateAfterRead(stateFromConfigMap(SRC, cm('devel')), SRC, { error: 'timeout' }).advisories, [UNKNOWN_VERSION]);
});

test('messages: the version, each advisory by id, CVE and summary, and what to do', () => {
  const clean = advisoryMessage(stateFromConfigMap(SRC, cm('v1.6.6')));
  assert.equal(clean, `Tekton Pipelines v1.6.6 (ConfigMap ${SRC}): no known advisory`);
  const m = advisoryMessage(stateFromConfigMap(SRC, cm('v1.6.0')));
  assert.match(m, /^Tekton Pipelines v1\.6\.0 \(ConfigMap tekton-pipelines\/pipelines-info\) has known advisories in the resolvers this controller relies on: /);
  for (const s of ['GHSA-j5q5-j9gm-2w5c (CVE-2026-33211, critical: path traversal', 'GHSA-94jr-7pqp-xhcq (CVE-2026-40938, high:', 'GHSA-wjxp-xrpv-xpff (CVE-2026-40161, high:', 'GHSA-m2cx-gpqf-qf74 (CVE-2026-40924: the http resolver reads']) assert.ok(m.includes(s), s);
  assert.match(m, /Upgrade Tekton Pipelines to v1\.6\.2 or later of the 1\.6 line; see docs\/deploying\.md, "Supported Tekton versions"/);
  const unknown = advisoryMessage(stateFromConfigMap(SRC, undefined));
  assert.match(unknown, /^The Tekton Pipelines version of the internal cluster is unknown: there is no ConfigMap tekton-pipelines\/pipelines-info\. None of the advisories/);
  assert.match(unknown, /GHSA-j5q5-j9gm-2w5c\/CVE-2026-33211, GHSA-94jr-7pqp-xhcq\/CVE-2026-40938, GHSA-wjxp-xrpv-xpff\/CVE-2026-40161/);
  assert.match(unknown, /--tekton-namespace/);
  // A version with quotes or control characters is quoted safely, and cut.
  assert.ok(!advisoryMessage(stateFromConfigMap(SRC, cm('v1.6.0"\n<b>'))).includes('\n'));
});

test('readiness: an advisory check (never required), ok only without an advisory', () => {
  assert.deepEqual(versionReadiness(stateFromConfigMap(SRC, cm('v1.6.6'))), { name: 'tekton-version', ok: true, required: false, detail: `Tekton Pipelines v1.6.6 (ConfigMap ${SRC}): no known advisory` });
  for (const s of [stateFromConfigMap(SRC, cm('v1.6.1')), stateFromConfigMap(SRC, undefined), pendingState(SRC)]) {
    const r = versionReadiness(s);
    assert.equal(r.ok, false);
    assert.equal(r.required, false);
    assert.ok(r.detail);
  }
});

test('resolverRefusal: only with the switch, on a version with an advisory or one that cannot be told', () => {
  const clean = stateFromConfigMap(SRC, cm('v1.6.6'));
  const old = stateFromConfigMap(SRC, cm('v1.10.2'));
  const unknown = stateFromConfigMap(SRC, cm('devel'));
  assert.equal(resolverRefusal(clean, REFUSE), undefined);
  assert.equal(resolverRefusal(old, ALLOW), undefined);
  assert.equal(resolverRefusal(unknown, ALLOW), undefined);
  assert.equal(resolverRefusal(pendingState(SRC), ALLOW), undefined);
  const m = resolverRefusal(old, REFUSE)!;
  assert.equal(
    m,
    'resolver references are refused: Tekton Pipelines v1.10.2 on the internal cluster has known advisories in its resolvers (GHSA-94jr-7pqp-xhcq/CVE-2026-40938, GHSA-wjxp-xrpv-xpff/CVE-2026-40161, GHSA-m2cx-gpqf-qf74/CVE-2026-40924), and the controller runs with --refuse-resolvers-on-advisory. ' +
      "The internal cluster's administrators should upgrade Tekton Pipelines to v1.11.1 or later: the 1.10 line has no release with every fix known here (whether a 1.10 release after v1.10.2 fixes GHSA-wjxp-xrpv-xpff or GHSA-m2cx-gpqf-qf74 is not known here), or turn --refuse-resolvers-on-advisory off",
  );
  const u = resolverRefusal(unknown, REFUSE)!;
  assert.match(u, /^resolver references are refused: the Tekton Pipelines version of the internal cluster is unknown \(ConfigMap tekton-pipelines\/pipelines-info says version "devel"/);
  assert.match(u, /make ConfigMap tekton-pipelines\/pipelines-info readable with Tekton's release version/);
  // Not read yet: nothing is ruled out either.
  assert.match(resolverRefusal(pendingState(SRC), REFUSE)!, /is unknown \(not read yet\)/);
  // A failed re-read of a clean version does not refuse.
  assert.equal(resolverRefusal(stateAfterRead(clean, SRC, { error: 'timeout' }), REFUSE), undefined);
});

test('gauges: a bounded version label and one series per advisory of the table, plus unknown-version', () => {
  assert.equal(versionLabel(stateFromConfigMap(SRC, cm('v1.6.6'))), 'v1.6.6');
  assert.equal(versionLabel(stateFromConfigMap(SRC, cm('devel'))), 'devel');
  assert.equal(versionLabel(stateFromConfigMap(SRC, undefined)), 'unknown');
  assert.equal(versionLabel(stateFromConfigMap(SRC, cm('v1 6 6 <script>'))), 'unknown');
  assert.equal(versionLabel(stateFromConfigMap(SRC, cm('v'.repeat(200)))), 'unknown');
  assert.deepEqual(advisoryGauge(stateFromConfigMap(SRC, cm('v1.6.1'))), { 'GHSA-j5q5-j9gm-2w5c': 0, 'GHSA-94jr-7pqp-xhcq': 1, 'GHSA-wjxp-xrpv-xpff': 1, 'GHSA-m2cx-gpqf-qf74': 1, 'unknown-version': 0 });
  assert.deepEqual(advisoryGauge(stateFromConfigMap(SRC, cm('v1.6.6'))), { 'GHSA-j5q5-j9gm-2w5c': 0, 'GHSA-94jr-7pqp-xhcq': 0, 'GHSA-wjxp-xrpv-xpff': 0, 'GHSA-m2cx-gpqf-qf74': 0, 'unknown-version': 0 });
  assert.deepEqual(advisoryGauge(stateFromConfigMap(SRC, undefined)), { 'GHSA-j5q5-j9gm-2w5c': 0, 'GHSA-94jr-7pqp-xhcq': 0, 'GHSA-wjxp-xrpv-xpff': 0, 'GHSA-m2cx-gpqf-qf74': 0, 'unknown-version': 1 });
});

test('the follower: reads at start and on refresh, logs and records one Warning Event per change, survives a failing read', async () => {
  const lines: Array<{ level: number; msg: string; version?: string; advisories?: string[] }> = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  const answers: Array<ConfigMapLike | undefined | Error> = [cm('v1.6.1'), cm('v1.6.1'), new Error('connect ECONNREFUSED'), cm('v1.6.6'), undefined];
  const reads: string[] = [];
  const recorded: Array<{ obj: KubeObject; type: string; reason: string; message: string }> = [];
  let target: KubeObject | undefined;
  const tv = new TektonVersion({
    namespace: 'tekton-pipelines',
    log,
    refuseResolversOnAdvisory: true,
    refreshMs: 3_600_000,
    read: async (ns, name) => {
      reads.push(`${ns}/${name}`);
      const a = answers.shift();
      if (a instanceof Error) throw a;
      return a;
    },
    events: {
      record: async (obj, type, reason, message) => void recorded.push({ obj, type, reason, message }),
      target: () => target,
    },
  });
  assert.equal(tv.current().settled, false);
  await tv.start();
  tv.stop();
  assert.deepEqual(reads, ['tekton-pipelines/pipelines-info']);
  assert.equal(tv.current().version, 'v1.6.1');
  assert.deepEqual(tv.metrics(), { version: 'v1.6.1', advisories: { 'GHSA-j5q5-j9gm-2w5c': 0, 'GHSA-94jr-7pqp-xhcq': 1, 'GHSA-wjxp-xrpv-xpff': 1, 'GHSA-m2cx-gpqf-qf74': 1, 'unknown-version': 0 } });
  assert.equal(tv.readiness().ok, false);
  const warn = lines.filter((l) => l.level === 40);
  assert.equal(warn.length, 1);
  assert.match(warn[0]!.msg, /Tekton Pipelines v1\.6\.1 .* GHSA-94jr-7pqp-xhcq .* Requests with resolver references are refused meanwhile \(--refuse-resolvers-on-advisory\)\.$/);
  assert.deepEqual(warn[0]!.advisories, ['GHSA-94jr-7pqp-xhcq', 'GHSA-wjxp-xrpv-xpff', 'GHSA-m2cx-gpqf-qf74']);
  // No target yet (no InternalServicesConfig): the Event waits for one.
  assert.equal(recorded.length, 0);
  target = { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name: 'config', namespace: 'internal-services', uid: 'u1' } };
  await tv.refresh(); // the same version: no new log line, the waiting Event is recorded
  assert.equal(lines.filter((l) => l.level === 40).length, 1);
  assert.equal(recorded.length, 1);
  assert.equal(recorded[0]!.type, 'Warning');
  assert.equal(recorded[0]!.reason, 'TektonAdvisory');
  assert.equal(recorded[0]!.obj, target);
  assert.match(recorded[0]!.message, /GHSA-94jr-7pqp-xhcq \(CVE-2026-40938/);
  await tv.refresh(); // a failed re-read: the version is kept, nothing new is reported
  assert.equal(tv.current().version, 'v1.6.1');
  assert.match(tv.current().problem!, /ECONNREFUSED/);
  assert.equal(recorded.length, 1);
  await tv.refresh(); // upgraded: an info line, no Event
  assert.equal(tv.current().version, 'v1.6.6');
  assert.equal(tv.readiness().ok, true);
  assert.ok(lines.some((l) => l.level === 30 && /Tekton Pipelines v1\.6\.6 .*no known advisory/.test(l.msg)));
  assert.equal(recorded.length, 1);
  await tv.refresh(); // the ConfigMap is gone: unknown
  assert.equal(tv.current().version, undefined);
  assert.deepEqual(tv.metrics().version, 'unknown');
  assert.equal(tv.metrics().advisories['unknown-version'], 1);
  assert.equal(recorded.length, 2);
  assert.equal(recorded[1]!.reason, 'TektonVersionUnknown');
  assert.match(lines.filter((l) => l.level === 40).at(-1)!.msg, /version of the internal cluster is unknown: there is no ConfigMap tekton-pipelines\/pipelines-info/);
});

test('the follower re-reads on its own every refresh period', async () => {
  let n = 0;
  const tv = new TektonVersion({ namespace: 'openshift-pipelines', log: pino({ level: 'silent' }), refreshMs: 20, read: async () => (n++ < 2 ? cm('v1.6.0') : cm('v1.6.6')) });
  await tv.start();
  assert.equal(tv.current().version, 'v1.6.0');
  assert.equal(tv.current().source, 'openshift-pipelines/pipelines-info');
  const deadline = Date.now() + 5_000;
  while (tv.current().version !== 'v1.6.6' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  tv.stop();
  assert.equal(tv.current().version, 'v1.6.6');
});

test('with Results and Chains: one read of each info ConfigMap per refresh, a check, a log line and a Warning Event per component', async () => {
  const lines: Array<{ level: number; msg: string; component?: string; reason?: string }> = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  // What each ConfigMap says, read by read N (the last answer repeats).
  const answers: Record<string, Array<ConfigMapLike | undefined | Error>> = {
    'tekton-pipelines/pipelines-info': [cm('v1.6.6')],
    'tekton-pipelines/tekton-results-info': [undefined, cm('v0.15.0'), cm('v0.14.2'), Object.assign(new Error('HTTP 503'), { code: 503 }), cm('v0.21.0')],
    'tekton-chains/chains-info': [cm('devel'), cm('v0.29.1'), cm('v0.29.1'), cm('v0.29.1'), undefined],
  };
  const reads: string[] = [];
  const recorded: Array<{ reason: string; message: string }> = [];
  const target: KubeObject = { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name: 'config', namespace: 'internal-services', uid: 'u1' } };
  const tv = new TektonVersion({
    namespace: 'tekton-pipelines',
    log,
    refreshMs: 3_600_000,
    components: [
      { component: RESULTS, namespace: 'tekton-pipelines' },
      { component: CHAINS, namespace: 'tekton-chains' },
    ],
    read: async (ns, name) => {
      const key = `${ns}/${name}`;
      reads.push(key);
      const list = answers[key]!;
      const a = list.length > 1 ? list.shift() : list[0];
      if (a instanceof Error) throw a;
      return a;
    },
    events: { record: async (_obj, _type, reason, message) => void recorded.push({ reason, message }), target: () => target },
  });
  const names = () => tv.readinessChecks().map((c) => `${c.name}:${c.ok}`);
  const status = () => Object.fromEntries(Object.entries(tv.componentStatus()).map(([c, r]) => [c, Object.keys(r).find((k) => r[k] === 1)]));
  assert.deepEqual(names(), ['tekton-version:false', 'tekton-results-version:false', 'tekton-chains-version:false'], 'nothing is known before the first read');
  assert.deepEqual(status(), { pipelines: 'unknown', results: 'unknown', chains: 'unknown' });

  await tv.start();
  tv.stop();
  assert.deepEqual(reads.sort(), ['tekton-chains/chains-info', 'tekton-pipelines/pipelines-info', 'tekton-pipelines/tekton-results-info']);
  // Results absent: not installed, no fault; Chains "devel": unknown, reported.
  assert.deepEqual(names(), ['tekton-version:true', 'tekton-results-version:true', 'tekton-chains-version:false']);
  assert.deepEqual(status(), { pipelines: 'ok', results: 'not_installed', chains: 'unknown' });
  assert.deepEqual(tv.componentStatus()['results'], { ok: 0, not_installed: 1, too_old: 0, newer_than_tested: 0, unknown: 0 });
  assert.match(tv.readinessChecks()[1]!.detail!, /^Tekton Results is not installed \(there is no ConfigMap tekton-pipelines\/tekton-results-info\)$/);
  assert.deepEqual(recorded.map((e) => e.reason), ['TektonComponentVersionUnknown']);
  assert.match(recorded[0]!.message, /^The Tekton Chains version cannot be told: ConfigMap tekton-chains\/chains-info says version "devel"/);
  assert.ok(lines.some((l) => l.level === 30 && l.component === 'results' && l.reason === 'not_installed'));
  assert.ok(lines.some((l) => l.level === 40 && l.component === 'chains' && l.reason === 'unknown'));

  await tv.refresh(); // both in range: info lines, no Event
  assert.deepEqual(status(), { pipelines: 'ok', results: 'ok', chains: 'ok' });
  assert.deepEqual(names(), ['tekton-version:true', 'tekton-results-version:true', 'tekton-chains-version:true']);
  assert.equal(recorded.length, 1);
  assert.equal(tv.components()[0]!.version, 'v0.15.0');

  await tv.refresh(); // Results downgraded below the range: one Event, naming it
  assert.deepEqual(status(), { pipelines: 'ok', results: 'too_old', chains: 'ok' });
  assert.equal(tv.readinessChecks()[1]!.ok, false);
  assert.deepEqual(recorded.map((e) => e.reason), ['TektonComponentVersionUnknown', 'TektonComponentUnsupported']);
  assert.match(recorded[1]!.message, /^Tekton Results v0\.14\.2 \(ConfigMap tekton-pipelines\/tekton-results-info\) is older than supported/);

  await tv.refresh(); // a failed re-read of Results: too old is kept, nothing new is recorded
  assert.deepEqual(status(), { pipelines: 'ok', results: 'too_old', chains: 'ok' });
  assert.match(tv.components()[0]!.problem!, /HTTP 503; what was read before is kept/);
  assert.equal(recorded.length, 2);

  await tv.refresh(); // Results newer than tested (advisory, passing), Chains removed (not installed)
  assert.deepEqual(status(), { pipelines: 'ok', results: 'newer_than_tested', chains: 'not_installed' });
  assert.deepEqual(names(), ['tekton-version:true', 'tekton-results-version:true', 'tekton-chains-version:true']);
  assert.deepEqual(recorded.map((e) => e.reason), ['TektonComponentVersionUnknown', 'TektonComponentUnsupported', 'TektonComponentNewerThanTested']);
  assert.match(recorded[2]!.message, /^Tekton Results v0\.21\.0 .* is newer than tested/);
  // Each Pipelines read is one get: five refreshes, five reads of each ConfigMap.
  assert.equal(reads.filter((r) => r.endsWith('/pipelines-info')).length, 5);
  assert.equal(reads.filter((r) => r.endsWith('/chains-info')).length, 5);
});

test('the Pipelines reason of the shared gauge follows its advisories', () => {
  assert.equal(pipelinesReason(stateFromConfigMap(SRC, cm('v1.6.6'))), 'ok');
  assert.equal(pipelinesReason(stateFromConfigMap(SRC, cm('v1.6.1'))), 'advisory');
  assert.equal(pipelinesReason(stateFromConfigMap(SRC, cm('devel'))), 'unknown');
  assert.equal(pipelinesReason(stateFromConfigMap(SRC, undefined)), 'unknown');
  assert.equal(pipelinesReason(pendingState(SRC)), 'unknown');
});
