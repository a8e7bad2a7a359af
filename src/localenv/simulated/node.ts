/**
 * SimulatedNode: the part of a kubelet that serves container logs, for the
 * test control plane that has no nodes. With it, `kubectl logs`, Tekton
 * Results' watcher and the controller read the logs of Tekton's TaskRun pods
 * through the real apiserver (pods/log), exactly as on a cluster:
 *
 *   - a Node object whose InternalIP is 127.0.0.1 and whose kubelet endpoint
 *     port is this server's port (the apiserver dials https://127.0.0.1:PORT;
 *     without --kubelet-certificate-authority it does not check the
 *     kubelet's certificate, as with a kubelet's self-signed one);
 *   - each pod bound to that Node (pods/binding) before the simulated kubelet
 *     runs it, so the apiserver knows where its logs are;
 *   - GET /containerLogs/{namespace}/{pod}/{container}: text made from the
 *     pod as stored (the step's SIMULATED_LOG env, its results, its exit
 *     code). Every log says, on its first line, that no container ran.
 */
import { createServer, type Server } from 'node:https';
import { CoreV1Api, type KubeConfig, type V1Container, type V1Pod } from '@kubernetes/client-node';
import { statusCode } from '../../kube/client.js';
import { RESULT_ENV_PREFIX } from './kubelet.js';
import type { LogFn } from '../progress-log.js';

export const SIMULATED_NODE = 'simulated-node';
/** A step's log lines, in its env (after Tekton's param substitution). */
export const LOG_ENV = 'SIMULATED_LOG';

export interface SimulatedNodeOptions {
  /** TLS key and certificate (PEM) the log endpoint serves with. */
  keyPem: string;
  certPem: string;
  log?: LogFn;
}

export class SimulatedNode {
  private readonly api: CoreV1Api;
  private server: Server | undefined;
  private readonly log: LogFn;
  port = 0;

  constructor(kc: KubeConfig, private readonly opts: SimulatedNodeOptions) {
    this.api = kc.makeApiClient(CoreV1Api);
    this.log = opts.log ?? (() => {});
  }

  /** Starts the log endpoint on a free loopback port and registers the Node. */
  async start(): Promise<void> {
    const server = createServer({ key: this.opts.keyPem, cert: this.opts.certPem }, (req, res) => {
      void this.serve(req.url ?? '').then(
        ({ code, body }) => {
          res.writeHead(code, { 'Content-Type': 'text/plain; charset=utf-8' });
          res.end(body);
        },
        (e: unknown) => {
          res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' });
          res.end(`simulated node: ${(e as Error).message}\n`);
        },
      );
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as { port: number }).port;
    const node = { apiVersion: 'v1', kind: 'Node', metadata: { name: SIMULATED_NODE, labels: { 'internal-services.test/simulated': 'true' } } };
    try {
      await this.api.createNode({ body: node });
    } catch (e) {
      if (statusCode(e) !== 409) throw e;
    }
    await this.api.replaceNodeStatus({
      name: SIMULATED_NODE,
      body: {
        ...node,
        status: {
          addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
          daemonEndpoints: { kubeletEndpoint: { Port: this.port } },
          conditions: [{ type: 'Ready', status: 'True', reason: 'Simulated', message: 'pods are simulated by the test harness; only logs are served' }],
        },
      },
    });
    this.log(`simulated node: ${SIMULATED_NODE} serves container logs on https://127.0.0.1:${this.port} (pods are SIMULATED)`);
  }

  /** Binds a pod to the simulated Node unless it is bound already; false when the pod is gone. */
  async bind(pod: V1Pod): Promise<boolean> {
    if (pod.spec?.nodeName) return true;
    const namespace = pod.metadata?.namespace ?? '';
    const name = pod.metadata?.name ?? '';
    try {
      await this.api.createNamespacedBinding({
        namespace,
        body: { apiVersion: 'v1', kind: 'Binding', metadata: { name, namespace }, target: { apiVersion: 'v1', kind: 'Node', name: SIMULATED_NODE } },
      });
      return true;
    } catch (e) {
      const code = statusCode(e);
      if (code === 404) return false;
      if (code === 409) return true; // bound meanwhile
      throw e;
    }
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  private async serve(url: string): Promise<{ code: number; body: string }> {
    const path = new URL(url, 'https://127.0.0.1').pathname;
    const m = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(path);
    if (!m) return { code: 404, body: `simulated node serves only /containerLogs/{namespace}/{pod}/{container}, not ${path}\n` };
    const [namespace, name, container] = m.slice(1).map(decodeURIComponent) as [string, string, string];
    let pod: V1Pod;
    try {
      pod = await this.api.readNamespacedPod({ namespace, name });
    } catch (e) {
      if (statusCode(e) === 404) return { code: 404, body: `pod ${namespace}/${name} not found\n` };
      throw e;
    }
    const body = containerLog(pod, container);
    return body === undefined ? { code: 404, body: `container ${container} is not in pod ${namespace}/${name}\n` } : { code: 200, body };
  }
}

/** The log a simulated container shows; undefined when the pod has no such container. */
export function containerLog(pod: V1Pod, container: string): string | undefined {
  const spec: V1Container | undefined = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].find((c) => c.name === container);
  if (!spec) return undefined;
  const lines = [`[simulated] ${container} of pod ${pod.metadata?.namespace}/${pod.metadata?.name}: no container ran; pods are simulated by the test harness`];
  const env = new Map((spec.env ?? []).map((e) => [e.name, e.value ?? '']));
  const text = env.get(LOG_ENV);
  if (text) lines.push(...text.split('\n'));
  for (const [k, v] of env) if (k.startsWith(RESULT_ENV_PREFIX)) lines.push(`[simulated] result ${k.slice(RESULT_ENV_PREFIX.length)}: ${v}`);
  const status = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find((s) => s.name === container);
  const done = status?.state?.terminated;
  if (done) lines.push(`[simulated] exit code ${done.exitCode}`);
  return `${lines.join('\n')}\n`;
}
