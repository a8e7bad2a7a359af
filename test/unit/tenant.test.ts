/** Tenants across several remotes (src/policy/tenant.ts): which remote a policy entry names. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide, type Action, type Observation } from '../../src/controller/decide.js';
import { effectiveConfig } from '../../src/controller/config.js';
import { grantFor } from '../../src/policy/grant.js';
import { entryFor, namespacesServedOn, qualify, requestRef, tenantMatches } from '../../src/policy/tenant.js';
import { LABEL_REQUEST_REMOTE, requestKeyOf } from '../../src/tekton/pipelinerun.js';
import { NOW, NS, pipeline, request } from './fixtures.js';

const cfg = (spec: Record<string, unknown>, defaultRemote: string | null = 'default') =>
  effectiveConfig({ apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name: 'config', namespace: NS }, spec }, NS, { defaultRemote: defaultRemote ?? undefined });
const installed = { kind: 'installed' as const, pipeline: 'p' };

test('qualify: "remote/ns" as written; a bare namespace on the designated remote, on every remote with "*", on none without one', () => {
  assert.equal(qualify('prod/team-a', 'default'), 'prod/team-a');
  assert.equal(qualify('team-a', 'default'), 'default/team-a');
  assert.equal(qualify('team-a', '*'), '*/team-a');
  assert.equal(qualify('team-a', undefined), undefined);
  assert.equal(tenantMatches(['*/team-a'], 'prod/team-a'), true);
  assert.equal(tenantMatches(['*/team-a'], 'prod/team-ab'), false);
  assert.equal(tenantMatches(['prod/team-*'], 'prod/team-b'), true);
  assert.equal(tenantMatches(['prod/team-*'], 'staging/team-b'), false);
  assert.equal(tenantMatches(['prod*'], 'prod/team-b'), false, 'a glob never crosses the "/" between remote and namespace');
});

test('a bare allowList entry serves its namespace on the default remote only; the rejection elsewhere says what to write', () => {
  const c = cfg({ allowList: ['team-a', 'staging/team-b'] });
  assert.equal(grantFor(c, 'default/team-a', installed).ok, true);
  assert.equal(grantFor(c, 'staging/team-b', installed).ok, true);
  assert.equal(grantFor(c, 'default/team-b', installed).ok, false, 'team-b is served on staging, not on the default remote');
  const v = grantFor(c, 'prod/team-a', installed);
  assert.equal(v.ok, false);
  assert.match(
    (v as { message: string }).message,
    /^namespace "team-a" on remote "prod" is not on the allowList of InternalServicesConfig internal-services\/config; the entry "team-a" names a namespace without a remote, which means remote "default" only; write "prod\/team-a" \(or "\*\/team-a"\) to grant it here, or ask the administrators/,
  );
});

test('spec.defaultRemote moves bare entries to another remote, "*" to every remote; without any default remote they name nothing', () => {
  assert.equal(grantFor(cfg({ allowList: ['team-a'], defaultRemote: 'prod' }), 'prod/team-a', installed).ok, true);
  assert.equal(grantFor(cfg({ allowList: ['team-a'], defaultRemote: 'prod' }), 'default/team-a', installed).ok, false);
  assert.equal(grantFor(cfg({ allowList: ['team-a'], defaultRemote: '*' }), 'anything/team-a', installed).ok, true);
  const none = grantFor(cfg({ allowList: ['team-a'] }, null), 'default/team-a', installed);
  assert.equal(none.ok, false);
  assert.match((none as { message: string }).message, /which means no remote \(spec\.defaultRemote is not set and the controller has no --remote-kubeconfig remote\)/);
  assert.equal(grantFor(cfg({ allowList: ['team-a'], defaultRemote: 'prod' }, null), 'prod/team-a', installed).ok, true, 'the config names it');
});

test('rules and source rules name tenants the same way', () => {
  const c = cfg({
    rules: [
      { name: 'prod-signing', namespaces: ['prod/managed-*'], pipelines: ['sign'] },
      { name: 'ops', namespaces: ['ops'], pipelines: ['*'] },
    ],
    sources: { git: [{ urls: ['https://git.example/catalog.git'], revisions: ['main'], namespaces: ['prod/*'] }] },
  });
  assert.equal(grantFor(c, 'prod/managed-x', installed).ok, false, 'rule 0 grants only sign');
  assert.equal(grantFor(c, 'prod/managed-x', { kind: 'installed', pipeline: 'sign' }).ok, true);
  assert.equal(grantFor(c, 'staging/managed-x', { kind: 'installed', pipeline: 'sign' }).ok, false);
  assert.equal(grantFor(c, 'default/ops', installed).ok, true);
  assert.equal(grantFor(c, 'prod/ops', installed).ok, false);
  assert.deepEqual(c.sources.git[0]?.namespaces, ['prod/*']);
});

test('decide: the remote is part of the tenant, the PipelineRun carries it, and the key maps back to it', () => {
  const o: Observation = { namespace: NS, remote: 'prod', request: request(), pipelineRuns: [], config: cfg({ allowList: ['prod/team-a'] }), pipeline: pipeline(), now: NOW };
  const a = decide(o);
  const create = a.find((x): x is Extract<Action, { type: 'createPipelineRun' }> => x.type === 'createPipelineRun');
  assert.ok(create, JSON.stringify(a));
  assert.equal(create.pipelineRun.metadata.labels?.[LABEL_REQUEST_REMOTE], 'prod');
  assert.equal(requestKeyOf(create.pipelineRun), 'prod/team-a/req');
  // The same request on the default remote is not served by that entry.
  const d = decide({ ...o, remote: 'default' });
  const w = d.find((x) => x.type === 'writeStatus');
  assert.equal(w?.type === 'writeStatus' ? w.code : undefined, 'REQUEST_NAMESPACE_NOT_ALLOWED');
  // Objects made before remotes had names belong to the default remote.
  const legacy = { metadata: { annotations: create.pipelineRun.metadata.annotations, labels: {} } };
  assert.equal(requestKeyOf(legacy), 'default/team-a/req');
  assert.equal(requestRef('prod', request()), 'prod/team-a/req');
  assert.equal(requestRef('default', request()), 'team-a/req');
});

const rejection = (o: Observation): string => {
  const w = decide(o).find((x) => x.type === 'writeStatus');
  assert.ok(w?.type === 'writeStatus' && w.code === 'REQUEST_NAMESPACE_NOT_ALLOWED', JSON.stringify(w));
  return w.status.conditions?.[0]?.message ?? '';
};

test('the entry a rejection names is written as it goes into spec.allowList: "path/namespace" on kcp, the bare namespace on the remote bare entries name', () => {
  assert.equal(entryFor('root:team-a/default', undefined), 'root:team-a/default');
  assert.equal(entryFor('default/team-a', 'default'), 'team-a');
  assert.equal(entryFor('prod/team-a', 'default'), 'prod/team-a');
  assert.equal(entryFor('prod/team-a', '*'), 'prod/team-a', 'a bare entry with defaultRemote "*" would serve every remote: not this one only');
  for (const [tenant, bare] of [['root:team-a/default', undefined], ['default/team-a', 'default'], ['prod/team-a', 'default']] as const) {
    const c = cfg({ allowList: [entryFor(tenant, bare)] }, bare ?? null);
    assert.equal(grantFor(c, tenant, installed).ok, true, `${entryFor(tenant, bare)} serves ${tenant}`);
  }
});

test('namespacesServedOn: only the namespace part of entries whose remote part matches, as written, never another remote', () => {
  const patterns = ['root:team-a/team', 'root:team-b/secret-b', '*/shared', 'root:team-*/ops-*', 'root:org:*/x', 'root:team-a/team', '**', 'a/b/c'];
  assert.deepEqual(namespacesServedOn(patterns, 'root:team-a'), ['team', 'shared', 'ops-*']);
  assert.deepEqual(namespacesServedOn(patterns, 'root:team-c'), ['shared', 'ops-*']);
  assert.deepEqual(namespacesServedOn(patterns, 'root:other'), ['shared']);
  assert.deepEqual(namespacesServedOn(['**/team'], 'root:x'), ['team']);
  assert.deepEqual(namespacesServedOn([], 'root:x'), []);
});

test('kcp: a namespace not on the allowList is Rejected naming the entry as written (root:team-a/default) and the namespaces its workspace is served in, nothing of other workspaces', () => {
  const c = cfg({ allowList: ['root:team-a/team', 'root:team-b/team-b-secret', '*/everyone'], rules: [{ name: 'a-ops', namespaces: ['root:team-a/ops-*'], pipelines: ['p'] }, { name: 'b-only', namespaces: ['root:team-b/b-rule'], pipelines: ['p'] }] }, null);
  const o: Observation = { namespace: NS, remote: 'lc-2x8f0', workspace: 'root:team-a', request: request({}, { namespace: 'default' }), pipelineRuns: [], config: c, pipeline: pipeline(), now: NOW };
  const m = rejection(o);
  assert.equal(
    m,
    'namespace "default" on remote "root:team-a" is not on the allowList of InternalServicesConfig internal-services/config, and no rule names it; ' +
      'ask the administrators of the internal cluster to add the entry "root:team-a/default" to spec.allowList; ' +
      'requests of remote "root:team-a" are served in namespaces "team", "everyone", "ops-*"',
  );
  assert.doesNotMatch(m, /team-b|b-rule|a-ops|b-only|lc-2x8f0/, "another workspace's entries, rule names and the logical cluster stay out");
  // A workspace that nothing names but the shared entry.
  assert.match(rejection({ ...o, workspace: 'root:team-c', request: request({}, { namespace: 'team' }) }), /add the entry "root:team-c\/team" to spec\.allowList; requests of remote "root:team-c" are served in namespace "everyone"$/);
  // None at all.
  const none = rejection({ ...o, workspace: 'root:team-c', config: cfg({ allowList: ['root:team-a/team'] }, null), request: request({}, { namespace: 'team' }) });
  assert.match(none, /^namespace "team" on remote "root:team-c" is not on the allowList of InternalServicesConfig internal-services\/config; ask the administrators of the internal cluster to add the entry "root:team-c\/team" to spec\.allowList; no namespace of remote "root:team-c" is served$/);
  // Many: the first ten, and how many more.
  const many = rejection({ ...o, config: cfg({ allowList: Array.from({ length: 13 }, (_, i) => `root:team-a/ns-${i}`) }, null) });
  assert.match(many, /are served in namespaces "ns-0", "ns-1", .*"ns-9" and 3 more$/);
});

test('a shared remote cluster: the rejection names the entry to write but never the other namespaces served there (each is another tenant)', () => {
  const c = cfg({ allowList: ['team-a', 'team-b', 'prod/team-c'] });
  const m = rejection({ namespace: NS, remote: 'default', request: request({}, { namespace: 'team-x' }), pipelineRuns: [], config: c, pipeline: pipeline(), now: NOW });
  assert.equal(m, 'namespace "team-x" on remote "default" is not on the allowList of InternalServicesConfig internal-services/config; ask the administrators of the internal cluster to add the entry "team-x" to spec.allowList');
  const p = rejection({ namespace: NS, remote: 'prod', request: request({}, { namespace: 'team-x' }), pipelineRuns: [], config: c, pipeline: pipeline(), now: NOW });
  assert.match(p, /add the entry "prod\/team-x" to spec\.allowList$/);
  assert.doesNotMatch(`${m} ${p}`, /team-a|team-b|team-c/);
});
