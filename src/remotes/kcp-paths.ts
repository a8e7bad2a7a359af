/**
 * The paths of kcp workspaces (`root:org:team`), which the configuration's
 * rules name, for the kcp provider (kcp.ts): learnt from Workspace objects
 * (`spec.cluster`, set by kcp, which neither the tenant nor its admin can
 * change), never from the workspace itself (its LogicalCluster's
 * `kcp.io/path` is the tenant admin's to rewrite).
 *
 * The given parents (`--kcp-workspace-parent`, default `root`) are read
 * every refreshMs. While a logical cluster in use has no path yet, the
 * tree below them is walked too: every child workspace listed is read in
 * turn (its own children), at any depth; the ones the controller may read
 * (config/kcp/parent applied there) are read on every later refresh as
 * well, the others (tenant workspaces: 403) are named in the waiting
 * request's message. A parent under a workspace the controller cannot read
 * is reached only when given. The parents are read again whenever the
 * provider asks (a logical cluster not known yet) and, while a given one
 * fails (403, no answer), with backoff. Every read is bounded by the
 * request timeout.
 *
 * Also the provider's small tools for bounded calls: bounded(), backoffMs(),
 * shortWhy().
 */
import type { Logger } from 'pino';
import { describeError, statusCode, type Cluster } from '../kube/client.js';

export interface WorkspacePathsOptions {
  /** The parent workspaces, by path. */
  parents: readonly string[];
  /** The connection to a parent workspace (the project's client, with its timeout). */
  connect(parent: string): Promise<Cluster>;
  timeoutMs: number;
  /** How often the parents are read again when the last read succeeded. */
  refreshMs: number;
  /** Retries of a failed read: after baseMs, doubling up to maxMs. */
  backoff: { baseMs: number; maxMs: number };
  log: Logger;
  /** Whether a logical cluster is in use (bound or served): its path is kept while it is, even once gone from its parent. */
  inUse(cluster: string): boolean;
  /** Whether a logical cluster in use has no path yet: the tree below the parents is then walked. */
  unknown(): boolean;
  /** Called after every read (whether it succeeded or not). */
  read(): void;
  /** How many workspaces one walk reads at most (default 2000), and how deep below root it goes (default 16 segments). */
  walk?: { maxReads?: number; maxDepth?: number };
}

/** A workspace name as kcp allows it (a DNS label); anything else listed is not taken as a path segment. */
const WORKSPACE_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** How many workspaces are read at once during a walk. */
const WALK_CONCURRENCY = 8;

type Read = { parent: string; children?: string[]; error?: unknown };

export class WorkspacePaths {
  /** Logical cluster → workspace path. */
  private readonly paths = new Map<string, string>();
  private refreshing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Failed reads in a row (their retries back off). */
  private failures = 0;
  /** The last read's errors, in full (readiness, logs). */
  private lastError: string | undefined;
  /** The given parents the last read failed for, each with a short why. */
  private failed: Array<{ parent: string; why: string }> = [];
  /** Workspaces found by walking that the controller may read: read on every refresh, as the given parents are. */
  private readonly learnt = new Set<string>();
  /** Workspaces the last walk could not read (tenant workspaces, mostly), each with a short why. */
  private unreadable: Array<{ parent: string; why: string }> = [];
  /**
   * Workspaces a walk found that refused to be read (tenants, mostly): not
   * asked again before `retryAt` (refreshMs doubling per refusal, at most
   * 8 × refreshMs), so that a held workspace does not have every tenant
   * asked on every refresh.
   */
  private readonly refused = new Map<string, { why: string; times: number; retryAt: number }>();

  constructor(private readonly opts: WorkspacePathsOptions) {}

  get(cluster: string): string | undefined {
    return this.paths.get(cluster);
  }

  has(cluster: string): boolean {
    return this.paths.has(cluster);
  }

  /** Why the last read failed, when a given parent failed. */
  get error(): string | undefined {
    return this.lastError;
  }

  /** The workspaces read on every refresh: the given parents and the readable ones a walk found. */
  get readParents(): string[] {
    return [...new Set([...this.opts.parents, ...this.learnt])];
  }

  /**
   * Why a logical cluster that no read listed cannot be named, and what
   * would let the controller name it. The words change only with which
   * workspaces cannot be read and how (a request's message must not change
   * with every retry).
   */
  unknownWhy(): string {
    const cannot = [...this.failed, ...this.unreadable.filter((u) => !this.failed.some((f) => f.parent === u.parent))];
    const shown = cannot.slice(0, 3).map((f) => `${f.parent} (${f.why})`);
    const more = cannot.length > 3 ? `, and ${cannot.length - 3} other workspace(s)` : '';
    const where = cannot.length
      ? `the controller cannot read the Workspaces of ${shown.join(', ')}${more}, and the rules name workspaces by path`
      : `no workspace the controller can read lists it (read: ${this.readParents.join(', ')})`;
    return (
      `waiting for this workspace's path: ${where}; the request is decided once its path is known, never under its logical cluster name. ` +
      `To let it be decided, an administrator grants the controller get, list and watch on workspaces (tenancy.kcp.io) and access on / in this workspace's parent (config/kcp/parent/workspace_reader.yaml); ` +
      `a parent below a workspace the controller cannot read is read only when named with --kcp-workspace-parent`
    );
  }

  /** Reads the parents again now (one read at a time; callers during one share it). */
  refresh(): Promise<void> {
    this.refreshing ??= this.readAll().finally(() => {
      this.refreshing = undefined;
      if (this.stopped) return;
      this.failures = this.lastError ? this.failures + 1 : 0;
      this.schedule(this.failures ? backoffMs(this.failures, this.opts.backoff.baseMs, Math.min(this.opts.refreshMs, this.opts.backoff.maxMs)) : this.opts.refreshMs);
      this.opts.read();
    });
    return this.refreshing;
  }

  /** Keeps reading: every refreshMs, sooner (with backoff) after a failed read. */
  start(): void {
    if (!this.timer) this.schedule(this.failures ? backoffMs(this.failures, this.opts.backoff.baseMs, Math.min(this.opts.refreshMs, this.opts.backoff.maxMs)) : this.opts.refreshMs);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.refresh(), ms).unref();
  }

  /** Lists one workspace's child Workspaces, recording their logical clusters' paths. */
  private async readOne(parent: string): Promise<Read> {
    try {
      const conn = await this.opts.connect(parent);
      const list = (await bounded(conn.custom.listClusterCustomObject({ group: 'tenancy.kcp.io', version: 'v1alpha1', plural: 'workspaces' }), this.opts.timeoutMs, `no answer in ${this.opts.timeoutMs / 1000} s`)) as {
        items?: Array<{ metadata?: { name?: string }; spec?: { cluster?: string } }>;
      };
      const listed = new Set<string>();
      const children: string[] = [];
      for (const ws of list.items ?? []) {
        const name = ws.metadata?.name;
        if (!ws.spec?.cluster || !name || !WORKSPACE_NAME.test(name)) continue;
        this.paths.set(ws.spec.cluster, `${parent}:${name}`);
        listed.add(ws.spec.cluster);
        children.push(`${parent}:${name}`);
      }
      // Gone from this parent: forgotten too (churn must not grow the map), unless still in use.
      for (const [cluster, path] of this.paths) {
        if (listed.has(cluster) || this.opts.inUse(cluster)) continue;
        if (path.slice(0, path.lastIndexOf(':')) === parent) this.paths.delete(cluster);
      }
      return { parent, children };
    } catch (error) {
      return { parent, error };
    }
  }

  /** Reads every given (and learnt) parent, at once; then, while a logical cluster in use has no path, walks the tree below them. */
  private async readAll(): Promise<void> {
    const parents = this.readParents;
    const results = await Promise.all(parents.map((p) => this.readOne(p)));
    const failed = results.filter((r) => r.error !== undefined && this.opts.parents.includes(r.parent));
    for (const r of results) if (r.error !== undefined && this.learnt.delete(r.parent)) this.opts.log.info({ workspace: r.parent, why: shortWhy(r.error) }, 'kcp: a workspace found by walking can no longer be read; it is no longer read on every refresh');
    const errors = failed.map((r) => `cannot list the Workspaces of ${r.parent}: ${describeError(r.error)} (the controller needs config/kcp/parent there)`);
    if (errors.length) this.opts.log.warn({ errors, attempt: this.failures + 1 }, 'kcp: workspace paths; read again with backoff');
    this.lastError = errors.length ? errors.join('; ') : undefined;
    this.failed = failed.map((r) => ({ parent: r.parent, why: shortWhy(r.error) }));
    if (this.opts.unknown()) await this.walk(results, new Set(parents));
    else this.unreadable = [];
  }

  /**
   * Reads the children of what was read, level by level, until no logical
   * cluster in use lacks a path, the tree ends, or the walk's bounds are
   * reached. A readable workspace is learnt (read on every refresh from now
   * on); one that cannot be read is remembered for the waiting requests'
   * message.
   */
  private async walk(first: Read[], seen: Set<string>): Promise<void> {
    const maxReads = this.opts.walk?.maxReads ?? 2000;
    const maxDepth = this.opts.walk?.maxDepth ?? 16;
    const unreadable: Array<{ parent: string; why: string }> = [];
    let level = first.flatMap((r) => r.children ?? []);
    let reads = 0;
    while (level.length && this.opts.unknown() && !this.stopped) {
      const next: string[] = [];
      const now = Date.now();
      const fresh = level.filter((p) => !seen.has(p) && p.split(':').length <= maxDepth);
      // Refused not long ago: not asked again yet, still named.
      const todo = fresh.filter((p) => {
        const r = this.refused.get(p);
        if (!r || r.retryAt <= now) return true;
        seen.add(p);
        unreadable.push({ parent: p, why: r.why });
        return false;
      });
      for (let i = 0; i < todo.length && reads < maxReads; i += WALK_CONCURRENCY) {
        const batch = todo.slice(i, Math.min(i + WALK_CONCURRENCY, i + maxReads - reads));
        reads += batch.length;
        for (const r of await Promise.all(batch.map((p) => this.readOne(p)))) {
          seen.add(r.parent);
          if (r.error !== undefined) {
            const why = shortWhy(r.error);
            const times = (this.refused.get(r.parent)?.times ?? 0) + 1;
            this.refused.set(r.parent, { why, times, retryAt: Date.now() + Math.min(8, 2 ** (times - 1)) * this.opts.refreshMs });
            unreadable.push({ parent: r.parent, why });
            continue;
          }
          this.refused.delete(r.parent);
          if (!this.learnt.has(r.parent)) this.opts.log.info({ workspace: r.parent, children: r.children?.length ?? 0 }, 'kcp: a workspace found by walking the tree can be read; its Workspaces are read on every refresh from now on');
          this.learnt.add(r.parent);
          next.push(...(r.children ?? []));
        }
      }
      if (reads >= maxReads) {
        this.opts.log.warn({ reads: maxReads }, 'kcp: walking the workspace tree stopped at its bound; name the parents of the workspaces still waiting with --kcp-workspace-parent');
        break;
      }
      level = next;
    }
    this.unreadable = unreadable.sort((a, b) => (a.parent < b.parent ? -1 : a.parent > b.parent ? 1 : 0));
    // Forget refusals of workspaces no walk reached this time (gone, or their parent no longer listed): the map stays as big as the tree.
    for (const p of this.refused.keys()) if (!seen.has(p)) this.refused.delete(p);
  }
}

/** A call that did not answer in time. */
export class NoAnswer extends Error {}

/** A promise, or a rejection (NoAnswer) after ms; the call it waits for is left to end on its own. */
export function bounded<T>(p: Promise<T>, ms: number, why: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new NoAnswer(why)), ms)))]).finally(() => clearTimeout(timer));
}

/** The wait before retry `attempt` (1, 2, …): baseMs, doubling, at most maxMs. */
export function backoffMs(attempt: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(attempt, 1) - 1, 20));
}

/** A failed read in a few stable words (for a request's message, which must not change with every retry). */
export function shortWhy(e: unknown): string {
  const code = statusCode(e);
  if (code === 403) return 'forbidden';
  if (code !== undefined) return `HTTP ${code}`;
  if (e instanceof NoAnswer || (e as Error | undefined)?.name === 'AbortError' || /timeout|timed out|abort/i.test(describeError(e))) return 'no answer';
  return 'cannot connect';
}
