/**
 * Where a Node.js process allocates: preloaded into the controller with
 * `node --import …/dist/bench/alloc-profile.js` and ALLOC_PROFILE_FILE set, it
 * runs V8's sampling heap profiler for the process's whole life, keeping the
 * samples of objects that garbage collection has since freed (so it counts
 * allocation, garbage included, not only what is retained), and writes the
 * profile as JSON when the process exits. `alloc-summary.js` sums it by
 * function and by package.
 *
 * For diagnosis only: it is never part of the controller's image.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const file = process.env['ALLOC_PROFILE_FILE'];
if (file) {
  const session = new Session();
  session.connect();
  const interval = Number(process.env['ALLOC_PROFILE_INTERVAL'] ?? 32768);
  session.post('HeapProfiler.startSampling', { samplingInterval: interval, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  process.on('exit', () => {
    // An in-process session answers synchronously, so this runs before the process is gone.
    session.post('HeapProfiler.stopSampling', (err, res) => {
      if (err) process.stderr.write(`alloc-profile: ${err.message}\n`);
      else writeFileSync(file, JSON.stringify({ samplingInterval: interval, ...res }));
    });
  });
}
