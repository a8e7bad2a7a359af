/**
 * A resolved Tekton resource read as Tekton reads it before checksumming it:
 * decoded strictly into the Go types of go-json.ts (sigs.k8s.io/json's
 * UnmarshalStrict: case-sensitive, unknown fields refused; the custom
 * unmarshallers of ParamValue, Quantity, IntOrString, Duration, Time,
 * RawExtension and FieldsV1), then defaulted by Tekton's SetDefaults in its
 * default configuration.
 *
 * Its own file: this is step 1 of the checksum (what Tekton's decoding and
 * defaulting make of the document), apart from how Go then writes the result
 * (go-json.ts) and from the signature check (trusted.ts). What it cannot
 * reproduce with certainty throws Unreproducible. Pure, no I/O.
 */
import {
  checkString,
  describe,
  Encoded,
  goGenericJson,
  goNumber,
  goQuote,
  isPlainObject,
  NIL,
  ParamValue,
  Unreproducible,
  type CustomName,
  type GoType,
  type Struct,
  type Value,
} from './go-json.js';
import { formatGoDuration, goTrimSpace, parseGoDuration, quantityString, rfc3339 } from './quantity-duration-time.js';

/**
 * v decoded into Go type t, as Tekton's strict decoder
 * (sigs.k8s.io/json.UnmarshalStrict: case-sensitive, unknown fields refused)
 * would; errors where it errs.
 */
export function decode(v: unknown, t: GoType, path: string): Value {
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

// ------------------------------------------------------------------ Tekton's SetDefaults (default configuration)

function list(v: Value | undefined): Struct[] {
  return Array.isArray(v) ? (v as Struct[]) : [];
}
function str(v: Value | undefined): string {
  return typeof v === 'string' ? v : '';
}
export function presentMap(v: Value | undefined): Map<string, Value> | undefined {
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

/** The kinds signatures are checked on: their apiVersion and kind, and their SetDefaults. */
export const SIGNED_KINDS: Record<string, { apiVersion: string; kind: string; defaults(spec: Struct): void }> = {
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
