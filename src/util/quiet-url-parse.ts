/**
 * Drops one deprecation warning: DEP0169, "url.parse() behavior is not
 * standardized". @kubernetes/client-node 1.x makes its HTTP calls with
 * node-fetch 2, which calls url.parse() for every request; Node.js 24 and
 * later print the warning on stderr at a process's first API call. It would
 * then appear once in every controller log and in the stderr of every
 * requester CLI run in a pipeline Task, naming nothing the user can change.
 * This project's own code does not call url.parse()
 * (test/unit/node-support.test.ts checks); every other warning is printed
 * as before. Imported first by each entry point (src/cli/main.ts,
 * src/cli/kubectl-internalrequest.ts). Goes when client-node 2 (undici, no
 * url.parse) is adopted (docs/benchmarks.md).
 */
const emit = process.emitWarning;
process.emitWarning = function (this: NodeJS.Process, warning: string | Error, ...rest: unknown[]): void {
  const opts = rest[0];
  const code = typeof opts === 'object' && opts !== null ? (opts as { code?: unknown }).code : rest[1];
  if (code === 'DEP0169') return;
  return (emit as (this: NodeJS.Process, w: string | Error, ...r: unknown[]) => void).call(this, warning, ...rest);
} as typeof process.emitWarning;

export {};
