/**
 * Canonical references (src/policy/canonical.ts, canonical-oci.ts): one table
 * per resolver param, each row the value given and its canonical form, or a
 * pattern the refusal's reason must match.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { aliasesDotGit, canonicalGitUrl, canonicalKind, canonicalNamespace, canonicalObjectName, canonicalPathInRepo, canonicalRevision, gitDotGitSpelling, gitRepositoryIdentity, gitRepositoryKey, type Canon } from '../../src/policy/canonical.js';
import { canonicalBundle, canonicalRepositoryPattern } from '../../src/policy/canonical-oci.js';

const SHA1 = 'a'.repeat(40);
const D = `sha256:${'b'.repeat(64)}`;

/** Each row: [given, canonical] or [given, /reason/]. */
function table<T>(name: string, f: (s: string) => Canon<T>, value: (t: T) => string, rows: Array<[string, string | RegExp]>): void {
  for (const [given, want] of rows) {
    const got = f(given);
    if (typeof want === 'string') {
      assert.ok(got.ok, `${name} ${JSON.stringify(given)}: refused (${got.ok ? '' : got.why}), expected ${want}`);
      assert.equal(value(got.value), want, `${name} ${JSON.stringify(given)}`);
      const again = f(value(got.value));
      assert.ok(again.ok && value(again.value) === want, `${name} ${JSON.stringify(given)}: the canonical form is its own canonical form`);
    } else {
      assert.ok(!got.ok, `${name} ${JSON.stringify(given)}: accepted as ${got.ok ? value(got.value) : ''}, expected a refusal`);
      assert.match(got.why, want, `${name} ${JSON.stringify(given)}`);
    }
  }
}

test('git url: one spelling per repository; transports that run things locally, user info, query, fragment and dot segments refused', () => {
  table('url', canonicalGitUrl, (u) => u.href, [
    ['https://github.com/org/catalog.git', 'https://github.com/org/catalog.git'],
    ['HTTPS://GitHub.COM/org/catalog.git', 'https://github.com/org/catalog.git'],
    ['https://github.com:443/org/catalog.git/', 'https://github.com/org/catalog.git'],
    ['http://git.example:80/org/x', 'http://git.example/org/x'],
    ['git://127.0.0.1:9418/catalog.git', 'git://127.0.0.1/catalog.git'],
    ['git://127.0.0.1:19418/catalog.git', 'git://127.0.0.1:19418/catalog.git'],
    ['https://[::1]:8443/x', 'https://[::1]:8443/x'],
    ['https://git.example/org/%7euser/%41pp', 'https://git.example/org/~user/App'],
    ['https://git.example/org/my%20project/x', 'https://git.example/org/my%20project/x'],
    ['https://git.example/org/café', 'https://git.example/org/caf%C3%A9'],
    ['https://github.com/org/catalog*.git', 'https://github.com/org/catalog*.git'],
    // refused
    ['', /is empty/],
    ['ssh://git@github.com/org/x.git', /scheme "ssh"/],
    ['ssh://github.com/org/x.git', /scheme "ssh"; only https, http, git/],
    ['file:///srv/git/x.git', /scheme "file"/],
    ['ext::sh', /not of the form|remote helper/],
    ['ext::sh%20-c%20touch%20/tmp/pwned', /remote helper/],
    ['git@github.com:org/x.git', /scp-like/],
    ['/srv/git/x.git', /local paths/],
    ['https://user:token@github.com/org/x.git', /user info/],
    ['https://github.com/org/x.git?ref=main', /query/],
    ['https://github.com/org/x.git#main', /fragment/],
    ['https://github.com/org/./x.git', /"\." path segment/],
    ['https://github.com/org/../evil/x.git', /"\.\." path segment/],
    ['https://github.com/org/%2e%2e/evil/x.git', /encodes "\." as %2e/],
    ['https://github.com/org/.%2E/evil/x.git', /encodes "\." as %2E/],
    ['https://github.com/org%2fevil/x.git', /encodes "\/" as %2f/],
    ['https://github.com/org/%252e%252e/x.git', /encodes "%" as %25/],
    ['https://github.com/org/x%00.git', /encodes U\+0000/],
    ['https://github.com//org/x.git', /empty path segment/],
    ['https://github.com/org/x.git//', /empty path segment/],
    ['https://github.com\\org\\x.git', /character "\\\\"/],
    ['https://github.com/org/x y.git', /character " "/],
    ['https://github.com/org/x\u202e.git', /U\+202E/],
    ['https://github.com/org/x;y.git', /character ";"/],
    ['git://127.0.0.1/caf%C3%A9.git', /percent-encoding in a git:\/\/ URL/],
    ['https://github.com.', /ending in "\."/],
    ['https://github.com./org/x.git', /ending in "\."/],
    ['https://0x7f.1/x.git', /not a plain dotted-quad/],
    ['https://2130706433/x.git', /not a plain dotted-quad/],
    ['https://127.000.000.001/x.git', /not a plain dotted-quad/],
    ['https://gïthub.com/x.git', /non-ASCII/],
    ['https://git_hub.com/x.git', /not a DNS name/],
    ['https://github.com:/x.git', /malformed port/],
    ['https://github.com:99999/x.git', /outside 1-65535/],
    ['https://github.com:0443/x.git', /malformed port "0443" \(digits, no leading zero\)/],
    ['https://github.com:0/x.git', /malformed port "0"/],
    ['https://github.com', /names no repository/],
    ['https://github.com/', /names no repository/],
    [`https://github.com/${'a'.repeat(2100)}`, /longer than 2048/],
  ]);
});

test('git url: one repository, one name: "x" and "x.git" are two keys; one identity only on hosts that cannot hold both', () => {
  const url = (s: string) => {
    const u = canonicalGitUrl(s);
    assert.ok(u.ok, s);
    return u.value;
  };
  const key = (s: string) => gitRepositoryKey(url(s));
  // Rules compare the name as spelled: the other spelling is a separate key.
  assert.deepEqual(key('https://git.example.com/org/catalog.git'), ['https://git.example.com', 'org', 'catalog.git']);
  assert.deepEqual(key('https://git.example.com/org/catalog'), ['https://git.example.com', 'org', 'catalog']);
  assert.deepEqual(key('https://github.com/org/catalog.git'), ['https://github.com', 'org', 'catalog.git'], 'the key is the spelling, on every host');
  // The other spelling: one ".git" of the last segment, either way; a bare ".git" is a name, not a suffix.
  assert.deepEqual(gitDotGitSpelling(key('https://git.example.com/org/catalog.git')), ['https://git.example.com', 'org', 'catalog']);
  assert.deepEqual(gitDotGitSpelling(key('https://git.example.com/org/catalog')), ['https://git.example.com', 'org', 'catalog.git']);
  assert.deepEqual(gitDotGitSpelling(key('https://git.example.com/org/catalog.git.git')), ['https://git.example.com', 'org', 'catalog.git'], 'only one ".git" at a time');
  assert.equal(gitDotGitSpelling(key('https://git.example.com/org/.git')), undefined);
  // Which hosts serve both spellings as one repository: github.com and gitlab.com, over https or http, on their default port only.
  for (const [u, alias] of [
    ['https://github.com/org/catalog', true],
    ['http://github.com/org/catalog', true],
    ['https://gitlab.com/group/sub/project.git', true],
    ['https://GitHub.com:443/org/catalog', true],
    ['git://github.com/org/catalog', false],
    ['https://github.com:8443/org/catalog', false],
    ['https://github.example.com/org/catalog', false],
    ['https://ghe.internal/org/catalog', false],
    ['git://127.0.0.1:9418/catalog.git', false],
  ] as const) {
    assert.equal(aliasesDotGit(url(u)), alias, u);
  }
  // The identity (what a clone is kept under): one for both spellings only where they are one repository.
  assert.equal(gitRepositoryIdentity(url('https://github.com/org/catalog.git')), 'https://github.com/org/catalog');
  assert.equal(gitRepositoryIdentity(url('https://github.com/org/catalog')), 'https://github.com/org/catalog');
  assert.equal(gitRepositoryIdentity(url('https://git.example.com/org/catalog.git')), 'https://git.example.com/org/catalog.git');
  assert.equal(gitRepositoryIdentity(url('https://git.example.com/org/catalog')), 'https://git.example.com/org/catalog');
  assert.equal(gitRepositoryIdentity(url('git://127.0.0.1:19418/catalog.git')), 'git://127.0.0.1:19418/catalog.git');
  assert.equal(gitRepositoryIdentity(url('https://github.com/org/.git')), 'https://github.com/org/.git', 'a bare ".git" is a name');
});

test('revision: full SHAs lower-cased; names by git check-ref-format; never an option or a forced refspec', () => {
  table('revision', canonicalRevision, (s) => s, [
    ['main', 'main'],
    ['release-1.2', 'release-1.2'],
    ['feature/x', 'feature/x'],
    ['refs/heads/main', 'refs/heads/main'],
    ['v1.0.0', 'v1.0.0'],
    ['HEAD', 'HEAD'],
    [SHA1.toUpperCase(), SHA1],
    ['c'.repeat(64), 'c'.repeat(64)],
    // refused
    ['', /is empty/],
    ['-h', /begins with "-"/],
    ['--upload-pack=touch /tmp/pwned', /begins with "-"/],
    ['-oProxyCommand=x', /begins with "-"/],
    ['+main', /forced refspec/],
    ['main:refs/heads/x', /character ":"/],
    ['a..b', /"\.\."/],
    ['main~1', /character "~"/],
    ['main^', /character "\^"/],
    ['ma?n', /character "\?"/],
    ['ma*n', /character "\*"/],
    ['ma[n', /character "\["/],
    ['ma\\n', /character "\\\\"/],
    ['ma n', /character " "/],
    ['ma\u0000n', /U\+0000/],
    ['mäin', /U\+00E4/],
    ['main@{1}', /"@\{"/],
    ['@', /"@"/],
    ['main.', /ends with "\."/],
    ['main.lock', /"\.lock"/],
    ['.hidden', /beginning with "\."/],
    ['refs/heads/.x', /beginning with "\."/],
    ['/main', /empty component/],
    ['main/', /empty component/],
    ['a//b', /empty component/],
    ['x'.repeat(256), /longer than 255/],
  ]);
});

test('pathInRepo: relative, inside the repository, no dot segments, no backslash, no control or format characters, bounded', () => {
  table('pathInRepo', canonicalPathInRepo, (s) => s, [
    ['pipelines/internal/sign/sign.yaml', 'pipelines/internal/sign/sign.yaml'],
    ['a.yaml', 'a.yaml'],
    ['..a/b..', '..a/b..'],
    ['%2e%2e/x.yaml', '%2e%2e/x.yaml'],
    ['tâches/ü.yaml', 'tâches/ü.yaml'],
    ['-x.yaml', '-x.yaml'],
    // refused
    ['', /is empty/],
    ['/etc/passwd', /absolute/],
    ['//etc/passwd', /absolute/],
    ['../../../../etc/passwd', /"\.\." segment/],
    ['pipelines/internal/sign/../other/other.yaml', /"\.\." segment/],
    ['pipelines/..', /"\.\." segment/],
    ['./a.yaml', /"\." segment/],
    ['a/./b.yaml', /"\." segment/],
    ['a//b.yaml', /empty segment/],
    ['a/', /empty segment/],
    ['a\\..\\..\\b', /backslash/],
    ['a\u0000.yaml', /U\+0000/],
    ['a\n.yaml', /U\+000A/],
    ['a\u200b.yaml', /U\+200B/],
    ['a\u2028.yaml', /U\+2028/],
    ['a\ud800.yaml', /unpaired surrogate/],
    ['.git/config', /"\.git" segment/],
    ['x/.Git/HEAD', /"\.git" segment/],
    [`${'a'.repeat(256)}/x`, /longer than 255 bytes/],
    [`${'a/'.repeat(600)}x`, /longer than 1024/],
  ]);
});

test('bundle: the OCI reference grammar with the bundles resolver\'s defaults (docker.io, library/, latest; a digest wins over a tag)', () => {
  table('bundle', canonicalBundle, (b) => b.ref, [
    ['quay.io/org/catalog/sign:v1', 'quay.io/org/catalog/sign:v1'],
    ['quay.io/org/catalog/sign', 'quay.io/org/catalog/sign:latest'],
    [`quay.io/org/catalog/sign:v1@${D}`, `quay.io/org/catalog/sign@${D}`],
    [`quay.io/org/catalog/sign@${D}`, `quay.io/org/catalog/sign@${D}`],
    ['Quay.IO/org/sign:V1', 'quay.io/org/sign:V1'],
    ['busybox', 'docker.io/library/busybox:latest'],
    ['busybox:1.36', 'docker.io/library/busybox:1.36'],
    ['docker.io/busybox', 'docker.io/library/busybox:latest'],
    ['index.docker.io/library/busybox', 'docker.io/library/busybox:latest'],
    ['registry-1.docker.io/library/busybox', 'docker.io/library/busybox:latest'],
    ['org/tasks:v1', 'docker.io/org/tasks:v1'],
    ['localhost:5000/a/b:t', 'localhost:5000/a/b:t'],
    ['localhost/a', 'localhost/a:latest'],
    ['localhost:5000', 'docker.io/library/localhost:5000'],
    ['registry.example:05000/a', 'registry.example:5000/a:latest'],
    ['quay.io/org/a__b.c-d---e', 'quay.io/org/a__b.c-d---e:latest'],
    // refused
    ['', /is empty/],
    ['quay.io/Org/sign', /upper-case/],
    ['quay.io/org//sign', /empty repository component/],
    ['quay.io/org/../other/sign', /repository component "\.\."/],
    ['quay.io/org/./sign', /repository component "\."/],
    ['quay.io/org/sign/', /empty repository component/],
    ['quay.io/org/-sign', /repository component "-sign"/],
    ['quay.io/org/sign:', /tag ""/],
    ['quay.io/org/sign:.v1', /tag "\.v1"/],
    ['quay.io/org/sign:-v1', /tag "-v1"/],
    [`quay.io/org/sign@${D.toUpperCase()}`, /only sha256: with 64 lower-case/],
    [`quay.io/org/sign@sha512:${'c'.repeat(128)}`, /only sha256/],
    [`quay.io/org/sign@${D}@${D}`, /more than one "@"/],
    ['quay.io/org/si gn', /U\+0020/],
    ['quay.io/org/sign?x', /"\?"/],
    ['quay_io.example/org/sign:v1', /not a DNS name/],
    ['quay.io:0/org/sign', /outside 1-65535/],
    ['registry-1.docker.io/busybox', /no library\/ is implied/],
  ]);
  const b = canonicalBundle(`docker.io/busybox:1@${D}`);
  assert.deepEqual(b, { ok: true, value: { registry: 'docker.io', repository: 'docker.io/library/busybox', digest: D, ref: `docker.io/library/busybox@${D}` } });
});

test('bundle repository patterns: the same defaults, wildcards whole or within a component', () => {
  table('repository pattern', canonicalRepositoryPattern, (s) => s, [
    ['quay.io/org/catalog/*', 'quay.io/org/catalog/*'],
    ['Quay.io/org/**', 'quay.io/org/**'],
    ['busybox', 'docker.io/library/busybox'],
    ['index.docker.io/library/*', 'docker.io/library/*'],
    ['*/org/tasks', '*/org/tasks'],
    ['quay.io/org/task-*', 'quay.io/org/task-*'],
    ['quay.io/org/x:v1', /has a tag/],
    ['quay.io/org/a**', /"\*\*" inside/],
    ['quay.io/org//x', /empty repository component/],
  ]);
});

test('cluster params: kind, name and namespace exactly as the resolver compares them', () => {
  table('kind', canonicalKind, (s) => s, [['task', 'task'], ['pipeline', 'pipeline'], ['stepaction', 'stepaction'], ['Task', /not one of/], ['', /is empty/]]);
  table('name', canonicalObjectName, (s) => s, [['sign', 'sign'], ['a.b-c', 'a.b-c'], ['Sign', /not an object name/], ['../x', /not an object name/], ['', /is empty/]]);
  table('namespace', canonicalNamespace, (s) => s, [['internal-services', 'internal-services'], ['a.b', /not a namespace/], ['', /is empty/]]);
});
