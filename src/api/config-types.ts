/**
 * The InternalServicesConfig: the controller's configuration, one object
 * named "config" in its namespace (allowList, rules, sources, limits,
 * approvals, capacity, Chains, Results). One definition per field, from which
 * the CRD schema and the TypeScript type are derived.
 *
 * Over 400 lines on purpose: the one CRD's schema, field by field, with its
 * descriptions; splitting it would spread one definition over several files.
 */
import { schema, type FromSchema } from './schema.js';
import { API_VERSION, DNS_LABEL_PATTERN, DNS_SUBDOMAIN_PATTERN, durationField, GROUP, MAX_PARAM_VALUE_BYTES, MAX_PARAMS_BYTES, QUANTITY_PATTERN, TENANT_GLOB_PATTERN, VERSION, type ObjectMeta } from './api-common.js';

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
          urls: {
            type: 'array',
            minItems: 1,
            maxItems: 256,
            description:
              'Repository URLs (globs: * within a path segment, ** any number of whole segments; never a "." or ".." segment). Matched against the canonical URL (lower-case scheme and host, no default port, no trailing /), a trailing .git included: "https://git.example.com/org/catalog.git" does not allow "https://git.example.com/org/catalog", which a git server may serve as another repository (see dotGit). See docs/security.md.',
            items: { type: 'string', minLength: 1, maxLength: 2048 },
          },
          dotGit: {
            type: 'string',
            enum: ['exact', 'either'],
            description:
              'Whether a URL with or without a trailing ".git" names the repository a url of this rule names. exact (the default): only as written, since a git server (git daemon, plain HTTP, most self-hosted servers) serves "x" and "x.git" as two repositories when both exist; on github.com and gitlab.com, which cannot hold both, the two spellings are one repository anyway. either: both spellings, for a server the administrators know serves them as one repository.',
          },
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
    http: {
      type: 'array',
      maxItems: 256,
      description:
        "Rules for the http resolver (a file fetched by URL). A URL names where the fetch starts (redirects are followed) and its content can change, so a rule binds the content: sha256 of each reviewed file, or signatures, or both (both then required). A rule with neither grants nothing. The requester gives only url; credentials params are refused.",
      items: {
        type: 'object',
        required: ['urls'],
        properties: {
          urls: { type: 'array', minItems: 1, maxItems: 256, description: 'File URLs, https or http, no query or fragment (globs: * within a path segment or host label, ** any number of whole segments), matched against the canonical URL (lower-case scheme and host, no default port).', items: { type: 'string', minLength: 1, maxLength: 2048 } },
          sha256: { type: 'array', maxItems: 1024, description: 'The sha256 digests (64 hex digits, "sha256:" prefix optional) of the reviewed files; a fetched file must be one of them.', items: { type: 'string', minLength: 64, maxLength: 71 } },
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
        'Remote namespaces whose requests are served: "remote/namespace" ("*/namespace": on every remote; on kcp the remote is a workspace path, "root:org:team/namespace"), or a bare namespace, which names it on the remote that defaultRemote designates. Globs as in rules[].namespaces ("*" within a segment, which on kcp spans ":" too: "root:org:*/team" is every workspace below root:org; "**" whole segments). Empty: none.',
      items: { type: 'string', minLength: 1, maxLength: 127, pattern: TENANT_GLOB_PATTERN },
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
        'Git repositories (exact URLs) that Pipelines, Tasks and StepActions may be resolved from with the git resolver, at any branch or tag, commits reachable from them, and any path; the same field as the production controller\'s. URLs are compared in canonical form, a trailing .git included: list both spellings only for a server that serves them as one repository (github.com and gitlab.com need only one). Empty or absent: no git resolution. For patterns, revisions, paths and per-namespace rules, use sources.git.',
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
          expires: {
            type: 'string',
            format: 'date-time',
            maxLength: 64,
            description:
              'A temporary grant: the time (RFC 3339, e.g. 2027-01-31T00:00:00Z) from which the rule grants nothing. It still names its namespaces, so they are not served under the allowList instead; new requests it would have granted are Rejected saying it expired, and running ones follow onRevoke. Absent: the rule does not expire.',
          },
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
export type InternalServicesConfigSpec = FromSchema<typeof internalServicesConfigSpecSchema>;

export interface InternalServicesConfig {
  apiVersion: typeof API_VERSION;
  kind: 'InternalServicesConfig';
  metadata: ObjectMeta;
  spec?: InternalServicesConfigSpec;
}

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
