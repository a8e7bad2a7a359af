/** The benchmark's floor under "ready" (bench/floor.ts): reading a streamed list without parsing it. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpuBetween, initialEventsReader } from '../../bench/floor.js';
import { bareListCell } from '../../bench/report.js';

const added = (i: number, annotations: Record<string, string> = {}) =>
  JSON.stringify({ type: 'ADDED', object: { kind: 'InternalRequest', metadata: { name: `r-${i}`, annotations } } });
const bookmark = (end: boolean) =>
  JSON.stringify({ type: 'BOOKMARK', object: { kind: 'InternalRequest', metadata: { resourceVersion: '42', annotations: end ? { 'k8s.io/initial-events-end': 'true' } : {} } } });

/** Feeds `stream` cut at `cuts`; the first answer, or undefined. */
function feed(stream: string, cuts: number[]): number | undefined {
  const read = initialEventsReader();
  let from = 0;
  for (const at of [...cuts, stream.length]) {
    const got = read(stream.slice(from, at));
    if (got !== undefined) return got;
    from = at;
  }
  return undefined;
}

test('the events before the end bookmark are counted however the stream is cut, and an object carrying the annotation is not the end', () => {
  // An object whose annotation has the marker's text, an earlier bookmark without it, events after the end.
  const stream = [added(0), added(1, { 'k8s.io/initial-events-end': 'true' }), bookmark(false), added(2), bookmark(true), added(3)].join('\n') + '\n';
  const endsAt = stream.indexOf(bookmark(true)) + bookmark(true).length + 1;
  let answered = 0;
  let notYet = 0;
  for (let a = 0; a <= stream.length; a++) {
    const got = feed(stream, [a]);
    // The bookmark and a non-end bookmark are lines too: 3 ADDED + 1 BOOKMARK before the end.
    assert.equal(got, 4, `cut at ${a}`);
    answered++;
    // Cut just before the end bookmark's newline: not the end yet.
    if (a < endsAt) {
      const read = initialEventsReader();
      if (read(stream.slice(0, a)) === undefined) notYet++;
    }
  }
  for (let a = 0; a < stream.length; a += 7) for (let b = a; b <= stream.length; b += 13) assert.equal(feed(stream, [a, b]), 4, `cuts at ${a}, ${b}`);
  assert.equal(answered, stream.length + 1);
  assert.equal(notYet, endsAt, 'every prefix before the end bookmark is whole answers nothing');
});

test('a stream without the end bookmark never answers; an empty list answers 0', () => {
  assert.equal(feed([added(0), bookmark(false)].join('\n') + '\n', [5, 40]), undefined);
  assert.equal(feed(`${bookmark(true)}\n`, [3]), 0);
});

test('the CPU between two samples, and the floor cell as printed', () => {
  assert.equal(cpuBetween({ remoteApiserver: 1.5 }, { remoteApiserver: 4.25 }, 'remoteApiserver'), 2.75);
  assert.equal(cpuBetween({}, { etcd: 3 }, 'etcd'), 0);
  assert.equal(bareListCell(undefined), '-');
  assert.equal(bareListCell({ error: 'HTTP 403' }), 'not measured: HTTP 403');
  assert.equal(bareListCell({ ms: 9100, events: 100000, megabytes: 171.2, remoteApiserverCpuSeconds: 11.3, etcdCpuSeconds: 0.4 }), '9100 (100000 requests, 171.2 MB; 11.3 / 0.4)');
});
