/**
 * Preloaded into the broker under test with `node --import` (the broker's code is unchanged): it
 * samples the event-loop delay and writes `{ p50, p99, max, onCpuP99, onCpuMax }` (ms) to
 * BENCH_ELD_FILE every second. SIGUSR2 resets the histograms (the bench sends it at the end of the
 * warm-up).
 *
 * `p50`, `p99`, `max`: `monitorEventLoopDelay`, which records the time between two ticks of a 10 ms
 * timer; the resolution is subtracted, so 0 means the loop was never late.
 *
 * `onCpuP99`, `onCpuMax`: how much of that lateness the loop can have spent running rather than
 * waiting for a core. A second 10 ms timer, started by the first SIGUSR2, reads the main thread's
 * scheduler accounting (`/proc/<pid>/task/<pid>/schedstat`: time on a CPU, time runnable but queued)
 * at every tick, and records min(late, on-CPU time since the last tick): an upper bound of the
 * delay the process's own work (JavaScript, collections) caused, whatever other processes on a busy
 * host did to it. Time the hypervisor takes from the guest still counts as on-CPU, so the bound
 * stays an upper one.
 *
 * `heap`: the young generation's size (what V8 has committed to it), what the rest of the heap
 * holds and has committed, and what lives outside the heap (Buffers, ArrayBuffers), in MB, so that
 * a step of the process's RSS can be told from a leak: V8 grows the young generation in steps of
 * tens of MB under a steady load, and lets garbage build up in the old space until its next
 * collection, which a leak does not explain.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createHistogram, monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';

/** The young generation's committed size, the rest's used and committed, the external, in MB. */
function heapMb() {
  let young = 0;
  let old = 0;
  let oldCommitted = 0;
  for (const space of getHeapSpaceStatistics()) {
    if (space.space_name === 'new_space') young = space.space_size;
    else {
      old += space.space_used_size;
      oldCommitted += space.space_size;
    }
  }
  const mb = (bytes: number) => bytes / 2 ** 20;
  const { external } = process.memoryUsage();
  return {
    youngMb: mb(young),
    oldMb: mb(old),
    oldCommittedMb: mb(oldCommitted),
    externalMb: mb(external),
  };
}

const file = process.env.BENCH_ELD_FILE;
if (file) {
  const resolutionMs = 10;
  const histogram = monitorEventLoopDelay({ resolution: resolutionMs });
  histogram.enable();

  const schedstat = `/proc/${process.pid}/task/${process.pid}/schedstat`;
  /** Nanoseconds the main thread has spent on a CPU; NaN where the kernel keeps no schedstat. */
  const onCpuNs = (): number => {
    try {
      return Number(readFileSync(schedstat, 'latin1').split(' ')[0]);
    } catch {
      return NaN;
    }
  };
  const onCpu = createHistogram(); // microseconds; a histogram records integers of at least 1
  let lastAt = NaN;
  let lastCpu = NaN;
  const tick = (): void => {
    const at = performance.now();
    const cpu = onCpuNs();
    const lateMs = at - lastAt - resolutionMs;
    const ranMs = (cpu - lastCpu) / 1e6;
    onCpu.record(Math.max(1, Math.round(Math.min(lateMs, ranMs) * 1000)));
    lastAt = at;
    lastCpu = cpu;
    setTimeout(tick, resolutionMs).unref();
  };

  // The split starts at the first reset: S1 sends none, so its CPU figures carry no /proc reads.
  process.on('SIGUSR2', () => {
    histogram.reset();
    onCpu.reset();
    if (!Number.isNaN(lastAt)) return;
    lastAt = performance.now();
    lastCpu = onCpuNs();
    if (!Number.isNaN(lastCpu)) setTimeout(tick, resolutionMs).unref();
  });
  setInterval(() => {
    const ms = (ns: number) => Math.max(0, ns / 1e6 - resolutionMs);
    const us = (value: number) => (value <= 1 ? 0 : value / 1000);
    // Whole, or not there: the bench reads it while the soak runs.
    writeFileSync(
      `${file}.part`,
      JSON.stringify({
        p50: ms(histogram.percentile(50)),
        p99: ms(histogram.percentile(99)),
        max: ms(histogram.max),
        count: histogram.count,
        ...(onCpu.count > 0 && { onCpuP99: us(onCpu.percentile(99)), onCpuMax: us(onCpu.max) }),
        heap: heapMb(),
      }),
    );
    renameSync(`${file}.part`, file);
  }, 1000).unref();
}
