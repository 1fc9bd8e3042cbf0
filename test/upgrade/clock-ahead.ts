/**
 * Preloaded into a broker process of the recording (`node --import`), whose release has no clock
 * to inject: its Date.now, the clock its event delivery reads, runs CLOCK_AHEAD_MS ahead. So
 * record.ts has that release give up on an event (24 h after its first attempt) and write a dead
 * letter as it would, without waiting a day. Never loaded by a test.
 */
const ahead = Number(process.env.CLOCK_AHEAD_MS);
if (!Number.isFinite(ahead)) throw new Error('CLOCK_AHEAD_MS must be a number of milliseconds');
const realNow = Date.now;
Date.now = () => realNow() + ahead;
