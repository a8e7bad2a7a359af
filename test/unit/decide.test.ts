import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide, type Action, type Observation } from '../../src/controller/decide.js';
import type { ArchiveVerdict, FetchedLogs } from '../../src/controller/results-archive.js';
import type { InternalRequest, InternalRequestStatus } from '../../src/api/types.js';
import { effectiveConfig } from '../../src/controller/config.js';
import { assertPhase, config, done, NOW, NS, pipeline, pipelineRun, request, runningStatus, TODAYS_PAYLOAD, observation } from './fixtures.js';
import { inProgress, Phase } from '../../src/api/conditions.js';
import { INCUMBENT_LABEL_NAME, INCUMBENT_LABEL_NAMESPACE, pipelineRunName } from '../../src/tekton/pipelinerun.js';
import { INCUMBENT_FINALIZER } from '../../src/requests/incumbent.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';

const observe = (o: Partial<Observation>): Observation => observation(o);
const types = (a: Action[]) => a.map((x) => x.type);
const statusOf = (a: Action[]) => {
  const w = a.find((x) => x.type === 'writeStatus');
  assert.ok(w && w.type === 'writeStatus', 'expected a status write');
  return w;
};
const terminal = (reason: string, st: 'True' | 'False' = 'False'): InternalRequestStatus => ({
  conditions: [{ type: 'Succeeded', status: st, reason, message: 'm', lastTransitionTime: '2026-11-22T09:00:00Z' }],
});

test('a new allowed request gets exactly one PipelineRun, then is marked Running', () => {
  const a = decide(observe({}));
  assert.deepEqual(types(a), ['createPipelineRun', 'writeStatus']);
  const create = a[0]!;
  assert.ok(create.type === 'createPipelineRun');
  assert.equal(create.pipelineRun.metadata.name, 'ir-u-1');
  const w = statusOf(a);
  assert.equal(w.status.conditions?.[0]?.reason, 'Running');
  assert.equal(w.status.conditions?.[0]?.status, 'Unknown');
  assert.equal(w.status.pipelineRun, `${NS}/ir-u-1`);
  assert.equal(w.status.startTime, '2026-11-22T10:00:00Z');
  assert.equal(w.status.observedGeneration, 1);
});

test('rejections carry a message a requester can act on', () => {
  const cases: Array<{ name: string; o: Partial<Observation>; code: string; message: RegExp }> = [
    { name: 'namespace not allowed', o: { config: config({ allowList: ['team-b'] }) }, code: 'REQUEST_NAMESPACE_NOT_ALLOWED', message: /namespace "team-a" on remote "default" is not on the allowList of InternalServicesConfig internal-services\/config/ },
    { name: 'empty allowList', o: { config: config({ allowList: [] }) }, code: 'REQUEST_NAMESPACE_NOT_ALLOWED', message: /team-a/ },
    { name: 'pipeline missing', o: { pipeline: undefined }, code: 'REQUEST_PIPELINE_NOT_FOUND', message: /no Pipeline named "sign" in namespace "internal-services"/ },
    { name: 'required param missing', o: { request: request({ params: {} }) }, code: 'REQUEST_PARAMS_INVALID', message: /missing required params: "image"/ },
    { name: 'undeclared param', o: { request: request({ params: { image: 'x', evil: 'y' } }) }, code: 'REQUEST_PARAMS_INVALID', message: /undeclared params: "evil"/ },
    { name: 'service account with none allowed', o: { request: request({ serviceAccount: 'root' }) }, code: 'REQUEST_SERVICE_ACCOUNT_NOT_ALLOWED', message: /allows no service accounts/ },
    { name: 'service account not in list', o: { request: request({ serviceAccount: 'root' }), config: config({ allowList: ['team-a'], allowedServiceAccounts: ['signer'] }) }, code: 'REQUEST_SERVICE_ACCOUNT_NOT_ALLOWED', message: /allowed: "signer"/ },
  ];
  for (const c of cases) {
    const a = decide(observe(c.o));
    assert.deepEqual(types(a), ['writeStatus'], c.name);
    const w = statusOf(a);
    assert.equal(w.code, c.code, c.name);
    const cond = w.status.conditions?.[0];
    assert.equal(cond?.type, 'Succeeded', c.name);
    assert.equal(cond?.status, 'False', c.name);
    assert.equal(cond?.reason, 'Rejected', c.name);
    assert.match(cond?.message ?? '', c.message, c.name);
    assert.equal(w.event?.type, 'Warning', c.name);
    assert.ok(w.status.completionTime, c.name);
  }
});

test('the allowList is checked before anything about the Pipeline', () => {
  const a = decide(observe({ config: config({ allowList: [] }), pipeline: undefined }));
  assert.equal(statusOf(a).code, 'REQUEST_NAMESPACE_NOT_ALLOWED');
});

test('an allowed service account is used for the TaskRuns', () => {
  const a = decide(observe({ request: request({ serviceAccount: 'signer' }), config: config({ allowList: ['team-a'], allowedServiceAccounts: ['signer'] }) }));
  const c = a[0]!;
  assert.ok(c.type === 'createPipelineRun');
  assert.deepEqual(c.pipelineRun.spec.taskRunTemplate, { serviceAccountName: 'signer' });
});

test('a finished request is left alone', () => {
  for (const reason of ['Succeeded', 'Failed', 'Rejected']) {
    const req = request({}, {}, terminal(reason, reason === 'Succeeded' ? 'True' : 'False'));
    assert.deepEqual(decide(observe({ request: req, config: config({ allowList: [] }), pipeline: undefined })), [], reason);
  }
});

test('a finished request with its finished PipelineRun still there: the PipelineRun is removed, unless debug', () => {
  const req = request({}, {}, terminal('Succeeded', 'True'));
  const pr = pipelineRun('u-1', done(true));
  assert.deepEqual(types(decide(observe({ request: req, pipelineRuns: [pr] }))), ['deletePipelineRun']);
  assert.deepEqual(decide(observe({ request: req, pipelineRuns: [pr], config: config({ allowList: ['team-a'], debug: true }) })), []);
});

test('PipelineRun exists (created before a restart) but request not yet Running: only the status is written', () => {
  const a = decide(observe({ pipelineRuns: [pipelineRun('u-1')] }));
  assert.deepEqual(types(a), ['writeStatus']);
  assert.equal(statusOf(a).status.conditions?.[0]?.reason, 'Running');
});

test('running request whose status is current: nothing to do', () => {
  const req = request({}, {}, {
    conditions: inProgress(undefined, Phase.Running, { message: `PipelineRun ${NS}/ir-u-1 is running`, observedGeneration: 1 }, new Date('2026-11-22T09:00:00Z')),
    pipelineRun: `${NS}/ir-u-1`,
    observedGeneration: 1,
    startTime: '2026-11-22T09:00:00Z',
  });
  assert.deepEqual(decide(observe({ request: req, pipelineRuns: [pipelineRun('u-1', runningStatus())] })), []);
});

test("upgrade: an earlier version's in-progress reason in conditions[0] is rewritten to the contract's shape on the next reconcile, once", () => {
  const legacy = (reason: string, message: string) => ({ conditions: [{ type: 'Succeeded', status: 'Unknown' as const, reason, message, lastTransitionTime: '2026-11-22T09:00:00Z', observedGeneration: 1 }], observedGeneration: 1 });
  // written by the previous version while the configuration was missing; still missing
  const noConfig = effectiveConfig(undefined, NS);
  const w = statusOf(decide(observe({ request: request({}, {}, legacy('Pending', 'old words')), config: noConfig })));
  assertPhase(w.status, 'WaitingForConfig');
  assert.equal(w.status.conditions?.[0]?.lastTransitionTime, '2026-11-22T09:00:00Z', 'still Unknown: no transition of Succeeded');
  assert.deepEqual(decide(observe({ request: request({}, {}, w.status), config: noConfig })), [], 'then left alone');
  // Queued / AwaitingApproval / Following / Resolving under the previous version, now admitted and running
  for (const old of ['Queued', 'AwaitingApproval', 'Following', 'Resolving']) {
    const req = request({}, {}, { ...legacy(old, 'old words'), pipelineRun: `${NS}/ir-u-1`, startTime: '2026-11-22T09:00:00Z' });
    const a = decide(observe({ request: req, pipelineRuns: [pipelineRun('u-1', runningStatus())] }));
    assertPhase(statusOf(a).status, 'Running');
  }
  // Running in the previous version's shape (no Progressing condition): given one
  const run = request({}, {}, { ...legacy('Running', `PipelineRun ${NS}/ir-u-1 is running`), pipelineRun: `${NS}/ir-u-1`, startTime: '2026-11-22T09:00:00Z' });
  assertPhase(statusOf(decide(observe({ request: run, pipelineRuns: [pipelineRun('u-1', runningStatus())] }))).status, 'Running');
});

test('a finished request is never written again, whatever shape its conditions have', () => {
  for (const [status, reason] of [['True', 'Succeeded'], ['False', 'Failed'], ['False', 'Rejected']] as const) {
    const req = request({}, {}, { conditions: [{ type: 'Succeeded', status, reason, message: 'old', lastTransitionTime: '2026-11-22T09:00:00Z' }], completionTime: '2026-11-22T09:00:00Z' });
    const a = decide(observe({ request: req, config: effectiveConfig(undefined, NS) }));
    assert.ok(!a.some((x) => x.type === 'writeStatus'), `${reason}: not written`);
  }
});

test('a succeeded PipelineRun: results copied, Succeeded True, then the PipelineRun deleted', () => {
  const pr = pipelineRun('u-1', done(true, { results: [{ name: 'sig', value: 'abc' }, { name: 'list', value: ['a', 'b'] }, { name: 'obj', value: { k: 'v' } }] }));
  const a = decide(observe({ pipelineRuns: [pr] }));
  assert.deepEqual(types(a), ['writeStatus', 'deletePipelineRun']);
  const w = statusOf(a);
  assert.equal(w.status.conditions?.[0]?.status, 'True');
  assert.equal(w.status.conditions?.[0]?.reason, 'Succeeded');
  assert.deepEqual(w.status.results, { sig: 'abc', list: '["a","b"]', obj: '{"k":"v"}' });
  assert.equal(w.status.completionTime, '2026-11-22T09:59:50Z');
});

test('debug keeps the PipelineRun', () => {
  const pr = pipelineRun('u-1', done(true));
  const a = decide(observe({ pipelineRuns: [pr], config: config({ allowList: ['team-a'], debug: true }) }));
  assert.deepEqual(types(a), ['writeStatus']);
});

test('a failed PipelineRun: Failed with reason, message and failed task names', () => {
  const a = decide(observe({ pipelineRuns: [pipelineRun('u-1', done(false))], failedTasks: ['sign', 'build'] }));
  assert.deepEqual(types(a), ['writeStatus', 'deletePipelineRun']);
  const c = statusOf(a).status.conditions?.[0];
  assert.equal(c?.status, 'False');
  assert.equal(c?.reason, 'Failed');
  assert.match(c?.message ?? '', /PipelineRun internal-services\/ir-u-1 failed: Failed: Tasks Completed: 2 \(Failed: 1, Cancelled 0\), Skipped: 0; failed tasks: build, sign/);
});

test('request deleted: its running PipelineRun is cancelled, and removed once Tekton reports it stopped', () => {
  const pr = pipelineRun('u-1', runningStatus());
  assert.deepEqual(types(decide(observe({ request: undefined, pipelineRuns: [pr] }))), ['cancelPipelineRun']);
  // being deleted (deletionTimestamp set) counts as deleted
  const deleting = request({}, { deletionTimestamp: '2026-11-22T09:59:59Z' });
  assert.deepEqual(types(decide(observe({ request: deleting, pipelineRuns: [pr] }))), ['cancelPipelineRun']);
  // cancellation asked, Tekton not done yet: nothing more to do
  const cancelling = { ...pr, spec: { ...pr.spec, status: 'Cancelled' as const } };
  assert.deepEqual(types(decide(observe({ request: undefined, pipelineRuns: [cancelling] }))), []);
  // finished (Cancelled, or ended before): removed; with debug: kept
  assert.deepEqual(types(decide(observe({ request: undefined, pipelineRuns: [pipelineRun('u-1', done(true))] }))), ['deletePipelineRun']);
  assert.deepEqual(types(decide(observe({ request: undefined, pipelineRuns: [pipelineRun('u-1', done(false))], config: config({ debug: true }) }))), []);
  assert.deepEqual(types(decide(observe({ request: undefined, pipelineRuns: [pr], config: config({ debug: true }) }))), ['cancelPipelineRun']);
});

test('request re-created under the same name: the old PipelineRun is an orphan, the new request gets its own', () => {
  const old = pipelineRun('u-old', runningStatus());
  const a = decide(observe({ request: request({}, { uid: 'u-new' }), pipelineRuns: [old] }));
  assert.deepEqual(types(a), ['cancelPipelineRun', 'createPipelineRun', 'writeStatus']);
  const c = a[1]!;
  assert.ok(c.type === 'createPipelineRun');
  assert.equal(c.pipelineRun.metadata.name, 'ir-u-new');
});

test('Running request whose PipelineRun disappeared: Failed, never run twice', () => {
  const req = request({}, {}, { conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running', message: 'x', lastTransitionTime: '2026-11-22T09:00:00Z' }], pipelineRun: `${NS}/ir-u-1` });
  const a = decide(observe({ request: req }));
  assert.deepEqual(types(a), ['writeStatus']);
  assert.equal(statusOf(a).code, 'PIPELINERUN_MISSING');
  assert.equal(statusOf(a).status.conditions?.[0]?.reason, 'Failed');
});

test('the Succeeded condition stays entry 0 and other conditions are kept', () => {
  const req = request({}, {}, { conditions: [{ type: 'Approved', status: 'True', reason: 'Approved', message: 'ok', lastTransitionTime: '2026-11-22T09:00:00Z' }] });
  const w = statusOf(decide(observe({ request: req })));
  assert.deepEqual(w.status.conditions?.map((c) => c.type), ['Succeeded', 'Progressing', 'Approved']);
});

test('a malformed request (stored under an older schema) is rejected with what is wrong, once the namespace is allowed', () => {
  const cases: Array<[unknown, RegExp]> = [
    [undefined, /spec is missing/],
    [{ params: {} }, /give one of spec.request .* or spec.pipeline/],
    [{ pipeline: 'sign' }, /spec.pipeline must be an object/],
    [{ pipeline: {} }, /spec.pipeline.pipelineRef must be an object/],
    [{ pipeline: { pipelineRef: { resolver: 'git', params: [{ name: 'url' }] } } }, /spec.pipeline.pipelineRef.params must be a list of \{name, value\}/],
    [{ pipeline: { pipelineRef: { name: 'sign' }, timeouts: { pipeline: 'soon' } } }, /spec.pipeline.timeouts.pipeline must be a duration/],
    [{ request: 'Not A Name' }, /spec.request must be the name/],
    [{ request: 'sign', params: { image: 1, b: true } }, /not strings: b, image/],
    [{ request: 'sign', params: ['x'] }, /spec.params must be a map of strings/],
    [{ request: 'sign', params: { image: 'x' }, timeouts: { pipeline: 'forever' } }, /spec.timeouts.pipeline must be a duration/],
    [{ request: 'sign', params: { image: 'x' }, timeouts: { total: '1h' } }, /spec.timeouts.total is not a timeout Tekton knows/],
    [{ request: 'sign', params: { image: 'x' }, serviceAccount: 'Root!' }, /spec.serviceAccount must be a service account name/],
  ];
  for (const [spec, msg] of cases) {
    const req = { ...request(), spec } as unknown as InternalRequest;
    const w = statusOf(decide(observe({ request: req })));
    assert.equal(w.code, 'REQUEST_INVALID', JSON.stringify(spec));
    assert.match(w.status.conditions?.[0]?.message ?? '', msg, JSON.stringify(spec));
    // from a namespace that is not allowed, the namespace is what is reported
    const other = { ...req, metadata: { ...req.metadata, namespace: 'elsewhere' } } as InternalRequest;
    assert.equal(statusOf(decide(observe({ request: other }))).code, 'REQUEST_NAMESPACE_NOT_ALLOWED');
  }
});


test('spec.pipeline with a resolver: Rejected, default deny, saying what is allowed and how to proceed', () => {
  const req = { ...request(), spec: TODAYS_PAYLOAD } as unknown as InternalRequest;
  const a = decide(observe({ request: req, pipeline: undefined }));
  assert.deepEqual(types(a), ['writeStatus']);
  const w = statusOf(a);
  assert.equal(w.code, 'REQUEST_SOURCE_NOT_ALLOWED');
  assert.match(
    w.status.conditions?.[0]?.message ?? '',
    /asks for the "git" resolver, but remote resolution is not enabled on this internal cluster: InternalServicesConfig internal-services\/config has no source policy \(allowedGitResolverURLs or sources\), so only Pipelines installed in namespace "internal-services" can run\. Name one with spec\.pipeline\.pipelineRef\.name .*ask the administrators of the internal cluster to allow this source \(docs\/security\.md\)/,
  );
  // the namespace is still checked first
  const other = { ...req, metadata: { ...req.metadata, namespace: 'elsewhere' } } as InternalRequest;
  assert.equal(statusOf(decide(observe({ request: other }))).code, 'REQUEST_NAMESPACE_NOT_ALLOWED');
});

test('spec.pipeline.pipelineRef.name runs the installed Pipeline; serviceAccountName, timeouts, params, ociStorage and useEmptyDir are honoured', () => {
  const spec = {
    pipeline: {
      pipelineRef: { name: 'sign', ociStorage: 'quay.io/org/ta', useEmptyDir: true },
      serviceAccountName: 'signer',
      timeouts: { pipeline: '2h' },
      params: [{ name: 'image', value: 'quay.io/x' }],
    },
  };
  const req = { ...request(), spec } as unknown as InternalRequest;
  const a = decide(observe({ request: req, config: config({ allowList: ['team-a'], allowedServiceAccounts: ['signer'] }), pipeline: pipeline([{ name: 'image' }, { name: 'ociStorage' }], ['workspace']) }));
  assert.deepEqual(types(a), ['createPipelineRun', 'writeStatus']);
  const c = a[0]!;
  assert.ok(c.type === 'createPipelineRun');
  assert.deepEqual(c.pipelineRun.spec.pipelineRef, { name: 'sign' });
  assert.deepEqual(c.pipelineRun.spec.params, [{ name: 'image', value: 'quay.io/x' }, { name: 'ociStorage', value: 'quay.io/org/ta' }]);
  assert.deepEqual(c.pipelineRun.spec.taskRunTemplate, { serviceAccountName: 'signer' });
  assert.deepEqual(c.pipelineRun.spec.timeouts, { pipeline: '2h' });
  assert.deepEqual(c.pipelineRun.spec.workspaces, [{ name: 'workspace', emptyDir: {} }]);
  // the service account named there is checked like spec.serviceAccount
  const denied = decide(observe({ request: req, pipeline: pipeline([{ name: 'image' }, { name: 'ociStorage' }]) }));
  assert.equal(statusOf(denied).code, 'REQUEST_SERVICE_ACCOUNT_NOT_ALLOWED');
});

test('the same thing said twice, differently: Rejected with both places named', () => {
  const cases: Array<[unknown, RegExp]> = [
    [{ pipeline: { pipelineRef: { name: 'sign' }, serviceAccountName: 'a' }, serviceAccount: 'b' }, /spec.serviceAccount "b" and spec.pipeline.serviceAccountName "a" differ/],
    [{ pipeline: { pipelineRef: { name: 'sign' }, timeouts: { pipeline: '1h' } }, timeouts: { pipeline: '2h' } }, /spec.timeouts .* and spec.pipeline.timeouts .* differ/],
    [{ pipeline: { pipelineRef: { name: 'sign' }, params: [{ name: 'image', value: 'a' }] }, params: { image: 'b' } }, /param "image" is given twice with different values, in spec.params and in spec.pipeline.params/],
    [{ pipeline: { pipelineRef: { name: 'sign', ociStorage: 'x' }, params: [{ name: 'ociStorage', value: 'y' }] }, params: { image: 'i' } }, /param "ociStorage" is given twice .* in spec.pipeline.params and in spec.pipeline.pipelineRef.ociStorage/],
    [{ request: 'sign', pipeline: { pipelineRef: { name: 'sign' } } }, /exactly one of spec.request or spec.pipeline/],
  ];
  for (const [spec, msg] of cases) {
    const req = { ...request(), spec } as unknown as InternalRequest;
    const w = statusOf(decide(observe({ request: req, config: config({ allowList: ['team-a'], allowedServiceAccounts: ['a', 'b'] }) })));
    assert.equal(w.code, 'REQUEST_INVALID', JSON.stringify(spec));
    assert.match(w.status.conditions?.[0]?.message ?? '', msg, JSON.stringify(spec));
  }
  // the same value in both places is fine
  const same = { ...request(), spec: { pipeline: { pipelineRef: { name: 'sign' }, serviceAccountName: 'a', timeouts: { pipeline: '1h' }, params: [{ name: 'image', value: 'x' }] }, serviceAccount: 'a', timeouts: { pipeline: '1h' }, params: { image: 'x' } } } as unknown as InternalRequest;
  assert.deepEqual(types(decide(observe({ request: same, config: config({ allowList: ['team-a'], allowedServiceAccounts: ['a'] }) }))), ['createPipelineRun', 'writeStatus']);
});

test('no configuration: a new request waits (WaitingForConfig, saying why) instead of being Rejected; written once', () => {
  const a = decide(observe({ config: effectiveConfig(undefined, NS) }));
  assert.deepEqual(types(a), ['writeStatus']);
  const w = statusOf(a);
  assert.equal(w.status.conditions?.[0]?.status, 'Unknown');
  assertPhase(w.status, 'WaitingForConfig');
  assert.match(w.status.conditions?.[0]?.message ?? '', /waiting for the internal cluster's configuration: there is no InternalServicesConfig "config" in namespace "internal-services"/);
  assert.equal(w.code, undefined, 'not an error: nothing is decided');
  const again = decide(observe({ request: request({}, {}, w.status), config: effectiveConfig(undefined, NS) }));
  assert.deepEqual(again, [], 'nothing to write the second time');
  // the configuration is back: the same request is decided
  assert.deepEqual(types(decide(observe({ request: request({}, {}, w.status) }))), ['createPipelineRun', 'writeStatus']);
});

test('param names in rejections are quoted, so an empty or odd name can be read', () => {
  const w = statusOf(decide(observe({ request: request({ params: { image: 'x', '': 'e', 'a b': 'y' } }) })));
  assert.match(w.status.conditions?.[0]?.message ?? '', /undeclared params: "", "a b" \(it declares: "image"\)/);
});

test('a run that finished while the controller was down: the final status still names the PipelineRun', () => {
  const a = decide(observe({ pipelineRuns: [pipelineRun('u-1', done(true))] }));
  const w = statusOf(a);
  assert.equal(w.status.conditions?.[0]?.reason, 'Succeeded');
  assert.equal(w.status.pipelineRun, `${NS}/ir-u-1`);
});

test('limits: param sizes and timeouts, each refusal naming the param or timeout, the value and the setting', () => {
  const big = 'x'.repeat(300);
  const limited = config({ allowList: ['team-a'], limits: { maxParamValueBytes: 100, maxParamsBytes: 1000 } });
  const tooLong = statusOf(decide(observe({ request: request({ params: { image: big } }), config: limited })));
  assert.equal(tooLong.code, 'REQUEST_LIMIT_EXCEEDED');
  assert.match(tooLong.status.conditions?.[0]?.message ?? '', /param values longer than the 100 bytes allowed by InternalServicesConfig internal-services\/config \(limits\.maxParamValueBytes\): "image" \(300 bytes\)/);
  const manyPipeline = pipeline([{ name: 'a' }, { name: 'b' }, { name: 'c' }, { name: 'd' }]);
  const total = statusOf(decide(observe({ request: request({ params: { a: 'x'.repeat(90), b: 'x'.repeat(90), c: 'x'.repeat(90), d: 'x'.repeat(90) } }), pipeline: manyPipeline, config: config({ allowList: ['team-a'], limits: { maxParamValueBytes: 100, maxParamsBytes: 300 } }) })));
  assert.match(total.status.conditions?.[0]?.message ?? '', /the params add up to 364 bytes, more than the 300 allowed .*\(limits\.maxParamsBytes\)/);

  const cases: Array<[Record<string, unknown>, Record<string, unknown> | undefined, RegExp | undefined]> = [
    [{ pipeline: '0s' }, undefined, /timeouts\.pipeline "0s" means no timeout, which InternalServicesConfig internal-services\/config does not allow \(timeouts\.allowNoTimeout\); give a duration of at most 24h/],
    [{ pipeline: '0s' }, { allowNoTimeout: true }, undefined],
    [{ pipeline: '25h' }, undefined, /timeouts\.pipeline "25h" is longer than the 24h allowed by .* \(timeouts\.maximum\)/],
    [{ pipeline: '3h' }, { maximum: '2h' }, /longer than the 2h allowed/],
    [{ pipeline: '1h', tasks: '50m', finally: '20m' }, undefined, /timeouts\.tasks "50m" \+ timeouts\.finally "20m" is longer than timeouts\.pipeline "1h": tasks \+ finally must not exceed pipeline/],
    [{ tasks: '50m' }, { defaults: { pipeline: '30m' } }, /timeouts\.tasks "50m" is longer than the default timeouts\.pipeline "30m" of InternalServicesConfig/],
  ];
  for (const [timeouts, policy, msg] of cases) {
    const a = decide(observe({ request: request({ timeouts }), config: config({ allowList: ['team-a'], ...(policy ? { timeouts: policy } : {}) }) }));
    if (!msg) {
      assert.equal(a[0]?.type, 'createPipelineRun', JSON.stringify(timeouts));
      continue;
    }
    const w = statusOf(a);
    assert.equal(w.code, 'REQUEST_LIMIT_EXCEEDED', JSON.stringify(timeouts));
    assert.match(w.status.conditions?.[0]?.message ?? '', msg, JSON.stringify(timeouts));
  }
  // defaults fill what the request does not give
  const d = decide(observe({ request: request({ timeouts: { tasks: '20m' } }), config: config({ allowList: ['team-a'], timeouts: { defaults: { pipeline: '30m', finally: '5m' } } }) }));
  assert.ok(d[0]?.type === 'createPipelineRun');
  assert.deepEqual(d[0].pipelineRun.spec.timeouts, { pipeline: '30m', tasks: '20m', finally: '5m' });
});

test('Tekton Results in use: the request names the record, then the run is deleted once Results has stored it, or after resultsStoreTimeout', () => {
  const seen = { 'results.tekton.dev/record': 'ns/results/x/records/y' };
  const archived = { archive: { record: 'ns/results/x/records/y' } };
  const finishedReq = request({}, {}, { ...terminal('Succeeded', 'True'), ...archived });
  const pr = (annotations: Record<string, string>, completionTime = '2026-11-22T09:59:50Z') => {
    const p = pipelineRun('u-1', done(true, { completionTime }));
    p.metadata.annotations = { ...p.metadata.annotations, ...annotations };
    return p;
  };
  // The record is named in status first (the status keeps what it had).
  const naming = decide(observe({ request: request({}, {}, terminal('Succeeded', 'True')), pipelineRuns: [pr(seen)] }));
  assert.deepEqual(types(naming), ['writeStatus']);
  assert.deepEqual(statusOf(naming).status.archive, { record: 'ns/results/x/records/y' });
  assert.equal(statusOf(naming).status.conditions?.[0]?.reason, 'Succeeded');
  const waiting = decide(observe({ request: finishedReq, pipelineRuns: [pr(seen)] }));
  assert.deepEqual(types(waiting), ['requeueAfter'], 'not stored yet: kept');
  assert.deepEqual(types(decide(observe({ request: finishedReq, pipelineRuns: [pr({ ...seen, 'results.tekton.dev/stored': 'true' })] }))), ['deletePipelineRun']);
  const late = decide(observe({ request: finishedReq, pipelineRuns: [pr(seen, '2026-11-22T09:50:00Z')] }));
  assert.deepEqual(types(late), ['deletePipelineRun'], 'after 5 minutes it goes anyway');
  assert.match((late[0] as { why: string }).why, /Tekton Results had not stored it within 5m/);
  assert.equal((late[0] as { unarchived?: boolean }).unarchived, true);
  assert.deepEqual(types(decide(observe({ request: finishedReq, pipelineRuns: [pr({})] }))), ['deletePipelineRun'], 'no Results: deleted at once');

  // With the Results API: its verdict decides, whatever the annotations say;
  // a verdict that is not "stored" is a need: ask again (the executor asks).
  const asking = (verdict: ArchiveVerdict) => ({ archive: new Map([[pr({}).metadata.uid ?? '', verdict]]) });
  const notYet = decide(observe({ request: finishedReq, pipelineRuns: [pr(seen)], ...asking({ stored: false, why: 'Results has not finished storing the logs' }) }));
  assert.deepEqual(notYet, [{ type: 'askArchive', pipelineRun: pr(seen) }, { type: 'requeueAfter', ms: 1600 }], 'asked again shortly');
  const unasked = decide(observe({ request: finishedReq, pipelineRuns: [pr(seen)], archive: new Map() }));
  assert.deepEqual(types(unasked), ['askArchive', 'requeueAfter'], 'not asked yet: the need to ask');
  const unannotated = decide(observe({ request: request({}, {}, terminal('Succeeded', 'True')), pipelineRuns: [pr({})], ...asking({ stored: false, why: 'the Results watcher has not recorded the run yet' }) }));
  assert.deepEqual(types(unannotated), ['askArchive', 'requeueAfter'], 'Results configured: a run it has not seen waits too');
  const stored = decide(observe({ request: finishedReq, pipelineRuns: [pr(seen)], ...asking({ stored: true, record: 'ns/results/x/records/y' }) }));
  assert.deepEqual(types(stored), ['deletePipelineRun']);
  assert.match((stored[0] as { why: string }).why, /Tekton Results holds it as ns\/results\/x\/records\/y/);
  const down = decide(observe({ request: finishedReq, pipelineRuns: [pr(seen, '2026-11-22T09:50:00Z')], ...asking({ stored: false, why: 'Tekton Results at https://r is not reachable: ECONNREFUSED' }) }));
  assert.match((down[0] as { why: string }).why, /had not stored it within 5m: Tekton Results at https:\/\/r is not reachable/);
});

test('logs: a new value of internal-services.dev/logs is answered in status.logs once fetched; the outcome stays as it is', () => {
  const ask = (value: string, answered?: string) => {
    const r = request({}, {}, { ...terminal('Failed', 'False'), ...(answered ? { logs: { request: answered } } : {}) });
    r.metadata.annotations = { ...r.metadata.annotations, 'internal-services.dev/logs': value };
    return r;
  };
  const got: FetchedLogs = { source: 'TektonResults', text: '[sign : sign] hello\n', truncated: false };
  const unasked = decide(observe({ request: ask('1') }));
  assert.deepEqual(unasked, [{ type: 'fetchLogs', asked: '1', pipelineRun: `${NS}/ir-u-1` }, { type: 'requeueAfter', ms: 500 }], 'the need to fetch them');
  const fetching = decide(observe({ request: ask('1'), logs: 'fetching' }));
  assert.deepEqual(fetching, [{ type: 'requeueAfter', ms: 500 }]);
  const answer = statusOf(decide(observe({ request: ask('1'), logs: got })));
  assert.equal(answer.status.logs?.request, '1');
  assert.equal(answer.status.logs?.source, 'TektonResults');
  assert.equal(answer.status.logs?.text, '[sign : sign] hello\n');
  assert.equal(answer.status.conditions?.[0]?.reason, 'Failed', 'the requester\'s contract is untouched');
  assert.deepEqual(decide(observe({ request: ask('1', '1'), logs: got })), [], 'answered: nothing more');
  assert.deepEqual(types(decide(observe({ request: ask('2', '1'), logs: got }))), ['writeStatus'], 'a new ask is answered again');
});

test('ttlSecondsAfterFinished: a finished request is deleted once that long has passed; not before', () => {
  const fin = request({}, {}, { conditions: [{ type: 'Succeeded', status: 'True', reason: 'Succeeded', message: 'm', lastTransitionTime: '2026-11-22T09:59:30Z' }] });
  const ttl = config({ allowList: ['team-a'], ttlSecondsAfterFinished: 60 });
  const early = decide(observe({ request: fin, config: ttl }));
  assert.deepEqual(early, [{ type: 'requeueAfter', ms: 30_100 }]);
  const due = decide(observe({ request: fin, config: ttl, now: new Date('2026-11-22T10:00:31Z') }));
  assert.deepEqual(types(due), ['deleteRequest']);
  assert.deepEqual(decide(observe({ request: fin })), [], 'no TTL: kept');
});

test('a kcp workspace: the rules see its path, the run and its keys keep its logical cluster, and the run names the path', () => {
  const o = observe({ remote: '2ezqarfpd2u0ddwo', workspace: 'root:org:team', config: config({ allowList: ['root:org:team/team-a'] }) });
  const a = decide(o);
  assert.deepEqual(types(a), ['createPipelineRun', 'writeStatus']);
  const pr = (a[0] as Extract<Action, { type: 'createPipelineRun' }>).pipelineRun;
  assert.equal(pr.metadata.labels?.['internal-services.appstudio.redhat.com/remote'], '2ezqarfpd2u0ddwo');
  assert.equal(pr.metadata.annotations?.['internal-services.appstudio.redhat.com/workspace'], 'root:org:team');
  // The logical cluster's name is not what the rules name: without the path, refused, and the message says which remote it saw.
  const refused = statusOf(decide({ ...o, workspace: undefined } as Observation));
  assert.equal(refused.status.conditions?.[0]?.reason, 'Rejected');
  assert.match(refused.status.conditions?.[0]?.message ?? '', /namespace "team-a" on remote "2ezqarfpd2u0ddwo"/);
  const other = statusOf(decide({ ...o, workspace: 'root:org:other' }));
  assert.match(other.status.conditions?.[0]?.message ?? '', /namespace "team-a" on remote "root:org:other"/);
});

test('kcp workspaces in rules: a glob over paths grants the workspaces under it, and only those', () => {
  const cfg = config({ rules: [{ name: 'org-teams', namespaces: ['root:org:*/build'], pipelines: ['sign'] }] });
  const under = decide(observe({ remote: 'c1', workspace: 'root:org:team-x', request: request({}, { namespace: 'build' }), config: cfg }));
  assert.deepEqual(types(under), ['createPipelineRun', 'writeStatus']);
  const outside = statusOf(decide(observe({ remote: 'c2', workspace: 'root:partners:team-x', request: request({}, { namespace: 'build' }), config: cfg })));
  assert.equal(outside.status.conditions?.[0]?.reason, 'Rejected');
  assert.match(outside.status.conditions?.[0]?.message ?? '', /remote "root:partners:team-x"/);
});

test('what a cluster refused of the last plan is decided here: the PipelineRun refused → Rejected naming why, and no second create', () => {
  const plain = decide(observe({}));
  assert.deepEqual(types(plain), ['createPipelineRun', 'writeStatus'], 'without a refusal: the run is created');
  const a = decide(observe({ refused: { run: 'admission webhook "quota" denied the request: too many runs' } }));
  assert.deepEqual(types(a), ['writeStatus'], 'not created again');
  const c = statusOf(a).status.conditions?.[0];
  assert.deepEqual([c?.status, c?.reason], ['False', 'Rejected']);
  assert.equal(c?.message, 'the internal cluster refused the PipelineRun for this request: admission webhook "quota" denied the request: too many runs');
});

test('what a cluster refused of the last plan is decided here: results refused → Failed without them, the run still named; then the run is removed', () => {
  const pr = pipelineRun('u-1', done(true, { results: [{ name: 'sig', value: 'x'.repeat(100) }] }));
  const ok = statusOf(decide(observe({ pipelineRuns: [pr] })));
  assert.equal(ok.status.conditions?.[0]?.reason, 'Succeeded', 'without a refusal: Succeeded with its results');
  const a = decide(observe({ pipelineRuns: [pr], refused: { results: 'etcdserver: request is too large' } }));
  assert.deepEqual(types(a), ['writeStatus', 'deletePipelineRun']);
  const w = statusOf(a);
  assert.deepEqual([w.status.conditions?.[0]?.status, w.status.conditions?.[0]?.reason], ['False', 'Failed']);
  assert.equal(w.status.conditions?.[0]?.message, 'the results of the PipelineRun could not be stored on the request: etcdserver: request is too large');
  assert.equal(w.status.results, undefined);
  assert.equal(w.status.pipelineRun, `${NS}/ir-u-1`);
});

test('what a cluster refused of the last plan is decided here: a remote that refused deletes lately is not asked again (ttlSecondsAfterFinished)', () => {
  const fin = request({}, {}, { conditions: [{ type: 'Succeeded', status: 'True', reason: 'Succeeded', message: 'm', lastTransitionTime: '2026-11-22T09:59:30Z' }] });
  const ttl = config({ allowList: ['team-a'], ttlSecondsAfterFinished: 60 });
  const now = new Date('2026-11-22T10:00:31Z');
  assert.deepEqual(types(decide(observe({ request: fin, config: ttl, now }))), ['deleteRequest']);
  assert.deepEqual(decide(observe({ request: fin, config: ttl, now, deletesDenied: true })), []);
});

// ---------------------------------------------------------------- the incumbent Go controller's runs (issue 45)

/** A PipelineRun as the incumbent makes it (requests/incumbent.ts): generateName internalrequest-, its two labels, no uid of the request. */
function goRun(name: string, created: string, status?: PipelineRun['status'], who = { ns: 'team-a', name: 'req' }): PipelineRun {
  return {
    apiVersion: 'tekton.dev/v1',
    kind: 'PipelineRun',
    metadata: { name, namespace: NS, uid: `go-${name}`, creationTimestamp: created, labels: { [INCUMBENT_LABEL_NAME]: who.name, [INCUMBENT_LABEL_NAMESPACE]: who.ns, 'pipelines.appstudio.openshift.io/type': 'release' } },
    spec: { pipelineRef: { name: 'sign' } },
    ...(status ? { status } : {}),
  };
}
const goRunning = (pipelineRun?: string): InternalRequest['status'] => ({ conditions: [{ type: 'Succeeded', status: 'False', reason: 'Running', message: '', lastTransitionTime: '2026-11-22T09:59:10Z' }], ...(pipelineRun ? { pipelineRun } : {}) });

test('incumbent: a request the Go controller is running (False/Running, its run named) is followed: Running in our shape, no second run', () => {
  const run = goRun('internalrequest-abcde', '2026-11-22T09:59:05Z', { conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running' }] } as never);
  const req = request({}, {}, goRunning(`${NS}/internalrequest-abcde`));
  const a = decide(observe({ request: req, incumbentRuns: [run] }));
  assert.deepEqual(types(a), ['writeStatus'], 'no createPipelineRun');
  const w = statusOf(a);
  assert.deepEqual([w.status.conditions?.[0]?.status, w.status.conditions?.[0]?.reason], ['Unknown', 'Running'], 'rewritten in this controller\'s shape');
  assert.equal(w.status.pipelineRun, `${NS}/internalrequest-abcde`);
  // Without the incumbent's run in view, the same request would have been run again: that is what the observation prevents.
  assert.ok(types(decide(observe({ request: request() }))).includes('createPipelineRun'));
});

test('incumbent: its run finished while both controllers were down: the outcome and results are written, then the run removed', () => {
  const run = goRun('internalrequest-abcde', '2026-11-22T09:59:05Z', done(true, { results: [{ name: 'sig', value: 'abc' }] }));
  const a = decide(observe({ request: request({}, {}, goRunning(`${NS}/internalrequest-abcde`)), incumbentRuns: [run] }));
  assert.deepEqual(types(a), ['writeStatus', 'deletePipelineRun']);
  const w = statusOf(a);
  assert.equal(w.status.conditions?.[0]?.reason, 'Succeeded');
  assert.deepEqual(w.status.results, { sig: 'abc' });
  assert.equal((a[1] as Extract<Action, { type: 'deletePipelineRun' }>).pipelineRun.metadata.name, 'internalrequest-abcde');
});

test('incumbent: the window between its create and its status patch: the one run made after the request is followed; an older one (an earlier request of the name) is stopped', () => {
  const mine = goRun('internalrequest-new01', '2026-11-22T09:59:01Z', { conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running' }] } as never);
  const older = goRun('internalrequest-old01', '2026-11-21T08:00:00Z', { conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running' }] } as never);
  const a = decide(observe({ request: request(), incumbentRuns: [older, mine] }));
  assert.deepEqual(types(a).sort(), ['cancelPipelineRun', 'writeStatus']);
  assert.equal((a.find((x) => x.type === 'cancelPipelineRun') as Extract<Action, { type: 'cancelPipelineRun' }>).pipelineRun.metadata.name, 'internalrequest-old01');
  assert.equal(statusOf(a).status.pipelineRun, `${NS}/internalrequest-new01`);
});

test('incumbent: two runs made after the request and none named: neither followed nor a third made; the message names them', () => {
  const one = goRun('internalrequest-aaaaa', '2026-11-22T09:59:01Z');
  const two = goRun('internalrequest-bbbbb', '2026-11-22T09:59:02Z');
  const a = decide(observe({ request: request(), incumbentRuns: [one, two] }));
  assert.deepEqual(types(a), ['writeStatus']);
  const w = statusOf(a);
  assert.equal(w.status.conditions?.[0]?.reason, 'Running', 'the requester waits');
  assert.match(w.status.conditions?.[1]?.message ?? '', /made 2 PipelineRuns for this request \(internal-services\/internalrequest-aaaaa, internal-services\/internalrequest-bbbbb\)/);
});

test('incumbent: the request is deleted: its run is cancelled, and removed once stopped', () => {
  const running = goRun('internalrequest-abcde', '2026-11-22T09:59:05Z', { conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running' }] } as never);
  assert.deepEqual(types(decide(observe({ request: undefined, incumbentRuns: [running] }))), ['cancelPipelineRun']);
  const stopped = goRun('internalrequest-abcde', '2026-11-22T09:59:05Z', done(false));
  assert.deepEqual(types(decide(observe({ request: undefined, incumbentRuns: [stopped] }))), ['deletePipelineRun']);
});

test('incumbent: a request cannot pose as the incumbent\'s run of another request: the labels are not copied, and a run of ours is never the incumbent\'s', () => {
  const attacker = request({}, { name: 'evil', uid: 'u-evil', labels: { [INCUMBENT_LABEL_NAME]: 'req', [INCUMBENT_LABEL_NAMESPACE]: 'team-a', 'release': 'x' } });
  const a = decide(observe({ request: attacker }));
  const pr = (a.find((x) => x.type === 'createPipelineRun') as Extract<Action, { type: 'createPipelineRun' }>).pipelineRun;
  assert.equal(pr.metadata.labels?.[INCUMBENT_LABEL_NAME], undefined, 'the incumbent\'s labels are reserved');
  assert.equal(pr.metadata.labels?.['release'], 'x', 'other labels are copied');
  // Even labelled so by someone else, a run that carries our request-uid label is not followed as the incumbent's.
  const posing = { ...pr, metadata: { ...pr.metadata, creationTimestamp: '2026-11-22T09:59:30Z', labels: { ...pr.metadata.labels, [INCUMBENT_LABEL_NAME]: 'req', [INCUMBENT_LABEL_NAMESPACE]: 'team-a' } } };
  const victim = decide(observe({ request: request(), incumbentRuns: [posing] }));
  assert.ok(types(victim).includes('createPipelineRun'), 'the victim runs its own');
  assert.ok(!types(victim).includes('cancelPipelineRun'), 'and the other request\'s run is not touched as the incumbent\'s');
});

// ---------------------------------------------------------------- the incumbent's finalizer (issue 45, item 3)

const held = { finalizers: ['internal-services.appstudio.openshift.io/pipelinerun-cleanup'] };
const removals = (a: Action[]) => a.filter((x): x is Extract<Action, { type: 'removeFinalizer' }> => x.type === 'removeFinalizer');

test('incumbent finalizer: a finished request it saw is released (only that finalizer); one without it, or on a remote that refused lately, is not asked about', () => {
  for (const reason of ['Succeeded', 'Failed', 'Rejected']) {
    const req = request({}, { ...held }, terminal(reason, reason === 'Succeeded' ? 'True' : 'False'));
    const r = removals(decide(observe({ request: req })));
    assert.equal(r.length, 1, reason);
    assert.equal(r[0]!.finalizer, 'internal-services.appstudio.openshift.io/pipelinerun-cleanup');
    assert.equal(r[0]!.request, req);
    assert.match(r[0]!.why, /the request is finished/);
  }
  const other = request({}, { finalizers: ['example.com/keep-me'] }, terminal('Succeeded', 'True'));
  assert.deepEqual(decide(observe({ request: other })), [], 'another finalizer is not ours to remove');
  const denied = request({}, { ...held }, terminal('Succeeded', 'True'));
  assert.deepEqual(removals(decide(observe({ request: denied, finalizersDenied: true }))), [], 'not asked again while the remote refuses');
});

test('incumbent finalizer: a request in progress keeps it (it tells of a deletion); a deleted one is released only after its run is asked to stop', () => {
  const running = goRun('internalrequest-abcde', '2026-11-22T09:59:05Z', { conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running' }] } as never);
  const live = request({}, { ...held }, goRunning(`${NS}/internalrequest-abcde`));
  assert.deepEqual(removals(decide(observe({ request: live, incumbentRuns: [running] }))), [], 'kept while it runs');

  const deleting = request({}, { ...held, deletionTimestamp: '2026-11-22T10:05:00Z' }, goRunning(`${NS}/internalrequest-abcde`));
  // First the run is cancelled; the finalizer stays, so the request cannot go before.
  assert.deepEqual(types(decide(observe({ request: deleting, incumbentRuns: [running] }))), ['cancelPipelineRun']);
  // Once Tekton shows it cancelling (or it is done, or there is none), the finalizer goes; a stopped run is removed.
  const cancelling = { ...running, spec: { ...running.spec, status: 'Cancelled' } } as PipelineRun;
  assert.deepEqual(types(decide(observe({ request: deleting, incumbentRuns: [cancelling] }))), ['removeFinalizer']);
  const stopped = goRun('internalrequest-abcde', '2026-11-22T09:59:05Z', done(false));
  assert.deepEqual(types(decide(observe({ request: deleting, incumbentRuns: [stopped] }))).sort(), ['deletePipelineRun', 'removeFinalizer']);
  assert.deepEqual(types(decide(observe({ request: deleting }))), ['removeFinalizer']);
  // The same for a run of ours: a request this controller ran, which the incumbent had seen first.
  const ours = pipelineRun('u-1', { conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running' }] } as never);
  assert.deepEqual(types(decide(observe({ request: deleting, pipelineRuns: [ours] }))), ['cancelPipelineRun']);
  // A remote that refused lately is not asked again.
  assert.deepEqual(types(decide(observe({ request: deleting, finalizersDenied: true }))), []);
});

test('incumbent finalizer: a typed kind (the incumbent served only InternalRequests) is never asked about', () => {
  const req = request({}, { ...held }, terminal('Succeeded', 'True'));
  const kind = { kind: 'SigningRequest', builtIn: false } as unknown as NonNullable<Observation['kind']>;
  assert.deepEqual(removals(decide(observe({ request: req, kind }))), []);
});

// ---------------------------------------------------------------- draining before a rollback (--drain, issue 45)

test('draining: a request no controller has written to is left for the Go controller; one started here goes on (queued, awaiting approval, running)', () => {
  // New: nothing at all, not even a status.
  assert.deepEqual(decide(observe({ draining: true })), []);
  // The same request without --drain would run.
  assert.ok(types(decide(observe({}))).includes('createPipelineRun'));
  // Started here (queued, then a slot frees): it goes on and runs.
  const queued = request({}, {}, { conditions: inProgress(undefined, Phase.Queued, { message: 'waiting for a free slot', observedGeneration: 1 }, NOW) });
  assert.ok(types(decide(observe({ request: queued, draining: true }))).includes('createPipelineRun'));
  // Running: followed to its end, its outcome written.
  const running = request({}, {}, { conditions: inProgress(undefined, Phase.Running, { message: 'x', observedGeneration: 1 }, NOW), pipelineRun: `${NS}/${pipelineRunName('u-1')}` });
  const out = decide(observe({ request: running, pipelineRuns: [pipelineRun('u-1', done(true))], draining: true }));
  assert.equal(statusOf(out).status.conditions?.[0]?.reason, 'Succeeded');
});

test('the ServiceAccount a request names: asked of the internal cluster first (a need); missing → Rejected naming it; present or unknown → runs', () => {
  const cfg = config({ allowList: ['team-a'], allowedServiceAccounts: ['signer'] });
  const req = request({ serviceAccount: 'signer' });
  // not asked yet: only the question, nothing written, nothing made
  const ask = decide(observe({ request: req, config: cfg, serviceAccount: undefined }));
  assert.deepEqual(ask, [{ type: 'checkServiceAccount', name: 'signer' }]);
  // an answer about another name is no answer
  assert.deepEqual(types(decide(observe({ request: req, config: cfg, serviceAccount: { name: 'other', answer: 'present' } }))), ['checkServiceAccount']);
  const missing = decide(observe({ request: req, config: cfg, serviceAccount: { name: 'signer', answer: 'missing' } }));
  assert.equal(statusOf(missing).code, 'REQUEST_SERVICE_ACCOUNT_NOT_FOUND');
  assert.equal(
    statusOf(missing).status.conditions?.[0]?.message,
    `serviceAccount "signer" is allowed by InternalServicesConfig ${NS}/config, but there is no ServiceAccount "signer" in namespace "${NS}" of the internal cluster; ask its administrators to create it, then send the request again`,
  );
  assert.ok(!types(missing).includes('createPipelineRun'));
  for (const answer of ['present', 'unknown'] as const) {
    assert.equal(decide(observe({ request: req, config: cfg, serviceAccount: { name: 'signer', answer } }))[0]?.type, 'createPipelineRun', answer);
  }
  // spec.pipeline.serviceAccountName is the same question
  const todays = request({ request: undefined, pipeline: { pipelineRef: { name: 'p' }, serviceAccountName: 'signer' } } as never);
  assert.deepEqual(decide(observe({ request: todays, config: cfg, serviceAccount: undefined })), [{ type: 'checkServiceAccount', name: 'signer' }]);
  // a request naming none, or one that is not allowed, asks nothing
  assert.ok(!types(decide(observe({ request: request(), config: cfg }))).includes('checkServiceAccount'));
  assert.equal(statusOf(decide(observe({ request: request({ serviceAccount: 'root' }), config: cfg, serviceAccount: undefined }))).code, 'REQUEST_SERVICE_ACCOUNT_NOT_ALLOWED');
});

test('incumbent in its own namespace (internal-services-system): its run is followed there, to its outcome; and while that namespace cannot be listed, a request the Go controller reached waits: none is declared missing, none made', () => {
  const there = (status?: PipelineRun['status']) => {
    const r = goRun('internalrequest-abcde', '2026-11-22T09:59:05Z', status);
    return { ...r, metadata: { ...r.metadata, namespace: 'internal-services-system' } };
  };
  const named = request({}, {}, goRunning('internal-services-system/internalrequest-abcde'));
  // Running there: followed, named where it is.
  const running = decide(observe({ request: named, incumbentRuns: [there({ conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running' }] } as never)] }));
  assert.deepEqual(types(running), ['writeStatus']);
  assert.equal(statusOf(running).status.pipelineRun, 'internal-services-system/internalrequest-abcde');
  // Finished there: its outcome, then the run removed (where it is: the action carries it).
  const ended = decide(observe({ request: named, incumbentRuns: [there(done(true, { results: [{ name: 'sig', value: 'abc' }] }))] }));
  assert.deepEqual(types(ended), ['writeStatus', 'deletePipelineRun']);
  assert.equal(statusOf(ended).status.conditions?.[0]?.reason, 'Succeeded');
  assert.equal((ended[1] as Extract<Action, { type: 'deletePipelineRun' }>).pipelineRun.metadata.namespace, 'internal-services-system');
  // Not in view because its namespace cannot be listed: it waits, saying what to grant; not Failed (PIPELINERUN_MISSING), not run again.
  const why = 'the previous (Go) controller\'s PipelineRuns in namespace internal-services-system cannot be listed … config/rbac/internal-incumbent';
  for (const req of [named, request({}, { finalizers: [INCUMBENT_FINALIZER] }), request({}, {}, goRunning())]) {
    const a = decide(observe({ request: req, incumbentUnreadable: why }));
    assert.deepEqual(types(a), ['writeStatus'], JSON.stringify(req.status));
    const w = statusOf(a);
    assert.deepEqual([w.status.conditions?.[0]?.status, w.status.conditions?.[0]?.reason], ['Unknown', 'Running'], 'the requester waits');
    assert.equal(w.status.conditions?.[1]?.message, why);
  }
  // A request the Go controller never reached (no finalizer of its: it adds it before any run, no status of its) is decided as usual.
  assert.ok(types(decide(observe({ request: request(), incumbentUnreadable: why }))).includes('createPipelineRun'));
  // Without the flag, the same named request would be declared missing: that is what the rule prevents.
  assert.equal(statusOf(decide(observe({ request: named }))).code, 'PIPELINERUN_MISSING');
});
