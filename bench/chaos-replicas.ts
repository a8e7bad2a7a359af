/**
 * The controller under chaos: two replicas with leader election, real
 * processes, restarted by the tool when they die (as a Deployment would),
 * each reaching both API servers through the tool's fault proxies; and how
 * long a replica took to lead again after a kill, and each process to have
 * its caches listed (/readyz) and, as leader, to log "caches synced".
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONTROLLER_NAMESPACE, type ControlPlane, type Environment, kubeconfigVia, type FaultProxy } from '../src/localenv/index.js';
import { repoRoot } from '../src/util/repo.js';
import type { FaultKind, ProcessStart } from './chaos-types.js';
import { ControllerProcess, RUNTIME_CONTROLLER } from './controller-process.js';
import { sleep } from './stats.js';

export class Replica {
  proc: ControllerProcess | undefined;
  generation = 0;
  restarts = 0;
  leaderAt: number | undefined;
  /** Each process started, in order: when it led and when its caches synced. */
  readonly starts: ProcessStart[] = [];
  private stopping = false;
  /** Killed, and not started again yet (its process may not have been seen to exit). */
  private killed = false;

  constructor(
    readonly index: number,
    private readonly start: (index: number) => ControllerProcess,
    private readonly onLeader: (r: Replica) => void,
  ) {}

  launch(): void {
    const rec: ProcessStart = { replica: this.index, generation: this.generation, readyMs: null, leaderMs: null, syncedMs: null, syncedRequests: null };
    this.starts.push(rec);
    const p = this.start(this.index * 1000 + this.generation++);
    this.proc = p;
    this.leaderAt = undefined;
    this.killed = false;
    p.onLineSeen((line) => {
      if (line.includes('"became leader"')) {
        this.leaderAt = performance.now();
        rec.leaderMs ??= Math.round(this.leaderAt - p.startedAt);
        this.onLeader(this);
      }
      const health = /"address":"([^"]+)".*"serving health probes"/.exec(line);
      if (health) void pollReady(`http://${health[1]}/readyz`, p, rec);
      // Logged once the leader's workers run and every remote is listed (the whole history, if any).
      if (rec.syncedMs === null && line.includes('"caches synced"')) {
        rec.syncedMs = Math.round(performance.now() - p.startedAt);
        const m = /"requests":(\d+)/.exec(line);
        rec.syncedRequests = m ? Number(m[1]) : null;
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

  /** The current process runs and has its caches listed (/readyz answered 200). */
  get ready(): boolean {
    return !this.killed && this.proc?.running === true && this.starts[this.starts.length - 1]?.readyMs != null;
  }

  get isLeader(): boolean {
    return !this.killed && this.proc?.running === true && this.leaderAt !== undefined;
  }

  kill(): void {
    if (!this.proc?.running) return;
    this.killed = true;
    process.kill(-this.proc.pid, 'SIGKILL');
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.proc?.stop(3000);
  }
}

/** Polls a process's /readyz until it answers 200 (every cache listed, its clusters answering): rec.readyMs, from its start. */
async function pollReady(url: string, p: ControllerProcess, rec: ProcessStart): Promise<void> {
  while (p.running && rec.readyMs === null) {
    const ok = await fetch(url, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false);
    if (ok) rec.readyMs = Math.round(performance.now() - p.startedAt);
    else await sleep(100);
  }
}

/**
 * After the last fault: waits (at most `ms`) until both replicas run with
 * their caches listed and one leads with its caches synced; says what is
 * still missing when time is up (undefined: recovered).
 */
export async function waitRecovered(replicas: Replica[], ms: number): Promise<string | undefined> {
  const deadline = performance.now() + ms;
  for (;;) {
    const notReady = replicas.filter((r) => !r.ready).map((r) => r.index);
    const leader = replicas.find((r) => r.isLeader);
    const leaderSynced = leader !== undefined && leader.starts[leader.starts.length - 1]?.syncedMs != null;
    if (!notReady.length && leaderSynced) return undefined;
    if (performance.now() > deadline) return `${notReady.length ? `replicas ${notReady.join(', ')} not ready` : ''}${notReady.length && !leaderSynced ? '; ' : ''}${leaderSynced ? '' : leader ? 'the leader has not logged "caches synced"' : 'no leader'}`;
    await sleep(200);
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
    `${RUNTIME_CONTROLLER} --remote-kubeconfig {remoteKubeconfig} --kubeconfig {internalKubeconfig} --namespace {namespace} ` +
    '--metrics-bind-address 0 --health-probe-bind-address 127.0.0.1:0 --leader-elect --lease-duration 4s --renew-deadline 3s --retry-period 1s --resync-period 30s';
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
