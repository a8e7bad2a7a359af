/**
 * The source policy's rules, compiled: every URL, revision, path and
 * repository pattern canonicalized by the same parsers as the values it will
 * be matched against (src/policy/canonical.ts, canonical-oci.ts) and turned
 * into a segment glob (src/policy/glob.ts). A rule with a pattern that has no
 * canonical form, or no URLs/repositories at all, is unusable: it grants
 * nothing (never more than it says), and the configuration reports it
 * (src/controller/config.ts) as do the refusals it could have mattered for.
 *
 * A git rule's urls name repositories as written, a trailing ".git"
 * included; `matchGitUrl` lets the other spelling (`x` for `x.git`, or the
 * reverse) stand for it only on a host that cannot hold both
 * (DOT_GIT_ALIAS_HOSTS) or under `dotGit: either`.
 *
 * Compiled rules are memoized per rule object. Pure: no I/O.
 */
import { aliasesDotGit, canonicalGitUrl, canonicalHttpUrl, canonicalPathInRepo, canonicalRevision, DOT_GIT_ALIAS_HOSTS, gitDotGitSpelling, gitRepositoryKey, isFullSha, qualifyRevision, type GitUrl } from './canonical.js';
import { canonicalRepositoryPattern } from './canonical-oci.js';
import { compileGlob, compileSegments, escapeGlob, matchGlob, type Glob } from './glob.js';
import { parsePublicKey, type TrustedKey } from './trusted.js';

/** A source rule as written in the configuration (spec.sources.git[]). */
export interface GitRule {
  /** How messages name the rule; default sources.git[i]. */
  name?: string;
  /** Repository URLs (globs), e.g. https://github.com/org/catalog.git. */
  urls: string[];
  /** The urls are exact URLs, not globs (allowedGitResolverURLs). */
  exact?: boolean;
  /**
   * Whether a URL with or without a trailing ".git" names the repository a
   * url of the rule names: `exact` (absent: the default), only as written,
   * except on hosts known to serve both spellings as one repository
   * (github.com, gitlab.com: DOT_GIT_ALIAS_HOSTS); `either`, both spellings,
   * for a server the administrators know serves them as one repository.
   */
  dotGit?: DotGit | unknown;
  /**
   * Branches (globs) a revision may name: `main`, `release-*` (or, the same,
   * `refs/heads/main`); tags only where written in full: `refs/tags/v*`.
   * Empty: none by name.
   */
  revisions?: string[];
  /**
   * Which full commit SHAs may be asked for: `{reachable: true}`, any commit
   * reachable from a branch or tag this rule allows (checked against the
   * repository itself before anything is resolved), and/or `{shas: [...]}`,
   * exactly these. Absent: none. The old `true` (any commit the server hands
   * out) is no longer accepted: the rule is unusable and says what to write.
   */
  commits?: GitCommits | boolean | unknown;
  /** Every Pipeline, Task and StepAction resolved under this rule must carry a tekton.dev/signature by one of these keys. */
  signatures?: Signatures | unknown;
  /** pathInRepo globs; absent: any path inside the repository. */
  paths?: string[];
  /** Tenants (remote/namespace globs, bare entries qualified) the rule is for; absent: all. */
  namespaces?: string[];
}

/**
 * Tekton Trusted Resources, as a VerificationPolicy names its keys: each
 * authority a name and a PEM public key (inline: public keys are not secret).
 */
export interface Signatures {
  authorities: Array<{ name: string; key: { data: string; hashAlgorithm?: string } }>;
}

/** How a rule's urls treat a trailing ".git": see GitRule.dotGit. */
export type DotGit = 'exact' | 'either';
export const DOT_GIT_VALUES: readonly DotGit[] = ['exact', 'either'];

export interface GitCommits {
  reachable?: boolean;
  shas?: string[];
}

/** A bundle rule as written in the configuration (spec.sources.bundles[]). */
export interface BundleRule {
  name?: string;
  /** Repositories (globs) without tag or digest, e.g. quay.io/org/catalog/*. */
  repositories: string[];
  /** Only references by digest (@sha256:…), never by tag. */
  digestOnly?: boolean;
  namespaces?: string[];
  signatures?: Signatures | unknown;
}

/**
 * An http rule as written in the configuration (spec.sources.http[]). A URL
 * names where a fetch starts (Go's http client follows redirects), and what
 * it serves can change at any time, so the rule binds the content itself:
 * the sha256 of each reviewed file, or signatures by its keys, or both (then
 * both are required). A rule with neither grants nothing.
 */
export interface HttpRule {
  name?: string;
  /** File URLs (globs: * within a path segment, ** whole segments). */
  urls: string[];
  /** The sha256 (hex) of each reviewed file; a file resolved under the rule must be one of them. */
  sha256?: string[];
  namespaces?: string[];
  signatures?: Signatures | unknown;
}

export interface CompiledHttpRule {
  urls: Glob[];
  /** Lower-case hex; undefined: not bound by digest (then by signers). */
  sha256: ReadonlySet<string> | undefined;
  signers: TrustedKey[] | undefined;
}

export interface CompiledGitRule {
  urls: Glob[];
  /** `either`: the urls allow both `x` and `x.git`; `exact`: as written (except on DOT_GIT_ALIAS_HOSTS). */
  dotGit: DotGit;
  /** Branch name globs (below refs/heads/). */
  branches: Glob[];
  /** Tag name globs (below refs/tags/). */
  tags: Glob[];
  /** The refs a commit must be reachable from, qualified globs (refs/heads/main, refs/tags/v*), when `commits.reachable`. */
  reachableFrom: string[] | undefined;
  /** Commits allowed by SHA as they are (lower case). */
  shas: ReadonlySet<string>;
  /** Keys one of which must have signed every resource resolved under the rule; undefined: no signature required. */
  signers: TrustedKey[] | undefined;
  /** undefined: any path (canonical paths are inside the repository). */
  paths: Glob[] | undefined;
}

export interface CompiledBundleRule {
  repositories: Glob[];
  digestOnly: boolean;
  signers: TrustedKey[] | undefined;
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
const httpCache = new WeakMap<HttpRule, Compiled<CompiledHttpRule>>();
const bundleCache = new WeakMap<BundleRule, Compiled<CompiledBundleRule>>();

/** A rule compiled once per rule object. */
function memo<R extends object, T>(cache: WeakMap<R, Compiled<T>>, r: R, compile: (r: R) => Compiled<T>): Compiled<T> {
  let c = cache.get(r);
  if (!c) {
    c = compile(r);
    cache.set(r, c);
  }
  return c;
}

export function compileGitRule(r: GitRule): Compiled<CompiledGitRule> {
  return memo(gitCache, r, compileGit);
}

function compileGit(r: GitRule): Compiled<CompiledGitRule> {
  if (r.urls.length === 0) return { ok: false, why: 'it names no urls' };
  const dotGit = r.dotGit ?? 'exact';
  if (!(DOT_GIT_VALUES as readonly unknown[]).includes(dotGit)) {
    return { ok: false, why: `dotGit is ${JSON.stringify(dotGit)}; write dotGit: exact (the default: a url names the repository spelled so, with or without ".git") or dotGit: either (the server serves "x" and "x.git" as one repository)` };
  }
  const urls = each('urls', r.urls, (p) => urlGlob(p, r.exact === true));
  if (!urls.ok) return { ok: false, why: urls.why };
  const branches: Glob[] = [];
  const tags: Glob[] = [];
  const qualified: string[] = [];
  const revisions = each('revisions', r.revisions ?? [], (p) => {
    const c = canonicalRevision(p, { pattern: true });
    if (!c.ok) return c;
    if (isFullSha(c.value)) return { ok: false, why: 'is a commit SHA; list commits in commits.shas' };
    const qr = qualifyRevision(c.value, { pattern: true });
    if (!qr.ok) return qr;
    if (qr.value.kind === 'commit') return { ok: false, why: 'is a commit SHA; list commits in commits.shas' };
    const g = glob(qr.value.name);
    if (!g.ok) return g;
    (qr.value.kind === 'tag' ? tags : branches).push(g.value);
    qualified.push(qr.value.ref);
    return g;
  });
  if (!revisions.ok) return { ok: false, why: revisions.why };
  const commits = compileCommits(r.commits);
  if (!commits.ok) return commits;
  let paths: Glob[] | undefined;
  if (r.paths) {
    const c = each('paths', r.paths, (p) => {
      const v = canonicalPathInRepo(p, { pattern: true });
      return v.ok ? glob(v.value) : v;
    });
    if (!c.ok) return { ok: false, why: c.why };
    paths = c.value;
  }
  if (commits.reachable && qualified.length === 0) return { ok: false, why: 'commits.reachable needs revisions to be reachable from (it names no branch or tag)' };
  const signers = compileSignatures(r.signatures);
  if (!signers.ok) return signers;
  return { ok: true, rule: { urls: urls.value, dotGit: dotGit as DotGit, branches, tags, reachableFrom: commits.reachable ? qualified : undefined, shas: commits.shas, paths, signers: signers.keys } };
}

/**
 * How a canonical URL matches a compiled rule's urls: `exact`, as spelled;
 * `dotGit`, by its other spelling (`x` for `x.git` or the reverse), where the
 * host serves both as one repository (DOT_GIT_ALIAS_HOSTS) or the rule says
 * `dotGit: either`; false: not at all.
 */
export function matchGitUrl(rule: Pick<CompiledGitRule, 'urls' | 'dotGit'>, u: Pick<GitUrl, 'scheme' | 'authority' | 'segments'>): 'exact' | 'dotGit' | false {
  const key = gitRepositoryKey(u);
  if (rule.urls.some((g) => matchGlob(g, key))) return 'exact';
  if (rule.dotGit !== 'either' && !aliasesDotGit(u)) return false;
  const other = gitDotGitSpelling(key);
  return other && rule.urls.some((g) => matchGlob(g, other)) ? 'dotGit' : false;
}

/**
 * The rule's urls would allow the other spelling of this URL (`x.git` for
 * `x`, or the reverse) but not this one: for the message that says which
 * spelling to ask for. undefined: no such near miss.
 */
export function dotGitNearMiss(rule: Pick<CompiledGitRule, 'urls'>, u: Pick<GitUrl, 'scheme' | 'authority' | 'segments'>): string | undefined {
  const other = gitDotGitSpelling(gitRepositoryKey(u));
  if (!other || !rule.urls.some((g) => matchGlob(g, other))) return undefined;
  return `${other[0]}/${other.slice(1).join('/')}`;
}

/** For messages: the hosts that serve "x" and "x.git" as one repository. */
export const DOT_GIT_ALIAS_HOSTS_TEXT = DOT_GIT_ALIAS_HOSTS.join(', ');

const HASHES = ['sha224', 'sha256', 'sha384', 'sha512'];

/** signatures.authorities: each a unique name and a PEM public key that can be used; absent: no signature required. */
function compileSignatures(v: unknown): { ok: true; keys: TrustedKey[] | undefined } | { ok: false; why: string } {
  if (v === undefined || v === null) return { ok: true, keys: undefined };
  if (typeof v !== 'object' || Array.isArray(v)) return { ok: false, why: 'signatures must be an object {authorities: [{name, key: {data}}]}' };
  const list = (v as Record<string, unknown>)['authorities'];
  if (!Array.isArray(list) || list.length === 0) return { ok: false, why: 'signatures.authorities names no key (a rule that requires signatures needs at least one)' };
  const keys: TrustedKey[] = [];
  for (const [i, a] of list.entries()) {
    const where = `signatures.authorities[${i}]`;
    if (typeof a !== 'object' || a === null) return { ok: false, why: `${where} is not an object` };
    const name = (a as Record<string, unknown>)['name'];
    const key = (a as Record<string, unknown>)['key'];
    if (typeof name !== 'string' || name === '') return { ok: false, why: `${where} has no name` };
    if (keys.some((k) => k.name === name)) return { ok: false, why: `${where}: the name ${q(name)} is given twice` };
    const data = typeof key === 'object' && key !== null ? (key as Record<string, unknown>)['data'] : undefined;
    if (typeof data !== 'string') return { ok: false, why: `${where} (${q(name)}) has no key.data (a PEM public key)` };
    const parsed = parsePublicKey(data);
    if (!parsed.ok) return { ok: false, why: `${where} (${q(name)}): ${parsed.why}` };
    const hash = (key as Record<string, unknown>)['hashAlgorithm'];
    if (hash !== undefined && (typeof hash !== 'string' || !HASHES.includes(hash.toLowerCase()))) return { ok: false, why: `${where} (${q(name)}): hashAlgorithm ${q(String(hash))} is not one of ${HASHES.join(', ')}` };
    keys.push({ name, publicKey: data, ...(typeof hash === 'string' ? { hashAlgorithm: hash.toLowerCase() } : {}) });
  }
  return { ok: true, keys };
}

/** What to write instead of the old `commits: true`; the message of the unusable rule. */
export const COMMITS_TRUE_MESSAGE =
  'commits: true no longer allows a commit: it meant any commit the server would hand out, including commits only on unmerged branches or, on GitHub, ' +
  'in any fork of the repository. Write commits: {reachable: true} to allow commits reachable from the branches and tags in revisions ' +
  '(checked against the repository before anything runs), or commits: {shas: [...]} to list the reviewed commits (docs/security.md)';

function compileCommits(c: unknown): { ok: true; reachable: boolean; shas: ReadonlySet<string> } | { ok: false; why: string } {
  if (c === undefined || c === null || c === false) return { ok: true, reachable: false, shas: new Set() };
  if (c === true) return { ok: false, why: COMMITS_TRUE_MESSAGE };
  if (typeof c !== 'object' || Array.isArray(c)) return { ok: false, why: `commits is ${JSON.stringify(c)}; write commits: {reachable: true} and/or commits: {shas: [...]}` };
  const o = c as Record<string, unknown>;
  const extra = Object.keys(o).filter((k) => k !== 'reachable' && k !== 'shas');
  if (extra.length) return { ok: false, why: `commits has unknown fields ${extra.map(q).join(', ')} (only reachable and shas)` };
  if (o['reachable'] !== undefined && typeof o['reachable'] !== 'boolean') return { ok: false, why: 'commits.reachable must be true or false' };
  const shas = new Set<string>();
  if (o['shas'] !== undefined) {
    if (!Array.isArray(o['shas'])) return { ok: false, why: 'commits.shas must be a list of full commit SHAs' };
    for (const [i, s] of (o['shas'] as unknown[]).entries()) {
      if (typeof s !== 'string' || !isFullSha(s)) return { ok: false, why: `commits.shas[${i}] ${q(String(s))} is not a full commit SHA (40 or 64 hex digits)` };
      shas.add(s.toLowerCase());
    }
  }
  return { ok: true, reachable: o['reachable'] === true, shas };
}

export function compileBundleRule(r: BundleRule): Compiled<CompiledBundleRule> {
  return memo(bundleCache, r, compileBundle);
}

function compileBundle(r: BundleRule): Compiled<CompiledBundleRule> {
  if (r.repositories.length === 0) return { ok: false, why: 'it names no repositories' };
  const repos = each('repositories', r.repositories, (p) => {
    const v = canonicalRepositoryPattern(p);
    return v.ok ? glob(v.value) : v;
  });
  const signers = compileSignatures(r.signatures);
  return !repos.ok ? { ok: false, why: repos.why } : !signers.ok ? signers : { ok: true, rule: { repositories: repos.value, digestOnly: r.digestOnly === true, signers: signers.keys } };
}

export function compileHttpRule(r: HttpRule): Compiled<CompiledHttpRule> {
  return memo(httpCache, r, compileHttp);
}

function compileHttp(r: HttpRule): Compiled<CompiledHttpRule> {
  if (r.urls.length === 0) return { ok: false, why: 'it names no urls' };
  const urls = each('urls', r.urls, (p) => {
    const u = canonicalHttpUrl(p, { pattern: true });
    return u.ok ? glob(p, gitRepositoryKey(u.value)) : u;
  });
  if (!urls.ok) return { ok: false, why: urls.why };
  let sha256: Set<string> | undefined;
  if (r.sha256 !== undefined) {
    if (!Array.isArray(r.sha256)) return { ok: false, why: 'sha256 must be a list of sha256 digests (64 hex digits)' };
    sha256 = new Set();
    for (const [i, d] of (r.sha256 as unknown[]).entries()) {
      const hex = typeof d === 'string' ? d.replace(/^sha256:/, '') : '';
      if (!/^[0-9A-Fa-f]{64}$/.test(hex)) return { ok: false, why: `sha256[${i}] ${q(String(d))} is not a sha256 digest (64 hex digits)` };
      sha256.add(hex.toLowerCase());
    }
  }
  const signers = compileSignatures(r.signatures);
  if (!signers.ok) return signers;
  if ((!sha256 || sha256.size === 0) && !signers.keys) {
    return { ok: false, why: 'it binds no content: a URL names a file, not what it holds; list the sha256 of each reviewed file (sha256: [...]) or require signatures' };
  }
  return { ok: true, rule: { urls: urls.value, sha256: sha256?.size ? sha256 : undefined, signers: signers.keys } };
}

/** Whether a compiled http rule's urls allow a canonical file URL. */
export function matchHttpUrl(rule: Pick<CompiledHttpRule, 'urls'>, u: Pick<GitUrl, 'scheme' | 'authority' | 'segments'>): boolean {
  const key = gitRepositoryKey(u);
  return rule.urls.some((g) => matchGlob(g, key));
}

/** What is wrong with the rules of a policy, one line per unusable rule, e.g. `sources.git[1]: paths[0] "a/../b" has a ".." segment …`. */
export function policyProblems(p: { git: readonly GitRule[]; bundles: readonly BundleRule[]; http?: readonly HttpRule[]; source: string }): string[] {
  const out: string[] = [];
  p.git.forEach((r, i) => {
    const c = compileGitRule(r);
    if (!c.ok) out.push(`${r.name ?? `sources.git[${i}]`} of ${p.source} is unusable and grants nothing: ${c.why}`);
  });
  p.bundles.forEach((r, i) => {
    const c = compileBundleRule(r);
    if (!c.ok) out.push(`${r.name ?? `sources.bundles[${i}]`} of ${p.source} is unusable and grants nothing: ${c.why}`);
  });
  (p.http ?? []).forEach((r, i) => {
    const c = compileHttpRule(r);
    if (!c.ok) out.push(`${r.name ?? `sources.http[${i}]`} of ${p.source} is unusable and grants nothing: ${c.why}`);
  });
  return out;
}
