/**
 * Smoke test of the benchmark (bench/, docs/benchmarks.md), so that it cannot
 * rot: a real run with N=50 as a process (simulated executor), checked for
 * correctness and for the presence of every figure in its JSON — never for
 * speed, which depends on the machine; a run with N=10 on real Tekton
 * (`--tekton real`), checked for correctness and for which Tekton the report
 * names; a run with N=30 over three kcp workspaces (`--kcp`), checked for
 * correctness and for the kcp figures. Plus the correctness rules themselves
 * on made-up records.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../../src/util/repo.js';
import { CONTROLLER_USERNAME, ensureKcpBinary } from '../../src/localenv/index.js';
import { correctness } from '../../bench/analyze.js';
import type { AuditEvent } from '../../bench/audit.js';
import { isErrorLine } from '../../bench/controller-process.js';
import { expectedResults } from '../../bench/pipeline.js';
import type { RequestRecord } from '../../bench/observer.js';
import type { BenchResult } from '../../bench/types.js';

const BENCH = join(repoRoot(), 'dist', 'bench', 'main.js');
const tmp = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

function run(args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [BENCH, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const t = setTimeout(() => {
      p.kill('SIGTERM');
      reject(new Error(`benchmark did not finish in ${timeoutMs} ms; stderr:\n${stderr.slice(-3000)}`));
    }, timeoutMs);
    p.on('exit', (code) => {
      clearTimeout(t);
      resolve({ code, stdout, stderr });
    });
  });
}

const isNum = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);

/** Every allowed request got exactly one PipelineRun and the right outcome; no rejected one got any; all finished. */
function assertAllCorrect(c: BenchResult['passes'][number]['correctness'], allowed: number, rejected: number): void {
  assert.equal(c.ok, true, c.failures.join('\n'));
  assert.equal(c.allowed, allowed);
  assert.equal(c.rejected, rejected);
  assert.equal(c.allowedWithoutPipelineRun + c.allowedWithSeveralPipelineRuns + c.rejectedWithPipelineRun, 0);
  assert.equal(c.pipelineRunCreatesPerAllowed.exactlyOne, allowed);
  assert.equal(c.neverFinished, 0);
  assert.equal(c.wrongOutcome, 0);
}

describe('npm run bench', () => {
  test('N=50: correct, and the JSON has every figure', { timeout: 60_000 }, async () => {
    const json = join(tmp, 'result.json');
    const out = await run(['--requests', '50', '--burst', '--rejected-share', '0.2', '--json', json, '--quiet'], 55_000);
    assert.equal(out.code, 0, `exit code ${out.code}\n${out.stdout}\n${out.stderr.slice(-3000)}`);
    assert.match(out.stdout, /RESULT: OK/);
    assert.match(out.stdout, /^Tekton: SIMULATED executor \(no Tekton controller\)$/m);
    const r = JSON.parse(readFileSync(json, 'utf8')) as BenchResult;
    assert.equal(r.ok, true, r.failures.join('\n'));
    assert.equal(r.meta.tekton.mode, 'simulated');
    assert.equal(r.passes.length, 1);
    const p = r.passes[0]!;

    // Correctness: every allowed request got exactly one PipelineRun, no rejected one got any, all finished, no errors.
    const c = p.correctness;
    assertAllCorrect(c, 40, 10);
    assert.equal(c.pipelineRunCreatesPerAllowed.forRejected, 0);
    assert.equal(c.controllerErrorLines, 0);

    // The figures are all there (their values depend on the machine).
    assert.ok(isNum(p.throughput) && p.throughput > 0);
    assert.ok(isNum(p.allTerminalSeconds));
    for (const [name, d] of Object.entries(p.latencyMs)) {
      for (const k of ['p50', 'p90', 'p99', 'max'] as const) assert.ok(isNum(d[k]), `latency ${name}.${k}`);
    }
    assert.equal(p.latencyMs.createToTerminal.count, 40);
    assert.equal(p.latencyMs.createToRejected.count, 10);
    const rows = p.api.rows;
    const has = (cluster: string, verb: string, resource: string) => rows.some((x) => x.cluster === cluster && x.verb === verb && x.resource === resource && x.count > 0);
    assert.ok(has('internal', 'create', 'pipelineruns'), JSON.stringify(rows));
    assert.ok(has('remote', 'update', 'internalrequests/status') || has('remote', 'patch', 'internalrequests/status'), JSON.stringify(rows));
    assert.ok(isNum(p.api.stateWritesPerAllowed.mean) && p.api.stateWritesPerAllowed.mean >= 2);
    assert.ok(isNum(p.api.readsOutsideListWatch));
    assert.ok(isNum(p.api.eventsCreated));
    assert.ok(isNum(p.controller.cpuSeconds) && p.controller.cpuSeconds > 0);
    assert.ok(isNum(p.controller.cpuMsPerRequest));
    assert.ok(isNum(p.controller.rssPeakMB) && p.controller.rssPeakMB > 10);
    assert.ok(isNum(p.controller.rssEndMB) && p.controller.rssEndMB > 10);
    assert.ok(isNum(p.cpuCores['controller']));
    assert.ok(r.controllerStart && isNum(r.controllerStart.readyMs));
    assert.ok(r.targets.length >= 4);
    assert.match(r.meta.commit, /^[0-9a-f]+$|^unknown$/);
  });

  test('--tekton real, N=10: the report says real Tekton; every request succeeded with exactly one PipelineRun', { timeout: 240_000 }, async () => {
    const json = join(tmp, 'real.json');
    const out = await run(['--tekton', 'real', '--requests', '10', '--burst', '--rejected-share', '0.2', '--json', json, '--quiet'], 230_000);
    assert.equal(out.code, 0, `exit code ${out.code}\n${out.stdout}\n${out.stderr.slice(-3000)}`);
    assert.match(out.stdout, /RESULT: OK/);
    assert.match(out.stdout, /^Tekton: real v\d+\.\d+\.\d+ controller\+resolvers\+webhook, pods simulated$/m);
    const r = JSON.parse(readFileSync(json, 'utf8')) as BenchResult;
    assert.equal(r.ok, true, r.failures.join('\n'));
    assert.equal(r.meta.tekton.mode, 'real');
    assert.deepEqual(r.meta.tekton.components, ['controller', 'resolvers', 'webhook']);
    const p = r.passes[0]!;
    assert.equal(p.workload.tekton, 'real');

    // All succeeded (with the results the simulated executor would give: checked by the benchmark), exactly one PipelineRun each.
    assertAllCorrect(p.correctness, 8, 2);
    assert.equal(p.latencyMs.createToTerminal.count, 8);

    // Tekton talked to the internal apiserver under its own identities; the per-request figures count the controller's only.
    assert.ok(p.api.byIdentity.some((b) => b.cluster === 'internal' && b.user.startsWith('system:serviceaccount:tekton-pipelines:') && b.writes > 0), JSON.stringify(p.api.byIdentity));
    // The controller reads one Lease itself, by name: the Go controller's (the incumbent check while it serves, docs/migrating.md).
    const notOurs = p.api.rows.filter((x) => /^(taskruns|pods)/.test(x.resource) || (x.resource.startsWith('leases') && x.verb !== 'get') || (x.resource.startsWith('pipelineruns') && !['create', 'delete', 'list', 'watch'].includes(x.verb)));
    assert.deepEqual(notOurs, [], 'requests by Tekton counted as the controller\'s');
    assert.equal(p.api.stateWritesPerAllowed.max, 4);
    assert.ok(isNum(p.cpuMsPerRequest['tekton']) && p.cpuMsPerRequest['tekton'] > 0);
  });
});

describe('npm run bench -- --kcp --shards 2', () => {
  // kcp's binaries first, outside the benchmark's own time limit: on a cold
  // machine their build (about 5 minutes, hack/kcp/install.sh) may still be
  // running in npm test's background job.
  before(() => ensureKcpBinary().then(() => undefined), { timeout: 1_800_000 });
  test('--kcp --shards 2 --workspaces 3, N=30: correct across the workspaces on both shards, and the JSON has the kcp figures per shard', { timeout: 300_000 }, async () => {
    const json = join(tmp, 'kcp.json');
    const out = await run(['--kcp', '--shards', '2', '--workspaces', '3', '--requests', '30', '--burst', '--json', json, '--quiet'], 290_000);
    assert.equal(out.code, 0, `exit code ${out.code}\n${out.stdout}\n${out.stderr.slice(-3000)}`);
    assert.match(out.stdout, /RESULT: OK/);
    assert.match(out.stdout, /^remote: real kcp v\d+\.\d+\.\d+, sharded: root \(2 workspaces\), shard-1 \(1 workspaces\), cache server and front-proxy .*3 tenant workspaces set up in/m);
    assert.match(out.stdout, /^ +shard shard-1: CPU [\d.]+ cores, [\d.]+ ms per request; RSS peak \d+/m);
    const r = JSON.parse(readFileSync(json, 'utf8')) as BenchResult;
    assert.equal(r.ok, true, r.failures.join('\n'));
    assert.ok(r.kcp, 'the kcp section');
    assert.equal(r.kcp.workspaces, 3);
    assert.ok(isNum(r.kcp.startupMs) && isNum(r.kcp.workspacesMs.total) && r.kcp.workspacesMs.total > 0);
    assert.ok(isNum(r.kcp.rssAtControllerReadyMB) && r.kcp.rssAtControllerReadyMB > 50);
    const p = r.passes[0]!;
    // 27 allowed over the three workspaces' namespace "bench", 3 from their "bench-outside"; the audit of PipelineRun creates is the internal cluster's.
    assertAllCorrect(p.correctness, 27, 3);
    assert.equal(p.workload.namespaces, 3);
    assert.ok(p.kcp && isNum(p.kcp.rssPeakMB) && p.kcp.rssPeakMB > 50);
    assert.deepEqual(r.kcp.shards, [{ name: 'root', workspaces: 2 }, { name: 'shard-1', workspaces: 1 }]);
    assert.deepEqual(p.kcp.shards?.map((x) => x.name), ['root', 'shard-1']);
    for (const sh of p.kcp.shards ?? []) assert.ok(isNum(sh.rssPeakMB) && sh.rssPeakMB > 50 && isNum(sh.cpuCores) && sh.cpuMsPerRequest > 0, JSON.stringify(sh));
    assert.ok(isNum(p.cpuMsPerRequest['kcp']) && p.cpuMsPerRequest['kcp'] > 0);
    assert.ok(isNum(p.cpuCores['kcp']));
    assert.ok(isNum(p.throughput) && p.throughput > 0);
    assert.equal(p.latencyMs.createToTerminal.count, 27);
    // The shards' audit logs: the controller's status writes through the virtual workspaces are counted as its own.
    const rows = p.api.rows;
    assert.ok(rows.some((x) => x.cluster === 'remote' && x.resource === 'internalrequests/status' && x.count > 0), JSON.stringify(rows));
    assert.ok(isNum(p.api.stateWritesPerAllowed.mean) && p.api.stateWritesPerAllowed.mean >= 2);
  });
});

describe('the correctness rules', () => {
  const rec = (name: string, allowed: boolean, over: Partial<RequestRecord> = {}): RequestRecord => ({
    key: `ns/${name}`,
    namespace: 'ns',
    name,
    pass: 1,
    allowed,
    uid: `uid-${name}`,
    ackAt: 0,
    terminalAt: 10,
    terminalStatus: allowed ? 'True' : 'False',
    terminalReason: allowed ? 'Succeeded' : 'Rejected',
    resultCount: allowed ? 1 : 0,
    prUids: new Set(allowed ? [`pr-${name}`] : []),
    prNames: new Set(allowed ? [`ir-uid-${name}`] : []),
    prDeletedAt: allowed ? 5 : undefined,
    ...over,
  });
  const create = (name: string, code = 201): AuditEvent => ({
    auditID: `a-${name}-${Math.random()}`,
    stage: 'ResponseComplete',
    verb: 'create',
    user: { username: CONTROLLER_USERNAME },
    objectRef: { resource: 'pipelineruns', name },
    responseStatus: { code },
  });
  const base = { controllerUser: CONTROLLER_USERNAME, errorLines: 0, errorSamples: [], controllerExited: null, observerGaps: 0 };

  test('a clean run passes; a refused duplicate create (409) is not a second PipelineRun', () => {
    const c = correctness({ ...base, records: [rec('a', true), rec('r', false)], audit: { remote: [], internal: [create('ir-uid-a'), create('ir-uid-a', 409)] } });
    assert.equal(c.ok, true, c.failures.join('\n'));
  });

  test("the benchmark Pipeline's expected results are the simulated executor's", () => {
    assert.deepEqual(expectedResults({ image: 'quay.io/x@sha256:0' }), { digest: 'digest:{"image":"quay.io/x@sha256:0"}' });
    const c = correctness({
      ...base,
      records: [rec('a', true, { params: { image: 'q' }, results: { digest: 'digest:{"image":"q"}' } })],
      audit: { remote: [], internal: [create('ir-uid-a')] },
      expectedResults,
    });
    assert.equal(c.ok, true, c.failures.join('\n'));
  });

  test('two PipelineRuns, a PipelineRun for a rejected request, an unfinished request, error lines: each fails', () => {
    const cases: Array<[string, Parameters<typeof correctness>[0]]> = [
      ['more than one', { ...base, records: [rec('a', true, { prUids: new Set(['x', 'y']) })], audit: { remote: [], internal: [create('ir-uid-a')] } }],
      ['audit log: 1 allowed requests had more than one', { ...base, records: [rec('a', true)], audit: { remote: [], internal: [create('ir-uid-a'), create('ir-uid-a')] } }],
      ['rejected requests got', { ...base, records: [rec('r', false, { prUids: new Set(['x']) })], audit: { remote: [], internal: [] } }],
      ['never finished', { ...base, records: [rec('a', true, { terminalAt: undefined })], audit: { remote: [], internal: [create('ir-uid-a')] } }],
      ['wrong outcome', { ...base, records: [rec('a', true, { terminalStatus: 'False', terminalReason: 'Failed' })], audit: { remote: [], internal: [create('ir-uid-a')] } }],
      ['error-level lines', { ...base, errorLines: 1, errorSamples: ['boom'], records: [rec('a', true)], audit: { remote: [], internal: [create('ir-uid-a')] } }],
      [
        'expected results',
        {
          ...base,
          records: [rec('a', true, { params: { image: 'i' }, results: { digest: 'other' } })],
          audit: { remote: [], internal: [create('ir-uid-a')] },
          expectedResults: (params) => ({ digest: `digest:${JSON.stringify(params)}` }),
        },
      ],
    ];
    for (const [what, input] of cases) {
      const c = correctness(input);
      assert.equal(c.ok, false, what);
      assert.ok(c.failures.some((f) => f.includes(what)), `${what}: ${c.failures.join('; ')}`);
    }
  });

  test('error-level log lines of common formats are recognised', () => {
    assert.ok(isErrorLine('{"level":"error","msg":"x"}'));
    assert.ok(isErrorLine('{"level":50,"msg":"x"}'));
    assert.ok(isErrorLine('E1122 10:00:00.000000       1 controller.go:12] boom'));
    assert.ok(isErrorLine('2026-11-22T10:00:00Z\tERROR\tsetup\tproblem'));
    assert.ok(!isErrorLine('{"level":"info","msg":"error budget fine"}'));
    assert.ok(!isErrorLine('I1122 10:00:00.000000       1 controller.go:12] ok'));
  });
});
