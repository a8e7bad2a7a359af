/**
 * The early lane of an Informer. A cache's first full list can take seconds
 * (100,000 requests: about as many seconds as the apiserver needs to encode
 * them). Most of what it holds needs nothing (finished requests), and the few
 * objects that do should not wait behind them. The early lane is a second,
 * narrow list and watch — a field selector naming the objects worth acting on
 * at once, e.g. the requests without a completionTime — that runs only until
 * the full list is in. Its objects are kept apart from the cache (the full
 * list stays the truth) and handed to the cache's handlers, so that they are
 * acted on at once; when the full list is complete the lane stops and forgets.
 *
 * A server that cannot select on the field (the CRD does not declare it
 * selectable: 400) turns the lane off with one log line; the cache then
 * serves everything once its list is complete, as it would without a lane.
 */
import type { Logger } from 'pino';
import { describeError, statusCode, type KubeObject, type ResourceClient } from './client.js';
import { keyOf, type KeyFunction } from './informer-store.js';
import { rvNumber } from './resource-version.js';

export interface EarlyLaneOptions<T> {
  namespace?: string | undefined;
  labelSelector?: string | undefined;
  /** The objects the lane carries. */
  fieldSelector: string;
  transform?: ((obj: T) => T) | undefined;
  /** An object's key (default namespace/name): the informer's, so that the lane and the cache name an object alike. */
  keyOf?: KeyFunction | undefined;
}

/** Where the lane's news goes (the informer decides what reaches the handlers). */
export interface EarlyLaneSink<T> {
  /** An object the lane carries, new or changed. */
  seen(obj: T): void;
  /** An object left the lane: deleted, or no longer selected (e.g. finished). */
  left(obj: T): void;
}

export class EarlyLane<T extends KubeObject> {
  private readonly objects = new Map<string, T>();
  private stopped = false;
  private abort: AbortController | undefined;
  private wake: (() => void) | undefined;
  /** Whether the lane has listed once (until then its absence of an object means nothing). */
  listed = false;

  constructor(
    private readonly name: string,
    private readonly client: ResourceClient<T>,
    private readonly opts: EarlyLaneOptions<T>,
    private readonly sink: EarlyLaneSink<T>,
    private readonly log: Logger,
  ) {}

  get(key: string): T | undefined {
    return this.objects.get(key);
  }

  get size(): number {
    return this.objects.size;
  }

  start(): void {
    void this.run();
  }

  /** Stops the watch and forgets every object (the full list has them now). */
  stop(): void {
    this.stopped = true;
    this.abort?.abort();
    this.wake?.();
    this.objects.clear();
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        const { resourceVersion } = await this.client.list(this.opts.namespace, {
          labelSelector: this.opts.labelSelector,
          fieldSelector: this.opts.fieldSelector,
          each: (obj) => this.put(obj),
        });
        if (this.stopped) return;
        this.listed = true;
        failures = 0;
        this.log.debug({ informer: this.name, selector: this.opts.fieldSelector, objects: this.objects.size }, 'early lane listed');
        // Watch until the lane is stopped; a watch that ends or fails starts over from a list.
        const err = await this.watch(resourceVersion);
        if (this.stopped) return;
        if (err !== undefined) throw err;
      } catch (e) {
        if (this.stopped) return;
        const code = statusCode(e);
        if (code === 400 || code === 422) {
          this.log.info(
            { informer: this.name, selector: this.opts.fieldSelector, err: describeError(e) },
            'the server cannot select these objects by field (the CRD does not declare the field selectable); they are served once the full list is in',
          );
          this.stop();
          return;
        }
        failures++;
        this.log.debug({ informer: this.name, failures, err: describeError(e) }, 'early lane failed; retrying');
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, Math.min(5_000, 250 * 2 ** failures));
          this.wake = () => {
            clearTimeout(t);
            resolve();
          };
        });
      }
    }
  }

  private get keyOf(): KeyFunction {
    return this.opts.keyOf ?? keyOf;
  }

  private put(obj: T): void {
    if (this.stopped) return;
    // The cache keeps older copies from replacing what the lane showed by
    // comparing resourceVersions as numbers (etcd's revisions): without that,
    // the lane is not safe, and stops before showing anything.
    if (rvNumber(obj.metadata?.resourceVersion) === undefined) {
      this.log.info({ informer: this.name, resourceVersion: obj.metadata?.resourceVersion }, 'resourceVersions are not numbers here; no early lane');
      this.stop();
      return;
    }
    const t = this.opts.transform ? this.opts.transform(obj) : obj;
    this.objects.set(this.keyOf(obj), t);
    this.sink.seen(t);
  }

  /** Resolves with undefined when the watch ends normally or the lane stops, else with the error. */
  private watch(resourceVersion: string): Promise<unknown> {
    return new Promise<unknown>((resolve) => {
      let settled = false;
      const finish = (e?: unknown) => {
        if (settled) return;
        settled = true;
        this.abort?.abort();
        resolve(e ?? undefined);
      };
      this.wake = () => finish();
      this.client.cluster
        .watch(
          this.client.path(this.opts.namespace),
          { resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 120, labelSelector: this.opts.labelSelector, fieldSelector: this.opts.fieldSelector },
          (type: string, obj: T & { code?: number; message?: string }) => {
            if (settled || this.stopped) return;
            if (type === 'BOOKMARK') return;
            if (type === 'ERROR') return finish(Object.assign(new Error(obj?.message ?? 'watch error'), { statusCode: obj?.code }));
            if (type === 'DELETED') {
              const key = this.keyOf(obj);
              const old = this.objects.get(key);
              this.objects.delete(key);
              this.sink.left(old ?? obj);
            } else this.put(obj);
          },
          (err: unknown) => finish(err ?? undefined),
        )
        .then(
          (a) => {
            this.abort = a;
            if (settled || this.stopped) a.abort();
          },
          (e) => finish(e),
        );
    });
  }
}
