/**
 * Which cluster, context and namespace the requester's commands talk to, as
 * kubectl finds them: --kubeconfig, else $KUBECONFIG (a list of files,
 * merged), else ~/.kube/config, else the in-cluster service account (a Tekton
 * step); --context overrides the current context; -n/--namespace, else the
 * context's namespace, else "default".
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { describeError, fromKubeConfig, statusCode, type Cluster, type ResourceClient } from '../../kube/client.js';
import { BUILT_IN_KIND, type KindRef } from './kind.js';
import { CliError, setShownWorkspace, type RequestObject } from './args-output.js';
import type { RequestScope } from './request-name.js';

export interface TargetFlags {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  /** On kcp: the workspace (path or logical cluster) the request was named in; the kubeconfig's server is pointed there. */
  scope?: RequestScope;
}

export interface Target {
  kc: KubeConfig;
  cluster: Cluster;
  /** The kind of request the command works on (--kind; default InternalRequest). */
  kind: KindRef;
  /** Its objects. */
  requests: ResourceClient<RequestObject>;
  namespace: string;
  /** `cluster "x" (https://…), context "y"`, for messages. */
  where: string;
  close(): void;
}

const SA_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export function loadKubeConfig(flags: TargetFlags, env: NodeJS.ProcessEnv = process.env): { kc: KubeConfig; source: string } {
  const kc = new KubeConfig();
  let source: string;
  try {
    if (flags.kubeconfig) {
      source = flags.kubeconfig;
      kc.loadFromFile(flags.kubeconfig);
    } else if (env['KUBECONFIG']) {
      source = `$KUBECONFIG (${env['KUBECONFIG']})`;
      kc.loadFromDefault();
    } else if (existsSync(join(homedir(), '.kube', 'config'))) {
      source = join(homedir(), '.kube', 'config');
      kc.loadFromFile(source);
    } else if (env['KUBERNETES_SERVICE_HOST'] && existsSync(SA_TOKEN)) {
      source = 'the in-cluster service account';
      kc.loadFromCluster();
    } else {
      throw new CliError('CLI_KUBECONFIG', 'no kubeconfig: pass --kubeconfig, set KUBECONFIG, or create ~/.kube/config');
    }
  } catch (e) {
    if (e instanceof CliError) throw e;
    const file = flags.kubeconfig ?? env['KUBECONFIG'] ?? '~/.kube/config';
    throw new CliError('CLI_KUBECONFIG', `cannot read kubeconfig ${file}: ${(e as Error).message}`);
  }
  if (flags.context) {
    if (!kc.getContextObject(flags.context)) {
      const known = kc.getContexts().map((c) => c.name);
      throw new CliError('CLI_KUBECONFIG', `--context "${flags.context}" is not in ${source} (contexts: ${known.length ? known.join(', ') : 'none'})`);
    }
    kc.setCurrentContext(flags.context);
  }
  if (!kc.getCurrentCluster()) {
    throw new CliError('CLI_KUBECONFIG', `${source} has no current context with a cluster${kc.currentContext ? ` (current context "${kc.currentContext}")` : ''}; pass --context`);
  }
  return { kc, source };
}

export function describeTarget(kc: KubeConfig): string {
  const cluster = kc.getCurrentCluster();
  return `cluster "${cluster?.name ?? '?'}" (${cluster?.server ?? '?'}), context "${kc.getCurrentContext()}"`;
}

/**
 * On kcp, a request named in a workspace (`root:org:team/NAMESPACE/NAME`,
 * or by logical cluster) is read there: the kubeconfig's server
 * (`https://HOST/clusters/<workspace>`) is pointed at that workspace, with
 * the same credentials. A server that is not a kcp workspace URL has no
 * workspaces: refused, saying so.
 */
export function pointAt(kc: KubeConfig, scope: RequestScope | undefined): void {
  const cluster = kc.getCurrentCluster();
  const server = cluster?.server ?? '';
  const i = server.indexOf('/clusters/');
  const named = scope ? (scope.kind === 'workspace' ? scope.path : scope.name) : undefined;
  if (named !== undefined) {
    if (i < 0) {
      throw new CliError(
        'CLI_USAGE',
        scope!.kind === 'workspace'
          ? `${named} names a kcp workspace, but ${describeTarget(kc)} is not a kcp workspace URL (https://HOST/clusters/<workspace>); use a kubeconfig for kcp, or name the request without it`
          : `${JSON.stringify(named)} names a remote cluster; the requester's commands work on the cluster the kubeconfig names (${describeTarget(kc)}): use its context for that remote (REMOTE/NAMESPACE/NAME is for approve and deny), or on kcp a workspace URL`,
      );
    }
    const moved = `${server.slice(0, i)}/clusters/${named}`;
    const contexts = kc.getContexts().map((c) => (c.name === kc.getCurrentContext() ? { ...c, cluster: 'named-workspace' } : c));
    kc.loadFromOptions({ clusters: [...kc.getClusters(), { ...cluster!, name: 'named-workspace', server: moved }], users: kc.getUsers(), contexts, currentContext: kc.getCurrentContext() });
  }
  const at = kc.getCurrentCluster()?.server ?? '';
  const j = at.indexOf('/clusters/');
  const ws = j < 0 ? undefined : decodeURIComponent(at.slice(j + '/clusters/'.length).replace(/\/+$/, ''));
  setShownWorkspace(ws !== undefined && ws.includes(':') ? ws : undefined);
}

export async function openTarget(flags: TargetFlags): Promise<Target> {
  const { kc } = loadKubeConfig(flags);
  pointAt(kc, flags.scope);
  const namespace = flags.namespace || kc.getContextObject(kc.getCurrentContext())?.namespace?.trim() || 'default';
  const where = describeTarget(kc);
  let cluster: Cluster;
  try {
    cluster = await fromKubeConfig('remote', kc, { requestTimeoutMs: 30_000 });
  } catch (e) {
    throw new CliError('CLI_KUBECONFIG', `cannot use the credentials of ${where}: ${(e as Error).message}`);
  }
  return { kc, cluster, kind: BUILT_IN_KIND, requests: cluster.resource<RequestObject>(BUILT_IN_KIND), namespace, where, close: () => cluster.close() };
}

/** The target, working on requests of another kind. */
export function forKind(t: Target, kind: KindRef): Target {
  return { ...t, kind, requests: t.cluster.resource<RequestObject>(kind) };
}

/**
 * Turns an API or network error into a CliError that says which cluster and
 * context, and what was attempted. 422/409 on create are the server refusing
 * the request itself; 404 is left to callers that expect it.
 */
export function apiError(e: unknown, t: Pick<Target, 'where' | 'namespace'> & { kind?: Pick<KindRef, 'kind'> }, doing: string): CliError {
  if (e instanceof CliError) return e;
  const code = statusCode(e);
  const detail = describeError(e);
  if (code === undefined) return new CliError('CLI_CLUSTER_ACCESS', `cannot reach ${t.where} to ${doing}: ${detail}`);
  if (code === 401) return new CliError('CLI_CLUSTER_ACCESS', `${t.where} does not accept the credentials (${detail}) to ${doing}`);
  if (code === 403) {
    // On kcp a workspace refuses everything to whoever has no access there: say what to grant.
    const kcp = t.where.includes('/clusters/') ? `; on kcp, a requester needs access on / and the verbs on internalrequests in that workspace (config/kcp/tenant/requester_role.yaml, bound by the workspace's admin)` : '';
    return new CliError('CLI_CLUSTER_ACCESS', `not allowed to ${doing} on ${t.where}: ${detail}${kcp}`);
  }
  if (code === 404) {
    return new CliError(
      'CLI_CLUSTER_ACCESS',
      `cannot ${doing} on ${t.where}: ${detail} (does namespace "${t.namespace}" exist, and is the ${(t.kind ?? BUILT_IN_KIND).kind} API installed?)`,
    );
  }
  if (code === 409 || code === 422) return new CliError('CLI_REQUEST_REFUSED', `the API server refused to ${doing}: ${detail}`);
  if (code === 400) return new CliError('CLI_USAGE', `the API server refused to ${doing}: ${detail}`);
  return new CliError('CLI_CLUSTER_ACCESS', `${t.where} failed to ${doing}: ${detail}`, 1);
}
