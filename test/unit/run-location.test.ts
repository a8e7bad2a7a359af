/** Where a request's run is, as `migrate check` says it (src/migrate/run-location.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runLocation, type RunsSeen } from '../../src/migrate/run-location.js';
import { INCUMBENT_FINALIZER } from '../../src/requests/incumbent.js';
import { INCUMBENT_LABEL_NAME, INCUMBENT_LABEL_NAMESPACE } from '../../src/tekton/pipelinerun.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';
import { request } from './fixtures.js';

const goRun = (ns: string, name: string, done?: boolean): PipelineRun => ({
  apiVersion: 'tekton.dev/v1',
  kind: 'PipelineRun',
  metadata: { name, namespace: ns, creationTimestamp: '2026-11-22T09:59:05Z', labels: { [INCUMBENT_LABEL_NAME]: 'req', [INCUMBENT_LABEL_NAMESPACE]: 'team-a' } },
  spec: {},
  ...(done !== undefined ? { status: { conditions: [{ type: 'Succeeded', status: done ? 'True' : 'False', reason: done ? 'Succeeded' : 'Failed' }] } } : {}),
} as PipelineRun);
const goRunning = (named?: string) => request({}, { finalizers: [INCUMBENT_FINALIZER] }, { conditions: [{ type: 'Succeeded', status: 'False', reason: 'Running', message: '', lastTransitionTime: '2026-11-22T09:59:10Z' }], ...(named ? { pipelineRun: named } : {}) });
const both = ['internal-services', 'internal-services-system'];
const seen = (runs: PipelineRun[], unreadable: Record<string, string> = {}): RunsSeen => ({ runs, namespaces: both, unreadable });

test('migrate check says where each request\'s run is: in either namespace, ended or running; ambiguous; unknown when a namespace cannot be listed; missing; none for requests the Go controller never reached', () => {
  const there = goRun('internal-services-system', 'internalrequest-abcde');
  assert.match(runLocation(goRunning('internal-services-system/internalrequest-abcde'), seen([there]))!, /^internal-services-system\/internalrequest-abcde \(running\); followed there/);
  assert.match(runLocation(goRunning('internal-services-system/internalrequest-abcde'), seen([goRun('internal-services-system', 'internalrequest-abcde', true)]))!, /\(ended: succeeded\)/);
  assert.match(runLocation(goRunning('internal-services/internalrequest-x1'), seen([goRun('internal-services', 'internalrequest-x1', false)]))!, /^internal-services\/internalrequest-x1 \(ended: failed\)/);
  assert.match(runLocation(goRunning(), seen([goRun('internal-services', 'internalrequest-a'), goRun('internal-services-system', 'internalrequest-b')]))!, /^ambiguous: internal-services-system\/internalrequest-b, internal-services\/internalrequest-a/);
  assert.match(runLocation(goRunning('internal-services-system/internalrequest-abcde'), seen([], { 'internal-services-system': 'HTTP 403 forbidden' }))!, /^unknown: .*internal-services-system \(HTTP 403 forbidden\) cannot be listed; .*config\/rbac\/internal-incumbent/);
  assert.match(runLocation(goRunning('internal-services-system/internalrequest-gone1'), seen([]))!, /^missing: internal-services-system\/internalrequest-gone1 is not in internal-services or internal-services-system/);
  assert.match(runLocation(request({}, { finalizers: [INCUMBENT_FINALIZER] }), seen([]))!, /^none yet \(looked in internal-services and internal-services-system\)/);
  assert.equal(runLocation(request(), seen([there])), undefined, 'never reached by the Go controller');
});
