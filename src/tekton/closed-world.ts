/**
 * The closed world, asserted on the object itself. A PipelineRun this
 * controller hands Tekton must ask Tekton to resolve nothing that the
 * controller did not check and pin: no `resolver` (nor `bundle`, nor a ref
 * Tekton's defaulting would give a resolver: one with no name) in any
 * position Tekton resolves, and every reference by name pointing at an
 * object the controller vouches for — a Pipeline or Task installed in its
 * namespace that is closed itself, an installed StepAction (a StepAction
 * refers to nothing further), or a StepAction copy the controller made for
 * this very decision.
 *
 * Independent of the walk that built the object (src/tekton/graph.ts): it
 * shares no code with it and reads only the final object, with allow-lists
 * of the fields Tekton v1 defines at each level. Whatever it does not
 * understand is a violation, never skipped: a field it does not know may be
 * one Tekton gives a meaning to. Used just before the create (decide.ts) and
 * over every PipelineRun an integration run created (the audit-log check).
 *
 * Pure: no I/O; the installed objects come in through the context.
 */

/** What the checker may rely on besides the PipelineRun itself. */
export interface ClosedWorldContext {
  /** An installed Pipeline of the controller's namespace by name (the whole object), or undefined. */
  installedPipeline(name: string): Record<string, unknown> | undefined;
  /** An installed Task of the controller's namespace by name (the whole object), or undefined. */
  installedTask(name: string): Record<string, unknown> | undefined;
  /** The StepAction copies made for this decision (their names): the only copies a step may name. */
  copies: ReadonlySet<string>;
  /** The prefix of the controller's StepAction copies' names. */
  copyPrefix: string;
}

/** One place where the object would leave the closed world. */
export interface Violation {
  /** Where, e.g. spec.pipelineSpec.tasks[sign].taskSpec.steps[0].ref */
  position: string;
  why: string;
}

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const q = (s: string) => JSON.stringify(s);

/** The fields of Tekton v1 objects at each level this check walks into. */
const FIELDS = {
  pipelineRunSpec: ['pipelineRef', 'pipelineSpec', 'params', 'status', 'timeouts', 'taskRunTemplate', 'workspaces', 'taskRunSpecs', 'managedBy'],
  pipelineSpec: ['displayName', 'description', 'tasks', 'params', 'workspaces', 'results', 'finally'],
  pipelineTask: ['name', 'displayName', 'description', 'taskRef', 'taskSpec', 'when', 'onError', 'retries', 'runAfter', 'params', 'matrix', 'workspaces', 'timeout'],
  taskSpec: ['params', 'displayName', 'description', 'steps', 'volumes', 'stepTemplate', 'sidecars', 'workspaces', 'results'],
  pipelineRef: ['name'],
  taskRef: ['name', 'kind'],
  stepRef: ['name'],
} as const;

/** Keys that make Tekton resolve something, with what each means, for messages. */
const RESOLVING: Record<string, string> = {
  resolver: 'a resolver Tekton would run',
  params: 'resolver params',
  bundle: 'an OCI bundle Tekton would fetch',
  apiVersion: 'a custom task or another kind',
  pipelineRef: 'a nested Pipeline',
  pipelineSpec: 'a nested Pipeline',
  spec: 'a custom task spec',
};

function unknownFields(obj: Record<string, unknown>, allowed: readonly string[], where: string, out: Violation[]): void {
  for (const k of Object.keys(obj)) {
    if (allowed.includes(k)) continue;
    const meaning = RESOLVING[k];
    out.push({ position: `${where}.${k}`, why: meaning ? `${q(k)} is ${meaning}; nothing may be resolved by Tekton` : `${q(k)} is not a field this controller understands here, so it is refused rather than passed on` });
  }
}

/** A field that says something: not absent, null or empty. */
const given = (v: unknown): boolean => v !== undefined && v !== null && v !== '';

function nonEmptyName(ref: Record<string, unknown>): string | undefined {
  const n = ref['name'];
  return typeof n === 'string' && n.trim() !== '' ? n : undefined;
}

/** The spec of an installed object (the whole object, as the API server has it). */
function specOf(x: Record<string, unknown>): Record<string, unknown> | undefined {
  return isObj(x['spec']) ? x['spec'] : undefined;
}

/** Checks a whole PipelineRun; returns every violation found (none: closed). */
export function closedWorldViolations(pr: { spec?: unknown }, ctx: ClosedWorldContext): Violation[] {
  const out: Violation[] = [];
  const spec = pr.spec;
  if (!isObj(spec)) return [{ position: 'spec', why: 'the PipelineRun has no spec' }];
  unknownFields(spec, FIELDS.pipelineRunSpec, 'spec', out);
  if (spec['taskRunSpecs'] !== undefined) out.push({ position: 'spec.taskRunSpecs', why: 'per-task specs are not made by this controller' });
  const ref = spec['pipelineRef'];
  const inline = spec['pipelineSpec'];
  if ((ref === undefined) === (inline === undefined)) {
    out.push({ position: 'spec', why: 'exactly one of pipelineRef and pipelineSpec must be given' });
    return out;
  }
  if (ref !== undefined) {
    if (!isObj(ref)) return [...out, { position: 'spec.pipelineRef', why: 'not an object' }];
    unknownFields(ref, FIELDS.pipelineRef, 'spec.pipelineRef', out);
    const name = nonEmptyName(ref);
    if (!name) {
      out.push({ position: 'spec.pipelineRef', why: "a reference with no name: Tekton's default-resolver-type would give it a resolver" });
      return out;
    }
    const installed = ctx.installedPipeline(name);
    const ispec = installed && specOf(installed);
    if (!ispec) out.push({ position: 'spec.pipelineRef', why: `names Pipeline ${q(name)}, which is not installed in the controller's namespace` });
    else walkPipeline(ispec, `Pipeline[${name}].spec`, ctx, out);
    return out;
  }
  if (!isObj(inline)) return [...out, { position: 'spec.pipelineSpec', why: 'not an object' }];
  walkPipeline(inline, 'spec.pipelineSpec', ctx, out);
  return out;
}

function walkPipeline(spec: Record<string, unknown>, where: string, ctx: ClosedWorldContext, out: Violation[]): void {
  unknownFields(spec, FIELDS.pipelineSpec, where, out);
  for (const section of ['tasks', 'finally'] as const) {
    const list = spec[section];
    if (list === undefined) continue;
    if (!Array.isArray(list)) {
      out.push({ position: `${where}.${section}`, why: 'not a list' });
      continue;
    }
    list.forEach((pt, i) => {
      const ptWhere = `${where}.${section}[${isObj(pt) && typeof pt['name'] === 'string' ? pt['name'] : i}]`;
      if (!isObj(pt)) {
        out.push({ position: ptWhere, why: 'not an object' });
        return;
      }
      walkPipelineTask(pt, ptWhere, ctx, out);
    });
  }
}

function walkPipelineTask(pt: Record<string, unknown>, where: string, ctx: ClosedWorldContext, out: Violation[]): void {
  unknownFields(pt, FIELDS.pipelineTask, where, out);
  const ref = pt['taskRef'];
  const inline = pt['taskSpec'];
  if ((ref === undefined) === (inline === undefined)) {
    out.push({ position: where, why: 'exactly one of taskRef and taskSpec must be given' });
    return;
  }
  if (ref !== undefined) {
    if (!isObj(ref)) return void out.push({ position: `${where}.taskRef`, why: 'not an object' });
    unknownFields(ref, FIELDS.taskRef, `${where}.taskRef`, out);
    if (ref['kind'] !== undefined && ref['kind'] !== 'Task') out.push({ position: `${where}.taskRef.kind`, why: `${q(String(ref['kind']))}: only namespaced Tasks run here` });
    const name = nonEmptyName(ref);
    if (!name) return void out.push({ position: `${where}.taskRef`, why: "a reference with no name: Tekton's default-resolver-type would give it a resolver" });
    const installed = ctx.installedTask(name);
    const tspec = installed && specOf(installed);
    if (!tspec) return void out.push({ position: `${where}.taskRef`, why: `names Task ${q(name)}, which is not installed in the controller's namespace` });
    walkTask(tspec, `${where}.taskRef[${name}].spec`, ctx, out, false);
    return;
  }
  if (!isObj(inline)) return void out.push({ position: `${where}.taskSpec`, why: 'not an object' });
  walkTask(inline, `${where}.taskSpec`, ctx, out, true);
}

function walkTask(spec: Record<string, unknown>, where: string, ctx: ClosedWorldContext, out: Violation[], embedded: boolean): void {
  // Tekton stores an embedded task with "spec": null and "metadata": {}: only a value there makes it a custom task.
  if (given(spec['apiVersion']) || given(spec['kind']) || given(spec['spec'])) {
    out.push({ position: where, why: `a custom task (${q(String(spec['kind'] ?? spec['apiVersion'] ?? 'spec'))}): Tekton would hand it to another controller; only Tasks run here` });
  }
  unknownFields(spec, embedded ? [...FIELDS.taskSpec, 'metadata', 'apiVersion', 'kind', 'spec'] : [...FIELDS.taskSpec, 'apiVersion', 'kind', 'spec'], where, out);
  for (const field of ['stepTemplate'] as const) {
    const t = spec[field];
    if (isObj(t) && t['ref'] !== undefined) out.push({ position: `${where}.${field}.ref`, why: 'a reference in a step template is not understood here' });
  }
  const sidecars = spec['sidecars'];
  if (Array.isArray(sidecars)) sidecars.forEach((s, i) => isObj(s) && s['ref'] !== undefined && out.push({ position: `${where}.sidecars[${i}].ref`, why: 'a reference in a sidecar is not understood here' }));
  const steps = spec['steps'];
  if (steps === undefined) return;
  if (!Array.isArray(steps)) return void out.push({ position: `${where}.steps`, why: 'not a list' });
  steps.forEach((step, i) => {
    const sWhere = `${where}.steps[${isObj(step) && typeof step['name'] === 'string' && step['name'] ? step['name'] : i}]`;
    if (!isObj(step)) return void out.push({ position: sWhere, why: 'not an object' });
    const ref = step['ref'];
    if (ref === undefined) return;
    if (!isObj(ref)) return void out.push({ position: `${sWhere}.ref`, why: 'not an object' });
    unknownFields(ref, FIELDS.stepRef, `${sWhere}.ref`, out);
    const name = nonEmptyName(ref);
    if (!name) return void out.push({ position: `${sWhere}.ref`, why: "a reference with no name: Tekton's default-resolver-type would give it a resolver" });
    if (name.startsWith(ctx.copyPrefix) && !ctx.copies.has(name)) {
      out.push({ position: `${sWhere}.ref`, why: `names ${q(name)}, a StepAction copy not made for this decision` });
    }
  });
}

/** The violations as one message, naming each position (at most `max`). */
export function describeViolations(vs: readonly Violation[], max = 5): string {
  const shown = vs.slice(0, max).map((v) => `${v.position}: ${v.why}`);
  return `${shown.join('; ')}${vs.length > max ? `; and ${vs.length - max} more` : ''}`;
}
