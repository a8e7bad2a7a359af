/**
 * The controller under test, started from a command template so that any
 * implementation can be measured on the same setup.
 *
 * Placeholders (replaced by shell-quoted values):
 *   {remoteKubeconfig}    kubeconfig of the controller identity on the remote cluster
 *   {internalKubeconfig}  kubeconfig of the controller identity on the internal cluster
 *   {namespace}           the controller's namespace (internal-services)
 *   {node}                the Node.js binary running the benchmark
 *   {repo}                the repository root
 *   {dir}                 the benchmark's working directory (logs, profiles)
 * The same values are also in the child's environment: REMOTE_KUBECONFIG
 * (with --kcp: KCP_KUBECONFIG, and {remoteKubeconfig} is kcp's provider
 * workspace), KUBECONFIG, POD_NAMESPACE (and BENCH_DIR).
 *
 * The command runs under /bin/sh in its own process group; its stdout and
 * stderr go to {dir}/controller-<n>.log and are scanned for the "ready" line
 * and for error-level lines.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { memoryLimit, type MemoryLimit } from './memory-limit.js';

/**
 * The Node.js flags the image (Dockerfile ENTRYPOINT), the Deployment and the
 * chart run the controller with ("Memory" and "Burst memory" in
 * docs/benchmarks.md); test/unit/runtime-flags.test.ts keeps them equal.
 */
export const RUNTIME_NODE_FLAGS = ['--max-semi-space-size=4'] as const;

/**
 * Where the image keeps V8's compiled code of the bundle (the Dockerfile's
 * NODE_COMPILE_CACHE, made when the image is built by one run of the
 * bundle's --help with the runtime flags); the benchmark's controllers get
 * one of their own, made the same way before the first starts
 * (primeCompileCache). Node.js before 22.1 ignores the variable.
 */
export const COMPILE_CACHE_DIR = '{dir}/node-compile-cache';

/** The controller as the image runs it (MALLOC_ARENA_MAX=2 and the compile cache, as the image sets them): the start of every benchmark's command. */
export const RUNTIME_CONTROLLER = `exec env MALLOC_ARENA_MAX=2 NODE_COMPILE_CACHE=${COMPILE_CACHE_DIR} {node} ${RUNTIME_NODE_FLAGS.join(' ')} {repo}/dist/bundle/internal-services.mjs controller`;

/**
 * Makes the compile cache a command names (NODE_COMPILE_CACHE=…) when it is
 * not there yet, as the image build makes its own: the bundle's --help, run
 * once with the runtime flags. Returns the directory, or undefined when the
 * command names none.
 */
export function primeCompileCache(expandedCommand: string, vars: Pick<ControllerVars, 'node' | 'repo'>): string | undefined {
  const word = /\bNODE_COMPILE_CACHE=('[^']*'|\S+)/.exec(expandedCommand)?.[1];
  const dir = word?.startsWith("'") ? word.slice(1, -1) : word;
  if (!dir || existsSync(dir)) return dir;
  const r = spawnSync(vars.node, [...RUNTIME_NODE_FLAGS, join(vars.repo, 'dist', 'bundle', 'internal-services.mjs'), '--help'], {
    cwd: vars.repo,
    env: { ...process.env, NODE_COMPILE_CACHE: dir },
    stdio: 'ignore',
    timeout: 60_000,
  });
  if (r.status !== 0) throw new Error(`priming the compile cache ${dir}: the bundle's --help ended with ${r.error?.message ?? `status ${r.status}`}`);
  return dir;
}

/** How the image and the Deployment run the controller: the same here. */
export const DEFAULT_CONTROLLER_CMD =
  `${RUNTIME_CONTROLLER} --remote-kubeconfig {remoteKubeconfig} --kubeconfig {internalKubeconfig} ` +
  '--namespace {namespace} --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0';

/** Matches the ready line of this controller ("caches synced") and of controller-runtime ("Starting workers"). */
export const DEFAULT_READY_LOG = 'caches synced|Starting workers';

export interface ControllerVars {
  remoteKubeconfig: string;
  internalKubeconfig: string;
  namespace: string;
  node: string;
  repo: string;
  dir: string;
}

function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

export function expandTemplate(template: string, vars: ControllerVars): string {
  const expanded = template.replace(/\{(remoteKubeconfig|internalKubeconfig|namespace|node|repo|dir)\}/g, (_m, k: keyof ControllerVars) => shellQuote(vars[k]));
  const unknown = /\{[A-Za-z]+\}/.exec(expanded);
  if (unknown) throw new Error(`--controller-cmd: unknown placeholder ${unknown[0]} (known: {remoteKubeconfig} {internalKubeconfig} {namespace} {node} {repo} {dir})`);
  return expanded;
}

/** Error-level lines: JSON logs (pino, zap, logr…) by their level, klog by its E/F prefix, logfmt by level=error. */
export function isErrorLine(line: string): boolean {
  const t = line.trim();
  if (t.startsWith('{')) {
    try {
      const o = JSON.parse(t) as Record<string, unknown>;
      const lvl = o['level'] ?? o['severity'] ?? o['lvl'];
      if (typeof lvl === 'number') return lvl >= 50; // pino/bunyan: 50 error, 60 fatal
      if (typeof lvl === 'string') return /^(error|fatal|panic|dpanic|critical|crit|emergency|alert)$/i.test(lvl);
      return false;
    } catch {
      /* not JSON: fall through */
    }
  }
  return /^[EF]\d{4} \d\d:\d\d:\d\d/.test(t) || /\blevel=(error|fatal|panic)\b/i.test(t) || /^(\S+\s+)?(ERROR|FATAL|PANIC)\b/.test(t) || /^panic:/.test(t);
}

export interface ControllerProcessOptions {
  command: string;
  vars: ControllerVars;
  readyLog: string;
  /** Index in the log file name (controller-<n>.log). */
  index: number;
  extraEnv?: Record<string, string>;
  /** --kcp: {remoteKubeconfig} is kcp's provider workspace, and goes to KCP_KUBECONFIG instead of REMOTE_KUBECONFIG. */
  kcp?: boolean;
  /** The process's memory limit in MiB, as a memory cgroup (bench/memory-limit.ts); 0 or absent: none. */
  memoryLimitMiB?: number;
}

export class ControllerProcess {
  readonly proc: ChildProcess;
  readonly logPath: string;
  /** The command line after placeholder expansion. */
  readonly command: string;
  /** The memory limit it runs under (mib 0: none, and why). */
  readonly memoryLimit: MemoryLimit;
  /** When the process was spawned (after the compile cache was primed, if it had to be). */
  readonly startedAt: number;
  readyAt: number | undefined;
  lines = 0;
  errorLines = 0;
  readonly errorSamples: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
  exitInfo: { code: number | null; signal: string | null } | undefined;
  private readonly readyRe: RegExp;
  private readonly readyWaiters: Array<() => void> = [];
  private readonly lineWatchers: Array<(line: string) => void> = [];
  private readonly out: WriteStream;
  private readonly tail: string[] = [];

  constructor(readonly opts: ControllerProcessOptions) {
    this.logPath = join(opts.vars.dir, `controller-${opts.index}.log`);
    this.out = createWriteStream(this.logPath);
    this.readyRe = new RegExp(opts.readyLog);
    const expanded = expandTemplate(opts.command, opts.vars);
    this.command = expanded;
    // A simple command replaces the shell, so the controller itself is the root of the sampled tree.
    const plain = /^\s*exec\s/.test(expanded) || /[;&|()<>`$\n]/.test(expanded) ? expanded : `exec ${expanded}`;
    // The shell moves itself into the cgroup, then execs the command (which stays the tree's root).
    this.memoryLimit = memoryLimit(opts.memoryLimitMiB ?? 0, `controller-${opts.index}`);
    const cmd = this.memoryLimit.prefix + plain;
    primeCompileCache(expanded, opts.vars);
    this.startedAt = performance.now();
    this.proc = spawn('/bin/sh', ['-c', cmd], {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: opts.vars.repo,
      env: {
        ...process.env,
        [opts.kcp ? 'KCP_KUBECONFIG' : 'REMOTE_KUBECONFIG']: opts.vars.remoteKubeconfig,
        KUBECONFIG: opts.vars.internalKubeconfig,
        POD_NAMESPACE: opts.vars.namespace,
        BENCH_DIR: opts.vars.dir,
        ...opts.extraEnv,
      },
    });
    this.exited = new Promise((resolve) =>
      this.proc.on('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        this.memoryLimit.remove();
        resolve(this.exitInfo);
        this.readyWaiters.splice(0).forEach((w) => w());
      }),
    );
    for (const stream of [this.proc.stdout!, this.proc.stderr!]) {
      stream.on('data', (d: Buffer) => this.out.write(d));
      createInterface({ input: stream }).on('line', (line) => this.onLine(line));
    }
  }

  get pid(): number {
    return this.proc.pid ?? -1;
  }

  get running(): boolean {
    return this.exitInfo === undefined;
  }

  private onLine(line: string): void {
    this.lines++;
    this.tail.push(line);
    if (this.tail.length > 30) this.tail.shift();
    if (isErrorLine(line)) {
      this.errorLines++;
      if (this.errorSamples.length < 10) this.errorSamples.push(line.slice(0, 500));
    }
    if (this.readyAt === undefined && this.readyRe.test(line)) {
      this.readyAt = performance.now();
      this.readyWaiters.splice(0).forEach((w) => w());
    }
    for (const w of this.lineWatchers) w(line);
  }

  onLineSeen(f: (line: string) => void): void {
    this.lineWatchers.push(f);
  }

  logTail(): string {
    return this.tail.join('\n');
  }

  /** Resolves with ms from start to the ready line; rejects on exit or timeout. */
  async waitReady(timeoutMs: number): Promise<number> {
    const deadline = performance.now() + timeoutMs;
    while (this.readyAt === undefined) {
      if (!this.running) throw new Error(`controller exited before it was ready (${JSON.stringify(this.exitInfo)}); log ${this.logPath}:\n${this.logTail()}`);
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`controller not ready after ${timeoutMs} ms (no line matching /${this.opts.readyLog}/); log ${this.logPath}:\n${this.logTail()}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.min(left, 500));
        this.readyWaiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
    return this.readyAt - this.startedAt;
  }

  /** SIGTERM to the process group, SIGKILL after graceMs. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.running) {
      this.signal('SIGTERM');
      const t = setTimeout(() => this.signal('SIGKILL'), graceMs);
      await this.exited;
      clearTimeout(t);
    }
    // Anything left in the group (e.g. a wrapper's children).
    this.signal('SIGKILL');
    await new Promise<void>((r) => this.out.end(r));
  }

  private signal(sig: NodeJS.Signals): void {
    try {
      process.kill(-this.pid, sig);
    } catch {
      /* group gone */
    }
  }
}
