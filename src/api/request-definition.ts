/**
 * RequestDefinition (appstudio.redhat.com/v1alpha1), on the internal cluster:
 * a service's own request kind. It names the kind the requesters create on
 * the remote side (group, kind, plural), the Pipeline that serves it (one
 * installed in the controller's namespace, or a resolver reference under the
 * same source policy as any request), how the kind's spec fields map to the
 * Pipeline's params, and which Pipeline results its status shows.
 *
 * Why a resource of its own rather than a field of the InternalServicesConfig:
 * a kind belongs to the service team that offers it, not to whoever runs the
 * controller. As objects, definitions are granted per team with RBAC on the
 * internal cluster, each has a status saying whether it is served and why
 * not, and adding or removing one never touches the configuration of every
 * other service. The configuration's rules (allowList, rules, limits,
 * approvals) still apply to each kind's requests: a definition only says what
 * the request means, never who may make it.
 *
 * The remote side's CRD of a kind is generated from its definition and the
 * Pipeline's declared params (src/api/typed-kind-crd.ts, `internal-services kinds
 * render`).
 */
import { schema, type FromSchema } from './schema.js';
import { conditionSchema, DNS_LABEL_PATTERN, DNS_SUBDOMAIN_PATTERN, GROUP, pipelineSpecSchema, timeoutsSchema, VERSION, type ObjectMeta } from './types.js';

/** A Kind: CamelCase letters and digits. */
export const KIND_PATTERN = '^[A-Z][A-Za-z0-9]{0,62}$';
/** An API version a CRD may serve: v1, v1alpha1, v2beta3. */
export const API_VERSION_PATTERN = '^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$';
/** A Tekton param name. */
export const PARAM_NAME_PATTERN = '^[a-zA-Z_][a-zA-Z0-9_.-]*$';
/** A spec field of a typed kind: a JSON field name that kubectl explain and jsonPath read without quoting. */
export const FIELD_NAME_PATTERN = '^[a-zA-Z_][a-zA-Z0-9_]*$';

export const requestDefinitionSpecSchema = schema({
  type: 'object',
  required: ['group', 'kind'],
  'x-kubernetes-validations': [
    { rule: 'has(self.request) != has(self.pipelineRef)', message: "give exactly one of request (a Pipeline installed in the controller's namespace) or pipelineRef (a resolver reference)" },
    { rule: 'self.group == oldSelf.group && self.kind == oldSelf.kind', message: 'group and kind cannot change: define a new kind instead' },
  ],
  properties: {
    group: {
      type: 'string',
      maxLength: 253,
      pattern: DNS_SUBDOMAIN_PATTERN,
      description: "The kind's API group on the remote side, e.g. signing.example.com (a DNS name the service's team owns).",
      'x-kubernetes-validations': [{ rule: "self.contains('.')", message: 'an API group is a DNS name with at least one dot, e.g. signing.example.com' }],
    },
    kind: { type: 'string', pattern: KIND_PATTERN, description: 'The Kind requesters create, e.g. SigningRequest.' },
    plural: { type: 'string', maxLength: 63, pattern: DNS_LABEL_PATTERN, description: "The resource name (default: the kind in lower case, plus 's')." },
    singular: { type: 'string', maxLength: 63, pattern: DNS_LABEL_PATTERN, description: 'Its singular name (default: the kind in lower case).' },
    shortNames: { type: 'array', maxItems: 8, items: { type: 'string', maxLength: 63, pattern: DNS_LABEL_PATTERN }, description: 'Short names for kubectl.' },
    version: { type: 'string', maxLength: 20, pattern: API_VERSION_PATTERN, description: 'The API version served (default v1alpha1).' },
    request: { type: 'string', minLength: 1, maxLength: 253, pattern: DNS_SUBDOMAIN_PATTERN, description: "A Pipeline installed in the controller's namespace (like an InternalRequest's spec.request)." },
    pipelineRef: pipelineSpecSchema.properties.pipelineRef,
    serviceAccount: { type: 'string', maxLength: 63, pattern: DNS_LABEL_PATTERN, description: "The service account the PipelineRuns run as (default: the configuration's)." },
    timeouts: timeoutsSchema,
    fields: {
      type: 'array',
      maxItems: 256,
      description: "How params appear as spec fields. By default every param of the Pipeline is a field of the same name, typed from the param's type (string; array of strings; object with its properties), described by its description, and required when it has no default. An entry here renames one, narrows its values or hides it.",
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['param'],
      items: {
        type: 'object',
        required: ['param'],
        properties: {
          param: { type: 'string', maxLength: 253, pattern: PARAM_NAME_PATTERN, description: "The Pipeline's param." },
          field: { type: 'string', maxLength: 63, pattern: FIELD_NAME_PATTERN, description: 'Its name under spec (default: the param name; needed when that is not a plain identifier, e.g. has a dash).' },
          description: { type: 'string', maxLength: 4096, description: "Replaces the param's description." },
          enum: { type: 'array', maxItems: 256, items: { type: 'string', maxLength: 1024 }, description: 'The only values a string field may take.' },
          pattern: { type: 'string', maxLength: 1024, description: 'A regular expression a string field (or each item of an array) must match.' },
          maxLength: { type: 'integer', minimum: 1, maximum: 262144, description: 'The longest value of a string field (or of each item of an array).' },
          hidden: { type: 'boolean', description: 'Not a field: the param keeps its default (it must have one).' },
        },
      },
    },
    results: {
      type: 'array',
      maxItems: 256,
      items: { type: 'string', maxLength: 253, pattern: PARAM_NAME_PATTERN },
      description: "The Pipeline results shown in the requests' status.results (default: all of them).",
    },
    served: { type: 'boolean', description: "false: the kind's requests are no longer served (they are left as they are) while the definition stays. Default true." },
  },
} as const);

export const requestDefinitionStatusSchema = schema({
  type: 'object',
  properties: {
    observedGeneration: { type: 'integer', format: 'int64', minimum: 0 },
    conditions: {
      type: 'array',
      description: 'Served: True while the controller serves the kind on every remote; False with the reason (Invalid, Conflict, NotServed) and what to do.',
      items: conditionSchema,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
    },
    resource: { type: 'string', description: 'The resource served: plural.group/version.' },
  },
} as const);

export type RequestDefinitionSpec = FromSchema<typeof requestDefinitionSpecSchema>;
export type RequestDefinitionStatus = FromSchema<typeof requestDefinitionStatusSchema>;

export interface RequestDefinition {
  apiVersion: string;
  kind: 'RequestDefinition';
  metadata: ObjectMeta;
  spec: RequestDefinitionSpec;
  status?: RequestDefinitionStatus;
}

export const REQUEST_DEFINITION = {
  group: GROUP,
  version: VERSION,
  kind: 'RequestDefinition',
  plural: 'requestdefinitions',
  singular: 'requestdefinition',
  shortNames: ['reqdef'],
} as const;

/** Kinds a definition may not take in the project's own group: they are the project's. */
export const RESERVED_KINDS: readonly string[] = ['InternalRequest', 'InternalServicesConfig', 'InternalRequestApproval', 'RequestDefinition'];

/** The names a definition gives its kind, with the defaults filled in. */
export interface KindNames {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
}

export function kindNames(spec: RequestDefinitionSpec): KindNames {
  const lower = spec.kind.toLowerCase();
  return {
    group: spec.group,
    version: spec.version ?? 'v1alpha1',
    kind: spec.kind,
    plural: spec.plural ?? `${lower}s`,
    singular: spec.singular ?? lower,
    shortNames: [...(spec.shortNames ?? [])],
  };
}
