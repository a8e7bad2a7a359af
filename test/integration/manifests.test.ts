/**
 * The deployment manifests under config/: config/default (internal cluster)
 * and config/remote (remote cluster) render with `kubectl kustomize`, are
 * accepted by real apiservers (server-side dry-run, then applied for real),
 * and their RBAC grants the controller what it needs and nothing more,
 * checked with SubjectAccessReviews against the live authorizer.
 */
import { expectAccess as expectAccessOn, type AccessCheck } from './helpers.js';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { RUNTIME_NODE_FLAGS } from '../../bench/controller-process.js';
import { repoRoot } from '../../src/api/crd-render.js';
import { CONTROLLER_NAMESPACE, CONTROLLER_USERNAME, startEnvironment, type Environment, ensureNamespace } from '../../src/localenv/index.js';

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; [k: string]: unknown };

const CONTROLLER_GROUPS = ['system:serviceaccounts', `system:serviceaccounts:${CONTROLLER_NAMESPACE}`, 'system:authenticated'];
const REQUESTER = { user: 'release-pipeline', groups: ['system:authenticated'] };
const REQUESTER_NS = 'managed-team-1-tenant';
const OTHER_NS = 'some-other-namespace';

let env: Environment;
let kubectlPath: string;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function kubectl(args: string[], input?: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const p = spawn(kubectlPath, args, { cwd: repoRoot(), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, stdout, stderr }));
    p.stdin.end(input ?? '');
  });
}

async function kubectlOk(args: string[], input?: string): Promise<string> {
  const r = await kubectl(args, input);
  assert.equal(r.code, 0, `kubectl ${args.join(' ')} failed:\n${r.stderr}\n${r.stdout}`);
  return r.stdout;
}

const rendered = new Map<string, { yaml: string; objects: Obj[] }>();

async function render(dir: string): Promise<{ yaml: string; objects: Obj[] }> {
  const cached = rendered.get(dir);
  if (cached) return cached;
  const yaml = await kubectlOk(['kustomize', dir]);
  const objects = parseAllDocuments(yaml).map((d) => d.toJS() as Obj).filter(Boolean);
  const r = { yaml, objects };
  rendered.set(dir, r);
  return r;
}

function find(objects: Obj[], kind: string, name: string): Obj {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  assert.ok(o, `${kind} ${name} not rendered; have: ${objects.map((x) => `${x.kind}/${x.metadata.name}`).join(', ')}`);
  return o;
}

/** Applies YAML with the admin kubeconfig of a cluster; dryRun uses the server-side dry run. */
async function apply(cluster: 'internal' | 'remote', yaml: string, dryRun: boolean): Promise<string> {
  const kubeconfig = env[cluster].identities.admin.kubeconfigPath;
  const args = ['--kubeconfig', kubeconfig, 'apply', '--server-side', '--field-manager=manifests-test', '-f', '-'];
  if (dryRun) args.push('--dry-run=server');
  return kubectlOk(args, yaml);
}

type Check = AccessCheck;

async function expectAccess(cluster: 'internal' | 'remote', who: { user: string; groups: string[] }, expected: boolean, checks: Check[]): Promise<void> {
  await expectAccessOn(env[cluster].identities.admin.kubeConfig(), `${cluster}: `, who, expected, checks);
}

function each(verbs: string[], c: Omit<Check, 'verb'>): Check[] {
  return verbs.map((verb) => ({ ...c, verb }));
}

const controller = { user: CONTROLLER_USERNAME, groups: CONTROLLER_GROUPS };
const NS = CONTROLLER_NAMESPACE;
const TEKTON = 'tekton.dev';
const APPSTUDIO = 'appstudio.redhat.com';

before(async () => {
  env = await startEnvironment();
  kubectlPath = join(env.assets.binDir, 'kubectl');
});

after(async () => {
  await env?.stop();
});

describe('config/default (internal cluster)', () => {
  test('renders the namespace, CRDs, RBAC and the Deployment', async () => {
    const { objects } = await render('config/default');
    const kinds = objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();
    assert.deepEqual(kinds, [
      'ClusterRole/internal-services-approver',
      'ClusterRole/internal-services-controller',
      'ClusterRoleBinding/internal-services-controller',
      'CustomResourceDefinition/internalrequestapprovals.appstudio.redhat.com',
      'CustomResourceDefinition/internalrequests.appstudio.redhat.com',
      'CustomResourceDefinition/internalservicesconfigs.appstudio.redhat.com',
      'CustomResourceDefinition/requestdefinitions.appstudio.redhat.com',
      'Deployment/internal-services-controller',
      'Namespace/internal-services',
      'Role/internal-services-controller',
      'RoleBinding/internal-services-controller',
      'Service/internal-services-controller-metrics',
      'ServiceAccount/internal-services-controller',
      'ValidatingAdmissionPolicy/internal-services-approvals',
      'ValidatingAdmissionPolicyBinding/internal-services-approvals',
    ]);
    const clusterScoped = ['Namespace', 'CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'];
    for (const o of objects) {
      if (!clusterScoped.includes(o.kind)) assert.equal(o.metadata.namespace, NS, `${o.kind}/${o.metadata.name}`);
    }
  });

  test('the Deployment runs the controller locked down, with the remote kubeconfig, probes and metrics', async () => {
    const { objects } = await render('config/default');
    const d = find(objects, 'Deployment', 'internal-services-controller') as unknown as {
      spec: { template: { spec: Record<string, any> } };
    };
    const pod = d.spec.template.spec;
    assert.equal(pod.serviceAccountName, 'internal-services-controller');
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.equal(pod.securityContext.seccompProfile.type, 'RuntimeDefault');
    const [c] = pod.containers;
    assert.deepEqual([...c.command, ...c.args], [
      'node', ...RUNTIME_NODE_FLAGS, 'dist/bundle/internal-services.mjs', 'controller',
      '--git-cache-dir=/var/cache/internal-services/git',
      '--remote-kubeconfig=/etc/internal-services/remote/kubeconfig',
      '--leader-elect', '--metrics-bind-address=:8080', '--health-probe-bind-address=:8081',
    ]);
    assert.equal(c.securityContext.readOnlyRootFilesystem, true);
    assert.equal(c.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']);
    assert.ok(c.resources.requests && c.resources.limits);
    const envVars = Object.fromEntries((c.env as Array<{ name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }>).map((e) => [e.name, e.value ?? e.valueFrom?.fieldRef?.fieldPath]));
    assert.deepEqual(envVars, { MALLOC_ARENA_MAX: '2', POD_NAMESPACE: 'metadata.namespace', POD_NAME: 'metadata.name' });
    const ports = Object.fromEntries((c.ports as Array<{ name: string; containerPort: number }>).map((p) => [p.name, p.containerPort]));
    assert.deepEqual(ports, { metrics: 8080, health: 8081 });
    assert.deepEqual([c.livenessProbe.httpGet.path, c.livenessProbe.httpGet.port], ['/healthz', 'health']);
    assert.deepEqual([c.readinessProbe.httpGet.path, c.readinessProbe.httpGet.port], ['/readyz', 'health']);
    const mount = (c.volumeMounts as Array<{ name: string; mountPath: string; readOnly?: boolean }>).find((m) => m.mountPath === '/etc/internal-services/remote');
    assert.ok(mount?.readOnly, 'remote kubeconfig mounted read-only');
    const vol = (pod.volumes as Array<{ name: string; secret?: { secretName: string; items?: Array<{ key: string; path: string }> } }>).find((v) => v.name === mount.name);
    assert.equal(vol?.secret?.secretName, 'internal-services-remote-kubeconfig');
    assert.deepEqual(vol?.secret?.items, [{ key: 'kubeconfig', path: 'kubeconfig' }]);
    // The commit checks' clones: a volume of their own, not the 16Mi /tmp,
    // above --source-check-cache-size (1Gi) by what a fetch may overshoot
    // between two size checks.
    const cache = (c.volumeMounts as Array<{ name: string; mountPath: string }>).find((m) => m.mountPath === '/var/cache/internal-services/git');
    const cacheVol = (pod.volumes as Array<{ name: string; emptyDir?: { sizeLimit?: string } }>).find((v) => v.name === cache?.name);
    assert.equal(cacheVol?.emptyDir?.sizeLimit, '1536Mi');
  });

  test('is accepted by the internal apiserver (server-side dry run), then applied', async () => {
    const { yaml } = await render('config/default');
    // A dry run creates nothing, so the namespace the other objects go into must exist already.
    await ensureNamespace(env.internal.identities.admin.kubeConfig(), NS);
    const out = await apply('internal', yaml, true);
    assert.match(out, /deployment\.apps\/internal-services-controller serverside-applied \(server dry run\)/);
    await apply('internal', yaml, false);
    // Applying twice changes nothing and is not refused.
    await apply('internal', yaml, false);
  });

  test('the controller may do what it needs on the internal cluster, only in its namespace', async () => {
    await expectAccess('internal', controller, true, [
      ...each(['get', 'list', 'watch'], { group: TEKTON, resource: 'pipelines', namespace: NS }),
      ...each(['get', 'list', 'watch'], { group: TEKTON, resource: 'tasks', namespace: NS }),
      ...each(['create', 'get', 'list', 'watch', 'delete'], { group: 'resolution.tekton.dev', resource: 'resolutionrequests', namespace: NS }),
      ...each(['create', 'get', 'list', 'watch', 'delete'], { group: APPSTUDIO, resource: 'internalrequestapprovals', namespace: NS }),
      { verb: 'create', group: 'authorization.k8s.io', resource: 'subjectaccessreviews' },
      { verb: 'get', group: 'admissionregistration.k8s.io', resource: 'validatingadmissionpolicies', name: 'internal-services-approvals' },
      ...each(['get', 'list', 'watch'], { group: APPSTUDIO, resource: 'internalservicesconfigs', namespace: NS }),
      ...each(['create', 'get', 'list', 'watch', 'patch', 'delete'], { group: TEKTON, resource: 'pipelineruns', namespace: NS }),
      { verb: 'get', group: TEKTON, resource: 'taskruns', namespace: NS },
      ...each(['get', 'create', 'update'], { group: 'coordination.k8s.io', resource: 'leases', namespace: NS }),
      ...each(['create', 'patch'], { resource: 'events', namespace: NS }),
      // The versions of Tekton Results and Chains: their info ConfigMaps, by name, wherever they are.
      ...['tekton-pipelines', 'tekton-chains', 'openshift-pipelines', OTHER_NS].flatMap((namespace) => [
        { verb: 'get', resource: 'configmaps', namespace, name: 'tekton-results-info' },
        { verb: 'get', resource: 'configmaps', namespace, name: 'chains-info' },
      ]),
      // The Tekton settings (default-resolver-type, the resolvers' feature flags): by name, wherever Tekton is.
      ...['tekton-pipelines', 'tekton-pipelines-resolvers', 'openshift-pipelines'].flatMap((namespace) => [
        { verb: 'get', resource: 'configmaps', namespace, name: 'config-defaults' },
        { verb: 'get', resource: 'configmaps', namespace, name: 'resolvers-feature-flags' },
      ]),
    ]);
  });

  test('the controller is DENIED everything else on the internal cluster', async () => {
    await expectAccess('internal', controller, false, [
      // Secrets and ConfigMaps: none at all.
      ...each(['get', 'list', 'watch'], { resource: 'secrets', namespace: NS }),
      { verb: 'get', resource: 'secrets', namespace: OTHER_NS },
      { verb: 'list', resource: 'secrets' },
      ...each(['get', 'list', 'create', 'update'], { resource: 'configmaps', namespace: NS }),
      // Of the info ConfigMaps only get, and no other ConfigMap (pipelines-info is granted by Tekton's own Role, not by us).
      ...each(['list', 'watch', 'update', 'patch', 'delete'], { resource: 'configmaps', namespace: 'tekton-chains', name: 'chains-info' }),
      ...each(['update', 'delete'], { resource: 'configmaps', namespace: 'tekton-pipelines', name: 'tekton-results-info' }),
      { verb: 'get', resource: 'configmaps', namespace: 'tekton-pipelines', name: 'pipelines-info' },
      { verb: 'get', resource: 'configmaps', namespace: 'tekton-chains', name: 'chains-config' },
      // Of Tekton's settings only get, and none of its other ConfigMaps.
      ...each(['list', 'watch', 'update', 'patch', 'delete'], { resource: 'configmaps', namespace: 'tekton-pipelines', name: 'config-defaults' }),
      ...each(['update', 'delete'], { resource: 'configmaps', namespace: 'tekton-pipelines-resolvers', name: 'resolvers-feature-flags' }),
      { verb: 'get', resource: 'configmaps', namespace: 'tekton-pipelines', name: 'feature-flags' },
      { verb: 'get', resource: 'configmaps', namespace: 'tekton-pipelines-resolvers', name: 'git-resolver-config' },
      { verb: 'list', resource: 'configmaps' },
      // PipelineRuns only in its own namespace.
      ...each(['create', 'get', 'list', 'delete'], { group: TEKTON, resource: 'pipelineruns', namespace: OTHER_NS }),
      { verb: 'list', group: TEKTON, resource: 'pipelineruns' },
      { verb: 'update', group: TEKTON, resource: 'pipelineruns', namespace: NS },
      { verb: 'update', group: TEKTON, resource: 'pipelineruns', subresource: 'status', namespace: NS },
      // Pipelines and the config are read-only, and only in its namespace.
      ...each(['create', 'update', 'patch', 'delete'], { group: TEKTON, resource: 'pipelines', namespace: NS }),
      { verb: 'get', group: TEKTON, resource: 'pipelines', namespace: OTHER_NS },
      ...each(['create', 'update', 'patch', 'delete'], { group: APPSTUDIO, resource: 'internalservicesconfigs', namespace: NS }),
      ...each(['create', 'update', 'delete'], { group: TEKTON, resource: 'taskruns', namespace: NS }),
      ...each(['create', 'update', 'delete'], { group: TEKTON, resource: 'tasks', namespace: NS }),
      { verb: 'get', group: TEKTON, resource: 'tasks', namespace: OTHER_NS },
      // ResolutionRequests only in its namespace, and never their status.
      ...each(['create', 'get', 'list'], { group: 'resolution.tekton.dev', resource: 'resolutionrequests', namespace: OTHER_NS }),
      { verb: 'update', group: 'resolution.tekton.dev', resource: 'resolutionrequests', subresource: 'status', namespace: NS },
      // Approvals: it makes them, but never decides them, and cannot change the policy that guards them.
      ...each(['update', 'patch'], { group: APPSTUDIO, resource: 'internalrequestapprovals', subresource: 'status', namespace: NS }),
      { verb: 'approve', group: APPSTUDIO, resource: 'rules', name: 'signing', namespace: NS },
      ...each(['update', 'delete'], { group: 'admissionregistration.k8s.io', resource: 'validatingadmissionpolicies', name: 'internal-services-approvals' }),
      { verb: 'get', group: 'admissionregistration.k8s.io', resource: 'validatingadmissionpolicies', name: 'other' },
      // No Pods, no ServiceAccount tokens, no RBAC, no leases elsewhere.
      ...each(['create', 'get', 'list'], { resource: 'pods', namespace: NS }),
      { verb: 'create', resource: 'pods', subresource: 'exec', namespace: NS },
      { verb: 'create', resource: 'serviceaccounts', subresource: 'token', namespace: NS },
      { verb: 'impersonate', resource: 'users' },
      ...each(['create', 'bind', 'escalate'], { group: 'rbac.authorization.k8s.io', resource: 'roles', namespace: NS }),
      { verb: 'create', group: 'rbac.authorization.k8s.io', resource: 'rolebindings', namespace: NS },
      ...each(['get', 'create', 'update'], { group: 'coordination.k8s.io', resource: 'leases', namespace: OTHER_NS }),
      { verb: 'create', resource: 'events', namespace: OTHER_NS },
      { verb: 'list', resource: 'namespaces' },
    ]);
  });
});

describe('config/remote (remote cluster)', () => {
  test('renders the namespace, CRDs, the two ClusterRoles and the controller ServiceAccount', async () => {
    const { objects } = await render('config/remote');
    const kinds = objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();
    assert.deepEqual(kinds, [
      'ClusterRole/internal-services-remote',
      'ClusterRole/internal-services-requester',
      'ClusterRoleBinding/internal-services-remote',
      'CustomResourceDefinition/internalrequestapprovals.appstudio.redhat.com',
      'CustomResourceDefinition/internalrequests.appstudio.redhat.com',
      'CustomResourceDefinition/internalservicesconfigs.appstudio.redhat.com',
      'CustomResourceDefinition/requestdefinitions.appstudio.redhat.com',
      'Namespace/internal-services',
      'Secret/internal-services-controller-token',
      'ServiceAccount/internal-services-controller',
    ]);
    const token = find(objects, 'Secret', 'internal-services-controller-token') as Obj & { type: string; metadata: { annotations?: Record<string, string> } };
    assert.equal(token.type, 'kubernetes.io/service-account-token');
    assert.equal(token.metadata.annotations?.['kubernetes.io/service-account.name'], 'internal-services-controller');
  });

  test('is accepted by the remote apiserver (server-side dry run), then applied', async () => {
    const { yaml } = await render('config/remote');
    await ensureNamespace(env.remote.identities.admin.kubeConfig(), NS);
    const out = await apply('remote', yaml, true);
    assert.match(out, /clusterrole\.rbac\.authorization\.k8s\.io\/internal-services-remote serverside-applied \(server dry run\)/);
    await apply('remote', yaml, false);
    // A requester is granted the requester ClusterRole in one namespace, as docs/deploying.md says.
    await ensureNamespace(env.remote.identities.admin.kubeConfig(), REQUESTER_NS);
    await kubectlOk([
      '--kubeconfig', env.remote.identities.admin.kubeconfigPath,
      '-n', REQUESTER_NS, 'create', 'rolebinding', 'internal-services-requester',
      '--clusterrole=internal-services-requester', `--user=${REQUESTER.user}`,
    ]);
  });

  test('the controller may read requests everywhere, write their status, and record Events', async () => {
    await expectAccess('remote', controller, true, [
      ...each(['get', 'list', 'watch'], { group: APPSTUDIO, resource: 'internalrequests' }),
      ...each(['get', 'list', 'watch'], { group: APPSTUDIO, resource: 'internalrequests', namespace: REQUESTER_NS }),
      ...each(['get', 'update', 'patch'], { group: APPSTUDIO, resource: 'internalrequests', subresource: 'status', namespace: REQUESTER_NS }),
      ...each(['create', 'patch'], { resource: 'events', namespace: REQUESTER_NS }),
    ]);
  });

  test('the controller is DENIED everything else on the remote cluster', async () => {
    await expectAccess('remote', controller, false, [
      // The requests themselves (main resource) are read-only: no create/update/delete.
      ...each(['create', 'update', 'patch', 'delete', 'deletecollection'], { group: APPSTUDIO, resource: 'internalrequests', namespace: REQUESTER_NS }),
      ...each(['get', 'list', 'watch'], { resource: 'secrets', namespace: REQUESTER_NS }),
      { verb: 'list', resource: 'secrets' },
      { verb: 'get', resource: 'secrets', namespace: NS },
      ...each(['get', 'list', 'create'], { resource: 'pods', namespace: REQUESTER_NS }),
      { verb: 'list', resource: 'pods' },
      { verb: 'get', resource: 'configmaps', namespace: REQUESTER_NS },
      { verb: 'create', resource: 'serviceaccounts', subresource: 'token', namespace: NS },
      { verb: 'impersonate', resource: 'users' },
      { verb: 'list', group: APPSTUDIO, resource: 'internalservicesconfigs' },
      { verb: 'create', group: 'rbac.authorization.k8s.io', resource: 'rolebindings', namespace: REQUESTER_NS },
      { verb: 'list', resource: 'namespaces' },
    ]);
  });

  test('a requester may create and read requests in its namespace only, patch their metadata (the spec is immutable; logs are asked for so), and can never write status', async () => {
    await expectAccess('remote', REQUESTER, true, [
      ...each(['create', 'get', 'list', 'watch', 'patch'], { group: APPSTUDIO, resource: 'internalrequests', namespace: REQUESTER_NS }),
    ]);
    await expectAccess('remote', REQUESTER, false, [
      ...each(['update', 'patch'], { group: APPSTUDIO, resource: 'internalrequests', subresource: 'status', namespace: REQUESTER_NS }),
      ...each(['update'], { group: APPSTUDIO, resource: 'internalrequests', namespace: REQUESTER_NS }),
      ...each(['create', 'get', 'list'], { group: APPSTUDIO, resource: 'internalrequests', namespace: OTHER_NS }),
      { verb: 'list', group: APPSTUDIO, resource: 'internalrequests' },
      { verb: 'get', resource: 'secrets', namespace: REQUESTER_NS },
      { verb: 'create', resource: 'events', namespace: REQUESTER_NS },
    ]);
  });
});
