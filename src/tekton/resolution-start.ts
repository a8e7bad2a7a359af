/**
 * The I/O half of remote resolution (resolve.ts is the pure half): making
 * the ResolutionRequest that Tekton's resolvers answer. Only the executor
 * and the command line's kind tools call it; decide() never does.
 */
import { statusCode, type ResourceClient } from '../kube/client.js';
import type { ResolutionRequest } from './resolve.js';

/** Creates it unless it exists already (a retry, a restart); returns what the cluster holds. */
export async function startResolution(client: ResourceClient<ResolutionRequest>, rr: ResolutionRequest): Promise<ResolutionRequest> {
  const ns = rr.metadata?.namespace ?? '';
  try {
    return await client.create(ns, rr);
  } catch (e) {
    if (statusCode(e) !== 409) throw e;
    return client.get(ns, rr.metadata?.name ?? '');
  }
}
