/**
 * The project's API, group appstudio.redhat.com/v1alpha1: one definition per
 * field, from which both the CRD schemas (see crd.ts, config/crd/bases) and the
 * TypeScript types below are derived.
 *
 * Longer than 400 lines on purpose: it is the API's single definition (the
 * three CRDs' schemas, field by field, with their descriptions and CEL rules).
 * Splitting it would spread one definition over several files.
 */
import { schema, type FromSchema } from './schema.js';

export const GROUP = 'appstudio.redhat.com';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

/** Go-style duration as Tekton accepts it: "1h", "30m", "1h30m", "90s", "1.5h". */
export const DURATION_PATTERN = '^([0-9]{1,9}(\\.[0-9]{1,9})?(ns|us|µs|ms|s|m|h))+$';
/** RFC 1123 label: namespaces, service accounts. */
export const DNS_LABEL_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
/** An allowList entry: a namespace, optionally after "remote/", "*\/" (every remote) or a kcp workspace path and "/" ("root:org:team/"). */
export const TENANT_PATTERN = '^((\\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?(:[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)/)?[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
/** RFC 1123 subdomain: object names such as a Pipeline's. */
export const DNS_SUBDOMAIN_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
/** Kubernetes resource quantity of storage, e.g. 1Gi, 500Mi, 10G. */
export const QUANTITY_PATTERN = '^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$';

const durationField = (what: string) =>
  schema({ type: 'string', pattern: DURATION_PATTERN, maxLength: 64, description: `${what} (Go duration, e.g. 1h30m).` });

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

/** The longest timeout a request may give at all (administrators set lower maximums in the InternalServicesConfig). */
export const MAX_TIMEOUT = '8760h';
/** What all of a request's params (names and values) may add up to: far below the object size limits, so a request can always receive its final status. */
export const MAX_PARAMS_BYTES = 1048576;
/** The longest single param value. */
export const MAX_PARAM_VALUE_BYTES = 262144;

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
        'Entry 0 is always the Succeeded condition, the requester\'s contract: Unknown/Running while the request is not finished (whatever it waits for), then True/Succeeded, False/Failed or False/Rejected, never changed again. Entry 1 is the Progressing condition: True while unfinished, its reason the phase (WaitingForConfig, Resolving, AwaitingApproval, Queued, Following, Running) and its message the detail; False once finished, with the outcome as its reason.',
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

/** Tekton Trusted Resources keys a source rule requires signatures by (the shape of a VerificationPolicy's authorities). */
const signaturesSchema = schema({
  type: 'object',
  description:
    'Every Pipeline, Task and StepAction resolved under this rule must carry a tekton.dev/signature (Tekton Trusted Resources, as `tkn task sign` writes it) by one of these keys, verified over exactly the content that is pinned and run, before any PipelineRun exists. Unsigned, wrongly signed or tampered content is Rejected, naming the resource. See docs/trusted-resources.md.',
  required: ['authorities'],
  properties: {
    authorities: {
      type: 'array',
      minItems: 1,
      maxItems: 32,
      items: {
        type: 'object',
        required: ['name', 'key'],
        properties: {
          name: { type: 'string', minLength: 1, maxLength: 253, description: 'How status.pipeline.signedBy and messages name the key.' },
          key: {
            type: 'object',
            required: ['data'],
            properties: {
              data: { type: 'string', minLength: 1, maxLength: 16384, description: 'The public key, PEM (PUBLIC KEY or RSA PUBLIC KEY): ECDSA P-256/P-384/P-521, RSA (2048 bits or more advised) or ed25519.' },
              hashAlgorithm: { type: 'string', enum: ['sha224', 'sha256', 'sha384', 'sha512'], description: 'As a VerificationPolicy: the hash ECDSA and RSA signatures are made with; default sha256.' },
            },
          },
        },
      },
    },
  },
} as const);

const sourcesSchema = schema({
  type: 'object',
  description:
    "Which remote sources a request may make Tekton resolve from (its pipelineRef, and every taskRef and step ref of that Pipeline after the request's params are substituted). Default deny: without a rule, only Pipelines installed in the controller's namespace run. See docs/security.md.",
  properties: {
    git: {
      type: 'array',
      maxItems: 256,
      description: 'Rules for the git resolver; a reference is allowed when one rule allows its url, revision and path.',
      items: {
        type: 'object',
        required: ['urls'],
        properties: {
          urls: { type: 'array', minItems: 1, maxItems: 256, description: 'Repository URLs (globs: * within a path segment, ** any number of whole segments; never a "." or ".." segment). Matched against the canonical URL (lower-case scheme and host, no default port, no trailing / or .git): see docs/security.md.', items: { type: 'string', minLength: 1, maxLength: 2048 } },
          revisions: {
            type: 'array',
            maxItems: 256,
            description:
              'Branches (globs) a revision may name: "main", "release-*", or the same written "refs/heads/main". Tags only where written in full: "refs/tags/v*". A bare revision in a request is always a branch (a tag named like a branch changes nothing); the controller passes the fully qualified ref to the resolver. Empty: none by name.',
            items: { type: 'string', minLength: 1, maxLength: 255 },
          },
          commits: {
            'x-kubernetes-preserve-unknown-fields': true,
            description:
              'Which full commit SHAs a revision may be: {reachable: true} allows a commit reachable from a branch or tag of revisions, checked against the repository itself before anything is resolved; {shas: [...]} lists reviewed commits. Absent: none. The old "true" (any commit the server hands out) makes the rule unusable, with a message saying what to write.',
          },
          paths: { type: 'array', maxItems: 256, description: 'pathInRepo globs (* within a segment, ** any number of whole segments; a path with "." or ".." segments is refused before any rule is matched). Absent: any path inside the repository.', items: { type: 'string', minLength: 1, maxLength: 4096 } },
          namespaces: { type: 'array', maxItems: 256, description: 'Remote namespaces (globs; "remote/namespace", or bare: see defaultRemote) the rule is for. Absent: every namespace on the allowList.', items: { type: 'string', minLength: 1, maxLength: 127 } },
          signatures: signaturesSchema,
        },
      },
    },
    bundles: {
      type: 'array',
      maxItems: 256,
      description: 'Rules for the bundles resolver (Tekton bundles in an OCI registry).',
      items: {
        type: 'object',
        required: ['repositories'],
        properties: {
          repositories: { type: 'array', minItems: 1, maxItems: 256, description: 'Repositories without tag or digest (globs), e.g. quay.io/org/catalog/*, matched against the canonical reference (docker.io for Docker Hub, library/ for official images).', items: { type: 'string', minLength: 1, maxLength: 1024 } },
          digestOnly: { type: 'boolean', description: 'Only references by digest (@sha256:…), never by tag.' },
          namespaces: { type: 'array', maxItems: 256, description: 'Remote namespaces (globs; "remote/namespace", or bare: see defaultRemote) the rule is for. Absent: all.', items: { type: 'string', minLength: 1, maxLength: 127 } },
          signatures: signaturesSchema,
        },
      },
    },
    cluster: { type: 'boolean', description: "The cluster resolver, for objects of the controller's own namespace only." },
    resolutionTimeout: durationField('How long one resolution may take before the request is Rejected; default 2m'),
  },
} as const);

const timeoutPolicySchema = schema({
  type: 'object',
  default: {},
  description: "Timeouts of the PipelineRuns: what a request gets when it gives none, the longest it may ask for, and whether it may ask for none (0s).",
  properties: {
    defaults: {
      type: 'object',
      description: "Applied to each timeout a request does not give (absent: Tekton's own default applies).",
      properties: { pipeline: durationField('Default pipeline timeout'), tasks: durationField('Default tasks timeout'), finally: durationField('Default finally timeout') },
    },
    maximum: { ...durationField('The longest pipeline, tasks or finally timeout a request may ask for; default 24h'), default: '24h' },
    allowNoTimeout: { type: 'boolean', default: false, description: 'A request may ask for 0s (no timeout). Default: refused.' },
  },
} as const);

export const internalServicesConfigSpecSchema = schema({
  type: 'object',
  properties: {
    allowList: {
      type: 'array',
      description:
        'Remote namespaces whose requests are served: "remote/namespace" ("*/namespace": on every remote; on kcp the remote is a workspace path, "root:org:team/namespace"), or a bare namespace, which names it on the remote that defaultRemote designates. Empty: none.',
      items: { type: 'string', maxLength: 127, pattern: TENANT_PATTERN },
      'x-kubernetes-list-type': 'set',
    },
    defaultRemote: {
      type: 'string',
      maxLength: 63,
      pattern: '^(\\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$',
      description:
        'The remote cluster whose namespaces the bare entries (a namespace without "remote/") of allowList, rules[].namespaces and the sources rules name; "*": the namespace on every remote. Default: the remote of --remote-kubeconfig (named by --remote-name, "default"); without one, bare entries name nothing. Namespaces of the same name on two public clusters usually belong to different people, so "*" is a choice to make on purpose.',
    },
    debug: { type: 'boolean', default: false, description: 'Keep PipelineRuns after they finish.' },
    chains: {
      type: 'object',
      description:
        'Tekton Chains signs the PipelineRuns on the internal cluster (storage "tekton": the signature is an annotation on the run). With enabled, a finished PipelineRun is deleted only once Chains has signed it, or after signedTimeout (then it is deleted unsigned, and the request says so), and what Chains signed is relayed into the request\'s status.attestation. See docs/deploying.md.',
      properties: {
        enabled: { type: 'boolean', default: false, description: 'Chains runs next to the controller and signs its PipelineRuns.' },
        signedTimeout: { ...durationField('How long after its completion a PipelineRun waits for Chains\' signature; default 5m'), default: '5m' },
      },
    },
    ttlSecondsAfterFinished: {
      type: 'integer',
      minimum: 1,
      maximum: 31536000,
      description:
        'Opt-in: finished InternalRequests are deleted from the remote cluster this many seconds after they finished (their PipelineRun gone first). Needs the delete right of config/rbac/remote-ttl on the remote cluster. Absent: requests are never deleted by the controller.',
    },
    resultsStoreTimeout: {
      ...durationField('When Tekton Results follows a finished PipelineRun (its results.tekton.dev/record annotation), the PipelineRun is deleted only once Results has stored it (results.tekton.dev/stored: "true"), or after this long; default 5m'),
    },
    volumeClaim: {
      type: 'object',
      default: {},
      description: 'Workspace bound to a fresh volume for each PipelineRun whose Pipeline declares it.',
      properties: {
        name: { type: 'string', default: 'workspace', maxLength: 63, pattern: DNS_LABEL_PATTERN },
        size: { type: 'string', default: '1Gi', maxLength: 32, pattern: QUANTITY_PATTERN },
      },
    },
    allowedServiceAccounts: {
      type: 'array',
      description: 'Service accounts a request may name. Empty: a request naming one is rejected.',
      items: { type: 'string', maxLength: 63, pattern: DNS_LABEL_PATTERN },
      'x-kubernetes-list-type': 'set',
    },
    allowedGitResolverURLs: {
      type: 'array',
      maxItems: 256,
      description:
        'Git repositories (exact URLs) that Pipelines, Tasks and StepActions may be resolved from with the git resolver, at any revision and path; the same field as the production controller\'s. Empty or absent: no git resolution. For patterns, revisions, paths and per-namespace rules, use sources.git.',
      items: { type: 'string', minLength: 1, maxLength: 2048 },
      'x-kubernetes-list-type': 'set',
    },
    limits: {
      type: 'object',
      default: {},
      description: 'Bounds on what a request may carry, checked before anything runs (the CRD already caps them at what always fits on the objects).',
      properties: {
        maxParamValueBytes: { type: 'integer', minimum: 0, maximum: MAX_PARAM_VALUE_BYTES, default: MAX_PARAM_VALUE_BYTES, description: `Longest single param value, in bytes (at most ${MAX_PARAM_VALUE_BYTES}).` },
        maxParamsBytes: { type: 'integer', minimum: 0, maximum: MAX_PARAMS_BYTES, default: 524288, description: `All params together (names and values), in bytes (at most ${MAX_PARAMS_BYTES}).` },
      },
    },
    timeouts: timeoutPolicySchema,
    capacity: {
      type: 'object',
      description:
        'How much may run at once on the internal cluster. Requests beyond it wait (phase Queued, with their position) and start in fair order: namespaces take turns, those with fewer runs first, each namespace oldest first. Absent: no limit.',
      properties: {
        maxRunning: { type: 'integer', minimum: 1, maximum: 100000, description: 'PipelineRuns of this controller running at once, in all.' },
        maxRunningPerNamespace: { type: 'integer', minimum: 1, maximum: 100000, description: 'PipelineRuns running at once for one remote namespace.' },
      },
    },
    rules: {
      type: 'array',
      maxItems: 64,
      description:
        'Per-namespace grants. A remote namespace that some rule names is governed by the rules alone (the allowList and the global limits, timeouts and sources do not apply to it): the first rule, in order, that grants the requested Pipeline decides. Default deny. See docs/security.md.',
      items: {
        type: 'object',
        required: ['namespaces'],
        'x-kubernetes-validations': [{ rule: '!has(self.requireApproval) || !self.requireApproval || has(self.name)', message: 'a rule that requires approval needs a name: approvers are authorized by it' }],
        properties: {
          name: { type: 'string', maxLength: 63, pattern: DNS_SUBDOMAIN_PATTERN, description: 'A name for messages, logs, and (with requireApproval) the resource name approvers are authorized for.' },
          namespaces: { type: 'array', minItems: 1, maxItems: 256, description: 'Remote namespaces (globs: * matches within a name). "remote/namespace" names a namespace on one remote ("*/team-*": on every remote); a bare namespace means the one on the remote that defaultRemote designates.', items: { type: 'string', minLength: 1, maxLength: 127 } },
          pipelines: { type: 'array', maxItems: 256, description: 'Installed Pipelines (names or globs) the rule grants. Absent: none.', items: { type: 'string', minLength: 1, maxLength: 253 } },
          sources: sourcesSchema,
          serviceAccounts: { type: 'array', maxItems: 256, description: 'Service accounts a request under this rule may name. Absent: none.', items: { type: 'string', maxLength: 63, pattern: DNS_LABEL_PATTERN } },
          params: {
            type: 'object',
            description: 'Constraints on the params of a request under this rule.',
            properties: {
              allowed: { type: 'array', maxItems: 256, description: 'Param names (globs) a request may give. Absent: any the Pipeline declares.', items: { type: 'string', maxLength: 256 } },
              patterns: {
                type: 'array',
                maxItems: 32,
                description: 'A regular expression (RE2 syntax, whole value) per param.',
                items: {
                  type: 'object',
                  required: ['name', 'pattern'],
                  'x-kubernetes-validations': [{ rule: "size(''.matches(self.pattern) ? 'a' : 'b') > 0", message: 'pattern must be a valid regular expression' }],
                  properties: { name: { type: 'string', minLength: 1, maxLength: 256 }, pattern: { type: 'string', minLength: 1, maxLength: 512 } },
                },
              },
              maxValueBytes: { type: 'integer', minimum: 0, maximum: MAX_PARAM_VALUE_BYTES, description: 'Longest param value under this rule (default: limits.maxParamValueBytes).' },
            },
          },
          timeouts: timeoutPolicySchema,
          requireApproval: {
            type: 'boolean',
            description: 'Requests under this rule run only once approved on the internal cluster (kubectl internalrequest approve) by a user with verb "approve" on rules.appstudio.redhat.com named after the rule (docs/security.md).',
          },
          approvalTimeout: { ...durationField('Without a decision within this time, the request is Rejected; default 24h'), default: '24h' },
          onRevoke: {
            type: 'string',
            enum: ['finish', 'cancel'],
            default: 'finish',
            description: 'When a later change of the configuration no longer grants a running request: finish (default) lets it run to the end; cancel stops its PipelineRun and ends it Failed, saying why.',
          },
        },
      },
    },
    sources: sourcesSchema,
  },
} as const);

/**
 * InternalRequestApproval, on the internal cluster (the trusted side): made
 * by the controller for a request whose rule requires approval, with what
 * exactly would run; decided by an approver through its status, which a
 * ValidatingAdmissionPolicy lets only users with the "approve" verb write,
 * under their own name (config/rbac/internal/approval_policy.yaml).
 */
export const approvalSpecSchema = schema({
  type: 'object',
  description: 'The request waiting for approval and what would run for it. Written by the controller only.',
  required: ['request', 'rule'],
  'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'spec is immutable' }],
  properties: {
    request: {
      type: 'object',
      required: ['namespace', 'name', 'uid'],
      properties: {
        remote: { type: 'string', maxLength: 63, description: 'The remote cluster the request is on; absent: the default remote.' },
        namespace: { type: 'string', maxLength: 63 },
        name: { type: 'string', maxLength: 253 },
        uid: { type: 'string', maxLength: 64 },
        kind: { type: 'string', maxLength: 63, description: "The request's Kind when it is not InternalRequest" },
      },
    },
    rule: { type: 'string', maxLength: 128, description: 'The rule that requires approval (its name, or rules[i]); approvers are authorized per rule: verb "approve" on rules.appstudio.redhat.com with this resource name.' },
    pipeline: { type: 'string', maxLength: 4096, description: 'What would run: the Pipeline, or its source and pinned commit.' },
    serviceAccount: { type: 'string', maxLength: 63 },
    params: { type: 'object', maxProperties: 256, additionalProperties: { type: 'string', maxLength: 1024 }, description: 'The params (values over 1 KiB shortened).' },
    timeouts: { type: 'object', properties: { pipeline: { type: 'string', maxLength: 64 }, tasks: { type: 'string', maxLength: 64 }, finally: { type: 'string', maxLength: 64 } } },
    expiresAt: { type: 'string', format: 'date-time', description: 'Without a decision by then, the request is Rejected.' },
  },
} as const);

export const approvalStatusSchema = schema({
  type: 'object',
  description: 'The decision, written once by an approver (kubectl internalrequest approve/deny).',
  'x-kubernetes-validations': [{ rule: '!has(oldSelf.decision) || self == oldSelf', message: 'a decision cannot be changed once made' }],
  properties: {
    decision: {
      type: 'object',
      required: ['result', 'by'],
      properties: {
        result: { type: 'string', enum: ['Approved', 'Denied'] },
        by: { type: 'string', maxLength: 512, description: 'Who decided: must be the authenticated user who writes the decision (checked by the API server).' },
        groups: { type: 'array', maxItems: 256, items: { type: 'string', maxLength: 512 }, description: "The decider's groups, as the API server knows them (checked by it)." },
        message: { type: 'string', maxLength: 4096 },
        at: { type: 'string', format: 'date-time' },
      },
    },
  },
} as const);

export type ApprovalSpec = FromSchema<typeof approvalSpecSchema>;
export type ApprovalStatus = FromSchema<typeof approvalStatusSchema>;

export interface InternalRequestApproval {
  apiVersion: typeof API_VERSION;
  kind: 'InternalRequestApproval';
  metadata: ObjectMeta;
  spec: ApprovalSpec;
  status?: ApprovalStatus;
}

export const INTERNAL_REQUEST_APPROVAL = {
  group: GROUP,
  version: VERSION,
  kind: 'InternalRequestApproval',
  plural: 'internalrequestapprovals',
  singular: 'internalrequestapproval',
  shortNames: ['ira'],
} as const;

export type Condition = FromSchema<typeof conditionSchema>;
export type InternalRequestSpec = FromSchema<typeof internalRequestSpecSchema>;
export type InternalRequestStatus = FromSchema<typeof internalRequestStatusSchema>;
export type InternalServicesConfigSpec = FromSchema<typeof internalServicesConfigSpecSchema>;

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: Array<Record<string, unknown>>;
}

export interface InternalRequest {
  apiVersion: typeof API_VERSION;
  kind: 'InternalRequest';
  metadata: ObjectMeta;
  spec: InternalRequestSpec;
  status?: InternalRequestStatus;
}

export interface InternalServicesConfig {
  apiVersion: typeof API_VERSION;
  kind: 'InternalServicesConfig';
  metadata: ObjectMeta;
  spec?: InternalServicesConfigSpec;
}

export const INTERNAL_REQUEST = {
  group: GROUP,
  version: VERSION,
  kind: 'InternalRequest',
  plural: 'internalrequests',
  singular: 'internalrequest',
  shortNames: ['ir'],
} as const;

export const INTERNAL_SERVICES_CONFIG = {
  group: GROUP,
  version: VERSION,
  kind: 'InternalServicesConfig',
  plural: 'internalservicesconfigs',
  singular: 'internalservicesconfig',
  shortNames: ['isc'],
} as const;

/** The name of the one InternalServicesConfig the controller reads, in its own namespace. */
export const CONFIG_NAME = 'config';

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
