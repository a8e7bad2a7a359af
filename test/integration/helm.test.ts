/**
 * The Helm chart (charts/internal-services), with a real helm (hack/helm/install.sh
 * builds it from its Go module on first use) and real kube-apiservers:
 *
 *  - the chart's crds/ are the CRDs of config/crd/bases, byte for byte, and
 *    values.schema.json's config.spec is the InternalServicesConfig CRD's;
 *  - with the defaults it renders what config/default installs on the
 *    internal cluster (the differences are listed and nothing else differs);
 *  - several value sets pass `helm lint --strict`, render what they say, give
 *    the controller arguments that its own command-line parser reads back as
 *    meant, and are accepted by the internal apiserver (server-side dry run,
 *    after the chart's CRDs were applied for real);
 *  - values.schema.json and the chart's own checks refuse bad values with a
 *    message naming the value;
 *  - the monitoring objects render from files/ (PrometheusRule and
 *    ServiceMonitor, whose CRDs the harness does not have, are checked
 *    client-side only);
 *  - `helm install` from zero on a fresh apiserver installs crds/ first, then
 *    the release; upgrade and uninstall behave as README.md says;
 *  - installed with helm on the internal apiserver, the controller runs with
 *    the chart's RBAC and nothing else: it starts with the arguments Helm
 *    installed, serves requests of the default remote and of a remote from a
 *    kubeconfig Secret named in the values, and SubjectAccessReviews show
 *    what the chart's Roles grant and deny (PipelineRuns completed by the
 *    simulated executor: this test is about the deployment).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { controllerCommand, type ControllerFlags } from '../../src/cli/controller-command.js';
import {
  startEnvironment,
  type ControlPlane,
  type Environment,
  applyManifests,
  applyObjects,
  ensureNamespace,
  loadManifests,
  waitForCrds,
  SimulatedTektonExecutor,
} from '../../src/localenv/index.js';
import { find, Helm, installHelm, kindsOf, kubectlOk as kubectlOkWith, parseDocs, ROOT, run, type Obj, type Run, type Values } from './helm-helpers.js';
import { createRequest, expectAccess as expectAccessOn, messageOf, runCli, testPipeline, waitFor, waitForPhase, type AccessCheck, type ControllerProcess } from './helpers.js';

const CHART = join(ROOT, 'charts', 'internal-services');
const CHART_CRDS = join(CHART, 'crds');
const DASHBOARD_FILE = join(CHART, 'files', 'grafana-dashboard.json');
const RULES_FILE = join(CHART, 'files', 'prometheus-rules.yaml');
/** The CLI of this same build (dist/ in CI), to run the controller as the chart runs it. */
const CLI = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
const MONITORING_API = 'monitoring.coreos.com/';
const SAMPLE_CONFIG = (parseYaml(readFileSync(join(ROOT, 'config', 'samples', 'appstudio_v1alpha1_internalservicesconfig.yaml'), 'utf8')) as { spec: Values }).spec;

const tmp = mkdtempSync(join(tmpdir(), 'internal-services-helm-test-'));
let helmCli: Helm;
let kubectlPath: string;
let env: Environment;

// ---------------------------------------------------------------- processes

/** helm with its own cache/config/data directories (nothing of the user's is read or written). */
const helm = (args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<Run> => helmCli.run(args, extraEnv);
const helmOk = (args: string[]): Promise<string> => helmCli.ok(args);
const kubectlOk = (args: string[], input?: string): Promise<string> => kubectlOkWith(kubectlPath, args, input);
const valuesFile = (values: Values): string => helmCli.valuesFile(values);

// ------------------------------------------------------------------ value sets

interface Case {
  release: string;
  namespace: string;
  values: Values;
}

const NS = 'internal-services';
const STAGING_SECRET = 'internal-services-remote-staging';

const CASES = {
  defaults: { release: 'internal-services', namespace: NS, values: {} },
  oneReplica: { release: 'internal-services', namespace: NS, values: { replicas: 1 } },
  replicasOtherRelease: { release: 'prod', namespace: 'is-prod', values: { replicas: 3, approvals: { createPolicy: false } } },
  secretsByName: { release: 'internal-services', namespace: NS, values: { remote: { name: 'prod', secrets: [STAGING_SECRET, 'internal-services-remote-dr'] } } },
  mounted: {
    release: 'internal-services',
    namespace: NS,
    values: { remote: { kubeconfigSecret: { enabled: false }, mountedSecrets: [{ name: STAGING_SECRET, remote: 'staging' }, { name: 'dr', key: 'config' }], mountedSecretsInterval: '30s' } },
  },
  selector: {
    release: 'edge',
    namespace: 'is-edge',
    values: {
      remote: { kubeconfigSecret: { enabled: false }, secretsSelector: 'internal-services.appstudio.redhat.com/remote=true', secretsNamespace: 'is-edge-remotes' },
      approvals: { createPolicy: false },
    },
  },
  config: { release: 'internal-services', namespace: NS, values: { config: { create: true, spec: SAMPLE_CONFIG } } },
  kcpOnly: { release: 'internal-services', namespace: NS, values: { remote: { kubeconfigSecret: { enabled: false } }, kcp: { kubeconfigSecret: 'kcp-provider', key: 'config', workspaceParents: ['root:org', 'root:partners'] } } },
  noMetrics: { release: 'internal-services', namespace: NS, values: { metrics: { enabled: false } } },
  monitoring: {
    release: 'internal-services',
    namespace: NS,
    values: {
      monitoring: {
        dashboard: { enabled: true, annotations: { grafana_folder: 'Internal Services' } },
        prometheusRule: { enabled: true, labels: { release: 'kube-prometheus-stack' } },
        serviceMonitor: { enabled: true, interval: '15s', labels: { release: 'kube-prometheus-stack' } },
      },
    },
  },
  everything: {
    release: 'internal-services',
    namespace: NS,
    values: {
      image: { repository: 'quay.example.com/release/internal-services', digest: `sha256:${'a1'.repeat(32)}`, pullPolicy: 'Always', pullSecrets: ['quay-pull'] },
      replicas: 1,
      leaderElection: { enabled: true, id: 'is-lease' },
      remote: { mode: 'poll', pollInterval: '30s', kubeconfigSecret: { name: 'my-remote', key: 'remote.kubeconfig' } },
      controller: { workers: 8, resyncPeriod: '5m', events: 'all' },
      metrics: { port: 9090, service: { port: 9100, annotations: { 'prometheus.io/scrape': 'true' }, labels: { scrape: 'yes' } } },
      health: { port: 9091 },
      // null removes a key of the defaults (Helm merges maps): no CPU limit.
      resources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { cpu: null, memory: '1Gi' } },
      podSecurityContext: { runAsNonRoot: true, runAsUser: 2000, runAsGroup: 2000, fsGroup: 2000, seccompProfile: { type: 'RuntimeDefault' } },
      podAnnotations: { 'example.com/owner': 'release-team' },
      podLabels: { team: 'release' },
      priorityClassName: 'system-cluster-critical',
      nodeSelector: { 'kubernetes.io/os': 'linux' },
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'release', effect: 'NoSchedule' }],
      affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['private'] }] }] } } },
      serviceAccount: { annotations: { 'example.com/role': 'internal-services' } },
      extraArgs: ['--lease-duration=30s', '--renew-deadline=20s'],
      extraEnv: [{ name: 'LOG_LEVEL', value: 'debug' }, { name: 'NODE_OPTIONS', value: '--max-old-space-size=384' }],
    },
  },
} satisfies Record<string, Case>;
type CaseName = keyof typeof CASES;

const rendered = new Map<string, Obj[]>();

function templateArgs(c: Case, chart = CHART): string[] {
  return ['template', c.release, chart, '--namespace', c.namespace, '--values', valuesFile(c.values)];
}

async function render(name: CaseName): Promise<Obj[]> {
  const hit = rendered.get(name);
  if (hit) return hit;
  const objects = parseDocs(await helmOk(templateArgs(CASES[name])));
  rendered.set(name, objects);
  return objects;
}

function deploymentOf(objects: Obj[]): { d: Obj; pod: any; c: any } {
  const d = find(objects, 'Deployment');
  const pod = d['spec'].template.spec;
  assert.equal(pod.containers.length, 1);
  return { d, pod, c: pod.containers[0] };
}

/**
 * The controller's own command-line parser (src/cli/controller-command.ts) reading the
 * rendered container's args, in the environment the pod would have (its env
 * entries; POD_NAMESPACE and POD_NAME from the downward API).
 */
async function controllerFlags(container: any, namespace: string): Promise<ControllerFlags> {
  const args = container.args as string[];
  assert.equal(args[0], 'controller', 'the image runs the controller subcommand');
  const cmd = controllerCommand();
  let flags: ControllerFlags | undefined;
  let errors = '';
  cmd.exitOverride().configureOutput({ writeErr: (s) => (errors += s), writeOut: () => {} });
  cmd.action((f: ControllerFlags) => {
    flags = f;
  });
  const envVars = [...new Set(['POD_NAME', ...cmd.options.map((o) => o.envVar).filter((v): v is string => !!v)])];
  const saved = new Map(envVars.map((k) => [k, process.env[k]]));
  for (const k of envVars) delete process.env[k];
  for (const e of container.env as Array<{ name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }>) {
    if (!saved.has(e.name)) saved.set(e.name, process.env[e.name]);
    const fieldPath = e.valueFrom?.fieldRef?.fieldPath;
    process.env[e.name] = e.value ?? (fieldPath === 'metadata.namespace' ? namespace : fieldPath === 'metadata.name' ? 'pod-0' : '');
  }
  try {
    await cmd.parseAsync(args.slice(1), { from: 'user' });
  } catch (err) {
    assert.fail(`the controller refuses the rendered args ${JSON.stringify(args)}: ${(err as Error).message} ${errors}`);
  } finally {
    for (const [k, v] of saved) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
  assert.ok(flags, 'parsed');
  return flags;
}

// ------------------------------------------------------------- cluster helpers

/** The `kind.group/name` kubectl prints for an applied object. */
function kubectlName(o: Obj): string {
  const group = o.apiVersion.includes('/') ? o.apiVersion.split('/')[0] : '';
  return `${o.kind.toLowerCase()}${group ? `.${group}` : ''}/${o.metadata.name}`;
}

/** Server-side apply as the internal cluster's admin, dry run: the apiserver validates and admits every object, stores none. */
async function serverDryRun(plane: ControlPlane, objects: Obj[]): Promise<void> {
  // As JSON (a v1 List): re-serialized YAML could turn a string like "yes" into a boolean for kubectl's YAML 1.1.
  const list = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects });
  const out = await kubectlOk(['--kubeconfig', plane.identities.admin.kubeconfigPath, 'apply', '--server-side', '--dry-run=server', '--field-manager=helm-chart-test', '-f', '-'], list);
  const applied = out
    .split('\n')
    .map((l) => /^(\S+) serverside-applied \(server dry run\)$/.exec(l.trim())?.[1])
    .filter((x): x is string => !!x)
    .sort();
  assert.deepEqual(applied, objects.map(kubectlName).sort(), `every rendered object accepted; kubectl said:\n${out}`);
}

const CONTROLLER_GROUPS = (ns: string) => ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'];

type Check = AccessCheck;

async function expectAccess(plane: ControlPlane, sa: { namespace: string; name: string }, expected: boolean, checks: Check[]): Promise<void> {
  const who = { user: `system:serviceaccount:${sa.namespace}:${sa.name}`, groups: CONTROLLER_GROUPS(sa.namespace) };
  await expectAccessOn(plane.identities.admin.kubeConfig(), '', who, expected, checks);
}

const each = (verbs: string[], c: Omit<Check, 'verb'>): Check[] => verbs.map((verb) => ({ ...c, verb }));

before(async () => {
  helmCli = new Helm(await installHelm(), tmp);
  // remote: the default remote; remote-2: a remote from a kubeconfig Secret;
  // remote-3: a bare apiserver for `helm install` from zero.
  env = await startEnvironment({ remotes: 3 });
  kubectlPath = join(env.assets.binDir, 'kubectl');
  console.log(`${(await helmOk(['version', '--short'])).trim()}, kube-apiserver ${env.assets.kubernetesVersion}`);
});

after(async () => {
  await env?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

// ------------------------------------------------------------------ the chart

describe('the chart itself', () => {
  test('crds/ holds exactly the CRDs of config/crd/bases, byte for byte', () => {
    const bases = join(ROOT, 'config', 'crd', 'bases');
    const names = readdirSync(bases).filter((f) => f.endsWith('.yaml')).sort();
    assert.deepEqual(readdirSync(CHART_CRDS).sort(), names, 'the same files (cp config/crd/bases/*.yaml charts/internal-services/crds/)');
    for (const f of names) {
      assert.ok(readFileSync(join(CHART_CRDS, f)).equals(readFileSync(join(bases, f))), `charts/internal-services/crds/${f} differs from config/crd/bases/${f}: copy it again`);
    }
  });

  test("values.schema.json's config.spec is generated from the InternalServicesConfig CRD and up to date", async () => {
    const r = await run(process.execPath, [join(ROOT, 'hack', 'helm', 'gen-values-schema.mjs'), '--check']);
    assert.equal(r.code, 0, r.stderr);
    const schema = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as any;
    const crd = parseAllDocuments(readFileSync(join(CHART_CRDS, 'appstudio.redhat.com_internalservicesconfigs.yaml'), 'utf8'))
      .map((d) => d.toJS() as Obj | null)
      .find((o) => o?.kind === 'CustomResourceDefinition')!;
    const crdSpec = crd['spec'].versions[0].schema.openAPIV3Schema.properties.spec;
    assert.deepEqual(Object.keys(schema.properties.config.properties.spec.properties), Object.keys(crdSpec.properties));
    assert.equal(schema.properties.config.properties.spec.additionalProperties, false, 'a misspelt field is refused, not pruned');
  });

  test('helm lint --strict passes with the defaults; the chart packages with its CRDs, and the package renders', async () => {
    const out = await helmOk(['lint', '--strict', CHART]);
    assert.match(out, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    const pkgDir = join(tmp, 'package');
    const pkgOut = await helmOk(['package', CHART, '--destination', pkgDir]);
    const tgz = join(pkgDir, 'internal-services-0.1.0.tgz');
    assert.ok(existsSync(tgz), pkgOut);
    const listing = await run('tar', ['-tzf', tgz]);
    for (const f of ['Chart.yaml', 'values.yaml', 'values.schema.json', 'README.md', ...readdirSync(CHART_CRDS).map((c) => `crds/${c}`)]) {
      assert.ok(listing.stdout.split('\n').includes(`internal-services/${f}`), `${f} in the package`);
    }
    const fromPackage = parseDocs(await helmOk(templateArgs(CASES.defaults, tgz)));
    assert.deepEqual(kindsOf(fromPackage), kindsOf(await render('defaults')));
  });

  test('the image tag defaults to the chart appVersion', async () => {
    const chart = parseYaml(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as { appVersion: string };
    const { c } = deploymentOf(await render('defaults'));
    assert.equal(c.image, `registry.example.com/internal-services:${chart.appVersion}`);
    assert.equal(c.imagePullPolicy, 'IfNotPresent');
  });
});

describe('with the defaults the chart installs what config/default installs on the internal cluster', () => {
  /**
   * The only differences, by design: the Namespace is the release's, the CRDs
   * are in crds/, objects carry Helm's labels, selectors add
   * app.kubernetes.io/instance (two releases never select each other's pods),
   * and the pull policy and the Service type are explicit (IfNotPresent and
   * ClusterIP: what the API server defaults them to anyway).
   */
  const CLUSTER_SCOPED = ['ClusterRole', 'ClusterRoleBinding', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'];
  const HELM_ONLY_LABELS = ['app.kubernetes.io/instance', 'app.kubernetes.io/version', 'app.kubernetes.io/managed-by', 'helm.sh/chart'];
  function normalize(o: Obj): Obj {
    const c = structuredClone(o);
    delete c.metadata.labels;
    // kustomize puts its namespace on kinds it does not know to be
    // cluster-scoped (the ValidatingAdmissionPolicy and its binding); the API
    // server ignores it there.
    if (CLUSTER_SCOPED.includes(c.kind)) delete c.metadata.namespace;
    const dropHelm = (m: Record<string, string> | undefined) => HELM_ONLY_LABELS.forEach((k) => m && delete m[k]);
    if (c.kind === 'Deployment') {
      dropHelm(c['spec'].selector.matchLabels);
      dropHelm(c['spec'].template.metadata.labels);
      for (const ctr of c['spec'].template.spec.containers) delete ctr.imagePullPolicy;
    }
    if (c.kind === 'Service') {
      dropHelm(c['spec'].selector);
      if (c['spec'].type === 'ClusterIP') delete c['spec'].type;
    }
    return c;
  }

  test('the same objects, with the same content', async () => {
    const kustomized = parseDocs(await kubectlOk(['kustomize', join(ROOT, 'config', 'default')])).filter(
      (o) => o.kind !== 'Namespace' && o.kind !== 'CustomResourceDefinition',
    );
    const chart = await render('defaults');
    assert.deepEqual(kindsOf(chart), kindsOf(kustomized));
    for (const k of kustomized) {
      const h = find(chart, k.kind, k.metadata.name);
      assert.deepEqual(normalize(h), normalize(k), `${k.kind}/${k.metadata.name} differs from config/default`);
    }
  });
});

// ----------------------------------------------------------------- value sets

describe('value sets: lint, render, and what the controller reads from its args', () => {
  for (const name of Object.keys(CASES) as CaseName[]) {
    test(`${name}: helm lint --strict`, async () => {
      const c = CASES[name];
      const out = await helmOk(['lint', '--strict', CHART, '--namespace', c.namespace, '--values', valuesFile(c.values)]);
      assert.match(out, /0 chart\(s\) failed/);
    });
  }

  test('defaults: 2 replicas with leader election; the default remote from Secret internal-services-remote-kubeconfig', async () => {
    const objects = await render('defaults');
    const { d, pod, c } = deploymentOf(objects);
    assert.equal(d['spec'].replicas, 2);
    assert.equal(d['spec'].strategy, undefined, 'rolling update: leader election keeps one acting');
    const flags = await controllerFlags(c, NS);
    assert.equal(flags.leaderElect, true);
    assert.equal(flags.leaderElectionId, 'internal-services-controller');
    assert.equal(flags.namespace, NS);
    assert.equal(flags.remoteKubeconfig, '/etc/internal-services/remote/kubeconfig');
    assert.equal(flags.remoteSecret, undefined);
    assert.equal(flags.remoteSecretsSelector, undefined);
    assert.equal(flags.metricsBindAddress, ':8080');
    assert.equal(flags.healthProbeBindAddress, ':8081');
    const vol = pod.volumes.find((v: any) => v.name === 'remote-kubeconfig');
    assert.deepEqual(vol.secret, { secretName: 'internal-services-remote-kubeconfig', defaultMode: 0o440, items: [{ key: 'kubeconfig', path: 'kubeconfig' }] });
    assert.ok(!objects.some((o) => o.kind === 'InternalServicesConfig'), 'no config unless asked for');
    assert.ok(!objects.some((o) => o.metadata.name.endsWith('-remote-secrets')), 'no Secret-reading Role without remote Secrets');
  });

  test('one replica: no leader election, and the Recreate strategy so two controllers never overlap', async () => {
    const { d, c } = deploymentOf(await render('oneReplica'));
    assert.equal(d['spec'].replicas, 1);
    assert.deepEqual(d['spec'].strategy, { type: 'Recreate' });
    assert.equal((await controllerFlags(c, NS)).leaderElect, false);
  });

  test('another release and namespace: names follow the release, the Lease too; RBAC subjects are in the release namespace', async () => {
    const objects = await render('replicasOtherRelease');
    const { d, pod, c } = deploymentOf(objects);
    assert.equal(d.metadata.name, 'prod-internal-services-controller');
    assert.equal(d.metadata.namespace, 'is-prod');
    assert.equal(d['spec'].replicas, 3);
    assert.equal(pod.serviceAccountName, 'prod-internal-services-controller');
    const flags = await controllerFlags(c, 'is-prod');
    assert.equal(flags.leaderElect, true);
    assert.equal(flags.leaderElectionId, 'prod-internal-services-controller');
    assert.equal(flags.namespace, 'is-prod');
    for (const b of objects.filter((o) => o.kind === 'RoleBinding' || o.kind === 'ClusterRoleBinding')) {
      assert.deepEqual(b['subjects'], [{ kind: 'ServiceAccount', name: 'prod-internal-services-controller', namespace: 'is-prod' }]);
    }
    assert.ok(!objects.some((o) => o.kind.startsWith('ValidatingAdmissionPolicy')), 'approvals.createPolicy=false: the policy is left to the release that owns it');
    assert.deepEqual(d['spec'].selector.matchLabels, { 'app.kubernetes.io/name': 'internal-services', 'app.kubernetes.io/instance': 'prod', 'app.kubernetes.io/component': 'controller' });
  });

  test('kcp only: the provider workspace\'s kubeconfig mounted from its Secret, --kcp-kubeconfig and --kcp-export, no default remote', async () => {
    const { pod, c } = deploymentOf(await render('kcpOnly'));
    const flags = await controllerFlags(c, NS);
    assert.equal(flags.kcpKubeconfig, '/etc/internal-services/kcp/kubeconfig');
    assert.equal(flags.kcpExport, 'appstudio.redhat.com');
    assert.deepEqual(flags.kcpWorkspaceParent, ['root:org', 'root:partners']);
    assert.equal(flags.remoteKubeconfig, undefined);
    const vol = pod.volumes.find((v: any) => v.name === 'kcp-kubeconfig');
    assert.deepEqual(vol.secret, { secretName: 'kcp-provider', defaultMode: 0o440, items: [{ key: 'config', path: 'kubeconfig' }] });
    assert.ok(c.volumeMounts.some((m: any) => m.name === 'kcp-kubeconfig' && m.mountPath === '/etc/internal-services/kcp' && m.readOnly));
    assert.ok(!pod.volumes.some((v: any) => v.name === 'remote-kubeconfig'));
  });

  test('remote Secrets by name: each is a --remote-secret, and a Role may read exactly those Secrets', async () => {
    const objects = await render('secretsByName');
    const { c } = deploymentOf(objects);
    const flags = await controllerFlags(c, NS);
    assert.deepEqual(flags.remoteSecret, [STAGING_SECRET, 'internal-services-remote-dr']);
    assert.equal(flags.remoteName, 'prod');
    assert.equal(flags.remoteKubeconfig, '/etc/internal-services/remote/kubeconfig', 'the default remote stays');
    const role = find(objects, 'Role', 'internal-services-controller-remote-secrets');
    assert.equal(role.metadata.namespace, NS);
    assert.deepEqual(role['rules'], [{ apiGroups: [''], resources: ['secrets'], resourceNames: [STAGING_SECRET, 'internal-services-remote-dr'], verbs: ['get', 'list', 'watch'] }]);
    const binding = find(objects, 'RoleBinding', 'internal-services-controller-remote-secrets');
    assert.deepEqual(binding['subjects'], [{ kind: 'ServiceAccount', name: 'internal-services-controller', namespace: NS }]);
  });

  test('remote Secrets mounted as files: --remote-kubeconfig-dir over a projected volume, one file per remote, no Role on Secrets', async () => {
    const objects = await render('mounted');
    const { pod, c } = deploymentOf(objects);
    const flags = await controllerFlags(c, NS);
    assert.equal(flags.remoteKubeconfigDir, '/etc/internal-services/remotes');
    assert.equal(flags.remoteKubeconfigDirInterval, 30_000);
    assert.equal(flags.remoteKubeconfig, undefined, 'no default remote');
    assert.deepEqual(c.volumeMounts.find((m: any) => m.name === 'remote-kubeconfigs'), { name: 'remote-kubeconfigs', mountPath: '/etc/internal-services/remotes', readOnly: true });
    assert.deepEqual(pod.volumes.find((v: any) => v.name === 'remote-kubeconfigs').projected, {
      defaultMode: 288,
      sources: [
        { secret: { name: STAGING_SECRET, items: [{ key: 'kubeconfig', path: 'staging' }] } },
        { secret: { name: 'dr', items: [{ key: 'config', path: 'dr' }] } },
      ],
    });
    assert.ok(!objects.some((o) => o.kind === 'Role' && String(o.metadata.name).endsWith('remote-secrets')), 'no right to read Secrets through the API');
  });

  test('remote Secrets by label: the selector and the namespace of its own, where the Role may read every Secret', async () => {
    const objects = await render('selector');
    const { pod, c } = deploymentOf(objects);
    const flags = await controllerFlags(c, 'is-edge');
    assert.equal(flags.remoteSecretsSelector, 'internal-services.appstudio.redhat.com/remote=true');
    assert.equal(flags.remoteSecretsNamespace, 'is-edge-remotes');
    assert.equal(flags.remoteKubeconfig, undefined, 'no default remote');
    assert.ok(!pod.volumes.some((v: any) => v.name === 'remote-kubeconfig'));
    assert.ok(!c.volumeMounts.some((m: any) => m.name === 'remote-kubeconfig'));
    const role = find(objects, 'Role', 'edge-internal-services-controller-remote-secrets');
    assert.equal(role.metadata.namespace, 'is-edge-remotes');
    assert.deepEqual(role['rules'], [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch'] }]);
    const binding = find(objects, 'RoleBinding', 'edge-internal-services-controller-remote-secrets');
    assert.equal(binding.metadata.namespace, 'is-edge-remotes');
    assert.deepEqual(binding['subjects'], [{ kind: 'ServiceAccount', name: 'edge-internal-services-controller', namespace: 'is-edge' }]);
  });

  test('config from values: an InternalServicesConfig named config whose spec is the values', async () => {
    const cfg = find(await render('config'), 'InternalServicesConfig', 'config');
    assert.equal(cfg.apiVersion, 'appstudio.redhat.com/v1alpha1');
    assert.equal(cfg.metadata.namespace, NS);
    assert.deepEqual(cfg['spec'], SAMPLE_CONFIG);
  });

  test('metrics off: --metrics-bind-address=0, no metrics port, no Service', async () => {
    const objects = await render('noMetrics');
    const { c } = deploymentOf(objects);
    assert.equal((await controllerFlags(c, NS)).metricsBindAddress, '0');
    assert.deepEqual(c.ports.map((p: any) => p.name), ['health']);
    assert.ok(!objects.some((o) => o.kind === 'Service'));
  });

  test('everything else: image by digest, pull secrets, flags, extra args and env, ports, scheduling, security context', async () => {
    const objects = await render('everything');
    const { d, pod, c } = deploymentOf(objects);
    const v = CASES.everything.values;
    assert.equal(c.image, `quay.example.com/release/internal-services@${v.image.digest}`);
    assert.equal(c.imagePullPolicy, 'Always');
    assert.deepEqual(pod.imagePullSecrets, [{ name: 'quay-pull' }]);
    assert.equal(d['spec'].replicas, 1);
    assert.equal(d['spec'].strategy, undefined, 'leader election asked for: rolling updates are safe');
    assert.deepEqual(c.resources, { requests: { cpu: '100m', memory: '256Mi' }, limits: { memory: '1Gi' } });
    assert.deepEqual(pod.securityContext, v.podSecurityContext);
    assert.deepEqual(c.securityContext, { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, privileged: false, capabilities: { drop: ['ALL'] } });
    assert.deepEqual(pod.nodeSelector, v.nodeSelector);
    assert.deepEqual(pod.tolerations, v.tolerations);
    assert.deepEqual(pod.affinity, v.affinity);
    assert.equal(pod.priorityClassName, 'system-cluster-critical');
    assert.equal(d['spec'].template.metadata.labels.team, 'release');
    assert.equal(d['spec'].template.metadata.annotations['example.com/owner'], 'release-team');
    assert.equal(d['spec'].template.metadata.annotations['kubectl.kubernetes.io/default-container'], 'manager');
    assert.deepEqual(find(objects, 'ServiceAccount').metadata.annotations, v.serviceAccount.annotations);
    assert.deepEqual(c.args.slice(-2), v.extraArgs, 'extra args come last');
    const vol = pod.volumes.find((x: any) => x.name === 'remote-kubeconfig');
    assert.deepEqual(vol.secret.items, [{ key: 'remote.kubeconfig', path: 'kubeconfig' }]);
    assert.equal(vol.secret.secretName, 'my-remote');
    const flags = await controllerFlags(c, NS);
    assert.equal(flags.remoteMode, 'poll');
    assert.equal(flags.pollInterval, 30_000);
    assert.equal(flags.workers, 8);
    assert.equal(flags.resyncPeriod, 300_000);
    assert.equal(flags.events, 'all');
    assert.equal(flags.logLevel, 'debug', 'LOG_LEVEL from extraEnv');
    assert.equal(flags.leaderElect, true);
    assert.equal(flags.leaderElectionId, 'is-lease');
    assert.equal(flags.leaseDuration, 30_000);
    assert.equal(flags.renewDeadline, 20_000);
    assert.equal(flags.metricsBindAddress, ':9090');
    assert.equal(flags.healthProbeBindAddress, ':9091');
    assert.deepEqual(Object.fromEntries(c.ports.map((p: any) => [p.name, p.containerPort])), { metrics: 9090, health: 9091 });
    const svc = find(objects, 'Service');
    assert.deepEqual(svc['spec'].ports, [{ name: 'metrics', port: 9100, targetPort: 'metrics', protocol: 'TCP' }]);
    assert.equal(svc.metadata.annotations?.['prometheus.io/scrape'], 'true');
    assert.equal(svc.metadata.labels?.['scrape'], 'yes');
    assert.ok(c.env.some((e: any) => e.name === 'NODE_OPTIONS' && e.value === '--max-old-space-size=384'));
  });
});

// ------------------------------------------------------------ refused values

describe('values.schema.json and the chart refuse bad values, saying which', () => {
  const SCHEMA = /values don't meet the specifications of the schema/;
  const refused: Array<[string, Values, RegExp[]]> = [
    ['replicas is not a number', { replicas: 'two' }, [SCHEMA, /replicas/]],
    ['a negative replica count', { replicas: -1 }, [SCHEMA, /replicas/]],
    ['an unknown pull policy', { image: { pullPolicy: 'Sometimes' } }, [SCHEMA, /pullPolicy/]],
    ['an empty image repository', { image: { repository: '' } }, [SCHEMA, /repository/]],
    ['a digest that is not sha256', { image: { digest: 'latest' } }, [SCHEMA, /digest/]],
    ['a misspelt top-level value', { replica: 2 }, [SCHEMA, /replica/]],
    ['an unknown log level', { controller: { logLevel: 'verbose' } }, [SCHEMA, /logLevel/]],
    ['an unknown events mode', { controller: { events: 'some' } }, [SCHEMA, /events/]],
    ['workers out of range', { controller: { workers: 0 } }, [SCHEMA, /workers/]],
    ['an unknown remote mode', { remote: { mode: 'stream' } }, [SCHEMA, /mode/]],
    ['a poll interval that is not a duration', { remote: { mode: 'poll', pollInterval: 'often' } }, [SCHEMA, /pollInterval/]],
    ['a Secret name that is not a name', { remote: { secrets: ['Not A Name'] } }, [SCHEMA, /secrets/]],
    ['leaderElection.enabled not a boolean', { leaderElection: { enabled: 'yes' } }, [SCHEMA, /enabled/]],
    ['a misspelt config field', { config: { create: true, spec: { allowlist: ['team-a'] } } }, [SCHEMA, /allowlist/]],
    ['an allowList entry that is no namespace', { config: { create: true, spec: { allowList: ['Team_A'] } } }, [SCHEMA, /allowList/]],
    ['a nested config field of the wrong type', { config: { create: true, spec: { volumeClaim: { size: 12 } } } }, [SCHEMA, /size/]],
    ['a port out of range', { metrics: { port: 70000 } }, [SCHEMA, /port/]],
    ['an extraEnv entry without a name', { extraEnv: [{ value: 'x' }] }, [SCHEMA, /extraEnv/]],
    ['no remote at all', { remote: { kubeconfigSecret: { enabled: false } } }, [/no remote cluster to serve/, /remote\.kubeconfigSecret\.enabled/, /kcp\.kubeconfigSecret/]],
    ['a kcp Secret name that is not a name', { kcp: { kubeconfigSecret: 'Not A Name' } }, [SCHEMA, /kubeconfigSecret/]],
    ['a misspelt kcp value', { kcp: { kubeconfig: 'x' } }, [SCHEMA, /kubeconfig/]],
    ['a workspace parent that is no path', { kcp: { kubeconfigSecret: 'k', workspaceParents: ['root/org'] } }, [SCHEMA, /workspaceParents/]],
    ['a selector without a namespace of its own', { remote: { secretsSelector: 'a=b' } }, [/remote\.secretsNamespace/, /every Secret/]],
    ['a selector in the release namespace', { remote: { secretsSelector: 'a=b', secretsNamespace: NS } }, [/remote\.secretsNamespace/, /other than the release namespace "internal-services"/]],
    ['a mounted Secret whose remote would not be a DNS label', { remote: { mountedSecrets: [{ name: 'remote.prod' }] } }, [/remote\.mountedSecrets: the remote of Secret "remote\.prod" would be named "remote\.prod", which is not a DNS label/]],
    ['two mounted Secrets for one remote', { remote: { mountedSecrets: [{ name: 'a', remote: 'prod' }, { name: 'b', remote: 'prod' }] } }, [/remote "prod" is named twice/]],
    ['a mounted Secret taking the default remote\'s name', { remote: { mountedSecrets: [{ name: 'default' }] } }, [/remote "default" is named twice/]],
    ['a mounted Secret item without a name', { remote: { mountedSecrets: [{ remote: 'prod' }] } }, [SCHEMA, /mountedSecrets/]],
    ['several replicas without leader election', { replicas: 3, leaderElection: { enabled: false } }, [/replicas=3 needs leader election/]],
    ['a ServiceMonitor without the metrics Service', { metrics: { service: { enabled: false } }, monitoring: { serviceMonitor: { enabled: true } } }, [/monitoring\.serviceMonitor\.enabled needs metrics\.enabled and metrics\.service\.enabled/]],
  ];
  for (const [what, values, messages] of refused) {
    test(`refused: ${what}`, async () => {
      const r = await helm(templateArgs({ release: 'internal-services', namespace: NS, values }));
      assert.notEqual(r.code, 0, `helm template should fail; it rendered:\n${r.stdout.slice(0, 500)}`);
      for (const m of messages) assert.match(r.stderr, m);
      assert.equal(r.stdout.trim(), '', 'nothing rendered');
    });
  }

  test('monitoring turned on without its files in the chart: refused, naming the missing file', async () => {
    const copy = join(tmp, 'chart-without-files');
    cpSync(CHART, copy, { recursive: true });
    rmSync(join(copy, 'files'), { recursive: true, force: true });
    for (const [key, file] of [['dashboard', 'files/grafana-dashboard.json'], ['prometheusRule', 'files/prometheus-rules.yaml']] as const) {
      const r = await helm(templateArgs({ release: 'internal-services', namespace: NS, values: { monitoring: { [key]: { enabled: true } } } }, copy));
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, new RegExp(`monitoring\\.${key}\\.enabled needs ${file.replace(/\./g, '\\.')} in the chart`));
    }
  });
});

// ----------------------------------------------------------------- monitoring

describe('monitoring: the dashboard ConfigMap, the PrometheusRule and the ServiceMonitor', () => {
  const PROM_DURATION = /^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$/;
  const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
  const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
  const stringMap = (m: unknown) => m === undefined || (typeof m === 'object' && m !== null && !Array.isArray(m) && Object.values(m).every((v) => typeof v === 'string'));

  /**
   * Client-side only: the harness has no Prometheus Operator CRDs, so these
   * are the field rules of PrometheusRule (monitoring.coreos.com/v1) and of
   * Prometheus's rule files, checked here. PromQL itself is not parsed.
   */
  function prometheusRuleProblems(spec: any): string[] {
    const problems: string[] = [];
    const allowedSpec = ['groups'];
    for (const k of Object.keys(spec ?? {})) if (!allowedSpec.includes(k)) problems.push(`spec.${k} is not a PrometheusRule field`);
    if (!Array.isArray(spec?.groups) || spec.groups.length === 0) return [...problems, 'spec.groups must be a non-empty list'];
    const groupNames = new Set<string>();
    spec.groups.forEach((g: any, i: number) => {
      const at = `spec.groups[${i}]`;
      for (const k of Object.keys(g)) if (!['name', 'interval', 'rules', 'partial_response_strategy', 'limit', 'query_offset', 'labels'].includes(k)) problems.push(`${at}.${k} is not a rule group field`);
      if (typeof g.name !== 'string' || g.name === '') problems.push(`${at}.name is required`);
      else if (groupNames.has(g.name)) problems.push(`${at}.name ${g.name} is used twice`);
      else groupNames.add(g.name);
      if (g.interval !== undefined && !PROM_DURATION.test(String(g.interval))) problems.push(`${at}.interval is not a duration`);
      if (!Array.isArray(g.rules) || g.rules.length === 0) problems.push(`${at}.rules must be a non-empty list`);
      (g.rules ?? []).forEach((r: any, j: number) => {
        const rat = `${at}.rules[${j}]`;
        for (const k of Object.keys(r)) if (!['alert', 'record', 'expr', 'for', 'keep_firing_for', 'labels', 'annotations'].includes(k)) problems.push(`${rat}.${k} is not a rule field`);
        if ((r.alert === undefined) === (r.record === undefined)) problems.push(`${rat} needs exactly one of alert and record`);
        if (r.record !== undefined && !METRIC_NAME.test(String(r.record))) problems.push(`${rat}.record is not a metric name`);
        if (r.alert !== undefined && (typeof r.alert !== 'string' || r.alert === '')) problems.push(`${rat}.alert must be a name`);
        if (r.record !== undefined && (r.for !== undefined || r.annotations !== undefined)) problems.push(`${rat}: a recording rule has no for/annotations`);
        if ((typeof r.expr !== 'string' && typeof r.expr !== 'number') || String(r.expr).trim() === '') problems.push(`${rat}.expr is required`);
        for (const k of ['for', 'keep_firing_for']) if (r[k] !== undefined && !PROM_DURATION.test(String(r[k]))) problems.push(`${rat}.${k} is not a duration`);
        for (const k of ['labels', 'annotations']) {
          if (!stringMap(r[k])) problems.push(`${rat}.${k} must map names to strings`);
          for (const name of Object.keys(r[k] ?? {})) if (!LABEL_NAME.test(name)) problems.push(`${rat}.${k}.${name} is not a label name`);
        }
      });
    });
    return problems;
  }

  test('monitoring on: files/grafana-dashboard.json and files/prometheus-rules.yaml must be in the chart', () => {
    assert.ok(existsSync(DASHBOARD_FILE), `${DASHBOARD_FILE} is missing (the Grafana dashboard; the chart renders it into a ConfigMap)`);
    assert.ok(existsSync(RULES_FILE), `${RULES_FILE} is missing (the PrometheusRule spec, top level groups:)`);
  });

  test('the dashboard ConfigMap carries the JSON of files/grafana-dashboard.json and the sidecar label', async () => {
    const objects = await render('monitoring');
    const cm = find(objects, 'ConfigMap', 'internal-services-dashboard');
    assert.equal(cm.metadata.namespace, NS);
    assert.equal(cm.metadata.labels?.['grafana_dashboard'], '1');
    assert.equal(cm.metadata.annotations?.['grafana_folder'], 'Internal Services');
    const data = cm['data'] as Record<string, string>;
    assert.deepEqual(Object.keys(data), ['internal-services.json']);
    const dashboard = JSON.parse(data['internal-services.json']!) as Record<string, unknown>;
    assert.deepEqual(dashboard, JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')));
    assert.equal(typeof dashboard['title'], 'string', 'a Grafana dashboard has a title');
    assert.ok(Array.isArray(dashboard['panels']), 'and panels');
  });

  test('the PrometheusRule spec is files/prometheus-rules.yaml (checked client-side: no such CRD on the harness)', async () => {
    const rule = find(await render('monitoring'), 'PrometheusRule', 'internal-services');
    assert.equal(rule.apiVersion, 'monitoring.coreos.com/v1');
    assert.equal(rule.metadata.namespace, NS);
    assert.equal(rule.metadata.labels?.['release'], 'kube-prometheus-stack');
    assert.deepEqual(rule['spec'], parseYaml(readFileSync(RULES_FILE, 'utf8')));
    assert.deepEqual(prometheusRuleProblems(rule['spec']), []);
  });

  test('the ServiceMonitor scrapes the metrics Service (checked client-side: no such CRD on the harness)', async () => {
    const objects = await render('monitoring');
    const sm = find(objects, 'ServiceMonitor', 'internal-services-controller');
    const svc = find(objects, 'Service', 'internal-services-controller-metrics');
    assert.equal(sm.apiVersion, 'monitoring.coreos.com/v1');
    assert.equal(sm.metadata.labels?.['release'], 'kube-prometheus-stack');
    assert.deepEqual(Object.keys(sm['spec']).sort(), ['endpoints', 'namespaceSelector', 'selector']);
    for (const [k, v] of Object.entries(sm['spec'].selector.matchLabels as Record<string, string>)) assert.equal(svc.metadata.labels?.[k], v, `the Service has label ${k}=${v}`);
    assert.deepEqual(sm['spec'].namespaceSelector, { matchNames: [NS] });
    assert.deepEqual(sm['spec'].endpoints, [{ port: 'metrics', path: '/metrics', honorLabels: true, interval: '15s' }]);
    assert.ok((svc['spec'].ports as Array<{ name: string }>).some((p) => p.name === 'metrics'), 'the endpoint port is a named port of the Service');
    assert.match(sm['spec'].endpoints[0].interval, PROM_DURATION);
  });
});

// ------------------------------------------------- the real internal apiserver

describe('every value set is accepted by the internal apiserver (server-side dry run)', () => {
  before(async () => {
    const admin = env.internal.identities.admin;
    // The chart's CRDs, for real, so that the InternalServicesConfig kind is known.
    await kubectlOk(['--kubeconfig', admin.kubeconfigPath, 'apply', '--server-side', '--field-manager=helm-chart-test', '-f', CHART_CRDS]);
    const crds = loadManifests(CHART_CRDS).map((o) => o.metadata!.name!);
    await waitForCrds(admin.kubeConfig(), crds);
    // A dry run creates nothing, so the namespaces must exist already (Helm's
    // --create-namespace, or the administrator, makes them).
    for (const ns of [...new Set(Object.values(CASES).map((c) => c.namespace)), 'is-edge-remotes']) await ensureNamespace(admin.kubeConfig(), ns);
  });

  for (const name of Object.keys(CASES) as CaseName[]) {
    test(`${name}`, async () => {
      const objects = await render(name);
      const monitoring = objects.filter((o) => o.apiVersion.startsWith(MONITORING_API));
      if (name === 'monitoring') assert.deepEqual(kindsOf(monitoring), ['PrometheusRule/internal-services', 'ServiceMonitor/internal-services-controller'], 'validated client-side above');
      else assert.deepEqual(monitoring, []);
      await serverDryRun(env.internal, objects.filter((o) => !o.apiVersion.startsWith(MONITORING_API)));
    });
  }
});

describe('helm install from zero on a bare apiserver (the harness\'s remote-3): crds/ first, then the release', () => {
  let fresh: ControlPlane;
  const kc = () => ['--kubeconfig', fresh.identities.admin.kubeconfigPath];
  const FRESH_NS = 'internal-services';

  before(() => {
    fresh = env.remotes[2]!;
  });

  test('install with config from values creates the CRDs, the release objects and the InternalServicesConfig', async () => {
    const out = await helmOk(['install', 'internal-services', CHART, ...kc(), '--namespace', FRESH_NS, '--create-namespace', '--values', valuesFile(CASES.config.values)]);
    assert.match(out, /STATUS: deployed/);
    assert.match(out, /kubectl -n internal-services create secret generic internal-services-remote-kubeconfig --from-file=kubeconfig=remote.kubeconfig/, 'the notes say which Secret to create');
    const admin = fresh.identities.admin.kubeConfig();
    await waitForCrds(admin, loadManifests(CHART_CRDS).map((o) => o.metadata!.name!));
    const cfg = (await admin.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({ group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalservicesconfigs', namespace: FRESH_NS, name: 'config' })) as Obj;
    // What the apiserver makes of config/samples' InternalServicesConfig itself (its defaults filled in).
    const sample = JSON.parse(await kubectlOk([...kc(), '-n', FRESH_NS, 'apply', '--server-side', '--dry-run=server', '--field-manager=helm-chart-test', '-o', 'json', '-f', join(ROOT, 'config', 'samples', 'appstudio_v1alpha1_internalservicesconfig.yaml')])) as Obj;
    assert.deepEqual(cfg['spec'], sample['spec']);
    const manifest = parseDocs(await helmOk(['get', 'manifest', 'internal-services', ...kc(), '--namespace', FRESH_NS]));
    assert.deepEqual(kindsOf(manifest), kindsOf(await render('config')));
    const deploy = await kubectlOk([...kc(), '-n', FRESH_NS, 'get', 'deployment', 'internal-services-controller', '-o', 'jsonpath={.spec.replicas} {.metadata.annotations.meta\\.helm\\.sh/release-name}']);
    assert.equal(deploy, '2 internal-services');
  });

  test('upgrade to one replica: the Deployment switches to Recreate and drops --leader-elect', async () => {
    await helmOk(['upgrade', 'internal-services', CHART, ...kc(), '--namespace', FRESH_NS, '--values', valuesFile({ ...CASES.config.values, replicas: 1 })]);
    const d = JSON.parse(await kubectlOk([...kc(), '-n', FRESH_NS, 'get', 'deployment', 'internal-services-controller', '-o', 'json'])) as Obj;
    assert.equal(d['spec'].replicas, 1);
    assert.equal(d['spec'].strategy.type, 'Recreate');
    assert.ok(!d['spec'].template.spec.containers[0].args.includes('--leader-elect'));
  });

  test('uninstall removes the release objects and the config; the CRDs stay (Helm never deletes crds/)', async () => {
    await helmOk(['uninstall', 'internal-services', ...kc(), '--namespace', FRESH_NS, '--wait']);
    const left = await kubectlOk([...kc(), '-n', FRESH_NS, 'get', 'deployments,services,serviceaccounts,roles,rolebindings,internalservicesconfigs', '-o', 'name']);
    assert.equal(left.trim(), '');
    const cluster = await kubectlOk([...kc(), 'get', 'clusterroles,clusterrolebindings,validatingadmissionpolicies,validatingadmissionpolicybindings', '-o', 'name']);
    assert.doesNotMatch(cluster, /internal-services/);
    const crds = await kubectlOk([...kc(), 'get', 'crds', '-o', 'name']);
    for (const name of loadManifests(CHART_CRDS).map((o) => o.metadata!.name!)) assert.match(crds, new RegExp(`customresourcedefinition.apiextensions.k8s.io/${name.replace(/\./g, '\\.')}`));
  });

  test('from config/default to the chart, as README.md says: delete the kustomize-made objects one by one (and the config the chart is to make), install', async () => {
    await kubectlOk([...kc(), 'apply', '--server-side', '-k', join(ROOT, 'config', 'default')]);
    await kubectlOk([...kc(), '-n', FRESH_NS, 'apply', '--server-side', '-f', join(ROOT, 'config', 'samples', 'appstudio_v1alpha1_internalservicesconfig.yaml')]);
    // Helm will not take over what it did not make.
    const refused = await helm(['install', 'internal-services', CHART, ...kc(), '--namespace', FRESH_NS, '--values', valuesFile({ config: { create: true, spec: { allowList: ['team-a'] } } })]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /exists and cannot be imported into the current release/);
    // The README's steps.
    await kubectlOk([...kc(), '-n', FRESH_NS, 'delete', 'deployment/internal-services-controller', 'service/internal-services-controller-metrics', 'role/internal-services-controller', 'rolebinding/internal-services-controller', 'serviceaccount/internal-services-controller']);
    await kubectlOk([...kc(), 'delete', 'clusterrole/internal-services-controller', 'clusterrole/internal-services-approver', 'clusterrolebinding/internal-services-controller', 'validatingadmissionpolicy/internal-services-approvals', 'validatingadmissionpolicybinding/internal-services-approvals']);
    await kubectlOk([...kc(), '-n', FRESH_NS, 'delete', 'internalservicesconfig', 'config']);
    await helmOk(['install', 'internal-services', CHART, ...kc(), '--namespace', FRESH_NS, '--values', valuesFile({ config: { create: true, spec: { allowList: ['team-a'] } } })]);
    const cfg = JSON.parse(await kubectlOk([...kc(), '-n', FRESH_NS, 'get', 'internalservicesconfig', 'config', '-o', 'json'])) as Obj;
    assert.deepEqual(cfg['spec'].allowList, ['team-a'], 'the chart now manages the config');
    const kept = await kubectlOk([...kc(), 'get', 'crds', '-o', 'name']);
    assert.match(kept, /internalrequests\.appstudio\.redhat\.com/, 'the CRDs were never deleted');
    await helmOk(['uninstall', 'internal-services', ...kc(), '--namespace', FRESH_NS, '--wait']);
  });
});

describe('installed with helm on the internal apiserver, the controller runs with the chart\'s RBAC', () => {
  let staging: ControlPlane;
  let internalAdmin: KubeConfig;
  let controller: ControllerProcess | undefined;
  let executor: { stop(): Promise<void> } | undefined;
  const kc = () => ['--kubeconfig', env.internal.identities.admin.kubeconfigPath];
  const SA = { namespace: NS, name: 'internal-services-controller' };
  const EDGE_SA = { namespace: 'is-edge', name: 'edge-internal-services-controller' };
  const values: Values = {
    remote: { secrets: [STAGING_SECRET] },
    config: { create: true, spec: { allowList: ['team-a', 'staging/team-b'] } },
  };

  before(async () => {
    staging = env.remotes[1]!;
    internalAdmin = env.internal.identities.admin.kubeConfig();
    // What the chart does not install: Tekton's CRDs on the internal cluster,
    // and on each remote the project's CRDs and config/rbac/remote.
    const tektonCrds = ['300-pipeline.yaml', '300-pipelinerun.yaml', '300-task.yaml', '300-taskrun.yaml', '300-resolutionrequest.yaml'].flatMap((f) => loadManifests(join(env.assets.tektonCrdDir, f)));
    await applyManifests(internalAdmin, tektonCrds);
    for (const remote of [env.remote, staging]) {
      const admin = remote.identities.admin.kubeConfig();
      await ensureNamespace(admin, NS);
      await applyManifests(admin, loadManifests(join(ROOT, 'config', 'crd')));
      await applyManifests(admin, loadManifests(join(ROOT, 'config', 'rbac', 'remote')));
    }
    for (const [remote, ns] of [[env.remote, 'team-a'], [staging, 'team-b']] as const) {
      const admin = remote.identities.admin.kubeConfig();
      await ensureNamespace(admin, ns);
      await applyObjects(admin, [
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'requester', namespace: ns }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'internal-services-requester' }, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'requester' }] } as never,
      ]);
    }
  });

  after(async () => {
    await controller?.kill('SIGTERM');
    await executor?.stop();
  });

  test('helm install (the CRDs exist already: Helm leaves them) with a remote Secret by name and the config', async () => {
    const out = await helmOk(['install', 'internal-services', CHART, ...kc(), '--namespace', NS, '--create-namespace', '--values', valuesFile(values)]);
    assert.match(out, /STATUS: deployed/);
    const core = internalAdmin.makeApiClient(CoreV1Api);
    await core.createNamespacedSecret({
      namespace: NS,
      body: { metadata: { name: STAGING_SECRET, annotations: { 'internal-services.appstudio.redhat.com/remote-name': 'staging' } }, stringData: { kubeconfig: readFileSync(staging.identities.controller.kubeconfigPath, 'utf8') } },
    });
    await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'signing-key' }, stringData: { key: 'not for the controller' } } });
  });

  test('the controller starts with the arguments Helm installed and serves both remotes', async () => {
    const manifest = parseDocs(await helmOk(['get', 'manifest', 'internal-services', ...kc(), '--namespace', NS]));
    const { c } = deploymentOf(manifest);
    // The pod's in-cluster paths and ports, mapped to this machine: the default
    // remote's kubeconfig (the Secret's content) and the internal cluster's
    // service-account credentials as a kubeconfig; free ports.
    const args = (c.args as string[]).map((a) =>
      a.startsWith('--remote-kubeconfig=') ? `--remote-kubeconfig=${env.remote.identities.controller.kubeconfigPath}`
      : a.startsWith('--metrics-bind-address=') ? '--metrics-bind-address=0'
      : a.startsWith('--health-probe-bind-address=') ? '--health-probe-bind-address=127.0.0.1:0'
      : a,
    );
    assert.ok(args.includes(`--remote-secret=${STAGING_SECRET}`) && args.includes('--leader-elect'), args.join(' '));
    await applyObjects(internalAdmin, [
      testPipeline('echo', { params: [{ name: 'text', default: '' }], results: [{ name: 'out', value: '$(tasks.t.results.out)' }], tasks: [{ name: 't', taskSpec: { results: [{ name: 'out' }], steps: [{ name: 's', image: 'x', command: ['x'] }] } }] }),
    ] as never);
    executor = new SimulatedTektonExecutor(internalAdmin).startAuto({
      namespace: NS,
      delayMs: 0,
      outcome: (pr) => ({ succeeded: true, results: { out: String((pr.spec?.['params'] as Array<{ value: string }> | undefined)?.[0]?.value ?? '') } }),
    });
    controller = runCli([...args, '--kubeconfig', env.internal.identities.controller.kubeconfigPath], { POD_NAMESPACE: NS, POD_NAME: 'internal-services-controller-0' }, CLI);
    const serving = await controller.waitForLog((l) => l.msg === 'serving health probes', 30_000);
    await controller.waitForLog((l) => l.msg === 'caches synced', 30_000);
    const port = Number(String(serving['address']).split(':').pop());
    const readyz = await waitFor('/readyz to list the staging remote as ok', async () => {
      const res = await fetch(`http://127.0.0.1:${port}/readyz?verbose`);
      const text = await res.text();
      return res.status === 200 && /\[\+\]remote\/staging\/internalrequests ok/.test(text) ? text : undefined;
    }, 30_000);
    assert.match(readyz, /\[\+\]config ok/);
    assert.match(readyz, /\[\+\]remote\/default\/internalrequests ok/);

    for (const [remote, ns, name] of [[env.remote, 'team-a', 'via-default'], [staging, 'team-b', 'via-staging']] as const) {
      const requester = remote.identities.requester!.kubeConfig();
      await createRequest(requester, ns, name, { request: 'echo', params: { text: name } });
      const done = await waitForPhase(requester, ns, name, ['Succeeded', 'Failed', 'Rejected'], 30_000);
      assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
      assert.deepEqual(done.status?.results, { out: name });
    }
    const errors = controller.lines.filter((l) => typeof l['level'] === 'number' && (l['level'] as number) >= 50);
    assert.deepEqual(errors, [], 'no errors logged (a missing right would show as one)');
  });

  test('SubjectAccessReviews: the chart grants the controller what it needs, in its namespace, and the named Secret only', async () => {
    await expectAccess(env.internal, SA, true, [
      ...each(['get', 'list', 'watch'], { group: 'tekton.dev', resource: 'pipelines', namespace: NS }),
      ...each(['create', 'get', 'list', 'watch', 'patch', 'delete'], { group: 'tekton.dev', resource: 'pipelineruns', namespace: NS }),
      ...each(['get', 'list', 'watch'], { group: 'appstudio.redhat.com', resource: 'internalservicesconfigs', namespace: NS }),
      ...each(['create', 'get', 'list', 'watch', 'delete'], { group: 'appstudio.redhat.com', resource: 'internalrequestapprovals', namespace: NS }),
      ...each(['get', 'create', 'update'], { group: 'coordination.k8s.io', resource: 'leases', namespace: NS }),
      { verb: 'create', group: 'authorization.k8s.io', resource: 'subjectaccessreviews' },
      { verb: 'get', group: 'admissionregistration.k8s.io', resource: 'validatingadmissionpolicies', name: 'internal-services-approvals' },
      ...each(['get', 'list', 'watch'], { resource: 'secrets', namespace: NS, name: STAGING_SECRET }),
      // The versions of Tekton Results and Chains, wherever they are installed.
      { verb: 'get', resource: 'configmaps', namespace: 'tekton-pipelines', name: 'tekton-results-info' },
      { verb: 'get', resource: 'configmaps', namespace: 'tekton-chains', name: 'chains-info' },
      { verb: 'get', resource: 'configmaps', namespace: 'openshift-pipelines', name: 'chains-info' },
      // The Tekton settings: default-resolver-type and the resolvers' feature flags.
      { verb: 'get', resource: 'configmaps', namespace: 'tekton-pipelines', name: 'config-defaults' },
      { verb: 'get', resource: 'configmaps', namespace: 'tekton-pipelines-resolvers', name: 'resolvers-feature-flags' },
    ]);
    await expectAccess(env.internal, SA, false, [
      ...each(['get', 'list', 'watch'], { resource: 'secrets', namespace: NS, name: 'signing-key' }),
      { verb: 'list', resource: 'secrets', namespace: NS },
      { verb: 'list', resource: 'secrets' },
      ...each(['create', 'get', 'list'], { group: 'tekton.dev', resource: 'pipelineruns', namespace: 'default' }),
      ...each(['create', 'update', 'delete'], { group: 'appstudio.redhat.com', resource: 'internalservicesconfigs', namespace: NS }),
      { verb: 'update', group: 'appstudio.redhat.com', resource: 'internalrequestapprovals', subresource: 'status', namespace: NS },
      { verb: 'create', resource: 'pods', namespace: NS },
      { verb: 'get', resource: 'configmaps', namespace: NS },
      ...each(['list', 'watch', 'update'], { resource: 'configmaps', namespace: 'tekton-chains', name: 'chains-info' }),
      { verb: 'get', resource: 'configmaps', namespace: 'tekton-chains', name: 'chains-config' },
      ...each(['list', 'watch', 'update', 'patch'], { resource: 'configmaps', namespace: 'tekton-pipelines', name: 'config-defaults' }),
      { verb: 'get', resource: 'configmaps', namespace: 'tekton-pipelines', name: 'feature-flags' },
    ]);
  });

  test('a second release in selector mode (policy left to the first): it may read every Secret of its remotes namespace, and only there', async () => {
    await ensureNamespace(internalAdmin, 'is-edge-remotes');
    const out = await helmOk(['install', 'edge', CHART, ...kc(), '--namespace', 'is-edge', '--create-namespace', '--values', valuesFile(CASES.selector.values)]);
    assert.match(out, /STATUS: deployed/);
    await expectAccess(env.internal, EDGE_SA, true, [
      ...each(['get', 'list', 'watch'], { resource: 'secrets', namespace: 'is-edge-remotes' }),
      ...each(['get', 'list', 'watch'], { group: 'tekton.dev', resource: 'pipelines', namespace: 'is-edge' }),
    ]);
    await expectAccess(env.internal, EDGE_SA, false, [
      ...each(['get', 'list', 'watch'], { resource: 'secrets', namespace: 'is-edge' }),
      ...each(['get', 'list'], { resource: 'secrets', namespace: NS }),
      { verb: 'get', group: 'tekton.dev', resource: 'pipelines', namespace: NS },
    ]);
    // The two releases do not share names: uninstalling one leaves the other whole.
    await helmOk(['uninstall', 'edge', ...kc(), '--namespace', 'is-edge', '--wait']);
    await expectAccess(env.internal, EDGE_SA, false, [{ verb: 'list', resource: 'secrets', namespace: 'is-edge-remotes' }]);
    await expectAccess(env.internal, SA, true, [{ verb: 'get', resource: 'secrets', namespace: NS, name: STAGING_SECRET }]);
    const vap = await kubectlOk([...kc(), 'get', 'validatingadmissionpolicy', 'internal-services-approvals', '-o', 'jsonpath={.metadata.annotations.meta\\.helm\\.sh/release-name}']);
    assert.equal(vap, 'internal-services', 'the approval policy still belongs to the first release');
  });
});
