/**
 * The closed-world check of the final PipelineRun (src/tekton/closed-world.ts),
 * case by case, and its place in decide(): the last word before the create,
 * failing closed with REQUEST_NOT_CLOSED.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closedWorldViolations, describeViolations, type ClosedWorldContext } from '../../src/tekton/closed-world.js';
import { STEPACTION_COPY_PREFIX } from '../../src/tekton/stepaction-copy.js';
import { decide, type Action } from '../../src/controller/decide.js';
import { NS, observation, pipeline } from './fixtures.js';

const COPY = `${STEPACTION_COPY_PREFIX}${'b'.repeat(32)}`;
const installedTask = { apiVersion: 'tekton.dev/v1', kind: 'Task', metadata: { name: 'installed' }, spec: { steps: [{ name: 's', image: 'x', ref: undefined }].map(({ ref: _r, ...s }) => s) } };
const ctx = (over: Partial<ClosedWorldContext> = {}): ClosedWorldContext => ({
  installedPipeline: (n) => (n === 'sign' ? { spec: { tasks: [{ name: 't', taskRef: { name: 'installed' } }] } } : undefined),
  installedTask: (n) => (n === 'installed' ? installedTask : undefined),
  copies: new Set([COPY]),
  copyPrefix: STEPACTION_COPY_PREFIX,
  ...over,
});
const inline = (tasks: unknown[], extra: Record<string, unknown> = {}) => ({ spec: { pipelineSpec: { tasks, ...extra } } });
const withStep = (ref: unknown) => inline([{ name: 't', taskSpec: { steps: [{ name: 's', ref }] } }]);

const cases: Array<{ name: string; pr: { spec?: unknown }; ctx?: Partial<ClosedWorldContext>; want: RegExp | null }> = [
  { name: 'an installed Pipeline by name whose Task is installed and closed', pr: { spec: { pipelineRef: { name: 'sign' } } }, want: null },
  { name: 'an embedded Pipeline: Tasks embedded, a step naming an installed StepAction and a copy made for it', pr: inline([{ name: 't', taskSpec: { steps: [{ name: 'a', ref: { name: 'installed-sa' } }, { name: 'b', ref: { name: COPY } }] } }, { name: 'u', taskRef: { name: 'installed', kind: 'Task' } }], { finally: [{ name: 'f', taskSpec: { steps: [{ name: 'x', image: 'y' }] } }] }), want: null },
  { name: 'an embedded task as Tekton stores it ("spec": null, "metadata": {})', pr: inline([{ name: 't', taskSpec: { metadata: {}, spec: null, steps: [{ name: 's', image: 'x' }] } }]), want: null },
  { name: 'matrix and when change nothing', pr: inline([{ name: 't', matrix: { params: [{ name: 'a', value: ['1'] }] }, when: [{ input: 'a', operator: 'in', values: ['a'] }], taskSpec: { steps: [{ name: 's', image: 'x' }] } }]), want: null },
  { name: 'a pipelineRef with a resolver', pr: { spec: { pipelineRef: { resolver: 'git', params: [] } } }, want: /spec\.pipelineRef\.resolver: "resolver" is a resolver Tekton would run/ },
  { name: 'a pipelineRef with no name', pr: { spec: { pipelineRef: {} } }, want: /spec\.pipelineRef: a reference with no name: Tekton's default-resolver-type/ },
  { name: 'a Pipeline that is not installed', pr: { spec: { pipelineRef: { name: 'other' } } }, want: /names Pipeline "other", which is not installed/ },
  { name: 'an installed Pipeline that is not closed itself', pr: { spec: { pipelineRef: { name: 'sign' } } }, ctx: { installedPipeline: () => ({ spec: { tasks: [{ name: 't', taskRef: { resolver: 'git' } }] } }) }, want: /Pipeline\[sign\]\.spec\.tasks\[t\]\.taskRef\.resolver/ },
  { name: 'a taskRef with a resolver', pr: inline([{ name: 't', taskRef: { resolver: 'cluster', params: [] } }]), want: /tasks\[t\]\.taskRef\.resolver/ },
  { name: 'a taskRef with no name (default-resolver-type)', pr: inline([{ name: 't', taskRef: { kind: 'Task' } }]), want: /tasks\[t\]\.taskRef: a reference with no name/ },
  { name: 'a taskRef with a bundle', pr: inline([{ name: 't', taskRef: { name: 'installed', bundle: 'x' } }]), want: /taskRef\.bundle: "bundle" is an OCI bundle/ },
  { name: 'a custom task by reference', pr: inline([{ name: 't', taskRef: { name: 'x', apiVersion: 'example.dev/v1', kind: 'Custom' } }]), want: /taskRef\.apiVersion.*custom task[\s\S]*taskRef\.kind: "Custom": only namespaced Tasks/ },
  { name: 'a custom task embedded', pr: inline([{ name: 't', taskSpec: { apiVersion: 'example.dev/v1', kind: 'Custom', spec: {} } }]), want: /tasks\[t\]\.taskSpec: a custom task \("Custom"\)/ },
  { name: 'an installed Task that is a custom task', pr: inline([{ name: 't', taskRef: { name: 'installed' } }]), ctx: { installedTask: () => ({ spec: { apiVersion: 'x/v1', kind: 'C', spec: {} } }) }, want: /taskRef\[installed\]\.spec: a custom task/ },
  { name: 'a Task that is not installed', pr: inline([{ name: 't', taskRef: { name: 'nope' } }]), want: /names Task "nope", which is not installed/ },
  { name: 'a nested Pipeline', pr: inline([{ name: 't', pipelineRef: { name: 'x' } }]), want: /tasks\[t\]\.pipelineRef: "pipelineRef" is a nested Pipeline/ },
  { name: 'a step ref with a resolver', pr: withStep({ resolver: 'git', params: [] }), want: /steps\[s\]\.ref\.resolver/ },
  { name: 'a step ref with no name (default-resolver-type)', pr: withStep({}), want: /steps\[s\]\.ref: a reference with no name/ },
  { name: 'a step ref with an empty name', pr: withStep({ name: ' ' }), want: /steps\[s\]\.ref: a reference with no name/ },
  { name: 'a copy not made for this decision', pr: withStep({ name: `${STEPACTION_COPY_PREFIX}${'c'.repeat(32)}` }), want: /a StepAction copy not made for this decision/ },
  { name: 'a step ref in an installed Task with a resolver', pr: inline([{ name: 't', taskRef: { name: 'installed' } }]), ctx: { installedTask: () => ({ spec: { steps: [{ name: 's', ref: { resolver: 'git' } }] } }) }, want: /taskRef\[installed\]\.spec\.steps\[s\]\.ref\.resolver/ },
  { name: 'a ref in a sidecar', pr: inline([{ name: 't', taskSpec: { steps: [{ name: 's', image: 'x' }], sidecars: [{ name: 'c', ref: { resolver: 'git' } }] } }]), want: /sidecars\[0\]\.ref/ },
  { name: 'a field it does not know, at the pipeline task', pr: inline([{ name: 't', taskSpec: { steps: [] }, resources: {} }]), want: /tasks\[t\]\.resources: "resources" is not a field this controller understands/ },
  { name: 'a field it does not know, in a Task spec', pr: inline([{ name: 't', taskSpec: { steps: [], stepActions: [] } }]), want: /taskSpec\.stepActions/ },
  { name: 'both pipelineRef and pipelineSpec', pr: { spec: { pipelineRef: { name: 'sign' }, pipelineSpec: {} } }, want: /exactly one of pipelineRef and pipelineSpec/ },
  { name: 'neither taskRef nor taskSpec', pr: inline([{ name: 't' }]), want: /exactly one of taskRef and taskSpec/ },
  { name: 'taskRunSpecs', pr: { spec: { pipelineRef: { name: 'sign' }, taskRunSpecs: [] } }, want: /spec\.taskRunSpecs: per-task specs/ },
];

for (const c of cases) {
  test(`closed world: ${c.name}`, () => {
    const vs = closedWorldViolations(c.pr, ctx(c.ctx));
    if (c.want === null) assert.deepEqual(vs, []);
    else {
      assert.ok(vs.length > 0, 'a violation');
      assert.match(describeViolations(vs, 10), c.want);
    }
  });
}

test('closed world: the message names at most five positions and counts the rest', () => {
  const many = inline(Array.from({ length: 7 }, (_, i) => ({ name: `t${i}`, taskRef: { resolver: 'git' } })));
  const m = describeViolations(closedWorldViolations(many, ctx()));
  assert.match(m, /tasks\[t0\]\.taskRef\.resolver/);
  assert.equal(m.match(/taskRef\.resolver/g)?.length, 3, 'five shown (resolver and no-name for t0..t2), then the count');
  assert.match(m, /and \d+ more$/);
});

test('decide: a PipelineRun the walk let through but the final check refuses is not created: Rejected REQUEST_NOT_CLOSED, naming the position', () => {
  // The walk does not read sidecars; the final check refuses what it does not understand there.
  const p = { ...pipeline(), spec: { params: [{ name: 'image' }], tasks: [{ name: 't', taskSpec: { steps: [{ name: 's', image: 'x' }], sidecars: [{ name: 'c', image: 'y', ref: { resolver: 'git' } }] } }] } } as unknown as ReturnType<typeof pipeline>;
  const actions = decide(observation({ pipeline: p }));
  assert.ok(!actions.some((a) => a.type === 'createPipelineRun'), 'nothing created');
  const w = actions.find((a): a is Extract<Action, { type: 'writeStatus' }> => a.type === 'writeStatus');
  assert.equal(w?.code, 'REQUEST_NOT_CLOSED');
  assert.equal(w?.status.conditions?.[0]?.reason, 'Rejected');
  assert.match(w?.status.conditions?.[0]?.message ?? '', /Pipeline\[sign\]\.spec\.tasks\[t\]\.taskSpec\.sidecars\[0\]\.ref: a reference in a sidecar/);
  // The same Pipeline without it runs, by name (its embedded task as Tekton stores it: "spec": null).
  const ok = { ...pipeline(), spec: { params: [{ name: 'image' }], tasks: [{ name: 't', taskSpec: { metadata: {}, spec: null, steps: [{ name: 's', image: 'x' }] } }] } } as unknown as ReturnType<typeof pipeline>;
  const run = decide(observation({ pipeline: ok })).find((a): a is Extract<Action, { type: 'createPipelineRun' }> => a.type === 'createPipelineRun');
  assert.deepEqual(run?.pipelineRun.spec.pipelineRef, { name: 'sign' });
  assert.equal(run?.pipelineRun.metadata.namespace, NS);
});
