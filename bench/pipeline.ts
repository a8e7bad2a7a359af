/**
 * The benchmark Pipeline, the same for the benchmark and the chaos run, and
 * the results a request must end with when it ran.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { CONTROLLER_NAMESPACE, deterministicResults, type PipelineRunObject, RESULT_ENV_PREFIX } from '../src/localenv/index.js';
import { BENCH_PIPELINE } from './workload.js';

const NS = CONTROLLER_NAMESPACE;

/**
 * The benchmark Pipeline, the same for both Tekton modes: one task, one step
 * with one result. The simulated executor derives the Pipeline's results from
 * the run's params (deterministicResults: `digest:{"image":"…"}`); for real
 * Tekton the step says the same value through SIMULATED_RESULT_digest, which
 * Tekton substitutes $(params.image) into and the simulated kubelet writes as
 * the step's result (src/localenv/simulated/kubelet.ts). The step's command is set, so
 * Tekton need not look the (never pulled) image up.
 */
export function benchPipeline(): KubernetesObject {
  return {
    apiVersion: 'tekton.dev/v1',
    kind: 'Pipeline',
    metadata: { name: BENCH_PIPELINE, namespace: NS },
    spec: {
      params: [{ name: 'image', type: 'string' }],
      results: [{ name: 'digest', value: '$(tasks.sign.results.digest)' }],
      tasks: [
        {
          name: 'sign',
          params: [{ name: 'image', value: '$(params.image)' }],
          taskSpec: {
            params: [{ name: 'image' }],
            results: [{ name: 'digest' }],
            steps: [
              {
                name: 'sign',
                image: 'registry.invalid/signer:1',
                command: ['sign'],
                args: ['$(params.image)'],
                env: [{ name: `${RESULT_ENV_PREFIX}digest`, value: 'digest:{"image":"$(params.image)"}' }],
              },
            ],
          },
        },
      ],
    },
  } as KubernetesObject;
}

/**
 * The results a request with these params must end with: what the simulated
 * executor writes (so real Tekton's run of the benchmark Pipeline must
 * produce exactly the same), as the request's status has them (strings).
 */
export function expectedResults(params: Record<string, string>): Record<string, string> {
  const pr = { spec: { params: Object.entries(params).map(([name, value]) => ({ name, value })) } } as unknown as PipelineRunObject;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(deterministicResults(pr, benchPipeline()))) out[k] = typeof v === 'string' ? v : JSON.stringify(v);
  return out;
}
