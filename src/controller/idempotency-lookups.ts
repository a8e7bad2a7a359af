/**
 * Idempotency look-ups (the I/O side of idempotency.ts): the other requests
 * with a request's idempotency key, as the Earlier values decide() needs,
 * and one decision at a time per key.
 */
import { Reason, succeededCondition } from '../api/conditions.js';
import type { InternalRequest } from '../api/types.js';
import { requestUidOf } from '../tekton/pipelinerun.js';
import type { PipelineRun } from '../tekton/tekton-types.js';
import type { RequestKind } from '../requests/request-kind.js';
import { ANNOTATION_SPEC_HASH, idempotencyKeyOf, specHash, type Earlier } from '../requests/idempotency.js';

export interface SameKeyRequests {
  /** Keys of the requests of a remote namespace that carry an idempotency key. */
  sameKey(remote: string, namespace: string, key: string, kind?: RequestKind): Iterable<string>;
  /** The request of a key as we last know it. */
  currentRequest(key: string): InternalRequest | undefined;
  /** Our PipelineRuns of a request key. */
  pipelineRunsFor(key: string): PipelineRun[];
}

/**
 * The other requests with this request's idempotency key, as Earlier
 * values, the ones to follow first: those that run or ran (a PipelineRun),
 * then the unfinished ones created before this one. A succeeded one is
 * read from the cluster (the client of its kind) for its results.
 */
export async function earlierOf(
  src: SameKeyRequests,
  remote: { name: string; client: { tryGet(ns: string, name: string): Promise<InternalRequest | undefined> }; kind?: RequestKind },
  req: InternalRequest,
): Promise<Earlier[]> {
  const ns = req.metadata.namespace ?? '';
  const k = idempotencyKeyOf(req)!;
  const mine = specHash(req.spec);
  const out: Array<Earlier & { rank: number; created: string }> = [];
  for (const key of src.sameKey(remote.name, ns, k, remote.kind)) {
    const other = src.currentRequest(key);
    if (!other || other.metadata.uid === req.metadata.uid) continue;
    const hash = other.metadata.annotations?.[ANNOTATION_SPEC_HASH] ?? specHash(other.spec);
    const c = succeededCondition(other);
    const hasRun = !!other.status?.pipelineRun || src.pipelineRunsFor(key).some((p) => requestUidOf(p) === other.metadata.uid);
    const created = other.metadata.creationTimestamp ?? '';
    const older = created < (req.metadata.creationTimestamp ?? '') || (created === req.metadata.creationTimestamp && (other.metadata.uid ?? '') < (req.metadata.uid ?? ''));
    let state: Earlier['state'];
    if (c?.status === 'True') state = 'succeeded';
    else if (c?.status === 'False' && c.reason !== Reason.Running) state = c.reason === Reason.Rejected ? 'rejected' : 'failed';
    else if (hasRun || older) state = 'active';
    else continue; // a later one that has not run: it follows this one, not the other way round
    const e: Earlier & { rank: number; created: string } = { name: other.metadata.name ?? '', uid: other.metadata.uid ?? '', sameSpec: hash === mine, state, rank: hasRun || state === 'succeeded' ? 0 : 1, created };
    if (state === 'succeeded' && e.sameSpec) {
      const got = await remote.client.tryGet(ns, e.name);
      const full = got && remote.kind && !remote.kind.builtIn ? remote.kind.toRequest(got as never) : got;
      if (full?.metadata.uid === e.uid) {
        e.results = { ...(full.status?.results ?? {}) };
        if (full.status?.pipelineRun) e.pipelineRun = full.status.pipelineRun;
      }
    } else if (other.status?.pipelineRun) e.pipelineRun = other.status.pipelineRun;
    out.push(e);
  }
  return out.sort((a, b) => a.rank - b.rank || (a.created < b.created ? -1 : 1)).map(({ rank: _r, created: _c, ...e }) => e);
}

/** Decisions about requests with the same idempotency key, one at a time (two workers must not both start one). */
export class KeyLocks {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(lockKey: string, fn: () => Promise<T>): Promise<T> {
    const prev: Promise<unknown> = this.tails.get(lockKey) ?? Promise.resolve();
    const turn = prev.then(fn);
    const tail = turn.then(() => undefined, () => undefined);
    this.tails.set(lockKey, tail);
    try {
      return await turn;
    } finally {
      if (this.tails.get(lockKey) === tail) this.tails.delete(lockKey);
    }
  }
}
