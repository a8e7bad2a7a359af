/**
 * The Reconciler: one request key, observe → decide() → live reads → act,
 * in that order, with every part it uses injected (the manager,
 * controller.ts, wires them). It returns what the caller's queue should do
 * with the key (a requeue after a delay, or nothing: forget it) and throws
 * when the key must be retried with backoff, as controller-runtime's
 * Reconcile does.
 *
 * Nothing here is entered twice: a conflicting status write requeues the
 * key (status-writer.ts); a need (a resolution, a commit check, Results,
 * logs) is started by the executor and brings the key back when it is in.
 */
import type { Logger } from 'pino';
import type { InternalRequest } from '../api/types.js';
import { isFinished } from '../api/conditions.js';
import type { ResourceClient } from '../kube/client.js';
import { splitKey, type Remote } from '../remotes/remote.js';
import { idempotencyKeyOf } from '../requests/idempotency.js';
import { pipelineRunName } from '../tekton/pipelinerun.js';
import type { Pipeline } from '../tekton/tekton-types.js';
import type { Action } from './actions.js';
import { decide } from './decide.js';
import type { Executor } from './executor.js';
import type { CapacityGate } from './capacity-gate.js';
import { KeyLocks } from './idempotency-lookups.js';
import { confirmingRead, withoutUnconfirmedRemovals } from './listing.js';
import { liveReadFor, type LiveReads } from './live-reads.js';
import { observe, type ObserveMemo, type ObserveSources } from './observe.js';
import type { StatusWriter } from './status-writer.js';

/** Failed list/watch attempts in a row after which a remote counts as unreachable, and how soon its requests are looked at again. */
const UNREACHABLE_AFTER = 2;
const UNREACHABLE_RETRY_MS = 5_000;

/** What the queue does with a key after a reconcile that did not throw. */
export interface ReconcileResult {
  /** Look at the key again after this long (its remote is unreachable now). */
  requeueAfterMs?: number;
}

export interface ReconcilerDeps {
  namespace: string;
  log: Logger;
  /** The remotes served, and the cached copy of a request. */
  remotes: { served(key: string): Remote | undefined; cached(key: string): InternalRequest | undefined };
  writer: Pick<StatusWriter, 'conflicted' | 'current'>;
  executor: Pick<Executor, 'act' | 'prClient'>;
  /** Capacity: decisions that may start a run are made one at a time while a limit is set. */
  capacity: Pick<CapacityGate, 'capped' | 'serialize'>;
  /** The Pipelines of the controller's namespace, for a live read when the cache has not shown one. */
  pipelineClient: ResourceClient<Pipeline>;
  /** What observe() reads. */
  sources: ObserveSources;
  /** Counts each action and whether it went through. */
  acted?: ((type: Action['type'], ok: boolean) => void) | undefined;
}

export class Reconciler {
  /** Decisions about requests with the same idempotency key, one at a time (two workers must not both start one). */
  private readonly keyLocks = new KeyLocks();

  constructor(private readonly d: ReconcilerDeps) {}

  /** The request as we last know it: our own write if the cache has not caught up. */
  current(key: string): InternalRequest | undefined {
    return this.d.writer.current(key, this.d.remotes.cached(key));
  }

  /**
   * Reconciles one request key. `observed`: a copy of the request to decide
   * on instead of the cache's, as if read fresh (tests use it to decide on a
   * stale copy).
   */
  async reconcile(key: string, observed?: InternalRequest): Promise<ReconcileResult> {
    const request = observed ?? this.current(key);
    if (!this.d.capacity.capped || !request || isFinished(request) || request.status?.pipelineRun) return this.underKeyLock(key, observed);
    return this.d.capacity.serialize(() => this.underKeyLock(key, observed));
  }

  private async underKeyLock(key: string, observed?: InternalRequest): Promise<ReconcileResult> {
    const req = observed ?? this.current(key);
    const idem = req && !isFinished(req) ? idempotencyKeyOf(req) : undefined;
    if (!idem) return this.reconcileOne(key, observed);
    const k = splitKey(key);
    return this.keyLocks.run(`${k.remote}/${req!.metadata.namespace}/${idem}${k.kind ? `/${k.kind}` : ''}`, () => this.reconcileOne(key, observed));
  }

  /**
   * Observe, decide(), act. Some answers of a cache are confirmed against
   * the cluster before they are acted on (live reads); each is made at most
   * once, and then the key is observed and decided again in the same loop.
   */
  private async reconcileOne(key: string, observed?: InternalRequest): Promise<ReconcileResult> {
    // A remote that is not served (removed, or not added yet): nothing of it
    // is decided, no PipelineRun of it swept.
    const remote = this.d.remotes.served(key);
    if (!remote) return {};
    // A kind that is not served (any more): its requests and what was made
    // for them are left as they are, like those of a remote not served.
    const kind = remote.kindOf(key);
    if (!kind) return {};
    // A remote that is failing (the kind's cache cannot list or watch): its requests
    // are looked at again later rather than tying up workers with calls that
    // time out, so that the other remotes are served meanwhile.
    if (kind.requests.health.failures >= UNREACHABLE_AFTER) return { requeueAfterMs: UNREACHABLE_RETRY_MS };
    const conflicted = this.d.writer.conflicted(key);
    const attempt = conflicted?.attempt ?? 0;
    const reads: LiveReads = { request: conflicted || observed ? 'read' : undefined };
    let request = observed ?? this.current(key);
    // Each call observe() makes is made once in this reconcile (the loop observes again after a live read).
    const memo: ObserveMemo = new Map();
    for (;;) {
      const seen = await observe(this.d.sources, key, remote, kind, request, reads, memo);
      if (!seen) return {};
      let actions = decide(seen.observation);
      const read = liveReadFor(actions, seen, reads, kind.kind.builtIn);
      if (read === 'request' || read === 'confirm') {
        // A typed kind's request is decided again on a fresh read before
        // its spec is acted on (a run, an approval, an outcome): a watch
        // opened under an older CRD of the kind serves its objects pruned by
        // the older schema; a read is served under the CRD of now. A
        // finished request is cached in brief (cached-requests.ts): a status write for
        // it starts from a fresh read. And a negative answer of the cache is
        // confirmed before it removes what was made for a request the cache
        // does not show (it may be behind: listing.ts).
        const k = splitKey(key);
        let unconfirmed = false;
        const got = read === 'request' ? await kind.client.tryGet(k.namespace, k.name) : await confirmingRead(kind.client, this.d.log, key, k.namespace, k.name, () => (unconfirmed = true));
        reads.request = 'read';
        if (unconfirmed) actions = withoutUnconfirmedRemovals(actions);
        if (read === 'request' && (!got || got.metadata.uid !== request?.metadata.uid)) return {}; // gone or replaced: its delete event brings the key back
        if (got && (got.metadata.uid !== request?.metadata.uid || read === 'request')) {
          request = kind.kind.toRequest(got as never);
          continue;
        }
      } else if (read === 'pipeline') {
        reads.pipeline = (await this.d.pipelineClient.tryGet(this.d.namespace, seen.pipelineName!)) ?? null;
        if (reads.pipeline) continue;
      } else if (read === 'pipelineRun') {
        reads.pipelineRun = (await this.d.executor.prClient.tryGet(this.d.namespace, pipelineRunName(seen.uid!))) ?? null;
        if (reads.pipelineRun) continue;
      }
      for (const action of actions) {
        const ok = await this.d.executor.act(remote, key, request, action, attempt);
        this.d.acted?.(action.type, ok);
        if (!ok) return {};
      }
      return {};
    }
  }
}
