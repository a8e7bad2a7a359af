/**
 * The remotes served, as they come and go: RemoteSet is the sink
 * (provider.ts) the controller gives every provider: the remotes by name, each with
 *   its cache of requests (remote.ts), add/replace/remove, and the indexes
 *   of requests it is given (in the shape of multicluster-runtime's
 *   IndexField: a name and a function from an object to its value; the
 *   controller indexes idempotency keys). What happens to a request key is
 *   the controller's business: RemoteSet only says which keys to look at
 *   (hooks.enqueue) and when a remote has a full list (hooks.resynced), and
 *   keeps what its caches hold in the form it is given (opts.transform).
 */
import type { Logger } from 'pino';
import type { InternalRequest } from '../api/types.js';
import type { InformerObserver } from '../kube/informer.js';
import { Remote, splitKey, type RemoteSpec } from './remote.js';
import { checkKinds, kindLabel, type RequestKind } from '../requests/request-kind.js';
import type { RemoteSink } from './provider.js';

export interface RemoteSetHooks {
  /** Look at this request key. */
  enqueue(key: string): void;
  /** Whether a request a cache shows for the first time needs a look (see listing.ts worthALook; default: all do). */
  worthALook?(req: InternalRequest): boolean;
  /** A remote has a full list of its requests (the first one included). */
  resynced(remote: Remote): void;
  /** A remote is no longer served (removed, or replaced by a new one of that name). */
  dropped(remote: Remote): void;
  /** Whether the caches run (a remote added later starts at once). */
  started(): boolean;
}

/** An index of the cached requests, per remote, namespace and kind. */
export interface RequestIndex {
  /** What look-ups name it by (RemoteSet.indexed). */
  name: string;
  /** The value a request is indexed under; undefined: not indexed. */
  extract(r: InternalRequest): string | undefined;
  /** A change to one request brings back the others under the same value (e.g. the requests that follow it). */
  related?: boolean;
}

export interface RemoteSetOptions {
  /** Indexes kept over every remote's requests. */
  indexes?: readonly RequestIndex[];
  /** Applied to every request before a cache keeps it (e.g. to drop what is never read again). */
  transform?: (r: InternalRequest) => InternalRequest;
  log: Logger;
  /** Name of this instance in Events. */
  instance: string;
  informer: { resyncPeriodMs: number; observer: InformerObserver | undefined; watchTimeoutSeconds?: number; backoffMaxMs?: number };
  /** The request kinds served on every remote (default: InternalRequest alone). */
  kinds?: readonly RequestKind[];
}

export class RemoteSet implements RemoteSink {
  /** The remote clusters, by name. */
  readonly byName = new Map<string, Remote>();
  /** index name -> remote/namespace/value[/Kind] -> keys of the requests indexed under it (a value is shared within one kind only). */
  private readonly indexed = new Map<string, Map<string, Set<string>>>();

  private kinds: readonly RequestKind[] | undefined;

  constructor(
    private readonly hooks: RemoteSetHooks,
    private readonly opts: RemoteSetOptions,
  ) {
    this.kinds = opts.kinds;
  }

  /** The request kinds served now. */
  get servedKinds(): readonly RequestKind[] {
    return this.kinds ?? [];
  }

  /**
   * Serves these request kinds on every remote from now on (and on those
   * added later); see Remote.setKinds. The indexes forget the kinds that go
   * or change; a changed kind's cache lists again and fills them. Throws on
   * kinds that cannot be served together (checkKinds).
   */
  async setKinds(kinds: readonly RequestKind[]): Promise<void> {
    checkKinds(kinds);
    const before = new Map((this.kinds ?? []).map((k) => [k.kind, k]));
    this.kinds = kinds;
    const now = new Map(kinds.map((k) => [k.kind, k]));
    const gone = [...before].filter(([name, k]) => now.get(name) !== k).map(([name]) => name);
    for (const name of gone) {
      const suffix = `/${name}`;
      for (const byValue of this.indexed.values()) for (const k of [...byValue.keys()]) if (k.endsWith(suffix)) byValue.delete(k);
    }
    await Promise.all([...this.byName.values()].map((r) => r.setKinds(kinds)));
  }

  get size(): number {
    return this.byName.size;
  }

  get(name: string): Remote | undefined {
    return this.byName.get(name);
  }

  values(): IterableIterator<Remote> {
    return this.byName.values();
  }

  names(): IterableIterator<string> {
    return this.byName.keys();
  }

  /**
   * Serves one more remote (or replaces the one of that name, e.g. with a
   * rotated kubeconfig). Its requests are decided once its first full list is
   * in; until then nothing of it is decided or swept.
   */
  addRemote(spec: RemoteSpec): Remote {
    const old = this.byName.get(spec.name);
    if (old) void this.drop(old, 'replaced');
    const name = spec.name;
    // Requests are kept in the indexes given; a request that changes brings
    // back the others under the same value of a `related` index (the ones
    // that follow it).
    const indexes = this.opts.indexes ?? [];
    const handlers = (kind: RequestKind) => {
      const valueKey = (ix: RequestIndex, r: InternalRequest) => {
        const v = ix.extract(r);
        return v ? indexKey(name, r.metadata.namespace ?? '', v, kind) : undefined;
      };
      const index = (r: InternalRequest, add: boolean, only?: RequestIndex) => {
        for (const ix of only ? [only] : indexes) {
          const k = valueKey(ix, r);
          if (!k) continue;
          const byValue = this.indexed.get(ix.name) ?? new Map<string, Set<string>>();
          this.indexed.set(ix.name, byValue);
          const set = byValue.get(k) ?? new Set<string>();
          if (add) set.add(remote.keyOf(r, kind));
          else set.delete(remote.keyOf(r, kind));
          if (set.size) byValue.set(k, set);
          else byValue.delete(k);
        }
      };
      const enqueueWithRelated = (r: InternalRequest) => {
        if (this.byName.get(name) !== remote) return; // replaced or removed meanwhile
        this.hooks.enqueue(remote.keyOf(r, kind));
        for (const ix of indexes) {
          if (!ix.related) continue;
          const k = valueKey(ix, r);
          if (k) for (const other of this.indexed.get(ix.name)?.get(k) ?? []) this.hooks.enqueue(other);
        }
      };
      return {
        onAdd: (r: InternalRequest) => {
          index(r, true);
          if (this.hooks.worthALook?.(r) ?? true) enqueueWithRelated(r);
        },
        onUpdate: (o: InternalRequest, n: InternalRequest) => {
          for (const ix of indexes) if (valueKey(ix, o) !== valueKey(ix, n)) index(o, false, ix);
          index(n, true);
          enqueueWithRelated(n);
        },
        onDelete: (r: InternalRequest) => {
          index(r, false);
          enqueueWithRelated(r);
        },
        // Every full list of a kind (the first included): look at every
        // request again, and sweep PipelineRuns whose request is gone (a key
        // is decided only once its kind's cache has a full list).
        onResync: () => {
          if (this.byName.get(name) !== remote || !remote.kinds.get(kind.kind)?.requests.synced) return;
          this.hooks.resynced(remote);
        },
      };
    };
    const remote: Remote = new Remote(spec, handlers, this.opts.log, {
      ...this.opts.informer,
      ...(this.opts.transform ? { transform: this.opts.transform } : {}),
      instance: this.opts.instance,
      ...(this.kinds ? { kinds: this.kinds } : {}),
    });
    this.byName.set(name, remote);
    const workspace = remote.workspace;
    this.opts.log.info({ remote: name, ...(workspace ? { workspace } : {}), server: spec.cluster.server, origin: remote.origin, mode: spec.mode?.mode ?? 'watch' }, old ? 'remote cluster replaced' : 'remote cluster added');
    if (this.hooks.started()) remote.start();
    return remote;
  }

  /**
   * Stops serving a remote. Its PipelineRuns are left as they are (running
   * ones finish, finished ones stay): nothing of a remote that is not listed
   * is decided, and if it comes back its requests are picked up where they were.
   */
  async removeRemote(name: string): Promise<boolean> {
    const r = this.byName.get(name);
    if (!r) return false;
    await this.drop(r, 'removed');
    return true;
  }

  private drop(r: Remote, why: 'removed' | 'replaced'): Promise<void> {
    if (this.byName.get(r.name) === r) this.byName.delete(r.name);
    const prefix = `${r.name}/`;
    for (const byValue of this.indexed.values()) for (const k of [...byValue.keys()]) if (k.startsWith(prefix)) byValue.delete(k);
    this.hooks.dropped(r);
    if (why === 'removed') this.opts.log.info({ remote: r.name, origin: r.origin }, 'remote cluster removed; its PipelineRuns are left as they are');
    return r.stop();
  }

  /** The remote of a request key, if it is served (listed or not: see listing.ts). */
  served(key: string): Remote | undefined {
    return this.byName.get(splitKey(key).remote);
  }

  /** The cached request of a key (`remote/namespace/name[/Kind]`). */
  cached(key: string): InternalRequest | undefined {
    return this.byName.get(splitKey(key).remote)?.cached(key);
  }

  /** Keys of the requests of a remote's namespace, of one kind, under a value of an index. */
  indexedUnder(index: string, remote: string, namespace: string, value: string, kind?: RequestKind): Iterable<string> {
    return this.indexed.get(index)?.get(indexKey(remote, namespace, value, kind)) ?? [];
  }

  /** Stops every remote's cache and connection. */
  stopAll(): Promise<void[]> {
    return Promise.all([...this.byName.values()].map((r) => r.stop()));
  }
}

/** Where a value of an index is kept: per remote, namespace and kind. */
function indexKey(remote: string, namespace: string, value: string, kind: RequestKind | undefined): string {
  const k = kindLabel(kind);
  return k ? `${remote}/${namespace}/${value}/${k}` : `${remote}/${namespace}/${value}`;
}
