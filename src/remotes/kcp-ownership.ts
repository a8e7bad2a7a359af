/**
 * The workspace side of the kcp provider (kcp.ts): which shard each logical
 * cluster is served from, and its remote. The shards themselves (the slice,
 * starting, retiring) are kcp.ts's; what a shard sees of the bindings comes
 * here through kcp.ts's ShardEvents, and what this needs of the shards (the
 * ones serving, the ones retiring) through a ShardRoster.
 *
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
 *   (`--kcp-workspace-parent`, default `root`), and the tree below them is
 *   walked for a logical cluster no parent lists (kcp-paths.ts). A logical
 *   cluster first seen is served once its parents have been read again.
 *   When its path cannot be learnt (its parent cannot be read: 403, no
 *   answer; or no workspace read lists it), it is served HELD — its
 *   requests wait, pending (phase WaitingForWorkspace, saying why and what
 *   would let it be decided), nothing of it is decided under its logical
 *   cluster name, which no rule means — and the parents are read again
 *   until the path is known.
 */
import type { Logger } from 'pino';
import type { InternalRequest } from '../api/types.js';
import type { Cluster } from '../kube/client.js';
import type { InformerHandlers, ReadinessCheck } from '../kube/informer.js';
import type { RemoteSink } from './provider.js';
import type { RequestKind } from '../requests/request-kind.js';
import type { KcpShard } from './kcp-shard.js';
import { WorkspacePaths, type WorkspacePathsOptions } from './kcp-paths.js';

/** What the provider uses of a shard (KcpShard). */
export type ProviderShard = Pick<
  KcpShard,
  'name' | 'url' | 'start' | 'stop' | 'synced' | 'isSynced' | 'state' | 'noteState' | 'readiness' | 'readyClusters' | 'isReady' | 'share' | 'dropShares' | 'connection'
>;

/** What the workspaces need to know of the shards (kcp.ts keeps them). */
export interface ShardRoster {
  /** The shards of the endpoint slice whose start has not failed, in the slice's order. */
  serving(): ProviderShard[];
  /** Whether a shard's URL left the slice (it serves its workspaces for the unbind grace only). */
  isRetiring(shard: ProviderShard): boolean;
}

export interface WorkspaceOwnershipOptions {
  exportName: string;
  kinds: readonly RequestKind[];
  log: Logger;
  /** Every workspace's name in metric labels. */
  metricsName: string;
  /** After a workspace unbinds: how long its remote stays so that the deletes of its requests are acted on. */
  graceMs: number;
  /** How the parents' Workspaces are read (kcp-paths.ts). */
  paths: Omit<WorkspacePathsOptions, 'inUse' | 'read' | 'unknown'>;
  shards: ShardRoster;
}

export class WorkspaceOwnership {
  /** Each logical cluster with a ready binding: the one shard it is served from. */
  private readonly owner = new Map<string, ProviderShard>();
  /** The logical clusters served, with their connection. */
  private readonly served = new Map<string, Cluster>();
  /** Logical cluster → workspace path, from the parents' Workspaces (kcp-paths.ts). */
  readonly paths: WorkspacePaths;
  /** Logical clusters bound but not served yet: waiting for the parents to be read. */
  private readonly pending = new Set<string>();
  /** Logical clusters served held: their path cannot be known yet (a parent cannot be read); nothing of them is decided. The why is their requests' message. */
  private readonly held = new Map<string, string>();
  /** Logical clusters that unbound, served a little longer (their deletes are acted on), then forgotten. */
  private readonly leaving = new Map<string, NodeJS.Timeout>();
  /** Logical clusters bound on two shards at once: logged once each. */
  private readonly twice = new Set<string>();
  private stopped = false;

  constructor(
    private readonly sink: RemoteSink,
    private readonly opts: WorkspaceOwnershipOptions,
  ) {
    this.paths = new WorkspacePaths({
      ...opts.paths,
      inUse: (cluster) => this.owner.has(cluster) || this.served.has(cluster),
      unknown: () => [...this.owner.keys()].some((c) => !this.paths.has(c)),
      read: () => this.afterPaths(),
    });
  }

  private get kinds(): readonly RequestKind[] {
    return this.opts.kinds;
  }

  private get parents(): readonly string[] {
    return this.opts.paths.parents;
  }

  /** Stops deciding: the paths are no longer read, no workspace is forgotten any more. */
  stop(): void {
    this.stopped = true;
    this.paths.stop();
    for (const t of this.leaving.values()) clearTimeout(t);
  }

  /** The logical clusters served now. */
  clusters(): string[] {
    return [...this.served.keys()];
  }

  /** The logical clusters served held (their path not known yet), each with why. */
  heldClusters(): Map<string, string> {
    return new Map(this.held);
  }

  /** The workspace paths' readiness line: the parents read, and no workspace waiting for its path. */
  pathsReadiness(): ReadinessCheck {
    const waiting = [...this.held.keys()];
    const pathsOk = !this.paths.error && !waiting.length;
    const pathDetail = [
      ...(this.paths.error ? [this.paths.error] : []),
      ...(waiting.length ? [`${waiting.length} workspace(s) wait for their path, their requests not decided: ${waiting.slice(0, 5).join(', ')}${waiting.length > 5 ? ', …' : ''} (${this.paths.unknownWhy().replace(/^waiting for this workspace's path: /, '')})`] : []),
    ].join('; ');
    return { name: `kcp/${this.opts.exportName}/workspace-paths`, ok: pathsOk, required: false, ...(pathsOk ? {} : { detail: pathDetail }) };
  }

  /** How many workspaces are served from a shard, and how many of those wait (held, or their path being read for the first time). */
  counts(shard: ProviderShard): { workspaces: number; waiting: number } {
    const owned = this.ownedBy(shard);
    return { workspaces: owned.length, waiting: owned.filter((c) => this.held.has(c) || this.pending.has(c)).length };
  }

  ownedBy(shard: ProviderShard): string[] {
    return [...this.owner].filter(([, o]) => o === shard).map(([c]) => c);
  }

  /** A shard's URL left the slice: its workspaces that another shard has ready are handed over (the others stay served from it). */
  handOverFrom(shard: ProviderShard, why: string): void {
    for (const c of this.ownedBy(shard)) {
      const to = this.successor(c, shard);
      if (to) this.handOver(c, shard, to, why);
    }
  }

  /** A shard that left the slice stops: its workspaces are handed over to another shard that has them ready, or forgotten. */
  async release(shard: ProviderShard, why: string): Promise<void> {
    for (const c of this.ownedBy(shard)) {
      const to = this.successor(c, shard);
      if (to) this.handOver(c, shard, to, why);
      else await this.forget(c, why);
    }
  }

  /** Another shard of the slice that has the logical cluster ready (and passes `also`), to serve it from when `from` drops it (one that is up first). */
  private successor(cluster: string, from: ProviderShard | undefined, also: (s: ProviderShard) => boolean = () => true): ProviderShard | undefined {
    const candidates = this.opts.shards.serving().filter((s) => s !== from && s.isReady(cluster) && also(s));
    return candidates.find((s) => s.state().up) ?? candidates[0];
  }

  // ShardEvents (through kcp.ts): what the shards see.

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
    if (this.opts.shards.isRetiring(shard)) return;
    if (o) {
      // Served from another shard that still has it ready: a move under way
      // (or two URLs of one shard). It stays there until that shard drops it.
      if (o.isReady(cluster) && !this.leaving.has(cluster) && !this.opts.shards.isRetiring(o)) {
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
    }, this.opts.graceMs).unref();
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
    if (from.isReady(cluster) && !this.opts.shards.isRetiring(from)) {
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
   * A logical cluster with a ready binding: served once the parents have
   * been read again (unless its path is known); held while its path cannot
   * be learnt.
   */
  private arrive(cluster: string): void {
    if (this.paths.has(cluster)) return this.serve(cluster);
    if (this.pending.has(cluster)) return;
    this.pending.add(cluster);
    void this.paths.refresh().then(() => {
      if (!this.pending.delete(cluster) || this.stopped || !this.owner.has(cluster)) return;
      if (!this.paths.has(cluster)) {
        const why = this.paths.unknownWhy();
        this.held.set(cluster, why);
        this.opts.log.warn({ cluster, workspaceParents: this.paths.readParents, why: this.paths.error ?? why }, 'kcp: a workspace whose path cannot be read yet; served held: its requests wait, nothing of it is decided until its path is known');
      }
      this.serve(cluster);
    });
  }

  /** After every read of the parents: the held workspaces whose path is known now are decided. */
  private afterPaths(): void {
    if (this.stopped) return;
    const why = this.paths.unknownWhy();
    for (const [cluster, before] of [...this.held]) {
      if (this.paths.has(cluster)) {
        this.held.delete(cluster);
        this.opts.log.info({ cluster, workspace: this.paths.get(cluster) }, 'kcp: the path of a held workspace is known now; its requests are decided');
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

  /** Adds the remote of a logical cluster, from its shard: its shares of the kinds' caches, and its connection there. What the shares hold already reaches it now. */
  private serve(cluster: string): void {
    const shard = this.owner.get(cluster);
    if (!shard || this.served.has(cluster)) return;
    const conn = shard.connection(cluster);
    this.served.set(cluster, conn);
    this.sink.addRemote({
      name: cluster,
      metricsName: this.opts.metricsName,
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
}

/** Whether a share holds a request of that namespace and name. */
function shows(items: ReadonlyMap<string, InternalRequest>, r: InternalRequest): boolean {
  const { namespace, name } = r.metadata;
  const direct = items.get(`${namespace ?? ''}/${name ?? ''}`);
  if (direct && direct.metadata.name === name && direct.metadata.namespace === namespace) return true;
  for (const o of items.values()) if (o.metadata.name === name && o.metadata.namespace === namespace) return true;
  return false;
}
