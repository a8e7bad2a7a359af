#!/usr/bin/env node
/** The `internal-services` command. */
import '../util/quiet-url-parse.js';
import { controllerCommand } from './controller-command.js';
import { requestCommand } from './request/commands.js';
import { localCommand } from './local.js';
import { kindsCommand } from './kinds.js';
import { migrateCommand } from './migrate.js';
import { newProgram, runProgram } from './program.js';
import { InternalServicesError } from '../errors.js';
import { nodeSupport } from '../util/node-support.js';

/** Errors are reported on exactly one line. */
function oneLine(s: string): string {
  return s.split('\n')[0]!.trim();
}

function report(e: unknown): number {
  if (e instanceof InternalServicesError) process.stderr.write(`error: ${oneLine(e.message)} [${e.code}]\n`);
  else process.stderr.write(`error: ${oneLine(e instanceof Error ? e.message : String(e))}\n`);
  return 1;
}

// A Node.js line past its end of life still runs this (engines >= 20.18),
// with a warning: on a terminal here (scripts that read stderr see none; set
// INTERNAL_SERVICES_NODE_WARNING=on to have it anyway), and in the
// controller's start-up log always (controller-command.ts).
const support = nodeSupport(process.version);
const warnNode = process.env['INTERNAL_SERVICES_NODE_WARNING'] === 'on' || (process.stderr.isTTY && process.env['INTERNAL_SERVICES_NODE_WARNING'] !== 'off');
if (support.warning && warnNode) process.stderr.write(`warning: ${support.warning}\n`);

const program = newProgram('internal-services', 'Internal Services: run Pipelines of a private cluster for InternalRequests of a remote cluster');
program.addCommand(controllerCommand().exitOverride());
program.addCommand(requestCommand());
program.addCommand(localCommand().exitOverride());
program.addCommand(kindsCommand());
program.addCommand(migrateCommand());
void runProgram(program, process.argv, report);
