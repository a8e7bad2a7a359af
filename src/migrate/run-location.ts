/**
 * Where a request's run is, for `migrate check`: the Go controller's run of
 * it among its runs in the namespaces looked at (this controller's and the
 * Go controller's own, --incumbent-namespace), as requests/incumbent.ts
 * matches them after the switch. Pure.
 */
import { isFinished } from '../api/conditions.js';
import type { InternalRequest } from '../api/types.js';
import { incumbentRunOf, mayHaveIncumbentRun } from '../requests/incumbent.js';
import { runOutcomeOf } from '../tekton/pipelinerun.js';
import type { PipelineRun } from '../tekton/tekton-types.js';

export interface RunsSeen {
  /** The Go controller's runs (its labels), in every namespace that could be listed. */
  runs: readonly PipelineRun[];
  /** The namespaces looked in. */
  namespaces: readonly string[];
  /** Namespaces whose runs could not be listed, with why. */
  unreadable: Readonly<Record<string, string>>;
}

/** A sentence saying where the request's run is; undefined for a request the Go controller never reached or that is finished. */
export function runLocation(req: InternalRequest, seen: RunsSeen): string | undefined {
  if (isFinished(req) || !mayHaveIncumbentRun(req)) return undefined;
  const found = incumbentRunOf(req, seen.runs as PipelineRun[]);
  const at = (pr: PipelineRun) => `${pr.metadata.namespace}/${pr.metadata.name}`;
  if (found.run) {
    const out = runOutcomeOf(found.run);
    return `${at(found.run)} (${out.done ? (out.succeeded ? 'ended: succeeded' : 'ended: failed') : 'running'}); followed there after the switch`;
  }
  if (found.ambiguous) return `ambiguous: ${found.ambiguous.map(at).sort().join(', ')}; delete the ones that are not this request's`;
  const blind = Object.entries(seen.unreadable);
  if (blind.length) return `unknown: the Go controller's runs in ${blind.map(([ns, why]) => `${ns} (${why})`).join(', ')} cannot be listed; after the switch it waits until they can (config/rbac/internal-incumbent)`;
  const named = req.status?.pipelineRun;
  return named ? `missing: ${named} is not in ${seen.namespaces.join(' or ')}` : `none yet (looked in ${seen.namespaces.join(' and ')})`;
}
