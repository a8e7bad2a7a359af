/** The benchmark's options and result (the result is also what --json writes). */
import type { ApiFigures, ApiRow, Correctness, Latencies } from './analyze.js';
import type { CeilingResult } from './ceiling.js';
import type { BareListResult } from './floor.js';
import type { Distribution } from './stats.js';
import type { HeapGroup, HeapSummary } from './heap-summary.js';
import type { HeapSpaces } from './heapstat.js';

/** Which Tekton completes the PipelineRuns: Tekton's real controller (pods simulated) or the simulated executor. */
export type TektonMode = 'real' | 'simulated';

export interface BenchOptions {
  /** `--tekton`: real Tekton Pipelines on the internal cluster, or the simulated executor (default). */
  tekton: TektonMode;
  /** `--tekton-api-qps`: the real Tekton controller's -kube-api-qps (burst twice that); undefined: Tekton's default. */
  tektonApiQps: number | undefined;
  controllerCmd: string;
  /** `--memory-limit`: the controller's memory cgroup in MiB (0: none); the Deployment's limit by default (bench/memory-limit.ts). */
  memoryLimitMiB: number;
  readyLog: string;
  controllerUser: string;
  requests: number;
  /** Requests per second; undefined: burst. */
  rate: number | undefined;
  concurrency: number;
  namespaces: number;
  rejectedShare: number;
  /** `--noisy-neighbour`: every request from one namespace (the flood), then one from another while the flood is still queued. */
  noisyNeighbour: boolean;
  /** Simulated executor: delay before completing a PipelineRun. Real Tekton: how long each simulated step (pod container) runs. */
  executorDelayMs: number;
  passes: number;
  json: string | undefined;
  scale: number | undefined;
  ceiling: boolean;
  ceilingClients: number;
  ceilingSeconds: number;
  timeoutSeconds: number | undefined;
  drainSeconds: number;
  readyTimeoutSeconds: number;
  /** How often the controller's metrics are read for the heap figures. */
  scrapeIntervalSeconds: number;
  keep: boolean;
  /** Heap snapshots of the controller: scale mode, once settled; a workload, once ready and at the last pass's burst height. */
  heapSnapshot: boolean;
  /** `--kcp`: the remote side is a real kcp; requests are spread over `workspaces` tenant workspaces (undefined: a plain cluster). */
  kcp: { workspaces: number; shards?: number } | undefined;
  quiet: boolean;
  /**
   * `--request-shape`: how the requests name their Pipeline. `request`:
   * `spec.request` (installed in the controller's namespace); `pipeline`:
   * `spec.pipeline.pipelineRef` with the cluster resolver by name only (the
   * shape the Go controller's requesters send; the one both controllers run).
   */
  requestShape?: 'request' | 'pipeline';
  /**
   * Set by `--against-incumbent` for the Go controller's runs: a directory
   * holding its source's `config/` (its CRDs and ClusterRole), installed in
   * place of this project's CRDs and bound to the controller's identity.
   */
  incumbentSource?: string;
}

export interface ControllerFigures {
  /** CPU seconds of the controller's process tree in the window. */
  cpuSeconds: number;
  cpuMsPerRequest: number;
  /** Average cores used over the window. */
  cores: number;
  /** Peak of the tree's summed RSS over the 200 ms samples of the window. */
  rssPeakMB: number;
  /** Of the RSS peak: anonymous memory (V8's heap, malloc, stacks), and pages of the executable, its libraries and other files. */
  rssPeakAnonMB?: number;
  rssPeakFileMB?: number;
  /** Largest kernel-tracked peak RSS (VmHWM) of one process of the tree, since it started. */
  hwmMB: number;
  rssEndMB: number;
  /** V8's heap spaces at the pass's largest committed heap (this controller's default command only: it serves metrics). */
  heapAtPeak?: HeapSpaces;
}

/** With --heap-snapshot, in the last pass: the controller's live heap once every create of the burst was answered. */
export interface BurstHeap {
  /** Requests created and not yet terminal (as the observer saw them) when the snapshot was asked for. */
  inFlight: number;
  /** Their PipelineRuns that existed then (created, not yet deleted). */
  pipelineRunsLive: number;
  /** Live heap (after a full GC) then, and once ready before any request (the floor), MB. */
  liveMB: number;
  floorMB: number;
  /** (live − floor) ÷ inFlight. */
  bytesPerRequestInFlight: number;
  /** How long the snapshot took (the controller stops meanwhile; the pass's figures include it), ms. */
  pauseMs: number;
  /** The groups that grew most since the floor (count and shallow bytes added). */
  grew: HeapGroup[];
  heap: HeapSummary;
}

export interface PassResult {
  pass: number;
  label: string;
  workload: {
    requests: number;
    allowed: number;
    rejected: number;
    mode: 'burst' | 'rate';
    rate: number | null;
    concurrency: number;
    namespaces: number;
    tekton: TektonMode;
    executorDelayMs: number;
    /** Seconds from the first create sent to the last one answered, and the creates per second that gave. */
    submitSeconds: number;
    submitRate: number;
  };
  /** With --noisy-neighbour: how long the lone request of the second namespace waited. */
  noisyNeighbour: { flood: number; floodNamespace: string; loneNamespace: string; createToRunningMs: number | null; createToTerminalMs: number | null; floodTerminalAtLoneCreate: number } | null;
  /** Terminal requests per second, first create sent → last request terminal. */
  throughput: number;
  /** Seconds from the first create sent until the last request was terminal. */
  allTerminalSeconds: number;
  /** Seconds the pass lasted in all (includes waiting for PipelineRun deletions and a 1 s settle). */
  windowSeconds: number;
  latencyMs: Latencies;
  api: ApiFigures;
  controller: ControllerFigures;
  /**
   * Average cores used during the pass: controller, benchmark (load, observer,
   * simulated executor or simulated kubelet), etcd, remoteApiserver,
   * internalApiserver, with real Tekton also tektonController,
   * tektonResolvers, tektonWebhook and their sum tekton; otherProcesses
   * (everything else on the machine), machineBusy (total).
   */
  cpuCores: Record<string, number>;
  /** CPU ms per request: controller, remoteApiserver, internalApiserver, etcd, tekton (real Tekton's processes; 0 with the simulated executor), benchmark (load, observer, simulated executor or kubelet), total. */
  cpuMsPerRequest: Record<string, number>;
  /**
   * Requests/s the machine could sustain if all its CPUs went to these
   * processes at the measured CPU cost per request (an estimate that other
   * load on the machine disturbs much less than the throughput itself).
   */
  cpuBoundThroughput: number;
  correctness: Correctness;
  /** With --kcp: kcp's process tree over the pass (RSS sampled every second). */
  kcp?: { rssPeakMB: number; rssEndMB: number; shards?: Array<{ name: string; rssPeakMB: number; rssEndMB: number; cpuCores: number; cpuMsPerRequest: number }> };
  /** Of the ceiling's writes/s: writes/s of all identities in this pass (needs --ceiling). */
  fractionOfCeiling: { remote: number; internal: number } | null;
  heapInBurst?: BurstHeap;
}

export interface ScaleResult {
  preexisting: number;
  precreateSeconds: number;
  /** ms from the controller's start to its ready line. */
  readyMs: number;
  /** ms from the controller's start until one new request (created when ready) was terminal. */
  readyAndOneProcessedMs: number | null;
  /** That request, create → terminal, ms. */
  newRequestCreateToTerminalMs: number | null;
  /**
   * Two requests that are not finished when the controller starts, so that
   * it need not wait for the list of the finished ones to serve them:
   * `pending` created just before the controller starts (in the namespace
   * that comes last in the list's key order), `fresh` just after it started.
   */
  firstNew: { pending: FirstNewRequest; fresh: FirstNewRequest };
  rssAtReadyMB: number;
  rssAfterOneMB: number;
  /** After a further settle period. */
  rssSettledMB: number;
  rssPeakMB: number;
  hwmMB: number;
  cpuSecondsToReady: number;
  cpuSecondsTotal: number;
  /** CPU the remote apiserver and etcd spent from the controller's start to its ready line. */
  startCpu?: { remoteApiserverSeconds: number; etcdSeconds: number };
  /** The floor under readyMs: one bare streamed list of the same requests (bench/floor.ts), or why it could not be taken. */
  bareList?: BareListResult | { error: string };
  api: { rows: ApiRow[]; writesToFinishedRequests: number; readsOutsideListWatch: number };
  correctness: { ok: boolean; failures: string[] };
  /** With --heap-snapshot: the settled controller's heap by constructor. */
  heap?: HeapSummary;
  /** V8's heap spaces once settled. */
  heapSettled?: HeapSpaces;
}

/** One request of ScaleResult.firstNew; times in ms from the controller's start. */
export interface FirstNewRequest {
  namespace: string;
  name: string;
  /** Create sent (negative: before the controller started). */
  createSentMs: number | null;
  /** First seen Running (status.conditions[0] Unknown/Running) or its PipelineRun first seen, whichever came first. */
  runningMs: number | null;
  terminalMs: number | null;
  /** Running before the controller logged its ready line. */
  runningBeforeReady: boolean;
}

export interface TargetCheck {
  target: string;
  value: string;
  status: 'met' | 'missed' | 'n/a';
  where: string;
}

export interface BenchResult {
  ok: boolean;
  failures: string[];
  meta: {
    date: string;
    commit: string;
    dirty: boolean;
    node: string;
    cpus: number;
    cpuModel: string;
    memoryGB: number;
    loadavgAtStart: number[];
    loadavgAtEnd: number[];
    controllerCmd: string;
    /** The controller's memory limit as applied: MiB (0: none) and where, or why none. */
    memoryLimit?: { mib: number; how: string };
    controllerUser: string;
    /** Which Tekton ran the PipelineRuns; `description` is the report's "Tekton:" line. */
    tekton: { mode: TektonMode; version: string | null; components: string[]; description: string };
    options: Omit<BenchOptions, 'quiet'>;
    timestamps: string;
    dir: string | null;
  };
  environment: { startupMs: number; setupMs: number };
  /** With --kcp: the kcp, its workspaces and how long they took to set up. */
  kcp: {
    version: string;
    workspaces: number;
    /** With --shards: the shards (root first), each with the workspaces placed on it. */
    shards?: Array<{ name: string; workspaces: number }>;
    startupMs: number;
    workspacesMs: { create: number; bind: number; namespacesAndGrants: number; total: number };
    rssAtControllerReadyMB: number | null;
  } | null;
  ceiling: CeilingResult | null;
  controllerStart: {
    readyMs: number;
    cpuSeconds: number;
    rssAtReadyMB: number;
    /** Of it: anonymous, and file-backed (the executable and libraries). */
    rssAtReadyAnonMB?: number;
    rssAtReadyFileMB?: number;
    api: ApiRow[];
    /** With --heap-snapshot: the live heap once ready, nothing cached but the configuration (the floor). */
    heap?: HeapSummary;
  } | null;
  passes: PassResult[];
  scale: ScaleResult | null;
  observer: { eventLoopDelayMs: Distribution | { p50: number; p99: number; max: number }; gaps: number; watchRestarts: number; benchCpuSeconds: number };
  targets: TargetCheck[];
}
