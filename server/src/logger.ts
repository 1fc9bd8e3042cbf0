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

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  const options = {
    level,
    base: { service: 'baton-broker' },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  };
  return destination ? pino(options, destination as pino.DestinationStream) : pino(options);
}
