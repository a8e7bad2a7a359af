/** Test environment: real etcd + two kube-apiservers, manifest helpers, simulated Tekton. */
export { ensureBinaries, repoRoot, type EnvtestAssets, type LogFn } from './binaries.js';
export {
  startEnvironment,
  CONTROLLER_NAMESPACE,
  CONTROLLER_SERVICE_ACCOUNT,
  CONTROLLER_USERNAME,
  type ControlPlane,
  type ControlPlaneIdentities,
  type Environment,
  type Identity,
  type StartEnvironmentOptions,
} from './environment.js';
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
} from './apply.js';
export {
  SimulatedTektonExecutor,
  deterministicResults,
  isTerminal,
  type AutoHandle,
  type AutoOptions,
  type ChildReference,
  type FailOptions,
  type Outcome,
  type PipelineObject,
  type PipelineRunObject,
  type Results,
  type ResultValue,
  type TektonObject,
} from './executor.js';
export {
  startTekton,
  TEKTON_NAMESPACE,
  RESOLVERS_NAMESPACE,
  TEKTON_IDENTITIES,
  type TektonOptions,
  type TektonPlatform,
} from './tekton.js';
export { SimulatedKubelet, planStep, terminationMessage, TEKTON_POD_SELECTOR, type StepPlan } from './kubelet.js';
export { startGitServer, type GitRepository, type GitServer } from './git.js';
