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
import { CliError, type RequestObject } from './args-output.js';

export interface TargetFlags {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
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

export async function openTarget(flags: TargetFlags): Promise<Target> {
  const { kc } = loadKubeConfig(flags);
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
  if (code === 403) return new CliError('CLI_CLUSTER_ACCESS', `not allowed to ${doing} on ${t.where}: ${detail}`);
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
