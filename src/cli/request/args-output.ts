/**
 * The pure parts of the requester's CLI: parsing -p/-l and positional args,
 * validating timeouts, mapping outcomes to exit codes, formatting results and
 * tables. Nothing here touches a cluster, the file system or the clock
 * (callers pass them in), so all of it is unit-tested directly.
 */
import { stringify as toYaml } from 'yaml';
import { describeRequested } from '../../controller/requested-run.js';
import { API_VERSION, DNS_SUBDOMAIN_PATTERN, DURATION_PATTERN, type InternalRequest, type InternalRequestSpec, type InternalRequestStatus, type ObjectMeta } from '../../api/types.js';
import { phaseMessageOf, phaseOf, type TerminalReason, type Phase } from '../../api/conditions.js';
import { InternalServicesError, type ErrorCode } from '../../errors.js';
import { parseDuration } from '../../util/duration.js';

/** Exit codes; 21, 22 and 124 are the ones existing release tooling relies on. */
export const ExitCode = {
  Succeeded: 0,
  Error: 1,
  BadInput: 2,
  Failed: 21,
  Rejected: 22,
  Timeout: 124,
} as const;

/** An error of the requester's CLI: printed as one line with its code; the process exits with exitCode. */
export class CliError extends InternalServicesError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly exitCode: number = ExitCode.BadInput,
  ) {
    super(code, message);
    this.name = 'CliError';
  }
}

/**
 * A request of any kind as the commands read it: an InternalRequest, or an
 * object of a typed kind, whose spec is its own but whose status is
 * InternalRequest's (the same contract).
 */
export interface RequestObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec?: unknown;
  status?: InternalRequestStatus;
}

/** An object without apiVersion and kind (as some list items come) counts as an InternalRequest. */
export function isInternalRequest(r: RequestObject): r is InternalRequest {
  return (r.kind || 'InternalRequest') === 'InternalRequest' && (r.apiVersion || API_VERSION) === API_VERSION;
}

// --- params, labels, positional arguments ---------------------------------

/** Tekton's rule for param names: letters, digits, '_', '-', '.', starting with a letter or '_'. */
const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

export type ReadFile = (path: string) => string;

/**
 * One `key=value` param. The value is kept as text (array and object params
 * take JSON text, which the controller checks against the Pipeline).
 * `key=@path` reads the value from a file (exactly, trailing newline
 * included); `key=@@text` is the literal value `@text`.
 */
export function parseParam(arg: string, readFile: ReadFile): [string, string] {
  const eq = arg.indexOf('=');
  if (eq < 0) throw new CliError('CLI_PARAM_INVALID', `param "${arg}" is not key=value`);
  const key = arg.slice(0, eq);
  const raw = arg.slice(eq + 1);
  if (!PARAM_NAME.test(key)) {
    throw new CliError('CLI_PARAM_INVALID', `param "${arg}": "${key}" is not a param name (letters, digits, _ - ., starting with a letter or _)`);
  }
  if (raw.startsWith('@@')) return [key, raw.slice(1)];
  if (raw.startsWith('@')) {
    const path = raw.slice(1);
    if (path === '') throw new CliError('CLI_PARAM_INVALID', `param "${arg}": @ must be followed by a file name (use @@ for a literal @)`);
    try {
      return [key, readFile(path)];
    } catch (e) {
      throw new CliError('CLI_PARAM_INVALID', `param ${key}=@${path}: cannot read ${path}: ${(e as Error).message}`);
    }
  }
  return [key, raw];
}

/** All params, in order; a key given twice is an error. */
export function parseParams(args: readonly string[], readFile: ReadFile): Record<string, string> {
  const out: Record<string, string> = {};
  for (const a of args) {
    const [k, v] = parseParam(a, readFile);
    if (Object.prototype.hasOwnProperty.call(out, k)) throw new CliError('CLI_PARAM_INVALID', `param "${k}" is given more than once`);
    out[k] = v;
  }
  return out;
}

const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = new RegExp(DNS_SUBDOMAIN_PATTERN);

/** Kubernetes label key and value rules; undefined when valid, otherwise what is wrong. */
export function labelProblem(key: string, value: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) return `key prefix "${prefix}" is not a DNS subdomain`;
  if (name.length === 0 || name.length > 63 || !LABEL_NAME.test(name)) return `key "${key}" is not a label key (at most 63 letters, digits, - _ ., optionally prefixed by a DNS subdomain and /)`;
  if (value.length > 63 || (value !== '' && !LABEL_NAME.test(value))) return `value "${value}" is not a label value (at most 63 letters, digits, - _ ., starting and ending with a letter or digit)`;
  return undefined;
}

export function parseLabels(args: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const a of args) {
    const eq = a.indexOf('=');
    if (eq <= 0) throw new CliError('CLI_LABEL_INVALID', `label "${a}" is not key=value`);
    const key = a.slice(0, eq);
    const value = a.slice(eq + 1);
    const problem = labelProblem(key, value);
    if (problem) throw new CliError('CLI_LABEL_INVALID', `label "${a}": ${problem}`);
    if (Object.prototype.hasOwnProperty.call(out, key)) throw new CliError('CLI_LABEL_INVALID', `label "${key}" is given more than once`);
    out[key] = value;
  }
  return out;
}

/**
 * `create [PIPELINE] [KEY=VALUE...]`: the Pipeline name is --pipeline or the
 * first argument without "="; every other argument is a param. Returns the
 * pipeline name and the param arguments (positional ones after -p ones).
 */
export function splitCreateArgs(positional: readonly string[], pipelineFlag: string | undefined, paramFlags: readonly string[]): { pipeline: string; paramArgs: string[] } {
  let pipeline = pipelineFlag === '' ? undefined : pipelineFlag;
  const paramArgs = [...paramFlags];
  for (const a of positional) {
    if (a.includes('=')) paramArgs.push(a);
    else if (pipeline === undefined) pipeline = a;
    else {
      throw new CliError(
        'CLI_PARAM_INVALID',
        `argument "${a}" is not key=value (the Pipeline is "${pipeline}"${pipelineFlag ? ', from --pipeline' : ''}; params are KEY=VALUE or -p KEY=VALUE)`,
      );
    }
  }
  if (pipeline === undefined) throw new CliError('CLI_PIPELINE_NAME', 'no Pipeline name: give --pipeline NAME or NAME as the first argument');
  if (pipeline.length > 253 || !DNS_SUBDOMAIN.test(pipeline)) {
    throw new CliError('CLI_PIPELINE_NAME', `"${pipeline}" is not a Pipeline name (lower-case letters, digits, - and ., at most 253)`);
  }
  return { pipeline, paramArgs };
}

// --- durations and timeouts ------------------------------------------------

const DURATION = new RegExp(DURATION_PATTERN);

/** A Go duration in ms; `flag` names it in the error. */
export function parseDurationFlag(flag: string, text: string): number {
  const ms = DURATION.test(text.trim()) || text.trim() === '0' ? parseDuration(text) : undefined;
  if (ms === undefined) throw new CliError('CLI_DURATION_INVALID', `${flag} "${text}" is not a duration (Go durations such as 90s, 45m, 1h30m)`);
  return ms;
}

export interface TimeoutFlags {
  pipeline?: string | undefined;
  tasks?: string | undefined;
  finally?: string | undefined;
}

/**
 * Checks the PipelineRun timeouts as Tekton does and returns spec.timeouts
 * (undefined when none is given). Each must be a Go duration with a unit
 * (the API's pattern; "0s" means no timeout). When the pipeline timeout is
 * given and not 0s: tasks ≤ pipeline, finally ≤ pipeline, tasks + finally ≤
 * pipeline, and neither tasks nor finally may be 0s. Empty strings count as
 * not given (so a Task can pass optional params through).
 */
export function validateTimeouts(t: TimeoutFlags): InternalRequestSpec['timeouts'] {
  const flags = { pipeline: '--pipeline-timeout', tasks: '--task-timeout', finally: '--finally-timeout' } as const;
  const out: Record<string, string> = {};
  const ms: Record<string, number> = {};
  for (const k of ['pipeline', 'tasks', 'finally'] as const) {
    const v = t[k]?.trim();
    if (v === undefined || v === '') continue;
    if (!DURATION.test(v)) throw new CliError('CLI_DURATION_INVALID', `${flags[k]} "${v}" is not a duration (Go durations such as 90s, 45m, 1h30m; 0s for none)`);
    ms[k] = parseDuration(v)!;
    out[k] = v;
  }
  const p = ms['pipeline'];
  if (p !== undefined && p > 0) {
    for (const k of ['tasks', 'finally'] as const) {
      const v = ms[k];
      if (v === undefined) continue;
      if (v === 0) throw new CliError('CLI_DURATION_INVALID', `${flags[k]} 0s (no timeout) needs --pipeline-timeout 0s too, as Tekton requires`);
      if (v > p) throw new CliError('CLI_DURATION_INVALID', `${flags[k]} ${out[k]} is longer than --pipeline-timeout ${out['pipeline']}, which Tekton refuses`);
    }
    if (ms['tasks'] !== undefined && ms['finally'] !== undefined && ms['tasks'] + ms['finally'] > p) {
      throw new CliError(
        'CLI_DURATION_INVALID',
        `--task-timeout ${out['tasks']} + --finally-timeout ${out['finally']} is longer than --pipeline-timeout ${out['pipeline']}, which Tekton refuses`,
      );
    }
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

// --- outcomes and exit codes -----------------------------------------------

/** Where a request stands: Pending (no status yet), a phase while unfinished, or its outcome. */
export type RequestState = 'Pending' | Phase | TerminalReason;
export type FinalState = 'Succeeded' | 'Failed' | 'Rejected' | 'Timeout' | 'Gone';

/**
 * Where a request stands: finished or not from its Succeeded condition (the
 * requester's contract), the phase of an unfinished one from its Progressing
 * condition (or an earlier version's Succeeded reason).
 */
export function requestStateOf(req: Pick<InternalRequest, 'status'>): RequestState {
  return phaseOf(req) ?? 'Pending';
}

export function exitCodeFor(o: FinalState): number {
  switch (o) {
    case 'Succeeded':
      return ExitCode.Succeeded;
    case 'Failed':
      return ExitCode.Failed;
    case 'Rejected':
      return ExitCode.Rejected;
    case 'Timeout':
      return ExitCode.Timeout;
    case 'Gone':
      return ExitCode.BadInput;
  }
}

/**
 * One exit code for several requests: 0 only if all are 0; otherwise the most
 * telling one, in the order 1 (error), 2 (bad input/gone), 22 (rejected),
 * 21 (failed), 124 (timed out).
 */
export function combineExitCodes(codes: readonly number[]): number {
  for (const c of [ExitCode.Error, ExitCode.BadInput, ExitCode.Rejected, ExitCode.Failed, ExitCode.Timeout]) {
    if (codes.includes(c)) return c;
  }
  const other = codes.find((c) => c !== 0);
  return other ?? 0;
}

// --- output ----------------------------------------------------------------

export type OutputFormat = { format: 'json' } | { format: 'yaml' } | { format: 'value'; key: string };

export function parseOutput(text: string): OutputFormat {
  if (text === 'json') return { format: 'json' };
  if (text === 'yaml') return { format: 'yaml' };
  if (text.startsWith('value=') && text.length > 'value='.length) return { format: 'value', key: text.slice('value='.length) };
  throw new CliError('CLI_OUTPUT_INVALID', `--output "${text}" is not json, yaml or value=KEY`);
}

function sortedKeys<T>(o: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** A request's results (string values; arrays and objects are JSON text), keys sorted. */
export function resultsOf(req: Pick<InternalRequest, 'status'>): Record<string, string> {
  return sortedKeys((req.status?.results ?? {}) as Record<string, string>);
}

/** Compact JSON with sorted keys, no newline: what --results-file and the Task result hold. */
export function compactResults(results: Record<string, string>): string {
  return JSON.stringify(sortedKeys(results));
}

/** The results as --output asks: JSON (2-space indent, sorted keys), YAML, or one value; always ends with a newline. */
export function formatResults(results: Record<string, string>, out: OutputFormat): string {
  const sorted = sortedKeys(results);
  switch (out.format) {
    case 'json':
      return `${JSON.stringify(sorted, null, 2)}\n`;
    case 'yaml':
      return Object.keys(sorted).length === 0 ? '{}\n' : toYaml(sorted);
    case 'value': {
      const v = sorted[out.key];
      if (v === undefined) {
        const names = Object.keys(sorted);
        throw new CliError('CLI_OUTPUT_INVALID', `there is no result "${out.key}" (results: ${names.length ? names.join(', ') : 'none'})`);
      }
      return `${v}\n`;
    }
  }
}

/** Results of several requests, by request name (json/yaml only). */
export function formatResultsByName(byName: Record<string, Record<string, string>>, out: OutputFormat): string {
  if (out.format === 'value') throw new CliError('CLI_OUTPUT_INVALID', `--output value=${out.key} needs exactly one request`);
  const sorted = sortedKeys(Object.fromEntries(Object.entries(byName).map(([k, v]) => [k, sortedKeys(v)])));
  return out.format === 'json' ? `${JSON.stringify(sorted, null, 2)}\n` : toYaml(sorted);
}

// --- progress lines --------------------------------------------------------

/**
 * The kcp workspace path the command works in (its kubeconfig's server is
 * `…/clusters/root:org:team`), set once when the target is opened: one
 * command, one workspace. Shown before every request's name.
 */
let shownWorkspace: string | undefined;

export function setShownWorkspace(path: string | undefined): void {
  shownWorkspace = path;
}

/**
 * `internalrequest team-a/x`, `signingrequest team-a/y`: a request in
 * progress lines; in a kcp workspace `internalrequest root:org:team/team-a/x`,
 * as approvers name it.
 */
export function requestRef(req: Pick<RequestObject, 'kind' | 'metadata'>): string {
  return `${(req.kind || 'InternalRequest').toLowerCase()} ${shownWorkspace ? `${shownWorkspace}/` : ''}${req.metadata.namespace ?? ''}/${req.metadata.name ?? ''}`;
}

/** Changes when a progress line is due: the outcome, or the PipelineRun it runs as. */
export function progressKey(req: RequestObject): string {
  return `${requestStateOf(req)}|${req.status?.pipelineRun ?? ''}`;
}

/** One line for a CI log: where the request stands, with the PipelineRun and the condition message. */
export function progressLine(req: RequestObject): string {
  const o = requestStateOf(req);
  const msg = phaseMessageOf(req);
  const ref = requestRef(req);
  switch (o) {
    case 'Pending':
      return `${ref}: waiting for the controller to pick it up`;
    case 'Running':
      return `${ref}: Running${req.status?.pipelineRun ? `, PipelineRun ${req.status.pipelineRun}` : ''}${msg ? ` (${msg})` : ''}`;
    default:
      return `${ref}: ${o}${msg ? `: ${msg}` : ''}`;
  }
}

// --- tables ----------------------------------------------------------------

/** kubectl-style age: 42s, 5m10s, 3h20m, 4d6h, 120d. */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return `${m}m${s % 60 ? `${s % 60}s` : ''}`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return `${h}h${m % 60 ? `${m % 60}m` : ''}`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (d < 8) return `${d}d${h % 24 ? `${h % 24}h` : ''}`;
  return `${d}d`;
}

/** Left-aligned columns separated by three spaces; no trailing spaces. */
export function formatTable(headers: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const all = [headers, ...rows];
  const widths = headers.map((_, i) => Math.max(...all.map((r) => [...(r[i] ?? '')].length)));
  return all
    .map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell + ' '.repeat(widths[i]! - [...cell].length))).join('   ').trimEnd())
    .join('\n')
    .concat('\n');
}

function oneLine(s: string, max: number): string {
  const flat = s.replace(/\s+/g, ' ').trim();
  return [...flat].length > max ? `${[...flat].slice(0, max - 1).join('')}…` : flat;
}

/** The `get`/`list` table; PIPELINE only for InternalRequests (a typed kind's RequestDefinition names its Pipeline). */
export function requestTable(reqs: readonly RequestObject[], now: number, opts: { allNamespaces?: boolean; wide?: boolean } = {}): string {
  const pipelines = reqs.every(isInternalRequest);
  const headers = [...(opts.allNamespaces ? ['NAMESPACE'] : []), 'NAME', ...(pipelines ? ['PIPELINE'] : []), 'STATUS', 'AGE', ...(opts.wide ? ['PIPELINERUN'] : []), 'MESSAGE'];
  const rows = reqs.map((r) => {
    const created = r.metadata.creationTimestamp ? Date.parse(r.metadata.creationTimestamp) : NaN;
    const msg = phaseMessageOf(r);
    return [
      ...(opts.allNamespaces ? [r.metadata.namespace ?? ''] : []),
      r.metadata.name ?? '',
      ...(pipelines && isInternalRequest(r) ? [describeRequested(r.spec)] : []),
      requestStateOf(r),
      Number.isNaN(created) ? '<unknown>' : formatAge(now - created),
      ...(opts.wide ? [r.status?.pipelineRun ?? ''] : []),
      opts.wide ? oneLine(msg, 1000) : oneLine(msg, 80),
    ];
  });
  return formatTable(headers, rows);
}
