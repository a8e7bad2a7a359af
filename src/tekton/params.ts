/** Checking a request's params against the Pipeline's declared params. */
import type { ParamValue, Pipeline } from './tekton-types.js';

export type ParamCheck =
  | { ok: true; params: Array<{ name: string; value: ParamValue }> }
  | { ok: false; missing: string[]; undeclared: string[]; malformed: string[]; message: string };

/**
 * Every request param must be declared by the Pipeline; every declared param
 * without a default must be given. A param declared as array or object takes
 * its value as JSON text (["a","b"], {"k":"v"}).
 */
export function checkParams(pipelineName: string, pipeline: Pipeline, given: Record<string, string> | undefined): ParamCheck {
  const declared = new Map((pipeline.spec?.params ?? []).map((p) => [p.name, p]));
  const values = given ?? {};
  const names = Object.keys(values).sort();
  const undeclared = names.filter((n) => !declared.has(n));
  const missing = [...declared.values()]
    .filter((p) => p.default === undefined && !(p.name in values))
    .map((p) => p.name)
    .sort();
  const malformed: string[] = [];
  const params: Array<{ name: string; value: ParamValue }> = [];
  for (const name of names) {
    const spec = declared.get(name);
    if (!spec) continue;
    const raw = values[name]!;
    const type = spec.type ?? 'string';
    if (type === 'string') {
      params.push({ name, value: raw });
      continue;
    }
    const parsed = parseJson(raw);
    if (type === 'array' && Array.isArray(parsed) && parsed.every((v) => typeof v === 'string')) {
      params.push({ name, value: parsed as string[] });
    } else if (
      type === 'object' &&
      parsed !== null &&
      typeof parsed === 'object' &&
      !Array.isArray(parsed) &&
      Object.values(parsed).every((v) => typeof v === 'string')
    ) {
      params.push({ name, value: parsed as Record<string, string> });
    } else {
      malformed.push(`${JSON.stringify(name)} (expected ${type === 'array' ? 'a JSON array of strings' : 'a JSON object of strings'})`);
    }
  }
  if (!undeclared.length && !missing.length && !malformed.length) return { ok: true, params };
  const parts: string[] = [];
  const q = (n: string) => JSON.stringify(n);
  if (missing.length) parts.push(`missing required params: ${missing.map(q).join(', ')}`);
  if (undeclared.length) parts.push(`undeclared params: ${undeclared.map(q).join(', ')}`);
  if (malformed.length) parts.push(`malformed params: ${malformed.join(', ')}`);
  const decl = [...declared.keys()].sort();
  const message = `params do not match Pipeline ${q(pipelineName)}: ${parts.join('; ')} (it declares: ${decl.length ? decl.map(q).join(', ') : 'no params'})`;
  return { ok: false, missing, undeclared, malformed, message };
}

function parseJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}
