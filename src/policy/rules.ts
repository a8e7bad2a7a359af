/**
 * The source policy's rules, compiled: every URL, revision, path and
 * repository pattern canonicalized by the same parsers as the values it will
 * be matched against (src/policy/canonical.ts, canonical-oci.ts) and turned
 * into a segment glob (src/policy/glob.ts). A rule with a pattern that has no
 * canonical form, or no URLs/repositories at all, is unusable: it grants
 * nothing (never more than it says), and the configuration reports it
 * (src/controller/config.ts) as do the refusals it could have mattered for.
 *
 * Compiled rules are memoized per rule object. Pure: no I/O.
 */
import { canonicalGitUrl, canonicalPathInRepo, canonicalRevision, gitRepositoryKey } from './canonical.js';
import { canonicalRepositoryPattern } from './canonical-oci.js';
import { compileGlob, compileSegments, escapeGlob, type Glob } from './glob.js';

/** A source rule as written in the configuration (spec.sources.git[]). */
export interface GitRule {
  /** How messages name the rule; default sources.git[i]. */
  name?: string;
  /** Repository URLs (globs), e.g. https://github.com/org/catalog.git. */
  urls: string[];
  /** The urls are exact URLs, not globs (allowedGitResolverURLs). */
  exact?: boolean;
  /** Branch or tag names (globs) a revision may be; empty: none by name. */
  revisions?: string[];
  /** Full commit SHAs (40 or 64 hex digits) are allowed as revisions. */
  commits?: boolean;
  /** pathInRepo globs; absent: any path inside the repository. */
  paths?: string[];
  /** Tenants (remote/namespace globs, bare entries qualified) the rule is for; absent: all. */
  namespaces?: string[];
}

/** A bundle rule as written in the configuration (spec.sources.bundles[]). */
export interface BundleRule {
  name?: string;
  /** Repositories (globs) without tag or digest, e.g. quay.io/org/catalog/*. */
  repositories: string[];
  /** Only references by digest (@sha256:…), never by tag. */
  digestOnly?: boolean;
  namespaces?: string[];
}

export interface CompiledGitRule {
  urls: Glob[];
  revisions: Glob[];
  commits: boolean;
  /** undefined: any path (canonical paths are inside the repository). */
  paths: Glob[] | undefined;
}

export interface CompiledBundleRule {
  repositories: Glob[];
  digestOnly: boolean;
}

export type Compiled<T> = { ok: true; rule: T } | { ok: false; why: string };

const q = (s: string): string => JSON.stringify(s);

function each<T>(field: string, list: readonly string[], compile: (p: string) => { ok: true; value: T } | { ok: false; why: string }): { ok: true; value: T[] } | { ok: false; why: string } {
  const out: T[] = [];
  for (const [i, p] of list.entries()) {
    const c = compile(p);
    if (!c.ok) return { ok: false, why: `${field}[${i}] ${q(p)} ${c.why}` };
    out.push(c.value);
  }
  return { ok: true, value: out };
}

const glob = (pattern: string, segs?: readonly string[]): { ok: true; value: Glob } | { ok: false; why: string } => {
  const g = segs ? compileSegments(pattern, segs, true) : compileGlob(pattern, true);
  return g.ok ? { ok: true, value: g.glob } : g;
};

function urlGlob(pattern: string, exact: boolean): { ok: true; value: Glob } | { ok: false; why: string } {
  const u = canonicalGitUrl(pattern, { pattern: !exact });
  if (!u.ok) return u;
  const key = gitRepositoryKey(u.value);
  return glob(pattern, exact ? key.map(escapeGlob) : key);
}

const gitCache = new WeakMap<GitRule, Compiled<CompiledGitRule>>();
const bundleCache = new WeakMap<BundleRule, Compiled<CompiledBundleRule>>();

export function compileGitRule(r: GitRule): Compiled<CompiledGitRule> {
  let c = gitCache.get(r);
  if (!c) {
    c = compileGit(r);
    gitCache.set(r, c);
  }
  return c;
}

function compileGit(r: GitRule): Compiled<CompiledGitRule> {
  if (r.urls.length === 0) return { ok: false, why: 'it names no urls' };
  const urls = each('urls', r.urls, (p) => urlGlob(p, r.exact === true));
  if (!urls.ok) return { ok: false, why: urls.why };
  const revisions = each('revisions', r.revisions ?? [], (p) => {
    const c = canonicalRevision(p, { pattern: true });
    return c.ok ? glob(c.value) : c;
  });
  if (!revisions.ok) return { ok: false, why: revisions.why };
  let paths: Glob[] | undefined;
  if (r.paths) {
    const c = each('paths', r.paths, (p) => {
      const v = canonicalPathInRepo(p, { pattern: true });
      return v.ok ? glob(v.value) : v;
    });
    if (!c.ok) return { ok: false, why: c.why };
    paths = c.value;
  }
  return { ok: true, rule: { urls: urls.value, revisions: revisions.value, commits: r.commits === true, paths } };
}

export function compileBundleRule(r: BundleRule): Compiled<CompiledBundleRule> {
  let c = bundleCache.get(r);
  if (!c) {
    if (r.repositories.length === 0) c = { ok: false, why: 'it names no repositories' };
    else {
      const repos = each('repositories', r.repositories, (p) => {
        const v = canonicalRepositoryPattern(p);
        return v.ok ? glob(v.value) : v;
      });
      c = repos.ok ? { ok: true, rule: { repositories: repos.value, digestOnly: r.digestOnly === true } } : { ok: false, why: repos.why };
    }
    bundleCache.set(r, c);
  }
  return c;
}

/** What is wrong with the rules of a policy, one line per unusable rule, e.g. `sources.git[1]: paths[0] "a/../b" has a ".." segment …`. */
export function policyProblems(p: { git: readonly GitRule[]; bundles: readonly BundleRule[]; source: string }): string[] {
  const out: string[] = [];
  p.git.forEach((r, i) => {
    const c = compileGitRule(r);
    if (!c.ok) out.push(`${r.name ?? `sources.git[${i}]`} of ${p.source} is unusable and grants nothing: ${c.why}`);
  });
  p.bundles.forEach((r, i) => {
    const c = compileBundleRule(r);
    if (!c.ok) out.push(`${r.name ?? `sources.bundles[${i}]`} of ${p.source} is unusable and grants nothing: ${c.why}`);
  });
  return out;
}
