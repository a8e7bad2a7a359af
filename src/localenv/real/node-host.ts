/**
 * What the real node (real-node.ts) changes on the machine, and how it is put
 * back: one node per machine, held by a state file created exclusively
 * (STATE_FILE); in it, before anything is changed, the sysctls the kubelet
 * and the CNI bridge set (their values before), the host paths they create
 * that did not exist, the bridge's name, the node's scratch directory and the
 * processes started. cleanupHost() undoes all of it: kills what still runs
 * (the node's processes, containerd's shims, every process of the kubepods
 * cgroups), removes those cgroups, unmounts everything under the scratch
 * directory, deletes the bridge, restores the sysctls, removes the paths and
 * the directory, then the state file. A node left by a killed run (its owner
 * process gone) is cleaned up this way by the next start.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const STATE_FILE = process.env['INTERNAL_SERVICES_NODE_STATE'] ?? '/run/internal-services-node.json';

/** Host-wide sysctls the kubelet (setupKernelTunables) and the bridge plugin (ip_forward) set. */
export const NODE_SYSCTLS = [
  'vm/overcommit_memory',
  'vm/panic_on_oom',
  'kernel/panic',
  'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys',
  'kernel/keys/root_maxbytes',
  'net/ipv4/ip_forward',
];

/**
 * Paths outside its directory the kubelet, containerd's CNI and containerd's
 * shims (their sockets: /run/containerd/s) create whatever their flags say.
 */
export const NODE_HOST_PATHS = ['/var/lib/kubelet', '/var/log/containers', '/var/log/pods', '/var/lib/cni', '/run/containerd'];

export interface NodeHostState {
  owner: { pid: number; start: string };
  dir: string;
  bridge: string;
  /** Their values before the node started, by /proc/sys path. */
  sysctls: Record<string, string>;
  /** Host paths that did not exist before: removed at cleanup. */
  createdPaths: string[];
  /** The node's processes (kubelet, containerd, scheduler, controller-manager). */
  pids: number[];
}

/** The start time of a process (field 22 of /proc/PID/stat), to tell it from a later one with its pid; undefined when gone. */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function readState(): NodeHostState | undefined {
  try {
    return JSON.parse(readFileSync(STATE_FILE, 'utf8')) as NodeHostState;
  } catch {
    return undefined;
  }
}

export function writeState(state: NodeHostState): void {
  const tmp = `${STATE_FILE}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(state, null, 2) + '\n');
  renameSync(tmp, STATE_FILE);
}

/**
 * Takes the machine's one node for this process: records the state (before
 * any change) in STATE_FILE, created exclusively. A node whose owner is gone
 * is cleaned up first; one whose owner lives is waited for, up to `waitMs`.
 */
export async function acquireHost(dir: string, bridge: string, log: (l: string) => void, waitMs = 600_000): Promise<NodeHostState> {
  const deadline = Date.now() + waitMs;
  let said = false;
  for (;;) {
    const state: NodeHostState = {
      owner: { pid: process.pid, start: processStart(process.pid) ?? '' },
      dir,
      bridge,
      sysctls: Object.fromEntries(NODE_SYSCTLS.map((s) => [s, readSysctl(s)]).filter((e): e is [string, string] => e[1] !== undefined)),
      createdPaths: NODE_HOST_PATHS.filter((p) => !existsSync(p)),
      pids: [],
    };
    try {
      writeFileSync(STATE_FILE, JSON.stringify(state, null, 2) + '\n', { flag: 'wx' });
      return state;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const other = readState();
    if (other && other.owner.pid === process.pid && processStart(process.pid) === other.owner.start) {
      throw new Error(`this process already runs the machine's real node (directory ${other.dir}): one node per machine, stop that environment first`);
    }
    if (other && processStart(other.owner.pid) === other.owner.start) {
      if (Date.now() > deadline) throw new Error(`a real node already runs on this machine (owner pid ${other.owner.pid}, directory ${other.dir}; ${STATE_FILE})`);
      if (!said) log(`node: waiting for the real node of pid ${other.owner.pid} to stop (one node per machine; ${STATE_FILE})`);
      said = true;
      await new Promise((r) => setTimeout(r, 1000));
      continue;
    }
    if (other) {
      log(`node: cleaning up a node left by pid ${other.owner.pid} (directory ${other.dir})`);
      cleanupHost(other, log);
    } else {
      // Unreadable (a half-written file): nothing known to undo.
      rmSync(STATE_FILE, { force: true });
    }
  }
}

export function readSysctl(path: string): string | undefined {
  try {
    return readFileSync(`/proc/sys/${path}`, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** Every process whose command line mentions `needle` (the node's directory: its shims name their socket there). */
function pidsMentioning(needle: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(needle)) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

function kill(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** The kubepods cgroup of each hierarchy (cgroup v1 controllers and the v2 mount beside them). */
function kubepodsCgroups(): string[] {
  const roots: string[] = [];
  try {
    for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
      const f = line.split(' ');
      const sep = f.indexOf('-');
      if (sep > 0 && (f[sep + 1] === 'cgroup' || f[sep + 1] === 'cgroup2')) roots.push(unescapeMount(f[4]!));
    }
  } catch {
    // no mountinfo: nothing to find
  }
  return [...new Set(roots)].map((r) => join(r, 'kubepods')).filter((p) => existsSync(p));
}

/** Cgroup directories under `dir`, deepest first. */
function cgroupTree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    let entries: string[] = [];
    try {
      entries = readdirSync(d, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => join(d, e.name));
    } catch {
      return;
    }
    for (const e of entries) walk(e);
    out.push(d);
  };
  walk(dir);
  return out;
}

function cgroupPids(dirs: string[]): number[] {
  const pids: number[] = [];
  for (const d of dirs) {
    try {
      for (const l of readFileSync(join(d, 'cgroup.procs'), 'utf8').split('\n')) if (l.trim()) pids.push(Number(l));
    } catch {
      // removed meanwhile
    }
  }
  return pids;
}

/** Mount points at or under `dir`, deepest first. */
export function mountsUnder(dir: string): string[] {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  const out: string[] = [];
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const mp = line.split(' ')[4];
    if (mp === undefined) continue;
    const p = unescapeMount(mp);
    if (p === dir || p.startsWith(prefix)) out.push(p);
  }
  return out.sort((a, b) => b.length - a.length);
}

function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

function quiet(cmd: string, args: string[]): string | undefined {
  try {
    execFileSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    return undefined;
  } catch (e) {
    return `${cmd} ${args.join(' ')}: ${(e as { stderr?: Buffer }).stderr?.toString().trim() ?? String(e)}`;
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Undoes everything a node did on the host (see the module comment) and
 * releases the machine. Synchronous, so that it can run at any point; each
 * step goes on when one fails, and what could not be undone is logged.
 */
export function cleanupHost(state: NodeHostState, log: (l: string) => void): void {
  const problems: string[] = [];
  // 1. Processes: the node's own, then anything naming its directory (shims), then the pods' containers.
  kill(state.pids.filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(state.dir);
    } catch {
      return false;
    }
  }));
  kill(pidsMentioning(state.dir));
  const groups = kubepodsCgroups();
  for (let i = 0; i < 50; i++) {
    const left = cgroupPids(groups.flatMap(cgroupTree));
    if (left.length === 0) break;
    kill(left);
    sleepSync(100);
  }
  // 2. Cgroups, deepest first (a cgroup empties a moment after its last process died).
  for (const g of groups) {
    for (const d of cgroupTree(g)) {
      for (let i = 0; i < 20; i++) {
        try {
          rmdirSync(d);
          break;
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ENOENT') break;
          if (i === 19) problems.push(`cgroup ${d}: ${(e as Error).message}`);
          sleepSync(100);
        }
      }
    }
  }
  // 3. Mounts under the directory (containers' root filesystems, volumes, network namespaces).
  for (const m of mountsUnder(state.dir)) {
    const err = quiet('umount', [m]) && quiet('umount', ['-l', m]);
    if (err) problems.push(err);
  }
  // 4. The bridge (its veths went with the network namespaces).
  if (existsSync(`/sys/class/net/${state.bridge}`)) {
    const err = quiet('ip', ['link', 'del', state.bridge]);
    if (err) problems.push(err);
  }
  // 5. Sysctls back to what they were.
  for (const [path, value] of Object.entries(state.sysctls)) {
    if (readSysctl(path) === value) continue;
    try {
      writeFileSync(`/proc/sys/${path}`, value);
    } catch (e) {
      problems.push(`sysctl ${path}=${value}: ${(e as Error).message}`);
    }
  }
  // 6. Host paths it created, then its directory (only with nothing mounted under it any more).
  for (const p of state.createdPaths) {
    if (mountsUnder(p).length > 0) problems.push(`${p} still has mounts; left in place`);
    else rmSync(p, { recursive: true, force: true });
  }
  if (existsSync(state.dir)) {
    if (mountsUnder(state.dir).length > 0) problems.push(`${state.dir} still has mounts; left in place`);
    else rmSync(state.dir, { recursive: true, force: true, maxRetries: 3 });
  }
  for (const p of problems) log(`node: cleanup: ${p}`);
  // 7. The machine is free again (unless this state is no longer the one in the file).
  const current = readState();
  if (!current || (current.owner.pid === state.owner.pid && current.dir === state.dir)) {
    try {
      unlinkSync(STATE_FILE);
    } catch {
      // already gone
    }
  }
}

/** Whether `path` is a directory (for the checks of what a node needs). */
export function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
