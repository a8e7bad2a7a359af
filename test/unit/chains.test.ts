/**
 * Tekton Chains, the pure parts: reading what Chains stored on a run
 * (src/tekton/chains.ts), the controller's wait and relay (attestation.ts,
 * decide), the record of a finished request, and the requester's `verify`
 * (src/cli/request/verify.ts). The envelopes here are made as Chains makes
 * them (DSSE over the statement, ECDSA P-256, SHA-256, DER); the real ones
 * are checked in test/integration/chains.test.ts.
 */
import { Refusals } from '../../src/controller/refusals.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { decide, type Action, type Observation } from '../../src/controller/decide.js';
import { chainsStep } from '../../src/controller/attestation.js';
import { FinishedRequest } from '../../src/requests/cached-requests.js';
import { StatusWriter } from '../../src/controller/status-writer.js';
import { renderKindCrd } from '../../src/api/typed-kind-crd.js';
import pino from 'pino';
import { chainsKeys, chainsStateOf, pae, parseEnvelope, publicKeyDigest, sha256Hex, signedAttestation, sshFingerprint, summarizeProvenance, verifyEnvelope, withoutChainsPayloads, IN_TOTO_PAYLOAD_TYPE } from '../../src/tekton/chains.js';
import { verifyAttestation, VerifyExit } from '../../src/cli/request/verify.js';
import { CliError } from '../../src/cli/request/args-output.js';
import { ANNOTATION_SOURCES } from '../../src/tekton/pipelinerun.js';
import type { InternalRequest, InternalRequestStatus } from '../../src/api/types.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';
import { config, done, NOW, NS, pipelineRun, request, observation } from './fixtures.js';

// A fixed key, with the fingerprint `ssh-keygen -lf` gives for it.
const PRIVATE_PEM = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgvUsC4H2ZKu4qLOuf
V1brn3e1WDV0UU6KEMK7ov+EYYehRANCAAQUPv77wAhjgTl/G6OmEDYfCEymAH8m
KIvhVm60J8i+2JxGtNiyVTDbUq0WZ6IIDWrlrwfv2pHQJ6LZ1ROgIfTf
-----END PRIVATE KEY-----
`;
const PUBLIC_PEM = `-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEFD7++8AIY4E5fxujphA2HwhMpgB/
JiiL4VZutCfIvticRrTYslUw21KtFmeiCA1q5a8H79qR0Cei2dUToCH03w==
-----END PUBLIC KEY-----
`;
const SSH_FINGERPRINT = 'SHA256:AYL3aqS2xaEN9BEPHH32gGnDwoONFf7AL1Cm8+rbLoM';
const privateKey = createPrivateKey(PRIVATE_PEM);
const publicKey = createPublicKey(PUBLIC_PEM);

const SOURCES = [
  { ref: 'spec.pipeline.pipelineRef', resolver: 'git', source: 'git+https://example.com/org/catalog.git', path: 'pipelines/sign.yaml', revision: 'main', digest: 'sha1:1111111111111111111111111111111111111111' },
  { ref: 'tasks[sign].taskRef', resolver: 'git', source: 'git+https://example.com/org/catalog.git', path: 'tasks/sign.yaml', revision: 'main', digest: 'sha1:1111111111111111111111111111111111111111' },
];

/** An in-toto statement shaped like Chains' (SLSA v0.2) for the PipelineRun of request u-1. */
function statement(over: { uid?: string; sources?: unknown[] | undefined; pipelineLabel?: string } = {}): Buffer {
  const annotations: Record<string, string> = { 'internal-services.appstudio.redhat.com/request-name': 'req', 'internal-services.appstudio.redhat.com/request-namespace': 'team-a' };
  if (over.sources !== undefined) annotations[ANNOTATION_SOURCES] = JSON.stringify(over.sources);
  return Buffer.from(
    JSON.stringify({
      _type: 'https://in-toto.io/Statement/v0.1',
      predicateType: 'https://slsa.dev/provenance/v0.2',
      subject: [],
      predicate: {
        builder: { id: 'https://tekton.dev/chains/v2' },
        buildType: 'tekton.dev/v1/PipelineRun',
        invocation: { configSource: {}, parameters: { image: 'quay.io/x' }, environment: { labels: { 'internal-services.appstudio.redhat.com/request-uid': over.uid ?? 'u-1', 'tekton.dev/pipeline': over.pipelineLabel ?? 'sign' }, annotations } },
        buildConfig: { tasks: [{ name: 'sign', status: 'Succeeded' }] },
        metadata: { buildStartedOn: '2026-11-22T09:59:10Z', buildFinishedOn: '2026-11-22T09:59:50Z' },
        materials: [{ uri: 'git+https://example.com/org/catalog.git', digest: { sha1: '1111111111111111111111111111111111111111' } }],
      },
    }),
  );
}

/** The DSSE envelope Chains' wrapped x509 signer makes. */
function envelopeOf(payload: Buffer, key: KeyObject = privateKey, keyid = SSH_FINGERPRINT): string {
  const sig = sign('sha256', pae(IN_TOTO_PAYLOAD_TYPE, payload), key);
  return JSON.stringify({ payloadType: IN_TOTO_PAYLOAD_TYPE, payload: payload.toString('base64'), signatures: [{ keyid, sig: sig.toString('base64') }] });
}

/** A done PipelineRun with what Chains (storage tekton) stores on it. */
function signedRun(payload = statement(), envelope = envelopeOf(payload)): PipelineRun {
  const pr = pipelineRun('u-1', done(true));
  const k = chainsKeys(pr.metadata.uid!);
  pr.metadata.annotations = {
    ...pr.metadata.annotations,
    'chains.tekton.dev/signed': 'true',
    [k.payload]: payload.toString('base64'),
    [k.signature]: Buffer.from(envelope).toString('base64'),
    [k.cert]: '',
    [k.chain]: '',
  };
  return pr;
}

const chainsConfig = (extra: Record<string, unknown> = {}) => config({ allowList: ['team-a'], chains: { enabled: true }, ...extra });
const finished = (extra: InternalRequestStatus = {}): InternalRequest =>
  request({}, {}, { conditions: [{ type: 'Succeeded', status: 'True', reason: 'Succeeded', message: 'm', lastTransitionTime: '2026-11-22T09:59:51Z' }], pipelineRun: `${NS}/ir-u-1`, ...extra });
const observe = (o: Partial<Observation>): Observation => observation(o, { config: chainsConfig() });
const types = (a: Action[]) => a.map((x) => x.type);

test('PAE is the DSSE v1 encoding (the example of the DSSE protocol)', () => {
  assert.equal(pae('http://example.com/HelloWorld', Buffer.from('hello world')).toString(), 'DSSEv1 29 http://example.com/HelloWorld 11 hello world');
});

test('key ids: the SSH SHA256 fingerprint Chains puts in envelopes (as ssh-keygen -lf), and sha256 of the DER', () => {
  assert.equal(sshFingerprint(publicKey), SSH_FINGERPRINT);
  assert.equal(sshFingerprint(createPublicKey(privateKey)), SSH_FINGERPRINT);
  assert.match(publicKeyDigest(publicKey), /^sha256:[0-9a-f]{64}$/);
  assert.equal(sshFingerprint(generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey), undefined, 'not a key Chains signs with');
});

test('what Chains did with a run, from its annotations', () => {
  const pr = pipelineRun('u-1', done(true));
  assert.deepEqual(chainsStateOf(pr), { state: 'pending' });
  pr.metadata.annotations = { 'chains.tekton.dev/signed': 'failed', 'chains.tekton.dev/retries': '2' };
  assert.deepEqual(chainsStateOf(pr), { state: 'failed', retries: '2' });
  // "true" without a signature: Chains skipped signing (no signer, no payload) and marked it anyway.
  pr.metadata.annotations = { 'chains.tekton.dev/signed': 'true' };
  const s = chainsStateOf(pr);
  assert.ok(s.state === 'unsigned' && /stored no signature/.test(s.why));
  // A format that is not wrapped in DSSE (e.g. "tekton"): a raw signature.
  pr.metadata.annotations = { 'chains.tekton.dev/signed': 'true', [chainsKeys(pr.metadata.uid!).signature]: Buffer.from('MEUCIQ…').toString('base64') };
  const raw = chainsStateOf(pr);
  assert.ok(raw.state === 'unsigned' && /not a DSSE envelope/.test(raw.why));
  const run = signedRun();
  const signed = chainsStateOf(run);
  assert.equal(signed.state, 'signed');
  // What the controller's cache keeps: the envelope, not Chains' second copy of the payload.
  const cached = withoutChainsPayloads(structuredClone(run));
  assert.deepEqual(Object.keys(cached.metadata.annotations!).filter((k) => k.startsWith('chains.tekton.dev/')).sort(), ['chains.tekton.dev/cert-pipelinerun-pr-u-1', 'chains.tekton.dev/chain-pipelinerun-pr-u-1', 'chains.tekton.dev/signature-pipelinerun-pr-u-1', 'chains.tekton.dev/signed']);
  assert.deepEqual(chainsStateOf(cached), signed);
  assert.ok(signed.state === 'signed' && signed.payload.equals(statement()));
});

test('the relayed attestation: digest of the signed statement, key id, the envelope as stored; too large: digest only, said so', () => {
  const pr = signedRun();
  const s = chainsStateOf(pr);
  assert.ok(s.state === 'signed');
  const a = signedAttestation(pr, s);
  assert.equal(a.state, 'Signed');
  assert.equal(a.digest, `sha256:${sha256Hex(statement())}`);
  assert.equal(a.keyId, SSH_FINGERPRINT);
  assert.equal(a.payloadType, IN_TOTO_PAYLOAD_TYPE);
  assert.equal(a.predicateType, 'https://slsa.dev/provenance/v0.2');
  assert.equal(a.envelope, pr.metadata.annotations![chainsKeys(pr.metadata.uid!).signature]);
  assert.equal(a.envelopeBytes, Buffer.from(a.envelope!, 'base64').length);
  assert.match(a.location ?? '', /chains\.tekton\.dev\/signature-pipelinerun-pr-u-1/);
  const big = signedAttestation(pr, s, 100);
  assert.equal(big.envelope, undefined);
  assert.equal(big.envelopeOmitted, true);
  assert.equal(big.digest, a.digest);
  assert.match(big.message ?? '', /larger than 100 bytes and is not copied here/);
});

test('envelopes verify with the key that signed them, not after a change, not with another key', () => {
  const payload = statement();
  const env = parseEnvelope(envelopeOf(payload));
  assert.ok(typeof env !== 'string');
  const ok = verifyEnvelope(env, publicKey);
  assert.ok(ok.ok && ok.payload.equals(payload) && ok.keyid === SSH_FINGERPRINT);
  const tampered = { ...env, payload: Buffer.from(payload.toString().replace('quay.io/x', 'quay.io/y')).toString('base64') };
  assert.equal(verifyEnvelope(tampered, publicKey).ok, false);
  assert.equal(verifyEnvelope({ ...env, payloadType: 'text/plain' }, publicKey).ok, false, 'the payload type is signed too (PAE)');
  assert.equal(verifyEnvelope(env, generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey).ok, false);
  assert.equal(typeof parseEnvelope('{"payload":"x"}'), 'string');
  const p = summarizeProvenance(payload);
  assert.ok(typeof p !== 'string');
  assert.equal(p.labels['internal-services.appstudio.redhat.com/request-uid'], 'u-1');
  assert.deepEqual(p.materials, [{ uri: 'git+https://example.com/org/catalog.git', digest: { sha1: '1111111111111111111111111111111111111111' } }]);
});

test('config: spec.chains is off unless enabled; signedTimeout defaults to 5m', () => {
  assert.deepEqual(config().chains, { enabled: false, signedTimeoutMs: 300_000 });
  assert.deepEqual(chainsConfig().chains, { enabled: true, signedTimeoutMs: 300_000 });
  assert.deepEqual(config({ chains: { enabled: true, signedTimeout: '90s' } }).chains, { enabled: true, signedTimeoutMs: 90_000 });
  assert.equal(chainsStep(config(), finished(), signedRun(), NOW), undefined, 'without it nothing changes');
});

test('decide with Chains: the outcome is written at once, the run stays until signed, the attestation is relayed, then the run goes', () => {
  // The run finished: the outcome, and no deletion yet.
  const running = request({}, {}, { conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running', message: 'm', lastTransitionTime: '2026-11-22T09:59:01Z' }], pipelineRun: `${NS}/ir-u-1` });
  const outcome = decide(observe({ request: running, pipelineRuns: [signedRun()] }));
  assert.deepEqual(types(outcome), ['writeStatus']);
  assert.ok(outcome[0]!.type === 'writeStatus' && outcome[0]!.status.attestation === undefined && outcome[0]!.status.conditions?.[0]?.reason === 'Succeeded');
  // Finished, not signed yet: wait (the run's update brings the request back; the requeue is the bound).
  const unsigned = pipelineRun('u-1', done(true));
  const wait = decide(observe({ request: finished(), pipelineRuns: [unsigned] }));
  assert.deepEqual(types(wait), ['requeueAfter']);
  // Signed: relayed, then deleted, in that order.
  const relay = decide(observe({ request: finished(), pipelineRuns: [signedRun()] }));
  assert.deepEqual(types(relay), ['relayAttestation', 'deletePipelineRun']);
  assert.ok(relay[0]!.type === 'relayAttestation' && relay[0]!.attestation.state === 'Signed' && relay[0]!.event.success === true);
  assert.ok(relay[1]!.type === 'deletePipelineRun' && relay[1]!.unsigned === undefined);
  // Relayed already (the record of the finished request says so): only the deletion.
  const again = decide(observe({ request: finished({ attestation: { state: 'Signed', digest: 'sha256:x' } }), pipelineRuns: [signedRun()] }));
  assert.deepEqual(types(again), ['deletePipelineRun']);
  // Debug keeps the run, but the attestation is relayed all the same.
  assert.deepEqual(types(decide(observe({ request: finished(), pipelineRuns: [signedRun()], config: chainsConfig({ debug: true }) }))), ['relayAttestation']);
  // A run whose request is gone is not waited for (nobody to relay to).
  assert.deepEqual(types(decide(observe({ request: undefined, pipelineRuns: [unsigned] }))), ['deletePipelineRun']);
});

test('decide with Chains: no signature within signedTimeout, or Chains gave up: the request says so, the run goes, counted as unsigned', () => {
  const pr = pipelineRun('u-1', done(true)); // completed 09:59:50
  const late = decide(observe({ request: finished(), pipelineRuns: [pr], now: new Date('2026-11-22T10:04:51Z') }));
  assert.deepEqual(types(late), ['relayAttestation', 'deletePipelineRun']);
  assert.ok(late[0]!.type === 'relayAttestation');
  assert.equal(late[0]!.attestation.state, 'Unsigned');
  assert.match(late[0]!.attestation.message ?? '', /had not signed PipelineRun internal-services\/ir-u-1 within 5m/);
  assert.equal(late[0]!.event.type, 'Warning');
  assert.ok(late[1]!.type === 'deletePipelineRun' && late[1]!.unsigned === 'timeout');
  assert.match((late[1] as { why: string }).why, /had not signed/);
  const before = decide(observe({ request: finished(), pipelineRuns: [pr], now: new Date('2026-11-22T10:04:40Z') }));
  assert.deepEqual(types(before), ['requeueAfter']);
  assert.ok(before[0]!.type === 'requeueAfter' && before[0]!.ms > 10_000 && before[0]!.ms <= 10_100);
  const gaveUp = pipelineRun('u-1', done(false));
  gaveUp.metadata.annotations = { ...gaveUp.metadata.annotations, 'chains.tekton.dev/signed': 'failed', 'chains.tekton.dev/retries': '2' };
  const failed = decide(observe({ request: finished(), pipelineRuns: [gaveUp] }));
  assert.deepEqual(types(failed), ['relayAttestation', 'deletePipelineRun']);
  assert.ok(failed[0]!.type === 'relayAttestation' && failed[0]!.attestation.state === 'Failed' && /gave up signing/.test(failed[0]!.attestation.message ?? ''));
  assert.ok(failed[1]!.type === 'deletePipelineRun' && failed[1]!.unsigned === 'failed');
});

test('a finished request kept compactly still says that its attestation was relayed', () => {
  const r = FinishedRequest.of(finished({ results: { a: 'b' }, attestation: { state: 'Signed', digest: 'sha256:abc', envelope: 'e30=', envelopeBytes: 2 } }));
  assert.deepEqual(r.status.attestation, { state: 'Signed', digest: 'sha256:abc' });
  assert.equal(FinishedRequest.of(finished()).status.attestation, undefined);
});

// --- verify ---------------------------------------------------------------------

function relayedRequest(pr: PipelineRun, status: InternalRequestStatus = {}, spec: Partial<InternalRequest['spec']> = {}): InternalRequest {
  const s = chainsStateOf(pr);
  assert.ok(s.state === 'signed');
  const r = finished({ attestation: signedAttestation(pr, s), ...status });
  return { ...r, spec: { ...r.spec, ...spec } };
}

function expectCliError(f: () => unknown, code: string, exit: number, message: RegExp): void {
  assert.throws(f, (e: unknown) => {
    assert.ok(e instanceof CliError, String(e));
    assert.equal(e.code, code);
    assert.equal(e.exitCode, exit);
    assert.match(e.message, message);
    return true;
  });
}

test('verify: a signed attestation of this request verifies and says what ran', () => {
  const v = verifyAttestation(relayedRequest(signedRun()), publicKey);
  assert.equal(v.digest, `sha256:${sha256Hex(statement())}`);
  assert.equal(v.keyId, SSH_FINGERPRINT);
  assert.ok(v.ran.some((l) => l === 'pipeline: sign (installed in the controller\'s namespace, run by name: no source digest)'), v.ran.join('\n'));
  assert.ok(v.checks.some((c) => /Pipeline the request names \(sign\) is the one that ran/.test(c)));
  // A resolved Pipeline: status.pipeline must be what the signed provenance records.
  const pinned = { resolver: 'git', source: SOURCES[0]!.source, path: SOURCES[0]!.path, revision: 'main', digest: SOURCES[0]!.digest, references: [{ ref: SOURCES[1]!.ref, resolver: 'git', source: SOURCES[1]!.source, path: SOURCES[1]!.path, revision: 'main', digest: SOURCES[1]!.digest }] };
  const resolved = signedRun(statement({ sources: SOURCES, pipelineLabel: 'ir-u-1' }));
  const ok = verifyAttestation(relayedRequest(resolved, { pipeline: pinned }, { request: undefined, pipeline: { pipelineRef: { resolver: 'git' } } } as never), publicKey);
  assert.ok(ok.ran[0]!.startsWith('pipeline: git git+https://example.com/org/catalog.git pipelines/sign.yaml revision main pinned sha1:1111'), ok.ran[0]);
  assert.ok(ok.ran.some((l) => /reference tasks\[sign\]\.taskRef: .* Tekton resolved it at that digest/.test(l)), ok.ran.join('\n'));
  expectCliError(
    () => verifyAttestation(relayedRequest(resolved, { pipeline: { ...pinned, digest: 'sha1:2222222222222222222222222222222222222222' } }, { request: undefined } as never), publicKey),
    'CLI_ATTESTATION_INVALID',
    VerifyExit.NotVerified,
    /status\.pipeline\.digest is "sha1:2222.*the signed provenance says "sha1:1111/,
  );
});

test('verify: a tampered envelope, the wrong key, another digest or another request do not verify (exit 3)', () => {
  const req = relayedRequest(signedRun());
  const att = req.status!.attestation!;
  const env = JSON.parse(Buffer.from(att.envelope!, 'base64').toString()) as { payload: string };
  env.payload = Buffer.from(Buffer.from(env.payload, 'base64').toString().replace('quay.io/x', 'quay.io/evil')).toString('base64');
  const tampered = { ...req, status: { ...req.status, attestation: { ...att, envelope: Buffer.from(JSON.stringify(env)).toString('base64') } } };
  expectCliError(() => verifyAttestation(tampered, publicKey), 'CLI_ATTESTATION_INVALID', VerifyExit.NotVerified, /does not verify .* altered after signing/);
  const other = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey;
  expectCliError(() => verifyAttestation(req, other), 'CLI_ATTESTATION_INVALID', VerifyExit.NotVerified, new RegExp(`the envelope names key ${SSH_FINGERPRINT.replace(/[+/]/g, '\\$&')}, --key is SHA256:.*the wrong key`));
  expectCliError(() => verifyAttestation({ ...req, status: { ...req.status, attestation: { ...att, digest: 'sha256:00' } } }, publicKey), 'CLI_ATTESTATION_INVALID', VerifyExit.NotVerified, /digest is sha256:00, but the signed payload is/);
  expectCliError(() => verifyAttestation(relayedRequest(signedRun(statement({ uid: 'u-2' }))), publicKey), 'CLI_ATTESTATION_INVALID', VerifyExit.NotVerified, /about another request \(uid u-2/);
  expectCliError(() => verifyAttestation(relayedRequest(signedRun(statement({ pipelineLabel: 'other' }))), publicKey), 'CLI_ATTESTATION_INVALID', VerifyExit.NotVerified, /names Pipeline "sign", the signed provenance ran "other"/);
});

test('verify: no attestation (yet), none signed, or too large to relay: exit 4, saying which', () => {
  expectCliError(() => verifyAttestation(request(), publicKey), 'CLI_ATTESTATION_MISSING', VerifyExit.NoAttestation, /has not finished/);
  expectCliError(() => verifyAttestation(finished(), publicKey), 'CLI_ATTESTATION_MISSING', VerifyExit.NoAttestation, /relays none .*or not yet/);
  expectCliError(() => verifyAttestation(finished({ attestation: { state: 'Unsigned', message: 'Tekton Chains had not signed' } }), publicKey), 'CLI_ATTESTATION_MISSING', VerifyExit.NoAttestation, /\(Unsigned\): Tekton Chains had not signed/);
  const pr = signedRun();
  const s = chainsStateOf(pr);
  assert.ok(s.state === 'signed');
  expectCliError(() => verifyAttestation(finished({ attestation: signedAttestation(pr, s, 10) }), publicKey), 'CLI_ATTESTATION_MISSING', VerifyExit.NoAttestation, /envelope was not relayed/);
});

test('the relay is one merge patch of status.attestation, remembered until the cache shows it; an envelope the remote refuses is dropped, not retried for ever', async () => {
  const patches: object[] = [];
  const answers: Array<'ok' | number> = ['ok', 413, 'ok'];
  const events: string[] = [];
  const target = {
    name: 'default',
    client: {
      replaceStatus: async () => assert.fail('a finished request is never PUT'),
      tryGet: async () => undefined,
      async patchStatusMerge(_ns: string, _name: string, patch: object) {
        patches.push(structuredClone(patch));
        const a = answers.shift() ?? 'ok';
        if (a !== 'ok') throw Object.assign(new Error(`HTTP ${a}`), { code: a });
        return { ...finished(), metadata: { ...finished().metadata, resourceVersion: String(20 + patches.length) }, status: { ...finished().status, ...(patch as { status: object }).status } } as InternalRequest;
      },
    },
    events: { record: async (_o: InternalRequest, _t: string, reason: string) => void events.push(reason) },
  };
  const w = new StatusWriter({ log: pino({ level: 'silent' }), now: () => NOW, events: 'all', requeue: () => {}, refusals: new Refusals() });
  const pr = signedRun();
  const s = chainsStateOf(pr);
  assert.ok(s.state === 'signed');
  const att = signedAttestation(pr, s);
  const cached = FinishedRequest.of(finished()) as unknown as InternalRequest;
  assert.equal(await w.relayAttestation(target, 'default/team-a/req', cached, att, { type: 'Normal', reason: 'Attested', message: 'm', success: true }), true);
  assert.deepEqual(patches[0], { status: { attestation: att } });
  assert.equal(w.current('default/team-a/req', cached)?.status?.attestation?.digest, att.digest, 'until the cache catches up, decide sees the relayed attestation');
  assert.deepEqual(events, ['Attested']);
  // Refused (too large for the remote cluster): written again without the envelope.
  assert.equal(await w.relayAttestation(target, 'default/team-a/other', cached, att, undefined), true);
  const last = patches[2] as { status: { attestation: Record<string, unknown> } };
  assert.equal(last.status.attestation['envelope'], undefined);
  assert.equal(last.status.attestation['envelopeOmitted'], true);
  assert.equal(last.status.attestation['digest'], att.digest);
  assert.match(String(last.status.attestation['message']), /the remote cluster refused it/);
});

test("a typed kind's CRD has status.attestation too (the status schema is shared)", () => {
  const crd = renderKindCrd({ pipeline: 'sign', kind: 'SigningRequest', group: 'signing.example.com' } as never, []) as {
    spec: { versions: Array<{ schema: { openAPIV3Schema: { properties: { status: { properties: Record<string, unknown> } } } } }> };
  };
  const status = crd.spec.versions[0]!.schema.openAPIV3Schema.properties.status.properties;
  assert.ok(status['attestation'], 'status.attestation in the typed CRD');
});
