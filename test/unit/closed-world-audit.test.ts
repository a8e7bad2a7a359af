/**
 * The closed-world audit of a whole run (test/audit-replay.ts and
 * test/closed-world-audit.ts) on small hand-made audit logs: what is
 * installed follows the log's writes in order, only the controller's
 * PipelineRuns are checked, refused writes change nothing, and the program
 * fails on a violation and when it checked nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AuditReplay, report, type ReplayResult } from '../audit-replay.js';
import { checkDirectory } from '../closed-world-audit.js';
import { STEPACTION_COPY_PREFIX } from '../../src/tekton/stepaction-copy.js';
import { auditPolicy, SUITE_AUDIT_LOG_SUFFIX } from '../../src/localenv/real/audit-policy.js';

const NS = 'internal-services';
const OURS = { 'app.kubernetes.io/managed-by': 'internal-services' };
const COPY = `${STEPACTION_COPY_PREFIX}${'c'.repeat(32)}`;

interface Ev {
  verb: string;
  resource: string;
  name: string;
  code?: number;
  sent?: unknown;
  stored?: unknown;
  user?: string;
  stage?: string;
  uri?: string;
  subresource?: string;
}
/** One audit.k8s.io/v1 event as kube-apiserver writes it (the fields the replay reads, and a few it does not). */
const line = (e: Ev): string =>
  JSON.stringify({
    kind: 'Event',
    apiVersion: 'audit.k8s.io/v1',
    level: 'RequestResponse',
    auditID: `${e.verb}-${e.name}-${Math.random()}`,
    stage: e.stage ?? 'ResponseComplete',
    requestURI: e.uri ?? `/apis/tekton.dev/v1/namespaces/${NS}/${e.resource}`,
    verb: e.verb,
    user: { username: e.user ?? 'internal-services-controller' },
    objectRef: { resource: e.resource, namespace: NS, name: e.name, apiGroup: 'tekton.dev', apiVersion: 'v1', ...(e.subresource ? { subresource: e.subresource } : {}) },
    responseStatus: { metadata: {}, code: e.code ?? (e.verb === 'create' ? 201 : 200) },
    ...(e.sent !== undefined ? { requestObject: e.sent } : {}),
    ...(e.stored !== undefined ? { responseObject: e.stored } : {}),
  });

const task = (name: string, steps: unknown[], labels?: Record<string, string>) => ({ apiVersion: 'tekton.dev/v1', kind: 'Task', metadata: { name, namespace: NS, ...(labels ? { labels } : {}) }, spec: { steps } });
const pipeline = (name: string, taskName: string) => ({ apiVersion: 'tekton.dev/v1', kind: 'Pipeline', metadata: { name, namespace: NS }, spec: { tasks: [{ name: 't', taskRef: { name: taskName } }] } });
const run = (name: string, spec: unknown, labels: Record<string, string> = OURS) => ({ apiVersion: 'tekton.dev/v1', kind: 'PipelineRun', metadata: { name, namespace: NS, labels }, spec });
const write = (verb: string, resource: string, obj: { metadata: { name: string } }, over: Partial<Ev> = {}): string => line({ verb, resource, name: obj.metadata.name, sent: obj, stored: obj, ...over });

function replay(lines: readonly string[], file = 'a.log'): ReplayResult {
  const r = new AuditReplay(file);
  lines.forEach((l, i) => r.feed(l, i + 1));
  return r.finish();
}

const closedTask = task('sign', [{ name: 's', image: 'registry.example/sign' }]);
const openTask = task('sign', [{ name: 's', ref: { resolver: 'git', params: [] } }]);
const installed = [write('create', 'tasks', closedTask), write('create', 'pipelines', pipeline('release', 'sign'))];

test('closed-world audit: a run by name of an installed Pipeline whose Task is closed, then the Task updated with a resolver and a second run', () => {
  const r = replay([
    ...installed,
    write('create', 'pipelineruns', run('ir-1', { pipelineRef: { name: 'release' } })),
    write('update', 'tasks', openTask),
    write('create', 'pipelineruns', run('ir-2', { pipelineRef: { name: 'release' } })),
  ]);
  assert.equal(r.checked, 2);
  assert.equal(r.violations.length, 1);
  const [v] = r.violations;
  assert.equal(v?.name, 'ir-2');
  assert.equal(v?.line, 5);
  assert.deepEqual(v?.violations.map((x) => x.position), [
    'Pipeline[release].spec.tasks[t].taskRef[sign].spec.steps[s].ref.resolver',
    'Pipeline[release].spec.tasks[t].taskRef[sign].spec.steps[s].ref.params',
    'Pipeline[release].spec.tasks[t].taskRef[sign].spec.steps[s].ref',
  ]);
  const { lines, ok } = report(r, 1);
  assert.equal(ok, false);
  assert.equal(lines[0], 'closed-world audit: 2 PipelineRuns created by the controller checked in 1 audit logs, 3 violations in 1 PipelineRuns (0 created by others, not checked)');
  assert.match(lines.join('\n'), /VIOLATION a\.log:5 PipelineRun internal-services\/ir-2:\n {4}Pipeline\[release\]\.spec\.tasks\[t\]\.taskRef\[sign\]\.spec\.steps\[s\]\.ref\.resolver: "resolver" is a resolver Tekton would run/);
});

test('closed-world audit: a PipelineRun someone else created is counted, with who and why, and not checked', () => {
  const r = replay([
    ...installed,
    write('create', 'pipelineruns', run('by-hand', { pipelineRef: { resolver: 'git' } }, {}), { user: 'admin' }),
    write('create', 'pipelineruns', run('incumbent', { pipelineRef: { resolver: 'git' } }, { 'app.kubernetes.io/managed-by': 'incumbent' }), { user: 'incumbent' }),
    write('create', 'pipelineruns', run('ir-1', { pipelineRef: { name: 'release' } })),
  ]);
  assert.equal(r.checked, 1);
  assert.deepEqual(r.violations, []);
  assert.deepEqual([...r.excluded], [
    ['no app.kubernetes.io/managed-by label, created by admin', 1],
    ['app.kubernetes.io/managed-by=incumbent, created by incumbent', 1],
  ]);
  const { lines, ok } = report(r, 1);
  assert.equal(ok, true);
  assert.equal(lines[0], 'closed-world audit: 1 PipelineRuns created by the controller checked in 1 audit logs, 0 violations (2 created by others, not checked)');
});

test('closed-world audit: refused writes change nothing and refused creates are not checked; other stages, subresources and dry runs neither', () => {
  const r = replay([
    ...installed,
    // Refused by the webhook: the Task stays closed.
    write('update', 'tasks', openTask, { code: 400 }),
    write('patch', 'tasks', openTask, { stage: 'ResponseStarted' }),
    write('update', 'tasks', openTask, { uri: `/apis/tekton.dev/v1/namespaces/${NS}/tasks/sign?dryRun=All` }),
    // A create that failed (it already existed): nothing was made.
    write('create', 'pipelineruns', run('ir-x', { pipelineRef: { resolver: 'git' } }), { code: 409 }),
    write('update', 'pipelineruns', run('ir-x', { pipelineRef: { resolver: 'git' } }), { subresource: 'status' }),
    write('create', 'pipelineruns', run('ir-dry', { pipelineRef: { resolver: 'git' } }), { uri: `/apis/tekton.dev/v1/namespaces/${NS}/pipelineruns?dryRun=All` }),
    write('create', 'pipelineruns', run('ir-1', { pipelineRef: { name: 'release' } })),
  ]);
  assert.equal(r.checked, 1);
  assert.deepEqual(r.violations, []);
  assert.deepEqual([...r.excluded], [['a server-side dry run (nothing was created)', 1]]);
});

test('closed-world audit: a patch counts as the object it left (the response), a delete removes it', () => {
  const r = replay([
    ...installed,
    // The body of a merge patch is not the object: the response is.
    line({ verb: 'patch', resource: 'tasks', name: 'sign', sent: { metadata: { labels: { a: 'b' } } }, stored: openTask }),
    write('create', 'pipelineruns', run('ir-1', { pipelineRef: { name: 'release' } })),
    write('update', 'tasks', closedTask),
    write('create', 'pipelineruns', run('ir-2', { pipelineRef: { name: 'release' } })),
    line({ verb: 'delete', resource: 'tasks', name: 'sign', stored: { kind: 'Status', status: 'Success' } }),
    write('create', 'pipelineruns', run('ir-3', { pipelineRef: { name: 'release' } })),
  ]);
  assert.equal(r.checked, 3);
  assert.deepEqual(r.violations.map((v) => v.name), ['ir-1', 'ir-3']);
  assert.match(r.violations[1]!.violations[0]!.why, /names Task "sign", which is not installed/);
  // A patch whose object as stored was not recorded cannot be replayed: the check does not pass.
  const blind = replay([...installed, line({ verb: 'patch', resource: 'tasks', name: 'sign', sent: { metadata: {} } })]);
  assert.equal(blind.unreadable.length, 1);
  assert.equal(report(blind, 1).ok, false);
});

test('closed-world audit: a step may name a StepAction copy present then (labelled as one), not one gone or not made by the controller', () => {
  const copy = { apiVersion: 'tekton.dev/v1beta1', kind: 'StepAction', metadata: { name: COPY, namespace: NS, labels: { 'internal-services.dev/stepaction-copy': 'true' } }, spec: { image: 'x' } };
  const forged = { ...copy, metadata: { ...copy.metadata, labels: {} } };
  const inline = { pipelineSpec: { tasks: [{ name: 't', taskSpec: { steps: [{ name: 's', ref: { name: COPY } }] } }] } };
  const r = replay([
    write('create', 'pipelineruns', run('ir-before', inline)),
    write('create', 'stepactions', copy),
    write('create', 'pipelineruns', run('ir-with', inline)),
    line({ verb: 'delete', resource: 'stepactions', name: COPY }),
    write('create', 'pipelineruns', run('ir-after', inline)),
    write('create', 'stepactions', forged),
    write('create', 'pipelineruns', run('ir-forged', inline)),
  ]);
  assert.equal(r.checked, 4);
  assert.deepEqual(r.violations.map((v) => v.name), ['ir-before', 'ir-after', 'ir-forged']);
  for (const v of r.violations) assert.match(v.violations[0]!.why, /a StepAction copy not made for this decision/);
});

test('closed-world audit: the object as stored is checked too (what admission made of it is what Tekton runs)', () => {
  const sent = run('ir-1', { pipelineRef: { name: 'release' } });
  const stored = run('ir-1', { pipelineRef: { name: 'release', resolver: 'cluster' } });
  const r = replay([...installed, line({ verb: 'create', resource: 'pipelineruns', name: 'ir-1', sent, stored })]);
  assert.equal(r.violations.length, 1);
  assert.deepEqual(r.violations[0]!.violations.map((v) => v.position), ['spec.pipelineRef.resolver']);
  assert.match(r.violations[0]!.violations[0]!.why, /as stored, after admission/);
});

test('closed-world audit: a line that is not JSON fails the check; a cut-short last line is only noted', () => {
  const r = new AuditReplay('a.log');
  r.feed(installed[0]!, 1);
  r.feed('{"kind":"Event",', 2);
  r.feed('{"kind":"Ev', 3, true);
  const res = r.finish();
  assert.equal(res.unreadable.length, 1);
  assert.equal(res.incomplete.length, 1);
  assert.equal(report(res, 1).ok, false);
});

test('closed-world audit: the audit policies ask for what each reader needs', () => {
  assert.equal(auditPolicy({ metadata: false, tektonWrites: false }), undefined);
  const suite = auditPolicy({ metadata: false, tektonWrites: true })!;
  assert.match(suite, /- level: RequestResponse\n {4}verbs: \["create", "update", "patch", "delete", "deletecollection"\]\n {4}resources:\n {6}- group: tekton\.dev\n {8}resources: \["pipelineruns", "pipelines", "tasks", "stepactions"\]\n {2}- level: None\n$/);
  assert.match(auditPolicy({ metadata: true, tektonWrites: true })!, /RequestResponse[\s\S]*\n {2}- level: Metadata\n$/);
  assert.equal(auditPolicy({ metadata: true, tektonWrites: false }), 'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: ["RequestReceived"]\nrules:\n  - level: Metadata\n');
});

const program = fileURLToPath(new URL('../closed-world-audit.js', import.meta.url));
const check = (dir: string, ...args: string[]) => spawnSync(process.execPath, [program, dir, ...args], { encoding: 'utf8' });

test('closed-world audit: the program reads every log of the directory (lines longer than its buffer too), and fails on a violation or on having checked nothing', () => {
  const dir = mkdtempSync(join(tmpdir(), 'closed-world-audit-'));
  try {
    let res = check(dir);
    assert.equal(res.status, 1, res.stdout);
    assert.match(res.stdout, /checked nothing \(no audit log in /);
    assert.equal(check(dir, '--allow-none').status, 0);

    // A log with only others' runs: nothing of the controller's was checked.
    writeFileSync(join(dir, `1-1-1${SUITE_AUDIT_LOG_SUFFIX}`), [...installed, write('create', 'pipelineruns', run('by-hand', { pipelineRef: { name: 'release' } }, {}), { user: 'admin' })].join('\n') + '\n');
    res = check(dir);
    assert.equal(res.status, 1, res.stdout);
    assert.match(res.stdout, /checked nothing \(no PipelineRun created by the controller in the 1 audit logs/);

    // A second log, with a run whose annotation is longer than the program's 1 MiB buffer.
    const big = run('ir-big', { pipelineRef: { name: 'release' } });
    (big.metadata as Record<string, unknown>)['annotations'] = { big: 'x'.repeat(2_500_000) };
    writeFileSync(join(dir, `1-2-1${SUITE_AUDIT_LOG_SUFFIX}`), [...installed, write('create', 'pipelineruns', big), write('create', 'pipelineruns', run('ir-2', { pipelineRef: { name: 'release' } }))].join('\n'));
    writeFileSync(join(dir, 'unrelated.txt'), 'not a log');
    res = check(dir);
    assert.equal(res.status, 0, res.stdout + res.stderr);
    assert.equal(res.stdout.split('\n')[0], 'closed-world audit: 2 PipelineRuns created by the controller checked in 2 audit logs, 0 violations (1 created by others, not checked)');
    assert.equal(checkDirectory(dir).result.checked, 2);

    writeFileSync(join(dir, `1-3-1${SUITE_AUDIT_LOG_SUFFIX}`), [write('create', 'pipelineruns', run('ir-open', { pipelineRef: { resolver: 'git' } }))].join('\n') + '\n');
    res = check(dir, '--allow-none');
    assert.equal(res.status, 1, res.stdout);
    assert.match(res.stdout, /3 PipelineRuns created by the controller checked in 3 audit logs, 2 violations in 1 PipelineRuns/);
    assert.match(res.stdout, new RegExp(`VIOLATION 1-3-1${SUITE_AUDIT_LOG_SUFFIX.replace(/\./g, '\\.')}:1 PipelineRun internal-services/ir-open:`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
