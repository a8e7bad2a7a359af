/** The provider of one remote from one kubeconfig (--remote-kubeconfig). */
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
