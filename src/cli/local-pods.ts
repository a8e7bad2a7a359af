/**
 * Where the demo's pods run (issue 53): on the machine's real node when one
 * can start here (root, Debian's containerd, runc, CNI plugins and busybox:
 * the check real-node.test.ts skips on), otherwise on the simulated kubelet,
 * which the demo then names in its first lines and beside every run it shows.
 *
 * The samples' steps are `script:` steps that compute their results from
 * their params. For the real node, forPods() points each step at the node's
 * busybox image (imagePullPolicy Never: nothing is pulled). For the
 * simulated kubelet, which runs no script, it adds the SIMULATED_* env the
 * simulated kubelet reads: each result becomes `<result>:{<the params>}`
 * (Tekton substitutes them), a value that is plainly not a computed one.
 */
import { createHash } from 'node:crypto';
import { realNodeUnavailable, type Environment, type Manifest } from '../localenv/index.js';
import { FAIL_PARAM } from './local-samples.js';

export type Pods = { real: true } | { real: false; reason: string };

/** How long each simulated step "runs". */
export const STEP_DURATION = '1500ms';

/** The real node when it can start here (and was not declined), else why not. */
export function choosePods(declined = false): Pods {
  if (declined) return { real: false, reason: '--simulated-pods was given' };
  const why = realNodeUnavailable();
  return why ? { real: false, reason: why } : { real: true };
}

/** What the demo says beside every run: where its pods ran. */
export function podsLabel(pods: Pods): string {
  return pods.real ? 'pods on the real node' : `pods SIMULATED (no real node: ${pods.reason})`;
}

/** startEnvironment's options for these pods. */
export function environmentOptions(pods: Pods): { tekton: true | { stepMs: number }; node?: true } {
  return pods.real ? { tekton: true, node: true } : { tekton: { stepMs: 500 } };
}

type Env = Array<{ name: string; value: string }>;
type Step = { image?: string; imagePullPolicy?: string; env?: Env };
type TaskSpec = { params?: Array<{ name: string; type?: string }>; results?: Array<{ name: string }>; steps?: Step[] };

/** The step-carrying specs of a Task, or of a Pipeline's inline Tasks. */
function taskSpecs(obj: Manifest): TaskSpec[] {
  const spec = (obj['spec'] ?? {}) as TaskSpec & { tasks?: Array<{ taskSpec?: TaskSpec }>; finally?: Array<{ taskSpec?: TaskSpec }> };
  if (obj['kind'] === 'Task') return [spec];
  return [...(spec.tasks ?? []), ...(spec.finally ?? [])].flatMap((t) => (t.taskSpec ? [t.taskSpec] : []));
}

/**
 * The SIMULATED_* env for the simulated kubelet on the last step of each
 * Task: every declared result is `<name>:{"<param>":"<value>",…}` over the
 * Task's string params, and the step exits 1 when simulate-failure is "true".
 */
export function withSimulatedSteps(obj: Manifest, stepDuration = STEP_DURATION): Manifest {
  const copy = structuredClone(obj);
  for (const spec of taskSpecs(copy)) {
    if (!spec.steps?.length) continue;
    const params = (spec.params ?? []).filter((p) => p.type === undefined || p.type === 'string').map((p) => p.name);
    const derived = params.filter((p) => p !== FAIL_PARAM).map((p) => `"${p}":"$(params.${p})"`).join(',');
    const env: Env = [{ name: 'SIMULATED_DURATION', value: stepDuration }];
    if (params.includes(FAIL_PARAM)) env.push({ name: 'SIMULATED_FAIL', value: `$(params.${FAIL_PARAM})` });
    for (const r of spec.results ?? []) env.push({ name: `SIMULATED_RESULT_${r.name}`, value: `${r.name}:{${derived}}` });
    const last = spec.steps[spec.steps.length - 1]!;
    last.env = [...(last.env ?? []), ...env];
  }
  return copy;
}

/** Every step in the node's shell image, never pulled. */
export function onRealNode(obj: Manifest, shellImage: string): Manifest {
  const copy = structuredClone(obj);
  for (const spec of taskSpecs(copy)) {
    for (const step of spec.steps ?? []) {
      step.image = shellImage;
      step.imagePullPolicy = 'Never';
    }
  }
  return copy;
}

/** A sample Pipeline or Task, made ready for these pods. */
export function forPods(obj: Manifest, pods: Pods, env: Environment | undefined): Manifest {
  if (!pods.real) return withSimulatedSteps(obj);
  const shell = env?.node?.shellImage;
  if (!shell) throw new Error('the real node is not running: no shell image for the steps');
  return onRealNode(obj, shell);
}

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** What the sign step of the sample Pipeline (and of the catalog's Task) computes from its image param. */
export function signResults(image: string): { signature: string; 'log-index': string } {
  return { signature: `sha256:${sha256(image)}`, 'log-index': '0' };
}

/** What the step of the sample SigningRequest's Pipeline (config/samples/kinds/signing) computes. */
export function typedSignResults(p: { image: string; tags: string[]; keyRef: string; identity: string }): { signature: string; 'signed-by': string } {
  // printf '%s' "$IMAGE $*" | sha256sum | cut -d' ' -f1 | base64 -w0: the hex digest and its newline.
  return { signature: Buffer.from(`${sha256(`${p.image} ${p.tags.join(' ')}`)}\n`).toString('base64'), 'signed-by': `${p.identity} with ${p.keyRef}` };
}

/**
 * What is wrong with a result of a run of the sign step, or undefined: on the
 * real node the value the script computes (checked against `expected`), on the
 * simulated kubelet a value derived from the params (it contains the image).
 */
export function resultProblem(pods: Pods, name: string, value: string | undefined, image: string, expected: Record<string, string>): string | undefined {
  if (value === undefined) return `result "${name}" missing`;
  if (!pods.real) return value.includes(image) ? undefined : `result "${name}" is not derived from the params`;
  const want = expected[name];
  if (want === undefined) return undefined;
  return value === want ? undefined : `result "${name}" is "${value}", the step computes "${want}"`;
}
