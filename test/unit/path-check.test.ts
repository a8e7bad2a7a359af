/**
 * What a path check's answer means (src/policy/path-check.ts): asked for
 * when not asked yet, waited for while pending, and a refusal a requester
 * can act on: it names the reference, the path, the commit and repository,
 * the component that is not a directory or regular file and what it is,
 * and (for links and submodules) that the rule's paths would not hold for
 * the file read.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pathCheckKey, pathVerdict, type PathCheck } from '../../src/policy/path-check.js';

const C: PathCheck = { url: 'https://example.com/org/catalog.git', commit: 'a'.repeat(40), path: 'tasks/internal/sign/sign.yaml' };
const W = 'tasks[sign].taskRef';
const AT = `"tasks/internal/sign/sign.yaml" at commit ${'a'.repeat(40)} of "https://example.com/org/catalog.git"`;

test('path verdict: not asked yet, pending, ok', () => {
  assert.deepEqual(pathVerdict(C, undefined, W), { kind: 'check', check: C });
  assert.deepEqual(pathVerdict(C, { state: 'pending' }, W), { kind: 'pending' });
  assert.deepEqual(pathVerdict(C, { state: 'ok' }, W), { kind: 'ok' });
});

test('path verdict: a symbolic link or a submodule at any depth is refused, naming the component and saying the rule would not hold for the file read', () => {
  const link = pathVerdict(C, { state: 'refused', component: 'tasks/internal', kind: 'symlink' }, W);
  assert.equal(link.kind, 'refused');
  const l = link as { code: string; message: string };
  assert.equal(l.code, 'REQUEST_SOURCE_NOT_ALLOWED');
  assert.equal(
    l.message,
    `${W}: ${AT}: "tasks/internal" is a symbolic link (git mode 120000); the git resolver would follow it and read whatever file it points to, under a path the rule was never matched against; ` +
      "a source rule's paths would hold for the name, not for the file read, so symbolic links and submodules are refused at any depth of pathInRepo; refer to the file itself, by its own path. Nothing was resolved or run",
  );
  const sub = pathVerdict(C, { state: 'refused', component: 'tasks/internal/sign', kind: 'submodule' }, W) as { code: string; message: string };
  assert.equal(sub.code, 'REQUEST_SOURCE_NOT_ALLOWED');
  assert.match(sub.message, /^tasks\[sign\]\.taskRef: .*: "tasks\/internal\/sign" is a submodule \(git mode 160000, another repository\); .*symbolic links and submodules are refused at any depth of pathInRepo/);
});

test('path verdict: a path that is not there, or not a file, is refused saying so; a check that could not be made fails the resolution', () => {
  const missing = pathVerdict(C, { state: 'refused', component: C.path, kind: 'missing' }, W) as { code: string; message: string };
  assert.equal(missing.code, 'REQUEST_SOURCE_NOT_ALLOWED');
  assert.equal(missing.message, `${W}: ${AT}: the repository has no "tasks/internal/sign/sign.yaml" there; the file must be at that path at that commit. Nothing was resolved or run`);
  const dir = pathVerdict(C, { state: 'refused', component: 'tasks', kind: 'missing', detail: 'no such directory at this commit' }, W) as { message: string };
  assert.match(dir.message, /the repository has no "tasks" there \(no such directory at this commit\)/);
  const notFile = pathVerdict(C, { state: 'refused', component: C.path, kind: 'not-a-file', detail: 'it is a directory' }, W) as { code: string; message: string };
  assert.equal(notFile.code, 'REQUEST_SOURCE_NOT_ALLOWED');
  assert.match(notFile.message, /"tasks\/internal\/sign\/sign\.yaml" is not a regular file \(it is a directory\); pathInRepo must name a regular file\. Nothing was resolved or run$/);
  const failed = pathVerdict(C, { state: 'failed', message: 'git fetch did not finish within 60 s' }, W) as { code: string; message: string };
  assert.equal(failed.code, 'REQUEST_RESOLUTION_FAILED');
  assert.equal(failed.message, `${W}: ${AT} could not be checked in the repository: git fetch did not finish within 60 s; nothing was resolved or run`);
});

test('path check keys: one per repository, commit and path', () => {
  const keys = new Set([C, { ...C, url: `${C.url}x` }, { ...C, commit: 'b'.repeat(40) }, { ...C, path: 'tasks/other.yaml' }].map(pathCheckKey));
  assert.equal(keys.size, 4);
  assert.equal(pathCheckKey({ ...C }), pathCheckKey(C));
});
