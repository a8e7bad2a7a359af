/** Idempotent retries: followOf (pure), decide() following or copying, the CLI's label value. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { followOf, LABEL_IDEMPOTENCY_KEY, specHash, type Earlier } from '../../src/requests/idempotency.js';
import { decide, type Action } from '../../src/controller/decide.js';
import { idempotencyLabelValue } from '../../src/cli/request/commands.js';
import { assertPhase, config, NOW, NS, pipeline, request } from './fixtures.js';

const e = (state: Earlier['state'], sameSpec = true, name = 'first'): Earlier => ({ name, uid: `u-${name}`, sameSpec, state });

test('followOf: follow a running one, copy a succeeded one, refuse a different spec, run after a failure', () => {
  assert.deepEqual(followOf(undefined, [e('active')]), { kind: 'none' }, 'no key: nothing to follow');
  assert.deepEqual(followOf('k', []), { kind: 'none' });
  assert.deepEqual(followOf('k', [e('active')]), { kind: 'follow', earlier: e('active') });
  assert.deepEqual(followOf('k', [e('succeeded')]), { kind: 'copy', earlier: e('succeeded') });
  assert.deepEqual(followOf('k', [e('failed'), e('rejected', true, 'second')]), { kind: 'none' }, 'a failed or rejected one lets a new one run');
  assert.match((followOf('k', [e('active', false)]) as { message: string }).message, /idempotency key "k" is already used by request "first" with a different spec/);
  assert.equal(specHash({ request: 'a', params: { x: '1', y: '2' } }), specHash({ params: { y: '2', x: '1' }, request: 'a' }), 'key order does not matter');
  assert.notEqual(specHash({ request: 'a', params: { x: '1' } }), specHash({ request: 'a', params: { x: '2' } }));
});

test('decide: a follower waits (Following), then copies the earlier outcome and results; nothing runs twice', () => {
  const req = request({}, { labels: { [LABEL_IDEMPOTENCY_KEY]: 'k' } });
  const base = { namespace: NS, request: req, pipelineRuns: [], config: config(), pipeline: pipeline(), now: NOW };
  const following = decide({ ...base, earlier: [{ ...e('active'), pipelineRun: `${NS}/ir-u-first` }] });
  assert.deepEqual(following.map((a) => a.type), ['writeStatus']);
  const st = (following[0] as Extract<Action, { type: 'writeStatus' }>).status;
  assertPhase(st, 'Following');
  assert.match(st.conditions?.[0]?.message ?? '', /^following request "first", which has the same idempotency key "k" and spec \(PipelineRun internal-services\/ir-u-first\)/);
  assert.deepEqual(st.followed, { name: 'first', uid: 'u-first' });
  const copied = decide({ ...base, earlier: [{ ...e('succeeded'), results: { digest: 'd' }, pipelineRun: `${NS}/ir-u-first` }] });
  const done = (copied[0] as Extract<Action, { type: 'writeStatus' }>).status;
  assert.equal(done.conditions?.[0]?.reason, 'Succeeded');
  assert.deepEqual(done.results, { digest: 'd' });
  assert.match(done.conditions?.[0]?.message ?? '', /already succeeded \(PipelineRun internal-services\/ir-u-first\): its results are copied, nothing ran again/);
  const conflict = decide({ ...base, earlier: [e('active', false)] });
  assert.equal((conflict[0] as Extract<Action, { type: 'writeStatus' }>).code, 'REQUEST_IDEMPOTENCY_CONFLICT');
  const runs = decide({ ...base, earlier: [e('failed')] });
  assert.equal(runs[0]?.type, 'createPipelineRun');
  assert.equal((runs[0] as Extract<Action, { type: 'createPipelineRun' }>).pipelineRun.metadata.labels?.[LABEL_IDEMPOTENCY_KEY], 'k', 'the key goes on the PipelineRun');
});

test('CLI: an idempotency key that is not a label value is digested', () => {
  assert.equal(idempotencyLabelValue('abc-123.x'), 'abc-123.x');
  const long = idempotencyLabelValue('4f1c0b8e-2d5a-4c4f-9a83-1e2f3a4b5c6d/sign-image-with-a-long-name');
  assert.match(long, /^sha256-[0-9a-f]{56}$/);
  assert.equal(long.length, 63);
  assert.equal(idempotencyLabelValue('4f1c0b8e-2d5a-4c4f-9a83-1e2f3a4b5c6d/sign-image-with-a-long-name'), long, 'stable');
});

test('a follower whose earlier request fails runs itself, and no longer says it follows', () => {
  const st = { conditions: [{ type: 'Succeeded', status: 'Unknown' as const, reason: 'Following', message: 'm', lastTransitionTime: '2026-11-22T09:59:00Z' }], followed: { name: 'first', uid: 'u-first' } };
  const req = request({}, { labels: { [LABEL_IDEMPOTENCY_KEY]: 'k' } }, st);
  const a = decide({ namespace: NS, request: req, pipelineRuns: [], config: config(), pipeline: pipeline(), now: NOW, earlier: [e('failed')] });
  assert.deepEqual(a.map((x) => x.type), ['createPipelineRun', 'writeStatus']);
  const w = a[1] as Extract<Action, { type: 'writeStatus' }>;
  assert.equal(w.status.conditions?.[0]?.reason, 'Running');
  assert.equal(w.status.followed, undefined);
});
