/**
 * Preloaded into the broker under test with `node --import` (the broker's code is unchanged): it
 * samples the event-loop delay and writes `{ p50, p99, max }` (ms) to BENCH_ELD_FILE every second.
 * SIGUSR2 resets the histogram (the bench sends it at the end of the warm-up). The histogram
 * records the time between two ticks of a 10 ms timer, so the resolution is subtracted: 0 means
 * the loop was never late.
 */
import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const file = process.env.BENCH_ELD_FILE;
if (file) {
  const resolutionMs = 10;
  const histogram = monitorEventLoopDelay({ resolution: resolutionMs });
  histogram.enable();
  process.on('SIGUSR2', () => histogram.reset());
  setInterval(() => {
    const ms = (ns: number) => Math.max(0, ns / 1e6 - resolutionMs);
    writeFileSync(
      file,
      JSON.stringify({
        p50: ms(histogram.percentile(50)),
        p99: ms(histogram.percentile(99)),
        max: ms(histogram.max),
        count: histogram.count,
      }),
    );
  }, 1000).unref();
}
