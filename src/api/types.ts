/**
 * The project's API, group appstudio.redhat.com/v1alpha1: one definition per
 * field, from which both the CRD schemas (see crd.ts, config/crd/bases) and the
 * TypeScript types are derived. One file a CRD: the InternalRequest here,
 * the InternalServicesConfig in config-types.ts, the InternalRequestApproval
 * in approval-types.ts, what they share in api-common.ts; this file exports
 * them all, so callers import the API from one place.
 */
import { schema, type FromSchema } from './schema.js';
import { API_VERSION, DNS_LABEL_PATTERN, DNS_SUBDOMAIN_PATTERN, durationField, GROUP, MAX_PARAM_VALUE_BYTES, MAX_PARAMS_BYTES, MAX_TIMEOUT, VERSION, type ObjectMeta } from './api-common.js';

export * from './api-common.js';
export * from './config-types.js';
export * from './approval-types.js';

/** metav1.Condition, as the Kubernetes API conventions define it. */
export const conditionSchema = schema({
  type: 'object',
  required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'],
  properties: {
    type: { type: 'string', maxLength: 316, pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$' },
    status: { type: 'string', enum: ['True', 'False', 'Unknown'] },
    observedGeneration: { type: 'integer', format: 'int64', minimum: 0 },
    lastTransitionTime: { type: 'string', format: 'date-time' },
    reason: { type: 'string', maxLength: 1024, minLength: 1, pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$' },
    message: { type: 'string', maxLength: 32768 },
  },
} as const);


export const timeoutsSchema = schema({
  type: 'object',
  description: "Timeouts for the PipelineRun, as Tekton defines them; 0s means no timeout (only where the internal cluster's configuration allows it). tasks + finally must not exceed pipeline.",
  'x-kubernetes-validations': [
    { rule: `!has(self.pipeline) || duration(self.pipeline) <= duration('${MAX_TIMEOUT}')`, message: `pipeline must be at most ${MAX_TIMEOUT} (one year)` },
    { rule: `!has(self.tasks) || duration(self.tasks) <= duration('${MAX_TIMEOUT}')`, message: `tasks must be at most ${MAX_TIMEOUT} (one year)` },
    { rule: `!has(self.finally) || duration(self.finally) <= duration('${MAX_TIMEOUT}')`, message: `finally must be at most ${MAX_TIMEOUT} (one year)` },
    {
      rule: "!has(self.pipeline) || duration(self.pipeline) == duration('0s') || (has(self.tasks) ? duration(self.tasks) : duration('0s')) + (has(self.finally) ? duration(self.finally) : duration('0s')) <= duration(self.pipeline)",
      message: 'tasks + finally must not be longer than pipeline (Tekton\'s rule)',
    },
  ],
  properties: {
    pipeline: durationField('Timeout of the whole PipelineRun'),
    tasks: durationField('Timeout of the tasks, not counting finally tasks'),
    finally: durationField('Timeout of the finally tasks'),
  },
} as const);

const nameValueList = (what: string, maxItems: number, maxValue: number) =>
  schema({
    type: 'array',
    description: what,
    maxItems,
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['name'],
    items: {
      type: 'object',
      required: ['name', 'value'],
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 256 },
        value: { type: 'string', maxLength: maxValue },
      },
    },
  } as const);

/** A resolver's name as Tekton's remote resolution knows them (git, bundles, http, hub, cluster, …). */
export const RESOLVER_PATTERN = '^[a-z][a-z0-9-]*$';

export const pipelineSpecSchema = schema({
  type: 'object',
  description:
    'The Pipeline to run, as release tooling sends it since 2025: a Tekton pipelineRef, either by name (a Pipeline installed in the controller\'s namespace, like spec.request) or through a remote resolver (allowed only where the InternalServicesConfig allows that source).',
  required: ['pipelineRef'],
  properties: {
    pipelineRef: {
      type: 'object',
      description: 'Exactly one of name or resolver.',
      'x-kubernetes-validations': [
        { rule: 'has(self.name) != has(self.resolver)', message: "pipelineRef needs exactly one of name (a Pipeline installed in the controller's namespace) or resolver (remote resolution, e.g. git)" },
        { rule: '!has(self.params) || has(self.resolver)', message: 'pipelineRef.params are the resolver\'s params: they need pipelineRef.resolver' },
      ],
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 253, pattern: DNS_SUBDOMAIN_PATTERN, description: "A Pipeline installed in the controller's namespace." },
        resolver: { type: 'string', minLength: 1, maxLength: 63, pattern: RESOLVER_PATTERN, description: 'The Tekton resolver to fetch the Pipeline with (git, bundles, http, hub, cluster).' },
        params: nameValueList('The resolver\'s params, e.g. url, revision and pathInRepo for git.', 32, 4096),
        ociStorage: { type: 'string', maxLength: 1024, description: 'Passed to the Pipeline as its "ociStorage" param (Trusted Artifacts storage).' },
        useEmptyDir: { type: 'boolean', description: 'The workspace is an emptyDir instead of a fresh volume claim.' },
      },
    },
    serviceAccountName: {
      type: 'string',
      maxLength: 63,
      pattern: DNS_LABEL_PATTERN,
      description: 'Same as spec.serviceAccount (give one of the two, or the same value in both).',
    },
    timeouts: timeoutsSchema,
    params: nameValueList('Params passed to the Pipeline, merged with spec.params (a name in both must have the same value).', 256, MAX_PARAM_VALUE_BYTES),
    taskRunSpecs: {
      type: 'array',
      maxItems: 64,
      description:
        'Accepted for compatibility with the production schema, but a request that sets it is Rejected: per-task service accounts, pod templates and resources are for the administrators of the internal cluster to choose, not for requesters.',
      items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
    },
  },
} as const);

export const internalRequestSpecSchema = schema({
  type: 'object',
  description: 'What the requester asks the internal cluster to run: spec.request or spec.pipeline. Immutable once created.',
  'x-kubernetes-validations': [
    { rule: 'self == oldSelf', message: 'spec is immutable; create a new InternalRequest instead' },
    {
      rule: `(has(self.params) ? self.params.map(k, size(k) + size(self.params[k])).sum() : 0) + (has(self.pipeline) && has(self.pipeline.params) ? self.pipeline.params.map(p, size(p.name) + size(p.value)).sum() : 0) <= ${MAX_PARAMS_BYTES}`,
      message: `the params (names and values, spec.params and spec.pipeline.params together) must add up to at most ${MAX_PARAMS_BYTES} bytes, so that the request can always receive its status; pass large data by reference (an image, a URL)`,
    },
    {
      rule: 'has(self.request) != has(self.pipeline)',
      message: "give exactly one of spec.request (the name of a Pipeline installed in the controller's namespace) or spec.pipeline (a pipelineRef)",
    },
  ],
  properties: {
    request: {
      type: 'string',
      minLength: 1,
      maxLength: 253,
      pattern: DNS_SUBDOMAIN_PATTERN,
      description: "Name of the Tekton Pipeline to run, looked up only in the controller's own namespace.",
    },
    pipeline: pipelineSpecSchema,
    params: {
      type: 'object',
      description: `Parameters passed to the Pipeline; each must be declared by it. At most ${MAX_PARAM_VALUE_BYTES} bytes per value and ${MAX_PARAMS_BYTES} for all params together (names and values, with spec.pipeline.params); the internal cluster may allow less.`,
      maxProperties: 256,
      additionalProperties: { type: 'string', maxLength: MAX_PARAM_VALUE_BYTES },
    },
    timeouts: timeoutsSchema,
    serviceAccount: {
      type: 'string',
      maxLength: 63,
      pattern: DNS_LABEL_PATTERN,
      description: 'Service account the PipelineRun runs as; must be allowed by the InternalServicesConfig.',
    },
  },
} as const);

const sourceFields = {
  resolver: { type: 'string', description: 'The resolver (git, bundles, cluster).' },
  source: { type: 'string', description: 'Where it came from, as the resolver reports it (e.g. git+https://…/catalog.git).' },
  path: { type: 'string', description: 'The file in the source (git: pathInRepo).' },
  revision: { type: 'string', description: 'What was asked for: for git the fully qualified ref (refs/heads/main, refs/tags/v1.2.0) or the commit; for bundles the reference.' },
  digest: { type: 'string', description: 'What it was pinned to and ran at: sha1:<commit> (git), sha256:<digest> (bundles).' },
  reachableFrom: { type: 'string', description: 'For a commit asked for by SHA: the allowed ref the controller found it reachable from, in the repository itself, before anything was resolved.' },
  signedBy: { type: 'string', description: 'Where the source rule requires signatures: the name of the key whose tekton.dev/signature over this resource the controller verified.' },
} as const;

/** The largest DSSE envelope copied into status.attestation (bytes of its JSON; base64 makes 4/3 of it). */
export const MAX_ATTESTATION_ENVELOPE_BYTES = 65536;

export const attestationSchema = schema({
  type: 'object',
  description:
    'With Tekton Chains on the internal cluster (InternalServicesConfig spec.chains): what Chains signed for the PipelineRun — the SLSA provenance of the run, an in-toto statement in a DSSE envelope — or why there is none. Written once, after the outcome (conditions[0] does not wait for it). Check it with `kubectl internalrequest verify NAME --key PUBLIC.pem` (docs/security.md).',
  required: ['state'],
  properties: {
    state: { type: 'string', enum: ['Signed', 'Unsigned', 'Failed'], description: 'Signed: the envelope (or, when too large, its digest) is here. Unsigned: Chains stored no signature in time (see message). Failed: Chains gave up signing.' },
    message: { type: 'string', maxLength: 4096, description: 'What happened and where the attestation is.' },
    digest: { type: 'string', maxLength: 80, description: 'sha256:<hex> of the signed payload: the in-toto statement, byte for byte as signed (the decoded payload of the envelope).' },
    payloadType: { type: 'string', maxLength: 256, description: 'The DSSE payload type (application/vnd.in-toto+json).' },
    predicateType: { type: 'string', maxLength: 256, description: "The statement's predicate type, e.g. https://slsa.dev/provenance/v0.2." },
    keyId: { type: 'string', maxLength: 256, description: "The signing key's id as Chains wrote it into the envelope: SHA256:<base64>, the SSH-style fingerprint of its public key." },
    location: { type: 'string', maxLength: 1024, description: 'Where Chains stored it on the internal cluster (gone with the PipelineRun, unless the configuration keeps PipelineRuns).' },
    envelope: { type: 'string', maxLength: Math.ceil(MAX_ATTESTATION_ENVELOPE_BYTES / 3) * 4, description: 'The DSSE envelope (its JSON, base64), as Chains stored it; absent when larger than 64 KiB (envelopeOmitted).' },
    envelopeBytes: { type: 'integer', minimum: 0, description: "The size of the envelope's JSON, in bytes." },
    envelopeOmitted: { type: 'boolean', description: 'The envelope was larger than 64 KiB and is not copied here; digest still names the payload.' },
  },
} as const);

export const internalRequestStatusSchema = schema({
  type: 'object',
  properties: {
    conditions: {
      type: 'array',
      description:
        'Entry 0 is always the Succeeded condition, the requester\'s contract: Unknown/Running while the request is not finished (whatever it waits for), then True/Succeeded, False/Failed or False/Rejected, never changed again. Entry 1 is the Progressing condition: True while unfinished, its reason the phase (WaitingForConfig, WaitingForWorkspace (kcp: the path of the workspace cannot be read yet), Resolving, AwaitingApproval, Queued, Following, Running) and its message the detail; False once finished, with the outcome as its reason.',
      items: conditionSchema,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
    },
    startTime: { type: 'string', format: 'date-time' },
    completionTime: { type: 'string', format: 'date-time' },
    results: {
      type: 'object',
      description: 'The Pipeline results; arrays and objects are JSON text.',
      additionalProperties: { type: 'string' },
    },
    pipelineRun: { type: 'string', description: 'namespace/name of the PipelineRun on the internal cluster.' },
    followed: {
      type: 'object',
      description: 'The earlier request with the same idempotency key and spec that this one followed instead of running again.',
      properties: { name: { type: 'string' }, uid: { type: 'string' } },
    },
    approval: {
      type: 'object',
      description: 'For a request whose rule requires approval: the decision, who made it (as the internal cluster authenticated them) and when.',
      properties: {
        result: { type: 'string', description: 'Approved, Denied or Expired.' },
        by: { type: 'string' },
        at: { type: 'string', format: 'date-time' },
        message: { type: 'string', maxLength: 4096 },
        rule: { type: 'string' },
      },
    },
    grant: {
      type: 'object',
      description:
        'Which part of the internal cluster\'s configuration let the request run, as it was when its PipelineRun was created: the rule (rules[i], with its name) or allowList, and until when, for a temporary grant (the rule\'s expires).',
      properties: {
        rule: { type: 'string', maxLength: 512 },
        expires: { type: 'string', maxLength: 128 },
      },
    },
    pipeline: {
      type: 'object',
      description:
        'What was checked and run, for requesters and auditors: where the Pipeline was resolved from and the commit or digest it was pinned to, and the same for every Task and StepAction reference that had to be checked.',
      properties: {
        ...sourceFields,
        references: {
          type: 'array',
          maxItems: 256,
          description: 'The Task and StepAction references that were checked and pinned.',
          items: { type: 'object', properties: { ref: { type: 'string', description: 'Which reference, e.g. tasks[sign].taskRef.' }, ...sourceFields } },
        },
      },
    },
    archive: {
      type: 'object',
      description:
        'Where Tekton Results keeps the run after the PipelineRun is pruned (when the internal cluster runs Tekton Results): the record of the PipelineRun and of its logs, as Results names them (parent/results/<uid>/records/<uid>).',
      properties: {
        record: { type: 'string', maxLength: 1024 },
        log: { type: 'string', maxLength: 1024 },
      },
    },
    logs: {
      type: 'object',
      description:
        'The run\'s logs, written on request only: the requester sets the annotation internal-services.dev/logs to a new value (kubectl internalrequest logs does), and the controller answers here with the logs of the live PipelineRun, or from Tekton Results once it was pruned. Bounded: the end of the logs is kept.',
      properties: {
        request: { type: 'string', maxLength: 253, description: 'The value of the annotation this answers.' },
        source: { type: 'string', description: 'PipelineRun (read from the live pods) or TektonResults (the archived copy), or None (no logs could be read; see text).' },
        at: { type: 'string', format: 'date-time' },
        truncated: { type: 'boolean', description: 'True when only the end of the logs fits.' },
        text: { type: 'string', maxLength: 65536 },
      },
    },
    attestation: attestationSchema,
    observedGeneration: { type: 'integer', format: 'int64', minimum: 0 },
  },
} as const);

export type Condition = FromSchema<typeof conditionSchema>;
export type InternalRequestSpec = FromSchema<typeof internalRequestSpecSchema>;
export type InternalRequestStatus = FromSchema<typeof internalRequestStatusSchema>;

export interface InternalRequest {
  apiVersion: typeof API_VERSION;
  kind: 'InternalRequest';
  metadata: ObjectMeta;
  spec: InternalRequestSpec;
  status?: InternalRequestStatus;
}

export const INTERNAL_REQUEST = {
  group: GROUP,
  version: VERSION,
  kind: 'InternalRequest',
  plural: 'internalrequests',
  singular: 'internalrequest',
  shortNames: ['ir'],
} as const;


/**
 * The field the controller selects unfinished requests by (a field selector
 * `status.completionTime=`: the field is absent until a request finishes):
 * its early lane (src/kube/informer-early.ts) serves those while the whole
 * history is still being listed. Requesters can use it too (kubectl get
 * --field-selector status.completionTime=).
 */
export const COMPLETION_TIME_FIELD = { jsonPath: '.status.completionTime' } as const;

/** Selects the requests not finished yet (no completionTime; see COMPLETION_TIME_FIELD). */
export const UNFINISHED_FIELD_SELECTOR = 'status.completionTime=';
