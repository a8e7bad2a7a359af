/**
 * Whether Tekton Results stored a finished PipelineRun, as decide() sees it
 * before pruning the run: a verdict per run, asked of Results
 * (results-client.ts) in the background, at most once at a time and at most
 * every refreshMs, until it says stored; a run not asked about for a minute
 * is forgotten. known() does no I/O.
 */
import type { Logger } from 'pino';
import type { PipelineRun } from '../tekton/tekton-types.js';
import type { ArchiveVerdict } from '../requests/archive-names.js';
import type { ResultsApi } from './results-client.js';

export { ANNOTATION_LOGS, ANNOTATION_RESULTS_LOG, ANNOTATION_RESULTS_RECORD, ANNOTATION_RESULTS_STORED, MAX_LOG_BYTES, type ArchiveVerdict, type FetchedLogs } from '../requests/archive-names.js';

interface Entry {
  verdict: ArchiveVerdict;
  at: number;
  asking: boolean;
}

/**
 * The verdicts decide() sees: cached, refreshed in the background at most
 * every `refreshMs`. A run not asked about for a minute is forgotten.
 */
export class ResultsArchive {
  private readonly entries = new Map<string, Entry>();
  private readonly refreshMs: number;

  constructor(
    readonly api: ResultsApi,
    private readonly log: Logger,
    opts: { refreshMs?: number } = {},
  ) {
    this.refreshMs = opts.refreshMs ?? 1000;
  }

  /** What is known now about `pr` (no I/O): a verdict, or undefined when Results was not asked yet. */
  known(pr: PipelineRun): ArchiveVerdict | undefined {
    const e = this.entries.get(pr.metadata.uid ?? '');
    return e && e.at > 0 ? e.verdict : undefined;
  }

  /** Asks Results about `pr` unless it is known stored, being asked, or was asked within refreshMs; `done` once the answer is in. */
  ask(pr: PipelineRun, done: () => void = () => {}, now = Date.now()): void {
    const uid = pr.metadata.uid ?? '';
    let e = this.entries.get(uid);
    if (!e) {
      e = { verdict: { stored: false, why: 'not yet asked Tekton Results' }, at: 0, asking: false };
      this.entries.set(uid, e);
    }
    if (e.verdict.stored || e.asking || now - e.at < this.refreshMs) return;
    const entry = e;
    entry.asking = true;
    void this.api
      .verdict(pr)
      .then(
        (v) => {
          entry.verdict = v;
        },
        (err: unknown) => {
          entry.verdict = { stored: false, why: (err as Error).message };
          this.log.warn({ pipelineRun: pr.metadata.name, err: (err as Error).message }, 'cannot ask Tekton Results whether it stored a PipelineRun');
        },
      )
      .finally(() => {
        entry.at = Date.now();
        entry.asking = false;
        try {
          done();
        } catch {
          // Only enqueues a key.
        }
      });
    this.sweep(now);
  }

  /** How many finished PipelineRuns are waiting for Results (asked about within the last minute, not stored). */
  waiting(now = Date.now()): number {
    let n = 0;
    for (const e of this.entries.values()) if (!e.verdict.stored && now - e.at < 60_000) n++;
    return n;
  }

  private lastSweep = 0;
  private sweep(now: number): void {
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    for (const [uid, e] of this.entries) if (!e.asking && now - e.at > 60_000) this.entries.delete(uid);
  }
}
