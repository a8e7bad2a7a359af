/**
 * `wait` and the waiting that `create` shares with it: progress lines on
 * stderr while requests run, one line for each that is gone or timed out,
 * and each request's outcome (the exit code follows from it).
 */
import { Command, Option } from 'commander';
import { idempotencyKeyOf } from '../../requests/idempotency.js';
import { formatDuration, parseDuration } from '../../util/duration.js';
import {
  combineExitCodes,
  exitCodeFor,
  ExitCode,
  formatResults,
  formatResultsByName,
  isInternalRequest,
  requestStateOf,
  parseOutput,
  progressKey,
  progressLine,
  requestRef,
  resultsOf,
  type FinalState,
  type RequestObject,
} from './args-output.js';
import type { Target } from './target.js';
import { waitForRequests, type Tracked } from './waiter.js';
import { run, scopedNames, selectRequests, stderr, stdout, waitSettings, withKindOption, withTarget, withTargetOptions, withWaitOptions, type SelectFlags, type WaitFlags } from './command-base.js';

/**
 * Waits with progress lines; prints final lines for requests that ended,
 * an error line for those gone or timed out; returns each request's outcome.
 */
export async function waitWithProgress(t: Target, initial: RequestObject[], flags: WaitFlags, printInitial: boolean): Promise<Array<{ tracked: Tracked; outcome: FinalState }>> {
  const { timeoutMs, pollIntervalMs } = waitSettings(flags);
  const started = Date.now();
  for (const r of initial) {
    // Giving up before the run can time out is how work ends up done twice: say so.
    // (A typed kind's timeouts are its RequestDefinition's, not in the request.)
    if (!isInternalRequest(r)) continue;
    const t = r.spec?.timeouts?.pipeline ?? r.spec?.pipeline?.timeouts?.pipeline;
    const ms = t ? parseDuration(t) : undefined;
    if (ms !== undefined && ms > timeoutMs) {
      stderr(
        `warning: --timeout ${formatDuration(timeoutMs)} is shorter than the pipeline timeout ${t} of ${requestRef(r)}: if this command gives up, the request keeps running; ` +
          `a retry should use --idempotency-key${idempotencyKeyOf(r) ? ' (this one has one)' : ''} so that the work is not done twice`,
      );
    }
  }
  const last = new Map<string, string>();
  const report = (r: RequestObject): void => {
    const key = progressKey(r);
    const name = r.metadata.name ?? '';
    if (last.get(name) === key) return;
    last.set(name, key);
    stderr(progressLine(r));
  };
  for (const r of initial) {
    if (printInitial) report(r);
    else last.set(r.metadata.name ?? '', progressKey(r));
  }
  const tracked = await waitForRequests(t, initial, {
    deadline: started + timeoutMs,
    pollIntervalMs,
    onUpdate: report,
    onGone: () => {},
    onNote: (m) => stderr(`note: ${m}`),
  });
  return tracked.map((x) => {
    if (x.gone) {
      stderr(`error: ${requestRef(x.request)} was deleted while waiting for it [CLI_REQUEST_GONE]`);
      return { tracked: x, outcome: 'Gone' as const };
    }
    const o = requestStateOf(x.request);
    if (o === 'Succeeded' || o === 'Failed' || o === 'Rejected') return { tracked: x, outcome: o };
    stderr(`error: timed out after ${formatDuration(timeoutMs)} waiting for ${requestRef(x.request)} (${progressLine(x.request).replace(/^[^:]*: /, '')}); it keeps running [CLI_WAIT_TIMEOUT]`);
    return { tracked: x, outcome: 'Timeout' as const };
  });
}

interface WaitCmdFlags extends SelectFlags, WaitFlags {
  output: string;
}

export function waitCommand(): Command {
  const cmd = new Command('wait')
    .description('Wait for existing requests (by name, or all matching -l) to finish; exit 0 only if all succeed')
    .argument('[names...]', 'request names: NAME, NAMESPACE/NAME, or on kcp WORKSPACE-PATH/NAMESPACE/NAME')
    .addOption(new Option('-l, --selector <selector>', 'label selector, e.g. release=r1,app=x'))
    .addOption(new Option('-o, --output <format>', 'results on stdout: json, yaml, or value=KEY (one request only); several requests print {name: results}').default('json'));
  withWaitOptions(cmd);
  withKindOption(cmd);
  withTargetOptions(cmd);
  return cmd.action(
    run(async (names: string[], flags: WaitCmdFlags) => {
      const output = parseOutput(flags.output);
      waitSettings(flags);
      const bare = scopedNames(names, flags);
      return withTarget(flags, async (t) => {
        const reqs = await selectRequests(t, bare, flags.selector, 'wait for');
        const single = names.length === 1 && !flags.selector;
        if (!single && output.format === 'value') formatResultsByName({}, output); // throws: value=KEY needs one request
        const results = await waitWithProgress(t, reqs, flags, true);
        const code = combineExitCodes(results.map((r) => exitCodeFor(r.outcome)));
        if (code === ExitCode.Succeeded) {
          if (single) stdout(formatResults(resultsOf(results[0]!.tracked.request), output));
          else stdout(formatResultsByName(Object.fromEntries(results.map((r) => [r.tracked.name, resultsOf(r.tracked.request)])), output));
        }
        return code;
      });
    }),
  );
}
