/**
 * The names and plain values Tekton Results' part of the controller shares
 * with decide(): the annotations Results' watcher sets on a run and the one a
 * requester sets to ask for logs, and what is known of a run's archive and
 * of fetched logs. No I/O (that is results-client.ts, results-archive.ts and
 * run-logs.ts).
 */
export const ANNOTATION_RESULTS_RECORD = 'results.tekton.dev/record';
export const ANNOTATION_RESULTS_LOG = 'results.tekton.dev/log';
export const ANNOTATION_RESULTS_STORED = 'results.tekton.dev/stored';
/** Set by a requester (any new value) to ask for the run's logs in status.logs. */
export const ANNOTATION_LOGS = 'internal-services.dev/logs';
/** status.logs.text holds at most this many bytes: the end of the logs. */
export const MAX_LOG_BYTES = 60_000;

export type ArchiveVerdict = { stored: true; record: string; log?: string } | { stored: false; why: string };

export interface FetchedLogs {
  source: 'PipelineRun' | 'TektonResults' | 'None';
  text: string;
  truncated: boolean;
}
