/**
 * The shape of an InternalRequest's spec, checked again by the controller:
 * the API server validates requests against the CRD schema, but objects
 * stored before it (or under an older schema) reach the controller too, and a
 * malformed one must be rejected with a message rather than fail every retry.
 * Pure.
 */
import { DNS_LABEL_PATTERN, DNS_SUBDOMAIN_PATTERN, DURATION_PATTERN, type InternalRequest } from '../api/types.js';

const PIPELINE_NAME = new RegExp(DNS_SUBDOMAIN_PATTERN);
const DURATION = new RegExp(DURATION_PATTERN);
const SA_NAME = new RegExp(DNS_LABEL_PATTERN);

/** What is wrong with a request's spec, or undefined when it has the shape the schema demands. */
export function checkShape(req: InternalRequest): string | undefined {
  const spec = req.spec as unknown;
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) return 'spec is missing or not an object';
  const { request, pipeline, params, timeouts, serviceAccount } = spec as Record<string, unknown>;
  if (request === undefined && pipeline === undefined) {
    return "give one of spec.request (the name of a Pipeline installed in the controller's namespace) or spec.pipeline (a pipelineRef)";
  }
  if (request !== undefined && (typeof request !== 'string' || request.length > 253 || !PIPELINE_NAME.test(request))) {
    return 'spec.request must be the name of a Pipeline (a DNS subdomain of at most 253 characters)';
  }
  if (pipeline !== undefined) {
    const p = pipeline as Record<string, unknown> | null;
    if (typeof p !== 'object' || p === null || Array.isArray(p)) return 'spec.pipeline must be an object';
    const ref = p['pipelineRef'] as Record<string, unknown> | null | undefined;
    if (typeof ref !== 'object' || ref === null || Array.isArray(ref)) return 'spec.pipeline.pipelineRef must be an object';
    if (ref['name'] !== undefined && (typeof ref['name'] !== 'string' || !PIPELINE_NAME.test(ref['name']))) return 'spec.pipeline.pipelineRef.name must be the name of a Pipeline';
    if (ref['resolver'] !== undefined && typeof ref['resolver'] !== 'string') return 'spec.pipeline.pipelineRef.resolver must be a string';
    for (const [field, list] of [['spec.pipeline.pipelineRef.params', ref['params']], ['spec.pipeline.params', p['params']]] as const) {
      if (list === undefined) continue;
      if (!Array.isArray(list) || list.some((x) => typeof x !== 'object' || x === null || typeof (x as { name?: unknown }).name !== 'string' || typeof (x as { value?: unknown }).value !== 'string')) {
        return `${field} must be a list of {name, value} with string values`;
      }
    }
    const t = p['timeouts'];
    if (t !== undefined) {
      const bad = checkTimeouts(t, 'spec.pipeline.timeouts');
      if (bad) return bad;
    }
    const sa = p['serviceAccountName'];
    if (sa !== undefined && (typeof sa !== 'string' || sa.length > 63 || !SA_NAME.test(sa))) return 'spec.pipeline.serviceAccountName must be a service account name';
  }
  if (params !== undefined) {
    if (typeof params !== 'object' || params === null || Array.isArray(params)) return 'spec.params must be a map of strings';
    const bad = Object.entries(params).filter(([, v]) => typeof v !== 'string').map(([k]) => k);
    if (bad.length) return `spec.params must be a map of strings; not strings: ${bad.sort().join(', ')}`;
  }
  if (timeouts !== undefined) {
    const bad = checkTimeouts(timeouts, 'spec.timeouts');
    if (bad) return bad;
  }
  if (serviceAccount !== undefined && (typeof serviceAccount !== 'string' || serviceAccount.length > 63 || !SA_NAME.test(serviceAccount))) {
    return 'spec.serviceAccount must be a service account name';
  }
  return undefined;
}

function checkTimeouts(timeouts: unknown, field: string): string | undefined {
  if (typeof timeouts !== 'object' || timeouts === null || Array.isArray(timeouts)) return `${field} must be an object`;
  for (const [k, v] of Object.entries(timeouts)) {
    if (!['pipeline', 'tasks', 'finally'].includes(k)) return `${field}.${k} is not a timeout Tekton knows (pipeline, tasks, finally)`;
    if (typeof v !== 'string' || !DURATION.test(v)) return `${field}.${k} must be a duration like 1h30m`;
  }
  return undefined;
}
