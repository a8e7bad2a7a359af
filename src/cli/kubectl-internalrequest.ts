#!/usr/bin/env node
/**
 * `kubectl-internalrequest`: the requester's commands as a kubectl plugin, so
 * `kubectl internalrequest create …` works once this is on PATH (npm installs
 * it as a bin). Same subcommands and exit codes as `internal-services request`.
 */
import '../util/quiet-url-parse.js';
import { newProgram, runProgram } from './program.js';
import { reportError, requestSubcommands } from './request/commands.js';

const program = newProgram('kubectl internalrequest', 'Create InternalRequests (or, with --kind, requests of a typed kind), wait for them and get their results (Internal Services)');
for (const c of requestSubcommands()) program.addCommand(c);
void runProgram(program, process.argv, reportError);
