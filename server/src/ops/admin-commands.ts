import { createConnectionRepository, type ConnectionRecord } from '../connections/records.ts';
import { createSealer, MissingKeyError, type Keyring } from '../base/crypto.ts';
import {
  EVENT_SHARDS,
  eventShard,
  keys,
  parseSessionKey,
  sessionKeyPatterns,
  type SessionKey,
} from '../store/keys.ts';
import { createSessions } from '../connections/sessions.ts';
import { endSession } from '../connections/end-session.ts';
import { createRedisStore } from '../store/redis/store.ts';
import { noEvents } from '../connections/events.ts';
import { createOutbox, OUTBOX_RETENTION_MS } from './events.ts';
import { scanKeys, type Redis } from '../store/redis/clients.ts';

/** The operator's commands over the broker's Redis, whichever its topology. */
export function createAdmin(
  redis: Redis,
  keyring: Keyring,
  options: {
    /** EVENTS_WEBHOOK_URL is set: a dropped session is reported (`revoked`). */ events?: boolean;
  } = {},
) {
  const store = createRedisStore(redis);
  const sealer = createSealer(keyring);
  // The brokers deliver what the CLI records: the outbox and its schedule are in Redis.
  const events = options.events === true ? createOutbox({ store, now: Date.now }) : noEvents;
  // Re-sealed records keep to their session's lifetime (the sessions' own clock is Redis's).
  const sessions = createSessions(store, Date.now, undefined, events);
  const connections = createConnectionRepository(store, sealer, { sessions });

  /** The session keys of one kind, on every master (SCAN walks one node's keyspace). */
  async function* sessionKeys<K extends SessionKey['kind']>(
    kind: K,
  ): AsyncGenerator<Extract<SessionKey, { kind: K }>> {
    for await (const key of scanKeys(redis, sessionKeyPatterns[kind])) {
      const parsed = parseSessionKey(key);
      if (parsed?.kind === kind) yield parsed as Extract<SessionKey, { kind: K }>;
    }
  }
  const connectionKeys = () => sessionKeys('connection');
  const kidOf = (blob: string): string => blob.split('.')[0] ?? '?';

  async function dropSession(sid: string) {
    const ids = await endSession({ sessions, connections }, sid, 'revoked');
    return { ok: true, sid, connectionsDropped: ids.length };
  }

  return {
    async stats() {
      let sessions = 0;
      for await (const _session of sessionKeys('session')) sessions++;
      const byStatus: Record<string, number> = {};
      const byKey: Record<string, number> = {};
      let unreadable = 0;
      for await (const { sid, id } of connectionKeys()) {
        const stored = await connections.sealed(sid, id);
        if (!stored) continue;
        byKey[kidOf(stored.value)] = (byKey[kidOf(stored.value)] ?? 0) + 1;
        try {
          const record = JSON.parse(
            sealer.open(stored.value, `connection:${sid}:${id}`),
          ) as ConnectionRecord;
          byStatus[record.status] = (byStatus[record.status] ?? 0) + 1;
        } catch {
          unreadable++;
        }
      }
      return {
        sessions,
        connections: byStatus,
        connectionsByKeyId: byKey,
        activeKeyId: keyring.activeKid,
        unreadable,
      };
    },

    /** Reading a record seals it again under the active key when it was sealed under another. */
    async reencrypt() {
      let resealed = 0;
      let current = 0;
      const missingKey: Record<string, number> = {};
      for await (const { sid, id } of connectionKeys()) {
        const stored = await connections.sealed(sid, id);
        if (!stored) continue;
        if (!sealer.isStale(stored.value)) {
          current++;
          continue;
        }
        try {
          await connections.load(sid, id);
          resealed++;
        } catch (error) {
          if (!(error instanceof MissingKeyError)) throw error;
          missingKey[kidOf(stored.value)] = (missingKey[kidOf(stored.value)] ?? 0) + 1;
        }
      }
      const ok = Object.keys(missingKey).length === 0;
      return { ok, activeKeyId: keyring.activeKid, resealed, alreadyCurrent: current, missingKey };
    },

    dropSession,

    /**
     * What waits for delivery, and the newest `limit` dead letters: ids, types, reasons, times and
     * outcomes (no body).
     */
    async events(limit = 100) {
      const shards = Array.from({ length: EVENT_SHARDS }, (_, shard) => shard);
      const sum = async (size: (shard: number) => Promise<number>) =>
        (await Promise.all(shards.map(size))).reduce((total, each) => total + each, 0);
      const letters = (
        await Promise.all(shards.map((shard) => store.logNewest(keys.deadLetters(shard), limit)))
      )
        .flat()
        .map((raw) => {
          const { id, type, session_ref, reason, attempts, recorded_at, dead_at, last_outcome } =
            JSON.parse(raw) as Record<string, unknown>;
          return { id, type, session_ref, reason, attempts, recorded_at, dead_at, last_outcome };
        })
        .sort((a, b) => String(b.dead_at).localeCompare(String(a.dead_at)))
        .slice(0, limit);
      return {
        ok: true,
        sessionsWithEventsDue: await sum((shard) => store.scheduleSize(keys.eventsDue(shard))),
        eventsWaiting: Math.max(
          0,
          await sum(async (shard) => Number(await store.get(keys.eventsBacklog(shard)))),
        ),
        deadLetters: await sum((shard) => store.logSize(keys.deadLetters(shard))),
        dead: letters,
      };
    },

    /**
     * Schedules every outbox found in Redis (a SCAN of the whole keyspace, so only on demand): an
     * instance that died between writing an event and scheduling its session, while another was
     * emptying that session's outbox, left it unscheduled.
     */
    async sweepEvents() {
      let outboxes = 0;
      for await (const { sid } of sessionKeys('outbox')) {
        outboxes++;
        await store.schedulePut(keys.eventsDue(eventShard(sid)), sid, Date.now(), {
          onlyIfAbsent: true,
          keepMs: OUTBOX_RETENTION_MS,
        });
      }
      return { ok: true, outboxes };
    },

    async dropSessionOf(connectionId: string) {
      for await (const { sid, id } of connectionKeys())
        if (id === connectionId) return dropSession(sid);
      return { ok: false, error: `no connection ${connectionId}` };
    },
  };
}
