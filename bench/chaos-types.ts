/** The chaos run's fault kinds, options and result (the result is also what --json writes). */
import type { Distribution } from './stats.js';

export const FAULT_KINDS = [
  'kill-leader',
  'kill-standby',
  'kill-both',
  'remote-down',
  'internal-down',
  'reset',
  'blackhole',
  'latency',
  'compact',
  'config-flip',
  'delete-recreate',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface ChaosOptions {
  requests: number;
  /** Requests per second. */
  rate: number;
  seed: number;
  /** Faults in all, spread over the run (kinds taken in turn from `kinds`, times at random). */
  faults: number;
  kinds: readonly FaultKind[];
  /** How long a fault with a duration lasts: from..to seconds. */
  faultSeconds: [number, number];
  /** Quiet time after each fault before the next may start (so that each recovery is measured on its own). */
  gapSeconds: number;
  /** Requests of a fault-free pass first, for the latency the faults add (0: none). */
  baseline: number;
  /** How long a simulated run (or, with real Tekton, a simulated step) takes. */
  stepMs: number;
  /** Who runs the PipelineRuns: the simulated executor (default), or real Tekton with simulated pods. */
  tekton?: 'simulated' | 'real';
  /** Give up waiting for the requests to finish after this long past the last fault. */
  settleSeconds: number;
  /** Finished requests created on the remote cluster before the controllers start (a long history every start lists; 0: none). */
  history?: number;
  log: (m: string) => void;
}

export interface FaultRecord {
  kind: FaultKind;
  /** ms since the run's start. */
  at: number;
  endedAt: number;
  detail: string;
  /** ms from the fault's end to the controller's first successful status write after it (null: none seen). */
  recoveryMs: number | null;
  /** Requests waiting when the fault ended (created, not final), and the longest any of them took to progress after it (a new status seen). */
  waiting?: { count: number; maxProgressMs: number | null; notProgressed: number };
}

export interface ChaosResult {
  seed: number;
  tekton: 'simulated' | 'real';
  requests: number;
  faults: FaultRecord[];
  recoveryByKind: Record<string, Distribution>;
  /** Kill → a replica logs "became leader": by the standby after kill-leader (the lease-duration + 2 s target), and after kill-both (a process must start first). */
  failover: { kills: number; takeoverMs: Distribution; standbyTakeoverMs: Distribution; afterKillBothMs: Distribution };
  latencyMs: { baseline: Distribution | null; chaos: Distribution };
  counts: { allowed: number; rejected: number; deletedByRun: number; succeeded: number; rejectedSeen: number; restarts: number; relists410: number };
  /** The history (--history): null without one. */
  history: HistoryResult | null;
  /** Each controller process the tool started again after it died: how long until its caches were listed (/readyz), it led, and (as leader) logged "caches synced". */
  restartSync: { restarts: number; readyMs: Distribution; notReady: number; leaderMs: Distribution; syncedMs: Distribution; notSynced: number; minRequestsAtSync: number | null };
  processes: ProcessStart[];
  problems: string[];
  /** Said but not problems (e.g. a run whose create's answer the audit log lacks after the apiserver stopped, seen once). */
  notes?: string[];
  ok: boolean;
  seconds: number;
}

/** The finished requests that existed before the controllers started, and what became of them. */
export interface HistoryResult {
  requests: number;
  createSeconds: number;
  /** Writes (any verb but get/list/watch, any outcome) by the controller to them, from the remote audit log. */
  controllerWrites: number;
  /** PipelineRun creates (any outcome) by the controller for them, from the internal audit log. */
  pipelineRunCreates: number;
  /** Listed at the end: missing, or with another resourceVersion than once finished. */
  changed: number;
  ok: boolean;
}

/**
 * One controller process (a replica's generation): ms from its start to
 * /readyz answering 200 (every cache listed, the history included), to its
 * first "became leader" and to "caches synced" (a leader's, once its remotes
 * are listed); null: not seen.
 */
export interface ProcessStart {
  replica: number;
  generation: number;
  readyMs: number | null;
  leaderMs: number | null;
  syncedMs: number | null;
  /** Requests in its caches when it logged "caches synced". */
  syncedRequests: number | null;
}

/** A request the run deleted and created again under its name (fault delete-recreate). */
export interface RecreatedRequest {
  namespace: string;
  name: string;
  uid: string;
  oldUid: string;
}
