/**
 * The cache of an Informer: objects by key (namespace/name unless the
 * informer is given another key function, e.g. cluster|namespace/name for a
 * kcp wildcard watch that shows several logical clusters), and the handler
 * calls each change makes. No I/O: the informer's loop (informer.ts) feeds it lists
 * (whole, or one object at a time) and watch events. An object counts as
 * changed when its resourceVersion does; a handler that throws is reported
 * and does not stop the others.
 */
import type { KubeObject } from './client.js';

export interface InformerHandlers<T> {
  onAdd?(obj: T): void;
  onUpdate?(oldObj: T, newObj: T): void;
  onDelete?(obj: T): void;
  /** After every successful full list (the first one included). */
  onResync?(): void;
}

export function keyOf(obj: KubeObject): string {
  return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}

/**
 * What makes an object's identity in a cache: the default, keyOf, is
 * namespace/name — right for one cluster. A watch that shows objects of
 * several clusters (a kcp virtual workspace's `/clusters/*`) needs the
 * cluster in the key too, or two clusters' objects of one namespace and name
 * are one entry (src/remotes/kcp-shard.ts: kcpKeyOf). It must give the same
 * key for every version of an object, and for the object before and after the
 * informer's transform.
 */
export type KeyFunction = (obj: KubeObject) => string;

/** The keys a full list has not shown yet (see beginFill). */
export interface Fill {
  readonly unseen: Set<string>;
}

export class InformerStore<T extends KubeObject> {
  private readonly items = new Map<string, T>();
  /** An object's key in the store (default keyOf: namespace/name); get() takes keys of this form. */
  readonly keyOf: KeyFunction;

  constructor(
    private readonly handlers: InformerHandlers<T>,
    /** Called with what a handler threw. */
    private readonly onHandlerError: (e: unknown) => void,
    keyFunction: KeyFunction = keyOf,
  ) {
    this.keyOf = keyFunction;
  }

  get(key: string): T | undefined {
    return this.items.get(key);
  }

  values(): IterableIterator<T> {
    return this.items.values();
  }

  get size(): number {
    return this.items.size;
  }

  /** The stored copy of obj when its resourceVersion is unchanged (a poll keeps it: no transform, no event). */
  unchanged(obj: T): T | undefined {
    const old = this.items.get(this.keyOf(obj));
    if (old && old.metadata?.resourceVersion === obj.metadata?.resourceVersion) return old;
    return undefined;
  }

  /** A full list at once: adds and updates its objects, deletes the stored ones it lacks. */
  replace(items: T[]): void {
    const fill = this.beginFill();
    for (const obj of items) this.filled(fill, obj);
    this.endFill(fill);
  }

  /**
   * A full list that arrives one object at a time (pages, or the initial
   * events of a streamed list): every object is stored as it comes, so the
   * cache serves it at once; endFill then deletes the stored objects the list
   * lacked. The fill holds the keys stored before it (no copies), not the
   * objects listed: a first fill costs nothing beyond the cache itself.
   */
  beginFill(): Fill {
    return { unseen: new Set(this.items.keys()) };
  }

  /** One object of a fill; transform runs only for an object whose resourceVersion changed. */
  filled(fill: Fill, obj: T, transform?: (obj: T) => T): void {
    const key = this.keyOf(obj);
    fill.unseen.delete(key);
    const same = this.unchanged(obj);
    if (same) return;
    this.upsert(key, transform ? transform(obj) : obj);
  }

  /** An object of a fill that is not stored (an older copy than the cache's handlers have seen): it still counts as listed. */
  passed(fill: Fill, obj: T): void {
    fill.unseen.delete(this.keyOf(obj));
  }

  /** The end of a fill: what it did not list is gone. */
  endFill(fill: Fill): void {
    for (const key of fill.unseen) {
      const old = this.items.get(key);
      if (!old) continue;
      this.items.delete(key);
      this.call(() => this.handlers.onDelete?.(old));
    }
    fill.unseen.clear();
  }

  /** Tells the handlers a full list is stored. */
  resynced(): void {
    this.call(() => this.handlers.onResync?.());
  }

  /**
   * One watch event other than ERROR and BOOKMARK: DELETED removes the object
   * (onDelete gets the stored copy, else the event's); ADDED and MODIFIED store
   * it, transformed.
   */
  apply(type: string, obj: T, transform?: (obj: T) => T): void {
    const key = this.keyOf(obj);
    if (type === 'DELETED') {
      const old = this.items.get(key);
      this.items.delete(key);
      this.call(() => this.handlers.onDelete?.(old ?? obj));
    } else {
      this.upsert(key, transform ? transform(obj) : obj);
    }
  }

  private upsert(key: string, obj: T): void {
    const old = this.items.get(key);
    this.items.set(key, obj);
    if (!old) this.call(() => this.handlers.onAdd?.(obj));
    else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) this.call(() => this.handlers.onUpdate?.(old, obj));
  }

  private call(f: () => void): void {
    try {
      f();
    } catch (e) {
      this.onHandlerError(e);
    }
  }
}
