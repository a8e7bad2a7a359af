/**
 * The paths of kcp workspaces (`root:org:team`), which the configuration's
 * rules name, for the kcp provider (kcp.ts): learnt from each given parent
 * workspace's Workspace objects (`spec.cluster`, set by kcp, which neither
 * the tenant nor its admin can change), never from the workspace itself
 * (its LogicalCluster's `kcp.io/path` is the tenant admin's to rewrite).
 *
 * The parents are read again every refreshMs, whenever the provider asks
 * (a logical cluster not known yet), and, while a read fails (403, no
 * answer), with backoff. Every read is bounded by the request timeout.
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
  /** Called after every read (whether it succeeded or not). */
  read(): void;
}

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
  /** The parents the last read failed for, each with a short why. */
  private failed: Array<{ parent: string; why: string }> = [];

  constructor(private readonly opts: WorkspacePathsOptions) {}

  get(cluster: string): string | undefined {
    return this.paths.get(cluster);
  }

  has(cluster: string): boolean {
    return this.paths.has(cluster);
  }

  /** Why the last read failed, when it did. */
  get error(): string | undefined {
    return this.lastError;
  }

  /**
   * Why a logical cluster the last read did not list cannot be named: a
   * parent could not be read (it may be there). Undefined when every parent
   * was read: it is under none of them. The words change only with which
   * parents fail and how (a request's message must not change with every
   * retry).
   */
  unknownWhy(): string | undefined {
    if (!this.failed.length) return undefined;
    const which = this.failed.map((f) => `${f.parent} (${f.why})`).join(', ');
    return `waiting for this workspace's path: the controller cannot read the Workspaces of ${which}, and the rules name workspaces by path; the request is decided once its path is known, never under its logical cluster name`;
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

  /** Reads every parent, at once (a read takes at most the timeout, however many parents). */
  private async readAll(): Promise<void> {
    const results = await Promise.all(
      this.opts.parents.map(async (parent): Promise<{ parent: string; error?: unknown }> => {
        try {
          const conn = await this.opts.connect(parent);
          const list = (await bounded(conn.custom.listClusterCustomObject({ group: 'tenancy.kcp.io', version: 'v1alpha1', plural: 'workspaces' }), this.opts.timeoutMs, `no answer in ${this.opts.timeoutMs / 1000} s`)) as {
            items?: Array<{ metadata?: { name?: string }; spec?: { cluster?: string } }>;
          };
          const listed = new Set<string>();
          for (const ws of list.items ?? []) {
            if (!ws.spec?.cluster || !ws.metadata?.name) continue;
            this.paths.set(ws.spec.cluster, `${parent}:${ws.metadata.name}`);
            listed.add(ws.spec.cluster);
          }
          // Gone from this parent: forgotten too (churn must not grow the map), unless still in use.
          for (const [cluster, path] of this.paths) {
            if (listed.has(cluster) || this.opts.inUse(cluster)) continue;
            if (path.slice(0, path.lastIndexOf(':')) === parent) this.paths.delete(cluster);
          }
          return { parent };
        } catch (error) {
          return { parent, error };
        }
      }),
    );
    const failed = results.filter((r) => r.error !== undefined);
    const errors = failed.map((r) => `cannot list the Workspaces of ${r.parent}: ${describeError(r.error)} (the controller needs config/kcp/parent there)`);
    if (errors.length) this.opts.log.warn({ errors, attempt: this.failures + 1 }, 'kcp: workspace paths; read again with backoff');
    this.lastError = errors.length ? errors.join('; ') : undefined;
    this.failed = failed.map((r) => ({ parent: r.parent, why: shortWhy(r.error) }));
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
