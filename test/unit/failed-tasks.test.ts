/** What a failed run's TaskRuns tell the requester: src/controller/failed-tasks.ts. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { failedTasksOf, unwrittenResults } from '../../src/controller/failed-tasks.js';
import type { PipelineRun, TaskRun } from '../../src/tekton/tekton-types.js';

const failedTr = (name: string, status: NonNullable<TaskRun['status']>): TaskRun => ({
  metadata: { name, namespace: 'ns' },
  status: { conditions: [{ type: 'Succeeded', status: 'False', reason: 'Failed', message: `"step-produce" exited with code 1` }], ...status },
});

describe('unwrittenResults', () => {
  test('a step that ended with 1 and declared results missing: the size limit is named, with where to look', () => {
    const hint = unwrittenResults(failedTr('a', { taskSpec: { results: [{ name: 'out' }, { name: 'small' }] }, results: [{ name: 'small' }], steps: [{ name: 'produce', container: 'step-produce', terminated: { exitCode: 1 } }] }));
    assert.match(hint, /results out not written; if step-produce wrote them, together they were over Tekton's 4096-byte limit/);
    assert.match(hint, /kubectl internalrequest logs/);
  });

  test('no hint where it cannot be the limit: every result written, no results declared, or another exit code', () => {
    const steps = [{ name: 'produce', terminated: { exitCode: 1 } }];
    assert.equal(unwrittenResults(failedTr('a', { taskSpec: { results: [{ name: 'out' }] }, results: [{ name: 'out' }], steps })), '');
    assert.equal(unwrittenResults(failedTr('b', { taskSpec: {}, steps })), '');
    assert.equal(unwrittenResults(failedTr('c', { taskSpec: { results: [{ name: 'out' }] }, steps: [{ name: 'produce', terminated: { exitCode: 3 } }] })), '');
  });
});

describe('failedTasksOf', () => {
  test('each failed task with Tekton\'s message, and the hint only where it applies', async () => {
    const trs = new Map<string, TaskRun>([
      ['run-big', failedTr('run-big', { taskSpec: { results: [{ name: 'out' }] }, steps: [{ name: 'produce', terminated: { exitCode: 1 } }] })],
      ['run-check', { metadata: { name: 'run-check' }, status: { conditions: [{ type: 'Succeeded', status: 'False', message: '"step-check" exited with code 3' }], steps: [{ name: 'check', terminated: { exitCode: 3 } }] } }],
      ['run-ok', { metadata: { name: 'run-ok' }, status: { conditions: [{ type: 'Succeeded', status: 'True' }] } }],
    ]);
    const pr = { metadata: { name: 'pr' }, spec: {}, status: { childReferences: [...trs.keys()].map((name) => ({ kind: 'TaskRun', name, pipelineTaskName: name.replace('run-', '') })) } } as unknown as PipelineRun;
    const got = await failedTasksOf({ tryGet: async (_ns, name) => trs.get(name) }, 'ns', pr, pino({ level: 'silent' }));
    assert.equal(got.length, 2);
    assert.match(got[0]!, /^big \("step-produce" exited with code 1\) \[results out not written; if step-produce wrote them/);
    assert.equal(got[1], 'check ("step-check" exited with code 3)');
  });
});
