/**
 * The remotes behind a kcp APIExport's virtual workspaces: every logical
 * cluster (workspace) that binds the export is a remote, named by its logical
 * cluster name, all served through ONE kubeconfig. This file is the
 * provider and its shards' life (the slice followed, shards started,
 * started again, retired); which shard serves each workspace, and its
 * remote, is kcp-ownership.ts; reading the paths is kcp-paths.ts, a shard's
 * caches kcp-shard.ts, watching the slice kcp-slice.ts. Over 400 lines on
 * purpose: following the slice, a shard's start and its retries, and
 * retiring a URL that left act on the same three maps of shards, kept in
 * one class.
 *
 * - Shards. An APIExportEndpointSlice of the export, in the provider
 *   workspace (the kubeconfig's), lists one virtual-workspace URL per kcp
 *   shard, and each URL shows only the workspaces on its shard. The slice is
 *   the export's own (same name) or a partitioned one (`spec.partition`:
 *   only the shards a Partition selects), so that one controller serves a
 *   group of shards (kcp-slice.ts). It is watched: every URL is served as
 *   soon as kcp lists it (kcp-shard.ts: one wildcard list/watch per request
 *   kind and one of the export's APIBindings, on `<url>/clusters/*`), one
 *   change at a time. A shard whose start fails (e.g. its credentials
 *   cannot be had) is started again with backoff and is down meanwhile. A
 *   shard that is down or not serving yet holds up no other; it has its own
 *   readiness line, metric series and log lines.
 * - Workspaces. A logical cluster is served from exactly one shard, handed
 *   over between shards when kcp moves it, forgotten after a grace when it
 *   unbinds, and held while its path cannot be read (kcp-ownership.ts).
 * - Every call (the slice and path reads, a shard's start) is bounded by the
 *   client's request timeout.
 *
 * Nothing else of the request path knows it is talking to kcp, or that kcp
 * has shards.
 */
import type { InternalRequest } from '../api/types.js';
import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { describeError, fromKubeConfig, type Cluster, type RequestObserver } from '../kube/client.js';
import type { InformerObserver, ReadinessCheck } from '../kube/informer.js';
import type { RemoteProvider, RemoteSink } from './provider.js';
import { INTERNAL_REQUEST_KIND, type RequestKind } from '../requests/request-kind.js';
import { KcpShard, type KcpShardOptions, type ShardEvents } from './kcp-shard.js';
import { backoffMs, bounded } from './kcp-paths.js';
import { EndpointSliceWatch } from './kcp-slice.js';
import { WorkspaceOwnership, type ProviderShard } from './kcp-ownership.js';

export type { ProviderShard } from './kcp-ownership.js';

export interface KcpRemotesOptions {
  /** A kubeconfig whose current context is the provider workspace (where the APIExport is). */
  kubeconfig: KubeConfig;
  /** The APIExport's name. */
  exportName: string;
  /** The APIExportEndpointSlice to serve, in the provider workspace (default: the export's own, of the export's name); a partitioned slice serves the shards its Partition selects. */
  endpointSlice?: string;
  kinds?: readonly RequestKind[];
  log: Logger;
  resyncPeriodMs?: number;
  informerObserver?: InformerObserver | undefined;
  apiObserver?: RequestObserver | undefined;
  informer?: { watchTimeoutSeconds?: number; backoffMaxMs?: number };
  /** Applied to every request before a shard's cache keeps it (as RemoteSet's transform for the other remotes). */
  transform?: ((r: InternalRequest) => InternalRequest) | undefined;
  /** How often the shards' states are looked at (log lines on a change) and the cached slice applied again (default: the smaller of pathRefreshMs and 10 s). The slice itself is watched. */
  sliceRefreshMs?: number;
  /** Workspaces whose child workspaces are tenants, by path (default: `root`); their Workspaces give each child's logical cluster. */
  workspaceParents?: readonly string[];
  /** How often the parents are read again (default 60 s); also whenever a logical cluster not known yet appears, and with backoff while a read fails. */
  pathRefreshMs?: number;
  /** How long start() waits for a shard to list before it goes on without it (default 30 s; it is served once it lists). */
  shardStartWaitMs?: number;
  /** After a workspace unbinds (or its shard's URL leaves the slice): how long its remote stays so that the deletes of its requests are acted on (default 30 s). */
  unbindGraceMs?: number;
  /** The timeout of every call the provider makes (slice and path reads, a shard's start); default 30 s, the client's. */
  requestTimeoutMs?: number;
  /** Retries of a failed path read or shard start: the first after baseMs (default 1 s), doubling up to maxMs (default 60 s, or pathRefreshMs if shorter for path reads). */
  backoff?: { baseMs?: number; maxMs?: number };
  /** Makes a shard (tests give their own). */
  shardFactory?: (url: string, events: ShardEvents, opts: KcpShardOptions) => ProviderShard;
}

/** Per shard, for metrics. */
export interface KcpShardView {
  shard: string;
  up: boolean;
  /** Workspaces served from it. */
  workspaces: number;
  /** Of those, the ones whose requests wait: their path cannot be read yet (held), or is being read for the first time. */
  waiting: number;
}

/** A shard whose start failed: started again (as a new KcpShard) after a backoff. */
interface StartFailure {
  attempts: number;
  why: string;
  retryAt: number;
  timer: NodeJS.Timeout;
}

export class KcpRemotes implements RemoteProvider, ShardEvents {
  private readonly kinds: readonly RequestKind[];
  /** One per URL of the endpoint slice. */
  private readonly shards = new Map<string, ProviderShard>();
  /** Shards whose URL left the slice: they serve their workspaces for the unbind grace, then stop. By URL (one that comes back is served on). */
  private readonly retiring = new Map<string, { shard: ProviderShard; timer: NodeJS.Timeout }>();
  /** Shards of the slice whose start failed, until one starts. */
  private readonly startFailures = new Map<string, StartFailure>();
  private sliceError: string | undefined = 'not looked at yet';
  private sliceSeen = false;
  /** The endpoint slice, watched once the provider workspace's connection is made. */
  private readonly slice: EndpointSliceWatch;
  private sliceWatched = false;
  /** The partition last seen on the slice (logged when it changes). */
  private partitionSeen: string | undefined;
  /** Which shard serves each workspace, and their remotes and paths (kcp-ownership.ts). */
  private readonly workspaces: WorkspaceOwnership;
  /** Every workspace's name in metric labels: the provider's, so that label values stay few. */
  readonly metricsName = 'kcp';
  private stopped = false;
  /** The slice read under way (never two), and whether another was asked for meanwhile. */
  private following: Promise<void> | undefined;
  private followAgain = false;
  private followTimer: NodeJS.Timeout | undefined;
  /** The provider workspace's connection (slice reads), and one per parent (path reads): the project's client, with its timeout. */
  private provider: Promise<Cluster> | undefined;
  private readonly parentConns = new Map<string, Cluster>();

  constructor(
    private readonly sink: RemoteSink,
    private readonly opts: KcpRemotesOptions,
  ) {
    this.kinds = opts.kinds ?? [INTERNAL_REQUEST_KIND];
    this.slice = new EndpointSliceWatch({
      name: this.sliceName,
      exportName: opts.exportName,
      log: opts.log,
      onChange: () => void this.follow(),
      timeoutMs: this.timeoutMs,
      ...(opts.informer ? { informer: opts.informer } : {}),
      observer: opts.informerObserver,
    });
    this.workspaces = new WorkspaceOwnership(sink, {
      exportName: opts.exportName,
      kinds: this.kinds,
      log: opts.log,
      metricsName: this.metricsName,
      graceMs: this.graceMs,
      paths: {
        parents: this.parents,
        connect: (parent) => this.parentConnection(parent),
        timeoutMs: this.timeoutMs,
        refreshMs: opts.pathRefreshMs ?? 60_000,
        backoff: { baseMs: opts.backoff?.baseMs ?? 1_000, maxMs: opts.backoff?.maxMs ?? 60_000 },
        log: opts.log,
      },
      shards: {
        serving: () => [...this.shards.values()].filter((s) => !this.startFailures.has(s.url)),
        isRetiring: (shard) => this.isRetiring(shard),
      },
    });
  }

  private get parents(): readonly string[] {
    return this.opts.workspaceParents?.length ? this.opts.workspaceParents : ['root'];
  }

  private get sliceName(): string {
    return this.opts.endpointSlice ?? this.opts.exportName;
  }

  private get timeoutMs(): number {
    return this.opts.requestTimeoutMs ?? 30_000;
  }

  private get sliceEvery(): number {
    return this.opts.sliceRefreshMs ?? Math.min(this.opts.pathRefreshMs ?? 60_000, 10_000);
  }

  private get graceMs(): number {
    return this.opts.unbindGraceMs ?? 30_000;
  }

  private backoffMs(attempt: number): number {
    return backoffMs(attempt, this.opts.backoff?.baseMs ?? 1_000, this.opts.backoff?.maxMs ?? 60_000);
  }

  /**
   * Reads the endpoint slice and starts every shard. Resolves once each has
   * listed (or, for one that does not, after shardStartWaitMs), or at once
   * when the slice lists no URL yet (no workspace binds the export): it is
   * then looked at again in the background, and the other remotes are
   * served meanwhile.
   */
  async start(): Promise<void> {
    await this.workspaces.paths.refresh();
    await this.follow();
    this.workspaces.paths.start();
    const wait = this.opts.shardStartWaitMs ?? 30_000;
    await Promise.all(
      [...this.shards.values()].map((shard) =>
        Promise.race([
          shard.synced(),
          new Promise<void>((r) => setTimeout(() => {
            if (!shard.isSynced) this.opts.log.warn({ kcpExport: this.opts.exportName, shard: shard.name, url: shard.url, why: this.shardState(shard).why, waitedMs: wait }, 'kcp: a shard has not listed yet; going on without it (it is served once it lists)');
            r();
          }, wait).unref()),
        ]),
      ),
    );
  }

  /**
   * Applies the endpoint slice (as watched) and adds or removes shards to
   * match it. Never two at once: asked during one, one more follows it; the
   * next timed one is scheduled from the end of the last.
   */
  private follow(): Promise<void> {
    if (this.following) {
      this.followAgain = true;
      return this.following;
    }
    if (this.followTimer) clearTimeout(this.followTimer);
    this.followTimer = undefined;
    this.following = (async () => {
      do {
        this.followAgain = false;
        try {
          await this.followOnce();
        } catch (e) {
          this.opts.log.error({ err: (e as Error).message }, 'kcp: following the endpoint slice');
        }
      } while (this.followAgain && !this.stopped);
    })().finally(() => {
      this.following = undefined;
      if (!this.stopped) this.followTimer = setTimeout(() => void this.follow(), this.sliceEvery).unref();
    });
    return this.following;
  }

  private async followOnce(): Promise<void> {
    if (this.stopped) return;
    for (const [url, shard] of this.shards) if (!this.startFailures.has(url)) shard.noteState();
    const urls = await this.endpoints();
    if (!urls) return; // unreadable: keep what is served (sliceError says why)
    if (urls.length && !this.sliceSeen) this.opts.log.info({ kcpExport: this.opts.exportName, endpointSlice: this.sliceName, urls: urls.length }, 'kcp: endpoint slice read; its URLs are served');
    if (!urls.length) {
      if (!this.sliceSeen || this.shards.size) this.opts.log.warn({ export: this.opts.exportName, endpointSlice: this.sliceName, why: this.sliceError }, 'kcp: the endpoint slice lists no virtual workspace URL yet; served as soon as it does');
    }
    this.sliceSeen = true;
    for (const [url, shard] of [...this.shards]) {
      if (urls.includes(url) || this.stopped) continue;
      this.shards.delete(url);
      this.retire(url, shard);
    }
    for (const url of urls) {
      if (this.shards.has(url) || this.stopped) continue;
      const back = this.retiring.get(url);
      if (back) {
        // Back in the slice within the grace: served on, as if it had not left.
        clearTimeout(back.timer);
        this.retiring.delete(url);
        this.shards.set(url, back.shard);
        this.opts.log.info({ kcpExport: this.opts.exportName, shard: back.shard.name, url }, 'kcp: shard endpoint back in the endpoint slice; its workspaces are served on');
        for (const c of back.shard.readyClusters()) this.workspaces.binding(back.shard, c, true);
        continue;
      }
      const shard = this.makeShard(url);
      this.shards.set(url, shard);
      this.opts.log.info({ kcpExport: this.opts.exportName, shard: shard.name, url, workspaceParents: this.parents, shards: this.shards.size }, 'kcp: serving the workspaces of a shard that bind the export');
      await this.startShard(url, shard);
    }
  }

  private makeShard(url: string): ProviderShard {
    const opts: KcpShardOptions = {
      exportName: this.opts.exportName,
      kinds: this.kinds,
      log: this.opts.log,
      kubeconfigAt: (server) => this.kubeconfigAt(server),
      ...(this.opts.resyncPeriodMs !== undefined ? { resyncPeriodMs: this.opts.resyncPeriodMs } : {}),
      informerObserver: this.opts.informerObserver,
      apiObserver: this.opts.apiObserver,
      ...(this.opts.informer ? { informer: this.opts.informer } : {}),
      transform: this.opts.transform,
    };
    return this.opts.shardFactory ? this.opts.shardFactory(url, this, opts) : new KcpShard(url, this, opts);
  }

  /**
   * Starts a shard, bounded by the request timeout. One that fails (its
   * connection cannot be made: e.g. an exec credential plugin fails or
   * hangs) is down, says why, and is started again, as a new shard, with
   * backoff, for as long as its URL is in the slice.
   */
  private async startShard(url: string, shard: ProviderShard): Promise<void> {
    const started = shard.start();
    try {
      await bounded(started, this.timeoutMs, `starting the shard's connection and caches took longer than ${this.timeoutMs / 1000} s`);
      const failed = this.startFailures.get(url);
      if (failed) {
        clearTimeout(failed.timer);
        this.startFailures.delete(url);
        this.opts.log.info({ kcpExport: this.opts.exportName, shard: shard.name, url, attempts: failed.attempts + 1 }, 'kcp: shard started after failed attempts; its workspaces are served');
      }
    } catch (e) {
      // Whatever it made (now, or when a start that timed out ends after all) is stopped.
      void started.then(() => shard.stop(), () => shard.stop()).catch(() => undefined);
      if (this.stopped || this.shards.get(url) !== shard) return;
      const previous = this.startFailures.get(url);
      const attempts = (previous?.attempts ?? 0) + 1;
      const delay = this.backoffMs(attempts);
      const why = describeError(e);
      const timer = setTimeout(() => this.restartShard(url, shard), delay).unref();
      this.startFailures.set(url, { attempts, why, retryAt: Date.now() + delay, timer });
      this.opts.log.warn({ kcpExport: this.opts.exportName, shard: shard.name, url, err: why, attempts, retryInMs: delay }, 'kcp: a shard could not be started; started again with backoff, down meanwhile (the other shards are served)');
    }
  }

  private restartShard(url: string, failed: ProviderShard): void {
    if (this.stopped || this.shards.get(url) !== failed) return;
    const shard = this.makeShard(url);
    this.shards.set(url, shard);
    void this.startShard(url, shard);
  }

  /**
   * A URL left the slice. Its workspaces that another shard has ready are
   * handed over; the others stay served from it for the unbind grace (kcp
   * drops a shard's URL when its last binding goes: the deletes delivered
   * meanwhile are acted on), then are forgotten and the shard stopped.
   */
  private retire(url: string, shard: ProviderShard): void {
    const failed = this.startFailures.get(url);
    if (failed) {
      clearTimeout(failed.timer);
      this.startFailures.delete(url);
      void shard.stop();
      return;
    }
    const owned = this.workspaces.ownedBy(shard);
    this.opts.log.warn({ kcpExport: this.opts.exportName, shard: shard.name, url, workspaces: owned.length, graceMs: this.graceMs }, 'kcp: shard endpoint removed from the endpoint slice; its workspaces are handed over or served for the unbind grace, then forgotten');
    this.workspaces.handOverFrom(shard, 'its shard left the endpoint slice');
    const timer = setTimeout(() => void this.retired(url, shard), this.graceMs).unref();
    this.retiring.set(url, { shard, timer });
  }

  private async retired(url: string, shard: ProviderShard): Promise<void> {
    if (this.retiring.get(url)?.shard !== shard) return;
    this.retiring.delete(url);
    await this.workspaces.release(shard, 'its shard left the endpoint slice');
    await shard.stop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.followTimer) clearTimeout(this.followTimer);
    this.workspaces.stop();
    for (const f of this.startFailures.values()) clearTimeout(f.timer);
    for (const r of this.retiring.values()) clearTimeout(r.timer);
    await this.following;
    await this.slice.stop();
    await Promise.all([...this.shards.values(), ...[...this.retiring.values()].map((r) => r.shard)].map((s) => s.stop()));
    this.retiring.clear();
    for (const c of this.parentConns.values()) c.close();
    void this.provider?.then((c) => c.close(), () => undefined);
  }

  readiness(): ReadinessCheck[] {
    const any = this.shards.size > 0;
    const checks: ReadinessCheck[] = [
      { name: `kcp/${this.opts.exportName}`, ok: any && !this.sliceError, required: false, ...(any && !this.sliceError ? {} : { detail: any ? this.sliceError! : `no virtual workspace URL: ${this.sliceError}` }) },
      this.workspaces.pathsReadiness(),
    ];
    for (const [url, shard] of this.shards) {
      const failed = this.startFailures.get(url);
      checks.push(failed ? { name: `kcp/${this.opts.exportName}/shard/${shard.name}`, ok: false, required: false, detail: `${url}: cannot be started (${failed.attempts} attempt(s), next in ${Math.max(0, Math.ceil((failed.retryAt - Date.now()) / 1000))} s): ${failed.why}` } : shard.readiness());
    }
    return checks;
  }

  /** The logical clusters served now. */
  clusters(): string[] {
    return this.workspaces.clusters();
  }

  /** The logical clusters served held (their path not known yet), each with why. */
  heldClusters(): Map<string, string> {
    return this.workspaces.heldClusters();
  }

  /** Per shard: up, and how many workspaces are served from it (the metrics). A shard whose URL left the slice counts until it stops. */
  shardViews(): KcpShardView[] {
    const all = [...this.shards.values(), ...[...this.retiring.values()].map((r) => r.shard)];
    return all.map((s) => ({ shard: s.name, up: this.shardState(s).up, ...this.workspaces.counts(s) }));
  }

  private shardState(shard: ProviderShard): { up: boolean; why?: string } {
    const failed = this.startFailures.get(shard.url);
    if (failed && this.shards.get(shard.url) === shard) return { up: false, why: `cannot be started: ${failed.why}` };
    return shard.state();
  }

  private isRetiring(shard: ProviderShard): boolean {
    return this.retiring.get(shard.url)?.shard === shard;
  }

  // ShardEvents: what the shards see (kcp-ownership.ts decides).

  binding(shard: ProviderShard, cluster: string, ready: boolean): void {
    this.workspaces.binding(shard, cluster, ready);
  }

  unbound(shard: ProviderShard, cluster: string): void {
    this.workspaces.unbound(shard, cluster);
  }

  private async parentConnection(parent: string): Promise<Cluster> {
    let c = this.parentConns.get(parent);
    if (!c) {
      const provider = await this.providerConnection();
      c = provider.sibling(this.kubeconfigAt(`${this.kcpBase()}/clusters/${parent}`), { requestTimeoutMs: this.timeoutMs });
      this.parentConns.set(parent, c);
    }
    return c;
  }

  /** The provider workspace's connection (made once; making it runs the kubeconfig's credential plugin, if any: bounded too). */
  private providerConnection(): Promise<Cluster> {
    this.provider ??= bounded(
      fromKubeConfig('remote', this.opts.kubeconfig, { remote: this.metricsName, requestTimeoutMs: this.timeoutMs, ...(this.opts.apiObserver ? { observer: this.opts.apiObserver } : {}) }),
      this.timeoutMs,
      `connecting to kcp took longer than ${this.timeoutMs / 1000} s`,
    ).catch((e: unknown) => {
      this.provider = undefined; // made again next time
      throw e;
    });
    return this.provider;
  }

  /** The kcp server's base URL (the provider kubeconfig's server without its /clusters/… part). */
  private kcpBase(): string {
    const server = this.opts.kubeconfig.getCurrentCluster()!.server;
    const i = server.indexOf('/clusters/');
    return (i >= 0 ? server.slice(0, i) : server).replace(/\/+$/, '');
  }

  /**
   * The URLs of the export's virtual workspaces, from the watched
   * APIExportEndpointSlice; undefined when it cannot be read. The watch is
   * started here once the provider workspace's connection can be made (its
   * credential plugin may fail: tried again on the next look).
   */
  private async endpoints(): Promise<string[] | undefined> {
    if (!this.sliceWatched) {
      try {
        const conn = await this.providerConnection();
        this.sliceWatched = true;
        await this.slice.start(conn);
      } catch (e) {
        this.sliceError = `cannot read APIExportEndpointSlice ${this.sliceName}: ${describeError(e)}`;
        this.opts.log.warn({ why: this.sliceError }, 'kcp: the endpoint slice cannot be read; serving the shards known');
        return undefined;
      }
    }
    const r = this.slice.read();
    if (!r.urls && r.error !== this.sliceError) this.opts.log.warn({ kcpExport: this.opts.exportName, endpointSlice: this.sliceName, why: r.error }, 'kcp: the endpoint slice cannot be read; serving the shards known');
    this.sliceError = r.error;
    const partition = r.partition ? `${r.partition.name} (${r.partition.shardSelector || 'no shard selector yet'})` : undefined;
    if (partition !== this.partitionSeen && r.urls) {
      this.partitionSeen = partition;
      this.opts.log.info({ kcpExport: this.opts.exportName, endpointSlice: this.sliceName, partition: r.partition?.name ?? null, shardSelector: r.partition?.shardSelector ?? null }, partition ? 'kcp: the endpoint slice is partitioned: only the shards its partition selects are served here' : 'kcp: the endpoint slice is not partitioned: every shard of the export is served here');
    }
    return r.urls;
  }

  /** The provider kubeconfig's credentials against another URL of the same kcp. */
  private kubeconfigAt(server: string): KubeConfig {
    const kc = new KubeConfig();
    const current = this.opts.kubeconfig.getCurrentCluster()!;
    const user = this.opts.kubeconfig.getCurrentUser()!;
    kc.loadFromOptions({
      clusters: [{ ...current, name: 'vw', server }],
      users: [user],
      contexts: [{ name: 'vw', cluster: 'vw', user: user.name }],
      currentContext: 'vw',
    });
    return kc;
  }
}
