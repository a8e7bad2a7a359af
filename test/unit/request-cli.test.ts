/** The pure parts of the requester's CLI (src/cli/request/args-output.ts) and the Task that runs it. */
import { finished, inProgress, Phase, PHASES } from '../../src/api/conditions.js';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { repoRoot } from '../../src/api/crd-render.js';
import type { InternalRequest } from '../../src/api/types.js';
import {
  CliError,
  combineExitCodes,
  compactResults,
  exitCodeFor,
  formatAge,
  formatResults,
  formatResultsByName,
  formatTable,
  requestStateOf,
  parseDurationFlag,
  parseLabels,
  parseOutput,
  parseParam,
  parseParams,
  progressKey,
  progressLine,
  requestTable,
  splitCreateArgs,
  validateTimeouts,
} from '../../src/cli/request/args-output.js';
import { buildRequest, requestSubcommands } from '../../src/cli/request/commands.js';

const files: Record<string, string> = { 'sig.txt': 'line1\nline2\n', 'tags.json': '["a","b"]' };
const readFile = (p: string): string => {
  const v = files[p];
  if (v === undefined) throw new Error(`ENOENT: no such file or directory, open '${p}'`);
  return v;
};

/** Asserts that f throws a CliError with that code (and exit code 2 unless given). */
function throwsCli(f: () => unknown, code: string, msg?: RegExp, exitCode = 2): void {
  assert.throws(f, (e: unknown) => {
    assert.ok(e instanceof CliError, String(e));
    assert.equal(e.code, code);
    assert.equal(e.exitCode, exitCode);
    if (msg) assert.match(e.message, msg);
    return true;
  });
}

function req(status?: InternalRequest['status'], extra: Partial<InternalRequest['metadata']> = {}): InternalRequest {
  return {
    apiVersion: 'appstudio.redhat.com/v1alpha1',
    kind: 'InternalRequest',
    metadata: { name: 'sign-x1', namespace: 'team-a', creationTimestamp: '2026-01-01T00:00:00Z', ...extra },
    spec: { request: 'sign' },
    ...(status ? { status } : {}),
  };
}

const cond = (status: 'True' | 'False' | 'Unknown', reason: string, message: string) => ({
  conditions: [{ type: 'Succeeded', status, reason, message, lastTransitionTime: '2026-01-01T00:00:00Z' }],
});

describe('params', () => {
  test('key=value, JSON text kept as text, = in the value, empty value', () => {
    assert.deepEqual(parseParam('image=quay.io/a@sha256:1', readFile), ['image', 'quay.io/a@sha256:1']);
    assert.deepEqual(parseParam('tags=["v1","latest"]', readFile), ['tags', '["v1","latest"]']);
    assert.deepEqual(parseParam('expr=a=b', readFile), ['expr', 'a=b']);
    assert.deepEqual(parseParam('note=', readFile), ['note', '']);
    assert.deepEqual(parseParam('_x.y-z=1', readFile), ['_x.y-z', '1']);
  });
  test('key=@file reads the file exactly; key=@@x is the literal @x', () => {
    assert.deepEqual(parseParam('sig=@sig.txt', readFile), ['sig', 'line1\nline2\n']);
    assert.deepEqual(parseParam('tags=@tags.json', readFile), ['tags', '["a","b"]']);
    assert.deepEqual(parseParam('handle=@@someone', readFile), ['handle', '@someone']);
  });
  test('malformed params', () => {
    throwsCli(() => parseParam('noequals', readFile), 'CLI_PARAM_INVALID', /"noequals" is not key=value/);
    throwsCli(() => parseParam('=v', readFile), 'CLI_PARAM_INVALID', /"" is not a param name/);
    throwsCli(() => parseParam('1x=v', readFile), 'CLI_PARAM_INVALID', /"1x" is not a param name/);
    throwsCli(() => parseParam('a b=v', readFile), 'CLI_PARAM_INVALID');
    throwsCli(() => parseParam('f=@', readFile), 'CLI_PARAM_INVALID', /followed by a file name/);
    throwsCli(() => parseParam('f=@missing.txt', readFile), 'CLI_PARAM_INVALID', /f=@missing.txt: cannot read missing.txt: ENOENT/);
    throwsCli(() => parseParams(['a=1', 'a=2'], readFile), 'CLI_PARAM_INVALID', /"a" is given more than once/);
    assert.deepEqual(parseParams(['a=1', 'b=@tags.json'], readFile), { a: '1', b: '["a","b"]' });
  });
});

describe('labels', () => {
  test('valid labels', () => {
    assert.deepEqual(parseLabels(['release=r1', 'app.kubernetes.io/part-of=x', 'empty=']), { release: 'r1', 'app.kubernetes.io/part-of': 'x', empty: '' });
  });
  test('invalid labels', () => {
    throwsCli(() => parseLabels(['nolabel']), 'CLI_LABEL_INVALID', /not key=value/);
    throwsCli(() => parseLabels(['=x']), 'CLI_LABEL_INVALID');
    throwsCli(() => parseLabels(['a=has space']), 'CLI_LABEL_INVALID', /not a label value/);
    throwsCli(() => parseLabels([`a=${'x'.repeat(64)}`]), 'CLI_LABEL_INVALID');
    throwsCli(() => parseLabels(['Bad_Prefix/a=1']), 'CLI_LABEL_INVALID', /prefix/);
    throwsCli(() => parseLabels(['a=1', 'a=2']), 'CLI_LABEL_INVALID', /more than once/);
  });
});

describe('create arguments', () => {
  test('pipeline positional or --pipeline; KEY=VALUE arguments are params after -p ones', () => {
    assert.deepEqual(splitCreateArgs(['sign', 'image=x'], undefined, ['a=1']), { pipeline: 'sign', paramArgs: ['a=1', 'image=x'] });
    assert.deepEqual(splitCreateArgs(['image=x', 'sign'], undefined, []), { pipeline: 'sign', paramArgs: ['image=x'] });
    assert.deepEqual(splitCreateArgs(['image=x'], 'sign', []), { pipeline: 'sign', paramArgs: ['image=x'] });
    assert.deepEqual(splitCreateArgs([], 'sign', []), { pipeline: 'sign', paramArgs: [] });
  });
  test('missing or invalid pipeline; a stray argument', () => {
    throwsCli(() => splitCreateArgs([], undefined, ['a=1']), 'CLI_PIPELINE_NAME', /no Pipeline name/);
    throwsCli(() => splitCreateArgs([], '', []), 'CLI_PIPELINE_NAME', /no Pipeline name/);
    throwsCli(() => splitCreateArgs(['Sign_It'], undefined, []), 'CLI_PIPELINE_NAME', /"Sign_It" is not a Pipeline name/);
    throwsCli(() => splitCreateArgs(['other'], 'sign', []), 'CLI_PARAM_INVALID', /argument "other" is not key=value .*from --pipeline/);
    throwsCli(() => splitCreateArgs(['sign', 'other'], undefined, []), 'CLI_PARAM_INVALID', /argument "other"/);
  });
  test('buildRequest: the object sent, with defaults; empty strings count as not given', () => {
    const { body, output } = buildRequest(
      ['sign', 'tags=@tags.json'],
      { param: ['image=x'], label: ['release=r1'], pipelineTimeout: '1h', taskTimeout: '45m', finallyTimeout: '', serviceAccount: '', output: 'value=signature', wait: true, pollInterval: '5s' },
      readFile,
    );
    assert.deepEqual(body, {
      apiVersion: 'appstudio.redhat.com/v1alpha1',
      kind: 'InternalRequest',
      metadata: { generateName: 'sign-', labels: { release: 'r1' } },
      spec: { request: 'sign', params: { image: 'x', tags: '["a","b"]' }, timeouts: { pipeline: '1h', tasks: '45m' } },
    });
    assert.deepEqual(output, { format: 'value', key: 'signature' });
    const named = buildRequest([], { pipeline: 'sign', name: 'exact', serviceAccount: 'signer', output: 'json', wait: true, pollInterval: '5s' }, readFile).body;
    assert.deepEqual(named.metadata, { name: 'exact' });
    assert.deepEqual(named.spec, { request: 'sign', serviceAccount: 'signer' });
    assert.equal(buildRequest(['p'], { generateName: 'rel-', output: 'json', wait: true, pollInterval: '5s' }, readFile).body.metadata.generateName, 'rel-');
    throwsCli(() => buildRequest(['p'], { name: 'a', generateName: 'b-', output: 'json', wait: true, pollInterval: '5s' }, readFile), 'CLI_USAGE');
    throwsCli(() => buildRequest(['p'], { output: 'table', wait: true, pollInterval: '5s' }, readFile), 'CLI_OUTPUT_INVALID');
  });
  test('buildRequest: the git shape and the --resolver shape make spec.pipeline.pipelineRef', () => {
    const base = { output: 'json', wait: true, pollInterval: '5s' };
    const git = buildRequest(
      ['image=x', 'taskGitUrl=https://h/c.git'],
      { ...base, gitUrl: 'https://h/c.git', gitRevision: 'main', path: 'pipelines/internal/sign/Sign_It.yaml', pipelineTimeout: '1h' },
      readFile,
    ).body;
    assert.deepEqual(git.metadata, { generateName: 'sign-it-' });
    assert.deepEqual(git.spec, {
      pipeline: { pipelineRef: { resolver: 'git', params: [{ name: 'url', value: 'https://h/c.git' }, { name: 'revision', value: 'main' }, { name: 'pathInRepo', value: 'pipelines/internal/sign/Sign_It.yaml' }] } },
      params: { image: 'x', taskGitUrl: 'https://h/c.git' },
      timeouts: { pipeline: '1h' },
    });
    const bundle = buildRequest([], { ...base, resolver: 'bundles', resolverParam: ['bundle=quay.io/b@sha256:1', 'name=sign', 'kind=pipeline'] }, readFile).body;
    assert.deepEqual(bundle.spec, { pipeline: { pipelineRef: { resolver: 'bundles', params: [{ name: 'bundle', value: 'quay.io/b@sha256:1' }, { name: 'name', value: 'sign' }, { name: 'kind', value: 'pipeline' }] } } });
    assert.equal(bundle.metadata.generateName, 'sign-');
    throwsCli(() => buildRequest([], { ...base, gitUrl: 'u', path: 'p.yaml' }, readFile), 'CLI_USAGE', /missing: --git-revision/);
    throwsCli(() => buildRequest(['sign'], { ...base, gitUrl: 'u', gitRevision: 'r', path: 'p.yaml' }, readFile), 'CLI_USAGE', /argument "sign" is not KEY=VALUE/);
    throwsCli(() => buildRequest([], { ...base, pipeline: 'sign', resolver: 'git', resolverParam: ['url=u'] }, readFile), 'CLI_USAGE', /--pipeline .* do not go together/);
    throwsCli(() => buildRequest([], { ...base, resolver: 'bundles', gitUrl: 'u' }, readFile), 'CLI_USAGE', /do not go with --resolver bundles/);
    throwsCli(() => buildRequest(['sign'], { ...base, resolverParam: ['a=b'] }, readFile), 'CLI_USAGE', /--resolver-param needs --resolver/);
    throwsCli(() => buildRequest([], { ...base, resolver: 'git', gitUrl: 'u', gitRevision: 'r', path: 'p', resolverParam: ['url=v'] }, readFile), 'CLI_PARAM_INVALID', /"url" is given more than once/);
    throwsCli(() => buildRequest([], { ...base, resolver: 'Git!' }, readFile), 'CLI_USAGE', /not a resolver name/);
  });
});

describe('timeouts', () => {
  test('valid combinations', () => {
    assert.equal(validateTimeouts({}), undefined);
    assert.equal(validateTimeouts({ pipeline: '', tasks: ' ' }), undefined);
    assert.deepEqual(validateTimeouts({ pipeline: '1h', tasks: '45m', finally: '15m' }), { pipeline: '1h', tasks: '45m', finally: '15m' });
    assert.deepEqual(validateTimeouts({ pipeline: '1h30m', tasks: '1.5h' }), { pipeline: '1h30m', tasks: '1.5h' });
    assert.deepEqual(validateTimeouts({ pipeline: '0s', tasks: '5h', finally: '0s' }), { pipeline: '0s', tasks: '5h', finally: '0s' });
    // without a pipeline timeout the internal cluster's default applies; Tekton checks it there
    assert.deepEqual(validateTimeouts({ tasks: '2h' }), { tasks: '2h' });
  });
  test('invalid durations and Tekton rule violations', () => {
    throwsCli(() => validateTimeouts({ pipeline: '1 hour' }), 'CLI_DURATION_INVALID', /--pipeline-timeout "1 hour" is not a duration/);
    throwsCli(() => validateTimeouts({ tasks: '10' }), 'CLI_DURATION_INVALID', /--task-timeout "10"/);
    throwsCli(() => validateTimeouts({ finally: '1d' }), 'CLI_DURATION_INVALID', /--finally-timeout "1d"/);
    throwsCli(() => validateTimeouts({ pipeline: '0' }), 'CLI_DURATION_INVALID');
    throwsCli(() => validateTimeouts({ pipeline: '1h', tasks: '2h' }), 'CLI_DURATION_INVALID', /--task-timeout 2h is longer than --pipeline-timeout 1h/);
    throwsCli(() => validateTimeouts({ pipeline: '1h', finally: '61m' }), 'CLI_DURATION_INVALID', /--finally-timeout 61m is longer/);
    throwsCli(() => validateTimeouts({ pipeline: '1h', tasks: '45m', finally: '16m' }), 'CLI_DURATION_INVALID', /--task-timeout 45m \+ --finally-timeout 16m is longer than --pipeline-timeout 1h/);
    throwsCli(() => validateTimeouts({ pipeline: '1h', tasks: '0s' }), 'CLI_DURATION_INVALID', /no timeout/);
  });
  test('--timeout and --poll-interval', () => {
    assert.equal(parseDurationFlag('--timeout', '1h'), 3_600_000);
    assert.equal(parseDurationFlag('--timeout', '0'), 0);
    assert.equal(parseDurationFlag('--timeout', '2.5s'), 2500);
    throwsCli(() => parseDurationFlag('--timeout', 'forever'), 'CLI_DURATION_INVALID', /--timeout "forever" is not a duration/);
    throwsCli(() => parseDurationFlag('--timeout', '-1s'), 'CLI_DURATION_INVALID');
  });
});

describe('outcomes and exit codes', () => {
  test('outcome from the Succeeded condition', () => {
    assert.equal(requestStateOf(req()), 'Pending');
    assert.equal(requestStateOf(req(cond('Unknown', 'Running', 'm'))), 'Running');
    assert.equal(requestStateOf(req(cond('True', 'Succeeded', 'm'))), 'Succeeded');
    assert.equal(requestStateOf(req(cond('False', 'Failed', 'm'))), 'Failed');
    assert.equal(requestStateOf(req(cond('False', 'Rejected', 'm'))), 'Rejected');
    assert.equal(requestStateOf(req(cond('False', 'SomethingElse', 'm'))), 'Failed');
  });
  test('unfinished: the phase of the Progressing condition, or the phase an earlier version wrote into Succeeded', () => {
    for (const phase of PHASES) assert.equal(requestStateOf(req({ conditions: inProgress(undefined, phase, { message: 'm' }, new Date(0)) })), phase);
    assert.equal(requestStateOf(req(cond('Unknown', 'Pending', 'm'))), 'WaitingForConfig');
    assert.equal(requestStateOf(req(cond('Unknown', 'Queued', 'm'))), 'Queued');
    assert.equal(requestStateOf(req({ conditions: finished(inProgress(undefined, Phase.Queued, { message: 'm' }, new Date(0)), 'Rejected', { message: 'no' }, new Date(0)) })), 'Rejected');
  });
  test('exit codes', () => {
    assert.deepEqual(
      (['Succeeded', 'Failed', 'Rejected', 'Timeout', 'Gone'] as const).map(exitCodeFor),
      [0, 21, 22, 124, 2],
    );
    assert.equal(combineExitCodes([]), 0);
    assert.equal(combineExitCodes([0, 0]), 0);
    assert.equal(combineExitCodes([0, 124, 21]), 21);
    assert.equal(combineExitCodes([21, 22, 124]), 22);
    assert.equal(combineExitCodes([124, 0]), 124);
    assert.equal(combineExitCodes([22, 2]), 2);
    assert.equal(combineExitCodes([2, 1]), 1);
  });
});

describe('output', () => {
  const results = { signature: 'sig-ü', list: '["a","b"]', obj: '{"k":"v"}' };
  test('formats', () => {
    assert.deepEqual(parseOutput('json'), { format: 'json' });
    assert.deepEqual(parseOutput('yaml'), { format: 'yaml' });
    assert.deepEqual(parseOutput('value=a=b'), { format: 'value', key: 'a=b' });
    throwsCli(() => parseOutput('value='), 'CLI_OUTPUT_INVALID');
    throwsCli(() => parseOutput('jsonpath={.x}'), 'CLI_OUTPUT_INVALID', /not json, yaml or value=KEY/);
  });
  test('json (sorted keys, 2-space indent), yaml, value, compact', () => {
    assert.equal(formatResults(results, { format: 'json' }), '{\n  "list": "[\\"a\\",\\"b\\"]",\n  "obj": "{\\"k\\":\\"v\\"}",\n  "signature": "sig-ü"\n}\n');
    assert.equal(formatResults({}, { format: 'json' }), '{}\n');
    assert.equal(formatResults(results, { format: 'yaml' }), 'list: \'["a","b"]\'\nobj: \'{"k":"v"}\'\nsignature: sig-ü\n');
    assert.equal(formatResults({}, { format: 'yaml' }), '{}\n');
    assert.equal(formatResults(results, { format: 'value', key: 'signature' }), 'sig-ü\n');
    throwsCli(() => formatResults(results, { format: 'value', key: 'nope' }), 'CLI_OUTPUT_INVALID', /no result "nope" \(results: list, obj, signature\)/);
    throwsCli(() => formatResults({}, { format: 'value', key: 'nope' }), 'CLI_OUTPUT_INVALID', /results: none/);
    assert.equal(compactResults(results), '{"list":"[\\"a\\",\\"b\\"]","obj":"{\\"k\\":\\"v\\"}","signature":"sig-ü"}');
  });
  test('several requests: by name', () => {
    assert.equal(formatResultsByName({ b: { x: '1' }, a: {} }, { format: 'json' }), '{\n  "a": {},\n  "b": {\n    "x": "1"\n  }\n}\n');
    throwsCli(() => formatResultsByName({}, { format: 'value', key: 'x' }), 'CLI_OUTPUT_INVALID', /needs exactly one request/);
  });
});

describe('progress lines', () => {
  test('each state, with the PipelineRun reference and the condition message', () => {
    assert.equal(progressLine(req()), 'internalrequest team-a/sign-x1: waiting for the controller to pick it up');
    const running = req({ ...cond('Unknown', 'Running', 'PipelineRun internal-services/ir-1 is running'), pipelineRun: 'internal-services/ir-1' });
    assert.equal(progressLine(running), 'internalrequest team-a/sign-x1: Running, PipelineRun internal-services/ir-1 (PipelineRun internal-services/ir-1 is running)');
    assert.equal(progressLine(req(cond('False', 'Rejected', 'no Pipeline named "x"'))), 'internalrequest team-a/sign-x1: Rejected: no Pipeline named "x"');
    assert.equal(progressLine(req(cond('True', 'Succeeded', 'ok'))), 'internalrequest team-a/sign-x1: Succeeded: ok');
    // The phase comes from the Progressing condition; conditions[0] says Running throughout.
    const queued = req({ conditions: inProgress(undefined, Phase.Queued, { message: 'waiting for a free slot …; position 2 of 3 waiting' }, new Date(0)) });
    assert.equal(progressLine(queued), 'internalrequest team-a/sign-x1: Queued: waiting for a free slot …; position 2 of 3 waiting');
  });
  test('a new line only when the outcome or the PipelineRun changes', () => {
    const a = req(cond('Unknown', 'Running', 'one'));
    const b = req({ ...cond('Unknown', 'Running', 'two'), pipelineRun: 'ns/ir-1' });
    assert.equal(progressKey(a), progressKey(req(cond('Unknown', 'Running', 'other message'))));
    assert.notEqual(progressKey(a), progressKey(b));
  });
});

describe('tables', () => {
  test('ages', () => {
    assert.deepEqual([0, 42_000, 119_000, 130_000, 600_000, 3_599_000, 3 * 3_600_000 + 120_000, 30 * 3_600_000, 50 * 3_600_000, 20 * 86_400_000].map(formatAge), [
      '0s', '42s', '119s', '2m10s', '10m', '59m', '3h2m', '30h', '2d2h', '20d',
    ]);
    assert.equal(formatAge(-5), '0s');
  });
  test('aligned columns, no trailing spaces', () => {
    assert.equal(formatTable(['A', 'LONGER'], [['xxxx', ''], ['y', 'z']]), 'A      LONGER\nxxxx\ny      z\n');
  });
  test('request table', () => {
    const now = Date.parse('2026-01-01T00:05:00Z');
    const rows = [
      req({ ...cond('Unknown', 'Running', 'PipelineRun ns/ir-1 is running'), pipelineRun: 'ns/ir-1' }),
      req(undefined, { name: 'b', creationTimestamp: '2026-01-01T00:04:30Z' }),
    ];
    assert.equal(
      requestTable(rows, now),
      [
        'NAME      PIPELINE   STATUS    AGE   MESSAGE',
        'sign-x1   sign       Running   5m    PipelineRun ns/ir-1 is running',
        'b         sign       Pending   30s',
        '',
      ].join('\n'),
    );
    const wide = requestTable([rows[0]!], now, { allNamespaces: true, wide: true });
    assert.match(wide, /^NAMESPACE   NAME      PIPELINE   STATUS    AGE   PIPELINERUN   MESSAGE\nteam-a      sign-x1   sign       Running   5m    ns\/ir-1       PipelineRun/);
    const long = requestTable([req(cond('False', 'Failed', `a\nb ${'x'.repeat(200)}`))], now);
    assert.match(long, /Failed   5m    a b x+…\n$/);
  });
});

describe('tasks/internal-request.yaml', () => {
  const task = parseYaml(readFileSync(join(repoRoot(), 'tasks', 'internal-request.yaml'), 'utf8')) as {
    apiVersion: string;
    kind: string;
    spec: { params: Array<{ name: string; type?: string; default?: unknown }>; results: Array<{ name: string }>; steps: Array<{ image: string; command: string[]; args: string[] }> };
  };
  test('a tekton.dev/v1 Task whose variables are all declared', () => {
    assert.equal(task.apiVersion, 'tekton.dev/v1');
    assert.equal(task.kind, 'Task');
    const params = new Set(task.spec.params.map((p) => p.name));
    const results = new Set(task.spec.results.map((r) => r.name));
    const text = JSON.stringify(task.spec.steps);
    for (const [, name] of text.matchAll(/\$\(params\.([A-Za-z0-9_-]+)(?:\[\*\])?\)/g)) assert.ok(params.has(name!), `param ${name} not declared`);
    for (const [, name] of text.matchAll(/\$\(results\.([A-Za-z0-9_-]+)\.path\)/g)) assert.ok(results.has(name!), `result ${name} not declared`);
    for (const m of text.matchAll(/\$\(([a-zA-Z]+)\./g)) assert.ok(['params', 'results', 'context'].includes(m[1]!), m[0]);
    assert.deepEqual([...results].sort(), ['requestName', 'results']);
    assert.equal(task.spec.params.find((p) => p.name === 'image')?.default, 'quay.io/konflux-ci/internal-services:latest');
    assert.equal(task.spec.params.find((p) => p.name === 'params')?.type, 'array');
  });
  test('the step runs `request create` with flags the CLI has', () => {
    const step = task.spec.steps[0]!;
    assert.deepEqual(step.command, ['internal-services']);
    assert.deepEqual(step.args.slice(0, 2), ['request', 'create']);
    const create = requestSubcommands().find((c) => c.name() === 'create')!;
    const longFlags = new Set(create.options.map((o) => o.long));
    const dashdash = step.args.indexOf('--');
    for (const a of step.args.slice(2, dashdash)) {
      assert.ok(longFlags.has(a.split('=')[0]), `${a}: the CLI has no such flag`);
    }
    assert.deepEqual(step.args.slice(dashdash + 1), ['$(params.params[*])']);
  });
});
