/**
 * The defaults that a floor below config/ falls back on when it is built without configuration
 * (tests, tools), and that config/variables.ts gives the operator's variables: each written once,
 * here, at the bottom, so that config/ takes them from below instead of from the floors it
 * configures.
 */

/** Bytes one proxied answer may relay (PROXY_MAX_ANSWER_BYTES): connections/proxy.ts. */
export const DEFAULT_MAX_ANSWER_BYTES = 32 * 1024 * 1024;

/**
 * The bounds on what waits for delivery (EVENTS_OUTBOX_MAX, EVENTS_BACKLOG_MAX,
 * EVENTS_DEAD_LETTERS_MAX), as ops/events.ts's EventLimits says them.
 */
export const DEFAULT_EVENT_LIMITS = {
  perSession: 100,
  backlog: 100_000,
  deadLetters: 50_000,
  deadLetterRetentionMs: 30 * 24 * 3600 * 1000,
};

/** How long a session unused lives (SESSION_IDLE_TIMEOUT), and no absolute bound. */
export const DEFAULT_SESSION_LIFETIME = { idleMs: 30 * 24 * 3600 * 1000 };
