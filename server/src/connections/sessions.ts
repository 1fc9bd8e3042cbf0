import { hashToken, randomToken } from '../base/crypto.ts';
import { DEFAULT_SESSION_LIFETIME } from '../base/defaults.ts';
import { keys } from '../store/keys.ts';
import { noEvents, type BrokerEvent, type EventSink } from './events.ts';
import { recordKey, renewRecords } from './records.ts';
import type { Store } from '../store/types.ts';

interface SessionValue {
  created_at: number;
  /** When use last renewed it (absent: never since it was created). */
  renewed_at?: number;
  /** When its key's TTL ends: a cached copy must not outlive the key (Redis says nothing then). */
  expires_at?: number;
}

/**
 * A session as stored: `[created_at, renewed_at or 0, expires_at]`, some 40 bytes fewer than the
 * object of named fields stored before (still read), on a key every session has.
 */
function encode(session: SessionValue): string {
  return JSON.stringify([session.created_at, session.renewed_at ?? 0, session.expires_at ?? 0]);
}

function decode(raw: string): SessionValue {
  const parsed = JSON.parse(raw) as SessionValue | [number, number, number];
  if (!Array.isArray(parsed)) return parsed;
  const [created_at, renewed_at, expires_at] = parsed;
  return {
    created_at,
    ...(renewed_at > 0 ? { renewed_at } : {}),
    ...(expires_at > 0 ? { expires_at } : {}),
  };
}

/** How long a session lives: renewed by use, within an optional absolute bound. */
export interface SessionLifetime {
  /** A session unused this long ends, with everything under it (SESSION_IDLE_TIMEOUT). */
  idleMs: number;
  /** A session ends this long after it was created, used or not (SESSION_MAX_AGE). */
  maxAgeMs?: number | undefined;
}

/** Use renews a session at most this often: one write per session an hour, not one per call. */
export const RENEW_EVERY_MS = 3600 * 1000;

/**
 * API sessions: the extension holds a 256-bit bearer token; the store keeps only its SHA-256 (the
 * session id, `sid`), so a read of Redis gives no usable token. The session check on every API
 * call reads the store's cached copy (see Store.get): a sign-out anywhere invalidates it at once.
 *
 * Every key under a session (its connection set and records) expires when the session does: a
 * record is written with the session's remaining lifetime (`remainingMs`), and a renewal sets the
 * new expiry on all of them (through records.ts, which owns them). Nothing outlives its session.
 */
export function createSessions(
  store: Store,
  now: () => number,
  lifetime: SessionLifetime = DEFAULT_SESSION_LIFETIME,
  events: EventSink = noEvents,
  /**
   * What renews the keys of the session's connections with it: the repository (records.ts's
   * `renew`, which keeps their licences indexed too); without one, their keys only.
   */
  records: { renew(sid: string, ttlMs: number): Promise<unknown> } = {
    renew: (sid, ttlMs) => renewRecords(store, sid, ttlMs),
  },
) {
  const expiryOf = (session: SessionValue, at: number): number =>
    Math.min(
      at + lifetime.idleMs,
      lifetime.maxAgeMs === undefined ? Infinity : session.created_at + lifetime.maxAgeMs,
    );

  const read = async (
    sid: string,
    cached: boolean,
    alongside?: string,
  ): Promise<SessionValue | null> => {
    const raw = await store.get(keys.session(sid), {
      cached,
      ...(alongside === undefined ? {} : { alongside }),
    });
    return raw === null ? null : decode(raw);
  };

  /** Push the session's expiry out, and with it that of every key under it. */
  async function renew(sid: string, session: SessionValue): Promise<void> {
    const at = now();
    const expiresAt = expiryOf(session, at);
    const value: SessionValue = { ...session, renewed_at: at, expires_at: expiresAt };
    const ttlMs = expiresAt - at;
    if (ttlMs <= 0) return;
    await store.set(keys.session(sid), encode(value), ttlMs);
    await records.renew(sid, ttlMs);
  }

  return {
    async create(): Promise<{ token: string; sid: string }> {
      const token = randomToken(32);
      const sid = hashToken(token);
      const at = now();
      const session: SessionValue = { created_at: at };
      const expiresAt = expiryOf(session, at);
      await store.set(
        keys.session(sid),
        encode({ ...session, expires_at: expiresAt }),
        expiresAt - at,
      );
      return { token, sid };
    },

    /**
     * The session id for a bearer token, or null when the session is unknown or expired. Renews a
     * session last renewed an hour ago or more. `connection`: the id of the connection the caller
     * reads next, read with the session in one round trip when neither is kept.
     */
    async resolve(token: string, connection?: string): Promise<string | null> {
      if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
      const sid = hashToken(token);
      let session = await read(
        sid,
        true,
        connection === undefined ? undefined : recordKey(sid, connection),
      );
      if (session === null) return null;
      // Written before sessions said when they expire, or expired: Redis decides.
      if (session.expires_at === undefined || session.expires_at <= now()) {
        session = await read(sid, false);
        if (session === null || (session.expires_at !== undefined && session.expires_at <= now()))
          return null;
      }
      if (now() - (session.renewed_at ?? session.created_at) >= RENEW_EVERY_MS)
        await renew(sid, session);
      return sid;
    },

    /**
     * Milliseconds the session has left (what a key written under it may live), or null when it
     * is gone: nothing may then be written under it.
     */
    /** `fresh`: read from the store, not the tracked copy (to learn that it just ended). */
    async remainingMs(sid: string, options: { fresh?: boolean } = {}): Promise<number | null> {
      const session = await read(sid, options.fresh !== true);
      if (session === null) return null;
      const left = (session.expires_at ?? now() + lifetime.idleMs) - now();
      return left > 0 ? left : null;
    },

    /** When the session was created and last renewed by use (an operator's "last use"), or null. */
    async usage(sid: string): Promise<{ createdAt: number; renewedAt: number | null } | null> {
      const session = await read(sid, false);
      return session && { createdAt: session.created_at, renewedAt: session.renewed_at ?? null };
    },

    /** Whether the session still exists, asked of the store itself. */
    async exists(sid: string): Promise<boolean> {
      return (await read(sid, false)) !== null;
    },

    /**
     * Ends the session, and deletes `alongside` (keys under it) with it. With `event`, in one step
     * that records it only when the session was there: of concurrent sign-outs, one reports it.
     * Without, `alongside` one by one in order, the session last: a store failing part-way leaves
     * the session, to be ended again, never keys of a session already gone.
     */
    async destroy(
      sid: string,
      event?: BrokerEvent,
      alongside: readonly string[] = [],
    ): Promise<void> {
      const outbox = event ? await events.record(sid, event) : null;
      if (outbox) {
        if (await store.delRecording([keys.session(sid), ...alongside], outbox))
          await events.recorded(sid);
        return;
      }
      for (const key of alongside) await store.del(key);
      await store.del(keys.session(sid));
    },
  };
}
export type Sessions = ReturnType<typeof createSessions>;
