/**
 * One remote cluster as the controller sees it: its connection, its cache of
 * InternalRequests (watched or polled), its status writer and Event recorder.
 * A remote is a value: the controller holds one per remote, keyed by name,
 * made and stopped as kubeconfig Secrets come and go.
 *
 * Work-queue keys name the remote: `remote/namespace/name`.
 */
import type { Logger } from 'pino';
import { INTERNAL_REQUEST, type InternalRequest } from '../api/types.js';
import type { Cluster, ResourceClient } from '../kube/client.js';
import { EventRecorder } from '../kube/events.js';
import { Informer, keyOf, type InformerHandlers, type InformerOptions } from '../kube/informer.js';

export interface RemoteMode {
  mode: 'watch' | 'poll';
  pollIntervalMs?: number;
}

export interface RemoteSpec {
  name: string;
  cluster: Cluster;
  mode?: RemoteMode;
  /** Where it comes from, for logs and readiness (e.g. `Secret internal-services/prod`). */
  origin?: string;
}

export class Remote {
  readonly name: string;
  readonly cluster: Cluster;
  readonly origin: string;
  readonly client: ResourceClient<InternalRequest>;
  readonly requests: Informer<InternalRequest>;
  readonly events: EventRecorder;
  /** The remote refused a TTL delete (403): logged once. */
  ttlDenied = false;

  constructor(
    spec: RemoteSpec,
    handlers: InformerHandlers<InternalRequest>,
    log: Logger,
    opts: InformerOptions<InternalRequest> & { instance: string },
  ) {
    this.name = spec.name;
    this.cluster = spec.cluster;
    this.origin = spec.origin ?? 'flag --remote-kubeconfig';
    this.client = spec.cluster.resource<InternalRequest>(INTERNAL_REQUEST);
    this.events = new EventRecorder(spec.cluster, 'internal-services-controller', opts.instance, log);
    const { instance: _i, ...inf } = opts;
    this.requests = new Informer<InternalRequest>(`remote/${spec.name}/internalrequests`, this.client, handlers, log.child({ remote: spec.name }), {
      ...inf,
      mode: spec.mode?.mode ?? 'watch',
      ...(spec.mode?.pollIntervalMs ? { pollIntervalMs: spec.mode.pollIntervalMs } : {}),
    });
  }

  /** The work-queue key of one of this remote's requests. */
  keyOf(obj: { metadata?: { namespace?: string; name?: string } }): string {
    return `${this.name}/${keyOf(obj)}`;
  }

  get healthy(): boolean {
    return this.requests.synced && this.requests.health.failures === 0;
  }

  async stop(): Promise<void> {
    await this.requests.stop();
    this.cluster.close();
  }
}

/** `remote/namespace/name` → its parts (the cache key within the remote is `namespace/name`). */
export function splitKey(key: string): { remote: string; namespace: string; name: string; cacheKey: string } {
  const a = key.indexOf('/');
  const b = key.indexOf('/', a + 1);
  const remote = key.slice(0, a);
  const namespace = key.slice(a + 1, b);
  const name = key.slice(b + 1);
  return { remote, namespace, name, cacheKey: `${namespace}/${name}` };
}
