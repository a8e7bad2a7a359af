/**
 * observe() (src/controller/observe.ts) asks the clusters at most once per
 * reconcile for each thing it asks (the TaskRuns of a failed run, the
 * earlier requests of an idempotency key, an approval's trust): the
 * Reconciler observes again after each live read, with the same memo. A
 * new reconcile (a new memo), or a changed object (a new resourceVersion),
 * asks again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import type { InternalRequest, InternalRequestApproval } from '../../src/api/types.js';
import { observe, type ObserveMemo, type ObserveSources } from '../../src/controller/observe.js';
import { Refusals } from '../../src/controller/refusals.js';
import type { Remote } from '../../src/remotes/remote.js';
import { INTERNAL_REQUEST_KIND } from '../../src/requests/request-kind.js';
import { ANNOTATION_REQUEST_NAME, ANNOTATION_REQUEST_NAMESPACE, LABEL_IDEMPOTENCY_KEY, LABEL_REQUEST_UID } from '../../src/tekton/pipelinerun.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';
import { config, done, NOW, NS, pipeline, pipelineRun, request } from './fixtures.js';

const KEY = 'default/team-a/req';

function sources(o: { runs?: PipelineRun[]; approvals?: InternalRequestApproval[] }) {
  const asked = { taskRuns: 0, sameKey: 0, trust: 0 };
  const src: ObserveSources = {
    namespace: NS,
    config: () => config(),
    now: () => NOW,
    log: pino({ level: 'silent' }),
    runs: { forRequest: () => o.runs ?? [] },
    pipelines: { get: () => pipeline() },
    tasks: { list: () => [].values() },
    resolutions: { list: () => [].values() },
    approvals: { list: () => (o.approvals ?? []).values() },
    taskRuns: {
      tryGet: async () => {
        asked.taskRuns++;
        return { metadata: { name: 'tr' }, status: { conditions: [{ type: 'Succeeded', status: 'False', message: 'exit 1' }] } };
      },
    } as never,
    trust: {
      check: async () => {
        asked.trust++;
        return { trusted: true };
      },
    } as never,
    sameKeyRequests: {
      sameKey: () => {
        asked.sameKey++;
        return [];
      },
      currentRequest: () => undefined,
      pipelineRunsFor: () => [],
    },
    capacity: () => ({ running: 0, runningByTenant: new Map(), waiting: [], lastStartByTenant: new Map() }),
    logs: { known: () => undefined },
    commits: { answersFor: () => new Map() },
    refs: { answersFor: () => new Map() },
    paths: { answersFor: () => new Map() },
    serviceAccounts: { known: () => undefined },
    refuseResolversOnAdvisory: false,
    refusals: new Refusals(),
  };
  return { src, asked };
}

const remote = { name: 'default' } as unknown as Remote;
const kind = { requests: { synced: true }, client: { tryGet: async () => undefined }, kind: INTERNAL_REQUEST_KIND } as unknown as NonNullable<ReturnType<Remote['kindOf']>>;

test('a failed run\'s TaskRuns are read once per reconcile; a new reconcile, or a changed run, reads them again', async () => {
  const failed = pipelineRun('u-1', { ...done(false), childReferences: [{ name: 'tr', pipelineTaskName: 'sign', kind: 'TaskRun' }] } as never);
  failed.metadata.resourceVersion = '5';
  const { src, asked } = sources({ runs: [failed] });
  const running = request({}, {}, { conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running', message: 'm', lastTransitionTime: '2026-11-22T09:59:30Z' }] });
  const memo: ObserveMemo = new Map();
  for (let i = 0; i < 4; i++) {
    const seen = await observe(src, KEY, remote, kind, running, {}, memo);
    assert.deepEqual(seen?.observation.failedTasks, ['sign (exit 1)']);
  }
  assert.equal(asked.taskRuns, 1, 'four passes of one reconcile, one read');
  await observe(src, KEY, remote, kind, running, {}, new Map());
  assert.equal(asked.taskRuns, 2, 'the next reconcile reads again');
  const changed = { ...failed, metadata: { ...failed.metadata, resourceVersion: '6' } };
  const { src: src2, asked: asked2 } = sources({ runs: [changed] });
  await observe(src2, KEY, remote, kind, running, {}, memo);
  assert.equal(asked2.taskRuns, 1, 'a changed run is read again, even in the same reconcile');
});

test('the earlier requests of an idempotency key and an approval\'s trust are looked up once per reconcile', async () => {
  const approved = {
    apiVersion: 'appstudio.redhat.com/v1alpha1',
    kind: 'InternalRequestApproval',
    metadata: { name: 'a', namespace: NS, uid: 'a-1', resourceVersion: '3', labels: { [LABEL_REQUEST_UID]: 'u-1' }, annotations: { [ANNOTATION_REQUEST_NAMESPACE]: 'team-a', [ANNOTATION_REQUEST_NAME]: 'req' } },
    status: { decision: { result: 'Approved' } },
  } as unknown as InternalRequestApproval;
  const { src, asked } = sources({ approvals: [approved] });
  const keyed: InternalRequest = request({}, { labels: { [LABEL_IDEMPOTENCY_KEY]: 'k1' } });
  const memo: ObserveMemo = new Map();
  for (let i = 0; i < 3; i++) await observe(src, KEY, remote, kind, keyed, {}, memo);
  assert.equal(asked.sameKey, 1, 'the idempotency look-up: once');
  assert.equal(asked.trust, 1, 'the trust check: once');
  await observe(src, KEY, remote, kind, keyed, {}, new Map());
  assert.equal(asked.sameKey, 2, 'the next reconcile looks again');
});
