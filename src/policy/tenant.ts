/**
 * Tenants: a namespace on one remote cluster, written `remote/namespace`.
 * Policy entries (allowList, rules[].namespaces, sources rules' namespaces)
 * may name a remote (`prod/team-a`, `*\/team-a`) or not (`team-a`); a bare
 * entry names the namespace on one remote only, the one `spec.defaultRemote`
 * (or the controller's --remote-kubeconfig remote) designates, because a
 * namespace called team-a on one public cluster and one called team-a on
 * another belong to different people. Pure: no I/O.
 */
import { globMatch } from './glob.js';

/** The name of the remote given by --remote-kubeconfig unless --remote-name says otherwise; objects made before remotes had names belong to it. */
export const DEFAULT_REMOTE = 'default';

/** Remote names: DNS labels (they appear in label values, keys and metrics). */
export const REMOTE_NAME_PATTERN = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function tenantOf(remote: string, namespace: string): string {
  return `${remote}/${namespace}`;
}

export function splitTenant(tenant: string): { remote: string; namespace: string } {
  const i = tenant.indexOf('/');
  return i < 0 ? { remote: DEFAULT_REMOTE, namespace: tenant } : { remote: tenant.slice(0, i), namespace: tenant.slice(i + 1) };
}

/** For messages: `namespace "team-a" on remote "prod"`. */
export function describeTenant(tenant: string): string {
  const t = splitTenant(tenant);
  return `namespace ${JSON.stringify(t.namespace)} on remote ${JSON.stringify(t.remote)}`;
}

/**
 * A policy entry as a pattern over tenants: `remote/namespace` as written; a
 * bare namespace on the remote that `bare` names (`*`: every remote;
 * undefined: none, and the entry matches nothing).
 */
export function qualify(entry: string, bare: string | undefined): string | undefined {
  if (entry.includes('/')) return entry;
  return bare === undefined ? undefined : `${bare}/${entry}`;
}

/** Entries qualified, the ones that name no remote dropped. */
export function qualifyAll(entries: readonly string[], bare: string | undefined): string[] {
  const out: string[] = [];
  for (const e of entries) {
    const q = qualify(e, bare);
    if (q !== undefined) out.push(q);
  }
  return out;
}

export function tenantMatches(patterns: readonly string[], tenant: string): boolean {
  return patterns.some((p) => globMatch(p, tenant));
}

/**
 * Why a bare entry did not grant this tenant, when one names its namespace
 * (for a rejection message the requester and administrators can act on).
 */
export function bareHint(bareEntries: readonly string[], bare: string | undefined, tenant: string): string | undefined {
  const t = splitTenant(tenant);
  const hit = bareEntries.find((e) => globMatch(e, t.namespace));
  if (hit === undefined) return undefined;
  const where = bare === undefined ? 'no remote (spec.defaultRemote is not set and the controller has no --remote-kubeconfig remote)' : `remote ${JSON.stringify(bare)} only`;
  return `the entry ${JSON.stringify(hit)} names a namespace without a remote, which means ${where}; write ${JSON.stringify(tenantOf(t.remote, t.namespace))} (or "*/${t.namespace}") to grant it here`;
}

/**
 * The allowList entry that serves exactly this tenant, as an administrator
 * writes it: `remote/namespace` (on kcp `root:org:team/namespace`), or the
 * bare namespace when the tenant is on the remote that bare entries name.
 */
export function entryFor(tenant: string, bare: string | undefined): string {
  const t = splitTenant(tenant);
  return bare !== undefined && bare !== '*' && bare === t.remote ? t.namespace : tenantOf(t.remote, t.namespace);
}

/**
 * The namespace patterns that qualified policy entries (`remote/namespace`
 * globs) serve on one remote, as written and in order, without duplicates.
 * Only entries whose remote part matches `remote` are looked at, and only
 * their namespace part is returned: nothing names another remote.
 */
export function namespacesServedOn(patterns: readonly string[], remote: string): string[] {
  const out: string[] = [];
  for (const p of patterns) {
    const segs = p.split('/');
    // A tenant is two segments; in a two-segment pattern "**" can only stand for one of them.
    if (segs.length !== 2) continue;
    const [r, ns] = segs.map((s) => (s === '**' ? '*' : s)) as [string, string];
    if (globMatch(r, remote) && !out.includes(ns)) out.push(ns);
  }
  return out;
}

/**
 * How a person names a request: `namespace/name` on the default remote,
 * `remote/namespace/name` on another, `root:org:team/namespace/name` in a
 * kcp workspace whose path is known (its logical cluster is nobody's word
 * for it).
 */
export function requestRef(remote: string, req: { metadata: { namespace?: string | undefined; name?: string | undefined } }, workspace?: string): string {
  const ref = `${req.metadata.namespace ?? ''}/${req.metadata.name ?? ''}`;
  if (workspace) return `${workspace}/${ref}`;
  return remote === DEFAULT_REMOTE ? ref : `${remote}/${ref}`;
}
