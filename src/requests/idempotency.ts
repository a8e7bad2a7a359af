/**
 * Idempotent retries: a request may carry an idempotency key (the label
 * internal-services.appstudio.redhat.com/idempotency-key, e.g. set by the CLI
 * from the requesting PipelineRun's uid and the Pipeline). While an earlier
 * request of the same namespace with the same key and the same spec is
 * running or has succeeded, a new one does not run again: it follows the
 * earlier one and ends with its outcome and results. An earlier one that
 * failed or was rejected lets the new one run. Pure: no I/O.
 */
import { createHash } from 'node:crypto';
import type { InternalRequest, InternalRequestSpec } from '../api/types.js';
import { LABEL_IDEMPOTENCY_KEY } from '../tekton/pipelinerun.js';

export { LABEL_IDEMPOTENCY_KEY };

/** Kept on the slim copy of a finished request in the cache (never written to a cluster). */
export const ANNOTATION_SPEC_HASH = 'internal-services.appstudio.redhat.com/spec-hash';

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v as object).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])]));
  return v;
}

export function specHash(spec: InternalRequestSpec | undefined): string {
  return createHash('sha256').update(JSON.stringify(canonical(spec ?? {}))).digest('hex').slice(0, 32);
}

export function idempotencyKeyOf(req: Pick<InternalRequest, 'metadata'>): string | undefined {
  const k = req.metadata.labels?.[LABEL_IDEMPOTENCY_KEY];
  return k ? k : undefined;
}

/** An earlier request with the same key, as the controller found it. */
export interface Earlier {
  name: string;
  uid: string;
  sameSpec: boolean;
  state: 'active' | 'succeeded' | 'failed' | 'rejected';
  /** For a succeeded one: its results and completion (read from the cluster). */
  results?: Record<string, string>;
  pipelineRun?: string;
  message?: string;
}

export type Follow =
  | { kind: 'none' }
  | { kind: 'refuse'; message: string }
  | { kind: 'follow'; earlier: Earlier }
  | { kind: 'copy'; earlier: Earlier };

/** What a new request with an idempotency key does, given the earlier ones (oldest first). */
export function followOf(key: string | undefined, earlier: readonly Earlier[]): Follow {
  if (!key) return { kind: 'none' };
  const live = earlier.filter((e) => e.state === 'active' || e.state === 'succeeded');
  const first = live[0];
  if (!first) return { kind: 'none' };
  if (!first.sameSpec) {
    return {
      kind: 'refuse',
      message: `idempotency key ${JSON.stringify(key)} is already used by request ${JSON.stringify(first.name)} with a different spec; use a new key for different work, or the same spec to follow it`,
    };
  }
  return first.state === 'succeeded' ? { kind: 'copy', earlier: first } : { kind: 'follow', earlier: first };
}

/** The name of the index of requests by idempotency key (src/remotes/set.ts RequestIndex). */
export const IDEMPOTENCY_INDEX = 'idempotency-key';
