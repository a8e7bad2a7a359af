/**
 * The cache of an Informer: objects by namespace/name, and the handler calls
 * each change makes. No I/O: the informer's loop (informer.ts) feeds it lists
 * and watch events. An object counts as changed when its resourceVersion
 * does; a handler that throws is reported and does not stop the others.
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

export class InformerStore<T extends KubeObject> {
  private readonly items = new Map<string, T>();

  constructor(
    private readonly handlers: InformerHandlers<T>,
    /** Called with what a handler threw. */
    private readonly onHandlerError: (e: unknown) => void,
  ) {}

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
    const old = this.items.get(keyOf(obj));
    if (old && old.metadata?.resourceVersion === obj.metadata?.resourceVersion) return old;
    return undefined;
  }

  /** A full list: adds and updates its objects, deletes the stored ones it lacks. */
  replace(items: T[]): void {
    const seen = new Set<string>();
    for (const obj of items) {
      const key = keyOf(obj);
      seen.add(key);
      this.upsert(key, obj);
    }
    for (const [key, old] of this.items) {
      if (!seen.has(key)) {
        this.items.delete(key);
        this.call(() => this.handlers.onDelete?.(old));
      }
    }
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
    const key = keyOf(obj);
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
