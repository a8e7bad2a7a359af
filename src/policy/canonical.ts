/**
 * Canonical references: one spelling per thing a resolver fetches, worked out
 * before any rule is matched (docs/security.md, "Canonical before compare").
 * Each function takes the value a requester (or a Pipeline, after parameter
 * substitution) gave and returns either its canonical form or why it has
 * none. The policy matches rules on the canonical form only, and that form is
 * what the ResolutionRequest, the PipelineRun and the request's status carry.
 *
 * The forms follow what Tekton's resolvers (v1.6) do with the values:
 * - git: `git clone <url>`, `git fetch origin <revision>` (no "--" before the
 *   revision in v1.6, so a value beginning with "-" is an option), and
 *   `os.ReadFile(filepath.Join(checkout, pathInRepo))` with no check that the
 *   path stays inside the checkout.
 * - bundles: go-containerregistry's name.ParseReference with its defaults.
 * - cluster: a Get of kind/namespace/name.
 *
 * Refusing is always allowed; widening never is: when two spellings might be
 * read differently by some component between us and the bytes fetched, the
 * value is refused rather than mapped to one of them. Pure: no I/O. The rule
 * patterns of the configuration go through the same parsers (`pattern: true`)
 * in src/policy/rules.ts. Bundle references: src/policy/canonical-oci.ts.
 */

export type Canon<T = string> = { ok: true; value: T } | { ok: false; why: string };

const no = (why: string): { ok: false; why: string } => ({ ok: false, why });
const q = (s: string): string => JSON.stringify(s);

export const LIMITS = { url: 2048, revision: 255, path: 1024, segment: 255 } as const;

/** In a `u` regular expression a surrogate pair is one code point: what is left is unpaired. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
/** Control, format (bidi overrides, zero-width), line and paragraph separator characters. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

function describeChar(ch: string): string {
  const cp = ch.codePointAt(0)!;
  return cp < 0x20 || cp === 0x7f || cp > 0x7e ? `U+${cp.toString(16).toUpperCase().padStart(4, '0')}` : q(ch);
}
// ---------------------------------------------------------------- git url

/** Allowed schemes and their default ports. ssh and scp-like forms would run ssh; file:// and ext:: read or run things locally. */
export const GIT_SCHEMES: Readonly<Record<string, number>> = { https: 443, http: 80, git: 9418 };

export interface GitUrl {
  scheme: string;
  /** host[:port], lower-case, default port dropped. */
  authority: string;
  /** Path segments, canonical (percent-encoding normalized). */
  segments: string[];
  href: string;
}

const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const NUMERIC_LABEL = /^(0x[0-9a-f]*|[0-9]+)$/;
const DECIMAL_OCTET = /^(0|[1-9][0-9]{0,2})$/;
/** Characters a URL path segment may hold as they are (RFC 3986 pchar, without ";"); "%" is handled apart. */
const PATH_CHAR = /^[A-Za-z0-9._~!$&'()*+,=:@-]$/;
const UNRESERVED = /^[A-Za-z0-9_~-]$/;

function canonicalHost(host: string, pattern: boolean): Canon {
  if (host === '') return no('has no host');
  if (host.startsWith('[')) {
    if (!/^\[[0-9A-Fa-f:.]+\]$/.test(host)) return no(`has a malformed IPv6 host ${q(host)}`);
    try {
      return { ok: true, value: new URL(`http://${host}/`).hostname };
    } catch {
      return no(`has a malformed IPv6 host ${q(host)}`);
    }
  }
  if (/[^\x21-\x7e]/.test(host)) return no(`has a host with non-ASCII characters (${q(host)}); write it in its xn-- form`);
  const h = host.toLowerCase();
  if (h.endsWith('.')) return no(`has a host ending in "." (${q(host)}); write it without the dot`);
  const labels = h.split('.');
  if (h.length > 253) return no('has a host longer than 253 characters');
  if (NUMERIC_LABEL.test(labels[labels.length - 1]!)) {
    // A numeric last label makes the whole host an IPv4 address to URL
    // parsers and to inet_aton alike; only the dotted-quad spelling is one
    // they all read the same way.
    if (labels.length !== 4 || !labels.every((l) => DECIMAL_OCTET.test(l) && Number(l) <= 255)) {
      return no(`has a numeric host ${q(host)} that is not a plain dotted-quad IPv4 address`);
    }
    return { ok: true, value: h };
  }
  for (const l of labels) {
    if (pattern && l === '*') continue;
    if (!DNS_LABEL.test(l)) {
      return no(pattern && l.includes('*') ? `has a host label ${q(l)} that mixes "*" with other characters ("*" must be a whole label)` : `has a host ${q(host)} that is not a DNS name (labels of a-z, 0-9 and "-")`);
    }
  }
  return { ok: true, value: h };
}

/** One path segment of a URL in canonical form (percent-encoding normalized), or why it has none. */
function canonicalSegment(seg: string, scheme: string, pattern: boolean): Canon {
  if (seg === '') return no('has an empty path segment ("//")');
  if (seg === '.' || seg === '..') return no(`has a ${q(seg)} path segment`);
  if (pattern && seg.includes('**') && seg !== '**') return no(`has "**" inside the path segment ${q(seg)} ("**" must be a whole segment)`);
  let out = '';
  for (let i = 0; i < seg.length; ) {
    const cp = seg.codePointAt(i)!;
    const ch = String.fromCodePoint(cp);
    if (ch === '%') {
      if (scheme === 'git') return no('has percent-encoding in a git:// URL (git passes git:// paths on undecoded)');
      const hex = seg.slice(i + 1, i + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return no(`has a "%" that is not followed by two hex digits in ${q(seg)}`);
      const byte = parseInt(hex, 16);
      const c = String.fromCharCode(byte);
      if (c === '/' || c === '.' || c === '%' || c === '\\' || byte < 0x20 || byte === 0x7f) return no(`encodes ${describeChar(c)} as %${hex} (an encoded "/", ".", "%", "\\" or control character is read differently by different servers)`);
      out += UNRESERVED.test(c) ? c : `%${hex.toUpperCase()}`;
      i += 3;
      continue;
    }
    if (cp > 0x7e) {
      if (cp >= 0xd800 && cp <= 0xdfff) return no('has an unpaired surrogate in its path');
      if (scheme === 'git' || INVISIBLE.test(ch)) return no(`has the character ${describeChar(ch)} in its path`);
      for (const b of Buffer.from(ch, 'utf8')) out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
      i += ch.length;
      continue;
    }
    if (!PATH_CHAR.test(ch)) return no(`has the character ${describeChar(ch)} in its path`);
    out += ch;
    i += 1;
  }
  if (out === '.' || out === '..') return no(`has a ${q(out)} path segment`);
  return { ok: true, value: out };
}

/**
 * A git repository URL: scheme://host[:port]/path, scheme https, http or git;
 * no user info, query or fragment; lower-case scheme and host; default port
 * dropped; no empty, "." or ".." segments; no encoded "/", "." or "%"; one
 * trailing "/" dropped. A trailing ".git" is kept as written: `x` and `x.git`
 * are two repositories unless the host is known to alias them or a rule says
 * so (see `gitRepositoryKey`, `DOT_GIT_ALIAS_HOSTS`).
 */
export function canonicalGitUrl(raw: string, opts: { pattern?: boolean } = {}): Canon<GitUrl> {
  return canonicalUrl(raw, GIT_SCHEMES, opts.pattern === true, 'the git resolver', 'repository');
}

/** Schemes the http resolver is given (Go's net/http), and their default ports. */
export const HTTP_SCHEMES: Readonly<Record<string, number>> = { https: 443, http: 80 };

/**
 * A file's URL for the http resolver: the same canonical form as a git URL
 * (scheme://host[:port]/path; no user info, query or fragment; lower-case
 * scheme and host; default port dropped; no empty, "." or ".." segments, no
 * encoded "/", "." or "%"), scheme https or http. A query is refused rather
 * than normalized: servers read its order, repetitions and encoding each
 * their own way. Go's http client follows redirects, so a URL names where
 * the fetch starts, not where the bytes come from: an http rule binds the
 * content itself (src/policy/rules.ts, HttpRule).
 */
export function canonicalHttpUrl(raw: string, opts: { pattern?: boolean } = {}): Canon<GitUrl> {
  // "dir/" and "dir" are two resources to an HTTP server; the git form drops the "/".
  if (raw.endsWith('/') && !raw.endsWith('://')) return no('ends in "/", which names a directory, not a file');
  return canonicalUrl(raw, HTTP_SCHEMES, opts.pattern === true, 'the http resolver', 'file');
}

function canonicalUrl(raw: string, schemes: Readonly<Record<string, number>>, pattern: boolean, resolver: string, names: string): Canon<GitUrl> {
  if (raw.length === 0) return no('is empty');
  if (raw.length > LIMITS.url) return no(`is longer than ${LIMITS.url} characters`);
  const bad = /[\s\p{Cc}\p{Cf}\\]/u.exec(raw);
  if (bad) return no(`has the character ${describeChar(bad[0])}`);
  if (raw.includes('?')) return no(`has a query ("?"), which ${resolver} would pass on`);
  if (raw.includes('#')) return no('has a fragment ("#")');
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/]*)(\/.*)?$/s.exec(raw);
  if (!m) {
    if (/^[A-Za-z][A-Za-z0-9+.-]*::/.test(raw)) return no('uses a git remote helper ("<transport>::"), which runs a program inside the resolver');
    return no('is not of the form scheme://host/path (scp-like user@host:path and local paths are refused)');
  }
  const scheme = m[1]!.toLowerCase();
  if (!(scheme in schemes)) return no(`has the scheme ${q(scheme)}; only ${Object.keys(schemes).join(', ')} are allowed`);
  const auth = m[2]!;
  if (auth.includes('@')) return no('has user info ("user@"); credentials and user names do not belong in a reference');
  if (auth.includes('%')) return no('has percent-encoding in its host');
  const hp = /^(\[[^\]]*\]|[^:]*)(?::([^:]*))?$/.exec(auth);
  if (!hp) return no(`has a malformed host and port ${q(auth)}`);
  const host = canonicalHost(hp[1]!, pattern);
  if (!host.ok) return host;
  let port = '';
  if (hp[2] !== undefined) {
    // Leading zeros: some parsers read them as octal; refused rather than guessed.
    if (!/^[1-9][0-9]{0,4}$/.test(hp[2])) return no(`has a malformed port ${q(hp[2])} (digits, no leading zero)`);
    const n = Number(hp[2]);
    if (n < 1 || n > 65535) return no(`has the port ${n}, outside 1-65535`);
    if (n !== schemes[scheme]) port = `:${n}`;
  }
  let path = m[3] ?? '';
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  if (path === '' || path === '/') return no(`names no ${names} (no path)`);
  const segments: string[] = [];
  for (const seg of path.slice(1).split('/')) {
    const s = canonicalSegment(seg, scheme, pattern);
    if (!s.ok) return s;
    segments.push(s.value);
  }
  const authority = `${host.value}${port}`;
  const href = `${scheme}://${authority}/${segments.join('/')}`;
  if (!pattern) {
    // What a WHATWG URL parser makes of the canonical form must be that form:
    // the spelling we pass on means one thing to every reader.
    let u: URL;
    try {
      u = new URL(href);
    } catch {
      return no('is not a URL a URL parser accepts');
    }
    if (u.href !== href || u.username || u.password || u.search || u.hash) return no('is not in a form URL parsers read the same way');
  }
  return { ok: true, value: { scheme, authority, segments, href } };
}

/**
 * Hosts whose git service cannot hold two repositories `x` and `x.git`, so
 * that both spellings of a URL name one repository there. Kept small on
 * purpose: a host belongs here only where its documented (or, for GitHub,
 * long-observed) behaviour rules out a repository whose name ends in ".git".
 *
 * - github.com: docs.github.com ("About remote repositories") gives
 *   `https://github.com/OWNER/REPO.git` as the clone URL of repository REPO,
 *   and GitHub does not let a repository name end in ".git" (it drops the
 *   suffix when a repository is created or renamed; recorded in
 *   github.com/dead-claudia/github-limits, not in GitHub's own docs).
 * - gitlab.com: docs.gitlab.com ("Reserved project and group names"):
 *   project slugs "cannot end in .git".
 *
 * Everywhere else (git daemon, git-http-backend, Gitea, Gerrit, a plain web
 * server, GitHub Enterprise and self-managed GitLab, whose names we cannot
 * tell) `x` and `x.git` are two repositories when both exist: git daemon, for
 * one, serves `/x` from the repository `x` when there is one and falls back
 * to `x.git` only when there is not. There, a rule allows both spellings only
 * where it says so (`dotGit: either`).
 */
export const DOT_GIT_ALIAS_HOSTS: readonly string[] = ['github.com', 'gitlab.com'];

/** True when the URL's host serves `x` and `x.git` as one repository (https or http on a host of DOT_GIT_ALIAS_HOSTS, default port). */
export function aliasesDotGit(u: Pick<GitUrl, 'scheme' | 'authority'>): boolean {
  return (u.scheme === 'https' || u.scheme === 'http') && DOT_GIT_ALIAS_HOSTS.includes(u.authority);
}

/**
 * What repository rules are matched on: the scheme and authority as one
 * segment, then the path segments, exactly as the canonical URL spells them
 * (a trailing ".git" kept). `x` and `x.git` are two keys; which rules let one
 * stand for the other: `gitDotGitSpelling` and src/policy/rules.ts.
 */
export function gitRepositoryKey(u: Pick<GitUrl, 'scheme' | 'authority' | 'segments'>): string[] {
  return [`${u.scheme}://${u.authority}`, ...u.segments];
}

/**
 * The other spelling of a repository key: `x.git` for `x`, `x` for `x.git`
 * (one ".git" of the last segment); undefined when the last segment is ".git"
 * itself (a name, not a suffix) or there is no path.
 */
export function gitDotGitSpelling(key: readonly string[]): string[] | undefined {
  if (key.length < 2) return undefined;
  const last = key[key.length - 1]!;
  if (last === '.git') return undefined;
  return [...key.slice(0, -1), last.endsWith('.git') ? last.slice(0, -4) : `${last}.git`];
}

/**
 * One repository, one identity: the canonical URL, with the trailing ".git"
 * dropped only where the host serves `x` and `x.git` as one repository
 * (DOT_GIT_ALIAS_HOSTS). What the commit checker keys its clones on, so that
 * `x` and `x.git` never share one clone unless they are one repository.
 */
export function gitRepositoryIdentity(u: Pick<GitUrl, 'scheme' | 'authority' | 'segments'>): string {
  const key = gitRepositoryKey(u);
  const last = key[key.length - 1]!;
  if (aliasesDotGit(u) && key.length > 1 && last !== '.git' && last.endsWith('.git')) key[key.length - 1] = last.slice(0, -4);
  return `${key[0]}/${key.slice(1).join('/')}`;
}

// ---------------------------------------------------------------- revision

const SHA = /^([0-9a-fA-F]{40}|[0-9a-fA-F]{64})$/;

/** A full commit SHA (SHA-1 or SHA-256), canonical in lower case. */
export function isFullSha(revision: string): boolean {
  return SHA.test(revision);
}

/**
 * A git revision: a full commit SHA (lower-cased), or a name that git's
 * check-ref-format accepts (one-level names allowed), never beginning with
 * "-" (an option to git) or "+" (a forced refspec), printable ASCII only.
 */
export function canonicalRevision(raw: string, opts: { pattern?: boolean } = {}): Canon {
  const pattern = opts.pattern === true;
  if (raw === '') return no("is empty (the resolver's default revision cannot be checked; name one)");
  if (raw.length > LIMITS.revision) return no(`is longer than ${LIMITS.revision} characters`);
  if (SHA.test(raw)) return { ok: true, value: raw.toLowerCase() };
  if (raw.startsWith('-')) return no('begins with "-", which git reads as an option, not a revision');
  if (raw.startsWith('+')) return no('begins with "+", which git reads as a forced refspec');
  const bad = pattern ? /[^\x21-\x7e]|[~^:?[\\]/.exec(raw) : /[^\x21-\x7e]|[~^:?*[\\]/.exec(raw);
  if (bad) return no(`has the character ${describeChar(bad[0])}, which git does not allow in a ref name`);
  if (raw.includes('..')) return no('has "..", which git does not allow in a ref name (and reads as a range)');
  if (raw.includes('@{')) return no('has "@{", which git reads as a reflog expression');
  if (raw === '@') return no('is "@", which git reads as HEAD');
  if (raw.endsWith('.')) return no('ends with ".", which git does not allow in a ref name');
  for (const c of raw.split('/')) {
    if (c === '') return no('has an empty component (a leading, trailing or double "/")');
    if (c.startsWith('.')) return no(`has the component ${q(c)} beginning with ".", which git does not allow`);
    if (c.endsWith('.lock')) return no(`has the component ${q(c)} ending in ".lock", which git does not allow`);
    if (pattern && c.includes('**') && c !== '**') return no(`has "**" inside the component ${q(c)} ("**" must be a whole component)`);
  }
  return { ok: true, value: raw };
}

/**
 * What a canonical revision names, decided here and never left to git: git
 * reads a bare name as `refs/<name>`, then `refs/tags/<name>`, then
 * `refs/heads/<name>` (gitrevisions(7)), so a tag called "main" would win over
 * the branch. Here a bare name is a branch, always; a tag is named in full
 * (`refs/tags/v1.2.0`); any other ref (pull requests, notes, remotes) has no
 * meaning a rule could review and is refused. What is passed on to the
 * resolver is the fully qualified ref, which names one thing to every git.
 */
export type QualifiedRevision =
  | { kind: 'commit'; sha: string }
  | { kind: 'branch' | 'tag'; /** The name below refs/heads/ or refs/tags/. */ name: string; /** refs/heads/<name> or refs/tags/<name>. */ ref: string };

export const BRANCH_PREFIX = 'refs/heads/';
export const TAG_PREFIX = 'refs/tags/';

/** A canonical revision (see canonicalRevision) qualified: a commit, a branch or a tag; `pattern` for rule patterns. */
export function qualifyRevision(canonical: string, opts: { pattern?: boolean } = {}): Canon<QualifiedRevision> {
  if (!opts.pattern && isFullSha(canonical)) return { ok: true, value: { kind: 'commit', sha: canonical.toLowerCase() } };
  let kind: 'branch' | 'tag' = 'branch';
  let name = canonical;
  if (canonical.startsWith(BRANCH_PREFIX)) name = canonical.slice(BRANCH_PREFIX.length);
  else if (canonical.startsWith(TAG_PREFIX)) {
    kind = 'tag';
    name = canonical.slice(TAG_PREFIX.length);
  } else if (canonical === 'refs' || canonical.startsWith('refs/')) {
    return no('is a ref that is neither a branch (refs/heads/…) nor a tag (refs/tags/…); only branches and tags can be reviewed and allowed');
  }
  if (name === '') return no(`names no ${kind}`);
  if (name === 'HEAD') return no(`is ${q(name)}, which names no ${kind} of its own (HEAD is whatever the server's default branch is); name the ${kind}`);
  return { ok: true, value: { kind, name, ref: `${kind === 'branch' ? BRANCH_PREFIX : TAG_PREFIX}${name}` } };
}

// ---------------------------------------------------------------- pathInRepo

/**
 * A file in the repository: relative, "/"-separated, no empty, "." or ".."
 * segments, no ".git" segment, no backslash, control or format characters,
 * well-formed Unicode, at most 1024 characters and 255 bytes a segment. The
 * git resolver (v1.6) reads filepath.Join(checkout, pathInRepo) without a
 * check of its own, so this is what keeps it inside the checkout.
 */
export function canonicalPathInRepo(raw: string, opts: { pattern?: boolean } = {}): Canon {
  const pattern = opts.pattern === true;
  if (raw === '') return no('is empty');
  if (raw.length > LIMITS.path) return no(`is longer than ${LIMITS.path} characters`);
  if (LONE_SURROGATE.test(raw)) return no('is not well-formed Unicode (an unpaired surrogate)');
  const bad = INVISIBLE.exec(raw);
  if (bad) return no(`has the control or format character ${describeChar(bad[0])}`);
  if (raw.includes('\\')) return no('has a backslash');
  if (raw.startsWith('/')) return no('is absolute (it must be relative to the repository)');
  for (const seg of raw.split('/')) {
    if (seg === '') return no('has an empty segment (a double or trailing "/")');
    if (seg === '..') return no('has a ".." segment, which climbs out of the directory it names (and out of the repository)');
    if (seg === '.') return no('has a "." segment');
    if (seg.toLowerCase() === '.git') return no('has a ".git" segment (the checkout\'s git metadata, not a file of the repository)');
    if (Buffer.byteLength(seg, 'utf8') > LIMITS.segment) return no(`has a segment longer than ${LIMITS.segment} bytes`);
    if (pattern && seg.includes('**') && seg !== '**') return no(`has "**" inside the segment ${q(seg)} ("**" must be a whole segment)`);
  }
  return { ok: true, value: raw };
}

// ---------------------------------------------------------------- cluster

export const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** The kinds the cluster resolver (and the bundles resolver) fetch. */
export const RESOLVER_KINDS = ['task', 'pipeline', 'stepaction'] as const;

/** An object name: a DNS subdomain of at most 253 characters. */
export function canonicalObjectName(raw: string): Canon {
  if (raw === '') return no('is empty');
  if (raw.length > 253 || !DNS_SUBDOMAIN.test(raw)) return no('is not an object name (a lower-case DNS subdomain of at most 253 characters)');
  return { ok: true, value: raw };
}

export function canonicalNamespace(raw: string): Canon {
  if (raw === '') return no("is empty (the resolver's default namespace cannot be checked; name one)");
  if (!DNS_LABEL_NAME.test(raw)) return no('is not a namespace name (a lower-case DNS label of at most 63 characters)');
  return { ok: true, value: raw };
}

/** task, pipeline or stepaction, exactly (the cluster resolver compares them as written). */
export function canonicalKind(raw: string): Canon {
  if (raw === '') return no("is empty (the resolver's default kind cannot be checked; name one)");
  if (!(RESOLVER_KINDS as readonly string[]).includes(raw)) return no(`is not one of ${RESOLVER_KINDS.join(', ')}`);
  return { ok: true, value: raw };
}
