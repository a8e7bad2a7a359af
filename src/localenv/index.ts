/**
 * The local environment: what the local demo (`internal-services local`),
 * the integration tests and the benchmarks run against.
 *
 * - real/: real processes and their wiring — one etcd and kube-apiservers
 *   (a remote and an internal cluster), real Tekton (controller, resolvers,
 *   webhook), a git daemon, an OCI registry (registry.ts, with oci.ts to
 *   push Tekton bundles), a fault-injecting TCP proxy, the binaries they
 *   are built from, and manifest helpers (release-info.ts: the version-info
 *   objects the Tekton Pipelines, Results and Chains releases ship); and,
 *   apart, a real kcp
 *   (kcp-server.ts, kcp-workspaces.ts) for what needs one; and a real node
 *   for the internal cluster (real-node.ts: kubelet, scheduler, controller
 *   manager, containerd), on which Tekton's pods run for real.
 * - simulated/: what stands in for pods — the simulated kubelet (plays the
 *   containers of Tekton's TaskRun pods) and the simulated Tekton executor
 *   (writes PipelineRun/TaskRun status with no Tekton at all).
 *
 * Arrows go one way: real/ may use simulated/ (Tekton runs with the
 * simulated kubelet), simulated/ uses nothing of real/. Nothing here imports
 * from src/controller or src/cli. Callers import from this file.
 */
export type { LogFn } from './progress-log.js';
export { ensureBinaries, ensureKcpBinary, ensurePlatformBinaries, repoRoot, type EnvtestAssets, type KcpAssets } from './real/binaries.js';
export {
  startKcp,
  KCP_CONTROLLER_USERNAME,
  type Kcp,
  type KcpIdentities,
  type KcpIdentity,
  type KcpIdentityName,
  type StartKcpOptions,
} from './real/kcp-server.js';
export { startShardedKcp, shardOfWorkspace, SHARD_LABEL, type ShardedKcp, type KcpShardProcess, type StartShardedKcpOptions } from './real/kcp-sharded.js';
export {
  applyInWorkspace,
  bindExport,
  createWorkspace,
  exportVirtualWorkspaceUrl,
  grantKcpRequester,
  grantWorkspaceReader,
  installKcpProvider,
  kcpManifests,
  waitForBinding,
  KCP_EXPORT,
  KCP_PROVIDER_PATH,
  type BindOptions,
  type KcpWorkspace,
} from './real/kcp-workspaces.js';
export { startEnvironment, type Environment, type StartEnvironmentOptions } from './real/environment.js';
export { realNodeUnavailable, type RealNode } from './real/real-node.js';
export { ensureNodeAssets, type NodeAssets } from './real/binaries.js';
export type { ControlPlane, PlaneName } from './real/control-plane.js';
export {
  CONTROLLER_NAMESPACE,
  CONTROLLER_SERVICE_ACCOUNT,
  CONTROLLER_USERNAME,
  type ControlPlaneIdentities,
  type Identity,
} from './real/identities.js';
export {
  applyManifests,
  applyObjects,
  ensureNamespace,
  ensureServiceAccount,
  grantRequester,
  installProject,
  loadManifests,
  statusCode,
  statusMessage,
  waitForCrds,
  REQUESTER_CLUSTER_ROLE,
  type InstallProjectOptions,
  type Manifest,
} from './real/apply.js';
export { freePorts, startTogether, startWatchdog, tailFile, writePidFile } from './real/processes.js';
export { FaultProxy, kubeconfigVia } from './real/fault-proxy.js';
export {
  startTekton,
  TEKTON_NAMESPACE,
  RESOLVERS_NAMESPACE,
  TEKTON_IDENTITIES,
  type TektonOptions,
  type TektonPlatform,
} from './real/tekton.js';
export {
  startChains,
  chainsVersion,
  chainsSigningKey,
  chainsConfigData,
  CHAINS_NAMESPACE,
  CHAINS_IDENTITY,
  type ChainsOptions,
  type ChainsPlatform,
} from './real/tekton-chains.js';
export { chainsInfoObjects, pipelinesInfoObjects, publishRewrite, resultsInfoObjects, resultsVersion } from './real/release-info.js';
export { startGitServer, type GitRepository, type GitServer } from './real/git.js';
export { startRegistry, type Registry, type StartRegistryOptions } from './real/registry.js';
export { pushBundle, tagManifest, digestOfTag, tarOneFile, type BundleResource, type PushedBundle } from './real/oci.js';
export { SimulatedTektonExecutor } from './simulated/simulated-tekton-executor.js';
export type { AutoHandle, AutoOptions } from './simulated/auto-runner.js';
export { deterministicResults } from './simulated/derived-results.js';
export {
  isTerminal,
  type ChildReference,
  type FailOptions,
  type SimulatedOutcome,
  type PipelineObject,
  type PipelineRunObject,
  type Results,
  type ResultValue,
  type TektonObject,
} from './simulated/tekton-objects.js';
export {
  SimulatedKubelet,
  planStep,
  terminationMessage,
  RESULT_ENV_PREFIX,
  TEKTON_POD_SELECTOR,
  type StepPlan,
} from './simulated/kubelet.js';
