import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { renderYamlDocs, repoRoot } from '../../src/api/crd-render.js';
import { SAMPLE_KINDS, sampleKind, sampleKindDir, sampleKindFiles } from '../../src/api/kind-samples.js';
import type { RequestDefinition, RequestDefinitionSpec } from '../../src/api/request-definition.js';
import { fieldSchema, renderKind, typeKind, type DeclaredParam } from '../../src/api/typed-kind-crd.js';
import { judge } from '../../src/controller/definitions.js';
import { INTERNAL_REQUEST_KIND } from '../../src/requests/request-kind.js';
import { typedRequestKind } from '../../src/requests/typed-request-kind.js';
import type { KubeObject } from '../../src/kube/client.js';

const spec = (extra: Partial<RequestDefinitionSpec> = {}): RequestDefinitionSpec => ({ group: 'signing.example.com', kind: 'SigningRequest', request: 'sign', ...extra });
const def = (name: string, s: RequestDefinitionSpec, meta: Partial<RequestDefinition['metadata']> = {}): RequestDefinition => ({ apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'RequestDefinition', metadata: { name, namespace: 'internal-services', generation: 1, uid: `uid-${name}`, ...meta }, spec: s });
const params: DeclaredParam[] = [
  { name: 'image', type: 'string', description: 'The image.' },
  { name: 'tags', type: 'array', default: [] },
  { name: 'signer', type: 'object', properties: { keyRef: { type: 'string' }, identity: { type: 'string' } } },
  { name: 'dry-run', type: 'string', default: 'false' },
];

test('each sample kind under config/samples/kinds/*/remote is what kinds render makes (run npm run gen:crds)', () => {
  for (const name of SAMPLE_KINDS) {
    for (const [file, objs] of Object.entries(sampleKindFiles(name))) {
      const onDisk = readFileSync(join(repoRoot(), sampleKindDir(name), 'remote', file), 'utf8');
      assert.equal(onDisk, renderYamlDocs(objs, 'internal-services kinds render (npm run gen:crds)'), `${name}: ${file} is stale`);
    }
    const { definition, pipeline } = sampleKind(name);
    const typing = typeKind(definition.spec, pipeline.spec.params ?? [], (pipeline.spec.results ?? []).map((r) => r.name));
    assert.ok(typing.ok, `${name}: ${typing.ok ? '' : typing.problems.join('; ')}`);
  }
  assert.deepEqual(readdirSync(join(repoRoot(), 'config', 'samples', 'kinds')).sort(), [...SAMPLE_KINDS].sort(), 'every sample directory is listed in SAMPLE_KINDS');
});

test('typeKind: one field per param, typed, required without a default; renames, hides and narrows as the definition says', () => {
  const t = typeKind(spec({ fields: [{ param: 'dry-run', field: 'dryRun', enum: ['true', 'false'] }, { param: 'image', maxLength: 100, pattern: '^q' }] }), params, []);
  assert.ok(t.ok);
  assert.deepEqual(t.fields.map((f) => [f.field, f.param, f.type, f.required]), [
    ['image', 'image', 'string', true],
    ['tags', 'tags', 'array', false],
    ['signer', 'signer', 'object', true],
    ['dryRun', 'dry-run', 'string', false],
  ]);
  assert.deepEqual(fieldSchema(t.fields[3]!), { description: 'The "dry-run" param of the Pipeline.', type: 'string', maxLength: 262144, enum: ['true', 'false'] });
  assert.deepEqual(fieldSchema(t.fields[2]!)['required'], ['identity', 'keyRef']);
  const hidden = typeKind(spec({ fields: [{ param: 'dry-run', hidden: true }] }), params);
  assert.ok(hidden.ok && !hidden.fields.some((f) => f.param === 'dry-run'));
});

test('typeKind names every problem: a dashed param without a field name, unknown params and results, two params on one field, hiding a required param', () => {
  const t = typeKind(spec({ fields: [{ param: 'nope' }, { param: 'image', hidden: true }, { param: 'tags', field: 'signer' }, { param: 'signer', enum: ['x'] }], results: ['ghost'] }), params, ['signature']);
  assert.equal(t.ok, false);
  const text = !t.ok ? t.problems.join('\n') : '';
  assert.match(text, /param "nope", which the Pipeline does not declare/);
  assert.match(text, /param "image" is hidden but has no default/);
  assert.match(text, /"tags" and "signer" would both be spec.signer/);
  assert.match(text, /param "signer" is an object: enum, pattern and maxLength apply to strings/);
  assert.match(text, /param "dry-run" is not a plain field name/);
  assert.match(text, /results names "ghost"/);
  assert.throws(() => renderKind({ metadata: { name: 'd' }, spec: spec() }, { metadata: { name: 'p' }, spec: { params } }), /RequestDefinition d does not fit Pipeline p: .*dry-run/);
  const reserved = typeKind({ group: 'appstudio.redhat.com', kind: 'InternalRequest', request: 'x' }, []);
  assert.ok(!reserved.ok && /project's own/.test(reserved.problems[0]!));
});

test('a typed request reads as an InternalRequest of the definition\'s Pipeline: strings as they are, arrays and objects as JSON text, renamed fields to their params', () => {
  const kind = typedRequestKind(def('signing', spec({ fields: [{ param: 'dry-run', field: 'dryRun' }], serviceAccount: 'signer', timeouts: { pipeline: '1h' } })));
  const obj = { apiVersion: 'signing.example.com/v1alpha1', kind: 'SigningRequest', metadata: { name: 'a', namespace: 'team', uid: 'u' }, spec: { image: 'q/x@sha256:1', tags: ['v1'], signer: { keyRef: 'k', identity: 'i' }, dryRun: 'true' } };
  const req = kind.toRequest(obj as unknown as KubeObject);
  assert.deepEqual(req.spec, { request: 'sign', serviceAccount: 'signer', timeouts: { pipeline: '1h' }, params: { image: 'q/x@sha256:1', tags: '["v1"]', signer: '{"keyRef":"k","identity":"i"}', 'dry-run': 'true' } });
  assert.equal(kind.checkShape(req), undefined);
  assert.deepEqual(kind.resource, { group: 'signing.example.com', version: 'v1alpha1', plural: 'signingrequests' });
  const bad = kind.toRequest({ ...obj, spec: { image: 3, tags: [1] } } as unknown as KubeObject);
  assert.equal(kind.checkShape(bad), 'spec.image must be a string, a list of strings or an object of strings; spec.tags must be a string, a list of strings or an object of strings (kubectl explain signingrequests.spec lists the fields)');
  const ref = typedRequestKind(def('r', spec({ request: undefined, pipelineRef: { resolver: 'git', params: [{ name: 'url', value: 'https://x/y.git' }] } })));
  assert.deepEqual(ref.toRequest(obj as unknown as KubeObject).spec.pipeline, { pipelineRef: { resolver: 'git', params: [{ name: 'url', value: 'https://x/y.git' }] } });
});

test('property: any typed spec of strings, string lists and string maps reads as params that parse back to the same values', () => {
  const kind = typedRequestKind(def('signing', spec()));
  const value = fc.oneof(fc.string(), fc.array(fc.string()), fc.dictionary(fc.string({ minLength: 1 }).filter((k) => k !== '__proto__'), fc.string()));
  fc.assert(
    fc.property(fc.dictionary(fc.stringMatching(/^[a-z][a-zA-Z0-9]{0,10}$/), value), (s) => {
      const req = kind.toRequest({ metadata: { name: 'a', namespace: 'n' }, spec: s } as unknown as KubeObject);
      assert.equal(kind.checkShape(req), undefined);
      for (const [k, v] of Object.entries(s)) assert.deepEqual(typeof v === 'string' ? req.spec.params![k] : JSON.parse(req.spec.params![k]!), typeof v === 'string' ? v : JSON.parse(JSON.stringify(v)));
    }),
  );
});

test('the status of a typed request shows only the results its definition names', () => {
  const kind = typedRequestKind(def('signing', spec({ results: ['signature'] })));
  const req = kind.toRequest({ metadata: { name: 'a', namespace: 'n' }, spec: {} } as unknown as KubeObject);
  const body = kind.statusBody(req, { results: { signature: 's', log: 'internal' } }) as unknown as { apiVersion: string; kind: string; status: { results?: Record<string, string> } };
  assert.equal(body.apiVersion, 'signing.example.com/v1alpha1');
  assert.equal(body.kind, 'SigningRequest');
  assert.deepEqual(body.status.results, { signature: 's' });
  const none = kind.statusBody(req, { results: { log: 'internal' } }) as unknown as { status: { results?: unknown } };
  assert.equal(none.status.results, undefined);
});

test('judge: the older of two definitions keeps a Kind; built-in names, invalid and unserved definitions are not served; unchanged ones keep their kind object', () => {
  const a = def('a', spec(), { creationTimestamp: '2026-01-01T00:00:00Z' });
  const b = def('b', spec({ group: 'other.example.com' }), { creationTimestamp: '2026-01-02T00:00:00Z' });
  const c = def('c', { group: 'appstudio.redhat.com', kind: 'Other', plural: 'internalrequests', request: 'x' });
  const d = def('d', spec({ kind: 'Off', served: false }));
  const e = def('e', { group: 'e.example.com', kind: 'E' } as RequestDefinitionSpec);
  const v = judge([b, a, c, d, e], [INTERNAL_REQUEST_KIND]);
  assert.equal(v.get('a')!.reason, 'Served');
  assert.equal(v.get('b')!.reason, 'Conflict');
  assert.match(v.get('b')!.message, /kind SigningRequest is served already, for RequestDefinition a/);
  assert.equal(v.get('c')!.reason, 'Conflict');
  assert.match(v.get('c')!.message, /built-in kind/);
  assert.equal(v.get('d')!.reason, 'NotServed');
  assert.equal(v.get('e')!.reason, 'Invalid');
  const again = judge([a], [INTERNAL_REQUEST_KIND], new Map([['a', v.get('a')!.kind!]]));
  assert.equal(again.get('a')!.kind, v.get('a')!.kind, 'the same object: its caches are not listed again');
  const changed = judge([{ ...a, metadata: { ...a.metadata, generation: 2 } }], [INTERNAL_REQUEST_KIND], new Map([['a', v.get('a')!.kind!]]));
  assert.notEqual(changed.get('a')!.kind, v.get('a')!.kind, 'a new generation is a new kind object');
});
