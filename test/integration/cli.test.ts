/**
 * The requester's CLI (`internal-services request …`, `kubectl internalrequest …`)
 * as real processes against the real remote control plane, with the real
 * controller process and REAL Tekton (controller, resolvers, webhook) running
 * the Pipelines on the internal control plane; only the TaskRun pods are
 * simulated (SimulatedKubelet, see src/localenv/simulated/kubelet.ts), each step as its
 * SIMULATED_* env says after Tekton's own param substitution:
 *   echo    succeeds; its step produces results from the params;
 *   broken  fails (its task "build" exits 1);
 *   hold    stays Running until the test ends (its step never finishes).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { repoRoot } from '../../src/api/crd-render.js';
import { startEnvironment, type Environment, applyObjects, ensureNamespace, grantRequester, installProject } from '../../src/localenv/index.js';
import type { InternalRequest } from '../../src/api/types.js';
import { startCli, expectCode, type Run, type Running } from './cli-run.js';
import { getRequest, IR, NS, simulatedStep, startController, testPipeline, waitForPhase, type ControllerProcess } from './helpers.js';

const KUBECTL_ENTRY = join(repoRoot(), 'dist', 'src', 'cli', 'kubectl-internalrequest.js');
const ALLOWED = ['cli-a', 'cli-b', 'cli-poll'];

let env: Environment | undefined;
let controller: ControllerProcess | undefined;
let tmp: string;
let requesterKubeconfig: string;
let remoteAdmin: KubeConfig;
let internalAdmin: KubeConfig;

const pipelines = [
  // A step's env gets only string substitutions from Tekton (an array param
  // can only be spread into args or command), so "tags" is declared as a
  // string: the request's JSON text reaches the step as is, and the step
  // writes it as the array result "tags".
  testPipeline('echo', {
    params: [{ name: 'image', type: 'string' }, { name: 'tags', type: 'string', default: '[]' }, { name: 'note', type: 'string', default: '' }],
    results: [
      { name: 'digest', value: '$(tasks.t.results.digest)' },
      { name: 'tags', type: 'array', value: '$(tasks.t.results.tags[*])' },
      { name: 'note', value: '$(tasks.t.results.note)' },
    ],
    tasks: [
      {
        name: 't',
        params: [
          { name: 'image', value: '$(params.image)' },
          { name: 'tags', value: '$(params.tags)' },
          { name: 'note', value: '$(params.note)' },
        ],
        taskSpec: {
          params: [{ name: 'image' }, { name: 'tags' }, { name: 'note' }],
          results: [{ name: 'digest' }, { name: 'tags', type: 'array' }, { name: 'note' }],
          steps: [
            simulatedStep('s', {
              SIMULATED_RESULT_digest: 'sha256:$(params.image)',
              SIMULATED_RESULT_tags: '$(params.tags)',
              SIMULATED_RESULT_note: '$(params.note)',
            }),
          ],
        },
      },
    ],
  }),
  testPipeline('broken', { tasks: [{ name: 'build', taskSpec: { steps: [simulatedStep('b', { SIMULATED_FAIL: 'true' })] } }] }),
  testPipeline('hold', { tasks: [{ name: 'wait', taskSpec: { steps: [simulatedStep('w', { SIMULATED_DURATION: 'never' })] } }] }),
];


/** Runs `bin argv` (default: `node main.js argv`) as the requester and collects its output. */
const start = (argv: string[], opts: { env?: NodeJS.ProcessEnv; bin?: string } = {}): Running =>
  startCli(argv, { ...opts, env: { HOME: tmp, KUBECONFIG: requesterKubeconfig, ...opts.env } });

/** `internal-services request …` */
const request = (args: string[], o: { env?: NodeJS.ProcessEnv } = {}): Promise<Run> => start(['request', ...args], o).done;
/** The kubectl plugin entry, run directly. */
const plugin = (args: string[], o: { env?: NodeJS.ProcessEnv } = {}): Promise<Run> => start([KUBECTL_ENTRY, ...args], { ...o, bin: process.execPath }).done;


/** The request name from the "created" progress line. */
function createdName(r: Run, ns: string): string {
  const m = new RegExp(`internalrequest ${ns}/(\\S+) created`).exec(r.stderr);
  assert.ok(m, `no "created" line in:\n${r.stderr}`);
  return m[1]!;
}

before(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'cli-test-'));
  env = await startEnvironment({ tekton: true });
  await installProject(env);
  remoteAdmin = env.remote.identities.admin.kubeConfig();
  internalAdmin = env.internal.identities.admin.kubeConfig();
  requesterKubeconfig = env.remote.identities.requester!.kubeconfigPath;
  await Promise.all(['cli-a', 'cli-b', 'cli-denied', 'cli-bad'].map((ns) => grantRequester(env!, ns)));
  // "outsider" may use InternalRequests in cli-poll but not watch them: the CLI must poll.
  await ensureNamespace(remoteAdmin, 'cli-poll');
  await applyObjects(remoteAdmin, [
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'no-watch', namespace: 'cli-poll' }, rules: [{ apiGroups: ['appstudio.redhat.com'], resources: ['internalrequests'], verbs: ['create', 'get', 'list', 'delete'] }] },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'no-watch', namespace: 'cli-poll' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'no-watch' }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'outsider' }] },
  ] as never);
  await applyObjects(internalAdmin, pipelines as never);
  await applyObjects(internalAdmin, [{ apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name: 'config', namespace: NS }, spec: { allowList: ALLOWED } } as never]);
  controller = await startController(env);
});

after(async () => {
  await controller?.kill('SIGKILL').catch(() => {});
  await env?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('request create (real Tekton, pods simulated)', () => {
  test('waits; progress on stderr (created, Running with the PipelineRun, Succeeded); JSON results on stdout exactly; exit 0', async () => {
    const tagsFile = join(tmp, 'tags.json');
    writeFileSync(tagsFile, '["v1","latest"]');
    const r = await request([
      'create', 'echo', 'note=hello wörld', '-n', 'cli-a',
      '-p', 'image=quay.io/org/app', '-p', `tags=@${tagsFile}`, '-l', 'release=r1',
      '--pipeline-timeout', '1h', '--task-timeout', '45m', '--finally-timeout', '15m',
    ]);
    expectCode(r, 0, 'create echo');
    assert.equal(r.stdout, '{\n  "digest": "sha256:quay.io/org/app",\n  "note": "hello wörld",\n  "tags": "[\\"v1\\",\\"latest\\"]"\n}\n');
    const name = createdName(r, 'cli-a');
    assert.match(name, /^echo-[a-z0-9]{5}$/);
    const stored = await getRequest(remoteAdmin, 'cli-a', name);
    const lines = r.stderr.trimEnd().split('\n');
    assert.deepEqual(lines, [
      `internalrequest cli-a/${name} created (pipeline echo)`,
      `internalrequest cli-a/${name}: Running, PipelineRun ${NS}/ir-${stored.metadata.uid} (PipelineRun ${NS}/ir-${stored.metadata.uid} is running)`,
      `internalrequest cli-a/${name}: Succeeded: PipelineRun ${NS}/ir-${stored.metadata.uid} succeeded`,
    ]);
    assert.deepEqual(stored.metadata.labels, { release: 'r1' });
    assert.deepEqual(stored.spec, {
      request: 'echo',
      params: { image: 'quay.io/org/app', tags: '["v1","latest"]', note: 'hello wörld' },
      timeouts: { pipeline: '1h', tasks: '45m', finally: '15m' },
    });
  });

  test('--output value=KEY and yaml, through `kubectl internalrequest` (plugin on PATH) and the plugin entry', async () => {
    const bin = join(tmp, 'bin');
    mkdirSync(bin, { recursive: true });
    const shim = join(bin, 'kubectl-internalrequest');
    writeFileSync(shim, `#!/bin/sh\nexec "${process.execPath}" "${KUBECTL_ENTRY}" "$@"\n`);
    chmodSync(shim, 0o755);
    const kubectl = join(env!.assets.binDir, 'kubectl');
    const [viaKubectl, yaml, missing] = await Promise.all([
      start(['internalrequest', 'create', 'echo', 'image=img:1', '-n', 'cli-a', '-o', 'value=digest'], { bin: kubectl, env: { PATH: `${bin}:${process.env.PATH ?? ''}` } }).done,
      plugin(['create', '--pipeline=echo', '-p', 'image=img:2', 'tags=["a"]', '-n', 'cli-b', '--generate-name', 'rel-', '-o', 'yaml']),
      plugin(['create', 'echo', 'image=img:3', '-n', 'cli-a', '-o', 'value=nope']),
    ]);
    expectCode(viaKubectl, 0, 'kubectl internalrequest create');
    assert.equal(viaKubectl.stdout, 'sha256:img:1\n');
    expectCode(yaml, 0, 'plugin create -o yaml');
    assert.equal(yaml.stdout, 'digest: sha256:img:2\nnote: ""\ntags: \'["a"]\'\n');
    assert.match(createdName(yaml, 'cli-b'), /^rel-[a-z0-9]{5}$/);
    // succeeded, but the result asked for does not exist: bad input, with the results there are
    expectCode(missing, 2, 'value=nope');
    assert.equal(missing.stdout, '');
    assert.match(missing.stderr, /error: there is no result "nope" \(results: digest, note, tags\) \[CLI_OUTPUT_INVALID\]/);
  });

  test('Failed exits 21, Rejected exits 22, each with the condition message on stderr', async () => {
    const [failed, noPipeline, notAllowed] = await Promise.all([
      request(['create', 'broken', '-n', 'cli-a']),
      plugin(['create', 'no-such-pipeline', '-n', 'cli-a']),
      request(['create', 'echo', 'image=x', '-n', 'cli-denied']),
    ]);
    expectCode(failed, 21, 'broken');
    assert.equal(failed.stdout, '');
    assert.match(failed.stderr, /: Running, PipelineRun /);
    // Tekton's own summary of the run, then the failed tasks the controller found.
    assert.match(failed.stderr, /internalrequest cli-a\/broken-\w+: Failed: PipelineRun internal-services\/ir-\S+ failed: Failed: Tasks Completed: 1 \(Failed: 1, Cancelled 0\), Skipped: 0; failed tasks: build \("step-b" exited with code 1: Error\)\n$/);
    expectCode(noPipeline, 22, 'no-such-pipeline');
    assert.equal(noPipeline.stdout, '');
    assert.match(noPipeline.stderr, /: Rejected: no Pipeline named "no-such-pipeline" in namespace "internal-services"/);
    expectCode(notAllowed, 22, 'namespace not allowed');
    assert.match(notAllowed.stderr, /: Rejected: namespace "cli-denied" on remote "default" is not on the allowList/);
  });

  test('the git shape (spec.pipeline with the git resolver) is created as sent; with no source policy it exits 22 saying so', async () => {
    const git = await plugin(['create', '--git-url', 'https://example.com/catalog.git', '--git-revision', 'main', '--path', 'pipelines/internal/echo/echo.yaml', 'image=x', '-n', 'cli-a']);
    expectCode(git, 22, 'git shape');
    assert.match(git.stderr, /internalrequest cli-a\/echo-\w+ created \(pipeline git: pipelines\/internal\/echo\/echo\.yaml\)/);
    assert.match(git.stderr, /: Rejected: spec\.pipeline\.pipelineRef asks for the "git" resolver, but remote resolution is not enabled on this internal cluster/);
  });

  test('--timeout passes: exit 124, the request keeps running', async () => {
    const r = await request(['create', 'hold', '-n', 'cli-a', '--timeout', '3s']);
    expectCode(r, 124, 'hold --timeout 3s');
    assert.equal(r.stdout, '');
    const name = createdName(r, 'cli-a');
    assert.match(r.stderr, new RegExp(`error: timed out after 3s waiting for internalrequest cli-a/${name} \\(Running, PipelineRun internal-services/ir-.*\\); it keeps running \\[CLI_WAIT_TIMEOUT\\]`));
    const still = await getRequest(remoteAdmin, 'cli-a', name);
    assert.equal(still.status?.conditions?.[0]?.reason, 'Running');
  });

  test('without watch permission the CLI polls', async () => {
    const r = await request(['create', 'echo', 'image=polled', '-n', 'cli-poll', '--poll-interval', '300ms'], { env: { KUBECONFIG: env!.remote.identities.outsider!.kubeconfigPath } });
    expectCode(r, 0, 'create as outsider');
    assert.match(r.stderr, /note: watching InternalRequests in cli-poll failed \(.*\); polling every 300ms instead/);
    assert.match(r.stderr, /: Succeeded: /);
    assert.equal(JSON.parse(r.stdout).digest, 'sha256:polled');
  });
});

describe('wait, get, list, cancel (real Tekton, pods simulated)', () => {
  test('wait -l SELECTOR over several requests: exit 0 and {name: results}; finished, failed and running ones: 21 and no stdout', async () => {
    const created = await Promise.all(
      ['one', 'two', 'three'].map((img) => plugin(['create', 'echo', `image=${img}`, '-l', 'batch=b1', '-n', 'cli-b', '--no-wait'])),
    );
    const names = created.map((c, i) => {
      expectCode(c, 0, `create --no-wait ${i}`);
      assert.match(c.stdout, /^echo-[a-z0-9]{5}\n$/);
      return c.stdout.trim();
    });
    const all = await request(['wait', '-l', 'batch=b1', '-n', 'cli-b']);
    expectCode(all, 0, 'wait -l batch=b1');
    const expected = Object.fromEntries(
      names.map((n, i) => [n, { digest: `sha256:${['one', 'two', 'three'][i]}`, note: '', tags: '[]' }]).sort(([a], [b]) => (String(a) < String(b) ? -1 : 1)),
    );
    assert.equal(all.stdout, `${JSON.stringify(expected, null, 2)}\n`);
    for (const n of names) assert.match(all.stderr, new RegExp(`internalrequest cli-b/${n}: Succeeded`));

    const byName = await plugin(['wait', names[0]!, names[1]!, '-n', 'cli-b', '-o', 'yaml']);
    expectCode(byName, 0, 'wait by names');
    assert.deepEqual(parseYaml(byName.stdout), { [names[0]!]: expected[names[0]!], [names[1]!]: expected[names[1]!] });

    // Two already finished when the wait starts, one still running: the finished ones keep
    // their outcome, the running one times out; Failed outranks the timeout.
    const mixed = await Promise.all(
      ['echo', 'broken', 'hold'].map((p) => plugin(['create', p, 'image=ok', '-l', 'batch=b2', '-n', 'cli-b', '--no-wait'].filter((a) => p === 'echo' || a !== 'image=ok'))),
    );
    mixed.forEach((m) => expectCode(m, 0, 'create b2'));
    const [ok, bad, held] = mixed.map((m) => m.stdout.trim()) as [string, string, string];
    await Promise.all([
      waitForPhase(remoteAdmin, 'cli-b', ok, ['Succeeded'], 30_000),
      waitForPhase(remoteAdmin, 'cli-b', bad, ['Failed'], 30_000),
      waitForPhase(remoteAdmin, 'cli-b', held, ['Running'], 30_000),
    ]);
    const some = await request(['wait', '-l', 'batch=b2', '-n', 'cli-b', '--timeout', '2s']);
    expectCode(some, 21, 'wait -l batch=b2');
    assert.equal(some.stdout, '');
    assert.match(some.stderr, new RegExp(`internalrequest cli-b/${ok}: Succeeded: `));
    assert.match(some.stderr, new RegExp(`internalrequest cli-b/${bad}: Failed: .*failed tasks: build`));
    assert.match(some.stderr, new RegExp(`error: timed out after 2s waiting for internalrequest cli-b/${held} `));
    assert.doesNotMatch(some.stderr, /deleted/);

    const table = await request(['list', '-l', 'batch=b1', '-n', 'cli-b']);
    expectCode(table, 0, 'list');
    const rows = table.stdout.trimEnd().split('\n');
    assert.match(rows[0]!, /^NAME +PIPELINE +STATUS +AGE +MESSAGE$/);
    assert.deepEqual(rows.slice(1).map((l) => l.split(/ +/).slice(0, 3)), [...names].sort().map((n) => [n, 'echo', 'Succeeded']));
    const got = await plugin(['get', names[0]!, '-n', 'cli-b', '-o', 'json']);
    expectCode(got, 0, 'get -o json');
    assert.deepEqual((JSON.parse(got.stdout) as InternalRequest).status?.results, expected[names[0]!]);
  });

  test('a request deleted while waited on: exit 2; cancel deletes', async () => {
    const c = await request(['create', 'hold', '--name', 'held-1', '-n', 'cli-a', '--no-wait']);
    expectCode(c, 0, 'create --name held-1 --no-wait');
    assert.equal(c.stdout, 'held-1\n');
    await waitForPhase(remoteAdmin, 'cli-a', 'held-1', ['Running'], 30_000);
    const waiting = start([KUBECTL_ENTRY, 'wait', 'held-1', '-n', 'cli-a'], { bin: process.execPath });
    await waiting.waitForStderr(/internalrequest cli-a\/held-1: Running, PipelineRun /);
    const cancel = await request(['cancel', 'held-1', '-n', 'cli-a']);
    expectCode(cancel, 0, 'cancel');
    assert.equal(cancel.stdout, 'internalrequest cli-a/held-1 cancelled (deleted)\n');
    const w = await waiting.done;
    expectCode(w, 2, 'wait on a deleted request');
    assert.equal(w.stdout, '');
    assert.match(w.stderr, /error: internalrequest cli-a\/held-1 was deleted while waiting for it \[CLI_REQUEST_GONE\]/);
    const again = await request(['cancel', 'held-1', '-n', 'cli-a']);
    expectCode(again, 2, 'cancel a missing request');
    expectCode(await request(['cancel', 'held-1', '-n', 'cli-a', '--ignore-not-found']), 0, 'cancel --ignore-not-found');
  });
});

describe('bad input: exit 2 with a clear message', () => {
  test('every kind', async () => {
    const closedKubeconfig = join(tmp, 'closed.kubeconfig');
    const kc = parseYaml(readFileSync(requesterKubeconfig, 'utf8')) as { clusters: Array<{ cluster: { server: string } }> };
    kc.clusters[0]!.cluster.server = 'https://127.0.0.1:1';
    writeFileSync(closedKubeconfig, toYaml(kc));
    const outsider = env!.remote.identities.outsider!.kubeconfigPath;
    const cases: Array<[string, string[], RegExp, NodeJS.ProcessEnv?]> = [
      ['malformed -p', ['create', 'echo', '-p', 'image'], /error: param "image" is not key=value \[CLI_PARAM_INVALID\]/],
      ['unreadable -p @file', ['create', 'echo', '-p', 'image=@/nonexistent/file'], /cannot read \/nonexistent\/file: ENOENT.*\[CLI_PARAM_INVALID\]/],
      ['missing pipeline name', ['create', '-p', 'image=x'], /error: no Pipeline name: give --pipeline NAME or NAME as the first argument \[CLI_PIPELINE_NAME\]/],
      ['invalid duration', ['create', 'echo', '--pipeline-timeout', '1hour'], /--pipeline-timeout "1hour" is not a duration .*\[CLI_DURATION_INVALID\]/],
      ['invalid --timeout', ['create', 'echo', '--timeout', 'soon'], /--timeout "soon" is not a duration .*\[CLI_DURATION_INVALID\]/],
      ['timeouts over the pipeline timeout', ['create', 'echo', '--pipeline-timeout', '1h', '--task-timeout', '50m', '--finally-timeout', '20m'], /--task-timeout 50m \+ --finally-timeout 20m is longer than --pipeline-timeout 1h.*\[CLI_DURATION_INVALID\]/],
      ['bad --output', ['create', 'echo', '-o', 'table'], /\[CLI_OUTPUT_INVALID\]/],
      ['unknown flag', ['create', 'echo', '--frobnicate'], /unknown option '--frobnicate'/],
      ['no cluster access (unreachable)', ['create', 'echo', 'image=x', '--kubeconfig', closedKubeconfig], /error: cannot reach cluster "remote" \(https:\/\/127\.0\.0\.1:1\), context "remote-requester" to create an InternalRequest in namespace "cli-bad": .*ECONNREFUSED.*\[CLI_CLUSTER_ACCESS\]/],
      ['no cluster access (forbidden)', ['create', 'echo', 'image=x'], /error: not allowed to create an InternalRequest in namespace "cli-bad" on cluster "remote" \(https:\/\/127\.0\.0\.1:\d+\), context "remote-outsider": HTTP 403: .*User "outsider" cannot create resource "internalrequests".*\[CLI_CLUSTER_ACCESS\]/, { KUBECONFIG: outsider }],
      ['no kubeconfig', ['create', 'echo', 'image=x'], /error: cannot read kubeconfig \/nonexistent\.kubeconfig: ENOENT.*\[CLI_KUBECONFIG\]/, { KUBECONFIG: '/nonexistent.kubeconfig' }],
      ['unknown context', ['create', 'echo', 'image=x', '--context', 'prod'], /--context "prod" is not in .*\(contexts: remote-requester\) \[CLI_KUBECONFIG\]/],
      ['wait: no such request', ['wait', 'nope'], /error: no InternalRequest "nope" in namespace "cli-bad" \[CLI_REQUEST_NOT_FOUND\]/],
      ['wait: nothing matches', ['wait', '-l', 'batch=none'], /no InternalRequests in namespace "cli-bad" match -l batch=none \[CLI_REQUEST_NOT_FOUND\]/],
      ['wait: bad selector', ['wait', '-l', 'a b'], /label selector "a b" is not valid.*\[CLI_LABEL_INVALID\]/],
      ['wait: neither names nor selector', ['wait'], /\[CLI_USAGE\]/],
      ['create: --name taken', ['create', 'echo', 'image=x', '--name', 'taken'], /refused to create an InternalRequest .*already exists.*\[CLI_REQUEST_REFUSED\]/],
    ];
    // "taken" exists already (cli-bad is not on the allowList: it is Rejected, and stays)
    expectCode(await request(['create', 'echo', 'image=x', '--name', 'taken', '-n', 'cli-bad', '--no-wait']), 0, 'create taken');
    const runs = await Promise.all(cases.map(([, args, , e]) => request([...args, '-n', 'cli-bad'], e ? { env: e } : {})));
    runs.forEach((r, i) => {
      const [what, , re] = cases[i]!;
      expectCode(r, 2, what);
      assert.match(r.stderr, re, what);
      assert.equal(r.stdout, '', what);
      assert.equal(r.stderr.trimEnd().split('\n').length, 1, `${what}: one line on stderr`);
    });
    const left = (await remoteAdmin.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({ ...IR, namespace: 'cli-bad' })) as { items: InternalRequest[] };
    assert.deepEqual(left.items.map((i) => i.metadata.name), ['taken'], 'bad input creates nothing');
  });
});

describe('tasks/internal-request.yaml', () => {
  type TaskYaml = {
    metadata: Record<string, unknown>;
    spec: { params: Array<{ name: string; default?: unknown }>; steps: Array<{ command: string[]; args: string[] }> };
  };
  const readTask = (): TaskYaml => parseYaml(readFileSync(join(repoRoot(), 'tasks', 'internal-request.yaml'), 'utf8')) as TaskYaml;
  /** Tekton's substitutions for one TaskRun: the step's command line, with the results' paths under `resultsDir`. */
  const stepArgs = (task: TaskYaml, given: Record<string, string>, arrayParams: string[], resultsDir: string): string[] => {
    const values: Record<string, string> = Object.fromEntries(task.spec.params.map((p) => [p.name, typeof p.default === 'string' ? p.default : '']));
    Object.assign(values, given);
    mkdirSync(resultsDir, { recursive: true });
    return task.spec.steps[0]!.args.flatMap((a) =>
      a === '$(params.params[*])'
        ? arrayParams
        : [
            a
              .replace('$(context.taskRun.namespace)', 'cli-a')
              .replace(/\$\(results\.(\w+)\.path\)/g, (_, n: string) => join(resultsDir, n))
              .replace(/\$\(params\.(\w+)\)/g, (_, n: string) => values[n] ?? `<unknown ${n}>`),
          ],
    );
  };

  test('accepted by the internal apiserver with the Tekton CRDs (strict field validation, nothing pruned); its step runs the CLI', async () => {
    const task = readTask();
    const stored = (await internalAdmin.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      group: 'tekton.dev', version: 'v1', plural: 'tasks', namespace: NS, body: task, fieldValidation: 'Strict',
    })) as { spec: unknown };
    assert.deepEqual(stored.spec, task.spec);

    const resultsDir = join(tmp, 'tekton-results');
    const args = stepArgs(task, { pipeline: 'echo', timeout: '60s', pipelineTimeout: '30m' }, ['image=from-task', 'tags=["t1","t2"]'], resultsDir);
    assert.deepEqual(task.spec.steps[0]!.command, ['internal-services']);
    const r = await start(args).done;
    expectCode(r, 0, 'the Task step');
    const name = readFileSync(join(resultsDir, 'requestName'), 'utf8');
    assert.match(name, /^echo-[a-z0-9]{5}$/);
    assert.equal(readFileSync(join(resultsDir, 'results'), 'utf8'), '{"digest":"sha256:from-task","note":"","tags":"[\\"t1\\",\\"t2\\"]"}');
    const req = await getRequest(remoteAdmin, 'cli-a', name);
    assert.deepEqual(req.spec, { request: 'echo', params: { image: 'from-task', tags: '["t1","t2"]' }, timeouts: { pipeline: '30m' } });
  });

  test('with gitUrl, gitRevision and path its step creates the git shape (Rejected here: no source policy, exit 22)', async () => {
    const resultsDir = join(tmp, 'tekton-results-git');
    const args = stepArgs(readTask(), { gitUrl: 'https://example.com/catalog.git', gitRevision: 'v1', path: 'pipelines/echo.yaml', timeout: '60s' }, ['image=x'], resultsDir);
    const r = await start(args).done;
    expectCode(r, 22, 'the Task step, git shape');
    const req = await getRequest(remoteAdmin, 'cli-a', readFileSync(join(resultsDir, 'requestName'), 'utf8'));
    assert.deepEqual(req.spec, {
      pipeline: { pipelineRef: { resolver: 'git', params: [{ name: 'url', value: 'https://example.com/catalog.git' }, { name: 'revision', value: 'v1' }, { name: 'pathInRepo', value: 'pipelines/echo.yaml' }] } },
      params: { image: 'x' },
    });
  });
});
