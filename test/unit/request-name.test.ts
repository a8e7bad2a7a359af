/**
 * How a person names a request (src/cli/request/request-name.ts) and which
 * approval that names (approve-deny.ts): a table of the forms, and a
 * property over generated names — every accepted name is canonical and
 * round-trips, every refusal says which part is wrong — counting both
 * sides so that neither goes untested.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isWorkspacePath, parseRequestName, showRequest, type RequestName } from '../../src/cli/request/request-name.js';
import { approvalNamed, approvalRef } from '../../src/cli/request/approve-deny.js';
import { requestRef } from '../../src/policy/tenant.js';

const ok = (ref: string): RequestName => {
  const p = parseRequestName(ref);
  assert.ok(p.ok, `${ref}: ${p.ok ? '' : p.why}`);
  return p.value;
};
const refused = (ref: string): string => {
  const p = parseRequestName(ref);
  assert.ok(!p.ok, `${ref} accepted`);
  return p.why;
};

test('the forms: NAME, NAMESPACE/NAME, REMOTE-or-LOGICAL-CLUSTER/NAMESPACE/NAME, WORKSPACE-PATH/NAMESPACE/NAME', () => {
  assert.deepEqual(ok('x'), { name: 'x' });
  assert.deepEqual(ok('team/x.y'), { namespace: 'team', name: 'x.y' });
  assert.deepEqual(ok('prod/team/x'), { scope: { kind: 'remote', name: 'prod' }, namespace: 'team', name: 'x' });
  assert.deepEqual(ok('2h6vq3z1l3jwz7oe/team/x'), { scope: { kind: 'remote', name: '2h6vq3z1l3jwz7oe' }, namespace: 'team', name: 'x' });
  assert.deepEqual(ok('root:org:team/team/x'), { scope: { kind: 'workspace', path: 'root:org:team' }, namespace: 'team', name: 'x' });
  assert.deepEqual(ok('root/team/x'), { scope: { kind: 'remote', name: 'root' }, namespace: 'team', name: 'x' }, 'no ":": a name, as kcp addresses root too');
});

test('refused, each saying which part and what it must be; nothing trimmed or lowercased', () => {
  assert.match(refused('a/b/c/d'), /has 4 parts/);
  assert.match(refused('root:Org/team/x'), /"root:Org" .* is not a kcp workspace path/);
  assert.match(refused('org:team/team/x'), /starts with "root"/);
  assert.match(refused('root::team/team/x'), /not a kcp workspace path/);
  assert.match(refused('root:team-a:/team/x'), /not a kcp workspace path/);
  assert.match(refused('Prod/team/x'), /neither a remote or logical cluster name/);
  assert.match(refused('root:a/Team/x'), /"Team" .* is not a namespace/);
  assert.match(refused('team/ x'), /is not a request name/);
  assert.match(refused('team/'), /is not a request name/);
  assert.match(refused('/x'), /is not a namespace/);
  assert.match(refused('root:*/team/x'), /not a kcp workspace path/, 'no globs in a name');
});

test('an approval is named by its workspace path or its logical cluster; a bare name means the default remote', () => {
  const kcpApproval = { spec: { request: { remote: 'lc1', workspace: 'root:org:team', namespace: 'team', name: 'x', uid: 'u' }, rule: 'r' } };
  const plain = { spec: { request: { namespace: 'team', name: 'x', uid: 'u' }, rule: 'r' } };
  assert.equal(approvalNamed(kcpApproval, { kind: 'workspace', path: 'root:org:team' }), true);
  assert.equal(approvalNamed(kcpApproval, { kind: 'workspace', path: 'root:org' }), false);
  assert.equal(approvalNamed(kcpApproval, { kind: 'remote', name: 'lc1' }), true);
  assert.equal(approvalNamed(kcpApproval, undefined), false, 'not on the default remote');
  assert.equal(approvalNamed(plain, undefined), true);
  assert.equal(approvalNamed(plain, { kind: 'workspace', path: 'root:org:team' }), false);
  assert.equal(approvalRef(kcpApproval), 'root:org:team/team/x');
  assert.equal(approvalRef(plain), 'team/x');
  assert.equal(showRequest(kcpApproval.spec.request, 'default'), 'root:org:team/team/x (logical cluster lc1)');
  assert.equal(requestRef('lc1', { metadata: { namespace: 'team', name: 'x' } }, 'root:org:team'), 'root:org:team/team/x', 'the controller\'s messages name it the same way');
  assert.equal(requestRef('lc1', { metadata: { namespace: 'team', name: 'x' } }), 'lc1/team/x');
});

const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?$/);
/** Mostly well-formed parts, sometimes broken ones: upper case, spaces, globs, empty, colons in the wrong place. */
const part = fc.oneof(
  { weight: 6, arbitrary: label },
  { weight: 1, arbitrary: fc.constantFrom('', 'Team', ' team', 'a*', '-a', 'a_b', 'root:', ':x', 'a.b') },
);
const scope = fc.oneof(
  { weight: 3, arbitrary: fc.array(label, { minLength: 1, maxLength: 4 }).map((segs) => ['root', ...segs].join(':')) },
  { weight: 2, arbitrary: part },
  { weight: 1, arbitrary: fc.array(part, { minLength: 2, maxLength: 3 }).map((segs) => segs.join(':')) },
);
const ref = fc.oneof(part, fc.tuple(part, part).map(([n, x]) => `${n}/${x}`), fc.tuple(scope, part, part).map(([s, n, x]) => `${s}/${n}/${x}`), fc.array(part, { minLength: 4, maxLength: 5 }).map((p) => p.join('/')));

test('property: an accepted name is canonical and names exactly what was written; a refused one says why', () => {
  const seen = { accepted: 0, refused: 0, workspace: 0, remote: 0 };
  fc.assert(
    fc.property(ref, (r) => {
      const p = parseRequestName(r);
      if (!p.ok) {
        seen.refused++;
        assert.match(p.why, /is not|is neither|has \d+ parts/, 'the refusal says which part and what it must be');
        // Refused only when some part is not canonical.
        const parts = r.split('/');
        const canonical = parts.length <= 3 && parts.slice(-2).every((x) => /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(x)) && (parts.length < 3 || isWorkspacePath(parts[0]!) || /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(parts[0]!));
        assert.ok(!canonical, `${r} refused: ${p.why}`);
        return;
      }
      seen.accepted++;
      const v = p.value;
      if (v.scope?.kind === 'workspace') seen.workspace++;
      if (v.scope?.kind === 'remote') seen.remote++;
      // Written back, it is exactly what was given: nothing was changed on the way.
      const back = [v.scope ? (v.scope.kind === 'workspace' ? v.scope.path : v.scope.name) : undefined, v.namespace, v.name].filter((x) => x !== undefined).join('/');
      assert.equal(back, r);
      // A workspace scope always has a ":" (root itself is addressed by name), a remote one never.
      if (v.scope?.kind === 'workspace') assert.ok(v.scope.path.startsWith('root:') && isWorkspacePath(v.scope.path));
      if (v.scope?.kind === 'remote') assert.ok(!v.scope.name.includes(':'));
    }),
    { numRuns: 3000 },
  );
  for (const [k, n] of Object.entries(seen)) assert.ok(n > 50, `${k}: ${n} cases; the generator must exercise both sides`);
});

test('the requester\'s commands: a name in a workspace points a kcp kubeconfig there (same credentials); a plain cluster\'s kubeconfig is refused, saying why; names must agree', async () => {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const { pointAt } = await import('../../src/cli/request/target.js');
  const { scopedNames } = await import('../../src/cli/request/command-base.js');
  const { requestRef, setShownWorkspace } = await import('../../src/cli/request/args-output.js');
  const kc = (server: string) => {
    const k = new KubeConfig();
    k.loadFromOptions({ clusters: [{ name: 'c', server }], users: [{ name: 'u', token: 't' }], contexts: [{ name: 'x', cluster: 'c', user: 'u', namespace: 'ns' }], currentContext: 'x' });
    return k;
  };
  try {
    const k = kc('https://kcp.example:6443/clusters/root');
    pointAt(k, { kind: 'workspace', path: 'root:org:team' });
    assert.equal(k.getCurrentCluster()?.server, 'https://kcp.example:6443/clusters/root:org:team');
    assert.equal(k.getCurrentUser()?.token, 't');
    assert.equal(requestRef({ kind: 'InternalRequest', metadata: { namespace: 'team', name: 'x' } }), 'internalrequest root:org:team/team/x');
    const byCluster = kc('https://kcp.example:6443/clusters/root:a/');
    pointAt(byCluster, { kind: 'remote', name: 'lc1' });
    assert.equal(byCluster.getCurrentCluster()?.server, 'https://kcp.example:6443/clusters/lc1');
    assert.equal(requestRef({ kind: 'InternalRequest', metadata: { namespace: 'team', name: 'x' } }), 'internalrequest team/x', 'a logical cluster is not shown as a path');
    pointAt(kc('https://kcp.example:6443/clusters/root:a/'), undefined);
    assert.equal(requestRef({ kind: 'InternalRequest', metadata: { namespace: 'team', name: 'x' } }), 'internalrequest root:a/team/x', 'the kubeconfig\'s own workspace is shown');
    assert.throws(() => pointAt(kc('https://plain.example:6443'), { kind: 'workspace', path: 'root:org:team' }), /names a kcp workspace, but .* is not a kcp workspace URL/);
    assert.throws(() => pointAt(kc('https://plain.example:6443'), { kind: 'remote', name: 'prod' }), /REMOTE\/NAMESPACE\/NAME is for approve and deny/);
    pointAt(kc('https://plain.example:6443'), undefined);
    assert.equal(requestRef({ kind: 'InternalRequest', metadata: { namespace: 'team', name: 'x' } }), 'internalrequest team/x');

    const flags: import('../../src/cli/request/target.js').TargetFlags = {};
    assert.deepEqual(scopedNames(['root:o:t/team/a', 'team/b', 'c'], flags), ['a', 'b', 'c']);
    assert.deepEqual(flags, { namespace: 'team', scope: { kind: 'workspace', path: 'root:o:t' } });
    assert.throws(() => scopedNames(['root:o:t/team/a', 'root:o:u/team/b'], {}), /more than one workspace/);
    assert.throws(() => scopedNames(['a/x', 'b/y'], {}), /more than one namespace/);
    assert.throws(() => scopedNames(['a/x'], { namespace: 'b' }), /-n b contradicts the namespace a/);
    assert.throws(() => scopedNames(['root:O/a/x'], {}), /not a kcp workspace path/);
  } finally {
    setShownWorkspace(undefined);
  }
});
