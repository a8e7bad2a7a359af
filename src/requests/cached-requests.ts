/**
 * What the caches keep of each object. The controller never reads
 * managedFields or kubectl's last-applied annotation (a status PUT leaves
 * them as they are when absent), so no cache keeps them. A finished request
 * is never acted on again: its params and results, which may be large, are
 * dropped, and what is left is kept small (see `slimRequest`), because with
 * a long history in view finished requests are most of the process's memory.
 */
import { ANNOTATION_LOGS } from './archive-names.js';
import { FINISHED, isFinished, rfc3339, succeededCondition, SUCCEEDED } from '../api/conditions.js';
import type { Condition, InternalRequest, ObjectMeta } from '../api/types.js';
import { ANNOTATION_SPEC_HASH, idempotencyKeyOf, LABEL_IDEMPOTENCY_KEY, specHash } from './idempotency.js';

export function slimMeta<T extends { metadata?: { managedFields?: unknown; annotations?: Record<string, string> } }>(obj: T): T {
  const md = obj.metadata;
  if (md) {
    delete md.managedFields;
    if (md.annotations?.[LAST_APPLIED]) {
      delete md.annotations[LAST_APPLIED];
      if (!Object.keys(md.annotations).length) delete md.annotations;
    }
  }
  return obj;
}

/**
 * What the cache keeps of a request: a live one as it is (without
 * managedFields and the last-applied annotation), a finished one as a
 * `FinishedRequest` record.
 */
/** kcp's annotation naming an object's logical cluster (its workspace), which a finished request's record keeps. */
export const ANNOTATION_KCP_CLUSTER = 'kcp.io/cluster';

export function slimRequest(req: InternalRequest): InternalRequest {
  if (!isFinished(req)) return slimMeta(req);
  return FinishedRequest.of(req);
}

/** Strings kept once however many records hold them (namespaces, Pipeline names, reasons), up to a bound. */
class Interner<V> {
  private readonly values = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(key: string, make: () => V): V {
    const v = this.values.get(key);
    if (v !== undefined) return v;
    const made = make();
    if (this.values.size < this.max) this.values.set(key, made);
    return made;
  }
}

interface PackedOutcome {
  readonly status: string;
  readonly reason: string;
}

/** What a record keeps only when a request has it (rare, or too irregular to pack). */
interface Extra {
  deletionTimestamp?: string;
  /** Finalizers still on it (another controller's, such as the incumbent's, to be released: incumbent.ts). */
  finalizers?: string[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  creationTimestamp?: string;
  lastTransitionTime?: string;
  /** Where Tekton Results keeps the run (status.archive), when it does. */
  archive?: { record?: string; log?: string };
  /** The internal-services.dev/logs value status.logs answered. */
  logsAnswered?: string;
  /** Tekton Chains: that the attestation was relayed (its state and digest only). */
  attestation?: { state: string; digest?: string };
  /** Status fields neither dropped nor slimmed (below): kept as they are. */
  status?: Record<string, unknown>;
}

/**
 * The status fields a finished request's record does not keep, and why. A
 * finished request is never acted on again, and with a long history in view
 * its records are most of the process's memory; requesters and auditors read
 * these fields from the cluster, never from this cache.
 */
export const DROPPED_WHEN_FINISHED: Readonly<Record<string, string>> = Object.freeze({
  results: 'the Pipeline\'s results: large, written once with the outcome',
  pipeline: 'what was checked and ran: written once, read by requesters from the cluster',
  approval: 'the approver\'s decision: written before the run, never read again',
  followed: 'the earlier request a follower followed: written once',
  pipelineRun: 'the run\'s name: derived from the request\'s uid whenever needed',
  startTime: 'written once',
  completionTime: 'the outcome\'s lastTransitionTime is kept instead',
  observedGeneration: 'the spec is immutable: a finished request has nothing more to observe',
});

/** The status fields a record keeps in part: what the controller still reads of a finished request. */
export const SLIMMED_WHEN_FINISHED: Readonly<Record<string, string>> = Object.freeze({
  conditions: 'the outcome (status, reason, lastTransitionTime) of conditions[0]; messages dropped',
  logs: 'which ask was answered (request), not the logs themselves',
  attestation: 'that Tekton Chains\' attestation was relayed: its state and digest',
  archive: 'Tekton Results\' record and log record, as they are',
});

/**
 * Every other status field (one added to the schema since, say) is kept as it
 * is: a new field is never dropped silently; dropping it is a decision made
 * above, with its reason (test/unit/cached-requests.test.ts checks the schema against
 * these lists).
 */
function otherStatus(status: InternalRequest['status']): Record<string, unknown> | undefined {
  if (!status) return undefined;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(status)) if (v !== undefined && !(k in DROPPED_WHEN_FINISHED) && !(k in SLIMMED_WHEN_FINISHED)) out[k] = v;
  return Object.keys(out).length ? out : undefined;
}

const strings = new Interner<string>(10_000);
const outcomes = new Interner<PackedOutcome>(1_000);
const specs = new Interner<InternalRequest['spec']>(10_000);
const API_VERSION_VALUE: InternalRequest['apiVersion'] = 'appstudio.redhat.com/v1alpha1';

const RFC3339_SECONDS = /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\dZ$/;

/**
 * Seconds since the epoch of an RFC 3339 second-precision time, or NaN when
 * the text is anything else (then kept as text): only a text that the number
 * gives back exactly is packed. The form is checked by pattern and the day by
 * the parsed date (a 30 February rolls over), which is what a round trip
 * through toISOString checks, at a fraction of its cost (this runs twice for
 * every finished request listed).
 */
function packTime(t: string | undefined): number {
  if (t === undefined || !RFC3339_SECONDS.test(t)) return NaN;
  const ms = Date.parse(t);
  if (!Number.isFinite(ms) || new Date(ms).getUTCDate() !== Number(t.slice(8, 10))) return NaN;
  return ms / 1000;
}

/**
 * A finished request, compactly: it is never acted on again, so the cache
 * keeps only what tells that it is finished (outcome and when), which
 * incarnation of the name it is (uid, resourceVersion, generation), when it
 * was created (the order of idempotent retries), what idempotent retries
 * compare with, and (Tekton Chains) whether its attestation was relayed.
 * One object of ten fields, times as numbers, strings that
 * repeat (namespace, Pipeline name, outcome) shared: about half the bytes of
 * the same data as a plain object tree (`node --expose-gc
 * dist/bench/footprint.js` measures both).
 *
 * It reads like an InternalRequest (`metadata` is a view of the record
 * itself; `status` and `spec` are made when read) and serialises as one
 * (`toJSON`). It is read-only, and never written back to a cluster: a
 * finished request gets no status writes (only, with Tekton Chains, a merge
 * patch that adds status.attestation).
 */
export class FinishedRequest {
  private constructor(
    readonly name: string | undefined,
    readonly namespace: string | undefined,
    readonly uid: string | undefined,
    readonly resourceVersion: string | undefined,
    private readonly gen: number | undefined,
    private readonly created: number,
    private readonly finished: number,
    private readonly outcome: PackedOutcome,
    readonly spec: InternalRequest['spec'],
    private readonly extra: Extra | undefined,
  ) {}

  static of(req: InternalRequest): FinishedRequest {
    if (req instanceof FinishedRequest) return req;
    const md = req.metadata;
    const c = succeededCondition(req)!;
    const extra: Extra = {};
    const created = packTime(md.creationTimestamp);
    if (Number.isNaN(created) && md.creationTimestamp !== undefined) extra.creationTimestamp = md.creationTimestamp;
    const finished = packTime(c.lastTransitionTime);
    if (Number.isNaN(finished) && c.lastTransitionTime !== undefined) extra.lastTransitionTime = c.lastTransitionTime;
    if (md.deletionTimestamp) extra.deletionTimestamp = md.deletionTimestamp;
    if (md.finalizers?.length) extra.finalizers = md.finalizers.map((f) => strings.get(f, () => f));
    const att = req.status?.attestation;
    if (att) extra.attestation = { state: att.state, ...(att.digest ? { digest: att.digest } : {}) };
    // What idempotent retries need to find it and compare with it.
    const idem = idempotencyKeyOf(req);
    if (idem) {
      extra.labels = { [LABEL_IDEMPOTENCY_KEY]: idem };
      extra.annotations = { [ANNOTATION_SPEC_HASH]: specHash(req.spec) };
    }
    // What a requester's ask for the logs needs (the ask and the answer's
    // key; the logs themselves are not kept), and Results' record.
    const asked = md.annotations?.[ANNOTATION_LOGS];
    if (asked !== undefined) extra.annotations = { ...extra.annotations, [ANNOTATION_LOGS]: asked };
    // Where it lives, for a provider that routes by it (kcp's logical
    // cluster: src/remotes/kcp-shard.ts); interned, few values.
    const cluster = md.annotations?.[ANNOTATION_KCP_CLUSTER];
    if (cluster !== undefined) extra.annotations = { ...extra.annotations, [ANNOTATION_KCP_CLUSTER]: strings.get(cluster, () => cluster) };
    const answered = req.status?.logs?.request;
    if (answered !== undefined) extra.logsAnswered = answered;
    const archive = req.status?.archive;
    if (archive?.record) extra.archive = { record: archive.record, ...(archive.log ? { log: archive.log } : {}) };
    const other = otherStatus(req.status);
    if (other) extra.status = other;
    const request = req.spec?.request;
    const spec: InternalRequest['spec'] =
      request !== undefined
        ? specs.get(request, () => Object.freeze({ request }))
        : ({ pipeline: req.spec?.pipeline ? { pipelineRef: req.spec.pipeline.pipelineRef } : undefined } as InternalRequest['spec']);
    return new FinishedRequest(
      md.name,
      md.namespace === undefined ? undefined : strings.get(md.namespace, () => md.namespace!),
      md.uid,
      md.resourceVersion,
      md.generation,
      created,
      finished,
      outcomes.get(`${c.status}/${c.reason}`, () => Object.freeze({ status: c.status, reason: c.reason })),
      spec,
      Object.keys(extra).length ? extra : undefined,
    );
  }

  get apiVersion(): InternalRequest['apiVersion'] {
    return API_VERSION_VALUE;
  }

  get kind(): InternalRequest['kind'] {
    return 'InternalRequest';
  }

  /** The object's metadata: the record itself, which has its fields. */
  get metadata(): ObjectMeta {
    return this as unknown as ObjectMeta;
  }

  get generation(): number | undefined {
    return this.gen;
  }

  get creationTimestamp(): string | undefined {
    return Number.isNaN(this.created) ? this.extra?.creationTimestamp : rfc3339(new Date(this.created * 1000));
  }

  get deletionTimestamp(): string | undefined {
    return this.extra?.deletionTimestamp;
  }

  get finalizers(): string[] | undefined {
    return this.extra?.finalizers;
  }

  get labels(): Record<string, string> | undefined {
    return this.extra?.labels;
  }

  get annotations(): Record<string, string> | undefined {
    return this.extra?.annotations;
  }

  get status(): NonNullable<InternalRequest['status']> {
    const lastTransitionTime = Number.isNaN(this.finished) ? this.extra?.lastTransitionTime : rfc3339(new Date(this.finished * 1000));
    const attestation = this.extra?.attestation;
    return {
      ...(this.extra?.status as NonNullable<InternalRequest['status']> | undefined),
      conditions: [{ type: SUCCEEDED, status: this.outcome.status, reason: this.outcome.reason, message: '', ...(lastTransitionTime !== undefined ? { lastTransitionTime } : {}) } as Condition],
      ...(this.extra?.archive ? { archive: this.extra.archive } : {}),
      ...(this.extra?.logsAnswered !== undefined ? { logs: { request: this.extra.logsAnswered } } : {}),
      ...(attestation ? { attestation: { ...attestation } as NonNullable<InternalRequest['status']>['attestation'] } : {}),
    };
  }

  /** What is known finished: always (isFinished's fast path, which makes no status object). */
  get [FINISHED](): true {
    return true;
  }

  toJSON(): InternalRequest {
    const md = this.metadata;
    return {
      apiVersion: this.apiVersion,
      kind: this.kind,
      metadata: {
        name: md.name,
        namespace: md.namespace,
        uid: md.uid,
        resourceVersion: md.resourceVersion,
        ...(md.generation !== undefined ? { generation: md.generation } : {}),
        ...(md.creationTimestamp !== undefined ? { creationTimestamp: md.creationTimestamp } : {}),
        ...(md.deletionTimestamp !== undefined ? { deletionTimestamp: md.deletionTimestamp } : {}),
        ...(md.finalizers ? { finalizers: [...md.finalizers] } : {}),
        ...(md.labels ? { labels: { ...md.labels } } : {}),
        ...(md.annotations ? { annotations: { ...md.annotations } } : {}),
      },
      spec: this.spec,
      status: this.status,
    };
  }
}

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

