/**
 * `approve` and `deny`: an approver's decision, run against the internal
 * cluster. With --kind, on the approval of a typed kind's request: its
 * spec.request.kind (or, from before that field, its request-kind
 * annotation) names the Kind. --kind is a Kind as it is; any other name is
 * looked up in the RequestDefinitions of the approvals' namespace (the kind's
 * CRD is on the remote side, not here).
 */
import { Command, Option } from 'commander';
import { KIND_PATTERN, kindNames, REQUEST_DEFINITION, type RequestDefinition } from '../../api/request-definition.js';
import { INTERNAL_REQUEST_APPROVAL, type InternalRequestApproval } from '../../api/types.js';
import { ANNOTATION_REQUEST_KIND, LABEL_REQUEST_NAMESPACE } from '../../tekton/pipelinerun.js';
import { DEFAULT_REMOTE } from '../../policy/tenant.js';
import { describeError, statusCode } from '../../kube/client.js';
import { chooseKind, namesBuiltIn, parseKindFlag, type ServedResource } from './kind.js';
import { CliError, ExitCode } from './args-output.js';
import { isNamespace, parseRequestName, REQUEST_NAME_FORMS, showRequest, type RequestScope } from './request-name.js';
import { apiError, type Target, type TargetFlags } from './target.js';
import { given, run, stdout, withTarget, withTargetOptions } from './command-base.js';

interface DecideFlags extends TargetFlags {
  message?: string;
  approvalsNamespace: string;
  kind?: string;
}

/**
 * Whether an approval is of the request a person named: by workspace path
 * (kcp), by remote or logical cluster name, or, named without either, on
 * the default remote (approvals made before remotes had names carry none).
 */
export function approvalNamed(a: Pick<InternalRequestApproval, 'spec'>, scope: RequestScope | undefined): boolean {
  const r = a.spec.request;
  if (scope?.kind === 'workspace') return r.workspace === scope.path;
  return (r.remote ?? DEFAULT_REMOTE) === (scope?.name ?? DEFAULT_REMOTE);
}

/** How an approval's request is named to approve it: by workspace path where it has one. */
export function approvalRef(a: Pick<InternalRequestApproval, 'spec'>): string {
  const r = a.spec.request;
  const ref = `${r.namespace}/${r.name}`;
  if (r.workspace) return `${r.workspace}/${ref}`;
  return r.remote && r.remote !== DEFAULT_REMOTE ? `${r.remote}/${ref}` : ref;
}

/** The Kind of an approval's request; undefined for an InternalRequest. */
export function approvalKindOf(a: Pick<InternalRequestApproval, 'spec' | 'metadata'>): string | undefined {
  return a.spec.request.kind || a.metadata.annotations?.[ANNOTATION_REQUEST_KIND] || undefined;
}

/** A RequestDefinition as a resource --kind may name (its defaults filled in). */
export function definedResource(d: Pick<RequestDefinition, 'spec'>): ServedResource {
  const n = kindNames(d.spec);
  return { ...n, namespaced: true, status: true };
}

/** The Kind --kind names for approvals (undefined: InternalRequest). */
async function approvalKind(t: Target, flag: string | undefined): Promise<string | undefined> {
  const q = parseKindFlag(flag);
  if (!q || namesBuiltIn(q)) return undefined;
  if (q.group === undefined && new RegExp(KIND_PATTERN).test(q.name)) return q.name;
  const text = flag!.trim();
  let defs: RequestDefinition[];
  try {
    defs = (await t.cluster.resource<RequestDefinition>(REQUEST_DEFINITION).list(t.namespace)).items;
  } catch (e) {
    throw new CliError(
      'CLI_KIND_UNKNOWN',
      `cannot read the RequestDefinitions in namespace "${t.namespace}" of ${t.where} to find which kind --kind ${text} is (${describeError(e)}); give the Kind itself, as the waiting request's message shows it (e.g. --kind SigningRequest)`,
    );
  }
  return chooseKind(text, q, defs.map(definedResource), `the RequestDefinitions in namespace "${t.namespace}" of ${t.where}`).kind;
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
    .argument('<request>', `the request: ${REQUEST_NAME_FORMS}`)
    .addOption(new Option('-m, --message <text>', result === 'Approved' ? 'a note recorded with the approval' : 'why (the requester sees it)'))
    .addOption(new Option('--approvals-namespace <namespace>', "the controller's namespace on the internal cluster").default('internal-services'))
    .addOption(new Option('--kind <kind>', "the request's kind when it is not InternalRequest: its Kind (e.g. SigningRequest), or a name its RequestDefinition gives it"));
  withTargetOptions(cmd);
  return cmd.action(
    run(async (ref: string, flags: DecideFlags) => {
      if (result === 'Denied' && !given(flags.message)) throw new CliError('CLI_USAGE', 'deny needs --message: the requester reads it');
      const parsed = parseRequestName(ref);
      if (!parsed.ok) throw new CliError('CLI_USAGE', parsed.why);
      const wanted = parsed.value;
      return withTarget({ kubeconfig: flags.kubeconfig, context: flags.context, namespace: flags.approvalsNamespace }, async (t) => {
        const kind = await approvalKind(t, flags.kind);
        const ns = wanted.namespace ?? flags.namespace ?? '';
        const name = wanted.name;
        if (!ns) throw new CliError('CLI_USAGE', 'give the request as NAMESPACE/NAME, or its namespace with -n');
        if (!isNamespace(ns)) throw new CliError('CLI_USAGE', `-n ${JSON.stringify(ns)} is not a namespace (a lowercase DNS label, at most 63)`);
        const approvals = t.cluster.resource<InternalRequestApproval>(INTERNAL_REQUEST_APPROVAL);
        let undecided: InternalRequestApproval[];
        try {
          const l = await approvals.list(t.namespace, { labelSelector: `${LABEL_REQUEST_NAMESPACE}=${ns}` });
          undecided = l.items.filter((a) => a.spec.request.name === name && a.spec.request.namespace === ns && !a.status?.decision);
        } catch (e) {
          throw apiError(e, t, `list InternalRequestApprovals in namespace "${t.namespace}"`);
        }
        const waiting = undecided.filter((a) => approvalNamed(a, wanted.scope));
        const found = waiting.find((a) => approvalKindOf(a) === kind);
        const shown = (a: InternalRequestApproval) => showRequest(a.spec.request, DEFAULT_REMOTE);
        if (!found) {
          const others = [...new Set(waiting.map((a) => approvalKindOf(a) ?? 'InternalRequest'))];
          const hint = others.length ? `; there is one for the ${others.join(' and the ')} of that name: ${others[0] === 'InternalRequest' ? 'leave --kind out' : `give --kind ${others[0]}`}` : '';
          // Named without a remote (or under another one): the same namespace and name elsewhere, as it is named there.
          const elsewhere = others.length ? [] : undecided.filter((a) => approvalKindOf(a) === kind).map((a) => `${approvalRef(a)}${a.spec.request.workspace && a.spec.request.remote ? ` (logical cluster ${a.spec.request.remote})` : ''}`);
          const there = elsewhere.length ? `; waiting for approval under that namespace and name: ${elsewhere.join(', ')}: give the request as written there` : '';
          throw new CliError(
            'CLI_REQUEST_NOT_FOUND',
            `no ${kind ?? 'request'} ${ref.includes('/') ? ref : `${ns}/${name}`} is waiting for approval (no undecided InternalRequestApproval for it in namespace "${t.namespace}" of ${t.where})${hint}${there}`,
          );
        }
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
        stdout(`${(kind ?? 'InternalRequest').toLowerCase()} ${shown(found)} ${result === 'Approved' ? 'approved' : 'denied'} by ${me.username} (rule ${found.spec.rule})\n`);
        return ExitCode.Succeeded;
      });
    }),
  );
}
