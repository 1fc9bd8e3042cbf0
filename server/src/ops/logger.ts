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

/** Lines are written once this many bytes have gathered, or after FLUSH_MS, whichever first. */
const BUFFER_BYTES = 4096;
const FLUSH_MS = 250;

/**
 * Standard output as the broker writes its lines: without blocking, and in batches (as nginx's
 * `access_log … buffer= flush=`): lines gather until 4 KiB or 250 ms, so a busy broker makes one
 * write call per few dozen requests, not one per request (the access line and its write were about
 * a tenth of a proxied call's CPU), and an idle one still shows each line within 250 ms. pino
 * writes what is left synchronously when the process exits (SIGTERM included); a SIGKILL loses at
 * most the last 250 ms.
 */
export function batchedOutput(fd = 1, flushMs = FLUSH_MS): pino.DestinationStream {
  const out = pino.destination({ dest: fd, sync: false, minLength: BUFFER_BYTES });
  const timer = setInterval(() => {
    try {
      out.flush();
    } catch {
      clearInterval(timer); // ended (flush throws once the stream is destroyed)
    }
  }, flushMs).unref();
  return out;
}

/** Structured logs to `destination`, or to standard output in batches (`batchedOutput`). */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  const options = {
    level,
    base: { service: 'baton-broker' },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  };
  return pino(options, (destination as pino.DestinationStream | undefined) ?? batchedOutput());
}
