/**
 * One remote cluster as the controller sees it: its connection, a cache of
 * requests per request kind (watched or polled), its Event recorder.
 * A remote is a value: the controller holds one per remote, keyed by name,
 * made and stopped as kubeconfig Secrets come and go.
 *
 * Work-queue keys name the remote: `remote/namespace/name`, plus the kind
 * for a kind other than InternalRequest (api/request-key.ts).
 */
import type { Logger } from 'pino';
import { UNFINISHED_FIELD_SELECTOR, type InternalRequest } from '../api/types.js';
import { splitRequestKey } from '../api/request-key.js';
import type { Cluster, ResourceClient } from '../kube/client.js';
import { EventRecorder } from '../kube/events.js';
import { Informer, keyOf, type InformerHandlers, type InformerOptions, type ReadinessCheck } from '../kube/informer.js';
import { INTERNAL_REQUEST_KIND, type RequestKind } from '../requests/request-kind.js';

export interface RemoteMode {
  mode: 'watch' | 'poll';
  pollIntervalMs?: number;
}

export interface RemoteSpec {
  name: string;
  /** Its connection: the requests' reads and writes, and Events. */
  cluster: Cluster;
  mode?: RemoteMode;
  /** Where it comes from, for logs and readiness (e.g. `Secret internal-services/prod`). */
  origin?: string;
  /**
   * Its name in metric labels (default: its name). Remotes that come in
   * unbounded numbers (kcp workspaces) share their provider's, so that the
   * label values stay few.
   */
  metricsName?: string;
  /**
   * For a kcp workspace: its path (`root:org:team`), which the
   * configuration's rules name, as the provider knows it now (undefined: not
   * known, and the rules see the remote's name, its logical cluster).
   */
  workspace?: () => string | undefined;
  /**
   * Set while nothing of the remote's requests may be decided under its
   * rules, with why (kcp: the workspace's path cannot be read yet, and the
   * rules name workspaces by path): its unfinished requests wait, pending,
   * with this message. Deletes are acted on and running requests followed.
   */
  held?: () => string | undefined;
  /**
   * The cache of a kind's requests, when the provider keeps it (e.g. one
   * watch for every logical cluster behind a kcp virtual workspace, shared
   * out by cluster); by default the remote lists and watches its own.
   */
  cache?: (kind: RequestKind, handlers: InformerHandlers<InternalRequest>) => RequestCache;
  /** Which of the controller's kinds it serves (default: all); a provider that keeps the caches serves those it watches. */
  kinds?: (kind: RequestKind) => boolean;
}

/** What the request path reads of a cache of requests: an Informer, or a provider's share of one. */
export interface RequestCache {
  readonly name: string;
  readonly synced: boolean;
  readonly size: number;
  readonly health: { readonly failures: number; readonly lastContact?: number | undefined };
  get(key: string): InternalRequest | undefined;
  list(): Iterable<InternalRequest>;
  readiness(required: boolean): ReadinessCheck;
  start(): void;
  stop(): Promise<void>;
  waitForSync(): Promise<void>;
}

/**
 * The requests of one kind on one remote: a client for the kind's resource
 * and a cache of its objects, each read as an InternalRequest by the kind
 * (the client is typed by what the cache holds; a kind's raw objects only
 * pass through its toRequest).
 */
export interface KindCache {
  readonly kind: RequestKind;
  readonly client: ResourceClient<InternalRequest>;
  readonly requests: RequestCache;
}

export class Remote {
  readonly name: string;
  readonly cluster: Cluster;
  readonly origin: string;
  /** Its name in metric labels (see RemoteSpec.metricsName). */
  readonly metricsName: string;
  private readonly workspaceOf: (() => string | undefined) | undefined;
  private readonly heldOf: (() => string | undefined) | undefined;
  /** The request kinds served on this remote, by Kind; the first is the one `client` and `requests` name. */
  readonly kinds: ReadonlyMap<string, KindCache>;
  readonly events: EventRecorder;

  private readonly spec: RemoteSpec;
  private readonly handlers: (kind: RequestKind) => InformerHandlers<InternalRequest>;
  private readonly log: Logger;
  private readonly inf: Omit<InformerOptions<InternalRequest>, 'transform'>;
  private readonly transform: ((r: InternalRequest) => InternalRequest) | undefined;
  private running = false;

  constructor(
    spec: RemoteSpec,
    handlers: (kind: RequestKind) => InformerHandlers<InternalRequest>,
    log: Logger,
    opts: InformerOptions<InternalRequest> & { instance: string; kinds?: readonly RequestKind[] },
  ) {
    this.name = spec.name;
    this.cluster = spec.cluster;
    this.origin = spec.origin ?? 'flag --remote-kubeconfig';
    this.metricsName = spec.metricsName ?? spec.name;
    this.workspaceOf = spec.workspace;
    this.heldOf = spec.held;
    this.events = new EventRecorder(spec.cluster, 'internal-services-controller', opts.instance, log);
    const { instance: _i, kinds = [INTERNAL_REQUEST_KIND], transform, ...inf } = opts;
    this.spec = spec;
    this.handlers = handlers;
    this.log = log.child({ remote: spec.name });
    this.inf = inf;
    this.transform = transform;
    const caches = new Map<string, KindCache>();
    for (const kind of kinds) if (this.serves(kind)) caches.set(kind.kind, this.cacheOf(kind));
    this.kinds = caches;
  }

  /** Whether this remote serves a kind (a provider that keeps the caches may serve only some). */
  private serves(kind: RequestKind): boolean {
    return !this.spec.kinds || this.spec.kinds(kind);
  }

  private cacheOf(kind: RequestKind): KindCache {
    const spec = this.spec;
    const client = spec.cluster.resource<InternalRequest>(kind.resource);
    const transform = this.transform;
    const read = kind.builtIn ? transform : (obj: InternalRequest) => (transform ?? ((r: InternalRequest) => r))(kind.toRequest(obj as never));
    const requests: RequestCache = spec.cache
      ? spec.cache(kind, this.handlers(kind))
      : new Informer<InternalRequest>(`remote/${spec.name}/${kind.resource.plural}`, client, this.handlers(kind), kind.builtIn ? this.log : this.log.child({ kind: kind.kind }), {
          // Unfinished requests are served while a long history is still being listed (informer-early.ts).
          earlySelector: UNFINISHED_FIELD_SELECTOR,
          ...this.inf,
          ...(read ? { transform: read } : {}),
          mode: spec.mode?.mode ?? 'watch',
          ...(spec.mode?.pollIntervalMs ? { pollIntervalMs: spec.mode.pollIntervalMs } : {}),
        });
    return { kind, client, requests };
  }

  /**
   * Serves these kinds from now on: a new kind gets its cache (listed from
   * the start), a kind no longer given loses it (its requests are then left
   * as they are), and a kind given as a new object (its definition changed)
   * is listed again and read the new way. Until every kind's cache has
   * listed, the remote is not synced, so nothing of it is decided or swept.
   * Returns the caches stopped, to await.
   */
  setKinds(kinds: readonly RequestKind[]): Promise<void> {
    const caches = this.kinds as Map<string, KindCache>;
    const wanted = new Map(kinds.filter((k) => this.serves(k)).map((k) => [k.kind, k]));
    const stopping: Promise<void>[] = [];
    for (const [name, c] of [...caches]) {
      const next = wanted.get(name);
      if (next === c.kind) continue;
      caches.delete(name);
      stopping.push(c.requests.stop());
    }
    for (const [name, kind] of wanted) {
      if (caches.has(name)) continue;
      const c = this.cacheOf(kind);
      caches.set(name, c);
      if (this.running) c.requests.start();
    }
    return Promise.all(stopping).then(() => undefined);
  }

  /** For a kcp workspace: its path, when known (see RemoteSpec.workspace). */
  get workspace(): string | undefined {
    return this.workspaceOf?.();
  }

  /** Why its requests are not decided now, when they are not (see RemoteSpec.held). */
  get held(): string | undefined {
    return this.heldOf?.();
  }

  /** The cache of the first kind (InternalRequest unless kinds were given). */
  private get first(): KindCache {
    return this.kinds.values().next().value!;
  }

  /** The client of the first kind's resource. */
  get client(): ResourceClient<InternalRequest> {
    return this.first.client;
  }

  /** The cache of the first kind. */
  get requests(): RequestCache {
    return this.first.requests;
  }

  /** The cache of the kind a key names (its fourth segment; none: the built-in kind). */
  kindOf(key: string): KindCache | undefined {
    const k = splitRequestKey(key).kind ?? INTERNAL_REQUEST_KIND.kind;
    return this.kinds.get(k);
  }

  /** Every kind's cache. */
  informers(): RequestCache[] {
    return [...this.kinds.values()].map((k) => k.requests);
  }

  /** The work-queue key of one of this remote's requests. */
  keyOf(obj: { metadata?: { namespace?: string; name?: string } }, kind: RequestKind = this.first.kind): string {
    // requestKey's form, made without splitting: this runs for every event.
    const base = `${this.name}/${keyOf(obj)}`;
    return kind.builtIn ? base : `${base}/${kind.kind}`;
  }

  /** Every cached request with its key (syncedOnly: of the kinds whose cache has a full list). */
  *entries(syncedOnly = false): IterableIterator<[string, InternalRequest]> {
    for (const k of this.kinds.values()) {
      if (syncedOnly && !k.requests.synced) continue;
      for (const r of k.requests.list()) yield [this.keyOf(r, k.kind), r];
    }
  }

  /** Every cached request, without its key. */
  *cachedRequests(): IterableIterator<InternalRequest> {
    for (const k of this.kinds.values()) yield* k.requests.list();
  }

  /** The cache of a key's kind, when it has a full list: only then is the key decided. */
  listed(key: string): KindCache | undefined {
    const k = this.kindOf(key);
    return k && k.requests.synced ? k : undefined;
  }

  /** The cached request of a key. */
  cached(key: string): InternalRequest | undefined {
    return this.kindOf(key)?.requests.get(splitRequestKey(key).cacheKey);
  }

  /** Every kind's cache has a full list. */
  get synced(): boolean {
    for (const k of this.kinds.values()) if (!k.requests.synced) return false;
    return true;
  }

  /**
   * Failed list/watch attempts in a row, the most of the built-in kinds'
   * caches: whether the remote answers. A typed kind's cache failing (its
   * CRD missing there) is that kind's trouble, shown on its definition.
   */
  get failures(): number {
    let n = 0;
    for (const k of this.kinds.values()) if (k.kind.builtIn) n = Math.max(n, k.requests.health.failures);
    return n;
  }

  /** The built-in kinds are listed and answer (see failures). */
  get healthy(): boolean {
    for (const k of this.kinds.values()) if (k.kind.builtIn && !k.requests.synced) return false;
    return this.failures === 0;
  }

  /** How many requests the caches hold. */
  get size(): number {
    let n = 0;
    for (const k of this.kinds.values()) n += k.requests.size;
    return n;
  }

  /** The built-in kind's cache is required when this is the only remote; a typed kind's never is (its CRD may be missing here). */
  readiness(only: boolean): ReadinessCheck[] {
    return [...this.kinds.values()].map((k) => k.requests.readiness(only && k.kind.builtIn));
  }

  start(): void {
    this.running = true;
    for (const i of this.informers()) i.start();
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.informers().map((i) => i.stop()));
    this.cluster.close();
  }
}

/** `remote/namespace/name[/Kind]` → its parts (see api/request-key.ts). */
export function splitKey(key: string): { remote: string; namespace: string; name: string; kind?: string | undefined; cacheKey: string } {
  return splitRequestKey(key);
}
