/**
 * Canonical bundle references (the bundles resolver's `bundle` param), by the
 * OCI/Docker reference grammar and the defaults Tekton's bundles resolver
 * applies through go-containerregistry's name.ParseReference:
 *
 * - the first "/"-component is the registry when it is "localhost" or holds a
 *   "." or ":"; otherwise the registry is Docker Hub;
 * - Docker Hub has one canonical name here, `docker.io` (go-containerregistry
 *   says index.docker.io; docker.io, index.docker.io and registry-1.docker.io
 *   are all the same registry), and a one-component repository there is
 *   `library/<name>` — except under the name registry-1.docker.io, where
 *   go-containerregistry implies no library/, so that spelling is refused
 *   (found by the long property-based run);
 * - no tag and no digest means the tag `latest`; a tag together with a digest
 *   means the digest (go-containerregistry ignores the tag then), so the tag
 *   is dropped;
 * - registry hosts are lower-cased (DNS names); repositories must be lower
 *   case already (registries compare them as written), and each component
 *   follows the distribution grammar [a-z0-9]+ ([._]|__|-+ [a-z0-9]+)*, which
 *   also rules out empty, "." and ".." components that go-containerregistry
 *   itself would let through into the registry URL;
 * - digests: sha256 with 64 lower-case hex digits (the only algorithm
 *   go-containerregistry accepts).
 *
 * Pure: no I/O. See src/policy/canonical.ts for the other resolvers.
 */
import type { Canon } from './canonical.js';

export interface BundleRef {
  /** e.g. quay.io, docker.io, localhost:5000 */
  registry: string;
  /** registry/path, e.g. docker.io/library/busybox */
  repository: string;
  tag?: string;
  /** sha256:<64 hex> */
  digest?: string;
  /** The canonical reference: repository@digest, or repository:tag. */
  ref: string;
}

const no = (why: string): { ok: false; why: string } => ({ ok: false, why });
const q = (s: string): string => JSON.stringify(s);

export const DOCKER_HUB = 'docker.io';
const DOCKER_HUB_ALIASES = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io']);
const COMPONENT = /^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const DIGEST = /^sha256:[0-9a-f]{64}$/;
const HOST_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

function canonicalRegistry(raw: string, pattern: boolean): Canon {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^:]+)(?::([0-9]{1,5}))?$/.exec(raw);
  if (!m) return no(`has a malformed registry ${q(raw)}`);
  let host = m[1]!.toLowerCase();
  if (host.startsWith('[')) {
    try {
      host = new URL(`http://${host}/`).hostname;
    } catch {
      return no(`has a malformed IPv6 registry ${q(raw)}`);
    }
  } else {
    for (const l of host.split('.')) {
      if (pattern && l === '*') continue;
      if (!HOST_LABEL.test(l)) return no(`has a registry host ${q(raw)} that is not a DNS name or IPv4 address`);
    }
  }
  if (m[2] !== undefined && (Number(m[2]) < 1 || Number(m[2]) > 65535)) return no(`has the registry port ${m[2]}, outside 1-65535`);
  const port = m[2] !== undefined ? `:${Number(m[2])}` : '';
  if (port === '' && DOCKER_HUB_ALIASES.has(host)) return { ok: true, value: DOCKER_HUB };
  return { ok: true, value: `${host}${port}` };
}

/** Splits name[/...] into registry and repository path the way go-containerregistry does. */
function splitRegistry(name: string): { registry: string | undefined; path: string } {
  const slash = name.indexOf('/');
  if (slash < 0) return { registry: undefined, path: name };
  const first = name.slice(0, slash);
  if (first === 'localhost' || /[.:]/.test(first)) return { registry: first, path: name.slice(slash + 1) };
  return { registry: undefined, path: name };
}

/** The repository part (registry/path) of a reference or of a rule's pattern. */
function canonicalRepository(name: string, pattern: boolean): Canon<{ registry: string; repository: string }> {
  let { registry, path } = splitRegistry(name);
  // In a pattern, a first component that is a wildcard stands for the registry.
  if (pattern && registry === undefined && name.includes('/') && name.split('/')[0]!.includes('*')) {
    registry = name.split('/')[0]!;
    path = name.slice(registry.length + 1);
  }
  let reg: string;
  if (registry === undefined) reg = DOCKER_HUB;
  else if (pattern && (registry === '*' || registry === '**')) reg = registry;
  else {
    const r = canonicalRegistry(registry, pattern);
    if (!r.ok) return r;
    reg = r.value;
  }
  if (path === '') return no('names no repository');
  if (path.length > 255) return no('has a repository longer than 255 characters');
  const comps = path.split('/');
  for (const c of comps) {
    if (pattern && (c === '*' || c === '**')) continue;
    if (pattern && c.includes('*')) {
      if (c.includes('**')) return no(`has "**" inside the component ${q(c)} ("**" must be a whole component)`);
      if (!COMPONENT.test(c.replace(/\*/g, 'x'))) return no(`has the repository component ${q(c)}, which is not lower-case letters and digits with ".", "_", "__" or "-" between them`);
      continue;
    }
    if (c === '') return no('has an empty repository component ("//", or a leading or trailing "/")');
    if (c !== c.toLowerCase()) return no(`has upper-case letters in the repository component ${q(c)} (repositories are lower case)`);
    if (!COMPONENT.test(c)) return no(`has the repository component ${q(c)}, which is not lower-case letters and digits with ".", "_", "__" or "-" between them`);
  }
  if (comps.length === 1 && registry?.toLowerCase() === 'registry-1.docker.io') {
    // go-containerregistry implies library/ only for docker.io and index.docker.io.
    return no(`names ${q(comps[0]!)} on registry-1.docker.io, where no library/ is implied (unlike docker.io); write docker.io/${comps[0]!} or registry-1.docker.io/library/${comps[0]!}`);
  }
  if (reg === DOCKER_HUB && comps.length === 1 && !(pattern && comps[0]!.includes('*'))) comps.unshift('library');
  return { ok: true, value: { registry: reg, repository: `${reg}/${comps.join('/')}` } };
}

/** A bundle reference in its canonical form (see the file's comment). */
export function canonicalBundle(raw: string): Canon<BundleRef> {
  if (raw === '') return no('is empty');
  if (raw.length > 1024) return no('is longer than 1024 characters');
  const bad = /[^\x21-\x7e]/.exec(raw);
  if (bad) return no(`has the character U+${bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`);
  if (/[\\?#]/.test(raw)) return no('has a "\\", "?" or "#"');
  const at = raw.split('@');
  if (at.length > 2) return no('has more than one "@"');
  let name = at[0]!;
  let digest: string | undefined;
  if (at.length === 2) {
    digest = at[1]!;
    if (!DIGEST.test(digest)) return no(`has the digest ${q(digest)}; only sha256: with 64 lower-case hex digits is accepted`);
  }
  // A tag: after the last ":" when no "/" follows it (otherwise that ":" is a registry port).
  let tag: string | undefined;
  const colon = name.lastIndexOf(':');
  if (colon >= 0 && !name.slice(colon + 1).includes('/')) {
    tag = name.slice(colon + 1);
    name = name.slice(0, colon);
    if (!TAG.test(tag)) return no(`has the tag ${q(tag)}, which is not 1-128 of A-Z, a-z, 0-9, "_", "." and "-" (not beginning with "." or "-")`);
  }
  const repo = canonicalRepository(name, false);
  if (!repo.ok) return repo;
  const { registry, repository } = repo.value;
  if (digest) return { ok: true, value: { registry, repository, digest, ref: `${repository}@${digest}` } };
  const t = tag ?? 'latest';
  return { ok: true, value: { registry, repository, tag: t, ref: `${repository}:${t}` } };
}

/**
 * A rule's repository pattern in canonical form: the same registry defaults
 * (docker.io, library/), `*` within a component, `**` whole components, and a
 * first component that is a wildcard standing for any registry.
 */
export function canonicalRepositoryPattern(raw: string): Canon {
  if (raw === '') return no('is empty');
  if (/[^\x21-\x7e]|[\\?#@]/.test(raw)) return no('has a character that cannot be in a repository (space, control, non-ASCII, "\\", "?", "#" or "@")');
  const colon = raw.lastIndexOf(':');
  if (colon >= 0 && !raw.slice(colon + 1).includes('/')) return no('has a tag; rules name repositories (use digestOnly to require digests)');
  const r = canonicalRepository(raw, true);
  return r.ok ? { ok: true, value: r.value.repository } : r;
}
