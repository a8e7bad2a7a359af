/**
 * Side by side: the JSON results (`npm run bench -- … --json FILE`) of
 * several controllers, or of one controller under several settings, as one
 * Markdown table, a column per result. Each result is labelled by its file
 * name unless `label=FILE` is given.
 *
 *   node dist/bench/compare.js ours=burst-ours.json other=burst-other.json [--pass 2]
 *
 * Results that do not match (another workload, another Tekton mode, another
 * machine) are still compared, with a warning: the figures only mean
 * something side by side when they come from the same workload in one
 * sitting.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { BenchResult, PassResult } from './types.js';

interface Column {
  label: string;
  result: BenchResult;
}

type Row = [string, (c: Column, pass: PassResult | undefined) => string | number | null | undefined];

const dash = '–';

function fmt(v: string | number | null | undefined): string {
  if (v === null || v === undefined || (typeof v === 'number' && !Number.isFinite(v))) return dash;
  return typeof v === 'number' ? String(Math.round(v * 10) / 10) : v;
}

const ROWS: Row[] = [
  ['controller command', (c) => `\`${c.result.meta.controllerCmd.replace(/ --remote-kubeconfig.*$/, ' …')}\``],
  ['commit', (c) => `${c.result.meta.commit}${c.result.meta.dirty ? ' (dirty)' : ''}`],
  ['Tekton', (_c, p) => p?.workload.tekton],
  ['remote side', (c) => (c.result.kcp ? `kcp, ${c.result.kcp.workspaces} workspaces` : 'one plain cluster')],
  ['workload', (_c, p) => (p ? `N=${p.workload.requests} ${p.workload.mode === 'burst' ? 'burst' : `at ${p.workload.rate}/s`}` : undefined)],
  ['correctness', (c, p) => (p ? (p.correctness.ok ? 'OK' : 'FAIL') : c.result.ok ? 'OK' : 'FAIL')],
  ['ready after start (ms)', (c) => c.result.controllerStart?.readyMs],
  ['RSS at ready (MB)', (c) => c.result.controllerStart?.rssAtReadyMB],
  ['throughput (requests/s)', (_c, p) => p?.throughput],
  ['create→Running p50 / p99 (ms)', (_c, p) => (p ? `${fmt(p.latencyMs.createToRunning?.p50)} / ${fmt(p.latencyMs.createToRunning?.p99)}` : undefined)],
  ['create→terminal p50 / p99 (ms)', (_c, p) => (p ? `${fmt(p.latencyMs.createToTerminal?.p50)} / ${fmt(p.latencyMs.createToTerminal?.p99)}` : undefined)],
  ['state writes per allowed request, mean (max)', (_c, p) => (p ? `${fmt(p.api.stateWritesPerAllowed.mean)} (${fmt(p.api.stateWritesPerAllowed.max)})` : undefined)],
  ['Events per request', (_c, p) => p?.api.eventsPerRequest],
  ['controller CPU ms per request', (_c, p) => p?.controller.cpuMsPerRequest],
  ['controller RSS peak (MB)', (_c, p) => p?.controller.rssPeakMB],
  ['kcp CPU ms per request', (_c, p) => (p?.kcp ? p.cpuMsPerRequest['kcp'] : undefined)],
  ['kcp RSS at controller ready / peak (MB)', (c, p) => (p?.kcp ? `${fmt(c.result.kcp?.rssAtControllerReadyMB)} / ${fmt(p.kcp.rssPeakMB)}` : undefined)],
  ['remote apiserver CPU ms per request', (_c, p) => (p && !p.kcp ? p.cpuMsPerRequest['remoteApiserver'] : undefined)],
  ['total CPU ms per request (all processes)', (_c, p) => p?.cpuMsPerRequest.total],
  ['other load on the machine (cores)', (_c, p) => p?.cpuCores['otherProcesses']],
  ['scale: finished requests', (c) => c.result.scale?.preexisting],
  ['scale: ready (ms)', (c) => c.result.scale?.readyMs],
  ['scale: RSS settled (MB)', (c) => c.result.scale?.rssSettledMB],
];

export function compare(columns: Column[], passNumber: number | undefined): string {
  const passOf = (c: Column): PassResult | undefined => (passNumber === undefined ? c.result.passes[c.result.passes.length - 1] : c.result.passes.find((p) => p.pass === passNumber));
  const lines = [`| | ${columns.map((c) => c.label).join(' | ')} |`, `|---|${columns.map(() => '---').join('|')}|`];
  for (const [name, get] of ROWS) {
    const cells = columns.map((c) => fmt(get(c, passOf(c))));
    if (cells.every((x) => x === dash)) continue;
    lines.push(`| ${name} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

/** What makes a comparison of these results doubtful, one line each. */
export function mismatches(columns: Column[], passNumber: number | undefined): string[] {
  const out: string[] = [];
  const key = (c: Column) => {
    const p = passNumber === undefined ? c.result.passes[c.result.passes.length - 1] : c.result.passes.find((x) => x.pass === passNumber);
    return p ? `N=${p.workload.requests} ${p.workload.mode} rate=${p.workload.rate ?? '-'} tekton=${p.workload.tekton} delay=${p.workload.executorDelayMs}` : `scale=${c.result.scale?.preexisting ?? '-'}`;
  };
  const keys = new Set(columns.map(key));
  if (keys.size > 1) out.push(`different workloads: ${columns.map((c) => `${c.label}: ${key(c)}`).join('; ')}`);
  const machines = new Set(columns.map((c) => `${c.result.meta.cpus}×${c.result.meta.cpuModel} ${c.result.meta.memoryGB} GB`));
  if (machines.size > 1) out.push(`different machines: ${[...machines].join(' / ')}`);
  const days = new Set(columns.map((c) => c.result.meta.date.slice(0, 10)));
  if (days.size > 1) out.push(`different days: ${[...days].join(', ')} (not one sitting)`);
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const pi = args.indexOf('--pass');
  const pass = pi >= 0 ? Number(args.splice(pi, 2)[1]) : undefined;
  if (!args.length) {
    process.stderr.write('usage: compare [label=]result.json … [--pass N]\n');
    process.exit(2);
  }
  const columns = args.map((a) => {
    const eq = a.indexOf('=');
    const file = eq > 0 ? a.slice(eq + 1) : a;
    return { label: eq > 0 ? a.slice(0, eq) : basename(file, '.json'), result: JSON.parse(readFileSync(file, 'utf8')) as BenchResult };
  });
  for (const m of mismatches(columns, pass)) process.stderr.write(`warning: ${m}\n`);
  process.stdout.write(`${compare(columns, pass)}\n`);
}
