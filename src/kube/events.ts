/**
 * Records core/v1 Events about objects (on the remote cluster: about requests).
 * Best effort: an Event that cannot be written is logged, never retried, and
 * never holds up the request itself.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { CoreV1Event } from '@kubernetes/client-node';
import { describeError, type Cluster, type KubeObject } from './client.js';
import { rfc3339 } from '../api/conditions.js';

export class EventRecorder {
  constructor(
    private readonly cluster: Cluster,
    private readonly component: string,
    private readonly instance: string,
    private readonly log: Logger,
  ) {}

  async record(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string, now = new Date()): Promise<void> {
    const ns = obj.metadata?.namespace ?? 'default';
    const objName = obj.metadata?.name ?? '';
    // Event names must be valid object names (≤ 253 characters) even for a
    // 253-character request name.
    const name = `${objName.slice(0, 236)}.${randomBytes(8).toString('hex')}`;
    const ts = rfc3339(now);
    const body: CoreV1Event = {
      // kcp's virtual workspaces refuse a body without its type.
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace: ns },
      involvedObject: {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        name: objName,
        namespace: ns,
        uid: obj.metadata?.uid,
        resourceVersion: obj.metadata?.resourceVersion,
      },
      reason,
      message: message.length > 1024 ? `${message.slice(0, 1021)}...` : message,
      type,
      source: { component: this.component },
      reportingComponent: this.component,
      reportingInstance: this.instance,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
    try {
      await this.cluster.core.createNamespacedEvent({ namespace: ns, body });
    } catch (e) {
      this.log.debug({ err: describeError(e), reason, object: `${ns}/${objName}`, ts }, 'could not record event');
    }
  }
}
