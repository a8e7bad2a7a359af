/**
 * Whether the controller trusts an approval's decision. The API server checks
 * deciders when they write (config/rbac/internal/approval_policy.yaml); the
 * controller accepts a decision only
 *   - while that ValidatingAdmissionPolicy and its Deny binding are in force
 *     (without them, anyone who may write the status could type any name),
 *   - and if the decider, with the groups the API server recorded, may
 *     approve under the rule now (SubjectAccessReview), so that rights
 *     withdrawn after the decision count.
 */
import type { InternalRequestApproval } from '../api/types.js';
import { describeError, type Cluster } from '../kube/client.js';

export const APPROVAL_POLICY = 'internal-services-approvals';

export type Trust = { trusted: true } | { trusted: false; why: string };

export interface ApprovalTrust {
  check(approval: InternalRequestApproval): Promise<Trust>;
}

export function approvalTrust(cluster: Cluster, namespace: string): ApprovalTrust {
  // Looked up every time (no cache): this runs only when an approved request
  // is about to start, and a policy removed a moment ago must count.
  const policyProblem = async (): Promise<string | undefined> => {
    let problem: string | undefined;
    try {
      const base = { group: 'admissionregistration.k8s.io', version: 'v1' };
      const p = (await cluster.custom.getClusterCustomObject({ ...base, plural: 'validatingadmissionpolicies', name: APPROVAL_POLICY })) as { spec?: { failurePolicy?: string } };
      const b = (await cluster.custom.getClusterCustomObject({ ...base, plural: 'validatingadmissionpolicybindings', name: APPROVAL_POLICY })) as { spec?: { policyName?: string; validationActions?: string[] } };
      if (p.spec?.failurePolicy === 'Ignore') problem = `the ValidatingAdmissionPolicy ${APPROVAL_POLICY} has failurePolicy Ignore`;
      else if (b.spec?.policyName !== APPROVAL_POLICY || !(b.spec?.validationActions ?? []).includes('Deny')) problem = `the ValidatingAdmissionPolicyBinding ${APPROVAL_POLICY} does not deny with policy ${APPROVAL_POLICY}`;
    } catch (e) {
      problem = `the admission policy that checks approvers (ValidatingAdmissionPolicy and binding ${APPROVAL_POLICY}) is not in force on the internal cluster: ${describeError(e)}`;
    }
    return problem;
  };
  return {
    async check(approval) {
      const d = approval.status?.decision;
      if (!d) return { trusted: false, why: 'no decision' };
      const problem = await policyProblem();
      if (problem) return { trusted: false, why: problem };
      try {
        const review = (await cluster.custom.createClusterCustomObject({
          group: 'authorization.k8s.io',
          version: 'v1',
          plural: 'subjectaccessreviews',
          body: {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SubjectAccessReview',
            spec: {
              user: d.by,
              groups: d.groups ?? [],
              resourceAttributes: { group: 'appstudio.redhat.com', resource: 'rules', namespace, name: approval.spec.rule, verb: 'approve' },
            },
          },
        })) as { status?: { allowed?: boolean; reason?: string } };
        if (review.status?.allowed) return { trusted: true };
        return { trusted: false, why: `${JSON.stringify(d.by)} may not approve under rule ${JSON.stringify(approval.spec.rule)} (SubjectAccessReview: ${review.status?.reason || 'not allowed'})` };
      } catch (e) {
        return { trusted: false, why: `the approver's rights could not be checked: ${describeError(e)}` };
      }
    },
  };
}
