/**
 * What a failed PipelineRun's TaskRuns say, for the request's status: read
 * from the internal cluster when a request's run has failed (best effort).
 */
import type { Logger } from 'pino';
import { describeError } from '../kube/client.js';
import type { PipelineRun, TaskRun } from '../tekton/tekton-types.js';

/**
 * The pipeline tasks whose TaskRuns failed, each with Tekton's message for
 * it (which step, which exit code), e.g. `sign ("step-sign" exited with
 * code 3: Error)` (best effort).
 */
export async function failedTasksOf(taskRuns: { tryGet(namespace: string, name: string): Promise<TaskRun | undefined> }, namespace: string, pr: PipelineRun, log: Logger): Promise<string[]> {
  const refs = (pr.status?.childReferences ?? []).filter((c) => !c.kind || c.kind === 'TaskRun');
  const failed: string[] = [];
  await Promise.all(
    refs.map(async (ref) => {
      try {
        const tr = await taskRuns.tryGet(namespace, ref.name);
        const c = tr?.status?.conditions?.find((x) => x.type === 'Succeeded');
        if (c?.status === 'False') {
          const task = ref.pipelineTaskName ?? ref.name;
          const why = (c.message ?? '').replace(/\s+/g, ' ').trim();
          const hint = unwrittenResults(tr!);
          failed.push(`${why ? `${task} (${why.length > 300 ? `${why.slice(0, 300)}…` : why})` : task}${hint}`);
        }
      } catch (e) {
        log.debug({ taskRun: ref.name, err: describeError(e) }, 'cannot read TaskRun');
      }
    }),
  );
  return failed.sort();
}

/** Tekton's termination message: all the results of one step, together (the entrypoint refuses more and fails the step). */
export const TERMINATION_MESSAGE_LIMIT = 4096;

/**
 * When a failed TaskRun declared results it did not write and a step ended
 * with exit code 1 — what Tekton's entrypoint does with results over its
 * limit, whose reason only the step's log gives — a hint saying so; '' otherwise.
 */
export function unwrittenResults(tr: TaskRun): string {
  const declared = (tr.status?.taskSpec?.results ?? []).map((r) => r.name);
  const written = new Set((tr.status?.results ?? []).map((r) => r.name));
  const missing = declared.filter((n) => !written.has(n));
  const exit1 = (tr.status?.steps ?? []).filter((st) => st.terminated?.exitCode === 1).map((st) => st.container ?? `step-${st.name}`);
  if (!missing.length || !exit1.length) return '';
  return ` [results ${missing.join(', ')} not written; if ${exit1.join(', ')} wrote them, together they were over Tekton's ${TERMINATION_MESSAGE_LIMIT}-byte limit for a step's results (its log says "above max allowed size"): see kubectl internalrequest logs]`;
}
