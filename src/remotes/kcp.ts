/**
 * The remotes behind a kcp APIExport's virtual workspaces: every logical
 * cluster (workspace) that binds the export is a remote, named by its logical
 * cluster name, all served through ONE kubeconfig. Over 400 lines on
 * purpose: which shard serves a workspace is decided by the shards' life
 * (the slice, starts, URLs leaving) and the workspaces' (bindings, moves,
 * paths) together, in one class; reading the paths is kcp-paths.ts, a
 * shard's caches kcp-shard.ts.
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
 * - Workspaces. A logical cluster is served from exactly one shard: the
 *   first where its APIBinding of the export is ready (Bound); its
 *   connection is `<shard url>/clusters/<name>`, where status writes and
 *   Events go.
 * - Moves. While another shard also has it ready (kcp moving it), it stays
 *   served from the first; when the first drops it (its binding gone or not
 *   ready, its objects deleted there, its URL gone from the slice) it is
 *   handed over: served from the other shard, with no delete delivered for
 *   it (its requests are on the other shard). A binding on another shard
 *   that arrives after the first dropped it (within the grace below) takes
 *   it over the same way.
 * - Removals. When the binding goes and no other shard has it (unbound, or
 *   the workspace deleted) kcp has deleted its requests: the deletes that
 *   have not arrived yet are delivered, and after a grace period (what runs
 *   for them is stopped as for any deleted request) the remote is removed
 *   and everything kept for it (caches, queue keys, fairness state, status
 *   bookkeeping) forgotten. A URL that leaves the slice keeps serving its
 *   workspaces for the same grace (kcp drops a shard's URL when its last
 *   binding goes: the deletes just delivered are acted on), then they are
 *   forgotten. No restart is needed.
 * - Paths. Rules name workspaces by path (`root:org:team`). A path is learnt
 *   from the parent workspace's Workspace objects (`spec.cluster`: set by
 *   kcp, which neither the tenant nor its admin can change), never from the
 *   workspace itself (its LogicalCluster's `kcp.io/path` is the tenant
 *   admin's to rewrite). The parents to read are given
 *   (`--kcp-workspace-parent`, default `root`). A logical cluster first seen
 *   is served once its parents have been read again. When every parent was
 *   read and none lists it, it is under no given parent and its rules name
 *   it by logical cluster. When a parent cannot be read (403, no answer),
 *   its name is not known: it is served HELD — its requests wait, pending
 *   (phase WaitingForWorkspace, saying why), nothing of it is decided under
 *   a guessed name — and the parents are read again with backoff until the
 *   name is known.
 * - Every call (the slice and path reads, a shard's start) is bounded by the
 *   client's request timeout.
 *
 * Nothing else of the request path knows it is talking to kcp, or that kcp
 * has shards.
 */
import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { InternalRequest } from '../api/types.js';
import { describeError, fromKubeConfig, type Cluster, type RequestObserver } from '../kube/client.js';
import type { InformerHandlers, InformerObserver, ReadinessCheck } from '../kube/informer.js';
import type { RemoteProvider, RemoteSink } from './provider.js';
import { INTERNAL_REQUEST_KIND, type RequestKind } from '../requests/request-kind.js';
import { KcpShard, type KcpShardOptions, type ShardEvents } from './kcp-shard.js';
import { backoffMs, bounded, WorkspacePaths } from './kcp-paths.js';
import { EndpointSliceWatch } from './kcp-slice.js';

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

/** What the provider uses of a shard (KcpShard). */
export type ProviderShard = Pick<
  KcpShard,
  'name' | 'url' | 'start' | 'stop' | 'synced' | 'isSynced' | 'state' | 'noteState' | 'readiness' | 'readyClusters' | 'isReady' | 'share' | 'dropShares' | 'connection'
>;

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
  /** Each logical cluster with a ready binding: the one shard it is served from. */
  private readonly owner = new Map<string, ProviderShard>();
  /** The logical clusters served, with their connection. */
  private readonly served = new Map<string, Cluster>();
  /** Logical cluster → workspace path, from the parents' Workspaces (kcp-paths.ts). */
  private readonly paths: WorkspacePaths;
  /** Logical clusters bound but not served yet: waiting for the parents to be read. */
  private readonly pending = new Set<string>();
  /** Logical clusters served held: their path cannot be known yet (a parent cannot be read); nothing of them is decided. The why is their requests' message. */
  private readonly held = new Map<string, string>();
  /** Logical clusters that unbound, served a little longer (their deletes are acted on), then forgotten. */
  private readonly leaving = new Map<string, NodeJS.Timeout>();
  /** Logical clusters bound on two shards at once: logged once each. */
  private readonly twice = new Set<string>();
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
    this.paths = new WorkspacePaths({
      parents: this.parents,
      connect: (parent) => this.parentConnection(parent),
      timeoutMs: this.timeoutMs,
      refreshMs: opts.pathRefreshMs ?? 60_000,
      backoff: { baseMs: opts.backoff?.baseMs ?? 1_000, maxMs: opts.backoff?.maxMs ?? 60_000 },
      log: opts.log,
      inUse: (cluster) => this.owner.has(cluster) || this.served.has(cluster),
      read: () => this.afterPaths(),
    });
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
    await this.paths.refresh();
    await this.follow();
    this.paths.start();
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
        for (const c of back.shard.readyClusters()) this.binding(back.shard, c, true);
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
    const owned = this.ownedBy(shard);
    this.opts.log.warn({ kcpExport: this.opts.exportName, shard: shard.name, url, workspaces: owned.length, graceMs: this.graceMs }, 'kcp: shard endpoint removed from the endpoint slice; its workspaces are handed over or served for the unbind grace, then forgotten');
    for (const c of owned) {
      const to = this.successor(c, shard);
      if (to) this.handOver(c, shard, to, 'its shard left the endpoint slice');
    }
    const timer = setTimeout(() => void this.retired(url, shard), this.graceMs).unref();
    this.retiring.set(url, { shard, timer });
  }

  private async retired(url: string, shard: ProviderShard): Promise<void> {
    if (this.retiring.get(url)?.shard !== shard) return;
    this.retiring.delete(url);
    for (const c of this.ownedBy(shard)) {
      const to = this.successor(c, shard);
      if (to) this.handOver(c, shard, to, 'its shard left the endpoint slice');
      else await this.forget(c, 'its shard left the endpoint slice');
    }
    await shard.stop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.followTimer) clearTimeout(this.followTimer);
    this.paths.stop();
    for (const t of this.leaving.values()) clearTimeout(t);
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
    const waiting = [...this.held.keys()];
    const pathsOk = !this.paths.error && !waiting.length;
    const pathDetail = [
      ...(this.paths.error ? [this.paths.error] : []),
      ...(waiting.length ? [`${waiting.length} workspace(s) wait for their path, their requests not decided: ${waiting.slice(0, 5).join(', ')}${waiting.length > 5 ? ', …' : ''}`] : []),
    ].join('; ');
    const checks: ReadinessCheck[] = [
      { name: `kcp/${this.opts.exportName}`, ok: any && !this.sliceError, required: false, ...(any && !this.sliceError ? {} : { detail: any ? this.sliceError! : `no virtual workspace URL: ${this.sliceError}` }) },
      { name: `kcp/${this.opts.exportName}/workspace-paths`, ok: pathsOk, required: false, ...(pathsOk ? {} : { detail: pathDetail }) },
    ];
    for (const [url, shard] of this.shards) {
      const failed = this.startFailures.get(url);
      checks.push(failed ? { name: `kcp/${this.opts.exportName}/shard/${shard.name}`, ok: false, required: false, detail: `${url}: cannot be started (${failed.attempts} attempt(s), next in ${Math.max(0, Math.ceil((failed.retryAt - Date.now()) / 1000))} s): ${failed.why}` } : shard.readiness());
    }
    return checks;
  }

  /** The logical clusters served now. */
  clusters(): string[] {
    return [...this.served.keys()];
  }

  /** The logical clusters served held (their path not known yet), each with why. */
  heldClusters(): Map<string, string> {
    return new Map(this.held);
  }

  /** Per shard: up, and how many workspaces are served from it (the metrics). A shard whose URL left the slice counts until it stops. */
  shardViews(): KcpShardView[] {
    const all = [...this.shards.values(), ...[...this.retiring.values()].map((r) => r.shard)];
    return all.map((s) => {
      const owned = this.ownedBy(s);
      return { shard: s.name, up: this.shardState(s).up, workspaces: owned.length, waiting: owned.filter((c) => this.held.has(c) || this.pending.has(c)).length };
    });
  }

  private shardState(shard: ProviderShard): { up: boolean; why?: string } {
    const failed = this.startFailures.get(shard.url);
    if (failed && this.shards.get(shard.url) === shard) return { up: false, why: `cannot be started: ${failed.why}` };
    return shard.state();
  }

  private ownedBy(shard: ProviderShard): string[] {
    return [...this.owner].filter(([, o]) => o === shard).map(([c]) => c);
  }

  private isRetiring(shard: ProviderShard): boolean {
    return this.retiring.get(shard.url)?.shard === shard;
  }

  /** Another shard of the slice that has the logical cluster ready (and passes `also`), to serve it from when `from` drops it (one that is up first). */
  private successor(cluster: string, from: ProviderShard | undefined, also: (s: ProviderShard) => boolean = () => true): ProviderShard | undefined {
    const candidates = [...this.shards.values()].filter((s) => s !== from && !this.startFailures.has(s.url) && s.isReady(cluster) && also(s));
    return candidates.find((s) => s.state().up) ?? candidates[0];
  }

  // ShardEvents: what the shards see.

  binding(shard: ProviderShard, cluster: string, ready: boolean): void {
    if (this.stopped) return;
    const o = this.owner.get(cluster);
    if (!ready) {
      // Not (yet, or no longer) ready: nothing changes until it is ready or
      // gone, unless its shard has it not ready while another has it ready.
      if (o === shard) {
        const to = this.successor(cluster, shard);
        if (to) this.handOver(cluster, shard, to, 'its binding is not ready on its shard, and ready on another');
      }
      return;
    }
    if (o === shard) {
      const t = this.leaving.get(cluster);
      if (t) {
        clearTimeout(t);
        this.leaving.delete(cluster);
        this.opts.log.info({ cluster, shard: shard.name }, 'kcp: a workspace bound the export again before it was forgotten; served on');
      }
      return;
    }
    // A shard whose URL left the slice takes up no workspace.
    if (this.isRetiring(shard)) return;
    if (o) {
      // Served from another shard that still has it ready: a move under way
      // (or two URLs of one shard). It stays there until that shard drops it.
      if (o.isReady(cluster) && !this.leaving.has(cluster) && !this.isRetiring(o)) {
        if (!this.twice.has(cluster)) this.opts.log.warn({ cluster, servedFrom: o.name, alsoOn: shard.name }, 'kcp: a workspace is bound on two shards; served from the first until it drops it');
        this.twice.add(cluster);
        return;
      }
      return this.handOver(cluster, o, shard, 'bound on another shard after its shard dropped it');
    }
    this.owner.set(cluster, shard);
    this.arrive(cluster);
  }

  unbound(shard: ProviderShard, cluster: string): void {
    if (this.owner.get(cluster) !== shard) {
      shard.dropShares(cluster);
      return;
    }
    if (this.leaving.has(cluster) || this.stopped) return;
    const to = this.successor(cluster, shard);
    if (to) return this.handOver(cluster, shard, to, 'unbound on its shard while bound on another');
    this.opts.log.info({ cluster, shard: shard.name, workspace: this.paths.get(cluster) }, 'kcp: a workspace unbound the export (or was deleted); its requests are gone, it is forgotten after the grace period');
    // kcp deletes a binding's objects before the binding: what is still in
    // the shares is gone from the workspace, whether or not its delete came.
    for (const kind of this.kinds) {
      const s = shard.share(kind.kind, cluster);
      for (const [k, r] of [...s.items]) {
        s.items.delete(k);
        s.handlers.onDelete?.(r);
      }
    }
    const t = setTimeout(() => {
      this.leaving.delete(cluster);
      if (this.owner.get(cluster) !== shard || shard.isReady(cluster)) return;
      const next = this.successor(cluster, shard);
      if (next) this.handOver(cluster, shard, next, 'bound on another shard');
      else void this.forget(cluster, 'unbound');
    }, this.graceMs).unref();
    this.leaving.set(cluster, t);
  }

  /**
   * Serves a logical cluster from another shard from now on: the remote is
   * replaced by one on the new shard's connection and shares (what they
   * hold reaches the controller as it is there); nothing is deleted for it.
   */
  private handOver(cluster: string, from: ProviderShard, to: ProviderShard, why: string): void {
    const t = this.leaving.get(cluster);
    if (t) clearTimeout(t);
    this.leaving.delete(cluster);
    this.twice.delete(cluster);
    this.owner.set(cluster, to);
    if (from.isReady(cluster) && !this.isRetiring(from)) {
      // It may come back to it (two URLs of one shard): its shares are kept, and reach nothing.
      for (const kind of this.kinds) from.share(kind.kind, cluster).handlers = {};
    } else from.dropShares(cluster);
    this.opts.log.info({ cluster, workspace: this.paths.get(cluster), from: from.name, to: to.name, why }, 'kcp: a workspace is served from another shard now (handed over; no delete delivered for it)');
    if (this.served.delete(cluster)) this.serve(cluster);
  }

  /** Stops serving a logical cluster and drops everything kept for it here; the controller forgets the rest (RemoteSet's dropped hook). */
  private async forget(cluster: string, why: string): Promise<void> {
    const shard = this.owner.get(cluster);
    this.owner.delete(cluster);
    this.pending.delete(cluster);
    this.held.delete(cluster);
    this.twice.delete(cluster);
    const t = this.leaving.get(cluster);
    if (t) clearTimeout(t);
    this.leaving.delete(cluster);
    shard?.dropShares(cluster);
    const conn = this.served.get(cluster);
    this.served.delete(cluster);
    if (conn) await this.sink.removeRemote(cluster);
    this.opts.log.info({ cluster, shard: shard?.name, workspace: this.paths.get(cluster), why }, 'kcp: workspace forgotten');
    // Bound (ready) on another shard meanwhile: served from there.
    const next = this.successor(cluster, shard);
    if (next && !this.stopped && !this.owner.has(cluster)) this.binding(next, cluster, true);
  }

  /**
   * A logical cluster with a ready binding: served once its path is known,
   * or known to be under no given parent (the parents are read again first,
   * unless it is known). When a parent cannot be read, it is served held.
   */
  private arrive(cluster: string): void {
    if (this.paths.has(cluster)) return this.serve(cluster);
    if (this.pending.has(cluster)) return;
    this.pending.add(cluster);
    void this.paths.refresh().then(() => {
      if (!this.pending.delete(cluster) || this.stopped || !this.owner.has(cluster)) return;
      if (!this.paths.has(cluster)) {
        const why = this.paths.unknownWhy();
        if (why) {
          this.held.set(cluster, why);
          this.opts.log.warn({ cluster, workspaceParents: this.parents, why: this.paths.error }, 'kcp: a workspace whose path cannot be read yet; served held: its requests wait, nothing of it is decided until its path is known');
        } else {
          this.opts.log.info({ cluster, workspaceParents: this.parents }, 'kcp: a workspace under none of the workspace parents; its rules name it by logical cluster');
        }
      }
      this.serve(cluster);
    });
  }

  private get parents(): readonly string[] {
    return this.opts.workspaceParents?.length ? this.opts.workspaceParents : ['root'];
  }

  /** After every read of the parents: the held workspaces whose path is known now (or known to be under none) are decided. */
  private afterPaths(): void {
    if (this.stopped) return;
    const why = this.paths.unknownWhy();
    for (const [cluster, before] of [...this.held]) {
      if (this.paths.has(cluster) || !why) {
        this.held.delete(cluster);
        const workspace = this.paths.get(cluster);
        this.opts.log.info({ cluster, ...(workspace ? { workspace } : {}) }, workspace ? 'kcp: the path of a held workspace is known now; its requests are decided' : 'kcp: a held workspace is under none of the workspace parents; its requests are decided, its rules name it by logical cluster');
        this.relook(cluster);
      } else if (before !== why) {
        this.held.set(cluster, why);
        this.relook(cluster);
      }
    }
  }

  /** Every request of a served workspace is looked at again (its shares' full-list hook). */
  private relook(cluster: string): void {
    const shard = this.owner.get(cluster);
    if (!shard || !this.served.has(cluster)) return;
    for (const kind of this.kinds) {
      const s = shard.share(kind.kind, cluster);
      if (s.synced) s.handlers.onResync?.();
    }
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

  /** Adds the remote of a logical cluster, from its shard: its shares of the kinds' caches, and its connection there. What the shares hold already reaches it now. */
  private serve(cluster: string): void {
    const shard = this.owner.get(cluster);
    if (!shard || this.served.has(cluster)) return;
    const conn = shard.connection(cluster);
    this.served.set(cluster, conn);
    this.sink.addRemote({
      name: cluster,
      metricsName: this.metricsName,
      workspace: () => this.paths.get(cluster),
      held: () => this.held.get(cluster),
      cluster: conn,
      origin: `kcp APIExport ${this.opts.exportName} (shard ${shard.name})`,
      // The kinds of the export, watched here; a kind defined later by a
      // RequestDefinition is not part of the export (docs/request-kinds.md).
      kinds: (kind) => this.kinds.includes(kind),
      cache: (kind, handlers) => {
        const s = shard.share(kind.kind, cluster);
        s.handlers = this.guarded(cluster, shard, kind, handlers);
        return s;
      },
    });
    for (const kind of this.kinds) {
      const s = shard.share(kind.kind, cluster);
      for (const r of [...s.items.values()]) s.handlers.onAdd?.(r);
      if (s.synced) s.handlers.onResync?.();
    }
  }

  /**
   * A served workspace's handlers on its shard: a delete there of a request
   * that another shard, which has the workspace ready, still shows is not
   * delivered — the shard is dropping the workspace (kcp moving it away) and
   * it is handed over to the other, whose requests then reach the controller
   * as they are there. A request that no other shard shows is deleted (two
   * URLs of one shard: the delete shows on both, and is delivered once).
   */
  private guarded(cluster: string, shard: ProviderShard, kind: RequestKind, handlers: InformerHandlers<InternalRequest>): InformerHandlers<InternalRequest> {
    return {
      ...handlers,
      onDelete: (r) => {
        if (this.owner.get(cluster) === shard) {
          const to = this.successor(cluster, shard, (s) => shows(s.share(kind.kind, cluster).items, r));
          if (to) return this.handOver(cluster, shard, to, 'its shard deletes its requests while another shard that has it ready shows them');
        }
        handlers.onDelete?.(r);
      },
    };
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

/** Whether a share holds a request of that namespace and name. */
function shows(items: ReadonlyMap<string, InternalRequest>, r: InternalRequest): boolean {
  const { namespace, name } = r.metadata;
  const direct = items.get(`${namespace ?? ''}/${name ?? ''}`);
  if (direct && direct.metadata.name === name && direct.metadata.namespace === namespace) return true;
  for (const o of items.values()) if (o.metadata.name === name && o.metadata.namespace === namespace) return true;
  return false;
}
