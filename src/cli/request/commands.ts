/**
 * The requester's commands: `internal-services request <cmd>` and, with the
 * same subcommands, `kubectl internalrequest <cmd>` (kubectl-internalrequest.ts),
 * for InternalRequests and, with --kind, for requests of typed kinds (kind.ts,
 * discovery.ts; a typed kind's spec comes from fields.ts).
 * One module per group of verbs: create.ts, wait.ts, get.ts (get, list),
 * cancel.ts, logs.ts, verify.ts (the attestation of Tekton Chains), approve-deny.ts
 * (approve, deny); what they share (options, output,
 * running an action to an exit code) is in command-base.ts, the pure parts in
 * args-output.ts, the waiting in waiter.ts.
 *
 * stdout carries only data (results, names, tables); progress and errors go
 * to stderr, one line each, so `$(…)` in a pipeline step gets exactly the
 * result. Exit codes: see ExitCode in args-output.ts.
 */
import { Command } from 'commander';
import { decideCommand } from './approve-deny.js';
import { cancelCommand } from './cancel.js';
import { createCommand } from './create.js';
import { getCommand, listCommand } from './get.js';
import { verifyCommand } from './verify.js';
import { waitCommand } from './wait.js';
import { logsCommand } from './logs.js';

export { reportError } from './command-base.js';
export { buildRequest, buildTypedRequest, idempotencyLabelValue, typedRequestBody } from './create.js';

/** The subcommands, configured to throw CommanderError (exit 2) instead of exiting on bad flags. */
export function requestSubcommands(): Command[] {
  return [createCommand(), waitCommand(), getCommand(), listCommand(), cancelCommand(), logsCommand(), verifyCommand(), decideCommand('Approved'), decideCommand('Denied')].map((c) =>
    c.exitOverride().configureOutput({ writeErr: (s) => process.stderr.write(s) }).showHelpAfterError(false),
  );
}

/** `internal-services request …` */
export function requestCommand(): Command {
  const cmd = new Command('request')
    .description("The requester's side: create InternalRequests (or, with --kind, requests of a typed kind) on the remote cluster, wait for them, get their results")
    .exitOverride();
  for (const c of requestSubcommands()) cmd.addCommand(c);
  return cmd;
}
