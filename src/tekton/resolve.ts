/**
 * Remote resolution through Tekton's own API: a ResolutionRequest
 * (resolution.tekton.dev/v1beta1) that Tekton's resolvers answer with the
 * resolved file and where exactly it came from (for git: the commit).
 *
 * Resolution is I/O and takes a while, so it is split in two: this file is
 * the pure half (what to ask, and outcomeOfResolution(), which reads a
 * ResolutionRequest as a plain value, with a deadline of our own); the I/O
 * half, startResolution() (resolution-start.ts), creates the
 * ResolutionRequest (idempotent: its name is given by the caller) — a resolver whose failure cannot be written (seen without Tekton's
 * webhook) leaves the request without any condition for ever.
 */
import type { KubeObject } from '../kube/client.js';

export const RESOLUTION_REQUEST = { group: 'resolution.tekton.dev', version: 'v1beta1', plural: 'resolutionrequests' } as const;
/** Tekton's resolvers pick the requests of their type by this label. */
export const LABEL_RESOLVER_TYPE = 'resolution.tekton.dev/type';

export interface RefSource {
  uri: string;
  /** e.g. {sha1: <commit>} for git, {sha256: …} for bundles. */
  digest: Record<string, string>;
  entryPoint: string;
}

export interface ResolutionRequest extends KubeObject {
  spec?: { params?: Array<{ name: string; value: unknown }>; url?: string };
  status?: {
    data?: string;
    refSource?: Partial<RefSource>;
    source?: Partial<RefSource>;
    conditions?: Array<{ type?: string; status?: string; reason?: string; message?: string }>;
  };
}

export type Resolution =
  | { state: 'pending'; waitedMs: number }
  /** content: the file's bytes as the resolver sent them (read with src/policy/one-reading.ts); a string in tests. */
  | { state: 'resolved'; content: Uint8Array | string; refSource: RefSource | undefined }
  | { state: 'failed'; reason: string; message: string };

/** The ResolutionRequest for a resolver and its params (name chosen by the caller, e.g. from a request's uid). */
export function resolutionRequest(namespace: string, name: string, resolver: string, params: ReadonlyArray<{ name: string; value: string }>, labels: Record<string, string> = {}): ResolutionRequest {
  return {
    apiVersion: `${RESOLUTION_REQUEST.group}/${RESOLUTION_REQUEST.version}`,
    kind: 'ResolutionRequest',
    metadata: { name, namespace, labels: { ...labels, [LABEL_RESOLVER_TYPE]: resolver } },
    spec: { params: params.map((p) => ({ name: p.name, value: p.value })) },
  };
}

/**
 * What a ResolutionRequest says, as a value: resolved (the file's text and
 * its source), failed (the resolver's reason and message), or pending; a
 * pending one older than `deadlineMs` (from its creationTimestamp) is failed
 * with a message saying so.
 */
export function outcomeOfResolution(rr: ResolutionRequest, now: Date, deadlineMs: number): Resolution {
  const c = rr.status?.conditions?.find((x) => x.type === 'Succeeded');
  if (c?.status === 'True' && typeof rr.status?.data === 'string') {
    // Bytes, not text: decoding is one-reading.ts's (invalid UTF-8 refused, not replaced).
    const content = Buffer.from(rr.status.data, 'base64');
    return { state: 'resolved', content, refSource: refSourceOf(rr) };
  }
  if (c?.status === 'False') return { state: 'failed', reason: c.reason || 'ResolutionFailed', message: c.message || 'the resolver gave no message' };
  const created = Date.parse(rr.metadata?.creationTimestamp ?? '');
  const waitedMs = Number.isNaN(created) ? 0 : Math.max(0, now.getTime() - created);
  if (waitedMs > deadlineMs) {
    const resolver = rr.metadata?.labels?.[LABEL_RESOLVER_TYPE] ?? '?';
    return {
      state: 'failed',
      reason: 'ResolutionTimedOut',
      message: `the ${JSON.stringify(resolver)} resolver did not answer within ${Math.round(deadlineMs / 1000)} s (ResolutionRequest ${rr.metadata?.namespace ?? ''}/${rr.metadata?.name ?? ''})`,
    };
  }
  return { state: 'pending', waitedMs };
}

function refSourceOf(rr: ResolutionRequest): RefSource | undefined {
  const s = rr.status?.refSource ?? rr.status?.source;
  if (!s?.uri) return undefined;
  return { uri: s.uri, digest: { ...(s.digest ?? {}) }, entryPoint: s.entryPoint ?? '' };
}
