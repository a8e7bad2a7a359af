/**
 * Globs over values made of segments separated by "/": repository URLs (by
 * src/policy/canonical.ts, the scheme and authority as the first segment),
 * pathInRepo, git revisions, bundle repositories, tenants (remote/namespace),
 * Pipeline and param names.
 *
 *   `*`   any run of characters within one segment (never a "/"),
 *   `**`  a whole segment only: zero or more whole segments,
 *   `\*`  a literal star; everything else is literal.
 *
 * Neither wildcard ever matches a "." or ".." segment: a glob means "these
 * segments", and a value that climbs (`a/../b`) is never inside one. Only a
 * pattern that spells "." or ".." itself matches such a segment, and the
 * strict compile (used for the source policy's globs when the configuration
 * is read) refuses those patterns, empty segments and a `**` that shares its
 * segment with other characters.
 *
 * Matching is linear in the value per pattern segment (no regular expressions,
 * so no backtracking blow-up on hostile values). Pure: no I/O.
 */

type Segment =
  | { kind: 'any' }
  /** Literal pieces between unescaped stars; one piece: no star at all. */
  | { kind: 'wild'; pieces: string[] };

export interface Glob {
  pattern: string;
  segments: Segment[];
}

export type GlobResult = { ok: true; glob: Glob } | { ok: false; why: string };

const DOT = (s: string): boolean => s === '.' || s === '..';

/** One segment's pieces: split on unescaped "*", with "\*" a literal star. */
function piecesOf(seg: string): string[] {
  const pieces: string[] = [''];
  for (let i = 0; i < seg.length; i++) {
    const ch = seg[i]!;
    if (ch === '\\' && seg[i + 1] === '*') {
      pieces[pieces.length - 1] += '*';
      i++;
    } else if (ch === '*') pieces.push('');
    else pieces[pieces.length - 1] += ch;
  }
  return pieces;
}

/**
 * Compiles a glob given as its segments. strict: refuse empty, "." and ".."
 * segments and a `**` inside a segment; lenient (tenants, names): such a
 * `**` means `*`.
 */
export function compileSegments(pattern: string, segs: readonly string[], strict: boolean): GlobResult {
  const segments: Segment[] = [];
  for (const seg of segs) {
    if (seg === '**') {
      // Two `**` in a row mean the same as one.
      if (segments[segments.length - 1]?.kind !== 'any') segments.push({ kind: 'any' });
      continue;
    }
    if (strict) {
      if (seg === '') return { ok: false, why: 'it has an empty segment' };
      if (DOT(seg)) return { ok: false, why: `it has a ${JSON.stringify(seg)} segment` };
      if (/(^|[^\\])\*\*/.test(seg)) return { ok: false, why: `"**" must be a whole segment, not part of ${JSON.stringify(seg)}` };
    }
    segments.push({ kind: 'wild', pieces: piecesOf(seg) });
  }
  return { ok: true, glob: { pattern, segments } };
}

/** Compiles a "/"-separated glob. */
export function compileGlob(pattern: string, strict = true): GlobResult {
  return compileSegments(pattern, pattern.split('/'), strict);
}

/** `*`-only wildcard match of one segment: leftmost placement of the middle pieces is enough. */
function segmentMatch(pieces: readonly string[], value: string): boolean {
  if (pieces.length === 1) return pieces[0] === value;
  const first = pieces[0]!;
  const last = pieces[pieces.length - 1]!;
  if (value.length < first.length + last.length || !value.startsWith(first) || !value.endsWith(last)) return false;
  let at = first.length;
  const end = value.length - last.length;
  for (let i = 1; i < pieces.length - 1; i++) {
    const p = pieces[i]!;
    const found = value.indexOf(p, at);
    if (found < 0 || found + p.length > end) return false;
    at = found + p.length;
  }
  return true;
}

/** Whether a compiled glob matches a value (its segments, or a "/"-separated string). */
export function matchGlob(glob: Glob, value: string | readonly string[]): boolean {
  const v = typeof value === 'string' ? value.split('/') : value;
  const n = v.length;
  // reach[j]: the first j value segments are matched by the pattern so far.
  let reach = new Array<boolean>(n + 1).fill(false);
  reach[0] = true;
  for (const seg of glob.segments) {
    const next = new Array<boolean>(n + 1).fill(false);
    if (seg.kind === 'any') {
      for (let j = 0; j <= n; j++) {
        if (!reach[j]) continue;
        next[j] = true;
        for (let k = j; k < n && !DOT(v[k]!); k++) next[k + 1] = true;
      }
    } else {
      const literalDot = seg.pieces.length === 1 && DOT(seg.pieces[0]!);
      for (let j = 0; j < n; j++) {
        if (!reach[j]) continue;
        const s = v[j]!;
        if (DOT(s) && !literalDot) continue;
        if (segmentMatch(seg.pieces, s)) next[j + 1] = true;
      }
    }
    reach = next;
  }
  return reach[n] === true;
}

const lenient = new Map<string, Glob>();

/**
 * Lenient "/"-separated glob match, for patterns that are not validated when
 * read (tenants, Pipeline and param names). Compiled patterns are memoized.
 */
export function globMatch(pattern: string, value: string): boolean {
  let g = lenient.get(pattern);
  if (!g) {
    const r = compileGlob(pattern, false);
    if (!r.ok) return false;
    g = r.glob;
    if (lenient.size > 10_000) lenient.clear();
    lenient.set(pattern, g);
  }
  return matchGlob(g, value);
}

/** A literal string as a glob that matches only itself. */
export function escapeGlob(s: string): string {
  return s.replace(/\*/g, '\\*');
}
