/**
 * The status writer: puts a request's status on its remote cluster.
 *
 * - compare before write: a status equal to the one the request has is not written;
 * - the write is a PUT on the status subresource, conditional on the
 *   resourceVersion the decision was made on; on a conflict the request is
 *   read fresh, kept (current() answers with it until the cache shows as
 *   new a copy) and its key requeued: it is decided again by the next
 *   reconcile of the key, never by a call back into the one that wrote;
 * - results that the remote cluster refuses (too large, invalid): the
 *   refusal is recorded (refusals.ts) and the key requeued; decide() then
 *   plans the outcome without them rather than a retry for ever;
 * - after a write: the object written is remembered until the cache catches
 *   up (current()), metrics for started/finished, and the request's Event.
 *
 * It knows a remote only through the small StatusTarget interface, so it can
 * be exercised with a plain object (test/unit/status-writer.test.ts).
 */
import type { Refusals } from './refusals.js';
import type { Logger } from 'pino';
import type { InternalRequest } from '../api/types.js';
import { Phase, phaseOf } from '../api/conditions.js';
import { describeError, isRefusedObject, statusCode } from '../kube/client.js';
import type { EventSpec } from './actions.js';
import type { Attestation } from '../tekton/chains.js';
import { slimRequest } from '../requests/cached-requests.js';
import { rvNewer } from '../kube/resource-version.js';

/** How many times a status write is retried on a conflict, each on a fresh read. */
export const CONFLICT_RETRIES = 5;

/** What the writer needs of a remote: its name (in metrics), a client for the request's kind, its Event recorder. */
export interface StatusTarget {
  /** The remote's name in metric labels. */
  readonly name: string;
  /** On kcp: the workspace's path, when known (on the log line of each write). */
  readonly workspace?: string | undefined;
  /** The body of the status PUT for the request's kind (default: the request with the new status, as for InternalRequest). */
  readonly statusBody?: (req: InternalRequest, status: NonNullable<InternalRequest['status']>) => unknown;
  readonly client: {
    replaceStatus(namespace: string, name: string, body: InternalRequest): Promise<InternalRequest>;
    tryGet(namespace: string, name: string): Promise<InternalRequest | undefined>;
    /** A merge patch of the status subresource: for a field added to a finished request's status (relayAttestation). */
    patchStatusMerge?(namespace: string, name: string, patch: object): Promise<InternalRequest>;
  };
  readonly events: { record(obj: InternalRequest, type: 'Normal' | 'Warning', reason: string, message: string, now?: Date): Promise<void> };
}

/** The metrics a write reports (a subset of ControllerMetrics). */
export interface StatusMetrics {
  /** A request's PipelineRun was created and its status says Running (the first time); seconds since its creation. */
  started?(req: InternalRequest, seconds: number, remote: string): void;
  /** A request reached a terminal state; seconds since its creation. */
  finished?(req: InternalRequest, reason: string, succeeded: boolean, seconds: number, remote: string): void;
}

/**
 * Which Events are recorded on requests: `important` (the default) records
 * failures, rejections, approvals and notices, and leaves out routine
 * successes (Running, Succeeded), which the status already says; `all` adds
 * them; `warnings` keeps only Warning Events; `none` records nothing.
 */
export type EventsMode = 'all' | 'important' | 'warnings' | 'none';
export const EVENTS_MODES: readonly EventsMode[] = ['all', 'important', 'warnings', 'none'];

export function eventWanted(mode: EventsMode, event: EventSpec): boolean {
  switch (mode) {
    case 'all':
      return true;
    case 'important':
      return !event.success;
    case 'warnings':
      return event.type === 'Warning';
    case 'none':
      return false;
  }
}

export interface StatusWriterOptions {
  log: Logger;
  now: () => Date;
  metrics?: StatusMetrics | undefined;
  events?: EventsMode | undefined;
  /** A write conflicted (409), or was refused: look at the key again. */
  requeue(key: string): void;
  /** Where a refusal of results is recorded for the next observation (refusals.ts). */
  refusals: Pick<Refusals, 'resultsRefused'>;
}

/** How long a write of ours is remembered at most, for a cache that does not show its request (see current()). */
const WRITTEN_KEPT_MS = 10 * 60_000;
/** How long a fresh read after a conflict is kept for the next reconcile of its key. */
const CONFLICT_KEPT_MS = 60_000;

/** Whether the cached copy (resourceVersion `cached`) is not newer than the one we wrote over (`basedOn`), given the one we wrote (`ours`). */
function notNewer(cached: string | undefined, basedOn: string, ours: string | undefined): boolean {
  if (cached === basedOn) return true;
  return rvNewer(ours, cached) === true;
}

export class StatusWriter {
  /** Requests whose status we wrote, until the informer catches up: key -> object we wrote over, result, and when. */
  private readonly written = new Map<string, { basedOn: string; obj: InternalRequest; at: number }>();
  /** Requests whose write conflicted: key -> the fresh read, the attempt the next write is, and when. */
  private readonly conflicts = new Map<string, { obj: InternalRequest; attempt: number; at: number }>();

  constructor(private readonly opts: StatusWriterOptions) {}

  /**
   * The request as we last know it: our own write if the cache (which shows
   * `cached`) has not caught up. A cache can show an older copy than the one
   * we wrote over (while a long list arrives behind the early lane:
   * src/kube/informer-early.ts); resourceVersions are compared as numbers
   * when they are (etcd's are), else only the copy we wrote over counts as
   * behind. A cache that shows nothing keeps our write remembered (for
   * WRITTEN_KEPT_MS at most), as the list may still bring an older copy.
   */
  current(key: string, cached: InternalRequest | undefined): InternalRequest | undefined {
    const c = this.conflicted(key);
    if (c) {
      // The fresh read after a conflict, until the cache shows as new a copy.
      const newer = cached && cached.metadata.uid === c.request.metadata.uid && rvNewer(cached.metadata.resourceVersion, c.request.metadata.resourceVersion) === true;
      if (!newer) return c.request;
      this.conflicts.delete(key);
    }
    const w = this.written.get(key);
    if (!w) return cached;
    if (!cached) return undefined;
    if (cached.metadata.uid === w.obj.metadata.uid && notNewer(cached.metadata.resourceVersion, w.basedOn, w.obj.metadata.resourceVersion)) return w.obj;
    this.written.delete(key);
    return cached;
  }

  /** After a conflicted write: the request as read fresh, and the attempt number the next write of it is; undefined when none is pending. */
  conflicted(key: string, now = Date.now()): { request: InternalRequest; attempt: number } | undefined {
    const c = this.conflicts.get(key);
    if (!c) return undefined;
    if (now - c.at > CONFLICT_KEPT_MS) {
      this.conflicts.delete(key);
      return undefined;
    }
    return { request: c.obj, attempt: c.attempt };
  }

  /** Forgets writes older than WRITTEN_KEPT_MS (their requests long shown by the cache, or deleted). */
  expire(now = Date.now()): void {
    for (const [k, w] of this.written) if (now - w.at > WRITTEN_KEPT_MS) this.written.delete(k);
    for (const [k, c] of this.conflicts) if (now - c.at > CONFLICT_KEPT_MS) this.conflicts.delete(k);
  }

  /** Forgets the writes to one remote (removed or replaced). */
  forgetRemote(name: string): void {
    const prefix = `${name}/`;
    for (const k of [...this.written.keys()]) if (k.startsWith(prefix)) this.written.delete(k);
    for (const k of [...this.conflicts.keys()]) if (k.startsWith(prefix)) this.conflicts.delete(k);
  }

  /**
   * PUT on the status subresource, conditional on the resourceVersion we
   * decided on. On a conflict, the request is read fresh and kept, and its
   * key requeued: the whole decision is made again on it (it may have
   * changed meanwhile). Returns false when the rest of the plan must not run.
   */
  async write(remote: StatusTarget, key: string, request: InternalRequest, status: NonNullable<InternalRequest['status']>, event: EventSpec | undefined, attempt: number): Promise<boolean> {
    if (JSON.stringify(request.status ?? {}) === JSON.stringify(status)) return true;
    const ns = request.metadata.namespace!;
    const name = request.metadata.name!;
    const body = (remote.statusBody ? remote.statusBody(request, status) : { ...request, status }) as InternalRequest;
    let written: InternalRequest;
    try {
      written = await remote.client.replaceStatus(ns, name, body);
    } catch (e) {
      const code = statusCode(e);
      if (code === 404) return false; // deleted meanwhile; its delete event follows
      if (code === 409 && attempt < CONFLICT_RETRIES) {
        const fresh = await remote.client.tryGet(ns, name);
        if (!fresh) return false;
        this.opts.log.debug({ request: key, attempt }, 'status conflict; deciding again on a fresh read');
        this.conflicts.set(key, { obj: fresh, attempt: attempt + 1, at: Date.now() });
        this.opts.requeue(key);
        return false;
      }
      if (status.results && Object.keys(status.results).length && isRefusedObject(e) && request.metadata.uid) {
        // The results do not fit (the remote cluster's size limits or
        // validation): a fact for decide(), which writes the outcome
        // without them rather than retry for ever.
        this.opts.log.info({ request: key, err: describeError(e) }, 'the remote cluster refused the results; deciding again');
        this.opts.refusals.resultsRefused(key, request.metadata.uid, describeError(e), this.opts.now().getTime());
        this.opts.requeue(key);
        return false;
      }
      throw e;
    }
    const c = status.conditions?.[0];
    const phase = phaseOf({ status });
    this.opts.log.info({ request: key, ...(remote.workspace ? { workspace: remote.workspace } : {}), reason: c?.reason, phase, status: c?.status, pipelineRun: status.pipelineRun }, c?.message ?? 'status written');
    if (phase === Phase.Running && phaseOf(request) !== Phase.Running) {
      const created = Date.parse(request.metadata.creationTimestamp ?? '');
      this.opts.metrics?.started?.(request, Number.isFinite(created) ? Math.max(0, Date.now() - created) / 1000 : 0, remote.name);
    }
    if (c && c.status !== 'Unknown') {
      const created = Date.parse(request.metadata.creationTimestamp ?? '');
      this.opts.metrics?.finished?.(request, c.reason, c.status === 'True', Number.isFinite(created) ? (Date.now() - created) / 1000 : 0, remote.name);
    }
    if (event && eventWanted(this.opts.events ?? 'important', event)) {
      void remote.events.record(written, event.type, event.reason, event.message, this.opts.now());
    }
    this.conflicts.delete(key);
    this.remember(key, request, written);
    return true;
  }

  /**
   * Our write, kept as the cache keeps requests (cached-requests.ts: without
   * managedFields; a finished one as its small record), since it may be
   * remembered for minutes: a burst of requests would otherwise hold every
   * response whole.
   */
  private remember(key: string, over: InternalRequest, written: InternalRequest): void {
    this.written.set(key, { basedOn: over.metadata.resourceVersion ?? '', obj: slimRequest(written), at: Date.now() });
  }

  /**
   * Adds status.attestation to a finished request (Tekton Chains): a merge
   * patch of that one field, since what the controller keeps of a finished
   * request is not its whole status. The outcome and results stay as they
   * are; no metric of outcomes counts it. An envelope the remote cluster
   * refuses (size limits) is dropped and the rest written.
   */
  async relayAttestation(remote: StatusTarget, key: string, request: InternalRequest, attestation: Attestation, event: EventSpec | undefined): Promise<boolean> {
    const patch = remote.client.patchStatusMerge;
    if (!patch) throw new Error(`the status of ${key} cannot be patched through this client`);
    const ns = request.metadata.namespace!;
    const name = request.metadata.name!;
    let written: InternalRequest;
    let sent = attestation;
    try {
      written = await patch.call(remote.client, ns, name, { status: { attestation: sent } });
    } catch (e) {
      const code = statusCode(e);
      if (code === 404) return false;
      if (!sent.envelope || !isRefusedObject(e)) throw e;
      const { envelope: _dropped, ...rest } = sent;
      sent = { ...rest, envelopeOmitted: true, message: `${sent.message ?? ''}; the envelope was not copied here: the remote cluster refused it (${describeError(e)})` };
      try {
        written = await patch.call(remote.client, ns, name, { status: { attestation: sent } });
      } catch (e2) {
        if (statusCode(e2) === 404) return false;
        throw e2;
      }
    }
    this.remember(key, request, written);
    this.opts.log.info({ request: key, attestation: sent.state, digest: sent.digest, keyId: sent.keyId, envelopeBytes: sent.envelopeBytes }, sent.message ?? 'attestation relayed');
    if (event && eventWanted(this.opts.events ?? 'important', event)) {
      void remote.events.record(written, event.type, event.reason, event.message, this.opts.now());
    }
    return true;
  }
}
