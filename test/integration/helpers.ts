/** Shared pieces of the integration tests: a running controller process, requests, polling. */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { AuthorizationV1Api, CustomObjectsApi, Watch, type KubeConfig, type V1ResourceAttributes } from '@kubernetes/client-node';
import { outcomeOfResolution, RESOLUTION_REQUEST, resolutionRequest, type Resolution, type ResolutionRequest } from '../../src/tekton/resolve.js';
import { LABEL_REQUEST_UID, OWNED_SELECTOR } from '../../src/tekton/pipelinerun.js';
import { repoRoot } from '../../src/api/crd-render.js';
import { type Environment, applyObjects, grantRequester, installProject, KCP_PROVIDER_PATH, startEnvironment } from '../../src/localenv/index.js';
import type { InternalRequest, InternalRequestSpec } from '../../src/api/types.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';
import { phaseOf } from '../../src/api/conditions.js';

export const NS = 'internal-services';
export const IR = { group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalrequests' };
export const PR = { group: 'tekton.dev', version: 'v1', plural: 'pipelineruns' };

export const CLI = join(repoRoot(), 'dist', 'src', 'cli', 'main.js');
/** The kubectl plugin (kubectl internalrequest …) of the plain build. */
export const PLUGIN = join(repoRoot(), 'dist', 'src', 'cli', 'kubectl-internalrequest.js');

/** Runs the kubectl plugin as the user of `kubeconfig`; resolves with its exit code and output whatever the code. */
export async function runPlugin(args: string[], kubeconfig: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [PLUGIN, ...args], { env: { ...process.env, KUBECONFIG: kubeconfig } });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    return { code: x.code ?? -1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}

export interface ControllerProcess {
  proc: ChildProcess;
  /** Every log line so far, parsed when JSON. */
  lines: Array<Record<string, unknown>>;
  stderr(): string;
  waitForLog(pred: (l: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves with the exit code (or signal name). */
  exited: Promise<number | string>;
  kill(signal?: NodeJS.Signals): Promise<number | string>;
  healthPort?: number;
}

export function runCli(args: string[], env: NodeJS.ProcessEnv = {}, script = CLI): ControllerProcess {
  const proc = spawn(process.execPath, [script, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Array<Record<string, unknown>> = [];
  let raw = '';
  let buf = '';
  const waiters: Array<() => void> = [];
  proc.stderr!.on('data', (d: Buffer) => {
    raw += d.toString();
    buf += d.toString();
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        lines.push({ msg: line, raw: true });
      }
    }
    waiters.splice(0).forEach((w) => w());
  });
  proc.stdout!.on('data', (d: Buffer) => (raw += d.toString()));
  const exited = new Promise<number | string>((resolve) => proc.on('exit', (code, sig) => resolve(code ?? sig ?? -1)));
  const cp: ControllerProcess = {
    proc,
    lines,
    stderr: () => raw,
    exited,
    async waitForLog(pred, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const hit = lines.find(pred);
        if (hit) return hit;
        if (Date.now() > deadline) throw new Error(`log line not seen in ${timeoutMs} ms; output:\n${raw.slice(-3000)}`);
        if (proc.exitCode !== null) throw new Error(`process exited (${proc.exitCode}) before the log line; output:\n${raw.slice(-3000)}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 200);
        });
      }
    },
    async kill(signal = 'SIGKILL') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
  return cp;
}

/** Starts the controller CLI under the controller identities of both clusters; resolves once its workers run (with `workers: false`, once it serves its probes). */
export async function startController(env: Environment, extra: string[] = [], opts: { workers?: boolean } = {}): Promise<ControllerProcess> {
  const cp = runCli([
    'controller',
    '--remote-kubeconfig', env.remote.identities.controller.kubeconfigPath,
    '--kubeconfig', env.internal.identities.controller.kubeconfigPath,
    '--namespace', NS,
    '--metrics-bind-address', '0',
    '--health-probe-bind-address', '127.0.0.1:0',
    '--log-level', 'debug',
    ...extra,
  ]);
  const serving = await cp.waitForLog((l) => l.msg === 'serving health probes');
  cp.healthPort = Number(String(serving.address).split(':').pop());
  if (opts.workers !== false) await cp.waitForLog((l) => l.msg === 'caches synced');
  return cp;
}

/** The controller as its CLI process, serving a kcp export through the provider workspace (as its own kcp identity); not waited for. */
export function runKcpController(env: Environment, kcp: { identities: { controller: { writeKubeconfig(target?: string): string } } }, extra: string[] = []): ControllerProcess {
  return runCli([
    'controller',
    '--kcp-kubeconfig', kcp.identities.controller.writeKubeconfig(KCP_PROVIDER_PATH),
    '--kubeconfig', env.internal.identities.controller.kubeconfigPath,
    '--namespace', NS,
    '--health-probe-bind-address', '127.0.0.1:0',
    '--log-level', 'debug',
    ...extra,
  ]);
}

export async function waitFor<T>(what: string, f: () => Promise<T | undefined | false>, timeoutMs = 20_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await f();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export function api(kc: KubeConfig): CustomObjectsApi {
  return kc.makeApiClient(CustomObjectsApi);
}

export async function createRequest(kc: KubeConfig, namespace: string, name: string, spec: InternalRequestSpec, labels?: Record<string, string>): Promise<InternalRequest> {
  return (await api(kc).createNamespacedCustomObject({
    ...IR,
    namespace,
    body: { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name, namespace, ...(labels ? { labels } : {}) }, spec },
  })) as InternalRequest;
}

export async function getRequest(kc: KubeConfig, namespace: string, name: string): Promise<InternalRequest> {
  return (await api(kc).getNamespacedCustomObject({ ...IR, namespace, name })) as InternalRequest;
}

export function reasonOf(r: InternalRequest): string | undefined {
  return r.status?.conditions?.[0]?.reason;
}

/**
 * Waits until the request is in one of the phases or has one of the outcomes
 * (phaseOf: the Progressing condition's phase while unfinished — Running
 * means its PipelineRun runs — and Succeeded, Failed or Rejected once done).
 */
export async function waitForPhase(kc: KubeConfig, namespace: string, name: string, phases: string[], timeoutMs = 20_000): Promise<InternalRequest> {
  return waitFor(`${namespace}/${name} to be ${phases.join('|')}`, async () => {
    const r = await getRequest(kc, namespace, name);
    return phases.includes(phaseOf(r) ?? '') ? r : undefined;
  }, timeoutMs);
}

/** Waits until the request is finished by the requester's contract (status.conditions[0].reason neither empty nor Running), whoever wrote it. */
export async function waitFinished(kc: KubeConfig, namespace: string, name: string, timeoutMs = 90_000): Promise<InternalRequest> {
  return waitFor(`${namespace}/${name} finished`, async () => {
    const r = await getRequest(kc, namespace, name);
    const reason = r.status?.conditions?.[0]?.reason;
    return reason && reason !== 'Running' ? r : undefined;
  }, timeoutMs, 250);
}

export async function listPipelineRuns(kc: KubeConfig): Promise<PipelineRun[]> {
  const l = (await api(kc).listNamespacedCustomObject({ ...PR, namespace: NS })) as { items: PipelineRun[] };
  return l.items;
}

export async function pipelineRunsFor(kc: KubeConfig, uid: string): Promise<PipelineRun[]> {
  return (await listPipelineRuns(kc)).filter((p) => p.metadata.labels?.['internal-services.appstudio.redhat.com/request-uid'] === uid);
}

export async function httpStatus(url: string): Promise<number> {
  try {
    return (await fetch(url)).status;
  } catch {
    return -1;
  }
}

/**
 * A step of a test Task on real Tekton. How its simulated run goes (results,
 * exit code, duration, "gate") is said by SIMULATED_* env vars, read by the
 * simulated kubelet after Tekton has substituted params into them (see
 * src/localenv/simulated/kubelet.ts). The image is never pulled; the command is set so
 * Tekton need not look the image up.
 */
export function simulatedStep(name: string, vars: Record<string, string> = {}, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, image: 'registry.invalid/tools:1', command: ['/bin/true'], env: Object.entries(vars).map(([n, value]) => ({ name: n, value })), ...extra };
}

/** A tekton.dev/v1 Pipeline in the controller's namespace. */
export function testPipeline(name: string, spec: Record<string, unknown>): Record<string, unknown> {
  return { apiVersion: 'tekton.dev/v1', kind: 'Pipeline', metadata: { name, namespace: NS }, spec };
}

/**
 * Lets the gated steps (SIMULATED_DURATION=gate) of a PipelineRun's pods
 * finish; waits until at least one pod of the run exists to be released.
 */
export async function releaseRun(env: Environment, pipelineRun: string, timeoutMs = 30_000): Promise<void> {
  const kubelet = env.tekton?.kubelet;
  if (!kubelet) throw new Error('the environment runs no Tekton (start it with { tekton: true })');
  await waitFor(`a pod of ${pipelineRun} to release`, async () => (await kubelet.releasePods(NS, `tekton.dev/pipelineRun=${pipelineRun}`)) > 0, timeoutMs);
}

/** Creates or replaces the InternalServicesConfig named `config` in the controller's namespace. */
export async function setRunConfig(kc: KubeConfig, spec: Record<string, unknown>): Promise<void> {
  await applyObjects(kc, [{ apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name: 'config', namespace: NS }, spec } as never]);
}

/** Applies the InternalServicesConfig `config`; with a running controller, waits until it has read it. */
export async function setRunConfigAndWait(kc: KubeConfig, controller: ControllerProcess | undefined, spec: Record<string, unknown>): Promise<void> {
  const seen = controller?.lines.length ?? 0;
  await setRunConfig(kc, spec);
  if (controller) {
    await waitFor('the controller to read the configuration', async () => controller.lines.slice(seen).some((l) => l.msg === 'configuration changed' || l.msg === 'configuration loaded'));
  }
}

/** The message of a request's Succeeded condition ('' when none). */
export const messageOf = (r: { status?: { conditions?: Array<{ message?: string }> } }): string => r.status?.conditions?.[0]?.message ?? '';

/** Waits for the PipelineRun of a request (by uid), failing if there is ever more than one. */
export async function onlyPipelineRunOf(kc: KubeConfig, uid: string): Promise<PipelineRun> {
  return waitFor(`the PipelineRun of ${uid}`, async () => {
    const prs = await pipelineRunsFor(kc, uid);
    assert.ok(prs.length <= 1, `more than one PipelineRun for ${uid}`);
    return prs[0];
  });
}

/** The controller's /metrics text. */
export async function scrape(port: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
}

/** One sample of a metric (the first whose labels include these). */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const ls = m[2] ?? '';
    if (Object.entries(labels).every(([k, v]) => ls.includes(`${k}="${v}"`))) return Number(m[3]);
  }
  return undefined;
}


/** The test relay is the local environment's fault proxy (cut, freeze, cutAfterMs). */
export { FaultProxy as Relay, kubeconfigVia } from '../../src/localenv/index.js';

/** One question for the API server's authorizer (a SubjectAccessReview). */
export interface AccessCheck {
  verb: string;
  resource: string;
  group?: string;
  subresource?: string;
  /** Omitted: cluster-wide. */
  namespace?: string;
  /** A resource name (resourceNames rules). */
  name?: string;
}

async function accessAllowed(kc: KubeConfig, who: { user: string; groups: string[] }, c: AccessCheck): Promise<boolean> {
  const resourceAttributes: V1ResourceAttributes = { verb: c.verb, resource: c.resource, group: c.group ?? '' };
  if (c.subresource) resourceAttributes.subresource = c.subresource;
  if (c.namespace) resourceAttributes.namespace = c.namespace;
  if (c.name) resourceAttributes.name = c.name;
  const sar = await kc.makeApiClient(AuthorizationV1Api).createSubjectAccessReview({
    body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user: who.user, groups: who.groups, resourceAttributes } },
  });
  return sar.status?.allowed === true;
}

function describeAccessCheck(c: AccessCheck): string {
  const res = `${c.resource}${c.subresource ? `/${c.subresource}` : ''}${c.group ? `.${c.group}` : ''}`;
  return `${c.verb} ${res}${c.name ? ` ${c.name}` : ''} ${c.namespace ? `in ${c.namespace}` : 'cluster-wide'}`;
}

/** Asserts every check has the expected answer for `who` (asked as the admin of `kc`); reports all mismatches at once. */
export async function expectAccess(kc: KubeConfig, where: string, who: { user: string; groups: string[] }, expected: boolean, checks: AccessCheck[]): Promise<void> {
  const wrong: string[] = [];
  for (const c of checks) {
    if ((await accessAllowed(kc, who, c)) !== expected) wrong.push(describeAccessCheck(c));
  }
  assert.deepEqual(wrong, [], `${where}${who.user} should ${expected ? 'be allowed' : 'be DENIED'}: ${wrong.join('; ')}`);
}

/**
 * Every ResolutionRequest and PipelineRun the controller makes in its
 * namespace, by request uid, as first seen: a watch open until stop() (they
 * are removed once a request is decided, so a list at the end would prove
 * nothing).
 */
export interface Made {
  rr: Map<string, ResolutionRequest[]>;
  pr: Map<string, PipelineRun[]>;
  stop(): void;
}

export async function watchMade(kc: KubeConfig): Promise<Made> {
  let stopped = false;
  const watches: AbortController[] = [];
  const made: Made = {
    rr: new Map(),
    pr: new Map(),
    stop: () => {
      stopped = true;
      watches.forEach((w) => w.abort());
    },
  };
  // A watch the apiserver ends (429 under load, a timeout) is opened again:
  // it then lists every object as ADDED once more, so each object is recorded
  // once, by its uid.
  const collect = async (path: string, into: Map<string, unknown[]>) => {
    const seen = new Set<string>();
    const open = async (): Promise<void> => {
      watches.push(
        await new Watch(kc).watch(
          path,
          { labelSelector: OWNED_SELECTOR },
          (phase, obj: { metadata?: { uid?: string; labels?: Record<string, string> } }) => {
            if (phase !== 'ADDED' || seen.has(obj.metadata?.uid ?? '')) return;
            seen.add(obj.metadata?.uid ?? '');
            const uid = obj.metadata?.labels?.[LABEL_REQUEST_UID] ?? '';
            into.set(uid, [...(into.get(uid) ?? []), obj]);
          },
          (err) => {
            if (stopped || (err && String(err).includes('aborted'))) return;
            if (err) console.error(`watch ${path} ended: ${String(err)}; opening it again`);
            setTimeout(() => void open().catch((e: unknown) => console.error(`watch ${path} could not be opened again: ${String(e)}`)), 500);
          },
        ),
      );
    };
    await open();
  };
  await collect(`/apis/${RESOLUTION_REQUEST.group}/${RESOLUTION_REQUEST.version}/namespaces/${NS}/${RESOLUTION_REQUEST.plural}`, made.rr as Map<string, unknown[]>);
  await collect(`/apis/${PR.group}/${PR.version}/namespaces/${NS}/${PR.plural}`, made.pr as Map<string, unknown[]>);
  return made;
}

/** Resolves with the git resolver directly, as anyone who can create a ResolutionRequest could: no controller in between. */
export async function resolveDirectly(kc: KubeConfig, name: string, params: Array<{ name: string; value: string }>): Promise<Resolution> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  await custom.createNamespacedCustomObject({ ...RESOLUTION_REQUEST, namespace: NS, body: resolutionRequest(NS, name, 'git', params) });
  try {
    return await waitFor(`ResolutionRequest ${name} to be answered`, async () => {
      const rr = (await custom.getNamespacedCustomObject({ ...RESOLUTION_REQUEST, namespace: NS, name })) as ResolutionRequest;
      const o = outcomeOfResolution(rr, new Date(), 60_000);
      return o.state === 'pending' ? undefined : o;
    }, 60_000);
  } finally {
    await custom.deleteNamespacedCustomObject({ ...RESOLUTION_REQUEST, namespace: NS, name });
  }
}

/**
 * Both control planes with real Tekton (pods simulated), the project
 * installed, and `tenant` granted to the requester: what most tests of the
 * request path start from.
 */
export async function tektonStack(tenant: string): Promise<{ env: Environment; internalAdmin: KubeConfig; requester: KubeConfig }> {
  const env = await startEnvironment({ tekton: true });
  await installProject(env);
  await grantRequester(env, tenant);
  return { env, internalAdmin: env.internal.identities.admin.kubeConfig(), requester: env.remote.identities.requester!.kubeConfig() };
}
