/**
 * The requester's CLI with --kind (src/cli/request/kind.ts, discovery.ts,
 * fields.ts, and the typed side of create.ts and approve-deny.ts): parsing the
 * flag, choosing the resource API discovery found, the spec from --field and
 * --spec-file, and what a typed kind refuses.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1APIGroup, V1APIResourceList } from '@kubernetes/client-node';
import { approvalKindOf, definedResource } from '../../src/cli/request/approve-deny.js';
import { buildRequest, buildTypedRequest, idempotencyLabelValue, requestSubcommands, typedRequestBody } from '../../src/cli/request/commands.js';
import { groupVersions, resolveKind, type Discovery } from '../../src/cli/request/discovery.js';
import { parseField, parseFields, parseFieldValue, parseSpecText, typedSpec } from '../../src/cli/request/fields.js';
import { BUILT_IN_KIND, chooseKind, isTypedKindFlag, kindPlural, namesBuiltIn, parseKindFlag, servedResources, withArticle, type KindRef, type ServedResource } from '../../src/cli/request/kind.js';
import { CliError, progressLine, requestRef, requestTable, type RequestObject } from '../../src/cli/request/args-output.js';
import type { CreateFlags } from '../../src/cli/request/create.js';

function throwsCli(f: () => unknown, code: string, msg?: RegExp): void {
  assert.throws(f, (e: unknown) => {
    assert.ok(e instanceof CliError, String(e));
    assert.equal(e.code, code);
    assert.equal(e.exitCode, 2);
    if (msg) assert.match(e.message, msg);
    return true;
  });
}

async function rejectsCli(p: Promise<unknown>, code: string, msg?: RegExp): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof CliError, String(e));
    assert.equal(e.code, code);
    if (msg) assert.match(e.message, msg);
    return true;
  });
}

const SIGNING: KindRef = { kind: 'SigningRequest', group: 'signing.example.com', version: 'v1alpha1', plural: 'signingrequests', singular: 'signingrequest', builtIn: false };

/** What discovery of a cluster with InternalRequest, SigningRequest (v1alpha1 and v1) and a few others says. */
const GROUPS: V1APIGroup[] = [
  { name: 'apps', versions: [{ groupVersion: 'apps/v1', version: 'v1' }], preferredVersion: { groupVersion: 'apps/v1', version: 'v1' } },
  { name: 'appstudio.redhat.com', versions: [{ groupVersion: 'appstudio.redhat.com/v1alpha1', version: 'v1alpha1' }] },
  {
    name: 'signing.example.com',
    versions: [
      { groupVersion: 'signing.example.com/v1', version: 'v1' },
      { groupVersion: 'signing.example.com/v1alpha1', version: 'v1alpha1' },
    ],
    preferredVersion: { groupVersion: 'signing.example.com/v1', version: 'v1' },
  },
  { name: 'other.example.com', versions: [{ groupVersion: 'other.example.com/v1', version: 'v1' }] },
  { name: 'broken.example.com', versions: [{ groupVersion: 'broken.example.com/v1', version: 'v1' }] },
];
const res = (name: string, kind: string, extra: Partial<{ singularName: string; shortNames: string[]; namespaced: boolean }> = {}) => ({
  name,
  kind,
  singularName: extra.singularName ?? kind.toLowerCase(),
  namespaced: extra.namespaced ?? true,
  verbs: ['create', 'get', 'list'],
  ...(extra.shortNames ? { shortNames: extra.shortNames } : {}),
});
const RESOURCES: Record<string, V1APIResourceList['resources']> = {
  'apps/v1': [res('deployments', 'Deployment', { shortNames: ['deploy'] }), res('deployments/status', 'Deployment')],
  'appstudio.redhat.com/v1alpha1': [res('internalrequests', 'InternalRequest', { shortNames: ['ir'] }), res('internalrequests/status', 'InternalRequest')],
  'signing.example.com/v1': [res('signingrequests', 'SigningRequest', { shortNames: ['sigreq'] }), res('signingrequests/status', 'SigningRequest')],
  'signing.example.com/v1alpha1': [res('signingrequests', 'SigningRequest', { shortNames: ['sigreq'] }), res('signingrequests/status', 'SigningRequest')],
  // a second kind with the short name "sigreq", a cluster-scoped one, one without a status
  'other.example.com/v1': [
    res('signatures', 'Signature', { shortNames: ['sigreq'] }),
    res('signatures/status', 'Signature'),
    res('keyrings', 'Keyring', { namespaced: false }),
    res('keyrings/status', 'Keyring'),
    res('notes', 'Note'),
  ],
};

/** A discovery client over GROUPS/RESOURCES that records what it was asked; broken.example.com fails. */
function fakeDiscovery(): Discovery & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    apis: { getAPIVersions: async () => ({ groups: GROUPS }) },
    custom: {
      getAPIResources: async ({ group, version }: { group: string; version: string }) => {
        asked.push(`${group}/${version}`);
        if (group === 'broken.example.com') throw Object.assign(new Error('HTTP 503: service unavailable'), { statusCode: 503 });
        return { groupVersion: `${group}/${version}`, resources: RESOURCES[`${group}/${version}`] ?? [] };
      },
    },
  } as unknown as Discovery & { asked: string[] };
}
const T = { where: 'cluster "remote" (https://r), context "c"', namespace: 'team-a' };

describe('--kind', () => {
  test('parsed as kubectl names resources: PLURAL.GROUP, PLURAL.VERSION.GROUP, a bare name; empty is not given', () => {
    assert.deepEqual(parseKindFlag('signingrequests.signing.example.com'), { name: 'signingrequests', group: 'signing.example.com' });
    assert.deepEqual(parseKindFlag('signingrequests.v1alpha1.signing.example.com'), { name: 'signingrequests', group: 'signing.example.com', version: 'v1alpha1' });
    assert.deepEqual(parseKindFlag(' SigningRequest '), { name: 'SigningRequest' });
    assert.deepEqual(parseKindFlag('sigreq'), { name: 'sigreq' });
    // a segment that looks like a version is the group when nothing follows it
    assert.deepEqual(parseKindFlag('things.v1'), { name: 'things', group: 'v1' });
    assert.deepEqual(parseKindFlag('Things.Example.COM'), { name: 'Things', group: 'example.com' });
    assert.equal(parseKindFlag(undefined), undefined);
    assert.equal(parseKindFlag(''), undefined);
    assert.equal(parseKindFlag('  '), undefined);
    for (const bad of ['Signing Request', 'signingrequests..example.com', 'x.bad_group', '9lives', 'a/b', `${'x'.repeat(64)}`]) {
      throwsCli(() => parseKindFlag(bad), 'CLI_USAGE', /is not a resource name: give PLURAL\.GROUP \(e\.g\. signingrequests\.signing\.example\.com\), PLURAL\.VERSION\.GROUP, or a Kind, plural or short name/);
    }
  });

  test("InternalRequest's own names need no look-up; anything else is a typed kind", () => {
    for (const f of [undefined, '', 'InternalRequest', 'internalrequests', 'internalrequest', 'IR', 'internalrequests.appstudio.redhat.com', 'internalrequests.v1alpha1.appstudio.redhat.com']) {
      assert.equal(namesBuiltIn(parseKindFlag(f)), true, String(f));
      assert.equal(isTypedKindFlag(f), false, String(f));
    }
    for (const f of ['SigningRequest', 'sigreq', 'internalrequests.example.com', 'internalrequests.v1.appstudio.redhat.com']) assert.equal(isTypedKindFlag(f), true, f);
    throwsCli(() => isTypedKindFlag('no way'), 'CLI_USAGE');
  });

  test('discovery documents: subresources mark a status; the singular defaults to the lower-case Kind', () => {
    const served = servedResources('g.example.com', 'v1', [
      { name: 'widgets', kind: 'Widget', singularName: '', namespaced: true },
      { name: 'widgets/status', kind: 'Widget', namespaced: true },
      { name: 'gadgets', kind: 'Gadget', singularName: 'gadget', shortNames: ['gd'], namespaced: false },
      { name: 'gadgets/scale', kind: 'Scale', namespaced: false },
    ]);
    assert.deepEqual(served, [
      { group: 'g.example.com', version: 'v1', kind: 'Widget', plural: 'widgets', singular: 'widget', shortNames: [], namespaced: true, status: true },
      { group: 'g.example.com', version: 'v1', kind: 'Gadget', plural: 'gadgets', singular: 'gadget', shortNames: ['gd'], namespaced: false, status: false },
    ]);
  });

  const served: ServedResource[] = [
    ...servedResources('appstudio.redhat.com', 'v1alpha1', RESOURCES['appstudio.redhat.com/v1alpha1']!),
    ...servedResources('signing.example.com', 'v1', RESOURCES['signing.example.com/v1']!),
    ...servedResources('other.example.com', 'v1', RESOURCES['other.example.com/v1']!),
  ];
  const where = 'the resources of cluster "remote"';

  test('chooseKind: by Kind (any case), plural, singular or short name, within the group and version given', () => {
    const signingV1 = { ...SIGNING, version: 'v1' };
    for (const name of ['SigningRequest', 'signingrequest', 'SIGNINGREQUESTS', 'signingrequests']) assert.deepEqual(chooseKind(name, { name }, served, where), signingV1, name);
    assert.deepEqual(chooseKind('x', { name: 'sigreq', group: 'signing.example.com' }, served, where), signingV1);
    assert.deepEqual(chooseKind('x', { name: 'internalrequests', group: 'appstudio.redhat.com' }, served, where), BUILT_IN_KIND);
    throwsCli(() => chooseKind('signingrequests.v1alpha1.signing.example.com', { name: 'signingrequests', group: 'signing.example.com', version: 'v1alpha1' }, served, where), 'CLI_KIND_UNKNOWN', /names none of .* \(API group signing\.example\.com, version v1alpha1\); request kinds there: signingrequests\.signing\.example\.com$/);
  });

  test('chooseKind: none (naming the request kinds there), ambiguous (naming the candidates), not a request kind', () => {
    throwsCli(() => chooseKind('buildrequest', { name: 'buildrequest' }, served, where), 'CLI_KIND_UNKNOWN', /^--kind buildrequest names none of the resources of cluster "remote"; request kinds there: internalrequests\.appstudio\.redhat\.com, signingrequests\.signing\.example\.com$/);
    throwsCli(() => chooseKind('x.other.example.com', { name: 'x', group: 'other.example.com' }, served, where), 'CLI_KIND_UNKNOWN', /\(API group other\.example\.com\); request kinds there: notes\.other\.example\.com, signatures\.other\.example\.com$/);
    throwsCli(() => chooseKind('x', { name: 'x' }, [], where), 'CLI_KIND_UNKNOWN', /is the kind installed there\? \(its CRD comes from `internal-services kinds render`\)/);
    throwsCli(() => chooseKind('sigreq', { name: 'sigreq' }, served, where), 'CLI_KIND_UNKNOWN', /^--kind sigreq is ambiguous: the resources of cluster "remote" has signatures\.other\.example\.com, signingrequests\.signing\.example\.com; give one of them as --kind$/);
    throwsCli(() => chooseKind('keyrings', { name: 'keyrings' }, served, where), 'CLI_KIND_UNKNOWN', /names keyrings\.other\.example\.com, which is cluster-scoped/);
    throwsCli(() => chooseKind('Note', { name: 'Note' }, served, where), 'CLI_KIND_UNKNOWN', /names notes\.other\.example\.com, which has no status subresource: it is not a request kind/);
  });

  test('resolveKind: a bare name reads every group (skipping one that fails); PLURAL.GROUP reads only that group; InternalRequest reads nothing', async () => {
    const d = fakeDiscovery();
    assert.deepEqual(await resolveKind(d, 'SigningRequest', T), { ...SIGNING, version: 'v1' });
    assert.deepEqual(d.asked, ['apps/v1', 'appstudio.redhat.com/v1alpha1', 'signing.example.com/v1', 'other.example.com/v1', 'broken.example.com/v1']);
    const one = fakeDiscovery();
    assert.deepEqual(await resolveKind(one, 'signingrequests.v1alpha1.signing.example.com', T), SIGNING);
    assert.deepEqual(one.asked, ['signing.example.com/v1alpha1']);
    const none = fakeDiscovery();
    assert.equal(await resolveKind(none, 'ir', T), BUILT_IN_KIND);
    assert.equal(await resolveKind(none, undefined, T), BUILT_IN_KIND);
    assert.deepEqual(none.asked, []);
    await rejectsCli(resolveKind(fakeDiscovery(), 'signingrequests.nope.example.com', T), 'CLI_KIND_UNKNOWN', /serves no API group nope\.example\.com; is the kind installed there\?/);
    await rejectsCli(resolveKind(fakeDiscovery(), 'signingrequests.v2.signing.example.com', T), 'CLI_KIND_UNKNOWN', /serves API group signing\.example\.com in v1, v1alpha1, not v2/);
    // with a group, its failure is the answer
    await rejectsCli(resolveKind(fakeDiscovery(), 'things.broken.example.com', T), 'CLI_CLUSTER_ACCESS', /to list the resources of broken\.example\.com\/v1 \(to find --kind things\.broken\.example\.com\)/);
  });

  test('groupVersions: the version asked for, else the preferred one, else the first', () => {
    assert.deepEqual(groupVersions({ name: 'x' }, GROUPS).map((g) => `${g.group}/${g.version}`), ['apps/v1', 'appstudio.redhat.com/v1alpha1', 'signing.example.com/v1', 'other.example.com/v1', 'broken.example.com/v1']);
    assert.deepEqual(groupVersions({ name: 'x', group: 'signing.example.com', version: 'v1alpha1' }, GROUPS), [{ group: 'signing.example.com', version: 'v1alpha1' }]);
    assert.deepEqual(groupVersions({ name: 'x', group: 'signing.example.com', version: 'v9' }, GROUPS), []);
  });

  test('names in messages', () => {
    assert.deepEqual(['InternalRequest', 'SigningRequest', 'Policy', 'Gateway', 'Class', 'Box', 'Batch'].map(kindPlural), ['InternalRequests', 'SigningRequests', 'Policies', 'Gateways', 'Classes', 'Boxes', 'Batches']);
    assert.equal(withArticle('InternalRequest'), 'an InternalRequest');
    assert.equal(withArticle('SigningRequest'), 'a SigningRequest');
  });
});

describe('--field and --spec-file', () => {
  test('a value starting with [ or { is JSON; any other a string, as it is', () => {
    assert.equal(parseFieldValue('image', 'quay.io/a@sha256:1'), 'quay.io/a@sha256:1');
    assert.equal(parseFieldValue('note', ''), '');
    assert.equal(parseFieldValue('note', ' [not json'), ' [not json');
    assert.equal(parseFieldValue('n', '42'), '42');
    assert.deepEqual(parseFieldValue('tags', '["v1","latest"]'), ['v1', 'latest']);
    assert.deepEqual(parseFieldValue('signer', '{"keyRef":"k","identity":"me"}'), { keyRef: 'k', identity: 'me' });
    throwsCli(() => parseFieldValue('tags', '[v1, latest]'), 'CLI_FIELD_INVALID', /^--field tags: a value starting with \[ is read as JSON, and this is not JSON \(/);
  });

  test('NAME=VALUE with a field name; = in the value; a name twice is an error', () => {
    assert.deepEqual(parseField('note=a=b'), ['note', 'a=b']);
    assert.deepEqual(parseFields(['image=x', 'tags=["a"]']), { image: 'x', tags: ['a'] });
    throwsCli(() => parseField('image'), 'CLI_FIELD_INVALID', /^--field "image" is not NAME=VALUE$/);
    throwsCli(() => parseField('=x'), 'CLI_FIELD_INVALID', /is not NAME=VALUE/);
    throwsCli(() => parseField('key-ref=x'), 'CLI_FIELD_INVALID', /"key-ref" is not a field name \(letters, digits and _, not starting with a digit\)$/);
    throwsCli(() => parseField('signer.keyRef=k'), 'CLI_FIELD_INVALID', /an object field takes JSON: --field signer='\{"keyRef":"…"\}'$/);
    throwsCli(() => parseFields(['image=a', 'image=b']), 'CLI_FIELD_INVALID', /--field image is given more than once/);
  });

  test('--spec-file: a YAML or JSON object; --field over it', () => {
    assert.deepEqual(parseSpecText('s.yaml', 'image: quay.io/a\ntags: [v1, latest]\nsigner: {keyRef: k, identity: me}\n'), { image: 'quay.io/a', tags: ['v1', 'latest'], signer: { keyRef: 'k', identity: 'me' } });
    assert.deepEqual(parseSpecText('s.json', '{"image": "x"}'), { image: 'x' });
    throwsCli(() => parseSpecText('s.yaml', '- a\n- b\n'), 'CLI_FIELD_INVALID', /^--spec-file s\.yaml holds a list, not an object of spec fields$/);
    throwsCli(() => parseSpecText('s.yaml', 'just text'), 'CLI_FIELD_INVALID', /holds a string/);
    throwsCli(() => parseSpecText('s.yaml', ''), 'CLI_FIELD_INVALID', /holds nothing/);
    throwsCli(() => parseSpecText('s.yaml', 'a: [1'), 'CLI_FIELD_INVALID', /^--spec-file s\.yaml is not YAML or JSON: /);
    throwsCli(() => parseSpecText('s.yaml', 'apiVersion: v1\nkind: SigningRequest\nspec: {image: x}\n'), 'CLI_FIELD_INVALID', /is a whole object \(apiVersion, kind, spec\): give only its spec/);
    assert.deepEqual(typedSpec(['note=from flag'], { source: 's.yaml', text: 'image: x\nnote: from file\n' }), { image: 'x', note: 'from flag' });
    assert.deepEqual(typedSpec([]), {});
  });
});

describe('create --kind (a typed kind)', () => {
  const base: CreateFlags = { kind: 'signingrequests.signing.example.com', output: 'json', wait: true, pollInterval: '5s' };
  const files: Record<string, string> = { 'spec.yaml': 'image: quay.io/a@sha256:1\nsigner: {keyRef: k, identity: me}\n' };
  const read = (p: string): string => {
    const v = files[p];
    if (v === undefined) throw new Error(`ENOENT: no such file or directory, open '${p}'`);
    return v;
  };

  test('the object sent: the spec, labels (the idempotency key too), and a name from the kind', () => {
    const built = buildTypedRequest([], { ...base, specFile: 'spec.yaml', field: ['tags=["v1"]', 'note=hello'], label: ['release=r1'], idempotencyKey: 'run-1/sign', output: 'value=signature' }, read);
    assert.match(idempotencyLabelValue('run-1/sign'), /^sha256-[0-9a-f]{56}$/);
    assert.deepEqual(built.output, { format: 'value', key: 'signature' });
    assert.deepEqual(typedRequestBody(SIGNING, built), {
      apiVersion: 'signing.example.com/v1alpha1',
      kind: 'SigningRequest',
      metadata: { generateName: 'signingrequest-', labels: { release: 'r1', 'internal-services.appstudio.redhat.com/idempotency-key': idempotencyLabelValue('run-1/sign') } },
      spec: { image: 'quay.io/a@sha256:1', signer: { keyRef: 'k', identity: 'me' }, tags: ['v1'], note: 'hello' },
    });
    assert.deepEqual(typedRequestBody(SIGNING, buildTypedRequest([], { ...base, name: 'exact', field: ['image=x'] }, read)).metadata, { name: 'exact' });
    assert.deepEqual(typedRequestBody(SIGNING, buildTypedRequest([], { ...base, generateName: 'sig-' }, read)).metadata, { generateName: 'sig-' });
    // empty strings (a Tekton Task's optional params) count as not given
    const fromTask = buildTypedRequest([], { ...base, pipeline: '', serviceAccount: '', pipelineTimeout: '', specFile: '', param: [], field: ['image=x'] }, read);
    assert.deepEqual(fromTask.spec, { image: 'x' });
    throwsCli(() => buildTypedRequest([], { ...base, name: 'a', generateName: 'b-' }, read), 'CLI_USAGE', /--name and --generate-name/);
    throwsCli(() => buildTypedRequest([], { ...base, output: 'table' }, read), 'CLI_OUTPUT_INVALID');
    throwsCli(() => buildTypedRequest([], { ...base, specFile: 'missing.yaml' }, read), 'CLI_FIELD_INVALID', /^--spec-file missing\.yaml: cannot read it: ENOENT/);
  });

  test('what only an InternalRequest takes is refused, naming each', () => {
    const refused: Array<[string[], Partial<CreateFlags>, string]> = [
      [['sign'], {}, 'argument "sign"'],
      [['image=x', 'note=y'], { param: ['tags=[]'] }, 'argument "image=x", -p/--param'],
      [[], { pipeline: 'sign' }, '--pipeline'],
      [[], { gitUrl: 'u', gitRevision: 'r', path: 'p' }, '--git-url, --git-revision, --path'],
      [[], { resolver: 'bundles', resolverParam: ['a=b'] }, '--resolver, --resolver-param'],
      [[], { param: ['image=x'] }, '-p/--param'],
      [[], { serviceAccount: 'sa' }, '--service-account'],
      [[], { pipelineTimeout: '1h', taskTimeout: '50m', finallyTimeout: '10m' }, '--pipeline-timeout, --task-timeout, --finally-timeout'],
    ];
    for (const [args, flags, names] of refused) {
      throwsCli(
        () => buildTypedRequest(args, { ...base, ...flags }, read),
        'CLI_USAGE',
        new RegExp(`^${names} (is|are) for InternalRequests only: the RequestDefinition of --kind signingrequests\\.signing\\.example\\.com sets the Pipeline, its service account and timeouts; give the spec with --field NAME=VALUE or --spec-file FILE$`),
      );
    }
  });

  test('without a typed --kind, --field and --spec-file are refused', () => {
    const flags = { output: 'json', wait: true, pollInterval: '5s' };
    throwsCli(() => buildRequest(['sign'], { ...flags, field: ['image=x'] }, read), 'CLI_USAGE', /^--field and --spec-file give the spec of a typed kind: add --kind KIND \(an InternalRequest takes a Pipeline and params: -p KEY=VALUE\)$/);
    throwsCli(() => buildRequest(['sign'], { ...flags, specFile: 'spec.yaml' }, read), 'CLI_USAGE', /add --kind KIND/);
    // a Tekton Task's empty --spec-file is not given
    assert.equal(buildRequest(['sign'], { ...flags, specFile: '', field: [] }, read).body.spec.request, 'sign');
  });

  test('every verb has --kind; create has --field and --spec-file', () => {
    for (const c of requestSubcommands()) assert.ok(c.options.some((o) => o.long === '--kind'), c.name());
    const create = requestSubcommands().find((c) => c.name() === 'create')!;
    assert.deepEqual(create.options.filter((o) => ['--field', '--spec-file'].includes(o.long ?? '')).map((o) => o.long), ['--field', '--spec-file']);
  });
});

describe('output of a typed kind', () => {
  const signing = (name: string, status?: RequestObject['status']): RequestObject => ({
    apiVersion: 'signing.example.com/v1alpha1',
    kind: 'SigningRequest',
    metadata: { name, namespace: 'team-a', creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: { image: 'x' },
    ...(status ? { status } : {}),
  });
  const running = { conditions: [{ type: 'Succeeded', status: 'Unknown' as const, reason: 'Running', message: 'PipelineRun internal-services/ir-1 is running', lastTransitionTime: '2026-01-01T00:00:10Z' }], pipelineRun: 'internal-services/ir-1' };

  test('progress lines name the kind', () => {
    assert.equal(requestRef(signing('s1')), 'signingrequest team-a/s1');
    assert.equal(progressLine(signing('s1')), 'signingrequest team-a/s1: waiting for the controller to pick it up');
    assert.equal(progressLine(signing('s1', running)), 'signingrequest team-a/s1: Running, PipelineRun internal-services/ir-1 (PipelineRun internal-services/ir-1 is running)');
  });

  test('the table has no PIPELINE column (the RequestDefinition names the Pipeline)', () => {
    const now = Date.parse('2026-01-01T00:01:00Z');
    assert.equal(requestTable([signing('s1'), signing('s2', running)], now), 'NAME   STATUS    AGE   MESSAGE\ns1     Pending   60s\ns2     Running   60s   PipelineRun internal-services/ir-1 is running\n');
  });
});

describe('approve/deny --kind', () => {
  test("an approval's kind: spec.request.kind, else the request-kind annotation (approvals made before the field), else InternalRequest", () => {
    const a = (kind?: string, annotation?: string) => ({
      metadata: annotation ? { annotations: { 'internal-services.appstudio.redhat.com/request-kind': annotation } } : {},
      spec: { request: { namespace: 'team-a', name: 'x', uid: 'u', ...(kind ? { kind } : {}) }, rule: 'r' },
    });
    assert.equal(approvalKindOf(a('SigningRequest')), 'SigningRequest');
    assert.equal(approvalKindOf(a(undefined, 'SigningRequest')), 'SigningRequest');
    assert.equal(approvalKindOf(a()), undefined);
  });

  test('a name other than a Kind is found among the RequestDefinitions', () => {
    const defs = [
      definedResource({ spec: { group: 'signing.example.com', kind: 'SigningRequest', shortNames: ['sigreq'], request: 'sign' } }),
      definedResource({ spec: { group: 'build.example.com', kind: 'BuildRequest', plural: 'builds', request: 'build' } }),
    ];
    const where = 'the RequestDefinitions in namespace "internal-services"';
    assert.equal(chooseKind('sigreq', { name: 'sigreq' }, defs, where).kind, 'SigningRequest');
    assert.equal(chooseKind('builds.build.example.com', { name: 'builds', group: 'build.example.com' }, defs, where).kind, 'BuildRequest');
    throwsCli(() => chooseKind('buildrequests', { name: 'buildrequests' }, defs, where), 'CLI_KIND_UNKNOWN', /names none of the RequestDefinitions in namespace "internal-services"; request kinds there: builds\.build\.example\.com, signingrequests\.signing\.example\.com/);
  });
});
