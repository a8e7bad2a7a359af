/** Segment globs (src/policy/glob.ts): `*` within a segment, `**` whole segments, never a dot segment. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileGlob, globMatch, matchGlob } from '../../src/policy/glob.js';

const strict = (p: string) => {
  const g = compileGlob(p, true);
  assert.ok(g.ok, `${p}: ${g.ok ? '' : g.why}`);
  return (v: string) => matchGlob(g.glob, v);
};

test('** matches whole segments, zero or more, and never a "." or ".." segment', () => {
  const m = strict('pipelines/internal/sign-image/**');
  assert.ok(m('pipelines/internal/sign-image/sign-image.yaml'));
  assert.ok(m('pipelines/internal/sign-image/a/b/c.yaml'));
  assert.ok(m('pipelines/internal/sign-image'), 'zero segments');
  assert.ok(!m('pipelines/internal/sign-image/../other/other.yaml'), 'the issue\'s example: ** does not climb');
  assert.ok(!m('pipelines/internal/sign-image/./x.yaml'));
  assert.ok(!m('pipelines/internal/sign-image-evil/x.yaml'), '** does not extend a segment');
  const mid = strict('tasks/**/task.yaml');
  assert.ok(mid('tasks/task.yaml') && mid('tasks/a/b/task.yaml'));
  assert.ok(!mid('tasks/a/../../task.yaml') && !mid('tasks/a/task.yaml/x'));
  const all = strict('**');
  assert.ok(all('a/b/c') && !all('a/../b') && !all('..'));
});

test('* matches within one segment, never "/" and never a whole "." or ".." segment', () => {
  const m = strict('pipelines/*/sign.yaml');
  assert.ok(m('pipelines/internal/sign.yaml'));
  assert.ok(!m('pipelines/a/b/sign.yaml'));
  assert.ok(!m('pipelines/../sign.yaml'));
  assert.ok(!m('pipelines/./sign.yaml'));
  assert.ok(strict('release-*')('release-1.2') && !strict('release-*')('release/1.2'));
  assert.ok(strict('*.yaml')('..yaml'), 'a segment that only begins with dots is a name');
  assert.ok(strict('a*b*c')('aXbYc') && strict('a*b*c')('abc') && !strict('a*b*c')('acb'));
  assert.ok(strict('*a*a*a*a*a*a*a*a*a*b')('a'.repeat(200) + 'b') && !strict('*a*a*a*a*a*a*a*a*a*b')('a'.repeat(5000)), 'linear, no backtracking blow-up');
});

test('strict compile (the source policy\'s globs) refuses what would be ambiguous', () => {
  for (const [p, why] of [
    ['a//b', /empty segment/],
    ['a/../b', /"\.\." segment/],
    ['./a', /"\." segment/],
    ['a**', /"\*\*" must be a whole segment/],
    ['x/**b/y', /"\*\*" must be a whole segment/],
  ] as const) {
    const g = compileGlob(p, true);
    assert.ok(!g.ok, p);
    assert.match(g.why, why, p);
  }
});

test('lenient globs (tenants, Pipeline and param names) keep working', () => {
  assert.ok(globMatch('*/team-a', 'prod/team-a') && globMatch('*/team-a', 'default/team-a'));
  assert.ok(!globMatch('*/team-a', 'prod/team-b'));
  assert.ok(globMatch('prod/*', 'prod/anything') && !globMatch('prod/*', 'staging/x'));
  assert.ok(globMatch('default/team-*', 'default/team-a'));
  assert.ok(globMatch('*/*', 'a/b') && !globMatch('*', 'a/b'));
  assert.ok(globMatch('sign-*', 'sign-image'));
  assert.ok(globMatch('\\*', '*') && !globMatch('\\*', 'x'), 'an escaped star is literal');
  assert.ok(globMatch('a.b', 'a.b') && !globMatch('a.b', 'axb'), 'dots are literal');
  assert.ok(globMatch('team-**', 'team-x'), 'a ** inside a segment means *');
});
