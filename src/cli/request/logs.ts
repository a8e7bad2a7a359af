/**
 * `logs NAME`: the logs of a request's run, read on the remote side.
 *
 * Nothing reaches into the internal network, so the requester asks and the
 * controller answers: the command sets the annotation
 * internal-services.dev/logs on the request to a new value, and the
 * controller writes the logs into the request's status.logs — from the live
 * PipelineRun while it exists, from Tekton Results once it was pruned. Who
 * may read the request may read its logs, and nobody else: they travel in
 * the request itself. Asking needs `patch` on the request.
 */
import { randomBytes } from 'node:crypto';
import { Command, Option } from 'commander';
import { CliError, ExitCode, requestRef } from './args-output.js';
import { apiError } from './target.js';
import { run, scopedNames, stderr, stdout, withKindOption, withTarget, withTargetOptions, type SelectFlags } from './command-base.js';

export const ANNOTATION_LOGS = 'internal-services.dev/logs';

interface LogsFlags extends SelectFlags {
  timeout: string;
  cached?: boolean;
}

interface LogsStatus {
  request?: string;
  source?: string;
  at?: string;
  truncated?: boolean;
  text?: string;
}

export function logsCommand(): Command {
  const cmd = new Command('logs')
    .description("Print the logs of a request's run: the controller reads them from the live PipelineRun, or from Tekton Results after it was pruned, into the request's status")
    .argument('<name>', 'request name: NAME (with -n), NAMESPACE/NAME, or on kcp WORKSPACE-PATH/NAMESPACE/NAME')
    .addOption(new Option('--timeout <seconds>', 'how long to wait for the controller to answer').default('60'))
    .addOption(new Option('--cached', 'print the logs the request already holds, without asking again'));
  withKindOption(cmd);
  withTargetOptions(cmd);
  return cmd.action(
    run(async (ref: string, flags: LogsFlags) => {
      const [name] = scopedNames([ref], flags) as [string];
      const timeoutS = Number(flags.timeout);
      if (!Number.isFinite(timeoutS) || timeoutS <= 0) throw new CliError('CLI_USAGE', `--timeout "${flags.timeout}" is not a positive number of seconds`);
      return withTarget(flags, async (t) => {
        const what = requestRef({ kind: t.kind.kind, metadata: { namespace: t.namespace, name } });
        let req;
        try {
          req = await t.requests.tryGet(t.namespace, name);
        } catch (e) {
          throw apiError(e, t, `get ${what}`);
        }
        if (!req) throw new CliError('CLI_REQUEST_NOT_FOUND', `no ${what}`);
        const current = (req.status as { logs?: LogsStatus } | undefined)?.logs;
        if (flags.cached) {
          if (!current?.text) throw new CliError('CLI_REQUEST_NOT_FOUND', `${what} holds no logs yet; ask without --cached`);
          return print(current);
        }
        const ask = `${new Date().toISOString()}-${randomBytes(3).toString('hex')}`;
        try {
          await t.requests.patchMerge(t.namespace, name, { metadata: { annotations: { [ANNOTATION_LOGS]: ask } } });
        } catch (e) {
          throw apiError(e, t, `ask for the logs of ${what} (patch its annotation ${ANNOTATION_LOGS})`);
        }
        stderr(`asked the controller for the logs of ${what}; waiting up to ${timeoutS}s`);
        const deadline = Date.now() + timeoutS * 1000;
        for (;;) {
          const now = await t.requests.tryGet(t.namespace, name).catch((e: unknown) => {
            throw apiError(e, t, `get ${what}`);
          });
          if (!now) throw new CliError('CLI_REQUEST_NOT_FOUND', `${what} was deleted while waiting for its logs`);
          const logs = (now.status as { logs?: LogsStatus } | undefined)?.logs;
          if (logs?.request === ask) return print(logs);
          if (Date.now() > deadline) {
            stderr(`error: the controller did not answer within ${timeoutS}s (is it running and does it serve namespace "${t.namespace}"?) [CLI_TIMEOUT]`);
            return ExitCode.Timeout;
          }
          await new Promise((r) => setTimeout(r, 500));
        }
      });
    }),
  );
}

function print(logs: LogsStatus): number {
  const from = logs.source === 'TektonResults' ? 'Tekton Results (the PipelineRun was pruned)' : logs.source === 'PipelineRun' ? 'the live PipelineRun' : 'nowhere';
  stderr(`logs from ${from}${logs.at ? `, read at ${logs.at}` : ''}${logs.truncated ? '; only the end fits' : ''}`);
  stdout(logs.text ?? '');
  return logs.source === 'None' ? ExitCode.Failed : ExitCode.Succeeded;
}
