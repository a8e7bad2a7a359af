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
 * the document. src/policy/tekton-shapes.ts (generated from Tekton's types by
 * hack/trusted/gen-shapes) gives, for every struct reachable from the three
 * kinds, its fields in marshalling order with omitempty; the custom
 * marshallers (ParamValue, resource.Quantity, intstr.IntOrString,
 * metav1.Duration, metav1.Time, runtime.RawExtension, metav1.FieldsV1) are
 * re-implemented below from their Go source. Anything this module is not sure
 * to reproduce is an error, which verifySignature reports as 'invalid': it
 * never answers 'signed' for content it could not checksum as Tekton does.
 *
 * The one input this cannot see is the YAML text: values are taken as parsed.
 * Tekton reads YAML 1.1 (go-yaml v2); parse with `{ version: '1.1' }` so that
 * `0644`, `yes` and the like mean what they mean to Tekton.
 *
 * Over 400 lines on purpose: the decoder, the Go JSON encoder and the custom
 * marshallers are one unit, checked together against Tekton's own code by
 * test/unit/trusted.test.ts.
 */
import { createHash, createPublicKey, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import { TEKTON_ROOTS, TEKTON_TYPES } from './tekton-shapes.js';

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

// ------------------------------------------------------------------ types

type CustomName = 'ParamValue' | 'Quantity' | 'IntOrString' | 'Duration' | 'Time' | 'RawExtension' | 'FieldsV1';
const CUSTOM = new Set<string>(['ParamValue', 'Quantity', 'IntOrString', 'Duration', 'Time', 'RawExtension', 'FieldsV1']);

interface StructField {
  name: string;
  type: GoType;
  omitEmpty: boolean;
}
type GoType =
  | { k: 'string' }
  | { k: 'bool' }
  | { k: 'int'; min: bigint; max: bigint }
  | { k: 'ptr' | 'slice' | 'map'; elem: GoType }
  | { k: 'struct'; name: string; fields: StructField[]; byName: Map<string, StructField> }
  | { k: 'custom'; name: CustomName };

const INT_RANGES: Record<string, [bigint, bigint]> = {
  int8: [-(2n ** 7n), 2n ** 7n - 1n],
  int16: [-(2n ** 15n), 2n ** 15n - 1n],
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  int: [-(2n ** 63n), 2n ** 63n - 1n],
  uint8: [0n, 2n ** 8n - 1n],
  uint16: [0n, 2n ** 16n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
  uint: [0n, 2n ** 64n - 1n],
};

const structs = new Map<string, Extract<GoType, { k: 'struct' }>>();

/** The Go type of a type expression of tekton-shapes.ts. */
function goType(expr: string): GoType {
  if (expr.startsWith('*')) return { k: 'ptr', elem: goType(expr.slice(1)) };
  if (expr.startsWith('[]')) return { k: 'slice', elem: goType(expr.slice(2)) };
  if (expr.startsWith('map[string]')) return { k: 'map', elem: goType(expr.slice('map[string]'.length)) };
  if (expr.startsWith('!') && CUSTOM.has(expr.slice(1))) return { k: 'custom', name: expr.slice(1) as CustomName };
  if (expr.startsWith('@')) {
    const name = expr.slice(1);
    const known = structs.get(name);
    if (known) return known;
    const fields = TEKTON_TYPES[name];
    if (!fields) throw new Error(`tekton-shapes: no struct ${name}`);
    const t: Extract<GoType, { k: 'struct' }> = { k: 'struct', name, fields: [], byName: new Map() };
    structs.set(name, t); // before the fields: the types are recursive
    for (const [fname, ftype, flags] of fields) {
      const f = { name: fname, type: goType(ftype), omitEmpty: flags.includes('o') };
      t.fields.push(f);
      t.byName.set(fname, f);
    }
    return t;
  }
  if (expr === 'string' || expr === 'bool') return { k: expr };
  const range = INT_RANGES[expr];
  if (range) return { k: 'int', min: range[0], max: range[1] };
  throw new Error(`tekton-shapes: type ${expr} is not implemented by trusted.ts`);
}

// ------------------------------------------------------------------ decoded values

/** Why a resource cannot be checksummed the way Tekton would. */
class Unreproducible extends Error {}

/** A nil pointer, slice or map. */
const NIL: unique symbol = Symbol('nil');
/** A value whose Go JSON is already known (the custom marshallers but ParamValue). */
class Encoded {
  constructor(readonly json: string) {}
}
/** Tekton's ParamValue: string, array of strings or map of strings. */
class ParamValue {
  constructor(
    readonly type: 'string' | 'array' | 'object',
    readonly str: string,
    readonly arr: string[] = [],
    readonly obj: Map<string, string> = new Map(),
  ) {}
}
type Struct = Map<string, Value>;
type Value = string | number | boolean | typeof NIL | Value[] | Map<string, Value> | Encoded | ParamValue;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (v instanceof Date) return 'a date (quote it: Tekton reads it as a string)';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/**
 * v decoded into Go type t, as Tekton's strict decoder
 * (sigs.k8s.io/json.UnmarshalStrict: case-sensitive, unknown fields refused)
 * would; errors where it errs.
 */
function decode(v: unknown, t: GoType, path: string): Value {
  if (v === null) return decodeNull(t, path);
  switch (t.k) {
    case 'string':
      if (typeof v !== 'string') throw new Unreproducible(`${path}: want a string, got ${describe(v)}`);
      checkString(v, path);
      return v;
    case 'bool':
      if (typeof v !== 'boolean') throw new Unreproducible(`${path}: want a boolean, got ${describe(v)}`);
      return v;
    case 'int':
      if (typeof v !== 'number' || !Number.isInteger(v)) throw new Unreproducible(`${path}: want an integer, got ${typeof v === 'number' ? v : describe(v)}`);
      if (BigInt(v) < t.min || BigInt(v) > t.max) throw new Unreproducible(`${path}: integer ${v} out of range`);
      return v === 0 ? 0 : v; // no -0
    case 'ptr':
      return decode(v, t.elem, path);
    case 'slice':
      if (!Array.isArray(v)) throw new Unreproducible(`${path}: want an array, got ${describe(v)}`);
      return v.map((e, i) => decode(e, t.elem, `${path}[${i}]`));
    case 'map': {
      if (!isPlainObject(v)) throw new Unreproducible(`${path}: want an object, got ${describe(v)}`);
      const m = new Map<string, Value>();
      for (const [key, e] of Object.entries(v)) {
        if (e === undefined) continue;
        checkString(key, path);
        m.set(key, decode(e, t.elem, `${path}.${key}`));
      }
      return m;
    }
    case 'struct': {
      if (!isPlainObject(v)) throw new Unreproducible(`${path || 'the resource'}: want an object, got ${describe(v)}`);
      const m: Struct = new Map();
      for (const [key, e] of Object.entries(v)) {
        if (e === undefined) continue;
        const f = t.byName.get(key);
        // Tekton's resolvers decode strictly: such a document does not load there, and a field
        // the signature does not cover must not reach anything that runs.
        if (!f) throw new Unreproducible(`${path ? `${path}.` : ''}${key}: unknown field (not part of Tekton's ${t.name}, so not covered by the signature)`);
        m.set(key, decode(e, f.type, path ? `${path}.${key}` : key));
      }
      return m;
    }
    case 'custom':
      return decodeCustom(v, t.name, path);
  }
}

/** JSON null: nil for pointers, slices and maps; no effect (the zero value) otherwise, but the custom unmarshallers see it. */
function decodeNull(t: GoType, path: string): Value {
  switch (t.k) {
    case 'ptr':
    case 'slice':
    case 'map':
      return NIL;
    case 'string':
      return '';
    case 'bool':
      return false;
    case 'int':
      return 0;
    case 'struct':
      return new Map();
    case 'custom':
      return decodeCustom(null, t.name, path);
  }
}

function decodeCustom(v: unknown, name: CustomName, path: string): Value {
  switch (name) {
    case 'ParamValue':
      return decodeParamValue(v);
    case 'Quantity': {
      // UnmarshalJSON: null is zero; otherwise the JSON text, quotes removed, spaces trimmed.
      if (v === null) return new Encoded('"0"');
      let raw: string;
      if (typeof v === 'string') raw = goQuote(v).slice(1, -1);
      else if (typeof v === 'number') raw = goNumber(v);
      else throw new Unreproducible(`${path}: want a quantity, got ${describe(v)}`);
      try {
        return new Encoded(`"${quantityString(goTrimSpace(raw))}"`);
      } catch (e) {
        throw new Unreproducible(`${path}: quantity ${JSON.stringify(v)}: ${(e as Error).message}`);
      }
    }
    case 'IntOrString':
      if (v === null) return new Encoded('0');
      if (typeof v === 'string') return new Encoded(goQuote(v));
      if (typeof v === 'number' && Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31) return new Encoded(String(v === 0 ? 0 : v));
      throw new Unreproducible(`${path}: want an int32 or a string, got ${typeof v === 'number' ? v : describe(v)}`);
    case 'Duration': {
      if (typeof v !== 'string') throw new Unreproducible(`${path}: want a duration string, got ${describe(v)}`);
      const d = parseGoDuration(v);
      if (d === undefined) throw new Unreproducible(`${path}: invalid duration ${JSON.stringify(v)}`);
      return new Encoded(goQuote(formatGoDuration(d)));
    }
    case 'Time': {
      if (v === null) return new Encoded('null');
      if (typeof v !== 'string') throw new Unreproducible(`${path}: want an RFC 3339 time, got ${describe(v)}`);
      const t = rfc3339(v);
      if (t === undefined) throw new Unreproducible(`${path}: not an RFC 3339 time Tekton reads: ${JSON.stringify(v)}`);
      return new Encoded(t);
    }
    case 'RawExtension':
    case 'FieldsV1':
      // The raw JSON of the value, as the YAML → JSON conversion wrote it (Go's json.Marshal of the generic value).
      return new Encoded(v === null ? 'null' : goGenericJson(v, path));
  }
}

/** ParamValue.UnmarshalJSON: an array of strings, an object of strings, a string, else the JSON text as a string. */
function decodeParamValue(v: unknown): ParamValue {
  if (typeof v === 'string') return new ParamValue('string', v);
  if (v === null) return new ParamValue('string', '');
  if (Array.isArray(v) && v.every((e) => typeof e === 'string' || e === null)) return new ParamValue('array', '', v.map((e) => (e === null ? '' : (e as string))));
  if (isPlainObject(v) && Object.values(v).every((e) => typeof e === 'string' || e === null)) {
    return new ParamValue('object', '', [], new Map(Object.entries(v).map(([k, e]) => [k, e === null ? '' : (e as string)])));
  }
  return new ParamValue('string', goGenericJson(v, 'a parameter value'));
}

// ------------------------------------------------------------------ Go's encoding/json

/** No lone surrogates: Go would have read U+FFFD from the document, which the parsed value no longer tells. */
function checkString(s: string, path: string): void {
  if (/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s)) throw new Unreproducible(`${path}: string with a lone UTF-16 surrogate`);
}

/** A Go string as json.Marshal writes it: HTML-safe (<, >, & escaped), U+2028 and U+2029 escaped. */
function goQuote(s: string): string {
  checkString(s, 'string');
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (c < 0x80) {
      if (c >= 0x20 && ch !== '"' && ch !== '\\' && ch !== '<' && ch !== '>' && ch !== '&') out += ch;
      else if (ch === '"' || ch === '\\') out += `\\${ch}`;
      else if (ch === '\b') out += '\\b';
      else if (ch === '\f') out += '\\f';
      else if (ch === '\n') out += '\\n';
      else if (ch === '\r') out += '\\r';
      else if (ch === '\t') out += '\\t';
      else out += `\\u00${c.toString(16).padStart(2, '0')}`;
    } else if (c === 0x2028 || c === 0x2029) out += `\\u${c.toString(16)}`;
    else out += ch;
  }
  return `${out}"`;
}

/** A float64 as json.Marshal writes it (shortest form; exponent below 1e-6 and from 1e21, as JavaScript). */
function goNumber(n: number): string {
  // (An integer past 2^53 may have been rounded by the YAML parser: the checksum then differs, never the reverse.)
  if (!Number.isFinite(n)) throw new Unreproducible(`number ${n} has no JSON form`);
  return Object.is(n, -0) ? '0' : String(n);
}

/** Go sorts map keys by their UTF-8 bytes, which is code point order. */
function compareKeys(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

/** json.Marshal of a generic value (what sigs.k8s.io/yaml's YAML → JSON conversion writes): keys sorted. */
function goGenericJson(v: unknown, path: string): string {
  if (v === null) return 'null';
  if (typeof v === 'string') return goQuote(v);
  if (typeof v === 'number') return goNumber(v);
  if (typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${v.map((e) => goGenericJson(e, path)).join(',')}]`;
  if (isPlainObject(v)) {
    const keys = Object.keys(v).filter((k) => v[k] !== undefined).sort(compareKeys);
    return `{${keys.map((k) => `${goQuote(k)}:${goGenericJson(v[k], path)}`).join(',')}}`;
  }
  throw new Unreproducible(`${path}: ${describe(v)} has no JSON form`);
}

/** Go's isEmptyValue, for omitempty: structs (the custom types included) are never empty. */
function isEmpty(v: Value | undefined, t: GoType): boolean {
  if (t.k === 'struct' || t.k === 'custom') return false;
  if (v === undefined || v === NIL) return true;
  switch (t.k) {
    case 'string':
      return v === '';
    case 'bool':
      return v === false;
    case 'int':
      return v === 0;
    case 'slice':
      return (v as Value[]).length === 0;
    case 'map':
      return (v as Map<string, Value>).size === 0;
    case 'ptr':
      return false;
  }
}

/** json.Marshal of a decoded value of type t; undefined is the zero value. */
function encode(v: Value | undefined, t: GoType): string {
  if (v === NIL) return 'null';
  switch (t.k) {
    case 'string':
      return goQuote(v === undefined ? '' : (v as string));
    case 'bool':
      return v === true ? 'true' : 'false';
    case 'int':
      return String(v ?? 0);
    case 'ptr':
      return v === undefined ? 'null' : encode(v, t.elem);
    case 'slice':
      return v === undefined ? 'null' : `[${(v as Value[]).map((e) => encode(e, t.elem)).join(',')}]`;
    case 'map': {
      if (v === undefined) return 'null';
      const m = v as Map<string, Value>;
      return `{${[...m.keys()].sort(compareKeys).map((k) => `${goQuote(k)}:${encode(m.get(k), t.elem)}`).join(',')}}`;
    }
    case 'struct': {
      const m = (v ?? new Map()) as Struct;
      const parts: string[] = [];
      for (const f of t.fields) {
        const fv = m.get(f.name);
        if (f.omitEmpty && isEmpty(fv, f.type)) continue;
        parts.push(`${goQuote(f.name)}:${encode(fv, f.type)}`);
      }
      return `{${parts.join(',')}}`;
    }
    case 'custom':
      if (v instanceof Encoded) return v.json;
      if (v instanceof ParamValue) {
        if (v.type === 'string') return goQuote(v.str);
        if (v.type === 'array') return `[${v.arr.map(goQuote).join(',')}]`;
        return `{${[...v.obj.keys()].sort(compareKeys).map((k) => `${goQuote(k)}:${goQuote(v.obj.get(k)!)}`).join(',')}}`;
      }
      // The zero values: what the custom MarshalJSON writes for them.
      switch (t.name) {
        case 'ParamValue':
          throw new Unreproducible('a parameter without a value (Go: impossible ParamValues.Type "")');
        case 'Quantity':
          return '"0"';
        case 'IntOrString':
          return '0';
        case 'Duration':
          return '"0s"';
        default:
          return 'null';
      }
  }
}

// ------------------------------------------------------------------ Tekton's SetDefaults (default configuration)

function list(v: Value | undefined): Struct[] {
  return Array.isArray(v) ? (v as Struct[]) : [];
}
function str(v: Value | undefined): string {
  return typeof v === 'string' ? v : '';
}
function presentMap(v: Value | undefined): Map<string, Value> | undefined {
  return v instanceof Map ? v : undefined;
}

/** PropertySpec types default to string. */
function defaultProperties(props: Map<string, Value> | undefined): void {
  for (const [k, p] of props ?? []) if (str((p as Struct).get('type')) === '') props!.set(k, new Map([['type', 'string']]));
}

/** v1.ParamSpec.SetDefaults. */
function defaultParamSpec(p: Struct): void {
  const props = presentMap(p.get('properties'));
  const def = p.get('default');
  if (str(p.get('type')) !== '') defaultProperties(props);
  else if (props) {
    p.set('type', 'object');
    defaultProperties(props);
  } else if (def instanceof ParamValue) p.set('type', def.type);
  else p.set('type', 'string');
}

/** v1.TaskResult and v1.StepResult SetDefaults. */
function defaultResult(r: Struct): void {
  const props = presentMap(r.get('properties'));
  if (str(r.get('type')) === '') r.set('type', props ? 'object' : 'string');
  defaultProperties(props);
}

/** v1.TaskSpec.SetDefaults (steps' refs get the default resolver type, "" by default: no change). */
function defaultTaskSpec(spec: Struct): void {
  list(spec.get('params')).forEach(defaultParamSpec);
  list(spec.get('results')).forEach(defaultResult);
}

/** v1.PipelineTask.SetDefaults. */
function defaultPipelineTask(pt: Struct): void {
  const ref = presentMap(pt.get('taskRef'));
  if (ref && str(ref.get('kind')) === '' && str(ref.get('resolver')) === '') ref.set('kind', 'Task');
  const spec = presentMap(pt.get('taskSpec'));
  if (spec) defaultTaskSpec(spec);
}

const KINDS: Record<string, { apiVersion: string; kind: string; defaults(spec: Struct): void }> = {
  'tekton.dev/v1/Task': { apiVersion: 'tekton.dev/v1', kind: 'Task', defaults: defaultTaskSpec },
  'tekton.dev/v1/Pipeline': {
    apiVersion: 'tekton.dev/v1',
    kind: 'Pipeline',
    defaults(spec) {
      list(spec.get('params')).forEach(defaultParamSpec);
      list(spec.get('tasks')).forEach(defaultPipelineTask);
      list(spec.get('finally')).forEach(defaultPipelineTask);
    },
  },
  'tekton.dev/v1beta1/StepAction': {
    apiVersion: 'tekton.dev/v1beta1',
    kind: 'StepAction',
    defaults(spec) {
      list(spec.get('params')).forEach(defaultParamSpec);
      list(spec.get('results')).forEach(defaultResult);
    },
  },
};

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
    const kind = KINDS[id];
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

// ------------------------------------------------------------------ resource.Quantity (k8s.io/apimachinery/pkg/api/resource)

type QFormat = 'DecimalExponent' | 'BinarySI' | 'DecimalSI';
const DEC_SUFFIX: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BIN_SUFFIX: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const MAX_INT64 = 2n ** 63n - 1n;

/** Go's strings.TrimSpace (unicode.IsSpace). */
function goTrimSpace(s: string): string {
  const space = '[\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
  return s.replace(new RegExp(`^${space}+|${space}+$`, 'g'), '');
}

/** parseQuantityString. */
function scanQuantity(s: string): { positive: boolean; value: string; num: string; denom: string; suffix: string } {
  let positive = true;
  let pos = 0;
  const end = s.length;
  const digit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
  if (s[0] === '-') {
    positive = false;
    pos++;
  } else if (s[0] === '+') pos++;
  while (s[pos] === '0') pos++;
  if (pos >= end) return { positive, value: '0', num: '0', denom: '', suffix: '' };
  let i = pos;
  while (i < end && digit(s[i])) i++;
  if (i >= end) return { positive, value: s, num: s.slice(pos), denom: '', suffix: '' };
  let num = s.slice(pos, i);
  pos = i;
  if (num === '') num = '0';
  let denom = '';
  if (s[pos] === '.') {
    pos++;
    i = pos;
    while (i < end && digit(s[i])) i++;
    denom = s.slice(pos, i);
    if (i >= end) return { positive, value: s, num, denom, suffix: '' };
    pos = i;
  }
  const value = s.slice(0, pos);
  const suffixStart = pos;
  i = pos;
  while (i < end && 'eEinumkKMGTP'.includes(s[i]!)) i++;
  if (i >= end) return { positive, value, num, denom, suffix: s.slice(suffixStart) };
  pos = i;
  if (s[pos] === '-' || s[pos] === '+') pos++;
  for (i = pos; i < end; i++) if (!digit(s[i])) throw new Error('quantities must match the regular expression \'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$\'');
  return { positive, value, num, denom, suffix: s.slice(suffixStart) };
}

/** ParseQuantity then MarshalJSON: the string Go writes for the quantity s. */
function quantityString(s: string): string {
  if (s.length === 0) throw new Error('quantities must match the regular expression \'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$\'');
  if (s === '0') return '0';
  const { positive, value, num, denom, suffix } = scanQuantity(s);
  let base: number;
  let exponent: number;
  let format: QFormat;
  if (suffix in DEC_SUFFIX) [base, exponent, format] = [10, DEC_SUFFIX[suffix]!, 'DecimalSI'];
  else if (suffix in BIN_SUFFIX) [base, exponent, format] = [2, BIN_SUFFIX[suffix]!, 'BinarySI'];
  else if (suffix.length > 1 && (suffix[0] === 'e' || suffix[0] === 'E') && /^[+-]?[0-9]+$/.test(suffix.slice(1))) {
    const e = Number(suffix.slice(1));
    // Go keeps an int32 of the exponent; beyond what a quantity could sensibly hold, refuse.
    if (!Number.isSafeInteger(e) || Math.abs(e) > 1000) throw new Error('exponent out of the range reproduced here');
    [base, exponent, format] = [10, e, 'DecimalExponent'];
  } else throw new Error("unable to parse quantity's suffix");

  let precision = 0;
  let scale = 0;
  let mantissa = 1n;
  if (format !== 'BinarySI') {
    scale = exponent;
    precision = 18 - (num.length + denom.length);
  } else if (exponent >= 0 && denom.length === 0) {
    mantissa = 1n << BigInt(exponent);
    precision = 15 - num.length - Math.trunc((exponent * 3) / 10) - 1;
  } else precision = -1;

  if (precision >= 0) {
    scale -= denom.length;
    if (scale >= -9) {
      const shifted = num + denom;
      const v = BigInt(shifted);
      if (v > MAX_INT64) throw new Error('unable to parse numeric part of quantity');
      const product = v * mantissa;
      if (product <= MAX_INT64) {
        const result = positive ? product : -product;
        // The canonical form: Go keeps the string as written.
        if (format === 'BinarySI' ? exponent % 10 === 0 && (v & 7n) !== 0n : scale % 3 === 0 && !shifted.endsWith('000') && shifted[0] !== '0') return s;
        return canonicalQuantity(result, scale, format);
      }
    }
  }

  // inf.Dec path: value is [sign]digits[.digits].
  const m = /^([+-]?)([0-9]*)(?:\.([0-9]*))?$/.exec(value);
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) throw new Error('unable to parse numeric part of quantity');
  let unscaled = BigInt((m[2] || '0') + (m[3] ?? ''));
  let decScale = (m[3] ?? '').length; // value = unscaled × 10^-decScale
  if (base === 10) decScale -= exponent;
  else unscaled *= 1n << BigInt(exponent);
  const negative = m[1] === '-' && unscaled !== 0n;
  // Round the magnitude up to a multiple of 10^-9.
  if (unscaled !== 0n && decScale > 9) {
    const d = 10n ** BigInt(decScale - 9);
    unscaled = unscaled / d + (unscaled % d === 0n ? 0n : 1n);
    decScale = 9;
  }
  if (format === 'BinarySI') {
    const exceeds = decScale >= 0 ? unscaled > MAX_INT64 * 10n ** BigInt(decScale) : unscaled * 10n ** BigInt(-decScale) > MAX_INT64;
    if (exceeds) [unscaled, decScale] = [MAX_INT64, 0];
    const belowOne = decScale > 0 && unscaled < 10n ** BigInt(decScale);
    if (belowOne && unscaled > 0n) format = 'DecimalSI';
  }
  return canonicalQuantity(negative ? -unscaled : unscaled, -decScale, format);
}

/** CanonicalizeBytes of mant × 10^exp10. */
function canonicalQuantity(mant: bigint, exp10: number, format: QFormat): string {
  if (mant === 0n) return '0';
  if (format === 'BinarySI') {
    const integral = exp10 >= 0 || mant % 10n ** BigInt(-exp10) === 0n;
    const n = integral ? (exp10 >= 0 ? mant * 10n ** BigInt(exp10) : mant / 10n ** BigInt(-exp10)) : 0n;
    if (!integral || (n > -1024n && n < 1024n)) format = 'DecimalSI';
    else {
      let v = n;
      let times = 0;
      while (v % 1024n === 0n && v !== 0n) {
        v /= 1024n;
        times++;
      }
      const sfx = Object.entries(BIN_SUFFIX).find(([, e]) => e === times * 10)?.[0] ?? '';
      return `${v}${sfx}`;
    }
  }
  let m = mant;
  let e = exp10;
  while (m % 10n === 0n) {
    m /= 10n;
    e++;
  }
  while (((e % 3) + 3) % 3 !== 0) {
    m *= 10n;
    e--;
  }
  if (format === 'DecimalExponent') return e === 0 ? `${m}` : `${m}e${e}`;
  const sfx = Object.entries(DEC_SUFFIX).find(([, x]) => x === e)?.[0] ?? '';
  return `${m}${sfx}`;
}

// ------------------------------------------------------------------ time.Duration, metav1.Time

const UNITS: Record<string, bigint> = { ns: 1n, us: 1000n, 'µs': 1000n, 'μs': 1000n, ms: 1000000n, s: 1000000000n, m: 60000000000n, h: 3600000000000n };

/** time.ParseDuration, in nanoseconds; undefined where Go errs. */
function parseGoDuration(orig: string): bigint | undefined {
  let s = orig;
  let neg = false;
  const LIMIT = 1n << 63n;
  if (s !== '' && (s[0] === '-' || s[0] === '+')) {
    neg = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return 0n;
  if (s === '') return undefined;
  let d = 0n;
  const digit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
  while (s !== '') {
    if (!(s[0] === '.' || digit(s[0]))) return undefined;
    let i = 0;
    let v = 0n;
    for (; i < s.length && digit(s[i]); i++) {
      if (v > LIMIT / 10n) return undefined;
      v = v * 10n + BigInt(s.charCodeAt(i) - 48);
      if (v > LIMIT) return undefined;
    }
    const pre = i > 0;
    s = s.slice(i);
    let f = 0n;
    let scale = 1;
    let post = false;
    if (s[0] === '.') {
      s = s.slice(1);
      let overflow = false;
      for (i = 0; i < s.length && digit(s[i]); i++) {
        if (overflow) continue;
        if (f > (LIMIT - 1n) / 10n) {
          overflow = true;
          continue;
        }
        const y = f * 10n + BigInt(s.charCodeAt(i) - 48);
        if (y > LIMIT) {
          overflow = true;
          continue;
        }
        f = y;
        scale *= 10;
      }
      post = i > 0;
      s = s.slice(i);
    }
    if (!pre && !post) return undefined;
    for (i = 0; i < s.length && !(s[i] === '.' || digit(s[i])); i++);
    if (i === 0) return undefined;
    const unit = UNITS[s.slice(0, i)];
    s = s.slice(i);
    if (unit === undefined) return undefined;
    if (v > LIMIT / unit) return undefined;
    v *= unit;
    if (f > 0n) {
      v += BigInt(Math.trunc(Number(f) * (Number(unit) / scale)));
      if (v > LIMIT) return undefined;
    }
    d += v;
    if (d > LIMIT) return undefined;
  }
  if (neg) return -d;
  return d > LIMIT - 1n ? undefined : d;
}

/** time.Duration.String. */
function formatGoDuration(d: bigint): string {
  const neg = d < 0n;
  let u = neg ? -d : d;
  const frac = (v: bigint, prec: number): [string, bigint] => {
    let out = '';
    let print = false;
    for (let i = 0; i < prec; i++) {
      const digit = v % 10n;
      print = print || digit !== 0n;
      if (print) out = `${digit}${out}`;
      v /= 10n;
    }
    return [print ? `.${out}` : '', v];
  };
  let out: string;
  if (u < 1000000000n) {
    if (u === 0n) return '0s';
    const [unit, prec] = u < 1000n ? ['ns', 0] : u < 1000000n ? ['µs', 3] : ['ms', 6];
    const [f, rest] = frac(u, prec);
    out = `${rest}${f}${unit}`;
  } else {
    const [f, secs] = frac(u, 9);
    u = secs;
    out = `${u % 60n}${f}s`;
    u /= 60n;
    if (u > 0n) {
      out = `${u % 60n}m${out}`;
      u /= 60n;
      if (u > 0n) out = `${u}h${out}`;
    }
  }
  return neg ? `-${out}` : out;
}

/**
 * metav1.Time: time.Parse(time.RFC3339) then MarshalJSON (UTC, whole
 * seconds; the zero time is null). Parse's general path, which it falls back
 * to, also takes a one-digit hour, a comma before the fraction and zone
 * offsets up to +24:60.
 */
function rfc3339(s: string): string | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{1,2}):(\d{2}):(\d{2})(?:[.,](\d+))?(?:Z|([+-])(\d{2}):(\d{2}))$/.exec(s);
  if (!m) return undefined;
  const [y, mo, d, h, mi, se] = [1, 2, 3, 4, 5, 6].map((i) => Number(m[i])) as [number, number, number, number, number, number];
  const days = [31, y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  if (mo < 1 || mo > 12 || d < 1 || d > days[mo - 1]! || h > 23 || mi > 59 || se > 59) return undefined;
  let offset = 0;
  if (m[8] !== undefined) {
    const [oh, om] = [Number(m[9]), Number(m[10])];
    if (oh > 24 || om > 60) return undefined;
    offset = (m[8] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  date.setUTCHours(h, mi - offset, se, 0);
  // 0001-01-01T00:00:00Z is Go's zero time, which MarshalJSON writes as null (nanoseconds: 9 digits at most count).
  const zero = new Date(0);
  zero.setUTCFullYear(1, 0, 1);
  if (date.getTime() === zero.getTime() && !/[1-9]/.test((m[7] ?? '').slice(0, 9))) return 'null';
  const year = date.getUTCFullYear();
  const p = (n: number, w = 2): string => String(n).padStart(w, '0');
  const yyyy = year < 0 ? `-${p(-year, 4)}` : p(year, 4); // Go's appendInt(year, 4)
  return `"${yyyy}-${p(date.getUTCMonth() + 1)}-${p(date.getUTCDate())}T${p(date.getUTCHours())}:${p(date.getUTCMinutes())}:${p(date.getUTCSeconds())}Z"`;
}
