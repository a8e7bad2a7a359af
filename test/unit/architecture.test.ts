/**
 * The map of docs/architecture.md, kept true: the rooms of src/ import only
 * what the map allows, nothing imports in a circle (type-only imports
 * included), no two files of src/ share a name, and a file over ~400 lines
 * says at its top why.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { repoRoot } from '../../src/util/repo.js';

const ROOT = repoRoot();

/** What each room of src/ may import besides itself (docs/architecture.md, "The rooms"). */
const MAY_IMPORT: Record<string, readonly string[]> = {
  api: ['util'],
  util: [],
  errors: [],
  policy: ['util'],
  tekton: ['api', 'kube', 'policy', 'util', 'errors'],
  kube: ['api', 'errors'],
  git: ['policy'],
  requests: ['api', 'kube', 'tekton'],
  controller: ['api', 'kube', 'policy', 'tekton', 'util', 'errors', 'git', 'remotes', 'requests'],
  remotes: ['api', 'kube', 'policy', 'util', 'requests'],
  metrics: ['controller', 'kube', 'api', 'git'],
  log: ['controller', 'kube', 'api'],
  localenv: ['api', 'kube', 'util'],
  migrate: ['api', 'kube', 'policy', 'requests', 'tekton', 'util', 'controller'],
  cli: ['*'],
};

/** An import that does I/O (node's I/O modules, the Kubernetes client and our modules around it). */
const IO = /from\s+['"](node:)?(fs|fs\/promises|http|https|net|tls|child_process|dgram|dns|worker_threads)['"]|from\s+['"]@kubernetes\/client-node['"]|from\s+['"]\.\.\/kube\/(client|informer|watch|events|leader)\.js['"]/;
/** A read of the clock, or a timer. */
const CLOCK = /Date\.now\(|new Date\(\)|performance\.now\(|process\.hrtime|setTimeout\(|setInterval\(/;

/** The text of a file without comment lines and type-only imports (what can run). */
function codeOf(file: string): string {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => !/^\s*(\/\/|\*|\/\*\*)/.test(l) && !/^\s*import\s+type\b/.test(l))
    .join('\n');
}

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const n of readdirSync(dir)) {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) out.push(...tsFiles(p));
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** The room of a file of src/: its folder, or its name for a file at the top (errors.ts → errors). */
function roomOf(file: string): string {
  const [, first = ''] = relative(ROOT, file).split('/');
  return first.replace(/\.ts$/, '');
}

/** Relative imports (static, re-exports, bare and dynamic) of every file under src/, as files. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const specs = /(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+['"](\.[^'"]+)['"]|(?:^|\n)\s*import\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g;
  for (const f of tsFiles(join(ROOT, 'src'))) {
    const to: string[] = [];
    for (const m of readFileSync(f, 'utf8').matchAll(specs)) {
      const spec = m[1] ?? m[2] ?? m[3]!;
      const target = resolve(dirname(f), spec).replace(/\.js$/, '.ts');
      assert.ok(existsSync(target), `${relative(ROOT, f)} imports ${spec}, which is not a file of src/`);
      to.push(target);
    }
    graph.set(f, to);
  }
  return graph;
}

test('architecture: every room of src/ imports only the rooms the map allows', () => {
  const graph = importGraph();
  assert.ok(graph.size > 50, 'the graph was read');
  const wrong: string[] = [];
  for (const [from, targets] of graph) {
    const a = roomOf(from);
    const allowed = MAY_IMPORT[a];
    assert.ok(allowed, `src/${a} is not a room of docs/architecture.md: add it to the map (and to this test)`);
    for (const t of targets) {
      const b = roomOf(t);
      if (a !== b && !allowed.includes('*') && !allowed.includes(b)) wrong.push(`${relative(ROOT, from)} → ${relative(ROOT, t)}`);
      // Inside the local environment: real processes may drive the simulated parts, not the reverse.
      if (relative(ROOT, from).startsWith('src/localenv/simulated/') && relative(ROOT, t).startsWith('src/localenv/real/')) wrong.push(`${relative(ROOT, from)} → ${relative(ROOT, t)}`);
    }
  }
  assert.deepEqual(wrong, []);
});

test('architecture: no import circles in src/ (type-only imports included)', () => {
  const graph = importGraph();
  // Depth-first search; a back edge closes a circle, reported as its path.
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const circles: string[] = [];
  const visit = (f: string): void => {
    state.set(f, 'open');
    path.push(f);
    for (const t of graph.get(f) ?? []) {
      if (state.get(t) === 'open') circles.push([...path.slice(path.indexOf(t)), t].map((p) => relative(join(ROOT, 'src'), p)).join(' → '));
      else if (!state.has(t)) visit(t);
    }
    path.pop();
    state.set(f, 'done');
  };
  for (const f of graph.keys()) if (!state.has(f)) visit(f);
  assert.deepEqual(circles, []);
});

test('architecture: every basename under src/ is unique (one name, one concept)', () => {
  const where = new Map<string, string[]>();
  for (const f of tsFiles(join(ROOT, 'src'))) {
    const name = basename(f);
    where.set(name, [...(where.get(name) ?? []), relative(ROOT, f)]);
  }
  assert.ok(where.size > 50, 'the files of src/ were read');
  const twice = [...where].filter(([, files]) => files.length > 1).map(([name, files]) => `${name}: ${files.sort().join(', ')}`);
  assert.deepEqual(twice.sort(), []);
});

test('architecture: a file of src/ or bench/ over 400 lines says at its top why', () => {
  const long: string[] = [];
  for (const dir of ['src', 'bench']) {
    for (const f of tsFiles(join(ROOT, dir))) {
      const text = readFileSync(f, 'utf8');
      const lines = text.split('\n').length;
      const head = text.split('\n').slice(0, 40).join('\n');
      if (lines > 410 && !/(over|longer than|more than) (most files|~?400 lines)|on purpose/i.test(head)) long.push(`${relative(ROOT, f)} (${lines} lines)`);
    }
  }
  assert.deepEqual(long, []);
});

test('architecture: decide() and everything it imports, in every room, do no I/O and read no clock', () => {
  const graph = importGraph();
  const start = join(ROOT, 'src', 'controller', 'decide.ts');
  // Value imports only: a type-only import brings no code.
  const valueImports = (file: string): string[] => {
    const out: string[] = [];
    const re = /(?:^|\n)\s*(import|export)\s+(?!type\b)[^;]*?\sfrom\s+['"](\.[^'"]+)['"]/g;
    for (const m of readFileSync(file, 'utf8').matchAll(re)) out.push(resolve(dirname(file), m[2]!).replace(/\.js$/, '.ts'));
    return out;
  };
  const seen = new Set<string>([start]);
  const todo = [start];
  while (todo.length) {
    const f = todo.pop()!;
    for (const t of valueImports(f)) {
      if (!relative(ROOT, t).startsWith('src/') || seen.has(t)) continue;
      seen.add(t);
      todo.push(t);
    }
  }
  assert.ok(graph.has(start) && seen.size >= 6, `the closure of decide.ts was read (${seen.size} files)`);
  const wrong: string[] = [];
  for (const f of seen) {
    const text = codeOf(f);
    const io = IO.exec(text);
    if (io) wrong.push(`${relative(ROOT, f)}: I/O (${io[0]})`);
    const clock = CLOCK.exec(text);
    if (clock) wrong.push(`${relative(ROOT, f)}: reads the clock (${clock[0]})`);
  }
  assert.deepEqual(wrong, [], `decide()'s closure: ${[...seen].map((f) => relative(ROOT, f)).sort().join(', ')}`);
});

test('architecture: the Tekton version verdicts (advisories, supported ranges) and settings do no I/O and read no clock', () => {
  // The followers (src/controller/tekton-version.ts, tekton-settings.ts) read the cluster and keep time; these only decide.
  const files = ['advisories.ts', 'components.ts', 'settings.ts'].map((f) => join(ROOT, 'src', 'tekton', f));
  const wrong: string[] = [];
  for (const f of files) {
    const text = codeOf(f);
    assert.ok(text.length > 1000, `${relative(ROOT, f)} was read`);
    const io = IO.exec(text);
    if (io) wrong.push(`${relative(ROOT, f)}: I/O (${io[0]})`);
    const clock = CLOCK.exec(text);
    if (clock) wrong.push(`${relative(ROOT, f)}: reads the clock (${clock[0]})`);
    // Value imports only from the pure version modules themselves.
    for (const m of text.matchAll(/(?:^|\n)\s*import\s+(?!type\b)[^;]*?\sfrom\s+['"]([^'"]+)['"]/g)) {
      if (!['./advisories.js'].includes(m[1]!)) wrong.push(`${relative(ROOT, f)}: imports ${m[1]}`);
    }
  }
  assert.deepEqual(wrong, []);
});

test('architecture: the recipes of docs/architecture.md name only files and symbols that exist', () => {
  const doc = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
  const start = doc.indexOf('## Where a change goes');
  assert.ok(start > 0, 'docs/architecture.md has its recipes');
  const recipes = doc.slice(start).split(/\n### /).slice(1);
  assert.ok(recipes.length >= 8, `recipes found: ${recipes.length}`);
  const srcFiles = tsFiles(join(ROOT, 'src'));
  const byBase = new Map<string, string[]>();
  for (const f of srcFiles) byBase.set(basename(f), [...(byBase.get(basename(f)) ?? []), f]);
  const wrong: string[] = [];
  let paths = 0;
  let symbols = 0;
  for (const recipe of recipes) {
    const title = recipe.split('\n')[0]!;
    const spans = [...recipe.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    const files: string[] = [];
    for (const span of spans) {
      if (!/^[\w./-]+\.(ts|md|yaml|mjs|sh|json)$/.test(span)) continue;
      paths++;
      const found = span.includes('/') ? (existsSync(join(ROOT, span)) ? [join(ROOT, span)] : []) : (byBase.get(span) ?? []);
      if (found.length !== 1) wrong.push(`${title}: ${span} ${found.length ? 'names several files' : 'does not exist'}`);
      else if (span.endsWith('.ts')) files.push(found[0]!);
    }
    const texts = files.map((f) => readFileSync(f, 'utf8'));
    let here = 0;
    for (const span of spans) {
      const m = /^([A-Za-z_$][\w$]*)(\(\))?$/.exec(span);
      if (!m) continue;
      const name = m[1]!;
      const declared = new RegExp(`(?:function|class|interface|type|const|let|enum)\\s+${name}\\b|^\\s*(?:export\\s+)?(?:readonly\\s+|private\\s+|public\\s+|static\\s+|async\\s+|get\\s+)*${name}\\??\\s*[(:<=]|type: '${name}'`, 'm');
      symbols++;
      here++;
      if (!texts.some((t) => declared.test(t))) wrong.push(`${title}: ${span} is declared in none of ${files.map((f) => relative(ROOT, f)).join(', ') || '(no file named)'}`);
    }
    if (!here) wrong.push(`${title}: names no symbol to check`);
    // Each recipe was followed once, end to end, for a real change, and says which.
    if (!/\nFollowed for: /.test(recipe)) wrong.push(`${title}: has no "Followed for:" line naming the change it was last followed for`);
  }
  assert.deepEqual(wrong, []);
  assert.ok(paths > 30 && symbols > 40, `checked ${paths} paths and ${symbols} symbols`);
});
