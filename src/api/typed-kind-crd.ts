/**
 * A typed request kind, rendered: from a RequestDefinition and the params its
 * Pipeline declares, the remote side's CRD (one field per param, typed and
 * described from the param, required when it has no default; the status
 * subresource with InternalRequest's status schema, so the requester's
 * contract is the same), and the ClusterRoles that grant the kind alone.
 *
 * Pure: the caller brings the Pipeline (read from a file, the cluster, or a
 * resolver). The same functions make the sample under config/samples/kinds,
 * which a drift test keeps equal to what they render.
 */
import { COMPLETION_TIME_FIELD, internalRequestStatusSchema, MAX_PARAM_VALUE_BYTES } from './types.js';
import { FIELD_NAME_PATTERN, kindNames, RESERVED_KINDS, type KindNames, type RequestDefinitionSpec } from './request-definition.js';
import { GROUP } from './types.js';

/** A param as a Pipeline declares it (tekton.dev/v1 ParamSpec). */
export interface DeclaredParam {
  name: string;
  type?: 'string' | 'array' | 'object' | undefined;
  description?: string | undefined;
  default?: unknown;
  properties?: Record<string, { type?: string }> | undefined;
}

/** One spec field of a typed kind. */
export interface TypedField {
  field: string;
  param: string;
  type: 'string' | 'array' | 'object';
  required: boolean;
  description: string;
  enum?: string[];
  pattern?: string;
  maxLength?: number;
  /** An object param's keys (its declared properties). */
  properties?: string[];
}

export type Typing = { ok: true; fields: TypedField[]; results: string[] | undefined } | { ok: false; problems: string[] };

const FIELD = new RegExp(FIELD_NAME_PATTERN);

/** Problems of a definition that need no Pipeline to see. */
export function definitionProblems(spec: RequestDefinitionSpec): string[] {
  const problems: string[] = [];
  if (spec.group === GROUP && RESERVED_KINDS.includes(spec.kind)) problems.push(`kind ${spec.kind} of group ${GROUP} is the project's own; choose another group or kind`);
  if ((spec.request === undefined) === (spec.pipelineRef === undefined)) problems.push("give exactly one of request (a Pipeline installed in the controller's namespace) or pipelineRef (a resolver reference)");
  const fields = new Map<string, string>();
  for (const f of spec.fields ?? []) {
    if (f.hidden) continue;
    const name = f.field ?? f.param;
    const other = fields.get(name);
    if (other !== undefined) problems.push(`params ${JSON.stringify(other)} and ${JSON.stringify(f.param)} would both be spec.${name}`);
    fields.set(name, f.param);
  }
  return problems;
}

/**
 * The fields of a kind: every param of the Pipeline, renamed, narrowed or
 * hidden as the definition says. Problems: a definition entry for a param the
 * Pipeline does not declare, a param whose name is not a field name and has
 * no `field`, two params on one field, a hidden param without a default, a
 * result that is not declared.
 */
export function typeKind(spec: RequestDefinitionSpec, params: readonly DeclaredParam[], declaredResults?: readonly string[]): Typing {
  const problems = definitionProblems(spec);
  const declared = new Map(params.map((p) => [p.name, p]));
  const entries = new Map((spec.fields ?? []).map((f) => [f.param, f]));
  for (const f of entries.keys()) if (!declared.has(f)) problems.push(`fields names param ${JSON.stringify(f)}, which the Pipeline does not declare (it declares: ${[...declared.keys()].sort().join(', ') || 'none'})`);
  const fields: TypedField[] = [];
  const byField = new Map<string, string>();
  for (const p of params) {
    const e = entries.get(p.name);
    const hasDefault = p.default !== undefined;
    if (e?.hidden) {
      if (!hasDefault) problems.push(`param ${JSON.stringify(p.name)} is hidden but has no default: requests could never give it`);
      continue;
    }
    const field = e?.field ?? p.name;
    if (!FIELD.test(field)) {
      problems.push(`param ${JSON.stringify(p.name)} is not a plain field name: give it one in fields[] (field: …)`);
      continue;
    }
    const other = byField.get(field);
    if (other !== undefined && other !== p.name) problems.push(`params ${JSON.stringify(other)} and ${JSON.stringify(p.name)} would both be spec.${field}`);
    byField.set(field, p.name);
    const type = p.type ?? 'string';
    if (type === 'object' && (e?.enum || e?.pattern || e?.maxLength)) problems.push(`param ${JSON.stringify(p.name)} is an object: enum, pattern and maxLength apply to strings and arrays only`);
    if (type === 'array' && e?.enum) problems.push(`param ${JSON.stringify(p.name)} is an array: enum applies to strings only`);
    if (e?.pattern !== undefined) {
      try {
        new RegExp(e.pattern);
      } catch {
        problems.push(`fields[${JSON.stringify(p.name)}].pattern is not a regular expression`);
      }
    }
    fields.push({
      field,
      param: p.name,
      type,
      required: !hasDefault,
      description: e?.description ?? p.description ?? `The ${JSON.stringify(p.name)} param of the Pipeline.`,
      ...(e?.enum ? { enum: [...e.enum] } : {}),
      ...(e?.pattern !== undefined ? { pattern: e.pattern } : {}),
      ...(e?.maxLength !== undefined ? { maxLength: e.maxLength } : {}),
      ...(type === 'object' ? { properties: Object.keys(p.properties ?? {}).sort() } : {}),
    });
  }
  if (spec.results && declaredResults) {
    for (const r of spec.results) if (!declaredResults.includes(r)) problems.push(`results names ${JSON.stringify(r)}, which the Pipeline does not declare (it declares: ${[...declaredResults].sort().join(', ') || 'none'})`);
  }
  if (problems.length) return { ok: false, problems };
  return { ok: true, fields, results: spec.results ? [...spec.results] : undefined };
}

/** The OpenAPI schema of one field. */
export function fieldSchema(f: TypedField): Record<string, unknown> {
  const str = (): Record<string, unknown> => ({
    type: 'string',
    maxLength: f.maxLength ?? MAX_PARAM_VALUE_BYTES,
    ...(f.enum ? { enum: f.enum } : {}),
    ...(f.pattern !== undefined ? { pattern: f.pattern } : {}),
  });
  if (f.type === 'string') return { description: f.description, ...str() };
  if (f.type === 'array') return { type: 'array', description: f.description, maxItems: 1024, items: str() };
  const props = f.properties ?? [];
  // An object param's keys are its declared properties, every one of them
  // required unless the param has a default (Tekton's rule); no other key.
  return {
    type: 'object',
    description: f.description,
    ...(props.length
      ? { properties: Object.fromEntries(props.map((k) => [k, { type: 'string', maxLength: MAX_PARAM_VALUE_BYTES }])), ...(f.required ? { required: props } : {}) }
      : { additionalProperties: { type: 'string', maxLength: MAX_PARAM_VALUE_BYTES }, maxProperties: 256 }),
  };
}

/** The remote side's CRD of a typed kind. */
export function renderKindCrd(spec: RequestDefinitionSpec, fields: readonly TypedField[], definitionName?: string, pipelineDescription?: string): object {
  const n = kindNames(spec);
  const required = fields.filter((f) => f.required).map((f) => f.field);
  const specSchema: Record<string, unknown> = {
    type: 'object',
    description: `What the requester asks for: each field is a param of the Pipeline that serves ${n.kind}. Immutable once created.`,
    'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: `spec is immutable; create a new ${n.kind} instead` }],
    properties: Object.fromEntries(fields.map((f) => [f.field, fieldSchema(f)])),
    ...(required.length ? { required } : {}),
  };
  // A few string fields as columns (priority 1: kubectl get -o wide), then the same status columns as InternalRequest.
  const shown = fields.filter((f) => f.type === 'string').slice(0, 3);
  const succeeded = (x: string) => `.status.conditions[?(@.type=="Succeeded")].${x}`;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${n.plural}.${n.group}`,
      labels: { 'app.kubernetes.io/part-of': 'internal-services' },
      annotations: { 'internal-services.appstudio.redhat.com/request-definition': definitionName ?? n.plural },
    },
    spec: {
      group: n.group,
      names: { kind: n.kind, listKind: `${n.kind}List`, plural: n.plural, singular: n.singular, ...(n.shortNames.length ? { shortNames: n.shortNames } : {}) },
      scope: 'Namespaced',
      versions: [
        {
          name: n.version,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            ...shown.map((f) => ({ name: columnName(f.field), type: 'string', jsonPath: `.spec.${f.field}`, priority: 1 })),
            { name: 'Succeeded', type: 'string', jsonPath: succeeded('status') },
            { name: 'Reason', type: 'string', jsonPath: succeeded('reason') },
            { name: 'Phase', type: 'string', jsonPath: '.status.conditions[?(@.type=="Progressing")].reason' },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          selectableFields: [COMPLETION_TIME_FIELD],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: `${pipelineDescription ? `${pipelineDescription.trim().replace(/\.?$/, '.')} ` : ''}Each ${n.kind} is run once, on the internal cluster, by Internal Services. status.conditions[0] is the requester's contract: its reason is empty or Running while the request waits or runs, Succeeded once it succeeded, anything else once it failed.`,
              required: ['spec'],
              properties: { apiVersion: { type: 'string' }, kind: { type: 'string' }, metadata: { type: 'object' }, spec: specSchema, status: internalRequestStatusSchema },
            },
          },
        },
      ],
    },
  };
}

function columnName(field: string): string {
  return field.charAt(0).toUpperCase() + field.slice(1);
}

/**
 * The remote side's RBAC of one kind: a requester ClusterRole (create, read,
 * delete; never status), to bind per namespace to the teams that may use
 * this service and no other, and the controller's ClusterRole (read, write
 * status), bound to the controller's identity.
 */
export function renderKindRbac(spec: RequestDefinitionSpec, controller: { kind: 'ServiceAccount' | 'User'; name: string; namespace?: string } = { kind: 'ServiceAccount', name: 'internal-services-controller', namespace: 'internal-services' }): object[] {
  const n: KindNames = kindNames(spec);
  const base = `internal-services-${n.plural}.${n.group}`;
  const labels = { 'app.kubernetes.io/part-of': 'internal-services' };
  const subject = controller.kind === 'ServiceAccount' ? { kind: 'ServiceAccount', name: controller.name, namespace: controller.namespace ?? 'internal-services' } : { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: controller.name };
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: `${base}-requester`, labels },
      rules: [{ apiGroups: [n.group], resources: [n.plural], verbs: ['create', 'get', 'list', 'watch', 'delete', 'patch'] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: `${base}-controller`, labels },
      rules: [
        { apiGroups: [n.group], resources: [n.plural], verbs: ['get', 'list', 'watch'] },
        { apiGroups: [n.group], resources: [`${n.plural}/status`], verbs: ['get', 'update', 'patch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `${base}-controller`, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${base}-controller` },
      subjects: [subject],
    },
  ];
}

/** What `kinds render` prints: the CRD (or, for kcp, its APIResourceSchema), and the RBAC when asked. */
export interface RenderOptions {
  rbac?: boolean;
  /** An APIResourceSchema for a kcp APIExport instead of the CRD. */
  kcp?: boolean;
  controller?: { kind: 'ServiceAccount' | 'User'; name: string; namespace?: string };
}

/** A definition and its Pipeline, rendered; throws with every problem named when the two do not fit. */
export function renderKind(definition: { metadata?: { name?: string }; spec: RequestDefinitionSpec }, pipeline: { metadata?: { name?: string }; spec?: { description?: string; params?: DeclaredParam[]; results?: Array<{ name: string }> } }, opts: RenderOptions = {}, toSchema?: (crd: object) => object): object[] {
  const typing = typeKind(definition.spec, pipeline.spec?.params ?? [], (pipeline.spec?.results ?? []).map((r) => r.name));
  if (!typing.ok) throw new Error(`RequestDefinition ${definition.metadata?.name ?? ''} does not fit Pipeline ${pipeline.metadata?.name ?? ''}: ${typing.problems.join('; ')}`);
  const crd = renderKindCrd(definition.spec, typing.fields, definition.metadata?.name, pipeline.spec?.description);
  const first = opts.kcp && toSchema ? toSchema(crd) : crd;
  return [first, ...(opts.rbac ? renderKindRbac(definition.spec, opts.controller) : [])];
}
