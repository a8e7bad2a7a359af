/**
 * Counting API requests from an apiserver's audit log (JSON lines, level
 * Metadata, RequestReceived stage omitted — see src/localenv/real/environment.ts).
 *
 * A request appears once (ResponseComplete), except long-running ones
 * (watches), which also have a ResponseStarted line: requests are therefore
 * counted by auditID, each at its first line. The reader consumes the file
 * incrementally, so a run can be cut into windows ("startup", "pass 1", …).
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';

export interface AuditEvent {
  auditID: string;
  stage: string;
  verb: string;
  requestURI?: string;
  user?: { username?: string };
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string; apiGroup?: string };
  responseStatus?: { code?: number };
  requestReceivedTimestamp?: string;
  stageTimestamp?: string;
}

export type Category = 'list/watch' | 'read' | 'write' | 'other';

export function categoryOf(verb: string): Category {
  if (verb === 'list' || verb === 'watch') return 'list/watch';
  if (verb === 'get') return 'read';
  if (verb === 'create' || verb === 'update' || verb === 'patch' || verb === 'delete' || verb === 'deletecollection') return 'write';
  return 'other';
}

/** "internalrequests/status", "pipelineruns", or the path of a non-resource request. */
export function resourceOf(e: AuditEvent): string {
  const r = e.objectRef?.resource;
  if (!r) return `nonresource:${(e.requestURI ?? '?').split('?')[0]}`;
  return e.objectRef?.subresource ? `${r}/${e.objectRef.subresource}` : r;
}

export class AuditReader {
  private offset = 0;
  private readonly seen = new Set<string>();

  constructor(
    readonly cluster: string,
    readonly path: string,
  ) {}

  /**
   * Passes over what the log holds now without reading it (up to its last
   * complete line): e.g. the 100,000 creates of a chaos run's history.
   */
  passOver(): void {
    let size: number;
    try {
      size = statSync(this.path).size;
    } catch {
      return;
    }
    const fd = openSync(this.path, 'r');
    try {
      // The last newline, looked for backwards in 64 KiB steps.
      for (let end = size; end > this.offset; ) {
        const start = Math.max(this.offset, end - 65_536);
        const buf = Buffer.alloc(end - start);
        readSync(fd, buf, 0, buf.length, start);
        const nl = buf.lastIndexOf(0x0a);
        if (nl >= 0) {
          this.offset = start + nl + 1;
          return;
        }
        end = start;
      }
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Events of requests first seen since the previous call (complete lines
   * only). Requests already counted in an earlier window (e.g. a watch that
   * started there and ended now) are not returned again.
   */
  readNew(): AuditEvent[] {
    let size: number;
    try {
      size = statSync(this.path).size;
    } catch {
      return [];
    }
    if (size <= this.offset) return [];
    const buf = Buffer.alloc(size - this.offset);
    const fd = openSync(this.path, 'r');
    try {
      let got = 0;
      while (got < buf.length) {
        const n = readSync(fd, buf, got, buf.length - got, this.offset + got);
        if (n <= 0) break;
        got += n;
      }
    } finally {
      closeSync(fd);
    }
    const end = buf.lastIndexOf(0x0a);
    if (end < 0) return [];
    this.offset += end + 1;
    const out: AuditEvent[] = [];
    for (const line of buf.subarray(0, end).toString('utf8').split('\n')) {
      if (!line) continue;
      let e: AuditEvent;
      try {
        e = JSON.parse(line) as AuditEvent;
      } catch {
        continue;
      }
      if (!e.auditID || this.seen.has(e.auditID)) continue;
      this.seen.add(e.auditID);
      out.push(e);
    }
    return out;
  }
}

export interface ApiCount {
  cluster: string;
  verb: string;
  resource: string;
  category: Category;
  count: number;
  /** Responses that were not 2xx, by code (e.g. {"409": 3}). */
  failed: Record<string, number>;
  /** Time the apiserver took (request received → response complete, from the audit timestamps), ms; null for watches. */
  serverMsP50: number | null;
  serverMsP99: number | null;
}

interface Counting extends ApiCount {
  samples: number[];
}

/** µs-precision RFC 3339 → ms since the epoch (Date.parse keeps only ms). */
function parseMicros(ts: string | undefined): number | undefined {
  if (!ts) return undefined;
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?Z$/.exec(ts);
  if (!m) return undefined;
  const base = Date.parse(`${m[1]}Z`);
  const frac = m[2] ? Number(`0.${m[2]}`) * 1000 : 0;
  return base + frac;
}

function pct(sorted: number[], p: number): number | null {
  if (!sorted.length) return null;
  const v = sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
  return Math.round(v * 10) / 10;
}

/** Groups events by cluster, verb and resource(+subresource). */
export function countRequests(cluster: string, events: readonly AuditEvent[], into: Map<string, Counting> = new Map()): Map<string, Counting> {
  for (const e of events) {
    const resource = resourceOf(e);
    const key = `${cluster}\u0000${e.verb}\u0000${resource}`;
    let c = into.get(key);
    if (!c) into.set(key, (c = { cluster, verb: e.verb, resource, category: categoryOf(e.verb), count: 0, failed: {}, serverMsP50: null, serverMsP99: null, samples: [] }));
    c.count++;
    const code = e.responseStatus?.code;
    if (code !== undefined && (code < 200 || code >= 300)) c.failed[String(code)] = (c.failed[String(code)] ?? 0) + 1;
    if (e.verb !== 'watch' && e.stage === 'ResponseComplete') {
      const a = parseMicros(e.requestReceivedTimestamp);
      const b = parseMicros(e.stageTimestamp);
      if (a !== undefined && b !== undefined) c.samples.push(b - a);
    }
  }
  return into;
}

export function sortCounts(m: Map<string, Counting>): ApiCount[] {
  const order: Record<Category, number> = { write: 0, read: 1, 'list/watch': 2, other: 3 };
  return [...m.values()].map(({ samples, ...c }) => {
    const sorted = samples.sort((a, b) => a - b);
    return { ...c, serverMsP50: pct(sorted, 50), serverMsP99: pct(sorted, 99) };
  }).sort(
    (a, b) => a.cluster.localeCompare(b.cluster) || order[a.category] - order[b.category] || a.resource.localeCompare(b.resource) || a.verb.localeCompare(b.verb),
  );
}

/** Several audit logs read as one (a sharded kcp: one log per shard), in the order given. */
export class AuditReaders {
  private readonly readers: AuditReader[];

  constructor(cluster: string, paths: readonly string[]) {
    this.readers = paths.map((p) => new AuditReader(cluster, p));
  }

  passOver(): void {
    for (const r of this.readers) r.passOver();
  }

  readNew(): AuditEvent[] {
    return this.readers.flatMap((r) => r.readNew());
  }
}
