/**
 * src/policy/one-reading.ts against Tekton's own reader: hack/trusted/decode
 * decodes bytes exactly as Tekton Pipelines v1.6.6's reconciler decodes what
 * a resolver returns (UniversalDeserializer: sigs.k8s.io/yaml over go-yaml
 * v2, or JSON), and is the ground truth.
 *
 * - a differential property test over generated documents: realistic Tasks
 *   with injected variations (every line-break form in comments, scalars and
 *   between keys; YAML 1.1 scalars; merge keys, anchors, tags, directives,
 *   BOMs, tabs, duplicate and non-string keys, several documents, control
 *   characters, invalid UTF-8, block scalar indicators, escapes, JSON
 *   documents), all decoded by one Go process. Each document is `agree`
 *   (accepted here, same JSON value in Go), `refused` (refused here, Go read
 *   it), `bothFailed` or `differ` (accepted here, and Go read something else
 *   or nothing): any `differ` fails, and so does a run in which `agree`,
 *   `refused` or one of the variation classes never happened;
 * - goPlain (how go-yaml reads a plain scalar, which the refusals tell the
 *   author) against go-yaml itself, on YAML 1.1 forms and generated ones;
 * - decodeResolved's refusals, each naming the line and what to write;
 * - every Task, Pipeline and StepAction fixture of the repository is accepted.
 *
 * Go is required (test/trusted-tools.ts builds the tool, cached).
 * FC_NUM_RUNS (default 400) and FC_SEED drive the property test;
 * ONE_READING_SHOW=<class> prints every document of a variation class.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import fc from 'fast-check';
import ts from 'typescript';
import { isMap, isScalar, parseDocument } from 'yaml';
import { decodeResolved, goPlain } from '../../src/policy/one-reading.js';
import { catalogFiles } from '../../src/cli/local-samples.js';
import { repoRoot } from '../../src/util/repo.js';
import { buildTools } from '../trusted-tools.js';

const ROOT = repoRoot();
const numRuns = Number(process.env['FC_NUM_RUNS'] ?? 400);
const seed = process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : Date.now() % 2 ** 31;
const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

// ------------------------------------------------------------------ Go's reading

type GoResult = { json?: unknown; error?: string; typed?: string; typedError?: string };

/** Every document through one hack/trusted/decode process, with the text of each answer (for integers JSON.parse would round). */
function goDecode(docs: Uint8Array[]): Array<GoResult & { text: string }> {
  const { decode } = buildTools();
  const r = spawnSync(decode, [], { input: JSON.stringify(docs.map((d) => Buffer.from(d).toString('base64'))), encoding: 'utf8', maxBuffer: 512 << 20 });
  assert.equal(r.status, 0, `hack/trusted/decode: ${r.stderr}${r.error?.message ?? ''}`);
  const all = JSON.parse(r.stdout) as GoResult[];
  const texts = elements(r.stdout.trim());
  assert.equal(all.length, docs.length, 'one answer a document');
  assert.equal(texts.length, docs.length, 'one answer a document (as text)');
  return all.map((g, i) => ({ ...g, text: texts[i]! }));
}

/** The text of each element of a JSON array. */
function elements(out: string): string[] {
  const res: string[] = [];
  let depth = 0;
  let start = 1;
  let inStr = false;
  for (let i = 0; i < out.length; i++) {
    const c = out[i];
    if (inStr) {
      if (c === '\\') i++;
      else if (c === '"') inStr = false;
    } else if (c === '"') inStr = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      if (--depth === 0 && out.slice(start, i).trim()) res.push(out.slice(start, i));
    } else if (c === ',' && depth === 1) {
      res.push(out.slice(start, i));
      start = i + 1;
    }
  }
  return res;
}

/** Whether Go's JSON text holds an integer beyond ±2^53 (a JS number would round it). */
function hasBigInt(text: string): boolean {
  const bare = text.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  return (bare.match(/-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?/g) ?? []).some((n) => /^-?\d+$/.test(n) && (BigInt(n) > 2n ** 53n || BigInt(n) < -(2n ** 53n)));
}

/** Equal as JSON values: the same types, keys and scalars; anything not JSON (a Date, undefined) is unequal. */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === null || b === null) return a === b;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  if (typeof a === 'object') {
    if (typeof b !== 'object' || Array.isArray(b) || Object.getPrototypeOf(a) !== Object.prototype) return false;
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    return ka.length === kb.length && ka.every((k, i) => k === kb[i] && sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
  }
  return (typeof a === 'string' || typeof a === 'number' || typeof a === 'boolean') && a === b;
}

// ------------------------------------------------------------------ the generated corpus

/** A piece of YAML with the variation classes it carries; \uE000 stands for the indentation of its continuation lines. */
type Piece = { text: string; cls: string[] };
const piece = (text: string, ...cls: string[]): Piece => ({ text, cls });
const IND = '\uE000';
/** In lines injected into a mapping, \uE000 is the mapping's indentation and \uE001 that of a value's continuation lines. */
const IND2 = '\uE001';

const BREAKS: Record<string, string> = { LF: '\n', CRLF: '\r\n', CR: '\r', NEL: '\u0085', LS: '\u2028', PS: '\u2029' };
const brk = fc.constantFrom(...Object.keys(BREAKS));

const REALISTIC = ['main', 'v1.2.3', '3.12-slim', '5m', '1h30m', 'registry.local/img:1.0', 'quay.io/org/app@sha256:0b5e6a1c0f4d8e5c2b1a3f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c', '$(params.IMAGE)', '--verbose', '--flag=value', 'Build & push the image', 'http://example.com/x?y=1', '0.50.0', 'yes-please', 'null_value', '~/path', '.hidden', '-dash', '1.2.3.4', '10.0.0.1:8080', 'é構🚀', 'a:b', 'x#y', 'onion', 'nope', 'Trueish', '0.5h1.5s100ms', '1000m', '1Gi', 'sha1:abc', 'release-1', 'python:3.12', '2024.01', 'v2', 'x86_64'];
const YAML11 = ['12:30:00', '190:20:30.15', '-1:30', '0o17', '0O17', '0755', '-0755', '0x1F', '0X1f', '-0x1F', '0b1010', '-0b11', '1_000', '1__0', '0x_1F', '1e3', '1E3', '6.8523015e+5', '1.e5', '1.', '.5', '._5', '+.5', '+12', '+0', '-0', '007', '089', '0.0', '-0.0', '1e400', '1e-400', '.inf', '-.inf', '+.INF', '.Inf', '.NaN', '.nan', '.NAN', 'y', 'Y', 'n', 'N', 'yes', 'Yes', 'YES', 'no', 'No', 'NO', 'on', 'On', 'ON', 'off', 'Off', 'OFF', 'True', 'TRUE', 'False', 'FALSE', 'null', 'Null', 'NULL', '~', '2001-12-14', '2001-12-14t21:59:43.10-05:00', '2001-12-14 21:59:43.10', '2001-12-14T21:59:43Z', '2002-1-2', '1999-99-99', '=', '<<', '0x', '0b', '0o', '1_', '_1', '1:2:3', '1:60', '9223372036854775807', '9223372036854775808', '18446744073709551616', '9007199254740993', '-9007199254740992', '0xFFFFFFFFFFFFFFFFF', '.', '-.', '+.', '._', 'e5', '.e5', 'E5', '-e5'];
const ESCAPES = String.raw`\/ \' \x41 \xe9 \u00e9 \ud800 \udc00 \ud83d\ude00 \U0001F600 \U00110000 \N \L \P \_ \e \0 \a \v \b \f \r \t \n \q \" \\ \u2028 \uFEFF \x85`.split(' ').concat(['\\ ', '\\\t']);
const CONTROL = ['\u0000', '\u0001', '\u0007', '\u0008', '\u000b', '\u000c', '\u000e', '\u001b', '\u001f', '\u007f', '\u0080', '\u0085', '\u009f', '\ufffe', '\uffff'];
const TAGS = ['!!str 0755', '!!str yes', '!!int "12"', '!!int 0x1F', '!!float 1', '!!bool "true"', '!!null ""', '!foo bar', '! 12', '!!binary aGVsbG8=', '!!timestamp 2001-12-14', '!<tag:yaml.org,2002:str> x', '!!set {a, b}', '!!omap [a: 1]', '!!map {a: b}', '!!seq [a]', '!e!x 1'];

const word = fc.stringMatching(/^[a-z][a-z0-9._/-]{0,14}$/);
const canonical = fc.oneof(
  fc.integer({ min: -(2 ** 40), max: 2 ** 40 }).map(String),
  fc.constantFrom('true', 'false', 'null', '~', '', '0', '1.5', '-0.25', '3.0', '1e-10', '2.5E+3'),
);
const dq = (s: string): string => JSON.stringify(s);
const sq = (s: string): string => `'${s.replaceAll("'", "''")}'`;
const lines = (ls: string[]): string => ls.map((l) => (l === '' ? '' : `${IND}${l}`)).join('\n');

/** Values Tekton and the controller should read alike (most of the time). */
const benign: fc.Arbitrary<Piece> = fc.oneof(
  { weight: 6, arbitrary: fc.oneof(fc.constantFrom(...REALISTIC), word).map((s) => piece(s, 'plain-string')) },
  { weight: 2, arbitrary: canonical.map((s) => piece(s, 'canonical')) },
  { weight: 2, arbitrary: fc.string({ unit: fc.constantFrom(...'ab "\\\'#:-é構🚀\t\n'), maxLength: 12 }).map((s) => piece(dq(s), 'double-quoted')) },
  { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom(...'ab "\\\'#:-é構🚀'), maxLength: 12 }).map((s) => piece(sq(s), 'single-quoted')) },
  { weight: 2, arbitrary: fc.tuple(fc.constantFrom('|', '|-', '>-', '>'), fc.array(fc.oneof(word, fc.constantFrom('echo "$(params.x)" > out', '  indented more', 'if [ -n "$X" ]; then', '', '# not a comment', 'key: value')), { minLength: 1, maxLength: 4 })).map(([h, ls]) => piece(`${h}\n${lines(ls)}`, 'block-scalar')) },
  { weight: 1, arbitrary: fc.array(fc.oneof(word, fc.constantFrom('"--pull"', "'x y'", '12', 'true')), { maxLength: 3 }).map((a) => piece(`[${a.join(', ')}]`, 'flow')) },
  { weight: 1, arbitrary: fc.tuple(word, word).map(([a, b]) => piece(`{${a}: ${b}}`, 'flow')) },
  { weight: 1, arbitrary: fc.tuple(word, word, fc.constantFrom('\n', '\n\n')).map(([a, b, sep]) => piece(`${a}${sep}${IND}${b}`, 'plain-folding')) },
);

const numberish = fc
  .tuple(fc.constantFrom('', '', '-', '+'), fc.constantFrom('', '', '0', '0x', '0o', '0b', '.'), fc.array(fc.constantFrom(...'0123456789_'), { minLength: 1, maxLength: 6 }), fc.constantFrom('', '', '.5', '.', 'e3', 'E-2', ':30', ':7:59', '_'))
  .map(([s, p, d, x]) => `${s}${p}${d.join('')}${x}`);
const randomPlain = fc.string({ unit: fc.constantFrom(...'0123456789.:+-_eExXoObB abcyYnN~#=<>!&*|%@`"\'[]{},?\\'), minLength: 1, maxLength: 8 });

/** Values with one injected variation, one arbitrary a class. */
const HOSTILE: Array<fc.Arbitrary<Piece>> = [
  fc.oneof(fc.constantFrom(...YAML11), numberish).map((s) => piece(s, 'yaml11-scalar')),
  fc.tuple(brk, fc.constantFrom('plain', 'dq', 'sq', 'block', 'hidden')).map(([b, st]) => {
    const x = BREAKS[b]!;
    const t = st === 'plain' ? `first${x}second` : st === 'dq' ? `"first${x}second"` : st === 'sq' ? `'first${x}second'` : st === 'block' ? `|\n${IND}first${x}second\n${IND}third` : `seen${x}${IND}hidden: key`;
    return piece(t, 'break-in-scalar', `break:${b}`);
  }),
  fc.constantFrom(`a\tb`, `a\t`, `"a\tb"`, `'a\tb'`, `"a\n${IND}\tb"`).map((t) => piece(t, 'tab-value')),
  fc.constantFrom(`|\n${IND}a\tb\n${IND}\tc`, `|\n${IND}a\n\t\n${IND}b`, `|\n${IND}\ta`, `>\n${IND}a\n${IND}\tb\n${IND}c`, `|-\n${IND}a\t`).map((t) => piece(t, 'tab-block')),
  fc.constantFrom('a\ufeffb', '"\ufeff"', '\ufeffx', `|\n${IND}\ufeffx`).map((t) => piece(t, 'bom-inside')),
  fc.tuple(fc.constantFrom(...CONTROL), fc.constantFrom('plain', 'dq', 'block')).map(([c, st]) => piece(st === 'plain' ? `a${c}b` : st === 'dq' ? `"a${c}b"` : `|\n${IND}a${c}b`, 'control-char')),
  fc.array(fc.oneof(fc.constantFrom(...ESCAPES), word), { minLength: 1, maxLength: 3 }).map((a) => piece(`"${a.join('')}"`, 'escape')),
  fc
    .tuple(fc.constantFrom('|', '|-', '|+', '>+', '>', '>-', '|2', '|1', '|2-', '>2', '|9', '|0', '|-2', '|+1'), fc.array(fc.constantFrom('a', ' b', '   c', '', '  ', '      ', 'd e', '  # x'), { minLength: 1, maxLength: 5 }), fc.constantFrom('', '\n', `\n${IND}`, '\n\n', '\n   ', `\n${IND}   `))
    .map(([h, ls, tail]) => piece(`${h}\n${lines(ls)}${tail}`, 'block-indicator')),
  fc.constantFrom(...TAGS).map((t) => piece(t, 'tag')),
  fc.constantFrom('&a x', '*a', '&a [x]', '&a {x: y}').map((t) => piece(t, 'anchor-alias')),
  fc.constantFrom('<<', '=', '"<<"').map((t) => piece(t, 'merge')),
  fc.constantFrom('[a, [b, {c: d}]]', '{a, b}', '[a: b]', '{"a": 1}', '[0755, yes, 1e3]', '{a: [b}', '[a, b', '{? a : b}', '[a,]', '{a: 1, a: 2}').map((t) => piece(t, 'flow')),
  fc.constantFrom(`a\n${IND}b`, `a \n${IND} b`, `a\n\n${IND}b`, `a\n${IND}# c\n${IND}b`, `a\n${IND}- b`, `a\n${IND}b: c`).map((t) => piece(t, 'plain-folding')),
  fc.constantFrom(`"a\n${IND}b\n\n${IND}c"`, `'a\n\n${IND}b'`, `"a\\\n${IND}b"`, `"a \n${IND} b"`, `"a\n\t b"`, `'a\n${IND}  b  '`).map((t) => piece(t, 'quoted-folding')),
  fc.bigInt({ min: 2n ** 53n - 3n, max: 2n ** 64n + 3n }).map((b) => piece(String(b), 'big-int')),
  randomPlain.map((s) => piece(s, 'random-plain')),
  fc.constantFrom('a\u00a0b', '\u3000', `"b\n${IND}\u00a0c"`, `b\n${IND}\u00a0c`, 'b\u200b', 'b\u00a0#c', '\u00a0', '[b,\u00a0c]').map((t) => piece(t, 'unicode-space')),
];
const hostile = fc.oneof(...HOSTILE);

/** Lines injected into a mapping (their indentation given), one arbitrary a class. */
const SLOT_LINES: Array<fc.Arbitrary<Piece>> = [
  fc.tuple(brk, word).map(([b, k]) => piece(`# note${BREAKS[b]}${IND}${k}: hidden`, 'hidden-comment', `break:${b}`)),
  fc.tuple(brk, word).map(([b, k]) => piece(`first: 1${BREAKS[b]}${IND}${k}: 2`, 'break-between-keys', `break:${b}`)),
  fc.constantFrom('# tab\there', '# bom \ufeff', '# ctrl \u0007', '# nel \u0085 x: 1').map((t) => piece(t, 'comment-chars')),
  fc.constantFrom('dup: a', 'name: again').map((t) => piece(`${t}\n${IND}${t}`, 'duplicate-key')),
  fc.constantFrom('1: x', 'true: x', 'on: x', 'y: x', 'N: x', 'null: x', '~: x', ': x', '1.5: x', '0x1F: x', '[a, b]: x', '{a: b}: x', `? [a]\n${IND}: x`, '2001-12-14: x', `? complex\n${IND}: x`, '"1": x', '0755: x', '12:30: x', '.inf: x').map((t) => piece(t, 'non-string-key')),
  fc.constantFrom('<<: {extra: x}', '<<: [{a: b}]', `base: &b {k: v}\n${IND}<<: *b`, '"<<": x').map((t) => piece(t, 'merge')),
  fc.constantFrom(`one: &a x\n${IND}two: *a`, `one: &a {k: v}\n${IND}two: *a`, 'two: *nope', '&k key: v').map((t) => piece(t, 'anchor-alias')),
  // Two arms, not one split by the text: tab-indent had 2 of its 7 strings, and a run of 400 missed it about once in 20.
  fc.constantFrom('\tk: v', '  \tk: v').map((t) => piece(t, 'tab-indent')),
  fc.constantFrom('k:\tv', 'k: v\t', `k:\n${IND}-\tv`, `k:\n${IND}- \tv`, `k: \t|\n${IND}  x`).map((t) => piece(t, 'tab-value')),
  fc.constantFrom('\u00a0k: v', 'k\u00a0: v', '\u2003k: v').map((t) => piece(t, 'unicode-space')),
  fc.tuple(word, hostile).map(([k, v]) => ({ text: `${k}: ${v.text.replaceAll(IND, IND2)}`, cls: v.cls })),
];

type Variation = { at: 'value'; pos: number; v: Piece } | { at: 'slot'; slot: number; v: Piece } | { at: 'doc'; kind: string; cls: string };
const DOC_VARIATIONS: Array<[string, string]> = [
  ['%YAML 1.1\n---\n', 'directive'], ['%YAML 1.2\n---\n', 'directive'], ['%TAG ! tag:example.com,2000:\n---\n', 'directive'], ['%FOO bar\n---\n', 'directive'],
  ['---\n', 'doc-start'], ['--- # start\n', 'doc-start'],
  ['+---\n', 'multi-doc'], ['+---\nkind: Other\n', 'multi-doc'], ['+...\n', 'multi-doc'], ['+...\n---\nfoo: bar\n', 'multi-doc'], ['+--- |\n  text\n', 'multi-doc'],
  ['chop', 'no-final-newline'], ['chop-spaces', 'no-final-newline'], ['bom', 'bom-start'], ['bom2', 'bom-inside'], ['crlf', 'crlf'], ['utf8', 'invalid-utf8'], ['cr', 'break-between-keys'],
];
const NV = 9;
/** Every class about equally often, so that a run of a few hundred documents has them all. */
const variation: fc.Arbitrary<Variation> = fc.oneof(
  ...HOSTILE.map((v) => fc.record({ at: fc.constant('value' as const), pos: fc.nat(NV - 1), v })),
  ...SLOT_LINES.map((v) => fc.record({ at: fc.constant('slot' as const), slot: fc.nat(3), v })),
  ...[...new Set(DOC_VARIATIONS.map(([, c]) => c))].map((c) => fc.constantFrom(...DOC_VARIATIONS.filter(([, k]) => k === c)).map(([kind, cls]): Variation => ({ at: 'doc', kind, cls }))),
);

type Doc = { bytes: Uint8Array; cls: string[] };
const BAD_UTF8 = [[0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80], [0x80], [0xfe, 0xff]];

const taskDoc: fc.Arbitrary<Doc> = fc
  .record({
    name: word,
    values: fc.array(benign, { minLength: NV, maxLength: NV }),
    vars: fc.oneof({ weight: 3, arbitrary: fc.constant([] as Variation[]) }, { weight: 4, arbitrary: variation.map((v) => [v]) }, { weight: 3, arbitrary: fc.array(variation, { minLength: 2, maxLength: 4 }) }),
    at: fc.double({ min: 0, max: 1, noNaN: true }),
    bad: fc.constantFrom(...BAD_UTF8),
  })
  .map(({ name, values, vars, at, bad }) => {
    const cls = new Set<string>();
    const val = [...values];
    const slots: Piece[][] = [[], [], [], []];
    const docs: string[] = [];
    for (const v of vars) {
      if (v.at === 'value') val[v.pos] = v.v;
      else if (v.at === 'slot') slots[v.slot]!.push(v.v);
      else {
        docs.push(v.kind);
        cls.add(v.cls);
      }
    }
    const r = (i: number, indent: number): string => {
      const p = val[i]!;
      p.cls.forEach((c) => cls.add(c));
      return p.text.replaceAll(IND, ' '.repeat(indent + 2));
    };
    const slot = (i: number, indent: number): string =>
      slots[i]!.map((p) => {
        p.cls.forEach((c) => cls.add(c));
        return `${' '.repeat(indent)}${p.text.replaceAll(IND, ' '.repeat(indent)).replaceAll(IND2, ' '.repeat(indent + 2))}\n`;
      }).join('');
    let text = [
      'apiVersion: tekton.dev/v1\nkind: Task\nmetadata:\n',
      `  name: ${name}\n  labels:\n    app.kubernetes.io/version: ${r(0, 4)}\n${slot(0, 4)}`,
      `  annotations:\n    tekton.dev/pipelines.minVersion: ${r(1, 4)}\n`,
      `spec:\n  description: ${r(2, 2)}\n  params:\n    - name: ${name}\n      type: string\n      default: ${r(3, 6)}\n${slot(1, 6)}`,
      `  steps:\n    - name: build\n      image: ${r(4, 6)}\n      script: ${r(5, 6)}\n      args:\n        - ${r(6, 8)}\n        - --flag\n`,
      `      env:\n        - name: X\n          value: ${r(7, 10)}\n${slot(2, 6)}      workingDir: ${r(8, 6)}\n${slot(3, 2)}`,
    ].join('');
    for (const k of docs) {
      if (k.startsWith('+')) text += k.slice(1);
      else if (k === 'crlf') text = text.replace(/\r?\n/g, '\r\n');
      else if (k === 'cr') text = text.replace('\nkind:', '\rkind:');
      else if (k === 'chop') text = text.replace(/\n$/, '');
      else if (k === 'chop-spaces') text = text.replace(/\n$/, '\n         ');
      else if (k.startsWith('%') || k.startsWith('---')) text = k + text;
    }
    let bytes = enc(text);
    if (docs.includes('bom2')) bytes = splice(bytes, Math.floor(at * bytes.length), [0xef, 0xbb, 0xbf]);
    if (docs.includes('utf8')) bytes = splice(bytes, Math.floor(at * bytes.length), bad);
    if (docs.includes('bom')) bytes = splice(bytes, 0, [0xef, 0xbb, 0xbf]);
    return { bytes, cls: [...cls] };
  });

function splice(b: Uint8Array, at: number, ins: number[]): Uint8Array {
  // At a character boundary (not inside a UTF-8 sequence), so the document is broken only as meant.
  while (at > 0 && at < b.length && (b[at]! & 0xc0) === 0x80) at--;
  return Uint8Array.from([...b.subarray(0, at), ...ins, ...b.subarray(at)]);
}

/** Tasks written as JSON, which Tekton reads with its JSON decoder rather than YAML. */
const JSON_VALUES = ['"x"', '"a\\/b"', '"\\ud83d\\ude00"', '"\\ud800"', '"\\u00e9\\n\\t"', '1', '1.0', '1e3', '-0', '9007199254740993', '12345678901234567890', 'true', 'null', '[1, "a"]', '{"k": "v"}', '"0755"'];
const jsonDoc: fc.Arbitrary<Doc> = fc
  .record({
    value: fc.constantFrom(...JSON_VALUES),
    space: fc.constantFrom('', '  ', '\t'),
    twist: fc.constantFrom('', '', '', 'dup', 'comma', 'comment', 'unquoted', 'lead-ws', 'lead-nbsp', 'bom', 'yaml-comment-first'),
  })
  .map(({ value, space, twist }) => {
    const obj = { apiVersion: 'tekton.dev/v1', kind: 'Task', metadata: { name: 'j' }, spec: { params: [{ name: 'p', default: '__V__' }], steps: [{ name: 's', image: 'busybox' }] } };
    let text = JSON.stringify(obj, null, space).replace('"__V__"', value);
    if (twist === 'dup') text = text.replace('"kind"', '"kind": "Task", "kind"');
    if (twist === 'comma') text = text.replace(/}\s*$/, ',}');
    if (twist === 'comment') text = text.replace('{', '{ # c\n');
    if (twist === 'unquoted') text = text.replace('"apiVersion"', 'apiVersion');
    if (twist === 'lead-ws') text = `\n  ${text}`;
    if (twist === 'lead-nbsp') text = `\u00a0${text}`;
    if (twist === 'bom') text = `\ufeff${text}`;
    if (twist === 'yaml-comment-first') text = `# c\n${text}`;
    return { bytes: enc(text), cls: ['json-doc'] };
  });

const corpus = fc.oneof({ weight: 9, arbitrary: taskDoc }, { weight: 1, arbitrary: jsonDoc });

const REQUIRED = [
  'hidden-comment', 'break-in-scalar', 'break-between-keys', ...Object.keys(BREAKS).map((b) => `break:${b}`), 'crlf', 'yaml11-scalar', 'merge', 'anchor-alias', 'tag',
  'directive', 'doc-start', 'multi-doc', 'no-final-newline', 'bom-start', 'bom-inside', 'tab-indent', 'tab-value', 'tab-block', 'duplicate-key', 'non-string-key', 'invalid-utf8', 'control-char',
  'block-indicator', 'block-scalar', 'escape', 'unicode-space', 'json-doc', 'flow', 'plain-folding', 'quoted-folding', 'big-int', 'plain-string', 'canonical', 'double-quoted', 'single-quoted',
];

const shown = (b: Uint8Array): string => JSON.stringify(Buffer.from(b).toString('utf8')).slice(0, 700);

test('one reading: property: what the controller accepts, Tekton reads as the same value (one Go process for the batch)', () => {
  const docs = fc.sample(corpus, { numRuns, seed });
  // A seed whose documents miss a class (one of ~40, some in a few percent
  // of them) gets more, drawn from the seeds after it, until every class is
  // there (four more draws at most): the run stays a function of its seed.
  for (let more = 1; more <= 4 && !REQUIRED.every((c) => docs.some((d) => d.cls.includes(c))); more++) docs.push(...fc.sample(corpus, { numRuns, seed: seed + more }));
  const go = goDecode(docs.map((d) => d.bytes));
  const counts = { agree: 0, refused: 0, bothFailed: 0, differ: 0 };
  const examples: Record<keyof typeof counts, string[]> = { agree: [], refused: [], bothFailed: [], differ: [] };
  const byClass = new Map<string, Record<keyof typeof counts, number>>();
  docs.forEach((d, i) => {
    const ours = decodeResolved(d.bytes);
    const g = go[i]!;
    let k: keyof typeof counts;
    let note: string;
    if (ours.ok) {
      const same = g.json !== undefined && sameJson(ours.value, g.json) && !hasBigInt(g.text ?? '');
      k = same ? 'agree' : 'differ';
      note = same ? `Tekton: ${g.typed ?? g.typedError?.slice(0, 120)}` : `Go: ${g.error ?? g.text?.slice(0, 400)}\n      here: ${JSON.stringify(ours.value).slice(0, 400)}`;
    } else {
      k = g.json !== undefined ? 'refused' : 'bothFailed';
      note = `here: ${ours.why}${g.error !== undefined ? `\n      Go: ${g.error.split('\n').join(' ').slice(0, 160)}` : ''}`;
    }
    counts[k]++;
    if (process.env['ONE_READING_SHOW'] && d.cls.includes(process.env['ONE_READING_SHOW'])) console.log(`${k} [${d.cls.join(', ')}] ${shown(d.bytes)}\n      ${note}`);
    if (examples[k].length < (k === 'differ' ? 10 : 4) || (k !== 'differ' && d.cls.length === 1 && examples[k].length < 8)) examples[k].push(`[${d.cls.join(', ')}] ${shown(d.bytes)}\n      ${note}`);
    for (const c of d.cls.length ? d.cls : ['(none)']) {
      const row = byClass.get(c) ?? { agree: 0, refused: 0, bothFailed: 0, differ: 0 };
      row[k]++;
      byClass.set(c, row);
    }
  });
  console.log(`one reading: ${JSON.stringify(counts)} of ${docs.length} documents (FC_SEED=${seed}, FC_NUM_RUNS=${numRuns})`);
  for (const k of Object.keys(examples) as Array<keyof typeof counts>) if (examples[k].length) console.log(`  ${k}:\n    ${examples[k].join('\n    ')}`);
  console.log(`  by variation class (agree/refused/bothFailed/differ):\n    ${[...byClass].sort().map(([c, r]) => `${c} ${r.agree}/${r.refused}/${r.bothFailed}/${r.differ}`).join(', ')}`);
  assert.equal(counts.differ, 0, `the controller accepted documents Tekton reads differently (FC_SEED=${seed}):\n${examples.differ.join('\n')}`);
  assert.ok(counts.agree > 0, `no document was accepted (FC_SEED=${seed}): the generators exercise only refusals`);
  assert.ok(counts.refused > 0, `no document was refused while Tekton read it (FC_SEED=${seed})`);
  const missing = REQUIRED.filter((c) => !byClass.has(c));
  assert.deepEqual(missing, [], `variation classes that never occurred (FC_SEED=${seed}, FC_NUM_RUNS=${numRuns}): raise FC_NUM_RUNS`);
});

test('one reading: property: goPlain says how go-yaml reads a plain scalar (what the refusals tell the author)', () => {
  const plainAlone = (s: string): boolean => {
    const d = parseDocument(`v: ${s}\n`);
    const v = isMap(d.contents) ? d.contents.items[0]?.value : undefined;
    return d.errors.length === 0 && isScalar(v) && v.type === 'PLAIN' && v.source === s;
  };
  const scalars = [...new Set([...YAML11, ...REALISTIC, ...fc.sample(fc.oneof(numberish, randomPlain, word), { numRuns, seed })])].filter((s) => s !== '<<' && plainAlone(s));
  const go = goDecode(scalars.map((s) => enc(`apiVersion: v1\nkind: T\nv: ${s}\n`)));
  let compared = 0;
  const wrong: string[] = [];
  scalars.forEach((s, i) => {
    const g = go[i]!;
    const v = (g.json as { v?: unknown } | undefined)?.v;
    if (g.json === undefined || !('v' in (g.json as object))) return; // not one plain scalar to go-yaml (or +Inf, NaN)
    const ours = goPlain(s);
    const num = /"v":(-?[0-9][0-9.eE+-]*)[,}]/.exec(g.text)?.[1];
    const same =
      ours.as === 'string' ? v === s : ours.as === 'bool' ? v === ours.value : ours.as === 'null' ? v === null : ours.as === 'number' ? num !== undefined && (/^-?[0-9]+$/.test(num) && /^-?[0-9]+$/.test(ours.value) ? BigInt(num) === BigInt(ours.value) : Number(num) === Number(ours.value)) : false;
    if (same) compared++;
    else wrong.push(`${JSON.stringify(s)}: go-yaml ${g.text.slice(0, 120)}, goPlain ${JSON.stringify(ours)}`);
  });
  console.log(`goPlain: ${compared} plain scalars read as go-yaml reads them, ${wrong.length} not (FC_SEED=${seed})`);
  assert.deepEqual(wrong.slice(0, 10), []);
  assert.ok(compared > scalars.length / 2, `only ${compared} of ${scalars.length} compared`);
});

// ------------------------------------------------------------------ the refusals, one by one

const HEAD = 'apiVersion: tekton.dev/v1\nkind: Task\nmetadata:\n  name: t\nspec:\n';

test('one reading: each refusal names the line and what to write instead', () => {
  const cases: Array<[string, string | Uint8Array, RegExp]> = [
    ['a key hidden behind U+2028 in a comment', `${HEAD}  # note\u2028  steps: []\n`, /^line 6: the character U\+2028 \(LINE SEPARATOR\) is a line break to Tekton's YAML reader/],
    ['NEL', `${HEAD}  description: a\u0085b\n`, /^line 6: the character U\+0085 .*\\N/],
    ['a lone CR', `${HEAD}  description: a\rkind: Other\n`, /^line 6: a carriage return \(CR\) not followed by LF.*use LF/],
    ['octal 0755', `${HEAD}  x: 0755\n`, /^line 6: the plain scalar 0755 is read as the number 493 by both YAML readers.*quote it \("0755"\) or write 493$/],
    ['0o17', `${HEAD}  x: 0o17\n`, /^line 6: the plain scalar 0o17 is read as the number 15 by Tekton's YAML reader and as the string "0o17" here; quote it \("0o17"\) or write 15$/],
    ['sexagesimal', `${HEAD}  x: 12:30:00\n`, /^line 6: the plain scalar 12:30:00 is read as the string "12:30:00" by Tekton's YAML reader and as the number 45000 here; quote it \("12:30:00"\)$/],
    ['yes', `${HEAD}  x: yes\n`, /^line 6: the plain scalar yes is read as the boolean true by both .*quote it \("yes"\) or write true$/],
    ['on as a key', `${HEAD}  on: x\n`, /^line 6: a key that is not a string \(the boolean true\).*quote it$/],
    ['a timestamp', `${HEAD}  x: 2001-12-14\n`, /^line 6: the plain scalar 2001-12-14 is read as the string "2001-12-14" by Tekton's YAML reader and as a timestamp/],
    ['hex', `${HEAD}  x: 0x1F\n`, /write 31$/],
    ['.inf', `${HEAD}  x: .inf\n`, /^line 6: the plain scalar \.inf is not a finite number/],
    ['._5', `${HEAD}  x: ._5\n`, /^line 6: the plain scalar \._5 is read as the string "\._5" by Tekton's YAML reader and as the number 0\.5 here/],
    ['Null', `${HEAD}  x: Null\n`, /or write null$/],
    ['=', `${HEAD}  x: =\n`, /^line 6: the plain scalar = is a YAML 1\.1 value key/],
    ['a big integer', `${HEAD}  x: 9007199254740993\n`, /^line 6: the integer 9007199254740993 is beyond 2\^53/],
    ['a merge key', `${HEAD}  <<: {a: b}\n`, /^line 6: the key << is a YAML 1\.1 merge key/],
    ['an anchor', `${HEAD}  x: &a y\n`, /^line 6: the anchor &a/],
    ['an alias', `${HEAD}  x: &a y\n  z: *a\n`, /^line 6: the anchor &a/],
    ['a tag', `${HEAD}  x: !!str 0755\n`, /^line 6: the tag !!str .*quote the value/],
    ['a directive', `%YAML 1.1\n---\n${HEAD}`, /^line 1: the directive %YAML/],
    ['two documents', `${HEAD}  x: 1\n---\nkind: Other\n`, /^line 7: a second YAML document starts here/],
    ['a BOM inside', `${HEAD}  x: a\ufeffb\n`, /^line 6: a byte order mark/],
    ['a tab as indentation', `${HEAD}\tx: 1\n`, /^line 6: a tab outside a block scalar/],
    ['a tab after a dash', `${HEAD}  x:\n  -\tz\n`, /^line 7: a tab outside a block scalar/],
    ['a duplicate key', `${HEAD}  x: 1\n  x: 2\n`, /^line 7: a key appears twice in one mapping/],
    ['a number as key', `${HEAD}  1: x\n`, /^line 6: a key that is not a string \(the number 1\)/],
    ['invalid UTF-8', Uint8Array.from([...enc(`${HEAD}  x: `), 0xc3, 0x28, 0x0a]), /^line 6: the file is not valid UTF-8/],
    ['a control character', `${HEAD}  x: a\u0007b\n`, /^line 6: the control character U\+0007/],
    ['\\/', `${HEAD}  x: "a\\/b"\n`, /^line 6: the escape \\\/ is not one Tekton's YAML reader knows the same way; write \/ instead$/],
    ['a surrogate escape', `${HEAD}  x: "\\ud83d\\ude00"\n`, /^line 6: the escape \\ud83d is a UTF-16 surrogate/],
    ['a block scalar ending the file without a line break', `${HEAD}  script: |\n    echo hi`, /^line 7: the file ends inside a block scalar without a line break/],
    ['a tab in a block scalar\'s first indentation', `${HEAD}  script: |\n    \techo\n`, /^line 7: a tab in the indentation of a block scalar's first line/],
    ['spaces with an indentation indicator', `${HEAD}  script: |1\n     b\n    \n  x: 1\n`, /^line 6: a line of only spaces in a block scalar with an indentation indicator/],
    ['a YAML flow mapping Tekton takes for JSON', '{apiVersion: tekton.dev/v1, kind: Task}\n', /^line 1: the file starts with "\{", so Tekton reads it as JSON, and it is not JSON/],
    ['not a mapping', '- a\n- b\n', /^line 1: the file is not a YAML mapping/],
    ['JSON with a comment', '{"kind": "Task", # c\n "apiVersion": "tekton.dev/v1"}', /^line 1: the file starts with "\{", so Tekton reads it as JSON, and it is not JSON/],
    ['JSON with a duplicate key', '{"kind": "Task", "kind": "Task"}', /^line 1: a key appears twice/],
  ];
  for (const [what, text, want] of cases) {
    const r = decodeResolved(typeof text === 'string' ? enc(text) : text);
    assert.ok(!r.ok, `${what}: accepted`);
    assert.match(r.why, want, what);
  }
});

test('one reading: ordinary values are accepted as what they look like', () => {
  const r = decodeResolved(enc(`\ufeff${HEAD}  a: main\n  b: v1.2.3\n  c: 3.12-slim\n  d: 5m\n  e: 1h30m\n  f: registry.local/img:1.0\n  g: 12\n  h: 1.5\n  i: true\n  j: ~\n  k:\n  l: "0755"\n  m: 1e-10\n  list: [a, "b"]\n  o: |\n    echo\ta\n  p: 0.5h1.5s100ms\n  defaultMode: 0755\n`.replace(/\n/g, '\r\n')));
  assert.ok(r.ok, r.ok ? '' : r.why);
  assert.deepEqual((r.value as { spec: unknown }).spec, { a: 'main', b: 'v1.2.3', c: '3.12-slim', d: '5m', e: '1h30m', f: 'registry.local/img:1.0', g: 12, h: 1.5, i: true, j: null, k: null, l: '0755', m: 1e-10, list: ['a', 'b'], o: 'echo\ta\n', p: '0.5h1.5s100ms', defaultMode: 493 });
  // y, n, on, off, yes, no as keys are booleans to both readers: refused.
  assert.match((decodeResolved(enc(`${HEAD}  n: 1\n`)) as { why: string }).why, /^line 6: a key that is not a string \(the boolean false\)/);
  // What Go writes itself (the cluster resolver returns the object with its managedFields): a key "." is a string to both.
  const managed = decodeResolved(enc(`${HEAD}  a: .\n  b: -.\n  c: e5\nmanaged:\n  f:metadata:\n    f:annotations:\n      .: {}\n`));
  assert.ok(managed.ok, managed.ok ? '' : managed.why);
  assert.deepEqual(managed.ok && managed.value, { ...(decodeResolved(enc(HEAD)) as { value: object }).value, spec: { a: '.', b: '-.', c: 'e5' }, managed: { 'f:metadata': { 'f:annotations': { '.': {} } } } });
  const j = decodeResolved(enc('{"apiVersion": "tekton.dev/v1", "kind": "Task", "metadata": {"name": "j"}, "spec": {"description": "a\\/b \\ud83d\\ude00"}}'));
  assert.ok(j.ok, j.ok ? '' : j.why);
  assert.equal((j.value as { spec: { description: string } }).spec.description, 'a/b 😀');
});

// ------------------------------------------------------------------ the repository's own resources

function files(dir: string, keep: (p: string) => boolean): string[] {
  const out: string[] = [];
  for (const n of readdirSync(dir)) {
    if (n === 'node_modules' || n === 'dist' || n.startsWith('.')) continue;
    const p = join(dir, n);
    if (statSync(p).isDirectory()) out.push(...files(p, keep));
    else if (keep(p)) out.push(p);
  }
  return out;
}

const TEKTON_KIND = /^kind: (Task|Pipeline|StepAction)\s*$/m;

/** Every YAML Task, Pipeline and StepAction of the repository: files, string literals of src/ and test/ (substitutions as "x"), the local catalog. */
function fixtures(): Map<string, string> {
  const out = new Map<string, string>();
  for (const f of files(ROOT, (p) => /\.ya?ml$/.test(p))) {
    const text = readFileSync(f, 'utf8');
    if (TEKTON_KIND.test(text) && /apiVersion: tekton\.dev\//.test(text)) out.set(relative(ROOT, f), text);
  }
  const source = (p: string): boolean => p.endsWith('.ts') && !p.endsWith('one-reading-property.test.ts'); // not this file's generators
  for (const f of files(join(ROOT, 'src'), source).concat(files(join(ROOT, 'test'), source))) {
    const sf = ts.createSourceFile(f, readFileSync(f, 'utf8'), ts.ScriptTarget.ES2022, true);
    const visit = (node: ts.Node): void => {
      let text: string | undefined;
      if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) text = node.text;
      else if (ts.isTemplateExpression(node)) text = node.head.text + node.templateSpans.map((s) => `x${s.literal.text}`).join('');
      if (text !== undefined && TEKTON_KIND.test(text) && /apiVersion: tekton\.dev\//.test(text)) out.set(`${relative(ROOT, f)}:${sf.getLineAndCharacterOfPosition(node.getStart()).line + 1}`, text);
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  for (const [p, text] of Object.entries(catalogFiles())) out.set(`local catalog ${p}`, text);
  return out;
}

test('one reading: every Task, Pipeline and StepAction of the repository is accepted', () => {
  const all = fixtures();
  assert.ok(all.size >= 8, `found only ${all.size} fixtures: ${[...all.keys()].join(', ')}`);
  console.log(`one reading: ${all.size} fixtures: ${[...all.keys()].join(', ')}`);
  const read = [...all].map(([where, text]) => [where, decodeResolved(enc(text))] as const);
  assert.deepEqual(read.filter(([, r]) => !r.ok).map(([where, r]) => `${where}: ${r.ok ? '' : r.why}`), []);
  // And Tekton reads each the same.
  const go = goDecode([...all.values()].map(enc));
  assert.deepEqual(read.flatMap(([where, r], i) => (r.ok && sameJson(r.value, go[i]!.json) ? [] : [`${where}: Tekton reads ${go[i]!.error ?? go[i]!.text}`])), []);
});
