/**
 * The source policy: from where may a Pipeline (or a Task, a StepAction)
 * that a request makes Tekton resolve come? Default deny: a resolver no rule
 * allows is refused, and every refusal names the rule and the value.
 *
 * Canonical before compare: every param is first put in its canonical form
 * (src/policy/canonical.ts, canonical-oci.ts) or refused with the reason;
 * rules are matched on that form only, and that form is what an allowed
 * verdict hands back to be resolved and run.
 *
 * One repository, one name: a git rule's urls name repositories as spelled,
 * a trailing ".git" included. `x` and `x.git` are one repository only on the
 * hosts known to serve them so (DOT_GIT_ALIAS_HOSTS in canonical.ts) or under
 * a rule that says `dotGit: either`; a git server such as git daemon serves
 * them as two when both exist.
 *
 * Patterns are segment globs (src/policy/glob.ts): `*` within one segment,
 * `**` whole segments, never a ".." segment. A rule without `paths` allows
 * any path, which after canonicalization means any path inside the
 * repository. Rules are compiled in src/policy/rules.ts; one that cannot be
 * compiled grants nothing and is named in the refusals it could have mattered
 * for.
 *
 * Pure: no I/O. Applied to a request's pipelineRef and, through
 * src/tekton/graph.ts, to every reference of the Pipeline it resolves.
 */
import { describeTenant } from './tenant.js';
import { globMatch, matchGlob } from './glob.js';
import { canonicalGitUrl, canonicalHttpUrl, canonicalKind, canonicalNamespace, canonicalObjectName, canonicalPathInRepo, canonicalRevision, qualifyRevision, type Canon, type QualifiedRevision } from './canonical.js';
import { canonicalBundle } from './canonical-oci.js';
import { compileBundleRule, compileGitRule, compileHttpRule, dotGitNearMiss, DOT_GIT_ALIAS_HOSTS_TEXT, matchGitUrl, matchHttpUrl, type BundleRule, type Compiled, type CompiledGitRule, type GitRule, type HttpRule } from './rules.js';
import type { TrustedKey } from './trusted.js';

export type { BundleRule, GitRule, HttpRule };

export interface SourcePolicy {
  git: GitRule[];
  bundles: BundleRule[];
  /** Rules for the http resolver; absent: none. */
  http?: HttpRule[];
  /** The cluster resolver, for objects of the controller's namespace only. */
  cluster: boolean;
  /** Where the policy comes from, for messages, e.g. InternalServicesConfig internal-services/config. */
  source: string;
}

/** True when the policy allows any remote source at all. */
export function hasSources(p: Pick<SourcePolicy, 'git' | 'bundles' | 'http' | 'cluster'>): boolean {
  return p.git.length > 0 || p.bundles.length > 0 || (p.http?.length ?? 0) > 0 || p.cluster;
}

export type Param = { name: string; value: string };

/**
 * A commit to look for in a repository before anything is resolved: allowed
 * only if it is reachable from one of `refs` (qualified globs such as
 * refs/heads/main, refs/tags/v*) as the repository shows them now.
 */
export interface CommitCheck {
  /** The canonical repository URL. */
  url: string;
  /** Full SHA, lower case. */
  commit: string;
  /** Qualified ref globs, sorted, without duplicates. */
  refs: string[];
  /** The rules that would allow it, for messages. */
  rules: string[];
}

/** The key of one check: repository, commit and the refs it may be reachable from. */
export function checkKey(c: Pick<CommitCheck, 'url' | 'commit' | 'refs'>): string {
  return `${c.url}\n${c.commit}\n${c.refs.join('\n')}`;
}

/** What the repository says of a CommitCheck (src/git/commit-checker.ts asks it). */
export type CommitAnswer =
  | { state: 'pending' }
  /** ref: the first of the matching refs found to contain the commit. */
  | { state: 'reachable'; ref: string }
  /** refs: the refs (matching the globs) the commit was looked for in; empty when none matched. */
  | { state: 'unreachable'; refs: string[] }
  | { state: 'failed'; message: string };

/**
 * One rule that allows a commit asked for by SHA if the commit is reachable
 * from one of its refs: what it then requires. The rule that allowed the
 * reference is the first of these, in rule order, whose `refs` match the ref
 * the commit was found on (signersAfterCheck in src/tekton/reviewed.ts).
 */
export interface CommitRule {
  /** How messages name the rule (sources.git[i], or its name). */
  name: string;
  /** Its qualified ref globs (refs/heads/main, refs/tags/v*), as the rule orders them. */
  refs: string[];
  /** Its keys, one of which must have signed what is resolved under it; undefined: no signature required. */
  signers: TrustedKey[] | undefined;
}

/**
 * One rule that allows a file by its URL, and what it requires of the file
 * once it is resolved (the http resolver): its sha256 among `sha256`, and/or
 * a signature by one of `signers`. The rule that allowed the file is the
 * first of these, in rule order, whose requirements the content meets
 * (contentVerdict in src/tekton/reviewed.ts).
 */
export interface ContentRule {
  name: string;
  /** Lower-case hex digests, sorted; undefined: any content (then signers is set). */
  sha256: string[] | undefined;
  signers: TrustedKey[] | undefined;
}

/**
 * allowed: `params` are the canonical params (known ones only, in a fixed
 * order), to resolve and run; `commitCheck`: allowed only once the commit is
 * found reachable from the refs the rules name (the caller checks, then goes on).
 */
export type SourceVerdict =
  | {
      allowed: true;
      rule: string;
      params: Param[];
      commitCheck?: CommitCheck;
      /**
       * The rule requires every resource resolved under it to be signed by
       * one of these keys. With a commitCheck: the keys of every rule in
       * commitRules, which is NOT what applies once the commit is found (only
       * the keys of the rule whose refs it was found on do): use
       * signersAfterCheck (src/tekton/reviewed.ts) there. Kept for callers that
       * have not moved to it.
       */
      signers?: TrustedKey[];
      /** With a commitCheck: every rule that allows the commit if it is reachable from its refs, in rule order. */
      commitRules?: CommitRule[];
      /** http: every rule that allows the URL, in rule order; the content must meet one's requirements. */
      contentRules?: ContentRule[];
    }
  | { allowed: false; message: string };

export interface SourceRef {
  resolver: string;
  /** As a map, or as the list Tekton takes (where a name given twice is refused). */
  params: Record<string, string> | readonly Param[];
}

/** The params each resolver is given; others (tokens, secrets, server URLs) are refused. */
export const RESOLVER_PARAMS: Readonly<Record<string, readonly string[]>> = {
  git: ['url', 'revision', 'pathInRepo'],
  bundles: ['bundle', 'name', 'kind'],
  // No http-username / http-password-secret: a requester never names the internal cluster's Secrets.
  http: ['url'],
  cluster: ['kind', 'name', 'namespace'],
};

/** The production controller's field: exact URLs, any revision and path. */
export function policyFromAllowedGitURLs(urls: readonly string[], source: string): SourcePolicy {
  return { git: urls.length ? [gitRuleFromAllowedURLs(urls)] : [], bundles: [], cluster: false, source };
}

/**
 * allowedGitResolverURLs as a git rule: exact URLs (compared in canonical
 * form, a trailing ".git" included: `x` and `x.git` are two entries, except on
 * the hosts that serve both as one repository, DOT_GIT_ALIAS_HOSTS), every
 * branch and tag, commits reachable from them, any path inside the repository.
 */
export function gitRuleFromAllowedURLs(urls: readonly string[]): GitRule {
  return { name: 'allowedGitResolverURLs', urls: [...urls], exact: true, revisions: ['**', 'refs/tags/**'], commits: { reachable: true } };
}

const q = (s: string): string => JSON.stringify(s);

/** A value for a message: JSON-quoted, invisible characters escaped, long ones cut. */
export function shown(s: string): string {
  const cut = s.length > 200 ? `${s.slice(0, 200)}…` : s;
  return JSON.stringify(cut).replace(/[\p{Cf}\p{Zl}\p{Zp}\u007f-\u009f]/gu, (c) => `\\u${c.codePointAt(0)!.toString(16).padStart(4, '0')}`);
}

function paramMap(params: SourceRef['params']): { ok: true; map: Map<string, string> } | { ok: false; name: string } {
  if (!Array.isArray(params)) return { ok: true, map: new Map(Object.entries(params as Record<string, string>)) };
  const map = new Map<string, string>();
  for (const p of params as readonly Param[]) {
    if (map.has(p.name)) return { ok: false, name: p.name };
    map.set(p.name, p.value);
  }
  return { ok: true, map };
}

export function checkSource(policy: SourcePolicy, ref: SourceRef, ctx: { tenant: string; controllerNamespace: string }): SourceVerdict {
  const forNs = <R extends { namespaces?: string[] }>(rules: R[]): Array<[R, number]> =>
    rules.map((r, i) => [r, i] as [R, number]).filter(([r]) => !r.namespaces || r.namespaces.some((p) => globMatch(p, ctx.tenant)));
  const pm = paramMap(ref.params);
  if (!pm.ok) return { allowed: false, message: `the ${ref.resolver} param ${q(pm.name)} is given more than once` };
  const p = pm.map;
  /** A param without a canonical form: refused before `before` (the rules it would have been matched by) is applied. */
  const refuse = (param: string, raw: string, c: Canon<unknown> & { ok: false }, before: string): SourceVerdict => ({
    allowed: false,
    message: `${ref.resolver} param ${q(param)} ${shown(raw)} ${c.why}: refused by ${policy.source} before ${before} ${before.includes(', ') ? 'are' : 'is'} applied (references are matched only in their canonical form; docs/security.md)`,
  });
  const done = (rule: string, params: Param[], signers?: TrustedKey[]): SourceVerdict => {
    const known = RESOLVER_PARAMS[ref.resolver] ?? [];
    const extra = [...p.keys()].filter((n) => !known.includes(n));
    if (extra.length) return { allowed: false, message: `resolver params ${extra.map(q).join(', ')} are not accepted for the ${ref.resolver} resolver (only ${known.map(q).join(', ')})` };
    return { allowed: true, rule, params, ...(signers ? { signers } : {}) };
  };
  switch (ref.resolver) {
    case 'git': {
      const rules = forNs(policy.git);
      if (rules.length === 0) return { allowed: false, message: `the git resolver is not allowed for ${describeTenant(ctx.tenant)} by ${policy.source} (no sources.git rule applies)` };
      const rawUrl = p.get('url') ?? '';
      if (!rawUrl) return { allowed: false, message: 'the git reference has no url param (only url-based git references can be checked; the repo/org form is not allowed)' };
      const url = canonicalGitUrl(rawUrl);
      if (!url.ok) return refuse('url', rawUrl, url, 'any sources.git rule');
      const { compiled, note } = compileAll(rules, 'git', compileGitRule);
      const byUrl = compiled.flatMap((x) => (x.c.ok && matchGitUrl(x.c.rule, url.value) ? [{ ...x, rule: x.c.rule }] : []));
      if (byUrl.length === 0) {
        const near = compiled.flatMap((x) => {
          const other = x.c.ok ? dotGitNearMiss(x.c.rule, url.value) : undefined;
          return other ? [{ name: x.name, other, legacy: x.r.exact === true }] : [];
        });
        if (near.length) return { allowed: false, message: dotGitMessage(url.value.href, url.value.authority, near, policy.source) + note };
        const allowed = compiled.filter((x) => x.c.ok).flatMap((x) => x.r.urls.map((u) => `${q(u)} (${x.name})`));
        return { allowed: false, message: `git url ${shown(url.value.href)} is not allowed by ${policy.source}; allowed: ${allowed.join(', ') || 'none'}${note}` };
      }
      const names = byUrl.map((x) => x.name).join(', ');
      const rawRev = p.get('revision') ?? '';
      const revision = canonicalRevision(rawRev);
      if (!revision.ok) return refuse('revision', rawRev, revision, names);
      const qualified = qualifyRevision(revision.value);
      if (!qualified.ok) return refuse('revision', rawRev, qualified, names);
      const rawPath = p.get('pathInRepo') ?? '';
      const path = canonicalPathInRepo(rawPath);
      if (!path.ok) return refuse('pathInRepo', rawPath, path, names);
      const rev = qualified.value;
      const revText = rev.kind === 'commit' ? rev.sha : rev.ref;
      const params: Param[] = [
        { name: 'url', value: url.value.href },
        { name: 'revision', value: revText },
        { name: 'pathInRepo', value: path.value },
      ];
      const problems: string[] = [];
      const toCheck: Array<{ name: string; refs: string[]; signers: TrustedKey[] | undefined }> = [];
      for (const x of byUrl) {
        const r = x.rule;
        let revOk: boolean | 'check';
        if (rev.kind === 'commit') revOk = r.shas.has(rev.sha) ? true : r.reachableFrom ? 'check' : false;
        else revOk = (rev.kind === 'branch' ? r.branches : r.tags).some((g) => matchGlob(g, rev.name));
        if (revOk === false) {
          const hint = rev.kind === 'branch' && r.tags.some((g) => matchGlob(g, rev.name)) ? ` (a bare name is a branch; for the tag write ${q(`refs/tags/${rev.name}`)})` : '';
          problems.push(`${x.name} allows ${describeRevisions(r)}, not ${describeRevision(rev)}${hint}`);
          continue;
        }
        if (r.paths && !r.paths.some((g) => matchGlob(g, path.value))) {
          problems.push(`${x.name} allows paths ${(x.r.paths ?? []).map(q).join(', ')}, not ${shown(path.value)}`);
          continue;
        }
        if (revOk === true) return done(x.name, params, r.signers);
        toCheck.push({ name: x.name, refs: r.reachableFrom ?? [], signers: r.signers });
      }
      if (toCheck.length && rev.kind === 'commit') {
        // Several rules may allow the commit, depending on where it is found.
        // Which one did is known only once the repository has answered: the
        // first, in rule order, whose refs match the ref it was found on; its
        // keys alone then apply (commitRules, signersAfterCheck). `signers`
        // keeps the union of their keys for callers not moved to that yet.
        const keys = toCheck.flatMap((t) => t.signers ?? []);
        const verdict = done(toCheck.map((t) => t.name).join(', '), params, keys.length ? keys : undefined);
        if (!verdict.allowed) return verdict;
        const refs = [...new Set(toCheck.flatMap((t) => t.refs))].sort();
        return {
          ...verdict,
          commitCheck: { url: url.value.href, commit: rev.sha, refs, rules: toCheck.map((t) => t.name) },
          commitRules: toCheck.map((t) => ({ name: t.name, refs: [...t.refs], signers: t.signers })),
        };
      }
      return { allowed: false, message: `git ${shown(url.value.href)} at ${q(revText)}, ${shown(path.value)} is not allowed by ${policy.source}: ${problems.join('; ')}${note}` };
    }
    case 'bundles': {
      const rules = forNs(policy.bundles);
      if (rules.length === 0) return { allowed: false, message: `the bundles resolver is not allowed for ${describeTenant(ctx.tenant)} by ${policy.source} (no sources.bundles rule applies)` };
      const raw = p.get('bundle') ?? '';
      const b = canonicalBundle(raw);
      if (!b.ok) return refuse('bundle', raw, b, 'any sources.bundles rule');
      const { compiled, note } = compileAll(rules, 'bundles', compileBundleRule);
      const { repository, digest } = b.value;
      const byRepo = compiled.flatMap((x) => (x.c.ok && x.c.rule.repositories.some((g) => matchGlob(g, repository)) ? [{ ...x, rule: x.c.rule }] : []));
      if (byRepo.length === 0) {
        return { allowed: false, message: `bundle repository ${q(repository)} is not allowed by ${policy.source}; allowed: ${compiled.filter((x) => x.c.ok).flatMap((x) => x.r.repositories).map(q).join(', ') || 'none'}${note}` };
      }
      const ok = byRepo.find((x) => !x.rule.digestOnly || digest !== undefined);
      if (!ok) {
        return {
          allowed: false,
          message:
            `bundle ${q(b.value.ref)} is not pinned by digest, and ${policy.source} allows ${q(repository)} only by digest (${byRepo.map((x) => x.name).join(', ')}): ` +
            `refer to it as ${q(`${repository}@sha256:…`)}, with the digest of the manifest ${b.value.tag !== undefined ? `its tag ${q(b.value.tag)} names now` : 'to run'} (a tag can be moved, a digest cannot)`,
        };
      }
      const params: Param[] = [{ name: 'bundle', value: b.value.ref }];
      for (const [param, canon] of [['name', canonicalObjectName], ['kind', (s: string) => canonicalKind(s.toLowerCase())]] as const) {
        const v = p.get(param);
        if (v === undefined) continue;
        const c = canon(v);
        if (!c.ok) return refuse(param, v, c, ok.name);
        params.push({ name: param, value: c.value });
      }
      return done(ok.name, params, ok.rule.signers);
    }
    case 'http': {
      const rules = forNs(policy.http ?? []);
      if (rules.length === 0) return { allowed: false, message: `the http resolver is not allowed for ${describeTenant(ctx.tenant)} by ${policy.source} (no sources.http rule applies)` };
      const rawUrl = p.get('url') ?? '';
      if (!rawUrl) return { allowed: false, message: 'the http reference has no url param' };
      const url = canonicalHttpUrl(rawUrl);
      if (!url.ok) return refuse('url', rawUrl, url, 'any sources.http rule');
      const { compiled, note } = compileAll(rules, 'http', compileHttpRule);
      const byUrl = compiled.flatMap((x) => (x.c.ok && matchHttpUrl(x.c.rule, url.value) ? [{ name: x.name, rule: x.c.rule }] : []));
      if (byUrl.length === 0) {
        const allowed = compiled.filter((x) => x.c.ok).flatMap((x) => x.r.urls.map((u) => `${q(u)} (${x.name})`));
        return { allowed: false, message: `http url ${shown(url.value.href)} is not allowed by ${policy.source}; allowed: ${allowed.join(', ') || 'none'}${note}` };
      }
      const verdict = done(byUrl.map((x) => x.name).join(', '), [{ name: 'url', value: url.value.href }]);
      if (!verdict.allowed) return verdict;
      return { ...verdict, contentRules: byUrl.map((x) => ({ name: x.name, sha256: x.rule.sha256 ? [...x.rule.sha256].sort() : undefined, signers: x.rule.signers })) };
    }
    case 'cluster': {
      if (!policy.cluster) return { allowed: false, message: `the cluster resolver is not allowed by ${policy.source}` };
      const ns = p.get('namespace') ?? '';
      if (ns !== ctx.controllerNamespace) {
        return { allowed: false, message: `the cluster resolver may only read namespace ${q(ctx.controllerNamespace)}, not ${shown(ns)} (${policy.source})` };
      }
      const nsc = canonicalNamespace(ns);
      if (!nsc.ok) return refuse('namespace', ns, nsc, 'sources.cluster');
      const params: Param[] = [];
      for (const [param, canon, required] of [['kind', canonicalKind, false], ['name', canonicalObjectName, true]] as const) {
        const v = p.get(param);
        if (v === undefined && !required) continue;
        const c = canon(v ?? '');
        if (!c.ok) return refuse(param, v ?? '', c, 'sources.cluster');
        params.push({ name: param, value: c.value });
      }
      params.push({ name: 'namespace', value: nsc.value });
      return done('sources.cluster', params);
    }
    default:
      return { allowed: false, message: `the ${q(ref.resolver)} resolver is not allowed by ${policy.source}; only git, bundles, http and cluster can be allowed` };
  }
}

/** The rules that apply, compiled and named (sources.git[i]), and a note naming the unusable ones for refusals. */
function compileAll<R extends { name?: string }, C>(rules: Array<[R, number]>, kind: string, compile: (r: R) => Compiled<C>): { compiled: Array<{ r: R; name: string; c: Compiled<C> }>; note: string } {
  const compiled = rules.map(([r, i]) => ({ r, name: r.name ?? `sources.${kind}[${i}]`, c: compile(r) }));
  const unusable = compiled.flatMap((x) => (x.c.ok ? [] : [`${x.name} is unusable and grants nothing (${x.c.why}); ask the administrators of the internal cluster to fix it`]));
  return { compiled, note: unusable.length ? `; ${unusable.join('; ')}` : '' };
}

/**
 * The refusal of `x` where only `x.git` is allowed (or the reverse), on a
 * host that may serve them as two repositories: which spelling to ask for,
 * and what the administrators can write if the server serves both as one.
 */
function dotGitMessage(href: string, authority: string, near: Array<{ name: string; other: string; legacy: boolean }>, source: string): string {
  const rules = near.map((n) => `${n.name} allows ${q(n.other)}`).join(', ');
  const spellings = [...new Set(near.map((n) => n.other))].map(q).join(' or ');
  const fix = near.some((n) => !n.legacy)
    ? `, or, if that server serves both names as one repository, the administrators of the internal cluster can set dotGit: either on ${near.filter((n) => !n.legacy).map((n) => n.name).join(', ')}`
    : `, or the administrators of the internal cluster can add ${q(href)} to allowedGitResolverURLs if that server serves both names as one repository`;
  return (
    `git url ${shown(href)} is not allowed by ${source}: ${rules}, which on ${q(authority)} can be another repository ` +
    `(a git server serves "x" and "x.git" as two repositories when both exist; only ${DOT_GIT_ALIAS_HOSTS_TEXT} are known to serve them as one): ` +
    `ask for ${spellings}${fix}`
  );
}

function describeRevision(rev: QualifiedRevision): string {
  return rev.kind === 'commit' ? `commit ${q(rev.sha)}` : `${rev.kind} ${q(rev.ref)}`;
}

/** What a compiled rule allows as revisions, in words. */
function describeRevisions(r: CompiledGitRule): string {
  const parts: string[] = [];
  if (r.branches.length) parts.push(`branches ${r.branches.map((g) => q(`refs/heads/${g.pattern}`)).join(', ')}`);
  if (r.tags.length) parts.push(`tags ${r.tags.map((g) => q(`refs/tags/${g.pattern}`)).join(', ')}`);
  if (r.reachableFrom) parts.push('commits reachable from them');
  if (r.shas.size) parts.push(`${r.shas.size} listed commit${r.shas.size === 1 ? '' : 's'}`);
  return parts.length ? parts.join(', ') : 'no revision';
}

/** repository and digest of a bundle reference in canonical form (tag dropped); the value itself when it has none. */
export function splitImageRef(ref: string): { repository: string; digest: string | undefined } {
  const b = canonicalBundle(ref);
  if (!b.ok) return { repository: ref, digest: undefined };
  return { repository: b.value.repository, digest: b.value.digest };
}

export { globMatch } from './glob.js';
