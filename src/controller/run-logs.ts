/**
 * A run's logs, for a requester who asks for them (status.logs): from the
 * live PipelineRun's pods (each step's container, in task order) while the
 * run exists, from Tekton Results (results-client.ts) once it was pruned,
 * cut to the last MAX_LOG_BYTES; and LogRelay, which fetches them in the
 * background, one fetch per ask, for the reconcile to read without I/O.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import { describeError, statusCode } from '../kube/client.js';
import type { PipelineRun, TaskRun } from '../tekton/tekton-types.js';
import { MAX_LOG_BYTES, type FetchedLogs } from '../requests/archive-names.js';
import type { ResultsApi } from './results-client.js';

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
