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
}

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
   * no replica is asked for.
   */
  replicated(key: string): Promise<void>;
}

export function createCommands(redis: Redis, options: CommandOptions): Commands {
  const { client } = redis;
  const { onError = () => {}, waitReplicas = 0, waitTimeoutMs = 250 } = options;
  const guard = async <T>(operation: () => Promise<T>): Promise<T> => {
    try {
      return await bounded(operation());
    } catch (cause) {
      onError();
      throw new StoreUnavailableError('Redis did not answer', { cause });
    }
  };
  return {
    redis,
    onError,
    guard,
    send: (key, args) => guard(() => redis.sendCommand(key, args)),
    script: (source, keys, args) => guard(() => client.eval(source, { keys, arguments: args })),
    replicated: async (key) => {
      if (waitReplicas === 0) return;
      const acknowledged = Number(
        await guard(() =>
          redis.sendCommand(key, ['WAIT', String(waitReplicas), String(waitTimeoutMs)]),
        ),
      );
      if (acknowledged < waitReplicas) options.onUnreplicated?.(acknowledged);
    },
  };
}
