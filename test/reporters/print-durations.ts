/**
 * Prints the per-file durations that file-durations.ts appended to a file
 * (JSON lines) over several `node --test` runs, as one table, slowest first,
 * then every failed test again with its error, so that the end of a long CI
 * log names what failed.
 * Usage: node dist/test/reporters/print-durations.js FILE
 */
import { readFileSync } from 'node:fs';
import { durationTable, failureList, type DurationRow, type FailureRow } from './file-durations.js';

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: print-durations FILE\n');
  process.exit(2);
}
const all = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as DurationRow | FailureRow);
const rows = all.filter((r): r is DurationRow => 'seconds' in r);
const failures = all.filter((r): r is FailureRow => 'failure' in r);
if (rows.length) process.stdout.write(`\nPer-file durations (wall time, files one at a time):\n${durationTable(rows)}\n`);
process.stdout.write(failureList(failures));
