/**
 * The remotes behind a kcp APIExport's virtual workspace: every logical
 * cluster (workspace) that binds the export is a remote, named by its logical
 * cluster name, served through ONE kubeconfig and ONE list/watch per request
 * kind across all of them (`<virtual workspace>/clusters/*`).
 *
 * - The virtual workspace's URL is read from the export's
 *   APIExportEndpointSlice in the provider workspace (the kubeconfig's), and
 *   looked at again when the watch cannot reach it.
 * - The wildcard cache is shared out by each object's `kcp.io/cluster`
 *   annotation: the first request of a logical cluster adds its remote
 *   (its connection is `<virtual workspace>/clusters/<name>`, where status
 *   writes and Events go); its share of the cache is that remote's cache.
 * - A workspace that unbinds the export loses its requests (kcp deletes
 *   them): the deletes reach its remote like any other, so what ran for
 *   them is stopped as for deleted requests. Its remote stays served (it
 *   holds nothing) until the controller restarts.
 *
 * - Rules name workspaces by path (`root:org:team`). A path is learnt from
 *   the parent workspace's Workspace objects (`spec.cluster`: set by kcp,
 *   which neither the tenant nor its admin can change), never from the
 *   workspace itself (its LogicalCluster's `kcp.io/path` is the tenant
 *   admin's to rewrite). The parents to read are given
 *   (`--kcp-workspace-parent`, default `root`); a logical cluster first seen
 *   is served once its parents have been read again, so that no request is
 *   decided under the wrong name. A workspace under no given parent is
 *   served under its logical cluster name alone.
 *
 * Nothing else of the request path knows it is talking to kcp.
 */
import { KubeConfig, CustomObjectsApi } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { InternalRequest } from '../api/types.js';
import { fromKubeConfig, type Cluster, type RequestObserver } from '../kube/client.js';
import { Informer, keyOf, type InformerHandlers, type InformerObserver, type ReadinessCheck } from '../kube/informer.js';
import type { RemoteProvider, RemoteSink } from './provider.js';
import type { RequestCache } from './remote.js';
import { INTERNAL_REQUEST_KIND, type RequestKind } from '../controller/request-kind.js';
import { slimRequest } from '../controller/cached-requests.js';

/** The annotation kcp puts on every object seen through a virtual workspace: its logical cluster. */
export const KCP_CLUSTER_ANNOTATION = 'kcp.io/cluster';

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
  /** How long to wait between looks at the endpoint slice while it has no URL. */
  retryMs?: number;
  /** Workspaces whose child workspaces are tenants, by path (default: `root`); their Workspaces give each child's logical cluster. */
  workspaceParents?: readonly string[];
  /** How often the parents are read again (default 60 s); also whenever a logical cluster not known yet appears. */
  pathRefreshMs?: number;
}

/** One logical cluster's share of a kind's wildcard cache. */
class Share implements RequestCache {
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
  // The wildcard informer's life is the provider's.
  start(): void {}
  stop(): Promise<void> {
    return Promise.resolve();
  }
  waitForSync(): Promise<void> {
    return this.all.waitForSync();
  }
}

export class KcpRemotes implements RemoteProvider {
  private vwUrl: string | undefined;
  private urlError: string | undefined = 'not looked at yet';
  private readonly kinds: readonly RequestKind[];
  /** Per kind: the wildcard informer and each logical cluster's share of it. */
  private readonly caches = new Map<string, { all: Informer<InternalRequest>; shares: Map<string, Share> }>();
  /** The logical clusters served, with their connection. */
  private readonly served = new Map<string, Cluster>();
  private wildcard: Cluster | undefined;
  /** Logical cluster → workspace path, from the parents' Workspaces. */
  private readonly paths = new Map<string, string>();
  /** Logical clusters seen but not served yet: waiting for the parents to be read. */
  private readonly pending = new Set<string>();
  private refreshing: Promise<void> | undefined;
  private refreshTimer: NodeJS.Timeout | undefined;
  private pathError: string | undefined;
  /** Every workspace's name in metric labels: the provider's, so that label values stay few. */
  readonly metricsName: string;
  private stopped = false;

  constructor(
    private readonly sink: RemoteSink,
    private readonly opts: KcpRemotesOptions,
  ) {
    this.kinds = opts.kinds ?? [INTERNAL_REQUEST_KIND];
    this.metricsName = 'kcp';
  }

  /**
   * Finds the virtual workspace, then starts one wildcard cache per kind.
   * Resolves once they have listed, or at once when there is no virtual
   * workspace yet (no workspace binds the export): it is then looked for in
   * the background, and the other remotes are served meanwhile.
   */
  start(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.run(resolve).then(resolve, reject);
    });
  }

  private async run(notWaiting: () => void): Promise<void> {
    for (;;) {
      if (this.stopped) return;
      this.vwUrl = await this.endpoint();
      if (this.vwUrl) break;
      this.opts.log.warn({ export: this.opts.exportName, why: this.urlError }, 'kcp: the APIExport has no virtual workspace URL yet; looking again');
      notWaiting();
      await new Promise((r) => setTimeout(r, this.opts.retryMs ?? 5_000).unref());
    }
    this.opts.log.info({ export: this.opts.exportName, url: this.vwUrl, workspaceParents: this.parents }, 'kcp: serving the workspaces that bind the export');
    await this.refreshPaths();
    this.refreshTimer = setInterval(() => void this.tick(), this.opts.pathRefreshMs ?? 60_000);
    this.refreshTimer.unref();
    await this.watch();
  }

  /** Every refresh period: the parents' Workspaces again, and the endpoint slice (the virtual workspace may move). */
  private async tick(): Promise<void> {
    await this.refreshPaths();
    const url = await this.endpoint();
    if (!url || url === this.vwUrl || this.stopped) return;
    this.opts.log.warn({ export: this.opts.exportName, from: this.vwUrl, to: url }, 'kcp: the virtual workspace moved; serving its workspaces from the new URL');
    // Every workspace is served again from the new URL: its remote goes (what
    // runs for it is left as it is) and comes back with its first request there.
    await Promise.all([...this.caches.values()].map(({ all }) => all.stop()));
    this.caches.clear();
    for (const cluster of [...this.served.keys()]) await this.sink.removeRemote(cluster);
    this.served.clear();
    this.pending.clear();
    this.wildcard?.close();
    this.vwUrl = url;
    await this.watch();
  }

  /** One wildcard cache per kind on the virtual workspace; resolves once they have listed. */
  private async watch(): Promise<void> {
    this.wildcard = await this.connect('*', this.metricsName);
    for (const kind of this.kinds) {
      const shares = new Map<string, Share>();
      const all: Informer<InternalRequest> = new Informer<InternalRequest>(
        `kcp/${this.opts.exportName}/${kind.resource.plural}`,
        this.wildcard.resource<InternalRequest>(kind.resource),
        {
          onAdd: (r) => this.share(kind, r)?.handlers.onAdd?.(r),
          onUpdate: (o, n) => this.share(kind, n)?.handlers.onUpdate?.(o, n),
          onDelete: (r) => {
            const s = this.share(kind, r, false);
            if (!s) return;
            s.items.delete(keyOf(r));
            s.handlers.onDelete?.(r);
          },
          onResync: () => {
            for (const s of shares.values()) s.handlers.onResync?.();
          },
        },
        this.opts.log.child({ kcpExport: this.opts.exportName }),
        {
          resyncPeriodMs: this.opts.resyncPeriodMs ?? 10 * 60_000,
          ...(this.opts.informerObserver ? { observer: this.opts.informerObserver } : {}),
          ...this.opts.informer,
          transform: (obj) => slimRequest(kind.builtIn ? obj : kind.toRequest(obj as never)),
        },
      );
      this.caches.set(kind.kind, { all, shares });
    }
    for (const { all } of this.caches.values()) all.start();
    await Promise.all([...this.caches.values()].map(({ all }) => all.waitForSync()));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.refreshTimer) clearInterval(this.refreshTimer);
    await Promise.all([...this.caches.values()].map(({ all }) => all.stop()));
    this.wildcard?.close();
  }

  readiness(): ReadinessCheck[] {
    const checks: ReadinessCheck[] = [
      { name: `kcp/${this.opts.exportName}`, ok: !!this.vwUrl, required: false, ...(this.vwUrl ? {} : { detail: `no virtual workspace URL: ${this.urlError}` }) },
      { name: `kcp/${this.opts.exportName}/workspace-paths`, ok: !this.pathError, required: false, ...(this.pathError ? { detail: this.pathError } : {}) },
    ];
    for (const { all } of this.caches.values()) checks.push(all.readiness(false));
    return checks;
  }

  /** The logical clusters served now. */
  clusters(): string[] {
    return [...this.served.keys()];
  }

  /**
   * The share of a request's logical cluster, stored (add/update); its remote
   * is added with the first request. Undefined for an object without the
   * annotation (not from a virtual workspace), which is logged and ignored.
   */
  private share(kind: RequestKind, r: InternalRequest, store = true): Share | undefined {
    const cluster = r.metadata.annotations?.[KCP_CLUSTER_ANNOTATION];
    if (!cluster) {
      this.opts.log.warn({ request: keyOf(r) }, `kcp: a request without the ${KCP_CLUSTER_ANNOTATION} annotation; ignored`);
      return undefined;
    }
    if (!this.served.has(cluster) && !this.pending.has(cluster)) this.arrive(cluster);
    const s = this.caches.get(kind.kind)?.shares.get(cluster);
    if (s && store) s.items.set(keyOf(r), r);
    return s;
  }

  /**
   * A logical cluster seen for the first time: its shares keep its requests
   * at once; it is served once its path is known, or known to be under no
   * given parent (the parents are read again first, unless it is known).
   */
  private arrive(cluster: string): void {
    for (const c of this.caches.values()) c.shares.set(cluster, new Share(c.all.name, c.all));
    if (this.paths.has(cluster)) return this.serve(cluster);
    this.pending.add(cluster);
    void this.refreshPaths().then(() => {
      if (!this.pending.delete(cluster) || this.stopped) return;
      if (!this.paths.has(cluster)) this.opts.log.info({ cluster, workspaceParents: this.parents }, 'kcp: a workspace under none of the workspace parents; its rules name it by logical cluster');
      this.serve(cluster);
      // What arrived meanwhile reaches the remote now, then a full list.
      for (const { shares } of this.caches.values()) {
        const s = shares.get(cluster)!;
        for (const r of s.items.values()) s.handlers.onAdd?.(r);
        if (s.synced) s.handlers.onResync?.();
      }
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
        for (const ws of list.items ?? []) if (ws.spec?.cluster && ws.metadata?.name) this.paths.set(ws.spec.cluster, `${parent}:${ws.metadata.name}`);
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

  /** Adds the remote of a logical cluster: its share of every kind's cache, and its connection through the virtual workspace. */
  private serve(cluster: string): void {
    const conn = this.connectSync(cluster);
    this.served.set(cluster, conn);
    this.sink.addRemote({
      name: cluster,
      metricsName: this.metricsName,
      workspace: () => this.paths.get(cluster),
      cluster: conn,
      origin: `kcp APIExport ${this.opts.exportName}`,
      // The kinds of the export, watched here; a kind defined later by a
      // RequestDefinition is not part of the export (docs/request-kinds.md).
      kinds: (kind) => this.kinds.includes(kind),
      cache: (kind, handlers) => {
        const s = this.caches.get(kind.kind)!.shares.get(cluster)!;
        s.handlers = handlers;
        return s;
      },
    });
  }

  /** The URL of the export's virtual workspace, from its APIExportEndpointSlice (first endpoint). */
  private async endpoint(): Promise<string | undefined> {
    try {
      const api = this.opts.kubeconfig.makeApiClient(CustomObjectsApi);
      const slice = (await api.getClusterCustomObject({ group: 'apis.kcp.io', version: 'v1alpha1', plural: 'apiexportendpointslices', name: this.opts.exportName })) as {
        status?: { endpoints?: Array<{ url?: string }> };
      };
      const url = slice.status?.endpoints?.[0]?.url;
      this.urlError = url ? undefined : `APIExportEndpointSlice ${this.opts.exportName} lists no endpoint (no workspace binds the export yet?)`;
      return url?.replace(/\/+$/, '');
    } catch (e) {
      this.urlError = `cannot read APIExportEndpointSlice ${this.opts.exportName}: ${(e as Error).message}`;
      return undefined;
    }
  }

  private kubeconfigFor(cluster: string): KubeConfig {
    return this.kubeconfigAt(`${this.vwUrl}/clusters/${cluster}`);
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

  private connect(cluster: string, remote: string): Promise<Cluster> {
    return fromKubeConfig('remote', this.kubeconfigFor(cluster), { remote, ...(this.opts.apiObserver ? { observer: this.opts.apiObserver } : {}) });
  }

  /** A logical cluster's connection, made at once: the wildcard connection's sibling (same server, credentials and keep-alive connections). */
  private connectSync(cluster: string): Cluster {
    return this.wildcard!.sibling(this.kubeconfigFor(cluster));
  }
}
