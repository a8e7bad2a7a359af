/**
 * What a request asks for, whichever of the two shapes it uses:
 *   spec.request: NAME                                   (the original design)
 *   spec.pipeline: {pipelineRef: {name | resolver+params}, serviceAccountName,
 *                   timeouts, params}                    (release tooling since 2025)
 * folded into one value. Fields that say the same thing in both places
 * (service account, timeouts, params) are merged; a contradiction is an
 * error with a message, never a silent choice. Pure: no I/O.
 */
import type { InternalRequestSpec } from '../api/types.js';
import type { Timeouts } from '../policy/limits.js';
import { compareText } from '../util/compare.js';

export type { Timeouts };

interface Common {
  /** spec.params and spec.pipeline.params merged (plus ociStorage). */
  params: Record<string, string>;
  timeouts: Timeouts | undefined;
  serviceAccount: string | undefined;
  /** spec.pipeline.pipelineRef.useEmptyDir: the workspace is an emptyDir. */
  emptyDirWorkspace: boolean;
}

export type Requested =
  | ({ kind: 'installed'; pipeline: string } & Common)
  | ({ kind: 'resolver'; resolver: string; resolverParams: Array<{ name: string; value: string }> } & Common)
  | { kind: 'invalid'; message: string };

/** The Pipeline name a request asks for, when it names an installed one. */
export function installedPipelineName(spec: InternalRequestSpec | undefined): string | undefined {
  return spec?.request ?? spec?.pipeline?.pipelineRef?.name;
}

/** The service account a request names (spec.serviceAccount or spec.pipeline.serviceAccountName), if any. */
export function requestedServiceAccount(request: { spec?: InternalRequestSpec } | undefined): string | undefined {
  return request?.spec?.serviceAccount ?? request?.spec?.pipeline?.serviceAccountName ?? undefined;
}

/** A short description of what was requested: "sign-image", or "git: pipelines/x.yaml". */
export function describeRequested(spec: InternalRequestSpec | undefined): string {
  const name = installedPipelineName(spec);
  if (name) return name;
  const ref = spec?.pipeline?.pipelineRef;
  if (!ref?.resolver) return '';
  const p = new Map((ref.params ?? []).map((x) => [x.name, x.value]));
  const where = p.get('pathInRepo') ?? p.get('bundle') ?? p.get('url') ?? p.get('name') ?? '';
  return where ? `${ref.resolver}: ${where}` : ref.resolver;
}

export function requestedOf(spec: InternalRequestSpec): Requested {
  const pipeline = spec.pipeline;
  const ref = pipeline?.pipelineRef;

  // Params: spec.params, then spec.pipeline.params, then ociStorage.
  const params: Record<string, string> = { ...(spec.params ?? {}) };
  const from: Record<string, string> = Object.fromEntries(Object.keys(params).map((k) => [k, 'spec.params']));
  const add = (name: string, value: string, where: string): string | undefined => {
    if (name in params && params[name] !== value) {
      return `param ${JSON.stringify(name)} is given twice with different values, in ${from[name]} and in ${where}; give it once`;
    }
    params[name] = value;
    from[name] = where;
    return undefined;
  };
  for (const p of pipeline?.params ?? []) {
    const err = add(p.name, p.value, 'spec.pipeline.params');
    if (err) return { kind: 'invalid', message: err };
  }
  if (ref?.ociStorage) {
    const err = add('ociStorage', ref.ociStorage, 'spec.pipeline.pipelineRef.ociStorage');
    if (err) return { kind: 'invalid', message: err };
  }

  if ((pipeline?.taskRunSpecs ?? []).length > 0) {
    return {
      kind: 'invalid',
      message:
        'spec.pipeline.taskRunSpecs is not supported here: per-task service accounts, pod templates and compute resources are chosen by the administrators of the internal cluster, not by requests; remove it',
    };
  }
  const sa = spec.serviceAccount;
  const sa2 = pipeline?.serviceAccountName;
  if (sa && sa2 && sa !== sa2) {
    return { kind: 'invalid', message: `spec.serviceAccount ${JSON.stringify(sa)} and spec.pipeline.serviceAccountName ${JSON.stringify(sa2)} differ; give one of them` };
  }
  const t = nonEmpty(spec.timeouts);
  const t2 = nonEmpty(pipeline?.timeouts);
  if (t && t2 && JSON.stringify(sorted(t)) !== JSON.stringify(sorted(t2))) {
    return { kind: 'invalid', message: `spec.timeouts ${JSON.stringify(sorted(t))} and spec.pipeline.timeouts ${JSON.stringify(sorted(t2))} differ; give one of them` };
  }
  const common: Common = { params, timeouts: t ?? t2, serviceAccount: sa ?? sa2, emptyDirWorkspace: ref?.useEmptyDir === true };

  if (spec.request !== undefined && pipeline !== undefined) {
    return { kind: 'invalid', message: 'give exactly one of spec.request or spec.pipeline, not both' };
  }
  if (spec.request !== undefined) return { kind: 'installed', pipeline: spec.request, ...common };
  if (!ref) return { kind: 'invalid', message: 'give one of spec.request (a Pipeline name) or spec.pipeline.pipelineRef' };
  if (ref.name !== undefined && ref.resolver !== undefined) {
    return { kind: 'invalid', message: 'spec.pipeline.pipelineRef needs exactly one of name or resolver, not both' };
  }
  if (ref.name !== undefined) return { kind: 'installed', pipeline: ref.name, ...common };
  if (ref.resolver !== undefined) return { kind: 'resolver', resolver: ref.resolver, resolverParams: [...(ref.params ?? [])], ...common };
  return { kind: 'invalid', message: 'spec.pipeline.pipelineRef needs a name or a resolver' };
}

function nonEmpty(t: Timeouts | undefined): Timeouts | undefined {
  if (!t) return undefined;
  const out: Timeouts = {};
  if (t.pipeline) out.pipeline = t.pipeline;
  if (t.tasks) out.tasks = t.tasks;
  if (t.finally) out.finally = t.finally;
  return Object.keys(out).length ? out : undefined;
}

function sorted(t: Timeouts): Timeouts {
  return Object.fromEntries(Object.entries(t).sort(([a], [b]) => compareText(a, b))) as Timeouts;
}
