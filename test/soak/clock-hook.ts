/**
 * Preloaded into every soak broker (`NODE_OPTIONS=--import …/clock-hook.ts`; the broker's code is
 * unchanged): its wall clock can be jumped. On SIGUSR2 it reads a number of milliseconds from
 * SOAK_CLOCK_FILE and from then on `Date.now()` and `new Date()` read that much off the real time.
 * The monotonic clock (`performance.now()`, timers) does not move, as on a host whose wall clock
 * NTP stepped. What of the broker then reads its own clock is listed in test/soak/README.md.
 */
import { readFileSync } from 'node:fs';

const file = process.env.SOAK_CLOCK_FILE;
if (file) {
  const RealDate = Date;
  const realNow = Date.now.bind(Date);
  let offset = 0;
  class ShiftedDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(realNow() + offset);
      else super(...(args as [number]));
    }

    static override now(): number {
      return realNow() + offset;
    }
  }
  globalThis.Date = ShiftedDate as DateConstructor;
  process.on('SIGUSR2', () => {
    try {
      offset = Number(readFileSync(file, 'utf8').trim()) || 0;
    } catch {
      offset = 0;
    }
  });
}
