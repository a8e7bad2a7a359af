/**
 * Who talks to the local control planes: the static-token identities each
 * kube-apiserver knows (admin, the controller's ServiceAccount, requester,
 * Tekton's ServiceAccounts, …), with their usernames and groups for RBAC.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { RESOLVERS_NAMESPACE, TEKTON_IDENTITIES, TEKTON_NAMESPACE } from './tekton.js';
import { RESULTS_IDENTITIES, RESULTS_NAMESPACE } from './results-names.js';
import { CHAINS_IDENTITY, CHAINS_NAMESPACE } from './tekton-chains.js';

/** The namespace and ServiceAccount the controller runs as, on both clusters. */
export const CONTROLLER_NAMESPACE = 'internal-services';
export const CONTROLLER_SERVICE_ACCOUNT = 'internal-services-controller';
export const CONTROLLER_USERNAME = `system:serviceaccount:${CONTROLLER_NAMESPACE}:${CONTROLLER_SERVICE_ACCOUNT}`;

export interface Identity {
  /** Short name: "admin", "controller", "requester", "outsider". */
  name: string;
  /** The username the apiserver authenticates the token as. */
  username: string;
  groups: string[];
  /** Bearer token (static token file). */
  token: string;
  /** A kubeconfig file for this identity, usable by kubectl and by the controller. */
  kubeconfigPath: string;
  /** A fresh client-node KubeConfig for this identity. */
  kubeConfig(): KubeConfig;
}

export interface ControlPlaneIdentities {
  /** user "admin", group system:masters (cluster-admin). */
  admin: Identity;
  /** The controller's ServiceAccount user; has only what RBAC grants it. */
  controller: Identity;
  /** remote only: user "requester", group system:authenticated. */
  requester?: Identity;
  /** remote only: user "outsider", no grants at all. */
  outsider?: Identity;
  /** internal only: the ServiceAccounts of Tekton's own manifests (controller, webhook, resolvers). */
  tektonController?: Identity;
  tektonWebhook?: Identity;
  tektonResolvers?: Identity;
  /** internal only: Tekton Chains' ServiceAccount (its module's RBAC, bound when Chains is started). */
  tektonChains?: Identity;
  /** internal only: user "release-manager" in group "release-managers" (approves requests once RBAC lets it). */
  approver?: Identity;
  /** internal only: user "bystander", group system:authenticated; nothing granted. */
  bystander?: Identity;
  /** internal only: the ServiceAccounts Tekton Results' API server and watcher run as (tekton-results.ts). */
  resultsApi?: Identity;
  resultsWatcher?: Identity;
}

export interface IdentitySpec {
  name: keyof ControlPlaneIdentities;
  username: string;
  groups: string[];
}

/** The groups the apiserver gives a ServiceAccount of `namespace`. */
const serviceAccountGroups = (namespace: string): string[] => ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'];
const CONTROLLER_GROUPS = serviceAccountGroups(CONTROLLER_NAMESPACE);

export const IDENTITIES: Record<'remote' | 'internal', IdentitySpec[]> = {
  internal: [
    { name: 'admin', username: 'admin', groups: ['system:masters'] },
    { name: 'controller', username: CONTROLLER_USERNAME, groups: CONTROLLER_GROUPS },
    { name: 'tektonController', username: TEKTON_IDENTITIES.controller, groups: serviceAccountGroups(TEKTON_NAMESPACE) },
    { name: 'tektonWebhook', username: TEKTON_IDENTITIES.webhook, groups: serviceAccountGroups(TEKTON_NAMESPACE) },
    { name: 'tektonResolvers', username: TEKTON_IDENTITIES.resolvers, groups: serviceAccountGroups(RESOLVERS_NAMESPACE) },
    { name: 'tektonChains', username: CHAINS_IDENTITY, groups: serviceAccountGroups(CHAINS_NAMESPACE) },
    { name: 'approver', username: 'release-manager', groups: ['release-managers', 'system:authenticated'] },
    { name: 'bystander', username: 'bystander', groups: ['system:authenticated'] },
    { name: 'resultsApi', username: RESULTS_IDENTITIES.api, groups: serviceAccountGroups(RESULTS_NAMESPACE) },
    { name: 'resultsWatcher', username: RESULTS_IDENTITIES.watcher, groups: serviceAccountGroups(RESULTS_NAMESPACE) },
  ],
  remote: [
    { name: 'admin', username: 'admin', groups: ['system:masters'] },
    { name: 'controller', username: CONTROLLER_USERNAME, groups: CONTROLLER_GROUPS },
    { name: 'requester', username: 'requester', groups: ['system:authenticated'] },
    // No explicit groups: the apiserver still adds system:authenticated, which
    // only grants discovery-level access by default.
    { name: 'outsider', username: 'outsider', groups: [] },
  ],
};
