/**
 * The InternalRequestApproval the controller makes for a request whose rule
 * requires approval: what exactly would run, for the approver to read.
 * Pure: no I/O.
 */
import { API_VERSION, type InternalRequest, type InternalRequestApproval } from '../api/types.js';
import { rfc3339 } from '../api/conditions.js';
import { ownedBy, pipelineRunName, pipelineStatusOf } from '../tekton/pipelinerun.js';
import type { PipelineRun } from '../tekton/tekton-types.js';
import { DEFAULT_REMOTE } from '../policy/tenant.js';

const SHOWN_VALUE = 1024;

/**
 * `kind`: the request's Kind when it is not the built-in InternalRequest
 * (api/request-key.ts); recorded in spec.request.kind, so that approvers
 * (`approve --kind`) tell apart two kinds' requests of one name.
 * `workspace`: on kcp, the workspace path (spec.request.workspace), by
 * which approvers name the request.
 */
export function approvalFor(
  req: InternalRequest,
  namespace: string,
  remote: string,
  rule: string,
  pr: PipelineRun,
  what: { serviceAccount?: string | undefined; params: Record<string, string> },
  expiresAt: Date,
  kind?: string,
  workspace?: string,
): InternalRequestApproval {
  const uid = req.metadata.uid ?? '';
  const ns = req.metadata.namespace ?? '';
  const src = pipelineStatusOf(pr);
  const pipeline = src?.source
    ? `${src.source}${src.path ? ` ${src.path}` : ''}${src.digest ? ` at ${src.digest}` : ''}${src.references?.length ? ` (+${src.references.length} pinned references)` : ''}`
    : (pr.spec.pipelineRef?.name ?? '');
  const params = Object.fromEntries(Object.entries(what.params).map(([k, v]) => [k, v.length > SHOWN_VALUE ? `${v.slice(0, SHOWN_VALUE - 1)}…` : v]));
  return {
    apiVersion: API_VERSION,
    kind: 'InternalRequestApproval',
    metadata: {
      name: pipelineRunName(uid),
      namespace,
      ...ownedBy(req, remote, kind),
    },
    spec: {
      request: { ...(remote !== DEFAULT_REMOTE ? { remote } : {}), ...(workspace ? { workspace } : {}), namespace: ns, name: req.metadata.name ?? '', uid, ...(kind ? { kind } : {}) },
      rule,
      pipeline: pipeline.slice(0, 4096),
      ...(what.serviceAccount ? { serviceAccount: what.serviceAccount } : {}),
      ...(Object.keys(params).length ? { params } : {}),
      ...(pr.spec.timeouts ? { timeouts: pr.spec.timeouts } : {}),
      expiresAt: rfc3339(expiresAt),
    },
  };
}
