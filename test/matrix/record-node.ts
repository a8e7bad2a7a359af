/**
 * Preloaded into every Node.js process of a matrix test file
 * (NODE_OPTIONS=--import, test/matrix/main.ts): appends "<pid> <version>
 * <execPath>" to the file MATRIX_NODE_RECORD names, so the report can say
 * which Node.js ran the test files and the processes they started. Prints
 * nothing.
 */
import { appendFileSync } from 'node:fs';

const record = process.env['MATRIX_NODE_RECORD'];
if (record) {
  try {
    appendFileSync(record, `${process.pid} ${process.version} ${process.execPath}\n`);
  } catch {
    /* the record is a report's detail; never fail a test for it */
  }
}
