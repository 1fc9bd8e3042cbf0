import { pino, type Logger } from 'pino';

/**
 * Structured logs. Nothing secret is ever passed to the logger on purpose; the redaction list is
 * the safety net for fields that could carry a token, a code or a session handle by mistake.
 */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  '*.access_token',
  '*.refresh_token',
  '*.accessToken',
  '*.refreshToken',
  '*.client_secret',
  '*.code',
  '*.code_verifier',
  '*.handoff',
  '*.session_token',
  '*.state',
];

/**
 * Lines go to `destination`, or to stdout without blocking and gathered: handed to pino's
 * asynchronous destination once 64 KB wait, else by a flush every quarter of a second. Each write
 * is a job on libuv's pool, and handing one over costs the main thread about the same whatever its
 * size (waking a pool thread: 60-80 µs on these VMs, `test/bench/profile.ts --rate`), so a busy
 * broker makes one write for some 250 lines, where it made one for every three or four requests
 * (`test/bench/threads.ts` counts them). What waits is written when the process exits, and flushed
 * where a line matters to whoever watches (start-up done, each shutdown step: `log.flush()`); a
 * process killed outright loses what was still gathered, under half a second of lines.
 */
const LOG_FLUSH_MS = 250;
const GATHER_BYTES = 65_536;

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  const options = {
    level,
    base: { service: 'baton-broker' },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  };
  return pino(options, (destination as pino.DestinationStream | undefined) ?? gathered());
}

/**
 * Lines copied into a buffer outside the JavaScript heap as they come, and the buffer handed to
 * the destination (sonic-boom, in its buffer mode) when the next line would not fit, or at the
 * quarter-second flush. sonic-boom's own `minLength` would gather them too, but it measures its
 * whole gathered string again for every line it adds (`Buffer.byteLength`), which flattens and
 * copies it: 30 % of a line's cost at 12 KB, and 6.4 KB of the 34.7 a proxied call allocated
 * (`test/bench/alloc.ts`). Gathered as strings, up to 64 KB of lines were alive at any moment, and
 * every young collection copied them: about half of what the broker's scavenges copied at half
 * load (docs/performance.md, "What survives a scavenge"). In the buffer, each line's string dies
 * as soon as it is copied.
 */
function gathered(): pino.DestinationStream & { flush(cb?: (error?: Error) => void): void } {
  let gather = Buffer.allocUnsafeSlow(GATHER_BYTES);
  let used = 0;
  const hand = (): void => {
    if (used === 0) return;
    // A new buffer each time: sonic-boom may still hold the last one, queued or being written.
    writeBytes(gather.subarray(0, used));
    gather = Buffer.allocUnsafeSlow(GATHER_BYTES);
    used = 0;
  };
  // Before the destination exists, so that these run first: pino ends it on 'beforeExit' and
  // writes it out on 'exit', and what is gathered must reach it by then.
  process.once('beforeExit', hand);
  process.once('exit', hand);
  const sink = pino.destination({ dest: 1, sync: false, contentMode: 'buffer' });
  // In buffer mode sonic-boom takes bytes, which its types do not say.
  const writeBytes = sink.write.bind(sink) as unknown as (bytes: Buffer) => boolean;
  setInterval(hand, LOG_FLUSH_MS).unref();
  return {
    write(line: string): void {
      const bytes = Buffer.byteLength(line);
      if (used + bytes > GATHER_BYTES) hand();
      if (bytes > GATHER_BYTES) writeBytes(Buffer.from(line));
      else used += gather.write(line, used);
    },
    flush(cb?: (error?: Error) => void): void {
      hand();
      sink.flush(cb);
    },
  };
}
