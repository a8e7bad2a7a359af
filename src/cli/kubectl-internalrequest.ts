#!/usr/bin/env node
/**
 * `kubectl-internalrequest`: the requester's commands as a kubectl plugin, so
 * `kubectl internalrequest create …` works once this is on PATH (npm installs
 * it as a bin). Same subcommands and exit codes as `internal-services request`.
 */
import { Command, CommanderError } from 'commander';
import { reportError, requestSubcommands } from './request/commands.js';

export async function main(argv: string[]): Promise<number> {
  const program = new Command('kubectl internalrequest')
    .description('Create InternalRequests, wait for them and get their results (Internal Services)')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) })
    .showHelpAfterError(false);
  for (const c of requestSubcommands()) program.addCommand(c);
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
    return reportError(e);
  }
}

main(process.argv).then(
  (code) => {
    if (code !== 0) process.exitCode = code;
  },
  (e) => {
    process.stderr.write(`error: ${String(e)}\n`);
    process.exit(1);
  },
);
