import { SESSION_TTL_MS } from './connections.ts';
import { hashToken, randomToken } from './crypto.ts';
import { keys } from './keys.ts';
import type { Store } from './store/types.ts';

interface SessionValue {
  created_at: number;
  /** When its key's TTL ends: a cached copy must not outlive the key (Redis says nothing then). */
  expires_at?: number;
}

/**
 * API sessions: the extension holds a 256-bit bearer token; the store keeps only its SHA-256 (the
 * session id, `sid`), so a read of Redis gives no usable token. The session check on every API
 * call reads the store's cached copy (see Store.get): a sign-out anywhere invalidates it at once.
 */
export function createSessions(store: Store, now: () => number) {
  const write = (sid: string, createdAt: number) =>
    store.set(
      keys.session(sid),
      JSON.stringify({
        created_at: createdAt,
        expires_at: now() + SESSION_TTL_MS,
      } satisfies SessionValue),
      SESSION_TTL_MS,
    );

  return {
    async create(): Promise<{ token: string; sid: string }> {
      const token = randomToken(32);
      const sid = hashToken(token);
      await write(sid, now());
      return { token, sid };
    },

    /** The session id for a bearer token, or null when the session is unknown or expired. */
    async resolve(token: string): Promise<string | null> {
      if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
      const sid = hashToken(token);
      const cached = await store.get(keys.session(sid), { cached: true });
      if (cached === null) return null;
      const { expires_at: expiresAt } = JSON.parse(cached) as SessionValue;
      if (expiresAt !== undefined && expiresAt > now()) return sid;
      // Written before sessions said when they expire, or expired: Redis decides.
      return (await store.get(keys.session(sid))) === null ? null : sid;
    },

    /** Keep an active session alive. */
    async touch(sid: string): Promise<void> {
      const value = await store.get(keys.session(sid));
      if (value !== null) await write(sid, (JSON.parse(value) as SessionValue).created_at);
    },

    async destroy(sid: string): Promise<void> {
      await store.del(keys.session(sid));
    },
  };
}
export type Sessions = ReturnType<typeof createSessions>;
