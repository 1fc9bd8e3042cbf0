/**
 * Everything a soak run saw, on one clock (ms since the run started, monotonic): what the users
 * did and got back, what the provider saw (the tap's token and API requests), what the receiver
 * got, what the nemesis did, and what the brokers and Redis held at the end. The checker
 * (checker.ts) reads nothing else, so a history made up by hand checks as a real one does.
 */
import type { Delivery } from './event-log.ts';

export type License = 'lic-1001' | 'lic-1002' | 'lic-2001';

/** A session as its user knew it: `label` names it in the report, never its token. */
export interface SessionRecord {
  label: string;
  user: number;
  /** The Standard Webhooks events' `session.ref` (derived from the session id). */
  ref: string;
  created: number;
  /** DELETE /session was sent, and acknowledged (204) at `signedOut`. */
  signOutSent?: number;
  signedOut?: number;
  /** The user learnt the session was gone without signing out (401 invalid_session). */
  lost?: number;
}

/** One proxied API call. */
export interface CallRecord {
  user: number;
  session: string;
  connection: string;
  license: License;
  instance: number;
  path: 'users.me' | 'echo';
  start: number;
  end: number;
  /** 0: no HTTP answer (refused, reset, timed out). */
  status: number;
  /** The Baton-Error header: the broker's own error, and its code. */
  error?: string;
  retryAfter?: string;
  /** users.me: the license and account whose data came back. */
  gotLicense?: string;
  gotEmail?: string;
  /** echo: the grant (chain) of the access token the license API received; null: unknown token. */
  gotChain?: string | null;
  /** Made this long after its session's sign-out was acknowledged. */
  afterSignOut?: number;
}

/** An authorization through the broker (start, the provider's pages, callback, POST /session). */
export interface FlowRecord {
  user: number;
  /** The session it joined, or the one it made. */
  session: string;
  license: License;
  start: number;
  end: number;
  /** The instances of /auth/start, the callback and POST /session. */
  via: [number, number, number];
  /** The authorization code: the chain of the grant it starts. */
  code?: string;
  connection?: string;
  /**
   * created: a new connection; reconnected: a license already in the session authorized again
   * (it kept its id); failed: no connection came of it; unknown: POST /session had no answer;
   * prefilled: written into Redis before the run (prefill.ts), no event of its own.
   */
  outcome: 'created' | 'reconnected' | 'failed' | 'unknown' | 'prefilled';
  step?: string;
  status?: number;
  error?: string;
  /** It was sent with a session token (to join that session). */
  joined: boolean;
  /** The session token it was sent with no longer named a session: a new one was made. */
  sessionReplaced?: string;
}

/** DELETE /connections/:id. */
export interface RemovalRecord {
  user: number;
  session: string;
  connection: string;
  instance: number;
  start: number;
  end: number;
  status: number;
  error?: string;
}

/** DELETE /session. */
export interface SignOutRecord {
  user: number;
  session: string;
  instance: number;
  start: number;
  end: number;
  status: number;
  error?: string;
  /** The connections the user knew of. */
  connections: string[];
}

/** The provider revoked grants: one (the tap), or every grant of a license (the sandbox). */
export interface RevocationRecord {
  at: number;
  by: 'tap' | 'sandbox';
  chain?: string;
  license?: License;
}

/** One fault of the nemesis, from its injection to its heal. */
export interface FaultRecord {
  seq: number;
  kind: string;
  target: string;
  start: number;
  /** When the heal began, and when it was done (the part healthy again). */
  healStart?: number;
  healed?: number;
  /** Sentinel or Cluster: a new master took writes this long after the fault. */
  failoverMs?: number;
  /** A broker instance the fault was on (for "the other instances are unaffected"). */
  instance?: number;
  note?: string;
}

/** One broker process's life. */
export interface BrokerLife {
  instance: number;
  pid: number;
  started: number;
  /** When its stop signal went (SIGTERM: it drains first). */
  stopping?: number;
  ended?: number;
  how?: 'SIGKILL' | 'SIGTERM';
}

/** A broker that exited while starting, instead of listening: when, and the lines it ended on. */
export interface FailedStart {
  instance: number;
  at: number;
  reason: string;
}

/** A broker process stopped (SIGSTOP) from `from` to `to`. */
export interface PauseRecord {
  instance: number;
  pid: number;
  from: number;
  to?: number;
}

/** What an instance answered for a connection at the end, after the quiet period. */
export interface ConnectionProbe {
  session: string;
  connection: string;
  license: License;
  instance: number;
  /** GET /connections's status for it: connected, disconnected, or absent from the list. */
  listed: 'connected' | 'disconnected' | 'absent' | 'unanswered';
  reason?: string;
  /** users.me through it. */
  status: number;
  error?: string;
  gotLicense?: string;
}

/** What an instance answered for a session at the end (GET /connections). */
export interface SessionProbe {
  session: string;
  instance: number;
  status: number;
  error?: string;
}

/** Redis at the end, after everyone signed out, against the baseline taken before the users came. */
export interface RedisEnd {
  /** storage-keys.ts's survey: kinds of key undocumented or without a TTL, per master. */
  problems: string[];
  /** Keys of a session (hash tag a session id) still there, by kind. */
  sessionKeys: Record<string, number>;
  /** The first of them: which session's, its kind, its TTL. */
  leftBehind: string[];
  /**
   * Outboxes still holding events when the soak stopped waiting for delivery (three minutes after
   * everyone signed out): which session's, how many, the head's type, whether it is scheduled.
   */
  undelivered: string[];
  /** The masters' used_memory_dataset before the users came, its short-lived keys' bytes taken out. */
  baselineBytes: number;
  finalBytes: number;
  /** Keys shared by sessions that end within 11 minutes (state claims, rate limits), MEMORY USAGE. */
  expiringBytes: number;
  keys: number;
  /** TTLs of the sessions no user had were looked at for one in this many (a prefilled store). */
  ttlSample?: number;
}

/** A broker's log line, with the instance and life it came from. */
export interface LogLine {
  instance: number;
  pid: number;
  line: string;
}

export interface History {
  seed: string;
  topology: string;
  /** The epoch time (Date.now()) at the soak clock's 0: the brokers' log lines' times are epoch. */
  epoch: number;
  /** When the users started and stopped, the nemesis's last heal, the end of the quiet period. */
  phases: { usersFrom: number; usersTo: number; healedAt: number; quietUntil: number };
  lifetimeS: number;
  leaseMs: number;
  sessions: SessionRecord[];
  calls: CallRecord[];
  flows: FlowRecord[];
  removals: RemovalRecord[];
  signOuts: SignOutRecord[];
  revocations: RevocationRecord[];
  faults: FaultRecord[];
  lives: BrokerLife[];
  pauses: PauseRecord[];
  failedStarts?: FailedStart[];
  /** The run stopped early, and why: what it recorded until then is checked all the same. */
  aborted?: string;
  tokens: TokenRequest[];
  api: ApiRequest[];
  deliveries: Delivery[];
  connectionProbes: ConnectionProbe[];
  sessionProbes: SessionProbe[];
  redis?: RedisEnd;
  logs: LogLine[];
  /**
   * This process's event-loop delay while the users ran (ms): it also carries the brokers' Redis
   * traffic (the proxies) and the provider (the tap, the sandbox), so its stalls are theirs too.
   */
  soakLoop?: { p99Ms: number; maxMs: number };
}

/* What the provider tap (provider-tap.ts) records of each request it passes to the sandbox. */

/**
 * What became of one request at the token endpoint:
 * - `rotated`: the sandbox answered 200 with a new pair (whether the broker got it: `delivered`);
 * - `rejected`: the sandbox refused it (400 `invalid_grant`: a used, unknown or revoked token);
 * - `failed`: any other answer of the sandbox (an injected 503...);
 * - `dropped`: the sandbox closed the connection without an answer (its `drop_after_rotate`);
 * - `abandoned`: the broker went away before the sandbox answered, and the request was cut;
 * - `revoked`: the tap's own revocation of the grant, answered as the sandbox would.
 */
export type TokenOutcome =
  'pending' | 'rotated' | 'rejected' | 'failed' | 'dropped' | 'abandoned' | 'revoked';

export interface TokenRequest {
  seq: number;
  /** `auth_code` or `refresh_token` (or whatever the request said). */
  grant: string;
  /** The code or refresh token presented. */
  presented: string;
  /** The grant's chain: the code it started with. Undefined for a token the tap never issued. */
  chain: string | undefined;
  /** The broker process that sent it, when the tap could tell. */
  pid: number | undefined;
  /** On the soak's clock (ms): sent, answered by the sandbox, answer written to the broker. */
  start: number;
  answered?: number;
  end?: number;
  status?: number;
  /** `error_description` of a refusal: the sandbox says why (used, revoked...). */
  description?: string;
  issued?: { accessToken: string; refreshToken: string };
  /** Whether the answer was written whole to the broker's connection. */
  delivered?: boolean;
  outcome: TokenOutcome;
}

export interface ApiRequest {
  at: number;
  chain: string | undefined;
  status: number;
  /** Answered 401 by the tap: the access token outlived the provider's lifetime, or was revoked. */
  refused?: 'expired' | 'revoked';
}
