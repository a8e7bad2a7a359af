/**
 * The copies of checked StepActions (src/tekton/graph.ts: a step of a
 * resolved Task refers to the StepAction the controller checked, copied into
 * its namespace under a name derived from the content, instead of a
 * reference Tekton would resolve and read again).
 *
 * A copy is shared by every run whose steps use that content, and is removed
 * once no PipelineRun of the controller refers to it and it was neither made
 * nor used (the executor marks a copy it found already there) within the
 * grace period; the delete is conditional on the version that was listed, so
 * a copy marked as used meanwhile stays. The sweep runs with the orphan
 * sweep (every resync period).
 */
import type { Logger } from 'pino';
import { describeError, statusCode, type ResourceClient } from '../kube/client.js';
import { LABEL_STEPACTION_COPY, STEPACTION_COPY_PREFIX, type StepActionCopy } from '../tekton/stepaction-copy.js';
import type { PipelineRun } from '../tekton/tekton-types.js';

/** Set on a copy by a run that found it already there: it is in use again. */
export const ANNOTATION_USED_AT = 'internal-services.dev/used-at';

/** How long a copy that no PipelineRun refers to is kept after it was made or last used. */
export const COPY_GRACE_MS = 10 * 60_000;

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** The copies the steps of these PipelineRuns refer to. */
export function copiesReferencedBy(prs: Iterable<PipelineRun>): Set<string> {
  const names = new Set<string>();
  for (const pr of prs) {
    const spec = (pr.spec as { pipelineSpec?: unknown }).pipelineSpec;
    if (!isObj(spec)) continue;
    for (const section of ['tasks', 'finally']) {
      const list = spec[section];
      if (!Array.isArray(list)) continue;
      for (const pt of list) {
        const steps = isObj(pt) && isObj(pt['taskSpec']) ? pt['taskSpec']['steps'] : undefined;
        if (!Array.isArray(steps)) continue;
        for (const step of steps) {
          const name = isObj(step) && isObj(step['ref']) ? step['ref']['name'] : undefined;
          if (typeof name === 'string' && name.startsWith(STEPACTION_COPY_PREFIX)) names.add(name);
        }
      }
    }
  }
  return names;
}

type Listed = Pick<StepActionCopy, 'metadata'> & { metadata: StepActionCopy['metadata'] & { creationTimestamp?: string; resourceVersion?: string; uid?: string } };

/** The copies to remove: referenced by none of the runs, made and last used before the grace period. Pure. */
export function staleCopies<T extends Listed>(copies: readonly T[], referenced: ReadonlySet<string>, now: number, graceMs = COPY_GRACE_MS): T[] {
  return copies.filter((c) => {
    if (referenced.has(c.metadata.name)) return false;
    const made = Date.parse(c.metadata.creationTimestamp ?? '');
    const usedText = c.metadata.annotations?.[ANNOTATION_USED_AT];
    const used = usedText === undefined ? made : Date.parse(usedText);
    // A time that cannot be read keeps the copy: removing one in use would fail a run.
    if (Number.isNaN(made) || Number.isNaN(used)) return false;
    return Math.max(made, used) + graceMs <= now;
  });
}

/**
 * Lists the copies, removes the stale ones (each only in the version listed);
 * `runs` must be the full, synced list of the controller's PipelineRuns.
 * Returns how many were removed.
 */
export async function sweepStepActionCopies(client: ResourceClient<StepActionCopy>, namespace: string, runs: Iterable<PipelineRun>, now: number, log: Logger): Promise<number> {
  const listed = await client.list(namespace, { labelSelector: `${LABEL_STEPACTION_COPY}=true` });
  const stale = staleCopies(listed.items as Array<StepActionCopy & Listed>, copiesReferencedBy(runs), now);
  let removed = 0;
  for (const c of stale) {
    try {
      await client.delete(namespace, c.metadata.name, c.metadata.uid, c.metadata.resourceVersion);
      removed++;
    } catch (e) {
      // 409: used again since it was listed; it stays.
      if (statusCode(e) !== 409) log.warn({ stepAction: `${namespace}/${c.metadata.name}`, err: describeError(e) }, 'could not remove an unused StepAction copy');
    }
  }
  if (removed) log.info({ removed, kept: listed.items.length - removed }, 'unused StepAction copies removed');
  return removed;
}
