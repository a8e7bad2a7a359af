/**
 * A supervised list/watch cache of one resource.
 *
 * client-node's own informer stops for good on any error other than 410 Gone,
 * has no resync and no inactivity guard. This one:
 * - fills the cache with a streamed list (a watch with sendInitialEvents:
 *   the apiserver sends every object from its watch cache, then a bookmark
 *   marking the end, then the changes), storing each object as it arrives;
 *   a server that does not stream lists is listed in pages instead (also
 *   stored page by page), then watched from the list's resourceVersion;
 * - optionally runs an early lane while the first list is in progress (a
 *   narrow selector for the objects to act on at once; informer-early.ts);
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
 *
 * It is over 400 lines because the loop, the streamed list and the watch
 * share the one connection state (abort, deadline, inactivity, health) and
 * read best together; the cache, the early lane and the health bookkeeping
 * are in their own files.
 */
import type { Logger } from 'pino';
import { describeError, statusCode, type KubeObject, type ResourceClient } from './client.js';
import { backoffMs, HealthBook, jittered, readinessOf, type InformerHealth, type ReadinessCheck } from './informer-health.js';
import { EarlyLane } from './informer-early.js';
import { rvNumber } from './resource-version.js';
import { InformerStore, keyOf, type InformerHandlers, type KeyFunction } from './informer-store.js';

export { keyOf, type InformerHandlers, type KeyFunction } from './informer-store.js';
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
  /**
   * How the cache is filled: 'stream' (default; a streamed list, falling back
   * to pages once if the server does not stream) or 'pages'.
   */
  fill?: 'stream' | 'pages';
  /** A field selector for the early lane (informer-early.ts): those objects are handed to the handlers before the first full list is in. */
  earlySelector?: string;
  /**
   * An object's identity in the cache, the early lane and their bookkeeping
   * (default keyOf: namespace/name). A watch that shows several clusters'
   * objects keys by cluster too (kcp: src/remotes/kcp-shard.ts kcpKeyOf);
   * get() takes keys of this form.
   */
  keyOf?: KeyFunction;
}

export interface InformerObserver {
  event?(informer: string, type: string): void;
  reconnect?(informer: string, reason: string): void;
}

interface WatchOutcome {
  resourceVersion: string;
  gone: boolean;
  error?: unknown;
  /** A streamed list: its initial events all arrived (the cache is filled). */
  filled?: boolean;
  /** A streamed list the server does not support (rejected, or no end marker). */
  unsupported?: boolean;
}

/** The annotation of the bookmark that ends a streamed list's initial events. */
const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

export class Informer<T extends KubeObject> {
  private readonly store: InformerStore<T>;
  private running = false;
  private stopped = false;
  private abort?: AbortController;
  private wake?: () => void;
  private loop?: Promise<void>;
  private syncWaiters: Array<() => void> = [];
  private readonly book = new HealthBook();
  /** Lists are streamed until the server shows it cannot. */
  private streaming: boolean;
  private early: EarlyLane<T> | undefined;
  readonly health: InformerHealth = this.book.health;
  private readonly opts: Required<Omit<InformerOptions<T>, 'namespace' | 'labelSelector' | 'fieldSelector' | 'observer' | 'transform' | 'mode' | 'pollIntervalMs' | 'fill' | 'earlySelector' | 'keyOf'>> & InformerOptions<T>;
  /** An object's key (opts.keyOf, default namespace/name). */
  private readonly keyOf: KeyFunction;

  constructor(
    readonly name: string,
    private readonly client: ResourceClient<T>,
    handlers: InformerHandlers<T>,
    private readonly log: Logger,
    opts: InformerOptions<T> = {},
  ) {
    const handlerError = (e: unknown) => this.log.error({ informer: this.name, err: describeError(e) }, 'informer handler threw');
    this.keyOf = opts.keyOf ?? keyOf;
    this.store = new InformerStore(handlers, handlerError, this.keyOf);
    this.streaming = opts.fill !== 'pages';
    if (opts.earlySelector && opts.mode !== 'poll') {
      const call = (f: () => void) => {
        try {
          f();
        } catch (e) {
          handlerError(e);
        }
      };
      // The lane's objects reach the handlers only while the cache lacks them: the cache's copy is the truth.
      this.early = new EarlyLane(
        `${name}/early`,
        client,
        { namespace: opts.namespace, labelSelector: opts.labelSelector, fieldSelector: opts.earlySelector, transform: opts.transform, keyOf: this.keyOf },
        {
          seen: (obj) => {
            this.ahead(obj);
            if (!this.store.get(this.keyOf(obj))) call(() => handlers.onAdd?.(obj));
          },
          left: (obj) => {
            this.ahead(obj);
            if (!this.store.get(this.keyOf(obj))) call(() => handlers.onDelete?.(obj));
          },
        },
        log,
      );
    }
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

  /**
   * The early lane shows some objects at versions the list has not reached:
   * the list's copy of them is older (its snapshot was taken before), and so
   * are the first events of its watch. Handlers have acted on the newer one,
   * so the older ones are not stored (a request decided, run and finished via
   * the lane must not come back unfinished): the cache keeps what it has
   * until the list's watch reaches the lane's version. resourceVersions are
   * compared as numbers here, which the lane requires (see informer-early.ts).
   */
  private readonly aheadOf = new Map<string, bigint>();

  private ahead(obj: T): void {
    const rv = rvNumber(obj.metadata?.resourceVersion);
    if (rv === undefined) return;
    const key = this.keyOf(obj);
    const was = this.aheadOf.get(key);
    if (was === undefined || rv > was) this.aheadOf.set(key, rv);
  }

  /** Whether obj is older than what the early lane showed of it (then it is not stored); once the list catches up, the lane's mark goes. */
  private behind(obj: T): boolean {
    if (this.aheadOf.size === 0) return false;
    const key = this.keyOf(obj);
    const lane = this.aheadOf.get(key);
    if (lane === undefined) return false;
    const rv = rvNumber(obj.metadata?.resourceVersion);
    if (rv !== undefined && rv < lane) return true;
    this.aheadOf.delete(key);
    return false;
  }

  /** The cached object; before the first full list is in, also the early lane's. */
  get(key: string): T | undefined {
    return this.store.get(key) ?? this.early?.get(key);
  }

  /** Objects stored so far and the early lane's, while the first list is in progress (for logs and tests). */
  get filling(): { stored: number; early: number } | undefined {
    return this.health.synced ? undefined : { stored: this.store.size, early: this.early?.size ?? 0 };
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
    this.early?.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.early?.stop();
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
        const relistAt = Date.now() + this.opts.resyncPeriodMs;
        let rv: string;
        // The end of the streamed list's watch (it goes on after the list), handled below like any watch's.
        let ended: WatchOutcome | undefined;
        if (this.streaming) {
          const out = await this.watchOnce('', relistAt - Date.now(), () => {
            // Filled: the list succeeded (the watch goes on).
            this.recovered(failures, 'list');
            failures = 0;
          });
          if (this.stopped) return;
          if (out.unsupported) {
            this.streaming = false;
            this.log.info({ informer: this.name, err: out.error !== undefined ? describeError(out.error) : undefined }, 'the server does not stream lists (sendInitialEvents); listing in pages');
            continue;
          }
          if (!out.filled) throw out.error ?? new Error('the streamed list ended before its last object');
          rv = out.resourceVersion;
          ended = out;
        } else {
          const fill = this.store.beginFill();
          const listed = await this.client.list(this.opts.namespace, {
            labelSelector: this.opts.labelSelector,
            fieldSelector: this.opts.fieldSelector,
            each: (obj) => (this.behind(obj) ? this.store.passed(fill, obj) : this.store.filled(fill, obj, this.opts.transform)),
          });
          if (this.stopped) return;
          this.store.endFill(fill);
          this.filled();
          rv = listed.resourceVersion;
          this.recovered(failures, 'list');
          failures = 0;
        }
        while (!this.stopped && Date.now() < relistAt) {
          const out = ended ?? (await this.watchOnce(rv, relistAt - Date.now()));
          ended = undefined;
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
    this.filled(resync);
  }

  /** A full list is stored: the first one makes the cache synced (and ends the early lane). */
  private filled(resync = true): void {
    const first = !this.health.synced;
    this.health.synced = true;
    // A later full list is newer than anything the lane showed.
    if (!first) this.aheadOf.clear();
    if (first) {
      this.early?.stop();
      this.early = undefined;
      const w = this.syncWaiters;
      this.syncWaiters = [];
      w.forEach((f) => f());
    }
    if (resync) this.store.resynced();
  }

  /**
   * One watch, from resourceVersion; with onFilled, a streamed list first
   * (sendInitialEvents): its objects fill the cache as they arrive, the
   * bookmark marking their end completes the fill (then onFilled), and the
   * watch goes on.
   */
  private watchOnce(resourceVersion: string, maxMs: number, onFilled?: () => void): Promise<WatchOutcome> {
    const list = onFilled !== undefined;
    return new Promise<WatchOutcome>((resolve) => {
      let rv = resourceVersion;
      let gone = false;
      let settled = false;
      const fill = list ? this.store.beginFill() : undefined;
      let filled = false;
      let unsupported = false;
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
        if (fill && !filled) {
          // Rejected (a server without streamed lists: 400 or 422), or ended
          // without marking the end of its initial events (one that ignores the parameter).
          const code = statusCode(error);
          if (code === 400 || code === 422 || (!failed && !gone && !this.stopped)) unsupported = true;
        }
        resolve({ resourceVersion: rv, gone, ...(failed ? { error } : {}), ...(filled ? { filled } : {}), ...(unsupported ? { unsupported } : {}) });
      };
      // Every event re-arms the same timer (refresh: no new timer per event,
      // which an initial list of 100,000 events would otherwise make).
      const touch = () => {
        this.health.lastContact = Date.now();
        if (inactivity) inactivity.refresh();
        else
          inactivity = setTimeout(() => {
            this.log.warn({ informer: this.name, ms: this.opts.inactivityMs }, 'watch silent for too long; reconnecting');
            finish(new Error('watch inactivity timeout'));
          }, this.opts.inactivityMs);
      };
      // Relist on schedule even if the watch stays open.
      const deadline = setTimeout(() => finish(), Math.max(0, maxMs));
      touch();
      const params: Record<string, string | number | boolean | undefined> = {
        // A streamed list: no resourceVersion (the newest state) and every object first.
        ...(list ? { sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan' } : { resourceVersion: rv }),
        allowWatchBookmarks: true,
        timeoutSeconds: this.opts.watchTimeoutSeconds,
        labelSelector: this.opts.labelSelector,
        fieldSelector: this.opts.fieldSelector,
      };
      this.client.cluster
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
            if (fill && !filled) {
              if (type === 'BOOKMARK') {
                // The end of the initial events; any other bookmark first means the server ignored sendInitialEvents.
                if (obj?.metadata?.annotations?.[INITIAL_EVENTS_END] !== 'true') return finish();
                filled = true;
                this.store.endFill(fill);
                this.filled();
                onFilled?.();
              } else if (this.behind(obj)) this.store.passed(fill, obj);
              else this.store.filled(fill, obj, this.opts.transform);
              return;
            }
            if (type === 'BOOKMARK') return;
            if (!this.behind(obj)) this.store.apply(type, obj, this.opts.transform);
          },
          (err: unknown) => finish(err ?? undefined),
        )
        .then(
          (a) => {
            abort = a;
            this.abort = a;
            // Stopped while the request was on its way: end it now (stop() aborted the previous one).
            if (settled || this.stopped) {
              a.abort();
              finish();
            }
          },
          (e) => finish(e),
        );
    });
  }
}
