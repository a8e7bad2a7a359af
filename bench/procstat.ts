/**
 * CPU time and memory of a process tree, read from /proc (Linux only).
 *
 * Every `intervalMs` the sampler reads utime+stime and VmRSS/VmHWM of every
 * known process of the tree; every `rescanMs` it rediscovers the tree (the
 * root and all its descendants, by parent pid). CPU of a process that exits is
 * kept at its last sampled value, so the total never goes down; CPU a
 * short-lived child spends between two samples is not seen (irrelevant for a
 * long-running controller).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';


function clockTicks(): number {
  try {
    const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isFinite(n) && n > 0 ? n : 100;
  } catch {
    return 100;
  }
}

const HZ = clockTicks();

interface Stat {
  ppid: number;
  ticks: number;
  start: string;
}

function readStat(pid: number): Stat | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // comm (field 2) may contain spaces and parentheses: parse after the last ')'.
    const rest = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // rest[0] is field 3 (state): field n is rest[n - 3].
    return { ppid: Number(rest[1]), ticks: Number(rest[11]) + Number(rest[12]), start: rest[19] ?? '' };
  } catch {
    return undefined;
  }
}

function readMem(pid: number): { rss: number; hwm: number; anon: number; file: number } | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? 0) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM'), anon: kb('RssAnon'), file: kb('RssFile') + kb('RssShmem') };
  } catch {
    return undefined;
  }
}

export interface ProcSample {
  /** ms since the sampler's time origin (performance.now()). */
  at: number;
  /** CPU seconds (user+system) of the tree since the processes started. */
  cpuSeconds: number;
  /** Sum of VmRSS of the live processes of the tree, bytes. */
  rssBytes: number;
  /** Largest VmHWM (kernel-tracked peak RSS) of any single process of the tree, bytes. */
  hwmBytes: number;
  /** Of rssBytes: anonymous memory (heaps, stacks, malloc), and pages of files (the executable and its libraries) and shared memory. */
  anonBytes: number;
  fileBytes: number;
  processes: number;
}

export class ProcTreeSampler {
  private readonly hz = HZ;
  /** "pid:starttime" -> last ticks seen. */
  private readonly ticks = new Map<string, number>();
  private pids = new Set<number>();
  private timer: NodeJS.Timeout | undefined;
  private lastScan = 0;
  private peakRss = 0;
  private peakHwm = 0;
  private peakSplit = { anonBytes: 0, fileBytes: 0 };
  readonly samples: ProcSample[] = [];
  last: ProcSample | undefined;

  constructor(
    private readonly rootPid: number,
    private readonly intervalMs = 200,
    private readonly rescanMs = 1000,
  ) {}

  start(): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Starts a new window for peak RSS (peakSince() returns the peak since the last mark). */
  markPeak(): void {
    this.peakRss = 0;
    this.peakHwm = 0;
    this.peakSplit = { anonBytes: 0, fileBytes: 0 };
  }

  /** Peak of the summed RSS over samples since markPeak() (with its anonymous and file-backed parts), and the largest VmHWM seen. */
  peakSince(): { rssBytes: number; hwmBytes: number; anonBytes: number; fileBytes: number } {
    return { rssBytes: this.peakRss, hwmBytes: this.peakHwm, ...this.peakSplit };
  }

  /** Takes a sample now (also called on the timer). */
  sample(): ProcSample {
    const now = performance.now();
    if (now - this.lastScan >= this.rescanMs || this.pids.size === 0) {
      this.rescan();
      this.lastScan = now;
    }
    let rss = 0;
    let hwm = 0;
    let anon = 0;
    let file = 0;
    let live = 0;
    for (const pid of this.pids) {
      const st = readStat(pid);
      if (!st) {
        this.pids.delete(pid);
        continue;
      }
      live++;
      this.ticks.set(`${pid}:${st.start}`, st.ticks);
      const m = readMem(pid);
      if (m) {
        rss += m.rss;
        hwm = Math.max(hwm, m.hwm);
        anon += m.anon;
        file += m.file;
      }
    }
    let total = 0;
    for (const t of this.ticks.values()) total += t;
    const s: ProcSample = { at: now, cpuSeconds: total / this.hz, rssBytes: rss, hwmBytes: hwm, anonBytes: anon, fileBytes: file, processes: live };
    if (live > 0) {
      if (rss > this.peakRss) this.peakSplit = { anonBytes: anon, fileBytes: file };
      this.peakRss = Math.max(this.peakRss, rss);
      this.peakHwm = Math.max(this.peakHwm, hwm);
      this.last = s;
    }
    this.samples.push(s);
    if (this.samples.length > 100_000) this.samples.splice(0, 50_000);
    return s;
  }

  /** The root and every descendant, by walking parent pids of all processes. */
  private rescan(): void {
    const children = new Map<number, number[]>();
    let entries: string[];
    try {
      entries = readdirSync('/proc');
    } catch {
      return;
    }
    for (const e of entries) {
      if (!/^\d+$/.test(e)) continue;
      const pid = Number(e);
      const st = readStat(pid);
      if (!st) continue;
      const list = children.get(st.ppid);
      if (list) list.push(pid);
      else children.set(st.ppid, [pid]);
    }
    const tree = new Set<number>();
    const stack = [this.rootPid];
    while (stack.length) {
      const p = stack.pop()!;
      if (tree.has(p)) continue;
      if (p === this.rootPid && !readStat(p)) continue;
      tree.add(p);
      stack.push(...(children.get(p) ?? []));
    }
    this.pids = tree;
  }
}


/** CPU seconds the whole machine spent busy (all CPUs; /proc/stat, everything but idle and iowait). */
export function machineBusySeconds(): number {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal guest guest_nice (guest time is already in user)
    const busy = (f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0);
    return busy / HZ;
  } catch {
    return 0;
  }
}

