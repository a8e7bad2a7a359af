/** `migrate check`'s judgement (src/migrate/migrate-check.ts): decide() on each request as if new, and the configuration proposed. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { InternalRequest } from '../../src/api/types.js';
import { carriedOver, migrateCheck, type CheckInput } from '../../src/migrate/migrate-check.js';
import { NOW, NS, pipeline, request } from './fixtures.js';

const GIT = 'https://github.com/example/release-catalog.git';
const gitRef = (url = GIT) => ({ pipeline: { pipelineRef: { resolver: 'git', params: [{ name: 'url', value: url }, { name: 'revision', value: 'main' }, { name: 'pathInRepo', value: 'pipelines/sign.yaml' }] } } }) as Partial<InternalRequest['spec']>;
const named = (name: string, ns: string, spec: Partial<InternalRequest['spec']> = {}, status?: InternalRequest['status']) => {
  const r = request({}, { name, namespace: ns, uid: `u-${name}` }, status);
  r.spec = { ...(spec.pipeline ? {} : { request: 'sign', params: { image: 'quay.io/x' } }), ...spec } as InternalRequest['spec'];
  return r;
};

function input(over: Partial<CheckInput> = {}): CheckInput {
  return {
    namespace: NS,
    remote: 'default',
    requests: [
      named('installed-ok', 'team-a'),
      named('not-listed', 'team-z'),
      named('git-any', 'team-a', { ...gitRef(), params: { image: 'quay.io/x' } }),
      named('with-sa', 'team-a', { request: 'sign', params: { image: 'quay.io/x' }, serviceAccount: 'releaser' }),
      named('undeclared', 'team-a', { request: 'sign', params: { image: 'quay.io/x', color: 'blue' } }),
      named('go-running', 'team-a', {}, { conditions: [{ type: 'Succeeded', status: 'False', reason: 'Running', message: '', lastTransitionTime: '2026-11-22T09:59:30Z' }] }),
      named('by-cluster', 'team-b', { pipeline: { pipelineRef: { resolver: 'cluster', params: [{ name: 'kind', value: 'pipeline' }, { name: 'name', value: 'sign' }, { name: 'namespace', value: NS }] } }, params: { image: 'quay.io/x' } } as Partial<InternalRequest['spec']>),
    ],
    pipelines: [pipeline()],
    tasks: [],
    incumbent: { allowList: ['team-a', 'team-b'], allowedGitResolverURLs: [] },
    ours: undefined,
    now: NOW,
    ...over,
  };
}

test('the Go controller\'s configuration carried over: the fields that mean the same, and an empty allowedGitResolverURLs left out (there: any URL; here: none)', () => {
  assert.deepEqual(carriedOver({ allowList: ['a'], allowedGitResolverURLs: [], debug: true, volumeClaim: { name: 'ws', size: '2Gi' } }), { allowList: ['a'], debug: true, volumeClaim: { name: 'ws', size: '2Gi' } });
  assert.deepEqual(carriedOver({ allowList: ['a'], allowedGitResolverURLs: [GIT] }), { allowList: ['a'], allowedGitResolverURLs: [GIT] });
  assert.deepEqual(carriedOver(undefined), {});
});

test('each request judged by decide() as if new; the proposal adds what the Go controller served; what config cannot fix stays refused, said why', () => {
  const r = migrateCheck(input());
  assert.equal(r.judgedUnder, 'incumbent');
  const row = (name: string) => r.rows.find((x) => x.request.endsWith(`/${name}`))!;
  assert.equal(row('installed-ok').now.here, 'runs');
  // Refused now, and still with the proposal: the Go controller refused it too (its allowList).
  assert.deepEqual([row('not-listed').now.here, row('not-listed').proposed.here], ['refused', 'refused']);
  assert.match(row('not-listed').proposed.message, /namespace "team-z" on remote "default" is not on the allowList/);
  // Any git URL was allowed there; none here until listed.
  assert.equal(row('git-any').now.here, 'refused');
  assert.match(row('git-any').now.message, /remote resolution is not enabled/);
  assert.equal(row('git-any').proposed.here, 'runs', row('git-any').proposed.message);
  // Service accounts were not checked there.
  assert.equal(row('with-sa').now.here, 'refused');
  assert.equal((row('with-sa').now as { code: string }).code, 'REQUEST_SERVICE_ACCOUNT_NOT_ALLOWED');
  assert.equal(row('with-sa').proposed.here, 'runs');
  // With the namespace's ServiceAccounts listed: a missing one is refused under the proposal too, saying what to create.
  const listed = migrateCheck({ ...input(), serviceAccounts: new Set(['default']) });
  const sa = listed.rows.find((x) => x.request.endsWith('/with-sa'))!;
  assert.equal(sa.proposed.here, 'refused');
  assert.equal((sa.proposed as { code: string }).code, 'REQUEST_SERVICE_ACCOUNT_NOT_FOUND');
  assert.match(sa.proposed.message, /no ServiceAccount "releaser" in namespace "internal-services" of the internal cluster; ask its administrators to create it/);
  assert.equal(migrateCheck({ ...input(), serviceAccounts: new Set(['releaser']) }).rows.find((x) => x.request.endsWith('/with-sa'))!.proposed.here, 'runs');
  // Undeclared params: no configuration serves them.
  assert.deepEqual([row('undeclared').now.here, row('undeclared').proposed.here], ['refused', 'refused']);
  assert.match(row('undeclared').proposed.message, /color/);
  // A namespace the Go controller allowed, reaching the next rule once let in: the cluster resolver.
  assert.equal(row('by-cluster').now.here, 'refused');
  assert.equal(row('by-cluster').proposed.here, 'runs', row('by-cluster').proposed.message);
  // Go's in-progress request: followed after the switch.
  assert.equal(row('go-running').followed, true);
  assert.equal(row('installed-ok').followed, false);

  assert.deepEqual(r.proposal.metadata, { name: 'config', namespace: NS });
  const spec = r.proposal.spec as Record<string, unknown>;
  assert.deepEqual(spec['allowList'], ['team-a', 'team-b']);
  assert.deepEqual(spec['allowedGitResolverURLs'], [GIT]);
  assert.deepEqual(spec['allowedServiceAccounts'], ['releaser']);
  assert.deepEqual(spec['sources'], { cluster: true });
  assert.ok(r.added.some((a) => a.startsWith('allowedGitResolverURLs: "https://github.com/example/release-catalog.git"')), r.added.join('\n'));
  assert.ok(!r.added.some((a) => a.includes('team-z')), 'nothing the Go controller refused is let in');
  assert.deepEqual(r.counts, { requests: 7, refusedNow: 5, refusedProposed: 2, followed: 1 });
});

test('with a configuration of this controller\'s already: judged under it, and the proposal starts from it', () => {
  const ours = { apiVersion: 'appstudio.redhat.com/v1alpha1' as const, kind: 'InternalServicesConfig' as const, metadata: { name: 'config', namespace: NS }, spec: { allowList: ['team-a'], allowedServiceAccounts: ['releaser'], debug: true } as never };
  const r = migrateCheck(input({ ours }));
  assert.equal(r.judgedUnder, 'ours');
  const row = (name: string) => r.rows.find((x) => x.request.endsWith(`/${name}`))!;
  assert.equal(row('with-sa').now.here, 'runs');
  assert.equal(row('by-cluster').now.here, 'refused');
  assert.equal((r.proposal.spec as Record<string, unknown>)['debug'], true, 'its own settings kept');
  assert.deepEqual((r.proposal.spec as Record<string, unknown>)['allowList'], ['team-a', 'team-b']);
});

test("a request in the Go controller's window (its finalizer and its run, no status yet) is shown running and followed, not new and judged", async () => {
  const { INCUMBENT_FINALIZER } = await import('../../src/requests/incumbent.js');
  const { INCUMBENT_LABEL_NAME, INCUMBENT_LABEL_NAMESPACE } = await import('../../src/tekton/pipelinerun.js');
  const window = named('go-window', 'team-a', { request: 'not-installed-here', params: { image: 'x' } });
  window.metadata.finalizers = [INCUMBENT_FINALIZER];
  const finalizerOnly = named('go-finalizer-only', 'team-a', { request: 'not-installed-here', params: { image: 'x' } });
  finalizerOnly.metadata.finalizers = [INCUMBENT_FINALIZER];
  const goRun = { apiVersion: 'tekton.dev/v1', kind: 'PipelineRun', metadata: { name: 'internalrequest-abcde', namespace: 'internal-services-system', creationTimestamp: '2026-11-22T09:59:10Z', labels: { [INCUMBENT_LABEL_NAME]: 'go-window', [INCUMBENT_LABEL_NAMESPACE]: 'team-a' } }, spec: {} };
  const report = migrateCheck(input({ requests: [window, finalizerOnly], runs: { runs: [goRun] as never, namespaces: [NS, 'internal-services-system'], unreadable: {} } }));
  const w = report.rows.find((r) => r.request === 'team-a/go-window')!;
  assert.equal(w.incumbent, 'Running (no status written yet)');
  assert.equal(w.followed, true);
  assert.match(w.run ?? '', /internal-services-system\/internalrequest-abcde \(running\); followed there after the switch/);
  // The finalizer alone (the Go controller stopped before it made a run): new, judged as any other.
  const f = report.rows.find((r) => r.request === 'team-a/go-finalizer-only')!;
  assert.deepEqual([f.incumbent, f.followed], ['new', false]);
  assert.equal(report.counts.followed, 1);
});

test('on kcp (the remote kubeconfig names a workspace by path): rules are matched against the path, rows and proposal name it', () => {
  const r = migrateCheck(input({ workspace: 'root:org:team', requests: [named('installed-ok', 'team-a')] }));
  assert.equal(r.workspace, 'root:org:team');
  const row = r.rows[0]!;
  assert.equal(row.request, 'root:org:team/team-a/installed-ok');
  // The Go's bare entry names the default remote's namespace: here the workspace's must be named by path.
  assert.equal(row.now.here, 'refused');
  assert.match(row.now.message, /namespace "team-a" on remote "root:org:team" is not on the allowList/);
  assert.equal(row.proposed.here, 'runs', row.proposed.message);
  assert.ok(r.added.some((a) => a.startsWith('allowList: "root:org:team/team-a" (for root:org:team/team-a/installed-ok)')), r.added.join('; '));
});
