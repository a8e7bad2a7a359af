/** The source policy (src/policy/source.ts): default deny, every refusal names the rule and the value. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign, type KeyPairKeyObjectResult } from 'node:crypto';
import { checkSource, globMatch, policyFromAllowedGitURLs, splitImageRef, type SourcePolicy, type SourceVerdict } from '../../src/policy/source.js';
import { tektonChecksum } from '../../src/policy/trusted.js';
import { checkSignature, signersAfterCheck } from '../../src/tekton/reviewed.js';
import { effectiveConfig } from '../../src/controller/config.js';

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
    { urls: ['https://github.com/org/catalog.git'], revisions: ['main', 'release-*'], commits: { reachable: true }, paths: ['pipelines/internal/**', 'tasks/**'] },
    { urls: ['https://github.com/org/experimental.git'], commits: { shas: ['a'.repeat(40)] }, namespaces: ['default/team-b'] },
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
  assert.match((checkSource(none, { resolver: 'hub', params: {} }, ctx) as { message: string }).message, /the "hub" resolver is not allowed .* only git, bundles, http and cluster can be allowed/);
  assert.match((checkSource(none, { resolver: 'cluster', params: { namespace: 'internal-services' } }, ctx) as { message: string }).message, /the cluster resolver is not allowed/);
});

test('git: url, revision and path, with the rule that allowed it or the reason; a revision is passed on as the fully qualified ref', () => {
  // Allowed: the rule, and the canonical params to resolve and run (the trailing "/" is not part of the URL; a bare name is the branch, qualified).
  assert.deepEqual(checkSource(policy, git('https://github.com/org/catalog.git/', 'main'), ctx), { allowed: true, rule: 'sources.git[0]', params: gitParams('https://github.com/org/catalog.git', 'refs/heads/main') });
  assert.deepEqual(checkSource(policy, git('https://github.com/org/catalog.git', 'refs/heads/release-2'), ctx), { allowed: true, rule: 'sources.git[0]', params: gitParams('https://github.com/org/catalog.git', 'refs/heads/release-2') });
  const evil = checkSource(policy, git('https://evil.example/catalog.git', 'main'), ctx);
  assert.deepEqual(evil, { allowed: false, message: `git url "https://evil.example/catalog.git" is not allowed by ${SRC}; allowed: "https://github.com/org/catalog.git" (sources.git[0])` });
  const rev = checkSource(policy, git('https://github.com/org/catalog.git', 'feature-x'), ctx);
  assert.match((rev as { message: string }).message, /sources.git\[0\] allows branches "refs\/heads\/main", "refs\/heads\/release-\*", commits reachable from them, not branch "refs\/heads\/feature-x"/);
  const path = checkSource(policy, git('https://github.com/org/catalog.git', 'main', 'pipelines/public/x.yaml'), ctx);
  assert.match((path as { message: string }).message, /sources.git\[0\] allows paths "pipelines\/internal\/\*\*", "tasks\/\*\*", not "pipelines\/public\/x.yaml"/);
  assert.match((checkSource(policy, { resolver: 'git', params: { repo: 'catalog', org: 'org' } }, ctx) as { message: string }).message, /has no url param/);
});

test('git: a tag is never a branch: a bare name is the branch, tags only where a rule names them in full', () => {
  const tagged: SourcePolicy = { ...policy, git: [{ urls: ['https://github.com/org/catalog.git'], revisions: ['main', 'refs/tags/v*'] }] };
  const url = 'https://github.com/org/catalog.git';
  // "main" means refs/heads/main, whatever tags the repository has: git would read a tag "main" first.
  assert.deepEqual(checkSource(tagged, git(url, 'main'), ctx), { allowed: true, rule: 'sources.git[0]', params: gitParams(url, 'refs/heads/main') });
  assert.deepEqual(checkSource(tagged, git(url, 'refs/tags/v1.2.0'), ctx), { allowed: true, rule: 'sources.git[0]', params: gitParams(url, 'refs/tags/v1.2.0') });
  // A tag named like an allowed branch is not allowed: the rule names no tag "main".
  const shadow = checkSource(tagged, git(url, 'refs/tags/main'), ctx) as { allowed: false; message: string };
  assert.match(shadow.message, /allows branches "refs\/heads\/main", tags "refs\/tags\/v\*", not tag "refs\/tags\/main"/);
  // A bare tag name is a branch; the message says how to name the tag.
  const bare = checkSource(tagged, git(url, 'v1.2.0'), ctx) as { allowed: false; message: string };
  assert.match(bare.message, /not branch "refs\/heads\/v1.2.0" \(a bare name is a branch; for the tag write "refs\/tags\/v1.2.0"\)/);
  // The policy of branches only allows no tag at all.
  assert.equal(checkSource(policy, git(url, 'refs/tags/main'), ctx).allowed, false);
  // Other refs have nothing a rule could review; HEAD is whatever the server's default is.
  for (const r of ['refs/pull/1/head', 'refs/remotes/origin/main', 'refs/notes/x', 'HEAD', 'refs/heads/HEAD']) {
    const v = checkSource(tagged, git(url, r), ctx) as { allowed: false; message: string };
    assert.equal(v.allowed, false, r);
    assert.match(v.message, /git param "revision" .* refused by .* before sources.git\[0\] is applied/, r);
  }
});

test('git: a commit by SHA is allowed when listed, or allowed subject to a reachability check from the refs the rules name', () => {
  const url = 'https://github.com/org/catalog.git';
  const listed = 'c'.repeat(40);
  const p: SourcePolicy = {
    ...policy,
    git: [
      { urls: [url], revisions: ['main', 'refs/tags/v*'], commits: { reachable: true } },
      { urls: [url], revisions: ['release-*'], commits: { reachable: true } },
      { urls: [url], commits: { shas: [listed.toUpperCase()] } },
    ],
  };
  const v = checkSource(p, git(url, SHA.toUpperCase(), 'tasks/x.yaml'), ctx);
  assert.deepEqual(v, {
    allowed: true,
    rule: 'sources.git[0], sources.git[1]',
    params: gitParams(url, SHA, 'tasks/x.yaml'),
    commitCheck: { url, commit: SHA, refs: ['refs/heads/main', 'refs/heads/release-*', 'refs/tags/v*'], rules: ['sources.git[0]', 'sources.git[1]'] },
    commitRules: [
      { name: 'sources.git[0]', refs: ['refs/heads/main', 'refs/tags/v*'], signers: undefined },
      { name: 'sources.git[1]', refs: ['refs/heads/release-*'], signers: undefined },
    ],
  });
  // A listed commit needs no check: the administrators reviewed it.
  assert.deepEqual(checkSource(p, git(url, listed, 'tasks/x.yaml'), ctx), { allowed: true, rule: 'sources.git[2]', params: gitParams(url, listed, 'tasks/x.yaml') });
  // A rule without commits allows no SHA.
  const none = checkSource({ ...p, git: [{ urls: [url], revisions: ['main'] }] }, git(url, SHA), ctx) as { allowed: false; message: string };
  assert.match(none.message, /sources.git\[0\] allows branches "refs\/heads\/main", not commit "a{40}"/);
});

test('git: a rule for other namespaces does not apply; a rule of listed commits only refuses branch names', () => {
  const exp = git('https://github.com/org/experimental.git', SHA);
  assert.equal(checkSource(policy, exp, ctx).allowed, false);
  assert.deepEqual(checkSource(policy, exp, { ...ctx, tenant: 'default/team-b' }), { allowed: true, rule: 'sources.git[1]', params: gitParams('https://github.com/org/experimental.git', SHA) });
  const branch = checkSource(policy, git('https://github.com/org/experimental.git', 'main'), { ...ctx, tenant: 'default/team-b' });
  assert.match((branch as { message: string }).message, /sources.git\[1\] allows 1 listed commit, not branch "refs\/heads\/main"/);
});

test('commits: true (any commit the server hands out) is no longer accepted: the rule is unusable and says what to write', () => {
  const old: SourcePolicy = { ...policy, git: [{ urls: ['https://github.com/org/catalog.git'], revisions: ['main'], commits: true }] };
  const v = checkSource(old, git('https://github.com/org/catalog.git', 'main'), ctx) as { allowed: false; message: string };
  assert.equal(v.allowed, false, 'the whole rule grants nothing, branches included');
  assert.match(v.message, /sources.git\[0\] is unusable and grants nothing \(commits: true no longer allows a commit.*Write commits: \{reachable: true\}.*or commits: \{shas: \[\.\.\.\]\}/);
  const cfg = effectiveConfig({ apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name: 'config', namespace: 'internal-services' }, spec: { allowList: ['team-a'], sources: { git: [{ urls: ['https://github.com/org/catalog.git'], revisions: ['main'], commits: true }] } } } as never, 'internal-services');
  assert.equal(cfg.problems.length, 1);
  assert.match(cfg.problems[0]!, /sources.git\[0\] of .* is unusable and grants nothing: commits: true no longer allows a commit/);
  for (const [commits, why] of [
    ['yes', /commits is "yes"; write commits: \{reachable: true\}/],
    [{ reachable: 'true' }, /commits.reachable must be true or false/],
    [{ shas: ['abc'] }, /commits.shas\[0\] "abc" is not a full commit SHA/],
    [{ any: true }, /commits has unknown fields "any"/],
    [{ reachable: true }, /commits.reachable needs revisions/],
  ] as const) {
    const r = checkSource({ ...policy, git: [{ urls: ['https://github.com/org/catalog.git'], commits }] }, git('https://github.com/org/catalog.git', SHA), ctx) as { allowed: false; message: string };
    assert.equal(r.allowed, false);
    assert.match(r.message, why);
  }
  // false (or absent) means no commits, as it always did.
  assert.equal(checkSource({ ...policy, git: [{ urls: ['https://github.com/org/catalog.git'], revisions: ['main'], commits: false }] }, git('https://github.com/org/catalog.git', 'main'), ctx).allowed, true);
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

// --- canonical before compare (issue 22) ---------------------------------------

const msg = (v: ReturnType<typeof checkSource>): string => (v.allowed ? `allowed by ${v.rule}` : v.message);

test('hostile paths: ".." under a paths glob, absolute and climbing paths under allowedGitResolverURLs: refused before any rule, naming the param and the rule', () => {
  const signOnly: SourcePolicy = { source: SRC, git: [{ urls: ['https://github.com/org/catalog.git'], revisions: ['main'], paths: ['pipelines/internal/sign-image/**'] }], bundles: [], cluster: false };
  assert.equal(checkSource(signOnly, git('https://github.com/org/catalog.git', 'main', 'pipelines/internal/sign-image/sign-image.yaml'), ctx).allowed, true);
  assert.match(msg(checkSource(signOnly, git('https://github.com/org/catalog.git', 'main', 'pipelines/internal/other/other.yaml'), ctx)), /sources\.git\[0\] allows paths "pipelines\/internal\/sign-image\/\*\*", not "pipelines\/internal\/other\/other\.yaml"/);
  assert.equal(
    msg(checkSource(signOnly, git('https://github.com/org/catalog.git', 'main', 'pipelines/internal/sign-image/../other/other.yaml'), ctx)),
    `git param "pathInRepo" "pipelines/internal/sign-image/../other/other.yaml" has a ".." segment, which climbs out of the directory it names (and out of the repository): refused by ${SRC} before sources.git[0] is applied (references are matched only in their canonical form; docs/security.md)`,
  );
  const two: SourcePolicy = { ...signOnly, git: [...signOnly.git, { urls: ['https://github.com/org/*'], revisions: ['main'] }] };
  assert.match(msg(checkSource(two, git('https://github.com/org/catalog.git', 'main', 'a/../b.yaml'), ctx)), /before sources\.git\[0\], sources\.git\[1\] are applied/, 'every rule the URL matched is named');
  const anyPath = policyFromAllowedGitURLs(['https://github.com/org/catalog.git'], SRC);
  for (const [path, why] of [
    ['../../../../etc/passwd', /"pathInRepo" "\.\.\/\.\.\/\.\.\/\.\.\/etc\/passwd" has a "\.\." segment.*before allowedGitResolverURLs is applied/],
    ['/etc/passwd', /"pathInRepo" "\/etc\/passwd" is absolute.*before allowedGitResolverURLs is applied/],
    ['.git/config', /"pathInRepo" "\.git\/config" has a "\.git" segment/],
    ['a\\..\\..\\b', /"pathInRepo" .* has a backslash/],
    ['a\u0000b', /"pathInRepo" "a\\u0000b" has the control or format character U\+0000/],
  ] as const) {
    assert.match(msg(checkSource(anyPath, git('https://github.com/org/catalog.git', 'main', path), ctx)), why, path);
  }
});

test('hostile revisions: an option to git is never a revision, whatever the rule allows', () => {
  const anyRev = policyFromAllowedGitURLs(['https://github.com/org/catalog.git'], SRC);
  assert.match(msg(checkSource(anyRev, git('https://github.com/org/catalog.git', '--upload-pack=touch /tmp/pwned'), ctx)), /git param "revision" "--upload-pack=touch \/tmp\/pwned" begins with "-", which git reads as an option, not a revision: refused by .* before allowedGitResolverURLs is applied/);
  assert.match(msg(checkSource(anyRev, git('https://github.com/org/catalog.git', ''), ctx)), /"revision" "" is empty/);
  const ok = checkSource(anyRev, git('https://github.com/org/catalog.git', SHA.toUpperCase()), ctx);
  assert.equal(ok.allowed && ok.params[1]?.value, SHA, 'a SHA in upper case is the same commit, passed on in lower case');
});

test('URL spellings: the same repository is allowed whatever its spelling, and passed on canonical; other repositories and unsafe spellings are refused', () => {
  const rule: SourcePolicy = { source: SRC, git: [{ urls: ['https://GitHub.com/org/catalog'], revisions: ['main'] }], bundles: [], cluster: false };
  for (const url of ['https://github.com/org/catalog', 'HTTPS://GITHUB.COM/org/catalog', 'https://github.com:443/org/catalog/', 'https://github.com/org/catalog.git', 'https://github.com/%6Frg/catalog']) {
    const v = checkSource(rule, git(url, 'main'), ctx);
    assert.ok(v.allowed, `${url}: ${msg(v)}`);
    assert.equal(v.params[0]?.value, url.toLowerCase().includes('.git') ? 'https://github.com/org/catalog.git' : 'https://github.com/org/catalog', url);
  }
  for (const [url, why] of [
    ['https://github.com/org/catalog/../evil', /"url" .* has a "\.\." path segment: refused by .* before any sources\.git rule is applied/],
    ['https://github.com/org/%2e%2e/evil/catalog', /encodes "\." as %2e/],
    ['https://github.com/org%2Fevil/catalog', /encodes "\/" as %2F/],
    ['https://x:y@github.com/org/catalog', /has user info/],
    ['https://github.com/org/catalog?x=1', /has a query/],
    ['https://github.com/org/catalog#x', /has a fragment/],
    ['file:///org/catalog', /scheme "file"/],
    ['ext::sh -c touch% /tmp/pwned', /character " "|remote helper/],
    ['https://github.com.evil.example/org/catalog', /git url "https:\/\/github\.com\.evil\.example\/org\/catalog" is not allowed/],
    ['https://github.com/org/catalog-evil', /is not allowed/],
  ] as const) {
    assert.match(msg(checkSource(rule, git(url, 'main'), ctx)), why, url);
  }
  const glob: SourcePolicy = { source: SRC, git: [{ urls: ['https://github.com/org/*'], revisions: ['main'] }], bundles: [], cluster: false };
  assert.ok(checkSource(glob, git('https://github.com/org/catalog.git', 'main'), ctx).allowed);
  assert.match(msg(checkSource(glob, git('https://github.com/org/a/b', 'main'), ctx)), /is not allowed/, '* stays in its segment');
  assert.match(msg(checkSource(glob, git('https://github.com/org/x/../../other/y', 'main'), ctx)), /"\.\." path segment/);
});

test('bundle spellings: Docker Hub aliases, implied library/, case; tag and digest', () => {
  const d = `sha256:${'c'.repeat(64)}`;
  const hub: SourcePolicy = { source: SRC, git: [], bundles: [{ repositories: ['docker.io/library/tasks'] }, { repositories: ['quay.io/org/*'], digestOnly: true }], cluster: false };
  for (const b of ['tasks:v1', 'docker.io/tasks:v1', 'index.docker.io/library/tasks:v1', 'registry-1.docker.io/library/tasks:v1']) {
    const v = checkSource(hub, { resolver: 'bundles', params: { bundle: b, name: 'sign', kind: 'Task' } }, ctx);
    assert.deepEqual(v, { allowed: true, rule: 'sources.bundles[0]', params: [{ name: 'bundle', value: 'docker.io/library/tasks:v1' }, { name: 'name', value: 'sign' }, { name: 'kind', value: 'task' }] }, b);
  }
  assert.equal(checkSource(hub, { resolver: 'bundles', params: { bundle: 'Quay.IO/org/sign:v1@' + d } }, ctx).allowed, true);
  assert.match(msg(checkSource(hub, { resolver: 'bundles', params: { bundle: 'quay.io/Org/sign@' + d } }, ctx)), /bundles param "bundle" "quay\.io\/Org\/sign@.*" has upper-case letters/);
  assert.match(msg(checkSource(hub, { resolver: 'bundles', params: { bundle: 'quay.io/org/../evil/sign@' + d } }, ctx)), /repository component "\.\."/);
  assert.match(
    msg(checkSource(hub, { resolver: 'bundles', params: { bundle: 'quay.io/org/sign:v1' } }, ctx)),
    /^bundle "quay\.io\/org\/sign:v1" is not pinned by digest, and .* allows "quay\.io\/org\/sign" only by digest \(sources\.bundles\[1\]\): refer to it as "quay\.io\/org\/sign@sha256:…", with the digest of the manifest its tag "v1" names now \(a tag can be moved, a digest cannot\)$/,
  );
  assert.match(msg(checkSource(hub, { resolver: 'bundles', params: { bundle: 'evil.io/library/tasks:v1' } }, ctx)), /bundle repository "evil\.io\/library\/tasks" is not allowed/);
});

test('cluster params and duplicates: refused with the param named', () => {
  assert.match(msg(checkSource(policy, { resolver: 'cluster', params: { namespace: 'internal-services', name: '../x' } }, ctx)), /cluster param "name" "\.\.\/x" is not an object name/);
  assert.match(msg(checkSource(policy, { resolver: 'cluster', params: { namespace: 'internal-services', name: 'p', kind: 'Secret' } }, ctx)), /cluster param "kind" "Secret" is not one of task, pipeline, stepaction/);
  const twice = [{ name: 'url', value: 'https://github.com/org/catalog.git' }, { name: 'revision', value: 'main' }, { name: 'pathInRepo', value: 'tasks/a.yaml' }, { name: 'pathInRepo', value: '../../etc/passwd' }];
  assert.match(msg(checkSource(policy, { resolver: 'git', params: twice }, ctx)), /the git param "pathInRepo" is given more than once/);
});

test('an unusable rule in the configuration grants nothing, is reported with the configuration, and named in refusals', () => {
  const cfg = effectiveConfig(
    {
      apiVersion: 'appstudio.redhat.com/v1alpha1',
      kind: 'InternalServicesConfig',
      metadata: { name: 'config', namespace: 'internal-services' },
      spec: {
        allowList: ['team-a'],
        sources: { git: [{ urls: ['https://github.com/org/catalog.git'], revisions: ['main'], paths: ['pipelines/../**'] }, { urls: ['https://github.com/org/other.git'], revisions: ['main'] }], bundles: [{ repositories: ['quay.io/org/x:v1'] }] },
      },
    } as never,
    'internal-services',
  );
  assert.deepEqual(cfg.problems, [
    `sources.git[0] of ${SRC} is unusable and grants nothing: paths[0] "pipelines/../**" has a ".." segment, which climbs out of the directory it names (and out of the repository)`,
    `sources.bundles[0] of ${SRC} is unusable and grants nothing: repositories[0] "quay.io/org/x:v1" has a tag; rules name repositories (use digestOnly to require digests)`,
  ]);
  const v = checkSource(cfg.sources, git('https://github.com/org/catalog.git', 'main', 'pipelines/x.yaml'), ctx);
  assert.match(msg(v), /git url "https:\/\/github\.com\/org\/catalog\.git" is not allowed by .*; allowed: "https:\/\/github\.com\/org\/other\.git" \(sources\.git\[1\]\); sources\.git\[0\] is unusable and grants nothing \(paths\[0\] "pipelines\/\.\.\/\*\*" has a "\.\." segment/);
  assert.ok(checkSource(cfg.sources, git('https://github.com/org/other.git', 'main', 'x.yaml'), ctx).allowed, 'the usable rule still applies');
  const url = effectiveConfig({ apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name: 'config', namespace: 'internal-services' }, spec: { allowedGitResolverURLs: ['git@github.com:org/x.git'] } } as never, 'internal-services');
  assert.match(url.problems[0] ?? '', /^allowedGitResolverURLs of .* is unusable and grants nothing: urls\[0\] "git@github\.com:org\/x\.git" is not of the form scheme:\/\/host\/path/);
});

// --- one repository, one name (issue 42) ------------------------------------------

test('one repository, one name: "x" and "x.git" are two repositories unless the host cannot hold both or the rule says dotGit: either', () => {
  const only = (url: string, extra: Record<string, unknown> = {}): SourcePolicy => ({ source: SRC, git: [{ urls: [url], revisions: ['main'], ...extra }], bundles: [], cluster: false });
  const daemon = only('git://127.0.0.1:19418/catalog.git');
  const web = only('https://git.example.com/org/catalog');
  const either = only('git://127.0.0.1:19418/catalog.git', { dotGit: 'either' });
  const exact = only('git://127.0.0.1:19418/catalog.git', { dotGit: 'exact' });
  const hub = only('https://github.com/org/catalog.git');
  const lab = only('https://gitlab.com/group/sub/project');
  const globbed = only('https://git.example.com/org/*.git');
  const legacy = policyFromAllowedGitURLs(['git://127.0.0.1:19418/catalog.git'], SRC);
  const legacyHub = policyFromAllowedGitURLs(['https://github.com/org/catalog.git'], SRC);
  const rows: Array<[string, SourcePolicy, string, true | RegExp]> = [
    ['as written', daemon, 'git://127.0.0.1:19418/catalog.git', true],
    ['without .git, on a git daemon', daemon, 'git://127.0.0.1:19418/catalog', /^git url "git:\/\/127\.0\.0\.1:19418\/catalog" is not allowed by .*: sources\.git\[0\] allows "git:\/\/127\.0\.0\.1:19418\/catalog\.git", which on "127\.0\.0\.1:19418" can be another repository \(a git server serves "x" and "x\.git" as two repositories when both exist; only github\.com, gitlab\.com are known to serve them as one\): ask for "git:\/\/127\.0\.0\.1:19418\/catalog\.git", or, if that server serves both names as one repository, the administrators of the internal cluster can set dotGit: either on sources\.git\[0\]$/],
    ['with .git, where the rule has none', web, 'https://git.example.com/org/catalog.git', /sources\.git\[0\] allows "https:\/\/git\.example\.com\/org\/catalog", which on "git\.example\.com" can be another repository .*: ask for "https:\/\/git\.example\.com\/org\/catalog"/],
    ['dotGit: exact is the default', exact, 'git://127.0.0.1:19418/catalog', /ask for "git:\/\/127\.0\.0\.1:19418\/catalog\.git"/],
    ['dotGit: either, as written', either, 'git://127.0.0.1:19418/catalog.git', true],
    ['dotGit: either, the other spelling', either, 'git://127.0.0.1:19418/catalog', true],
    ['dotGit: either, one .git at a time: "catalog.git.git" is "catalog.git" with ".git"', either, 'git://127.0.0.1:19418/catalog.git.git', true],
    ['dotGit: either, one .git at a time: not "catalog.git.git" for "catalog"', only('git://127.0.0.1:19418/catalog', { dotGit: 'either' }), 'git://127.0.0.1:19418/catalog.git.git', /is not allowed/],
    ['github.com cannot hold both', hub, 'https://github.com/org/catalog', true],
    ['github.com, as written', hub, 'https://github.com/org/catalog.git', true],
    ['gitlab.com cannot hold both', lab, 'https://gitlab.com/group/sub/project.git', true],
    ['github.com on another port is another server', only('https://github.com:8443/org/catalog.git'), 'https://github.com:8443/org/catalog', /can be another repository/],
    ['a glob of .git names', globbed, 'https://git.example.com/org/x', /sources\.git\[0\] allows "https:\/\/git\.example\.com\/org\/x\.git".*ask for "https:\/\/git\.example\.com\/org\/x\.git"/],
    ['a glob of .git names, as written', globbed, 'https://git.example.com/org/x.git', true],
    ['"*" is any name, ".git" or not', only('https://git.example.com/org/*'), 'https://git.example.com/org/x.git', true],
    ['another repository altogether', daemon, 'git://127.0.0.1:19418/other', /^git url "git:\/\/127\.0\.0\.1:19418\/other" is not allowed by .*; allowed: "git:\/\/127\.0\.0\.1:19418\/catalog\.git" \(sources\.git\[0\]\)$/],
    ['allowedGitResolverURLs: exact, .git included', legacy, 'git://127.0.0.1:19418/catalog', /allowedGitResolverURLs allows "git:\/\/127\.0\.0\.1:19418\/catalog\.git".*ask for "git:\/\/127\.0\.0\.1:19418\/catalog\.git", or the administrators of the internal cluster can add "git:\/\/127\.0\.0\.1:19418\/catalog" to allowedGitResolverURLs if that server serves both names as one repository$/],
    ['allowedGitResolverURLs on github.com', legacyHub, 'https://github.com/org/catalog', true],
    ['an unusable dotGit', only('git://127.0.0.1:19418/catalog.git', { dotGit: true }), 'git://127.0.0.1:19418/catalog.git', /sources\.git\[0\] is unusable and grants nothing \(dotGit is true; write dotGit: exact .* or dotGit: either/],
  ];
  for (const [name, p, url, want] of rows) {
    const v = checkSource(p, git(url, 'main'), ctx);
    if (want === true) {
      assert.ok(v.allowed, `${name}: ${msg(v)}`);
      assert.equal(v.params[0]?.value, url, `${name}: passed on as spelled`);
    } else assert.match(msg(v), want, name);
  }
});

// --- keys per rule (issue 42) ------------------------------------------------------

test('keys per rule: a commit allowed by several rules verifies only with the keys of the rule whose refs it was found on', () => {
  const keyA = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const keyB = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const pem = (k: KeyPairKeyObjectResult) => k.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const authority = (name: string, k: KeyPairKeyObjectResult) => ({ authorities: [{ name, key: { data: pem(k) } }] });
  const signedBy = (k: KeyPairKeyObjectResult | undefined): Record<string, unknown> => {
    const obj: Record<string, unknown> = { apiVersion: 'tekton.dev/v1', kind: 'Task', metadata: { name: 't' }, spec: { steps: [{ name: 's', image: 'registry/sign', script: 'sign' }] } };
    if (!k) return obj;
    const sum = tektonChecksum(obj);
    assert.ok(Buffer.isBuffer(sum));
    (obj['metadata'] as Record<string, unknown>)['annotations'] = { 'tekton.dev/signature': sign('sha256', sum, k.privateKey).toString('base64') };
    return obj;
  };
  const url = 'https://github.com/org/catalog.git';
  const p: SourcePolicy = {
    source: SRC,
    git: [
      { name: 'main-a', urls: [url], revisions: ['main'], commits: { reachable: true }, signatures: authority('key-a', keyA) },
      { name: 'release-b', urls: [url], revisions: ['release-*'], commits: { reachable: true }, signatures: authority('key-b', keyB) },
      { name: 'tags-unsigned', urls: [url], revisions: ['refs/tags/v*'], commits: { reachable: true } },
      { name: 'all-b', urls: [url], revisions: ['main', '**'], commits: { reachable: true }, signatures: authority('key-b2', keyB) },
    ],
    bundles: [],
    cluster: false,
  };
  const v = checkSource(p, git(url, SHA), ctx) as Extract<SourceVerdict, { allowed: true }>;
  assert.equal(v.allowed, true);
  assert.deepEqual(v.commitCheck?.rules, ['main-a', 'release-b', 'tags-unsigned', 'all-b']);
  assert.deepEqual(
    v.commitRules?.map((r) => [r.name, r.refs, r.signers?.map((k) => k.name)]),
    [
      ['main-a', ['refs/heads/main'], ['key-a']],
      ['release-b', ['refs/heads/release-*'], ['key-b']],
      ['tags-unsigned', ['refs/tags/v*'], undefined],
      ['all-b', ['refs/heads/main', 'refs/heads/**'], ['key-b2']],
    ],
  );
  // The old field still carries every key (what graph.ts read before signersAfterCheck).
  assert.deepEqual(v.signers?.map((k) => k.name), ['key-a', 'key-b', 'key-b2']);
  // [found on, signed by, the rule that applies, verifies?]
  const rows: Array<[string | undefined, KeyPairKeyObjectResult | undefined, string, boolean | 'no signature needed']> = [
    ['refs/heads/main', keyA, 'main-a', true],
    ['refs/heads/main', keyB, 'main-a', false], // all-b also names main, but main-a comes first
    ['refs/heads/main', undefined, 'main-a', false],
    ['refs/heads/release-1', keyB, 'release-b', true],
    ['refs/heads/release-1', keyA, 'release-b', false],
    ['refs/tags/v1.0', undefined, 'tags-unsigned', 'no signature needed'],
    ['refs/tags/v1.0', keyA, 'tags-unsigned', 'no signature needed'],
    ['refs/heads/feature', keyB, 'all-b', true],
    ['refs/heads/feature', keyA, 'all-b', false],
    // No rule names the ref, or no ref at all (neither comes from a check): nothing verifies.
    ['refs/tags/other', keyA, 'main-a, release-b, tags-unsigned, all-b', false],
    [undefined, keyA, 'main-a, release-b, tags-unsigned, all-b', false],
  ];
  for (const [ref, key, rule, verifies] of rows) {
    const after = signersAfterCheck(v, ref);
    const what = `found on ${ref ?? 'no ref'}, signed by ${key === keyA ? 'A' : key === keyB ? 'B' : 'nobody'}`;
    assert.equal(after.rule, rule, what);
    if (verifies === 'no signature needed') {
      assert.equal(after.signers, undefined, what);
      continue;
    }
    assert.ok(after.signers, what);
    const sig = checkSignature(signedBy(key), after.signers, after.rule);
    assert.equal('key' in sig, verifies, `${what}: ${JSON.stringify(sig)}`);
    if (!verifies && key) assert.match((sig as { refused: string }).refused, /does not verify against the keys/, what);
  }
  // Without a commit check (a branch, or a listed commit), the verdict's own rule and keys.
  const branch = checkSource(p, git(url, 'release-2'), ctx) as Extract<SourceVerdict, { allowed: true }>;
  assert.deepEqual([branch.rule, branch.commitRules], ['release-b', undefined]);
  assert.deepEqual(signersAfterCheck(branch, undefined).signers?.map((k) => k.name), ['key-b']);
  const listed = checkSource({ ...p, git: [{ name: 'listed-a', urls: [url], commits: { shas: [SHA] }, signatures: authority('key-a', keyA) }, ...p.git] }, git(url, SHA), ctx) as Extract<SourceVerdict, { allowed: true }>;
  assert.deepEqual([listed.rule, listed.commitCheck, listed.commitRules], ['listed-a', undefined, undefined]);
  assert.deepEqual(signersAfterCheck(listed, 'refs/heads/release-1'), { rule: 'listed-a', signers: listed.signers });
});
