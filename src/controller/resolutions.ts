/**
 * The ResolutionRequests of one request and the graph check's view of them
 * (what a reference's resolution says, which commit checks and resolutions
 * to start, which to remove once the request is decided). Pure.
 */
import { Phase, showsPhase } from '../api/conditions.js';
import { type InternalRequest } from '../api/types.js';
import { ANNOTATION_GIT_REF, requestUidOf, resolutionFor } from '../tekton/pipelinerun.js';
import { isFullSha } from '../policy/canonical.js';
import { type GraphInput, type RemoteRef } from '../tekton/graph-model.js';
import { outcomeOfResolution, type Resolution, type ResolutionRequest } from '../tekton/resolve.js';
import { DEFAULT_REMOTE } from '../policy/tenant.js';
import { checkKey, type CommitCheck, type SourcePolicy } from '../policy/source.js';
import { refLookupKey, type RefLookup } from '../policy/exact-ref.js';
import { pathCheckKey, type PathCheck } from '../policy/path-check.js';
import { kindLabel } from '../requests/request-kind.js';
import { localResolution } from './local-resolution.js';

import type { Action } from './actions.js';
import type { Observation } from './observation.js';
import { policyTenant } from './observation.js';
import { waiting } from './status-report.js';

/**
 * The ResolutionRequests of one request (by uid): what each reference's
 * resolution says, and the actions to start the missing ones, wait for the
 * pending ones, or remove them all once the decision is made.
 */
export class Resolutions {
  private readonly mine: ResolutionRequest[];
  constructor(
    private readonly o: Observation,
    uid: string,
  ) {
    this.mine = (o.resolutions ?? []).filter((rr) => requestUidOf(rr) === uid);
  }

  lookup(ref: RemoteRef, req: InternalRequest): Resolution | undefined {
    const want = resolutionFor(req, ref, this.o.namespace, this.o.remote ?? DEFAULT_REMOTE, kindLabel(this.o.kind));
    const rr = this.mine.find((x) => x.metadata?.name === want.metadata?.name);
    return rr ? outcomeOfResolution(rr, this.o.now, this.o.config.resolutionTimeoutMs) : undefined;
  }

  /** Start what is missing (resolutions, commit checks), show the request as Resolving, and look again by the deadline. */
  wait(req: InternalRequest, need: RemoteRef[], what: string, first: { checks?: CommitCheck[]; lookups?: RefLookup[]; paths?: PathCheck[] } = {}): Action[] {
    const actions: Action[] = need.map((ref) => ({ type: 'startResolution', resolution: resolutionFor(req, ref, this.o.namespace, this.o.remote ?? DEFAULT_REMOTE, kindLabel(this.o.kind)) }));
    actions.push(...(first.checks ?? []).map((check): Action => ({ type: 'checkCommit', check })));
    actions.push(...(first.lookups ?? []).map((lookup): Action => ({ type: 'lookUpRef', lookup })));
    actions.push(...(first.paths ?? []).map((check): Action => ({ type: 'checkPath', check })));
    const timeout = this.o.config.resolutionTimeoutMs;
    let ms = timeout;
    for (const rr of this.mine) {
      const r = outcomeOfResolution(rr, this.o.now, timeout);
      if (r.state === 'pending') ms = Math.min(ms, timeout - r.waitedMs);
    }
    const message = `${what}; nothing runs until every reference is checked`;
    if (!showsPhase(req, Phase.Resolving, message)) actions.push(waiting(req, this.o, Phase.Resolving, message, {}));
    actions.push({ type: 'requeueAfter', ms: Math.max(250, ms) + 250 });
    return actions;
  }

  /**
   * The commit this request's resolutions already read `l.ref` of `l.url` at
   * (a ResolutionRequest records the exact ref it was made for): the request
   * keeps it until it is decided, so a branch that moves meanwhile (during
   * an approval, across a restart) changes nothing it checked.
   */
  pinnedRef(l: RefLookup): string | undefined {
    for (const rr of this.mine) {
      if (rr.metadata?.annotations?.[ANNOTATION_GIT_REF] !== l.ref) continue;
      const p = new Map((rr.spec?.params ?? []).map((x) => [x.name, x.value]));
      const rev = p.get('revision');
      if (p.get('url') === l.url && typeof rev === 'string' && isFullSha(rev)) return rev;
    }
    return undefined;
  }

  cleanup(): Action[] {
    return this.mine.map((rr) => ({ type: 'deleteResolution', resolution: rr, why: 'the request no longer needs it' }));
  }
}

export function graphContext(o: Observation, req: InternalRequest, r: Resolutions, policy: SourcePolicy): Pick<GraphInput, 'policy' | 'namespace' | 'controllerNamespace' | 'lookup' | 'commits' | 'refs' | 'paths' | 'resolversRefused'> {
  return {
    policy,
    namespace: policyTenant(o, req.metadata.namespace ?? ''),
    controllerNamespace: o.namespace,
    lookup: (ref) => localResolution(o, ref) ?? r.lookup(ref, req),
    ...(o.commits ? { commits: (c: CommitCheck) => o.commits?.get(checkKey(c)) } : {}),
    refs: (l: RefLookup) => {
      const kept = r.pinnedRef(l);
      return kept ? { state: 'found', commit: kept } : o.refs?.get(refLookupKey(l));
    },
    ...(o.paths ? { paths: (c: PathCheck) => o.paths?.get(pathCheckKey(c)) } : {}),
    ...(o.resolversRefused ? { resolversRefused: o.resolversRefused } : {}),
  };
}

