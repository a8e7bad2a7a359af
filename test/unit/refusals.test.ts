/**
 * What the clusters refused of a plan, kept for the next observation
 * (src/controller/refusals.ts), and the gauge that shows a remote refusing
 * TTL deletes (HealthViews.deletesDenied, bound to
 * internal_services_remote_deletes_denied).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DELETES_DENIED_MS, Refusals } from '../../src/controller/refusals.js';
import { HealthViews, type ViewSources } from '../../src/controller/health-views.js';
import { createMetrics } from '../../src/metrics.js';

const T = Date.parse('2026-11-27T00:00:00Z');

test('a refusal belongs to one request: its key and uid; a request of the same name with another uid starts clean', () => {
  const r = new Refusals();
  assert.equal(r.of('prod/team/a', 'u-1'), undefined);
  r.runRefused('prod/team/a', 'u-1', 'quota exceeded', T);
  r.resultsRefused('prod/team/a', 'u-1', 'too large', T);
  assert.deepEqual(r.of('prod/team/a', 'u-1'), { run: 'quota exceeded', results: 'too large' });
  assert.equal(r.of('prod/team/a', 'u-2'), undefined, 'replaced request');
  assert.equal(r.of('prod/team/a', undefined), undefined);
  r.resultsRefused('prod/team/a', 'u-2', 'too large again', T);
  assert.deepEqual(r.of('prod/team/a', 'u-2'), { results: 'too large again' }, 'the new request does not inherit the old one\'s refusal');
  r.expire(T + 59 * 60_000);
  assert.ok(r.of('prod/team/a', 'u-2'), 'kept for an hour');
  r.expire(T + 61 * 60_000);
  assert.equal(r.of('prod/team/a', 'u-2'), undefined, 'then dropped');
});

test('deletes denied: said once per remote, asked again after DELETES_DENIED_MS, forgotten with the remote', () => {
  const r = new Refusals();
  assert.equal(r.deleteDenied('prod', T), true, 'the first refusal is new');
  assert.equal(r.deleteDenied('prod', T + 1), false);
  assert.equal(r.deletesDeniedOn('prod', T + 1), true);
  assert.equal(r.deletesDeniedOn('stage', T + 1), false);
  assert.deepEqual(r.deletesDeniedRemotes(T + 2), ['prod']);
  assert.equal(r.deletesDeniedOn('prod', T + 1 + DELETES_DENIED_MS), false);
  assert.deepEqual(r.deletesDeniedRemotes(T + 1 + DELETES_DENIED_MS), []);
  r.runRefused('prod/team/a', 'u-1', 'x', T);
  r.runRefused('stage/team/a', 'u-9', 'y', T);
  r.forgetRemote('prod');
  assert.equal(r.deletesDeniedOn('prod', T + 2), false);
  assert.equal(r.of('prod/team/a', 'u-1'), undefined);
  assert.deepEqual(r.of('stage/team/a', 'u-9'), { run: 'y' }, 'another remote keeps its own');
});

test('finalizer removals denied: apart from deletes, said once per remote, asked again after DELETES_DENIED_MS, forgotten with the remote', () => {
  const r = new Refusals();
  assert.equal(r.finalizerDenied('prod', T), true);
  assert.equal(r.finalizerDenied('prod', T + 1), false);
  assert.equal(r.finalizersDeniedOn('prod', T + 1), true);
  assert.equal(r.deletesDeniedOn('prod', T + 1), false, 'a refused patch says nothing of deletes');
  assert.deepEqual(r.deletesDeniedRemotes(T + 1), []);
  assert.equal(r.deleteDenied('prod', T + 1), true, 'nor the reverse');
  assert.equal(r.finalizersDeniedOn('prod', T + 1 + DELETES_DENIED_MS), false);
  r.forgetRemote('prod');
  assert.equal(r.finalizersDeniedOn('prod', T + 2), false);
  assert.equal(r.finalizerDenied('prod', T + 3), true, 'new again once forgotten');
});

test('the gauge: 1 for a remote that refuses TTL deletes, 0 for the others, by metric label', async () => {
  const refusals = new Refusals();
  refusals.deleteDenied('prod', T);
  const sources = { remoteNames: () => ['prod', 'stage', 'lc-1', 'lc-2'], metricsNameOf: (r: string) => (r.startsWith('lc-') ? 'kcp' : r), deletesDenied: (now: number) => refusals.deletesDeniedRemotes(now) } as unknown as ViewSources;
  const views = new HealthViews(sources);
  assert.deepEqual(views.deletesDenied(T + 1), { prod: 1, stage: 0, kcp: 0 });
  assert.deepEqual(views.deletesDenied(T + DELETES_DENIED_MS + 1), { prod: 0, stage: 0, kcp: 0 });
  const metrics = createMetrics();
  metrics.bind({ running: () => 0, lastContact: () => [], leader: () => true, configPresent: () => true, waiting: () => ({}), remotes: () => [], deletesDenied: () => views.deletesDenied(T + 1) });
  const text = await metrics.registry.metrics();
  assert.match(text, /internal_services_remote_deletes_denied\{remote="prod"\} 1/);
  assert.match(text, /internal_services_remote_deletes_denied\{remote="stage"\} 0/);
});
