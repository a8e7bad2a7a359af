/**
 * A cluster-resolver reference to the controller's own namespace, answered
 * from the controller's caches instead of a ResolutionRequest.
 *
 * Tekton's cluster resolver would read the same object from the same
 * namespace (a GET of the Pipeline or Task) and hand back its YAML, with
 * `/apis/tekton.dev/v1/namespaces/NS/KIND/NAME@UID` as the source and the
 * object's Trusted Resources checksum as the digest. The controller already
 * holds those objects (the informers of its namespace, which requests of the
 * `spec.request` shape read), so it answers the same: the object, the same
 * source and digest. The content then goes through the same one reading as
 * anything a resolver returns (parseResolved), and what runs is embedded in
 * the PipelineRun as before: nothing is left for Tekton to resolve.
 *
 * Saves three API requests a request (create, read and delete the
 * ResolutionRequest) and the wait for Tekton's resolver (docs/benchmarks.md).
 * Only when the object is in the cache: a miss (not there yet, or not at
 * all) goes to Tekton's resolver as before, so its messages and its own
 * not-found stay what they were. Every other resolver, and the cluster
 * resolver for any other namespace, is resolved by Tekton.
 */
import { tektonChecksum } from '../policy/trusted.js';
import type { RemoteRef } from '../tekton/graph-model.js';
import type { Resolution } from '../tekton/resolve.js';
import type { Observation } from './observation.js';

const API_VERSION = 'tekton.dev/v1';
const KINDS: Record<string, string> = { pipeline: 'Pipeline', task: 'Task' };

/** The resolution of `ref` from the caches, or undefined when Tekton's resolver is to be asked. */
export function localResolution(o: Pick<Observation, 'namespace' | 'installedPipelines' | 'tasks'>, ref: RemoteRef): Extract<Resolution, { state: 'resolved' }> | undefined {
  if (ref.resolver !== 'cluster') return undefined;
  const p = new Map(ref.params.map((x) => [x.name, x.value]));
  // The params after clusterDefaults and the source policy: exactly name, namespace and kind.
  if (ref.params.length !== 3 || p.size !== 3) return undefined;
  const name = p.get('name');
  const namespace = p.get('namespace');
  const kind = KINDS[p.get('kind') ?? ''];
  if (!name || namespace !== o.namespace || !kind) return undefined;
  const found = kind === 'Pipeline' ? (o.installedPipelines?.get(name) as unknown as Record<string, unknown> | undefined) : o.tasks?.get(name);
  if (!found) return undefined;
  const obj: Record<string, unknown> = { ...found, apiVersion: API_VERSION, kind };
  const uid = (obj['metadata'] as { uid?: unknown } | undefined)?.uid;
  const sum = tektonChecksum(obj);
  return {
    state: 'resolved',
    content: JSON.stringify(obj),
    refSource: {
      uri: `/apis/${API_VERSION}/namespaces/${namespace}/${p.get('kind')}/${name}@${typeof uid === 'string' ? uid : ''}`,
      digest: Buffer.isBuffer(sum) ? { sha256: sum.toString('hex') } : {},
      entryPoint: '',
    },
  };
}
