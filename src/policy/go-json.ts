/**
 * Go's encoding/json, as far as the Trusted Resources checksum needs it: the
 * Go types of Tekton's kinds as json.Marshal sees them (built from the
 * generated tables of tekton-shapes.ts and kubernetes-shapes.ts), the values a
 * decoded resource is made of, and json.Marshal itself (field order,
 * omitempty, Go's string escaping and number form, map keys sorted by bytes).
 *
 * Its own file: this is Go's half of the checksum, which knows nothing of
 * Tekton's rules; tekton-decode.ts builds the values it writes, trusted.ts
 * hashes what it writes. Pure, no I/O.
 */
import { KUBERNETES_TYPES } from './kubernetes-shapes.js';
import { TEKTON_TYPES } from './tekton-shapes.js';

// ------------------------------------------------------------------ types

export type CustomName = 'ParamValue' | 'Quantity' | 'IntOrString' | 'Duration' | 'Time' | 'RawExtension' | 'FieldsV1';
const CUSTOM = new Set<string>(['ParamValue', 'Quantity', 'IntOrString', 'Duration', 'Time', 'RawExtension', 'FieldsV1']);

interface StructField {
  name: string;
  type: GoType;
  omitEmpty: boolean;
}
export type GoType =
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

/** The Go type of a type expression of tekton-shapes.ts or kubernetes-shapes.ts. */
export function goType(expr: string): GoType {
  if (expr.startsWith('*')) return { k: 'ptr', elem: goType(expr.slice(1)) };
  if (expr.startsWith('[]')) return { k: 'slice', elem: goType(expr.slice(2)) };
  if (expr.startsWith('map[string]')) return { k: 'map', elem: goType(expr.slice('map[string]'.length)) };
  if (expr.startsWith('!') && CUSTOM.has(expr.slice(1))) return { k: 'custom', name: expr.slice(1) as CustomName };
  if (expr.startsWith('@')) {
    const name = expr.slice(1);
    const known = structs.get(name);
    if (known) return known;
    const fields = TEKTON_TYPES[name] ?? KUBERNETES_TYPES[name];
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
  throw new Error(`tekton-shapes: type ${expr} is not implemented by go-json.ts`);
}

// ------------------------------------------------------------------ decoded values

/** Why a resource cannot be checksummed the way Tekton would. */
export class Unreproducible extends Error {}

/** A nil pointer, slice or map. */
export const NIL: unique symbol = Symbol('nil');
/** A value whose Go JSON is already known (the custom marshallers but ParamValue). */
export class Encoded {
  constructor(readonly json: string) {}
}
/** Tekton's ParamValue: string, array of strings or map of strings. */
export class ParamValue {
  constructor(
    readonly type: 'string' | 'array' | 'object',
    readonly str: string,
    readonly arr: string[] = [],
    readonly obj: Map<string, string> = new Map(),
  ) {}
}
export type Struct = Map<string, Value>;
export type Value = string | number | boolean | typeof NIL | Value[] | Map<string, Value> | Encoded | ParamValue;

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

export function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (v instanceof Date) return 'a date (quote it: Tekton reads it as a string)';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}
// ------------------------------------------------------------------ Go's encoding/json

/** No lone surrogates: Go would have read U+FFFD from the document, which the parsed value no longer tells. */
export function checkString(s: string, path: string): void {
  if (/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s)) throw new Unreproducible(`${path}: string with a lone UTF-16 surrogate`);
}

/** A Go string as json.Marshal writes it: HTML-safe (<, >, & escaped), U+2028 and U+2029 escaped. */
export function goQuote(s: string): string {
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
export function goNumber(n: number): string {
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
export function goGenericJson(v: unknown, path: string): string {
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
export function encode(v: Value | undefined, t: GoType): string {
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
