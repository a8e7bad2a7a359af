/** Per-namespace rules (src/policy/grant.ts) and how decide() applies them. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide, type Action, type Observation } from '../../src/controller/decide.js';
import { effectiveConfig } from '../../src/controller/config.js';
import { ANNOTATION_ON_REVOKE, ANNOTATION_REQUEST_KIND, ANNOTATION_REVOKED } from '../../src/tekton/pipelinerun.js';
import type { InternalRequest } from '../../src/api/types.js';
import { assertPhase, config, done, NS, pipeline, pipelineRun, request, runningStatus, observation } from './fixtures.js';

const RULES = {
  allowList: ['team-a', 'managed-x'],
  allowedServiceAccounts: ['global-sa'],
  rules: [
    {
      name: 'signing',
      namespaces: ['managed-*'],
      pipelines: ['sign', 'sign-*'],
      serviceAccounts: ['signer'],
      params: { allowed: ['image', 'tag*'], patterns: [{ name: 'image', pattern: 'quay\\.io/org/[a-z0-9-]+(@sha256:[0-9a-f]{64})?' }], maxValueBytes: 200 },
      timeouts: { maximum: '2h', defaults: { pipeline: '1h' } },
      onRevoke: 'cancel',
    },
    { namespaces: ['managed-*', 'ops'], pipelines: ['*'] },
  ],
};
const SHA = 'a'.repeat(64);
const observe = (o: Partial<Observation>): Observation => observation(o, { config: config(RULES) });
const inNs = (ns: string, spec: Partial<InternalRequest['spec']> = {}) => request({ params: { image: `quay.io/org/app@sha256:${SHA}` }, ...spec }, { namespace: ns });
const statusOf = (a: Action[]) => {
  const w = a.find((x) => x.type === 'writeStatus');
  assert.ok(w && w.type === 'writeStatus');
  return w;
};
const msg = (a: Action[]) => statusOf(a).status.conditions?.[0]?.message ?? '';

test('a namespace named by a rule is governed by the rules: the first rule granting the Pipeline applies, with its own settings', () => {
  const a = decide(observe({ request: inNs('managed-x', { serviceAccount: 'signer' }) }));
  assert.equal(a[0]?.type, 'createPipelineRun');
  const pr = (a[0] as Extract<Action, { type: 'createPipelineRun' }>).pipelineRun;
  assert.deepEqual(pr.spec.timeouts, { pipeline: '1h' }, "the rule's default timeout");
  assert.equal(pr.metadata.annotations?.[ANNOTATION_ON_REVOKE], 'cancel');
  // on the allowList too, but the rules govern it: the global service account is not granted
  const sa = decide(observe({ request: inNs('managed-x', { serviceAccount: 'global-sa' }) }));
  assert.equal(statusOf(sa).code, 'REQUEST_SERVICE_ACCOUNT_NOT_ALLOWED');
  assert.match(msg(sa), /serviceAccount "global-sa" is not allowed by rules\[0\] \("signing"\) of InternalServicesConfig internal-services\/config; allowed: "signer"/);
});

test('refusals name the rule and the value, quoted', () => {
  const cases: Array<[InternalRequest, string, RegExp, Partial<Observation>?]> = [
    [inNs('elsewhere'), 'REQUEST_NAMESPACE_NOT_ALLOWED', /namespace "elsewhere" on remote "default" is not on the allowList of InternalServicesConfig internal-services\/config, and no rule names it/],
    [inNs('managed-x', { params: { image: 'docker.io/evil/app' } }), 'REQUEST_PARAMS_INVALID', /param "image" is "docker\.io\/evil\/app", which does not match the pattern "quay\\\\\.io\/org\/.*" of rules\[0\] \("signing"\) of InternalServicesConfig/],
    [inNs('managed-x', { params: { image: `quay.io/org/app@sha256:${SHA}`, extra: 'x' } }), 'REQUEST_PARAMS_INVALID', /params "extra" may not be given under rules\[0\] \("signing"\) of InternalServicesConfig internal-services\/config; it allows "image", "tag\*"/],
    [inNs('managed-x', { params: { image: `quay.io/org/app@sha256:${SHA}`, tag: 'x'.repeat(300) } }), 'REQUEST_LIMIT_EXCEEDED', /param values longer than the 200 bytes allowed by rules\[0\] \("signing"\) of InternalServicesConfig internal-services\/config \(limits\.maxParamValueBytes\): "tag" \(300 bytes\)/],
    [inNs('managed-x', { timeouts: { pipeline: '3h' } }), 'REQUEST_LIMIT_EXCEEDED', /timeouts\.pipeline "3h" is longer than the 2h allowed by rules\[0\] \("signing"\)/],
    [inNs('ops', { request: 'deploy' }), 'REQUEST_PIPELINE_NOT_FOUND', /no Pipeline named "deploy"/, { pipeline: undefined }],
  ];
  for (const [req, code, re, extra] of cases) {
    const a = decide(observe({ request: req, ...extra }));
    assert.equal(statusOf(a).code, code, JSON.stringify(req.spec));
    assert.match(msg(a), re, JSON.stringify(req.spec));
  }
  // a namespace governed by rules, none of which grants the Pipeline
  const onlyOps = config({ rules: [{ name: 'ops', namespaces: ['ops'], pipelines: ['deploy-*'] }] });
  const notGranted = decide(observe({ request: inNs('ops'), config: onlyOps }));
  assert.equal(statusOf(notGranted).code, 'REQUEST_PIPELINE_NOT_ALLOWED');
  assert.match(msg(notGranted), /Pipeline "sign" is not granted to namespace "ops" on remote "default" by InternalServicesConfig internal-services\/config: rules\[0\] \("ops"\) grants only "deploy-\*"/);
  const remote = { ...inNs('ops'), spec: { pipeline: { pipelineRef: { resolver: 'git', params: [{ name: 'url', value: 'https://x/y.git' }] } } } } as unknown as InternalRequest;
  assert.match(msg(decide(observe({ request: remote, config: onlyOps }))), /remote Pipelines \(the "git" resolver\) are not granted to namespace "ops" .*rules\[0\] \("ops"\) has no sources/);
});

test('the second rule grants what the first does not, with its settings (no constraints)', () => {
  const a = decide(observe({ request: inNs('managed-x', { request: 'other', params: { anything: 'goes' } }), pipeline: { ...pipeline([{ name: 'anything' }]), metadata: { name: 'other', namespace: NS } } }));
  assert.equal(a[0]?.type, 'createPipelineRun');
});

test('onRevoke: cancel stops a running request once no rule grants it; finish (the default) lets it run', () => {
  const req = inNs('managed-x');
  const running = { ...req, status: { conditions: [{ type: 'Succeeded', status: 'Unknown' as const, reason: 'Running', message: 'm', lastTransitionTime: '2026-11-22T09:59:00Z' }], pipelineRun: `${NS}/ir-u-1` } };
  const pr = pipelineRun('u-1', runningStatus(), { ns: 'managed-x', name: 'req' });
  pr.metadata.annotations = { ...pr.metadata.annotations, [ANNOTATION_ON_REVOKE]: 'cancel' };
  const cancels = (a: Action[]) => a.filter((x) => x.type === 'cancelPipelineRun');
  // still granted: nothing to stop
  assert.deepEqual(cancels(decide(observe({ request: running, pipelineRuns: [pr] }))), []);
  // the rules no longer name managed-x, and it is not on the allowList: cancelled, saying why
  const tightened = config({ allowList: ['team-a'], rules: [{ namespaces: ['ops'], pipelines: ['*'] }] });
  const a = cancels(decide(observe({ request: running, pipelineRuns: [pr], config: tightened })));
  assert.equal(a.length, 1);
  const c = a[0] as Extract<Action, { type: 'cancelPipelineRun' }>;
  assert.match(c.annotations?.[ANNOTATION_REVOKED] ?? '', /namespace "managed-x" on remote "default" is not on the allowList/);
  // once Tekton reports it cancelled: Failed, with the reason
  const cancelled = pipelineRun('u-1', done(false, { conditions: [{ type: 'Succeeded', status: 'False', reason: 'Cancelled', message: 'PipelineRun "ir-u-1" was cancelled' }] }), { ns: 'managed-x', name: 'req' });
  cancelled.metadata.annotations = { ...cancelled.metadata.annotations, [ANNOTATION_REVOKED]: c.annotations![ANNOTATION_REVOKED]! };
  const end = statusOf(decide(observe({ request: running, pipelineRuns: [cancelled], config: tightened })));
  assert.equal(end.status.conditions?.[0]?.reason, 'Failed');
  assert.match(end.status.conditions?.[0]?.message ?? '', /failed: cancelled because the configuration no longer allows it: namespace "managed-x" on remote "default" is not on the allowList/);
  // without the annotation (onRevoke: finish), the same change leaves it running
  const finishing = pipelineRun('u-1', runningStatus(), { ns: 'managed-x', name: 'req' });
  assert.deepEqual(cancels(decide(observe({ request: running, pipelineRuns: [finishing], config: tightened }))), []);
  // and a missing configuration revokes nothing
  assert.deepEqual(cancels(decide(observe({ request: running, pipelineRuns: [pr], config: effectiveConfig(undefined, NS) }))), []);
});

// --- temporary grants (rules[].expires) -------------------------------------------------

const TEMPORARY = (expires: unknown, extra: Record<string, unknown> = {}) =>
  config({ allowList: ['managed-x', 'team-a'], rules: [{ name: 'temp', namespaces: ['managed-x'], pipelines: ['sign'], expires, ...extra }, { name: 'ops', namespaces: ['ops'], pipelines: ['*'] }] });

test('expires: before it the rule grants and status.grant says which rule and until when; from it on, Rejected naming the rule and the time', () => {
  const cases: Array<[expires: unknown, now: string, want: 'runs' | 'expired']> = [
    ['2026-11-22T10:00:01Z', '2026-11-22T10:00:00Z', 'runs'],
    ['2026-11-22T10:00:00Z', '2026-11-22T10:00:00Z', 'expired'], // the instant itself is past
    ['2026-11-22T09:00:00Z', '2026-11-22T10:00:00Z', 'expired'],
    ['2026-11-22T11:00:00+02:00', '2026-11-22T10:00:00Z', 'expired'], // 09:00Z
    ['2026-11-22T11:00:00.5-01:00', '2026-11-22T10:00:00Z', 'runs'], // 12:00:00.5Z
  ];
  let ran = 0;
  let refused = 0;
  for (const [expires, now, want] of cases) {
    const a = decide(observe({ request: inNs('managed-x'), config: TEMPORARY(expires), now: new Date(now) }));
    if (want === 'runs') {
      ran++;
      assert.equal(a[0]?.type, 'createPipelineRun', `${String(expires)} at ${now}`);
      assert.deepEqual(statusOf(a).status.grant, { rule: 'rules[0] ("temp")', expires });
    } else {
      refused++;
      assert.equal(statusOf(a).code, 'REQUEST_GRANT_EXPIRED', `${String(expires)} at ${now}`);
      assert.match(msg(a), new RegExp(`^Pipeline "sign" was granted to namespace "managed-x" on remote "default" by rules\\[0\\] \\("temp"\\) of InternalServicesConfig internal-services/config until ${String(expires).replace(/[.+]/g, '\\$&')}, and that grant has expired; ask the administrators of the internal cluster to renew it`));
    }
  }
  assert.ok(ran > 0 && refused > 0, `both sides exercised (ran ${ran}, refused ${refused})`);
  // the allowList, and a rule without expires, are written as such
  assert.deepEqual(statusOf(decide(observe({ request: inNs('team-a'), config: TEMPORARY('2026-11-22T09:00:00Z') }))).status.grant, { rule: 'allowList' });
  assert.deepEqual(statusOf(decide(observe({ request: inNs('ops'), config: TEMPORARY('2026-11-22T09:00:00Z') }))).status.grant, { rule: 'rules[1] ("ops")' });
});

test('expires: an expired rule still governs its namespaces (no fallback to the allowList); a later rule that grants still does', () => {
  // managed-x is on the allowList too: the expired rule must not widen it to "everything installed"
  const other = decide(observe({ request: inNs('managed-x', { request: 'other' }), config: TEMPORARY('2026-11-22T09:00:00Z') }));
  assert.equal(statusOf(other).code, 'REQUEST_PIPELINE_NOT_ALLOWED', 'the expired rule grants only "sign", and nothing now');
  const later = config({ rules: [{ name: 'temp', namespaces: ['managed-x'], pipelines: ['sign'], expires: '2026-11-22T09:00:00Z' }, { name: 'always', namespaces: ['managed-x'], pipelines: ['sign'] }] });
  const a = decide(observe({ request: inNs('managed-x'), config: later }));
  assert.equal(a[0]?.type, 'createPipelineRun');
  assert.deepEqual(statusOf(a).status.grant, { rule: 'rules[1] ("always")' });
});

test('expires that cannot be read: reported as a problem of the configuration, and the rule grants nothing', () => {
  for (const bad of ['tomorrow', '2026-13-01T00:00:00Z', '2026-11-22', 1_800_000_000]) {
    const c = TEMPORARY(bad);
    assert.ok(c.problems.some((p) => /rules\[0\] \("temp"\): expires .* is not an RFC 3339 time/.test(p)), `${String(bad)}: ${c.problems.join('; ')}`);
    assert.equal(statusOf(decide(observe({ request: inNs('managed-x'), config: c }))).code, 'REQUEST_GRANT_EXPIRED', String(bad));
  }
  assert.deepEqual(TEMPORARY('2027-01-31T00:00:00Z').problems, []);
});

test('expires: a request that waits (approval, a slot) or runs with onRevoke: cancel is looked at again when the grant expires, and then ends', () => {
  const requeues = (a: Action[]) => a.filter((x) => x.type === 'requeueAfter').map((x) => (x as Extract<Action, { type: 'requeueAfter' }>).ms);
  const inAnHour = '2026-11-22T11:00:00Z';
  // waiting for approval
  const approval = TEMPORARY(inAnHour, { requireApproval: true, approvalTimeout: '24h' });
  assert.ok(requeues(decide(observe({ request: inNs('managed-x'), config: approval }))).includes(3600_000 + 500));
  // queued
  const full = { running: 1, runningByTenant: new Map([['default/team-a', 1]]), waiting: [] };
  const capped = config({ allowList: ['team-a'], capacity: { maxRunning: 1 }, rules: [{ name: 'temp', namespaces: ['managed-x'], pipelines: ['sign'], expires: inAnHour }] });
  const q = decide(observe({ request: inNs('managed-x'), config: capped, capacity: full }));
  assert.equal(statusOf(q).status.conditions?.[1]?.reason, 'Queued');
  assert.ok(requeues(q).includes(3600_000 + 500));
  // far away: one look every 6 hours at most (a longer timer would overflow); the approval's own timeout (24h) is asked for besides
  assert.deepEqual(requeues(decide(observe({ request: inNs('managed-x'), config: TEMPORARY('2027-06-01T00:00:00Z', { requireApproval: true }) }))).sort((x, y) => x - y), [6 * 3600_000, 24 * 3600_000 + 500]);
  // running under onRevoke: cancel: a look at expiry, then cancelled saying why
  const req = inNs('managed-x');
  const running = { ...req, status: { conditions: [{ type: 'Succeeded', status: 'Unknown' as const, reason: 'Running', message: 'm', lastTransitionTime: '2026-11-22T09:59:00Z' }], pipelineRun: `${NS}/ir-u-1` } };
  const pr = pipelineRun('u-1', runningStatus(), { ns: 'managed-x', name: 'req' });
  pr.metadata.annotations = { ...pr.metadata.annotations, [ANNOTATION_ON_REVOKE]: 'cancel' };
  const cancelling = TEMPORARY(inAnHour, { onRevoke: 'cancel' });
  const before = decide(observe({ request: running, pipelineRuns: [pr], config: cancelling }));
  assert.deepEqual(before.filter((x) => x.type === 'cancelPipelineRun'), []);
  assert.ok(requeues(before).includes(3600_000 + 500));
  const after = decide(observe({ request: running, pipelineRuns: [pr], config: cancelling, now: new Date('2026-11-22T11:00:00Z') }));
  const c = after.find((x) => x.type === 'cancelPipelineRun') as Extract<Action, { type: 'cancelPipelineRun' }> | undefined;
  assert.ok(c, 'cancelled once the grant expired');
  assert.match(c.annotations?.[ANNOTATION_REVOKED] ?? '', /by rules\[0\] \("temp"\) .* until 2026-11-22T11:00:00Z, and that grant has expired/);
  // with onRevoke: finish the run goes on, and nothing is asked for
  const finishing = pipelineRun('u-1', runningStatus(), { ns: 'managed-x', name: 'req' });
  const goesOn = decide(observe({ request: running, pipelineRuns: [finishing], config: TEMPORARY(inAnHour), now: new Date('2026-11-22T12:00:00Z') }));
  assert.deepEqual(goesOn.filter((x) => x.type === 'cancelPipelineRun' || x.type === 'requeueAfter'), []);
});

// --- the approval gate ---------------------------------------------------------------

const APPROVAL_RULES = config({ rules: [{ name: 'signing', namespaces: ['managed-x'], pipelines: ['sign'], requireApproval: true, approvalTimeout: '1h' }] });
const approvalOf = (a: Action[]) => (a.find((x) => x.type === 'createApproval') as Extract<Action, { type: 'createApproval' }>).approval;

test('approval required: nothing runs; the approval says what would run; the request says who may approve and how', () => {
  const req = inNs('managed-x', { serviceAccount: undefined });
  const a = decide(observe({ request: req, config: APPROVAL_RULES }));
  assert.deepEqual(a.map((x) => x.type), ['createApproval', 'writeStatus', 'requeueAfter']);
  const ap = approvalOf(a);
  assert.deepEqual(ap.spec.request, { namespace: 'managed-x', name: 'req', uid: 'u-1' });
  assert.equal(ap.spec.rule, 'signing');
  assert.equal(ap.spec.pipeline, 'sign');
  assert.deepEqual(ap.spec.params, { image: `quay.io/org/app@sha256:${SHA}` });
  assert.equal(ap.spec.expiresAt, '2026-11-22T11:00:00Z');
  const w = statusOf(a);
  assert.equal(w.status.conditions?.[0]?.status, 'Unknown');
  assertPhase(w.status, 'AwaitingApproval');
  assert.match(msg(a), /^waiting for approval under rules\[0\] \("signing"\) of InternalServicesConfig internal-services\/config: someone allowed to approve it \(verb "approve" on rules\.appstudio\.redhat\.com "signing" in namespace "internal-services" of the internal cluster\) runs "kubectl internalrequest approve managed-x\/req"/);
  assert.equal((a[2] as { ms: number }).ms, 3_600_500);
});

test('approval of a typed kind: spec.request.kind names it, and the approver is told to pass --kind', () => {
  const signing = { kind: 'SigningRequest', builtIn: false, checkShape: () => undefined };
  const a = decide(observe({ request: inNs('managed-x'), config: APPROVAL_RULES, kind: signing }));
  const ap = approvalOf(a);
  assert.deepEqual(ap.spec.request, { namespace: 'managed-x', name: 'req', uid: 'u-1', kind: 'SigningRequest' });
  assert.equal(ap.metadata.annotations?.[ANNOTATION_REQUEST_KIND], 'SigningRequest');
  assert.match(msg(a), /runs "kubectl internalrequest approve managed-x\/req --kind SigningRequest" \(or "deny managed-x\/req --kind SigningRequest --message …"\)/);
});

test('approval: approved and trusted → runs, recording who; not trusted → still waits, saying why; denied or expired → Rejected', () => {
  const req = inNs('managed-x');
  const pending = approvalOf(decide(observe({ request: req, config: APPROVAL_RULES })));
  const decided = (result: 'Approved' | 'Denied', message?: string) => ({ ...pending, status: { decision: { result, by: 'release-manager', groups: ['release-managers'], at: '2026-11-22T10:05:00Z', ...(message ? { message } : {}) } } });

  const run = decide(observe({ request: req, config: APPROVAL_RULES, approvals: [decided('Approved', 'ok for 1.2')], approvalTrust: { trusted: true } }));
  assert.deepEqual(run.map((x) => x.type), ['createPipelineRun', 'writeStatus', 'deleteApproval']);
  assert.deepEqual(statusOf(run).status.approval, { result: 'Approved', rule: 'signing', by: 'release-manager', at: '2026-11-22T10:05:00Z', message: 'ok for 1.2' });

  const forged = decide(observe({ request: req, config: APPROVAL_RULES, approvals: [decided('Approved')], approvalTrust: { trusted: false, why: '"release-manager" may not approve under rule "signing"' } }));
  assert.deepEqual(forged.map((x) => x.type), ['writeStatus', 'requeueAfter']);
  assert.match(msg(forged), /An approval by "release-manager" was not accepted: "release-manager" may not approve under rule "signing"$/);
  // the controller has not checked it yet: no run either
  assert.ok(!decide(observe({ request: req, config: APPROVAL_RULES, approvals: [decided('Approved')] })).some((x) => x.type === 'createPipelineRun'));

  const denied = decide(observe({ request: req, config: APPROVAL_RULES, approvals: [decided('Denied', 'not during the freeze')] }));
  assert.deepEqual(denied.map((x) => x.type), ['writeStatus', 'deleteApproval']);
  assert.equal(statusOf(denied).code, 'REQUEST_NOT_APPROVED');
  assert.equal(statusOf(denied).status.conditions?.[0]?.reason, 'Rejected');
  assert.match(msg(denied), /^denied by "release-manager" under rules\[0\] \("signing"\) of InternalServicesConfig internal-services\/config: not during the freeze$/);
  assert.equal(statusOf(denied).status.approval?.result, 'Denied');

  const late = decide(observe({ request: req, config: APPROVAL_RULES, approvals: [pending], now: new Date('2026-11-22T11:00:01Z') }));
  assert.equal(statusOf(late).code, 'REQUEST_NOT_APPROVED');
  assert.match(msg(late), /^not approved within 1h \(by 2026-11-22T11:00:00Z\), as rules\[0\] \("signing"\) of InternalServicesConfig internal-services\/config requires/);
  assert.equal(statusOf(late).status.approval?.result, 'Expired');
});

test('approvals of deleted or finished requests are removed', () => {
  const req = inNs('managed-x');
  const ap = approvalOf(decide(observe({ request: req, config: APPROVAL_RULES })));
  assert.deepEqual(decide(observe({ request: undefined, approvals: [ap], config: APPROVAL_RULES })).map((x) => x.type), ['deleteApproval']);
});
