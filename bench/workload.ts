/**
 * Submitting requests as the remote requester identity, at a fixed rate or
 * all at once, and waiting for them to finish.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { INTERNAL_REQUEST, type InternalRequest } from '../src/api/types.js';
import { fromKubeConfig, statusCode, describeError, type ResourceClient } from '../src/kube/client.js';
import type { Observer, RequestRecord } from './observer.js';
import { sleep } from './stats.js';

export const BENCH_PIPELINE = 'bench';

/** Who creates the requests: one client, or (--kcp) the requester's client of each workspace. */
export type Requester = ResourceClient<InternalRequest> | ((workspace: string | undefined) => ResourceClient<InternalRequest>);

const clientOf = (r: Requester, workspace: string | undefined): ResourceClient<InternalRequest> => (typeof r === 'function' ? r(workspace) : r);

export interface WorkloadOptions {
  pass: number;
  runId: string;
  requests: number;
  /** Requests per second; undefined: burst. */
  rate: number | undefined;
  /** Creates in flight at most. */
  concurrency: number;
  /** Namespaces, or with --kcp "<workspace path>/<namespace>". */
  allowedNamespaces: string[];
  deniedNamespaces: string[];
  rejectedShare: number;
  /** Flood from allowedNamespaces[0], then one request from allowedNamespaces[1]. */
  noisyNeighbour: boolean;
  timeoutMs: number;
  /** After all requests are terminal: how long to wait for their PipelineRuns to be deleted. */
  drainMs: number;
  log: (msg: string) => void;
  /** Called once every create is answered, before the wait for the requests' ends (the burst is at its height then). */
  onAllCreated?: (records: readonly RequestRecord[]) => Promise<void>;
}

export interface WorkloadOutcome {
  records: RequestRecord[];
  /** --noisy-neighbour: the lone request, and how many flood requests were terminal when it was created. */
  lone?: { record: RequestRecord; floodTerminalAtCreate: number };
  firstSentAt: number;
  /** When the last create was answered. */
  lastSentAt: number;
  lastTerminalAt: number | undefined;
  /** All terminal (or given up) at this time; then PipelineRun deletions were waited for until endAt. */
  doneAt: number;
  endAt: number;
  timedOut: boolean;
}

/** Which requests go to a non-allowed namespace: evenly spread, share × N of them. */
export function isRejected(i: number, share: number): boolean {
  return Math.floor((i + 1) * share) > Math.floor(i * share);
}

let defaultShape: 'request' | 'pipeline' = 'request';
/** The shape every request of this run is created in (`--request-shape`; set once by runBenchmark). */
export function useRequestShape(shape: 'request' | 'pipeline'): void {
  defaultShape = shape;
}

export function requestBody(namespace: string, name: string, i: number, shape: 'request' | 'pipeline' = defaultShape): InternalRequest {
  const params = { image: `quay.io/bench/app@sha256:${i.toString(16).padStart(64, '0')}` };
  return {
    apiVersion: 'appstudio.redhat.com/v1alpha1',
    kind: 'InternalRequest',
    metadata: { name, namespace },
    // `pipeline`: the cluster resolver by name alone, as the Go controller's requesters write it (it appends namespace and kind; this controller fills them in).
    spec: shape === 'pipeline' ? { pipeline: { pipelineRef: { resolver: 'cluster', params: [{ name: 'name', value: BENCH_PIPELINE }] } }, params } : { request: BENCH_PIPELINE, params },
  };
}

export async function requesterClient(kc: KubeConfig): Promise<ResourceClient<InternalRequest>> {
  return (await fromKubeConfig('remote', kc)).resource<InternalRequest>(INTERNAL_REQUEST);
}

/** Creates one request, retrying transient failures; a 409 on a retry means an earlier attempt got through. */
export async function createOne(client: ResourceClient<InternalRequest>, observer: Observer, rec: RequestRecord, body: InternalRequest): Promise<void> {
  rec.sentAt = performance.now();
  for (let attempt = 0; ; attempt++) {
    try {
      const created = await client.create(rec.namespace, body);
      rec.ackAt = performance.now();
      if (created.metadata.uid) observer.setUid(rec, created.metadata.uid);
      return;
    } catch (e) {
      const code = statusCode(e);
      if (code === 409 && attempt > 0) {
        rec.ackAt = performance.now();
        const got = await client.tryGet(rec.namespace, rec.name);
        if (got?.metadata.uid) observer.setUid(rec, got.metadata.uid);
        return;
      }
      if (attempt >= 3 || (code !== undefined && code < 500 && code !== 429)) {
        rec.createError = describeError(e);
        return;
      }
      await sleep(200 * (attempt + 1));
    }
  }
}

/**
 * Creates one request, retrying until the deadline the errors that may pass
 * (no answer, 5xx, 429, 403); on a 409 returns the request that exists.
 * Undefined: not created by the deadline. For the chaos run and the soak,
 * where an API server may be down for a while.
 */
export async function createUntilDone(client: ResourceClient<InternalRequest>, body: InternalRequest, deadline: number): Promise<InternalRequest | undefined> {
  for (let attempt = 0; Date.now() < deadline; attempt++) {
    try {
      return await client.create(body.metadata.namespace ?? '', body);
    } catch (e) {
      const code = statusCode(e);
      if (code === 409) return client.tryGet(body.metadata.namespace ?? '', body.metadata.name ?? '').catch(() => undefined);
      if (code !== undefined && code < 500 && code !== 429 && code !== 403) throw e;
      await sleep(Math.min(2000, 200 * (attempt + 1)));
    }
  }
  return undefined;
}

/** A request's record: its namespace, and workspace where the target names one ("root:ws/ns"). */
function newRecord(target: string, name: string, pass: number, allowed: boolean): RequestRecord {
  const i = target.lastIndexOf('/');
  const namespace = i < 0 ? target : target.slice(i + 1);
  return { key: `${namespace}/${name}`, namespace, ...(i < 0 ? {} : { workspace: target.slice(0, i) }), name, pass, allowed, prUids: new Set(), prNames: new Set() };
}

export async function runWorkload(requester: Requester, observer: Observer, o: WorkloadOptions): Promise<WorkloadOutcome> {
  const records: RequestRecord[] = [];
  let allowedIdx = 0;
  let deniedIdx = 0;
  for (let i = 0; i < o.requests; i++) {
    const rejected = o.deniedNamespaces.length > 0 && isRejected(i, o.rejectedShare);
    const namespace = o.noisyNeighbour
      ? o.allowedNamespaces[0]!
      : rejected
        ? o.deniedNamespaces[deniedIdx++ % o.deniedNamespaces.length]!
        : o.allowedNamespaces[allowedIdx++ % o.allowedNamespaces.length]!;
    const name = `${o.runId}-p${o.pass}-${String(i).padStart(5, '0')}`;
    const rec = newRecord(namespace, name, o.pass, !rejected);
    records.push(rec);
    observer.track(rec);
  }

  const t0 = performance.now();
  const inflight = new Set<Promise<void>>();
  const maxInflight = o.rate === undefined ? o.concurrency : Math.max(o.concurrency, 256);
  for (let i = 0; i < records.length; i++) {
    if (o.rate !== undefined) {
      const due = t0 + (i * 1000) / o.rate;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
    }
    while (inflight.size >= maxInflight) await Promise.race(inflight);
    const rec = records[i]!;
    const p = createOne(clientOf(requester, rec.workspace), observer, rec, requestBody(rec.namespace, rec.name, i)).finally(() => inflight.delete(p));
    inflight.add(p);
  }
  await Promise.all(inflight);
  let lone: WorkloadOutcome['lone'];
  if (o.noisyNeighbour) {
    // The flood is created (and mostly still queued): now one request from another tenant.
    const name = `${o.runId}-p${o.pass}-lone`;
    const rec = newRecord(o.allowedNamespaces[1]!, name, o.pass, true);
    const floodTerminalAtCreate = records.filter((r) => r.terminalAt !== undefined).length;
    records.push(rec);
    observer.track(rec);
    await createOne(clientOf(requester, rec.workspace), observer, rec, requestBody(rec.namespace, name, records.length));
    lone = { record: rec, floodTerminalAtCreate };
  }
  // The creates are done when the last one is answered.
  const lastSentAt = Math.max(...records.map((r) => r.ackAt ?? r.sentAt ?? 0));
  const firstSentAt = Math.min(...records.map((r) => r.sentAt ?? Infinity));
  const failedCreates = records.filter((r) => r.createError).length;
  o.log(`pass ${o.pass}: ${records.length - failedCreates} requests created in ${((lastSentAt - t0) / 1000).toFixed(1)} s${failedCreates ? ` (${failedCreates} creates failed)` : ''}; waiting for them to finish`);
  await o.onAllCreated?.(records);

  // Counted from the last create, so that slow --rate runs are not cut short.
  const deadline = performance.now() + o.timeoutMs;
  let timedOut = false;
  let lastReport = performance.now();
  for (;;) {
    const open = records.filter((r) => !r.createError && r.terminalAt === undefined).length;
    if (open === 0) break;
    if (performance.now() > deadline) {
      timedOut = true;
      o.log(`pass ${o.pass}: timed out with ${open} requests not finished`);
      break;
    }
    if (performance.now() - lastReport > 10_000) {
      lastReport = performance.now();
      o.log(`pass ${o.pass}: ${records.length - open}/${records.length} finished`);
    }
    await observer.changed(250);
  }
  const doneAt = performance.now();
  const terminals = records.map((r) => r.terminalAt).filter((x): x is number => x !== undefined);
  const lastTerminalAt = terminals.length ? Math.max(...terminals) : undefined;

  // The lifecycle ends with the PipelineRun's removal: wait for it (bounded).
  const drainDeadline = doneAt + o.drainMs;
  const live = () => records.filter((r) => r.prUids.size > 0 && r.prDeletedAt === undefined).length;
  while (live() > 0 && performance.now() < drainDeadline) await observer.changed(250);
  return { records, ...(lone ? { lone } : {}), firstSentAt, lastSentAt, lastTerminalAt, doneAt, endAt: performance.now(), timedOut };
}
