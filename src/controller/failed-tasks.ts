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
          failed.push(why ? `${task} (${why.length > 300 ? `${why.slice(0, 300)}…` : why})` : task);
        }
      } catch (e) {
        log.debug({ taskRun: ref.name, err: describeError(e) }, 'cannot read TaskRun');
      }
    }),
  );
  return failed.sort();
}
