/**
 * The sample requests of `internal-services local` (src/cli/local.ts): what
 * each shows, what it must end as, the git catalog the today-shaped samples
 * resolve from, the configuration and approval rights the demo adds to
 * config/samples, and how a waiting requester reads each step.
 *
 * Two request shapes: spec.request (a Pipeline installed in the controller's
 * namespace, the original design) and spec.pipeline with a git
 * pipelineRef whose Task comes from a taskGitUrl-style param (what release
 * tooling sends today), served from a git daemon on loopback.
 */
import { stringify } from 'yaml';
import type { InternalRequest, InternalRequestSpec } from '../api/types.js';
import { phaseMessageOf, phaseOf } from '../api/conditions.js';
import { requesterLoop, type Verdict } from '../api/readers.js';
import type { Manifest } from '../localenv/index.js';

/** A remote namespace the requester may use but that is not on the sample allowList. */
export const UNLISTED_NAMESPACE = 'unlisted-tenant';
/** A remote namespace served only under a rule that requires an approval. */
export const APPROVAL_NAMESPACE = 'managed-approval-tenant';
/** The rule that requires it, and the group allowed to approve under it. */
export const APPROVAL_RULE = 'signing-needs-approval';
export const APPROVERS_GROUP = 'release-managers';
/** The sample Pipeline's param that makes the run fail. */
export const FAIL_PARAM = 'simulate-failure';
/** Where the today-shaped samples' Pipeline and Task live in the local catalog. */
export const CATALOG_PIPELINE = 'pipelines/internal/sign-image/sign-image.yaml';
export const CATALOG_TASK = 'tasks/sign/sign.yaml';

export interface Scenario {
  namespace: string;
  name: string;
  /** What it shows, for the output. */
  story: string;
  spec: InternalRequestSpec;
  expect: { status: 'True' | 'False'; reason: 'Succeeded' | 'Rejected' | 'Failed'; message: RegExp; results?: boolean };
  /** Approve it (as an approver, on the internal cluster) once it waits for that. */
  approve?: boolean;
}

export interface SampleInputs {
  pipelineName: string;
  /** The sample request's spec (config/samples). */
  base: InternalRequestSpec;
  /** The first allowList namespace of the sample config. */
  allowed: string;
  /** git://… URL of the local catalog. */
  catalogUrl: string;
}

const gitRef = (url: string, revision: string, pathInRepo: string) => ({
  resolver: 'git',
  params: [
    { name: 'url', value: url },
    { name: 'revision', value: revision },
    { name: 'pathInRepo', value: pathInRepo },
  ],
});

/**
 * A request in today's shape, as the release tooling writes it: the Pipeline
 * from the catalog by the git resolver, its Task from the catalog too
 * ($(params.taskGitUrl) at $(params.taskGitRevision)).
 */
export function todaysSpec(catalogUrl: string, image: string, pathInRepo = CATALOG_PIPELINE, url = catalogUrl): InternalRequestSpec {
  return {
    pipeline: { pipelineRef: gitRef(url, 'main', pathInRepo) },
    params: { image, taskGitUrl: catalogUrl, taskGitRevision: 'main' },
  };
}

export function scenarios(i: SampleInputs): Scenario[] {
  const image = i.base.params?.['image'] ?? '';
  const todays = (pathInRepo: string, url = i.catalogUrl): InternalRequestSpec => todaysSpec(i.catalogUrl, image, pathInRepo, url);
  return [
    {
      namespace: i.allowed,
      name: 'sign-allowed',
      story: 'spec.request, allowed namespace, existing Pipeline: succeeds with results',
      spec: { ...i.base, request: i.pipelineName },
      expect: { status: 'True', reason: 'Succeeded', message: /succeeded/, results: true },
    },
    {
      namespace: i.allowed,
      name: 'sign-from-git',
      story: "spec.pipeline resolved by git (today's release tooling), its Task from $(params.taskGitUrl): checked, pinned, succeeds with results",
      spec: todays(CATALOG_PIPELINE),
      expect: { status: 'True', reason: 'Succeeded', message: /succeeded/, results: true },
    },
    {
      namespace: APPROVAL_NAMESPACE,
      name: 'sign-with-approval',
      story: `spec.request under rule "${APPROVAL_RULE}": waits for an approver, is approved, then runs`,
      spec: { ...i.base, request: i.pipelineName },
      expect: { status: 'True', reason: 'Succeeded', message: /succeeded/, results: true },
      approve: true,
    },
    {
      namespace: i.allowed,
      name: 'git-not-allowed',
      story: 'spec.pipeline from a git repository the source policy does not allow: rejected before anything is fetched',
      spec: todays('pipelines/sign.yaml', 'https://github.com/someone-else/catalog.git'),
      expect: { status: 'False', reason: 'Rejected', message: /is not allowed by/ },
    },
    {
      namespace: UNLISTED_NAMESPACE,
      name: 'sign-not-allowed',
      story: 'namespace not on the allowList: rejected',
      spec: { ...i.base, request: i.pipelineName },
      expect: { status: 'False', reason: 'Rejected', message: /not on the allowList/ },
    },
    {
      namespace: i.allowed,
      name: 'missing-pipeline',
      story: 'names a Pipeline that does not exist: rejected',
      spec: { ...i.base, request: 'no-such-pipeline' },
      expect: { status: 'False', reason: 'Rejected', message: /no Pipeline named "no-such-pipeline"/ },
    },
    {
      namespace: i.allowed,
      name: 'sign-fails',
      story: `the PipelineRun fails (${FAIL_PARAM}=true): failed`,
      spec: { ...i.base, request: i.pipelineName, params: { ...i.base.params, [FAIL_PARAM]: 'true' } },
      expect: { status: 'False', reason: 'Failed', message: /failed/ },
    },
  ];
}

/**
 * The local catalog: the today-shaped Pipeline (sign-image, as installed but
 * with its Task from git at the request's taskGitUrl/taskGitRevision) and
 * its Task, whose `script:` step computes the signature from the image param
 * as the installed sample's step does. `forPods` makes the Task ready for the
 * run's pods (local-pods.ts: the node's shell image, or the simulated
 * kubelet's env).
 */
export function catalogFiles(forPods: (task: Manifest) => Manifest = (t) => t): Record<string, string> {
  const object = (kind: string, name: string, spec: Record<string, unknown>): Manifest => ({ apiVersion: 'tekton.dev/v1', kind, metadata: { name }, spec });
  return {
    [CATALOG_PIPELINE]: stringify(object('Pipeline', 'sign-image', {
      description: 'Signs an image (sample, from the local git catalog).',
      params: [{ name: 'image' }, { name: 'taskGitUrl' }, { name: 'taskGitRevision' }],
      results: [{ name: 'signature', value: '$(tasks.sign.results.signature)' }],
      tasks: [{ name: 'sign', params: [{ name: 'image', value: '$(params.image)' }], taskRef: gitRef('$(params.taskGitUrl)', '$(params.taskGitRevision)', CATALOG_TASK) }],
    })),
    [CATALOG_TASK]: stringify(forPods(object('Task', 'sign', {
      params: [{ name: 'image' }],
      results: [{ name: 'signature' }],
      steps: [
        {
          name: 'sign',
          image: 'registry.access.redhat.com/ubi9/ubi-minimal:latest',
          // The param reaches the script through the environment, never pasted into it.
          env: [{ name: 'IMAGE', value: '$(params.image)' }],
          script: `#!/bin/sh\nset -eu\necho "signing $IMAGE"\nprintf 'sha256:%s' "$(printf '%s' "$IMAGE" | sha256sum | cut -d' ' -f1)" > "$(results.signature.path)"\n`,
        },
      ],
    }))),
  };
}

/**
 * The sample config as the demo applies it: the local catalog added to
 * sources.git, and a rule that serves APPROVAL_NAMESPACE only with an
 * approval (seed 004).
 */
export function demoConfig(sample: Manifest, catalogUrl: string, pipelineName: string): Manifest {
  const copy = withCatalogSource(sample, catalogUrl);
  const spec = copy['spec'] as Record<string, unknown>;
  spec['rules'] = [...((spec['rules'] as unknown[] | undefined) ?? []), { name: APPROVAL_RULE, namespaces: [APPROVAL_NAMESPACE], pipelines: [pipelineName], requireApproval: true, approvalTimeout: '10m' }];
  return copy;
}

/** The git source rule that allows the local catalog, as the sample's rule for its (unreachable) catalog is written. */
export function catalogSourceRule(catalogUrl: string): Record<string, unknown> {
  return { urls: [catalogUrl], revisions: ['main'], commits: { reachable: true }, paths: ['pipelines/internal/**', 'tasks/**'] };
}

/** A copy of a config with the local catalog added to sources.git (for every served tenant). */
export function withCatalogSource(config: Manifest, catalogUrl: string): Manifest {
  const copy = structuredClone(config);
  const spec = (copy['spec'] ?? {}) as Record<string, unknown>;
  const sources = (spec['sources'] ?? {}) as { git?: unknown[] };
  spec['sources'] = { ...sources, git: [...(sources.git ?? []), catalogSourceRule(catalogUrl)] };
  copy['spec'] = spec;
  return copy;
}

/** RBAC on the internal cluster: the approvers' group may see approvals and approve under the rule. */
export function approverRbac(namespace: string): Manifest[] {
  const rbac = 'rbac.authorization.k8s.io';
  return [
    { apiVersion: `${rbac}/v1`, kind: 'RoleBinding', metadata: { name: 'sample-approvers', namespace }, roleRef: { apiGroup: rbac, kind: 'ClusterRole', name: 'internal-services-approver' }, subjects: [{ apiGroup: rbac, kind: 'Group', name: APPROVERS_GROUP }] },
    { apiVersion: `${rbac}/v1`, kind: 'Role', metadata: { name: 'sample-approve-signing', namespace }, rules: [{ apiGroups: ['appstudio.redhat.com'], resources: ['rules'], resourceNames: [APPROVAL_RULE], verbs: ['approve'] }] },
    { apiVersion: `${rbac}/v1`, kind: 'RoleBinding', metadata: { name: 'sample-approve-signing', namespace }, roleRef: { apiGroup: rbac, kind: 'Role', name: 'sample-approve-signing' }, subjects: [{ apiGroup: rbac, kind: 'Group', name: APPROVERS_GROUP }] },
  ] as Manifest[];
}

const WORDS: Record<Verdict, string> = { wait: 'keeps waiting', succeeded: 'concludes SUCCESS', failed: 'concludes FAILURE' };

/**
 * How a waiting requester (the release tooling's loop, which reads only
 * conditions[0].reason) reads each status of one request: one step per
 * change of what it shows.
 */
export class RequesterView {
  readonly steps: Array<{ reason: string; phase: string; verdict: Verdict; message: string }> = [];

  /** Records the status if it shows something new; returns the line to print, or undefined. */
  observe(r: InternalRequest): string | undefined {
    const c = r.status?.conditions?.[0];
    const step = { reason: c?.reason ?? '', phase: phaseOf(r) ?? '', verdict: requesterLoop(r), message: phaseMessageOf(r) };
    const last = this.steps[this.steps.length - 1];
    if (last && last.reason === step.reason && last.phase === step.phase && last.message === step.message) return undefined;
    this.steps.push(step);
    const shown = step.reason ? `conditions[0].reason ${step.reason}` : 'no condition yet';
    const phase = step.phase && step.phase !== step.reason ? `, phase ${step.phase}` : '';
    return `${shown}${phase}${step.message ? `: ${step.message}` : ''}  => a waiting requester ${WORDS[step.verdict]}`;
  }

  /** The requester's readings in order, e.g. "wait (WaitingForConfig) → wait (Running) → SUCCESS". */
  summary(): string {
    return this.steps.map((s) => (s.verdict === 'wait' ? `wait (${s.phase || 'new'})` : s.verdict === 'succeeded' ? 'SUCCESS' : 'FAILURE')).join(' → ');
  }

  /** True when the requester never concluded anything before the request finished, and then concluded what the request ended as. */
  consistentWith(expect: Scenario['expect']): boolean {
    const firstConclusion = this.steps.findIndex((s) => s.verdict !== 'wait');
    if (firstConclusion < 0) return false;
    const want: Verdict = expect.status === 'True' ? 'succeeded' : 'failed';
    return this.steps.slice(firstConclusion).every((s) => s.verdict === want) && this.steps[firstConclusion]!.reason === expect.reason;
  }
}
