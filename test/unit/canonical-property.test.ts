/**
 * Property-based tests of the source policy (fast-check): random rule sets
 * and values drawn from hostile alphabets ("/", ".", "..", "%2e", "%2f",
 * "\\", NUL, "-", ":", "@", unicode, …).
 *
 * - nothing throws, whatever the input;
 * - canonicalization is idempotent, and its output is accepted as it is;
 * - whatever a rule accepts, interpreted the way the resolver interprets it,
 *   is inside what the rule allows: pathInRepo by Go's filepath.Join/Clean
 *   onto the checkout (re-implemented below), URLs by WHATWG URL resolution
 *   (Node's URL) with the path compared byte for byte, bundle references by
 *   go-containerregistry's name.ParseReference (re-implemented below);
 *   revisions are never an option or a refspec to git.
 *
 * Runs FC_NUM_RUNS cases per property (default 1000, about a second in CI);
 * FC_SEED replays a run. docs/security.md records a long run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { aliasesDotGit, canonicalGitUrl, canonicalPathInRepo, canonicalRevision, gitRepositoryKey, GIT_SCHEMES, isFullSha } from '../../src/policy/canonical.js';
import { canonicalBundle } from '../../src/policy/canonical-oci.js';
import { compileBundleRule, compileGitRule, matchGitUrl } from '../../src/policy/rules.js';
import { compileGlob, matchGlob } from '../../src/policy/glob.js';
import { checkSource, type BundleRule, type GitRule, type SourcePolicy } from '../../src/policy/source.js';

const numRuns = Number(process.env['FC_NUM_RUNS'] ?? 1000);
const seed = process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : undefined;
const params = { numRuns, ...(seed !== undefined ? { seed } : {}) };

/**
 * A property must see both sides: cases its generators made that the policy
 * allowed, and cases it refused. A property that only ever saw refusals
 * (a policy that refused everything) would prove nothing; the floor is 2% of
 * the runs on each side.
 */
function tally(name: string): { see(allowed: boolean): void; check(): void } {
  let allowed = 0;
  let refused = 0;
  return {
    see(a) {
      if (a) allowed++;
      else refused++;
    },
    check() {
      const floor = Math.max(1, Math.floor(numRuns * 0.02));
      console.log(`property ${name}: ${allowed} allowed, ${refused} refused of ${allowed + refused} cases`);
      assert.ok(allowed >= floor, `${name}: only ${allowed} allowed cases of ${allowed + refused} (floor ${floor}): the generators no longer reach what the policy allows`);
      assert.ok(refused >= floor, `${name}: only ${refused} refused cases of ${allowed + refused} (floor ${floor})`);
    },
  };
}
const ctx = { tenant: 'default/team-a', controllerNamespace: 'internal-services' };
const SRC = 'InternalServicesConfig internal-services/config';

// ------------------------------------------------------------------ alphabets

const HOSTILE = ['/', '.', '..', '%2e', '%2E', '%2f', '%2F', '%25', '%00', '%41', '\\', '\0', '\n', '\t', ' ', '-', '--', '+', ':', '@', '@{', '?', '#', '~', '^', '*', '**', '[', ';', '.lock', '.git', 'é', '\u202e', '\u200b', '\ud800', '🦀', 'a', 'b', 'x', 'main', 'HEAD'];
const hostile = fc.array(fc.constantFrom(...HOSTILE), { maxLength: 24 }).map((a) => a.join(''));
const anyString = fc.oneof(hostile, fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ maxLength: 40 }));

/** Half the values are made from the rule's own patterns, their wildcards filled from a hostile alphabet: so that rules do accept, and what they accept is probed. */
const TOKENS = ['a', 'x', 'catalog', 'catalog.git', 'sign', '..', '.', '', '%2e%2e', '%2e', '.%2E', '%2f', '%41', '%25', '.git', '.GIT', '-x', 'é', '\u202e', '\\', '\0', ' ', ':', '@', '~', 'x.lock', '@{1}'];
const token = fc.constantFrom(...TOKENS);
const fill = fc.array(token, { minLength: 12, maxLength: 12 });
const counts = fc.array(fc.nat(3), { minLength: 6, maxLength: 6 });

/** A value made from a "/"-separated pattern: "*" filled with one token, "**" with 0-3 segments, literals kept (or, rarely, replaced). */
function instantiate(pattern: string, f: readonly string[], n: readonly number[], mutate: number): string {
  let k = 0;
  let c = 0;
  const take = () => f[k++ % f.length]!;
  return pattern
    .split('/')
    .map((seg, i) => {
      if (seg === '**') return Array.from({ length: n[c++ % n.length]! }, take).join('/');
      if (i === mutate) return take();
      return seg.replace(/\*/g, take);
    })
    .join('/');
}
const made = <T>(patterns: fc.Arbitrary<string[]>, build: (ps: string[], f: string[], n: number[], which: number, mutate: number) => T) =>
  fc.tuple(patterns, fill, counts, fc.nat(9), fc.integer({ min: -8, max: 5 })).map(([ps, f, n, which, mutate]) => ({ patterns: ps, value: build(ps, f, n, which, mutate) }));

const PATH_SEGS = ['pipelines', 'internal', 'sign', 'tasks', 'x.yaml', 'a', '..', '.', '', '%2e%2e', '.git', '.GIT', 'a\\..\\b', '\0', '-', 'é', '\u202e', '*', '..a', 'b..'];
const pathValue = fc.tuple(fc.boolean(), fc.array(fc.constantFrom(...PATH_SEGS), { minLength: 1, maxLength: 7 })).map(([abs, segs]) => (abs ? '/' : '') + segs.join('/'));
const PATH_PATTERN_SEGS = ['pipelines', 'internal', 'sign', 'tasks', 'x.yaml', 'a', '*', '**', 'x*', '*.yaml', '..', '.', ''];
const pathPattern = fc.array(fc.constantFrom(...PATH_PATTERN_SEGS), { minLength: 1, maxLength: 5 }).map((s) => s.join('/'));
const pathCase = made(fc.array(pathPattern, { minLength: 1, maxLength: 3 }), (ps, f, n, which, mutate) => (which === 0 ? '/' : '') + instantiate(ps[which % ps.length]!, f, n, mutate));

const REV_PIECES = ['main', 'release', '-', '1.2', '/', '.', '..', '.lock', '@', '@{', ':', '+', '*', '~', '^', ' ', '\\', 'é', 'refs', 'heads', 'a'.repeat(40), 'A'.repeat(40)];
const revValue = fc.array(fc.constantFrom(...REV_PIECES), { minLength: 0, maxLength: 6 }).map((a) => a.join(''));
const revPattern = fc.constantFrom('main', 'release-*', 'release/*', '**', '*', 'refs/heads/*', 'a**', '-x', '');
const revCase = made(fc.array(revPattern, { maxLength: 3 }), (ps, f, n, which, mutate) =>
  which === 9 ? 'b'.repeat(40) : which === 8 ? 'B'.repeat(64) : ps.length ? instantiate(ps[which % ps.length]!, f, n, mutate) : f[0]!,
);

const HOSTS = ['github.com', 'GitHub.com', '*.example.com', 'example.com', '127.0.0.1', '*', 'x*.com'];
const urlValue = fc
  .record({
    scheme: fc.constantFrom('https', 'HTTPS', 'http', 'git', 'file', 'ssh', 'ext:', 'ftp'),
    sep: fc.constantFrom('://', '://', ':', ':///'),
    user: fc.constantFrom('', '', 'u@', 'u:p@', '%40@'),
    host: fc.constantFrom('github.com', 'GitHub.COM', 'github.com.', 'evil.com', 'a.example.com', 'x.example.com.evil.com', '0x7f.1', '127.0.0.1', '127.000.0.1', '[::1]', '[::FFFF:127.0.0.1]', 'gïthub.com', 'g_h.com', ''),
    port: fc.constantFrom('', '', ':443', ':80', ':9418', ':8080', ':', ':0', ':99999', ':0443'),
    segs: fc.array(fc.constantFrom('org', 'catalog', 'catalog.git', '.', '..', '%2e', '.%2E', '%2f', '%41', '%c3%a9', '%25', '', 'é', '\\', ';', '*', '~', 'x y'), { minLength: 0, maxLength: 5 }),
    tail: fc.constantFrom('', '', '/', '//', '?x=1', '#f', '/.', '/..'),
  })
  .map((u) => `${u.scheme}${u.sep}${u.user}${u.host}${u.port}${u.segs.length ? '/' : ''}${u.segs.join('/')}${u.tail}`);
const urlPattern = fc
  .record({
    scheme: fc.constantFrom('https', 'HTTPS', 'http', 'git'),
    host: fc.constantFrom(...HOSTS),
    port: fc.constantFrom('', '', ':443', ':9418', ':8080'),
    segs: fc.array(fc.constantFrom('org', 'catalog', 'catalog.git', '*', '**', '*.git', 'x*', '..', ''), { minLength: 1, maxLength: 3 }),
  })
  .map((u) => `${u.scheme}://${u.host}${u.port}/${u.segs.join('/')}`);
/** A URL made from a pattern: scheme and host in another case, default ports spelled out or dropped, wildcards filled, ".git" and "/" added, "o" as %6F. */
const urlCase = made(fc.array(urlPattern, { minLength: 1, maxLength: 3 }), (ps, f, n, which, mutate) => {
  const m = /^([^:]+):\/\/([^/]+)\/(.*)$/.exec(ps[which % ps.length]!)!;
  const host = m[2]!.replace(/\*/g, () => ['a', 'evil', 'x-y', 'a.b', '0', 'EVIL'][n[0]! % 6]!);
  const scheme = which % 2 ? m[1]!.toUpperCase() : m[1]!.toLowerCase();
  const port = host.includes(':') || n[1] === 0 ? '' : [':443', ':80', ':9418'][n[2]! % 3]!;
  const path = instantiate(m[3]!, f, n, mutate).replace(/o/g, () => (n[3]! === 1 ? '%6F' : 'o'));
  return `${scheme}://${n[5] === 2 ? host.toUpperCase() : host}${port}/${path}${['', '/', '.git', '.git/', '?x', '#x'][n[4]! % 6]}`;
});

const BUNDLE_PIECES = ['quay.io', 'Quay.IO', 'docker.io', 'index.docker.io', 'registry-1.docker.io', 'localhost', 'localhost:5000', 'org', 'Org', 'catalog', 'busybox', '/', '//', '.', '..', ':', ':v1', ':-v', '@', `@sha256:${'a'.repeat(64)}`, `@sha256:${'A'.repeat(64)}`, '@sha512:ff', '_', '__', '-', ' ', '%2f'];
const bundleValue = fc.array(fc.constantFrom(...BUNDLE_PIECES), { minLength: 1, maxLength: 8 }).map((a) => a.join(''));
const repoPattern = fc.constantFrom('quay.io/org/*', 'quay.io/org/**', 'docker.io/library/*', 'busybox', 'index.docker.io/library/busybox', '*/org/catalog', 'localhost:5000/**', 'quay.io/org//x', 'quay.io/org/x:v1', '**');
/** A reference made from a repository pattern: Docker Hub under its other names or none, registries in upper case, wildcards filled, a tag, a digest or both. */
const bundleCase = made(fc.array(repoPattern, { minLength: 1, maxLength: 3 }), (ps, f, n, which, mutate) => {
  let r = instantiate(ps[which % ps.length]!.replace(/^\*\//, 'quay.io/'), ['catalog', 'sign', 'a__b', 'x-y', ...f], n, mutate);
  r = r.replace(/^docker\.io\/(library\/)?/, () => ['', 'docker.io/', 'index.docker.io/library/', 'registry-1.docker.io/library/'][n[0]! % 4]!);
  if (n[1] === 3) r = r.replace(/^quay\.io/, 'Quay.IO');
  return r + ['', ':v1', `@sha256:${'c'.repeat(64)}`, `:v1@sha256:${'d'.repeat(64)}`, ':latest', '@sha256:x'][n[2]! % 6]!;
});

const gitRule: fc.Arbitrary<GitRule> = fc.record(
  {
    urls: fc.array(urlPattern, { minLength: 1, maxLength: 2 }),
    revisions: fc.array(revPattern, { maxLength: 3 }),
    commits: fc.constantFrom(undefined, true, { reachable: true }, { shas: ['b'.repeat(40)] }),
    paths: fc.array(pathPattern, { minLength: 1, maxLength: 3 }),
    dotGit: fc.constantFrom(undefined, 'exact', 'either', 'yes'),
  },
  { requiredKeys: ['urls'] },
);
const bundleRule: fc.Arbitrary<BundleRule> = fc.record({ repositories: fc.array(repoPattern, { minLength: 1, maxLength: 2 }), digestOnly: fc.boolean() });

// ------------------------------------------------------------------ the resolvers' interpretation

/** Go's path.Clean (filepath.Clean on Linux). */
function goClean(p: string): string {
  if (p === '') return '.';
  const rooted = p.startsWith('/');
  const out: string[] = [];
  for (const part of p.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (out.length && out[out.length - 1] !== '..') out.pop();
      else if (!rooted) out.push('..');
      continue;
    }
    out.push(part);
  }
  const s = (rooted ? '/' : '') + out.join('/');
  return s === '' ? '.' : s;
}
/** Go's filepath.Join on Linux. */
const goJoin = (...elems: string[]): string => {
  const parts = elems.filter((e) => e !== '');
  return parts.length ? goClean(parts.join('/')) : '';
};
const CHECKOUT = '/tmp/catalog.git-1234567';

/** The bytes a path segment stands for, percent-decoded, as a binary string: what a server sees, whichever way it was spelled. */
function bytesOf(seg: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < seg.length; ) {
    if (seg[i] === '%' && /^[0-9A-Fa-f]{2}$/.test(seg.slice(i + 1, i + 3))) {
      bytes.push(parseInt(seg.slice(i + 1, i + 3), 16));
      i += 3;
    } else {
      const ch = String.fromCodePoint(seg.codePointAt(i)!);
      bytes.push(...Buffer.from(ch, 'utf8'));
      i += ch.length;
    }
  }
  return String.fromCharCode(...bytes);
}
const decodedKey = (scheme: string, authority: string, segments: string[]) => gitRepositoryKey({ scheme, authority, segments: segments.map(bytesOf) });

/** The repository a URL names to a WHATWG URL parser, as rule keys are made (see gitRepositoryKey), path segments decoded. */
function whatwgKey(raw: string): string[] {
  const u = new URL(raw);
  assert.equal(u.username + u.password + u.search + u.hash, '', `${raw}: no user info, query or fragment to a URL parser either`);
  const scheme = u.protocol.slice(0, -1);
  const port = u.port === '' || Number(u.port) === GIT_SCHEMES[scheme] ? '' : `:${Number(u.port)}`;
  const segs = u.pathname.split('/').slice(1);
  if (segs.length > 1 && segs[segs.length - 1] === '') segs.pop(); // git serves x/ as x
  for (const s of segs) assert.ok(s !== '' && s !== '.' && s !== '..', `${raw}: segment ${JSON.stringify(s)} after resolution`);
  return decodedKey(scheme, `${u.hostname.toLowerCase()}${port}`, segs);
}

/** go-containerregistry's name.ParseReference with its default (weak) options, as Tekton's bundles resolver calls it. */
function ggcrParse(s: string): { registry: string; repository: string; id: string } | undefined {
  const repository = (name: string) => {
    if (name === '') return undefined;
    const slash = name.indexOf('/');
    let registry = '';
    let repo = name;
    if (slash >= 0) {
      const first = name.slice(0, slash);
      if (first === 'localhost' || /[.:]/.test(first)) [registry, repo] = [first, name.slice(slash + 1)];
    }
    if ([...repo].length < 1 || [...repo].length > 255 || /[^a-z0-9_\-./]/.test(repo)) return undefined;
    if (!/^([A-Za-z0-9._~!$&'()*+,;=-]|%[0-9A-Fa-f]{2})*(:[0-9]*)?$|^\[[0-9A-Fa-f:.]+\](:[0-9]*)?$/.test(registry)) return undefined;
    if (registry === '' || registry === 'docker.io') registry = 'index.docker.io';
    return { registry, repository: !repo.includes('/') && registry === 'index.docker.io' ? `library/${repo}` : repo };
  };
  const tag = (name: string) => {
    const parts = name.split(':');
    let base = name;
    let t = '';
    if (parts.length > 1 && !parts[parts.length - 1]!.includes('/')) {
      base = parts.slice(0, -1).join(':');
      t = parts[parts.length - 1]!;
      if (t === '' || t.length > 128 || /[^A-Za-z0-9_.-]/.test(t)) return undefined;
    }
    const r = repository(base);
    return r ? { ...r, id: t || 'latest' } : undefined;
  };
  const byTag = tag(s);
  if (byTag) return byTag;
  const at = s.split('@');
  if (at.length !== 2 || !/^sha256:[a-f0-9]{64}$/.test(at[1]!)) return undefined;
  const t = tag(at[0]!);
  const r = t ? repository(`${t.registry}/${t.repository}`) : repository(at[0]!);
  return r ? { ...r, id: at[1]! } : undefined;
}
/** Registries compared as hosts (DNS names are case-insensitive), Docker Hub under any of its names. */
const hub = (r: string) => (['docker.io', 'index.docker.io', 'registry-1.docker.io'].includes(r.toLowerCase()) ? 'docker.io' : r.toLowerCase());

// ------------------------------------------------------------------ properties

test('nothing throws; canonicalization is idempotent and its output accepted as it is', () => {
  fc.assert(
    fc.property(fc.oneof(anyString, pathValue, revValue, urlValue, bundleValue, ...[pathCase, revCase, urlCase, bundleCase].map((a) => a.map((c) => c.value))), (s) => {
      for (const [f, value] of [
        [canonicalPathInRepo, (v: string) => v],
        [canonicalRevision, (v: string) => v],
        [(x: string) => canonicalGitUrl(x), (v: { href: string }) => v.href],
        [canonicalBundle, (v: { ref: string }) => v.ref],
      ] as Array<[(x: string) => { ok: boolean; value?: unknown }, (v: never) => string]>) {
        const once = f(s);
        if (!once.ok) continue;
        const c = value(once.value as never);
        const twice = f(c);
        assert.ok(twice.ok, `${JSON.stringify(s)} -> ${JSON.stringify(c)} is refused when given again`);
        assert.equal(value(twice.value as never), c, `${JSON.stringify(s)}: not idempotent`);
      }
      for (const pattern of [true]) {
        canonicalGitUrl(s, { pattern });
        canonicalPathInRepo(s, { pattern });
        canonicalRevision(s, { pattern });
      }
      compileGlob(s, true);
      compileGlob(s, false);
    }),
    params,
  );
});

test('checkSource never throws, only a usable rule ever allows, and what it hands back is allowed as it is', () => {
  const random = fc.record({
    policy: fc.record({ git: fc.array(gitRule, { maxLength: 3 }), bundles: fc.array(bundleRule, { maxLength: 2 }), cluster: fc.boolean(), source: fc.constant(SRC) }),
    ref: fc.record({
      resolver: fc.constantFrom('git', 'bundles', 'cluster', 'hub', ''),
      params: fc.dictionary(fc.constantFrom('url', 'revision', 'pathInRepo', 'bundle', 'name', 'kind', 'namespace', 'token'), fc.oneof(anyString, urlValue, pathValue, bundleValue), { maxKeys: 5 }),
    }),
  });
  // Rules and a reference made from the same patterns, so that some are allowed.
  const related = fc
    .record({ u: urlCase, r: revCase, p: pathCase, b: bundleCase, commits: fc.boolean(), digestOnly: fc.boolean(), more: fc.array(gitRule, { maxLength: 2 }), resolver: fc.constantFrom('git', 'git', 'bundles', 'cluster'), extra: fc.dictionary(fc.constantFrom('token', 'name', 'kind', 'namespace'), token, { maxKeys: 2 }) })
    .map(({ u, r, p, b, commits, digestOnly, more, resolver, extra }) => ({
      policy: { source: SRC, git: [{ urls: u.patterns, revisions: r.patterns, commits: commits ? { reachable: true } : undefined, paths: p.patterns }, ...more], bundles: [{ repositories: b.patterns, digestOnly }], cluster: commits },
      ref: {
        resolver,
        params:
          resolver === 'git'
            ? { url: u.value, revision: r.value, pathInRepo: p.value }
            : resolver === 'bundles'
              ? { bundle: b.value, ...(digestOnly ? {} : { name: 'sign', kind: 'Task' }) }
              : { kind: 'pipeline', name: 'p', namespace: 'internal-services', ...extra },
      },
    }));
  const seen = tally('checkSource');
  fc.assert(
    fc.property(fc.oneof(random, related) as fc.Arbitrary<{ policy: SourcePolicy; ref: { resolver: string; params: Record<string, string> } }>, ({ policy: p, ref: r }) => {
      const v = checkSource(p, r, ctx);
      seen.see(v.allowed);
      if (!v.allowed) return;
      const m = /^sources\.(git|bundles)\[(\d+)\]$/.exec(v.rule.split(', ')[0]!);
      if (m) {
        const rule = m[1] === 'git' ? p.git[Number(m[2])]! : p.bundles[Number(m[2])]!;
        assert.ok(m[1] === 'git' ? compileGitRule(rule as GitRule).ok : compileBundleRule(rule as BundleRule).ok, `${v.rule} is unusable but allowed ${JSON.stringify(r)}`);
      }
      // What is handed back is canonical: checked again, it is allowed as it is.
      assert.deepEqual(checkSource(p, { resolver: r.resolver, params: v.params }, ctx), v);
    }),
    params,
  );
  seen.check();
});

test('pathInRepo: whatever a rule accepts, joined onto the checkout as Go does, is that very file inside the checkout, and inside the rule\'s globs', () => {
  const seenPaths = tally('pathInRepo');
  fc.assert(
    fc.property(fc.oneof(pathCase, fc.record({ patterns: fc.option(fc.array(pathPattern, { minLength: 1, maxLength: 3 }), { nil: undefined }), value: fc.oneof(pathValue, anyString, pathCase.map((c) => c.value)) })), ({ patterns: paths, value: path }) => {
      const rule: GitRule = { urls: ['https://github.com/org/catalog.git'], revisions: ['main'], ...(paths ? { paths } : {}) };
      const v = checkSource({ source: SRC, git: [rule], bundles: [], cluster: false }, { resolver: 'git', params: { url: 'https://github.com/org/catalog.git', revision: 'main', pathInRepo: path } }, ctx);
      seenPaths.see(v.allowed);
      if (!v.allowed) return;
      const canonical = v.params.find((x) => x.name === 'pathInRepo')!.value;
      const read = goJoin(CHECKOUT, canonical);
      assert.ok(read.startsWith(`${CHECKOUT}/`), `${JSON.stringify(path)} reads ${read}, outside the checkout`);
      assert.equal(read.slice(CHECKOUT.length + 1), canonical, `${JSON.stringify(path)}: the resolver reads another file than the one checked`);
      assert.equal(goJoin(CHECKOUT, path), read, `${JSON.stringify(path)}: the value given and the canonical one name different files`);
      if (paths) {
        const inside = paths.some((p) => {
          const g = compileGlob(p, true);
          return g.ok && matchGlob(g.glob, read.slice(CHECKOUT.length + 1));
        });
        assert.ok(inside, `${JSON.stringify(path)} is outside ${JSON.stringify(paths)}`);
      }
    }),
    params,
  );
  seenPaths.check();
});

test('url: whatever a rule accepts names, to a WHATWG URL parser, the same repository as the canonical URL passed on, inside the rule; "x" for "x.git" only where the host or the rule makes them one', () => {
  const seenUrls = tally('url');
  fc.assert(
    fc.property(fc.oneof(urlCase, fc.record({ patterns: fc.array(urlPattern, { minLength: 1, maxLength: 3 }), value: fc.oneof(urlValue, anyString) })), fc.constantFrom(undefined, 'exact', 'either'), ({ patterns: urls, value: url }, dotGit) => {
      const rule: GitRule = { urls, revisions: ['main'], ...(dotGit ? { dotGit } : {}) };
      const v = checkSource({ source: SRC, git: [rule], bundles: [], cluster: false }, { resolver: 'git', params: { url, revision: 'main', pathInRepo: 'a.yaml' } }, ctx);
      seenUrls.see(v.allowed);
      if (!v.allowed) return;
      const canonical = v.params.find((x) => x.name === 'url')!.value;
      const c = canonicalGitUrl(canonical);
      assert.ok(c.ok);
      const key = gitRepositoryKey(c.value);
      const decoded = decodedKey(c.value.scheme, c.value.authority, c.value.segments);
      assert.deepEqual(whatwgKey(url), decoded, `${JSON.stringify(url)} and ${canonical} name different repositories to a URL parser`);
      assert.deepEqual(whatwgKey(canonical), decoded);
      const compiled = compileGitRule(rule);
      assert.ok(compiled.ok);
      const how = matchGitUrl(compiled.rule, c.value);
      assert.ok(how, `${JSON.stringify(url)} outside ${JSON.stringify(urls)}`);
      // As spelled, or by its other spelling only on a host that cannot hold both, or under dotGit: either.
      if (!compiled.rule.urls.some((g) => matchGlob(g, key))) {
        assert.equal(how, 'dotGit');
        assert.ok(aliasesDotGit(c.value) || dotGit === 'either', `${JSON.stringify(url)} allowed by ${JSON.stringify(urls)} (dotGit ${dotGit ?? 'absent'}) through its other spelling, on a host that may serve it as another repository`);
      }
    }),
    params,
  );
  seenUrls.check();
});

test('revision: whatever a rule accepts is a fully qualified branch or tag inside the rule, or a commit it lists or sends to be checked; never an option or a refspec to git', () => {
  const seenRevs = tally('revision');
  const LISTED = 'b'.repeat(40);
  const commitsOf = fc.constantFrom(undefined, { reachable: true }, { shas: [LISTED] }, { reachable: true, shas: [LISTED] });
  const tagged = fc.array(fc.constantFrom('refs/tags/v*', 'refs/tags/**', 'refs/heads/release-*'), { maxLength: 2 });
  fc.assert(
    fc.property(fc.oneof(revCase, fc.record({ patterns: fc.array(revPattern, { maxLength: 3 }), value: fc.oneof(revValue, anyString, fc.constantFrom('refs/tags/v1', 'refs/heads/main', 'refs/tags/main', LISTED)) })), commitsOf, tagged, ({ patterns, value: revision }, commits, more) => {
      const revisions = [...patterns, ...more];
      const rule: GitRule = { urls: ['https://github.com/org/catalog.git'], revisions, ...(commits ? { commits } : {}) };
      const v = checkSource({ source: SRC, git: [rule], bundles: [], cluster: false }, { resolver: 'git', params: { url: 'https://github.com/org/catalog.git', revision, pathInRepo: 'a.yaml' } }, ctx);
      seenRevs.see(v.allowed);
      if (!v.allowed) return;
      const rev = v.params.find((x) => x.name === 'revision')!.value;
      assert.ok(!/^[-+^]/.test(rev) && !/[:*?[\\\s~^]|\.\.|@\{/.test(rev) && /^[\x21-\x7e]+$/.test(rev), `${JSON.stringify(revision)} -> ${JSON.stringify(rev)} is not a plain ref name`);
      const compiled = compileGitRule(rule);
      assert.ok(compiled.ok);
      if (isFullSha(rev)) {
        if (v.commitCheck) assert.ok(commits && 'reachable' in commits && commits.reachable && v.commitCheck.commit === rev && v.commitCheck.refs.length > 0, `${rev}: sent to be checked without commits.reachable`);
        else assert.equal(rev, LISTED, `${rev}: a commit neither listed nor checked`);
        return;
      }
      assert.equal(v.commitCheck, undefined);
      const m = /^refs\/(heads|tags)\/(.+)$/.exec(rev);
      assert.ok(m, `${JSON.stringify(revision)} -> ${JSON.stringify(rev)} is not fully qualified`);
      const globs = m[1] === 'heads' ? compiled.rule.branches : compiled.rule.tags;
      assert.ok(globs.some((g) => matchGlob(g, m[2]!)), `${JSON.stringify(rev)} is outside ${JSON.stringify(revisions)}`);
      // A bare name is never a tag, whatever the rule allows.
      if (!revision.startsWith('refs/')) assert.equal(m[1], 'heads', `${JSON.stringify(revision)} became a tag`);
    }),
    params,
  );
  seenRevs.check();
});

test('bundle: whatever a rule accepts, go-containerregistry reads as the same registry, repository and tag or digest as the canonical reference passed on, inside the rule', () => {
  const seenBundles = tally('bundle');
  fc.assert(
    fc.property(fc.oneof(bundleCase, fc.record({ patterns: fc.array(repoPattern, { minLength: 1, maxLength: 3 }), value: fc.oneof(bundleValue, anyString) })), fc.boolean(), ({ patterns: repositories, value: bundle }, digestOnly) => {
      const rule: BundleRule = { repositories, digestOnly };
      const v = checkSource({ source: SRC, git: [], bundles: [rule], cluster: false }, { resolver: 'bundles', params: { bundle } }, ctx);
      seenBundles.see(v.allowed);
      if (!v.allowed) return;
      const canonical = v.params[0]!.value;
      const theirs = ggcrParse(bundle);
      const ours = ggcrParse(canonical);
      assert.ok(theirs && ours, `${JSON.stringify(bundle)} or ${canonical} is refused by go-containerregistry`);
      assert.deepEqual({ ...theirs, registry: hub(theirs.registry) }, { ...ours, registry: hub(ours.registry) }, `${JSON.stringify(bundle)} and ${canonical} differ to go-containerregistry`);
      const b = canonicalBundle(canonical);
      assert.ok(b.ok && b.value.repository === `${hub(ours.registry)}/${ours.repository}`);
      if (digestOnly) assert.ok(b.value.digest, `${canonical}: a tag under digestOnly`);
      const compiled = compileBundleRule(rule);
      assert.ok(compiled.ok && compiled.rule.repositories.some((g) => matchGlob(g, b.value.repository)));
    }),
    params,
  );
  seenBundles.check();
});
