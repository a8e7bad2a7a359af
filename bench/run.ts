/**
 * The benchmark run: two control planes (src/localenv), the project's CRDs and
 * RBAC, a benchmark Pipeline and config, something that runs the
 * PipelineRuns — the simulated executor (default) or, with `--tekton real`,
 * Tekton Pipelines' own controller, resolvers and webhook with a simulated
 * kubelet for their pods — the controller under test as a process, and one of
 * the modes:
 *  - workload (default): N requests, in one or more passes, followed to their end;
 *  - --scale M: M finished requests exist before the controller starts;
 *  - --ceiling: the internal apiserver's raw write rate (before the workload).
 *
 * This file is the driver; the parts are setup.ts (environment, simulation
 * thread, controller process), pass.ts (one pass of the workload and its
 * figures; the load itself is workload.ts), measure.ts (CPU, memory and the
 * controller's API requests), scale.ts (scale mode), result.ts (the result's
 * metadata and the target checks) and pipeline.ts (the benchmark Pipeline).
 */
import { copyFileSync, existsSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { CONTROLLER_NAMESPACE } from '../src/localenv/index.js';
import { INCUMBENT_FINALIZER } from '../src/requests/incumbent.js';
import { measureCeiling } from './ceiling.js';
import type { ControllerProcess } from './controller-process.js';
import { heapSnapshotOf, topGroups } from './heap-snapshot.js';
import { HeapSampler } from './heapstat.js';
import { controllerRows } from './measure.js';
import { Observer, type RequestRecord } from './observer.js';
import { onePass } from './pass.js';
import { ProcTreeSampler } from './procstat.js';
import { describeTekton, gitInfo, newResult, targets } from './result.js';
import { cpuBetween, envCpu } from './floor.js';
import { lastInKeyOrder, precreateFinished, scaleMode, submitTracked } from './scale.js';
import { readAudit, setUp, SimulationThread, startController, type RunContext } from './setup.js';
import { mb, round, sleep } from './stats.js';
import type { BenchOptions, BenchResult } from './types.js';
import { requesterClient, useRequestShape, type Requester } from './workload.js';

const NS = CONTROLLER_NAMESPACE;

export async function runBenchmark(opts: BenchOptions, log: (m: string) => void): Promise<BenchResult> {
  const { commit, dirty } = gitInfo();
  const loadStart = loadavg().map((x) => round(x, 2));
  const benchCpu0 = process.cpuUsage();
  const eld = monitorEventLoopDelay({ resolution: 10 });
  const runId = `b${Date.now().toString(36).slice(-5)}`;
  useRequestShape(opts.requestShape ?? 'request');
  log(`setting up two control planes (commit ${commit}${dirty ? ', uncommitted changes' : ''})`);
  const s = await setUp(opts, log);
  log(`environment ready in ${s.env.startupMs} ms, project installed in ${s.setupMs} ms (dir ${s.env.dir})`);
  log(`Tekton: ${describeTekton(opts.tekton, s.env, opts.tektonApiQps).description}`);

  const result: BenchResult = newResult(opts, s, { commit, dirty }, loadStart);

  let simulation: SimulationThread | undefined;
  let observer: Observer | undefined;
  let controller: ControllerProcess | undefined;
  let sampler: ProcTreeSampler | undefined;
  let heapStop = () => {};
  try {
    if (opts.ceiling) {
      result.ceiling = await measureCeiling(s.env.internal, { clients: opts.ceilingClients, seconds: opts.ceilingSeconds, log });
      log(`ceiling: ${result.ceiling.writesPerSecond} writes/s (${result.ceiling.cyclesPerSecond} create+update+delete cycles/s), ${result.ceiling.errors} errors`);
    }
    if (opts.scale !== undefined || opts.requests > 0) {
      const adminKubeconfig = s.env.internal.identities.admin.kubeconfigPath;
      simulation =
        opts.tekton === 'real'
          ? SimulationThread.kubelet(adminKubeconfig, opts.executorDelayMs, log)
          : SimulationThread.executor(adminKubeconfig, opts.executorDelayMs, log);
      await simulation.ready();
      const kcpRequesters = s.kcp?.requesters;
      const requester: Requester = kcpRequesters
        ? (ws) => {
            const c = ws === undefined ? undefined : kcpRequesters.get(ws);
            if (!c) throw new Error(`no requester client for workspace ${ws ?? '(none)'}`);
            return c;
          }
        : await requesterClient(s.env.remote.identities.requester!.kubeConfig());

      let precreate: { count: number; seconds: number; names: Set<string> } | undefined;
      if (opts.scale !== undefined) precreate = await precreateFinished(s, opts.scale, runId, log, opts.incumbentSource ? [INCUMBENT_FINALIZER] : undefined);

      observer = new Observer(s.remoteObserved, s.internalAdmin, NS);
      await observer.start();
      readAudit(s); // everything so far is setup
      eld.enable();

      // Scale mode: one request that arrived while the controller was down (last in the list's key order), and one created as it starts.
      const pending = precreate ? await submitTracked(observer, requester, lastInKeyOrder(s.allowed), `${runId}-pending`, precreate.count) : undefined;
      const cpuAtStart = envCpu(s);
      controller = startController(opts, s, 1);
      const fresh: Promise<RequestRecord> | undefined = precreate ? submitTracked(observer, requester, s.allowed[0]!, `${runId}-fresh`, precreate.count + 1) : undefined;
      sampler = new ProcTreeSampler(controller.pid);
      sampler.start();
      const heapSampler = new HeapSampler();
      controller.onLineSeen((line) => heapSampler.seeLine(line));
      heapSampler.start(opts.scrapeIntervalSeconds * 1000);
      heapStop = () => heapSampler.stop();
      log(`controller started (pid ${controller.pid}): ${opts.controllerCmd}`);
      result.meta.memoryLimit = { mib: controller.memoryLimit.mib, how: controller.memoryLimit.how };
      log(`controller memory limit: ${controller.memoryLimit.mib ? `${controller.memoryLimit.mib} MiB (${controller.memoryLimit.how})` : controller.memoryLimit.how}`);
      const readyMs = await controller.waitReady(opts.readyTimeoutSeconds * 1000);
      const atReady = sampler.sample();
      const cpuAtReady = envCpu(s);
      log(`controller ready after ${readyMs.toFixed(0)} ms`);
      if (result.kcp && s.kcp) result.kcp.rssAtControllerReadyMB = mb(s.kcp.sampler.sample().rssBytes);
      const run: RunContext = { opts, s, observer, controller, sampler, heapSampler, requester, runId, log };

      if (opts.scale !== undefined && precreate && pending && fresh) {
        const startCpu = { remoteApiserverSeconds: cpuBetween(cpuAtStart, cpuAtReady, 'remoteApiserver'), etcdSeconds: cpuBetween(cpuAtStart, cpuAtReady, 'etcd') };
        result.scale = await scaleMode(run, precreate, { pending, fresh: await fresh }, readyMs, atReady.rssBytes, startCpu);
        if (!result.scale.correctness.ok) result.failures.push(...result.scale.correctness.failures.map((f) => `scale: ${f}`));
      } else {
        await sleep(500);
        const startupAudit = readAudit(s);
        const s0 = sampler.sample();
        result.controllerStart = { readyMs: round(readyMs, 0), cpuSeconds: round(s0.cpuSeconds, 2), rssAtReadyMB: mb(atReady.rssBytes), rssAtReadyAnonMB: mb(atReady.anonBytes), rssAtReadyFileMB: mb(atReady.fileBytes), api: controllerRows(opts, startupAudit) };
        if (opts.heapSnapshot) {
          // The floor: the same process, ready, with nothing cached but its configuration.
          run.floorHeap = await heapSnapshotOf(controller, join(s.dir, 'heap'), log);
          if (run.floorHeap) result.controllerStart.heap = topGroups(run.floorHeap);
        }
        for (let pass = 1; pass <= opts.passes; pass++) {
          const r = await onePass(run, pass, result.ceiling?.writesPerSecond);
          result.passes.push(r);
          if (!r.correctness.ok) result.failures.push(...r.correctness.failures.map((f) => `pass ${pass}: ${f}`));
          log(`pass ${pass}: ${r.throughput} requests/s, p99 create→terminal ${r.latencyMs.createToTerminal.p99 ?? '-'} ms, ${r.correctness.ok ? 'correct' : 'INCORRECT'}`);
        }
      }
    }
  } finally {
    eld.disable();
    sampler?.stop();
    heapStop();
    const exitedEarly = controller !== undefined && !controller.running;
    await controller?.stop();
    // The environment's directory goes away with it: keep the controller's log of a failed run.
    if (controller && !opts.keep && (result.failures.length > 0 || exitedEarly) && existsSync(controller.logPath)) {
      const kept = join(tmpdir(), `internal-services-bench-${runId}-controller.log`);
      copyFileSync(controller.logPath, kept);
      log(`controller log kept in ${kept}`);
    }
    await observer?.stop();
    await simulation?.stop();
    s.kcp?.sampler.stop();
    for (const sh of s.kcp?.shards ?? []) sh.sampler.stop();
    await s.stop();
  }
  const cpu = process.cpuUsage(benchCpu0);
  result.observer = {
    eventLoopDelayMs: { p50: round(eld.percentile(50) / 1e6, 1), p99: round(eld.percentile(99) / 1e6, 1), max: round(eld.max / 1e6, 1) },
    gaps: observer?.gaps ?? 0,
    watchRestarts: observer?.watchRestarts ?? 0,
    benchCpuSeconds: round((cpu.user + cpu.system) / 1e6, 2),
  };
  if (result.observer.gaps > 0) log(`warning: the observer missed events ${result.observer.gaps} times (relisted); some latencies are upper bounds`);
  result.meta.loadavgAtEnd = loadavg().map((x) => round(x, 2));
  result.targets = targets(result);
  result.ok = result.failures.length === 0;
  return result;
}
