/**
 * One reading: resolved bytes are accepted only when Tekton and this
 * controller cannot read them differently. Pure, no I/O.
 *
 * The controller checks, signature-verifies and hands Tekton what *it* read
 * (the `yaml` package, YAML 1.1). Tekton — and its signing tools, and what a
 * reviewer trusts Tekton to do — reads the same bytes with Go: the
 * reconciler's UniversalDeserializer, i.e. JSON when the first non-space
 * character is `{`, otherwise sigs.k8s.io/yaml's YAMLToJSON over go-yaml v2
 * (strict: a duplicate key is an error). The two disagree on line breaks
 * (Go also breaks at a lone CR, U+0085, U+2028, U+2029, so a "comment" can
 * hide keys), on YAML 1.1 scalars (`0755`, `0o17`, `12:30`, `1e3`, `yes`,
 * `2001-12-14`, `._5`), escapes (`\/`, surrogates), tabs, merge keys, tags,
 * directives, several documents, non-string keys.
 *
 * decodeResolved guarantees: when it answers `ok`, the bytes are strict
 * UTF-8 and lie in a subset on which both readers give the same JSON value,
 * and `value` is that value (the `yaml` 1.1 parse). The subset: one document,
 * a mapping at the top; no directives, anchors, aliases, tags, merge keys or
 * non-string keys; no control characters but tab, LF and CRLF, no lone CR,
 * U+0085, U+2028, U+2029, or BOM except a leading one; tabs only inside
 * block scalars; double-quoted escapes both readers know; plain scalars only
 * as strings Go cannot take for anything else (and the `yaml` package reads
 * as the same string), or as canonical `true`, `false`, `null`, `~`, decimal
 * integers within ±2^53 and finite decimals (`1.5`, `1e-10`) — and octal
 * file modes (`defaultMode: 0755`), which both read as the same number. A
 * JSON document (Tekton's JSON path) must also be valid JSON that JSON.parse
 * reads as the same value. Not accepted either: a block scalar ending the
 * file without a line break, a tab in a block scalar's first indentation,
 * spaces-only lines with an indentation indicator (go-yaml reads them
 * differently).
 * Anything else is refused with the line and what to write instead.
 * test/unit/one-reading-property.test.ts holds this to Tekton's own decoder
 * (hack/trusted/decode) on generated documents.
 */
import { isDeepStrictEqual } from 'node:util';
import { isAlias, isMap, isNode, isPair, isScalar, Parser, parseDocument, Scalar, visit, type Document } from 'yaml';

export type Decoded = { ok: true; value: unknown } | { ok: false; why: string };

/**
 * YAML 1.1's float resolution, except that a plain scalar with no digit is a
 * string, as go-yaml reads it: `.` (a key in every managedFields Go writes,
 * so in what the cluster resolver returns), `-.`, `e5`. With the library's
 * own patterns those are NaN here; other forms where the readers differ
 * (`._5`) are refused by the plain-scalar check.
 */
const FLOAT = 'tag:yaml.org,2002:float';
function goLikeFloats(tags: Array<{ tag: string; test?: RegExp }>): Array<{ tag: string; test?: RegExp }> {
  return tags.map((t) => (t.tag === FLOAT && t.test && !/inf|nan/i.test(t.test.source) ? { ...t, test: new RegExp(`^(?=[-+]?[._]*[0-9])${t.test.source.slice(1)}`) } : t));
}

/** What parseResolved (src/tekton/graph.ts) parses with, plus a duplicate key being an error, as it is to Tekton. */
export const YAML_OPTIONS = { version: '1.1', maxAliasCount: 100, uniqueKeys: true, customTags: goLikeFloats as never } as const;

/** A decimal integer within ±2^53, which a JS number holds exactly. */
const exact = (s: string): boolean => BigInt(s) <= 2n ** 53n && BigInt(s) >= -(2n ** 53n);
/** Go's unicode.IsSpace: what k8s skips before looking for '{' (JSON) — not YAML's whitespace. */
const JSON_PREFIX = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*\{/;
/** go-yaml v2 resolves a plain scalar by its first byte: other first characters are always strings. */
const GO_HINTS = '+-0123456789yYnNtTfFoO~.';
const GO_BOOL: Record<string, boolean> = {};
for (const s of ['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON']) GO_BOOL[s] = true;
for (const s of ['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF']) GO_BOOL[s] = false;
const GO_NULL = new Set(['', '~', 'null', 'Null', 'NULL']);
const GO_SPECIAL_FLOAT = /^([-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN))$/;
const GO_INT = /^([-+]?)(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|0[0-7]+|[0-9]+)$/;
const GO_FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/; // yamlStyleFloat
const CANON_INT = /^(0|-?[1-9][0-9]*)$/;
const CANON_FLOAT = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$/; // read by both as the same double
/** Double-quoted escapes go-yaml v2 and `yaml` both know and decode alike (not `\/`, not `\'`). */
const ESCAPES = new Set(['0', 'a', 'b', 't', '\t', 'n', 'v', 'f', 'r', 'e', ' ', '"', '\\', 'N', '_', 'L', 'P', '\n', '\r']);
const HEX_ESCAPES: Record<string, number> = { x: 2, u: 4, U: 8 };

type GoRead = { as: 'string' } | { as: 'bool'; value: boolean } | { as: 'null' } | { as: 'number'; value: string } | { as: 'merge' };

/** How go-yaml v2 (resolve.go) reads a plain scalar when decoding into interface{} (timestamps stay their text). */
export function goPlain(s: string): GoRead {
  if (s === '<<') return { as: 'merge' }; // the decoder's isMerge, whatever resolve says
  if (GO_NULL.has(s)) return { as: 'null' };
  if (!GO_HINTS.includes(s[0]!)) return { as: 'string' };
  if (s in GO_BOOL) return { as: 'bool', value: GO_BOOL[s]! };
  if (GO_SPECIAL_FLOAT.test(s)) return { as: 'number', value: s };
  if ('yYnNtTfFoO~'.includes(s[0]!)) return { as: 'string' };
  // strconv.ParseFloat(s): Go's float syntax, "_" only between digits.
  if (s[0] === '.') return /^\.[0-9](_?[0-9])*([eE][-+]?[0-9](_?[0-9])*)?$/.test(s) ? { as: 'number', value: String(Number(s.replaceAll('_', ''))) } : { as: 'string' };
  // A digit or a sign: strconv.ParseInt(base 0), ParseUint, then yamlStyleFloat, with "_" removed.
  const plain = s.replaceAll('_', '');
  const int = GO_INT.exec(plain);
  if (int) {
    const digits = int[2]!;
    const v = BigInt(/^0[0-7]+$/.test(digits) ? `0o${digits.slice(1)}` : digits.replace(/^0[oO]/, '0o')) * (int[1] === '-' ? -1n : 1n);
    if (v >= -(2n ** 63n) && v < 2n ** 63n) return { as: 'number', value: v.toString() };
    if (int[1] === '' && v < 2n ** 64n) return { as: 'number', value: String(Number(v)) }; // a uint64, a float64 once k8s decodes the JSON
  }
  // An overflowing float is an error to ParseFloat, and go-yaml then keeps the string.
  return GO_FLOAT.test(plain) && Number.isFinite(Number(plain)) ? { as: 'number', value: String(Number(plain)) } : { as: 'string' };
}

const show = (v: unknown): string =>
  typeof v === 'string' ? `the string ${JSON.stringify(v)}` : v === null ? 'null' : v instanceof Date ? `a timestamp (${v.toISOString()})` : typeof v === 'boolean' || typeof v === 'number' ? `the ${typeof v} ${String(v)}` : `a ${typeof v}`;
const showGo = (g: GoRead, s: string): string =>
  g.as === 'string' ? `the string ${JSON.stringify(s)}` : g.as === 'bool' ? `the boolean ${g.value}` : g.as === 'null' ? 'null' : g.as === 'merge' ? 'a merge key' : `the number ${g.value}`;

/** Keys of Kubernetes file modes, written in octal by convention (`defaultMode: 0755`), which both readers read alike. */
const FILE_MODES = new Set(['defaultMode', 'mode']);

/** Why a plain scalar is refused, or undefined when both readers surely read it alike. */
function plainScalar(s: string, js: unknown, key: unknown): string | undefined {
  const quote = `quote it (${JSON.stringify(s)})`;
  if (s === '<<' || s === '=') return `the plain scalar ${s} is a YAML 1.1 ${s === '<<' ? 'merge' : 'value'} key; ${quote}`;
  const go = goPlain(s);
  if (go.as === 'string' && js === s) return undefined;
  if (go.as === 'null' && js === null && (s === '' || s === 'null' || s === '~')) return undefined;
  if (go.as === 'bool' && js === go.value && (s === 'true' || s === 'false')) return undefined;
  if (go.as === 'number' && typeof js === 'number' && Object.is(js, Number(s))) {
    if (CANON_INT.test(s) && exact(s)) return undefined;
    if (!CANON_INT.test(s) && CANON_FLOAT.test(s) && Number.isFinite(js)) return undefined;
  }
  if (go.as === 'number' && /^0[0-7]+$/.test(s) && FILE_MODES.has(key as string) && go.value === String(js)) return undefined;
  const goValue = go.as === 'bool' ? go.value : go.as === 'null' ? null : go.as === 'number' ? Number(go.value) : undefined;
  const canon = go.as === 'number' ? (CANON_INT.test(go.value) && exact(go.value) ? go.value : '') : go.as === 'bool' || go.as === 'null' ? String(goValue) : '';
  const instead = `${quote}${canon ? ` or write ${canon}` : ''}`;
  if (/^[-+]?[0-9]+$/.test(s) && !exact(s)) return `the integer ${s} is beyond 2^53, which this reader cannot hold exactly; ${quote}`;
  if (GO_SPECIAL_FLOAT.test(s)) return `the plain scalar ${s} is not a finite number, which Tekton's reader cannot turn into JSON; ${quote}`;
  if (goValue !== undefined && Object.is(goValue, js)) return `the plain scalar ${s} is read as ${show(js)} by both YAML readers, but only the plain forms true, false, null, ~ and decimal numbers are accepted, so that a reader of the file sees what runs; ${instead}`;
  return `the plain scalar ${s} is read as ${showGo(go, s)} by Tekton's YAML reader and as ${show(js)} here; ${instead}`;
}

/** Why a double-quoted scalar's escapes are refused (go-yaml v2 knows fewer, and refuses surrogates). */
function escapes(raw: string, json: boolean): string | undefined {
  for (let i = raw.indexOf('\\'); i >= 0; i = raw.indexOf('\\', i)) {
    const c = raw[i + 1] ?? '';
    const n = HEX_ESCAPES[c];
    if (n !== undefined) {
      const hex = raw.slice(i + 2, i + 2 + n);
      if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== n) return `the escape \\${c}${hex} is incomplete`;
      const cp = parseInt(hex, 16);
      const pair = json && cp >= 0xd800 && cp < 0xdc00 && /^\\u[dD][c-fC-F][0-9a-fA-F]{2}/.test(raw.slice(i + 6));
      if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff && !pair)) return `the escape \\${c}${hex} is ${cp > 0x10ffff ? 'beyond Unicode' : 'a UTF-16 surrogate'}, which Tekton's reader refuses or replaces; write the character itself`;
      i += (pair ? 8 : 2) + n;
    } else if (ESCAPES.has(c) || (json && c === '/')) i += 2;
    else return `the escape \\${c === '\t' ? '<tab>' : c} is not one Tekton's YAML reader knows the same way; write ${c === '/' ? '/' : c === "'" ? "'" : `\\\\${c}`} instead`;
  }
  return undefined;
}

const CHARS: Array<[RegExp, (c: string) => string]> = [
  [/\r(?!\n)/, () => 'a carriage return (CR) not followed by LF: Tekton\'s YAML reader breaks the line there and this reader does not, so the rest of the line can mean different things to each; use LF (or CRLF) line ends'],
  [/[\u0085\u2028\u2029]/, (c) => `the character U+${hex(c)} (${c === '\u0085' ? 'NEXT LINE' : c === '\u2028' ? 'LINE SEPARATOR' : 'PARAGRAPH SEPARATOR'}) is a line break to Tekton's YAML reader and not to this one, so text after it (even in a comment) can be read as YAML by one only; remove it, or write it as an escape in a double-quoted string (${c === '\u0085' ? '\\N' : c === '\u2028' ? '\\L' : '\\P'})`],
  [/\ufeff/, () => 'a byte order mark (U+FEFF) inside the file; remove it (only one at the very start is allowed), or write \\uFEFF in a double-quoted string'],
  [/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]/, (c) => `the control character U+${hex(c)}, which YAML does not allow in a file; remove it, or write it as an escape in a double-quoted string`],
];
const TAB = 'a tab outside a block scalar (| or >): the two YAML readers do not treat tabs alike there; use spaces (or \\t in a double-quoted string)';
const hex = (c: string): string => c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');

/**
 * Whether a tab inside a block scalar (its body starts after `from`, a
 * newline) is content to go-yaml too: after something else on its line, or on
 * a line after the first one with text, at or beyond that line's indentation.
 * go-yaml refuses a tab where it still looks for the indentation.
 */
function blockTab(text: string, from: number, i: number): boolean {
  const lineStart = text.lastIndexOf('\n', i - 1) + 1;
  if (/[^ \t]/.test(text.slice(lineStart, i))) return true;
  const first = /^[ \t]*[^ \t\r\n]/m.exec(text.slice(from + 1));
  if (!first || from + 1 + first.index >= lineStart) return false;
  const lead = first[0].slice(0, -1);
  return !lead.includes('\t') && i - lineStart >= lead.length;
}

/** The 1-based line of an offset. */
function lineAt(text: string, offset: number): number {
  let n = 1;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/** The first line of the bytes that is not UTF-8. */
function badUtf8Line(bytes: Uint8Array): number {
  const dec = new TextDecoder('utf-8', { fatal: true });
  let line = 1;
  for (let start = 0; start <= bytes.length; line++) {
    let end = bytes.indexOf(0x0a, start);
    if (end < 0) end = bytes.length;
    try {
      dec.decode(bytes.subarray(start, end));
    } catch {
      return line;
    }
    start = end + 1;
  }
  return line;
}

const rangeOf = (n: unknown): number => (n as { range?: number[] } | null)?.range?.[0] ?? 0;

/** Why one node of the document is refused, and where; block scalars' bodies are added to `blocks` (where tabs may be). */
function checkNode(text: string, node: unknown, parent: unknown, json: boolean, blocks: Array<[number, number]>): [string, number] | undefined {
  if (isAlias(node)) return [`the alias ${node.source} repeats content by reference, which the two readers do not expand alike; write the content out`, rangeOf(node)];
  if (isPair(node)) {
    const k = node.key;
    if (isScalar(k) && (k.source === '<<' || k.value === '<<' || typeof k.value === 'symbol')) return ['the key << is a YAML 1.1 merge key; write the merged keys out', rangeOf(k)];
    if (!isScalar(k) || typeof k.value !== 'string') return [`a key that is not a string (${isScalar(k) ? show(k.value) : 'a collection'}); Tekton's reader turns it into a string of its own making; quote it`, rangeOf(k)];
    return undefined;
  }
  if (!isNode(node)) return undefined;
  const start = rangeOf(node);
  if (node.anchor) return [`the anchor &${node.anchor} sets up repeated content, which the two readers do not expand alike; write the content out without it`, start];
  if (node.tag) return [`the tag ${node.tag.replace('tag:yaml.org,2002:', '!!')} changes how a value is read, and the two readers know different tags; remove it (quote the value for a string)`, start];
  if (!isScalar(node)) return undefined;
  const end = node.range![1];
  let why: string | undefined;
  let at = start;
  if (node.type === Scalar.PLAIN) why = plainScalar(node.source ?? String(node.value), node.value, isPair(parent) && parent.value === node && isScalar(parent.key) ? parent.key.value : undefined);
  else if (typeof node.value !== 'string') why = `a quoted or block scalar read as ${show(node.value)}; write it as a plain string`;
  else if (node.type === Scalar.QUOTE_DOUBLE) why = escapes(text.slice(start, end), json);
  else if (node.type === Scalar.BLOCK_LITERAL || node.type === Scalar.BLOCK_FOLDED) {
    const body = text.indexOf('\n', start);
    blocks.push([body, end]);
    // The whitespace-only lines right after the scalar are the ones the readers disagree on.
    const trailing = end + (/\S|$/.exec(text.slice(end))?.index ?? 0);
    if (end >= text.length && !text.endsWith('\n')) [why, at] = ["the file ends inside a block scalar without a line break: Tekton's YAML reader then drops the scalar's last line break and this one keeps it; end the file with a line break", end];
    else if (/^[|>][-+]?[1-9]/.test(text.slice(start, start + 3)) && body >= 0 && /^ +\r?$/m.test(text.slice(body + 1, trailing))) why = 'a line of only spaces in a block scalar with an indentation indicator (|2, >1, …): the two YAML readers keep different parts of it; make the line empty, or drop the indicator';
  }
  return why === undefined ? undefined : [why, at];
}

/** Decodes resolved bytes into the value both Tekton and this controller read, or says why it cannot. */
export function decodeResolved(bytes: Uint8Array): Decoded {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return { ok: false, why: `line ${badUtf8Line(bytes)}: the file is not valid UTF-8; save it as UTF-8` };
  }
  const no = (offset: number, why: string): Decoded => ({ ok: false, why: `line ${lineAt(text, offset)}: ${why}` });
  const json = JSON_PREFIX.test(text); // k8s's recognizer: JSON, never YAML, for these bytes
  if (text.startsWith('\ufeff')) text = text.slice(1); // both readers skip a leading BOM
  for (const [re, why] of CHARS) {
    const m = re.exec(text);
    if (m) return no(m.index, why(m[0]));
  }
  let docs = 0;
  for (const tok of new Parser().parse(text)) {
    if (tok.type === 'directive') return no(tok.offset, `the directive ${tok.source.split(/\s/)[0]} changes how the file is read, and the two YAML readers do not apply it alike; remove it`);
    if (tok.type === 'document' && ++docs > 1) return no(tok.offset, 'a second YAML document starts here (---): Tekton reads only the first one; keep one resource a file, and no --- after it');
  }
  const doc = parseDocument(text, YAML_OPTIONS) as Document.Parsed;
  const err = doc.errors[0] ?? doc.warnings[0];
  if (err) {
    const what = err.code === 'DUPLICATE_KEY' ? 'a key appears twice in one mapping, which Tekton refuses; keep one' : /\btabs?\b/i.test(err.message) ? TAB : `this is not YAML both readers accept alike (${err.message.split(/ at line \d|\n/)[0]}); fix it`;
    return no(err.pos[0], what);
  }
  if (!isMap(doc.contents)) return no(doc.contents?.range[0] ?? 0, 'the file is not a YAML mapping (a Kubernetes resource); write the resource as `apiVersion: …`, `kind: …`, …');
  const blocks: Array<[number, number]> = [];
  let refusal: [string, number] | undefined;
  visit(doc, (_key, node, path) => {
    refusal = checkNode(text, node, path[path.length - 1], json, blocks);
    return refusal === undefined ? undefined : visit.BREAK;
  });
  if (refusal !== undefined) return no(refusal[1], refusal[0]);
  const value: unknown = doc.toJS({ maxAliasCount: YAML_OPTIONS.maxAliasCount });
  if (json) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      return no(0, `the file starts with "{", so Tekton reads it as JSON, and it is not JSON (${(e as Error).message}); fix it, or write the resource as YAML`);
    }
    if (!isDeepStrictEqual(parsed, value)) return no(0, 'the file starts with "{", so Tekton reads it as JSON, and read as JSON it is not what it is read as YAML; write the resource as plain JSON (or as YAML)');
    return { ok: true, value };
  }
  for (let i = text.indexOf('\t'); i >= 0; i = text.indexOf('\t', i + 1)) {
    const block = blocks.find(([from, to]) => from >= 0 && i > from && i < to);
    if (!block) return no(i, TAB);
    if (!blockTab(text, block[0], i)) return no(i, 'a tab in the indentation of a block scalar\'s first line (or before it), which Tekton\'s YAML reader refuses; indent with spaces, and put tabs after the indentation of a later line');
  }
  return { ok: true, value };
}
