/**
 * The whole-graph check (src/tekton/graph.ts) and the way decide() drives it
 * through ResolutionRequests: substitution, policy, pinning, provenance.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { checkGraph, followReference, pin } from '../../src/tekton/graph.js';
import type { GraphInput, RemoteRef } from '../../src/tekton/graph-model.js';
import { substitute } from '../../src/tekton/substitution.js';
import { ANNOTATION_STEPACTION_SOURCE, LABEL_STEPACTION_COPY, stepActionCopyName } from '../../src/tekton/stepaction-copy.js';
import type { Resolution, ResolutionRequest } from '../../src/tekton/resolve.js';
import { refLookupKey, type RefAnswer, type RefLookup } from '../../src/policy/exact-ref.js';
import type { SourcePolicy } from '../../src/policy/source.js';
import { decide, type Action, type Observation } from '../../src/controller/decide.js';
import { resolutionFor, ANNOTATION_SOURCES } from '../../src/tekton/pipelinerun.js';
import type { InternalRequest } from '../../src/api/types.js';
import { assertPhase, config, NS, request, TODAYS_PAYLOAD, observation } from './fixtures.js';

const CATALOG = 'https://example.com/org/catalog.git';
/** The commit refs/heads/main of the catalog points at: the Pipeline, its Tasks and StepActions are read at it. */
const HEAD = '2'.repeat(40);
const SHA_P = HEAD;
const SHA_T = HEAD;
const SHA_S = HEAD;
const SRC = 'InternalServicesConfig internal-services/config';
/** What a bare "main" is passed on as: the branch, fully qualified. */
const MAIN = 'refs/heads/main';
const policy: SourcePolicy = { source: SRC, git: [{ urls: [CATALOG], revisions: ['main'], commits: { reachable: true }, paths: ['pipelines/**', 'tasks/**', 'stepactions/**'] }], bundles: [], cluster: false };

/** The exact refs of the catalog, as the repository answers a lookup. */
const exactRefs = (l: RefLookup): RefAnswer => (l.url === CATALOG && l.ref === MAIN ? { state: 'found', commit: HEAD } : { state: 'absent', similar: [] });
/** A catalog reference as it is resolved: at the commit refs/heads/main pointed at, that ref recorded beside it. */
const atHead = (pathInRepo: string): RemoteRef => ({ ...gitRef(CATALOG, HEAD, pathInRepo), forRef: MAIN });
const gitRef = (url: string, revision: string, pathInRepo: string) => ({ resolver: 'git', params: [{ name: 'url', value: url }, { name: 'revision', value: revision }, { name: 'pathInRepo', value: pathInRepo }] });

/** The shape of the real catalog's internal Pipelines: Tasks from git, at the URL and revision the request passes. */
function catalogPipeline(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    params: [{ name: 'image' }, { name: 'taskGitUrl' }, { name: 'taskGitRevision', default: 'main' }],
    tasks: [
      {
        name: 'sign',
        params: [{ name: 'image', value: '$(params.image)' }],
        taskRef: gitRef('$(params.taskGitUrl)', '$(params.taskGitRevision)', 'tasks/internal/sign/sign.yaml'),
      },
    ],
    finally: [{ name: 'notify', taskRef: gitRef('$(params.taskGitUrl)', '$(params.taskGitRevision)', 'tasks/internal/notify/notify.yaml') }],
    ...extra,
  };
}

const task = (steps: unknown[] = [{ name: 'sign', image: 'registry/sign' }], params: unknown[] = []) => stringify({ apiVersion: 'tekton.dev/v1', kind: 'Task', metadata: { name: 't' }, spec: { params, steps } });
const resolved = (content: string, sha: string, path: string): Resolution => ({ state: 'resolved', content, refSource: { uri: `git+${CATALOG}`, digest: { sha1: sha }, entryPoint: path } });

function input(over: Partial<GraphInput> & { contents?: Map<string, Resolution> } = {}): GraphInput {
  const contents = over.contents ?? new Map();
  return {
    spec: catalogPipeline(),
    origin: 'resolved',
    params: [
      { name: 'image', value: 'quay.io/org/app' },
      { name: 'taskGitUrl', value: CATALOG },
    ],
    policy,
    namespace: 'team-a',
    controllerNamespace: NS,
    pipelineRunName: 'ir-u-1',
    pipelineName: 'sign',
    lookup: (ref: RemoteRef) => contents.get(ref.params.find((p) => p.name === 'pathInRepo')?.value ?? ''),
    installedTask: () => undefined,
    refs: exactRefs,
    ...over,
  };
}

test('substitution: params, defaults, object keys, array items and context; what cannot be known is reported', () => {
  const vars = new Map<string, { value: string | string[] | Record<string, string>; from: string } | { dynamic: string }>([
    ['url', { value: 'https://x/y.git', from: 'param "url"' }],
    ['obj', { value: { rev: 'main' }, from: 'param "obj"' }],
    ['arr', { value: ['a', 'b'], from: 'param "arr"' }],
    ['dotted.name', { value: 'd', from: 'param "dotted.name"' }],
    ['evil', { value: '$(params.url)', from: 'param "evil"' }],
  ]);
  const ctx = new Map([['context.pipelineRun.namespace', 'internal-services']]);
  assert.deepEqual(substitute('$(params.url)', vars, ctx), { value: 'https://x/y.git', from: ['param "url"'], dynamic: [] });
  assert.equal(substitute("$(params['url'])@$(params.obj.rev)/$(params.arr[1])", vars, ctx).value, 'https://x/y.git@main/b');
  assert.equal(substitute('$(params.dotted.name)-$(params["dotted.name"])', vars, ctx).value, 'd-d');
  assert.equal(substitute('$(context.pipelineRun.namespace)', vars, ctx).value, 'internal-services');
  assert.deepEqual(substitute('$(tasks.a.results.url)', vars, ctx).dynamic, ['$(tasks.a.results.url)']);
  assert.deepEqual(substitute('$(params.nope)', vars, ctx).dynamic, ['$(params.nope) (no such param)']);
  assert.deepEqual(substitute('$(params.arr)', vars, ctx).dynamic, ['$(params.arr) (not a single string)']);
  // A requester's value that is itself an expression would be substituted again by Tekton.
  assert.match(substitute('$(params.evil)', vars, ctx).dynamic[0] ?? '', /holds an expression after substitution/);
});

test('a resolved Pipeline: every task reference is substituted, checked and resolved, and the Task checked runs embedded (Tekton resolves and reads nothing again)', () => {
  const first = checkGraph(input());
  assert.equal(first.state, 'pending');
  assert.deepEqual(
    first.state === 'pending' && first.need,
    [atHead('tasks/internal/sign/sign.yaml'), atHead('tasks/internal/notify/notify.yaml')],
    'both references asked for at once, with the params and defaults substituted, at the commit main points at (the ref recorded beside it)',
  );
  const contents = new Map([
    ['tasks/internal/sign/sign.yaml', resolved(task(), SHA_T, 'tasks/internal/sign/sign.yaml')],
    ['tasks/internal/notify/notify.yaml', resolved(task(), SHA_T, 'tasks/internal/notify/notify.yaml')],
  ]);
  const r = checkGraph(input({ contents }));
  assert.equal(r.state, 'ready');
  if (r.state !== 'ready') return;
  const tasks = r.spec?.['tasks'] as Array<{ taskRef?: unknown; taskSpec?: unknown; params: unknown }>;
  assert.equal(tasks[0]?.taskRef, undefined, 'no reference left for Tekton to resolve');
  assert.deepEqual(tasks[0]?.taskSpec, { params: [], steps: [{ name: 'sign', image: 'registry/sign' }] }, 'the Task as checked');
  assert.deepEqual(tasks[0]?.params, [{ name: 'image', value: '$(params.image)' }], 'everything else is left to Tekton');
  const fin = (r.spec?.['finally'] as Array<{ taskRef?: unknown; taskSpec?: unknown }>)[0];
  assert.equal(fin?.taskRef, undefined);
  assert.deepEqual(fin?.taskSpec, { params: [], steps: [{ name: 'sign', image: 'registry/sign' }] });
  assert.deepEqual(r.stepActions, [], 'no StepAction to copy');
  assert.deepEqual(r.provenance[0], { ref: 'tasks[sign].taskRef', resolver: 'git', source: `git+${CATALOG}`, path: 'tasks/internal/sign/sign.yaml', revision: MAIN, digest: `sha1:${SHA_T}` });
});

test('refusals name the reference, the params its values came from, and the rule', () => {
  const evil = checkGraph(input({ params: [{ name: 'image', value: 'x' }, { name: 'taskGitUrl', value: 'https://evil.example/tasks.git' }] }));
  assert.equal(evil.state, 'rejected');
  assert.equal(evil.state === 'rejected' && evil.code, 'REQUEST_SOURCE_NOT_ALLOWED');
  assert.match(
    evil.state === 'rejected' ? evil.message : '',
    /^tasks\[sign\]\.taskRef \(values from param "taskGitUrl", the default of param "taskGitRevision"\): git url "https:\/\/evil\.example\/tasks\.git" is not allowed by InternalServicesConfig internal-services\/config; allowed: "https:\/\/example\.com\/org\/catalog\.git" \(sources\.git\[0\]\)$/,
  );
  const rev = checkGraph(input({ params: [{ name: 'image', value: 'x' }, { name: 'taskGitUrl', value: CATALOG }, { name: 'taskGitRevision', value: 'my-branch' }] }));
  assert.match(rev.state === 'rejected' ? rev.message : '', /tasks\[sign\]\.taskRef \(values from param "taskGitUrl", param "taskGitRevision"\): .*sources\.git\[0\] allows branches "refs\/heads\/main", commits reachable from them, not branch "refs\/heads\/my-branch"/);

  const path = input({ spec: catalogPipeline({ tasks: [{ name: 'x', taskRef: gitRef('$(params.taskGitUrl)', 'main', 'secret/x.yaml') }] }) });
  assert.match((checkGraph(path) as { message: string }).message, /tasks\[x\]\.taskRef .*sources\.git\[0\] allows paths .*, not "secret\/x\.yaml"/);

  const fromResult = input({ spec: catalogPipeline({ tasks: [{ name: 'x', taskRef: gitRef('$(tasks.a.results.url)', 'main', 'tasks/x.yaml') }] }) });
  assert.match((checkGraph(fromResult) as { message: string }).message, /tasks\[x\]\.taskRef cannot be checked before the run, so it is refused: url: \$\(tasks\.a\.results\.url\)/);

  const hub = input({ spec: catalogPipeline({ tasks: [{ name: 'x', taskRef: { resolver: 'hub', params: [{ name: 'name', value: 'git-clone' }] } }] }) });
  assert.match((checkGraph(hub) as { message: string }).message, /tasks\[x\]\.taskRef: the "hub" resolver is not allowed by InternalServicesConfig/);

  const token = input({ spec: catalogPipeline({ tasks: [{ name: 'x', taskRef: { resolver: 'git', params: [...gitRef(CATALOG, MAIN, 'tasks/x.yaml').params, { name: 'token', value: 'ci-secret' }] } }] }) });
  assert.match((checkGraph(token) as { message: string }).message, /resolver params "token" are not accepted for the git resolver/);

  const nested = input({ spec: catalogPipeline({ tasks: [{ name: 'inner', pipelineRef: gitRef(CATALOG, MAIN, 'pipelines/x.yaml') }] }) });
  assert.match((checkGraph(nested) as { message: string }).message, /tasks\[inner\] is a nested Pipeline/);

  const custom = input({ spec: catalogPipeline({ tasks: [{ name: 'c', taskRef: { apiVersion: 'example.dev/v1', kind: 'Wait', name: 'w' } }] }) });
  assert.match((checkGraph(custom) as { message: string }).message, /only Tasks run here/);
});

test('a Task whose step refers to a StepAction through a resolver: checked, and the step refers to the copy of what was checked', () => {
  const steps = [{ name: 'clone', ref: gitRef('$(params.url)', '$(params.rev)', 'stepactions/clone.yaml') }, { name: 'run', image: 'x' }];
  const contents = new Map([
    ['tasks/internal/sign/sign.yaml', resolved(task(steps, [{ name: 'url' }, { name: 'rev', default: 'main' }]), SHA_T, 'tasks/internal/sign/sign.yaml')],
    ['tasks/internal/notify/notify.yaml', resolved(task(), SHA_T, 'tasks/internal/notify/notify.yaml')],
  ]);
  const spec = catalogPipeline();
  (spec['tasks'] as Array<Record<string, unknown>>)[0]!['params'] = [{ name: 'url', value: '$(params.taskGitUrl)' }];
  const pending = checkGraph(input({ spec, contents }));
  assert.deepEqual(pending.state === 'pending' && pending.need, [atHead('stepactions/clone.yaml')]);
  contents.set('stepactions/clone.yaml', resolved(stringify({ apiVersion: 'tekton.dev/v1beta1', kind: 'StepAction', metadata: { name: 'clone' }, spec: { image: 'git' } }), SHA_S, 'stepactions/clone.yaml'));
  const r = checkGraph(input({ spec, contents }));
  assert.equal(r.state, 'ready');
  const t0 = (r.state === 'ready' ? (r.spec?.['tasks'] as Array<Record<string, unknown>>) : [])[0]!;
  assert.equal(t0['taskRef'], undefined);
  const embedded = t0['taskSpec'] as { steps: Array<{ ref?: unknown }> };
  const copyName = stepActionCopyName({ image: 'git' });
  assert.match(copyName, /^is-stepaction-[0-9a-f]{32}$/);
  assert.deepEqual(embedded.steps[0]?.ref, { name: copyName }, 'a name, not a reference for Tekton to resolve');
  assert.equal(r.state === 'ready' && r.stepActions.length, 1);
  const copy = r.state === 'ready' ? r.stepActions[0]! : undefined;
  assert.deepEqual(copy && { name: copy.metadata.name, ns: copy.metadata.namespace, spec: copy.spec, label: copy.metadata.labels[LABEL_STEPACTION_COPY] }, { name: copyName, ns: NS, spec: { image: 'git' }, label: 'true' });
  assert.deepEqual(JSON.parse(copy?.metadata.annotations[ANNOTATION_STEPACTION_SOURCE] ?? '{}'), { source: `git+${CATALOG}`, path: 'stepactions/clone.yaml', revision: MAIN, digest: `sha1:${SHA_S}` });
  // The name is the content's: key order does not matter, a changed value does.
  assert.equal(stepActionCopyName({ image: 'git', script: 'x' }), stepActionCopyName({ script: 'x', image: 'git' }));
  assert.notEqual(stepActionCopyName({ image: 'git' }), stepActionCopyName({ image: 'git2' }));
  // Untrusted content may not name a copy directly (it was checked under another request's rules).
  const sneaky = new Map(contents);
  sneaky.set('tasks/internal/sign/sign.yaml', resolved(task([{ name: 'x', ref: { name: copyName } }]), SHA_T, 'tasks/internal/sign/sign.yaml'));
  assert.match((checkGraph(input({ spec, contents: sneaky })) as { message: string }).message, /^tasks\[sign\]\.steps\[x\]\.ref names "is-stepaction-[0-9a-f]{32}", a copy the controller made/);
  assert.deepEqual(r.state === 'ready' && r.provenance.map((p) => [p.ref, p.digest]), [
    ['tasks[sign].taskRef', `sha1:${SHA_T}`],
    ['tasks[sign].steps[clone].ref', `sha1:${SHA_S}`],
    ['finally[notify].taskRef', `sha1:${SHA_T}`],
  ]);
  // a step reference to a source the policy does not allow
  contents.delete('stepactions/clone.yaml');
  const bad = catalogPipeline();
  (bad['tasks'] as Array<Record<string, unknown>>)[0]!['params'] = [{ name: 'url', value: 'https://evil.example/x.git' }];
  assert.match((checkGraph(input({ spec: bad, contents })) as { message: string }).message, /^tasks\[sign\]\.steps\[clone\]\.ref \(values from task "sign" param "url", the default of param "rev" of task "sign"\): git url "https:\/\/evil\.example\/x\.git" is not allowed/);
});

test('installed Pipelines: the administrators\' literal references are checked, pinned and embedded like any other; references built from request params too', () => {
  // A literal reference to a source no rule allows: refused, telling the administrator what to write.
  const unlisted = { tasks: [{ name: 'a', taskRef: gitRef('https://anywhere.example/x.git', 'main', 'a.yaml') }] };
  const r = checkGraph(input({ spec: unlisted, origin: 'installed', pipelineName: 'release' }));
  assert.equal(r.state, 'rejected');
  assert.match((r as { message: string }).message, /tasks\[a\]\.taskRef: git url "https:\/\/anywhere\.example\/x\.git" is not allowed.*a reference written in the installed Pipeline "release".*sources of the InternalServicesConfig/);
  // A literal reference to an allowed source: looked up exactly, resolved at that commit, embedded, recorded.
  const allowedLiteral = { tasks: [{ name: 'a', taskRef: gitRef(CATALOG, 'main', 'tasks/a.yaml') }, { name: 'b', taskRef: { name: 'installed-task' } }] };
  const installed = { spec: { steps: [{ name: 's', image: 'x' }] } };
  const pending = checkGraph(input({ spec: allowedLiteral, origin: 'installed', installedTask: (n) => (n === 'installed-task' ? installed : undefined) }));
  assert.deepEqual(pending, { state: 'pending', need: [atHead('tasks/a.yaml')], checks: [], lookups: [], pathChecks: [] }, 'the literal revision "main" goes through the exact lookup, never git\'s guessing');
  const ready = checkGraph(input({ spec: allowedLiteral, origin: 'installed', installedTask: (n) => (n === 'installed-task' ? installed : undefined), contents: new Map([['tasks/a.yaml', resolved(task(), SHA_T, 'tasks/a.yaml')]]) }));
  assert.equal(ready.state, 'ready');
  const spec = (ready as unknown as { spec: { tasks: Array<Record<string, unknown>> } }).spec;
  assert.ok(spec, 'the Pipeline runs embedded once anything in it was pinned');
  assert.equal(spec.tasks[0]!['taskRef'], undefined);
  assert.deepEqual((spec.tasks[0]!['taskSpec'] as { steps: unknown[] }).steps, [{ name: 'sign', image: 'registry/sign' }]);
  assert.deepEqual(spec.tasks[1]!['taskRef'], { name: 'installed-task' }, 'an installed Task with nothing to resolve stays by name');
  assert.deepEqual((ready as { provenance: Array<{ ref: string; revision?: string; digest?: string }> }).provenance.map((p) => [p.ref, p.revision, p.digest]), [['tasks[a].taskRef', MAIN, `sha1:${SHA_T}`]]);
  // A Task that is not installed is refused before anything is made.
  const missing = checkGraph(input({ spec: { tasks: [{ name: 'b', taskRef: { name: 'not-there' } }] }, origin: 'installed' }));
  assert.equal(missing.state === 'rejected' && missing.code, 'REQUEST_PIPELINE_NOT_FOUND');
  assert.match((missing as { message: string }).message, /tasks\[b\]\.taskRef names Task "not-there", which is not installed/);
  // Nothing to pin at all: the installed Pipeline runs by name.
  const plain = checkGraph(input({ spec: { tasks: [{ name: 'b', taskRef: { name: 'installed-task' } }] }, origin: 'installed', installedTask: () => installed }));
  assert.deepEqual(plain, { state: 'ready', spec: undefined, provenance: [], stepActions: [] });
  const fromParams = checkGraph(input({ origin: 'installed', params: [{ name: 'image', value: 'x' }, { name: 'taskGitUrl', value: 'https://evil.example/x.git' }] }));
  assert.match((fromParams as { message: string }).message, /tasks\[sign\]\.taskRef \(values from param "taskGitUrl".*is not allowed/);
  // an installed Task whose step ref takes its source from a param the Pipeline passes on
  const installedTask = { spec: { params: [{ name: 'src' }], steps: [{ name: 's', ref: gitRef('$(params.src)', 'main', 'stepactions/a.yaml') }] } };
  const viaTask = checkGraph(input({ origin: 'installed', spec: { params: [{ name: 'src' }], tasks: [{ name: 't', params: [{ name: 'src', value: '$(params.src)' }], taskRef: { name: 'tool' } }] }, params: [{ name: 'src', value: 'https://evil.example/y.git' }], installedTask: (n) => (n === 'tool' ? installedTask : undefined) }));
  assert.match((viaTask as { message: string }).message, /tasks\[t\]\.steps\[s\]\.ref \(values from task "t" param "src" ← param "src"\): git url "https:\/\/evil\.example\/y\.git" is not allowed/);
});

test('pinning: git to the commit, bundles to the digest; a resolution without one cannot be pinned', () => {
  const bundle = { resolver: 'bundles', params: [{ name: 'bundle', value: 'quay.io/org/catalog/sign:v1' }, { name: 'name', value: 'sign' }, { name: 'kind', value: 'task' }] };
  const d = 'f'.repeat(64);
  assert.deepEqual(pin(bundle, { state: 'resolved', content: '', refSource: { uri: 'quay.io/org/catalog/sign', digest: { sha256: d }, entryPoint: 'sign' } }), {
    params: [{ name: 'bundle', value: `quay.io/org/catalog/sign@sha256:${d}` }, { name: 'name', value: 'sign' }, { name: 'kind', value: 'task' }],
  });
  assert.deepEqual(pin(gitRef(CATALOG, MAIN, 'a.yaml'), { state: 'resolved', content: '', refSource: undefined }), { error: 'the git resolver reported no commit, so the reference cannot be pinned' });
});

// --- decide() driving the resolutions --------------------------------------------

const todays = (): InternalRequest => ({ ...request(), spec: structuredClone(TODAYS_PAYLOAD) }) as unknown as InternalRequest;
const allowed = () => config({ allowList: ['team-a'], allowedGitResolverURLs: [CATALOG], sources: { resolutionTimeout: '30s' } });
const pipelineYaml = stringify({ apiVersion: 'tekton.dev/v1', kind: 'Pipeline', metadata: { name: 'sign' }, spec: { ...catalogPipeline(), params: [{ name: 'image' }, { name: 'taskGitUrl' }, { name: 'taskGitRevision' }] } });

/** A ResolutionRequest as Tekton's resolver leaves it: answered, or not (yet). */
function answered(req: InternalRequest, asked: RemoteRef, content: string | undefined, sha: string, created = '2026-11-22T09:59:58Z', failed?: string): ResolutionRequest {
  // What is resolved is the commit main points at, never the name.
  const byBranch = asked.params.some((p) => p.name === 'revision' && p.value === MAIN);
  const ref = byBranch ? { ...asked, params: asked.params.map((p) => (p.name === 'revision' ? { ...p, value: HEAD } : p)), forRef: MAIN } : asked;
  const rr = resolutionFor(req, ref, NS);
  rr.metadata!.creationTimestamp = created;
  const path = ref.params.find((p) => p.name === 'pathInRepo')?.value ?? '';
  if (failed) rr.status = { conditions: [{ type: 'Succeeded', status: 'False', reason: 'ResolutionFailed', message: failed }] };
  else if (content !== undefined) rr.status = { data: Buffer.from(content).toString('base64'), refSource: { uri: `git+${CATALOG}`, digest: { sha1: sha }, entryPoint: path }, conditions: [{ type: 'Succeeded', status: 'True' }] };
  return rr;
}
const observe = (o: Partial<Observation>): Observation => observation(o, { request: todays(), config: allowed(), pipeline: undefined, refs: new Map([[refLookupKey({ url: CATALOG, ref: MAIN }), { state: 'found', commit: HEAD }]]) });
const types = (a: Action[]) => a.map((x) => x.type);

test('decide: resolve the Pipeline, then its Tasks, then run the checked graph and record what ran; the ResolutionRequests go', () => {
  const req = todays();
  const pRef = gitRef(CATALOG, MAIN, 'pipelines/internal/sign/sign.yaml');
  // First the exact ref is looked up in the repository; nothing is resolved by name.
  const a0 = decide(observe({ request: req, refs: new Map() }));
  assert.deepEqual(types(a0), ['lookUpRef', 'writeStatus', 'requeueAfter']);
  assert.deepEqual((a0[0] as Extract<Action, { type: 'lookUpRef' }>).lookup, { url: CATALOG, ref: MAIN });
  assert.match((a0[1] as Extract<Action, { type: 'writeStatus' }>).status.conditions?.[1]?.message ?? '', /looking up refs\/heads\/main in https:\/\/example\.com\/org\/catalog\.git/);
  const a1 = decide(observe({ request: req }));
  assert.deepEqual(types(a1), ['startResolution', 'writeStatus', 'requeueAfter']);
  const start = a1[0] as Extract<Action, { type: 'startResolution' }>;
  assert.deepEqual(start.resolution.spec?.params, gitRef(CATALOG, HEAD, 'pipelines/internal/sign/sign.yaml').params, 'the resolver is given the commit');
  assert.equal(start.resolution.metadata?.labels?.['resolution.tekton.dev/type'], 'git');
  const w = a1[1] as Extract<Action, { type: 'writeStatus' }>;
  assertPhase(w.status, 'Resolving');
  assert.equal(w.status.conditions?.[0]?.status, 'Unknown');
  assert.equal((a1[2] as { ms: number }).ms, 30_250, 'looks again by the deadline');

  const rrP = answered(req, pRef, pipelineYaml, SHA_P);
  const a2 = decide(observe({ request: req, resolutions: [rrP] }));
  assert.deepEqual(types(a2), ['startResolution', 'startResolution', 'writeStatus', 'requeueAfter']);

  const rrT1 = answered(req, gitRef(CATALOG, MAIN, 'tasks/internal/sign/sign.yaml'), task(), SHA_T);
  const rrT2 = answered(req, gitRef(CATALOG, MAIN, 'tasks/internal/notify/notify.yaml'), task(), SHA_T);
  const a3 = decide(observe({ request: req, resolutions: [rrP, rrT1, rrT2] }));
  assert.deepEqual(types(a3), ['createPipelineRun', 'writeStatus', 'deleteResolution', 'deleteResolution', 'deleteResolution']);
  const pr = (a3[0] as Extract<Action, { type: 'createPipelineRun' }>).pipelineRun;
  assert.equal(pr.spec.pipelineRef, undefined, 'the checked spec is embedded, not fetched again');
  const tasks = pr.spec.pipelineSpec?.['tasks'] as Array<{ taskRef?: unknown; taskSpec?: unknown }>;
  assert.equal(tasks[0]?.taskRef, undefined);
  assert.deepEqual(tasks[0]?.taskSpec, { params: [], steps: [{ name: 'sign', image: 'registry/sign' }] }, 'the Task runs as checked');
  assert.deepEqual(pr.spec.params?.map((p) => p.name), ['image', 'taskGitRevision', 'taskGitUrl']);
  assert.deepEqual(pr.spec.timeouts, TODAYS_PAYLOAD.timeouts);
  assert.ok(pr.metadata.annotations?.[ANNOTATION_SOURCES]);
  const st = (a3[1] as Extract<Action, { type: 'writeStatus' }>).status;
  assert.equal(st.conditions?.[0]?.reason, 'Running');
  assert.deepEqual(st.pipeline, {
    resolver: 'git',
    source: `git+${CATALOG}`,
    path: 'pipelines/internal/sign/sign.yaml',
    revision: MAIN,
    digest: `sha1:${SHA_P}`,
    references: [
      { ref: 'tasks[sign].taskRef', resolver: 'git', source: `git+${CATALOG}`, path: 'tasks/internal/sign/sign.yaml', revision: MAIN, digest: `sha1:${SHA_T}` },
      { ref: 'finally[notify].taskRef', resolver: 'git', source: `git+${CATALOG}`, path: 'tasks/internal/notify/notify.yaml', revision: MAIN, digest: `sha1:${SHA_T}` },
    ],
  });
});

test('decide: a branch that moves while the request is undecided changes nothing: its ResolutionRequests keep the commit the ref was looked up at', () => {
  const req = todays();
  const at = (path: string) => answered(req, gitRef(CATALOG, MAIN, path), path.startsWith('pipelines/') ? pipelineYaml : task(), HEAD);
  const rrs = [at('pipelines/internal/sign/sign.yaml'), at('tasks/internal/sign/sign.yaml'), at('tasks/internal/notify/notify.yaml')];
  assert.equal(rrs[0]!.metadata?.annotations?.['internal-services.dev/git-ref'], MAIN, 'the exact ref is recorded on the ResolutionRequest');
  // main has moved on (a new lookup would say so), but this request already read it at HEAD.
  const moved = new Map([[refLookupKey({ url: CATALOG, ref: MAIN }), { state: 'found' as const, commit: '9'.repeat(40) }]]);
  const a = decide(observe({ request: req, resolutions: rrs, refs: moved }));
  assert.deepEqual(types(a), ['createPipelineRun', 'writeStatus', 'deleteResolution', 'deleteResolution', 'deleteResolution']);
  const st = (a[1] as Extract<Action, { type: 'writeStatus' }>).status;
  assert.equal(st.pipeline?.digest, `sha1:${HEAD}`);
  // A request with nothing resolved yet reads main where it is now.
  const fresh = decide(observe({ request: todays(), refs: moved }));
  assert.equal((fresh[0] as Extract<Action, { type: 'startResolution' }>).resolution.spec?.params?.find((p) => p.name === 'revision')?.value, '9'.repeat(40));
});

test('decide: a failed or unanswered resolution Rejects the request with the resolver\'s message; params are checked against the resolved Pipeline', () => {
  const req = todays();
  const pRef = gitRef(CATALOG, MAIN, 'pipelines/internal/sign/sign.yaml');
  const failed = decide(observe({ request: req, resolutions: [answered(req, pRef, undefined, '', undefined, 'error opening file "pipelines/internal/sign/sign.yaml": file does not exist')] }));
  assert.deepEqual(types(failed), ['writeStatus', 'deleteResolution']);
  const w = failed[0] as Extract<Action, { type: 'writeStatus' }>;
  assert.equal(w.code, 'REQUEST_RESOLUTION_FAILED');
  assert.equal(w.status.conditions?.[0]?.reason, 'Rejected');
  assert.match(w.status.conditions?.[0]?.message ?? '', /^spec\.pipeline\.pipelineRef: resolving it with the git resolver failed: error opening file/);

  const silent = decide(observe({ request: req, resolutions: [answered(req, pRef, undefined, '', '2026-11-22T09:59:00Z')] }));
  assert.match((silent[0] as Extract<Action, { type: 'writeStatus' }>).status.conditions?.[0]?.message ?? '', /did not answer within 30 s/);

  const undeclared = { ...req, spec: { ...req.spec, params: { ...req.spec.params, extra: 'x' } } } as InternalRequest;
  const p = decide(observe({ request: undeclared, resolutions: [answered(undeclared, pRef, pipelineYaml, SHA_P)] }));
  assert.equal((p[0] as Extract<Action, { type: 'writeStatus' }>).code, 'REQUEST_PARAMS_INVALID');
  assert.match((p[0] as Extract<Action, { type: 'writeStatus' }>).status.conditions?.[0]?.message ?? '', /undeclared params: "extra"/);

  const notAPipeline = decide(observe({ request: req, resolutions: [answered(req, pRef, task(), SHA_P)] }));
  assert.match((notAPipeline[0] as Extract<Action, { type: 'writeStatus' }>).status.conditions?.[0]?.message ?? '', /the resolved file is a "Task", not a Pipeline/);

  const elsewhere = { ...req, spec: { ...req.spec, pipeline: { pipelineRef: gitRef('https://evil.example/p.git', 'main', 'p.yaml') } } } as unknown as InternalRequest;
  const refused = decide(observe({ request: elsewhere }));
  assert.equal((refused[0] as Extract<Action, { type: 'writeStatus' }>).code, 'REQUEST_SOURCE_NOT_ALLOWED');
  assert.match((refused[0] as Extract<Action, { type: 'writeStatus' }>).status.conditions?.[0]?.message ?? '', /^spec\.pipeline\.pipelineRef: git url "https:\/\/evil\.example\/p\.git" is not allowed by InternalServicesConfig internal-services\/config; allowed: "https:\/\/example\.com\/org\/catalog\.git" \(allowedGitResolverURLs\)$/);
});

test('decide: ResolutionRequests of a deleted request, or of one already running, are removed', () => {
  const req = todays();
  const rr = answered(req, gitRef(CATALOG, MAIN, 'x.yaml'), undefined, '');
  assert.deepEqual(types(decide(observe({ request: undefined, resolutions: [rr] }))), ['deleteResolution']);
});

test('what was checked is what runs: an uncanonical spelling is resolved, pinned and recorded in its canonical form; hostile values from params are refused naming the param', () => {
  const spelled = 'HTTPS://Example.com:443/org/catalog.git/';
  const byCommit = [{ name: 'image', value: 'x' }, { name: 'taskGitUrl', value: spelled }, { name: 'taskGitRevision', value: SHA_T.toUpperCase() }];
  // A commit by SHA: first looked for in the repository, from the refs the rule names; nothing is resolved before.
  const check = { url: CATALOG, commit: SHA_T, refs: [MAIN], rules: ['sources.git[0]'] };
  const unchecked = checkGraph(input({ params: byCommit }));
  assert.deepEqual(unchecked.state === 'pending' && [unchecked.need, unchecked.checks], [[], [check, check]], 'a check per reference, no resolution yet');
  const asked: unknown[] = [];
  const waiting = checkGraph(input({ params: byCommit, commits: (c) => (asked.push(c), { state: 'pending' }) }));
  assert.deepEqual(waiting.state === 'pending' && [waiting.need, waiting.checks], [[], []], 'a check under way: nothing more to start');
  assert.equal(asked.length, 2);
  const gone = checkGraph(input({ params: byCommit, commits: () => ({ state: 'unreachable', refs: [MAIN] }) }));
  assert.equal(gone.state, 'rejected');
  assert.equal(gone.state === 'rejected' && gone.code, 'REQUEST_SOURCE_NOT_ALLOWED');
  assert.match(gone.state === 'rejected' ? gone.message : '', /^tasks\[sign\]\.taskRef \(values from param "taskGitUrl", param "taskGitRevision"\): commit "2{40}" is not reachable from "refs\/heads\/main" of "https:\/\/example\.com\/org\/catalog\.git", which sources\.git\[0\] allows commits from; it was looked for in the refs "refs\/heads\/main" as the repository shows them now/);
  const broken = checkGraph(input({ params: byCommit, commits: () => ({ state: 'failed', message: 'fetching it failed: connection refused' }) }));
  assert.equal(broken.state === 'rejected' && broken.code, 'REQUEST_RESOLUTION_FAILED');
  assert.match(broken.state === 'rejected' ? broken.message : '', /could not be checked against .*: fetching it failed: connection refused; nothing was resolved or run/);
  const reachable = () => ({ state: 'reachable' as const, ref: MAIN });
  const first = checkGraph(input({ params: byCommit, commits: reachable }));
  assert.deepEqual(first.state === 'pending' && first.need, [gitRef(CATALOG, SHA_T, 'tasks/internal/sign/sign.yaml'), gitRef(CATALOG, SHA_T, 'tasks/internal/notify/notify.yaml')], 'the canonical reference is the one resolved');
  const contentsBySha = new Map([
    ['tasks/internal/sign/sign.yaml', resolved(task(), SHA_T, 'tasks/internal/sign/sign.yaml')],
    ['tasks/internal/notify/notify.yaml', resolved(task(), SHA_T, 'tasks/internal/notify/notify.yaml')],
  ]);
  const ran = checkGraph(input({ contents: contentsBySha, params: byCommit, commits: reachable }));
  assert.deepEqual(ran.state === 'ready' && ran.provenance[0], { ref: 'tasks[sign].taskRef', resolver: 'git', source: `git+${CATALOG}`, path: 'tasks/internal/sign/sign.yaml', revision: SHA_T, digest: `sha1:${SHA_T}`, reachableFrom: MAIN }, 'the ref it was found on is recorded');
  const contents = new Map([
    ['tasks/internal/sign/sign.yaml', resolved(task(), SHA_T, 'tasks/internal/sign/sign.yaml')],
    ['tasks/internal/notify/notify.yaml', resolved(task(), SHA_T, 'tasks/internal/notify/notify.yaml')],
  ]);
  const r = checkGraph(input({ contents, params: [{ name: 'image', value: 'x' }, { name: 'taskGitUrl', value: spelled }] }));
  assert.equal(r.state, 'ready');
  assert.deepEqual(r.state === 'ready' && r.provenance[0], { ref: 'tasks[sign].taskRef', resolver: 'git', source: `git+${CATALOG}`, path: 'tasks/internal/sign/sign.yaml', revision: MAIN, digest: `sha1:${SHA_T}` }, 'resolved and recorded in canonical form');
  for (const [params, why] of [
    [{ taskGitRevision: '--upload-pack=touch /tmp/pwned' }, /^tasks\[sign\]\.taskRef \(values from param "taskGitUrl", param "taskGitRevision"\): git param "revision" "--upload-pack=touch \/tmp\/pwned" begins with "-".* before sources\.git\[0\] is applied/],
    [{ taskGitUrl: 'https://example.com/org/catalog.git/../../evil/x.git' }, /^tasks\[sign\]\.taskRef \(values from param "taskGitUrl".*\): git param "url" .* has a "\.\." path segment/],
    [{ taskGitUrl: 'ext::sh -c touch% /tmp/pwned' }, /git param "url" .*: refused by InternalServicesConfig internal-services\/config before any sources\.git rule is applied/],
  ] as const) {
    const g = checkGraph(input({ params: [{ name: 'image', value: 'x' }, { name: 'taskGitUrl', value: CATALOG }, ...Object.entries(params).map(([name, value]) => ({ name, value }))] }));
    assert.equal(g.state, 'rejected');
    assert.match(g.state === 'rejected' ? g.message : '', why);
  }
  const climbing = input({ spec: catalogPipeline({ tasks: [{ name: 'x', taskRef: gitRef('$(params.taskGitUrl)', 'main', 'tasks/../secret/x.yaml') }] }) });
  assert.match((checkGraph(climbing) as { message: string }).message, /^tasks\[x\]\.taskRef \(values from param "taskGitUrl"\): git param "pathInRepo" "tasks\/\.\.\/secret\/x\.yaml" has a "\.\." segment/);
});

test('decide: the pipelineRef\'s ResolutionRequest carries the canonical params, never the spelling sent', () => {
  const req = todays();
  (req.spec.pipeline!.pipelineRef!.params as Array<{ name: string; value: string }>)[0]!.value = 'https://EXAMPLE.com/org/catalog.git/';
  const a = decide(observe({ request: req }));
  const start = a[0] as Extract<Action, { type: 'startResolution' }>;
  assert.equal(start.type, 'startResolution');
  assert.deepEqual(start.resolution.spec?.params, gitRef(CATALOG, HEAD, 'pipelines/internal/sign/sign.yaml').params);
  (req.spec.pipeline!.pipelineRef!.params as Array<{ name: string; value: string }>)[2]!.value = 'pipelines/internal/sign/../../../../../etc/passwd';
  const refused = decide(observe({ request: req }));
  assert.deepEqual(types(refused), ['writeStatus'], 'refused before any ResolutionRequest');
  assert.match((refused[0] as Extract<Action, { type: 'writeStatus' }>).status.conditions?.[0]?.message ?? '', /^spec\.pipeline\.pipelineRef: git param "pathInRepo" .* has a "\.\." segment.*before allowedGitResolverURLs is applied/);
});

test('decide: on a Tekton with a known advisory and --refuse-resolvers-on-advisory, every resolver reference is refused before anything is resolved', () => {
  const why = 'resolver references are refused: Tekton Pipelines v1.6.0 on the internal cluster has known advisories in its resolvers (GHSA-j5q5-j9gm-2w5c/CVE-2026-33211)';
  const a = decide(observe({ request: todays(), resolversRefused: why }));
  assert.deepEqual(types(a), ['writeStatus']);
  const w = a[0] as Extract<Action, { type: 'writeStatus' }>;
  assert.equal(w.status.conditions?.[0]?.reason, 'Rejected');
  assert.equal(w.code, 'REQUEST_SOURCE_NOT_ALLOWED');
  assert.equal(w.status.conditions?.[0]?.message, `spec.pipeline.pipelineRef: ${why}`);
  // A Task reference built from params in a resolved Pipeline: refused the same way, before its resolution.
  const g = checkGraph(input({ resolversRefused: why }));
  assert.equal(g.state, 'rejected');
  assert.equal(g.state === 'rejected' && g.message, `tasks[sign].taskRef (values from param "taskGitUrl", the default of param "taskGitRevision"): ${why}`);
  // Without the switch's message, the same request resolves as usual.
  assert.deepEqual(types(decide(observe({ request: todays() }))), ['startResolution', 'writeStatus', 'requeueAfter']);
});

test('signatures: where the rule asks, every resolved resource is verified over the content that runs, and the key recorded', async () => {
  const { generateKeyPairSync, sign } = await import('node:crypto');
  const { tektonChecksum } = await import('../../src/policy/trusted.js');
  const { parse } = await import('yaml');
  const ours = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const theirs = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const pem = (k: typeof ours) => k.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const signed = (yamlText: string, key: typeof ours): string => {
    const obj = parse(yamlText) as Record<string, unknown>;
    const sum = tektonChecksum(obj);
    assert.ok(Buffer.isBuffer(sum), JSON.stringify(sum));
    const md = obj['metadata'] as Record<string, unknown>;
    md['annotations'] = { ...((md['annotations'] as object) ?? {}), 'tekton.dev/signature': sign('sha256', sum, key.privateKey).toString('base64') };
    return stringify(obj);
  };
  const rule = { urls: [CATALOG], revisions: ['main'], paths: ['tasks/**', 'pipelines/**'], signatures: { authorities: [{ name: 'release-key', key: { data: pem(ours) } }] } };
  const signedPolicy: SourcePolicy = { ...policy, git: [rule] };
  const contents = (sign: string, notify: string) =>
    new Map([
      ['tasks/internal/sign/sign.yaml', resolved(sign, SHA_T, 'tasks/internal/sign/sign.yaml')],
      ['tasks/internal/notify/notify.yaml', resolved(notify, SHA_T, 'tasks/internal/notify/notify.yaml')],
    ]);
  const good = signed(task(), ours);
  const ok = checkGraph(input({ policy: signedPolicy, contents: contents(good, good) }));
  assert.equal(ok.state, 'ready');
  assert.deepEqual(ok.state === 'ready' && ok.provenance.map((p) => [p.ref, p.signedBy]), [['tasks[sign].taskRef', 'release-key'], ['finally[notify].taskRef', 'release-key']]);
  const refused = (c: Map<string, Resolution>) => {
    const g = checkGraph(input({ policy: signedPolicy, contents: c }));
    assert.equal(g.state, 'rejected');
    assert.equal(g.state === 'rejected' && g.code, 'REQUEST_SIGNATURE_INVALID');
    return g.state === 'rejected' ? g.message : '';
  };
  assert.match(refused(contents(task(), good)), /^tasks\[sign\]\.taskRef \(values from param "taskGitUrl", the default of param "taskGitRevision"\): the resolved Task "t" is not signed \(no tekton\.dev\/signature annotation\), and sources\.git\[0\] requires a signature by one of the keys "release-key"; nothing ran$/);
  assert.match(refused(contents(good, signed(task(), theirs))), /^finally\[notify\]\.taskRef \([^)]*\): the resolved Task "t" does not verify against the keys "release-key" that sources\.git\[0\] requires \(.*\): it was changed after it was signed, or signed with another key; nothing ran$/);
  const tampered = good.replace('registry/sign', 'registry/evil');
  assert.notEqual(tampered, good);
  assert.match(refused(contents(tampered, good)), /^tasks\[sign\]\.taskRef \([^)]*\): the resolved Task "t" does not verify/);
  // YAML key order is not content: the same Task written in another order still verifies.
  const reordered = stringify(Object.fromEntries(Object.entries(parse(good) as Record<string, unknown>).reverse()));
  assert.notEqual(reordered, good);
  assert.equal(checkGraph(input({ policy: signedPolicy, contents: contents(reordered, good) })).state, 'ready');
  // A rule without signatures does not look.
  assert.equal(checkGraph(input({ contents: contents(task(), task()) })).state, 'ready');
  // A key that cannot be used makes the rule unusable (it grants nothing).
  const broken = checkGraph(input({ policy: { ...policy, git: [{ ...rule, signatures: { authorities: [{ name: 'k', key: { data: 'not a key' } }] } }] } }));
  assert.equal(broken.state, 'rejected');
  assert.match(broken.state === 'rejected' ? broken.message : '', /sources\.git\[0\] is unusable and grants nothing \(signatures\.authorities\[0\] \("k"\): not a PEM public key/);
});

test("the cluster resolver in the Go controller's shape (name only): namespace and kind are written out by position before anything is checked or resolved", () => {
  const asked: RemoteRef[] = [];
  const ctx = { ...input({ policy: { ...policy, cluster: true } }), lookup: (ref: RemoteRef) => void asked.push(ref) as undefined };
  const v = followReference(ctx, 'spec.pipeline.pipelineRef', { resolver: 'cluster', params: [{ name: 'name', value: 'plain' }] }, [], ['Pipeline']);
  assert.equal(v.kind, 'need');
  assert.deepEqual((v as { ref: RemoteRef }).ref.params, [{ name: 'kind', value: 'pipeline' }, { name: 'name', value: 'plain' }, { name: 'namespace', value: NS }]);
  const t = followReference(ctx, 'tasks[a].taskRef', { resolver: 'cluster', params: [{ name: 'name', value: 't' }] }, [], ['Task']);
  assert.deepEqual((t as { ref: RemoteRef }).ref.params.find((p) => p.name === 'kind'), { name: 'kind', value: 'task' });
  // Given, they are checked as given: another namespace is still refused.
  const elsewhere = followReference(ctx, 'spec.pipeline.pipelineRef', { resolver: 'cluster', params: [{ name: 'name', value: 'plain' }, { name: 'namespace', value: 'default' }] }, [], ['Pipeline']);
  assert.equal(elsewhere.kind, 'refused');
});
