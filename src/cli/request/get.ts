/** `get` and `list` (alias `ls`): requests (of the kind --kind names) as a table, or as objects with -o json|yaml. */
import { Command, Option } from 'commander';
import { stringify as toYaml } from 'yaml';
import { PHASES } from '../../api/conditions.js';
import { statusCode } from '../../kube/client.js';
import { kindPlural } from './kind.js';
import { CliError, ExitCode, requestStateOf, requestTable, type RequestObject } from './args-output.js';
import { apiError, type Target } from './target.js';
import { run, scopedNames, selectRequests, stderr, stdout, withKindOption, withTarget, withTargetOptions, type SelectFlags } from './command-base.js';

interface GetFlags extends SelectFlags {
  output: string;
  allNamespaces?: boolean;
  awaitingApproval?: boolean;
  phase?: string;
}

function printRequests(t: Target, reqs: RequestObject[], flags: GetFlags, asList: boolean): void {
  const format = flags.output;
  if (format === 'json' || format === 'yaml') {
    const data = !asList && reqs.length === 1 ? reqs[0] : { apiVersion: 'v1', kind: 'List', items: reqs };
    stdout(format === 'json' ? `${JSON.stringify(data, null, 2)}\n` : toYaml(data));
    return;
  }
  if (reqs.length === 0) {
    stderr(`No ${kindPlural(t.kind.kind)} found${flags.allNamespaces ? '' : ` in namespace "${flags.namespace ?? ''}"`}.`);
    return;
  }
  stdout(requestTable(reqs, Date.now(), { allNamespaces: !!flags.allNamespaces, wide: format === 'wide' }));
}

function checkTableFormat(output: string): void {
  if (!['table', 'wide', 'json', 'yaml'].includes(output)) throw new CliError('CLI_OUTPUT_INVALID', `--output "${output}" is not table, wide, json or yaml`);
}

async function listRequests(t: Target, flags: GetFlags): Promise<RequestObject[]> {
  try {
    const l = await t.requests.list(flags.allNamespaces ? undefined : t.namespace, flags.selector ? { labelSelector: flags.selector } : {});
    return l.items.sort((a, b) => {
      const ka = `${a.metadata.namespace}/${a.metadata.name}`;
      const kb = `${b.metadata.namespace}/${b.metadata.name}`;
      return ka < kb ? -1 : ka > kb ? 1 : 0;
    });
  } catch (e) {
    if (statusCode(e) === 400) throw new CliError('CLI_LABEL_INVALID', `label selector "${flags.selector ?? ''}" is not valid: ${apiError(e, t, 'list').message}`);
    throw apiError(e, t, `list ${kindPlural(t.kind.kind)}${flags.allNamespaces ? ' in all namespaces' : ` in namespace "${t.namespace}"`}`);
  }
}

function addGetOptions(cmd: Command): Command {
  cmd
    .addOption(new Option('-l, --selector <selector>', 'label selector'))
    .addOption(new Option('-A, --all-namespaces', 'requests of every namespace you may list'))
    .addOption(new Option('-o, --output <format>', 'table, wide, json or yaml').default('table'));
  withKindOption(cmd);
  return withTargetOptions(cmd);
}

export function getCommand(): Command {
  const cmd = new Command('get').description('Show requests in a table (all, or by name); -o json|yaml for the objects').argument('[names...]', 'request names: NAME, NAMESPACE/NAME, or on kcp WORKSPACE-PATH/NAMESPACE/NAME (e.g. root:org:team/team/x)');
  addGetOptions(cmd);
  return cmd.action(
    run(async (names: string[], flags: GetFlags) => {
      checkTableFormat(flags.output);
      const bare = scopedNames(names, flags);
      return withTarget(flags, async (t) => {
        flags.namespace = t.namespace;
        if (names.length === 0) {
          printRequests(t, await listRequests(t, flags), flags, true);
          return ExitCode.Succeeded;
        }
        if (flags.selector || flags.allNamespaces) throw new CliError('CLI_USAGE', 'give request names or -l/-A, not both');
        const reqs = await selectRequests(t, bare, undefined, 'get');
        printRequests(t, reqs, flags, names.length > 1);
        return ExitCode.Succeeded;
      });
    }),
  );
}

export function listCommand(): Command {
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
        printRequests(t, phase ? all.filter((r) => requestStateOf(r) === phase) : all, flags, true);
        return ExitCode.Succeeded;
      });
    }),
  );
}
