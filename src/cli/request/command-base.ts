/**
 * What the requester's commands share: stdout/stderr (stdout carries only
 * data; progress and errors go to stderr, one line each), the options every
 * verb or every waiting verb takes, running an action to an exit code,
 * opening the target (with the kind --kind names), and finding the requests
 * a verb is given by name or label selector.
 */
import { Command, Option } from 'commander';
import { InternalServicesError } from '../../errors.js';
import { statusCode } from '../../kube/client.js';
import { resolveKind } from './discovery.js';
import { KIND_FORMS, kindPlural } from './kind.js';
import { CliError, ExitCode, parseDurationFlag, type RequestObject } from './args-output.js';
import { apiError, forKind, openTarget, type Target, type TargetFlags } from './target.js';
import { parseRequestName, type RequestScope } from './request-name.js';

export const stderr = (line: string): void => {
  process.stderr.write(`${line}\n`);
};
export const stdout = (text: string): void => {
  process.stdout.write(text);
};

export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** --kind: which kind of request (create, wait, get, list, cancel; approve and deny say it their own way). */
export function withKindOption(cmd: Command): Command {
  return cmd.addOption(new Option('--kind <kind>', `which kind of request: ${KIND_FORMS} (default: InternalRequest)`));
}

export interface KindFlags {
  kind?: string;
}

/** --kubeconfig, --context, -n: on every subcommand, like kubectl. */
export function withTargetOptions(cmd: Command): Command {
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
export function run<A extends unknown[]>(fn: (...args: A) => Promise<number>): (...args: A) => Promise<void> {
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

/** Runs fn on the target; with --kind, on requests of the kind it names there. */
export async function withTarget<T>(flags: TargetFlags & KindFlags, fn: (t: Target) => Promise<T>): Promise<T> {
  const t = await openTarget(flags);
  try {
    return await fn(given(flags.kind) ? forKind(t, await resolveKind(t.cluster, flags.kind, t)) : t);
  } finally {
    t.close();
  }
}

/** Empty strings count as not given (a Tekton Task passes optional params as ""). */
export function given(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === '' ? undefined : v;
}

export interface WaitFlags {
  timeout?: string;
  pollInterval: string;
}

export function waitSettings(flags: WaitFlags): { timeoutMs: number; pollIntervalMs: number } {
  const timeoutMs = parseDurationFlag('--timeout', given(flags.timeout) ?? '1h');
  const pollIntervalMs = parseDurationFlag('--poll-interval', flags.pollInterval);
  if (pollIntervalMs < 100) throw new CliError('CLI_DURATION_INVALID', `--poll-interval ${flags.pollInterval} is shorter than 100ms`);
  return { timeoutMs, pollIntervalMs };
}

export function withWaitOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--timeout <duration>', 'how long to wait; when it passes the command exits 124 and the request keeps running').default('1h'))
    .addOption(new Option('--poll-interval <duration>', 'how often to check each request when watching is not possible').default('5s'));
}

export interface SelectFlags extends TargetFlags, KindFlags {
  selector?: string;
}

/**
 * Requests named on the command line (request-name.ts): their names, with
 * the namespace and (on kcp) the workspace they name set on the flags, for
 * the target. All must name one namespace and one workspace; a namespace
 * that contradicts -n is refused.
 */
export function scopedNames(refs: string[], flags: TargetFlags): string[] {
  let scope: RequestScope | undefined;
  let ns: string | undefined;
  const names: string[] = [];
  const same = (a: RequestScope, b: RequestScope) => a.kind === b.kind && (a.kind === 'workspace' ? a.path === (b as typeof a).path : a.name === (b as { name: string }).name);
  for (const ref of refs) {
    const p = parseRequestName(ref);
    if (!p.ok) throw new CliError('CLI_USAGE', p.why);
    const v = p.value;
    if (v.scope) {
      if (scope && !same(scope, v.scope)) throw new CliError('CLI_USAGE', `${refs.join(', ')} name requests in more than one workspace: give one workspace's requests at a time`);
      scope = v.scope;
    }
    if (v.namespace) {
      if (ns !== undefined && ns !== v.namespace) throw new CliError('CLI_USAGE', `${refs.join(', ')} name requests in more than one namespace: give one namespace's requests at a time`);
      ns = v.namespace;
    }
    names.push(v.name);
  }
  if (ns !== undefined) {
    if (flags.namespace && flags.namespace !== ns) throw new CliError('CLI_USAGE', `-n ${flags.namespace} contradicts the namespace ${ns} the request is named in`);
    flags.namespace = ns;
  }
  if (scope) flags.scope = scope;
  return names;
}

/** The named requests (each must exist), or those matching -l (at least one), of the target's kind. */
export async function selectRequests(t: Target, names: string[], selector: string | undefined, verb: string): Promise<RequestObject[]> {
  if (names.length > 0 && selector) throw new CliError('CLI_USAGE', `give request names or -l SELECTOR to ${verb}, not both`);
  if (names.length === 0 && !selector) throw new CliError('CLI_USAGE', `give the names of the requests to ${verb}, or -l SELECTOR`);
  const kind = t.kind.kind;
  if (selector) {
    let items: RequestObject[];
    try {
      items = (await t.requests.list(t.namespace, { labelSelector: selector })).items;
    } catch (e) {
      if (statusCode(e) === 400) throw new CliError('CLI_LABEL_INVALID', `label selector "${selector}" is not valid: ${apiError(e, t, 'list').message}`);
      throw apiError(e, t, `list ${kindPlural(kind)} in namespace "${t.namespace}"`);
    }
    if (items.length === 0) throw new CliError('CLI_REQUEST_NOT_FOUND', `no ${kindPlural(kind)} in namespace "${t.namespace}" match -l ${selector}`);
    return items.sort((a, b) => ((a.metadata.name ?? '') < (b.metadata.name ?? '') ? -1 : 1));
  }
  const out: RequestObject[] = [];
  const missing: string[] = [];
  for (const name of [...new Set(names)]) {
    let got: RequestObject | undefined;
    try {
      got = await t.requests.tryGet(t.namespace, name);
    } catch (e) {
      throw apiError(e, t, `get ${kind} ${t.namespace}/${name}`);
    }
    if (got) out.push(got);
    else missing.push(name);
  }
  if (missing.length) throw new CliError('CLI_REQUEST_NOT_FOUND', `no ${kind} ${missing.map((n) => `"${n}"`).join(', ')} in namespace "${t.namespace}"`);
  return out;
}
