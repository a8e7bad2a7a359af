/**
 * The path check in the graph (src/tekton/graph.ts, followReference) and in
 * decide(): a git reference's pathInRepo is checked at the commit to be
 * resolved — after the exact ref is looked up (or the commit found
 * reachable), before anything is resolved — for the pipelineRef, the Tasks
 * and the StepActions of Tasks; a symbolic link or submodule at any depth is
 * refused with nothing resolved. Without a `paths` answer function (tests of
 * other rules) nothing is checked.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { checkGraph } from '../../src/tekton/graph.js';
import type { GraphInput, RemoteRef } from '../../src/tekton/graph-model.js';
import type { Resolution } from '../../src/tekton/resolve.js';
import { refLookupKey, type RefLookup, type RefAnswer } from '../../src/policy/exact-ref.js';
import { pathCheckKey, type PathAnswer, type PathCheck } from '../../src/policy/path-check.js';
import type { SourcePolicy } from '../../src/policy/source.js';
import { decide, type Action, type Observation } from '../../src/controller/decide.js';
import { resolutionFor } from '../../src/tekton/pipelinerun.js';
import type { InternalRequest } from '../../src/api/types.js';
import { config, NS, observation, request, TODAYS_PAYLOAD } from './fixtures.js';

const CATALOG = 'https://example.com/org/catalog.git';
const HEAD = '3'.repeat(40);
const REVIEWED = '4'.repeat(40);
const MAIN = 'refs/heads/main';
const policy: SourcePolicy = { source: 'InternalServicesConfig internal-services/config', git: [{ urls: [CATALOG], revisions: ['main'], commits: { reachable: true }, paths: ['pipelines/**', 'tasks/**', 'stepactions/**'] }], bundles: [], cluster: false };
const gitRef = (url: string, revision: string, pathInRepo: string): RemoteRef => ({ resolver: 'git', params: [{ name: 'url', value: url }, { name: 'revision', value: revision }, { name: 'pathInRepo', value: pathInRepo }] });
const refs = (l: RefLookup): RefAnswer => (l.url === CATALOG && l.ref === MAIN ? { state: 'found', commit: HEAD } : { state: 'absent', similar: [] });
const at = (path: string, commit = HEAD): PathCheck => ({ url: CATALOG, commit, path });
const pathOf = (ref: RemoteRef) => ref.params.find((p) => p.name === 'pathInRepo')?.value ?? '';
const taskYaml = (steps: unknown[] = [{ name: 's', image: 'registry/s' }]) => stringify({ apiVersion: 'tekton.dev/v1', kind: 'Task', metadata: { name: 't' }, spec: { steps } });
const resolved = (content: string, path: string, sha = HEAD): Resolution => ({ state: 'resolved', content, refSource: { uri: `git+${CATALOG}`, digest: { sha1: sha }, entryPoint: path } });

const spec = {
  params: [{ name: 'taskGitUrl' }, { name: 'taskGitRevision', default: 'main' }],
  tasks: [{ name: 'sign', taskRef: gitRef('$(params.taskGitUrl)', '$(params.taskGitRevision)', 'tasks/sign/sign.yaml') }],
  finally: [{ name: 'notify', taskRef: gitRef('$(params.taskGitUrl)', '$(params.taskGitRevision)', 'tasks/notify/notify.yaml') }],
};

/** A graph input whose resolutions and path answers come from maps by path; every resolution asked for is recorded. */
function input(answers: Map<string, PathAnswer> | undefined, contents = new Map<string, Resolution>(), over: Partial<GraphInput> = {}): GraphInput & { asked: string[] } {
  const asked: string[] = [];
  return {
    spec,
    origin: 'resolved',
    params: [{ name: 'taskGitUrl', value: CATALOG }],
    policy,
    namespace: 'team-a',
    controllerNamespace: NS,
    pipelineRunName: 'ir-u-1',
    pipelineName: 'sign',
    lookup: (ref) => {
      asked.push(pathOf(ref));
      return contents.get(pathOf(ref));
    },
    installedTask: () => undefined,
    refs,
    ...(answers ? { paths: (c: PathCheck) => answers.get(pathCheckKey(c)) } : {}),
    ...over,
    asked,
  };
}

test('graph: each git reference is path-checked at the commit its ref points at before it is resolved; once ok it is resolved as before', () => {
  const none = input(new Map());
  const first = checkGraph(none);
  assert.equal(first.state, 'pending');
  assert.deepEqual(first.state === 'pending' && first.pathChecks, [at('tasks/sign/sign.yaml'), at('tasks/notify/notify.yaml')]);
  assert.deepEqual(first.state === 'pending' && first.need, [], 'nothing is resolved before its path is checked');
  assert.deepEqual(none.asked, [], 'not even looked up');

  const pending = input(new Map([[pathCheckKey(at('tasks/sign/sign.yaml')), { state: 'pending' }]]));
  const p = checkGraph(pending);
  assert.deepEqual(p.state === 'pending' && [p.pathChecks, p.need], [[at('tasks/notify/notify.yaml')], []], 'a pending check is waited for, not asked again');

  const ok = new Map<string, PathAnswer>([[pathCheckKey(at('tasks/sign/sign.yaml')), { state: 'ok' }], [pathCheckKey(at('tasks/notify/notify.yaml')), { state: 'ok' }]]);
  const next = checkGraph(input(ok));
  assert.deepEqual(next.state === 'pending' && [next.pathChecks, next.need.map(pathOf)], [[], ['tasks/sign/sign.yaml', 'tasks/notify/notify.yaml']]);
  const contents = new Map([
    ['tasks/sign/sign.yaml', resolved(taskYaml(), 'tasks/sign/sign.yaml')],
    ['tasks/notify/notify.yaml', resolved(taskYaml(), 'tasks/notify/notify.yaml')],
  ]);
  assert.equal(checkGraph(input(ok, contents)).state, 'ready');
  // Without path answers (unit tests of other rules), nothing is checked: the same as before.
  const unchecked = checkGraph(input(undefined));
  assert.deepEqual(unchecked.state === 'pending' && [unchecked.pathChecks, unchecked.need.map(pathOf)], [[], ['tasks/sign/sign.yaml', 'tasks/notify/notify.yaml']]);
});

test('graph: a symbolic link or submodule at any depth of a Task\'s path is refused, naming the reference, the component and the commit; nothing of it is resolved', () => {
  const answers = new Map<string, PathAnswer>([
    [pathCheckKey(at('tasks/sign/sign.yaml')), { state: 'ok' }],
    [pathCheckKey(at('tasks/notify/notify.yaml')), { state: 'refused', component: 'tasks/notify', kind: 'symlink' }],
  ]);
  const i = input(answers);
  const r = checkGraph(i);
  assert.equal(r.state, 'rejected');
  assert.equal(r.state === 'rejected' && r.code, 'REQUEST_SOURCE_NOT_ALLOWED');
  assert.match(
    r.state === 'rejected' ? r.message : '',
    new RegExp(`^finally\\[notify\\]\\.taskRef \\(values from param "taskGitUrl", the default of param "taskGitRevision"\\): "tasks/notify/notify\\.yaml" at commit ${HEAD} of "${CATALOG.replace(/[.]/g, '\\.')}": "tasks/notify" is a symbolic link \\(git mode 120000\\).*paths would hold for the name, not for the file read`),
  );
  assert.ok(!i.asked.includes('tasks/notify/notify.yaml'), 'the link was never resolved');
  answers.set(pathCheckKey(at('tasks/notify/notify.yaml')), { state: 'refused', component: 'tasks/notify/notify.yaml', kind: 'submodule' });
  assert.match((checkGraph(input(answers)) as { message: string }).message, /"tasks\/notify\/notify\.yaml" is a submodule/);
  answers.set(pathCheckKey(at('tasks/notify/notify.yaml')), { state: 'failed', message: 'git fetch did not finish within 60 s' });
  const failed = checkGraph(input(answers));
  assert.equal(failed.state === 'rejected' && failed.code, 'REQUEST_RESOLUTION_FAILED');
});

test('graph: a StepAction of a resolved Task is path-checked too; a commit asked for by SHA is found reachable first, then its path checked', () => {
  const stepTask = taskYaml([{ name: 'use', ref: gitRef(CATALOG, 'main', 'stepactions/a/a.yaml') }]);
  const answers = new Map<string, PathAnswer>([[pathCheckKey(at('tasks/sign/sign.yaml')), { state: 'ok' }], [pathCheckKey(at('tasks/notify/notify.yaml')), { state: 'ok' }]]);
  const contents = new Map([
    ['tasks/sign/sign.yaml', resolved(stepTask, 'tasks/sign/sign.yaml')],
    ['tasks/notify/notify.yaml', resolved(taskYaml(), 'tasks/notify/notify.yaml')],
  ]);
  const r = checkGraph(input(answers, contents));
  assert.deepEqual(r.state === 'pending' && [r.pathChecks, r.need], [[at('stepactions/a/a.yaml')], []]);
  answers.set(pathCheckKey(at('stepactions/a/a.yaml')), { state: 'refused', component: 'stepactions/a', kind: 'symlink' });
  assert.match((checkGraph(input(answers, contents)) as { message: string }).message, /^tasks\[sign\]\.steps\[use\]\.ref: "stepactions\/a\/a\.yaml" at commit .*: "stepactions\/a" is a symbolic link/);

  // By SHA: the reachability check comes first; the path is checked at that commit once it is found.
  const bySha = { params: [{ name: 'taskGitUrl', value: CATALOG }, { name: 'taskGitRevision', value: REVIEWED }] };
  const first = checkGraph(input(new Map(), new Map(), bySha));
  assert.deepEqual(first.state === 'pending' && [first.checks.length, first.pathChecks], [2, []]);
  const reachable = checkGraph(input(new Map(), new Map(), { ...bySha, commits: () => ({ state: 'reachable', ref: MAIN }) }));
  assert.deepEqual(reachable.state === 'pending' && reachable.pathChecks, [at('tasks/sign/sign.yaml', REVIEWED), at('tasks/notify/notify.yaml', REVIEWED)]);
});

// --- decide(): the pipelineRef, with the controller's answers in the observation ---

const todays = (): InternalRequest => ({ ...request(), spec: structuredClone(TODAYS_PAYLOAD) }) as unknown as InternalRequest;
const PIPELINE = 'pipelines/internal/sign/sign.yaml';
const observe = (o: Partial<Observation>): Observation =>
  observation(o, {
    request: todays(),
    config: config({ allowList: ['team-a'], allowedGitResolverURLs: [CATALOG], sources: { resolutionTimeout: '30s' } }),
    pipeline: undefined,
    refs: new Map([[refLookupKey({ url: CATALOG, ref: MAIN }), { state: 'found', commit: HEAD }]]),
  });
const types = (a: Action[]) => a.map((x) => x.type);

test('decide: the pipelineRef\'s path is checked before its ResolutionRequest is made; a symbolic link Rejects the request with nothing resolved', () => {
  const req = todays();
  const a0 = decide(observe({ request: req, paths: new Map() }));
  assert.deepEqual(types(a0), ['checkPath', 'writeStatus', 'requeueAfter']);
  assert.deepEqual((a0[0] as Extract<Action, { type: 'checkPath' }>).check, at(PIPELINE));
  assert.match((a0[1] as Extract<Action, { type: 'writeStatus' }>).status.conditions?.[1]?.message ?? '', /checking that pipelines\/internal\/sign\/sign\.yaml is a file of .* at commit 3{40}, through no symbolic link or submodule/);

  const ok = decide(observe({ request: req, paths: new Map([[pathCheckKey(at(PIPELINE)), { state: 'ok' }]]) }));
  assert.deepEqual(types(ok), ['startResolution', 'writeStatus', 'requeueAfter']);
  assert.deepEqual((ok[0] as Extract<Action, { type: 'startResolution' }>).resolution.spec?.params, gitRef(CATALOG, HEAD, PIPELINE).params);

  const link = decide(observe({ request: req, paths: new Map([[pathCheckKey(at(PIPELINE)), { state: 'refused', component: 'pipelines/internal', kind: 'symlink' }]]) }));
  assert.deepEqual(types(link), ['writeStatus']);
  const st = (link[0] as Extract<Action, { type: 'writeStatus' }>).status;
  assert.equal(st.conditions?.[0]?.reason, 'Rejected');
  assert.match(st.conditions?.[0]?.message ?? '', /^spec\.pipeline\.pipelineRef: "pipelines\/internal\/sign\/sign\.yaml" at commit 3{40} of .*: "pipelines\/internal" is a symbolic link/);
});

test('decide: the Tasks of a resolved Pipeline are path-checked before their ResolutionRequests are made', () => {
  const req = todays();
  const pipelineYaml = stringify({ apiVersion: 'tekton.dev/v1', kind: 'Pipeline', metadata: { name: 'sign' }, spec: { ...spec, params: [{ name: 'image' }, { name: 'taskGitUrl' }, { name: 'taskGitRevision' }] } });
  const rr = resolutionFor(req, { ...gitRef(CATALOG, HEAD, PIPELINE), forRef: MAIN }, NS);
  rr.metadata!.creationTimestamp = '2026-11-22T09:59:58Z';
  rr.status = { data: Buffer.from(pipelineYaml).toString('base64'), refSource: { uri: `git+${CATALOG}`, digest: { sha1: HEAD }, entryPoint: PIPELINE }, conditions: [{ type: 'Succeeded', status: 'True' }] };
  const a = decide(observe({ request: req, resolutions: [rr], paths: new Map([[pathCheckKey(at(PIPELINE)), { state: 'ok' }]]) }));
  assert.deepEqual(types(a), ['checkPath', 'checkPath', 'writeStatus', 'requeueAfter']);
  assert.deepEqual(
    a.slice(0, 2).map((x) => (x as Extract<Action, { type: 'checkPath' }>).check),
    [at('tasks/sign/sign.yaml'), at('tasks/notify/notify.yaml')],
  );
});
