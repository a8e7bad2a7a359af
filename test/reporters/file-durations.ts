/**
 * A node:test reporter that gives, when the run ends, how long each test
 * file took (wall time from the runner taking the file up to its last event;
 * files run one at a time) and how many of its tests passed and failed, slowest first: printed,
 * or with TEST_DURATIONS_FILE set, appended there as JSON lines for
 * print-durations.ts to print once for several runs (hack/test.sh runs the
 * suite as several `node --test` invocations). docs/testing.md keeps the
 * figures of a cold CI run.
 */
import { appendFileSync } from 'node:fs';
import { relative } from 'node:path';
import { inspect } from 'node:util';

interface TestEvent {
  type: string;
  data?: { file?: string; name?: string; nesting?: number; details?: { duration_ms?: number; error?: unknown } };
}

/**
 * A failed test, repeated after the table: a CI log is often read from its
 * end, and the spec reporter's account of a failure can be thousands of
 * lines above it.
 */
export interface FailureRow {
  failure: string;
  file: string;
  error: string;
}

/** The error's own text, its head and tail kept within `limit` characters (node wraps it in ERR_TEST_FAILURE; its cause is the test's). */
export function failureText(error: unknown, limit = 4000): string {
  const inner = error instanceof Error && error.cause !== undefined ? error.cause : error;
  const text = inspect(inner, { depth: 4, breakLength: 120 });
  if (text.length <= limit) return text;
  // The head names the assertion; the tail is where a child process's output says why it stopped.
  const head = Math.floor(limit / 3);
  return `${text.slice(0, head)}\n… (${text.length - limit} characters left out; the whole is in the log above) …\n${text.slice(text.length - (limit - head))}`;
}

export function failureList(rows: FailureRow[]): string {
  if (!rows.length) return '';
  const lines = [`\nFailed tests (${rows.length}), repeated from above:`];
  for (const r of rows) lines.push(`\n✖ ${r.file}: ${r.failure}`, ...r.error.split('\n').map((l) => `    ${l}`));
  return `${lines.join('\n')}\n`;
}

interface FileTimes {
  first: number;
  last: number;
  passed: number;
  failed: number;
}

export interface DurationRow {
  file: string;
  seconds: number;
  passed: number;
  failed: number;
}

export function durationRows(files: Map<string, FileTimes>, cwd = process.cwd()): DurationRow[] {
  return [...files].map(([file, t]) => ({ file: relative(cwd, file), seconds: (t.last - t.first) / 1000, passed: t.passed, failed: t.failed }));
}

export function durationTable(unsorted: DurationRow[]): string {
  const rows = [...unsorted].sort((a, b) => b.seconds - a.seconds);
  const total = rows.reduce((s, r) => s + r.seconds, 0);
  const width = Math.max(4, ...rows.map((r) => r.file.length));
  const lines = [`${'file'.padEnd(width)}  seconds  passed  failed`];
  for (const r of rows) lines.push(`${r.file.padEnd(width)}  ${r.seconds.toFixed(1).padStart(7)}  ${String(r.passed).padStart(6)}  ${String(r.failed).padStart(6)}`);
  lines.push(`${'all files'.padEnd(width)}  ${total.toFixed(1).padStart(7)}  ${String(rows.reduce((s, r) => s + r.passed, 0)).padStart(6)}  ${String(rows.reduce((s, r) => s + r.failed, 0)).padStart(6)}`);
  return lines.join('\n');
}

export default async function* fileDurations(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const files = new Map<string, FileTimes>();
  const failures: FailureRow[] = [];
  for await (const event of source) {
    const file = event.data?.file;
    if (!file) continue;
    const now = Date.now();
    let t = files.get(file);
    if (!t) files.set(file, (t = { first: now, last: now, passed: 0, failed: 0 }));
    // Every file is enqueued when the run starts; it starts when the runner dequeues the file itself.
    if (event.type === 'test:dequeue' && (event.data as { name?: string }).name === file) t.first = now;
    t.last = now;
    // Tests, not suites or the file itself: the innermost level that reports pass/fail with a duration.
    if (event.type === 'test:pass' && isLeaf(event)) t.passed++;
    if (event.type === 'test:fail' && isLeaf(event)) {
      t.failed++;
      failures.push({ failure: event.data?.name ?? '(unnamed)', file: relative(process.cwd(), file), error: failureText(event.data?.details?.error) });
    }
  }
  const out = process.env['TEST_DURATIONS_FILE'];
  if (out) {
    appendFileSync(out, [...durationRows(files), ...failures].map((r) => `${JSON.stringify(r)}\n`).join(''));
    return;
  }
  yield `\nPer-file durations (wall time, files one at a time):\n${durationTable(durationRows(files))}\n${failureList(failures)}`;
}

/** A test, not a describe() block: node reports suites with details.type "suite". */
function isLeaf(event: TestEvent): boolean {
  return (event.data?.details as { type?: string } | undefined)?.type !== 'suite';
}
