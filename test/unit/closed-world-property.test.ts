/**
 * The closed world as a property (issue 51): for generated Pipelines and
 * Tasks with references in every position Tekton resolves — a pipeline
 * task's taskRef (by resolver, by name, with neither, a custom kind), its
 * taskSpec (plain or a custom task), `finally`, matrix and `when`-guarded
 * tasks, a step's ref (by resolver, an installed StepAction, neither, a copy
 * named directly, a copy reached through the cluster resolver), installed
 * Tasks with literal references, resolved Tasks that are custom tasks, from
 * an installed or a resolved Pipeline, with literal values or values from
 * the request's params — the walk (src/tekton/graph.ts) is run with every
 * resolution answered, and:
 *
 *   - what it would hand Tekton (the PipelineRun decide() builds from it)
 *     passes the independent closed-world check (src/tekton/closed-world.ts)
 *     and holds no `resolver` key anywhere (a second, cruder oracle);
 *   - it is refused exactly when the model says something in it is outside
 *     the rules (an unlisted source, a ref with no name, a custom task, a
 *     missing installed Task, a copy named or reached by a resolver), and
 *     runs otherwise.
 *
 * It counts the positions it covered and the cases accepted and refused,
 * and fails if any never happened. FC_NUM_RUNS (default 300), FC_SEED.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { checkGraph } from '../../src/tekton/graph.js';
import type { GraphInput, RemoteRef } from '../../src/tekton/graph-model.js';
import { closedWorldViolations } from '../../src/tekton/closed-world.js';
import { STEPACTION_COPY_PREFIX } from '../../src/tekton/stepaction-copy.js';
import { buildPipelineRun } from '../../src/tekton/pipelinerun.js';
import type { Resolution } from '../../src/tekton/resolve.js';
import type { RefAnswer, RefLookup } from '../../src/policy/exact-ref.js';
import type { SourcePolicy } from '../../src/policy/source.js';
import type { InternalRequest } from '../../src/api/types.js';
import type { Pipeline } from '../../src/tekton/tekton-types.js';

const numRuns = Number(process.env['FC_NUM_RUNS'] ?? 300);
const NS = 'internal-services';
const CATALOG = 'https://example.com/org/catalog.git';
const EVIL = 'https://evil.example/org/catalog.git';
const HEAD = '3'.repeat(40);
const MAIN = 'refs/heads/main';
const COPY = `${STEPACTION_COPY_PREFIX}${'a'.repeat(32)}`;
const policy: SourcePolicy = { source: 'test', git: [{ urls: [CATALOG], revisions: ['main'], paths: ['tasks/**', 'stepactions/**'] }], bundles: [], cluster: true };

type Step =
  | { k: 'plain' }
  | { k: 'git'; allowed: boolean; literal: boolean }
  | { k: 'installedStepAction' }
  | { k: 'noName' }
  | { k: 'copyByName' }
  | { k: 'clusterStepAction'; copy: boolean };
type Task =
  | { k: 'gitTask'; allowed: boolean; literal: boolean; custom: boolean; steps: Step[] }
  | { k: 'installedTask'; exists: boolean; steps: Step[] }
  | { k: 'inline'; custom: boolean; steps: Step[] }
  | { k: 'noNameRef' }
  | { k: 'customRef' }
  | { k: 'clusterTask'; steps: Step[] };
interface PT {
  task: Task;
  matrix: boolean;
  when: boolean;
}
interface Scenario {
  origin: 'installed' | 'resolved';
  tasks: PT[];
  fin: PT[];
}

/** Mostly true: most generated references are within the rules, so that both outcomes are common. */
const mostly = fc.integer({ min: 0, max: 9 }).map((x) => x > 0);
const rarely = mostly.map((x) => !x);
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.constant<Step>({ k: 'plain' }) },
  { weight: 4, arbitrary: fc.record({ k: fc.constant('git' as const), allowed: mostly, literal: fc.boolean() }) },
  { weight: 3, arbitrary: fc.constant<Step>({ k: 'installedStepAction' }) },
  { weight: 1, arbitrary: fc.constant<Step>({ k: 'noName' }) },
  { weight: 1, arbitrary: fc.constant<Step>({ k: 'copyByName' }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('clusterStepAction' as const), copy: rarely }) },
);
const steps = fc.array(step, { minLength: 1, maxLength: 2 });
const taskArb: fc.Arbitrary<Task> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ k: fc.constant('gitTask' as const), allowed: mostly, literal: fc.boolean(), custom: rarely, steps }) },
  { weight: 5, arbitrary: fc.record({ k: fc.constant('installedTask' as const), exists: mostly, steps }) },
  { weight: 5, arbitrary: fc.record({ k: fc.constant('inline' as const), custom: rarely, steps }) },
  { weight: 1, arbitrary: fc.constant<Task>({ k: 'noNameRef' }) },
  { weight: 1, arbitrary: fc.constant<Task>({ k: 'customRef' }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant('clusterTask' as const), steps }) },
);
const pt = fc.record({ task: taskArb, matrix: fc.boolean(), when: fc.boolean() });
const scenario: fc.Arbitrary<Scenario> = fc.record({ origin: fc.constantFrom('installed' as const, 'resolved' as const), tasks: fc.array(pt, { minLength: 1, maxLength: 2 }), fin: fc.array(pt, { maxLength: 1 }) });

/** Is this step outside the rules (the walk must refuse the request)? */
const badStep = (s: Step): boolean => (s.k === 'git' && !s.allowed) || s.k === 'noName' || s.k === 'copyByName' || (s.k === 'clusterStepAction' && s.copy);
const badTask = (t: Task): boolean => {
  switch (t.k) {
    case 'gitTask':
      return !t.allowed || (t.custom && t.allowed) || t.steps.some(badStep);
    case 'installedTask':
      return !t.exists || t.steps.some(badStep);
    case 'inline':
      return t.custom || t.steps.some(badStep);
    case 'clusterTask':
      return t.steps.some(badStep);
    default:
      return true;
  }
};

/** Builds the Pipeline, the installed Tasks and the resolvable contents of one scenario. */
function materialize(sc: Scenario) {
  const contents = new Map<string, Resolution>();
  const installedTasks = new Map<string, Record<string, unknown>>();
  const params: Array<{ name: string; value: string }> = [
    { name: 'good', value: CATALOG },
    { name: 'evil', value: EVIL },
  ];
  let n = 0;
  const gitRef = (allowed: boolean, literal: boolean, path: string) => ({
    resolver: 'git',
    params: [
      { name: 'url', value: literal ? (allowed ? CATALOG : EVIL) : allowed ? '$(params.good)' : '$(params.evil)' },
      { name: 'revision', value: 'main' },
      { name: 'pathInRepo', value: path },
    ],
  });
  const stepOf = (s: Step, i: number): Record<string, unknown> => {
    const id = `s${n++}`;
    switch (s.k) {
      case 'plain':
        return { name: `step${i}`, image: 'registry/x', script: 'echo hi' };
      case 'git': {
        const path = `stepactions/${id}.yaml`;
        contents.set(`git:${path}`, resolved(stringify({ apiVersion: 'tekton.dev/v1beta1', kind: 'StepAction', metadata: { name: id }, spec: { image: 'registry/sa', script: `echo ${id}` } })));
        return { name: `step${i}`, ref: gitRef(s.allowed, s.literal, path) };
      }
      case 'installedStepAction':
        return { name: `step${i}`, ref: { name: 'installed-step-action' } };
      case 'noName':
        return { name: `step${i}`, ref: {} };
      case 'copyByName':
        return { name: `step${i}`, ref: { name: COPY } };
      case 'clusterStepAction': {
        const name = s.copy ? COPY : `sa-${id}`;
        contents.set(`cluster:${name}`, resolved(stringify({ apiVersion: 'tekton.dev/v1beta1', kind: 'StepAction', metadata: { name }, spec: { image: 'registry/sa' } })));
        return { name: `step${i}`, ref: { resolver: 'cluster', params: [{ name: 'kind', value: 'stepaction' }, { name: 'name', value: name }, { name: 'namespace', value: NS }] } };
      }
    }
  };
  // The Task side: steps inside a Task are written in the Task's own params
  // scope, so values "from params" reach them through the pipeline task's params.
  const taskParams = [{ name: 'good' }, { name: 'evil' }];
  const ptParams = [{ name: 'good', value: '$(params.good)' }, { name: 'evil', value: '$(params.evil)' }];
  const taskSpec = (ss: Step[]) => ({ params: taskParams, steps: ss.map(stepOf) });
  const pipelineTask = (p: PT, i: number, section: string): Record<string, unknown> => {
    const id = `t${n++}`;
    const out: Record<string, unknown> = { name: `${section}${i}`, params: ptParams };
    if (p.matrix) out['matrix'] = { params: [{ name: 'arch', value: ['amd64', 'arm64'] }] };
    if (p.when) out['when'] = [{ input: '$(params.good)', operator: 'in', values: [CATALOG] }];
    const t = p.task;
    switch (t.k) {
      case 'gitTask': {
        const path = `tasks/${id}.yaml`;
        const spec = t.custom ? { apiVersion: 'example.dev/v1', kind: 'Custom', spec: { x: 1 } } : taskSpec(t.steps);
        contents.set(`git:${path}`, resolved(stringify({ apiVersion: 'tekton.dev/v1', kind: 'Task', metadata: { name: id }, spec })));
        out['taskRef'] = gitRef(t.allowed, t.literal, path);
        break;
      }
      case 'installedTask':
        if (t.exists) installedTasks.set(id, { apiVersion: 'tekton.dev/v1', kind: 'Task', metadata: { name: id, namespace: NS }, spec: taskSpec(t.steps) });
        out['taskRef'] = { name: id };
        break;
      case 'inline':
        out['taskSpec'] = t.custom ? { apiVersion: 'example.dev/v1', kind: 'Custom', spec: { x: 1 } } : taskSpec(t.steps);
        break;
      case 'noNameRef':
        out['taskRef'] = { kind: 'Task' };
        break;
      case 'customRef':
        out['taskRef'] = { apiVersion: 'example.dev/v1', kind: 'Custom', name: 'c' };
        break;
      case 'clusterTask': {
        const name = `ct-${id}`;
        contents.set(`cluster:${name}`, resolved(stringify({ apiVersion: 'tekton.dev/v1', kind: 'Task', metadata: { name }, spec: taskSpec(t.steps) })));
        out['taskRef'] = { resolver: 'cluster', params: [{ name: 'kind', value: 'task' }, { name: 'name', value: name }, { name: 'namespace', value: NS }] };
        break;
      }
    }
    return out;
  };
  const spec: Record<string, unknown> = { params: [{ name: 'good' }, { name: 'evil' }], tasks: sc.tasks.map((p, i) => pipelineTask(p, i, 'task')) };
  if (sc.fin.length) spec['finally'] = sc.fin.map((p, i) => pipelineTask(p, i, 'finally'));
  return { spec, contents, installedTasks, params };
}

function resolved(content: string): Resolution {
  return { state: 'resolved', content, refSource: { uri: `git+${CATALOG}`, digest: { sha1: HEAD }, entryPoint: 'x' } };
}

const keyOf = (ref: RemoteRef): string => {
  const p = new Map(ref.params.map((x) => [x.name, x.value]));
  return ref.resolver === 'git' ? `git:${p.get('pathInRepo')}` : `${ref.resolver}:${p.get('name')}`;
};
const exactRefs = (l: RefLookup): RefAnswer => (l.url === CATALOG && l.ref === MAIN ? { state: 'found', commit: HEAD } : { state: 'absent', similar: [] });

function hasResolverKey(x: unknown): boolean {
  if (Array.isArray(x)) return x.some(hasResolverKey);
  if (typeof x !== 'object' || x === null) return false;
  return Object.entries(x).some(([k, v]) => k === 'resolver' || k === 'bundle' || hasResolverKey(v));
}

const REQ = { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name: 'r', namespace: 'team-a', uid: 'u-1' }, spec: { request: 'p' } } as unknown as InternalRequest;

test('closed world: what the walk lets through asks Tekton to resolve nothing; it refuses exactly what is outside the rules', () => {
  const positions = new Map<string, number>();
  const count = (k: string) => positions.set(k, (positions.get(k) ?? 0) + 1);
  let accepted = 0;
  let refused = 0;
  fc.assert(
    fc.property(scenario, (sc) => {
      const m = materialize(sc);
      const input: GraphInput = {
        spec: m.spec,
        origin: sc.origin,
        params: m.params,
        policy,
        namespace: 'team-a',
        controllerNamespace: NS,
        pipelineRunName: 'ir-u-1',
        pipelineName: 'p',
        lookup: (ref) => m.contents.get(keyOf(ref)),
        refs: exactRefs,
        installedTask: (name) => m.installedTasks.get(name),
      };
      const g = checkGraph(input);
      assert.notEqual(g.state, 'pending', 'every resolution was answered');
      for (const [section, list] of [['tasks', sc.tasks], ['finally', sc.fin]] as const) {
        for (const p of list) {
          count(`${section}:${p.task.k}`);
          count(`origin:${sc.origin}`);
          if (p.matrix) count('matrix');
          if (p.when) count('when');
          if ('custom' in p.task && p.task.custom) count(`${p.task.k}:custom`);
          if (p.task.k === 'installedTask' && !p.task.exists) count('installedTask:missing');
          for (const s of 'steps' in p.task ? p.task.steps : []) count(`step:${s.k}${'copy' in s && s.copy ? ':copy' : ''}${'literal' in s ? (s.literal ? ':literal' : ':fromParams') : ''}`);
        }
      }
      const expectBad = [...sc.tasks, ...sc.fin].some((p) => badTask(p.task));
      if (g.state === 'rejected') {
        refused++;
        assert.ok(expectBad, `refused though everything is allowed: ${g.message}`);
        assert.ok(g.message.length > 20);
        return;
      }
      assert.equal(g.state, 'ready');
      accepted++;
      assert.ok(!expectBad, `ran though something in it is outside the rules: ${JSON.stringify(sc)}`);
      const pipeline = { apiVersion: 'tekton.dev/v1', kind: 'Pipeline', metadata: { name: 'p', namespace: NS }, spec: m.spec } as unknown as Pipeline;
      const pr = buildPipelineRun(REQ, { pipeline: 'p' }, pipeline, { namespace: NS, volumeClaim: { name: 'workspace', size: '1Gi' }, params: m.params, ...(g.spec ? { pipelineSpec: g.spec } : {}), provenance: g.provenance });
      if (sc.origin === 'resolved') assert.ok(g.spec, 'a resolved Pipeline always runs embedded');
      const violations = closedWorldViolations(pr, {
        installedPipeline: (name) => (sc.origin === 'installed' && name === 'p' ? (pipeline as unknown as Record<string, unknown>) : undefined),
        installedTask: (name) => m.installedTasks.get(name),
        copies: new Set(g.stepActions.map((c) => c.metadata.name)),
        copyPrefix: STEPACTION_COPY_PREFIX,
      });
      assert.deepEqual(violations, [], JSON.stringify(pr.spec));
      if (g.spec) assert.ok(!hasResolverKey(pr.spec), 'no resolver or bundle anywhere in what Tekton gets');
    }),
    { numRuns, ...(process.env['FC_SEED'] ? { seed: Number(process.env['FC_SEED']) } : {}) },
  );
  const expected = [
    ...['tasks', 'finally'].flatMap((s) => ['gitTask', 'installedTask', 'inline', 'noNameRef', 'customRef', 'clusterTask'].map((k) => `${s}:${k}`)),
    'origin:installed', 'origin:resolved', 'matrix', 'when', 'gitTask:custom', 'inline:custom', 'installedTask:missing',
    'step:plain', 'step:git:literal', 'step:git:fromParams', 'step:installedStepAction', 'step:noName', 'step:copyByName', 'step:clusterStepAction', 'step:clusterStepAction:copy',
  ];
  const never = expected.filter((k) => !positions.get(k));
  console.log(`closed-world property: ${numRuns} Pipelines, ${accepted} ran (closed), ${refused} refused; positions covered: ${[...positions].map(([k, v]) => `${k}=${v}`).join(' ')}`);
  assert.deepEqual(never, [], 'every position occurred');
  assert.ok(accepted > 0 && refused > 0, `both outcomes happened (ran ${accepted}, refused ${refused})`);
});
