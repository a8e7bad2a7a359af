/**
 * The workers: each takes keys from the work queue and hands them to the
 * Reconciler, one at a time. A reconcile that throws is retried with the
 * queue's backoff; one that asks for a requeue gets it; otherwise the key's
 * retry count is forgotten.
 */
import type { Logger } from 'pino';
import { describeError, statusCode } from '../kube/client.js';
import type { WorkQueue } from '../kube/queue.js';
import type { Reconciler } from './reconciler.js';

export class Workers {
  private running: Promise<void>[] = [];
  private stopping = false;

  constructor(
    private readonly queue: WorkQueue,
    private readonly reconciler: Pick<Reconciler, 'reconcile'>,
    private readonly log: Logger,
    private readonly reconciled?: (seconds: number, failed: boolean) => void,
  ) {}

  get started(): boolean {
    return this.running.length > 0;
  }

  get halted(): boolean {
    return this.stopping;
  }

  start(n: number): void {
    if (this.stopping || this.running.length) return;
    for (let i = 0; i < n; i++) this.running.push(this.work());
  }

  /** No new work: the queue is shut down. */
  halt(): void {
    this.stopping = true;
    this.queue.shutdown();
  }

  /** Halts, then waits for in-flight reconciles, at most graceMs; true when they finished. */
  async drain(graceMs: number): Promise<boolean> {
    this.halt();
    return Promise.race([
      Promise.all(this.running).then(() => true),
      new Promise<boolean>((r) => setTimeout(() => r(false), graceMs).unref()),
    ]);
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      const t0 = performance.now();
      let failed = false;
      try {
        const result = await this.reconciler.reconcile(key);
        this.queue.forget(key);
        if (result.requeueAfterMs !== undefined) this.queue.addAfter(key, result.requeueAfterMs);
      } catch (e) {
        failed = true;
        const delay = this.stopping ? 0 : this.queue.addRateLimited(key);
        const level = this.queue.retries(key) > 5 ? 'warn' : 'info';
        this.log[level]({ request: key, err: describeError(e), code: statusCode(e), retryInMs: Math.round(delay) }, 'reconcile failed; will retry');
      } finally {
        this.queue.done(key);
        this.reconciled?.((performance.now() - t0) / 1000, failed);
      }
    }
  }
}
