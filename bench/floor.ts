/**
 * What sets the time to ready in scale mode. With M finished requests the
 * controller is ready once the remote apiserver has streamed all M of them;
 * how fast it can is measured here, on the same environment, after the
 * controller's measurements:
 *
 * - `startCpu`: the CPU the remote apiserver and etcd spent from the
 *   controller's start to its ready line (beside the controller's own);
 * - `bareList`: one streamed list of the same requests (a watch with
 *   sendInitialEvents, as the controller's informer opens it) read by a
 *   client that neither parses nor keeps the events: it counts their lines
 *   up to the bookmark that ends the initial events. Its time is the
 *   floor under "ready" on this machine: a controller that cost no CPU at
 *   all would be ready then.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { INTERNAL_REQUEST } from '../src/api/types.js';
import type { Setup } from './setup.js';
import { round } from './stats.js';

const INITIAL_EVENTS_END = '"k8s.io/initial-events-end":"true"';
const BOOKMARK = '{"type":"BOOKMARK"';

export interface BareListResult {
  /** From the request sent to the bookmark that ends the initial events. */
  ms: number;
  /** Events before that bookmark (the requests listed). */
  events: number;
  megabytes: number;
  /** CPU the remote apiserver and etcd spent meanwhile. */
  remoteApiserverCpuSeconds: number;
  etcdCpuSeconds: number;
}

/**
 * Reads a watch stream chunk by chunk without parsing its events: once the
 * bookmark that ends the initial events has come whole, returns how many
 * events came before it; until then undefined. Only a BOOKMARK line counts
 * as the end (an object may carry the annotation's text).
 */
export function initialEventsReader(): (chunk: string) => number | undefined {
  let events = 0;
  let partial = '';
  return (chunk) => {
    let start = 0;
    for (let nl = chunk.indexOf('\n'); nl !== -1; nl = chunk.indexOf('\n', start)) {
      const line = partial + chunk.slice(start, nl);
      partial = '';
      start = nl + 1;
      if (line.startsWith(BOOKMARK) && line.includes(INITIAL_EVENTS_END)) return events;
      if (line.length) events++;
    }
    partial += chunk.slice(start);
    return undefined;
  };
}

/** CPU seconds of the environment's processes by name (remoteApiserver, etcd, …), now. */
export function envCpu(s: Pick<Setup, 'envProcs'>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of s.envProcs) out[p.name] = p.sampler.sample().cpuSeconds;
  return out;
}

/** `later - earlier` for one process, rounded; 0 where either lacks it. */
export function cpuBetween(earlier: Record<string, number>, later: Record<string, number>, name: string): number {
  const a = earlier[name];
  const b = later[name];
  return a === undefined || b === undefined ? 0 : round(b - a, 2);
}

/**
 * Streams every InternalRequest of the cluster once, as a streamed list, and
 * times it. Fails when the server ends the stream, refuses it, or sends no
 * end bookmark within `timeoutMs`.
 */
export async function bareStreamedList(kc: KubeConfig, s: Pick<Setup, 'envProcs'>, timeoutMs: number): Promise<BareListResult> {
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error('bare streamed list: the kubeconfig names no server');
  const { group, version, plural } = INTERNAL_REQUEST;
  const url = new URL(`${server.replace(/\/+$/, '')}/apis/${group}/${version}/${plural}`);
  for (const [k, v] of Object.entries({ watch: 'true', sendInitialEvents: 'true', resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: 'true' })) url.searchParams.set(k, v);
  const opts: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  const before = envCpu(s);
  const t0 = performance.now();
  const counted = await new Promise<{ events: number; bytes: number }>((resolve, reject) => {
    const lib = url.protocol === 'http:' ? http : https;
    const req = lib.request(url, { ...opts, method: 'GET', headers: { ...(opts.headers as http.OutgoingHttpHeaders | undefined), accept: 'application/json' }, agent: false });
    const timer = setTimeout(() => req.destroy(new Error(`bare streamed list: no end of the initial events after ${timeoutMs} ms`)), timeoutMs);
    let settled = false;
    const end = (err: Error | undefined, v?: { events: number; bytes: number }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      if (err) reject(err);
      else resolve(v!);
    };
    req.on('error', (e) => end(e));
    req.on('response', (res) => {
      if (res.statusCode !== 200) return end(new Error(`bare streamed list: HTTP ${res.statusCode}`));
      let bytes = 0;
      const read = initialEventsReader();
      res.setEncoding('latin1');
      res.on('data', (chunk: string) => {
        bytes += chunk.length;
        const events = read(chunk);
        if (events !== undefined) end(undefined, { events, bytes });
      });
      res.on('end', () => end(new Error('bare streamed list: the server ended the stream before the end of the initial events')));
    });
    req.end();
  });
  const ms = performance.now() - t0;
  const after = envCpu(s);
  return {
    ms: round(ms, 0),
    events: counted.events,
    megabytes: round(counted.bytes / 1e6, 1),
    remoteApiserverCpuSeconds: cpuBetween(before, after, 'remoteApiserver'),
    etcdCpuSeconds: cpuBetween(before, after, 'etcd'),
  };
}
