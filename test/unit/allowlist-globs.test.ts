/**
 * One rule language for tenants (issue 54): allowList takes the same globs
 * as rules[].namespaces, matched the same way on the canonical tenant (on
 * kcp the workspace path kcp's Workspaces give). The CRD's pattern is tried
 * as the API server applies it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TENANT_GLOB_PATTERN } from '../../src/api/api-common.js';
import { internalServicesConfigSpecSchema } from '../../src/api/config-types.js';
import { effectiveConfig } from '../../src/controller/config.js';
import { isServed } from '../../src/policy/grant.js';

const cfg = (spec: Record<string, unknown>) => effectiveConfig({ apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name: 'config', namespace: 'internal-services' }, spec } as never, 'internal-services');

test('the allowList CRD pattern accepts every form rules[].namespaces are written in, and refuses what no tenant can be', () => {
  const items = (internalServicesConfigSpecSchema.properties.allowList as { items: { pattern: string } }).items;
  assert.equal(items.pattern, TENANT_GLOB_PATTERN);
  const re = new RegExp(items.pattern);
  for (const ok of ['team', 'managed-*', '*/team', 'prod/team', 'root:org:team/team', 'root:org:*/team', 'root:*/*', '**', 'root:team-a/**']) assert.ok(re.test(ok), ok);
  for (const bad of ['', 'Team', 'root:org/Team', 'a/b/c', ' team', 'team/', '/team', 'root:org team/x']) assert.ok(!re.test(bad), JSON.stringify(bad));
});

test('a glob in the allowList grants what the same glob in a rule names: whole workspace paths below root:org, that namespace only; default deny for the rest', () => {
  const allow = cfg({ allowList: ['root:org:*/team'] });
  const rule = cfg({ rules: [{ namespaces: ['root:org:*/team'], pipelines: ['*'] }] });
  const cases: Array<[string, boolean]> = [
    ['root:org:kid/team', true],
    ['root:org:kid:deeper/team', true],
    ['root:org/team', false],
    ['root:orgx:kid/team', false],
    ['root:org:kid/other', false],
    ['root:other:kid/team', false],
  ];
  for (const [tenant, served] of cases) {
    assert.equal(isServed(allow, tenant), served, `allowList, ${tenant}`);
    assert.equal(isServed(rule, tenant), served, `rule, ${tenant}`);
  }
});
