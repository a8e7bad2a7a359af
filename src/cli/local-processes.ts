/**
 * The processes and watches of `internal-services local` (src/cli/local.ts):
 * the controller as its real CLI process (started, checked ready, stopped),
 * and the sample requests followed through every status they take, with the
 * one that needs it approved as an approver would (the kubectl plugin).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CustomObjectsApi, Watch, type KubeConfig } from '@kubernetes/client-node';
import { CONTROLLER_NAMESPACE, type Environment, tailFile } from '../localenv/index.js';
import type { InternalRequest } from '../api/types.js';
import { isFinished, phaseOf } from '../api/conditions.js';
import { rvNewer } from '../kube/resource-version.js';
import { RequesterView, type Scenario } from './local-samples.js';

const IR = { group: 'appstudio.redhat.com', version: 'v1alpha1', plural: 'internalrequests' } as const;
const CONTROLLER_READY_TIMEOUT_MS = 60_000;
const execFileP = promisify(execFile);
type Log = (msg: string) => void;

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

const isFinal = (r: InternalRequest | undefined): boolean => r !== undefined && isFinished(r);

/** A running controller process (the real CLI). */
export interface ControllerChild {
  proc: ChildProcess;
  logPath: string;
  exited: Promise<string>;
  healthPort: number;
  metricsPort: number;
  args: string[];
}

/** The script this process runs (the plain build or the bundle), so children run the same. */
function cliScript(): string {
  return process.argv[1] && /(main\.js|internal-services\.mjs)$/.test(process.argv[1]) ? process.argv[1] : fileURLToPath(new URL('./main.js', import.meta.url));
}

/** The kubectl plugin beside it (kubectl-internalrequest.js or .mjs). */
export function pluginScript(): string {
  return cliScript().replace(/(main\.js|internal-services\.mjs)$/, (m) => (m.endsWith('.mjs') ? 'kubectl-internalrequest.mjs' : 'kubectl-internalrequest.js'));
}

/** `remoteArgs`: where the requests come from (default: the environment's remote cluster, --remote-kubeconfig). */
export function startControllerProcess(env: Environment, healthPort: number, metricsPort: number, remoteArgs?: string[]): ControllerChild {
  const cli = cliScript();
  const logPath = join(env.dir, 'controller.log');
  const args = [
    cli,
    'controller',
    ...(remoteArgs ?? ['--remote-kubeconfig', env.remote.identities.controller.kubeconfigPath]),
    '--kubeconfig', env.internal.identities.controller.kubeconfigPath,
    '--namespace', CONTROLLER_NAMESPACE,
    '--metrics-bind-address', `127.0.0.1:${metricsPort}`,
    '--health-probe-bind-address', `127.0.0.1:${healthPort}`,
  ];
  const fd = openSync(logPath, 'a');
  let proc: ChildProcess;
  try {
    proc = spawn(process.execPath, args, { stdio: ['ignore', fd, fd] });
  } finally {
    closeSync(fd);
  }
  const exited = new Promise<string>((resolve) => {
    proc.once('exit', (code, signal) => resolve(signal !== null ? `signal ${signal}` : `exit code ${String(code)}`));
    proc.once('error', (err) => resolve(`spawn error: ${err.message}`));
  });
  return { proc, logPath, exited, healthPort, metricsPort, args };
}

export async function stopControllerProcess(c: ControllerChild): Promise<void> {
  if (c.proc.exitCode !== null || c.proc.signalCode !== null) return;
  c.proc.kill('SIGTERM');
  // The controller finishes in-flight writes within 10 s of SIGTERM.
  const killed = sleep(12_000).then(() => {
    c.proc.kill('SIGKILL');
  });
  await Promise.race([c.exited, killed]);
  await c.exited;
}

export async function waitForReady(c: ControllerChild): Promise<void> {
  const deadline = Date.now() + CONTROLLER_READY_TIMEOUT_MS;
  let exitedHow: string | undefined;
  void c.exited.then((how) => (exitedHow = how));
  for (;;) {
    if (exitedHow !== undefined) {
      throw new Error(`the controller exited (${exitedHow}) before it was ready; last lines of ${c.logPath}:\n${tailFile(c.logPath, 30)}`);
    }
    const status = await fetch(`http://127.0.0.1:${c.healthPort}/readyz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    if (Date.now() > deadline) {
      throw new Error(
        `the controller was not ready after ${CONTROLLER_READY_TIMEOUT_MS / 1000} s (/readyz: ${status || 'no answer'}); last lines of ${c.logPath}:\n${tailFile(c.logPath, 30)}`,
      );
    }
    await sleep(250);
  }
}

export interface SampleTracker {
  views: Map<string, RequesterView>;
  latest: Map<string, InternalRequest>;
  watch: AbortController;
  /** Takes a status (from the watch, or a backstop read), prints what changed. */
  see(r: InternalRequest): void;
}

/** Watches the samples on the remote cluster from before they are created, so every status they take is seen. */
export async function trackSamples(remoteAdmin: KubeConfig, scenarios: readonly Scenario[], progress: Log): Promise<SampleTracker> {
  const views = new Map(scenarios.map((s) => [`${s.namespace}/${s.name}`, new RequesterView()]));
  const latest = new Map<string, InternalRequest>();
  const see = (r: InternalRequest): void => {
    const key = `${r.metadata.namespace ?? ''}/${r.metadata.name ?? ''}`;
    const view = views.get(key);
    const prev = latest.get(key);
    if (!view || (prev && rvNewer(prev.metadata.resourceVersion, r.metadata.resourceVersion) === true)) return;
    latest.set(key, r);
    const line = view.observe(r);
    if (line) progress(`${key}: ${line}`);
  };
  const watch = await new Watch(remoteAdmin).watch('/apis/appstudio.redhat.com/v1alpha1/internalrequests', {}, (type, r: InternalRequest) => {
    if (type === 'ADDED' || type === 'MODIFIED') see(r);
  }, () => {});
  return { views, latest, watch, see };
}

/**
 * Waits until every sample is final: approves the one that waits for it (as
 * an approver would, with the kubectl plugin), and reads any unfinished one
 * now and then in case the watch dropped. False when time ran out.
 */
export async function followSamples(env: Environment, scenarios: readonly Scenario[], t: SampleTracker, approverKubeconfig: string, controller: ControllerChild, progress: Log, timeoutMs: number): Promise<boolean> {
  const remoteAdmin = env.remote.identities.admin.kubeConfig().makeApiClient(CustomObjectsApi);
  const deadline = Date.now() + timeoutMs;
  const approved = new Set<string>();
  let controllerExit: string | undefined;
  void controller.exited.then((how) => (controllerExit = how));
  for (let round = 0; ; round++) {
    for (const s of scenarios) {
      const key = `${s.namespace}/${s.name}`;
      const r = t.latest.get(key);
      if (s.approve && !approved.has(key) && r && phaseOf(r) === 'AwaitingApproval') {
        approved.add(key);
        progress(`${key}: approving as "release-manager" on the internal cluster: kubectl internalrequest approve ${key} -m "looks right"`);
        const res = await execFileP(process.execPath, [pluginScript(), 'approve', key, '-m', 'looks right'], { env: { ...process.env, KUBECONFIG: approverKubeconfig } }).then(
          (x) => `${x.stdout}${x.stderr}`.trim(),
          (e: { stdout?: string; stderr?: string; message: string }) => `FAILED: ${`${e.stdout ?? ''}${e.stderr ?? ''}`.trim() || e.message}`,
        );
        progress(`  ${res}`);
      }
      if (round % 10 === 9 && !isFinal(r)) {
        await remoteAdmin.getNamespacedCustomObject({ ...IR, namespace: s.namespace, name: s.name }).then((x) => t.see(x as InternalRequest), () => {});
      }
    }
    if (scenarios.every((s) => isFinal(t.latest.get(`${s.namespace}/${s.name}`)))) return true;
    if (controllerExit !== undefined) {
      progress(`the controller exited (${controllerExit}); last lines of ${controller.logPath}:\n${tailFile(controller.logPath, 30)}`);
      return false;
    }
    if (Date.now() > deadline) return false;
    await sleep(250);
  }
}

/**
 * Ctrl-C (or SIGTERM) at any point stops every process the local run
 * started: while it waits in `stopped()` (--keep), a signal ends the wait and
 * the normal teardown runs; before that, a signal runs `cleanup` and exits.
 */
export function stopOnSignals(cleanup: () => Promise<void>): { stopped(): Promise<void> } {
  let onStop: (() => void) | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (onStop) return onStop();
    process.stderr.write(`\n${signal}: stopping everything\n`);
    void cleanup().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return { stopped: () => new Promise<void>((resolve) => (onStop = resolve)) };
}

/**
 * --keep: prints the commands to look around (one per line, indented), then
 * waits until Ctrl-C or SIGTERM; the caller's teardown runs after.
 */
export async function keepRunning(signals: { stopped(): Promise<void> }, commands: string[], out: (line?: string) => void): Promise<void> {
  out();
  out('Everything keeps running (--keep). Paste into another shell:');
  for (const c of commands) out(`  ${c}`);
  out('Ctrl-C stops every process started here.');
  await signals.stopped();
}
