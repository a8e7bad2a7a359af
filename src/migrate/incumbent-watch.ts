/**
 * Watches of the Go controller's Deployment and leader-election Lease, by
 * name (a field selector on metadata.name, which RBAC narrowed to those
 * names allows), that wake the incumbent check at once when either changes
 * (a GitOps resync that scales the Deployment back up, its leader taking
 * or renewing the Lease). The watches only wake: the verdict is always
 * made on a fresh read of both (incumbent-preflight.ts), so a watch that
 * is behind, or refused, makes nothing look gone; the check then runs at
 * its period only.
 */
import type { Logger } from 'pino';
import type { Cluster, KubeObject } from '../kube/client.js';
import { Informer } from '../kube/informer.js';
import type { IncumbentRefs, Triggers } from './incumbent-preflight.js';

const DEPLOYMENTS = { group: 'apps', version: 'v1', plural: 'deployments' } as const;
const LEASES = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' } as const;

export function incumbentWatches(internal: Cluster, refs: IncumbentRefs, log: Logger): Triggers {
  let informers: Array<Informer<KubeObject>> = [];
  return {
    start(wake) {
      const on = { onAdd: wake, onUpdate: wake, onDelete: wake };
      informers = [
        new Informer<KubeObject>('internal/incumbent-deployment', internal.resource<KubeObject>(DEPLOYMENTS), on, log, { namespace: refs.namespace, fieldSelector: `metadata.name=${refs.deployment}`, backoffMaxMs: 30_000 }),
        new Informer<KubeObject>('internal/incumbent-lease', internal.resource<KubeObject>(LEASES), on, log, { namespace: refs.namespace, fieldSelector: `metadata.name=${refs.lease}`, backoffMaxMs: 30_000 }),
      ];
      for (const i of informers) i.start();
    },
    async stop() {
      await Promise.all(informers.map((i) => i.stop()));
    },
  };
}
