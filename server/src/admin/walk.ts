import { sessionRef } from '../ops/events.ts';
import { parseSessionKey, sessionKeyPatterns, type SessionKey } from '../store/keys.ts';
import { scanKeys, type Redis } from '../store/redis/clients.ts';
import type { Store } from '../store/types.ts';

/** A connection id as the broker makes them (randomToken: base64url), bounded; no glob character. */
const CONNECTION_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** A session reference (ops/events.ts sessionRef). */
const SESSION_REF = /^ses_[A-Za-z0-9_-]{22}$/;

/** Bad input from an operator: what was wrong, said plainly (the admin API answers 400). */
export class AdminInputError extends Error {
  override name = 'AdminInputError';
}

export function checkConnectionId(id: string): string {
  if (!CONNECTION_ID.test(id))
    throw new AdminInputError('a connection id is 1 to 64 letters, digits, "-" or "_"');
  return id;
}

export function checkSessionRef(ref: string): string {
  if (!SESSION_REF.test(ref))
    throw new AdminInputError('a session reference is "ses_" and 22 letters, digits, "-" or "_"');
  return ref;
}

/**
 * Walks of the keyspace, for what has no index: each a SCAN of every master (a Cluster spreads
 * the keys), or of the embedded store's keys. A walk costs a pass over every key in the store
 * (at a million sessions, some six million keys, in a minute or so): for an operator's search,
 * never for what is asked often.
 */
export function createWalks(deps: { store: Store; redis: Redis | undefined }) {
  const { store, redis } = deps;
  const keysLike = (pattern: string): AsyncIterable<string> =>
    redis ? scanKeys(redis, pattern) : store.scan(pattern);

  /** The session keys of one kind (session, connection, outbox). */
  async function* sessionKeys<K extends SessionKey['kind']>(
    kind: K,
    pattern: string = sessionKeyPatterns[kind],
  ): AsyncGenerator<Extract<SessionKey, { kind: K }>> {
    for await (const key of keysLike(pattern)) {
      const parsed = parseSessionKey(key);
      if (parsed?.kind === kind) yield parsed as Extract<SessionKey, { kind: K }>;
    }
  }

  return {
    sessionKeys,

    /** The session a reference names, or null: a walk of every session key, each hashed. */
    async sessionOf(ref: string): Promise<string | null> {
      checkSessionRef(ref);
      for await (const { sid } of sessionKeys('session')) if (sessionRef(sid) === ref) return sid;
      return null;
    },

    /** The sessions holding a connection of this id (one, but for a collision of 128 random bits). */
    async holdersOf(connectionId: string): Promise<string[]> {
      const pattern = `baton:{*}:connection:${checkConnectionId(connectionId)}`;
      const sids: string[] = [];
      for await (const { sid, id } of sessionKeys('connection', pattern))
        if (id === connectionId) sids.push(sid);
      return sids;
    },
  };
}
export type Walks = ReturnType<typeof createWalks>;
