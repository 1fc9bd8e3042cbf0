import { routes } from '@baton/shared';
import { describe, expect, it } from 'vitest';
import { documentedKeysHere } from '../support/key-kinds.ts';
import { call, connect } from '../support/flow.ts';
import { documented, keysTsNames, surveyStorage } from '../support/storage-keys.ts';
import { until } from '../support/wait.ts';
import { useWorld } from '../support/world.ts';

/**
 * docs/architecture.md's "Storage keys" list is the truth about Redis: every key `keys.ts` can
 * write is on it, nothing on it is gone from `keys.ts`, and after the flows that write each kind
 * (with events on and their receiver down, a refresh that fails into its back-off, a sign-out),
 * every key in a real Redis is on it and has a TTL. Every integration file's end checks the last
 * part too (expectNoLeaks).
 */
describe('the storage keys list', () => {
  it('documents every key keys.ts can write', () => {
    const missing = keysTsNames().filter(({ name }) => !documented(name));
    expect(missing).toEqual([]);
  });

  it('documents no key that keys.ts no longer writes', () => {
    const names = keysTsNames().map(({ name }) => name);
    const stale = documentedKeysHere().filter(
      (pattern) => !names.some((name) => pattern.test(name)),
    );
    expect(stale.map(String)).toEqual([]);
  });
});

describe('what a real Redis holds after every flow', () => {
  const world = useWorld({
    metrics: true,
    env: {
      // Nothing listens on port 9: every delivery fails, so outboxes and schedules stay.
      EVENTS_WEBHOOK_URL: 'http://127.0.0.1:9/hooks',
      EVENTS_WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
    },
  });

  it('is all on the list, each key with a TTL', async () => {
    const kept = await connect(world);
    const usersMe = (token: string, id: string) => call(world, routes.proxy(id, 'users.me'), token);
    expect((await usersMe(kept.session_token, kept.connection.id)).status).toBe(200);

    // A refresh the provider fails: the connection's back-off and its lock.
    world.clock.advance(3600 * 1000);
    world.control.addFault({ target: 'token', kind: 'status', status: 503 });
    await usersMe(kept.session_token, kept.connection.id);
    world.control.clearFaults();

    const ended = await connect(world);
    expect(
      (await call(world, routes.session, ended.session_token, { method: 'DELETE' })).status,
    ).toBe(204);
    // The first delivery attempt failed: its count is kept beside the outbox.
    await until(
      async () => (await surveyStorage(world.redis.url)).kinds.has('baton:{sid}:outbox:attempts'),
      {
        what: 'a failed delivery',
      },
    );

    const { kinds, problems } = await surveyStorage(world.redis.url);
    expect(problems).toEqual([]);
    // Checked against enough to mean something: a kind of each part that writes.
    for (const kind of [
      'baton:{sid}:session',
      'baton:{sid}:connections',
      'baton:{sid}:connection:<id>',
      'baton:{sid}:backoff:<id>',
      'baton:{sid}:outbox',
      'baton:{events:<n>}:due',
      'baton:{events:<n>}:backlog',
      'baton:{stats:<n>}:connections:connected',
      'baton:{state:<id>}',
      'baton:format',
    ])
      expect(kinds, kind).toContain(kind);
    expect([...kinds].some((kind) => kind.startsWith('baton:ratelimit:'))).toBe(true);
    expect([...kinds].some((kind) => kind.startsWith('baton:authsession:'))).toBe(true);
  });
});
