/**
 * Hostile and unlucky inputs on the real control planes and REAL Tekton
 * (pods simulated): oversize params, absurd timeouts, a configuration that
 * disappears for a while, debug switched off, a run that ends while the
 * controller is down. Each ends with a clear message, and the controller
 * keeps serving a well-formed request right after.
 */
import { phaseOf } from '../../src/api/conditions.js';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { startEnvironment, type Environment, applyObjects, grantRequester, installProject, loadManifests } from '../../src/localenv/index.js';
import { join } from 'node:path';
import { repoRoot } from '../../src/util/repo.js';
import type { InternalRequestSpec } from '../../src/api/types.js';
import {
  createRequest, getRequest, httpStatus, NS, onlyPipelineRunOf, pipelineRunsFor, releaseRun, sample, scrape, setRunConfig, simulatedStep, startController, testPipeline, waitFor, waitForPhase,
  type ControllerProcess,
  messageOf, setRunConfigAndWait,
} from './helpers.js';

const TENANT = 'hostile';
let env: Environment;
let internalAdmin: KubeConfig;
let requester: KubeConfig;
let controller: ControllerProcess;
let metricsPort: number;
const FINAL = ['Succeeded', 'Failed', 'Rejected'];
const BASE = { allowList: [TENANT] };


/** What the API server says when it refuses to create a request (its message), or undefined when it accepts it. */
async function refusedAtCreation(name: string, spec: InternalRequestSpec): Promise<string | undefined> {
  try {
    await createRequest(requester, TENANT, name, spec);
    return undefined;
  } catch (e) {
    const body = (e as { body?: unknown }).body;
    const text = typeof body === 'string' ? body : JSON.stringify(body ?? (e as Error).message);
    return (JSON.parse(text) as { message?: string }).message ?? text;
  }
}

/** A well-formed request completes: the controller is still serving. */
async function stillServing(name: string): Promise<void> {
  await createRequest(requester, TENANT, name, { request: 'echo', params: { text: name } });
  const done = await waitForPhase(requester, TENANT, name, FINAL, 60_000);
  assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
  assert.deepEqual(done.status?.results, { out: name });
}

before(async () => {
  env = await startEnvironment({ tekton: true });
  await installProject(env);
  internalAdmin = env.internal.identities.admin.kubeConfig();
  requester = env.remote.identities.requester!.kubeConfig();
  for (const ns of [TENANT, 'ruled', 'finisher']) await grantRequester(env, ns);
  const params = ['text', 'a', 'b', 'c', 'd', 'e'].map((name) => ({ name, default: '' }));
  await applyObjects(internalAdmin, [
    testPipeline('echo', { params, results: [{ name: 'out', value: '$(tasks.t.results.out)' }], tasks: [{ name: 't', params: [{ name: 'text', value: '$(params.text)' }], taskSpec: { params: [{ name: 'text' }], results: [{ name: 'out' }], steps: [simulatedStep('s', { SIMULATED_RESULT_out: '$(params.text)' })] } }] }),
    testPipeline('fails', { tasks: [{ name: 't', taskSpec: { steps: [simulatedStep('s', { SIMULATED_EXIT_CODE: '2' })] } }] }),
    testPipeline('gated', { results: [{ name: 'out', value: '$(tasks.t.results.out)' }], tasks: [{ name: 't', taskSpec: { results: [{ name: 'out' }], steps: [simulatedStep('s', { SIMULATED_DURATION: 'gate', SIMULATED_RESULT_out: 'released' })] } }] }),
  ] as never);
  await setRunConfig(internalAdmin, BASE);
  controller = await startController(env, ['--metrics-bind-address', '127.0.0.1:0']);
  metricsPort = Number(String((await controller.waitForLog((l) => l.msg === 'serving metrics')).address).split(':').pop());
});

after(async () => {
  await controller?.kill('SIGKILL');
  await env?.stop();
});

/** Applies the config and waits until the controller has read it. */
const configure = (spec: Record<string, unknown>): Promise<void> => setRunConfigAndWait(internalAdmin, controller, spec);

describe('limits (real Tekton, pods simulated)', () => {
  test('absurd timeouts: refused by the API server or Rejected by the controller, each with a message; then a good request runs', async () => {
    const huge = await refusedAtCreation('huge-timeout', { request: 'echo', timeouts: { pipeline: '99999999999h' } });
    assert.match(huge ?? 'accepted', /spec\.timeouts\.pipeline: Invalid value: "99999999999h": spec\.timeouts\.pipeline in body should match/);
    const year = await refusedAtCreation('year-timeout', { request: 'echo', timeouts: { pipeline: '9000h' } });
    assert.match(year ?? 'accepted', /spec\.timeouts: Invalid value: pipeline must be at most 8760h \(one year\)/);
    const overflow = await refusedAtCreation('overflow-timeout', { request: 'echo', timeouts: { pipeline: '999999999h' } });
    // Past what a Go duration holds: CEL cannot convert it, and says which rule.
    assert.match(overflow ?? 'accepted', /evaluating rule: pipeline must be at most 8760h \(one year\)/);
    const sum = await refusedAtCreation('sum-timeout', { request: 'echo', timeouts: { pipeline: '1h', tasks: '50m', finally: '20m' } });
    assert.match(sum ?? 'accepted', /tasks \+ finally must not be longer than pipeline/);

    await createRequest(requester, TENANT, 'no-timeout', { request: 'echo', timeouts: { pipeline: '0s' } });
    await createRequest(requester, TENANT, 'too-long', { request: 'echo', timeouts: { pipeline: '30h' } });
    const none = await waitForPhase(requester, TENANT, 'no-timeout', FINAL, 30_000);
    assert.equal(none.status?.conditions?.[0]?.reason, 'Rejected');
    assert.match(messageOf(none), /timeouts\.pipeline "0s" means no timeout, which InternalServicesConfig internal-services\/config does not allow \(timeouts\.allowNoTimeout\)/);
    const long = await waitForPhase(requester, TENANT, 'too-long', FINAL, 30_000);
    assert.match(messageOf(long), /timeouts\.pipeline "30h" is longer than the 24h allowed by .*\(timeouts\.maximum\)/);
    await stillServing('after-timeouts');
  });

  test('oversize params: per value and all together, at the API server and at the controller; every refusal is written; then a good request runs', async () => {
    const mib = 'x'.repeat(1536 * 1024);
    const one = await refusedAtCreation('one-and-a-half-mib', { request: 'echo', params: { text: mib } });
    assert.match(one ?? 'accepted', /spec\.params\.text: Too long: may not be (longer than|more than) 262144/);
    const quarter = 'y'.repeat(250 * 1024);
    const many = await refusedAtCreation('many-params', { request: 'echo', params: { a: quarter, b: quarter, c: quarter, d: quarter, e: quarter } });
    assert.match(many ?? 'accepted', /the params \(names and values, spec\.params and spec\.pipeline\.params together\) must add up to at most 1048576 bytes/);

    // Under the CRD's caps, over the configuration's (default 512 KiB together): Rejected, and the rejection fits on the object.
    await createRequest(requester, TENANT, 'near-the-limit', { request: 'echo', params: { a: quarter, b: quarter, c: quarter, d: quarter } });
    const near = await waitForPhase(requester, TENANT, 'near-the-limit', FINAL, 30_000);
    assert.equal(near.status?.conditions?.[0]?.reason, 'Rejected');
    assert.match(messageOf(near), /the params add up to 1024004 bytes, more than the 524288 allowed by InternalServicesConfig internal-services\/config \(limits\.maxParamsBytes\)/);

    await configure({ ...BASE, limits: { maxParamValueBytes: 1024 } });
    await createRequest(requester, TENANT, 'long-value', { request: 'echo', params: { text: 'z'.repeat(2000) } });
    const lv = await waitForPhase(requester, TENANT, 'long-value', FINAL, 30_000);
    assert.match(messageOf(lv), /param values longer than the 1024 bytes allowed by .*\(limits\.maxParamValueBytes\): "text" \(2000 bytes\)/);
    await configure(BASE);
    await stillServing('after-params');
  });
});

describe('the configuration\'s lifecycle (real Tekton, pods simulated)', () => {
  test('config absent for a while: new requests wait (WaitingForConfig, with the reason, a metric and a /readyz line), then run when it is back', async () => {
    const custom = internalAdmin.makeApiClient(CustomObjectsApi);
    const seen = controller.lines.length;
    await custom.deleteNamespacedCustomObject({ group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalservicesconfigs', namespace: NS, name: 'config' });
    await waitFor('the controller to see the configuration go', async () => controller.lines.slice(seen).some((l) => l.msg === 'configuration deleted; new requests wait (phase WaitingForConfig) until it is back'));
    await createRequest(requester, TENANT, 'while-absent', { request: 'echo', params: { text: 'waited' } });
    const pending = await waitForPhase(requester, TENANT, 'while-absent', ['WaitingForConfig'], 30_000);
    assert.equal(pending.status?.conditions?.[0]?.status, 'Unknown');
    assert.match(messageOf(pending), /there is no InternalServicesConfig "config" in namespace "internal-services"; the request is decided once its administrators create it/);
    const metrics = await scrape(metricsPort);
    assert.equal(sample(metrics, 'internal_services_config_present'), 0);
    assert.equal(sample(metrics, 'internal_services_requests_waiting', { phase: 'WaitingForConfig' }), 1, 'the waiting request is counted by its phase');
    const readyz = await fetch(`http://127.0.0.1:${controller.healthPort}/readyz`);
    assert.equal(readyz.status, 200, 'still ready: it serves what it can and says what it waits for');
    assert.match(await readyz.text(), /\[-\]config failed: no InternalServicesConfig "config" in namespace internal-services; new requests wait/);

    await setRunConfig(internalAdmin, BASE);
    const done = await waitForPhase(requester, TENANT, 'while-absent', FINAL, 60_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    assert.deepEqual(done.status?.results, { out: 'waited' });
    assert.equal(sample(await scrape(metricsPort), 'internal_services_config_present'), 1);
    assert.equal(await httpStatus(`http://127.0.0.1:${controller.healthPort}/readyz`), 200);
  });

  test('debug switched off: the PipelineRuns it kept are removed at once, not at the next resync', async () => {
    await configure({ ...BASE, debug: true });
    const r = await createRequest(requester, TENANT, 'debugged', { request: 'echo', params: { text: 'kept' } });
    await waitForPhase(requester, TENANT, 'debugged', ['Succeeded'], 60_000);
    const kept = await pipelineRunsFor(internalAdmin, r.metadata.uid!);
    assert.equal(kept.length, 1, 'kept while debug is on');
    await configure(BASE);
    await waitFor('the kept PipelineRun to be removed', async () => (await pipelineRunsFor(internalAdmin, r.metadata.uid!)).length === 0, 15_000);
  });

  test('a run that ends while the controller is down: after the restart the final status still names the PipelineRun', async () => {
    const r = await createRequest(requester, TENANT, 'ends-while-down', { request: 'gated' });
    const pr = await onlyPipelineRunOf(internalAdmin, r.metadata.uid!);
    await waitForPhase(requester, TENANT, 'ends-while-down', ['Running'], 30_000);
    await controller.kill('SIGKILL');
    await releaseRun(env, pr.metadata.name!);
    await waitFor('Tekton to finish the run', async () => {
      const [p] = await pipelineRunsFor(internalAdmin, r.metadata.uid!);
      return p?.status?.conditions?.find((c) => c.type === 'Succeeded')?.status === 'True';
    }, 60_000);
    controller = await startController(env, ['--metrics-bind-address', '127.0.0.1:0']);
    metricsPort = Number(String((await controller.waitForLog((l) => l.msg === 'serving metrics')).address).split(':').pop());
    const done = await waitForPhase(requester, TENANT, 'ends-while-down', FINAL, 60_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded');
    assert.equal(done.status?.pipelineRun, `${NS}/${pr.metadata.name}`);
    assert.deepEqual(done.status?.results, { out: 'released' });
  });
});

describe('per-namespace rules (real Tekton, pods simulated)', () => {
  const SIGNING = { name: 'signing', namespaces: ['ruled'], pipelines: ['echo', 'gated'], params: { patterns: [{ name: 'text', pattern: 'release-[0-9]+' }] }, onRevoke: 'cancel' };
  const FINISHING = { name: 'finishing', namespaces: ['finisher'], pipelines: ['gated'] };

  test('a rule grants some Pipelines to some namespaces, with constraints on params; refusals name the rule and the value', async () => {
    await configure({ ...BASE, rules: [SIGNING, FINISHING] });
    await createRequest(requester, 'ruled', 'good', { request: 'echo', params: { text: 'release-42' } });
    await createRequest(requester, 'ruled', 'bad-param', { request: 'echo', params: { text: 'rm -rf' } });
    await createRequest(requester, 'finisher', 'not-granted', { request: 'echo', params: { text: 'x' } });
    const good = await waitForPhase(requester, 'ruled', 'good', FINAL, 60_000);
    assert.equal(good.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(good));
    const bad = await waitForPhase(requester, 'ruled', 'bad-param', FINAL, 30_000);
    assert.match(messageOf(bad), /^param "text" is "rm -rf", which does not match the pattern "release-\[0-9\]\+" of rules\[0\] \("signing"\) of InternalServicesConfig internal-services\/config$/);
    const ng = await waitForPhase(requester, 'finisher', 'not-granted', FINAL, 30_000);
    assert.match(messageOf(ng), /^Pipeline "echo" is not granted to namespace "finisher" on remote "default" by InternalServicesConfig internal-services\/config: rules\[1\] \("finishing"\) grants only "gated"$/);
    await stillServing('after-rules');
  });

  test('the policy tightened while requests run: onRevoke cancel stops the run and says why; finish (the default) lets it end', async () => {
    // (the rules of the previous test are in force)
    const cancelled = await createRequest(requester, 'ruled', 'to-cancel', { request: 'gated' });
    const finishing = await createRequest(requester, 'finisher', 'to-finish', { request: 'gated' });
    const [prC, prF] = await Promise.all([onlyPipelineRunOf(internalAdmin, cancelled.metadata.uid!), onlyPipelineRunOf(internalAdmin, finishing.metadata.uid!)]);
    await Promise.all([waitForPhase(requester, 'ruled', 'to-cancel', ['Running'], 30_000), waitForPhase(requester, 'finisher', 'to-finish', ['Running'], 30_000)]);
    // Both namespaces lose their rules.
    await configure(BASE);
    const c = await waitForPhase(requester, 'ruled', 'to-cancel', FINAL, 60_000);
    assert.equal(c.status?.conditions?.[0]?.reason, 'Failed');
    assert.match(messageOf(c), new RegExp(`^PipelineRun ${NS}/${prC.metadata.name} failed: cancelled because the configuration no longer allows it: namespace "ruled" on remote "default" is not on the allowList`));
    assert.equal((await getRequest(requester, 'finisher', 'to-finish')).status?.conditions?.[0]?.reason, 'Running', 'onRevoke finish: still running');
    await releaseRun(env, prF.metadata.name!);
    const fd = await waitForPhase(requester, 'finisher', 'to-finish', FINAL, 60_000);
    assert.equal(fd.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(fd));
  });

  test('a temporary grant (expires): runs before, its run cancelled at the instant with nothing else changed, Rejected after; a time that is not one is refused by the API server', async () => {
    // The API server checks the format (date-time) of the CRD.
    await assert.rejects(setRunConfig(internalAdmin, { ...BASE, rules: [{ ...SIGNING, expires: 'tomorrow' }] }), (e: unknown) => /expires in body must be of type date-time/.test(JSON.stringify((e as { body?: unknown }).body ?? String(e))));
    const expires = new Date(Date.now() + 25_000).toISOString().replace(/\.\d+Z$/, 'Z');
    await configure({ ...BASE, rules: [{ ...SIGNING, expires }] });
    await createRequest(requester, 'ruled', 'temp-runs', { request: 'echo', params: { text: 'release-1' } });
    const ran = await waitForPhase(requester, 'ruled', 'temp-runs', FINAL, 30_000);
    assert.equal(ran.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(ran));
    assert.deepEqual(ran.status?.grant, { rule: 'rules[0] ("signing")', expires }, 'status.grant names the rule and its expiry');
    const gated = await createRequest(requester, 'ruled', 'temp-cancel', { request: 'gated' });
    const pr = await onlyPipelineRunOf(internalAdmin, gated.metadata.uid!);
    await waitForPhase(requester, 'ruled', 'temp-cancel', ['Running'], 30_000);
    assert.ok(Date.now() < Date.parse(expires), 'running before the grant expires (else the test proves nothing)');
    // No configuration change: the expiry alone ends it (onRevoke: cancel).
    const c = await waitForPhase(requester, 'ruled', 'temp-cancel', FINAL, 60_000);
    const endedAt = Date.now();
    assert.equal(c.status?.conditions?.[0]?.reason, 'Failed');
    assert.match(messageOf(c), new RegExp(`^PipelineRun ${NS}/${pr.metadata.name} failed: cancelled because the configuration no longer allows it: Pipeline "gated" was granted to namespace "ruled" on remote "default" by rules\\[0\\] \\("signing"\\) of InternalServicesConfig internal-services/config until ${expires}, and that grant has expired`));
    assert.ok(endedAt >= Date.parse(expires), 'not before the instant');
    assert.ok(endedAt - Date.parse(expires) < 20_000, `ended ${endedAt - Date.parse(expires)} ms after the instant (a look at expiry, not the next resync)`);
    const late = await createRequest(requester, 'ruled', 'temp-late', { request: 'echo', params: { text: 'release-2' } });
    const r = await waitForPhase(requester, 'ruled', 'temp-late', FINAL, 30_000);
    assert.equal(r.status?.conditions?.[0]?.reason, 'Rejected');
    assert.match(messageOf(r), new RegExp(`^Pipeline "echo" was granted to namespace "ruled" on remote "default" by rules\\[0\\] \\("signing"\\) of InternalServicesConfig internal-services/config until ${expires}, and that grant has expired; ask the administrators of the internal cluster to renew it`));
    assert.deepEqual(await pipelineRunsFor(internalAdmin, late.metadata.uid!), [], 'nothing ran for the late request');
    await configure(BASE);
  });
});


describe('capacity (real Tekton, pods simulated)', () => {
  test('beyond capacity.maxRunning requests wait (Queued, with their position) and start in fair order between namespaces, not arrival order', async () => {
    await configure({ allowList: [TENANT, 'finisher'], capacity: { maxRunning: 1 } });
    const a1 = await createRequest(requester, TENANT, 'cap-a1', { request: 'gated' });
    await waitForPhase(requester, TENANT, 'cap-a1', ['Running'], 30_000);
    const a2 = await createRequest(requester, TENANT, 'cap-a2', { request: 'gated' });
    const a3 = await createRequest(requester, TENANT, 'cap-a3', { request: 'gated' });
    await waitForPhase(requester, TENANT, 'cap-a3', ['Queued'], 30_000);
    const b1 = await createRequest(requester, 'finisher', 'cap-b1', { request: 'gated' });
    const q = await waitForPhase(requester, 'finisher', 'cap-b1', ['Queued'], 30_000);
    assert.match(messageOf(q), /^waiting for a free slot on the internal cluster: all 1 slots are taken \(capacity\.maxRunning; 1 PipelineRuns running\); position \d of 3 waiting \(namespaces take turns\)$/);
    const prOf = async (r: { metadata: { uid?: string } }) => (await onlyPipelineRunOf(internalAdmin, r.metadata.uid!)).metadata.name!;
    // Each time the running one ends, the next in fair order starts: b1 (the other namespace's turn, though it came last), then a2, then a3.
    const order: Array<[string, string, { metadata: { uid?: string } }]> = [[TENANT, 'cap-a1', a1], ['finisher', 'cap-b1', b1], [TENANT, 'cap-a2', a2], [TENANT, 'cap-a3', a3]];
    for (let i = 0; i < order.length; i++) {
      const [ns, name, r] = order[i]!;
      await waitForPhase(requester, ns, name, ['Running'], 30_000);
      for (const [ons, oname] of order.slice(i + 1)) {
        assert.equal(phaseOf(await getRequest(requester, ons, oname)), 'Queued', `${oname} still waits while ${name} runs`);
      }
      await releaseRun(env, await prOf(r), 30_000);
      const done = await waitForPhase(requester, ns, name, FINAL, 30_000);
      assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    }
    await configure(BASE);
  });
});

describe('idempotent retries (real Tekton, pods simulated)', () => {
  const KEY = 'internal-services.appstudio.redhat.com/idempotency-key';
  const withKey = async (name: string, key: string, spec: InternalRequestSpec) => createRequest(requester, TENANT, name, spec, { [KEY]: key });

  test('a retry while the first runs follows it and ends with its results; after it succeeded, a retry copies them; nothing runs twice', async () => {
    const first = await withKey('idem-1', 'release-42-sign', { request: 'gated' });
    const pr = await onlyPipelineRunOf(internalAdmin, first.metadata.uid!);
    await waitForPhase(requester, TENANT, 'idem-1', ['Running'], 30_000);
    const retry = await withKey('idem-2', 'release-42-sign', { request: 'gated' });
    const following = await waitForPhase(requester, TENANT, 'idem-2', ['Following'], 30_000);
    assert.match(messageOf(following), /^following request "idem-1", which has the same idempotency key "release-42-sign" and spec/);
    const other = await withKey('idem-other', 'release-42-sign', { request: 'echo', params: { text: 'different' } });
    const conflict = await waitForPhase(requester, TENANT, 'idem-other', FINAL, 30_000);
    assert.equal(conflict.status?.conditions?.[0]?.reason, 'Rejected');
    assert.match(messageOf(conflict), /idempotency key "release-42-sign" is already used by request "idem-1" with a different spec/);
    await releaseRun(env, pr.metadata.name!);
    const [a, b] = await Promise.all([waitForPhase(requester, TENANT, 'idem-1', FINAL, 60_000), waitForPhase(requester, TENANT, 'idem-2', FINAL, 60_000)]);
    assert.equal(a.status?.conditions?.[0]?.reason, 'Succeeded');
    assert.equal(b.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(b));
    assert.deepEqual(b.status?.results, a.status?.results);
    assert.deepEqual(b.status?.followed, { name: 'idem-1', uid: first.metadata.uid });
    const late = await withKey('idem-3', 'release-42-sign', { request: 'gated' });
    const copied = await waitForPhase(requester, TENANT, 'idem-3', FINAL, 30_000);
    assert.equal(copied.status?.conditions?.[0]?.reason, 'Succeeded');
    assert.match(messageOf(copied), /already succeeded .*its results are copied, nothing ran again/);
    assert.deepEqual(copied.status?.results, { out: 'released' });
    for (const r of [retry, late, other]) assert.deepEqual(await pipelineRunsFor(internalAdmin, r.metadata.uid!), [], `${r.metadata.name} never had a PipelineRun`);
  });

  test('two retries at the same moment: exactly one runs; after a failure a retry runs again', async () => {
    const [x, y] = await Promise.all([withKey('idem-x', 'burst', { request: 'echo', params: { text: 'once' } }), withKey('idem-y', 'burst', { request: 'echo', params: { text: 'once' } })]);
    const [dx, dy] = await Promise.all([waitForPhase(requester, TENANT, 'idem-x', FINAL, 60_000), waitForPhase(requester, TENANT, 'idem-y', FINAL, 60_000)]);
    assert.deepEqual([dx.status?.conditions?.[0]?.reason, dy.status?.conditions?.[0]?.reason], ['Succeeded', 'Succeeded']);
    assert.deepEqual(dx.status?.results, { out: 'once' });
    assert.deepEqual(dy.status?.results, { out: 'once' });
    assert.equal([dx, dy].filter((d) => d.status?.followed).length, 1, 'one ran, the other followed');
    const ran = [x, y].filter((r, i) => ![dx, dy][i]!.status?.followed);
    assert.equal(ran.length, 1);
    const failed = await withKey('idem-f1', 'flaky', { request: 'fails' });
    const f1 = await waitForPhase(requester, TENANT, 'idem-f1', FINAL, 60_000);
    assert.equal(f1.status?.conditions?.[0]?.reason, 'Failed');
    const again = await withKey('idem-f2', 'flaky', { request: 'fails' });
    const f2 = await waitForPhase(requester, TENANT, 'idem-f2', FINAL, 60_000);
    assert.equal(f2.status?.conditions?.[0]?.reason, 'Failed');
    assert.equal(f2.status?.followed, undefined, 'it ran itself');
    assert.match(f2.status?.pipelineRun ?? '', /ir-/);
    assert.notEqual(f2.status?.pipelineRun, f1.status?.pipelineRun);
    assert.equal(f2.status?.pipelineRun, `${NS}/ir-${again.metadata.uid}`);
    assert.equal(f1.status?.pipelineRun, `${NS}/ir-${failed.metadata.uid}`);
  });
});

describe('request lifecycle (real Tekton, pods simulated)', () => {
  test('ttlSecondsAfterFinished: a finished request is deleted from the remote cluster after that time (with the opt-in right)', async () => {
    await applyObjects(env.remote.identities.admin.kubeConfig(), loadManifests(join(repoRoot(), 'config', 'rbac', 'remote-ttl')) as never);
    await configure({ ...BASE, ttlSecondsAfterFinished: 2 });
    const r = await createRequest(requester, TENANT, 'short-lived', { request: 'echo', params: { text: 'bye' } }, { release: 'app-9' });
    const pr = await onlyPipelineRunOf(internalAdmin, r.metadata.uid!);
    assert.equal(pr.metadata.labels?.['release'], 'app-9', "the request's labels are on its PipelineRun");
    const done = await waitForPhase(requester, TENANT, 'short-lived', FINAL, 60_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded');
    await waitFor('the finished request to be deleted', async () => {
      try {
        await getRequest(requester, TENANT, 'short-lived');
        return false;
      } catch (e) {
        return (e as { code?: number }).code === 404;
      }
    }, 20_000);
    await configure(BASE);
  });
});
