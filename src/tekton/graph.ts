/**
 * What will run, checked before it runs: every reference Tekton would
 * resolve while a PipelineRun executes — the Pipeline's tasks' and finally
 * tasks' taskRefs, the steps' refs (StepActions) of those Tasks — is worked
 * out here ahead of time, with the request's params (and the declared
 * defaults) substituted, checked against the source policy, resolved, and
 * pinned to what was checked. One reading: Tekton never fetches or parses
 * again what was checked here. A resolved Task runs embedded (the
 * pipeline task's taskSpec is the object checked here, not a reference for
 * Tekton to resolve and decode with its own YAML reader); a resolved
 * StepAction, which Tekton cannot embed in a step, runs as a copy of the
 * checked object in the controller's namespace under a name derived from its
 * content (`stepActionCopyName`), which the step refers to by name. The
 * result is the Pipeline's spec so rewritten, to run as the PipelineRun's
 * pipelineSpec, the StepAction copies to create first, and a list of what
 * was resolved from where (the provenance written on the PipelineRun and the
 * request).
 *
 * Pure: contents come in through `lookup` (the controller resolves what
 * `pending` asks for and calls again). No I/O, no clock.
 *
 * The model (RemoteRef, Provenance, GraphInput, …) is in graph-model.ts and
 * $(…) substitution in substitution.ts; the checks themselves live in
 * src/policy/ (source.ts, canonical.ts).
 */
import { decodeResolved } from '../policy/one-reading.js';
import { checkSource, RESOLVER_PARAMS, type CommitCheck } from '../policy/source.js';
import { canonicalBundle } from '../policy/canonical-oci.js';
import { checkSignature, commitVerdict, contentSha256, contentVerdict, signersAfterCheck } from './reviewed.js';
import { refVerdict, type RefLookup } from '../policy/exact-ref.js';
import { pathVerdict, type PathCheck } from '../policy/path-check.js';
import { isFullSha } from '../policy/canonical.js';
import type { Resolution } from './resolve.js';
import { stepActionCopy, STEPACTION_COPY_PREFIX, type StepActionCopy } from './stepaction-copy.js';
import { adminHint, clusterDefaults, customTask, refShape } from './ref-shape.js';
import { digestOf, provenanceOf, type Followed, type GraphInput, type GraphRejection, type GraphResult, type Provenance, type RemoteRef } from './graph-model.js';
import { pipelineVars, substituteRef, taskVars, type Var } from './substitution.js';

/** Resolver params this controller passes on; others (tokens, secrets, server URLs) are refused. */
const KNOWN_PARAMS = RESOLVER_PARAMS;

const q = (s: string) => JSON.stringify(s);
const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const clone = <T>(x: T): T => structuredClone(x);

/**
 * Reads resolved content (YAML or JSON) and checks its kind. One reading:
 * text that Tekton's Go YAML reader (or a signer's, a reviewer's) could read
 * differently is refused, naming the line (src/policy/one-reading.ts); what
 * is returned is what is checked, verified and run.
 */
function parseResolved(content: Uint8Array | string, kinds: readonly string[]): { ok: true; obj: Record<string, unknown> } | { ok: false; message: string } {
  const decoded = decodeResolved(typeof content === 'string' ? Buffer.from(content, 'utf8') : content);
  if (!decoded.ok) return { ok: false, message: `the resolved file cannot be read one way only: ${decoded.why}; nothing ran` };
  const obj = decoded.value;
  if (!isObj(obj)) return { ok: false, message: 'the resolved file is not a Kubernetes object' };
  const kind = obj['kind'];
  const apiVersion = obj['apiVersion'];
  if (typeof kind !== 'string' || !kinds.includes(kind)) return { ok: false, message: `the resolved file is a ${q(String(kind))}, not a ${kinds.join(' or ')}` };
  if (apiVersion !== 'tekton.dev/v1' && !(kind === 'StepAction' && apiVersion === 'tekton.dev/v1beta1')) {
    return { ok: false, message: `the resolved ${kind} has apiVersion ${q(String(apiVersion))}; only tekton.dev/v1 can be checked and run here` };
  }
  if (!isObj(obj['spec'])) return { ok: false, message: `the resolved ${kind} has no spec` };
  return { ok: true, obj };
}

/** The params to run with, pinned to what was resolved; an error when the resolution cannot be pinned. */
export function pin(ref: RemoteRef, r: Extract<Resolution, { state: 'resolved' }>): { params: RemoteRef['params'] } | { error: string } {
  const d = digestOf(r);
  const params = ref.params.map((p) => ({ ...p }));
  const set = (name: string, value: string) => {
    const p = params.find((x) => x.name === name);
    if (p) p.value = value;
    else params.push({ name, value });
  };
  switch (ref.resolver) {
    case 'git':
      if (d?.algo !== 'sha1' && d?.algo !== 'sha256') return { error: 'the git resolver reported no commit, so the reference cannot be pinned' };
      set('revision', d.hex);
      return { params };
    case 'http':
      // The content is what was hashed, checked and runs embedded; the URL is only where it was fetched from.
      return { params };
    case 'bundles': {
      if (d?.algo !== 'sha256') return { error: 'the bundles resolver reported no digest, so the reference cannot be pinned' };
      const b = canonicalBundle(params.find((p) => p.name === 'bundle')?.value ?? '');
      if (!b.ok) return { error: `the bundle reference ${b.why}, so it cannot be pinned` };
      set('bundle', `${b.value.repository}@sha256:${d.hex}`);
      return { params };
    }
    default:
      // cluster: objects of the controller's namespace, the administrators'.
      return { params };
  }
}

/** Refuses resolver params this controller does not pass on. */
export function unknownResolverParams(ref: RemoteRef): string | undefined {
  const known = KNOWN_PARAMS[ref.resolver];
  if (!known) return undefined; // the policy refuses the resolver itself
  const extra = ref.params.map((p) => p.name).filter((n) => !known.includes(n));
  return extra.length ? `resolver params ${extra.map(q).join(', ')} are not accepted for the ${ref.resolver} resolver (only ${known.map(q).join(', ')})` : undefined;
}

/**
 * One reference (already substituted): put in canonical form and checked
 * against the policy, looked up in that form, parsed as one of `kinds`, and
 * pinned to what was resolved. What was checked is what is resolved and run:
 * the canonical params, never the ones given. `from` names the params its
 * values came from, for messages.
 */
export function followReference(
  input: Pick<GraphInput, 'policy' | 'namespace' | 'controllerNamespace' | 'lookup' | 'commits' | 'refs' | 'paths' | 'resolversRefused'>,
  where: string,
  ref: RemoteRef,
  from: string[],
  kinds: readonly string[],
): Followed {
  const via = from.length ? ` (values from ${from.join(', ')})` : '';
  if (input.resolversRefused) return { kind: 'refused', message: `${where}${via}: ${input.resolversRefused}`, code: 'REQUEST_SOURCE_NOT_ALLOWED' };
  const extra = unknownResolverParams(ref);
  if (extra) return { kind: 'refused', message: `${where}${via}: ${extra}`, code: 'REQUEST_SOURCE_NOT_ALLOWED' };
  ref = clusterDefaults(ref, input.controllerNamespace, kinds);
  const verdict = checkSource(input.policy, ref, { tenant: input.namespace, controllerNamespace: input.controllerNamespace });
  if (!verdict.allowed) return { kind: 'refused', message: `${where}${via}: ${verdict.message}`, code: 'REQUEST_SOURCE_NOT_ALLOWED' };
  ref = { resolver: ref.resolver, params: verdict.params };
  // The controller's StepAction copies, reached through the cluster resolver
  // (on the canonical name): never, whichever rule allows the namespace.
  const copyName = ref.resolver === 'cluster' ? ref.params.find((p) => p.name === 'name' && p.value.startsWith(STEPACTION_COPY_PREFIX)) : undefined;
  if (copyName) {
    return {
      kind: 'refused',
      message: `${where}${via}: ${q(copyName.value)} is a copy the controller made of a StepAction it checked for another decision; copies are never reached through a resolver. Refer to the StepAction's own source, which is checked for this request`,
      code: 'REQUEST_SOURCE_NOT_ALLOWED',
    };
  }
  let reachableFrom: string | undefined;
  if (verdict.commitCheck) {
    // A commit by SHA: found in the repository from an allowed ref before
    // anything is resolved, or refused (reviewed.ts).
    const c = commitVerdict(verdict.commitCheck, input.commits?.(verdict.commitCheck), `${where}${via}`);
    if (c.kind === 'check') return c;
    if (c.kind === 'pending') return { kind: 'pending', ref };
    if (c.kind === 'refused') return c;
    reachableFrom = c.ref;
  }
  // A branch or tag: looked up exactly, and the commit it points at is what
  // the resolver is given (never the name, which git would guess about).
  let exact: { ref: string; commit: string } | undefined;
  const revision = ref.resolver === 'git' ? ref.params.find((p) => p.name === 'revision')?.value : undefined;
  if (revision !== undefined && !isFullSha(revision)) {
    const url = ref.params.find((p) => p.name === 'url')?.value ?? '';
    const e = refVerdict({ url, ref: revision }, input.refs?.({ url, ref: revision }), `${where}${via}`);
    if (e.kind === 'lookup' || e.kind === 'refused') return e;
    if (e.kind === 'pending') return { kind: 'pending', ref };
    exact = { ref: revision, commit: e.commit };
    ref = { resolver: ref.resolver, params: ref.params.map((p) => (p.name === 'revision' ? { name: p.name, value: e.commit } : p)), forRef: revision };
  }
  // The rule's paths hold for the file read: at that commit, pathInRepo is a
  // regular file reached through directories, never a symbolic link or a
  // submodule (src/policy/path-check.ts); checked before anything is resolved.
  if (ref.resolver === 'git' && input.paths) {
    const get = (n: string) => ref.params.find((p) => p.name === n)?.value ?? '';
    const check: PathCheck = { url: get('url'), commit: get('revision'), path: get('pathInRepo') };
    const pv = pathVerdict(check, input.paths(check), `${where}${via}`);
    if (pv.kind === 'check') return { kind: 'pathCheck', check };
    if (pv.kind === 'pending') return { kind: 'pending', ref };
    if (pv.kind === 'refused') return pv;
  }
  const r = input.lookup(ref);
  if (!r) return { kind: 'need', ref };
  if (r.state === 'pending') return { kind: 'pending', ref };
  if (r.state === 'failed') return { kind: 'refused', message: `${where}${via}: resolving it with the ${ref.resolver} resolver failed: ${r.message}`, code: 'REQUEST_RESOLUTION_FAILED' };
  const parsed = parseResolved(r.content, kinds);
  if (!parsed.ok) return { kind: 'refused', message: `${where}: ${parsed.message}`, code: 'REQUEST_RESOLUTION_FAILED' };
  const pinned = pin(ref, r);
  if ('error' in pinned) return { kind: 'refused', message: `${where}: ${pinned.error}`, code: 'REQUEST_RESOLUTION_FAILED' };
  const got = digestOf(r)?.hex;
  if (exact && got !== exact.commit) {
    return { kind: 'refused', message: `${where}: the git resolver reported commit ${q(got ?? 'none')} for ${q(exact.ref)}, not the commit ${q(exact.commit)} it was asked for; nothing ran`, code: 'REQUEST_RESOLUTION_FAILED' };
  }
  let signedBy: string | undefined;
  let contentDigest: string | undefined;
  if (verdict.contentRules) {
    // http: bound by the bytes themselves (the URL may redirect, and what it serves may change).
    contentDigest = contentSha256(r.content);
    const c = contentVerdict(verdict.contentRules, contentDigest, parsed.obj, `${where}${via}`);
    if ('refused' in c) return { kind: 'refused', message: c.refused, code: c.code };
    signedBy = c.signedBy;
  }
  const { rule, signers } = signersAfterCheck(verdict, reachableFrom);
  if (signers) {
    // Over exactly the content that was resolved, pinned and runs.
    const sig = checkSignature(parsed.obj, signers, rule);
    if ('refused' in sig) return { kind: 'refused', message: `${where}${via}: ${sig.refused}`, code: 'REQUEST_SIGNATURE_INVALID' };
    signedBy = sig.key;
  }
  const provenance = { ...provenanceOf(where, ref, r), ...(exact ? { revision: exact.ref } : {}), ...(contentDigest ? { digest: `sha256:${contentDigest}` } : {}) };
  return {
    kind: 'resolved',
    obj: parsed.obj,
    pinned: { resolver: ref.resolver, params: pinned.params },
    provenance: { ...provenance, ...(reachableFrom ? { reachableFrom } : {}), ...(signedBy ? { signedBy } : {}) },
  };
}

export function checkGraph(input: GraphInput): GraphResult {
  const spec = clone(input.spec);
  const context = new Map([
    ['context.pipelineRun.name', input.pipelineRunName],
    ['context.pipelineRun.namespace', input.controllerNamespace],
    ['context.pipeline.name', input.pipelineName],
  ]);
  const pvars = pipelineVars(spec, input.params);
  const need: RemoteRef[] = [];
  const checks: CommitCheck[] = [];
  const lookups: RefLookup[] = [];
  const pathChecks: PathCheck[] = [];
  let pending = false;
  let changed = false;
  const provenance: Provenance[] = [];
  const copies = new Map<string, StepActionCopy>();
  // Whose words a literal reference is, for messages: the administrators'
  // references are checked and pinned like any other (issue 51), and a
  // refusal tells them what to write.
  const installedBy = input.origin === 'installed' ? `the installed Pipeline ${q(input.pipelineName)}` : undefined;

  for (const section of ['tasks', 'finally'] as const) {
    const list = spec[section];
    if (list === undefined) continue;
    if (!Array.isArray(list)) return { state: 'rejected', code: 'REQUEST_INVALID', message: `the Pipeline's ${section} is not a list` };
    for (const pt of list) {
      if (!isObj(pt)) return { state: 'rejected', code: 'REQUEST_INVALID', message: `the Pipeline's ${section} holds an entry that is not an object` };
      const name = typeof pt['name'] === 'string' ? pt['name'] : '?';
      const where = `${section}[${name}]`;
      if (pt['pipelineRef'] !== undefined || pt['pipelineSpec'] !== undefined) {
        return { state: 'rejected', code: 'REQUEST_SOURCE_NOT_ALLOWED', message: `${where} is a nested Pipeline (pipelineRef/pipelineSpec); nested Pipelines are not run here, because their references cannot be checked and pinned before the run` };
      }
      const taskRef = pt['taskRef'];
      if (isObj(taskRef)) {
        if (taskRef['apiVersion'] !== undefined || (taskRef['kind'] !== undefined && taskRef['kind'] !== 'Task')) {
          return { state: 'rejected', code: 'REQUEST_SOURCE_NOT_ALLOWED', message: `${where}.taskRef names a ${q(String(taskRef['kind'] ?? taskRef['apiVersion']))}; only Tasks run here (no custom tasks or cluster-scoped tasks)` };
        }
        if (taskRef['bundle'] !== undefined) return { state: 'rejected', code: 'REQUEST_SOURCE_NOT_ALLOWED', message: `${where}.taskRef.bundle is not supported; use the bundles resolver` };
        const shape = refShape(taskRef, `${where}.taskRef`, ['name', 'kind', 'resolver', 'params']);
        if (shape) return { state: 'rejected', code: 'REQUEST_SOURCE_NOT_ALLOWED', message: shape };
        let taskObj: Record<string, unknown> | undefined;
        let taskName: string | undefined;
        let resolvedTask = false;
        if (typeof taskRef['resolver'] === 'string') {
          const s = substituteRef(taskRef['resolver'], taskRef['params'], pvars, context);
          if (s.dynamic.length) {
            return { state: 'rejected', code: 'REQUEST_SOURCE_NOT_ALLOWED', message: `${where}.taskRef cannot be checked before the run, so it is refused: ${s.dynamic.join('; ')}` };
          }
          const v = followReference(input, `${where}.taskRef`, s.ref, s.from, ['Task']);
          if (v.kind === 'refused') return { state: 'rejected', code: v.code, message: v.message + adminHint(installedBy, s.from) };
          if (v.kind === 'need') need.push(v.ref);
          if (v.kind === 'check') checks.push(v.check);
          if (v.kind === 'lookup') lookups.push(v.lookup);
          if (v.kind === 'pathCheck') pathChecks.push(v.check);
          if (v.kind !== 'resolved') {
            pending = true;
            continue;
          }
          provenance.push(v.provenance);
          taskObj = v.obj;
          resolvedTask = true;
        } else {
          // A Task installed in the controller's namespace (refShape made
          // sure it has a name): the administrators', but the params it is
          // given may not be, and its own references are checked too.
          taskName = String(taskRef['name']);
          taskObj = input.installedTask(taskName);
          if (!taskObj) {
            return { state: 'rejected', code: 'REQUEST_PIPELINE_NOT_FOUND', message: `${where}.taskRef names Task ${q(taskName)}, which is not installed in namespace ${q(input.controllerNamespace)} of the internal cluster; nothing ran` };
          }
        }
        const tspec = taskObj['spec'];
        if (!isObj(tspec)) return { state: 'rejected', code: 'REQUEST_INVALID', message: `${where}.taskRef: the Task has no spec` };
        const custom = customTask(tspec, `${where}.taskRef`);
        if (custom) return { state: 'rejected', code: 'REQUEST_SOURCE_NOT_ALLOWED', message: custom };
        const by = taskName ? `the installed Task ${q(taskName)}` : resolvedTask ? undefined : installedBy;
        const steps = checkSteps(input, where, tspec, pt['params'], pvars, context, name, by, { need, checks, lookups, pathChecks }, provenance, copies);
        if (steps.state === 'rejected') return steps;
        if (steps.state === 'pending') pending = true;
        else if (steps.embed || resolvedTask) {
          // A resolved Task runs embedded, as checked: Tekton neither fetches
          // it again nor reads its text with another YAML reader. So does an
          // installed one whose step references had to be pinned.
          const md = isObj(taskObj['metadata']) ? taskObj['metadata'] : {};
          const labels = isObj(md['labels']) ? md['labels'] : undefined;
          const annotations = isObj(md['annotations']) ? md['annotations'] : undefined;
          delete pt['taskRef'];
          pt['taskSpec'] = { ...(labels || annotations ? { metadata: { ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) } } : {}), ...(steps.embed ?? clone(taskObj['spec'] as Record<string, unknown>)) };
          changed = true;
        }
        continue;
      }
      const taskSpec = pt['taskSpec'];
      if (isObj(taskSpec)) {
        const custom = customTask(taskSpec, `${where}.taskSpec`);
        if (custom) return { state: 'rejected', code: 'REQUEST_SOURCE_NOT_ALLOWED', message: custom };
        const steps = checkSteps(input, where, taskSpec, pt['params'], pvars, context, name, installedBy, { need, checks, lookups, pathChecks }, provenance, copies);
        if (steps.state === 'rejected') return steps;
        if (steps.state === 'pending') pending = true;
        else if (steps.embed) {
          pt['taskSpec'] = { ...(isObj(taskSpec['metadata']) ? { metadata: taskSpec['metadata'] } : {}), ...steps.embed };
          changed = true;
        }
        continue;
      }
      return { state: 'rejected', code: 'REQUEST_SOURCE_NOT_ALLOWED', message: `${where} has neither a taskRef nor a taskSpec; nothing else runs here` };
    }
  }
  if (pending || need.length || checks.length || lookups.length) return { state: 'pending', need, checks, lookups, pathChecks };
  return { state: 'ready', spec: changed || input.origin === 'resolved' ? spec : undefined, provenance, stepActions: [...copies.values()] };
}

/**
 * The step refs (StepActions) of one Task. A ref to an installed StepAction
 * (by name) is the administrators'; a remote one is checked, resolved and
 * replaced by a reference to the copy of what was checked (added to
 * `copies`), which needs the Task embedded (returned as `embed`).
 */
function checkSteps(
  input: GraphInput,
  where: string,
  taskSpec: Record<string, unknown>,
  pipelineTaskParams: unknown,
  pvars: ReadonlyMap<string, Var>,
  context: ReadonlyMap<string, string>,
  task: string,
  /** Whose literal references these are when they are the administrators' (for messages), e.g. the installed Task "x". */
  installedBy: string | undefined,
  asks: { need: RemoteRef[]; checks: CommitCheck[]; lookups: RefLookup[]; pathChecks: PathCheck[] },
  provenance: Provenance[],
  copies: Map<string, StepActionCopy>,
): GraphRejection | { state: 'pending' } | { state: 'ok'; embed: Record<string, unknown> | undefined } {
  const steps = taskSpec['steps'];
  if (!Array.isArray(steps)) return { state: 'ok', embed: undefined };
  const vars = taskVars(taskSpec, pipelineTaskParams, pvars, context, task);
  const out = clone(taskSpec);
  const outSteps = out['steps'] as unknown[];
  let pending = false;
  let changed = false;
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i];
    if (!isObj(step)) return { state: 'rejected', code: 'REQUEST_INVALID', message: `${where}.steps[${i}] is not an object` };
    if (step['ref'] === undefined) continue;
    const stepWhere = `${where}.steps[${typeof step['name'] === 'string' ? step['name'] : i}].ref`;
    const ref = step['ref'];
    if (!isObj(ref)) return { state: 'rejected', code: 'REQUEST_INVALID', message: `${stepWhere} is not an object` };
    const shape = refShape(ref, stepWhere, ['name', 'resolver', 'params']);
    if (shape) return { state: 'rejected', code: 'REQUEST_SOURCE_NOT_ALLOWED', message: shape };
    if (typeof ref['resolver'] !== 'string') {
      // An installed StepAction, the administrators' — but never one of the
      // copies of checked StepActions, whoever names it: those were checked
      // for the decision they were made for, not this one.
      const named = String(ref['name']);
      if (named.trim().startsWith(STEPACTION_COPY_PREFIX)) {
        return { state: 'rejected', code: 'REQUEST_SOURCE_NOT_ALLOWED', message: `${stepWhere} names ${q(named)}, a copy the controller made of a StepAction it checked for another decision; refer to the StepAction's source through a resolver instead` };
      }
      continue;
    }
    const s = substituteRef(ref['resolver'], ref['params'], vars, context);
    if (s.dynamic.length) return { state: 'rejected', code: 'REQUEST_SOURCE_NOT_ALLOWED', message: `${stepWhere} cannot be checked before the run, so it is refused: ${s.dynamic.join('; ')}` };
    const v = followReference(input, stepWhere, s.ref, s.from, ['StepAction']);
    if (v.kind === 'refused') return { state: 'rejected', code: v.code, message: v.message + adminHint(installedBy, s.from) };
    if (v.kind === 'need') asks.need.push(v.ref);
    if (v.kind === 'check') asks.checks.push(v.check);
    if (v.kind === 'lookup') asks.lookups.push(v.lookup);
    if (v.kind === 'pathCheck') asks.pathChecks.push(v.check);
    if (v.kind !== 'resolved') {
      pending = true;
      continue;
    }
    const copy = stepActionCopy(v.obj, input.controllerNamespace, v.provenance);
    if (!copies.has(copy.metadata.name)) copies.set(copy.metadata.name, copy);
    (outSteps[i] as Record<string, unknown>)['ref'] = { name: copy.metadata.name };
    provenance.push(v.provenance);
    changed = true;
  }
  if (pending) return { state: 'pending' };
  return { state: 'ok', embed: changed ? out : undefined };
}
