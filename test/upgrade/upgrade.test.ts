import {
  createAdminOverStore,
  createRedisClient,
  createRedisStore,
  indexShard,
  keys,
  licenceMember,
  noEvents,
  parseKeyring,
  scanKeys,
  standalone,
} from '@baton/server';
import { connectionsResponseSchema, routes } from '@baton/shared';
import { createHash } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, Client } from '../support/client.ts';
import { TestClock } from '../support/clock.ts';
import { BrokerProcess } from '../support/process.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { RedisServer } from '../support/redis.ts';
import { until } from '../support/wait.ts';
import { startWorld, type Broker, type World } from '../support/world.ts';
import { loadFixture, type RecordedSession } from './fixture.ts';
import { restoreKeys } from './keyspace.ts';

/**
 * This release on a Redis written by the previous one: the keys of fixtures/0.1.0.json (recorded
 * by record.ts from release 0.1.0's own broker) restored with their times to live, the sandbox
 * knowing the tokens they hold, and the same secrets and client. The release starts on it as
 * deployed (main.ts, a process: whatever its start-up does to an earlier release's data happens
 * there), then serves it in process on an injected clock an hour past the recording: the access
 * tokens are due for a refresh, the sessions are alive. Every session and connection must be kept,
 * every event that waited delivered, and the layout of the previous release gone.
 */
const fixture = loadFixture('0.1.0');
const HOUR = 3600 * 1000;
/** The data format this release writes (`baton:format`); absent means 1, release 0.1.0's. */
const FORMAT = 3;
const METRICS_TOKEN = 'upgrade-test-metrics-token-0123456789abcdef';
/** The settings the recording ran with; the webhook's secret only where events are on. */
const { EVENTS_WEBHOOK_SECRET: webhookSecret = '', ...settings } = fixture.env;

const live = fixture.sessions.filter((session) => !session.signedOut);
const connected = live.flatMap((session) =>
  session.connections
    .filter((connection) => connection.status === 'connected')
    .map((connection) => ({ session, connection })),
);
const disconnected = live.flatMap((session) =>
  session.connections
    .filter((connection) => connection.status === 'disconnected')
    .map((connection) => ({ session, connection })),
);

interface Delivered {
  id: string;
  /** The webhook-timestamp header: when it was signed, in seconds. */
  signedAt: string;
  type: string;
  data: { session: { ref: string }; connection?: { id: string }; connections?: string[] };
}

/**
 * The integrator's receiver: checks each request's signature with the `standardwebhooks` package
 * (its own signing of the same id, timestamp and body, since the broker's clock is the test's,
 * not the receiver's), answers 204, and keeps every request and each id once.
 */
class Events {
  readonly requests: string[] = [];
  readonly delivered: Delivered[] = [];
  readonly #webhook = new Webhook(webhookSecret);

  handle(headers: Record<string, string | string[] | undefined>, body: string): number {
    const id = String(headers['webhook-id']);
    const timestamp = String(headers['webhook-timestamp']);
    this.requests.push(id);
    const signed = this.#webhook.sign(id, new Date(Number(timestamp) * 1000), body);
    if (!String(headers['webhook-signature']).split(' ').includes(signed)) return 401;
    if (!this.delivered.some((each) => each.id === id))
      this.delivered.push({
        ...(JSON.parse(body) as Omit<Delivered, 'id' | 'signedAt'>),
        id,
        signedAt: timestamp,
      });
    return 204;
  }

  /** The events of one recorded session, in the order received. */
  of(session: RecordedSession): { type: string; connection?: string }[] {
    const ids = new Set(session.connections.map(({ id }) => id));
    const refs = new Set(
      this.delivered
        .filter(({ data }) =>
          [data.connection?.id, ...(data.connections ?? [])].some((id) => ids.has(id!)),
        )
        .map(({ data }) => data.session.ref),
    );
    return this.delivered
      .filter(({ data }) => refs.has(data.session.ref))
      .map(({ type, data }) =>
        data.connection ? { type, connection: data.connection.id } : { type },
      );
  }
}

let world: World;
let reader: ReturnType<typeof createRedisClient>;
let receiver: Receiver;
const events = new Events();
let startUp: {
  lines: string[];
  exit: number | null;
  format: string | null;
  left: string[];
  licences: string[];
};
let broker: Broker;
let client: Client;

beforeAll(async () => {
  // The recorded settings (same secrets, same client; events off), the sandbox where the records
  // say it is, on a clock an hour past the recording, and a Redis of the world's own.
  const { hostname, port } = new URL(fixture.sandboxUrl);
  world = await startWorld({
    brokers: { processes: 0 },
    clock: new TestClock(fixture.recordedAt + HOUR),
    sandbox: { host: hostname, port: Number(port) },
    client: { id: fixture.env.CLIENT_ID!, secret: fixture.env.CLIENT_SECRET! },
    publicUrl: fixture.publicUrl,
    env: settings,
    metrics: true,
  });
  reader = createRedisClient(world.redis.url);
  await reader.connect();
  // The connections index of 0.1.0 is scored by expiry on Redis's own clock (TIME).
  await restoreKeys(reader, fixture.keys, (key) =>
    key.startsWith('baton:{stats}:connections:') ? Date.now() - fixture.recordedAt : 0,
  );
  world.control.importTokens(fixture.tokens);
  receiver = await startReceiver((req, body, res) => {
    res.writeHead(events.handle(req.headers, body)).end();
  });

  // Started as deployed, without the webhook (its deliveries would be on the real clock).
  const deployed = await world.startProcess();
  const exit = await deployed.stop();
  startUp = {
    lines: deployed.lines,
    exit,
    format: await reader.get('baton:format'),
    left: await leftovers(),
    licences: await licencesIndexed(),
  };

  broker = await world.startBroker({
    EVENTS_WEBHOOK_URL: `${receiver.origin}/hooks/baton`,
    EVENTS_WEBHOOK_SECRET: webhookSecret,
    METRICS_TOKEN,
  });
  client = new Client({ publicUrl: fixture.publicUrl, instances: [broker.url] });
});

afterAll(async () => {
  await client?.close();
  await broker?.close();
  await receiver?.close();
  if (reader?.isOpen) await reader.close();
  await world?.close();
});

/** Keys of the previous layout still in Redis. */
async function leftovers(): Promise<string[]> {
  const left: string[] = [];
  for await (const key of scanKeys(standalone(reader), 'baton:{stats}:connections:*'))
    left.push(key);
  for (const key of ['baton:{events}:due', 'baton:{events}:dead'])
    if ((await reader.exists(key)) === 1) left.push(key);
  return left;
}

/** A recorded session's id: the SHA-256 of its token, as the broker keys it. */
const sidOf = (session: RecordedSession) =>
  createHash('sha256').update(session.token).digest('base64url');

/** Each live connection whose licence the index holds for its session, as `<license> <sid>`. */
async function licencesIndexed(): Promise<string[]> {
  const held: string[] = [];
  for (const session of live)
    for (const { license } of session.connections) {
      const apiUrl = `${fixture.sandboxUrl}/licenses/${license}`;
      const expires = await reader.zScore(
        keys.licenceIndex(indexShard(sidOf(session))),
        licenceMember(apiUrl, sidOf(session)),
      );
      if (expires !== null && expires > Date.now()) held.push(`${license} ${sidOf(session)}`);
    }
  return held.sort();
}

const bearer = (session: RecordedSession) => ({ authorization: `Bearer ${session.token}` });

/** The operators' use cases over the upgraded Redis, as the CLI builds them. */
function adminOf(client: ReturnType<typeof createRedisClient>) {
  const redis = standalone(client);
  return createAdminOverStore({
    redis,
    store: createRedisStore(redis),
    keyring: parseKeyring(fixture.env.TOKEN_ENCRYPTION_KEYS!),
    events: noEvents,
    now: Date.now,
    build: { version: 'test', revision: 'test' },
  });
}

describe(`this release on a Redis written by ${fixture.release} (${fixture.revision.slice(0, 7)})`, () => {
  it('starts on it as deployed and stops cleanly, logging no error', () => {
    expect(startUp.exit).toBe(0);
    expect(startUp.lines.some((line) => line.includes('"broker listening"'))).toBe(true);
    const errors = startUp.lines.filter((line) => /"level":(50|60)/.test(line));
    expect(errors).toEqual([]);
  });

  it(`upgrades the data format to ${FORMAT} there, at start-up, and says so in its log`, () => {
    expect(startUp.format).toBe(String(FORMAT));
    expect(startUp.left).toEqual([]);
    expect(startUp.lines.some((line) => line.includes('upgraded the data format'))).toBe(true);
  });

  it('indexes the licence of every connection kept, at start-up, until its session ends', () => {
    const kept = live.flatMap((session) =>
      session.connections.map(({ license }) => `${license} ${sidOf(session)}`),
    );
    expect(kept.length).toBeGreaterThan(5);
    expect(startUp.licences).toEqual(kept.sort());
  });

  it('keeps every session: each token lists its connections with their recorded statuses', async () => {
    for (const session of live) {
      const response = await client.fetch(routes.connections, { headers: bearer(session) });
      expect(response.status, session.story).toBe(200);
      const { connections } = connectionsResponseSchema.parse(await response.json());
      const listed = connections.map(({ id, status }) => ({ id, status }));
      const recorded = session.connections.map(({ id, status }) => ({ id, status }));
      const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id);
      expect(listed.sort(byId), session.story).toEqual(recorded.sort(byId));
    }
  });

  it('keeps a signed-out session signed out', async () => {
    const ended = fixture.sessions.filter(({ signedOut }) => signedOut);
    expect(ended.length).toBeGreaterThan(0);
    for (const session of ended) {
      const response = await client.fetch(routes.connections, { headers: bearer(session) });
      expect(response.status, session.story).toBe(401);
    }
  });

  it('answers users.me for every connected one, each refreshed once, no refresh token used twice', async () => {
    expect(connected.length).toBeGreaterThan(5);
    for (const { session, connection } of connected) {
      const response = await callApi(client, 0, { token: session.token, id: connection.id });
      expect(response.status, `${session.story}: ${connection.license}`).toBe(200);
      const me = (await response.json()) as { license: { id: string } };
      expect(me.license.id).toBe(connection.license);
    }
    expect(world.control.counters()).toMatchObject({
      refreshes: connected.length,
      reuse_detected: 0,
      token_errors: 0,
    });
  });

  it('keeps the disconnected one disconnected, without asking the provider', async () => {
    expect(disconnected.length).toBeGreaterThan(0);
    const before = world.control.counters();
    for (const { session, connection } of disconnected) {
      const response = await callApi(client, 0, { token: session.token, id: connection.id });
      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({ error: 'reauthorization_required' });
    }
    expect(world.control.counters()).toEqual(before);
  });

  it('delivers every event that waited, each once, in order, signed on the clock', async () => {
    const waiting = fixture.sessions.flatMap((session) => session.events);
    expect(waiting.length).toBeGreaterThan(5);
    await until(() => events.delivered.length >= waiting.length, {
      deadlineMs: 20_000,
      what: `${waiting.length} events`,
    });
    for (const session of fixture.sessions)
      expect(events.of(session), session.story).toEqual(session.events);
    expect(events.delivered).toHaveLength(waiting.length);
    expect(events.requests).toHaveLength(waiting.length);
    const now = String(Math.floor(world.clock.now() / 1000));
    expect(new Set(events.delivered.map(({ signedAt }) => signedAt))).toEqual(new Set([now]));
  });

  it('lists the events the previous release gave up on among its dead letters', async () => {
    const given = fixture.sessions.flatMap((session) => session.deadLetters);
    expect(given.length).toBeGreaterThan(0);
    const dead = await adminOf(reader).deadLetters({ limit: 500 });
    expect(dead.map(({ type }) => type)).toEqual(given.map(({ type }) => type));
  });

  it('counts every session and connection: admin stats and the /metrics gauge', async () => {
    const count = (status: string) =>
      live.flatMap((session) => session.connections).filter((each) => each.status === status)
        .length;
    expect(await adminOf(reader).overview({ walk: true })).toMatchObject({
      sessions: live.length,
      connections: {
        byStatus: { connected: count('connected'), disconnected: count('disconnected') },
      },
    });
    const metrics = await fetch(`${broker.url}${routes.metrics}`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    const text = await metrics.text();
    const sample = (series: string) =>
      Number(
        text
          .split('\n')
          .find((line) => line.startsWith(`${series} `))
          ?.split(' ')[1],
      );
    expect(sample('baton_connections{status="connected"}')).toBe(count('connected'));
    expect(sample('baton_connections{status="disconnected"}')).toBe(count('disconnected'));
  });

  it(`records the data format, ${FORMAT}, and leaves no key of the previous layout`, async () => {
    expect(await reader.get('baton:format')).toBe(String(FORMAT));
    expect(await leftovers()).toEqual([]);
  });
});

describe('a Redis of a newer data format than this release knows', () => {
  it('makes the broker refuse to start, exiting non-zero and naming the format', async () => {
    await using newer = await RedisServer.start();
    const writer = createRedisClient(newer.url);
    await writer.connect();
    await writer.set('baton:format', String(FORMAT + 1));
    await writer.close();
    const outcome = await BrokerProcess.start({ ...world.env, REDIS_URL: newer.url }).then(
      async (started) => {
        await started.stop('SIGKILL');
        return 'it started and listened';
      },
      (error: Error) => error.message,
    );
    expect(outcome).toMatch(/^broker exited with [1-9]\d*:/);
    const naming = outcome
      .split('\n')
      .filter((line) => /format/i.test(line) && line.includes(String(FORMAT + 1)));
    expect(naming.length, outcome).toBeGreaterThan(0);
  });
});
