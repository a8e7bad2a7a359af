#!/usr/bin/env node
/**
 * Summarises a V8 .cpuprofile (from `node --cpu-prof`, e.g. the controller run
 * through --controller-cmd): self time by function and by package/file, and
 * total (inclusive) time of the project's own functions.
 *
 *   node dist/bench/profile-summary.js <file.cpuprofile> [top]
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

function where(url: string): string {
  if (!url) return '(native/V8)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  if (url.startsWith('node:')) return url;
  const ours = /\/dist\/(src\/.*)$/.exec(url);
  return ours ? ours[1]! : url.replace(/^file:\/\//, '');
}

export function summarize(p: Profile, top = 25): string {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0) / 1000));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const fnSelf = new Map<string, number>();
  const pkgSelf = new Map<string, number>();
  const oursTotal = new Map<string, number>();
  for (const [id, ms] of self) {
    const n = byId.get(id)!;
    const f = n.callFrame;
    const name = `${f.functionName || '(anonymous)'} ${where(f.url)}:${f.lineNumber + 1}`;
    fnSelf.set(name, (fnSelf.get(name) ?? 0) + ms);
    const special = ['(idle)', '(garbage collector)', '(program)'].includes(f.functionName) ? f.functionName : where(f.url);
    pkgSelf.set(special, (pkgSelf.get(special) ?? 0) + ms);
    // inclusive time of our own functions: walk the stack once per distinct frame
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const cf = byId.get(cur)!.callFrame;
      if (!cf.url.includes('/dist/src/')) continue;
      const k = `${cf.functionName || '(anonymous)'} ${where(cf.url)}:${cf.lineNumber + 1}`;
      if (seen.has(k)) continue;
      seen.add(k);
      oursTotal.set(k, (oursTotal.get(k) ?? 0) + ms);
    }
  }
  const idle = pkgSelf.get('(idle)') ?? 0;
  const busy = total - idle;
  const fmt = (m: Map<string, number>, n: number, base: number) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, ms]) => `  ${ms.toFixed(0).padStart(7)} ms ${((ms / base) * 100).toFixed(1).padStart(5)}%  ${k}`)
      .join('\n');
  return [
    `profile: ${(total / 1000).toFixed(1)} s sampled, ${(busy / 1000).toFixed(1)} s busy (not idle)`,
    `self time by package/file (% of busy):`,
    fmt(new Map([...pkgSelf].filter(([k]) => k !== '(idle)')), top, busy),
    `self time by function (% of busy):`,
    fmt(new Map([...fnSelf].filter(([k]) => !k.startsWith('(idle)'))), top, busy),
    `inclusive time of the project's functions (% of busy):`,
    fmt(oursTotal, top, busy),
  ].join('\n');
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write('usage: profile-summary <file.cpuprofile> [top]\n');
    process.exit(2);
  }
  process.stdout.write(summarize(JSON.parse(readFileSync(file, 'utf8')) as Profile, Number(process.argv[3] ?? 25)) + '\n');
}
