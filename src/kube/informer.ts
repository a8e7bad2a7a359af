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
 */
import type { Logger } from 'pino';
import { describeError, statusCode, type KubeObject, type ResourceClient } from './client.js';

export interface InformerHandlers<T> {
  onAdd?(obj: T): void;
  onUpdate?(oldObj: T, newObj: T): void;
  onDelete?(obj: T): void;
  /** After every successful full list (the first one included). */
  onResync?(): void;
}

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

export interface InformerHealth {
  synced: boolean;
  connected: boolean;
  /** ms since epoch of the last successful list or watch event (incl. bookmarks). */
  lastContact: number;
  lastError?: string;
  failures: number;
}

/** One line of /readyz: a failed required check makes it 503; a failed advisory one is only reported. */
export interface ReadinessCheck {
  name: string;
  ok: boolean;
  required: boolean;
  detail?: string;
}

export function keyOf(obj: KubeObject): string {
  return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}

interface WatchOutcome {
  resourceVersion: string;
  gone: boolean;
  error?: unknown;
}

/** A second outage warning within this long of the first is logged at debug level. */
const WARN_QUIET_MS = 60_000;

export class Informer<T extends KubeObject> {
  private readonly store = new Map<string, T>();
  private running = false;
  private stopped = false;
  private abort?: AbortController;
  private wake?: () => void;
  private loop?: Promise<void>;
  private syncWaiters: Array<() => void> = [];
  readonly health: InformerHealth = { synced: false, connected: false, lastContact: 0, failures: 0 };
  private lastWarnAt = -Infinity;
  private readonly opts: Required<Omit<InformerOptions<T>, 'namespace' | 'labelSelector' | 'fieldSelector' | 'observer' | 'transform' | 'mode' | 'pollIntervalMs'>> & InformerOptions<T>;

  constructor(
    readonly name: string,
    private readonly client: ResourceClient<T>,
    private readonly handlers: InformerHandlers<T>,
    private readonly log: Logger,
    opts: InformerOptions<T> = {},
  ) {
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
    const { synced, failures, lastError } = this.health;
    const why = lastError ? `: ${lastError}` : '';
    return {
      name: this.name,
      ok: synced && failures === 0,
      required,
      ...(!synced ? { detail: `not synced${why}` } : failures ? { detail: `${failures} failed attempts in a row${why}` } : {}),
    };
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
          transform: (obj) => {
            const old = this.store.get(keyOf(obj));
            if (old && old.metadata?.resourceVersion === obj.metadata?.resourceVersion) return old;
            return this.opts.transform ? this.opts.transform(obj) : obj;
          },
        });
        if (this.stopped) return;
        const due = Date.now() >= resyncAt;
        this.replace(items, due);
        if (due) resyncAt = Date.now() + this.opts.resyncPeriodMs;
        this.recovered(failures, 'poll');
        failures = 0;
        this.opts.observer?.event?.(this.name, 'POLL');
        await this.sleep(interval * (0.8 + Math.random() * 0.4));
      } catch (e) {
        if (this.stopped) return;
        failures++;
        this.failed(failures, 'poll', e);
        await this.sleep(Math.min(this.backoff(failures), interval));
      }
    }
  }

  private backoff(failures: number): number {
    const base = Math.min(this.opts.backoffMaxMs, this.opts.backoffInitialMs * 2 ** (failures - 1));
    return base / 2 + Math.random() * (base / 2);
  }

  private failed(failures: number, step: string, e: unknown): void {
    this.health.connected = false;
    this.health.failures = failures;
    this.health.lastError = `${step}: ${describeError(e)}`;
    this.opts.observer?.reconnect?.(this.name, 'error');
    // Logged once per outage: the first failure of a streak, unless a warning
    // went out in the last minute (a connection that drops again right after
    // it came back is the same outage); the rest at debug level.
    if (failures === 1 && Date.now() - this.lastWarnAt > WARN_QUIET_MS) {
      this.lastWarnAt = Date.now();
      this.log.warn({ informer: this.name, step, err: describeError(e), code: statusCode(e) }, 'cannot reach the cluster; retrying with backoff');
    } else this.log.debug({ informer: this.name, step, failures, err: describeError(e) }, 'still failing');
  }

  private recovered(failures: number, step: string): void {
    this.health.connected = true;
    this.health.failures = 0;
    this.health.lastError = undefined;
    this.health.lastContact = Date.now();
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
    const seen = new Set<string>();
    for (const obj of items) {
      const key = keyOf(obj);
      seen.add(key);
      this.upsert(key, obj);
    }
    for (const [key, old] of this.store) {
      if (!seen.has(key)) {
        this.store.delete(key);
        this.call(() => this.handlers.onDelete?.(old));
      }
    }
    const first = !this.health.synced;
    this.health.synced = true;
    if (first) {
      const w = this.syncWaiters;
      this.syncWaiters = [];
      w.forEach((f) => f());
    }
    if (resync) this.call(() => this.handlers.onResync?.());
  }

  private upsert(key: string, obj: T): void {
    const old = this.store.get(key);
    this.store.set(key, obj);
    if (!old) this.call(() => this.handlers.onAdd?.(obj));
    else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) this.call(() => this.handlers.onUpdate?.(old, obj));
  }

  private call(f: () => void): void {
    try {
      f();
    } catch (e) {
      this.log.error({ informer: this.name, err: describeError(e) }, 'informer handler threw');
    }
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
            const key = keyOf(obj);
            if (type === 'DELETED') {
              const old = this.store.get(key);
              this.store.delete(key);
              this.call(() => this.handlers.onDelete?.(old ?? obj));
            } else {
              this.upsert(key, this.opts.transform ? this.opts.transform(obj) : obj);
            }
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
