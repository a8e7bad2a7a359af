/**
 * What the clusters refused of what decide() planned, kept as facts for the
 * next observation, so that the outcome is decided in decide() and nowhere
 * else: the internal cluster refusing the PipelineRun a request produces
 * (Rejected), the remote cluster refusing the results of a finished run on
 * the request (Failed, without them), a remote cluster refusing the
 * controller's deletes of finished requests (ttlSecondsAfterFinished: not
 * tried again for a while), or its removal of the incumbent Go controller's
 * finalizer (requests/incumbent.ts: likewise). The executor and the status writer record
 * them and bring the key back; observe() reads them.
 */

/** A remote that refused a delete (or a finalizer's removal) is not asked again for this long (a grant made meanwhile is used after it). */
export const DELETES_DENIED_MS = 10 * 60_000;
/** A refusal about a request is kept this long (long past its decision, which comes at once). */
const KEPT_MS = 60 * 60_000;

export interface RequestRefusals {
  /** The internal cluster's answer to the PipelineRun of this request. */
  run?: string;
  /** The remote cluster's answer to the results written on this request. */
  results?: string;
}

/** What a remote may refuse the controller for a while: the delete of a finished request, the removal of a finalizer. */
type RemoteRight = 'delete' | 'finalizer';

export class Refusals {
  private readonly byRequest = new Map<string, RequestRefusals & { uid: string; at: number }>();
  /** When each remote last refused each right. */
  private readonly denied: Record<RemoteRight, Map<string, number>> = { delete: new Map(), finalizer: new Map() };

  /** The internal cluster refused the PipelineRun of request `uid` at `key`. */
  runRefused(key: string, uid: string, message: string, now: number): void {
    this.byRequest.set(key, { ...this.sameRequest(key, uid), uid, at: now, run: message });
  }

  /** The remote cluster refused the status with results of request `uid` at `key`. */
  resultsRefused(key: string, uid: string, message: string, now: number): void {
    this.byRequest.set(key, { ...this.sameRequest(key, uid), uid, at: now, results: message });
  }

  /** A remote refused to delete one of its requests; true when it is the first refusal known (to be said once). */
  deleteDenied(remote: string, now: number): boolean {
    return this.deny('delete', remote, now);
  }

  /** A remote refused to let the controller remove a finalizer from a request (patch); true when it is the first refusal known. */
  finalizerDenied(remote: string, now: number): boolean {
    return this.deny('finalizer', remote, now);
  }

  /** Whether a delete on this remote was refused less than DELETES_DENIED_MS ago. */
  deletesDeniedOn(remote: string, now: number): boolean {
    return this.deniedOn('delete', remote, now);
  }

  /** Whether a finalizer's removal on this remote was refused less than DELETES_DENIED_MS ago. */
  finalizersDeniedOn(remote: string, now: number): boolean {
    return this.deniedOn('finalizer', remote, now);
  }

  /** The remotes whose deletes were refused less than DELETES_DENIED_MS ago. */
  deletesDeniedRemotes(now: number): string[] {
    return [...this.denied.delete].filter(([, at]) => now - at < DELETES_DENIED_MS).map(([r]) => r);
  }

  private deny(right: RemoteRight, remote: string, now: number): boolean {
    const first = !this.denied[right].has(remote);
    this.denied[right].set(remote, now);
    return first;
  }

  private deniedOn(right: RemoteRight, remote: string, now: number): boolean {
    const at = this.denied[right].get(remote);
    return at !== undefined && now - at < DELETES_DENIED_MS;
  }

  /** What was refused about this request (its uid: a replaced request starts clean). */
  of(key: string, uid: string | undefined): RequestRefusals | undefined {
    const r = uid ? this.byRequest.get(key) : undefined;
    if (!r || r.uid !== uid) return undefined;
    return { ...(r.run !== undefined ? { run: r.run } : {}), ...(r.results !== undefined ? { results: r.results } : {}) };
  }

  forgetRemote(name: string): void {
    for (const m of Object.values(this.denied)) m.delete(name);
    for (const k of [...this.byRequest.keys()]) if (k.startsWith(`${name}/`)) this.byRequest.delete(k);
  }

  /** Drops what is too old to matter (called with the sweep). */
  expire(now: number): void {
    for (const [k, r] of this.byRequest) if (now - r.at > KEPT_MS) this.byRequest.delete(k);
  }

  private sameRequest(key: string, uid: string): RequestRefusals {
    const r = this.byRequest.get(key);
    return r && r.uid === uid ? r : {};
  }
}
