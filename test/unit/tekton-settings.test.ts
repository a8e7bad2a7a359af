/**
 * The Tekton settings that change what a reference means
 * (src/tekton/settings.ts, src/controller/tekton-settings.ts): a table of
 * ConfigMap data to the settings in force, the messages and the gauge, and
 * the follower on a 404, a 403, a failed re-read and a change.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { describeSettings, goParseBool, parseDefaultResolver, parseResolverFlags, settingsGauge, type ConfigMapData, type DefaultResolver, type ResolverFlags } from '../../src/tekton/settings.js';
import { defaultResolversNamespace, pendingSettings, settingsAfterRead, settingsReadiness, TektonSettingsFollower } from '../../src/controller/tekton-settings.js';
import type { ConfigMapLike } from '../../src/controller/tekton-version.js';

const DEF = 'tekton-pipelines/config-defaults';
const FLAGS = 'tekton-pipelines-resolvers/resolvers-feature-flags';
const SOURCES = { defaults: DEF, flags: FLAGS };
const ALL_ON = { git: true, hub: true, bundles: true, cluster: true, http: true };
/** config-defaults and resolvers-feature-flags as Tekton v1.6.6's release ships them. */
const RELEASE_DEFAULTS = { _example: '# default-resolver-type contains the default resolver type to be used in the cluster,\ndefault-resolver-type:\n' };
const RELEASE_FLAGS = { 'enable-bundles-resolver': 'true', 'enable-hub-resolver': 'true', 'enable-git-resolver': 'true', 'enable-cluster-resolver': 'true' };

test('default-resolver-type: the table of config-defaults data to the setting in force', () => {
  const cases: Array<[string, ConfigMapData, DefaultResolver]> = [
    ['the release (only _example)', RELEASE_DEFAULTS, { kind: 'unset' }],
    ['no data at all', {}, { kind: 'unset' }],
    ['the key, empty (what Tekton defaults to)', { 'default-resolver-type': '' }, { kind: 'unset' }],
    ['git', { 'default-resolver-type': 'git' }, { kind: 'set', value: 'git' }],
    ['bundles, beside other defaults', { 'default-service-account': 'builder', 'default-timeout-minutes': '30', 'default-resolver-type': 'bundles' }, { kind: 'set', value: 'bundles' }],
    ['a name no resolver of the release has', { 'default-resolver-type': 'my-resolver' }, { kind: 'set', value: 'my-resolver' }],
    ['verbatim, as Tekton takes it (spaces kept)', { 'default-resolver-type': ' git ' }, { kind: 'set', value: ' git ' }],
    ['no ConfigMap', undefined, { kind: 'unknown', why: `there is no ConfigMap ${DEF}` }],
  ];
  for (const [name, data, want] of cases) assert.deepEqual(parseDefaultResolver(DEF, data), want, name);
});

test('resolvers-feature-flags: the table of data to the resolvers Tekton runs', () => {
  const on = (over: Partial<typeof ALL_ON>, defaulted: string[]): ResolverFlags => ({ kind: 'known', enabled: { ...ALL_ON, ...over }, defaulted: defaulted as never });
  const cases: Array<[string, ConfigMapData, ResolverFlags | RegExp]> = [
    ['the release: four set, http on by default', RELEASE_FLAGS, on({}, ['http'])],
    ['empty: every resolver on by default', {}, on({}, ['git', 'hub', 'bundles', 'cluster', 'http'])],
    ['hub off', { ...RELEASE_FLAGS, 'enable-hub-resolver': 'false' }, on({ hub: false }, ['http'])],
    ['every spelling Go accepts', { 'enable-git-resolver': '1', 'enable-hub-resolver': 'F', 'enable-bundles-resolver': 'TRUE', 'enable-cluster-resolver': 'False', 'enable-http-resolver': '0' }, on({ hub: false, cluster: false, http: false }, [])],
    ['all off', { 'enable-git-resolver': 'false', 'enable-hub-resolver': 'false', 'enable-bundles-resolver': 'false', 'enable-cluster-resolver': 'false', 'enable-http-resolver': 'false' }, on({ git: false, hub: false, bundles: false, cluster: false, http: false }, [])],
    ['an unknown key changes nothing', { ...RELEASE_FLAGS, 'enable-foo-resolver': 'nonsense' }, on({}, ['http'])],
    ['a value Go cannot parse: the whole ConfigMap is refused by Tekton', { ...RELEASE_FLAGS, 'enable-http-resolver': 'yes' }, /^ConfigMap tekton-pipelines-resolvers\/resolvers-feature-flags says enable-http-resolver: "yes", which Tekton cannot read as true or false, so it refuses the whole ConfigMap$/],
    ['spaces are not trimmed by Go', { 'enable-git-resolver': ' true' }, /says enable-git-resolver: " true"/],
    ['empty is not false', { 'enable-git-resolver': '' }, /says enable-git-resolver: ""/],
    ['no ConfigMap', undefined, /^there is no ConfigMap tekton-pipelines-resolvers\/resolvers-feature-flags$/],
  ];
  for (const [name, data, want] of cases) {
    const got = parseResolverFlags(FLAGS, data);
    if (want instanceof RegExp) {
      assert.equal(got.kind, 'unknown', name);
      assert.match((got as { why: string }).why, want, name);
    } else assert.deepEqual(got, want, name);
  }
  assert.deepEqual(['1', 't', 'T', 'TRUE', 'true', 'True', '0', 'f', 'F', 'FALSE', 'false', 'False', 'yes', 'on', 'tRUE', ''].map(goParseBool), [true, true, true, true, true, true, false, false, false, false, false, false, undefined, undefined, undefined, undefined]);
});

test('messages and the gauge: which settings are in force, where read, what is unknown and why', () => {
  const release = { defaultResolver: parseDefaultResolver(DEF, RELEASE_DEFAULTS), resolvers: parseResolverFlags(FLAGS, RELEASE_FLAGS) };
  assert.equal(
    describeSettings(release, SOURCES),
    'default-resolver-type: unset (ConfigMap tekton-pipelines/config-defaults; a reference with neither name nor resolver gets no resolver and Tekton rejects it; this controller refuses such references at every depth); ' +
      'resolvers enabled: git, hub, bundles, cluster, http; none off (ConfigMap tekton-pipelines-resolvers/resolvers-feature-flags; not set there, so on by default: http)',
  );
  const git = { defaultResolver: parseDefaultResolver(DEF, { 'default-resolver-type': 'git' }), resolvers: parseResolverFlags(FLAGS, { ...RELEASE_FLAGS, 'enable-hub-resolver': 'false', 'enable-http-resolver': 'true' }) };
  assert.equal(
    describeSettings(git, SOURCES),
    'default-resolver-type: git (ConfigMap tekton-pipelines/config-defaults; a reference with neither name nor resolver would be resolved by git; this controller refuses such references at every depth); ' +
      'resolvers enabled: git, bundles, cluster, http; hub off (ConfigMap tekton-pipelines-resolvers/resolvers-feature-flags)',
  );
  assert.deepEqual(settingsGauge(git), [
    { setting: 'default-resolver-type', value: 'git' },
    { setting: 'enable-git-resolver', value: 'true' },
    { setting: 'enable-hub-resolver', value: 'false' },
    { setting: 'enable-bundles-resolver', value: 'true' },
    { setting: 'enable-cluster-resolver', value: 'true' },
    { setting: 'enable-http-resolver', value: 'true' },
  ]);
  // A value that is not a plain token is quoted in messages, and "other" in the gauge (a bounded label set).
  const odd = { defaultResolver: parseDefaultResolver(DEF, { 'default-resolver-type': 'x"\n<b>' }), resolvers: parseResolverFlags(FLAGS, undefined) };
  const m = describeSettings(odd, SOURCES);
  assert.ok(!m.includes('\n'));
  assert.match(m, /^default-resolver-type: "x\\"\\n<b>" \(/);
  assert.match(m, /resolvers enabled: unknown \(there is no ConfigMap tekton-pipelines-resolvers\/resolvers-feature-flags\)$/);
  assert.deepEqual(settingsGauge(odd).map((g) => g.value), ['other', 'unknown', 'unknown', 'unknown', 'unknown', 'unknown']);
  assert.equal(settingsGauge({ ...odd, defaultResolver: { kind: 'set', value: 'my-resolver' } })[0]!.value, 'other');
  assert.equal(settingsGauge({ ...odd, defaultResolver: { kind: 'unknown', why: 'x' } })[0]!.value, 'unknown');
  assert.equal(settingsGauge(release)[0]!.value, 'unset');
});

test('after a read: a 404 makes a part unknown; a failed re-read (403 included) keeps what was read; a failed first read is unknown, naming the grant on a 403', () => {
  const cm = (data: Record<string, string>): { configMap: ConfigMapLike } => ({ configMap: { metadata: {}, data } });
  const pending = pendingSettings(SOURCES);
  assert.equal(pending.settled, false);
  assert.equal(settingsReadiness(pending).ok, false);
  const forbidden = { error: 'HTTP 403: configmaps "config-defaults" is forbidden', code: 403 };
  const first = settingsAfterRead(pending, forbidden, { configMap: undefined });
  assert.equal(first.settled, true);
  assert.deepEqual(first.settings.defaultResolver, {
    kind: 'unknown',
    why: "ConfigMap tekton-pipelines/config-defaults cannot be read: HTTP 403: configmaps \"config-defaults\" is forbidden; grant the controller get on it (config/rbac/internal/cluster_role.yaml; the chart's clusterrole.yaml)",
  });
  assert.deepEqual(first.settings.resolvers, { kind: 'unknown', why: `there is no ConfigMap ${FLAGS}` });
  const r = settingsReadiness(first);
  assert.deepEqual([r.name, r.ok, r.required], ['tekton-settings', false, false]);
  assert.match(r.detail!, /^default-resolver-type: unknown \(ConfigMap tekton-pipelines\/config-defaults cannot be read: HTTP 403.*grant the controller get on it .*; if set, a reference with neither name nor resolver would be resolved by that resolver; this controller refuses such references at every depth\); resolvers enabled: unknown \(there is no ConfigMap/);

  const good = settingsAfterRead(first, cm({ 'default-resolver-type': 'git' }), cm({ 'enable-hub-resolver': 'false' }));
  assert.deepEqual(good.settings.defaultResolver, { kind: 'set', value: 'git' });
  assert.equal(settingsReadiness(good).ok, true);
  assert.deepEqual(good.problems, []);
  // A ConfigMap with no data at all: nothing set, every resolver on by default.
  assert.deepEqual(settingsAfterRead(good, { configMap: { metadata: {} } }, { configMap: { metadata: {} } }).settings, { defaultResolver: { kind: 'unset' }, resolvers: { kind: 'known', enabled: ALL_ON, defaulted: ['git', 'hub', 'bundles', 'cluster', 'http'] } });

  const blip = settingsAfterRead(good, forbidden, { error: 'connect ECONNREFUSED' });
  assert.deepEqual(blip.settings, good.settings);
  assert.equal(settingsReadiness(blip).ok, true, 'what was read is still known');
  assert.equal(blip.problems.length, 2);
  assert.match(blip.problems[0]!, /config-defaults cannot be read: HTTP 403.*grant the controller get on it.*; what was read before is kept$/);
  assert.match(settingsReadiness(blip).detail!, /\(ConfigMap tekton-pipelines\/config-defaults cannot be read: .*what was read before is kept; ConfigMap tekton-pipelines-resolvers\/resolvers-feature-flags cannot be read: connect ECONNREFUSED; what was read before is kept\)$/);

  const gone = settingsAfterRead(blip, { error: 'HTTP 404', code: 404 }, { configMap: undefined });
  assert.equal(gone.settings.defaultResolver.kind, 'unknown');
  assert.equal(gone.settings.resolvers.kind, 'unknown');
  assert.deepEqual(gone.problems, []);
  assert.equal(defaultResolversNamespace('tekton-pipelines'), 'tekton-pipelines-resolvers');
});

test('the follower: reads both ConfigMaps at start and on refresh, logs each change once, survives a failing read', async () => {
  const lines: Array<{ level: number; msg: string; settings?: Record<string, string>; problems?: string[] }> = [];
  const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  const answers: Record<string, Array<ConfigMapLike | undefined | Error>> = {
    'tekton-pipelines/config-defaults': [{ data: RELEASE_DEFAULTS }, { data: { 'default-resolver-type': 'git' } }, Object.assign(new Error('HTTP 403: forbidden'), { code: 403 }), { data: {} }],
    'tekton-pipelines-resolvers/resolvers-feature-flags': [{ data: RELEASE_FLAGS }, { data: RELEASE_FLAGS }, { data: RELEASE_FLAGS }, undefined],
  };
  const reads: string[] = [];
  const f = new TektonSettingsFollower({
    namespace: 'tekton-pipelines',
    resolversNamespace: 'tekton-pipelines-resolvers',
    log,
    refreshMs: 3_600_000,
    read: async (ns, name) => {
      const key = `${ns}/${name}`;
      reads.push(key);
      const a = answers[key]!.shift();
      if (a instanceof Error) throw a;
      return a;
    },
  });
  assert.equal(f.readiness().ok, false, 'nothing is known before the first read');
  assert.equal(f.metrics()[0]!.value, 'unknown');
  await f.start();
  f.stop();
  assert.deepEqual(reads.sort(), ['tekton-pipelines-resolvers/resolvers-feature-flags', 'tekton-pipelines/config-defaults']);
  assert.equal(f.readiness().ok, true);
  assert.equal(f.metrics()[0]!.value, 'unset');
  const info = () => lines.filter((l) => l.level === 30);
  assert.equal(info().length, 1);
  assert.match(info()[0]!.msg, /^Tekton settings: default-resolver-type: unset .*resolvers enabled: git, hub, bundles, cluster, http; none off/);
  assert.equal(info()[0]!.settings!['default-resolver-type'], 'unset');

  await f.refresh(); // set to git: one info line naming it
  assert.equal(f.metrics()[0]!.value, 'git');
  assert.equal(info().length, 2);
  assert.match(info()[1]!.msg, /^Tekton settings: default-resolver-type: git \(.*would be resolved by git; this controller refuses such references at every depth\)/);
  assert.match(f.readiness().detail!, /^default-resolver-type: git /);

  await f.refresh(); // a 403 on re-read: git is kept and said so, at debug only
  assert.equal(f.metrics()[0]!.value, 'git');
  assert.equal(info().length, 2);
  assert.equal(lines.filter((l) => l.level === 40).length, 0);
  const debug = lines.filter((l) => l.level === 20);
  assert.equal(debug.length, 1);
  assert.match(debug[0]!.problems![0]!, /HTTP 403: forbidden; grant the controller get on it .*what was read before is kept/);

  await f.refresh(); // unset again, and the flags are gone: a warning
  assert.equal(f.metrics()[0]!.value, 'unset');
  assert.deepEqual(f.metrics().slice(1).map((g) => g.value), ['unknown', 'unknown', 'unknown', 'unknown', 'unknown']);
  assert.equal(f.readiness().ok, false);
  const warn = lines.filter((l) => l.level === 40);
  assert.equal(warn.length, 1);
  assert.match(warn[0]!.msg, /default-resolver-type: unset .*resolvers enabled: unknown \(there is no ConfigMap tekton-pipelines-resolvers\/resolvers-feature-flags\)$/);
});

test('the follower re-reads on its own every refresh period', async () => {
  let n = 0;
  const f = new TektonSettingsFollower({
    namespace: 'openshift-pipelines',
    resolversNamespace: 'openshift-pipelines',
    log: pino({ level: 'silent' }),
    refreshMs: 20,
    read: async (_ns, name): Promise<ConfigMapLike> => {
      const data: Record<string, string> = name === 'config-defaults' && n++ >= 2 ? { 'default-resolver-type': 'cluster' } : {};
      return { data };
    },
  });
  await f.start();
  assert.equal(f.metrics()[0]!.value, 'unset');
  assert.match(f.readiness().detail!, /ConfigMap openshift-pipelines\/config-defaults.*ConfigMap openshift-pipelines\/resolvers-feature-flags/);
  const deadline = Date.now() + 5_000;
  while (f.metrics()[0]!.value !== 'cluster' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  f.stop();
  assert.equal(f.metrics()[0]!.value, 'cluster');
});
