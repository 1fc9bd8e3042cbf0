import { describe, expect, it } from 'vitest';
import { createSealer, parseKeyring } from '../base/crypto.ts';
import { createOutbox } from '../ops/events.ts';
import { keys } from '../store/keys.ts';
import { createMemoryStore } from '../store/memory.ts';
import { StoreUnavailableError, type Store } from '../store/types.ts';
import { endSession } from './end-session.ts';
import { noEvents, type EventSink } from './events.ts';
import { createConnectionRepository, type ConnectionRecord } from './records.ts';
import { createSessions } from './sessions.ts';

const KEYRING = `k:${Buffer.alloc(32, 3).toString('base64')}`;
const IDS = ['c1', 'c2', 'c3'];

/**
 * A session with three connections (each with a refresh lock and a back-off) on a store that
 * answers `budget` calls, then fails every call as a Redis that went away does.
 */
async function world(withEvents: boolean) {
  const now = () => Date.UTC(2026, 0, 1);
  const memory = createMemoryStore(now);
  let budget = Infinity;
  const store = new Proxy(memory, {
    get(target, name: keyof Store) {
      const method = target[name];
      if (typeof method !== 'function') return method;
      return (...args: unknown[]) => {
        if (budget-- <= 0) throw new StoreUnavailableError('Redis did not answer');
        return (method as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  const events: EventSink = withEvents ? createOutbox({ store, now }) : noEvents;
  const sessions = createSessions(store, now, undefined, events);
  const connections = createConnectionRepository(store, createSealer(parseKeyring(KEYRING)), {
    sessions,
    events,
  });
  const { token, sid } = await sessions.create();
  for (const id of IDS) {
    const record: ConnectionRecord = {
      id,
      apiUrl: `https://api.example/licenses/${id}`,
      status: 'connected',
      connectedAt: now(),
      tokens: { accessToken: 'a', refreshToken: `r-${id}`, expiresAt: now() + 3600_000 },
    };
    await connections.save(sid, record, 0);
    await memory.set(keys.refreshLock(sid, id), 'held', 5_000);
    await memory.set(keys.backoff(sid, id), '{}', 60_000);
  }
  /** The keys still under the session, but its outbox (which outlives it, to be delivered). */
  const left = async (): Promise<string[]> => {
    const found: string[] = [];
    if ((await memory.get(keys.session(sid))) !== null) found.push(keys.session(sid));
    if ((await memory.setMembers(keys.connectionIds(sid))).length > 0)
      found.push(keys.connectionIds(sid));
    for (const id of IDS) {
      if ((await memory.getVersioned(keys.connection(sid, id))) !== null)
        found.push(keys.connection(sid, id));
      for (const key of [keys.refreshLock(sid, id), keys.backoff(sid, id)])
        if ((await memory.get(key)) !== null) found.push(key);
    }
    return found;
  };
  const ended = async () =>
    (await memory.listRange(keys.outbox(sid), 0, -1))
      .map((raw) => JSON.parse(raw) as { type: string })
      .filter((entry) => entry.type === 'session.ended').length;
  return {
    end: () => endSession({ sessions, connections }, sid, 'signed_out'),
    resolves: async () => (await sessions.resolve(token)) === sid,
    left,
    ended,
    failAfter: (calls: number) => (budget = calls),
    heal: () => (budget = Infinity),
  };
}

describe('ending a session (sign-out, an operator revoking it)', () => {
  for (const withEvents of [true, false])
    it(`the store failing at any point leaves the session whole to end again, or nothing (events ${withEvents ? 'on' : 'off'})`, async () => {
      for (let calls = 0; ; calls++) {
        const w = await world(withEvents);
        w.failAfter(calls);
        const first = await w.end().then(
          () => 'ended',
          (error: unknown) => {
            expect(error).toBeInstanceOf(StoreUnavailableError);
            return 'failed';
          },
        );
        w.heal();
        // The caller saw a 503 and signs out again, with the same token, as long as it resolves.
        if (await w.resolves()) await w.end();
        expect({ calls, left: await w.left() }).toEqual({ calls, left: [] });
        if (withEvents) expect({ calls, ended: await w.ended() }).toEqual({ calls, ended: 1 });
        if (first === 'ended') break;
      }
    });
});
