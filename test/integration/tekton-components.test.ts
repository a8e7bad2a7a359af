/**
 * The versions of Tekton Results and Tekton Chains on a real internal
 * apiserver, read by the controller as its own identity under the project's
 * RBAC (config/rbac/internal) and the releases' own Roles: the info
 * ConfigMaps (tekton-results-info, chains-info) and their Roles and
 * RoleBindings are made as the releases make them (release-info.ts: Results'
 * release.sh and kustomize, Chains' publish rewrite, from the modules the
 * harness pins), then installed, upgraded, downgraded, garbled and removed
 * while the controller runs. Each change must show on /readyz (advisory: the
 * controller stays ready), in internal_services_tekton_component_status,
 * in a Warning Event on the InternalServicesConfig, and in the log, naming
 * the component and why. Pipelines is there too, clean, at the harness's
 * version.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import {
  applyObjects,
  chainsInfoObjects,
  chainsVersion,
  ensureNamespace,
  installProject,
  pipelinesInfoObjects,
  resultsInfoObjects,
  resultsVersion,
  startEnvironment,
  type Environment,
  type Manifest,
} from '../../src/localenv/index.js';
import { NS, sample, scrape, setRunConfig, startController, waitFor, type ControllerProcess } from './helpers.js';

let env: Environment;
let admin: KubeConfig;
let kubectl: string;
let controller: ControllerProcess | undefined;
let metricsPort = 0;

const REASONS = ['ok', 'not_installed', 'too_old', 'newer_than_tested', 'unknown'];

async function start(extra: string[] = []): Promise<void> {
  await controller?.kill('SIGKILL');
  // Re-read every 300ms: each change below is seen without a restart.
  controller = await startController(env, ['--metrics-bind-address', '127.0.0.1:0', '--tekton-version-interval', '300ms', ...extra]);
  metricsPort = Number(String((await controller.waitForLog((l) => l.msg === 'serving metrics')).address).split(':').pop());
}

async function readyz(): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${controller!.healthPort}/readyz?verbose`);
  return { status: res.status, text: await res.text() };
}

/** The /readyz line of a check. */
function line(text: string, check: string): string {
  return text.split('\n').find((l) => l.startsWith(`[+]${check} `) || l.startsWith(`[-]${check} `)) ?? '';
}

/** Waits until the check's /readyz line matches, and returns it; the controller stays ready throughout (200). */
async function waitForCheck(check: string, re: RegExp): Promise<string> {
  let last = '';
  try {
    return await waitFor(`/readyz ${check} ~ ${re}`, async () => {
      const r = await readyz();
      assert.equal(r.status, 200, `the version checks are advisory: ${r.text}`);
      last = line(r.text, check);
      return re.test(last) ? last : undefined;
    });
  } catch (e) {
    throw new Error(`${(e as Error).message}; last: ${last}`);
  }
}

/** The component's reasons in the gauge: the one at 1 (and every one present). */
async function reasonOf(component: string): Promise<string | undefined> {
  const text = await scrape(metricsPort);
  const values = Object.fromEntries(REASONS.map((reason) => [reason, sample(text, 'internal_services_tekton_component_status', { component, reason })]));
  for (const [reason, v] of Object.entries(values)) assert.notEqual(v, undefined, `${component} has no series for ${reason}`);
  const on = Object.entries(values).filter(([, v]) => v === 1);
  assert.ok(on.length <= 1, `${component}: one reason at a time, got ${JSON.stringify(values)}`);
  return on[0]?.[0];
}

async function warnings(reason: string): Promise<string[]> {
  const list = await admin.makeApiClient(CoreV1Api).listNamespacedEvent({ namespace: NS, fieldSelector: `reason=${reason}` });
  return list.items.filter((e) => e.involvedObject.kind === 'InternalServicesConfig' && e.involvedObject.name === 'config' && e.type === 'Warning').map((e) => e.message ?? '');
}

async function waitForWarning(reason: string, re: RegExp): Promise<string> {
  return waitFor(`a Warning Event ${reason} ~ ${re}`, async () => (await warnings(reason)).find((m) => re.test(m)));
}

function inNamespace(objects: Manifest[], namespace: string): Manifest[] {
  return objects.map((o) => ({ ...o, metadata: { ...o.metadata, namespace } }) as Manifest);
}

async function setData(namespace: string, name: string, version: string): Promise<void> {
  const core = admin.makeApiClient(CoreV1Api);
  const cm = await core.readNamespacedConfigMap({ namespace, name });
  await core.replaceNamespacedConfigMap({ namespace, name, body: { ...cm, data: { ...cm.data, version } } });
}

before(async () => {
  env = await startEnvironment();
  await installProject(env);
  admin = env.internal.identities.admin.kubeConfig();
  kubectl = join(env.assets.binDir, 'kubectl');
  await setRunConfig(admin, { allowList: ['nobody'] });
  await ensureNamespace(admin, 'tekton-pipelines');
  await applyObjects(admin, pipelinesInfoObjects(env.assets.tektonConfigDir, env.assets.tektonVersion));
});

after(async () => {
  await controller?.kill('SIGKILL');
  await env?.stop();
});

describe('Tekton Results and Chains versions (real apiserver, the releases\' info objects and RBAC)', () => {
  test('the objects are the releases\': ConfigMap, Role and RoleBinding, in the release namespaces, with the tag written in', async () => {
    const results = await resultsInfoObjects('v0.15.0', kubectl);
    assert.deepEqual(results.map((o) => `${o.kind}/${o.metadata?.namespace}/${o.metadata?.name}`).sort(), [
      'ConfigMap/tekton-pipelines/tekton-results-info',
      'Role/tekton-pipelines/tekton-results-info',
      'RoleBinding/tekton-pipelines/tekton-results-info',
    ]);
    const rcm = results.find((o) => o.kind === 'ConfigMap')!;
    assert.deepEqual(rcm['data'], { version: 'v0.15.0' });
    assert.equal(rcm.metadata?.labels?.['app.kubernetes.io/version'], 'v0.15.0', 'the release labels every object with its tag');
    const chains = await chainsInfoObjects('v0.22.0');
    assert.deepEqual(chains.map((o) => `${o.kind}/${o.metadata?.namespace}/${o.metadata?.name}`).sort(), [
      'ConfigMap/tekton-chains/chains-info',
      'Role/tekton-chains/tekton-chains-info',
      'RoleBinding/tekton-chains/tekton-chains-info',
    ]);
    assert.deepEqual(chains.find((o) => o.kind === 'ConfigMap')!['data'], { version: 'v0.22.0' });
    const binding = chains.find((o) => o.kind === 'RoleBinding')! as unknown as { subjects: Array<{ kind: string; name: string }> };
    assert.deepEqual(binding.subjects.map((s) => `${s.kind}/${s.name}`), ['Group/system:authenticated']);
  });

  test('neither installed: each is "not installed" (a 404 under the controller\'s RBAC, not a 403), no Warning Event', async () => {
    await start();
    assert.match(await waitForCheck('tekton-results-version', /^\[\+\]/), /^\[\+\]tekton-results-version ok: Tekton Results is not installed \(there is no ConfigMap tekton-pipelines\/tekton-results-info\)$/);
    assert.match(await waitForCheck('tekton-chains-version', /^\[\+\]/), /^\[\+\]tekton-chains-version ok: Tekton Chains is not installed \(there is no ConfigMap tekton-chains\/chains-info\)$/);
    assert.match(line((await readyz()).text, 'tekton-version'), /^\[\+\]tekton-version ok: Tekton Pipelines v\d+\.\d+\.\d+ \(ConfigMap tekton-pipelines\/pipelines-info\): no known advisory$/);
    assert.equal(await reasonOf('results'), 'not_installed');
    assert.equal(await reasonOf('chains'), 'not_installed');
    const text = await scrape(metricsPort);
    assert.equal(sample(text, 'internal_services_tekton_component_status', { component: 'pipelines', reason: 'ok' }), 1);
    assert.equal(sample(text, 'internal_services_tekton_component_status', { component: 'pipelines', reason: 'advisory' }), 0);
    for (const r of ['TektonComponentUnsupported', 'TektonComponentNewerThanTested', 'TektonComponentVersionUnknown']) assert.deepEqual(await warnings(r), [], r);
    assert.ok(controller!.lines.some((l) => l.level === 'info' && l['component'] === 'chains' && l['reason'] === 'not_installed'));
  });

  test('installed at the versions CI runs (hack/platform/versions.env): supported, seen without a restart', async () => {
    await applyObjects(admin, [...(await resultsInfoObjects(resultsVersion(), kubectl))]);
    await ensureNamespace(admin, 'tekton-chains');
    await applyObjects(admin, await chainsInfoObjects(chainsVersion()));
    const esc = (v: string) => v.replace(/\./g, '\\.');
    assert.match(await waitForCheck('tekton-results-version', /supported/), new RegExp(`^\\[\\+\\]tekton-results-version ok: Tekton Results ${esc(resultsVersion())} \\(ConfigMap tekton-pipelines/tekton-results-info\\): supported \\(v0\\.15\\.0 through v0\\.20\\.x\\)$`));
    assert.match(await waitForCheck('tekton-chains-version', /supported/), new RegExp(`^\\[\\+\\]tekton-chains-version ok: Tekton Chains ${esc(chainsVersion())} \\(ConfigMap tekton-chains/chains-info\\): supported \\(v0\\.22\\.0 through v0\\.29\\.x\\)$`));
    assert.equal(await reasonOf('results'), 'ok');
    assert.equal(await reasonOf('chains'), 'ok');
  });

  test('releases older than supported: a failing advisory check, too_old, and a Warning Event naming each component', async () => {
    await applyObjects(admin, await resultsInfoObjects('v0.14.2', kubectl));
    await applyObjects(admin, await chainsInfoObjects('v0.21.0'));
    assert.match(await waitForCheck('tekton-results-version', /v0\.14\.2/), /^\[-\]tekton-results-version failed: Tekton Results v0\.14\.2 \(ConfigMap tekton-pipelines\/tekton-results-info\) is older than supported: the supported range is v0\.15\.0 through v0\.20\.x.*Upgrade Tekton Results to v0\.15\.0 or later/);
    assert.match(await waitForCheck('tekton-chains-version', /v0\.21\.0/), /^\[-\]tekton-chains-version failed: Tekton Chains v0\.21\.0 \(ConfigMap tekton-chains\/chains-info\) is older than supported/);
    assert.equal(await reasonOf('results'), 'too_old');
    assert.equal(await reasonOf('chains'), 'too_old');
    await waitForWarning('TektonComponentUnsupported', /^Tekton Results v0\.14\.2 .*older than supported/);
    await waitForWarning('TektonComponentUnsupported', /^Tekton Chains v0\.21\.0 .*older than supported/);
    assert.ok(controller!.lines.some((l) => l.level === 'warn' && l['component'] === 'results' && l['reason'] === 'too_old' && l['version'] === 'v0.14.2'));
  });

  test('releases newer than tested: reported (check passing, newer_than_tested, a Warning Event), not failing', async () => {
    await applyObjects(admin, await resultsInfoObjects('v0.21.0', kubectl));
    await applyObjects(admin, await chainsInfoObjects('v0.30.0'));
    assert.match(await waitForCheck('tekton-results-version', /v0\.21\.0/), /^\[\+\]tekton-results-version ok: Tekton Results v0\.21\.0 \(ConfigMap tekton-pipelines\/tekton-results-info\) is newer than tested: the supported range is v0\.15\.0 through v0\.20\.x/);
    assert.match(await waitForCheck('tekton-chains-version', /v0\.30\.0/), /^\[\+\]tekton-chains-version ok: Tekton Chains v0\.30\.0 .* is newer than tested/);
    assert.equal(await reasonOf('results'), 'newer_than_tested');
    assert.equal(await reasonOf('chains'), 'newer_than_tested');
    await waitForWarning('TektonComponentNewerThanTested', /^Tekton Results v0\.21\.0 /);
    await waitForWarning('TektonComponentNewerThanTested', /^Tekton Chains v0\.30\.0 /);
  });

  test('a version that is not a release ("devel", garbage): unknown, shown as read, a failing check and a Warning Event', async () => {
    await setData('tekton-pipelines', 'tekton-results-info', 'devel');
    await setData('tekton-chains', 'chains-info', 'v0.29 "patched"\nby hand');
    assert.match(await waitForCheck('tekton-results-version', /devel/), /^\[-\]tekton-results-version failed: The Tekton Results version cannot be told: ConfigMap tekton-pipelines\/tekton-results-info says version "devel", which is not a release version like v0\.15\.0/);
    const chains = await waitForCheck('tekton-chains-version', /patched/);
    assert.ok(chains.includes('says version "v0.29 \\"patched\\"\\nby hand"'), `the value is shown escaped, whole: ${chains}`);
    assert.match(chains, /^\[-\]tekton-chains-version failed: The Tekton Chains version cannot be told/);
    assert.equal(await reasonOf('results'), 'unknown');
    assert.equal(await reasonOf('chains'), 'unknown');
    await waitForWarning('TektonComponentVersionUnknown', /^The Tekton Results version cannot be told: .*"devel"/);
    await waitForWarning('TektonComponentVersionUnknown', /^The Tekton Chains version cannot be told: .*patched/);
    const warn = controller!.lines.find((l) => l.level === 'warn' && l['component'] === 'chains' && l['reason'] === 'unknown' && String(l['version']).includes('patched'));
    assert.equal(warn?.['version'], 'v0.29 "patched"\nby hand', 'the log keeps the value as read');
  });

  test('back in range, then removed: supported again, then not installed; the controller never stopped', async () => {
    await applyObjects(admin, await resultsInfoObjects('v0.20.0', kubectl));
    assert.match(await waitForCheck('tekton-results-version', /v0\.20\.0/), /^\[\+\]tekton-results-version ok: Tekton Results v0\.20\.0 .*: supported/);
    assert.equal(await reasonOf('results'), 'ok');
    await admin.makeApiClient(CoreV1Api).deleteNamespacedConfigMap({ namespace: 'tekton-chains', name: 'chains-info' });
    assert.match(await waitForCheck('tekton-chains-version', /not installed/), /^\[\+\]tekton-chains-version ok: Tekton Chains is not installed/);
    assert.equal(await reasonOf('chains'), 'not_installed');
    assert.equal(controller!.proc.exitCode, null, 'still running');
  });

  test('OpenShift Pipelines: all three in openshift-pipelines, read there with the namespace flags', async () => {
    const ns = 'openshift-pipelines';
    await ensureNamespace(admin, ns);
    await applyObjects(admin, [
      ...inNamespace(pipelinesInfoObjects(env.assets.tektonConfigDir, env.assets.tektonVersion), ns),
      ...inNamespace(await resultsInfoObjects('v0.17.1', kubectl), ns),
      ...inNamespace(await chainsInfoObjects('v0.25.0'), ns),
    ]);
    await start(['--tekton-namespace', ns, '--tekton-chains-namespace', ns]);
    assert.match(await waitForCheck('tekton-results-version', /v0\.17\.1/), /^\[\+\]tekton-results-version ok: Tekton Results v0\.17\.1 \(ConfigMap openshift-pipelines\/tekton-results-info\): supported/);
    assert.match(await waitForCheck('tekton-chains-version', /v0\.25\.0/), /^\[\+\]tekton-chains-version ok: Tekton Chains v0\.25\.0 \(ConfigMap openshift-pipelines\/chains-info\): supported/);
    assert.match(line((await readyz()).text, 'tekton-version'), /^\[\+\]tekton-version ok: Tekton Pipelines .*\(ConfigMap openshift-pipelines\/pipelines-info\)/);
    assert.ok(controller!.lines.some((l) => l.msg === 'starting' && l['tektonResultsNamespace'] === ns && l['tektonChainsNamespace'] === ns));
  });
});
