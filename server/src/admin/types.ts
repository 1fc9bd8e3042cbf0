/**
 * The operators' use cases (admin/use-cases.ts), as the admin API (admin/http/) and the command
 * line (admin.ts) both call them: no logic is written twice. Every answer here is safe to show an
 * operator: no token, secret, session id or session handle; a session is named by its reference
 * (`ses_…`, as logs and events name it, ops/events.ts sessionRef).
 */

/** Who asked: a name from ADMIN_TOKENS_FILE (or `cli:<user>`), and its role. */
export interface Actor {
  name: string;
  role: 'viewer' | 'operator';
}

export interface Overview {
  build: { version: string; revision: string };
  /** The data format the store holds (store/format.ts). */
  dataFormat: number;
  redis: {
    topology: 'embedded' | 'standalone' | 'sentinel' | 'cluster';
    /** Each master: its address (host:port, no credentials), whether it answered, in how long. */
    masters: { address: string; up: boolean; latencyMs: number | null }[];
  };
  /**
   * Sessions in the store, as counted at `census.takenAt`: now when the store is embedded or a walk
   * was asked for (`overview({ walk: true })`, the CLI's `stats`), else by the last census (a
   * background job, CensusJob): sessions have no index, and a walk of a million sessions' keys is
   * no overview. Null: never counted (no census kept). The connections by status are live.
   */
  sessions: number | null;
  connections: {
    /** From the connections index (its 1,024 shards counted): cheap at any size. */
    byStatus: { connected: number; disconnected: number };
    /**
     * By the encryption key id records are sealed under, counted with `sessions` (null as it):
     * the re-encryption job reports what it found under keys no longer configured.
     */
    byKeyId: Record<string, number> | null;
    activeKeyId: string;
  };
  census: {
    /**
     * When `sessions` and `connections.byKeyId` were counted (ISO 8601): now for a direct count,
     * else when the last census finished; null: no census kept (a census is kept for 7 days).
     */
    takenAt: string | null;
    /** The census job's state: `running` while a count is under way. */
    state: CensusJob['state'];
  };
  /** Refresh outcomes over the last hour, across every instance. */
  refreshes: { refreshed: number; rejected: number; transient: number; lost: number };
  events: {
    enabled: boolean;
    waiting: number;
    sessionsDue: number;
    deadLetters: number;
    /**
     * The newest dead letters (up to 200 a shard, 3,200 in all) by reason: their sum says how many
     * of `deadLetters` it covers (all of them unless there are more than that).
     */
    deadLettersByReason: Record<string, number>;
  };
}

/** One connection as an operator sees it. Times are ISO 8601. */
export interface ConnectionView {
  id: string;
  sessionRef: string;
  /** The licence: its api_url. */
  licence: string;
  status: 'connected' | 'disconnected';
  createdAt: string;
  /** The last refresh that stored a pair (null: none since the connection was made). */
  lastRefreshAt: string | null;
  /** ok, or why the last refresh did not store a pair: rejected, lost, transient (backing off). */
  lastRefreshOutcome: 'ok' | 'rejected' | 'lost' | 'transient' | null;
  disconnectedReason: string | null;
  /** Last use of its session, to the hour (a session is renewed at most once an hour). */
  lastUsedAt: string;
  /** The encryption key id its record is sealed under. */
  keyId: string;
}

export type ConnectionQuery =
  { connectionId: string } | { sessionRef: string } | { licence: string };

export interface DeadLetterView {
  id: string;
  type: string;
  sessionRef: string | null;
  reason: string;
  attempts: number;
  recordedAt: string | null;
  deadAt: string;
  lastOutcome: string | null;
}

export interface ReencryptJob {
  state: 'idle' | 'running' | 'paused' | 'done' | 'failed';
  activeKeyId: string;
  startedAt: string | null;
  finishedAt: string | null;
  startedBy: string | null;
  /** Connection records looked at so far, and of them: sealed again, already current, unreadable. */
  seen: number;
  resealed: number;
  alreadyCurrent: number;
  /** Records sealed under a key id no longer in TOKEN_ENCRYPTION_KEYS, by key id. */
  missingKey: Record<string, number>;
  error: string | null;
}

/**
 * The census: a count of the sessions and connection records by a walk of every master's keys,
 * in the background (admin/census-job.ts), as the re-encryption job walks them. The figures are
 * those counted so far by the run (all of them once done); the overview shows the last finished.
 */
export interface CensusJob {
  state: 'idle' | 'running' | 'paused' | 'done' | 'failed';
  startedAt: string | null;
  finishedAt: string | null;
  startedBy: string | null;
  sessions: number;
  /** Connection records, by the key id they are sealed under, and by status. */
  connections: number;
  byKeyId: Record<string, number>;
  byStatus: { connected: number; disconnected: number };
  /** Records that could not be opened (under a key no longer configured): in byKeyId, no status. */
  unreadable: number;
  error: string | null;
}

/** What an operator action changed (the target named as in ConnectionView and DeadLetterView). */
export interface ActionResult {
  ok: boolean;
  /** e.g. connections disconnected, sessions ended, letters redelivered. */
  count: number;
  /** Why nothing was done (ok false): not_found. */
  error?: 'not_found';
}

export interface AdminUseCases {
  /** `walk`: count sessions and records by key id by walking the keyspace (slow: the CLI's). */
  overview(options?: { walk?: boolean }): Promise<Overview>;
  findConnections(query: ConnectionQuery, limit: number): Promise<ConnectionView[]>;
  /** Marks it disconnected (reason `disconnected_by_operator`); the user is asked to reconnect. */
  disconnect(connectionId: string, actor: Actor): Promise<ActionResult>;
  endSession(sessionRef: string, actor: Actor): Promise<ActionResult>;
  /** Ends every session holding a connection to this licence (api_url). */
  endSessionsOfLicence(licence: string, actor: Actor): Promise<ActionResult>;
  deadLetters(options: { limit: number; reason?: string }): Promise<DeadLetterView[]>;
  redeliver(eventId: string, actor: Actor): Promise<ActionResult>;
  discard(eventId: string, actor: Actor): Promise<ActionResult>;
  /** Starts the job, or resumes one paused or left by a stopped instance. */
  startReencrypt(actor: Actor): Promise<ReencryptJob>;
  reencryptJob(): Promise<ReencryptJob>;
  /** Starts a census, or resumes one paused or left by a stopped instance. */
  startCensus(actor: Actor): Promise<CensusJob>;
  censusJob(): Promise<CensusJob>;
  /** Schedules every outbox found in Redis (the CLI's `events sweep`). */
  sweepEvents(actor: Actor): Promise<{ ok: boolean; outboxes: number }>;
}
