/**
 * The provider of one remote from one kubeconfig (--remote-kubeconfig), and
 * what every provider that reads kubeconfigs from text checks of one.
 */
import { KubeConfig } from '@kubernetes/client-node';
import type { ReadinessCheck } from '../kube/informer.js';
import type { RemoteSpec } from './remote.js';
import type { RemoteProvider, RemoteSink } from './provider.js';

/** One remote from one kubeconfig (--remote-kubeconfig): added at start, never changed. */
export class KubeconfigRemote implements RemoteProvider {
  constructor(
    private readonly sink: RemoteSink,
    private readonly spec: RemoteSpec,
  ) {}

  /** Adds the remote at once (before the first await), so that a controller's caches start with it. */
  start(): Promise<void> {
    this.sink.addRemote(this.spec);
    return Promise.resolve();
  }

  stop(): Promise<void> {
    return Promise.resolve();
  }

  readiness(): ReadinessCheck[] {
    return [];
  }
}

/** Checked at compile time: a provider like the others. */
const _fits: (sink: RemoteSink, spec: RemoteSpec) => RemoteProvider = (sink, spec) => new KubeconfigRemote(sink, spec);
void _fits;

/**
 * A remote cluster's kubeconfig as a provider reads it from text (a
 * Secret's data, a mounted file): it parses, names a current cluster with a
 * server, and authenticates without a credential plugin (the controller
 * runs none). `where` starts each error (e.g. `Secret ns/name: data.kubeconfig`).
 */
export function parseRemoteKubeconfig(text: string, where: string): { ok: true; kubeconfig: KubeConfig } | { ok: false; error: string } {
  const kc = new KubeConfig();
  try {
    kc.loadFromString(text);
  } catch (e) {
    return { ok: false, error: `${where} is not a kubeconfig: ${(e as Error).message}` };
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster?.server) return { ok: false, error: `${where}: the kubeconfig names no current context with a cluster server` };
  const user = kc.getCurrentUser();
  if (user?.exec || user?.authProvider) {
    return { ok: false, error: `${where}: the kubeconfig's user runs a credential plugin (exec/auth-provider), which the controller does not run; use a token or a client certificate` };
  }
  return { ok: true, kubeconfig: kc };
}
