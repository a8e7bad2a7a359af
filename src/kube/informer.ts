/**
 * A supervised list/watch cache of one resource.
 *
 * client-node's own informer stops for good on any error other than 410 Gone,
 * has no resync and no inactivity guard. This one:
 * - lists (paginated), then watches from the list's resourceVersion;
 * - on a watch that ends normally, re-watches from the last resourceVersion seen;
 * - on 410 Gone (or an ERROR event), relists;
 * - on any failure (network, 401/403, 5xx), retries with capped exponential
 *   backoff, forever, logging once per failure streak;
 * - relists fully every resync period, and tells its listener (onResync);
 * - aborts a watch that has been silent longer than the inactivity limit
 *   (bookmarks count as activity), so a half-open connection cannot hang it.
 * Handlers are called synchronously and must only enqueue work.
 *
 * Poll mode (`mode: 'poll'`) is for networks whose proxies cut long-lived
 * connections: no watch, but a paginated list every `pollIntervalMs` (with
 * jitter). Only objects whose resourceVersion changed since the last poll are
 * transformed and reported (add, update, delete), so the controller's work
 * grows with the changes, not with the number of objects; onResync still
 * comes only every resync period.
 *
 * This file is the I/O loop; the cache and the handler calls are in
 * informer-store.ts, the backoff and health bookkeeping in informer-health.ts.
 */
import type { Logger } from 'pino';
import { describeError, statusCode, type KubeObject, type ResourceClient } from './client.js';
import { backoffMs, HealthBook, jittered, readinessOf, type InformerHealth, type ReadinessCheck } from './informer-health.js';
import { InformerStore, type InformerHandlers } from './informer-store.js';

export { keyOf, type InformerHandlers } from './informer-store.js';
export type { InformerHealth, ReadinessCheck } from './informer-health.js';

export interface InformerOptions<T = unknown> {
  /** Namespace to watch; undefined: all namespaces. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  resyncPeriodMs?: number;
  /** Server-side watch timeout, seconds. */
  watchTimeoutSeconds?: number;
  inactivityMs?: number;
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  observer?: InformerObserver;
  /**
   * Applied to every object before it is stored (e.g. to drop fields the
   * controller never reads, which is most of the memory of a large cache).
   * It receives a fresh object it may change.
   */
  transform?: (obj: T) => T;
  /** watch (default) or poll. */
  mode?: 'watch' | 'poll';
  /** Poll mode: time between two lists (±20% jitter). */
  pollIntervalMs?: number;
}

export interface InformerObserver {
  event?(informer: string, type: string): void;
  reconnect?(informer: string, reason: string): void;
}

interface WatchOutcome {
  resourceVersion: string;
  gone: boolean;
  error?: unknown;
}

export class Informer<T extends KubeObject> {
  private readonly store: InformerStore<T>;
  private running = false;
  private stopped = false;
  private abort?: AbortController;
  private wake?: () => void;
  private loop?: Promise<void>;
  private syncWaiters: Array<() => void> = [];
  private readonly book = new HealthBook();
  readonly health: InformerHealth = this.book.health;
  private readonly opts: Required<Omit<InformerOptions<T>, 'namespace' | 'labelSelector' | 'fieldSelector' | 'observer' | 'transform' | 'mode' | 'pollIntervalMs'>> & InformerOptions<T>;

  constructor(
    readonly name: string,
    private readonly client: ResourceClient<T>,
    handlers: InformerHandlers<T>,
    private readonly log: Logger,
    opts: InformerOptions<T> = {},
  ) {
    this.store = new InformerStore(handlers, (e) => this.log.error({ informer: this.name, err: describeError(e) }, 'informer handler threw'));
    this.opts = {
      resyncPeriodMs: 10 * 60_000,
      watchTimeoutSeconds: 300 + Math.floor(Math.random() * 300),
      inactivityMs: 0,
      backoffInitialMs: 250,
      // A list every few seconds against a cluster that is down costs little, and
      // its return is noticed within that time (the requests waiting on it go on).
      backoffMaxMs: 5_000,
      ...opts,
    };
    if (!this.opts.inactivityMs) this.opts.inactivityMs = (this.opts.watchTimeoutSeconds + 60) * 1000;
  }

  get synced(): boolean {
    return this.health.synced;
  }

  /** This cache as a /readyz line: synced and its cluster answering. */
  readiness(required: boolean): ReadinessCheck {
    return readinessOf(this.name, this.health, required);
  }

  get(key: string): T | undefined {
    return this.store.get(key);
  }

  list(): IterableIterator<T> {
    return this.store.values();
  }

  get size(): number {
    return this.store.size;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.log.debug({ informer: this.name, mode: this.opts.mode ?? 'watch', ...(this.opts.mode === 'poll' ? { pollIntervalMs: this.opts.pollIntervalMs } : {}) }, 'cache started');
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort?.abort();
    this.wake?.();
    await this.loop;
  }

  /** Resolves once the first list has been stored (or rejects when stopped first). */
  waitForSync(): Promise<void> {
    if (this.health.synced) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  /** Asks for a full relist now (used by tests and on demand). */
  relist(): void {
    this.abort?.abort();
  }

  private async run(): Promise<void> {
    if (this.opts.mode === 'poll') return this.poll();
    let failures = 0;
    while (!this.stopped) {
      try {
        const { items, resourceVersion } = await this.client.list(this.opts.namespace, {
          labelSelector: this.opts.labelSelector,
          fieldSelector: this.opts.fieldSelector,
          transform: this.opts.transform,
        });
        if (this.stopped) return;
        this.replace(items);
        this.recovered(failures, 'list');
        failures = 0;
        let rv = resourceVersion;
        const relistAt = Date.now() + this.opts.resyncPeriodMs;
        while (!this.stopped && Date.now() < relistAt) {
          const out = await this.watchOnce(rv, relistAt - Date.now());
          if (this.stopped) return;
          rv = out.resourceVersion;
          if (out.gone) break;
          if (out.error !== undefined) {
            failures++;
            this.failed(failures, 'watch', out.error);
            await this.sleep(this.backoff(failures));
            if (failures > 3) break; // after repeated watch failures, start again from a list
          } else {
            this.recovered(failures, 'watch');
            failures = 0;
          }
        }
        this.opts.observer?.reconnect?.(this.name, 'relist');
      } catch (e) {
        if (this.stopped) return;
        failures++;
        this.failed(failures, 'list', e);
        await this.sleep(this.backoff(failures));
      }
    }
  }

  private async poll(): Promise<void> {
    let failures = 0;
    let resyncAt = 0;
    const interval = this.opts.pollIntervalMs ?? 10_000;
    while (!this.stopped) {
      try {
        // Unchanged objects keep their stored copy (no transform, no event).
        const { items } = await this.client.list(this.opts.namespace, {
          labelSelector: this.opts.labelSelector,
          fieldSelector: this.opts.fieldSelector,
          transform: (obj) => this.store.unchanged(obj) ?? (this.opts.transform ? this.opts.transform(obj) : obj),
        });
        if (this.stopped) return;
        const due = Date.now() >= resyncAt;
        this.replace(items, due);
        if (due) resyncAt = Date.now() + this.opts.resyncPeriodMs;
        this.recovered(failures, 'poll');
        failures = 0;
        this.opts.observer?.event?.(this.name, 'POLL');
        await this.sleep(jittered(interval));
      } catch (e) {
        if (this.stopped) return;
        failures++;
        this.failed(failures, 'poll', e);
        await this.sleep(Math.min(this.backoff(failures), interval));
      }
    }
  }

  private backoff(failures: number): number {
    return backoffMs(failures, this.opts.backoffInitialMs, this.opts.backoffMaxMs);
  }

  private failed(failures: number, step: string, e: unknown): void {
    this.book.failed(failures, `${step}: ${describeError(e)}`);
    this.opts.observer?.reconnect?.(this.name, 'error');
    // Logged once per outage (HealthBook.warns); the rest at debug level.
    if (this.book.warns(failures, Date.now())) {
      this.log.warn({ informer: this.name, step, err: describeError(e), code: statusCode(e) }, 'cannot reach the cluster; retrying with backoff');
    } else this.log.debug({ informer: this.name, step, failures, err: describeError(e) }, 'still failing');
  }

  private recovered(failures: number, step: string): void {
    this.book.recovered(Date.now());
    if (failures > 0) this.log.info({ informer: this.name, step, failures }, 'connection recovered');
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  private replace(items: T[], resync = true): void {
    this.store.replace(items);
    const first = !this.health.synced;
    this.health.synced = true;
    if (first) {
      const w = this.syncWaiters;
      this.syncWaiters = [];
      w.forEach((f) => f());
    }
    if (resync) this.store.resynced();
  }

  private watchOnce(resourceVersion: string, maxMs: number): Promise<WatchOutcome> {
    return new Promise<WatchOutcome>((resolve) => {
      let rv = resourceVersion;
      let gone = false;
      let settled = false;
      let abort: AbortController | undefined;
      let inactivity: NodeJS.Timeout | undefined;
      const t0 = performance.now();
      const finish = (error?: unknown) => {
        if (settled) return;
        settled = true;
        const failed = error !== undefined && error !== null;
        this.client.cluster.observer?.(
          this.client.cluster.name,
          'GET',
          `${this.client.path(this.opts.namespace)}?watch=true`,
          failed ? (statusCode(error) ?? 'error') : 200,
          (performance.now() - t0) / 1000,
          this.client.cluster.remote,
        );
        clearTimeout(inactivity);
        clearTimeout(deadline);
        abort?.abort();
        this.health.connected = false;
        resolve({ resourceVersion: rv, gone, ...(error !== undefined && error !== null ? { error } : {}) });
      };
      const touch = () => {
        this.health.lastContact = Date.now();
        clearTimeout(inactivity);
        inactivity = setTimeout(() => {
          this.log.warn({ informer: this.name, ms: this.opts.inactivityMs }, 'watch silent for too long; reconnecting');
          finish(new Error('watch inactivity timeout'));
        }, this.opts.inactivityMs);
      };
      // Relist on schedule even if the watch stays open.
      const deadline = setTimeout(() => finish(), Math.max(0, maxMs));
      touch();
      const params: Record<string, string | number | boolean | undefined> = {
        resourceVersion: rv,
        allowWatchBookmarks: true,
        timeoutSeconds: this.opts.watchTimeoutSeconds,
        labelSelector: this.opts.labelSelector,
        fieldSelector: this.opts.fieldSelector,
      };
      this.client.cluster.watcher
        .watch(
          this.client.path(this.opts.namespace),
          params,
          (type: string, obj: T & { code?: number; message?: string }) => {
            if (settled) return;
            touch();
            this.health.connected = true;
            this.opts.observer?.event?.(this.name, type);
            if (type === 'ERROR') {
              // 410 Gone (resourceVersion too old) and other watch errors: relist.
              gone = true;
              if (obj?.code !== 410) this.log.warn({ informer: this.name, code: obj?.code, message: obj?.message }, 'watch error event; relisting');
              else this.log.info({ informer: this.name, message: obj?.message }, 'watch expired (410 Gone); relisting');
              finish();
              return;
            }
            const newRv = obj?.metadata?.resourceVersion;
            if (newRv) rv = newRv;
            if (type === 'BOOKMARK') return;
            this.store.apply(type, obj, this.opts.transform);
          },
          (err: unknown) => finish(err ?? undefined),
        )
        .then(
          (a) => {
            abort = a;
            this.abort = a;
            if (settled) a.abort();
          },
          (e) => finish(e),
        );
    });
  }
}
