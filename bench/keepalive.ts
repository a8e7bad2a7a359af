/**
 * client-node makes a new HTTPS agent — so a new TLS handshake — for every
 * request. The benchmark's own clients (executor, observers, load generator)
 * would then spend more CPU on handshakes than on the work they drive, CPU
 * taken from the controller and apiservers on a small machine. This gives a
 * KubeConfig one shared keep-alive agent instead.
 */
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

export async function useKeepAlive(kc: KubeConfig, maxSockets = 256): Promise<KubeConfig> {
  const opts: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  const agent = new https.Agent({ keepAlive: true, maxSockets, ca: opts.ca, cert: opts.cert, key: opts.key });
  // createAgent is private in the typings; an own property shadows the prototype's.
  (kc as unknown as { createAgent: () => https.Agent }).createAgent = () => agent;
  return kc;
}
