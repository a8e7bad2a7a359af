/**
 * One shard's virtual workspace of a kcp APIExport: one URL of the export's
 * APIExportEndpointSlice. A kcp that runs several shards lists one URL per
 * shard, and each shows only the workspaces (logical clusters) that live on
 * that shard; KcpRemotes (kcp.ts) keeps one KcpShard per URL.
 *
 * Through `<url>/clusters/*` a shard keeps, all on one connection:
 * - one wildcard cache of the export's APIBindings (kcp serves them in every
 *   export's virtual workspace): which workspaces bind the export, and
 *   whether each binding is ready;
 * - one wildcard cache per request kind, shared out by each object's
 *   `kcp.io/cluster` annotation (a Share per logical cluster).
 *
 * An object's identity in these caches is its logical cluster, namespace and
 * name (kcpKeyOf, as kcp's own informers key: `cluster|namespace/name`): two
 * workspaces on one shard may each have `team/collide` (and every workspace's
 * binding of the export has the same name), and each is its own object —
 * stored, updated and deleted apart, each delete handing its own workspace's
 * copy to that workspace's share. Within a Share (one logical cluster) a
 * request's key is namespace/name, as for any remote.
 *
 * What the shard sees goes to its provider as bindings and requests of
 * logical clusters; the provider decides what is served. A shard that is down
 * or not yet serving holds up nothing but itself: its caches retry on their
 * own, and its readiness line says what is wrong.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { InternalRequest } from '../api/types.js';
import { fromKubeConfig, type Cluster, type KubeObject, type RequestObserver } from '../kube/client.js';
import { Informer, keyOf, type InformerHandlers, type InformerObserver, type ReadinessCheck } from '../kube/informer.js';
import type { RequestCache } from './remote.js';
import type { RequestKind } from '../requests/request-kind.js';
import { ANNOTATION_KCP_CLUSTER } from '../requests/cached-requests.js';

/** The annotation kcp puts on every object seen through a virtual workspace: its logical cluster. Finished requests' cached records keep it. */
export const KCP_CLUSTER_ANNOTATION = ANNOTATION_KCP_CLUSTER;

/**
 * An object's key in a wildcard (`/clusters/*`) cache: `cluster|namespace/name`
 * (`cluster|/name` for a cluster-scoped one), the cluster being its
 * `kcp.io/cluster` annotation — kcp's MetaClusterNamespaceKeyFunc form. An
 * object without the annotation keys under the empty cluster (`|ns/name`); the
 * shard refuses it (logged) and it reaches no workspace.
 */
export function kcpKeyOf(o: KubeObject): string {
  return `${o.metadata?.annotations?.[KCP_CLUSTER_ANNOTATION] ?? ''}|${keyOf(o)}`;
}

/** What a shard tells its provider. */
export interface ShardEvents {
  /** A logical cluster's binding of the export was seen (added or changed); `ready`: bound and usable. */
  binding(shard: KcpShard, cluster: string, ready: boolean): void;
  /** A logical cluster has no binding of the export on this shard any more (unbound, or the workspace deleted). */
  unbound(shard: KcpShard, cluster: string): void;
}

export interface KcpShardOptions {
  exportName: string;
  kinds: readonly RequestKind[];
  log: Logger;
  /** The provider kubeconfig's credentials against a URL of the same kcp. */
  kubeconfigAt: (server: string) => KubeConfig;
  resyncPeriodMs?: number;
  informerObserver?: InformerObserver | undefined;
  apiObserver?: RequestObserver | undefined;
  informer?: { watchTimeoutSeconds?: number; backoffMaxMs?: number };
  /** Applied to every request before the shard's cache keeps it (the controller's: src/requests/cached-requests.ts slimRequest). */
  transform?: ((r: InternalRequest) => InternalRequest) | undefined;
}

/** One logical cluster's share of a kind's wildcard cache on one shard. */
export class Share implements RequestCache {
  readonly items = new Map<string, InternalRequest>();
  handlers: InformerHandlers<InternalRequest> = {};

  constructor(
    readonly name: string,
    private readonly all: Informer<InternalRequest>,
  ) {}

  get synced(): boolean {
    return this.all.synced;
  }
  get size(): number {
    return this.items.size;
  }
  get health() {
    return this.all.health;
  }
  get(key: string): InternalRequest | undefined {
    return this.items.get(key);
  }
  list(): Iterable<InternalRequest> {
    return this.items.values();
  }
  readiness(required: boolean): ReadinessCheck {
    return { ...this.all.readiness(required), name: this.name };
  }
  // The wildcard informer's life is the shard's.
  start(): void {}
  stop(): Promise<void> {
    return Promise.resolve();
  }
  waitForSync(): Promise<void> {
    return this.all.waitForSync();
  }
}

/** The part of an APIBinding the shard keeps. */
export interface SlimBinding extends KubeObject {
  status?: { phase?: string; conditions?: Array<{ type?: string; status?: string }> };
}

/** How long a shard just added may take to list before it is called down. */
const NEW_SHARD_GRACE_MS = 10_000;

const APIBINDINGS = { group: 'apis.kcp.io', version: 'v1alpha1', plural: 'apibindings' } as const;

/** Bound (kcp's phase) and not on its way out. A binding whose Ready condition is False is not usable either. */
export function bindingReady(b: SlimBinding): boolean {
  if (b.metadata?.deletionTimestamp) return false;
  if (b.status?.phase !== 'Bound') return false;
  const ready = b.status.conditions?.find((c) => c.type === 'Ready');
  return !ready || ready.status === 'True';
}

/** A shard's name in logs, metrics and readiness: its URL's host and port (as many values as the kcp has shards). */
export function shardName(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

export class KcpShard {
  readonly name: string;
  private wildcard: Cluster | undefined;
  private bindings: Informer<SlimBinding> | undefined;
  /** logical cluster → names of its bindings of the export on this shard, each with whether it is ready. */
  private readonly bound = new Map<string, Map<string, boolean>>();
  /** Per kind: the wildcard informer and each logical cluster's share of it. */
  readonly caches = new Map<string, { all: Informer<InternalRequest>; shares: Map<string, Share> }>();
  private wasUp: boolean | undefined;
  private readonly since = Date.now();

  constructor(
    readonly url: string,
    private readonly events: ShardEvents,
    private readonly opts: KcpShardOptions,
  ) {
    this.name = shardName(url);
  }

  /** Connects and starts its caches; does not wait for them (see synced()). */
  async start(): Promise<void> {
    this.wildcard = await fromKubeConfig('remote', this.opts.kubeconfigAt(`${this.url}/clusters/*`), {
      remote: 'kcp',
      ...(this.opts.apiObserver ? { observer: this.opts.apiObserver } : {}),
    });
    const log = this.opts.log.child({ kcpExport: this.opts.exportName, shard: this.name });
    const informerOpts = {
      resyncPeriodMs: this.opts.resyncPeriodMs ?? 10 * 60_000,
      ...(this.opts.informerObserver ? { observer: this.opts.informerObserver } : {}),
      ...this.opts.informer,
    };
    this.bindings = new Informer<SlimBinding>(
      `kcp/${this.opts.exportName}/${this.name}/apibindings`,
      this.wildcard.resource<SlimBinding>(APIBINDINGS),
      this.bindingHandlers(),
      log,
      {
        ...informerOpts,
        // Every workspace's binding of the export has the export's name: a binding is its cluster's.
        keyOf: kcpKeyOf,
        transform: (b) => ({
          metadata: { name: b.metadata?.name ?? '', ...(b.metadata?.annotations ? { annotations: b.metadata.annotations } : {}), ...(b.metadata?.deletionTimestamp ? { deletionTimestamp: b.metadata.deletionTimestamp } : {}), ...(b.metadata?.resourceVersion ? { resourceVersion: b.metadata.resourceVersion } : {}) },
          ...(b.status ? { status: { ...(b.status.phase ? { phase: b.status.phase } : {}), ...(b.status.conditions ? { conditions: b.status.conditions.map((c) => ({ type: c.type, status: c.status })) } : {}) } } : {}),
        }) as SlimBinding,
      },
    );
    for (const kind of this.opts.kinds) {
      const shares = new Map<string, Share>();
      const all: Informer<InternalRequest> = new Informer<InternalRequest>(
        `kcp/${this.opts.exportName}/${this.name}/${kind.resource.plural}`,
        this.wildcard.resource<InternalRequest>(kind.resource),
        this.requestHandlers(kind, shares),
        log,
        { ...informerOpts, keyOf: kcpKeyOf, transform: (obj) => { const r = kind.builtIn ? obj : kind.toRequest(obj as never); return this.opts.transform ? this.opts.transform(r) : r; } },
      );
      this.caches.set(kind.kind, { all, shares });
    }
    this.bindings.start();
    for (const { all } of this.caches.values()) all.start();
  }

  /** A logical cluster's own connection on this shard (`<url>/clusters/<name>`: status writes, Events), sharing the wildcard connection's keep-alive sockets. */
  connection(cluster: string): Cluster {
    return this.wildcard!.sibling(this.opts.kubeconfigAt(`${this.url}/clusters/${cluster}`));
  }

  /** Resolves once every cache of the shard has listed. */
  async synced(): Promise<void> {
    await Promise.all([this.bindings?.waitForSync(), ...[...this.caches.values()].map(({ all }) => all.waitForSync())]);
  }

  get isSynced(): boolean {
    return !!this.bindings?.synced && [...this.caches.values()].every(({ all }) => all.synced);
  }

  async stop(): Promise<void> {
    await Promise.all([this.bindings?.stop(), ...[...this.caches.values()].map(({ all }) => all.stop())]);
    this.wildcard?.close();
  }

  /** Up: every cache listed and connected; else why not (the first error seen). */
  state(): { up: boolean; why?: string } {
    if (!this.bindings) return { up: false, why: 'not started' };
    for (const h of [this.bindings.health, ...[...this.caches.values()].map(({ all }) => all.health)]) {
      if (!h.synced || !h.connected) return { up: false, why: h.lastError ?? (h.synced ? 'reconnecting' : 'not listed yet') };
    }
    return { up: true };
  }

  /**
   * Logs a change between up and down, once per change, naming the shard.
   * A shard just added that has not listed yet is not called down until it
   * has had NEW_SHARD_GRACE_MS to list.
   */
  noteState(now = Date.now()): boolean {
    const s = this.state();
    if (s.up) {
      if (this.wasUp === false) this.opts.log.info({ kcpExport: this.opts.exportName, shard: this.name, url: this.url }, 'kcp: shard serving again');
      this.wasUp = true;
    } else if (this.wasUp === true || (this.wasUp === undefined && now - this.since > NEW_SHARD_GRACE_MS)) {
      this.opts.log.warn({ kcpExport: this.opts.exportName, shard: this.name, url: this.url, why: s.why }, 'kcp: shard not serving; its workspaces wait, the other shards are served');
      this.wasUp = false;
    }
    return s.up;
  }

  readiness(): ReadinessCheck {
    const s = this.state();
    return { name: `kcp/${this.opts.exportName}/shard/${this.name}`, ok: s.up, required: false, ...(s.up ? {} : { detail: `${this.url}: ${s.why}` }) };
  }

  /** The logical clusters that bind the export on this shard with a ready binding. */
  readyClusters(): string[] {
    return [...this.bound].filter(([, names]) => [...names.values()].some(Boolean)).map(([c]) => c);
  }

  isReady(cluster: string): boolean {
    return [...(this.bound.get(cluster)?.values() ?? [])].some(Boolean);
  }

  /** A logical cluster's share of a kind (made on first use). */
  share(kindName: string, cluster: string): Share {
    const c = this.caches.get(kindName)!;
    let s = c.shares.get(cluster);
    if (!s) {
      s = new Share(c.all.name, c.all);
      c.shares.set(cluster, s);
    }
    return s;
  }

  /** Drops a logical cluster's shares (what they held is gone from this shard, or served elsewhere). */
  dropShares(cluster: string): Share[] {
    const dropped: Share[] = [];
    for (const c of this.caches.values()) {
      const s = c.shares.get(cluster);
      if (s) dropped.push(s);
      c.shares.delete(cluster);
    }
    return dropped;
  }

  /** Number of logical clusters this shard holds anything of (bindings or requests). */
  get clusterCount(): number {
    const all = new Set(this.bound.keys());
    for (const c of this.caches.values()) for (const k of c.shares.keys()) all.add(k);
    return all.size;
  }

  private clusterOf(o: KubeObject): string | undefined {
    const cluster = o.metadata?.annotations?.[KCP_CLUSTER_ANNOTATION];
    if (!cluster) this.opts.log.warn({ shard: this.name, object: keyOf(o as never) }, `kcp: an object without the ${KCP_CLUSTER_ANNOTATION} annotation; ignored`);
    return cluster;
  }

  /** The handlers of the APIBindings' wildcard cache (keyed by kcpKeyOf): each binding reported as its own cluster's. */
  bindingHandlers(): InformerHandlers<SlimBinding> {
    return {
      onAdd: (b) => this.sawBinding(b),
      onUpdate: (_o, b) => this.sawBinding(b),
      onDelete: (b) => this.lostBinding(b),
    };
  }

  /**
   * The handlers of a kind's wildcard cache (keyed by kcpKeyOf): each
   * request goes to its own cluster's share, stored there by
   * namespace/name; a delete removes it from that share only.
   */
  requestHandlers(kind: RequestKind, shares: ReadonlyMap<string, Share>): InformerHandlers<InternalRequest> {
    return {
      onAdd: (r) => this.stored(kind, r)?.handlers.onAdd?.(r),
      onUpdate: (o, n) => this.stored(kind, n)?.handlers.onUpdate?.(o, n),
      onDelete: (r) => {
        const s = this.shareOf(kind, r);
        if (!s) return;
        s.items.delete(keyOf(r));
        s.handlers.onDelete?.(r);
      },
      onResync: () => {
        for (const s of shares.values()) s.handlers.onResync?.();
      },
    };
  }

  private sawBinding(b: SlimBinding): void {
    const cluster = this.clusterOf(b);
    if (!cluster) return;
    let names = this.bound.get(cluster);
    if (!names) this.bound.set(cluster, (names = new Map()));
    names.set(b.metadata?.name ?? '', bindingReady(b));
    this.events.binding(this, cluster, this.isReady(cluster));
  }

  private lostBinding(b: SlimBinding): void {
    const cluster = this.clusterOf(b);
    if (!cluster) return;
    const names = this.bound.get(cluster);
    names?.delete(b.metadata?.name ?? '');
    if (names && names.size) return this.events.binding(this, cluster, this.isReady(cluster));
    this.bound.delete(cluster);
    this.events.unbound(this, cluster);
  }

  private shareOf(kind: RequestKind, r: InternalRequest): Share | undefined {
    const cluster = this.clusterOf(r);
    return cluster ? this.caches.get(kind.kind)?.shares.get(cluster) : undefined;
  }

  /** A request added or changed: stored in its cluster's share; the share (with the handlers of a served remote, if any) is returned. */
  private stored(kind: RequestKind, r: InternalRequest): Share | undefined {
    const cluster = this.clusterOf(r);
    if (!cluster) return undefined;
    // Kept even before the cluster is served (its binding not seen yet): served, the share is replayed.
    const s = this.share(kind.kind, cluster);
    s.items.set(keyOf(r), r);
    return s;
  }
}
