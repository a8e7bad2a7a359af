/**
 * The http resolver: a file fetched by URL, allowed by a sources.http rule
 * that binds its content (sha256 of each reviewed file, or signatures).
 * Canonical URL, the rule check, unusable rules, and the walk over a
 * Pipeline (src/tekton/graph.ts) with the bytes the resolver returned.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { stringify } from 'yaml';
import { canonicalHttpUrl } from '../../src/policy/canonical.js';
import { checkSource, type SourcePolicy } from '../../src/policy/source.js';
import { compileHttpRule, policyProblems } from '../../src/policy/rules.js';
import { tektonChecksum } from '../../src/policy/trusted.js';
import { checkGraph, followReference } from '../../src/tekton/graph.js';
import type { GraphInput, RemoteRef } from '../../src/tekton/graph-model.js';
import type { Resolution } from '../../src/tekton/resolve.js';
import { effectiveConfig } from '../../src/controller/config.js';

const SRC = 'InternalServicesConfig internal-services/config';
const ctx = { tenant: 'default/team-a', controllerNamespace: 'internal-services' };
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const http = (url: string) => ({ resolver: 'http', params: [{ name: 'url', value: url }] });

const pipelineYaml = (label: string) => stringify({ apiVersion: 'tekton.dev/v1', kind: 'Pipeline', metadata: { name: 'p' }, spec: { description: label, tasks: [{ name: 't', taskSpec: { steps: [{ name: 's', image: 'registry/x' }] } }] } });
const REVIEWED = pipelineYaml('reviewed');
const CHANGED = pipelineYaml('changed');

const policy: SourcePolicy = {
  source: SRC,
  git: [],
  bundles: [],
  http: [
    { name: 'sources.http[0]', urls: ['https://files.example.com/pipelines/**'], sha256: [sha(REVIEWED), `sha256:${'b'.repeat(64)}`] },
    { name: 'sources.http[1]', urls: ['https://*.team-b.example/*.yaml'], sha256: ['c'.repeat(64)], namespaces: ['default/team-b'] },
  ],
  cluster: false,
};

test('canonicalHttpUrl: one spelling per file, refused where two readers could differ (accepted and refused both counted)', () => {
  const accepted: Array<[string, string]> = [
    ['https://files.example.com/pipelines/a.yaml', 'https://files.example.com/pipelines/a.yaml'],
    ['HTTPS://Files.Example.COM:443/pipelines/a.yaml', 'https://files.example.com/pipelines/a.yaml'],
    ['http://127.0.0.1:8080/p.yaml', 'http://127.0.0.1:8080/p.yaml'],
    ['http://files.example.com:80/p.yaml', 'http://files.example.com/p.yaml'],
  ];
  const refused: Array<[string, RegExp]> = [
    ['git://files.example.com/p.yaml', /scheme "git"; only https, http are allowed/],
    ['https://files.example.com/p.yaml?ref=main', /has a query .*the http resolver/],
    ['https://files.example.com/p.yaml#x', /fragment/],
    ['https://user@files.example.com/p.yaml', /user info/],
    ['https://files.example.com/pipelines/', /ends in "\/", which names a directory/],
    ['https://files.example.com/', /ends in "\/"/],
    ['https://files.example.com', /names no file/],
    ['https://files.example.com/a/../b.yaml', /"\.\." path segment/],
    ['https://files.example.com/a//b.yaml', /empty path segment/],
    ['https://0x7f.1/p.yaml', /numeric host/],
    ['https://files.example.com/a\\b.yaml', /character/],
    ['file:///etc/passwd', /not of the form scheme:\/\/host\/path|scheme "file"/],
  ];
  let yes = 0;
  let no = 0;
  for (const [raw, want] of accepted) {
    const c = canonicalHttpUrl(raw);
    assert.ok(c.ok, `${raw}: ${c.ok ? '' : c.why}`);
    assert.equal(c.value.href, want);
    yes += 1;
  }
  for (const [raw, why] of refused) {
    const c = canonicalHttpUrl(raw);
    assert.ok(!c.ok, `${raw} should be refused`);
    assert.match(c.why, why, raw);
    no += 1;
  }
  assert.ok(yes > 0 && no > 0, `accepted ${yes}, refused ${no}`);
});

test('checkSource http: the URL in canonical form against the rules for the tenant; every rule that allows it comes back with what it requires of the content', () => {
  const v = checkSource(policy, http('HTTPS://files.example.com/pipelines/release/p.yaml'), ctx);
  assert.deepEqual(v, {
    allowed: true,
    rule: 'sources.http[0]',
    params: [{ name: 'url', value: 'https://files.example.com/pipelines/release/p.yaml' }],
    contentRules: [{ name: 'sources.http[0]', sha256: [sha(REVIEWED), 'b'.repeat(64)].sort(), signers: undefined }],
  });
  // A rule for another namespace does not apply; its URL is not allowed here.
  const other = checkSource(policy, http('https://a.team-b.example/p.yaml'), ctx);
  assert.deepEqual(other, { allowed: false, message: `http url "https://a.team-b.example/p.yaml" is not allowed by ${SRC}; allowed: "https://files.example.com/pipelines/**" (sources.http[0])` });
  const b = checkSource(policy, http('https://a.team-b.example/p.yaml'), { ...ctx, tenant: 'default/team-b' });
  assert.ok(b.allowed && b.rule === 'sources.http[1]');
  // The requester never names the internal cluster's Secrets.
  const creds = checkSource(policy, { resolver: 'http', params: [{ name: 'url', value: 'https://files.example.com/pipelines/p.yaml' }, { name: 'http-username', value: 'x' }, { name: 'http-password-secret', value: 'tekton-git' }] }, ctx);
  assert.deepEqual(creds, { allowed: false, message: 'resolver params "http-username", "http-password-secret" are not accepted for the http resolver (only "url")' });
  const query = checkSource(policy, http('https://files.example.com/pipelines/p.yaml?token=1'), ctx);
  assert.match((query as { message: string }).message, /^http param "url" "https:\/\/files.example.com\/pipelines\/p.yaml\?token=1" has a query/);
  const none = checkSource({ ...policy, http: undefined }, http('https://files.example.com/pipelines/p.yaml'), ctx);
  assert.match((none as { message: string }).message, /the http resolver is not allowed for namespace "team-a" on remote "default" .*no sources\.http rule applies/);
  assert.match((checkSource(policy, { resolver: 'http', params: [] }, ctx) as { message: string }).message, /has no url param/);
});

test('an http rule that binds no content grants nothing, and says why; malformed digests and URLs too', () => {
  const cases: Array<[Parameters<typeof compileHttpRule>[0], RegExp | undefined]> = [
    [{ urls: ['https://files.example.com/**'] }, /binds no content: a URL names a file, not what it holds/],
    [{ urls: ['https://files.example.com/**'], sha256: [] }, /binds no content/],
    [{ urls: ['https://files.example.com/**'], sha256: ['abc'] }, /sha256\[0\] "abc" is not a sha256 digest/],
    [{ urls: ['https://files.example.com/a?b'], sha256: ['a'.repeat(64)] }, /urls\[0\] .*has a query/],
    [{ urls: [], sha256: ['a'.repeat(64)] }, /names no urls/],
    [{ urls: ['https://files.example.com/**'], sha256: [`sha256:${'A'.repeat(64)}`] }, undefined],
  ];
  let usable = 0;
  let unusable = 0;
  for (const [rule, why] of cases) {
    const c = compileHttpRule(rule);
    if (why) {
      assert.ok(!c.ok, JSON.stringify(rule));
      assert.match(c.why, why);
      unusable += 1;
    } else {
      assert.ok(c.ok, JSON.stringify(rule));
      assert.deepEqual([...(c.rule.sha256 ?? [])], ['a'.repeat(64)], 'lower case, prefix dropped');
      usable += 1;
    }
  }
  assert.ok(usable > 0 && unusable > 0);
  // Through the configuration: reported as a problem, and the URL is refused naming it.
  const e = effectiveConfig({ apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name: 'config', namespace: 'internal-services' }, spec: { allowList: ['team-a'], sources: { http: [{ urls: ['https://files.example.com/**'] }] } } } as never, 'internal-services');
  const text = JSON.stringify(e);
  assert.match(text, /sources\.http\[0\] of .* is unusable and grants nothing: it binds no content/);
  assert.deepEqual(policyProblems({ git: [], bundles: [], http: [{ urls: ['https://x.example/a'], sha256: ['z'] }], source: SRC }), [`sources.http[0] of ${SRC} is unusable and grants nothing: sha256[0] "z" is not a sha256 digest (64 hex digits)`]);
  const v = checkSource({ ...policy, http: [{ name: 'sources.http[0]', urls: ['https://files.example.com/**'] }] }, http('https://files.example.com/p.yaml'), ctx);
  assert.match((v as { message: string }).message, /sources\.http\[0\] is unusable and grants nothing \(it binds no content/);
});

const resolvedHttp = (content: string): Resolution => ({ state: 'resolved', content, refSource: { uri: 'https://files.example.com/pipelines/p.yaml', digest: { sha256: sha(content) }, entryPoint: '' } });

function follow(content: Resolution | undefined, p: SourcePolicy = policy) {
  const input: Pick<GraphInput, 'policy' | 'namespace' | 'controllerNamespace' | 'lookup'> = { policy: p, namespace: 'default/team-a', controllerNamespace: 'internal-services', lookup: () => content };
  return followReference(input, 'spec.pipeline.pipelineRef', http('https://files.example.com/pipelines/p.yaml'), [], ['Pipeline']);
}

test('followReference http: resolved, hashed over the bytes read, run only if a rule lists the digest; provenance carries it', () => {
  assert.deepEqual(follow(undefined), { kind: 'need', ref: { resolver: 'http', params: [{ name: 'url', value: 'https://files.example.com/pipelines/p.yaml' }] } });
  const ok = follow(resolvedHttp(REVIEWED));
  assert.equal(ok.kind, 'resolved');
  if (ok.kind !== 'resolved') return;
  assert.equal((ok.obj['spec'] as { description: string }).description, 'reviewed');
  assert.deepEqual(ok.provenance, { ref: 'spec.pipeline.pipelineRef', resolver: 'http', source: 'https://files.example.com/pipelines/p.yaml', digest: `sha256:${sha(REVIEWED)}` });
  const changed = follow(resolvedHttp(CHANGED));
  assert.equal(changed.kind, 'refused');
  if (changed.kind !== 'refused') return;
  assert.equal(changed.code, 'REQUEST_SOURCE_NOT_ALLOWED');
  assert.match(changed.message, new RegExp(`^spec\\.pipeline\\.pipelineRef: the file the http resolver fetched has sha256 "${sha(CHANGED)}", which no rule that allows its URL accepts: sources\\.http\\[0\\] lists 2 reviewed files .*not this one\\. A URL names a file, not what it holds`));
  // The resolver's own report is not trusted: the bytes are hashed here.
  const lying: Resolution = { state: 'resolved', content: CHANGED, refSource: { uri: 'x', digest: { sha256: sha(REVIEWED) }, entryPoint: '' } };
  assert.equal(follow(lying).kind, 'refused');
});

test('followReference http under a rule with signatures: signed by its key runs, unsigned is refused as a signature problem', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const signed = (label: string, key = privateKey) => {
    const obj = { apiVersion: 'tekton.dev/v1', kind: 'Pipeline', metadata: { name: 'p' }, spec: { description: label, tasks: [{ name: 't', taskSpec: { steps: [{ name: 's', image: 'registry/x' }] } }] } };
    const sum = tektonChecksum(obj);
    assert.ok(Buffer.isBuffer(sum));
    const sig = sign('sha256', sum, key).toString('base64');
    return stringify({ ...obj, metadata: { name: 'p', annotations: { 'tekton.dev/signature': sig } } });
  };
  const p: SourcePolicy = { ...policy, http: [{ name: 'sources.http[0]', urls: ['https://files.example.com/**'], signatures: { authorities: [{ name: 'release', key: { data: pem } }] } }] };
  const good = follow(resolvedHttp(signed('any version')), p);
  assert.equal(good.kind, 'resolved', JSON.stringify(good));
  if (good.kind === 'resolved') assert.equal(good.provenance.signedBy, 'release');
  const unsigned = follow(resolvedHttp(REVIEWED), p);
  assert.equal(unsigned.kind, 'refused');
  if (unsigned.kind === 'refused') {
    assert.equal(unsigned.code, 'REQUEST_SIGNATURE_INVALID');
    assert.match(unsigned.message, /is not signed .*sources\.http\[0\] requires a signature by one of the keys "release"/);
  }
  const other = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey;
  const wrong = follow(resolvedHttp(signed('x', other)), p);
  assert.ok(wrong.kind === 'refused' && wrong.code === 'REQUEST_SIGNATURE_INVALID', JSON.stringify(wrong));
});

test('a resolved Pipeline whose Tasks come from the http resolver: each Task checked by its digest and run embedded', () => {
  const taskYaml = stringify({ apiVersion: 'tekton.dev/v1', kind: 'Task', metadata: { name: 'sign' }, spec: { steps: [{ name: 'sign', image: 'registry/sign' }] } });
  const p: SourcePolicy = { ...policy, http: [{ name: 'sources.http[0]', urls: ['https://files.example.com/tasks/*.yaml'], sha256: [sha(taskYaml)] }] };
  const spec = { params: [{ name: 'taskUrl' }], tasks: [{ name: 'sign', taskRef: { resolver: 'http', params: [{ name: 'url', value: '$(params.taskUrl)' }] } }] };
  const otherTask = taskYaml.replace('registry/sign', 'registry/other');
  const lookup = (ref: RemoteRef): Resolution | undefined => resolvedHttp(ref.params[0]?.value === 'https://files.example.com/tasks/sign.yaml' ? taskYaml : otherTask);
  const input = (url: string): GraphInput => ({
    spec,
    origin: 'resolved',
    params: [{ name: 'taskUrl', value: url }],
    policy: p,
    namespace: 'default/team-a',
    controllerNamespace: 'internal-services',
    pipelineRunName: 'ir-1',
    pipelineName: 'p',
    lookup,
    installedTask: () => undefined,
  });
  const r = checkGraph(input('https://files.example.com/tasks/sign.yaml'));
  assert.equal(r.state, 'ready', JSON.stringify(r));
  if (r.state !== 'ready') return;
  const t = (r.spec?.['tasks'] as Array<{ taskRef?: unknown; taskSpec?: unknown }>)[0];
  assert.equal(t?.taskRef, undefined, 'no reference left for Tekton to fetch again');
  assert.deepEqual(t?.taskSpec, { steps: [{ name: 'sign', image: 'registry/sign' }] });
  assert.equal(r.provenance[0]?.digest, `sha256:${sha(taskYaml)}`);
  const bad = checkGraph(input('https://files.example.com/tasks/other.yaml'));
  assert.equal(bad.state, 'rejected');
  assert.match((bad as { message: string }).message, /^tasks\[sign\]\.taskRef \(values from param "taskUrl"\): the file the http resolver fetched has sha256/);
});
