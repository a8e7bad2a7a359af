/**
 * Tekton Chains, REAL, next to the controller: the controller of
 * github.com/tektoncd/chains at the version of hack/platform/versions.env
 * (v0.28.1; built by hack/platform/install.sh) runs
 * against the internal control plane with real Tekton (controller, resolvers,
 * webhook); only the TaskRun pods are SIMULATED (no kubelet). Chains signs
 * each PipelineRun with an ECDSA P-256 key this test makes (node:crypto),
 * storing the DSSE envelope as annotations on the run; the controller (its
 * CLI process) relays it into the request's status.attestation before it
 * deletes the run; the requester's `verify` (its CLI process, and the kubectl
 * plugin) checks it with the public key.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, createPublicKey } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PatchStrategy, setHeaderOptions, Watch, type KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { startEnvironment, type Environment, applyObjects, chainsVersion, grantRequester, installProject, CHAINS_IDENTITY, CHAINS_NAMESPACE, type GitRepository } from '../../src/localenv/index.js';
import { chainsKeys, sha256Hex, sshFingerprint, CHAINS_PIPELINERUN_FINALIZER } from '../../src/tekton/chains.js';
import type { InternalRequest, InternalRequestSpec } from '../../src/api/types.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';
import { startCli, expectCode } from './cli-run.js';
import {
  api,
  createRequest,
  getRequest,
  IR,
  messageOf,
  NS,
  onlyPipelineRunOf,
  pipelineRunsFor,
  releaseRun,
  runPlugin,
  sample,
  scrape,
  setRunConfigAndWait,
  simulatedStep,
  startController,
  testPipeline,
  waitFor,
  waitForPhase,
  type ControllerProcess,
} from './helpers.js';

const TENANT = 'release-team';
const FINAL = ['Succeeded', 'Failed', 'Rejected'];
let env: Environment;
let internalAdmin: KubeConfig;
let remoteAdmin: KubeConfig;
let requester: KubeConfig;
let requesterKubeconfig: string;
let controller: ControllerProcess;
let metricsPort: number;
let catalog: GitRepository;
let catalogHead: string;
let publicKeyFile: string;
let wrongKeyFile: string;
let fingerprint: string;
/** Every PipelineRun the internal cluster showed, in order (a watch from the start). */
const seen: Array<{ type: string; pr: PipelineRun }> = [];
let stopWatch: (() => void) | undefined;

const gitRef = (url: string, revision: string, pathInRepo: string) => ({ resolver: 'git', params: [{ name: 'url', value: url }, { name: 'revision', value: revision }, { name: 'pathInRepo', value: pathInRepo }] });
const configure = (spec: Record<string, unknown>): Promise<void> => setRunConfigAndWait(internalAdmin, controller, spec);
const CONFIG = (chains: Record<string, unknown> = { enabled: true }) => ({
  allowList: [TENANT],
  sources: { git: [{ urls: [catalog.url], revisions: ['main'], commits: { reachable: true }, paths: ['pipelines/**', 'tasks/**'] }], resolutionTimeout: '20s' },
  chains,
});

/** The controller's status writes to one request, from the remote API server's audit log: PUTs and merge patches. */
function statusWrites(name: string): { update: number; patch: number } {
  const out = { update: 0, patch: 0 };
  for (const line of readFileSync(env.remote.auditLogPath!, 'utf8').split('\n')) {
    if (!line) continue;
    const e = JSON.parse(line) as { verb: string; user: { username: string }; objectRef?: { resource?: string; subresource?: string; name?: string; namespace?: string }; responseStatus?: { code?: number } };
    const o = e.objectRef;
    if (e.user.username !== env.remote.identities.controller.username || o?.resource !== 'internalrequests' || o.subresource !== 'status' || o.namespace !== TENANT || o.name !== name) continue;
    if ((e.responseStatus?.code ?? 0) >= 300) continue;
    if (e.verb === 'update') out.update++;
    if (e.verb === 'patch') out.patch++;
  }
  return out;
}

/** verify, as the requester's CLI process. */
const verify = (name: string, key: string, ...more: string[]) =>
  startCli(['request', 'verify', `${TENANT}/${name}`, '--key', key, '--kubeconfig', requesterKubeconfig, ...more]).done;

async function waitForAttestation(name: string, timeoutMs = 60_000): Promise<InternalRequest> {
  return waitFor(`status.attestation of ${name}`, async () => {
    const r = await getRequest(requester, TENANT, name);
    return r.status?.attestation ? r : undefined;
  }, timeoutMs);
}

before(async () => {
  const t0 = Date.now();
  // The signing key: ECDSA P-256, the private half as Chains' x509 signer reads it (PKCS#8 PEM).
  const key = generateKeyPairSync('ec', { namedCurve: 'prime256v1', privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
  env = await startEnvironment({ tekton: true, chains: { privateKeyPem: key.privateKey }, audit: true });
  console.log(
    `environment ready in ${Date.now() - t0} ms: real Tekton ${env.tekton!.version} (pods SIMULATED), real Tekton Chains ${env.chains!.version} ready ${env.chains!.startupMs} ms after it was started ` +
      `(binary lookup ${env.chains!.installMs} ms; signs as ${CHAINS_IDENTITY})`,
  );
  assert.equal(env.chains!.publicKeyPem, key.publicKey);
  publicKeyFile = join(env.dir, 'chains.pub');
  writeFileSync(publicKeyFile, key.publicKey);
  wrongKeyFile = join(env.dir, 'other.pub');
  writeFileSync(wrongKeyFile, generateKeyPairSync('ec', { namedCurve: 'prime256v1', publicKeyEncoding: { type: 'spki', format: 'pem' }, privateKeyEncoding: { type: 'pkcs8', format: 'pem' } }).publicKey);
  fingerprint = sshFingerprint(createPublicKey(key.publicKey))!;

  await installProject(env);
  internalAdmin = env.internal.identities.admin.kubeConfig();
  remoteAdmin = env.remote.identities.admin.kubeConfig();
  requester = env.remote.identities.requester!.kubeConfig();
  requesterKubeconfig = env.remote.identities.requester!.kubeconfigPath;
  await grantRequester(env, TENANT);

  const watch = new Watch(internalAdmin);
  const w = await watch.watch(`/apis/tekton.dev/v1/namespaces/${NS}/pipelineruns`, {}, (type, obj: PipelineRun) => seen.push({ type, pr: obj }), () => {});
  stopWatch = () => w.abort();

  catalog = await env.tekton!.git.repository('catalog');
  const task = (name: string, vars: Record<string, string>, results: string[] = []) =>
    stringify({ apiVersion: 'tekton.dev/v1', kind: 'Task', metadata: { name }, spec: { params: [{ name: 'image', default: '' }], results: results.map((r) => ({ name: r })), steps: [simulatedStep(name, vars)] } });
  catalogHead = await catalog.commit(
    {
      'pipelines/sign.yaml': stringify({
        apiVersion: 'tekton.dev/v1',
        kind: 'Pipeline',
        metadata: { name: 'sign' },
        spec: {
          params: [{ name: 'image' }],
          results: [{ name: 'signature', value: '$(tasks.sign.results.signature)' }],
          tasks: [{ name: 'sign', params: [{ name: 'image', value: '$(params.image)' }], taskRef: gitRef(catalog.url, 'main', 'tasks/sign.yaml') }],
        },
      }),
      'tasks/sign.yaml': task('sign', { SIMULATED_RESULT_signature: 'sig:$(params.image)' }, ['signature']),
    },
    'the catalog',
  );
  await applyObjects(internalAdmin, [
    testPipeline('gated', { params: [{ name: 'image' }], results: [{ name: 'out', value: '$(tasks.t.results.out)' }], tasks: [{ name: 't', taskSpec: { results: [{ name: 'out' }], steps: [simulatedStep('s', { SIMULATED_DURATION: 'gate', SIMULATED_RESULT_out: 'built:$(params.image)' })] } }] }),
    testPipeline('plain', { params: [{ name: 'image' }], results: [{ name: 'out', value: '$(tasks.t.results.out)' }], tasks: [{ name: 't', taskSpec: { results: [{ name: 'out' }], steps: [simulatedStep('s', { SIMULATED_RESULT_out: 'plain:$(params.image)' })] } }] }),
  ] as never);
  controller = await startController(env, ['--metrics-bind-address', '127.0.0.1:0']);
  metricsPort = Number(String((await controller.waitForLog((l) => l.msg === 'serving metrics')).address).split(':').pop());
  await configure(CONFIG());
});

after(async () => {
  stopWatch?.();
  await controller?.kill('SIGKILL');
  await env?.stop();
});

describe(`Tekton Chains ${chainsVersion()} (real) signs the PipelineRuns; the controller relays the attestation; verify checks it (pods SIMULATED)`, () => {
  test('the controller reads the version the running Chains says (chains-info, as its release writes it): supported', async () => {
    const res = await fetch(`http://127.0.0.1:${controller.healthPort}/readyz?verbose`);
    const text = await res.text();
    assert.equal(res.status, 200);
    assert.match(text, new RegExp(`\\[\\+\\]tekton-chains-version ok: Tekton Chains ${env.chains!.version.replace(/\./g, '\\.')} \\(ConfigMap tekton-chains/chains-info\\): supported \\(v0\\.22\\.0 through v0\\.29\\.x\\)`));
    assert.equal(sample(await scrape(metricsPort), 'internal_services_tekton_component_status', { component: 'chains', reason: 'ok' }), 1);
  });

  test('a resolved Pipeline runs; the outcome is written at once, Chains signs the run, the attestation is relayed, and only then is the run deleted', async () => {
    const spec: InternalRequestSpec = { pipeline: { pipelineRef: gitRef(catalog.url, 'main', 'pipelines/sign.yaml') }, params: { image: 'quay.io/org/app@sha256:abc' } };
    const t0 = Date.now();
    const created = await createRequest(requester, TENANT, 'signed', spec);
    const uid = created.metadata.uid!;
    const pr = await onlyPipelineRunOf(internalAdmin, uid);
    const done = await waitForPhase(requester, TENANT, 'signed', FINAL, 90_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    const tDone = Date.now() - t0;
    const relayed = await waitForAttestation('signed');
    const tRelayed = Date.now() - t0;
    await waitFor('the PipelineRun to be gone', async () => (await pipelineRunsFor(internalAdmin, uid)).length === 0, 30_000);
    const tGone = Date.now() - t0;
    // The contract is untouched: Succeeded, results, what ran.
    assert.equal(relayed.status?.conditions?.[0]?.reason, 'Succeeded');
    assert.deepEqual(relayed.status?.results, { signature: 'sig:quay.io/org/app@sha256:abc' });
    assert.equal(relayed.status?.pipeline?.digest, `sha1:${catalogHead}`);

    // What Chains stored on the run, as the watch saw it.
    const keys = chainsKeys(pr.metadata.uid!);
    const versions = seen.filter((e) => e.pr.metadata.uid === pr.metadata.uid);
    const signedAt = versions.findIndex((e) => e.pr.metadata.annotations?.['chains.tekton.dev/signed'] === 'true');
    const deletingAt = versions.findIndex((e) => e.pr.metadata.deletionTimestamp !== undefined || e.type === 'DELETED');
    assert.ok(signedAt >= 0, 'Chains marked the run signed');
    assert.ok(deletingAt > signedAt, `the run was deleted (version ${deletingAt}) only after Chains had signed it (version ${signedAt})`);
    assert.ok(versions.some((e) => (e.pr.metadata as { finalizers?: string[] }).finalizers?.includes(CHAINS_PIPELINERUN_FINALIZER)), `Chains put its finalizer ${CHAINS_PIPELINERUN_FINALIZER} on the run`);
    const stored = versions[signedAt]!.pr.metadata.annotations!;
    const envelopeJson = Buffer.from(stored[keys.signature]!, 'base64').toString('utf8');
    const envelope = JSON.parse(envelopeJson) as { payloadType: string; payload: string; signatures: Array<{ keyid: string }> };
    assert.equal(envelope.payloadType, 'application/vnd.in-toto+json');
    assert.equal(Buffer.from(envelope.payload, 'base64').toString('base64'), stored[keys.payload], 'the envelope signs the payload Chains stored');
    assert.equal(envelope.signatures[0]?.keyid, fingerprint, "Chains' key id is the SSH fingerprint of the public key");
    const statement = JSON.parse(Buffer.from(envelope.payload, 'base64').toString('utf8')) as { predicateType?: string; predicate?: { buildType?: string } };
    // Chains up to v0.22 converted the run to v1beta1 first; later versions describe the v1 object.
    assert.equal(statement.predicate?.buildType, 'tekton.dev/v1/PipelineRun');
    // Its annotations are written with server-side apply (from v0.27): one field manager owns chains.tekton.dev/*.
    const managers = ((versions[signedAt]!.pr.metadata as { managedFields?: Array<{ manager?: string; operation?: string; fieldsV1?: { 'f:metadata'?: { 'f:annotations'?: Record<string, unknown> } } }> }).managedFields ?? [])
      .filter((m) => Object.keys(m.fieldsV1?.['f:metadata']?.['f:annotations'] ?? {}).includes('f:chains.tekton.dev/signed'));
    assert.deepEqual(managers.map((m) => `${m.manager}/${m.operation}`), ['tekton-chains-controller/Apply'], 'chains.tekton.dev/signed is applied by Chains alone');

    // The relayed attestation.
    const a = relayed.status!.attestation!;
    assert.equal(a.state, 'Signed', a.message);
    assert.equal(a.envelope, stored[keys.signature], 'the envelope as Chains stored it');
    assert.equal(a.digest, `sha256:${sha256Hex(Buffer.from(envelope.payload, 'base64'))}`);
    assert.equal(a.keyId, fingerprint);
    assert.equal(a.predicateType, 'https://slsa.dev/provenance/v0.2');
    assert.equal(a.envelopeBytes, Buffer.byteLength(envelopeJson));

    // The order in the controller's log: outcome, relay, deletion.
    const lines = controller.lines;
    const outcome = lines.findIndex((l) => l.request === `default/${TENANT}/signed` && l.reason === 'Succeeded');
    const relay = lines.findIndex((l) => l.request === `default/${TENANT}/signed` && l.attestation === 'Signed');
    const deleted = lines.findIndex((l) => l.request === `default/${TENANT}/signed` && l.msg === 'PipelineRun deleted');
    assert.ok(outcome >= 0 && relay > outcome && deleted > relay, `outcome ${outcome} < relay ${relay} < deletion ${deleted}`);
    const writes = statusWrites('signed');
    assert.equal(writes.patch, 1, 'the relay is one status write (a merge patch)');
    console.log(
      `request ${TENANT}/signed (pods SIMULATED): Succeeded after ${tDone} ms, attestation relayed after ${tRelayed} ms, PipelineRun gone after ${tGone} ms; ` +
        `payload ${a.digest} signed by ${a.keyId}, envelope ${a.envelopeBytes} bytes; status writes: ${writes.update} updates + ${writes.patch} patch`,
    );
  });

  test('verify (the CLI process, and the kubectl plugin) checks the signature with the public key and says what ran; the wrong key and a tampered envelope fail', async () => {
    const ok = await verify('signed', publicKeyFile);
    expectCode(ok, 0, 'verify with the public key');
    console.log(`verify ${TENANT}/signed (pods SIMULATED):\n${ok.stdout}`);
    assert.match(ok.stdout, /^verified: internalrequest release-team\/signed$/m);
    assert.match(ok.stdout, /predicate https:\/\/slsa\.dev\/provenance\/v0\.2, buildType tekton\.dev\/v1\/PipelineRun, builder https:\/\/tekton\.dev\/chains\/v2/);
    assert.match(ok.stdout, /ok {2}DSSE signature over the payload \(PAE, application\/vnd\.in-toto\+json\) is valid for SHA256:/);
    assert.ok(ok.stdout.includes(`pipeline: git git+${catalog.url} pipelines/sign.yaml revision refs/heads/main pinned sha1:${catalogHead}`), ok.stdout);
    // The Task ran embedded as checked: Tekton resolved nothing, so the reference is the controller's record alone (no material).
    assert.ok(ok.stdout.includes(`reference tasks[sign].taskRef: git git+${catalog.url} tasks/sign.yaml revision refs/heads/main pinned sha1:${catalogHead}\n`), ok.stdout);
    assert.match(ok.stdout, /ok {2}status\.pipeline \(.*\) is what the signed provenance records/);
    const plugin = await runPlugin(['verify', `${TENANT}/signed`, '--key', publicKeyFile, '-o', 'json'], requesterKubeconfig);
    assert.equal(plugin.code, 0, plugin.stderr);
    assert.equal((JSON.parse(plugin.stdout) as { keyId: string }).keyId, fingerprint);

    const wrong = await verify('signed', wrongKeyFile);
    expectCode(wrong, 3, 'verify with another key');
    assert.match(wrong.stderr, /the signature does not verify with SHA256:.*the wrong key\? \[CLI_ATTESTATION_INVALID\]/);

    // Someone with write access to the status (an admin here) alters the signed statement.
    const before = (await getRequest(remoteAdmin, TENANT, 'signed')).status!.attestation!;
    const env0 = JSON.parse(Buffer.from(before.envelope!, 'base64').toString()) as { payload: string };
    const altered = Buffer.from(env0.payload, 'base64').toString().replace('quay.io/org/app@sha256:abc', 'quay.io/org/evil@sha256:abc');
    assert.notEqual(altered, Buffer.from(env0.payload, 'base64').toString());
    const forged = Buffer.from(JSON.stringify({ ...env0, payload: Buffer.from(altered).toString('base64') })).toString('base64');
    await api(remoteAdmin).patchNamespacedCustomObjectStatus(
      { ...IR, namespace: TENANT, name: 'signed', body: { status: { attestation: { envelope: forged } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const tampered = await verify('signed', publicKeyFile);
    expectCode(tampered, 3, 'verify a tampered envelope');
    assert.match(tampered.stderr, /altered after signing \[CLI_ATTESTATION_INVALID\]/);
  });

  test('an installed Pipeline: no attestation while it runs (exit 4); after it, verify names the Pipeline that ran; one extra status write', async () => {
    const created = await createRequest(requester, TENANT, 'gated', { request: 'gated', params: { image: 'img' } });
    const pr = await onlyPipelineRunOf(internalAdmin, created.metadata.uid!);
    await waitForPhase(requester, TENANT, 'gated', ['Running']);
    const early = await verify('gated', publicKeyFile);
    expectCode(early, 4, 'verify a running request');
    assert.match(early.stderr, /has no attestation yet: it has not finished .*\[CLI_ATTESTATION_MISSING\]/);
    await releaseRun(env, pr.metadata.name!);
    const done = await waitForPhase(requester, TENANT, 'gated', FINAL, 60_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    await waitForAttestation('gated');
    await waitFor('the PipelineRun to be gone', async () => (await pipelineRunsFor(internalAdmin, created.metadata.uid!)).length === 0, 30_000);
    const ok = await verify('gated', publicKeyFile);
    expectCode(ok, 0, 'verify');
    assert.match(ok.stdout, /pipeline: gated \(installed in the controller's namespace, run by name: no source digest\)/);
    assert.match(ok.stdout, /ok {2}the Pipeline the request names \(gated\) is the one that ran/);
    assert.match(ok.stdout, /material: oci:\/\/registry\.invalid\/tools sha256:[0-9a-f]{64}/, 'the step image, at the digest the simulated kubelet reported');
    assert.deepEqual(statusWrites('gated'), { update: 2, patch: 1 }, 'Running and Succeeded as without Chains, plus the relay');
  });

  test('artifacts.pipelinerun.signer "none" (Chains v0.28): Chains marks the run signed and stores nothing; the run is deleted at once as Unsigned (no-signature), not after signedTimeout', async () => {
    const log = () => readFileSync(env.chains!.controller.logPath, 'utf8');
    // Each of Chains' two reconcilers logs this once when it takes a new chains-config.
    const reloads = () => log().split('close event to WatchBackends()').length - 1;
    const setChainsConfig = async (extra: Record<string, string>): Promise<void> => {
      const before = reloads();
      await applyObjects(internalAdmin, [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'chains-config', namespace: CHAINS_NAMESPACE }, data: { ...env.chains!.config, ...extra } }] as never);
      await waitFor('Chains to take the new chains-config', async () => reloads() >= before + 2, 30_000, 200);
    };
    await setChainsConfig({ 'artifacts.pipelinerun.signer': 'none' });
    try {
      const t0 = Date.now();
      const created = await createRequest(requester, TENANT, 'signer-none', { request: 'plain', params: { image: 'n' } });
      const pr = await onlyPipelineRunOf(internalAdmin, created.metadata.uid!);
      const r = await waitForAttestation('signer-none', 30_000);
      assert.equal(r.status?.attestation?.state, 'Unsigned');
      assert.match(r.status?.attestation?.message ?? '', /Tekton Chains marked it signed but stored no signature/);
      assert.ok(Date.now() - t0 < 30_000, 'not held for signedTimeout (5m)');
      const marked = seen.filter((e) => e.pr.metadata.uid === pr.metadata.uid).map((e) => e.pr.metadata.annotations ?? {});
      assert.ok(marked.some((a) => a['chains.tekton.dev/signed'] === 'true'), 'Chains marked the run signed');
      assert.ok(!marked.some((a) => a[chainsKeys(pr.metadata.uid!).signature] !== undefined), 'and stored no signature on it');
      await waitFor('the PipelineRun to be gone', async () => (await pipelineRunsFor(internalAdmin, created.metadata.uid!)).length === 0, 30_000);
      await waitFor('the no-signature counter', async () => sample(await scrape(metricsPort), 'internal_services_pipelineruns_deleted_unsigned_total', { reason: 'no-signature', remote: 'default' }) === 1);
    } finally {
      await setChainsConfig({});
    }
  });

  // Last: it stops Chains.
  test('Chains not running: the run waits signedTimeout, then is deleted unsigned; the request says so, the metric counts it, verify exits 4', async () => {
    await env.chains!.controller.stop(2000);
    await configure(CONFIG({ enabled: true, signedTimeout: '3s' }));
    const created = await createRequest(requester, TENANT, 'unsigned', { request: 'plain', params: { image: 'x' } });
    const done = await waitForPhase(requester, TENANT, 'unsigned', FINAL, 60_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    assert.equal((await pipelineRunsFor(internalAdmin, created.metadata.uid!)).length, 1, 'the run stays while it may still be signed');
    const r = await waitForAttestation('unsigned', 30_000);
    assert.equal(r.status?.attestation?.state, 'Unsigned');
    assert.match(r.status?.attestation?.message ?? '', /Tekton Chains had not signed PipelineRun internal-services\/ir-.* within 3s of its completion/);
    assert.equal(r.status?.conditions?.[0]?.reason, 'Succeeded', 'the outcome stands');
    await waitFor('the PipelineRun to be gone', async () => (await pipelineRunsFor(internalAdmin, created.metadata.uid!)).length === 0, 30_000);
    await controller.waitForLog((l) => l.msg === 'PipelineRun deleted without a signature of Tekton Chains' && l.unsigned === 'timeout');
    await waitFor('the unsigned counter', async () => sample(await scrape(metricsPort), 'internal_services_pipelineruns_deleted_unsigned_total', { reason: 'timeout', remote: 'default' }) === 1);
    const v = await verify('unsigned', publicKeyFile);
    expectCode(v, 4, 'verify without an attestation');
    assert.match(v.stderr, /has no attestation \(Unsigned\): Tekton Chains had not signed/);
  });
});
