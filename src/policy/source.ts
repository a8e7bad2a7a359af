/**
 * The source policy: from where may a Pipeline (or a Task, a StepAction)
 * that a request makes Tekton resolve come? Default deny: a resolver no rule
 * allows is refused, and every refusal names the rule and the value.
 *
 * Pure: no I/O. Applied to a request's pipelineRef and, through
 * src/tekton/graph.ts, to every reference of the Pipeline it resolves.
 *
 * Patterns are globs: `*` matches within one path segment (no "/"), `**`
 * across segments; everything else is literal.
 */
import { describeTenant } from './tenant.js';

export interface GitRule {
  /** How messages name the rule; default sources.git[i]. */
  name?: string;
  /** Repository URLs (globs), e.g. https://github.com/org/catalog.git. */
  urls: string[];
  /** Branch or tag names (globs) a revision may be; empty: none by name. */
  revisions?: string[];
  /** Full commit SHAs (40 or 64 hex digits) are allowed as revisions. */
  commits?: boolean;
  /** pathInRepo globs; absent: any path. */
  paths?: string[];
  /** Tenants (remote/namespace globs, bare entries qualified) the rule is for; absent: all. */
  namespaces?: string[];
}

export interface BundleRule {
  name?: string;
  /** Repositories (globs) without tag or digest, e.g. quay.io/org/catalog/*. */
  repositories: string[];
  /** Only references by digest (@sha256:…), never by tag. */
  digestOnly?: boolean;
  namespaces?: string[];
}

export interface SourcePolicy {
  git: GitRule[];
  bundles: BundleRule[];
  /** The cluster resolver, for objects of the controller's namespace only. */
  cluster: boolean;
  /** Where the policy comes from, for messages, e.g. InternalServicesConfig internal-services/config. */
  source: string;
}

/** True when the policy allows any remote source at all. */
export function hasSources(p: Pick<SourcePolicy, 'git' | 'bundles' | 'cluster'>): boolean {
  return p.git.length > 0 || p.bundles.length > 0 || p.cluster;
}

export type SourceVerdict = { allowed: true; rule: string } | { allowed: false; message: string };

export interface SourceRef {
  resolver: string;
  params: Record<string, string>;
}

/** The production controller's field: exact URLs, any revision and path. */
export function policyFromAllowedGitURLs(urls: readonly string[], source: string): SourcePolicy {
  return { git: urls.length ? [gitRuleFromAllowedURLs(urls)] : [], bundles: [], cluster: false, source };
}

/** allowedGitResolverURLs as a git rule: exact URLs (no globs), any revision, any path. */
export function gitRuleFromAllowedURLs(urls: readonly string[]): GitRule {
  return { name: 'allowedGitResolverURLs', urls: urls.map((u) => escapeGlob(u.replace(/\/+$/, ''))), revisions: ['**'], commits: true };
}

const SHA = /^([0-9a-f]{40}|[0-9a-f]{64})$/;

export function checkSource(policy: SourcePolicy, ref: SourceRef, ctx: { tenant: string; controllerNamespace: string }): SourceVerdict {
  const q = (s: string): string => JSON.stringify(s);
  const forNs = <R extends { namespaces?: string[] }>(rules: R[]): Array<[R, number]> =>
    rules.map((r, i) => [r, i] as [R, number]).filter(([r]) => !r.namespaces || r.namespaces.some((p) => globMatch(p, ctx.tenant)));
  switch (ref.resolver) {
    case 'git': {
      const rules = forNs(policy.git);
      if (rules.length === 0) return { allowed: false, message: `the git resolver is not allowed for ${describeTenant(ctx.tenant)} by ${policy.source} (no sources.git rule applies)` };
      const url = (ref.params['url'] ?? '').replace(/\/+$/, '');
      const revision = ref.params['revision'] ?? '';
      const path = ref.params['pathInRepo'] ?? '';
      if (!url) return { allowed: false, message: 'the git reference has no url param (only url-based git references can be checked; the repo/org form is not allowed)' };
      const byUrl = rules.filter(([r]) => r.urls.some((p) => globMatch(p, url)));
      if (byUrl.length === 0) {
        const allowed = rules.flatMap(([r, i]) => r.urls.map((u) => `${q(u.replace(/\\\*/g, '*'))} (${r.name ?? `sources.git[${i}]`})`));
        return { allowed: false, message: `git url ${q(url)} is not allowed by ${policy.source}; allowed: ${allowed.join(', ')}` };
      }
      const problems: string[] = [];
      for (const [r, i] of byUrl) {
        const revOk = (r.commits === true && SHA.test(revision)) || (r.revisions ?? []).some((p) => !SHA.test(revision) && globMatch(p, revision));
        if (!revOk) {
          problems.push(`${r.name ?? `sources.git[${i}]`} allows revisions ${describeRevisions(r)}, not ${q(revision)}`);
          continue;
        }
        if (r.paths && !r.paths.some((p) => globMatch(p, path))) {
          problems.push(`${r.name ?? `sources.git[${i}]`} allows paths ${r.paths.map(q).join(', ')}, not ${q(path)}`);
          continue;
        }
        return { allowed: true, rule: r.name ?? `sources.git[${i}]` };
      }
      return { allowed: false, message: `git ${q(url)} at ${q(revision)}, ${q(path)} is not allowed by ${policy.source}: ${problems.join('; ')}` };
    }
    case 'bundles': {
      const rules = forNs(policy.bundles);
      if (rules.length === 0) return { allowed: false, message: `the bundles resolver is not allowed for ${describeTenant(ctx.tenant)} by ${policy.source} (no sources.bundles rule applies)` };
      const bundle = ref.params['bundle'] ?? '';
      const { repository, digest } = splitImageRef(bundle);
      const byRepo = rules.filter(([r]) => r.repositories.some((p) => globMatch(p, repository)));
      if (byRepo.length === 0) {
        return { allowed: false, message: `bundle repository ${q(repository)} is not allowed by ${policy.source}; allowed: ${rules.flatMap(([r]) => r.repositories).map(q).join(', ')}` };
      }
      const ok = byRepo.find(([r]) => !r.digestOnly || digest !== undefined);
      if (!ok) return { allowed: false, message: `bundle ${q(bundle)} is not pinned by digest, and ${policy.source} allows ${q(repository)} only by digest (@sha256:…)` };
      return { allowed: true, rule: ok[0].name ?? `sources.bundles[${ok[1]}]` };
    }
    case 'cluster': {
      if (!policy.cluster) return { allowed: false, message: `the cluster resolver is not allowed by ${policy.source}` };
      const ns = ref.params['namespace'] ?? '';
      if (ns !== ctx.controllerNamespace) {
        return { allowed: false, message: `the cluster resolver may only read namespace ${q(ctx.controllerNamespace)}, not ${q(ns)} (${policy.source})` };
      }
      return { allowed: true, rule: 'sources.cluster' };
    }
    default:
      return { allowed: false, message: `the ${q(ref.resolver)} resolver is not allowed by ${policy.source}; only git, bundles and cluster can be allowed` };
  }
}

function describeRevisions(r: GitRule): string {
  const parts = [...(r.revisions ?? []).map((x) => JSON.stringify(x))];
  if (r.commits) parts.push('full commit SHAs');
  return parts.length ? parts.join(', ') : 'none';
}

/** repository and digest of an image reference (tag dropped). */
export function splitImageRef(ref: string): { repository: string; digest: string | undefined } {
  const at = ref.indexOf('@');
  const digest = at >= 0 ? ref.slice(at + 1) : undefined;
  let repo = at >= 0 ? ref.slice(0, at) : ref;
  const slash = repo.lastIndexOf('/');
  const colon = repo.lastIndexOf(':');
  if (colon > slash) repo = repo.slice(0, colon);
  return { repository: repo, digest: digest && /^sha256:[0-9a-f]{64}$/.test(digest) ? digest : undefined };
}

function escapeGlob(s: string): string {
  return s.replace(/\*/g, '\\*');
}

/** `*` within a segment, `**` across segments, `\*` a literal star; the rest literal. Whole-string match. */
export function globMatch(pattern: string, value: string): boolean {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === '\\' && pattern[i + 1] === '*') {
      re += '\\*';
      i++;
    } else if (ch === '*' && pattern[i + 1] === '*') {
      re += '.*';
      i++;
    } else if (ch === '*') re += '[^/]*';
    else re += ch.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`).test(value);
}
