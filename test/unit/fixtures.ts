import assert from 'node:assert/strict';
import type { InternalRequest } from '../../src/api/types.js';
import type { Observation } from '../../src/controller/observation.js';
import { effectiveConfig } from '../../src/controller/config.js';
import { requestedServiceAccount } from '../../src/controller/requested-run.js';
import type { Pipeline, PipelineRun } from '../../src/tekton/tekton-types.js';
import { pipelineRunName, LABEL_REQUEST_UID, ANNOTATION_REQUEST_NAME, ANNOTATION_REQUEST_NAMESPACE } from '../../src/tekton/pipelinerun.js';

export const NS = 'internal-services';
export const NOW = new Date('2026-11-22T10:00:00Z');

export function request(over: Partial<InternalRequest['spec']> = {}, meta: Partial<InternalRequest['metadata']> = {}, status?: InternalRequest['status']): InternalRequest {
  return {
    apiVersion: 'appstudio.redhat.com/v1alpha1',
    kind: 'InternalRequest',
    metadata: { name: 'req', namespace: 'team-a', uid: 'u-1', resourceVersion: '10', generation: 1, creationTimestamp: '2026-11-22T09:59:00Z', ...meta },
    spec: { request: 'sign', params: { image: 'quay.io/x' }, ...over },
    ...(status ? { status } : {}),
  };
}

export function pipeline(params: Pipeline['spec'] extends infer S ? S extends { params?: infer P } ? P : never : never = [{ name: 'image' }], workspaces?: string[]): Pipeline {
  return { metadata: { name: 'sign', namespace: NS }, spec: { params, ...(workspaces ? { workspaces: workspaces.map((name) => ({ name })) } : {}) } };
}

export function config(spec: Record<string, unknown> = { allowList: ['team-a'] }) {
  return effectiveConfig({ apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name: 'config', namespace: NS }, spec }, NS);
}

export function pipelineRun(uid = 'u-1', status?: PipelineRun['status'], key = { ns: 'team-a', name: 'req' }): PipelineRun {
  return {
    apiVersion: 'tekton.dev/v1',
    kind: 'PipelineRun',
    metadata: {
      name: pipelineRunName(uid),
      namespace: NS,
      uid: `pr-${uid}`,
      labels: { [LABEL_REQUEST_UID]: uid },
      annotations: { [ANNOTATION_REQUEST_NAME]: key.name, [ANNOTATION_REQUEST_NAMESPACE]: key.ns },
    },
    spec: { pipelineRef: { name: 'sign' } },
    ...(status ? { status } : {}),
  };
}

export const done = (ok: boolean, extra: Partial<NonNullable<PipelineRun['status']>> = {}): PipelineRun['status'] => ({
  conditions: [{ type: 'Succeeded', status: ok ? 'True' : 'False', reason: ok ? 'Succeeded' : 'Failed', message: ok ? 'Tasks Completed: 1' : 'Tasks Completed: 2 (Failed: 1, Cancelled 0), Skipped: 0' }],
  startTime: '2026-11-22T09:59:10Z',
  completionTime: '2026-11-22T09:59:50Z',
  ...extra,
});

export const runningStatus = (): PipelineRun['status'] => ({ conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running' }] });

/** What release tooling sends since 2025: spec.pipeline with the git resolver (field names as the production API has them). */
export const TODAYS_PAYLOAD = {
  pipeline: {
    pipelineRef: {
      resolver: 'git',
      params: [
        { name: 'url', value: 'https://example.com/org/catalog.git' },
        { name: 'revision', value: 'main' },
        { name: 'pathInRepo', value: 'pipelines/internal/sign/sign.yaml' },
      ],
    },
  },
  params: { image: 'quay.io/org/app@sha256:abc', taskGitUrl: 'https://example.com/org/catalog.git', taskGitRevision: 'main' },
  timeouts: { pipeline: '1h0m0s', tasks: '0h55m0s', finally: '0h5m0s' },
};

/**
 * Asserts the status shows an unfinished request in `phase`, in the
 * contract's shape: Succeeded Unknown/Running first (the requester's
 * contract), Progressing True/<phase> second, one message in both.
 */
export function assertPhase(status: InternalRequest['status'], phase: string): void {
  const [s, p] = status?.conditions ?? [];
  assert.deepEqual([s?.type, s?.status, s?.reason], ['Succeeded', 'Unknown', 'Running'], 'conditions[0] is Succeeded Unknown/Running');
  assert.deepEqual([p?.type, p?.status, p?.reason], ['Progressing', 'True', phase], `conditions[1] is Progressing True/${phase}`);
  assert.equal(s?.message, p?.message, 'the phase message is in both');
}

/**
 * The one Observation fixture of the decide() tests: a request of team-a on
 * the default remote, the installed Pipeline, the configuration given, no
 * PipelineRun yet, at NOW; `over` replaces any part (the base parts given
 * per file: a file's own request, configuration or Pipeline).
 */
export function observation(over: Partial<Observation> = {}, base: Partial<Observation> = {}): Observation {
  const o: Observation = { namespace: NS, request: request(), pipelineRuns: [], config: config(), pipeline: pipeline(), now: NOW, ...base, ...over };
  // The ServiceAccount a request names exists, unless a test says otherwise.
  const sa = requestedServiceAccount(o.request);
  if (sa && !('serviceAccount' in over) && !('serviceAccount' in base)) o.serviceAccount = { name: sa, answer: 'present' };
  return o;
}
