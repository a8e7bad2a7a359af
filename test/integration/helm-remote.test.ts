/**
 * The remote side's Helm chart (charts/internal-services-remote), with the
 * real helm of hack/helm/install.sh and a real kube-apiserver of the local
 * environment:
 *
 *  - crds/ holds the InternalRequest CRD of config/crd/bases, byte for byte;
 *    the chart lints, packages, and with the defaults renders what
 *    config/remote installs (less the Namespace and the CRDs);
 *  - the RBAC of a typed kind is the RBAC `internal-services kinds render
 *    --rbac` prints (renderKindRbac, and the CLI itself): same names, rules,
 *    role references and subjects, so that the two cannot drift;
 *  - requesters[] become one RoleBinding per namespace and kind, and values
 *    the chart cannot serve are refused with a message naming the value;
 *  - installed with `helm install` on a bare apiserver, with the sample
 *    SigningRequest kind and two teams (team-a-bot may request SigningRequests
 *    in team-a, team-b-bot only InternalRequests in team-b), the API server's
 *    own RBAC answers SubjectAccessReviews as meant, and real requests made
 *    as those users (the admin impersonating them: the local apiserver knows
 *    no credential of theirs) and as the controller's ServiceAccount (its
 *    own token) are allowed (201) and forbidden (403) as meant; upgrade and
 *    uninstall move and remove the grants, and leave the CRDs;
 *  - a cluster set up with `kubectl apply -k config/remote` and `kinds render
 *    --rbac` moves to the chart as README.md says (the objects adopted, the
 *    controller's token Secret kept).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiException, AuthenticationV1Api, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { parse as parseYaml } from 'yaml';
import { kindNames, type RequestDefinitionSpec } from '../../src/api/request-definition.js';
import { renderKindRbac } from '../../src/api/typed-kind-crd.js';
import { startEnvironment, type ControlPlane, type Environment, ensureNamespace, loadManifests, applyManifests, waitForCrds } from '../../src/localenv/index.js';
import { find, Helm, installHelm, kindsOf, kubectlOk as kubectlOkWith, parseDocs, ROOT, run, type Obj, type Values } from './helm-helpers.js';
import { expectAccess, type AccessCheck } from './helpers.js';

const CHART = join(ROOT, 'charts', 'internal-services-remote');
const CHART_CRDS = join(CHART, 'crds');
const IR_CRD_FILE = 'appstudio.redhat.com_internalrequests.yaml';
const SIGNING = join(ROOT, 'config', 'samples', 'kinds', 'signing');
/** The CLI of this same build, for `kinds render`. */
const CLI = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

const DEFINITION = parseYaml(readFileSync(join(SIGNING, 'definition.yaml'), 'utf8')) as { metadata: { name: string }; spec: RequestDefinitionSpec };
const SIGNING_NAMES = kindNames(DEFINITION.spec);
/** The sample kind as a values entry: group and kind, the plural left to the chart's default. */
const SIGNING_KIND = { group: DEFINITION.spec.group, kind: DEFINITION.spec.kind };
const SIGNING_RESOURCE = `${SIGNING_NAMES.plural}.${SIGNING_NAMES.group}`;
const SIGNING_CRD = join(SIGNING, 'remote', 'crd.yaml');

const NS = 'internal-services';
const CONTROLLER_SA = { namespace: NS, name: 'internal-services-controller' };
const TEAMS: Values = {
  kinds: [SIGNING_KIND],
  requesters: [
    { namespace: 'team-a', subjects: [{ kind: 'User', name: 'team-a-bot' }], kinds: [SIGNING_RESOURCE] },
    { namespace: 'team-b', subjects: [{ kind: 'User', name: 'team-b-bot' }], kinds: ['InternalRequest'] },
  ],
};

const tmp = mkdtempSync(join(tmpdir(), 'internal-services-helm-remote-test-'));
let helm: Helm;
let kubectlPath: string;
let env: Environment;
const kubectlOk = (args: string[], input?: string): Promise<string> => kubectlOkWith(kubectlPath, args, input);

async function render(values: Values, release = 'internal-services', namespace = NS): Promise<Obj[]> {
  return parseDocs(await helm.ok(['template', release, CHART, '--namespace', namespace, '--values', helm.valuesFile(values)]));
}

/** The fields of an RBAC object that grant something (labels and Helm's metadata aside). */
function grantOf(o: Obj): Obj {
  const { apiVersion, kind, metadata, ...rest } = o;
  return { apiVersion, kind, metadata: { name: metadata.name, ...(metadata.namespace ? { namespace: metadata.namespace } : {}) }, ...rest } as Obj;
}

/** Asserts the chart rendered each of `expected` (objects of renderKindRbac or of `kinds render`) with the same grant and at least its labels. */
function assertSameRbac(rendered: Obj[], expected: Obj[], what: string): void {
  assert.ok(expected.length > 0);
  for (const e of expected) {
    const h = find(rendered, e.kind, e.metadata.name);
    assert.deepEqual(grantOf(h), grantOf(e), `${e.kind}/${e.metadata.name} differs from ${what}`);
    for (const [k, v] of Object.entries(e.metadata.labels ?? {})) assert.equal(h.metadata.labels?.[k], v, `${e.kind}/${e.metadata.name} has label ${k}=${v} as ${what} has`);
  }
}

const USER_GROUPS = ['system:authenticated'];
const user = (name: string) => ({ user: name, groups: USER_GROUPS });
const CONTROLLER = { user: `system:serviceaccount:${CONTROLLER_SA.namespace}:${CONTROLLER_SA.name}`, groups: ['system:serviceaccounts', `system:serviceaccounts:${CONTROLLER_SA.namespace}`, 'system:authenticated'] };
const each = (verbs: string[], c: Omit<AccessCheck, 'verb'>): AccessCheck[] => verbs.map((verb) => ({ ...c, verb }));
const SR = { group: SIGNING_NAMES.group, resource: SIGNING_NAMES.plural };
const IR = { group: 'appstudio.redhat.com', resource: 'internalrequests' };

/**
 * RBAC changes reach the API server's authorizer through its informers, a
 * moment after the write: an assertion about rights just granted or taken is
 * retried for a few seconds.
 */
async function settled(check: () => Promise<void>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** A KubeConfig of the plane's admin impersonating `username` (kubeconfig `as:`): the apiserver authorizes each request as that user. */
function impersonating(plane: ControlPlane, username: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: plane.name, server: plane.url, caData: Buffer.from(plane.caPem).toString('base64'), skipTLSVerify: false }],
    users: [{ name: `admin-as-${username}`, token: plane.identities.admin.token, impersonateUser: username }],
    contexts: [{ name: `as-${username}`, cluster: plane.name, user: `admin-as-${username}` }],
    currentContext: `as-${username}`,
  });
  return kc;
}

/** The HTTP status of a create, and the API server's message when it refused. */
async function create(kc: KubeConfig, namespace: string, body: Obj): Promise<{ status: number; message: string }> {
  const [group, version] = body.apiVersion.split('/') as [string, string];
  const plural = body.kind === 'InternalRequest' ? 'internalrequests' : SIGNING_NAMES.plural;
  try {
    const r = await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObjectWithHttpInfo({ group, version, namespace, plural, body });
    return { status: r.httpStatusCode, message: '' };
  } catch (e) {
    if (!(e instanceof ApiException)) throw e;
    let message = String(e.body);
    try {
      message = (JSON.parse(String(e.body)) as { message?: string }).message ?? message;
    } catch {
      // not JSON: the body as it is
    }
    return { status: e.code, message };
  }
}

const signingRequest = (name: string): Obj => ({
  apiVersion: `${SIGNING_NAMES.group}/${SIGNING_NAMES.version}`,
  kind: SIGNING_NAMES.kind,
  metadata: { name },
  spec: { image: `quay.io/org/app@sha256:${'ab'.repeat(32)}`, signer: { identity: 'release@example.com', keyRef: 'release-key' } },
});
const internalRequest = (name: string): Obj => ({ apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name }, spec: { request: 'sign-image' } });

before(async () => {
  helm = new Helm(await installHelm(), tmp);
  // remote: helm install from zero; remote-2: from config/remote to the chart.
  env = await startEnvironment({ remotes: 2 });
  kubectlPath = join(env.assets.binDir, 'kubectl');
  console.log(`${(await helm.ok(['version', '--short'])).trim()}, kube-apiserver ${env.assets.kubernetesVersion}`);
});

after(async () => {
  await env?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

// ------------------------------------------------------------------ the chart

describe('the chart itself', () => {
  test('crds/ holds the InternalRequest CRD of config/crd/bases, byte for byte, and nothing else', () => {
    assert.deepEqual(readdirSync(CHART_CRDS), [IR_CRD_FILE], 'only the InternalRequest CRD (the other CRDs are the internal side\'s)');
    assert.ok(
      readFileSync(join(CHART_CRDS, IR_CRD_FILE)).equals(readFileSync(join(ROOT, 'config', 'crd', 'bases', IR_CRD_FILE))),
      `charts/internal-services-remote/crds/${IR_CRD_FILE} differs from config/crd/bases/${IR_CRD_FILE}: copy it again (npm run gen:crds does)`,
    );
  });

  test('helm lint --strict passes with the defaults and with kinds and requesters; the package holds crds/, the schema and the README', async () => {
    assert.match(await helm.ok(['lint', '--strict', CHART]), /1 chart\(s\) linted, 0 chart\(s\) failed/);
    assert.match(await helm.ok(['lint', '--strict', CHART, '--namespace', NS, '--values', helm.valuesFile(TEAMS)]), /0 chart\(s\) failed/);
    const pkgDir = join(tmp, 'package');
    await helm.ok(['package', CHART, '--destination', pkgDir]);
    const tgz = join(pkgDir, 'internal-services-remote-0.1.0.tgz');
    const listing = (await run('tar', ['-tzf', tgz])).stdout.split('\n');
    for (const f of ['Chart.yaml', 'values.yaml', 'values.schema.json', 'README.md', 'templates/NOTES.txt', `crds/${IR_CRD_FILE}`]) {
      assert.ok(listing.includes(`internal-services-remote/${f}`), `${f} in the package`);
    }
  });

  test('with the defaults it renders what config/remote installs (less the Namespace, the release\'s, and the CRDs, in crds/)', async () => {
    const kustomized = parseDocs(await kubectlOk(['kustomize', join(ROOT, 'config', 'remote')])).filter((o) => o.kind !== 'Namespace' && o.kind !== 'CustomResourceDefinition');
    const chart = await render({});
    assert.deepEqual(kindsOf(chart), kindsOf(kustomized));
    const normalize = (o: Obj): Obj => {
      const c = structuredClone(o);
      delete c.metadata.labels;
      return c;
    };
    for (const k of kustomized) assert.deepEqual(normalize(find(chart, k.kind, k.metadata.name)), normalize(k), `${k.kind}/${k.metadata.name} differs from config/remote`);
    for (const o of chart) assert.equal(o.metadata.labels?.['app.kubernetes.io/part-of'], 'internal-services', `${o.kind}/${o.metadata.name} is labelled part-of internal-services`);
  });
});

// ------------------------------------------------------------ typed kinds' RBAC

describe('the RBAC of a typed kind is what `internal-services kinds render --rbac` prints', () => {
  test(`the sample ${SIGNING_NAMES.kind}: the objects of renderKindRbac, and of config/samples/kinds/signing/remote/rbac.yaml`, async () => {
    const rendered = await render(TEAMS);
    const expected = renderKindRbac(DEFINITION.spec) as Obj[];
    assert.deepEqual(
      expected.map((o) => o.metadata.name),
      [`internal-services-${SIGNING_RESOURCE}-requester`, `internal-services-${SIGNING_RESOURCE}-controller`, `internal-services-${SIGNING_RESOURCE}-controller`],
    );
    assertSameRbac(rendered, expected, 'renderKindRbac');
    assertSameRbac(rendered, loadManifests(join(SIGNING, 'remote', 'rbac.yaml')) as unknown as Obj[], 'config/samples/kinds/signing/remote/rbac.yaml');
    // Nothing else of the kind's at cluster scope (the RoleBinding of team-a is the requesters').
    const ofKind = rendered.filter((o) => o.metadata.name.includes(SIGNING_RESOURCE) && o.kind !== 'RoleBinding');
    assert.deepEqual(kindsOf(ofKind), kindsOf(expected));
  });

  test('another release and namespace, a default and an explicit plural: the binding names this release\'s ServiceAccount, as `kinds render --controller` does', async () => {
    const kinds = [SIGNING_KIND, { group: 'scan.example.org', kind: 'VirusScan', plural: 'virusscanning' }, { group: 'dev.example.net', kind: 'Notary' }];
    const rendered = await render({ kinds }, 'prod', 'is-prod');
    const controller = { kind: 'ServiceAccount' as const, name: 'prod-internal-services-controller', namespace: 'is-prod' };
    for (const k of kinds) {
      const spec = k as RequestDefinitionSpec;
      assertSameRbac(rendered, renderKindRbac(spec, controller) as Obj[], `renderKindRbac of ${k.kind}`);
      const plural = kindNames(spec).plural;
      find(rendered, 'ClusterRole', `internal-services-${plural}.${k.group}-requester`);
    }
    find(rendered, 'ClusterRole', 'internal-services-notarys.dev.example.net-requester');
    find(rendered, 'ClusterRole', 'internal-services-virusscanning.scan.example.org-controller');
    // The CLI itself, from the sample definition and Pipeline.
    const r = await run(process.execPath, [CLI, 'kinds', 'render', '-f', join(SIGNING, 'definition.yaml'), '--pipeline', join(SIGNING, 'pipeline.yaml'), '--rbac', '--controller', 'is-prod/prod-internal-services-controller']);
    assert.equal(r.code, 0, r.stderr);
    const printed = parseDocs(r.stdout).filter((o) => o.kind !== 'CustomResourceDefinition');
    assert.deepEqual(printed.map((o) => o.kind), ['ClusterRole', 'ClusterRole', 'ClusterRoleBinding']);
    assertSameRbac(rendered, printed, '`internal-services kinds render --rbac`');
    const binding = find(rendered, 'ClusterRoleBinding', `internal-services-${SIGNING_RESOURCE}-controller`);
    assert.deepEqual(binding['subjects'], [{ kind: 'ServiceAccount', name: 'prod-internal-services-controller', namespace: 'is-prod' }]);
    // The InternalRequest objects follow the release name.
    for (const name of ['prod-internal-services-remote', 'prod-internal-services-requester']) find(rendered, 'ClusterRole', name);
    const sa = find(rendered, 'ServiceAccount', 'prod-internal-services-controller');
    assert.equal(sa.metadata.namespace, 'is-prod');
    assert.equal(find(rendered, 'Secret', 'prod-internal-services-controller-token').metadata.annotations?.['kubernetes.io/service-account.name'], 'prod-internal-services-controller');
  });
});

// ------------------------------------------------------------------ requesters

describe('requesters: one RoleBinding per namespace and kind', () => {
  test('the two teams: team-a-bot the SigningRequest kind in team-a, team-b-bot InternalRequests in team-b', async () => {
    const bindings = (await render(TEAMS)).filter((o) => o.kind === 'RoleBinding');
    assert.deepEqual(
      bindings.map((b) => ({ ns: b.metadata.namespace, name: b.metadata.name, role: b['roleRef'], subjects: b['subjects'] })),
      [
        { ns: 'team-a', name: `internal-services-${SIGNING_RESOURCE}-requester`, role: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `internal-services-${SIGNING_RESOURCE}-requester` }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'team-a-bot' }] },
        { ns: 'team-b', name: 'internal-services-requester', role: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'internal-services-requester' }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'team-b-bot' }] },
      ],
    );
  });

  test('entries naming the same namespace and kind share one binding; a ServiceAccount without namespace is one of the entry\'s', async () => {
    const rendered = await render({
      kinds: [SIGNING_KIND],
      requesters: [
        { namespace: 'team-c', subjects: [{ kind: 'ServiceAccount', name: 'release-pipeline' }, { kind: 'Group', name: 'team-c-admins' }], kinds: ['InternalRequest', SIGNING_RESOURCE] },
        { namespace: 'team-c', subjects: [{ kind: 'Group', name: 'team-c-admins' }, { kind: 'ServiceAccount', name: 'ci', namespace: 'tools' }], kinds: ['InternalRequest'] },
      ],
    });
    const bindings = rendered.filter((o) => o.kind === 'RoleBinding');
    assert.deepEqual(kindsOf(bindings), ['RoleBinding/internal-services-requester', `RoleBinding/internal-services-${SIGNING_RESOURCE}-requester`]);
    assert.deepEqual(find(bindings, 'RoleBinding', 'internal-services-requester')['subjects'], [
      { kind: 'ServiceAccount', name: 'release-pipeline', namespace: 'team-c' },
      { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'team-c-admins' },
      { kind: 'ServiceAccount', name: 'ci', namespace: 'tools' },
    ]);
    assert.deepEqual(find(bindings, 'RoleBinding', `internal-services-${SIGNING_RESOURCE}-requester`)['subjects'], [
      { kind: 'ServiceAccount', name: 'release-pipeline', namespace: 'team-c' },
      { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'team-c-admins' },
    ]);
  });

  const REFUSED: Array<[string, Values, RegExp]> = [
    ['a requester kind that is not in kinds', { requesters: [{ namespace: 'a', subjects: [{ kind: 'User', name: 'u' }], kinds: [SIGNING_RESOURCE] }] }, /requesters\[0\]\.kinds: "signingrequests\.signing\.example\.com" is neither "InternalRequest" nor the <plural>\.<group> of an entry of kinds/],
    ['a kind named by its Kind', { kinds: [SIGNING_KIND], requesters: [{ namespace: 'a', subjects: [{ kind: 'User', name: 'u' }], kinds: ['SigningRequest'] }] }, /name the kind by its resource, signingrequests\.signing\.example\.com/],
    ['the project\'s own kind as a typed kind', { kinds: [{ group: 'appstudio.redhat.com', kind: 'InternalRequest' }] }, /kinds\[0\]: InternalRequest of appstudio\.redhat\.com is the project's own kind/],
    ['a kind listed twice', { kinds: [SIGNING_KIND, { ...SIGNING_KIND, plural: SIGNING_NAMES.plural }] }, /kinds\[1\]: signingrequests\.signing\.example\.com is listed twice/],
    ['a group without a dot', { kinds: [{ group: 'signing', kind: 'SigningRequest' }] }, /\/kinds\/0\/group/],
    ['an unknown key of a kind', { kinds: [{ ...SIGNING_KIND, version: 'v1' }] }, /\/kinds\/0.*additional properties 'version'/],
    ['a lower-case Kind', { kinds: [{ group: 'signing.example.com', kind: 'signingRequest' }] }, /\/kinds\/0\/kind/],
    ['a requester without subjects', { requesters: [{ namespace: 'a', subjects: [], kinds: ['InternalRequest'] }] }, /\/requesters\/0\/subjects/],
    ['a subject of an unknown kind', { requesters: [{ namespace: 'a', subjects: [{ kind: 'user', name: 'u' }], kinds: ['InternalRequest'] }] }, /\/requesters\/0\/subjects\/0\/kind/],
    ['a User with a namespace', { requesters: [{ namespace: 'a', subjects: [{ kind: 'User', name: 'u', namespace: 'a' }], kinds: ['InternalRequest'] }] }, /\/requesters\/0\/subjects\/0\/namespace/],
    ['a ServiceAccount with the RBAC apiGroup', { requesters: [{ namespace: 'a', subjects: [{ kind: 'ServiceAccount', name: 's', apiGroup: 'rbac.authorization.k8s.io' }], kinds: ['InternalRequest'] }] }, /\/requesters\/0\/subjects\/0\/apiGroup/],
    ['an unknown top-level value', { kind: [SIGNING_KIND] }, /additional properties 'kind' not allowed/],
  ];
  for (const [what, values, message] of REFUSED) {
    test(`refused: ${what}`, async () => {
      const r = await helm.run(['template', 'internal-services', CHART, '--namespace', NS, '--values', helm.valuesFile(values)]);
      assert.notEqual(r.code, 0, `rendered:\n${r.stdout}`);
      assert.match(r.stderr, message);
    });
  }
});

// ------------------------------------------------------ on a real apiserver

describe('installed with helm on a bare apiserver: RBAC as the API server decides it', () => {
  let plane: ControlPlane;
  let admin: KubeConfig;
  const kc = () => ['--kubeconfig', plane.identities.admin.kubeconfigPath];

  before(async () => {
    plane = env.remote;
    admin = plane.identities.admin.kubeConfig();
    // The teams' namespaces exist before their RoleBindings do.
    for (const ns of ['team-a', 'team-b']) await ensureNamespace(admin, ns);
  });

  test('helm install from zero: the InternalRequest CRD from crds/, then the release; the notes name the kind whose CRD is missing', async () => {
    const out = await helm.ok(['install', 'internal-services', CHART, ...kc(), '--namespace', NS, '--create-namespace', '--values', helm.valuesFile(TEAMS)]);
    assert.match(out, /STATUS: deployed/);
    assert.match(out, new RegExp(`no CRD ${SIGNING_RESOURCE.replace(/\./g, '\\.')} found on the cluster yet: internal-services kinds render`));
    assert.match(out, /Secret internal-services-controller-token/);
    assert.match(out, /team-a: signingrequests\.signing\.example\.com for User team-a-bot/);
    await waitForCrds(admin, ['internalrequests.appstudio.redhat.com']);
    const manifest = parseDocs(await helm.ok(['get', 'manifest', 'internal-services', ...kc(), '--namespace', NS]));
    assert.deepEqual(kindsOf(manifest), kindsOf(await render(TEAMS)));
    const secret = await admin.makeApiClient(CoreV1Api).readNamespacedSecret({ namespace: NS, name: 'internal-services-controller-token' });
    assert.equal(secret.type, 'kubernetes.io/service-account-token');
    assert.equal(secret.metadata?.annotations?.['kubernetes.io/service-account.name'], CONTROLLER_SA.name);
    // The typed kind's CRD, as `kinds render` generated it for the sample (not the chart's).
    await applyManifests(admin, loadManifests(SIGNING_CRD));
    await waitForCrds(admin, [SIGNING_RESOURCE]);
    // The release's RoleBindings are in force before the checks below.
    await settled(() => expectAccess(admin, '', user('team-a-bot'), true, [{ verb: 'create', ...SR, namespace: 'team-a' }]));
  });

  test('SubjectAccessReviews: team-a-bot may request SigningRequests in team-a only; not InternalRequests, not in team-b', async () => {
    const where = `remote apiserver: `;
    await expectAccess(admin, where, user('team-a-bot'), true, each(['create', 'get', 'list', 'watch', 'delete', 'patch'], { ...SR, namespace: 'team-a' }));
    await expectAccess(admin, where, user('team-a-bot'), false, [
      ...each(['create', 'get', 'list'], { ...IR, namespace: 'team-a' }),
      ...each(['create', 'get', 'list'], { ...SR, namespace: 'team-b' }),
      { verb: 'list', ...SR },
      ...each(['update', 'patch'], { ...SR, subresource: 'status', namespace: 'team-a' }),
      ...each(['update'], { ...SR, namespace: 'team-a' }),
    ]);
  });

  test('SubjectAccessReviews: team-b-bot the reverse: InternalRequests in team-b, no SigningRequests anywhere', async () => {
    const where = `remote apiserver: `;
    await expectAccess(admin, where, user('team-b-bot'), true, each(['create', 'get', 'list', 'watch', 'delete'], { ...IR, namespace: 'team-b' }));
    await expectAccess(admin, where, user('team-b-bot'), false, [
      ...each(['create', 'get', 'list'], { ...SR, namespace: 'team-b' }),
      ...each(['create', 'get', 'list'], { ...SR, namespace: 'team-a' }),
      ...each(['create', 'get', 'list'], { ...IR, namespace: 'team-a' }),
      ...each(['update', 'patch'], { ...IR, subresource: 'status', namespace: 'team-b' }),
    ]);
  });

  test('SubjectAccessReviews: the controller may read SigningRequests and InternalRequests cluster-wide and write their status; nobody else the chart grants anything may write status', async () => {
    const where = `remote apiserver: `;
    await expectAccess(admin, where, CONTROLLER, true, [
      ...each(['get', 'list', 'watch'], SR),
      ...each(['get', 'update', 'patch'], { ...SR, subresource: 'status' }),
      ...each(['get', 'update', 'patch'], { ...SR, subresource: 'status', namespace: 'team-a' }),
      ...each(['get', 'list', 'watch'], IR),
      ...each(['get', 'update', 'patch'], { ...IR, subresource: 'status' }),
      ...each(['create', 'patch'], { resource: 'events', namespace: 'team-a' }),
    ]);
    await expectAccess(admin, where, CONTROLLER, false, [
      ...each(['create', 'update', 'delete'], { ...SR, namespace: 'team-a' }),
      ...each(['create', 'update', 'delete'], { ...IR, namespace: 'team-b' }),
      { verb: 'get', resource: 'secrets', namespace: 'team-a' },
    ]);
    // Every identity the chart names, and ordinary ones, for the status of either kind.
    const others = [
      user('team-a-bot'),
      user('team-b-bot'),
      user('someone'),
      { user: 'system:serviceaccount:team-a:default', groups: ['system:serviceaccounts', 'system:serviceaccounts:team-a', 'system:authenticated'] },
      { user: 'system:serviceaccount:internal-services:default', groups: ['system:serviceaccounts', 'system:serviceaccounts:internal-services', 'system:authenticated'] },
    ];
    for (const who of others) {
      await expectAccess(admin, where, who, false, [
        ...each(['update', 'patch'], { ...SR, subresource: 'status', namespace: 'team-a' }),
        ...each(['update', 'patch'], { ...SR, subresource: 'status', namespace: 'team-b' }),
        ...each(['update', 'patch'], { ...IR, subresource: 'status', namespace: 'team-b' }),
      ]);
    }
    // And the release's own bindings: the controller's ServiceAccount is the only subject of a role that grants a status.
    const manifest = parseDocs(await helm.ok(['get', 'manifest', 'internal-services', ...kc(), '--namespace', NS]));
    const statusRoles = new Set(
      manifest.filter((o) => o.kind === 'ClusterRole' && (o['rules'] as Array<{ resources: string[] }>).some((r) => r.resources.some((x) => x.endsWith('/status')))).map((o) => o.metadata.name),
    );
    const statusSubjects = manifest.filter((o) => o.kind.endsWith('Binding') && statusRoles.has(o['roleRef'].name)).flatMap((o) => o['subjects'] as unknown[]);
    assert.deepEqual(new Set(statusSubjects.map((s) => JSON.stringify(s))), new Set([JSON.stringify({ kind: 'ServiceAccount', name: CONTROLLER_SA.name, namespace: NS })]));
  });

  test('real requests, impersonated: team-b-bot creating a SigningRequest is forbidden (403), team-a-bot creating one in team-a is created (201)', async () => {
    const teamA = impersonating(plane, 'team-a-bot');
    const teamB = impersonating(plane, 'team-b-bot');
    // The API server authenticates each as the user impersonated.
    for (const [kcOf, name] of [[teamA, 'team-a-bot'], [teamB, 'team-b-bot']] as const) {
      const review = await kcOf.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({ body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } });
      assert.equal(review.status?.userInfo?.username, name);
    }

    const denied = await create(teamB, 'team-b', signingRequest('by-team-b'));
    assert.equal(denied.status, 403, denied.message);
    assert.match(denied.message, /User "team-b-bot" cannot create resource "signingrequests" in API group "signing\.example\.com" in the namespace "team-b"/);
    const deniedInA = await create(teamB, 'team-a', signingRequest('by-team-b'));
    assert.equal(deniedInA.status, 403, deniedInA.message);

    const created = await create(teamA, 'team-a', signingRequest('by-team-a'));
    assert.equal(created.status, 201, created.message);
    const deniedB = await create(teamA, 'team-b', signingRequest('by-team-a'));
    assert.equal(deniedB.status, 403, deniedB.message);

    // InternalRequests: the reverse.
    assert.equal((await create(teamB, 'team-b', internalRequest('by-team-b'))).status, 201);
    const irDenied = await create(teamA, 'team-a', internalRequest('by-team-a'));
    assert.equal(irDenied.status, 403, irDenied.message);
    assert.match(irDenied.message, /User "team-a-bot" cannot create resource "internalrequests"/);
  });

  test('real requests: the controller (its own ServiceAccount token) lists SigningRequests cluster-wide and writes their status; team-a-bot cannot write it', async () => {
    const controller = plane.identities.controller;
    assert.equal(controller.username, CONTROLLER.user, 'the local apiserver\'s controller identity is the chart\'s ServiceAccount');
    const api = controller.kubeConfig().makeApiClient(CustomObjectsApi);
    const list = (await api.listClusterCustomObject({ group: SIGNING_NAMES.group, version: SIGNING_NAMES.version, plural: SIGNING_NAMES.plural })) as { items: Obj[] };
    assert.deepEqual(list.items.map((o) => `${o.metadata.namespace}/${o.metadata.name}`), ['team-a/by-team-a']);

    const ref = { group: SIGNING_NAMES.group, version: SIGNING_NAMES.version, plural: SIGNING_NAMES.plural, namespace: 'team-a', name: 'by-team-a' };
    const withStatus = (o: Obj, reason: string): Obj => ({
      ...o,
      status: { conditions: [{ type: 'Succeeded', status: 'Unknown', reason, message: 'set by the test', lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }] },
    });

    const asTeamA = impersonating(plane, 'team-a-bot').makeApiClient(CustomObjectsApi);
    const seen = (await asTeamA.getNamespacedCustomObject(ref)) as Obj;
    await assert.rejects(asTeamA.replaceNamespacedCustomObjectStatus({ ...ref, body: withStatus(seen, 'Forged') }), (e: unknown) => e instanceof ApiException && e.code === 403);

    const current = (await api.getNamespacedCustomObject(ref)) as Obj;
    const updated = (await api.replaceNamespacedCustomObjectStatus({ ...ref, body: withStatus(current, 'Running') })) as Obj;
    assert.equal(updated['status'].conditions[0].reason, 'Running');
    await assert.rejects(api.deleteNamespacedCustomObject(ref), (e: unknown) => e instanceof ApiException && e.code === 403, 'the controller cannot delete requests (no TTL rights in the chart)');
  });

  test('helm upgrade moves the grants with the values: team-a loses the kind, team-b gains it; the notes no longer miss the CRD; a deleted token Secret is made again', async () => {
    // Revoking the token (README.md): delete the Secret; the next upgrade makes a new one.
    const core = admin.makeApiClient(CoreV1Api);
    const oldUid = (await core.readNamespacedSecret({ namespace: NS, name: 'internal-services-controller-token' })).metadata?.uid;
    await core.deleteNamespacedSecret({ namespace: NS, name: 'internal-services-controller-token' });
    const moved = { kinds: [SIGNING_KIND], requesters: [{ namespace: 'team-b', subjects: [{ kind: 'User', name: 'team-b-bot' }], kinds: ['InternalRequest', SIGNING_RESOURCE] }] };
    const out = await helm.ok(['upgrade', 'internal-services', CHART, ...kc(), '--namespace', NS, '--values', helm.valuesFile(moved)]);
    assert.doesNotMatch(out, /no CRD/);
    const token = await core.readNamespacedSecret({ namespace: NS, name: 'internal-services-controller-token' });
    assert.notEqual(token.metadata?.uid, oldUid, 'a new token Secret');
    assert.equal(token.metadata?.annotations?.['kubernetes.io/service-account.name'], CONTROLLER_SA.name);
    const teamA = impersonating(plane, 'team-a-bot');
    const teamB = impersonating(plane, 'team-b-bot');
    let attempt = 0;
    await settled(async () => assert.equal((await create(teamA, 'team-a', signingRequest(`after-upgrade-${++attempt}`))).status, 403));
    await settled(async () => assert.equal((await create(teamB, 'team-b', signingRequest('after-upgrade'))).status, 201));
    const left = await kubectlOk([...kc(), '-n', 'team-a', 'get', 'rolebindings', '-o', 'name']);
    assert.equal(left.trim(), '', 'the RoleBinding of team-a is gone');
  });

  test('helm uninstall removes the RBAC and the ServiceAccount; the CRDs and the requests stay', async () => {
    await helm.ok(['uninstall', 'internal-services', ...kc(), '--namespace', NS, '--wait']);
    const cluster = await kubectlOk([...kc(), 'get', 'clusterroles,clusterrolebindings', '-o', 'name']);
    assert.doesNotMatch(cluster, /internal-services/);
    const left = await kubectlOk([...kc(), 'get', 'rolebindings,serviceaccounts,secrets', '-A', '-l', 'app.kubernetes.io/instance=internal-services', '-o', 'name']);
    assert.equal(left.trim(), '');
    await settled(() => expectAccess(admin, 'after uninstall: ', CONTROLLER, false, [{ verb: 'list', ...SR }, { verb: 'list', ...IR }]));
    const crds = await kubectlOk([...kc(), 'get', 'crds', '-o', 'name']);
    assert.match(crds, /internalrequests\.appstudio\.redhat\.com/);
    assert.match(crds, /signingrequests\.signing\.example\.com/);
    const requests = await kubectlOk([...kc(), 'get', SIGNING_RESOURCE, '-A', '-o', 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {end}']);
    assert.deepEqual(requests.trim().split(' ').sort(), ['team-a/by-team-a', 'team-b/after-upgrade']);
  });
});

describe('from config/remote and `kinds render --rbac` to the chart, as README.md says: adopt, keep the token', () => {
  let plane: ControlPlane;
  let admin: KubeConfig;
  const kc = () => ['--kubeconfig', plane.identities.admin.kubeconfigPath];
  const RELEASE_ANNOTATIONS = ['meta.helm.sh/release-name=internal-services', `meta.helm.sh/release-namespace=${NS}`];
  const MANAGED = 'app.kubernetes.io/managed-by=Helm';

  before(async () => {
    plane = env.remotes[1]!;
    admin = plane.identities.admin.kubeConfig();
  });

  test('the kustomize way first, then the README\'s adoption steps, then helm install: same token Secret, same rights', async () => {
    await kubectlOk([...kc(), 'apply', '--server-side', '-k', join(ROOT, 'config', 'remote')]);
    await kubectlOk([...kc(), 'apply', '--server-side', '-f', SIGNING_CRD, '-f', join(SIGNING, 'remote', 'rbac.yaml')]);
    await waitForCrds(admin, [SIGNING_RESOURCE]);
    const core = admin.makeApiClient(CoreV1Api);
    const tokenUid = (await core.readNamespacedSecret({ namespace: NS, name: 'internal-services-controller-token' })).metadata?.uid;
    assert.ok(tokenUid);
    const values = { kinds: [SIGNING_KIND] };

    // Helm will not take over what it did not make.
    const refused = await helm.run(['install', 'internal-services', CHART, ...kc(), '--namespace', NS, '--values', helm.valuesFile(values)]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /exists and cannot be imported into the current release/);

    // The README's steps.
    const namespaced = ['serviceaccount/internal-services-controller', 'secret/internal-services-controller-token'];
    const clusterScoped = [
      'clusterrole/internal-services-remote',
      'clusterrolebinding/internal-services-remote',
      'clusterrole/internal-services-requester',
      `clusterrole/internal-services-${SIGNING_RESOURCE}-requester`,
      `clusterrole/internal-services-${SIGNING_RESOURCE}-controller`,
      `clusterrolebinding/internal-services-${SIGNING_RESOURCE}-controller`,
    ];
    await kubectlOk([...kc(), '-n', NS, 'annotate', '--overwrite', ...namespaced, ...RELEASE_ANNOTATIONS]);
    await kubectlOk([...kc(), '-n', NS, 'label', '--overwrite', ...namespaced, MANAGED]);
    await kubectlOk([...kc(), 'annotate', '--overwrite', ...clusterScoped, ...RELEASE_ANNOTATIONS]);
    await kubectlOk([...kc(), 'label', '--overwrite', ...clusterScoped, MANAGED]);
    const out = await helm.ok(['install', 'internal-services', CHART, ...kc(), '--namespace', NS, '--values', helm.valuesFile(values)]);
    assert.match(out, /STATUS: deployed/);
    assert.doesNotMatch(out, /no CRD/);

    assert.equal((await core.readNamespacedSecret({ namespace: NS, name: 'internal-services-controller-token' })).metadata?.uid, tokenUid, 'the same token Secret: the controller\'s kubeconfig stays valid');
    const manifest = parseDocs(await helm.ok(['get', 'manifest', 'internal-services', ...kc(), '--namespace', NS]));
    assert.deepEqual(kindsOf(manifest), kindsOf(await render(values)));
    await expectAccess(admin, 'after the move: ', CONTROLLER, true, [...each(['list', 'watch'], SR), { verb: 'update', ...SR, subresource: 'status' }, ...each(['list', 'watch'], IR)]);
    // From now on the release owns them: an upgrade without the kind removes its RBAC. (An
    // empty values file would not do: with no values at all, helm upgrade reuses the last ones.)
    await helm.ok(['upgrade', 'internal-services', CHART, ...kc(), '--namespace', NS, '--values', helm.valuesFile({ kinds: [] })]);
    await settled(() => expectAccess(admin, 'after an upgrade without the kind: ', CONTROLLER, false, [{ verb: 'list', ...SR }]));
    await expectAccess(admin, 'after an upgrade without the kind: ', CONTROLLER, true, [{ verb: 'list', ...IR }]);
  });
});
