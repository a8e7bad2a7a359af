/**
 * The internal cluster's Tekton version on the real control planes with REAL
 * Tekton (its own manifests and RBAC): the controller reads data.version of
 * pipelines-info as the controller's identity (Tekton's Role
 * tekton-pipelines-info lets every authenticated user get it; nothing of ours
 * grants it), and reports a version with a known advisory, or one it cannot
 * tell, on /readyz (advisory: still ready), in its metrics, in a Warning Event
 * on the InternalServicesConfig and in its log, without failing.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { installProject, startEnvironment, type Environment } from '../../src/localenv/index.js';
import { NS, sample, scrape, setRunConfig, startController, waitFor, type ControllerProcess } from './helpers.js';

let env: Environment;
let admin: KubeConfig;
let controller: ControllerProcess | undefined;

async function start(extra: string[] = []): Promise<{ readyz: { status: number; text: string }; metrics: string }> {
  await controller?.kill('SIGKILL');
  controller = await startController(env, ['--metrics-bind-address', '127.0.0.1:0', ...extra]);
  const port = Number(String((await controller.waitForLog((l) => l.msg === 'serving metrics')).address).split(':').pop());
  const res = await fetch(`http://127.0.0.1:${controller.healthPort}/readyz?verbose`);
  return { readyz: { status: res.status, text: await res.text() }, metrics: await scrape(port) };
}

async function setVersion(version: string): Promise<void> {
  const core = admin.makeApiClient(CoreV1Api);
  const cm = await core.readNamespacedConfigMap({ namespace: 'tekton-pipelines', name: 'pipelines-info' });
  await core.replaceNamespacedConfigMap({ namespace: 'tekton-pipelines', name: 'pipelines-info', body: { ...cm, data: { ...cm.data, version } } });
}

async function warnings(reason: string): Promise<string[]> {
  const list = await admin.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace: NS, fieldSelector: `reason=${reason}` });
  return list.items.filter((e) => e.involvedObject.kind === 'InternalServicesConfig' && e.involvedObject.name === 'config' && e.type === 'Warning').map((e) => e.message ?? '');
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

describe('the Tekton version (real Tekton, its own RBAC)', () => {
  test('the harness stamps the release version, as a release does; the controller finds no known advisory', async () => {
    const cm = await admin.makeApiClient(CoreV1Api).readNamespacedConfigMap({ namespace: 'tekton-pipelines', name: 'pipelines-info' });
    assert.equal(cm.data?.['version'], env.tekton?.version);
    const { readyz, metrics } = await start();
    assert.equal(readyz.status, 200);
    assert.match(readyz.text, new RegExp(`\\[\\+\\]tekton-version ok: Tekton Pipelines ${env.tekton!.version.replace(/\./g, '\\.')} \\(ConfigMap tekton-pipelines/pipelines-info\\): no known advisory`));
    assert.equal(sample(metrics, 'internal_services_tekton_info', { version: env.tekton!.version }), 1);
    for (const advisory of ['GHSA-j5q5-j9gm-2w5c', 'GHSA-94jr-7pqp-xhcq', 'GHSA-wjxp-xrpv-xpff', 'GHSA-m2cx-gpqf-qf74', 'unknown-version']) assert.equal(sample(metrics, 'internal_services_tekton_advisories', { advisory }), 0, advisory);
  });

  test('a version with advisories: a warning, a Warning Event, an advisory /readyz line and the gauges; still ready', async () => {
    await setVersion('v1.6.1');
    const { readyz, metrics } = await start();
    assert.equal(readyz.status, 200, 'an advisory does not make the controller unready');
    assert.match(readyz.text, /\[-\]tekton-version failed: Tekton Pipelines v1\.6\.1 \(ConfigMap tekton-pipelines\/pipelines-info\) has known advisories .*GHSA-94jr-7pqp-xhcq \(CVE-2026-40938.*GHSA-wjxp-xrpv-xpff \(CVE-2026-40161.*GHSA-m2cx-gpqf-qf74 \(CVE-2026-40924: .*Upgrade Tekton Pipelines to v1\.6\.2 or later of the 1\.6 line/);
    assert.equal(sample(metrics, 'internal_services_tekton_info', { version: 'v1.6.1' }), 1);
    assert.equal(sample(metrics, 'internal_services_tekton_advisories', { advisory: 'GHSA-94jr-7pqp-xhcq' }), 1);
    assert.equal(sample(metrics, 'internal_services_tekton_advisories', { advisory: 'GHSA-wjxp-xrpv-xpff' }), 1);
    assert.equal(sample(metrics, 'internal_services_tekton_advisories', { advisory: 'GHSA-m2cx-gpqf-qf74' }), 1);
    assert.equal(sample(metrics, 'internal_services_tekton_advisories', { advisory: 'GHSA-j5q5-j9gm-2w5c' }), 0);
    const line = controller!.lines.find((l) => l.level === 'warn' && /Tekton Pipelines v1\.6\.1/.test(String(l.msg)));
    assert.ok(line, 'a warning names the version');
    assert.deepEqual(line['advisories'], ['GHSA-94jr-7pqp-xhcq', 'GHSA-wjxp-xrpv-xpff', 'GHSA-m2cx-gpqf-qf74']);
    const events = await waitFor('a TektonAdvisory Event on the config', async () => {
      const e = await warnings('TektonAdvisory');
      return e.length ? e : undefined;
    });
    assert.match(events[0]!, /Tekton Pipelines v1\.6\.1 .*GHSA-94jr-7pqp-xhcq/);
  });

  test('a namespace the controller may not read: an unknown version, reported as such, never a crash', async () => {
    const { readyz, metrics } = await start(['--tekton-namespace', 'no-tekton-here', '--refuse-resolvers-on-advisory']);
    assert.equal(readyz.status, 200);
    // Tekton's Role grants the get in its own namespace only: elsewhere it is a 403, reported as such.
    assert.match(readyz.text, /\[-\]tekton-version failed: The Tekton Pipelines version of the internal cluster is unknown: ConfigMap no-tekton-here\/pipelines-info cannot be read: HTTP 403: configmaps "pipelines-info" is forbidden/);
    assert.equal(sample(metrics, 'internal_services_tekton_info', { version: 'unknown' }), 1);
    assert.equal(sample(metrics, 'internal_services_tekton_advisories', { advisory: 'unknown-version' }), 1);
    assert.ok(controller!.lines.some((l) => l.level === 'warn' && /version of the internal cluster is unknown.*Requests with resolver references are refused meanwhile/.test(String(l.msg))));
    await waitFor('a TektonVersionUnknown Event on the config', async () => (await warnings('TektonVersionUnknown')).length > 0);
    assert.equal(controller!.proc.exitCode, null, 'still running');
    await setVersion(env.tekton!.version);
  });
});
