/** `npm run chaos`: the chaos run (bench/chaos.ts) or the soak (bench/soak.ts) from the command line. */
import { writeFileSync } from 'node:fs';
import { randomInt } from 'node:crypto';
import { Command, InvalidArgumentError, Option } from 'commander';
import { runChaos } from './chaos.js';
import { formatChaos } from './chaos-report.js';
import { FAULT_KINDS, type FaultKind } from './chaos-types.js';
import { runSoak } from './soak.js';
import { parseDuration } from '../src/util/duration.js';

const int = (min: number) => (v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`must be an integer ≥ ${min}`);
  return n;
};

const program = new Command('chaos')
  .description('Requests flow while faults are injected at random times (from a seed); then what was lost is counted')
  .addOption(new Option('--requests <n>', 'requests in the chaos pass').default(500).argParser(int(1)))
  .addOption(new Option('--rate <n>', 'requests per second').default(10).argParser(int(1)))
  .addOption(new Option('--seed <n>', 'seed of the fault schedule (printed; the same seed, the same faults)').argParser(int(0)))
  .addOption(new Option('--faults <n>', 'faults in all, kinds in turn').default(11).argParser(int(0)))
  .addOption(new Option('--kinds <list>', `comma-separated fault kinds (${FAULT_KINDS.join(', ')})`).default(FAULT_KINDS.join(',')))
  .addOption(new Option('--fault-seconds <from-to>', 'how long a fault with a duration lasts').default('2-8'))
  .addOption(new Option('--gap <seconds>', 'quiet time after each fault before the next (each recovery measured on its own)').default(5).argParser(int(0)))
  .addOption(new Option('--baseline <n>', 'requests of a fault-free pass first, for the latency the faults add (0: none)').default(100).argParser(int(0)))
  .addOption(new Option('--step-ms <n>', 'how long a simulated PipelineRun takes').default(500).argParser(int(0)))
  .addOption(new Option('--settle <seconds>', 'how long to wait for the requests to finish after the last fault').default(300).argParser(int(10)))
  .addOption(new Option('--tekton <who>', 'who runs the PipelineRuns: simulated (the fast stand-in) or real (Tekton v1.6 built from its module, pods simulated)').default('simulated').choices(['simulated', 'real']))
  .addOption(new Option('--history <n>', 'finished requests created on the remote cluster before the controllers start (every start and restart lists them); checked to be left alone').default(0).argParser(int(0)))
  .addOption(new Option('--json <path>', 'also write the result as JSON'))
  .addOption(new Option('--soak <duration>', 'soak mode instead: one controller at --rate for this long (e.g. 1h), printing RSS, heap, file descriptors and event-loop delay, and their slopes'))
  .addOption(new Option('--sample-every <duration>', 'soak mode: time between two samples').default('30s'))
  .action(async (f: { requests: number; rate: number; seed?: number; faults: number; kinds: string; faultSeconds: string; baseline: number; gap: number; stepMs: number; settle: number; history: number; json?: string; soak?: string; sampleEvery: string; tekton: 'simulated' | 'real' }) => {
    if (f.soak !== undefined) {
      const durationMs = parseDuration(f.soak);
      const sampleEveryMs = parseDuration(f.sampleEvery);
      if (!durationMs || durationMs < 10_000) throw new InvalidArgumentError('--soak must be a duration of at least 10s, like 1h');
      if (!sampleEveryMs || sampleEveryMs < 1000) throw new InvalidArgumentError('--sample-every must be a duration of at least 1s');
      const log = (msg: string) => process.stderr.write(`${msg}\n`);
      const r = await runSoak({ rate: f.rate, durationMs, sampleEveryMs, stepMs: f.stepMs, log });
      const first = r.samples[0]!;
      const last = r.samples[r.samples.length - 1]!;
      process.stdout.write(
        `soak: ${r.requests} requests at ${f.rate}/s for ${f.soak} (${r.failed} not finished), one controller process (the bundle), finished requests removed by ttlSecondsAfterFinished: 30 (Tekton: simulated executor)\n` +
          `  rss ${first.rssMb} → ${last.rssMb} MB, heap ${first.heapMb} → ${last.heapMb} MB, external ${first.externalMb} → ${last.externalMb} MB, fds ${first.fds} → ${last.fds}, event-loop p99 at the end ${last.eventLoopP99Ms} ms\n` +
          `  slopes over the second half: rss ${r.rssMbPer10Min} MB/10 min, heap ${r.heapMbPer10Min} MB/10 min, external ${r.externalMbPer10Min} MB/10 min, fds ${r.fdsPer10Min}/10 min\n`,
      );
      if (f.json) writeFileSync(f.json, JSON.stringify(r, null, 2));
      process.exitCode = r.failed === 0 ? 0 : 1;
      return;
    }
    const kinds = f.kinds.split(',').map((k) => k.trim()) as FaultKind[];
    const unknown = kinds.filter((k) => !FAULT_KINDS.includes(k));
    if (unknown.length) throw new InvalidArgumentError(`unknown fault kinds: ${unknown.join(', ')}`);
    const m = /^(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)$/.exec(f.faultSeconds);
    if (!m) throw new InvalidArgumentError('--fault-seconds must look like 2-8');
    const seed = f.seed ?? randomInt(1, 2 ** 31 - 1);
    const log = (msg: string) => process.stderr.write(`${msg}\n`);
    log(`chaos: seed ${seed} (replay with --seed ${seed})`);
    const result = await runChaos({
      requests: f.requests,
      rate: f.rate,
      seed,
      faults: f.faults,
      kinds,
      faultSeconds: [Number(m[1]), Number(m[2])],
      gapSeconds: f.gap,
      tekton: f.tekton,
      baseline: f.baseline,
      stepMs: f.stepMs,
      settleSeconds: f.settle,
      history: f.history,
      log,
    });
    process.stdout.write(`${formatChaos(result)}\n`);
    if (f.json) writeFileSync(f.json, JSON.stringify(result, null, 2));
    process.exitCode = result.ok ? 0 : 1;
  });

program.parseAsync(process.argv).catch((e: unknown) => {
  process.stderr.write(`chaos: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(2);
});
