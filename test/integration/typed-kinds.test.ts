/**
 * Typed request kinds end to end, on the real control planes with REAL
 * Tekton (pods simulated), the controller as its CLI process: the sample
 * RequestDefinitions (config/samples/kinds/signing and .../ticketing), their remote CRDs and RBAC rendered by `kinds render` from
 * the definitions and the Pipelines the internal cluster has, then:
 *  - the apiserver refuses malformed requests before the controller sees them;
 *  - a valid SigningRequest runs its Pipeline with the mapped params (a string,
 *    an array, an object) and shows only the results its definition names;
 *  - two kinds mapped to two Pipelines, beside InternalRequest, in one controller;
 *  - RBAC per kind: a requester given one kind is refused the other;
 *  - a field added to the definition and the Pipeline rolls out while a
 *    request is in flight, which finishes with one PipelineRun;
 *  - a definition set `served: false`, then removed, stops its kind: its
 *    requests are left as they are, the other kinds are served.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { repoRoot } from '../../src/api/crd-render.js';
import { REQUEST_DEFINITION, type RequestDefinition } from '../../src/api/request-definition.js';
import type { InternalRequest } from '../../src/api/types.js';
import { applyObjects, ensureNamespace, grantRequester, installProject, startEnvironment, type Environment } from '../../src/localenv/index.js';
import { api, CLI, createRequest, expectAccess, NS, pipelineRunsFor, releaseRun, setRunConfig, startController, waitFor, waitForPhase, type ControllerProcess } from './helpers.js';

const SAMPLE = join(repoRoot(), 'config', 'samples', 'kinds', 'signing');
const SR = { group: 'signing.example.com', version: 'v1alpha1', plural: 'signingrequests' };
const TR = { group: 'tickets.example.com', version: 'v1alpha1', plural: 'ticketrequests' };
const RD = { group: REQUEST_DEFINITION.group, version: REQUEST_DEFINITION.version, plural: REQUEST_DEFINITION.plural };
const DIGEST = `quay.io/org/app@sha256:${'a'.repeat(64)}`;
const FINAL = ['Succeeded', 'Failed', 'Rejected'];
const execFileP = promisify(execFile);

let env: Environment;
let controller: ControllerProcess;
let remoteAdmin: KubeConfig;
let internalAdmin: KubeConfig;
let requester: KubeConfig;
let requesterUser: string;

type Typed = { metadata: { name: string; uid: string }; spec: Record<string, unknown>; status?: InternalRequest['status'] };
const reason = (r: { status?: InternalRequest['status'] }) => r.status?.conditions?.[0]?.reason;

/** The sample Pipeline, its step gated when asked (it then runs until released). */
function samplePipeline(gated = false, extraParam = false): Record<string, unknown> {
  const p = parseYaml(readFileSync(join(SAMPLE, 'pipeline.yaml'), 'utf8')) as { metadata: Record<string, unknown>; spec: { params: unknown[]; tasks: Array<{ taskSpec: { steps: Array<{ env: Array<{ name: string; value: string }> }> } }> } };
  p.metadata['namespace'] = NS;
  // The simulated kubelet runs no script: it reports what these say (the sample itself has none of them).
  p.spec.tasks[0]!.taskSpec.steps[0]!.env.push(
    { name: 'SIMULATED_RESULT_signature', value: 'sig($(params.image))' },
    { name: 'SIMULATED_RESULT_signed-by', value: '$(params.identity) with $(params.key-ref)' },
    { name: 'SIMULATED_RESULT_log', value: 'log entry of $(params.image)' },
  );
  if (gated) p.spec.tasks[0]!.taskSpec.steps[0]!.env.push({ name: 'SIMULATED_DURATION', value: 'gate' });
  if (extraParam) p.spec.params.push({ name: 'priority', type: 'string', default: 'normal', description: 'How urgent the signature is.' });
  return p;
}

function sampleDefinition(patch: (spec: Record<string, unknown>) => void = () => {}): Record<string, unknown> {
  const d = parseYaml(readFileSync(join(SAMPLE, 'definition.yaml'), 'utf8')) as { metadata: Record<string, unknown>; spec: Record<string, unknown> };
  d.metadata['namespace'] = NS;
  patch(d.spec);
  return d;
}

/** The second sample kind (config/samples/kinds/ticketing), as shipped. */
const TICKETING = join(repoRoot(), 'config', 'samples', 'kinds', 'ticketing');
const ticketPipeline = (() => {
  const p = parseYaml(readFileSync(join(TICKETING, 'pipeline.yaml'), 'utf8')) as { spec: { tasks: Array<{ taskSpec: { steps: Array<{ env: Array<{ name: string; value: string }> }> } }> } };
  // For the simulated kubelet, which runs no script.
  p.spec.tasks[0]!.taskSpec.steps[0]!.env.push(
    { name: 'SIMULATED_RESULT_ticket', value: '$(params.queue)-1 $(params.priority) $(params.summary)' },
    { name: 'SIMULATED_RESULT_url', value: 'https://tracker.example/browse/$(params.queue)-1' },
  );
  return { ...p, metadata: { name: 'open-ticket', namespace: NS } };
})();
const ticketDefinition = { ...(parseYaml(readFileSync(join(TICKETING, 'definition.yaml'), 'utf8')) as { spec: Record<string, unknown> }), metadata: { name: 'ticketrequests', namespace: NS } };

/** `internal-services kinds render NAME --rbac` against the internal cluster, applied on the remote one. */
async function renderAndApply(name: string): Promise<string> {
  const { stdout } = await execFileP(process.execPath, [CLI, 'kinds', 'render', name, '--rbac', '--kubeconfig', env.internal.identities.admin.kubeconfigPath, '-n', NS, '--controller', `user:${env.remote.identities.controller.username}`]);
  const objs = parseAllDocuments(stdout).map((d) => d.toJS() as Record<string, unknown>);
  await applyObjects(remoteAdmin, objs as never);
  return stdout;
}

async function definitionServed(name: string, status: 'True' | 'False', reasonWanted?: string): Promise<RequestDefinition> {
  return waitFor(`RequestDefinition ${name} Served=${status}`, async () => {
    const d = (await api(internalAdmin).getNamespacedCustomObject({ ...RD, namespace: NS, name })) as RequestDefinition;
    const c = d.status?.conditions?.find((x) => x.type === 'Served');
    return c?.status === status && (!reasonWanted || c.reason === reasonWanted) && d.status?.observedGeneration === d.metadata.generation ? d : undefined;
  }, 30_000);
}

async function create(res: typeof SR, namespace: string, name: string, kind: string, spec: Record<string, unknown>, kc = requester): Promise<Typed> {
  return (await api(kc).createNamespacedCustomObject({ ...res, namespace, body: { apiVersion: `${res.group}/${res.version}`, kind, metadata: { name, namespace }, spec } })) as Typed;
}

async function get(res: typeof SR, namespace: string, name: string): Promise<Typed> {
  return (await api(requester).getNamespacedCustomObject({ ...res, namespace, name })) as Typed;
}

async function finished(res: typeof SR, namespace: string, name: string, timeoutMs = 60_000): Promise<Typed> {
  let last: Typed | undefined;
  try {
    return await waitFor(`${res.plural} ${namespace}/${name} finished`, async () => {
      last = await get(res, namespace, name);
      return FINAL.includes(reason(last) ?? '') ? last : undefined;
    }, timeoutMs);
  } catch (e) {
    throw new Error(`${(e as Error).message}; its status: ${JSON.stringify(last?.status)}`);
  }
}

/** The apiserver's refusal of a create, as status code and message. */
async function refused(res: typeof SR, kind: string, name: string, spec: Record<string, unknown>, namespace = 'team-a'): Promise<{ code: number; message: string }> {
  try {
    await create(res, namespace, name, kind, spec);
  } catch (e) {
    const err = e as { code?: number; body?: string };
    let message = String(err.body ?? e);
    try {
      message = (JSON.parse(message) as { message: string }).message;
    } catch {
      // not a Status: kept as it is
    }
    return { code: err.code ?? 0, message };
  }
  assert.fail(`${kind} ${name} was accepted`);
}

before(async () => {
  env = await startEnvironment({ tekton: true });
  await installProject(env);
  remoteAdmin = env.remote.identities.admin.kubeConfig();
  internalAdmin = env.internal.identities.admin.kubeConfig();
  requester = env.remote.identities.requester!.kubeConfig();
  requesterUser = env.remote.identities.requester?.username ?? 'requester';
  for (const ns of ['team-a', 'team-b']) await grantRequester(env, ns);
  // A third kind whose CRD is never installed on the remote: it must hold nothing else up.
  const auditDefinition = { ...ticketDefinition, metadata: { name: 'auditrequests', namespace: NS }, spec: { group: 'audit.example.com', kind: 'AuditRequest', request: 'open-ticket' } };
  await applyObjects(internalAdmin, [samplePipeline(), ticketPipeline, sampleDefinition(), ticketDefinition, auditDefinition] as never);
  // debug: PipelineRuns are kept once finished, for the test to read their params.
  await setRunConfig(internalAdmin, { allowList: ['team-a', 'team-b'], debug: true });
  await renderAndApply('signingrequests');
  await renderAndApply('ticketrequests');
  // The requester may make SigningRequests in team-a and TicketRequests in team-b, nothing else of the two.
  const bind = (ns: string, plural: string, group: string) => ({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: `${plural}-requester`, namespace: ns },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `internal-services-${plural}.${group}-requester` },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: requesterUser }],
  });
  await applyObjects(remoteAdmin, [bind('team-a', SR.plural, SR.group), bind('team-b', TR.plural, TR.group)] as never);
  controller = await startController(env);
});

after(async () => {
  await controller?.kill('SIGTERM');
  await env?.stop();
});

describe('typed request kinds (real control planes, real Tekton, pods simulated)', () => {
  test('both definitions are served, and the rendered CRD describes the fields from the Pipeline', async () => {
    const d = await definitionServed('signingrequests', 'True', 'Served');
    assert.equal(d.status?.resource, 'signingrequests.signing.example.com/v1alpha1');
    await definitionServed('ticketrequests', 'True', 'Served');
    // The kind whose CRD the remote lacks: named in its status, while the others are served (below).
    const audit = await definitionServed('auditrequests', 'False', 'NotListable');
    assert.match(audit.status?.conditions?.[0]?.message ?? '', /not listable on remote default .*install its CRD there/);
    const rendered = readFileSync(join(SAMPLE, 'remote', 'crd.yaml'), 'utf8');
    const onCluster = (await api(remoteAdmin).getClusterCustomObject({ group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', name: 'signingrequests.signing.example.com' })) as { spec: { versions: Array<{ schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, { description?: string; type: string }>; required: string[] } } } } }> } };
    const spec = onCluster.spec.versions[0]!.schema.openAPIV3Schema.properties.spec;
    assert.deepEqual(Object.keys(spec.properties).sort(), ['image', 'note', 'signer', 'tags']);
    assert.deepEqual(spec.required.sort(), ['image', 'signer']);
    assert.equal(spec.properties['tags']!.type, 'array');
    assert.equal(spec.properties['signer']!.type, 'object');
    assert.match(spec.properties['image']!.description ?? '', /image to sign/);
    // What the cluster has is what the committed sample says (rendered from the same files).
    assert.ok(rendered.includes('sha256:[a-f0-9]{64}'));
  });

  test('the apiserver refuses malformed requests before the controller sees them, naming the field', async () => {
    const noDigest = await refused(SR, 'SigningRequest', 'bad-image', { image: 'quay.io/org/app:latest', signer: { keyRef: 'k', identity: 'i' } });
    assert.equal(noDigest.code, 422);
    assert.match(noDigest.message, /spec\.image/);
    const noSigner = await refused(SR, 'SigningRequest', 'no-signer', { image: DIGEST });
    assert.equal(noSigner.code, 422);
    assert.match(noSigner.message, /spec\.signer: Required value/);
    const tagsNotList = await refused(SR, 'SigningRequest', 'bad-tags', { image: DIGEST, tags: 'v1', signer: { keyRef: 'k', identity: 'i' } });
    assert.match(tagsNotList.message, /spec\.tags: Invalid value: "string"/);
    const badEnum = await refused(TR, 'TicketRequest', 'bad-priority', { summary: 's', priority: 'urgent' }, 'team-b');
    assert.match(badEnum.message, /spec\.priority: Unsupported value: "urgent"/);
    // None reached the cluster's storage: nothing for the controller to see.
    const list = (await api(requester).listNamespacedCustomObject({ ...SR, namespace: 'team-a' })) as { items: unknown[] };
    assert.equal(list.items.length, 0);
  });

  test('a SigningRequest runs its Pipeline with the typed fields as params, and shows the results its definition names', async () => {
    const sr = await create(SR, 'team-a', 'sign-1', 'SigningRequest', { image: DIGEST, tags: ['v1', 'latest'], signer: { keyRef: 'release-key', identity: 'release-bot' } });
    const done = await finished(SR, 'team-a', 'sign-1');
    assert.equal(reason(done), 'Succeeded', done.status?.conditions?.[0]?.message);
    assert.deepEqual(done.status?.results, { signature: `sig(${DIGEST})`, 'signed-by': 'release-bot with release-key' }, 'the log result is not shown');
    const prs = await pipelineRunsFor(internalAdmin, sr.metadata.uid);
    assert.equal(prs.length, 1);
    const params = Object.fromEntries((prs[0]!.spec?.params ?? []).map((p) => [p.name, p.value]));
    assert.deepEqual(params, { image: DIGEST, tags: ['v1', 'latest'], signer: { keyRef: 'release-key', identity: 'release-bot' } });
    assert.equal(prs[0]!.spec?.pipelineRef?.name, 'sign-artifact');
    assert.equal(prs[0]!.metadata?.annotations?.['internal-services.appstudio.redhat.com/request-kind'], 'SigningRequest');
  });

  test('two kinds with two Pipelines beside InternalRequest in one controller; a renamed field reaches its param', async () => {
    await createRequest(requester, 'team-a', 'plain-1', { request: 'open-ticket', params: { summary: 'plain' } });
    // queue is hidden: no field of the kind, so the API server drops it and the Pipeline's default applies.
    const tr = await create(TR, 'team-b', 'ticket-1', 'TicketRequest', { summary: 'disk full', priority: 'high', queue: 'security' });
    assert.equal((await get(TR, 'team-b', 'ticket-1')).spec['queue'], undefined, 'not stored');
    const done = await finished(TR, 'team-b', 'ticket-1');
    assert.equal(reason(done), 'Succeeded', done.status?.conditions?.[0]?.message);
    // Only the results the definition names are shown.
    assert.deepEqual(done.status?.results, { ticket: 'release-engineering-1 high disk full', url: 'https://tracker.example/browse/release-engineering-1' });
    const prs = await pipelineRunsFor(internalAdmin, tr.metadata.uid);
    assert.equal(prs[0]!.spec?.pipelineRef?.name, 'open-ticket');
    const plain = await waitForPhase(requester, 'team-a', 'plain-1', FINAL, 60_000);
    assert.equal(reason(plain), 'Succeeded');
  });

  test('RBAC per kind: a requester given one kind is refused the other (a real create, and SubjectAccessReview)', async () => {
    const denied = await create(TR, 'team-a', 'not-mine', 'TicketRequest', { summary: 'x' }).then(() => 0, (e: { code?: number }) => e.code ?? -1);
    assert.equal(denied, 403);
    const denied2 = await create(SR, 'team-b', 'not-mine', 'SigningRequest', { image: DIGEST, signer: { keyRef: 'k', identity: 'i' } }).then(() => 0, (e: { code?: number }) => e.code ?? -1);
    assert.equal(denied2, 403);
    const who = { user: requesterUser, groups: ['system:authenticated'] };
    await expectAccess(remoteAdmin, 'remote: ', who, true, [
      { verb: 'create', group: SR.group, resource: SR.plural, namespace: 'team-a' },
      { verb: 'create', group: TR.group, resource: TR.plural, namespace: 'team-b' },
    ]);
    await expectAccess(remoteAdmin, 'remote: ', who, false, [
      { verb: 'create', group: TR.group, resource: TR.plural, namespace: 'team-a' },
      { verb: 'create', group: SR.group, resource: SR.plural, namespace: 'team-b' },
      { verb: 'update', group: SR.group, resource: SR.plural, subresource: 'status', namespace: 'team-a' },
    ]);
    const ctl = { user: env.remote.identities.controller.username, groups: ['system:authenticated'] };
    await expectAccess(remoteAdmin, 'remote: ', ctl, true, [
      { verb: 'watch', group: SR.group, resource: SR.plural },
      { verb: 'update', group: SR.group, resource: SR.plural, subresource: 'status', namespace: 'team-a' },
    ]);
    await expectAccess(remoteAdmin, 'remote: ', ctl, false, [{ verb: 'create', group: SR.group, resource: SR.plural, namespace: 'team-a' }]);
  });

  test('a field added to the definition and its Pipeline rolls out while a request is in flight', async () => {
    await applyObjects(internalAdmin, [samplePipeline(true)] as never);
    const inFlight = await create(SR, 'team-a', 'in-flight', 'SigningRequest', { image: DIGEST, signer: { keyRef: 'k', identity: 'i' } });
    const pr = await waitFor('the in-flight PipelineRun', async () => (await pipelineRunsFor(internalAdmin, inFlight.metadata.uid))[0]);
    await waitFor('in-flight Running', async () => reason(await get(SR, 'team-a', 'in-flight')) === 'Running');
    // The service adds a param; its definition narrows it; the admin renders and applies the new CRD.
    await applyObjects(internalAdmin, [samplePipeline(true, true), sampleDefinition((s) => (s['fields'] as unknown[]).push({ param: 'priority', enum: ['normal', 'urgent'] }))] as never);
    const seen = controller.lines.length;
    await definitionServed('signingrequests', 'True', 'Served');
    await waitFor('the kind served anew', async () => controller.lines.slice(seen).some((l) => l.msg === 'request kinds served'));
    const crd = await renderAndApply('signingrequests');
    assert.match(crd, /priority:\n\s+description: How urgent the signature is\./);
    const body = { apiVersion: `${SR.group}/${SR.version}`, kind: 'SigningRequest', metadata: { name: 'urgent-1', namespace: 'team-a' }, spec: { image: DIGEST, priority: 'urgent', signer: { keyRef: 'k', identity: 'i' } } };
    // Until the apiserver serves the new schema, it would prune the unknown field: a dry run says when it keeps it.
    await waitFor('the new field kept by the apiserver', async () => {
      const dry = (await api(requester).createNamespacedCustomObject({ ...SR, namespace: 'team-a', body, dryRun: 'All' }).catch(() => undefined)) as Typed | undefined;
      return dry?.spec['priority'] === 'urgent';
    }, 30_000);
    const urgent = await create(SR, 'team-a', 'urgent-1', 'SigningRequest', body.spec);
    await releaseRun(env, pr.metadata!.name!);
    const done = await finished(SR, 'team-a', 'in-flight');
    assert.equal(reason(done), 'Succeeded', done.status?.conditions?.[0]?.message);
    assert.equal((await pipelineRunsFor(internalAdmin, inFlight.metadata.uid)).length, 1, 'one PipelineRun for the request in flight');
    const upr = await waitFor('the new request\'s PipelineRun', async () => (await pipelineRunsFor(internalAdmin, urgent.metadata.uid))[0]);
    assert.equal((upr.spec?.params ?? []).find((p) => p.name === 'priority')?.value, 'urgent', 'the field added in flight reaches its param');
    await releaseRun(env, upr.metadata!.name!);
    assert.equal(reason(await finished(SR, 'team-a', 'urgent-1')), 'Succeeded');
  });

  test('a kind no longer served (served: false, then removed) leaves its requests as they are; the other kinds go on', async () => {
    await applyObjects(internalAdmin, [sampleDefinition((s) => (s['served'] = false))] as never);
    const d = await definitionServed('signingrequests', 'False', 'NotServed');
    assert.match(d.status?.conditions?.[0]?.message ?? '', /left as they are/);
    await waitFor('the kind stopped', async () => controller.lines.some((l) => l.msg === 'request kinds served' && Array.isArray(l['stopped']) && (l['stopped'] as string[]).includes('SigningRequest')));
    const waiting = await create(SR, 'team-a', 'unserved', 'SigningRequest', { image: DIGEST, signer: { keyRef: 'k', identity: 'i' } });
    // Another kind is served meanwhile: its request finishes while the SigningRequest stays untouched.
    await create(TR, 'team-b', 'ticket-2', 'TicketRequest', { summary: 'still served' });
    assert.equal(reason(await finished(TR, 'team-b', 'ticket-2')), 'Succeeded');
    const still = await get(SR, 'team-a', 'unserved');
    assert.equal(still.status, undefined, 'no status written on a request of a kind not served');
    assert.equal((await pipelineRunsFor(internalAdmin, waiting.metadata.uid)).length, 0);
    // Removed altogether: the same, and the finished requests of the kind keep their outcome.
    await api(internalAdmin).deleteNamespacedCustomObject({ ...RD, namespace: NS, name: 'signingrequests' });
    await ensureNamespace(remoteAdmin, 'team-a');
    await create(TR, 'team-b', 'ticket-3', 'TicketRequest', { summary: 'after the removal' });
    assert.equal(reason(await finished(TR, 'team-b', 'ticket-3')), 'Succeeded');
    assert.equal((await get(SR, 'team-a', 'unserved')).status, undefined);
    assert.equal(reason(await get(SR, 'team-a', 'sign-1')), 'Succeeded');
    // Served again: the waiting request is picked up where it was.
    await applyObjects(internalAdmin, [samplePipeline(), sampleDefinition()] as never);
    assert.equal(reason(await finished(SR, 'team-a', 'unserved')), 'Succeeded');
  });
});
