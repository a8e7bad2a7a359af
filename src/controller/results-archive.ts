/**
 * Tekton Results, as the controller uses it: before a finished PipelineRun
 * is pruned, whether Results holds it (the run in its final state, and its
 * logs); and, for a requester who asks, the run's logs — from the live
 * PipelineRun while it exists, from Results once it was pruned.
 *
 * How Results marks a stored run (its pkg/watcher; the same in v0.15.0 and
 * v0.20.0, though v0.20 writes the annotations with server-side apply): the
 * watcher annotates the run with results.tekton.dev/result and …/record after
 * every upsert, and with …/log once it started sending the logs; it writes
 * results.tekton.dev/stored: "true" only when the logs API is off (with logs
 * on, nothing on the run says the final state or the logs are stored). So
 * the controller asks the Results API itself, with its own bearer token (the
 * one it uses for the internal cluster; Results checks it with a TokenReview
 * and a SubjectAccessReview on results.tekton.dev): the record must hold the
 * PipelineRun finished, and the log record must say isStored. Answers are
 * cached per run for a short while; a question is asked at most once at a time.
 */
import { request as httpsRequest } from 'node:https';
import type { Logger } from 'pino';
import type { CoreV1Api } from '@kubernetes/client-node';
import { describeError, statusCode } from '../kube/client.js';
import type { PipelineRun, TaskRun } from '../tekton/types.js';

import { ANNOTATION_RESULTS_LOG, ANNOTATION_RESULTS_RECORD, MAX_LOG_BYTES, type ArchiveVerdict, type FetchedLogs } from '../requests/archive-names.js';

export { ANNOTATION_LOGS, ANNOTATION_RESULTS_LOG, ANNOTATION_RESULTS_RECORD, ANNOTATION_RESULTS_STORED, MAX_LOG_BYTES, type ArchiveVerdict, type FetchedLogs } from '../requests/archive-names.js';

export interface ResultsApiOptions {
  /** e.g. https://tekton-results-api-service.tekton-pipelines.svc:8080 */
  url: string;
  /** PEM of the CA (or certificate) to trust for it; undefined: the system's. */
  ca?: string;
  /** The Authorization header (and any other) for each call. */
  headers: () => Promise<Record<string, string>>;
  /** Whether the run's logs must be stored too before it counts as stored (default true). */
  requireLogs?: boolean;
  timeoutMs?: number;
}

export class ResultsApi {
  constructor(private readonly opts: ResultsApiOptions) {}

  get url(): string {
    return this.opts.url;
  }

  /** GET a path of the REST API; the body as text, or an error with the status and Results' message. */
  async get(path: string): Promise<string> {
    const headers = await this.opts.headers();
    const url = new URL(path, this.opts.url);
    return new Promise((resolve, reject) => {
      const req = httpsRequest(url, { method: 'GET', headers: { Accept: 'application/json', ...headers }, ...(this.opts.ca ? { ca: this.opts.ca } : {}), timeout: this.opts.timeoutMs ?? 10_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          if ((res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 300) return resolve(body);
          let msg = body.trim().slice(0, 300);
          try {
            msg = String((JSON.parse(body) as { message?: string }).message ?? msg);
          } catch {
            // not JSON
          }
          reject(Object.assign(new Error(`Tekton Results answered ${res.statusCode} for ${url.pathname}: ${msg}`), { status: res.statusCode }));
        });
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`Tekton Results at ${this.opts.url} did not answer within ${this.opts.timeoutMs ?? 10_000} ms`)));
      req.on('error', (e) => reject(new Error(`Tekton Results at ${this.opts.url} is not reachable: ${e.message}`)));
      req.end();
    });
  }

  /** A record's data (JSON of the stored object), decoded. */
  async record(name: string): Promise<Record<string, unknown>> {
    const rec = JSON.parse(await this.get(`/apis/results.tekton.dev/v1alpha2/parents/${name}`)) as { data?: { value?: string } };
    const value = rec.data?.value;
    if (!value) throw new Error(`Tekton Results record ${name} holds no data`);
    return JSON.parse(Buffer.from(value, 'base64').toString('utf8')) as Record<string, unknown>;
  }

  /** The stored logs of a log name (parent/results/<uid>/logs/<uid>). */
  async log(name: string): Promise<string> {
    return this.get(`/apis/results.tekton.dev/v1alpha2/parents/${name}`);
  }

  /** Whether Results holds the run finished, and its logs (when required). */
  async verdict(pr: PipelineRun): Promise<ArchiveVerdict> {
    const a = pr.metadata.annotations ?? {};
    const record = a[ANNOTATION_RESULTS_RECORD];
    if (!record) return { stored: false, why: 'the Results watcher has not recorded the run yet' };
    const stored = await this.record(record);
    const cond = ((stored['status'] as { conditions?: Array<{ type?: string; status?: string }> } | undefined)?.conditions ?? []).find((c) => c.type === 'Succeeded');
    if (!cond || cond.status === 'Unknown') return { stored: false, why: `Results record ${record} holds the run unfinished` };
    const log = a[ANNOTATION_RESULTS_LOG];
    if (this.opts.requireLogs === false) return { stored: true, record, ...(log ? { log } : {}) };
    if (!log) return { stored: false, why: 'the Results watcher has not started storing the logs' };
    const logRecord = await this.record(log.replace('/logs/', '/records/'));
    const st = (logRecord['status'] ?? {}) as { isStored?: boolean; errorOnStoreMsg?: string };
    if (st.isStored !== true) return { stored: false, why: `Results has not finished storing the logs${st.errorOnStoreMsg ? ` (${st.errorOnStoreMsg})` : ''}` };
    return { stored: true, record, log };
  }
}

interface Entry {
  verdict: ArchiveVerdict;
  at: number;
  asking: boolean;
}

/**
 * The verdicts decide() sees: cached, refreshed in the background at most
 * every `refreshMs`. A run not asked about for a minute is forgotten.
 */
export class ResultsArchive {
  private readonly entries = new Map<string, Entry>();
  private readonly refreshMs: number;

  constructor(
    readonly api: ResultsApi,
    private readonly log: Logger,
    opts: { refreshMs?: number } = {},
  ) {
    this.refreshMs = opts.refreshMs ?? 1000;
  }

  /** What is known now about `pr` (no I/O): a verdict, or undefined when Results was not asked yet. */
  known(pr: PipelineRun): ArchiveVerdict | undefined {
    const e = this.entries.get(pr.metadata.uid ?? '');
    return e && e.at > 0 ? e.verdict : undefined;
  }

  /** Asks Results about `pr` unless it is known stored, being asked, or was asked within refreshMs; `done` once the answer is in. */
  ask(pr: PipelineRun, done: () => void = () => {}, now = Date.now()): void {
    const uid = pr.metadata.uid ?? '';
    let e = this.entries.get(uid);
    if (!e) {
      e = { verdict: { stored: false, why: 'not yet asked Tekton Results' }, at: 0, asking: false };
      this.entries.set(uid, e);
    }
    if (e.verdict.stored || e.asking || now - e.at < this.refreshMs) return;
    const entry = e;
    entry.asking = true;
    void this.api
      .verdict(pr)
      .then(
        (v) => {
          entry.verdict = v;
        },
        (err: unknown) => {
          entry.verdict = { stored: false, why: (err as Error).message };
          this.log.warn({ pipelineRun: pr.metadata.name, err: (err as Error).message }, 'cannot ask Tekton Results whether it stored a PipelineRun');
        },
      )
      .finally(() => {
        entry.at = Date.now();
        entry.asking = false;
        try {
          done();
        } catch {
          // Only enqueues a key.
        }
      });
    this.sweep(now);
  }

  /** How many finished PipelineRuns are waiting for Results (asked about within the last minute, not stored). */
  waiting(now = Date.now()): number {
    let n = 0;
    for (const e of this.entries.values()) if (!e.verdict.stored && now - e.at < 60_000) n++;
    return n;
  }

  private lastSweep = 0;
  private sweep(now: number): void {
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    for (const [uid, e] of this.entries) if (!e.asking && now - e.at > 60_000) this.entries.delete(uid);
  }
}

/** What a requester gets in status.logs. */

/** Keeps the end of `text` within MAX_LOG_BYTES (whole lines where possible). */
export function tail(text: string, max = MAX_LOG_BYTES): { text: string; truncated: boolean } {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= max) return { text, truncated: false };
  let cut = buf.subarray(buf.length - max).toString('utf8');
  if (cut.startsWith('\uFFFD')) cut = cut.replace(/^\uFFFD+/, '');
  const nl = cut.indexOf('\n');
  if (nl >= 0 && nl < cut.length - 1) cut = cut.slice(nl + 1);
  return { text: `[… earlier lines left out: only the last ${max} bytes fit]\n${cut}`, truncated: true };
}

export interface LogSources {
  namespace: string;
  core: CoreV1Api;
  taskRuns: { tryGet(namespace: string, name: string): Promise<TaskRun | undefined> };
  pipelineRuns: { tryGet(namespace: string, name: string): Promise<PipelineRun | undefined> };
  results?: ResultsApi;
}

/**
 * The logs of a request's run: from the live PipelineRun's pods (each step's
 * container, in task order) while it exists, else from Tekton Results.
 */
export async function fetchRunLogs(src: LogSources, pipelineRun: string | undefined, archivedLog: string | undefined): Promise<FetchedLogs> {
  const name = pipelineRun?.split('/')[1];
  const pr = name ? await src.pipelineRuns.tryGet(src.namespace, name) : undefined;
  if (pr) {
    const parts: string[] = [];
    for (const ref of (pr.status?.childReferences ?? []).filter((c) => !c.kind || c.kind === 'TaskRun')) {
      const tr = await src.taskRuns.tryGet(src.namespace, ref.name);
      const pod = tr?.status?.podName;
      const task = ref.pipelineTaskName ?? ref.name;
      if (!pod) {
        parts.push(`[${task}] (no pod yet)`);
        continue;
      }
      for (const step of tr?.status?.steps ?? []) {
        const container = step.container ?? `step-${step.name}`;
        try {
          const text = await src.core.readNamespacedPodLog({ namespace: src.namespace, name: pod, container });
          parts.push(...String(text).replace(/\n$/, '').split('\n').map((l) => `[${task} : ${step.name}] ${l}`));
        } catch (e) {
          parts.push(`[${task} : ${step.name}] (logs not readable: ${statusCode(e) === 404 ? 'the pod is gone' : describeError(e)})`);
        }
      }
    }
    return { source: 'PipelineRun', ...tail(`${parts.join('\n')}\n`) };
  }
  if (archivedLog && src.results) {
    try {
      return { source: 'TektonResults', ...tail(await src.results.log(archivedLog)) };
    } catch (e) {
      return { source: 'None', text: `The PipelineRun was pruned and its logs could not be read from Tekton Results: ${(e as Error).message}`, truncated: false };
    }
  }
  return {
    source: 'None',
    text: name
      ? `The PipelineRun ${pipelineRun} was pruned${src.results ? ', and Tekton Results has no logs recorded for it' : ' and this installation does not archive runs in Tekton Results'}.`
      : 'No PipelineRun was created for this request, so there are no logs.',
    truncated: false,
  };
}

/**
 * The logs being fetched for requesters' asks, one fetch per (request uid,
 * ask) at a time; an answer is kept until it was written (or for a minute).
 */
export class LogRelay {
  private readonly asks = new Map<string, { at: number; got?: FetchedLogs }>();

  constructor(private readonly fetch: (pipelineRun: string | undefined, archivedLog: string | undefined) => Promise<FetchedLogs>) {}

  /** What is known of the answer to `asked` for the request: the logs, 'fetching', or undefined (not asked: start() it). No I/O. */
  known(uid: string, asked: string): FetchedLogs | 'fetching' | undefined {
    const e = this.asks.get(`${uid}\n${asked}`);
    return e ? (e.got ?? 'fetching') : undefined;
  }

  /** Starts fetching the logs for `asked` unless it is under way or done; `done` is called once they are in. */
  start(uid: string, asked: string, pipelineRun: string | undefined, archivedLog: string | undefined, done: () => void = () => {}, now = Date.now()): void {
    const id = `${uid}\n${asked}`;
    if (this.asks.has(id)) return;
    const entry: { at: number; got?: FetchedLogs } = { at: now };
    this.asks.set(id, entry);
    void this.fetch(pipelineRun, archivedLog)
      .then(
        (got) => {
          entry.got = got;
        },
        (e: unknown) => {
          entry.got = { source: 'None', text: `The logs could not be read: ${(e as Error).message}`, truncated: false };
        },
      )
      .finally(() => {
        try {
          done();
        } catch {
          // Only enqueues a key.
        }
      });
    for (const [k, v] of this.asks) if (now - v.at > 60_000) this.asks.delete(k);
  }
}
