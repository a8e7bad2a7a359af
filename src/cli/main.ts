#!/usr/bin/env node
/** The `internal-services` command. */
import { Command, CommanderError } from 'commander';
import { controllerCommand } from './controller.js';
import { requestCommand } from './request/commands.js';
import { localCommand } from './local.js';
import { InternalServicesError } from '../errors.js';

/** Errors are reported on exactly one line. */
function oneLine(s: string): string {
  return s.split('\n')[0]!.trim();
}

export async function main(argv: string[]): Promise<number> {
  const program = new Command('internal-services')
    .description('Internal Services: run Pipelines of a private cluster for InternalRequests of a remote cluster')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) })
    .showHelpAfterError(false);
  program.addCommand(controllerCommand().exitOverride());
  program.addCommand(requestCommand());
  program.addCommand(localCommand().exitOverride());
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) {
      // commander has printed its one-line message already
      return e.exitCode === 0 ? 0 : 2;
    }
    if (e instanceof InternalServicesError) {
      process.stderr.write(`error: ${oneLine(e.message)} [${e.code}]\n`);
      return 1;
    }
    process.stderr.write(`error: ${oneLine(e instanceof Error ? e.message : String(e))}\n`);
    return 1;
  }
}

main(process.argv).then(
  (code) => {
    if (code !== 0) process.exit(code);
  },
  (e) => {
    process.stderr.write(`error: ${String(e)}\n`);
    process.exit(1);
  },
);
