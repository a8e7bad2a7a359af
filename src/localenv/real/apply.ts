/**
 * Installing this project's manifests into an Environment, on top of the
 * manifest helpers of manifests.ts (re-exported here, so that callers keep
 * one import).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { repoRoot } from './binaries.js';
import type { LogFn } from '../progress-log.js';
import { CONTROLLER_NAMESPACE } from './identities.js';
import type { Environment } from './environment.js';
import { applyManifests, applyObjects, ensureNamespace, ensureServiceAccount, loadManifests, type Manifest } from './manifests.js';

export * from './manifests.js';

export interface InstallProjectOptions {
  /**
   * Directory with crd/, rbac/remote/ and rbac/internal/ (default: the
   * repository's config/). Missing subdirectories are skipped (and logged).
   */
  configDir?: string;
  /**
   * Install the Tekton CRDs on the internal cluster (default: true, unless the
   * environment runs real Tekton, which installed all of its own).
   */
  tekton?: boolean;
  log?: LogFn;
}

/**
 * Installs what the controller needs:
 *  - both clusters: namespace internal-services;
 *  - remote: the project CRDs (config/crd) and config/rbac/remote;
 *  - internal: the Tekton CRDs, the project CRDs and config/rbac/internal.
 * CRDs are applied (and waited for) before RBAC so nothing references a
 * resource that does not exist yet.
 */
export async function installProject(env: Environment, opts: InstallProjectOptions = {}): Promise<void> {
  const log: LogFn = opts.log ?? (() => {});
  const configDir = opts.configDir ?? join(repoRoot(), 'config');
  const load = (sub: string): Manifest[] => {
    const p = join(configDir, sub);
    if (!existsSync(p)) {
      log(`envtest: ${p} does not exist; skipped`);
      return [];
    }
    return loadManifests(p);
  };
  const projectCrds = load('crd');
  const remoteAdmin = env.remote.identities.admin.kubeConfig();
  const internalAdmin = env.internal.identities.admin.kubeConfig();

  const tektonCrds =
    (opts.tekton ?? !env.tekton) === false
      ? []
      : ['300-pipeline.yaml', '300-pipelinerun.yaml', '300-task.yaml', '300-taskrun.yaml', '300-resolutionrequest.yaml'].flatMap((f) =>
          loadManifests(join(env.assets.tektonCrdDir, f)),
        );

  const remoteRbac = load(join('rbac', 'remote'));
  await Promise.all([
    // Every remote cluster gets the same: the CRDs and the controller's and requesters' RBAC.
    ...env.remotes.map(async (remote) => {
      const admin = remote === env.remote ? remoteAdmin : remote.identities.admin.kubeConfig();
      await ensureNamespace(admin, CONTROLLER_NAMESPACE);
      await applyManifests(admin, projectCrds);
      await applyManifests(admin, remoteRbac);
    }),
    (async () => {
      await ensureNamespace(internalAdmin, CONTROLLER_NAMESPACE);
      // Tekton reads the ServiceAccount of every TaskRun pod; with no
      // controller-manager here, nothing else creates "default".
      if (env.tekton) await ensureServiceAccount(internalAdmin, CONTROLLER_NAMESPACE, 'default');
      await applyManifests(internalAdmin, [...tektonCrds, ...projectCrds]);
      await applyManifests(internalAdmin, load(join('rbac', 'internal')));
    })(),
  ]);
  log(`envtest: project installed (${projectCrds.length} project CRDs, ${tektonCrds.length} Tekton CRDs)`);
}

/** ClusterRole granted by grantRequester (defined in config/rbac/remote). */
export const REQUESTER_CLUSTER_ROLE = 'internal-services-requester';

/**
 * Lets user "requester" use the project's API in `namespace` on a remote
 * cluster (default: the first): creates the namespace if needed and a RoleBinding to the
 * internal-services-requester ClusterRole.
 */
export async function grantRequester(env: Environment, namespace: string, remote = env.remote): Promise<void> {
  const kc = remote.identities.admin.kubeConfig();
  await ensureNamespace(kc, namespace);
  const username = remote.identities.requester?.username ?? 'requester';
  await applyObjects(kc, [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: REQUESTER_CLUSTER_ROLE, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: REQUESTER_CLUSTER_ROLE },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: username }],
    } as KubernetesObject,
  ]);
}
