/**
 * The sample files of config/samples as the local run uses them: the sample
 * Pipeline (made ready for the run's pods by local-pods.ts), the sample
 * configuration, and the sample request's spec. Shared by the
 * plain-cluster run (local.ts) and the kcp run (local-kcp.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { loadManifests, repoRoot, type Manifest } from '../localenv/index.js';
import type { InternalRequestSpec } from '../api/types.js';

export const SAMPLE_PIPELINE = 'tekton_v1_pipeline_sign-image.yaml';
export const SAMPLE_CONFIG = 'appstudio_v1alpha1_internalservicesconfig.yaml';
export const SAMPLE_REQUEST = 'appstudio_v1alpha1_internalrequest.yaml';
/** For the simulated kubelet (local-pods.ts), as the runs that still use it import them. */
export { STEP_DURATION, withSimulatedSteps } from './local-pods.js';

export function samplePath(file: string): string {
  return join(repoRoot(), 'config', 'samples', file);
}

export function sample(file: string): Manifest {
  const path = samplePath(file);
  const [obj, ...rest] = loadManifests(path);
  if (!obj || rest.length > 0) throw new Error(`${path}: expected exactly one object`);
  return obj;
}

/** The sample request's spec (the sample has generateName, which loadManifests does not take). */
export function sampleRequestSpec(): InternalRequestSpec {
  const path = samplePath(SAMPLE_REQUEST);
  const obj = parseYaml(readFileSync(path, 'utf8')) as { kind?: string; spec?: InternalRequestSpec } | null;
  if (obj?.kind !== 'InternalRequest' || typeof obj.spec?.params?.['image'] !== 'string') {
    throw new Error(`${path}: expected an InternalRequest with spec.params.image`);
  }
  return obj.spec;
}
