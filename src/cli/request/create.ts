/**
 * `create`: an InternalRequest from flags and arguments (an installed
 * Pipeline, or one through a Tekton resolver), or with --kind a request of a
 * typed kind from its spec fields (--field, --spec-file); then by default
 * waiting for it and printing its results. buildRequest and
 * buildTypedRequest are everything short of the cluster.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { LABEL_IDEMPOTENCY_KEY } from '../../requests/idempotency.js';
import { describeRequested } from '../../controller/requested-run.js';
import { Command, Option } from 'commander';
import { API_VERSION, type InternalRequest, type ObjectMeta } from '../../api/types.js';
import { typedSpec } from './fields.js';
import { isTypedKindFlag, withArticle, type KindRef } from './kind.js';
import {
  CliError,
  compactResults,
  exitCodeFor,
  ExitCode,
  formatResults,
  isInternalRequest,
  parseLabels,
  parseOutput,
  parseParams,
  requestRef,
  resultsOf,
  splitCreateArgs,
  validateTimeouts,
  type OutputFormat,
  type RequestObject,
} from './args-output.js';
import { apiError, type TargetFlags } from './target.js';
import { collect, given, run, stderr, stdout, waitSettings, withKindOption, withTarget, withTargetOptions, withWaitOptions, type KindFlags, type WaitFlags } from './command-base.js';
import { waitWithProgress } from './wait.js';

export interface CreateFlags extends TargetFlags, KindFlags, WaitFlags {
  field?: string[];
  specFile?: string;
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

/**
 * The name (or name prefix) and labels of the request, from -l,
 * --idempotency-key, --name and --generate-name; without --name or
 * --generate-name the prefix is `defaultPrefix-` (none when undefined).
 */
function requestMetadata(flags: CreateFlags, defaultPrefix: string | undefined): ObjectMeta {
  const labels = parseLabels(flags.label ?? []);
  const idem = given(flags.idempotencyKey);
  if (idem) labels[LABEL_IDEMPOTENCY_KEY] = idempotencyLabelValue(idem);
  const name = given(flags.name);
  const generateName = given(flags.generateName);
  if (name && generateName) throw new CliError('CLI_USAGE', '--name and --generate-name do not go together');
  return {
    ...(name ? { name } : generateName || defaultPrefix !== undefined ? { generateName: generateName ?? `${defaultPrefix}-` } : {}),
    ...(Object.keys(labels).length ? { labels } : {}),
  };
}

/** Everything `create` sends for an InternalRequest, from its flags; throws CliError (exit 2) on bad input, before any cluster is contacted. */
export function buildRequest(args: string[], flags: CreateFlags, readFile: (p: string) => string): { body: InternalRequest; output: OutputFormat } {
  if ((flags.field ?? []).length > 0 || given(flags.specFile)) {
    throw new CliError('CLI_USAGE', '--field and --spec-file give the spec of a typed kind: add --kind KIND (an InternalRequest takes a Pipeline and params: -p KEY=VALUE)');
  }
  const ref = resolverRef(flags);
  const { pipeline, paramArgs } = ref ? { pipeline: undefined, paramArgs: remoteParamArgs(args, flags) } : splitCreateArgs(args, flags.pipeline, flags.param ?? []);
  const params = parseParams(paramArgs, readFile);
  const metadata = requestMetadata(flags, pipeline ?? ref!.prefix);
  const timeouts = validateTimeouts({ pipeline: flags.pipelineTimeout, tasks: flags.taskTimeout, finally: flags.finallyTimeout });
  const output = parseOutput(flags.output);
  const serviceAccount = given(flags.serviceAccount);
  const body: InternalRequest = {
    apiVersion: API_VERSION,
    kind: 'InternalRequest',
    metadata,
    spec: {
      ...(ref ? { pipeline: { pipelineRef: { resolver: ref.resolver, params: ref.params } } } : { request: pipeline }),
      ...(Object.keys(params).length ? { params } : {}),
      ...(timeouts ? { timeouts } : {}),
      ...(serviceAccount ? { serviceAccount } : {}),
    },
  };
  return { body, output };
}

/** What only an InternalRequest takes: a typed kind's RequestDefinition sets its Pipeline, service account and timeouts. */
function internalRequestOnly(args: readonly string[], flags: CreateFlags): string[] {
  const flagIf = (flag: string, v: string | string[] | undefined): string[] => ((Array.isArray(v) ? v.length > 0 : given(v) !== undefined) ? [flag] : []);
  return [
    ...(args.length ? [`argument ${JSON.stringify(args[0])}`] : []),
    ...flagIf('--pipeline', flags.pipeline),
    ...flagIf('--git-url', flags.gitUrl),
    ...flagIf('--git-revision', flags.gitRevision),
    ...flagIf('--path', flags.path),
    ...flagIf('--resolver', flags.resolver),
    ...flagIf('--resolver-param', flags.resolverParam),
    ...flagIf('-p/--param', flags.param),
    ...flagIf('--service-account', flags.serviceAccount),
    ...flagIf('--pipeline-timeout', flags.pipelineTimeout),
    ...flagIf('--task-timeout', flags.taskTimeout),
    ...flagIf('--finally-timeout', flags.finallyTimeout),
  ];
}

export interface TypedRequest {
  metadata: ObjectMeta;
  spec: Record<string, unknown>;
  output: OutputFormat;
}

/**
 * Everything `create --kind` sends for a typed kind short of the kind's own
 * names (typedRequestBody adds them once the cluster has said what --kind
 * names): the spec from --spec-file and --field, the labels and name.
 * Refuses what only an InternalRequest takes. Throws CliError (exit 2) on
 * bad input, before any cluster is contacted.
 */
export function buildTypedRequest(args: string[], flags: CreateFlags, readSpecFile: (p: string) => string): TypedRequest {
  const refused = internalRequestOnly(args, flags);
  if (refused.length) {
    throw new CliError(
      'CLI_USAGE',
      `${refused.join(', ')} ${refused.length > 1 ? 'are' : 'is'} for InternalRequests only: the RequestDefinition of --kind ${flags.kind?.trim() ?? ''} sets the Pipeline, its service account and timeouts; give the spec with --field NAME=VALUE or --spec-file FILE`,
    );
  }
  const path = given(flags.specFile);
  let specFile: { source: string; text: string } | undefined;
  if (path !== undefined) {
    try {
      specFile = { source: path === '-' ? '- (stdin)' : path, text: readSpecFile(path) };
    } catch (e) {
      throw new CliError('CLI_FIELD_INVALID', `--spec-file ${path}: cannot read it: ${(e as Error).message}`);
    }
  }
  const spec = typedSpec(flags.field ?? [], specFile);
  const metadata = requestMetadata(flags, undefined);
  const output = parseOutput(flags.output);
  return { metadata, spec, output };
}

/** The object to create: the typed request for that kind, named `<singular>-xxxxx` unless --name or --generate-name said otherwise. */
export function typedRequestBody(kind: KindRef, r: TypedRequest): RequestObject {
  return {
    apiVersion: `${kind.group}/${kind.version}`,
    kind: kind.kind,
    metadata: { ...(r.metadata.name || r.metadata.generateName ? {} : { generateName: `${kind.singular}-` }), ...structuredClone(r.metadata) },
    spec: r.spec,
  };
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
    .description('Create an InternalRequest for a Pipeline of the internal cluster (or, with --kind, a request of a typed kind from its spec fields), wait for it, and print its results')
    .usage('[options] [PIPELINE] [KEY=VALUE...]   or   [options] --git-url URL --git-revision REV --path FILE [KEY=VALUE...]   or   [options] --kind KIND --field NAME=VALUE... [--spec-file FILE]')
    .argument('[args...]', 'the Pipeline name (unless --pipeline) and params as KEY=VALUE')
    .addOption(new Option('--pipeline <name>', 'the Pipeline to run, installed on the internal cluster (or give it as the first argument)'))
    .addOption(new Option('--git-url <url>', "a Pipeline from git instead (spec.pipeline with Tekton's git resolver): the repository URL"))
    .addOption(new Option('--git-revision <rev>', 'with --git-url: the branch, tag or commit'))
    .addOption(new Option('--path <pathInRepo>', 'with --git-url: the Pipeline file in the repository'))
    .addOption(new Option('--resolver <name>', 'a Pipeline through another Tekton resolver (bundles, http, hub, cluster, git), with --resolver-param'))
    .addOption(new Option('--resolver-param <key=value>', "a param of the resolver; repeatable").argParser(collect))
    .addOption(new Option('-p, --param <key=value>', 'a param; repeatable. The value may be JSON text (array/object params); key=@file reads it from a file, key=@@x is the literal @x').argParser(collect))
    .addOption(new Option('--field <name=value>', 'with --kind (a typed kind): a spec field; repeatable. A value starting with [ or { is JSON (array/object fields), any other a string').argParser(collect))
    .addOption(new Option('--spec-file <path>', 'with --kind (a typed kind): the spec as a YAML or JSON object ("-": stdin); --field values override its fields'))
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
  withKindOption(cmd);
  withTargetOptions(cmd);
  return cmd.action(
    run(async (args: string[], flags: CreateFlags) => {
      const typed = isTypedKindFlag(flags.kind);
      const built = typed ? buildTypedRequest(args, flags, (p) => readFileSync(p === '-' ? 0 : p, 'utf8')) : buildRequest(args, flags, (p) => readFileSync(p, 'utf8'));
      const output = built.output;
      waitSettings(flags); // validate before creating anything
      return withTarget(flags, async (t) => {
        if (typed && t.kind.builtIn) throw new CliError('CLI_KIND_UNKNOWN', `--kind ${flags.kind ?? ''} names InternalRequest: leave --kind out, and give a Pipeline and params`);
        const body: RequestObject = 'body' in built ? built.body : typedRequestBody(t.kind, built);
        body.metadata.namespace = t.namespace;
        let created: RequestObject;
        try {
          created = await t.requests.create(t.namespace, body);
        } catch (e) {
          throw apiError(e, t, `create ${withArticle(t.kind.kind)} in namespace "${t.namespace}"`);
        }
        const name = created.metadata.name ?? '';
        stderr(`${requestRef(created)} created${isInternalRequest(created) ? ` (pipeline ${describeRequested(created.spec)})` : ''}`);
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
