/**
 * The sample files of config/samples as the local run uses them: the sample
 * Pipeline (with SIMULATED_* env on its steps, for the simulated kubelet),
 * the sample configuration, and the sample request's spec. Shared by the
 * plain-cluster run (local.ts) and the kcp run (local-kcp.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { loadManifests, repoRoot, type Manifest } from '../localenv/index.js';
import type { InternalRequestSpec } from '../api/types.js';
import { FAIL_PARAM } from './local-samples.js';

export const SAMPLE_PIPELINE = 'tekton_v1_pipeline_sign-image.yaml';
export const SAMPLE_CONFIG = 'appstudio_v1alpha1_internalservicesconfig.yaml';
export const SAMPLE_REQUEST = 'appstudio_v1alpha1_internalrequest.yaml';
/** How long each simulated step "runs". */
export const STEP_DURATION = '1500ms';

/**
 * The sample Pipeline with SIMULATED_* env added to each step of its inline
 * Tasks: what the simulated kubelet reports for the step's container. Each
 * declared Task result gets a value derived from the Task's params (Tekton
 * substitutes them), and the step fails when the Task has the
 * simulate-failure param set to "true".
 */
export function withSimulatedSteps(pipeline: Manifest): Manifest {
  const copy = structuredClone(pipeline);
  const tasks = ((copy['spec'] as { tasks?: unknown[] } | undefined)?.tasks ?? []) as Array<{
    taskSpec?: { params?: Array<{ name: string }>; results?: Array<{ name: string }>; steps?: Array<{ env?: Array<{ name: string; value: string }> }> };
  }>;
  for (const t of tasks) {
    const spec = t.taskSpec;
    if (!spec?.steps?.length) continue;
    const params = (spec.params ?? []).map((p) => p.name);
    const derived = params.filter((p) => p !== FAIL_PARAM).map((p) => `"${p}":"$(params.${p})"`).join(',');
    const env: Array<{ name: string; value: string }> = [{ name: 'SIMULATED_DURATION', value: STEP_DURATION }];
    if (params.includes(FAIL_PARAM)) env.push({ name: 'SIMULATED_FAIL', value: `$(params.${FAIL_PARAM})` });
    for (const r of spec.results ?? []) env.push({ name: `SIMULATED_RESULT_${r.name}`, value: `${r.name}:{${derived}}` });
    // The last step produces the results; earlier ones just run.
    const last = spec.steps[spec.steps.length - 1]!;
    last.env = [...(last.env ?? []), ...env];
  }
  return copy;
}

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
