/**
 * The simulated executor's default results (auto mode): every result a
 * Pipeline declares, with a value derived only from the run's params, so
 * the same request always gets the same results.
 */
import { createHash } from 'node:crypto';
import { isRecord, type PipelineObject, type PipelineRunObject, type Results } from './tekton-objects.js';

/** PipelineRun spec.params as a name → value object with sorted keys. */
function sortedParams(pr: PipelineRunObject): Record<string, unknown> {
  const params = pr.spec?.['params'];
  const entries: Array<[string, unknown]> = [];
  if (Array.isArray(params)) {
    for (const p of params as unknown[]) {
      if (isRecord(p) && typeof p['name'] === 'string') entries.push([p['name'], p['value']]);
    }
  }
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(entries);
}

const MAX_DERIVED_PARAMS = 200;

/**
 * `<label>:<JSON of the sorted params>`. Past 200 characters the JSON is cut
 * and a short hash of the whole JSON appended, so values stay small (Tekton
 * results are size-limited) yet different params still give different values.
 */
function derive(label: string, paramsJson: string): string {
  if (paramsJson.length <= MAX_DERIVED_PARAMS) return `${label}:${paramsJson}`;
  const hash = createHash('sha256').update(paramsJson).digest('hex').slice(0, 12);
  return `${label}:${paramsJson.slice(0, MAX_DERIVED_PARAMS)}…${hash}`;
}

/**
 * The default auto-mode results: every result the Pipeline declares in
 * spec.results, with a value derived only from the run's params. The shape
 * follows the declaration: `type` if given, otherwise the shape of its
 * `value` (string, array, or object whose keys become the object's keys).
 */
export function deterministicResults(pr: PipelineRunObject, pipeline: PipelineObject | undefined): Results {
  const json = JSON.stringify(sortedParams(pr));
  const declared = pipeline?.spec?.['results'];
  const out: Results = {};
  if (!Array.isArray(declared)) return out;
  for (const r of declared as unknown[]) {
    if (!isRecord(r) || typeof r['name'] !== 'string') continue;
    const name = r['name'];
    const value = r['value'];
    const type = typeof r['type'] === 'string' ? r['type'] : Array.isArray(value) ? 'array' : isRecord(value) ? 'object' : 'string';
    if (type === 'array') {
      out[name] = [derive(`${name}[0]`, json)];
    } else if (type === 'object') {
      const keys = isRecord(value) ? Object.keys(value).sort() : isRecord(r['properties']) ? Object.keys(r['properties']).sort() : ['value'];
      out[name] = Object.fromEntries(keys.map((k) => [k, derive(`${name}.${k}`, json)]));
    } else {
      out[name] = derive(name, json);
    }
  }
  return out;
}
