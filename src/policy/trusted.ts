/**
 * Tekton Trusted Resources signatures (annotation `tekton.dev/signature`),
 * verified exactly as Tekton Pipelines v1.6.6 verifies them, so a catalog
 * signed for a Tekton VerificationPolicy (`tkn task sign`, or
 * hack/trusted/sign) verifies here unchanged. Pure: node:crypto only, no I/O.
 *
 * What Tekton does (pkg/trustedresources/verify.go, pkg/reconciler/…/taskref.go):
 *  1. decodes the resolved YAML into its typed struct, strictly (unknown or
 *     duplicate fields are an error), and applies SetDefaults;
 *  2. checksum = sha256 of Go's `json.Marshal` of {TypeMeta, ObjectMeta
 *     reduced to name, generateName, namespace, labels and annotations minus
 *     the signature and kubectl's two, Spec};
 *  3. verifies the base64-decoded annotation over those 32 bytes with
 *     sigstore's verifier for each key of the policy: ECDSA and RSA
 *     (PKCS#1 v1.5) hash them again (SHA-256 unless the policy says
 *     otherwise), ed25519 signs them as they are.
 *
 * Step 2 is the hard part: Go's output follows the struct definitions, not
 * the document. src/policy/tekton-shapes.ts and kubernetes-shapes.ts
 * (generated from Tekton's types by hack/trusted/gen-shapes) give, for every
 * struct reachable from the three kinds, its fields in marshalling order with
 * omitempty; the custom marshallers (ParamValue, resource.Quantity,
 * intstr.IntOrString, metav1.Duration, metav1.Time, runtime.RawExtension,
 * metav1.FieldsV1) are re-implemented from their Go source. Anything these
 * modules are not sure to reproduce is an error, which verifySignature
 * reports as 'invalid': it never answers 'signed' for content it could not
 * checksum as Tekton does.
 *
 * The one input this cannot see is the YAML text: values are taken as parsed.
 * Tekton reads YAML 1.1 (go-yaml v2); parse with `{ version: '1.1' }` so that
 * `0644`, `yes` and the like mean what they mean to Tekton.
 *
 * The work is split by concern, each file checked with the others against
 * Tekton's own code by test/unit/trusted.test.ts:
 *  - tekton-decode.ts: decoding and defaulting (step 1);
 *  - go-json.ts: Go's JSON encoding (step 2), with quantity-duration-time.ts
 *    for the text forms of Quantity, Duration and Time;
 *  - this file: verification: the checksum Tekton signs, put together from
 *    the two, public keys as Tekton loads them, and the signature (step 3).
 */
import { createHash, createPublicKey, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import { describe, encode, goType, isPlainObject, Unreproducible, type GoType, type Struct, type Value } from './go-json.js';
import { decode, presentMap, SIGNED_KINDS } from './tekton-decode.js';
import { TEKTON_ROOTS } from './tekton-shapes.js';

export const SIGNATURE_ANNOTATION = 'tekton.dev/signature';

/** A public key of the verification policy; hashAlgorithm as Tekton's VerificationPolicy (default sha256). */
export interface TrustedKey {
  name: string;
  /** PEM: "PUBLIC KEY" (PKIX) or "RSA PUBLIC KEY" (PKCS#1). */
  publicKey: string;
  hashAlgorithm?: string;
}

export type VerifyResult = { state: 'signed'; key: string } | { state: 'unsigned' } | { state: 'invalid'; why: string };

export type ParsedPublicKey =
  | { ok: true; type: 'ecdsa' | 'rsa' | 'ed25519'; detail: string; key: KeyObject }
  | { ok: false; why: string };

// ------------------------------------------------------------------ checksum

/**
 * The JSON whose sha256 is the checksum Tekton verifies signatures against
 * (Checksum() of v1.Task, v1.Pipeline or v1beta1.StepAction, after the
 * decoding and defaulting Tekton applies to resolved content).
 */
export function tektonChecksumJson(obj: Record<string, unknown>): { json: string } | { error: string } {
  try {
    if (!isPlainObject(obj)) throw new Unreproducible(`the resource is ${describe(obj)}`);
    const id = `${String(obj['apiVersion'])}/${String(obj['kind'])}`;
    const root = TEKTON_ROOTS[id];
    const kind = SIGNED_KINDS[id];
    if (root === undefined || kind === undefined) {
      throw new Unreproducible(`${String(obj['apiVersion'])} ${String(obj['kind'])} is not a kind signatures are checked on (tekton.dev/v1 Task or Pipeline, tekton.dev/v1beta1 StepAction)`);
    }
    const type = goType(root) as Extract<GoType, { k: 'struct' }>;
    const decoded = decode(obj, type, '') as Struct;
    const spec = presentMap(decoded.get('spec')) ?? new Map<string, Value>();
    kind.defaults(spec);
    // checksum.PrepareObjectMeta
    const meta = presentMap(decoded.get('metadata')) ?? new Map<string, Value>();
    const prepared: Struct = new Map();
    for (const k of ['name', 'generateName', 'namespace']) if (meta.has(k)) prepared.set(k, meta.get(k)!);
    const labels = presentMap(meta.get('labels'));
    if (labels) prepared.set('labels', new Map(labels));
    const annotations = new Map(presentMap(meta.get('annotations')) ?? []);
    for (const k of ['kubectl-client-side-apply', 'kubectl.kubernetes.io/last-applied-configuration', SIGNATURE_ANNOTATION]) annotations.delete(k);
    prepared.set('annotations', annotations);
    const top: Struct = new Map<string, Value>([
      ['kind', kind.kind],
      ['apiVersion', kind.apiVersion],
      ['metadata', prepared],
      ['spec', spec],
    ]);
    return { json: encode(top, type) };
  } catch (e) {
    if (e instanceof Unreproducible) return { error: e.message };
    throw e;
  }
}

/** The sha256 checksum Tekton computes for a Task, Pipeline or StepAction (see tektonChecksumJson). */
export function tektonChecksum(obj: Record<string, unknown>): Buffer | { error: string } {
  const r = tektonChecksumJson(obj);
  if ('error' in r) return r;
  return createHash('sha256').update(r.json, 'utf8').digest();
}

// ------------------------------------------------------------------ keys and signatures

const CURVES: Record<string, string> = { prime256v1: 'P-256', secp384r1: 'P-384', secp521r1: 'P-521', secp224r1: 'P-224' };

/**
 * A public key as Tekton loads it (sigstore's cryptoutils.UnmarshalPEMToPublicKey
 * then signature.LoadVerifier): the first PEM block, "PUBLIC KEY" (PKIX) or
 * "RSA PUBLIC KEY" (PKCS#1); ECDSA on P-224/256/384/521, RSA of 1024 bits or
 * more (Go refuses less), or ed25519.
 */
export function parsePublicKey(pem: string): ParsedPublicKey {
  if (typeof pem !== 'string') return { ok: false, why: 'the public key is not a string' };
  const m = /-----BEGIN ([^\r\n]*?)-----\r?\n([\s\S]*?)-----END \1-----/.exec(pem);
  if (!m) return { ok: false, why: 'not a PEM public key: no -----BEGIN PUBLIC KEY----- … -----END PUBLIC KEY----- block' };
  const pemType = m[1]!;
  let body = m[2]!;
  // RFC 1421 headers ("Name: value" lines, then a blank line) come before the data.
  if (/^[^\r\n]*:/.test(body)) body = body.replace(/^[\s\S]*?\r?\n\r?\n/, '');
  const b64 = body.replace(/\s+/g, '');
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(b64)) return { ok: false, why: `the PEM block ${pemType} is not valid base64` };
  const der = Buffer.from(b64, 'base64');
  let format: 'spki' | 'pkcs1';
  if (pemType === 'PUBLIC KEY') format = 'spki';
  else if (pemType === 'RSA PUBLIC KEY') format = 'pkcs1';
  else if (/PRIVATE KEY/.test(pemType)) return { ok: false, why: `this is a private key (${pemType}); give the public key ("PUBLIC KEY" PEM, e.g. cosign.pub)` };
  else if (pemType === 'CERTIFICATE') return { ok: false, why: 'this is a certificate; give its public key ("PUBLIC KEY" PEM: openssl x509 -pubkey -noout)' };
  else return { ok: false, why: `unknown public key PEM type "${pemType}" (want "PUBLIC KEY" or "RSA PUBLIC KEY")` };
  let key: KeyObject;
  try {
    key = createPublicKey({ key: der, format: 'der', type: format });
  } catch (e) {
    return { ok: false, why: `the ${pemType} block does not hold a public key: ${(e as Error).message}` };
  }
  const details = key.asymmetricKeyDetails ?? {};
  switch (key.asymmetricKeyType) {
    case 'ec': {
      const curve = CURVES[details.namedCurve ?? ''];
      if (!curve) return { ok: false, why: `ECDSA curve ${details.namedCurve ?? '(unknown)'} is not supported (P-224, P-256, P-384 or P-521)` };
      return { ok: true, type: 'ecdsa', detail: `ECDSA ${curve}`, key };
    }
    case 'rsa': {
      const bits = details.modulusLength ?? 0;
      const e = details.publicExponent ?? 0n;
      if (bits < 1024) return { ok: false, why: `RSA key of ${bits} bits: Go refuses keys under 1024 bits (use 2048 or more)` };
      if (e < 2n || e > 2n ** 31n - 1n) return { ok: false, why: `RSA public exponent ${e} is out of the range Go accepts` };
      return { ok: true, type: 'rsa', detail: `RSA ${bits} bits`, key };
    }
    case 'ed25519':
      return { ok: true, type: 'ed25519', detail: 'ed25519', key };
    default:
      return { ok: false, why: `${key.asymmetricKeyType ?? 'this'} keys are not supported (ECDSA, RSA or ed25519)` };
  }
}

/** Go's encoding/asn1 would read sig as SEQUENCE { INTEGER, INTEGER } (sigstore then takes it as DER). */
function parsesAsAsn1Signature(sig: Buffer): boolean {
  const tlv = (at: number, end: number): { tag: number; start: number; end: number } | undefined => {
    if (at + 2 > end) return undefined;
    const tag = sig[at]!;
    if ((tag & 0x1f) === 0x1f) return undefined;
    let len = sig[at + 1]!;
    let start = at + 2;
    if (len & 0x80) {
      const n = len & 0x7f;
      if (n === 0 || n > 3 || start + n > end) return undefined;
      len = 0;
      for (let i = 0; i < n; i++) {
        len = len * 256 + sig[start + i]!;
        if (len === 0) return undefined;
      }
      if (len < 0x80) return undefined;
      start += n;
    }
    return start + len <= end ? { tag, start, end: start + len } : undefined;
  };
  const seq = tlv(0, sig.length);
  if (!seq || seq.tag !== 0x30) return false;
  let at = seq.start;
  for (let i = 0; i < 2; i++) {
    const int = tlv(at, seq.end);
    if (!int || int.tag !== 0x02 || int.end === int.start) return false;
    const [b0, b1] = [sig[int.start]!, sig[int.start + 1]];
    if (b1 !== undefined && ((b0 === 0 && (b1 & 0x80) === 0) || (b0 === 0xff && (b1 & 0x80) === 0x80))) return false;
    at = int.end;
  }
  return true;
}

/** r ‖ s (IEEE P1363, which sigstore also accepts) as DER. */
function p1363ToDer(sig: Buffer): Buffer {
  const int = (b: Buffer): Buffer => {
    let i = 0;
    while (i < b.length - 1 && b[i] === 0) i++;
    const v = b.subarray(i);
    const body = v[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), v]) : v;
    return Buffer.concat([Buffer.from([0x02, body.length]), body]);
  };
  const half = sig.length / 2;
  const content = Buffer.concat([int(sig.subarray(0, half)), int(sig.subarray(half))]);
  const len = content.length < 0x80 ? Buffer.from([content.length]) : Buffer.from([0x81, content.length]);
  return Buffer.concat([Buffer.from([0x30]), len, content]);
}

const HASHES = new Map([
  ['', 'sha256'],
  ['sha224', 'sha224'],
  ['sha256', 'sha256'],
  ['sha384', 'sha384'],
  ['sha512', 'sha512'],
]);

/** sigstore's verifier for the key and hash, over the checksum bytes. */
function sigstoreVerify(k: Extract<ParsedPublicKey, { ok: true }>, hash: string, checksum: Buffer, sig: Buffer): boolean {
  try {
    switch (k.type) {
      case 'ed25519':
        return cryptoVerify(null, checksum, k.key, sig);
      case 'rsa':
        return cryptoVerify(hash, checksum, k.key, sig);
      case 'ecdsa':
        if (parsesAsAsn1Signature(sig)) return cryptoVerify(hash, checksum, { key: k.key, dsaEncoding: 'der' }, sig);
        if (sig.length === 0 || sig.length > 132 || sig.length % 2 !== 0) return false;
        return cryptoVerify(hash, checksum, { key: k.key, dsaEncoding: 'der' }, p1363ToDer(sig));
    }
  } catch {
    return false;
  }
}

/** Go's base64.StdEncoding.DecodeString: padded, standard alphabet, newlines ignored. */
function decodeStdBase64(s: string): Buffer | undefined {
  const t = s.replace(/[\r\n]/g, '');
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(t)) return undefined;
  return Buffer.from(t, 'base64');
}

/**
 * Verifies a Tekton resource's `tekton.dev/signature` against keys, as
 * Tekton's VerificationPolicy does with one policy listing them (any key
 * passing is enough). 'unsigned': no annotation; 'invalid': anything else
 * that is not a signature by one of the keys over exactly what Tekton
 * checksums, with the reason; 'signed': the name of the key that verified.
 */
export function verifySignature(obj: Record<string, unknown>, keys: ReadonlyArray<TrustedKey>): VerifyResult {
  const metadata = isPlainObject(obj) ? obj['metadata'] : undefined;
  const annotations = isPlainObject(metadata) ? metadata['annotations'] : undefined;
  const annotation = isPlainObject(annotations) ? annotations[SIGNATURE_ANNOTATION] : undefined;
  if (annotation === undefined) return { state: 'unsigned' };
  if (typeof annotation !== 'string') return { state: 'invalid', why: `annotation ${SIGNATURE_ANNOTATION} is ${describe(annotation)}, not base64 text` };
  const sig = decodeStdBase64(annotation);
  if (sig === undefined) return { state: 'invalid', why: `annotation ${SIGNATURE_ANNOTATION} is not valid base64` };
  if (sig.length === 0) return { state: 'invalid', why: `annotation ${SIGNATURE_ANNOTATION} is empty` };
  const checksum = tektonChecksum(obj);
  if (!Buffer.isBuffer(checksum)) return { state: 'invalid', why: `cannot compute the checksum Tekton signs: ${checksum.error}` };
  if (keys.length === 0) return { state: 'invalid', why: 'no public keys to verify the signature with' };
  const tried: string[] = [];
  const unusable: string[] = [];
  for (const k of keys) {
    const parsed = parsePublicKey(k.publicKey);
    const hash = HASHES.get((k.hashAlgorithm ?? '').toLowerCase());
    if (!parsed.ok) unusable.push(`${k.name} (${parsed.why})`);
    else if (hash === undefined) unusable.push(`${k.name} (hash algorithm ${k.hashAlgorithm} is not sha224, sha256, sha384 or sha512)`);
    else if (parsed.type === 'rsa' && hash === 'sha224') unusable.push(`${k.name} (sigstore does not use sha224 with RSA)`);
    else if (sigstoreVerify(parsed, hash, checksum, sig)) return { state: 'signed', key: k.name };
    else tried.push(k.name);
  }
  const parts = [];
  if (tried.length > 0) parts.push(`the signature does not verify with key${tried.length > 1 ? 's' : ''} ${tried.join(', ')}`);
  if (unusable.length > 0) parts.push(`unusable key${unusable.length > 1 ? 's' : ''}: ${unusable.join('; ')}`);
  return { state: 'invalid', why: `${parts.join('; ')} (content checksum ${checksum.toString('hex')})` };
}
