/** `cancel`: deleting requests; the controller then cancels and removes their PipelineRuns. */
import { Command, Option } from 'commander';
import { CliError, combineExitCodes, ExitCode, requestRef } from './args-output.js';
import { apiError } from './target.js';
import { reportError, run, scopedNames, selectRequests, stderr, stdout, withKindOption, withTarget, withTargetOptions, type SelectFlags } from './command-base.js';

interface CancelFlags extends SelectFlags {
  ignoreNotFound?: boolean;
}

export function cancelCommand(): Command {
  const cmd = new Command('cancel')
    .description('Cancel requests by deleting them; the controller then cancels and removes their PipelineRuns')
    .argument('[names...]', 'request names: NAME, NAMESPACE/NAME, or on kcp WORKSPACE-PATH/NAMESPACE/NAME')
    .addOption(new Option('-l, --selector <selector>', 'label selector'))
    .addOption(new Option('--ignore-not-found', 'a request that does not exist is not an error'));
  withKindOption(cmd);
  withTargetOptions(cmd);
  return cmd.action(
    run(async (refs: string[], flags: CancelFlags) => {
      const names = scopedNames(refs, flags);
      return withTarget(flags, async (t) => {
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
        const kind = t.kind.kind;
        for (const name of targets) {
          try {
            const existing = await t.requests.tryGet(t.namespace, name);
            if (!existing) {
              if (!flags.ignoreNotFound) {
                stderr(`error: no ${kind} "${name}" in namespace "${t.namespace}"${flags.scope ? ` of ${flags.scope.kind === 'workspace' ? flags.scope.path : flags.scope.name}` : ''} [CLI_REQUEST_NOT_FOUND]`);
                code = ExitCode.BadInput;
              }
              continue;
            }
            await t.requests.delete(t.namespace, name, existing.metadata?.uid);
            stdout(`${requestRef({ kind, metadata: { namespace: t.namespace, name } })} cancelled (deleted)\n`);
          } catch (e) {
            code = combineExitCodes([code, reportError(apiError(e, t, `delete ${kind} ${t.namespace}/${name}`))]);
          }
        }
        return code;
      });
    }),
  );
}
