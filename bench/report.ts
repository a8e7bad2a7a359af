/** The human-readable table of a benchmark result. */
import { TEKTON_IDENTITIES } from '../src/localenv/index.js';
import type { ApiRow } from './analyze.js';
import type { Distribution } from './stats.js';
import type { BenchResult, PassResult, ScaleResult } from './types.js';
import { formatHeap } from './heap-summary.js';
import { formatHeapSpaces } from './heapstat.js';

function table(rows: Array<Array<string | number | null>>, alignRight: boolean[] = []): string {
  const cells = rows.map((r) => r.map((c) => (c === null ? '-' : String(c))));
  const widths: number[] = [];
  for (const r of cells) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, [...c].length)));
  return cells
    .map((r) => r.map((c, i) => (alignRight[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd())
    .join('\n');
}

function indent(s: string, n = 2): string {
  return s
    .split('\n')
    .map((l) => ' '.repeat(n) + l)
    .join('\n');
}

function latencyTable(p: PassResult): string {
  const row = (name: string, d: Distribution) => [name, d.p50, d.p90, d.p99, d.max, d.count];
  return table(
    [
      ['latency (ms)', 'p50', 'p90', 'p99', 'max', 'n'],
      row('create → Running', p.latencyMs.createToRunning),
      row('create → PipelineRun exists', p.latencyMs.createToPipelineRun),
      row('PipelineRun done → terminal', p.latencyMs.pipelineRunDoneToTerminal),
      row('create → terminal', p.latencyMs.createToTerminal),
      row('create → Rejected (not allowed)', p.latencyMs.createToRejected),
    ],
    [false, true, true, true, true, true],
  );
}

export function apiTable(rows: ApiRow[], perRequest: boolean): string {
  if (rows.length === 0) return '(none)';
  return table(
    [
      ['cluster', 'kind', 'verb', 'resource', 'count', ...(perRequest ? ['per request'] : []), 'server ms p50', 'p99', 'not 2xx'],
      ...rows.map((r) => [
        r.cluster,
        r.category,
        r.verb,
        r.resource,
        r.count,
        ...(perRequest ? [r.perRequest] : []),
        r.serverMsP50,
        r.serverMsP99,
        Object.entries(r.failed)
          .map(([c, n]) => `${n}×${c}`)
          .join(' ') || '',
      ]),
    ],
    [false, false, false, false, true, true, true, true, false],
  );
}

/** How the report names an identity of the audit logs. */
function identityName(user: string, controllerUser: string, real: boolean): string {
  if (user === controllerUser) return 'controller';
  const tekton = Object.entries(TEKTON_IDENTITIES).find(([, u]) => u === user);
  if (tekton) return `tekton ${tekton[0]}`;
  if (user === 'admin') return `admin (observer, ${real ? 'simulated kubelet' : 'simulated executor'})`;
  return user;
}

function passReport(p: PassResult, controllerUser: string): string {
  const w = p.workload;
  const real = w.tekton === 'real';
  const sim = real ? 'simulated kubelet' : 'simulated executor';
  const lines: string[] = [];
  lines.push(
    `Pass ${p.pass} (${p.label}): ${w.requests} requests (${w.allowed} allowed over ${w.namespaces} ${p.kcp ? 'kcp workspaces' : 'namespaces'}, ${w.rejected} from non-allowed ones), ` +
      `${w.mode === 'burst' ? `burst, ${w.concurrency} creates in flight` : `${w.rate}/s`}, ` +
      (real ? `real Tekton, simulated step ${w.executorDelayMs} ms` : `simulated executor delay ${w.executorDelayMs} ms`),
  );
  lines.push(
    indent(
      `throughput ${p.throughput} requests/s — all ${w.requests} terminal ${p.allTerminalSeconds} s after the first create ` +
        `(creates took ${w.submitSeconds} s, ${w.submitRate}/s)`,
    ),
  );
  lines.push(indent(latencyTable(p)));
  const c = p.controller;
  lines.push(indent(`controller: CPU ${c.cpuSeconds} s (${c.cpuMsPerRequest} ms per request, ${c.cores} cores on average); RSS peak ${c.rssPeakMB} MB${c.rssPeakAnonMB !== undefined ? ` (anonymous ${c.rssPeakAnonMB}, file-backed ${c.rssPeakFileMB}: the executable and libraries)` : ''}, at the end ${c.rssEndMB} MB (VmHWM ${c.hwmMB} MB)`));
  if (c.heapAtPeak) lines.push(indent(`controller memory at its largest heap: ${formatHeapSpaces(c.heapAtPeak, c.rssPeakMB)}`));
  if (p.heapInBurst) {
    const b = p.heapInBurst;
    lines.push(
      indent(
        `live heap at the burst's height (all created; ${b.inFlight} requests in flight, ${b.pipelineRunsLive} PipelineRuns): ${b.liveMB} MB against ${b.floorMB} MB once ready, ` +
          `${(b.bytesPerRequestInFlight / 1024).toFixed(1)} kB per request in flight (the snapshot stopped the controller for ${b.pauseMs} ms of this pass); grew most:`,
      ),
    );
    for (const g of b.grew) lines.push(indent(`  ${g.name.slice(0, 48).padEnd(48)} ${String(g.count).padStart(8)}  ${(g.bytes / (1024 * 1024)).toFixed(2).padStart(7)} MB`));
  }
  const cc = p.cpuCores;
  lines.push(
    indent(
      `CPU (average cores of ${p.windowSeconds} s): controller ${cc['controller']}, remote apiserver ${cc['remoteApiserver']}, internal apiserver ${cc['internalApiserver']}, ` +
        `etcd ${cc['etcd']}, ` +
        (real ? `tekton ${cc['tekton']} (controller ${cc['tektonController']}, resolvers ${cc['tektonResolvers']}, webhook ${cc['tektonWebhook'] ?? '-'}), ` : '') +
        `benchmark+${sim} ${cc['benchmark']}, other processes on the machine ${cc['otherProcesses']}; machine busy ${cc['machineBusy']}`,
    ),
  );
  if (p.kcp) {
    if (p.kcp.shards) {
      lines.push(indent(`kcp (the remote side, sharded: every shard, the front-proxy ${cc['kcp:front-proxy'] ?? 0} cores and the cache server ${cc['kcp:cache-server'] ?? 0} cores): CPU ${cc['kcp']} cores, ${p.cpuMsPerRequest['kcp']} ms per request`));
      for (const sh of p.kcp.shards) lines.push(indent(`  shard ${sh.name}: CPU ${sh.cpuCores} cores, ${sh.cpuMsPerRequest} ms per request; RSS peak ${sh.rssPeakMB} MB, at the end ${sh.rssEndMB} MB`));
    } else {
      lines.push(indent(`kcp (the remote side: its API server, etcd and virtual workspaces in one process): CPU ${cc['kcp']} cores, ${p.cpuMsPerRequest['kcp']} ms per request; RSS peak ${p.kcp.rssPeakMB} MB, at the end ${p.kcp.rssEndMB} MB`));
    }
  }
  const cm = p.cpuMsPerRequest;
  lines.push(
    indent(
      `CPU ms per request: controller ${cm['controller']}, remote apiserver ${cm['remoteApiserver']}, internal apiserver ${cm['internalApiserver']}, etcd ${cm['etcd']}, ` +
        (real ? `tekton ${cm['tekton']}, ` : '') +
        `benchmark+${sim} ${cm['benchmark']}; total ${cm['total']} → CPU-bound estimate ${p.cpuBoundThroughput} requests/s on all CPUs of this machine`,
    ),
  );
  lines.push(
    indent(
      `API requests by the controller's identity only (${p.api.totals.all}, ${p.api.totals.perRequest} per request; ${controllerUser}` +
        (real ? `; Tekton's own identities, system:serviceaccount:tekton-pipelines*:*, are not counted here` : '') +
        '):',
    ),
  );
  lines.push(indent(apiTable(p.api.rows, true), 4));
  const sw = p.api.stateWritesPerAllowed;
  const kinds = Object.entries(sw.byKind)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  lines.push(indent(`state writes per allowed request: mean ${sw.mean ?? '-'}, min ${sw.min ?? '-'}, max ${sw.max ?? '-'} (${kinds || 'none'})`));
  const rw = p.api.stateWritesPerRejected;
  if (rw.requests) lines.push(indent(`state writes per rejected request: mean ${rw.mean ?? '-'}, max ${rw.max ?? '-'}`));
  lines.push(
    indent(
      `Events created: ${p.api.eventsCreated} (${p.api.eventsPerRequest} per request, not counted as state writes); reads outside list/watch: ${p.api.readsOutsideListWatch}; other writes: ${p.api.unattributedWrites}`,
    ),
  );
  const f = p.fractionOfCeiling;
  lines.push(
    indent(
      `writes by all identities: remote ${p.api.allIdentitiesWritesPerSecond.remote}/s, internal ${p.api.allIdentitiesWritesPerSecond.internal}/s` +
        (f ? ` (${Math.round(f.remote * 100)}% and ${Math.round(f.internal * 100)}% of the ceiling)` : ''),
    ),
  );
  lines.push(
    indent(
      'requests per benchmark request, by identity: ' +
        p.api.byIdentity
          .filter((b) => b.perRequest >= 0.01)
          .map((b) => `${b.cluster} ${identityName(b.user, controllerUser, real)} ${b.perRequest} (${b.writes} writes, ${b.reads} gets, ${b.listWatch} list/watch)`)
          .join('; '),
    ),
  );
  const k = p.correctness;
  lines.push(
    indent(
      `correctness: ${k.ok ? 'OK' : 'FAIL'} — ${k.allowed} allowed: ${k.allowed - k.allowedWithoutPipelineRun - k.allowedWithSeveralPipelineRuns} with exactly 1 PipelineRun ` +
        `(audit: ${k.pipelineRunCreatesPerAllowed.exactlyOne} created once, ${k.pipelineRunCreatesAudited} creates); ${k.rejected} rejected: ${k.rejectedWithPipelineRun} with a PipelineRun; ` +
        `${k.neverFinished} never finished; ${k.wrongOutcome} wrong outcomes; ${k.controllerErrorLines} error lines; ${k.pipelineRunsLeft} PipelineRuns left`,
    ),
  );
  for (const fl of k.failures) lines.push(indent(`FAIL: ${fl}`, 4));
  return lines.join('\n');
}

export function formatReport(r: BenchResult): string {
  const m = r.meta;
  const out: string[] = [];
  out.push(`Internal Services benchmark — ${m.date} — commit ${m.commit}${m.dirty ? ' (with uncommitted changes)' : ''}`);
  out.push(`machine: ${m.cpus} × ${m.cpuModel}, ${m.memoryGB} GB; Node ${m.node}; load average at start ${m.loadavgAtStart.join(' ')}, at end ${m.loadavgAtEnd.join(' ')}`);
  out.push(`Tekton: ${m.tekton.description}`);
  out.push(`controller: ${m.controllerCmd}`);
  if (m.memoryLimit) out.push(`controller memory limit: ${m.memoryLimit.mib ? `${m.memoryLimit.mib} MiB, as the Deployment's (${m.memoryLimit.how})` : m.memoryLimit.how}`);
  out.push(`environment: control planes ready in ${r.environment.startupMs} ms, project installed in ${r.environment.setupMs} ms`);
  if (r.kcp) {
    const k = r.kcp;
    const s = (ms: number) => (ms / 1000).toFixed(1);
    out.push(
      `remote: real kcp ${k.version}${k.shards ? `, sharded: ${k.shards.map((x) => `${x.name} (${x.workspaces} workspaces)`).join(', ')}, cache server and front-proxy` : ''} (ready after ${s(k.startupMs)} s), ${k.workspaces} tenant workspaces set up in ${s(k.workspacesMs.total)} s ` +
        `(create ${s(k.workspacesMs.create)} s, bind ${s(k.workspacesMs.bind)} s, namespaces+grants ${s(k.workspacesMs.namespacesAndGrants)} s); ` +
        `kcp ${k.shards ? "root shard's " : ''}RSS at controller ready ${k.rssAtControllerReadyMB ?? '-'} MB; the plain remote apiserver idles`,
    );
  }
  if (r.ceiling) {
    const c = r.ceiling;
    out.push('');
    out.push(`Ceiling (internal apiserver, ${c.clients} clients, ${c.seconds} s): ${c.writesPerSecond} writes/s = ${c.cyclesPerSecond} create+update+delete cycles/s; ${c.errors} errors; benchmark client CPU ${c.clientCpuSeconds} s`);
    out.push(
      indent(
        table(
          [
            ['write latency (ms)', 'p50', 'p90', 'p99', 'max', 'n'],
            ...(['create', 'update', 'delete'] as const).map((k) => [k, c.latencyMs[k].p50, c.latencyMs[k].p90, c.latencyMs[k].p99, c.latencyMs[k].max, c.latencyMs[k].count]),
          ],
          [false, true, true, true, true, true],
        ),
      ),
    );
  }
  if (r.controllerStart) {
    const c = r.controllerStart;
    out.push('');
    out.push(`Controller start: ready after ${c.readyMs} ms, CPU ${c.cpuSeconds} s, RSS ${c.rssAtReadyMB} MB${c.rssAtReadyAnonMB !== undefined ? ` (anonymous ${c.rssAtReadyAnonMB}, file-backed ${c.rssAtReadyFileMB})` : ''}; API requests by its identity until the first pass:`);
    out.push(indent(apiTable(c.api, false)));
    if (c.heap) out.push(formatHeap(c.heap).replace('heap snapshot:', 'heap snapshot once ready (the floor):'));
  }
  for (const p of r.passes) {
    out.push('');
    out.push(passReport(p, m.controllerUser));
    if (p.noisyNeighbour) {
      const n = p.noisyNeighbour;
      out.push(
        `  noisy neighbour: ${n.flood} requests from ${n.floodNamespace} (${n.floodTerminalAtLoneCreate} terminal when the lone one was created), then 1 from ${n.loneNamespace}: ` +
          `create → Running ${n.createToRunningMs ?? '-'} ms, create → terminal ${n.createToTerminalMs ?? '-'} ms`,
      );
    }
  }
  if (r.scale) {
    const s = r.scale;
    const { pending, fresh } = s.firstNew;
    const both = (f: (x: typeof pending) => string | number | null) => `${f(pending) ?? '-'} / ${f(fresh) ?? '-'}`;
    out.push('');
    out.push(`Scale: ${s.preexisting} finished requests on the remote cluster before the controller starts (created in ${s.precreateSeconds} s)`);
    out.push(
      indent(
        table([
          ['ready (ms from start)', s.readyMs],
          ['first new request Running (ms from start): created before start / created after start', both((x) => x.runningMs)],
          ['first new request terminal (ms from start): created before start / created after start', both((x) => x.terminalMs)],
          ['first new request Running before the ready line: created before start / created after start', both((x) => (x.runningBeforeReady ? 'yes' : 'no'))],
          ['ready and one new request processed (ms from start)', s.readyAndOneProcessedMs],
          ['that request: create → terminal (ms)', s.newRequestCreateToTerminalMs],
          ['RSS at ready / after one / settled 5 s later (MB)', `${s.rssAtReadyMB} / ${s.rssAfterOneMB} / ${s.rssSettledMB}`],
          ['RSS peak, sampled (MB) / VmHWM (MB)', `${s.rssPeakMB} / ${s.hwmMB}`],
          ['CPU to ready / in all (s)', `${s.cpuSecondsToReady} / ${s.cpuSecondsTotal}`],
          ['meanwhile, CPU of the remote apiserver / etcd (s)', s.startCpu ? `${s.startCpu.remoteApiserverSeconds} / ${s.startCpu.etcdSeconds}` : '-'],
          ['the floor: a bare streamed list of the same requests (ms; its apiserver / etcd CPU, s)', bareListCell(s.bareList)],
          ['writes to already finished requests', s.api.writesToFinishedRequests],
        ]),
      ),
    );
    out.push(indent("API requests by the controller's identity:"));
    out.push(indent(apiTable(s.api.rows, false), 4));
    if (s.heapSettled) out.push(indent(`memory settled: ${formatHeapSpaces(s.heapSettled, s.rssSettledMB)}`));
    if (s.heap) out.push(formatHeap(s.heap));
    out.push(indent(`correctness: ${s.correctness.ok ? 'OK' : 'FAIL'}`));
    for (const f of s.correctness.failures) out.push(indent(`FAIL: ${f}`, 4));
  }
  const o = r.observer;
  if (r.passes.length || r.scale) out.push('');
  if (r.passes.length || r.scale)
    out.push(
    `observer: event-loop delay p50 ${o.eventLoopDelayMs.p50} ms, p99 ${o.eventLoopDelayMs.p99} ms, max ${o.eventLoopDelayMs.max} ms; ${o.gaps} watch gaps; benchmark process CPU ${o.benchCpuSeconds} s (${m.tekton.mode === 'real' ? 'simulated kubelet' : 'simulated executor'}, observer, load)`,
  );
  if (r.targets.length) {
    out.push('');
    out.push('Targets (issues 5, 13 and 27)');
    out.push(indent(table([['target', 'where', 'value', 'status'], ...r.targets.map((t) => [t.target, t.where, t.value, t.status])])));
  }
  out.push('');
  out.push(r.ok ? 'RESULT: OK' : `RESULT: FAIL\n${r.failures.map((f) => `  - ${f}`).join('\n')}`);
  return out.join('\n');
}

/** The scale table's floor cell: the bare streamed list's time and the CPU it cost the server, or why there is none. */
export function bareListCell(b: ScaleResult['bareList']): string {
  if (!b) return '-';
  if ('error' in b) return `not measured: ${b.error}`;
  return `${b.ms} (${b.events} requests, ${b.megabytes} MB; ${b.remoteApiserverCpuSeconds} / ${b.etcdCpuSeconds})`;
}
