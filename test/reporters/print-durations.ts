/**
 * Prints the per-file durations that file-durations.ts appended to a file
 * (JSON lines) over several `node --test` runs, as one table, slowest first.
 * Usage: node dist/test/reporters/print-durations.js FILE
 */
import { readFileSync } from 'node:fs';
import { durationTable, type DurationRow } from './file-durations.js';

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: print-durations FILE\n');
  process.exit(2);
}
const rows = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as DurationRow);
if (rows.length) process.stdout.write(`\nPer-file durations (wall time, files one at a time):\n${durationTable(rows)}\n`);
