/**
 * Records a Redis as an earlier release wrote it, for the upgrade test (upgrade.test.ts):
 *
 *   node test/upgrade/record.ts --revision 77b69d7 [--release 0.1.0]
 *
 * Run by hand, once per release, and commit what it writes (test/upgrade/fixtures/<release>.json).
 * It checks out `--revision` as a git worktree in the temp folder (support/revision.ts: installed
 * offline from this checkout's pnpm store), and runs that release's broker as a process over a
 * real redis-server, this checkout's sandbox on the real clock, and a webhook receiver that
 * answers 503 (so that every event stays pending). Through it, with this checkout's test client,
 * it makes five sessions: two and three connections (lic-1001, lic-1002, lic-2001), one whose
 * connection was refreshed, one with a connection disconnected (its grant revoked), one signed out.
 * Then it stops the broker and writes every key (type, value, time to live left), the sandbox's
 * tokens, what the extension holds, the settings that carry over (fixed test secrets, the client),
 * and when. Sandbox tokens and test secrets only: nothing in it opens anything real.
 */
import { startSandbox } from '@baton/sandbox';
import { routes } from '@baton/shared';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createRedisClient } from '@baton/server';
import { brokerEnv } from '../support/broker-env.ts';
import { callApi, Client, connectVia, type Connected } from '../support/client.ts';
import { freePort } from '../support/ports.ts';
import { BrokerProcess } from '../support/process.ts';
import { startReceiver } from '../support/receiver.ts';
import { RedisServer } from '../support/redis.ts';
import { checkoutRevision } from '../support/revision.ts';
import { until } from '../support/wait.ts';
import type { Fixture, RecordedConnection, RecordedSession } from './fixture.ts';
import { dumpKeys, type StoredKey } from './keyspace.ts';

const { values } = parseArgs({
  options: {
    revision: { type: 'string' },
    release: { type: 'string', default: '0.1.0' },
  },
});
if (values.revision === undefined) {
  console.error('usage: node test/upgrade/record.ts --revision <commit> [--release <name>]');
  process.exit(2);
}

const PUBLIC_URL = 'http://baton.upgrade.test';
/**
 * Where the sandbox answers, here and in the test: the records hold each license's api_url under
 * it. A loopback address of its own (every 127/8 address is loopback on Linux) and a port below
 * the range free ports are taken from (32768 and up), so no other test is ever there.
 */
const SANDBOX = { host: '127.0.32.1', port: 28788 };
const log = (line: string) => console.log(`[record] ${line}`);

const { dir, commit } = checkoutRevision(values.revision);
log(`${values.release} is ${commit}, in ${dir}`);

await using redis = await RedisServer.start();
const sandbox = await startSandbox({ control: true, clients: [], ...SANDBOX });
const control = sandbox.sandbox.control;
const rejected: string[] = [];
const receiver = await startReceiver((req, _body, res) => {
  rejected.push(String(req.headers['webhook-id']));
  res.writeHead(503).end();
});
const env = {
  CLIENT_ID: 'baton-upgrade',
  CLIENT_SECRET: `sbx_secret_upgrade-${randomBytes(16).toString('hex')}`,
  SESSION_SECRET: `test-session-secret-${randomBytes(16).toString('hex')}`,
  TOKEN_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`,
  EVENTS_WEBHOOK_SECRET: `whsec_${randomBytes(32).toString('base64')}`,
};
control.registerClient({
  client_id: env.CLIENT_ID,
  client_secret: env.CLIENT_SECRET,
  redirect_uris: [`${PUBLIC_URL}/auth/callback`],
});
/** The earlier release's broker, on the same port each time (the client knows one instance). */
const port = await freePort();
const startBroker = (extra: Record<string, string> = {}): Promise<BrokerProcess> =>
  BrokerProcess.start(
    brokerEnv({
      providerUrl: sandbox.url,
      publicUrl: PUBLIC_URL,
      redis: { REDIS_URL: redis.url },
      client: { id: env.CLIENT_ID, secret: env.CLIENT_SECRET },
      extra: {
        ...env,
        EVENTS_WEBHOOK_URL: `${receiver.origin}/hooks/baton`,
        PORT: String(port),
        ...extra,
      },
    }),
    join(dir, 'server/src/main.ts'),
  );
async function stop(broker: BrokerProcess): Promise<void> {
  const code = await broker.stop();
  if (code !== 0) throw new Error(`the broker of ${values.release} stopped with ${code}`);
}
let broker = await startBroker();
log(`the broker of ${values.release} listens at ${broker.url}`);
const client = new Client({ publicUrl: PUBLIC_URL, instances: [broker.url] });

/** A session as the recording makes it: its token, and what happened, connection by connection. */
class Story {
  readonly story: string;
  token = '';
  signedOut = false;
  readonly connections: RecordedConnection[] = [];
  readonly events: RecordedSession['events'] = [];
  readonly deadLetters: RecordedSession['events'] = [];
  constructor(story: string) {
    this.story = story;
  }

  async connect(license: string): Promise<Connected> {
    control.setConsent({ mode: 'approve', licenseId: license });
    const connected = await connectVia(client, {
      start: 0,
      callback: 0,
      redeem: 0,
      ...(this.token === '' ? {} : { sessionToken: this.token }),
    });
    this.token = connected.token;
    this.connections.push({ id: connected.id, license, status: 'connected' });
    this.events.push({ type: 'connection.created', connection: connected.id });
    return connected;
  }

  async call(connection: Connected, status: number): Promise<void> {
    const answer = await callApi(client, 0, connection);
    if (answer.status !== status)
      throw new Error(`users.me answered ${answer.status}, not ${status}: ${await answer.text()}`);
  }

  /** The grant revoked at the provider: the next refresh is rejected, the connection ends. */
  async disconnect(connection: Connected, license: string): Promise<void> {
    control.revokeGrant(license);
    control.expireAccessTokens(license);
    await this.call(connection, 401);
    this.connections.find(({ id }) => id === connection.id)!.status = 'disconnected';
    this.events.push({ type: 'connection.disconnected', connection: connection.id });
  }

  async signOut(): Promise<void> {
    const answer = await client.fetch(routes.session, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${this.token}` },
    });
    if (answer.status !== 204) throw new Error(`sign-out answered ${answer.status}`);
    this.signedOut = true;
    this.events.push({ type: 'session.ended' });
  }

  /** Its first pending event was given up on. */
  deadLetter(): void {
    this.deadLetters.push(...this.events.splice(0, 1));
  }

  toJSON(): RecordedSession {
    const { story, token, signedOut, connections, events, deadLetters } = this;
    return { story, token, signedOut, connections, events, deadLetters };
  }
}

// A session whose event is dead-lettered: refused once, then tried again by the same release with
// its clock a day and an hour ahead (clock-ahead.ts), past the 24 hours it keeps trying. First and
// alone, so that no other session's event is given up on.
const dead = new Story('one connection, its event dead-lettered');
await dead.connect('lic-1001');
await until(() => rejected.length > 0, { what: 'the first delivery to be refused' });
await stop(broker);
const redisReader = createRedisClient(redis.url);
await redisReader.connect();
broker = await startBroker({
  NODE_OPTIONS: `--import ${fileURLToPath(new URL('./clock-ahead.ts', import.meta.url))}`,
  CLOCK_AHEAD_MS: String(25 * 3600 * 1000),
});
await until(async () => (await redisReader.lLen('baton:{events}:dead')) === 1, {
  what: 'the event to be dead-lettered',
});
await stop(broker);
dead.deadLetter();
broker = await startBroker();

// Revocation and expiry act on every grant of a license: the disconnected and the refreshed
// connections are each made while no other session holds their license.
const disconnected = new Story('a connection disconnected (grant revoked), then another made');
await disconnected.disconnect(await disconnected.connect('lic-1002'), 'lic-1002');
await disconnected.connect('lic-1001');

const refreshed = new Story('one connection, refreshed once');
const refreshing = await refreshed.connect('lic-2001');
control.expireAccessTokens('lic-2001');
await refreshed.call(refreshing, 200);
if (control.counters().refreshes !== 1) throw new Error('the connection was not refreshed');

const two = new Story('two connections');
await two.call(await two.connect('lic-1001'), 200);
await two.connect('lic-1002');

const three = new Story('three connections');
for (const license of ['lic-1001', 'lic-1002', 'lic-2001']) await three.connect(license);

const signedOut = new Story('one connection, then signed out');
await signedOut.connect('lic-2001');
await signedOut.signOut();

const stories = [dead, disconnected, refreshed, two, three, signedOut];
// Every pending session's first event tried and refused at least once: attempts and back-off.
await until(() => new Set(rejected).size >= stories.length, {
  deadlineMs: 30_000,
  what: 'a failed delivery in every session',
});
await stop(broker);

const keys = await dumpKeys(redisReader);
const recordedAt = Date.now();
await redisReader.close();
checkPending(keys, stories);

const fixture: Fixture = {
  release: values.release,
  revision: commit,
  recordedAt,
  publicUrl: PUBLIC_URL,
  sandboxUrl: sandbox.url,
  env,
  sessions: stories.map((story) => story.toJSON()),
  tokens: control.exportTokens(),
  keys,
};
const out = new URL(`./fixtures/${values.release}.json`, import.meta.url);
mkdirSync(new URL('./fixtures/', import.meta.url), { recursive: true });
writeFileSync(out, `${JSON.stringify(fixture, null, 2)}\n`);
log(`${keys.length} keys, ${stories.length} sessions, written to ${out.pathname}`);
for (const { key, type, pttl } of keys)
  log(`  ${type.padEnd(6)} ${String(pttl).padStart(11)} ${key}`);

await receiver.close();
await sandbox.close();

/**
 * What the fixture is for must be in it: each session's outbox holds its events in order, the
 * dead letters are the ones given up on, and the layout of the previous release (the one schedule,
 * the one list of dead letters, the connections index) is there.
 */
function checkPending(found: readonly StoredKey[], sessions: readonly Story[]): void {
  const outboxes = found.filter(({ key }) => /^baton:\{[^}]+\}:outbox$/.test(key));
  for (const session of sessions) {
    const ids = new Set(session.connections.map(({ id }) => id));
    const outbox = outboxes.find(
      (stored) =>
        stored.type === 'list' &&
        stored.value.some((raw) => {
          const { body } = JSON.parse(raw) as { body: string };
          const { data } = JSON.parse(body) as {
            data: { connection?: { id: string }; connections?: string[] };
          };
          return [data.connection?.id, ...(data.connections ?? [])].some((id) => ids.has(id!));
        }),
    );
    const types = outbox?.type === 'list' ? outbox.value.map((raw) => JSON.parse(raw).type) : [];
    const expected = session.events.map(({ type }) => type);
    if (JSON.stringify(types) !== JSON.stringify(expected))
      throw new Error(`"${session.story}": the outbox holds ${types}, not ${expected}`);
  }
  const dead = found.find(({ key }) => key === 'baton:{events}:dead');
  const letters = dead?.type === 'list' ? dead.value.map((raw) => JSON.parse(raw).type) : [];
  const given = sessions.flatMap((session) => session.deadLetters.map(({ type }) => type));
  if (JSON.stringify(letters) !== JSON.stringify(given))
    throw new Error(`the dead letters are ${letters}, not ${given}`);
  const layout = [
    'baton:{events}:due',
    'baton:{stats}:connections:connected',
    'baton:{stats}:connections:disconnected',
  ];
  for (const key of layout)
    if (!found.some((stored) => stored.key === key)) throw new Error(`no ${key} was written`);
}
