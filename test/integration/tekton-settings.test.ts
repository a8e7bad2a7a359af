/**
 * The Tekton settings that change what a reference means, on the real
 * control planes with REAL Tekton (its release ConfigMaps, its webhook): the
 * controller gets config-defaults and resolvers-feature-flags as the
 * controller's identity (the ClusterRole of config/rbac/internal grants it),
 * and reports default-resolver-type unset, then set, then unset again as an
 * administrator edits config-defaults, within --tekton-version-interval, on
 * /readyz (informational: still ready) and in
 * internal_services_tekton_setting. Tekton's own webhook shows why it
 * matters: with the setting, a pipelineRef with neither name nor resolver is
 * given the git resolver instead of being rejected.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { installProject, startEnvironment, type Environment } from '../../src/localenv/index.js';
import { NS, sample, scrape, setRunConfig, startController, waitFor, type ControllerProcess } from './helpers.js';

let env: Environment;
let admin: KubeConfig;
let controller: ControllerProcess | undefined;
let metricsPort = 0;

async function start(extra: string[] = []): Promise<void> {
  await controller?.kill('SIGKILL');
  controller = await startController(env, ['--metrics-bind-address', '127.0.0.1:0', '--tekton-version-interval', '500ms', ...extra]);
  metricsPort = Number(String((await controller.waitForLog((l) => l.msg === 'serving metrics')).address).split(':').pop());
}

async function readyz(): Promise<{ status: number; line: string }> {
  const res = await fetch(`http://127.0.0.1:${controller!.healthPort}/readyz?verbose`);
  const text = await res.text();
  return { status: res.status, line: text.split('\n').find((l) => /^\[[+-]\]tekton-settings /.test(l)) ?? `(no tekton-settings line in:\n${text})` };
}

/** Sets (or, with undefined, removes) a key of a ConfigMap, as an administrator would. */
async function setKey(namespace: string, name: string, key: string, value: string | undefined): Promise<void> {
  const core = admin.makeApiClient(CoreV1Api);
  const cm = await core.readNamespacedConfigMap({ namespace, name });
  const data = { ...cm.data };
  if (value === undefined) delete data[key];
  else data[key] = value;
  await core.replaceNamespacedConfigMap({ namespace, name, body: { ...cm, data } });
}

/** What Tekton's webhook makes of a pipelineRef with neither name nor resolver (a server-side dry run: nothing is created). */
async function nameless(): Promise<string> {
  const body = { apiVersion: 'tekton.dev/v1', kind: 'PipelineRun', metadata: { generateName: 'nameless-', namespace: NS }, spec: { pipelineRef: { params: [{ name: 'url', value: 'https://git.invalid/x.git' }] } } };
  try {
    const pr = (await admin.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({ group: 'tekton.dev', version: 'v1', namespace: NS, plural: 'pipelineruns', body, dryRun: 'All' })) as { spec: { pipelineRef: { resolver?: string } } };
    return `resolver: ${pr.spec.pipelineRef.resolver ?? '(none)'}`;
  } catch (e) {
    return `rejected: ${String((e as { body?: unknown }).body ?? e)}`;
  }
}

before(async () => {
  env = await startEnvironment({ tekton: true });
  await installProject(env);
  admin = env.internal.identities.admin.kubeConfig();
  await setRunConfig(admin, { allowList: ['nobody'] });
});

after(async () => {
  await controller?.kill('SIGKILL');
  await env?.stop();
});

describe('the Tekton settings (real Tekton, its release ConfigMaps)', () => {
  test('the release: default-resolver-type unset, every resolver on; Tekton rejects a nameless reference', async () => {
    await start();
    const { status, line } = await readyz();
    assert.equal(status, 200);
    assert.equal(
      line,
      '[+]tekton-settings ok: default-resolver-type: unset (ConfigMap tekton-pipelines/config-defaults; a reference with neither name nor resolver gets no resolver and Tekton rejects it; this controller refuses such references at every depth); ' +
        'resolvers enabled: git, hub, bundles, cluster, http; none off (ConfigMap tekton-pipelines-resolvers/resolvers-feature-flags; not set there, so on by default: http)',
    );
    const m = await scrape(metricsPort);
    assert.equal(sample(m, 'internal_services_tekton_setting', { setting: 'default-resolver-type', value: 'unset' }), 1);
    for (const r of ['git', 'hub', 'bundles', 'cluster', 'http']) assert.equal(sample(m, 'internal_services_tekton_setting', { setting: `enable-${r}-resolver`, value: 'true' }), 1, r);
    assert.match(await nameless(), /^rejected: .*missing field\(s\): spec\.pipelineRef\.resolver/);
  });

  test('set to git (and hub off): reported within the refresh interval, logged once; Tekton then gives a nameless reference the git resolver; unset again: reported', async () => {
    await setKey('tekton-pipelines', 'config-defaults', 'default-resolver-type', 'git');
    await setKey('tekton-pipelines-resolvers', 'resolvers-feature-flags', 'enable-hub-resolver', 'false');
    try {
      const set = await waitFor('/readyz to report default-resolver-type git', async () => {
        const r = await readyz();
        return r.line.includes('default-resolver-type: git ') && r.line.includes('hub off') ? r : undefined;
      }, 10_000);
      assert.equal(set.status, 200, 'informational: still ready');
      assert.match(set.line, /^\[\+\]tekton-settings ok: default-resolver-type: git \(ConfigMap tekton-pipelines\/config-defaults; a reference with neither name nor resolver would be resolved by git; this controller refuses such references at every depth\); resolvers enabled: git, bundles, cluster, http; hub off /);
      const m = await scrape(metricsPort);
      assert.equal(sample(m, 'internal_services_tekton_setting', { setting: 'default-resolver-type', value: 'git' }), 1);
      assert.equal(sample(m, 'internal_services_tekton_setting', { setting: 'default-resolver-type', value: 'unset' }), undefined, 'one value per setting');
      assert.equal(sample(m, 'internal_services_tekton_setting', { setting: 'enable-hub-resolver', value: 'false' }), 1);
      await controller!.waitForLog((l) => l.level === 'info' && /^Tekton settings: default-resolver-type: git /.test(String(l.msg)), 5_000);
      // Why it matters: Tekton's webhook now resolves what it rejected before.
      assert.equal(await waitFor('the webhook to default the resolver', async () => ((await nameless()) === 'resolver: git' ? 'resolver: git' : undefined), 15_000), 'resolver: git');
    } finally {
      await setKey('tekton-pipelines', 'config-defaults', 'default-resolver-type', undefined);
      await setKey('tekton-pipelines-resolvers', 'resolvers-feature-flags', 'enable-hub-resolver', 'true');
    }
    await waitFor('/readyz to report default-resolver-type unset again', async () => (await readyz()).line.includes('default-resolver-type: unset ') || undefined, 10_000);
    const m = await scrape(metricsPort);
    assert.equal(sample(m, 'internal_services_tekton_setting', { setting: 'default-resolver-type', value: 'unset' }), 1);
    assert.equal(sample(m, 'internal_services_tekton_setting', { setting: 'enable-hub-resolver', value: 'true' }), 1);
    assert.equal(controller!.lines.filter((l) => /^Tekton settings: default-resolver-type: git /.test(String(l.msg)) && l.level === 'info').length, 1, 'one log line per change');
  });

  test('a resolvers namespace with no such ConfigMap: unknown (a 404, not a 403: the grant is by name in every namespace), reported, still ready', async () => {
    await start(['--tekton-resolvers-namespace', 'no-resolvers-here']);
    const { status, line } = await readyz();
    assert.equal(status, 200);
    assert.match(line, /^\[-\]tekton-settings failed: default-resolver-type: unset .*; resolvers enabled: unknown \(there is no ConfigMap no-resolvers-here\/resolvers-feature-flags\)$/);
    assert.equal(sample(await scrape(metricsPort), 'internal_services_tekton_setting', { setting: 'enable-git-resolver', value: 'unknown' }), 1);
    assert.ok(controller!.lines.some((l) => l.level === 'warn' && /resolvers enabled: unknown/.test(String(l.msg))));
    assert.equal(controller!.proc.exitCode, null, 'still running');
  });
});
