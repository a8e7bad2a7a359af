/**
 * The remotes behind a kcp APIExport's virtual workspaces: every logical
 * cluster (workspace) that binds the export is a remote, named by its logical
 * cluster name, all served through ONE kubeconfig.
 *
 * - Shards. The export's APIExportEndpointSlice, in the provider workspace
 *   (the kubeconfig's), lists one virtual-workspace URL per kcp shard, and
 *   each URL shows only the workspaces on its shard. Every URL is served
 *   (kcp-shard.ts: one wildcard list/watch per request kind and one of the
 *   export's APIBindings, on `<url>/clusters/*`). The slice is read again
 *   every few seconds: a shard that appears is served, one that goes away is
 *   forgotten. A shard that is down or not serving yet holds up no other;
 *   it has its own readiness line, metric series and log lines.
 * - Workspaces. A logical cluster is served from the shard where its
 *   APIBinding of the export is ready (Bound), once its path is known; its
 *   connection is `<shard url>/clusters/<name>`, where status writes and
 *   Events go. When the binding goes (unbound, or the workspace deleted) kcp
 *   has deleted its requests: the deletes that have not arrived yet are
 *   delivered, and after a grace period (what runs for them is stopped as
 *   for any deleted request) the remote is removed and everything kept for
 *   it (caches, queue keys, fairness state, status bookkeeping) forgotten.
 *   No restart is needed.
 * - Paths. Rules name workspaces by path (`root:org:team`). A path is learnt
 *   from the parent workspace's Workspace objects (`spec.cluster`: set by
 *   kcp, which neither the tenant nor its admin can change), never from the
 *   workspace itself (its LogicalCluster's `kcp.io/path` is the tenant
 *   admin's to rewrite). The parents to read are given
 *   (`--kcp-workspace-parent`, default `root`); a logical cluster first seen
 *   is served once its parents have been read again, so that no request is
 *   decided under the wrong name. A workspace under no given parent is
 *   served under its logical cluster name alone.
 *
 * Nothing else of the request path knows it is talking to kcp, or that kcp
 * has shards.
 */
import { KubeConfig, CustomObjectsApi } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { InternalRequest } from '../api/types.js';
import type { Cluster, RequestObserver } from '../kube/client.js';
import { keyOf, type InformerObserver, type ReadinessCheck } from '../kube/informer.js';
import type { RemoteProvider, RemoteSink } from './provider.js';
import { INTERNAL_REQUEST_KIND, type RequestKind } from '../controller/request-kind.js';
import { KcpShard, type ShardEvents } from './kcp-shard.js';

export interface KcpRemotesOptions {
  /** A kubeconfig whose current context is the provider workspace (where the APIExport is). */
  kubeconfig: KubeConfig;
  /** The APIExport (and its APIExportEndpointSlice) name. */
  exportName: string;
  kinds?: readonly RequestKind[];
  log: Logger;
  resyncPeriodMs?: number;
  informerObserver?: InformerObserver | undefined;
  apiObserver?: RequestObserver | undefined;
  informer?: { watchTimeoutSeconds?: number; backoffMaxMs?: number };
  /** How often the endpoint slice is read (default: the smaller of pathRefreshMs and 10 s). */
  sliceRefreshMs?: number;
  /** Workspaces whose child workspaces are tenants, by path (default: `root`); their Workspaces give each child's logical cluster. */
  workspaceParents?: readonly string[];
  /** How often the parents are read again (default 60 s); also whenever a logical cluster not known yet appears. */
  pathRefreshMs?: number;
  /** How long start() waits for a shard to list before it goes on without it (default 30 s; it is served once it lists). */
  shardStartWaitMs?: number;
  /** After a workspace unbinds: how long its remote stays so that the deletes of its requests are acted on (default 30 s). */
  unbindGraceMs?: number;
}

/** Per shard, for metrics. */
export interface KcpShardView {
  shard: string;
  up: boolean;
  /** Workspaces served from it. */
  workspaces: number;
}

export class KcpRemotes implements RemoteProvider, ShardEvents {
  private readonly kinds: readonly RequestKind[];
  /** One per URL of the endpoint slice. */
  private readonly shards = new Map<string, KcpShard>();
  private sliceError: string | undefined = 'not looked at yet';
  private sliceSeen = false;
  /** Each logical cluster with a ready binding: the shard it is served from. */
  private readonly owner = new Map<string, KcpShard>();
  /** The logical clusters served, with their connection. */
  private readonly served = new Map<string, Cluster>();
  /** Logical cluster → workspace path, from the parents' Workspaces. */
  private readonly paths = new Map<string, string>();
  /** Logical clusters bound but not served yet: waiting for the parents to be read. */
  private readonly pending = new Set<string>();
  /** Logical clusters that unbound, served a little longer (their deletes are acted on), then forgotten. */
  private readonly leaving = new Map<string, NodeJS.Timeout>();
  /** Logical clusters bound on two shards at once: logged once each. */
  private readonly twice = new Set<string>();
  private refreshing: Promise<void> | undefined;
  private timers: NodeJS.Timeout[] = [];
  private pathError: string | undefined;
  /** Every workspace's name in metric labels: the provider's, so that label values stay few. */
  readonly metricsName = 'kcp';
  private stopped = false;
  private following: Promise<void> = Promise.resolve();

  constructor(
    private readonly sink: RemoteSink,
    private readonly opts: KcpRemotesOptions,
  ) {
    this.kinds = opts.kinds ?? [INTERNAL_REQUEST_KIND];
  }

  /**
   * Reads the endpoint slice and starts every shard. Resolves once each has
   * listed (or, for one that does not, after shardStartWaitMs), or at once
   * when the slice lists no URL yet (no workspace binds the export): it is
   * then looked at again in the background, and the other remotes are
   * served meanwhile.
   */
  async start(): Promise<void> {
    await this.refreshPaths();
    const every = this.opts.sliceRefreshMs ?? Math.min(this.opts.pathRefreshMs ?? 60_000, 10_000);
    await this.follow();
    this.timers.push(setInterval(() => void this.follow(), every));
    this.timers.push(setInterval(() => void this.refreshPaths(), this.opts.pathRefreshMs ?? 60_000));
    for (const t of this.timers) t.unref();
    const wait = this.opts.shardStartWaitMs ?? 30_000;
    await Promise.all(
      [...this.shards.values()].map((shard) =>
        Promise.race([
          shard.synced(),
          new Promise<void>((r) => setTimeout(() => {
            if (!shard.isSynced) this.opts.log.warn({ kcpExport: this.opts.exportName, shard: shard.name, url: shard.url, why: shard.state().why, waitedMs: wait }, 'kcp: a shard has not listed yet; going on without it (it is served once it lists)');
            r();
          }, wait).unref()),
        ]),
      ),
    );
  }

  /** Reads the endpoint slice and adds or removes shards to match it (one at a time). */
  private follow(): Promise<void> {
    this.following = this.following.then(() => this.followOnce()).catch((e: Error) => {
      this.opts.log.error({ err: e.message }, 'kcp: following the endpoint slice');
    });
    return this.following;
  }

  private async followOnce(): Promise<void> {
    if (this.stopped) return;
    for (const shard of this.shards.values()) shard.noteState();
    const urls = await this.endpoints();
    if (!urls) return; // unreadable: keep what is served (sliceError says why)
    if (!urls.length) {
      if (!this.sliceSeen || this.shards.size) this.opts.log.warn({ export: this.opts.exportName, why: this.sliceError }, 'kcp: the APIExport has no virtual workspace URL yet; looking again');
    }
    this.sliceSeen = true;
    for (const [url, shard] of [...this.shards]) {
      if (urls.includes(url)) continue;
      this.opts.log.warn({ kcpExport: this.opts.exportName, shard: shard.name, url }, 'kcp: shard endpoint removed from the endpoint slice; its workspaces are forgotten (what runs for them is left as it is)');
      this.shards.delete(url);
      for (const [cluster, o] of [...this.owner]) if (o === shard) await this.forget(cluster, 'its shard left the endpoint slice');
      await shard.stop();
      // A workspace also bound on another shard is served from there now.
      for (const other of this.shards.values()) for (const c of other.readyClusters()) this.binding(other, c, true);
    }
    for (const url of urls) {
      if (this.shards.has(url) || this.stopped) continue;
      const shard = new KcpShard(url, this, {
        exportName: this.opts.exportName,
        kinds: this.kinds,
        log: this.opts.log,
        kubeconfigAt: (server) => this.kubeconfigAt(server),
        ...(this.opts.resyncPeriodMs !== undefined ? { resyncPeriodMs: this.opts.resyncPeriodMs } : {}),
        informerObserver: this.opts.informerObserver,
        apiObserver: this.opts.apiObserver,
        ...(this.opts.informer ? { informer: this.opts.informer } : {}),
      });
      this.shards.set(url, shard);
      this.opts.log.info({ kcpExport: this.opts.exportName, shard: shard.name, url, workspaceParents: this.parents, shards: this.shards.size }, 'kcp: serving the workspaces of a shard that bind the export');
      await shard.start();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    for (const t of this.leaving.values()) clearTimeout(t);
    await this.following;
    await Promise.all([...this.shards.values()].map((s) => s.stop()));
  }

  readiness(): ReadinessCheck[] {
    const any = this.shards.size > 0;
    const checks: ReadinessCheck[] = [
      { name: `kcp/${this.opts.exportName}`, ok: any && !this.sliceError, required: false, ...(any && !this.sliceError ? {} : { detail: any ? this.sliceError! : `no virtual workspace URL: ${this.sliceError}` }) },
      { name: `kcp/${this.opts.exportName}/workspace-paths`, ok: !this.pathError, required: false, ...(this.pathError ? { detail: this.pathError } : {}) },
    ];
    for (const shard of this.shards.values()) checks.push(shard.readiness());
    return checks;
  }

  /** The logical clusters served now. */
  clusters(): string[] {
    return [...this.served.keys()];
  }

  /** Per shard: up, and how many workspaces are served from it (the metrics). */
  shardViews(): KcpShardView[] {
    return [...this.shards.values()].map((s) => ({ shard: s.name, up: s.state().up, workspaces: [...this.owner.values()].filter((o) => o === s).length }));
  }

  // ShardEvents: what the shards see.

  binding(shard: KcpShard, cluster: string, ready: boolean): void {
    if (this.stopped || !ready) return; // a binding not (yet, or no longer) ready changes nothing until it is ready or gone
    const o = this.owner.get(cluster);
    if (o === shard) {
      const t = this.leaving.get(cluster);
      if (t) {
        clearTimeout(t);
        this.leaving.delete(cluster);
        this.opts.log.info({ cluster, shard: shard.name }, 'kcp: a workspace bound the export again before it was forgotten; served on');
      }
      return;
    }
    if (o) {
      if (!this.twice.has(cluster)) this.opts.log.warn({ cluster, servedFrom: o.name, alsoOn: shard.name }, 'kcp: a workspace is bound on two shards; served from the first only');
      this.twice.add(cluster);
      return;
    }
    this.owner.set(cluster, shard);
    this.arrive(cluster);
  }

  unbound(shard: KcpShard, cluster: string): void {
    if (this.owner.get(cluster) !== shard) {
      shard.dropShares(cluster);
      return;
    }
    if (this.leaving.has(cluster) || this.stopped) return;
    this.opts.log.info({ cluster, shard: shard.name, workspace: this.paths.get(cluster) }, 'kcp: a workspace unbound the export (or was deleted); its requests are gone, it is forgotten after the grace period');
    // kcp deletes a binding's objects before the binding: what is still in
    // the shares is gone from the workspace, whether or not its delete came.
    for (const kind of this.kinds) {
      const s = shard.caches.get(kind.kind)?.shares.get(cluster);
      if (!s) continue;
      for (const r of [...s.items.values()]) {
        s.items.delete(keyOf(r));
        s.handlers.onDelete?.(r as InternalRequest);
      }
    }
    const t = setTimeout(() => {
      this.leaving.delete(cluster);
      if (this.owner.get(cluster) === shard && !shard.isReady(cluster)) void this.forget(cluster, 'unbound');
    }, this.opts.unbindGraceMs ?? 30_000).unref();
    this.leaving.set(cluster, t);
  }

  /** Stops serving a logical cluster and drops everything kept for it here; the controller forgets the rest (RemoteSet's dropped hook). */
  private async forget(cluster: string, why: string): Promise<void> {
    const shard = this.owner.get(cluster);
    this.owner.delete(cluster);
    this.pending.delete(cluster);
    this.twice.delete(cluster);
    const t = this.leaving.get(cluster);
    if (t) clearTimeout(t);
    this.leaving.delete(cluster);
    shard?.dropShares(cluster);
    const conn = this.served.get(cluster);
    this.served.delete(cluster);
    if (conn) await this.sink.removeRemote(cluster);
    this.opts.log.info({ cluster, shard: shard?.name, workspace: this.paths.get(cluster), why }, 'kcp: workspace forgotten');
  }

  /**
   * A logical cluster with a ready binding: served once its path is known,
   * or known to be under no given parent (the parents are read again first,
   * unless it is known).
   */
  private arrive(cluster: string): void {
    if (this.paths.has(cluster)) return this.serve(cluster);
    if (this.pending.has(cluster)) return;
    this.pending.add(cluster);
    void this.refreshPaths().then(() => {
      if (!this.pending.delete(cluster) || this.stopped || !this.owner.has(cluster)) return;
      if (!this.paths.has(cluster)) this.opts.log.info({ cluster, workspaceParents: this.parents }, 'kcp: a workspace under none of the workspace parents; its rules name it by logical cluster');
      this.serve(cluster);
    });
  }

  private get parents(): readonly string[] {
    return this.opts.workspaceParents?.length ? this.opts.workspaceParents : ['root'];
  }

  /** Reads the parents' Workspaces again (one read at a time; callers during one share it). */
  private refreshPaths(): Promise<void> {
    this.refreshing ??= this.readPaths().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  private async readPaths(): Promise<void> {
    const errors: string[] = [];
    for (const parent of this.parents) {
      try {
        const api = this.kubeconfigAt(`${this.kcpBase()}/clusters/${parent}`).makeApiClient(CustomObjectsApi);
        const list = (await api.listClusterCustomObject({ group: 'tenancy.kcp.io', version: 'v1alpha1', plural: 'workspaces' })) as { items?: Array<{ metadata?: { name?: string }; spec?: { cluster?: string } }> };
        const listed = new Set<string>();
        for (const ws of list.items ?? []) {
          if (!ws.spec?.cluster || !ws.metadata?.name) continue;
          this.paths.set(ws.spec.cluster, `${parent}:${ws.metadata.name}`);
          listed.add(ws.spec.cluster);
        }
        // Gone from this parent: forgotten too (churn must not grow the map), unless still served.
        for (const [cluster, path] of this.paths) {
          if (listed.has(cluster) || this.owner.has(cluster) || this.served.has(cluster)) continue;
          if (path.slice(0, path.lastIndexOf(':')) === parent) this.paths.delete(cluster);
        }
      } catch (e) {
        errors.push(`cannot list the Workspaces of ${parent}: ${(e as Error).message} (the controller needs config/kcp/parent there)`);
      }
    }
    if (errors.length) this.opts.log.warn({ errors }, 'kcp: workspace paths');
    this.pathError = errors.length ? errors.join('; ') : undefined;
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
      cluster: conn,
      origin: `kcp APIExport ${this.opts.exportName} (shard ${shard.name})`,
      // The kinds of the export, watched here; a kind defined later by a
      // RequestDefinition is not part of the export (docs/request-kinds.md).
      kinds: (kind) => this.kinds.includes(kind),
      cache: (kind, handlers) => {
        const s = shard.share(kind.kind, cluster);
        s.handlers = handlers;
        return s;
      },
    });
    for (const kind of this.kinds) {
      const s = shard.share(kind.kind, cluster);
      for (const r of [...s.items.values()]) s.handlers.onAdd?.(r);
      if (s.synced) s.handlers.onResync?.();
    }
  }

  /** The URLs of the export's virtual workspaces, from its APIExportEndpointSlice; undefined when it cannot be read. */
  private async endpoints(): Promise<string[] | undefined> {
    try {
      const api = this.opts.kubeconfig.makeApiClient(CustomObjectsApi);
      const slice = (await api.getClusterCustomObject({ group: 'apis.kcp.io', version: 'v1alpha1', plural: 'apiexportendpointslices', name: this.opts.exportName })) as {
        status?: { endpoints?: Array<{ url?: string }> };
      };
      const urls = [...new Set((slice.status?.endpoints ?? []).map((e) => e.url?.replace(/\/+$/, '')).filter((u): u is string => !!u && isHttps(u)))];
      const refused = (slice.status?.endpoints ?? []).filter((e) => e.url && !isHttps(e.url.replace(/\/+$/, '')));
      if (refused.length) this.opts.log.warn({ refused: refused.map((e) => e.url) }, 'kcp: endpoint slice URLs that are not https URLs; ignored');
      this.sliceError = urls.length ? undefined : `APIExportEndpointSlice ${this.opts.exportName} lists no endpoint (no workspace binds the export yet?)`;
      return urls;
    } catch (e) {
      this.sliceError = `cannot read APIExportEndpointSlice ${this.opts.exportName}: ${(e as Error).message}`;
      this.opts.log.warn({ why: this.sliceError }, 'kcp: the endpoint slice cannot be read; serving the shards known');
      return undefined;
    }
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

function isHttps(url: string): boolean {
  try {
    return new URL(url).protocol === 'https:';
  } catch {
    return false;
  }
}

