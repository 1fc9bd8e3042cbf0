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
 * Lines go to `destination`, or to stdout without blocking and gathered (pino's asynchronous
 * logging): written once 12 KB wait, else by a flush every quarter of a second. A busy broker then
 * makes one write for some forty lines, where it made one for every three or four requests,
 * each a job on libuv's pool (`test/bench/threads.ts` shows it). What waits is written when the
 * process exits, and flushed where a line matters to whoever watches (start-up done, each
 * shutdown step: `log.flush()`); a process killed outright loses what was still gathered, under
 * half a second of lines.
 */
const LOG_FLUSH_MS = 250;

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  const options = {
    level,
    base: { service: 'baton-broker' },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  };
  return pino(
    options,
    (destination as pino.DestinationStream | undefined) ??
      pino.destination({ dest: 1, sync: false, minLength: 12_288, periodicFlush: LOG_FLUSH_MS }),
  );
}
