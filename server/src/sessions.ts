import { SESSION_TTL_MS } from './connections.ts';
import { hashToken, randomToken } from './crypto.ts';
import { keys } from './keys.ts';
import type { Store } from './store/types.ts';

/**
 * API sessions: the extension holds a 256-bit bearer token; the store keeps only its SHA-256 (the
 * session id, `sid`), so a read of Redis gives no usable token.
 */
export function createSessions(store: Store, now: () => number) {
  return {
    async create(): Promise<{ token: string; sid: string }> {
      const token = randomToken(32);
      const sid = hashToken(token);
      await store.set(keys.session(sid), JSON.stringify({ created_at: now() }), SESSION_TTL_MS);
      return { token, sid };
    },

    /** The session id for a bearer token, or null when the session is unknown or expired. */
    async resolve(token: string): Promise<string | null> {
      if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
      const sid = hashToken(token);
      return (await store.get(keys.session(sid))) === null ? null : sid;
    },

    /** Keep an active session alive. */
    async touch(sid: string): Promise<void> {
      const value = await store.get(keys.session(sid));
      if (value !== null) await store.set(keys.session(sid), value, SESSION_TTL_MS);
    },

    async destroy(sid: string): Promise<void> {
      await store.del(keys.session(sid));
    },
  };
}
export type Sessions = ReturnType<typeof createSessions>;
