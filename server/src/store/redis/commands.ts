import { bounded, type Redis } from './clients.ts';
import { StoreUnavailableError } from '../types.ts';

/** How the Redis store's commands fail and are made durable (RedisStoreOptions, store.ts). */
export interface CommandOptions {
  /** Called on every command that failed or went unanswered (the Redis errors metric). */
  onError?: () => void;
  /**
   * After each write that must survive a failover (records, sessions, deletions), WAIT for this
   * many replicas to acknowledge it. 0: do not wait (a standalone Redis, or a Cluster without
   * replicas).
   */
  waitReplicas?: number;
  waitTimeoutMs?: number;
  /** A write that fewer replicas than asked acknowledged in time: it is on the master only. */
  onUnreplicated?: (acknowledged: number) => void;
  /** A monotonic clock in ms (tests inject one): how long a master's writes skip their WAIT. */
  now?: () => number;
}

/**
 * How long the writes to a master whose last WAIT came back short skip theirs. Its replica is down
 * or far behind (a failover's new master has none until the old one rejoins): every WAIT would
 * time out, and, WAIT holding the connection, would hold every command behind it too.
 */
const SHORT_WAIT_SKIP_MS = 1000;

/**
 * What every part of the Redis store (reads.ts, writes.ts, collections.ts) sends its commands
 * through: each bounded (clients.ts), and every error of the client a StoreUnavailableError.
 */
export interface Commands {
  readonly redis: Redis;
  readonly onError: () => void;
  guard<T>(operation: () => Promise<T>): Promise<T>;
  /** A raw command on the node that holds `key`, guarded. */
  send(key: string, args: string[]): Promise<unknown>;
  /** A script of scripts.ts on the node that holds `keys`, guarded. */
  script(source: string, keys: string[], args: string[]): Promise<unknown>;
  /**
   * Replication is asynchronous: a master that dies before its replica has a write loses it on
   * failover. WAIT, on the connection that wrote (so it covers that write), narrows that to writes
   * still unacknowledged when the master died, which the caller never saw succeed. Nothing when
   * no replica is asked for. Never fails: the write is applied on the master, and a WAIT that
   * comes back short, times out or fails is reported (onUnreplicated), not thrown.
   */
  replicated(key: string): Promise<void>;
}

export function createCommands(redis: Redis, options: CommandOptions): Commands {
  const { client } = redis;
  const { onError = () => {}, waitReplicas = 0, waitTimeoutMs = 250 } = options;
  const { now = () => performance.now() } = options;
  const guard = async <T>(operation: () => Promise<T>): Promise<T> => {
    try {
      return await bounded(operation());
    } catch (cause) {
      onError();
      throw new StoreUnavailableError('Redis did not answer', { cause });
    }
  };
  /**
   * WAIT blocks the connection it is sent on: Redis runs no other command of this process's on that
   * master until it returns, after waitTimeoutMs when no replica answers. One WAIT per write queued
   * every command behind all of them: with the replica down, six refreshes at once held the one
   * connection for 1.5 s, past REDIS_COMMAND_TIMEOUT_MS, and writes that Redis then applied were
   * reported failed. So writes share their WAITs (group commit), with at most one on the wire per
   * master: a write answered meanwhile joins the next, sent once that one returns. A WAIT covers
   * every write answered on its connection before it was sent, so a write joins only a WAIT that
   * has not been sent yet.
   */
  const waits = new Map<string, { sent?: Promise<void>; next?: Promise<number> | undefined }>();
  // A Cluster whose slots are not known yet: this key's WAIT is shared with no other key's.
  const masterOf = (key: string) => redis.nodeOf(key) || (redis.mode === 'cluster' ? key : '');
  /** Masters whose last WAIT came back short, and until when their writes skip it. */
  const skipUntil = new Map<string, number>();
  const waitFor = (key: string): Promise<number> => {
    const master = masterOf(key);
    const at = waits.get(master) ?? {};
    waits.set(master, at);
    at.next ??= (at.sent ?? Promise.resolve()).then(() => {
      at.next = undefined;
      const sent = guard(() =>
        redis.sendCommand(key, ['WAIT', String(waitReplicas), String(waitTimeoutMs)]),
      );
      // Once it has returned, forgotten unless a write joined the next one meanwhile.
      const settled = () => {
        if (at.next === undefined && waits.get(master) === at) waits.delete(master);
      };
      at.sent = sent.then(settled, settled);
      return sent.then(Number);
    });
    return at.next;
  };
  return {
    redis,
    onError,
    guard,
    send: (key, args) => guard(() => redis.sendCommand(key, args)),
    script: (source, keys, args) => guard(() => client.eval(source, { keys, arguments: args })),
    replicated: async (key) => {
      if (waitReplicas === 0) return;
      // The write is on the master whatever the WAIT answers: a WAIT that timed out or failed
      // (counted by `guard`) says only that no replica is known to have it, as a short count does.
      // Failing the write would have its caller act as if it were lost: a rotated pair answered 503
      // and offered again, while the pair it had stored was the one in use. A master short of
      // replicas a moment ago is reported so without a WAIT, until the next write's WAIT looks again.
      const master = masterOf(key);
      if (now() < (skipUntil.get(master) ?? -Infinity)) return options.onUnreplicated?.(0);
      const acknowledged = await waitFor(key).catch(() => 0);
      if (acknowledged >= waitReplicas) return void skipUntil.delete(master);
      skipUntil.set(master, now() + SHORT_WAIT_SKIP_MS);
      options.onUnreplicated?.(acknowledged);
    },
  };
}
