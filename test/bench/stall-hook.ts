/**
 * Preloaded into a server by `stalls.ts` with `node --import`: notes each garbage collection
 * (`PerformanceObserver`: start, duration, kind) and each time the loop ran more than 4 ms late
 * (a 1 ms interval), in wall-clock milliseconds, and on SIGUSR2 writes them to BENCH_STALL_FILE
 * (whole, renamed into place) as `{ gcs: [at, ms, kind][], late: [at, ms][] }`. Kinds are
 * `perf_hooks.constants.NODE_PERFORMANCE_GC_*`: 1 minor (a scavenge), 4 major (a mark-compact),
 * 8 incremental, 16 weak callbacks. The interval costs the server a wake-up a millisecond, so its
 * figures are for telling stalls apart, not for the targets.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { PerformanceObserver, performance } from 'node:perf_hooks';

const file = process.env.BENCH_STALL_FILE;
if (file) {
  const gcs: [number, number, number][] = [];
  const late: [number, number][] = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const { kind } = (entry as PerformanceEntry & { detail: { kind: number } }).detail;
      gcs.push([performance.timeOrigin + entry.startTime, entry.duration, kind]);
    }
  }).observe({ entryTypes: ['gc'] });
  let last = performance.now();
  setInterval(() => {
    const now = performance.now();
    if (now - last > 4) late.push([performance.timeOrigin + last, now - last]);
    last = now;
  }, 1).unref();
  process.on('SIGUSR2', () => {
    writeFileSync(`${file}.part`, JSON.stringify({ gcs, late }));
    renameSync(`${file}.part`, file);
  });
}
