/**
 * The copy of a checked StepAction that a step of a run refers to by name
 * (graph.ts): Tekton cannot embed a StepAction in a step, so what the
 * controller checked is created in its namespace under a name derived from
 * the spec, and nothing is resolved or read again. Pure.
 */
import { createHash } from 'node:crypto';

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** A checked StepAction, as it is created in the controller's namespace for steps to refer to by name. */
export interface StepActionCopy {
  apiVersion: 'tekton.dev/v1beta1';
  kind: 'StepAction';
  metadata: { name: string; namespace: string; labels: Record<string, string>; annotations: Record<string, string> };
  spec: Record<string, unknown>;
}

/** Labels the controller's StepAction copies (for the sweep that removes those no PipelineRun refers to). */
export const LABEL_STEPACTION_COPY = 'internal-services.dev/stepaction-copy';
/** The prefix of their names: a step of untrusted content may not name one (it was checked under another request's rules). */
export const STEPACTION_COPY_PREFIX = 'is-stepaction-';
/** On a copy: the source it was first checked from (the provenance of that reference). */
export const ANNOTATION_STEPACTION_SOURCE = 'internal-services.dev/checked-source';

/** JSON with object keys in sorted order, so that equal objects hash equally whatever the order they were written in. */
function canonicalJson(x: unknown): string {
  if (Array.isArray(x)) return `[${x.map(canonicalJson).join(',')}]`;
  if (isObj(x)) return `{${Object.keys(x).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(x[k])}`).join(',')}}`;
  return JSON.stringify(x) ?? 'null';
}

/** The name of the copy of a checked StepAction's spec: derived from the spec itself (sha256, 128 bits shown). */
export function stepActionCopyName(spec: Record<string, unknown>): string {
  return `${STEPACTION_COPY_PREFIX}${createHash('sha256').update(canonicalJson(spec)).digest('hex').slice(0, 32)}`;
}

/** The object to create for a checked StepAction: its spec as checked, under a name derived from it. */
/** `from`: where it was checked from (a reference's provenance: source, path, revision, digest). */
export function stepActionCopy(obj: Record<string, unknown>, namespace: string, from: { source: string; path?: string; revision?: string; digest?: string }): StepActionCopy {
  const spec = structuredClone(obj['spec'] as Record<string, unknown>);
  return {
    apiVersion: 'tekton.dev/v1beta1',
    kind: 'StepAction',
    metadata: {
      name: stepActionCopyName(spec),
      namespace,
      labels: { 'app.kubernetes.io/managed-by': 'internal-services', [LABEL_STEPACTION_COPY]: 'true' },
      annotations: { [ANNOTATION_STEPACTION_SOURCE]: JSON.stringify({ source: from.source, path: from.path, revision: from.revision, digest: from.digest }) },
    },
    spec,
  };
}
