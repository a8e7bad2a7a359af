/**
 * Sums an allocation profile written by alloc-profile.ts (V8's sampling heap
 * profile, freed objects included) by allocating function and by package:
 *
 *   node dist/bench/alloc-summary.js alloc.json [--top 25] [--requests N]
 *
 * With --requests, the bytes are also given per request. The figures are
 * estimates from samples (one every `samplingInterval` bytes on average).
 */
import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  callFrame: CallFrame;
  selfSize: number;
  children: ProfileNode[];
}
interface AllocProfile {
  samplingInterval: number;
  profile: { head: ProfileNode };
}

export interface AllocRow {
  name: string;
  bytes: number;
}

/** The package (node_modules/<name>) or file a frame's code comes from. */
export function packageOf(url: string): string {
  if (!url) return '(V8/native)';
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0];
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1]!;
  const d = /\/dist\/(src\/[^/]+|bench|bundle)\//.exec(url);
  return d ? d[1]! : url.replace(/^.*\//, '');
}

export function summariseAlloc(p: AllocProfile): { total: number; byFunction: AllocRow[]; byPackage: AllocRow[] } {
  const byFunction = new Map<string, number>();
  const byPackage = new Map<string, number>();
  let total = 0;
  const walk = (n: ProfileNode) => {
    if (n.selfSize) {
      total += n.selfSize;
      const where = /node_modules|^node:|^$/.test(n.callFrame.url) ? packageOf(n.callFrame.url) : n.callFrame.url.replace(/^.*\/dist\//, '');
      const f = `${n.callFrame.functionName || '(anonymous)'} ${where}:${n.callFrame.lineNumber + 1}`;
      byFunction.set(f, (byFunction.get(f) ?? 0) + n.selfSize);
      const pkg = packageOf(n.callFrame.url);
      byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + n.selfSize);
    }
    for (const c of n.children) walk(c);
  };
  walk(p.profile.head);
  const sorted = (m: Map<string, number>) => [...m].map(([name, bytes]) => ({ name, bytes })).sort((a, b) => b.bytes - a.bytes);
  return { total, byFunction: sorted(byFunction), byPackage: sorted(byPackage) };
}

function main(): void {
  const args = process.argv.slice(2);
  const file = args.find((a) => !a.startsWith('--'));
  const opt = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? Number(args[i + 1]) : undefined;
  };
  if (!file) {
    process.stderr.write('usage: alloc-summary FILE.json [--top N] [--requests N]\n');
    process.exit(2);
  }
  const top = opt('--top') ?? 25;
  const requests = opt('--requests');
  const s = summariseAlloc(JSON.parse(readFileSync(file, 'utf8')) as AllocProfile);
  const mbs = (b: number) => (b / (1024 * 1024)).toFixed(1).padStart(8) + ' MB' + (requests ? `  ${(b / requests / 1024).toFixed(1).padStart(6)} kB/request` : '');
  const out = [`allocated (sampled, freed objects included): ${mbs(s.total)}`, '', 'by package:'];
  for (const r of s.byPackage.slice(0, top)) out.push(`  ${r.name.slice(0, 60).padEnd(60)} ${mbs(r.bytes)}`);
  out.push('', 'by function:');
  for (const r of s.byFunction.slice(0, top)) out.push(`  ${r.name.slice(0, 60).padEnd(60)} ${mbs(r.bytes)}`);
  process.stdout.write(out.join('\n') + '\n');
}

if (import.meta.url === `file://${process.argv[1]}`) main();
