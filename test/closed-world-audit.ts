/**
 * The closed world (issue 51) over a whole integration run: reads every
 * internal apiserver's audit log in a directory (INTERNAL_SERVICES_AUDIT_DIR,
 * or the first argument), replays each (test/audit-replay.ts) and prints
 *
 *   closed-world audit: N PipelineRuns created by the controller checked in M audit logs, 0 violations (K created by others, not checked)
 *
 * then why the others were not checked, and each violation with its log,
 * line, PipelineRun and positions. Exits 1 on a violation or an unreadable
 * line, and when it checked nothing (no log, or no PipelineRun of the
 * controller in them): a check that checked nothing must not pass. With
 * --allow-none (a run of chosen files, which may start no controller) that
 * last case is said and passes.
 *
 * Run by hack/test.sh after the last group: node dist/test/closed-world-audit.js [dir] [--allow-none]
 */
import { closeSync, existsSync, openSync, readdirSync, readSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AUDIT_DIR_ENV, SUITE_AUDIT_LOG_SUFFIX } from '../src/localenv/real/audit-policy.js';
import { AuditReplay, mergeResults, report, type ReplayResult } from './audit-replay.js';

/** The lines of a file, read in chunks (a log may be larger than a string should be); `incomplete` on a last line with no newline. */
function* linesOf(path: string): Generator<{ text: string; incomplete: boolean }> {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(1 << 20);
    let pending: Buffer[] = [];
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      let start = 0;
      for (let nl = buf.indexOf(0x0a, 0); nl >= 0 && nl < n; nl = buf.indexOf(0x0a, start)) {
        pending.push(buf.subarray(start, nl));
        yield { text: Buffer.concat(pending).toString('utf8'), incomplete: false };
        pending = [];
        start = nl + 1;
      }
      if (start < n) pending.push(Buffer.from(buf.subarray(start, n)));
    }
    if (pending.length) yield { text: Buffer.concat(pending).toString('utf8'), incomplete: true };
  } finally {
    closeSync(fd);
  }
}

export function checkDirectory(dir: string): { result: ReplayResult; logs: number } {
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(SUITE_AUDIT_LOG_SUFFIX)).sort() : [];
  const results = files.map((f) => {
    const replay = new AuditReplay(f);
    let line = 0;
    for (const l of linesOf(join(dir, f))) replay.feed(l.text, ++line, l.incomplete);
    return replay.finish();
  });
  return { result: mergeResults(results), logs: files.length };
}

function main(argv: readonly string[]): number {
  const allowNone = argv.includes('--allow-none');
  const dir = argv.find((a) => !a.startsWith('--')) ?? process.env[AUDIT_DIR_ENV];
  if (!dir) {
    console.error(`closed-world audit: no directory (give one, or set ${AUDIT_DIR_ENV})`);
    return 2;
  }
  const { result, logs } = checkDirectory(dir);
  const { lines, ok } = report(result, logs);
  for (const l of lines) console.log(l);
  if (!ok) return 1;
  if (result.checked === 0) {
    const why = logs === 0 ? `no audit log in ${dir}: no internal apiserver wrote one` : `no PipelineRun created by the controller in the ${logs} audit logs of ${dir}`;
    console.log(`closed-world audit: checked nothing (${why})${allowNone ? '; allowed for a run of chosen files' : ''}`);
    return allowNone ? 0 : 1;
  }
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) process.exitCode = main(process.argv.slice(2));
