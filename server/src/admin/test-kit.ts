/**
 * The admin use cases over the embedded store on a clock a test moves, with events on: sessions
 * and connections made as the broker makes them (unit tests only).
 */
import { createSealer, parseKeyring, type Keyring } from '../base/crypto.ts';
import { noEvents } from '../connections/events.ts';
import { createConnectionRepository, type ConnectionRecord } from '../connections/records.ts';
import { createSessions } from '../connections/sessions.ts';
import { ADMIN_OUTBOX, createOutbox, type OutboxEntry } from '../ops/events.ts';
import { keys } from '../store/keys.ts';
import { createMemoryStore } from '../store/memory.ts';
import type { Actor } from './types.ts';
import { createAdminUseCases } from './use-cases.ts';

export const key = (kid: string, fill: number): string =>
  `${kid}:${Buffer.alloc(32, fill).toString('base64')}`;
export const OPERATOR: Actor = { name: 'alice', role: 'operator' };
export const START = Date.UTC(2026, 2, 1, 12);

export function adminWorld(options: { events?: boolean; keyring?: string } = {}) {
  let at = START;
  const now = () => at;
  const store = createMemoryStore(now);
  const events = options.events === false ? noEvents : createOutbox({ store, now });
  const sessions = createSessions(store, now, undefined, events);
  const withKeys = (keyring: Keyring) => {
    const connections = createConnectionRepository(store, createSealer(keyring), {
      sessions,
      events,
    });
    const admin = createAdminUseCases({
      redis: undefined,
      store,
      keyring,
      sessions,
      connections,
      events,
      now,
      build: { version: '9.9.9', revision: 'abc123' },
    });
    return { connections, admin };
  };
  const initial = withKeys(parseKeyring(options.keyring ?? key('k1', 1)));

  /** A session with a connection to each licence (ids `c-<n>`), as POST /session stores them. */
  async function session(licences: string[], ids = licences.map((_, n) => `c${n}`)) {
    const { sid } = await sessions.create();
    for (const [n, apiUrl] of licences.entries()) {
      const record: ConnectionRecord = {
        id: ids[n] ?? `c${n}`,
        apiUrl,
        status: 'connected',
        connectedAt: now(),
        tokens: { accessToken: `a${n}`, refreshToken: `r${n}`, expiresAt: now() + 3600_000 },
      };
      await initial.connections.save(sid, record, 0);
    }
    return sid;
  }

  /** Outbox `sid`'s events, oldest first, with their payloads. */
  async function outbox(sid: string) {
    const raw = await store.listRange(keys.outbox(sid), 0, -1);
    return raw.map((each) => {
      const entry = JSON.parse(each) as OutboxEntry;
      return { ...entry, payload: JSON.parse(entry.body) as { type: string; data: unknown } };
    });
  }

  return {
    store,
    sessions,
    ...initial,
    withKeys,
    session,
    outbox,
    adminOutbox: () => outbox(ADMIN_OUTBOX),
    advance: (ms: number) => {
      at += ms;
    },
    now,
  };
}
