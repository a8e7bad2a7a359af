/** The InternalRequestApproval: an approver's decision about one request, made on the internal cluster (seed 004). */
import { schema, type FromSchema } from './schema.js';
import { API_VERSION, GROUP, VERSION, type ObjectMeta } from './api-common.js';

/**
 * InternalRequestApproval, on the internal cluster (the trusted side): made
 * by the controller for a request whose rule requires approval, with what
 * exactly would run; decided by an approver through its status, which a
 * ValidatingAdmissionPolicy lets only users with the "approve" verb write,
 * under their own name (config/rbac/internal/approval_policy.yaml).
 */
export const approvalSpecSchema = schema({
  type: 'object',
  description: 'The request waiting for approval and what would run for it. Written by the controller only.',
  required: ['request', 'rule'],
  'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'spec is immutable' }],
  properties: {
    request: {
      type: 'object',
      required: ['namespace', 'name', 'uid'],
      properties: {
        remote: { type: 'string', maxLength: 63, description: 'The remote cluster the request is on; absent: the default remote. On kcp: the logical cluster of its workspace.' },
        workspace: { type: 'string', maxLength: 1024, description: 'On kcp: the path of the workspace the request is in (root:org:team), as approvers name it (kubectl internalrequest approve root:org:team/NAMESPACE/NAME).' },
        namespace: { type: 'string', maxLength: 63 },
        name: { type: 'string', maxLength: 253 },
        uid: { type: 'string', maxLength: 64 },
        kind: { type: 'string', maxLength: 63, description: "The request's Kind when it is not InternalRequest" },
      },
    },
    rule: { type: 'string', maxLength: 128, description: 'The rule that requires approval (its name, or rules[i]); approvers are authorized per rule: verb "approve" on rules.appstudio.redhat.com with this resource name.' },
    pipeline: { type: 'string', maxLength: 4096, description: 'What would run: the Pipeline, or its source and pinned commit.' },
    serviceAccount: { type: 'string', maxLength: 63 },
    params: { type: 'object', maxProperties: 256, additionalProperties: { type: 'string', maxLength: 1024 }, description: 'The params (values over 1 KiB shortened).' },
    timeouts: { type: 'object', properties: { pipeline: { type: 'string', maxLength: 64 }, tasks: { type: 'string', maxLength: 64 }, finally: { type: 'string', maxLength: 64 } } },
    expiresAt: { type: 'string', format: 'date-time', description: 'Without a decision by then, the request is Rejected.' },
  },
} as const);

export const approvalStatusSchema = schema({
  type: 'object',
  description: 'The decision, written once by an approver (kubectl internalrequest approve/deny).',
  'x-kubernetes-validations': [{ rule: '!has(oldSelf.decision) || self == oldSelf', message: 'a decision cannot be changed once made' }],
  properties: {
    decision: {
      type: 'object',
      required: ['result', 'by'],
      properties: {
        result: { type: 'string', enum: ['Approved', 'Denied'] },
        by: { type: 'string', maxLength: 512, description: 'Who decided: must be the authenticated user who writes the decision (checked by the API server).' },
        groups: { type: 'array', maxItems: 256, items: { type: 'string', maxLength: 512 }, description: "The decider's groups, as the API server knows them (checked by it)." },
        message: { type: 'string', maxLength: 4096 },
        at: { type: 'string', format: 'date-time' },
      },
    },
  },
} as const);

export type ApprovalSpec = FromSchema<typeof approvalSpecSchema>;
export type ApprovalStatus = FromSchema<typeof approvalStatusSchema>;

export interface InternalRequestApproval {
  apiVersion: typeof API_VERSION;
  kind: 'InternalRequestApproval';
  metadata: ObjectMeta;
  spec: ApprovalSpec;
  status?: ApprovalStatus;
}

export const INTERNAL_REQUEST_APPROVAL = {
  group: GROUP,
  version: VERSION,
  kind: 'InternalRequestApproval',
  plural: 'internalrequestapprovals',
  singular: 'internalrequestapproval',
  shortNames: ['ira'],
} as const;
