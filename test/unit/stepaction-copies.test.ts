/**
 * The copies of checked StepActions: which a sweep removes (none a
 * PipelineRun refers to, none made or used within the grace period, none
 * whose times cannot be read). The sweep itself runs against a real API
 * server in test/integration/reviewed-content.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ANNOTATION_USED_AT, copiesReferencedBy, COPY_GRACE_MS, staleCopies } from '../../src/controller/stepaction-copies.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';

const now = Date.parse('2026-11-26T12:00:00Z');
const ago = (ms: number) => new Date(now - ms).toISOString();
const copy = (name: string, created: string | undefined, usedAt?: string) => ({
  metadata: { name, namespace: 'ns', labels: {}, annotations: (usedAt === undefined ? {} : { [ANNOTATION_USED_AT]: usedAt }) as Record<string, string>, ...(created ? { creationTimestamp: created } : {}) },
});
const run = (refs: string[], section: 'tasks' | 'finally' = 'tasks'): PipelineRun =>
  ({ metadata: { name: 'pr' }, spec: { pipelineSpec: { [section]: [{ name: 't', taskSpec: { steps: refs.map((r, i) => ({ name: `s${i}`, ref: { name: r } })) } }] } } }) as unknown as PipelineRun;

test('copies referenced by runs: the steps of embedded Tasks, in tasks and finally; other names are not copies', () => {
  const refs = copiesReferencedBy([run(['is-stepaction-a', 'installed-one']), run(['is-stepaction-b'], 'finally'), { metadata: {}, spec: { pipelineRef: { name: 'p' } } } as unknown as PipelineRun]);
  assert.deepEqual([...refs].sort(), ['is-stepaction-a', 'is-stepaction-b']);
});

test('stale copies: unreferenced and older than the grace period, counting the last use', () => {
  const copies = [
    copy('is-stepaction-used-by-a-run', ago(COPY_GRACE_MS * 10)),
    copy('is-stepaction-old', ago(COPY_GRACE_MS + 1)),
    copy('is-stepaction-new', ago(COPY_GRACE_MS - 1000)),
    copy('is-stepaction-old-but-used-lately', ago(COPY_GRACE_MS * 10), ago(1000)),
    copy('is-stepaction-old-used-long-ago', ago(COPY_GRACE_MS * 10), ago(COPY_GRACE_MS * 2)),
    copy('is-stepaction-no-time', undefined),
    copy('is-stepaction-bad-used-at', ago(COPY_GRACE_MS * 10), 'yesterday'),
  ];
  const stale = staleCopies(copies, new Set(['is-stepaction-used-by-a-run']), now).map((c) => c.metadata.name);
  assert.deepEqual(stale, ['is-stepaction-old', 'is-stepaction-old-used-long-ago']);
});
