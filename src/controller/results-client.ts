/**
 * The Tekton Results REST API as the controller calls it (--results-url),
 * with its own bearer token (the one it uses for the internal cluster;
 * Results checks it with a TokenReview and a SubjectAccessReview on
 * results.tekton.dev): a GET, a record's stored object, a run's stored logs,
 * and the verdict on a finished PipelineRun — does Results hold it finished,
 * and its logs?
 *
 * How Results marks a stored run (its pkg/watcher; the same in v0.15.0 and
 * v0.20.0, though v0.20 writes the annotations with server-side apply): the
 * watcher annotates the run with results.tekton.dev/result and …/record after
 * every upsert, and with …/log once it started sending the logs; it writes
 * results.tekton.dev/stored: "true" only when the logs API is off (with logs
 * on, nothing on the run says the final state or the logs are stored). So
 * the verdict asks the API itself: the record must hold the PipelineRun
 * finished, and the log record must say isStored.
 *
 * The cache of verdicts decide() reads is results-archive.ts; the logs a
 * requester asks for, run-logs.ts.
 */
import { request as httpsRequest } from 'node:https';
import type { PipelineRun } from '../tekton/tekton-types.js';
import { ANNOTATION_RESULTS_LOG, ANNOTATION_RESULTS_RECORD, type ArchiveVerdict } from '../requests/archive-names.js';

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
