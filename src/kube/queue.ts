/**
 * A work queue of keys with the semantics controllers rely on (as client-go's):
 * - a key waiting in the queue is held once, however often it is added;
 * - a key being processed is never handed to a second worker; if it is added
 *   meanwhile, it is queued again when the first worker calls done();
 * - per-key exponential backoff for retries, reset by forget();
 * - fair between tenants: keys are grouped by `tenantOf(key)` (for requests,
 *   their remote namespace), and workers take from the tenants in turn, each
 *   tenant's keys in the order they came. One tenant that adds thousands of
 *   keys does not make another tenant's single key wait behind them.
 */
export interface QueueObserver {
  added?(depth: number): void;
  /** Seconds the key waited in the queue before a worker took it. */
  taken?(waitSeconds: number, depth: number): void;
  retried?(): void;
}

export interface QueueOptions {
  /** Groups keys for fair turns; default: one group (plain first-in, first-out). */
  tenantOf?: (key: string) => string;
  baseDelayMs?: number;
  maxDelayMs?: number;
  observer?: QueueObserver;
}

interface Lane {
  keys: string[];
  head: number;
}

export class WorkQueue {
  /** tenant -> its keys in arrival order */
  private readonly lanes = new Map<string, Lane>();
  /** Tenants with queued keys, in turn order; `cursor` is the next one's turn. */
  private readonly ring: string[] = [];
  private cursor = 0;
  private size = 0;
  private readonly tenantOf: (key: string) => string;
  private readonly queued = new Map<string, number>(); // key -> time it was queued
  private readonly processing = new Set<string>();
  private readonly dirty = new Set<string>(); // added while processing
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private waiters: Array<(key: string | undefined) => void> = [];
  private idleWaiters: Array<() => void> = [];
  private shuttingDown = false;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly observer: QueueObserver;

  constructor(opts: QueueOptions = {}) {
    this.tenantOf = opts.tenantOf ?? (() => '');
    this.baseDelayMs = opts.baseDelayMs ?? 10;
    this.maxDelayMs = opts.maxDelayMs ?? 60_000;
    this.observer = opts.observer ?? {};
  }

  get depth(): number {
    return this.size;
  }

  /** Tenants with keys waiting. */
  get tenants(): number {
    return this.ring.length;
  }

  get inFlight(): number {
    return this.processing.size;
  }

  add(key: string): void {
    if (this.shuttingDown) return;
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    const waiter = this.waiters.shift();
    if (waiter) {
      this.processing.add(key);
      this.observer.added?.(this.depth);
      this.observer.taken?.(0, this.depth);
      waiter(key);
      return;
    }
    this.queued.set(key, performance.now());
    const tenant = this.tenantOf(key);
    let lane = this.lanes.get(tenant);
    if (!lane) {
      lane = { keys: [], head: 0 };
      this.lanes.set(tenant, lane);
      // A tenant that (re)appears takes its turn after the ones waiting now.
      this.ring.splice(this.cursor, 0, tenant);
      this.cursor++;
      if (this.cursor >= this.ring.length) this.cursor = 0;
    }
    lane.keys.push(key);
    this.size++;
    this.observer.added?.(this.depth);
  }

  /** Adds the key after a delay; a later call with a shorter delay wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const existing = this.timers.get(key);
    if (existing) clearTimeout(existing);
    const t = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, delayMs);
    t.unref();
    this.timers.set(key, t);
  }

  /** Retry with per-key exponential backoff. Returns the delay chosen. */
  addRateLimited(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    const delay = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** n);
    this.observer.retried?.();
    this.addAfter(key, delay);
    return delay;
  }

  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Forgets the retry counts of every key that starts with `prefix` (a remote that is no longer served). Keys queued stay: looked at once more, they find nothing to do. */
  forgetPrefix(prefix: string): number {
    let n = 0;
    for (const k of [...this.failures.keys()]) if (k.startsWith(prefix)) n += +this.failures.delete(k);
    return n;
  }

  /** Keys with a retry count: what forgetPrefix() has to forget (tests, debugging). */
  get retrying(): number {
    return this.failures.size;
  }

  /** The next key to process, or undefined once the queue is shut down. */
  get(): Promise<string | undefined> {
    const key = this.take();
    if (key !== undefined) return Promise.resolve(key);
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private take(): string | undefined {
    while (this.ring.length > 0) {
      if (this.cursor >= this.ring.length) this.cursor = 0;
      const tenant = this.ring[this.cursor]!;
      const lane = this.lanes.get(tenant)!;
      const key = lane.keys[lane.head++]!;
      this.size--;
      if (lane.head >= lane.keys.length) {
        this.lanes.delete(tenant);
        this.ring.splice(this.cursor, 1); // the next tenant now sits at the cursor
      } else {
        if (lane.head > 1024 && lane.head * 2 > lane.keys.length) {
          lane.keys.splice(0, lane.head);
          lane.head = 0;
        }
        this.cursor++;
      }
      const since = this.queued.get(key);
      if (since === undefined) continue;
      this.queued.delete(key);
      this.processing.add(key);
      this.observer.taken?.((performance.now() - since) / 1000, this.depth);
      return key;
    }
    return undefined;
  }

  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.delete(key)) this.add(key);
    if (this.processing.size === 0) {
      const w = this.idleWaiters;
      this.idleWaiters = [];
      w.forEach((f) => f());
    }
  }

  /** Stops handing out keys; workers waiting in get() receive undefined. */
  shutdown(): void {
    this.shuttingDown = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    const w = this.waiters;
    this.waiters = [];
    w.forEach((f) => f(undefined));
  }

  /** Resolves when no key is being processed. */
  idle(): Promise<void> {
    if (this.processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}
