/**
 * How a person names a request on the command line, parsed once, before
 * anything is looked up:
 *
 * - `NAME` (its namespace from -n or the context), `NAMESPACE/NAME`;
 * - `REMOTE/NAMESPACE/NAME`: a remote other than the default one, or on kcp
 *   the request's logical cluster (both DNS labels, no `:`);
 * - `root:org:team/NAMESPACE/NAME`: on kcp, the request's workspace path
 *   (a `:` makes it a path: no remote or logical cluster name has one).
 *
 * Every part must already be in its canonical form (lowercase DNS labels,
 * the name a DNS subdomain): nothing is trimmed or lowercased, so that what
 * is matched is exactly what was written, and anything else is refused with
 * a message saying which part and what it must be. Pure: no I/O.
 */

/** Where a request is, when its name says. */
export type RequestScope = { kind: 'workspace'; path: string } | { kind: 'remote'; name: string };

export interface RequestName {
  scope?: RequestScope;
  namespace?: string;
  name: string;
}

export type Parsed = { ok: true; value: RequestName } | { ok: false; why: string };

const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export const REQUEST_NAME_FORMS = 'NAME (with -n), NAMESPACE/NAME, REMOTE/NAMESPACE/NAME, or on kcp WORKSPACE-PATH/NAMESPACE/NAME (e.g. root:org:team/team/my-request) or LOGICAL-CLUSTER/NAMESPACE/NAME';

/** A namespace as Kubernetes allows it (a DNS label): what -n must be where it goes into a label selector. */
export function isNamespace(s: string): boolean {
  return LABEL.test(s);
}

/** A kcp workspace path: `root`, `root:org`, `root:org:team`, … (each segment a DNS label). */
export function isWorkspacePath(s: string): boolean {
  const segs = s.split(':');
  return segs.length >= 1 && segs[0] === 'root' && segs.every((x) => LABEL.test(x));
}

export function parseRequestName(ref: string): Parsed {
  const parts = ref.split('/');
  if (parts.length > 3) return { ok: false, why: `${JSON.stringify(ref)} has ${parts.length} parts; give the request as ${REQUEST_NAME_FORMS}` };
  const name = parts[parts.length - 1]!;
  if (!name || name.length > 253 || !SUBDOMAIN.test(name)) return { ok: false, why: `${JSON.stringify(name)} in ${JSON.stringify(ref)} is not a request name (lowercase letters, digits, "-" and ".", at most 253)` };
  const value: RequestName = { name };
  if (parts.length >= 2) {
    const ns = parts[parts.length - 2]!;
    if (!LABEL.test(ns)) return { ok: false, why: `${JSON.stringify(ns)} in ${JSON.stringify(ref)} is not a namespace (a lowercase DNS label, at most 63)` };
    value.namespace = ns;
  }
  if (parts.length === 3) {
    const scope = parts[0]!;
    if (scope.includes(':')) {
      if (!isWorkspacePath(scope)) {
        return { ok: false, why: `${JSON.stringify(scope)} in ${JSON.stringify(ref)} is not a kcp workspace path: it starts with "root" and its parts, separated by ":", are lowercase DNS labels (e.g. root:org:team)` };
      }
      value.scope = { kind: 'workspace', path: scope };
    } else {
      if (!LABEL.test(scope)) return { ok: false, why: `${JSON.stringify(scope)} in ${JSON.stringify(ref)} is neither a remote or logical cluster name (a lowercase DNS label) nor a kcp workspace path (root:…)` };
      value.scope = { kind: 'remote', name: scope };
    }
  }
  return { ok: true, value };
}

/** How a request is shown to a person: its workspace path first where it has one, the logical cluster beside it. */
export function showRequest(r: { remote?: string | undefined; workspace?: string | undefined; namespace: string; name: string }, defaultRemote: string): string {
  const ref = `${r.namespace}/${r.name}`;
  if (r.workspace) return `${r.workspace}/${ref}${r.remote ? ` (logical cluster ${r.remote})` : ''}`;
  return r.remote && r.remote !== defaultRemote ? `${r.remote}/${ref}` : ref;
}
