/**
 * Preloaded into a broker with `node --import` by alloc.ts: the first SIGUSR2 starts V8's sampling
 * heap profiler, counting every allocation (also what the next scavenge or mark-sweep frees, or,
 * with BENCH_ALLOC_SURVIVORS set, only what no scavenge freed); the second stops it and writes the profile to BENCH_ALLOC_FILE.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

const file = process.env.BENCH_ALLOC_FILE;
if (file) {
  const session = new Session();
  session.connect();
  let sampling = false;
  process.on('SIGUSR2', () => {
    void (async () => {
      if (!sampling) {
        sampling = true;
        await session.post('HeapProfiler.startSampling', {
          samplingInterval: 4096,
          includeObjectsCollectedByMajorGC: true,
          // BENCH_ALLOC_SURVIVORS: only what outlived a scavenge (promoted, or still young and live).
          includeObjectsCollectedByMinorGC: !process.env.BENCH_ALLOC_SURVIVORS,
        });
        return;
      }
      // With survivors only: a scavenge first, or whatever was allocated since the last one would
      // count as surviving, dead or not (alloc.ts passes --expose-gc).
      if (process.env.BENCH_ALLOC_SURVIVORS) globalThis.gc?.({ type: 'minor', execution: 'sync' });
      const { profile } = await session.post('HeapProfiler.stopSampling');
      // Whole, or not there: the bench reads it as soon as it exists.
      writeFileSync(`${file}.part`, JSON.stringify(profile));
      renameSync(`${file}.part`, file);
    })();
  });
}
