#!/usr/bin/env node
/**
 * `npm run bench -- [flags]`: measures a controller the way its operators
 * would, on two local control planes. See docs/benchmarks.md.
 */
import { DEPLOYMENT_MEMORY_LIMIT_MIB } from './memory-limit.js';
import { writeFileSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import { CONTROLLER_USERNAME } from '../src/localenv/index.js';
import { DEFAULT_CONTROLLER_CMD, DEFAULT_READY_LOG } from './controller-process.js';
import { formatReport } from './report.js';
import { runAgainstIncumbent } from './against.js';
import { runBenchmark } from './run.js';
import type { BenchOptions, TektonMode } from './types.js';

function int(min: number, max = Number.MAX_SAFE_INTEGER) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`must be an integer from ${min} to ${max}`);
    return n;
  };
}

function positive(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a positive number');
  return n;
}

function share(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0 || n >= 1) throw new InvalidArgumentError('must be a number from 0 to below 1');
  return n;
}

interface Flags {
  noisyNeighbour?: boolean;
  tekton: TektonMode;
  tektonApiQps?: number;
  controllerCmd: string;
  memoryLimit: number;
  readyLog: string;
  controllerUser: string;
  requests: number;
  rate?: number;
  burst?: boolean;
  concurrency: number;
  namespaces: number;
  rejectedShare: number;
  executorDelay: number;
  passes: number;
  json?: string;
  scale?: number | true;
  ceiling?: boolean;
  ceilingClients: number;
  ceilingSeconds: number;
  timeout?: number;
  drain: number;
  readyTimeout: number;
  scrapeInterval: number;
  keep?: boolean;
  heapSnapshot?: boolean;
  quiet?: boolean;
  kcp?: boolean;
  workspaces?: number;
  shards?: number;
  requestShape?: 'request' | 'pipeline';
  againstIncumbent?: boolean;
  sittings?: number;
  allRows?: boolean;
}

export function benchCommand(): Command {
  return new Command('bench')
    .description('Benchmark a controller on two local control planes: throughput, latency, API requests (from audit logs), CPU, memory, correctness')
    .addOption(
      new Option(
        '--tekton <mode>',
        'who runs the PipelineRuns: "simulated" (the simulated executor writes their status directly; no Tekton controller) or "real" (Tekton Pipelines\' controller, resolvers and webhook on the internal cluster; only TaskRun pods are simulated)',
      )
        .choices(['simulated', 'real'])
        .default('simulated'),
    )
    .addOption(
      new Option(
        '--tekton-api-qps <n>',
        "with --tekton real: the Tekton controller's -kube-api-qps (and -kube-api-burst twice that); Tekton doubles both. Default: Tekton's own (20 requests/s after doubling)",
      ).argParser(int(1, 10_000)),
    )
    .addOption(
      new Option('--controller-cmd <template>', 'command starting the controller under test (sh syntax); placeholders {remoteKubeconfig} {internalKubeconfig} {namespace} {node} {repo} {dir}; env REMOTE_KUBECONFIG, KUBECONFIG, POD_NAMESPACE, BENCH_DIR are set too').default(
        DEFAULT_CONTROLLER_CMD,
        'this project\'s CLI',
      ),
    )
    .addOption(new Option('--ready-log <regex>', 'a controller log line matching this means it is ready').default(DEFAULT_READY_LOG))
    .addOption(new Option('--controller-user <name>', "the username the apiservers see for the controller's kubeconfigs").default(CONTROLLER_USERNAME))
    .addOption(new Option('--requests <n>', 'requests per pass (0: none, e.g. with --ceiling)').default(1000).argParser(int(0, 1_000_000)))
    .addOption(new Option('--rate <r>', 'create requests at r per second').argParser(positive).conflicts('burst'))
    .addOption(new Option('--burst', 'create all requests at once (bounded by --concurrency); the default without --rate'))
    .addOption(new Option('--concurrency <n>', 'creates in flight at most in burst mode').default(32).argParser(int(1, 1024)))
    .addOption(new Option('--namespaces <k>', 'allowed namespaces the requests are spread over').default(4).argParser(int(1, 1000)))
    .addOption(new Option('--rejected-share <x>', 'share of requests from namespaces not on the allowList').default(0.1).argParser(share))
    .addOption(new Option('--noisy-neighbour', 'noisy-neighbour workload: all --requests from one namespace, then one request from another once they are created; reports how long that one waited'))
    .addOption(
      new Option('--executor-delay <ms>', 'the simulated executor completes each PipelineRun after this delay; with --tekton real: how long the simulated step of each TaskRun pod runs').default(0).argParser(int(0)),
    )
    .addOption(new Option('--passes <p>', 'run the workload p times against the same controller (pass 1 cold, later ones warm)').default(1).argParser(int(1, 100)))
    .addOption(new Option('--json <file>', 'also write the result as JSON'))
    .addOption(new Option('--scale [m]', 'scale mode: m finished requests exist before the controller starts (default 10000); no workload').argParser(int(1, 1_000_000)))
    .addOption(new Option('--ceiling', "measure the internal apiserver's raw write rate first (create+update+delete of ConfigMaps)"))
    .addOption(new Option('--ceiling-clients <n>', 'concurrent clients of the ceiling measurement').default(8).argParser(int(1, 256)))
    .addOption(new Option('--ceiling-seconds <s>', 'duration of the ceiling measurement').default(10).argParser(int(1, 600)))
    .addOption(
      new Option('--timeout <s>', 'give up on requests still unfinished this many seconds after the last create (default max(60, N/5); with --tekton real max(300, N))').argParser(int(1)),
    )
    .addOption(new Option('--drain <s>', 'after all requests are terminal, wait at most this long for their PipelineRuns to be deleted').default(15).argParser(int(0)))
    .addOption(
      new Option('--memory-limit <MiB>', "the controller's memory limit, as a memory cgroup (Node.js sizes its heap from it); 0: none")
        .default(DEPLOYMENT_MEMORY_LIMIT_MIB)
        .argParser(int(0, 1_000_000)),
    )
    .addOption(
      new Option('--scrape-interval <s>', "how often the benchmark reads the controller's metrics for its heap figures (each read costs the controller a rendering of all its metrics; its ServiceMonitor scrapes every 30 s)")
        .default(5)
        .argParser(positive),
    )
    .addOption(new Option('--ready-timeout <s>', 'how long the controller may take to log its ready line').default(120).argParser(int(1)))
    .addOption(new Option('--heap-snapshot', "heap snapshots of the controller, summarised by constructor: scale mode, once settled; a workload, once ready (the floor) and in the last pass when every create is answered (what a request in flight retains); the files stay in {dir} with --keep"))
    .addOption(
      new Option(
        '--kcp',
        'the remote side is a real kcp: N tenant workspaces (--workspaces) bind the APIExport, the controller serves them with --kcp-kubeconfig (in place of --remote-kubeconfig in --controller-cmd), requests are spread round-robin over them',
      ).conflicts(['scale', 'noisyNeighbour']),
    )
    .addOption(new Option('--workspaces <n>', 'with --kcp: tenant workspaces (default 100)').argParser(int(1, 10_000)))
    .addOption(new Option('--shards <n>', 'with --kcp: a sharded kcp of n shards (root first; its cache server and front-proxy beside them), the workspaces placed round-robin on them; without it, one kcp process').argParser(int(1, 8)))
    .addOption(new Option('--request-shape <shape>', 'how requests name their Pipeline: "request" (spec.request) or "pipeline" (spec.pipeline.pipelineRef, the cluster resolver by name, as the Go controller\'s requesters write it)').choices(['request', 'pipeline']).default('request'))
    .addOption(new Option('--against-incumbent', 'run the same workload through this controller and the Go controller it replaces (with its default client limits and with them lifted), alternating, and print each row with its ratios; the Go controller from INCUMBENT_BIN / INCUMBENT_BIN_UNLIMITED or built by hack/incumbent/build.sh').conflicts(['controllerCmd', 'kcp']))
    .addOption(new Option('--sittings <n>', 'with --against-incumbent: rounds of the three runs (the order turned round each time); each row is the median').default(1).argParser(int(1, 20)))
    .addOption(new Option('--all-rows', 'with --against-incumbent: every mode in one sitting: a burst (--requests, 2 passes), 600 requests at 20/s, 10,000 and 100,000 finished requests'))
    .addOption(new Option('--keep', "keep the environment's directory (logs, audit logs, {dir}) after the run"))
    .addOption(new Option('--quiet', 'no progress messages on stderr'));
}

export function toOptions(f: Flags): BenchOptions {
  return {
    tekton: f.tekton,
    tektonApiQps: f.tektonApiQps,
    controllerCmd: f.controllerCmd,
    memoryLimitMiB: f.memoryLimit,
    readyLog: f.readyLog,
    controllerUser: f.controllerUser,
    requests: f.requests,
    rate: f.burst ? undefined : f.rate,
    concurrency: f.concurrency,
    namespaces: f.namespaces,
    rejectedShare: f.noisyNeighbour ? 0 : f.rejectedShare,
    noisyNeighbour: f.noisyNeighbour ?? false,
    executorDelayMs: f.executorDelay,
    passes: f.passes,
    json: f.json,
    scale: f.scale === true ? 10_000 : f.scale,
    ceiling: f.ceiling ?? false,
    ceilingClients: f.ceilingClients,
    ceilingSeconds: f.ceilingSeconds,
    timeoutSeconds: f.timeout,
    drainSeconds: f.drain,
    readyTimeoutSeconds: f.readyTimeout,
    scrapeIntervalSeconds: f.scrapeInterval,
    keep: f.keep ?? false,
    heapSnapshot: f.heapSnapshot ?? false,
    quiet: f.quiet ?? false,
    kcp: f.kcp ? { workspaces: f.workspaces ?? 100, ...(f.shards !== undefined ? { shards: f.shards } : {}) } : undefined,
    requestShape: f.requestShape ?? 'request',
  };
}

async function main(argv: string[]): Promise<number> {
  const cmd = benchCommand();
  cmd.parse(argv);
  const opts = toOptions(cmd.opts<Flags>());
  if (opts.kcp === undefined && cmd.opts<Flags>().workspaces !== undefined) throw new Error('--workspaces needs --kcp');
  if (opts.kcp === undefined && cmd.opts<Flags>().shards !== undefined) throw new Error('--shards needs --kcp');
  if (opts.noisyNeighbour && opts.namespaces < 2) throw new Error('--noisy-neighbour needs --namespaces of at least 2');
  const t0 = Date.now();
  const log = opts.quiet ? () => {} : (m: string) => process.stderr.write(`[bench +${((Date.now() - t0) / 1000).toFixed(1)}s] ${m}\n`);
  const f = cmd.opts<Flags>();
  if ((f.allRows || (f.sittings ?? 1) > 1) && !f.againstIncumbent) throw new Error('--all-rows and --sittings need --against-incumbent');
  if (f.againstIncumbent) {
    const against = await runAgainstIncumbent(opts, { sittings: f.sittings ?? 1, allRows: f.allRows ?? false }, log);
    process.stdout.write(`${against.table}\n`);
    if (opts.json) writeFileSync(opts.json, JSON.stringify({ table: against.table, runs: against.runs }, null, 2) + '\n');
    return against.ok ? 0 : 1;
  }
  const result = await runBenchmark(opts, log);
  process.stdout.write(formatReport(result) + '\n');
  if (opts.json) {
    writeFileSync(opts.json, JSON.stringify(result, null, 2) + '\n');
    log(`wrote ${opts.json}`);
  }
  return result.ok ? 0 : 1;
}

main(process.argv).then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`bench: error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(2);
  },
);
