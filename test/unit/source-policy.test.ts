/** The source policy (src/policy/source.ts): default deny, every refusal names the rule and the value. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkSource, globMatch, policyFromAllowedGitURLs, splitImageRef, type SourcePolicy } from '../../src/policy/source.js';

const SRC = 'InternalServicesConfig internal-services/config';
const ctx = { tenant: 'default/team-a', controllerNamespace: 'internal-services' };
const SHA = 'a'.repeat(40);
const git = (url: string, revision: string, pathInRepo = 'pipelines/internal/sign/sign.yaml') => ({ resolver: 'git', params: { url, revision, pathInRepo } });
const gitParams = (url: string, revision: string, pathInRepo = 'pipelines/internal/sign/sign.yaml') => [
  { name: 'url', value: url },
  { name: 'revision', value: revision },
  { name: 'pathInRepo', value: pathInRepo },
];

const policy: SourcePolicy = {
  source: SRC,
  git: [
    { urls: ['https://github.com/org/catalog.git'], revisions: ['main', 'release-*'], commits: true, paths: ['pipelines/internal/**', 'tasks/**'] },
    { urls: ['https://github.com/org/experimental.git'], commits: true, namespaces: ['default/team-b'] },
  ],
  bundles: [{ repositories: ['quay.io/org/catalog/*'], digestOnly: true }],
  cluster: true,
};

test('globs: * within a segment, ** across, the rest literal', () => {
  assert.ok(globMatch('release-*', 'release-1.2'));
  assert.ok(!globMatch('release-*', 'release/1.2'));
  assert.ok(globMatch('pipelines/**', 'pipelines/a/b/c.yaml'));
  assert.ok(!globMatch('https://github.com/org/*.git', 'https://github.com/org/a/b.git'));
  assert.ok(!globMatch('a.b', 'axb'), 'dots are literal');
  assert.ok(globMatch('\\*', '*') && !globMatch('\\*', 'x'), 'an escaped star is literal');
});

test('default deny: no rules, no resolver', () => {
  const none: SourcePolicy = { source: SRC, git: [], bundles: [], cluster: false };
  const v = checkSource(none, git('https://github.com/org/catalog.git', 'main'), ctx);
  assert.deepEqual(v, { allowed: false, message: `the git resolver is not allowed for namespace "team-a" on remote "default" by ${SRC} (no sources.git rule applies)` });
  assert.match((checkSource(none, { resolver: 'hub', params: {} }, ctx) as { message: string }).message, /the "hub" resolver is not allowed .* only git, bundles and cluster can be allowed/);
  assert.match((checkSource(none, { resolver: 'cluster', params: { namespace: 'internal-services' } }, ctx) as { message: string }).message, /the cluster resolver is not allowed/);
});

test('git: url, revision (names or full SHAs) and path, with the rule that allowed it or the reason', () => {
  // Allowed: the rule, and the canonical params to resolve and run (the trailing "/" is not part of the URL).
  assert.deepEqual(checkSource(policy, git('https://github.com/org/catalog.git/', 'main'), ctx), { allowed: true, rule: 'sources.git[0]', params: gitParams('https://github.com/org/catalog.git', 'main') });
  assert.deepEqual(checkSource(policy, git('https://github.com/org/catalog.git', SHA, 'tasks/x/x.yaml'), ctx), { allowed: true, rule: 'sources.git[0]', params: gitParams('https://github.com/org/catalog.git', SHA, 'tasks/x/x.yaml') });
  const evil = checkSource(policy, git('https://evil.example/catalog.git', 'main'), ctx);
  assert.deepEqual(evil, { allowed: false, message: `git url "https://evil.example/catalog.git" is not allowed by ${SRC}; allowed: "https://github.com/org/catalog.git" (sources.git[0])` });
  const rev = checkSource(policy, git('https://github.com/org/catalog.git', 'feature-x'), ctx);
  assert.match((rev as { message: string }).message, /sources.git\[0\] allows revisions "main", "release-\*", full commit SHAs, not "feature-x"/);
  const path = checkSource(policy, git('https://github.com/org/catalog.git', 'main', 'pipelines/public/x.yaml'), ctx);
  assert.match((path as { message: string }).message, /sources.git\[0\] allows paths "pipelines\/internal\/\*\*", "tasks\/\*\*", not "pipelines\/public\/x.yaml"/);
  assert.match((checkSource(policy, { resolver: 'git', params: { repo: 'catalog', org: 'org' } }, ctx) as { message: string }).message, /has no url param/);
});

test('git: a rule for other namespaces does not apply; a rule of commits only refuses branch names', () => {
  const exp = git('https://github.com/org/experimental.git', SHA);
  assert.equal(checkSource(policy, exp, ctx).allowed, false);
  assert.deepEqual(checkSource(policy, exp, { ...ctx, tenant: 'default/team-b' }), { allowed: true, rule: 'sources.git[1]', params: gitParams('https://github.com/org/experimental.git', SHA) });
  const branch = checkSource(policy, git('https://github.com/org/experimental.git', 'main'), { ...ctx, tenant: 'default/team-b' });
  assert.match((branch as { message: string }).message, /sources.git\[1\] allows revisions full commit SHAs, not "main"/);
});

test('allowedGitResolverURLs (the production field): exact URLs, any revision and path; empty: no git at all', () => {
  const p = policyFromAllowedGitURLs(['https://github.com/org/catalog*.git'], SRC);
  assert.equal(checkSource(p, git('https://github.com/org/catalog*.git', 'any-branch', 'any/where.yaml'), ctx).allowed, true);
  assert.equal(checkSource(p, git('https://github.com/org/catalog-evil.git', 'main'), ctx).allowed, false, 'a star in a URL is literal there');
  assert.equal(checkSource(policyFromAllowedGitURLs([], SRC), git('https://github.com/org/catalog.git', 'main'), ctx).allowed, false);
});

test('bundles: repository globs, digest only; cluster: the controller namespace only', () => {
  const d = `sha256:${'b'.repeat(64)}`;
  // A tag next to a digest is ignored by the resolver: the canonical reference drops it.
  assert.deepEqual(checkSource(policy, { resolver: 'bundles', params: { bundle: `quay.io/org/catalog/sign:v1@${d}` } }, ctx), { allowed: true, rule: 'sources.bundles[0]', params: [{ name: 'bundle', value: `quay.io/org/catalog/sign@${d}` }] });
  assert.match((checkSource(policy, { resolver: 'bundles', params: { bundle: 'quay.io/org/catalog/sign:v1' } }, ctx) as { message: string }).message, /not pinned by digest/);
  assert.match((checkSource(policy, { resolver: 'bundles', params: { bundle: `quay.io/other/x@${d}` } }, ctx) as { message: string }).message, /bundle repository "quay.io\/other\/x" is not allowed/);
  assert.deepEqual(splitImageRef('localhost:5000/a/b:t'), { repository: 'localhost:5000/a/b', digest: undefined });
  assert.deepEqual(checkSource(policy, { resolver: 'cluster', params: { namespace: 'internal-services', name: 'p' } }, ctx), { allowed: true, rule: 'sources.cluster', params: [{ name: 'name', value: 'p' }, { name: 'namespace', value: 'internal-services' }] });
  assert.match((checkSource(policy, { resolver: 'cluster', params: { namespace: 'kube-system' } }, ctx) as { message: string }).message, /may only read namespace "internal-services", not "kube-system"/);
});
