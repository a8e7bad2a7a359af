/** `approve` and `deny`: an approver's decision, run against the internal cluster. */
import { Command, Option } from 'commander';
import { INTERNAL_REQUEST_APPROVAL, type InternalRequestApproval } from '../../api/types.js';
import { LABEL_REQUEST_NAMESPACE } from '../../tekton/pipelinerun.js';
import { DEFAULT_REMOTE } from '../../policy/tenant.js';
import { statusCode } from '../../kube/client.js';
import { CliError, ExitCode } from './logic.js';
import { apiError, type TargetFlags } from './target.js';
import { given, run, stdout, withTarget, withTargetOptions } from './shared.js';

interface DecideFlags extends TargetFlags {
  message?: string;
  approvalsNamespace: string;
}

/**
 * Approve or deny: writes the decision into the status of the request's
 * InternalRequestApproval on the INTERNAL cluster (--kubeconfig/--context
 * name the approver's access there), under the approver's own name and
 * groups as the API server reports them; the API server checks both, and
 * that the approver may approve under the rule.
 */
export function decideCommand(result: 'Approved' | 'Denied'): Command {
  const verb = result === 'Approved' ? 'approve' : 'deny';
  const cmd = new Command(verb)
    .description(
      result === 'Approved'
        ? 'Approve a request waiting for approval (run against the INTERNAL cluster; needs verb "approve" on the rule)'
        : 'Deny a request waiting for approval: it ends Rejected with your message (run against the INTERNAL cluster)',
    )
    .argument('<request>', 'the request: NAME (with -n, its namespace on the remote cluster), NAMESPACE/NAME, or REMOTE/NAMESPACE/NAME for a remote other than the default one')
    .addOption(new Option('-m, --message <text>', result === 'Approved' ? 'a note recorded with the approval' : 'why (the requester sees it)'))
    .addOption(new Option('--approvals-namespace <namespace>', "the controller's namespace on the internal cluster").default('internal-services'));
  withTargetOptions(cmd);
  return cmd.action(
    run(async (ref: string, flags: DecideFlags) => {
      if (result === 'Denied' && !given(flags.message)) throw new CliError('CLI_USAGE', 'deny needs --message: the requester reads it');
      const parts = ref.split('/');
      if (parts.length > 3 || parts.some((p) => !p)) throw new CliError('CLI_USAGE', `${JSON.stringify(ref)}: give the request as NAME (with -n), NAMESPACE/NAME or REMOTE/NAMESPACE/NAME`);
      return withTarget({ ...flags, namespace: flags.approvalsNamespace }, async (t) => {
        const remote = parts.length === 3 ? parts[0]! : DEFAULT_REMOTE;
        const ns = parts.length >= 2 ? parts[parts.length - 2]! : (flags.namespace ?? '');
        const name = parts[parts.length - 1]!;
        if (!ns) throw new CliError('CLI_USAGE', 'give the request as NAMESPACE/NAME, or its namespace with -n');
        const approvals = t.cluster.resource<InternalRequestApproval>(INTERNAL_REQUEST_APPROVAL);
        let found: InternalRequestApproval | undefined;
        try {
          const l = await approvals.list(t.namespace, { labelSelector: `${LABEL_REQUEST_NAMESPACE}=${ns}` });
          // Approvals made before remotes had names carry no remote: the default one.
          found = l.items.find((a) => a.spec.request.name === name && (a.spec.request.remote ?? DEFAULT_REMOTE) === remote && !a.status?.decision);
        } catch (e) {
          throw apiError(e, t, `list InternalRequestApprovals in namespace "${t.namespace}"`);
        }
        if (!found) throw new CliError('CLI_REQUEST_NOT_FOUND', `no request ${ref.includes('/') ? ref : `${ns}/${name}`} is waiting for approval (no undecided InternalRequestApproval for it in namespace "${t.namespace}" of ${t.where})`);
        let me: { username?: string; groups?: string[] };
        try {
          const review = (await t.cluster.custom.createClusterCustomObject({
            group: 'authentication.k8s.io',
            version: 'v1',
            plural: 'selfsubjectreviews',
            body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
          })) as { status?: { userInfo?: { username?: string; groups?: string[] } } };
          me = review.status?.userInfo ?? {};
        } catch (e) {
          throw apiError(e, t, 'find out who you are (SelfSubjectReview)');
        }
        if (!me.username) throw new CliError('CLI_CLUSTER_ACCESS', `${t.where} did not say who you are`);
        const decision = { result, by: me.username, groups: me.groups ?? [], at: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'), ...(given(flags.message) ? { message: flags.message } : {}) };
        try {
          await approvals.replaceStatus(t.namespace, found.metadata.name ?? '', { ...found, status: { decision } });
        } catch (e) {
          const err = apiError(e, t, `${verb} ${ns}/${name}`);
          throw new CliError(statusCode(e) === 422 || statusCode(e) === 403 ? 'CLI_CLUSTER_ACCESS' : err.code, err.message, err.exitCode);
        }
        stdout(`internalrequest ${ns}/${name} ${result === 'Approved' ? 'approved' : 'denied'} by ${me.username} (rule ${found.spec.rule})\n`);
        return ExitCode.Succeeded;
      });
    }),
  );
}
