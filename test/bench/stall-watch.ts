/**
 * Who stopped, when a command went unanswered for a second: every 50 ms, this process's event loop
 * (a timer late) and the main thread of each watched process (its `schedstat`: time on a CPU, and
 * time runnable but queued for one) are read, and every stretch of `thresholdMs` or more in which
 * one of them did not get on with its work is kept, with how much of it was spent running (its own
 * work: a long command, a collection) and how much waiting for a core (the host's doing).
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

export interface Stall {
  /** When the stretch ended, ms since the watch started. */
  atMs: number;
  /** `bench` (this process's loop) or a watched process's name. */
  who: string;
  /** The phase the caller named (`label`) when it ended. */
  phase: string;
  /** How long it lasted (the loop's lateness; for a process, the sample's span). */
  ms: number;
  /** Of that, on a CPU, and queued for one. */
  runningMs: number;
  queuedMs: number;
}

/** A main thread's time on a CPU and queued for one, ns; NaN where it cannot be read. */
function schedstat(pid: number): { running: number; queued: number } {
  try {
    const [running, queued] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'latin1')
      .split(' ')
      .map(Number);
    return { running: running ?? NaN, queued: queued ?? NaN };
  } catch {
    return { running: NaN, queued: NaN };
  }
}

export interface StallWatch {
  /** The phase later stalls are put down to. */
  label(phase: string): void;
  /** Stops watching: every stall seen. */
  stop(): Stall[];
}

/**
 * Watches this process and `pids()` (read at every sample: a restarted broker has a new pid). A
 * process counts as stalled in a sample when it was queued for `thresholdMs` or more of it, or ran
 * that long in one go (more than 90 % of a sample that long).
 */
export function watchStalls(
  pids: () => Record<string, number>,
  thresholdMs = 250,
  intervalMs = 50,
): StallWatch {
  const started = performance.now();
  const stalls: Stall[] = [];
  let phase = '';
  let last = performance.now();
  let lastSelf = schedstat(process.pid);
  const lastOf = new Map<string, { pid: number; running: number; queued: number }>();
  const tick = (): void => {
    const now = performance.now();
    const atMs = now - started;
    const span = now - last;
    const self = schedstat(process.pid);
    const late = span - intervalMs;
    if (late >= thresholdMs)
      stalls.push({
        atMs,
        who: 'bench',
        phase,
        ms: late,
        runningMs: (self.running - lastSelf.running) / 1e6,
        queuedMs: (self.queued - lastSelf.queued) / 1e6,
      });
    last = now;
    lastSelf = self;
    for (const [who, pid] of Object.entries(pids())) {
      const stat = schedstat(pid);
      const before = lastOf.get(who);
      lastOf.set(who, { pid, ...stat });
      if (!before || before.pid !== pid) continue;
      const runningMs = (stat.running - before.running) / 1e6;
      const queuedMs = (stat.queued - before.queued) / 1e6;
      if (queuedMs >= thresholdMs || (runningMs >= thresholdMs && runningMs > 0.9 * span))
        stalls.push({ atMs, who, phase, ms: span, runningMs, queuedMs });
    }
  };
  const timer = setInterval(tick, intervalMs);
  return {
    label(next) {
      phase = next;
    },
    stop() {
      clearInterval(timer);
      return stalls;
    },
  };
}
