/**
 * The controller under chaos: two replicas with leader election, real
 * processes, restarted by the tool when they die (as a Deployment would),
 * each reaching both API servers through the tool's fault proxies; and how
 * long a replica took to lead again after a kill.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONTROLLER_NAMESPACE, type ControlPlane, type Environment, kubeconfigVia, type FaultProxy } from '../src/localenv/index.js';
import { repoRoot } from '../src/util/repo.js';
import type { FaultKind } from './chaos-types.js';
import { ControllerProcess } from './controller-process.js';
import { sleep } from './stats.js';

export class Replica {
  proc: ControllerProcess | undefined;
  generation = 0;
  restarts = 0;
  leaderAt: number | undefined;
  private stopping = false;

  constructor(
    readonly index: number,
    private readonly start: (index: number) => ControllerProcess,
    private readonly onLeader: (r: Replica) => void,
  ) {}

  launch(): void {
    const p = this.start(this.index * 1000 + this.generation++);
    this.proc = p;
    this.leaderAt = undefined;
    p.onLineSeen((line) => {
      if (line.includes('"became leader"')) {
        this.leaderAt = performance.now();
        this.onLeader(this);
      }
    });
    void p.exited.then(() => {
      if (this.stopping) return;
      this.leaderAt = undefined;
      // As a Deployment would: a new pod a moment later.
      setTimeout(() => {
        if (this.stopping) return;
        this.restarts++;
        this.launch();
      }, 1000);
    });
  }

  get isLeader(): boolean {
    return this.proc?.running === true && this.leaderAt !== undefined;
  }

  kill(): void {
    if (this.proc?.running) process.kill(-this.proc.pid, 'SIGKILL');
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.proc?.stop(3000);
  }
}

/** Leader losses the run caused (kill-leader, kill-both), and how long until a replica became leader again. */
export class Takeovers {
  readonly all: Array<{ ms: number; kind: FaultKind }> = [];
  private lastLeaderLoss: { at: number; kind: FaultKind } | undefined;

  /** The leader was killed now. */
  lost(kind: FaultKind): void {
    this.lastLeaderLoss = { at: performance.now(), kind };
  }

  /** A replica logged "became leader". */
  led(): void {
    if (this.lastLeaderLoss !== undefined) this.all.push({ ms: performance.now() - this.lastLeaderLoss.at, kind: this.lastLeaderLoss.kind });
    this.lastLeaderLoss = undefined;
  }
}

export function hostPort(url: string): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
}

function viaProxy(plane: ControlPlane, proxy: FaultProxy, out: string): string {
  return kubeconfigVia(plane.identities.controller.kubeconfigPath, proxy.url, out);
}

/**
 * Starts the two replicas (into `replicas`, so that the caller stops them
 * whatever happens) and waits until both are ready and one of them leads.
 */
export async function startReplicas(
  env: Environment,
  dir: string,
  proxies: { remote: FaultProxy; internal: FaultProxy },
  replicas: Replica[],
  takeovers: Takeovers,
): Promise<void> {
  const vars = {
    remoteKubeconfig: viaProxy(env.remote, proxies.remote, join(dir, 'remote.kubeconfig')),
    internalKubeconfig: viaProxy(env.internal, proxies.internal, join(dir, 'internal.kubeconfig')),
    namespace: CONTROLLER_NAMESPACE,
    node: process.execPath,
    repo: repoRoot(),
    dir,
  };
  const command =
    'exec env MALLOC_ARENA_MAX=2 {node} --max-semi-space-size=4 {repo}/dist/bundle/internal-services.mjs controller --remote-kubeconfig {remoteKubeconfig} --kubeconfig {internalKubeconfig} --namespace {namespace} ' +
    '--metrics-bind-address 0 --health-probe-bind-address 0 --leader-elect --lease-duration 4s --renew-deadline 3s --retry-period 1s --resync-period 30s';
  // Ready: caches filled, waiting for (or holding) the lease; one of them leads.
  for (let i = 0; i < 2; i++) replicas.push(new Replica(i, (index) => new ControllerProcess({ command, vars, readyLog: 'waiting to become leader', index }), () => takeovers.led()));
  replicas.forEach((r) => r.launch());
  await replicas[0]!.proc!.waitReady(60_000);
  await replicas[1]!.proc!.waitReady(60_000);
  const leaderDeadline = Date.now() + 30_000;
  while (!replicas.some((r) => r.isLeader)) {
    if (Date.now() > leaderDeadline) throw new Error('no replica became leader within 30 s');
    await sleep(100);
  }
}

/** Lines matching `re` in all the logs of one replica (controller-<replica * 1000 + generation>.log). */
export function countLines(dir: string, replica: number, re: RegExp): number {
  let n = 0;
  for (let g = 0; g < 1000; g++) {
    let text: string;
    try {
      text = readFileSync(join(dir, `controller-${replica * 1000 + g}.log`), 'utf8');
    } catch {
      break;
    }
    for (const line of text.split('\n')) if (re.test(line)) n++;
  }
  return n;
}
