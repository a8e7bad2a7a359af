/**
 * The requester's commands: `internal-services request <cmd>` and, with the
 * same subcommands, `kubectl internalrequest <cmd>` (kubectl-internalrequest.ts).
 *
 * Over 400 lines: one commander definition per verb (create, wait, get, list,
 * cancel, approve, deny) with its flags and help. The pure parts are in
 * logic.ts and the waiting in waiter.ts; splitting the verbs into files of
 * their own is left to the structure work of issue 23.
 *
 * stdout carries only data (results, names, tables); progress and errors go
 * to stderr, one line each, so `$(…)` in a pipeline step gets exactly the
 * result. Exit codes: see ExitCode in logic.ts.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { idempotencyKeyOf, LABEL_IDEMPOTENCY_KEY } from '../../controller/idempotency.js';
import { describeRequested } from '../../controller/requested.js';
import { Command, Option } from 'commander';
import { stringify as toYaml } from 'yaml';
import { API_VERSION, INTERNAL_REQUEST_APPROVAL, type InternalRequest, type InternalRequestApproval } from '../../api/types.js';
import { PHASES } from '../../api/conditions.js';
import { LABEL_REQUEST_NAMESPACE } from '../../tekton/pipelinerun.js';
import { DEFAULT_REMOTE } from '../../policy/tenant.js';
import { InternalServicesError } from '../../errors.js';
import { statusCode } from '../../kube/client.js';
import { formatDuration, parseDuration } from '../../util/duration.js';
import {
  CliError,
  combineExitCodes,
  compactResults,
  exitCodeFor,
  ExitCode,
  formatResults,
  formatResultsByName,
  outcomeOf,
  parseDurationFlag,
  parseLabels,
  parseOutput,
  parseParams,
  progressKey,
  progressLine,
  requestRef,
  requestTable,
  resultsOf,
  splitCreateArgs,
  validateTimeouts,
  type FinalOutcome,
  type OutputFormat,
} from './logic.js';
import { apiError, openTarget, type Target, type TargetFlags } from './target.js';
import { waitForRequests, type Tracked } from './waiter.js';

const stderr = (line: string): void => {
  process.stderr.write(`${line}\n`);
};
const stdout = (text: string): void => {
  process.stdout.write(text);
};

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** --kubeconfig, --context, -n: on every subcommand, like kubectl. */
function withTargetOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--kubeconfig <path>', 'kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)'))
    .addOption(new Option('--context <name>', 'kubeconfig context to use (default: the current one)'))
    .addOption(new Option('-n, --namespace <namespace>', "namespace of the requests (default: the context's, else \"default\")"));
}

/**
 * Runs an action and records its exit code. Errors become one line on
 * stderr ("error: … [CODE]"). The process exits with the code once the
 * action's connections are closed; a timer that does not keep the process
 * alive forces the exit should anything linger.
 */
function run<A extends unknown[]>(fn: (...args: A) => Promise<number>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    let code: number;
    try {
      code = await fn(...args);
    } catch (e) {
      code = reportError(e);
    }
    process.exitCode = code;
    setTimeout(() => process.exit(code), 2000).unref();
  };
}

export function reportError(e: unknown): number {
  if (e instanceof CliError) {
    stderr(`error: ${e.message} [${e.code}]`);
    return e.exitCode;
  }
  if (e instanceof InternalServicesError) {
    stderr(`error: ${e.message} [${e.code}]`);
    return ExitCode.BadInput;
  }
  stderr(`error: ${e instanceof Error ? e.message : String(e)}`);
  return ExitCode.Error;
}

async function withTarget<T>(flags: TargetFlags, fn: (t: Target) => Promise<T>): Promise<T> {
  const t = await openTarget(flags);
  try {
    return await fn(t);
  } finally {
    t.close();
  }
}

/** Empty strings count as not given (a Tekton Task passes optional params as ""). */
function given(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === '' ? undefined : v;
}

interface WaitFlags {
  timeout?: string;
  pollInterval: string;
}

function waitSettings(flags: WaitFlags): { timeoutMs: number; pollIntervalMs: number } {
  const timeoutMs = parseDurationFlag('--timeout', given(flags.timeout) ?? '1h');
  const pollIntervalMs = parseDurationFlag('--poll-interval', flags.pollInterval);
  if (pollIntervalMs < 100) throw new CliError('CLI_DURATION_INVALID', `--poll-interval ${flags.pollInterval} is shorter than 100ms`);
  return { timeoutMs, pollIntervalMs };
}

function withWaitOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--timeout <duration>', 'how long to wait; when it passes the command exits 124 and the request keeps running').default('1h'))
    .addOption(new Option('--poll-interval <duration>', 'how often to check each request when watching is not possible').default('5s'));
}

/**
 * Waits with progress lines; prints final lines for requests that ended,
 * an error line for those gone or timed out; returns each request's outcome.
 */
async function waitWithProgress(t: Target, initial: InternalRequest[], flags: WaitFlags, printInitial: boolean): Promise<Array<{ tracked: Tracked; outcome: FinalOutcome }>> {
  const { timeoutMs, pollIntervalMs } = waitSettings(flags);
  const started = Date.now();
  for (const r of initial) {
    // Giving up before the run can time out is how work ends up done twice: say so.
    const t = r.spec?.timeouts?.pipeline ?? r.spec?.pipeline?.timeouts?.pipeline;
    const ms = t ? parseDuration(t) : undefined;
    if (ms !== undefined && ms > timeoutMs) {
      stderr(
        `warning: --timeout ${formatDuration(timeoutMs)} is shorter than the pipeline timeout ${t} of ${requestRef(r)}: if this command gives up, the request keeps running; ` +
          `a retry should use --idempotency-key${idempotencyKeyOf(r) ? ' (this one has one)' : ''} so that the work is not done twice`,
      );
    }
  }
  const last = new Map<string, string>();
  const report = (r: InternalRequest): void => {
    const key = progressKey(r);
    const name = r.metadata.name ?? '';
    if (last.get(name) === key) return;
    last.set(name, key);
    stderr(progressLine(r));
  };
  for (const r of initial) {
    if (printInitial) report(r);
    else last.set(r.metadata.name ?? '', progressKey(r));
  }
  const tracked = await waitForRequests(t, initial, {
    deadline: started + timeoutMs,
    pollIntervalMs,
    onUpdate: report,
    onGone: () => {},
    onNote: (m) => stderr(`note: ${m}`),
  });
  return tracked.map((x) => {
    if (x.gone) {
      stderr(`error: ${requestRef(x.request)} was deleted while waiting for it [CLI_REQUEST_GONE]`);
      return { tracked: x, outcome: 'Gone' as const };
    }
    const o = outcomeOf(x.request);
    if (o === 'Succeeded' || o === 'Failed' || o === 'Rejected') return { tracked: x, outcome: o };
    stderr(`error: timed out after ${formatDuration(timeoutMs)} waiting for ${requestRef(x.request)} (${progressLine(x.request).replace(/^[^:]*: /, '')}); it keeps running [CLI_WAIT_TIMEOUT]`);
    return { tracked: x, outcome: 'Timeout' as const };
  });
}

// --- create ------------------------------------------------------------------

interface CreateFlags extends TargetFlags, WaitFlags {
  pipeline?: string;
  gitUrl?: string;
  gitRevision?: string;
  path?: string;
  resolver?: string;
  resolverParam?: string[];
  param?: string[];
  label?: string[];
  serviceAccount?: string;
  pipelineTimeout?: string;
  taskTimeout?: string;
  finallyTimeout?: string;
  generateName?: string;
  name?: string;
  wait: boolean;
  output: string;
  resultsFile?: string;
  nameFile?: string;
  idempotencyKey?: string;
}

/**
 * The idempotency key as a label value: kept as given when it is one
 * (at most 63 characters of [A-Za-z0-9._-], alphanumeric at both ends),
 * else a digest of it, so any text (a PipelineRun uid plus a Pipeline name) works.
 */
export function idempotencyLabelValue(key: string): string {
  if (key.length <= 63 && /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/.test(key)) return key;
  return `sha256-${createHash('sha256').update(key).digest('hex').slice(0, 56)}`;
}

/** Everything `create` sends, from its flags; throws CliError (exit 2) on bad input, before any cluster is contacted. */
export function buildRequest(args: string[], flags: CreateFlags, readFile: (p: string) => string): { body: InternalRequest; output: OutputFormat } {
  const ref = resolverRef(flags);
  const { pipeline, paramArgs } = ref ? { pipeline: undefined, paramArgs: remoteParamArgs(args, flags) } : splitCreateArgs(args, flags.pipeline, flags.param ?? []);
  const params = parseParams(paramArgs, readFile);
  const labels = parseLabels(flags.label ?? []);
  const idem = given(flags.idempotencyKey);
  if (idem) labels[LABEL_IDEMPOTENCY_KEY] = idempotencyLabelValue(idem);
  const timeouts = validateTimeouts({ pipeline: flags.pipelineTimeout, tasks: flags.taskTimeout, finally: flags.finallyTimeout });
  const output = parseOutput(flags.output);
  const name = given(flags.name);
  const generateName = given(flags.generateName);
  if (name && generateName) throw new CliError('CLI_USAGE', '--name and --generate-name do not go together');
  const serviceAccount = given(flags.serviceAccount);
  const body: InternalRequest = {
    apiVersion: API_VERSION,
    kind: 'InternalRequest',
    metadata: {
      ...(name ? { name } : { generateName: generateName ?? `${pipeline ?? ref!.prefix}-` }),
      ...(Object.keys(labels).length ? { labels } : {}),
    },
    spec: {
      ...(ref ? { pipeline: { pipelineRef: { resolver: ref.resolver, params: ref.params } } } : { request: pipeline }),
      ...(Object.keys(params).length ? { params } : {}),
      ...(timeouts ? { timeouts } : {}),
      ...(serviceAccount ? { serviceAccount } : {}),
    },
  };
  return { body, output };
}

/**
 * The remote reference asked for with --git-url/--git-revision/--path (the
 * git resolver) or --resolver NAME --resolver-param k=v; undefined when
 * neither is given. `prefix` is the default name prefix (the file's name).
 */
function resolverRef(flags: CreateFlags): { resolver: string; params: Array<{ name: string; value: string }>; prefix: string } | undefined {
  const git = { url: given(flags.gitUrl), revision: given(flags.gitRevision), pathInRepo: given(flags.path) };
  const anyGit = Object.values(git).some((v) => v !== undefined);
  const resolver = given(flags.resolver);
  const extra = flags.resolverParam ?? [];
  if (!anyGit && !resolver) {
    if (extra.length) throw new CliError('CLI_USAGE', '--resolver-param needs --resolver NAME (or the --git-url/--git-revision/--path shape)');
    return undefined;
  }
  if (anyGit && resolver && resolver !== 'git') throw new CliError('CLI_USAGE', `--git-url/--git-revision/--path are the git resolver's; they do not go with --resolver ${resolver}`);
  if (resolver && !/^[a-z][a-z0-9-]*$/.test(resolver)) throw new CliError('CLI_USAGE', `--resolver "${resolver}" is not a resolver name (lower-case letters, digits and -)`);
  const params: Array<{ name: string; value: string }> = [];
  const seen = new Set<string>();
  const push = (name: string, value: string, from: string): void => {
    if (seen.has(name)) throw new CliError('CLI_PARAM_INVALID', `resolver param "${name}" is given more than once (${from})`);
    seen.add(name);
    params.push({ name, value });
  };
  if (anyGit) {
    const missing = (Object.entries(git) as Array<[string, string | undefined]>).filter(([, v]) => v === undefined).map(([k]) => ({ url: '--git-url', revision: '--git-revision', pathInRepo: '--path' })[k]);
    if (missing.length) throw new CliError('CLI_USAGE', `the git shape needs --git-url, --git-revision and --path; missing: ${missing.join(', ')}`);
    for (const [k, v] of Object.entries(git)) push(k, v!, `--${k === 'pathInRepo' ? 'path' : `git-${k}`}`);
  }
  for (const a of extra) {
    const eq = a.indexOf('=');
    if (eq <= 0) throw new CliError('CLI_PARAM_INVALID', `--resolver-param "${a}" is not key=value`);
    push(a.slice(0, eq), a.slice(eq + 1), '--resolver-param');
  }
  const path = git.pathInRepo ?? params.find((p) => p.name === 'pathInRepo' || p.name === 'name')?.value;
  const base = path ? (path.split('/').pop() ?? '').replace(/\.ya?ml$/, '').toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 50) : '';
  return { resolver: resolver ?? 'git', params, prefix: base || (resolver ?? 'git') };
}

/** With a resolver, every argument is a param: a Pipeline name would say two things at once. */
function remoteParamArgs(args: readonly string[], flags: CreateFlags): string[] {
  if (given(flags.pipeline)) throw new CliError('CLI_USAGE', '--pipeline (an installed Pipeline) and a resolver (--git-url/--path, --resolver) do not go together');
  const bad = args.find((a) => !a.includes('='));
  if (bad !== undefined) throw new CliError('CLI_USAGE', `argument "${bad}" is not KEY=VALUE; with a resolver the Pipeline comes from --git-url/--path or --resolver-param, so every argument is a param`);
  return [...(flags.param ?? []), ...args];
}

function createCommand(): Command {
  const cmd = new Command('create')
    .description('Create an InternalRequest for a Pipeline of the internal cluster, wait for it, and print its results')
    .usage('[options] [PIPELINE] [KEY=VALUE...]   or   [options] --git-url URL --git-revision REV --path FILE [KEY=VALUE...]')
    .argument('[args...]', 'the Pipeline name (unless --pipeline) and params as KEY=VALUE')
    .addOption(new Option('--pipeline <name>', 'the Pipeline to run, installed on the internal cluster (or give it as the first argument)'))
    .addOption(new Option('--git-url <url>', "a Pipeline from git instead (spec.pipeline with Tekton's git resolver): the repository URL"))
    .addOption(new Option('--git-revision <rev>', 'with --git-url: the branch, tag or commit'))
    .addOption(new Option('--path <pathInRepo>', 'with --git-url: the Pipeline file in the repository'))
    .addOption(new Option('--resolver <name>', 'a Pipeline through another Tekton resolver (bundles, http, hub, cluster, git), with --resolver-param'))
    .addOption(new Option('--resolver-param <key=value>', "a param of the resolver; repeatable").argParser(collect))
    .addOption(new Option('-p, --param <key=value>', 'a param; repeatable. The value may be JSON text (array/object params); key=@file reads it from a file, key=@@x is the literal @x').argParser(collect))
    .addOption(new Option('-l, --label <key=value>', 'a label of the request; repeatable').argParser(collect))
    .addOption(new Option('--service-account <name>', 'service account the PipelineRun runs as (must be allowed by the internal cluster)'))
    .addOption(new Option('--pipeline-timeout <duration>', 'PipelineRun timeout (Go duration, e.g. 1h30m; 0s for none)'))
    .addOption(new Option('--task-timeout <duration>', 'timeout of the tasks (tasks + finally ≤ pipeline)'))
    .addOption(new Option('--finally-timeout <duration>', 'timeout of the finally tasks'))
    .addOption(new Option('--generate-name <prefix>', 'name prefix; a random suffix is added (default: "<pipeline>-")'))
    .addOption(new Option('--name <name>', 'exact name of the request'))
    .addOption(new Option('--no-wait', 'print the request name on stdout and exit once it is created'))
    .addOption(new Option('-o, --output <format>', 'results on stdout: json, yaml or value=KEY').default('json'))
    .addOption(new Option('--results-file <path>', 'also write the results as compact JSON (no newline) to this file, e.g. a Tekton result'))
    .addOption(new Option('--idempotency-key <key>', 'run the work once however often it is asked: while an earlier request of the namespace with this key and the same spec runs or has succeeded, this one follows it (e.g. the requesting PipelineRun uid + the Pipeline)'))
    .addOption(new Option('--name-file <path>', 'write the request name (no newline) to this file once created, e.g. a Tekton result'));
  withWaitOptions(cmd);
  withTargetOptions(cmd);
  return cmd.action(
    run(async (args: string[], flags: CreateFlags) => {
      const { body, output } = buildRequest(args, flags, (p) => readFileSync(p, 'utf8'));
      waitSettings(flags); // validate before creating anything
      return withTarget(flags, async (t) => {
        body.metadata.namespace = t.namespace;
        let created: InternalRequest;
        try {
          created = (await t.requests.create(t.namespace, body)) as InternalRequest;
        } catch (e) {
          throw apiError(e, t, `create an InternalRequest in namespace "${t.namespace}"`);
        }
        const name = created.metadata.name ?? '';
        stderr(`${requestRef(created)} created (pipeline ${describeRequested(created.spec)})`);
        if (flags.nameFile) writeFileSync(flags.nameFile, name);
        if (!flags.wait) {
          stdout(`${name}\n`);
          return ExitCode.Succeeded;
        }
        const [res] = await waitWithProgress(t, [created], flags, false);
        if (!res) return ExitCode.Error;
        if (res.outcome === 'Succeeded') {
          const results = resultsOf(res.tracked.request);
          if (flags.resultsFile) writeFileSync(flags.resultsFile, compactResults(results));
          stdout(formatResults(results, output));
        }
        return exitCodeFor(res.outcome);
      });
    }),
  );
}

// --- wait ---------------------------------------------------------------------

interface SelectFlags extends TargetFlags {
  selector?: string;
}

/** The named requests (each must exist), or those matching -l (at least one). */
async function selectRequests(t: Target, names: string[], selector: string | undefined, verb: string): Promise<InternalRequest[]> {
  if (names.length > 0 && selector) throw new CliError('CLI_USAGE', `give request names or -l SELECTOR to ${verb}, not both`);
  if (names.length === 0 && !selector) throw new CliError('CLI_USAGE', `give the names of the requests to ${verb}, or -l SELECTOR`);
  if (selector) {
    let items: InternalRequest[];
    try {
      items = (await t.requests.list(t.namespace, { labelSelector: selector })).items as InternalRequest[];
    } catch (e) {
      if (statusCode(e) === 400) throw new CliError('CLI_LABEL_INVALID', `label selector "${selector}" is not valid: ${apiError(e, t, 'list').message}`);
      throw apiError(e, t, `list InternalRequests in namespace "${t.namespace}"`);
    }
    if (items.length === 0) throw new CliError('CLI_REQUEST_NOT_FOUND', `no InternalRequests in namespace "${t.namespace}" match -l ${selector}`);
    return items.sort((a, b) => ((a.metadata.name ?? '') < (b.metadata.name ?? '') ? -1 : 1));
  }
  const out: InternalRequest[] = [];
  const missing: string[] = [];
  for (const name of [...new Set(names)]) {
    let got: InternalRequest | undefined;
    try {
      got = (await t.requests.tryGet(t.namespace, name)) as InternalRequest | undefined;
    } catch (e) {
      throw apiError(e, t, `get InternalRequest ${t.namespace}/${name}`);
    }
    if (got) out.push(got);
    else missing.push(name);
  }
  if (missing.length) throw new CliError('CLI_REQUEST_NOT_FOUND', `no InternalRequest ${missing.map((n) => `"${n}"`).join(', ')} in namespace "${t.namespace}"`);
  return out;
}

interface WaitCmdFlags extends SelectFlags, WaitFlags {
  output: string;
}

function waitCommand(): Command {
  const cmd = new Command('wait')
    .description('Wait for existing requests (by name, or all matching -l) to finish; exit 0 only if all succeed')
    .argument('[names...]', 'request names')
    .addOption(new Option('-l, --selector <selector>', 'label selector, e.g. release=r1,app=x'))
    .addOption(new Option('-o, --output <format>', 'results on stdout: json, yaml, or value=KEY (one request only); several requests print {name: results}').default('json'));
  withWaitOptions(cmd);
  withTargetOptions(cmd);
  return cmd.action(
    run(async (names: string[], flags: WaitCmdFlags) => {
      const output = parseOutput(flags.output);
      waitSettings(flags);
      return withTarget(flags, async (t) => {
        const reqs = await selectRequests(t, names, flags.selector, 'wait for');
        const single = names.length === 1 && !flags.selector;
        if (!single && output.format === 'value') formatResultsByName({}, output); // throws: value=KEY needs one request
        const results = await waitWithProgress(t, reqs, flags, true);
        const code = combineExitCodes(results.map((r) => exitCodeFor(r.outcome)));
        if (code === ExitCode.Succeeded) {
          if (single) stdout(formatResults(resultsOf(results[0]!.tracked.request), output));
          else stdout(formatResultsByName(Object.fromEntries(results.map((r) => [r.tracked.name, resultsOf(r.tracked.request)])), output));
        }
        return code;
      });
    }),
  );
}

// --- get / list -------------------------------------------------------------------

interface GetFlags extends SelectFlags {
  output: string;
  allNamespaces?: boolean;
  awaitingApproval?: boolean;
  phase?: string;
}

function printRequests(reqs: InternalRequest[], flags: GetFlags, asList: boolean): void {
  const format = flags.output;
  if (format === 'json' || format === 'yaml') {
    const data = !asList && reqs.length === 1 ? reqs[0] : { apiVersion: 'v1', kind: 'List', items: reqs };
    stdout(format === 'json' ? `${JSON.stringify(data, null, 2)}\n` : toYaml(data));
    return;
  }
  if (reqs.length === 0) {
    stderr(`No InternalRequests found${flags.allNamespaces ? '' : ` in namespace "${flags.namespace ?? ''}"`}.`);
    return;
  }
  stdout(requestTable(reqs, Date.now(), { allNamespaces: !!flags.allNamespaces, wide: format === 'wide' }));
}

function checkTableFormat(output: string): void {
  if (!['table', 'wide', 'json', 'yaml'].includes(output)) throw new CliError('CLI_OUTPUT_INVALID', `--output "${output}" is not table, wide, json or yaml`);
}

async function listRequests(t: Target, flags: GetFlags): Promise<InternalRequest[]> {
  try {
    const l = await t.requests.list(flags.allNamespaces ? undefined : t.namespace, flags.selector ? { labelSelector: flags.selector } : {});
    return (l.items as InternalRequest[]).sort((a, b) => {
      const ka = `${a.metadata.namespace}/${a.metadata.name}`;
      const kb = `${b.metadata.namespace}/${b.metadata.name}`;
      return ka < kb ? -1 : ka > kb ? 1 : 0;
    });
  } catch (e) {
    if (statusCode(e) === 400) throw new CliError('CLI_LABEL_INVALID', `label selector "${flags.selector ?? ''}" is not valid: ${apiError(e, t, 'list').message}`);
    throw apiError(e, t, `list InternalRequests${flags.allNamespaces ? ' in all namespaces' : ` in namespace "${t.namespace}"`}`);
  }
}

function addGetOptions(cmd: Command): Command {
  cmd
    .addOption(new Option('-l, --selector <selector>', 'label selector'))
    .addOption(new Option('-A, --all-namespaces', 'requests of every namespace you may list'))
    .addOption(new Option('-o, --output <format>', 'table, wide, json or yaml').default('table'));
  return withTargetOptions(cmd);
}

function getCommand(): Command {
  const cmd = new Command('get').description('Show requests in a table (all, or by name); -o json|yaml for the objects').argument('[names...]', 'request names');
  addGetOptions(cmd);
  return cmd.action(
    run(async (names: string[], flags: GetFlags) => {
      checkTableFormat(flags.output);
      return withTarget(flags, async (t) => {
        flags.namespace = t.namespace;
        if (names.length === 0) {
          printRequests(await listRequests(t, flags), flags, true);
          return ExitCode.Succeeded;
        }
        if (flags.selector || flags.allNamespaces) throw new CliError('CLI_USAGE', 'give request names or -l/-A, not both');
        const reqs = await selectRequests(t, names, undefined, 'get');
        printRequests(reqs, flags, names.length > 1);
        return ExitCode.Succeeded;
      });
    }),
  );
}

function listCommand(): Command {
  const cmd = new Command('list')
    .alias('ls')
    .description('List requests in a table')
    .addOption(new Option('--awaiting-approval', 'only requests waiting for an approver (phase AwaitingApproval; same as --phase AwaitingApproval)'))
    .addOption(new Option('--phase <phase>', 'only requests in this phase (the reason of their Progressing condition), or with this outcome').choices(['Pending', ...PHASES, 'Succeeded', 'Failed', 'Rejected']));
  addGetOptions(cmd);
  return cmd.action(
    run(async (flags: GetFlags) => {
      checkTableFormat(flags.output);
      return withTarget(flags, async (t) => {
        flags.namespace = t.namespace;
        const all = await listRequests(t, flags);
        const phase = flags.awaitingApproval ? 'AwaitingApproval' : flags.phase;
        if (flags.awaitingApproval && flags.phase && flags.phase !== 'AwaitingApproval') {
          throw new CliError('CLI_USAGE', `--awaiting-approval and --phase ${flags.phase} contradict each other; give one`);
        }
        printRequests(phase ? all.filter((r) => outcomeOf(r) === phase) : all, flags, true);
        return ExitCode.Succeeded;
      });
    }),
  );
}

// --- cancel ---------------------------------------------------------------------------

interface CancelFlags extends SelectFlags {
  ignoreNotFound?: boolean;
}

function cancelCommand(): Command {
  const cmd = new Command('cancel')
    .description('Cancel requests by deleting them; the controller then cancels and removes their PipelineRuns')
    .argument('[names...]', 'request names')
    .addOption(new Option('-l, --selector <selector>', 'label selector'))
    .addOption(new Option('--ignore-not-found', 'a request that does not exist is not an error'));
  withTargetOptions(cmd);
  return cmd.action(
    run(async (names: string[], flags: CancelFlags) =>
      withTarget(flags, async (t) => {
        let targets: string[];
        if (flags.selector || names.length === 0) {
          try {
            targets = (await selectRequests(t, names, flags.selector, 'cancel')).map((r) => r.metadata.name ?? '');
          } catch (e) {
            if (flags.ignoreNotFound && e instanceof CliError && e.code === 'CLI_REQUEST_NOT_FOUND') return ExitCode.Succeeded;
            throw e;
          }
        } else targets = [...new Set(names)];
        let code: number = ExitCode.Succeeded;
        for (const name of targets) {
          try {
            const existing = await t.requests.tryGet(t.namespace, name);
            if (!existing) {
              if (!flags.ignoreNotFound) {
                stderr(`error: no InternalRequest "${name}" in namespace "${t.namespace}" [CLI_REQUEST_NOT_FOUND]`);
                code = ExitCode.BadInput;
              }
              continue;
            }
            await t.requests.delete(t.namespace, name, existing.metadata?.uid);
            stdout(`internalrequest ${t.namespace}/${name} cancelled (deleted)\n`);
          } catch (e) {
            code = combineExitCodes([code, reportError(apiError(e, t, `delete InternalRequest ${t.namespace}/${name}`))]);
          }
        }
        return code;
      }),
    ),
  );
}

// --- approve / deny ---------------------------------------------------------------------

interface DecideFlags extends TargetFlags {
  message?: string;
  approvalsNamespace: string;
}

/**
 * Approve or deny: writes the decision into the status of the request's
 * InternalRequestApproval on the INTERNAL cluster (--kubeconfig/--context
 * name the approver's access there), under the approver's own name and
 * groups as the API server reports them; the API server checks both, and
 * that the approver may approve under the rule.
 */
function decideCommand(result: 'Approved' | 'Denied'): Command {
  const verb = result === 'Approved' ? 'approve' : 'deny';
  const cmd = new Command(verb)
    .description(
      result === 'Approved'
        ? 'Approve a request waiting for approval (run against the INTERNAL cluster; needs verb "approve" on the rule)'
        : 'Deny a request waiting for approval: it ends Rejected with your message (run against the INTERNAL cluster)',
    )
    .argument('<request>', 'the request: NAME (with -n, its namespace on the remote cluster), NAMESPACE/NAME, or REMOTE/NAMESPACE/NAME for a remote other than the default one')
    .addOption(new Option('-m, --message <text>', result === 'Approved' ? 'a note recorded with the approval' : 'why (the requester sees it)'))
    .addOption(new Option('--approvals-namespace <namespace>', "the controller's namespace on the internal cluster").default('internal-services'));
  withTargetOptions(cmd);
  return cmd.action(
    run(async (ref: string, flags: DecideFlags) => {
      if (result === 'Denied' && !given(flags.message)) throw new CliError('CLI_USAGE', 'deny needs --message: the requester reads it');
      const parts = ref.split('/');
      if (parts.length > 3 || parts.some((p) => !p)) throw new CliError('CLI_USAGE', `${JSON.stringify(ref)}: give the request as NAME (with -n), NAMESPACE/NAME or REMOTE/NAMESPACE/NAME`);
      return withTarget({ ...flags, namespace: flags.approvalsNamespace }, async (t) => {
        const remote = parts.length === 3 ? parts[0]! : DEFAULT_REMOTE;
        const ns = parts.length >= 2 ? parts[parts.length - 2]! : (flags.namespace ?? '');
        const name = parts[parts.length - 1]!;
        if (!ns) throw new CliError('CLI_USAGE', 'give the request as NAMESPACE/NAME, or its namespace with -n');
        const approvals = t.cluster.resource<InternalRequestApproval>(INTERNAL_REQUEST_APPROVAL);
        let found: InternalRequestApproval | undefined;
        try {
          const l = await approvals.list(t.namespace, { labelSelector: `${LABEL_REQUEST_NAMESPACE}=${ns}` });
          // Approvals made before remotes had names carry no remote: the default one.
          found = l.items.find((a) => a.spec.request.name === name && (a.spec.request.remote ?? DEFAULT_REMOTE) === remote && !a.status?.decision);
        } catch (e) {
          throw apiError(e, t, `list InternalRequestApprovals in namespace "${t.namespace}"`);
        }
        if (!found) throw new CliError('CLI_REQUEST_NOT_FOUND', `no request ${ref.includes('/') ? ref : `${ns}/${name}`} is waiting for approval (no undecided InternalRequestApproval for it in namespace "${t.namespace}" of ${t.where})`);
        let me: { username?: string; groups?: string[] };
        try {
          const review = (await t.cluster.custom.createClusterCustomObject({
            group: 'authentication.k8s.io',
            version: 'v1',
            plural: 'selfsubjectreviews',
            body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
          })) as { status?: { userInfo?: { username?: string; groups?: string[] } } };
          me = review.status?.userInfo ?? {};
        } catch (e) {
          throw apiError(e, t, 'find out who you are (SelfSubjectReview)');
        }
        if (!me.username) throw new CliError('CLI_CLUSTER_ACCESS', `${t.where} did not say who you are`);
        const decision = { result, by: me.username, groups: me.groups ?? [], at: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'), ...(given(flags.message) ? { message: flags.message } : {}) };
        try {
          await approvals.replaceStatus(t.namespace, found.metadata.name ?? '', { ...found, status: { decision } });
        } catch (e) {
          const err = apiError(e, t, `${verb} ${ns}/${name}`);
          throw new CliError(statusCode(e) === 422 || statusCode(e) === 403 ? 'CLI_CLUSTER_ACCESS' : err.code, err.message, err.exitCode);
        }
        stdout(`internalrequest ${ns}/${name} ${result === 'Approved' ? 'approved' : 'denied'} by ${me.username} (rule ${found.spec.rule})\n`);
        return ExitCode.Succeeded;
      });
    }),
  );
}

// --- assembly -------------------------------------------------------------------------

/** The subcommands, configured to throw CommanderError (exit 2) instead of exiting on bad flags. */
export function requestSubcommands(): Command[] {
  return [createCommand(), waitCommand(), getCommand(), listCommand(), cancelCommand(), decideCommand('Approved'), decideCommand('Denied')].map((c) =>
    c.exitOverride().configureOutput({ writeErr: (s) => process.stderr.write(s) }).showHelpAfterError(false),
  );
}

/** `internal-services request …` */
export function requestCommand(): Command {
  const cmd = new Command('request')
    .description("The requester's side: create InternalRequests on the remote cluster, wait for them, get their results")
    .exitOverride();
  for (const c of requestSubcommands()) cmd.addCommand(c);
  return cmd;
}
