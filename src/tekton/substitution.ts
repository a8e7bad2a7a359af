/**
 * Tekton's $(…) substitution, done ahead of the run for the walk over the
 * Pipeline (graph.ts): the params in scope (the Pipeline's, from the request
 * and the declared defaults; a Task's, from its declared defaults and what
 * its pipeline task passes) and a reference's resolver params substituted
 * with them. What cannot be known before the run is reported as dynamic,
 * never guessed. Pure.
 */
import type { ParamValue } from './tekton-types.js';
import type { GraphInput, RemoteRef } from './graph-model.js';

/** A value in scope for substitution: known (with where it came from) or not knowable before the run. */
export type Var = { value: ParamValue; from: string } | { dynamic: string };

interface Sub {
  value: string;
  /** The params whose values went into it, for messages. */
  from: string[];
  /** Expressions that cannot be known before the run. */
  dynamic: string[];
}

const EXPR = /\$\(([^()]*)\)/g;
const PARAM_EXPR = /^params(?:\.([A-Za-z0-9_-]+)|\[(["'])(.+?)\2\])(?:\.([A-Za-z0-9_.-]+)|\[(\d+)\])?$/;

/** Tekton's $(…) substitution, for the expressions that can be known before the run. */
export function substitute(text: string, vars: ReadonlyMap<string, Var>, context: ReadonlyMap<string, string>): Sub {
  const from: string[] = [];
  const dynamic: string[] = [];
  const value = text.replace(EXPR, (whole, inner: string) => {
    const ctx = context.get(inner);
    if (ctx !== undefined) return ctx;
    const m = PARAM_EXPR.exec(inner);
    if (!m) {
      dynamic.push(whole);
      return whole;
    }
    const name = m[1] ?? m[3]!;
    let key = m[4];
    let v: Var | undefined;
    // $(params.a.b): a param named "a.b" if there is one, else key b of object param a.
    if (m[1] && key !== undefined && vars.has(`${name}.${key}`)) {
      v = vars.get(`${name}.${key}`);
      key = undefined;
    } else v = vars.get(name);
    if (!v) {
      dynamic.push(`${whole} (no such param)`);
      return whole;
    }
    if ('dynamic' in v) {
      dynamic.push(`${whole} (${v.dynamic})`);
      return whole;
    }
    let out: ParamValue | undefined = v.value;
    if (key !== undefined) out = !Array.isArray(out) && typeof out === 'object' ? out[key] : undefined;
    else if (m[5] !== undefined) out = Array.isArray(out) ? out[Number(m[5])] : undefined;
    if (typeof out !== 'string') {
      dynamic.push(`${whole} (not a single string)`);
      return whole;
    }
    from.push(v.from);
    return out;
  });
  // A value that still holds $(…) after substitution (one given by a
  // requester, say) would be substituted again by Tekton: not final.
  if (!dynamic.length && /\$\(/.test(value)) dynamic.push(`${JSON.stringify(value)} (holds an expression after substitution)`);
  return { value, from: [...new Set(from)], dynamic };
}

const q = (s: string) => JSON.stringify(s);
const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

function paramsOf(x: unknown): Array<{ name: string; value: unknown }> {
  return Array.isArray(x) ? x.filter((p): p is { name: string; value: unknown } => isObj(p) && typeof p['name'] === 'string') : [];
}

/** Substitutes a resolver's params; values that are not strings are refused. */
export function substituteRef(resolver: string, params: unknown, vars: ReadonlyMap<string, Var>, context: ReadonlyMap<string, string>): { ref: RemoteRef; from: string[]; dynamic: string[] } {
  const out: RemoteRef = { resolver, params: [] };
  const from: string[] = [];
  const dynamic: string[] = [];
  for (const p of paramsOf(params)) {
    if (typeof p.value !== 'string') {
      dynamic.push(`param ${q(p.name)} is not a string`);
      continue;
    }
    const s = substitute(p.value, vars, context);
    out.params.push({ name: p.name, value: s.value });
    from.push(...s.from);
    dynamic.push(...s.dynamic.map((d) => `${p.name}: ${d}`));
  }
  return { ref: out, from: [...new Set(from)], dynamic };
}

/** Where a param got its value, for messages. */
export function pipelineVars(spec: Record<string, unknown>, given: GraphInput['params']): Map<string, Var> {
  const vars = new Map<string, Var>();
  for (const p of paramsOf(spec['params'])) {
    const d = (p as { default?: unknown }).default;
    if (d !== undefined) vars.set(p.name, { value: d as ParamValue, from: `the default of param ${q(p.name)}` });
  }
  for (const p of given) vars.set(p.name, { value: p.value, from: `param ${q(p.name)}` });
  return vars;
}

/** A Task's params, from its declared defaults and what the pipeline task passes. */
export function taskVars(taskSpec: Record<string, unknown>, pipelineTaskParams: unknown, pvars: ReadonlyMap<string, Var>, context: ReadonlyMap<string, string>, task: string): Map<string, Var> {
  const vars = new Map<string, Var>();
  for (const p of paramsOf(taskSpec['params'])) {
    const d = (p as { default?: unknown }).default;
    if (d !== undefined) vars.set(p.name, { value: d as ParamValue, from: `the default of param ${q(p.name)} of task ${q(task)}` });
  }
  for (const p of paramsOf(pipelineTaskParams)) {
    const via = `task ${q(task)} param ${q(p.name)}`;
    if (typeof p.value === 'string') {
      const s = substitute(p.value, pvars, context);
      vars.set(p.name, s.dynamic.length ? { dynamic: s.dynamic.join(', ') } : { value: s.value, from: s.from.length ? `${via} ← ${s.from.join(', ')}` : via });
    } else {
      // Arrays and objects: element by element.
      const flat = JSON.stringify(p.value);
      const s = substitute(flat, pvars, context);
      let parsed: unknown;
      try {
        parsed = JSON.parse(s.value);
      } catch {
        parsed = undefined;
      }
      vars.set(p.name, s.dynamic.length || parsed === undefined ? { dynamic: s.dynamic.join(', ') || 'not a value' } : { value: parsed as ParamValue, from: via });
    }
  }
  return vars;
}
