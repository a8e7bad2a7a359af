/**
 * Who may run what: the per-namespace rules of the InternalServicesConfig,
 * and the allowList as their simple form. Pure: no I/O.
 *
 * A namespace that some rule names (by pattern or list) is governed by the
 * rules alone: the first rule, in order, that grants the requested Pipeline
 * decides, with its own service accounts, param constraints, timeouts and
 * sources. A namespace that no rule names is served if it is on the
 * allowList, with the global settings ("may run everything installed").
 * Anything else is refused, and the refusal names the rules that were
 * looked at.
 */
import { globMatch } from './glob.js';
import { hasSources, type SourcePolicy } from './source.js';
import { bareHint, describeTenant, entryFor, namespacesServedOn, splitTenant, tenantMatches } from './tenant.js';
import type { Limits, TimeoutPolicy } from './limits.js';

export interface ParamConstraints {
  /** Param names (globs) a request may give; undefined: any the Pipeline declares. */
  allowed?: string[];
  /** Per param: a regular expression the whole value must match. */
  patterns: Array<{ name: string; pattern: string }>;
}

/** What a grant carries: the settings a request is checked with once it is allowed. */
export interface Grant {
  /** For messages: `rules[0] ("signing")`, or `allowList`. */
  rule: string;
  serviceAccounts: ReadonlySet<string>;
  limits: Limits;
  timeouts: TimeoutPolicy;
  sources: SourcePolicy;
  params: ParamConstraints;
  /** What happens to a running request when the policy stops allowing it. */
  onRevoke: 'finish' | 'cancel';
  /** rule: the name approvers are authorized for (verb "approve" on rules.appstudio.redhat.com). */
  approval: { required: boolean; timeoutMs: number; rule: string };
  /** A temporary grant: from this time on (ms since the epoch) it grants nothing; `expires` as written, for messages. */
  expiry?: { atMs: number; expires: string };
}

export interface Rule extends Omit<Grant, 'rule'> {
  /** rules[i] or rules[i] ("name"). */
  label: string;
  namespaces: string[];
  /** Installed Pipelines (names, globs) the rule grants. */
  pipelines: string[];
}

export type Requested = { kind: 'installed'; pipeline: string } | { kind: 'resolver'; resolver: string };

export type GrantVerdict = { ok: true; grant: Grant } | { ok: false; message: string; code: 'REQUEST_NAMESPACE_NOT_ALLOWED' | 'REQUEST_PIPELINE_NOT_ALLOWED' | 'REQUEST_GRANT_EXPIRED' };

/** What grantFor() is told besides the configuration. */
export interface GrantOptions extends NotServedOptions {
  /**
   * The time of the decision (ms since the epoch). Without it a rule that
   * expires grants nothing: no clock, no temporary grant.
   */
  now?: number;
}

/** Whether a rule's temporary grant is over at `now` (always, when there is no `now`). */
export function hasExpired(r: Pick<Grant, 'expiry'>, now: number | undefined): boolean {
  return r.expiry !== undefined && (now === undefined || now >= r.expiry.atMs);
}

const q = (s: string) => JSON.stringify(s);

/** The rules that name a tenant (remote/namespace). */
export function rulesFor(rules: readonly Rule[], tenant: string): Rule[] {
  return rules.filter((r) => tenantMatches(r.namespaces, tenant));
}

type ServedBy = { rules: readonly Rule[]; allowList: readonly string[]; bareRemote?: string | undefined; bareEntries?: readonly string[]; source: string };

/** Whether the allowList or some rule names the tenant. */
export function isServed(cfg: ServedBy, tenant: string): boolean {
  return tenantMatches(cfg.allowList, tenant) || rulesFor(cfg.rules, tenant).length > 0;
}

/** How much a rejection may say about the tenant's remote. */
export interface NotServedOptions {
  /**
   * The remote is one tenant's own (a kcp workspace: every namespace in it is
   * the workspace's), so the message may name the namespaces served there.
   * Never on a shared remote cluster, where each namespace is another
   * tenant's: there it would tell one tenant the others' namespaces.
   */
  listServed?: boolean;
}

/** At most this many served namespaces are named in a rejection. */
const MAX_LISTED = 10;

/**
 * Why a tenant is not served, with the entry to write to serve it (exactly
 * as it goes into spec.allowList: `root:team-a/default` on kcp) and, on a
 * remote that is the tenant's own, which of its namespaces are served.
 */
export function notServedMessage(cfg: ServedBy, tenant: string, opts: NotServedOptions = {}): string {
  const hint = bareHint(cfg.bareEntries ?? [], cfg.bareRemote, tenant);
  const ask = hint ? `${hint}, or ask the administrators of the internal cluster to add it` : `ask the administrators of the internal cluster to add the entry ${q(entryFor(tenant, cfg.bareRemote))} to spec.allowList`;
  let served = '';
  if (opts.listServed) {
    const { remote } = splitTenant(tenant);
    const ns = namespacesServedOn([...cfg.allowList, ...cfg.rules.flatMap((r) => r.namespaces)], remote);
    const shown = ns.slice(0, MAX_LISTED).map(q).join(', ') + (ns.length > MAX_LISTED ? ` and ${ns.length - MAX_LISTED} more` : '');
    served = ns.length === 0 ? `; no namespace of remote ${q(remote)} is served` : `; requests of remote ${q(remote)} are served in ${ns.length === 1 ? 'namespace' : 'namespaces'} ${shown}`;
  }
  return `${describeTenant(tenant)} is not on the allowList of ${cfg.source}${cfg.rules.length ? ', and no rule names it' : ''}; ${ask}${served}`;
}

export function grantFor(
  cfg: ServedBy & { global: Omit<Grant, 'rule'> },
  tenant: string,
  what: Requested,
  opts: GrantOptions = {},
): GrantVerdict {
  const matching = rulesFor(cfg.rules, tenant);
  if (matching.length === 0) {
    if (tenantMatches(cfg.allowList, tenant)) return { ok: true, grant: { rule: 'allowList', ...cfg.global } };
    return {
      ok: false,
      code: 'REQUEST_NAMESPACE_NOT_ALLOWED',
      message: notServedMessage(cfg, tenant, opts),
    };
  }
  // An expired rule still names its namespaces (they stay governed by the
  // rules, never fall back to the allowList) but grants nothing.
  const expired: Rule[] = [];
  for (const r of matching) {
    const grants =
      what.kind === 'installed'
        ? r.pipelines.some((p) => globMatch(p, what.pipeline))
        : hasSources(r.sources);
    if (grants && hasExpired(r, opts.now)) {
      expired.push(r);
    } else if (grants) {
      const { label, namespaces: _n, pipelines: _p, ...grant } = r;
      return { ok: true, grant: { rule: label, ...grant } };
    }
  }
  if (expired.length > 0) {
    const r = expired[0]!;
    const asked = what.kind === 'installed' ? `Pipeline ${q(what.pipeline)}` : `remote Pipelines (the ${q(what.resolver)} resolver)`;
    return {
      ok: false,
      code: 'REQUEST_GRANT_EXPIRED',
      message: `${asked} ${what.kind === 'installed' ? 'was' : 'were'} granted to ${describeTenant(tenant)} by ${r.label} of ${cfg.source} until ${r.expiry!.expires}, and that grant has expired; ask the administrators of the internal cluster to renew it (its expires field) or to grant it by another rule`,
    };
  }
  const labels = matching.map((r) => r.label).join(', ');
  if (what.kind === 'installed') {
    const allowed = [...new Set(matching.flatMap((r) => r.pipelines))];
    return {
      ok: false,
      code: 'REQUEST_PIPELINE_NOT_ALLOWED',
      message: `Pipeline ${q(what.pipeline)} is not granted to ${describeTenant(tenant)} by ${cfg.source}: ${labels} ${matching.length > 1 ? 'grant' : 'grants'} ${allowed.length ? `only ${allowed.map(q).join(', ')}` : 'no installed Pipelines'}`,
    };
  }
  return {
    ok: false,
    code: 'REQUEST_PIPELINE_NOT_ALLOWED',
    message: `remote Pipelines (the ${q(what.resolver)} resolver) are not granted to ${describeTenant(tenant)} by ${cfg.source}: ${labels} ${matching.length > 1 ? 'have' : 'has'} no sources`,
  };
}

/** The params a grant allows: names and value patterns. Messages name the param, the rule and the constraint. */
export function checkParamConstraints(params: Record<string, string>, grant: Grant, source: string): { ok: true } | { ok: false; message: string } {
  const c = grant.params;
  const names = Object.keys(params).sort();
  if (c.allowed) {
    const refused = names.filter((n) => !c.allowed!.some((p) => globMatch(p, n)));
    if (refused.length) {
      return { ok: false, message: `params ${refused.map(q).join(', ')} may not be given under ${grant.rule} of ${source}; it allows ${c.allowed.length ? c.allowed.map(q).join(', ') : 'no params'}` };
    }
  }
  for (const { name, pattern } of c.patterns) {
    if (!(name in params)) continue;
    let re: RegExp;
    try {
      re = new RegExp(`^(?:${pattern})$`, 'u');
    } catch {
      return { ok: false, message: `${grant.rule} of ${source} has an invalid pattern for param ${q(name)}; ask the administrators of the internal cluster to fix it` };
    }
    if (!re.test(params[name]!)) {
      const v = params[name]!;
      const shown = v.length > 120 ? `${JSON.stringify(v.slice(0, 120))}…` : q(v);
      return { ok: false, message: `param ${q(name)} is ${shown}, which does not match the pattern ${q(pattern)} of ${grant.rule} of ${source}` };
    }
  }
  return { ok: true };
}
