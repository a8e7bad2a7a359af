/**
 * Tekton Chains, as this project reads it (facts from the source of
 * github.com/tektoncd/chains v0.22.0, unchanged in v0.28.1 unless said):
 *
 * - Chains marks a run it has dealt with `chains.tekton.dev/signed: "true"`
 *   (pkg/chains/annotations; from v0.27 written with server-side apply,
 *   field manager tekton-chains-controller), or `"failed"` after 3 retries
 *   (`chains.tekton.dev/retries`). "true" alone does not mean signed: when no
 *   signer is configured or the payload cannot be made, it logs, skips, and
 *   still marks the run "true" (pkg/chains/signing.go).
 * - With storage `tekton` it stores, on the run itself
 *   (pkg/chains/storage/tekton), base64 each: `chains.tekton.dev/payload-<key>`
 *   (the payload as signed), `signature-<key>` (for in-toto/slsa formats:
 *   the whole DSSE envelope, JSON), `cert-<key>` and `chain-<key>` (empty for
 *   a plain key); `<key>` is `pipelinerun-<uid>` for a PipelineRun.
 * - The envelope (pkg/chains/signing/wrap.go, go-securesystemslib dsse) is
 *   {payloadType: "application/vnd.in-toto+json", payload: base64(statement),
 *   signatures: [{keyid, sig}]}: sig is the signer's signature (ECDSA,
 *   ASN.1 DER, SHA-256) over the DSSE pre-authentication encoding
 *   PAE(payloadType, statement); keyid is the SSH SHA256 fingerprint of the
 *   public key.
 * - The statement for a PipelineRun (formats in-toto and slsa/v1, one
 *   payloader) is an in-toto v0.1 statement with an SLSA v0.2 provenance
 *   predicate: invocation.configSource (Tekton's refSource of the Pipeline,
 *   when Tekton resolved it), invocation.parameters, invocation.environment
 *   (the run's labels and annotations, less chains.tekton.dev/*), materials,
 *   buildConfig.tasks.
 * - Its controller puts the finalizer `chains.tekton.dev/pipelinerun` on every
 *   PipelineRun it reconciles (on TaskRuns `chains.tekton.dev`, from v0.26
 *   `chains.tekton.dev/taskrun`; from v0.27 both are added with server-side
 *   apply): a deleted run stays until Chains has finalized it, signing it
 *   then if it had not.
 *
 * What is read here is pure (no I/O); verification uses node:crypto.
 */
import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { MAX_ATTESTATION_ENVELOPE_BYTES, type InternalRequestStatus } from '../api/types.js';
import type { PipelineRun } from './tekton-types.js';

export const CHAINS_SIGNED = 'chains.tekton.dev/signed';
export const CHAINS_RETRIES = 'chains.tekton.dev/retries';
export const CHAINS_PIPELINERUN_FINALIZER = 'chains.tekton.dev/pipelinerun';
export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json';

export type Attestation = NonNullable<InternalRequestStatus['attestation']>;

/** The annotation keys Chains (storage tekton) writes for a PipelineRun of this uid. */
export function chainsKeys(uid: string): { payload: string; signature: string; cert: string; chain: string } {
  const k = `pipelinerun-${uid}`;
  return { payload: `chains.tekton.dev/payload-${k}`, signature: `chains.tekton.dev/signature-${k}`, cert: `chains.tekton.dev/cert-${k}`, chain: `chains.tekton.dev/chain-${k}` };
}

export interface DsseEnvelope {
  payloadType: string;
  /** base64 of the payload. */
  payload: string;
  signatures: Array<{ keyid?: string; sig: string }>;
}

/** What Chains has done with a PipelineRun, from its annotations. */
export type ChainsState =
  | { state: 'pending' }
  | { state: 'failed'; retries: string | undefined }
  /** Marked, but nothing usable stored: `why`. */
  | { state: 'unsigned'; why: string }
  | {
      state: 'signed';
      /** The annotation's value: base64 of the envelope's JSON. */
      envelopeB64: string;
      envelopeBytes: number;
      envelope: DsseEnvelope;
      /** The payload as signed. */
      payload: Buffer;
    };

const STRICT_BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** base64 (standard alphabet, padded or not) decoded, or undefined when it is not base64. */
export function decodeBase64(text: string): Buffer | undefined {
  const t = text.trim();
  if (!STRICT_BASE64.test(t) || t.length % 4 === 1) return undefined;
  return Buffer.from(t, 'base64');
}

/** A DSSE envelope from its JSON, or why it is not one. */
export function parseEnvelope(json: string): DsseEnvelope | string {
  let v: unknown;
  try {
    v = JSON.parse(json);
  } catch (e) {
    return `not JSON (${(e as Error).message})`;
  }
  const o = v as Partial<DsseEnvelope> | null;
  if (!o || typeof o !== 'object' || Array.isArray(o)) return 'not a JSON object';
  if (typeof o.payloadType !== 'string' || typeof o.payload !== 'string') return 'no payloadType and payload (not a DSSE envelope)';
  if (!Array.isArray(o.signatures) || o.signatures.length === 0 || !o.signatures.every((s) => s && typeof s === 'object' && typeof s.sig === 'string')) return 'no signatures';
  if (!decodeBase64(o.payload)) return 'its payload is not base64';
  return { payloadType: o.payloadType, payload: o.payload, signatures: o.signatures.map((s) => ({ ...(typeof s.keyid === 'string' ? { keyid: s.keyid } : {}), sig: s.sig })) };
}

export function chainsStateOf(pr: Pick<PipelineRun, 'metadata'>): ChainsState {
  const a = pr.metadata.annotations ?? {};
  const marked = a[CHAINS_SIGNED];
  if (marked === 'failed') return { state: 'failed', retries: a[CHAINS_RETRIES] };
  if (marked !== 'true') return { state: 'pending' };
  const keys = chainsKeys(pr.metadata.uid ?? '');
  const value = a[keys.signature];
  if (!value) return { state: 'unsigned', why: `Tekton Chains marked it signed but stored no signature (no annotation ${keys.signature}): its signer or payload format failed, see Chains' log` };
  const raw = decodeBase64(value);
  if (!raw) return { state: 'unsigned', why: `the annotation ${keys.signature} is not base64` };
  const envelope = parseEnvelope(raw.toString('utf8'));
  if (typeof envelope === 'string') {
    return { state: 'unsigned', why: `what Tekton Chains stored in ${keys.signature} is not a DSSE envelope (${envelope}): artifacts.pipelinerun.format must be in-toto or slsa/v1` };
  }
  return { state: 'signed', envelopeB64: value.trim(), envelopeBytes: raw.length, envelope, payload: decodeBase64(envelope.payload)! };
}

/**
 * What the controller keeps of a PipelineRun: not Chains' copies of the
 * signed payload (`chains.tekton.dev/payload-*`), which the envelope
 * (`signature-*`) carries too.
 */
export function withoutChainsPayloads<T extends { metadata?: { annotations?: Record<string, string> } }>(obj: T): T {
  const a = obj.metadata?.annotations;
  if (a) for (const k of Object.keys(a)) if (k.startsWith('chains.tekton.dev/payload-')) delete a[k];
  return obj;
}

export function sha256Hex(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The statement's predicateType, when the payload is a JSON object that has one. */
export function predicateTypeOf(payload: Buffer): string | undefined {
  try {
    const v = JSON.parse(payload.toString('utf8')) as { predicateType?: unknown };
    return typeof v.predicateType === 'string' ? v.predicateType : undefined;
  } catch {
    return undefined;
  }
}

/** status.attestation for a signed run: digest and key id always, the envelope when it fits. */
export function signedAttestation(pr: Pick<PipelineRun, 'metadata'>, s: Extract<ChainsState, { state: 'signed' }>, maxEnvelopeBytes = MAX_ATTESTATION_ENVELOPE_BYTES): Attestation {
  const keys = chainsKeys(pr.metadata.uid ?? '');
  const fits = s.envelopeBytes <= maxEnvelopeBytes;
  const predicateType = predicateTypeOf(s.payload);
  const keyId = s.envelope.signatures[0]?.keyid;
  const where = `PipelineRun ${pr.metadata.namespace ?? ''}/${pr.metadata.name ?? ''} (uid ${pr.metadata.uid ?? ''}) on the internal cluster, annotations ${keys.signature} (the envelope) and ${keys.payload}`;
  return {
    state: 'Signed',
    message: fits
      ? `signed by Tekton Chains: the envelope is in status.attestation.envelope; check it with "kubectl internalrequest verify NAME --key PUBLIC.pem"`
      : `signed by Tekton Chains, but the envelope (${s.envelopeBytes} bytes) is larger than ${maxEnvelopeBytes} bytes and is not copied here; it was stored only on the PipelineRun (${where}), which is removed unless the configuration keeps PipelineRuns`,
    digest: `sha256:${sha256Hex(s.payload)}`,
    payloadType: s.envelope.payloadType,
    ...(predicateType ? { predicateType } : {}),
    ...(keyId ? { keyId } : {}),
    location: where,
    ...(fits ? { envelope: s.envelopeB64 } : { envelopeOmitted: true }),
    envelopeBytes: s.envelopeBytes,
  };
}

// --- verification -----------------------------------------------------------

/** DSSE v1 pre-authentication encoding: what is signed. */
export function pae(payloadType: string, payload: Buffer): Buffer {
  const type = Buffer.from(payloadType, 'utf8');
  return Buffer.concat([Buffer.from(`DSSEv1 ${type.length} `), type, Buffer.from(` ${payload.length} `), payload]);
}

/** An SSH wire-format string (uint32 length, bytes). */
function sshString(b: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(b.length);
  return Buffer.concat([len, b]);
}

const SSH_CURVES: Record<string, string> = { 'P-256': 'nistp256', 'P-384': 'nistp384', 'P-521': 'nistp521' };

/**
 * The key id Chains writes into its envelopes: the SSH SHA256 fingerprint
 * ("SHA256:" and unpadded base64 of the SHA-256 of the key in SSH wire
 * format), for ECDSA and Ed25519 keys; undefined for others.
 */
export function sshFingerprint(key: KeyObject): string | undefined {
  const jwk = key.export({ format: 'jwk' });
  let wire: Buffer;
  if (jwk.kty === 'EC' && jwk.crv && SSH_CURVES[jwk.crv] && jwk.x && jwk.y) {
    const curve = SSH_CURVES[jwk.crv]!;
    const point = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x, 'base64url'), Buffer.from(jwk.y, 'base64url')]);
    wire = Buffer.concat([sshString(Buffer.from(`ecdsa-sha2-${curve}`)), sshString(Buffer.from(curve)), sshString(point)]);
  } else if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519' && jwk.x) {
    wire = Buffer.concat([sshString(Buffer.from('ssh-ed25519')), sshString(Buffer.from(jwk.x, 'base64url'))]);
  } else return undefined;
  return `SHA256:${createHash('sha256').update(wire).digest('base64').replace(/=+$/, '')}`;
}

/** sha256:<hex> of the public key's DER (SubjectPublicKeyInfo), the usual way to name a key. */
export function publicKeyDigest(key: KeyObject): string {
  return `sha256:${sha256Hex(key.export({ type: 'spki', format: 'der' }))}`;
}

/** A public key from PEM (SPKI, or a certificate's); throws with a readable message otherwise. */
export function readPublicKey(pem: string): KeyObject {
  try {
    return createPublicKey(pem);
  } catch (e) {
    throw new Error(`not a PEM public key (${(e as Error).message})`);
  }
}

export type EnvelopeCheck = { ok: true; payload: Buffer; keyid: string | undefined } | { ok: false; why: string };

/** Whether one of the envelope's signatures is valid for `key` over PAE(payloadType, payload). */
export function verifyEnvelope(envelope: DsseEnvelope, key: KeyObject): EnvelopeCheck {
  const payload = decodeBase64(envelope.payload);
  if (!payload) return { ok: false, why: 'the envelope payload is not base64' };
  const message = pae(envelope.payloadType, payload);
  for (const s of envelope.signatures) {
    const sig = decodeBase64(s.sig);
    if (!sig) continue;
    let good = false;
    try {
      // ECDSA: ASN.1 DER signature over SHA-256 (sigstore's signer); Ed25519 takes no digest.
      good = verify(key.asymmetricKeyType === 'ed25519' ? null : 'sha256', message, key, sig);
    } catch {
      good = false;
    }
    if (good) return { ok: true, payload, keyid: s.keyid };
  }
  return { ok: false, why: `none of the envelope's ${envelope.signatures.length} signature(s) is valid for this key over the DSSE encoding of its payload` };
}

// --- what the provenance says ran ---------------------------------------------

export interface ProvenanceSummary {
  statementType: string | undefined;
  predicateType: string | undefined;
  buildType: string | undefined;
  builder: string | undefined;
  /** The Pipeline as Tekton resolved it (invocation.configSource), when it did. */
  configSource: { uri?: string; digest?: Record<string, string>; entryPoint?: string } | undefined;
  /** Labels and annotations of the run, as signed. */
  labels: Record<string, string>;
  annotations: Record<string, string>;
  parameters: Record<string, unknown>;
  materials: Array<{ uri: string; digest: Record<string, string> }>;
  tasks: Array<{ name: string; ref?: unknown; status?: string }>;
  startedOn: string | undefined;
  finishedOn: string | undefined;
  subjects: Array<{ name: string; digest: Record<string, string> }>;
}

const rec = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const strRec = (v: unknown): Record<string, string> => Object.fromEntries(Object.entries(rec(v)).filter((e): e is [string, string] => typeof e[1] === 'string'));
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** The parts of an in-toto statement with an SLSA v0.2 provenance (Chains' in-toto/slsa/v1 format) that say what ran. */
export function summarizeProvenance(payload: Buffer): ProvenanceSummary | string {
  let v: unknown;
  try {
    v = JSON.parse(payload.toString('utf8'));
  } catch (e) {
    return `the payload is not JSON (${(e as Error).message})`;
  }
  const st = rec(v);
  const pred = rec(st['predicate']);
  const inv = rec(pred['invocation']);
  const env = rec(inv['environment']);
  const cs = rec(inv['configSource']);
  const meta = rec(pred['metadata']);
  const configSource = Object.keys(cs).length ? { ...(str(cs['uri']) ? { uri: str(cs['uri']) } : {}), ...(Object.keys(strRec(cs['digest'])).length ? { digest: strRec(cs['digest']) } : {}), ...(str(cs['entryPoint']) ? { entryPoint: str(cs['entryPoint']) } : {}) } : undefined;
  return {
    statementType: str(st['_type']),
    predicateType: str(st['predicateType']),
    buildType: str(pred['buildType']),
    builder: str(rec(pred['builder'])['id']),
    configSource: configSource && Object.keys(configSource).length ? configSource : undefined,
    labels: strRec(env['labels']),
    annotations: strRec(env['annotations']),
    parameters: rec(inv['parameters']),
    materials: (Array.isArray(pred['materials']) ? pred['materials'] : []).map((m) => ({ uri: str(rec(m)['uri']) ?? '', digest: strRec(rec(m)['digest']) })),
    tasks: (Array.isArray(rec(pred['buildConfig'])['tasks']) ? (rec(pred['buildConfig'])['tasks'] as unknown[]) : []).map((t) => ({
      name: str(rec(t)['name']) ?? '',
      ...(rec(t)['ref'] !== undefined ? { ref: rec(t)['ref'] } : {}),
      ...(str(rec(t)['status']) ? { status: str(rec(t)['status']) } : {}),
    })),
    startedOn: str(meta['buildStartedOn']),
    finishedOn: str(meta['buildFinishedOn']),
    subjects: (Array.isArray(st['subject']) ? st['subject'] : []).map((s) => ({ name: str(rec(s)['name']) ?? '', digest: strRec(rec(s)['digest']) })),
  };
}
