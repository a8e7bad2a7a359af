/**
 * `npm run bench -- --against-incumbent …` (issue 55): the same workload
 * through this controller and through the Go controller it replaces, in one
 * sitting, alternating, each run on a fresh pair of control planes set up
 * the same way, with the same executor; the Go controller run twice, with
 * its default client rate limits (as its users run it) and with them lifted.
 * Every row is printed with its ratio to each Go column.
 *
 * The rows: burst throughput, latency, controller CPU per request, RSS peak
 * in a burst, the controller's API requests per request (audit log); in
 * scale mode, time to ready and to the first new request served and RSS with
 * M finished requests. `--all-rows` runs every mode in one sitting: a burst
 * (--requests, 2 passes), 600 requests at 20/s, 10,000 and 100,000 finished
 * requests.
 */
import { incumbentBuild, incumbentCommand, INCUMBENT_READY_LOG } from './incumbent.js';
import { runBenchmark } from './run.js';
import type { BenchOptions, BenchResult, PassResult, ScaleResult } from './types.js';

interface Contender {
  label: string;
  patch: Partial<BenchOptions>;
}

interface Mode {
  label: string;
  patch: Partial<BenchOptions>;
}

type Better = 'higher' | 'lower';
type Figure = [label: string, better: Better, get: (r: BenchResult) => number | null | undefined];

const lastPass = (r: BenchResult): PassResult | undefined => r.passes[r.passes.length - 1];
const scaleOf = (r: BenchResult): ScaleResult | undefined => r.scale ?? undefined;
const bareMs = (r: BenchResult): number | undefined => {
  const b = r.scale?.bareList;
  return b && !('error' in b) ? b.ms : undefined;
};

const WORKLOAD_ROWS: Figure[] = [
  ['throughput, last pass (requests/s)', 'higher', (r) => lastPass(r)?.throughput],
  ['create→Running p50 (ms)', 'lower', (r) => lastPass(r)?.latencyMs.createToRunning?.p50],
  ['create→Running p99 (ms)', 'lower', (r) => lastPass(r)?.latencyMs.createToRunning?.p99],
  ['create→terminal p50 (ms)', 'lower', (r) => lastPass(r)?.latencyMs.createToTerminal?.p50],
  ['controller CPU per request (ms)', 'lower', (r) => lastPass(r)?.controller.cpuMsPerRequest],
  ['controller RSS peak (MB)', 'lower', (r) => lastPass(r)?.controller.rssPeakMB],
  ['controller API requests per request (audit)', 'lower', (r) => lastPass(r)?.api.totals.perRequest],
  ['ready after start (ms)', 'lower', (r) => r.controllerStart?.readyMs],
  ['RSS at ready (MB)', 'lower', (r) => r.controllerStart?.rssAtReadyMB],
];

const SCALE_ROWS: Figure[] = [
  ['ready after start (ms)', 'lower', (r) => scaleOf(r)?.readyMs],
  ['first new request terminal after start (ms)', 'lower', (r) => scaleOf(r)?.firstNew.fresh.terminalMs],
  ['RSS settled (MB)', 'lower', (r) => scaleOf(r)?.rssSettledMB],
  ['RSS peak (MB)', 'lower', (r) => scaleOf(r)?.rssPeakMB],
  ['controller CPU to ready (s)', 'lower', (r) => scaleOf(r)?.cpuSecondsToReady],
  // The environment, not the controller: how long the apiserver took to stream the same requests to a client that keeps nothing (the ratio says how alike the runs' machines were).
  ['the floor: bare streamed list (ms)', 'lower', (r) => bareMs(r)],
  ['ready above the floor (ms)', 'lower', (r) => {
    const s = scaleOf(r);
    const floor = bareMs(r);
    return s && floor !== undefined ? s.readyMs - floor : undefined;
  }],
];

function modesOf(base: BenchOptions, allRows: boolean): Mode[] {
  if (allRows) {
    return [
      { label: `burst of ${base.requests || 1000}, 2 passes`, patch: { requests: base.requests || 1000, rate: undefined, passes: 2, scale: undefined } },
      { label: '600 requests at 20/s', patch: { requests: 600, rate: 20, passes: 1, scale: undefined } },
      { label: '10,000 finished requests', patch: { scale: 10_000, requests: 0 } },
      { label: '100,000 finished requests', patch: { scale: 100_000, requests: 0, readyTimeoutSeconds: Math.max(base.readyTimeoutSeconds, 600) } },
    ];
  }
  if (base.scale !== undefined) return [{ label: `${base.scale} finished requests`, patch: {} }];
  return [{ label: `${base.requests} requests ${base.rate === undefined ? 'in a burst' : `at ${base.rate}/s`}, ${base.passes} pass(es)`, patch: {} }];
}

function median(xs: number[]): number | null {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const fmt = (v: number | null) => (v === null ? '–' : String(Math.round(v * 100) / 100));

/** "0.48× (ahead)": ours over theirs, and whether that is ahead for a figure where `better` wins. */
function ratio(ours: number | null, theirs: number | null, better: Better): string {
  if (ours === null || theirs === null || theirs === 0) return '–';
  const r = ours / theirs;
  const ahead = better === 'higher' ? r > 1 : r < 1;
  return `${r.toFixed(2)}× (${r === 1 ? 'even' : ahead ? 'ahead' : 'BEHIND'})`;
}

export interface AgainstResult {
  ok: boolean;
  table: string;
  /** A run without a result did not get to measure anything: `error` says why (e.g. the controller was killed at its memory limit before it was ready). */
  runs: Array<{ mode: string; contender: string; sitting: number; result?: BenchResult; error?: string }>;
}

/** The first line of a failed run's error, and the memory limit when the kernel killed the controller (SIGKILL under a limit is the OOM killer's). */
export function runFailure(e: unknown, memoryLimitMiB: number): string {
  const first = String((e as Error)?.message ?? e).split('\n')[0]!.replace(/; log \S+:?$/, '');
  return /SIGKILL/.test(first) && memoryLimitMiB > 0 ? `${first}: killed at its ${memoryLimitMiB} MiB memory limit` : first;
}

export async function runAgainstIncumbent(base: BenchOptions, o: { sittings: number; allRows: boolean }, log: (m: string) => void): Promise<AgainstResult> {
  const go = incumbentBuild(log);
  log(`the Go controller at ${go.commit}: ${go.bin} (its default client limits), ${go.unlimitedBin} (limits lifted)`);
  const goPatch = (bin: string, slow: boolean): Partial<BenchOptions> => ({
    controllerCmd: incumbentCommand(bin),
    readyLog: INCUMBENT_READY_LOG,
    incumbentSource: go.source,
    // At 5 writes/s to the remote cluster a burst takes minutes: it is given the time to finish, not failed for being slow.
    ...(slow ? { timeoutSeconds: Math.max(base.timeoutSeconds ?? 0, 1_800) } : {}),
  });
  const contenders: Contender[] = [
    { label: 'this controller', patch: {} },
    { label: 'Go, default limits', patch: goPatch(go.bin, true) },
    { label: 'Go, limits lifted', patch: goPatch(go.unlimitedBin, false) },
  ];
  const modes = modesOf(base, o.allRows);
  const runs: AgainstResult['runs'] = [];
  for (let sitting = 1; sitting <= o.sittings; sitting++) {
    for (const mode of modes) {
      // Alternating: each sitting turns the order round, so that neither side always goes first on a warming machine.
      const order = sitting % 2 ? contenders : [...contenders].reverse();
      for (const c of order) {
        log(`sitting ${sitting}/${o.sittings}, ${mode.label}: ${c.label}`);
        const opts = { ...base, ...mode.patch, ...c.patch, requestShape: 'pipeline' as const, json: undefined };
        // One controller that cannot run a mode (killed at its memory limit
        // while listing 100,000 requests) is a row of the table, not the end of the sitting.
        try {
          const result = await runBenchmark(opts, (m) => log(`  [${c.label}] ${m}`));
          runs.push({ mode: mode.label, contender: c.label, sitting, result });
          if (!result.ok) log(`  [${c.label}] INCORRECT: ${result.failures.slice(0, 5).join('; ')}`);
        } catch (e) {
          const error = runFailure(e, opts.memoryLimitMiB);
          runs.push({ mode: mode.label, contender: c.label, sitting, error });
          log(`  [${c.label}] FAILED: ${error}`);
        }
      }
    }
  }
  const out: string[] = [];
  const names = contenders.map((c) => c.label);
  for (const mode of modes) {
    const mine = runs.filter((r) => r.mode === mode.label);
    const rows = mode.patch.scale !== undefined || base.scale !== undefined ? SCALE_ROWS : WORKLOAD_ROWS;
    out.push(`### ${mode.label} (${o.sittings} sitting(s); median of each)`, '', `| | ${names.join(' | ')} | this ÷ Go default | this ÷ Go lifted |`, '|---|---|---|---|---|---|');
    for (const [label, better, get] of rows) {
      const col = names.map((n) => median(mine.filter((r) => r.contender === n && r.result).map((r) => get(r.result!)).filter((v): v is number => typeof v === 'number' && Number.isFinite(v))));
      out.push(`| ${label} | ${col.map(fmt).join(' | ')} | ${ratio(col[0]!, col[1]!, better)} | ${ratio(col[0]!, col[2]!, better)} |`);
    }
    const correct = names.map((n) => {
      const these = mine.filter((r) => r.contender === n);
      const failed = these.find((r) => r.error);
      if (failed) return `FAILED: ${failed.error}`;
      return these.every((r) => r.result!.ok) ? 'OK' : 'FAIL';
    });
    out.push(`| correctness | ${correct.join(' | ')} | | |`, '');
  }
  const m = runs.find((r) => r.result)?.result!.meta;
  out.push(`Commit ${m?.commit ?? '?'}${m?.dirty ? ' (uncommitted changes)' : ''}; the Go controller at ${go.commit}; Tekton: ${base.tekton === 'real' ? 'real Tekton, pods SIMULATED' : 'the SIMULATED executor completes the PipelineRuns'}; requests name the Pipeline with the cluster resolver by name (the shape both controllers run).`);
  // A Go run that could not run (killed at its limit) is a finding, not a failure of the sitting; this controller's must pass.
  return { ok: runs.every((r) => (r.result ? r.result.ok : r.contender !== contenders[0]!.label)), table: out.join('\n'), runs };
}
