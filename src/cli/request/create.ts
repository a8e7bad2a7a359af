/**
 * `create`: an InternalRequest from flags and arguments (an installed
 * Pipeline, or one through a Tekton resolver), then by default waiting for it
 * and printing its results. buildRequest is everything short of the cluster.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { LABEL_IDEMPOTENCY_KEY } from '../../controller/idempotency.js';
import { describeRequested } from '../../controller/requested.js';
import { Command, Option } from 'commander';
import { API_VERSION, type InternalRequest } from '../../api/types.js';
import {
  CliError,
  compactResults,
  exitCodeFor,
  ExitCode,
  formatResults,
  parseLabels,
  parseOutput,
  parseParams,
  requestRef,
  resultsOf,
  splitCreateArgs,
  validateTimeouts,
  type OutputFormat,
} from './logic.js';
import { apiError, type TargetFlags } from './target.js';
import { collect, given, run, stderr, stdout, waitSettings, withTarget, withTargetOptions, withWaitOptions, type WaitFlags } from './shared.js';
import { waitWithProgress } from './wait.js';

export interface CreateFlags extends TargetFlags, WaitFlags {
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

export function createCommand(): Command {
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
