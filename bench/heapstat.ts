/**
 * Where a Node.js controller's memory is: its V8 heap spaces (committed
 * size), the memory V8 tracks outside the heap (Buffers, ArrayBuffers) and,
 * from RSS, the rest (the binary, native libraries, malloc). Read from the
 * controller's own Prometheus endpoint (prom-client's default metrics), so it
 * works for this controller only when it serves metrics (the default command
 * does, on a loopback port it logs).
 */
import { mb } from './stats.js';

export interface HeapSpaces {
  /** Committed size of each V8 heap space (MB): new, old, code, large_object, … */
  spacesMB: Record<string, number>;
  heapTotalMB: number;
  heapUsedMB: number;
  externalMB: number;
}

export function parseHeapSpaces(text: string): HeapSpaces | undefined {
  const spaces: Record<string, number> = {};
  for (const m of text.matchAll(/^nodejs_heap_space_size_total_bytes\{space="([^"]+)"\} (\S+)$/gm)) spaces[m[1]!] = mb(Number(m[2]));
  const one = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  if (!Object.keys(spaces).length) return undefined;
  return {
    spacesMB: spaces,
    heapTotalMB: mb(one('nodejs_heap_size_total_bytes')),
    heapUsedMB: mb(one('nodejs_heap_size_used_bytes')),
    externalMB: mb(one('nodejs_external_memory_bytes')),
  };
}

/** Polls the metrics endpoint and keeps the sample with the largest committed heap + external since the last mark. */
export class HeapSampler {
  private timer: NodeJS.Timeout | undefined;
  private peak: HeapSpaces | undefined;
  private url: string | undefined;
  private busy = false;

  /** The controller's "serving metrics" log line gives the port (it binds 127.0.0.1:0). */
  seeLine(line: string): void {
    const m = /"address":"127\.0\.0\.1:(\d+)".*"msg":"serving metrics"/.exec(line);
    if (m) this.url = `http://127.0.0.1:${m[1]}/metrics`;
  }

  start(intervalMs = 500): void {
    this.timer = setInterval(() => void this.sample(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  markPeak(): void {
    this.peak = undefined;
  }

  peakSince(): HeapSpaces | undefined {
    return this.peak;
  }

  async sample(): Promise<HeapSpaces | undefined> {
    if (!this.url || this.busy) return undefined;
    this.busy = true;
    try {
      const h = parseHeapSpaces(await (await fetch(this.url, { signal: AbortSignal.timeout(2000) })).text());
      if (h && (!this.peak || h.heapTotalMB + h.externalMB > this.peak.heapTotalMB + this.peak.externalMB)) this.peak = h;
      return h;
    } catch {
      return undefined; // the controller may be busy or gone; the next sample tries again
    } finally {
      this.busy = false;
    }
  }
}

/** "new 8, old 25.2, code 1.3, large_object 5.1 …; external 5.5; outside V8 63.1 MB" for a report line. */
export function formatHeapSpaces(h: HeapSpaces, rssMB: number): string {
  const spaces = Object.entries(h.spacesMB)
    .filter(([, v]) => v >= 0.1)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k.replace(/_space$/, '')} ${v}`)
    .join(', ');
  return `V8 heap ${h.heapTotalMB} MB committed (${h.heapUsedMB} used): ${spaces}; external ${h.externalMB} MB; the rest of the RSS peak ${Math.round((rssMB - h.heapTotalMB - h.externalMB) * 10) / 10} MB (binary, libraries, malloc)`;
}
