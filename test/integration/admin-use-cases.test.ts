import {
  createAdminOverStore,
  createOutbox,
  createRedisClient,
  createRedisStore,
  keys,
  parseKeyring,
  sessionRef,
  standalone,
  type AdminService,
} from '@baton/server';
import { connectionsResponseSchema, routes, type SessionCreateResponse } from '@baton/shared';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, connect } from '../support/flow.ts';
import { useWorld } from '../support/world.ts';

/**
 * The operators' use cases (server/src/admin/) on a real Redis, beside a broker that serves the
 * sessions they act on: what an operator finds, changes and starts is what the broker then does.
 */
const world = useWorld(
  {
    env: {
      // Nothing listens on port 9: events stay in their outboxes, to be looked at.
      EVENTS_WEBHOOK_URL: 'http://127.0.0.1:9/hooks',
      EVENTS_WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
    },
  },
  // No token in Redis or the logs, and every key the use cases leave is documented, with a TTL.
  { expectNoLeaks: true },
);
const OPERATOR = { name: 'ops@example', role: 'operator' } as const;
const sidOf = (token: string): string => createHash('sha256').update(token).digest('base64url');

let client: ReturnType<typeof createRedisClient>;
let admin: AdminService;

beforeAll(async () => {
  client = createRedisClient(world.redis.url);
  await client.connect();
  const redis = standalone(client);
  const store = createRedisStore(redis);
  admin = createAdminOverStore({
    redis,
    store,
    keyring: parseKeyring(world.env.TOKEN_ENCRYPTION_KEYS!),
    events: createOutbox({ store, now: () => world.clock.now() }),
    now: () => world.clock.now(),
    build: { version: 'test', revision: 'test' },
  });
});
afterAll(async () => {
  await admin.stop();
  await client.close();
});

const listed = async (session: SessionCreateResponse) => {
  const response = await call(world, routes.connections, session.session_token);
  return response.status === 200
    ? connectionsResponseSchema.parse(await response.json())
    : response.status;
};

describe('the admin use cases on Redis', () => {
  it('find a connection by id, by session reference and by licence, without a secret', async () => {
    const session = await connect(world, { licenseId: 'lic-1001' });
    const [byId] = await admin.findConnections({ connectionId: session.connection.id }, 10);
    expect(byId).toMatchObject({
      id: session.connection.id,
      sessionRef: sessionRef(sidOf(session.session_token)),
      status: 'connected',
      lastRefreshOutcome: null,
    });
    expect(byId!.licence.startsWith(session.connection.api_origin)).toBe(true);
    const bySession = await admin.findConnections({ sessionRef: byId!.sessionRef }, 10);
    expect(bySession.map(({ id }) => id)).toEqual([session.connection.id]);
    const byLicence = await admin.findConnections({ licence: byId!.licence }, 500);
    expect(byLicence.map(({ id }) => id)).toContain(session.connection.id);
    const answers = JSON.stringify([byId, bySession, byLicence]);
    for (const secret of [session.session_token, sidOf(session.session_token)])
      expect(answers).not.toContain(secret);
  });

  it('an overview of the Redis, the connections and the events, without a walk', async () => {
    const overview = await admin.overview();
    expect(overview).toMatchObject({
      redis: {
        topology: 'standalone',
        masters: [{ address: new URL(world.redis.url).host, up: true }],
      },
      // No census yet: not counted.
      sessions: null,
      connections: { byKeyId: null },
      census: { takenAt: null, state: 'idle' },
      events: { enabled: true },
    });
    expect(overview.connections.byStatus.connected).toBeGreaterThanOrEqual(1);
    expect(overview.redis.masters[0]!.latencyMs).toBeGreaterThanOrEqual(0);
    const walked = await admin.overview({ walk: true });
    expect(walked.sessions).toBeGreaterThanOrEqual(1);
    expect(walked.connections.byKeyId).not.toBeNull();
    expect(walked.census.takenAt).toBe(new Date(world.clock.now()).toISOString());
  });

  it('counts by a census in the background: the overview then shows its figures, dated', async () => {
    await connect(world, { licenseId: 'lic-1001' });
    const started = await admin.startCensus(OPERATOR);
    expect(started).toMatchObject({ state: 'running', startedBy: 'ops@example' });
    const done = await admin.censusSettled();
    const walked = await admin.overview({ walk: true });
    expect(done).toMatchObject({
      state: 'done',
      sessions: walked.sessions,
      byKeyId: walked.connections.byKeyId,
      unreadable: 0,
      error: null,
    });
    expect(done!.connections).toBe(done!.byStatus.connected + done!.byStatus.disconnected);
    expect(await admin.overview()).toMatchObject({
      sessions: walked.sessions,
      connections: { byKeyId: walked.connections.byKeyId },
      census: { takenAt: done!.finishedAt, state: 'done' },
    });
    expect(await client.pTTL(keys.adminCensus)).toBeGreaterThan(0);
    expect(await client.pTTL(keys.adminJob('census'))).toBeGreaterThan(0);
  });

  it('disconnect: the broker then lists it disconnected by an operator', async () => {
    const session = await connect(world, { licenseId: 'lic-1001' });
    expect(await admin.disconnect(session.connection.id, OPERATOR)).toEqual({ ok: true, count: 1 });
    expect(await listed(session)).toMatchObject({
      connections: [{ status: 'disconnected', disconnected_reason: 'disconnected_by_operator' }],
    });
    // Its event, then the operator's, each in its outbox for delivery.
    const admins = await client.lRange(keys.adminOutbox, 0, -1);
    expect(admins.map((each) => JSON.parse(each) as { type: string }).at(-1)).toMatchObject({
      type: 'admin.action',
    });
  });

  it('end a session, and every session holding a licence: the broker then refuses them', async () => {
    const one = await connect(world, { licenseId: 'lic-2001' });
    const two = await connect(world, { licenseId: 'lic-2001' });
    const [found] = await admin.findConnections({ connectionId: one.connection.id }, 1);
    expect(await admin.endSession(found!.sessionRef, OPERATOR)).toEqual({ ok: true, count: 1 });
    expect(await listed(one)).toBe(401);
    expect(await listed(two)).not.toBe(401);
    expect(await admin.endSessionsOfLicence(found!.licence, OPERATOR)).toEqual({
      ok: true,
      count: 1,
    });
    expect(await listed(two)).toBe(401);
  });

  it('re-encrypts under the active key as a job that finishes, and says what it saw', async () => {
    await connect(world, { licenseId: 'lic-1002' });
    const started = await admin.startReencrypt(OPERATOR);
    expect(started).toMatchObject({ state: 'running', startedBy: 'ops@example' });
    const done = await admin.reencryptSettled();
    expect(done).toMatchObject({ state: 'done', resealed: 0, missingKey: {}, error: null });
    expect(done!.seen).toBe(done!.alreadyCurrent);
    expect(done!.seen).toBeGreaterThanOrEqual(1);
    expect(await admin.reencryptJob()).toMatchObject({ state: 'done', seen: done!.seen });
    expect(await client.pTTL(keys.adminJob('reencrypt'))).toBeGreaterThan(0);
  });
});
