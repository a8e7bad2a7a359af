/**
 * Remote providers, in the shape of multicluster-runtime's: a provider says
 * which remote clusters to serve and hands them to a sink as they come,
 * change and go; the controller is the sink (RemoteSet, set.ts). One file a
 * provider, all built by the CLI the same way (src/cli/remote-providers.ts):
 *
 * - kubeconfig.ts: one remote from one kubeconfig (--remote-kubeconfig);
 * - secrets.ts: one remote per kubeconfig Secret (--remote-secret,
 *   --remote-secrets-selector), followed while the controller runs;
 * - directory.ts: one remote per kubeconfig file of a directory
 *   (--remote-kubeconfig-dir: Secrets mounted as a volume), read again
 *   every interval;
 * - kcp.ts: every workspace that binds the request API through a kcp
 *   APIExport's virtual workspace (--kcp-kubeconfig).
 *
 * A remote itself (its connection, caches and Event recorder) is remote.ts.
 */
import type { ReadinessCheck } from '../kube/informer.js';
import type { RemoteSpec } from './remote.js';

/** Where a provider puts the remotes it finds (the controller). */
export interface RemoteSink {
  /** Serves one more remote, or replaces the one of that name. */
  addRemote(spec: RemoteSpec): unknown;
  /** Stops serving a remote; false when it was not served. */
  removeRemote(name: string): Promise<boolean>;
}

/** A source of remotes. It is given its sink when made, and adds and removes remotes through it from start() on. */
export interface RemoteProvider {
  /** Starts following the source; resolves once what it found at first is served. */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** /readyz checks of the source itself (the remotes' caches are reported by the controller). */
  readiness(): ReadinessCheck[];
}

