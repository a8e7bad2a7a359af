/**
 * What a reference must look like before anything else is read of it, and
 * what the walk (graph.ts) says of one it refuses. Pure.
 */
/** A resolver reference with its params (graph-model.ts's RemoteRef has this shape). */
type ResolverRef = { resolver: string; params: Array<{ name: string; value: string }> };

const q = (s: string) => JSON.stringify(s);

/**
 * The cluster resolver as the Go controller's requests use it: `name` only,
 * the Go controller adding `namespace` (its own) and `kind` (pipeline) itself.
 * Tekton's cluster resolver would default a missing kind to "task", so the
 * missing params are written out here, by position — the controller's
 * namespace (the only one the rule lets the cluster resolver read) and the
 * kind the reference must be — and the checks, the resolution and the
 * record all see them. A request in that shape runs after the switch as it
 * did under the Go controller (docs/migrating.md).
 */
export function clusterDefaults<R extends ResolverRef>(ref: R, controllerNamespace: string, kinds: readonly string[]): R {
  if (ref.resolver !== 'cluster' || kinds.length !== 1) return ref;
  const has = (n: string) => ref.params.some((p) => p.name === n);
  const add = [...(has('kind') ? [] : [{ name: 'kind', value: kinds[0]!.toLowerCase() }]), ...(has('namespace') ? [] : [{ name: 'namespace', value: controllerNamespace }])];
  return add.length ? { ...ref, params: [...ref.params, ...add] } : ref;
}

/**
 * A reference's shape, before anything else is read of it: a name or a
 * resolver (never both, never neither: Tekton's default-resolver-type would
 * give a reference with no name a resolver when the run is created), and no
 * field beyond `allowed`. Returns why it is refused, or undefined.
 */
export function refShape(ref: Record<string, unknown>, where: string, allowed: readonly string[]): string | undefined {
  const extra = Object.keys(ref).filter((k) => !allowed.includes(k));
  if (extra.length) return `${where} has ${extra.map(q).join(', ')}, which this controller does not understand there, so it is refused rather than passed on to Tekton`;
  const hasName = typeof ref['name'] === 'string' && ref['name'].trim() !== '';
  const hasResolver = typeof ref['resolver'] === 'string' && ref['resolver'].trim() !== '';
  if (ref['name'] !== undefined && !hasName) return `${where}.name is empty or not a string`;
  if (ref['resolver'] !== undefined && !hasResolver) return `${where}.resolver is empty or not a string`;
  if (hasName && hasResolver) return `${where} has both a name and a resolver; give one of them`;
  if (!hasName && !hasResolver) {
    return `${where} has neither a name nor a resolver: Tekton would fill in the resolver its config-defaults name (default-resolver-type) and resolve it at run time, unchecked, so it is refused; name an installed object or give a resolver and params that the source policy allows`;
  }
  if (hasName && ref['params'] !== undefined) return `${where} has params but no resolver`;
  return undefined;
}

/** A Task spec that Tekton would take for a custom task (an embedded apiVersion/kind/spec): why it is refused, or undefined. */
export function customTask(spec: Record<string, unknown>, where: string): string | undefined {
  // Tekton stores an embedded task with "spec": null: only a value there makes it a custom task.
  const given = (v: unknown) => v !== undefined && v !== null && v !== '';
  if (!given(spec['apiVersion']) && !given(spec['kind']) && !given(spec['spec'])) return undefined;
  return `${where} is a custom task (${q(String(spec['kind'] ?? spec['apiVersion'] ?? 'spec'))}): Tekton would hand it to another controller, which nothing here checks; only Tasks run here`;
}

/** For a refused literal reference of the administrators' own Pipeline or Task: what changed and what to write. */
export function adminHint(installedBy: string | undefined, from: readonly string[]): string {
  if (!installedBy || from.length) return '';
  return ` (a reference written in ${installedBy}: the references of installed Pipelines and Tasks are checked against the source policy and pinned like a requester's; allow the source with a rule in sources of the InternalServicesConfig, see docs/migrating.md)`;
}
