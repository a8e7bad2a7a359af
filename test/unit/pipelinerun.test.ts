import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildPipelineRun, convertResults, runOutcomeOf, pastTimeout, requestKeyOf, type RunSpec } from '../../src/tekton/pipelinerun.js';
import { requestedOf } from '../../src/controller/requested-run.js';
import type { InternalRequest } from '../../src/api/types.js';
import { checkParams } from '../../src/tekton/params.js';
import { NS, pipeline, pipelineRun, request, done } from './fixtures.js';

/** What decide() hands over for an installed Pipeline. */
function runSpec(req: InternalRequest): RunSpec {
  const what = requestedOf(req.spec);
  assert.ok(what.kind === 'installed');
  return what;
}

const opts = { namespace: NS, volumeClaim: { name: 'workspace', size: '2Gi' }, params: [{ name: 'image', value: 'quay.io/x' }] };

test('PipelineRun: pipelineRef, params, timeouts, labels and annotations identify the request', () => {
  const long = 'r'.repeat(253);
  const req = request({ timeouts: { pipeline: '1h', tasks: '50m', finally: '10m' } }, { name: long });
  const pr = buildPipelineRun(req, runSpec(req), pipeline(), opts);
  assert.equal(pr.metadata.name, 'ir-u-1');
  assert.equal(pr.metadata.namespace, NS);
  assert.deepEqual(pr.spec.pipelineRef, { name: 'sign' });
  assert.deepEqual(pr.spec.params, [{ name: 'image', value: 'quay.io/x' }]);
  assert.deepEqual(pr.spec.timeouts, { pipeline: '1h', tasks: '50m', finally: '10m' });
  assert.equal(pr.spec.taskRunTemplate, undefined);
  assert.equal(pr.spec.workspaces, undefined);
  assert.equal(pr.metadata.labels?.['internal-services.appstudio.redhat.com/request-uid'], 'u-1');
  assert.equal(pr.metadata.labels?.['internal-services.appstudio.redhat.com/request-namespace'], 'team-a');
  for (const v of Object.values(pr.metadata.labels ?? {})) assert.ok(v.length <= 63, 'label values fit');
  assert.equal(requestKeyOf(pr), `default/team-a/${long}`);
});

test('PipelineRun: the configured workspace is bound to a volumeClaimTemplate only when the Pipeline declares it', () => {
  const with_ = buildPipelineRun(request(), runSpec(request()), pipeline([{ name: 'image' }], ['workspace']), opts);
  assert.deepEqual(with_.spec.workspaces, [
    { name: 'workspace', volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '2Gi' } } } } },
  ]);
  const other = buildPipelineRun(request(), runSpec(request()), pipeline([{ name: 'image' }], ['data']), opts);
  assert.equal(other.spec.workspaces, undefined);
});

test('results: strings as they are, arrays and objects as JSON text', () => {
  assert.deepEqual(convertResults([{ name: 'a', value: 'x "y"' }, { name: 'b', value: ['1', '2'] }, { name: 'c', value: { k: 'v' } }, { name: 'd', value: '' }]), {
    a: 'x "y"',
    b: '["1","2"]',
    c: '{"k":"v"}',
    d: '',
  });
  assert.deepEqual(convertResults(undefined), {});
});

test('outcome: running, succeeded, failed, cancelled', () => {
  assert.deepEqual(runOutcomeOf(pipelineRun()), { done: false, cancelled: false });
  const cancelled = pipelineRun();
  cancelled.spec.status = 'Cancelled';
  assert.deepEqual(runOutcomeOf(cancelled), { done: false, cancelled: true });
  const ok = runOutcomeOf(pipelineRun('u-1', done(true, { results: [{ name: 'r', value: 'v' }] })));
  assert.ok(ok.done && ok.succeeded);
  assert.deepEqual(ok.done && ok.results, { r: 'v' });
  const bad = runOutcomeOf(pipelineRun('u-1', done(false)));
  assert.ok(bad.done && !bad.succeeded && bad.reason === 'Failed');
});

test('params: defaults make a param optional; array and object params take JSON text', () => {
  const p = pipeline([{ name: 'a' }, { name: 'b', default: 'x' }, { name: 'list', type: 'array', default: [] }, { name: 'obj', type: 'object', default: {} }]);
  const ok = checkParams('sign', p, { a: '1', list: '["x","y"]', obj: '{"k":"v"}' });
  assert.ok(ok.ok);
  assert.deepEqual(ok.ok && ok.params, [
    { name: 'a', value: '1' },
    { name: 'list', value: ['x', 'y'] },
    { name: 'obj', value: { k: 'v' } },
  ]);
  const bad = checkParams('sign', p, { b: '2', list: 'not json', obj: '[1]', zzz: '' });
  assert.ok(!bad.ok);
  assert.deepEqual(!bad.ok && bad.missing, ['a']);
  assert.deepEqual(!bad.ok && bad.undeclared, ['zzz']);
  assert.equal(!bad.ok && bad.malformed.length, 2);
  assert.equal(
    !bad.ok && bad.message,
    'params do not match Pipeline "sign": missing required params: "a"; undeclared params: "zzz"; ' +
      'malformed params: "list" (expected a JSON array of strings), "obj" (expected a JSON object of strings) (it declares: "a", "b", "list", "obj")',
  );
});

test('params: unicode and 100 KiB values pass through unchanged', () => {
  const big = 'ü✓'.repeat(100 * 1024 / 2);
  const r = checkParams('sign', pipeline([{ name: 'image' }]), { image: big });
  assert.ok(r.ok && r.params[0]!.value === big);
});

test("the request's labels go to the PipelineRun, except reserved ones (ours, Tekton's, Kubernetes')", async () => {
  const { buildPipelineRun, reservedLabel, LABEL_REQUEST_UID } = await import('../../src/tekton/pipelinerun.js');
  const req = {
    apiVersion: 'appstudio.redhat.com/v1alpha1',
    kind: 'InternalRequest',
    metadata: {
      name: 'r', namespace: 'team-a', uid: 'u-9',
      labels: {
        'internal-services.appstudio.openshift.io/pipelinerun-uid': 'abc',
        release: 'app-1.2',
        'internal-services.appstudio.redhat.com/request-uid': 'forged',
        'tekton.dev/pipeline': 'x',
        'results.tekton.dev/foo': 'y',
        'app.kubernetes.io/managed-by': 'me',
        'app.kubernetes.io/part-of': 'z',
      },
    },
    spec: { request: 'sign' },
  } as const;
  const pr = buildPipelineRun(req as never, { pipeline: 'sign' }, { metadata: { name: 'sign' } }, { namespace: 'internal-services', volumeClaim: { name: 'w', size: '1Gi' }, params: [] });
  assert.equal(pr.metadata.labels?.['release'], 'app-1.2');
  assert.equal(pr.metadata.labels?.['internal-services.appstudio.openshift.io/pipelinerun-uid'], 'abc', "the production controller's label prefix is the requester's");
  assert.equal(pr.metadata.labels?.[LABEL_REQUEST_UID], 'u-9', 'a label cannot pose as another request');
  assert.equal(pr.metadata.labels?.['tekton.dev/pipeline'], undefined);
  assert.equal(pr.metadata.labels?.['results.tekton.dev/foo'], undefined);
  assert.equal(pr.metadata.labels?.['app.kubernetes.io/managed-by'], 'internal-services');
  assert.equal(pr.metadata.labels?.['app.kubernetes.io/part-of'], undefined);
  assert.ok(reservedLabel('k8s.io/x') && reservedLabel('sub.k8s.io/x') && !reservedLabel('example.com/x') && !reservedLabel('plain'));
});

test('past its timeout: an unfinished run more than the grace past timeouts.pipeline; finished and untimed runs never', () => {
  const start = Date.parse('2026-11-23T10:00:00Z');
  const run = (timeout: string | undefined, status: Record<string, unknown> = {}) => {
    const pr = pipelineRun('u-t', { startTime: '2026-11-23T10:00:00Z', ...status } as never);
    pr.spec = { ...pr.spec, ...(timeout !== undefined ? { timeouts: { pipeline: timeout } } : {}) };
    return pr;
  };
  const min = 60_000;
  assert.equal(pastTimeout(run('1h0m0s'), start + 60 * min + 4 * min), false, 'within the 5 min grace');
  assert.equal(pastTimeout(run('1h0m0s'), start + 60 * min + 6 * min), true);
  assert.equal(pastTimeout(run('1h0m0s'), start + 66 * min, 10 * min), false, 'a longer grace');
  assert.equal(pastTimeout(run('0s'), start + 1000 * min), false, '0: no timeout');
  assert.equal(pastTimeout(run(undefined), start + 1000 * min), false, 'none: no timeout');
  const finished = run('1h0m0s', { conditions: [{ type: 'Succeeded', status: 'False', reason: 'PipelineRunTimeout', message: 'timed out' }] });
  assert.equal(pastTimeout(finished, start + 1000 * min), false, 'Tekton ended it');
});
