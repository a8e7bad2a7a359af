/**
 * A V8 heap snapshot (.heapsnapshot, as `node --heapsnapshot-signal` writes
 * it) summarised the way DevTools' "Summary" view groups it: by constructor
 * for objects, by node type for the rest (strings, code, arrays, hidden
 * objects such as Maps' backing stores), with counts and shallow sizes.
 *
 *   node dist/bench/heap-summary.js FILE.heapsnapshot [--top 25]
 */
import { readFileSync } from 'node:fs';

export interface HeapGroup {
  name: string;
  count: number;
  bytes: number;
}

export interface HeapSummary {
  totalBytes: number;
  nodes: number;
  groups: HeapGroup[];
}

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

export function summariseHeap(text: string, top = 25): HeapSummary {
  const snap = JSON.parse(text) as Snapshot;
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const width = fields.length;
  const fType = fields.indexOf('type');
  const fName = fields.indexOf('name');
  const fSize = fields.indexOf('self_size');
  const groups = new Map<string, HeapGroup>();
  let total = 0;
  const n = snap.nodes.length / width;
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + fType]!] ?? '?';
    const size = snap.nodes[i + fSize]!;
    total += size;
    const name = type === 'object' || type === 'native' ? snap.strings[snap.nodes[i + fName]!] ?? '?' : `(${type})`;
    let g = groups.get(name);
    if (!g) groups.set(name, (g = { name, count: 0, bytes: 0 }));
    g.count++;
    g.bytes += size;
  }
  const sorted = [...groups.values()].sort((a, b) => b.bytes - a.bytes);
  return { totalBytes: total, nodes: n, groups: sorted.slice(0, top) };
}

export function formatHeap(h: HeapSummary): string {
  const mb = (b: number) => (b / (1024 * 1024)).toFixed(1);
  const lines = [`  heap snapshot: ${mb(h.totalBytes)} MB in ${h.nodes} objects; largest groups (shallow size):`];
  for (const g of h.groups) lines.push(`    ${g.name.slice(0, 48).padEnd(48)} ${String(g.count).padStart(8)}  ${mb(g.bytes).padStart(7)} MB`);
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = process.argv[2];
  if (!file) {
    process.stderr.write('usage: heap-summary FILE.heapsnapshot [--top N]\n');
    process.exit(2);
  }
  const i = process.argv.indexOf('--top');
  const top = i > 0 ? Number(process.argv[i + 1]) : 25;
  process.stdout.write(`${formatHeap(summariseHeap(readFileSync(file, 'utf8'), top))}\n`);
}
