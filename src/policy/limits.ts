/**
 * Limits that keep every request answerable and bounded: param sizes, and
 * timeouts (defaults, a maximum, whether "no timeout" is allowed, Tekton's
 * tasks + finally <= pipeline). Pure: no I/O.
 */
import { parseDuration, formatDuration } from '../util/duration.js';

/** Tekton's three timeouts of a PipelineRun (durations as written, e.g. "1h0m0s"). */
export interface Timeouts {
  pipeline?: string;
  tasks?: string;
  finally?: string;
}

export interface Limits {
  maxParamValueBytes: number;
  maxParamsBytes: number;
}

export interface TimeoutPolicy {
  defaults: Timeouts;
  /** Milliseconds; undefined: no maximum. */
  maximumMs: number | undefined;
  allowNoTimeout: boolean;
}

export type Verdict<T> = { ok: true; value: T } | { ok: false; message: string };

const q = (s: string) => JSON.stringify(s);
const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

/** Params within the limits; the message names the param, its size and the limit. */
export function checkParamSizes(params: Record<string, string>, limits: Limits, source: string): Verdict<null> {
  const tooLong = Object.entries(params)
    .filter(([, v]) => bytes(v) > limits.maxParamValueBytes)
    .map(([k, v]) => `${q(k)} (${bytes(v)} bytes)`)
    .sort();
  if (tooLong.length) {
    return { ok: false, message: `param values longer than the ${limits.maxParamValueBytes} bytes allowed by ${source} (limits.maxParamValueBytes): ${tooLong.join(', ')}; pass large data by reference (an image, a URL)` };
  }
  const total = Object.entries(params).reduce((n, [k, v]) => n + bytes(k) + bytes(v), 0);
  if (total > limits.maxParamsBytes) {
    return { ok: false, message: `the params add up to ${total} bytes, more than the ${limits.maxParamsBytes} allowed by ${source} (limits.maxParamsBytes); pass large data by reference (an image, a URL)` };
  }
  return { ok: true, value: null };
}

/**
 * The timeouts a PipelineRun gets: the request's, else the defaults; each at
 * most the maximum; 0s only if allowed; tasks + finally <= pipeline (when the
 * pipeline has one). `from` says where each value came from, for messages.
 */
export function effectiveTimeouts(requested: Timeouts | undefined, policy: TimeoutPolicy, source: string): Verdict<Timeouts | undefined> {
  const out: Timeouts = {};
  const from: Record<string, string> = {};
  for (const k of ['pipeline', 'tasks', 'finally'] as const) {
    const r = requested?.[k];
    const d = policy.defaults[k];
    if (r !== undefined) {
      out[k] = r;
      from[k] = `timeouts.${k} ${q(r)}`;
    } else if (d !== undefined) {
      out[k] = d;
      from[k] = `the default timeouts.${k} ${q(d)} of ${source}`;
    }
  }
  const ms: Partial<Record<keyof Timeouts, number>> = {};
  for (const [k, v] of Object.entries(out) as Array<[keyof Timeouts, string]>) {
    const n = parseDuration(v);
    if (n === undefined) return { ok: false, message: `${from[k]} is not a duration like 1h30m` };
    ms[k] = n;
    if (n === 0 && !policy.allowNoTimeout) {
      return { ok: false, message: `${from[k]} means no timeout, which ${source} does not allow (timeouts.allowNoTimeout); give a duration${policy.maximumMs !== undefined ? ` of at most ${formatDuration(policy.maximumMs)}` : ''}` };
    }
    if (policy.maximumMs !== undefined && n > policy.maximumMs) {
      return { ok: false, message: `${from[k]} is longer than the ${formatDuration(policy.maximumMs)} allowed by ${source} (timeouts.maximum)` };
    }
  }
  const p = ms.pipeline;
  if (p !== undefined && p > 0) {
    const t = ms.tasks ?? 0;
    const f = ms.finally ?? 0;
    if (t + f > p) {
      const parts = [from['tasks'], from['finally']].filter(Boolean).join(' + ');
      return { ok: false, message: `${parts} is longer than ${from['pipeline']}: tasks + finally must not exceed pipeline (Tekton's rule)` };
    }
  }
  return { ok: true, value: Object.keys(out).length ? out : undefined };
}
