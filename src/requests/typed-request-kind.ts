/**
 * A service's own request kind, made from its RequestDefinition: a
 * RequestKind (request-kind.ts) whose objects read as an InternalRequest of
 * the definition's Pipeline, each spec field the param it maps to. Nothing
 * else of the request path knows that the kind is typed: admission, pinning,
 * idempotency, capacity and the status contract are InternalRequest's.
 *
 * The apiserver checks a typed request against the kind's generated CRD
 * (types, required fields, enums, patterns) before the controller sees it.
 * The controller checks again what it relies on, the JSON type of each value,
 * because objects stored under an older CRD reach it too; a Pipeline whose
 * params no longer match is found later, as for any request, by the params
 * check against the pinned Pipeline.
 */
import type { InternalRequest, InternalRequestStatus } from '../api/types.js';
import { kindNames, type RequestDefinition, type RequestDefinitionSpec } from '../api/request-definition.js';
import type { KubeObject } from '../kube/client.js';
import type { RequestKind } from './request-kind.js';

/**
 * Where toRequest leaves what it found wrong with a typed spec, for
 * checkShape: a key no CRD lets through (structural schemas prune unknown
 * fields, and `$` starts no field name of either kind).
 */
const SHAPE_PROBLEM = '$shapeProblem';

export interface TypedRequestKind extends RequestKind {
  /** The definition it was made from (name and generation: a changed definition is a new kind object). */
  readonly definition: { name: string; generation: number };
}

/** The RequestKind of a definition (checked beforehand with definitionProblems). */
export function typedRequestKind(def: RequestDefinition): TypedRequestKind {
  const spec: RequestDefinitionSpec = def.spec;
  const n = kindNames(spec);
  // field -> param, for the fields that are renamed; a field of no entry is its param.
  const paramOf = new Map<string, string>();
  const hidden = new Set<string>();
  for (const f of spec.fields ?? []) {
    if (f.hidden) hidden.add(f.field ?? f.param);
    else if (f.field && f.field !== f.param) paramOf.set(f.field, f.param);
  }
  const results = spec.results ? new Set(spec.results) : undefined;
  const apiVersion = `${n.group}/${n.version}`;
  const base: Pick<InternalRequest['spec'], 'request' | 'pipeline' | 'serviceAccount' | 'timeouts'> = {
    ...(spec.request !== undefined ? { request: spec.request } : {}),
    ...(spec.pipelineRef !== undefined ? { pipeline: { pipelineRef: structuredClone(spec.pipelineRef) } } : {}),
    ...(spec.serviceAccount !== undefined ? { serviceAccount: spec.serviceAccount } : {}),
    ...(spec.timeouts !== undefined ? { timeouts: { ...spec.timeouts } } : {}),
  };

  return {
    kind: n.kind,
    resource: { group: n.group, version: n.version, plural: n.plural },
    builtIn: false,
    definition: { name: def.metadata.name ?? '', generation: def.metadata.generation ?? 0 },

    toRequest(obj: KubeObject): InternalRequest {
      const o = obj as unknown as { metadata: InternalRequest['metadata']; spec?: unknown; status?: InternalRequestStatus };
      const params: Record<string, string> = {};
      const bad: string[] = [];
      const s = o.spec;
      if (typeof s === 'object' && s !== null && !Array.isArray(s)) {
        for (const [field, v] of Object.entries(s as Record<string, unknown>)) {
          if (hidden.has(field)) {
            bad.push(`spec.${field} is not a field of ${n.kind}`);
            continue;
          }
          const param = paramOf.get(field) ?? field;
          if (typeof v === 'string') params[param] = v;
          else if (Array.isArray(v) && v.every((x) => typeof x === 'string')) params[param] = JSON.stringify(v);
          else if (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string')) params[param] = JSON.stringify(v);
          else bad.push(`spec.${field} must be a string, a list of strings or an object of strings`);
        }
      } else if (s !== undefined) bad.push('spec must be an object');
      const reqSpec = { ...structuredClone(base), params } as InternalRequest['spec'] & { [SHAPE_PROBLEM]?: string };
      if (bad.length) reqSpec[SHAPE_PROBLEM] = bad.sort().join('; ');
      return {
        apiVersion: 'appstudio.redhat.com/v1alpha1',
        kind: 'InternalRequest',
        metadata: o.metadata,
        spec: reqSpec,
        ...(o.status ? { status: o.status } : {}),
      };
    },

    checkShape(req: InternalRequest): string | undefined {
      const problem = (req.spec as { [SHAPE_PROBLEM]?: string } | undefined)?.[SHAPE_PROBLEM];
      return problem ? `${problem} (kubectl explain ${n.plural}.spec lists the fields)` : undefined;
    },

    statusBody(req: InternalRequest, status: InternalRequestStatus): KubeObject {
      const shown: InternalRequestStatus = { ...status };
      if (results && status.results) {
        const kept = Object.fromEntries(Object.entries(status.results).filter(([k]) => results.has(k)));
        if (Object.keys(kept).length) shown.results = kept;
        else delete shown.results;
      }
      return { apiVersion, kind: n.kind, metadata: req.metadata, status: shown } as unknown as KubeObject;
    },
  };
}
